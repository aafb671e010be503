//! Sizing for the blocked layouts: the exact expected false-positive rate,
//! the choice of bits per word, the number of blocks, and `capacity()`.
//!
//! Plain Bloom formulas under-size blocked filters (items do not spread
//! evenly over blocks), so the rate is computed for the layout itself,
//! assuming only that the hash is uniform:
//!
//! * a word that received `t` uniform bit throws has `B` set bits with the
//!   occupancy distribution, and a probe of `h` throws finds all its bits set
//!   with probability `E[(B/64)^h]` (`ProbeHitTable`);
//! * [`Layout::Word`]: items per word are Poisson(λ), and the rate is
//!   `Σ_j P(j) q(j)`;
//! * the counting filter: 64 one-byte counters per block and `k` per item
//!   are the same mathematics as `Layout::Word`, with a block as the unit;
//! * [`Layout::CacheLine`]: each item sets `h` bits in one of the 4 words of
//!   the block's first half and `h` in one of the 4 words of its second half.
//!   With λ items per block, the items hitting both of a probe's words, only
//!   the first, and only the second are independent Poisson(λ/16),
//!   Poisson(3λ/16), Poisson(3λ/16), so the rate is
//!   `Σ_a P(a) (Σ_b P(b) q(a + b))²`.
//!
//! The rate grows with λ, so the largest λ at the target (found by bisection)
//! times the number of units is the capacity, and it does not depend on how
//! many items were asked for: the number of bits per word that maximizes it
//! is chosen once per (layout, rate).

use crate::block::{BLOCK_BYTES, WORDS_PER_BLOCK};
use crate::hash::POSITIONS_PER_WORD;
use crate::{Error, Layout};

/// Bits in one word of the filter.
const WORD_BITS: usize = 64;

/// Above this many items per word the rate is ~1 whatever the layout; loads
/// are capped here so absurd targets (0.9999) still size in bounded time.
const MAX_ITEMS_PER_WORD: f64 = 512.0;

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
}

impl Scheme {
    /// The bit-array layout this scheme plans; `None` for `Counters`, which
    /// plans a counter array.
    pub(crate) fn layout(self) -> Option<Layout> {
        match self {
            Scheme::CacheLine => Some(Layout::CacheLine),
            Scheme::Word => Some(Layout::Word),
            Scheme::Counters => None,
        }
    }
}

impl From<Layout> for Scheme {
    fn from(layout: Layout) -> Self {
        match layout {
            Layout::CacheLine => Scheme::CacheLine,
            Layout::Word => Scheme::Word,
        }
    }
}

/// The shape of a filter chosen for a (scheme, capacity, rate) request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Geometry {
    pub(crate) scheme: Scheme,
    /// Number of 64-byte blocks; a power of two.
    pub(crate) blocks: usize,
    /// Bits set per touched word: `h` for CacheLine (two words), `k` for Word.
    pub(crate) bits_per_word: u32,
    /// Items the filter holds at the target rate.
    pub(crate) capacity: usize,
}

impl Geometry {
    /// k: bits set per item (before collisions inside a word).
    pub(crate) fn num_hashes(&self) -> u32 {
        self.bits_per_word * words_touched(self.scheme)
    }
}

/// 64-slot groups an item touches.
fn words_touched(scheme: Scheme) -> u32 {
    match scheme {
        Scheme::CacheLine => 2,
        Scheme::Word | Scheme::Counters => 1,
    }
}

/// 64-slot groups (words of bits, or blocks of counters) in `blocks` blocks.
fn slot_groups(scheme: Scheme, blocks: usize) -> usize {
    match scheme {
        Scheme::CacheLine | Scheme::Word => blocks * WORDS_PER_BLOCK,
        Scheme::Counters => blocks,
    }
}

/// Largest `bits_per_word` the position material supports.
pub(crate) fn max_bits_per_word(scheme: Scheme) -> u32 {
    match scheme {
        Scheme::CacheLine => POSITIONS_PER_WORD,
        Scheme::Word | Scheme::Counters => 2 * POSITIONS_PER_WORD,
    }
}

/// Sizing units in `blocks` blocks: a block for CacheLine, a 64-slot group
/// otherwise.
fn units(scheme: Scheme, blocks: usize) -> f64 {
    match scheme {
        Scheme::CacheLine => blocks as f64,
        Scheme::Word | Scheme::Counters => slot_groups(scheme, blocks) as f64,
    }
}

fn max_load(scheme: Scheme) -> f64 {
    match scheme {
        Scheme::CacheLine => MAX_ITEMS_PER_WORD * WORDS_PER_BLOCK as f64,
        Scheme::Word | Scheme::Counters => MAX_ITEMS_PER_WORD,
    }
}

