//! `ScalableBloomFilter`: a filter that grows without a capacity guess,
//! lock-free, keeping the total rate it promised.

// Rustdoc lists a type's `impl` blocks module by module, children before
// the parent's own: the constructors' module comes first, so the type's
// page opens with them.
mod constructors;

mod builder;
mod clear;
#[cfg(not(atomic_bloom_loom))]
mod copy;
mod growth;
mod impls;

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ops::Deref;

pub use builder::ScalableBloomFilterBuilder;
pub(crate) use growth::GrowthPlan;
pub(crate) use growth::Stage;
pub use growth::StageStats;
use growth::{Refusal, StageList};

use crate::item_methods::item_methods;
use crate::sync::{Arc, ArcSwap, AtomicBool, Mutex, Ordering};
use crate::{BloomFilter, DefaultHasher, Error, Layout, Sizing};

/// A Bloom filter that grows as items arrive (Almeida et al. 2007), for
/// when no capacity can be guessed: a crawler of an unknown web, an id
/// allocator.
///
/// It is a list of stages, each a Bloom filter. Stage `i` holds
/// `c0 · s^i` items at rate `p0 · r^i`, with growth `s` (2 or 4) and
/// tightening `r` (0.8 to 0.9). The first stage's rate is `p0 = P (1 - r)`,
/// so the rates of all the stages, however many there are, sum to at most
/// the rate `P` asked for: the **total** false-positive rate stays at or
/// under `P`. (Filters that give the first stage `P` measure about 3% for a
/// 1% request once grown.) One hash serves every stage, by masking.
///
/// An insert checks the older stages, then sets bits in the newest; when the
/// newest is full, the inserter that notices seals it and appends the next
/// stage.
///
/// # Growth and memory
///
/// The stage list is immutable and swapped in whole through `arc-swap`: a
/// reader loads it once per call and never blocks. The inserter that finds
/// the newest stage full first publishes the list with that stage sealed:
/// from then on no insert puts an item into it (only inserts already under
/// way may, at most one item per thread). An insert that meets the sealed
/// stage does not wait for the next one: it allocates it itself if it is
/// not there yet. Of the threads that allocate it, exactly one publishes
/// the longer list with a compare-and-swap, and the others drop theirs. So
/// a stage ends at its fill however many threads insert and however they
/// are scheduled (within its fill count's sampling error, a fraction of a
/// percent), and the total rate holds.
///
/// Memory is capped at 1 GiB unless the builder says otherwise
/// ([`memory_limit`](ScalableBloomFilterBuilder::memory_limit),
/// [`unlimited_memory`](ScalableBloomFilterBuilder::unlimited_memory)), so a
/// flood of distinct items cannot grow it without bound. When the next
/// stage would pass the cap, or the allocator refuses it,
/// [`try_insert`](Self::try_insert) returns the error
/// ([`Error::MemoryLimitReached`], [`Error::AllocationFailed`]) and inserts
/// no new item, while [`insert`](Self::insert) keeps the filter usable by
/// adding to the last stage: nothing is lost, but the false-positive rate
/// rises past the target ([`estimated_fpr`](Self::estimated_fpr) reports
/// it, [`growth_error`](Self::growth_error) says why). A refused
/// allocation is not the end: the next insert that finds the stage full
/// tries again, and a growth that succeeds clears the error. The memory
/// limit is: past it, no growth is tried again.
///
/// # Example
///
/// ```
/// use atomic_bloom::ScalableBloomFilter;
///
/// let seen: ScalableBloomFilter<str> = ScalableBloomFilter::new(1_000, 0.01)?;
/// for page in 0..50_000 {
///     seen.insert(&format!("https://example.com/{page}"));
/// }
/// assert!(seen.stages() > 1);
/// assert!(seen.contains("https://example.com/7"));
/// assert!(seen.estimated_fpr() <= 0.01);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Consistency
///
/// An insert that happens-before a lookup is always seen by it, whichever
/// stage it went into, also across a growth. A lookup racing an insert of
/// the same item may or may not see it. Two threads inserting the same
/// absent item at once may both be told it was new (with
/// [`Layout::Word`], exactly one is, unless a growth falls between them).
/// [`stages`](Self::stages), [`len_estimate`](Self::len_estimate) and the
/// other figures are snapshots.
pub struct ScalableBloomFilter<T: ?Sized, S = DefaultHasher> {
    stages: ArcSwap<StageList<T>>,
    plan: GrowthPlan,
    /// Set while the last growth failed (the memory limit, or the
    /// allocator), cleared by one that succeeds.
    growth_failed: AtomicBool,
    /// Why the last growth failed, and the stage it could not append;
    /// read on the cold path only.
    growth_error: Mutex<Option<Refusal>>,
    hasher: S,
    _item: PhantomData<fn(&T)>,
}

