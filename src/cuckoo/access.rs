//! Slot-by-slot and byte access to a [`Table`], for single-threaded
//! callers: the module's RedisBloom compaction, roll-back, RDB and
//! `SCANDUMP` / `LOADCHUNK`; and the loader's check of a saved table.

use super::core::{Probe, SlotRef, Table};
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

    /// Sets slot `index` of `bucket` to `value` (single-threaded use:
    /// compaction, roll-back).
    ///
    /// # Panics
    ///
    /// If `bucket` or `index` is out of the shape, or `value` does not fit
    /// a slot.
    pub fn set_slot(&mut self, bucket: usize, index: u32, value: u64) {
        assert!(
            value <= self.lanes.all_ones,
            "a slot value wider than the slot"
        );
        let slot = self.slot_ref(bucket, index);
        let current = self.slot(bucket, index);
        // Relaxed: `&mut self`, no other thread.
        self.swap_lane(slot, current, value, Ordering::Relaxed);
    }

    /// The lowest free slot of `bucket`, as its index in the bucket.
    pub fn find_free(&self, bucket: usize) -> Option<u32> {
        (0..self.shape.bucket_slots()).find(|&index| self.slot(bucket, index) == 0)
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

    /// Copies `out.len()` bytes of the little-endian words from byte
    /// `offset` (RedisBloom's `data` for 8-bit shapes), each word read once.
    ///
    /// # Panics
    ///
    /// If the range passes the table's words.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        let mut at = 0;
        while at < out.len() {
            let position = offset + at;
            let within = position % 8;
            let take = (8 - within).min(out.len() - at);
            // Relaxed: a snapshot of bytes others may be writing.
            let word = self
                .word(position / 8)
                .load(Ordering::Relaxed)
                .to_le_bytes();
            out[at..at + take].copy_from_slice(&word[within..within + take]);
            at += take;
        }
    }

    /// Writes `bytes` into the little-endian words from byte `offset`
    /// (RedisBloom's `LOADCHUNK`), single-threaded: whole words at a time.
    ///
    /// # Panics
    ///
    /// If the range passes the table's words.
    pub fn write_bytes(&mut self, offset: usize, bytes: &[u8]) {
        #[cfg(all(target_endian = "little", not(atomic_bloom_loom)))]
        {
            self.words.bytes_mut()[offset..offset + bytes.len()].copy_from_slice(bytes);
        }
        #[cfg(not(all(target_endian = "little", not(atomic_bloom_loom))))]
        for (at, &byte) in bytes.iter().enumerate() {
            let position = offset + at;
            let word = self.word(position / 8);
            let shift = position % 8 * 8;
            // Relaxed: `&mut self`, no other thread.
            let bits = word.load(Ordering::Relaxed);
            // Relaxed: as above.
            word.store(
                (bits & !(0xff << shift)) | u64::from(byte) << shift,
                Ordering::Relaxed,
            );
        }
    }

    /// The slots' bytes in place ([`Shape::data_bytes`](super::core::Shape::data_bytes)
    /// of them: RedisBloom's `data` for 8-bit shapes), to save without a
    /// copy; `&mut self`, so nobody writes meanwhile.
    #[cfg(all(target_endian = "little", not(atomic_bloom_loom)))]
    pub fn bytes(&mut self) -> &[u8] {
        let len = self.shape.data_bytes();
        &self.words.bytes_mut()[..len]
    }

    /// The slots' bytes in place, to load into without a byte-by-byte
    /// copy. Bytes past [`Shape::data_bytes`](super::core::Shape::data_bytes)
    /// are not in the slice (they stay 0).
    #[cfg(all(target_endian = "little", not(atomic_bloom_loom)))]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.shape.data_bytes();
        &mut self.words.bytes_mut()[..len]
    }

    /// [`insert_free`](Self::insert_free) for a single-threaded owner: the
    /// same slot (the lowest free one of the first bucket, else of the
    /// second), written with a plain store instead of a compare-and-swap.
    pub fn insert_free_mut(&mut self, probe: &Probe) -> bool {
        for bucket in [probe.first, probe.second] {
            if let Some(slot) = self.free_slot(bucket) {
                self.store_lane(slot, probe.fingerprint);
                return true;
            }
        }
        false
    }

    /// [`remove`](Self::remove) for a single-threaded owner: the same copy
    /// (the lowest of the first bucket, else of the second), cleared with a
    /// plain store.
    pub fn remove_mut(&mut self, probe: &Probe) -> bool {
        for bucket in [probe.first, probe.second] {
            if let Some(slot) = self.find_value(bucket, probe.fingerprint) {
                self.store_lane(slot, 0);
                return true;
            }
        }
        false
    }

    /// Sets the lane at `slot` to `value`; `&mut self`, no other thread.
    fn store_lane(&mut self, slot: SlotRef, value: u64) {
        let mask = self.lanes.all_ones << slot.shift;
        let word = self.word(slot.word);
        // Relaxed: `&mut self`, no other thread; a plain load.
        let bits = word.load(Ordering::Relaxed);
        // Relaxed: as above; a plain store.
        word.store((bits & !mask) | value << slot.shift, Ordering::Relaxed);
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
