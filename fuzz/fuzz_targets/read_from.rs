//! Every loader on arbitrary bytes: `Err`, or a filter that takes items,
//! answers for them, and writes bytes that load and write back the same;
//! never a panic, never an allocation the input does not justify
//! (libFuzzer's `-rss_limit_mb` and `-malloc_limit_mb` catch those). A
//! fuzzing build takes any checksum (`src/wire.rs`), so the fuzzer reaches
//! the fields behind them.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run read_from -- -max_total_time=60`

#![no_main]

use atomic_bloom::{
    BloomFilter, CountingBloomFilter, Error, Frontier, Rotation, ScalableBloomFilter,
    WindowedBloomFilter,
};
use libfuzzer_sys::fuzz_target;

/// What the fuzzer does with a loaded value: write it, read that back,
/// and write again; the two writes are the same bytes. Inputs of older
/// versions, and (in a fuzzing build, which takes any checksum) inputs
/// with wrong checksums, load too; what they write is the current format
/// with right checksums, so it is the second write that must match the first.
fn check<V>(
    loaded: Result<V, Error>,
    read: impl Fn(&[u8]) -> Result<V, Error>,
    write: impl Fn(&V, &mut Vec<u8>) -> Result<(), Error>,
    use_it: impl Fn(&V),
) {
    let Ok(value) = loaded else { return };
    use_it(&value);
    let mut first = Vec::new();
    write(&value, &mut first).expect("writing to a Vec cannot fail");
    let again = read(&first).expect("what a loaded filter writes loads");
    let mut second = Vec::new();
    write(&again, &mut second).expect("writing to a Vec cannot fail");
    assert_eq!(first, second, "a filter written, read and written again is the same bytes");
}

const ITEMS: [&[u8]; 4] = [b"", b"a", b"https://example.com/", b"\xff\x00"];

fn load_everything(data: &[u8]) {
    check(
        BloomFilter::<[u8]>::read_from(data),
        |bytes| BloomFilter::<[u8]>::read_from(bytes),
        |f, out| f.write_to(out),
        |f| {
            for item in ITEMS {
                f.insert(item);
                assert!(f.contains(item), "an inserted item is present");
            }
        },
    );
    check(
        CountingBloomFilter::<[u8]>::read_from(data),
        |bytes| CountingBloomFilter::<[u8]>::read_from(bytes),
        |f, out| f.write_to(out),
        |f| {
            for item in ITEMS {
                f.insert(item);
                assert!(f.contains(item), "an inserted item is present");
            }
        },
    );
    check(
        ScalableBloomFilter::<[u8]>::read_from(data),
        |bytes| ScalableBloomFilter::<[u8]>::read_from(bytes),
        |f, out| f.write_to(out),
        |f| {
            for item in ITEMS {
                if f.try_insert(item).is_ok() {
                    assert!(f.contains(item), "an inserted item is present");
                }
            }
        },
    );
    check(
        Frontier::<String>::read_from(data),
        |bytes| Frontier::<String>::read_from(bytes),
        |f, out| f.write_to(out),
        |_| {},
    );
    check(
        Frontier::<Vec<u8>>::read_from(data),
        |bytes| Frontier::<Vec<u8>>::read_from(bytes),
        |f, out| f.write_to(out),
        |_| {},
    );
    windowed(data);
}

/// A windowed filter, whatever it loaded, inserts, answers for what it
/// inserted, rotates and saves without a panic, and what it saves loads and
/// saves again as the same bytes (but for a time window, whose saved ends
/// are relative to the clock).
fn windowed(data: &[u8]) {
    let Ok(filter) = WindowedBloomFilter::<[u8]>::read_from(data) else {
        return;
    };
    for item in ITEMS {
        filter.insert(item);
        assert!(filter.contains(item), "an inserted item is present");
    }
    filter.advance();
    let mut first = Vec::new();
    filter.write_to(&mut first).expect("writing to a Vec cannot fail");
    let again = WindowedBloomFilter::<[u8]>::read_from(first.as_slice()).expect("a saved filter loads");
    if !matches!(filter.rotation(), Rotation::Time(_)) {
        let mut second = Vec::new();
        again.write_to(&mut second).expect("writing to a Vec cannot fail");
        assert_eq!(first, second, "a filter written, read and written again is the same bytes");
    }
}

fuzz_target!(|data: &[u8]| load_everything(data));
