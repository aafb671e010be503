//! `Frontier::push_ref` makes the owned item only for a new one: a
//! duplicate (most of a crawl's links) allocates nothing. Its own test
//! binary, with one test, so that no other thread allocates meanwhile.

mod common;

use atomic_bloom::Frontier;
use common::counting_alloc::{live, peak, reset_peak, CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

#[test]
fn push_ref_allocates_only_for_a_new_item() {
    let frontier: Frontier<String> = Frontier::new(10_000, 0.01).unwrap();
    let links: Vec<String> = (0..1_000)
        .map(|i| format!("https://example.com/page/{i}"))
        .collect();
    for link in &links {
        frontier.push_ref(link.as_str());
    }
    let queued = frontier.len();
    assert!(queued > 990);
    let before = live();
    reset_peak();
    for link in &links {
        assert!(!frontier.push_ref(link.as_str()), "{link} seen");
    }
    assert_eq!(peak(), before, "a duplicate allocated");
    assert!(frontier.push_ref("https://example.com/new"));
    assert!(live() >= before + "https://example.com/new".len());
    assert_eq!(frontier.len(), queued + 1);
}
