//! A crawler's to-visit queue shared by every process of a fleet: what a
//! frontier keeps in the process (its buffers, what it took, its
//! completions, its busy mark) and its calls, which both drivers run.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::mem;
use std::sync::PoisonError;

use crate::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use super::call::Call;
use super::client::{Batch, Client, TakenUrl, Wire};
use super::link::Link;
use super::lock;
use crate::order::{Completions, PushOrder};
use crate::{Error, FleetConfig};

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

/// This client's busy mark on the server, as far as it knows. Changed only
/// by a call holding the wire (and by the heartbeat's `lapsed`); read by
/// pushes, which buffer without the wire only while the mark is `ready`.
#[derive(Debug, Default)]
struct State {
    /// Marked busy.
    busy: bool,
    /// The last write of the mark may have failed (or been dropped with
    /// its call): the server may think otherwise.
    unsure: bool,
    /// A check is marking the client idle: pushes wait for it.
    idling: bool,
    /// A heartbeat found the mark lapsed: the next call that needs it marks
    /// it again.
    lapsed: bool,
    /// Until when the mark surely lives on the server: a lease from the
    /// moment the last mark or renewal that succeeded was sent (the server
    /// set its deadline a lease from when it ran it, later).
    live_until: Option<Instant>,
    /// How long before `live_until` the mark counts as at risk: two
    /// timeouts, the longest a command sent now may take to reach the
    /// server and its reply to come back.
    margin: Duration,
}

impl State {
    /// Whether the client may change what the fleet holds (buffer a push,
    /// send a batch, take, end a lease) without marking itself busy first:
    /// marked, surely, and not at risk of lapsing. A check of the fleet by
    /// another process counts on it: while this client moves work between
    /// shards its mark is live, so the check's reads of the shards, taken
    /// at different instants, see a busy client around them.
    fn ready(&self, now: Instant) -> bool {
        self.busy
            && !self.unsure
            && !self.idling
            && !self.lapsed
            && self
                .live_until
                .is_some_and(|until| now + self.margin < until)
    }
}

/// Where a push left its URL (see `buffer`).
enum Buffered {
    /// The local filter holds it: dropped.
    Seen,
    /// Buffered for its shard; the batch is due to leave.
    Queued { due: Option<usize> },
    /// Not buffered: the client must be marked busy first.
    NotReady(String),
    /// Not buffered: its shard's buffer is full, its batches must go first.
    Full(String, usize),
}

/// What a push needs (see [`FrontierCore::push`]).
#[derive(Debug)]
pub(crate) enum Push<'a> {
    /// Nothing more: the answer.
    Answered(bool),
    /// A call through the wire: [`FrontierCore::push_slow`].
    Slow(PushLeft<'a>),
}

/// What a push leaves to its call through the wire: a URL not buffered yet
/// (it waits for the busy mark, or for room), or a shard whose batch is
/// due. A URL not buffered yet is buffered all the same if the push is
/// dropped first (a cancelled future), while it waits for the wire or
/// during its call, so that the next call sends it: every push leaves what
/// it began to the next call. Buffered so, it moves nothing on the server
/// (a send marks the client busy before it goes), and a check of the
/// fleet holding the wire meanwhile does not answer "finished" (see
/// `is_finished`); the buffer may exceed `max_buffered` by the pushes
/// dropped so.
#[derive(Debug)]
pub(crate) struct PushLeft<'a> {
    core: &'a FrontierCore,
    /// The URL and its local hash, until buffered.
    url: Option<(String, Option<u64>)>,
    /// The URL is buffered; this shard's batch is due.
    due: Option<usize>,
}

impl Drop for PushLeft<'_> {
    fn drop(&mut self) {
        if let Some((url, hash)) = self.url.take() {
            let shard = self.core.client.shard_of(&url);
            let mut outbox = lock(&self.core.outboxes[shard]);
            self.core.put(&mut outbox, url, hash);
        }
    }
}

