//! Noticing that a [`BloomFilter`] reached its capacity, with no counter of
//! its own: the set-bit count's `fetch_add` already returns its shard's
//! previous value, and only an insert that takes its shard past its share of
//! the fill (or past another step beyond it) sums all the shards.
//!
//! Used by the scalable filter (a full stage grows the filter) and the
//! frontier (a full filter is reported once).

use crate::shards::ShardAdd;
use crate::sizing;
use crate::BloomFilter;

/// Past its share of the fill, a shard asks for the total again every
/// `share / STEPS_PER_SHARE` bits: the filter is seen full at most about
/// `1 / STEPS_PER_SHARE` past its fill, and sums are rare.
const STEPS_PER_SHARE: usize = 64;

/// The fill, in set bits, at which a filter counts as full, and the shard
/// thresholds that send an inserter to check it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FillMark {
    /// Set bits at which the filter holds `capacity()` items.
    full_at_bits: usize,
    /// One shard's share of `full_at_bits`.
    shard_share: usize,
    step: usize,
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
    /// bits, when given: loom models use it to fill a filter in one insert).
    pub(crate) fn at_capacity<T: ?Sized, S>(
        filter: &BloomFilter<T, S>,
        full_at_bits: Option<usize>,
    ) -> Self {
        let geometry = filter.geometry();
        let full_at_bits = full_at_bits
            .unwrap_or_else(|| sizing::set_bits_at(geometry, geometry.capacity as f64) as usize)
            .max(1);
        let shard_share = full_at_bits / filter.set_bits_shards();
        FillMark {
            full_at_bits,
            shard_share,
            step: (shard_share / STEPS_PER_SHARE).max(1),
        }
    }

    /// Inserts `hash` into `filter` (the filter this mark was made for).
    #[inline(always)]
    pub(crate) fn insert_hash<T: ?Sized, S>(
        &self,
        filter: &BloomFilter<T, S>,
        hash: u64,
    ) -> TrackedInsert {
        match filter.insert_hash_tallied(hash) {
            None => TrackedInsert {
                new: false,
                full: false,
            },
            Some(tally) => TrackedInsert {
                new: true,
                full: self.crossed_a_step(tally) && self.is_full(filter),
            },
        }
    }

    /// Whether this insert took its shard past its share, or past another
    /// step beyond it: integer tests on the value the `fetch_add` returned.
    #[inline]
    fn crossed_a_step(&self, tally: ShardAdd) -> bool {
        let share = self.shard_share;
        if tally.after < share {
            return false;
        }
        tally.before < share
            || (tally.before - share) / self.step != (tally.after - share) / self.step
    }

    /// Whether the set bits reached the fill (a sum over shards).
    pub(crate) fn is_full<T: ?Sized, S>(&self, filter: &BloomFilter<T, S>) -> bool {
        filter.set_bits() >= self.full_at_bits
    }

    /// Whether the filter is an eighth past its fill.
    pub(crate) fn is_overfull<T: ?Sized, S>(&self, filter: &BloomFilter<T, S>) -> bool {
        filter.set_bits() >= self.full_at_bits.saturating_add(self.full_at_bits / 8)
    }

    pub(crate) fn full_at_bits(&self) -> usize {
        self.full_at_bits
    }
}
