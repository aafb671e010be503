//! `WindowedBloomFilter::new` and `builder`: the first child module, so
//! that rustdoc lists the constructors first on the filter's page (it
//! lists impl blocks module by module).

use super::{WindowedBloomFilter, WindowedBloomFilterBuilder};
use crate::{DefaultHasher, Error};

impl<T: ?Sized> WindowedBloomFilter<T, DefaultHasher> {
    /// A filter that remembers at least the last `window` items at
    /// false-positive rate `rate`, with cache-line blocks, the generations
    /// that take the least memory, exact sizing and a random seed.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroWindow`], [`Error::InvalidFalsePositiveRate`] (not in
    /// (0, 1), or NaN), [`Error::TooLarge`], [`Error::AllocationFailed`],
    /// [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let w: WindowedBloomFilter<str> = WindowedBloomFilter::new(1_000_000, 0.01)?;
    /// assert!(w.insert("a"));
    /// assert!(w.contains("a"));
    /// assert_eq!(w.window(), 1_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(window: usize, rate: f64) -> Result<Self, Error> {
        Self::builder(window, rate).build()
    }

    /// A builder: seed or hasher, layout, sizing, generations, a time
    /// window or manual rotation, a clock.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Layout, WindowedBloomFilter};
    ///
    /// let w: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(10_000, 0.001)
    ///     .seed(7)
    ///     .layout(Layout::Compact)
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(window: usize, rate: f64) -> WindowedBloomFilterBuilder<T, DefaultHasher> {
        WindowedBloomFilterBuilder::new(window, rate)
    }
}
