//! The atomic bit array: 64-byte blocks of eight `AtomicU64`s. It keeps no
//! count: an insert writes only the words it sets bits in, and the number
//! of set bits is a popcount over the array, taken when asked for.
//!
//! The insert and lookup protocols, and why `Relaxed` is enough for them,
//! are in `src/PROTOCOLS.md`.

use crate::block::{Blocks, Line, BLOCK_BYTES, WORDS_PER_BLOCK};
use crate::layout::{CompactProbe, LineProbe, WordProbe};
use crate::sizing::Scheme;
use crate::sync::{AtomicU64, Ordering};

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
pub(crate) type BitBlock = Line<AtomicU64, WORDS_PER_BLOCK>;

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

/// The bit array: [`Blocks`] of bits, which makes, sizes, clears, copies,
/// compares, saves and loads it; the bits' protocols are here.
pub(crate) type BitArray = Blocks<BitBlock>;

impl BitArray {
    /// Word `word` of line `block_index`: for the windowed filter, which
    /// places generations' bits itself (`src/windowed/probe.rs`).
    #[inline(always)]
    pub(crate) fn word(&self, block_index: usize, word: usize) -> &AtomicU64 {
        &self.get(block_index).0[word]
    }

    /// The words of line `block_index` (the windowed filter's word shape).
    #[inline(always)]
    pub(crate) fn line(&self, block_index: usize) -> &[AtomicU64; WORDS_PER_BLOCK] {
        &self.get(block_index).0
    }

    /// The words of lines `first` and `first + 1`, one bounds check for
    /// both (the windowed filter's cache-line shape).
    #[inline(always)]
    pub(crate) fn line_pair(
        &self,
        first: usize,
    ) -> (&[AtomicU64; WORDS_PER_BLOCK], &[AtomicU64; WORDS_PER_BLOCK]) {
        let (low, high) = self.pair(first);
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
        let block = &self.get(probe.block_index).0;
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
        let block = &self.get(probe.block_index).0;
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
        self.iter()
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
        let blocks = self.iter().as_slice();
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
        self.iter()
            .flat_map(|block| &block.0)
            // Relaxed: as in `set_bits`.
            .any(|word| word.load(Ordering::Relaxed) != 0)
    }

    /// ORs every word of `other` (same size) into `self`.
    pub(crate) fn union(&self, other: &BitArray) {
        for (block_index, block) in other.iter().enumerate() {
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
}
