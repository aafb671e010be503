//! `CountingBloomFilter` insert, remove and contains at 1 and 2 threads,
//! beside bloomcraft's `CountingBloomFilter` in a `Mutex` (what a user would
//! otherwise share between threads), and `BloomFilter` insert at the same
//! capacity. 1M items, 1%; then insert alone on one thread at 100k, 1M
//! and 10M items.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench counting`.

use std::ops::Range;
use std::sync::Mutex;
use std::time::Duration;

use atomic_bloom::{BloomFilter, CountingBloomFilter};
mod common;

use common::{Subject, RATE, SEED, THREADS};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

const ITEMS: u64 = 1_000_000;
/// A [`Subject`] that can also take an item back out.
trait Removing: Subject<u64> {
    fn remove(&self, key: &u64) -> bool;
}

impl Removing for CountingBloomFilter<u64> {
    fn remove(&self, key: &u64) -> bool {
        CountingBloomFilter::remove(self, key)
    }
}

impl Removing for Mutex<bloomcraft::filters::CountingBloomFilter<u64>> {
    fn remove(&self, key: &u64) -> bool {
        self.lock().unwrap().delete(key)
    }
}

/// Runs `op` over `keys` on `threads` threads; the wall time.
fn run_split(threads: usize, keys: Range<u64>, op: impl Fn(u64) -> bool + Sync) -> Duration {
    common::run_split(threads, keys, op).0
}

/// Empties `subject` and inserts every key (untimed set-up).
fn fill(subject: &mut dyn Removing) {
    subject.reset();
    let s = &*subject;
    run_split(2, 0..ITEMS, |k| s.insert(&k));
}

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.throughput(Throughput::Elements(ITEMS));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
}

fn bench_subject(c: &mut Criterion, name: &str, subject: &mut dyn Removing) {
    for threads in THREADS {
        // Insert ITEMS fresh keys into an empty filter (emptied untimed).
        let mut group = c.benchmark_group("counting/insert");
        configure(&mut group);
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        subject.reset();
                        let s = &*subject;
                        run_split(threads, 0..ITEMS, |k| s.insert(&k))
                    })
                    .sum()
            })
        });
        group.finish();
        // Remove from a full filter: every item, then put them back (untimed).
        let mut group = c.benchmark_group("counting/remove");
        configure(&mut group);
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        fill(subject);
                        let s = &*subject;
                        run_split(threads, 0..ITEMS, |k| s.remove(&k))
                    })
                    .sum()
            })
        });
        group.finish();
        // Contains on a full filter: half present, half absent.
        let mut group = c.benchmark_group("counting/contains");
        configure(&mut group);
        fill(subject);
        let s = &*subject;
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run_split(threads, ITEMS / 2..ITEMS * 3 / 2, |k| s.contains(&k)))
                    .sum()
            })
        });
        group.finish();
    }
}

fn counting(c: &mut Criterion) {
    let mut ours = CountingBloomFilter::<u64>::builder(ITEMS as usize, RATE)
        .seed(SEED)
        .build()
        .unwrap();
    bench_subject(c, "atomic-bloom", &mut ours);
    drop(ours);
    let mut theirs = Mutex::new(bloomcraft::filters::CountingBloomFilter::<u64>::new(
        ITEMS as usize,
        RATE,
    ));
    bench_subject(c, "bloomcraft-in-mutex", &mut theirs);
    drop(theirs);
    // The plain filter at the same capacity, for the insert ratio.
    let plain = BloomFilter::<u64>::builder(ITEMS as usize, RATE)
        .seed(SEED)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("counting/insert");
    configure(&mut group);
    for threads in THREADS {
        group.bench_function(BenchmarkId::new("bloom-filter", threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        plain.clear();
                        let p = &plain;
                        run_split(threads, 0..ITEMS, |k| p.insert(&k))
                    })
                    .sum()
            })
        });
    }
    group.finish();
}

/// Insert on one thread, counting against plain, at sizes where both fit in
/// cache (100k), where only the bits do (1M), and where neither does (10M):
/// the insert ratio is a cache effect.
fn insert_by_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("counting/insert_by_size");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for items in [100_000u64, 1_000_000, 10_000_000] {
        group.throughput(Throughput::Elements(items));
        let label = format!("{}k", items / 1000);
        let counting = CountingBloomFilter::<u64>::builder(items as usize, RATE)
            .seed(SEED)
            .build()
            .unwrap();
        group.bench_function(BenchmarkId::new("atomic-bloom", &label), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        counting.clear();
                        let f = &counting;
                        run_split(1, 0..items, |k| f.insert(&k))
                    })
                    .sum()
            })
        });
        drop(counting);
        let plain = BloomFilter::<u64>::builder(items as usize, RATE)
            .seed(SEED)
            .build()
            .unwrap();
        group.bench_function(BenchmarkId::new("bloom-filter", &label), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        plain.clear();
                        let f = &plain;
                        run_split(1, 0..items, |k| f.insert(&k))
                    })
                    .sum()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, counting, insert_by_size);
criterion_main!(benches);
