//! `contains_many` and `insert_many` answer exactly what one-at-a-time calls
//! answer, for every slice length around the chunk size.

mod common;

use common::{filter, url, LAYOUTS};

#[test]
fn batch_calls_match_one_at_a_time() {
    for layout in LAYOUTS {
        for length in [0usize, 1, 15, 16, 17, 33, 1_000] {
            let one_at_a_time = filter(10_000, 0.01, layout, 3);
            let batched = filter(10_000, 0.01, layout, 3);
            // Duplicates inside the slice: new only the first time.
            let keys: Vec<u64> = (0..length as u64).map(|i| i % 700).collect();
            let expected: Vec<bool> = keys.iter().map(|k| one_at_a_time.insert(k)).collect();
            assert_eq!(batched.insert_many(&keys), expected, "{layout:?} {length}");
            let probes: Vec<u64> = (0..2 * length as u64).collect();
            let expected: Vec<bool> = probes.iter().map(|k| one_at_a_time.contains(k)).collect();
            assert_eq!(
                batched.contains_many(&probes),
                expected,
                "{layout:?} {length}"
            );
        }
    }
}

#[test]
fn batch_calls_take_borrowed_forms() {
    let f: atomic_bloom::BloomFilter<str> = atomic_bloom::BloomFilter::builder(1_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let owned: Vec<String> = (0..100).map(url).collect();
    assert!(f.insert_many(&owned).iter().all(|&new| new));
    let borrowed: Vec<&str> = owned.iter().map(String::as_str).collect();
    assert!(f.contains_many(&borrowed).iter().all(|&found| found));
}
