//! `BF.SCANDUMP` and `BF.LOADCHUNK`: a key's record (`record/`) cut into
//! chunks, and put back together.
//!
//! The iterator is RedisBloom's: `BF.SCANDUMP key 0` starts, every reply is
//! `[next, chunk]`, `[0, ""]` ends, and `BF.LOADCHUNK key next chunk` takes
//! the pairs back in order, so every client loop written for RedisBloom
//! works. Here `next` carries the dump's number in bits 48 to 52 and, in
//! its low 48 bits, one more than the record bytes dumped so far, so a
//! chunk's offset in the record is `(next & (2^48 - 1)) - 1 - len(chunk)`.
//! The number tells apart two dumps of one key that stand at the same
//! offset (each goes on with the stages and checksums its own first chunk
//! announced); an iterator without one (0 in those bits: a dump of an
//! earlier release, an AOF's chunks) names a place alone.
//!
//! Loading allocates only what the chunks deliver: the first chunk's
//! envelope says how long the record is, the chunks are appended as they
//! arrive (each must start where the last ended), and only the complete
//! record is parsed, with the envelope's and the filter's checksums, into
//! a filter. Until then the key holds the bytes received; a record that
//! does not parse is dropped with an error, so a flipped bit never loads.
//!
//! The record's bits go out in pages with a checksum each (FORMAT.md): a
//! whole dump runs at about 0.87x RedisBloom's bytes per second (a chunk
//! costs 4.6 ms here against its 2.1 ms, which copies its bits as they
//! are), and that price is accepted for
//! a chunk that can be made at any offset and is checked on load.

use std::cell::RefCell;

use atomic_bloom::SaveCursor;

use crate::filter::{Bloom, NO_MEMORY, OVER_LIMIT};
use crate::record::{Envelope, RecordError, ENVELOPE_BYTES, MAGIC};

/// Record bytes per `BF.SCANDUMP` reply (RedisBloom's chunk limit).
pub(crate) const CHUNK_BYTES: usize = 16 << 20;

/// The most small `BF.LOADCHUNK` chunks are gathered into before a new
/// piece is started.
const PIECE_BYTES: usize = 64 << 10;

/// What a loaded key remembers of dumps: where the last `BF.SCANDUMP`
/// chunk ended, and the chunk whose `BF.LOADCHUNK` completed it.
#[derive(Default)]
pub(crate) struct DumpState {
    /// Where the last few `BF.SCANDUMP` calls began and ended (most recent
    /// first), each with what its dump announced (the stages its header
    /// counted) and the checksum of the page it cut: the next chunk, a
    /// chunk asked for again after a lost reply, or another client's dump
    /// at its own place, goes on from the dump it belongs to even if adds
    /// changed the filter in between. Commands run one at a time on the
    /// server's main thread.
    cursors: RefCell<Vec<(u16, SaveCursor)>>,
    /// The number the last dump begun was given (1 to [`DUMP_NUMBERS`]).
    last_number: std::cell::Cell<u16>,
    /// The chunk whose `BF.LOADCHUNK` completed this filter, if one did: a
    /// retry of it (its reply lost) is answered `OK` again.
    pub(crate) last_chunk: Option<SentChunk>,
}

/// Dump cursors a key keeps: enough for a client's retry and a few dumps
/// at once.
const CURSORS_KEPT: usize = 32;

/// Bytes of the filter's record in the reply to iterator 0, after the
/// envelope: RedisBloom's header reply is longer than an envelope, and its
/// tests (and so its users' code) corrupt bytes of it up to the 80th.
const HEADER_REPLY_FILTER_BYTES: usize = 64;

/// Dump numbers go round from 1 to this (5 bits of the iterator): every
/// iterator stays below 2^53, so clients that hold integers as doubles
/// (Lua scripts, JavaScript) send it back exactly.
const DUMP_NUMBERS: u16 = (1 << 5) - 1;

/// The iterator's low bits: one more than the bytes dumped so far.
const POSITION_BITS: u32 = 48;

/// An iterator of dump `number` whose chunk ended `position - 1` bytes
/// into the record.
fn iterator(number: u16, position: u64) -> Option<i64> {
    (position < 1 << POSITION_BITS).then(|| (i64::from(number) << POSITION_BITS) | position as i64)
}

/// The dump number and position an iterator carries.
fn split_iterator(next: u64) -> (u16, u64) {
    (
        ((next >> POSITION_BITS) as u16) & DUMP_NUMBERS,
        next & ((1 << POSITION_BITS) - 1),
    )
}

