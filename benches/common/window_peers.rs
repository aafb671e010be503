//! The peers of `benches/windowed.rs`: filters over a sliding window as
//! others build them. Included by that bench alone (`#[path]`).
//!
//! * [`Apbf`]: the Age-Partitioned Bloom Filter of Shtul, Baquero and
//!   Almeida (2020), written here after CrowdStrike/apbf (Go, MIT): `k + l`
//!   slices of `m = ⌈1.442695 k g⌉` bits in a ring, an insert sets one bit
//!   in each of the `k` newest slices, a lookup looks for `k` consecutive
//!   slices holding the item's bits, and every `g` inserts the oldest slice
//!   is cleared and becomes the newest; one `RwLock` around it all, as
//!   theirs. Slice positions by their enhanced double hashing, from a
//!   128-bit hash: here wyhash (seeded as every subject) and a mix of it,
//!   where they use murmur3's two halves.
//! * [`TwoGenerations`]: the usual workaround, two fastbloom
//!   `AtomicBloomFilter`s each sized for the whole window at half the rate;
//!   inserts go to the current one, lookups ask both, and once the current
//!   one has taken a window of new items a fresh filter replaces the
//!   older, through arc-swap.

// Each bench includes this and uses a part of it.
#![allow(dead_code)]

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use arc_swap::ArcSwap;
use atomic_bloom::DefaultHasher;

/// Their constant, as they write it (log2 e, truncated): a slice of a
/// generation of `g` items takes `⌈1.442695 k g⌉` bits.
#[allow(clippy::approx_constant)]
pub const APBF_BITS_PER_SLICE_ITEM: f64 = 1.442695;

/// The APBF setting with the least memory per remembered item at a rate
/// of at most `rate`, by their false-positive formula ([`apbf_rate`]):
/// `(k, l)`. It takes `1.442695 k (k + l) / l` bits per item of the window
/// it always remembers, `l g` ([`apbf_bits_per_item`]). For each `k` the
/// largest `l` within the rate is the cheapest (the rate only rises with
/// `l`, the bits only fall), and no `l` takes `k` under `1.442695 k` bits,
/// which ends the search. At 1%: k = 11, l = 46, 19.66 bits at 0.995%
/// (k = 12, l = 88 takes 19.67; k = 10, l = 24, 20.44). At 0.1%: k = 16,
/// l = 140, 25.72. `tests/window_peers.rs` checks both against a
/// bottom-up evaluation of the formula of its own.
pub fn apbf_least_memory(rate: f64) -> (usize, usize) {
    let mut best = (0, 0, f64::INFINITY);
    for k in 1.. {
        if APBF_BITS_PER_SLICE_ITEM * k as f64 >= best.2 {
            break;
        }
        // The largest l within the rate: doubling, then halving.
        if apbf_rate(k, 1) > rate {
            continue;
        }
        let mut high = 2;
        while apbf_rate(k, high) <= rate {
            high *= 2;
        }
        let mut low = high / 2;
        while high - low > 1 {
            let middle = (low + high) / 2;
            if apbf_rate(k, middle) <= rate {
                low = middle;
            } else {
                high = middle;
            }
        }
        if apbf_bits_per_item(k, low) < best.2 {
            best = (k, low, apbf_bits_per_item(k, low));
        }
    }
    (best.0, best.1)
}

/// Bits per window item of an APBF of `k + l` slices, a large window.
pub fn apbf_bits_per_item(k: usize, l: usize) -> f64 {
    APBF_BITS_PER_SLICE_ITEM * (k * (k + l)) as f64 / l as f64
}

/// Their false-positive formula, for the record.
pub fn apbf_rate(k: usize, l: usize) -> f64 {
    fn calculate(k: usize, l: usize, a: usize, i: usize, memo: &mut Vec<Vec<f64>>) -> f64 {
        if a == k {
            return 1.0;
        }
        if i > l + a {
            return 0.0;
        }
        if memo[a][i] >= 0.0 {
            return memo[a][i];
        }
        let fill = if i < k {
            (i + 1) as f64 / (2 * k) as f64
        } else {
            0.5
        };
        let value = fill * calculate(k, l, a + 1, i + 1, memo)
            + (1.0 - fill) * calculate(k, l, 0, i + 1, memo);
        memo[a][i] = value;
        value
    }
    let mut memo = vec![vec![-1.0; k + l + 2]; k + 1];
    calculate(k, l, 0, 0, &mut memo)
}

pub struct Apbf {
    k: usize,
    h: usize,
    g: usize,
    m: usize,
    hasher: DefaultHasher,
    state: RwLock<ApbfState>,
}

struct ApbfState {
    /// The newest slice, 1-based as theirs.
    base: usize,
    /// Inserts into the current generation.
    count: usize,
    bits: Vec<u64>,
}

impl Apbf {
    /// An APBF that always remembers the last `window` items at `rate`,
    /// in its least memory ([`apbf_least_memory`]): `g = ⌈window / l⌉`.
    pub fn new(window: usize, rate: f64, hasher: DefaultHasher) -> Self {
        let (k, l) = apbf_least_memory(rate);
        let g = window.div_ceil(l);
        let m = (APBF_BITS_PER_SLICE_ITEM * (k * g) as f64).ceil() as usize;
        let h = k + l;
        Apbf {
            k,
            h,
            g,
            m,
            hasher,
            state: RwLock::new(ApbfState {
                base: 1,
                count: 0,
                bits: vec![0; (h * m).div_ceil(64)],
            }),
        }
    }

