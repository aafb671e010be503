//! A windowed (`WBF`) key's record (a `RESTORE` payload's value, an RDB
//! string, what `WBF.LOADCHUNK` gathers), whole and in chunks: refused, or
//! a filter that loads alike both ways, takes adds, answers them, rotates,
//! and saves and reloads alike.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run windowed_record -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::windowed_record(data));
