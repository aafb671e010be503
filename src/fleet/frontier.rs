//! A crawler's to-visit queue shared by every process of a fleet.

use std::collections::VecDeque;
use std::fmt;
use std::mem;
use std::sync::PoisonError;
use std::time::Instant;

use super::client::{Batch, Client};
use super::{lock, FleetConfig, FleetStats};
use crate::sync::{Mutex, RwLock, RwLockReadGuard};
use crate::Error;

/// What waits to go to one shard.
#[derive(Debug, Default)]
struct Outbox {
    /// Items not yet in a batch.
    items: Vec<String>,
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
}

/// What this process took from the fleet.
#[derive(Debug, Default)]
struct Taken {
    /// Taken from the server, not yet popped.
    buffer: VecDeque<String>,
    /// Popped and not yet completed.
    in_hand: usize,
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
/// time; [`complete`](Self::complete) says a popped URL is done (its links
/// pushed); [`is_finished`](Self::is_finished) says when the whole fleet is
/// out of work. See [the module docs](super) for why the queues live on
/// the server, and for failures.
///
/// Share it between threads as `Arc<FleetFrontier>`.
///
/// # Consistency
///
/// A URL pushed by any process is popped by one process at most (by none,
/// with the false-positive rates' probability); a URL is poppable once the
/// batch that carried it has been answered. `is_finished` is true only
/// when no process holds, buffers, or has queued a URL, read in a way that
/// a change during the check makes it false.
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
/// if let Some(url) = frontier.pop()? {
///     assert_eq!(url, "https://example.com/");
///     frontier.complete();
/// }
/// # Ok(())
/// # }
/// ```
pub struct FleetFrontier {
    client: Client,
    /// Whether this client is marked busy on the server. Pushes and takes
    /// hold it shared; going idle holds it alone.
    busy: RwLock<bool>,
    outboxes: Vec<Mutex<Outbox>>,
    taken: Mutex<Taken>,
    /// Items one shard may hold before pushes send or refuse.
    held_per_shard: usize,
}

impl FleetFrontier {
    /// Connects to the fleet's server (or cluster) and checks it has the
    /// module.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFleetConfig`] for a setting out of range,
    /// [`Error::ServerUnavailable`] when the server cannot be reached,
    /// [`Error::ModuleMissing`] when it has no `BF.*` commands.
    pub fn connect(config: &FleetConfig) -> Result<FleetFrontier, Error> {
        let client = Client::connect(config)?;
        let shards = client.keys.len();
        Ok(FleetFrontier {
            held_per_shard: (config.max_buffered / shards).max(config.batch_size),
            outboxes: (0..shards).map(|_| Mutex::new(Outbox::default())).collect(),
            taken: Mutex::new(Taken::default()),
            busy: RwLock::new(false),
            client,
        })
    }

    /// This client marked busy, held shared.
    fn busy(&self) -> Result<RwLockReadGuard<'_, bool>, Error> {
        loop {
            let shared = self.busy.read().unwrap_or_else(PoisonError::into_inner);
            if *shared {
                return Ok(shared);
            }
            drop(shared);
            let mut alone = self.busy.write().unwrap_or_else(PoisonError::into_inner);
            if !*alone {
                self.client.set_busy(&mut self.client.wire(), true)?;
                *alone = true;
            }
        }
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

    /// Sends what waits for `shards`, batches whose answer was lost first.
    fn send(&self, shards: &[usize]) -> Result<(), Error> {
        let client = &self.client;
        let mut wire = client.wire();
        let mut batches = Vec::new();
        for &shard in shards {
            let mut outbox = lock(&self.outboxes[shard]);
            let items = mem::take(&mut outbox.items);
            outbox.since = None;
            batches.append(&mut outbox.unsent);
            let mut items = items.into_iter().peekable();
            while items.peek().is_some() {
                batches.push(Batch {
                    shard,
                    id: wire.next_id(),
                    items: items.by_ref().take(client.config.batch_size).collect(),
                });
            }
        }
        if batches.is_empty() {
            return Ok(());
        }
        if let Err(error) = client.offer(&mut wire, &batches, true) {
            for batch in batches {
                lock(&self.outboxes[batch.shard]).unsent.push(batch);
            }
            return Err(error);
        }
        Ok(())
    }

