//! `ScalableBloomFilter`'s body: its growth options and every stage.

use std::io::{Read, Write};

use super::bloom::{bits_segments, encoded, header_segment, read_bits, write_bits};
use super::chunks::{self, SaveCursor, Segment};
use super::{
    read_sizing, reserve_as_read, sizing_byte, to_usize, Decoder, Encoder, Kind, Saved, Stored,
    BIT_LAYOUTS,
};
use crate::block::BLOCK_BYTES;
use crate::scalable::GrowthPlan;
use crate::{BloomFilter, DefaultHasher, Error, ScalableBloomFilter};

/// Stored for "none" in the optional fields.
const NONE: u64 = u64::MAX;

/// Writes the growth options and every stage of `filter`, over one snapshot
/// of its stage list. Shared with the frontier.
pub(crate) fn write_stages<T: ?Sized, S, W: Write>(
    out: &mut Encoder<W>,
    filter: &ScalableBloomFilter<T, S>,
) -> Result<(), Error> {
    // One snapshot: a stage appended meanwhile is not half written.
    let stages = filter.stage_snapshot();
    write_growth_options(out, filter, stages.len())?;
    for stage in &stages {
        write_bits(out, stage.filter())?;
    }
    Ok(())
}

/// Writes the growth options and the stage count: what comes before the
/// stages.
pub(crate) fn write_growth_options<T: ?Sized, S, W: Write>(
    out: &mut Encoder<W>,
    filter: &ScalableBloomFilter<T, S>,
    stages: usize,
) -> Result<(), Error> {
    let plan = filter.plan();
    out.u8(Stored::Bits(plan.layout).byte())?;
    out.u8(sizing_byte(plan.sizing))?;
    out.u32(plan.growth)?;
    out.f64(plan.tightening)?;
    out.u64(plan.first_share.map_or(NONE, f64::to_bits))?;
    out.f64(plan.rate)?;
    out.usize(plan.initial_capacity)?;
    out.u64(plan.memory_limit.map_or(NONE, |limit| limit as u64))?;
    out.usize(stages)
}

/// Reads what [`write_stages`] wrote.
pub(crate) fn read_stages<T: ?Sized, R: Read>(
    input: &mut Decoder<R>,
    hasher: DefaultHasher,
) -> Result<ScalableBloomFilter<T, DefaultHasher>, Error> {
    input.part("growth options");
    let Stored::Bits(layout) = Stored::from_byte(input.u8()?, &BIT_LAYOUTS, input)? else {
        unreachable!("BIT_LAYOUTS holds bit-array layouts only")
    };
    let sizing = read_sizing(input)?;
    // Version 1 stored the growth factor in one byte.
    let growth = match input.version() {
        1 => u32::from(input.u8()?),
        _ => input.u32()?,
    };
    let tightening = input.f64()?;
    // Version 3 stores the first stage's share (none before).
    let first_share = match input.version() {
        1 | 2 => None,
        _ => match input.u64()? {
            NONE => None,
            bits => Some(f64::from_bits(bits)),
        },
    };
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
    if input.version() == 1 {
        // A first-stage fill that only loom models set; no longer stored.
        input.u64()?;
    }
    let plan = GrowthPlan {
        initial_capacity,
        rate,
        growth,
        tightening,
        first_share,
        layout,
        sizing,
        memory_limit,
        first_stage_fill_bits: None,
        exact_fill: false,
    };
    plan.validate()?;
    let stored_stages = input.u64()?;
    if stored_stages == 0 {
        return Err(Error::ZeroStages);
    }
    let count = to_usize(stored_stages, "stage count")?;
    let mut filters = Vec::new();
    for index in 0..count {
        reserve_as_read(&mut filters, count, 8)?;
        let filter = read_bits(input, ())?;
        if filter.layout() != layout {
            return Err(Error::InvalidField {
                field: "stage layout",
                value: u64::from(Stored::Bits(filter.layout()).byte()),
            });
        }
        if filter.sizing() != sizing {
            return Err(Error::InvalidField {
                field: "stage sizing",
                value: u64::from(sizing_byte(filter.sizing())),
            });
        }
        check_stage(&plan, index, &filter, index + 1 == count)?;
        filters.push(filter);
    }
    ScalableBloomFilter::from_stages(plan, filters, hasher)
}

