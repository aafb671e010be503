//! One stage of the scalable filter: a power-of-two [`BloomFilter`] core
//! without a hasher of its own, and the [`FillMark`] at which it is full.

use crate::bits::BitArray;
use crate::fill::{FillMark, TrackedInsert};
use crate::sizing::{self, Geometry};
use crate::{BloomFilter, Error, Layout};

pub(crate) struct Stage<T: ?Sized> {
    filter: BloomFilter<T, ()>,
    mark: FillMark,
}

impl<T: ?Sized> Stage<T> {
    /// The geometry of a stage for `capacity` items at `rate`.
    pub(crate) fn plan(layout: Layout, capacity: usize, rate: f64) -> Result<Geometry, Error> {
        sizing::plan(layout.into(), capacity, rate)
    }

    /// Bytes a stage of `geometry` takes (its bits and its fill tally),
    /// before allocating it.
    pub(crate) fn memory_bytes_for(geometry: &Geometry) -> usize {
        BitArray::memory_bytes_for(geometry.blocks).saturating_add(FillMark::BYTES)
    }

    /// Bytes this stage takes.
    pub(crate) fn memory_bytes(&self) -> usize {
        Self::memory_bytes_for(self.filter.geometry())
    }

    /// Allocates a stage; `full_at_bits` overrides the fill (loom models use
    /// it to make a stage full after one insert).
    pub(crate) fn new(
        geometry: Geometry,
        rate: f64,
        full_at_bits: Option<usize>,
    ) -> Result<Self, Error> {
        let filter = BloomFilter::from_parts(geometry, rate, ())?;
        let mark = FillMark::new(&filter, full_at_bits, 0);
        Ok(Stage { filter, mark })
    }

    /// A stage over a filter read from a saved one; its set bits count
    /// towards the fill.
    pub(crate) fn from_filter(filter: BloomFilter<T, ()>, full_at_bits: Option<usize>) -> Self {
        let mark = FillMark::new(&filter, full_at_bits, filter.set_bits());
        Stage { filter, mark }
    }

    #[inline(always)]
    pub(crate) fn insert_hash(&self, hash: u64) -> TrackedInsert {
        self.mark.insert_hash(&self.filter, hash)
    }

    #[inline(always)]
    pub(crate) fn contains_hash(&self, hash: u64) -> bool {
        self.filter.contains_hash(hash)
    }

    /// Whether the stage is an eighth past its fill: its grower is late.
    pub(crate) fn is_overfull(&self) -> bool {
        self.mark.is_overfull()
    }

    /// Set bits now, and at the stage's fill.
    pub(crate) fn fill(&self) -> (usize, usize) {
        (self.filter.set_bits(), self.mark.full_at_bits())
    }

    pub(crate) fn filter(&self) -> &BloomFilter<T, ()> {
        &self.filter
    }
}
