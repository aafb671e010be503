//! Bulk insert from a rayon parallel iterator (feature `rayon`, on by default).

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use rayon::iter::{IntoParallelIterator, ParallelIterator};

use crate::BloomFilter;

impl<T, S> BloomFilter<T, S>
where
    T: ?Sized + Hash,
    S: BuildHasher + Sync,
{
    /// Inserts every item of a parallel iterator on rayon's thread pool;
    /// returns how many were new (see [`insert`](BloomFilter::insert)).
    ///
    /// # Example
    ///
    /// ```
    /// use rayon::prelude::*;
    /// use atomic_bloom::BloomFilter;
    ///
    /// let f: BloomFilter<u64> = BloomFilter::new(1_000_000, 0.01)?;
    /// let new = f.par_insert((0..100_000u64).into_par_iter());
    /// assert!(new > 99_000);
    /// assert!(f.contains(&99_999));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn par_insert<I>(&self, items: I) -> usize
    where
        I: IntoParallelIterator,
        I::Item: Borrow<T>,
    {
        count_new(items, |item| self.insert(item))
    }
}

/// Runs `insert` over a parallel iterator; counts the `true`s.
fn count_new<T: ?Sized, I>(items: I, insert: impl Fn(&T) -> bool + Sync + Send) -> usize
where
    I: IntoParallelIterator,
    I::Item: Borrow<T>,
{
    items
        .into_par_iter()
        .map(|item| usize::from(insert(item.borrow())))
        .sum()
}

impl<T, S> crate::CountingBloomFilter<T, S>
where
    T: ?Sized + Hash,
    S: BuildHasher + Sync,
{
    /// Inserts every item of a parallel iterator on rayon's thread pool;
    /// returns how many were absent (see [`insert`](crate::CountingBloomFilter::insert)).
    ///
    /// # Example
    ///
    /// ```
    /// use rayon::prelude::*;
    /// use atomic_bloom::CountingBloomFilter;
    ///
    /// let f: CountingBloomFilter<u64> = CountingBloomFilter::new(100_000, 0.01)?;
    /// f.par_insert((0..10_000u64).into_par_iter());
    /// assert!(f.contains(&9_999));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn par_insert<I>(&self, items: I) -> usize
    where
        I: IntoParallelIterator,
        I::Item: Borrow<T>,
    {
        count_new(items, |item| self.insert(item))
    }
}

impl<T, S> crate::ScalableBloomFilter<T, S>
where
    T: ?Sized + Hash,
    S: BuildHasher + Sync,
{
    /// Inserts every item of a parallel iterator on rayon's thread pool,
    /// growing as needed; returns how many were new (see
    /// [`insert`](crate::ScalableBloomFilter::insert)).
    ///
    /// # Example
    ///
    /// ```
    /// use rayon::prelude::*;
    /// use atomic_bloom::ScalableBloomFilter;
    ///
    /// let f: ScalableBloomFilter<u64> = ScalableBloomFilter::new(1_000, 0.01)?;
    /// f.par_insert((0..100_000u64).into_par_iter());
    /// assert!(f.stages() > 1);
    /// assert!(f.contains(&99_999));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn par_insert<I>(&self, items: I) -> usize
    where
        I: IntoParallelIterator,
        I::Item: Borrow<T>,
    {
        count_new(items, |item| self.insert(item))
    }
}
