//! A crawler's to-visit queue shared by every process of a fleet.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::mem;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::PoisonError;
use std::thread::{self, JoinHandle};
use std::time::Instant;

use super::client::{Batch, Client, TakenUrl, Wire};
use super::{lock, FleetConfig, FleetStats};
use crate::push_order::{Completions, PushOrder};
use crate::sync::{Arc, AtomicBool, Mutex, Ordering, RwLock, RwLockReadGuard};
use crate::Error;

/// What waits to go to one shard.
#[derive(Debug, Default)]
struct Outbox {
    /// Items not yet in a batch.
    items: Vec<String>,
    /// The push sequence number of the first of `items`.
    first_seq: u64,
    /// When the oldest of `items` arrived.
    since: Option<Instant>,
    /// Batches sent without an answer: sent again, with their ids, first.
    unsent: Vec<Batch>,
}

impl Outbox {
    fn held(&self) -> usize {
        self.items.len()
            + self
                .unsent
                .iter()
                .map(|batch| batch.items.len())
                .sum::<usize>()
    }

    /// The sequence number of the oldest item held, if any.
    fn oldest(&self) -> Option<u64> {
        match self.unsent.first() {
            Some(batch) => Some(batch.first_seq),
            None => (!self.items.is_empty()).then_some(self.first_seq),
        }
    }
}

/// What this process took from the fleet.
#[derive(Debug, Default)]
struct Taken {
    /// Taken from the server, not yet popped.
    buffer: VecDeque<TakenUrl>,
    /// Popped and not yet completed.
    in_hand: usize,
}

/// Whether this client is marked busy on the server, and whether the last
/// write of that mark failed (so the server may think otherwise).
#[derive(Debug, Default)]
struct State {
    busy: bool,
    unsure: bool,
}

/// A URL popped from the fleet, leased to this process until it is passed
/// to [`FleetFrontier::complete`].
///
/// # Example
///
/// ```no_run
/// use atomic_bloom::fleet::{FleetConfig, FleetFrontier};
///
/// # fn main() -> Result<(), atomic_bloom::Error> {
/// let frontier = FleetFrontier::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
/// if let Some(page) = frontier.pop()? {
///     println!("crawling {}", page.url());
///     frontier.complete(page);
/// }
/// # Ok(())
/// # }
/// ```
///
/// A `Leased` dropped without being completed (a worker that panicked, or
/// returned early with `?`) gives its URL back: it goes back at the head
/// of the fleet's queue with the frontier's next call that reaches the
/// server, for any process to crawl, and no longer holds up its lease or
/// the fleet's end.
pub struct Leased {
    /// The URL and its lease; `None` once completed.
    page: Option<TakenUrl>,
    /// The frontier it came from, which gives it back if it is dropped.
    owner: Arc<Shared>,
}

impl Leased {
    /// The URL.
    pub fn url(&self) -> &str {
        &self
            .page
            .as_ref()
            .expect("a Leased holds its URL until consumed")
            .url
    }
}

impl Drop for Leased {
    /// Gives the URL back when it was not completed.
    fn drop(&mut self) {
        if let Some(page) = self.page.take() {
            self.owner.give_back(page);
        }
    }
}

impl fmt::Debug for Leased {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leased")
            .field("page", &self.page)
            .finish_non_exhaustive()
    }
}

/// The state the frontier's calls and its heartbeat thread share.
#[derive(Debug)]
struct Shared {
    client: Client,
    /// This client's busy mark. Pushes and takes hold it shared; going
    /// idle holds it alone.
    state: RwLock<State>,
    /// `state.busy`, for the heartbeat, which must never wait for the
    /// lock (a call holding it may be retrying for `retry_for`).
    marked_busy: AtomicBool,
    /// A heartbeat found the busy mark lapsed: the next call that needs
    /// it marks it again.
    mark_lapsed: AtomicBool,
    outboxes: Vec<Mutex<Outbox>>,
    taken: Mutex<Taken>,
    /// Completed URLs whose leases have yet to end on the server, by
    /// shard and lease token.
    done: Completions<(usize, String)>,
    /// Popped URLs dropped without being completed, to give back to the
    /// queue with the next pipeline.
    dropped: Mutex<Vec<TakenUrl>>,
    /// Numbers pushed items, and marks completions among them.
    order: PushOrder,
    /// Items one shard may hold before pushes send or refuse.
    held_per_shard: usize,
}

