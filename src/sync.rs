//! The one door to atomics, `Arc`, `Mutex`, `Condvar`, `ArcSwap` and the
//! frontier's queue.
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
//! stand-in over loom's `RwLock<Arc<T>>` with the same `load` / `store` /
//! `compare_and_swap` semantics: `load` returns the current `Arc`, `store`
//! replaces it, and `compare_and_swap` replaces it only if it is still the
//! expected one, returning what was there.

#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(not(atomic_bloom_loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// `std`'s `Arc` under every cfg: for shared ownership outside every
/// protocol (an [`Error`](crate::Error)'s I/O source), which loom need not
/// see and which may be made outside a model.
pub(crate) use std::sync::Arc as PlainArc;

#[cfg(not(atomic_bloom_loom))]
pub(crate) use arc_swap::ArcSwap;
#[cfg(not(atomic_bloom_loom))]
pub(crate) use crossbeam_queue::SegQueue as Queue;

#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(atomic_bloom_loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(atomic_bloom_loom)]
pub(crate) use loom_arc_swap::ArcSwap;
#[cfg(atomic_bloom_loom)]
pub(crate) use loom_queue::Queue;

/// One round of waiting for another thread (round `round` of a wait):
/// spins a while, then gives the core away; under loom, yields (so that a
/// model explores the other threads).
#[inline]
pub(crate) fn wait_round(round: u32) {
    #[cfg(not(atomic_bloom_loom))]
    if round < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
    #[cfg(atomic_bloom_loom)]
    {
        let _ = round;
        loom::thread::yield_now();
    }
}

/// Entries a [`Memo`] keeps; past them it forgets its oldest.
#[cfg(not(atomic_bloom_loom))]
const MEMO_ENTRIES: usize = 256;

/// A small process-wide memo of a pure function's results (sizing's
/// search), behind a lock held only to look up or record, never while the
/// result is computed. It forgets its oldest entry once full.
#[cfg(not(atomic_bloom_loom))]
pub(crate) struct Memo<K, V> {
    entries: Mutex<Vec<(K, V)>>,
}

