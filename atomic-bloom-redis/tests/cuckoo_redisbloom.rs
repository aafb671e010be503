//! RedisBloom's own cuckoo filters, switched over: an RDB written by
//! RedisBloom loads, its `DUMP` payloads (encodings 1 to 4) `RESTORE`, its
//! `CF.SCANDUMP` streams load through `CF.LOADCHUNK`, and every filter
//! answers (`CF.EXISTS`, `CF.COUNT`, `CF.INFO`, `CF.DEBUG`), takes 1,800
//! more commands (adds, inserts, deletes, compactions)
//! with RedisBloom's replies, and dumps to RedisBloom's own bytes before and
//! after them (`tests/fixtures/redisbloom_cf/`, written by RedisBloom
//! itself through `bench/redisbloom_cf_fixtures.py`). Hostile headers and
//! payloads are refused and the server lives.

#[path = "cf_fixtures/mod.rs"]
mod cf_fixtures;
mod common;
#[path = "bf_stream/resp.rs"]
#[allow(dead_code)]
mod resp;

use cf_fixtures::{
    assert_described, bytes, describe, json_of, load_stream, probes, record, scan_dump, streams,
};
use common::{Kind, Server, KINDS};
use resp::{Conn, Reply};
use serde_json::Value as Json;

fn dump(c: &mut Conn, key: &str) -> Vec<u8> {
    match c.call(&["DUMP", key]) {
        Reply::Bulk(payload) => payload,
        other => panic!("DUMP {key}: {other}"),
    }
}

fn restore(c: &mut Conn, key: &str, payload: &[u8]) -> Reply {
    c.call(&[
        b"RESTORE".as_slice(),
        key.as_bytes(),
        b"0",
        payload,
        b"REPLACE",
    ])
}

/// Every key of the fixtures answers as RedisBloom's did (`stage`
/// "before" or "after" the commands), under its own name or `prefix` + it.
fn check_keys(c: &mut Conn, record: &Json, stage: &str, prefix: &str, memory: bool) {
    let probes = probes(record);
    for (name, expected) in record[stage].as_object().unwrap() {
        let key = format!("{prefix}{name}");
        let count = expected["count"].as_u64().unwrap();
        let got = describe(c, &key, name, count, &probes);
        assert_described(&got, expected, &format!("{stage} {key}"), memory);
    }
}

/// RedisBloom's RDB: every key loads as `MBbloomCF`, answers, dumps and
/// streams as RedisBloom's; then RedisBloom's 1,800 commands get
/// RedisBloom's replies, and leave RedisBloom's bytes.
#[test]
fn a_redisbloom_rdb_loads_answers_takes_commands_and_dumps_as_redisbloom() {
    let record = record();
    let streams = streams();
    let mut server = Server::unlaunched(Kind::Valkey, &[], &[]);
    std::fs::write(server.dir.join("dump.rdb"), bytes("dump.rdb")).unwrap();
    server.launch().unwrap();
    let mut c = Conn::open(server.port, false);
    for name in record["before"].as_object().unwrap().keys() {
        assert_eq!(
            c.call(&["TYPE", name]),
            Reply::Status(b"MBbloomCF".to_vec())
        );
        assert!(
            dump(&mut c, name) == bytes(&format!("{name}.dump")),
            "{name}: DUMP differs from RedisBloom's"
        );
        assert!(
            scan_dump(&mut c, name) == streams[name],
            "{name}: CF.SCANDUMP differs from RedisBloom's"
        );
    }
    check_keys(&mut c, &record, "before", "", false);
    let mut differed = Vec::new();
    for (index, op) in record["ops"].as_array().unwrap().iter().enumerate() {
        let command: Vec<String> = (op["command"].as_array().unwrap().iter())
            .map(|word| word.as_str().unwrap().to_string())
            .collect();
        let reply = json_of(&c.call(&command));
        if reply != op["reply"] {
            differed.push(format!(
                "command {index} {command:?}: here {reply}, RedisBloom {}",
                op["reply"]
            ));
        }
    }
    assert!(differed.is_empty(), "{}", differed.join("\n"));
    check_keys(&mut c, &record, "after", "", false);
    for name in record["after"].as_object().unwrap().keys() {
        let theirs = cf_fixtures::folder().join(format!("{name}.after.dump"));
        if theirs.exists() {
            assert!(
                dump(&mut c, name) == std::fs::read(theirs).unwrap(),
                "{name}: DUMP after the commands differs from RedisBloom's"
            );
        }
    }
}

