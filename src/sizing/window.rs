//! Sizing a windowed filter: `g` generations of one shape, queried
//! together.
//!
//! A lookup answers yes when any live generation holds the item, so the
//! false-positive rate is that of the union, `1 - (1 - f)^g` with `f` one
//! generation's rate at its load (items land in one generation each, so the
//! generations' loads are independent and the union is exact given `f`).
//! It is largest just before a rotation, when every generation is full, and
//! the sizing holds it to the target there.
//!
//! Two shapes (`src/windowed/probe.rs` places the bits):
//!
//! * [`Layout::CacheLine`]: all generations of an item share one block of
//!   two lines (16 words). Generation slot `i` owns words `i, i + g,
//!   i + 2g, ...`, a segment of `16 / g` words; an item sets `h` bits in one
//!   word of each half of its segment (the first half in the first line,
//!   the second in the second line). `g` is 2, 4 or 8. A lookup reads two
//!   adjacent lines, whatever `g`.
//! * [`Layout::Word`]: the same blocks, an item's `k` bits all in one
//!   word of its segment, so that one `fetch_or` decides which of several
//!   racing inserts of an item is the new one.
//! * [`Layout::Compact`]: each generation has its own array of 512-bit
//!   blocks and an item's `k` bits fall anywhere in its block, as in a
//!   compact `BloomFilter`. `g` from 2 to 16; a lookup reads `g` lines.

use super::rate::{pair_rate_at_load, rate_at_load, ProbeHitTable};
use super::{max_lines, Scheme, LINE_BITS};
use crate::block::WORDS_PER_BLOCK;
use crate::hash::POSITIONS_PER_WORD;
use crate::sync::Memo;
use crate::{Error, Layout, Sizing};

/// Lines in a block of the cache-line shape: every generation's segment.
pub(crate) const SHARED_BLOCK_LINES: usize = 2;

/// Words in a block of the cache-line shape.
pub(crate) const SHARED_BLOCK_WORDS: usize = SHARED_BLOCK_LINES * WORDS_PER_BLOCK;

/// Generation counts the cache-line shape allows: those that cut 16 words
/// into equal segments of at least two words.
pub(crate) const SHARED_GENERATIONS: [u32; 3] = [2, 4, 8];

/// The most generations the compact shape allows.
pub(crate) const MAX_SEPARATE_GENERATIONS: u32 = 16;

/// The compact shape takes the fewest generations whose memory is within
/// this much of the least (more generations cost a line per lookup each).
const GENERATIONS_GAIN: f64 = 0.03;

/// The shape of a windowed filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct WindowGeometry {
    /// [`Layout::CacheLine`] or [`Layout::Word`] (shared blocks), or
    /// [`Layout::Compact`] (an array per generation).
    pub(crate) layout: Layout,
    pub(crate) sizing: Sizing,
    /// Generations queried together: `g`.
    pub(crate) generations: u32,
    /// `h` bits in each of two words (cache-line) or `k` bits (word,
    /// compact).
    pub(crate) bits_per_word: u32,
    /// Blocks per generation: two-line shared blocks (cache-line) or lines
    /// (compact).
    pub(crate) blocks: usize,
    /// New items a generation takes before the next one starts: `G`.
    pub(crate) generation_capacity: usize,
}

impl WindowGeometry {
    /// 64-byte lines in the whole array.
    pub(crate) fn lines(&self) -> usize {
        match self.layout {
            Layout::Compact => self.blocks * self.generations as usize,
            _ => self.blocks * SHARED_BLOCK_LINES,
        }
    }

    /// Words of one generation's segment in a shared block, per half
    /// (cache-line shape).
    pub(crate) fn words_per_half(&self) -> u32 {
        SHARED_BLOCK_WORDS as u32 / self.generations / 2
    }

    /// The false-positive rate expected with `items` new items in each of
    /// the `g` generations.
    pub(crate) fn expected_rate(&self, items: f64) -> f64 {
        let shape = Shape::of(self.layout, self.generations);
        let mut table = shape.table(self.bits_per_word);
        union_rate(
            shape.rate(items / self.blocks as f64, &mut table),
            self.generations,
        )
    }

