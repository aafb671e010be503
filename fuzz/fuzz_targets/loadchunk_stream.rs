//! A `BF.LOADCHUNK` stream for a missing key, cut from the input: refused at
//! some chunk, or a filter used as the record target uses it.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run loadchunk_stream -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::loadchunk_stream(data));
