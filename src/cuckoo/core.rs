//! The cuckoo core: a table of fingerprint slots packed in `AtomicU64`
//! words, shared by threads, which [`CuckooFilter`](crate::CuckooFilter)
//! stands on; and [`ByteTable`], a single owner's table of plain bytes in
//! RedisBloom's sub-filter layout, which the Valkey/Redis module uses for
//! RedisBloom's `CF.*` scheme.
//!
//! # The table
//!
//! A [`Shape`] says how the table is cut: slots of `slot_bits` bits (2 to
//! 32), `64 / slot_bits` of them per word, the low slot in the low bits;
//! no slot crosses a word. A bucket is `bucket_slots` consecutive slots
//! (slot `s` of bucket `b` is slot `b · bucket_slots + s` of the table).
//! Buckets of whole words start on a word; other buckets (only for slot
//! widths that divide 64: 8, 16, 32) run across words as the slots fall,
//! so with 8-bit slots slot `i` of the table is byte `i` of the
//! little-endian words. The words come in 64-byte-aligned lines, so a
//! bucket of one or two words (at an even word) sits in one cache line.
//! A slot holds 0 (empty) or a fingerprint.
//!
//! # The scheme interface
//!
//! A [`Scheme`] turns an item's 64-bit hash into a [`Probe`]: a
//! fingerprint (never 0) and two buckets, and gives a fingerprint's other
//! bucket from the one it sits in (an involution). [`Native`] is the
//! library's (any bucket count, no `%`); [`RedisBloom`] is RedisBloom's
//! (`h % 255 + 1`, `h % n`, `(i ^ f · 0x5bd1e995) % n`; the caller hashes
//! the item with MurmurHash64A, seed 0). Every operation below takes the
//! probe (or a fingerprint and buckets), so the table never hashes:
//!
//! | operation | what it does | RedisBloom's |
//! |---|---|---|
//! | [`Table::new`] | an empty table of a shape | `CuckooFilter_Grow`'s calloc |
//! | [`Table::insert_free`] | one CAS into the lowest free slot of `first`, else of `second` | `Filter_FindAvailable` + store |
//! | [`Table::contains`] | the fingerprint in either bucket | `Filter_Find` |
//! | [`Table::count`] | its copies in both buckets (one bucket once) | none |
//! | [`Table::remove`] | one CAS clearing the lowest copy in `first`, else in `second` | `Filter_Delete` |
//! | [`Table::relocate`] | concurrent relocation: a breadth-first path search, then moves from the free end backwards (see below); [`Native`]-like schemes only | none |
//! | [`Table::slot`] | one slot's value | none |
//!
//! RedisBloom's single-owner operations (its sub-filters, which module
//! commands change one at a time: `Filter_KOInsert`'s deterministic
//! relocation with its roll-back, slot-by-slot compaction, the sub-filter's
//! bytes in place for RDB, `SCANDUMP` and `LOADCHUNK`, `subFilterCount`'s
//! per-bucket count) are [`ByteTable`]'s: plain bytes, no atomics, no
//! version stripes. A RedisBloom sub-filter is one `ByteTable` of
//! `ByteTable::new(bucketSize, numBuckets)`; RedisBloom's search over
//! sub-filters (insert into the newest with room, delete from the newest
//! first, kick out in the newest only, grow by `expansion`) is the
//! caller's, table by table.
//!
//! # The concurrent protocol
//!
//! `insert_free` and `remove` are one CAS each; lookups read the words of
//! two buckets. [`Table::relocate`] (callers serialize relocations with the
//! table's own lock, which it takes) finds a path to a free slot, then
//! moves fingerprints backwards from the free end: each move reserves its
//! target slot (the all-ones value, which no fingerprint of a scheme with
//! [`Scheme::RESERVES_ALL_ONES`] takes), makes the version stripes of both
//! buckets odd, clears the source slot, writes the target, and makes the
//! stripes even again. A fingerprint is thus never in two slots (so
//! racing removes cannot take more copies than there are), and a lookup
//! or remove that misses re-reads the stripes of its two buckets and tries
//! again if they are odd or moved: an item present is never missed. The
//! protocol and its proof obligations are in `src/PROTOCOLS.md`.

