//! Single-operation speed of `BloomFilter` beside fastbloom's
//! `AtomicBloomFilter` and a floor, at 1 and 2 threads, 1M and 50M items, 1%.
//!
//! The floor is one wyhash of the key plus one atomic touch of one random
//! word in an array as large as our filter: no filter can do less.
//!
//! Run: `cargo bench --bench bloom` (all), or add a filter such as
//! `-- insert/1M`. Every subject runs the same keys in the same run; compare
//! ratios, on a quiet machine.

use std::hash::BuildHasher;
use std::hint::black_box;
use std::time::{Duration, Instant};

use atomic_bloom::{BloomFilter, DefaultHasher, Layout};
mod common;

use common::{run_split, Floor};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use rayon::prelude::*;

const RATE: f64 = 0.01;
const SEED: u64 = 0x5eed;
const THREADS: [usize; 2] = [1, 2];

/// A filter under test, behind one interface.
trait Subject: Sync {
    fn insert(&self, key: u64) -> bool;
    fn contains(&self, key: u64) -> bool;
    fn reset(&mut self);
}

impl Subject for BloomFilter<u64> {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        BloomFilter::insert(self, &key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        BloomFilter::contains(self, &key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl<S: BuildHasher + Sync> Subject for fastbloom::AtomicBloomFilter<S> {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        // fastbloom returns whether the item was already present.
        !fastbloom::AtomicBloomFilter::insert(self, &key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        fastbloom::AtomicBloomFilter::contains(self, &key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl Subject for Floor {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        Floor::insert(self, key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        Floor::contains(self, key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

fn ours(items: usize, layout: Layout) -> BloomFilter<u64> {
    BloomFilter::builder(items, RATE)
        .seed(SEED)
        .layout(layout)
        .build()
        .unwrap()
}

fn fastbloom_wyhash(items: usize) -> fastbloom::AtomicBloomFilter<DefaultHasher> {
    fastbloom::AtomicBloomFilter::with_false_pos(RATE)
        .hasher(DefaultHasher::with_seed(SEED))
        .expected_items(items)
}

fn fastbloom_default(items: usize) -> fastbloom::AtomicBloomFilter {
    fastbloom::AtomicBloomFilter::with_false_pos(RATE).expected_items(items)
}

type Maker = fn(usize) -> Box<dyn SubjectBox>;

/// `Subject` plus `Send`, boxed so one loop runs every subject.
trait SubjectBox: Subject + Send {}
impl<T: Subject + Send> SubjectBox for T {}

fn subjects() -> Vec<(&'static str, Maker)> {
    vec![
        ("atomic-bloom", |n| Box::new(ours(n, Layout::CacheLine))),
        ("atomic-bloom-word", |n| Box::new(ours(n, Layout::Word))),
        ("fastbloom-wyhash", |n| Box::new(fastbloom_wyhash(n))),
        ("fastbloom-default", |n| Box::new(fastbloom_default(n))),
        ("floor", |n| {
            Box::new(Floor::new(
                ours(n, Layout::CacheLine).num_bits() / 8,
                DefaultHasher::with_seed(SEED),
            ))
        }),
    ]
}

/// Sizes: (label, filter capacity, keys per timed batch).
const SIZES: [(&str, usize, u64); 2] =
    [("1M", 1_000_000, 1_000_000), ("50M", 50_000_000, 5_000_000)];

fn single_ops(c: &mut Criterion) {
    for (label, items, batch) in SIZES {
        let big = items > 10_000_000;
        for (name, make) in subjects() {
            let mut subject = make(items);
            // Insert: fresh keys every batch; the filter is emptied (untimed)
            // whenever it reaches `items`, so fills cycle from 0 to full.
            {
                let mut group = c.benchmark_group(format!("insert/{label}"));
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
                                |s, keys| {
                                    let (time, new) = run_split(threads, keys, |k| s.insert(k));
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
                run_split(2, 0..items as u64, |k| s.insert(k));
                let mut group = c.benchmark_group(format!("contains/{label}"));
                configure(&mut group, big, batch);
                let probes = items as u64 - batch / 2..items as u64 + batch / 2;
                for threads in THREADS {
                    group.bench_function(BenchmarkId::new(name, threads), |b| {
                        b.iter_custom(|iters| {
                            (0..iters)
                                .map(|_| {
                                    let (time, hits) =
                                        run_split(threads, probes.clone(), |k| s.contains(k));
                                    black_box(hits);
                                    time
                                })
                                .sum()
                        })
                    });
                }
                group.finish();
            }
        }
    }
}

/// `par_insert` on a 50M-item filter with rayon pools of 1 and 2 threads.
fn parallel_insert(c: &mut Criterion) {
    let items = 50_000_000usize;
    let batch = 5_000_000u64;
    let mut filter = ours(items, Layout::CacheLine);
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
