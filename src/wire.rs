//! The byte codec beneath the bit arrays and the saved format:
//! little-endian fields with a running CRC-32C, over any `Write` or `Read`,
//! and the checks a loader makes on lengths it reads.

use std::io::{self, Read, Write};

use crate::Error;

/// Bytes read or written at a time in bulk data.
pub(crate) const CHUNK_BYTES: usize = 64 * 1024;

/// Bytes of bits per page (format version 4): each page is followed by its
/// own CRC-32C, outside its section's checksum, so that any byte of a
/// saved filter can be made knowing only its page (`persist/chunks.rs`).
pub(crate) const PAGE_BYTES: usize = 64 * 1024;

/// Where page `index`'s checksum starts: the CRC-32C of the index as a
/// little-endian `u64`. A page's checksum then covers where it stands as
/// well as its bytes: pages swapped or repeated do not load.
pub(crate) fn page_checksum_seed(index: usize) -> u32 {
    crc32c::crc32c(&(index as u64).to_le_bytes())
}

/// The checksum written after page `index` of a bit array.
pub(crate) fn page_checksum(index: usize, page: &[u8]) -> u32 {
    crc32c::crc32c_append(page_checksum_seed(index), page)
}

/// What [`Error::Io`] says a [`Decoder`] was doing.
const READING_INPUT: &str = "reading a saved filter from its reader";
/// What [`Error::Io`] says an [`Encoder`] was doing.
const WRITING_OUTPUT: &str = "writing a filter to its writer";

/// An I/O error as an [`Error`]; an early end of input is a truncation of
/// `part`.
fn io_error(error: io::Error, part: &'static str) -> Error {
    match error.kind() {
        io::ErrorKind::UnexpectedEof => Error::Truncated { section: part },
        _ => Error::io(error, READING_INPUT),
    }
}

/// An I/O error met while doing something unnamed: reading or writing (an
/// early end of input is a truncation).
impl From<io::Error> for Error {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::UnexpectedEof => Error::Truncated { section: "input" },
            _ => Error::from(crate::IoError::from(error)),
        }
    }
}

/// Writes fields and keeps the checksum of the current section.
pub(crate) struct Encoder<W> {
    out: W,
    crc: u32,
}

impl<W: Write> Encoder<W> {
    pub(crate) fn new(out: W) -> Self {
        Encoder { out, crc: 0 }
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        written(self.out.write_all(bytes))
    }

    pub(crate) fn u8(&mut self, value: u8) -> Result<(), Error> {
        self.bytes(&[value])
    }

    pub(crate) fn u16(&mut self, value: u16) -> Result<(), Error> {
        self.bytes(&value.to_le_bytes())
    }

    pub(crate) fn u32(&mut self, value: u32) -> Result<(), Error> {
        self.bytes(&value.to_le_bytes())
    }

    pub(crate) fn u64(&mut self, value: u64) -> Result<(), Error> {
        self.bytes(&value.to_le_bytes())
    }

    /// A `usize` as a `u64`, the same on every platform.
    pub(crate) fn usize(&mut self, value: usize) -> Result<(), Error> {
        self.u64(value as u64)
    }

    pub(crate) fn f64(&mut self, value: f64) -> Result<(), Error> {
        self.u64(value.to_bits())
    }

    /// Writes page `index` of a bit array and its own checksum
    /// ([`page_checksum`]), both outside the section's checksum.
    pub(crate) fn page(&mut self, index: usize, page: &[u8]) -> Result<(), Error> {
        written(self.out.write_all(page))?;
        written(
            self.out
                .write_all(&page_checksum(index, page).to_le_bytes()),
        )
    }

    /// Writes the current section's checksum (not itself checksummed) and
    /// starts the next section.
    pub(crate) fn end_section(&mut self) -> Result<(), Error> {
        let crc = std::mem::take(&mut self.crc);
        written(self.out.write_all(&crc.to_le_bytes()))
    }

    /// The output, flushed.
    pub(crate) fn finish(mut self) -> Result<W, Error> {
        written(self.out.flush())?;
        Ok(self.out)
    }
}

/// A write's outcome; its error says the writer failed.
fn written(result: io::Result<()>) -> Result<(), Error> {
    result.map_err(|error| Error::io(error, WRITING_OUTPUT))
}

/// Reads fields and keeps the checksum of the current section.
pub(crate) struct Decoder<R> {
    input: R,
    crc: u32,
    /// The part of the format a checksum covers.
    section: &'static str,
    /// The part being read, named in [`Error::Truncated`].
    part: &'static str,
    /// The first inconsistency found in the current section, reported
    /// after its checksum: a flipped bit is a checksum mismatch, and only
    /// well-sealed but inconsistent input gets the specific error.
    deferred: Option<Error>,
    /// The format version the header announced (0 before it is read).
    version: u16,
}

impl<R: Read> Decoder<R> {
    pub(crate) fn new(input: R) -> Self {
        Decoder {
            input,
            crc: 0,
            section: "header",
            part: "header",
            deferred: None,
            version: 0,
        }
    }

