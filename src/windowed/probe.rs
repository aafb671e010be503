//! Where an item's bits lie in each generation slot of a windowed filter
//! (the shapes are in `src/sizing/window.rs`).
//!
//! Every generation uses the same positions for an item (one hash gives
//! them all), so a probe is computed once and tested against each slot.

use crate::bits::BitArray;
use crate::block::WORDS_PER_BLOCK;
use crate::hash::{bit_mask, bit_mask_pair, position_words};
use crate::layout::{BlockIndex, CompactProbe};
use crate::sizing::WindowGeometry;
use crate::sync::{AtomicU64, Ordering};

/// The probe of each shape; the cache-line and word shapes by their
/// generations (2, 4 or 8), so that each one's loop over slots is
/// unrolled and branch-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Pair2,
    Pair4,
    Pair8,
    Word2,
    Word4,
    Word8,
    Compact,
}

/// Evaluates `$body` with `$probe` bound to `$hash`'s probe under
/// `$placement`'s shape: one copy of `$body` per [`Kind`], each compiled
/// for its probe type.
macro_rules! with_probe {
    ($placement:expr, $hash:expr, |$probe:ident| $body:expr) => {{
        let (placement, hash) = ($placement, $hash);
        match placement.kind() {
            $crate::windowed::probe::Kind::Pair2 => {
                let $probe = placement.shared::<2>(hash);
                $body
            }
            $crate::windowed::probe::Kind::Pair4 => {
                let $probe = placement.shared::<4>(hash);
                $body
            }
            $crate::windowed::probe::Kind::Pair8 => {
                let $probe = placement.shared::<8>(hash);
                $body
            }
            $crate::windowed::probe::Kind::Word2 => {
                let $probe = placement.word::<2>(hash);
                $body
            }
            $crate::windowed::probe::Kind::Word4 => {
                let $probe = placement.word::<4>(hash);
                $body
            }
            $crate::windowed::probe::Kind::Word8 => {
                let $probe = placement.word::<8>(hash);
                $body
            }
            $crate::windowed::probe::Kind::Compact => {
                let $probe = placement.separate(hash);
                $body
            }
        }
    }};
}
pub(crate) use with_probe;

/// What a windowed filter asks of a probe: which slots hold the item, and
/// setting it in one slot.
pub(crate) trait SlotProbe: Copy {
    /// Whether `set`'s answer is one read-modify-write's: of several racing
    /// inserts of an absent item into a slot, exactly one is told it set a
    /// bit.
    const EXCLUSIVE: bool;

    /// The slots, among those in `live` (bit `i` for slot `i`), whose words
    /// hold every bit of the item.
    fn hits(&self, bits: &BitArray, live: u32) -> u32;

    /// Whether any slot holds every bit of the item: `hits` with every
    /// slot live (`all_slots`; a caller with fewer live slots asks
    /// `hits`), reduced to one answer.
    #[inline(always)]
    fn any(&self, bits: &BitArray, all_slots: u32) -> bool {
        self.hits(bits, all_slots) != 0
    }

    /// Sets the item's bits in `slot`, test before set; returns whether
    /// this call counts the item as new to the slot: of the words its
    /// loads found lacking bits, the last one's read-modify-write turned a
    /// bit on. Its words are loaded in reverse order (`Acquire`) and set in
    /// forward order (`Release`), so of racing calls for one item at most
    /// one counts it, and one does unless other items' bits complete it
    /// (`src/PROTOCOLS.md`, "Counting once").
    fn set(&self, bits: &BitArray, slot: u32) -> bool;

    /// Starts loading the lines the item's bits lie in, in `slots`.
    fn prefetch(&self, bits: &BitArray, slots: u32);
}

