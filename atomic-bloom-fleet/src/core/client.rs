//! What a fleet seen-set and a fleet frontier share: the configuration,
//! the shards' keys, the local filter, and the calls that send batches,
//! take from the queues and keep the fleet's state, each retried until
//! `retry_for` runs out. The calls do no I/O: they ask their wire's port
//! for it (see `call`).

use crate::sync::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use atomic_bloom::ScalableBloomFilter;
use redis::{Cmd, Value};

use super::failure::Failure;
use super::keys::{self, FleetKeys, ShardKeys};
use super::link::{Link, Node};
use super::{lock, millis, scripts, Rng};
use crate::sync::{AtomicU64, Ordering};
use crate::{Error, FleetConfig, FleetStats};

/// Commands carried in front of a pipeline, at most.
const PIGGYBACK_PER_PIPELINE: usize = 512;

/// The first pause between two tries; it doubles up to `MAX_PAUSE`, and
/// each sleep is a random part of it between a half and all, so that a
/// fleet that lost its server does not come back in lockstep.
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Items for one shard, under an id that stays theirs until the server's
/// answer is in.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) shard: usize,
    pub(crate) id: u64,
    pub(crate) items: Vec<String>,
    /// The push sequence number of the first item (0 where unused).
    pub(crate) first_seq: u64,
}

/// A command for one shard, with the key its errors name.
type ShardCommand = (usize, String, Cmd);

/// A URL taken from the fleet: the shard and lease token it came under.
#[derive(Debug)]
pub(crate) struct TakenUrl {
    pub(crate) shard: usize,
    pub(crate) token: String,
    pub(crate) url: String,
}

/// Something the server must hear that needs no answer, carried in front
/// of the next pipeline and kept until one succeeds.
#[derive(Debug)]
enum Piggyback {
    /// A batch's answer is in: delete its result key.
    Acknowledge { shard: usize, key: String },
    /// Every URL of a lease is done: end it.
    Complete { shard: usize, token: String },
    /// A URL of a lease was dropped without being completed: give it back
    /// to the queue (the lease ends once its other URLs are done).
    Release {
        shard: usize,
        token: String,
        url: String,
    },
}

/// What one call at a time uses (the driver holds it under its lock for
/// the whole call): the nodes, what rides on the next pipeline, the next
/// id, a take whose answer has not come back, and a seen-set's answers.
#[derive(Debug)]
pub(crate) struct Wire {
    pub(crate) link: Link,
    piggyback: Vec<Piggyback>,
    next_id: u64,
    /// The take commands and their lease tokens: set before they are sent,
    /// so that a call dropped mid-way (a cancelled future) leaves them to
    /// the next take, which sends them again.
    unfinished_take: Option<Vec<(ShardCommand, String)>>,
    /// The pauses' jitter.
    rng: Rng,
    /// The batches of the offer in flight: left here by a call dropped
    /// mid-way, for the next call to take back (a batch keeps its id until
    /// its answer is in).
    pub(crate) sending: Vec<Batch>,
    /// A seen-set's answers and unanswered batches (see `seen`).
    pub(crate) book: super::seen::Book,
}

/// A client's wire and its driver's connections, used by one call at a
/// time (the driver keeps it under its lock).
#[derive(Debug)]
pub(crate) struct Session<C> {
    pub(crate) wire: Wire,
    pub(crate) io: C,
}

impl<C: Default> Session<C> {
    pub(crate) fn new(wire: Wire) -> Session<C> {
        Session {
            wire,
            io: C::default(),
        }
    }
}

impl Wire {
    /// The port this wire's calls ask for I/O through.
    pub(crate) fn port(&self) -> crate::sync::Arc<super::call::Port> {
        crate::sync::Arc::clone(&self.link.port)
    }

    /// The time the driver gave at this step.
    pub(crate) fn now(&self) -> Instant {
        self.link.port.now()
    }

    /// Whether a take's answer was lost: its URLs wait on the server under
    /// their leases until the next take collects them (or the leases end).
    pub(crate) fn has_unfinished_take(&self) -> bool {
        self.unfinished_take.is_some()
    }

    /// Whether something waits to ride on the next pipeline.
    pub(crate) fn carries_anything(&self) -> bool {
        !self.piggyback.is_empty()
    }

