//! Where an item's bits live: which block ([`Sizing`], `BlockIndex`) and
//! where inside it ([`Layout`], the probes).

use crate::block::WORDS_PER_BLOCK;
use crate::hash::{bit_mask, bit_mask_pair, more_material, position_words};
use crate::sizing::Geometry;

/// How an item's `k` bits are placed inside its block.
///
/// | layout | atomic ORs per new item | racing inserts of one absent item | bits per item at 1% | at 0.1% | at 0.01% | at 0.0001% |
/// |---|---|---|---|---|---|---|
/// | [`CacheLine`](Layout::CacheLine) (default) | up to 2 | one or more get `true` | 10.3 | 17.0 | 26.0 | 55.6 |
/// | [`Word`](Layout::Word) | 1 | exactly one gets `true` | 12.1 | 24.0 | 45.5 | 169.7 |
/// | [`Compact`](Layout::Compact) | `k` (6 at 1%) | one or more get `true` | 9.9 | 15.0 | 20.6 | 33.8 |
///
/// (Bits of the array per item at capacity, before the size is rounded: see
/// [`Sizing`]. A textbook Bloom filter, whose bits are spread over the whole
/// array, needs 9.6, 14.4, 19.2 and 28.8.)
///
/// `CacheLine` and `Word` read one cache line per lookup. `Word` packs all
/// `k` bits into one `AtomicU64`, so an insert is a single atomic
/// test-and-set and is linearizable; it needs more memory for the same rate,
/// because 64 bits are a small neighbourhood. Use it where a duplicate must
/// never be reported new twice (a crawler's frontier). `Compact` is the
/// least memory: bits anywhere in a 512-bit line, or, where that saves 3% or
/// more (at 0.1% and below), in a block of two adjacent lines (a lookup then
/// reads both). Its inserts are slower: a lookup, then one atomic OR per bit
/// of a new item.
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, Layout};
///
/// let exact_once: BloomFilter<str> = BloomFilter::builder(10_000, 0.01)
///     .layout(Layout::Word)
///     .build()?;
/// assert!(exact_once.insert("https://example.com/"));
/// assert!(!exact_once.insert("https://example.com/"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `k/2` bits in one of the first four words of the block and `k/2` in
    /// one of the last four. An insert is at most two atomic ORs, a lookup
    /// two loads from one cache line. Two threads racing to insert the same
    /// absent item may both be told it was new.
    #[default]
    CacheLine,
    /// All `k` bits in one 64-bit word. An insert is one `fetch_or`, and of
    /// several threads racing to insert the same absent item exactly one gets
    /// `true`.
    Word,
    /// `k` bits anywhere in one 512-bit line, or in two adjacent lines where
    /// the rate asks for so many bits that a wider block saves 3% or more.
    /// An insert looks the item up, then sets each of its bits with one
    /// atomic OR if one was missing; a lookup reads the words its bits fall
    /// in, stopping at the first clear bit. Two threads racing to insert the
    /// same absent item may both be told it was new.
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Layout, Sizing};
    ///
    /// let least_memory: BloomFilter<str> = BloomFilter::builder(1_000_000, 0.001)
    ///     .layout(Layout::Compact)
    ///     .sizing(Sizing::Exact)
    ///     .build()?;
    /// assert!(least_memory.memory_bytes() * 8 < 16 * 1_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    Compact,
}

/// How the number of blocks is rounded.
///
/// | sizing | blocks | block of an item | memory over what the rate needs |
/// |---|---|---|---|
/// | [`Exact`](Sizing::Exact) (default) | any number | high half of hash × blocks (a multiply) | under one block |
/// | [`PowerOfTwo`](Sizing::PowerOfTwo) | a power of two | low bits of the hash (a mask) | 0 to 100% |
///
/// Either way [`capacity`](crate::BloomFilter::capacity) reports what the
/// filter holds at its rate, and neither ever divides. `Exact` costs one
/// multiplication per operation; `PowerOfTwo` may hold up to twice the
/// items asked for, in up to twice the memory.
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, Sizing};
///
/// let exact: BloomFilter<u64> = BloomFilter::new(1_000_000, 0.01)?;
/// let rounded: BloomFilter<u64> =
///     BloomFilter::builder(1_000_000, 0.01).sizing(Sizing::PowerOfTwo).build()?;
/// assert_eq!(exact.sizing(), Sizing::Exact);
/// assert!(exact.memory_bytes() < rounded.memory_bytes());
/// assert!(exact.capacity() >= 1_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Sizing {
    /// A power of two of blocks; an item's block is its hash masked.
    PowerOfTwo,
    /// As many blocks as the capacity and rate need; an item's block is the
    /// high half of the 128-bit product of its hash and the block count.
    #[default]
    Exact,
}

/// Maps a hash to the first line of its block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockIndex {
    /// `PowerOfTwo`: blocks - 1; `Exact`: blocks.
    blocks_or_mask: usize,
    exact: bool,
    /// log2 of the lines in a block.
    line_shift: u32,
}

