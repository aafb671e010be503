//! `MEMORY USAGE` of a cuckoo filter is never more than RedisBloom's for
//! the same key: the filters RedisBloom wrote (`tests/fixtures/redisbloom_cf`,
//! before and after its commands), and 260 keys RedisBloom made step by step
//! (`memory.json`, written by `bench/redisbloom_cf_memory.py
//! REDISBLOOM.so`): `CF.RESERVE` of every capacity from the least to
//! 10,000,000 at bucket sizes 1, 2, 3, 4 and 255; filters of those bucket
//! sizes and expansions 1, 2 and 4 grown by inserts to four sub-filters;
//! `CF.LOADCHUNK` headers of up to three sub-filters of up to 10,000,000
//! items (untouched `calloc`); `CF.ADD` on a new key, grown. Each step's
//! number of sub-filters and `CF.INFO` `Size` must be RedisBloom's too.
//!
//! With `REDISBLOOM_SO` set to RedisBloom's `.so`, the same steps also run
//! on RedisBloom, live, and the record must be what it answers now:
//!
//! REDISBLOOM_SO=/path/to/redisbloom.so cargo test -p atomic-bloom-redis --test cuckoo_memory

#[path = "cf_fixtures/mod.rs"]
mod cf_fixtures;
mod common;
#[path = "bf_stream/resp.rs"]
#[allow(dead_code)]
mod resp;

use cf_fixtures::{bytes, folder, json_of, record};
use common::{Kind, Server};
use resp::{Conn, Reply};
use serde_json::Value as Json;

/// What `MEMORY USAGE` may differ by with the module's own count equal:
/// the server's part (its object for the key, which embeds the key's name)
/// is `malloc_usable_size` of a block (Valkey here is built with libc
/// malloc), and glibc hands out a free chunk up to 16 bytes larger than
/// asked when the rest would be too small to split off, so the same
/// `RESTORE` measured 65,712 bytes in one CI run and 65,696 (RedisBloom's
/// figure) in the next four here. The module's part (its 40 bytes, 16 a
/// sub-filter, one a slot) is exact; 16 bytes is one step of the server's
/// allocator, less than a sub-filter's entry or any slot row RedisBloom
/// could be ahead by.
const SERVER_ALLOCATOR_SLACK: i64 = 16;

/// What a key measured after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Measured {
    filters: i64,
    size: i64,
    memory_usage: i64,
}

fn measure(c: &mut Conn, key: &str) -> Measured {
    let info = json_of(&c.call(&["CF.INFO", key]));
    let field = |name: &str| {
        let fields = info
            .as_array()
            .unwrap_or_else(|| panic!("CF.INFO {key}: {info}"));
        let at = fields.iter().position(|field| field == name).unwrap();
        fields[at + 1].as_i64().unwrap()
    };
    Measured {
        filters: field("Number of filters"),
        size: field("Size"),
        memory_usage: json_of(&c.call(&["MEMORY", "USAGE", key]))
            .as_i64()
            .unwrap(),
    }
}

fn recorded(step: &Json) -> Measured {
    Measured {
        filters: step["filters"].as_i64().unwrap(),
        size: step["size"].as_i64().unwrap(),
        memory_usage: step["memory_usage"].as_i64().unwrap(),
    }
}

/// Runs one recorded step on `key`: a command, the items `item:a` to
/// `item:b` (one `CF.INSERT`), or a `CF.LOADCHUNK` header.
fn replay(c: &mut Conn, key: &str, step: &Json) {
    let reply = if let Some(args) = step["args"].as_array() {
        let args: Vec<&str> = args.iter().map(|arg| arg.as_str().unwrap()).collect();
        c.call(&args)
    } else if let Some(range) = step["insert"].as_array() {
        let (from, to) = (range[0].as_u64().unwrap(), range[1].as_u64().unwrap());
        let mut args = vec![
            "CF.INSERT".to_string(),
            key.to_string(),
            "ITEMS".to_string(),
        ];
        args.extend((from..to).map(|i| format!("item:{i}")));
        c.call(&args)
    } else {
        let hex = step["header"].as_str().unwrap();
        let header: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
            .collect();
        c.call(&[b"CF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", &header])
    };
    assert!(reply.error().is_none(), "{key} {step}: {reply}");
}

fn memory_record() -> Json {
    let text = std::fs::read_to_string(folder().join("memory.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every step of every key of `memory.json`, here (and on RedisBloom when
/// `REDISBLOOM_SO` names it): the same sub-filters and `Size`, and
/// `MEMORY USAGE` at most RedisBloom's.
#[test]
fn memory_usage_is_at_most_redisbloom_s_for_filters_of_every_shape() {
    let record = memory_record();
    let ours = Server::start(Kind::Valkey, &[], &[]);
    let mut c = Conn::open(ours.port, false);
    let theirs = std::env::var_os("REDISBLOOM_SO")
        .map(|so| Server::start_with_other_module(Kind::Valkey, std::path::Path::new(&so)));
    let mut live = theirs.as_ref().map(|server| Conn::open(server.port, false));
    if live.is_none() {
        eprintln!("cuckoo_memory: against the record only: set REDISBLOOM_SO to check it live");
    }
    let mut failures = Vec::new();
    let mut steps = 0;
    let cases = record["cases"].as_array().unwrap();
    for case in cases {
        let key = case["key"].as_str().unwrap();
        for step in case["steps"].as_array().unwrap() {
            steps += 1;
            replay(&mut c, key, step);
            let here = measure(&mut c, key);
            let expected = recorded(step);
            if let Some(live) = live.as_mut() {
                replay(live, key, step);
                let now = measure(live, key);
                assert_eq!(
                    now, expected,
                    "{key} {step}: RedisBloom now, and the record"
                );
            }
            if here.filters != expected.filters
                || here.size != expected.size
                || here.memory_usage > expected.memory_usage + SERVER_ALLOCATOR_SLACK
            {
                failures.push(format!(
                    "{key} after {step}: here {here:?}, RedisBloom {expected:?}"
                ));
            }
        }
        assert!(c.call(&["DEL", key]).as_int() == Some(1));
        if let Some(live) = live.as_mut() {
            assert!(live.call(&["DEL", key]).as_int() == Some(1));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {steps} steps of {} keys over RedisBloom's (first 20):\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(20)].join("\n")
    );
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

/// Every filter RedisBloom wrote (`record.json`: `KEY.dump` before its
/// commands, `KEY.after.dump` after them), `RESTORE`d here: `MEMORY USAGE`
/// at most what RedisBloom's was for it.
#[test]
fn memory_usage_of_redisbloom_s_own_filters_is_at_most_its_own() {
    let record = record();
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = Conn::open(server.port, false);
    let mut over = Vec::new();
    for (stage, suffix) in [("before", ""), ("after", ".after")] {
        for (name, expected) in record[stage].as_object().unwrap() {
            let payload = bytes(&format!("{name}{suffix}.dump"));
            assert!(restore(&mut c, name, &payload).is_ok(), "{stage} {name}");
            let ours = json_of(&c.call(&["MEMORY", "USAGE", name]))
                .as_i64()
                .unwrap();
            let theirs = expected["memory_usage"].as_i64().unwrap();
            if ours > theirs + SERVER_ALLOCATOR_SLACK {
                let filters = &expected["info"][5];
                over.push(format!(
                    "{stage} {name}: {ours} here, {theirs} in RedisBloom, {filters} sub-filters"
                ));
            }
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}
