//! `WindowedBloomFilter`: a lock-free Bloom filter over a sliding window,
//! which forgets on schedule.

mod builder;
mod constructors;
#[cfg(all(test, not(atomic_bloom_loom)))]
mod edge_tests;
mod figures;
mod probe;
mod ring;
#[cfg(all(test, not(atomic_bloom_loom)))]
mod tests;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::time::Duration;

pub(crate) use builder::{monotonic_clock, timing};
pub use builder::{Rotation, WindowedBloomFilterBuilder};
use probe::{with_probe, Placement, SlotProbe};
use ring::{Counted, Ring, State};
use ring::{MAX_CHUNKS, MAX_EPOCH};

use crate::bits::BitArray;
use crate::item_methods::item_methods;
use crate::sizing::WindowGeometry;
use crate::sync::{wait_round, Arc, Ordering};
use crate::{AsItem, DefaultHasher, Error};

/// A clock: monotonic time since a fixed instant, shared by a filter and
/// its clones (their generations' ends are instants of it).
pub(crate) type Clock = Arc<Box<dyn Fn() -> Duration + Send + Sync>>;

/// What ends a generation, with what a time window needs.
#[derive(Clone)]
pub(crate) enum Timing {
    Count,
    Manual,
    Time {
        window: Duration,
        /// A generation's length, in clock nanoseconds.
        span: i64,
        /// How long a generation stays live after it ends: `(g - 1) span`.
        lifetime: i64,
        /// `lifetime` less the window: how long after its generation's end
        /// an insert may still land in it and be found for the window.
        slack: i64,
        clock: Clock,
    },
}

/// Rounds a time window's insert goes (for the late rule, `too_late_for`,
/// or a rotation completed under it) before the late rule is measured
/// from the call's start rather than from the clock it reads after
/// setting its bits. Under normal scheduling an insert goes
/// round once at most: its first round's rotation gives the next
/// generation an end after the clock it read, and an attempt takes well
/// under the slack (`T / 256`, at least 3.9 µs). A thread descheduled at
/// each reading, or rotations slower to clear than a generation lasts,
/// would otherwise go round for ever.
const LATE_ROUNDS: u32 = 2;

/// What a time window's late rule measures from: the clock at the call's
/// start, and the rounds gone so far.
#[derive(Clone, Copy)]
struct Late {
    start: i64,
    rounds: u32,
}

/// What one attempt of an insert came to.
enum Attempt {
    /// The insert is over: its answer.
    Done(bool),
    /// A rotation completed meanwhile: insert again from this state,
    /// answering as the first attempt found.
    Again(State, bool),
}

