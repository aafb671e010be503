//! No false negatives, against a `HashSet`, from one thread and from four;
//! exactly-once inserts under `Layout::Word`.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use atomic_bloom::{BloomFilter, Layout};
use common::{url, Config, LAYOUTS};

fn url_filter(capacity: usize, config: Config, seed: u64) -> BloomFilter<str> {
    BloomFilter::builder(capacity, 0.01)
        .seed(seed)
        .layout(config.layout)
        .sizing(config.sizing)
        .build()
        .unwrap()
}

#[test]
fn single_thread_matches_a_hash_set() {
    for layout in LAYOUTS {
        let f = url_filter(50_000, layout, 11);
        let mut reference = HashSet::new();
        let mut new_items_reported_old = 0;
        // Every key twice, interleaved, as a crawler sees links.
        for i in (0..50_000u64).chain(0..50_000).map(|i| (i * 7919) % 50_000) {
            let key = url(i);
            let was_new = reference.insert(key.clone());
            let reported_new = f.insert(&key);
            // A duplicate is never reported new.
            assert!(
                was_new || !reported_new,
                "{layout:?}: {key} reported new twice"
            );
            if was_new && !reported_new {
                new_items_reported_old += 1; // a false positive at insert time
            }
        }
        for key in &reference {
            assert!(f.contains(key), "{layout:?}: false negative for {key}");
        }
        // False positives at insert time stay under the rate (it grows from 0
        // to 1% as the filter fills).
        assert!(
            new_items_reported_old < 500,
            "{layout:?}: {new_items_reported_old}"
        );
    }
}

#[test]
fn four_threads_overlapping_sets_no_false_negatives() {
    for layout in LAYOUTS {
        let f = Arc::new(url_filter(200_000, layout, 12));
        // Thread t inserts keys [t * 25_000, t * 25_000 + 100_000): each key
        // is inserted by up to four threads at about the same time.
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    for i in t * 25_000..t * 25_000 + 100_000 {
                        f.insert(&url(i));
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        for i in 0..175_000 {
            assert!(
                f.contains(&url(i)),
                "{layout:?}: false negative for {}",
                url(i)
            );
        }
        let estimate = f.len_estimate() as f64;
        assert!(
            (estimate - 175_000.0).abs() < 0.03 * 175_000.0,
            "{layout:?}: {estimate}"
        );
    }
}

#[test]
fn word_layout_reports_each_key_new_at_most_once_across_threads() {
    const KEYS: u64 = 100_000;
    let f = Arc::new(common::filter(200_000, 0.01, Layout::Word, 13));
    // Four threads insert the same keys, each starting a quarter further on.
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                (0..KEYS)
                    .map(|i| (i + t * KEYS / 4) % KEYS)
                    .filter(|key| f.insert(key))
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut reported_new = HashSet::new();
    for worker in workers {
        for key in worker.join().unwrap() {
            assert!(
                reported_new.insert(key),
                "key {key} reported new by two threads"
            );
        }
    }
    // Keys nobody was told were new were false positives when first
    // inserted; at most the rate (1% at full capacity, less before).
    let dropped = KEYS as usize - reported_new.len();
    assert!(dropped < 1_000, "{dropped} keys were never reported new");
    for key in 0..KEYS {
        assert!(f.contains(&key));
    }
}

#[test]
fn union_holds_both_and_clone_is_a_snapshot() {
    for layout in LAYOUTS {
        let a = url_filter(10_000, layout, 5);
        let b = url_filter(10_000, layout, 5);
        (0..5_000).for_each(|i| {
            a.insert(&url(i));
        });
        (5_000..10_000).for_each(|i| {
            b.insert(&url(i));
        });
        let before = a.clone();
        a.union(&b).unwrap();
        assert!((0..10_000).all(|i| a.contains(&url(i))), "{layout:?}");
        // The running count (from fetch_or results) equals a recount of the
        // words (what `clone` does).
        assert_eq!(a.set_bits(), a.clone().set_bits(), "{layout:?}");
        assert!(a.set_bits() > before.set_bits());
        // The snapshot did not change with the union.
        assert!((0..5_000).all(|i| before.contains(&url(i))));
        let after_only = (5_000..10_000)
            .filter(|&i| before.contains(&url(i)))
            .count();
        assert!(
            after_only < 300,
            "{layout:?}: snapshot saw {after_only} later inserts"
        );
    }
}

#[test]
fn clear_empties_the_filter() {
    for layout in LAYOUTS {
        let f = url_filter(1_000, layout, 6);
        f.insert("a");
        assert!(!f.is_empty());
        f.clear();
        assert!(f.is_empty());
        assert_eq!(f.len_estimate(), 0);
        assert!(!f.contains("a"));
        assert!(f.insert("a"));
    }
}

#[test]
fn filters_are_send_and_sync_for_unsized_items() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<BloomFilter<str>>();
    is_send_sync::<BloomFilter<[u8]>>();
    is_send_sync::<BloomFilter<u64>>();
    is_send_sync::<Arc<BloomFilter<str>>>();
    // Even for item types that are not Send: the filter stores no item.
    is_send_sync::<BloomFilter<std::rc::Rc<u8>>>();
    is_send_sync::<atomic_bloom::Error>();
}
