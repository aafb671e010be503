//! `ScalableBloomFilter` insert and contains at 1 and 2 threads, growing
//! from n/64 up to n = 1M and 10M items at a 1% total rate, beside
//! growable-bloom-filter in a `Mutex` and bloomcraft's
//! `AtomicScalableBloomFilter` (1M only: at about 1 Mops/s, 10M would take
//! minutes per sample). After the benches, each subject's measured total
//! false-positive rate at n items is printed.
//!
//! Run: `cargo bench --bench scalable`.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use atomic_bloom::ScalableBloomFilter;
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use growable_bloom_filter::GrowableBloom;

mod common;

const RATE: f64 = 0.01;
const SEED: u64 = 0x5ca1;
const THREADS: [usize; 2] = [1, 2];
/// Keys at and above this are never inserted.
const ABSENT: u64 = 1 << 40;

trait Subject: Sync + Sized {
    const NAME: &'static str;
    /// An empty filter that expects `items / 64` items.
    fn fresh(items: u64) -> Self;
    fn insert(&self, key: u64) -> bool;
    fn contains(&self, key: u64) -> bool;
}

impl Subject for ScalableBloomFilter<u64> {
    const NAME: &'static str = "atomic-bloom";
    fn fresh(items: u64) -> Self {
        ScalableBloomFilter::builder(items as usize / 64, RATE)
            .seed(SEED)
            .build()
            .unwrap()
    }
    fn insert(&self, key: u64) -> bool {
        ScalableBloomFilter::insert(self, &key)
    }
    fn contains(&self, key: u64) -> bool {
        ScalableBloomFilter::contains(self, &key)
    }
}

impl Subject for Mutex<GrowableBloom> {
    const NAME: &'static str = "growable-in-mutex";
    fn fresh(items: u64) -> Self {
        Mutex::new(GrowableBloom::new(RATE, items as usize / 64))
    }
    fn insert(&self, key: u64) -> bool {
        self.lock().unwrap().insert(key)
    }
    fn contains(&self, key: u64) -> bool {
        self.lock().unwrap().contains(key)
    }
}

impl Subject for bloomcraft::filters::AtomicScalableBloomFilter<u64> {
    const NAME: &'static str = "bloomcraft-atomic-scalable";
    fn fresh(items: u64) -> Self {
        bloomcraft::filters::AtomicScalableBloomFilter::new(items as usize / 64, RATE).unwrap()
    }
    fn insert(&self, key: u64) -> bool {
        bloomcraft::filters::AtomicScalableBloomFilter::insert(self, &key);
        true
    }
    fn contains(&self, key: u64) -> bool {
        bloomcraft::filters::AtomicScalableBloomFilter::contains(self, &key)
    }
}

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(100));
    group.measurement_time(Duration::from_secs(2));
}

/// A filter holding keys `0..items`, filled on two threads.
fn filled<F: Subject>(items: u64) -> F {
    let filter = F::fresh(items);
    common::run_split(2, 0..items, |key| filter.insert(key));
    filter
}

fn bench_subject<F: Subject>(c: &mut Criterion, items: u64, rates: &mut Vec<String>) {
    let size = format!("{}M", items / 1_000_000);
    for threads in THREADS {
        // Insert `items` fresh keys into an empty filter: every growth is in
        // the timing, the build is not.
        let mut group = c.benchmark_group(format!("scalable/insert_{size}"));
        configure(&mut group);
        group.throughput(Throughput::Elements(items));
        group.bench_function(BenchmarkId::new(F::NAME, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let filter = F::fresh(items);
                        let elapsed = common::run_split(threads, 0..items, |key| {
                            black_box(filter.insert(key))
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
    let filter: F = filled(items);
    for threads in THREADS {
        let mut group = c.benchmark_group(format!("scalable/contains_{size}"));
        configure(&mut group);
        group.throughput(Throughput::Elements(items));
        group.bench_function(BenchmarkId::new(F::NAME, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        common::run_split(threads, items / 2..items * 3 / 2, |key| {
                            filter.contains(key)
                        })
                        .0
                    })
                    .sum()
            })
        });
        group.finish();
    }
    let probes = 1_000_000;
    let false_positives =
        common::run_split(2, ABSENT..ABSENT + probes, |key| filter.contains(key)).1;
    rates.push(format!(
        "{} at {size}: total false-positive rate {:.3}% (target {:.1}%)",
        F::NAME,
        100.0 * false_positives as f64 / probes as f64,
        100.0 * RATE
    ));
}

fn scalable(c: &mut Criterion) {
    let mut rates = Vec::new();
    for items in [1_000_000u64, 10_000_000] {
        bench_subject::<ScalableBloomFilter<u64>>(c, items, &mut rates);
        bench_subject::<Mutex<GrowableBloom>>(c, items, &mut rates);
        if items <= 1_000_000 {
            bench_subject::<bloomcraft::filters::AtomicScalableBloomFilter<u64>>(
                c, items, &mut rates,
            );
        }
    }
    for line in rates {
        eprintln!("{line}");
    }
}

criterion_group!(benches, scalable);
criterion_main!(benches);