/// A Bloom filter that remembers the last `window` items (or every item
/// inserted in the last `T`) and forgets older ones, shared by any number
/// of threads through `&self`, without locks.
///
/// It keeps `g` generations (4 by default) and answers yes when any of
/// them holds the item. Inserts go into the current generation. Once it
/// holds its share of the window, `G = ⌈window / (g − 1)⌉` new items (or
/// once its share of the time window has passed), the next generation
/// starts and the oldest is cleared: so the `g − 1` generations before the
/// current one always hold the last `(g − 1) G ≥ window` items.
///
/// # Window and forget horizon
///
/// * **Count windows.** An item is found until at least `(g − 1) G ≥
///   window` new items have been inserted after its insert took effect,
///   and is forgotten (it answers exactly as if never inserted) once
///   `g G − 1` have: the horizon is `window × g / (g − 1)` items, 1.33 ×
///   the window at the default 4 generations. An insert takes effect
///   inside its call, so an item is found until at least `window` new
///   items have been inserted by calls that returned after its
///   [`insert`](Self::insert) *began*: every call begun after it began,
///   and the calls that ran beside it. Counted from its return instead,
///   the bound can fail: calls that ran while its thread was descheduled
///   inside `insert`, after its insert took effect, count too.
///   "New" means new to the current generation:
///   an item inserted again moves into the current generation (its
///   lifetime starts over) and takes a place in it; repeats within one
///   generation take none. Racing inserts of one item count it once, for
///   every layout, and an insert caught across a rotation is counted only
///   in the generation it lands in. With several threads a generation may
///   take a few items more than it counts (at most a 512th of `G` and 8
///   items before its rotation is noticed, and one per thread whose count
///   lands after the rotation it raced), which only lengthens both bounds.
/// * **Time windows** ([`time_window`](WindowedBloomFilterBuilder::time_window)):
///   a generation lasts `T (1 + 1/256) / (g − 1)` (rounded up to a
///   nanosecond); `T` is at least [`MIN_TIME_WINDOW`](Self::MIN_TIME_WINDOW),
///   1 ms. An item is found for at least `T` from a clock reading its
///   insert takes inside the call, after setting its bits (so for at
///   least `T` from the call's start; from its return, `T` less the time
///   its thread was descheduled inside the call after that reading), and
///   is forgotten `T (1 + 1/256) g / (g − 1)` after it at the latest,
///   whatever the rotations: a rotation begun late (after an idle stretch)
///   keeps the generations' phase, and an early end
///   ([`advance`](Self::advance)) starts the next generation's span when
///   it is called. An insert that finds its generation ended more than
///   `T / 256` before that reading does not stay in it: it helps the
///   rotation out of it, waits for the chunks other threads are clearing,
///   and goes into the next. After two such rounds (a thread descheduled
///   at each reading, or rotations slower to clear than a generation
///   lasts) the reading is the call's start, which the generation its own
///   rotation began always passes: every insert returns, and an item
///   inserted so is found for at least `T` from the call's start. The
///   clock is read on every insert (twice) and on every lookup that finds
///   the item, so an item is forgotten on time even when nothing rotates
///   the filter.
/// * **A stalled insert.** An insert whose thread stalls between reading
///   the current generation and setting its bits while `g − 1` rotations
///   go by (one at `g = 2`) is placed in the generation current when it
///   wakes, and may leave its bits in the newer one its slot was cleared
///   for: found up to one generation past the horizon, never lost
///   (`src/PROTOCOLS.md`).
///
/// # Memory and speed
///
/// Bits of the array per window item, sized exactly, and the rate measured
/// at the worst moment of the cycle (every generation full) over 1M absent
/// probes (`benches/examples/windowed_table.rs`, deterministic):
///
/// | layout | generations | bits per window item at 1% (0.1%) | measured at 1% | lines a lookup reads | horizon |
/// |---|---|---|---|---|---|
/// | [`CacheLine`](crate::Layout::CacheLine) (default) | 4 | 19.5 (31.2) | 1.01% | 2, adjacent | 1.33 × window |
/// | `CacheLine` | 2 / 8 | 24.4 / 20.7 | 1.01% / 0.99% | 2, adjacent | 2 / 1.14 × |
/// | [`Word`](crate::Layout::Word) (exactly-once inserts) | 4 | 24.7 (47.2) | 1.00% | 1 | 1.33 × |
/// | [`Compact`](crate::Layout::Compact) | 5 (its default at 1%) | 17.3 (25.0) | 1.00% | 5 | 1.25 × |
/// | `Compact` | 7 | 17.1 (24.5) | 0.97% | 7 | 1.17 × |
///
/// Beside the peers in `benches/windowed.rs` (a 1M window at 1%): the
/// Age-Partitioned Bloom Filter (Shtul, Baquero, Almeida 2020, as
/// CrowdStrike/apbf builds it) takes 19.66 at its least memory within 1%
/// by its own false-positive formula (k = 11, l = 46, 0.995%; 25.72 at
/// 0.1%, k = 16, l = 140; `benches/tests/window_peers.rs` computes both), two
/// fastbloom filters rotated 22.1. Lookups on URL keys against a plain
/// [`BloomFilter`](crate::BloomFilter)'s are measured by
/// `windowed/contains/url` in `benches/windowed.rs`.
///
/// Forgetting costs a Bloom filter twice: the generations it holds beyond
/// the window (`g / (g − 1)`) and the union of `g` lookups, each
/// generation at a `g`th of the rate. With neither blocks nor rounding the
/// best union at 1% is `g / (g − 1) × 1.44 × log2(g / 0.01)` = 15.9 bits
/// per window item (7 or 8 generations): no union of generations reaches
/// 15. Nor do fingerprints with an age: a cuckoo filter of 4-slot
/// buckets at 1% needs 10-bit fingerprints, a `t`-bit age keeps `2^t − 2`
/// generations live, and `(10 + t) (1 + 1/(2^t − 2)) / 0.95` is at least
/// 15.8 (`t` = 4). The compact shape is 7% above that bound; the cache-line shape, 23%
/// above it, buys two adjacent lines per lookup whatever `g` (its
/// generations share one 128-byte block; each reads an item's two words
/// from each), where the compact shape reads a line per generation.
///
/// # Example
///
/// ```
/// use atomic_bloom::WindowedBloomFilter;
///
/// // A stream consumer that drops redeliveries among the last 100k messages.
/// let recent: WindowedBloomFilter<str> = WindowedBloomFilter::new(100_000, 0.01)?;
/// assert!(recent.insert("msg-1"));
/// assert!(!recent.insert("msg-1")); // a redelivery
/// for i in 0..200_000 {
///     recent.insert(&format!("msg-{}", i + 2));
/// }
/// assert!(!recent.contains("msg-1")); // long forgotten
/// assert!(recent.contains("msg-200001"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Consistency
///
/// An insert is placed in the generation that is current when it
/// completes: one that raced a rotation and landed in a generation that
/// has since ended is inserted again into the current one. So an insert
/// that happens-before a lookup is found by it unless the window has
/// passed over it in between (counted from inside the insert's call, as
/// above, not from its return), whatever rotations raced either of them.
/// An insert goes round again only when a rotation completed during its
/// attempt (another thread's progress) or, in a time window, for the late
/// rule (a bounded number of times: see *Time windows* above); it waits only for chunks other threads are
/// clearing (a time window's late insert, and `advance`). Rotation takes
/// no lock: whichever thread fills a generation begins the
/// next, and clearing the oldest generation is shared, a chunk at a time,
/// by every thread that inserts meanwhile (inserts go on into the full
/// generation until the last chunk is cleared; only a time window's insert
/// that finds its generation ended more than `T / 256` ago waits for the
/// last chunks, so as not to land in it). Two threads racing to
/// insert the same absent item may both be told it was new, except under
/// [`Layout::Word`](crate::Layout::Word), where exactly one is (unless a rotation completes
/// between their inserts).
pub struct WindowedBloomFilter<T: ?Sized, S = DefaultHasher> {
    bits: BitArray,
    ring: Ring,
    placement: Placement,
    /// Blocks a chunk of a rotation clears.
    chunk_blocks: usize,
    geometry: WindowGeometry,
    rate: f64,
    window: usize,
    timing: Timing,
    hasher: S,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized, S> WindowedBloomFilter<T, S> {
    /// The last epoch a saved filter may be loaded at: 2^58, half the
    /// epochs the filter counts, so a loaded filter can still rotate 2^58
    /// times (91 years at 100 million rotations a second; a filter that
    /// reaches the last epoch stops rotating). No filter reaches it in
    /// centuries, so a saved one past it is refused
    /// ([`Error::EpochOutOfRange`]) rather than loaded to never forget.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// assert_eq!(WindowedBloomFilter::<str>::MAX_LOADED_EPOCH, 1 << 58);
    /// ```
    pub const MAX_LOADED_EPOCH: u64 = MAX_EPOCH.div_ceil(2);

    /// The shortest time window a filter keeps, 1 ms: a shorter one is
    /// refused ([`Error::WindowTooShort`]). An insert that lands in a
    /// generation after its end has a slack of `T / 256` before the item
    /// would expire too soon there (3.9 µs at 1 ms), and a generation lasts
    /// `T (1 + 1/256) / (g − 1)` (67 µs at 1 ms and 16 generations): room
    /// for an insert to set its bits and read the clock many times over.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use atomic_bloom::{Error, WindowedBloomFilter};
    ///
    /// let min = WindowedBloomFilter::<str>::MIN_TIME_WINDOW;
    /// assert_eq!(min, Duration::from_millis(1));
    /// let short = WindowedBloomFilter::<str>::builder(1000, 0.01)
    ///     .time_window(Duration::from_micros(100))
    ///     .build();
    /// assert_eq!(short.unwrap_err(), Error::WindowTooShort { duration: Duration::from_micros(100), min });
    /// ```
    pub const MIN_TIME_WINDOW: Duration = builder::MIN_TIME_WINDOW;

    /// An empty filter of `geometry`.
    pub(crate) fn from_parts(
        geometry: WindowGeometry,
        rate: f64,
        window: usize,
        timing: Timing,
        hasher: S,
    ) -> Result<Self, Error> {
        let bits = BitArray::new(geometry.lines())?;
        let mut ends = vec![i64::MIN / 4; geometry.generations as usize];
        if let Timing::Time { span, clock, .. } = &timing {
            ends[0] = clock_nanos(clock).saturating_add(*span);
        }
        Ok(Self::from_state(
            bits, geometry, rate, window, timing, hasher, 0, 0, ends,
        ))
    }

    /// A filter over `bits` at `epoch`, its current generation holding
    /// `count` items, its slots ending at `ends` (time windows).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_state(
        bits: BitArray,
        geometry: WindowGeometry,
        rate: f64,
        window: usize,
        timing: Timing,
        hasher: S,
        epoch: u64,
        count: u64,
        ends: Vec<i64>,
    ) -> Self {
        let placement = Placement::new(&geometry);
        // Chunks of 16 KiB, fewer and larger past MAX_CHUNKS.
        let chunk_blocks = placement
            .blocks_per_chunk()
            .max(geometry.blocks.div_ceil(MAX_CHUNKS as usize));
        let chunks = geometry.blocks.div_ceil(chunk_blocks) as u64;
        let ring = Ring::new(
            geometry.generations,
            epoch,
            count,
            chunks,
            geometry.generation_capacity as u64,
            ends,
        );
        WindowedBloomFilter {
            bits,
            ring,
            placement,
            chunk_blocks,
            geometry,
            rate,
            window,
            timing,
            hasher,
            _item: PhantomData,
        }
    }