#[cfg(not(atomic_bloom_loom))]
impl<K: PartialEq, V: Copy> Memo<K, V> {
    pub(crate) const fn new() -> Self {
        Memo {
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The value remembered for `key`, or `make()`'s, then remembered.
    pub(crate) fn get_or_insert_with(&self, key: K, make: impl FnOnce() -> V) -> V {
        let lock = || {
            self.entries
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some((_, value)) = lock().iter().find(|(known, _)| *known == key) {
            return *value;
        }
        let value = make();
        let mut entries = lock();
        if entries.len() >= MEMO_ENTRIES {
            entries.remove(0);
        }
        entries.push((key, value));
        value
    }
}

/// Under loom a memo remembers nothing: loom's locks cannot live in a
/// static, and the models need no sizing speed.
#[cfg(atomic_bloom_loom)]
pub(crate) struct Memo<K, V>(std::marker::PhantomData<fn(K) -> V>);

#[cfg(atomic_bloom_loom)]
impl<K, V> Memo<K, V> {
    pub(crate) const fn new() -> Self {
        Memo(std::marker::PhantomData)
    }

    pub(crate) fn get_or_insert_with(&self, _key: K, make: impl FnOnce() -> V) -> V {
        make()
    }
}

/// A small number that stays the same for the calling thread and differs
/// between threads started one after another (a round-robin ticket taken on
/// the thread's first call): what picks a thread's slot of a
/// [`ThreadTally`](crate::tally::ThreadTally), so that threads add to
/// different cache lines.
#[cfg(not(atomic_bloom_loom))]
#[inline]
pub(crate) fn thread_ticket() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;

    static NEXT_TICKET: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static TICKET: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    TICKET
        .try_with(|ticket| {
            if ticket.get() == usize::MAX {
                // Relaxed: a round-robin number; it orders nothing.
                ticket.set(NEXT_TICKET.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1));
            }
            ticket.get()
        })
        // A thread tearing down its thread-locals: any slot is correct.
        .unwrap_or(0)
}

/// Under loom every thread takes ticket 0: all threads add to one slot, the
/// most contended case, so the models see every race on it.
#[cfg(atomic_bloom_loom)]
#[inline]
pub(crate) fn thread_ticket() -> usize {
    0
}

/// Live threads that can hold a [`thread_index`].
#[cfg(not(atomic_bloom_loom))]
const THREAD_INDEXES: usize = 64;

/// A small number (below 64) that no other live thread holds: taken, the
/// lowest free one, on the thread's first call and given back when the
/// thread exits, so a pool that starts threads over and over reuses the
/// same few. `None` when 64 threads hold one, or while the thread tears
/// down its thread-locals. What picks the count slot a windowed filter's
/// thread writes alone (`src/windowed/ring.rs`): the giving back is a
/// `Release` and the taking an `Acquire`, so a thread that takes an index
/// sees everything its last holder wrote.
#[cfg(not(atomic_bloom_loom))]
#[inline]
pub(crate) fn thread_index() -> Option<usize> {
    use std::cell::Cell;

    /// Bit `i` set: index `i` is held.
    static HELD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// The index a thread holds, given back on drop (`u8::MAX`: none).
    struct Held(Cell<u8>);
    const UNTAKEN: u8 = u8::MAX;
    const NONE: u8 = u8::MAX - 1;

    impl Drop for Held {
        fn drop(&mut self) {
            let index = self.0.get();
            // From here on the thread counts on the shared count: the index
            // is someone else's once given back. (`INDEX` has no destructor,
            // so on most targets it is there to the thread's last
            // thread-local destructor; where thread-locals are keyed it may
            // be gone already, and then nothing reads it again.)
            let _ = INDEX.try_with(|cached| cached.set(NONE));
            if usize::from(index) < THREAD_INDEXES {
                // Release: the next holder's Acquire sees every write this
                // thread made under the index.
                HELD.fetch_and(!(1 << index), Ordering::Release);
            }
        }
    }

    fn take() -> u8 {
        // Relaxed: a first look; the CAS below decides.
        let mut held = HELD.load(Ordering::Relaxed);
        while held != u64::MAX {
            let index = (!held).trailing_zeros();
            // Acquire: pairs with the last holder's Release on giving it
            // back (see `Held::drop`).
            match HELD.compare_exchange_weak(
                held,
                held | 1 << index,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return index as u8,
                Err(actual) => held = actual,
            }
        }
        NONE
    }

    /// Takes an index for this thread and arranges for it to be given
    /// back (once per thread: off the insert path).
    #[cold]
    #[inline(never)]
    fn first_call() -> u8 {
        let index = GUARD
            .try_with(|guard| {
                let index = take();
                guard.0.set(index);
                index
            })
            // The thread is tearing down its thread-locals: no index.
            .unwrap_or(NONE);
        let _ = INDEX.try_with(|cached| cached.set(index));
        index
    }

    thread_local! {
        /// The calling thread's index (`UNTAKEN`: not taken yet; `NONE`:
        /// none was free, or given back): a plain cell with no destructor,
        /// so that reading it is one load.
        static INDEX: Cell<u8> = const { Cell::new(UNTAKEN) };
        /// What gives the index back when the thread exits.
        static GUARD: Held = const { Held(Cell::new(UNTAKEN)) };
    }
    // `try_with`: on targets whose thread-locals are keyed, `INDEX` can be
    // gone while other destructors still run (where it has no destructor,
    // as on Linux, this is one load).
    let mut index = INDEX.try_with(Cell::get).unwrap_or(NONE);
    if index == UNTAKEN {
        index = first_call();
    }
    (usize::from(index) < THREAD_INDEXES).then_some(usize::from(index))
}

/// Under loom, the number of loom's own thread id (the model's first
/// thread is 0): distinct for the threads of one model.
#[cfg(atomic_bloom_loom)]
#[inline]
pub(crate) fn thread_index() -> Option<usize> {
    let id = format!("{:?}", loom::thread::current().id());
    id.trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .ok()
}

/// `crossbeam_queue::SegQueue`'s `push`, `pop` and `len`, over a loom
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

    /// `arc_swap::ArcSwap`'s `load`, `store` and `compare_and_swap`, over a
    /// loom lock.
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

        /// Replaces the current value with `new`, whatever it is.
        pub(crate) fn store(&self, new: Arc<T>) {
            *self.current.write().unwrap() = new;
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
