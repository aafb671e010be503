//! Switching from RedisBloom with its AOF: an AOF that RedisBloom itself
//! wrote (an RDB preamble, then the commands after it) replays in a server
//! with this module, and every key is there and answers as RedisBloom's
//! did, the keys that a bare `BF.ADD`, `BF.MADD` or `BF.INSERT` created
//! after the preamble with RedisBloom's defaults (or the options they
//! name) among them. A replay that cannot build a key the AOF reserved
//! holds no filter there, never one of defaults: the adds that follow for
//! it are refused. (`tests/fixtures/redisbloom_aof/`, written by
//! `bench/redisbloom_aof_fixture.py REDISBLOOM.so`; Valkey only, whose RDB
//! preamble it is.)

mod common;

use std::path::PathBuf;

use common::{Kind, Server};
use serde_json::Value as Json;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom_aof")
}

fn recorded() -> Json {
    let text = std::fs::read_to_string(fixtures().join("answers.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A Valkey server (not started) whose directory holds RedisBloom's AOF.
fn with_redisbloom_aof() -> Server {
    let server = Server::unlaunched(Kind::Valkey, &[], &["--appendonly", "yes"]);
    let to = server.dir.join("appendonlydir");
    std::fs::create_dir_all(&to).unwrap();
    for file in std::fs::read_dir(fixtures().join("appendonlydir")).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), to.join(file.file_name())).unwrap();
    }
    server
}

const PROBES: usize = 20_000;

/// Which probes the filter calls present, as indices.
fn positives(c: &mut redis::Connection, key: &str) -> Vec<u64> {
    let mut found = Vec::new();
    for start in (0..PROBES).step_by(2000) {
        let probes: Vec<String> = (start..start + 2000)
            .map(|i| format!("probe:{i}"))
            .collect();
        let answers: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg(key)
            .arg(&probes)
            .query(c)
            .unwrap();
        found.extend(
            answers
                .into_iter()
                .enumerate()
                .filter(|(_, present)| *present)
                .map(|(index, _)| (start + index) as u64),
        );
    }
    found
}

/// `BF.INFO` as a list of strings, numbers and nulls, as the fixture holds
/// it.
fn info(c: &mut redis::Connection, key: &str) -> Json {
    let reply: Vec<redis::Value> = redis::cmd("BF.INFO").arg(key).query(c).unwrap();
    Json::Array(
        reply
            .into_iter()
            .map(|value| match value {
                redis::Value::SimpleString(text) => Json::from(text),
                redis::Value::BulkString(bytes) => Json::from(String::from_utf8(bytes).unwrap()),
                redis::Value::Int(number) => Json::from(number),
                _ => Json::Null,
            })
            .collect(),
    )
}

/// Everything RedisBloom recorded about `key`, checked.
fn answers_as_redisbloom(c: &mut redis::Connection, key: &str, record: &Json) {
    let kind: String = redis::cmd("TYPE").arg(key).query(c).unwrap();
    assert_eq!(kind, record["type"].as_str().unwrap(), "{key}: TYPE");
    assert_eq!(info(c, key), record["info"], "{key}: BF.INFO");
    let card: i64 = redis::cmd("BF.CARD").arg(key).query(c).unwrap();
    assert_eq!(card, record["card"].as_i64().unwrap(), "{key}: BF.CARD");
    let sent = record["items"].as_u64().unwrap();
    let items: Vec<String> = (0..sent).map(|i| format!("{key}:item:{i}")).collect();
    let found: Vec<bool> = redis::cmd("BF.MEXISTS")
        .arg(key)
        .arg(&items)
        .query(c)
        .unwrap();
    assert!(
        found.iter().all(|found| *found),
        "{key}: an item is missing"
    );
    let expected: Vec<u64> = record["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|index| index.as_u64().unwrap())
        .collect();
    assert_eq!(positives(c, key), expected, "{key}: absent probes");
    if key != "huge" {
        let dumped: Vec<u8> = redis::cmd("DUMP").arg(key).query(c).unwrap();
        let theirs = std::fs::read(fixtures().join(format!("{key}.dump"))).unwrap();
        assert!(dumped == theirs, "{key}: DUMP differs from RedisBloom's");
    }
}

#[test]
fn a_redisbloom_aof_replays_with_every_key_it_created() {
    let record = recorded();
    let mut server = with_redisbloom_aof();
    server
        .launch()
        .expect("the server starts from RedisBloom's AOF");
    let mut c = server.connect();
    let keys = record["keys"].as_object().unwrap();
    for (key, recorded) in keys {
        let exists: i64 = redis::cmd("EXISTS").arg(key).query(&mut c).unwrap();
        assert_eq!(exists, 1, "{key}: missing after the replay");
        answers_as_redisbloom(&mut c, key, recorded);
    }
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size as usize, keys.len());
    // They go on as RedisBloom's: saved in its format, they come back
    // (but the 4.5 GB `huge`, not worth the write).
    let _: i64 = redis::cmd("DEL").arg("huge").query(&mut c).unwrap();
    let _: String = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
    for (key, recorded) in keys.iter().filter(|(key, _)| *key != "huge") {
        answers_as_redisbloom(&mut c, key, recorded);
    }
}

