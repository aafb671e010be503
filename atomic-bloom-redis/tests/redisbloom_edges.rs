//! RedisBloom's filters at the edges: what a command leaves, the loader
//! takes back, every way (`RESTORE`, a replica's full sync, `DEBUG
//! RELOAD`, a restart from the RDB or the AOF); what RedisBloom itself
//! builds at the smallest rates a double holds loads every way and
//! answers as RedisBloom did (`tests/fixtures/redisbloom_edges/`, written
//! by `bench/redisbloom_edge_fixtures.py REDISBLOOM.so`); and what the
//! module cannot hold (past its 4,096 sub-filters) is refused with an
//! error on every path, and a load that meets it holds no key and goes on.

mod chains;
mod common;
mod recorded;

use chains::{
    assert_reloads_everywhere, dumped_fields, for_both_servers, header, rdb_file, resp,
    restore_payload, Chain, Link, FORCE64, NOROUND, NO_SCALING,
};
use common::{error_text, exists, load_chunk, ok, refusal, reply, restore, Kind, Server, KINDS};
use serde_json::Value as Json;

const FIXTURES: &str = "redisbloom_edges";

/// The reply to `BF.ADD key item`: `1`, `0` or the error's text.
fn add(c: &mut redis::Connection, key: &str, item: &str) -> Json {
    match redis::cmd("BF.ADD").arg(key).arg(item).query::<i64>(c) {
        Ok(added) => Json::from(added),
        Err(error) => serde_json::json!({ "error": error_text(&error) }),
    }
}

/// A server that keeps its AOF as `BF.LOADCHUNK` commands (the module's
/// own rewrite), for [`assert_reloads_everywhere`].
fn server(kind: Kind) -> Server {
    Server::start(kind, &[], &["--aof-use-rdb-preamble", "no"])
}

/// Two links whose item counts add up to 2^64 - 1, the last with room: an
/// add would take the count past 2^64.
fn counts_at_the_top() -> Chain {
    Chain::of(
        FORCE64 | NOROUND | NO_SCALING,
        2,
        vec![
            Link::word(1 << 63, 1 << 63),
            Link::word(u64::MAX, (1 << 63) - 1),
        ],
    )
}

/// 4,096 full links growing by one: every new item needs a 4,097th.
fn links_at_the_limit() -> Chain {
    Chain::of(FORCE64 | NOROUND, 1, vec![Link::word(1, 1); 4096])
}

/// An add that would take the item count past 2^64 - 1 is refused (it
/// wrapped to 0, and under overflow checks the module's panic killed the
/// server); the chain, as it is, goes out and comes back every way.
#[test]
fn a_count_at_two_to_the_64_takes_no_add_and_reloads_everywhere() {
    for kind in KINDS {
        let mut server = server(kind);
        let mut c = server.connect();
        assert_eq!(
            load_chunk(&mut c, "top", 1, &header(&counts_at_the_top())).unwrap(),
            "OK"
        );
        let refused = add(&mut c, "top", "one more");
        assert!(
            refused["error"]
                .as_str()
                .is_some_and(|text| text.starts_with("ERR problem inserting into filter")),
            "{kind:?}: {refused}"
        );
        let card: i64 = reply(&mut c, &["BF.CARD", "top"]);
        assert_eq!(card, i64::MAX, "{kind:?}: the count moved");
        assert_reloads_everywhere(&mut server, &["top"]);
    }
}

/// A chain of 4,096 sub-filters (the most the module holds) takes no
/// 4,097th: the adds that need one are refused, and the chain reloads
/// every way (50 adds made 4,146 links, which no load then took back).
#[test]
fn a_chain_at_the_link_limit_grows_no_further_and_reloads_everywhere() {
    for kind in KINDS {
        let mut server = server(kind);
        let mut c = server.connect();
        assert_eq!(
            load_chunk(&mut c, "long", 1, &header(&links_at_the_limit())).unwrap(),
            "OK"
        );
        for index in 0..50 {
            let refused = add(&mut c, "long", &format!("new:{index}"));
            assert!(
                refused["error"]
                    .as_str()
                    .is_some_and(|text| text.starts_with("ERR problem inserting into filter")),
                "{kind:?}: {refused}"
            );
        }
        let filters: Vec<i64> = reply(&mut c, &["BF.INFO", "long", "FILTERS"]);
        assert_eq!(filters, [4096], "{kind:?}");
        assert_reloads_everywhere(&mut server, &["long"]);
    }
}