/// Locks a cold-path mutex; nothing panics while holding one, but a poisoned
/// one would still hold a valid value.
fn lock<V>(mutex: &Mutex<V>) -> crate::sync::MutexGuard<'_, V> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<T: ?Sized, S> ScalableBloomFilter<T, S> {
    pub(crate) fn from_parts(plan: GrowthPlan, hasher: S) -> Result<Self, Error> {
        let (first, bytes) = plan.allocate(0, plan.geometry(0)?, 0)?;
        plan.size_ahead(1);
        Ok(Self::from_list(
            plan,
            StageList::first(Arc::new(first), bytes),
            hasher,
        ))
    }

    /// A filter over `stages`, not growing, with no growth error.
    fn from_list(plan: GrowthPlan, stages: StageList<T>, hasher: S) -> Self {
        ScalableBloomFilter {
            stages: ArcSwap::from_pointee(stages),
            plan,
            growth_failed: AtomicBool::new(false),
            growth_error: Mutex::new(None),
            hasher,
            _item: PhantomData,
        }
    }

    /// A filter over stages read from a saved filter, oldest first (at
    /// least one).
    pub(crate) fn from_stages(
        plan: GrowthPlan,
        filters: Vec<BloomFilter<T, ()>>,
        hasher: S,
    ) -> Result<Self, Error> {
        if filters.is_empty() {
            return Err(Error::ZeroStages);
        }
        let filter = Self::from_filters(plan, filters, hasher);
        if let Some(limit) = plan
            .memory_limit
            .filter(|&limit| filter.memory_bytes() > limit)
        {
            return Err(Error::InvalidField {
                field: "memory limit (smaller than the stages)",
                value: limit as u64,
            });
        }
        plan.size_ahead(filter.stages());
        Ok(filter)
    }

    /// A filter over `filters`, oldest first.
    ///
    /// # Panics
    ///
    /// If `filters` is empty: callers check.
    fn from_filters(plan: GrowthPlan, filters: Vec<BloomFilter<T, ()>>, hasher: S) -> Self {
        let mut stages = Vec::with_capacity(filters.len());
        let mut memory_bytes = 0usize;
        for (index, filter) in filters.into_iter().enumerate() {
            let fill = if index == 0 {
                plan.first_stage_fill_bits
            } else {
                None
            };
            let stage = Stage::new_filled(filter, fill, plan.exact_fill);
            memory_bytes = memory_bytes.saturating_add(stage.memory_bytes());
            stages.push(Arc::new(stage));
        }
        let newest = stages.pop().expect("callers pass at least one stage");
        let list = StageList {
            older: stages,
            newest,
            memory_bytes,
            sealed: false,
        };
        Self::from_list(plan, list, hasher)
    }

    pub(crate) fn plan(&self) -> &GrowthPlan {
        &self.plan
    }

    /// Every stage, oldest first, from one snapshot of the stage list.
    pub(crate) fn stage_snapshot(&self) -> Vec<Arc<Stage<T>>> {
        let stages = self.list();
        let mut all = stages.older.clone();
        all.push(Arc::clone(&stages.newest));
        all
    }

    /// The current stage list, loaded once per call.
    #[inline(always)]
    fn list(&self) -> impl Deref<Target = Arc<StageList<T>>> + use<T, S> {
        // SeqCst inside arc-swap (a lock under loom): sees every list published
        // by a compare-and-swap that happened-before this call.
        self.stages.load()
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// Whether the newest stage of the current stage list is sealed (found
    /// full, no insert that loads the list goes into it); for loom models.
    pub fn __newest_sealed(&self) -> bool {
        self.list().sealed
    }

    /// The current newest stage, for prefetching a batch's blocks.
    #[inline(always)]
    pub(crate) fn prefetcher(&self) -> Arc<Stage<T>> {
        Arc::clone(&self.list().newest)
    }

    /// Inserts the item whose hash is `hash`; true if no stage held it.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<str> =
    ///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// assert!(f.insert_hash(f.hash_item("a")));
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert_hash(&self, hash: u64) -> bool {
        let stages = self.list();
        if stages.older_contain(hash) {
            return false;
        }
        if stages.sealed {
            return self.insert_past_seal(&stages, hash);
        }
        let outcome = stages.newest.insert_hash(hash);
        if outcome.full {
            self.seal_and_grow(&stages);
        }
        outcome.new
    }

    /// Inserts the item whose hash is `hash` as a single writer that wants
    /// every copy of the filter to grow where it grows, within `max_bytes`
    /// in all: the caller's own cap, on top of the filter's memory limit (a
    /// server's per-filter limit, applied to its clients' commands and not
    /// to replicated ones, which pass `usize::MAX`).
    ///
    /// Unlike [`insert_hash`](Self::insert_hash), which grows after the
    /// insert that fills the newest stage, this grows before inserting a
    /// new item into a full one (an item already present needs no room):
    /// so a copy of the filter that is fed the same items grows at the
    /// same item, whatever cap each copy applies, as long as neither
    /// refused it. With [`exact_fill`](ScalableBloomFilterBuilder::exact_fill)
    /// a stage is full by its bits alone, so a copy saved and loaded grows
    /// at the same item too. A refused growth inserts nothing, and the
    /// next new item tries again.
    ///
    /// # Errors
    ///
    /// When the newest stage is full and the next would pass `max_bytes`
    /// ([`Error::MemoryLimitReached`]), the filter's memory limit (the
    /// same), or the allocator refused it ([`Error::AllocationFailed`]);
    /// nothing is inserted.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Error, ScalableBloomFilter};
    ///
    /// let f: ScalableBloomFilter<u64> = ScalableBloomFilter::new(1000, 0.01)?;
    /// let cap = 32 * 1024;
    /// let refused = (0..1_000_000u64).find_map(|i| f.insert_hash_within(f.hash_item(&i), cap).err());
    /// assert!(matches!(refused, Some(Error::MemoryLimitReached { .. })));
    /// assert!(f.memory_bytes() <= cap);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert_hash_within(&self, hash: u64, max_bytes: usize) -> Result<bool, Error> {
        let stages = self.list();
        if stages.older_contain(hash) || stages.newest.contains_hash(hash) {
            return Ok(false);
        }
        if stages.newest.is_full() {
            if let Some(grown) = self.grow_before_insert(&stages, max_bytes)? {
                return Ok(grown.newest.insert_hash(hash).new);
            }
        }
        Ok(stages.newest.insert_hash(hash).new)
    }

    /// Whether the item whose hash is `hash` may be in the filter.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<str> =
    ///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// assert!(f.contains_hash(f.hash_item("a")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        // Newest first: it is the largest, and holds about half the items.
        let stages = self.list();
        stages.newest.contains_hash(hash)
            || stages
                .older
                .iter()
                .rev()
                .any(|stage| stage.contains_hash(hash))
    }

    /// Why the last growth failed ([`Error::MemoryLimitReached`], or the
    /// allocator's refusal), or `None` while the filter grows (a growth
    /// that succeeds after a refusal clears it).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert!(f.growth_error().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn growth_error(&self) -> Option<Error> {
        // Acquire: pairs with the Release after the error was stored.
        if !self.growth_failed.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.growth_error)
            .as_ref()
            .map(|refusal| refusal.error.clone())
    }

    /// Whether the last growth failed, so the newest stage is filling past
    /// its rate: a relaxed load, for hot paths that must not lock the
    /// error's mutex.
    #[inline]
    pub(crate) fn growth_failed(&self) -> bool {
        // Relaxed: a flag; the error it announces is read through
        // `growth_error`, which acquires.
        self.growth_failed.load(Ordering::Relaxed)
    }

    /// Number of stages (1 until the first stage fills).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// for i in 0..10_000u64 { f.insert(&i); }
    /// assert!(f.stages() >= 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stages(&self) -> usize {
        self.list().len()
    }

    /// Items the present stages hold at their rates: the filter grows when
    /// it passes this.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert!(f.capacity() >= 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.list()
            .all()
            .map(|stage| stage.filter().capacity())
            .sum()
    }

    /// The total false-positive rate the filter was built for.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.02)?;
    /// assert_eq!(f.target_fpr(), 0.02);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target_fpr(&self) -> f64 {
        self.plan.rate
    }

    /// The hasher every stage's bits come from.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::builder(1000, 0.01).seed(9).build()?;
    /// assert_eq!(f.hasher().seed(), 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// The [`Layout`] of every stage.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.layout(), atomic_bloom::Layout::CacheLine);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layout(&self) -> Layout {
        self.plan.layout
    }

    /// How every stage's size is rounded.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.sizing(), atomic_bloom::Sizing::Exact);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sizing(&self) -> Sizing {
        self.plan.sizing
    }

    /// Bytes allocated by all stages.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// let before = f.memory_bytes();
    /// for i in 0..100_000u64 { f.insert(&i); }
    /// assert!(f.memory_bytes() > before);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.list().memory_bytes
    }

    /// Items inserted, estimated from each stage's fill.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// for i in 0..100_000u64 { f.insert(&i); }
    /// assert!((f.len_estimate() as f64 - 100_000.0).abs() < 3_000.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len_estimate(&self) -> usize {
        self.list()
            .all()
            .map(|stage| stage.filter().len_estimate())
            .fold(0, usize::saturating_add)
    }

    /// The total false-positive rate expected now: one minus the chance
    /// that every stage says no, each at its estimated fill.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// for i in 0..100_000u64 { f.insert(&i); }
    /// assert!(f.estimated_fpr() <= 0.01);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        let all_say_no: f64 = self
            .list()
            .all()
            .map(|stage| 1.0 - stage.filter().estimated_fpr())
            .product();
        1.0 - all_say_no
    }

    /// Each stage's capacity, rate, fill and memory, oldest first, from
    /// one snapshot of the stage list. O(size): it counts each stage's set
    /// bits.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1_000, 0.01)?;
    /// let stages = f.stage_stats();
    /// assert_eq!(stages.len(), 1);
    /// assert!(stages[0].capacity >= 1_000 && stages[0].set_bits == 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stage_stats(&self) -> Vec<StageStats> {
        self.list().all().map(Stage::stats).collect()
    }
}

