//! Noticing that a [`BloomFilter`] reached its capacity without a shared
//! write on every insert: a sampled tally of the bits inserts turn on.
//!
//! Only an insert whose hash has its top `sample_shift` bits zero (one in
//! `2^sample_shift`) adds, `2^sample_shift` times the bits it turned on, to
//! its thread's slot of a [`ThreadTally`]. The shift is chosen per filter so
//! that about [`SAMPLED_AT_FILL`] inserts are sampled by the time the filter
//! is full: the tally then estimates the set bits within about 0.3% (one
//! standard deviation) at the fill, so the trigger fires within 1% of it.
//! Small filters sample every insert and count exactly.
//!
//! A thread sums the slots only when its own slot passes a multiple of
//! `step` (the fill over [`STEPS_PER_FILL`]), so with `t` threads adding the
//! filter is seen full at most `t / STEPS_PER_FILL` of the fill late.
//!
//! A small filter (at most [`SMALL_LINES`] lines) is different in two
//! ways. Its rate at a given fill varies from filter to filter (a few
//! blocks, unevenly loaded): it counts as full when the rate of its bits as
//! they are, computed from every block's fill, would pass its target with
//! one more item, so that no small stage ends past its rate. That rate is
//! a pass over the filter, so each check also works out how many more set
//! bits cannot take the rate to the target, wherever they land, and the
//! next check waits for the tally to pass them. And its tally
//! has one slot, not one per thread: the slots would outweigh the filter.
//!
//! Used by the scalable filter (a full stage grows the filter) and the
//! frontier (a full filter is reported once).

use crate::sizing;
use crate::sync::{AtomicUsize, Ordering};
use crate::tally::{ThreadTally, SLOTS};
use crate::BloomFilter;

/// Filters of at most this many 64-byte lines are small (see the module
/// docs).
const SMALL_LINES: usize = 64;

/// Sampled inserts wanted by the time the filter is full.
const SAMPLED_AT_FILL: usize = 1 << 17;

/// How finely a thread's slot is cut into steps at which it sums the tally.
const STEPS_PER_FILL: usize = 1024;

/// The fill, in set bits, at which a filter counts as full, and the
/// sampled tally that estimates its set bits.
#[derive(Debug)]
pub(crate) struct FillMark {
    /// Set bits at which the filter holds `capacity()` items.
    full_at_bits: usize,
    /// One insert in `2^sample_shift` adds to the tally.
    sample_shift: u32,
    /// A thread sums the tally each time its slot passes a multiple of this.
    step: usize,
    /// Full when the rate of the bits reaches the target (a small filter),
    /// not at `full_at_bits`.
    by_rate: bool,
    /// Set bits (as the tally counts them) below which a small filter's
    /// rate cannot have reached its target: the last check proved it.
    next_rate_check: AtomicUsize,
    tally: ThreadTally,
}

/// What an insert did.
pub(crate) struct TrackedInsert {
    /// Some bit turned on: the item was new.
    pub(crate) new: bool,
    /// This insert found the filter at or past its fill.
    pub(crate) full: bool,
}

impl FillMark {
    /// The mark of `filter` at its `capacity()` (or at `full_at_bits` set
    /// bits, when given: loom models use it to fill a filter in one insert),
    /// counting `already_set` bits as set. `exact`: every insert adds to the
    /// tally (none is sampled), so the tally is the filter's set bits and
    /// fullness a function of the bits alone.
    pub(crate) fn new<T: ?Sized, S>(
        filter: &BloomFilter<T, S>,
        full_at_bits: Option<usize>,
        already_set: usize,
        exact: bool,
    ) -> Self {
        let geometry = filter.geometry();
        let full_at_bits_given = full_at_bits;
        let (full_at_bits, sample_shift) = match full_at_bits {
            Some(bits) => (bits, 0),
            None if exact => (
                sizing::set_bits_at(geometry, geometry.capacity as f64) as usize,
                0,
            ),
            None => (
                sizing::set_bits_at(geometry, geometry.capacity as f64) as usize,
                (geometry.capacity / SAMPLED_AT_FILL)
                    .checked_ilog2()
                    .unwrap_or(0),
            ),
        };
        let full_at_bits = full_at_bits.max(1);
        let small = Self::is_small(geometry.blocks);
        FillMark {
            full_at_bits,
            sample_shift,
            step: (full_at_bits / STEPS_PER_FILL).max(1),
            by_rate: small && full_at_bits_given.is_none(),
            next_rate_check: AtomicUsize::new(0),
            tally: ThreadTally::new(already_set, Self::slots(geometry.blocks)),
        }
    }

    fn is_small(lines: usize) -> bool {
        lines <= SMALL_LINES
    }

    fn slots(lines: usize) -> usize {
        if Self::is_small(lines) {
            1
        } else {
            SLOTS
        }
    }

