//! `contains_many` / `insert_many` against one-at-a-time `contains` /
//! `insert` on a 50M-item filter (60 MiB: every lookup misses the cache),
//! in the same run, one thread, 1% target, both layouts.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench batch`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use atomic_bloom::{BloomFilter, Layout};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CAPACITY: usize = 50_000_000;
const BATCH: u64 = 100_000;

fn batch(c: &mut Criterion) {
    for layout in [Layout::CacheLine, Layout::Word] {
        let name = format!("{layout:?}");
        let filter = BloomFilter::<u64>::builder(CAPACITY, 0.01)
            .layout(layout)
            .seed(5)
            .build()
            .unwrap();
        // Half full; fresh keys for every insert batch.
        let next_key = AtomicU64::new(0);
        filter.insert_many(&(0..CAPACITY as u64 / 2).collect::<Vec<_>>());
        next_key.store(CAPACITY as u64, Ordering::Relaxed);
        let fresh = || {
            let start = next_key.fetch_add(BATCH, Ordering::Relaxed);
            (start..start + BATCH).collect::<Vec<u64>>()
        };
        // Probes: half present, half absent.
        let probes: Vec<u64> = (CAPACITY as u64 / 2 - BATCH / 2..CAPACITY as u64 / 2 + BATCH / 2)
            .map(|key| key.wrapping_mul(0x9e37_79b9_7f4a_7c15) % CAPACITY as u64)
            .collect();

        let mut group = c.benchmark_group("batch/contains_50M");
        group.throughput(Throughput::Elements(BATCH));
        group.measurement_time(Duration::from_secs(3));
        group.bench_function(BenchmarkId::new("one-at-a-time", &name), |b| {
            b.iter(|| probes.iter().filter(|key| filter.contains(key)).count())
        });
        group.bench_function(BenchmarkId::new("contains_many", &name), |b| {
            b.iter(|| black_box(filter.contains_many(&probes)))
        });
        group.finish();

        let mut group = c.benchmark_group("batch/insert_50M");
        group.throughput(Throughput::Elements(BATCH));
        group.measurement_time(Duration::from_secs(3));
        group.bench_function(BenchmarkId::new("one-at-a-time", &name), |b| {
            b.iter_batched(
                fresh,
                |keys| keys.iter().filter(|key| filter.insert(key)).count(),
                criterion::BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("insert_many", &name), |b| {
            b.iter_batched(
                fresh,
                |keys| black_box(filter.insert_many(&keys)),
                criterion::BatchSize::LargeInput,
            )
        });
        group.finish();
    }
}

criterion_group!(benches, batch);
criterion_main!(benches);