impl DumpState {
    /// A copy of the cursor of dump `number` kept at `offset`, if one is
    /// (kept for the next chunk, or a retry).
    fn cursor_at(&self, number: u16, offset: u64) -> Option<SaveCursor> {
        self.cursors
            .borrow()
            .iter()
            .find(|(kept, cursor)| *kept == number && cursor.offset() == offset)
            .map(|(_, cursor)| cursor.clone())
    }

    /// Keeps `cursor` of dump `number` first, in place of one of the same
    /// dump at the same offset.
    fn remember(&self, number: u16, cursor: SaveCursor) {
        let mut cursors = self.cursors.borrow_mut();
        cursors.retain(|(kept, at)| *kept != number || at.offset() != cursor.offset());
        cursors.insert(0, (number, cursor));
        cursors.truncate(CURSORS_KEPT);
    }

    /// A number for a dump that begins.
    fn new_dump(&self) -> u16 {
        let number = self.last_number.get() % DUMP_NUMBERS + 1;
        self.last_number.set(number);
        number
    }
}

/// The chunks of a record received so far: a large chunk held as it came,
/// small ones gathered into pieces of up to [`PIECE_BYTES`]. Memory grows
/// by what each chunk delivers (at most twice a piece's bytes, not an
/// allocation and a slot per chunk, whatever the chunks' size), and
/// nothing large is copied to make room (a contiguous buffer needs twice
/// the record at its last growth where the server has no `TryRealloc`).
pub(crate) struct Pending {
    /// Bytes of the whole record, as its envelope says.
    total: u64,
    received: Vec<Vec<u8>>,
    /// Bytes in `received`.
    received_bytes: u64,
    /// The last chunk taken: a client that lost the reply sends it again.
    last: Option<SentChunk>,
}

/// A chunk as `BF.LOADCHUNK` took it: its iterator and checksum. The same
/// chunk sent again (a retry after a lost reply) is taken as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SentChunk {
    next: i64,
    crc: u32,
}

impl SentChunk {
    pub(crate) fn of(next: i64, chunk: &[u8]) -> Self {
        SentChunk {
            next,
            crc: crc32c::crc32c(chunk),
        }
    }
}

/// Why a chunk was refused: RedisBloom's three error replies.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChunkError {
    /// "ERR received bad data": not a record, or one that did not parse.
    BadData,
    /// "ERR invalid offset - no link found": the chunk does not start where
    /// the received bytes end.
    InvalidOffset,
    /// "ERR invalid chunk - Too big for current filter": past the record's
    /// end.
    TooBig,
    /// The record would pass `bf-memory-limit-per-filter`.
    OverLimit,
    /// The allocator had no memory for the record or its filter: the
    /// key keeps what it had, and the same chunk may be sent again.
    OutOfMemory,
}

impl ChunkError {
    pub(crate) fn message(&self) -> &'static str {
        match self {
            ChunkError::BadData => "ERR received bad data",
            ChunkError::InvalidOffset => "ERR invalid offset - no link found",
            ChunkError::TooBig => "ERR invalid chunk - Too big for current filter",
            ChunkError::OverLimit => OVER_LIMIT,
            ChunkError::OutOfMemory => NO_MEMORY,
        }
    }
}

/// The position (one more than the record bytes before a chunk's end)
/// an iterator carries; the iterator itself if it is not positive.
pub(crate) fn position(next: i64) -> i64 {
    match u64::try_from(next) {
        Ok(next) if next > 0 => split_iterator(next).1 as i64,
        _ => next,
    }
}

/// The record offset of a chunk sent with iterator `next`.
fn chunk_offset(next: i64, chunk: &[u8]) -> Result<u64, ChunkError> {
    u64::try_from(next)
        .ok()
        .and_then(|next| split_iterator(next).1.checked_sub(1 + chunk.len() as u64))
        .ok_or(ChunkError::BadData)
}

