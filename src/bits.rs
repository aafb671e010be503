//! The atomic bit array: 64-byte blocks of eight `AtomicU64`s. It keeps no
//! count: an insert writes only the words it sets bits in, and the number
//! of set bits is a popcount over the array, taken when asked for.
//!
//! The insert and lookup protocols, and why `Relaxed` is enough for them,
//! are in `src/PROTOCOLS.md`.

use std::io::{Read, Write};

use crate::block::{Block, Blocks, BLOCK_BYTES, WORDS_PER_BLOCK};
use crate::layout::{CompactProbe, LineProbe, WordProbe};
use crate::sizing::Scheme;
use crate::sync::{AtomicU64, Ordering};
use crate::wire::{Decoder, Encoder};
use crate::Error;

/// Bits in one line.
const BLOCK_BITS: usize = BLOCK_BYTES * 8;

/// What [`BitArray::rate_of_bits`] found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RateOfBits {
    /// The false-positive rate of the bits as they are.
    pub(crate) rate: f64,
    /// Set bits in all.
    pub(crate) set_bits: usize,
    /// Set bits of the fullest slot group (a word, or a compact block).
    pub(crate) fullest_group: u32,
}

/// One cache line of bits: eight words.
#[repr(C, align(64))]
pub(crate) struct BitBlock([AtomicU64; WORDS_PER_BLOCK]);

// Safety: eight `AtomicU64`s, for which zero bytes are the value 0, an
// empty block.
unsafe impl Block for BitBlock {
    #[cfg(atomic_bloom_loom)]
    fn zero() -> Self {
        BitBlock(std::array::from_fn(|_| AtomicU64::new(0)))
    }

    fn clear(&self) {
        for word in &self.0 {
            // Relaxed: the bits publish nothing; an insert that
            // happens-after the clear sees the zero (coherence) and sets
            // its bits after it, and one racing it may survive or not
            // (`src/PROTOCOLS.md`, "Clear").
            word.store(0, Ordering::Relaxed);
        }
    }

    fn copy_from(&mut self, source: &Self) {
        for (word, from) in self.0.iter().zip(&source.0) {
            // Relaxed (both): a snapshot of bits that only go 0 -> 1, into
            // a block `&mut self` holds alone; nothing hangs off them. An
            // all-zero word is left unwritten, so its page may stay the
            // kernel's zero page.
            let bits = from.load(Ordering::Relaxed);
            if bits != 0 {
                word.store(bits, Ordering::Relaxed);
            }
        }
    }

    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> usize {
        let mut ones = 0;
        let mut bytes = [0u8; BLOCK_BYTES];
        for (word, le) in self.0.iter().zip(bytes.chunks_exact_mut(8)) {
            // Relaxed: a snapshot of bits that only go 0 -> 1; an insert
            // that happened-before the save began is seen.
            let bits = word.load(Ordering::Relaxed);
            ones += bits.count_ones() as usize;
            le.copy_from_slice(&bits.to_le_bytes());
        }
        // One append per block: a dump's pages are made block by block.
        out.extend_from_slice(&bytes);
        ones
    }

    fn decode(bytes: &[u8]) -> (Self, usize) {
        let block = BitBlock(std::array::from_fn(|word| {
            let mut le = [0u8; 8];
            le.copy_from_slice(&bytes[word * 8..word * 8 + 8]);
            AtomicU64::new(u64::from_le_bytes(le))
        }));
        let ones = bytes.iter().map(|byte| byte.count_ones() as usize).sum();
        (block, ones)
    }
}

/// What an insert did: whether it turned any bit on (the item was new;
/// under [`Layout::CacheLine`](crate::Layout) and
/// [`Layout::Compact`](crate::Layout), bits its loads found missing and it
/// set), and, when asked for, how many.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TurnedOn {
    pub(crate) new: bool,
    /// The bits turned on, counted only when the insert was asked to
    /// (a popcount is not free on every x86-64); 0 otherwise.
    pub(crate) bits: u32,
}

impl TurnedOn {
    pub(crate) const NONE: TurnedOn = TurnedOn {
        new: false,
        bits: 0,
    };

    /// From the masks of bits found missing, counted if `count`.
    #[inline(always)]
    fn from_missing(low: u64, high: u64, count: bool) -> Self {
        TurnedOn {
            new: low | high != 0,
            bits: if count {
                low.count_ones() + high.count_ones()
            } else {
                0
            },
        }
    }
}

