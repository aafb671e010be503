//! Shared by the benches: the constants every subject is built with, the
//! interface every subject is timed through, the floor, and the keys.

// Each bench includes this and uses a part of it.
#![allow(dead_code)]

pub mod keys;

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::sync::Mutex;

use atomic_bloom::{BloomFilter, CountingBloomFilter, DefaultHasher};

/// Target false-positive rate of every filter.
pub const RATE: f64 = 0.01;
/// Seed of every seeded hasher.
pub const SEED: u64 = 0x5eed;
/// Thread counts of the single-operation benches (the contention curves go
/// further).
pub const THREADS: [usize; 2] = [1, 2];

/// A set under test, for keys of type `K`: ours, a peer, or the floor.
pub trait Subject<K: ?Sized = u64>: Send + Sync {
    /// Inserts `key`; whether it was new (peers that do not say return
    /// `true`).
    fn insert(&self, key: &K) -> bool;
    fn contains(&self, key: &K) -> bool;
    /// Empties the subject (untimed).
    fn reset(&mut self);
}

impl<K: Hash + ?Sized> Subject<K> for BloomFilter<K> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        BloomFilter::insert(self, key)
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        BloomFilter::contains(self, key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl<K: Hash + ?Sized, S: BuildHasher + Send + Sync> Subject<K>
    for fastbloom::AtomicBloomFilter<S>
{
    #[inline]
    fn insert(&self, key: &K) -> bool {
        // fastbloom returns whether the item was already present.
        !fastbloom::AtomicBloomFilter::insert(self, key)
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        fastbloom::AtomicBloomFilter::contains(self, key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl<K: Hash + ?Sized> Subject<K> for CountingBloomFilter<K> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        CountingBloomFilter::insert(self, key)
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        CountingBloomFilter::contains(self, key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

/// bloomcraft's counting filter needs `&mut self` to insert: in a `Mutex`.
impl<K: Hash + Send + Sync> Subject<K> for Mutex<bloomcraft::filters::CountingBloomFilter<K>> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        self.lock().unwrap().insert(key);
        true
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.lock().unwrap().contains(key)
    }
    fn reset(&mut self) {
        self.get_mut().unwrap().clear();
    }
}

impl<K: Hash + ?Sized> Subject<K> for Floor {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        self.insert_key(key)
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.contains_key(key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

/// The floor: one wyhash and one touch of one word of an array as large as
/// the filter it stands beside (rounded down to a power of two of words): a
/// load, and a `fetch_or` only when the bit is missing. No filter can do
/// less.
pub struct Floor {
    words: Vec<AtomicU64>,
    hasher: DefaultHasher,
}

impl Floor {
    pub fn new(bytes: usize, hasher: DefaultHasher) -> Self {
        let words = 1usize << (bytes / 8).max(1).ilog2();
        Floor {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            hasher,
        }
    }

    #[inline]
    fn word(&self, hash: u64) -> &AtomicU64 {
        &self.words[hash as usize & (self.words.len() - 1)]
    }

    /// `insert` of any key, hashed as the filters hash it.
    #[inline]
    pub fn insert_key<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let hash = self.hasher.hash_one(key);
        let bit = 1u64 << (hash >> 58);
        let word = self.word(hash);
        // Relaxed: as in the filters, a bit publishes nothing else; test
        // before set, as the filters do, so a duplicate writes nothing.
        word.load(Ordering::Relaxed) & bit == 0
            // Relaxed: as above.
            && word.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// `contains` of any key.
    #[inline]
    pub fn contains_key<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let hash = self.hasher.hash_one(key);
        // Relaxed: as above.
        self.word(hash).load(Ordering::Relaxed) & (1u64 << (hash >> 58)) != 0
    }

    pub fn clear(&mut self) {
        // Relaxed: `&mut self` excludes every other access.
        self.words
            .iter()
            .for_each(|w| w.store(0, Ordering::Relaxed));
    }

    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// Runs `op` over `keys`, split into `threads` contiguous chunks; returns the
/// wall time and the number of `true` results.
pub fn run_split(
    threads: usize,
    keys: std::ops::Range<u64>,
    op: impl Fn(u64) -> bool + Sync,
) -> (Duration, usize) {
    let count = |range: std::ops::Range<u64>| range.filter(|&key| op(key)).count();
    let start = Instant::now();
    let hits = if threads == 1 {
        count(keys)
    } else {
        let chunk = (keys.end - keys.start) / threads as u64;
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let from = keys.start + t * chunk;
                    let to = if t + 1 == threads as u64 {
                        keys.end
                    } else {
                        from + chunk
                    };
                    let count = &count;
                    scope.spawn(move || count(from..to))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        })
    };
    (start.elapsed(), hits)
}

/// What criterion's `iter_custom` asks of a lookup bench: the time of
/// `iters` runs of `op` over `keys` on `threads` threads ([`run_split`]),
/// each run's hits kept from the optimizer.
pub fn timed_runs(
    iters: u64,
    threads: usize,
    keys: std::ops::Range<u64>,
    op: impl Fn(u64) -> bool + Sync,
) -> Duration {
    (0..iters)
        .map(|_| {
            let (time, hits) = run_split(threads, keys.clone(), &op);
            std::hint::black_box(hits);
            time
        })
        .sum()
}
