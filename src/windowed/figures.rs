//! What a windowed filter tells about itself: its rotation state, its
//! shape, its memory.

use crate::block::BLOCK_BYTES;
use crate::{Layout, Rotation, Sizing, WindowedBloomFilter};

use super::Timing;

impl<T: ?Sized, S> WindowedBloomFilter<T, S> {
    /// The current generation's number: rotations since the filter was
    /// built (a saved filter keeps its count).
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::builder(30, 0.01).generations(4).build()?;
    /// for i in 0..25u64 {
    ///     w.insert(&i);
    /// }
    /// assert_eq!(w.epoch(), 2); // 10 items per generation
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.ring.load().epoch()
    }

    /// New items counted in the current generation (a snapshot under
    /// concurrent inserts).
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// w.insert(&1);
    /// w.insert(&1);
    /// assert_eq!(w.generation_len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generation_len(&self) -> usize {
        self.ring.len(self.ring.load().epoch()) as usize
    }

    /// New items a generation takes before a count window starts the
    /// next: `G = ⌈window / (g − 1)⌉`.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::builder(1000, 0.01).generations(4).build()?;
    /// assert_eq!(w.generation_capacity(), 334);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generation_capacity(&self) -> usize {
        self.geometry.generation_capacity
    }

    /// The number of generations `g`.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.generations(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generations(&self) -> u32 {
        self.geometry.generations
    }

    /// The window asked for: items always remembered (for a time window,
    /// the most items expected in it).
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.window(), 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window(&self) -> usize {
        self.window
    }

    /// What starts a generation.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Rotation, WindowedBloomFilter};
    /// let w: WindowedBloomFilter<u64> = WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.rotation(), Rotation::Count);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rotation(&self) -> Rotation {
        match &self.timing {
            Timing::Count => Rotation::Count,
            Timing::Manual => Rotation::Manual,
            Timing::Time { window, .. } => Rotation::Time(*window),
        }
    }

    /// The false-positive rate the filter was built for: the rate of the
    /// union of its generations, each full.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.target_fpr(), 0.01);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target_fpr(&self) -> f64 {
        self.rate
    }

    /// Bytes the filter allocated: its bit array and the few cache lines
    /// of its generation ring.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1_000_000, 0.01)?;
    /// assert!(w.memory_bytes() * 8 < 20 * 1_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.bits.memory_bytes() + self.ring.bytes()
    }

    /// Bits of the array per window item: the memory price of forgetting.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1_000_000, 0.01)?;
    /// assert!(w.bits_per_item() > 15.0 && w.bits_per_item() < 20.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bits_per_item(&self) -> f64 {
        (self.geometry.lines() * BLOCK_BYTES * 8) as f64 / self.window as f64
    }

    /// k: the bits an item sets in a generation.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.num_hashes(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_hashes(&self) -> u32 {
        match self.geometry.layout {
            Layout::CacheLine => 2 * self.geometry.bits_per_word,
            _ => self.geometry.bits_per_word,
        }
    }

    /// The layout: [`Layout::CacheLine`], [`Layout::Word`] or
    /// [`Layout::Compact`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Layout, WindowedBloomFilter};
    /// let w: WindowedBloomFilter<u64> = WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.layout(), Layout::CacheLine);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layout(&self) -> Layout {
        self.geometry.layout
    }

    /// How the size was rounded ([`Sizing::Exact`] unless asked).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Sizing, WindowedBloomFilter};
    /// let w: WindowedBloomFilter<u64> = WindowedBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(w.sizing(), Sizing::Exact);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sizing(&self) -> Sizing {
        self.geometry.sizing
    }

    /// The hasher items are hashed with.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    /// let w: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1000, 0.01).seed(9).build()?;
    /// assert_eq!(w.hasher().seed(), 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// The false-positive rate expected at the worst moment of the cycle,
    /// just before a rotation, when every generation holds its
    /// `generation_capacity()` items (the figure the filter is sized to
    /// keep at or under [`target_fpr`](Self::target_fpr)).
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<u64> =
    ///     atomic_bloom::WindowedBloomFilter::new(1_000_000, 0.01)?;
    /// assert!(w.expected_fpr() <= 0.01 && w.expected_fpr() > 0.009);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        self.geometry
            .expected_rate(self.geometry.generation_capacity as f64)
    }
}