pub(crate) struct BitArray {
    blocks: Blocks<BitBlock>,
}

impl BitArray {
    /// An all-zero array of `blocks` blocks (a power of two).
    pub(crate) fn new(blocks: usize) -> Result<Self, Error> {
        Ok(BitArray {
            blocks: Blocks::new(blocks)?,
        })
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Bytes allocated: the blocks.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.blocks.memory_bytes()
    }

    /// Bytes an array of `blocks` blocks takes, before allocating it.
    pub(crate) fn memory_bytes_for(blocks: usize) -> usize {
        Blocks::<BitBlock>::bytes_for(blocks)
    }

    /// Asks the CPU to start loading block `block_index` into cache.
    #[inline(always)]
    pub(crate) fn prefetch(&self, block_index: usize) {
        self.blocks.prefetch(block_index);
    }

    /// Word `word` of line `block_index`: for the windowed filter, which
    /// places generations' bits itself (`src/windowed/probe.rs`).
    #[inline(always)]
    pub(crate) fn word(&self, block_index: usize, word: usize) -> &AtomicU64 {
        &self.blocks.get(block_index).0[word]
    }

    /// The words of line `block_index` (the windowed filter's word shape).
    #[inline(always)]
    pub(crate) fn line(&self, block_index: usize) -> &[AtomicU64; WORDS_PER_BLOCK] {
        &self.blocks.get(block_index).0
    }

    /// The words of lines `first` and `first + 1`, one bounds check for
    /// both (the windowed filter's cache-line shape).
    #[inline(always)]
    pub(crate) fn line_pair(
        &self,
        first: usize,
    ) -> (&[AtomicU64; WORDS_PER_BLOCK], &[AtomicU64; WORDS_PER_BLOCK]) {
        let (low, high) = self.blocks.pair(first);
        (&low.0, &high.0)
    }

    /// Sets `mask` in a word; returns the word's previous value.
    #[inline(always)]
    fn set(&self, block_index: usize, word: usize, mask: u64) -> u64 {
        // Relaxed: bits only go 0 -> 1 and publish nothing else; the RMW still
        // reads the latest value, so exactly one caller sees each bit turn on.
        self.word(block_index, word)
            .fetch_or(mask, Ordering::Relaxed)
    }

    /// ORs `mask` into a word, not asking what was there (on x86 a single
    /// `lock or`, where a `fetch_or` whose result is used is a
    /// compare-and-swap loop).
    #[inline(always)]
    fn or(&self, block_index: usize, word: usize, mask: u64) {
        // Relaxed: bits only go 0 -> 1 and publish nothing else.
        self.word(block_index, word)
            .fetch_or(mask, Ordering::Relaxed);
    }

    /// Test-before-set insert of a [`LineProbe`]: loads both words and ORs
    /// the mask only into a word that lacks bits. Returns the bits the loads
    /// found missing: the item was new if any was (two racing inserts of one
    /// absent item may both find them missing, as the layout allows).
    /// Counts the bits if `count`.
    #[inline(always)]
    pub(crate) fn insert_line(&self, probe: &LineProbe, count: bool) -> TurnedOn {
        let block = &self.blocks.get(probe.block_index).0;
        // Relaxed: a stale 0 only costs a redundant OR and a racing "new"; a
        // 1 never reverts, and an insert that happened-before is seen.
        let low = block[probe.low_word].load(Ordering::Relaxed);
        // Relaxed: as above.
        let high = block[probe.high_word].load(Ordering::Relaxed);
        let (missing_low, missing_high) = (probe.low_mask & !low, probe.high_mask & !high);
        if missing_low != 0 {
            self.or(probe.block_index, probe.low_word, probe.low_mask);
        }
        if missing_high != 0 {
            self.or(probe.block_index, probe.high_word, probe.high_mask);
        }
        TurnedOn::from_missing(missing_low, missing_high, count)
    }

    #[inline(always)]
    pub(crate) fn contains_line(&self, probe: &LineProbe) -> bool {
        let block = &self.blocks.get(probe.block_index).0;
        // Relaxed: a bit set by an insert that happens-before this call is
        // visible (coherence); bits carry no other data to synchronize.
        let low = block[probe.low_word].load(Ordering::Relaxed);
        // Relaxed: as above.
        let high = block[probe.high_word].load(Ordering::Relaxed);
        (low & probe.low_mask == probe.low_mask) & (high & probe.high_mask == probe.high_mask)
    }

