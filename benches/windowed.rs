//! `WindowedBloomFilter` beside its peers, a window of 1M items at a 1%
//! target, in one run:
//!
//! * `windowed`: ours, the default (cache-line blocks, 4 generations);
//! * `windowed-compact`: ours, `Layout::Compact` (its default generations);
//! * `windowed-word`: ours, `Layout::Word` (exactly-once inserts, what
//!   `Frontier::windowed` takes);
//! * `bloom-plain`: our `BloomFilter` sized for the window, which does not
//!   forget (emptied, untimed, each time it holds a window): the speed
//!   the windowed filter is held to (0.7× or better);
//! * `apbf-theirs`: the Age-Partitioned Bloom Filter as the paper and
//!   CrowdStrike/apbf describe it (`benches/common/window_peers.rs`), in
//!   its least memory at the target by their own false-positive formula
//!   (k = 11, l = 46 at 1%: 19.66 bits per window item);
//! * `fastbloom-2gen`: two fastbloom filters, rotated.
//!
//! First a report, deterministic (fixed seeds, one thread): memory, bits
//! per window item, the false-positive rate measured at 16 points of a
//! window's inserts after three windows of warm-up (1M absent probes in
//! all; mean and worst point), and false negatives among the last window's
//! items (must be 0). Then the timed groups: `windowed/insert/{u64,url}`
//! (fresh keys, rotations included) and `windowed/contains/{u64,url}` (a
//! filter in its steady state, half the probes among the last window's
//! items, half absent), at 1 and 2 threads.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench windowed` (about 6 minutes), on a quiet
//! machine; `-- --test` runs each timed part once, untimed.

use std::hash::Hash;
use std::hint::black_box;
use std::time::Duration;

use atomic_bloom::{BloomFilter, DefaultHasher, Layout, WindowedBloomFilter};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

mod common;
#[path = "common/window_peers.rs"]
mod window_peers;

use common::keys::{Integers, Keys, Urls};
use common::{run_split, timed_runs, RATE, SEED, THREADS};
use window_peers::{apbf_bits_per_item, apbf_least_memory, apbf_rate, Apbf, TwoGenerations};

/// Items every subject must remember.
const WINDOW: usize = 1_000_000;

/// Keys per timed batch.
const BATCH: u64 = 250_000;

/// A filter over a window, as the bench drives it.
trait Windowed<K: ?Sized>: Send + Sync {
    fn insert(&self, key: &K) -> bool;
    fn contains(&self, key: &K) -> bool;
    fn memory_bytes(&self) -> usize;
    /// Empties it (untimed).
    fn reset(&mut self);
    /// Whether it forgets: the plain filter must be emptied instead.
    fn forgets(&self) -> bool {
        true
    }
}

/// Ours, rebuilt to empty it.
struct Ours<K: ?Sized> {
    filter: WindowedBloomFilter<K>,
    layout: Layout,
}

impl<K: ?Sized> Ours<K> {
    fn new(layout: Layout) -> Self {
        Ours {
            filter: WindowedBloomFilter::builder(WINDOW, RATE)
                .seed(SEED)
                .layout(layout)
                .build()
                .unwrap(),
            layout,
        }
    }
}

impl<K: Hash + ?Sized> Windowed<K> for Ours<K> {
    fn insert(&self, key: &K) -> bool {
        self.filter.insert(key)
    }
    fn contains(&self, key: &K) -> bool {
        self.filter.contains(key)
    }
    fn memory_bytes(&self) -> usize {
        self.filter.memory_bytes()
    }
    fn reset(&mut self) {
        *self = Ours::new(self.layout);
    }
}

impl<K: Hash + ?Sized> Windowed<K> for BloomFilter<K> {
    fn insert(&self, key: &K) -> bool {
        BloomFilter::insert(self, key)
    }
    fn contains(&self, key: &K) -> bool {
        BloomFilter::contains(self, key)
    }
    fn memory_bytes(&self) -> usize {
        BloomFilter::memory_bytes(self)
    }
    fn reset(&mut self) {
        self.clear();
    }
    fn forgets(&self) -> bool {
        false
    }
}

