//! What a fleet seen-set and a fleet frontier share: the configuration,
//! the shards' keys, the local filter, the connections, and the calls that
//! send batches, take from the queues and keep the fleet's state, each
//! retried until `retry_for` runs out.

use std::thread;
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use super::keys::{self, ShardKeys};
use super::link::{Failure, Link};
use super::{lock, scripts, FleetConfig, FleetStats};
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use crate::{Error, ScalableBloomFilter};

/// Results acknowledged (deleted on the server) with each pipeline, at most.
const ACKS_PER_PIPELINE: usize = 512;

/// The first pause between two tries; it doubles up to `MAX_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Items for one shard, under an id that stays theirs until the server's
/// answer is in.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) shard: usize,
    pub(crate) id: u64,
    pub(crate) items: Vec<String>,
}

/// A command for one shard, with the key its errors name.
type ShardCommand = (usize, String, Cmd);

/// What one thread at a time uses: the connections, results to
/// acknowledge, the next id, and a take whose answer has not come back.
#[derive(Debug)]
pub(crate) struct Wire {
    link: Link,
    acks: Vec<(usize, String)>,
    next_id: u64,
    /// The take commands and their result keys.
    unfinished_take: Option<Vec<(ShardCommand, String)>>,
}

impl Wire {
    /// Whether a take's answer was lost: its URLs wait on the server under
    /// its result keys until the next take collects them.
    pub(crate) fn has_unfinished_take(&self) -> bool {
        self.unfinished_take.is_some()
    }

    /// A fresh id for a batch or a take.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
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
    /// The control hash: busy and idle clients and the epoch.
    control: String,
    /// This client's name in result keys and in the control hash.
    id: String,
    pub(crate) local: Option<ScalableBloomFilter<str>>,
    wire: Mutex<Wire>,
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

impl Client {
    /// Checks `config`, connects, and builds the local filter.
    pub(crate) fn connect(config: &FleetConfig) -> Result<Client, Error> {
        config.validate()?;
        let keys = keys::shard_keys(&config.prefix, config.shards);
        let control = format!("{}:control:{{{}}}", config.prefix, keys[0].tag);
        let link = Link::connect(&config.url, config.timeout, &keys)?;
        let local = if config.local_filter {
            Some(
                ScalableBloomFilter::builder(config.local_capacity, config.local_error_rate)
                    .build()?,
            )
        } else {
            None
        };
        let id = format!("{:016x}", crate::hash::unlikely_to_repeat());
        Ok(Client {
            config: config.clone(),
            keys,
            control,
            id,
            local,
            wire: Mutex::new(Wire {
                link,
                acks: Vec::new(),
                next_id: 0,
                unfinished_take: None,
            }),
            counters: Counters::default(),
        })
    }

    /// The connections, for one thread.
    pub(crate) fn wire(&self) -> MutexGuard<'_, Wire> {
        lock(&self.wire)
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

