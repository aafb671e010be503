//! `CuckooFilter`: membership with `remove`, lock-free, at a seventh of
//! the counting filter's memory.

mod access;
mod builder;
mod byte_table;
#[doc(hidden)]
pub mod core;
mod impls;
mod lanes;
mod relocate;
mod scheme;
pub(crate) mod sizing;
pub(crate) mod stages;
mod versions;

#[cfg(test)]
mod byte_table_tests;
#[cfg(test)]
mod naive;
#[cfg(test)]
mod tests;

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

pub use builder::CuckooFilterBuilder;
use stages::{Growth, Stage};

use crate::{DefaultHasher, Error};

/// A filter with `remove`: each item leaves a small fingerprint in one of
/// two buckets, and every operation takes `&self` without a lock.
///
/// Fingerprints are packed in `AtomicU64` words so that none crosses a
/// word: an insert into a free slot is one compare-and-swap, a remove is
/// one, and a lookup reads the words of two buckets, at most two cache
/// lines. When both of an item's buckets are full, the insert moves other
/// fingerprints to their other buckets along a chain found by a
/// breadth-first search (relocation).
///
/// # Memory and rate
///
/// The fingerprint width follows the rate asked for:
///
/// | rate asked | slots per bucket x bits | words per bucket | expected rate at `capacity()` | bits per item at `capacity()` |
/// |---|---|---|---|---|
/// | 6.2% and above | 8 x 8 | 1 | 6.2% | 8.2 |
/// | 2.3% to 6.2% | 12 x 10 | 2 | 2.3% | 10.9 |
/// | 0.48% to 2.3% | 10 x 12 | 2 | 0.48% | 13.1 |
/// | 0.23% to 0.48% | 5 x 12 | 1 | 0.23% | 13.3 |
/// | 0.024% to 0.23% | 8 x 16 | 2 | 0.024% | 16.3 |
/// | 0.012% to 0.024% | 4 x 16 | 1 | 0.012% | 16.8 |
/// | down to 1e-9 | 21 and 32 bits | | | 22 to 41 |
///
/// A 1% filter takes about 13.1 bits per item (a
/// [`CountingBloomFilter`](crate::CountingBloomFilter) takes 97) and
/// measures about 0.48%; a 0.1% filter about 16.3 bits and 0.024%.
/// `capacity()` is the load every table reached before its first failed
/// insert in the measurements, less a margin; a filter usually takes a
/// little more. Memory also holds the version counters, 8 bytes for
/// every 512 of slots and at most 8 KiB: from 1,000 items up, all counted,
/// a 1% filter takes at most 13.3 bits per item and a 0.1% one 16.6.
///
/// # Full, duplicates, and removing what was never inserted
///
/// * When no chain of moves frees a slot, [`insert`](Self::insert)
///   returns [`Error::CuckooFilterFull`] and the filter holds exactly what
///   it held before. Built with [`growth`](CuckooFilterBuilder::growth),
///   it appends a stage instead, twice as large and with a rate half the
///   last one's, so the total rate stays at or under the one asked for.
/// * An item inserted more times than its two buckets have slots (each
///   copy takes a slot) gets that error too, with growth as well (its
///   buckets in the newest stage): copies move only between their two
///   buckets, and a stage appended for them would double the memory for
///   one more bucketful of copies.
/// * Removing an item that was never inserted may remove another item
///   that shares its fingerprint and a bucket (it passes `contains`: a
///   false positive); that item is then missed. Every cuckoo filter has
///   this: only remove what you inserted.
///
/// # Growth and remove
///
/// Stages are separate tables, and a remove looks in the first stage
/// first, then in the later ones, oldest first. Removing an item of the
/// first stage is exact. Removing an item of a later stage may instead take
/// the fingerprint of an item of an earlier stage that the removed one
/// matches there by chance (about that stage's rate, so up to about the
/// target rate per remove), and that other item is then missed. RedisBloom's
/// growing cuckoo filters have the same limit. Where removes must never
/// cost another item, size the filter for its peak and build it without
/// growth.
///
/// # Example
///
/// ```
/// use atomic_bloom::CuckooFilter;
///
/// let in_flight: CuckooFilter<str> = CuckooFilter::new(100_000, 0.01)?;
/// in_flight.insert("https://example.com/a")?;
/// assert!(in_flight.contains("https://example.com/a"));
/// assert!(in_flight.remove("https://example.com/a"));
/// assert!(!in_flight.contains("https://example.com/a"));
/// assert!(in_flight.memory_bytes() * 8 < 14 * in_flight.capacity());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Consistency
///
/// An insert or remove that happens-before a call is seen by it. An item
/// present for the whole of a `contains`, `count` or `remove` call is
/// found, even while a relocation moves its fingerprint: a move clears the
/// old slot only after reserving the new one, between two bumps of a
/// version counter of the two buckets, and a lookup that misses re-reads
/// the counters and tries again if a move touched its buckets (it waits
/// for a move under way, two compare-and-swaps long; a lookup that finds
/// its fingerprint never waits). A fingerprint is never in two slots at
/// once, so racing removes of one copy succeed once.
///
/// `contains`, `remove` and an insert into a free slot take no lock.
/// Inserts that must relocate take the table's relocation lock, one at a
/// time, while all other operations go on.
pub struct CuckooFilter<T: ?Sized, S = DefaultHasher> {
    first: Stage,
    growth: Option<Growth>,
    target_rate: f64,
    hasher: S,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> CuckooFilter<T, DefaultHasher> {
    /// A filter for `capacity` items at false-positive rate `rate`, with a
    /// random seed and no growth. [`builder`](Self::builder) sets a seed,
    /// a hasher or growth.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`],
    /// [`Error::CuckooRateTooLow`], [`Error::TooLarge`],
    /// [`Error::AllocationFailed`], [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(10_000, 0.01)?;
    /// assert!(f.capacity() >= 10_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(capacity: usize, rate: f64) -> Result<Self, Error> {
        Self::builder(capacity, rate).build()
    }

