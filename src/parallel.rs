//! Bulk insert from a rayon parallel iterator (feature `rayon`, on by default).

use std::hash::{BuildHasher, Hash};

use rayon::iter::{IntoParallelIterator, ParallelIterator};

use crate::{AsItem, BloomFilter, CountingBloomFilter, ScalableBloomFilter, WindowedBloomFilter};

/// `par_insert` on a filter type whose `insert(&T) -> bool` says whether the
/// item was new: one definition for every filter, with the type's example.
macro_rules! par_insert {
    ($filter:ident, $example:literal) => {
        impl<T, S> $filter<T, S>
        where
            T: ?Sized + Hash,
            S: BuildHasher + Sync,
        {
            /// Inserts every item of a parallel iterator on rayon's thread
            /// pool; returns how many were new, as
            #[doc = concat!("[`insert`](", stringify!($filter), "::insert)")]
            /// would say one at a time.
            ///
            /// The items may be the filter's own (`u64` from a range), or
            /// references to them or to their owners (`&String` for a
            /// filter of `str`): anything [`AsItem<T>`](AsItem).
            ///
            /// # Example
            ///
            /// ```
            /// use rayon::prelude::*;
            #[doc = concat!("use atomic_bloom::", stringify!($filter), ";")]
            ///
            #[doc = concat!("let f: ", stringify!($filter), "<u64> = ", $example, ";")]
            /// let new = f.par_insert((0..10_000u64).into_par_iter());
            /// assert!(new > 9_900);
            /// assert!(f.contains(&9_999));
            ///
            /// // A crawler's URLs, as it holds them.
            #[doc = concat!("let seen: ", stringify!($filter), "<str> = ", $example, ";")]
            /// let urls: Vec<String> = (0..1_000).map(|i| format!("https://example.com/{i}")).collect();
            /// seen.par_insert(urls.par_iter());
            /// assert!(seen.contains("https://example.com/999"));
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn par_insert<I>(&self, items: I) -> usize
            where
                I: IntoParallelIterator,
                I::Item: AsItem<T>,
            {
                items
                    .into_par_iter()
                    .map(|item| usize::from(self.insert(item.as_item())))
                    .sum()
            }
        }
    };
}

par_insert!(BloomFilter, "BloomFilter::new(1_000_000, 0.01)?");
par_insert!(
    CountingBloomFilter,
    "CountingBloomFilter::new(100_000, 0.01)?"
);
par_insert!(
    ScalableBloomFilter,
    "ScalableBloomFilter::new(1_000, 0.01)?"
);
par_insert!(
    WindowedBloomFilter,
    "WindowedBloomFilter::new(100_000, 0.01)?"
);

impl<T, S> crate::CuckooFilter<T, S>
where
    T: ?Sized + Hash,
    S: BuildHasher + Sync,
{
    /// Inserts every item of a parallel iterator on rayon's thread pool, as
    /// [`insert`](crate::CuckooFilter::insert) would one at a time.
    ///
    /// The items may be the filter's own, or references to them or to
    /// their owners: anything [`AsItem<T>`](AsItem).
    ///
    /// # Errors
    ///
    /// The first error an insert returned, in time ([`Error::CuckooFilterFull`](crate::Error::CuckooFilterFull)
    /// without growth): the items inserted before it, and by other threads
    /// meanwhile, stay in; rayon stops handing out the rest, and the
    /// errors of inserts under way then are dropped.
    ///
    /// # Example
    ///
    /// ```
    /// use rayon::prelude::*;
    /// use atomic_bloom::{CuckooFilter, Error};
    ///
    /// let f: CuckooFilter<u64> = CuckooFilter::new(20_000, 0.01)?;
    /// f.par_insert((0..10_000u64).into_par_iter())?;
    /// assert!(f.contains(&9_999));
    ///
    /// // A crawler's URLs, as it holds them.
    /// let retry: CuckooFilter<str> = CuckooFilter::new(2_000, 0.01)?;
    /// let urls: Vec<String> = (0..1_000).map(|i| format!("https://example.com/{i}")).collect();
    /// retry.par_insert(urls.par_iter())?;
    /// assert!(retry.contains("https://example.com/999"));
    ///
    /// // Full: the error, and what went in stays in.
    /// let small: CuckooFilter<u64> = CuckooFilter::new(100, 0.01)?;
    /// let err = small.par_insert((0..10_000u64).into_par_iter()).unwrap_err();
    /// assert!(matches!(err, Error::CuckooFilterFull { .. }));
    /// assert!(small.len() >= small.capacity());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn par_insert<I>(&self, items: I) -> Result<(), crate::Error>
    where
        I: IntoParallelIterator,
        I::Item: AsItem<T>,
    {
        // The first error returned, in time: rayon's `try_for_each` would
        // return the error of the leftmost item among those that failed.
        let first = crate::sync::Mutex::new(None);
        let _stopped = items.into_par_iter().try_for_each(|item| {
            self.insert(item.as_item()).map_err(|error| {
                first
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert(error);
            })
        });
        // Stored by every failed insert: `Err` exactly when one failed.
        first
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .map_or(Ok(()), Err)
    }
}
