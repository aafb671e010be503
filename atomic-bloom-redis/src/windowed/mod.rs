//! Windowed filters (`WBF.*`): a key holding one of the library's
//! `WindowedBloomFilter`s, which forgets on schedule, with the options it
//! was made with and, for a time window, when its current generation ends.
//!
//! A count window rotates by inserts, inside the library: the same adds in
//! the same order rotate a replica's copy and an AOF replay alike. A time
//! window is built with `manual_rotation()` and rotates only when the
//! commands say so (`rotate_due`, on a primary, by the server's monotonic
//! clock; `follow`, on a replica or in an AOF replay, to the primary's
//! epoch), so that nothing but the primary's clock ever makes a key forget,
//! and no step of a wall clock does.
//!
//! Generations: the library's compact layout (each generation its own
//! compact array: the least memory, 17.3 bits per window item at 1% with
//! its default 5 generations, and any count from 2 to 16, so a 24-hour
//! window can keep hourly generations).

pub(crate) mod data_type;
mod record;
pub(crate) mod schedule;

use atomic_bloom::{Error, Layout, WindowedBloomFilter};

/// Generations a key may have (the compact layout's range).
pub(crate) const GENERATIONS: std::ops::RangeInclusive<u32> = 2..=16;

/// The longest time window: ten years, in milliseconds (`WBF.RESERVE`'s
/// `TIME` takes whole seconds, at most 315,360,000; a record claiming more,
/// or a window not of whole seconds, is refused).
pub(crate) const MAX_TIME_MS: u64 = 10 * 365 * 86_400 * 1000;

/// How a windowed filter is made (`WBF.RESERVE`, or the first `WBF.ADD`
/// with the module's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct WindowOptions {
    /// Count window: the items remembered at least. Time window: the most
    /// items expected in one window (the sizing).
    pub(crate) window: u64,
    pub(crate) error_rate: f64,
    /// `None`: the library's least memory at the rate.
    pub(crate) generations: Option<u32>,
    /// The time window in milliseconds; 0 for a count window.
    pub(crate) time_ms: u64,
    /// The hash seed: random for a new key; replicas and the AOF get the
    /// primary's through `WBF.RESERVE ... SEED`.
    pub(crate) seed: u64,
}

/// A key's windowed filter.
pub(crate) struct Windowed {
    pub(crate) filter: WindowedBloomFilter<[u8]>,
    /// As built: `generations` is always `Some`.
    pub(crate) options: WindowOptions,
    /// Time windows: when the current generation ends, on the server's
    /// monotonic clock (`server_ms`, ms). 0 for count windows.
    pub(crate) next_rotation_ms: i64,
}

/// A key's value: a filter, or the chunks of an AOF rewrite still being
/// replayed (`WBF.LOADCHUNK`).
// The server keeps each value boxed, and a key is `Loading` only while an
// AOF replays: a second box for `Ready` would cost every command a
// pointer chase for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum WindowValue {
    Ready(Windowed),
    Loading(Loading),
}

/// A record arriving in chunks.
pub(crate) struct Loading {
    pub(crate) total: u64,
    pub(crate) received: Vec<u8>,
}

impl Windowed {
    /// A new, empty filter of `options`, its first generation starting at
    /// `now_ms` (`server_ms`).
    ///
    /// # Errors
    ///
    /// The library's: sizes past what it builds, a failed allocation.
    pub(crate) fn new(options: WindowOptions, now_ms: i64) -> Result<Windowed, Error> {
        let window = usize::try_from(options.window).map_err(|_| Error::ZeroWindow)?;
        let mut builder = WindowedBloomFilter::<[u8]>::builder(window, options.error_rate)
            .seed(options.seed)
            .layout(Layout::Compact);
        if let Some(generations) = options.generations {
            builder = builder.generations(generations);
        }
        if options.time_ms > 0 {
            builder = builder.manual_rotation();
        }
        let filter = builder.build()?;
        let options = WindowOptions {
            generations: Some(filter.generations()),
            ..options
        };
        let mut windowed = Windowed {
            filter,
            options,
            next_rotation_ms: 0,
        };
        if options.time_ms > 0 {
            windowed.next_rotation_ms = now_ms.saturating_add(windowed.span_ms());
        }
        Ok(windowed)
    }

    /// Whether the window is a time window.
    pub(crate) fn is_timed(&self) -> bool {
        self.options.time_ms > 0
    }

    /// A generation's length in ms (time windows): `⌈T / (g − 1)⌉`, so the
    /// `g − 1` generations before the current one span at least `T`.
    pub(crate) fn span_ms(&self) -> i64 {
        let before = u64::from(self.filter.generations() - 1);
        i64::try_from(self.options.time_ms.div_ceil(before).max(1)).unwrap_or(i64::MAX / 4)
    }

