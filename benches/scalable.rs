//! `ScalableBloomFilter` insert and contains at 1 and 2 threads, growing
//! from n/64 up to n = 1M and 10M items at a 1% total rate, beside
//! growable-bloom-filter in a `Mutex` and bloomcraft's
//! `AtomicScalableBloomFilter` (1M only: at about 1 Mops/s, 10M would take
//! minutes per sample). After the benches, each subject's measured total
//! false-positive rate at n items is printed.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench scalable`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

mod common;
#[path = "common/subjects.rs"]
mod subjects;

use common::{Subject, RATE, THREADS};
use subjects::{BloomcraftScalable, Growable, Scalable};

/// Keys at and above this are never inserted.
const ABSENT: u64 = 1 << 40;

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(100));
    group.measurement_time(Duration::from_secs(2));
}

/// Insert and contains of one subject, grown from `items / 64` (`make`
/// builds it so) to `items`; notes its measured total rate in `rates`.
fn bench_subject<F: Subject>(
    c: &mut Criterion,
    name: &str,
    make: fn(usize) -> F,
    items: u64,
    rates: &mut Vec<String>,
) {
    let size = format!("{}M", items / 1_000_000);
    for threads in THREADS {
        // Insert `items` fresh keys into an empty filter: every growth is in
        // the timing, the build is not.
        let mut group = c.benchmark_group(format!("scalable/insert_{size}"));
        configure(&mut group);
        group.throughput(Throughput::Elements(items));
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let filter = make(items as usize);
                        let elapsed = common::run_split(threads, 0..items, |key| {
                            black_box(filter.insert(&key))
                        })
                        .0;
                        drop(filter);
                        elapsed
                    })
                    .sum()
            })
        });
        group.finish();
    }
    // Contains on the grown filter: half present, half absent keys.
    // A filter holding keys `0..items`, filled on two threads.
    let filter = make(items as usize);
    common::run_split(2, 0..items, |key| filter.insert(&key));
    for threads in THREADS {
        let mut group = c.benchmark_group(format!("scalable/contains_{size}"));
        configure(&mut group);
        group.throughput(Throughput::Elements(items));
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                common::timed_runs(iters, threads, items / 2..items * 3 / 2, |key| {
                    filter.contains(&key)
                })
            })
        });
        group.finish();
    }
    let probes = 1_000_000;
    let false_positives =
        common::run_split(2, ABSENT..ABSENT + probes, |key| filter.contains(&key)).1;
    rates.push(format!(
        "{} at {size}: total false-positive rate {:.3}% (target {:.1}%)",
        name,
        100.0 * false_positives as f64 / probes as f64,
        100.0 * RATE
    ));
}

fn scalable(c: &mut Criterion) {
    let mut rates = Vec::new();
    for items in [1_000_000u64, 10_000_000] {
        bench_subject(c, "atomic-bloom", Scalable::new, items, &mut rates);
        bench_subject(c, "growable-in-mutex", Growable::new, items, &mut rates);
        if items <= 1_000_000 {
            let make = BloomcraftScalable::new;
            bench_subject(c, "bloomcraft-atomic-scalable", make, items, &mut rates);
        }
    }
    for line in rates {
        eprintln!("{line}");
    }
}

criterion_group!(benches, scalable);
criterion_main!(benches);