    /// A fresh id for a batch or a take.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// What a heartbeat found.
#[derive(Debug, Default)]
pub(crate) struct Renewal {
    /// Leases that had ended before their renewal (their URLs went back
    /// on the queue, for another client to crawl).
    pub(crate) lost: usize,
    /// The busy mark was not live (expired, or idle meanwhile): the next
    /// call that needs it marks it again.
    pub(crate) mark_lapsed: bool,
}

/// Counters of `FleetStats`, one atomic each.
#[derive(Debug, Default)]
struct Counters {
    offered: AtomicU64,
    answered_locally: AtomicU64,
    sent: AtomicU64,
    new_on_server: AtomicU64,
    taken: AtomicU64,
    round_trips: AtomicU64,
    retries: AtomicU64,
}

/// The shared core of [`FleetSeen`](super::FleetSeen) and
/// [`FleetFrontier`](super::FleetFrontier).
#[derive(Debug)]
pub(crate) struct Client {
    pub(crate) config: FleetConfig,
    pub(crate) keys: Vec<ShardKeys>,
    /// The fleet's own keys: settings, epoch, busy clients; on the route
    /// after the shards' (`fleet_route`).
    fleet: FleetKeys,
    /// This client's name in result keys, lease tokens and the census.
    id: String,
    pub(crate) local: Option<ScalableBloomFilter<str>>,
    /// Leases this client holds, by shard and token, with the URLs of each
    /// not yet done. A lease is renewed until its end reaches the server;
    /// the heartbeat reads it without the wire.
    leases: Mutex<HashMap<(usize, String), usize>>,
    /// The nodes the connect's map found: where the heartbeat's own
    /// connections look when the configured node does not answer.
    known_nodes: Mutex<Vec<Node>>,
    counters: Counters,
}

fn add(counter: &AtomicU64, amount: u64) {
    // Relaxed: a statistic; it publishes nothing and orders nothing.
    counter.fetch_add(amount, Ordering::Relaxed);
}

fn read(counter: &AtomicU64) -> u64 {
    // Relaxed: a statistic (see `FleetStats`, Consistency).
    counter.load(Ordering::Relaxed)
}

/// A sleep between `pause / 2` and `pause`.
fn jittered(pause: Duration, rng: &mut Rng) -> Duration {
    let fraction = (rng.draw() >> 11) as f64 / (1u64 << 53) as f64;
    pause.mul_f64(0.5 + fraction / 2.0)
}

fn server_error(node: &str, message: String) -> Error {
    Error::ServerRefused {
        node: node.to_string(),
        message,
    }
}

impl Client {
    /// Checks `config` and builds the client, its local filter and its
    /// wire (not connected: [`connect`](Self::connect) does, through the
    /// wire). `seed` seeds the pauses' jitter (and nothing the server sees).
    ///
    /// # Errors
    ///
    /// A setting out of range, a local filter that cannot be built, a URL
    /// this client cannot use.
    pub(crate) fn new(config: &FleetConfig, seed: u64) -> Result<(Client, Wire), Error> {
        config.validate()?;
        let keys = keys::shard_keys(&config.prefix, config.shards);
        let fleet = keys::fleet_keys(&config.prefix);
        let link = Link::new(
            &config.url,
            config.timeout,
            config.durability,
            (&keys, &fleet),
            Vec::new(),
        )?;
        let local = if config.local_filter {
            Some(
                ScalableBloomFilter::builder(config.local_capacity, config.local_error_rate)
                    .build()?,
            )
        } else {
            None
        };
        let mut rng = Rng::new(seed);
        let id = format!("{:016x}", rng.draw());
        let client = Client {
            config: config.clone(),
            keys,
            fleet,
            id,
            local,
            leases: Mutex::new(HashMap::new()),
            known_nodes: Mutex::new(Vec::new()),
            counters: Counters::default(),
        };
        let wire = Wire {
            link,
            piggyback: Vec::new(),
            next_id: 0,
            unfinished_take: None,
            rng,
            sending: Vec::new(),
            book: super::seen::Book::default(),
        };
        Ok((client, wire))
    }

    /// Maps the nodes (checking each has the module), then checks the
    /// fleet's stored settings.
    pub(crate) async fn connect(&self, wire: &mut Wire) -> Result<(), Error> {
        wire.link.map().await.map_err(Failure::into_error)?;
        *lock(&self.known_nodes) = wire.link.nodes();
        self.check_settings(wire).await
    }