impl<K: Hash + ?Sized> Windowed<K> for Apbf {
    fn insert(&self, key: &K) -> bool {
        Apbf::insert(self, key)
    }
    fn contains(&self, key: &K) -> bool {
        Apbf::contains(self, key)
    }
    fn memory_bytes(&self) -> usize {
        Apbf::memory_bytes(self)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl<K: Hash + ?Sized> Windowed<K> for TwoGenerations {
    fn insert(&self, key: &K) -> bool {
        TwoGenerations::insert(self, key)
    }
    fn contains(&self, key: &K) -> bool {
        TwoGenerations::contains(self, key)
    }
    fn memory_bytes(&self) -> usize {
        TwoGenerations::memory_bytes(self)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

type Maker<K> = fn() -> Box<dyn Windowed<K>>;

fn subjects<K: Hash + ?Sized + 'static>() -> Vec<(&'static str, Maker<K>)> {
    vec![
        ("windowed", || Box::new(Ours::<K>::new(Layout::CacheLine))),
        ("windowed-compact", || {
            Box::new(Ours::<K>::new(Layout::Compact))
        }),
        ("windowed-word", || Box::new(Ours::<K>::new(Layout::Word))),
        ("bloom-plain", || {
            Box::new(
                BloomFilter::<K>::builder(WINDOW, RATE)
                    .seed(SEED)
                    .build()
                    .unwrap(),
            )
        }),
        ("apbf-theirs", || {
            Box::new(Apbf::new(WINDOW, RATE, DefaultHasher::with_seed(SEED)))
        }),
        ("fastbloom-2gen", || {
            Box::new(TwoGenerations::new(
                WINDOW,
                RATE,
                DefaultHasher::with_seed(SEED),
            ))
        }),
    ]
}

/// URL-shaped keys as `benches/bloom.rs` makes them, a pool of two
/// windows and a batch reused in turn (a key comes back after that many
/// keys, past every subject's horizon).
struct UrlPool(Urls);

impl Keys for UrlPool {
    type Key = str;
    const NAME: &'static str = Urls::NAME;
    #[inline]
    fn with<R>(&self, index: u64, op: impl FnOnce(&str) -> R) -> R {
        self.0.with(index % self.0 .0.len() as u64, op)
    }
}

/// The deterministic part: memory, measured false positives, false
/// negatives inside the window, for every subject, on `u64` keys.
fn report() {
    let (k, l) = apbf_least_memory(RATE);
    println!(
        "\nwindow {WINDOW}, target {RATE}; APBF k = {k}, l = {l}, its least memory at the \
         target (their formula: {:.4}%, {:.2} bits per window item)",
        apbf_rate(k, l) * 100.0,
        apbf_bits_per_item(k, l)
    );
    println!("| subject | memory (MiB) | bits per window item | measured FP, mean / worst of 16 points | false negatives in the window |");
    println!("|---|---|---|---|---|");
    let points = 16u64;
    let probes_per_point = 1_000_000 / points;
    for (name, make) in subjects::<u64>() {
        let subject = make();
        let warm_up = if subject.forgets() {
            3 * WINDOW as u64
        } else {
            0
        };
        (0..warm_up).for_each(|key| {
            subject.insert(&key);
        });
        let step = WINDOW as u64 / points;
        let (mut found, mut worst) = (0usize, 0usize);
        let mut next = warm_up;
        for point in 0..points {
            for key in next..next + step {
                subject.insert(&key);
            }
            next += step;
            let absent = (0..probes_per_point)
                .filter(|&i| subject.contains(&((1 << 63) | (point << 32) | i)))
                .count();
            found += absent;
            worst = worst.max(absent);
        }
        let missed = (next - WINDOW as u64..next)
            .filter(|key| !subject.contains(key))
            .count();
        let bytes = subject.memory_bytes();
        println!(
            "| {name} | {:.2} | {:.1} | {:.3}% / {:.3}% | {missed} |",
            bytes as f64 / (1 << 20) as f64,
            bytes as f64 * 8.0 / WINDOW as f64,
            found as f64 / (points * probes_per_point) as f64 * 100.0,
            worst as f64 / probes_per_point as f64 * 100.0,
        );
    }
    println!();
}

fn windowed(c: &mut Criterion) {
    report();
    bench_keys(c, &Integers);
    bench_keys(c, &UrlPool(Urls::new(2 * WINDOW + BATCH as usize)));
}

/// Insert and contains for every subject, on one kind of key.
fn bench_keys<K: Keys>(c: &mut Criterion, keys: &K) {
    for (name, make) in subjects::<K::Key>() {
        let mut subject = make();
        {
            let mut group = c.benchmark_group(format!("windowed/insert/{}", K::NAME));
            configure(&mut group);
            let mut next = 0u64;
            for threads in THREADS {
                group.bench_function(BenchmarkId::new(name, threads), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            if !subject.forgets() && next + BATCH > WINDOW as u64 {
                                subject.reset();
                                next = 0;
                            }
                            let s = &*subject;
                            let (time, new) = run_split(threads, next..next + BATCH, |index| {
                                keys.with(index, |key| s.insert(key))
                            });
                            black_box(new);
                            total += time;
                            next += BATCH;
                        }
                        total
                    })
                });
            }
            group.finish();
        }
        {
            // A steady state: two windows in (one for the plain filter).
            subject.reset();
            let filled = if subject.forgets() {
                2 * WINDOW
            } else {
                WINDOW
            } as u64;
            let s = &*subject;
            run_split(2, 0..filled, |index| keys.with(index, |key| s.insert(key)));
            let mut group = c.benchmark_group(format!("windowed/contains/{}", K::NAME));
            configure(&mut group);
            let probes = filled - BATCH / 2..filled + BATCH / 2;
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

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.throughput(Throughput::Elements(BATCH));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
}

criterion_group!(benches, windowed);
criterion_main!(benches);
