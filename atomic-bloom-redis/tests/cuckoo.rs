//! The `CF.*` commands as a client and an operator meet them: RedisBloom's
//! replies (RESP2 and RESP3) and error texts, its configs, its ACL
//! category and command docs; and where this module does better: a
//! client's duplicate flood grows a filter once at most (RedisBloom's issue 533),
//! `bf-memory-limit-per-filter` binds cuckoo filters too, and `CF.COMPACT`,
//! which moves fingerprints, is a write (RedisBloom registers it
//! read-only: a read-only replica would change its copy). On Valkey and
//! Redis 7.0 (no module ACL categories there).

mod common;

use common::{config_set, ok, refusal, reply, Kind, Server, KINDS};
use redis::Value;

/// `CF.*` replies as RedisBloom gives them (checked against its `.so` by
/// `tests/differential_cf.rs`; these are RedisBloom's own flow tests'
/// values), in RESP2 and RESP3.
#[test]
fn replies_and_errors_as_redisbloom_s() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(&mut c, &["CF.RESERVE", "a", "1000"]);
        let info: Vec<Value> = reply(&mut c, &["CF.INFO", "a"]);
        let expected = [
            ("Size", 1080),
            ("Number of buckets", 512),
            ("Number of filters", 1),
            ("Number of items inserted", 0),
            ("Number of items deleted", 0),
            ("Bucket size", 2),
            ("Expansion rate", 1),
            ("Max iterations", 20),
        ];
        let flat: Vec<Value> = expected
            .iter()
            .flat_map(|(name, value)| [Value::SimpleString(name.to_string()), Value::Int(*value)])
            .collect();
        assert_eq!(info, flat, "{kind:?}");
        let debug: String = reply(&mut c, &["CF.DEBUG", "a"]);
        assert_eq!(
            debug,
            "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
        let scan: Vec<Value> = reply(&mut c, &["CF.SCANDUMP", "a", "0"]);
        assert_eq!(
            scan,
            vec![Value::Int(0), Value::Nil],
            "an empty filter's dump"
        );
        let added: i64 = reply(&mut c, &["CF.ADD", "a", "k1"]);
        let again: i64 = reply(&mut c, &["CF.ADD", "a", "k1"]);
        let count: i64 = reply(&mut c, &["CF.COUNT", "a", "k1"]);
        assert_eq!((added, again, count), (1, 1, 2));
        let nx: Vec<i64> = reply(&mut c, &["CF.INSERTNX", "a", "ITEMS", "k1", "k2"]);
        assert_eq!(nx, vec![0, 1]);
        let deleted: Vec<i64> = (0..3)
            .map(|_| reply(&mut c, &["CF.DEL", "a", "k1"]))
            .collect();
        assert_eq!(deleted, vec![1, 1, 0]);
        ok(&mut c, &["CF.RESERVE", "b", "1000", "EXPANSION", "3"]);
        let debug: String = reply(&mut c, &["CF.DEBUG", "b"]);
        assert!(debug.ends_with("expansion:4"), "rounded up: {debug}");
        ok(&mut c, &["SET", "s", "v"]);
        let missing: Vec<i64> = reply(&mut c, &["CF.MEXISTS", "s", "x"]);
        assert_eq!(missing, vec![0], "another type reads as missing");
        for (command, expected) in [
            (&["CF.RESERVE", "a", "1000"][..], "ERR item exists"),
            (
                &["CF.RESERVE", "t", "1"],
                "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
            ),
            (&["CF.RESERVE", "t", "str"], "Bad capacity"),
            (
                &["CF.RESERVE", "t", "10", "MAXITERATIONS", "0"],
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            (
                &["CF.RESERVE", "t", "10", "BUCKETSIZE", "x"],
                "Couldn't parse BUCKETSIZE",
            ),
            (
                &["CF.RESERVE", "t", "10", "EXPANSION", "32769"],
                "EXPANSION: value must be in the range [0, 32768]",
            ),
            (
                &["CF.INSERT", "t", "CAPACITY", "3", "ITEMS", "x"],
                "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
            ),
            (
                &["CF.INSERT", "t", "NOCREATE", "ITEMS", "x"],
                "ERR not found",
            ),
            (
                &["CF.INSERT", "t", "bogus", "ITEMS", "x"],
                "Unknown argument received",
            ),
            (&["CF.DEL", "t", "x"], "Not found"),
            (&["CF.COMPACT", "t"], "Cuckoo filter was not found"),
            (&["CF.INFO", "t"], "ERR not found"),
            (
                &["CF.INFO", "s"],
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (&["CF.SCANDUMP", "a", "-1"], "Invalid position"),
            (&["CF.LOADCHUNK", "t", "0", "x"], "Invalid position"),
            (&["CF.LOADCHUNK", "t", "1", "short"], "Invalid header"),
            (&["CF.LOADCHUNK", "t", "9", "x"], "ERR not found"),
            (&["CF.LOADCHUNK", "a", "4000", "x"], "Couldn't load chunk!"),
        ] {
            assert_eq!(refusal(&mut c, command), expected, "{kind:?} {command:?}");
        }
        let arity = refusal(&mut c, &["CF.ADD", "a"]);
        assert!(arity.contains("wrong number of arguments"), "{arity}");
        // EXPANSION 0: full is refused cleanly (RedisBloom's issue 481).
        ok(&mut c, &["CF.RESERVE", "full", "4", "EXPANSION", "0"]);
        for item in ["1", "2", "3", "4"] {
            let added: i64 = reply(&mut c, &["CF.ADD", "full", item]);
            assert_eq!(added, 1);
        }
        let refused: Vec<i64> = reply(&mut c, &["CF.INSERT", "full", "ITEMS", "5", "6"]);
        assert_eq!(refused, vec![-1, -1]);
        assert_eq!(refusal(&mut c, &["CF.ADD", "full", "5"]), "Filter is full");
        // RESP3: booleans, but integers for CF.INSERTNX and CF.COUNT.
        let mut c3 = server.connect_resp3();
        let added: Value = reply(&mut c3, &["CF.ADD", "r3", "x"]);
        assert_eq!(added, Value::Boolean(true));
        let inserted: Value = reply(&mut c3, &["CF.INSERT", "r3", "ITEMS", "x", "y"]);
        assert_eq!(inserted, Value::Array(vec![Value::Boolean(true); 2]));
        let nx: Value = reply(&mut c3, &["CF.INSERTNX", "r3", "ITEMS", "x", "z"]);
        assert_eq!(nx, Value::Array(vec![Value::Int(0), Value::Int(1)]));
        let count: Value = reply(&mut c3, &["CF.COUNT", "r3", "x"]);
        assert_eq!(count, Value::Int(2));
        let full: Value = reply(&mut c3, &["CF.INSERT", "full", "ITEMS", "7"]);
        assert_eq!(full, Value::Array(vec![Value::Boolean(false)]));
        let info: Value = reply(&mut c3, &["CF.INFO", "a"]);
        assert!(
            matches!(info, Value::Map(ref pairs) if pairs.len() == 8),
            "{info:?}"
        );
    }
}

/// A client's duplicate flood grows a filter by one sub-filter at most:
/// once the filter has grown and an item's two buckets in the newest
/// sub-filter hold only its fingerprint, one more copy answers as a full
/// filter (RedisBloom grows a whole sub-filter per 2 · bucket size copies:
/// 65,535 sub-filters and 43 s for its own test of 140,000 copies, its
/// issue 533's 8 GB). Distinct items still grow it.
#[test]
fn duplicates_grow_a_client_s_filter_once_at_most() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = server.connect();
    ok(&mut c, &["CF.RESERVE", "hot", "64", "EXPANSION", "2"]);
    let answers: Vec<i64> = (0..20)
        .map(|_| {
            redis::cmd("CF.ADD")
                .arg("hot")
                .arg("same")
                .query::<i64>(&mut c)
                .unwrap_or(-1)
        })
        .collect();
    // Four copies in the first sub-filter, four in a second, no third.
    assert_eq!(answers[..8], [1; 8]);
    assert!(
        answers[8..].iter().all(|answer| *answer == -1),
        "{answers:?}"
    );
    assert_eq!(
        refusal(&mut c, &["CF.ADD", "hot", "same"]),
        "Filter is full"
    );
    let debug: String = reply(&mut c, &["CF.DEBUG", "hot"]);
    assert!(
        debug.contains("items:8 ") && debug.contains("filters:2 "),
        "{debug}"
    );
    // RedisBloom's test_counter_overflow_with_large_number_of_items.
    ok(
        &mut c,
        &["CF.RESERVE", "cf", "2", "BUCKETSIZE", "1", "EXPANSION", "1"],
    );
    let started = std::time::Instant::now();
    let flood: Vec<i64> = redis::cmd("CF.INSERT")
        .arg("cf")
        .arg("ITEMS")
        .arg(vec!["1 "; 140_000])
        .query(&mut c)
        .unwrap();
    assert_eq!(flood.iter().filter(|answer| **answer == 1).count(), 4);
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    let debug: String = reply(&mut c, &["CF.DEBUG", "cf"]);
    assert!(debug.contains("filters:2 "), "{debug}");
    // Distinct items grow it.
    let distinct: Vec<String> = (0..500).map(|i| format!("item:{i}")).collect();
    let added: Vec<i64> = redis::cmd("CF.INSERT")
        .arg("hot")
        .arg("ITEMS")
        .arg(&distinct)
        .query(&mut c)
        .unwrap();
    assert!(added.iter().all(|answer| *answer == 1));
    let debug: String = reply(&mut c, &["CF.DEBUG", "hot"]);
    assert!(!debug.contains("filters:2 "), "{debug}");
}

