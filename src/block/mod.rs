//! The bottom layer of every filter: an array of 64-byte, 64-byte-aligned
//! blocks of atomics, one cache line each. It allocates them (all zero,
//! from the allocator's zeroed path, so that the kernel hands out zero
//! pages only as they are written), clears them, says their bytes, and
//! reads and writes them in the saved format; what a block's bits or
//! counters mean is its owner's business (`bits.rs`, `counters.rs`).

use std::io::{Read, Write};

mod line;
mod owned;

pub(crate) use line::Line;
use owned::OwnedBlocks;

use crate::wire::{reserve_as_read, Decoder, Encoder, CHUNK_BYTES, PAGE_BYTES};
use crate::Error;

/// Bytes in a block: one cache line.
pub(crate) const BLOCK_BYTES: usize = 64;

/// 64-bit words in a block.
pub(crate) const WORDS_PER_BLOCK: usize = BLOCK_BYTES / 8;

/// One 64-byte block of atomics (declared `#[repr(C, align(64))]`):
/// [`Line`], of words or of counters.
///
/// # Safety
///
/// An implementor is an array of `std` atomic integers (outside the loom
/// cfg), so that 64 zero bytes are a valid value of it, and that value is
/// an empty block: [`Blocks::new`] takes its blocks from zeroed memory.
pub(crate) unsafe trait Block: Sized {
    /// An all-zero block, made value by value (loom's atomics carry state
    /// that zero bytes are not).
    #[cfg(atomic_bloom_loom)]
    fn zero() -> Self;

    /// Sets every unit to zero, each with one store; others may be
    /// updating and reading the block meanwhile.
    fn clear(&self);

    /// Sets every unit to `source`'s (each read once); the caller holds
    /// this block exclusively, and it is all zero.
    fn copy_from(&mut self, source: &Self);

    /// Whether `other` holds the same units (each read once).
    fn same(&self, other: &Self) -> bool;

    /// Appends the block's 64 bytes, little-endian; returns how many of its
    /// units (bits, counters) are non-zero. Each atomic is read once.
    fn encode(&self, out: &mut Vec<u8>) -> usize;

    /// A block from the 64 bytes [`encode`](Self::encode) wrote, and its
    /// non-zero units.
    fn decode(bytes: &[u8]) -> (Self, usize);
}

/// An owned array of blocks.
pub(crate) struct Blocks<B> {
    blocks: OwnedBlocks<B>,
}

