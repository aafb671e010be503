//! The saved format in pieces, each made when asked for: what a server's
//! `BF.SCANDUMP` hands out a chunk at a time, without serializing the filter
//! from its start for every chunk, and without a copy of it.
//!
//! A saved filter is a list of segments: the header with its checksum,
//! fields, bit arrays, each array's set-bit count, and the body's checksum.
//! A [`SaveCursor`] remembers where the last piece ended, the checksum of
//! the body bytes written so far and the set bits of the array being
//! written: the next piece starts there, so every byte is made once and
//! the whole costs one pass, as [`write_to`](crate::BloomFilter::write_to)
//! does.

use crate::bits::BitArray;
use crate::block::BLOCK_BYTES;

/// Where a save in pieces stands: the bytes written so far, the checksum
/// of the body bytes among them, and the set bits of the bit array being
/// written. Start with `SaveCursor::default()`; hand the same cursor to
/// each call.
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveCursor {
    offset: u64,
    body_crc: u32,
    set_bits: u64,
}

impl SaveCursor {
    /// Bytes written so far: where the next piece starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// One part of a saved filter.
pub(crate) enum Segment<'a> {
    /// The header and its checksum: outside the body's checksum.
    Header(Vec<u8>),
    /// Fields of the body.
    Fields(Vec<u8>),
    /// A bit array's blocks.
    Bits(&'a BitArray),
    /// The set bits of the bit array before it.
    SetBits,
    /// The body's checksum.
    BodyChecksum,
}

impl Segment<'_> {
    fn len(&self) -> u64 {
        match self {
            Segment::Header(bytes) | Segment::Fields(bytes) => bytes.len() as u64,
            Segment::Bits(bits) => bits.memory_bytes() as u64,
            Segment::SetBits => 8,
            Segment::BodyChecksum => 4,
        }
    }
}

/// Bytes of the whole of `segments`.
pub(crate) fn total_len(segments: &[Segment<'_>]) -> u64 {
    segments.iter().map(Segment::len).sum()
}

/// Up to `max` bytes of `segments` from `cursor` on; the cursor moves past
/// them. Empty once the cursor is at the end.
pub(crate) fn write_chunk(
    segments: &[Segment<'_>],
    cursor: &mut SaveCursor,
    max: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut start = 0u64;
    for segment in segments {
        let end = start + segment.len();
        while out.len() < max && cursor.offset >= start && cursor.offset < end {
            let within = (cursor.offset - start) as usize;
            let room = max - out.len();
            let piece_start = out.len();
            match segment {
                Segment::Header(bytes) | Segment::Fields(bytes) => {
                    out.extend_from_slice(&bytes[within..bytes.len().min(within + room)]);
                }
                Segment::Bits(bits) => {
                    if within == 0 {
                        cursor.set_bits = 0;
                    }
                    // The rest of the block `within` falls in, then whole
                    // blocks, cut to the window.
                    let (mut block, skip) = (within / BLOCK_BYTES, within % BLOCK_BYTES);
                    if skip != 0 {
                        let mut first = Vec::with_capacity(BLOCK_BYTES);
                        bits.encode_block(block, &mut first);
                        out.extend_from_slice(&first[skip..]);
                        block += 1;
                    }
                    while out.len() - piece_start < room && block < bits.num_blocks() {
                        bits.encode_block(block, &mut out);
                        block += 1;
                    }
                    out.truncate(piece_start + room);
                    cursor.set_bits += count_ones(&out[piece_start..]);
                }
                Segment::SetBits => {
                    out.extend_from_slice(
                        &cursor.set_bits.to_le_bytes()[within..8.min(within + room)],
                    );
                }
                Segment::BodyChecksum => {
                    out.extend_from_slice(
                        &cursor.body_crc.to_le_bytes()[within..4.min(within + room)],
                    );
                }
            }
            let piece = &out[piece_start..];
            if !matches!(segment, Segment::Header(_) | Segment::BodyChecksum) {
                cursor.body_crc = crc32c::crc32c_append(cursor.body_crc, piece);
            }
            cursor.offset += piece.len() as u64;
        }
        start = end;
    }
    out
}

/// The 1 bits in `bytes`, eight bytes at a time.
fn count_ones(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let whole: u64 = words
        .by_ref()
        .map(|word| u64::from(u64::from_le_bytes(word.try_into().unwrap_or_default()).count_ones()))
        .sum();
    whole
        + words
            .remainder()
            .iter()
            .map(|byte| u64::from(byte.count_ones()))
            .sum::<u64>()
}
