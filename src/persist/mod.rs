//! Saving and loading filters: the binary format of `FORMAT.md`.
//!
//! Every saved filter is a header (magic, format version, kind, hash scheme,
//! seed) with its own CRC-32C, a kind-specific body, and the body's CRC-32C.
//! All integers are little-endian and floats are IEEE-754 bits, so the bytes
//! are the same on every platform.
//!
//! The loader checks each field as it reads it, and never allocates ahead of
//! the bytes it has actually read: a header that claims a terabyte of bits
//! costs at most twice what the input really holds before it fails with
//! [`Error::Truncated`].

mod bloom;
mod codec;
mod counting;
mod file;
mod frontier;
mod scalable;
#[cfg(feature = "serde")]
mod serde;

pub use frontier::FrontierItem;

pub(crate) use file::{load, save};

pub(crate) use codec::{Decoder, Encoder, CHUNK_BYTES};

use std::io::{Read, Write};

use crate::sizing::BLOCK_BYTES;
use crate::Error;

/// The first eight bytes of every saved filter.
pub(crate) const MAGIC: [u8; 8] = *b"ATMBLOOM";

/// The format version this build writes, and the newest it reads.
pub(crate) const FORMAT_VERSION: u16 = 1;

/// The one hash scheme so far: wyhash 0.6 of the item's `Hash`, seeded with
/// the header's seed, positions derived as in `src/hash.rs`.
pub(crate) const HASH_SCHEME_WYHASH_V1: u8 = 1;

/// What a saved input holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bloom = 1,
    Counting = 2,
    Scalable = 3,
    Frontier = 4,
}

impl Kind {
    fn from_byte(byte: u8) -> Result<Kind, Error> {
        match byte {
            1 => Ok(Kind::Bloom),
            2 => Ok(Kind::Counting),
            3 => Ok(Kind::Scalable),
            4 => Ok(Kind::Frontier),
            found => Err(Error::UnknownKind { found }),
        }
    }

    fn type_name(self) -> &'static str {
        match self {
            Kind::Bloom => "BloomFilter",
            Kind::Counting => "CountingBloomFilter",
            Kind::Scalable => "ScalableBloomFilter",
            Kind::Frontier => "Frontier",
        }
    }
}

/// Writes the header of a `kind` filter whose hasher has `seed`, and starts
/// the body's checksum.
pub(crate) fn write_header<W: std::io::Write>(
    out: &mut Encoder<W>,
    kind: Kind,
    seed: u64,
) -> Result<(), Error> {
    out.bytes(&MAGIC)?;
    out.u16(FORMAT_VERSION)?;
    out.u8(kind as u8)?;
    out.u8(HASH_SCHEME_WYHASH_V1)?;
    out.u32(0)?;
    out.u64(seed)?;
    out.end_section()
}

/// Reads and checks a header; returns the seed. Magic and version come
/// first, so that another file or a newer format gets its own error rather
/// than a checksum mismatch.
pub(crate) fn read_header<R: std::io::Read>(
    input: &mut Decoder<R>,
    expected: Kind,
) -> Result<u64, Error> {
    input.begin_section("header");
    if input.array::<8>()? != MAGIC {
        return Err(Error::NotAFilter);
    }
    let version = input.u16()?;
    if version == 0 || version > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let kind = input.u8()?;
    let scheme = input.u8()?;
    let reserved = input.u32()?;
    let seed = input.u64()?;
    input.end_section()?;
    let kind = Kind::from_byte(kind)?;
    if kind != expected {
        return Err(Error::WrongKind {
            expected: expected.type_name(),
            found: kind.type_name(),
        });
    }
    if scheme != HASH_SCHEME_WYHASH_V1 {
        return Err(Error::UnsupportedHashScheme { found: scheme });
    }
    if reserved != 0 {
        return Err(Error::InvalidField {
            field: "reserved header bytes",
            value: u64::from(reserved),
        });
    }
    Ok(seed)
}

/// A filter that saves as a header and a body.
pub(crate) trait Saved: Sized {
    /// The kind byte of its header.
    const KIND: Kind;

