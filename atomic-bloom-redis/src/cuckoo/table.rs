//! One sub-filter's slots as RedisBloom lays them out: one byte per slot
//! (an 8-bit fingerprint, 0 for empty), bucket `b`'s slots at bytes
//! `b·bs .. b·bs + bs`, for any bucket size `bs` from 1 to 255. These bytes
//! are what RedisBloom's RDB string, `CF.SCANDUMP` chunks and
//! `CF.LOADCHUNK` data hold, so they are copied in and out as they are.
//!
//! The table is the module's stand-in for the RedisBloom scheme of the
//! library's cuckoo core, with the interface the module asks of it (byte
//! slots, bucket searches from a bucket's first byte, ranges copied in and
//! out): commands run on the server's main thread, one at a time, so plain
//! bytes are enough here.

use crate::redisbloom::{zeroed, ChainError};

/// A sub-filter's slots.
pub(crate) struct Table {
    slots: Box<[u8]>,
}

impl Table {
    /// `bytes` empty slots from the allocator's zeroed path (`calloc`: the
    /// pages stay the kernel's until a slot is written), or `None` when
    /// the allocator has no memory for them.
    pub(crate) fn zeroed(bytes: u64) -> Option<Table> {
        match zeroed(bytes) {
            Ok(slots) => Some(Table { slots }),
            Err(ChainError::OutOfMemory | ChainError::Invalid(_) | ChainError::OverLimit) => None,
        }
    }

    /// Slots taken over from bytes already held (an RDB string).
    pub(crate) fn from_bytes(slots: Box<[u8]>) -> Table {
        Table { slots }
    }

    /// The number of slots (bytes).
    pub(crate) fn len(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The slots as bytes, in RedisBloom's order.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.slots
    }

    /// The slots as bytes, to be written in place (`CF.LOADCHUNK`).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.slots
    }

    /// The fingerprint in slot `at`.
    pub(crate) fn get(&self, at: u64) -> u8 {
        self.slots[at as usize]
    }

    /// Writes `fingerprint` into slot `at`.
    pub(crate) fn set(&mut self, at: u64, fingerprint: u8) {
        self.slots[at as usize] = fingerprint;
    }

    /// Writes `fingerprint` into slot `at`; the one it held.
    pub(crate) fn swap(&mut self, at: u64, fingerprint: u8) -> u8 {
        std::mem::replace(&mut self.slots[at as usize], fingerprint)
    }

    /// The bucket of `size` slots from slot `start`, clipped to the table
    /// (a bucket RedisBloom would read past its sub-filter's end, which
    /// only a hand-made header can ask for, is read as far as it goes).
    fn bucket(&self, start: u64, size: u64) -> &[u8] {
        let from = (start as usize).min(self.slots.len());
        let to = (start.saturating_add(size) as usize).min(self.slots.len());
        &self.slots[from..to]
    }

    /// The first slot of the bucket at `start` that holds `fingerprint`.
    pub(crate) fn find(&self, start: u64, size: u64, fingerprint: u8) -> Option<u64> {
        let bucket = self.bucket(start, size);
        bucket
            .iter()
            .position(|&slot| slot == fingerprint)
            .map(|at| start + at as u64)
    }

    /// How many slots of the bucket at `start` hold `fingerprint`.
    pub(crate) fn count(&self, start: u64, size: u64, fingerprint: u8) -> u64 {
        let bucket = self.bucket(start, size);
        bucket.iter().filter(|&&slot| slot == fingerprint).count() as u64
    }

    /// A copy, its slots from the allocator's zeroed path then copied;
    /// `None` without memory.
    pub(crate) fn try_clone(&self) -> Option<Table> {
        let mut copy = Table::zeroed(self.len())?;
        copy.slots.copy_from_slice(&self.slots);
        Some(copy)
    }
}
