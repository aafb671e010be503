//! The builders: capacity, rate, seed or hasher, and each filter's own
//! options.

use crate::builder_options::builder_options;
use std::fmt;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use crate::sizing::{self, Geometry, Scheme};
use crate::{BloomFilter, CountingBloomFilter, DefaultHasher, Error, Layout, Sizing};

/// What every builder holds: the size asked for, how to round it, and the
/// hasher.
///
/// A random seed is drawn when the builder is made, and its failure kept
/// until `build`, so that `seed` can still replace it.
#[derive(Debug)]
pub(crate) struct Request<S> {
    pub(crate) capacity: usize,
    pub(crate) rate: f64,
    pub(crate) sizing: Sizing,
    pub(crate) hasher: Result<S, Error>,
}

impl Request<DefaultHasher> {
    pub(crate) fn new(capacity: usize, rate: f64) -> Self {
        Request {
            capacity,
            rate,
            sizing: Sizing::default(),
            hasher: DefaultHasher::random(),
        }
    }

    pub(crate) fn seed(self, seed: u64) -> Self {
        self.hasher(DefaultHasher::with_seed(seed))
    }
}

impl<S> Request<S> {
    /// Checks the request and sizes it for `scheme`; the geometry, the rate
    /// and the hasher (or the seed's failure).
    pub(crate) fn plan(self, scheme: Scheme) -> Result<(Geometry, f64, S), Error> {
        let geometry = sizing::plan(scheme, self.sizing, self.capacity, self.rate)?;
        Ok((geometry, self.rate, self.hasher?))
    }

    pub(crate) fn hasher<H>(self, hasher: H) -> Request<H> {
        Request {
            capacity: self.capacity,
            rate: self.rate,
            sizing: self.sizing,
            hasher: Ok(hasher),
        }
    }
}

/// Configures a [`BloomFilter`] before it is allocated.
///
/// Made by [`BloomFilter::builder`]; nothing is checked or allocated until
/// [`build`](BloomFilterBuilder::build).
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, Layout};
///
/// let filter: BloomFilter<u64> = BloomFilter::builder(1_000_000, 0.001)
///     .seed(42)
///     .layout(Layout::Word)
///     .build()?;
/// assert!(filter.capacity() >= 1_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BloomFilterBuilder<T: ?Sized, S = DefaultHasher> {
    request: Request<S>,
    layout: Layout,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> BloomFilterBuilder<T, DefaultHasher> {
    pub(crate) fn new(capacity: usize, rate: f64) -> Self {
        BloomFilterBuilder {
            request: Request::new(capacity, rate),
            layout: Layout::default(),
            _item: PhantomData,
        }
    }

    builder_options! {
        "BloomFilter";
        /// Seeds the default hasher with `seed` instead of OS entropy: the filter
        /// sets the same bits for the same items in every run, and can be
        /// combined by `union` with another filter of the same seed.
        ///
        /// A fixed seed lets whoever knows it craft items that collide; keep the
        /// random default for filters fed by untrusted input.
        fn seed;
    }
}

impl<T: ?Sized, S> BloomFilterBuilder<T, S> {
    builder_options! {
        "BloomFilter";
        /// Chooses the [`Layout`] (default [`Layout::CacheLine`]).
        fn layout;
        /// Chooses how the size is rounded: [`Sizing::Exact`] (the default)
        /// spends no more than a block over what the capacity and rate need;
        /// [`Sizing::PowerOfTwo`] rounds up to a power of two of blocks, up to
        /// twice the memory, for a mask in place of a multiplication.
        fn sizing;
    }

    /// Hashes items with `hasher` instead of the seeded wyhash default.
    ///
    /// The filter derives all its bit positions from the one 64-bit hash this
    /// hasher returns, so it must spread its output over all 64 bits.
    ///
    /// # Example
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use atomic_bloom::BloomFilter;
    ///
    /// let f: BloomFilter<str, RandomState> =
    ///     BloomFilter::builder(1000, 0.01).hasher(RandomState::new()).build()?;
    /// f.insert("a");
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher<H: BuildHasher>(self, hasher: H) -> BloomFilterBuilder<T, H> {
        BloomFilterBuilder {
            request: self.request.hasher(hasher),
            layout: self.layout,
            _item: PhantomData,
        }
    }

