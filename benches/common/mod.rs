//! Shared by the benches.

use std::time::{Duration, Instant};

/// Runs `op` over `keys`, split into `threads` contiguous chunks; returns the
/// wall time and the number of `true` results.
pub fn run_split(
    threads: usize,
    keys: std::ops::Range<u64>,
    op: impl Fn(u64) -> bool + Sync,
) -> (Duration, usize) {
    let count = |range: std::ops::Range<u64>| range.filter(|&key| op(key)).count();
    let start = Instant::now();
    let hits = if threads == 1 {
        count(keys)
    } else {
        let chunk = (keys.end - keys.start) / threads as u64;
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let from = keys.start + t * chunk;
                    let to = if t + 1 == threads as u64 {
                        keys.end
                    } else {
                        from + chunk
                    };
                    let count = &count;
                    scope.spawn(move || count(from..to))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        })
    };
    (start.elapsed(), hits)
}
