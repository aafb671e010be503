//! `ScalableBloomFilterBuilder`: checks a user's options and builds the
//! filter on the growth plan they fix.

use crate::builder_options::builder_options;
use std::fmt;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use super::growth::{GrowthPlan, DEFAULT_MEMORY_LIMIT};
use super::ScalableBloomFilter;
use crate::builder::Request;
use crate::{DefaultHasher, Error, Layout};

/// Configures a [`ScalableBloomFilter`] before its first stage is allocated.
///
/// Made by [`ScalableBloomFilter::builder`]; nothing is checked or allocated
/// until [`build`](ScalableBloomFilterBuilder::build).
///
/// # Example
///
/// ```
/// use atomic_bloom::{Layout, ScalableBloomFilter};
///
/// let visited: ScalableBloomFilter<str> = ScalableBloomFilter::builder(10_000, 0.001)
///     .growth_factor(2)
///     .tightening_ratio(0.85)
///     .layout(Layout::CacheLine)
///     .memory_limit(256 << 20)
///     .seed(42)
///     .build()?;
/// assert_eq!(visited.stages(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ScalableBloomFilterBuilder<T: ?Sized, S = DefaultHasher> {
    request: Request<S>,
    growth: usize,
    tightening: f64,
    first_share: Option<f64>,
    layout: Layout,
    memory_limit: Option<usize>,
    first_stage_fill_bits: Option<usize>,
    exact_fill: bool,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> ScalableBloomFilterBuilder<T, DefaultHasher> {
    pub(crate) fn new(initial_capacity: usize, rate: f64) -> Self {
        ScalableBloomFilterBuilder {
            request: Request::new(initial_capacity, rate),
            growth: 2,
            tightening: 0.85,
            first_share: None,
            layout: Layout::default(),
            memory_limit: Some(DEFAULT_MEMORY_LIMIT),
            first_stage_fill_bits: None,
            exact_fill: false,
            _item: PhantomData,
        }
    }

    builder_options! {
        "ScalableBloomFilter";
        /// Seeds the default hasher with `seed` instead of OS entropy: the same
        /// items set the same bits in every run. Keep the random default for
        /// filters fed by untrusted input.
        fn seed;
    }
}

