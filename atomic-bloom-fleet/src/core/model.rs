//! A small model of the fleet's server (what each script does to the
//! filters, queues and leases) and the ways the core's tests drive calls
//! against it: to their end, dropped at a request (a tokio future
//! cancelled), or through a seeded schedule of lost and cut replies.

use redis::Value;
use std::collections::{HashMap, HashSet, VecDeque};

use super::call::{Call, Io, Pipeline, Received, Step};
use super::client::Client;
use super::frontier::FrontierCore;
use super::seen::SeenCore;
use super::tests::{commands, script, standalone, waits, Fake};
use super::wire::Wire;
use crate::sync::Arc;

pub(super) fn bulk(text: &str) -> Value {
    Value::BulkString(text.as_bytes().to_vec())
}

/// The fleet's keys and what the scripts do to them, for one server (or
/// every node of a cluster at once: keys do not collide across slots).
#[derive(Debug, Default)]
pub(super) struct Model {
    /// The shards' filters, as sets.
    pub(super) filter: HashSet<String>,
    /// Batch answers by result key.
    pub(super) results: HashMap<String, String>,
    /// Queues by key.
    pub(super) queues: HashMap<String, VecDeque<String>>,
    /// Leased URLs by (inflight key, token).
    pub(super) inflight: HashMap<(String, String), Vec<String>>,
    /// Leases by (leases key, token).
    pub(super) leases: HashSet<(String, String)>,
    /// Every command run, in order.
    pub(super) ran: Vec<Vec<String>>,
    /// Offers are refused (the server out of memory).
    pub(super) refuse_offers: bool,
    /// Offers to this filter are refused (its node out of memory).
    pub(super) refuse_filter: Option<String>,
    /// Commands the server runs before it loses its scripts (a restart or
    /// a failover, part-way through a pipeline, if it falls there).
    pub(super) lose_scripts_in: Option<usize>,
    /// The scripts are lost: `EVALSHA` answers `NOSCRIPT`, running
    /// nothing, until a `SCRIPT LOAD`.
    pub(super) scripts_lost: bool,
    /// `NOSCRIPT` replies so far.
    pub(super) noscripts: usize,
}

