//! What RedisBloom recorded about its own cuckoo filters
//! (`tests/fixtures/redisbloom_cf`, written by
//! `bench/redisbloom_cf_fixtures.py REDISBLOOM.so`), and how a test asks a
//! server the same questions, so that the answers compare as JSON.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value as Json};

use crate::resp::{Conn, Reply};

/// The fixtures' folder.
pub fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom_cf")
}

/// `record.json`.
pub fn record() -> Json {
    let text = std::fs::read_to_string(folder().join("record.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A fixture file's bytes (`default.dump`, `dump.rdb`).
pub fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(folder().join(name)).unwrap()
}

/// A `CF.SCANDUMP` stream: `(iterator, bytes)` as RedisBloom gave them.
pub type Stream = Vec<(i64, Vec<u8>)>;

/// The streams of `scandump.bin`, by key (a sparse chunk made whole).
pub fn streams() -> BTreeMap<String, Stream> {
    let data = bytes("scandump.bin");
    let mut at = 0;
    let mut take = |n: usize| {
        let field = data[at..at + n].to_vec();
        at += n;
        field
    };
    let u32_of = |bytes: Vec<u8>| u32::from_le_bytes(bytes.try_into().unwrap());
    let mut streams = BTreeMap::new();
    for _ in 0..u32_of(take(4)) {
        let length = u32_of(take(4)) as usize;
        let name = String::from_utf8(take(length)).unwrap();
        let mut stream = Vec::new();
        for _ in 0..u32_of(take(4)) {
            let iterator = i64::from_le_bytes(take(8).try_into().unwrap());
            let length = u64::from_le_bytes(take(8).try_into().unwrap()) as usize;
            let piece = if take(1)[0] == 0 {
                take(length)
            } else {
                let mut piece = vec![0u8; length];
                for _ in 0..u32_of(take(4)) {
                    let offset = u32_of(take(4)) as usize;
                    piece[offset] = take(1)[0];
                }
                piece
            };
            stream.push((iterator, piece));
        }
        streams.insert(name, stream);
    }
    streams
}

/// `KEY:item:0` ... the items a fixture key was sent.
pub fn items(key: &str, count: u64) -> Vec<String> {
    (0..count).map(|i| format!("{key}:item:{i}")).collect()
}

/// `probe:0` ... the probes every key was asked about.
pub fn probes(record: &Json) -> Vec<String> {
    let count = record["probes"].as_u64().unwrap();
    (0..count).map(|i| format!("probe:{i}")).collect()
}

/// A reply as the fixture script writes one: strings (bulk strings and
/// statuses alike, bytes as Latin-1), integers, lists, null, and
/// `{"error": text}`.
pub fn json_of(reply: &Reply) -> Json {
    let latin1 = |bytes: &[u8]| Json::from(bytes.iter().map(|&b| b as char).collect::<String>());
    match reply {
        Reply::Status(text) | Reply::Bulk(text) => latin1(text),
        Reply::Error(text) => json!({ "error": latin1(text) }),
        Reply::Int(n) => json!(n),
        Reply::Bool(b) => json!(i64::from(*b)),
        Reply::Nil => Json::Null,
        Reply::Array(items) | Reply::Set(items) => Json::Array(items.iter().map(json_of).collect()),
        Reply::Map(pairs) => Json::Array(
            pairs
                .iter()
                .flat_map(|(key, value)| [json_of(key), json_of(value)])
                .collect(),
        ),
        Reply::Other(_, text) => latin1(text),
    }
}

/// Booleans as the fixtures' hex bitmaps hold them.
fn bitmap(bits: &[bool]) -> String {
    let mut bytes = vec![0u8; bits.len().div_ceil(8)];
    for (index, bit) in bits.iter().enumerate() {
        if *bit {
            bytes[index / 8] |= 1 << (index % 8);
        }
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `CF.MEXISTS` of `values`, 1,000 a command.
fn mexists(c: &mut Conn, key: &str, values: &[String]) -> Vec<bool> {
    let mut found = Vec::new();
    for batch in values.chunks(1000) {
        let mut args = vec!["CF.MEXISTS".to_string(), key.to_string()];
        args.extend(batch.iter().cloned());
        match c.call(&args) {
            Reply::Array(answers) => {
                found.extend(answers.iter().map(|answer| answer == &Reply::Int(1)))
            }
            other => panic!("CF.MEXISTS {key}: {other}"),
        }
    }
    found
}

/// `CF.COUNT` of each of `values`, pipelined, as base-36 digits.
fn counts(c: &mut Conn, key: &str, values: &[String]) -> String {
    for value in values {
        c.send(&["CF.COUNT", key, value]);
    }
    values
        .iter()
        .map(|_| match c.receive() {
            Reply::Int(n) => char::from_digit(n as u32, 36).expect("a count below 36"),
            other => panic!("CF.COUNT {key}: {other}"),
        })
        .collect()
}

/// What the fixture script asked about a key (its `describe`): `CF.INFO`,
/// `CF.DEBUG`, `MEMORY USAGE`, which of its `count` items and of the probes
/// `CF.MEXISTS` calls present, and `CF.COUNT` of the first 2,000 of each.
pub fn describe(c: &mut Conn, key: &str, own: &str, count: u64, probes: &[String]) -> Json {
    let own_items = items(own, count);
    json!({
        "count": count,
        "info": json_of(&c.call(&["CF.INFO", key])),
        "debug": json_of(&c.call(&["CF.DEBUG", key])),
        "memory_usage": json_of(&c.call(&["MEMORY", "USAGE", key])),
        "own": bitmap(&mexists(c, key, &own_items)),
        "probes": bitmap(&mexists(c, key, probes)),
        "own_counts": counts(c, key, &own_items[..own_items.len().min(2000)]),
        "probe_counts": counts(c, key, &probes[..probes.len().min(2000)]),
    })
}

/// Checks `got` against what RedisBloom recorded, field by field (without
/// `MEMORY USAGE` unless `memory`: the server's share of it differs
/// between servers).
pub fn assert_described(got: &Json, expected: &Json, what: &str, memory: bool) {
    for (field, value) in expected.as_object().unwrap() {
        if field == "memory_usage" && !memory {
            continue;
        }
        assert!(
            &got[field] == value,
            "{what}: {field}: here {}, RedisBloom {}",
            shorten(&got[field]),
            shorten(value)
        );
    }
}

fn shorten(value: &Json) -> String {
    let text = value.to_string();
    if text.len() > 300 {
        format!("{}... ({} chars)", &text[..300], text.len())
    } else {
        text
    }
}

/// `CF.SCANDUMP` of `key` to its end.
pub fn scan_dump(c: &mut Conn, key: &str) -> Stream {
    let mut stream = Vec::new();
    let mut iterator = 0i64;
    loop {
        match c.call(&["CF.SCANDUMP", key, &iterator.to_string()]) {
            Reply::Array(parts) => match parts.as_slice() {
                [Reply::Int(0), Reply::Nil] => return stream,
                [Reply::Int(next), Reply::Bulk(piece)] => {
                    stream.push((*next, piece.clone()));
                    iterator = *next;
                }
                other => panic!("CF.SCANDUMP {key}: {other:?}"),
            },
            other => panic!("CF.SCANDUMP {key}: {other}"),
        }
    }
}

/// `CF.LOADCHUNK` of a stream into `key` (RedisBloom's client loop: each
/// piece at the iterator `CF.SCANDUMP` gave with it).
pub fn load_stream(c: &mut Conn, key: &str, stream: &Stream) {
    for (iterator, piece) in stream {
        let reply = c.call(&[
            b"CF.LOADCHUNK".as_slice(),
            key.as_bytes(),
            iterator.to_string().as_bytes(),
            piece,
        ]);
        assert!(reply.is_ok(), "CF.LOADCHUNK {key} {iterator}: {reply}");
    }
}
