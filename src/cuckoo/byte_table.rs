//! [`ByteTable`]: the cuckoo core's table for a single owner, 8-bit slots
//! in plain bytes (RedisBloom's sub-filter), beside the shared [`Table`]
//! of atomic words.
//!
//! [`Table`]: super::core::Table

use std::alloc::Layout;
use std::ptr::NonNull;

use super::core::MAX_BUCKET_SLOTS;
use super::lanes::Lanes;
use super::scheme::{Probe, Scheme};
use crate::Error;

/// The most buckets a [`ByteTable`] may have (RedisBloom's 56-bit field).
pub const MAX_BYTE_TABLE_BUCKETS: u64 = (1 << 56) - 1;

/// The SWAR constants of 8-bit slots.
const LANES: Lanes = Lanes::new(8);

/// Where the bucket size sits in [`ByteTable`]'s packed shape.
const SIZE_SHIFT: u32 = 56;

/// A table of 8-bit fingerprint slots for a single owner: `buckets`
/// buckets of `bucket_slots` slots, slot `s` of bucket `b` the byte
/// `b · bucket_slots + s` (RedisBloom's sub-filter `data`, as its RDB
/// strings, `CF.SCANDUMP` pieces and `CF.LOADCHUNK` data hold it).
///
/// It holds those bytes and nothing else: 16 bytes of its own (the
/// pointer; buckets and bucket size packed in one word, as RedisBloom's
/// `SubCF` packs them) and the slots, exactly
/// ([`memory_bytes`](Self::memory_bytes)), from the allocator's zeroed
/// path. Reads take `&self` and are plain loads; writes take `&mut self`
/// and are plain stores, with no version stripes, fences or
/// compare-and-swap: a single-threaded owner (the module's commands run
/// one at a time) pays for none of them. A bucket is searched a word at a
/// time: the eight bytes from its first slot loaded at once (whatever
/// their alignment), each byte compared by SWAR, the first match by
/// trailing zeros, masked to the bucket.
///
/// The operations are [`Table`](super::core::Table)'s under the same
/// names and pick the same slots: an insert takes the lowest free slot of
/// the first bucket, else of the second; a remove clears the lowest copy
/// of the first bucket, else of the second; [`kick_out`](Self::kick_out)
/// is RedisBloom's relocation.
///
/// ```
/// use atomic_bloom::cuckoo_core::{ByteTable, RedisBloom};
///
/// let mut table = ByteTable::new(2, 512)?;
/// let probe = table.probe(&RedisBloom, 0xdead_beef);
/// assert!(table.insert_free(&probe));
/// assert!(table.contains(&probe));
/// assert_eq!(table.memory_bytes(), 1024);
/// assert!(table.remove(&probe));
/// assert!(table.is_empty());
/// # Ok::<(), atomic_bloom::Error>(())
/// ```
///
/// # Consistency
///
/// No interior mutability: a `&ByteTable` is never written, so readers on
/// any threads see the same bytes; a writer has it alone.
pub struct ByteTable {
    slots: NonNull<u8>,
    /// Buckets in the low 56 bits, slots a bucket in the high 8.
    shape: u64,
}

// Safety: it owns its bytes as a `Box<[u8]>` would.
unsafe impl Send for ByteTable {}
// Safety: as above; `&self` only reads.
unsafe impl Sync for ByteTable {}

/// The little-endian word of the eight bytes from `at` (those past the
/// end of `bytes` read as 0).
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    match bytes
        .get(at..at + 8)
        .and_then(|eight| eight.try_into().ok())
    {
        Some(eight) => u64::from_le_bytes(eight),
        None => {
            let mut word = [0u8; 8];
            let tail = &bytes[at..];
            word[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(word)
        }
    }
}

