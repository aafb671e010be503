//! `Frontier`: a crawler's to-visit queue that drops what it has seen.

mod seen;
mod wait;
mod work;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};

pub(crate) use seen::Seen;
pub use wait::WaitTake;
pub use work::Taken;
use work::Work;

use crate::sync::{AtomicBool, Ordering, Queue};
use crate::{BloomFilter, DefaultHasher, Error, Layout, ScalableBloomFilter, WindowedBloomFilter};

/// A crawler's to-visit queue: [`push`](Self::push) drops an item that was
/// pushed before, [`wait_take`](Self::wait_take) hands out the others and
/// says when the crawl is over, and every worker thread shares one
/// `Arc<Frontier<String>>`; async workers await
/// [`wait_take_async`](Self::wait_take_async) instead.
///
/// It is a Bloom filter of everything ever pushed in front of crossbeam's
/// lock-free `SegQueue`. Popping does not forget: an item is pushed at most
/// once in the frontier's life, unless the frontier is
/// [windowed](Self::windowed). A false positive of the filter drops a new
/// item, at the filter's rate; nothing accepted is ever lost.
///
/// # Which filter
///
/// * [`Frontier::new`]: a [`BloomFilter`] with [`Layout::Word`], where an
///   insert is one atomic test-and-set: when several workers find the same
///   URL at the same instant, exactly one push is accepted, so a URL is
///   never queued twice.
/// * [`Frontier::from_filter`] with a [`Layout::CacheLine`] filter: about
///   15% less memory at 1% (see the [`Layout`] table) and faster inserts,
///   but two workers racing on the same new URL may both queue it.
/// * [`Frontier::scalable`]: a [`ScalableBloomFilter`] (also
///   [`Layout::Word`]) when no capacity can be guessed. Exactly-once holds
///   except for racing pushes that straddle a growth.
/// * [`Frontier::windowed`]: a [`WindowedBloomFilter`] (also
///   [`Layout::Word`]), for re-visits: an item is admitted again once
///   `window` other items have been admitted by pushes that returned after
///   its own push began (the window's count, as
///   [`WindowedBloomFilter`] counts it), and never sooner,
///   so a crawler fetches each page again after at least `window` other
///   pages. A push of an item seen within the window is dropped without
///   refreshing it, so a page linked from everywhere is still re-visited
///   on time. Exactly-once holds except for racing pushes that straddle a
///   rotation.
///
/// Past its capacity a fixed filter's rate rises above the target: the
/// frontier logs one warning through the `log` crate and
/// [`is_over_capacity`](Self::is_over_capacity) turns true. A scalable one
/// does the same when it stops growing at its memory limit.
///
/// # Example
///
/// Workers take a page, push the links they find on it, and stop when
/// nothing is queued and no other worker holds a page.
///
/// ```
/// use std::sync::Arc;
/// use atomic_bloom::Frontier;
///
/// let frontier: Arc<Frontier<String>> = Arc::new(Frontier::new(1_000_000, 0.01)?);
/// frontier.push("https://example.com/0".to_string()); // before the workers start
/// let workers: Vec<_> = (0..4)
///     .map(|_| {
///         let frontier = Arc::clone(&frontier);
///         std::thread::spawn(move || {
///             let mut fetched = 0;
///             while let Some(page) = frontier.wait_take() {
///                 fetched += 1;
///                 let n: u32 = page.rsplit('/').next().unwrap().parse().unwrap();
///                 for link in [2 * n + 1, 2 * n + 2].into_iter().filter(|&link| link < 1000) {
///                     frontier.push(format!("https://example.com/{link}"));
///                 }
///             } // `page` drops here: done, after its links were pushed
///             fetched
///         })
///     })
///     .collect();
/// let fetched: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
/// assert_eq!(fetched, 1000);
/// assert!(frontier.is_finished());
/// assert!(!frontier.push("https://example.com/7".to_string())); // seen: dropped
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Consistency
///
/// An accepted push is in the queue before `push` returns, so a take that
/// happens after it can take it. The queue is FIFO in the order pushes
/// complete, and so FIFO per producer. [`len`](Self::len) and the
/// filter's figures are snapshots.
///
/// An item is *pending* from its accepted push until it is done: when its
/// [`Taken`] drops, or when [`pop`](Self::pop) hands it out.
/// [`is_finished`](Self::is_finished) and [`wait_take`](Self::wait_take)'s
/// `None` say that at some instant no item was pending; once so, it stays
/// so unless a push comes from outside the workers (a page's links, pushed
/// while its `Taken` lives, keep the crawl going). So push the first items
/// before the workers start, or before they call `wait_take`. When
/// `wait_take` returns `None`, everything the workers did before dropping
/// their items happens-before it.
pub struct Frontier<T, S = DefaultHasher> {
    seen: Seen<T, S>,
    queue: Queue<T>,
    /// The pending count and where `wait_take` sleeps.
    work: Work,
    /// Set once the filter passed its capacity; the warning is logged once.
    over_capacity: AtomicBool,
}

