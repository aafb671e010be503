//! loom models of the BloomFilter insert protocol.
//!
//! Run (release, bounded, a separate target dir so the normal build is not
//! invalidated):
//!
//! ```text
//! RUSTFLAGS="--cfg atomic_bloom_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     CARGO_TARGET_DIR=target/loom cargo test -p loom-tests --release
//! ```
//!
//! Under that cfg `atomic_bloom`'s `src/sync.rs` hands out loom's atomics, so
//! these models explore the library's real insert and lookup code. Filters
//! are one block (the minimum), seeds are fixed, and item hashes are passed
//! directly with `insert_hash` so each model hits exactly the words it means
//! to.
#![cfg(atomic_bloom_loom)]

use atomic_bloom::{BloomFilter, Layout, Sizing};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

fn one_block(layout: Layout) -> BloomFilter<u64> {
    let filter = BloomFilter::builder(4, 0.01)
        .seed(7)
        .layout(layout)
        .build()
        .unwrap();
    assert_eq!(filter.num_bits(), 512, "the models assume a single block");
    filter
}

/// A `Layout::Compact` filter of one two-line block (1024 bits): a rate low
/// enough that the wide block saves memory, and few items. Sized exactly,
/// as the Valkey module sizes its filters.
fn one_wide_block() -> BloomFilter<u64> {
    let filter = BloomFilter::builder(2, 0.000_001)
        .seed(7)
        .layout(Layout::Compact)
        .sizing(Sizing::Exact)
        .build()
        .unwrap();
    assert_eq!(
        filter.num_bits(),
        1024,
        "the models assume one two-line block"
    );
    filter
}

/// The layouts whose racing inserts of one item may both be told new.
const TEST_BEFORE_SET: [Layout; 2] = [Layout::CacheLine, Layout::Compact];

/// Two hashes whose first word is the same, and a fresh filter to put them in.
fn sharing_a_word(layout: Layout) -> (BloomFilter<u64>, u64, u64) {
    let filter = one_block(layout);
    let first = 1u64;
    let second = (2..)
        .find(|&h| filter.__first_word_of_hash(h) == filter.__first_word_of_hash(first))
        .unwrap();
    (filter, first, second)
}

/// Two threads insert different items whose bits share a word: neither
/// `fetch_or` may lose the other's bits, and the count of set bits must be
/// exactly what a sequential run produces.
#[test]
fn different_items_in_one_word_lose_no_bit() {
    for layout in [Layout::Word, Layout::CacheLine, Layout::Compact] {
        loom::model(move || {
            let (filter, first, second) = sharing_a_word(layout);
            let filter = Arc::new(filter);
            let other = {
                let filter = Arc::clone(&filter);
                thread::spawn(move || filter.insert_hash(second))
            };
            filter.insert_hash(first);
            other.join().unwrap();
            assert!(filter.contains_hash(first));
            assert!(filter.contains_hash(second));

            let sequential = one_block(layout);
            sequential.insert_hash(first);
            sequential.insert_hash(second);
            assert_eq!(filter.set_bits(), sequential.set_bits());
        });
    }
}

/// Under `Layout::Word`, of three threads racing to insert the same absent
/// item exactly one is told it was new.
#[test]
fn word_layout_same_item_exactly_one_true() {
    loom::model(|| {
        let filter = Arc::new(one_block(Layout::Word));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let filter = Arc::clone(&filter);
                thread::spawn(move || filter.insert_hash(42))
            })
            .collect();
        let mine = filter.insert_hash(42);
        let news = racers
            .into_iter()
            .map(|racer| racer.join().unwrap())
            .chain([mine])
            .filter(|&new| new)
            .count();
        assert_eq!(news, 1);
        assert!(filter.contains_hash(42));
    });
}

/// Under `Layout::CacheLine` and `Layout::Compact` racing inserts of one
/// item may both be told it was new, but never both that it was old.
#[test]
fn test_before_set_same_item_at_least_one_true() {
    for layout in TEST_BEFORE_SET {
        loom::model(move || {
            let filter = Arc::new(one_block(layout));
            let other = {
                let filter = Arc::clone(&filter);
                thread::spawn(move || filter.insert_hash(42))
            };
            let mine = filter.insert_hash(42);
            let theirs = other.join().unwrap();
            assert!(mine || theirs);
            assert!(filter.contains_hash(42));
        });
    }
}

/// Two items of a wide compact block (bits over both lines) that share a
/// word, inserted by two threads at once: no bit of either is lost.
#[test]
fn compact_wide_block_inserts_lose_no_bit() {
    loom::model(|| {
        let filter = Arc::new(one_wide_block());
        let first = 42u64;
        let second = (43..)
            .find(|&h| filter.__first_word_of_hash(h) == filter.__first_word_of_hash(first))
            .unwrap();
        let other = {
            let filter = Arc::clone(&filter);
            thread::spawn(move || filter.insert_hash(second))
        };
        assert!(filter.insert_hash(first) || filter.contains_hash(first));
        other.join().unwrap();
        assert!(filter.contains_hash(first) && filter.contains_hash(second));
        let sequential = one_wide_block();
        sequential.insert_hash(first);
        sequential.insert_hash(second);
        assert_eq!(filter.set_bits(), sequential.set_bits());
    });
}

/// An insert, then a release/acquire handoff, then a lookup on the other
/// thread: the lookup must see the item (no false negative through a
/// happens-before edge, though the bits themselves are Relaxed).
#[test]
fn insert_then_handoff_then_contains() {
    for layout in [Layout::Word, Layout::CacheLine, Layout::Compact] {
        loom::model(move || {
            let filter = Arc::new(one_block(layout));
            let published = Arc::new(AtomicBool::new(false));
            let writer = {
                let (filter, published) = (Arc::clone(&filter), Arc::clone(&published));
                thread::spawn(move || {
                    filter.insert_hash(42);
                    published.store(true, Ordering::Release);
                })
            };
            if published.load(Ordering::Acquire) {
                assert!(filter.contains_hash(42));
            }
            writer.join().unwrap();
            assert!(filter.contains_hash(42));
        });
    }
}