impl ByteTable {
    /// `buckets` empty buckets of `bucket_slots` slots, from the
    /// allocator's zeroed path (`calloc`: pages stay the kernel's until a
    /// slot is written).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidField`] for a bucket of 0 or more than
    /// [`MAX_BUCKET_SLOTS`] slots or 0 buckets; [`Error::LengthOverflow`]
    /// past [`MAX_BYTE_TABLE_BUCKETS`] buckets or the address space;
    /// [`Error::AllocationFailed`] when the allocator refuses.
    pub fn new(bucket_slots: u32, buckets: usize) -> Result<Self, Error> {
        if bucket_slots == 0 || bucket_slots > MAX_BUCKET_SLOTS {
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
        let too_many = || Error::LengthOverflow {
            field: "cuckoo buckets",
            value: buckets as u64,
        };
        if buckets as u64 > MAX_BYTE_TABLE_BUCKETS {
            return Err(too_many());
        }
        let len = (buckets.checked_mul(bucket_slots as usize))
            .filter(|&len| len <= isize::MAX as usize)
            .ok_or_else(too_many)?;
        let layout = Layout::array::<u8>(len).map_err(|_| too_many())?;
        // Safety: `len` is at least one slot, so the layout is not empty.
        let slots = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
            .ok_or(Error::AllocationFailed { bytes: len })?;
        Ok(ByteTable {
            slots,
            shape: buckets as u64 | u64::from(bucket_slots) << SIZE_SHIFT,
        })
    }

    /// Its buckets.
    #[inline(always)]
    pub fn buckets(&self) -> usize {
        (self.shape & MAX_BYTE_TABLE_BUCKETS) as usize
    }

    /// Slots of a bucket.
    #[inline(always)]
    pub fn bucket_slots(&self) -> u32 {
        (self.shape >> SIZE_SHIFT) as u32
    }

    /// Slots of the table (its bytes).
    #[inline(always)]
    pub fn slots(&self) -> usize {
        self.buckets() * self.bucket_slots() as usize
    }

    /// Bytes allocated: the slots, one byte each.
    pub fn memory_bytes(&self) -> usize {
        self.slots()
    }

    /// The slots as bytes.
    #[inline(always)]
    pub fn as_bytes(&self) -> &[u8] {
        // Safety: `slots` starts `slots()` initialized bytes owned by
        // `self`, which `&self` keeps from being written.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr(), self.slots()) }
    }

    /// The slots as bytes, to write (a load, `CF.LOADCHUNK`).
    #[inline(always)]
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // Safety: as in `as_bytes`, and `&mut self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.slots.as_ptr(), self.slots()) }
    }

    /// A copy, its slots from the allocator's zeroed path, then copied.
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    pub fn try_clone(&self) -> Result<Self, Error> {
        let mut copy = ByteTable::new(self.bucket_slots(), self.buckets())?;
        copy.as_bytes_mut().copy_from_slice(self.as_bytes());
        Ok(copy)
    }

    /// The probe of `hash` under `scheme` in this table.
    #[inline(always)]
    pub fn probe<S: Scheme>(&self, scheme: &S, hash: u64) -> Probe {
        Probe::new(scheme, hash, 8, self.buckets())
    }

    /// The first slot of `bucket`.
    ///
    /// # Panics
    ///
    /// If `bucket` is out of the table.
    #[inline(always)]
    fn start(&self, bucket: usize) -> usize {
        assert!(bucket < self.buckets(), "a bucket past the table");
        bucket * self.bucket_slots() as usize
    }

    /// The lowest slot of `bucket` holding `value` (0: a free slot), as
    /// its index in the bucket.
    ///
    /// # Panics
    ///
    /// If `bucket` is out of the table.
    #[inline(always)]
    pub fn find(&self, bucket: usize, value: u8) -> Option<u32> {
        let size = self.bucket_slots() as usize;
        let start = self.start(bucket);
        let bytes = self.as_bytes();
        let broadcast = LANES.broadcast(u64::from(value));
        if size <= 8 {
            // One word holds the bucket: no loop.
            let valid = LANES.lane_range(0, size as u32);
            let found = LANES.matching(word_at(bytes, start), broadcast, valid);
            return (found != 0).then(|| found.trailing_zeros() / 8);
        }
        let mut at = 0;
        while at < size {
            let valid = LANES.lane_range(0, (size - at).min(8) as u32);
            let found = LANES.matching(word_at(bytes, start + at), broadcast, valid);
            if found != 0 {
                return Some((at + found.trailing_zeros() as usize / 8) as u32);
            }
            at += 8;
        }
        None
    }

    /// The lowest free slot of `bucket`, as its index in the bucket.
    ///
    /// # Panics
    ///
    /// If `bucket` is out of the table.
    #[inline(always)]
    pub fn find_free(&self, bucket: usize) -> Option<u32> {
        self.find(bucket, 0)
    }

