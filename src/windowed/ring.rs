//! The generation ring of a windowed filter: which generation is current,
//! the count of the current one, and rotation. The protocol, and why each
//! ordering is enough, is in `src/PROTOCOLS.md` ("Windowed filter").
//!
//! Generation `e` lives in slot `e % g`. The state word holds the current
//! epoch `E` and a flag: set while slot `(E + 1) % g` (the oldest
//! generation's) is being cleared for generation `E + 1`. Any thread
//! clears: a chunk of blocks at a time, claimed with a `fetch_add` on a
//! cursor that names the rotation; whoever clears the last chunk publishes
//! `E + 1`.

use crossbeam_utils::CachePadded;

use crate::sync::{fence, thread_index, AtomicU64, Ordering};
use crate::tally::SLOTS;

/// Bits of an epoch kept beside a count or a cursor: equal tags mean the
/// same epoch, since every count is reset at least every `SLOTS + 1`
/// rotations (one in turn, `Ring::finish`) and a cursor names the one
/// rotation under way (a thread would have to stall through 2^23 rotations
/// inside one count, or 2^24 inside one claim, to be fooled).
const TAG_BITS: u32 = 24;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// A count beside its tag.
const COUNT_BITS: u32 = 64 - TAG_BITS;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// A cursor: tag, slot (5 bits: up to 16 generations), chunk index.
const CURSOR_SLOT_SHIFT: u32 = 35;
const CURSOR_TAG_SHIFT: u32 = 40;
const CURSOR_INDEX_MASK: u64 = (1 << CURSOR_SLOT_SHIFT) - 1;

/// The most chunks a rotation may have, and the index of a cursor with no
/// rotation under way: claims past the last chunk keep adding to the
/// index, and this leaves room for 2^34 of them.
pub(crate) const MAX_CHUNKS: u64 = 1 << 34;
const IDLE_CURSOR: u64 = MAX_CHUNKS;

/// Count slots, slot `i` written only by the thread holding
/// [`thread_index`] `i`; under loom one, so that a model's first thread
/// counts on its own slot and the others on the shared one.
#[cfg(not(atomic_bloom_loom))]
const COUNT_SLOTS: usize = SLOTS - 1;
#[cfg(atomic_bloom_loom)]
const COUNT_SLOTS: usize = 1;

/// The state word: `epoch << 5 | slot << 1 | rotating`, the slot being
/// `epoch % g`, kept so that no operation divides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State(u64);

/// The most epochs the state word holds.
pub(crate) const MAX_EPOCH: u64 = (1 << 59) - 1;

impl State {
    pub(crate) fn epoch(self) -> u64 {
        self.0 >> 5
    }

    /// The current generation's slot, `epoch % g`.
    #[inline(always)]
    pub(crate) fn slot(self) -> u32 {
        (self.0 >> 1 & 0xf) as u32
    }

    /// A rotation to `epoch() + 1` is clearing its slot.
    #[inline(always)]
    pub(crate) fn rotating(self) -> bool {
        self.0 & 1 != 0
    }

    fn of(epoch: u64, slot: u32, rotating: bool) -> Self {
        State(epoch << 5 | u64::from(slot) << 1 | u64::from(rotating))
    }
}

fn pack_count(epoch: u64, count: u64) -> u64 {
    (epoch & TAG_MASK) << COUNT_BITS | count.min(COUNT_MASK)
}

/// What [`Ring::count`] found.
pub(crate) enum Counted {
    /// Counted; the generation is not known to be full.
    Room,
    /// Counted, and the generation holds its capacity: rotate.
    Full,
    /// Not counted: the epoch has moved on (the caller inserts again).
    Stale,
}

