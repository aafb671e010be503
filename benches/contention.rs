//! Contention curves: throughput of every filter against the number of
//! threads sharing it, beside its peers, in three workloads and at three
//! sizes.
//!
//! Families (this crate's type, then its peers in the same groups):
//!
//! * `bloom-cacheline`: `BloomFilter` with `Layout::CacheLine`; fastbloom's
//!   `AtomicBloomFilter` with this crate's wyhash (`fastbloom`),
//!   bloomfilter's `Bloom` in an `RwLock` (`bloomfilter-rwlock`, insert takes
//!   the write lock), bloomcraft's lock-free `StandardBloomFilter`
//!   (`bloomcraft`), the exact sets `dashset` (`DashSet<u64>`) and
//!   `mutex-hashset` (`Mutex<HashSet<u64>>`), and the `floor`.
//! * `bloom-word`: `BloomFilter` with `Layout::Word`; the same peers, sized
//!   for this family's item counts.
//! * `bloom-compact`: `BloomFilter` with `Layout::Compact`; the same peers.
//! * `counting`: `CountingBloomFilter`; bloomcraft's `CountingBloomFilter` in
//!   a `Mutex` (`bloomcraft-mutex`: its `insert` and `delete` take `&mut
//!   self`), `dashset`, `mutex-hashset`, and a `floor` the size of our
//!   counters.
//! * `scalable`: `ScalableBloomFilter` growing from n/64 to n items;
//!   growable-bloom-filter in a `Mutex` (`growable-mutex`) and bloomcraft's
//!   `AtomicScalableBloomFilter` (`bloomcraft-scalable`), both from n/64.
//! * `frontier`: `Frontier<u64>` (insert is `push`, contains is `seen`);
//!   `mutex-hashset-deque` (`Mutex<(HashSet<u64>, VecDeque<u64>)>`) and
//!   `dashset-segqueue` (`DashSet<u64>` + crossbeam's `SegQueue<u64>`).
//!
//! Workloads, `u64` keys, every thread on its own contiguous slice of each
//! stretch of keys:
//!
//! * `insert`: fresh keys into a filter that is emptied (untimed) whenever
//!   the next batch would take it past n, so its fill cycles from empty to
//!   full (a scalable filter is built again and grows from n/64 each cycle);
//! * `contains`: keys never inserted, on a filter holding n keys: lookups
//!   are negative, bar the ~1% false positives;
//! * `mixed`: fresh keys, those with `key % 10 == 0` inserted and the rest
//!   (never inserted, so negative) looked up, on a filter that starts half
//!   full and is emptied and refilled to half (untimed) before it passes n.
//!
//! Sizes, chosen per family so that *our* filter's memory (printed at set-up
//! with every subject's) is about 512 KiB (`L2`: fits one core's 1 MiB L2),
//! 8 MiB (`L3`: inside a 32 MiB L3) and 64 MiB (`far`):
//!
//! | family | L2 | L3 | far |
//! |---|---|---|---|
//! | `bloom-cacheline` | 400k | 6.5M | 52M |
//! | `bloom-word`, `frontier` | 340k | 5.5M | 44M |
//! | `bloom-compact` | 420k | 6.7M | 54M |
//! | `counting` (97 bits an item) | 43k | 690k | 5.5M |
//! | `scalable` (n; grows from n/64) | 120k | 2M | 24M (63 MiB) |
//!
//! Threads: 1, 2, 4 and 8 (`CONTENTION_THREADS=1,2` picks others). One
//! criterion iteration is one batch of `min(n / 4, 65536)` operations
//! (`Throughput::Elements`); a sample's batches run back to back on worker
//! threads started once per sample, and stop (a barrier, then untimed work)
//! only where the subject must be emptied, refilled or its queue drained.
//! 1% target rate, fixed seeds (exact sets hash with the same wyhash).
//! Every subject is built and filled once per group, lazily, so a filter on
//! the command line builds only what it runs.
//!
//! Left out at `far`, for the time the whole run may take (about 24
//! minutes on two cores: 804 benchmarks at about 1.6 s each for warm-up,
//! measurement and analysis, plus about 2 minutes of fills at L3 and `far`):
//!
//! * in the Bloom families, the exact sets (52M keys: ~600 MiB and a fill
//!   of tens of seconds each, per group) and `bloomfilter-rwlock` (about
//!   2 Mops/s filling under its lock: ~30 s per group);
//! * in the frontier family, its two peers (exact sets, as above).
//!
//! Everything else runs at every size: the counting family's exact sets hold
//! only 5.5M keys at `far`, and `bloomcraft-scalable` fills 24M keys in
//! about 7 s (`benches/scalable.rs` leaves it out at 10M because there one
//! iteration inserts all n keys; here an iteration is one batch).
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench contention` (all), or a filter with short
//! times for a look: `cargo bench -p atomic-bloom-benches --bench contention -- 'counting/mixed/L2'
//! --warm-up-time 0.2 --measurement-time 0.5`. Then
//! `cargo run --release -p atomic-bloom-benches --example plot_curves` draws `docs/curves/*.svg`
//! and the table `docs/curves/table.md` from `target/criterion`. Criterion's
//! own summary charts plot time against the batch size, not threads: read
//! the curves in `docs/curves/`. On a machine with fewer cores than threads
//! the 4- and 8-thread points measure oversubscription (time slicing,
//! preempted lock holders), which is what a service with more workers than
//! cores sees.

