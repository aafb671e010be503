//! `CountingBloomFilter`'s body.

use std::io::{Read, Write};

use super::bloom::{read_geometry, write_geometry};
use super::{Decoder, Encoder, Kind, Saved, Stored};
use crate::counters::CounterArray;
use crate::{CountingBloomFilter, DefaultHasher, Error};

impl<T: ?Sized> Saved for CountingBloomFilter<T, DefaultHasher> {
    const KIND: Kind = Kind::Counting;

    fn seed(&self) -> u64 {
        self.hasher().seed()
    }

    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        write_geometry(out, self.geometry(), self.target_fpr())?;
        let nonzero = self.counters().write(out)?;
        out.u64(nonzero)
    }

    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error> {
        let (geometry, rate) = read_geometry(input, &[Stored::Counters])?;
        input.part("counter array");
        let (counters, counted) = CounterArray::read(geometry.blocks, input)?;
        input.part("non-zero counter count");
        let stored = input.u64()?;
        input.expect_count("non-zero counters", stored, counted);
        let hasher = DefaultHasher::with_seed(seed);
        Ok(CountingBloomFilter::from_counters(
            counters, geometry, rate, hasher,
        ))
    }
}

saving_methods! {
    /// # Saving and loading
    ///
    /// In the format of `FORMAT.md`, counters and all: a loaded filter counts,
    /// removes and answers exactly as the saved one did. Only filters with the
    /// [`DefaultHasher`] save.
    impl[T: ?Sized] CountingBloomFilter<T, DefaultHasher>,
        "CountingBloomFilter",
        "CountingBloomFilter::<u64>",
        "CountingBloomFilter::<u64>::new(1000, 0.01)?"
    {
        /// Writes the filter to `out` (wrap a file in a `BufWriter`, or use
        /// [`save`](Self::save)).
        ///
        /// # Consistency
        ///
        /// Other threads may insert and remove while it writes. Each counter is
        /// read once: an update that happened-before the call is in the output,
        /// updates racing it may or may not be, and an item whose insert races
        /// the save may be saved with only some of its counters raised.
        ///
        /// # Errors
        ///
        /// [`Error::Io`] when `out` fails.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::CountingBloomFilter;
        ///
        /// let f: CountingBloomFilter<u64> = CountingBloomFilter::builder(1000, 0.01).seed(7).build()?;
        /// f.insert(&1);
        /// f.insert(&1);
        /// let mut bytes = Vec::new();
        /// f.write_to(&mut bytes)?;
        /// let g: CountingBloomFilter<u64> = CountingBloomFilter::read_from(bytes.as_slice())?;
        /// assert_eq!(g.count(&1), 2);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_to;

        /// Reads a filter that [`write_to`](Self::write_to) wrote, checking
        /// every field and both checksums; allocates only as the input delivers.
        ///
        /// # Errors
        ///
        /// As [`BloomFilter::read_from`](crate::BloomFilter::read_from).
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::{BloomFilter, CountingBloomFilter, Error};
        ///
        /// let plain: BloomFilter<u64> = BloomFilter::new(1000, 0.01)?;
        /// let mut bytes = Vec::new();
        /// plain.write_to(&mut bytes)?;
        /// let err = CountingBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap_err();
        /// assert!(matches!(err, Error::WrongKind { .. }));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn read_from;
    }
}
