//! A windowed (`WBF`) key's record (a `RESTORE` payload's value, an RDB
//! string, what `WBF.LOADCHUNK` gathers), whole and in chunks: refused, or
//! a filter that loads alike both ways, takes adds and answers them, saves
//! and reloads elsewhere with its time left, rotates by a clock, has a copy
//! follow those rotations as a replica does, survives hostile clocks and
//! `WBF.ADVANCE` arguments, forgets everything once every generation has
//! ended, and saves and reloads alike.
//!
//! Run from the repository root (docs/TESTING.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run windowed_record -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomic_bloom_redis::fuzzing::windowed_record(data));
