//! A RedisBloom cuckoo filter as `CF.LOADCHUNK` (a header, then pieces) or
//! an RDB value (any encoding) brings it: refused, or a filter that takes
//! inserts, deletes, compactions and a duplicate flood, and dumps, saves
//! and rewrites into the same filter.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run cuckoo -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::cuckoo(data));
