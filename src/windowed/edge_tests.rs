//! Copies racing a rotation, and the epoch's limits, staged on one thread
//! (from the review of issue 34's fixes): a rotation another thread would
//! run is run inside the copy's snapshot, or begun and left half done.

use std::convert::Infallible;
use std::sync::mpsc;
use std::time::Duration;

use super::ring::MAX_EPOCH;
use super::tests::test_clock;
use super::{Timing, WindowedBloomFilter};
use crate::sync::{Arc, Ordering};
use crate::Layout;

/// A copy whose bits are read before a rotation and whose rotation state
/// is read after it took the oldest generation's items for the new
/// current generation's: kept `g` more generations, past the horizon,
/// and a slot twice full. Here the rotation to generation 2 (which
/// forgets generation 0) runs while the copy reads the bits; one
/// rotation of the copy later, generation 0's items must be gone from it.
#[test]
fn a_copy_racing_a_rotation_forgets_what_its_original_forgot() {
    for layout in [Layout::CacheLine, Layout::Compact, Layout::Word] {
        let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
            .seed(5)
            .layout(layout)
            .generations(2)
            .manual_rotation()
            .build()
            .unwrap();
        let old = 0..1_000u64;
        for item in old.clone() {
            filter.insert(&item);
        }
        filter.advance();
        let copy = filter
            .copy_with(|bits| {
                let copied = bits.snapshot();
                filter.advance();
                Ok::<_, Infallible>(copied)
            })
            .unwrap();
        assert_eq!(filter.epoch(), 2);
        assert!(old.clone().filter(|item| filter.contains(item)).count() < 50);
        copy.advance();
        let kept = old.filter(|item| copy.contains(item)).count();
        assert!(
            kept < 50,
            "{layout:?}: {kept} of 1,000 items of generation 0 found in a copy at epoch {}",
            copy.epoch()
        );
    }
}

/// A copy (or a save) that reads the state while a time window's rotation
/// has begun but its thread has not yet stored the new generation's end
/// completed the rotation with the slot's old end, long past: the copy's
/// next insert rotated again at once, clearing a generation whose items
/// were inserted a nanosecond before. Every item must be found for the
/// window in the copy too.
#[test]
fn a_copy_taken_as_a_time_rotation_begins_keeps_the_window() {
    let t = 1_000_000_000u64;
    for g in [2, 4] {
        let (now, clock) = test_clock();
        let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
            .seed(3)
            .generations(g)
            .time_window(Duration::from_nanos(t))
            .clock(clock)
            .build()
            .unwrap();
        let end = filter.ring.end(0) as u64;
        // Relaxed: this thread alone moves the clock.
        now.store(end - 1, Ordering::Relaxed);
        assert!(filter.insert(&1));
        // Relaxed: as above.
        now.store(end, Ordering::Relaxed);
        // The rotation an insert at `end` begins, its thread descheduled
        // between its compare-and-swap and its store of the new end (the
        // slot it clears holds bits, as a loaded filter's may: the
        // rotation stays under way).
        filter.mark_all_written();
        assert!(filter.ring.begin(filter.ring.load(), None));
        assert!(filter.ring.load().rotating());
        let copy = filter.clone();
        assert!(copy.insert(&2));
        for later in [1, t / 2, t - 1] {
            // Relaxed: as above.
            now.store(end - 1 + later, Ordering::Relaxed);
            assert!(
                copy.contains(&1),
                "{g} generations: an item found in the copy for {later} ns only"
            );
        }
    }
}
/// `advance_by(u64::MAX)` took the epoch to the last one, where a filter
/// cannot rotate: a time window's insert, once its generation had ended,
/// waited for a rotation that could never come (a hang), and the filter
/// saved but did not load ("past the last epoch a filter may be loaded
/// at"). An advanced filter keeps rotating, keeps its window and loads;
/// and at the very last epoch (reached only by rotating for centuries) an
/// insert returns.
#[test]
fn a_time_window_advanced_as_far_as_it_goes_keeps_its_promise() {
    let t = 1_000_000_000u64;
    let (now, clock) = test_clock();
    let filter: Arc<WindowedBloomFilter<u64>> = Arc::new(
        WindowedBloomFilter::builder(1_000, 0.01)
            .seed(3)
            .generations(2)
            .time_window(Duration::from_nanos(t))
            .clock(clock)
            .build()
            .unwrap(),
    );
    filter.advance_by(u64::MAX);
    let at = 10 * t;
    // Relaxed: this thread alone moves the clock (the inserting thread
    // reads it after the spawn).
    now.store(at, Ordering::Relaxed);
    let returned = |filter: &Arc<WindowedBloomFilter<u64>>, item: u64| {
        let (done, wait) = mpsc::channel();
        let filter = Arc::clone(filter);
        std::thread::spawn(move || {
            filter.insert(&item);
            let _ = done.send(());
        });
        wait.recv_timeout(Duration::from_secs(20)).is_ok()
    };
    assert!(
        returned(&filter, 1),
        "an insert at epoch {} never returned",
        filter.epoch()
    );
    for later in [0, t - 1] {
        // Relaxed: as above.
        now.store(at + later, Ordering::Relaxed);
        assert!(filter.contains(&1), "forgotten {later} ns after its insert");
    }
    let mut bytes = Vec::new();
    filter.write_to(&mut bytes).unwrap();
    let loaded = WindowedBloomFilter::<u64>::read_from(bytes.as_slice())
        .unwrap_or_else(|err| panic!("saved at epoch {}: {err}", filter.epoch()));
    assert!(loaded.contains(&1));
    // The last epoch itself.
    let Timing::Time { span, .. } = filter.timing else {
        unreachable!()
    };
    let state = filter.ring.load();
    assert!(filter.ring.jump(state, MAX_EPOCH, Some(at as i64 + span)));
    // Relaxed: as above.
    now.store(at + 100 * t, Ordering::Relaxed);
    assert!(
        returned(&filter, 2),
        "an insert at the last epoch never returned"
    );
}

