//! `BloomFilter`'s body, and the geometry fields every bit array shares.

use std::io::{Read, Write};

use super::chunks::{self, SaveCursor, Segment};
use super::{
    read_sizing, sizing_byte, to_usize, write_header, Decoder, Encoder, Kind, Saved, Stored,
    BIT_LAYOUTS,
};
use crate::bits::BitArray;
use crate::sizing::{Geometry, Scheme};
use crate::{BloomFilter, DefaultHasher, Error, Layout};

/// Writes a geometry and its target rate.
pub(crate) fn write_geometry<W: Write>(
    out: &mut Encoder<W>,
    geometry: &Geometry,
    rate: f64,
) -> Result<(), Error> {
    out.u8(Stored::of(geometry.scheme).byte())?;
    out.u8(sizing_byte(geometry.sizing))?;
    out.u8(geometry.scheme.lines_per_block() as u8)?;
    out.u32(geometry.bits_per_word)?;
    out.usize(geometry.capacity)?;
    out.f64(rate)?;
    out.usize(geometry.blocks)
}

/// Reads a geometry and its target rate, and checks every field: the
/// layout is one of `allowed`, the sizing and lines per block known, k in
/// range, and the block count a whole number of blocks (a power of two of
/// them unless sized exactly) whose bytes fit the address space.
pub(crate) fn read_geometry<R: Read>(
    input: &mut Decoder<R>,
    allowed: &[Stored],
) -> Result<(Geometry, f64), Error> {
    input.part("filter parameters");
    let stored = Stored::from_byte(input.u8()?, allowed, input)?;
    let sizing = read_sizing(input)?;
    let lines_per_block = if input.version() >= 3 { input.u8()? } else { 1 };
    let scheme = match (stored, lines_per_block) {
        (Stored::Counters, 1) => Scheme::Counters,
        (Stored::Bits(Layout::Compact), lines @ (1 | 2)) => Scheme::Compact {
            lines: u32::from(lines),
        },
        (Stored::Bits(Layout::CacheLine), 1) => Scheme::CacheLine,
        (Stored::Bits(Layout::Word), 1) => Scheme::Word,
        (_, lines) => {
            return Err(Error::InvalidField {
                field: "lines per block",
                value: u64::from(lines),
            })
        }
    };
    let bits_per_word = input.u32()?;
    if bits_per_word == 0 {
        return Err(Error::ZeroHashes);
    }
    if bits_per_word > scheme.max_bits_per_word() {
        return Err(Error::InvalidField {
            field: "bits per word",
            value: u64::from(bits_per_word),
        });
    }
    let capacity = to_usize(input.u64()?, "capacity")?;
    if capacity == 0 {
        return Err(Error::InvalidField {
            field: "capacity",
            value: 0,
        });
    }
    let rate = input.f64()?;
    if !(rate > 0.0 && rate < 1.0) {
        return Err(Error::InvalidStoredRate { rate });
    }
    let stored_blocks = input.u64()?;
    let blocks = to_usize(stored_blocks, "block count")?;
    if blocks
        .checked_mul(crate::block::BLOCK_BYTES)
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return Err(Error::LengthOverflow {
            field: "block count",
            value: stored_blocks,
        });
    }
    if !Geometry::blocks_fit(scheme, sizing, blocks) {
        return Err(Error::InvalidField {
            field: "block count",
            value: stored_blocks,
        });
    }
    let geometry = Geometry {
        scheme,
        sizing,
        blocks,
        bits_per_word,
        capacity,
    };
    Ok((geometry, rate))
}

/// Writes a bit-array filter: geometry, then its words in pages, each
/// with its own checksum (version 4). Shared by the Bloom filter, each
/// stage of the scalable filter and the frontier.
pub(crate) fn write_bits<T: ?Sized, S, W: Write>(
    out: &mut Encoder<W>,
    filter: &BloomFilter<T, S>,
) -> Result<(), Error> {
    write_geometry(out, filter.geometry(), filter.target_fpr())?;
    filter.bits().write_pages(out)
}

/// Reads what [`write_bits`] wrote, or an older version's array (its words
/// inside the body's checksum, then their set-bit count).
pub(crate) fn read_bits<T: ?Sized, S, R: Read>(
    input: &mut Decoder<R>,
    hasher: S,
) -> Result<BloomFilter<T, S>, Error> {
    let (geometry, rate) = read_geometry(input, &BIT_LAYOUTS)?;
    input.part("bit array");
    let bits = if input.version() >= 4 {
        BitArray::read_pages(geometry.blocks, input)?
    } else {
        let (bits, counted) = BitArray::read(geometry.blocks, input)?;
        input.part("set-bit count");
        let stored = input.u64()?;
        input.expect_count("set bits", stored, counted);
        bits
    };
    Ok(BloomFilter::from_bits(bits, geometry, rate, hasher))
}

impl<T: ?Sized> Saved for BloomFilter<T, DefaultHasher> {
    const KIND: Kind = Kind::Bloom;

    fn seed(&self) -> u64 {
        self.hasher().seed()
    }

    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        write_bits(out, self)
    }

    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error> {
        read_bits(input, DefaultHasher::with_seed(seed))
    }
}

