//! Single-operation speed of `BloomFilter` (`CacheLine` and `Word`, and
//! `Compact`; exact sizing, the default, and power-of-two) beside fastbloom's
//! `AtomicBloomFilter` and a floor, at 1 and 2 threads, 1% target, on two
//! kinds of keys:
//!
//! * `u64`: the key is its index (hashing 8 bytes is cheap, so the filter's
//!   own work dominates);
//! * `url`: URL-shaped strings as the crawl example links them
//!   (`https://host{h}.example/section{s}/page{i}.html`, 40-48 bytes), built
//!   before timing and read through a `Vec<String>`, as a crawler holds
//!   them: hashing a string narrows every lead.
//!
//! Sizes: `L2` (340k items: our layouts take at most 512 KiB, the L2 size
//! of `benches/contention.rs`, exactly that as a power of two), `1M`, and
//! `50M` (`u64` only: 50M strings would take 4 GB).
//!
//! The floor is one wyhash of the key plus one atomic touch of one random
//! word in an array as large as our `CacheLine` filter: no filter can do
//! less.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench bloom` (all, about 12 minutes), or a filter
//! such as `-- 'insert/1M/'`. Every subject runs the same keys in the same
//! run; compare ratios, on a quiet machine.

use std::hash::Hash;
use std::hint::black_box;
use std::time::{Duration, Instant};

use atomic_bloom::{BloomFilter, DefaultHasher, Layout, Sizing};
mod common;

use common::keys::{Integers, Keys, Urls};
use common::{run_split, timed_runs, Floor, Subject, RATE, SEED, THREADS};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use rayon::prelude::*;

/// Our filter as a user builds it: the default sizing (`Exact`).
fn ours<K: ?Sized>(items: usize, layout: Layout) -> BloomFilter<K> {
    sized::<K>(items, layout, Sizing::default())
}

fn sized<K: ?Sized>(items: usize, layout: Layout, sizing: Sizing) -> BloomFilter<K> {
    BloomFilter::builder(items, RATE)
        .seed(SEED)
        .layout(layout)
        .sizing(sizing)
        .build()
        .unwrap()
}

type Maker<K> = fn(usize) -> Box<dyn Subject<K>>;

fn subjects<K: Hash + ?Sized + 'static>() -> Vec<(&'static str, Maker<K>)> {
    vec![
        ("atomic-bloom", |n| {
            Box::new(ours::<K>(n, Layout::CacheLine))
        }),
        ("atomic-bloom-word", |n| {
            Box::new(ours::<K>(n, Layout::Word))
        }),
        ("atomic-bloom-pow2", |n| {
            Box::new(sized::<K>(n, Layout::CacheLine, Sizing::PowerOfTwo))
        }),
        ("atomic-bloom-compact", |n| {
            Box::new(ours::<K>(n, Layout::Compact))
        }),
        ("atomic-bloom-compact-pow2", |n| {
            Box::new(sized::<K>(n, Layout::Compact, Sizing::PowerOfTwo))
        }),
        ("fastbloom-wyhash", |n| {
            Box::new(
                fastbloom::AtomicBloomFilter::with_false_pos(RATE)
                    .hasher(DefaultHasher::with_seed(SEED))
                    .expected_items(n),
            )
        }),
        ("fastbloom-default", |n| {
            Box::new(fastbloom::AtomicBloomFilter::with_false_pos(RATE).expected_items(n))
        }),
        ("floor", |n| {
            Box::new(Floor::new(
                ours::<u64>(n, Layout::CacheLine).num_bits() / 8,
                DefaultHasher::with_seed(SEED),
            ))
        }),
    ]
}

/// Sizes: (label, filter capacity, keys per timed batch).
const L2: (&str, usize, u64) = ("L2", 340_000, 340_000);
const ONE_M: (&str, usize, u64) = ("1M", 1_000_000, 1_000_000);
const FIFTY_M: (&str, usize, u64) = ("50M", 50_000_000, 5_000_000);

