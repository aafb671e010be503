//! An exact count spread over cache-padded shards, so that no single counter
//! is contended: each update goes to the shard of its block, reads sum all.

use crossbeam::utils::CachePadded;

use crate::sizing::BLOCK_BYTES;
use crate::sync::{AtomicUsize, Ordering};

/// Most shards; a power of two.
const MAX_SHARDS: usize = 32;

/// What one [`ShardedCount::add`] did to its shard: the shard's value before
/// and after. A filter that must notice when it fills up (a stage of the
/// scalable filter) reads it for free off the `fetch_add`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShardAdd {
    pub(crate) before: usize,
    pub(crate) after: usize,
}

pub(crate) struct ShardedCount {
    shards: Box<[CachePadded<AtomicUsize>]>,
}

impl ShardedCount {
    /// A zero count for an array of `blocks` blocks (a power of two): one
    /// shard per block up to `MAX_SHARDS`.
    pub(crate) fn new(blocks: usize) -> Self {
        ShardedCount {
            shards: (0..blocks.min(MAX_SHARDS))
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }

    #[inline(always)]
    fn shard(&self, block_index: usize) -> &AtomicUsize {
        &self.shards[block_index & (self.shards.len() - 1)]
    }

    /// Adds `amount` (non-zero) on the shard of `block_index`.
    #[inline(always)]
    pub(crate) fn add(&self, block_index: usize, amount: usize) -> ShardAdd {
        // Relaxed: an independent tally; readers only sum it.
        let before = self.shard(block_index).fetch_add(amount, Ordering::Relaxed);
        ShardAdd {
            before,
            after: before.wrapping_add(amount),
        }
    }

    /// Number of shards (at most 32; fewer for arrays of fewer blocks).
    pub(crate) fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// Subtracts `amount` on the shard of `block_index` (a shard may wrap for
    /// an instant; the sum does not).
    #[inline(always)]
    pub(crate) fn sub(&self, block_index: usize, amount: usize) {
        if amount != 0 {
            // Relaxed: an independent tally; readers only sum it.
            self.shard(block_index).fetch_sub(amount, Ordering::Relaxed);
        }
    }

    /// The sum over shards: exact once updates quiesce, a snapshot while they
    /// run. A subtraction counted before the addition it undoes can make the
    /// sum dip below zero for an instant; that reads as 0.
    pub(crate) fn sum(&self) -> usize {
        let sum = self
            .shards
            .iter()
            // Relaxed: a snapshot of independent tallies; no data hangs off them.
            .map(|shard| shard.load(Ordering::Relaxed))
            .fold(0usize, usize::wrapping_add);
        if sum > isize::MAX as usize {
            0
        } else {
            sum
        }
    }

    /// Sets the count to `total` (on the first shard).
    pub(crate) fn reset(&mut self, total: usize) {
        for (index, shard) in self.shards.iter().enumerate() {
            // Relaxed: `&mut self` excludes every other access.
            shard.store(if index == 0 { total } else { 0 }, Ordering::Relaxed);
        }
    }
}

/// Bytes an array of `blocks` 64-byte blocks takes with its sharded count:
/// what the bit array and the counter array allocate, known before
/// allocating.
pub(crate) fn block_array_bytes(blocks: usize) -> usize {
    let shards = blocks.min(MAX_SHARDS) * std::mem::size_of::<CachePadded<AtomicUsize>>();
    blocks.saturating_mul(BLOCK_BYTES) + shards
}
