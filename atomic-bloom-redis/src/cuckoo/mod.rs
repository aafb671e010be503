//! RedisBloom's cuckoo filters (`CF.*`), on RedisBloom's own data: its
//! hash, fingerprints, buckets, victim order and growth, so that a filter
//! RedisBloom saved (its RDB, its `CF.SCANDUMP` stream, a `RESTORE` of its
//! `DUMP`) answers here exactly as there, keeps changing as it would there,
//! and saves back in RedisBloom's encoding.
//!
//! The facts, from RedisBloom's sources (read, not copied: its licence is
//! RSALv2/SSPLv1/AGPLv3):
//!
//! * An item hashes to `h`, MurmurHash64A with seed 0. Its fingerprint is
//!   `h % 255 + 1` (never 0: 0 is an empty slot), its first bucket index
//!   `h1 = h` and its second `h2 = h ^ (fp · 0x5bd1e995)`.
//! * A filter is a list of sub-filters; sub-filter `i` has `buckets ·
//!   expansion^i` buckets of `bucket_size` one-byte slots. In a sub-filter
//!   of `n` buckets, index `x` is the bucket whose first slot is byte
//!   `(x % n) · bucket_size`, cut to 32 bits as RedisBloom's index is.
//! * A lookup finds the fingerprint in either bucket of any sub-filter; a
//!   count adds the copies in both buckets of every sub-filter; a delete
//!   clears the first copy from the newest sub-filter back. An insert takes
//!   the first empty slot of either bucket from the newest sub-filter back;
//!   else it relocates in the newest (RedisBloom's victim order, undone in
//!   full when it fails); else a filter that may grow gets a sub-filter
//!   `expansion` times the last and the item goes there.
//! * Deleting more than a tenth of the items compacts a grown filter
//!   (fingerprints of newer sub-filters moved back into older ones, an
//!   emptied newest sub-filter freed); so does `CF.COMPACT`.
//!
//! All of it is deterministic, which keeps a replica equal to its primary.
//! Where this module differs on purpose (a client's insert that only
//! duplicates would grow a filter) is said at [`Cuckoo::insert`].

pub(crate) mod command_info;
mod compact;
pub(crate) mod config;
pub(crate) mod data_type;
pub(crate) mod rdb;
pub(crate) mod stream;
mod table;

pub(crate) use stream::{Scanned, HEADER_BYTES};

use table::{At, Table};

/// Most buckets a sub-filter may have (RedisBloom's 56-bit field).
pub(crate) const MAX_BUCKETS: u64 = (1 << 56) - 1;
/// Most sub-filters (RedisBloom's 16-bit count).
pub(crate) const MAX_FILTERS: usize = u16::MAX as usize;
/// The multiplier of a fingerprint in the alternate index.
const ALTERNATE: u64 = 0x5bd1_e995;

/// An item's fingerprint and bucket indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lookup {
    pub(crate) h1: u64,
    pub(crate) h2: u64,
    pub(crate) fingerprint: u8,
}

impl Lookup {
    /// RedisBloom's lookup of `item`.
    pub(crate) fn of(item: &[u8]) -> Lookup {
        let hash = crate::redisbloom::murmur64a(item, 0);
        let fingerprint = (hash % 255 + 1) as u8;
        Lookup {
            h1: hash,
            h2: alternate(fingerprint, hash),
            fingerprint,
        }
    }
}

/// The other index of `fingerprint` at index `index` (not yet reduced).
fn alternate(fingerprint: u8, index: u64) -> u64 {
    index ^ (u64::from(fingerprint) * ALTERNATE)
}

/// One sub-filter.
pub(crate) struct SubFilter {
    table: Table,
}

impl SubFilter {
    /// Its buckets.
    pub(crate) fn buckets(&self) -> u64 {
        self.table.buckets()
    }

    /// Where RedisBloom's lookups find index `x`'s bucket: its first slot
    /// at `(x % buckets) · bucket_size`, cut to 32 bits.
    #[inline]
    fn at(&self, x: u64, bucket_size: u64) -> At {
        // RedisBloom's sub-filters have a power of two of buckets (but for
        // a hand-made header's odd expansion): a mask, not a division.
        let bucket = if self.buckets().is_power_of_two() {
            x & (self.buckets() - 1)
        } else {
            x % self.buckets()
        };
        let offset = bucket * bucket_size;
        if offset <= u64::from(u32::MAX) {
            return At::Bucket(bucket as usize);
        }
        let cut = u64::from(offset as u32);
        if cut % bucket_size == 0 {
            At::Bucket((cut / bucket_size) as usize)
        } else {
            At::Slots(cut)
        }
    }

