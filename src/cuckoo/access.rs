//! Slot reads of a [`Table`], and the saver's count and the loader's check
//! of a saved table's words.

use super::core::{SlotRef, Table};
use crate::block::WORDS_PER_BLOCK;
use crate::sync::Ordering;
use crate::Error;

impl Table {
    /// The slot `index` of `bucket`.
    ///
    /// # Panics
    ///
    /// If `bucket` or `index` is out of the shape.
    pub fn slot(&self, bucket: usize, index: u32) -> u64 {
        let slot = self.slot_ref(bucket, index);
        // Relaxed: a read of one slot; callers that need more order it.
        let bits = self.word(slot.word).load(Ordering::Relaxed);
        (bits >> slot.shift) & self.lanes.all_ones
    }

    fn slot_ref(&self, bucket: usize, index: u32) -> SlotRef {
        assert!(bucket < self.shape.buckets() && index < self.shape.bucket_slots());
        let slot = bucket * self.shape.bucket_slots() as usize + index as usize;
        let per_word = self.shape.slots_per_word() as usize;
        SlotRef {
            word: slot / per_word,
            shift: (slot % per_word) as u32 * self.shape.slot_bits(),
        }
    }
}

impl Table {
    /// Which lanes of each word are slots.
    fn slot_lanes(&self) -> SlotLanes {
        let per_word = self.shape.slots_per_word() as usize;
        let tail_lanes = (self.shape.slots() % per_word) as u32;
        SlotLanes {
            full_words: self.shape.slots() / per_word,
            all: self.lanes.high,
            tail: if tail_lanes == 0 {
                0
            } else {
                self.lanes.lane_range(0, tail_lanes)
            },
        }
    }

    /// Fingerprints (slots neither empty nor reserved) in `bits` with slot
    /// lanes `valid`.
    fn held_in(&self, bits: u64, valid: u64) -> usize {
        let reserved = self.lanes.broadcast(self.lanes.all_ones);
        let empty = self.lanes.matching(bits, 0, valid);
        let held = self.lanes.matching(bits, reserved, valid);
        (valid & !empty & !held).count_ones() as usize
    }

    /// Fingerprints in `bytes`, the little-endian words of the table from
    /// word `first_word` on (a saved page): what a save writes as its
    /// count, so that the count is that of the slots written.
    pub(crate) fn held_in_bytes(&self, first_word: usize, bytes: &[u8]) -> usize {
        let lanes = self.slot_lanes();
        bytes
            .chunks_exact(8)
            .enumerate()
            .map(|(at, word)| {
                let bits = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                self.held_in(bits, lanes.of(first_word + at))
            })
            .sum()
    }

    /// Checks a table read from a saved filter: no slot reserved, no bit
    /// set outside the slots (the spare bits of a word, words past the
    /// last slot); returns the fingerprints it holds.
    pub(crate) fn check_loaded(&self) -> Result<usize, Error> {
        let reserved = self.lanes.broadcast(self.lanes.all_ones);
        let lane_bits = |valid_high: u64| {
            // Every bit of the lanes whose high bits are `valid_high`.
            let mut bits = 0u64;
            let mut high = valid_high;
            while high != 0 {
                let shift = self.lanes.lowest_shift(high);
                high &= high - 1;
                bits |= self.lanes.all_ones << shift;
            }
            bits
        };
        let all_lanes = lane_bits(self.lanes.high);
        let lanes = self.slot_lanes();
        let mut held = 0;
        for index in 0..self.words.num_blocks() * WORDS_PER_BLOCK {
            let valid = lanes.of(index);
            let allowed = if valid == self.lanes.high {
                all_lanes
            } else {
                lane_bits(valid)
            };
            // Relaxed: the table is the loader's alone.
            let bits = self.word(index).load(Ordering::Relaxed);
            if bits & !allowed != 0 {
                return Err(Error::InvalidField {
                    field: "cuckoo word with bits outside its slots",
                    value: index as u64,
                });
            }
            if self.lanes.matching(bits, reserved, valid) != 0 {
                return Err(Error::InvalidField {
                    field: "cuckoo word with a reserved slot",
                    value: index as u64,
                });
            }
            held += self.held_in(bits, valid);
        }
        Ok(held)
    }
}

/// The high bits of the lanes of each word that are slots: all of them up
/// to the last full word, the last word's slots, none past them.
struct SlotLanes {
    full_words: usize,
    all: u64,
    tail: u64,
}

impl SlotLanes {
    fn of(&self, index: usize) -> u64 {
        match index.cmp(&self.full_words) {
            std::cmp::Ordering::Less => self.all,
            std::cmp::Ordering::Equal => self.tail,
            std::cmp::Ordering::Greater => 0,
        }
    }
}
