//! RedisBloom's own filters, switched over: an RDB written by RedisBloom
//! loads, its `BF.SCANDUMP` streams load through `BF.LOADCHUNK`, and every
//! filter answers, grows, reports and saves exactly as RedisBloom did
//! (`tests/fixtures/redisbloom/`, written by RedisBloom itself through
//! `bench/redisbloom_fixtures.py`), on Valkey and Redis 7.0.

mod common;
mod recorded;

use std::collections::BTreeMap;

use common::{
    config_set, error_text, exists, load_chunk, load_chunks, ok, reply, scan_dump,
    wait_for_aof_rewrite, Chunks, Kind, Server, KINDS,
};
use recorded::{expected_positives, info};
use serde_json::Value as Json;

const KEYS: [&str; 6] = [
    "default",
    "reserved",
    "nonscaling",
    "legacy32",
    "pow2_32",
    "pow2_64",
];

const FIXTURES: &str = "redisbloom";

fn fixtures() -> std::path::PathBuf {
    recorded::fixtures(FIXTURES)
}

type Stream = Chunks;

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

/// Which probes the filter calls present, as indices.
fn positives(c: &mut redis::Connection, key: &str) -> Vec<u64> {
    recorded::positives(c, key, 1000)
}

fn load_stream(c: &mut redis::Connection, key: &str, stream: &Stream) {
    // RedisBloom's client loop: the header goes to iterator 1.
    let mut stream = stream.clone();
    stream[0].0 = 1;
    load_chunks(c, key, &stream);
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
    let record = recorded::recorded(FIXTURES);
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
    let record = recorded::recorded(FIXTURES);
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
        ok(&mut c, &["DEBUG", "RELOAD"]);
        for name in KEYS {
            answers_as_redisbloom(&mut c, &format!("copy:{name}"), name, &record);
        }
        let _: String = reply(&mut c, &["BGREWRITEAOF"]);
        wait_for_aof_rewrite(&mut c);
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
            match load_chunk(&mut c, &key, 1, bad) {
                Ok(_) => {
                    // Accepted: a header RedisBloom would take too. Its
                    // pieces then go where it says, or are refused.
                    for (iterator, data) in &stream[1..] {
                        let _ = load_chunk(&mut c, &key, *iterator, data);
                    }
                    let _: Vec<bool> = reply(&mut c, &["BF.MEXISTS", &key, "a", "b"]);
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
            let error = load_chunk(&mut c, "ok", at, data).unwrap_err();
            assert_eq!(error_text(&error), expected, "{kind:?}");
        }
        assert_eq!(load_chunk(&mut c, "ok", *iterator, data).unwrap(), "OK");
        assert!(server.is_alive(), "{kind:?}: the server died");
        let pong: String = reply(&mut c, &["PING"]);
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
                let _: Vec<bool> =
                    reply(&mut c, &["BF.MEXISTS", "bad", "default:item:1", "probe:1"]);
            }
        }
        let pong: String = reply(&mut c, &["PING"]);
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
        ok(&mut c, &["BF.RESERVE", "big", "0.01", "100000"]);
        let ours = scan_dump(&mut c, "big");
        let limit = "bf.bf-memory-limit-per-filter";
        config_set(&mut c, limit, "65536");
        for (key, iterator, data) in [("theirs", 1, &theirs[0].1), ("ours", ours[0].0, &ours[0].1)]
        {
            let error = error_text(&load_chunk(&mut c, key, iterator, data).unwrap_err());
            assert!(
                error.contains("bf-memory-limit-per-filter"),
                "{kind:?}: {error}"
            );
            assert!(!exists(&mut c, key), "{kind:?}");
        }
        // Without the limit both load.
        config_set(&mut c, limit, "0");
        load_stream(&mut c, "theirs", theirs);
        load_chunks(&mut c, "ours", &ours);
    }
}
