//! Where an item's bits live inside its 64-byte block.

use crate::hash::{bit_mask, bit_mask_pair, position_words};

/// How an item's `k` bits are placed inside its 64-byte block.
///
/// Both layouts keep all of an item's bits in one cache line, so an insert or
/// a lookup touches one line of memory. They differ in how many words of it:
///
/// | layout | `fetch_or`s per new item | racing inserts of one absent item | bits per item at 1% | at 0.1% | at 0.01% |
/// |---|---|---|---|---|---|
/// | [`CacheLine`](Layout::CacheLine) (default) | up to 2 | one or more get `true` | 10.3 | 17.0 | 26.0 |
/// | [`Word`](Layout::Word) | 1 | exactly one gets `true` | 12.1 | 24.0 | 45.5 |
///
/// (A textbook Bloom filter needs 9.6, 14.4 and 19.2; see
/// [`BloomFilter::bits_per_item`](crate::BloomFilter::bits_per_item).)
///
/// `Word` packs all `k` bits into one `AtomicU64`, so an insert is a single
/// atomic test-and-set and is linearizable; it needs more memory for the same
/// rate, because 64 bits are a small neighbourhood. Use it where a duplicate
/// must never be reported new twice (a crawler's frontier); use `CacheLine`
/// elsewhere.
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
    /// one of the last four. An insert is at most two `fetch_or`s, a lookup
    /// two loads from one cache line. Two threads racing to insert the same
    /// absent item may both be told it was new.
    #[default]
    CacheLine,
    /// All `k` bits in one 64-bit word. An insert is one `fetch_or`, and of
    /// several threads racing to insert the same absent item exactly one gets
    /// `true`.
    Word,
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
    pub(crate) fn new(hash: u64, block_mask: usize, bits_per_word: u32) -> Self {
        let (low, high) = position_words(hash);
        let (low_mask, high_mask) = bit_mask_pair(low, high, bits_per_word);
        LineProbe {
            block_index: hash as usize & block_mask,
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
    pub(crate) fn new(hash: u64, block_mask: usize, bits_per_word: u32) -> Self {
        let (first, second) = position_words(hash);
        WordProbe {
            block_index: hash as usize & block_mask,
            word: (first & 7) as usize,
            mask: bit_mask(first, second, bits_per_word),
        }
    }
}