    /// Runs `commands` (with results to acknowledge in front), trying
    /// again while the server cannot be reached, up to `retry_for`.
    fn run(&self, wire: &mut Wire, commands: &[ShardCommand]) -> Result<Vec<Value>, Error> {
        let deadline = Instant::now() + self.config.retry_for;
        let mut pause = FIRST_PAUSE;
        loop {
            let acks = wire.acks.len().min(ACKS_PER_PIPELINE);
            let mut pipeline: Vec<ShardCommand> = wire.acks[..acks]
                .iter()
                .map(|(shard, key)| {
                    let mut unlink = redis::cmd("UNLINK");
                    unlink.arg(key);
                    (*shard, key.clone(), unlink)
                })
                .collect();
            pipeline.extend(commands.iter().cloned());
            add(&self.counters.round_trips, 1);
            match wire.link.run(&pipeline) {
                Ok(mut replies) => {
                    wire.acks.drain(..acks);
                    return Ok(replies.split_off(acks));
                }
                Err(Failure::Refused(error)) => return Err(error),
                Err(failure) => {
                    add(&self.counters.retries, 1);
                    let error = failure.into_error();
                    if Instant::now() + pause > deadline {
                        log::warn!("atomic-bloom fleet: {error}; giving up for now");
                        return Err(error);
                    }
                    log::warn!("atomic-bloom fleet: {error}; trying again in {pause:?}");
                    thread::sleep(pause);
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        }
    }

    /// Sends `batches`, each to its shard's filter (and queue, if `queue`),
    /// and returns each item's answer: `true` if the server's filter did
    /// not hold it. Retried batches get the first run's answer.
    pub(crate) fn offer(
        &self,
        wire: &mut Wire,
        batches: &[Batch],
        queue: bool,
    ) -> Result<Vec<Vec<bool>>, Error> {
        let config = &self.config;
        let capacity = (config.capacity / config.shards).max(1);
        let ttl = config.result_ttl.as_secs();
        let mut results = Vec::with_capacity(batches.len());
        let commands: Vec<ShardCommand> = batches
            .iter()
            .map(|batch| {
                let shard = &self.keys[batch.shard];
                let result = format!("{}:{}:{}", shard.results, self.id, batch.id);
                let command = scripts::offer(
                    shard,
                    &result,
                    queue,
                    capacity,
                    config.error_rate,
                    ttl,
                    &batch.items,
                );
                results.push(result);
                (batch.shard, shard.seen.clone(), command)
            })
            .collect();
        let replies = self.run(wire, &commands)?;
        let mut answers = Vec::with_capacity(batches.len());
        for (((shard, _, _), result), reply) in commands.into_iter().zip(results).zip(replies) {
            let flags = match reply {
                Value::BulkString(flags) => flags,
                Value::SimpleString(flags) => flags.into_bytes(),
                other => {
                    return Err(Error::ServerRefused {
                        node: wire.link.node_of(shard).to_string(),
                        message: format!("a batch's answer was {other:?}, not a string of flags"),
                    })
                }
            };
            answers.push(flags.iter().map(|&flag| flag == b'1').collect::<Vec<_>>());
            wire.acks.push((shard, result));
        }
        let sent: usize = batches.iter().map(|batch| batch.items.len()).sum();
        let fresh: usize = answers.iter().flatten().filter(|&&new| new).count();
        add(&self.counters.sent, sent as u64);
        add(&self.counters.new_on_server, fresh as u64);
        Ok(answers)
    }

    /// Takes up to `count` items from the fleet's queues, spread over the
    /// shards. A take whose answer was lost is finished first.
    pub(crate) fn take(&self, wire: &mut Wire, count: usize) -> Result<Vec<String>, Error> {
        let commands = match wire.unfinished_take.take() {
            Some(commands) => commands,
            None => {
                let each = count.div_ceil(self.keys.len()).max(1);
                let ttl = self.config.result_ttl.as_secs();
                (0..self.keys.len())
                    .map(|shard| {
                        let keys = &self.keys[shard];
                        let result = format!("{}:{}:take{}", keys.results, self.id, wire.next_id());
                        let command = scripts::take(keys, &result, each, ttl);
                        ((shard, keys.queue.clone(), command), result)
                    })
                    .collect()
            }
        };
        let shard_commands: Vec<ShardCommand> = commands
            .iter()
            .map(|(command, _)| command.clone())
            .collect();
        let replies = match self.run(wire, &shard_commands) {
            Ok(replies) => replies,
            Err(error) => {
                wire.unfinished_take = Some(commands);
                return Err(error);
            }
        };
        let mut taken = Vec::new();
        for (((shard, _, _), result), reply) in commands.into_iter().zip(replies) {
            if let Value::Array(items) = reply {
                if !items.is_empty() {
                    wire.acks.push((shard, result));
                }
                taken.extend(items.into_iter().filter_map(|item| match item {
                    Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
                    _ => None,
                }));
            }
        }
        add(&self.counters.taken, taken.len() as u64);
        Ok(taken)
    }

    /// Items in the fleet's queues, over every shard.
    pub(crate) fn queued(&self, wire: &mut Wire) -> Result<u64, Error> {
        let commands: Vec<ShardCommand> = (self.keys.iter().enumerate())
            .map(|(shard, keys)| {
                let mut length = redis::cmd("LLEN");
                length.arg(&keys.queue);
                (shard, keys.queue.clone(), length)
            })
            .collect();
        let replies = self.run(wire, &commands)?;
        Ok(replies
            .iter()
            .map(|reply| match reply {
                Value::Int(length) => *length as u64,
                _ => 0,
            })
            .sum())
    }

    /// Marks this client busy or idle in the control hash.
    pub(crate) fn set_busy(&self, wire: &mut Wire, busy: bool) -> Result<(), Error> {
        let command = scripts::state(&self.control, &self.id, busy);
        self.run(wire, &[(0, self.control.clone(), command)])?;
        Ok(())
    }

    /// The control hash's epoch and how many clients are busy.
    pub(crate) fn census(&self, wire: &mut Wire) -> Result<(i64, i64), Error> {
        let command = scripts::census(&self.control);
        let replies = self.run(wire, &[(0, self.control.clone(), command)])?;
        if let Some(Value::Array(pair)) = replies.first() {
            if let [Value::BulkString(epoch), Value::Int(busy)] = pair.as_slice() {
                if let Ok(epoch) = String::from_utf8_lossy(epoch).parse() {
                    return Ok((epoch, *busy));
                }
            }
        }
        Err(Error::ServerRefused {
            node: wire.link.node_of(0).to_string(),
            message: format!("the fleet's census answered {replies:?}"),
        })
    }
}
