//! The exact expected false-positive rate of a blocked filter, assuming only
//! that the hash is uniform.
//!
//! A group of `slots` bits (a 64-bit word, a 512- or 1024-bit block, or 64
//! counters) that received `t` uniform throws has `X` of its slots set with
//! the occupancy distribution; a probe of `h` throws finds all its slots set
//! with probability `E[(X/slots)^h]` ([`ProbeHitTable`]). Items spread over
//! the groups as Poisson(λ), which gives the rate of each scheme in
//! [`rate_at_load`].

use super::Scheme;

/// Mass of the occupancy distribution below which a state is dropped: far
/// below any rate a filter is asked for, and it keeps the distribution's
/// window a few standard deviations wide.
const NEGLIGIBLE: f64 = 1e-40;

/// Expected false-positive rate at `load` items per sizing unit.
pub(super) fn rate_at_load(scheme: Scheme, load: f64, table: &mut ProbeHitTable) -> f64 {
    match scheme {
        Scheme::Word | Scheme::Counters | Scheme::Compact { .. } => {
            let items = Poisson::new(load);
            table.extend_to(items.last());
            items.terms().map(|(j, p)| p * table.get(j)).sum()
        }
        // Each item sets `h` bits in one of the 4 words of the block's first
        // half and `h` in one of the 4 of its second half: a pair probe of 4
        // words per half. The items hitting both of a probe's words, only
        // the first, and only the second are independent Poisson(λ/16),
        // Poisson(3λ/16), Poisson(3λ/16).
        Scheme::CacheLine => pair_rate_at_load(load, 4, table),
    }
    .clamp(0.0, 1.0)
}

/// Expected false-positive rate of a pair probe at `load` items per
/// segment: `h` bits in one of `words_per_half` words of the segment's first
/// half and `h` in one of its second half (the cache-line scheme is 4 words
/// per half). As there, the items hitting both of a probe's words, only its
/// first and only its second are independent Poisson variables.
pub(super) fn pair_rate_at_load(load: f64, words_per_half: u32, table: &mut ProbeHitTable) -> f64 {
    let w = f64::from(words_per_half);
    let both = Poisson::new(load / (w * w));
    let one = Poisson::new(load * (w - 1.0) / (w * w));
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
        .clamp(0.0, 1.0)
}

/// `q(j)`: the probability that a probe's `h` throws all land on set slots
/// of a group of `slots` slots that `j` items (each throwing `h` times,
/// with replacement) went into.
pub(super) struct ProbeHitTable {
    throws_per_item: u32,
    slots: usize,
    /// Distribution of the number of set slots after the throws so far;
    /// zero (or negligible, and dropped) outside `low..=high`.
    occupancy: Vec<f64>,
    low: usize,
    high: usize,
    /// The next throw's distribution is computed here, then swapped in.
    scratch: Vec<f64>,
    /// `b / slots` and `(slots - b + 1) / slots` for b = 0..=slots: the
    /// chances that a throw lands on a set slot with b set, and on an unset
    /// one with b - 1 set.
    stay: Vec<f64>,
    grow: Vec<f64>,
    /// `(b / slots)^h` for b = 0..=slots.
    hit: Vec<f64>,
    q: Vec<f64>,
}

impl ProbeHitTable {
    pub(super) fn new(throws_per_item: u32, slots: usize) -> Self {
        let mut occupancy = vec![0.0; slots + 1];
        occupancy[0] = 1.0;
        let hit = (0..=slots)
            .map(|set| (set as f64 / slots as f64).powi(throws_per_item as i32))
            .collect();
        let per_slot = 1.0 / slots as f64;
        ProbeHitTable {
            throws_per_item,
            slots,
            scratch: vec![0.0; slots + 1],
            stay: (0..=slots).map(|set| set as f64 * per_slot).collect(),
            grow: (0..=slots)
                .map(|set| (slots + 1 - set.max(1)) as f64 * per_slot)
                .collect(),
            occupancy,
            low: 0,
            high: 0,
            hit,
            q: vec![0.0],
        }
    }

    pub(super) fn get(&self, items: usize) -> f64 {
        self.q[items]
    }

    pub(super) fn extend_to(&mut self, items: usize) {
        while self.q.len() <= items {
            for _ in 0..self.throws_per_item {
                self.throw_one();
            }
            let q = (self.low..=self.high)
                .map(|set| self.occupancy[set] * self.hit[set])
                .sum();
            self.q.push(q);
        }
    }

    fn throw_one(&mut self) {
        let high = (self.high + 1).min(self.slots);
        // A throw lands on a set slot with probability set/slots (the count
        // stays), on an unset one otherwise (it grows by one). The entry
        // below `low` is zero.
        let from = self.low.max(1);
        let (old, new) = (&self.occupancy, &mut self.scratch);
        new[from - 1] = old[from - 1] * self.stay[from - 1];
        for (set, out) in new.iter_mut().enumerate().take(high + 1).skip(from) {
            *out = old[set] * self.stay[set] + old[set - 1] * self.grow[set];
        }
        std::mem::swap(&mut self.occupancy, &mut self.scratch);
        self.high = high;
        while self.low < self.high && self.occupancy[self.low] < NEGLIGIBLE {
            self.occupancy[self.low] = 0.0;
            self.low += 1;
        }
        while self.high > self.low && self.occupancy[self.high] < NEGLIGIBLE {
            self.occupancy[self.high] = 0.0;
            self.high -= 1;
        }
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
        let mut table = ProbeHitTable::new(1, 64);
        table.extend_to(1);
        assert!((table.get(1) - 1.0 / 64.0).abs() < 1e-15);
    }

    #[test]
    fn the_window_loses_no_mass_that_matters() {
        // Against the full distribution (no window) for a 512-slot block.
        for throws in [1, 7, 20] {
            let mut windowed = ProbeHitTable::new(throws, 512);
            windowed.extend_to(120);
            let mut occupancy = vec![0.0f64; 513];
            occupancy[0] = 1.0;
            for items in 1..=120usize {
                for _ in 0..throws {
                    for set in (1..=512).rev() {
                        occupancy[set] = occupancy[set] * set as f64 / 512.0
                            + occupancy[set - 1] * (513 - set) as f64 / 512.0;
                    }
                    occupancy[0] = 0.0;
                }
                let full: f64 = occupancy
                    .iter()
                    .enumerate()
                    .map(|(set, p)| p * (set as f64 / 512.0).powi(throws as i32))
                    .sum();
                let got = windowed.get(items);
                assert!(
                    (got - full).abs() <= 1e-12 * full + 1e-30,
                    "{throws} throws, {items} items: {got} vs {full}"
                );
            }
        }
    }

    #[test]
    fn rate_grows_with_load() {
        let mut table = ProbeHitTable::new(4, 64);
        let low = rate_at_load(Scheme::CacheLine, 20.0, &mut table);
        let high = rate_at_load(Scheme::CacheLine, 40.0, &mut table);
        assert!(low < high);
    }
}
