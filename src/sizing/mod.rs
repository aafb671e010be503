//! Sizing for the blocked layouts: the choice of bits per item, the number
//! of blocks, and `capacity()`.
//!
//! Plain Bloom formulas under-size blocked filters (items do not spread
//! evenly over blocks), so the rate is computed for the layout itself
//! (`rate.rs`):
//!
//! * [`Layout::Word`]: items per word are Poisson(λ), each sets `k` bits of
//!   its 64;
//! * the counting filter: 64 one-byte counters per block and `k` per item
//!   are the same mathematics, with a block as the unit;
//! * [`Layout::Compact`]: the same again with a block of 512 (or 1024) bits
//!   as the unit;
//! * [`Layout::CacheLine`]: `h` bits in one of the 4 words of the block's
//!   first half and `h` in one of its second half.
//!
//! The rate grows with λ, so the largest λ at the target (found by
//! bisection) times the number of units is the capacity, and it does not
//! depend on how many items were asked for: the number of bits per item that
//! maximizes it is chosen once per (scheme, rate). The number of blocks is
//! then rounded up to a power of two ([`Sizing::PowerOfTwo`]) or to a whole
//! block ([`Sizing::Exact`]).

mod rate;
mod window;

use rate::{rate_at_load, ProbeHitTable};
pub(crate) use window::{plan_window, WindowGeometry, SHARED_BLOCK_LINES};

use crate::block::{BLOCK_BYTES, WORDS_PER_BLOCK};
use crate::hash::POSITIONS_PER_WORD;
use crate::sync::Memo;
use crate::{Error, Layout, Sizing};

/// Bits in one word of the filter.
const WORD_BITS: usize = 64;

/// Bits in one 64-byte line.
const LINE_BITS: usize = BLOCK_BYTES * 8;

/// Above this many items per 64 slots the rate is ~1 whatever the layout;
/// loads are capped here so absurd targets (0.9999) still size in bounded
/// time.
const MAX_ITEMS_PER_WORD: f64 = 512.0;

/// The most bits an item sets under [`Layout::Compact`].
pub(crate) const MAX_COMPACT_BITS: u32 = 32;

/// [`Layout::Compact`] takes two-line blocks where they need at least this
/// much less memory than one-line blocks: a lookup then reads two lines.
const WIDE_BLOCK_GAIN: f64 = 0.03;

/// What is being sized: a bit layout, or the counting filter's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// `h` bits in each of two words of a 64-bit-word block.
    CacheLine,
    /// `k` bits in one 64-bit word.
    Word,
    /// `k` of the 64 one-byte counters of a block: the same mathematics as
    /// `Word` (64 slots, `k` uniform throws), with a block as the unit.
    Counters,
    /// `k` bits anywhere in a block of `lines` 64-byte lines (1 or 2).
    Compact { lines: u32 },
}

impl Scheme {
    /// The scheme of `layout` at `rate`: [`Layout::Compact`] chooses its
    /// block width by the memory it needs at that rate.
    pub(crate) fn for_layout(layout: Layout, rate: f64) -> Scheme {
        match layout {
            Layout::CacheLine => Scheme::CacheLine,
            Layout::Word => Scheme::Word,
            Layout::Compact => compact_scheme(rate),
        }
    }

    /// The bit-array layout this scheme plans; `None` for `Counters`, which
    /// plans a counter array.
    pub(crate) fn layout(self) -> Option<Layout> {
        match self {
            Scheme::CacheLine => Some(Layout::CacheLine),
            Scheme::Word => Some(Layout::Word),
            Scheme::Compact { .. } => Some(Layout::Compact),
            Scheme::Counters => None,
        }
    }

    /// 64-byte lines in one of the scheme's blocks.
    pub(crate) fn lines_per_block(self) -> usize {
        match self {
            Scheme::Compact { lines } => lines as usize,
            Scheme::CacheLine | Scheme::Word | Scheme::Counters => 1,
        }
    }

