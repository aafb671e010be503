//! The one door to atomics and locks in this crate, as `src/sync.rs` is the
//! library's: `std`'s in a normal build, loom's when the crate is compiled
//! with `RUSTFLAGS="--cfg atomic_bloom_loom"` (what `loom-tests/` does for
//! the completion order's models, `order.rs`, the only module built then).

#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::Mutex;
