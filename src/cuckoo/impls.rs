//! `Clone`, `PartialEq`, `Eq`, `Debug` and `Extend` of [`CuckooFilter`].

use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::CuckooFilter;
use crate::AsItem;

/// A snapshot copy: each word read once while no relocation moves; it
/// holds every update that completed before `clone` began, and perhaps
/// some in flight. Like `Vec::clone`, it aborts if the allocator refuses.
///
/// # Example
///
/// ```
/// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
/// f.insert(&1)?;
/// let g = f.clone();
/// f.remove(&1);
/// assert!(g.contains(&1) && !f.contains(&1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized, S: Clone> Clone for CuckooFilter<T, S> {
    fn clone(&self) -> Self {
        CuckooFilter::from_stages(
            self.first_stage().snapshot(),
            self.growth_state().map(|growth| growth.snapshot()),
            self.target_fpr(),
            self.hasher().clone(),
        )
    }
}

/// Equal when built alike (rate, growth, hasher: its seed) and holding the
/// same fingerprints in the same slots of the same stages. Compares every
/// word, O(size); a snapshot while others update.
///
/// # Example
///
/// ```
/// use atomic_bloom::CuckooFilter;
///
/// let a: CuckooFilter<u64> = CuckooFilter::builder(1000, 0.01).seed(1).build()?;
/// let b = a.clone();
/// assert_eq!(a, b);
/// a.insert(&7)?;
/// assert_ne!(a, b);
/// a.remove(&7);
/// assert_eq!(a, b);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized, S: PartialEq> PartialEq for CuckooFilter<T, S> {
    fn eq(&self, other: &Self) -> bool {
        if std::ptr::eq(self, other) {
            return true;
        }
        let same_growth = match (self.growth_state(), other.growth_state()) {
            (None, None) => true,
            (Some(ours), Some(theirs)) => {
                let (ours_later, theirs_later) = (ours.later.load(), theirs.later.load());
                ours.first_capacity == theirs.first_capacity
                    && ours_later.len() == theirs_later.len()
                    && ours_later
                        .iter()
                        .zip(theirs_later.iter())
                        .all(|(a, b)| a.capacity == b.capacity && a.table.same(&b.table))
            }
            _ => false,
        };
        self.target_fpr().to_bits() == other.target_fpr().to_bits()
            && self.hasher() == other.hasher()
            && self.first_stage().capacity == other.first_stage().capacity
            && self.first_stage().table.same(&other.first_stage().table)
            && same_growth
    }
}

impl<T: ?Sized, S: Eq> Eq for CuckooFilter<T, S> {}

/// Shows the parameters and sizes; counts no slot.
impl<T: ?Sized, S: fmt::Debug> fmt::Debug for CuckooFilter<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuckooFilter")
            .field("capacity", &self.capacity())
            .field("target_fpr", &self.target_fpr())
            .field("fingerprint_bits", &self.fingerprint_bits())
            .field("bucket_slots", &self.bucket_slots())
            .field("stages", &self.stages())
            .field("grows", &self.grows())
            .field("memory_bytes", &self.memory_bytes())
            .field("hasher", self.hasher())
            .finish_non_exhaustive()
    }
}

/// Inserts every item, as [`insert`](CuckooFilter::insert) one at a time
/// would (see [`AsItem`] for what an item may be).
///
/// # Panics
///
/// If the filter is full ([`Error::CuckooFilterFull`](crate::Error)) or a
/// growth cannot allocate: `Extend` cannot return the error. Use
/// [`insert`](CuckooFilter::insert) or `par_insert`, which return it,
/// where the filter may fill.
///
/// # Example
///
/// ```
/// let mut f: atomic_bloom::CuckooFilter<str> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
/// f.extend(&vec!["a".to_string(), "a".to_string()]);
/// assert_eq!(f.count("a"), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T, S, A> Extend<A> for CuckooFilter<T, S>
where
    T: ?Sized + Hash,
    S: BuildHasher,
    A: AsItem<T>,
{
    fn extend<I: IntoIterator<Item = A>>(&mut self, items: I) {
        for item in items {
            if let Err(error) = self.insert(item.as_item()) {
                panic!("CuckooFilter::extend: {error}");
            }
        }
    }
}
