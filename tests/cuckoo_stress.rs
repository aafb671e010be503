//! Seeded stress of `CuckooFilter` under threads: 2, 4 and 8 threads, the
//! filter filled to 50%, 80% and 98% of its capacity, insert-heavy and
//! balanced mixes of insert, remove and lookup, with growth off and on.
//! After every step a thread checks that items present are found: a few
//! of its own (which only it inserts and removes) and a few of the
//! prefilled ones (which nobody removes); at the end, every item.
//!
//! With growth, a thread removes only its items that went into the first
//! stage (the filter had one stage when their insert returned): a remove
//! looks in the first stage first, so it is exact for those, while one of
//! an item in a later stage may take a twin fingerprint of an earlier
//! stage (the type's docs, "Growth and remove").

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use atomic_bloom::{CuckooFilter, Error};
use rayon::prelude::*;

/// A seeded xorshift: each thread's own stream of choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Items of each kind looked up after every step.
const CHECKS_PER_STEP: usize = 8;

/// Percentages of inserts and removes; the rest are lookups.
const MIXES: [(u64, u64); 2] = [(60, 20), (35, 35)];

fn run(threads: usize, load: f64, (inserts, removes): (u64, u64), growth: bool, seed: u64) {
    let capacity = 4_000;
    let filter: CuckooFilter<u64> = CuckooFilter::builder(capacity, 0.01)
        .seed(seed)
        .growth(growth)
        .build()
        .unwrap();
    let prefilled: Vec<u64> = (0..(filter.capacity() as f64 * load) as u64)
        .map(|i| i | 1 << 62)
        .collect();
    for item in &prefilled {
        filter.insert(item).unwrap();
    }
    let steps = 3_000;
    let failed = AtomicBool::new(false);
    let held: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (filter, prefilled, failed) = (&filter, &prefilled, &failed);
                scope.spawn(move || {
                    let mut rng =
                        Rng(seed ^ (thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let mut own: Vec<u64> = Vec::new();
                    // Items in later stages: looked up, never removed.
                    let mut later: Vec<u64> = Vec::new();
                    let mut next_key = (thread as u64) << 40;
                    for step in 0..steps {
                        let roll = rng.next() % 100;
                        if roll < inserts {
                            next_key += 1;
                            match filter.insert(&next_key) {
                                Ok(()) if filter.stages() == 1 => own.push(next_key),
                                Ok(()) => later.push(next_key),
                                Err(Error::CuckooFilterFull { .. }) if !growth => {}
                                Err(other) => panic!("insert: {other}"),
                            }
                        } else if roll < inserts + removes && !own.is_empty() {
                            let item = own.swap_remove(rng.below(own.len()));
                            assert!(filter.remove(&item), "step {step}: a held item not removed");
                        } else if !own.is_empty() {
                            let item = own[rng.below(own.len())];
                            assert!(filter.contains(&item), "step {step}: a held item missed");
                        }
                        for _ in 0..CHECKS_PER_STEP {
                            if !own.is_empty() {
                                let item = own[rng.below(own.len())];
                                if !filter.contains(&item) {
                                    failed.store(true, Ordering::Relaxed);
                                    panic!("step {step}: an own item missed");
                                }
                            }
                            if !later.is_empty() {
                                let item = later[rng.below(later.len())];
                                if !filter.contains(&item) {
                                    failed.store(true, Ordering::Relaxed);
                                    panic!("step {step}: an item of a later stage missed");
                                }
                            }
                            let item = prefilled[rng.below(prefilled.len())];
                            if !filter.contains(&item) {
                                failed.store(true, Ordering::Relaxed);
                                panic!("step {step}: a prefilled item missed");
                            }
                        }
                    }
                    own.extend(later);
                    own
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(!failed.load(Ordering::Relaxed));
    let total: usize = prefilled.len() + held.iter().map(Vec::len).sum::<usize>();
    assert_eq!(
        filter.len(),
        total,
        "the slots held are the inserts minus the removes"
    );
    assert!(prefilled.iter().all(|item| filter.contains(item)));
    assert!(held.iter().flatten().all(|item| filter.contains(item)));
    if !growth {
        for item in held.iter().flatten() {
            assert!(filter.remove(item));
        }
        assert_eq!(filter.len(), prefilled.len());
    }
}

#[test]
fn threads_loads_and_mixes_without_growth() {
    for threads in [2, 4, 8] {
        for load in [0.5, 0.8, 0.98] {
            for (index, mix) in MIXES.into_iter().enumerate() {
                run(
                    threads,
                    load,
                    mix,
                    false,
                    7 + threads as u64 * 31 + index as u64,
                );
            }
        }
    }
}

#[test]
fn threads_loads_and_mixes_with_growth() {
    for threads in [2, 4, 8] {
        for load in [0.5, 0.8, 0.98] {
            for (index, mix) in MIXES.into_iter().enumerate() {
                run(
                    threads,
                    load,
                    mix,
                    true,
                    11 + threads as u64 * 37 + index as u64,
                );
            }
        }
    }
}

/// The gate of [`par_insert_returns_the_first_error_in_time`]: hashing
/// item `held` waits until `open`; hashing item `announced` says so.
#[derive(Clone)]
struct Gate(std::sync::Arc<GateState>);

struct GateState {
    held: AtomicU64,
    announced: AtomicU64,
    hashed: AtomicBool,
    open: AtomicBool,
    seeded: atomic_bloom::DefaultHasher,
}

struct GateHasher {
    state: Gate,
    inner: <atomic_bloom::DefaultHasher as BuildHasher>::Hasher,
    item: u64,
}

impl BuildHasher for Gate {
    type Hasher = GateHasher;

    fn build_hasher(&self) -> GateHasher {
        GateHasher {
            state: self.clone(),
            inner: self.0.seeded.build_hasher(),
            item: u64::MAX,
        }
    }
}

impl Hasher for GateHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.inner.write(bytes);
    }

    fn write_u64(&mut self, item: u64) {
        self.item = item;
        self.inner.write_u64(item);
    }

    fn finish(&self) -> u64 {
        let state = &self.state.0;
        if self.item == state.announced.load(Ordering::SeqCst) {
            state.hashed.store(true, Ordering::SeqCst);
        }
        if self.item == state.held.load(Ordering::SeqCst) {
            let start = std::time::Instant::now();
            while !state.open.load(Ordering::SeqCst) && start.elapsed().as_secs() < 30 {
                std::thread::yield_now();
            }
        }
        self.inner.finish()
    }
}

/// `par_insert` returns the first error an insert returned, not the one
/// of the leftmost item: of items `[a, b]`, both refused by a full filter,
/// `b`'s insert fails first (`a`'s hash waits), then an item goes in, then
/// `a`'s fails; the error returned is `b`'s, with the length before.
#[test]
fn par_insert_returns_the_first_error_in_time() {
    let gate = Gate(std::sync::Arc::new(GateState {
        held: AtomicU64::new(u64::MAX),
        announced: AtomicU64::new(u64::MAX),
        hashed: AtomicBool::new(false),
        open: AtomicBool::new(false),
        seeded: atomic_bloom::DefaultHasher::with_seed(5),
    }));
    let filter: CuckooFilter<u64, Gate> = CuckooFilter::builder(20_000, 0.01)
        .hasher(gate.clone())
        .build()
        .unwrap();
    let mut next = 0u64;
    while filter.insert(&next).is_ok() {
        next += 1;
    }
    // On copies: a refused insert changes nothing, an accepted one is
    // not in `filter`.
    let refused = |item: u64| filter.clone().insert(&item).is_err();
    let b = (1u64 << 40..1 << 40 | 100_000)
        .find(|&item| refused(item))
        .expect("an item refused");
    let c = (1u64 << 50..1 << 50 | 100_000)
        .find(|&item| !refused(item))
        .expect("an item taken");
    let after = filter.clone();
    after.insert(&c).unwrap();
    let a = (b + 1..b + 100_000)
        .find(|&item| refused(item) && after.clone().insert(&item).is_err())
        .expect("an item refused before and after c");
    let len = filter.len();
    gate.0.held.store(a, Ordering::SeqCst);
    gate.0.announced.store(b, Ordering::SeqCst);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let error = std::thread::scope(|scope| {
        let inserting = scope.spawn(|| {
            pool.install(|| filter.par_insert(vec![a, b].into_par_iter().with_max_len(1)))
        });
        while !gate.0.hashed.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // Runs on the pool's free thread: after `b`'s insert returned.
        let (done, wait) = std::sync::mpsc::channel();
        pool.spawn(move || done.send(()).unwrap());
        wait.recv().unwrap();
        filter.insert(&c).unwrap();
        gate.0.open.store(true, Ordering::SeqCst);
        inserting.join().unwrap().unwrap_err()
    });
    assert!(filter.contains(&c) && filter.len() == len + 1);
    assert!(
        matches!(error, Error::CuckooFilterFull { len: at, .. } if at == len),
        "the error of the insert that failed first (len {len}): {error:?}"
    );
}