    /// Slot groups an item touches, and the slots of one group.
    fn group(self) -> (u32, usize) {
        match self {
            Scheme::CacheLine => (2, WORD_BITS),
            Scheme::Word | Scheme::Counters => (1, WORD_BITS),
            Scheme::Compact { lines } => (1, LINE_BITS * lines as usize),
        }
    }

    /// Slot groups (words, counter blocks or compact blocks) in `lines`
    /// lines.
    fn groups(self, lines: usize) -> usize {
        match self {
            Scheme::CacheLine | Scheme::Word => lines * WORDS_PER_BLOCK,
            Scheme::Counters => lines,
            Scheme::Compact { lines: per_block } => lines / per_block as usize,
        }
    }

    /// Sizing units in `lines` lines: a line for CacheLine, a slot group
    /// otherwise.
    fn units(self, lines: usize) -> f64 {
        match self {
            Scheme::CacheLine => lines as f64,
            _ => self.groups(lines) as f64,
        }
    }

    /// Largest `bits_per_word` the position material supports.
    pub(crate) fn max_bits_per_word(self) -> u32 {
        match self {
            Scheme::CacheLine => POSITIONS_PER_WORD,
            Scheme::Word | Scheme::Counters => 2 * POSITIONS_PER_WORD,
            Scheme::Compact { .. } => MAX_COMPACT_BITS,
        }
    }

    /// Bits in one sizing unit.
    fn bits_per_unit(self) -> usize {
        match self {
            Scheme::CacheLine => LINE_BITS,
            _ => self.group().1,
        }
    }

    /// The highest load sized for, in items per unit.
    fn max_load(self) -> f64 {
        MAX_ITEMS_PER_WORD * (self.bits_per_unit() / WORD_BITS) as f64
    }
}

/// The shape of a filter chosen for a (scheme, capacity, rate) request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Geometry {
    pub(crate) scheme: Scheme,
    pub(crate) sizing: Sizing,
    /// Number of 64-byte lines: a power of two of blocks under
    /// [`Sizing::PowerOfTwo`], any number of blocks under [`Sizing::Exact`].
    pub(crate) blocks: usize,
    /// Bits set per touched word: `h` for CacheLine (two words), `k` for
    /// Word, Counters and Compact.
    pub(crate) bits_per_word: u32,
    /// Items the filter holds at the target rate.
    pub(crate) capacity: usize,
}

impl Geometry {
    /// k: bits set per item (before collisions inside a word).
    pub(crate) fn num_hashes(&self) -> u32 {
        self.bits_per_word * self.scheme.group().0
    }

    /// The scheme's blocks (of one or two lines) in the array.
    pub(crate) fn scheme_blocks(&self) -> usize {
        self.blocks / self.scheme.lines_per_block()
    }

    /// Checks a block count read from a saved filter against the scheme and
    /// the sizing: at least one block, a whole number of the scheme's
    /// blocks, a power of two of them under `PowerOfTwo`, and bytes that fit
    /// the address space.
    pub(crate) fn blocks_fit(scheme: Scheme, sizing: Sizing, lines: usize) -> bool {
        let per_block = scheme.lines_per_block();
        lines >= per_block
            && lines % per_block == 0
            && (sizing == Sizing::Exact || (lines / per_block).is_power_of_two())
            && lines <= max_lines()
    }
}

/// The most lines an array may have: their bytes fit in `isize::MAX`.
fn max_lines() -> usize {
    1usize << (usize::BITS - 2 - BLOCK_BYTES.trailing_zeros())
}

