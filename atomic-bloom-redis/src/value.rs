//! What a key of this module's type holds: a filter (`filter.rs`) with
//! where its last dump chunk ended, or a dump still being loaded
//! (`dump.rs`).

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
