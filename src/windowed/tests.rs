//! Inserts caught across a rotation, staged on one thread: the insert's
//! hook between setting its bits and re-checking the epoch inserts other
//! items, which rotate the filter as another thread would.

use std::cell::Cell;

use super::WindowedBloomFilter;
use crate::Layout;

/// Items in completion order, checked after every insert: each one with
/// fewer than `window` items after it is found.
struct Order {
    window: usize,
    done: Vec<u64>,
}

impl Order {
    fn check(&self, filter: &WindowedBloomFilter<u64>, context: &str) {
        for (back, item) in self.done.iter().rev().take(self.window).enumerate() {
            assert!(
                filter.contains(item),
                "{context}: item {item} forgotten after {back} new items (window {})",
                self.window
            );
        }
    }
}

/// Issue 34, item 7: an insert that counted itself in generation `E`,
/// then found at its re-check that another insert had filled `E` and
/// rotated, was counted again in `E + 1`: `E` then held one item fewer
/// than its share, and an item of `E - 1` was forgotten after 29 new items
/// in a window of 30. Counted once, where it lands, the window holds.
fn an_insert_caught_across_a_rotation(layout: Layout, refresh: bool) {
    let window = 30;
    let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(window, 0.01)
        .seed(7)
        .layout(layout)
        .generations(4)
        .build()
        .unwrap();
    assert_eq!(filter.generation_capacity(), 10);
    let insert = |item: u64| {
        if refresh {
            filter.insert(&item);
        } else {
            filter.insert_if_new(&item);
        }
    };
    let mut order = Order {
        window,
        done: Vec::new(),
    };
    let context = format!("{layout:?}, refresh {refresh}");
    // Generation 0 full, generation 1 two items short.
    for item in 0..18 {
        insert(item);
        order.done.push(item);
        order.check(&filter, &context);
    }
    assert_eq!((filter.epoch(), filter.generation_len()), (1, 8));
    // X counts itself ninth; before its re-check, Y counts tenth and
    // rotates; X is inserted again into generation 2.
    let (x, y) = (100, 101);
    let first = Cell::new(true);
    filter.insert_hash_then(filter.hash_item(&x), refresh, || {
        if first.replace(false) {
            insert(y);
        }
    });
    order.done.extend([y, x]);
    order.check(&filter, &context);
    assert_eq!(filter.epoch(), 2);
    for item in 200..260 {
        insert(item);
        order.done.push(item);
        order.check(&filter, &context);
    }
}

#[test]
fn an_insert_caught_across_a_rotation_is_counted_once() {
    an_insert_caught_across_a_rotation(Layout::CacheLine, true);
    an_insert_caught_across_a_rotation(Layout::Compact, true);
    an_insert_caught_across_a_rotation(Layout::Word, true);
    an_insert_caught_across_a_rotation(Layout::Word, false);
}
