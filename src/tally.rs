//! A tally that threads add to without sharing a cache line: one
//! cache-padded slot per thread ticket, summed when read.
//!
//! It serves fill triggers only (a stage of the scalable filter is full, a
//! frontier passed its capacity), and only sampled inserts add to it
//! ([`FillMark`](crate::fill::FillMark)): the bit array itself keeps no
//! count, so an insert's only shared writes are to the filter's own words.

use crossbeam_utils::CachePadded;

use crate::sync::{thread_ticket, AtomicUsize, Ordering};

/// Slots of a tally that many threads add to; a power of two. Threads
/// beyond it share slots, which stays correct (the adds are RMWs) and only
/// costs contention on sampled adds.
pub(crate) const SLOTS: usize = 8;

/// What one [`ThreadTally::add`] did to the caller's slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotAdd {
    pub(crate) before: usize,
    pub(crate) after: usize,
}

pub(crate) struct ThreadTally {
    slots: Box<[CachePadded<AtomicUsize>]>,
}

impl ThreadTally {
    /// A tally of `slots` slots (a power of two: [`SLOTS`], or 1 where a
    /// tally's memory matters more than its contention) that starts at
    /// `initial`.
    pub(crate) fn new(initial: usize, slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two());
        ThreadTally {
            slots: (0..slots)
                .map(|slot| CachePadded::new(AtomicUsize::new(if slot == 0 { initial } else { 0 })))
                .collect(),
        }
    }

    /// Bytes a tally of `slots` slots takes.
    pub(crate) const fn bytes_for(slots: usize) -> usize {
        slots * std::mem::size_of::<CachePadded<AtomicUsize>>()
    }

    /// Bytes this tally takes.
    pub(crate) fn bytes(&self) -> usize {
        Self::bytes_for(self.slots.len())
    }

    /// Adds `amount` to the calling thread's slot.
    #[inline]
    pub(crate) fn add(&self, amount: usize) -> SlotAdd {
        let slot = &self.slots[thread_ticket() & (self.slots.len() - 1)];
        // Relaxed: an independent tally; readers only sum it, and the RMW
        // loses no add to a thread sharing the slot.
        let before = slot.fetch_add(amount, Ordering::Relaxed);
        SlotAdd {
            before,
            after: before.wrapping_add(amount),
        }
    }

    /// Sets every slot to 0 (the tally's filter was cleared). An add
    /// racing it may or may not be kept.
    pub(crate) fn reset(&self) {
        for slot in self.slots.iter() {
            // Relaxed: an independent tally, as in `add`; a fill trigger
            // that reads it a few adds off only fires a little early or late.
            slot.store(0, Ordering::Relaxed);
        }
    }

    /// The sum of the slots: exact once adds quiesce, a snapshot while they
    /// run.
    pub(crate) fn sum(&self) -> usize {
        self.slots
            .iter()
            // Relaxed: a snapshot of independent tallies; no data hangs off them.
            .map(|slot| slot.load(Ordering::Relaxed))
            .fold(0, usize::wrapping_add)
    }
}

impl std::fmt::Debug for ThreadTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadTally")
            .field("sum", &self.sum())
            .finish()
    }
}
