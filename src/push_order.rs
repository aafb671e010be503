//! The order between a fleet frontier's pushes and its completions: a
//! completed page's lease may end only once every push the page made has
//! been answered, and a page's "push" may be answered by another thread's
//! buffered push of the same URL (the local filter said it was seen).
//!
//! Pushes are numbered while their lane (a shard's outbox) is locked, so
//! each lane's numbers rise. A completion marks the next number after
//! passing through every lane's lock: a push whose local-filter bit the
//! completing thread saw set was made inside a lane's lock, so passing
//! through that lock orders its number before the mark. The completion is
//! ready once every lane's oldest unanswered push is at or past its mark.
//!
//! Public only for the loom model (`loom-tests/tests/fleet_order.rs`).

use std::sync::PoisonError;

use crate::sync::{AtomicU64, Mutex, Ordering};

/// Numbers pushes, and marks where a completion stands among them.
///
/// # Example
///
/// ```
/// # #[cfg(not(atomic_bloom_loom))] {
/// use std::sync::Mutex;
/// use atomic_bloom::push_order::PushOrder;
///
/// let order = PushOrder::new();
/// let lanes = vec![Mutex::new(Vec::new())];
/// {
///     let mut lane = lanes[0].lock().unwrap();
///     let number = order.number();
///     lane.push(number);
/// }
/// let mark = order.mark(&lanes);
/// // Every push made before the mark is numbered below it.
/// assert!(lanes[0].lock().unwrap().iter().all(|&number| number < mark));
/// # }
/// ```
#[doc(hidden)]
#[derive(Debug)]
pub struct PushOrder {
    next: AtomicU64,
}

impl Default for PushOrder {
    fn default() -> Self {
        PushOrder::new()
    }
}

impl PushOrder {
    /// Numbers from 1.
    pub fn new() -> PushOrder {
        PushOrder {
            next: AtomicU64::new(1),
        }
    }

    /// A push's number. Call it holding the lane's lock, after whatever
    /// another thread may see of the push (the local filter's bits).
    pub fn number(&self) -> u64 {
        // Relaxed: numbered under the lane's lock, and read by `mark` only
        // after passing through every lane's lock, which orders it.
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The mark of a completion: every push this thread made, or saw the
    /// effects of inside a lane's lock, is numbered below it.
    pub fn mark<T>(&self, lanes: &[Mutex<T>]) -> u64 {
        for lane in lanes {
            drop(lane.lock().unwrap_or_else(PoisonError::into_inner));
        }
        // Relaxed: the lock passes above order every number made inside a
        // lane before this read; this thread's own come before it anyway.
        self.next.load(Ordering::Relaxed)
    }
}