/// RedisBloom's `DUMP` payloads `RESTORE`, the old encodings (1 to 3)
/// too, and dump back as RedisBloom dumps them (an old one at encoding 4).
#[test]
fn redisbloom_dumps_of_every_encoding_restore_and_dump_back_alike() {
    let record = record();
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = Conn::open(server.port, false);
    for name in record["before"].as_object().unwrap().keys() {
        let theirs = bytes(&format!("{name}.dump"));
        assert!(restore(&mut c, name, &theirs).is_ok(), "{name}");
        assert!(dump(&mut c, name) == theirs, "{name}: DUMP");
    }
    check_keys(&mut c, &record, "before", "", false);
    let probes = probes(&record);
    for (name, expected) in record["legacy"].as_object().unwrap() {
        let reply = restore(&mut c, name, &bytes(&format!("{name}.dump")));
        assert!(reply.is_ok(), "{name}: {reply}");
        let mut got = describe(&mut c, name, "legacy", 0, &probes);
        let own = describe(&mut c, name, "legacy", 1500, &[]);
        got["own"] = own["own"].clone();
        assert_described(&got, expected, name, false);
        assert!(
            dump(&mut c, name) == bytes(&format!("{name}.after.dump")),
            "{name}: DUMP after loading differs from RedisBloom's"
        );
    }
}

/// RedisBloom's `CF.SCANDUMP` streams load through `CF.LOADCHUNK` on both
/// servers and answer as RedisBloom's filters (all but `MEMORY USAGE`,
/// whose share for the key's name differs under another name); they
/// survive `DEBUG RELOAD`, an AOF rewrite and a restart from it.
#[test]
fn redisbloom_streams_load_through_loadchunk_and_survive_reload_and_aof() {
    let record = record();
    let streams = streams();
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &["--appendonly", "yes"]);
        let mut c = Conn::open(server.port, false);
        let mut streamed = serde_json::Map::new();
        for (name, stream) in &streams {
            if stream.is_empty() {
                continue; // `emptied`: RedisBloom's SCANDUMP gives nothing
            }
            load_stream(&mut c, &format!("copy:{name}"), stream);
            assert!(
                scan_dump(&mut c, &format!("copy:{name}")) == *stream,
                "{kind:?} {name}"
            );
            streamed.insert(name.clone(), record["before"][name].clone());
        }
        let copies = serde_json::json!({ "probes": record["probes"], "before": streamed });
        check_keys(&mut c, &copies, "before", "copy:", false);
        assert!(c.call(&["DEBUG", "RELOAD"]).is_ok());
        check_keys(&mut c, &copies, "before", "copy:", false);
        let mut redis = server.connect();
        let _: String = common::reply(&mut redis, &["BGREWRITEAOF"]);
        common::wait_for_aof_rewrite(&mut redis);
        drop(c);
        server.stop(false);
        server.launch().unwrap();
        let mut c = Conn::open(server.port, false);
        check_keys(&mut c, &copies, "before", "copy:", false);
    }
}

/// Every byte of a RedisBloom header flipped (and cut, and made absurd):
/// each loads (a header RedisBloom takes too, whose pieces then go where it
/// says) or is refused with RedisBloom's "Couldn't create filter!" /
/// "Invalid header"; the server lives.
#[test]
fn hostile_headers_and_pieces_are_refused_and_the_server_lives() {
    let streams = streams();
    let stream = &streams["bs4"];
    let header = &stream[0].1;
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        let mut c = Conn::open(server.port, false);
        let mut variants: Vec<Vec<u8>> = (0..header.len())
            .flat_map(|at| {
                [0x01u8, 0x40, 0x80, 0xff].map(|mask| {
                    let mut bad = header.clone();
                    bad[at] ^= mask;
                    bad
                })
            })
            .collect();
        variants.extend([0, 1, 37, 39].map(|length| {
            let mut cut = header.clone();
            cut.resize(length, 7);
            cut
        }));
        let mut refused = 0;
        for (index, bad) in variants.iter().enumerate() {
            let key = format!("bad:{index}");
            let reply = c.call(&[b"CF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", bad]);
            match reply {
                Reply::Status(_) => {
                    for (iterator, piece) in &stream[1..] {
                        c.call(&[
                            b"CF.LOADCHUNK".as_slice(),
                            key.as_bytes(),
                            iterator.to_string().as_bytes(),
                            piece,
                        ]);
                    }
                    let _ = c.call(&["CF.INSERT", &key, "ITEMS", "a", "b", "c"]);
                    let _ = c.call(&["CF.DEL", &key, "a"]);
                    let _ = c.call(&["CF.COMPACT", &key]);
                    let _ = c.call(&["CF.MEXISTS", &key, "a", "b"]);
                }
                Reply::Error(text) => {
                    let text = String::from_utf8_lossy(&text).into_owned();
                    assert!(
                        ["Couldn't create filter!", "Invalid header"].contains(&text.as_str()),
                        "{kind:?} {index}: {text}"
                    );
                    refused += 1;
                }
                other => panic!("{kind:?} {index}: {other}"),
            }
            let _ = c.call(&["DEL", &key]);
        }
        // The item and delete counts (16 of the 38 bytes) take any value.
        assert!(refused >= 40, "{kind:?}: {refused} refused");
        // RedisBloom's own test: a header whose sub-filter is 2^32 one-slot
        // buckets (4 GiB, allocated lazily), then a duplicate flood.
        let huge: Vec<u8> = [0u64, 1 << 32, 0, 1]
            .iter()
            .flat_map(|field| field.to_le_bytes())
            .chain([1u16, 1, 1].iter().flat_map(|field| field.to_le_bytes()))
            .collect();
        let reply = c.call(&[b"CF.LOADCHUNK".as_slice(), b"huge", b"1", &huge]);
        assert!(reply.is_ok(), "{kind:?}: {reply}");
        let reply = c.call(&["CF.INSERT", "huge", "ITEMS", "1", "1", "1", "1", "1", "1"]);
        assert!(matches!(reply, Reply::Array(_)), "{kind:?}: {reply}");
        assert!(server.is_alive(), "{kind:?}: the server died");
        assert_eq!(c.call(&["PING"]), Reply::Status(b"PONG".to_vec()));
    }
}