    /// The seed of its hasher.
    fn seed(&self) -> u64;

    /// Writes the body (without its checksum).
    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error>;

    /// Reads a body (without its checksum) for a hasher seeded with `seed`.
    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error>;
}

/// Writes `value` whole: header, body, checksums; returns the output,
/// flushed.
pub(crate) fn write_to<V: Saved, W: Write>(value: &V, out: W) -> Result<W, Error> {
    let mut out = Encoder::new(out);
    write_header(&mut out, V::KIND, value.seed())?;
    value.write_body(&mut out)?;
    out.end_section()?;
    out.finish()
}

/// Reads a whole `V` and nothing after it from `input`.
pub(crate) fn read_from<V: Saved, R: Read>(input: R) -> Result<V, Error> {
    let mut input = Decoder::new(input);
    let seed = read_header(&mut input, V::KIND)?;
    input.begin_section("body");
    let value = V::read_body(&mut input, seed)?;
    input.end_section()?;
    Ok(value)
}

/// Grows `vec` toward `total` elements as input arrives: by at most as many
/// elements as it already holds (or `chunk`), and never past `total`, so
/// that the capacity stays within twice what was read plus one chunk, and
/// ends exactly at `total`.
pub(crate) fn reserve_as_read<E>(
    vec: &mut Vec<E>,
    total: usize,
    chunk: usize,
) -> Result<(), Error> {
    if vec.len() == vec.capacity() && vec.len() < total {
        let extra = (total - vec.len()).min(vec.len().max(chunk));
        vec.try_reserve_exact(extra)
            .map_err(|_| Error::AllocationFailed {
                bytes: extra.saturating_mul(std::mem::size_of::<E>()),
            })?;
    }
    Ok(())
}

/// Writes `blocks` through `encode`, which appends one block's 64 bytes to
/// the buffer and returns how many units (bits, non-zero counters) it holds
/// set; returns the total. Shared by the bit and counter arrays.
pub(crate) fn write_blocks<B, W: Write>(
    out: &mut Encoder<W>,
    blocks: &[B],
    mut encode: impl FnMut(&B, &mut Vec<u8>) -> usize,
) -> Result<u64, Error> {
    let mut buffer = Vec::with_capacity(CHUNK_BYTES);
    let mut total = 0u64;
    for block in blocks {
        total += encode(block, &mut buffer) as u64;
        if buffer.len() >= CHUNK_BYTES {
            out.bytes(&buffer)?;
            buffer.clear();
        }
    }
    out.bytes(&buffer)?;
    Ok(total)
}

/// Reads `blocks` 64-byte blocks that [`write_blocks`] wrote, a chunk at a
/// time, allocating only as the input delivers them. `decode` turns one
/// block's bytes into a block and its count of set units. Returns the
/// blocks and the total count.
pub(crate) fn read_blocks<B, R: Read>(
    blocks: usize,
    input: &mut Decoder<R>,
    mut decode: impl FnMut(&[u8]) -> (B, usize),
) -> Result<(Box<[B]>, u64), Error> {
    let bytes = blocks
        .checked_mul(BLOCK_BYTES)
        .ok_or(Error::LengthOverflow {
            field: "block count",
            value: blocks as u64,
        })?;
    let mut storage = Vec::new();
    let mut total = 0u64;
    input.chunks(bytes, |chunk| {
        for block_bytes in chunk.chunks_exact(BLOCK_BYTES) {
            reserve_as_read(&mut storage, blocks, CHUNK_BYTES / BLOCK_BYTES)?;
            let (block, used) = decode(block_bytes);
            total += used as u64;
            storage.push(block);
        }
        Ok(())
    })?;
    Ok((storage.into_boxed_slice(), total))
}

/// `value` as a `usize`, or [`Error::LengthOverflow`] naming `field`.
pub(crate) fn to_usize(value: u64, field: &'static str) -> Result<usize, Error> {
    usize::try_from(value)
        .ok()
        .filter(|&size| size <= isize::MAX as usize)
        .ok_or(Error::LengthOverflow { field, value })
}
