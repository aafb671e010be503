//! `WindowedBloomFilter`'s body: its shape, its rotation state and its
//! bits (`FORMAT.md`, kind 5).

use std::io::{Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::bloom::{encoded, header_segment};
use super::chunks::{self, SaveCursor, Segment};
use super::{
    read_sizing, sizing_byte, to_usize, Decoder, Encoder, Kind, Saved, Stored, BIT_LAYOUTS,
};
use crate::bits::BitArray;
use crate::sizing::WindowGeometry;
use crate::windowed::{monotonic_clock, timing, Rotation, Timing};
use crate::{DefaultHasher, Error, WindowedBloomFilter};

/// The rotation byte.
fn rotation_byte(rotation: Rotation) -> u8 {
    match rotation {
        Rotation::Count => 0,
        Rotation::Time(_) => 1,
        Rotation::Manual => 2,
    }
}

/// Nanoseconds since the Unix epoch now (0 if the clock is before it).
fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos().min(u128::from(u64::MAX)) as u64)
}

impl<T: ?Sized> Saved for WindowedBloomFilter<T, DefaultHasher> {
    const KIND: Kind = Kind::Windowed;

    fn seed(&self) -> u64 {
        self.hasher().seed()
    }

    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        self.write_fields(out)?;
        self.bits().write_pages(out)
    }

    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error> {
        read_body(input, seed)
    }
}

impl<T: ?Sized, S> WindowedBloomFilter<T, S> {
    /// Writes every field before the bits: the shape, then the rotation
    /// state read once (the bits written after it hold every insert that
    /// completed before the save began).
    fn write_fields<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        let geometry = self.geometry();
        out.u8(Stored::Bits(geometry.layout).byte())?;
        out.u8(sizing_byte(geometry.sizing))?;
        out.u8(geometry.generations as u8)?;
        out.u8(rotation_byte(self.rotation()))?;
        out.u32(geometry.bits_per_word)?;
        out.usize(self.window())?;
        out.f64(self.target_fpr())?;
        out.usize(geometry.generation_capacity)?;
        out.usize(geometry.blocks)?;
        // One reading of the state: the bits written after it hold every
        // insert that completed before the save began.
        let (epoch, rotating, len, ends) = self.ring_snapshot();
        let now = self.now();
        let (window_nanos, saved_at) = match self.timing() {
            Timing::Time { window, .. } => (window.as_nanos() as u64, unix_nanos()),
            _ => (0, 0),
        };
        out.u64(window_nanos)?;
        out.u64(saved_at)?;
        for end in ends {
            let left = if window_nanos == 0 {
                0
            } else {
                end.saturating_sub(now)
            };
            out.u64(left as u64)?;
        }
        out.u64(epoch)?;
        out.u8(u8::from(rotating))?;
        out.usize(len as usize)
    }
}

impl<T: ?Sized> WindowedBloomFilter<T, DefaultHasher> {
    fn segments(&self) -> Vec<Segment<'_>> {
        vec![
            header_segment(Kind::Windowed, self.hasher().seed()),
            Segment::Fields(encoded(|out| self.write_fields(out))),
            Segment::Bits(self.bits()),
            Segment::BodyChecksum,
        ]
    }

    fn chunked_len(&self) -> u64 {
        chunks::total_len(&self.segments())
    }

    /// The header and the fields come whole in the first piece.
    fn append_chunk(&self, cursor: &mut SaveCursor, max: usize, out: &mut Vec<u8>) {
        let segments = self.segments();
        let fields_end = chunks::total_len(&segments[..2]);
        let max = match fields_end.checked_sub(cursor.offset()) {
            Some(left) if left > 0 => max.max(left as usize),
            _ => max,
        };
        chunks::append_chunk(&segments, cursor, max, out)
    }
}

