//! How a frontier knows when the crawl is over: a count of the items
//! accepted and not yet done (queued, or taken and still held), the
//! [`Taken`] guard that holds an item in flight, and where `wait_take`
//! sleeps (the protocol of `src/PROTOCOLS.md`, "Frontier: in flight and
//! finished").

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr;

use crate::sync::{fence, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};

/// Times `wait_take` looks again, a spin-loop hint apart, before it sleeps:
/// about a microsecond, the time a worker takes to push the links of a page
/// it holds. Under loom, none: a spin would only add branches.
#[cfg(not(atomic_bloom_loom))]
pub(super) const SPINS: u32 = 64;
#[cfg(atomic_bloom_loom)]
pub(super) const SPINS: u32 = 0;

/// The pending count and the sleepers of one frontier.
pub(super) struct Work {
    /// Items accepted and not yet done: queued, or taken and their
    /// [`Taken`] not dropped. Incremented before an item is queued,
    /// decremented when it is done.
    pending: AtomicUsize,
    /// Threads in `wait_take`'s sleeping path (asleep or about to be).
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Work {
    pub(super) fn new() -> Self {
        Work {
            pending: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// `count` items were accepted: counted before they are queued.
    #[inline]
    pub(super) fn accepted(&self, count: usize) {
        // Relaxed: the queue's push (Release) and pop (Acquire) order this
        // add before the item's `done`, and so before it in the count's
        // modification order; no data hangs off the count itself.
        self.pending.fetch_add(count, Ordering::Relaxed);
    }

    /// An item is done (its `Taken` dropped, or popped without a guard).
    #[inline]
    pub(super) fn done(&self) {
        // Release: whoever reads the count at 0 (Acquire, in `is_finished`)
        // sees everything done with every item, since each `done` is a
        // Release in the release sequence the last one ends.
        if self.pending.fetch_sub(1, Ordering::Release) == 1 {
            self.wake_all();
        }
    }

    /// Whether no item is queued or in flight.
    #[inline]
    pub(super) fn is_finished(&self) -> bool {
        // Acquire: pairs with every `done`'s Release (see there).
        self.pending.load(Ordering::Acquire) == 0
    }

    /// Items were queued: wakes one sleeper, if any, to take them.
    #[inline]
    pub(super) fn queued(&self) {
        if self.has_sleepers() {
            self.notify(|wake| wake.notify_one());
        }
    }

    /// Wakes every sleeper, if any: the crawl is over, or many items came.
    pub(super) fn wake_all(&self) {
        if self.has_sleepers() {
            self.notify(Condvar::notify_all);
        }
    }

    /// Whether a thread sleeps, or is about to, after the caller's change
    /// to the queue or the count.
    #[inline]
    fn has_sleepers(&self) -> bool {
        // SeqCst fence: pairs with the sleeper's, after its count. Either
        // the sleeper's look at the queue and the count, after its fence,
        // sees the caller's change before this fence, or this load, after
        // it, sees the sleeper counted.
        fence(Ordering::SeqCst);
        // Relaxed: the fences order it.
        self.sleepers.load(Ordering::Relaxed) != 0
    }

    #[cold]
    fn notify(&self, wake: impl FnOnce(&Condvar)) {
        // A sleeper holds the lock from its last look to its wait: taking
        // it here waits until the sleeper waits, so the wake is not lost.
        drop(self.lock());
        wake(&self.wake);
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sleeps until `attempt` finds something or the work is finished
    /// (then `None`): each look happens under the lock, after the sleeper
    /// counted itself, so no wake between a look and the wait is lost.
    /// `attempt` runs under the lock: it must not call [`done`](Self::done)
    /// (whose wake takes the lock).
    #[cold]
    pub(super) fn sleep_until<R>(&self, mut attempt: impl FnMut() -> Option<R>) -> Option<R> {
        let mut guard = self.lock();
        // Relaxed: the fence below orders it (see `has_sleepers`).
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        // SeqCst fence: pairs with the waker's (see `has_sleepers`).
        fence(Ordering::SeqCst);
        let found = loop {
            if let Some(found) = attempt() {
                break Some(found);
            }
            if self.is_finished() {
                break None;
            }
            guard = self
                .wake
                .wait(guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        };
        // Relaxed: a sleeper that leaves costs a waker at most a needless
        // notify.
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        drop(guard);
        found
    }
}

impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Work")
            // Relaxed: a snapshot for a report.
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// An item taken from a [`Frontier`](crate::Frontier), in flight until
/// this guard drops: [`wait_take`](crate::Frontier::wait_take) does not
/// call the crawl over while it lives, so the links its page yields can
/// still be pushed. Derefs to the item.
///
/// # Example
///
/// ```
/// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
/// frontier.push("https://example.com/".to_string());
/// let page = frontier.take().unwrap();
/// assert_eq!(page.as_str(), "https://example.com/");
/// assert!(!frontier.is_finished()); // the page is in flight
/// frontier.push(format!("{}about", *page));
/// drop(page);
/// assert!(!frontier.is_finished()); // its link is queued
/// let link = frontier.take().unwrap();
/// assert_eq!(link.as_str(), "https://example.com/about");
/// drop(link);
/// assert!(frontier.is_finished());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the item is done as soon as its Taken drops"]
pub struct Taken<'a, T> {
    item: T,
    work: &'a Work,
}

impl<'a, T> Taken<'a, T> {
    pub(super) fn new(item: T, work: &'a Work) -> Self {
        Taken { item, work }
    }

    /// The item, moved out without a clone; it is done here, as when the
    /// guard drops. Push the links its page yields before (through the
    /// guard's `Deref`): once every item is done and nothing is queued,
    /// the crawl is over.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// frontier.push("https://example.com/".to_string());
    /// let page = frontier.take().unwrap();
    /// frontier.push(format!("{}about", *page)); // its links first
    /// let url: String = page.into_inner();
    /// assert_eq!(url, "https://example.com/");
    /// assert!(!frontier.is_finished()); // the link is queued
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        // Safety: `this` is never dropped and its item never read again,
        // so the item is moved out exactly once and owned by the caller.
        let item = unsafe { ptr::read(&this.item) };
        this.work.done();
        item
    }
}

impl<T> Deref for Taken<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T> Drop for Taken<'_, T> {
    fn drop(&mut self) {
        self.work.done();
    }
}

impl<T: fmt::Debug> fmt::Debug for Taken<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Taken").field(&self.item).finish()
    }
}