    /// Checks the fields of a saved geometry: what [`plan_window`] could
    /// have made.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let invalid = |field: &'static str, value: u64| Err(Error::InvalidField { field, value });
        check_generations(self.layout, Some(self.generations)).map_err(|_| {
            Error::InvalidField {
                field: "generations",
                value: u64::from(self.generations),
            }
        })?;
        let max_bits = Shape::of(self.layout, self.generations).max_bits_per_word();
        if self.bits_per_word == 0 {
            return Err(Error::ZeroHashes);
        }
        if self.bits_per_word > max_bits {
            return invalid("bits per word", u64::from(self.bits_per_word));
        }
        if self.generation_capacity == 0 {
            return invalid("generation capacity", 0);
        }
        let per_generation = match self.layout {
            Layout::Compact => 1,
            _ => SHARED_BLOCK_LINES,
        };
        let fits = self.blocks >= 1
            && (self.sizing == Sizing::Exact || self.blocks.is_power_of_two())
            && self
                .blocks
                .checked_mul(per_generation * self.generations as usize)
                .is_some_and(|lines| lines <= max_lines());
        if !fits {
            return invalid("block count", self.blocks as u64);
        }
        Ok(())
    }
}

/// Checks a request and sizes it: `window` items remembered at `rate`, in
/// `generations` generations (the layout's default when `None`), with
/// room for `overfill(G)` items past `G` in a generation (the inserts that
/// land while a full generation is noticed and rotated).
pub(crate) fn plan_window(
    layout: Layout,
    sizing: Sizing,
    window: usize,
    rate: f64,
    generations: Option<u32>,
    overfill: impl Fn(usize) -> usize,
) -> Result<WindowGeometry, Error> {
    // The check every filter makes; a window's count is its window.
    super::validate(window, rate).map_err(|err| match err {
        Error::ZeroCapacity => Error::ZeroWindow,
        err => err,
    })?;
    check_generations(layout, generations)?;
    let generations = generations.unwrap_or_else(|| default_generations(layout, rate));
    let shape = Shape::of(layout, generations);
    let (bits_per_word, load) = shape.best(rate);
    let generation_capacity = window.div_ceil(generations as usize - 1);
    let sized_for = generation_capacity as f64 + overfill(generation_capacity) as f64;
    let needed = (sized_for / load).ceil().max(1.0);
    let lines_per_block = match layout {
        Layout::Compact => generations as f64,
        _ => SHARED_BLOCK_LINES as f64,
    };
    if needed * lines_per_block > (max_lines() / 2) as f64 {
        return Err(Error::TooLarge {
            capacity: window,
            rate,
        });
    }
    let blocks = match sizing {
        Sizing::PowerOfTwo => (needed as usize).next_power_of_two(),
        Sizing::Exact => needed as usize,
    };
    Ok(WindowGeometry {
        layout,
        sizing,
        generations,
        bits_per_word,
        blocks,
        generation_capacity,
    })
}

/// Bits of the array per remembered item of a window filter of `layout`
/// and `generations` at `rate`, before rounding: the memory price of a
/// shape, for choosing one.
fn bits_per_window_item(layout: Layout, generations: u32, rate: f64) -> f64 {
    let shape = Shape::of(layout, generations);
    let (_, load) = shape.best(rate);
    let g = f64::from(generations);
    shape.segment_bits() as f64 / load * g / (g - 1.0)
}

fn check_generations(layout: Layout, generations: Option<u32>) -> Result<(), Error> {
    match (layout, generations) {
        (_, None) => Ok(()),
        (Layout::Compact, Some(g)) if (2..=MAX_SEPARATE_GENERATIONS).contains(&g) => Ok(()),
        (Layout::CacheLine | Layout::Word, Some(g)) if SHARED_GENERATIONS.contains(&g) => Ok(()),
        (layout, Some(generations)) => Err(Error::InvalidGenerations {
            generations,
            layout,
        }),
    }
}

/// The generations a layout takes unless told: the least memory (for
/// compact, the fewest within [`GENERATIONS_GAIN`] of it).
fn default_generations(layout: Layout, rate: f64) -> u32 {
    let candidates: Vec<u32> = match layout {
        Layout::Compact => (2..=MAX_SEPARATE_GENERATIONS).collect(),
        _ => SHARED_GENERATIONS.to_vec(),
    };
    let bits: Vec<(u32, f64)> = candidates
        .iter()
        .map(|&g| (g, bits_per_window_item(layout, g, rate)))
        .collect();
    let least = bits.iter().map(|&(_, b)| b).fold(f64::INFINITY, f64::min);
    let slack = match layout {
        Layout::Compact => GENERATIONS_GAIN,
        _ => 0.0,
    };
    bits.iter()
        .find(|&&(_, b)| b <= least * (1.0 + slack))
        .map_or(candidates[0], |&(g, _)| g)
}

/// One generation's probe, and how many are queried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Shape {
    layout: Layout,
    generations: u32,
}

impl Shape {
    fn of(layout: Layout, generations: u32) -> Self {
        Shape {
            layout,
            generations,
        }
    }

    /// Bits of one generation's segment of a block.
    fn segment_bits(self) -> usize {
        match self.layout {
            Layout::Compact => LINE_BITS,
            _ => SHARED_BLOCK_WORDS * 64 / self.generations as usize,
        }
    }