use super::lanes::{Lanes, Span};
use super::versions::Versions;
use crate::bits::BitArray;
use crate::block::WORDS_PER_BLOCK;
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use crate::Error;

pub use super::byte_table::{ByteTable, MAX_BYTE_TABLE_BUCKETS};
pub use super::scheme::{Native, Probe, RedisBloom, Scheme};

/// The most slots a bucket may have (RedisBloom's bucket size is a byte).
pub const MAX_BUCKET_SLOTS: u32 = 255;

/// How a table is cut: slot width, slots per bucket, buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    slot_bits: u32,
    bucket_slots: u32,
    buckets: usize,
}

impl Shape {
    /// A shape of `buckets` buckets of `bucket_slots` slots of `slot_bits`
    /// bits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidField`] for a slot width outside 2..=32, a bucket of
    /// 0 or more than [`MAX_BUCKET_SLOTS`] slots, a bucket that is not whole
    /// words where the slot width does not divide 64, or 0 buckets;
    /// [`Error::LengthOverflow`] when the table's bytes overflow.
    pub fn new(slot_bits: u32, bucket_slots: u32, buckets: usize) -> Result<Self, Error> {
        if !(2..=32).contains(&slot_bits) {
            return Err(Error::InvalidField {
                field: "cuckoo slot bits",
                value: u64::from(slot_bits),
            });
        }
        let slots_per_word = 64 / slot_bits;
        if bucket_slots == 0
            || bucket_slots > MAX_BUCKET_SLOTS
            || (bucket_slots % slots_per_word != 0 && 64 % slot_bits != 0)
        {
            return Err(Error::InvalidField {
                field: "cuckoo bucket slots",
                value: u64::from(bucket_slots),
            });
        }
        if buckets == 0 {
            return Err(Error::InvalidField {
                field: "cuckoo buckets",
                value: 0,
            });
        }
        let shape = Shape {
            slot_bits,
            bucket_slots,
            buckets,
        };
        let words = buckets
            .checked_mul(bucket_slots as usize)
            .map(|slots| slots.div_ceil(slots_per_word as usize))
            .filter(|words| words.div_ceil(WORDS_PER_BLOCK) <= isize::MAX as usize / 64);
        match words {
            Some(_) => Ok(shape),
            None => Err(Error::LengthOverflow {
                field: "cuckoo buckets",
                value: buckets as u64,
            }),
        }
    }

    /// Bits of a slot.
    pub fn slot_bits(&self) -> u32 {
        self.slot_bits
    }

    /// Slots of a bucket.
    pub fn bucket_slots(&self) -> u32 {
        self.bucket_slots
    }

    /// Buckets of the table.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// Slots of one word.
    pub fn slots_per_word(&self) -> u32 {
        64 / self.slot_bits
    }

    /// Slots of the table.
    pub fn slots(&self) -> usize {
        self.buckets * self.bucket_slots as usize
    }

    /// Words the slots take.
    pub fn words(&self) -> usize {
        self.slots().div_ceil(self.slots_per_word() as usize)
    }

    /// Bytes the slots take, 8-bit shapes as RedisBloom counts them
    /// (`buckets · bucket_slots`), others as whole words.
    pub fn data_bytes(&self) -> usize {
        if self.slot_bits == 8 {
            self.slots()
        } else {
            self.words() * 8
        }
    }

    /// Whether each bucket is whole words.
    fn whole_words(&self) -> bool {
        self.bucket_slots % self.slots_per_word() == 0
    }
}

/// A slot: its word and the shift of its low bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRef {
    /// Index of the word.
    pub word: usize,
    /// Shift of the slot's lowest bit in the word.
    pub shift: u32,
}

/// A table of fingerprint slots: the cuckoo core (see the module's docs).
pub struct Table {
    pub(super) words: BitArray,
    pub(super) shape: Shape,
    pub(super) lanes: Lanes,
    pub(super) versions: Versions,
    relocation: Mutex<()>,
}

impl Table {
    /// An empty table (every slot 0), from the allocator's zeroed path.
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    pub fn new(shape: Shape) -> Result<Self, Error> {
        let words = BitArray::new(shape.words().div_ceil(WORDS_PER_BLOCK))?;
        Ok(Self::from_words(words, shape))
    }