use std::hint::black_box;
use std::ops::Range;
use std::sync::{Barrier, Mutex, RwLock};
use std::time::{Duration, Instant};

use atomic_bloom::Layout;
use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode,
    Throughput,
};

mod common;
#[path = "common/subjects.rs"]
mod subjects;

use subjects::*;

/// Probe keys for `contains` start here; inserted keys stay far below.
const PROBES: u64 = 1 << 62;

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Insert,
    Contains,
    Mixed,
}

const WORKLOADS: [(Workload, &str); 3] = [
    (Workload::Insert, "insert"),
    (Workload::Contains, "contains"),
    (Workload::Mixed, "mixed"),
];

/// (label, n) for the three sizes of one family.
type Sizes = [(&'static str, usize); 3];

/// Thread counts, from `CONTENTION_THREADS` (`1,2,4`) or 1, 2, 4, 8.
fn thread_counts() -> Vec<usize> {
    match std::env::var("CONTENTION_THREADS") {
        Ok(list) => list
            .split(',')
            .map(|t| {
                t.trim()
                    .parse()
                    .expect("CONTENTION_THREADS: a comma-separated list of thread counts")
            })
            .collect(),
        Err(_) => vec![1, 2, 4, 8],
    }
}

/// Operations per criterion iteration in a group of size `n`.
fn batch(n: usize) -> u64 {
    (n as u64 / 4).min(1 << 16)
}

/// One subject in one workload: its fill and where its keys are.
struct State<S> {
    subject: S,
    workload: Workload,
    /// Keys at which it is emptied: n.
    items: u64,
    /// Keys inserted since it was last emptied.
    fill: u64,
    /// The next fresh key.
    next_key: u64,
    /// The next probe key (`contains`).
    next_probe: u64,
}

impl<S: Contender> State<S> {
    /// Builds the subject and fills it for `workload` (untimed).
    fn new(subject: S, workload: Workload, items: usize) -> Self {
        let mut state = State {
            subject,
            workload,
            items: items as u64,
            fill: 0,
            next_key: 0,
            next_probe: PROBES,
        };
        state.refill();
        state
    }

    /// Keys a fresh (or emptied) subject starts with in this workload.
    fn base_fill(&self) -> u64 {
        match self.workload {
            Workload::Insert => 0,
            Workload::Contains => self.items,
            Workload::Mixed => self.items / 2,
        }
    }

    /// Empties the subject and inserts its base fill, on two threads.
    fn refill(&mut self) {
        if self.fill > 0 {
            self.subject.reset();
        }
        let keys = self.next_key..self.next_key + self.base_fill();
        let subject = &self.subject;
        common::run_split(2, keys.clone(), |key| subject.insert(&key));
        self.subject.tidy();
        self.fill = keys.end - keys.start;
        self.next_key = keys.end;
    }

    /// Keys `keys` insert in this workload.
    fn inserts(&self, keys: &Range<u64>) -> u64 {
        match self.workload {
            Workload::Insert => keys.end - keys.start,
            Workload::Contains => 0,
            Workload::Mixed => keys.end.div_ceil(10) - keys.start.div_ceil(10),
        }
    }

    /// Runs `iters` batches of `batch` operations on `threads` threads; the
    /// time spent in them.
    fn run(&mut self, threads: usize, iters: u64, batch: u64) -> Duration {
        let mut left = iters;
        let workload = self.workload;
        run_stretches(
            threads,
            self,
            |state| {
                state.subject.tidy();
                if left == 0 {
                    return None;
                }
                if workload == Workload::Contains {
                    let keys = state.next_probe..state.next_probe + left * batch;
                    state.next_probe = keys.end;
                    left = 0;
                    return Some(keys);
                }
                // As many batches as fit before the subject passes n; at
                // least one, after emptying it if none fits.
                let per_batch = match workload {
                    Workload::Mixed => batch.div_ceil(10),
                    _ => batch,
                };
                let mut fit = (state.items - state.fill) / per_batch;
                if fit == 0 {
                    state.refill();
                    fit = ((state.items - state.fill) / per_batch).max(1);
                }
                let batches = fit.min(left);
                left -= batches;
                let keys = state.next_key..state.next_key + batches * batch;
                state.next_key = keys.end;
                state.fill += state.inserts(&keys);
                Some(keys)
            },
            move |state, key| match workload {
                Workload::Insert => state.subject.insert(&key),
                Workload::Contains => state.subject.contains(&key),
                Workload::Mixed if key % 10 == 0 => state.subject.insert(&key),
                Workload::Mixed => state.subject.contains(&key),
            },
        )
    }
}

/// Runs stretches of keys on `threads` worker threads started once: before
/// each stretch `next` gets `shared` alone (untimed) and returns the keys,
/// or `None` to stop; each worker then runs `op` on its contiguous slice of
/// them. Returns, summed over the stretches, the time from the first worker
/// starting a stretch to the last one finishing it (the workers read the
/// clock: the coordinating thread may wait for a core).
fn run_stretches<T: Send + Sync>(
    threads: usize,
    shared: &mut T,
    mut next: impl FnMut(&mut T) -> Option<Range<u64>>,
    op: impl Fn(&T, u64) -> bool + Sync,
) -> Duration {
    let shared = RwLock::new(shared);
    let stretch: Mutex<Option<Range<u64>>> = Mutex::new(None);
    // (first start, last end) of the current stretch.
    let span: Mutex<Option<(Instant, Instant)>> = Mutex::new(None);
    let start = Barrier::new(threads + 1);
    let end = Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        for t in 0..threads as u64 {
            let (shared, stretch, span, start, end, op) =
                (&shared, &stretch, &span, &start, &end, &op);
            scope.spawn(move || loop {
                start.wait();
                let Some(keys) = stretch.lock().unwrap().clone() else {
                    return;
                };
                let began = Instant::now();
                let len = keys.end - keys.start;
                let n = threads as u64;
                let mine = keys.start + len * t / n..keys.start + len * (t + 1) / n;
                let guard = shared.read().unwrap();
                let subject: &T = &guard;
                let hits = mine.filter(|&key| op(subject, key)).count();
                drop(guard);
                let ended = Instant::now();
                black_box(hits);
                let mut span = span.lock().unwrap();
                *span = Some(match *span {
                    None => (began, ended),
                    Some((first, last)) => (first.min(began), last.max(ended)),
                });
                drop(span);
                end.wait();
            });
        }
        let mut total = Duration::ZERO;
        loop {
            let keys = next(&mut **shared.write().unwrap());
            let done = keys.is_none();
            *stretch.lock().unwrap() = keys;
            start.wait();
            if done {
                return total;
            }
            end.wait();
            let (first, last) = span.lock().unwrap().take().unwrap();
            total += last - first;
        }
    })
}