    pub(crate) fn bits(&self) -> &BitArray {
        &self.bits
    }

    pub(crate) fn geometry(&self) -> &WindowGeometry {
        &self.geometry
    }

    pub(crate) fn timing(&self) -> &Timing {
        &self.timing
    }

    /// The epoch, whether a rotation is clearing, the current count and
    /// every slot's end: what a save records, read once.
    pub(crate) fn ring_snapshot(&self) -> (u64, bool, u64, Vec<i64>) {
        let state = self.ring.load();
        (
            state.epoch(),
            state.rotating(),
            self.ring.len(state.epoch()),
            self.ring.ends(),
        )
    }

    /// Clock nanoseconds now (time windows; 0 otherwise).
    pub(crate) fn now(&self) -> i64 {
        match &self.timing {
            Timing::Time { clock, .. } => clock_nanos(clock),
            _ => 0,
        }
    }

    /// Inserts the item whose hash is `hash`; true if no live generation
    /// held it.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<str> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// let hash = w.hash_item("a");
    /// assert!(w.insert_hash(hash));
    /// assert!(w.contains_hash(hash));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert_hash(&self, hash: u64) -> bool {
        self.insert_hash_then(hash, true, || ())
    }

    /// Inserts the item whose hash is `hash` only if no live generation
    /// holds it; true if it did not (it is now in the current generation).
    /// Unlike [`insert_hash`](Self::insert_hash), an item seen within the
    /// window stays where it is: it is forgotten on the schedule of the
    /// insert that placed it.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<str> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// let hash = w.hash_item("a");
    /// assert!(w.insert_hash_if_new(hash));
    /// assert!(!w.insert_hash_if_new(hash));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert_hash_if_new(&self, hash: u64) -> bool {
        self.insert_hash_then(hash, false, || ())
    }

    /// [`insert_hash`](Self::insert_hash) (`refresh`: an item seen in an
    /// older generation is set in the current one too) or
    /// [`insert_hash_if_new`](Self::insert_hash_if_new), calling
    /// `settling` after the bits are set (and the count begun) and before
    /// each re-check of the epoch.
    #[inline(always)]
    fn insert_hash_then(&self, hash: u64, refresh: bool, settling: impl Fn()) -> bool {
        // The clock's paths are compiled out of count and manual windows'
        // inserts (one predictable branch here).
        with_probe!(&self.placement, hash, |probe| match self.timing {
            Timing::Time { .. } => self.insert_probe::<_, true>(probe, refresh, &settling),
            _ => self.insert_probe::<_, false>(probe, refresh, &settling),
        })
    }

    /// Whether the item whose hash is `hash` may be in the window.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<str> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// w.insert("a");
    /// assert!(w.contains_hash(w.hash_item("a")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        with_probe!(&self.placement, hash, |probe| self.contains_probe(probe))
    }

    /// Starts loading the lines of `hash` into cache.
    #[inline(always)]
    pub(crate) fn prefetch_hash(&self, hash: u64) {
        let all = self.ring.all_slots();
        with_probe!(&self.placement, hash, |probe| probe
            .prefetch(&self.bits, all))
    }

    /// The insert protocol (`src/PROTOCOLS.md`, "Windowed filter");
    /// `TIMED`: the filter has a time window. A count or manual window's
    /// insert that meets no rotation is one [`attempt`](Self::attempt) in
    /// line; anything else goes round [`insert_loop`](Self::insert_loop).
    #[inline(always)]
    fn insert_probe<P: SlotProbe, const TIMED: bool>(
        &self,
        probe: P,
        refresh: bool,
        settling: impl Fn(),
    ) -> bool {
        let mut state = self.ring.load();
        if !TIMED {
            if state.rotating() {
                return self.insert_again(probe, refresh, settling, state, None);
            }
            return match self.attempt::<_, false>(
                &probe,
                refresh,
                &settling,
                state,
                self.ring.all_slots(),
                None,
                Late {
                    start: 0,
                    rounds: 0,
                },
            ) {
                Attempt::Done(answer) => answer,
                Attempt::Again(state, answer) => {
                    self.insert_again(probe, refresh, settling, state, Some(answer))
                }
            };
        }
        let now = match &self.timing {
            Timing::Time { clock, .. } => clock_nanos(clock),
            _ => 0,
        };
        if !state.rotating() && now >= self.ring.end(state.slot()) {
            self.rotate(state, now);
            state = self.ring.load();
        }
        self.insert_loop::<_, true>(probe, refresh, settling, state, None, Some(now))
    }

    /// A count or manual window's insert that met a rotation: off the
    /// usual path, so that the path keeps its registers.
    #[cold]
    #[inline(never)]
    fn insert_again<P: SlotProbe>(
        &self,
        probe: P,
        refresh: bool,
        settling: impl Fn(),
        state: State,
        answer: Option<bool>,
    ) -> bool {
        self.insert_loop::<_, false>(probe, refresh, settling, state, answer, None)
    }

    /// Attempts from `state` until one is done; `answer`: an earlier
    /// attempt's; `now`: a time window's clock at the call's start.
    #[inline(always)]
    fn insert_loop<P: SlotProbe, const TIMED: bool>(
        &self,
        probe: P,
        refresh: bool,
        settling: impl Fn(),
        mut state: State,
        mut answer: Option<bool>,
        now: Option<i64>,
    ) -> bool {
        let mut late = Late {
            start: now.unwrap_or(0),
            rounds: 0,
        };
        loop {
            if state.rotating() {
                // Share the clearing: one chunk per insert that meets it.
                self.clear_chunks(1);
                state = self.ring.load();
            }
            let mut live = self.ring.live(state);
            if let (Some(now), Timing::Time { lifetime, .. }) = (now, &self.timing) {
                live &= !self.ring.expired(now, *lifetime) | 1 << state.slot();
            }
            match self.attempt::<_, TIMED>(&probe, refresh, &settling, state, live, answer, late) {
                Attempt::Done(answer) => return answer,
                Attempt::Again(recheck, first) => (state, answer) = (recheck, Some(first)),
            }
            late.rounds = late.rounds.saturating_add(1);
        }
    }

    /// One attempt of an insert into the current generation at `state`,
    /// reading the slots in `live`; `answer`: an earlier attempt's;
    /// `TIMED`: a time window, whose insert also checks the clock after
    /// its re-check (`late`: from when, see [`Late`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn attempt<P: SlotProbe, const TIMED: bool>(
        &self,
        probe: &P,
        refresh: bool,
        settling: &impl Fn(),
        state: State,
        live: u32,
        answer: Option<bool>,
        late: Late,
    ) -> Attempt {
        let (epoch, current) = (state.epoch(), state.slot());
        // Whether a live slot holds the item. (Whether the current one
        // does is `set`'s to find: it tests before it sets.)
        let seen = if live == self.ring.all_slots() {
            probe.any(&self.bits, live)
        } else {
            probe.hits(&self.bits, live) != 0
        };
        if !refresh && seen && answer.is_none() {
            // Seen within the window, and left where it is (a retry after
            // a rotation places the item this call set).
            return Attempt::Done(false);
        }
        // Whether this call counts the item in the current slot: the last
        // word its loads found lacking bits had them turned on by it.
        let counts = probe.set(&self.bits, current);
        // Under the word shape, of racing inserts of an absent item the one
        // whose fetch_or turned bits on is the new one.
        let was_new = answer.unwrap_or(!seen && (counts || !P::EXCLUSIVE));
        if !refresh && !was_new {
            // Another insert of the item won the race: nothing to place.
            return Attempt::Done(false);
        }
        // The count is begun now and stored only once the re-check below
        // finds the item in this generation: an insert caught across a
        // rotation is counted in the generation it lands in, never also in
        // the one it left.
        let pending = if counts {
            Some(self.ring.prepare(epoch, current))
        } else {
            None
        };
        // The re-check: the item counts as inserted when the epoch it went
        // into is still current here; if a rotation completed meanwhile,
        // its slot may belong to an older generation (or have been cleared
        // under it), so insert again.
        settling();
        let recheck = self.ring.load();
        if recheck.epoch() != epoch {
            return Attempt::Again(self.left_behind(current), was_new);
        }
        if TIMED && self.too_late_for(recheck, late) {
            return Attempt::Again(self.left_behind(current), was_new);
        }
        let counted = match pending {
            Some(pending) => self.ring.commit(pending, epoch),
            None => Counted::Room,
        };
        if matches!(counted, Counted::Full) && matches!(self.timing, Timing::Count) {
            self.rotate(recheck, 0);
        }
        Attempt::Done(was_new)
    }

    /// An attempt that set bits in `slot` and will insert again (its
    /// generation ended under it): marks the slot written, since no count
    /// of its generation covers those bits, and returns the state to insert
    /// again from, read after the mark's fence.
    #[cold]
    #[inline(never)]
    fn left_behind(&self, slot: u32) -> State {
        self.ring.mark_written(slot);
        self.ring.load()
    }

    /// A time window's insert that has set its bits in generation `E`
    /// (current at `state`, its re-check) reads the clock: if `E` ended more
    /// than the slack before that reading, an item in it would be forgotten
    /// before the window has passed (a rotation begun late, after an idle
    /// stretch, or slow to clear). Then it helps the rotation out of `E`
    /// (beginning it if no one has) and waits for the chunks other threads
    /// are clearing; true if so (the caller inserts again), false if `E`
    /// will do. After [`LATE_ROUNDS`] rounds the reading is the call's
    /// start (`late`), which a generation begun after it always passes:
    /// the insert returns.
    #[cold]
    #[inline(never)]
    fn too_late_for(&self, state: State, late: Late) -> bool {
        let Timing::Time { slack, clock, .. } = &self.timing else {
            return false;
        };
        let now = clock_nanos(clock);
        let from = if late.rounds < LATE_ROUNDS {
            now
        } else {
            late.start
        };
        // At the last epoch no rotation can come: the insert stays.
        if from <= self.ring.end(state.slot()).saturating_add(*slack) || state.epoch() >= MAX_EPOCH
        {
            return false;
        }
        let mut round = 0;
        loop {
            let current = self.ring.load();
            if current.epoch() != state.epoch() {
                return true;
            }
            if current.rotating() {
                self.clear_chunks(u64::MAX);
            } else {
                self.rotate(current, now);
            }
            if self.ring.load().epoch() == state.epoch() {
                wait_round(round);
                round = round.saturating_add(1);
            }
        }
    }

    #[inline(always)]
    fn contains_probe<P: SlotProbe>(&self, probe: P) -> bool {
        let state = self.ring.load();
        if !state.rotating() && !matches!(self.timing, Timing::Time { .. }) {
            // Every slot live, none expired by a clock: any slot will do.
            return probe.any(&self.bits, self.ring.all_slots());
        }
        let hits = probe.hits(&self.bits, self.ring.live(state));
        if hits == 0 {
            return false;
        }
        match &self.timing {
            Timing::Time {
                lifetime, clock, ..
            } => hits & !self.ring.expired(clock_nanos(clock), *lifetime) != 0,
            _ => true,
        }
    }

    /// Begins the rotation from `state` (if still current and none is
    /// under way) and clears until no chunk is left unclaimed. `now`: the
    /// clock, for a time window's next end.
    fn rotate(&self, state: State, now: i64) {
        let end = self.next_end(state, now);
        self.ring.begin(state, end);
        self.clear_chunks(u64::MAX);
    }

    /// A time window's next end after the rotation from `state` at `now`
    /// (`src/PROTOCOLS.md`, "The end rule"); `None` for other windows.
    fn next_end(&self, state: State, now: i64) -> Option<i64> {
        match &self.timing {
            Timing::Time { span, .. } => {
                let end = self.ring.end(state.slot());
                Some(if now < end {
                    // An early end starts the next span now: the horizon
                    // stays a span ahead of the clock, however many early
                    // ends come in a row.
                    now.saturating_add(*span)
                } else {
                    // A late one keeps the phase: the next end is the
                    // first end of a span after now.
                    let periods = now.saturating_sub(end) / span + 1;
                    end.saturating_add(periods.saturating_mul(*span))
                })
            }
            _ => None,
        }
    }

    /// Marks every slot as holding bits: a loaded filter's are anywhere.
    pub(crate) fn mark_all_written(&self) {
        self.ring.mark_all_written();
    }

    /// Completes a rotation that was under way when the filter was saved
    /// (its slot was saved half cleared); the filter is not yet shared.
    /// The new generation's end is set again, by the end rule at the
    /// clock now: the state may have been read after the rotation began
    /// and its end before the beginner stored it (the slot's old end, a
    /// lifetime past: the next insert rotated again at once, forgetting a
    /// generation within the window; test
    /// `a_copy_taken_as_a_time_rotation_begins_keeps_the_window`).
    pub(crate) fn finish_saved_rotation(&self) {
        let state = self.ring.load();
        self.rotate(state, self.now());
    }

    /// Clears up to `most` chunks of the rotation under way.
    fn clear_chunks(&self, most: u64) {
        let per_chunk = self.chunk_blocks;
        for _ in 0..most {
            let Some((slot, chunk)) = self.ring.claim() else {
                return;
            };
            let first = chunk as usize * per_chunk;
            let last = (first + per_chunk).min(self.geometry.blocks);
            let swept = self.placement.clear(&self.bits, slot, first..last);
            self.ring.finish(swept);
        }
    }

    /// Ends the current generation now: the oldest is forgotten and an
    /// empty one becomes current. For [`Rotation::Manual`], the only way a
    /// generation ends; with the other rotations, an early end.
    ///
    /// If another thread's rotation is under way, this call helps it
    /// rather than beginning another. A rotation is complete when its last
    /// chunk is cleared: by this call, unless another thread still clears
    /// a chunk it claimed. It costs what was written: a generation slot no
    /// insert wrote since it was last cleared is skipped, and of the others
    /// only words that hold bits are written (pages no bit reached stay
    /// unmapped). To end several generations at once, see
    /// [`advance_by`](Self::advance_by).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let w: WindowedBloomFilter<str> =
    ///     WindowedBloomFilter::builder(1000, 0.01).generations(2).manual_rotation().build()?;
    /// w.insert("a");
    /// w.advance();
    /// assert!(w.contains("a")); // in the previous generation
    /// w.advance();
    /// assert!(!w.contains("a")); // forgotten
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn advance(&self) {
        let state = self.ring.load();
        if !state.rotating() {
            self.rotate(state, self.now());
        } else {
            self.clear_chunks(u64::MAX);
        }
    }

    /// Ends `n` generations now, as `n` calls of
    /// [`advance`](Self::advance) would, clearing each slot at most once:
    /// from `n = g` on every generation is forgotten, and the epoch moves
    /// on by `n` with nothing more to clear. A rotation clears only what
    /// was written (a slot no insert wrote since it was last cleared is
    /// skipped; a word that is 0 is not written), so ending the
    /// generations of an idle filter costs no more than its inserts did.
    /// Rotations other threads complete meanwhile count among the `n`; the
    /// epochs another call's jump skips do not (they cleared nothing), and
    /// after such a jump this call rotates `g` times from where it landed
    /// (the epoch ends at least `n` past the one at the call, except that the
    /// jump lands no later than 2^57, half of
    /// [`MAX_LOADED_EPOCH`](Self::MAX_LOADED_EPOCH): a filter advanced
    /// as far as it goes keeps rotating, and saves and loads, for
    /// centuries).
    ///
    /// # Consistency
    ///
    /// As `advance`, once per generation. Inserts racing the call land in
    /// the generation current when they complete, and may be kept as if
    /// they came after it.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let w: WindowedBloomFilter<u64> =
    ///     WindowedBloomFilter::builder(1000, 0.01).generations(4).manual_rotation().build()?;
    /// w.insert(&1);
    /// w.advance_by(3);
    /// assert!(w.contains(&1)); // three generations back: still live
    /// w.advance_by(1_000_000);
    /// assert!(!w.contains(&1));
    /// assert_eq!(w.epoch(), 1_000_003);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn advance_by(&self, n: u64) {
        self.advance_from(self.ring.load().epoch(), n);
    }

    /// [`advance_by`](Self::advance_by)`(n)` of a call that read the epoch
    /// `start`.
    fn advance_from(&self, mut start: u64, n: u64) {
        let g = u64::from(self.generations());
        // Up to `g` rotations clear every slot once.
        let mut rotations = start.saturating_add(g.min(n)).min(MAX_EPOCH);
        // The rest is a jump, which lands no later than LAST_JUMP.
        let mut target = start.saturating_add(n).min(LAST_JUMP.max(rotations));
        let mut round = 0u32;
        loop {
            let state = self.ring.load();
            let jumped = self.ring.jumped_to();
            if jumped > start {
                // Another call's jump landed after this one began: the
                // epochs it skipped cleared nothing (slots it had cleared
                // before may hold items inserted before this call). `g`
                // rotations from where it landed clear every slot, before
                // this call ends or jumps on.
                start = jumped;
                rotations = jumped.saturating_add(g).min(MAX_EPOCH);
                target = target.max(rotations);
                continue;
            }
            if state.epoch() >= target {
                return;
            }
            if state.rotating() {
                self.clear_chunks(u64::MAX);
            } else if state.epoch() < rotations {
                self.rotate(state, self.now());
            } else {
                // Every slot cleared since `start`: the rest is a jump.
                let end = self.next_end(state, self.now());
                if self.ring.jump(state, target, end) {
                    return;
                }
            }
            let after = self.ring.load();
            if after.epoch() == state.epoch() && after.rotating() {
                // Another thread still clears a chunk of this rotation.
                wait_round(round);
                round = round.saturating_add(1);
            } else {
                round = 0;
            }
        }
    }

    /// Forgets every item: ends `g` generations, as
    /// [`advance_by`](Self::advance_by)`(g)` does, so every generation
    /// slot is cleared once (only what was written: an idle filter's clear
    /// costs no more than its inserts did). The epoch moves on by `g`
    /// rather than back to 0, so that a thread whose insert straddles the
    /// call never counts into a generation that a later one reuses.
    ///
    /// # Consistency
    ///
    /// It takes `&self` and runs the rotation protocol: a rotation racing
    /// it (another thread's `advance`, a count window's full generation, a
    /// time window's end) is helped or counted among the `g`, never
    /// corrupted. An insert that happens-before the call is gone after it;
    /// one that happens-after it is kept, and is told it was new. An
    /// insert racing the call lands in the generation current when it
    /// completes: kept if that generation is one the call began, else
    /// gone; its `true` or `false` may describe either side. A lookup
    /// racing it may see any generation not yet cleared.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::Arc;
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let w: Arc<WindowedBloomFilter<u64>> = Arc::new(WindowedBloomFilter::new(1000, 0.01)?);
    /// w.insert(&1);
    /// w.clear(); // through the Arc
    /// assert!(!w.contains(&1));
    /// assert!(w.insert(&1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&self) {
        self.advance_by(u64::from(self.generations()));
    }

    /// A copy, as [`Clone`] makes, in memory from the allocator's zeroed
    /// path (pages no bit reached stay the kernel's), or an error where
    /// `clone` would abort.
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    ///
    /// # Consistency
    ///
    /// As `clone`.
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<str> =
    ///     atomic_bloom::WindowedBloomFilter::builder(1000, 0.01).seed(3).build()?;
    /// w.insert("a");
    /// let copy = w.try_clone()?;
    /// assert!(copy.contains("a"));
    /// assert!(copy == w);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_clone(&self) -> Result<Self, Error>
    where
        S: Clone,
    {
        self.copy_with(BitArray::try_snapshot)
    }

    /// A filter of this one's shape, rotation state and hasher over the
    /// bits `snapshot` copies from this one's; a rotation under way is
    /// completed.
    ///
    /// The state is read before the bits, as a save reads it: a rotation
    /// racing the copy then leaves the new generation's items in the copy's
    /// oldest slot (forgotten sooner, as inserts racing the copy may be).
    /// Read after the bits, it took the oldest generation's items, copied
    /// before their slot was cleared, for the new current generation's:
    /// kept `g` generations past the horizon, in a slot holding two
    /// generations (test `a_copy_racing_a_rotation_forgets_what_its_original_forgot`).
    fn copy_with<E>(
        &self,
        snapshot: impl FnOnce(&BitArray) -> Result<BitArray, E>,
    ) -> Result<Self, E>
    where
        S: Clone,
    {
        let (epoch, rotating, len, ends) = self.ring_snapshot();
        let bits = snapshot(&self.bits)?;
        let copy = Self::from_state(
            bits,
            self.geometry,
            self.rate,
            self.window,
            self.timing.clone(),
            self.hasher.clone(),
            epoch,
            len,
            ends,
        );
        copy.mark_all_written();
        if rotating {
            copy.finish_saved_rotation();
        }
        Ok(copy)
    }

    /// Whether both arrays hold the same bits (each word read once).
    fn same_bits(&self, other: &Self) -> bool {
        let lines = self.bits.num_blocks();
        lines == other.bits.num_blocks()
            && (0..lines).all(|line| {
                self.bits
                    .line(line)
                    .iter()
                    .zip(other.bits.line(line))
                    // Relaxed (both): a snapshot of bits that publish
                    // nothing.
                    .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed))
            })
    }

    #[doc(hidden)]
    #[cfg(atomic_bloom_loom)]
    /// Inserts `item`, calling `settling` once its bits are set, before
    /// each re-check of the epoch: for loom models that must know when an
    /// insert completes.
    pub fn __insert_then(&self, item: &T, settling: impl Fn()) -> bool
    where
        T: Hash,
        S: BuildHasher,
    {
        self.insert_hash_then(self.hash_item(item), true, settling)
    }
}