/// The reply to `BF.SCANDUMP key iter`: the next iterator, its chunk made
/// in `chunk` (cleared first); 0 and nothing past the end (and for any
/// iterator that is not a position).
///
/// Iterator 0 answers the record's envelope (its 56 bytes) and the
/// filter's first [`HEADER_REPLY_FILTER_BYTES`] (the start of its own
/// header), O(1); every other call makes its chunk from its offset alone:
/// its bytes, at most one 64 KiB page of bits around them and the
/// filter's few fields (the saved format's pages carry their own
/// checksums), whatever the iterator: a dump chunk after chunk makes each
/// page once, and the page a chunk's end cuts twice.
pub(crate) fn scan_dump(bloom: &Bloom, state: &DumpState, iter: i64, chunk: &mut Vec<u8>) -> i64 {
    chunk.clear();
    let envelope = ENVELOPE_BYTES as u64;
    let (number, offset) = match iter {
        0 => {
            // The cursor counts the filter's stages now, as the envelope
            // does: stages a scaling filter adds during the dump are left
            // out of it, and the chunks still make the record announced.
            let number = state.new_dump();
            let mut cursor = SaveCursor::default();
            chunk.extend_from_slice(&bloom.envelope().encode());
            bloom.filter_chunk_to(&mut cursor, HEADER_REPLY_FILTER_BYTES, chunk);
            state.remember(number, cursor);
            return iterator(number, 1 + chunk.len() as u64).unwrap_or(0);
        }
        iter if iter > 0 => match split_iterator(iter as u64) {
            (number, position) if position > 0 => (number, position - 1),
            _ => return 0,
        },
        _ => return 0,
    };
    if offset < envelope {
        chunk.extend_from_slice(&bloom.envelope().encode()[offset as usize..]);
    }
    let filter_offset = offset.saturating_sub(envelope);
    let mut cursor = state
        .cursor_at(number, filter_offset)
        .unwrap_or_else(|| SaveCursor::at(filter_offset));
    bloom.filter_chunk_to(&mut cursor, CHUNK_BYTES - chunk.len(), chunk);
    if chunk.is_empty() {
        return 0;
    }
    state.remember(number, cursor);
    iterator(number, 1 + offset + chunk.len() as u64).unwrap_or_else(|| {
        chunk.clear();
        0
    })
}

/// Whether `chunk`, sent with iterator `next`, is the first chunk of one of
/// this module's records: for a key that does not exist, any other chunk
/// is RedisBloom's "ERR not found".
pub(crate) fn is_first_chunk(next: i64, chunk: &[u8]) -> bool {
    chunk_offset(next, chunk) == Ok(0) && chunk.starts_with(&MAGIC)
}

/// The first chunk of a record, for a key that does not exist: a
/// [`Pending`] to resume, or the record if the chunk held all of it. A
/// record whose filter would take more than `filter_cap` bytes is refused
/// before anything is held.
pub(crate) fn start(
    next: i64,
    chunk: &[u8],
    filter_cap: Option<usize>,
) -> Result<Result<Pending, (Bloom, DumpState)>, ChunkError> {
    if chunk_offset(next, chunk)? != 0 || chunk.len() < ENVELOPE_BYTES {
        return Err(ChunkError::BadData);
    }
    let envelope = Envelope::decode(chunk).map_err(|_| ChunkError::BadData)?;
    if filter_cap.is_some_and(|cap| envelope.filter_bytes > cap as u64) {
        return Err(ChunkError::OverLimit);
    }
    let mut pending = Pending {
        total: envelope.record_bytes(),
        received: Vec::new(),
        received_bytes: 0,
        last: None,
    };
    match pending.resume(next, chunk)? {
        Some(bloom) => Ok(Err(bloom)),
        None => Ok(Ok(pending)),
    }
}

impl Pending {
    /// Appends the chunk sent with iterator `next`; the record, parsed,
    /// once it is complete. On [`ChunkError::BadData`] for a complete
    /// record the key should go: its bytes will never parse.
    /// The last chunk sent again is taken as done (`Ok(None)`).
    pub(crate) fn resume(
        &mut self,
        next: i64,
        chunk: &[u8],
    ) -> Result<Option<(Bloom, DumpState)>, ChunkError> {
        let offset = chunk_offset(next, chunk)?;
        if self.last == Some(SentChunk::of(next, chunk)) {
            return Ok(None);
        }
        if offset != self.received_bytes {
            return Err(ChunkError::InvalidOffset);
        }
        if offset + chunk.len() as u64 > self.total {
            return Err(ChunkError::TooBig);
        }
        self.push(chunk)?;
        if self.received_bytes < self.total {
            self.last = Some(SentChunk::of(next, chunk));
            return Ok(None);
        }
        match Bloom::read_record(ChunkReader::new(&self.received)) {
            Ok(bloom) => Ok(Some((
                bloom,
                DumpState {
                    last_chunk: Some(SentChunk::of(next, chunk)),
                    ..DumpState::default()
                },
            ))),
            Err(RecordError::Filter(atomic_bloom::Error::AllocationFailed { .. })) => {
                // Not the record's fault: the key keeps the chunks before
                // this one, and the same chunk may come again.
                self.truncate(offset);
                Err(ChunkError::OutOfMemory)
            }
            Err(error) => {
                log_refused(&error);
                Err(ChunkError::BadData)
            }
        }
    }

