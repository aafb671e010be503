//! The bytes of one windowed key, in RDB files, `DUMP` payloads and AOF
//! rewrites: a 64-byte envelope with the key's options and how long its
//! current generation has left, then the filter in atomic-bloom's own
//! saved format (FORMAT.md, kind 5), which carries its epoch, its bits
//! and its own checksums.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `ABWINDO1` |
//! | 8 | 2 | record version, `1` |
//! | 10 | 2 | reserved, 0 |
//! | 12 | 8 | window (items) |
//! | 20 | 8 | error rate asked for (`f64` bits) |
//! | 28 | 4 | generations |
//! | 32 | 4 | reserved, 0 |
//! | 36 | 8 | time window in ms, whole seconds (0: a count window) |
//! | 44 | 8 | ms left in the current generation when saved (`i64`; 0 for a count window) |
//! | 52 | 8 | length of the filter's bytes that follow |
//! | 60 | 4 | CRC-32C of bytes 0..60 |
//!
//! All integers little-endian. The time left is relative to the save,
//! never an instant of a clock (the server keeps time by its monotonic
//! clock, whose origin is its own: a record carried to another server, or
//! read back after a restart, means "this many ms left" there too): a key
//! loaded later continues where it stopped (time spent saved does not
//! count as passed, as an AOF replayed later replays the primary's
//! rotations and no more).

use std::io::{Read, Write};

use atomic_bloom::WindowedBloomFilter;

use super::{Loading, WindowOptions, Windowed, GENERATIONS, MAX_TIME_MS};
use crate::record::envelope::{Fields, Layout};

/// Bytes of the envelope.
pub(crate) const RECORD_ENVELOPE_BYTES: usize = 64;
const LAYOUT: Layout<RECORD_ENVELOPE_BYTES> = Layout {
    magic: *b"ABWINDO1",
    version: 1,
    foreign: "not a windowed atomic-bloom record",
    short: "shorter than 64 bytes",
};

/// Why a record did not load (for the server's log).
pub(crate) type RecordError = crate::record::envelope::RecordError<true>;

/// The fields of an envelope.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Envelope {
    pub(crate) window: u64,
    pub(crate) error_rate: f64,
    pub(crate) generations: u32,
    pub(crate) time_ms: u64,
    pub(crate) left_ms: i64,
    pub(crate) filter_bytes: u64,
}

impl Envelope {
    fn encode(&self) -> [u8; RECORD_ENVELOPE_BYTES] {
        let mut out = [0u8; RECORD_ENVELOPE_BYTES];
        out[12..20].copy_from_slice(&self.window.to_le_bytes());
        out[20..28].copy_from_slice(&self.error_rate.to_bits().to_le_bytes());
        out[28..32].copy_from_slice(&self.generations.to_le_bytes());
        out[36..44].copy_from_slice(&self.time_ms.to_le_bytes());
        out[44..52].copy_from_slice(&self.left_ms.to_le_bytes());
        LAYOUT.seal(&mut out, self.filter_bytes);
        out
    }

    /// Decodes and checks an envelope.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Envelope, RecordError> {
        Self::from_fields(LAYOUT.open(bytes)?)
    }

    /// Checks and takes this record's own fields.
    fn from_fields(fields: Fields<'_, RECORD_ENVELOPE_BYTES>) -> Result<Envelope, RecordError> {
        if fields.u16_at(10) != 0 || fields.u32_at(32) != 0 {
            return Err(RecordError::Envelope("reserved bytes set"));
        }
        Ok(Envelope {
            window: fields.u64_at(12),
            error_rate: f64::from_bits(fields.u64_at(20)),
            generations: fields.u32_at(28),
            time_ms: fields.u64_at(36),
            left_ms: fields.u64_at(44) as i64,
            filter_bytes: fields.filter_bytes(),
        })
    }

    /// Bytes of the whole record.
    pub(crate) fn record_bytes(&self) -> u64 {
        LAYOUT.record_bytes(self.filter_bytes)
    }
}

impl Windowed {
    /// The envelope of this filter at `now_ms`.
    fn envelope(&self, now_ms: i64) -> Envelope {
        Envelope {
            window: self.options.window,
            error_rate: self.options.error_rate,
            generations: self.filter.generations(),
            time_ms: self.options.time_ms,
            left_ms: self.left_ms(now_ms),
            filter_bytes: self.filter.saved_len(),
        }
    }

