//! loom model of the Frontier push protocol: the seen-filter's test-and-set
//! decides, then the item is queued.
//!
//! Run as in `bloom.rs`. Under the loom cfg `src/sync.rs` replaces
//! crossbeam's `SegQueue` with a loom `Mutex<VecDeque>` stand-in (loom
//! cannot see crossbeam's own synchronization), so the model checks the
//! frontier's protocol, not crossbeam's.
#![cfg(atomic_bloom_loom)]

use atomic_bloom::{BloomFilter, Frontier, Layout};
use loom::sync::Arc;
use loom::thread;

fn frontier() -> Frontier<u64> {
    let filter = BloomFilter::builder(4, 0.01)
        .seed(7)
        .layout(Layout::Word)
        .build()
        .unwrap();
    Frontier::from_filter(filter)
}

/// Two threads push the same new item at once: under `Layout::Word` exactly
/// one push is accepted and the item is queued once.
#[test]
fn two_threads_pushing_the_same_item_queue_it_once() {
    loom::model(|| {
        let frontier = Arc::new(frontier());
        let other = {
            let frontier = Arc::clone(&frontier);
            thread::spawn(move || frontier.push(42))
        };
        let mine = frontier.push(42);
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "exactly one push accepted: {mine} {theirs}");
        assert_eq!(frontier.pop(), Some(42));
        assert_eq!(frontier.pop(), None);
    });
}

/// A push racing a pop: an accepted item is either popped by the racing
/// pop or still queued afterwards; never lost, never duplicated.
#[test]
fn an_accepted_push_is_popped_exactly_once() {
    loom::model(|| {
        let frontier = Arc::new(frontier());
        let popper = {
            let frontier = Arc::clone(&frontier);
            thread::spawn(move || frontier.pop())
        };
        assert!(frontier.push(1));
        let raced = popper.join().unwrap();
        let after = frontier.pop();
        assert_eq!(
            [raced, after].iter().flatten().collect::<Vec<_>>(),
            vec![&1]
        );
        assert!(!frontier.push(1), "popped items stay seen");
    });
}
