//! A RedisBloom chain built from the input so that RedisBloom's own checks
//! pass (options, growth, up to 4,096 links at rates down to 5e-324, item
//! counts up to 2^64 - 1), loaded as `BF.LOADCHUNK key 1` takes its
//! header; then adds, and every way out and back in (`BF.SCANDUMP` into
//! `BF.LOADCHUNK`, the RDB value into `RESTORE` and a reload), each of
//! which must take the state the adds left.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run redisbloom_chain -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::redisbloom_chain(data));