impl Model {
    /// Runs `command` as the server would, and answers it.
    pub(super) fn run(&mut self, command: &[String]) -> Value {
        self.ran.push(command.to_vec());
        match self.lose_scripts_in {
            Some(0) => {
                self.scripts_lost = true;
                self.lose_scripts_in = None;
            }
            Some(left) => self.lose_scripts_in = Some(left - 1),
            None => {}
        }
        match command[0].as_str() {
            "SCRIPT" => self.scripts_lost = false,
            "EVALSHA" if self.scripts_lost => {
                self.noscripts += 1;
                return Value::ServerError(
                    match redis::parse_redis_value(b"-NOSCRIPT No matching script.\r\n") {
                        Ok(Value::ServerError(error)) => error,
                        other => panic!("{other:?}"),
                    },
                );
            }
            _ => {}
        }
        if let Some(reply) = standalone(command).or_else(|| waits(command)) {
            return reply;
        }
        let (keys, args) = match command[0].as_str() {
            "EVALSHA" => {
                let count: usize = command[2].parse().expect("a key count");
                (&command[3..3 + count], &command[3 + count..])
            }
            _ => (&command[1..2], &command[2..]),
        };
        match (command[0].as_str(), script(command)) {
            ("UNLINK", _) => Value::Int(i64::from(self.results.remove(&keys[0]).is_some())),
            ("HDEL", _) => {
                let gone = self.inflight.remove(&(keys[0].clone(), args[0].clone()));
                Value::Int(i64::from(gone.is_some()))
            }
            ("ZREM", _) => Value::Int(i64::from(
                self.leases.remove(&(keys[0].clone(), args[0].clone())),
            )),
            (_, "offer")
                if self.refuse_offers || self.refuse_filter.as_deref() == Some(&keys[0]) =>
            {
                Value::ServerError(
                    match redis::parse_redis_value(b"-OOM command not allowed\r\n") {
                        Ok(Value::ServerError(error)) => error,
                        other => panic!("{other:?}"),
                    },
                )
            }
            (_, "offer") => {
                let done = self.results.get(&keys[1]).cloned().unwrap_or_default();
                let items = &args[4..];
                if done.len() >= items.len() {
                    return bulk(&done);
                }
                let mut result = done.clone();
                for item in &items[done.len()..] {
                    let new = self.filter.insert(item.clone());
                    result.push(if new { '1' } else { '0' });
                    if new && keys.len() > 2 {
                        let queue = self.queues.entry(keys[2].clone()).or_default();
                        queue.push_back(item.clone());
                    }
                }
                self.results.insert(keys[1].clone(), result.clone());
                bulk(&result)
            }
            (_, "take") => {
                let lease = (keys[2].clone(), args[2].clone());
                let held = (keys[1].clone(), args[2].clone());
                if let Some(urls) = self.inflight.get(&held) {
                    return Value::Array(urls.iter().map(|url| bulk(url)).collect());
                }
                let count: usize = args[0].parse().expect("a count");
                let queue = self.queues.entry(keys[0].clone()).or_default();
                let taken: Vec<String> = (0..count).map_while(|_| queue.pop_front()).collect();
                if !taken.is_empty() {
                    self.inflight.insert(held, taken.clone());
                    self.leases.insert(lease);
                }
                Value::Array(taken.iter().map(|url| bulk(url)).collect())
            }
            (_, "release") => {
                let held = (keys[1].clone(), args[0].clone());
                let Some(urls) = self.inflight.get_mut(&held) else {
                    return Value::Int(0);
                };
                let Some(at) = urls.iter().position(|url| *url == args[1]) else {
                    return Value::Int(0);
                };
                urls.remove(at);
                let queue = self.queues.entry(keys[0].clone()).or_default();
                queue.push_front(args[1].clone());
                if urls.is_empty() {
                    self.inflight.remove(&held);
                    self.leases.remove(&(keys[2].clone(), args[0].clone()));
                }
                Value::Int(1)
            }
            (_, "state") => Value::Int(1),
            (_, "settings") => Value::Array(Vec::new()),
            (_, "census") => Value::Array(vec![bulk("0"), Value::Int(0)]),
            (_, "pending") => {
                let queued = self.queues.get(&keys[0]).map_or(0, VecDeque::len);
                let leased = (self.leases.iter())
                    .filter(|(key, _)| *key == keys[2])
                    .count();
                Value::Int((queued + leased) as i64)
            }
            (_, "renew") => Value::Array(Vec::new()),
            ("LLEN", _) => Value::Int(self.queues.get(&keys[0]).map_or(0, VecDeque::len) as i64),
            (name, script) => panic!("the model has no {name} {script}: {command:?}"),
        }
    }

    /// Whether any queue holds `url`.
    pub(super) fn queued(&self, url: &str) -> bool {
        self.queues
            .values()
            .any(|queue| queue.iter().any(|queued| queued == url))
    }

    /// Runs every command of `pipeline` and answers them all.
    pub(super) fn answer(&mut self, pipeline: &Pipeline) -> Received {
        let words = commands(&pipeline.bytes);
        assert_eq!(words.len(), pipeline.replies, "{words:?}");
        Received {
            replies: words.iter().map(|command| self.run(command)).collect(),
            lost: None,
        }
    }
}

/// Runs `call` against `model` up to its request number `drop_at` (from
/// 0) and drops it there, the way a cancelled tokio future drops it: if
/// `ran`, that request's pipelines reached the server (and ran) before
/// the drop. `None` if the call was dropped, its value if it ended first.
pub(super) fn drive_dropping<T>(
    fake: &mut Fake,
    model: &mut Model,
    mut call: Call<'_, T>,
    drop_at: usize,
    ran: bool,
) -> Option<T> {
    for request in 0.. {
        let io = match call.step(fake.now) {
            Step::Done(value) => return Some(value),
            Step::Io(io) => io,
        };
        let received = match io {
            Io::Sleep(until) => {
                fake.now = fake.now.max(until);
                Vec::new()
            }
            Io::Round(pipelines) if request == drop_at => {
                if ran {
                    for pipeline in &pipelines {
                        model.answer(pipeline);
                    }
                }
                return None;
            }
            Io::Round(pipelines) => pipelines.iter().map(|p| model.answer(p)).collect(),
        };
        if request == drop_at {
            return None;
        }
        call.answer(received);
    }
    unreachable!()
}