impl BlockIndex {
    pub(crate) fn new(geometry: &Geometry) -> Self {
        let blocks = geometry.scheme_blocks();
        let exact = geometry.sizing == Sizing::Exact;
        BlockIndex {
            blocks_or_mask: if exact { blocks } else { blocks - 1 },
            exact,
            line_shift: geometry.scheme.lines_per_block().trailing_zeros(),
        }
    }

    /// The index of `blocks` blocks of `lines_per_block` lines each, sized
    /// as `sizing` says: for arrays that are not one `Geometry`'s (the
    /// windowed filter's generations).
    pub(crate) fn of(blocks: usize, sizing: Sizing, lines_per_block: usize) -> Self {
        let exact = sizing == Sizing::Exact;
        BlockIndex {
            blocks_or_mask: if exact { blocks } else { blocks - 1 },
            exact,
            line_shift: lines_per_block.trailing_zeros(),
        }
    }

    /// The first line of the block of `hash`.
    #[inline(always)]
    pub(crate) fn line(self, hash: u64) -> usize {
        let block = if self.exact {
            ((u128::from(hash) * self.blocks_or_mask as u128) >> 64) as usize
        } else {
            hash as usize & self.blocks_or_mask
        };
        block << self.line_shift
    }
}

/// The two words (and their masks) of an item under [`Layout::CacheLine`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct LineProbe {
    pub(crate) block_index: usize,
    /// Word 0..4 of the block, and its mask.
    pub(crate) low_word: usize,
    pub(crate) low_mask: u64,
    /// Word 4..8 of the block, and its mask.
    pub(crate) high_word: usize,
    pub(crate) high_mask: u64,
}

impl LineProbe {
    /// `bits_per_word` bits in each of the two words.
    #[inline(always)]
    pub(crate) fn new(hash: u64, index: BlockIndex, bits_per_word: u32) -> Self {
        let (low, high) = position_words(hash);
        let (low_mask, high_mask) = bit_mask_pair(low, high, bits_per_word);
        LineProbe {
            block_index: index.line(hash),
            low_word: (low & 3) as usize,
            low_mask,
            high_word: 4 + (high & 3) as usize,
            high_mask,
        }
    }
}

/// The one word (and its mask) of an item under [`Layout::Word`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct WordProbe {
    pub(crate) block_index: usize,
    pub(crate) word: usize,
    pub(crate) mask: u64,
}

impl WordProbe {
    /// `bits_per_word` bits in the word: the first ten from the first
    /// material word, the rest from the second.
    #[inline(always)]
    pub(crate) fn new(hash: u64, index: BlockIndex, bits_per_word: u32) -> Self {
        let (first, second) = position_words(hash);
        WordProbe {
            block_index: index.line(hash),
            word: (first & 7) as usize,
            mask: bit_mask(first, second, bits_per_word),
        }
    }
}

/// The bits of an item under [`Layout::Compact`]: `bits` positions in its
/// block of `WORDS / 8` lines (8 or 16 words), taken one at a time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompactProbe<const WORDS: usize> {
    pub(crate) first_line: usize,
    first: u64,
    second: u64,
    bits: u32,
}

impl<const WORDS: usize> CompactProbe<WORDS> {
    /// Bits of material per position: log2 of the block's bits.
    const POSITION_BITS: u32 = (WORDS * 64).trailing_zeros();

    /// Positions cut from one 64-bit word of material.
    const POSITIONS_PER_WORD: u32 = 64 / Self::POSITION_BITS;

    #[inline(always)]
    pub(crate) fn new(hash: u64, index: BlockIndex, bits: u32) -> Self {
        debug_assert!(WORDS == WORDS_PER_BLOCK || WORDS == 2 * WORDS_PER_BLOCK);
        let (first, second) = position_words(hash);
        CompactProbe {
            first_line: index.line(hash),
            first,
            second,
            bits,
        }
    }

    /// Calls `visit(word, mask)` for each of the item's bits in order (the
    /// word of the block, `0..WORDS`, and the bit's mask), each a field of
    /// `POSITION_BITS` bits of the material derived from the hash (a new
    /// material word every `POSITIONS_PER_WORD`); stops, returning false,
    /// at the first `visit` that returns false.
    #[inline(always)]
    pub(crate) fn all_bits(&self, mut visit: impl FnMut(usize, u64) -> bool) -> bool {
        let (mut material, mut next) = (self.first, self.second);
        let mut left = Self::POSITIONS_PER_WORD;
        for _ in 0..self.bits {
            if left == 0 {
                material = next;
                next = more_material(next);
                left = Self::POSITIONS_PER_WORD;
            }
            let position = (material as usize) & (WORDS * 64 - 1);
            if !visit(position >> 6, 1u64 << (position & 63)) {
                return false;
            }
            material >>= Self::POSITION_BITS;
            left -= 1;
        }
        true
    }
}
