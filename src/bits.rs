//! The atomic bit array: 64-byte blocks of eight `AtomicU64`s, and the exact
//! count of set bits kept in cache-padded shards.
//!
//! The insert and lookup protocols, and why `Relaxed` is enough for them,
//! are in `src/PROTOCOLS.md`.

use std::io::{Read, Write};

use crate::layout::{LineProbe, WordProbe};
use crate::persist::{self, Decoder, Encoder};
use crate::shards::{self, ShardAdd, ShardedCount};
use crate::sizing::{BLOCK_BYTES, WORDS_PER_BLOCK};
use crate::sync::{AtomicU64, Ordering};
use crate::Error;

/// One cache line of bits.
#[repr(C, align(64))]
pub(crate) struct Block([AtomicU64; WORDS_PER_BLOCK]);

impl Block {
    fn new() -> Self {
        Block(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

pub(crate) struct BitArray {
    blocks: Box<[Block]>,
    /// Set bits, exact, in shards picked by the block index.
    set_bits: ShardedCount,
}

impl BitArray {
    /// An all-zero array of `blocks` blocks (a power of two).
    pub(crate) fn new(blocks: usize) -> Result<Self, Error> {
        debug_assert!(blocks.is_power_of_two());
        let bytes = blocks.saturating_mul(BLOCK_BYTES);
        let mut storage = Vec::new();
        storage
            .try_reserve_exact(blocks)
            .map_err(|_| Error::AllocationFailed { bytes })?;
        storage.extend((0..blocks).map(|_| Block::new()));
        Ok(BitArray {
            blocks: storage.into_boxed_slice(),
            set_bits: ShardedCount::new(blocks),
        })
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Bytes allocated: the blocks and the counter shards.
    pub(crate) fn memory_bytes(&self) -> usize {
        Self::memory_bytes_for(self.blocks.len())
    }

    /// Bytes an array of `blocks` blocks takes, before allocating it.
    pub(crate) fn memory_bytes_for(blocks: usize) -> usize {
        shards::block_array_bytes(blocks)
    }

    /// Asks the CPU to start loading block `block_index` into cache; a hint
    /// with no effect on results (and none off x86-64 or under loom).
    #[inline(always)]
    pub(crate) fn prefetch(&self, block_index: usize) {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse", not(atomic_bloom_loom)))]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let block: *const Block = &self.blocks[block_index];
            // SAFETY: the cfg guarantees SSE, the only feature the intrinsic
            // needs; a prefetch reads nothing and never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(block.cast::<i8>()) };
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse", not(atomic_bloom_loom))))]
        let _ = block_index;
    }

    #[inline(always)]
    fn word(&self, block_index: usize, word: usize) -> &AtomicU64 {
        &self.blocks[block_index].0[word]
    }

    /// Sets `mask` in a word; returns the word's previous value.
    #[inline(always)]
    fn set(&self, block_index: usize, word: usize, mask: u64) -> u64 {
        // Relaxed: bits only go 0 -> 1 and publish nothing else; the RMW still
        // reads the latest value, so exactly one caller sees each bit turn on.
        self.word(block_index, word)
            .fetch_or(mask, Ordering::Relaxed)
    }

    /// Adds bits this call turned on to the count: one RMW per insert that
    /// turned any on. `None` if it turned none on.
    #[inline(always)]
    fn count(&self, block_index: usize, turned_on: u32) -> Option<ShardAdd> {
        (turned_on != 0).then(|| self.set_bits.add(block_index, turned_on as usize))
    }

    /// Test-before-set insert of a [`LineProbe`]: loads both words and calls
    /// `fetch_or` only on a word that lacks bits. Returns what the set-bit
    /// count's shard did if this call turned on at least one bit, `None` if
    /// every bit was already set.
    #[inline(always)]
    pub(crate) fn insert_line(&self, probe: &LineProbe) -> Option<ShardAdd> {
        let block = &self.blocks[probe.block_index].0;
        // Relaxed: a stale 0 only costs a redundant fetch_or; a 1 never reverts.
        let low = block[probe.low_word].load(Ordering::Relaxed);
        // Relaxed: as above.
        let high = block[probe.high_word].load(Ordering::Relaxed);
        let mut turned_on = 0;
        if low & probe.low_mask != probe.low_mask {
            let previous = self.set(probe.block_index, probe.low_word, probe.low_mask);
            turned_on += (probe.low_mask & !previous).count_ones();
        }
        if high & probe.high_mask != probe.high_mask {
            let previous = self.set(probe.block_index, probe.high_word, probe.high_mask);
            turned_on += (probe.high_mask & !previous).count_ones();
        }
        self.count(probe.block_index, turned_on)
    }

    #[inline(always)]
    pub(crate) fn contains_line(&self, probe: &LineProbe) -> bool {
        let block = &self.blocks[probe.block_index].0;
        // Relaxed: a bit set by an insert that happens-before this call is
        // visible (coherence); bits carry no other data to synchronize.
        let low = block[probe.low_word].load(Ordering::Relaxed);
        // Relaxed: as above.
        let high = block[probe.high_word].load(Ordering::Relaxed);
        (low & probe.low_mask == probe.low_mask) & (high & probe.high_mask == probe.high_mask)
    }

    /// Test-and-set of a [`WordProbe`]: one `fetch_or`, so of racing inserts
    /// of one absent item exactly one sees the bits missing (and gets
    /// `Some`, as [`insert_line`](Self::insert_line)).
    #[inline(always)]
    pub(crate) fn insert_word(&self, probe: &WordProbe) -> Option<ShardAdd> {
        // Relaxed: a 1 never reverts, so seeing all bits set is final; a stale
        // value only sends us to the fetch_or, which decides.
        let current = self
            .word(probe.block_index, probe.word)
            .load(Ordering::Relaxed);
        if current & probe.mask == probe.mask {
            return None;
        }
        let previous = self.set(probe.block_index, probe.word, probe.mask);
        let turned_on = (probe.mask & !previous).count_ones();
        self.count(probe.block_index, turned_on)
    }

    #[inline(always)]
    pub(crate) fn contains_word(&self, probe: &WordProbe) -> bool {
        // Relaxed: bits only go 0 -> 1 and publish nothing else.
        let current = self
            .word(probe.block_index, probe.word)
            .load(Ordering::Relaxed);
        current & probe.mask == probe.mask
    }

    /// The exact number of set bits (a sum of shards; concurrent inserts may
    /// or may not be counted).
    pub(crate) fn set_bits(&self) -> usize {
        self.set_bits.sum()
    }

    /// Shards of the set-bit count.
    pub(crate) fn set_bits_shards(&self) -> usize {
        self.set_bits.num_shards()
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
                    let previous = self.set(block_index, word, wanted);
                    self.count(block_index, (wanted & !previous).count_ones());
                }
            }
        }
    }

    /// A copy of the current bits (concurrent inserts may or may not be in
    /// it). The copy's count is recounted from its own words, so it is exact.
    pub(crate) fn snapshot(&self) -> Self {
        let blocks: Box<[Block]> = self
            .blocks
            .iter()
            .map(|block| {
                Block(std::array::from_fn(|word| {
                    // Relaxed: a point-in-time copy of monotone bits.
                    AtomicU64::new(block.0[word].load(Ordering::Relaxed))
                }))
            })
            .collect();
        let mut copy = BitArray {
            blocks,
            set_bits: ShardedCount::new(self.blocks.len()),
        };
        let total = copy
            .blocks
            .iter()
            .flat_map(|block| &block.0)
            // Relaxed: the copy is not shared yet.
            .map(|word| word.load(Ordering::Relaxed).count_ones() as usize)
            .sum();
        copy.set_bits.reset(total);
        copy
    }

    /// Writes every word, block by block, little-endian (`FORMAT.md`);
    /// returns the number of set bits written.
    pub(crate) fn write_words<W: Write>(&self, out: &mut Encoder<W>) -> Result<u64, Error> {
        persist::write_blocks(out, &self.blocks, |block, buffer| {
            let mut ones = 0;
            for word in &block.0 {
                // Relaxed: a snapshot of bits that only go 0 -> 1; an insert
                // that happened-before the save began is seen.
                let bits = word.load(Ordering::Relaxed);
                ones += bits.count_ones() as usize;
                buffer.extend_from_slice(&bits.to_le_bytes());
            }
            ones
        })
    }

    /// Reads an array of `blocks` blocks (a power of two) as
    /// [`write_words`](Self::write_words) wrote it; allocates only as the
    /// input delivers. Returns the array and its number of set bits.
    pub(crate) fn read_words<R: Read>(
        blocks: usize,
        input: &mut Decoder<R>,
    ) -> Result<(Self, u64), Error> {
        let set_bits = ShardedCount::new(blocks);
        let decode = |bytes: &[u8]| {
            let block = Block(std::array::from_fn(|word| {
                let mut le = [0u8; 8];
                le.copy_from_slice(&bytes[word * 8..word * 8 + 8]);
                AtomicU64::new(u64::from_le_bytes(le))
            }));
            let ones = bytes.iter().map(|byte| byte.count_ones() as usize).sum();
            (block, ones)
        };
        let tally = |block_index, ones| {
            set_bits.add(block_index, ones);
        };
        let (blocks, total) = persist::read_blocks(blocks, input, decode, tally)?;
        Ok((BitArray { blocks, set_bits }, total))
    }

    pub(crate) fn clear(&mut self) {
        for block in self.blocks.iter() {
            for word in &block.0 {
                // Relaxed: `&mut self` excludes every other access.
                word.store(0, Ordering::Relaxed);
            }
        }
        self.set_bits.reset(0);
    }
}
