//! Replicas, reloads and restarts answer alike: after each seeded `BF.*`
//! stream (`tests/bf_stream/`) sent to a primary with a memory limit and a
//! capped error rate in its config, every key answers identically
//! (`BF.INFO`, and `BF.MEXISTS` over every item the stream used and 10,000
//! absent probes) on the primary, on its replica, after `DEBUG RELOAD`,
//! and after an AOF rewrite and a restart from the AOF, on Valkey 9.1 and
//! Redis 7.0. Streams refused in part (the memory limit, full filters,
//! the capped rate) are what would split a replica from its primary if a
//! command travelled as the client sent it.

mod bf_stream;
mod common;

use bf_stream::{Generator, Step, ADOPTED, COPIES, KEYS, STRING};
use common::{replica_caught_up, Server, KINDS};
use redis::Value;

const SEEDS: u64 = 3;
const STEPS: usize = 3_000;
const ABSENT: usize = 10_000;

/// What every key answers: its `BF.INFO` (or the error), and its answers
/// for every item of the stream and `ABSENT` probes.
fn snapshot(c: &mut redis::Connection, fresh: u64) -> Vec<(String, Value, Vec<u8>)> {
    let mut probes: Vec<String> = (0..400).map(|i| format!("item:{i}")).collect();
    probes.extend((1..=fresh).map(|i| format!("fresh:{i}")));
    probes.extend((0..3000).map(|i| format!("fresh:{}", 1_000_000 + i)));
    probes.extend((0..ABSENT).map(|i| format!("absent:{i}")));
    let mut keys: Vec<&str> = KEYS.to_vec();
    keys.extend(COPIES);
    keys.extend(ADOPTED);
    keys.push(STRING);
    keys.into_iter()
        .map(|key| {
            let info = redis::cmd("BF.INFO")
                .arg(key)
                .query::<Value>(c)
                .unwrap_or_else(|error| Value::SimpleString(common::error_text(&error)));
            let mut answers = Vec::with_capacity(probes.len());
            for batch in probes.chunks(1000) {
                match redis::cmd("BF.MEXISTS")
                    .arg(key)
                    .arg(batch)
                    .query::<Vec<u8>>(c)
                {
                    Ok(found) => answers.extend(found),
                    Err(_) => break,
                }
            }
            (key.to_string(), info, answers)
        })
        .collect()
}

/// Sends `command`; whether the memory limit refused any of it.
fn send(c: &mut redis::Connection, command: &[String]) -> bool {
    let mut cmd = redis::cmd(&command[0]);
    for arg in &command[1..] {
        cmd.arg(arg.as_str());
    }
    let over = |text: &str| text.contains("bf-memory-limit-per-filter");
    match redis::ConnectionLike::req_command(c, &cmd) {
        Ok(Value::Array(values)) => values
            .iter()
            .any(|value| matches!(value, Value::ServerError(e) if e.details().is_some_and(over))),
        Ok(_) => false,
        Err(error) => over(&common::error_text(&error)),
    }
}

/// `from` copied into `to` through `BF.SCANDUMP` / `BF.LOADCHUNK`.
fn copy(c: &mut redis::Connection, from: &str, to: &str) {
    let _: () = redis::cmd("DEL").arg(to).query(c).unwrap();
    let mut iterator = 0i64;
    loop {
        let Ok((next, chunk)) = redis::cmd("BF.SCANDUMP")
            .arg(from)
            .arg(iterator)
            .query::<(i64, Vec<u8>)>(c)
        else {
            return;
        };
        if next == 0 {
            return;
        }
        let _ = redis::cmd("BF.LOADCHUNK")
            .arg(to)
            .arg(next)
            .arg(chunk)
            .query::<()>(c);
        iterator = next;
    }
}

fn wait_for_aof_rewrite(c: &mut redis::Connection) {
    for _ in 0..800 {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        let busy =
            info.contains("aof_rewrite_in_progress:1") || info.contains("aof_rewrite_scheduled:1");
        if !busy {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the AOF rewrite never finished");
}

#[test]
fn a_replica_a_reload_and_an_aof_restart_answer_as_the_primary() {
    for kind in KINDS {
        let mut refused = 0;
        for seed in 1..=SEEDS {
            let mut primary = Server::start(kind, &[], &["--appendonly", "yes"]);
            let replica = Server::start(kind, &[], &[]);
            let (mut p, mut r) = (primary.connect(), replica.connect());
            let _: String = redis::cmd("REPLICAOF")
                .arg(&["127.0.0.1", &primary.port.to_string()])
                .query(&mut r)
                .unwrap();
            for (config, value) in [
                ("bf.bf-memory-limit-per-filter", "1000"),
                ("bf.bf-error-rate", "0.4"),
                ("bf.bf-initial-size", "50"),
            ] {
                let _: () = redis::cmd("CONFIG")
                    .arg(&["SET", config, value])
                    .query(&mut p)
                    .unwrap();
            }
            let _: () = redis::cmd("SET")
                .arg(&[STRING, "text"])
                .query(&mut p)
                .unwrap();
            let mut generator = Generator::new(seed);
            for _ in 0..STEPS {
                match generator.next_step() {
                    Step::Command(command) => refused += usize::from(send(&mut p, &command)),
                    Step::Copy { from, to } | Step::Adopt { from, to } => copy(&mut p, &from, &to),
                }
            }
            // Multi-adds that cross the limit part way: the primary takes
            // the items before it and refuses the rest.
            for key in &KEYS[..3] {
                let mut command = vec!["BF.MADD".to_string(), key.to_string()];
                command.extend((0..3000).map(|i| format!("fresh:{}", 1_000_000 + i)));
                refused += usize::from(send(&mut p, &command));
            }
            let fresh = generator.fresh();
            let expected = snapshot(&mut p, fresh);
            let context = format!("{kind:?} seed {seed}");
            assert!(replica_caught_up(&mut p, &mut r), "{context}: no sync");
            let differing = |got: &[(String, Value, Vec<u8>)]| -> Vec<String> {
                expected
                    .iter()
                    .zip(got)
                    .filter(|(a, b)| a != b)
                    .map(|(a, b)| format!("{}: {:?} vs {:?}", a.0, a.1, b.1))
                    .collect()
            };
            let on_replica = snapshot(&mut r, fresh);
            assert_eq!(
                differing(&on_replica),
                Vec::<String>::new(),
                "{context}: replica"
            );
            let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut p).unwrap();
            let reloaded = snapshot(&mut p, fresh);
            assert_eq!(
                differing(&reloaded),
                Vec::<String>::new(),
                "{context}: DEBUG RELOAD"
            );
            let _: Value = redis::cmd("BGREWRITEAOF").query(&mut p).unwrap();
            wait_for_aof_rewrite(&mut p);
            primary.stop(false);
            primary.launch().expect("the primary restarts from its AOF");
            let mut p = primary.connect();
            let restarted = snapshot(&mut p, fresh);
            assert_eq!(
                differing(&restarted),
                Vec::<String>::new(),
                "{context}: AOF restart"
            );
            // Something to compare: the limit and the rate shaped the data.
            let filters = expected
                .iter()
                .filter(|(_, info, _)| matches!(info, Value::Array(_)))
                .count();
            assert!(filters >= 3, "{context}: only {filters} filters at the end");
        }
        // The limit refused commands in part or whole: what a replica must
        // not apply.
        assert!(
            refused >= 5,
            "{kind:?}: the limit refused only {refused} commands"
        );
    }
}
