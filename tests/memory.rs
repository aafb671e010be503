//! Filters take their arrays from the allocator's zeroed path: a large
//! filter is built at once, and the kernel supplies its pages only as bits
//! land in them.

#![cfg(target_os = "linux")]

use atomic_bloom::{BloomFilter, CountingBloomFilter, Layout, Sizing};

/// Resident memory of this process, in bytes (`/proc/self/statm`).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

const MIB: usize = 1 << 20;

/// One test, so that no other test's allocations move this process's
/// resident memory while it measures.
#[test]
fn filters_cost_memory_only_where_bits_are_set() {
    a_gigabyte_filter();
    a_counting_filter();
}

fn a_gigabyte_filter() {
    let before = resident_bytes();
    // 2^30 bytes: 200M items at one in a million, rounded to a power of two.
    let filter: BloomFilter<u64> = BloomFilter::builder(200_000_000, 0.000_001)
        .layout(Layout::Compact)
        .sizing(Sizing::PowerOfTwo)
        .seed(1)
        .build()
        .unwrap();
    assert!(
        filter.memory_bytes() >= 1 << 30,
        "{}",
        filter.memory_bytes()
    );
    let built = resident_bytes();
    assert!(
        built < before + 64 * MIB,
        "building a {} MiB filter made {} MiB resident",
        filter.memory_bytes() / MIB,
        (built - before) / MIB
    );
    // 2,000 items touch at most 4,000 pages (two-line blocks may cross a
    // page): 16 MiB.
    for item in 0..2_000u64 {
        filter.insert(&item);
    }
    let used = resident_bytes();
    assert!(
        used < built + 32 * MIB,
        "2,000 items made {} MiB resident",
        (used - built) / MIB
    );
    assert!((0..2_000u64).all(|item| filter.contains(&item)));
}

fn a_counting_filter() {
    let before = resident_bytes();
    let filter: CountingBloomFilter<u64> = CountingBloomFilter::builder(20_000_000, 0.01)
        .sizing(Sizing::Exact)
        .seed(2)
        .build()
        .unwrap();
    assert!(
        filter.memory_bytes() > 200 * MIB,
        "{}",
        filter.memory_bytes()
    );
    let built = resident_bytes();
    assert!(
        built < before + 64 * MIB,
        "building a {} MiB counting filter made {} MiB resident",
        filter.memory_bytes() / MIB,
        (built - before) / MIB
    );
    assert!(filter.insert(&7) && filter.contains(&7));
}
