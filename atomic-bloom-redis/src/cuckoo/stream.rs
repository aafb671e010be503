//! A cuckoo filter as `CF.SCANDUMP` streams it and `CF.LOADCHUNK` takes it
//! back, RedisBloom's way: iterator 0 gives `[1, header]`; an iterator past
//! it gives the sub-filter holding byte `iterator - 1` of the sub-filters'
//! bytes laid end to end: the whole sub-filter when it is at most 16 MiB
//! (wherever in it the iterator points), else the next 16 MiB (or the rest)
//! from that byte, with the iterator moved past what it gave; `[0, nil]`
//! ends, and is all an empty filter (no items) gives. `CF.LOADCHUNK key
//! iterator data` writes `data` so that it ends at byte `iterator - 1`,
//! inside one sub-filter.
//!
//! The header is RedisBloom's packed little-endian `CFHeader`, 38 bytes:
//! items, buckets, deletes, sub-filters (u64 each), bucket size, max
//! iterations, expansion (u16 each).

use super::config::Bounds;
use super::table::Table;
use super::{buckets_at, CreateError, Cuckoo, Fields, Gathered, MAX_BUCKETS};

/// Bytes of the header.
pub(crate) const HEADER_BYTES: usize = 38;
/// Most bytes a `CF.SCANDUMP` reply carries (RedisBloom's
/// `MAX_SCANDUMP_SIZE`).
pub(crate) const PIECE_BYTES: u64 = 16 << 20;

impl Cuckoo {
    /// The header `CF.SCANDUMP key 0` gives.
    pub(crate) fn header(&self) -> [u8; HEADER_BYTES] {
        let mut out = [0u8; HEADER_BYTES];
        out[0..8].copy_from_slice(&self.items.to_le_bytes());
        out[8..16].copy_from_slice(&self.buckets().to_le_bytes());
        out[16..24].copy_from_slice(&self.deletes.to_le_bytes());
        out[24..32].copy_from_slice(&(self.filters.len() as u64).to_le_bytes());
        out[32..34].copy_from_slice(&self.bucket_size.to_le_bytes());
        out[34..36].copy_from_slice(&self.max_iterations.to_le_bytes());
        out[36..38].copy_from_slice(&self.expansion.to_le_bytes());
        out
    }

    /// A filter with empty slots from a header, checked as RedisBloom
    /// checks one (`bounds`: the configs' ranges now) before anything is
    /// allocated: the number of sub-filters is read as RedisBloom's 16-bit
    /// field reads it (modulo 2^16), the first sub-filter's buckets must be
    /// a power of two below 2^56, and each sub-filter's buckets
    /// (`buckets · expansion^i`) must stay below 2^56.
    ///
    /// # Errors
    ///
    /// [`CreateError::Invalid`] for a header RedisBloom would refuse (or
    /// whose sizes overflow), [`CreateError::OverLimit`] when its filter
    /// would pass `cap` bytes, [`CreateError::OutOfMemory`] when the slots
    /// cannot be had.
    pub(crate) fn from_header(
        bytes: &[u8],
        bounds: &Bounds,
        cap: Option<u64>,
    ) -> Result<Cuckoo, CreateError> {
        let bytes: &[u8; HEADER_BYTES] = bytes.try_into().map_err(|_| CreateError::Invalid)?;
        let u64_at =
            |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
        let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let filters = u64_at(24) as u16;
        let first = u64_at(8);
        let fields = Fields {
            bucket_size: u16_at(32),
            max_iterations: u16_at(34),
            expansion: u16_at(36),
        };
        let valid = bounds.bucket_size.contains(&i64::from(fields.bucket_size))
            && filters >= 1
            && (1..=65535).contains(&fields.max_iterations)
            && fields.expansion <= 32768
            && !(fields.expansion == 0 && filters > 1)
            && first != 0
            && first <= MAX_BUCKETS
            && first.is_power_of_two();
        if !valid {
            return Err(CreateError::Invalid);
        }
        let size = u64::from(fields.bucket_size);
        let mut sizes = Vec::new();
        sizes
            .try_reserve_exact(usize::from(filters))
            .map_err(|_| CreateError::OutOfMemory)?;
        let mut total = 40 + 16 * u64::from(filters);
        for index in 0..usize::from(filters) {
            let buckets = buckets_at(first, fields.expansion, index).ok_or(CreateError::Invalid)?;
            let bytes = buckets.checked_mul(size).ok_or(CreateError::Invalid)?;
            total = total.saturating_add(bytes);
            sizes.push(bytes);
        }
        if cap.is_some_and(|cap| total > cap) {
            return Err(CreateError::OverLimit);
        }
        let mut gathered = Gathered::with_room(sizes.len()).ok_or(CreateError::OutOfMemory)?;
        for (index, bytes) in sizes.into_iter().enumerate() {
            let buckets = bytes / size;
            debug_assert_eq!(Some(buckets), buckets_at(first, fields.expansion, index));
            let table =
                Table::zeroed(buckets, fields.bucket_size).ok_or(CreateError::OutOfMemory)?;
            gathered.push(table);
        }
        let cuckoo = Cuckoo::assemble(u64_at(0), u64_at(16), fields, gathered);
        if cap.is_some_and(|cap| cuckoo.memory_bytes() > cap) {
            return Err(CreateError::OverLimit);
        }
        Ok(cuckoo)
    }