/// RedisBloom's `DUMP` payload with each of its field bytes flipped and
/// the payload sealed again (so the server's checksum passes): refused
/// ("Bad data format") or a filter that answers; a string of the wrong
/// length (RedisBloom aborts the server on one) and no sub-filters
/// (RedisBloom's own test) refused; the server lives.
#[test]
fn mutated_restore_payloads_are_refused_or_load_and_the_server_lives() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut redis = server.connect();
    let mut c = Conn::open(server.port, false);
    let payload = bytes("compacted.dump");
    let mut refused = 0;
    for at in 1..80.min(payload.len() - 10) {
        for mask in [0x01u8, 0x10, 0x80] {
            match common::restore_flipped(&mut redis, "bad", &payload, at, mask) {
                Err(_) => refused += 1,
                Ok(_) => {
                    let _ = c.call(&["CF.INSERT", "bad", "ITEMS", "x", "y", "z"]);
                    let _ = c.call(&["CF.DEL", "bad", "x"]);
                    let _ = c.call(&["CF.COMPACT", "bad"]);
                    let _ = dump(&mut c, "bad");
                }
            }
            assert_eq!(
                c.call(&["PING"]),
                Reply::Status(b"PONG".to_vec()),
                "byte {at}"
            );
        }
    }
    assert!(refused > 20, "only {refused} refused");
    // No sub-filters (RedisBloom's own test sends one stamped with Redis
    // 7.4's RDB version, which Valkey refuses before a module sees it).
    let zero = payload_like(&payload, 4, &[0, 512, 0, 0, 2, 20, 1], &[]);
    assert_eq!(
        restore(&mut c, "zero", &zero),
        Reply::Error(b"ERR Bad data format".to_vec())
    );
    // Slots that are not buckets x bucket size: 1,000 bytes for 512
    // buckets of 2.
    let short = payload_like(&payload, 4, &[1, 512, 0, 0, 2, 20, 1, 512], &[&[1u8; 1000]]);
    assert_eq!(
        restore(&mut c, "short", &short),
        Reply::Error(b"ERR Bad data format".to_vec())
    );
    // A count of sub-filters whose 16 bytes each pass 2^64 (refused for
    // its count; the sum of its bytes must not overflow on the way).
    for filters in [1u64 << 60, u64::MAX] {
        let many = payload_like(&payload, 4, &[filters, 512, 0, 0, 2, 20, 1], &[]);
        assert_eq!(
            restore(&mut c, "many", &many),
            Reply::Error(b"ERR Bad data format".to_vec()),
            "{filters} sub-filters"
        );
    }
    // Encoding 3 with a bucket size (the config's, 2) its slots do not fit.
    let old = payload_like(&payload, 3, &[1, 512, 0], &[&[1u8; 512]]);
    assert_eq!(
        restore(&mut c, "old", &old),
        Reply::Error(b"ERR Bad data format".to_vec())
    );
    assert_eq!(c.call(&["PING"]), Reply::Status(b"PONG".to_vec()));
}

