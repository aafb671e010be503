//! ScalableBloomFilter: the total rate stays at the target after growing
//! 1000× past the first stage; no item is lost across stage boundaries,
//! also with 4 threads; exactly one stage per boundary; the memory limit
//! holds.

mod common;

use std::collections::HashSet;

use atomic_bloom::{Error, Layout, ScalableBloomFilter};

/// Keys at and above this were never inserted.
const PROBE_BASE: u64 = 1 << 40;
const INITIAL: usize = 1_000;

fn scalable(rate: f64, growth: usize, seed: u64) -> ScalableBloomFilter<u64> {
    ScalableBloomFilter::builder(INITIAL, rate)
        .growth_factor(growth)
        .seed(seed)
        .build()
        .expect("valid parameters")
}

/// Inserts `items` keys, checks every one is found, and returns the
/// false positives among `probes` keys never inserted.
fn grow_and_probe(f: &ScalableBloomFilter<u64>, items: u64, probes: u64) -> u64 {
    for key in 0..items {
        f.insert(&key);
    }
    let missing = (0..items).filter(|key| !f.contains(key)).count();
    assert_eq!(missing, 0, "false negatives after growing");
    (PROBE_BASE..PROBE_BASE + probes)
        .filter(|key| f.contains(key))
        .count() as u64
}

fn check_total_rate(target: f64, growth: usize, probes: u64) {
    let f = scalable(target, growth, 0x5ca1e);
    let items = 1000 * INITIAL as u64;
    let false_positives = grow_and_probe(&f, items, probes);
    let rate = false_positives as f64 / probes as f64;
    let sigma = (target * (1.0 - target) / probes as f64).sqrt();
    let bound = target * 1.15 + 6.0 * sigma;
    assert!(
        rate <= bound,
        "P {target}, growth {growth}: measured {rate:.6} over {bound:.6} with {} stages",
        f.stages()
    );
    assert!(f.estimated_fpr() <= target, "{}", f.estimated_fpr());
    // Memory within 2.5x of a fixed filter sized for everything inserted
    // (3x with growth 4, whose newest stage may hold 4x what it is given).
    let fixed = atomic_bloom::BloomFilter::<u64>::new(items as usize, target).unwrap();
    let ratio = f.memory_bytes() as f64 / fixed.memory_bytes() as f64;
    let memory_bound = if growth == 2 { 2.5 } else { 3.0 };
    assert!(
        ratio <= memory_bound,
        "P {target}, growth {growth}: {ratio:.2}x a fixed filter's memory"
    );
    // Growth really happened: about log_s(1000) stages, fewer with rounding.
    let expected_stages = if growth == 2 { 6..=11 } else { 3..=6 };
    assert!(
        expected_stages.contains(&f.stages()),
        "{} stages",
        f.stages()
    );
    let estimate = f.len_estimate() as f64;
    assert!(
        (estimate - items as f64).abs() < 0.03 * items as f64,
        "estimate {estimate}"
    );
}

#[test]
fn total_rate_1_percent_growth_2() {
    check_total_rate(0.01, 2, 1_000_000);
}

#[test]
fn total_rate_1_percent_growth_4() {
    check_total_rate(0.01, 4, 1_000_000);
}

#[test]
fn total_rate_0_1_percent_growth_2() {
    check_total_rate(0.001, 2, 4_000_000);
}

#[test]
fn total_rate_0_1_percent_growth_4() {
    check_total_rate(0.001, 4, 4_000_000);
}

/// Pins the exact outcome for a fixed seed: any change to hashing, sizing,
/// stage rates or the growth trigger shows up here.
#[test]
fn golden_false_positive_count() {
    let f = scalable(0.01, 2, 42);
    let false_positives = grow_and_probe(&f, 100_000, 1_000_000);
    assert_eq!((f.stages(), false_positives), (GOLDEN_STAGES, GOLDEN_COUNT));
}
// With the default `Sizing::Exact` (power-of-two stages, which hold more
// than their share, gave 6 stages and 5,834).
const GOLDEN_STAGES: usize = 7;
const GOLDEN_COUNT: u64 = 6_134;

#[test]
fn insert_reports_new_once_across_stages() {
    let f = scalable(0.01, 2, 3);
    let mut reference = HashSet::new();
    for i in 0..20_000u64 {
        let key = i % 15_000; // the last 5,000 are duplicates
        let new = f.insert(&key);
        if !reference.insert(key) {
            assert!(!new, "duplicate {key} reported new");
        }
    }
    assert!(f.stages() >= 4);
}