    /// The bytes [`build`](Self::build) would allocate (the filter's
    /// [`memory_bytes`](BloomFilter::memory_bytes)), sized and not
    /// allocated: what a filter of this capacity, rate and layout costs,
    /// before deciding to build it.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`] (not in
    /// (0, 1), or NaN), [`Error::TooLarge`] (more than `isize::MAX` bytes).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Layout};
    ///
    /// let builder = BloomFilter::<u64>::builder(1_000_000, 1e-20).layout(Layout::Compact);
    /// let planned = builder.memory_bytes()?;
    /// assert!(planned > 40_000_000);
    /// let small = BloomFilter::<u64>::builder(1_000_000, 0.01).layout(Layout::Compact);
    /// assert_eq!(small.memory_bytes()?, small.build()?.memory_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> Result<usize, Error> {
        let request = &self.request;
        let scheme = Scheme::for_layout(self.layout, request.rate);
        let geometry = sizing::plan(scheme, request.sizing, request.capacity, request.rate)?;
        Ok(crate::bits::BitArray::memory_bytes_for(geometry.blocks))
    }

    /// Sizes and allocates the filter.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`] (not in
    /// (0, 1), or NaN), [`Error::TooLarge`] (more than `isize::MAX` bytes),
    /// [`Error::AllocationFailed`], and [`Error::SeedUnavailable`] when no
    /// seed was given and the OS entropy source failed.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Error};
    ///
    /// let bad = BloomFilter::<str>::builder(1000, 1.5).build();
    /// assert!(matches!(bad, Err(Error::InvalidFalsePositiveRate { .. })));
    /// ```
    pub fn build(self) -> Result<BloomFilter<T, S>, Error>
    where
        S: BuildHasher,
    {
        let scheme = Scheme::for_layout(self.layout, self.request.rate);
        let (geometry, rate, hasher) = self.request.plan(scheme)?;
        BloomFilter::from_parts(geometry, rate, hasher)
    }
}

impl<T: ?Sized, S: fmt::Debug> fmt::Debug for BloomFilterBuilder<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilterBuilder")
            .field("request", &self.request)
            .field("layout", &self.layout)
            .finish()
    }
}

/// Configures a [`CountingBloomFilter`] before it is allocated.
///
/// Made by [`CountingBloomFilter::builder`]; nothing is checked or allocated
/// until [`build`](CountingBloomFilterBuilder::build). The counting filter
/// has one layout (an item's counters in one cache line), so the options are
/// the size and the hasher.
///
/// # Example
///
/// ```
/// use atomic_bloom::CountingBloomFilter;
///
/// let sessions: CountingBloomFilter<u64> = CountingBloomFilter::builder(100_000, 0.001)
///     .seed(42)
///     .build()?;
/// assert!(sessions.capacity() >= 100_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CountingBloomFilterBuilder<T: ?Sized, S = DefaultHasher> {
    request: Request<S>,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> CountingBloomFilterBuilder<T, DefaultHasher> {
    pub(crate) fn new(capacity: usize, rate: f64) -> Self {
        CountingBloomFilterBuilder {
            request: Request::new(capacity, rate),
            _item: PhantomData,
        }
    }

    builder_options! {
        "CountingBloomFilter";
        /// Seeds the default hasher with `seed` instead of OS entropy: the same
        /// items land on the same counters in every run. As for
        /// [`BloomFilterBuilder::seed`], keep the random default for untrusted
        /// input.
        fn seed;
    }
}

impl<T: ?Sized, S> CountingBloomFilterBuilder<T, S> {
    builder_options! {
        "CountingBloomFilter";
        /// Chooses how the size is rounded: [`Sizing::Exact`] (the default)
        /// spends no more than a block over what the capacity and rate need;
        /// [`Sizing::PowerOfTwo`] rounds up to a power of two of blocks.
        fn sizing;
    }

    /// Hashes items with `hasher` instead of the seeded wyhash default; it
    /// must spread its output over all 64 bits.
    ///
    /// # Example
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use atomic_bloom::CountingBloomFilter;
    ///
    /// let f: CountingBloomFilter<str, RandomState> =
    ///     CountingBloomFilter::builder(1000, 0.01).hasher(RandomState::new()).build()?;
    /// f.insert("a");
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher<H: BuildHasher>(self, hasher: H) -> CountingBloomFilterBuilder<T, H> {
        CountingBloomFilterBuilder {
            request: self.request.hasher(hasher),
            _item: PhantomData,
        }
    }

    /// Sizes and allocates the filter.
    ///
    /// # Errors
    ///
    /// As [`BloomFilterBuilder::build`]: [`Error::ZeroCapacity`],
    /// [`Error::InvalidFalsePositiveRate`], [`Error::TooLarge`],
    /// [`Error::AllocationFailed`], [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{CountingBloomFilter, Error};
    ///
    /// let bad = CountingBloomFilter::<str>::builder(0, 0.01).build();
    /// assert!(matches!(bad, Err(Error::ZeroCapacity)));
    /// ```
    pub fn build(self) -> Result<CountingBloomFilter<T, S>, Error>
    where
        S: BuildHasher,
    {
        let (geometry, rate, hasher) = self.request.plan(Scheme::Counters)?;
        CountingBloomFilter::from_parts(geometry, rate, hasher)
    }
}

impl<T: ?Sized, S: fmt::Debug> fmt::Debug for CountingBloomFilterBuilder<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingBloomFilterBuilder")
            .field("request", &self.request)
            .finish()
    }
}
