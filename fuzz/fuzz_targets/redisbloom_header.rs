//! A RedisBloom `BF.SCANDUMP` header, as `BF.LOADCHUNK key 1` takes it: refused, or a
//! chain that takes adds (growing within a cap), answers them, and dumps and
//! loads back alike.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run redisbloom_header -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::redisbloom_header(data));