/// A crawler's to-visit queue shared by every process of a fleet, on a
/// Valkey or Redis server (or cluster) with a Bloom module: each URL is
/// handed out once across the fleet (up to the false-positive rates), and
/// any process takes what any other found.
///
/// [`push`](Self::push) drops a URL this process pushed before (its local
/// filter answers, no round trip) and buffers the rest; a batch leaves for
/// its shard when full or old, and a script on the server adds it to the
/// shard's filter and queues the URLs the filter did not hold.
/// [`pop`](Self::pop) takes URLs from every shard's queue, a batch at a
/// time, each under a lease; [`complete`](Self::complete) says a popped
/// URL is done (its links pushed), and ends its lease once the server has
/// answered those pushes; [`is_finished`](Self::is_finished) says when the
/// whole fleet is out of work. A thread of the frontier renews its leases
/// while it lives; the URLs of a process that dies go back on the queue
/// when their leases end. See [the module docs](super) for why the queues
/// live on the server, and for failures.
///
/// Share it between threads as `Arc<FleetFrontier>`.
///
/// # Consistency
///
/// Every URL pushed by any process is crawled (popped and completed) at
/// least once, up to the false-positive rates: a URL leaves the server
/// only when the process that popped it completes it after its links
/// reached the server. It is popped twice only when a process died or was
/// cut off from the server for longer than the
/// [`lease`](FleetConfig::lease) while it held the URL (a take is leased
/// whole, so a process that dies re-queues its unfinished takes whole,
/// finished pages among them), with one more exception: a batch that a
/// shard refused part way (its filter full and unable to grow) queues
/// again the URLs before the refused one that the filter already held
/// (a script sees the refusal as the whole reply's, so it cannot tell
/// them from the ones it added), and they may be crawled a second time.
/// A URL is poppable once the batch that carried it has been answered. `is_finished` is true
/// only when no live process holds, buffers, leases or has queued a URL,
/// read in a way that a change during the check makes it false.
///
/// # Example
///
/// ```no_run
/// use atomic_bloom::fleet::{FleetConfig, FleetFrontier};
///
/// # fn main() -> Result<(), atomic_bloom::Error> {
/// let frontier = FleetFrontier::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
/// frontier.push("https://example.com/".to_string())?;
/// frontier.flush()?;
/// if let Some(page) = frontier.pop()? {
///     assert_eq!(page.url(), "https://example.com/");
///     // fetch it, push its links ...
///     frontier.complete(page);
/// }
/// # Ok(())
/// # }
/// ```
pub struct FleetFrontier {
    shared: Arc<Shared>,
    /// Stops the heartbeat thread when dropped.
    stop: Option<Sender<()>>,
    heartbeat: Option<JoinHandle<()>>,
}