/// Checks a (capacity, rate) request and chooses the geometry.
pub(crate) fn plan(
    scheme: Scheme,
    sizing: Sizing,
    capacity: usize,
    rate: f64,
) -> Result<Geometry, Error> {
    #[cfg(test)]
    PLANS.with(|plans| plans.set(plans.get() + 1));
    validate(capacity, rate)?;
    let (bits_per_word, load) = best_bits_per_word(scheme, rate);
    let per_block = scheme.lines_per_block();
    let units_per_block = scheme.units(per_block);
    let blocks_needed = (capacity as f64 / load / units_per_block).ceil().max(1.0);
    if blocks_needed * per_block as f64 > (max_lines() / 2) as f64 {
        return Err(Error::TooLarge { capacity, rate });
    }
    let blocks = match sizing {
        Sizing::PowerOfTwo => (blocks_needed as usize).next_power_of_two(),
        Sizing::Exact => blocks_needed as usize,
    };
    let lines = blocks * per_block;
    let held = (load * scheme.units(lines)).floor();
    // `as` saturates; `held >= capacity` by construction.
    let capacity = (held as usize).max(capacity);
    Ok(Geometry {
        scheme,
        sizing,
        blocks: lines,
        bits_per_word,
        capacity,
    })
}

/// The check every filter's constructor makes of its request: a capacity
/// of 0 and rates outside (0, 1) are refused here (a windowed filter's
/// capacity is its window: its 0 is `ZeroWindow`); a rate that no array of
/// the address space reaches is refused by the sizing that follows,
/// `TooLarge`, for every filter alike ([`request_error`]).
pub(crate) fn validate(capacity: usize, rate: f64) -> Result<(), Error> {
    if capacity == 0 {
        return Err(Error::ZeroCapacity);
    }
    if !(rate > 0.0 && rate < 1.0) {
        return Err(Error::InvalidFalsePositiveRate { rate });
    }
    Ok(())
}

/// A sizing error of a part of a filter (a scalable filter's first stage,
/// sized at a share of the request's rate) as the request's own: the part
/// found past the address space, or given a rate that rounded to 0, means
/// that the request is `TooLarge`, with the capacity and rate asked for.
pub(crate) fn request_error(err: Error, capacity: usize, rate: f64) -> Error {
    match err {
        Error::TooLarge { .. } | Error::InvalidFalsePositiveRate { .. } => {
            Error::TooLarge { capacity, rate }
        }
        err => err,
    }
}

/// The expected false-positive rate of `geometry` holding `items` items.
pub(crate) fn expected_rate(geometry: &Geometry, items: f64) -> f64 {
    let scheme = geometry.scheme;
    let load = items / scheme.units(geometry.blocks);
    let mut table = ProbeHitTable::new(geometry.bits_per_word, scheme.group().1);
    rate_at_load(scheme, load.min(scheme.max_load()), &mut table)
}

/// Items inserted, inverted from `set_bits` set bits.
///
/// One item sets a given bit of the array with probability
/// `p = (groups touched / groups) (1 - (1 - 1/slots)^h)` (it must pick that
/// bit's group, then one of its `h` throws must land on it), independently
/// of other items, so `E[set] = m (1 - (1 - p)^n)` exactly; this solves for
/// `n`. The plain `-(m/k) ln(1 - X/m)` assumes `k` independent throws per
/// item and reads 2-6% low on blocked layouts.
pub(crate) fn items_from_set_bits(geometry: &Geometry, set_bits: usize) -> f64 {
    let (bits, per_item) = fill_model(geometry);
    (-(set_bits as f64) / bits).ln_1p() / (-per_item).ln_1p()
}

/// Set bits expected after `items` items: the inverse of
/// [`items_from_set_bits`].
pub(crate) fn set_bits_at(geometry: &Geometry, items: f64) -> f64 {
    let (bits, per_item) = fill_model(geometry);
    -bits * ((-per_item).ln_1p() * items).exp_m1()
}

/// Slots in the array, and the probability that one item sets a given one.
fn fill_model(geometry: &Geometry) -> (f64, f64) {
    let scheme = geometry.scheme;
    let (touched, slots) = scheme.group();
    let groups = scheme.groups(geometry.blocks) as f64;
    let miss_one_throw = 1.0 - 1.0 / slots as f64;
    let per_item =
        f64::from(touched) / groups * (1.0 - miss_one_throw.powi(geometry.bits_per_word as i32));
    (groups * slots as f64, per_item)
}

