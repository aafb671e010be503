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
        items
            .into_par_iter()
            .map(|item| usize::from(self.insert(item.borrow())))
            .sum()
    }
}