    /// The sub-filter holding byte `offset` of the sub-filters' bytes laid
    /// end to end and the offset inside it; past the end, RedisBloom's walk
    /// ends on the last sub-filter with what is left of the offset.
    fn piece_at(&self, mut offset: u64) -> (usize, u64, bool) {
        for (index, sub) in self.filters().iter().enumerate() {
            let bytes = sub.table.len();
            if offset < bytes {
                return (index, offset, true);
            }
            offset -= bytes;
        }
        (self.filters().len().saturating_sub(1), offset, false)
    }

    /// The reply to `CF.SCANDUMP key iterator` (an iterator of 0 or more);
    /// a piece's bytes go to `out` (kept from call to call: a dump's 16 MiB
    /// pieces then reuse one buffer).
    pub(crate) fn scan_dump(&self, iterator: i64, out: &mut Vec<u8>) -> Scanned {
        match iterator {
            _ if self.items == 0 => Scanned::End,
            0 => Scanned::Header(self.header()),
            _ => self.pieces_from(iterator, out),
        }
    }

    /// Where the piece at `iterator` (1 or more) lies: its sub-filter, the
    /// offset in it and its length; `None` past the end.
    fn piece_range(&self, iterator: i64) -> Option<(usize, u64, u64)> {
        let offset = u64::try_from(iterator - 1).ok()?;
        let (index, offset, inside) = self.piece_at(offset);
        if !inside {
            return None;
        }
        let size = self.filters()[index].table.len();
        Some(if size <= PIECE_BYTES {
            (index, 0, size)
        } else {
            (index, offset, (size - offset).min(PIECE_BYTES))
        })
    }

    /// The piece at `iterator` (1 or more), whatever the number of items,
    /// its bytes into `out`: one piece's work. A buffer the allocator
    /// refuses is [`Scanned::NoMemory`], never an abort.
    pub(crate) fn pieces_from(&self, iterator: i64, out: &mut Vec<u8>) -> Scanned {
        let Some((index, from, length)) = self.piece_range(iterator) else {
            return Scanned::End;
        };
        out.clear();
        if out.try_reserve_exact(length as usize).is_err() {
            return Scanned::NoMemory;
        }
        out.resize(length as usize, 0);
        self.filters()[index].table.read(from, out);
        Scanned::Piece(iterator.saturating_add(length as i64))
    }

    /// The piece at `iterator` (1 or more) as it lies in its sub-filter,
    /// not copied (the AOF rewrite's walk).
    pub(crate) fn piece_in_place(&self, iterator: i64) -> Option<(i64, &[u8])> {
        let (index, from, length) = self.piece_range(iterator)?;
        let bytes = self.filters()[index].table.bytes();
        Some((
            iterator.saturating_add(length as i64),
            &bytes[from as usize..(from + length) as usize],
        ))
    }

    /// Writes a piece that `CF.SCANDUMP` gave with `iterator` (the iterator
    /// after it); false where RedisBloom refuses it ("Couldn't load
    /// chunk!"): empty, an iterator at or below its length, or bytes that
    /// would not fit in the one sub-filter where they start. (A piece that
    /// starts past the last sub-filter's end goes, as in RedisBloom, into
    /// the last sub-filter at what is left of its offset, if it fits.)
    pub(crate) fn load_piece(&mut self, iterator: i64, piece: &[u8]) -> bool {
        let length = piece.len() as u64;
        if piece.is_empty() || iterator <= 0 || ((iterator - 1) as u64) < length {
            return false;
        }
        let (index, offset, _) = self.piece_at((iterator - 1) as u64 - length);
        let Some(sub) = self.filters.get_mut(index) else {
            return false;
        };
        let fits = offset
            .checked_add(length)
            .is_some_and(|end| end <= sub.table.len());
        if !fits {
            return false;
        }
        sub.table.write(offset, piece);
        true
    }
}

/// What `CF.SCANDUMP` answers.
pub(crate) enum Scanned {
    /// `[0, nil]`.
    End,
    /// `[1, header]`.
    Header([u8; HEADER_BYTES]),
    /// `[next, the bytes put in the caller's buffer]`.
    Piece(i64),
    /// No memory for the piece's buffer.
    NoMemory,
}
