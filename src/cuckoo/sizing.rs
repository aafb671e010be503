//! Choosing a cuckoo table for a capacity and a rate: the fingerprint
//! width follows the rate, and the bucket count the capacity at a load
//! every table reaches before its first failed insert.

use super::core::Shape;
use crate::block::WORDS_PER_BLOCK;
use crate::Error;

/// A way to pack fingerprints: slot width and slots per bucket (one or two
/// words), with the load at which `capacity()` is set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Packing {
    pub(crate) slot_bits: u32,
    pub(crate) bucket_slots: u32,
    /// Fraction of the slots `capacity()` counts on: below the least load
    /// measured at the first failed insert (`tests/cuckoo_rate.rs`, 8
    /// seeds of 200k slots each), with about 1.5% to spare.
    pub(crate) load: f64,
}

/// Every packing, from the most bits per item to the least rate. Loads at
/// the first failed insert measured with the breadth-first relocation
/// (least of 8 seeds; see `docs/BENCHMARKS.md`):
///
/// | slots x bits | words per bucket | least load measured | load used |
/// |---|---|---|---|
/// | 8 x 8 | 1 | 0.995 | 0.98 |
/// | 12 x 10 | 2 | 0.996 | 0.98 |
/// | 5 x 12 | 1 | 0.983 | 0.96 |
/// | 8 x 16 | 2 | 0.995 | 0.98 |
/// | 4 x 16 | 1 | 0.973 | 0.95 |
/// | 6 x 21 | 2 | 0.990 | 0.97 |
/// | 3 x 21 | 1 | 0.939 | 0.92 |
/// | 4 x 32 | 2 | 0.971 | 0.95 |
/// | 2 x 32 | 1 | 0.817 | 0.78 |
pub(crate) const PACKINGS: [Packing; 10] = [
    Packing {
        slot_bits: 8,
        bucket_slots: 8,
        load: 0.98,
    },
    Packing {
        slot_bits: 10,
        bucket_slots: 12,
        load: 0.98,
    },
    Packing {
        slot_bits: 12,
        bucket_slots: 10,
        load: 0.98,
    },
    Packing {
        slot_bits: 12,
        bucket_slots: 5,
        load: 0.96,
    },
    Packing {
        slot_bits: 16,
        bucket_slots: 8,
        load: 0.98,
    },
    Packing {
        slot_bits: 16,
        bucket_slots: 4,
        load: 0.95,
    },
    Packing {
        slot_bits: 21,
        bucket_slots: 6,
        load: 0.97,
    },
    Packing {
        slot_bits: 21,
        bucket_slots: 3,
        load: 0.92,
    },
    Packing {
        slot_bits: 32,
        bucket_slots: 4,
        load: 0.95,
    },
    Packing {
        slot_bits: 32,
        bucket_slots: 2,
        load: 0.78,
    },
];

impl Packing {
    /// Words of one bucket.
    pub(crate) fn bucket_words(&self) -> u32 {
        self.bucket_slots / (64 / self.slot_bits)
    }

    /// The expected false-positive rate at `capacity()`.
    pub(crate) fn rate(&self) -> f64 {
        rate_at(self.slot_bits, self.bucket_slots, self.load)
    }

    /// Bits per item at `capacity()`, the version stripes not counted.
    pub(crate) fn bits_per_item(&self) -> f64 {
        64.0 * f64::from(self.bucket_words()) / (f64::from(self.bucket_slots) * self.load)
    }

    /// The packing of a table of `slot_bits`-bit slots and `bucket_slots`
    /// slots per bucket, if it is one of [`PACKINGS`].
    pub(crate) fn of(slot_bits: u32, bucket_slots: u32) -> Option<Packing> {
        PACKINGS
            .iter()
            .copied()
            .find(|p| p.slot_bits == slot_bits && p.bucket_slots == bucket_slots)
    }
}

