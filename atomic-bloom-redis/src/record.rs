//! The bytes of one key, in RDB files, AOF rewrites and `BF.SCANDUMP`
//! chunks: a 56-byte envelope with what RedisBloom's commands report, and
//! then the filter in atomic-bloom's own saved format (FORMAT.md), which
//! carries its own checksums.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `ABREDIS1` |
//! | 8 | 2 | record version, `1` |
//! | 10 | 2 | flags: bit 0 `NONSCALING` |
//! | 12 | 8 | items added |
//! | 20 | 8 | capacity asked for |
//! | 28 | 8 | error rate asked for (`f64` bits) |
//! | 36 | 4 | expansion (0 for `NONSCALING`) |
//! | 40 | 4 | reserved, 0 |
//! | 44 | 8 | length of the filter's bytes that follow |
//! | 52 | 4 | CRC-32C of bytes 0..52 |
//!
//! All integers little-endian.

use std::io::{self, Read, Write};

use atomic_bloom::{BloomFilter, SaveCursor, ScalableBloomFilter};

use crate::filter::{Bloom, Filter, Options};

pub(crate) const MAGIC: [u8; 8] = *b"ABREDIS1";
pub(crate) const VERSION: u16 = 1;
pub(crate) const ENVELOPE_BYTES: usize = 56;
const NONSCALING: u16 = 1;

/// Why a record did not load: the texts go to the server's log.
#[derive(Debug)]
pub(crate) enum RecordError {
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

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Envelope(why) => write!(f, "bad envelope: {why}"),
            RecordError::Filter(error) => write!(f, "bad filter: {error}"),
            RecordError::Mismatch(why) => write!(f, "inconsistent record: {why}"),
            RecordError::Io(error) => write!(f, "read failed: {error}"),
            RecordError::OverLimit => f.write_str(
                "the filter would pass bf-memory-limit-per-filter: raise the limit (CONFIG SET) \
                 to restore it",
            ),
        }
    }
}

/// The fields of an envelope.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Envelope {
    pub(crate) options: Options,
    pub(crate) items: u64,
    /// Bytes of the filter after the envelope.
    pub(crate) filter_bytes: u64,
}

impl Envelope {
    pub(crate) fn encode(&self) -> [u8; ENVELOPE_BYTES] {
        let mut out = [0u8; ENVELOPE_BYTES];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..10].copy_from_slice(&VERSION.to_le_bytes());
        let flags = if self.options.expansion.is_none() {
            NONSCALING
        } else {
            0
        };
        out[10..12].copy_from_slice(&flags.to_le_bytes());
        out[12..20].copy_from_slice(&self.items.to_le_bytes());
        out[20..28].copy_from_slice(&self.options.capacity.to_le_bytes());
        out[28..36].copy_from_slice(&self.options.error_rate.to_bits().to_le_bytes());
        out[36..40].copy_from_slice(&self.options.expansion.unwrap_or(0).to_le_bytes());
        out[44..52].copy_from_slice(&self.filter_bytes.to_le_bytes());
        let crc = crc32c::crc32c(&out[..52]);
        out[52..56].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes and checks an envelope; the seed is not in it (the filter's
    /// bytes carry it) and reads as 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Envelope, RecordError> {
        let bytes: &[u8; ENVELOPE_BYTES] = bytes
            .get(..ENVELOPE_BYTES)
            .and_then(|head| head.try_into().ok())
            .ok_or(RecordError::Envelope("shorter than 56 bytes"))?;
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
        if bytes[0..8] != MAGIC {
            return Err(RecordError::Envelope("not an atomic-bloom-redis record"));
        }
        if u32_at(52) != crc32c::crc32c(&bytes[..52]) {
            return Err(RecordError::Envelope("checksum mismatch"));
        }
        if u16_at(8) != VERSION {
            return Err(RecordError::Envelope("unsupported record version"));
        }
        let flags = u16_at(10);
        if flags & !NONSCALING != 0 || u32_at(40) != 0 {
            return Err(RecordError::Envelope("unknown flags"));
        }
        let expansion = u32_at(36);
        let expansion = if flags & NONSCALING != 0 {
            if expansion != 0 {
                return Err(RecordError::Envelope("NONSCALING with an expansion"));
            }
            None
        } else {
            Some(expansion)
        };
        Ok(Envelope {
            options: Options {
                capacity: u64_at(20),
                error_rate: f64::from_bits(u64_at(28)),
                expansion,
                seed: 0,
            },
            items: u64_at(12),
            filter_bytes: u64_at(44),
        })
    }

