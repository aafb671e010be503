//! loom models of the ScalableBloomFilter growth protocol: the stage list is
//! loaded once per call and replaced whole by a compare-and-swap.
//!
//! Run as in `bloom.rs`. Under the loom cfg `src/sync.rs` replaces
//! `ArcSwap` with a stand-in over loom's `RwLock<Arc<_>>` that has the same
//! load / compare-and-swap semantics (loom cannot see inside arc-swap).
//!
//! The first stage's fill is set in set bits
//! (`__first_stage_fill_bits`, a builder method that exists only under the loom cfg), so that one or two inserts cross the stage
//! boundary; a small memory limit keeps the up-front sizing of later stages
//! short.
#![cfg(atomic_bloom_loom)]

use atomic_bloom::ScalableBloomFilter;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

const SEED: u64 = 3;

/// A filter whose first stage is full once it has `fill_bits` set bits.
fn filter(fill_bits: usize) -> ScalableBloomFilter<u64> {
    ScalableBloomFilter::builder(1, 0.5)
        .seed(SEED)
        .memory_limit(4096)
        .__first_stage_fill_bits(fill_bits)
        .build()
        .unwrap()
}

/// Set bits that inserting `item` alone into a fresh filter sets.
fn bits_of(item: u64) -> usize {
    let probe = filter(usize::MAX);
    probe.insert(&item);
    probe.stage_stats()[0].set_bits
}

/// Two threads each insert an item that fills the first stage: both find it
/// full, both may try to grow, and exactly one stage is appended. Each then
/// inserts a second item, which lands in whichever new stage it saw: a
/// second append that replaced the first would lose it. All four items are
/// found afterwards.
#[test]
fn two_threads_crossing_a_boundary_append_one_stage() {
    loom::model(|| {
        let filter = Arc::new(filter(1));
        let handles: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|item| {
                let filter = Arc::clone(&filter);
                thread::spawn(move || {
                    filter.insert(&item);
                    filter.insert(&(item + 10));
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(filter.stages(), 2, "one boundary, one stage");
        for item in [1, 2, 11, 12] {
            assert!(filter.contains(&item), "item {item} lost");
        }
    });
}

/// A reader racing the growth: an item inserted before the reader started
/// is found at every instant, and items whose inserts happen-before the
/// reader's lookup (through a release/acquire flag) are found in whichever
/// stage they went to.
#[test]
fn reader_racing_growth_never_misses_an_earlier_insert() {
    loom::model(|| {
        let before = 10u64;
        let filter = Arc::new(filter(bits_of(before) + 1));
        filter.insert(&before);
        assert_eq!(filter.stages(), 1);
        let published = Arc::new(AtomicBool::new(false));
        let writer = {
            let (filter, published) = (Arc::clone(&filter), Arc::clone(&published));
            thread::spawn(move || {
                filter.insert(&1); // fills the first stage and grows
                filter.insert(&2); // lands in the new stage
                published.store(true, Ordering::Release);
            })
        };
        assert!(filter.contains(&before));
        if published.load(Ordering::Acquire) {
            assert!(filter.contains(&1));
            assert!(filter.contains(&2));
        }
        assert!(filter.contains(&before));
        writer.join().unwrap();
        assert_eq!(filter.stages(), 2);
    });
}

/// The fill tally: two threads each insert one item, and only both items'
/// bits together fill the first stage. The stage must be seen full, so
/// exactly one stage is appended: an add lost between the two threads
/// (checked by replacing the tally's `fetch_add` with a load and a store)
/// leaves the filter at one stage. Under the loom cfg every thread adds to
/// the same slot of the tally, the contended case.
#[test]
fn two_inserts_that_fill_a_stage_together_grow_it_once() {
    // Two items whose bits do not overlap, so each turns on all of its own
    // (found in a model of one thread: loom's atomics live only in models).
    let first = 1u64;
    let found = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
    let setup = std::sync::Arc::clone(&found);
    loom::model(move || {
        let second = (2..)
            .find(|&item| {
                let both = filter(usize::MAX);
                both.insert(&first);
                both.insert(&item);
                both.stage_stats()[0].set_bits == bits_of(first) + bits_of(item)
            })
            .unwrap();
        *setup.lock().unwrap() = (second, bits_of(first) + bits_of(second));
    });
    let (second, fill) = *found.lock().unwrap();
    loom::model(move || {
        let filter = Arc::new(filter(fill));
        let other = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || filter.insert(&second))
        };
        filter.insert(&first);
        other.join().unwrap();
        assert_eq!(filter.stages(), 2, "the stage filled and grew once");
        assert!(filter.contains(&first) && filter.contains(&second));
    });
}

/// A clear racing a growth: one thread inserts an item that fills the
/// first stage and grows the filter; the other clears it. The clear clears
/// stage 0 and then publishes a list of it alone, so a growth survives the
/// clear only if it came from an insert that loaded that list, whose bits
/// landed after the clearing: a second stage means the item is there.
/// Fails when the clear clears the stages in place and keeps the list (the
/// growth's compare-and-swap then succeeds on it, after the item's bits
/// were cleared), and when it publishes the list before clearing stage 0.
#[test]
fn a_growth_survives_a_racing_clear_only_with_its_item() {
    loom::model(|| {
        let filter = Arc::new(filter(1));
        let grower = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                filter.insert(&1);
            })
        };
        filter.clear();
        grower.join().unwrap();
        let stages = filter.stages();
        assert!(stages <= 2);
        if stages == 2 {
            assert!(
                filter.contains(&1),
                "a stage appended for an item the clear removed"
            );
        }
    });
}

