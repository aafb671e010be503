//! A cuckoo filter's stages: the first, always there, and with growth the
//! later ones, appended through `arc-swap` when the newest is full.

use super::core::{Native, Probe, Table};
use super::sizing;
use crate::sync::{Arc, ArcSwap, Mutex};
use crate::Error;

/// One table with the capacity and rate it was made for.
pub(crate) struct Stage {
    pub(crate) table: Table,
    pub(crate) capacity: usize,
    pub(crate) rate: f64,
}

impl Stage {
    /// An empty stage for `capacity` items at `rate`.
    pub(crate) fn new(capacity: usize, rate: f64) -> Result<Self, Error> {
        let (shape, capacity) = sizing::plan(capacity, rate)?;
        Ok(Stage {
            table: Table::new(shape)?,
            capacity,
            rate,
        })
    }

    #[inline(always)]
    fn probe(&self, hash: u64) -> Probe {
        self.table.probe(&Native, hash)
    }

    /// Inserts: a free slot, else a relocation; false when full.
    #[inline]
    pub(crate) fn insert(&self, hash: u64) -> bool {
        let probe = self.probe(hash);
        self.table.insert_free(&probe) || self.table.relocate(&Native, &probe)
    }

    #[inline]
    pub(crate) fn contains(&self, hash: u64) -> bool {
        self.table.contains(&self.probe(hash))
    }

    #[inline]
    pub(crate) fn remove(&self, hash: u64) -> bool {
        self.table.remove(&self.probe(hash))
    }

    pub(crate) fn count(&self, hash: u64) -> usize {
        self.table.count(&self.probe(hash))
    }

    /// Whether the buckets of `hash` hold nothing but copies of its
    /// fingerprint: no relocation can make room for another copy (copies
    /// move only between those two buckets), and no stage appended for it
    /// would hold more than another two bucketfuls.
    pub(crate) fn full_of_copies(&self, hash: u64) -> bool {
        let probe = self.probe(hash);
        let buckets = if probe.first == probe.second { 1 } else { 2 };
        self.table.count(&probe) >= buckets * self.table.shape().bucket_slots() as usize
    }

    pub(crate) fn snapshot(&self) -> Self {
        Stage {
            table: self.table.snapshot(),
            capacity: self.capacity,
            rate: self.rate,
        }
    }
}

/// The stages after the first, for a filter built with growth.
pub(crate) struct Growth {
    /// The capacity asked for the first stage: stage `i` is made for
    /// `2^i` times it.
    pub(crate) first_capacity: usize,
    /// The total rate asked for: stage `i` is made for `rate / 2^(i+1)`.
    pub(crate) rate: f64,
    pub(crate) later: ArcSwap<Vec<Arc<Stage>>>,
    growing: Mutex<()>,
}

impl Growth {
    pub(crate) fn new(first_capacity: usize, rate: f64, later: Vec<Arc<Stage>>) -> Self {
        Growth {
            first_capacity,
            rate,
            later: ArcSwap::from_pointee(later),
            growing: Mutex::new(()),
        }
    }

    /// The rate of the first stage of a filter of total rate `rate`: half
    /// of it (the stages' rates, halving, sum to at most `rate`).
    pub(crate) fn first_rate(rate: f64) -> f64 {
        rate / 2.0
    }

    /// Inserts into the newest stage, appending a stage when it is full;
    /// a copy that its buckets there, full of copies, refuse is refused
    /// (`CuckooFilterFull`), as without growth.
    pub(crate) fn insert(&self, first: &Stage, hash: u64) -> Result<(), Error> {
        loop {
            let later = self.later.load();
            let newest: &Stage = later.last().map_or(first, |stage| stage);
            if newest.insert(hash) {
                return Ok(());
            }
            if newest.full_of_copies(hash) {
                return Err(Error::CuckooFilterFull {
                    len: self.len(first),
                    capacity: self.capacity(first),
                });
            }
            let _growing = self
                .growing
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let now = self.later.load();
            if Arc::ptr_eq(&now, &later) {
                let stage = self
                    .next_stage(later.len() + 1)
                    .map_err(|error| match error {
                        Error::CuckooRateTooLow { .. } | Error::TooLarge { .. } => {
                            Error::CuckooFilterFull {
                                len: self.len(first),
                                capacity: self.capacity(first),
                            }
                        }
                        other => other,
                    })?;
                let mut longer = Vec::with_capacity(later.len() + 1);
                longer.extend(later.iter().cloned());
                longer.push(Arc::new(stage));
                // SeqCst inside arc-swap (a lock under loom): a load that
                // happens-after sees the new stage; only this thread,
                // holding `growing`, stores.
                self.later.store(Arc::new(longer));
            }
        }
    }

    /// Stage `index` (1 for the first one appended).
    fn next_stage(&self, index: usize) -> Result<Stage, Error> {
        let factor = u32::try_from(index)
            .ok()
            .and_then(|index| 1usize.checked_shl(index))
            .filter(|&factor| factor != 0);
        let capacity = factor.and_then(|factor| self.first_capacity.checked_mul(factor));
        let rate = self.rate / 2f64.powi(index as i32 + 1);
        match capacity {
            Some(capacity) => Stage::new(capacity, rate),
            None => Err(Error::TooLarge {
                capacity: usize::MAX,
                rate,
            }),
        }
    }

    pub(crate) fn len(&self, first: &Stage) -> usize {
        first.table.len()
            + self
                .later
                .load()
                .iter()
                .map(|s| s.table.len())
                .sum::<usize>()
    }

    pub(crate) fn capacity(&self, first: &Stage) -> usize {
        first.capacity + self.later.load().iter().map(|s| s.capacity).sum::<usize>()
    }

    /// Drops the later stages (under the growth lock, so no growth races
    /// the store).
    pub(crate) fn drop_later(&self) {
        let _growing = self
            .growing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // SeqCst inside arc-swap: loads that happen-after see no later
        // stage.
        self.later.store(Arc::new(Vec::new()));
    }

    pub(crate) fn snapshot(&self) -> Self {
        let later = self
            .later
            .load()
            .iter()
            .map(|stage| Arc::new(stage.snapshot()))
            .collect();
        Growth::new(self.first_capacity, self.rate, later)
    }
}