    /// A link of the heartbeat's own, not mapped yet, that falls back on the
    /// nodes the connect found.
    pub(crate) fn beat_link(&self) -> Result<Link, Error> {
        let config = &self.config;
        Link::new(
            &config.url,
            config.timeout,
            config.durability,
            (&self.keys, &self.fleet),
            lock(&self.known_nodes).clone(),
        )
    }

    /// Stores the fleet's shared settings the first time, and refuses a
    /// client whose settings differ from them.
    async fn check_settings(&self, wire: &mut Wire) -> Result<(), Error> {
        let config = &self.config;
        let key = self.fleet.config.clone();
        let route = self.fleet_route();
        let fields = [
            ("shards", config.shards.to_string()),
            ("capacity", config.capacity.to_string()),
            ("error_rate", config.error_rate.to_string()),
            ("expansion", config.expansion.to_string()),
        ];
        let command = scripts::settings(&key, &fields);
        let replies = self.run(wire, &[(route, key.clone(), command)]).await?;
        match replies.first() {
            Some(Value::Array(pair)) if pair.is_empty() => Ok(()),
            Some(Value::Array(pair)) => {
                let text = |value: &Value| match value {
                    Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                    other => format!("{other:?}"),
                };
                let setting = text(&pair[0]);
                let ours = fields
                    .iter()
                    .find(|(field, _)| *field == setting)
                    .map(|(_, value)| value.clone())
                    .unwrap_or_default();
                Err(Error::FleetSettingsDiffer {
                    key,
                    setting,
                    fleet: pair.get(1).map(text).unwrap_or_default(),
                    this: ours,
                })
            }
            other => Err(server_error(
                wire.link.node_of(route),
                format!("the fleet's settings check answered {other:?}"),
            )),
        }
    }

    /// The route of the fleet's own keys: after the shards'.
    fn fleet_route(&self) -> usize {
        self.keys.len()
    }

    /// The shard of `item`.
    pub(crate) fn shard_of(&self, item: &str) -> usize {
        keys::shard_of(item.as_bytes(), self.keys.len())
    }

    pub(crate) fn count_offered(&self, items: u64) {
        add(&self.counters.offered, items);
    }

    pub(crate) fn count_answered_locally(&self, items: u64) {
        add(&self.counters.answered_locally, items);
    }

    /// What this client did so far.
    pub(crate) fn stats(&self) -> FleetStats {
        let counters = &self.counters;
        FleetStats {
            offered: read(&counters.offered),
            answered_locally: read(&counters.answered_locally),
            sent: read(&counters.sent),
            new_on_server: read(&counters.new_on_server),
            taken: read(&counters.taken),
            round_trips: read(&counters.round_trips),
            retries: read(&counters.retries),
        }
    }

    /// The commands that carry a piggyback entry.
    fn piggyback_commands(&self, entry: &Piggyback) -> Vec<ShardCommand> {
        match entry {
            Piggyback::Acknowledge { shard, key } => {
                let mut unlink = redis::cmd("UNLINK");
                unlink.arg(key);
                vec![(*shard, key.clone(), unlink)]
            }
            Piggyback::Complete { shard, token } => {
                let keys = &self.keys[*shard];
                (scripts::complete(keys, token).into_iter())
                    .map(|command| (*shard, keys.leases.clone(), command))
                    .collect()
            }
            Piggyback::Release { shard, token, url } => {
                let keys = &self.keys[*shard];
                let command = scripts::release(keys, token, url);
                vec![(*shard, keys.inflight.clone(), command)]
            }
        }
    }

    /// Runs `commands`, with what rides on the next pipeline in front, and
    /// returns each command's own outcome. Commands that fail in a way a
    /// new try may mend are sent again, alone, until `retry_for` runs out:
    /// at once after a stale map (mapped again first), after a jittered
    /// pause that doubles otherwise. A refusal is final at once.
    async fn execute(
        &self,
        wire: &mut Wire,
        commands: &[ShardCommand],
    ) -> Vec<Result<Value, Error>> {
        self.execute_carrying(wire, commands, true).await
    }