impl FleetFrontier {
    /// Connects to the fleet's server (or cluster), checks it has the
    /// module and that the fleet's stored settings match these, and starts
    /// the thread that renews this client's leases (on connections of its
    /// own, opened by its first beat: two per node in all).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFleetConfig`] for a setting out of range,
    /// [`Error::FleetTimesConflict`] for a `retry_for` longer than the
    /// `lease` leaves room for, or a `result_ttl` shorter than it,
    /// [`Error::ServerUnavailable`] when the server cannot be reached,
    /// [`Error::ModuleMissing`] when it has no `BF.*` commands,
    /// [`Error::FleetSettingsDiffer`] when the fleet's first client used
    /// other shards, capacity, rate or expansion.
    pub fn connect(config: &FleetConfig) -> Result<FleetFrontier, Error> {
        let client = Client::connect(config)?;
        let shards = client.keys.len();
        let shared = Arc::new(Shared {
            held_per_shard: (config.max_buffered / shards).max(config.batch_size),
            outboxes: (0..shards).map(|_| Mutex::new(Outbox::default())).collect(),
            taken: Mutex::new(Taken::default()),
            done: Completions::new(),
            dropped: Mutex::new(Vec::new()),
            order: PushOrder::new(),
            state: RwLock::new(State::default()),
            marked_busy: AtomicBool::new(false),
            mark_lapsed: AtomicBool::new(false),
            client,
        });
        let (stop, stopped) = mpsc::channel::<()>();
        let beat = Arc::clone(&shared);
        let every = config.lease / 3;
        let heartbeat = thread::Builder::new()
            .name("atomic-bloom-fleet-heartbeat".into())
            .spawn(move || {
                // Beats start every third of a lease, however long one
                // takes (a failed one costs about two timeouts), and a beat
                // that failed is tried again a timeout later.
                let again = beat.client.config.timeout;
                let mut next = Instant::now() + every;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
                        next = (next + every).max(Instant::now());
                        if !beat.heartbeat() {
                            next = next.min(Instant::now() + again);
                        }
                    } else {
                        break;
                    }
                }
            })
            .map_err(|error| Error::ServerUnavailable {
                node: "this process".into(),
                reason: format!("cannot start the lease heartbeat thread: {error}"),
            })?;
        Ok(FleetFrontier {
            shared,
            stop: Some(stop),
            heartbeat: Some(heartbeat),
        })
    }

    /// Offers `url` to the fleet: `Ok(false)` if this process pushed it
    /// before (answered locally), `Ok(true)` if it is on its way to the
    /// server, which queues it for the fleet if no process pushed it before.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error) when this
    /// shard's buffer is full and cannot be sent: the URL was not taken;
    /// push it again later. The same error when the URL filled a batch that
    /// could not be sent: the URL is buffered, and pushing it again answers
    /// `Ok(false)`.
    pub fn push(&self, url: String) -> Result<bool, Error> {
        self.shared.push(url)
    }

    /// Sends every buffered batch now, and the completions they held back.
    ///
    /// # Errors
    ///
    /// As for [`push`](Self::push); the batches stay buffered.
    pub fn flush(&self) -> Result<(), Error> {
        self.shared.flush()
    }

    /// A URL to visit, leased to this process: taken from the fleet's
    /// queues (a batch at a time, after sending what this process
    /// buffered), or `None` when they are empty for now. Pass it to
    /// [`complete`](Self::complete) once its links are pushed.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error); a take whose
    /// answer was lost is finished by the next call, so no URL is lost.
    /// The error of the batches that cannot be sent, with nothing taken,
    /// once [`max_buffered`](FleetConfig::max_buffered) completions wait
    /// for them (their pages' links are in those batches).
    pub fn pop(&self) -> Result<Option<Leased>, Error> {
        Ok(self.shared.pop()?.map(|page| Leased {
            page: Some(page),
            owner: Arc::clone(&self.shared),
        }))
    }

    /// Says a popped URL is done: its links are pushed (the pushes have
    /// returned). A lease covers one take (the URLs a `pop` fetched from
    /// one shard at once) and ends on the server, with a later call of this
    /// client, once every URL of the take is completed and the server has
    /// answered every push made before. Until then it is renewed; if this
    /// process dies first, the take's URLs are crawled again by others.
    pub fn complete(&self, mut page: Leased) {
        if let Some(page) = page.page.take() {
            self.shared.complete(page);
        }
    }

    /// Whether the whole fleet is out of work: no live process holds,
    /// buffers, leases or has queued a URL. Sends what this process
    /// buffered and its completions, and marks it idle on the server when
    /// it holds nothing. Leases of processes that died are put back on the
    /// queues here.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error).
    pub fn is_finished(&self) -> Result<bool, Error> {
        self.shared.is_finished()
    }

    /// URLs taken from the server and not yet popped, and popped and not
    /// yet completed, by this process.
    pub fn held(&self) -> (usize, usize) {
        let taken = lock(&self.shared.taken);
        (taken.buffer.len(), taken.in_hand)
    }

    /// What this client did so far.
    pub fn stats(&self) -> FleetStats {
        self.shared.client.stats()
    }

    /// The configuration it connected with.
    pub fn config(&self) -> &FleetConfig {
        &self.shared.client.config
    }
}

impl Drop for FleetFrontier {
    /// Stops the heartbeat. What this client held and did not complete
    /// goes back to the fleet when its leases end.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(heartbeat) = self.heartbeat.take() {
            let _ = heartbeat.join();
        }
    }
}

