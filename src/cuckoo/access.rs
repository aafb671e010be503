//! Slot-by-slot and byte access to a [`Table`], for single-threaded
//! callers: the module's RedisBloom compaction, roll-back, RDB and
//! `SCANDUMP` / `LOADCHUNK`.

use super::core::{SlotRef, Table};
use crate::sync::Ordering;

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
}