    pub(crate) fn from_words(words: BitArray, shape: Shape) -> Self {
        Table {
            words,
            shape,
            lanes: Lanes::new(shape.slot_bits),
            versions: Versions::for_words(shape.words()),
            relocation: Mutex::new(()),
        }
    }

    pub(crate) fn words(&self) -> &BitArray {
        &self.words
    }

    /// The table's shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Bytes allocated: the words (whole cache lines) and the version
    /// stripes.
    pub fn memory_bytes(&self) -> usize {
        self.words.memory_bytes() + self.versions.memory_bytes()
    }

    /// The probe of `hash` under `scheme` in this table.
    #[inline(always)]
    pub fn probe<S: Scheme>(&self, scheme: &S, hash: u64) -> Probe {
        Probe::new(scheme, hash, self.shape.slot_bits, self.shape.buckets)
    }

    #[inline(always)]
    pub(super) fn word(&self, index: usize) -> &AtomicU64 {
        self.words
            .word(index / WORDS_PER_BLOCK, index % WORDS_PER_BLOCK)
    }

    #[inline(always)]
    fn span(&self, bucket: usize) -> Span {
        let shape = &self.shape;
        let per_word = shape.slots_per_word();
        if shape.whole_words() {
            let count = (shape.bucket_slots / per_word) as usize;
            return Span {
                first: bucket * count,
                count,
                head: u64::MAX,
                tail: u64::MAX,
            };
        }
        // Slot widths that divide 64: `per_word` is a power of two.
        let first_slot = bucket * shape.bucket_slots as usize;
        let end_slot = first_slot + shape.bucket_slots as usize;
        let shift = per_word.trailing_zeros();
        let first = first_slot >> shift;
        let last = (end_slot - 1) >> shift;
        let lane_mask = per_word as usize - 1;
        let end_lane = ((end_slot - 1) & lane_mask) as u32 + 1;
        Span {
            first,
            count: last - first + 1,
            head: self
                .lanes
                .lane_range((first_slot & lane_mask) as u32, per_word),
            tail: self.lanes.lane_range(0, end_lane),
        }
    }

    /// The lowest slot of `bucket` holding `value` (0: a free slot).
    #[inline(always)]
    fn find(&self, bucket: usize, value: u64) -> Option<SlotRef> {
        let span = self.span(bucket);
        let broadcast = self.lanes.broadcast(value);
        for index in 0..span.count {
            let word = span.first + index;
            // Acquire: pairs with a move's closing Release (through the
            // stripe it also reads) and orders this load before the
            // fence of `Versions::unchanged`.
            let bits = self.word(word).load(Ordering::Acquire);
            let found = self
                .lanes
                .matching(bits, broadcast, span.valid(index, self.lanes.high));
            if found != 0 {
                return Some(SlotRef {
                    word,
                    shift: self.lanes.lowest_shift(found),
                });
            }
        }
        None
    }

    /// Copies of `value` in `bucket`, read once, unguarded by the version
    /// stripes ([`count`](Self::count) guards it).
    pub(super) fn count_in(&self, bucket: usize, value: u64) -> usize {
        let span = self.span(bucket);
        let broadcast = self.lanes.broadcast(value);
        (0..span.count)
            .map(|index| {
                // Acquire: as in `find`.
                let bits = self.word(span.first + index).load(Ordering::Acquire);
                self.lanes
                    .matching(bits, broadcast, span.valid(index, self.lanes.high))
                    .count_ones() as usize
            })
            .sum()
    }

    /// Whether the probe's fingerprint is in either of its buckets. A
    /// fingerprint present throughout the call is found, even while
    /// [`relocate`](Self::relocate) moves it.
    #[inline]
    pub fn contains(&self, probe: &Probe) -> bool {
        let mut round = 0;
        loop {
            let before = self.versions.read_for(round, probe.first, probe.second);
            if self.find(probe.first, probe.fingerprint).is_some()
                || self.find(probe.second, probe.fingerprint).is_some()
            {
                return true;
            }
            if self.versions.unchanged(probe.first, probe.second, before) {
                return false;
            }
            crate::sync::wait_round(round);
            round += 1;
        }
    }