/// A count of generation `epoch` one higher than `current`, or `None` if
/// `current` is of a later epoch (the insert counting is stale). A count of
/// an earlier epoch starts over at 1: the count has not been added to in
/// `epoch` yet (counts are not reset as generations pass, only read under
/// their own epoch's tag), or a thread's store overwrote a reset (see
/// `Ring::finish`). Either way a count tagged `epoch` holds only new items
/// of `epoch`, and none is lost.
///
/// Which of two tags is the later one is plain for a reset (a count of 0,
/// tagged for the epoch a rotation publishes, within a few epochs of any
/// live one: tags wrap). A count above 0 under another tag may be older
/// than the tags can tell: an insert counted it after its re-check read an
/// epoch that a jump (`Ring::jump`) then left behind, over its reset, and
/// its 24-bit tag can read as any epoch, later ones too. So for those
/// `moved_on` decides: whether generation `epoch` has ended (a count above
/// 0 of a later epoch was stored by an insert that read that epoch, so the
/// caller must see it has ended); if it has not, the count is of an
/// earlier epoch. Were it taken as later, every count of that slot would
/// be stale until its reset in turn, which only rotations make, and the
/// count window would never rotate again.
#[inline(always)]
fn count_after(current: u64, epoch: u64, moved_on: impl FnOnce() -> bool) -> Option<u64> {
    let (tag, current_tag) = (epoch & TAG_MASK, current >> COUNT_BITS);
    if current_tag == tag {
        Some(current + u64::from(current & COUNT_MASK < COUNT_MASK))
    } else if current & COUNT_MASK != 0 {
        (!moved_on()).then(|| pack_count(epoch, 1))
    } else if tag.wrapping_sub(current_tag) & TAG_MASK < 1 << (TAG_BITS - 1) {
        // A reset of an earlier epoch (every count is reset at least every
        // few rotations, so none is half the tag space behind a live one).
        Some(pack_count(epoch, 1))
    } else {
        None
    }
}

/// Adds one to `count`, which only the calling thread writes (besides a
/// rotation's reset, and the thread that held the index before, which gave
/// it back with `Release`): a load and a store, no read-modify-write. The
/// new count, or `None` if this insert is stale.
///
/// A count above 0 under another tag is of an earlier epoch: only this
/// thread (or the index's holder before it, whose loads of the state came
/// before this thread's) stores counts above 0 here, and its epochs only
/// grow (each is read by an `Acquire` load of the one state word).
#[inline(always)]
fn count_owned(count: &AtomicU64, epoch: u64) -> Option<u64> {
    // Relaxed: the count publishes nothing; this thread alone adds to it.
    let next = count_after(count.load(Ordering::Relaxed), epoch, || false)?;
    // Relaxed: as above; a reset this store overwrites (its load came
    // before the reset) left an earlier tag, which the next count starts
    // over from.
    count.store(next, Ordering::Relaxed);
    Some(next & COUNT_MASK)
}

/// Adds one to `count`, shared by threads; `None` if this insert is stale.
/// `state`: the ring's state word, for `count_after`'s `moved_on`.
#[inline]
fn count_shared(count: &AtomicU64, state: &AtomicU64, epoch: u64) -> Option<u64> {
    // Acquire: pairs with the Release of the compare-and-swap below, so a
    // count above 0 stored by an insert that read a later epoch hands that
    // epoch to the load of the state in `moved_on`.
    let mut current = count.load(Ordering::Acquire);
    // Acquire: as in `Ring::load`; after the count's Acquire it reads the
    // epoch of any count it read, or a later one.
    let moved_on = || State(state.load(Ordering::Acquire)).epoch() != epoch;
    loop {
        let next = count_after(current, epoch, moved_on)?;
        // Release: a thread reading this count also reads the epoch this
        // insert read (above). Acquire on failure: as the load above. The
        // tag check and the add are one RMW, so no count is lost to a
        // thread sharing the slot and none lands in a later epoch's count.
        match count.compare_exchange_weak(current, next, Ordering::Release, Ordering::Acquire) {
            Ok(_) => return Some(next & COUNT_MASK),
            Err(actual) => current = actual,
        }
    }
}

