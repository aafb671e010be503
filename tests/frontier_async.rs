//! `Frontier::wait_take_async`: woken by a push and by the last item in
//! flight, under tokio and beside threads in `wait_take`, and cancel-safe:
//! a future dropped takes nothing and passes on a wake it did not use.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use atomic_bloom::Frontier;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<Counting>, Waker) {
    let counter = Arc::new(Counting::default());
    (Arc::clone(&counter), Waker::from(counter))
}

#[test]
fn a_push_from_another_thread_wakes_a_waiting_future() {
    let frontier: Arc<Frontier<u32>> = Arc::new(Frontier::new(100, 0.01).unwrap());
    frontier.push(1);
    let held = Arc::clone(&frontier);
    // A worker thread holds 1, then pushes its link 2 and lets 1 go.
    let worker = thread::spawn(move || {
        let one = held.take().unwrap();
        thread::sleep(Duration::from_millis(50));
        held.push(2);
        thread::sleep(Duration::from_millis(50));
        drop(one);
    });
    while frontier.len() == 1 {
        thread::yield_now();
    }
    let taken = runtime().block_on(async {
        let two = frontier.wait_take_async().await.map(|item| *item);
        // 1 is still in flight, or was: either way nothing is left.
        let end = frontier.wait_take_async().await.map(|item| *item);
        (two, end)
    });
    worker.join().unwrap();
    assert_eq!(taken, (Some(2), None));
}

#[test]
fn the_last_item_done_resolves_every_waiting_future_to_none() {
    let frontier: Arc<Frontier<u32>> = Arc::new(Frontier::new(100, 0.01).unwrap());
    frontier.push(1);
    let one = frontier.take().unwrap();
    let futures: Vec<_> = (0..3).map(|_| frontier.wait_take_async()).collect();
    let (counter, waker) = counting_waker();
    let mut context = Context::from_waker(&waker);
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    for future in &mut futures {
        assert!(future.as_mut().poll(&mut context).is_pending());
    }
    drop(one);
    assert_eq!(counter.0.load(Ordering::SeqCst), 3, "each future woken");
    for future in &mut futures {
        assert!(matches!(
            future.as_mut().poll(&mut context),
            Poll::Ready(None)
        ));
    }
}

#[test]
fn a_dropped_future_takes_nothing_and_passes_its_wake_on() {
    let frontier: Frontier<u32> = Frontier::new(100, 0.01).unwrap();
    frontier.push(1);
    let one = frontier.take().unwrap();
    let (first_counter, first_waker) = counting_waker();
    let (second_counter, second_waker) = counting_waker();
    let mut first = Box::pin(frontier.wait_take_async());
    let mut second = Box::pin(frontier.wait_take_async());
    assert!(first
        .as_mut()
        .poll(&mut Context::from_waker(&first_waker))
        .is_pending());
    assert!(second
        .as_mut()
        .poll(&mut Context::from_waker(&second_waker))
        .is_pending());

    frontier.push(2);
    // One push wakes one future: the one that waited longest.
    assert_eq!(first_counter.0.load(Ordering::SeqCst), 1);
    assert_eq!(second_counter.0.load(Ordering::SeqCst), 0);
    drop(first); // woken, but never polled again: a select! took another branch
    assert_eq!(frontier.len(), 1, "the dropped future took nothing");
    assert_eq!(
        second_counter.0.load(Ordering::SeqCst),
        1,
        "its wake was passed on"
    );
    let two = match second
        .as_mut()
        .poll(&mut Context::from_waker(&second_waker))
    {
        Poll::Ready(Some(two)) => two,
        other => panic!("{:?}", other.map(|taken| taken.map(|item| *item))),
    };
    assert_eq!(*two, 2);
    drop((one, two));
    assert!(frontier.is_finished());
}

/// Tasks that give up waiting after a timeout, again and again, while a
/// thread pushes: every item is taken once, none is lost.
#[test]
fn waits_cut_short_by_timeouts_lose_no_item() {
    const ITEMS: u32 = 2_000;
    let frontier: Arc<Frontier<u32>> = Arc::new(Frontier::new(10_000, 1e-6).unwrap());
    frontier.push(0);
    let root = frontier.take().unwrap(); // in flight while the pusher pushes
    let taken = Arc::new(Mutex::new(Vec::new()));
    let timeouts = Arc::new(AtomicUsize::new(0));
    thread::scope(|scope| {
        let pusher = scope.spawn(|| {
            for item in 1..=ITEMS {
                assert!(frontier.push(item));
                if item % 64 == 0 {
                    thread::sleep(Duration::from_millis(1));
                }
            }
            drop(root);
        });
        runtime().block_on(async {
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    let (frontier, taken, timeouts) = (
                        Arc::clone(&frontier),
                        Arc::clone(&taken),
                        Arc::clone(&timeouts),
                    );
                    tokio::spawn(async move {
                        loop {
                            let wait = frontier.wait_take_async();
                            match tokio::time::timeout(Duration::from_micros(200), wait).await {
                                Ok(Some(item)) => taken.lock().unwrap().push(*item),
                                Ok(None) => return,
                                Err(_) => {
                                    timeouts.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        pusher.join().unwrap();
    });
    let mut taken = Arc::try_unwrap(taken).unwrap().into_inner().unwrap();
    taken.sort_unstable();
    assert_eq!(
        taken,
        (1..=ITEMS).collect::<Vec<_>>(),
        "each item taken once"
    );
    assert!(
        timeouts.load(Ordering::Relaxed) > 0,
        "no wait was cut short"
    );
    assert!(frontier.is_finished());
}

/// Tasks awaiting `wait_take_async` and threads in `wait_take` crawl one
/// frontier together to the end: each page once, and all stop.
#[test]
fn tasks_and_threads_crawl_one_frontier_to_the_end() {
    const PAGES: u32 = 20_000;
    let frontier: Arc<Frontier<u32>> = Arc::new(Frontier::new(PAGES as usize, 1e-6).unwrap());
    let crawled = Arc::new(AtomicUsize::new(0));
    // Page n links to 2n and 2n + 1, below PAGES.
    let crawl = |frontier: &Frontier<u32>, page: u32| {
        for link in [2 * page, 2 * page + 1] {
            if link < PAGES {
                frontier.push(link);
            }
        }
    };
    frontier.push(1);
    thread::scope(|scope| {
        for _ in 0..2 {
            let (frontier, crawled) = (&frontier, &crawled);
            scope.spawn(move || {
                while let Some(page) = frontier.wait_take() {
                    crawl(frontier, *page);
                    crawled.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        runtime().block_on(async {
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    let (frontier, crawled) = (Arc::clone(&frontier), Arc::clone(&crawled));
                    tokio::spawn(async move {
                        while let Some(page) = frontier.wait_take_async().await {
                            crawl(&frontier, *page);
                            crawled.fetch_add(1, Ordering::Relaxed);
                            drop(page);
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
    });
    assert_eq!(crawled.load(Ordering::Relaxed), PAGES as usize - 1);
    assert!(frontier.is_finished());
}

/// The future is `Send` when the frontier is `Sync`: a multi-threaded
/// runtime's `spawn` takes it.
#[test]
fn the_future_is_send() {
    fn is_send<F: Future + Send>(_: F) {}
    let frontier: Frontier<String> = Frontier::new(10, 0.01).unwrap();
    is_send(frontier.wait_take_async());
    let mut pinned = pin!(frontier.wait_take_async());
    let (_, waker) = counting_waker();
    assert!(matches!(
        pinned.as_mut().poll(&mut Context::from_waker(&waker)),
        Poll::Ready(None)
    ));
}