/// The last epoch [`advance_by`](WindowedBloomFilter::advance_by) jumps to,
/// 2^57: half of `MAX_LOADED_EPOCH`, so that a filter advanced as far as it
/// goes still rotates 2^57 times (45 years at 100 million rotations a
/// second) before its saves stop loading. (At the last epoch nothing
/// rotates: a time window's insert would wait there for ever, and the
/// filter's save would not load; test
/// `a_time_window_advanced_as_far_as_it_goes_keeps_its_promise`.)
const LAST_JUMP: u64 = MAX_EPOCH.div_ceil(4);

/// Nanoseconds on `clock`, saturating.
fn clock_nanos(clock: &Clock) -> i64 {
    i64::try_from(clock().as_nanos()).unwrap_or(i64::MAX / 4)
}

impl<T: ?Sized + Hash, S: BuildHasher> WindowedBloomFilter<T, S> {
    /// Inserts `item` into the current generation; returns true if no live
    /// generation held it (it was not seen within the window).
    ///
    /// An item seen only in an older generation is inserted again into the
    /// current one, so its lifetime starts over (and `false` is returned).
    ///
    /// # Example
    ///
    /// ```
    /// let w: atomic_bloom::WindowedBloomFilter<str> =
    ///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
    /// assert!(w.insert("a"));
    /// assert!(!w.insert("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.insert_hash(self.hash_item(item))
    }

    /// Inserts `item` only if it was not seen within the window; true if
    /// it was not (it is now in the current generation). Unlike
    /// [`insert`](Self::insert), an item seen within the window keeps its
    /// age: a crawler that re-visits a page a window after its last visit
    /// calls this for every link it finds, and a page linked from
    /// everywhere is still forgotten on time.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::WindowedBloomFilter;
    ///
    /// let w: WindowedBloomFilter<u64> =
    ///     WindowedBloomFilter::builder(100, 0.01).seed(1).generations(2).build()?;
    /// assert!(w.insert_if_new(&0));
    /// for i in 1..100u64 {
    ///     w.insert_if_new(&i);
    ///     assert!(!w.insert_if_new(&0)); // seen, and not refreshed
    /// }
    /// for i in 100..200u64 {
    ///     w.insert_if_new(&i);
    /// }
    /// assert!(w.insert_if_new(&0)); // forgotten: new again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert_if_new<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.insert_hash_if_new(self.hash_item(item))
    }

    item_methods! {
        "WindowedBloomFilter";
        /// Whether `item` may have been inserted within the window: always
        /// true for an item inserted within it, true for others at about the
        /// filter's false-positive rate.
        fn contains;
        /// The 64-bit hash all of `item`'s positions come from.
        fn hash_item;
    }
}

