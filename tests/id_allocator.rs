//! The id_allocator example: shortest IDs first, never one twice, never a
//! reserved one, from 4 threads.

#[allow(dead_code)]
#[path = "../examples/id_allocator.rs"]
mod id_allocator;

use std::collections::HashSet;

use id_allocator::{shortlex, IdAllocator};

#[test]
fn shortlex_order() {
    assert_eq!(shortlex(0), "a");
    assert_eq!(shortlex(35), "9");
    assert_eq!(shortlex(36), "aa");
    assert_eq!(shortlex(36 + 36 * 36 - 1), "99");
    assert_eq!(shortlex(36 + 36 * 36), "aaa");
    assert_eq!(shortlex(u64::MAX).len(), 13);
}

#[test]
fn four_threads_get_distinct_shortest_ids_and_no_reserved_one() {
    let allocator = IdAllocator::new(100, 0.001).unwrap();
    let reserved = ["a", "b", "zz", "abc"];
    for id in reserved {
        assert!(allocator.reserve(id));
        assert!(!allocator.reserve(id), "reserved twice");
    }
    let ids: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| (0..5_000).map(|_| allocator.allocate()).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let distinct: HashSet<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(distinct.len(), ids.len(), "an ID was handed out twice");
    for id in reserved {
        assert!(!distinct.contains(id), "reserved {id} was handed out");
    }
    // 20,000 IDs: the 36 + 1,296 IDs of one and two characters (less the
    // reserved and the few skipped as false positives) go first, then
    // three-character ones; none longer.
    let short = ids.iter().filter(|id| id.len() <= 2).count();
    assert!(short >= 36 + 1_296 - 3 - 5, "{short} short IDs");
    assert!(ids.iter().all(|id| id.len() <= 3));
}
