//! `ScalableBloomFilter`'s body: its growth options and every stage.

use std::io::{Read, Write};
use std::path::Path;

use super::bloom::{read_bits, write_bits};
use super::{reserve_as_read, to_usize, Decoder, Encoder, Kind, Saved};
use crate::scalable::GrowthPlan;
use crate::{DefaultHasher, Error, Layout, ScalableBloomFilter};

/// Stored for "none" in the optional fields.
const NONE: u64 = u64::MAX;

fn layout_byte(layout: Layout) -> u8 {
    match layout {
        Layout::CacheLine => 0,
        Layout::Word => 1,
    }
}

/// Writes the growth options and every stage of `filter`, over one snapshot
/// of its stage list. Shared with the frontier.
pub(crate) fn write_stages<T: ?Sized, S, W: Write>(
    out: &mut Encoder<W>,
    filter: &ScalableBloomFilter<T, S>,
) -> Result<(), Error> {
    let plan = filter.plan();
    out.u8(layout_byte(plan.layout))?;
    out.u8(plan.growth as u8)?;
    out.f64(plan.tightening)?;
    out.f64(plan.rate)?;
    out.usize(plan.initial_capacity)?;
    out.u64(plan.memory_limit.map_or(NONE, |limit| limit as u64))?;
    out.u64(plan.first_stage_fill_bits.map_or(NONE, |bits| bits as u64))?;
    // One snapshot: a stage appended meanwhile is not half written.
    let stages = filter.stage_snapshot();
    out.usize(stages.len())?;
    for stage in &stages {
        write_bits(out, stage.filter())?;
    }
    Ok(())
}

/// Reads what [`write_stages`] wrote.
pub(crate) fn read_stages<T: ?Sized, R: Read>(
    input: &mut Decoder<R>,
    hasher: DefaultHasher,
) -> Result<ScalableBloomFilter<T, DefaultHasher>, Error> {
    input.part("growth options");
    let layout = match input.u8()? {
        0 => Layout::CacheLine,
        1 => Layout::Word,
        other => {
            return Err(Error::InvalidField {
                field: "layout",
                value: u64::from(other),
            })
        }
    };
    let growth = usize::from(input.u8()?);
    let tightening = input.f64()?;
    let rate = input.f64()?;
    if !(rate > 0.0 && rate < 1.0) {
        return Err(Error::InvalidStoredRate { rate });
    }
    let initial_capacity = to_usize(input.u64()?, "initial capacity")?;
    if initial_capacity == 0 {
        return Err(Error::InvalidField {
            field: "initial capacity",
            value: 0,
        });
    }
    // A limit past this machine's address space limits nothing here.
    let memory_limit = match input.u64()? {
        NONE => None,
        limit => Some(usize::try_from(limit).unwrap_or(usize::MAX)),
    };
    let first_stage_fill_bits = match input.u64()? {
        NONE => None,
        bits => Some(to_usize(bits, "first stage's fill")?),
    };
    let plan = GrowthPlan {
        initial_capacity,
        rate,
        growth,
        tightening,
        layout,
        memory_limit,
        first_stage_fill_bits,
    };
    plan.validate()?;
    let stored_stages = input.u64()?;
    if stored_stages == 0 {
        return Err(Error::ZeroStages);
    }
    let count = to_usize(stored_stages, "stage count")?;
    let mut filters = Vec::new();
    for _ in 0..count {
        reserve_as_read(&mut filters, count, 8)?;
        let filter = read_bits(input, ())?;
        if filter.layout() != layout {
            return Err(Error::InvalidField {
                field: "stage layout",
                value: u64::from(layout_byte(filter.layout())),
            });
        }
        filters.push(filter);
    }
    ScalableBloomFilter::from_stages(plan, filters, hasher)
}

impl<T: ?Sized> Saved for ScalableBloomFilter<T, DefaultHasher> {
    const KIND: Kind = Kind::Scalable;

    fn seed(&self) -> u64 {
        self.hasher().seed()
    }

    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        write_stages(out, self)
    }

    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error> {
        read_stages(input, DefaultHasher::with_seed(seed))
    }
}

/// # Saving and loading
///
/// In the format of `FORMAT.md`: the growth options and every stage, so a
/// loaded filter answers as the saved one did and grows on the same plan.
/// Only filters with the [`DefaultHasher`] save.
impl<T: ?Sized> ScalableBloomFilter<T, DefaultHasher> {
    /// Writes the filter to `out` (wrap a file in a `BufWriter`, or use
    /// [`save`](Self::save)).
    ///
    /// # Consistency
    ///
    /// It writes the stages of one snapshot of the stage list. Every insert
    /// that happened-before the call is in the output; inserts racing it,
    /// and a stage appended while it writes, may or may not be.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when `out` fails.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::ScalableBloomFilter;
    ///
    /// let f: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01).seed(7).build()?;
    /// for item in 0..1000 {
    ///     f.insert(&item);
    /// }
    /// let mut bytes = Vec::new();
    /// f.write_to(&mut bytes)?;
    /// let g: ScalableBloomFilter<u64> = ScalableBloomFilter::read_from(bytes.as_slice())?;
    /// assert_eq!(g.stages(), f.stages());
    /// assert!((0..1000).all(|item| g.contains(&item)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        super::write_to(self, out).map(drop)
    }

    /// Reads a filter that [`write_to`](Self::write_to) wrote, checking
    /// every field and both checksums; allocates only as the input delivers.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::read_from`](crate::BloomFilter::read_from), and
    /// [`Error::ZeroStages`], [`Error::InvalidGrowthFactor`],
    /// [`Error::InvalidTighteningRatio`].
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        super::read_from(input)
    }

    /// Saves the filter to `path`, crash-safe (see
    /// [`BloomFilter::save`](crate::BloomFilter::save)).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the directory cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        super::save(self, path.as_ref())
    }

    /// Loads a filter that [`save`](Self::save) wrote; the file must hold
    /// nothing after it.
    ///
    /// # Errors
    ///
    /// Those of [`read_from`](Self::read_from), and
    /// [`Error::TrailingBytes`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, Error> {
        super::load(path.as_ref())
    }
}