/// A filter whose first stage fills at one set bit, and whose memory limit
/// holds two stages and not three, grown to two stages, with items `101..`
/// up to `last` (exclusive) inserted into the second.
fn near_its_memory_limit(last: u64) -> ScalableBloomFilter<u64> {
    let probe = filter(1);
    probe.insert(&100);
    assert_eq!(probe.stages(), 2);
    let filter = ScalableBloomFilter::builder(1, 0.5)
        .seed(SEED)
        .memory_limit(probe.memory_bytes())
        .__first_stage_fill_bits(1)
        .build()
        .unwrap();
    filter.insert(&100);
    for item in 101..last {
        filter.insert(&item);
    }
    assert_eq!(filter.stages(), 2);
    filter
}

/// A clear racing a growth that the memory limit refuses: the clear frees
/// the second stage, so the filter must be able to grow again after it.
/// The refused growth records its error only while its stage list is still
/// the filter's, checked under the error's mutex that the clear takes
/// after publishing its list. Fails when the growth records its error
/// without that check: recorded after the clear reset it, the error stops
/// every later growth, and an item that fills the first stage again leaves
/// the filter at one stage.
#[test]
fn a_growth_refused_while_a_clear_runs_does_not_stop_later_growth() {
    // The item whose insert fills the second stage, and so is refused its
    // growth (found in a model of one thread: loom's atomics live only in
    // models).
    let found = std::sync::Arc::new(std::sync::Mutex::new(0));
    let setup = std::sync::Arc::clone(&found);
    // The set-up inserts a few dozen items, one thread: more branches than
    // loom's default allows, none of them a choice between threads.
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.check(move || {
        let filter = near_its_memory_limit(101);
        let mut item = 101;
        while filter.growth_error().is_none() {
            filter.insert(&item);
            item += 1;
        }
        *setup.lock().unwrap() = item - 1;
    });
    let refused_item = *found.lock().unwrap();
    builder.check(move || {
        let filter = Arc::new(near_its_memory_limit(refused_item));
        assert!(filter.growth_error().is_none());
        let refused = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                filter.insert(&refused_item);
            })
        };
        filter.clear();
        refused.join().unwrap();
        filter.insert(&2_000); // fills stage 0 (again)
        assert_eq!(filter.stages(), 2, "the cleared filter did not grow");
    });
}