#[cfg(test)]
thread_local! {
    /// Pages encoded by this thread: what a save in pieces costs
    /// (`persist/chunks.rs`'s tests).
    pub(crate) static PAGES_ENCODED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl<B: Block> Blocks<B> {
    /// `count` (at least one) all-zero blocks, from the allocator's zeroed
    /// path: nothing is written, so pages cost memory only once bits land
    /// in them.
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    #[cfg(not(atomic_bloom_loom))]
    pub(crate) fn new(count: usize) -> Result<Self, Error> {
        // Safety: zero bytes are a valid, empty `B` (the `Block` contract).
        let blocks =
            unsafe { OwnedBlocks::zeroed(count.max(1)) }.ok_or(Error::AllocationFailed {
                bytes: Self::memory_bytes_for(count),
            })?;
        Ok(Blocks { blocks })
    }

    /// `count` all-zero blocks; under loom, whose atomics carry state that
    /// zero bytes are not, each is made by [`Block::zero`].
    #[cfg(atomic_bloom_loom)]
    pub(crate) fn new(count: usize) -> Result<Self, Error> {
        let mut storage = Vec::new();
        storage
            .try_reserve_exact(count)
            .map_err(|_| Error::AllocationFailed {
                bytes: Self::memory_bytes_for(count),
            })?;
        storage.extend((0..count).map(|_| B::zero()));
        Ok(Blocks {
            blocks: OwnedBlocks::from_vec(storage),
        })
    }

    /// Bytes an array of `count` blocks takes, before allocating it.
    pub(crate) fn memory_bytes_for(count: usize) -> usize {
        count.saturating_mul(BLOCK_BYTES)
    }

    /// Bytes this array takes.
    pub(crate) fn memory_bytes(&self) -> usize {
        Self::memory_bytes_for(self.num_blocks())
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.blocks.as_slice().len()
    }

    #[inline(always)]
    pub(crate) fn get(&self, block_index: usize) -> &B {
        &self.blocks.as_slice()[block_index]
    }

    /// Blocks `first` and `first + 1`, with one bounds check.
    #[inline(always)]
    pub(crate) fn pair(&self, first: usize) -> (&B, &B) {
        let pair = &self.blocks.as_slice()[first..first + 2];
        (&pair[0], &pair[1])
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, B> {
        self.blocks.as_slice().iter()
    }

    /// Asks the CPU to start loading block `block_index` into cache; a hint
    /// with no effect on results (and none off x86-64 or under loom).
    #[inline(always)]
    pub(crate) fn prefetch(&self, block_index: usize) {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse", not(atomic_bloom_loom)))]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let block: *const B = self.get(block_index);
            // Safety: the cfg guarantees SSE, the only feature the intrinsic
            // needs; a prefetch reads nothing and never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(block.cast::<i8>()) };
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse", not(atomic_bloom_loom))))]
        let _ = block_index;
    }

    /// A copy, each block read once (a copy of an array others write to may
    /// or may not hold their writes). Like `Vec::clone`, it aborts if the
    /// allocator refuses.
    pub(crate) fn snapshot(&self) -> Self {
        let mut bytes = Vec::with_capacity(BLOCK_BYTES);
        let blocks = self
            .iter()
            .map(|block| {
                bytes.clear();
                block.encode(&mut bytes);
                B::decode(&bytes).0
            })
            .collect();
        Blocks {
            blocks: OwnedBlocks::from_vec(blocks),
        }
    }

    /// A copy, each block read once, in memory from the allocator's zeroed
    /// path (pages of all-zero blocks stay the kernel's).
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when the allocator refuses.
    pub(crate) fn try_snapshot(&self) -> Result<Self, Error> {
        let mut copy = Self::new(self.num_blocks())?;
        for (target, source) in copy.blocks.as_mut_slice().iter_mut().zip(self.iter()) {
            target.copy_from(source);
        }
        Ok(copy)
    }

    /// Sets every block to zero, block by block, while others may use
    /// them.
    pub(crate) fn clear(&self) {
        self.iter().for_each(B::clear);
    }

    /// Whether `other` holds the same blocks, unit by unit (each unit of
    /// each array read once: a snapshot while others write).
    pub(crate) fn same(&self, other: &Self) -> bool {
        self.num_blocks() == other.num_blocks()
            && self
                .iter()
                .zip(other.iter())
                .all(|(ours, theirs)| ours.same(theirs))
    }

    /// Writes every block, a chunk of bytes at a time; returns the number of
    /// non-zero units written (`FORMAT.md`).
    pub(crate) fn write<W: Write>(&self, out: &mut Encoder<W>) -> Result<u64, Error> {
        let mut buffer = Vec::with_capacity(CHUNK_BYTES);
        let mut total = 0u64;
        for block in self.iter() {
            total += block.encode(&mut buffer) as u64;
            if buffer.len() >= CHUNK_BYTES {
                out.bytes(&buffer)?;
                buffer.clear();
            }
        }
        out.bytes(&buffer)?;
        Ok(total)
    }

    /// Writes every block as pages, each with its checksum (format
    /// version 4).
    pub(crate) fn write_pages<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        let mut page = Vec::with_capacity(PAGE_BYTES);
        for page_index in 0..self.page_count() {
            page.clear();
            self.encode_page(page_index, &mut page);
            out.page(page_index, &page)?;
        }
        Ok(())
    }

    /// Pages of [`write_pages`](Self::write_pages).
    pub(crate) fn page_count(&self) -> usize {
        (self.num_blocks() * BLOCK_BYTES).div_ceil(PAGE_BYTES)
    }

    /// Appends the bytes of page `page_index` to `out` (a whole page but
    /// for the last).
    pub(crate) fn encode_page(&self, page_index: usize, out: &mut Vec<u8>) {
        #[cfg(test)]
        PAGES_ENCODED.with(|count| count.set(count.get() + 1));
        let per_page = PAGE_BYTES / BLOCK_BYTES;
        let first = page_index * per_page;
        let blocks = &self.blocks.as_slice()
            [first.min(self.num_blocks())..(first + per_page).min(self.num_blocks())];
        out.reserve(blocks.len() * BLOCK_BYTES);
        for block in blocks {
            block.encode(out);
        }
    }

    /// The bytes `count` saved blocks take, or the error for a count whose
    /// bytes overflow.
    fn saved_bytes(count: usize) -> Result<usize, Error> {
        count.checked_mul(BLOCK_BYTES).ok_or(Error::LengthOverflow {
            field: "block count",
            value: count as u64,
        })
    }

    /// Reads `count` blocks that [`write_pages`](Self::write_pages) wrote,
    /// checking each page, allocating only as the input delivers them.
    pub(crate) fn read_pages<R: Read>(count: usize, input: &mut Decoder<R>) -> Result<Self, Error> {
        let bytes = Self::saved_bytes(count)?;
        let mut storage = Vec::new();
        input.pages(bytes, |page| {
            for block_bytes in page.chunks_exact(BLOCK_BYTES) {
                reserve_as_read(&mut storage, count, PAGE_BYTES / BLOCK_BYTES)?;
                storage.push(B::decode(block_bytes).0);
            }
            Ok(())
        })?;
        Ok(Blocks {
            blocks: OwnedBlocks::from_vec(storage),
        })
    }

    /// Reads `count` blocks that [`write`](Self::write) wrote, allocating
    /// only as the input delivers them; returns them and their non-zero
    /// units.
    pub(crate) fn read<R: Read>(
        count: usize,
        input: &mut Decoder<R>,
    ) -> Result<(Self, u64), Error> {
        let bytes = Self::saved_bytes(count)?;
        let mut storage = Vec::new();
        let mut total = 0u64;
        input.chunks(bytes, |chunk| {
            for block_bytes in chunk.chunks_exact(BLOCK_BYTES) {
                reserve_as_read(&mut storage, count, CHUNK_BYTES / BLOCK_BYTES)?;
                let (block, used) = B::decode(block_bytes);
                total += used as u64;
                storage.push(block);
            }
            Ok(())
        })?;
        let blocks = Blocks {
            blocks: OwnedBlocks::from_vec(storage),
        };
        Ok((blocks, total))
    }
}
