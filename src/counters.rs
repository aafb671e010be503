//! The atomic counter array of the counting filter: 64-byte blocks of 64
//! `AtomicU8` counters, updated by compare-and-swap, saturating and sticky at
//! 255. It keeps no count: an update writes only its own counters, and the
//! number of non-zero counters is counted over the array when asked for.
//!
//! The protocols are in `src/PROTOCOLS.md`.

use crate::block::{Blocks, Line, BLOCK_BYTES};
use crate::layout::WordProbe;
use crate::sync::{AtomicU8, Ordering};

/// A counter that reached this stays there: it may stand for more items
/// than it can count, so decrementing it could create a false negative.
const STICKY: u8 = u8::MAX;

/// One cache line of counters.
pub(crate) type CounterBlock = Line<AtomicU8, BLOCK_BYTES>;

/// The counter array: [`Blocks`] of counters, which makes, sizes, clears,
/// copies, compares, saves and loads it; the counters' protocols are here.
pub(crate) type CounterArray = Blocks<CounterBlock>;

/// The counters of a probe's slots, lowest slot first.
fn slots(probe: &WordProbe) -> impl Iterator<Item = usize> + use<> {
    let mut remaining = probe.mask;
    std::iter::from_fn(move || {
        (remaining != 0).then(|| {
            let slot = remaining.trailing_zeros() as usize;
            remaining &= remaining - 1;
            slot
        })
    })
}

impl CounterArray {
    fn counters(&self, probe: &WordProbe) -> &[AtomicU8; BLOCK_BYTES] {
        &self.get(probe.block_index).0
    }

    /// Adds one to each of the probe's counters (a saturated one stays at
    /// 255). Returns true if some counter was 0 before: the item was absent.
    pub(crate) fn increment(&self, probe: &WordProbe) -> bool {
        let counters = self.counters(probe);
        let mut was_absent = false;
        for slot in slots(probe) {
            let previous = counters[slot]
                // Relaxed: counters publish nothing else; the CAS reads the
                // latest value, so no increment is lost to a racing one.
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                    (count != STICKY).then(|| count + 1)
                });
            was_absent |= previous == Ok(0);
        }
        was_absent
    }

    /// Subtracts one from each of the probe's counters, if all are non-zero;
    /// a counter never goes below 0 and a saturated one is never
    /// decremented. Returns false, touching nothing, if some counter was 0.
    pub(crate) fn decrement(&self, probe: &WordProbe) -> bool {
        if !self.contains(probe) {
            return false;
        }
        let counters = self.counters(probe);
        for slot in slots(probe) {
            // Relaxed: as in `increment`; the CAS refuses to go below 0 even
            // when removes race. A refusal (0 or sticky) is not an error.
            let _ = counters[slot].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                (count != 0 && count != STICKY).then(|| count - 1)
            });
        }
        true
    }

    /// The current values of the probe's counters, lowest slot first.
    fn loads<'a>(&'a self, probe: &WordProbe) -> impl Iterator<Item = u8> + 'a + use<'a> {
        let counters = self.counters(probe);
        slots(probe)
            // Relaxed: a counter made non-zero by an insert that happens-before
            // this call is seen (coherence); counters publish nothing else.
            .map(move |slot| counters[slot].load(Ordering::Relaxed))
    }

    pub(crate) fn contains(&self, probe: &WordProbe) -> bool {
        self.loads(probe).all(|count| count != 0)
    }

    /// The smallest of the probe's counters.
    pub(crate) fn min_count(&self, probe: &WordProbe) -> u8 {
        self.loads(probe).min().unwrap_or(0)
    }

    /// The probe's counters, lowest slot first (for loom models).
    #[cfg(atomic_bloom_loom)]
    pub(crate) fn values(&self, probe: &WordProbe) -> Vec<u8> {
        self.loads(probe).collect()
    }

    /// Stores `value` into each of the probe's counters (loom set-up only).
    #[cfg(atomic_bloom_loom)]
    pub(crate) fn store_all(&self, probe: &WordProbe, value: u8) {
        let counters = self.counters(probe);
        for slot in slots(probe) {
            // Relaxed: set-up before the model's threads start.
            counters[slot].store(value, Ordering::Relaxed);
        }
    }

    /// Non-zero counters, counted over the whole array when called: O(size)
    /// (a snapshot under concurrent updates).
    pub(crate) fn nonzero(&self) -> usize {
        self.iter()
            .flat_map(|block| &block.0)
            // Relaxed: a snapshot; counters publish nothing else.
            .filter(|counter| counter.load(Ordering::Relaxed) != 0)
            .count()
    }
}
