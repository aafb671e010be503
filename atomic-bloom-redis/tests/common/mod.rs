//! The module's test harness: the `test-servers` crate (real servers,
//! ports, clusters, the fault proxy), re-exported so that every test file
//! says `mod common;` and `use common::...` as before.

#![allow(unused_imports)]

pub use test_servers::*;