/// A `clear` (or `advance_by`) racing another call's `advance_by(n)`
/// past `g`, which rotates `g` times and then jumps the epoch with nothing
/// cleared: the clear counted the epochs the jump skipped as its
/// rotations and returned with a slot cleared before its call, and filled
/// since, uncleared. Staged: the other call rotates once, X is inserted,
/// the clear reads its start, the other call rotates again and jumps, and
/// the clear goes on. X must be gone (the same race is the loom model
/// `a_clear_racing_another_calls_jump_forgets_what_came_before_it`).
#[test]
fn a_clear_racing_another_calls_jump_forgets_what_came_before_it() {
    for g in [2, 4] {
        let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
            .seed(5)
            .generations(g)
            .manual_rotation()
            .build()
            .unwrap();
        // The other call's first g - 1 rotations.
        for _ in 1..g {
            filter.advance();
        }
        assert!(filter.insert(&1));
        let start = filter.epoch();
        // Its last rotation, then its jump.
        filter.advance();
        assert!(filter.ring.jump(filter.ring.load(), 1_000, None));
        filter.advance_from(start, u64::from(g));
        assert!(
            !filter.contains(&1),
            "{g} generations: an item inserted before clear() found after it (epoch {})",
            filter.epoch()
        );
    }
}

/// An `advance_by(n)` past `g` whose own jump follows another call's jump:
/// the other call (`advance_by(4)`, g = 2) rotates once, X is inserted,
/// this call reads its start, the other call rotates again and jumps to 4
/// (clearing nothing); this call, at its rotation count already, jumped
/// on from 4 without checking the other's jump, landing on X's slot
/// uncleared. X, inserted before the call, must be gone when it returns
/// (found by review; the jump branch now checks as the end does).
#[test]
fn an_advance_by_whose_jump_follows_another_calls_jump_forgets_what_came_before_it() {
    let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
        .seed(5)
        .generations(2)
        .manual_rotation()
        .build()
        .unwrap();
    // The other call's first rotation.
    filter.advance();
    assert!(filter.insert(&1));
    let start = filter.epoch();
    // Its second rotation, then its jump.
    filter.advance();
    assert!(filter.ring.jump(filter.ring.load(), 4, None));
    filter.advance_from(start, 10);
    assert!(
        !filter.contains(&1),
        "an item inserted before advance_by(10) found after it (epoch {})",
        filter.epoch()
    );
}