    /// Test-and-set of a [`WordProbe`]: one `fetch_or`, so of racing inserts
    /// of one absent item exactly one sees bits missing and turns them on.
    /// Returns what this call turned on (nothing: the item was in), the
    /// bits counted if `count`.
    #[inline(always)]
    pub(crate) fn insert_word(&self, probe: &WordProbe, count: bool) -> TurnedOn {
        // Relaxed: a 1 never reverts, so seeing all bits set is final; a stale
        // value only sends us to the fetch_or, which decides.
        let current = self
            .word(probe.block_index, probe.word)
            .load(Ordering::Relaxed);
        if current & probe.mask == probe.mask {
            return TurnedOn::NONE;
        }
        let previous = self.set(probe.block_index, probe.word, probe.mask);
        TurnedOn::from_missing(probe.mask & !previous, 0, count)
    }

    #[inline(always)]
    pub(crate) fn contains_word(&self, probe: &WordProbe) -> bool {
        // Relaxed: bits only go 0 -> 1 and publish nothing else.
        let current = self
            .word(probe.block_index, probe.word)
            .load(Ordering::Relaxed);
        current & probe.mask == probe.mask
    }

    /// Test-before-set insert of a [`CompactProbe`]: looks the item up
    /// first (a duplicate writes nothing), and if a bit is missing sets
    /// every bit with one atomic OR each. Returns whether the lookup found
    /// a bit missing (two racing inserts of one absent item may both find
    /// it, as the layout allows), the bits this call turned on counted if
    /// `count`.
    #[inline(always)]
    pub(crate) fn insert_compact<const WORDS: usize>(
        &self,
        probe: &CompactProbe<WORDS>,
        count: bool,
    ) -> TurnedOn {
        if self.contains_compact(probe) {
            return TurnedOn::NONE;
        }
        let mut turned_on = TurnedOn { new: true, bits: 0 };
        let line = probe.first_line;
        probe.all_bits(|word, mask| {
            let (line, word) = (line + word / WORDS_PER_BLOCK, word % WORDS_PER_BLOCK);
            if count {
                let previous = self.set(line, word, mask);
                turned_on.bits += u32::from(previous & mask == 0);
            } else {
                self.or(line, word, mask);
            }
            true
        });
        turned_on
    }

    #[inline(always)]
    pub(crate) fn contains_compact<const WORDS: usize>(&self, probe: &CompactProbe<WORDS>) -> bool {
        let line = probe.first_line;
        probe.all_bits(|word, mask| {
            let word = self.word(line + word / WORDS_PER_BLOCK, word % WORDS_PER_BLOCK);
            // Relaxed: a bit set by an insert that happens-before this call is
            // visible (coherence); bits carry no other data to synchronize.
            word.load(Ordering::Relaxed) & mask != 0
        })
    }

    /// The number of set bits: a popcount of every word, O(size) (concurrent
    /// inserts may or may not be counted).
    pub(crate) fn set_bits(&self) -> usize {
        self.blocks
            .iter()
            .flat_map(|block| &block.0)
            // Relaxed: a snapshot of bits that only go 0 -> 1; an insert that
            // happened-before this call is seen.
            .map(|word| word.load(Ordering::Relaxed).count_ones() as usize)
            .sum()
    }

    /// The false-positive rate of the bits as they are: the chance that an
    /// item never inserted (its block and positions uniform) finds all its
    /// bits set, under `scheme` with `bits_per_word`; with the set bits, and
    /// those of the fullest slot group. One popcount of every word, O(size).
    pub(crate) fn rate_of_bits(&self, scheme: Scheme, bits_per_word: u32) -> RateOfBits {
        let hit =
            |set: u32, slots: u32| (f64::from(set) / f64::from(slots)).powi(bits_per_word as i32);
        let (mut set_bits, mut fullest_group) = (0usize, 0u32);
        let mut group = |set: u32| {
            set_bits += set as usize;
            fullest_group = fullest_group.max(set);
            set
        };
        let count = |block: &BitBlock| {
            // Relaxed: a snapshot of bits that only go 0 -> 1.
            block
                .0
                .each_ref()
                .map(|word| word.load(Ordering::Relaxed).count_ones())
        };
        let blocks = self.blocks.iter().as_slice();
        let total: f64 = match scheme {
            Scheme::Word | Scheme::Counters => blocks
                .iter()
                .flat_map(count)
                .map(|set| hit(group(set), 64))
                .sum(),
            Scheme::CacheLine => blocks
                .iter()
                .map(|block| {
                    let set = count(block).map(&mut group);
                    let low: f64 = set[..4].iter().map(|&set| hit(set, 64)).sum();
                    let high: f64 = set[4..].iter().map(|&set| hit(set, 64)).sum();
                    low / 4.0 * high / 4.0
                })
                .sum(),
            Scheme::Compact { lines } => {
                let lines = lines as usize;
                blocks
                    .chunks(lines)
                    .map(|block| {
                        let set = block.iter().map(|line| count(line).iter().sum::<u32>());
                        hit(group(set.sum()), (lines * BLOCK_BITS) as u32)
                    })
                    .sum::<f64>()
                    * lines as f64
            }
        };
        let units = match scheme {
            Scheme::Word | Scheme::Counters => blocks.len() * WORDS_PER_BLOCK,
            Scheme::CacheLine | Scheme::Compact { .. } => blocks.len(),
        };
        RateOfBits {
            rate: total / units as f64,
            set_bits,
            fullest_group,
        }
    }