saving_methods! {
    /// # Saving and loading
    ///
    /// In the format of `FORMAT.md`: the same bytes on every platform, with a
    /// checksum over every byte. Only filters with the [`DefaultHasher`] save,
    /// since the file must name how items were hashed; the seed is saved with
    /// the bits, so a loaded filter answers exactly as the saved one did.
    impl[T: ?Sized] BloomFilter<T, DefaultHasher>,
        "BloomFilter",
        "BloomFilter::<str>",
        "BloomFilter::<str>::new(1000, 0.01)?"
    {
        /// Writes the filter to `out` (wrap a file in a `BufWriter`, or use
        /// [`save`](Self::save)).
        ///
        /// # Consistency
        ///
        /// Other threads may insert while it writes. Every insert that
        /// happened-before the call is in the output; inserts racing it may or
        /// may not be, and the stored set-bit count always matches the bits
        /// written.
        ///
        /// # Errors
        ///
        /// [`Error::Io`] when `out` fails.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::BloomFilter;
        ///
        /// let f: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(7).build()?;
        /// f.insert("a");
        /// let mut bytes = Vec::new();
        /// f.write_to(&mut bytes)?;
        /// let g: BloomFilter<str> = BloomFilter::read_from(bytes.as_slice())?;
        /// assert!(g.contains("a"));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_to;

        /// Reads a filter that [`write_to`](Self::write_to) wrote, checking
        /// every field and both checksums. It reads exactly the filter's bytes
        /// and allocates only as the input delivers them.
        ///
        /// # Errors
        ///
        /// One variant per kind of bad input: [`Error::NotAFilter`],
        /// [`Error::UnsupportedVersion`], [`Error::WrongKind`],
        /// [`Error::UnknownKind`], [`Error::UnsupportedHashScheme`],
        /// [`Error::Truncated`], [`Error::ChecksumMismatch`],
        /// [`Error::LengthOverflow`], [`Error::ZeroHashes`],
        /// [`Error::InvalidStoredRate`], [`Error::CountMismatch`],
        /// [`Error::InvalidField`]; [`Error::AllocationFailed`] and
        /// [`Error::Io`] from the system.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::{BloomFilter, Error};
        ///
        /// let err = BloomFilter::<str>::read_from(&b"not a filter"[..]).unwrap_err();
        /// assert_eq!(err, Error::NotAFilter);
        /// ```
        fn read_from;
    }
}

/// The bytes an encoder writes into a `Vec` (fields, or a header with its
/// checksum).
pub(crate) fn encoded(write: impl FnOnce(&mut Encoder<Vec<u8>>) -> Result<(), Error>) -> Vec<u8> {
    let mut out = Encoder::new(Vec::new());
    // Writing into a Vec cannot fail.
    let _ = write(&mut out);
    out.finish().unwrap_or_default()
}

/// The header segment of a `kind` filter seeded with `seed`.
pub(crate) fn header_segment(kind: Kind, seed: u64) -> Segment<'static> {
    Segment::Header(encoded(|out| write_header(out, kind, seed)))
}

/// The segments of a bit-array section: its fields, its pages of bits.
pub(crate) fn bits_segments<'a, T: ?Sized, S>(filter: &'a BloomFilter<T, S>) -> [Segment<'a>; 2] {
    [
        Segment::Fields(encoded(|out| {
            write_geometry(out, filter.geometry(), filter.target_fpr())
        })),
        Segment::Bits(filter.bits()),
    ]
}

impl<T: ?Sized> BloomFilter<T, DefaultHasher> {
    fn segments(&self) -> Vec<Segment<'_>> {
        let mut segments = vec![header_segment(Kind::Bloom, self.hasher().seed())];
        segments.extend(bits_segments(self));
        segments.push(Segment::BodyChecksum);
        segments
    }

    fn chunked_len(&self) -> u64 {
        chunks::total_len(&self.segments())
    }

    fn append_chunk(&self, cursor: &mut SaveCursor, max: usize, out: &mut Vec<u8>) {
        chunks::append_chunk(&self.segments(), cursor, max, out)
    }
}

chunk_methods! {
    impl[T: ?Sized] BloomFilter<T, DefaultHasher>,
        "BloomFilter",
        "BloomFilter::builder(100_000, 0.01).seed(1).build()?"
    {
        /// Bytes [`write_to`](Self::write_to) writes.
        fn saved_len;
        /// The next piece, up to `max` bytes, of what
        /// [`write_to`](Self::write_to) writes, from where `cursor` stands (a
        /// new cursor: the start; [`SaveCursor::at`]: anywhere); empty at the
        /// end. Each call costs its piece, at most one page (64 KiB) of bits
        /// around it and the few fields: a server hands out a chunk at any
        /// offset without going over the bytes before it.
        ///
        /// # Consistency
        ///
        /// Each block is read once, when its piece is made: inserts between
        /// calls may or may not be in the pieces, and the counts and checksums
        /// written match the bytes written, so the pieces always load.
        ///
        /// # Example
        ///
        /// See [`SaveCursor`].
        fn write_chunk;
    }
}
