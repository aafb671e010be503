//! `BloomFilterBuilder`: capacity, rate, layout, seed or hasher.

use std::fmt;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use crate::{BloomFilter, DefaultHasher, Error, Layout};

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
    capacity: usize,
    rate: f64,
    layout: Layout,
    hasher: Result<S, Error>,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> BloomFilterBuilder<T, DefaultHasher> {
    pub(crate) fn new(capacity: usize, rate: f64) -> Self {
        BloomFilterBuilder {
            capacity,
            rate,
            layout: Layout::default(),
            hasher: DefaultHasher::random(),
            _item: PhantomData,
        }
    }

    /// Seeds the default hasher with `seed` instead of OS entropy: the filter
    /// sets the same bits for the same items in every run, and can be
    /// combined by `union` with another filter of the same seed.
    ///
    /// A fixed seed lets whoever knows it craft items that collide; keep the
    /// random default for filters fed by untrusted input.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::BloomFilter;
    ///
    /// let a: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// let b: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert_eq!(a.hash_item("x"), b.hash_item("x"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.hasher = Ok(DefaultHasher::with_seed(seed));
        self
    }
}

impl<T: ?Sized, S> BloomFilterBuilder<T, S> {
    /// Chooses the [`Layout`] (default [`Layout::CacheLine`]).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Layout};
    ///
    /// let f: BloomFilter<str> = BloomFilter::builder(1000, 0.01).layout(Layout::Word).build()?;
    /// assert_eq!(f.layout(), Layout::Word);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
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
            capacity: self.capacity,
            rate: self.rate,
            layout: self.layout,
            hasher: Ok(hasher),
            _item: PhantomData,
        }
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
        let geometry = crate::sizing::plan(self.layout.into(), self.capacity, self.rate)?;
        BloomFilter::from_parts(geometry, self.rate, self.hasher?)
    }
}

impl<T: ?Sized, S: fmt::Debug> fmt::Debug for BloomFilterBuilder<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilterBuilder")
            .field("capacity", &self.capacity)
            .field("rate", &self.rate)
            .field("layout", &self.layout)
            .field("hasher", &self.hasher)
            .finish()
    }
}
