//! A scalable filter whose next stage the allocator refuses: the growth is
//! an error (`try_insert`, `insert_hash_within`), nothing new goes in past
//! a refused growth, `insert` keeps taking items into the last stage, and
//! the next insert that finds the stage full tries again, so the filter
//! grows as soon as memory is free. This test binary's allocator refuses
//! large blocks while `REFUSE` is set.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

use atomic_bloom::{Error, ScalableBloomFilter};

/// Refuses every allocation of at least `REFUSED_FROM` bytes while set.
static REFUSE: AtomicBool = AtomicBool::new(false);
/// A filter of 1,000 items at 1% takes about 1.2 KB; its later stages
/// pass this by the fifth.
const REFUSED_FROM: usize = 16 * 1024;

/// Whether the newest stage is large enough that the next one (more than
/// twice its size, at growth 2 and a tighter rate) is refused.
fn next_stage_refused(filter: &ScalableBloomFilter<u64>) -> bool {
    let newest = filter
        .stage_stats()
        .last()
        .map_or(0, |stage| stage.memory_bytes);
    newest >= REFUSED_FROM / 2
}

struct Refusing;

// Safety: `System`'s, or null (which `GlobalAlloc` allows) for a large
// block while refusing.
unsafe impl GlobalAlloc for Refusing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a switch the test flips between steps, on this thread.
        if layout.size() >= REFUSED_FROM && REFUSE.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // Safety: the caller's layout, passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Relaxed: as above.
        if layout.size() >= REFUSED_FROM && REFUSE.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // Safety: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // Safety: `block` came from `System` with `layout`.
        unsafe { System.dealloc(block, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Refusing = Refusing;

fn refuse(on: bool) {
    // Relaxed: read by this thread's allocations only.
    REFUSE.store(on, Ordering::Relaxed);
}

/// Inserts items from `next` on with `try_insert` until one is refused;
/// returns the refusal and the next item.
fn until_refused(filter: &ScalableBloomFilter<u64>, mut next: u64) -> (Error, u64) {
    loop {
        match filter.try_insert(&next) {
            Ok(_) => next += 1,
            Err(error) => return (error, next),
        }
        assert!(next < 10_000_000, "never refused");
    }
}

/// A panic (a failed assertion) first stops refusing: the panic's message
/// and backtrace need memory.
fn refuse_nothing_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        refuse(false);
        report(info);
    }));
}

#[test]
fn a_refused_growth_is_an_error_then_tried_again() {
    refuse_nothing_on_panic();
    let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1000, 0.01)
        .seed(3)
        .unlimited_memory()
        .build()
        .unwrap();
    let mut item = 0u64;
    while !next_stage_refused(&filter) {
        filter.insert(&item);
        item += 1;
    }
    let stages = filter.stages();
    refuse(true);
    let (error, refused_item) = until_refused(&filter, item);
    assert!(matches!(error, Error::AllocationFailed { .. }), "{error:?}");
    assert!(!filter.contains(&refused_item), "a refused item went in");
    assert_eq!(filter.growth_error(), Some(error.clone()));
    assert_eq!(filter.stages(), stages, "no stage was added");
    // Still refused: each try is a new attempt, and fails again.
    assert_eq!(filter.try_insert(&refused_item), Err(error.clone()));
    // An item already present needs no room.
    assert_eq!(filter.try_insert(&0), Ok(false));
    // `insert` never fails: it fills the last stage past its rate.
    assert!(filter.insert(&refused_item));
    // Memory is free again: the next try grows, and the error is gone.
    refuse(false);
    assert_eq!(filter.try_insert(&(refused_item + 1)), Ok(true));
    assert_eq!(filter.stages(), stages + 1);
    assert!(filter.growth_error().is_none());
    assert!((0..=refused_item + 1).all(|item| filter.contains(&item)));

    // The single writer's path: refused, nothing inserted, then grows.
    let writer: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1000, 0.01)
        .seed(4)
        .unlimited_memory()
        .exact_fill()
        .build()
        .unwrap();
    let mut item = 0u64;
    while !next_stage_refused(&writer) {
        writer
            .insert_hash_within(writer.hash_item(&item), usize::MAX)
            .unwrap();
        item += 1;
    }
    refuse(true);
    let refused = loop {
        match writer.insert_hash_within(writer.hash_item(&item), usize::MAX) {
            Ok(_) => item += 1,
            Err(error) => break error,
        }
        assert!(item < 10_000_000, "never refused");
    };
    assert!(
        matches!(refused, Error::AllocationFailed { .. }),
        "{refused:?}"
    );
    assert!(!writer.contains(&item));
    let stages = writer.stages();
    refuse(false);
    assert_eq!(
        writer.insert_hash_within(writer.hash_item(&item), usize::MAX),
        Ok(true)
    );
    assert_eq!(writer.stages(), stages + 1);
    assert!(writer.growth_error().is_none());
}
