//! `WindowedBloomFilter` under threads that insert the same items at the
//! same moment: the window holds for every layout (issue 34, item 1).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use atomic_bloom::{Layout, WindowedBloomFilter};

/// Threads that insert the same new items in lockstep: before each item
/// they meet, and the last to arrive sets a moment a microsecond ahead at
/// which all of them start (so they race on nearly every item, and none
/// lags into a later generation, where its insert would be a refresh).
/// Returns how many of the last items, newest first, are found before the
/// first one that is not, and the epoch.
fn racing_duplicates(layout: Layout, threads: u64, items: u64) -> (u64, u64) {
    let window = 6_000;
    let filter: Arc<WindowedBloomFilter<u64>> = Arc::new(
        WindowedBloomFilter::builder(window, 0.01)
            .seed(34)
            .layout(layout)
            .generations(4)
            .build()
            .unwrap(),
    );
    let origin = Instant::now();
    // Arrivals, the step released, and the moment it starts (ns after
    // `origin`).
    let meeting = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (filter, meeting) = (Arc::clone(&filter), Arc::clone(&meeting));
            std::thread::spawn(move || {
                let [arrived, released, start] = &*meeting;
                for item in 0..items {
                    // AcqRel / Acquire / Release: pacing only (the last to
                    // arrive publishes the start); the filter's own
                    // orderings are what is under test.
                    if arrived.fetch_add(1, Ordering::AcqRel) + 1 == threads * (item + 1) {
                        let at = origin.elapsed().as_nanos() as u64 + 1_000;
                        // Relaxed: published by the Release below.
                        start.store(at, Ordering::Relaxed);
                        released.store(item + 1, Ordering::Release);
                    }
                    let mut spins = 0u32;
                    // Acquire: pairs with the Release above.
                    while released.load(Ordering::Acquire) <= item {
                        spins += 1;
                        if spins % 256 == 0 {
                            std::thread::yield_now();
                        }
                    }
                    // Relaxed: ordered by the Acquire above.
                    let at = start.load(Ordering::Relaxed);
                    while (origin.elapsed().as_nanos() as u64) < at {
                        std::hint::spin_loop();
                    }
                    filter.insert(&item);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let kept = (0..items)
        .rev()
        .take_while(|item| filter.contains(item))
        .count() as u64;
    (kept, filter.epoch())
}

/// The experiment: a 6,000-item window of 4 generations (2,000
/// items each), threads inserting the same new items, three rounds per
/// layout. A racing duplicate counted twice fills a generation early: the
/// epoch then runs ahead of one rotation per 2,000 items, and the oldest
/// of the last 6,000 items are forgotten (4,084 to 4,777 items back before
/// the fix). A thread that lags across a rotation inserts the item again
/// into the new generation, where it takes a place (a refresh, as the
/// window's rules say): at most one such item per rotation in lockstep,
/// hence the 4 items of slack.
#[test]
fn racing_duplicates_keep_the_whole_window() {
    let items = 30_000;
    for layout in [Layout::CacheLine, Layout::Compact, Layout::Word] {
        for round in 0..3 {
            let (kept, epoch) = racing_duplicates(layout, 2, items);
            assert!(
                kept >= 6_000 - 4,
                "{layout:?}, round {round}: the item {kept} new items back was forgotten \
                 (window 6,000)"
            );
            assert!(
                epoch <= items / 2_000,
                "{layout:?}, round {round}: {epoch} rotations for {items} items in \
                 generations of 2,000"
            );
        }
    }
}