impl<T: Hash> Frontier<T, DefaultHasher> {
    /// A frontier for `capacity` distinct items at false-positive rate
    /// `rate`, on a [`Layout::Word`] filter with a random seed.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::new`]: [`Error::ZeroCapacity`],
    /// [`Error::InvalidFalsePositiveRate`], [`Error::TooLarge`],
    /// [`Error::AllocationFailed`], [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(10_000, 0.01)?;
    /// assert_eq!(frontier.layout(), atomic_bloom::Layout::Word);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(capacity: usize, rate: f64) -> Result<Self, Error> {
        let filter = BloomFilter::builder(capacity, rate)
            .layout(Layout::Word)
            .build()?;
        Ok(Self::from_seen(Seen::fresh(filter)))
    }

    /// A frontier on a [`ScalableBloomFilter`] with [`Layout::Word`]
    /// stages, for when no capacity can be guessed: it starts at
    /// `initial_capacity` and grows, keeping the total rate at `rate`.
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::new`].
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u64> = atomic_bloom::Frontier::scalable(1_000, 0.01)?;
    /// for i in 0..100_000u64 { frontier.push(i); }
    /// assert!(frontier.len() > 99_000);
    /// assert!(!frontier.is_over_capacity());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scalable(initial_capacity: usize, rate: f64) -> Result<Self, Error> {
        let filter = ScalableBloomFilter::builder(initial_capacity, rate)
            .layout(Layout::Word)
            .build()?;
        Ok(Self::from_scalable(filter))
    }
}

impl<T: Hash> Frontier<T, DefaultHasher> {
    /// A frontier that admits an item again once `window` other items have
    /// been admitted after it (counted from its push's start, as
    /// [`WindowedBloomFilter`] counts its window; forgotten by
    /// `window × 4/3`), on a
    /// [`WindowedBloomFilter`] with [`Layout::Word`] at false-positive rate
    /// `rate`, with a random seed. For a time window or other generations,
    /// build the filter and use [`from_windowed`](Self::from_windowed).
    ///
    /// Popped items are crawled in the order they were admitted, so with
    /// one queue the pages fetched between two visits of a page number at
    /// least `window`.
    ///
    /// # Errors
    ///
    /// As [`WindowedBloomFilter::new`]: [`Error::ZeroWindow`],
    /// [`Error::InvalidFalsePositiveRate`], [`Error::TooLarge`],
    /// [`Error::AllocationFailed`], [`Error::SeedUnavailable`].
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u64> = atomic_bloom::Frontier::windowed(1_000, 0.01)?;
    /// assert!(frontier.push(7));
    /// assert!(!frontier.push(7)); // within the window: dropped
    /// for page in 0..2_000u64 {
    ///     frontier.push(1_000_000 + page);
    /// }
    /// assert!(frontier.push(7)); // left the window: admitted again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn windowed(window: usize, rate: f64) -> Result<Self, Error> {
        let filter = WindowedBloomFilter::builder(window, rate)
            .layout(Layout::Word)
            .build()?;
        Ok(Self::from_windowed(filter))
    }
}

impl<T, S> Frontier<T, S> {
    /// A frontier that re-admits items on `filter`'s schedule (a count or a
    /// time window, any layout, seed or hasher). Items already in the
    /// filter count as seen.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use atomic_bloom::{Frontier, WindowedBloomFilter};
    ///
    /// let daily = WindowedBloomFilter::builder(1_000_000, 0.01)
    ///     .time_window(Duration::from_secs(24 * 3600))
    ///     .build()?;
    /// let frontier: Frontier<String> = Frontier::from_windowed(daily);
    /// assert_eq!(frontier.capacity(), 1_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_windowed(filter: WindowedBloomFilter<T, S>) -> Self {
        Self::from_seen(Seen::Windowed(Box::new(filter)))
    }

    /// A frontier on `filter`, built with any layout, seed or hasher.
    /// Items already in the filter count as seen, and its set bits towards
    /// its fill (one pass over the filter, O(size); [`new`](Self::new)
    /// makes none).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, Frontier, Layout};
    ///
    /// let filter = BloomFilter::builder(100_000, 0.001).layout(Layout::CacheLine).seed(7).build()?;
    /// let frontier: Frontier<String> = Frontier::from_filter(filter);
    /// assert_eq!(frontier.layout(), Layout::CacheLine);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_filter(filter: BloomFilter<T, S>) -> Self {
        Self::from_seen(Seen::fixed(filter))
    }

    /// A frontier on a scalable `filter`.
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{Frontier, ScalableBloomFilter};
    ///
    /// let filter = ScalableBloomFilter::builder(1_000, 0.01).memory_limit(64 << 20).build()?;
    /// let frontier: Frontier<String> = Frontier::from_scalable(filter);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_scalable(filter: ScalableBloomFilter<T, S>) -> Self {
        Self::from_seen(Seen::Scalable(filter))
    }

    /// A frontier on `seen`, with nothing queued; over capacity already if
    /// the filter is.
    fn from_seen(seen: Seen<T, S>) -> Self {
        Frontier {
            over_capacity: AtomicBool::new(seen.is_over_capacity()),
            seen,
            queue: Queue::new(),
            work: Work::new(),
        }
    }

    /// Takes the oldest queued item, or `None` when the queue is empty at
    /// this instant (other workers may still push). The item counts as in
    /// flight until the [`Taken`] drops: push what it leads to first.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u32> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// frontier.push(1);
    /// let one = frontier.take().unwrap();
    /// assert_eq!(*one, 1);
    /// assert!(frontier.take().is_none());
    /// assert!(!frontier.is_finished());
    /// drop(one);
    /// assert!(frontier.is_finished());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&self) -> Option<Taken<'_, T>> {
        // Acquire inside crossbeam: the item's contents come with it.
        let item = self.queue.pop()?;
        Some(Taken::new(item, &self.work))
    }

    /// Takes the oldest queued item, waiting for one if the queue is empty
    /// while other items are in flight; `None` once nothing is queued and
    /// nothing in flight: the crawl is over (see *Consistency*).
    ///
    /// It looks again a few times, a spin-loop hint apart, then sleeps
    /// until a push or the last item in flight wakes it: no busy loop.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u32> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// frontier.push(1);
    /// let one = frontier.wait_take().unwrap();
    /// std::thread::scope(|scope| {
    ///     // Nothing queued, but 1 is in flight: the waiter waits.
    ///     let waiter = scope.spawn(|| frontier.wait_take().map(|item| *item));
    ///     frontier.push(*one + 1);
    ///     drop(one);
    ///     assert_eq!(waiter.join().unwrap(), Some(2));
    /// });
    /// assert!(frontier.wait_take().is_none()); // nothing queued or in flight
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_take(&self) -> Option<Taken<'_, T>> {
        for _ in 0..work::SPINS {
            if let Some(taken) = self.take() {
                return Some(taken);
            }
            if self.work.is_finished() {
                return None;
            }
            std::hint::spin_loop();
        }
        self.work.sleep_until(|| self.take())
    }

    /// Whether nothing is queued and nothing in flight: every accepted item
    /// was taken and its [`Taken`] dropped, or popped (see *Consistency*).
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u32> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// assert!(frontier.is_finished()); // nothing pushed yet
    /// frontier.push(1);
    /// assert!(!frontier.is_finished());
    /// drop(frontier.take());
    /// assert!(frontier.is_finished());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_finished(&self) -> bool {
        self.work.is_finished()
    }

    /// Takes the oldest queued item as done at once (no guard), or `None`
    /// when the queue is empty at this instant. Since the item is done,
    /// [`wait_take`](Self::wait_take) may call the crawl over before its
    /// links are pushed: use [`take`](Self::take) for that.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u32> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// frontier.push(1);
    /// frontier.push(2);
    /// assert_eq!(frontier.pop(), Some(1));
    /// assert_eq!(frontier.pop(), Some(2));
    /// assert_eq!(frontier.pop(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pop(&self) -> Option<T> {
        // Acquire inside crossbeam: the item's contents come with it.
        let item = self.queue.pop()?;
        self.work.done();
        Some(item)
    }

    /// Items queued now (a snapshot).
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u32> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// frontier.push(1);
    /// frontier.push(1);
    /// assert_eq!(frontier.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        // SeqCst loads inside crossbeam: a snapshot of head and tail.
        self.queue.len()
    }

    /// True when nothing is queued at this instant.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u32> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// assert!(frontier.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the filter passed its capacity (a fixed filter), or stopped
    /// growing at its memory limit (a scalable one): from then on new items
    /// are dropped more often than the target rate says. Logged once, as a
    /// warning, when it happens.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u64> = atomic_bloom::Frontier::new(1_000, 0.01)?;
    /// for i in 0..500u64 { frontier.push(i); }
    /// assert!(!frontier.is_over_capacity());
    /// for i in 500..10_000u64 { frontier.push(i); }
    /// assert!(frontier.is_over_capacity());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        // Relaxed: a flag that publishes nothing else.
        self.over_capacity.load(Ordering::Relaxed)
    }

    /// Records, once, that the filter can no longer keep its rate.
    #[cold]
    fn note_over_capacity(&self) {
        // Relaxed: a flag that publishes nothing else; the swap makes
        // exactly one caller log, and the load spares later callers the RMW.
        if !self.over_capacity.load(Ordering::Relaxed)
            // Relaxed: as above.
            && !self.over_capacity.swap(true, Ordering::Relaxed)
        {
            log::warn!(
                "atomic-bloom frontier: the seen-filter passed its capacity of {} items; \
                 new items will be dropped as seen more often than the target rate {} \
                 (build a larger frontier, or use Frontier::scalable)",
                self.capacity(),
                self.target_fpr()
            );
        }
    }

    /// Distinct items the filter holds at its target rate (for a scalable
    /// filter, what its present stages hold).
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(10_000, 0.01)?;
    /// assert!(frontier.capacity() >= 10_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.seen.capacity()
    }

    /// The false-positive rate the filter was built for: the chance that a
    /// new item is dropped as seen.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(10_000, 0.02)?;
    /// assert_eq!(frontier.target_fpr(), 0.02);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target_fpr(&self) -> f64 {
        self.seen.target_fpr()
    }

    /// The false-positive rate expected now, from the filter's fill.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u64> = atomic_bloom::Frontier::new(10_000, 0.01)?;
    /// for i in 0..5_000u64 { frontier.push(i); }
    /// assert!(frontier.estimated_fpr() < 0.01);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        self.seen.estimated_fpr()
    }

    /// Distinct items ever accepted, estimated from the filter's fill.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<u64> = atomic_bloom::Frontier::new(100_000, 0.01)?;
    /// for i in 0..50_000u64 { frontier.push(i); }
    /// while frontier.pop().is_some() {}
    /// assert!((frontier.seen_estimate() as f64 - 50_000.0).abs() < 1_500.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seen_estimate(&self) -> usize {
        self.seen.len_estimate()
    }

    /// Bytes of the seen-filter (the queued items are not counted: they are
    /// the caller's).
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(1_000_000, 0.01)?;
    /// assert!(frontier.memory_bytes() < 4 << 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.seen.memory_bytes()
    }

    /// The layout of the seen-filter.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// assert_eq!(frontier.layout(), atomic_bloom::Layout::Word);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layout(&self) -> Layout {
        self.seen.layout()
    }
}

/// For saving and loading (`src/persist/frontier.rs`).
impl<T, S> Frontier<T, S> {
    pub(crate) fn seen_filter(&self) -> &Seen<T, S> {
        &self.seen
    }

    /// Pops every queued item, in queue order, for [`requeue`](Self::requeue)
    /// to put back: they stay pending meanwhile, so no `wait_take` calls
    /// the crawl over while a save holds them.
    pub(crate) fn take_queued(&self) -> Vec<T> {
        // Acquire inside crossbeam: the items' contents come with them.
        std::iter::from_fn(|| self.queue.pop()).collect()
    }

    /// Queues `items` in order, without the filter: they were accepted by
    /// it before, and are pending already.
    pub(crate) fn requeue(&self, items: impl IntoIterator<Item = T>) {
        for item in items {
            // Release inside crossbeam: the item is published with the slot.
            self.queue.push(item);
        }
        self.work.wake_all();
    }

    /// A frontier over a loaded filter with `items` queued (and pending);
    /// over capacity already if its fixed filter is full.
    pub(crate) fn from_loaded(seen: Seen<T, S>, items: Vec<T>) -> Self {
        let frontier = Frontier::from_seen(seen);
        frontier.work.accepted(items.len());
        frontier.requeue(items);
        frontier
    }
}

impl<T: Hash, S: BuildHasher> Frontier<T, S> {
    /// Queues `item` unless it was pushed before; returns whether it was
    /// queued. A false positive of the filter drops a new item (at the
    /// target rate); an accepted item is never lost.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// assert!(frontier.push("a".to_string()));
    /// assert!(!frontier.push("a".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&self, item: T) -> bool {
        let inserted = self.seen.insert(&item);
        if inserted.over_capacity {
            self.note_over_capacity();
        }
        let new = inserted.new;
        if new {
            self.enqueue(item);
        }
        new
    }

    /// Queues `item` unless it was pushed before, as [`push`](Self::push)
    /// does, making the owned item (`to_owned`) only when it is new: most
    /// of a crawl's links were seen before, and cost a hash and a lookup.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// assert!(frontier.push_ref("https://a.example/"));
    /// assert!(!frontier.push_ref("https://a.example/")); // no String made
    /// assert_eq!(frontier.pop().as_deref(), Some("https://a.example/"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_ref<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ToOwned<Owned = T> + Hash + ?Sized,
    {
        // `Borrow` promises equal hashes for the owned and borrowed forms.
        let inserted = self.seen.insert(item);
        if inserted.over_capacity {
            self.note_over_capacity();
        }
        let new = inserted.new;
        if new {
            self.enqueue(item.to_owned());
        }
        new
    }

    /// Queues an item the filter accepted: pending first, then queued,
    /// then a sleeping `wait_take` woken.
    #[inline]
    fn enqueue(&self, item: T) {
        self.work.accepted(1);
        // Release inside crossbeam: hands the item to the taker.
        self.queue.push(item);
        self.work.queued();
    }

    /// Whether `item` was pushed before (or is a false positive). Takes any
    /// borrowed form: `seen("url")` on a `Frontier<String>`.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
    /// frontier.push("https://a.example/".to_string());
    /// assert!(frontier.seen("https://a.example/"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seen<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        // `Borrow` promises equal hashes for the owned and borrowed forms.
        self.seen.contains(item)
    }
}

/// Pushes every item, as [`push`](Frontier::push) one at a time would:
/// those seen before are dropped.
///
/// # Example
///
/// ```
/// let mut frontier: atomic_bloom::Frontier<String> = atomic_bloom::Frontier::new(100, 0.01)?;
/// frontier.extend(["a".to_string(), "b".to_string(), "a".to_string()]);
/// assert_eq!(frontier.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: Hash, S: BuildHasher> Extend<T> for Frontier<T, S> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}

impl<T, S: fmt::Debug> fmt::Debug for Frontier<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Frontier");
        out.field("queued", &self.len())
            .field("finished", &self.is_finished())
            .field("filter", &self.seen)
            .field("over_capacity", &self.is_over_capacity())
            .finish()
    }
}