    /// Bytes the mark of a filter of `lines` lines takes beside it.
    pub(crate) fn bytes_for(lines: usize) -> usize {
        ThreadTally::bytes_for(Self::slots(lines))
    }

    /// Bytes this mark takes beside its filter.
    pub(crate) fn bytes(&self) -> usize {
        self.tally.bytes()
    }

    /// Inserts `hash` into `filter` (the filter this mark was made for).
    #[inline(always)]
    pub(crate) fn insert_hash<T: ?Sized, S>(
        &self,
        filter: &BloomFilter<T, S>,
        hash: u64,
    ) -> TrackedInsert {
        let sampled = hash.leading_zeros() >= self.sample_shift;
        let turned_on = filter.insert_hash_turned_on(hash, sampled);
        TrackedInsert {
            new: turned_on.new,
            full: turned_on.new
                && sampled
                && self.crossed_a_step(turned_on.bits)
                && self.is_full(filter),
        }
    }

    /// Adds a sampled insert's bits to the tally; true if that took the
    /// caller's slot past a multiple of `step`.
    #[inline(always)]
    fn crossed_a_step(&self, turned_on: u32) -> bool {
        let add = self.tally.add((turned_on as usize) << self.sample_shift);
        add.before / self.step != add.after / self.step
    }

    /// Set bits, as the sampled tally estimates them.
    pub(crate) fn estimated_set_bits(&self) -> usize {
        self.tally.sum()
    }

    /// Whether `filter` (the filter this mark was made for) reached its
    /// fill: by the rate of its bits if it is small, else by the tally.
    pub(crate) fn is_full<T: ?Sized, S>(&self, filter: &BloomFilter<T, S>) -> bool {
        let set_bits = self.estimated_set_bits();
        if !self.by_rate {
            return set_bits >= self.full_at_bits;
        }
        // Relaxed: a bound an earlier check proved from the bits it read;
        // it only spares a pass, and orders nothing.
        if set_bits < self.next_rate_check.load(Ordering::Relaxed) {
            return false;
        }
        match bits_short_of_target(filter) {
            None => true,
            Some(short) => {
                // Relaxed: as above.
                self.next_rate_check.store(
                    set_bits.saturating_add(short).saturating_add(1),
                    Ordering::Relaxed,
                );
                false
            }
        }
    }

    /// Starts the count over: the filter was cleared.
    fn reset(&self) {
        self.tally.reset();
        // Relaxed: as in `is_full`; 0 only makes the next check look.
        self.next_rate_check.store(0, Ordering::Relaxed);
    }

    pub(crate) fn full_at_bits(&self) -> usize {
        self.full_at_bits
    }
}

/// How many more set bits, wherever they land, leave the rate of
/// `filter`'s bits with one more item under its target; `None` once that
/// rate reached it. What a small filter's fill is judged by: O(size).
///
/// One more item sets about `k (1 - f)` new bits of one group of `slots`
/// (at fill `f`), so each of the `k` terms of its group's `f^k` grows by
/// about `(1 - f) / (slots f)`: one more item multiplies the rate by about
/// `1 + k² (1 - f) / (f · slots · groups)`, a factor that only falls as
/// bits are set.
///
/// A group of `s` set bits is hit with chance `q(s) = (s / slots)^h` (`h`
/// bits per word), convex in `s`; the rate is the mean of `q` over the
/// groups (for a cache line, of the product of its two halves' means,
/// which grows by at most the sum of their growths). So `Δ` more bits raise
/// it by at most `Δ · touched / groups · q'(fullest + Δ)`, with `touched`
/// the groups an item touches and `fullest` the set bits of the fullest
/// group: the answer is the largest `Δ` that bound keeps under the target.
fn bits_short_of_target<T: ?Sized, S>(filter: &BloomFilter<T, S>) -> Option<usize> {
    let geometry = filter.geometry();
    let found = filter
        .bits()
        .rate_of_bits(geometry.scheme, geometry.bits_per_word);
    let num_bits = filter.num_bits();
    let fill = found.set_bits as f64 / num_bits as f64;
    let k = f64::from(geometry.num_hashes());
    let (slots, groups) = sizing::group_shape(geometry);
    let one_more = if fill > 0.0 {
        1.0 + k * k * (1.0 - fill) / (fill * slots * groups)
    } else {
        1.0
    };
    let target = filter.target_fpr();
    let h = geometry.bits_per_word as i32;
    let touched = f64::from(geometry.num_hashes() / geometry.bits_per_word);
    let stays_under = |more: usize| {
        let top = (f64::from(found.fullest_group) + more as f64).min(slots);
        let slope = f64::from(h) * (top / slots).powi(h - 1) / slots;
        (found.rate + more as f64 * touched / groups * slope) * one_more < target
    };
    if !stays_under(0) {
        return None;
    }
    // The bound grows with `Δ`: the largest `Δ` under the target, by
    // bisection between one that stays under and one that does not.
    let (mut under, mut over) = (0usize, num_bits);
    if stays_under(over) {
        return Some(over);
    }
    while over - under > 1 {
        let middle = under + (over - under) / 2;
        if stays_under(middle) {
            under = middle;
        } else {
            over = middle;
        }
    }
    Some(under)
}