/// RedisBloom's answers about `key` (its record), checked on `c`.
fn answers_as_redisbloom(c: &mut redis::Connection, key: &str, record: &Json, way: &str) {
    answers_as(c, key, key, record, way);
}

/// RedisBloom's answers about its fixture `theirs` (`record`), checked on
/// `key`.
fn answers_as(c: &mut redis::Connection, key: &str, theirs: &str, record: &Json, way: &str) {
    assert_eq!(
        recorded::info(c, key),
        record["info"],
        "{key} {way}: BF.INFO"
    );
    let card: i64 = reply(c, &["BF.CARD", key]);
    assert_eq!(card, record["card"].as_i64().unwrap(), "{key} {way}");
    assert_eq!(
        recorded::positives(c, key, 1000),
        recorded::expected_positives(record),
        "{key} {way}: probes"
    );
    let theirs =
        std::fs::read(recorded::fixtures(FIXTURES).join(format!("{theirs}.dump"))).unwrap();
    assert_eq!(
        dumped_fields(c, key),
        Some(theirs[..theirs.len() - 10].to_vec()),
        "{key} {way}: DUMP differs from RedisBloom's"
    );
}

/// `key`'s `BF.SCANDUMP` stream as RedisBloom handed it out.
fn recorded_stream(key: &str) -> Vec<(i64, Vec<u8>)> {
    let bytes =
        std::fs::read(recorded::fixtures(FIXTURES).join(format!("{key}.scandump"))).unwrap();
    let mut chunks = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let iterator = i64::from_le_bytes(rest[..8].try_into().unwrap());
        let length = u64::from_le_bytes(rest[8..16].try_into().unwrap()) as usize;
        chunks.push((iterator, rest[16..16 + length].to_vec()));
        rest = &rest[16 + length..];
    }
    chunks
}

const EDGE_KEYS: [&str; 3] = ["tiny", "last", "tiny_nonscaling"];

/// What RedisBloom builds at the smallest rates a double holds (a first
/// link at 5e-324, whose next link's rate is 0; a chain grown until its
/// next link's rate is 0) comes in every way, answers as RedisBloom's did,
/// refuses the next link as RedisBloom does, and reloads. (Every way in
/// refused them, the next link's rate underflowing: and a full sync from a
/// RedisBloom primary holding one killed the replica.)
#[test]
fn redisbloom_s_filters_at_the_smallest_rates_come_in_every_way() {
    let record = recorded::recorded(FIXTURES);
    let payload = |key: &str| {
        for_both_servers(
            &std::fs::read(recorded::fixtures(FIXTURES).join(format!("{key}.dump"))).unwrap(),
        )
    };
    for kind in KINDS {
        let mut server = server(kind);
        let mut c = server.connect();
        for key in EDGE_KEYS {
            let theirs = &record["keys"][key];
            let restored = format!("{key}:restore");
            assert_eq!(
                restore(&mut c, key, &payload(key)).map_err(|e| error_text(&e)),
                Ok("OK".to_string()),
                "{kind:?}: RESTORE {key}"
            );
            answers_as_redisbloom(&mut c, key, theirs, "restored");
            common::load_chunks(&mut c, &restored, &recorded_stream(key));
            answers_as(&mut c, &restored, key, theirs, "streamed");
            // The last item RedisBloom refused is refused here, as there.
            let count = theirs["added"].as_array().unwrap().len();
            assert_eq!(
                add(&mut c, key, &format!("{key}:item:{}", count - 1)),
                theirs["added"][count - 1],
                "{kind:?}: {key}"
            );
            let _: i64 = reply(&mut c, &["DEL", &restored]);
        }
        assert_reloads_everywhere(&mut server, &EDGE_KEYS);
        // An RDB file that holds them.
        let payloads: Vec<Vec<u8>> = EDGE_KEYS.iter().map(|key| payload(key)).collect();
        let values: Vec<(&str, &[u8])> = EDGE_KEYS
            .iter()
            .zip(&payloads)
            .map(|(key, payload)| (*key, payload.as_slice()))
            .collect();
        let mut from_rdb = Server::unlaunched(kind, &[], &[]);
        std::fs::write(from_rdb.dir.join("dump.rdb"), rdb_file(&values)).unwrap();
        from_rdb
            .launch()
            .expect("the server loads RedisBloom's filters");
        let mut c = from_rdb.connect();
        for key in EDGE_KEYS {
            answers_as_redisbloom(&mut c, key, &record["keys"][key], "from an RDB file");
        }
    }
}

