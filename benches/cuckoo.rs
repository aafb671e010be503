//! `CuckooFilter` insert, contains, remove and a 50/50 insert/remove mix,
//! at 1 and 2 threads, on `u64` and URL-shaped keys, at 1% and 0.1%, side
//! by side in one group per operation with its peers:
//!
//! * `atomic-cuckoo-filter` 0.3 (its `&self` API; 16-bit fingerprints, the
//!   least of its sizes under 1%, in buckets of 4);
//! * `cuckoofilter` 0.5 and `qfilter` 0.3 behind a `Mutex` (they take
//!   `&mut self`; cuckoofilter's fingerprints are 8 bits, about 3%, at
//!   every rate);
//! * this crate's `CountingBloomFilter` and `BloomFilter` at the same rate
//!   (the Bloom filter does not remove: it sits out remove and the mix).
//!
//! Each filter is sized for `ITEMS` items. Insert fills an empty filter
//! (emptied untimed); contains looks up every inserted key; remove takes
//! every key out of a full filter (put back untimed); the mix starts half
//! full and, for each new key, inserts it and removes one inserted before.
//! Memory per subject is printed once per configuration.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench cuckoo` (or once,
//! untimed: `-- --test`).

use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use atomic_bloom::{BloomFilter, CountingBloomFilter, CuckooFilter};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

mod common;

use common::keys::{Integers, Keys, Urls};
use common::{run_split, SEED, THREADS};

const ITEMS: u64 = 1_000_000;
const RATES: [f64; 2] = [0.01, 0.001];

/// A filter under test that may remove.
trait Deletable<K: ?Sized>: Send + Sync {
    /// Inserts `key`; whether it went in.
    fn insert(&self, key: &K) -> bool;
    fn contains(&self, key: &K) -> bool;
    /// Removes one copy; `None` where the filter cannot remove.
    fn remove(&self, key: &K) -> Option<bool>;
    /// Empties it (untimed).
    fn reset(&mut self);
    fn memory(&self) -> usize;
    /// Whether it removes (the Bloom filter does not).
    fn removes(&self) -> bool {
        true
    }
}

impl<K: Hash + ?Sized> Deletable<K> for CuckooFilter<K> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        CuckooFilter::insert(self, key).is_ok()
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        CuckooFilter::contains(self, key)
    }
    #[inline]
    fn remove(&self, key: &K) -> Option<bool> {
        Some(CuckooFilter::remove(self, key))
    }
    fn reset(&mut self) {
        self.clear();
    }
    fn memory(&self) -> usize {
        self.memory_bytes()
    }
}

impl<K: Hash + ?Sized> Deletable<K> for CountingBloomFilter<K> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        CountingBloomFilter::insert(self, key);
        true
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        CountingBloomFilter::contains(self, key)
    }
    #[inline]
    fn remove(&self, key: &K) -> Option<bool> {
        Some(CountingBloomFilter::remove(self, key))
    }
    fn reset(&mut self) {
        self.clear();
    }
    fn memory(&self) -> usize {
        self.memory_bytes()
    }
}

impl<K: Hash + ?Sized> Deletable<K> for BloomFilter<K> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        BloomFilter::insert(self, key);
        true
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        BloomFilter::contains(self, key)
    }
    fn remove(&self, _key: &K) -> Option<bool> {
        None
    }
    fn removes(&self) -> bool {
        false
    }
    fn reset(&mut self) {
        self.clear();
    }
    fn memory(&self) -> usize {
        self.memory_bytes()
    }
}

impl<K: Hash + ?Sized> Deletable<K> for atomic_cuckoo_filter::CuckooFilter {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        atomic_cuckoo_filter::CuckooFilter::insert(self, key).is_ok()
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        atomic_cuckoo_filter::CuckooFilter::contains(self, key)
    }
    #[inline]
    fn remove(&self, key: &K) -> Option<bool> {
        Some(atomic_cuckoo_filter::CuckooFilter::remove(self, key))
    }
    fn reset(&mut self) {
        self.clear();
    }
    fn memory(&self) -> usize {
        // Its buckets: capacity rounded to a power of two of slots.
        self.capacity().next_power_of_two() * 2
    }
}

impl<K: Hash + ?Sized> Deletable<K>
    for Mutex<cuckoofilter::CuckooFilter<std::hash::DefaultHasher>>
{
    #[inline]
    fn insert(&self, key: &K) -> bool {
        self.lock().unwrap().add(key).is_ok()
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.lock().unwrap().contains(key)
    }
    #[inline]
    fn remove(&self, key: &K) -> Option<bool> {
        Some(self.lock().unwrap().delete(key))
    }
    fn reset(&mut self) {
        let capacity = ITEMS as usize;
        *self.get_mut().unwrap() = cuckoofilter::CuckooFilter::with_capacity(capacity);
    }
    fn memory(&self) -> usize {
        self.lock().unwrap().memory_usage()
    }
}

