//! A RedisBloom RDB value (its first byte the encoding version), as an RDB
//! file or `RESTORE` brings it: refused, or a chain used as the header target
//! uses it.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run redisbloom_rdb -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::redisbloom_rdb(data));