/// A URL popped from the fleet, leased to this process until it is passed
/// to `complete`.
///
/// # Example
///
/// ```no_run
/// use atomic_bloom_fleet::{FleetConfig, FleetFrontier};
///
/// fn main() -> Result<(), atomic_bloom_fleet::Error> {
///     let frontier = FleetFrontier::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
///     if let Some(page) = frontier.pop()? {
///         println!("crawling {}", page.url());
///         frontier.complete(page);
///     }
///     Ok(())
/// }
/// ```
///
/// A `Leased` dropped without being completed (a worker that panicked, or
/// returned early with `?`) gives its URL back: it goes back at the head
/// of the fleet's queue with the frontier's next call that reaches the
/// server, for any process to crawl, and no longer holds up its lease or
/// the fleet's end. The same type serves the blocking and the tokio
/// frontier.
pub struct Leased {
    /// The URL and its lease; `None` once completed.
    page: Option<TakenUrl>,
    /// The frontier it came from, which gives it back if it is dropped.
    owner: Arc<FrontierCore>,
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

/// When the heartbeat beats: every third of a lease from the connect,
/// however long a beat takes, and a timeout after a beat that failed.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    every: Duration,
    again: Duration,
    next: Instant,
}

impl Heartbeat {
    /// The first beat a third of a lease after `now`.
    pub(crate) fn new(config: &FleetConfig, now: Instant) -> Heartbeat {
        let every = config.lease / 3;
        Heartbeat {
            every,
            again: config.timeout,
            next: now + every,
        }
    }

    /// When the next beat starts.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }

    /// A beat starts at `now`: the one after starts a third of a lease
    /// after this one was due (or now, if that has passed).
    pub(crate) fn started(&mut self, now: Instant) {
        self.next = (self.next + self.every).max(now);
    }

    /// The beat failed at `now`: try again a timeout later.
    pub(crate) fn failed(&mut self, now: Instant) {
        self.next = self.next.min(now + self.again);
    }
}

/// The frontier's state in this process, shared by its calls, its
/// `Leased`s and its heartbeat. Nothing here is held across I/O.
#[derive(Debug)]
pub(crate) struct FrontierCore {
    pub(crate) client: Client,
    state: RwLock<State>,
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

/// Marks a check's idling over when dropped: a check dropped mid-way (its
/// future cancelled) leaves the mark unsure, for the next call to send
/// again.
struct Idling<'a> {
    state: &'a RwLock<State>,
    /// Whether the idle mark reached the server.
    idle: Option<bool>,
}

impl Drop for Idling<'_> {
    fn drop(&mut self) {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        state.idling = false;
        match self.idle {
            Some(true) => {
                state.busy = false;
                state.unsure = false;
            }
            Some(false) => {}
            None => state.unsure = true,
        }
    }
}

impl FrontierCore {
    /// The frontier of a client not connected yet.
    pub(crate) fn new(client: Client) -> FrontierCore {
        let config = &client.config;
        let shards = client.keys.len();
        FrontierCore {
            held_per_shard: (config.max_buffered / shards).max(config.batch_size),
            outboxes: (0..shards).map(|_| Mutex::new(Outbox::default())).collect(),
            taken: Mutex::new(Taken::default()),
            done: Completions::new(),
            dropped: Mutex::new(Vec::new()),
            order: PushOrder::new(),
            state: RwLock::new(State {
                margin: config.timeout * 2,
                ..State::default()
            }),
            client,
        }
    }

