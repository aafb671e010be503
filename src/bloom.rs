//! `BloomFilter`: the lock-free, fixed-capacity Bloom filter.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use crate::bits::{BitArray, TurnedOn};
use crate::block::BLOCK_BYTES;
use crate::builder::BloomFilterBuilder;
use crate::item_methods::item_methods;
use crate::layout::{BlockIndex, CompactProbe, LineProbe, WordProbe};
use crate::sizing::{self, Geometry, Scheme};
use crate::{DefaultHasher, Error, Layout, Sizing};

/// A fixed-capacity Bloom filter that any number of threads insert into and
/// query at once, through `&self`.
///
/// Built for a capacity and a target false-positive rate, it rounds its size
/// up to a whole 64-byte block ([`Sizing`]) and reports what it really holds in
/// [`capacity`](BloomFilter::capacity): the number of items at which the
/// expected rate, computed for its blocked layout, reaches the target. All
/// of an item's bits live in one cache line, and all come from one 64-bit
/// hash of the item (wyhash, seeded from OS entropy unless you give a seed).
///
/// Share it as `Arc<BloomFilter<T>>`; it is `Send + Sync` whatever `T` is,
/// since it stores no `T`.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use atomic_bloom::BloomFilter;
///
/// let seen: Arc<BloomFilter<str>> = Arc::new(BloomFilter::new(100_000, 0.01)?);
/// let workers: Vec<_> = (0..4)
///     .map(|worker| {
///         let seen = Arc::clone(&seen);
///         std::thread::spawn(move || {
///             for page in 0..1000 {
///                 seen.insert(&format!("https://example.com/{}", page * 4 + worker));
///             }
///         })
///     })
///     .collect();
/// for worker in workers {
///     worker.join().unwrap();
/// }
/// assert!(seen.contains("https://example.com/3999"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Consistency
///
/// Bits only ever go from 0 to 1, until [`clear`](BloomFilter::clear) (its
/// own *Consistency* says what an insert racing it may see). An insert that *happens-before* a lookup (the thread
/// joined, or handed over through a channel, a mutex or a release/acquire
/// pair) is always seen: no false negatives. A lookup racing an insert of the
/// same item may or may not see it. Under [`Layout::CacheLine`] two threads
/// racing to insert the same absent item may both get `true`; under
/// [`Layout::Word`] exactly one does. [`len_estimate`](BloomFilter::len_estimate)
/// is a snapshot that may or may not include inserts still in flight.
pub struct BloomFilter<T: ?Sized, S = DefaultHasher> {
    bits: BitArray,
    layout: Layout,
    probe: ProbeKind,
    index: BlockIndex,
    geometry: Geometry,
    target_rate: f64,
    hasher: S,
    _item: PhantomData<fn(&T)>,
}

/// The probe a filter's scheme uses: one branch per operation, on a value
/// that never changes, so the predictor learns it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ProbeKind {
    Line,
    Word,
    CompactOne,
    CompactTwo,
}

impl ProbeKind {
    /// Which probe a scheme's layout and block width use.
    fn of(scheme: Scheme) -> Self {
        match scheme {
            Scheme::CacheLine => ProbeKind::Line,
            Scheme::Word | Scheme::Counters => ProbeKind::Word,
            Scheme::Compact { lines: 1 } => ProbeKind::CompactOne,
            Scheme::Compact { .. } => ProbeKind::CompactTwo,
        }
    }
}

impl<T: ?Sized> BloomFilter<T, DefaultHasher> {
    /// A filter for `capacity` items at false-positive rate `rate`, with the
    /// default [`Layout::CacheLine`] and a random seed.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`] (not in
    /// (0, 1), or NaN), [`Error::TooLarge`], [`Error::AllocationFailed`],
    /// [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    ///
    /// let f: BloomFilter<str> = BloomFilter::new(1_000_000, 0.01)?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a"));
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(capacity: usize, rate: f64) -> Result<Self, Error> {
        Self::builder(capacity, rate).build()
    }

