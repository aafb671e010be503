//! What the module's two records share (`record/`, a `BF.*` key's;
//! `windowed/record.rs`, a `WBF.*` key's): a fixed-size envelope, then the
//! filter in atomic-bloom's own saved format (FORMAT.md), and nothing after
//! it.
//!
//! Every envelope starts with its 8-byte magic and a 2-byte record version,
//! and ends with the length of the filter's bytes that follow (8 bytes) and
//! a CRC-32C of every byte before the checksum (4 bytes), all integers
//! little-endian; the fields in between are each record's own. This module
//! writes and checks those common fields ([`Layout`]), reads a whole record
//! ([`Layout::read_record`]) and says why one did not load
//! ([`RecordError`]).

use std::io::{self, Read};

/// Why a record did not load: the texts go to the server's log (and, for
/// `WBF.LOADCHUNK`, to its error reply). `WINDOWED` names the record in
/// them: `false` for a `BF.*` key's, `true` for a `WBF.*` key's.
#[derive(Debug)]
pub(crate) enum RecordError<const WINDOWED: bool = false> {
    /// The envelope is short, not ours, of another version, or its
    /// checksum does not match.
    Envelope(&'static str),
    /// The filter's bytes did not load (the library says why).
    Filter(atomic_bloom::Error),
    /// The envelope's fields disagree with the filter.
    Mismatch(&'static str),
    /// Reading the input failed.
    Io(io::Error),
    /// The filter would pass `bf-memory-limit-per-filter`.
    OverLimit,
}

impl<const WINDOWED: bool> std::fmt::Display for RecordError<WINDOWED> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if WINDOWED { "windowed " } else { "" };
        match self {
            RecordError::Envelope(why) => write!(f, "bad {kind}envelope: {why}"),
            RecordError::Filter(error) => write!(f, "bad {kind}filter: {error}"),
            RecordError::Mismatch(why) => write!(f, "inconsistent {kind}record: {why}"),
            RecordError::Io(error) => write!(f, "read failed: {error}"),
            RecordError::OverLimit => f.write_str(
                "the filter would pass bf-memory-limit-per-filter: raise the limit (CONFIG SET) \
                 to restore it",
            ),
        }
    }
}

/// One record's envelope of `BYTES` bytes: its magic and version, and the
/// texts its checks report.
pub(crate) struct Layout<const BYTES: usize> {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u16,
    /// Why a record that does not start with `magic` is refused.
    pub(crate) foreign: &'static str,
    /// Why a record shorter than an envelope is refused.
    pub(crate) short: &'static str,
}

/// An envelope whose length, magic, checksum and version were checked: its
/// own fields are the caller's to read.
pub(crate) struct Fields<'a, const BYTES: usize>(&'a [u8; BYTES]);

impl<const BYTES: usize> Fields<'_, BYTES> {
    /// Where the filter's length is: just before the checksum.
    const FILTER_BYTES_AT: usize = BYTES - 12;

    pub(crate) fn u64_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.0[at..at + 8].try_into().unwrap())
    }

    pub(crate) fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.0[at..at + 4].try_into().unwrap())
    }

    pub(crate) fn u16_at(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.0[at..at + 2].try_into().unwrap())
    }

    /// Bytes of the filter after the envelope.
    pub(crate) fn filter_bytes(&self) -> u64 {
        self.u64_at(Self::FILTER_BYTES_AT)
    }
}

impl<const BYTES: usize> Layout<BYTES> {
    /// Where the checksum is: the envelope's last 4 bytes.
    const CRC_AT: usize = BYTES - 4;

    /// Fills in the common fields of `out`, whose own fields are already
    /// written: the magic, the version, the filter's length and, last, the
    /// checksum.
    pub(crate) fn seal(&self, out: &mut [u8; BYTES], filter_bytes: u64) {
        out[0..8].copy_from_slice(&self.magic);
        out[8..10].copy_from_slice(&self.version.to_le_bytes());
        let filter_bytes_at = Fields::<BYTES>::FILTER_BYTES_AT;
        out[filter_bytes_at..filter_bytes_at + 8].copy_from_slice(&filter_bytes.to_le_bytes());
        let crc = crc32c::crc32c(&out[..Self::CRC_AT]);
        out[Self::CRC_AT..].copy_from_slice(&crc.to_le_bytes());
    }

    /// Checks the envelope at the start of `bytes`: its length, magic,
    /// checksum and version, in that order.
    pub(crate) fn open<'a, const WINDOWED: bool>(
        &self,
        bytes: &'a [u8],
    ) -> Result<Fields<'a, BYTES>, RecordError<WINDOWED>> {
        let bytes: &[u8; BYTES] = bytes
            .get(..BYTES)
            .and_then(|head| head.try_into().ok())
            .ok_or(RecordError::Envelope(self.short))?;
        let fields = Fields(bytes);
        if bytes[0..8] != self.magic {
            return Err(RecordError::Envelope(self.foreign));
        }
        if fields.u32_at(Self::CRC_AT) != crc32c::crc32c(&bytes[..Self::CRC_AT]) {
            return Err(RecordError::Envelope("checksum mismatch"));
        }
        if fields.u16_at(8) != self.version {
            return Err(RecordError::Envelope("unsupported record version"));
        }
        Ok(fields)
    }

    /// Bytes of a whole record whose filter takes `filter_bytes`.
    pub(crate) fn record_bytes(&self, filter_bytes: u64) -> u64 {
        filter_bytes.saturating_add(BYTES as u64)
    }

    /// Reads a whole record, and nothing after it: the envelope, checked
    /// by [`Layout::open`] and then by `decode`; then the filter, by
    /// `read_filter` from exactly the bytes the envelope counts. One whose
    /// filter would take more than `filter_cap` bytes is refused from its
    /// envelope, before its filter is read.
    pub(crate) fn read_record<R: Read, E, T, const WINDOWED: bool>(
        &self,
        mut input: R,
        filter_cap: Option<usize>,
        decode: impl FnOnce(Fields<'_, BYTES>) -> Result<E, RecordError<WINDOWED>>,
        read_filter: impl FnOnce(&E, &mut io::Take<R>) -> Result<T, atomic_bloom::Error>,
    ) -> Result<(E, T), RecordError<WINDOWED>> {
        let mut head = [0u8; BYTES];
        input
            .read_exact(&mut head)
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => RecordError::Envelope(self.short),
                _ => RecordError::Io(error),
            })?;
        let fields = self.open(&head)?;
        let filter_bytes = fields.filter_bytes();
        let envelope = decode(fields)?;
        if filter_cap.is_some_and(|cap| filter_bytes > cap as u64) {
            return Err(RecordError::OverLimit);
        }
        let mut filter_input = input.take(filter_bytes);
        let filter = read_filter(&envelope, &mut filter_input).map_err(RecordError::Filter)?;
        if filter_input.limit() != 0 {
            return Err(RecordError::Mismatch(
                "filter shorter than the envelope says",
            ));
        }
        let mut rest = [0u8; 1];
        match filter_input.into_inner().read(&mut rest) {
            Ok(0) => {}
            Ok(_) => return Err(RecordError::Mismatch("bytes after the filter")),
            Err(error) => return Err(RecordError::Io(error)),
        }
        Ok((envelope, filter))
    }
}
