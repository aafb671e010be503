//! A crawler's to-visit queue shared by every process of a fleet: what a
//! frontier keeps in the process (its buffers, what it took, its
//! completions, its busy mark) and the steps of its rounds (`round`),
//! which both drivers run.

mod leased;
mod round;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::mem;
use std::sync::PoisonError;

use crate::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use super::call::Call;
use super::client::Client;
use super::group::Group;
use super::link::Link;
use super::lock;
use super::wire::{Batch, TakenUrl, Wire};
use crate::order::{Completions, PushOrder};
use crate::Error;

pub(crate) use leased::Heartbeat;
pub use leased::Leased;
pub(crate) use round::{Answer, Request};

/// Requests one round of a frontier takes at most.
const ROUND_REQUESTS: usize = 1024;

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
pub(crate) enum Push {
    /// Nothing more: the answer.
    Answered(bool),
    /// A round through the wire: [`Request::Push`].
    Slow(PushLeft),
}

/// What a push leaves to its round through the wire: a URL not buffered
/// yet (it waits for the busy mark, or for room), or a shard whose batch
/// is due. A URL not buffered yet is buffered all the same if the push is
/// dropped first (a cancelled future, or a round dropped with it), while
/// it waits for its round or during it, so that the next round sends it:
/// every push leaves what it began to the next round. Buffered so, it
/// moves nothing on the server (a send marks the client busy before it
/// goes), and a check of the fleet under way meanwhile does not answer
/// "finished" (see `check`); the buffer may exceed `max_buffered` by the
/// pushes dropped so.
#[derive(Debug)]
pub(crate) struct PushLeft {
    core: Arc<FrontierCore>,
    /// The URL and its local hash, until buffered.
    url: Option<(String, Option<u64>)>,
    /// The URL is buffered; this shard's batch is due.
    due: Option<usize>,
}

impl Drop for PushLeft {
    fn drop(&mut self) {
        if let Some((url, hash)) = self.url.take() {
            let shard = self.core.client.shard_of(&url);
            let mut outbox = lock(&self.core.outboxes[shard]);
            self.core.put(&mut outbox, url, hash);
        }
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
    /// The calls that share rounds on the wire.
    group: Group<Request, Answer>,
}

/// The shards a send could not send, each with its first error.
type Unsent = BTreeMap<usize, Error>;

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
            group: Group::new(ROUND_REQUESTS),
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
    /// shard has room. Otherwise the rest is a round through the wire, and
    /// what it is left holds the URL until then (see [`PushLeft`]).
    pub(crate) fn push(self: &Arc<Self>, url: String, now: Instant) -> Push {
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
                core: Arc::clone(self),
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
        // idle holds it alone to look at the buffers (see `check`).
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
    /// and queues the completions that no longer wait for an answer; the
    /// shards that could not send, each with its error.
    async fn send(&self, wire: &mut Wire, shards: &[usize]) -> Unsent {
        self.take_back(wire);
        let client = &self.client;
        let held = |shard: &usize| lock(&self.outboxes[*shard]).held() > 0;
        if let Err(error) = self.busy_if(wire, shards.iter().any(held)).await {
            return shards.iter().map(|&shard| (shard, error.clone())).collect();
        }
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
        let mut unsent = Unsent::new();
        if !wire.sending.is_empty() {
            let answers = client.offer(wire, true).await;
            for (batch, answer) in wire.sending.drain(..).zip(answers) {
                if let Err(error) = answer {
                    // Only this shard's batches wait; the others are done.
                    unsent.entry(batch.shard).or_insert(error);
                    lock(&self.outboxes[batch.shard]).unsent.push(batch);
                }
            }
        }
        self.queue_completions(wire);
        unsent
    }

    /// Puts back the batches a round dropped mid-way left in flight.
    fn take_back(&self, wire: &mut Wire) {
        for batch in wire.sending.drain(..) {
            let mut outbox = lock(&self.outboxes[batch.shard]);
            let at = outbox
                .unsent
                .partition_point(|held| held.first_seq <= batch.first_seq);
            outbox.unsent.insert(at, batch);
        }
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

/// The first error of the shards that could not send, if any.
fn first_error(unsent: Unsent) -> Result<(), Error> {
    unsent.into_values().next().map_or(Ok(()), Err)
}