/// Whether saved stage `index` backs the growth plan: its rate is the
/// plan's for its index, it holds at least the capacity the plan asks of
/// the index, and (the `newest` stage) at most twice what the plan's own
/// sizing puts in as many bits. The next stage is sized from the plan, so a
/// plan its stages do not back would ask for memory no saved byte
/// justifies (an initial capacity of 10^16 beside a first stage of 1,022
/// items asked for a 41 PB second stage). Sizes are compared within a
/// factor of two, not exactly, so that a file keeps loading when a later
/// version sizes stages somewhat otherwise. Only the newest stage's claim
/// is sized: the next stage's capacity is the growth factor times what the
/// plan asked of it, and sizing every stage (a search each, a millisecond
/// for a compact one) made a 63 KB file of 400 stages take 0.45 s to load.
fn check_stage<T: ?Sized>(
    plan: &GrowthPlan,
    index: usize,
    filter: &BloomFilter<T, ()>,
    newest: bool,
) -> Result<(), Error> {
    let (rate, stored_rate) = (plan.stage_rate(index), filter.target_fpr());
    // (Neither is NaN: a stored rate is checked to lie in (0, 1).)
    if (stored_rate - rate).abs() > rate * 1e-9 {
        return Err(Error::InvalidField {
            field: "stage rate (not its growth plan's; as f64 bits)",
            value: stored_rate.to_bits(),
        });
    }
    let capacity = filter.capacity();
    if !matches!(plan.stage_capacity(index), Some(asked) if asked <= capacity) {
        return Err(Error::InvalidField {
            field: "stage capacity (below what its growth plan asks)",
            value: capacity as u64,
        });
    }
    if !newest {
        return Ok(());
    }
    let planned = plan.geometry(index).map_err(|_| Error::InvalidField {
        field: "stage capacity (its growth plan cannot size it)",
        value: capacity as u64,
    })?;
    // Items per byte at this rate, as this version's sizing packs them.
    let density = planned.capacity as f64 / planned.blocks.saturating_mul(BLOCK_BYTES) as f64;
    if capacity as f64 > 2.0 * density * filter.memory_bytes() as f64 {
        return Err(Error::InvalidField {
            field: "stage capacity (more than its bits hold)",
            value: capacity as u64,
        });
    }
    Ok(())
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

saving_methods! {
    /// # Saving and loading
    ///
    /// In the format of `FORMAT.md`: the growth options and every stage, so a
    /// loaded filter answers as the saved one did and grows on the same plan.
    /// Only filters with the [`DefaultHasher`] save.
    impl[T: ?Sized] ScalableBloomFilter<T, DefaultHasher>,
        "ScalableBloomFilter",
        "ScalableBloomFilter::<str>",
        "ScalableBloomFilter::<str>::new(1000, 0.01)?"
    {
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
        fn write_to;

        /// Reads a filter that [`write_to`](Self::write_to) wrote, checking
        /// every field and both checksums; allocates only as the input delivers.
        ///
        /// # Errors
        ///
        /// As [`BloomFilter::read_from`](crate::BloomFilter::read_from), and
        /// [`Error::ZeroStages`], [`Error::InvalidGrowthFactor`],
        /// [`Error::InvalidTighteningRatio`], [`Error::InvalidFirstStageShare`],
        /// [`Error::SecondStageTooDense`] (options the builder refuses too:
        /// FORMAT.md says why).
        fn read_from;
    }
}

impl<T: ?Sized> ScalableBloomFilter<T, DefaultHasher> {
    fn chunked_len(&self) -> u64 {
        let stages = self.stage_snapshot();
        chunks::total_len(&self.segments(&stages))
    }

    /// The stages the cursor counted at its first piece.
    fn append_chunk(&self, cursor: &mut SaveCursor, max: usize, out: &mut Vec<u8>) {
        let stages = self.stage_snapshot();
        let counted = cursor.parts(stages.len());
        chunks::append_chunk(&self.segments(&stages[..counted]), cursor, max, out)
    }

    fn segments<'a>(
        &self,
        stages: &'a [crate::sync::Arc<crate::scalable::Stage<T>>],
    ) -> Vec<Segment<'a>> {
        let mut segments = vec![
            header_segment(Kind::Scalable, self.hasher().seed()),
            Segment::Fields(encoded(|out| write_growth_options(out, self, stages.len()))),
        ];
        for stage in stages {
            segments.extend(bits_segments(stage.filter()));
        }
        segments.push(Segment::BodyChecksum);
        segments
    }
}