    /// Copies of `value` in `bucket` (RedisBloom's count is
    /// `count_in(first) + count_in(second)`, both even where they are the
    /// same bucket).
    ///
    /// # Panics
    ///
    /// If `bucket` is out of the table.
    pub fn count_in(&self, bucket: usize, value: u8) -> usize {
        let size = self.bucket_slots() as usize;
        let start = self.start(bucket);
        let bytes = self.as_bytes();
        let broadcast = LANES.broadcast(u64::from(value));
        (0..size)
            .step_by(8)
            .map(|at| {
                let valid = LANES.lane_range(0, (size - at).min(8) as u32);
                LANES
                    .matching(word_at(bytes, start + at), broadcast, valid)
                    .count_ones() as usize
            })
            .sum()
    }

    /// The slot `index` of `bucket`.
    ///
    /// # Panics
    ///
    /// If `bucket` or `index` is out of the table.
    #[inline(always)]
    pub fn slot(&self, bucket: usize, index: u32) -> u8 {
        assert!(index < self.bucket_slots(), "a slot past the bucket");
        self.as_bytes()[self.start(bucket) + index as usize]
    }

    /// Sets slot `index` of `bucket` to `value`.
    ///
    /// # Panics
    ///
    /// If `bucket` or `index` is out of the table.
    #[inline(always)]
    pub fn set_slot(&mut self, bucket: usize, index: u32, value: u8) {
        assert!(index < self.bucket_slots(), "a slot past the bucket");
        let at = self.start(bucket) + index as usize;
        self.as_bytes_mut()[at] = value;
    }

    /// The probe's fingerprint as a slot value.
    #[inline(always)]
    fn fingerprint(probe: &Probe) -> u8 {
        debug_assert!(
            (1..=255).contains(&probe.fingerprint),
            "an 8-bit scheme's fingerprint"
        );
        probe.fingerprint as u8
    }

    /// Whether the probe's fingerprint (of a scheme for 8-bit slots) is in
    /// either of its buckets.
    ///
    /// # Panics
    ///
    /// If a bucket is out of the table.
    #[inline]
    pub fn contains(&self, probe: &Probe) -> bool {
        self.holds(probe.first, probe.second, Self::fingerprint(probe))
    }

    /// Whether `value` is in bucket `first` or bucket `second`: a bucket
    /// of up to eight slots is one load and one compare, and the two are
    /// looked at together.
    ///
    /// # Panics
    ///
    /// If a bucket is out of the table.
    #[inline]
    pub fn holds(&self, first: usize, second: usize, value: u8) -> bool {
        let size = self.bucket_slots() as usize;
        if size > 8 {
            return self.find(first, value).is_some() || self.find(second, value).is_some();
        }
        let (first, second) = (self.start(first), self.start(second));
        let bytes = self.as_bytes();
        let valid = LANES.lane_range(0, size as u32);
        let broadcast = LANES.broadcast(u64::from(value));
        let hits = LANES.matching(word_at(bytes, first), broadcast, valid)
            | LANES.matching(word_at(bytes, second), broadcast, valid);
        hits != 0
    }

    /// Copies of the probe's fingerprint in its two buckets (one bucket
    /// counted once where they are the same).
    ///
    /// # Panics
    ///
    /// If a bucket is out of the table.
    pub fn count(&self, probe: &Probe) -> usize {
        let fingerprint = Self::fingerprint(probe);
        let mut copies = self.count_in(probe.first, fingerprint);
        if probe.second != probe.first {
            copies += self.count_in(probe.second, fingerprint);
        }
        copies
    }

    /// Puts the probe's fingerprint into the lowest free slot of its first
    /// bucket, else of its second; false, changing nothing, if both are
    /// full.
    ///
    /// # Panics
    ///
    /// If a bucket is out of the table.
    #[inline]
    pub fn insert_free(&mut self, probe: &Probe) -> bool {
        self.put(probe.first, probe.second, Self::fingerprint(probe))
    }

    /// Puts `value` into the lowest free slot of bucket `first`, else of
    /// bucket `second`; false, changing nothing, if both are full. A
    /// bucket of up to eight slots is one load and one compare.
    ///
    /// # Panics
    ///
    /// If a bucket is out of the table.
    #[inline]
    pub fn put(&mut self, first: usize, second: usize, value: u8) -> bool {
        let size = self.bucket_slots() as usize;
        let (first_at, second_at) = (self.start(first), self.start(second));
        if size <= 8 {
            let bytes = self.as_bytes();
            let valid = LANES.lane_range(0, size as u32);
            let mut at = first_at;
            let mut free = LANES.matching(word_at(bytes, first_at), 0, valid);
            if free == 0 {
                at = second_at;
                free = LANES.matching(word_at(bytes, second_at), 0, valid);
                if free == 0 {
                    return false;
                }
            }
            self.as_bytes_mut()[at + (free.trailing_zeros() / 8) as usize] = value;
            return true;
        }
        for bucket in [first, second] {
            if let Some(index) = self.find_free(bucket) {
                self.set_slot(bucket, index, value);
                return true;
            }
        }
        false
    }