/// `bf-memory-limit-per-filter` binds a client's cuckoo filters as it
/// binds Bloom filters: creation, growth and `CF.LOADCHUNK` headers past it
/// are refused; `cf-max-expansions` refuses adds to a filter of that many
/// sub-filters, as RedisBloom does.
#[test]
fn the_memory_limit_and_max_expansions_bind_clients() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = server.connect();
    ok(&mut c, &["CF.RESERVE", "big", "1000000"]);
    let header: Vec<Value> = {
        let _: i64 = reply(&mut c, &["CF.ADD", "big", "x"]);
        reply(&mut c, &["CF.SCANDUMP", "big", "0"])
    };
    let Value::BulkString(header) = &header[1] else {
        panic!("{header:?}")
    };
    config_set(&mut c, "bf.bf-memory-limit-per-filter", "100000");
    let over = refusal(&mut c, &["CF.RESERVE", "huge", "1000000"]);
    assert!(over.contains("bf-memory-limit-per-filter"), "{over}");
    let over = redis::cmd("CF.LOADCHUNK")
        .arg("copy")
        .arg(1)
        .arg(header.as_slice())
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(common::error_text(&over).contains("bf-memory-limit-per-filter"));
    ok(&mut c, &["CF.RESERVE", "small", "4096"]);
    let items: Vec<String> = (0..100_000).map(|i| format!("i:{i}")).collect();
    let answers: Vec<i64> = redis::cmd("CF.INSERT")
        .arg("small")
        .arg("ITEMS")
        .arg(&items)
        .query(&mut c)
        .unwrap();
    assert!(answers.contains(&-1), "growth past the limit is refused");
    let memory: i64 = reply(&mut c, &["MEMORY", "USAGE", "small"]);
    assert!(memory <= 100_000 + 200, "{memory}");
    config_set(&mut c, "bf.bf-memory-limit-per-filter", "0");
    config_set(&mut c, "bf.cf-max-expansions", "2");
    ok(&mut c, &["CF.RESERVE", "m", "4"]);
    let grown: Vec<i64> = redis::cmd("CF.INSERT")
        .arg("m")
        .arg("ITEMS")
        .arg(&items[..8])
        .query(&mut c)
        .unwrap();
    assert!(grown.iter().all(|answer| *answer == 1), "{grown:?}");
    assert_eq!(
        refusal(&mut c, &["CF.ADD", "m", "z"]),
        "Maximum expansions reached"
    );
}

