//! `CuckooFilter`'s body: its options, then every stage's table.

use std::io::{Read, Write};

use super::{reserve_as_read, to_usize, Decoder, Encoder, Kind, Saved};
use crate::bits::BitArray;
use crate::block::WORDS_PER_BLOCK;
use crate::cuckoo::core::{Shape, Table};
use crate::cuckoo::sizing::{capacity_of, plan, plan_before_least_slots, Packing};
use crate::cuckoo::stages::{Growth, Stage};
use crate::sync::Arc;
use crate::wire::PAGE_BYTES;
use crate::{CuckooFilter, DefaultHasher, Error};

/// Stages a loaded filter may have: a stage's rate halves each time, and
/// past about 30 halvings of any rate no packing reaches it.
const MAX_STAGES: u64 = 64;

fn write_stage<W: Write>(out: &mut Encoder<W>, stage: &Stage) -> Result<(), Error> {
    let shape = stage.table.shape();
    out.u8(shape.slot_bits() as u8)?;
    out.u8(shape.bucket_slots() as u8)?;
    out.usize(shape.buckets())?;
    out.f64(stage.rate)?;
    // No move is half done in what is written, and no slot is reserved.
    let _relocating = stage.table.lock_relocation();
    // The count is of the slots as written, page by page: inserts and
    // removes go on meanwhile, and a second look at the table would count
    // slots other than the ones written (a file that would not load).
    let words = stage.table.words();
    let mut page = Vec::with_capacity(PAGE_BYTES);
    let mut held = 0;
    for page_index in 0..words.page_count() {
        page.clear();
        words.encode_page(page_index, &mut page);
        held += stage
            .table
            .held_in_bytes(page_index * (PAGE_BYTES / 8), &page);
        out.page(page_index, &page)?;
    }
    out.usize(held)
}

fn read_stage<R: Read>(input: &mut Decoder<R>) -> Result<Stage, Error> {
    input.part("stage shape");
    let slot_bits = u32::from(input.u8()?);
    let bucket_slots = u32::from(input.u8()?);
    let buckets = to_usize(input.u64()?, "cuckoo buckets")?;
    let rate = input.f64()?;
    if !(rate > 0.0 && rate < 1.0) {
        return Err(Error::InvalidStoredRate { rate });
    }
    if Packing::of(slot_bits, bucket_slots).is_none() {
        return Err(Error::InvalidField {
            field: "cuckoo packing (slot bits x 256 + bucket slots)",
            value: u64::from(slot_bits) << 8 | u64::from(bucket_slots),
        });
    }
    let shape = Shape::new(slot_bits, bucket_slots, buckets)?;
    input.part("cuckoo slots");
    let words = BitArray::read_pages(shape.words().div_ceil(WORDS_PER_BLOCK), input)?;
    let table = Table::from_words(words, shape);
    let held = table.check_loaded()?;
    input.part("fingerprint count");
    let stored = input.u64()?;
    input.expect_count("fingerprints", stored, held as u64);
    Ok(Stage {
        table,
        capacity: capacity_of(&shape),
        rate,
    })
}

impl<T: ?Sized> Saved for CuckooFilter<T, DefaultHasher> {
    const KIND: Kind = Kind::Cuckoo;

