//! The standard traits of [`ScalableBloomFilter`]: a snapshot `Clone`,
//! `PartialEq` by parameters and bits, `Extend`, and a `Debug` that counts
//! no bits.

use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::ScalableBloomFilter;
use crate::AsItem;

/// A snapshot copy of every stage of one load of the stage list: holds
/// every insert that completed before `clone` began, and perhaps some that
/// were in flight or a stage appended meanwhile. Like `Vec::clone`, it
/// aborts if the allocator refuses
/// ([`try_clone`](ScalableBloomFilter::try_clone) returns the error).
impl<T: ?Sized, S: Clone> Clone for ScalableBloomFilter<T, S> {
    fn clone(&self) -> Self {
        let filters = self
            .stage_snapshot()
            .iter()
            .map(|stage| stage.filter().clone())
            .collect();
        Self::from_filters(self.plan, filters, self.hasher.clone())
    }
}

/// Equal when built alike (initial capacity, rate, growth options, layout,
/// sizing, memory limit, hasher: its seed) and holding the same stages,
/// bit for bit. Compares every word of one load of each stage list,
/// O(size); a snapshot while others insert.
///
/// # Example
///
/// ```
/// use atomic_bloom::ScalableBloomFilter;
///
/// let a: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01).seed(1).build()?;
/// for i in 0..1_000u64 { a.insert(&i); }
/// let b = a.clone();
/// assert_eq!(a, b);
/// b.insert(&5_000);
/// assert_ne!(a, b);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized, S: PartialEq> PartialEq for ScalableBloomFilter<T, S> {
    fn eq(&self, other: &Self) -> bool {
        if std::ptr::eq(self, other) {
            return true;
        }
        let (ours, theirs) = (self.stage_snapshot(), other.stage_snapshot());
        self.plan == other.plan
            && self.hasher == other.hasher
            && ours.len() == theirs.len()
            && ours
                .iter()
                .zip(&theirs)
                .all(|(a, b)| a.filter() == b.filter())
    }
}

impl<T: ?Sized, S: Eq> Eq for ScalableBloomFilter<T, S> {}

/// Inserts every item, as [`insert`](ScalableBloomFilter::insert) one at a
/// time would (see [`AsItem`] for what an item may be).
///
/// # Example
///
/// ```
/// let mut f: atomic_bloom::ScalableBloomFilter<str> =
///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
/// let urls: Vec<String> = (0..1_000).map(|i| format!("https://example.com/{i}")).collect();
/// f.extend(&urls);
/// assert!(f.stages() > 1 && f.contains("https://example.com/999"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized + Hash, S: BuildHasher, A: AsItem<T>> Extend<A> for ScalableBloomFilter<T, S> {
    fn extend<I: IntoIterator<Item = A>>(&mut self, items: I) {
        for item in items {
            self.insert(item.as_item());
        }
    }
}

/// The parameters and the figures that cost no pass over the bits (no
/// `len_estimate`, no `estimated_fpr`: those count every stage's bits).
impl<T: ?Sized, S: fmt::Debug> fmt::Debug for ScalableBloomFilter<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalableBloomFilter")
            .field("stages", &self.stages())
            .field("capacity", &self.capacity())
            .field("target_fpr", &self.target_fpr())
            .field("memory_bytes", &self.memory_bytes())
            .field("plan", &self.plan)
            .field("growth_error", &self.growth_error())
            .field("hasher", &self.hasher)
            .finish_non_exhaustive()
    }
}
