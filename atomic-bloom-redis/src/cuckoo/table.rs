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
//! each table is the core's single-owner [`ByteTable`] (RedisBloom's own
//! layout: the slots and 16 bytes beside them, read with plain loads and
//! written with plain stores under `&mut self`; no version stripes, fences
//! or compare-and-swap), and `RDB`, `CF.SCANDUMP` and `CF.LOADCHUNK` read
//! and write its bytes in place.

use atomic_bloom::cuckoo_core::{ByteTable, Probe, RedisBloom};

/// A sub-filter's slots.
pub(crate) struct Table {
    core: ByteTable,
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
        let buckets = usize::try_from(buckets).ok()?;
        Some(Table {
            core: ByteTable::new(u32::from(size), buckets).ok()?,
        })
    }

    /// A table holding `slots` (an RDB string: `buckets · size` bytes).
    pub(crate) fn from_bytes(buckets: u64, size: u16, slots: &[u8]) -> Option<Table> {
        let mut table = Table::zeroed(buckets, size)?;
        if slots.len() as u64 != table.len() {
            return None;
        }
        table.core.as_bytes_mut().copy_from_slice(slots);
        Some(table)
    }

    /// Its buckets.
    pub(crate) fn buckets(&self) -> u64 {
        self.core.buckets() as u64
    }

    /// Slots a bucket.
    fn size(&self) -> u64 {
        u64::from(self.core.bucket_slots())
    }

    /// The number of slots (bytes).
    pub(crate) fn len(&self) -> u64 {
        self.core.slots() as u64
    }

    /// Bytes the table takes beside itself: its slots.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.core.memory_bytes()
    }

    /// Copies the slots from `offset` into `out`.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) {
        let offset = offset as usize;
        out.copy_from_slice(&self.core.as_bytes()[offset..offset + out.len()]);
    }

    /// Writes `data` into the slots from `offset`.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) {
        let offset = offset as usize;
        self.core.as_bytes_mut()[offset..offset + data.len()].copy_from_slice(data);
    }

    /// The slots as bytes, in place (an RDB string saved without a copy).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.core.as_bytes()
    }

    /// The fingerprint in slot `at`.
    pub(crate) fn get(&self, at: u64) -> u8 {
        self.core.as_bytes()[at as usize]
    }

    /// Writes `fingerprint` into slot `at`.
    pub(crate) fn set(&mut self, at: u64, fingerprint: u8) {
        self.core.as_bytes_mut()[at as usize] = fingerprint;
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
            At::Bucket(bucket) => self
                .core
                .find(bucket, value)
                .map(|index| bucket as u64 * self.size() + u64::from(index)),
            _ => self.slots(at).find(|&slot| self.get(slot) == value),
        }
    }

    /// Copies of `fingerprint` in `at`.
    pub(crate) fn count(&self, at: At, fingerprint: u8) -> u64 {
        match at {
            At::Bucket(bucket) => self.core.count_in(bucket, fingerprint) as u64,
            At::Slots(_) => {
                let slots = self.slots(at);
                slots.filter(|&slot| self.get(slot) == fingerprint).count() as u64
            }
        }
    }

    /// Whether `fingerprint` is in `first` or `second`.
    #[inline]
    pub(crate) fn contains(&self, first: At, second: At, fingerprint: u8) -> bool {
        match (first, second) {
            (At::Bucket(first), At::Bucket(second)) => self.core.holds(first, second, fingerprint),
            _ => [first, second]
                .iter()
                .any(|&at| self.find(at, fingerprint).is_some()),
        }
    }

    /// Puts `fingerprint` in the first empty slot of `first`, else of
    /// `second`; false if both are full.
    #[inline]
    pub(crate) fn insert_free(&mut self, first: At, second: At, fingerprint: u8) -> bool {
        if let (At::Bucket(first), At::Bucket(second)) = (first, second) {
            return self.core.put(first, second, fingerprint);
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
            return self.core.remove(&Probe {
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

    /// [`Table::kick_out`] slot by slot, each slot it writes noted in
    /// `undo` (room for `2 · moves + 1` taken by the caller) with what it
    /// held before: in a table of other than a power of two of buckets the
    /// alternate index is no involution, RedisBloom's undoing of a failed
    /// relocation does not put the slots back, and the caller may.
    pub(crate) fn kick_out_noted(
        &mut self,
        first: u64,
        fingerprint: u8,
        moves: u16,
        undo: &mut Vec<(u64, u8)>,
    ) -> bool {
        let size = self.size();
        let buckets = self.buckets();
        let mut write = |table: &mut Table, at: u64, value: u8| {
            undo.push((at, table.get(at)));
            table.set(at, value);
        };
        let mut in_hand = fingerprint;
        let mut victim = 0;
        let mut bucket = first;
        for _ in 0..moves {
            let at = bucket * size + victim;
            let evicted = self.get(at);
            write(self, at, in_hand);
            in_hand = evicted;
            bucket = super::alternate(in_hand, bucket) % buckets;
            if let Some(free) = self.find(At::Bucket(bucket as usize), 0) {
                write(self, free, in_hand);
                return true;
            }
            victim = (victim + 1) % size;
        }
        for _ in 0..moves {
            victim = (victim + size - 1) % size;
            bucket = super::alternate(in_hand, bucket) % buckets;
            let at = bucket * size + victim;
            let evicted = self.get(at);
            write(self, at, in_hand);
            in_hand = evicted;
        }
        false
    }

    /// Puts back the slots [`Table::kick_out_noted`] wrote, last first.
    pub(crate) fn put_back(&mut self, undo: &[(u64, u8)]) {
        for &(at, value) in undo.iter().rev() {
            self.set(at, value);
        }
    }

    /// A copy (its slots from the allocator's zeroed path, then copied);
    /// `None` without memory.
    pub(crate) fn try_clone(&self) -> Option<Table> {
        Some(Table {
            core: self.core.try_clone().ok()?,
        })
    }
}
