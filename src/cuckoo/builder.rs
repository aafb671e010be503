//! [`CuckooFilterBuilder`]: capacity, rate, seed or hasher, growth.

use std::fmt;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use super::stages::{Growth, Stage};
use super::CuckooFilter;
use crate::builder::Request;
use crate::{DefaultHasher, Error};

/// Configures a [`CuckooFilter`] before it is allocated.
///
/// Made by [`CuckooFilter::builder`]; nothing is checked or allocated
/// until [`build`](CuckooFilterBuilder::build).
///
/// # Example
///
/// ```
/// use atomic_bloom::CuckooFilter;
///
/// let filter: CuckooFilter<u64> = CuckooFilter::builder(1_000_000, 0.001)
///     .seed(42)
///     .build()?;
/// assert!(filter.capacity() >= 1_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CuckooFilterBuilder<T: ?Sized, S = DefaultHasher> {
    request: Request<S>,
    growth: bool,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> CuckooFilterBuilder<T, DefaultHasher> {
    pub(crate) fn new(capacity: usize, rate: f64) -> Self {
        CuckooFilterBuilder {
            request: Request::new(capacity, rate),
            growth: false,
            _item: PhantomData,
        }
    }

    crate::builder_options::builder_options! {
        "CuckooFilter";
        /// Seeds the default hasher with `seed` instead of OS entropy: the
        /// filter places the same fingerprints for the same items in every
        /// run.
        ///
        /// A fixed seed lets whoever knows it craft items that share buckets
        /// and fill them; keep the random default for filters fed by
        /// untrusted input.
        fn seed;
    }
}

impl<T: ?Sized, S> CuckooFilterBuilder<T, S> {
    /// Grows instead of failing when full (default: off): the filter
    /// appends a stage twice as large as the last, through `arc-swap`, with
    /// a rate half the last one's; the first stage takes half the rate
    /// asked for, so the total stays at or under it. Lookups and removes
    /// then look in every stage; a remove of an item of a later stage may
    /// take a matching fingerprint of an earlier one (see the type's
    /// "Growth and remove").
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::CuckooFilter;
    ///
    /// let f: CuckooFilter<u64> = CuckooFilter::builder(100, 0.01).growth(true).build()?;
    /// for i in 0..5_000u64 {
    ///     f.insert(&i)?;
    /// }
    /// assert!(f.grows() && f.stages() > 1 && f.contains(&4_999));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn growth(mut self, growth: bool) -> Self {
        self.growth = growth;
        self
    }

    /// Hashes items with `hasher` instead of the seeded wyhash default. The
    /// filter derives the fingerprint and both buckets from the one 64-bit
    /// hash, so the hasher must spread its output over all 64 bits.
    ///
    /// # Example
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use atomic_bloom::CuckooFilter;
    ///
    /// let f: CuckooFilter<str, RandomState> =
    ///     CuckooFilter::builder(1000, 0.01).hasher(RandomState::new()).build()?;
    /// f.insert("a")?;
    /// assert!(f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher<H: BuildHasher>(self, hasher: H) -> CuckooFilterBuilder<T, H> {
        CuckooFilterBuilder {
            request: self.request.hasher(hasher),
            growth: self.growth,
            _item: PhantomData,
        }
    }

    /// Sizes and allocates the filter.
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::new`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{CuckooFilter, Error};
    ///
    /// let err = CuckooFilter::<u64>::builder(1000, 1e-12).seed(1).build().unwrap_err();
    /// assert!(matches!(err, Error::CuckooRateTooLow { .. }));
    /// ```
    pub fn build(self) -> Result<CuckooFilter<T, S>, Error> {
        let Request {
            capacity,
            rate,
            hasher,
            ..
        } = self.request;
        crate::sizing::validate(capacity, rate)?;
        let first_rate = if self.growth {
            Growth::first_rate(rate)
        } else {
            rate
        };
        let first = Stage::new(capacity, first_rate)?;
        let growth = self.growth.then(|| Growth::new(capacity, rate, Vec::new()));
        Ok(CuckooFilter::from_stages(first, growth, rate, hasher?))
    }
}

impl<T: ?Sized, S: fmt::Debug> fmt::Debug for CuckooFilterBuilder<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuckooFilterBuilder")
            .field("capacity", &self.request.capacity)
            .field("rate", &self.request.rate)
            .field("growth", &self.growth)
            .field("hasher", &self.request.hasher)
            .finish()
    }
}