pub(crate) struct Ring {
    generations: u32,
    /// Every slot: `(1 << generations) - 1`.
    all_slots: u32,
    state: CachePadded<AtomicU64>,
    cursor: CachePadded<AtomicU64>,
    done: CachePadded<AtomicU64>,
    /// New items counted in the current generation, tagged with its epoch:
    /// slot `i` by the thread holding index `i`, written by it alone (no
    /// read-modify-write on an insert's path).
    counts: Box<[CachePadded<AtomicU64>; COUNT_SLOTS]>,
    /// The same, for threads without a slot (an index past the slots, or
    /// none): counted with a compare-and-swap.
    shared: CachePadded<AtomicU64>,
    /// A count carried over from a saved filter, tagged the same way.
    base: CachePadded<AtomicU64>,
    /// Bit `s`: slot `s` may hold bits since it was last cleared (a
    /// rotation skips a slot whose bit is clear). Set by the first count of
    /// each count in a generation, by an insert that leaves bits in a slot
    /// it was not counted in, and for every slot of a loaded filter.
    written: CachePadded<AtomicU64>,
    /// 1 once a chunk of the rotation under way found bits to clear: the
    /// completer then marks the slot again, so that its next turn clears
    /// what landed after this one's reads (`src/PROTOCOLS.md`, "Clearing
    /// what was written").
    swept: CachePadded<AtomicU64>,
    /// The epoch the last jump (`jump`) landed at, 0 before any: a call of
    /// `advance_by` that began before it does not count the epochs it
    /// skipped as rotations.
    jumped_to: AtomicU64,
    /// Time windows: the instant (clock nanoseconds, as `i64` bits) at
    /// which each slot's generation stopped, or will stop, being current.
    ends: Box<[AtomicU64]>,
    /// Chunks a rotation clears.
    chunks: u64,
    capacity: u64,
    /// A thread sums the counts when its own passes a multiple of this.
    step: u64,
    /// The lowest own count at which the current generation may hold its
    /// capacity with the carried count (`base`) added: `capacity` less the
    /// count a saved filter carried over (a plain field, so that an insert
    /// compares with it before loading `base`).
    lowest_full: u64,
    /// `lowest_full - 1`: the usual case's bound on a count before it is
    /// added to.
    lowest_full_before: u64,
}

/// A count begun by [`Ring::prepare`].
pub(crate) enum Pending<'a> {
    /// The thread's own count, and the value to store.
    Own { count: &'a AtomicU64, next: u64 },
    /// Anything else: [`Ring::count`], after the re-check.
    Long,
}

impl Ring {
    /// A ring at `epoch`, its current generation holding `count` items;
    /// rotations clear `chunks` chunks; a generation is full at
    /// `capacity` items. `ends` for time windows (per slot).
    pub(crate) fn new(
        generations: u32,
        epoch: u64,
        count: u64,
        chunks: u64,
        capacity: u64,
        ends: Vec<i64>,
    ) -> Self {
        debug_assert!((2..=16).contains(&generations));
        Ring {
            generations,
            all_slots: (1u32 << generations) - 1,
            state: CachePadded::new(AtomicU64::new(
                State::of(epoch, (epoch % u64::from(generations)) as u32, false).0,
            )),
            // No rotation under way: an index past any chunk count, far
            // from overflowing into the slot bits.
            cursor: CachePadded::new(AtomicU64::new(IDLE_CURSOR)),
            done: CachePadded::new(AtomicU64::new(0)),
            counts: Box::new(std::array::from_fn(|_| {
                CachePadded::new(AtomicU64::new(pack_count(epoch, 0)))
            })),
            shared: CachePadded::new(AtomicU64::new(pack_count(epoch, 0))),
            base: CachePadded::new(AtomicU64::new(pack_count(epoch, count))),
            written: CachePadded::new(AtomicU64::new(0)),
            swept: CachePadded::new(AtomicU64::new(0)),
            jumped_to: AtomicU64::new(0),
            ends: ends
                .into_iter()
                .map(|end| AtomicU64::new(end as u64))
                .collect(),
            chunks: chunks.max(1),
            capacity,
            step: Self::step_for(capacity),
            lowest_full: capacity.saturating_sub(count),
            lowest_full_before: capacity
                .saturating_sub(count)
                .min(COUNT_MASK)
                .saturating_sub(1),
        }
    }