    /// Whether any bit is set: a scan that stops at the first set word.
    pub(crate) fn any_set(&self) -> bool {
        self.blocks
            .iter()
            .flat_map(|block| &block.0)
            // Relaxed: as in `set_bits`.
            .any(|word| word.load(Ordering::Relaxed) != 0)
    }

    /// ORs every word of `other` (same size) into `self`.
    pub(crate) fn union(&self, other: &BitArray) {
        for (block_index, block) in other.blocks.iter().enumerate() {
            for (word, bits) in block.0.iter().enumerate() {
                // Relaxed: bits only go 0 -> 1; a concurrent insert into
                // `other` may or may not be carried over.
                let wanted = bits.load(Ordering::Relaxed);
                // Relaxed: as above; skip the fetch_or when nothing is missing.
                let have = self.word(block_index, word).load(Ordering::Relaxed);
                if wanted & !have != 0 {
                    self.or(block_index, word, wanted);
                }
            }
        }
    }

    /// A copy of the current bits (concurrent inserts may or may not be in
    /// it).
    pub(crate) fn snapshot(&self) -> Self {
        BitArray {
            blocks: self.blocks.snapshot(),
        }
    }

    /// A copy of the current bits (concurrent inserts may or may not be in
    /// it), or the allocator's refusal.
    pub(crate) fn try_snapshot(&self) -> Result<Self, Error> {
        Ok(BitArray {
            blocks: self.blocks.try_snapshot()?,
        })
    }

    /// Writes every word as pages, each with its checksum (format
    /// version 4).
    pub(crate) fn write_pages<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        self.blocks.write_pages(out)
    }

    /// Pages of [`write_pages`](Self::write_pages).
    pub(crate) fn page_count(&self) -> usize {
        self.blocks.page_count()
    }

    /// Appends page `page_index`'s bytes to `out`.
    pub(crate) fn encode_page(&self, page_index: usize, out: &mut Vec<u8>) {
        self.blocks.encode_page(page_index, out);
    }

    /// Reads an array of `blocks` blocks that
    /// [`write_pages`](Self::write_pages) wrote.
    pub(crate) fn read_pages<R: Read>(
        blocks: usize,
        input: &mut Decoder<R>,
    ) -> Result<Self, Error> {
        Ok(BitArray {
            blocks: Blocks::read_pages(blocks, input)?,
        })
    }

    /// Reads an array of `blocks` blocks (a power of two) as
    /// [`write_words`](Self::write_words) wrote it; allocates only as the
    /// input delivers. Returns the array and its number of set bits.
    pub(crate) fn read_words<R: Read>(
        blocks: usize,
        input: &mut Decoder<R>,
    ) -> Result<(Self, u64), Error> {
        let (blocks, total) = Blocks::read(blocks, input)?;
        Ok((BitArray { blocks }, total))
    }

    /// Sets every bit to 0, while others may insert and look up.
    pub(crate) fn clear(&self) {
        self.blocks.clear();
    }

    /// Whether `other` holds the same bits, word by word (each word of
    /// each array read once; a snapshot while others insert).
    pub(crate) fn same_bits(&self, other: &BitArray) -> bool {
        self.num_blocks() == other.num_blocks()
            && self
                .blocks
                .iter()
                .zip(other.blocks.iter())
                .flat_map(|(ours, theirs)| ours.0.iter().zip(&theirs.0))
                // Relaxed (both): a snapshot of bits that publish nothing.
                .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed))
    }
}
