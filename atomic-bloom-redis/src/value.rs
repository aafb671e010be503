//! What a key of this module's type holds: a filter (`filter.rs`) with
//! where its last dump chunk ended, or a dump still being loaded
//! (`dump.rs`).

use std::sync::atomic::{AtomicI64, Ordering};

use crate::dump::{DumpState, Pending};
use crate::filter::Bloom;

/// A key's value.
// The server keeps each key's value boxed, and a key is `Loading` only
// while a dump streams in: a box for `Ready` would add a second indirection
// to every command for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Value {
    /// A filter, and what `BF.SCANDUMP` / `BF.LOADCHUNK` remember about it.
    Ready(Bloom, DumpState),
    /// A `BF.LOADCHUNK` stream that has not delivered every chunk yet.
    Loading(Pending),
}

impl Value {
    /// A new key's value: `bloom`, never dumped.
    pub(crate) fn ready(bloom: Bloom) -> Value {
        Value::Ready(bloom, DumpState::default())
    }

    /// Bytes the value takes, for `MEMORY USAGE`, `BF.INFO`'s `Size` and
    /// the server's eviction.
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Value>()
            + match self {
                Value::Ready(bloom, _) => bloom.filter_bytes(),
                Value::Loading(pending) => pending.memory_bytes(),
            }
    }

    /// The most a filter's own bytes may take for the whole value to stay
    /// within `cap`.
    pub(crate) fn filter_cap(cap: usize) -> usize {
        cap.saturating_sub(std::mem::size_of::<Value>())
    }
}

/// `bf-memory-limit-per-filter`, in bytes; 0 is none. Set by `config.rs`
/// (the server's config callbacks), read by commands and by `RESTORE`.
pub(crate) static MEMORY_LIMIT: AtomicI64 = AtomicI64::new(0);

/// `bf-memory-limit-per-filter`, if one is set.
pub(crate) fn memory_limit() -> Option<usize> {
    // Relaxed: a lone setting, written by config callbacks and read by
    // commands, all on the server's main thread.
    let limit = MEMORY_LIMIT.load(Ordering::Relaxed);
    (limit > 0).then(|| usize::try_from(limit).unwrap_or(usize::MAX))
}