    /// A builder for a filter of `capacity` items at rate `rate`: set a
    /// seed, a hasher or growth, then
    /// [`build`](CuckooFilterBuilder::build).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> =
    ///     atomic_bloom::CuckooFilter::builder(1_000, 0.01).seed(7).growth(true).build()?;
    /// for i in 0..10_000u64 {
    ///     f.insert(&i)?;
    /// }
    /// assert!(f.stages() > 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(capacity: usize, rate: f64) -> CuckooFilterBuilder<T> {
        CuckooFilterBuilder::new(capacity, rate)
    }
}

impl<T: ?Sized, S> CuckooFilter<T, S> {
    pub(crate) fn from_stages(
        first: Stage,
        growth: Option<Growth>,
        target_rate: f64,
        hasher: S,
    ) -> Self {
        CuckooFilter {
            first,
            growth,
            target_rate,
            hasher,
            _item: PhantomData,
        }
    }

    pub(crate) fn first_stage(&self) -> &Stage {
        &self.first
    }

    pub(crate) fn growth_state(&self) -> Option<&Growth> {
        self.growth.as_ref()
    }

    /// Items the filter holds (inserted and not removed; each copy
    /// counts), counted over its slots when called: O(size).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// f.insert(&1)?;
    /// f.insert(&1)?;
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        match &self.growth {
            None => self.first.table.len(),
            Some(growth) => growth.len(&self.first),
        }
    }

    /// Whether the filter holds no item: O(size).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// assert!(f.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items the filter holds at its target rate, over all its stages (at
    /// least the capacity asked for). Inserts past it usually succeed for
    /// a while, at a rate that rises toward the next packing's.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// assert!(f.capacity() >= 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        match &self.growth {
            None => self.first.capacity,
            Some(growth) => growth.capacity(&self.first),
        }
    }

    /// Bytes allocated: the slots of every stage and their version
    /// counters.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1_000_000, 0.01)?;
    /// assert!((f.memory_bytes() * 8) as f64 / (f.capacity() as f64) < 13.5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        let later = self.growth.as_ref().map_or(0, |growth| {
            growth
                .later
                .load()
                .iter()
                .map(|stage| stage.table.memory_bytes())
                .sum()
        });
        self.first.table.memory_bytes() + later
    }

    /// The false-positive rate expected with the items the filter holds
    /// now ([`len`](Self::len): O(size)), summed over its stages.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// for i in 0..f.capacity() as u64 { f.insert(&i)?; }
    /// assert!(f.estimated_fpr() <= 0.01);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        let rate_of = |stage: &Stage| {
            let shape = stage.table.shape();
            let load = stage.table.len() as f64 / shape.slots() as f64;
            sizing::rate_at(shape.slot_bits(), shape.bucket_slots(), load)
        };
        let later = self.growth.as_ref().map_or(0.0, |growth| {
            growth.later.load().iter().map(|stage| rate_of(stage)).sum()
        });
        rate_of(&self.first) + later
    }

    /// The total false-positive rate the filter was built for.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.02)?;
    /// assert_eq!(f.target_fpr(), 0.02);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target_fpr(&self) -> f64 {
        self.target_rate
    }

    /// Bits of a fingerprint in the first stage (see the type's table).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.001)?;
    /// assert_eq!(f.fingerprint_bits(), 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fingerprint_bits(&self) -> u32 {
        self.first.table.shape().slot_bits()
    }

    /// Slots of a bucket in the first stage.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// assert_eq!(f.bucket_slots(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bucket_slots(&self) -> u32 {
        self.first.table.shape().bucket_slots()
    }

    /// Stages: 1, and more once a filter built with growth has grown.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// assert_eq!(f.stages(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stages(&self) -> usize {
        1 + self.growth.as_ref().map_or(0, |g| g.later.load().len())
    }

    /// Whether the filter grows when full (see
    /// [`growth`](CuckooFilterBuilder::growth)).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// assert!(!f.grows());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn grows(&self) -> bool {
        self.growth.is_some()
    }

    /// The hasher (its `Debug` hides the seed).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{CuckooFilter, DefaultHasher};
    ///
    /// let f: CuckooFilter<u64> = CuckooFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert_eq!(*f.hasher(), DefaultHasher::with_seed(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// Removes every item, while other threads may use the filter; a
    /// filter that grew is back to its first stage.
    ///
    /// O(the first stage's size): its words are set to 0 in place.
    ///
    /// # Consistency
    ///
    /// An insert or remove that happens-before the clear is undone by it;
    /// one that happens-after it acts on the empty filter. One racing the
    /// clear may be kept or gone, and a remove racing it may find nothing.
    /// A relocation under way finishes before the clear empties its table.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::Arc;
    /// use atomic_bloom::CuckooFilter;
    ///
    /// let f: Arc<CuckooFilter<u64>> = Arc::new(CuckooFilter::new(1000, 0.01)?);
    /// f.insert(&1)?;
    /// f.clear(); // through the Arc
    /// assert!(!f.contains(&1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&self) {
        if let Some(growth) = &self.growth {
            growth.drop_later();
        }
        self.first.table.clear();
    }

    /// Inserts by hash (what `insert` does after hashing).
    #[doc(hidden)]
    pub fn insert_hash(&self, hash: u64) -> Result<(), Error> {
        match &self.growth {
            None if self.first.insert(hash) => Ok(()),
            None => Err(Error::CuckooFilterFull {
                len: self.len(),
                capacity: self.capacity(),
            }),
            Some(growth) => growth.insert(&self.first, hash),
        }
    }

    /// Looks up by hash.
    #[doc(hidden)]
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.first.contains(hash)
            || self
                .growth
                .as_ref()
                .is_some_and(|growth| growth.later.load().iter().any(|s| s.contains(hash)))
    }

    /// Removes by hash.
    #[doc(hidden)]
    #[inline]
    pub fn remove_hash(&self, hash: u64) -> bool {
        self.first.remove(hash)
            || self
                .growth
                .as_ref()
                .is_some_and(|growth| growth.later.load().iter().any(|s| s.remove(hash)))
    }

    /// Counts by hash.
    #[doc(hidden)]
    pub fn count_hash(&self, hash: u64) -> usize {
        self.first.count(hash)
            + self.growth.as_ref().map_or(0, |growth| {
                growth.later.load().iter().map(|s| s.count(hash)).sum()
            })
    }
}