    /// Copies of the probe's fingerprint in its two buckets (one bucket
    /// counted once where they are the same); a copy present throughout is
    /// counted even while it moves.
    pub fn count(&self, probe: &Probe) -> usize {
        let mut round = 0;
        loop {
            let before = self.versions.read_for(round, probe.first, probe.second);
            let mut copies = self.count_in(probe.first, probe.fingerprint);
            if probe.second != probe.first {
                copies += self.count_in(probe.second, probe.fingerprint);
            }
            if self.versions.unchanged(probe.first, probe.second, before) {
                return copies;
            }
            crate::sync::wait_round(round);
            round += 1;
        }
    }

    /// Replaces the lane at `slot` holding `expected` by `new`; false if it
    /// holds something else. `ordering` is the CAS's on success.
    #[inline]
    pub(super) fn swap_lane(
        &self,
        slot: SlotRef,
        expected: u64,
        new: u64,
        ordering: Ordering,
    ) -> bool {
        let word = self.word(slot.word);
        let mask = self.lanes.all_ones << slot.shift;
        // Relaxed: a first look; the CAS below decides.
        let mut bits = word.load(Ordering::Relaxed);
        loop {
            if (bits & mask) >> slot.shift != expected {
                return false;
            }
            let replaced = (bits & !mask) | new << slot.shift;
            // `ordering` on success (the caller's reason); Relaxed on
            // failure: the value read is only looked at again.
            match word.compare_exchange_weak(bits, replaced, ordering, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => bits = actual,
            }
        }
    }

