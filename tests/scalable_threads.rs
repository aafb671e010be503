//! ScalableBloomFilter: the total false-positive rate stays at or under its
//! target when several threads insert together, for every seed.
//!
//! Each run releases 2 or 4 threads at once (a barrier), each inserting its
//! own chunk of distinct keys, so growths happen while other threads
//! insert. Then it probes keys never inserted. The promise is "at or under
//! P" for any run, so every seed must pass the bound of the other rate
//! tests (`target * 1.15 + 6 sigma`), not their mean; the worst is printed.
//! Every stage but the newest must also end close to the fill at which it
//! counts as full: a stage that others fill on past it is what breaks the
//! rate.
//!
//! Each run asks for a rate of its own, a hair under the target, so that
//! no run finds its stages' sizes remembered from an earlier one (the
//! process-wide sizing memo): a filter sizes each stage's rate the first
//! time it meets it, as the first filter a service builds does, and that
//! sizing (about half a millisecond) is a window in which a growth used to
//! let the other threads fill the full stage on.

use std::sync::Barrier;

use atomic_bloom::ScalableBloomFilter;

/// Keys at and above this were never inserted.
const PROBE_BASE: u64 = 1 << 40;

/// Seeds per thread count.
const SEEDS: u64 = 20;

/// One configuration: the filter's initial capacity and total rate, the
/// keys inserted and the absent keys probed per run.
struct Case {
    initial: usize,
    rate: f64,
    keys: u64,
    probes: u64,
}

/// Stages of more than 64 lines count as full at their set-bit mark (the
/// smaller ones by the rate of their bits, which unevenly loaded blocks
/// reach a few percent before or after the mark): more than 64 lines of
/// bits and an 8-slot tally take more memory than this, 64 lines and a
/// one-slot tally less.
const LARGE_STAGE_BYTES: usize = 64 * 64 + 256;

/// A run's outcome: the measured rate, the bound it must meet, and the
/// most a finished large stage went past its fill (set bits over the mark).
struct Run {
    rate: f64,
    bound: f64,
    overfill: f64,
}

/// `threads` threads, released together, insert keys `0..case.keys`,
/// thread `t` the chunk `t * keys / threads ..`; then every key is checked
/// and `case.probes` absent keys are probed (by the same threads, in
/// chunks).
fn run(case: &Case, threads: u64, seed: u64) -> Run {
    // Under the target by at most 1e-10 of it: a new rate, for the memo.
    let rate = case.rate * (1.0 - (threads * SEEDS + seed) as f64 * 1e-12);
    let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(case.initial, rate)
        .seed(seed)
        .build()
        .expect("valid parameters");
    let barrier = Barrier::new(threads as usize);
    let chunk = |total: u64, thread: u64| total * thread / threads..total * (thread + 1) / threads;
    std::thread::scope(|scope| {
        for thread in 0..threads {
            let (filter, barrier) = (&filter, &barrier);
            scope.spawn(move || {
                barrier.wait();
                for key in chunk(case.keys, thread) {
                    filter.insert(&key);
                }
            });
        }
    });
    let (missing, false_positives) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let filter = &filter;
                scope.spawn(move || {
                    let missing = chunk(case.keys, thread)
                        .filter(|key| !filter.contains(key))
                        .count();
                    let false_positives = chunk(case.probes, thread)
                        .filter(|i| filter.contains(&(PROBE_BASE + i)))
                        .count();
                    (missing, false_positives)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .fold((0, 0), |sum, run| (sum.0 + run.0, sum.1 + run.1))
    });
    assert_eq!(
        missing, 0,
        "seed {seed}, {threads} threads: false negatives"
    );
    let estimated = filter.estimated_fpr();
    assert!(
        estimated <= case.rate,
        "seed {seed}, {threads} threads: estimated_fpr {estimated} over {}",
        case.rate
    );
    let stats = filter.stage_stats();
    let overfill = stats[..stats.len() - 1]
        .iter()
        .filter(|stage| stage.memory_bytes > LARGE_STAGE_BYTES)
        .map(|stage| stage.set_bits as f64 / stage.set_bits_when_full as f64)
        .fold(0.0, f64::max);
    let sigma = (case.rate * (1.0 - case.rate) / case.probes as f64).sqrt();
    Run {
        rate: false_positives as f64 / case.probes as f64,
        bound: case.rate * 1.15 + 6.0 * sigma,
        overfill,
    }
}

/// A finished large stage may end this far past its mark: the sampled
/// tally's error (about 0.3% at the fill, one standard deviation), its lag
/// (each thread sums it every 1/1024 of the fill it adds), and one item per
/// thread whose insert loaded the stage list before the stage was sealed.
/// Measured: at most 1.002 with 1, 2 and 4 threads; a growth that lets
/// others go on inserting into the full stage ended them at 1.125.
const MAX_OVERFILL: f64 = 1.02;

/// Runs every seed at 2 and 4 threads; asserts each run's rate is within
/// its bound and each finished large stage within [`MAX_OVERFILL`] of its
/// mark.
fn check(case: Case) {
    for threads in [2, 4] {
        let runs: Vec<(u64, Run)> = (0..SEEDS)
            .map(|seed| (seed, run(&case, threads, seed)))
            .collect();
        let (worst_seed, worst) = runs
            .iter()
            .max_by(|a, b| a.1.rate.total_cmp(&b.1.rate))
            .unwrap();
        let most_overfull = runs.iter().map(|(_, run)| run.overfill).fold(0.0, f64::max);
        eprintln!(
            "new({}, {}), {} keys, {threads} threads: worst rate {:.5} (seed {worst_seed}), \
             bound {:.5}; a finished large stage at most {most_overfull:.4}x its fill",
            case.initial, case.rate, case.keys, worst.rate, worst.bound
        );
        for (seed, run) in &runs {
            assert!(
                run.rate <= run.bound,
                "new({}, {}), {threads} threads, seed {seed}: measured {:.5} over {:.5}",
                case.initial,
                case.rate,
                run.rate,
                run.bound
            );
            assert!(
                run.overfill <= MAX_OVERFILL,
                "new({}, {}), {threads} threads, seed {seed}: a finished stage ended at \
                 {:.4}x its fill",
                case.initial,
                case.rate,
                run.overfill
            );
        }
    }
}

#[test]
fn threads_keep_the_total_rate_at_1_percent() {
    check(Case {
        initial: 100,
        rate: 0.01,
        keys: 30_000,
        probes: 1_000_000,
    });
}

/// Eight stages (1,000 to 128,000 items), the larger ones counted by a
/// sampled tally.
#[test]
fn threads_keep_the_total_rate_at_0_1_percent() {
    check(Case {
        initial: 1_000,
        rate: 0.001,
        keys: 250_000,
        probes: 4_000_000,
    });
}

/// Ten stages, the last two of 256,000 and 512,000 items: about a minute
/// of CPU, so run on demand (`cargo test --test scalable_threads --
/// --ignored`).
#[test]
#[ignore = "heavy: ten stages, 40 runs of 4M probes"]
fn threads_keep_the_total_rate_at_0_1_percent_over_ten_stages() {
    check(Case {
        initial: 1_000,
        rate: 0.001,
        keys: 1_000_000,
        probes: 4_000_000,
    });
}
