//! `CountingBloomFilter`: a Bloom filter with `remove`, from shared references.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use crate::counters::CounterArray;
use crate::layout::{BlockIndex, WordProbe};
use crate::sizing::{self, Geometry};
use crate::{CountingBloomFilterBuilder, DefaultHasher, Error, Sizing};

/// A Bloom filter that forgets: `remove` takes an item back out, through
/// `&self`, while other threads insert and query.
///
/// Each item owns `k` one-byte counters in one 64-byte cache line (64
/// counters per line), so an insert, remove or lookup touches one line. A
/// counter is updated by compare-and-swap; it saturates at 255 and then
/// **sticks** there, never decremented again (it may stand for more than 255
/// items), so overflow can never cause a false negative. A decrement never
/// takes a counter below 0, even when removes race.
///
/// # Memory
///
/// One byte per counter, and the counters of a line are shared the way the
/// bits of [`Layout::Word`](crate::Layout::Word) are: at 1% it needs 12.1
/// counters (97 bits) per item against 10.3 bits for a
/// [`BloomFilter`](crate::BloomFilter) — about 9.4× the memory; at 0.1%, 24
/// counters (192 bits) against 17. Textbook counting filters use 4-bit
/// counters; 8-bit ones can be compare-and-swapped as whole `AtomicU8`s
/// (Rust has no 4-bit atomics: a nibble CAS would contend with its
/// neighbour), and saturate at 255 instead of 15, so sticky counters stay
/// rare.
///
/// # Contract
///
/// Only remove what you inserted. Removing an item that was never inserted
/// (it may still pass `contains`: a false positive), removing it more times
/// than it was inserted, or two threads racing to remove a single copy,
/// decrements counters that *other* items share. When one of those reaches
/// 0, the other item is reported absent: a false negative. The filter cannot
/// tell, because it does not store items. `remove` refuses, and touches
/// nothing, when the item is not present at all.
///
/// # Example
///
/// ```
/// use atomic_bloom::CountingBloomFilter;
///
/// let in_flight: CountingBloomFilter<u64> = CountingBloomFilter::new(100_000, 0.01)?;
/// assert!(in_flight.insert(&17));
/// assert!(in_flight.contains(&17));
/// assert_eq!(in_flight.count(&17), 1);
/// assert!(in_flight.remove(&17));
/// assert!(!in_flight.contains(&17));
/// assert!(!in_flight.remove(&17)); // not present: nothing touched
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Consistency
///
/// Counter updates are individually atomic, but an item's `k` counters are
/// not updated as one: a lookup racing an insert or a remove of the same
/// item may see either outcome. An insert that happens-before a lookup is
/// always seen, as long as the contract above holds. Two threads inserting
/// the same absent item at once may both be told it was new.
pub struct CountingBloomFilter<T: ?Sized, S = DefaultHasher> {
    counters: CounterArray,
    index: BlockIndex,
    geometry: Geometry,
    target_rate: f64,
    hasher: S,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> CountingBloomFilter<T, DefaultHasher> {
    /// A counting filter for `capacity` items at false-positive rate `rate`,
    /// with a random seed. [`builder`](Self::builder) sets a seed or another
    /// hasher.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`],
    /// [`Error::TooLarge`], [`Error::AllocationFailed`],
    /// [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<str> =
    ///     atomic_bloom::CountingBloomFilter::new(10_000, 0.01)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(capacity: usize, rate: f64) -> Result<Self, Error> {
        Self::builder(capacity, rate).build()
    }

    /// A builder for a counting filter of `capacity` items at rate `rate`:
    /// set a seed or a hasher, then [`build`](CountingBloomFilterBuilder::build).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::builder(10_000, 0.01).seed(7).build()?;
    /// assert!(f.insert(&1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(capacity: usize, rate: f64) -> CountingBloomFilterBuilder<T> {
        CountingBloomFilterBuilder::new(capacity, rate)
    }
}

impl<T: ?Sized, S> CountingBloomFilter<T, S> {
    pub(crate) fn from_parts(
        geometry: Geometry,
        target_rate: f64,
        hasher: S,
    ) -> Result<Self, Error> {
        Ok(CountingBloomFilter {
            counters: CounterArray::new(geometry.blocks)?,
            index: BlockIndex::new(&geometry),
            geometry,
            target_rate,
            hasher,
            _item: PhantomData,
        })
    }