    /// How often a thread sums the counts, a power of two: a generation
    /// is seen full at most a step per count late (`SLOTS - 1` own counts
    /// and the shared one: a 512th of it at most, or fewer than `SLOTS`
    /// items when it is small).
    pub(crate) fn step_for(capacity: u64) -> u64 {
        let step = (capacity / (SLOTS as u64 * 512)).max(1);
        1 << step.ilog2()
    }

    /// Items a generation may take past its capacity before a rotation
    /// is noticed: what the sizing leaves room for.
    pub(crate) fn overfill(capacity: usize) -> usize {
        SLOTS * Self::step_for(capacity as u64) as usize
    }

    /// Bytes the ring takes beside the bits.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + (self.counts.len() + 1) * std::mem::size_of::<CachePadded<AtomicU64>>()
            + self.ends.len() * 8
    }

    #[inline(always)]
    pub(crate) fn load(&self) -> State {
        // Acquire: pairs with the Release that published this epoch, so the
        // clearing of its slot happens-before this thread's writes into it.
        State(self.state.load(Ordering::Acquire))
    }

    /// The slot after `slot`.
    #[inline(always)]
    fn next_slot(&self, slot: u32) -> u32 {
        if slot + 1 == self.generations {
            0
        } else {
            slot + 1
        }
    }

    /// Every slot: `(1 << generations) - 1`.
    #[inline(always)]
    pub(crate) fn all_slots(&self) -> u32 {
        self.all_slots
    }

    /// The slots a lookup reads at `state`: all but the one being cleared.
    #[inline(always)]
    pub(crate) fn live(&self, state: State) -> u32 {
        if state.rotating() {
            self.all_slots & !(1 << self.next_slot(state.slot()))
        } else {
            self.all_slots
        }
    }

    /// Begins counting a new item into generation `epoch`, before the
    /// insert's re-check of the epoch: the usual case (the thread's own
    /// count, of this epoch, its last value not a multiple of the step and
    /// its next below the lowest full count) is decided here by one
    /// comparison, to be stored by [`commit`](Self::commit) only if the
    /// re-check finds the epoch unchanged.
    ///
    /// Off the usual path, the first count of each count in a generation
    /// marks `slot` written, before the re-check (see
    /// [`mark_written`](Self::mark_written)): a count of this epoch above 0
    /// was stored after a successful re-check that followed such a mark.
    #[inline(always)]
    pub(crate) fn prepare(&self, epoch: u64, slot: u32) -> Pending<'_> {
        if let Some(own) = thread_index().and_then(|index| self.counts.get(index)) {
            // Relaxed: as in `count_owned`.
            let current = own.load(Ordering::Relaxed);
            let count = current ^ (epoch & TAG_MASK) << COUNT_BITS;
            if count & (self.step - 1) != 0 && count < self.lowest_full_before {
                return Pending::Own {
                    count: own,
                    next: current + 1,
                };
            }
        }
        self.prepare_long(epoch, slot)
    }

    /// The rest of [`prepare`](Self::prepare): the first count of a count
    /// in generation `epoch` marks `slot`.
    #[cold]
    #[inline(never)]
    fn prepare_long(&self, epoch: u64, slot: u32) -> Pending<'_> {
        let count = thread_index()
            .and_then(|index| self.counts.get(index))
            .map_or(&*self.shared, |own| &**own);
        // Relaxed: as in `count_owned` and `count_shared`.
        let count = count.load(Ordering::Relaxed) ^ (epoch & TAG_MASK) << COUNT_BITS;
        // Another tag, or none counted yet: the first count here.
        if count == 0 || count > COUNT_MASK {
            self.mark_written(slot);
        }
        Pending::Long
    }

    /// Marks `slot` as holding bits, then fences: of this mark and a
    /// rotation that begins clearing the slot, either the rotation's
    /// `written` swap reads the mark, or the caller's next load of the
    /// state reads that rotation's begun state or a later one (both sides
    /// `SeqCst` fences between their write and their read:
    /// `src/PROTOCOLS.md`, "Clearing what was written"). Off the insert's
    /// usual path.
    #[cold]
    #[inline(never)]
    pub(crate) fn mark_written(&self, slot: u32) {
        // SeqCst: a read-modify-write in the mask's one order, fenced
        // below against the caller's next load of the state.
        self.written.fetch_or(1 << slot, Ordering::SeqCst);
        // SeqCst: the store-load fence of the pattern above, paired with
        // the one in `begin`.
        fence(Ordering::SeqCst);
    }

    /// Marks every slot written (a loaded filter's bits are anywhere).
    pub(crate) fn mark_all_written(&self) {
        // Relaxed: the filter is not yet shared.
        self.written
            .fetch_or(u64::from(self.all_slots), Ordering::Relaxed);
    }

    /// Counts the item [`prepare`](Self::prepare) began counting, once
    /// the insert is known to be in generation `epoch`.
    #[inline(always)]
    pub(crate) fn commit(&self, pending: Pending<'_>, epoch: u64) -> Counted {
        match pending {
            Pending::Own { count, next } => {
                // Relaxed: as in `count_owned` (a reset since the load is
                // overwritten by an earlier tag, which the next count
                // starts over from).
                count.store(next, Ordering::Relaxed);
                Counted::Room
            }
            Pending::Long => self.count(epoch),
        }
    }

    /// Counts a new item into generation `epoch`: on the calling thread's
    /// own slot, or the shared one.
    #[cold]
    #[inline(never)]
    pub(crate) fn count(&self, epoch: u64) -> Counted {
        match thread_index().and_then(|index| self.counts.get(index)) {
            Some(own) => self.count_then(count_owned(own, epoch), epoch),
            None => self.count_then(count_shared(&self.shared, &self.state, epoch), epoch),
        }
    }

    /// The rest of [`count`](Self::count) once the item is counted (or
    /// found stale).
    #[inline(always)]
    fn count_then(&self, counted: Option<u64>, epoch: u64) -> Counted {
        let Some(count) = counted else {
            return Counted::Stale;
        };
        // A thread sums the counts when its own leaves a multiple of the
        // step (`overfill`'s bound) or reaches the capacity less a saved
        // filter's carried count: a single thread sees the generation full
        // exactly at its capacity, so rotations replay exactly.
        let due = (count - 1) & (self.step - 1) == 0
            || (count >= self.lowest_full && count + self.base_count(epoch) >= self.capacity);
        if due && self.full(epoch) {
            Counted::Full
        } else {
            Counted::Room
        }
    }

    /// Whether generation `epoch` holds its capacity (off an insert's
    /// usual path: once a step).
    #[cold]
    #[inline(never)]
    fn full(&self, epoch: u64) -> bool {
        self.len(epoch) >= self.capacity
    }

    #[inline(always)]
    fn base_count(&self, epoch: u64) -> u64 {
        // Relaxed: as in `count`.
        let base = self.base.load(Ordering::Relaxed);
        if base >> COUNT_BITS == epoch & TAG_MASK {
            base & COUNT_MASK
        } else {
            0
        }
    }

    /// New items counted in generation `epoch` (a snapshot: exact once
    /// inserts quiesce).
    pub(crate) fn len(&self, epoch: u64) -> u64 {
        let tag = epoch & TAG_MASK;
        let counted: u64 = self
            .counts
            .iter()
            .chain(std::iter::once(&self.shared))
            // Relaxed: a snapshot of independent counts.
            .map(|count| count.load(Ordering::Relaxed))
            .filter(|&slot| slot >> COUNT_BITS == tag)
            .map(|slot| slot & COUNT_MASK)
            .sum();
        counted + self.base_count(epoch)
    }

    /// Sets the rotating flag of `state` if it is still current and no
    /// rotation is under way: true for the one caller that does, which
    /// then owns the ring until it publishes the next state (a rotation,
    /// `begin`, or a jump, `jump`).
    fn take(&self, state: State) -> bool {
        self.state
            .compare_exchange(
                State::of(state.epoch(), state.slot(), false).0,
                State::of(state.epoch(), state.slot(), true).0,
                // AcqRel: one thread begins each rotation or jump; Acquire
                // sees the previous rotation's completion (its done count,
                // its resets).
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Begins the rotation from `epoch` to `epoch + 1` if none is under
    /// way and `epoch` is still current; `end` is the new generation's
    /// end (time windows). True if this call began it.
    pub(crate) fn begin(&self, state: State, end: Option<i64>) -> bool {
        if state.epoch() >= MAX_EPOCH || !self.take(state) {
            return false;
        }
        let (next, slot) = (state.epoch() + 1, self.next_slot(state.slot()));
        if let Some(end) = end {
            // Relaxed: published with the epoch (the cursor's Release, then
            // the done chain, then the epoch's Release; or that Release
            // alone when nothing is cleared).
            self.ends[slot as usize].store(end as u64, Ordering::Relaxed);
        }
        // SeqCst: the fence between this rotation's write of the state and
        // its read of the marks (`mark_written`).
        fence(Ordering::SeqCst);
        // SeqCst: a read-modify-write in the mask's one order; clearing the
        // bit here, before the slot's words, keeps a mark made after it
        // for the next rotation to clear.
        let marks = self.written.fetch_and(!(1 << slot), Ordering::SeqCst);
        if marks & 1 << slot == 0 {
            // Nothing was written in the slot since it was last cleared:
            // nothing to clear; complete at once.
            self.complete(State::of(next, slot, false), false);
            return true;
        }
        // Relaxed: ordered before the cursor's Release swap, which every
        // clearer acquires before it adds to `done`. (Resets here are
        // swaps, not stores: every write to these words is then a
        // read-modify-write, and loom, which orders a plain store and
        // another thread's RMW only partially, sees the one order the
        // hardware gives.)
        self.done.swap(0, Ordering::Relaxed);
        // Relaxed: as `done`.
        self.swept.swap(0, Ordering::Relaxed);
        let cursor = (next & TAG_MASK) << CURSOR_TAG_SHIFT | u64::from(slot) << CURSOR_SLOT_SHIFT;
        // Release: a thread that claims a chunk of this rotation sees `done`
        // reset and the new end.
        self.cursor.swap(cursor, Ordering::Release);
        true
    }

    /// Claims the next chunk of the rotation under way: its slot and index;
    /// `None` when every chunk is claimed (or no rotation is under way).
    pub(crate) fn claim(&self) -> Option<(u32, u64)> {
        // Relaxed: a look before the read-modify-write, so that threads
        // meeting a rotation whose chunks are all claimed do not keep
        // adding to the index (the fetch_add below decides).
        if self.cursor.load(Ordering::Relaxed) & CURSOR_INDEX_MASK >= self.chunks {
            return None;
        }
        // Acquire: pairs with `begin`'s Release (an RMW reads the latest
        // value, so a claim after the swap belongs to its rotation; a
        // claim before it finds the last rotation's chunks all taken).
        let claimed = self.cursor.fetch_add(1, Ordering::Acquire);
        let index = claimed & CURSOR_INDEX_MASK;
        if index >= self.chunks {
            return None;
        }
        let slot = ((claimed >> CURSOR_SLOT_SHIFT) & 0x1f) as u32;
        Some((slot, index))
    }

    /// Records a claimed chunk as cleared (`swept`: it held bits); the last
    /// one completes the rotation. True if this call completed it.
    pub(crate) fn finish(&self, swept: bool) -> bool {
        if swept {
            // Relaxed: handed to the completer by the Release below.
            self.swept.fetch_or(1, Ordering::Relaxed);
        }
        // AcqRel: Release hands this chunk's clears to the completer;
        // Acquire (for the last) gathers every chunk's clears.
        let finished = self.done.fetch_add(1, Ordering::AcqRel) + 1;
        if finished != self.chunks {
            return false;
        }
        // Relaxed: the state cannot change while a rotation is under way,
        // and the chain above orders this after `begin`.
        let state = State(self.state.load(Ordering::Relaxed));
        debug_assert!(state.rotating());
        let (next, slot) = (state.epoch() + 1, self.next_slot(state.slot()));
        // Relaxed: gathered by the Acquire above.
        if self.swept.load(Ordering::Relaxed) != 0 {
            // The slot held bits: bits of an insert whose re-check read an
            // epoch too old to see this rotation may have landed after its
            // reads, unmarked; its next turn reads it again.
            // SeqCst: as in `mark_written`.
            self.written.fetch_or(1 << slot, Ordering::SeqCst);
        }
        self.complete(State::of(next, slot, false), false);
        true
    }

    /// Ends a jump of the epoch to `target` (slot `target % g`), begun
    /// from `state` if it is still current and no rotation is under way:
    /// every slot must already be empty (the caller has rotated `g` times),
    /// so nothing is cleared. `end`: the new generation's end (time
    /// windows). True if this call made the jump.
    pub(crate) fn jump(&self, state: State, target: u64, end: Option<i64>) -> bool {
        let target = target.min(MAX_EPOCH);
        if target <= state.epoch() || !self.take(state) {
            return false;
        }
        let slot = (target % u64::from(self.generations)) as u32;
        if let Some(end) = end {
            // Relaxed: published by the epoch's Release in `complete`.
            self.ends[slot as usize].store(end as u64, Ordering::Relaxed);
        }
        // Relaxed: published by the epoch's Release in `complete` (jumps
        // are one at a time: each begins with the state's CAS).
        self.jumped_to.store(target, Ordering::Relaxed);
        self.complete(State::of(target, slot, false), true);
        true
    }

    /// The epoch the last jump landed at (0 before any). Read after an
    /// `Acquire` load of the state that read a jump's epoch or a later
    /// one, it is that jump's or a later one's.
    pub(crate) fn jumped_to(&self) -> u64 {
        // Relaxed: the caller's Acquire load of the state orders the store
        // of every jump it read (or read past) before this load.
        self.jumped_to.load(Ordering::Relaxed)
    }

    /// Publishes `next` once the rotation's clearing is done: resets one
    /// count in turn (`all`: every count, after a jump), then the state.
    fn complete(&self, next_state: State, all: bool) {
        let next = next_state.epoch();
        if all {
            for count in self
                .counts
                .iter()
                .map(|count| &**count)
                .chain([&*self.shared, &*self.base])
            {
                // Relaxed: published by the epoch's Release below.
                count.swap(pack_count(next, 0), Ordering::Relaxed);
            }
        }
        // One count in turn is reset, tagged for the new epoch: counts are
        // read only under their own epoch's tag, and a thread's count of an
        // earlier one starts over (`count_after`), so none needs a reset to
        // be right; the turn keeps every count's tag within a few epochs of
        // the current one, so that 24-bit tags never alias.
        let turn = (next % (self.counts.len() as u64 + 2)) as usize;
        let reset = match turn.checked_sub(self.counts.len()) {
            None => &self.counts[turn],
            Some(0) => &self.shared,
            Some(_) => &self.base,
        };
        // Relaxed: published by the epoch's Release below. A swap, as in
        // `begin`.
        reset.swap(pack_count(next, 0), Ordering::Relaxed);
        // Release: the clears (gathered through `done`), the new end and
        // the reset count happen-before every insert that reads the new
        // epoch with Acquire and writes into its slot.
        self.state.store(next_state.0, Ordering::Release);
    }

    /// The end of slot `slot`'s generation (time windows).
    #[inline]
    pub(crate) fn end(&self, slot: u32) -> i64 {
        // Relaxed: read after the epoch's Acquire, which orders the end of
        // the current generation; an older slot's end only ever moves later.
        self.ends[slot as usize].load(Ordering::Relaxed) as i64
    }

    /// The slots whose generation ended `lifetime` or more before `now`.
    #[inline]
    pub(crate) fn expired(&self, now: i64, lifetime: i64) -> u32 {
        (0..self.generations)
            .filter(|&slot| self.end(slot).saturating_add(lifetime) <= now)
            .fold(0, |mask, slot| mask | 1 << slot)
    }

    /// The ends of every slot (time windows), for saving.
    pub(crate) fn ends(&self) -> Vec<i64> {
        (0..self.ends.len() as u32)
            .map(|slot| self.end(slot))
            .collect()
    }
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.load();
        f.debug_struct("Ring")
            .field("epoch", &state.epoch())
            .field("rotating", &state.rotating())
            .field("generation_len", &self.len(state.epoch()))
            .finish()
    }
}