impl<T: ?Sized + Hash, S: BuildHasher> ScalableBloomFilter<T, S> {
    /// Inserts `item`; returns true if no stage held it before. Never
    /// fails: past the memory limit it adds to the last stage (see the
    /// type's *Growth and memory*).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<str> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.insert_hash(self.hash_item(item))
    }

    /// Inserts `item` while the filter can still keep its rate.
    ///
    /// # Errors
    ///
    /// When the newest stage is full (found so by this call or by another
    /// thread, whose growth may be under way) and growing it fails, or the
    /// last growth failed and trying it again fails too (the error
    /// [`growth_error`](Self::growth_error) reports:
    /// [`Error::MemoryLimitReached`], [`Error::AllocationFailed`] or
    /// [`Error::TooLarge`]), returns it and inserts nothing; an item
    /// already present is `Ok(false)`. A refused allocation is tried again
    /// at each call, so the filter grows once memory is free.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Error, ScalableBloomFilter};
    ///
    /// let f: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1000, 0.01)
    ///     .memory_limit(64 * 1024)
    ///     .build()?;
    /// let refused = (0..1_000_000u64).find_map(|i| f.try_insert(&i).err());
    /// assert!(matches!(refused, Some(Error::MemoryLimitReached { .. })));
    /// assert!(f.memory_bytes() <= 64 * 1024);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_insert<Q>(&self, item: &Q) -> Result<bool, Error>
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        let hash = self.hash_item(item);
        loop {
            let stages = self.list();
            if stages.older_contain(hash) {
                return Ok(false);
            }
            // Sealed: another thread found the newest stage full and is
            // growing it; or the last growth failed.
            let no_room = stages.sealed || (self.growth_failed() && stages.newest.is_full());
            if !no_room {
                // As `insert_hash` does with a list it finds unsealed.
                let outcome = stages.newest.insert_hash(hash);
                if outcome.full {
                    self.seal_and_grow(&stages);
                }
                return Ok(outcome.new);
            }
            // A present item needs no room; a new one gets a stage now (this
            // thread's, or the one a racing grower appended), or the error.
            if stages.newest.contains_hash(hash) {
                return Ok(false);
            }
            self.grow_before_insert(&stages, usize::MAX)?;
        }
    }

    item_methods! {
        "ScalableBloomFilter";
        /// Whether `item` may be in the filter (any stage holds it).
        fn contains;
        /// The 64-bit hash every stage derives `item`'s bits from.
        fn hash_item;
    }
}
