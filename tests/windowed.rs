//! `WindowedBloomFilter`: the window and the forget horizon (count and
//! time), the false-positive rate at steady state, inserts racing
//! rotations, bad input, saving and loading. Every test runs each shape.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use atomic_bloom::{Error, Layout, Rotation, Sizing, WindowedBloomFilter};

#[path = "common/clock.rs"]
mod clock;
#[path = "common/saved.rs"]
mod saved;

use clock::test_clock;

/// Every shape: a layout and its generations.
const SHAPES: [(Layout, u32); 9] = [
    (Layout::CacheLine, 2),
    (Layout::CacheLine, 4),
    (Layout::CacheLine, 8),
    (Layout::Word, 2),
    (Layout::Word, 4),
    (Layout::Word, 8),
    (Layout::Compact, 2),
    (Layout::Compact, 5),
    (Layout::Compact, 9),
];

fn filter(
    window: usize,
    rate: f64,
    (layout, generations): (Layout, u32),
) -> WindowedBloomFilter<u64> {
    WindowedBloomFilter::builder(window, rate)
        .seed(7)
        .layout(layout)
        .generations(generations)
        .build()
        .unwrap()
}

/// An item never inserted by any test: the top half of the key space.
fn absent(i: u64) -> u64 {
    (1 << 63) | i
}

/// The bound on a measured rate over `probes` probes: 15% over the
/// target, plus six standard deviations.
fn rate_bound(target: f64, probes: u64) -> f64 {
    target * 1.15 + 6.0 * (target * (1.0 - target) / probes as f64).sqrt()
}

#[test]
fn the_last_window_items_are_always_found() {
    for shape in SHAPES {
        for sizing in [Sizing::Exact, Sizing::PowerOfTwo] {
            let window = 3_000;
            let f: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(window, 0.01)
                .seed(11)
                .layout(shape.0)
                .generations(shape.1)
                .sizing(sizing)
                .build()
                .unwrap();
            let mut last = VecDeque::new();
            for i in 0..4 * window as u64 {
                f.insert(&i);
                last.push_back(i);
                if last.len() > window {
                    last.pop_front();
                }
                if i % 97 == 0 {
                    let missing = last.iter().filter(|&&item| !f.contains(&item)).count();
                    assert_eq!(missing, 0, "{shape:?} {sizing:?} after {i}");
                }
            }
            assert!(
                f.epoch() >= 4 * (shape.1 as u64 - 1) - 1,
                "{shape:?}: it rotated"
            );
        }
    }
}

/// Items of generations that have been cleared answer exactly as in a
/// filter that never saw them: a filter given only the live generations'
/// items, rotated at the same places.
#[test]
fn items_past_the_horizon_answer_as_never_inserted() {
    for shape in SHAPES {
        let window = 2_000;
        let f = filter(window, 0.01, shape);
        let g = u64::from(shape.1);
        let mut placed = Vec::new();
        for i in 0..10 * window as u64 {
            let epoch = f.epoch();
            f.insert(&i);
            placed.push((i, epoch));
        }
        let now = f.epoch();
        // Each finished generation took exactly G new items: the rotation
        // comes on the G-th (a few items may add no bit, being false
        // positives in the generation, and are not counted).
        for epoch in 1..now {
            let items = placed.iter().filter(|&&(_, e)| e == epoch).count();
            let capacity = f.generation_capacity();
            assert!(
                items >= capacity && items <= capacity + capacity / 50,
                "{shape:?}: generation {epoch} got {items} items for {capacity}"
            );
        }
        let reference: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(window, 0.01)
            .seed(7)
            .layout(shape.0)
            .generations(shape.1)
            .manual_rotation()
            .build()
            .unwrap();
        for epoch in now + 1 - g..=now {
            if epoch > now + 1 - g {
                reference.advance();
            }
            for &(item, _) in placed.iter().filter(|&&(_, e)| e == epoch) {
                reference.insert(&item);
            }
        }
        let forgotten = placed.iter().filter(|&&(_, e)| e + g <= now).count();
        assert!(forgotten >= 3 * window, "{shape:?}: {forgotten} forgotten");
        let differ = (0..10 * window as u64)
            .chain((0..200_000).map(absent))
            .filter(|item| f.contains(item) != reference.contains(item))
            .count();
        assert_eq!(differ, 0, "{shape:?}");
        // And the forgotten items are found at about the false-positive
        // rate, not more.
        let found = placed
            .iter()
            .filter(|&&(item, e)| e + g <= now && f.contains(&item))
            .count();
        assert!(
            (found as f64) < forgotten as f64 * 0.03,
            "{shape:?}: {found} of {forgotten} forgotten items found"
        );
    }
}