/// A snapshot copy: every generation, the rotation state and the hasher;
/// a time window's copy reads the same clock. Holds every insert that
/// completed before `clone` began, and perhaps some that were in flight (a
/// rotation under way is completed in the copy; one that begins during the
/// copy is not in it, and the items of its new generation copied are
/// forgotten sooner in the copy). Like `Vec::clone`, it
/// aborts if the allocator refuses ([`try_clone`](WindowedBloomFilter::try_clone)
/// returns an error instead).
///
/// # Example
///
/// ```
/// let w: atomic_bloom::WindowedBloomFilter<u64> =
///     atomic_bloom::WindowedBloomFilter::builder(1000, 0.01).seed(1).build()?;
/// w.insert(&1);
/// let copy = w.clone();
/// copy.insert(&2);
/// assert!(copy.contains(&1) && !w.contains(&2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized, S: Clone> Clone for WindowedBloomFilter<T, S> {
    fn clone(&self) -> Self {
        match self.copy_with(|bits| Ok::<_, std::convert::Infallible>(bits.snapshot())) {
            Ok(copy) => copy,
            Err(never) => match never {},
        }
    }
}

/// Equal when built alike (window, rate, layout, sizing, generations,
/// rotation, hasher) and in the same state: the same epoch, whether a
/// rotation is clearing, the current generation's count, and the same
/// bits. A time window's generation ends are instants of each filter's own
/// clock and are not compared. O(size); compare quiet filters (under
/// concurrent inserts the answer is a snapshot's).
///
/// # Example
///
/// ```
/// use atomic_bloom::WindowedBloomFilter;
///
/// let a: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1000, 0.01).seed(7).build()?;
/// let b: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1000, 0.01).seed(7).build()?;
/// a.insert(&1);
/// assert!(a != b);
/// b.insert(&1);
/// assert!(a == b);
/// b.advance();
/// assert!(a != b); // another epoch
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized, S: PartialEq> PartialEq for WindowedBloomFilter<T, S> {
    fn eq(&self, other: &Self) -> bool {
        let (ours, theirs) = (self.ring_snapshot(), other.ring_snapshot());
        std::ptr::eq(self, other)
            || (self.geometry == other.geometry
                && self.rate.to_bits() == other.rate.to_bits()
                && self.window == other.window
                && self.rotation() == other.rotation()
                && self.hasher == other.hasher
                && (ours.0, ours.1, ours.2) == (theirs.0, theirs.1, theirs.2)
                && self.same_bits(other))
    }
}