/// Sets `mask` in `word`, whose load read `loaded` (lacking some of
/// `mask`); true if this call turned a bit of `mask` on. A compare-and-swap
/// from the loaded value: one locked instruction when no one raced it.
#[inline(always)]
fn turn_on(word: &AtomicU64, loaded: u64, mask: u64) -> bool {
    let mut current = loaded;
    loop {
        // Release: publishes the item's earlier words and the loads before
        // them to an insert whose Acquire load reads this word (PROTOCOLS.md,
        // "Counting once"); Relaxed on failure: the value is only retried.
        match word.compare_exchange_weak(
            current,
            current | mask,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => return true,
            Err(actual) if actual & mask == mask => return false,
            Err(actual) => current = actual,
        }
    }
}

/// The layout-independent part of a probe: the block of an item.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placement {
    index: BlockIndex,
    generations: u32,
    bits_per_word: u32,
    /// Cache-line shape: words per half of a slot's segment; word shape:
    /// words of a slot's segment; compact: the lines of one generation's
    /// array.
    stride: usize,
    /// The probe type, chosen once.
    kind: Kind,
}

impl Placement {
    pub(crate) fn new(geometry: &WindowGeometry) -> Self {
        match geometry.layout {
            crate::Layout::Compact => Placement {
                index: BlockIndex::of(geometry.blocks, geometry.sizing, 1),
                generations: geometry.generations,
                bits_per_word: geometry.bits_per_word,
                stride: geometry.blocks,
                kind: Kind::Compact,
            },
            _ => Placement {
                index: BlockIndex::of(
                    geometry.blocks,
                    geometry.sizing,
                    crate::sizing::SHARED_BLOCK_LINES,
                ),
                generations: geometry.generations,
                bits_per_word: geometry.bits_per_word,
                stride: match geometry.layout {
                    crate::Layout::Word => 2 * geometry.words_per_half() as usize,
                    _ => geometry.words_per_half() as usize,
                },
                kind: match (geometry.layout, geometry.generations) {
                    (crate::Layout::Word, 2) => Kind::Word2,
                    (crate::Layout::Word, 4) => Kind::Word4,
                    (crate::Layout::Word, _) => Kind::Word8,
                    (_, 2) => Kind::Pair2,
                    (_, 4) => Kind::Pair4,
                    (_, _) => Kind::Pair8,
                },
            },
        }
    }

    /// The cache-line probe of `hash`, for a filter of `G` generations.
    #[inline(always)]
    pub(crate) fn shared<const G: usize>(&self, hash: u64) -> SharedProbe<G> {
        debug_assert_eq!(G, self.generations as usize);
        let (low, high) = position_words(hash);
        let (low_mask, high_mask) = bit_mask_pair(low, high, self.bits_per_word);
        let half = self.stride as u64;
        SharedProbe {
            line: self.index.line(hash),
            low_word: (low & (half - 1)) as usize * G,
            low_mask,
            high_word: (high & (half - 1)) as usize * G,
            high_mask,
        }
    }

    /// The word probe of `hash`, for a filter of `G` generations.
    #[inline(always)]
    pub(crate) fn word<const G: usize>(&self, hash: u64) -> WordProbe<G> {
        debug_assert_eq!(G, self.generations as usize);
        let (first, second) = position_words(hash);
        let index = (first & (self.stride as u64 - 1)) as usize * G;
        WordProbe {
            line: self.index.line(hash) + index / WORDS_PER_BLOCK,
            word: index % WORDS_PER_BLOCK,
            mask: bit_mask(first, second, self.bits_per_word),
        }
    }

    /// The compact probe of `hash`.
    #[inline(always)]
    pub(crate) fn separate(&self, hash: u64) -> SeparateProbe {
        let probe = CompactProbe::<WORDS_PER_BLOCK>::new(hash, self.index, self.bits_per_word);
        let mut masks = [0u64; WORDS_PER_BLOCK];
        probe.all_bits(|word, mask| {
            masks[word] |= mask;
            true
        });
        SeparateProbe {
            block: probe.first_line,
            stride: self.stride,
            masks,
        }
    }