    pub fn memory_bytes(&self) -> usize {
        (self.h * self.m).div_ceil(64) * 8
    }

    fn hash<K: Hash + ?Sized>(&self, key: &K) -> [u64; 2] {
        let first = self.hasher.hash_one(key);
        // splitmix64's finalizer: a second, independent-looking half.
        let mut second = first.wrapping_add(0x9e37_79b9_7f4a_7c15);
        second = (second ^ (second >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        second = (second ^ (second >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        [first, second ^ (second >> 31)]
    }

    /// Their `location`: slice `i` (1-based), enhanced double hashing.
    fn location(&self, i: usize, hash: [u64; 2]) -> usize {
        let i64_ = i as u64;
        let t = (i64_ * i64_ * i64_ - i64_) / 6;
        let within = hash[0]
            .wrapping_add(i64_.wrapping_mul(hash[1]))
            .wrapping_add(t)
            % self.m as u64;
        (i - 1) * self.m + within as usize
    }

    fn next(&self, i: usize) -> usize {
        if i == self.h {
            1
        } else {
            i + 1
        }
    }

    fn previous(&self, i: usize) -> usize {
        if i == 1 {
            self.h
        } else {
            i - 1
        }
    }

    fn shift(&self, state: &mut ApbfState) {
        state.count = 0;
        state.base = self.previous(state.base);
        let (first, last) = ((state.base - 1) * self.m, state.base * self.m);
        for bit in first..last {
            state.bits[bit / 64] &= !(1 << (bit % 64));
        }
    }

    pub fn insert<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let hash = self.hash(key);
        let new = !self.contains_hash(hash);
        let mut state = self.state.write().unwrap();
        if state.count == self.g {
            self.shift(&mut state);
        }
        let mut slice = state.base;
        for _ in 0..self.k {
            let bit = self.location(slice, hash);
            state.bits[bit / 64] |= 1 << (bit % 64);
            slice = self.next(slice);
        }
        state.count += 1;
        new
    }

    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hash(key))
    }

    /// Their `Query`: scan from the newest slice for k consecutive hits.
    fn contains_hash(&self, hash: [u64; 2]) -> bool {
        let state = self.state.read().unwrap();
        let mut slice = state.base;
        let mut matched = 0;
        let mut i = self.h;
        while i + matched >= self.k {
            let bit = self.location(slice, hash);
            if state.bits[bit / 64] & (1 << (bit % 64)) != 0 {
                matched += 1;
                if matched == self.k {
                    break;
                }
            } else {
                matched = 0;
            }
            slice = self.next(slice);
            if i == 0 {
                break;
            }
            i -= 1;
        }
        matched == self.k
    }

    pub fn clear(&mut self) {
        let state = self.state.get_mut().unwrap();
        state.bits.iter_mut().for_each(|word| *word = 0);
        state.base = 1;
        state.count = 0;
    }
}

type Fast = fastbloom::AtomicBloomFilter<DefaultHasher>;

/// Two generations of fastbloom filters.
pub struct TwoGenerations {
    window: usize,
    rate: f64,
    hasher: DefaultHasher,
    /// [current, previous].
    generations: ArcSwap<[Arc<Fast>; 2]>,
    /// New items in the current generation.
    count: AtomicUsize,
}

impl TwoGenerations {
    pub fn new(window: usize, rate: f64, hasher: DefaultHasher) -> Self {
        let make = || Arc::new(Self::generation(window, rate, hasher));
        TwoGenerations {
            window,
            rate,
            hasher,
            generations: ArcSwap::from_pointee([make(), make()]),
            count: AtomicUsize::new(0),
        }
    }

    /// Each generation holds the whole window at half the rate, so the
    /// two together keep the rate when both are full.
    fn generation(window: usize, rate: f64, hasher: DefaultHasher) -> Fast {
        fastbloom::AtomicBloomFilter::with_false_pos(rate / 2.0)
            .hasher(hasher)
            .expected_items(window)
    }

    pub fn memory_bytes(&self) -> usize {
        let generations = self.generations.load();
        generations.iter().map(|g| g.num_bits() / 8).sum()
    }

    pub fn insert<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let generations = self.generations.load();
        let was_in_current = generations[0].insert(key);
        let new = !was_in_current && !generations[1].contains(key);
        // Relaxed: a count; the swap below is what publishes.
        if !was_in_current && self.count.fetch_add(1, Ordering::Relaxed) + 1 == self.window {
            let fresh = Arc::new(Self::generation(self.window, self.rate, self.hasher));
            let next = Arc::new([fresh, Arc::clone(&generations[0])]);
            self.generations.compare_and_swap(&generations, next);
            // Relaxed: as above.
            self.count.store(0, Ordering::Relaxed);
        }
        new
    }

    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let generations = self.generations.load();
        generations[0].contains(key) || generations[1].contains(key)
    }

    pub fn clear(&mut self) {
        *self = TwoGenerations::new(self.window, self.rate, self.hasher);
    }
}
