//! Every insert into a time window returns: a window too short for an
//! insert to place its item before its generation ends is refused, and an
//! insert that finds itself late at every clock reading (a thread
//! descheduled at each one, a machine far slower than the window) goes
//! round a bounded number of times. Each call runs under a watchdog: a
//! hang fails the test instead of hanging it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use atomic_bloom::{Error, Layout, WindowedBloomFilter};

#[path = "common/watchdog.rs"]
mod watchdog;

use watchdog::within;

/// A watchdog's limit: seconds for what takes microseconds.
const LIMIT: Duration = Duration::from_secs(5);

/// Every layout with its generation counts at their extremes.
const SHAPES: [(Layout, u32); 5] = [
    (Layout::CacheLine, 2),
    (Layout::CacheLine, 4),
    (Layout::Word, 8),
    (Layout::Compact, 5),
    (Layout::Compact, 16),
];

fn builder(layout: Layout, generations: u32) -> atomic_bloom::WindowedBloomFilterBuilder<u64> {
    WindowedBloomFilter::builder(1000, 0.01)
        .seed(41)
        .layout(layout)
        .generations(generations)
}

/// A time window under the shortest allowed is refused, with an error of
/// its own that names the shortest. Before, a window under about 0.6 µs
/// (4 generations; 5 µs in a debug build) built, and its first insert
/// never returned: every attempt found its generation ended longer ago
/// than the slack (`T / 256`), rotated, and went round again.
#[test]
fn a_window_too_short_to_keep_is_refused_naming_the_shortest() {
    let shortest = WindowedBloomFilter::<u64>::MIN_TIME_WINDOW;
    assert_eq!(shortest, Duration::from_millis(1));
    for (layout, generations) in SHAPES {
        for nanos in [1, 100, 256, 600, 5_000, 999_999] {
            let duration = Duration::from_nanos(nanos);
            let built = builder(layout, generations).time_window(duration).build();
            let err = match built {
                Err(err) => err,
                Ok(f) => {
                    let returned = within(LIMIT, "the first insert", move || f.insert(&1));
                    panic!("{layout:?} x{generations}, {duration:?}: built (insert: {returned})");
                }
            };
            assert_eq!(
                err,
                Error::WindowTooShort {
                    duration,
                    min: shortest
                },
                "{layout:?} x{generations}, {duration:?}"
            );
            assert!(err.to_string().contains("1ms"), "{err}");
        }
        // The shortest builds, and its inserts return, on several threads.
        let f = Arc::new(
            builder(layout, generations)
                .time_window(shortest)
                .build()
                .unwrap(),
        );
        let workers: Vec<_> = (0..4u64)
            .map(|thread| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        f.insert(&(thread << 32 | i));
                    }
                })
            })
            .collect();
        within(LIMIT, "80,000 inserts into a 1 ms window", move || {
            for worker in workers {
                worker.join().unwrap();
            }
        });
    }
}

/// A clock that leaps `leap` nanoseconds at every reading, the reading
/// before the leap: an insert then finds its generation ended at every
/// check, as one whose thread is descheduled at each would.
fn leaping_clock(leap: u64) -> impl Fn() -> Duration + Send + Sync + 'static {
    let nanos = Arc::new(AtomicU64::new(0));
    // Relaxed: a counter; nothing else is published through it.
    move || Duration::from_nanos(nanos.fetch_add(leap, Ordering::Relaxed))
}

/// An insert late at every clock reading returns, having rotated a
/// bounded number of times (each of its rotations is due: the clock has
/// passed the generation's end): once as it starts, and once for each of
/// the two rounds the late rule goes measured from the clock it reads
/// after setting its bits; then it is measured from the call's start,
/// which the generation its own rotation began passes. Before, it rotated
/// and went round again for ever (the late rule retried while the clock
/// read after the bits was past the end and the slack, which every
/// reading was).
#[test]
fn an_insert_late_at_every_clock_reading_returns() {
    let window = Duration::from_secs(1);
    for (layout, generations) in SHAPES {
        // Two lifetimes a reading: past any generation's end and slack.
        let leap = 2 * window.as_nanos() as u64 * 2;
        let f = Arc::new(
            builder(layout, generations)
                .time_window(window)
                .clock(leaping_clock(leap))
                .build()
                .unwrap(),
        );
        let inserts = 100u64;
        let epoch = within(LIMIT, "inserts late at every reading", {
            let f = Arc::clone(&f);
            move || {
                for i in 0..inserts {
                    f.insert(&i);
                }
                f.epoch()
            }
        });
        assert!(
            epoch <= inserts * 3,
            "{layout:?} x{generations}: {epoch} rotations for {inserts} inserts"
        );
    }
}

/// What holds for the insert that runs out of rounds: it is found for the
/// window from its call's start (the generation it stays in began after
/// that start, so it ends after it). The clock leaps two lifetimes at
/// each reading while X is inserted, then is set back to a nanosecond
/// short of a window after the reading X's call began with.
#[test]
fn an_insert_out_of_rounds_is_found_for_the_window_from_its_start() {
    let window = Duration::from_secs(1);
    let t = window.as_nanos() as u64;
    for (layout, generations) in SHAPES {
        let nanos = Arc::new(AtomicU64::new(0));
        let leap = Arc::new(AtomicU64::new(0));
        let clock = {
            let (nanos, leap) = (Arc::clone(&nanos), Arc::clone(&leap));
            // Relaxed (both): this test's thread moves them between calls,
            // and the watchdog's join orders its reads.
            move || {
                Duration::from_nanos(
                    nanos.fetch_add(leap.load(Ordering::Relaxed), Ordering::Relaxed),
                )
            }
        };
        let f = Arc::new(
            builder(layout, generations)
                .time_window(window)
                .clock(clock)
                .build()
                .unwrap(),
        );
        // Long idle: the first generation ended ten windows ago.
        let start = 10 * t;
        // Relaxed: as above.
        nanos.store(start, Ordering::Relaxed);
        leap.store(4 * t, Ordering::Relaxed);
        within(LIMIT, "an insert late at every reading", {
            let f = Arc::clone(&f);
            move || f.insert(&7)
        });
        // Relaxed: as above.
        leap.store(0, Ordering::Relaxed);
        nanos.store(start + t - 1, Ordering::Relaxed);
        assert!(
            f.contains(&7),
            "{layout:?} x{generations}: forgotten within the window from its start"
        );
    }
}