    /// The places of an item's two indexes.
    fn places(&self, h1: u64, h2: u64, bucket_size: u64) -> (At, At) {
        (self.at(h1, bucket_size), self.at(h2, bucket_size))
    }

    fn contains(&self, lookup: &Lookup, bucket_size: u64) -> bool {
        let (first, second) = self.places(lookup.h1, lookup.h2, bucket_size);
        self.table.contains(first, second, lookup.fingerprint)
    }

    fn count(&self, lookup: &Lookup, bucket_size: u64) -> u64 {
        let (first, second) = self.places(lookup.h1, lookup.h2, bucket_size);
        self.table.count(first, lookup.fingerprint) + self.table.count(second, lookup.fingerprint)
    }

    /// Clears the first copy of `fingerprint` in the buckets of `h1`, else
    /// of `h2`.
    fn remove(&mut self, h1: u64, h2: u64, fingerprint: u8, bucket_size: u64) -> bool {
        let (first, second) = self.places(h1, h2, bucket_size);
        self.table.remove(first, second, fingerprint)
    }

    /// Puts `fingerprint` in the first empty slot of the buckets of `h1`,
    /// else of `h2`.
    fn insert_free(&mut self, h1: u64, h2: u64, fingerprint: u8, bucket_size: u64) -> bool {
        let (first, second) = self.places(h1, h2, bucket_size);
        self.table.insert_free(first, second, fingerprint)
    }

    /// The slots as bytes, in place.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.table.bytes()
    }
}

// What `MEMORY USAGE` counts of a key's own (`memory_bytes`): RedisBloom's
// 40 bytes a filter and 16 a sub-filter, exactly. The server's part of the
// figure moves by its allocator's 16-byte steps (tests/cuckoo_memory.rs
// allows one), so this is where a field added to either is caught.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(
    std::mem::size_of::<Cuckoo>() == 40 && std::mem::size_of::<SubFilter>() == 16,
    "a cuckoo filter's own bytes are RedisBloom's: 40, and 16 a sub-filter"
);

/// A RedisBloom cuckoo filter: its `CuckooFilter`, in as many bytes (40:
/// the first sub-filter's buckets are its own, not a field) and its list
/// of sub-filters exactly as long as their number (16 bytes each), so that
/// `MEMORY USAGE` is RedisBloom's for the same key.
pub(crate) struct Cuckoo {
    /// Fingerprints held (`Number of items inserted`).
    pub(crate) items: u64,
    /// Deletes since the last compaction (`Number of items deleted`).
    pub(crate) deletes: u64,
    /// The sub-filters, oldest first; none in a load's placeholder.
    filters: Box<[SubFilter]>,
    pub(crate) bucket_size: u16,
    pub(crate) max_iterations: u16,
    pub(crate) expansion: u16,
}

/// Buckets of sub-filter `index` of a filter whose first has `first` and
/// which grows by `expansion`: `first · expansion^index`, if it stays
/// within RedisBloom's 56 bits.
pub(crate) fn buckets_at(first: u64, expansion: u16, index: usize) -> Option<u64> {
    let index = u32::try_from(index).ok()?;
    let growth = u64::from(expansion).checked_pow(index)?;
    if growth == 0 || growth > MAX_BUCKETS / first.max(1) {
        return None;
    }
    Some(first * growth)
}

/// Sub-filters gathered for a new filter: the list's room taken up front
/// (`None`: no memory for it), then each pushed.
pub(crate) struct Gathered(Vec<SubFilter>);

impl Gathered {
    /// Room for `count` sub-filters.
    pub(crate) fn with_room(count: usize) -> Option<Gathered> {
        let mut list = Vec::new();
        list.try_reserve_exact(count).ok()?;
        Some(Gathered(list))
    }

    /// Adds one (within the room taken).
    pub(crate) fn push(&mut self, table: Table) {
        debug_assert!(self.0.len() < self.0.capacity());
        self.0.push(SubFilter { table });
    }

    /// The list, exactly as long as what was pushed.
    fn into_list(self) -> Box<[SubFilter]> {
        // Room was taken exactly for what is pushed: no reallocation,
        // unless a caller pushed fewer (then the shrink copies).
        self.0.into_boxed_slice()
    }
}