impl<T: ?Sized, S> ScalableBloomFilterBuilder<T, S> {
    /// How much larger each stage is than the one before, from 1 to 32768:
    /// 2 (the default) doubles. With 4 there are half as many stages to
    /// check per lookup, and the last stage may be up to 4× larger than
    /// needed; with 1 every stage holds the initial capacity, so lookups
    /// check ever more stages (RedisBloom's `EXPANSION`).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::builder(100, 0.01).growth_factor(4).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn growth_factor(mut self, growth: usize) -> Self {
        self.growth = growth;
        self
    }

    /// The ratio between the rates of successive stages, in [0.8, 0.9]
    /// (default 0.85). The first stage gets `rate · (1 - ratio)`, so a
    /// higher ratio tightens the first stage and loosens the later ones.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::builder(100, 0.01).tightening_ratio(0.9).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tightening_ratio(mut self, ratio: f64) -> Self {
        self.tightening = ratio;
        self
    }

    /// The share of the total rate the first stage gets, strictly between 0
    /// and 1; the later stages share the rest, each
    /// [`tightening_ratio`](Self::tightening_ratio) times the one before.
    /// Unset (the default), the first stage gets `1 - tightening_ratio`
    /// (0.15), as in Almeida et al.
    ///
    /// A large share suits a filter whose initial capacity is a good guess.
    /// Measured at 1% with [`Layout::Compact`] and [`Sizing::Exact`](crate::Sizing::Exact): the
    /// first stage of 1M items takes 10.4 bits per item at a share of 0.8
    /// against 14.0 by default; a filter grown 1000x (from 100 to 100,000
    /// items) takes 271 KB against 225 KB, and measures 0.94% against
    /// 0.77%. (The Valkey module uses 0.8: a new key costs less than
    /// RedisBloom's, and one grown 1000x still less than its 289 KB.)
    ///
    /// At most so much that the second stage's rate, `(1 - share) ·
    /// (1 - ratio) / share` of the first's, is 1/1024 of it or more: every
    /// share up to 0.99 at every tightening ratio (up to 0.995 at 0.8). A
    /// stage at rate `p` takes about `log2(1/p) / ln 2` bits an item, so
    /// raising the share from `s` towards 1 saves the first stage at most
    /// `log2(1/s) / ln 2` bits an item (0.021 from 0.99), and costs the
    /// second `log2` of the ratio's fall over `ln 2`, without bound: at `1 -
    /// 2^-53` and a rate of 0.99 its rate is near 2e-17, and in the word
    /// layout a filter of 4 KB planned a second stage of 1.1 TB (18 PB at a
    /// growth factor of 32768). The bound keeps a second stage's item within
    /// about 14.4 bits of a first stage's.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::ScalableBloomFilter;
    ///
    /// let default: ScalableBloomFilter<u64> = ScalableBloomFilter::new(100_000, 0.01)?;
    /// let first_heavy: ScalableBloomFilter<u64> =
    ///     ScalableBloomFilter::builder(100_000, 0.01).first_stage_share(0.8).build()?;
    /// assert!(first_heavy.memory_bytes() <= default.memory_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn first_stage_share(mut self, share: f64) -> Self {
        self.first_share = Some(share);
        self
    }

    builder_options! {
        "ScalableBloomFilter";
        /// The [`Layout`] of every stage (default [`Layout::CacheLine`]).
        fn layout;
        /// How every stage's size is rounded: with [`Sizing::Exact`](crate::Sizing::Exact) (the
        /// default) a stage takes no more than a block over what its capacity
        /// and rate need; [`Sizing::PowerOfTwo`](crate::Sizing::PowerOfTwo) rounds each up to a power of
        /// two of blocks.
        fn sizing;
    }

    /// The most bytes the stages may take together (default 1 GiB). When the
    /// next stage would pass it the filter stops growing: see
    /// [`ScalableBloomFilter::try_insert`].
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::builder(1000, 0.01).memory_limit(1 << 20).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// No memory limit: the filter grows as long as the allocator gives
    /// memory. Only for input you trust: a flood of distinct items then
    /// grows it without bound.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::builder(1000, 0.01).unlimited_memory().build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unlimited_memory(mut self) -> Self {
        self.memory_limit = None;
        self
    }

    /// Counts every new item's bits towards its stage's fill, instead of a
    /// sample of them: a stage is then full by its bits alone, so a copy of
    /// the filter (saved and loaded, or fed the same items elsewhere) grows
    /// at the same item as the original when items go in through
    /// [`insert_hash_within`](ScalableBloomFilter::insert_hash_within). It
    /// costs an atomic add on each new item's thread slot, which many
    /// threads inserting at once contend on: meant for one writer (a
    /// server that replicates a filter by the commands applied to it). Not
    /// saved with the filter: a loaded one takes it from
    /// [`with_exact_fill`](ScalableBloomFilter::with_exact_fill).
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::builder(1000, 0.01).exact_fill().build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exact_fill(mut self) -> Self {
        self.exact_fill = true;
        self
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// The first stage counts as full at `bits` set bits; loom models use it
    /// to cross a stage boundary in one insert.
    pub fn __first_stage_fill_bits(mut self, bits: usize) -> Self {
        self.first_stage_fill_bits = Some(bits);
        self
    }

    /// Hashes items with `hasher` instead of the seeded wyhash default; it
    /// must spread its output over all 64 bits.
    ///
    /// # Example
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use atomic_bloom::ScalableBloomFilter;
    ///
    /// let f: ScalableBloomFilter<str, RandomState> =
    ///     ScalableBloomFilter::builder(100, 0.01).hasher(RandomState::new()).build()?;
    /// f.insert("a");
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher<H: BuildHasher>(self, hasher: H) -> ScalableBloomFilterBuilder<T, H> {
        ScalableBloomFilterBuilder {
            request: self.request.hasher(hasher),
            growth: self.growth,
            tightening: self.tightening,
            first_share: self.first_share,
            layout: self.layout,
            memory_limit: self.memory_limit,
            first_stage_fill_bits: self.first_stage_fill_bits,
            exact_fill: self.exact_fill,
            _item: PhantomData,
        }
    }

    /// Checks the options and allocates the first stage.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`],
    /// [`Error::InvalidGrowthFactor`] (not in [1, 32768]),
    /// [`Error::InvalidTighteningRatio`] (outside [0.8, 0.9]),
    /// [`Error::InvalidFirstStageShare`] (not in (0, 1)),
    /// [`Error::SecondStageTooDense`] (a share that leaves the second
    /// stage a rate under 1/1024 of the first's),
    /// [`Error::TooLarge`], [`Error::MemoryLimitTooSmall`] (the first stage
    /// alone passes the limit), [`Error::AllocationFailed`],
    /// [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Error, ScalableBloomFilter};
    ///
    /// let bad = ScalableBloomFilter::<str>::builder(1000, 0.01).growth_factor(0).build();
    /// assert!(matches!(bad, Err(Error::InvalidGrowthFactor { growth: 0 })));
    /// ```
    pub fn build(self) -> Result<ScalableBloomFilter<T, S>, Error>
    where
        S: BuildHasher,
    {
        let Request {
            capacity,
            rate,
            sizing,
            hasher,
        } = self.request;
        let growth = u32::try_from(self.growth).map_err(|_| Error::InvalidGrowthFactor {
            growth: self.growth,
        })?;
        let plan = GrowthPlan {
            initial_capacity: capacity,
            rate,
            growth,
            tightening: self.tightening,
            first_share: self.first_share,
            layout: self.layout,
            sizing,
            memory_limit: self.memory_limit,
            first_stage_fill_bits: self.first_stage_fill_bits,
            exact_fill: self.exact_fill,
        };
        plan.validate()?;
        ScalableBloomFilter::from_parts(plan, hasher?)
            .map_err(|err| crate::sizing::request_error(err, capacity, rate))
    }
}

impl<T: ?Sized, S: fmt::Debug> fmt::Debug for ScalableBloomFilterBuilder<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalableBloomFilterBuilder")
            .field("request", &self.request)
            .field("growth", &self.growth)
            .field("tightening", &self.tightening)
            .field("first_share", &self.first_share)
            .field("layout", &self.layout)
            .field("memory_limit", &self.memory_limit)
            .field("exact_fill", &self.exact_fill)
            .finish()
    }
}
