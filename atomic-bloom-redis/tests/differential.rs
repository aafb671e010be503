//! This module against RedisBloom itself, command for command: seeded
//! streams of `BF.*` commands (`tests/bf_stream/`) go to a Valkey with this
//! module and a Valkey with RedisBloom's `.so`, in the same run, and every
//! reply is compared.
//!
//! ```text
//! REDISBLOOM_SO=/path/to/redisbloom.so cargo test -p atomic-bloom-redis --test differential
//! ```
//!
//! Without `REDISBLOOM_SO` the test says so and passes (RedisBloom's
//! licence keeps it out of this repository; `../shared/tools/
//! build-redisbloom.sh` builds it). `DIFF_SEEDS` (default 20) and
//! `DIFF_COMMANDS` (default 10,000) size the run; a failure prints its
//! seed, the command's index and the command, and `DIFF_FIRST_SEED=n
//! DIFF_SEEDS=1` replays it.
//!
//! Compared exactly, but for [`BY_DESIGN`]: this module's filters are
//! atomic-bloom's, so their bits differ, and with them:
//! * false positives: an item never added may answer 1 on one server and 0
//!   on the other. Where answers differ on such an item, the step counts a
//!   false positive; if it was an add, the two filters now hold different
//!   items, so the key is deleted on both and the stream goes on. Answers
//!   that differ on an item both servers added are a failure (a false
//!   negative).
//! * `BF.INFO`'s `Size` (bytes) and the bytes of `BF.SCANDUMP` chunks.
//!
//! RedisBloom's own filters loaded into this module (a RedisBloom dump,
//! copied through `BF.SCANDUMP` / `BF.LOADCHUNK` into both servers) are
//! compared with no exception at all, false positives included.

mod bf_stream;
mod common;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use bf_stream::{Generator, Step, COPIES, KEYS, STRING};
use common::{Kind, Server};
use redis::Value;

/// What differs by design, and why.
const BY_DESIGN: [(&str, &str); 3] = [
    (
        "BF.INFO Size",
        "bytes: this module's filters are atomic-bloom's (under RedisBloom's at 1% and 0.1%)",
    ),
    (
        "BF.INFO Capacity and Number of filters of a scaling filter",
        "its stages grow when their bits reach the stage's rate (a stage is whole 64-byte \
         blocks, so it often holds more items than a RedisBloom link of the same capacity), \
         not at an item count; NONSCALING filters are full at the capacity asked, as \
         RedisBloom's",
    ),
    (
        "answers on items never added",
        "false positives land on other items: a key whose adds diverged is deleted on both",
    ),
];

fn send(c: &mut redis::Connection, command: &[String]) -> Value {
    let mut cmd = redis::cmd(&command[0]);
    for arg in &command[1..] {
        cmd.arg(arg.as_str());
    }
    match redis::ConnectionLike::req_command(c, &cmd) {
        Ok(value) => value,
        Err(error) => Value::SimpleString(format!("client error: {}", common::error_text(&error))),
    }
}

/// A reply with what differs by design blanked: `Size` in `BF.INFO`.
fn normalized(command: &[String], reply: Value) -> Value {
    if !command[0].eq_ignore_ascii_case("BF.INFO") {
        return reply;
    }
    match reply {
        Value::Array(mut fields) if command.len() == 2 && fields.len() >= 4 => {
            fields[3] = Value::Nil;
            Value::Array(fields)
        }
        Value::Array(_) if command.len() == 3 && command[2].eq_ignore_ascii_case("size") => {
            Value::Nil
        }
        Value::Int(_) if command.len() == 3 && command[2].eq_ignore_ascii_case("size") => {
            Value::Nil
        }
        other => other,
    }
}