    fn seed(&self) -> u64 {
        self.hasher().seed()
    }

    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        out.f64(self.target_fpr())?;
        let growth = self.growth_state();
        out.u8(u8::from(growth.is_some()))?;
        out.usize(growth.map_or(0, |g| g.first_capacity))?;
        // One snapshot of the list: a stage appended meanwhile is not
        // half written.
        let later = growth.map(|g| g.later.load().iter().cloned().collect::<Vec<_>>());
        let later = later.unwrap_or_default();
        out.usize(1 + later.len())?;
        write_stage(out, self.first_stage())?;
        for stage in &later {
            write_stage(out, stage)?;
        }
        Ok(())
    }

    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error> {
        input.part("cuckoo options");
        let rate = input.f64()?;
        if !(rate > 0.0 && rate < 1.0) {
            return Err(Error::InvalidStoredRate { rate });
        }
        let grows = match input.u8()? {
            0 => false,
            1 => true,
            other => {
                return Err(Error::InvalidField {
                    field: "cuckoo growth",
                    value: u64::from(other),
                })
            }
        };
        let first_capacity = to_usize(input.u64()?, "cuckoo first capacity")?;
        let stages = input.u64()?;
        if stages == 0 {
            return Err(Error::ZeroStages);
        }
        if (!grows && stages != 1) || stages > MAX_STAGES || (grows && first_capacity == 0) {
            return Err(Error::InvalidField {
                field: "cuckoo stage count",
                value: stages,
            });
        }
        let first = read_stage(input)?;
        let mut later = Vec::new();
        for index in 1..stages {
            reserve_as_read(&mut later, (stages - 1) as usize, 1)?;
            later.push(Arc::new(read_stage(input)?));
            let _ = index;
        }
        let stage_rates = std::iter::once(first.rate).chain(later.iter().map(|s| s.rate));
        for (index, stored) in stage_rates.enumerate() {
            let expected = if grows {
                rate / 2f64.powi(index as i32 + 1)
            } else {
                rate
            };
            if (stored - expected).abs() > expected * 1e-9 {
                return Err(Error::InvalidStoredRate { rate: stored });
            }
        }
        if !grows && first_capacity != 0 {
            return Err(Error::InvalidField {
                field: "cuckoo first capacity (0 without growth)",
                value: first_capacity as u64,
            });
        }
        if grows {
            // Every stage is the one the growth options plan for its index:
            // the next stage, planned from them, is then twice the last one
            // read, which the input's bytes back (a stored first capacity of
            // 2^40 asked for 3 TB at the first growth).
            let shapes = std::iter::once(&first).chain(later.iter().map(|s| &**s));
            for (index, stage) in shapes.enumerate() {
                let planned = u32::try_from(index)
                    .ok()
                    .and_then(|index| 1usize.checked_shl(index))
                    .and_then(|factor| first_capacity.checked_mul(factor))
                    .map(|capacity| (capacity, rate / 2f64.powi(index as i32 + 1)));
                // Files saved before tables had a least size keep their
                // smaller stages.
                let is_planned = planned.is_some_and(|(capacity, rate)| {
                    [
                        plan(capacity, rate),
                        plan_before_least_slots(capacity, rate),
                    ]
                    .into_iter()
                    .any(|planned| planned.is_ok_and(|(shape, _)| shape == *stage.table.shape()))
                });
                if !is_planned {
                    return Err(Error::InvalidField {
                        field: "cuckoo stage not the growth options' (its index)",
                        value: index as u64,
                    });
                }
            }
        }
        let growth = grows.then(|| Growth::new(first_capacity, rate, later));
        Ok(CuckooFilter::from_stages(
            first,
            growth,
            rate,
            DefaultHasher::with_seed(seed),
        ))
    }
}

saving_methods! {
    /// # Saving and loading
    ///
    /// In the format of `FORMAT.md`, every stage's slots: a loaded filter
    /// finds, counts and removes exactly as the saved one did. Only
    /// filters with the [`DefaultHasher`] save.
    impl[T: ?Sized] CuckooFilter<T, DefaultHasher>,
        "CuckooFilter",
        "CuckooFilter::<u64>",
        "CuckooFilter::<u64>::new(1000, 0.01)?"
    {
        /// Writes the filter to `out` (wrap a file in a `BufWriter`, or use
        /// [`save`](Self::save)).
        ///
        /// # Consistency
        ///
        /// Other threads may insert, remove and look up while it writes;
        /// inserts that must relocate wait while a stage is written (no
        /// fingerprint is written mid-move). Each word is read once: an
        /// update that happened-before the call is in the output, one
        /// racing it may or may not be.
        ///
        /// # Errors
        ///
        /// [`Error::Io`] when `out` fails.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::CuckooFilter;
        ///
        /// let f: CuckooFilter<u64> = CuckooFilter::builder(1000, 0.01).seed(7).build()?;
        /// f.insert(&1)?;
        /// f.insert(&1)?;
        /// let mut bytes = Vec::new();
        /// f.write_to(&mut bytes)?;
        /// let g: CuckooFilter<u64> = CuckooFilter::read_from(bytes.as_slice())?;
        /// assert_eq!(g.count(&1), 2);
        /// assert_eq!(f, g);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_to;

        /// Reads a filter that [`write_to`](Self::write_to) wrote, checking
        /// every field, every page and the body's checksum; allocates only
        /// as the input delivers.
        ///
        /// # Errors
        ///
        /// As [`BloomFilter::read_from`](crate::BloomFilter::read_from); and
        /// [`Error::InvalidField`] for a packing the library does not make,
        /// a reserved or out-of-range slot, or bits past the last slot.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::{BloomFilter, CuckooFilter, Error};
        ///
        /// let plain: BloomFilter<u64> = BloomFilter::new(1000, 0.01)?;
        /// let mut bytes = Vec::new();
        /// plain.write_to(&mut bytes)?;
        /// let err = CuckooFilter::<u64>::read_from(bytes.as_slice()).unwrap_err();
        /// assert!(matches!(err, Error::WrongKind { .. }));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn read_from;
    }
}
