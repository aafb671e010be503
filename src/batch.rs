//! `contains_many` and `insert_many`: a slice of items in, one result per
//! item out, with the blocks of items ahead prefetched while the current
//! ones are worked on, so that several cache misses overlap.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use crate::{BloomFilter, Error, ScalableBloomFilter, WindowedBloomFilter};

/// Items hashed and prefetched together: enough misses in flight to cover
/// memory latency, few enough for the CPU's fill buffers.
const CHUNK: usize = 16;

/// The public `contains_many` and `insert_many` of a filter type that has
/// `hash_item`, `contains_hash` and `insert_hash`: one definition for every
/// type. Each type gives its own docs, and how a chunk's prefetcher (a
/// `Fn(u64)` on a hash) is made from the filter.
macro_rules! batch_methods {
    (
        impl $filter:ident {
            $(#[$contains_doc:meta])* fn contains_many;
            $(#[$insert_doc:meta])* fn insert_many;
            fn prefetcher(|$this:ident| $prefetcher:expr);
        }
    ) => {
        impl<T: ?Sized + Hash, S: BuildHasher> $filter<T, S> {
            $(#[$contains_doc])*
            pub fn contains_many<Q: Borrow<T>>(&self, items: &[Q]) -> Vec<bool> {
                let mut found = Vec::with_capacity(items.len());
                self.for_each_prefetched(items, |hash| found.push(self.contains_hash(hash)));
                found
            }

            $(#[$insert_doc])*
            pub fn insert_many<Q: Borrow<T>>(&self, items: &[Q]) -> Vec<bool> {
                let mut new = Vec::with_capacity(items.len());
                self.for_each_prefetched(items, |hash| new.push(self.insert_hash(hash)));
                new
            }

            #[inline(always)]
            fn for_each_prefetched<Q: Borrow<T>>(&self, items: &[Q], work: impl FnMut(u64)) {
                let $this = self;
                for_each_prefetched(items, |item| self.hash_item(item), || $prefetcher, work);
            }
        }
    };
}

batch_methods! {
    impl BloomFilter {
        /// Whether each item may be in the filter, as [`contains`](Self::contains)
        /// one at a time would say, but faster on filters larger than the cache:
        /// the blocks of 16 items are fetched from memory together.
        ///
        /// # Example
        ///
        /// ```
        /// let f: atomic_bloom::BloomFilter<str> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
        /// f.insert("a");
        /// assert_eq!(f.contains_many(&["a", "b"]), vec![true, false]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn contains_many;

        /// Inserts each item, as [`insert`](Self::insert) one at a time would,
        /// and returns whether each was new; faster on filters larger than the
        /// cache (see [`contains_many`](Self::contains_many)). A duplicate
        /// within the slice is new only the first time.
        ///
        /// # Example
        ///
        /// ```
        /// let f: atomic_bloom::BloomFilter<u64> = atomic_bloom::BloomFilter::new(1000, 0.01)?;
        /// assert_eq!(f.insert_many(&[1, 2, 1]), vec![true, true, false]);
        /// assert!(f.contains(&2));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn insert_many;

        fn prefetcher(|filter| |hash| filter.prefetch_hash(hash));
    }
}

batch_methods! {
    impl ScalableBloomFilter {
        /// Whether each item may be in the filter, as
        /// [`contains`](Self::contains) one at a time would say, with the
        /// newest stage's blocks of 16 items fetched from memory together.
        ///
        /// # Example
        ///
        /// ```
        /// let f: atomic_bloom::ScalableBloomFilter<str> =
        ///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
        /// f.insert("a");
        /// assert_eq!(f.contains_many(&["a", "b"]), vec![true, false]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn contains_many;

        /// Inserts each item, as [`insert`](Self::insert) one at a time would
        /// (growing as needed), and returns whether each was new; the newest
        /// stage's blocks are prefetched as in
        /// [`contains_many`](Self::contains_many). A duplicate within the slice
        /// is new only the first time.
        ///
        /// # Example
        ///
        /// ```
        /// let f: atomic_bloom::ScalableBloomFilter<u64> =
        ///     atomic_bloom::ScalableBloomFilter::new(100, 0.01)?;
        /// assert_eq!(f.insert_many(&[1, 2, 1]), vec![true, true, false]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn insert_many;

        // One load of the stage list per chunk: a stage appended meanwhile
        // only misses its prefetch.
        fn prefetcher(|filter| {
            let stages = filter.prefetcher();
            move |hash| stages.prefetch_hash(hash)
        });
    }
}

impl<T: ?Sized + Hash, S: BuildHasher> ScalableBloomFilter<T, S> {
    /// [`insert_hash_within`](Self::insert_hash_within) for each item in
    /// order, with the newest stage's blocks prefetched as in
    /// [`contains_many`](Self::contains_many): each item's outcome, a
    /// refused one included (a refusal inserts nothing, and the items after
    /// it are still tried, as RedisBloom goes on past "problem inserting").
    ///
    /// # Example
    ///
    /// ```
    /// let f: atomic_bloom::ScalableBloomFilter<u64> =
    ///     atomic_bloom::ScalableBloomFilter::new(1000, 0.01)?;
    /// let items: Vec<u64> = (0..100_000).collect();
    /// let outcomes = f.insert_many_within(&items, 32 * 1024);
    /// assert!(outcomes.iter().any(|outcome| outcome.is_err()));
    /// assert!(f.memory_bytes() <= 32 * 1024);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert_many_within<Q: Borrow<T>>(
        &self,
        items: &[Q],
        max_bytes: usize,
    ) -> Vec<Result<bool, Error>> {
        let mut outcomes = Vec::with_capacity(items.len());
        self.for_each_prefetched(items, |hash| {
            outcomes.push(self.insert_hash_within(hash, max_bytes));
        });
        outcomes
    }
}

batch_methods! {
    impl WindowedBloomFilter {
        /// Whether each item may have been inserted within the window, as
        /// [`contains`](Self::contains) one at a time would say, with the
        /// blocks of 16 items fetched from memory together.
        ///
        /// # Example
        ///
        /// ```
        /// let w: atomic_bloom::WindowedBloomFilter<str> =
        ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
        /// w.insert("a");
        /// assert_eq!(w.contains_many(&["a", "b"]), vec![true, false]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn contains_many;

        /// Inserts each item, as [`insert`](Self::insert) one at a time would
        /// (rotating as needed), and returns whether each was new; blocks are
        /// prefetched as in [`contains_many`](Self::contains_many). A
        /// duplicate within the slice is new only the first time.
        ///
        /// # Example
        ///
        /// ```
        /// let w: atomic_bloom::WindowedBloomFilter<u64> =
        ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
        /// assert_eq!(w.insert_many(&[1, 2, 1]), vec![true, true, false]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn insert_many;

        fn prefetcher(|filter| |hash| filter.prefetch_hash(hash));
    }
}

/// Hashes `items` a chunk at a time, prefetches the chunk's blocks (with a
/// prefetcher made per chunk), then hands each hash to `work` in order.
#[inline(always)]
fn for_each_prefetched<T: ?Sized, Q: Borrow<T>, P: Fn(u64)>(
    items: &[Q],
    hash_item: impl Fn(&T) -> u64,
    prefetcher: impl Fn() -> P,
    mut work: impl FnMut(u64),
) {
    let mut hashes = [0u64; CHUNK];
    for chunk in items.chunks(CHUNK) {
        let prefetch = prefetcher();
        for (slot, item) in hashes.iter_mut().zip(chunk) {
            *slot = hash_item(item.borrow());
            prefetch(*slot);
        }
        for &hash in &hashes[..chunk.len()] {
            work(hash);
        }
    }
}