/// An item whose bits in a fresh filter are disjoint from `first`'s (found
/// in a model of one thread: loom's atomics live only in models).
fn disjoint_from(first: u64) -> u64 {
    let found = std::sync::Arc::new(std::sync::Mutex::new(0));
    let setup = std::sync::Arc::clone(&found);
    loom::model(move || {
        let second = (first + 1..)
            .find(|&item| {
                let both = filter(usize::MAX);
                both.insert(&first);
                both.insert(&item);
                both.stage_stats()[0].set_bits == bits_of(first) + bits_of(item)
            })
            .unwrap();
        *setup.lock().unwrap() = second;
    });
    let second = *found.lock().unwrap();
    second
}

/// The seal: one thread inserts an item that fills the first stage alone,
/// so it seals the stage (publishes the list marked sealed) and appends the
/// next. Another thread looks at the list, then inserts an item: if it saw
/// the seal, its insert must not go into the first stage (its bits there
/// would show), whether the sealer has appended yet or not: it appends the
/// next stage itself or uses the sealer's. Every item is found afterwards,
/// and the boundary got exactly one stage. Fails when the insert path
/// ignores the seal (the item lands in the sealed stage), at a preemption
/// bound of 1 as well as 2.
#[test]
fn an_insert_that_sees_a_sealed_stage_goes_into_the_next() {
    let (sealer_item, late_item) = (1u64, disjoint_from(1));
    loom::model(move || {
        let filter = Arc::new(filter(bits_of(sealer_item)));
        let late = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                let saw_seal = filter.__newest_sealed();
                filter.insert(&late_item);
                saw_seal
            })
        };
        filter.insert(&sealer_item);
        let saw_seal = late.join().unwrap();
        if saw_seal {
            // Only the sealer's item can have filled the stage: the seal
            // was seen before the late item's insert began.
            assert_eq!(
                filter.stage_stats()[0].set_bits,
                bits_of(sealer_item),
                "an insert that saw the seal went into the sealed stage"
            );
        }
        assert_eq!(filter.stages(), 2, "one boundary, one stage");
        assert!(filter.contains(&sealer_item) && filter.contains(&late_item));
    });
}

/// Three threads at one boundary: each inserts one item, and the first
/// stage is full once any item's bits are in it. Whoever fills it seals
/// it; the others either got into the stage before the seal (at most the
/// one item each that had loaded the list before it) or meet the sealed
/// list and append the next stage themselves, racing the sealer: exactly
/// one compare-and-swap wins, the losers drop their stage. Every item is
/// found, and there are exactly two stages.
#[test]
fn three_threads_at_a_sealed_boundary_append_one_stage_and_lose_nothing() {
    loom::model(|| {
        let filter = Arc::new(filter(1));
        let handles: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|item| {
                let filter = Arc::clone(&filter);
                thread::spawn(move || {
                    filter.insert(&item);
                })
            })
            .collect();
        filter.insert(&3);
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(filter.stages(), 2, "one boundary, one stage");
        for item in [1, 2, 3] {
            assert!(filter.contains(&item), "item {item} lost");
        }
    });
}

/// A sealed stage whose growth the memory limit refuses: the inserts that
/// meet it do not wait or loop, they go into the sealed stage (which
/// overfills, as documented), and every item is found; the filter stays at
/// one stage and reports the limit.
#[test]
fn a_sealed_stage_that_cannot_grow_takes_the_inserts() {
    loom::model(|| {
        let first_stage_only = filter(1).memory_bytes();
        let filter = Arc::new(
            ScalableBloomFilter::<u64>::builder(1, 0.5)
                .seed(SEED)
                .memory_limit(first_stage_only)
                .__first_stage_fill_bits(1)
                .build()
                .unwrap(),
        );
        let other = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                filter.insert(&1u64);
            })
        };
        filter.insert(&2u64);
        other.join().unwrap();
        assert_eq!(filter.stages(), 1);
        assert!(filter.contains(&1) && filter.contains(&2));
        assert!(matches!(
            filter.growth_error(),
            Some(atomic_bloom::Error::MemoryLimitReached { .. })
        ));
    });
}