    /// Holds a copy of `chunk`, or says the allocator had no room.
    fn push(&mut self, chunk: &[u8]) -> Result<(), ChunkError> {
        let out_of_memory = |_| ChunkError::OutOfMemory;
        match self.received.last_mut() {
            Some(last) if last.len() + chunk.len() <= PIECE_BYTES => {
                let needed = last.len() + chunk.len();
                if needed > last.capacity() {
                    let room = needed.max(2 * last.capacity()).min(PIECE_BYTES);
                    last.try_reserve_exact(room - last.len())
                        .map_err(out_of_memory)?;
                }
                last.extend_from_slice(chunk);
            }
            _ => {
                let mut held = Vec::new();
                held.try_reserve_exact(chunk.len()).map_err(out_of_memory)?;
                self.received.try_reserve(1).map_err(out_of_memory)?;
                held.extend_from_slice(chunk);
                self.received.push(held);
            }
        }
        self.received_bytes += chunk.len() as u64;
        Ok(())
    }

    /// Drops what was received past `offset` bytes.
    fn truncate(&mut self, offset: u64) {
        while self.received_bytes > offset {
            let Some(last) = self.received.last_mut() else {
                break;
            };
            let excess = (self.received_bytes - offset).min(last.len() as u64) as usize;
            last.truncate(last.len() - excess);
            self.received_bytes -= excess as u64;
            if last.is_empty() {
                self.received.pop();
            }
        }
    }

    /// Whether every chunk arrived (and the record did not parse).
    pub(crate) fn is_complete(&self) -> bool {
        self.received_bytes >= self.total
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.received.iter().map(Vec::capacity).sum::<usize>()
            + self.received.capacity() * std::mem::size_of::<Vec<u8>>()
    }

    /// The chunks received so far, in order: what an RDB file and an AOF
    /// keep of a key still loading (with [`total`](Self::total)).
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        self.received.iter().map(|chunk| &chunk[..])
    }

    /// Every byte received, in one buffer, or `None` when the allocator
    /// has no room for it.
    pub(crate) fn contiguous(&self) -> Option<Vec<u8>> {
        let mut whole = Vec::new();
        whole
            .try_reserve_exact(usize::try_from(self.received_bytes).ok()?)
            .ok()?;
        self.chunks()
            .for_each(|chunk| whole.extend_from_slice(chunk));
        Some(whole)
    }

    /// The envelope, which the first chunk holds whole.
    pub(crate) fn envelope_bytes(&self) -> &[u8] {
        self.received
            .first()
            .map_or(&[][..], |first| &first[..first.len().min(ENVELOPE_BYTES)])
    }

    /// The record's length, as its envelope says.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// A copy (`COPY`), or `None` when the allocator has no room.
    pub(crate) fn try_clone(&self) -> Option<Pending> {
        let mut copy = Pending {
            total: self.total,
            received: Vec::new(),
            received_bytes: 0,
            last: self.last,
        };
        for chunk in self.chunks() {
            copy.push(chunk).ok()?;
        }
        Some(copy)
    }

    /// A loading key read back from an RDB file, if its parts agree.
    /// A key whose record would take more than `filter_cap` bytes is
    /// refused (a client's `RESTORE`, as for a finished filter).
    pub(crate) fn from_parts(
        received: Vec<u8>,
        total: u64,
        filter_cap: Option<usize>,
    ) -> Option<Pending> {
        let envelope = Envelope::decode(&received).ok()?;
        let agrees = envelope.record_bytes() == total && (received.len() as u64) < total;
        let within = filter_cap.is_none_or(|cap| envelope.filter_bytes <= cap as u64);
        (agrees && within).then(|| Pending {
            total,
            received_bytes: received.len() as u64,
            received: vec![received],
            last: None,
        })
    }
}

/// The chunks of a [`Pending`], read as one record.
struct ChunkReader<'a> {
    chunks: &'a [Vec<u8>],
    /// Bytes of `chunks[0]` already read.
    at: usize,
}

impl<'a> ChunkReader<'a> {
    fn new(chunks: &'a [Vec<u8>]) -> Self {
        ChunkReader { chunks, at: 0 }
    }
}

impl std::io::Read for ChunkReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while let Some((first, rest)) = self.chunks.split_first() {
            let left = &first[self.at..];
            if left.is_empty() {
                self.chunks = rest;
                self.at = 0;
                continue;
            }
            let n = left.len().min(out.len());
            out[..n].copy_from_slice(&left[..n]);
            self.at += n;
            return Ok(n);
        }
        Ok(0)
    }
}

fn log_refused(error: &RecordError) {
    // Outside a server (the fuzz targets) there is no log.
    #[cfg(fuzzing)]
    let _ = error;
    #[cfg(not(fuzzing))]
    redis_module::logging::log_warning(format!(
        "atomic-bloom: BF.LOADCHUNK refused a dump: {error}"
    ));
}