/// Runs `call` to its end against `model`.
pub(super) fn drive<T>(fake: &mut Fake, model: &mut Model, call: Call<'_, T>) -> T {
    drive_dropping(fake, model, call, usize::MAX, false).expect("never dropped")
}

/// A seen-set's client, connected to `model`.
pub(super) fn seen_client(
    config: &crate::FleetConfig,
    fake: &mut Fake,
    model: &mut Model,
) -> (SeenCore, Wire) {
    let (client, mut wire) = Client::new(config, 7).expect("a valid config");
    let seen = SeenCore::new(client);
    let connected = drive(
        fake,
        model,
        Call::new(wire.port(), seen.client.connect(&mut wire)),
    );
    connected.expect("connects");
    (seen, wire)
}

/// A frontier's core, connected to `model`.
pub(super) fn frontier(
    config: &crate::FleetConfig,
    fake: &mut Fake,
    model: &mut Model,
) -> (Arc<FrontierCore>, Wire) {
    let (client, mut wire) = Client::new(config, 7).expect("a valid config");
    let core = Arc::new(FrontierCore::new(client));
    drive(fake, model, core.connect(&mut wire)).expect("connects");
    (core, wire)
}

/// How often a seeded schedule disturbs a round, per thousand, by kind.
#[derive(Clone, Copy, Debug)]
pub(super) struct Faults {
    /// The call dropped before its pipelines were written.
    pub(super) drop_before: u64,
    /// The call dropped after its pipelines ran, before their replies.
    pub(super) drop_after: u64,
    /// A pipeline that ran, its replies lost.
    pub(super) lose_after: u64,
    /// A pipeline cut part way: the first replies read, the rest lost
    /// (whether the rest ran is drawn too).
    pub(super) cut: u64,
}

/// Whether a draw of `rng` falls within `per_mille` of a thousand.
pub(super) fn roll(rng: &mut super::Rng, per_mille: u64) -> bool {
    rng.draw() % 1000 < per_mille
}

/// Runs `call` against `model`, disturbing its rounds as `faults` says.
pub(super) fn drive_faulty<T>(
    fake: &mut Fake,
    model: &mut Model,
    rng: &mut super::Rng,
    faults: Faults,
    mut call: Call<'_, T>,
) -> Option<T> {
    loop {
        let pipelines = match call.step(fake.now) {
            Step::Done(value) => return Some(value),
            Step::Io(Io::Sleep(until)) => {
                fake.now = fake.now.max(until);
                call.answer(Vec::new());
                continue;
            }
            Step::Io(Io::Round(pipelines)) => pipelines,
        };
        if roll(rng, faults.drop_before) {
            return None;
        }
        if roll(rng, faults.drop_after) {
            for pipeline in &pipelines {
                model.answer(pipeline);
            }
            return None;
        }
        let received = disturbed(model, rng, faults, &pipelines);
        call.answer(received);
    }
}

/// What `model` answers to `pipelines`, replies lost after their commands
/// ran and pipelines cut part way as `faults` says; whether any was.
pub(super) fn disturbed(
    model: &mut Model,
    rng: &mut super::Rng,
    faults: Faults,
    pipelines: &[Pipeline],
) -> Vec<Received> {
    let mut received = Vec::with_capacity(pipelines.len());
    for pipeline in pipelines {
        if roll(rng, faults.lose_after) {
            model.answer(pipeline);
            received.push(Received::failed("the reply was lost"));
        } else if roll(rng, faults.cut) {
            let words = commands(&pipeline.bytes);
            let read = (rng.draw() % (words.len() as u64 + 1)) as usize;
            let rest_ran = roll(rng, 500);
            let mut replies = Vec::new();
            for (at, command) in words.iter().enumerate() {
                if at < read {
                    replies.push(model.run(command));
                } else if rest_ran {
                    model.run(command);
                }
            }
            received.push(Received {
                replies,
                lost: Some("cut".into()),
            });
        } else {
            received.push(model.answer(pipeline));
        }
    }
    received
}