/// The five `cf-*` configs, named, ranged and worded as RedisBloom's (on
/// Valkey and Redis 7.0 the server prefixes them: `bf.cf-bucket-size`),
/// moving each other's ranges as RedisBloom's do, set by
/// `CF_MAX_EXPANSIONS` at load, and giving new filters their values.
#[test]
fn cf_configs_as_redisbloom_s() {
    for kind in KINDS {
        let server = Server::start(kind, &["CF_MAX_EXPANSIONS", "7"], &[]);
        let mut c = server.connect();
        let all: Vec<String> = reply(&mut c, &["CONFIG", "GET", "bf.cf-*"]);
        let mut pairs: Vec<(String, String)> = all
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect();
        pairs.sort();
        let expected = [
            ("bf.cf-bucket-size", "2"),
            ("bf.cf-expansion-factor", "1"),
            ("bf.cf-initial-size", "1024"),
            ("bf.cf-max-expansions", "7"),
            ("bf.cf-max-iterations", "20"),
        ];
        let expected: Vec<(String, String)> = (expected.iter())
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        assert_eq!(pairs, expected, "{kind:?}");
        for (name, value, error) in [
            (
                "bf.cf-bucket-size",
                "256",
                "Value for `cf-bucket-size` must be in the range [1, 255]",
            ),
            (
                "bf.cf-bucket-size",
                "x",
                "Invalid value for `cf-bucket-size`",
            ),
            (
                "bf.cf-max-iterations",
                "0",
                "must be in the range [1, 65535]",
            ),
            (
                "bf.cf-expansion-factor",
                "32769",
                "must be in the range [0, 32768]",
            ),
            (
                "bf.cf-max-expansions",
                "65537",
                "must be in the range [1, 65536]",
            ),
            (
                "bf.cf-initial-size",
                "3",
                "must be in the range [4, 1073741824]",
            ),
        ] {
            let text = refusal(&mut c, &["CONFIG", "SET", name, value]);
            assert!(text.contains(error), "{kind:?} {name} {value}: {text}");
        }
        config_set(&mut c, "bf.cf-bucket-size", "4");
        let text = refusal(&mut c, &["CF.INSERT", "x", "CAPACITY", "7", "ITEMS", "a"]);
        assert!(text.starts_with("Capacity must be in the range"), "{text}");
        config_set(&mut c, "bf.cf-initial-size", "100");
        let text = refusal(&mut c, &["CF.RESERVE", "x", "1000", "BUCKETSIZE", "60"]);
        assert_eq!(text, "BUCKETSIZE: value must be in the range [1, 50]");
        config_set(&mut c, "bf.cf-max-iterations", "9");
        config_set(&mut c, "bf.cf-expansion-factor", "3");
        let _: i64 = reply(&mut c, &["CF.ADD", "new", "a"]);
        let debug: String = reply(&mut c, &["CF.DEBUG", "new"]);
        assert_eq!(
            debug, "bktsize:4 buckets:32 items:1 deletes:0 filters:1 max_iterations:9 expansion:4",
            "{kind:?}"
        );
    }
}