    /// Bytes of the whole record.
    pub(crate) fn record_bytes(&self) -> u64 {
        self.filter_bytes.saturating_add(ENVELOPE_BYTES as u64)
    }
}

impl Bloom {
    fn write_filter<W: Write>(&self, out: W) -> Result<(), atomic_bloom::Error> {
        match &self.filter {
            Filter::Scaling(filter) => filter.write_to(out),
            Filter::Fixed(filter) => filter.write_to(out),
        }
    }

    /// The envelope of this filter.
    pub(crate) fn envelope(&self) -> Envelope {
        let filter_bytes = match &self.filter {
            Filter::Scaling(filter) => filter.saved_len(),
            Filter::Fixed(filter) => filter.saved_len(),
        };
        Envelope {
            options: self.options,
            items: self.items,
            filter_bytes,
        }
    }

    /// The filter's next saved bytes, up to `max`, from `cursor` on, appended
    /// to `out`.
    pub(crate) fn filter_chunk_to(&self, cursor: &mut SaveCursor, max: usize, out: &mut Vec<u8>) {
        match &self.filter {
            Filter::Scaling(filter) => filter.write_chunk_to(cursor, max, out),
            Filter::Fixed(filter) => filter.write_chunk_to(cursor, max, out),
        }
    }

    /// Writes the whole record.
    pub(crate) fn write_record<W: Write>(&self, mut out: W) -> Result<(), atomic_bloom::Error> {
        out.write_all(&self.envelope().encode())?;
        self.write_filter(out)
    }

    /// Reads a whole record, and nothing after it.
    pub(crate) fn read_record<R: Read>(input: R) -> Result<Bloom, RecordError> {
        Self::read_record_within(input, None)
    }

    /// Reads a whole record, and nothing after it; one whose filter would
    /// take more than `filter_cap` bytes is refused from its envelope,
    /// before its filter is read.
    pub(crate) fn read_record_within<R: Read>(
        mut input: R,
        filter_cap: Option<usize>,
    ) -> Result<Bloom, RecordError> {
        let mut head = [0u8; ENVELOPE_BYTES];
        input
            .read_exact(&mut head)
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => RecordError::Envelope("shorter than 56 bytes"),
                _ => RecordError::Io(error),
            })?;
        let envelope = Envelope::decode(&head)?;
        if filter_cap.is_some_and(|cap| envelope.filter_bytes > cap as u64) {
            return Err(RecordError::OverLimit);
        }
        let mut filter_input = input.take(envelope.filter_bytes);
        let filter = match envelope.options.expansion {
            // Full by its bits alone, as the filter it was saved from.
            Some(_) => Filter::Scaling(
                ScalableBloomFilter::read_from(&mut filter_input)
                    .map_err(RecordError::Filter)?
                    .with_exact_fill(),
            ),
            None => Filter::Fixed(
                BloomFilter::read_from(&mut filter_input).map_err(RecordError::Filter)?,
            ),
        };
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
        let seed = match &filter {
            Filter::Scaling(filter) => filter.hasher().seed(),
            Filter::Fixed(filter) => filter.hasher().seed(),
        };
        let options = Options {
            seed,
            ..envelope.options
        };
        check_options(&options, &filter)?;
        Ok(Bloom {
            filter,
            options,
            items: envelope.items,
        })
    }
}

/// The envelope must describe the filter it wraps: the same expansion and
/// rate, and options the commands could have made.
fn check_options(options: &Options, filter: &Filter) -> Result<(), RecordError> {
    if !(options.error_rate > 0.0 && options.error_rate < 1.0) || options.capacity == 0 {
        return Err(RecordError::Mismatch("capacity or error rate out of range"));
    }
    // Built at the sizing rate; records written before it was sized for
    // samples, at the rate asked.
    let built_at = |rate: f64| rate == options.sizing_rate() || rate == options.error_rate;
    match (filter, options.expansion) {
        (Filter::Scaling(filter), Some(growth)) => {
            if !built_at(filter.target_fpr()) || growth == 0 {
                return Err(RecordError::Mismatch("scaling options differ"));
            }
        }
        (Filter::Fixed(filter), None) => {
            if !built_at(filter.target_fpr()) {
                return Err(RecordError::Mismatch("error rate differs"));
            }
        }
        _ => return Err(RecordError::Mismatch("scaling flag differs")),
    }
    Ok(())
}