/// A `DUMP` payload of `MBbloomCF` at `encver` (`template`'s module type id
/// with its version replaced) holding `unsigned` fields, then `strings`,
/// `template`'s RDB version, sealed with Redis's CRC-64.
fn payload_like(template: &[u8], encver: u64, unsigned: &[u64], strings: &[&[u8]]) -> Vec<u8> {
    let fields: Vec<Field> = (unsigned.iter().map(|value| Field::Unsigned(*value)))
        .chain(strings.iter().map(|string| Field::Bytes(string)))
        .collect();
    payload_of(template, encver, &fields)
}

/// A field of a module value in an RDB.
enum Field<'a> {
    Unsigned(u64),
    Bytes(&'a [u8]),
}

/// A `DUMP` payload of `MBbloomCF` at `encver` holding `fields` in order.
fn payload_of(template: &[u8], encver: u64, fields: &[Field]) -> Vec<u8> {
    fn length(value: u64) -> Vec<u8> {
        match value {
            0..=63 => vec![value as u8],
            64..=16383 => vec![0x40 | (value >> 8) as u8, value as u8],
            _ if value <= u64::from(u32::MAX) => {
                [&[0x80][..], &(value as u32).to_be_bytes()].concat()
            }
            _ => [&[0x81][..], &value.to_be_bytes()].concat(),
        }
    }
    assert_eq!(
        &template[..2],
        &[7, 0x81],
        "a module value with a 64-bit type id"
    );
    let id = u64::from_be_bytes(template[2..10].try_into().unwrap());
    let mut body = vec![7, 0x81];
    body.extend_from_slice(&((id & !0x3ff) | encver).to_be_bytes());
    for field in fields {
        match field {
            Field::Unsigned(value) => {
                body.push(2);
                body.extend(length(*value));
            }
            Field::Bytes(bytes) => {
                body.push(5);
                body.extend(length(bytes.len() as u64));
                body.extend_from_slice(bytes);
            }
        }
    }
    body.push(0);
    body.extend_from_slice(&template[template.len() - 10..template.len() - 8]);
    let crc = common::crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// A load (here an RDB file) that meets a cuckoo filter this module
/// refuses goes on and holds no key there, as for RedisBloom's Bloom
/// filters past this module's limits: the file is this server's own, with
/// one value replaced by one RedisBloom can write but its own `CF.SCANDUMP`
/// could not copy (an old filter's second sub-filter the size of the first,
/// under an expansion of 2). A `RESTORE` of it is refused.
#[test]
fn a_load_meeting_a_refused_cuckoo_filter_holds_no_key_there_and_goes_on() {
    let mut server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = Conn::open(server.port, false);
    assert!(c.call(&["CF.RESERVE", "good", "1000"]).is_ok());
    assert!(c.call(&["CF.RESERVE", "bad", "1000"]).is_ok());
    let _ = c.call(&["CF.ADD", "good", "x"]);
    let template = dump(&mut c, "bad");
    assert!(c.call(&["SAVE"]).is_ok());
    drop(c);
    let slots = [0u8; 1024];
    let odd = payload_of(
        &template,
        4,
        &[
            Field::Unsigned(2),
            Field::Unsigned(512),
            Field::Unsigned(0),
            Field::Unsigned(0),
            Field::Unsigned(2),
            Field::Unsigned(20),
            Field::Unsigned(2),
            Field::Unsigned(512),
            Field::Bytes(&slots),
            // The second sub-filter: 512 buckets again, not 1,024.
            Field::Unsigned(512),
            Field::Bytes(&slots),
        ],
    );
    assert_eq!(
        restore(&mut Conn::open(server.port, false), "odd", &odd),
        Reply::Error(b"ERR Bad data format".to_vec())
    );
    // In the RDB file the value follows its key: its module id on.
    let old = &template[1..template.len() - 10];
    let mut rdb = std::fs::read(server.dir.join("dump.rdb")).unwrap();
    let at = (rdb.windows(old.len()))
        .position(|window| window == old)
        .expect("the value in the RDB file");
    rdb.splice(at..at + old.len(), odd[1..odd.len() - 10].iter().copied());
    let body = rdb.len() - 8;
    let crc = common::crc64(&rdb[..body]);
    rdb[body..].copy_from_slice(&crc.to_le_bytes());
    server.stop(false);
    std::fs::write(server.dir.join("dump.rdb"), &rdb).unwrap();
    server.launch().unwrap();
    let mut c = Conn::open(server.port, false);
    assert_eq!(c.call(&["EXISTS", "bad"]), Reply::Int(0));
    assert_eq!(c.call(&["CF.EXISTS", "good", "x"]), Reply::Int(1));
    assert!(
        server.log().contains("holds no key under 'bad'"),
        "{}",
        server.log()
    );
}
