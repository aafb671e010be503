//! A windowed filter's rotations cost what was written, never what was
//! allocated (issue 34, item 5): the process's resident memory, read from
//! `/proc/self/statm`, barely moves while a large, almost untouched filter
//! rotates through every generation. Alone in its file: resident memory is
//! the whole process's.

use std::time::{Duration, Instant};

use atomic_bloom::{Layout, WindowedBloomFilter};

/// Resident bytes of this process (Linux), or `None` elsewhere.
fn resident() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn rotating_an_idle_filter_commits_no_memory() {
    let Some(before) = resident() else {
        return;
    };
    for (layout, generations) in [(Layout::Compact, 16), (Layout::CacheLine, 8)] {
        // About 512 MiB of bits, allocated zeroed and never touched.
        let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(200_000_000, 0.01)
            .seed(5)
            .layout(layout)
            .generations(generations)
            .manual_rotation()
            .build()
            .unwrap();
        assert!(
            filter.memory_bytes() > 300 << 20,
            "{}",
            filter.memory_bytes()
        );
        // A few items in some generations: their words are cleared, the
        // rest of the array is not written.
        let started = Instant::now();
        for round in 0..3u64 {
            for item in 0..100 {
                filter.insert(&(round * 1_000 + item));
            }
            filter.advance();
        }
        filter.advance_by(u64::from(generations) * 3);
        for round in 0..2 * u64::from(generations) {
            filter.insert(&round);
            filter.advance();
        }
        let took = started.elapsed();
        let grown = resident().unwrap().saturating_sub(before);
        assert!(
            grown < 64 << 20,
            "{layout:?}: resident memory grew {} MiB rotating a {} MiB filter",
            grown >> 20,
            filter.memory_bytes() >> 20
        );
        assert!(
            took < Duration::from_secs(20),
            "{layout:?}: rotations took {took:?}"
        );
        assert!(!filter.contains(&1_001) && filter.contains(&(2 * u64::from(generations) - 1)));
    }
}