/// What inserting an item did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Insert {
    Inserted,
    /// `CF.ADDNX` / `CF.INSERTNX`: it was there.
    Exists,
    /// No room, and the filter may not grow (`EXPANSION 0`), or it would
    /// grow only for a duplicate (see [`Cuckoo::insert`]).
    NoSpace,
    /// A new sub-filter could not be made.
    NoMemory,
    /// A new sub-filter would take the filter past the caller's byte cap
    /// (`bf-memory-limit-per-filter`).
    OverLimit,
}

/// Who asks for an insert: a client, whose duplicates grow a filter once
/// at most, or the server replaying its primary's or its AOF's commands,
/// which does what the primary did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Growth {
    NotForDuplicates,
    AsRedisBloom,
}

/// A filter's fields beside its counts and sub-filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) bucket_size: u16,
    pub(crate) max_iterations: u16,
    pub(crate) expansion: u16,
}

/// Why a filter could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CreateError {
    /// Fields RedisBloom would refuse, or that no RedisBloom wrote.
    Invalid,
    /// The allocator had no memory for the slots.
    OutOfMemory,
    /// The filter would pass the caller's byte cap.
    OverLimit,
}

/// `n` rounded up to a power of two as RedisBloom rounds it (0 stays 0).
pub(crate) fn next_power_of_two(n: u64) -> u64 {
    let mut n = n.wrapping_sub(1);
    for shift in [1, 2, 4, 8, 16, 32] {
        n |= n >> shift;
    }
    n.wrapping_add(1)
}