impl<T: ?Sized + Hash, S: BuildHasher> CuckooFilter<T, S> {
    /// Inserts one copy of `item` (in any borrowed form of `T`: a
    /// `CuckooFilter<String>` takes a `&str`).
    ///
    /// # Errors
    ///
    /// [`Error::CuckooFilterFull`] when no slot can be freed for it (the
    /// filter then holds exactly what it held before the call), with
    /// growth only when its buckets in the newest stage hold nothing but
    /// its copies or no stage can be added; with growth,
    /// [`Error::AllocationFailed`] when the next stage cannot be allocated.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{CuckooFilter, Error};
    ///
    /// // A fixed seed: under about 1% of seeds both buckets of "a" are one.
    /// let f: CuckooFilter<str> = CuckooFilter::builder(1000, 0.01).seed(7).build()?;
    /// f.insert("a")?;
    /// // Every copy takes a slot: the two buckets of "a" fill up.
    /// let copies = (0..100).take_while(|_| f.insert("a").is_ok()).count();
    /// assert_eq!(copies + 1, 2 * f.bucket_slots() as usize);
    /// assert!(matches!(f.insert("a"), Err(Error::CuckooFilterFull { .. })));
    /// assert_eq!(f.count("a"), copies + 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert<Q>(&self, item: &Q) -> Result<(), Error>
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.insert_hash(self.hasher.hash_one(item))
    }

    /// Whether `item` may be in the filter: true for every item inserted
    /// and not removed, and for a fraction of others near the target rate.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<String> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// f.insert(&"key".to_string())?;
    /// assert!(f.contains("key")); // a &str looks up a String filter
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.contains_hash(self.hasher.hash_one(item))
    }

    /// Removes one copy of `item`; false if the filter holds none. See the
    /// type's docs: only remove what you inserted.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<str> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// f.insert("a")?;
    /// f.insert("a")?;
    /// assert!(f.remove("a"));
    /// assert!(f.contains("a"));
    /// assert!(f.remove("a"));
    /// assert!(!f.remove("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn remove<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.remove_hash(self.hasher.hash_one(item))
    }

    /// How many copies of `item` the filter may hold: its fingerprint's
    /// copies in its buckets (an over-count when another item shares both).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<u64> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
    /// for _ in 0..3 { f.insert(&9)?; }
    /// assert_eq!(f.count(&9), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count<Q>(&self, item: &Q) -> usize
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.count_hash(self.hasher.hash_one(item))
    }

    /// The 64-bit hash the filter derives `item`'s fingerprint and buckets
    /// from.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::CuckooFilter<str> = atomic_bloom::CuckooFilter::new(1000, 0.01)?;
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
