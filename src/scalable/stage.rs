//! One stage of the scalable filter: a power-of-two [`BloomFilter`] core
//! without a hasher of its own, the fill at which it counts as full, and the
//! trigger that notices the fill from the insert's own shard tally.

use crate::bits::BitArray;
use crate::shards::ShardAdd;
use crate::sizing::{self, Geometry};
use crate::{BloomFilter, Error, Layout};

/// Past its share of the fill, a shard asks for the total again every
/// `share / STEPS_PER_SHARE` bits: the stage overshoots its fill by at most
/// about `1 / STEPS_PER_SHARE` of it, and sums are rare.
const STEPS_PER_SHARE: usize = 64;

pub(crate) struct Stage<T: ?Sized> {
    filter: BloomFilter<T, ()>,
    /// Set bits at which the stage holds `capacity()` items.
    full_at_bits: usize,
    /// One shard's share of `full_at_bits`: an insert that takes its shard
    /// past it (or past a further `step`) sums all shards.
    shard_share: usize,
    step: usize,
}

/// What an insert into a stage did.
pub(crate) struct StageInsert {
    /// Some bit turned on: the item was new to this stage.
    pub(crate) new: bool,
    /// The stage is at or past its fill: time to add the next one.
    pub(crate) full: bool,
}

impl<T: ?Sized> Stage<T> {
    /// The geometry of a stage for `capacity` items at `rate`.
    pub(crate) fn plan(layout: Layout, capacity: usize, rate: f64) -> Result<Geometry, Error> {
        sizing::plan(layout.into(), capacity, rate)
    }

    /// Bytes a stage of `geometry` takes, before allocating it.
    pub(crate) fn memory_bytes_for(geometry: &Geometry) -> usize {
        BitArray::memory_bytes_for(geometry.blocks)
    }

    /// Allocates a stage; `full_at_bits` overrides the fill (loom models use
    /// it to make a stage full after one insert).
    pub(crate) fn new(
        geometry: Geometry,
        rate: f64,
        full_at_bits: Option<usize>,
    ) -> Result<Self, Error> {
        let filter = BloomFilter::from_parts(geometry, rate, ())?;
        let full_at_bits = full_at_bits
            .unwrap_or_else(|| sizing::set_bits_at(&geometry, geometry.capacity as f64) as usize)
            .max(1);
        let shard_share = full_at_bits / filter.set_bits_shards();
        Ok(Stage {
            filter,
            full_at_bits,
            shard_share,
            step: (shard_share / STEPS_PER_SHARE).max(1),
        })
    }

    #[inline(always)]
    pub(crate) fn insert_hash(&self, hash: u64) -> StageInsert {
        match self.filter.insert_hash_tallied(hash) {
            None => StageInsert {
                new: false,
                full: false,
            },
            Some(tally) => StageInsert {
                new: true,
                full: self.crossed_a_step(tally) && self.is_full(),
            },
        }
    }

    /// Whether this insert took its shard past its share, or past another
    /// step beyond it. Cheap integer tests on the value the `fetch_add`
    /// returned: the sum over shards is only read when this is true.
    #[inline]
    fn crossed_a_step(&self, tally: ShardAdd) -> bool {
        let share = self.shard_share;
        if tally.after < share {
            return false;
        }
        tally.before < share
            || (tally.before - share) / self.step != (tally.after - share) / self.step
    }

    /// Whether the set bits reached the stage's fill (a sum over shards).
    fn is_full(&self) -> bool {
        self.filter.set_bits() >= self.full_at_bits
    }

    /// Whether the stage is an eighth past its fill: its grower is late.
    pub(crate) fn is_overfull(&self) -> bool {
        self.filter.set_bits() >= self.full_at_bits.saturating_add(self.full_at_bits / 8)
    }

    /// Set bits now, and at the stage's fill.
    pub(crate) fn fill(&self) -> (usize, usize) {
        (self.filter.set_bits(), self.full_at_bits)
    }

    #[inline(always)]
    pub(crate) fn contains_hash(&self, hash: u64) -> bool {
        self.filter.contains_hash(hash)
    }

    pub(crate) fn filter(&self) -> &BloomFilter<T, ()> {
        &self.filter
    }
}