    /// Blocks cleared per chunk of a rotation.
    pub(crate) fn blocks_per_chunk(&self) -> usize {
        if self.kind != Kind::Compact {
            SHARED_CHUNK_BLOCKS
        } else {
            SEPARATE_CHUNK_LINES
        }
    }

    /// Which probe the shape takes.
    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Clears slot `slot`'s words in blocks `blocks` (a chunk of a
    /// rotation): the caller's rotation has made the slot unused. Only
    /// words that hold bits are written: a page no bit reached is read,
    /// never written (an untouched one stays the kernel's zero page).
    /// True if some word held bits.
    pub(crate) fn clear(&self, bits: &BitArray, slot: u32, blocks: std::ops::Range<usize>) -> bool {
        let mut swept = false;
        if self.kind != Kind::Compact {
            let g = self.generations as usize;
            for block in blocks {
                for line in [2 * block, 2 * block + 1] {
                    for word in (slot as usize..WORDS_PER_BLOCK).step_by(g) {
                        swept |= clear_word(bits.word(line, word));
                    }
                }
            }
        } else {
            let first = slot as usize * self.stride;
            for line in blocks {
                for word in bits.line(first + line) {
                    swept |= clear_word(word);
                }
            }
        }
        swept
    }
}

/// Stores 0 in `word` if it holds bits; true if it did.
#[inline(always)]
fn clear_word(word: &AtomicU64) -> bool {
    // Relaxed (both): the rotation publishes its clears through `done` and
    // the epoch (src/windowed/ring.rs); a word that reads 0 holds no bit
    // that happens-before the rotation's read of the marks (others are
    // cleared on the slot's next turn: PROTOCOLS.md).
    if word.load(Ordering::Relaxed) != 0 {
        word.store(0, Ordering::Relaxed);
        return true;
    }
    false
}

/// Two-line blocks cleared per chunk (16 KiB).
#[cfg(not(atomic_bloom_loom))]
const SHARED_CHUNK_BLOCKS: usize = 128;

/// Lines of a compact generation cleared per chunk (16 KiB).
#[cfg(not(atomic_bloom_loom))]
const SEPARATE_CHUNK_LINES: usize = 256;

/// Under loom, a chunk per block: a model of a few blocks has several
/// chunks, cleared by different threads.
#[cfg(atomic_bloom_loom)]
const SHARED_CHUNK_BLOCKS: usize = 1;
#[cfg(atomic_bloom_loom)]
const SEPARATE_CHUNK_LINES: usize = 1;

/// An item under the cache-line shape of `G` generations: `h` bits in one
/// word of its block's first line and `h` in one of its second, at the
/// same positions in every slot. Slot `s` owns words `s, s + G, ...` of
/// each line, so the item's words of every slot are `G` adjacent words of
/// each line (`low_word .. low_word + G`, `low_word` a multiple of `G`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SharedProbe<const G: usize> {
    line: usize,
    low_word: usize,
    low_mask: u64,
    high_word: usize,
    high_mask: u64,
}

impl<const G: usize> SharedProbe<G> {
    /// Slot by slot, the item's two words ORed with the other bits: all
    /// ones where the slot holds the item (one operation a word, where
    /// testing `word & mask == mask` takes two).
    #[inline(always)]
    fn slots(&self, bits: &BitArray) -> [u64; G] {
        let (first, second) = bits.line_pair(self.line);
        let (low_rest, high_rest) = (!self.low_mask, !self.high_mask);
        std::array::from_fn(|slot| {
            // Relaxed: bits set by an insert that happens-before this call
            // are seen (coherence); the epoch, read with Acquire, orders the
            // rest (src/windowed/ring.rs).
            let low = first[(self.low_word + slot) % WORDS_PER_BLOCK].load(Ordering::Relaxed);
            // Relaxed: as above.
            let high = second[(self.high_word + slot) % WORDS_PER_BLOCK].load(Ordering::Relaxed);
            (low | low_rest) & (high | high_rest)
        })
    }
}

