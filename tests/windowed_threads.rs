//! A windowed filter fed by threads that come and go (a pool restarted per
//! batch, `std::thread::scope` per request) counts its items exactly as one
//! thread does: rotations fall on the same items. Alone in its file: it
//! relies on the spawned threads taking the same thread index in turn,
//! which other tests' threads in the same process could take meanwhile.

use atomic_bloom::WindowedBloomFilter;

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
    let (reference, in_turn) = (build(), build());
    let (threads, per_thread) = (50u64, 10_007u64);
    for thread in 0..threads {
        let keys = thread * per_thread..(thread + 1) * per_thread;
        for key in keys.clone() {
            reference.insert(&key);
        }
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for key in keys {
                    in_turn.insert(&key);
                }
            });
        });
        assert_eq!(
            (in_turn.epoch(), in_turn.generation_len()),
            (reference.epoch(), reference.generation_len()),
            "after thread {thread}"
        );
    }
    assert!(reference.epoch() >= 4, "the test must cross rotations");
}