    /// Sends every buffered batch now.
    ///
    /// # Errors
    ///
    /// As for [`push`](Self::push); the batches stay buffered.
    pub fn flush(&self) -> Result<(), Error> {
        let shards: Vec<usize> = (0..self.outboxes.len()).collect();
        self.send(&shards)
    }

    /// A URL to visit, taken from the fleet's queues (a batch at a time,
    /// after sending what this process buffered), or `None` when they are
    /// empty for now. Call [`complete`](Self::complete) once its links are
    /// pushed.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error); a take whose
    /// answer was lost is finished by the next call, so no URL is lost.
    pub fn pop(&self) -> Result<Option<String>, Error> {
        if let Some(url) = self.pop_taken(Vec::new()) {
            return Ok(Some(url));
        }
        self.flush()?;
        let client = &self.client;
        let idle = !*self.busy.read().unwrap_or_else(PoisonError::into_inner);
        // An idle client goes busy only for a queue that has something: an
        // idle fleet polling its empty queues changes nothing a check of
        // the fleet reads.
        if idle && client.queued(&mut client.wire())? == 0 {
            return Ok(None);
        }
        let _busy = self.busy()?;
        let urls = client.take(&mut client.wire(), client.config.pop_batch)?;
        Ok(self.pop_taken(urls))
    }

    /// Adds `urls` to what this process took, and pops one.
    fn pop_taken(&self, urls: Vec<String>) -> Option<String> {
        let mut taken = lock(&self.taken);
        taken.buffer.extend(urls);
        let url = taken.buffer.pop_front();
        taken.in_hand += usize::from(url.is_some());
        url
    }

    /// Says one popped URL is done: its links are pushed.
    pub fn complete(&self) {
        let mut taken = lock(&self.taken);
        taken.in_hand = taken.in_hand.saturating_sub(1);
    }

    /// Whether the whole fleet is out of work: no process holds, buffers
    /// or has queued a URL. Sends what this process buffered, and marks it
    /// idle on the server when it holds nothing.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error).
    pub fn is_finished(&self) -> Result<bool, Error> {
        self.flush()?;
        let client = &self.client;
        {
            let mut busy = self.busy.write().unwrap_or_else(PoisonError::into_inner);
            if *busy {
                let mut wire = client.wire();
                let taken = lock(&self.taken);
                if taken.in_hand > 0 || !taken.buffer.is_empty() || wire.has_unfinished_take() {
                    return Ok(false);
                }
                if self.outboxes.iter().any(|outbox| lock(outbox).held() > 0) {
                    return Ok(false);
                }
                client.set_busy(&mut wire, false)?;
                *busy = false;
            }
        }
        let mut wire = client.wire();
        let (epoch, busy) = client.census(&mut wire)?;
        if busy > 0 || client.queued(&mut wire)? > 0 {
            return Ok(false);
        }
        Ok(client.census(&mut wire)?.0 == epoch)
    }

    /// URLs taken from the server and not yet popped, and popped and not
    /// yet completed, by this process.
    pub fn held(&self) -> (usize, usize) {
        let taken = lock(&self.taken);
        (taken.buffer.len(), taken.in_hand)
    }

    /// What this client did so far.
    pub fn stats(&self) -> FleetStats {
        self.client.stats()
    }

    /// The configuration it connected with.
    pub fn config(&self) -> &FleetConfig {
        &self.client.config
    }
}

impl fmt::Debug for FleetFrontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetFrontier")
            .field("client", &self.client)
            .field("held", &self.held())
            .finish_non_exhaustive()
    }
}