#[test]
fn four_threads_across_boundaries_lose_nothing() {
    for config in common::LAYOUTS {
        let f = ScalableBloomFilter::<str>::builder(500, 0.01)
            .layout(config.layout)
            .sizing(config.sizing)
            .seed(11)
            .build()
            .unwrap();
        std::thread::scope(|scope| {
            for thread in 0..4u64 {
                let f = &f;
                scope.spawn(move || {
                    // Overlapping ranges: every URL is inserted by two threads.
                    for i in thread * 25_000..thread * 25_000 + 50_000 {
                        f.insert(&common::url(i % 100_000));
                    }
                });
            }
        });
        let missing = (0..100_000)
            .filter(|&i| !f.contains(&common::url(i)))
            .count();
        assert_eq!(missing, 0, "{config:?}");
        assert!(f.stages() >= 6, "{config:?}: {} stages", f.stages());
        exactly_one_stage_per_boundary(&f);
    }
}

/// Every stage but the newest reached its fill: a boundary that added two
/// stages would leave one of them (nearly) empty. A large stage grows at
/// its set-bit mark, up to the sampled tally's error (under 1%): 10%
/// allowed. A small one (64 lines or fewer) grows when the rate of its
/// bits reaches its target, which unevenly loaded blocks can reach well
/// before the mark: over 400 seeds of a 64-item first stage (3,600 stages,
/// one thread), the lowest fill at growth was 84% of the mark with exact
/// sizing and 80% with power-of-two sizing, so 70% is allowed (a stage
/// skipped by a double append holds next to nothing). With 90% for small
/// stages the racing test below failed by chance, 3 runs in 60.
fn exactly_one_stage_per_boundary<T: ?Sized>(f: &ScalableBloomFilter<T>) {
    let fills: Vec<(usize, usize, bool)> = f
        .stage_stats()
        .iter()
        .map(|s| (s.set_bits, s.set_bits_when_full, s.memory_bytes <= 64 * 64))
        .collect();
    for (index, (set_bits, full_at, small)) in fills[..fills.len() - 1].iter().enumerate() {
        let least_percent = if *small { 70 } else { 90 };
        assert!(
            set_bits * 100 >= full_at * least_percent,
            "stage {index} of {}: {set_bits} set bits, full at {full_at}",
            fills.len()
        );
    }
}

#[test]
fn racing_growth_adds_one_stage_per_boundary() {
    // Tiny first stage, many threads, all inserting distinct keys at once:
    // many inserts find a stage full at the same instant.
    for _ in 0..20 {
        let f = ScalableBloomFilter::<u64>::builder(64, 0.01)
            .seed(5)
            .build()
            .unwrap();
        let threads = 8u64;
        let barrier = std::sync::Barrier::new(threads as usize);
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let (f, barrier) = (&f, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    for i in 0..5_000 {
                        f.insert(&(i * threads + thread));
                    }
                });
            }
        });
        exactly_one_stage_per_boundary(&f);
        let sequential = ScalableBloomFilter::<u64>::builder(64, 0.01)
            .seed(5)
            .build()
            .unwrap();
        for key in 0..5_000 * threads {
            sequential.insert(&key);
        }
        assert!(
            f.stages().abs_diff(sequential.stages()) <= 1,
            "{} stages racing, {} in order: {:?}",
            f.stages(),
            sequential.stages(),
            f.stage_stats()
        );
    }
}

#[test]
fn memory_limit_stops_growth_but_not_inserts() {
    let limit = 256 * 1024;
    let f = ScalableBloomFilter::<u64>::builder(1_000, 0.01)
        .memory_limit(limit)
        .seed(8)
        .build()
        .unwrap();
    // A flood of distinct keys, about twice what the limit holds at the
    // rate: the last stage is overfull but not saturated, so absent keys
    // exist and the search for one below ends.
    let flood = 400_000u64;
    for key in 0..flood {
        f.insert(&key);
    }
    assert!(f.memory_bytes() <= limit, "{} bytes", f.memory_bytes());
    let err = f.growth_error().expect("the flood passed the limit");
    assert!(matches!(err, Error::MemoryLimitReached { limit: l, .. } if l == limit));
    assert!(err.to_string().contains("memory_limit"), "{err}");
    // A new item is refused (one the overfull filter does not already
    // seem to hold); a present one needs no room.
    let absent = (flood..flood + 1_000_000)
        .find(|key| !f.contains(key))
        .expect("an overfull filter still misses some keys");
    assert_eq!(f.try_insert(&absent), Err(err));
    assert!(!f.contains(&absent));
    assert_eq!(f.try_insert(&0), Ok(false));
    // Nothing inserted is lost; the rate is over target, and says so.
    assert!((0..flood).all(|key| f.contains(&key)));
    assert!(f.estimated_fpr() > 0.01);
}

