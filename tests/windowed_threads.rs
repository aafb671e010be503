//! A windowed filter fed by threads that come and go (a pool restarted per
//! batch, `std::thread::scope` per request) counts its items exactly as one
//! thread does, each joined before the next starts: rotations fall on the
//! same items. Alone in its file: it relies on the spawned threads taking
//! the same thread index in turn, which other tests' threads in the same
//! process could take meanwhile.

use std::sync::Arc;

use atomic_bloom::WindowedBloomFilter;

/// A thread-local whose destruction is slow: a thread descheduled while
/// it exits. From the review that found `std::thread::scope` let the next
/// thread start before the last gave its index back.
struct SlowExit;

impl Drop for SlowExit {
    fn drop(&mut self) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

thread_local! {
    static SLOW_EXIT: SlowExit = const { SlowExit };
}

#[test]
fn threads_in_turn_rotate_exactly_where_one_thread_does() {
    // A generation of 100,000 items: a thread sums the counts only every
    // 16 of its own, so a thread that began counting afresh would notice
    // a full generation up to 15 items late.
    let build = || {
        WindowedBloomFilter::<u64>::builder(100_000, 0.01)
            .seed(3)
            .generations(2)
            .build()
            .unwrap()
    };
    let (reference, in_turn) = (build(), Arc::new(build()));
    let (threads, per_thread) = (50u64, 10_007u64);
    for thread in 0..threads {
        let keys = thread * per_thread..(thread + 1) * per_thread;
        for key in keys.clone() {
            reference.insert(&key);
        }
        // `join`, not a scope: a scoped thread is joined when its closure
        // returns, before its thread-locals (its index among them) are
        // given back, and the next thread could find the index still held.
        let filter = Arc::clone(&in_turn);
        std::thread::spawn(move || {
            for key in keys {
                filter.insert(&key);
            }
            // Registered after the thread's index: destroyed before it.
            SLOW_EXIT.with(|_| ());
        })
        .join()
        .unwrap();
        assert_eq!(
            (in_turn.epoch(), in_turn.generation_len()),
            (reference.epoch(), reference.generation_len()),
            "after thread {thread}"
        );
    }
    assert!(reference.epoch() >= 4, "the test must cross rotations");
}
