//! Every loader on arbitrary bytes: `Err` or a filter that writes back the
//! bytes it was read from; never a panic, never an allocation the input does
//! not justify (libFuzzer's `-rss_limit_mb` and `-malloc_limit_mb` catch
//! those).
//!
//! Run from the repository root (see README.md):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run read_from -- -max_total_time=60`

#![no_main]

use atomic_bloom::{
    BloomFilter, CountingBloomFilter, Error, Frontier, Rotation, ScalableBloomFilter,
    WindowedBloomFilter,
};
use libfuzzer_sys::fuzz_target;

/// The format version this build writes: older inputs load, and are
/// written back in it.
const VERSION: [u8; 2] = [3, 0];

fn check<V>(data: &[u8], loaded: Result<V, Error>, write: impl Fn(&V, &mut Vec<u8>) -> Result<(), Error>) {
    if let Ok(value) = loaded {
        let mut again = Vec::new();
        write(&value, &mut again).expect("writing to a Vec cannot fail");
        if data[8..10] == VERSION {
            assert_eq!(&data[..again.len()], &again[..], "a loaded filter writes back its bytes");
        }
    }
}

fn load_everything(data: &[u8]) {
    check(data, BloomFilter::<[u8]>::read_from(data), |f, out| f.write_to(out));
    check(data, CountingBloomFilter::<[u8]>::read_from(data), |f, out| f.write_to(out));
    check(data, ScalableBloomFilter::<[u8]>::read_from(data), |f, out| f.write_to(out));
    check(data, Frontier::<String>::read_from(data), |f, out| f.write_to(out));
    check(data, Frontier::<Vec<u8>>::read_from(data), |f, out| f.write_to(out));
    windowed(data);
}

/// A windowed filter writes back its bytes unless it was saved mid-rotation
/// (the loader completes it) or with a time window (the ends are saved
/// relative to the clock); whatever it loaded, it then inserts, looks up,
/// rotates and saves without a panic, and what it saves loads.
fn windowed(data: &[u8]) {
    let Ok(filter) = WindowedBloomFilter::<[u8]>::read_from(data) else {
        return;
    };
    // The rotating byte follows the ends (FORMAT.md, kind 5).
    let generations = usize::from(data[30]);
    let saved_rotating = data.get(92 + 8 * generations) == Some(&1);
    if !saved_rotating && !matches!(filter.rotation(), Rotation::Time(_)) {
        let mut again = Vec::new();
        filter.write_to(&mut again).expect("writing to a Vec cannot fail");
        assert_eq!(&data[..again.len()], &again[..], "a loaded filter writes back its bytes");
    }
    for item in [&b"a"[..], b"b", b"c"] {
        filter.insert(item);
        filter.contains(item);
    }
    filter.advance();
    let mut after = Vec::new();
    filter.write_to(&mut after).expect("writing to a Vec cannot fail");
    WindowedBloomFilter::<[u8]>::read_from(after.as_slice()).expect("a saved filter loads");
}

/// `data` with both checksums of FORMAT.md recomputed, so that the fuzzer
/// gets past them to the fields (what an attacker who knows the format does).
fn resealed(data: &[u8]) -> Option<Vec<u8>> {
    const HEADER_CRC_AT: usize = 24;
    const BODY_AT: usize = HEADER_CRC_AT + 4;
    if data.len() < BODY_AT + 4 {
        return None;
    }
    let mut sealed = data.to_vec();
    let header = crc32c::crc32c(&sealed[..HEADER_CRC_AT]);
    sealed[HEADER_CRC_AT..BODY_AT].copy_from_slice(&header.to_le_bytes());
    let end = sealed.len() - 4;
    let body = crc32c::crc32c(&sealed[BODY_AT..end]);
    sealed[end..].copy_from_slice(&body.to_le_bytes());
    Some(sealed)
}

fuzz_target!(|data: &[u8]| {
    load_everything(data);
    if let Some(sealed) = resealed(data) {
        load_everything(&sealed);
    }
});