chunk_methods! {
    impl[T: ?Sized] WindowedBloomFilter<T, DefaultHasher>,
        "WindowedBloomFilter",
        "WindowedBloomFilter::builder(10_000, 0.01).seed(3).build()?"
    {
        /// Bytes [`write_to`](Self::write_to) writes.
        fn saved_len;
        /// The next piece, up to `max` bytes, of what
        /// [`write_to`](Self::write_to) writes, from where `cursor` stands (a
        /// new cursor: the start); empty at the end. The header and the fields
        /// come whole in the first piece, whatever `max` (about 130 bytes and
        /// 8 per generation), so that the rotation state is read once.
        ///
        /// # Consistency
        ///
        /// The rotation state is the one of the first piece; each block is read
        /// when its piece is made. Inserts between calls may or may not be in
        /// the pieces, and a rotation between them leaves its new generation's
        /// items in the slot of the oldest one (remembered for fewer
        /// generations once loaded), as with [`write_to`](Self::write_to)
        /// racing inserts. The counts and checksums written match the bytes
        /// written, so the pieces always load.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::{SaveCursor, WindowedBloomFilter};
        ///
        /// let w: WindowedBloomFilter<str> = WindowedBloomFilter::builder(10_000, 0.01).seed(3).build()?;
        /// w.insert("a");
        /// let (mut cursor, mut pieces) = (SaveCursor::default(), Vec::new());
        /// loop {
        ///     let piece = w.write_chunk(&mut cursor, 4096);
        ///     if piece.is_empty() {
        ///         break;
        ///     }
        ///     pieces.extend(piece);
        /// }
        /// let mut whole = Vec::new();
        /// w.write_to(&mut whole)?;
        /// assert_eq!(pieces, whole);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_chunk;
    }
}

/// Reads what `write_body` wrote.
fn read_body<T: ?Sized, R: Read>(
    input: &mut Decoder<R>,
    seed: u64,
) -> Result<WindowedBloomFilter<T, DefaultHasher>, Error> {
    // Kind 5 is new in version 4: an older file naming it is not one this
    // library wrote.
    if input.version() < 4 {
        return Err(Error::UnknownKind {
            found: Kind::Windowed as u8,
        });
    }
    input.part("window parameters");
    let Stored::Bits(layout) = Stored::from_byte(input.u8()?, &BIT_LAYOUTS, input)? else {
        unreachable!("BIT_LAYOUTS holds bit-array layouts only")
    };
    let sizing = read_sizing(input)?;
    let generations = u32::from(input.u8()?);
    let rotation = input.u8()?;
    let bits_per_word = input.u32()?;
    let window = to_usize(input.u64()?, "window")?;
    let rate = input.f64()?;
    if !(rate > 0.0 && rate < 1.0) {
        return Err(Error::InvalidStoredRate { rate });
    }
    let generation_capacity = to_usize(input.u64()?, "generation capacity")?;
    let blocks = to_usize(input.u64()?, "block count")?;
    let geometry = WindowGeometry {
        layout,
        sizing,
        generations,
        bits_per_word,
        blocks,
        generation_capacity,
    };
    geometry.check()?;
    if window == 0 || generation_capacity != window.div_ceil(generations as usize - 1) {
        return Err(Error::InvalidField {
            field: "window",
            value: window as u64,
        });
    }
    let window_nanos = input.u64()?;
    let saved_at = input.u64()?;
    let rotation = match (rotation, window_nanos, saved_at) {
        (0, 0, 0) => Rotation::Count,
        (2, 0, 0) => Rotation::Manual,
        (1, nanos, _) if nanos > 0 => Rotation::Time(Duration::from_nanos(nanos)),
        _ => {
            return Err(Error::InvalidField {
                field: "rotation",
                value: u64::from(rotation),
            })
        }
    };
    let clock = monotonic_clock();
    // Time windows: the ends are kept relative to the save, and the
    // time the filter spent saved counts as passed.
    let now = clock().as_nanos() as i64;
    let downtime = unix_nanos()
        .saturating_sub(saved_at)
        .min(i64::MAX as u64 / 4) as i64;
    let mut ends = Vec::with_capacity(generations as usize);
    for _ in 0..generations {
        let left = input.u64()?;
        ends.push(match rotation {
            // Kept far from i64's ends, where the clock's sums saturate.
            Rotation::Time(_) => now
                .saturating_add(left as i64)
                .saturating_sub(downtime)
                .clamp(i64::MIN / 4, i64::MAX / 4),
            _ if left != 0 => {
                return Err(Error::InvalidField {
                    field: "generation end",
                    value: left,
                })
            }
            _ => i64::MIN / 4,
        });
    }
    let timing = timing(rotation, &geometry, Some(clock))?;
    let epoch = input.u64()?;
    let max = WindowedBloomFilter::<T>::MAX_LOADED_EPOCH;
    if epoch > max {
        return Err(Error::EpochOutOfRange { epoch, max });
    }
    let rotating = match input.u8()? {
        0 => false,
        1 => true,
        other => {
            return Err(Error::InvalidField {
                field: "rotating",
                value: u64::from(other),
            })
        }
    };
    let len = input.u64()?;
    if len >= 1 << 40 {
        return Err(Error::InvalidField {
            field: "generation length",
            value: len,
        });
    }
    input.part("bit array");
    let bits = BitArray::read_pages(geometry.lines(), input)?;
    let filter = WindowedBloomFilter::from_state(
        bits,
        geometry,
        rate,
        window,
        timing,
        DefaultHasher::with_seed(seed),
        epoch,
        len,
        ends,
    );
    filter.mark_all_written();
    if rotating {
        filter.finish_saved_rotation();
    }
    Ok(filter)
}

