//! [`Line`]: the one [`Block`] type, a cache line of atomic integers of one
//! width (eight `AtomicU64` words of bits in `bits.rs`, 64 `AtomicU8`
//! counters in `counters.rs`). Clearing, copying, comparing and the saved
//! bytes go unit by unit, the same for either width; what a unit means is
//! its owner's business.

use super::{Block, BLOCK_BYTES};
use crate::sync::{AtomicU64, AtomicU8, Ordering};

/// `N` atomic integers filling one 64-byte, 64-byte-aligned cache line.
#[repr(C, align(64))]
pub(crate) struct Line<A, const N: usize>(pub(crate) [A; N]);

/// An atomic integer a [`Line`] is made of: the unit-by-unit half of
/// [`Block`].
///
/// # Safety
///
/// Implemented only for `std` atomic integers (outside the loom cfg), for
/// which zero bytes are the value 0.
pub(crate) unsafe trait Unit: Sized {
    /// Bytes of one unit, saved little-endian.
    const BYTES: usize;

    /// Stores 0; others may be updating and reading the unit meanwhile.
    fn clear(&self);

    /// Stores `source`'s value (read once) into this unit, which holds 0,
    /// unless it is 0.
    fn copy_nonzero(&self, source: &Self);

    /// Whether `other` holds this unit's value (each read once).
    fn same(&self, other: &Self) -> bool;

    /// Writes the value into `bytes` (`BYTES` of them), little-endian;
    /// returns how much of it is in use (set bits of a word; 1 for a
    /// non-zero counter).
    fn encode(&self, bytes: &mut [u8]) -> usize;

    /// The unit [`encode`](Self::encode) wrote into `bytes`, and how much of
    /// it is in use.
    fn decode(bytes: &[u8]) -> (Self, usize);
}

/// [`Unit`] for an atomic integer type, given what of a value is in use.
macro_rules! unit {
    ($atomic:ident, $int:ty, |$value:ident| $in_use:expr) => {
        // Safety: a `std` atomic integer outside the loom cfg.
        unsafe impl Unit for $atomic {
            const BYTES: usize = std::mem::size_of::<$int>();

            #[inline]
            fn clear(&self) {
                // Relaxed: bits and counters publish nothing; an update
                // that happens-after the clear sees the zero (coherence) and
                // makes its change after it, and one racing it may survive
                // or not (`src/PROTOCOLS.md`, "Clear").
                self.store(0, Ordering::Relaxed);
            }

            #[inline]
            fn copy_nonzero(&self, source: &Self) {
                // Relaxed (both): a snapshot, each unit read once, into a
                // block its caller holds alone; nothing hangs off the
                // values. A zero is left unwritten, so an all-zero page of
                // the copy may stay the kernel's zero page.
                let $value = source.load(Ordering::Relaxed);
                if $value != 0 {
                    self.store($value, Ordering::Relaxed);
                }
            }

            #[inline]
            fn same(&self, other: &Self) -> bool {
                // Relaxed (both): a snapshot of values that publish nothing.
                self.load(Ordering::Relaxed) == other.load(Ordering::Relaxed)
            }

            #[inline]
            fn encode(&self, bytes: &mut [u8]) -> usize {
                // Relaxed: a snapshot, each unit read once; an update that
                // happened-before the save began is seen (coherence).
                let $value = self.load(Ordering::Relaxed);
                bytes.copy_from_slice(&$value.to_le_bytes());
                $in_use
            }

            #[inline]
            fn decode(bytes: &[u8]) -> (Self, usize) {
                let mut le = [0u8; std::mem::size_of::<$int>()];
                le.copy_from_slice(bytes);
                let $value = <$int>::from_le_bytes(le);
                ($atomic::new($value), $in_use)
            }
        }
    };
}

unit!(AtomicU64, u64, |bits| bits.count_ones() as usize);
unit!(AtomicU8, u8, |count| usize::from(count != 0));

impl<A: Unit, const N: usize> Line<A, N> {
    /// The units fill the line exactly: the block layout's arithmetic and
    /// [`Blocks::new`](super::Blocks::new)'s zeroed memory count on it.
    const FILLS_THE_LINE: () = assert!(N * A::BYTES == BLOCK_BYTES);
}

// Safety: `A` is a `std` atomic integer (the `Unit` contract), so zero
// bytes are units holding 0, and `N` of them fill the line
// (`FILLS_THE_LINE`): 64 zero bytes are an empty line.
unsafe impl<A: Unit, const N: usize> Block for Line<A, N> {
    #[cfg(atomic_bloom_loom)]
    fn zero() -> Self {
        Self::decode(&[0; BLOCK_BYTES]).0
    }

    fn clear(&self) {
        self.0.iter().for_each(A::clear);
    }

    fn copy_from(&mut self, source: &Self) {
        for (unit, from) in self.0.iter().zip(&source.0) {
            unit.copy_nonzero(from);
        }
    }

    fn same(&self, other: &Self) -> bool {
        self.0
            .iter()
            .zip(&other.0)
            .all(|(ours, theirs)| ours.same(theirs))
    }

    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> usize {
        let () = Self::FILLS_THE_LINE;
        let mut in_use = 0;
        let mut bytes = [0u8; BLOCK_BYTES];
        for (unit, le) in self.0.iter().zip(bytes.chunks_exact_mut(A::BYTES)) {
            in_use += unit.encode(le);
        }
        // One append per block: a dump's pages are made block by block.
        out.extend_from_slice(&bytes);
        in_use
    }

    fn decode(bytes: &[u8]) -> (Self, usize) {
        let () = Self::FILLS_THE_LINE;
        let mut in_use = 0;
        let line = Line(std::array::from_fn(|index| {
            let (unit, used) = A::decode(&bytes[index * A::BYTES..][..A::BYTES]);
            in_use += used;
            unit
        }));
        (line, in_use)
    }
}
