//! A scalable filter whose next stage the allocator refuses: the growth is
//! an error (`try_insert`, `insert_hash_within`), nothing new goes in past
//! a refused growth, `insert` keeps taking items into the last stage, and
//! the next insert that finds the stage full tries again, so the filter
//! grows as soon as memory is free. This test binary's allocator refuses
//! large blocks while `REFUSE` is set, and holds a thread's next stage-sized
//! block while it is told to (`hold_my_next_stage`), so that a growth can be
//! made to lose its race.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

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

/// Zeroed blocks of at least this many bytes are held on a thread that
/// asked (a stage of a filter of 1,000 items or more; stages of the test
/// below stay under `REFUSED_FROM`).
const HELD_FROM: usize = 1024;

thread_local! {
    /// This thread's next zeroed block of `HELD_FROM` bytes or more is held.
    static HOLD_NEXT: Cell<bool> = const { Cell::new(false) };
}
/// A held allocation is waiting.
static HELD: AtomicBool = AtomicBool::new(false);
/// The held allocation may go on.
static RELEASED: AtomicBool = AtomicBool::new(false);

/// Holds the calling thread's next zeroed allocation of a stage's size
/// until [`release`]: the thread is then inside a growth, before its
/// compare-and-swap.
fn hold_my_next_stage() {
    HOLD_NEXT.with(|hold| hold.set(true));
}

/// The tests share the switches above: each runs alone, and starts with
/// nothing held or released.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let alone = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Relaxed: the threads that read these are spawned after this, which
    // orders them.
    HELD.store(false, Ordering::Relaxed);
    // Relaxed: as above.
    RELEASED.store(false, Ordering::Relaxed);
    alone
}

/// Whether an allocation is held now.
fn held() -> bool {
    // Acquire: pairs with the Release below; nothing hangs off it but the
    // order of the test's steps.
    HELD.load(Ordering::Acquire)
}

fn release() {
    // Release: the test's steps before it happen-before the held
    // allocation's return.
    RELEASED.store(true, Ordering::Release);
}

/// Releases the held allocation when dropped: a failed assertion does not
/// leave the held thread waiting (and its scope hanging).
struct ReleaseOnDrop;

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        release();
    }
}

/// Waits, without allocating, while this thread's allocation is held.
fn wait_if_held(layout: &Layout) {
    if layout.size() < HELD_FROM || !HOLD_NEXT.with(Cell::get) {
        return;
    }
    HOLD_NEXT.with(|hold| hold.set(false));
    // Release: as in `release`.
    HELD.store(true, Ordering::Release);
    // Acquire: pairs with `release`.
    while !RELEASED.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
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
        wait_if_held(&layout);
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
    let _alone = one_at_a_time();
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

/// A growth that loses its race must not wipe out the refusal of a later
/// one. One thread fills the first stage and seals it, and its growth is
/// held in the allocator (before its compare-and-swap); meanwhile another
/// thread meets the sealed stage, appends the second stage itself, fills
/// it, and is refused the third by the memory limit. When the held growth
/// goes on, its compare-and-swap fails (the list is no longer the one it
/// grew): it appended nothing, so the refusal stands, and `try_insert`
/// still inserts no new item.
#[test]
fn a_growth_that_lost_its_race_keeps_a_later_refusal() {
    let _alone = one_at_a_time();
    // A limit that holds two stages and not three.
    let probe: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1000, 0.01)
        .seed(6)
        .build()
        .unwrap();
    let mut item = 0u64;
    while probe.stages() < 2 {
        probe.insert(&item);
        item += 1;
    }
    let limit = probe.memory_bytes();
    let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1000, 0.01)
        .seed(6)
        .memory_limit(limit)
        .build()
        .unwrap();
    std::thread::scope(|scope| {
        let sealer = scope.spawn(|| {
            hold_my_next_stage();
            // Items below 1 << 32: the first stage's; its growth is held.
            (0..1u64 << 32).find(|item| {
                filter.insert(item);
                held()
            })
        });
        let _release = ReleaseOnDrop;
        while !held() {
            assert!(!sealer.is_finished(), "the first stage never grew");
            std::thread::yield_now();
        }
        // The sealer is inside its growth: this thread meets the sealed
        // stage, grows past it, and fills the second stage.
        let mut item = 1u64 << 40;
        while filter.growth_error().is_none() {
            filter.insert(&item);
            item += 1;
            assert!(item < (1 << 40) + 10_000_000, "never refused");
        }
        assert_eq!(filter.stages(), 2);
        assert!(matches!(
            filter.growth_error(),
            Some(Error::MemoryLimitReached { .. })
        ));
        release();
        let sealed_at = sealer
            .join()
            .unwrap()
            .expect("the sealer's growth was held");
        assert!(filter.contains(&sealed_at));
    });
    assert_eq!(filter.stages(), 2);
    assert!(
        matches!(
            filter.growth_error(),
            Some(Error::MemoryLimitReached { .. })
        ),
        "the refusal was wiped out: {:?}",
        filter.growth_error()
    );
    let new_item = 1u64 << 50;
    assert!(
        matches!(
            filter.try_insert(&new_item),
            Err(Error::MemoryLimitReached { .. })
        ),
        "try_insert took a new item past the memory limit"
    );
    assert!(!filter.contains(&new_item));
}

/// `try_insert` meets a stage that another thread found full and sealed,
/// and whose next stage the allocator refuses it as well: it returns the
/// error and inserts nothing, as it does when it finds the refusal
/// recorded. (The sealer is held inside its own, refused, growth, so the
/// refusal is not recorded yet when `try_insert` starts.)
#[test]
fn a_try_insert_past_a_seal_it_cannot_grow_inserts_nothing() {
    let _alone = one_at_a_time();
    refuse_nothing_on_panic();
    let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1000, 0.01)
        .seed(7)
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
    std::thread::scope(|scope| {
        let sealer = scope.spawn(|| {
            hold_my_next_stage();
            (item..1u64 << 32).find(|item| {
                filter.insert(item);
                held()
            })
        });
        let _release = ReleaseOnDrop;
        while !held() {
            assert!(!sealer.is_finished(), "the stage never filled");
            std::thread::yield_now();
        }
        // The newest stage is sealed; the sealer's growth is under way.
        assert!(filter.growth_error().is_none());
        let new_item = 1u64 << 40;
        let outcome = filter.try_insert(&new_item);
        assert!(
            matches!(outcome, Err(Error::AllocationFailed { .. })),
            "try_insert past a seal it could not grow: {outcome:?}"
        );
        assert!(!filter.contains(&new_item), "a refused item went in");
        release();
        sealer
            .join()
            .unwrap()
            .expect("the sealer's growth was held");
    });
    refuse(false);
    assert_eq!(filter.stages(), stages);
    assert!(filter.try_insert(&(1u64 << 41)).unwrap());
    assert_eq!(filter.stages(), stages + 1);
}