    /// A builder for a filter of `capacity` items at `rate`, to set a seed, a
    /// layout or a hasher.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Layout};
    ///
    /// let f: BloomFilter<str> = BloomFilter::builder(1_000_000, 0.01)
    ///     .seed(7)
    ///     .layout(Layout::Word)
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(capacity: usize, rate: f64) -> BloomFilterBuilder<T, DefaultHasher> {
        BloomFilterBuilder::new(capacity, rate)
    }
}

impl<T: ?Sized, S> BloomFilter<T, S> {
    /// An empty filter of `geometry` (planned for a [`Layout`]).
    pub(crate) fn from_parts(
        geometry: Geometry,
        target_rate: f64,
        hasher: S,
    ) -> Result<Self, Error> {
        let bits = BitArray::new(geometry.blocks)?;
        Ok(Self::from_bits(bits, geometry, target_rate, hasher))
    }

    /// A filter over a bit array of `geometry` (read from a saved filter).
    ///
    /// # Panics
    ///
    /// If `geometry` was planned for a counter array: a bug in the caller,
    /// which plans or reads only bit-array schemes.
    pub(crate) fn from_bits(
        bits: BitArray,
        geometry: Geometry,
        target_rate: f64,
        hasher: S,
    ) -> Self {
        let layout = geometry
            .scheme
            .layout()
            .expect("a BloomFilter is planned for a bit-array layout");
        BloomFilter {
            bits,
            layout,
            probe: ProbeKind::of(geometry.scheme),
            index: BlockIndex::new(&geometry),
            geometry,
            target_rate,
            hasher,
            _item: PhantomData,
        }
    }

    pub(crate) fn bits(&self) -> &BitArray {
        &self.bits
    }

    /// Inserts the item whose hash is `hash` (from [`hash_item`](Self::hash_item)
    /// or the same hasher); returns true if it was not in the filter before.
    ///
    /// For callers that hash once and use the hash several times.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    ///
    /// let f: BloomFilter<str> = BloomFilter::new(1000, 0.01)?;
    /// let hash = f.hash_item("a");
    /// assert!(f.insert_hash(hash));
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn insert_hash(&self, hash: u64) -> bool {
        self.insert_hash_turned_on(hash, false).new
    }

    /// [`insert_hash`](Self::insert_hash), returning whether the insert
    /// turned bits on (no: the item was already in) and, if `count`, how
    /// many, for a [`FillMark`](crate::fill::FillMark) to tally.
    #[inline(always)]
    pub(crate) fn insert_hash_turned_on(&self, hash: u64, count: bool) -> TurnedOn {
        let (index, bits_per_word) = (self.index, self.geometry.bits_per_word);
        match self.probe {
            ProbeKind::Line => self
                .bits
                .insert_line(&LineProbe::new(hash, index, bits_per_word), count),
            ProbeKind::Word => self
                .bits
                .insert_word(&WordProbe::new(hash, index, bits_per_word), count),
            ProbeKind::CompactOne => self
                .bits
                .insert_compact(&CompactProbe::<8>::new(hash, index, bits_per_word), count),
            ProbeKind::CompactTwo => self
                .bits
                .insert_compact(&CompactProbe::<16>::new(hash, index, bits_per_word), count),
        }
    }

