//! Copies of a scalable filter that a server can afford: one that answers a
//! refused allocation with an error instead of aborting, and a loaded
//! filter switched to exact fill counting, so that it grows where the
//! filter it was saved from grows.

use super::growth::{Stage, StageList};
use super::ScalableBloomFilter;
use crate::sync::{Arc, ArcSwap, Mutex};
use crate::Error;

impl<T: ?Sized, S: Clone> ScalableBloomFilter<T, S> {
    /// A copy of every stage of one snapshot of the stage list, or an error
    /// where a copy would abort the process: for servers (`COPY` of a key),
    /// which must answer an allocation they cannot make with an error. Each
    /// stage's bits come from the allocator's zeroed path, and all-zero
    /// words are not written.
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    ///
    /// # Consistency
    ///
    /// Every insert that completed before the call is in the copy; inserts
    /// racing it, and a stage appended meanwhile, may or may not be.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// for i in 0..1000u64 { f.insert(&i); }
    /// let copy = f.try_clone()?;
    /// assert_eq!(copy.stages(), f.stages());
    /// assert!((0..1000u64).all(|i| copy.contains(&i)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_clone(&self) -> Result<Self, Error> {
        let filters = self
            .stage_snapshot()
            .iter()
            .map(|stage| stage.filter().try_clone())
            .collect::<Result<Vec<_>, Error>>()?;
        Self::from_stages(self.plan, filters, self.hasher.clone())
    }
}

impl<T: ?Sized, S> ScalableBloomFilter<T, S> {
    /// This filter, its newest stage (and every stage it grows) counting
    /// every new item towards its fill, as
    /// [`exact_fill`](super::ScalableBloomFilterBuilder::exact_fill) builds
    /// it: for a filter just loaded ([`read_from`](Self::read_from) does not
    /// keep the choice), so that it grows at the same item as the filter it
    /// was saved from when both are fed the same items through
    /// [`insert_hash_within`](Self::insert_hash_within). Counts the newest
    /// stage's set bits (O(its size)).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::ScalableBloomFilter;
    ///
    /// let original: ScalableBloomFilter<u64> =
    ///     ScalableBloomFilter::builder(100, 0.01).seed(5).exact_fill().build()?;
    /// for i in 0..150u64 { original.insert_hash_within(original.hash_item(&i), usize::MAX)?; }
    /// let mut saved = Vec::new();
    /// original.write_to(&mut saved)?;
    /// let copy = ScalableBloomFilter::<u64>::read_from(saved.as_slice())?.with_exact_fill();
    /// for i in 150..10_000u64 {
    ///     original.insert_hash_within(original.hash_item(&i), usize::MAX)?;
    ///     copy.insert_hash_within(copy.hash_item(&i), usize::MAX)?;
    ///     assert_eq!(copy.stages(), original.stages());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_exact_fill(self) -> Self {
        let mut plan = self.plan;
        plan.exact_fill = true;
        let list = Arc::clone(&self.list());
        let ScalableBloomFilter {
            stages,
            growth_failed,
            growth_error,
            hasher,
            _item,
            ..
        } = self;
        drop(stages);
        // The list is this filter's alone now: no call holds a load of it.
        let list = match Arc::try_unwrap(list) {
            Ok(list) => list,
            Err(shared) => {
                return ScalableBloomFilter {
                    stages: ArcSwap::new(shared),
                    plan,
                    growth_failed,
                    growth_error,
                    hasher,
                    _item,
                }
            }
        };
        let newest = match Arc::try_unwrap(list.newest) {
            Ok(stage) => {
                let fill = list.older.is_empty().then_some(plan.first_stage_fill_bits);
                Arc::new(Stage::new_filled(stage.into_filter(), fill.flatten(), true))
            }
            Err(shared) => shared,
        };
        ScalableBloomFilter {
            stages: ArcSwap::from_pointee(StageList {
                older: list.older,
                newest,
                memory_bytes: list.memory_bytes,
                // The newest stage's fill is counted afresh, exactly: it
                // decides, not a seal made by the sampled count.
                sealed: false,
            }),
            plan,
            growth_failed,
            growth_error: Mutex::new(
                growth_error
                    .into_inner()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            ),
            hasher,
            _item,
        }
    }
}
