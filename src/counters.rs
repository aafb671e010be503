//! The atomic counter array of the counting filter: 64-byte blocks of 64
//! `AtomicU8` counters, updated by compare-and-swap, saturating and sticky at
//! 255. It keeps no count: an update writes only its own counters, and the
//! number of non-zero counters is counted over the array when asked for.
//!
//! The protocols are in `src/PROTOCOLS.md`.

use std::io::{Read, Write};

use crate::block::{Block, Blocks, BLOCK_BYTES};
use crate::layout::WordProbe;
use crate::sync::{AtomicU8, Ordering};
use crate::wire::{Decoder, Encoder};
use crate::Error;

/// A counter that reached this stays there: it may stand for more items
/// than it can count, so decrementing it could create a false negative.
const STICKY: u8 = u8::MAX;

/// One cache line of counters.
#[repr(C, align(64))]
pub(crate) struct CounterBlock([AtomicU8; BLOCK_BYTES]);

// Safety: 64 `AtomicU8`s, for which zero bytes are the value 0, an empty
// block.
unsafe impl Block for CounterBlock {
    #[cfg(atomic_bloom_loom)]
    fn zero() -> Self {
        CounterBlock(std::array::from_fn(|_| AtomicU8::new(0)))
    }

    fn clear(&self) {
        for counter in &self.0 {
            // Relaxed: counters publish nothing; an update that
            // happens-after the clear sees the zero (coherence), and one
            // racing it may survive or not (`src/PROTOCOLS.md`, "Clear").
            counter.store(0, Ordering::Relaxed);
        }
    }

    fn copy_from(&mut self, source: &Self) {
        for (counter, from) in self.0.iter().zip(&source.0) {
            // Relaxed (both): a snapshot, each counter read once, into a
            // block `&mut self` holds alone.
            counter.store(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn encode(&self, out: &mut Vec<u8>) -> usize {
        let mut used = 0;
        for counter in &self.0 {
            // Relaxed: a snapshot; each counter is read once, and an update
            // that happened-before the save began is seen.
            let count = counter.load(Ordering::Relaxed);
            used += usize::from(count != 0);
            out.push(count);
        }
        used
    }

    fn decode(bytes: &[u8]) -> (Self, usize) {
        let block = CounterBlock(std::array::from_fn(|slot| AtomicU8::new(bytes[slot])));
        (block, bytes.iter().filter(|&&count| count != 0).count())
    }
}

pub(crate) struct CounterArray {
    blocks: Blocks<CounterBlock>,
}

/// The counters of a probe's slots, lowest slot first.
fn slots(probe: &WordProbe) -> impl Iterator<Item = usize> {
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
    /// All-zero counters in `blocks` blocks (a power of two).
    pub(crate) fn new(blocks: usize) -> Result<Self, Error> {
        Ok(CounterArray {
            blocks: Blocks::new(blocks)?,
        })
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.blocks.memory_bytes()
    }

    fn counters(&self, probe: &WordProbe) -> &[AtomicU8; BLOCK_BYTES] {
        &self.blocks.get(probe.block_index).0
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
    fn loads<'a>(&'a self, probe: &WordProbe) -> impl Iterator<Item = u8> + 'a {
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
        self.blocks
            .iter()
            .flat_map(|block| &block.0)
            // Relaxed: a snapshot; counters publish nothing else.
            .filter(|counter| counter.load(Ordering::Relaxed) != 0)
            .count()
    }

    /// Writes every counter, block by block (`FORMAT.md`); returns the
    /// number of non-zero counters written.
    pub(crate) fn write_counters<W: Write>(&self, out: &mut Encoder<W>) -> Result<u64, Error> {
        self.blocks.write(out)
    }

    /// Reads an array of `blocks` blocks as
    /// [`write_counters`](Self::write_counters) wrote it; allocates only as
    /// the input delivers. Returns the array and its non-zero counters.
    pub(crate) fn read_counters<R: Read>(
        blocks: usize,
        input: &mut Decoder<R>,
    ) -> Result<(Self, u64), Error> {
        let (blocks, total) = Blocks::read(blocks, input)?;
        Ok((CounterArray { blocks }, total))
    }

    /// Sets every counter to 0, while others may update and look up.
    pub(crate) fn clear(&self) {
        self.blocks.clear();
    }

    /// A copy of the counters (each read once; updates racing it may or
    /// may not be in it). Aborts if the allocator refuses, as `Vec::clone`.
    pub(crate) fn snapshot(&self) -> Self {
        CounterArray {
            blocks: self.blocks.snapshot(),
        }
    }

    /// Whether `other` holds the same counters (each read once).
    pub(crate) fn same_counters(&self, other: &CounterArray) -> bool {
        self.num_blocks() == other.num_blocks()
            && self
                .blocks
                .iter()
                .zip(other.blocks.iter())
                .flat_map(|(ours, theirs)| ours.0.iter().zip(&theirs.0))
                // Relaxed (both): a snapshot; counters publish nothing else.
                .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed))
    }
}
