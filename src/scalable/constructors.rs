//! `ScalableBloomFilter::new` and `builder`: the first `impl` block on the
//! type's page.

use super::{ScalableBloomFilter, ScalableBloomFilterBuilder};
use crate::{DefaultHasher, Error};

impl<T: ?Sized> ScalableBloomFilter<T, DefaultHasher> {
    /// A scalable filter whose first stage holds about `initial_capacity`
    /// items, at a total false-positive rate `rate`, growth 2, tightening
    /// 0.85, a random seed and a 1 GiB memory limit.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`],
    /// [`Error::TooLarge`], [`Error::AllocationFailed`],
    /// [`Error::SeedUnavailable`], [`Error::MemoryLimitTooSmall`].
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1_000, 0.001)?;
    /// assert_eq!(f.stages(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(initial_capacity: usize, rate: f64) -> Result<Self, Error> {
        Self::builder(initial_capacity, rate).build()
    }

    /// A builder: growth factor, tightening ratio, layout, seed or hasher,
    /// memory limit.
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<str> =
    ///     atomic_bloom::ScalableBloomFilter::builder(1_000, 0.01)
    ///         .growth_factor(4)
    ///         .tightening_ratio(0.9)
    ///         .seed(7)
    ///         .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(initial_capacity: usize, rate: f64) -> ScalableBloomFilterBuilder<T> {
        ScalableBloomFilterBuilder::new(initial_capacity, rate)
    }
}