/// The same AOF, replayed in a 3 GiB address space: the 4.5 GB `huge` that
/// RedisBloom reserved cannot be built, so the replay holds no filter
/// under it (and says so in its log); the adds that followed for it are
/// refused, never applied to a filter of defaults. Every other key is as
/// RedisBloom had it.
#[test]
fn a_redisbloom_aof_replay_short_of_memory_holds_no_filter_where_it_refused_one() {
    let record = recorded();
    let mut server = with_redisbloom_aof();
    server.set_address_space(3 << 30);
    server
        .launch()
        .expect("the server starts from RedisBloom's AOF");
    let mut c = server.connect();
    let exists: i64 = redis::cmd("EXISTS").arg("huge").query(&mut c).unwrap();
    assert_eq!(exists, 0, "the replay made a huge of its own");
    let log = server.log();
    assert!(
        log.contains("BF.RESERVE 'huge'") && log.contains("BF.ADD 'huge'"),
        "the log does not say why there is no huge:\n{log}"
    );
    for (key, recorded) in record["keys"].as_object().unwrap() {
        if key != "huge" {
            answers_as_redisbloom(&mut c, key, recorded);
        }
    }
}

/// A command as an AOF holds it.
fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend(b"\r\n");
    }
    out
}

/// A reserve no 3 GiB address space can build (4.5 GB, allocated lazily
/// where it fits), without a `SEED`: RedisBloom's.
fn too_big(key: &[u8]) -> Vec<u8> {
    resp(&[b"BF.RESERVE", key, b"0.0000001", b"1000000000"])
}

/// A server of `kind` in a 3 GiB address space that starts by replaying
/// `commands` as its (single-file) AOF.
fn replaying_short(kind: Kind, commands: &[Vec<u8>]) -> Server {
    let mut server = Server::unlaunched(kind, &[], &["--appendonly", "yes"]);
    server.set_address_space(3 << 30);
    std::fs::write(server.dir.join("appendonly.aof"), commands.concat()).unwrap();
    server.launch().expect("the server starts from the AOF");
    server
}

fn exists(c: &mut redis::Connection, db: i64, key: &[u8]) -> bool {
    let _: () = redis::cmd("SELECT").arg(db).query(c).unwrap();
    redis::cmd("EXISTS").arg(key).query::<i64>(c).unwrap() == 1
}

/// Where a RedisBloom stream's reserve was refused, its bare adds for that
/// key are refused too, in that database only; the other bare adds
/// create their keys as RedisBloom did. `SWAPDB` moves the refusal with
/// its database, `FLUSHDB` forgets it.
#[test]
fn a_refused_reserve_blocks_the_bare_adds_to_its_key_in_its_database() {
    for kind in common::KINDS {
        let commands = [
            resp(&[b"SELECT", b"0"]),
            resp(&[b"BF.ADD", b"before", b"a"]),
            too_big(b"big"),
            resp(&[b"BF.ADD", b"big", b"a"]),
            resp(&[b"BF.MADD", b"big", b"b", b"c"]),
            resp(&[b"BF.INSERT", b"big", b"CAPACITY", b"10", b"ITEMS", b"d"]),
            resp(&[b"BF.ADD", b"after", b"a"]),
            // The refusal moves to database 1 with `big`'s database.
            resp(&[b"SWAPDB", b"0", b"1"]),
            resp(&[b"BF.ADD", b"big", b"a"]),
            resp(&[b"SELECT", b"1"]),
            resp(&[b"BF.ADD", b"big", b"a"]),
            // A flushed database forgets its refusals.
            resp(&[b"SELECT", b"2"]),
            too_big(b"flushed"),
            resp(&[b"FLUSHDB"]),
            resp(&[b"BF.ADD", b"flushed", b"a"]),
        ];
        let server = replaying_short(kind, &commands);
        let mut c = server.connect();
        for (db, key, expected) in [
            (1, &b"before"[..], true),
            (1, b"after", true),
            (1, b"big", false),
            (0, b"big", true),
            (2, b"flushed", true),
        ] {
            assert_eq!(
                exists(&mut c, db, key),
                expected,
                "{kind:?}: {} in database {db}",
                String::from_utf8_lossy(key)
            );
        }
        // What was created is RedisBloom's default filter.
        let _: () = redis::cmd("SELECT").arg(1).query(&mut c).unwrap();
        let kind_of: String = redis::cmd("TYPE").arg("before").query(&mut c).unwrap();
        assert_eq!(kind_of, "MBbloom--", "{kind:?}");
        let capacity: Vec<i64> = redis::cmd("BF.INFO")
            .arg(&["before", "CAPACITY"])
            .query(&mut c)
            .unwrap();
        assert_eq!(capacity, [100], "{kind:?}");
    }
}

