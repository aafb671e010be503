//! The one door to atomics and `Arc`.
//!
//! Every other module takes its atomic types from here. In a normal build
//! they are `std`'s; when the crate is compiled with
//! `RUSTFLAGS="--cfg atomic_bloom_loom"` (what `loom-tests/` does) they are
//! loom's, so the models in `loom-tests/` explore every interleaving of the
//! library's real code. The cfg is the crate's own (not `loom`, not
//! `cfg(test)`): a separate test crate can switch it on, and it flips nothing
//! inside dependencies.

#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