saving_methods! {
    /// # Saving and loading
    ///
    /// In the format of `FORMAT.md` (kind 5): the bits of every generation
    /// and the rotation state, so a loaded filter answers and rotates
    /// exactly as the saved one would have. Only filters with the
    /// [`DefaultHasher`] save. A time window is saved with how long each
    /// generation had left, and the time the filter spends saved counts
    /// as passed (a filter loaded a day later has forgotten a one-hour
    /// window); a custom clock is not saved (the loaded filter reads
    /// `std::time::Instant`).
    impl[T: ?Sized] WindowedBloomFilter<T, DefaultHasher>,
        "WindowedBloomFilter",
        "WindowedBloomFilter::<str>",
        "WindowedBloomFilter::<str>::new(1000, 0.01)?"
    {
        /// Writes the filter to `out` (wrap a file in a `BufWriter`, or use
        /// [`save`](Self::save)).
        ///
        /// # Consistency
        ///
        /// Other threads may insert while it writes. Every insert that
        /// happened-before the call is in the output. The epoch is read
        /// once, first: an insert racing the save may or may not be in the
        /// output, and if a rotation completes during the save, items
        /// inserted after it may be saved in the slot of the oldest
        /// generation (remembered for fewer generations once loaded). A
        /// rotation under way is completed by the loader.
        ///
        /// # Errors
        ///
        /// [`Error::Io`] when `out` fails.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::WindowedBloomFilter;
        ///
        /// let w: WindowedBloomFilter<str> = WindowedBloomFilter::builder(1000, 0.01).seed(7).build()?;
        /// w.insert("a");
        /// let mut bytes = Vec::new();
        /// w.write_to(&mut bytes)?;
        /// let v: WindowedBloomFilter<str> = WindowedBloomFilter::read_from(bytes.as_slice())?;
        /// assert!(v.contains("a"));
        /// assert_eq!(v.epoch(), w.epoch());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_to;

        /// Reads a filter that [`write_to`](Self::write_to) wrote, checking
        /// every field and both checksums; allocates only as the input
        /// delivers bytes.
        ///
        /// # Errors
        ///
        /// Those of [`BloomFilter::read_from`](crate::BloomFilter::read_from),
        /// [`Error::InvalidField`] for a window or a rotation no filter has,
        /// and [`Error::EpochOutOfRange`] for an epoch past
        /// [`MAX_LOADED_EPOCH`](Self::MAX_LOADED_EPOCH).
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::{BloomFilter, Error, WindowedBloomFilter};
        ///
        /// let plain: BloomFilter<str> = BloomFilter::new(1000, 0.01)?;
        /// let mut bytes = Vec::new();
        /// plain.write_to(&mut bytes)?;
        /// let err = WindowedBloomFilter::<str>::read_from(bytes.as_slice()).unwrap_err();
        /// assert!(matches!(err, Error::WrongKind { .. }));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn read_from;
    }
}