impl Shared {
    /// This client marked busy, held shared. A failed mark is sent again
    /// by the next call.
    fn busy(&self) -> Result<RwLockReadGuard<'_, State>, Error> {
        loop {
            let shared = self.state.read().unwrap_or_else(PoisonError::into_inner);
            // Relaxed: a hint from the heartbeat; the mark it asks for is
            // written under the lock below, which orders the rest.
            if shared.busy && !shared.unsure && !self.mark_lapsed.load(Ordering::Relaxed) {
                return Ok(shared);
            }
            drop(shared);
            let mut alone = self.state.write().unwrap_or_else(PoisonError::into_inner);
            // Relaxed: as above; taken under the lock, so one call marks.
            let lapsed = self.mark_lapsed.swap(false, Ordering::Relaxed);
            if !alone.busy || alone.unsure || lapsed {
                let marked = self.client.set_busy(&mut self.client.wire(), true);
                alone.unsure = marked.is_err();
                marked?;
                alone.busy = true;
                // Relaxed: read by the heartbeat only to choose what to
                // renew; a stale read renews a mark that is not there (a
                // no-op) or skips one beat.
                self.marked_busy.store(true, Ordering::Relaxed);
            }
        }
    }

    fn push(&self, url: String) -> Result<bool, Error> {
        let client = &self.client;
        client.count_offered(1);
        // A URL this process pushed before is dropped before any lock.
        let local = client.local.as_ref();
        let local_hash = local.map(|local| local.hash_item(url.as_str()));
        if let (Some(local), Some(hash)) = (local, local_hash) {
            if local.contains_hash(hash) {
                client.count_answered_locally(1);
                return Ok(false);
            }
        }
        let _busy = self.busy()?;
        let shard = client.shard_of(&url);
        let mut outbox = lock(&self.outboxes[shard]);
        if outbox.held() >= self.held_per_shard {
            drop(outbox);
            self.send(&[shard])?;
            outbox = lock(&self.outboxes[shard]);
        }
        if let (Some(local), Some(hash)) = (local, local_hash) {
            if !local.insert_hash(hash) {
                client.count_answered_locally(1);
                return Ok(false);
            }
        }
        // Numbered under the outbox's lock, after the local filter's bit.
        let seq = self.order.number();
        if outbox.items.is_empty() {
            outbox.first_seq = seq;
        }
        outbox.items.push(url);
        let since = *outbox.since.get_or_insert_with(Instant::now);
        let due = outbox.items.len() >= client.config.batch_size
            || since.elapsed() >= client.config.linger;
        drop(outbox);
        if due {
            self.send(&[shard])?;
        }
        Ok(true)
    }

    /// Sends what waits for `shards`, batches whose answer was lost first,
    /// and queues the completions that no longer wait for an answer.
    fn send(&self, shards: &[usize]) -> Result<(), Error> {
        let client = &self.client;
        let mut wire = client.wire();
        let mut batches = Vec::new();
        for &shard in shards {
            let mut outbox = lock(&self.outboxes[shard]);
            let items = mem::take(&mut outbox.items);
            let first_seq = outbox.first_seq;
            outbox.since = None;
            batches.append(&mut outbox.unsent);
            let mut items = items.into_iter().peekable();
            while items.peek().is_some() {
                batches.push(Batch {
                    shard,
                    id: wire.next_id(),
                    items: items.by_ref().take(client.config.batch_size).collect(),
                    // Every batch of the outbox counts from its first item:
                    // a completion may wait a little longer, never less.
                    first_seq,
                });
            }
        }
        let mut first_error = None;
        if !batches.is_empty() {
            let answers = client.offer(&mut wire, &batches, true);
            for (batch, answer) in batches.into_iter().zip(answers) {
                if let Err(error) = answer {
                    // Only this shard's batches wait; the others are done.
                    lock(&self.outboxes[batch.shard]).unsent.push(batch);
                    first_error.get_or_insert(error);
                }
            }
        }
        self.queue_completions(&mut wire);
        first_error.map_or(Ok(()), Err)
    }

    fn flush(&self) -> Result<(), Error> {
        let shards: Vec<usize> = (0..self.outboxes.len()).collect();
        self.send(&shards)
    }

    /// Moves the URLs dropped without being completed, and the completions
    /// whose pushes have all been answered, onto the next pipeline.
    fn queue_completions(&self, wire: &mut Wire) {
        for page in mem::take(&mut *lock(&self.dropped)) {
            self.client.release(wire, page.shard, page.token, page.url);
        }
        // The completions first, the outboxes after (see `take_ready`).
        let ready = self.done.take_ready(|| {
            (self.outboxes.iter())
                .filter_map(|outbox| lock(outbox).oldest())
                .min()
                .unwrap_or(u64::MAX)
        });
        let mut counts: HashMap<(usize, String), usize> = HashMap::new();
        for lease in ready {
            *counts.entry(lease).or_default() += 1;
        }
        for ((shard, token), count) in counts {
            self.client.complete(wire, shard, token, count);
        }
    }

    fn pop(&self) -> Result<Option<TakenUrl>, Error> {
        if let Some(page) = self.pop_taken(Vec::new()) {
            return Ok(Some(page));
        }
        // A shard that cannot take its batches does not stop pops from the
        // others; its error comes back when there is nothing to pop.
        let flushed = self.flush();
        let client = &self.client;
        // Completions held back by batches that cannot be sent pile up with
        // every page crawled: past `max_buffered` of them, no more work is
        // taken until the batches go, so this client's maps stay bounded.
        if let Err(error) = &flushed {
            if self.done.len() >= client.config.max_buffered {
                return Err(error.clone());
            }
        }
        let idle = !self
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .busy;
        // An idle client goes busy only for a queue that has something: an
        // idle fleet polling its empty queues changes nothing a check of
        // the fleet reads. A node that is down hides only its own shards.
        if idle {
            match client.queued(&mut client.wire()) {
                (0, Some(error)) => return Err(error),
                (0, None) => return flushed.map(|()| None),
                (_, _) => {}
            }
        }
        let _busy = self.busy()?;
        let urls = client.take(&mut client.wire(), client.config.pop_batch)?;
        match self.pop_taken(urls) {
            Some(page) => Ok(Some(page)),
            None => flushed.map(|()| None),
        }
    }

    /// Adds `urls` to what this process took, and pops one.
    fn pop_taken(&self, urls: Vec<TakenUrl>) -> Option<TakenUrl> {
        let mut taken = lock(&self.taken);
        taken.buffer.extend(urls);
        let page = taken.buffer.pop_front();
        taken.in_hand += usize::from(page.is_some());
        page
    }

    /// A popped URL dropped without being completed: given back to the
    /// queue with the next pipeline (see `queue_completions`).
    fn give_back(&self, page: TakenUrl) {
        lock(&self.dropped).push(page);
        let mut taken = lock(&self.taken);
        taken.in_hand = taken.in_hand.saturating_sub(1);
    }

    fn complete(&self, page: TakenUrl) {
        // A push that answered `false` because another thread had just
        // buffered the URL saw a bit set inside that outbox's lock: the
        // mark passes through every lock (see `push_order`).
        let after = self.order.mark(&self.outboxes);
        self.done.record((page.shard, page.token), after);
        let mut taken = lock(&self.taken);
        taken.in_hand = taken.in_hand.saturating_sub(1);
    }

    fn is_finished(&self) -> Result<bool, Error> {
        self.flush()?;
        let client = &self.client;
        {
            let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
            if state.busy || state.unsure {
                let mut wire = client.wire();
                {
                    let taken = lock(&self.taken);
                    if taken.in_hand > 0 || !taken.buffer.is_empty() {
                        return Ok(false);
                    }
                }
                if wire.has_unfinished_take()
                    || !self.done.is_empty()
                    || !lock(&self.dropped).is_empty()
                    || self.outboxes.iter().any(|outbox| lock(outbox).held() > 0)
                {
                    return Ok(false);
                }
                if client.holds_leases() {
                    // Completions still to send: the census's pipeline
                    // carries them, and the next check goes idle.
                    client.census(&mut wire)?;
                    if client.holds_leases() {
                        return Ok(false);
                    }
                }
                let marked = client.set_busy(&mut wire, false);
                state.unsure = marked.is_err();
                marked?;
                state.busy = false;
                // Relaxed: see `busy`.
                self.marked_busy.store(false, Ordering::Relaxed);
            }
        }
        let mut wire = client.wire();
        let (epoch, busy) = client.census(&mut wire)?;
        if busy > 0 || client.pending(&mut wire)? > 0 {
            return Ok(false);
        }
        Ok(client.census(&mut wire)?.0 == epoch)
    }

    /// Renews this client's leases and busy mark, on the heartbeat's own
    /// connections; a failure is logged (and answered `false`), and the
    /// next beat tries again.
    fn heartbeat(&self) -> bool {
        // Relaxed: see `busy`; never the state's lock, which a call that is
        // retrying may hold for `retry_for`.
        let busy = self.marked_busy.load(Ordering::Relaxed);
        if !busy && !self.client.holds_leases() {
            return true;
        }
        match self.client.renew(busy) {
            Ok(renewal) => {
                if renewal.mark_lapsed && busy {
                    // Relaxed: see `busy`.
                    self.mark_lapsed.store(true, Ordering::Relaxed);
                }
                if renewal.lost > 0 {
                    log::warn!(
                        "atomic-bloom fleet: {} of this client's leases had ended before it \
                         renewed them; their URLs went back on the queue and may be crawled \
                         twice",
                        renewal.lost
                    );
                }
                true
            }
            Err(error) => {
                log::warn!("atomic-bloom fleet: renewing leases: {error}");
                false
            }
        }
    }
}

impl fmt::Debug for FleetFrontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetFrontier")
            .field("client", &self.shared.client)
            .field("held", &self.held())
            .finish_non_exhaustive()
    }
}
