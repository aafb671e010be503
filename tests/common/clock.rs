//! A clock the test moves, for a time window's `clock`: nanoseconds in an
//! atomic. Shared by `tests/windowed.rs` and the library's
//! `src/windowed/tests.rs` (each includes it with `#[path]`); its atomics
//! are the includer's (`crate::sync`'s in the library).

use std::time::Duration;

use super::{Arc, AtomicU64, Ordering};

/// The clock's nanoseconds, to move, and the clock that reads them.
pub fn test_clock() -> (
    Arc<AtomicU64>,
    impl Fn() -> Duration + Send + Sync + 'static,
) {
    let nanos = Arc::new(AtomicU64::new(0));
    let read = Arc::clone(&nanos);
    // Relaxed: the test's own thread moves it between operations.
    (nanos, move || {
        Duration::from_nanos(read.load(Ordering::Relaxed))
    })
}
