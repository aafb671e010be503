//! `wait_take_async`: `wait_take` as a future, for any executor.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Frontier, Taken};

impl<T, S> Frontier<T, S> {
    /// [`wait_take`](Self::wait_take) as a future: takes the oldest queued
    /// item, waiting for one while other items are in flight; `None` once
    /// nothing is queued and nothing in flight (see *Consistency*). An async
    /// crawler's tasks await it instead of blocking a runtime thread.
    ///
    /// It needs no particular runtime: a push wakes one waiting future (and
    /// one sleeping `wait_take`), and the last item in flight, when its
    /// [`Taken`] drops, wakes them all, through the wakers they were
    /// polled with.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it is ready takes nothing, and a wake it
    /// was given and did not use goes to another waiter: a `select!` or a
    /// timeout around it loses no item.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::Arc;
    /// use atomic_bloom::Frontier;
    ///
    /// let frontier: Arc<Frontier<u32>> = Arc::new(Frontier::new(1_000, 0.01)?);
    /// frontier.push(1);
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let crawled = runtime.block_on(async {
    ///     let workers: Vec<_> = (0..4)
    ///         .map(|_| {
    ///             let frontier = Arc::clone(&frontier);
    ///             tokio::spawn(async move {
    ///                 let mut crawled = 0;
    ///                 while let Some(page) = frontier.wait_take_async().await {
    ///                     crawled += 1;
    ///                     // Page n links to 2n and 2n + 1.
    ///                     for link in [2 * *page, 2 * *page + 1].into_iter().filter(|&n| n < 100) {
    ///                         frontier.push(link);
    ///                     }
    ///                     tokio::task::yield_now().await; // as a fetch would
    ///                 }
    ///                 crawled
    ///             })
    ///         })
    ///         .collect();
    ///     let mut crawled = 0;
    ///     for worker in workers {
    ///         crawled += worker.await.unwrap();
    ///     }
    ///     crawled
    /// });
    /// assert_eq!(crawled, 99);
    /// assert!(frontier.is_finished());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_take_async(&self) -> WaitTake<'_, T, S> {
        WaitTake {
            frontier: self,
            registered: None,
        }
    }
}

/// The future of [`Frontier::wait_take_async`]: the oldest queued item, or
/// `None` once nothing is queued and nothing in flight. Cancel-safe.
#[must_use = "futures do nothing unless awaited"]
pub struct WaitTake<'a, T, S> {
    frontier: &'a Frontier<T, S>,
    /// Its place among the frontier's wakers, from its first pending poll
    /// until it is ready or dropped.
    registered: Option<u64>,
}

impl<'a, T, S> Future for WaitTake<'a, T, S> {
    type Output = Option<Taken<'a, T>>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let frontier = this.frontier;
        if this.registered.is_none() {
            // Without the lock while nothing waits: most polls find an item.
            if let Some(taken) = frontier.take() {
                return Poll::Ready(Some(taken));
            }
            if frontier.work.is_finished() {
                return Poll::Ready(None);
            }
        }
        frontier
            .work
            .poll_until(&mut this.registered, context.waker(), || frontier.take())
    }
}

impl<T, S> Drop for WaitTake<'_, T, S> {
    fn drop(&mut self) {
        if let Some(registered) = self.registered {
            self.frontier.work.cancel(registered);
        }
    }
}

impl<T, S> fmt::Debug for WaitTake<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitTake")
            .field("registered", &self.registered.is_some())
            .finish_non_exhaustive()
    }
}
