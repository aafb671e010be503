//! RedisBloom's own filters, switched over: an RDB written by RedisBloom
//! loads, its `BF.SCANDUMP` streams load through `BF.LOADCHUNK`, and every
//! filter answers, grows, reports and saves exactly as RedisBloom did
//! (`tests/fixtures/redisbloom/`, written by RedisBloom itself through
//! `bench/redisbloom_fixtures.py`), on Valkey and Redis 7.0.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::{error_text, Kind, Server, KINDS};
use serde_json::Value as Json;

const KEYS: [&str; 6] = [
    "default",
    "reserved",
    "nonscaling",
    "legacy32",
    "pow2_32",
    "pow2_64",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom")
}

fn recorded() -> Json {
    let text = std::fs::read_to_string(fixtures().join("answers.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

type Stream = Vec<(i64, Vec<u8>)>;

/// The SCANDUMP streams RedisBloom gave, by key.
fn streams() -> BTreeMap<String, Stream> {
    let bytes = std::fs::read(fixtures().join("scandump.bin")).unwrap();
    let mut at = 0;
    let mut take = |n: usize| {
        let field = bytes[at..at + n].to_vec();
        at += n;
        field
    };
    let mut streams = BTreeMap::new();
    for _ in KEYS {
        let name_length = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
        let name = String::from_utf8(take(name_length)).unwrap();
        let chunks = u32::from_le_bytes(take(4).try_into().unwrap());
        let stream = (0..chunks)
            .map(|_| {
                let iterator = i64::from_le_bytes(take(8).try_into().unwrap());
                let length = u64::from_le_bytes(take(8).try_into().unwrap()) as usize;
                (iterator, take(length))
            })
            .collect();
        streams.insert(name, stream);
    }
    streams
}

const PROBES: usize = 20_000;

/// Which probes the filter calls present, as indices.
fn positives(c: &mut redis::Connection, key: &str) -> Vec<u64> {
    let mut found = Vec::new();
    for start in (0..PROBES).step_by(1000) {
        let probes: Vec<String> = (start..start + 1000)
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

fn expected_positives(record: &Json) -> Vec<u64> {
    record["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|index| index.as_u64().unwrap())
        .collect()
}

/// `BF.INFO` as a list of strings and numbers, as the fixtures hold it.
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

fn scan_dump(c: &mut redis::Connection, key: &str) -> Stream {
    let mut stream = Vec::new();
    let mut iterator = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(key)
            .arg(iterator)
            .query(c)
            .unwrap();
        if next == 0 {
            return stream;
        }
        stream.push((next, data));
        iterator = next;
    }
}

fn load_stream(c: &mut redis::Connection, key: &str, stream: &Stream) {
    for (index, (iterator, data)) in stream.iter().enumerate() {
        // RedisBloom's client loop: the header goes to iterator 1.
        let at = if index == 0 { 1 } else { *iterator };
        let ok: String = redis::cmd("BF.LOADCHUNK")
            .arg(key)
            .arg(at)
            .arg(data.as_slice())
            .query(c)
            .unwrap();
        assert_eq!(ok, "OK");
    }
}

fn add_more(c: &mut redis::Connection, key: &str, name: &str) {
    for start in (0..5000).step_by(1000) {
        let items: Vec<String> = (start..start + 1000)
            .map(|i| format!("{name}:more:{i}"))
            .collect();
        let _: Vec<bool> = redis::cmd("BF.MADD").arg(key).arg(&items).query(c).unwrap();
    }
}

/// Everything RedisBloom recorded about `name`, checked against `key`.
fn answers_as_redisbloom(c: &mut redis::Connection, key: &str, name: &str, record: &Json) {
    let before = &record["before"][name];
    let count = before["count"].as_u64().unwrap();
    for start in (0..count).step_by(1000) {
        let items: Vec<String> = (start..(start + 1000).min(count))
            .map(|i| format!("{name}:item:{i}"))
            .collect();
        let found: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg(key)
            .arg(&items)
            .query(c)
            .unwrap();
        // A NONSCALING filter refused what came after its capacity.
        if name != "nonscaling" {
            assert!(
                found.into_iter().all(|found| found),
                "{name}: an item is missing"
            );
        }
    }
    assert_eq!(
        positives(c, key),
        expected_positives(before),
        "{name}: answers"
    );
    assert_eq!(info(c, key), before["info"], "{name}: BF.INFO");
}

#[test]
fn redisbloom_rdb_loads_answers_grows_and_saves_back_as_redisbloom() {
    let record = recorded();
    let streams = streams();
    let mut server = Server::unlaunched(Kind::Valkey, &[], &[]);
    std::fs::copy(fixtures().join("dump.rdb"), server.dir.join("dump.rdb")).unwrap();
    server.launch().unwrap();
    let mut c = server.connect();
    for name in KEYS {
        let kind: String = redis::cmd("TYPE").arg(name).query(&mut c).unwrap();
        assert_eq!(kind, "MBbloom--", "{name}");
        answers_as_redisbloom(&mut c, name, name, &record);
        // The way back: RedisBloom's own bytes.
        let dumped: Vec<u8> = redis::cmd("DUMP").arg(name).query(&mut c).unwrap();
        let theirs = std::fs::read(fixtures().join(format!("{name}.dump"))).unwrap();
        assert!(dumped == theirs, "{name}: DUMP differs from RedisBloom's");
        assert!(
            scan_dump(&mut c, name) == streams[name],
            "{name}: SCANDUMP differs"
        );
    }
    // Growth, as RedisBloom grew the same filters.
    for name in KEYS.into_iter().filter(|name| *name != "nonscaling") {
        add_more(&mut c, name, name);
        let after = &record["after"][name];
        assert_eq!(
            positives(&mut c, name),
            expected_positives(after),
            "{name}: after growth"
        );
        assert_eq!(
            info(&mut c, name),
            after["info"],
            "{name}: BF.INFO after growth"
        );
    }
    let refused = redis::cmd("BF.ADD")
        .arg("nonscaling")
        .arg("one more")
        .query::<bool>(&mut c)
        .unwrap_err();
    assert_eq!(error_text(&refused), "ERR non scaling filter is full");
}

#[test]
fn redisbloom_streams_load_through_loadchunk_and_survive_reload_and_aof() {
    let record = recorded();
    let streams = streams();
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &["--appendonly", "yes"]);
        let mut c = server.connect();
        for name in KEYS {
            let key = format!("copy:{name}");
            load_stream(&mut c, &key, &streams[name]);
            answers_as_redisbloom(&mut c, &key, name, &record);
            assert!(scan_dump(&mut c, &key) == streams[name], "{kind:?} {name}");
        }
        // Through this module's RDB save and load, and an AOF rewrite and
        // a restart from it.
        let _: String = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
        for name in KEYS {
            answers_as_redisbloom(&mut c, &format!("copy:{name}"), name, &record);
        }
        let _: String = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let persistence: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
            if persistence.contains("aof_rewrite_in_progress:0")
                && !persistence.contains("aof_rewrite_scheduled:1")
            {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{kind:?}: no AOF rewrite"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        server.stop(false);
        server.launch().unwrap();
        let mut c = server.connect();
        for name in KEYS {
            answers_as_redisbloom(&mut c, &format!("copy:{name}"), name, &record);
        }
    }
}

#[test]
fn hostile_redisbloom_headers_and_pieces_are_refused_and_the_server_lives() {
    let streams = streams();
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        let stream = &streams["reserved"];
        let header = &stream[0].1;
        let mut refused = 0;
        // Every byte of the header flipped, one at a time, and a few
        // absurd values: each loads or is refused; none crashes.
        let mut variants: Vec<Vec<u8>> = (0..header.len())
            .flat_map(|at| {
                [0x01u8, 0x80, 0xff].map(|mask| {
                    let mut bad = header.clone();
                    bad[at] ^= mask;
                    bad
                })
            })
            .collect();
        for cut in [0, 1, 19, 20, 40, header.len() - 1] {
            variants.push(header[..cut].to_vec());
        }
        let mut huge = header.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes()); // links
        variants.push(huge);
        for (index, bad) in variants.iter().enumerate() {
            let key = format!("bad:{index}");
            match redis::cmd("BF.LOADCHUNK")
                .arg(&key)
                .arg(1)
                .arg(bad.as_slice())
                .query::<String>(&mut c)
            {
                Ok(_) => {
                    // Accepted: a header RedisBloom would take too. Its
                    // pieces then go where it says, or are refused.
                    for (iterator, data) in &stream[1..] {
                        let _ = redis::cmd("BF.LOADCHUNK")
                            .arg(&key)
                            .arg(*iterator)
                            .arg(data.as_slice())
                            .query::<String>(&mut c);
                    }
                    let _: Vec<bool> = redis::cmd("BF.MEXISTS")
                        .arg(&key)
                        .arg("a")
                        .arg("b")
                        .query(&mut c)
                        .unwrap();
                }
                Err(error) => {
                    assert_eq!(
                        error_text(&error),
                        "ERR received bad data",
                        "{kind:?} {index}"
                    );
                    refused += 1;
                }
            }
        }
        assert!(
            refused > variants.len() / 2,
            "{kind:?}: {refused} of {} refused",
            variants.len()
        );
        // Pieces out of place: RedisBloom's errors.
        load_stream(&mut c, "ok", &stream[..1].to_vec());
        let (iterator, data) = &stream[1];
        for (at, expected) in [
            (0, "ERR received bad data"),
            (i64::MAX, "ERR invalid offset - no link found"),
        ] {
            let error = redis::cmd("BF.LOADCHUNK")
                .arg("ok")
                .arg(at)
                .arg(data.as_slice())
                .query::<String>(&mut c)
                .unwrap_err();
            assert_eq!(error_text(&error), expected, "{kind:?}");
        }
        let ok: String = redis::cmd("BF.LOADCHUNK")
            .arg("ok")
            .arg(*iterator)
            .arg(data.as_slice())
            .query(&mut c)
            .unwrap();
        assert_eq!(ok, "OK");
        assert!(server.is_alive(), "{kind:?}: the server died");
        let pong: String = redis::cmd("PING").query(&mut c).unwrap();
        assert_eq!(pong, "PONG");
    }
}

/// RedisBloom's `DUMP` payload of a filter with each of its field bytes
/// flipped and the payload resealed (so the server's checksum passes): the
/// load refuses what RedisBloom would refuse, and the server lives.
#[test]
fn a_mutated_redisbloom_restore_payload_is_refused_or_loads_and_the_server_lives() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = server.connect();
    let payload = std::fs::read(fixtures().join("default.dump")).unwrap();
    let mut refused = 0;
    // The chain's and the first link's fields, before its bits.
    for at in 1..80 {
        let outcome = common::restore_flipped(&mut c, "bad", &payload, at, 0x04);
        match outcome {
            Err(_) => refused += 1,
            // A field RedisBloom does not check either (an error rate's
            // low bits, a capacity): a filter that answers.
            Ok(_) => {
                let _: Vec<bool> = redis::cmd("BF.MEXISTS")
                    .arg("bad")
                    .arg(&["default:item:1", "probe:1"])
                    .query(&mut c)
                    .unwrap();
            }
        }
        let pong: String = redis::cmd("PING").query(&mut c).unwrap();
        assert_eq!(pong, "PONG", "byte {at}");
    }
    // Counts, sizes, hashes, lengths: refused (30 of the 79 bytes here).
    assert!(refused >= 25, "only {refused} of 79 refused");
}

/// `bf-memory-limit-per-filter` holds for filters that come in through
/// `BF.LOADCHUNK` too: a RedisBloom header whose links would pass it, and
/// this module's first chunk whose record would, are refused before
/// anything is held (a header may claim 4,096 links of 2^40 bytes).
#[test]
fn loadchunk_holds_headers_and_records_to_the_memory_limit() {
    let streams = streams();
    let theirs = &streams["reserved"];
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        let _: String = redis::cmd("BF.RESERVE")
            .arg(&["big", "0.01", "100000"])
            .query(&mut c)
            .unwrap();
        let ours = scan_dump(&mut c, "big");
        let limit = |c: &mut redis::Connection, bytes: &str| {
            let _: () = redis::cmd("CONFIG")
                .arg(&["SET", "bf.bf-memory-limit-per-filter", bytes])
                .query(c)
                .unwrap();
        };
        limit(&mut c, "65536");
        let refused = |c: &mut redis::Connection, key: &str, iterator: i64, data: &[u8]| {
            let error = redis::cmd("BF.LOADCHUNK")
                .arg(key)
                .arg(iterator)
                .arg(data)
                .query::<String>(c)
                .unwrap_err();
            let exists: i64 = redis::cmd("EXISTS").arg(key).query(c).unwrap();
            (error_text(&error), exists)
        };
        let (error, exists) = refused(&mut c, "theirs", 1, &theirs[0].1);
        assert!(
            error.contains("bf-memory-limit-per-filter"),
            "{kind:?}: {error}"
        );
        assert_eq!(exists, 0, "{kind:?}");
        let (error, exists) = refused(&mut c, "ours", ours[0].0, &ours[0].1);
        assert!(
            error.contains("bf-memory-limit-per-filter"),
            "{kind:?}: {error}"
        );
        assert_eq!(exists, 0, "{kind:?}");
        // Without the limit both load.
        limit(&mut c, "0");
        load_stream(&mut c, "theirs", theirs);
        for (iterator, data) in &ours {
            let ok: String = redis::cmd("BF.LOADCHUNK")
                .arg("ours")
                .arg(*iterator)
                .arg(data.as_slice())
                .query(&mut c)
                .unwrap();
            assert_eq!(ok, "OK", "{kind:?}");
        }
    }
}