/// One criterion group, `family/workload/size`.
struct Group<'a, 'c> {
    group: &'a mut BenchmarkGroup<'c, WallTime>,
    name: String,
    workload: Workload,
    items: usize,
}

impl Group<'_, '_> {
    /// Benches one subject at every thread count; `make` runs (and the
    /// subject is filled) only if one of its benchmarks is selected.
    fn bench<S: Contender>(&mut self, subject: &str, make: impl FnOnce() -> S) {
        let (workload, items, batch) = (self.workload, self.items, batch(self.items));
        let mut make = Some(make);
        let mut state: Option<State<S>> = None;
        for threads in thread_counts() {
            self.group
                .bench_function(BenchmarkId::new(subject, threads), |b| {
                    let state = state.get_or_insert_with(|| {
                        let state = State::new(make.take().unwrap()(), workload, items);
                        eprintln!(
                            "{}/{subject}: n = {items}, memory {}",
                            self.name,
                            state.subject.memory()
                        );
                        state
                    });
                    b.iter_custom(|iters| state.run(threads, iters, batch));
                });
        }
    }
}

/// Every group of `family`, configured; `f` adds the subjects of one, given
/// its size label.
fn groups(c: &mut Criterion, family: &str, sizes: Sizes, mut f: impl FnMut(&mut Group, &str)) {
    for (workload, workload_name) in WORKLOADS {
        for (size, items) in sizes {
            let name = format!("{family}/{workload_name}/{size}");
            let mut group = c.benchmark_group(&name);
            group.sampling_mode(SamplingMode::Flat);
            group.throughput(Throughput::Elements(batch(items)));
            f(
                &mut Group {
                    group: &mut group,
                    name,
                    workload,
                    items,
                },
                size,
            );
            group.finish();
        }
    }
}

