//! This module's record (a `RESTORE` payload's value, an RDB string, what
//! `BF.LOADCHUNK` gathers): refused, or a filter that writes back its bytes,
//! takes adds (growing within a cap), answers them, and dumps and reloads alike.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run record -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::record(data));