    /// Whether the item whose hash is `hash` may be in the filter.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    ///
    /// let f: BloomFilter<str> = BloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// assert!(f.contains_hash(f.hash_item("a")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let (index, bits_per_word) = (self.index, self.geometry.bits_per_word);
        match self.probe {
            ProbeKind::Line => self
                .bits
                .contains_line(&LineProbe::new(hash, index, bits_per_word)),
            ProbeKind::Word => self
                .bits
                .contains_word(&WordProbe::new(hash, index, bits_per_word)),
            ProbeKind::CompactOne => {
                self.bits
                    .contains_compact(&CompactProbe::<8>::new(hash, index, bits_per_word))
            }
            ProbeKind::CompactTwo => {
                self.bits
                    .contains_compact(&CompactProbe::<16>::new(hash, index, bits_per_word))
            }
        }
    }

    /// Starts loading the block of `hash` into cache (both lines of a
    /// two-line block).
    #[inline(always)]
    pub(crate) fn prefetch_hash(&self, hash: u64) {
        let line = self.index.line(hash);
        self.bits.prefetch(line);
        if self.probe == ProbeKind::CompactTwo {
            self.bits.prefetch(line + 1);
        }
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Items at which the expected false-positive rate reaches the target,
    /// after the size was rounded up (to a whole block, or to a power of two
    /// of blocks with [`Sizing::PowerOfTwo`](crate::Sizing)): at least the
    /// capacity asked for, often more.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1_000_000, 0.01)?;
    /// assert!(f.capacity() >= 1_000_000);
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
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.target_fpr(), 0.01);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target_fpr(&self) -> f64 {
        self.target_rate
    }

    /// Bytes the filter allocated: its bit array.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1_000_000, 0.01)?;
    /// assert!(f.memory_bytes() >= f.num_bits() / 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.bits.memory_bytes()
    }

    /// Bits in the bit array: whole 512-bit lines (a power of two of blocks
    /// if the filter was sized [`PowerOfTwo`](crate::Sizing::PowerOfTwo)).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(10, 0.01)?;
    /// assert_eq!(f.num_bits(), 512);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_bits(&self) -> usize {
        self.bits.num_blocks() * BLOCK_BYTES * 8
    }

    /// Bits of the array per item at [`capacity`](Self::capacity): the
    /// memory price of the layout and the rate.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1_000_000, 0.01)?;
    /// assert!(f.bits_per_item() > 9.0 && f.bits_per_item() < 16.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bits_per_item(&self) -> f64 {
        self.num_bits() as f64 / self.capacity() as f64
    }

    /// k: the bits set per item (bits that land on the same position of a
    /// word count once in the array, so an item may set fewer).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// assert!(f.num_hashes() >= 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_hashes(&self) -> u32 {
        self.geometry.num_hashes()
    }

    /// The layout the filter was built with.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Layout};
    /// let f: BloomFilter<u64> = BloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.layout(), Layout::CacheLine);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// How the filter's size was rounded.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Sizing};
    /// let f: BloomFilter<u64> = BloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.sizing(), Sizing::Exact);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sizing(&self) -> Sizing {
        self.geometry.sizing
    }

    /// The hasher the filter hashes items with.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    /// let f: BloomFilter<u64> = BloomFilter::builder(1000, 0.01).seed(9).build()?;
    /// assert_eq!(f.hasher().seed(), 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// The exact number of bits set (a snapshot under concurrent inserts).
    ///
    /// # Cost
    ///
    /// A popcount of the whole array, counted when called: the filter keeps
    /// no count, so that an insert writes nothing but its own words. About
    /// 11 ms for a 64 MiB filter (memory bandwidth; measured on a 2-core
    /// Zen 5 VM): call it for reports, not per item.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// f.insert(&1);
    /// assert!(f.set_bits() >= 1 && f.set_bits() <= f.num_hashes() as usize);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_bits(&self) -> usize {
        self.bits.set_bits()
    }

    /// Items inserted, estimated from the number of set bits.
    ///
    /// One item sets a given bit with a probability fixed by the layout, so
    /// `X` set bits of `m` after `n` items have the expectation
    /// `m (1 - (1 - p)^n)`; this inverts it (the seed's `-(m/k) ln(1 - X/m)`
    /// with `k` adapted to throws that share a word). Within about 1% of the
    /// truth for filters of 10,000 items or more, up to their capacity.
    /// Duplicates set no new bits and are not counted.
    ///
    /// O(size): it counts the set bits when called (see
    /// [`set_bits`](Self::set_bits)).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(100_000, 0.01)?;
    /// for i in 0..50_000u64 {
    ///     f.insert(&i);
    /// }
    /// let estimate = f.len_estimate() as f64;
    /// assert!((estimate - 50_000.0).abs() < 1_500.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len_estimate(&self) -> usize {
        // `as` saturates: a full array estimates usize::MAX.
        sizing::items_from_set_bits(&self.geometry, self.set_bits()).round() as usize
    }

    /// True if nothing has been inserted since the filter was built or cleared.
    ///
    /// Scans the array up to its first set bit: O(size) only when empty.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// assert!(f.is_empty());
    /// f.insert(&3);
    /// assert!(!f.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        !self.bits.any_set()
    }

    /// The false-positive rate expected now, at [`len_estimate`](Self::len_estimate)
    /// items, from the same layout-exact formula that sized the filter.
    /// O(size), as [`len_estimate`](Self::len_estimate).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(10_000, 0.01)?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// for i in 0..f.capacity() as u64 {
    ///     f.insert(&i);
    /// }
    /// assert!(f.estimated_fpr() > 0.007 && f.estimated_fpr() < 0.013);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        sizing::expected_rate(&self.geometry, self.len_estimate() as f64)
    }

    /// ORs `other` into `self`: afterwards `self` contains every item either
    /// held. Safe to call while other threads insert into either filter.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`], [`Error::HashCountMismatch`],
    /// [`Error::LayoutMismatch`] (a different layout or sizing) or
    /// [`Error::HasherMismatch`] (a different seed) when the filters were not
    /// built alike: their bits would not mean the same items.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    ///
    /// let a: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(1).build()?;
    /// let b: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(1).build()?;
    /// b.insert("from b");
    /// a.union(&b)?;
    /// assert!(a.contains("from b"));
    ///
    /// let other_seed: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(2).build()?;
    /// assert!(a.union(&other_seed).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn union(&self, other: &Self) -> Result<(), Error>
    where
        S: PartialEq,
    {
        // The scheme says the layout and, for `Compact`, the block width.
        if self.geometry.scheme != other.geometry.scheme {
            return Err(Error::LayoutMismatch {
                ours: self.layout(),
                theirs: other.layout(),
            });
        }
        if self.num_bits() != other.num_bits() || self.geometry.sizing != other.geometry.sizing {
            return Err(Error::SizeMismatch {
                ours: self.num_bits() / 8,
                theirs: other.num_bits() / 8,
            });
        }
        if self.num_hashes() != other.num_hashes() {
            return Err(Error::HashCountMismatch {
                ours: self.num_hashes(),
                theirs: other.num_hashes(),
            });
        }
        if self.hasher != other.hasher {
            return Err(Error::HasherMismatch);
        }
        self.bits.union(&other.bits);
        Ok(())
    }

    /// Removes every item, while other threads may insert and look up.
    ///
    /// Every word is set to 0 with one store: O(size), and the array's
    /// pages stay resident (clearing writes them).
    ///
    /// # Consistency
    ///
    /// An insert that happens-before the clear is gone after it; one that
    /// happens-after it is kept, and is told it was new. An insert racing
    /// the clear may be kept, gone, or, under [`Layout::CacheLine`] and
    /// [`Layout::Compact`] where an item's bits span several words, kept in
    /// part (then `contains` says no for it, as for any cleared item); its
    /// `true` or `false` may describe either side of the clear. A lookup
    /// racing a clear may see any of these.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::Arc;
    /// use atomic_bloom::BloomFilter;
    ///
    /// let f: Arc<BloomFilter<u64>> = Arc::new(BloomFilter::new(1000, 0.01)?);
    /// f.insert(&1);
    /// f.clear(); // through the Arc
    /// assert!(!f.contains(&1));
    /// assert!(f.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&self) {
        self.bits.clear();
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// The (block, word) an item hash touches first; for loom models that
    /// need two items sharing a word.
    pub fn __first_word_of_hash(&self, hash: u64) -> (usize, usize) {
        match self.probe {
            ProbeKind::Line => {
                let probe = LineProbe::new(hash, self.index, 1);
                (probe.block_index, probe.low_word)
            }
            ProbeKind::Word => {
                let probe = WordProbe::new(hash, self.index, 1);
                (probe.block_index, probe.word)
            }
            ProbeKind::CompactOne | ProbeKind::CompactTwo => {
                let probe = CompactProbe::<16>::new(hash, self.index, 1);
                let mut first_word = 0;
                probe.all_bits(|word, _| {
                    first_word = word;
                    false
                });
                (probe.first_line + first_word / 8, first_word % 8)
            }
        }
    }
}