/// The expected false-positive rate of a table of `slot_bits`-bit slots,
/// `bucket_slots` a bucket, with `load` of its slots full: a lookup
/// compares its fingerprint with the full slots of two buckets, each equal
/// by chance with probability `1 / (2^w - 2)` (0 is empty, all ones a
/// reservation).
pub(crate) fn rate_at(slot_bits: u32, bucket_slots: u32, load: f64) -> f64 {
    let codes = ((1u64 << slot_bits) - 2) as f64;
    1.0 - (1.0 - 1.0 / codes).powf(2.0 * f64::from(bucket_slots) * load)
}

/// The lowest rate any packing gives.
pub(crate) fn lowest_rate() -> f64 {
    PACKINGS.iter().map(Packing::rate).fold(1.0, f64::min)
}

/// The packing with the fewest bits per item whose expected rate at
/// capacity is at most `rate`.
pub(crate) fn packing_for(rate: f64) -> Result<Packing, Error> {
    PACKINGS
        .iter()
        .copied()
        .filter(|p| p.rate() <= rate)
        .min_by(|a, b| a.bits_per_item().total_cmp(&b.bits_per_item()))
        .ok_or(Error::CuckooRateTooLow {
            rate,
            lowest: lowest_rate(),
        })
}

/// A table for `capacity` items at `rate`: its shape and the capacity it
/// really has (at least the one asked for).
pub(crate) fn plan(capacity: usize, rate: f64) -> Result<(Shape, usize), Error> {
    crate::sizing::validate(capacity, rate)?;
    let packing = packing_for(rate)?;
    let per_bucket = f64::from(packing.bucket_slots) * packing.load;
    let buckets = (capacity as f64 / per_bucket).ceil();
    if buckets.is_nan() || buckets >= (isize::MAX as usize / 64) as f64 {
        return Err(Error::TooLarge { capacity, rate });
    }
    // Whole 64-byte lines: the words are allocated by the line, and
    // buckets in the last line's spare words hold items at no cost.
    let per_line = WORDS_PER_BLOCK / packing.bucket_words() as usize;
    let buckets = (buckets as usize).max(1).div_ceil(per_line) * per_line;
    let shape = Shape::new(packing.slot_bits, packing.bucket_slots, buckets)
        .map_err(|_| Error::TooLarge { capacity, rate })?;
    Ok((shape, capacity_of(&shape)))
}

/// The capacity of a table of `shape`: its slots at the packing's load.
pub(crate) fn capacity_of(shape: &Shape) -> usize {
    let load = Packing::of(shape.slot_bits(), shape.bucket_slots()).map_or(1.0, |p| p.load);
    (shape.slots() as f64 * load).floor() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_picks_the_fingerprint_width() {
        let one_percent = packing_for(0.01).unwrap();
        assert_eq!((one_percent.slot_bits, one_percent.bucket_slots), (12, 10));
        assert!(
            one_percent.bits_per_item() <= 13.2,
            "{}",
            one_percent.bits_per_item()
        );
        let tenth = packing_for(0.001).unwrap();
        assert_eq!((tenth.slot_bits, tenth.bucket_slots), (16, 8));
        assert!(tenth.bits_per_item() <= 16.4);
        assert_eq!(packing_for(0.1).unwrap().slot_bits, 8);
        assert!(matches!(
            packing_for(1e-12),
            Err(Error::CuckooRateTooLow { .. })
        ));
    }

    #[test]
    fn a_plan_holds_its_capacity() {
        for capacity in [1usize, 7, 1000, 1_000_000] {
            let (shape, real) = plan(capacity, 0.01).unwrap();
            assert!(real >= capacity, "{capacity}: {real}");
            assert!(shape.buckets() >= 1);
            assert_eq!(
                shape.words() % WORDS_PER_BLOCK,
                0,
                "{capacity}: whole lines"
            );
        }
        assert_eq!(plan(0, 0.01).unwrap_err(), Error::ZeroCapacity);
        assert!(matches!(
            plan(usize::MAX, 0.01),
            Err(Error::TooLarge { .. })
        ));
    }
}
