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

use std::sync::atomic::{AtomicBool, Ordering};

use atomic_bloom::{CuckooFilter, Error};

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
