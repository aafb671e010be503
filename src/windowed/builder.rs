//! `WindowedBloomFilterBuilder` and [`Rotation`]: what a windowed filter is
//! built with.

use crate::builder_options::builder_options;
use std::fmt;
use std::hash::BuildHasher;
use std::marker::PhantomData;
use std::time::Duration;

use super::{Clock, Timing, WindowedBloomFilter};
use crate::builder::Request;
use crate::sizing::{self, WindowGeometry};
use crate::sync::Arc;
use crate::windowed::ring::Ring;
use crate::{DefaultHasher, Error, Layout};

/// What starts a new generation of a [`WindowedBloomFilter`].
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use atomic_bloom::{Rotation, WindowedBloomFilter};
///
/// let hourly: WindowedBloomFilter<str> = WindowedBloomFilter::builder(100_000, 0.01)
///     .time_window(Duration::from_secs(3600))
///     .build()?;
/// assert_eq!(hourly.rotation(), Rotation::Time(Duration::from_secs(3600)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rotation {
    /// A generation ends once it holds its share of the window: the filter
    /// remembers the last `window` new items (the default).
    Count,
    /// A generation ends when its share of the duration has passed, read
    /// from the filter's clock: the filter remembers every item inserted
    /// within the duration (`window` is then the most items expected in
    /// one such duration, for the sizing).
    Time(Duration),
    /// Only [`advance`](WindowedBloomFilter::advance) starts a generation:
    /// for a caller that drives time itself (a timer thread, a server
    /// replaying its primary's rotations). Items are still counted
    /// ([`generation_len`](WindowedBloomFilter::generation_len)).
    Manual,
}

/// The shortest time window: its slack (`T / 256`, below) is 3.9 µs, time
/// for an insert to set its bits and read the clock many times over, and
/// its shortest generation (16 of them) 67 µs. Under about 0.6 µs every
/// insert found its generation ended before it could check, and went round
/// for ever.
pub(crate) const MIN_TIME_WINDOW: Duration = Duration::from_millis(1);

/// Time windows: each generation lasts `T (1 + 1/SLACK) / (g - 1)`, so
/// that an item inserted while a due rotation is still clearing (it goes
/// on into the ending generation) is still remembered for `T`.
pub(crate) const TIME_SLACK: u32 = 256;

/// Configures a [`WindowedBloomFilter`] before it is allocated.
///
/// Made by [`WindowedBloomFilter::builder`]; nothing is checked or
/// allocated until [`build`](WindowedBloomFilterBuilder::build).
///
/// # Example
///
/// ```
/// use atomic_bloom::{Layout, WindowedBloomFilter};
///
/// let lean: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000_000, 0.01)
///     .seed(42)
///     .layout(Layout::Compact)
///     .generations(5)
///     .build()?;
/// assert_eq!(lean.generations(), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WindowedBloomFilterBuilder<T: ?Sized, S = DefaultHasher> {
    request: Request<S>,
    layout: Layout,
    generations: Option<u32>,
    rotation: Rotation,
    clock: Option<Clock>,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized> WindowedBloomFilterBuilder<T, DefaultHasher> {
    pub(crate) fn new(window: usize, rate: f64) -> Self {
        WindowedBloomFilterBuilder {
            request: Request::new(window, rate),
            layout: Layout::CacheLine,
            generations: None,
            rotation: Rotation::Count,
            clock: None,
            _item: PhantomData,
        }
    }

    builder_options! {
        "WindowedBloomFilter";
        /// Seeds the default hasher with `seed` instead of OS entropy: the same
        /// items set the same bits in every run (what a copy that replays
        /// another's inserts needs).
        fn seed;
    }
}