/// Inserts until the current generation is one item short of full: every
/// generation holds its share, the worst moment of the cycle.
fn fill_to_the_worst_moment(f: &WindowedBloomFilter<u64>, next: &mut u64) {
    for _ in 0..3 * f.window() {
        f.insert(next);
        *next += 1;
    }
    while f.generation_len() + 1 < f.generation_capacity() {
        f.insert(next);
        *next += 1;
    }
}

#[test]
fn the_false_positive_rate_at_steady_state_is_at_most_the_target() {
    let probes = 1_000_000u64;
    for (shape, rate) in [
        ((Layout::CacheLine, 4), 0.01),
        ((Layout::CacheLine, 2), 0.01),
        ((Layout::Compact, 5), 0.01),
        ((Layout::Word, 4), 0.01),
        ((Layout::CacheLine, 4), 0.001),
        ((Layout::Compact, 7), 0.001),
    ] {
        let f = filter(200_000, rate, shape);
        let mut next = 0;
        fill_to_the_worst_moment(&f, &mut next);
        let found = (0..probes).filter(|&i| f.contains(&absent(i))).count();
        let measured = found as f64 / probes as f64;
        assert!(
            measured <= rate_bound(rate, probes),
            "{shape:?} at {rate}: measured {measured}"
        );
        assert!(
            measured > rate * 0.7,
            "{shape:?} at {rate}: measured {measured}, oversized?"
        );
    }
}

/// One pinned count: a change to hashing, placement or sizing shows here.
#[test]
fn golden_false_positive_count() {
    let f = filter(100_000, 0.01, (Layout::CacheLine, 4));
    let mut next = 0;
    fill_to_the_worst_moment(&f, &mut next);
    assert_eq!(f.epoch(), 8);
    let found = (0..1_000_000).filter(|&i| f.contains(&absent(i))).count();
    assert_eq!(found, GOLDEN_FALSE_POSITIVES);
}

const GOLDEN_FALSE_POSITIVES: usize = 9_851;

/// Two threads insert while generations rotate every few hundred items.
/// An insert lands in the generation current when it completes, so an
/// item is found as long as fewer than g - 1 rotations have begun since
/// its insert began.
#[test]
fn inserts_racing_rotations_are_found_until_their_generation_ends() {
    for shape in [
        (Layout::CacheLine, 4),
        (Layout::Word, 4),
        (Layout::Compact, 3),
    ] {
        let f = Arc::new(filter(600, 0.01, shape));
        let g = u64::from(shape.1);
        let workers: Vec<_> = (0..2u64)
            .map(|worker| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    let mut recent: VecDeque<(u64, u64)> = VecDeque::new();
                    let mut lost = 0;
                    for i in 0..150_000u64 {
                        let item = i * 2 + worker;
                        let before = f.epoch();
                        f.insert(&item);
                        recent.push_back((item, before));
                        let missed: Vec<u64> = recent
                            .iter()
                            .rev()
                            .take(8)
                            .filter(|(x, _)| !f.contains(x))
                            .map(|&(_, e)| e)
                            .collect();
                        // Read after the lookups: an item is owed to them
                        // if its generation (at least the epoch before its
                        // insert) had not begun to be cleared by then.
                        let after = f.epoch();
                        lost += missed.iter().filter(|&&e| after <= e + g - 2).count();
                        while recent.front().is_some_and(|&(_, e)| e + g - 2 < after) {
                            recent.pop_front();
                        }
                    }
                    lost
                })
            })
            .collect();
        let lost: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
        assert_eq!(lost, 0, "{shape:?}");
        assert!(f.epoch() > 500, "{shape:?}: rotated {} times", f.epoch());
    }
}