    /// [`execute`](Self::execute), with what rides on the next pipeline in
    /// front only if `carry`.
    async fn execute_carrying(
        &self,
        wire: &mut Wire,
        commands: &[ShardCommand],
        carry: bool,
    ) -> Vec<Result<Value, Error>> {
        let deadline = wire.now() + self.config.retry_for;
        let mut pause = FIRST_PAUSE;
        let mut immediate_tries = 0;
        let mut outcomes: Vec<Option<Result<Value, Error>>> =
            (0..commands.len()).map(|_| None).collect();
        let mut waiting: Vec<usize> = (0..commands.len()).collect();
        loop {
            let carried = if carry {
                wire.piggyback.len().min(PIGGYBACK_PER_PIPELINE)
            } else {
                0
            };
            let mut pipeline: Vec<ShardCommand> = Vec::new();
            let mut carriers = Vec::with_capacity(carried);
            for entry in &wire.piggyback[..carried] {
                let entry_commands = self.piggyback_commands(entry);
                carriers.push(entry_commands.len());
                pipeline.extend(entry_commands);
            }
            let in_front = pipeline.len();
            pipeline.extend(waiting.iter().map(|&at| commands[at].clone()));
            add(&self.counters.round_trips, 1);
            let mut results = wire.link.send(&pipeline).await.into_iter();
            // A piggyback entry is done once all its commands are (a refused
            // one is dropped: it would be refused again).
            let mut kept = Vec::new();
            let mut ended = Vec::new();
            let mut failures: Vec<Failure> = Vec::new();
            for (entry, count) in wire.piggyback.drain(..carried).zip(carriers) {
                let mut retry = false;
                let mut refused = false;
                let mut out_of_memory = false;
                for result in results.by_ref().take(count) {
                    if let Err(failure) = result {
                        if failure.is_out_of_memory() {
                            out_of_memory = true;
                        } else if matches!(failure, Failure::Refused(_)) {
                            refused = true;
                        } else {
                            retry = true;
                            failures.push(failure);
                        }
                    }
                }
                match entry {
                    entry if retry => kept.push(entry),
                    // A give-back refused for want of memory is sent again
                    // with a later pipeline, its lease kept and renewed
                    // meanwhile (dropping the lease would send every URL of
                    // its take, finished or in hand, back to the queue).
                    entry @ Piggyback::Release { .. } if out_of_memory => {
                        log::warn!(
                            "atomic-bloom fleet: the server is out of memory: a dropped URL \
                             is given back once it has room"
                        );
                        kept.push(entry);
                    }
                    Piggyback::Complete { shard, token } => {
                        lock(&self.leases).remove(&(shard, token));
                    }
                    // A URL given back counts as done for its lease; one the
                    // server refused to give back stays leased, so the lease
                    // is no longer renewed: it ends, and its URLs go back.
                    Piggyback::Release { shard, token, .. } if refused => {
                        log::warn!(
                            "atomic-bloom fleet: a dropped URL could not be given back; its \
                             take goes back on the queue when its lease ends"
                        );
                        lock(&self.leases).remove(&(shard, token));
                    }
                    Piggyback::Release { shard, token, .. } => {
                        ended.extend(self.count_done(shard, token, 1));
                    }
                    Piggyback::Acknowledge { .. } => {}
                }
            }
            wire.piggyback.splice(0..0, kept);
            wire.piggyback.extend(ended);
            debug_assert_eq!(results.len(), pipeline.len() - in_front);
            let mut still = Vec::new();
            for (at, result) in waiting.into_iter().zip(results) {
                match result {
                    Ok(value) => outcomes[at] = Some(Ok(value)),
                    Err(Failure::Refused(error)) => outcomes[at] = Some(Err(error)),
                    Err(failure) => {
                        still.push((at, failure.clone()));
                        failures.push(failure);
                    }
                }
            }
            if still.is_empty() {
                break;
            }
            add(&self.counters.retries, 1);
            if failures.iter().any(Failure::needs_map) {
                wire.link.map_again().await;
            }
            // A stale map is sent again at once, twice at most in a row: a
            // map that does not settle gets the pauses too.
            let only_stale = failures.iter().all(Failure::is_stale) && immediate_tries < 2;
            immediate_tries = if only_stale { immediate_tries + 1 } else { 0 };
            let first = failures.swap_remove(0).into_error();
            if wire.now() + pause > deadline {
                log::warn!("atomic-bloom fleet: {first}; giving up for now");
                for (at, failure) in still {
                    outcomes[at] = Some(Err(failure.into_error()));
                }
                break;
            }
            if only_stale {
                log::debug!("atomic-bloom fleet: {first}; mapped again, sending again");
            } else {
                log::warn!("atomic-bloom fleet: {first}; trying again in {pause:?}");
                let until = wire.now() + jittered(pause, &mut wire.rng);
                wire.link.port.sleep_until(until).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
            waiting = still.into_iter().map(|(at, _)| at).collect();
        }
        outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every command has an outcome"))
            .collect()
    }

    /// Runs `commands` as [`execute`](Self::execute) does, and answers all
    /// their replies, or the first error.
    async fn run(&self, wire: &mut Wire, commands: &[ShardCommand]) -> Result<Vec<Value>, Error> {
        self.execute(wire, commands).await.into_iter().collect()
    }

    /// Sends the batches of `wire.sending`, each to its shard's filter (and
    /// queue, if `queue`), and returns each batch's outcome, in order: for
    /// each item, `true` if the server's filter did not hold it. Retried
    /// batches get the first run's answer; a batch for a failing shard
    /// fails alone. The batches stay in `wire.sending` for the caller.
    pub(crate) async fn offer(
        &self,
        wire: &mut Wire,
        queue: bool,
    ) -> Vec<Result<Vec<bool>, Error>> {
        // Before the batches, not after their answers: a call dropped
        // there (a cancelled future) would leave answered batches in
        // `wire.sending`, to be sent again behind their own
        // acknowledgements, which delete the answers they would find.
        self.send_excess_piggyback(wire).await;
        let config = &self.config;
        let settings = scripts::OfferSettings {
            capacity: (config.capacity / config.shards).max(1),
            error_rate: config.error_rate,
            ttl_seconds: config.result_ttl.as_secs(),
            expansion: config.expansion,
        };
        let mut results = Vec::with_capacity(wire.sending.len());
        let commands: Vec<ShardCommand> = (wire.sending.iter())
            .map(|batch| {
                let shard = &self.keys[batch.shard];
                let result = format!("{}:{}:{}", shard.results, self.id, batch.id);
                let command = scripts::offer(shard, &result, queue, settings, &batch.items);
                results.push(result);
                (batch.shard, shard.seen.clone(), command)
            })
            .collect();
        let replies = self.execute(wire, &commands).await;
        let mut answers = Vec::with_capacity(results.len());
        for ((at, result), reply) in results.into_iter().enumerate().zip(replies) {
            let batch = &wire.sending[at];
            let shard = batch.shard;
            answers.push(reply.and_then(|reply| {
                let flags = match reply {
                    Value::BulkString(flags) => flags,
                    Value::SimpleString(flags) => flags.into_bytes(),
                    other => {
                        return Err(server_error(
                            wire.link.node_of(shard),
                            format!("a batch's answer was {other:?}, not a string of flags"),
                        ))
                    }
                };
                wire.piggyback
                    .push(Piggyback::Acknowledge { shard, key: result });
                let fresh = flags.iter().filter(|&&flag| flag == b'1').count();
                add(&self.counters.sent, batch.items.len() as u64);
                add(&self.counters.new_on_server, fresh as u64);
                Ok(flags.iter().map(|&flag| flag == b'1').collect())
            }));
        }
        answers
    }

    /// Sends what waits to ride on a pipeline, if anything does, in a
    /// pipeline of its own.
    pub(crate) async fn send_piggyback(&self, wire: &mut Wire) {
        if !wire.piggyback.is_empty() {
            self.execute(wire, &[]).await;
        }
    }

    /// Sends what waits to ride on a pipeline beyond what the next one
    /// carries (a call of more than that many batches leaves as many
    /// acknowledgements): otherwise each such call would add more than the
    /// next one takes, and they would pile up on both sides. Called before
    /// a call's batches go, never after their answers came back.
    async fn send_excess_piggyback(&self, wire: &mut Wire) {
        let mut rounds = wire.piggyback.len() / PIGGYBACK_PER_PIPELINE;
        while rounds > 0 && wire.piggyback.len() > PIGGYBACK_PER_PIPELINE {
            self.execute(wire, &[]).await;
            rounds -= 1;
        }
    }

    /// Takes up to `count` URLs from the fleet's queues, spread over the
    /// shards, each under a lease. A take whose answer was lost is
    /// finished first. Shards that fail keep their part of the take for
    /// the next call; the URLs of the others come back, and the call fails
    /// only when every shard did.
    pub(crate) async fn take(&self, wire: &mut Wire, count: usize) -> Result<Vec<TakenUrl>, Error> {
        // Shards whose last take failed send it again, with its token; the
        // others take afresh.
        let mut commands = wire.unfinished_take.take().unwrap_or_default();
        let each = count.div_ceil(self.keys.len()).max(1);
        let lease_ms = millis(self.config.lease);
        for shard in 0..self.keys.len() {
            if commands.iter().any(|((again, _, _), _)| *again == shard) {
                continue;
            }
            let keys = &self.keys[shard];
            let token = format!("{}:{}", self.id, wire.next_id());
            let command = scripts::take(keys, &token, each, lease_ms);
            commands.push(((shard, keys.queue.clone(), command), token));
        }
        let shard_commands: Vec<ShardCommand> = commands
            .iter()
            .map(|(command, _)| command.clone())
            .collect();
        // Kept until the answers are in: a call dropped mid-way leaves the
        // take to the next one.
        wire.unfinished_take = Some(commands.clone());
        let replies = self.execute(wire, &shard_commands).await;
        wire.unfinished_take = None;
        let mut taken = Vec::new();
        let mut unfinished = Vec::new();
        let mut first_error = None;
        for ((command, token), reply) in commands.into_iter().zip(replies) {
            let shard = command.0;
            let items = match reply {
                Ok(Value::Array(items)) => items,
                Ok(_) => continue,
                Err(error) => {
                    log::warn!("atomic-bloom fleet: a take from shard {shard} failed: {error}");
                    first_error.get_or_insert(error);
                    unfinished.push((command, token));
                    continue;
                }
            };
            let before = taken.len();
            taken.extend(items.into_iter().filter_map(|item| match item {
                Value::BulkString(bytes) => Some(TakenUrl {
                    shard,
                    token: token.clone(),
                    url: String::from_utf8(bytes).ok()?,
                }),
                _ => None,
            }));
            if taken.len() > before {
                lock(&self.leases).insert((shard, token), taken.len() - before);
            }
        }
        if !unfinished.is_empty() {
            wire.unfinished_take = Some(unfinished);
        }
        add(&self.counters.taken, taken.len() as u64);
        match first_error {
            Some(error) if taken.is_empty() => Err(error),
            _ => Ok(taken),
        }
    }

    /// Whether this client holds leases to renew.
    pub(crate) fn holds_leases(&self) -> bool {
        !lock(&self.leases).is_empty()
    }

    /// Counts `done` more URLs of `shard`'s lease `token` as done; once
    /// all are, the lease's end rides on `wire`'s next pipeline.
    pub(crate) fn complete(&self, wire: &mut Wire, shard: usize, token: String, done: usize) {
        wire.piggyback.extend(self.count_done(shard, token, done));
    }

    /// Gives a URL of `shard`'s lease `token`, dropped without being
    /// completed, back to the queue with `wire`'s next pipeline; once the
    /// server has it, it counts as done for the lease.
    pub(crate) fn release(&self, wire: &mut Wire, shard: usize, token: String, url: String) {
        wire.piggyback
            .push(Piggyback::Release { shard, token, url });
    }

    /// Counts `done` more URLs of a lease as done: its end, once all are.
    fn count_done(&self, shard: usize, token: String, done: usize) -> Option<Piggyback> {
        let mut leases = lock(&self.leases);
        let left = leases.get_mut(&(shard, token.clone()))?;
        *left = left.saturating_sub(done);
        (*left == 0).then_some(Piggyback::Complete { shard, token })
    }

    /// Extends every lease this client holds, and its busy mark if `busy`
    /// (only a live one: a beat never marks a client that went idle
    /// meanwhile), through the heartbeat's own connections, in one try (the
    /// next beat tries again).
    pub(crate) async fn renew(&self, beat: &mut Link, busy: bool) -> Result<Renewal, Error> {
        let lease_ms = millis(self.config.lease);
        let mut by_shard: HashMap<usize, Vec<String>> = HashMap::new();
        for (shard, token) in lock(&self.leases).keys() {
            by_shard.entry(*shard).or_default().push(token.clone());
        }
        let shards: Vec<usize> = by_shard.keys().copied().collect();
        let mut commands: Vec<ShardCommand> = shards
            .iter()
            .map(|&shard| {
                let keys = &self.keys[shard];
                let command = scripts::renew(keys, &by_shard[&shard], lease_ms);
                (shard, keys.leases.clone(), command)
            })
            .collect();
        if busy {
            let fleet = &self.fleet;
            let command = scripts::state(
                &fleet.control,
                &fleet.clients,
                &self.id,
                scripts::Mark::Renew,
                lease_ms,
            );
            commands.push((self.fleet_route(), fleet.clients.clone(), command));
        }
        if !beat.is_mapped() {
            beat.map().await.map_err(Failure::into_error)?;
        }
        let mut renewal = Renewal::default();
        let mut first_failure = None;
        for (at, outcome) in beat.send(&commands).await.into_iter().enumerate() {
            match outcome {
                // Tokens not renewed: lost only if still held with pages
                // not done (a lease that ended meanwhile is not).
                Ok(Value::Array(missed)) if at < shards.len() => {
                    let leases = lock(&self.leases);
                    renewal.lost += (missed.iter())
                        .filter_map(|token| match token {
                            Value::BulkString(token) => String::from_utf8(token.clone()).ok(),
                            _ => None,
                        })
                        .filter(|token| {
                            (leases.get(&(shards[at], token.clone()))).is_some_and(|&left| left > 0)
                        })
                        .count();
                }
                Ok(Value::Int(0)) if at == shards.len() => renewal.mark_lapsed = true,
                Ok(_) => {}
                Err(failure) => {
                    first_failure.get_or_insert(failure);
                }
            }
        }
        if let Some(failure) = first_failure {
            if failure.needs_map() {
                beat.map_again().await;
            }
            return Err(failure.into_error());
        }
        Ok(renewal)
    }

    /// Items in the fleet's queues, over the shards that answered, and the
    /// first error of those that did not: a node that is down hides its
    /// own shards' items, not the others'.
    pub(crate) async fn queued(&self, wire: &mut Wire) -> (u64, Option<Error>) {
        let commands: Vec<ShardCommand> = (self.keys.iter().enumerate())
            .map(|(shard, keys)| {
                let mut length = redis::cmd("LLEN");
                length.arg(&keys.queue);
                (shard, keys.queue.clone(), length)
            })
            .collect();
        let mut queued = 0;
        let mut first_error = None;
        for outcome in self.execute(wire, &commands).await {
            match outcome {
                Ok(Value::Int(length)) => queued += length.max(0) as u64,
                Ok(_) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        (queued, first_error)
    }

    /// URLs queued or on lease over every shard, after expired leases went
    /// back on their queues.
    pub(crate) async fn pending(&self, wire: &mut Wire) -> Result<u64, Error> {
        let commands: Vec<ShardCommand> = (self.keys.iter().enumerate())
            .map(|(shard, keys)| (shard, keys.queue.clone(), scripts::pending(keys)))
            .collect();
        let replies = self.run(wire, &commands).await?;
        Ok(replies
            .iter()
            .map(|reply| match reply {
                Value::Int(length) => (*length).max(0) as u64,
                _ => 0,
            })
            .sum())
    }

    /// Marks this client busy (until its lease runs out, unless renewed)
    /// or idle.
    pub(crate) async fn set_busy(&self, wire: &mut Wire, busy: bool) -> Result<(), Error> {
        let lease_ms = millis(self.config.lease);
        let fleet = &self.fleet;
        let mark = if busy {
            scripts::Mark::Busy
        } else {
            scripts::Mark::Idle
        };
        let command = scripts::state(&fleet.control, &fleet.clients, &self.id, mark, lease_ms);
        // A busy mark goes alone: what rides on pipelines (lease ends,
        // give-backs) moves work, which a client does only under a mark
        // that lives, and carried in front of the mark it would run first,
        // or on another node without it (the fleet's node cut off).
        let outcomes = self
            .execute_carrying(
                wire,
                &[(self.fleet_route(), fleet.clients.clone(), command)],
                !busy,
            )
            .await;
        outcomes.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(())
    }

    /// The control hash's epoch and how many live clients are busy.
    pub(crate) async fn census(&self, wire: &mut Wire) -> Result<(i64, i64), Error> {
        let fleet = &self.fleet;
        let command = scripts::census(&fleet.control, &fleet.clients);
        let replies = self
            .run(
                wire,
                &[(self.fleet_route(), fleet.clients.clone(), command)],
            )
            .await?;
        if let Some(Value::Array(pair)) = replies.first() {
            if let [Value::BulkString(epoch), Value::Int(busy)] = pair.as_slice() {
                if let Ok(epoch) = String::from_utf8_lossy(epoch).parse() {
                    return Ok((epoch, *busy));
                }
            }
        }
        Err(server_error(
            wire.link.node_of(self.fleet_route()),
            format!("the fleet's census answered {replies:?}"),
        ))
    }
}