fn single_ops(c: &mut Criterion) {
    for size in [L2, ONE_M] {
        let urls = Urls::new(size.1 + size.2 as usize / 2);
        bench_size(c, size, &Integers);
        bench_size(c, size, &urls);
    }
    bench_size(c, FIFTY_M, &Integers);
}

/// Insert and contains for every subject at one size, on one kind of key.
fn bench_size<K: Keys>(c: &mut Criterion, (label, items, batch): (&str, usize, u64), keys: &K)
where
    K::Key: 'static,
{
    let big = items > 10_000_000;
    for (name, make) in subjects::<K::Key>() {
        let mut subject = make(items);
        // Insert: fresh keys every batch; the filter is emptied (untimed)
        // whenever it reaches `items`, so fills cycle from 0 to full.
        {
            let mut group = c.benchmark_group(format!("insert/{label}/{}", K::NAME));
            configure(&mut group, big, batch);
            let mut next_key = 0u64;
            for threads in THREADS {
                group.bench_function(BenchmarkId::new(name, threads), |b| {
                    b.iter_custom(|iters| {
                        fresh_batches(
                            &mut subject,
                            &mut next_key,
                            items,
                            batch,
                            iters,
                            |s| s.reset(),
                            |s, range| {
                                let (time, new) = run_split(threads, range, |index| {
                                    keys.with(index, |key| s.insert(key))
                                });
                                black_box(new);
                                time
                            },
                        )
                    })
                });
            }
            group.finish();
        }
        // Contains on a full filter: half the probes present, half absent.
        {
            subject.reset();
            let s = &*subject;
            run_split(2, 0..items as u64, |index| {
                keys.with(index, |key| s.insert(key))
            });
            let mut group = c.benchmark_group(format!("contains/{label}/{}", K::NAME));
            configure(&mut group, big, batch);
            let probes = items as u64 - batch / 2..items as u64 + batch / 2;
            for threads in THREADS {
                group.bench_function(BenchmarkId::new(name, threads), |b| {
                    b.iter_custom(|iters| {
                        timed_runs(iters, threads, probes.clone(), |index| {
                            keys.with(index, |key| s.contains(key))
                        })
                    })
                });
            }
            group.finish();
        }
    }
}

/// `par_insert` on a 50M-item filter with rayon pools of 1 and 2 threads.
fn parallel_insert(c: &mut Criterion) {
    let (_, items, batch) = FIFTY_M;
    let mut filter = ours::<u64>(items, Layout::CacheLine);
    let mut group = c.benchmark_group("par_insert/50M");
    configure(&mut group, true, batch);
    let mut next_key = 0u64;
    for threads in THREADS {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        group.bench_function(BenchmarkId::new("atomic-bloom", threads), |b| {
            b.iter_custom(|iters| {
                fresh_batches(
                    &mut filter,
                    &mut next_key,
                    items,
                    batch,
                    iters,
                    |f| f.clear(),
                    |f, keys| {
                        let start = Instant::now();
                        black_box(pool.install(|| f.par_insert(keys.into_par_iter())));
                        start.elapsed()
                    },
                )
            })
        });
    }
    group.finish();
}

/// Times `iters` batches of `batch` fresh keys; the filter is emptied
/// (untimed) whenever the next batch would take it past `items`, so its fill
/// cycles from empty to full.
fn fresh_batches<F: ?Sized>(
    filter: &mut F,
    next_key: &mut u64,
    items: usize,
    batch: u64,
    iters: u64,
    empty: impl Fn(&mut F),
    mut timed: impl FnMut(&F, std::ops::Range<u64>) -> Duration,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        if *next_key + batch > items as u64 {
            empty(filter);
            *next_key = 0;
        }
        total += timed(filter, *next_key..*next_key + batch);
        *next_key += batch;
    }
    total
}

fn configure(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    big: bool,
    batch: u64,
) {
    group.throughput(Throughput::Elements(batch));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(if big { 1500 } else { 500 }));
    group.measurement_time(Duration::from_secs(if big { 6 } else { 2 }));
}

criterion_group!(benches, single_ops, parallel_insert);
criterion_main!(benches);