#[test]
fn a_time_window_remembers_its_duration_and_forgets_by_its_horizon() {
    let window = Duration::from_secs(100);
    let t = window.as_nanos() as u64;
    for shape in [
        (Layout::CacheLine, 4),
        (Layout::Compact, 5),
        (Layout::CacheLine, 2),
    ] {
        let (now, clock) = test_clock();
        let f: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(2_000, 0.01)
            .seed(3)
            .layout(shape.0)
            .generations(shape.1)
            .time_window(window)
            .clock(clock)
            .build()
            .unwrap();
        let g = u64::from(shape.1);
        let horizon = t + t / 256;
        let horizon = horizon * g / (g - 1) + 1;
        // 1000 items per window, one every t / 1000, for ten windows.
        let mut inserted: Vec<(u64, u64)> = Vec::new();
        let (mut missing, mut stale_found, mut stale) = (0, 0, 0);
        for i in 0..10_000u64 {
            let at = i * (t / 1000);
            now.store(at, Ordering::Relaxed);
            f.insert(&i);
            inserted.push((i, at));
            if i % 50 == 0 {
                for &(item, when) in &inserted {
                    if at - when < t {
                        missing += usize::from(!f.contains(&item));
                    } else if at - when >= horizon {
                        stale += 1;
                        stale_found += usize::from(f.contains(&item));
                    }
                }
            }
        }
        assert_eq!(
            missing, 0,
            "{shape:?}: items younger than the window missed"
        );
        assert!(stale > 100_000, "{shape:?}");
        assert!(
            (stale_found as f64) < stale as f64 * rate_bound(0.01, stale as u64),
            "{shape:?}: {stale_found} of {stale} items past the horizon found"
        );
        // After a long idle stretch every generation has expired: nothing
        // is found, though nothing rotated meanwhile.
        let epoch = f.epoch();
        now.store(200 * t, Ordering::Relaxed);
        let found = (0..10_000u64).filter(|i| f.contains(i)).count();
        assert_eq!(found, 0, "{shape:?}");
        assert_eq!(f.epoch(), epoch, "{shape:?}: a lookup rotated");
        // The next insert rotates once and starts afresh.
        assert!(f.insert(&1));
        assert_eq!(f.epoch(), epoch + 1);
        assert!(f.contains(&1) && !f.contains(&2));
    }
}

#[test]
fn manual_rotation_moves_only_on_advance_and_replays_exactly() {
    let make = || -> WindowedBloomFilter<u64> {
        WindowedBloomFilter::builder(1_000, 0.01)
            .seed(5)
            .manual_rotation()
            .build()
            .unwrap()
    };
    let (primary, replica) = (make(), make());
    assert_eq!(primary.rotation(), Rotation::Manual);
    for i in 0..20_000u64 {
        let new = primary.insert(&i);
        assert_eq!(replica.insert(&i), new);
        if i % 700 == 699 {
            primary.advance();
            replica.advance();
        }
    }
    assert_eq!(primary.epoch(), 28);
    assert_eq!(primary.epoch(), replica.epoch());
    assert_eq!(primary.generation_len(), replica.generation_len());
    assert_eq!(primary.generation_len(), 20_000 - 28 * 700);
    let differ = (0..20_000u64)
        .chain((0..100_000).map(absent))
        .filter(|i| primary.contains(i) != replica.contains(i))
        .count();
    assert_eq!(differ, 0);
}