#[test]
fn unlimited_memory_grows_past_the_default() {
    let f = ScalableBloomFilter::<u64>::builder(10, 0.01)
        .unlimited_memory()
        .seed(1)
        .build()
        .unwrap();
    for key in 0..100_000u64 {
        f.insert(&key);
    }
    assert!(f.growth_error().is_none());
    assert!(f.try_insert(&1).is_ok());
}

#[test]
fn bad_options_are_errors() {
    let build = |growth: usize, ratio: f64| {
        ScalableBloomFilter::<str>::builder(1000, 0.01)
            .growth_factor(growth)
            .tightening_ratio(ratio)
            .seed(1)
            .build()
    };
    for growth in [0, 32_769, usize::MAX] {
        assert_eq!(
            build(growth, 0.85).unwrap_err(),
            Error::InvalidGrowthFactor { growth }
        );
    }
    for ratio in [0.0, 0.5, 0.79, 0.91, 1.0, f64::NAN] {
        let err = build(2, ratio).unwrap_err();
        assert!(
            matches!(err, Error::InvalidTighteningRatio { .. }),
            "{ratio}: {err:?}"
        );
        assert!(err.to_string().contains("0.85"));
    }
    assert!(build(4, 0.8).is_ok() && build(2, 0.9).is_ok());
    // RedisBloom's EXPANSION range: any factor from 1 to 32768.
    assert!([1, 3, 8, 32_768]
        .iter()
        .all(|&growth| build(growth, 0.85).is_ok()));
    let err = ScalableBloomFilter::<str>::builder(1_000_000, 0.01)
        .memory_limit(1024)
        .seed(1)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, Error::MemoryLimitTooSmall { limit: 1024, .. }),
        "{err:?}"
    );
    assert_eq!(
        ScalableBloomFilter::<str>::new(0, 0.01).unwrap_err(),
        Error::ZeroCapacity
    );
    assert!(matches!(
        ScalableBloomFilter::<str>::new(10, 1.0).unwrap_err(),
        Error::InvalidFalsePositiveRate { .. }
    ));
}

#[test]
fn word_layout_stages() {
    let f = ScalableBloomFilter::<u64>::builder(1_000, 0.01)
        .layout(Layout::Word)
        .seed(2)
        .build()
        .unwrap();
    let false_positives = grow_and_probe(&f, 100_000, 1_000_000);
    assert!(false_positives as f64 / 1e6 <= 0.01 * 1.15 + 6.0 * (0.01f64 * 0.99 / 1e6).sqrt());
}

#[test]
fn debug_hides_the_seed() {
    let f = ScalableBloomFilter::<u64>::builder(1000, 0.01)
        .seed(0xdead_beef)
        .build()
        .unwrap();
    let text = format!("{f:?}");
    assert!(text.contains("ScalableBloomFilter") && text.contains("stages"));
    assert!(!text.contains(&0xdead_beefu64.to_string()), "{text}");
}

/// The builder refuses a first stage's share that leaves the second stage
/// a rate under 1/1024 of the first's (`1 - 2^-53` at 0.99 planned a
/// second stage of 1.1 TB to 18 PB beside a first of 4 KB), with an error
/// that says what share to pass; every share up to 0.99 builds, at every
/// tightening ratio.
#[test]
fn a_first_stage_share_that_makes_the_second_stage_far_denser_is_refused() {
    let steep = 1.0 - 2f64.powi(-53);
    for growth in [2, 32768] {
        let built = ScalableBloomFilter::<u64>::builder(100_000, 0.99)
            .first_stage_share(steep)
            .growth_factor(growth)
            .layout(Layout::Word)
            .unlimited_memory()
            .build();
        match built {
            Err(error @ Error::SecondStageTooDense { .. }) => {
                assert!(error.to_string().contains("at most"), "{error}")
            }
            other => panic!("growth {growth}: {other:?}"),
        }
    }
    for tightening in [0.8, 0.85, 0.9] {
        for share in [0.5, 0.8, 0.9, 0.99] {
            ScalableBloomFilter::<u64>::builder(1000, 0.01)
                .first_stage_share(share)
                .tightening_ratio(tightening)
                .build()
                .unwrap_or_else(|error| panic!("{share} at {tightening}: {error}"));
        }
        assert!(matches!(
            ScalableBloomFilter::<u64>::builder(1000, 0.01)
                .first_stage_share(0.999)
                .tightening_ratio(tightening)
                .build(),
            Err(Error::SecondStageTooDense { .. })
        ));
    }
}
