//! The one door to atomics, `Arc`, `Mutex`, `ArcSwap` and the frontier's
//! queue.
//!
//! Every other module takes its atomic types from here. In a normal build
//! they are `std`'s (and `arc-swap`'s); when the crate is compiled with
//! `RUSTFLAGS="--cfg atomic_bloom_loom"` (what `loom-tests/` does) they are
//! loom's, so the models in `loom-tests/` explore every interleaving of the
//! library's real code. The cfg is the crate's own (not `loom`, not
//! `cfg(test)`): a separate test crate can switch it on, and it flips nothing
//! inside dependencies.
//!
//! loom cannot see inside `arc-swap` or crossbeam's queue. Under the loom
//! cfg `Queue` is a `Mutex<VecDeque>` with `SegQueue`'s methods, and [`ArcSwap`] is a
//! stand-in over loom's `RwLock<Arc<T>>` with the same `load` /
//! `compare_and_swap` semantics: `load` returns the current `Arc` and
//! `compare_and_swap` replaces it only if it is still the expected one,
//! returning what was there.

#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(atomic_bloom_loom))]
pub(crate) use arc_swap::ArcSwap;
#[cfg(not(atomic_bloom_loom))]
pub(crate) use crossbeam::queue::SegQueue as Queue;

#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(atomic_bloom_loom)]
pub(crate) use loom_arc_swap::ArcSwap;
#[cfg(atomic_bloom_loom)]
pub(crate) use loom_queue::Queue;

/// `crossbeam::queue::SegQueue`'s `push`, `pop` and `len`, over a loom
/// mutex: loom cannot see crossbeam's own synchronization.
#[cfg(atomic_bloom_loom)]
mod loom_queue {
    use std::collections::VecDeque;

    use loom::sync::Mutex;

    pub(crate) struct Queue<T> {
        items: Mutex<VecDeque<T>>,
    }

    impl<T> Queue<T> {
        pub(crate) fn new() -> Self {
            Queue {
                items: Mutex::new(VecDeque::new()),
            }
        }

        pub(crate) fn push(&self, item: T) {
            self.items.lock().unwrap().push_back(item);
        }

        pub(crate) fn pop(&self) -> Option<T> {
            self.items.lock().unwrap().pop_front()
        }

        pub(crate) fn len(&self) -> usize {
            self.items.lock().unwrap().len()
        }
    }
}

#[cfg(atomic_bloom_loom)]
mod loom_arc_swap {
    use std::ops::Deref;

    use loom::sync::{Arc, RwLock};

    /// `arc_swap::ArcSwap`'s `load` and `compare_and_swap`, over a loom lock.
    pub(crate) struct ArcSwap<T> {
        current: RwLock<Arc<T>>,
    }

    /// What `load` returns: derefs to the `Arc`, as arc-swap's guard does.
    pub(crate) struct Guard<T>(Arc<T>);

    impl<T> Deref for Guard<T> {
        type Target = Arc<T>;
        fn deref(&self) -> &Arc<T> {
            &self.0
        }
    }

    impl<T> ArcSwap<T> {
        pub(crate) fn from_pointee(value: T) -> Self {
            ArcSwap {
                current: RwLock::new(Arc::new(value)),
            }
        }

        pub(crate) fn load(&self) -> Guard<T> {
            Guard(Arc::clone(&self.current.read().unwrap()))
        }

        /// Stores `new` if the current value is `expected`; returns the value
        /// that was current before (equal to `expected` on success).
        pub(crate) fn compare_and_swap(&self, expected: &Arc<T>, new: Arc<T>) -> Guard<T> {
            let mut current = self.current.write().unwrap();
            let previous = Arc::clone(&current);
            if Arc::ptr_eq(&previous, expected) {
                *current = new;
            }
            Guard(previous)
        }
    }
}