/// Under `Layout::Word` one `fetch_or` decides: of two threads inserting
/// the same items at once, exactly one is told each is new (no rotation
/// falls between them here).
#[test]
fn word_layout_tells_exactly_one_racing_insert_it_is_new() {
    for refresh in [true, false] {
        let f = Arc::new(filter(1_000_000, 0.01, (Layout::Word, 4)));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    (0..200_000u64)
                        .map(|i| {
                            if refresh {
                                f.insert(&i)
                            } else {
                                f.insert_if_new(&i)
                            }
                        })
                        .collect::<Vec<bool>>()
                })
            })
            .collect();
        let results: Vec<Vec<bool>> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let both = (0..200_000)
            .filter(|&i| results[0][i] && results[1][i])
            .count();
        let either = (0..200_000)
            .filter(|&i| results[0][i] || results[1][i])
            .count();
        assert_eq!(both, 0, "refresh {refresh}: an item new to both racers");
        assert!(either > 199_000, "refresh {refresh}: {either}");
        assert_eq!(f.epoch(), 0);
    }
}

#[test]
fn an_item_inserted_again_starts_its_lifetime_over() {
    let f = filter(100, 0.01, (Layout::CacheLine, 4));
    assert!(f.insert(&u64::MAX));
    for i in 0..10_000u64 {
        f.insert(&i);
        if i % 50 == 0 {
            assert!(!f.insert(&u64::MAX), "seen within the window");
        }
    }
    assert!(f.contains(&u64::MAX));
}

#[test]
fn bad_input_is_an_error() {
    let build = |window, rate| WindowedBloomFilter::<u64>::builder(window, rate).seed(1);
    assert_eq!(build(0, 0.01).build().unwrap_err(), Error::ZeroWindow);
    for rate in [0.0, 1.0, -0.5, f64::NAN, 2.0] {
        assert!(matches!(
            build(100, rate).build(),
            Err(Error::InvalidFalsePositiveRate { .. })
        ));
    }
    for (layout, generations) in [
        (Layout::CacheLine, 0),
        (Layout::CacheLine, 1),
        (Layout::CacheLine, 3),
        (Layout::CacheLine, 16),
        (Layout::Compact, 1),
        (Layout::Compact, 17),
    ] {
        assert_eq!(
            build(100, 0.01)
                .layout(layout)
                .generations(generations)
                .build()
                .unwrap_err(),
            Error::InvalidGenerations {
                generations,
                layout
            }
        );
    }
    assert_eq!(
        build(100, 0.01)
            .layout(Layout::Word)
            .generations(5)
            .build()
            .unwrap_err(),
        Error::InvalidGenerations {
            generations: 5,
            layout: Layout::Word
        }
    );
    for duration in [
        Duration::ZERO,
        Duration::MAX,
        Duration::from_secs(u64::MAX / 2),
    ] {
        assert!(matches!(
            build(100, 0.01).time_window(duration).build(),
            Err(Error::InvalidWindowDuration { .. })
        ));
    }
    assert!(matches!(
        build(usize::MAX, 0.01).build(),
        Err(Error::TooLarge { .. })
    ));
    for err in [
        Error::ZeroWindow,
        Error::InvalidWindowDuration {
            duration: Duration::ZERO,
        },
        Error::InvalidGenerations {
            generations: 3,
            layout: Layout::CacheLine,
        },
    ] {
        assert!(err.to_string().contains("pass"), "{err}");
    }
}

