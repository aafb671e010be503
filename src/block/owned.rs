//! The memory under a [`Blocks`](super::Blocks) array: blocks that are
//! either fresh from the allocator's zeroed path or moved out of a `Vec`.
//!
//! Zeroed blocks must come from `calloc` for the kernel to hand out zero
//! pages only as they are written. The global allocator has no aligned
//! `calloc`: std's `alloc_zeroed` with a 64-byte alignment allocates, then
//! writes every byte (so a 4 GiB filter would make 4 GiB resident at once).
//! Here the allocation asks for the allocator's natural alignment, 64 bytes
//! more, and the blocks start at the first 64-byte boundary inside it.

use std::alloc::Layout;
use std::ptr::NonNull;

#[cfg(not(atomic_bloom_loom))]
use super::BLOCK_BYTES;

/// The alignment every allocator gives without being asked (`malloc`'s):
/// what makes `alloc_zeroed` a plain `calloc`.
#[cfg(not(atomic_bloom_loom))]
const NATURAL_ALIGN: usize = 16;

/// An owned array of `len` blocks at a 64-byte boundary.
pub(super) struct OwnedBlocks<B> {
    first: NonNull<B>,
    len: usize,
    /// What the allocator returned, and the layout it was asked for; a
    /// zero-sized layout owns nothing.
    allocation: NonNull<u8>,
    layout: Layout,
}

// Safety: it owns its blocks as a `Box<[B]>` would.
unsafe impl<B: Send> Send for OwnedBlocks<B> {}
// Safety: as above; shared access hands out `&B` only.
unsafe impl<B: Sync> Sync for OwnedBlocks<B> {}

impl<B> OwnedBlocks<B> {
    /// `len` blocks of zero bytes, from the allocator's zeroed path; `None`
    /// when the allocator refuses or the size overflows.
    ///
    /// # Safety
    ///
    /// Zero bytes must be a valid `B` (the `Block` contract).
    #[cfg(not(atomic_bloom_loom))]
    pub(super) unsafe fn zeroed(len: usize) -> Option<Self> {
        debug_assert!(std::mem::size_of::<B>() == BLOCK_BYTES);
        debug_assert!(std::mem::align_of::<B>() == BLOCK_BYTES);
        let bytes = len.checked_mul(BLOCK_BYTES)?.checked_add(BLOCK_BYTES)?;
        let layout = Layout::from_size_align(bytes, NATURAL_ALIGN).ok()?;
        // Safety: `bytes` is at least one block, never 0.
        let allocation = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
        let offset = allocation.as_ptr().align_offset(BLOCK_BYTES);
        // Safety: `offset` < 64 and the allocation has 64 bytes more than
        // the blocks, so all of them lie inside it.
        let first = unsafe { allocation.add(offset) }.cast::<B>();
        Some(OwnedBlocks {
            first,
            len,
            allocation,
            layout,
        })
    }

    /// Takes over a `Vec`'s blocks and its allocation.
    pub(super) fn from_vec(blocks: Vec<B>) -> Self {
        let mut blocks = std::mem::ManuallyDrop::new(blocks);
        let layout = Layout::array::<B>(blocks.capacity())
            .expect("a Vec's capacity fits a layout, or it could not have been allocated");
        // Safety: a Vec's pointer is never null (dangling when it owns no
        // allocation, which the zero-sized layout records).
        let first = unsafe { NonNull::new_unchecked(blocks.as_mut_ptr()) };
        OwnedBlocks {
            first,
            len: blocks.len(),
            allocation: first.cast(),
            layout,
        }
    }

    #[inline(always)]
    pub(super) fn as_slice(&self) -> &[B] {
        // Safety: `first` starts `len` initialized blocks owned by `self`.
        unsafe { std::slice::from_raw_parts(self.first.as_ptr(), self.len) }
    }

    pub(super) fn as_mut_slice(&mut self) -> &mut [B] {
        // Safety: as in `as_slice`, and `&mut self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.first.as_ptr(), self.len) }
    }
}

impl<B> Drop for OwnedBlocks<B> {
    fn drop(&mut self) {
        // Safety: the blocks are initialized, owned by `self` and dropped
        // once, here.
        unsafe { std::ptr::drop_in_place(self.as_mut_slice() as *mut [B]) };
        if self.layout.size() != 0 {
            // Safety: `allocation` came from the global allocator with
            // `layout` (by `zeroed`, or by the Vec `from_vec` took over).
            unsafe { std::alloc::dealloc(self.allocation.as_ptr(), self.layout) };
        }
    }
}
