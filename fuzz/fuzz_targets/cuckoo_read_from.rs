//! `CuckooFilter::read_from` on arbitrary bytes: `Err`, or a filter that
//! takes items (or says it is full), finds what it took, removes each once,
//! and writes bytes that load and write back the same; never a panic, never
//! an allocation the input does not justify. A fuzzing build takes any
//! checksum (`src/wire.rs`), so the fuzzer reaches the fields behind them.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run cuckoo_read_from -- -max_total_time=60`

#![no_main]

use atomic_bloom::{CuckooFilter, Error};
use libfuzzer_sys::fuzz_target;

const ITEMS: [&[u8]; 5] = [b"", b"a", b"https://example.com/", b"\xff\x00", b"a"];

fn check(data: &[u8]) {
    let Ok(filter) = CuckooFilter::<[u8]>::read_from(data) else {
        return;
    };
    let before = filter.len();
    let mut inserted = Vec::new();
    for item in ITEMS {
        match filter.insert(item) {
            Ok(()) => inserted.push(item),
            Err(Error::CuckooFilterFull { .. } | Error::AllocationFailed { .. }) => {}
            Err(other) => panic!("an insert into a loaded filter failed otherwise: {other}"),
        }
    }
    for item in &inserted {
        assert!(filter.contains(item), "an inserted item is present");
    }
    assert_eq!(filter.len(), before + inserted.len(), "every insert holds one slot");
    for item in &inserted {
        assert!(filter.remove(item), "an inserted item is removed");
    }
    assert_eq!(filter.len(), before, "every remove freed one slot");
    let mut first = Vec::new();
    filter.write_to(&mut first).expect("writing to a Vec cannot fail");
    let again = CuckooFilter::<[u8]>::read_from(first.as_slice()).expect("what a loaded filter writes loads");
    assert_eq!(again.len(), before);
    let mut second = Vec::new();
    again.write_to(&mut second).expect("writing to a Vec cannot fail");
    assert_eq!(first, second, "a filter written, read and written again is the same bytes");
}

fuzz_target!(|data: &[u8]| check(data));