#[cfg(all(test, not(atomic_bloom_loom)))]
mod tests {
    use super::*;

    /// A ring of 2 generations of 100,003 items (not a multiple of its
    /// step, 16).
    fn ring() -> Ring {
        Ring::new(2, 0, 0, 1, 100_003, Vec::new())
    }

    /// The count this thread writes: its own while fewer than 7 threads
    /// of the test binary hold indexes (nextest runs a test a process,
    /// `cargo test` a thread a core), which is the fast path of `count`
    /// these tests are for; else the shared one (the same rule, through
    /// its compare-and-swap).
    fn this_threads(ring: &Ring) -> &AtomicU64 {
        thread_index()
            .and_then(|index| ring.counts.get(index))
            .map_or(&*ring.shared, |count| &**count)
    }

    #[test]
    fn a_count_left_at_an_earlier_epoch_starts_over() {
        let ring = ring();
        // A thread counted 5 items in epoch 0; rotations went by.
        // Relaxed: one thread; `count` reads it on this thread.
        this_threads(&ring).store(pack_count(0, 5), Ordering::Relaxed);
        assert!(matches!(ring.count(1), Counted::Room));
        assert_eq!(ring.len(1), 1);
        assert!(matches!(ring.count(1), Counted::Room));
        assert_eq!(ring.len(1), 2);
    }

