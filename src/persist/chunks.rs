//! The saved format in pieces, each made when asked for: what a server's
//! `BF.SCANDUMP` hands out a chunk at a time, at any offset, without
//! serializing the filter from its start and without a copy of it.
//!
//! A saved filter is a list of segments: the header with its checksum,
//! fields, bit arrays in pages (each page followed by its own checksum),
//! and the body's checksum, which covers the fields only (format version
//! 4). A byte of a page depends on that page alone, and the body's
//! checksum on the fields alone: a piece from any offset costs its own
//! bytes, at most one page around them, and the fields.

use crate::bits::BitArray;
use crate::wire::{page_checksum_seed, PAGE_BYTES};

/// Where a save in pieces stands: the bytes written so far. Start with
/// `SaveCursor::default()` (or [`SaveCursor::at`] an offset); hand the same
/// cursor to each call.
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, SaveCursor};
///
/// let f: BloomFilter<str> = BloomFilter::builder(10_000, 0.01).seed(3).build()?;
/// f.insert("a");
/// let mut cursor = SaveCursor::default();
/// let mut pieces = Vec::new();
/// loop {
///     let piece = f.write_chunk(&mut cursor, 4096);
///     if piece.is_empty() {
///         break;
///     }
///     pieces.extend(piece);
/// }
/// let mut whole = Vec::new();
/// f.write_to(&mut whole)?;
/// assert_eq!(pieces, whole);
/// assert_eq!(cursor.offset(), f.saved_len());
/// // Any piece, made from its offset alone.
/// assert_eq!(f.write_chunk(&mut SaveCursor::at(100), 50), whole[100..150]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveCursor {
    offset: u64,
    /// The checksum of the bytes of the page the cursor is in that earlier
    /// pieces held: a page cut across two pieces gets the checksum of the
    /// bytes handed out, even if inserts changed it in between.
    page_crc: Option<u32>,
    /// The body's checksum over the fields earlier pieces held, when they
    /// held every field so far (a cursor from the start): the checksum
    /// then matches the fields handed out, even if they changed since.
    body_crc: Option<u32>,
    /// The parts (a scalable filter's stages) the first piece counted: a
    /// stage appended later is not in this save, so that the pieces keep
    /// the shape their first piece announced.
    parts: Option<usize>,
}

impl Default for SaveCursor {
    fn default() -> Self {
        SaveCursor::at(0)
    }
}

impl SaveCursor {
    /// A cursor at `offset` bytes into the save: the next piece starts
    /// there, and costs what a piece from the start costs.
    pub fn at(offset: u64) -> SaveCursor {
        SaveCursor {
            offset,
            page_crc: None,
            body_crc: (offset == 0).then_some(0),
            parts: None,
        }
    }

    /// Bytes written so far: where the next piece starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The parts a save holds: those of its first piece (`now` when this
    /// is the first piece or the cursor did not see it), fixed from then on.
    pub(crate) fn parts(&mut self, now: usize) -> usize {
        (*self.parts.get_or_insert(now)).min(now)
    }
}

/// One part of a saved filter.
pub(crate) enum Segment<'a> {
    /// The header and its checksum: outside the body's checksum.
    Header(Vec<u8>),
    /// Fields of the body.
    Fields(Vec<u8>),
    /// A bit array's blocks, in pages, each followed by its checksum.
    Bits(&'a BitArray),
    /// The body's checksum: of its fields.
    BodyChecksum,
}

impl Segment<'_> {
    fn len(&self) -> u64 {
        match self {
            Segment::Header(bytes) | Segment::Fields(bytes) => bytes.len() as u64,
            Segment::Bits(bits) => bits.memory_bytes() as u64 + 4 * bits.page_count() as u64,
            Segment::BodyChecksum => 4,
        }
    }
}

