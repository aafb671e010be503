//! One sub-filter's slots, on the library's cuckoo core
//! (`atomic_bloom::cuckoo_core`): a table of `buckets` buckets of
//! `bucket_size` 8-bit slots (RedisBloom's bytes: slot `k` is byte `k` of
//! the little-endian words, what RedisBloom's RDB string, `CF.SCANDUMP`
//! pieces and `CF.LOADCHUNK` data hold).
//!
//! RedisBloom finds a bucket by the byte offset `(x % buckets) ·
//! bucket_size`, cut to 32 bits. Below 2^32 that is bucket `x % buckets`,
//! and the core's bucket operations serve it ([`At::Bucket`]); past it (a
//! sub-filter of more than 4 GiB) the cut offset may start inside a
//! bucket, and those slots are read and written one by one as RedisBloom
//! does ([`At::Slots`], clipped to the table where RedisBloom would read
//! past its end). Commands run one at a time on the server's main thread:
//! the tables are the core's exclusive ones (no version stripes, the slots'
//! cache lines alone) and every write is the core's single-threaded form
//! (`insert_free_mut`, `remove_mut`, `kick_out`, `set_slot`: plain stores
//! under `&mut self`).

use atomic_bloom::cuckoo_core::{Probe, RedisBloom, Shape, Table as Core};

/// A sub-filter's slots.
pub(crate) struct Table {
    core: Core,
}

/// Where RedisBloom looks for an index's bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum At {
    /// A whole bucket.
    Bucket(usize),
    /// `bucket_size` slots from this one (a cut offset).
    Slots(u64),
}

impl Table {
    /// `buckets` empty buckets of `size` slots from the allocator's zeroed
    /// path (`calloc`: the pages stay the kernel's until a slot is
    /// written); `None` when the allocator has no memory for them or the
    /// shape is past the core's.
    pub(crate) fn zeroed(buckets: u64, size: u16) -> Option<Table> {
        let shape = Shape::new(8, u32::from(size), usize::try_from(buckets).ok()?).ok()?;
        Some(Table {
            core: Core::new_exclusive(shape).ok()?,
        })
    }

    /// A table holding `slots` (an RDB string: `buckets · size` bytes).
    pub(crate) fn from_bytes(buckets: u64, size: u16, slots: &[u8]) -> Option<Table> {
        let mut table = Table::zeroed(buckets, size)?;
        if slots.len() as u64 != table.len() {
            return None;
        }
        table.core.bytes_mut().copy_from_slice(slots);
        Some(table)
    }

    /// Its buckets.
    pub(crate) fn buckets(&self) -> u64 {
        self.core.shape().buckets() as u64
    }

    /// Slots a bucket.
    fn size(&self) -> u64 {
        u64::from(self.core.shape().bucket_slots())
    }

    /// The number of slots (bytes).
    pub(crate) fn len(&self) -> u64 {
        self.core.shape().slots() as u64
    }