    /// Records the format version of the input, for the fields that changed
    /// between versions.
    pub(crate) fn set_version(&mut self, version: u16) {
        self.version = version;
    }

    /// The format version the header announced.
    pub(crate) fn version(&self) -> u16 {
        self.version
    }

    /// Starts a section with its own checksum.
    pub(crate) fn begin_section(&mut self, section: &'static str) {
        self.crc = 0;
        self.section = section;
        self.part = section;
    }

    /// Records `error`, to be returned once the section's checksum has
    /// matched. For inconsistencies that do not change how much is read
    /// (counts, item contents); bounds and lengths fail at once.
    pub(crate) fn defer(&mut self, error: Error) {
        self.deferred.get_or_insert(error);
    }

    /// Defers an [`Error::CountMismatch`] unless `stored == counted`.
    pub(crate) fn expect_count(&mut self, field: &'static str, stored: u64, counted: u64) {
        if stored != counted {
            self.defer(Error::CountMismatch {
                field,
                stored,
                counted,
            });
        }
    }

    /// Names the part of the section read next, for [`Error::Truncated`].
    pub(crate) fn part(&mut self, part: &'static str) {
        self.part = part;
    }

    fn fill(&mut self, buffer: &mut [u8]) -> Result<(), Error> {
        self.input
            .read_exact(buffer)
            .map_err(|error| io_error(error, self.part))
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut bytes = [0u8; N];
        self.fill(&mut bytes)?;
        self.crc = crc32c::crc32c_append(self.crc, &bytes);
        Ok(bytes)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(crate) fn f64(&mut self) -> Result<f64, Error> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// Reads `total` bytes and hands them to `each` a chunk at a time; no
    /// buffer larger than [`CHUNK_BYTES`] whatever `total` claims.
    pub(crate) fn chunks(
        &mut self,
        total: usize,
        mut each: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut buffer = vec![0u8; total.min(CHUNK_BYTES)];
        let mut left = total;
        while left > 0 {
            let chunk = &mut buffer[..left.min(CHUNK_BYTES)];
            self.fill(chunk)?;
            self.crc = crc32c::crc32c_append(self.crc, chunk);
            each(chunk)?;
            left -= chunk.len();
        }
        Ok(())
    }

    /// Reads `total` bytes written as pages ([`Encoder::page`]), checking
    /// each page's checksum, and hands each page to `each`; no buffer
    /// larger than a page whatever `total` claims.
    pub(crate) fn pages(
        &mut self,
        total: usize,
        mut each: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut buffer = vec![0u8; total.min(PAGE_BYTES)];
        let mut left = total;
        let mut index = 0;
        while left > 0 {
            let page = &mut buffer[..left.min(PAGE_BYTES)];
            self.fill(page)?;
            let mut stored = [0u8; 4];
            self.fill(&mut stored)?;
            let (stored, computed) = (u32::from_le_bytes(stored), page_checksum(index, page));
            index += 1;
            if !checksums_match(stored, computed) {
                return Err(Error::ChecksumMismatch {
                    section: "bit array page",
                    stored,
                    computed,
                });
            }
            each(page)?;
            left -= page.len();
        }
        Ok(())
    }

    /// Reads the stored checksum of the current section and compares it
    /// with the bytes read since the section began.
    pub(crate) fn end_section(&mut self) -> Result<(), Error> {
        let computed = self.crc;
        let mut stored = [0u8; 4];
        self.part = self.section;
        self.fill(&mut stored)?;
        let stored = u32::from_le_bytes(stored);
        if !checksums_match(stored, computed) {
            return Err(Error::ChecksumMismatch {
                section: self.section,
                stored,
                computed,
            });
        }
        self.crc = 0;
        self.deferred.take().map_or(Ok(()), Err)
    }

    /// Fails with [`Error::TrailingBytes`] unless the input is at its end.
    pub(crate) fn expect_end(&mut self) -> Result<(), Error> {
        let mut byte = [0u8; 1];
        loop {
            return match self.input.read(&mut byte) {
                Ok(0) => Ok(()),
                Ok(_) => Err(Error::TrailingBytes),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => Err(error.into()),
            };
        }
    }
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

/// `value` as a `usize`, or [`Error::LengthOverflow`] naming `field`.
pub(crate) fn to_usize(value: u64, field: &'static str) -> Result<usize, Error> {
    usize::try_from(value)
        .ok()
        .filter(|&size| size <= isize::MAX as usize)
        .ok_or(Error::LengthOverflow { field, value })
}

/// Whether a stored checksum is the computed one. Fuzzing builds
/// (`cfg(fuzzing)`, set by `cargo fuzz`) take any: the fuzzer then reaches
/// the fields behind the checksums, as an attacker who reseals does.
fn checksums_match(stored: u32, computed: u32) -> bool {
    cfg!(fuzzing) || stored == computed
}
