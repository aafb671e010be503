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

pub(crate) mod envelope;

use std::io::{Read, Write};

use atomic_bloom::{BloomFilter, SaveCursor, ScalableBloomFilter};

use crate::filter::{Bloom, Filter, Options};
pub(crate) use envelope::RecordError;
use envelope::{Fields, Layout};

pub(crate) const ENVELOPE_BYTES: usize = 56;
const LAYOUT: Layout<ENVELOPE_BYTES> = Layout {
    magic: *b"ABREDIS1",
    version: 1,
    foreign: "not an atomic-bloom-redis record",
    short: "shorter than 56 bytes",
};
pub(crate) const MAGIC: [u8; 8] = LAYOUT.magic;
const NONSCALING: u16 = 1;

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
        LAYOUT.seal(&mut out, self.filter_bytes);
        out
    }

    /// Decodes and checks an envelope; the seed is not in it (the filter's
    /// bytes carry it) and reads as 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Envelope, RecordError> {
        Self::from_fields(LAYOUT.open(bytes)?)
    }

    /// Checks and takes this record's own fields.
    fn from_fields(fields: Fields<'_, ENVELOPE_BYTES>) -> Result<Envelope, RecordError> {
        let flags = fields.u16_at(10);
        if flags & !NONSCALING != 0 || fields.u32_at(40) != 0 {
            return Err(RecordError::Envelope("unknown flags"));
        }
        let expansion = fields.u32_at(36);
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
                capacity: fields.u64_at(20),
                error_rate: f64::from_bits(fields.u64_at(28)),
                expansion,
                seed: 0,
            },
            items: fields.u64_at(12),
            filter_bytes: fields.filter_bytes(),
        })
    }

    /// Bytes of the whole record.
    pub(crate) fn record_bytes(&self) -> u64 {
        LAYOUT.record_bytes(self.filter_bytes)
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
        input: R,
        filter_cap: Option<usize>,
    ) -> Result<Bloom, RecordError> {
        let (envelope, filter) = LAYOUT.read_record(
            input,
            filter_cap,
            Envelope::from_fields,
            |envelope, filter_input| {
                Ok(match envelope.options.expansion {
                    // Full by its bits alone, as the filter it was saved from.
                    Some(_) => Filter::Scaling(
                        ScalableBloomFilter::read_from(filter_input)?.with_exact_fill(),
                    ),
                    None => Filter::Fixed(BloomFilter::read_from(filter_input)?),
                })
            },
        )?;
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
