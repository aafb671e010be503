//! loom model of the fleet frontier's push order (`atomic-bloom-fleet/src/order.rs`): a
//! thread that saw another thread's push through a relaxed bit (the local
//! filter's, set inside the push's lane lock) marks a completion above
//! that push's number, so the completion waits for its answer; and the
//! sender that moves ready completions onto the next pipeline
//! (`queue_completions`) never ends a lease whose page's push is still
//! buffered.
//!
//! Run as in `bloom.rs`.
#![cfg(atomic_bloom_loom)]

use atomic_bloom_fleet::order::{Completions, PushOrder};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// One thread pushes into lane 1 (bit set, then numbered, inside the
/// lane's lock); another completes a page whose push found the bit set,
/// and its mark is above the push's number.
#[test]
fn a_completion_that_saw_a_push_is_marked_after_it() {
    loom::model(|| {
        let lanes = Arc::new(vec![Mutex::new(Vec::new()), Mutex::new(Vec::new())]);
        let order = Arc::new(PushOrder::new());
        let bit = Arc::new(AtomicBool::new(false));
        let pusher = {
            let (lanes, order, bit) = (lanes.clone(), order.clone(), bit.clone());
            thread::spawn(move || {
                let mut lane = lanes[1].lock().unwrap();
                // Relaxed: as the local filter sets its bits.
                bit.store(true, Ordering::Relaxed);
                let number = order.number();
                lane.push(number);
            })
        };
        // Relaxed: as the local filter reads its bits.
        if bit.load(Ordering::Relaxed) {
            let mark = order.mark(&lanes);
            let lane = lanes[1].lock().unwrap();
            assert!(!lane.is_empty(), "the push is in its lane");
            assert!(lane.iter().all(|&number| number < mark), "{lane:?} {mark}");
        }
        pusher.join().unwrap();
    });
}

/// Two threads push into two lanes and complete: each mark is above its
/// own thread's push.
#[test]
fn a_completion_is_marked_after_its_own_pushes() {
    loom::model(|| {
        let lanes = Arc::new(vec![Mutex::new(Vec::new()), Mutex::new(Vec::new())]);
        let order = Arc::new(PushOrder::new());
        let worker = |lane_index: usize| {
            let (lanes, order) = (lanes.clone(), order.clone());
            thread::spawn(move || {
                let number = {
                    let mut lane = lanes[lane_index].lock().unwrap();
                    let number = order.number();
                    lane.push(number);
                    number
                };
                assert!(number < order.mark(&lanes));
            })
        };
        let (first, second) = (worker(0), worker(1));
        first.join().unwrap();
        second.join().unwrap();
    });
}

/// One thread crawls: it buffers a link of its page in lane 1 (numbered
/// under the lane's lock) and completes the page. Another sends, as
/// `queue_completions` does: it takes the completions whose pushes are
/// all answered, the oldest buffered push over the lanes deciding. The
/// link is never answered here, so the page must never be ready: its
/// lease would end while its link is still buffered, and a process killed
/// then loses the link. (Reading the lanes before the completions, as the
/// sender once did, fails: the crawler buffers and completes between the
/// two reads.)
#[test]
fn a_lease_never_ends_while_its_pages_link_is_buffered() {
    loom::model(|| {
        let lanes = Arc::new(vec![Mutex::new(Vec::new()), Mutex::new(Vec::new())]);
        let order = Arc::new(PushOrder::new());
        let completions = Arc::new(Completions::new());
        let crawler = {
            let (lanes, order, completions) = (lanes.clone(), order.clone(), completions.clone());
            thread::spawn(move || {
                {
                    let mut lane = lanes[1].lock().unwrap();
                    let number = order.number();
                    lane.push(number);
                }
                let after = order.mark(&lanes);
                completions.record("page", after);
            })
        };
        let ready = completions.take_ready(|| {
            (lanes.iter())
                .filter_map(|lane| lane.lock().unwrap().first().copied())
                .min()
                .unwrap_or(u64::MAX)
        });
        assert!(
            ready.is_empty(),
            "the page's lease ended with its link still buffered"
        );
        crawler.join().unwrap();
        // Once the link is answered (off its lane), the page is ready.
        lanes[1].lock().unwrap().clear();
        let ready = completions.take_ready(|| u64::MAX);
        assert_eq!(ready.len(), 1);
    });
}