impl<T: ?Sized, S> WindowedBloomFilterBuilder<T, S> {
    builder_options! {
        "WindowedBloomFilter";
        /// [`Layout::CacheLine`] (the default): every generation of an item in
        /// one block of two adjacent lines, so a lookup reads two lines;
        /// [`Layout::Word`]: the same blocks, an item's bits in one word per
        /// generation, so that of several threads racing to insert an absent
        /// item exactly one is told it was new (what a frontier needs), for
        /// more memory; [`Layout::Compact`]: each generation its own compact
        /// array, the least memory, a lookup reading one line per generation.
        fn layout;
        /// How the size is rounded: [`Sizing::Exact`](crate::Sizing::Exact) (the default) spends
        /// no more than a block over what the window and rate need;
        /// [`Sizing::PowerOfTwo`](crate::Sizing::PowerOfTwo) rounds up to a power of two of blocks, and
        /// a windowed filter already spends more bits per item.
        fn sizing;
    }

    /// The number of generations `g` (2, 4 or 8 for
    /// [`Layout::CacheLine`] and [`Layout::Word`], 2 to 16 for
    /// [`Layout::Compact`]); unset, the
    /// layout's least memory at the rate (4 for cache-line blocks at 1%).
    /// More generations forget sooner after the window (an item is kept
    /// for at most `window × g / (g − 1)` items) and, past the best count,
    /// take more memory.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let f: WindowedBloomFilter<str> =
    ///     WindowedBloomFilter::builder(1000, 0.01).generations(8).build()?;
    /// assert_eq!(f.generations(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generations(mut self, generations: u32) -> Self {
        self.generations = Some(generations);
        self
    }

    /// Remembers every item inserted in the last `window` of time instead
    /// of a count ([`Rotation::Time`]); the count given to `builder` is
    /// then the most items expected in one such window, for the sizing.
    /// `build` refuses a window under
    /// [`MIN_TIME_WINDOW`](WindowedBloomFilter::MIN_TIME_WINDOW), 1 ms.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let f: WindowedBloomFilter<str> = WindowedBloomFilter::builder(10_000, 0.01)
    ///     .time_window(Duration::from_secs(600))
    ///     .build()?;
    /// assert!(f.insert("redelivered?"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn time_window(mut self, window: Duration) -> Self {
        self.rotation = Rotation::Time(window);
        self
    }

    /// Rotates only when [`advance`](WindowedBloomFilter::advance) is
    /// called ([`Rotation::Manual`]).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Rotation, WindowedBloomFilter};
    ///
    /// let f: WindowedBloomFilter<u64> =
    ///     WindowedBloomFilter::builder(100, 0.01).manual_rotation().build()?;
    /// for i in 0..1000 {
    ///     f.insert(&i);
    /// }
    /// assert_eq!(f.epoch(), 0);
    /// f.advance();
    /// assert_eq!(f.epoch(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn manual_rotation(mut self) -> Self {
        self.rotation = Rotation::Manual;
        self
    }

    /// The clock a time window reads: any monotonic time since a fixed
    /// instant (default: `std::time::Instant`, about 20-40 ns a read). It
    /// is read on every insert and on every lookup that finds the item;
    /// a cheaper clock (a coarse counter a timer thread updates) makes
    /// time windows as fast as count windows.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let millis = Arc::new(AtomicU64::new(0));
    /// let clock = Arc::clone(&millis);
    /// let f: WindowedBloomFilter<str> = WindowedBloomFilter::builder(1000, 0.01)
    ///     .time_window(Duration::from_secs(60))
    ///     .clock(move || Duration::from_millis(clock.load(Ordering::Relaxed)))
    ///     .build()?;
    /// f.insert("a");
    /// millis.store(59_000, Ordering::Relaxed);
    /// assert!(f.contains("a"));
    /// millis.store(3_600_000, Ordering::Relaxed);
    /// assert!(!f.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock(mut self, clock: impl Fn() -> Duration + Send + Sync + 'static) -> Self {
        self.clock = Some(Arc::new(Box::new(clock)));
        self
    }

    /// Hashes items with `hasher` instead of the seeded wyhash default (a
    /// filter with another hasher cannot be saved).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{DefaultHasher, WindowedBloomFilter};
    ///
    /// let f: WindowedBloomFilter<str, DefaultHasher> = WindowedBloomFilter::builder(1000, 0.01)
    ///     .hasher(DefaultHasher::with_seed(3))
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hasher<H: BuildHasher>(self, hasher: H) -> WindowedBloomFilterBuilder<T, H> {
        WindowedBloomFilterBuilder {
            request: self.request.hasher(hasher),
            layout: self.layout,
            generations: self.generations,
            rotation: self.rotation,
            clock: self.clock,
            _item: PhantomData,
        }
    }

    /// Checks the parameters and allocates the filter.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroWindow`], [`Error::InvalidFalsePositiveRate`],
    /// [`Error::InvalidGenerations`],
    /// [`Error::InvalidWindowDuration`], [`Error::WindowTooShort`] (a time
    /// window under [`WindowedBloomFilter::MIN_TIME_WINDOW`]), [`Error::TooLarge`],
    /// [`Error::AllocationFailed`], [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Error, WindowedBloomFilter};
    ///
    /// let err = WindowedBloomFilter::<str>::builder(0, 0.01).build().unwrap_err();
    /// assert_eq!(err, Error::ZeroWindow);
    /// ```
    pub fn build(self) -> Result<WindowedBloomFilter<T, S>, Error> {
        let window = self.request.capacity;
        let rate = self.request.rate;
        let geometry = sizing::plan_window(
            self.layout,
            self.request.sizing,
            window,
            rate,
            self.generations,
            Ring::overfill,
        )?;
        let timing = timing(self.rotation, &geometry, self.clock)?;
        let hasher = self.request.hasher?;
        WindowedBloomFilter::from_parts(geometry, rate, window, timing, hasher)
    }
}