    fn max_bits_per_word(self) -> u32 {
        match self.layout {
            Layout::Compact => super::MAX_COMPACT_BITS,
            Layout::Word => 2 * POSITIONS_PER_WORD,
            Layout::CacheLine => POSITIONS_PER_WORD,
        }
    }

    fn table(self, bits_per_word: u32) -> ProbeHitTable {
        match self.layout {
            Layout::Compact => ProbeHitTable::new(bits_per_word, LINE_BITS),
            _ => ProbeHitTable::new(bits_per_word, 64),
        }
    }

    /// One generation's rate at `load` items per block.
    fn rate(self, load: f64, table: &mut ProbeHitTable) -> f64 {
        match self.layout {
            Layout::Compact => rate_at_load(Scheme::Compact { lines: 1 }, load, table),
            // Items spread over the segment's words; each word is a word
            // filter.
            Layout::Word => rate_at_load(
                Scheme::Word,
                load / (SHARED_BLOCK_WORDS as u32 / self.generations) as f64,
                table,
            ),
            Layout::CacheLine => pair_rate_at_load(
                load,
                SHARED_BLOCK_WORDS as u32 / self.generations / 2,
                table,
            ),
        }
    }

    /// The bits per word that let a generation's block hold the most items
    /// with the union at `rate`, and that load; remembered process-wide.
    fn best(self, rate: f64) -> (u32, f64) {
        static BEST: Memo<(Shape, u64), (u32, f64)> = Memo::new();
        BEST.get_or_insert_with((self, rate.to_bits()), || {
            (1..=self.max_bits_per_word())
                .map(|bits| (bits, self.max_load(bits, rate)))
                .fold(
                    (1, 0.0),
                    |best, next| if next.1 > best.1 { next } else { best },
                )
        })
    }

    /// The largest load per block at which the union stays at `rate`.
    fn max_load(self, bits_per_word: u32, rate: f64) -> f64 {
        let mut table = self.table(bits_per_word);
        let union_at = |load: f64, table: &mut ProbeHitTable| {
            union_rate(self.rate(load, table), self.generations)
        };
        let cap = self.segment_bits() as f64 * 8.0;
        let (mut low, mut high) = (0.0f64, (self.segment_bits() as f64 / 64.0).max(1e-3));
        while union_at(high, &mut table) <= rate {
            if high >= cap {
                return cap;
            }
            low = high;
            high = (high * 1.25).min(cap);
        }
        for _ in 0..36 {
            let middle = 0.5 * (low + high);
            if union_at(middle, &mut table) <= rate {
                low = middle;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// The rate of `generations` independent filters of rate `one` queried
/// together: `1 - (1 - one)^g`, computed so that a tiny `one` does not
/// round to 0 (as `1 - (1 - one)^g` does below about 1e-17: the sizing
/// then took any rate under that for reached at any load, and built
/// filters for rates no filter reaches).
fn union_rate(one: f64, generations: u32) -> f64 {
    -(f64::from(generations) * (-one).ln_1p()).exp_m1()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_of_full_generations_reaches_the_target_at_capacity() {
        for layout in [Layout::CacheLine, Layout::Word, Layout::Compact] {
            for rate in [0.1, 0.01, 0.001] {
                let geometry =
                    plan_window(layout, Sizing::Exact, 1_000_000, rate, None, |_| 0).unwrap();
                let at = geometry.expected_rate(geometry.generation_capacity as f64);
                assert!(at <= rate, "{layout:?} at {rate}: {at}");
                assert!(at > rate * 0.97, "{layout:?} at {rate}: {at} (oversized)");
            }
        }
    }

    #[test]
    fn defaults_take_the_least_memory() {
        assert_eq!(default_generations(Layout::CacheLine, 0.01), 4);
        assert_eq!(default_generations(Layout::Word, 0.01), 4);
        let compact = default_generations(Layout::Compact, 0.01);
        assert!((4..=8).contains(&compact), "{compact}");
    }

    #[test]
    fn bad_generations_are_refused() {
        let plan = |layout, g| plan_window(layout, Sizing::Exact, 100, 0.01, Some(g), |_| 0);
        assert!(matches!(
            plan(Layout::CacheLine, 3),
            Err(Error::InvalidGenerations { .. })
        ));
        assert!(matches!(
            plan(Layout::Compact, 1),
            Err(Error::InvalidGenerations { .. })
        ));
        assert!(matches!(
            plan(Layout::Word, 3),
            Err(Error::InvalidGenerations { .. })
        ));
        assert!(plan(Layout::Word, 8).is_ok());
        assert!(plan(Layout::Compact, 16).is_ok());
    }
}