impl<T: ?Sized + Hash, S: BuildHasher> BloomFilter<T, S> {
    /// Inserts `item`; returns true if it was not in the filter before.
    ///
    /// A false positive makes a new item look old (`false`), at the filter's
    /// rate. Under [`Layout::Word`], of several threads inserting the same
    /// absent item at once exactly one gets `true`; under
    /// [`Layout::CacheLine`] more than one may.
    ///
    /// Takes the item or any borrowed form of it, as [`contains`](Self::contains)
    /// does: a filter of `String` inserts a `&str` without allocating.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<str> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a"));
    ///
    /// let owned: atomic_bloom::BloomFilter<String> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// assert!(owned.insert("a"));
    /// assert!(!owned.insert(&"a".to_string()));
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

    item_methods! {
        "BloomFilter";
        /// Whether `item` may be in the filter: always true for an inserted item,
        /// true for an absent one at about the filter's false-positive rate.
        fn contains;
        /// The 64-bit hash the filter derives all of `item`'s positions from.
        fn hash_item;
    }
}

impl<T: ?Sized, S: Clone> BloomFilter<T, S> {
    /// A copy, as [`clone`](Clone::clone) makes it, or an error where
    /// `clone` would abort the process: for servers, which must answer an
    /// allocation they cannot make with an error. Its bits come from the
    /// allocator's zeroed path, and all-zero words are not written, so the
    /// copy's untouched pages stay the kernel's.
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    ///
    /// # Consistency
    ///
    /// As `clone`: every insert that completed before the call is in the
    /// copy; inserts racing it may or may not be.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::BloomFilter<str> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// let copy = f.try_clone()?;
    /// assert!(copy.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_clone(&self) -> Result<Self, Error> {
        Ok(self.with_bits(self.bits.try_snapshot()?))
    }

    /// A filter built as this one, over `bits` (a copy of this one's).
    fn with_bits(&self, bits: BitArray) -> Self {
        BloomFilter {
            bits,
            layout: self.layout,
            probe: self.probe,
            index: self.index,
            geometry: self.geometry,
            target_rate: self.target_rate,
            hasher: self.hasher.clone(),
            _item: PhantomData,
        }
    }
}