    /// A filter over a counter array read from a saved filter.
    pub(crate) fn from_counters(
        counters: CounterArray,
        geometry: Geometry,
        target_rate: f64,
        hasher: S,
    ) -> Self {
        CountingBloomFilter {
            counters,
            index: BlockIndex::new(&geometry),
            geometry,
            target_rate,
            hasher,
            _item: PhantomData,
        }
    }

    pub(crate) fn counters(&self) -> &CounterArray {
        &self.counters
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    #[inline]
    fn probe(&self, hash: u64) -> WordProbe {
        WordProbe::new(hash, self.index, self.geometry.bits_per_word)
    }

    /// Items at which the expected false-positive rate reaches the target
    /// (at least the capacity asked for).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(100_000, 0.01)?;
    /// assert!(f.capacity() >= 100_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.geometry.capacity
    }

    /// The false-positive rate the filter was built for.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.02)?;
    /// assert_eq!(f.target_fpr(), 0.02);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target_fpr(&self) -> f64 {
        self.target_rate
    }

    /// How the filter's size was rounded.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{CountingBloomFilter, Sizing};
    /// let f: CountingBloomFilter<u64> = CountingBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.sizing(), Sizing::Exact);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sizing(&self) -> Sizing {
        self.geometry.sizing
    }

    /// The hasher (its `Debug` hides the seed).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{CountingBloomFilter, DefaultHasher};
    ///
    /// let f: CountingBloomFilter<u64> = CountingBloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert_eq!(*f.hasher(), DefaultHasher::with_seed(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// k: counters per item.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.num_hashes(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_hashes(&self) -> u32 {
        self.geometry.num_hashes()
    }

    /// Bytes allocated: the counters.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(100_000, 0.01)?;
    /// assert!(f.memory_bytes() >= f.capacity()); // at least a byte per item
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.counters.memory_bytes()
    }

    /// Items currently in the filter (inserted and not removed), estimated
    /// from the number of non-zero counters as
    /// [`BloomFilter::len_estimate`](crate::BloomFilter::len_estimate) does
    /// from set bits.
    ///
    /// O(size): it counts the non-zero counters when called (about 23 ms for
    /// 64 MiB of counters on a 2-core Zen 5 VM), so that an update writes
    /// nothing but its own counters.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(100_000, 0.01)?;
    /// for i in 0..20_000u64 { f.insert(&i); }
    /// for i in 0..10_000u64 { f.remove(&i); }
    /// assert!((f.len_estimate() as f64 - 10_000.0).abs() < 300.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len_estimate(&self) -> usize {
        sizing::items_from_set_bits(&self.geometry, self.counters.nonzero()).round() as usize
    }

    /// The false-positive rate expected at [`len_estimate`](Self::len_estimate)
    /// items.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        sizing::expected_rate(&self.geometry, self.len_estimate() as f64)
    }

    /// Removes every item, while other threads may update and look up.
    ///
    /// Every counter is set to 0 with one store: O(size).
    ///
    /// # Consistency
    ///
    /// An update that happens-before the clear is gone after it; one that
    /// happens-after it counts from 0. An insert racing the clear may be
    /// kept, gone, or kept in part (then `contains` says no for it). A
    /// remove racing the clear is a remove of what the filter no longer
    /// holds (see *Contract*): it may take one from a counter an item
    /// inserted after the clear needs, so stop removing while you clear.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::Arc;
    /// use atomic_bloom::CountingBloomFilter;
    ///
    /// let f: Arc<CountingBloomFilter<u64>> = Arc::new(CountingBloomFilter::new(1000, 0.01)?);
    /// f.insert(&1);
    /// f.clear(); // through the Arc
    /// assert!(!f.contains(&1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&self) {
        self.counters.clear();
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// Inserts by hash; for loom models.
    pub fn __insert_hash(&self, hash: u64) -> bool {
        self.counters.increment(&self.probe(hash))
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// Removes by hash; for loom models.
    pub fn __remove_hash(&self, hash: u64) -> bool {
        self.counters.decrement(&self.probe(hash))
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// The counters of a hash, lowest slot first; for loom models.
    pub fn __counters_of_hash(&self, hash: u64) -> Vec<u8> {
        self.counters.values(&self.probe(hash))
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// Stores `value` into every counter of a hash, so a loom model can start
    /// from saturated state without 255 modelled increments. Test-only: the
    /// non-zero tally is not adjusted.
    pub fn __store_counters_of_hash(&self, hash: u64, value: u8) {
        self.counters.store_all(&self.probe(hash), value);
    }
}

impl<T: ?Sized + Hash, S: BuildHasher> CountingBloomFilter<T, S> {
    /// Inserts `item`, adding one to each of its counters; returns true if it
    /// was absent (some counter was 0).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<str> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a")); // a second copy
    /// assert_eq!(f.count("a"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.counters.increment(&self.probe(self.hash_item(item)))
    }

    /// Removes one copy of `item`; returns false, touching no counter, if it
    /// is not present. See the type's *Contract*: only remove what you
    /// inserted.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<str> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// f.insert("a");
    /// assert!(f.remove("a"));
    /// assert!(f.contains("a"));
    /// assert!(f.remove("a"));
    /// assert!(!f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn remove<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.counters.decrement(&self.probe(self.hash_item(item)))
    }

    /// Whether `item` may be in the filter (all its counters non-zero).
    ///
    /// Like every method here that takes an item, takes it in any borrowed
    /// form, as [`HashSet::contains`](std::collections::HashSet::contains)
    /// does: `contains("k")` on a filter of `String` (`Borrow` promises
    /// that the forms hash alike).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<String> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// f.insert("k");
    /// assert!(f.contains("k"));
    /// assert_eq!(f.count(&"k".to_string()), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.counters.contains(&self.probe(self.hash_item(item)))
    }

    /// How many copies of `item` the filter may hold: the smallest of its
    /// counters (an over-estimate when other items share all of them; 255
    /// means "255 or more").
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<u64> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// for _ in 0..3 { f.insert(&9); }
    /// assert_eq!(f.count(&9), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn count<Q>(&self, item: &Q) -> u8
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.counters.min_count(&self.probe(self.hash_item(item)))
    }

    /// The 64-bit hash the filter derives `item`'s counters from.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CountingBloomFilter<str> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.hash_item("a"), f.hash_item("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn hash_item<Q>(&self, item: &Q) -> u64
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.hasher.hash_one(item)
    }
}