/// RedisBloom's own stream (its AOF, or a RedisBloom primary's) reserving
/// them, and its adds, replayed: the same filters and answers. A client's
/// `BF.RESERVE` at such a rate makes the same filter, which answers each
/// add as RedisBloom did. (Both were "ERR could not create filter".)
#[test]
fn reserves_at_the_smallest_rates_make_redisbloom_s_filter() {
    let record = recorded::recorded(FIXTURES);
    for kind in KINDS {
        let mut aof = Vec::new();
        for key in EDGE_KEYS {
            let theirs = &record["keys"][key];
            let reserve: Vec<&str> = theirs["reserve"]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| arg.as_str().unwrap())
                .collect();
            let reserve: Vec<&[u8]> = reserve.iter().map(|arg| arg.as_bytes()).collect();
            aof.push(resp(&reserve));
            for index in 0..theirs["added"].as_array().unwrap().len() {
                let item = format!("{key}:item:{index}");
                aof.push(resp(&[b"BF.ADD", key.as_bytes(), item.as_bytes()]));
            }
        }
        let mut replayed = Server::unlaunched(kind, &[], &["--appendonly", "yes"]);
        std::fs::write(replayed.dir.join("appendonly.aof"), aof.concat()).unwrap();
        replayed.launch().expect("the server replays the AOF");
        let mut c = replayed.connect();
        for key in EDGE_KEYS {
            answers_as_redisbloom(&mut c, key, &record["keys"][key], "replayed");
        }
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        for key in EDGE_KEYS {
            let theirs = &record["keys"][key];
            let reserve: Vec<&str> = theirs["reserve"]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| arg.as_str().unwrap())
                .collect();
            ok(&mut c, &reserve);
            let added: Vec<Json> = (0..theirs["added"].as_array().unwrap().len())
                .map(|index| add(&mut c, key, &format!("{key}:item:{index}")))
                .collect();
            assert_eq!(Json::from(added), theirs["added"], "{kind:?}: {key}");
            answers_as_redisbloom(&mut c, key, theirs, "reserved by a client");
        }
    }
}

/// RedisBloom's replies at the smallest rates, and to a dump's bad
/// iterator: a reserve it cannot size is "could not create filter", one
/// whose bits the allocator refuses is "Insufficient memory" (a 3 GiB
/// address space: 208 GB of bits), a dump's iterator is checked after the
/// key. (The last two were "could not create filter" and "ERR not found".)
#[test]
fn replies_at_the_smallest_rates_are_redisbloom_s() {
    let record = recorded::recorded(FIXTURES);
    for kind in KINDS {
        let server = Server::start_with_address_space(kind, 3 << 30);
        let mut c = server.connect();
        ok(&mut c, &["BF.RESERVE", "tiny", "1e-323", "10"]);
        for (command, theirs) in record["replies"].as_object().unwrap() {
            let args: Vec<&str> = command.split(' ').collect();
            let ours = match redis::cmd(args[0])
                .arg(&args[1..])
                .query::<redis::Value>(&mut c)
            {
                Ok(redis::Value::Okay) => Json::from("OK"),
                Ok(other) => panic!("{kind:?}: {command}: {other:?}"),
                Err(error) => serde_json::json!({ "error": error_text(&error) }),
            };
            assert_eq!(&ours, theirs, "{kind:?}: {command}");
        }
        assert_eq!(
            refusal(
                &mut c,
                &["BF.RESERVE", "huge", "5e-324", "1073741824", "NONSCALING"]
            ),
            "ERR Insufficient memory to create filter",
            "{kind:?}"
        );
    }
}