/// The slots of one group (what an item's bits fall in: a word, a block)
/// and the number of groups, of `geometry`.
pub(crate) fn group_shape(geometry: &Geometry) -> (f64, f64) {
    let scheme = geometry.scheme;
    (
        scheme.group().1 as f64,
        scheme.groups(geometry.blocks) as f64,
    )
}

/// Compact blocks of one line, or of two where those need
/// [`WIDE_BLOCK_GAIN`] less memory at `rate`.
fn compact_scheme(rate: f64) -> Scheme {
    let (one, two) = (Scheme::Compact { lines: 1 }, Scheme::Compact { lines: 2 });
    // Bits per item: a block's bits over the items it holds.
    let bits_per_item =
        |scheme: Scheme| scheme.group().1 as f64 / best_bits_per_word(scheme, rate).1;
    if bits_per_item(two) < bits_per_item(one) * (1.0 - WIDE_BLOCK_GAIN) {
        two
    } else {
        one
    }
}

#[cfg(test)]
thread_local! {
    /// Filters this thread sized: what loading a saved filter costs
    /// (`persist/scalable.rs`'s tests).
    pub(crate) static PLANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The bits per word that lets a unit hold the most items at `rate`, and
/// that largest load; remembered process-wide, so that filters built alike
/// (every key a server creates with the defaults, every stage of the same
/// plan) size in microseconds.
fn best_bits_per_word(scheme: Scheme, rate: f64) -> (u32, f64) {
    static BEST: Memo<(Scheme, u64), (u32, f64)> = Memo::new();
    BEST.get_or_insert_with((scheme, rate.to_bits()), || {
        search_bits_per_word(scheme, rate)
    })
}

/// [`best_bits_per_word`], computed. The load is unimodal in the bits per
/// word: the search starts near the textbook optimum, `log2(1/rate)` bits in
/// all, and climbs.
fn search_bits_per_word(scheme: Scheme, rate: f64) -> (u32, f64) {
    let max = scheme.max_bits_per_word();
    let (touched, _) = scheme.group();
    let textbook = ((1.0 / rate).log2() / f64::from(touched)).round();
    let start = (textbook.clamp(1.0, f64::from(max)) as u32)
        .saturating_sub(1)
        .max(1);
    let load_at = |bits: u32| max_load_at_rate(scheme, bits, rate);
    let mut best = (start, load_at(start));
    // Downwards first, then upwards, while the load improves.
    let mut bits = start;
    while bits > 1 {
        let load = load_at(bits - 1);
        if load <= best.1 {
            break;
        }
        bits -= 1;
        best = (bits, load);
    }
    if best.0 == start {
        let mut bits = start;
        while bits < max {
            let load = load_at(bits + 1);
            if load <= best.1 {
                break;
            }
            bits += 1;
            best = (bits, load);
        }
    }
    best
}

/// How much the bracket of [`max_load_at_rate`] widens per step.
const BRACKET_STEP: f64 = 1.25;

/// Largest items-per-unit at which the rate stays at or under `rate`.
///
/// The bracket starts at half the load a textbook filter would reach
/// (blocked filters reach less) and widens by [`BRACKET_STEP`], so that the
/// hit table is computed little past the answer; then bisection.
fn max_load_at_rate(scheme: Scheme, bits_per_word: u32, rate: f64) -> f64 {
    let mut table = ProbeHitTable::new(bits_per_word, scheme.group().1);
    let cap = scheme.max_load();
    let textbook_load =
        scheme.bits_per_unit() as f64 * std::f64::consts::LN_2.powi(2) / (1.0 / rate).ln();
    let mut high = (0.5 * textbook_load).clamp(1e-3, cap);
    let mut low = 0.0f64;
    while rate_at_load(scheme, high, &mut table) <= rate {
        if high >= cap {
            return cap;
        }
        low = high;
        high = (high * BRACKET_STEP).min(cap);
    }
    for _ in 0..36 {
        let middle = 0.5 * (low + high);
        if rate_at_load(scheme, middle, &mut table) <= rate {
            low = middle;
        } else {
            high = middle;
        }
    }
    low
}

#[cfg(test)]
mod tests;
