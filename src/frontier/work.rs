//! How a frontier knows when the crawl is over: a count of the items
//! accepted and not yet done (queued, or taken and still held), the
//! [`Taken`] guard that holds an item in flight, and where `wait_take`
//! sleeps and `wait_take_async` registers its waker (the protocol of
//! `src/PROTOCOLS.md`, "Frontier: in flight and finished").

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr;
use std::task::{Poll, Waker};

use crate::sync::{fence, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};

/// Times `wait_take` looks again, a spin-loop hint apart, before it sleeps:
/// about a microsecond, the time a worker takes to push the links of a page
/// it holds. Under loom, none: a spin would only add branches.
#[cfg(not(atomic_bloom_loom))]
pub(super) const SPINS: u32 = 64;
#[cfg(atomic_bloom_loom)]
pub(super) const SPINS: u32 = 0;

/// The pending count and the waiters of one frontier.
pub(super) struct Work {
    /// Items accepted and not yet done: queued, or taken and their
    /// [`Taken`] not dropped. Incremented before an item is queued,
    /// decremented when it is done.
    pending: AtomicUsize,
    /// Threads in `wait_take`'s sleeping path (asleep or about to be) and
    /// `wait_take_async` futures registered.
    sleepers: AtomicUsize,
    /// The futures' wakers; held by a sleeping thread from its last look
    /// to its wait.
    lock: Mutex<Wakers>,
    wake: Condvar,
}

/// The wakers of the `wait_take_async` futures waiting, oldest first.
pub(super) struct Wakers {
    waiting: Vec<Registered>,
    next_id: u64,
}

/// A future's place among the [`Wakers`].
struct Registered {
    id: u64,
    waker: Waker,
    /// Woken for a push or the end, and not yet polled since: if it is
    /// dropped instead, it passes the wake on.
    notified: bool,
}

impl Wakers {
    /// Marks the oldest future not yet woken as woken; its waker.
    fn notify_one(&mut self) -> Option<Waker> {
        let next = self.waiting.iter_mut().find(|entry| !entry.notified)?;
        next.notified = true;
        Some(next.waker.clone())
    }

    /// Marks every future as woken; their wakers.
    fn notify_all(&mut self) -> Vec<Waker> {
        self.waiting
            .iter_mut()
            .map(|entry| {
                entry.notified = true;
                entry.waker.clone()
            })
            .collect()
    }

    /// Removes future `id`; whether it had been woken since it last looked.
    fn remove(&mut self, id: u64) -> bool {
        match self.waiting.iter().position(|entry| entry.id == id) {
            Some(at) => self.waiting.remove(at).notified,
            None => false,
        }
    }
}

impl Work {
    pub(super) fn new() -> Self {
        Work {
            pending: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(Wakers {
                waiting: Vec::new(),
                next_id: 0,
            }),
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

    /// Items were queued: wakes one sleeping thread and one future, if
    /// any, to take them.
    #[inline]
    pub(super) fn queued(&self) {
        if self.has_sleepers() {
            self.notify_one();
        }
    }

    /// Wakes every sleeper, if any: the crawl is over, or many items came.
    pub(super) fn wake_all(&self) {
        if self.has_sleepers() {
            let wakers = self.lock().notify_all();
            self.wake.notify_all();
            wakers.into_iter().for_each(Waker::wake);
        }
    }

    /// Whether a thread sleeps or a future waits, or is about to, after
    /// the caller's change to the queue or the count.
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

    /// Wakes one sleeping thread and one waiting future. A sleeper holds
    /// the lock from its last look to its wait, and a future from its
    /// last look to its waker's registration: taking the lock here waits
    /// until both are done, so the wake is not lost. Wakers are called
    /// after the lock is released.
    #[cold]
    fn notify_one(&self) {
        let waker = self.lock().notify_one();
        self.wake.notify_one();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Wakers> {
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

    /// One poll of a waiting future, whose place among the wakers is
    /// `registered`: what `attempt` finds, `None` once the work is
    /// finished, or pending with `waker` registered. Each look happens
    /// under the lock, after the future counted itself (at its first
    /// pending poll), so no wake between a look and the registration is
    /// lost. `attempt` runs under the lock: it must not call
    /// [`done`](Self::done).
    pub(super) fn poll_until<R>(
        &self,
        registered: &mut Option<u64>,
        waker: &Waker,
        attempt: impl FnOnce() -> Option<R>,
    ) -> Poll<Option<R>> {
        let mut wakers = self.lock();
        if registered.is_none() {
            // Relaxed: the fence below orders it (see `has_sleepers`).
            self.sleepers.fetch_add(1, Ordering::Relaxed);
            // SeqCst fence: pairs with the waker's (see `has_sleepers`);
            // every later look of this future comes after it too.
            fence(Ordering::SeqCst);
        }
        let found = match attempt() {
            Some(found) => Some(found),
            None if self.is_finished() => None,
            None => {
                match registered.and_then(|id| wakers.waiting.iter_mut().find(|e| e.id == id)) {
                    Some(entry) => {
                        entry.notified = false;
                        if !entry.waker.will_wake(waker) {
                            entry.waker = waker.clone();
                        }
                    }
                    None => {
                        let id = wakers.next_id;
                        wakers.next_id += 1;
                        wakers.waiting.push(Registered {
                            id,
                            waker: waker.clone(),
                            notified: false,
                        });
                        *registered = Some(id);
                    }
                }
                return Poll::Pending;
            }
        };
        if let Some(id) = registered.take() {
            wakers.remove(id);
            // Relaxed: a waiter that leaves costs a waker at most a
            // needless notify.
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
        }
        Poll::Ready(found)
    }

    /// A waiting future dropped before it was ready: it leaves the wakers,
    /// and a wake it had been given and not used goes to another waiter,
    /// so that dropping it loses no push.
    pub(super) fn cancel(&self, registered: u64) {
        let mut wakers = self.lock();
        let notified = wakers.remove(registered);
        // Relaxed: a waiter that leaves costs a waker at most a needless
        // notify.
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        if notified {
            let waker = wakers.notify_one();
            drop(wakers);
            self.wake.notify_one();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
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