fn bloom_family(c: &mut Criterion, family: &str, layout: Layout, sizes: Sizes) {
    groups(c, family, sizes, |g, size| {
        let n = g.items;
        g.bench("atomic-bloom", || bloom(n, layout));
        g.bench("fastbloom", || fastbloom(n));
        g.bench("bloomcraft", || subjects::bloomcraft(n));
        // Left out at `far`: see the header.
        if size != "far" {
            g.bench("bloomfilter-rwlock", || bloomfilter_rwlock(n));
            g.bench("dashset", || dashset(n));
            g.bench("mutex-hashset", || mutex_hashset(n));
        }
        g.bench("floor", || floor(bloom(n, layout).num_bits() / 8));
    });
}

fn bloom_cacheline(c: &mut Criterion) {
    let sizes = [("L2", 400_000), ("L3", 6_500_000), ("far", 52_000_000)];
    bloom_family(c, "bloom-cacheline", Layout::CacheLine, sizes);
}

fn bloom_word(c: &mut Criterion) {
    let sizes = [("L2", 340_000), ("L3", 5_500_000), ("far", 44_000_000)];
    bloom_family(c, "bloom-word", Layout::Word, sizes);
}

fn bloom_compact(c: &mut Criterion) {
    let sizes = [("L2", 420_000), ("L3", 6_700_000), ("far", 54_000_000)];
    bloom_family(c, "bloom-compact", Layout::Compact, sizes);
}

fn counting_family(c: &mut Criterion) {
    let sizes = [("L2", 43_000), ("L3", 690_000), ("far", 5_500_000)];
    groups(c, "counting", sizes, |g, _| {
        let n = g.items;
        g.bench("atomic-bloom", || subjects::counting(n));
        g.bench("bloomcraft-mutex", || bloomcraft_counting(n));
        g.bench("dashset", || dashset(n));
        g.bench("mutex-hashset", || mutex_hashset(n));
        g.bench("floor", || floor(subjects::counting(n).memory_bytes()));
    });
}

fn scalable_family(c: &mut Criterion) {
    let sizes = [("L2", 120_000), ("L3", 2_000_000), ("far", 24_000_000)];
    groups(c, "scalable", sizes, |g, _| {
        let n = g.items;
        g.bench("atomic-bloom", || Scalable::new(n));
        g.bench("growable-mutex", || Growable::new(n));
        g.bench("bloomcraft-scalable", || BloomcraftScalable::new(n));
    });
}

fn frontier_family(c: &mut Criterion) {
    let sizes = [("L2", 340_000), ("L3", 5_500_000), ("far", 44_000_000)];
    groups(c, "frontier", sizes, |g, size| {
        let n = g.items;
        g.bench("atomic-bloom", || OurFrontier::new(n));
        // Left out at `far`: see the header.
        if size != "far" {
            g.bench("mutex-hashset-deque", || MutexFrontier::new(n));
            g.bench("dashset-segqueue", || DashFrontier::new(n));
        }
    });
}

/// Ten samples, short times; criterion's HTML plots off (they take longer
/// than the measurements) unless `CONTENTION_PLOTS=1`. Command-line options
/// (`--warm-up-time`, `--measurement-time`) override these.
fn config() -> Criterion {
    let config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000));
    if std::env::var_os("CONTENTION_PLOTS").is_some_and(|v| v == "1") {
        config
    } else {
        config.without_plots()
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = bloom_cacheline, bloom_word, bloom_compact, counting_family, scalable_family, frontier_family
}
criterion_main!(benches);