impl<K: Hash + ?Sized> Deletable<K> for Mutex<qfilter::Filter> {
    #[inline]
    fn insert(&self, key: &K) -> bool {
        self.lock().unwrap().insert_duplicated(key).is_ok()
    }
    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.lock().unwrap().contains(key)
    }
    #[inline]
    fn remove(&self, key: &K) -> Option<bool> {
        Some(self.lock().unwrap().remove(key))
    }
    fn reset(&mut self) {
        self.get_mut().unwrap().clear();
    }
    fn memory(&self) -> usize {
        self.lock().unwrap().memory_usage()
    }
}

/// Every subject for keys `K` at `rate`, named.
fn subjects<K: Hash + ?Sized + 'static>(rate: f64) -> Vec<(&'static str, Box<dyn Deletable<K>>)> {
    let items = ITEMS as usize;
    vec![
        (
            "atomic-bloom CuckooFilter",
            Box::new(
                CuckooFilter::<K>::builder(items, rate)
                    .seed(SEED)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "atomic-cuckoo-filter",
            Box::new(
                atomic_cuckoo_filter::CuckooFilter::builder()
                    .capacity(items)
                    .fingerprint_size(16)
                    .bucket_size(4)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "cuckoofilter in Mutex",
            Box::new(Mutex::new(cuckoofilter::CuckooFilter::with_capacity(items))),
        ),
        (
            "qfilter in Mutex",
            Box::new(Mutex::new(qfilter::Filter::new(ITEMS, rate).unwrap())),
        ),
        (
            "atomic-bloom CountingBloomFilter",
            Box::new(
                CountingBloomFilter::<K>::builder(items, rate)
                    .seed(SEED)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "atomic-bloom BloomFilter",
            Box::new(
                BloomFilter::<K>::builder(items, rate)
                    .seed(SEED)
                    .build()
                    .unwrap(),
            ),
        ),
    ]
}

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.throughput(Throughput::Elements(ITEMS));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
}

/// Empties `subject` and inserts keys `range` (untimed).
fn fill<K: ?Sized, X: Keys<Key = K>>(
    subject: &mut dyn Deletable<K>,
    keys: &X,
    range: std::ops::Range<u64>,
) {
    subject.reset();
    let s = &*subject;
    run_split(2, range, |i| keys.with(i, |k| s.insert(k)));
}

fn bench_keys<X: Keys>(c: &mut Criterion, keys: &X)
where
    X::Key: Hash,
{
    for rate in RATES {
        let mut subjects = subjects::<X::Key>(rate);
        for (name, subject) in &subjects {
            println!(
                "cuckoo {} {rate}: {name}: {} bytes",
                X::NAME,
                subject.memory()
            );
        }
        for threads in THREADS {
            let group_name = |op: &str| format!("cuckoo/{op}/{}/{rate}", X::NAME);
            let mut group = c.benchmark_group(group_name("insert"));
            configure(&mut group);
            for (name, subject) in &mut subjects {
                group.bench_function(BenchmarkId::new(*name, threads), |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| {
                                subject.reset();
                                let s = &**subject;
                                run_split(threads, 0..ITEMS, |i| keys.with(i, |k| s.insert(k))).0
                            })
                            .sum()
                    })
                });
            }
            group.finish();

            let mut group = c.benchmark_group(group_name("contains"));
            configure(&mut group);
            for (name, subject) in &mut subjects {
                fill(&mut **subject, keys, 0..ITEMS);
                let s = &**subject;
                group.bench_function(BenchmarkId::new(*name, threads), |b| {
                    b.iter_custom(|iters| {
                        common::timed_runs(iters, threads, 0..ITEMS, |i| {
                            keys.with(i, |k| s.contains(k))
                        })
                    })
                });
            }
            group.finish();

            let mut group = c.benchmark_group(group_name("remove"));
            configure(&mut group);
            for (name, subject) in &mut subjects {
                if !subject.removes() {
                    continue;
                }
                group.bench_function(BenchmarkId::new(*name, threads), |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| {
                                fill(&mut **subject, keys, 0..ITEMS);
                                let s = &**subject;
                                run_split(threads, 0..ITEMS, |i| {
                                    keys.with(i, |k| s.remove(k).unwrap_or(false))
                                })
                                .0
                            })
                            .sum()
                    })
                });
            }
            group.finish();

            let mut group = c.benchmark_group(group_name("mix"));
            configure(&mut group);
            let half = ITEMS / 2;
            for (name, subject) in &mut subjects {
                if !subject.removes() {
                    continue;
                }
                group.bench_function(BenchmarkId::new(*name, threads), |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| {
                                fill(&mut **subject, keys, 0..half);
                                let s = &**subject;
                                run_split(threads, half..ITEMS, |i| {
                                    let inserted = keys.with(i, |k| s.insert(k));
                                    let removed =
                                        keys.with(i - half, |k| s.remove(k).unwrap_or(false));
                                    inserted & removed
                                })
                                .0
                            })
                            .sum()
                    })
                });
            }
            group.finish();
        }
    }
}

fn benches(c: &mut Criterion) {
    bench_keys(c, &Integers);
    bench_keys(c, &Urls::new(ITEMS as usize));
}

criterion_group!(cuckoo, benches);
criterion_main!(cuckoo);
