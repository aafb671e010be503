//! A global allocator that counts live heap bytes and their peak, passing
//! every call on to `System`. Shared by `tests/persist_alloc.rs` and
//! `benches/examples/bits_per_item.rs` (through `#[path]`); each declares its own
//! `#[global_allocator] static ALLOC: CountingAlloc = CountingAlloc;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts live heap bytes and their peak; allocates through `System`.
pub struct CountingAlloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl CountingAlloc {
    fn grew(bytes: usize) {
        // Relaxed: a statistic; it is read on the thread that allocated,
        // after the allocations it wants counted.
        let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
        // Relaxed: as above.
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    fn shrank(bytes: usize) {
        // Relaxed: as above.
        LIVE.fetch_sub(bytes, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged; only the byte
// counts are noted, after a successful call.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            Self::grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            Self::grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        Self::shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            Self::grew(new_size);
            Self::shrank(layout.size());
        }
        new
    }
}

/// Heap bytes live now.
pub fn live() -> usize {
    // Relaxed: see `CountingAlloc::grew`.
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes live at once since the last [`reset_peak`].
pub fn peak() -> usize {
    // Relaxed: as above.
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak from what is live now.
pub fn reset_peak() {
    // Relaxed: as above.
    PEAK.store(live(), Ordering::Relaxed);
}
