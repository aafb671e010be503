//! splitmix64: small, seedable, the same everywhere. It draws the fault
//! schedules' faults ([`crate::faults`]) and the fleet tests' plans, and
//! the module tests' command streams.

/// A splitmix64 stream from its seed.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number (not an iterator: a schedule draws as it goes).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `per_mille` / 1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }

    /// True `percent` times in 100 (not `chance(10 * percent)`: another
    /// draw from the same number).
    pub fn percent(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// One of `choices`.
    pub fn pick<T: Clone>(&mut self, choices: &[T]) -> T {
        choices[self.below(choices.len())].clone()
    }
}
