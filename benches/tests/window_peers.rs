//! The Age-Partitioned Bloom Filter figures the docs compare with: its
//! least memory at a rate, by CrowdStrike/apbf's own false-positive
//! formula (`CalculateFalsePositiveRate`), which `benches/windowed.rs`
//! builds it at. The bench's search (`benches/common/window_peers.rs`)
//! against an evaluation of the formula written here otherwise: bottom up,
//! every `(k, l)` tried.

#[path = "../common/window_peers.rs"]
mod window_peers;

use atomic_bloom::DefaultHasher;
use window_peers::{apbf_bits_per_item, apbf_least_memory, apbf_rate, Apbf};

/// Their recurrence, `p(a, i)`: the chance that a lookup which has matched
/// `a` consecutive slices before slice `i` matches `k` in a row, where
/// slice `i` is set with probability `(i + 1) / 2k` while `i < k` (the
/// newest slices are filling) and 1/2 after; no match once `i > l + a`.
/// Filled from the last slice back, the table their memoised recursion
/// reads.
fn false_positive_rate(k: usize, l: usize) -> f64 {
    let slices = k + l + 2;
    let mut p = vec![vec![0.0f64; slices + 1]; k + 1];
    for i in (0..=slices).rev() {
        p[k][i] = 1.0;
        for a in (0..k).rev() {
            p[a][i] = if i > l + a || i == slices {
                0.0
            } else {
                let set = if i < k {
                    (i + 1) as f64 / (2 * k) as f64
                } else {
                    0.5
                };
                set * p[a + 1][i + 1] + (1.0 - set) * p[0][i + 1]
            };
        }
    }
    p[0][0]
}

/// Every `k` to 30 and `l` to 400: the least bits per window item within
/// `rate`, as `(bits, k, l)`.
#[allow(clippy::approx_constant)]
fn least_memory(rate: f64) -> (f64, usize, usize) {
    let mut best = (f64::INFINITY, 0, 0);
    for k in 1..=30 {
        for l in 1..=400 {
            let bits = 1.442695 * (k * (k + l)) as f64 / l as f64;
            if false_positive_rate(k, l) <= rate && bits < best.0 {
                best = (bits, k, l);
            }
        }
    }
    best
}

#[test]
fn the_apbf_formula_evaluated_two_ways_agrees() {
    for (k, l) in [(1, 1), (4, 7), (10, 24), (11, 46), (12, 88), (16, 140)] {
        let (ours, theirs) = (false_positive_rate(k, l), apbf_rate(k, l));
        assert!(
            (ours - theirs).abs() < 1e-12,
            "k {k} l {l}: {ours} {theirs}"
        );
    }
}

/// At 1%: k = 11, l = 46, 19.66 bits per window item at 0.995% (the docs
/// quoted k = 10, l = 24 and 20.4); at 0.1%: k = 16, l = 140, 25.72.
#[test]
fn the_apbf_least_memory_is_k11_l46_at_one_percent() {
    for (rate, k, l, bits) in [(0.01, 11, 46, 19.66), (0.001, 16, 140, 25.72)] {
        let (least, best_k, best_l) = least_memory(rate);
        assert_eq!((best_k, best_l), (k, l), "{rate}");
        assert!((least - bits).abs() < 0.005, "{rate}: {least}");
        assert_eq!(
            apbf_least_memory(rate),
            (k, l),
            "the bench's search, {rate}"
        );
        assert!((apbf_bits_per_item(k, l) - least).abs() < 1e-9);
        assert!(false_positive_rate(k, l) <= rate);
    }
    assert!((false_positive_rate(11, 46) - 0.00995).abs() < 0.00001);
    // The setting quoted before takes more.
    assert!(apbf_bits_per_item(10, 24) > 20.4);
    // The bench's filter, built for a window of 1M at 1%, takes that.
    let apbf = Apbf::new(1_000_000, 0.01, DefaultHasher::with_seed(1));
    let bits = apbf.memory_bytes() as f64 * 8.0 / 1e6;
    assert!((19.66..19.70).contains(&bits), "{bits}");
}