    /// Clears the lowest copy of the probe's fingerprint in its first
    /// bucket, else in its second; false if neither holds one.
    ///
    /// # Panics
    ///
    /// If a bucket is out of the table.
    #[inline]
    pub fn remove(&mut self, probe: &Probe) -> bool {
        let fingerprint = Self::fingerprint(probe);
        for bucket in [probe.first, probe.second] {
            if let Some(index) = self.find(bucket, fingerprint) {
                self.set_slot(bucket, index, 0);
                return true;
            }
        }
        false
    }

    /// RedisBloom's relocation (`Filter_KOInsert`): from the probe's first
    /// bucket, swap the fingerprint in hand with the slot `victim` (0 at
    /// first, then one more each step, modulo the bucket size), go to the
    /// evicted fingerprint's other bucket under `scheme`, and place it in
    /// the lowest free slot there if any; after `max_iterations` steps
    /// without one, undo every swap in reverse and return false, the table
    /// as it was. Deterministic: a replica replaying the same commands
    /// ends with the same bytes.
    ///
    /// # Panics
    ///
    /// If the probe's first bucket is out of the table.
    pub fn kick_out<S: Scheme>(&mut self, scheme: &S, probe: &Probe, max_iterations: u32) -> bool {
        let buckets = self.buckets();
        let bucket_slots = self.bucket_slots();
        let mut in_hand = Self::fingerprint(probe);
        let mut victim = 0u32;
        let mut bucket = probe.first;
        for _ in 0..max_iterations {
            let evicted = self.slot(bucket, victim);
            self.set_slot(bucket, victim, in_hand);
            in_hand = evicted;
            bucket = scheme.alternate(bucket, u64::from(in_hand), buckets);
            if let Some(free) = self.find_free(bucket) {
                self.set_slot(bucket, free, in_hand);
                return true;
            }
            victim = (victim + 1) % bucket_slots;
        }
        for _ in 0..max_iterations {
            victim = (victim + bucket_slots - 1) % bucket_slots;
            bucket = scheme.alternate(bucket, u64::from(in_hand), buckets);
            let evicted = self.slot(bucket, victim);
            self.set_slot(bucket, victim, in_hand);
            in_hand = evicted;
        }
        false
    }

    /// Asks the CPU to start loading `bucket`'s slots into cache (both of
    /// its lines where it crosses one); a hint with no effect on results
    /// (and none off x86-64). A caller with many items hashes them all,
    /// prefetches their buckets, then looks them up: the loads overlap.
    #[inline(always)]
    pub fn prefetch(&self, bucket: usize) {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
        {
            if bucket >= self.buckets() {
                return;
            }
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let size = self.bucket_slots() as usize;
            let first = self.slots.as_ptr().wrapping_add(bucket * size);
            let last = first.wrapping_add(size - 1);
            // Safety: the cfg guarantees SSE, the only feature the
            // intrinsic needs; a prefetch reads nothing and never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(first.cast::<i8>()) };
            if (last as usize) / 64 != (first as usize) / 64 {
                // Safety: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(last.cast::<i8>()) };
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
        let _ = bucket;
    }

    /// The fingerprints held: O(size).
    pub fn len(&self) -> usize {
        self.as_bytes().iter().filter(|&&slot| slot != 0).count()
    }

    /// Whether no slot holds a fingerprint: O(size).
    pub fn is_empty(&self) -> bool {
        self.as_bytes().iter().all(|&slot| slot == 0)
    }
}

impl Drop for ByteTable {
    fn drop(&mut self) {
        // Safety: `new` made this layout (a size it checked, alignment 1).
        let layout = unsafe { Layout::from_size_align_unchecked(self.slots(), 1) };
        // Safety: `slots` came from the global allocator with this layout
        // (`new`), and is freed once, here.
        unsafe { std::alloc::dealloc(self.slots.as_ptr(), layout) };
    }
}

impl PartialEq for ByteTable {
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ByteTable {}

impl std::fmt::Debug for ByteTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteTable")
            .field("buckets", &self.buckets())
            .field("bucket_slots", &self.bucket_slots())
            .finish_non_exhaustive()
    }
}
