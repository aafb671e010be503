//! CountingBloomFilter: rate at capacity, a `HashMap` reference under random
//! operation sequences, sticky saturation, and removal under four threads.

use std::collections::HashMap;
use std::sync::Arc;

use atomic_bloom::CountingBloomFilter;
use proptest::prelude::*;

fn counting(capacity: usize, rate: f64, seed: u64) -> CountingBloomFilter<u64> {
    CountingBloomFilter::builder(capacity, rate)
        .seed(seed)
        .build()
        .unwrap()
}

#[test]
fn rate_at_capacity_stays_at_target() {
    for (rate, probes) in [(0.01, 1_000_000u64), (0.001, 4_000_000)] {
        let f = counting(100_000, rate, 31);
        for key in 0..f.capacity() as u64 {
            f.insert(&key);
        }
        let hits = (1u64 << 40..(1 << 40) + probes)
            .filter(|k| f.contains(k))
            .count();
        let measured = hits as f64 / probes as f64;
        let sigma = (rate * (1.0 - rate) / probes as f64).sqrt();
        assert!(measured <= rate * 1.15 + 6.0 * sigma, "{rate}: {measured}");
        assert!(
            measured >= rate * 0.5,
            "{rate}: {measured} (sizing too generous)"
        );
    }
}

#[test]
fn rate_after_removing_half_is_that_of_the_half() {
    let f = counting(100_000, 0.01, 32);
    let capacity = f.capacity() as u64;
    for key in 0..2 * capacity {
        f.insert(&key);
    }
    for key in capacity..2 * capacity {
        assert!(f.remove(&key));
    }
    for key in 0..capacity {
        assert!(f.contains(&key), "false negative for {key}");
    }
    let probes = 1_000_000u64;
    let hits = (1u64 << 40..(1 << 40) + probes)
        .filter(|k| f.contains(k))
        .count();
    assert!((hits as f64 / probes as f64) < 0.01 * 1.15 + 6.0 * (0.01f64 / 1e6).sqrt());
    let estimate = f.len_estimate() as f64;
    assert!(
        (estimate - capacity as f64).abs() < 0.03 * capacity as f64,
        "{estimate}"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    Remove(u64),
}

fn op() -> impl Strategy<Value = Op> {
    // A small key space, so keys repeat and counters share.
    prop_oneof![
        3 => (0u64..64).prop_map(Op::Insert),
        2 => (0u64..64).prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Against a `HashMap<key, count>`: every key the reference holds is
    /// contained, with `count` at least its copies; removes of held keys
    /// succeed. Removes of keys the reference does not hold are skipped: the
    /// contract forbids them.
    #[test]
    fn matches_a_hash_map(ops in proptest::collection::vec(op(), 1..400), seed in any::<u64>()) {
        // 64 keys in a 2-block filter: heavy sharing of counters.
        let f = counting(20, 0.05, seed);
        let mut reference: HashMap<u64, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(key) => {
                    let copies = reference.entry(key).or_insert(0);
                    let was_absent = f.insert(&key);
                    prop_assert!(*copies == 0 || !was_absent, "a held key was reported absent");
                    *copies += 1;
                }
                Op::Remove(key) => {
                    if let Some(copies) = reference.get_mut(&key) {
                        prop_assert!(f.remove(&key), "remove of a held key refused");
                        *copies -= 1;
                        if *copies == 0 {
                            reference.remove(&key);
                        }
                    }
                }
            }
            for (key, copies) in &reference {
                prop_assert!(f.contains(key), "false negative for {}", key);
                prop_assert!(u32::from(f.count(key)) >= (*copies).min(255));
            }
        }
        if reference.is_empty() {
            prop_assert_eq!(f.len_estimate(), 0);
        }
    }
}

#[test]
fn saturated_counters_stick_and_cause_no_false_negative() {
    // One block of 64 counters and 40 neighbours of 3 counters each: the
    // heavy item's counters are all shared.
    let f = counting(8, 0.1, 33);
    assert!(f.capacity() < 20, "one block: {}", f.capacity());
    let neighbours: Vec<u64> = (1..=40).collect();
    for key in &neighbours {
        f.insert(key);
    }
    for _ in 0..300 {
        f.insert(&0);
    }
    assert_eq!(f.count(&0), 255);
    for _ in 0..300 {
        f.remove(&0);
    }
    // The heavy item's counters stuck at 255: still present, and so are the
    // items sharing them.
    assert_eq!(f.count(&0), 255);
    for key in &neighbours {
        assert!(f.contains(key), "false negative for neighbour {key}");
    }
}

#[test]
fn remove_of_an_absent_item_touches_nothing() {
    let f = counting(1000, 0.01, 34);
    f.insert(&1);
    let before = f.len_estimate();
    let absent = (2..).find(|k| !f.contains(k)).unwrap();
    assert!(!f.remove(&absent));
    assert_eq!(f.len_estimate(), before);
    assert!(f.contains(&1));
}

#[test]
fn four_threads_insert_disjoint_sets_and_remove_half() {
    const PER_THREAD: u64 = 25_000;
    let f = Arc::new(counting(200_000, 0.01, 35));
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                let keys = t * PER_THREAD..(t + 1) * PER_THREAD;
                for key in keys.clone() {
                    f.insert(&key);
                }
                // Remove the odd keys, racing the other threads' inserts.
                for key in keys.filter(|k| k % 2 == 1) {
                    assert!(f.remove(&key));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    for key in (0..4 * PER_THREAD).filter(|k| k % 2 == 0) {
        assert!(f.contains(&key), "false negative for {key}");
    }
    let estimate = f.len_estimate() as f64;
    let kept = 2.0 * PER_THREAD as f64;
    assert!((estimate - kept).abs() < 0.03 * kept, "{estimate}");
}

#[test]
fn errors_match_the_bloom_filter() {
    use atomic_bloom::Error;
    assert_eq!(
        CountingBloomFilter::<u64>::new(0, 0.01).unwrap_err(),
        Error::ZeroCapacity
    );
    assert!(matches!(
        CountingBloomFilter::<u64>::new(10, f64::NAN),
        Err(Error::InvalidFalsePositiveRate { .. })
    ));
    assert!(matches!(
        CountingBloomFilter::<u64>::new(usize::MAX, 1e-9),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn counting_filter_is_send_and_sync() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<CountingBloomFilter<str>>();
    is_send_sync::<Arc<CountingBloomFilter<[u8]>>>();
}