/// 4,097 sub-filters at 1% (RedisBloom's checks pass: its `BF.LOADCHUNK`
/// takes the header, and its RDB then holds it): one more than the
/// module holds.
fn past_the_link_limit() -> Chain {
    Chain::of(FORCE64 | NOROUND, 2, vec![Link::word(1, 1); 4097])
}

/// A filter the module cannot hold is refused with an error where a
/// client sends it (`BF.LOADCHUNK`, `RESTORE`), and a load that meets it
/// (an RDB file, an AOF's preamble) holds no key there and goes on, its
/// other keys loaded, and the bare adds that follow in the AOF for that
/// key make none. (The server refused to start.)
#[test]
fn a_filter_past_the_limits_is_refused_and_a_load_holds_no_key_there() {
    let over = past_the_link_limit();
    let fits = Chain::of(FORCE64 | NOROUND, 2, vec![Link::word(4, 3)]);
    let (over_payload, fits_payload) = (restore_payload(&over), restore_payload(&fits));
    let file = rdb_file(&[("over", &over_payload), ("fits", &fits_payload)]);
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        assert_eq!(
            load_chunk(&mut c, "over", 1, &header(&over)).map_err(|e| error_text(&e)),
            Err("ERR received bad data".to_string()),
            "{kind:?}"
        );
        assert!(restore(&mut c, "over", &over_payload).is_err(), "{kind:?}");
        assert!(!exists(&mut c, "over"), "{kind:?}");
        // An RDB file.
        let mut loaded = Server::unlaunched(kind, &[], &[]);
        std::fs::write(loaded.dir.join("dump.rdb"), &file).unwrap();
        loaded.launch().expect("the server starts");
        let mut c = loaded.connect();
        assert!(!exists(&mut c, "over"), "{kind:?}: RDB");
        let card: i64 = reply(&mut c, &["BF.CARD", "fits"]);
        assert_eq!(card, 3, "{kind:?}: RDB");
        assert!(
            loaded.log().contains("'over'"),
            "{kind:?}: {}",
            loaded.log()
        );
        ok(&mut c, &["DEBUG", "RELOAD"]);
        drop(loaded);
        // An AOF: the same as its preamble, then RedisBloom's bare adds.
        let mut aof = file.clone();
        aof.extend(resp(&[b"BF.ADD", b"over", b"a"]));
        aof.extend(resp(&[b"BF.ADD", b"fits", b"a"]));
        aof.extend(resp(&[b"BF.ADD", b"other", b"a"]));
        let mut replayed = Server::unlaunched(kind, &[], &["--appendonly", "yes"]);
        std::fs::write(replayed.dir.join("appendonly.aof"), aof).unwrap();
        replayed.launch().expect("the server replays the AOF");
        let mut c = replayed.connect();
        assert!(!exists(&mut c, "over"), "{kind:?}: AOF");
        let cards: Vec<i64> = ["fits", "other"]
            .iter()
            .map(|key| reply(&mut c, &["BF.CARD", key]))
            .collect();
        // (`fits` has every bit set: `a` was there.)
        assert_eq!(cards, [3, 1], "{kind:?}: AOF");
    }
}

/// `bf-memory-limit-per-filter` holds for a RedisBloom filter that comes
/// in by `RESTORE` or `COPY` (a 586 KB payload made a 51.5 MB filter under
/// a 1 MB limit), as for one that comes in by `BF.LOADCHUNK`.
#[test]
fn restore_and_copy_of_a_redisbloom_filter_keep_the_memory_limit() {
    // One link of about 50 MB at 1%, all zero: its payload compresses.
    let bits = 400_000_000u64;
    let big = Chain::of(
        FORCE64 | NOROUND,
        2,
        vec![Link {
            bytes: bits / 8,
            bits,
            entries: 41_732_000,
            ..Link::word(0, 0)
        }],
    );
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        assert_eq!(load_chunk(&mut c, "big", 1, &header(&big)).unwrap(), "OK");
        ok(&mut c, &["BF.RESERVE", "small", "0.01", "1000"]);
        let _: bool = reply(&mut c, &["BF.ADD", "small", "a"]);
        let payload = common::dump_payload(&mut c, "big").unwrap();
        common::config_set(&mut c, "bf.bf-memory-limit-per-filter", "1mb");
        let restored = restore(&mut c, "restored", &payload).map_err(|e| error_text(&e));
        assert!(restored.is_err(), "{kind:?}: RESTORE took it");
        let copied: i64 = redis::cmd("COPY")
            .arg(&["big", "copied"])
            .query(&mut c)
            .unwrap_or(0);
        assert_eq!(copied, 0, "{kind:?}: COPY took it");
        for key in ["restored", "copied"] {
            assert!(!exists(&mut c, key), "{kind:?}: {key}");
        }
        assert_eq!(
            load_chunk(&mut c, "loaded", 1, &header(&big)).map_err(|e| error_text(&e)),
            Err(refusal(&mut c, &["BF.RESERVE", "x", "0.01", "10000000"])),
            "{kind:?}"
        );
        // Within the limit, both go on.
        let small = common::dump_payload(&mut c, "small").unwrap();
        assert_eq!(restore(&mut c, "small2", &small).unwrap(), "OK");
        let copied: i64 = reply(&mut c, &["COPY", "small", "small3"]);
        assert_eq!(copied, 1, "{kind:?}");
    }
}

