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
//! Public (hidden) only for the loom models (`loom-tests/tests/fleet_order.rs`),
//! which build this module alone: under `--cfg atomic_bloom_loom` the
//! crate compiles nothing else (and no Redis client).

use std::sync::PoisonError;

use crate::sync::{AtomicU64, Mutex, Ordering};

/// Numbers pushes, and marks where a completion stands among them.
///
/// # Example
///
/// ```
/// # #[cfg(not(atomic_bloom_loom))] {
/// use std::sync::Mutex;
/// use atomic_bloom_fleet::order::PushOrder;
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

/// Completed pages whose leases wait for their pushes to be answered: each
/// a key (its lease) and the mark of its completion.
///
/// # Example
///
/// ```
/// # #[cfg(not(atomic_bloom_loom))] {
/// use std::sync::Mutex;
/// use atomic_bloom_fleet::order::{Completions, PushOrder};
///
/// let order = PushOrder::new();
/// let lanes = vec![Mutex::new(Vec::new())];
/// let completions = Completions::new();
/// let number = {
///     let mut lane = lanes[0].lock().unwrap();
///     let number = order.number();
///     lane.push(number);
///     number
/// };
/// completions.record("page", order.mark(&lanes));
/// // The push is not answered yet: the page waits.
/// assert!(completions.take_ready(|| number).is_empty());
/// // Answered: the page is ready.
/// assert_eq!(completions.take_ready(|| u64::MAX), ["page"]);
/// # }
/// ```
#[doc(hidden)]
#[derive(Debug)]
pub struct Completions<K> {
    done: Mutex<Vec<(K, u64)>>,
}

impl<K> Default for Completions<K> {
    fn default() -> Self {
        Completions::new()
    }
}

impl<K> Completions<K> {
    /// None yet.
    pub fn new() -> Completions<K> {
        Completions {
            done: Mutex::new(Vec::new()),
        }
    }

    /// Records a completion of `key` marked `after` (by [`PushOrder::mark`]).
    pub fn record(&self, key: K, after: u64) {
        self.done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((key, after));
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        (self.done.lock().unwrap_or_else(PoisonError::into_inner)).len()
    }

    /// Whether no completion waits.
    pub fn is_empty(&self) -> bool {
        (self.done.lock().unwrap_or_else(PoisonError::into_inner)).is_empty()
    }

    /// Takes the completions whose pushes have all been answered: those
    /// marked at or below `answered_below()`, the oldest unanswered push
    /// number over every lane (`u64::MAX` when none waits).
    ///
    /// The completions are read first and the lanes after: a completion
    /// recorded after its pushes went in their lanes is then never judged
    /// by a look at the lanes older than it (the other order let a thread
    /// buffer a push and complete its page between the look and the read,
    /// and the page's lease end went out with its push still buffered).
    pub fn take_ready(&self, answered_below: impl FnOnce() -> u64) -> Vec<K> {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        if done.is_empty() {
            return Vec::new();
        }
        // Lanes are locked inside this lock; a completion locks lanes
        // before this one and never both at once, so no cycle.
        let below = answered_below();
        let mut ready = Vec::new();
        let mut waiting = Vec::with_capacity(done.len());
        for (key, after) in done.drain(..) {
            if after <= below {
                ready.push(key);
            } else {
                waiting.push((key, after));
            }
        }
        *done = waiting;
        ready
    }
}