    /// Bytes the table takes (the core's words and what it keeps beside
    /// them).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.core.memory_bytes()
    }

    /// Copies the slots from `offset` into `out`.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) {
        self.core.read_bytes(offset as usize, out);
    }

    /// Writes `data` into the slots from `offset`.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) {
        let offset = offset as usize;
        self.core.bytes_mut()[offset..offset + data.len()].copy_from_slice(data);
    }

    /// The slots as bytes, in place (an RDB string saved without a copy).
    pub(crate) fn bytes(&mut self) -> &[u8] {
        self.core.bytes()
    }

    /// The fingerprint in slot `at`.
    pub(crate) fn get(&self, at: u64) -> u8 {
        self.core
            .slot((at / self.size()) as usize, (at % self.size()) as u32) as u8
    }

    /// Writes `fingerprint` into slot `at`.
    pub(crate) fn set(&mut self, at: u64, fingerprint: u8) {
        self.core.set_slot(
            (at / self.size()) as usize,
            (at % self.size()) as u32,
            u64::from(fingerprint),
        );
    }

    /// The slots of `at`, as indexes of the table (clipped to it).
    fn slots(&self, at: At) -> std::ops::Range<u64> {
        let start = match at {
            At::Bucket(bucket) => bucket as u64 * self.size(),
            At::Slots(start) => start,
        };
        start.min(self.len())..start.saturating_add(self.size()).min(self.len())
    }

    /// The first slot of `at` holding `value` (0: an empty slot).
    pub(crate) fn find(&self, at: At, value: u8) -> Option<u64> {
        match at {
            At::Bucket(bucket) if value == 0 => self
                .core
                .find_free(bucket)
                .map(|index| bucket as u64 * self.size() + u64::from(index)),
            _ => self.slots(at).find(|&slot| self.get(slot) == value),
        }
    }

    /// Copies of `fingerprint` in `at`.
    pub(crate) fn count(&self, at: At, fingerprint: u8) -> u64 {
        match at {
            At::Bucket(bucket) => self.core.count_in(bucket, u64::from(fingerprint)) as u64,
            At::Slots(_) => {
                let slots = self.slots(at);
                slots.filter(|&slot| self.get(slot) == fingerprint).count() as u64
            }
        }
    }

    /// Whether `fingerprint` is in `first` or `second`.
    pub(crate) fn contains(&self, first: At, second: At, fingerprint: u8) -> bool {
        match (first, second) {
            (At::Bucket(first), At::Bucket(second)) => self.core.contains(&Probe {
                fingerprint: u64::from(fingerprint),
                first,
                second,
            }),
            _ => [first, second]
                .iter()
                .any(|&at| self.find(at, fingerprint).is_some()),
        }
    }

    /// Puts `fingerprint` in the first empty slot of `first`, else of
    /// `second`; false if both are full.
    pub(crate) fn insert_free(&mut self, first: At, second: At, fingerprint: u8) -> bool {
        if let (At::Bucket(first), At::Bucket(second)) = (first, second) {
            return self.core.insert_free_mut(&Probe {
                fingerprint: u64::from(fingerprint),
                first,
                second,
            });
        }
        match [first, second].iter().find_map(|&at| self.find(at, 0)) {
            Some(slot) => {
                self.set(slot, fingerprint);
                true
            }
            None => false,
        }
    }

    /// Clears the first copy of `fingerprint` in `first`, else in `second`;
    /// false if neither holds one.
    pub(crate) fn remove(&mut self, first: At, second: At, fingerprint: u8) -> bool {
        if let (At::Bucket(first), At::Bucket(second)) = (first, second) {
            return self.core.remove_mut(&Probe {
                fingerprint: u64::from(fingerprint),
                first,
                second,
            });
        }
        match [first, second]
            .iter()
            .find_map(|&at| self.find(at, fingerprint))
        {
            Some(slot) => {
                self.set(slot, 0);
                true
            }
            None => false,
        }
    }

    /// RedisBloom's relocation (`Filter_KOInsert`, the core's `kick_out`)
    /// of `fingerprint` from bucket `first`, `moves` moves at most, undone
    /// in full when none ends in an empty slot.
    pub(crate) fn kick_out(&mut self, first: u64, fingerprint: u8, moves: u16) -> bool {
        let probe = Probe {
            fingerprint: u64::from(fingerprint),
            first: first as usize,
            second: first as usize,
        };
        self.core.kick_out(&RedisBloom, &probe, u32::from(moves))
    }

    /// A copy (its slots from the allocator's zeroed path, then copied);
    /// `None` without memory.
    pub(crate) fn try_clone(&self) -> Option<Table> {
        let shape = self.core.shape();
        let mut copy = Table::zeroed(shape.buckets() as u64, self.size() as u16)?;
        let mut piece = vec![0u8; (1 << 20).min(self.len() as usize)];
        let mut offset = 0;
        while offset < self.len() {
            let length = (self.len() - offset).min(piece.len() as u64) as usize;
            self.read(offset, &mut piece[..length]);
            copy.write(offset, &piece[..length]);
            offset += length as u64;
        }
        Some(copy)
    }
}