impl<T: ?Sized, S: Eq> Eq for WindowedBloomFilter<T, S> {}

/// Inserts every item, as [`insert`](WindowedBloomFilter::insert) one at a
/// time would: the filter's own items, references to them, or their owners
/// (`&String` into a filter of `str`; see [`AsItem`]). `extend` takes
/// `&mut self` (the trait's signature); [`insert`](WindowedBloomFilter::insert)
/// takes `&self`.
///
/// # Example
///
/// ```
/// let mut recent: atomic_bloom::WindowedBloomFilter<str> =
///     atomic_bloom::WindowedBloomFilter::new(1000, 0.01)?;
/// recent.extend(["msg-1", "msg-2"]);
/// let ids = vec!["msg-3".to_string()];
/// recent.extend(&ids);
/// assert!(recent.contains("msg-1") && recent.contains("msg-2") && recent.contains("msg-3"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: ?Sized + Hash, S: BuildHasher, A: AsItem<T>> Extend<A> for WindowedBloomFilter<T, S> {
    fn extend<I: IntoIterator<Item = A>>(&mut self, items: I) {
        for item in items {
            self.insert(item.as_item());
        }
    }
}

/// The shape, the rotation state and the hasher; no pass over the bits.
impl<T: ?Sized, S: fmt::Debug> fmt::Debug for WindowedBloomFilter<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowedBloomFilter")
            .field("window", &self.window)
            .field("target_fpr", &self.rate)
            .field("rotation", &self.rotation())
            .field("layout", &self.layout())
            .field("generations", &self.generations())
            .field("generation_capacity", &self.generation_capacity())
            .field("epoch", &self.epoch())
            .field("rotating", &self.ring.load().rotating())
            .field("generation_len", &self.generation_len())
            .field("memory_bytes", &self.memory_bytes())
            .field("hasher", &self.hasher)
            .finish()
    }
}