/// Checks a (capacity, rate) request and chooses the geometry.
pub(crate) fn plan(scheme: Scheme, capacity: usize, rate: f64) -> Result<Geometry, Error> {
    validate(capacity, rate)?;
    let (bits_per_word, load) = best_bits_per_word(scheme, rate);
    let units_per_block = units(scheme, 1);
    let blocks_needed = (capacity as f64 / load / units_per_block).ceil().max(1.0);
    // The largest power of two of blocks whose bytes fit in isize::MAX.
    let max_blocks = 1usize << (usize::BITS - 2 - BLOCK_BYTES.trailing_zeros());
    if blocks_needed > max_blocks as f64 {
        return Err(Error::TooLarge { capacity, rate });
    }
    let blocks = (blocks_needed as usize).next_power_of_two();
    let held = (load * units(scheme, blocks)).floor();
    // `as` saturates; `held >= capacity` by construction.
    let capacity = (held as usize).max(capacity);
    Ok(Geometry {
        scheme,
        blocks,
        bits_per_word,
        capacity,
    })
}

/// Rejects a capacity of 0 and rates outside (0, 1).
pub(crate) fn validate(capacity: usize, rate: f64) -> Result<(), Error> {
    if capacity == 0 {
        return Err(Error::ZeroCapacity);
    }
    if !(rate > 0.0 && rate < 1.0) {
        return Err(Error::InvalidFalsePositiveRate { rate });
    }
    Ok(())
}

/// The expected false-positive rate of `geometry` holding `items` items.
pub(crate) fn expected_rate(geometry: &Geometry, items: f64) -> f64 {
    let load = items / units(geometry.scheme, geometry.blocks);
    let mut table = ProbeHitTable::new(geometry.bits_per_word);
    rate_at_load(
        geometry.scheme,
        load.min(max_load(geometry.scheme)),
        &mut table,
    )
}

/// Items inserted, inverted from `set_bits` set bits.
///
/// One item sets a given bit of the array with probability
/// `p = (words touched / words) (1 - (63/64)^h)` (it must pick that bit's
/// word, then one of its `h` throws must land on it), independently of other
/// items, so `E[set] = m (1 - (1 - p)^n)` exactly; this solves for `n`. The
/// plain `-(m/k) ln(1 - X/m)` assumes `k` independent throws per item and
/// reads 2-6% low on blocked layouts.
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

/// Bits in the array, and the probability that one item sets a given one.
fn fill_model(geometry: &Geometry) -> (f64, f64) {
    let words = slot_groups(geometry.scheme, geometry.blocks) as f64;
    let miss_one_throw = 1.0 - 1.0 / WORD_BITS as f64;
    let per_item = words_touched(geometry.scheme) as f64 / words
        * (1.0 - miss_one_throw.powi(geometry.bits_per_word as i32));
    (words * WORD_BITS as f64, per_item)
}

/// The bits per word that lets a unit hold the most items at `rate`, and
/// that largest load.
fn best_bits_per_word(scheme: Scheme, rate: f64) -> (u32, f64) {
    let mut best = (1, 0.0);
    for bits_per_word in 1..=max_bits_per_word(scheme) {
        let load = max_load_at_rate(scheme, bits_per_word, rate);
        if load > best.1 {
            best = (bits_per_word, load);
        } else if bits_per_word > best.0 + 1 {
            break; // the load is unimodal in the bits per word
        }
    }
    best
}