/// The expected rate of a filter built at a tiny target is its own, above
/// 0 and at most the target (before, the union of the generations' rates
/// rounded to 0 below about 1e-17: a window of 1 at 1e-12 reported 0, and
/// the sizing took any rate under that for reached).
#[test]
fn a_tiny_target_is_sized_and_reported_as_it_is() {
    for layout in [Layout::CacheLine, Layout::Word, Layout::Compact] {
        for rate in [1e-12, 1e-15, 1e-20] {
            for window in [1, 1000] {
                let built = WindowedBloomFilter::<u64>::builder(window, rate)
                    .seed(1)
                    .layout(layout)
                    .build();
                let Ok(f) = built else {
                    // Refused as every filter refuses what it cannot hold.
                    assert!(matches!(
                        built,
                        Err(Error::TooLarge { .. } | Error::AllocationFailed { .. })
                    ));
                    continue;
                };
                let expected = f.expected_fpr();
                assert!(
                    expected > 0.0 && expected <= rate,
                    "{layout:?} window {window} at {rate:e}: {expected:e}"
                );
            }
        }
    }
}

#[test]
fn a_saved_filter_answers_and_rotates_as_the_original() {
    for shape in SHAPES {
        let f = filter(5_000, 0.01, shape);
        for i in 0..23_456u64 {
            f.insert(&i);
        }
        let mut bytes = Vec::new();
        f.write_to(&mut bytes).unwrap();
        let g = WindowedBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap();
        assert_eq!(format!("{g:?}"), format!("{f:?}"));
        assert_eq!(
            (g.epoch(), g.generation_len()),
            (f.epoch(), f.generation_len())
        );
        // Both go on alike: same answers, same rotations.
        for i in 20_000..40_000u64 {
            assert_eq!(f.insert(&i), g.insert(&i), "{shape:?} at {i}");
        }
        assert_eq!(f.epoch(), g.epoch());
        let differ = (0..40_000u64)
            .chain((0..50_000).map(absent))
            .filter(|i| f.contains(i) != g.contains(i))
            .count();
        assert_eq!(differ, 0, "{shape:?}");
    }
}

#[test]
fn a_saved_time_window_keeps_its_rotation_and_its_items() {
    let f: WindowedBloomFilter<str> = WindowedBloomFilter::builder(1_000, 0.01)
        .seed(9)
        .time_window(Duration::from_secs(3600))
        .build()
        .unwrap();
    f.insert("kept");
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    let g = WindowedBloomFilter::<str>::read_from(bytes.as_slice()).unwrap();
    assert_eq!(g.rotation(), Rotation::Time(Duration::from_secs(3600)));
    assert!(g.contains("kept"));
    assert!(!g.contains("never"));
    let manual: WindowedBloomFilter<str> = WindowedBloomFilter::builder(1_000, 0.01)
        .manual_rotation()
        .build()
        .unwrap();
    let mut bytes = Vec::new();
    manual.write_to(&mut bytes).unwrap();
    let loaded = WindowedBloomFilter::<str>::read_from(bytes.as_slice()).unwrap();
    assert_eq!(loaded.rotation(), Rotation::Manual);
}

/// The saved format a piece at a time: the same bytes as `write_to`, the
/// fields whole in the first piece however small the pieces, and pieces
/// made across a rotation still load.
#[test]
fn a_save_in_pieces_is_the_whole_save() {
    for shape in SHAPES {
        let f = filter(3_000, 0.01, shape);
        for i in 0..7_777u64 {
            f.insert(&i);
        }
        for max in [7, 4096] {
            let mut cursor = atomic_bloom::SaveCursor::default();
            let first = f.write_chunk(&mut cursor, max);
            assert!(first.len() >= 84 + 8 * shape.1 as usize + 17, "{shape:?}");
            let mut pieces = first;
            loop {
                let piece = f.write_chunk(&mut cursor, max);
                if piece.is_empty() {
                    break;
                }
                assert!(piece.len() <= max);
                pieces.extend(piece);
            }
            let mut whole = Vec::new();
            f.write_to(&mut whole).unwrap();
            assert_eq!(pieces, whole, "{shape:?} in pieces of {max}");
            assert_eq!(cursor.offset(), f.saved_len());
        }
        let mut cursor = atomic_bloom::SaveCursor::default();
        let mut pieces = f.write_chunk(&mut cursor, 200);
        f.advance();
        f.insert(&u64::MAX);
        loop {
            let piece = f.write_chunk(&mut cursor, 4096);
            if piece.is_empty() {
                break;
            }
            pieces.extend(piece);
        }
        let loaded = WindowedBloomFilter::<u64>::read_from(pieces.as_slice()).unwrap();
        assert_eq!(
            loaded.epoch() + 1,
            f.epoch(),
            "{shape:?}: the first piece's state"
        );
    }
}

