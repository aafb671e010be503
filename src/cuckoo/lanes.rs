//! SWAR over the slots of a word: lanes of one slot width, and where a
//! bucket's lanes lie.

/// The SWAR constants of a slot width: each lane's low bit, high bit, and
/// the bits below its high bit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lanes {
    pub(super) bits: u32,
    low: u64,
    pub(super) high: u64,
    rest: u64,
    pub(super) all_ones: u64,
}

impl Lanes {
    pub(super) const fn new(bits: u32) -> Self {
        let per_word = 64 / bits;
        let mut low = 0u64;
        let mut lane = 0;
        while lane < per_word {
            low |= 1 << (lane * bits);
            lane += 1;
        }
        let high = low << (bits - 1);
        let all_ones = (1u64 << bits) - 1;
        Lanes {
            bits,
            low,
            high,
            rest: low * (all_ones >> 1),
            all_ones,
        }
    }

    /// The high bits of the lanes among `valid` (a mask of high bits) that
    /// hold `broadcast`'s lane value.
    #[inline(always)]
    pub(super) fn matching(&self, word: u64, broadcast: u64, valid: u64) -> u64 {
        let x = word ^ broadcast;
        !((x & self.rest).wrapping_add(self.rest) | x) & valid
    }

    /// `value` in every lane.
    #[inline(always)]
    pub(super) fn broadcast(&self, value: u64) -> u64 {
        value * self.low
    }

    /// The shift of the lowest lane of a non-empty mask of high bits.
    #[inline(always)]
    pub(super) fn lowest_shift(&self, mask: u64) -> u32 {
        mask.trailing_zeros() + 1 - self.bits
    }

    /// The high bits of the lanes from `first` (inclusive) to `end`
    /// (exclusive).
    #[inline(always)]
    pub(super) fn lane_range(&self, first: u32, end: u32) -> u64 {
        let below_end = if end * self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << (end * self.bits)) - 1
        };
        let below_first = (1u64 << (first * self.bits)) - 1;
        self.high & below_end & !below_first
    }
}

/// Where a bucket's slots are: `count` words from `first`, the lanes of
/// the first word among `head` and of the last among `tail` (high-bit
/// masks).
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) first: usize,
    pub(super) count: usize,
    pub(super) head: u64,
    pub(super) tail: u64,
}

impl Span {
    #[inline(always)]
    pub(super) fn valid(&self, index: usize, all: u64) -> u64 {
        let mut mask = all;
        if index == 0 {
            mask &= self.head;
        }
        if index + 1 == self.count {
            mask &= self.tail;
        }
        mask
    }
}