/// The timing of `rotation` for `geometry`, checked.
pub(crate) fn timing(
    rotation: Rotation,
    geometry: &WindowGeometry,
    clock: Option<Clock>,
) -> Result<Timing, Error> {
    match rotation {
        Rotation::Count => Ok(Timing::Count),
        Rotation::Manual => Ok(Timing::Manual),
        Rotation::Time(window) => {
            let nanos = window.as_nanos();
            let slacked = nanos + nanos / u128::from(TIME_SLACK);
            // Room to add a few generations' worth to any clock reading.
            if nanos == 0 || slacked > (i64::MAX / 64) as u128 {
                return Err(Error::InvalidWindowDuration { duration: window });
            }
            if window < MIN_TIME_WINDOW {
                return Err(Error::WindowTooShort {
                    duration: window,
                    min: MIN_TIME_WINDOW,
                });
            }
            // Rounded up, so that `g - 1` spans hold the slacked window.
            let span = slacked
                .div_ceil(u128::from(geometry.generations - 1))
                .max(1) as i64;
            let lifetime = span * i64::from(geometry.generations - 1);
            let clock = clock.unwrap_or_else(monotonic_clock);
            Ok(Timing::Time {
                window,
                span,
                lifetime,
                slack: lifetime - nanos as i64,
                clock,
            })
        }
    }
}

/// Time since the clock was made, from `std::time::Instant`.
pub(crate) fn monotonic_clock() -> Clock {
    let origin = std::time::Instant::now();
    Arc::new(Box::new(move || origin.elapsed()))
}

impl<T: ?Sized, S: fmt::Debug> fmt::Debug for WindowedBloomFilterBuilder<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowedBloomFilterBuilder")
            .field("window", &self.request.capacity)
            .field("rate", &self.request.rate)
            .field("sizing", &self.request.sizing)
            .field("layout", &self.layout)
            .field("generations", &self.generations)
            .field("rotation", &self.rotation)
            .field("custom_clock", &self.clock.is_some())
            .field("hasher", &self.request.hasher)
            .finish()
    }
}