    /// Performs the rotations due at `now_ms` (the primary's clock): one per
    /// generation span passed since the current generation's end, at most
    /// `g` (which forget everything), in one `advance_by` that clears each
    /// slot at most once and only what was written; the next end keeps its
    /// phase. True if any was due.
    pub(crate) fn rotate_due(&mut self, now_ms: i64) -> bool {
        if !self.is_timed() || now_ms < self.next_rotation_ms {
            return false;
        }
        let span = self.span_ms();
        let due = now_ms.saturating_sub(self.next_rotation_ms) / span + 1;
        let generations = u64::from(self.filter.generations());
        self.filter
            .advance_by(u64::try_from(due).map_or(generations, |due| due.min(generations)));
        self.next_rotation_ms = self
            .next_rotation_ms
            .saturating_add(due.saturating_mul(span));
        true
    }

    /// Milliseconds left in the current generation at `now_ms` (0 for a
    /// count window; negative when a rotation is due).
    pub(crate) fn left_ms(&self, now_ms: i64) -> i64 {
        if self.is_timed() {
            self.next_rotation_ms.saturating_sub(now_ms)
        } else {
            0
        }
    }

    /// Applies a primary's rotations: advances to `epoch` (never more than
    /// `g` generations on: a primary rotates at most that many at once)
    /// and ends the current generation `left_ms` after `now_ms`.
    ///
    /// # Errors
    ///
    /// A reply text when the epoch is behind this copy or out of reach, or
    /// the window counts items.
    pub(crate) fn follow(
        &mut self,
        epoch: u64,
        left_ms: i64,
        now_ms: i64,
    ) -> Result<(), &'static str> {
        if !self.is_timed() {
            return Err("ERR a count window rotates by its inserts");
        }
        let here = self.filter.epoch();
        let steps = epoch
            .checked_sub(here)
            .filter(|steps| *steps <= u64::from(self.filter.generations()))
            .ok_or("ERR epoch out of reach: the replica's copy differs from its primary's")?;
        self.filter.advance_by(steps);
        self.end_in(left_ms, now_ms);
        Ok(())
    }

    /// Ends the current generation `left_ms` after `now_ms` (time windows),
    /// `left_ms` kept within a generation's span ahead and `g` spans behind
    /// (a generation that ended longer ago forgets no more than one that
    /// ended `g` spans ago), so the clock's sums never overflow.
    pub(crate) fn end_in(&mut self, left_ms: i64, now_ms: i64) {
        if !self.is_timed() {
            return;
        }
        let span = self.span_ms();
        let behind = span.saturating_mul(i64::from(self.filter.generations()));
        self.next_rotation_ms = now_ms.saturating_add(left_ms.clamp(-behind, span));
    }

    /// Bytes the filter takes (its bits and its counters).
    pub(crate) fn filter_bytes(&self) -> usize {
        self.filter.memory_bytes()
    }
}

impl WindowValue {
    /// Bytes the value takes, for `MEMORY USAGE`, `WBF.INFO`'s `Size` and
    /// the server's eviction.
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of::<WindowValue>()
            + match self {
                WindowValue::Ready(windowed) => windowed.filter_bytes(),
                WindowValue::Loading(loading) => loading.received.capacity(),
            }
    }

    /// The most a filter's own bytes may take for the whole value to stay
    /// within `cap`.
    pub(crate) fn filter_cap(cap: usize) -> usize {
        cap.saturating_sub(std::mem::size_of::<WindowValue>())
    }
}

/// The server's monotonic clock, in milliseconds from an origin of its
/// own (`RedisModule_MonotonicMicroseconds`, Redis 7.0 and Valkey): the
/// wall clock steps (NTP, `date -s`, a resumed VM), and a 2 h step forward
/// of it forgot an item a moment old in a 1 h window, one of 5 h back kept
/// items 5 h too long. Its readings mean nothing outside this process:
/// only differences are kept, and what is saved is the time a generation
/// has left (`record.rs`). A server without it (and the fuzz targets,
/// outside any server) gets the process's own monotonic clock.
pub(crate) fn server_ms() -> i64 {
    // Safety: filled in at load (or left unset by a server without it),
    // never changed after.
    match unsafe { redis_module::raw::RedisModule_MonotonicMicroseconds } {
        // Safety: the server's function, which takes nothing.
        Some(now) => i64::try_from(unsafe { now() } / 1000).unwrap_or(i64::MAX),
        None => {
            static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            let origin = *ORIGIN.get_or_init(std::time::Instant::now);
            i64::try_from(origin.elapsed().as_millis()).unwrap_or(i64::MAX)
        }
    }
}