/// A stream of refused reserves with 1 MiB keys fills what the module
/// keeps (16 MiB): from then on no bare replayed add creates a key, not
/// even one never refused, until `FLUSHALL`.
#[test]
fn past_its_cap_the_refused_set_refuses_every_bare_creation_until_flushall() {
    let refusals: Vec<Vec<u8>> = (0..20)
        .map(|i| {
            let mut key = vec![b'k'; 1 << 20];
            key.extend(i.to_string().into_bytes());
            too_big(&key)
        })
        .collect();
    for kind in common::KINDS {
        let mut full = refusals.clone();
        full.push(resp(&[b"BF.ADD", b"fresh", b"a"]));
        let server = replaying_short(kind, &full);
        let mut c = server.connect();
        assert!(
            !exists(&mut c, 0, b"fresh"),
            "{kind:?}: created past the cap"
        );
        assert!(
            server
                .log()
                .contains("more refused creations than this server keeps"),
            "{kind:?}: the log does not say the set is full"
        );
        drop(server);
        let mut flushed = refusals.clone();
        flushed.push(resp(&[b"FLUSHALL"]));
        flushed.push(resp(&[b"BF.ADD", b"fresh", b"a"]));
        let server = replaying_short(kind, &flushed);
        let mut c = server.connect();
        assert!(
            exists(&mut c, 0, b"fresh"),
            "{kind:?}: FLUSHALL did not reset"
        );
    }
}

/// A replica with this module follows a RedisBloom primary (RedisBloom's
/// `.so` in `REDISBLOOM_SO`; without it the test says so and passes, as
/// `tests/differential.rs` does): the keys the primary's bare adds create
/// are RedisBloom's filters there, byte for byte; where the replica (a 3
/// GiB address space) cannot build what the primary reserved, it holds
/// none, and the bare adds for that key do not make one.
#[test]
fn a_replica_follows_a_redisbloom_primary() {
    let Some(redisbloom) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        eprintln!(
            "redisbloom_aof: a_replica_follows_a_redisbloom_primary skipped: set REDISBLOOM_SO \
             to RedisBloom's redisbloom.so"
        );
        return;
    };
    let primary = Server::start_with_other_module(Kind::Valkey, &redisbloom);
    let replica = Server::start_with_address_space(Kind::Valkey, 3 << 30);
    let (mut p, mut r) = (primary.connect(), replica.connect());
    let _: String = redis::cmd("REPLICAOF")
        .arg(&["127.0.0.1", &primary.port.to_string()])
        .query(&mut r)
        .unwrap();
    assert!(common::replica_caught_up(&mut p, &mut r), "no sync");
    let items = |key: &str, count: usize| -> Vec<String> {
        (0..count).map(|i| format!("{key}:item:{i}")).collect()
    };
    let _: bool = redis::cmd("BF.ADD")
        .arg(&["added", "a"])
        .query(&mut p)
        .unwrap();
    for item in items("added", 300) {
        let _: bool = redis::cmd("BF.ADD")
            .arg("added")
            .arg(item)
            .query(&mut p)
            .unwrap();
    }
    let _: Vec<bool> = redis::cmd("BF.MADD")
        .arg("madded")
        .arg(items("madded", 500))
        .query(&mut p)
        .unwrap();
    let _: Vec<bool> = redis::cmd("BF.INSERT")
        .arg(&[
            "inserted",
            "CAPACITY",
            "50",
            "ERROR",
            "0.001",
            "NONSCALING",
            "ITEMS",
        ])
        .arg(items("inserted", 40))
        .query(&mut p)
        .unwrap();
    let _: String = redis::cmd("BF.RESERVE")
        .arg(&["huge", "0.0000001", "1000000000"])
        .query(&mut p)
        .unwrap();
    let _: Vec<bool> = redis::cmd("BF.MADD")
        .arg("huge")
        .arg(items("huge", 10))
        .query(&mut p)
        .unwrap();
    let _: bool = redis::cmd("BF.ADD")
        .arg(&["later", "a"])
        .query(&mut p)
        .unwrap();
    assert!(common::replica_caught_up(&mut p, &mut r), "fell behind");
    for key in ["added", "madded", "inserted", "later"] {
        assert_eq!(
            common::dump_payload(&mut r, key),
            common::dump_payload(&mut p, key),
            "{key}: the replica's differs from RedisBloom's"
        );
        assert!(
            common::dump_payload(&mut r, key).is_some(),
            "{key}: missing"
        );
    }
    let exists: i64 = redis::cmd("EXISTS").arg("huge").query(&mut r).unwrap();
    assert_eq!(exists, 0, "a huge of the replica's own");
}