/// Largest items-per-unit at which the rate stays at or under `rate`.
fn max_load_at_rate(scheme: Scheme, bits_per_word: u32, rate: f64) -> f64 {
    let mut table = ProbeHitTable::new(bits_per_word);
    let cap = max_load(scheme);
    let mut high = 1.0f64;
    while rate_at_load(scheme, high, &mut table) <= rate {
        if high >= cap {
            return cap;
        }
        high = (high * 2.0).min(cap);
    }
    let mut low = 0.0f64;
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

/// Expected false-positive rate at `load` items per unit.
fn rate_at_load(scheme: Scheme, load: f64, table: &mut ProbeHitTable) -> f64 {
    match scheme {
        Scheme::Word | Scheme::Counters => {
            let items = Poisson::new(load);
            table.extend_to(items.last());
            items.terms().map(|(j, p)| p * table.get(j)).sum()
        }
        Scheme::CacheLine => {
            let both = Poisson::new(load / 16.0);
            let one = Poisson::new(3.0 * load / 16.0);
            table.extend_to(both.last() + one.last());
            both.terms()
                .map(|(shared, p_shared)| {
                    let word: f64 = one
                        .terms()
                        .map(|(own, p_own)| p_own * table.get(shared + own))
                        .sum();
                    p_shared * word * word
                })
                .sum::<f64>()
        }
    }
    .clamp(0.0, 1.0)
}

/// `q(j)`: the probability that a probe's `h` bits are all set in a word that
/// `j` items (each setting `h` uniform bits, with replacement) went into.
struct ProbeHitTable {
    bits_per_word: u32,
    /// Distribution of the number of set bits after `throws` throws.
    occupancy: [f64; WORD_BITS + 1],
    /// `(b / 64)^h` for b = 0..=64.
    hit: [f64; WORD_BITS + 1],
    q: Vec<f64>,
}

impl ProbeHitTable {
    fn new(bits_per_word: u32) -> Self {
        let mut occupancy = [0.0; WORD_BITS + 1];
        occupancy[0] = 1.0;
        let mut hit = [0.0; WORD_BITS + 1];
        for (set, h) in hit.iter_mut().enumerate() {
            *h = (set as f64 / WORD_BITS as f64).powi(bits_per_word as i32);
        }
        ProbeHitTable {
            bits_per_word,
            occupancy,
            hit,
            q: vec![0.0],
        }
    }

    fn get(&self, items: usize) -> f64 {
        self.q[items]
    }

    fn extend_to(&mut self, items: usize) {
        while self.q.len() <= items {
            for _ in 0..self.bits_per_word {
                self.throw_one();
            }
            let q = self
                .occupancy
                .iter()
                .zip(&self.hit)
                .map(|(o, h)| o * h)
                .sum();
            self.q.push(q);
        }
    }

    fn throw_one(&mut self) {
        // Walk downwards so each entry reads the previous throw's values.
        for set in (1..=WORD_BITS).rev() {
            let stay = self.occupancy[set] * set as f64 / WORD_BITS as f64;
            let grow = self.occupancy[set - 1] * (WORD_BITS - set + 1) as f64 / WORD_BITS as f64;
            self.occupancy[set] = stay + grow;
        }
        self.occupancy[0] = 0.0;
    }
}

/// The Poisson(mean) probabilities over a window that holds all but a
/// negligible tail (< 1e-15) of the mass.
struct Poisson {
    first: usize,
    probabilities: Vec<f64>,
}

impl Poisson {
    fn new(mean: f64) -> Self {
        if mean <= 0.0 {
            return Poisson {
                first: 0,
                probabilities: vec![1.0],
            };
        }
        let spread = 9.0 * mean.sqrt() + 24.0;
        let mode = mean.floor();
        let first = (mode - spread).max(0.0) as usize;
        let last = (mode + spread) as usize;
        let ln_mode = mode * mean.ln() - mean - ln_factorial(mode as usize);
        let mode = mode as usize;
        let mut probabilities = vec![0.0; last - first + 1];
        probabilities[mode - first] = ln_mode.exp();
        for j in (first..mode).rev() {
            probabilities[j - first] = probabilities[j + 1 - first] * (j + 1) as f64 / mean;
        }
        for j in mode + 1..=last {
            probabilities[j - first] = probabilities[j - 1 - first] * mean / j as f64;
        }
        Poisson {
            first,
            probabilities,
        }
    }

    fn last(&self) -> usize {
        self.first + self.probabilities.len() - 1
    }

    fn terms(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        (self.first..).zip(self.probabilities.iter().copied())
    }
}

/// ln(n!), exact summation below 32 and Stirling's series above.
fn ln_factorial(n: usize) -> f64 {
    if n < 32 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let n = n as f64;
    n * n.ln() - n + 0.5 * (2.0 * std::f64::consts::PI * n).ln() + 1.0 / (12.0 * n)
        - 1.0 / (360.0 * n * n * n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_factorial_is_continuous_at_the_switch() {
        let exact: f64 = (2..=40).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(40) - exact).abs() < 1e-10);
    }

    #[test]
    fn one_item_per_word_single_bit() {
        // One item with one bit in a word: a probe hits with probability 1/64.
        let mut table = ProbeHitTable::new(1);
        table.extend_to(1);
        assert!((table.get(1) - 1.0 / 64.0).abs() < 1e-15);
    }

    #[test]
    fn set_bits_at_inverts_items_from_set_bits() {
        for scheme in [Scheme::CacheLine, Scheme::Word] {
            let geometry = plan(scheme, 100_000, 0.01).unwrap();
            for items in [1.0, 1_000.0, 100_000.0] {
                let bits = set_bits_at(&geometry, items);
                let back = items_from_set_bits(&geometry, bits.round() as usize);
                assert!(
                    (back - items).abs() <= 1.0 + items * 1e-4,
                    "{scheme:?} {items} {back}"
                );
            }
        }
    }

    #[test]
    fn rate_grows_with_load() {
        let mut table = ProbeHitTable::new(4);
        let low = rate_at_load(Scheme::CacheLine, 20.0, &mut table);
        let high = rate_at_load(Scheme::CacheLine, 40.0, &mut table);
        assert!(low < high);
    }
}
