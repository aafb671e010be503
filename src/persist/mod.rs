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

/// The public `write_to`, `read_from`, `save` and `load` of a type that is
/// [`Saved`]: one definition for all four types. Each type gives its own
/// docs for `write_to` and `read_from` (what a concurrent save holds, what
/// can fail), its name, its name with a type argument, and an expression
/// that builds one, for the `save` and `load` examples.
macro_rules! saving_methods {
    (
        $(#[$impl_doc:meta])*
        impl[$($generics:tt)*] $ty:ty, $name:literal, $typed:literal, $make:literal {
            $(#[$write_doc:meta])* fn write_to;
            $(#[$read_doc:meta])* fn read_from;
        }
    ) => {
        $(#[$impl_doc])*
        impl<$($generics)*> $ty {
            $(#[$write_doc])*
            pub fn write_to<W: std::io::Write>(&self, out: W) -> Result<(), crate::Error> {
                crate::persist::write_to(self, out).map(drop)
            }

            $(#[$read_doc])*
            pub fn read_from<R: std::io::Read>(input: R) -> Result<Self, crate::Error> {
                crate::persist::read_from(input)
            }

            /// Saves to `path`, crash-safe: it writes a temporary file beside
            /// `path`, syncs it, renames it over `path` and syncs the
            /// directory, so a crash at any instant leaves the previous file
            /// or the new one, whole. What it holds is what
            /// [`write_to`](Self::write_to) writes.
            ///
            /// # Errors
            ///
            /// [`Error::Io`](crate::Error::Io) when the directory cannot be
            /// written.
            ///
            /// # Example
            ///
            /// ```
            #[doc = concat!("use atomic_bloom::", $name, ";")]
            ///
            #[doc = concat!("let path = std::env::temp_dir().join(format!(\"doc-", $name, "-{}.bin\", std::process::id()));")]
            #[doc = concat!("let saved = ", $make, ";")]
            /// saved.save(&path)?;
            #[doc = concat!("let loaded = ", $typed, "::load(&path)?;")]
            /// assert_eq!(format!("{loaded:?}"), format!("{saved:?}"));
            /// # std::fs::remove_file(&path)?;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<(), crate::Error> {
                crate::persist::save(self, path.as_ref())
            }

            /// Loads what [`save`](Self::save) wrote; the file must hold
            /// nothing after it.
            ///
            /// # Errors
            ///
            /// Those of [`read_from`](Self::read_from), and
            /// [`Error::TrailingBytes`](crate::Error::TrailingBytes).
            ///
            /// # Example
            ///
            /// ```
            #[doc = concat!("use atomic_bloom::{", $name, ", Error};")]
            ///
            #[doc = concat!("let missing = ", $typed, "::load(\"/no/such/file.bin\");")]
            /// assert!(matches!(missing, Err(Error::Io { .. })));
            /// ```
            pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self, crate::Error> {
                crate::persist::load(path.as_ref())
            }
        }
    };
}

/// The public `saved_len`, `write_chunk` and `write_chunk_to` of a type
/// that saves in pieces: one definition for the three filters that do.
/// Each type gives its own first lines of `saved_len`'s docs and its own
/// docs of `write_chunk` (what the pieces hold when inserts race them),
/// its name, and an expression that builds one with a seed, for the
/// examples; and two private methods the public ones call:
/// `chunked_len(&self) -> u64` (the bytes of a whole save now) and
/// `append_chunk(&self, &mut SaveCursor, usize, &mut Vec<u8>)` (the next
/// piece).
macro_rules! chunk_methods {
    (
        impl[$($generics:tt)*] $ty:ty, $name:literal, $make:literal {
            $(#[$len_doc:meta])* fn saved_len;
            $(#[$chunk_doc:meta])* fn write_chunk;
        }
    ) => {
        impl<$($generics)*> $ty {
            $(#[$len_doc])*
            ///
            /// # Example
            ///
            /// ```
            #[doc = concat!("let f: atomic_bloom::", $name, "<u64> = atomic_bloom::", $make, ";")]
            /// let mut bytes = Vec::new();
            /// f.write_to(&mut bytes)?;
            /// assert_eq!(bytes.len() as u64, f.saved_len());
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn saved_len(&self) -> u64 {
                self.chunked_len()
            }

            $(#[$chunk_doc])*
            pub fn write_chunk(
                &self,
                cursor: &mut crate::persist::SaveCursor,
                max: usize,
            ) -> Vec<u8> {
                let mut out = Vec::new();
                self.write_chunk_to(cursor, max, &mut out);
                out
            }

            /// As [`write_chunk`](Self::write_chunk), appending the piece to `out`
            /// instead: a server handing out chunk after chunk reuses one buffer,
            /// whose memory is already mapped, instead of a fresh allocation each
            /// time.
            ///
            /// # Example
            ///
            /// ```
            #[doc = concat!("use atomic_bloom::{", $name, ", SaveCursor};")]
            ///
            #[doc = concat!("let f: ", $name, "<u64> = atomic_bloom::", $make, ";")]
            /// f.insert(&7);
            /// let (mut cursor, mut buffer, mut whole) = (SaveCursor::default(), Vec::new(), Vec::new());
            /// loop {
            ///     buffer.clear(); // its capacity stays
            ///     f.write_chunk_to(&mut cursor, 4096, &mut buffer);
            ///     if buffer.is_empty() {
            ///         break;
            ///     }
            ///     whole.extend_from_slice(&buffer);
            /// }
            /// assert_eq!(whole.len() as u64, f.saved_len());
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn write_chunk_to(
                &self,
                cursor: &mut crate::persist::SaveCursor,
                max: usize,
                out: &mut Vec<u8>,
            ) {
                self.append_chunk(cursor, max, out)
            }
        }
    };
}

mod bloom;
mod chunks;
mod counting;
mod cuckoo;
mod file;
mod frontier;
mod scalable;
#[cfg(feature = "serde")]
mod serde;
mod windowed;

pub use chunks::SaveCursor;
pub use frontier::FrontierItem;

pub(crate) use file::{load, save};

pub(crate) use crate::wire::{reserve_as_read, to_usize, Decoder, Encoder};

use std::io::{Read, Write};

use crate::sizing::Scheme;
use crate::{Error, Layout, Sizing};

/// The first eight bytes of every saved filter.
pub(crate) const MAGIC: [u8; 8] = *b"ATMBLOOM";

/// The format version this build writes, and the newest it reads.
/// Version 4 writes bit arrays in pages, each with its own checksum, and
/// no set-bit count. Version 3 stores each array's sizing and lines per block (and knows the
/// compact layout); version 2 stored the scalable filter's growth factor in
/// 32 bits and no longer stored a first-stage fill. Versions 1 and 2 still
/// load.
pub(crate) const FORMAT_VERSION: u16 = 4;

/// The one hash scheme so far: wyhash 0.6 of the item's `Hash`, seeded with
/// the header's seed, positions derived as in `src/hash.rs`.
pub(crate) const HASH_SCHEME_WYHASH_V1: u8 = 1;

/// What a layout byte names: the kind of array and the layout of its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    Bits(Layout),
    Counters,
}

impl Stored {
    /// The byte that stores it in every section.
    pub(crate) fn byte(self) -> u8 {
        match self {
            Stored::Bits(Layout::CacheLine) => 0,
            Stored::Bits(Layout::Word) => 1,
            Stored::Counters => 2,
            Stored::Bits(Layout::Compact) => 3,
        }
    }

    pub(crate) fn of(scheme: Scheme) -> Self {
        scheme.layout().map_or(Stored::Counters, Stored::Bits)
    }

    /// What `byte` stores, if it is one of `allowed` and the input's
    /// version knows it (the compact layout came with version 3).
    pub(crate) fn from_byte<R: Read>(
        byte: u8,
        allowed: &[Stored],
        input: &Decoder<R>,
    ) -> Result<Self, Error> {
        allowed
            .iter()
            .copied()
            .filter(|&stored| input.version() >= 3 || stored != Stored::Bits(Layout::Compact))
            .find(|&stored| stored.byte() == byte)
            .ok_or(Error::InvalidField {
                field: "layout",
                value: u64::from(byte),
            })
    }
}

/// Every layout of a bit array.
pub(crate) const BIT_LAYOUTS: [Stored; 3] = [
    Stored::Bits(Layout::CacheLine),
    Stored::Bits(Layout::Word),
    Stored::Bits(Layout::Compact),
];

/// The byte that stores a sizing (version 3 on).
pub(crate) fn sizing_byte(sizing: Sizing) -> u8 {
    match sizing {
        Sizing::PowerOfTwo => 0,
        Sizing::Exact => 1,
    }
}

/// Reads a sizing byte; inputs older than version 3 were all power-of-two.
pub(crate) fn read_sizing<R: Read>(input: &mut Decoder<R>) -> Result<Sizing, Error> {
    if input.version() < 3 {
        return Ok(Sizing::PowerOfTwo);
    }
    match input.u8()? {
        0 => Ok(Sizing::PowerOfTwo),
        1 => Ok(Sizing::Exact),
        other => Err(Error::InvalidField {
            field: "sizing",
            value: u64::from(other),
        }),
    }
}

/// What a saved input holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bloom = 1,
    Counting = 2,
    Scalable = 3,
    Frontier = 4,
    Windowed = 5,
    Cuckoo = 6,
}

impl Kind {
    fn from_byte(byte: u8) -> Result<Kind, Error> {
        match byte {
            1 => Ok(Kind::Bloom),
            2 => Ok(Kind::Counting),
            3 => Ok(Kind::Scalable),
            4 => Ok(Kind::Frontier),
            5 => Ok(Kind::Windowed),
            6 => Ok(Kind::Cuckoo),
            found => Err(Error::UnknownKind { found }),
        }
    }

    fn type_name(self) -> &'static str {
        match self {
            Kind::Bloom => "BloomFilter",
            Kind::Counting => "CountingBloomFilter",
            Kind::Scalable => "ScalableBloomFilter",
            Kind::Frontier => "Frontier",
            Kind::Windowed => "WindowedBloomFilter",
            Kind::Cuckoo => "CuckooFilter",
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

/// Reads and checks a header; returns the seed. The magic comes first, so
/// that another file gets its own error; then the checksum, so that a
/// damaged header is called damaged whatever its bytes now say; then the
/// version (its layout is the same in every version, so a newer format's
/// header passes its checksum and gets its own error), kind, scheme and
/// reserved bytes.
pub(crate) fn read_header<R: std::io::Read>(
    input: &mut Decoder<R>,
    expected: Kind,
) -> Result<u64, Error> {
    input.begin_section("header");
    if input.array::<8>()? != MAGIC {
        return Err(Error::NotAFilter);
    }
    let version = input.u16()?;
    let kind = input.u8()?;
    let scheme = input.u8()?;
    let reserved = input.u32()?;
    let seed = input.u64()?;
    input.end_section()?;
    if version == 0 || version > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    input.set_version(version);
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