/// Bytes of the whole of `segments`.
pub(crate) fn total_len(segments: &[Segment<'_>]) -> u64 {
    segments.iter().map(Segment::len).sum()
}

/// Appends up to `max` bytes of `segments` from `cursor` on to `out`; the
/// cursor moves past them. Appends nothing once the cursor is at the end.
///
/// `out` grows once, to the piece's size: a server's 16 MiB chunk is
/// neither grown by doubling nor copied again, and a buffer handed back
/// call after call keeps its pages.
pub(crate) fn append_chunk(
    segments: &[Segment<'_>],
    cursor: &mut SaveCursor,
    max: usize,
    out: &mut Vec<u8>,
) {
    let left = total_len(segments).saturating_sub(cursor.offset);
    out.reserve(usize::try_from(left).map_or(max, |left| left.min(max)));
    let base = out.len();
    let mut start = 0u64;
    for segment in segments {
        let end = start + segment.len();
        while out.len() - base < max && cursor.offset >= start && cursor.offset < end {
            let within = cursor.offset - start;
            let room = max - (out.len() - base);
            let piece_start = out.len();
            match segment {
                Segment::Header(bytes) => {
                    let within = within as usize;
                    out.extend_from_slice(&bytes[within..bytes.len().min(within + room)]);
                }
                Segment::Fields(bytes) => {
                    let within = within as usize;
                    let piece = &bytes[within..bytes.len().min(within + room)];
                    out.extend_from_slice(piece);
                    cursor.body_crc = cursor.body_crc.map(|crc| crc32c::crc32c_append(crc, piece));
                }
                Segment::Bits(bits) => {
                    cursor.page_crc = Some(page_piece(bits, within, room, cursor.page_crc, out));
                }
                Segment::BodyChecksum => {
                    let crc = cursor
                        .body_crc
                        .unwrap_or_else(|| body_checksum(segments))
                        .to_le_bytes();
                    let within = within as usize;
                    out.extend_from_slice(&crc[within..4.min(within + room)]);
                }
            }
            cursor.offset += (out.len() - piece_start) as u64;
        }
        start = end;
    }
}

/// The body's checksum: of every field, in order (pages carry their own).
fn body_checksum(segments: &[Segment<'_>]) -> u32 {
    segments.iter().fold(0, |crc, segment| match segment {
        Segment::Fields(bytes) => crc32c::crc32c_append(crc, bytes),
        _ => crc,
    })
}

/// Appends up to `room` bytes of `bits`' pages from `within` (an offset
/// into the segment) on, to the end of the page it falls in and its
/// checksum at most; returns the checksum of the page's bytes handed out so
/// far. `carried`: that checksum for the bytes before `within`, from the
/// piece that handed them out; without it, the page as it is now.
///
/// A page the piece holds whole, as all but the first and last of a
/// dump's chunk do, is encoded straight into `out` (each block read once)
/// and checksummed there: one pass over its bytes, no copy.
fn page_piece(
    bits: &BitArray,
    within: u64,
    room: usize,
    carried: Option<u32>,
    out: &mut Vec<u8>,
) -> u32 {
    let stride = PAGE_BYTES as u64 + 4;
    let page = (within / stride) as usize;
    let inner = (within % stride) as usize;
    let page_len = bits
        .memory_bytes()
        .saturating_sub(page * PAGE_BYTES)
        .min(PAGE_BYTES);
    let start = inner.min(page_len);
    let bytes_end = (inner + room).min(page_len).max(start);
    let seed = page_checksum_seed(page);
    let crc = if start == 0 && bytes_end == page_len {
        let base = out.len();
        bits.encode_page(page, out);
        crc32c::crc32c_append(seed, &out[base..])
    } else {
        let mut encoded = Vec::with_capacity(page_len);
        bits.encode_page(page, &mut encoded);
        let prefix = match (inner, carried) {
            (0, _) => seed,
            (_, Some(crc)) => crc,
            (_, None) => crc32c::crc32c_append(seed, &encoded[..start]),
        };
        out.extend_from_slice(&encoded[start..bytes_end]);
        crc32c::crc32c_append(prefix, &encoded[start..bytes_end])
    };
    if inner + room > page_len {
        let from = inner.saturating_sub(page_len);
        let to = (inner + room - page_len).min(4);
        out.extend_from_slice(&crc.to_le_bytes()[from..to]);
    }
    crc
}

#[cfg(test)]
mod tests {
    use crate::block::PAGES_ENCODED;
    use crate::{BloomFilter, SaveCursor};

    fn pages_encoded() -> usize {
        PAGES_ENCODED.with(std::cell::Cell::get)
    }

    /// A piece from any offset costs its own pages, not the bytes before
    /// it (a `BF.SCANDUMP` at the last iterator of a large filter): at most
    /// the page it starts in and the pages it covers.
    #[test]
    fn a_piece_anywhere_encodes_only_its_pages() {
        // 64 MiB of bits: 1,024 pages.
        let filter: BloomFilter<u64> = BloomFilter::builder(50_000_000, 0.01)
            .seed(1)
            .build()
            .unwrap();
        (0..1000u64).for_each(|item| {
            filter.insert(&item);
        });
        let total = filter.saved_len();
        assert!(total > 60 << 20);
        let mut whole = Vec::new();
        filter.write_to(&mut whole).unwrap();
        for (offset, length) in [
            (total - 100, 1000),
            (total / 2 + 12_345, 200_000),
            (0, 10),
            (30, 65_600),
        ] {
            let before = pages_encoded();
            let piece = filter.write_chunk(&mut SaveCursor::at(offset), length);
            let end = (offset + length as u64).min(total) as usize;
            assert_eq!(piece, whole[offset as usize..end], "at {offset}");
            let pages = pages_encoded() - before;
            assert!(
                pages <= 2 + length / (64 << 10),
                "at {offset}: {pages} pages encoded"
            );
        }
        // A whole save in 16 MiB pieces encodes each page once, and the
        // page cut at each piece's end once more.
        let before = pages_encoded();
        let mut cursor = SaveCursor::default();
        let mut joined = Vec::new();
        loop {
            let piece = filter.write_chunk(&mut cursor, 16 << 20);
            if piece.is_empty() {
                break;
            }
            joined.extend(piece);
        }
        assert!(joined == whole);
        assert!(pages_encoded() - before <= 1024 + 8);
    }
}