    /// Bytes of the whole record.
    pub(crate) fn record_len(&self) -> u64 {
        self.envelope(0).record_bytes()
    }

    /// Writes the whole record, its time left counted from `now_ms`.
    pub(crate) fn write_record<W: Write>(
        &self,
        mut out: W,
        now_ms: i64,
    ) -> Result<(), atomic_bloom::Error> {
        out.write_all(&self.envelope(now_ms).encode())?;
        self.filter.write_to(out)
    }

    /// Reads a whole record, and nothing after it, its generation's end
    /// placed at `now_ms` plus the time it had left; one whose filter
    /// would take more than `filter_cap` bytes is refused from its
    /// envelope, before its filter is read.
    pub(crate) fn read_record<R: Read>(
        input: R,
        now_ms: i64,
        filter_cap: Option<usize>,
    ) -> Result<Windowed, RecordError> {
        let (envelope, filter) = LAYOUT.read_record(
            input,
            filter_cap,
            Envelope::from_fields,
            |_, filter_input| WindowedBloomFilter::<[u8]>::read_from(filter_input),
        )?;
        let timed = envelope.time_ms > 0;
        let rotation_matches = if timed {
            filter.rotation() == atomic_bloom::Rotation::Manual
        } else {
            filter.rotation() == atomic_bloom::Rotation::Count && envelope.left_ms == 0
        };
        // A time window `WBF.RESERVE` can make: whole seconds, at least
        // one, at most `MAX_TIME_MS`.
        if !rotation_matches
            || envelope.time_ms % 1000 != 0
            || envelope.time_ms > MAX_TIME_MS
            || filter.window() as u64 != envelope.window
            || filter.generations() != envelope.generations
            || !GENERATIONS.contains(&envelope.generations)
            || filter.target_fpr() != envelope.error_rate
        {
            return Err(RecordError::Mismatch(
                "the envelope's options are not the filter's",
            ));
        }
        let options = WindowOptions {
            window: envelope.window,
            error_rate: envelope.error_rate,
            generations: Some(envelope.generations),
            time_ms: envelope.time_ms,
            seed: filter.hasher().seed(),
        };
        let mut windowed = Windowed {
            filter,
            options,
            next_rotation_ms: 0,
        };
        windowed.end_in(envelope.left_ms, now_ms);
        Ok(windowed)
    }
}

impl Loading {
    /// A record's first chunk: the filter whole, or what is still to come.
    ///
    /// # Errors
    ///
    /// A bad envelope or record.
    pub(crate) fn start(
        chunk: &[u8],
        now_ms: i64,
    ) -> Result<Result<Windowed, Loading>, RecordError> {
        let envelope = Envelope::decode(chunk)?;
        let total = envelope.record_bytes();
        if chunk.len() as u64 > total {
            return Err(RecordError::Mismatch("a chunk longer than its record"));
        }
        let mut loading = Loading {
            total,
            received: Vec::new(),
        };
        loading.append(chunk)?;
        loading.finish(now_ms)
    }

    /// Takes the chunk at `offset`; the filter once the last has come.
    ///
    /// # Errors
    ///
    /// A chunk out of place, or a record that does not load.
    pub(crate) fn resume(
        mut self,
        offset: u64,
        chunk: &[u8],
        now_ms: i64,
    ) -> Result<Result<Windowed, Loading>, RecordError> {
        if offset != self.received.len() as u64 || offset + chunk.len() as u64 > self.total {
            return Err(RecordError::Mismatch("a chunk out of place"));
        }
        self.append(chunk)?;
        self.finish(now_ms)
    }

    /// Appends `chunk`, asking the allocator first: an AOF replayed on a
    /// server without room is an error, not an abort.
    fn append(&mut self, chunk: &[u8]) -> Result<(), RecordError> {
        self.received.try_reserve(chunk.len()).map_err(|_| {
            RecordError::Filter(atomic_bloom::Error::AllocationFailed {
                bytes: self.received.len().saturating_add(chunk.len()),
            })
        })?;
        self.received.extend_from_slice(chunk);
        Ok(())
    }

    fn finish(self, now_ms: i64) -> Result<Result<Windowed, Loading>, RecordError> {
        if (self.received.len() as u64) < self.total {
            return Ok(Err(self));
        }
        Windowed::read_record(self.received.as_slice(), now_ms, None).map(Ok)
    }
}