/// A snapshot copy: holds every update that completed before `clone`
/// began, and perhaps some that were in flight. Like `Vec::clone`, it
/// aborts if the allocator refuses.
impl<T: ?Sized, S: Clone> Clone for CountingBloomFilter<T, S> {
    fn clone(&self) -> Self {
        CountingBloomFilter {
            counters: self.counters.snapshot(),
            index: self.index,
            geometry: self.geometry,
            target_rate: self.target_rate,
            hasher: self.hasher.clone(),
            _item: PhantomData,
        }
    }
}

crate::traits::fixed_filter_traits! {
    CountingBloomFilter, debug [], same counters,
    /// Equal when built alike (size, counters per item, target rate and
    /// hasher: its seed) and holding the same counters. Compares every
    /// counter, O(size); a snapshot while others update.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::CountingBloomFilter;
    ///
    /// let a: CountingBloomFilter<u64> = CountingBloomFilter::builder(1000, 0.01).seed(1).build()?;
    /// let b = a.clone();
    /// assert_eq!(a, b);
    /// a.insert(&7);
    /// assert_ne!(a, b);
    /// a.remove(&7);
    /// assert_eq!(a, b);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    impl PartialEq;
}

crate::traits::extend_by_insert! {
    /// Inserts every item, as [`insert`](CountingBloomFilter::insert) one
    /// at a time would (see [`AsItem`](crate::AsItem) for what an item may
    /// be).
    ///
    /// # Example
    ///
    /// ```
    /// let mut f: atomic_bloom::CountingBloomFilter<str> =
    ///     atomic_bloom::CountingBloomFilter::new(1000, 0.01)?;
    /// f.extend(&vec!["a".to_string(), "a".to_string()]);
    /// assert_eq!(f.count("a"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    impl Extend for CountingBloomFilter;
}
