//! loom models of saving while other threads work: a save holds every
//! insert that happened-before it, and a frontier's save (pop everything,
//! write, queue it again) loses and duplicates nothing under racing pushes
//! and pops.
//!
//! Run as in `bloom.rs`.
#![cfg(atomic_bloom_loom)]

use atomic_bloom::{BloomFilter, Frontier, Layout};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

fn small_filter() -> BloomFilter<u64> {
    BloomFilter::builder(4, 0.01)
        .seed(7)
        .layout(Layout::Word)
        .build()
        .unwrap()
}

/// An insert published to the saver (release/acquire) before the save
/// began is in the saved bytes; one racing it may or may not be.
#[test]
fn a_save_holds_every_insert_that_happened_before_it() {
    loom::model(|| {
        let filter = Arc::new(small_filter());
        let inserted = Arc::new(AtomicBool::new(false));
        let inserter = {
            let (filter, inserted) = (Arc::clone(&filter), Arc::clone(&inserted));
            thread::spawn(move || {
                filter.insert(&1);
                // Release: the insert happens-before a saver that sees this.
                inserted.store(true, Ordering::Release);
                filter.insert(&2);
            })
        };
        // Acquire: pairs with the inserter's Release.
        let published = inserted.load(Ordering::Acquire);
        let mut bytes = Vec::new();
        filter.write_to(&mut bytes).unwrap();
        inserter.join().unwrap();
        let saved = BloomFilter::<u64>::read_from(bytes.as_slice()).unwrap();
        if published {
            assert!(
                saved.contains(&1),
                "an insert published before the save is lost"
            );
        }
    });
}

/// A save racing a push and a pop: afterwards every accepted item is
/// either popped or queued, once; the saved queue holds only accepted
/// items, each once.
#[test]
fn a_frontier_save_racing_push_and_pop_loses_nothing() {
    loom::model(|| {
        let frontier = Arc::new(Frontier::from_filter(small_filter()));
        assert!(frontier.push(1));
        let worker = {
            let frontier = Arc::clone(&frontier);
            thread::spawn(move || {
                let accepted = frontier.push(2);
                (accepted, frontier.pop())
            })
        };
        let mut bytes = Vec::new();
        frontier.write_to(&mut bytes).unwrap();
        let (accepted, popped) = worker.join().unwrap();
        assert!(accepted);
        let mut all: Vec<u64> = popped.into_iter().collect();
        all.extend(std::iter::from_fn(|| frontier.pop()));
        all.sort_unstable();
        assert_eq!(all, vec![1, 2], "every accepted item popped or queued once");

        let saved = Frontier::<u64>::read_from(bytes.as_slice()).unwrap();
        let queued: Vec<u64> = std::iter::from_fn(|| saved.pop()).collect();
        let mut once = queued.clone();
        once.sort_unstable();
        once.dedup();
        assert_eq!(once.len(), queued.len(), "a saved item queued twice");
        assert!(saved.seen(&1), "pushed before the save");
        for item in &queued {
            assert!(
                saved.seen(item),
                "a saved queued item is in the saved filter"
            );
        }
    });
}
