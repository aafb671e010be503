//! The version stripes of the concurrent relocation (`src/PROTOCOLS.md`,
//! "Cuckoo filter").

use crate::sync::{fence, AtomicU64, Ordering};

/// Version stripes: a bucket's stripe is made odd while a fingerprint moves
/// into or out of it, even again after.
pub(crate) struct Versions {
    stripes: Box<[AtomicU64]>,
}

/// Stripes at most: 8 KiB of versions.
const MAX_STRIPES: usize = 1024;

/// Words of slots per stripe at least: a version's 8 bytes for every 512
/// bytes of slots, so the stripes add at most 1/64 to the memory (a
/// stripe for every 4 buckets took 1.6 bits per item at 1%). In the loom
/// build one word, so the models' two-word tables have two stripes and
/// explore moves between buckets of distinct stripes.
#[cfg(not(atomic_bloom_loom))]
const WORDS_PER_STRIPE: usize = 64;
#[cfg(atomic_bloom_loom)]
const WORDS_PER_STRIPE: usize = 1;

/// What of a version counts: all of it, except in the loom build, where a
/// 3-bit counter (four moves to wrap) lets the models explore wrap-around.
#[cfg(not(atomic_bloom_loom))]
pub(super) const VERSION_MASK: u64 = u64::MAX;
#[cfg(atomic_bloom_loom)]
pub(super) const VERSION_MASK: u64 = 0b111;

/// Every stripe starts here: the first move wraps it.
const VERSION_START: u64 = VERSION_MASK - 1;

impl Versions {
    /// Stripes for a table of `words` words of slots: the largest power of
    /// two at or under `words /` [`WORDS_PER_STRIPE`], at least one, at most
    /// [`MAX_STRIPES`].
    pub(super) fn for_words(words: usize) -> Self {
        let per_stripe = (words / WORDS_PER_STRIPE).max(1);
        // The largest power of two at or under `per_stripe`.
        let stripes = 1usize << per_stripe.ilog2();
        Self::new(stripes.min(MAX_STRIPES))
    }

    /// `stripes` stripes (a power of two).
    pub(super) fn new(stripes: usize) -> Self {
        debug_assert!(stripes.is_power_of_two());
        Versions {
            stripes: (0..stripes)
                .map(|_| AtomicU64::new(VERSION_START))
                .collect(),
        }
    }

    #[inline(always)]
    pub(super) fn stripe(&self, bucket: usize) -> &AtomicU64 {
        &self.stripes[bucket & (self.stripes.len() - 1)]
    }

    /// The versions of two buckets' stripes, read before their slots.
    #[inline(always)]
    pub(super) fn read(&self, first: usize, second: usize) -> (u64, u64) {
        // Acquire: a move whose closing (even) version this reads is
        // complete in the slots read after it.
        let a = self.stripe(first).load(Ordering::Acquire);
        // Acquire: as above.
        let b = self.stripe(second).load(Ordering::Acquire);
        (a, b)
    }

    /// As [`read`](Self::read), for a try after a miss that found a move:
    /// read-modify-writes, which read the latest version, so a retry loop
    /// ends once the move has (a plain load may keep returning an older
    /// value in the memory model, and loom explores that).
    #[cold]
    pub(super) fn read_latest(&self, first: usize, second: usize) -> (u64, u64) {
        // Acquire: as in `read`; the RMW reads the latest value.
        let a = self.stripe(first).fetch_add(0, Ordering::Acquire);
        // Acquire: as above.
        let b = self.stripe(second).fetch_add(0, Ordering::Acquire);
        (a, b)
    }

    /// The versions to start try `round` with: [`read`](Self::read) on
    /// the first, [`read_latest`](Self::read_latest) after.
    #[inline(always)]
    pub(super) fn read_for(&self, round: u32, first: usize, second: usize) -> (u64, u64) {
        if round == 0 {
            self.read(first, second)
        } else {
            self.read_latest(first, second)
        }
    }

    /// Whether a miss read between `before` and now is a real miss: no
    /// move touched either stripe meanwhile, and none was under way.
    #[inline]
    pub(super) fn unchanged(&self, first: usize, second: usize, before: (u64, u64)) -> bool {
        // Acquire: a slot load before this fence that read a move's clear
        // (a Release) makes that move's opening bump visible to the loads
        // below, so they see the stripe changed.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        let a = self.stripe(first).load(Ordering::Relaxed);
        // Relaxed: ordered by the fence above.
        let b = self.stripe(second).load(Ordering::Relaxed);
        let even = (before.0 | before.1) & 1 == 0;
        even && ((a ^ before.0) | (b ^ before.1)) & VERSION_MASK == 0
    }

    /// Makes the stripes of `a` and `b` odd (a move begins) or even (it
    /// ended): one bump per distinct stripe.
    pub(super) fn bump(&self, a: usize, b: usize, ordering: Ordering) {
        let first = self.stripe(a);
        // `ordering`: Relaxed to open (the clear that follows is a Release
        // and carries the bump), Release to close (publishes the moved
        // fingerprint to a reader that sees the even version).
        first.fetch_add(1, ordering);
        let second = self.stripe(b);
        if !std::ptr::eq(first, second) {
            // As above.
            second.fetch_add(1, ordering);
        }
    }

    pub(super) fn snapshot(&self) -> Self {
        Versions {
            stripes: (0..self.stripes.len())
                .map(|_| AtomicU64::new(VERSION_START))
                .collect(),
        }
    }

    pub(super) fn memory_bytes(&self) -> usize {
        self.stripes.len() * 8
    }
}
