//! loom models of the CountingBloomFilter counter protocol (compare-and-swap
//! updates, sticky saturation, never below zero). Run as `bloom.rs` says.
#![cfg(atomic_bloom_loom)]

use atomic_bloom::CountingBloomFilter;
use loom::sync::Arc;
use loom::thread;

/// A one-block filter (64 counters) with a fixed seed.
fn one_block() -> CountingBloomFilter<u64> {
    let filter = CountingBloomFilter::builder(4, 0.1)
        .seed(9)
        .build()
        .unwrap();
    assert!(filter.capacity() < 64, "the models assume a single block");
    filter
}

/// Two hashes whose counters overlap, but are not all the same.
fn sharing_a_counter(filter: &CountingBloomFilter<u64>) -> (u64, u64) {
    // Counter values alone cannot show positions, so find them through a
    // throwaway store: mark the first item's counters, read the second's.
    let first = 1u64;
    let second = (2..)
        .find(|&h| {
            filter.__store_counters_of_hash(first, 7);
            let shared = filter.__counters_of_hash(h).contains(&7);
            let all = filter.__counters_of_hash(h).iter().all(|&c| c == 7);
            filter.__store_counters_of_hash(first, 0);
            shared && !all
        })
        .unwrap();
    (first, second)
}

/// One thread inserts an item while another removes a different item that
/// shares a counter with it: no increment or decrement is lost.
#[test]
fn insert_and_remove_sharing_a_counter_lose_no_count() {
    loom::model(|| {
        let filter = one_block();
        let (inserted, removed) = sharing_a_counter(&filter);
        filter.__insert_hash(removed);
        let filter = Arc::new(filter);
        let remover = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || assert!(filter.__remove_hash(removed)))
        };
        filter.__insert_hash(inserted);
        remover.join().unwrap();
        // Exactly the inserted item's counters are 1 (the shared one too).
        assert!(filter.__counters_of_hash(inserted).iter().all(|&c| c == 1));
        let removed_counts = filter.__counters_of_hash(removed);
        assert!(removed_counts.iter().all(|&c| c <= 1));
        assert!(removed_counts.contains(&0));
    });
}

/// An item inserted twice, removed by two racing threads: every counter
/// ends at exactly 0, none wraps to 255.
#[test]
fn two_racing_removes_of_a_double_insert_end_at_zero() {
    loom::model(|| {
        let filter = one_block();
        filter.__insert_hash(42);
        filter.__insert_hash(42);
        let filter = Arc::new(filter);
        let other = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || filter.__remove_hash(42))
        };
        let mine = filter.__remove_hash(42);
        let theirs = other.join().unwrap();
        assert!(mine && theirs);
        assert!(filter.__counters_of_hash(42).iter().all(|&c| c == 0));
    });
}

/// A saturated item under a racing insert and remove stays at 255.
#[test]
fn saturated_counters_stay_saturated_under_racing_updates() {
    loom::model(|| {
        let filter = one_block();
        filter.__store_counters_of_hash(42, u8::MAX);
        let filter = Arc::new(filter);
        let inserter = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || filter.__insert_hash(42))
        };
        assert!(filter.__remove_hash(42));
        assert!(!inserter.join().unwrap());
        assert!(filter.__counters_of_hash(42).iter().all(|&c| c == u8::MAX));
    });
}