impl<const G: usize> SlotProbe for SharedProbe<G> {
    const EXCLUSIVE: bool = false;

    #[inline(always)]
    fn hits(&self, bits: &BitArray, live: u32) -> u32 {
        // Every slot, live or not (a word of the slot being cleared is read
        // and its answer masked off): a fixed, unrolled loop.
        let hits = self
            .slots(bits)
            .iter()
            .enumerate()
            .fold(0, |hits, (slot, &both)| {
                hits | u32::from(both == u64::MAX) << slot
            });
        hits & live
    }

    #[inline(always)]
    fn any(&self, bits: &BitArray, all_slots: u32) -> bool {
        // Every slot is read: a caller with fewer live takes `hits`.
        debug_assert_eq!(all_slots, (1 << G) - 1);
        // Some slot's words are all ones: the largest is.
        self.slots(bits).into_iter().fold(0, u64::max) == u64::MAX
    }

    #[inline(always)]
    fn set(&self, bits: &BitArray, slot: u32) -> bool {
        let (first, second) = bits.line_pair(self.line);
        let s = slot as usize;
        let (low, high) = (
            &first[(self.low_word + s) % WORDS_PER_BLOCK],
            &second[(self.high_word + s) % WORDS_PER_BLOCK],
        );
        // Acquire: the high word first; pairs with the Release below, so a
        // racing insert of the item that completed this word has its low
        // word's load and fetch_or ordered before our load of the low one.
        let high_now = high.load(Ordering::Acquire);
        // Relaxed: the first word's load pairs with nothing (no word comes
        // before it); a stale 0 only costs a redundant OR.
        let low_now = low.load(Ordering::Relaxed);
        if self.high_mask & !high_now != 0 {
            if self.low_mask & !low_now != 0 {
                // Relaxed: sequenced before the Release on the high word,
                // which publishes it; bits only go 0 -> 1 while the slot is
                // in use, and the epoch orders them against its clearing.
                low.fetch_or(self.low_mask, Ordering::Relaxed);
            }
            // The last word the loads found lacking bits decides the count.
            return turn_on(high, high_now, self.high_mask);
        }
        if self.low_mask & !low_now != 0 {
            return turn_on(low, low_now, self.low_mask);
        }
        false
    }

    #[inline(always)]
    fn prefetch(&self, bits: &BitArray, _slots: u32) {
        bits.prefetch(self.line);
        bits.prefetch(self.line + 1);
    }
}

/// An item under the compact shape: `k` bits anywhere in its 512-bit block,
/// gathered as one mask per word; slot `s`'s block is line
/// `s * blocks + block`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeparateProbe {
    block: usize,
    stride: usize,
    masks: [u64; WORDS_PER_BLOCK],
}

impl SlotProbe for SeparateProbe {
    const EXCLUSIVE: bool = false;

    #[inline(always)]
    fn hits(&self, bits: &BitArray, live: u32) -> u32 {
        let mut hits = 0;
        let mut slots = live;
        while slots != 0 {
            let slot = slots.trailing_zeros();
            slots &= slots - 1;
            let line = slot as usize * self.stride + self.block;
            let hit = self.masks.iter().enumerate().all(|(word, &mask)| {
                // Relaxed: as in `SharedProbe::slots`.
                mask == 0 || bits.word(line, word).load(Ordering::Relaxed) & mask == mask
            });
            hits |= u32::from(hit) << slot;
        }
        hits
    }

