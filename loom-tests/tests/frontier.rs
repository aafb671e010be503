//! loom model of the Frontier push protocol: the seen-filter's test-and-set
//! decides, then the item is queued.
//!
//! Run as in `bloom.rs`. Under the loom cfg `src/sync.rs` replaces
//! crossbeam's `SegQueue` with a loom `Mutex<VecDeque>` stand-in (loom
//! cannot see crossbeam's own synchronization), so the model checks the
//! frontier's protocol, not crossbeam's.
#![cfg(atomic_bloom_loom)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use atomic_bloom::{BloomFilter, Frontier, Layout};
use loom::future::block_on;
use loom::sync::atomic::{AtomicUsize, Ordering};
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

/// Two workers crawl a frontier seeded with one item, whose page links to a
/// second: each takes with `wait_take` until it returns `None`, pushes the
/// link while it holds the first item, and counts what it processed before
/// dropping the item. A worker told `None` while an item is queued or
/// still held (which may yet push) finds the count short. Fails when an
/// item counts as done at its take instead of at its guard's drop (a
/// worker is told `None` while the other holds the seed), and when the
/// count's decrement is `Relaxed` (`None` then does not happen-after the
/// processing). Without the fences between a sleeper's count and its look,
/// and a waker's change and its look at the sleepers, a wake-up is lost and
/// both workers sleep for ever: loom reports a deadlock.
#[test]
fn wait_take_never_returns_none_while_a_taken_item_can_still_push() {
    loom::model(|| {
        let frontier = Arc::new(frontier());
        let processed = Arc::new(AtomicUsize::new(0));
        assert!(frontier.push(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (frontier, processed) = (Arc::clone(&frontier), Arc::clone(&processed));
                thread::spawn(move || {
                    while let Some(item) = frontier.wait_take() {
                        if *item == 0 {
                            frontier.push(1);
                        }
                        processed.fetch_add(1, Ordering::Relaxed);
                    }
                    // What this worker knows was processed when told `None`.
                    processed.load(Ordering::Relaxed)
                })
            })
            .collect();
        for worker in workers {
            let seen_at_none = worker.join().unwrap();
            assert_eq!(
                seen_at_none, 2,
                "None while an item was queued or in flight"
            );
        }
        assert!(frontier.is_finished());
        assert_eq!(frontier.len(), 0);
    });
}

/// `wait_take_never_returns_none_while_a_taken_item_can_still_push` with
/// `wait_take_async`: two workers, each a future run by `block_on` (which
/// parks its thread until the future's waker is called). A future that
/// looked, found nothing, and registered its waker after a push or the
/// last drop had already looked for waiters would never be woken: loom
/// reports a deadlock. Fails when a future counts itself among the
/// waiters only after its look (outside the lock held from look to
/// registration).
#[test]
fn wait_take_async_is_woken_by_a_push_and_by_the_last_drop() {
    loom::model(|| {
        let frontier = Arc::new(frontier());
        let processed = Arc::new(AtomicUsize::new(0));
        assert!(frontier.push(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (frontier, processed) = (Arc::clone(&frontier), Arc::clone(&processed));
                thread::spawn(move || {
                    block_on(async {
                        while let Some(item) = frontier.wait_take_async().await {
                            if *item == 0 {
                                frontier.push(1);
                            }
                            processed.fetch_add(1, Ordering::Relaxed);
                        }
                        processed.load(Ordering::Relaxed)
                    })
                })
            })
            .collect();
        for worker in workers {
            let seen_at_none = worker.join().unwrap();
            assert_eq!(
                seen_at_none, 2,
                "None while an item was queued or in flight"
            );
        }
        assert!(frontier.is_finished());
    });
}

/// A future polled once and dropped (a `select!` that took another branch)
/// beside one awaited to the end, while the seed's holder pushes a link and
/// lets the seed go. The dropped future takes nothing it does not return,
/// and a push's wake it was given goes on to the other: without that, the
/// other sleeps for ever beside a queued item and loom reports a deadlock.
#[test]
fn a_future_dropped_after_its_wake_passes_it_on() {
    loom::model(|| {
        let frontier = Arc::new(frontier());
        assert!(frontier.push(0));
        let seed = frontier.take().unwrap();
        let dropped = {
            let frontier = Arc::clone(&frontier);
            thread::spawn(move || {
                let mut future = pin!(frontier.wait_take_async());
                match future
                    .as_mut()
                    .poll(&mut Context::from_waker(Waker::noop()))
                {
                    Poll::Ready(Some(item)) => vec![*item],
                    Poll::Ready(None) | Poll::Pending => Vec::new(),
                }
            })
        };
        let awaited = {
            let frontier = Arc::clone(&frontier);
            thread::spawn(move || {
                block_on(async {
                    let mut taken = Vec::new();
                    while let Some(item) = frontier.wait_take_async().await {
                        taken.push(*item);
                    }
                    taken
                })
            })
        };
        assert!(frontier.push(1));
        drop(seed);
        let mut taken = dropped.join().unwrap();
        taken.extend(awaited.join().unwrap());
        assert_eq!(taken, vec![1], "the link taken exactly once");
        assert!(frontier.is_finished());
    });
}
