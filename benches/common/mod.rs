//! Shared by the benches.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use atomic_bloom::DefaultHasher;

/// The floor: one wyhash and one atomic touch of one word of an array as
/// large as the filter it stands beside (rounded down to a power of two of
/// words): no filter can do less.
#[allow(dead_code)] // not every bench draws a floor
pub struct Floor {
    words: Vec<AtomicU64>,
    hasher: DefaultHasher,
}

#[allow(dead_code)] // not every bench draws a floor
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

    #[inline]
    pub fn insert(&self, key: u64) -> bool {
        self.insert_key(&key)
    }

    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.contains_key(&key)
    }

    /// `insert` of any key, hashed as the filters hash it.
    #[inline]
    pub fn insert_key<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let hash = self.hasher.hash_one(key);
        let bit = 1u64 << (hash >> 58);
        // Relaxed: as in the filters, a bit publishes nothing else.
        self.word(hash).fetch_or(bit, Ordering::Relaxed) & bit == 0
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