/// A Bloom filter with the mark at which it is full: a stage of the
/// scalable filter, or a frontier's fixed filter.
pub(crate) struct Tracked<T: ?Sized, S> {
    filter: BloomFilter<T, S>,
    mark: FillMark,
}

impl<T: ?Sized, S> Tracked<T, S> {
    /// Tracks a new, empty `filter`; `full_at_bits` overrides its fill (loom
    /// models use it to fill a filter in one insert); `exact` counts every
    /// insert (see [`FillMark::new`]).
    pub(crate) fn new_empty(
        filter: BloomFilter<T, S>,
        full_at_bits: Option<usize>,
        exact: bool,
    ) -> Self {
        let mark = FillMark::new(&filter, full_at_bits, 0, exact);
        Tracked { filter, mark }
    }

    /// Tracks a filter that may hold items already (loaded, or handed in):
    /// its set bits count towards the fill (a popcount, O(size)).
    pub(crate) fn new_filled(
        filter: BloomFilter<T, S>,
        full_at_bits: Option<usize>,
        exact: bool,
    ) -> Self {
        let mark = FillMark::new(&filter, full_at_bits, filter.set_bits(), exact);
        Tracked { filter, mark }
    }

    /// The filter, given back (its mark dropped). Unused under loom, where
    /// `src/scalable/copy.rs` is not built.
    #[cfg_attr(atomic_bloom_loom, allow(dead_code))]
    pub(crate) fn into_filter(self) -> BloomFilter<T, S> {
        self.filter
    }

    /// Bytes a tracked filter of `blocks` lines takes, before allocating.
    pub(crate) fn memory_bytes_for(blocks: usize) -> usize {
        crate::bits::BitArray::memory_bytes_for(blocks).saturating_add(FillMark::bytes_for(blocks))
    }

    /// Bytes this takes: the filter's bits and the mark's tally.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.filter.memory_bytes() + self.mark.bytes()
    }

    #[inline(always)]
    pub(crate) fn insert_hash(&self, hash: u64) -> TrackedInsert {
        self.mark.insert_hash(&self.filter, hash)
    }

    #[inline(always)]
    pub(crate) fn contains_hash(&self, hash: u64) -> bool {
        self.filter.contains_hash(hash)
    }

    /// Starts loading the block of `hash` into cache.
    #[inline(always)]
    pub(crate) fn prefetch_hash(&self, hash: u64) {
        self.filter.prefetch_hash(hash);
    }

    /// Clears the filter, then its count of set bits. An insert racing it
    /// may leave bits the count missed, or a count of bits it cleared:
    /// the fill trigger fires a little late or early.
    pub(crate) fn clear(&self) {
        self.filter.clear();
        self.mark.reset();
    }

    /// Whether the filter reached its fill (see [`FillMark::is_full`]).
    pub(crate) fn is_full(&self) -> bool {
        self.mark.is_full(&self.filter)
    }

    /// Set bits now (a popcount), and at the fill.
    pub(crate) fn fill(&self) -> (usize, usize) {
        (self.filter.set_bits(), self.mark.full_at_bits())
    }

    pub(crate) fn filter(&self) -> &BloomFilter<T, S> {
        &self.filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Layout, Sizing};

    /// The bound a check leaves behind never hides a full small filter:
    /// asked after every insert, the mark says full exactly when the rate
    /// of the bits, computed afresh, does.
    #[test]
    fn a_small_filter_is_full_exactly_when_its_rate_says_so() {
        let layouts = [
            (Layout::CacheLine, Sizing::PowerOfTwo),
            (Layout::Word, Sizing::PowerOfTwo),
            (Layout::Compact, Sizing::Exact),
        ];
        for (layout, sizing) in layouts {
            for seed in 0..10 {
                let filter: BloomFilter<u64> = BloomFilter::builder(500, 0.01)
                    .layout(layout)
                    .sizing(sizing)
                    .seed(seed)
                    .build()
                    .unwrap();
                assert!(FillMark::is_small(filter.geometry().blocks));
                let tracked = Tracked::new_empty(filter, None, false);
                let full_after = (0..10_000u64).find(|item| {
                    tracked.insert_hash(tracked.filter().hash_item(item));
                    let full = tracked.is_full();
                    let by_rate = bits_short_of_target(tracked.filter()).is_none();
                    assert_eq!(full, by_rate, "{layout:?} seed {seed}, item {item}");
                    full
                });
                assert!(full_after.is_some(), "{layout:?} seed {seed}: never full");
            }
        }
    }
}
