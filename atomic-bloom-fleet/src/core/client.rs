//! What a fleet seen-set and a fleet frontier share: the configuration,
//! the shards' keys, the local filter, and the calls that send batches,
//! take from the queues and keep the fleet's state, each retried until
//! `retry_for` runs out. The calls do no I/O: they ask their wire's port
//! for it (see `call`).

use crate::sync::Mutex;
use std::collections::HashMap;

use atomic_bloom::ScalableBloomFilter;
use redis::Value;

use super::failure::Failure;
use super::keys::{self, FleetKeys, ShardKeys};
use super::link::{Link, Node};
use super::wire::{Piggyback, ShardCommand, TakenUrl, Wire};
use super::{lock, millis, scripts, Rng};
use crate::sync::{AtomicU64, Ordering};
use crate::{Error, FleetConfig, FleetStats};

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
pub(super) struct Counters {
    offered: AtomicU64,
    answered_locally: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(super) new_on_server: AtomicU64,
    taken: AtomicU64,
    pub(super) round_trips: AtomicU64,
    pub(super) retries: AtomicU64,
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
    pub(super) leases: Mutex<HashMap<(usize, String), usize>>,
    /// The nodes the connect's map found: where the heartbeat's own
    /// connections look when the configured node does not answer.
    known_nodes: Mutex<Vec<Node>>,
    pub(super) counters: Counters,
}

pub(super) fn add(counter: &AtomicU64, amount: u64) {
    // Relaxed: a statistic; it publishes nothing and orders nothing.
    counter.fetch_add(amount, Ordering::Relaxed);
}

fn read(counter: &AtomicU64) -> u64 {
    // Relaxed: a statistic (see `FleetStats`, Consistency).
    counter.load(Ordering::Relaxed)
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
        Ok((client, Wire::new(link, rng)))
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