    /// Writes `value` into the lowest free slot of `bucket` with one CAS
    /// (more only when another thread wins the word meanwhile).
    #[inline]
    fn insert_into(&self, bucket: usize, value: u64) -> Option<SlotRef> {
        let span = self.span(bucket);
        for index in 0..span.count {
            let word_index = span.first + index;
            let word = self.word(word_index);
            let valid = span.valid(index, self.lanes.high);
            // Relaxed: a first look; the CAS below decides.
            let mut bits = word.load(Ordering::Relaxed);
            loop {
                let free = self.lanes.matching(bits, 0, valid);
                if free == 0 {
                    break;
                }
                let shift = self.lanes.lowest_shift(free);
                // Relaxed: a fingerprint publishes nothing else; the CAS
                // reads the latest word, so no racing update is lost, and
                // it continues the release sequence of a move's clear.
                match word.compare_exchange_weak(
                    bits,
                    bits | value << shift,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        return Some(SlotRef {
                            word: word_index,
                            shift,
                        })
                    }
                    Err(actual) => bits = actual,
                }
            }
        }
        None
    }

    /// Puts the probe's fingerprint into the lowest free slot of its first
    /// bucket, else of its second; false, changing nothing, if both are
    /// full.
    #[inline]
    pub fn insert_free(&self, probe: &Probe) -> bool {
        self.insert_into(probe.first, probe.fingerprint).is_some()
            || self.insert_into(probe.second, probe.fingerprint).is_some()
    }

    /// Clears the lowest copy of the probe's fingerprint in its first
    /// bucket, else in its second, with one CAS; false if neither holds
    /// one. A copy present throughout the call is found even while it
    /// moves, and racing removes take distinct copies.
    #[inline]
    pub fn remove(&self, probe: &Probe) -> bool {
        let mut round = 0;
        loop {
            let before = self.versions.read_for(round, probe.first, probe.second);
            for bucket in [probe.first, probe.second] {
                while let Some(slot) = self.find(bucket, probe.fingerprint) {
                    // Relaxed: clearing publishes nothing; the CAS takes
                    // this copy or fails when another thread changed it.
                    if self.swap_lane(slot, probe.fingerprint, 0, Ordering::Relaxed) {
                        return true;
                    }
                }
            }
            if self.versions.unchanged(probe.first, probe.second, before) {
                return false;
            }
            crate::sync::wait_round(round);
            round += 1;
        }
    }

    /// The fingerprints held (reserved slots not counted): O(size).
    pub fn len(&self) -> usize {
        let shape = &self.shape;
        let full = shape.slots() / shape.slots_per_word() as usize;
        let tail_lanes = (shape.slots() % shape.slots_per_word() as usize) as u32;
        let reserved = self.lanes.broadcast(self.lanes.all_ones);
        let count = |bits: u64, valid: u64| {
            let empty = self.lanes.matching(bits, 0, valid);
            let held = self.lanes.matching(bits, reserved, valid);
            (valid & !empty & !held).count_ones() as usize
        };
        let mut total = 0;
        for index in 0..full {
            // Relaxed: a count, a snapshot while others write.
            total += count(self.word(index).load(Ordering::Relaxed), self.lanes.high);
        }
        if tail_lanes != 0 {
            // Relaxed: as above.
            let bits = self.word(full).load(Ordering::Relaxed);
            total += count(bits, self.lanes.lane_range(0, tail_lanes));
        }
        total
    }

    /// Whether no slot holds a fingerprint: O(size).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties every slot (others may use the table meanwhile); waits for
    /// a relocation under way to finish.
    pub fn clear(&self) {
        let _relocating = self.lock_relocation();
        self.words.clear();
    }

    /// A copy, each word read once (no relocation moves meanwhile).
    pub fn snapshot(&self) -> Self {
        let _relocating = self.lock_relocation();
        Table {
            words: self.words.snapshot(),
            shape: self.shape,
            lanes: self.lanes,
            versions: self.versions.snapshot(),
            relocation: Mutex::new(()),
        }
    }

    /// Whether `other` has the same shape and slots (each word read once).
    pub fn same(&self, other: &Self) -> bool {
        self.shape == other.shape && self.words.same(&other.words)
    }

    pub(crate) fn lock_relocation(&self) -> MutexGuard<'_, ()> {
        self.relocation
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The fingerprints of `bucket`'s occupied slots (neither empty nor
    /// reserved) with their slots, lowest first, into `out`.
    pub(super) fn occupied(&self, bucket: usize, out: &mut Vec<(SlotRef, u64)>) {
        out.clear();
        let span = self.span(bucket);
        let reserved = self.lanes.broadcast(self.lanes.all_ones);
        for index in 0..span.count {
            let word = span.first + index;
            // Relaxed: the relocation's search; every move re-checks with
            // a CAS.
            let bits = self.word(word).load(Ordering::Relaxed);
            let valid = span.valid(index, self.lanes.high);
            let mut held = valid
                & !self.lanes.matching(bits, 0, valid)
                & !self.lanes.matching(bits, reserved, valid);
            while held != 0 {
                let shift = self.lanes.lowest_shift(held);
                held &= held - 1;
                out.push((
                    SlotRef { word, shift },
                    (bits >> shift) & self.lanes.all_ones,
                ));
            }
        }
    }

    /// A free slot of `bucket`, for the relocation's search.
    pub(super) fn free_slot(&self, bucket: usize) -> Option<SlotRef> {
        self.find(bucket, 0)
    }

    /// One move of the concurrent relocation (`src/PROTOCOLS.md`): the
    /// fingerprint `value` at `from` (in bucket `from_bucket`) to the free
    /// slot `to` (in `to_bucket`). False, with nothing changed, when `to`
    /// is no longer free or `from` no longer holds `value`.
    pub(super) fn move_slot(
        &self,
        from: SlotRef,
        from_bucket: usize,
        to: SlotRef,
        to_bucket: usize,
        value: u64,
    ) -> bool {
        let reserved = self.lanes.all_ones;
        // Relaxed: the reservation publishes nothing; it only keeps
        // inserts out of the slot (no fingerprint equals it).
        if !self.swap_lane(to, 0, reserved, Ordering::Relaxed) {
            return false;
        }
        self.versions
            .bump(from_bucket, to_bucket, Ordering::Relaxed);
        // Release: a reader whose load sees the slot cleared, then fences,
        // sees the odd version bumped before it.
        let moved = self.swap_lane(from, value, 0, Ordering::Release);
        // Release: a lookup that reads the fingerprint here, after reading it
        // at `from` before the clear (a count that would count it twice),
        // then fences, sees the opening bump and reads again.
        let written = self.swap_lane(
            to,
            reserved,
            if moved { value } else { 0 },
            Ordering::Release,
        );
        debug_assert!(
            written,
            "only the relocation holding the lock writes a reserved slot"
        );
        self.versions
            .bump(from_bucket, to_bucket, Ordering::Release);
        moved
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("shape", &self.shape)
            .field("memory_bytes", &self.memory_bytes())
            .finish_non_exhaustive()
    }
}