/// ACL: every `CF.*` command is in RedisBloom's category `cuckoo` (not
/// `bloom`) and in `@read` or `@write` (`CF.COMPACT` a write); a user
/// with read-only key permissions reads and dumps cuckoo filters and
/// writes none. `COMMAND DOCS` and `COMMAND GETKEYS` serve them. Valkey
/// (Redis 7.0 has no module ACL categories).
#[test]
fn acl_categories_and_command_info_as_redisbloom_s() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = server.connect();
    let mut cuckoo: Vec<String> = reply(&mut c, &["ACL", "CAT", "cuckoo"]);
    cuckoo.sort();
    let mut expected: Vec<String> = [
        "cf.add",
        "cf.addnx",
        "cf.compact",
        "cf.count",
        "cf.debug",
        "cf.del",
        "cf.exists",
        "cf.info",
        "cf.insert",
        "cf.insertnx",
        "cf.loadchunk",
        "cf.mexists",
        "cf.reserve",
        "cf.scandump",
    ]
    .iter()
    .map(|name| name.to_string())
    .collect();
    expected.sort();
    assert_eq!(cuckoo, expected);
    let bloom: Vec<String> = reply(&mut c, &["ACL", "CAT", "bloom"]);
    assert!(
        bloom.iter().all(|name| !name.starts_with("cf.")),
        "{bloom:?}"
    );
    let write: Vec<String> = reply(&mut c, &["ACL", "CAT", "write"]);
    assert!(write.contains(&"cf.compact".to_string()));
    ok(
        &mut c,
        &["ACL", "SETUSER", "bloomy", "on", ">pw", "~*", "+@bloom"],
    );
    ok(
        &mut c,
        &["ACL", "SETUSER", "reader", "on", ">pw", "%R~*", "+@cuckoo"],
    );
    ok(&mut c, &["CF.RESERVE", "cf", "1000"]);
    let _: i64 = reply(&mut c, &["CF.ADD", "cf", "x"]);
    let mut bloomy = server.connect();
    ok(&mut bloomy, &["AUTH", "bloomy", "pw"]);
    let text = refusal(&mut bloomy, &["CF.RESERVE", "cf2", "1000"]);
    assert!(
        text.contains("no permissions to run the 'cf.reserve' command"),
        "{text}"
    );
    let mut reader = server.connect();
    ok(&mut reader, &["AUTH", "reader", "pw"]);
    let found: i64 = reply(&mut reader, &["CF.EXISTS", "cf", "x"]);
    assert_eq!(found, 1);
    let _: Vec<Value> = reply(&mut reader, &["CF.SCANDUMP", "cf", "0"]);
    let _: Vec<Value> = reply(&mut reader, &["CF.INFO", "cf"]);
    for write in [
        &["CF.ADD", "cf", "y"][..],
        &["CF.DEL", "cf", "x"],
        &["CF.COMPACT", "cf"],
    ] {
        let text = refusal(&mut reader, write);
        assert!(text.contains("NOPERM"), "{write:?}: {text}");
    }
    let keys: Vec<String> = reply(
        &mut c,
        &["COMMAND", "GETKEYS", "CF.INSERT", "k", "ITEMS", "a"],
    );
    assert_eq!(keys, vec!["k".to_string()]);
    let docs: Value = reply(&mut c, &["COMMAND", "DOCS", "cf.insert"]);
    let text = format!("{docs:?}");
    for word in [
        "Adds one or more items to a Cuckoo Filter",
        "capacity",
        "nocreate",
        "items",
    ] {
        assert!(text.contains(word), "{word}: {text}");
    }
}