/// A replica with this module follows a RedisBloom primary (RedisBloom's
/// `.so` in `REDISBLOOM_SO`; without it the test says so and passes, as
/// `tests/differential.rs` does). Its full sync takes the filters at the
/// smallest rates, byte for byte (the sync killed the replica); one past
/// the module's limits (RedisBloom took its 4,097-link header) is held as
/// no key, the replica up, and the primary's adds to it make none; one
/// the primary's adds take past 4,096 links is dropped there, never held
/// as a filter that is not the primary's.
#[test]
fn a_replica_of_a_redisbloom_primary_holds_what_it_can_and_stays_up() {
    let Some(redisbloom) = std::env::var_os("REDISBLOOM_SO").map(std::path::PathBuf::from) else {
        eprintln!(
            "redisbloom_edges: a_replica_of_a_redisbloom_primary_holds_what_it_can_and_stays_up \
             skipped: set REDISBLOOM_SO to RedisBloom's redisbloom.so"
        );
        return;
    };
    let record = recorded::recorded(FIXTURES);
    let primary = Server::start_with_other_module(Kind::Valkey, &redisbloom);
    let mut p = primary.connect();
    for key in EDGE_KEYS {
        let reserve: Vec<&str> = record["keys"][key]["reserve"]
            .as_array()
            .unwrap()
            .iter()
            .map(|arg| arg.as_str().unwrap())
            .collect();
        ok(&mut p, &reserve);
        for index in 0..record["keys"][key]["added"].as_array().unwrap().len() {
            let _ = add(&mut p, key, &format!("{key}:item:{index}"));
        }
    }
    assert_eq!(
        load_chunk(&mut p, "over", 1, &header(&past_the_link_limit())).unwrap(),
        "OK",
        "RedisBloom took the header"
    );
    assert_eq!(
        load_chunk(&mut p, "long", 1, &header(&links_at_the_limit())).unwrap(),
        "OK"
    );
    let mut replica = Server::start(Kind::Valkey, &[], &[]);
    let mut r = replica.connect();
    common::replicate(&mut r, &primary);
    assert!(common::replica_caught_up(&mut p, &mut r), "no sync");
    assert!(replica.is_alive(), "the replica died in its full sync");
    for key in EDGE_KEYS {
        answers_as_redisbloom(&mut r, key, &record["keys"][key], "synced");
    }
    assert_eq!(dumped_fields(&mut r, "long"), dumped_fields(&mut p, "long"));
    assert!(!exists(&mut r, "over"), "a filter past the limits");
    assert!(replica.log().contains("'over'"), "{}", replica.log());
    for (key, item) in [("over", "a"), ("long", "new"), ("tiny", "tiny:item:11")] {
        let _ = add(&mut p, key, item);
    }
    assert!(common::replica_caught_up(&mut p, &mut r), "fell behind");
    assert!(replica.is_alive(), "the replica died");
    for key in ["over", "long"] {
        assert!(!exists(&mut r, key), "{key}: held past the limits");
    }
    answers_as_redisbloom(&mut r, "tiny", &record["keys"]["tiny"], "after the stream");
}
