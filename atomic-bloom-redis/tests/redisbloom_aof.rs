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