    #[test]
    fn the_item_that_fills_a_generation_is_told_so() {
        let ring = ring();
        // Relaxed: one thread, as above.
        this_threads(&ring).store(pack_count(1, 100_001), Ordering::Relaxed);
        assert!(matches!(ring.count(1), Counted::Room));
        assert!(matches!(ring.count(1), Counted::Full));
        assert_eq!(ring.len(1), 100_003);
        // A stale insert is not counted: a rotation reset the count for
        // epoch 2 (the state is left at 0: only the count decides).
        // Relaxed: one thread, as above.
        this_threads(&ring).store(pack_count(2, 0), Ordering::Relaxed);
        assert!(matches!(ring.count(1), Counted::Stale));
        assert_eq!(ring.len(2), 0);
    }

    /// An insert whose re-check read epoch 0 stores its count after a jump
    /// to `2^24 - 1` reset every count: its tag (0) reads as a later epoch
    /// than the target's. The count starts over, and the generation
    /// counts (before, every count of that slot was stale).
    #[test]
    fn a_count_stored_across_a_jump_starts_over() {
        const JUMP: u64 = TAG_MASK;
        let ring = ring();
        assert!(ring.jump(ring.load(), JUMP, None));
        // Relaxed: one thread, as above.
        this_threads(&ring).store(pack_count(0, 1), Ordering::Relaxed);
        assert!(matches!(ring.count(JUMP), Counted::Room));
        assert!(matches!(ring.count(JUMP), Counted::Room));
        assert_eq!(ring.len(JUMP), 2);
    }
}