chunk_methods! {
    impl[T: ?Sized] ScalableBloomFilter<T, DefaultHasher>,
        "ScalableBloomFilter",
        "ScalableBloomFilter::builder(100, 0.01).seed(1).build()?"
    {
        /// Bytes [`write_to`](Self::write_to) writes now (a stage appended
        /// later adds its own).
        fn saved_len;
        /// The next piece, up to `max` bytes, of what
        /// [`write_to`](Self::write_to) writes, from where `cursor` stands; empty
        /// at the end. As [`BloomFilter::write_chunk`](crate::BloomFilter::write_chunk).
        ///
        /// # Consistency
        ///
        /// As for `BloomFilter`, and the pieces hold the stages the first piece
        /// counted (the cursor keeps the count): a stage appended between two
        /// calls is left out of this save (every item inserted before the
        /// first piece is in it), and the pieces load. A cursor made with
        /// [`SaveCursor::at`](crate::SaveCursor::at) past the start counts the
        /// stages at its own first piece, so join only pieces of one save made
        /// in order to be sure of that.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::{SaveCursor, ScalableBloomFilter};
        ///
        /// let f: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01).seed(1).build()?;
        /// (0..1000u64).for_each(|i| { f.insert(&i); });
        /// let mut cursor = SaveCursor::default();
        /// let mut bytes = Vec::new();
        /// while let piece @ [_, ..] = &f.write_chunk(&mut cursor, 100)[..] {
        ///     bytes.extend_from_slice(piece);
        /// }
        /// let g: ScalableBloomFilter<u64> = ScalableBloomFilter::read_from(bytes.as_slice())?;
        /// assert!((0..1000u64).all(|i| g.contains(&i)));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_chunk;
    }
}

#[cfg(test)]
mod tests {
    use crate::sizing::PLANS;
    use crate::{Layout, ScalableBloomFilter};

    /// Loading sizes the newest stage alone (and the next one ahead), not
    /// every stage: a compact sizing is a search of about a millisecond,
    /// and a 63 KB file of 400 stages took 0.45 s to load when each stage
    /// was sized (from a review helper).
    #[test]
    fn loading_sizes_the_newest_stage_not_every_stage() {
        let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1, 0.5)
            .growth_factor(1)
            .tightening_ratio(0.9)
            .layout(Layout::Compact)
            .unlimited_memory()
            .seed(1)
            .build()
            .unwrap();
        let mut item = 0u64;
        while filter.stages() < 50 {
            filter.try_insert(&item).unwrap();
            item += 1;
        }
        let mut saved = Vec::new();
        filter.write_to(&mut saved).unwrap();
        let before = PLANS.with(std::cell::Cell::get);
        let loaded = ScalableBloomFilter::<u64>::read_from(saved.as_slice()).unwrap();
        let sized = PLANS.with(std::cell::Cell::get) - before;
        assert_eq!(loaded.stages(), 50);
        assert!(sized <= 2, "loading 50 stages sized {sized} filters");
    }
}
