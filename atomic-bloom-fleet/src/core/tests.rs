//! The core against scripted servers and a clock that jumps: no socket, no
//! sleep. A [`Fake`] answers each command of a round by a rule of the test;
//! `drive` runs a call to its end, moving the clock to each sleep's end.

use std::time::{Duration, Instant};

use redis::Value;

use super::call::{Call, Io, Pipeline, Received, Step};
use super::client::Client;
use super::frontier::{FrontierCore, Heartbeat};
use super::wire::Wire;
use crate::sync::Arc;
use crate::FleetConfig;

/// One command as the server reads it: its words.
pub(super) fn commands(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut replies = super::resp::Replies::new(usize::MAX);
    replies.feed(bytes).expect("requests are RESP arrays");
    (replies.received(None).replies.into_iter())
        .map(|command| match command {
            Value::Array(words) => (words.into_iter())
                .map(|word| match word {
                    Value::BulkString(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// A server's answer to one command: what a test's rule returns.
pub(super) type Rule<'a> = dyn FnMut(&[String]) -> Value + 'a;

/// The replies of a plain standalone node with the module, for what a
/// connect sends; `None` for the fleet's scripts.
pub(super) fn standalone(command: &[String]) -> Option<Value> {
    let bulk = |text: &str| Value::BulkString(text.as_bytes().to_vec());
    Some(match command[0].as_str() {
        "INFO" => bulk("# Cluster\r\ncluster_enabled:0\r\n"),
        "CLUSTER" => Value::ServerError(
            redis::parse_redis_value(b"-ERR This instance has cluster support disabled\r\n")
                .ok()
                .and_then(|value| match value {
                    Value::ServerError(error) => Some(error),
                    _ => None,
                })
                .expect("an error"),
        ),
        "COMMAND" => Value::Array(vec![Value::Array(vec![bulk(&command[2])])]),
        "CONFIG" => Value::Array(vec![bulk("maxmemory-policy"), bulk("noeviction")]),
        "SCRIPT" => bulk("0000000000000000000000000000000000000000"),
        _ => return None,
    })
}

/// The commands every round of a drive sent, and the clock.
pub(super) struct Fake {
    pub(super) now: Instant,
    pub(super) sent: Vec<Vec<String>>,
}

impl Fake {
    pub(super) fn new() -> Fake {
        Fake {
            now: Instant::now(),
            sent: Vec::new(),
        }
    }

    /// Runs `call` to its end, each command answered by `rule` (lost, the
    /// whole pipeline, where it answers `Value::Nil` to a `WAIT`... no: a
    /// rule answers every command), each sleep jumping the clock.
    pub(super) fn drive<T>(&mut self, mut call: Call<'_, T>, rule: &mut Rule<'_>) -> T {
        loop {
            match call.step(self.now) {
                Step::Done(value) => return value,
                Step::Io(Io::Sleep(until)) => {
                    self.now = self.now.max(until);
                    call.answer(Vec::new());
                }
                Step::Io(Io::Round(pipelines)) => {
                    let received = pipelines
                        .iter()
                        .map(|pipeline| self.answer(pipeline, rule))
                        .collect();
                    call.answer(received);
                }
            }
        }
    }

    fn answer(&mut self, pipeline: &Pipeline, rule: &mut Rule<'_>) -> Received {
        let words = commands(&pipeline.bytes);
        assert_eq!(words.len(), pipeline.replies, "{words:?}");
        let replies = (words.iter())
            .map(|command| {
                self.sent.push(command.clone());
                standalone(command).unwrap_or_else(|| rule(command))
            })
            .collect();
        Received {
            replies,
            lost: None,
        }
    }
}

/// A config for a fake server.
pub(super) fn config() -> FleetConfig {
    FleetConfig::new("redis://127.0.0.1:7/")
        .prefix("t")
        .shards(2)
        .timeout(Duration::from_millis(100))
        .retry_for(Duration::from_millis(500))
        .lease(Duration::from_secs(3))
}

/// The name of the fleet script a command runs, by its keys.
pub(super) fn script(command: &[String]) -> &'static str {
    let key = |part: &str| command.iter().any(|word| word.contains(part));
    match command[0].as_str() {
        "EVALSHA" if key(":mark:") => "mark",
        "EVALSHA" if key(":config:") => "settings",
        "EVALSHA" if key(":seen:") => "offer",
        "EVALSHA" if key(":clients:") && command.len() == 8 => "state",
        "EVALSHA" if key(":clients:") => "census",
        "EVALSHA" if key(":inflight:") && command.len() == 9 => "take",
        "EVALSHA" if key(":inflight:") && command.len() == 6 => "pending",
        "EVALSHA" if key(":inflight:") => "release",
        "EVALSHA" if key(":leases:") => "renew",
        "EVALSHA" if key(":mark:") => "mark",
        _ => "other",
    }
}

/// What a fake server answers to the writes and waits a durable
/// pipeline ends with (`None` for other commands).
pub(super) fn waits(command: &[String]) -> Option<Value> {
    match (command[0].as_str(), script(command)) {
        ("WAIT", _) => Some(Value::Int(1)),
        ("WAITAOF", _) => Some(Value::Array(vec![Value::Int(1), Value::Int(0)])),
        (_, "mark") => Some(Value::Int(1)),
        _ => None,
    }
}

/// A connected frontier on a fake server.
pub(super) fn frontier(config: &FleetConfig, fake: &mut Fake) -> (Arc<FrontierCore>, Wire) {
    let (client, mut wire) = Client::new(config, 7).expect("a valid config");
    let core = Arc::new(FrontierCore::new(client));
    let settled = fake.drive(core.connect(&mut wire), &mut |command| {
        if let Some(reply) = waits(command) {
            return reply;
        }
        assert_eq!(script(command), "settings", "{command:?}");
        Value::Array(Vec::new())
    });
    settled.expect("connects");
    (core, wire)
}

#[test]
fn a_connect_maps_the_node_then_checks_the_settings() {
    let mut fake = Fake::new();
    frontier(&config(), &mut fake);
    let names: Vec<&str> = fake
        .sent
        .iter()
        .map(|command| command[0].as_str())
        .collect();
    assert_eq!(&names[..2], ["INFO", "CLUSTER"], "{:?}", fake.sent);
    assert_eq!(names.last(), Some(&"EVALSHA"));
}

#[test]
fn a_failed_call_pauses_between_tries_on_the_clock_it_is_given() {
    let mut fake = Fake::new();
    let (core, mut wire) = frontier(&config(), &mut fake);
    let started = fake.now;
    let mut tries = 0;
    let busy = |_: &[String]| -> Value {
        Value::ServerError(match redis::parse_redis_value(b"-LOADING loading\r\n") {
            Ok(Value::ServerError(error)) => error,
            other => panic!("{other:?}"),
        })
    };
    let mut rule = |command: &[String]| {
        tries += 1;
        busy(command)
    };
    let finished = fake.drive(core.is_finished(&mut wire), &mut rule);
    assert!(finished.is_err());
    // Tries until retry_for (500 ms) runs out, pausing in between: the
    // clock moved by the pauses alone.
    let waited = fake.now - started;
    assert!(tries > 2, "{tries} tries");
    assert!(
        waited >= Duration::from_millis(200) && waited <= Duration::from_millis(500),
        "{waited:?}"
    );
}

#[test]
fn the_heartbeat_beats_every_third_of_a_lease_and_sooner_after_a_failure() {
    let config = config();
    let start = Instant::now();
    let mut clock = Heartbeat::new(&config, start);
    assert_eq!(clock.next(), start + Duration::from_secs(1));
    clock.started(start + Duration::from_secs(1));
    assert_eq!(clock.next(), start + Duration::from_secs(2));
    clock.failed(start + Duration::from_millis(1200));
    assert_eq!(clock.next(), start + Duration::from_millis(1300));
    // A beat that starts late starts the next one from now.
    clock.started(start + Duration::from_secs(5));
    assert_eq!(clock.next(), start + Duration::from_secs(5));
}

/// Issue 37: a `WAIT` (or `WAITAOF`) covers only the last write made on
/// its own connection, and a command sent again after a lost reply may
/// write nothing; every pipeline that waits makes a write of its own
/// first, in the slot of its first command.
#[test]
fn every_pipeline_that_waits_writes_before_it_waits() {
    for config in [
        config().wait_for_replicas(1, Duration::from_millis(50)),
        config().wait_for_aof(Duration::from_millis(50)),
    ] {
        let mut fake = Fake::new();
        let (core, mut wire) = frontier(&config, &mut fake);
        let mut rule = |command: &[String]| match (waits(command), script(command)) {
            (Some(reply), _) => reply,
            (None, "state") => Value::Int(1),
            (None, "offer") => Value::BulkString(b"1".to_vec()),
            (None, _) if command[0] == "UNLINK" => Value::Int(1),
            (None, other) => panic!("{other}: {command:?}"),
        };
        let pushed = core.push("https://example.com/".into(), fake.now);
        let super::frontier::Push::Slow(left) = pushed else {
            panic!("a push before the client is marked busy goes through the wire");
        };
        assert_eq!(
            fake.drive(core.push_slow(&mut wire, left), &mut rule),
            Ok(true)
        );
        fake.drive(core.flush(&mut wire), &mut rule)
            .expect("flushed");
        let sent = &fake.sent;
        let waited: Vec<usize> = (0..sent.len())
            .filter(|&at| sent[at][0].starts_with("WAIT"))
            .collect();
        assert!(waited.len() >= 3, "{sent:?}");
        for at in waited {
            assert_eq!(
                script(&sent[at - 1]),
                "mark",
                "before {:?}: {:?}",
                sent[at],
                sent[at - 1]
            );
        }
    }
}

/// Issue 37: a client whose busy mark could not be renewed (its heartbeat
/// cut off from the node of the fleet's keys) must stop taking work: a
/// check of the fleet by others rests on the busy marks, and one that
/// lapsed let them read the shards' counts at different instants while
/// this client moved work between them. Before, only an explicit "lapsed"
/// answer stopped it; a renewal that failed did not.
#[test]
fn a_client_whose_busy_mark_may_have_lapsed_takes_no_work() {
    let config = config();
    let mut fake = Fake::new();
    let (core, mut wire) = frontier(&config, &mut fake);
    let mut answer = |command: &[String]| match script(command) {
        "state" => Value::Int(1),
        "offer" => Value::BulkString(b"1".to_vec()),
        _ => Value::Int(1),
    };
    let super::frontier::Push::Slow(left) = core.push("https://example.com/".into(), fake.now)
    else {
        panic!("the first push marks the client busy");
    };
    assert_eq!(
        fake.drive(core.push_slow(&mut wire, left), &mut answer),
        Ok(true)
    );
    fake.drive(core.flush(&mut wire), &mut answer)
        .expect("flushed");
    // No heartbeat for longer than a lease: the mark may have lapsed.
    fake.now += config.lease + Duration::from_secs(1);
    let sent_before = fake.sent.len();
    let unreachable = |command: &[String]| -> Value {
        assert_ne!(script(command), "take", "took work with a lapsed busy mark");
        Value::ServerError(match redis::parse_redis_value(b"-LOADING loading\r\n") {
            Ok(Value::ServerError(error)) => error,
            other => panic!("{other:?}"),
        })
    };
    let popped = fake.drive(core.pop(&mut wire), &mut { unreachable });
    assert!(popped.is_err(), "{popped:?}");
    let scripts: Vec<&str> = fake.sent[sent_before..].iter().map(|c| script(c)).collect();
    assert!(scripts.contains(&"state"), "{scripts:?}");
}