/// A growth and the refusal of the stage after it: one thread inserts the
/// item that fills the first stage, seals it and appends the second; the
/// other, once it sees the seal (or the second stage), fills the second
/// stage, and the memory limit (two stages) refuses the third. The growth
/// may be anywhere in its work meanwhile: between its compare-and-swap and
/// what it does after, or before its compare-and-swap, which then fails
/// because the other thread appended the second stage itself. Either way
/// the refusal stands at the end. Fails when a growth clears whatever
/// error is recorded after its compare-and-swap, won or lost (what it did
/// when a flag kept others from growing meanwhile): the error is gone and
/// the next new item is taken past the limit.
#[test]
fn a_growth_keeps_the_refusal_of_the_stage_after_it() {
    // The item whose insert fills the second stage (found in a model of
    // one thread: loom's atomics live only in models).
    let found = std::sync::Arc::new(std::sync::Mutex::new(0));
    let setup = std::sync::Arc::clone(&found);
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.check(move || {
        let filter = near_its_memory_limit(101);
        let mut item = 101;
        while filter.growth_error().is_none() {
            filter.insert(&item);
            item += 1;
        }
        *setup.lock().unwrap() = item - 1;
    });
    let refused_item = *found.lock().unwrap();
    builder.check(move || {
        // `near_its_memory_limit`'s filter before its first insert.
        let limit = near_its_memory_limit(101).memory_bytes();
        let filter = Arc::new(
            ScalableBloomFilter::<u64>::builder(1, 0.5)
                .seed(SEED)
                .memory_limit(limit)
                .__first_stage_fill_bits(1)
                .build()
                .unwrap(),
        );
        let sealer = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                filter.insert(&100);
            })
        };
        let past_the_seal = filter.__newest_sealed() || filter.stages() == 2;
        if past_the_seal {
            for item in 101..=refused_item {
                filter.insert(&item);
            }
        }
        sealer.join().unwrap();
        assert_eq!(filter.stages(), 2, "one boundary, one stage");
        if past_the_seal {
            assert!(
                matches!(
                    filter.growth_error(),
                    Some(atomic_bloom::Error::MemoryLimitReached { .. })
                ),
                "the third stage's refusal was wiped out: {:?}",
                filter.growth_error()
            );
        }
    });
}

/// `try_insert` after another thread sealed the newest stage, whose growth
/// the memory limit refuses: whether the sealer has recorded the refusal
/// yet or not, a `try_insert` that saw the seal returns the error and puts
/// nothing into the sealed stage (its bits would show). Fails when
/// `try_insert` goes the way of `insert` past a seal (grow, and when that
/// fails, insert into the sealed stage): `Ok(true)`.
#[test]
fn a_try_insert_that_sees_a_seal_it_cannot_grow_inserts_nothing() {
    let (sealer_item, late_item) = (1u64, disjoint_from(1));
    loom::model(move || {
        let first_stage_only = filter(1).memory_bytes();
        let filter = Arc::new(
            ScalableBloomFilter::<u64>::builder(1, 0.5)
                .seed(SEED)
                .memory_limit(first_stage_only)
                .__first_stage_fill_bits(bits_of(sealer_item))
                .build()
                .unwrap(),
        );
        let late = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                let saw_seal = filter.__newest_sealed();
                (saw_seal, filter.try_insert(&late_item))
            })
        };
        filter.insert(&sealer_item);
        let (saw_seal, outcome) = late.join().unwrap();
        if saw_seal {
            assert!(
                matches!(outcome, Err(atomic_bloom::Error::MemoryLimitReached { .. })),
                "try_insert past a seal it could not grow: {outcome:?}"
            );
            assert_eq!(
                filter.stage_stats()[0].set_bits,
                bits_of(sealer_item),
                "a refused item went into the sealed stage"
            );
        }
        assert_eq!(filter.stages(), 1);
        assert!(filter.contains(&sealer_item));
    });
}