/// `CF.COMPACT` moves fingerprints: a read-only replica refuses it, where
/// RedisBloom's (registered read-only) would change its copy apart from
/// its primary's.
#[test]
fn a_read_only_replica_refuses_cf_compact() {
    let primary = Server::start(Kind::Valkey, &[], &[]);
    let replica = Server::start(Kind::Valkey, &[], &[]);
    let mut r = replica.connect();
    common::replicate(&mut r, &primary);
    let mut p = primary.connect();
    ok(&mut p, &["CF.RESERVE", "cf", "8", "EXPANSION", "1"]);
    assert!(common::replica_caught_up(&mut p, &mut r));
    let text = refusal(&mut r, &["CF.COMPACT", "cf"]);
    assert!(text.starts_with("READONLY"), "{text}");
}

/// An allocation the server cannot make is an error reply, never an
/// abort: in a server of a 1 GiB address space, a filter of 2^30 slots
/// (`CF.RESERVE`, a bare `CF.INSERT ... CAPACITY`), a `CF.LOADCHUNK`
/// header of one, and a sub-filter of 4 GiB to grow into all answer
/// RedisBloom's errors (or -1 in an array), and the server lives.
#[test]
fn allocations_the_server_cannot_make_are_error_replies() {
    for kind in KINDS {
        let server = Server::start_with_address_space(kind, 1 << 30);
        let mut c = server.connect();
        let text = refusal(
            &mut c,
            &["CF.RESERVE", "huge", "1073741824", "BUCKETSIZE", "1"],
        );
        assert_eq!(text, "ERR Insufficient memory to create filter", "{kind:?}");
        let text = refusal(
            &mut c,
            &["CF.INSERT", "huge", "CAPACITY", "1073741824", "ITEMS", "x"],
        );
        assert_eq!(text, "ERR Insufficient memory to create filter", "{kind:?}");
        let header: Vec<u8> = [0u64, 1 << 30, 0, 1]
            .iter()
            .flat_map(|field| field.to_le_bytes())
            .chain([4u16, 20, 1].iter().flat_map(|field| field.to_le_bytes()))
            .collect();
        let text = redis::cmd("CF.LOADCHUNK")
            .arg("huge")
            .arg(1)
            .arg(header)
            .query::<String>(&mut c)
            .unwrap_err();
        assert_eq!(
            common::error_text(&text),
            "Couldn't create filter!",
            "{kind:?}"
        );
        // Growth: 4 buckets, then 131,072, then 4 GiB, which does not fit.
        ok(
            &mut c,
            &[
                "CF.RESERVE",
                "tiny",
                "4",
                "BUCKETSIZE",
                "1",
                "EXPANSION",
                "32768",
            ],
        );
        let items: Vec<String> = (0..150_000).map(|i| format!("i:{i}")).collect();
        let mut refused = 0;
        for batch in items.chunks(10_000) {
            let answers: Vec<i64> = redis::cmd("CF.INSERT")
                .arg("tiny")
                .arg("ITEMS")
                .arg(batch)
                .query(&mut c)
                .unwrap();
            refused += answers.iter().filter(|answer| **answer == -1).count();
        }
        assert!(refused > 0, "{kind:?}: the third sub-filter was made");
        assert_eq!(
            refusal(&mut c, &["CF.ADD", "tiny", "one more"]),
            "ERR Insufficient memory",
            "{kind:?}"
        );
        let pong: String = reply(&mut c, &["PING"]);
        assert_eq!(pong, "PONG");
    }
}