impl Cuckoo {
    /// A new filter as `CF.RESERVE` (and `CF.ADD` on a missing key) makes
    /// one: `capacity / bucket_size` buckets rounded up to a power of two,
    /// the expansion rounded up to one, one sub-filter.
    ///
    /// # Errors
    ///
    /// [`CreateError::Invalid`] for a capacity under two buckets'
    /// worth ("could not create filter"), [`CreateError::OverLimit`] past
    /// `cap` bytes (as [`Cuckoo::memory_bytes`] counts them),
    /// [`CreateError::OutOfMemory`] when the slots cannot be had.
    pub(crate) fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
        cap: Option<u64>,
    ) -> Result<Cuckoo, CreateError> {
        if bucket_size == 0 || capacity < 2 * u64::from(bucket_size) {
            return Err(CreateError::Invalid);
        }
        let expansion = u16::try_from(next_power_of_two(u64::from(expansion)))
            .map_err(|_| CreateError::Invalid)?;
        let mut cuckoo = Cuckoo {
            items: 0,
            deletes: 0,
            filters: Box::default(),
            bucket_size,
            max_iterations,
            expansion,
        };
        let buckets = next_power_of_two(capacity / u64::from(bucket_size)).max(1);
        cuckoo
            .grow_to(buckets, cap)
            .map_err(|failure| match failure {
                Insert::OverLimit => CreateError::OverLimit,
                _ => CreateError::OutOfMemory,
            })?;
        Ok(cuckoo)
    }

    /// A filter of these fields and sub-filters (a load's, checked by
    /// its caller).
    pub(crate) fn assemble(items: u64, deletes: u64, fields: Fields, filters: Gathered) -> Cuckoo {
        Cuckoo {
            items,
            deletes,
            filters: filters.into_list(),
            bucket_size: fields.bucket_size,
            max_iterations: fields.max_iterations,
            expansion: fields.expansion,
        }
    }

    /// The sub-filters, oldest first.
    pub(crate) fn filters(&self) -> &[SubFilter] {
        &self.filters
    }

    /// Buckets of the first sub-filter (`Number of buckets`; 0 in a load's
    /// placeholder).
    pub(crate) fn buckets(&self) -> u64 {
        self.filters.first().map_or(0, SubFilter::buckets)
    }

    fn slots_per_bucket(&self) -> u64 {
        u64::from(self.bucket_size)
    }

    /// Adds a sub-filter, as RedisBloom's `CuckooFilter_Grow`; an error
    /// (the filter unchanged): [`Insert::NoMemory`] past 65,535
    /// sub-filters, past 2^56 buckets or without memory,
    /// [`Insert::OverLimit`] past `cap` bytes.
    fn grow(&mut self, cap: Option<u64>) -> Result<(), Insert> {
        if self.filters.len() >= MAX_FILTERS {
            return Err(Insert::NoMemory);
        }
        let buckets = buckets_at(self.buckets(), self.expansion, self.filters.len())
            .ok_or(Insert::NoMemory)?;
        self.grow_to(buckets, cap)
    }

    /// Adds a sub-filter of `buckets` buckets (see [`Cuckoo::grow`]).
    fn grow_to(&mut self, buckets: u64, cap: Option<u64>) -> Result<(), Insert> {
        let bytes = (buckets.checked_mul(self.slots_per_bucket())).ok_or(Insert::NoMemory)?;
        // The slots alone past the cap: refused before anything is
        // allocated; then what the table really takes.
        let now = self.memory_bytes();
        let over = |added: u64| cap.is_some_and(|cap| now.saturating_add(added) > cap);
        if over(bytes) {
            return Err(Insert::OverLimit);
        }
        let table = Table::zeroed(buckets, self.bucket_size).ok_or(Insert::NoMemory)?;
        let added = std::mem::size_of::<SubFilter>() + table.memory_bytes();
        if over(added as u64) {
            return Err(Insert::OverLimit);
        }
        // The list one longer, exactly (RedisBloom's realloc of its
        // array): a new one, the old one's sub-filters moved into it.
        let mut list = std::mem::take(&mut self.filters).into_vec();
        if list.try_reserve_exact(1).is_err() {
            // Exactly as long as it was: no reallocation.
            self.filters = list.into_boxed_slice();
            return Err(Insert::NoMemory);
        }
        list.push(SubFilter { table });
        self.filters = list.into_boxed_slice();
        Ok(())
    }

    /// Whether `lookup`'s fingerprint is in either bucket of any
    /// sub-filter.
    pub(crate) fn contains(&self, lookup: &Lookup) -> bool {
        let size = self.slots_per_bucket();
        self.filters.iter().any(|sub| sub.contains(lookup, size))
    }

    /// Copies of `lookup`'s fingerprint in its buckets, over every
    /// sub-filter (a bucket that is both its buckets counts twice, as in
    /// RedisBloom).
    pub(crate) fn count(&self, lookup: &Lookup) -> u64 {
        let size = self.slots_per_bucket();
        self.filters.iter().map(|sub| sub.count(lookup, size)).sum()
    }

    /// Clears one copy of `lookup`'s fingerprint, from the newest
    /// sub-filter back; then compacts a grown filter once deletes pass a
    /// tenth of its items. False (nothing changed) if no copy is there.
    pub(crate) fn delete(&mut self, lookup: &Lookup) -> bool {
        let size = self.slots_per_bucket();
        let removed = (self.filters.iter_mut().rev())
            .any(|sub| sub.remove(lookup.h1, lookup.h2, lookup.fingerprint, size));
        if !removed {
            return false;
        }
        self.items = self.items.wrapping_sub(1);
        self.deletes = self.deletes.wrapping_add(1);
        if self.filters.len() > 1 && self.deletes as f64 > self.items as f64 * 0.10 {
            self.compact(false);
        }
        true
    }

    /// Inserts `lookup`'s fingerprint as RedisBloom does (with `unique`:
    /// only if it is not there), but for one difference when a client asks
    /// ([`Growth::NotForDuplicates`]): in a filter that has grown already,
    /// an insert whose two buckets in the newest sub-filter hold nothing
    /// but its own fingerprint (2 · bucket size copies: no relocation can
    /// make room) answers as a full filter does, where RedisBloom grows one
    /// more sub-filter, `expansion` times the last, to hold one more copy
    /// (a hot duplicate grew a filter to 19 sub-filters and 8 GB for 92,000
    /// items, as RedisBloom's users reported). A duplicate thus grows a filter by
    /// one sub-filter at most, as RedisBloom's own tests expect (six copies
    /// of an item in a filter of bucket size 2). Replayed commands grow as
    /// RedisBloom grew ([`Growth::AsRedisBloom`]): a replica does what its
    /// primary did.
    ///
    /// A new sub-filter that would take the filter past `cap` bytes is not
    /// made: [`Insert::OverLimit`].
    pub(crate) fn insert(
        &mut self,
        lookup: &Lookup,
        unique: bool,
        growth: Growth,
        cap: Option<u64>,
    ) -> Insert {
        if unique && self.contains(lookup) {
            return Insert::Exists;
        }
        let size = self.slots_per_bucket();
        let mut undo = Vec::new();
        loop {
            let placed = (self.filters.iter_mut().rev())
                .any(|sub| sub.insert_free(lookup.h1, lookup.h2, lookup.fingerprint, size));
            if placed {
                self.items = self.items.wrapping_add(1);
                return Insert::Inserted;
            }
            match self.relocate(lookup, &mut undo) {
                Some(true) => {
                    self.items = self.items.wrapping_add(1);
                    return Insert::Inserted;
                }
                Some(false) => {}
                None => return Insert::NoMemory,
            }
            let grown = self.filters.len() > 1;
            let failure = if self.expansion == 0
                || (growth == Growth::NotForDuplicates && grown && self.only_copies_of(lookup))
            {
                Insert::NoSpace
            } else {
                match self.grow(cap) {
                    // The item goes into the new sub-filter: what the
                    // relocation moved stays moved, as in RedisBloom.
                    Ok(()) => {
                        undo.clear();
                        continue;
                    }
                    Err(failure) => failure,
                }
            };
            if let Some(sub) = self.filters.last_mut() {
                sub.table.put_back(&undo);
            }
            return failure;
        }
    }

    /// Whether both of `lookup`'s buckets in the newest sub-filter hold
    /// only its fingerprint.
    fn only_copies_of(&self, lookup: &Lookup) -> bool {
        let size = self.slots_per_bucket();
        self.filters
            .last()
            .is_some_and(|sub| sub.count(lookup, size) == 2 * size)
    }

    /// RedisBloom's `Filter_KOInsert` on the newest sub-filter: the item's
    /// fingerprint takes the slot `victim` of its first bucket, the
    /// fingerprint it displaced goes to its own other bucket, and so on for
    /// `max_iterations` moves (the victim slot advancing by one each move);
    /// if none ends in an empty slot, every move is undone in reverse.
    ///
    /// In a sub-filter of other than a power of two of buckets (only a
    /// hand-made header or RDB value has one) that undoing leaves slots
    /// moved, fingerprints lost or doubled: there each slot written is
    /// noted in `undo`, so that an insert that then fails (no growth)
    /// puts them back and changes nothing, as a command that fails must
    /// (it does not travel to replicas). `None`: no memory for the notes
    /// (nothing moved).
    fn relocate(&mut self, lookup: &Lookup, undo: &mut Vec<(u64, u8)>) -> Option<bool> {
        let moves = self.max_iterations;
        let Some(sub) = self.filters.last_mut() else {
            return Some(false);
        };
        let first = lookup.h1 % sub.buckets();
        if sub.buckets().is_power_of_two() {
            return Some(sub.table.kick_out(first, lookup.fingerprint, moves));
        }
        undo.clear();
        undo.try_reserve_exact(2 * usize::from(moves) + 1).ok()?;
        Some(
            sub.table
                .kick_out_noted(first, lookup.fingerprint, moves, undo),
        )
    }

    /// Bytes as RedisBloom counts them for `CF.INFO` `Size` (and its
    /// `MEMORY USAGE`): its filter (40 bytes), 16 per sub-filter, and the
    /// slots.
    pub(crate) fn redisbloom_bytes(&self) -> u64 {
        let slots = self
            .filters
            .iter()
            .fold(0u64, |sum, sub| sum.saturating_add(sub.table.len()));
        (40 + 16 * self.filters.len() as u64).saturating_add(slots)
    }

    /// Bytes this filter takes here (`MEMORY USAGE`): the filter, its list
    /// of sub-filters and each sub-filter's slots; RedisBloom's count
    /// ([`Cuckoo::redisbloom_bytes`]) on a 64-bit server.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let tables = (self.filters.iter())
            .map(|sub| sub.table.memory_bytes() as u64)
            .sum::<u64>();
        let lists =
            std::mem::size_of::<Cuckoo>() + self.filters.len() * std::mem::size_of::<SubFilter>();
        lists as u64 + tables
    }

    /// A copy (`COPY`); `None` without memory.
    pub(crate) fn try_clone(&self) -> Option<Cuckoo> {
        let mut filters = Gathered::with_room(self.filters.len())?;
        for sub in self.filters.iter() {
            filters.push(sub.table.try_clone()?);
        }
        Some(Cuckoo {
            filters: filters.into_list(),
            ..*self
        })
    }

    /// A load's placeholder for a key it holds no filter under
    /// (`redisbloom/unheld.rs`): no sub-filters, which every command takes
    /// for a missing key.
    pub(crate) fn placeholder() -> Cuckoo {
        Cuckoo {
            items: 0,
            deletes: 0,
            filters: Box::default(),
            bucket_size: 1,
            max_iterations: 1,
            expansion: 0,
        }
    }

    /// Whether this is a load's placeholder.
    pub(crate) fn is_placeholder(&self) -> bool {
        self.filters.is_empty()
    }

    /// `CF.DEBUG`'s line.
    pub(crate) fn debug_line(&self) -> String {
        format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            self.bucket_size,
            self.buckets(),
            self.items,
            self.deletes,
            self.filters.len(),
            self.max_iterations,
            self.expansion
        )
    }
}