/// The items of an add or lookup command, and where they start.
fn item_args(command: &[String]) -> Option<&[String]> {
    let name = command[0].to_ascii_uppercase();
    match name.as_str() {
        "BF.ADD" | "BF.EXISTS" if command.len() == 3 => Some(&command[2..]),
        "BF.MADD" | "BF.MEXISTS" if command.len() >= 3 => Some(&command[2..]),
        "BF.INSERT" => command
            .iter()
            .position(|arg| arg.eq_ignore_ascii_case("ITEMS"))
            .map(|at| &command[at + 1..]),
        _ => None,
    }
}

fn answers(reply: &Value) -> Vec<Option<i64>> {
    match reply {
        Value::Int(n) => vec![Some(*n)],
        Value::Boolean(b) => vec![Some(i64::from(*b))],
        Value::Array(values) => values
            .iter()
            .map(|value| match value {
                Value::Int(n) => Some(*n),
                Value::Boolean(b) => Some(i64::from(*b)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Copies `from` into `to` on one server, through its own dump.
fn copy(c: &mut redis::Connection, from: &str, to: &str) -> Vec<Value> {
    let mut replies = vec![redis::cmd("DEL").arg(to).query::<Value>(c).unwrap()];
    for (next, chunk) in dump(c, from, &mut replies) {
        replies.push(load_chunk(c, to, next, &chunk));
    }
    replies
}

/// `BF.LOADCHUNK key next chunk`'s reply.
fn load_chunk(c: &mut redis::Connection, key: &str, next: i64, chunk: &[u8]) -> Value {
    redis::cmd("BF.LOADCHUNK")
        .arg(key)
        .arg(next)
        .arg(chunk)
        .query::<Value>(c)
        .unwrap_or_else(|error| Value::SimpleString(common::error_text(&error)))
}

/// The `BF.SCANDUMP` stream of `key` as `(iterator to load at, chunk)`;
/// an error goes to `replies`.
fn dump(c: &mut redis::Connection, key: &str, replies: &mut Vec<Value>) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut iterator = 0i64;
    loop {
        let reply: Value = match redis::cmd("BF.SCANDUMP").arg(key).arg(iterator).query(c) {
            Ok(reply) => reply,
            Err(error) => {
                replies.push(Value::SimpleString(common::error_text(&error)));
                return chunks;
            }
        };
        let Value::Array(parts) = reply else {
            panic!("SCANDUMP replied {reply:?}")
        };
        let next = match &parts[0] {
            Value::Int(next) => *next,
            other => panic!("SCANDUMP iterator {other:?}"),
        };
        if next == 0 {
            return chunks;
        }
        let chunk = match &parts[1] {
            Value::BulkString(bytes) => bytes.clone(),
            other => panic!("SCANDUMP chunk {other:?}"),
        };
        // RedisBloom's client loop: the header (iterator 0's reply) goes
        // to iterator 1; this module's first chunk carries its own.
        let at = if iterator == 0 && next == 1 { 1 } else { next };
        chunks.push((at, chunk));
        iterator = next;
    }
}

/// Whether a reply is an array (a multi-item command's) or a single value.
fn mine_is_array(reply: &Value) -> bool {
    matches!(reply, Value::Array(_))
}

/// Whether this module's filter under `key` scales.
fn is_scaling(c: &mut redis::Connection, key: &str) -> bool {
    let expansion: Value = redis::cmd("BF.INFO")
        .arg(&[key, "EXPANSION"])
        .query(c)
        .unwrap_or(Value::Nil);
    !matches!(&expansion, Value::Array(values) if values.first() == Some(&Value::Nil))
        && !matches!(expansion, Value::Nil)
}

/// `BF.INFO` replies equal but for a scaling filter's capacity and stage
/// count.
fn same_but_stages(command: &[String], mine: &Value, other: &Value) -> bool {
    match (command.len(), mine, other) {
        (2, Value::Array(a), Value::Array(b)) if a.len() == 10 && b.len() == 10 => {
            let blank = |fields: &[Value]| {
                let mut fields = fields.to_vec();
                fields[1] = Value::Nil;
                fields[5] = Value::Nil;
                fields
            };
            blank(a) == blank(b)
        }
        (3, Value::Array(a), Value::Array(b)) => {
            let field = command[2].to_ascii_lowercase();
            (field == "capacity" || field == "filters")
                && a.len() == 1
                && b.len() == 1
                && matches!((&a[0], &b[0]), (Value::Int(_), Value::Int(_)))
        }
        _ => false,
    }
}

#[derive(Default)]
struct Tally {
    commands: u64,
    /// Commands on a RedisBloom filter held by both servers.
    exact_commands: u64,
    false_positives: u64,
    keys_dropped: u64,
}

/// Runs one seed; the first mismatch is returned with its step.
fn run_seed(
    ours: &mut redis::Connection,
    theirs: &mut redis::Connection,
    seed: u64,
    steps: usize,
    tally: &mut Tally,
) -> Result<(), String> {
    for c in [&mut *ours, &mut *theirs] {
        let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
        let _: () = redis::cmd("SET")
            .arg(&[STRING, "a string"])
            .query(c)
            .unwrap();
    }
    // Items each key holds on both servers.
    let mut added: HashMap<String, HashSet<String>> = HashMap::new();
    // Keys holding the same RedisBloom filter on both servers: compared
    // with no exception.
    let mut exact: HashSet<String> = HashSet::new();
    let mut generator = Generator::new(seed);
    for index in 0..steps {
        let step = generator.next_step();
        tally.commands += 1;
        let command = match &step {
            Step::Copy { from, to } => {
                let a = copy(ours, from, to);
                let b = copy(theirs, from, to);
                let same_shape = a.len() == b.len() || a.len() <= 2 || b.len() <= 2;
                if !same_shape
                    && a.iter()
                        .chain(&b)
                        .any(|r| matches!(r, Value::SimpleString(s) if s.starts_with("ERR")))
                {
                    return Err(format!(
                        "seed {seed} step {index} {step:?}: ours {a:?}, RedisBloom {b:?}"
                    ));
                }
                let held = added.get(from).cloned();
                match held {
                    Some(items) => added.insert(to.clone(), items),
                    None => added.remove(to),
                };
                if exact.contains(from) {
                    exact.insert(to.clone());
                } else {
                    exact.remove(to);
                }
                continue;
            }
            Step::Adopt { from, to } => {
                let mut replies = Vec::new();
                let chunks = dump(theirs, from, &mut replies);
                for c in [&mut *ours, &mut *theirs] {
                    let _: () = redis::cmd("DEL").arg(to).query(c).unwrap();
                    for (next, chunk) in &chunks {
                        let reply = load_chunk(c, to, *next, chunk);
                        if reply != Value::Okay {
                            return Err(format!(
                                "seed {seed} step {index} {step:?}: LOADCHUNK {next} replied {reply:?}"
                            ));
                        }
                    }
                }
                added.remove(to);
                if chunks.is_empty() {
                    exact.remove(to);
                } else {
                    exact.insert(to.clone());
                }
                continue;
            }
            Step::Command(command) => command,
        };
        let key = command.get(1).cloned().unwrap_or_default();
        let (mine, other) = (send(ours, command), send(theirs, command));
        // A RedisBloom filter on both sides: every byte counts alike.
        let (mine, other) = if exact.contains(&key) {
            tally.exact_commands += 1;
            (mine, other)
        } else {
            (normalized(command, mine), normalized(command, other))
        };
        let name = command[0].to_ascii_uppercase();
        if mine == other {
            if let Some(items) = item_args(command) {
                let is_add = matches!(name.as_str(), "BF.ADD" | "BF.MADD" | "BF.INSERT");
                if is_add {
                    for (item, answer) in items.iter().zip(answers(&mine)) {
                        if answer == Some(1) {
                            added.entry(key.clone()).or_default().insert(item.clone());
                        }
                    }
                }
            }
            match name.as_str() {
                "DEL" => {
                    added.remove(&key);
                    exact.remove(&key);
                }
                "BF.RESERVE" if matches!(mine, Value::Okay) => {
                    added.insert(key.clone(), HashSet::new());
                    exact.remove(&key);
                }
                _ => {}
            }
            continue;
        }
        if exact.contains(&key) {
            return Err(format!(
                "seed {seed} step {index} {command:?} on a RedisBloom filter: ours {mine:?}, \
                 RedisBloom {other:?}"
            ));
        }
        // Replies differ: a scaling filter's stages, or false positives.
        if name == "BF.INFO" && is_scaling(ours, &key) && same_but_stages(command, &mine, &other) {
            continue;
        }
        let Some(items) = item_args(command) else {
            return Err(format!(
                "seed {seed} step {index} {command:?}: ours {mine:?}, RedisBloom {other:?}"
            ));
        };
        let (a, b) = (answers(&mine), answers(&other));
        let held = added.get(&key).cloned().unwrap_or_default();
        let is_add = matches!(name.as_str(), "BF.ADD" | "BF.MADD" | "BF.INSERT");
        let explained = if is_add {
            // The first answer that differs is a false positive on one
            // side (0: "present") for an item never added; the other side
            // added it (1) or found the filter full (an error). After it
            // the filters differ, and so may everything else.
            let first = (0..a.len().max(b.len())).find(|&at| a.get(at) != b.get(at));
            first.is_some_and(|at| {
                let (x, y) = (a.get(at).copied().flatten(), b.get(at).copied().flatten());
                items.get(at).is_some_and(|item| !held.contains(item))
                    && (x == Some(0) || y == Some(0))
                    && (mine_is_array(&mine) == mine_is_array(&other))
            })
        } else {
            a.len() == b.len()
                && a.len() == items.len()
                && items.iter().zip(a.iter().zip(&b)).all(|(item, (x, y))| {
                    x == y || (!held.contains(item) && x.is_some() && y.is_some())
                })
        };
        if !explained {
            return Err(format!(
                "seed {seed} step {index} {command:?}: ours {mine:?}, RedisBloom {other:?} \
                 (items both added: {:?})",
                items
                    .iter()
                    .filter(|i| held.contains(*i))
                    .collect::<Vec<_>>()
            ));
        }
        tally.false_positives += 1;
        if is_add {
            // The filters now hold different items: start the key again.
            for c in [&mut *ours, &mut *theirs] {
                let _: () = redis::cmd("DEL").arg(&key).query(c).unwrap();
            }
            added.remove(&key);
            tally.keys_dropped += 1;
        }
    }
    Ok(())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[test]
fn every_reply_matches_redisbloom_on_seeded_streams() {
    let Some(redisbloom) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        eprintln!(
            "differential: skipped: set REDISBLOOM_SO to RedisBloom's module \
             (../shared/tools/build-redisbloom.sh builds it)"
        );
        return;
    };
    let first = env_number("DIFF_FIRST_SEED", 1);
    let seeds = env_number("DIFF_SEEDS", 20);
    let steps = env_number("DIFF_COMMANDS", 10_000) as usize;
    let ours_server = Server::start(Kind::Valkey, &[], &[]);
    let theirs_server = Server::start_with_other_module(Kind::Valkey, &redisbloom);
    let mut ours = ours_server.connect();
    let mut theirs = theirs_server.connect();
    let mut tally = Tally::default();
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    for seed in first..first + seeds {
        if let Err(failure) = run_seed(&mut ours, &mut theirs, seed, steps, &mut tally) {
            failures.push(failure);
        }
    }
    eprintln!(
        "differential: {} seeds, {} commands ({} on RedisBloom filters held by both) in \
         {:.1} s; {} replies differed by false positives ({} keys restarted); differences by \
         design: {:?}",
        seeds,
        tally.commands,
        tally.exact_commands,
        started.elapsed().as_secs_f64(),
        tally.false_positives,
        tally.keys_dropped,
        BY_DESIGN.map(|(what, _)| what)
    );
    assert!(
        failures.is_empty(),
        "{} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let _ = (KEYS, COPIES);
}