#[test]
fn damaged_saved_filters_are_refused() {
    let f = filter(1_000, 0.01, (Layout::CacheLine, 4));
    f.insert(&1);
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    // A bit in the bit array (a flip in a field is refused by its check).
    let mut flipped = bytes.clone();
    let in_the_bits = bytes.len() - 100;
    flipped[in_the_bits] ^= 1;
    assert!(matches!(
        WindowedBloomFilter::<u64>::read_from(flipped.as_slice()),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(matches!(
        WindowedBloomFilter::<u64>::read_from(&bytes[..bytes.len() - 10]),
        Err(Error::Truncated { .. })
    ));
    assert!(matches!(
        atomic_bloom::BloomFilter::<u64>::read_from(bytes.as_slice()),
        Err(Error::WrongKind {
            found: "WindowedBloomFilter",
            ..
        })
    ));
}

/// Found by the fuzzer: a count window with a non-zero end loaded and
/// wrote back other bytes; a time window with an end near `i64::MIN`
/// overflowed at its next rotation.
#[test]
fn saved_generation_ends_are_checked() {
    // Offsets of FORMAT.md, kind 5: the ends follow 56 bytes of fields.
    let ends_at = saved::body_start() + 56;
    let count = filter(1_000, 0.01, (Layout::CacheLine, 4));
    let mut bytes = Vec::new();
    count.write_to(&mut bytes).unwrap();
    bytes[ends_at + 7] = 0x40;
    saved::reseal(&mut bytes);
    assert_eq!(
        WindowedBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap_err(),
        Error::InvalidField {
            field: "generation end",
            value: 0x40 << 56
        }
    );
    let timed: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
        .seed(1)
        .time_window(Duration::from_secs(60))
        .build()
        .unwrap();
    timed.insert(&1);
    let mut bytes = Vec::new();
    timed.write_to(&mut bytes).unwrap();
    bytes[ends_at..ends_at + 8].copy_from_slice(&i64::MIN.to_le_bytes());
    saved::reseal(&mut bytes);
    let loaded = WindowedBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap();
    assert!(
        loaded.insert(&2),
        "an expired generation rotates without overflow"
    );
    assert!(!loaded.contains(&1));
    loaded.advance();
}

#[test]
fn a_windowed_frontier_saves_its_queue_and_its_window() {
    let filter = WindowedBloomFilter::builder(1_000, 0.01)
        .seed(4)
        .layout(Layout::Word)
        .build()
        .unwrap();
    let frontier: atomic_bloom::Frontier<u64> = atomic_bloom::Frontier::from_windowed(filter);
    for i in 0..1_500u64 {
        frontier.push(i);
    }
    for _ in 0..700 {
        frontier.pop();
    }
    let mut bytes = Vec::new();
    frontier.write_to(&mut bytes).unwrap();
    let loaded = atomic_bloom::Frontier::<u64>::read_from(bytes.as_slice()).unwrap();
    assert_eq!(loaded.len(), frontier.len());
    assert_eq!(loaded.capacity(), 1_000);
    let differ = (0..3_000u64)
        .filter(|i| loaded.seen(i) != frontier.seen(i))
        .count();
    assert_eq!(differ, 0);
    // Both re-admit alike as they go on.
    for i in 0..3_000u64 {
        assert_eq!(loaded.push(i), frontier.push(i), "at {i}");
    }
}

/// A filter saved while a rotation was clearing its slot: the loader
/// completes the rotation (the slot's generation is forgotten).
#[test]
fn a_rotation_under_way_in_a_saved_filter_is_completed_on_load() {
    let f: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
        .seed(5)
        .generations(2)
        .manual_rotation()
        .build()
        .unwrap();
    f.insert(&1);
    f.advance();
    f.insert(&2);
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    // The rotating byte follows the epoch (FORMAT.md, kind 5).
    let rotating_at = saved::body_start() + 56 + 8 * 2 + 8;
    assert_eq!(bytes[rotating_at], 0);
    bytes[rotating_at] = 1;
    saved::reseal(&mut bytes);
    let loaded = WindowedBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap();
    assert_eq!(loaded.epoch(), 2);
    assert_eq!(loaded.generation_len(), 0);
    assert!(!loaded.contains(&1), "generation 0 was cleared");
    assert!(loaded.contains(&2));
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trip() {
    let f = filter(1_000, 0.01, (Layout::Compact, 5));
    for i in 0..3_000u64 {
        f.insert(&i);
    }
    let json = serde_json::to_string(&f).unwrap();
    let g: WindowedBloomFilter<u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(g.epoch(), f.epoch());
    assert!((2_000..3_000u64).all(|i| g.contains(&i)));
}

#[test]
fn bulk_and_parallel_inserts_agree_with_one_at_a_time() {
    use rayon::prelude::*;
    let items: Vec<u64> = (0..5_000).collect();
    let one = filter(10_000, 0.01, (Layout::CacheLine, 4));
    let many = filter(10_000, 0.01, (Layout::CacheLine, 4));
    let expected: Vec<bool> = items.iter().map(|i| one.insert(i)).collect();
    assert_eq!(many.insert_many(&items), expected);
    assert_eq!(many.contains_many(&items), vec![true; items.len()]);
    let par = filter(10_000, 0.01, (Layout::Compact, 5));
    let new = par.par_insert(items.par_iter());
    assert!(new > 4_950);
    assert!(items.iter().all(|i| par.contains(i)));
}

#[test]
fn it_is_send_and_sync() {
    fn shared<F: Send + Sync>() {}
    shared::<WindowedBloomFilter<str>>();
    shared::<WindowedBloomFilter<[u8]>>();
}

/// One thread rotates on exactly the new item that fills a generation,
/// for a generation large enough that counting checks for a full
/// generation only at a multiple of its step or near the end (100k items:
/// a step of 16), and for a filter loaded mid-generation, whose carried
/// count brings the end nearer. Counting late would let a generation hold
/// more than its share (a higher rate than sized for); early, forget
/// items inside the window.
#[test]
fn one_thread_rotates_on_exactly_the_item_that_fills_a_generation() {
    let f = WindowedBloomFilter::<u64>::builder(300_000, 0.01)
        .seed(5)
        .build()
        .unwrap();
    let capacity = f.generation_capacity();
    assert_eq!(capacity, 100_000);
    let check = |f: &WindowedBloomFilter<u64>, keys: std::ops::Range<u64>| {
        let mut rotations = 0;
        for key in keys {
            let (epoch, len) = (f.epoch(), f.generation_len());
            f.insert(&key);
            if f.epoch() != epoch {
                assert_eq!(len + 1, capacity, "rotated at {len} + 1 items (key {key})");
                assert_eq!(f.generation_len(), 0);
                rotations += 1;
            } else {
                assert!(
                    f.generation_len() < capacity,
                    "key {key}: full, not rotated"
                );
            }
        }
        rotations
    };
    assert_eq!(check(&f, 0..250_123), 2);
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    let loaded = WindowedBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap();
    assert_eq!(loaded.generation_len(), f.generation_len());
    assert!(check(&loaded, 250_123..520_000) >= 2);
    assert!(check(&f, 250_123..520_000) >= 2);
    assert_eq!(loaded.epoch(), f.epoch());
}

/// Issue 34, item 8: a file whose epoch is 2^59 - 2 loaded and never
/// rotated again (after 100k inserts into a 100-item window, every absent
/// probe answered yes); `RESTORE` reaches it. An epoch past the last one a
/// loaded filter may start at is refused; the last one loads and rotates.
#[test]
fn a_saved_epoch_the_filter_cannot_rotate_past_is_refused() {
    let g = 4;
    let epoch_at = saved::body_start() + 56 + 8 * g;
    let f = filter(100, 0.01, (Layout::CacheLine, g as u32));
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    let with_epoch = |epoch: u64| {
        let mut bytes = bytes.clone();
        bytes[epoch_at..epoch_at + 8].copy_from_slice(&epoch.to_le_bytes());
        saved::reseal(&mut bytes);
        WindowedBloomFilter::<u64>::read_from(bytes.as_slice())
    };
    let max = WindowedBloomFilter::<u64>::MAX_LOADED_EPOCH;
    for epoch in [(1 << 59) - 2, max + 1] {
        let err = with_epoch(epoch).unwrap_err();
        assert_eq!(err, Error::EpochOutOfRange { epoch, max });
        assert!(err.to_string().contains("rotate"), "{err}");
    }
    let last = with_epoch(max).unwrap();
    for i in 0..100_000u64 {
        last.insert(&i);
    }
    assert!(last.epoch() > max + 1_000);
    let found = (0..10_000).filter(|&i| last.contains(&absent(i))).count();
    assert!(found < 500, "{found} of 10,000 absent items found");
}

/// Issue 35 for the windowed filter: `clear(&self)` (safe against
/// rotations racing it), `Clone` (a snapshot), `Eq` (same shape, state and
/// bits: a filter saved and loaded equals its original), `Extend`, and a
/// `Debug` that reads no bits.
#[test]
fn clear_clone_eq_extend_and_debug() {
    for shape in SHAPES {
        let f = Arc::new(filter(300, 0.01, shape));
        // Racing clears: two threads insert (generations of 100 or so
        // rotate often) while this one clears; nothing deadlocks or panics,
        // and afterwards the filter keeps its window.
        let workers: Vec<_> = (0..2u64)
            .map(|worker| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        f.insert(&(i * 2 + worker));
                    }
                })
            })
            .collect();
        for _ in 0..50 {
            f.clear();
        }
        for worker in workers {
            worker.join().unwrap();
        }
        f.clear();
        let kept = (0..40_000u64).filter(|i| f.contains(i)).count();
        assert_eq!(kept, 0, "{shape:?}: items kept by a clear");
        let new = (0..300u64).filter(|&i| f.insert(&absent(i))).count();
        assert!(new >= 290, "{shape:?}: {new} of 300 new after a clear");
        assert!((0..300u64).all(|i| f.contains(&absent(i))), "{shape:?}");

        let copy = (*f).clone();
        assert!(copy == *f, "{shape:?}: a clone differs");
        copy.insert(&absent(1_000));
        assert!(copy != *f && !f.contains(&absent(1_000)), "{shape:?}");
        let tried = f.try_clone().unwrap();
        assert!(tried == *f);

        let mut bytes = Vec::new();
        f.write_to(&mut bytes).unwrap();
        let loaded = WindowedBloomFilter::<u64>::read_from(bytes.as_slice()).unwrap();
        assert!(loaded == *f, "{shape:?}: a loaded filter differs");
        loaded.advance();
        assert!(loaded != *f);

        let mut extended = filter(300, 0.01, shape);
        let items = [5u64, 6, 7];
        extended.extend(&items);
        assert!(items.iter().all(|i| extended.contains(i)));
        let debug = format!("{extended:?}");
        assert!(
            debug.contains("epoch") && debug.contains("generation_len: 3"),
            "{debug}"
        );
    }
    // Debug reads no bits: instant on a filter of 400 MiB.
    let big: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(200_000_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let _ = format!("{big:?}");
    assert!(started.elapsed() < Duration::from_millis(50));
}