    #[inline(always)]
    fn set(&self, bits: &BitArray, slot: u32) -> bool {
        let line = slot as usize * self.stride + self.block;
        // Bit `w`: word `w` lacked some of the item's bits at its load.
        let mut lacking = 0u32;
        let mut loaded = [0u64; WORDS_PER_BLOCK];
        for word in (0..WORDS_PER_BLOCK).rev() {
            let mask = self.masks[word];
            if mask == 0 {
                continue;
            }
            // Acquire: last word first; pairs with the Release of a racing
            // insert's fetch_or, as in `SharedProbe::set`.
            let now = bits.word(line, word).load(Ordering::Acquire);
            loaded[word] = now;
            lacking |= u32::from(now & mask != mask) << word;
        }
        if lacking == 0 {
            return false;
        }
        let last = 31 - lacking.leading_zeros() as usize;
        let mut earlier = lacking & !(1 << last);
        while earlier != 0 {
            let word = earlier.trailing_zeros() as usize;
            earlier &= earlier - 1;
            // Release: publishes this word's bits (and the loads before it)
            // to an insert whose Acquire load reads a later word of ours.
            bits.word(line, word)
                .fetch_or(self.masks[word], Ordering::Release);
        }
        turn_on(bits.word(line, last), loaded[last], self.masks[last])
    }

    #[inline(always)]
    fn prefetch(&self, bits: &BitArray, slots: u32) {
        let mut slots = slots;
        while slots != 0 {
            let slot = slots.trailing_zeros() as usize;
            slots &= slots - 1;
            bits.prefetch(slot * self.stride + self.block);
        }
    }
}

/// An item under the word shape of `G` generations: `k` bits in one word
/// of its block (word `j G + s` of the block's 16 for slot `s`), so one
/// `fetch_or` sets them all and says whether any was missing. The item's
/// words of every slot are `G` adjacent words of one line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WordProbe<const G: usize> {
    /// The line of the item's words (`j G < 16`, and `s < G` keeps every
    /// slot's word in that line).
    line: usize,
    /// The item's word in slot 0: a multiple of `G`.
    word: usize,
    mask: u64,
}

impl<const G: usize> SlotProbe for WordProbe<G> {
    const EXCLUSIVE: bool = true;

    #[inline(always)]
    fn hits(&self, bits: &BitArray, live: u32) -> u32 {
        let line = bits.line(self.line);
        let mut hits = 0;
        // Every slot, as in `SharedProbe::hits`.
        for slot in 0..G {
            // Relaxed: as in `SharedProbe::slots`.
            let word = line[(self.word + slot) % WORDS_PER_BLOCK].load(Ordering::Relaxed);
            hits |= u32::from(word & self.mask == self.mask) << slot;
        }
        hits & live
    }

    #[inline(always)]
    fn any(&self, bits: &BitArray, all_slots: u32) -> bool {
        // Every slot is read: a caller with fewer live takes `hits`.
        debug_assert_eq!(all_slots, (1 << G) - 1);
        let (line, rest) = (bits.line(self.line), !self.mask);
        // Some slot's word ORed with the other bits is all ones: the
        // largest is.
        let largest = (0..G).fold(0, |largest, slot| {
            // Relaxed: as in `SharedProbe::slots`.
            let word = line[(self.word + slot) % WORDS_PER_BLOCK].load(Ordering::Relaxed);
            largest.max(word | rest)
        });
        largest == u64::MAX
    }

    #[inline(always)]
    fn set(&self, bits: &BitArray, slot: u32) -> bool {
        let word = &bits.line(self.line)[(self.word + slot as usize) % WORDS_PER_BLOCK];
        // Relaxed: a 1 never reverts while the slot is in use, so all bits
        // set is final; a stale value only sends us to the fetch_or.
        if word.load(Ordering::Relaxed) & self.mask == self.mask {
            return false;
        }
        // Relaxed: as in `SharedProbe::set`; the RMW reads the latest value,
        // so of racing inserts exactly one sees bits missing.
        word.fetch_or(self.mask, Ordering::Relaxed) & self.mask != self.mask
    }

    #[inline(always)]
    fn prefetch(&self, bits: &BitArray, _slots: u32) {
        bits.prefetch(self.line);
    }
}