/// A snapshot copy: holds every insert that completed before `clone` began,
/// and perhaps some that were in flight.
impl<T: ?Sized, S: Clone> Clone for BloomFilter<T, S> {
    fn clone(&self) -> Self {
        self.with_bits(self.bits.snapshot())
    }
}

crate::traits::fixed_filter_traits! {
    BloomFilter, debug [layout], same bits,
    /// Equal when built alike (layout, sizing, size, hashes per item, target
    /// rate and hasher: its seed) and holding the same bits: they then answer
    /// every lookup alike. Compares every word, O(size); a snapshot while
    /// others insert.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    ///
    /// let a: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(1).build()?;
    /// let b: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(1).build()?;
    /// a.insert("x");
    /// assert_ne!(a, b);
    /// b.insert("x");
    /// assert_eq!(a, b);
    /// assert_eq!(a, a.clone());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    impl PartialEq;
}

crate::traits::extend_by_insert! {
    /// Inserts every item, as [`insert`](BloomFilter::insert) one at a time
    /// would: the filter's own items, references to them, or their owners
    /// (`&String` into a filter of `str`; see [`AsItem`](crate::AsItem)).
    /// `extend` takes `&mut self` (the trait's signature);
    /// [`insert`](BloomFilter::insert) and
    /// [`par_insert`](BloomFilter::par_insert) take `&self`.
    ///
    /// # Example
    ///
    /// ```
    /// let mut seen: atomic_bloom::BloomFilter<str> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
    /// let urls = vec!["https://a.example/".to_string(), "https://b.example/".to_string()];
    /// seen.extend(&urls);
    /// seen.extend(["https://c.example/"]);
    /// assert!(seen.contains("https://a.example/") && seen.contains("https://c.example/"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    impl Extend for BloomFilter;
}