    fn state(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn state_mut(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connect: maps the nodes, checks the settings.
    pub(crate) fn connect<'a>(&'a self, wire: &'a mut Wire) -> Call<'a, Result<(), Error>> {
        Call::new(wire.port(), self.client.connect(wire))
    }

    /// Offers `url` without the wire where it can: dropped if this process
    /// pushed it before, buffered if the client is marked busy and its
    /// shard has room. Otherwise the rest is a call through the wire, and
    /// what it is left holds the URL until then (see [`PushLeft`]).
    pub(crate) fn push(&self, url: String, now: Instant) -> Push<'_> {
        let client = &self.client;
        client.count_offered(1);
        // A URL this process pushed before is dropped before any lock.
        let local = client.local.as_ref();
        let hash = local.map(|local| local.hash_item(url.as_str()));
        if let (Some(local), Some(hash)) = (local, hash) {
            if local.contains_hash(hash) {
                client.count_answered_locally(1);
                return Push::Answered(false);
            }
        }
        let left = |url, due| {
            Push::Slow(PushLeft {
                core: self,
                url,
                due,
            })
        };
        match self.buffer(url, hash, now) {
            Buffered::Seen => Push::Answered(false),
            Buffered::Queued { due: None } => Push::Answered(true),
            Buffered::Queued { due: Some(shard) } => left(None, Some(shard)),
            Buffered::NotReady(url) | Buffered::Full(url, _) => left(Some((url, hash)), None),
        }
    }

    /// Buffers `url` (local hash `hash`) for its shard, if the client is
    /// marked busy and the shard has room.
    fn buffer(&self, url: String, hash: Option<u64>, now: Instant) -> Buffered {
        let client = &self.client;
        // Held shared while the URL is buffered: a check marking the client
        // idle holds it alone to look at the buffers (see `is_finished`).
        let state = self.state();
        if !state.ready(now) {
            return Buffered::NotReady(url);
        }
        let shard = client.shard_of(&url);
        let mut outbox = lock(&self.outboxes[shard]);
        if outbox.held() >= self.held_per_shard {
            return Buffered::Full(url, shard);
        }
        if !self.put(&mut outbox, url, hash) {
            return Buffered::Seen;
        }
        let since = *outbox.since.get_or_insert(now);
        let due = outbox.items.len() >= client.config.batch_size
            || now.saturating_duration_since(since) >= client.config.linger;
        drop(state);
        Buffered::Queued {
            due: due.then_some(shard),
        }
    }

    /// Adds `url` (local hash `hash`) to `outbox`, its shard's, unless the
    /// local filter holds it: whether it did.
    fn put(&self, outbox: &mut Outbox, url: String, hash: Option<u64>) -> bool {
        let client = &self.client;
        if let (Some(local), Some(hash)) = (client.local.as_ref(), hash) {
            if !local.insert_hash(hash) {
                client.count_answered_locally(1);
                return false;
            }
        }
        // Numbered under the outbox's lock, after the local filter's bit.
        let seq = self.order.number();
        if outbox.items.is_empty() {
            outbox.first_seq = seq;
        }
        outbox.items.push(url);
        true
    }

    /// The rest of a push, through the wire.
    pub(crate) fn push_slow<'a>(
        &'a self,
        wire: &'a mut Wire,
        mut left: PushLeft<'a>,
    ) -> Call<'a, Result<bool, Error>> {
        Call::new(wire.port(), async move {
            if let Some(shard) = left.due {
                return self.send(wire, &[shard]).await.map(|()| true);
            }
            loop {
                let (url, hash) = left
                    .url
                    .take()
                    .expect("a push holds its URL until buffered");
                match self.buffer(url, hash, wire.now()) {
                    Buffered::Seen => return Ok(false),
                    Buffered::Queued { due: None } => return Ok(true),
                    Buffered::Queued { due: Some(shard) } => {
                        return self.send(wire, &[shard]).await.map(|()| true)
                    }
                    Buffered::NotReady(back) => {
                        left.url = Some((back, hash));
                        if let Err(error) = self.busy(wire).await {
                            // Not taken: the caller pushes it again.
                            left.url.take();
                            return Err(error);
                        }
                    }
                    Buffered::Full(back, shard) => {
                        left.url = Some((back, hash));
                        if let Err(error) = self.send(wire, &[shard]).await {
                            left.url.take();
                            return Err(error);
                        }
                    }
                }
            }
        })
    }

    /// Marks this client busy on the server unless it is, surely and not at
    /// risk of lapsing (see `State::ready`): a failed mark is sent again by
    /// the next call, and until one succeeds the client takes no work and
    /// moves none (the call returns the error).
    async fn busy(&self, wire: &mut Wire) -> Result<(), Error> {
        let sent = wire.now();
        {
            let mut state = self.state_mut();
            if state.ready(sent) {
                return Ok(());
            }
            // Unsure until the server answers (a call dropped before then
            // leaves it so, for the next to mark again).
            state.unsure = true;
            state.lapsed = false;
        }
        self.client.set_busy(wire, true).await?;
        let mut state = self.state_mut();
        state.unsure = false;
        state.busy = true;
        state.live_until = Some(sent + self.client.config.lease);
        Ok(())
    }

    /// Marks the client busy first when it is about to change what the
    /// fleet holds (`moves`): batches to send, leases to end, URLs to give
    /// back.
    async fn busy_if(&self, wire: &mut Wire, moves: bool) -> Result<(), Error> {
        if moves {
            self.busy(wire).await?;
        }
        Ok(())
    }

    /// Sends what waits for `shards`, batches whose answer was lost first,
    /// and queues the completions that no longer wait for an answer.
    async fn send(&self, wire: &mut Wire, shards: &[usize]) -> Result<(), Error> {
        self.take_back(wire);
        let client = &self.client;
        let held = |shard: &usize| lock(&self.outboxes[*shard]).held() > 0;
        self.busy_if(wire, shards.iter().any(held)).await?;
        for &shard in shards {
            let mut outbox = lock(&self.outboxes[shard]);
            let items = mem::take(&mut outbox.items);
            let first_seq = outbox.first_seq;
            outbox.since = None;
            wire.sending.append(&mut outbox.unsent);
            let mut items = items.into_iter().peekable();
            while items.peek().is_some() {
                let id = wire.next_id();
                wire.sending.push(Batch {
                    shard,
                    id,
                    items: items.by_ref().take(client.config.batch_size).collect(),
                    // Every batch of the outbox counts from its first item:
                    // a completion may wait a little longer, never less.
                    first_seq,
                });
            }
        }
        let mut first_error = None;
        if !wire.sending.is_empty() {
            let answers = client.offer(wire, true).await;
            for (batch, answer) in wire.sending.drain(..).zip(answers) {
                if let Err(error) = answer {
                    // Only this shard's batches wait; the others are done.
                    lock(&self.outboxes[batch.shard]).unsent.push(batch);
                    first_error.get_or_insert(error);
                }
            }
        }
        self.queue_completions(wire);
        first_error.map_or(Ok(()), Err)
    }

    /// Puts back the batches a call dropped mid-way left in flight.
    fn take_back(&self, wire: &mut Wire) {
        for batch in wire.sending.drain(..) {
            let mut outbox = lock(&self.outboxes[batch.shard]);
            let at = outbox
                .unsent
                .partition_point(|held| held.first_seq <= batch.first_seq);
            outbox.unsent.insert(at, batch);
        }
    }

    /// Sends every buffered batch now, the completions they held back, and
    /// what waits to ride on a pipeline (completions, give-backs) even
    /// when no batch goes.
    pub(crate) fn flush<'a>(&'a self, wire: &'a mut Wire) -> Call<'a, Result<(), Error>> {
        Call::new(wire.port(), async move {
            let flushed = self.flush_all(wire).await;
            self.queue_completions(wire);
            self.busy_if(wire, wire.carries_anything()).await?;
            self.client.send_piggyback(wire).await;
            flushed
        })
    }

    async fn flush_all(&self, wire: &mut Wire) -> Result<(), Error> {
        let shards: Vec<usize> = (0..self.outboxes.len()).collect();
        self.send(wire, &shards).await
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

    /// A URL this process took and has not popped yet, without the wire.
    pub(crate) fn pop_buffered(self: &Arc<Self>) -> Option<Leased> {
        self.pop_taken(Vec::new())
    }

    /// A URL to visit: taken from the fleet's queues (a batch at a time,
    /// after sending what this process buffered), or `None` when they are
    /// empty for now.
    pub(crate) fn pop<'a>(
        self: &'a Arc<Self>,
        wire: &'a mut Wire,
    ) -> Call<'a, Result<Option<Leased>, Error>> {
        Call::new(wire.port(), async move {
            if let Some(page) = self.pop_taken(Vec::new()) {
                return Ok(Some(page));
            }
            // A shard that cannot take its batches does not stop pops from
            // the others; its error comes back when there is nothing to pop.
            let flushed = self.flush_all(wire).await;
            let client = &self.client;
            // Completions held back by batches that cannot be sent pile up
            // with every page crawled: past `max_buffered` of them, no more
            // work is taken until the batches go, so this client's maps
            // stay bounded.
            if let Err(error) = &flushed {
                if self.done.len() >= client.config.max_buffered {
                    return Err(error.clone());
                }
            }
            // An idle client goes busy only for a queue that has something:
            // an idle fleet polling its empty queues changes nothing a check
            // of the fleet reads. A node that is down hides only its own
            // shards.
            if !self.state().busy {
                match client.queued(wire).await {
                    (0, Some(error)) => return Err(error),
                    (0, None) => return flushed.map(|()| None),
                    (_, _) => {}
                }
            }
            self.busy(wire).await?;
            let urls = client.take(wire, client.config.pop_batch).await?;
            match self.pop_taken(urls) {
                Some(page) => Ok(Some(page)),
                None => flushed.map(|()| None),
            }
        })
    }

    /// Adds `urls` to what this process took, and pops one.
    fn pop_taken(self: &Arc<Self>, urls: Vec<TakenUrl>) -> Option<Leased> {
        let mut taken = lock(&self.taken);
        taken.buffer.extend(urls);
        let page = taken.buffer.pop_front()?;
        taken.in_hand += 1;
        Some(Leased {
            page: Some(page),
            owner: Arc::clone(self),
        })
    }

    /// A popped URL dropped without being completed: given back to the
    /// queue with the next pipeline (see `queue_completions`).
    fn give_back(&self, page: TakenUrl) {
        lock(&self.dropped).push(page);
        let mut taken = lock(&self.taken);
        taken.in_hand = taken.in_hand.saturating_sub(1);
    }

    /// Says a popped URL is done: its lease ends, with a later call, once
    /// every URL of its take is done and the server has answered every push
    /// made before.
    pub(crate) fn complete(&self, mut page: Leased) {
        let Some(page) = page.page.take() else {
            return;
        };
        // A push that answered `false` because another thread had just
        // buffered the URL saw a bit set inside that outbox's lock: the
        // mark passes through every lock (see `order`).
        let after = self.order.mark(&self.outboxes);
        self.done.record((page.shard, page.token), after);
        let mut taken = lock(&self.taken);
        taken.in_hand = taken.in_hand.saturating_sub(1);
    }

    /// Whether the whole fleet is out of work (see `is_finished`'s docs).
    pub(crate) fn is_finished<'a>(&'a self, wire: &'a mut Wire) -> Call<'a, Result<bool, Error>> {
        Call::new(wire.port(), async move {
            self.flush_all(wire).await?;
            let client = &self.client;
            let idling = {
                let mut state = self.state_mut();
                if state.busy || state.unsure {
                    if self.holds_work(wire) {
                        return Ok(false);
                    }
                    // Pushes now wait for the wire, which this call holds.
                    state.idling = true;
                    Some(Idling {
                        state: &self.state,
                        idle: None,
                    })
                } else {
                    None
                }
            };
            if let Some(mut idling) = idling {
                // The census's pipeline ends leases: with a live mark.
                self.busy_if(wire, wire.carries_anything()).await?;
                if client.holds_leases() {
                    // Completions still to send: the census's pipeline
                    // carries them, and the next check goes idle.
                    client.census(wire).await?;
                    if client.holds_leases() {
                        idling.idle = Some(false);
                        return Ok(false);
                    }
                }
                client.set_busy(wire, false).await?;
                idling.idle = Some(true);
            }
            let (epoch, busy) = client.census(wire).await?;
            if busy > 0 || client.pending(wire).await? > 0 {
                return Ok(false);
            }
            let unchanged = client.census(wire).await?.0 == epoch;
            // A push dropped while it waited for the wire (which this call
            // holds) buffered its URL without it: not finished, and the
            // next call marks the client busy and sends it.
            Ok(unchanged && !self.holds_work(wire))
        })
    }

    /// Whether this process holds anything the server does not know of.
    fn holds_work(&self, wire: &Wire) -> bool {
        {
            let taken = lock(&self.taken);
            if taken.in_hand > 0 || !taken.buffer.is_empty() {
                return true;
            }
        }
        wire.has_unfinished_take()
            || !wire.sending.is_empty()
            || !self.done.is_empty()
            || !lock(&self.dropped).is_empty()
            || self.outboxes.iter().any(|outbox| lock(outbox).held() > 0)
    }

    /// Renews this client's leases and busy mark, on the heartbeat's own
    /// link; a failure is logged (and answered `false`), and the next beat
    /// tries again.
    pub(crate) fn beat<'a>(&'a self, link: &'a mut Link) -> Call<'a, bool> {
        Call::new(Arc::clone(&link.port), async move {
            let busy = self.state().busy;
            if !busy && !self.client.holds_leases() {
                return true;
            }
            let sent = link.port.now();
            match self.client.renew(link, busy).await {
                Ok(renewal) => {
                    let mut state = self.state_mut();
                    if renewal.mark_lapsed && busy {
                        state.lapsed = true;
                    } else if busy && state.busy {
                        // Renewed a lease from when the beat was sent.
                        let until = sent + self.client.config.lease;
                        state.live_until = state.live_until.max(Some(until));
                    }
                    drop(state);
                    if renewal.lost > 0 {
                        log::warn!(
                            "atomic-bloom fleet: {} of this client's leases had ended before \
                             it renewed them; their URLs went back on the queue and may be \
                             crawled twice",
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
        })
    }

    /// URLs taken and not yet popped, and popped and not yet completed.
    pub(crate) fn held(&self) -> (usize, usize) {
        let taken = lock(&self.taken);
        (taken.buffer.len(), taken.in_hand)
    }
}
