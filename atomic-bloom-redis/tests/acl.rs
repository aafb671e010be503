//! ACL categories, key specs and command docs, against real servers: what
//! an operator's ACL users may run, as with RedisBloom.

mod common;

use common::{error_text, Kind, Server, KINDS};

/// Every command, and whether it only reads its key.
const COMMANDS: [(&str, bool); 18] = [
    ("BF.RESERVE", false),
    ("BF.ADD", false),
    ("BF.MADD", false),
    ("BF.INSERT", false),
    ("BF.EXISTS", true),
    ("BF.MEXISTS", true),
    ("BF.INFO", true),
    ("BF.CARD", true),
    ("BF.SCANDUMP", true),
    ("BF.LOADCHUNK", false),
    ("WBF.RESERVE", false),
    ("WBF.ADD", false),
    ("WBF.MADD", false),
    ("WBF.EXISTS", true),
    ("WBF.MEXISTS", true),
    ("WBF.INFO", true),
    ("WBF.ADVANCE", false),
    ("WBF.LOADCHUNK", false),
];

/// The key a test runs `command` on: `bf:x` holds a `BF` filter and
/// `bf:w` a windowed one; a `RESERVE` gets a new key of its own.
fn key_for(command: &str) -> &'static str {
    match command {
        "BF.RESERVE" => "bf:new",
        "WBF.RESERVE" => "bf:wnew",
        _ if command.starts_with("WBF.") => "bf:w",
        _ => "bf:x",
    }
}

/// A `BF` key `bf:x` and a windowed key `bf:w`, each holding "a".
fn keys_holding_a(connection: &mut redis::Connection) {
    for command in ["BF.ADD", "WBF.ADD"] {
        let key = key_for(command);
        redis::cmd(command)
            .arg(key)
            .arg("a")
            .query::<bool>(connection)
            .unwrap();
    }
}

/// A sample invocation of `command` on `key` that a filter holding "a"
/// accepts.
fn invocation(command: &str, key: &str) -> Vec<String> {
    let args: &[&str] = match command {
        "BF.RESERVE" | "WBF.RESERVE" => &["0.01", "100"],
        "BF.ADD" | "BF.EXISTS" | "WBF.ADD" | "WBF.EXISTS" => &["a"],
        "BF.MADD" | "BF.MEXISTS" | "WBF.MADD" | "WBF.MEXISTS" => &["a", "b"],
        "WBF.ADVANCE" => &["1", "0"],
        "WBF.LOADCHUNK" => &["0", "x"],
        "BF.INSERT" => &["ITEMS", "a"],
        "BF.SCANDUMP" => &["0"],
        "BF.LOADCHUNK" => &["1", "x"],
        _ => &[],
    };
    let mut all = vec![command.to_string(), key.to_string()];
    all.extend(args.iter().map(|arg| arg.to_string()));
    all
}

fn run(connection: &mut redis::Connection, args: &[String]) -> Result<redis::Value, String> {
    let mut command = redis::cmd(&args[0]);
    command.arg(&args[1..]);
    command
        .query(connection)
        .map_err(|error| error_text(&error))
}

fn user(server: &Server, name: &str, rules: &[&str]) -> redis::Connection {
    let mut admin = server.connect();
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg(name).arg("on").arg(">secret");
    for rule in rules {
        setuser.arg(*rule);
    }
    setuser.query::<()>(&mut admin).unwrap();
    redis::Client::open(format!("redis://{name}:secret@127.0.0.1:{}/", server.port))
        .and_then(|client| client.get_connection())
        .unwrap()
}

fn is_noperm(outcome: &Result<redis::Value, String>) -> bool {
    matches!(outcome, Err(text) if text.starts_with("NOPERM"))
}

#[test]
fn command_info_has_arity_key_specs_and_docs() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut connection = server.connect();
        for (command, read_only) in COMMANDS {
            let info: redis::Value = redis::cmd("COMMAND")
                .arg("INFO")
                .arg(command)
                .query(&mut connection)
                .unwrap();
            let text = format!("{info:?}");
            assert!(
                text.contains(if read_only { "RO" } else { "RW" }),
                "{kind:?} {command}: {text}"
            );
            if read_only {
                assert!(!text.contains("\"RW\""), "{kind:?} {command}: {text}");
            }
        }
        let keys: Vec<String> = redis::cmd("COMMAND")
            .arg("GETKEYS")
            .arg("BF.MADD")
            .arg("bf:routed")
            .arg("a")
            .query(&mut connection)
            .unwrap();
        assert_eq!(keys, ["bf:routed"]);
        let docs: redis::Value = redis::cmd("COMMAND")
            .arg("DOCS")
            .arg("BF.INSERT")
            .query(&mut connection)
            .unwrap();
        let docs = format!("{docs:?}");
        for expected in [
            "Adds one or more items",
            "NONSCALING",
            "NOCREATE",
            "capacity",
        ] {
            assert!(
                docs.contains(expected),
                "{kind:?}: {expected} not in {docs}"
            );
        }
        let docs: redis::Value = redis::cmd("COMMAND")
            .arg("DOCS")
            .arg("WBF.RESERVE")
            .query(&mut connection)
            .unwrap();
        let docs = format!("{docs:?}");
        for expected in ["windowed Bloom filter", "TIME", "GENERATIONS", "window"] {
            assert!(
                docs.contains(expected),
                "{kind:?}: {expected} not in {docs}"
            );
        }
    }
}

#[test]
fn bloom_read_and_write_categories_grant_what_redisbloom_grants() {
    // Redis 7.0 has no module ACL categories (the log says so).
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut admin = server.connect();
    keys_holding_a(&mut admin);
    let mut bloom = user(&server, "bloom", &["~*", "+@bloom"]);
    let mut reader = user(&server, "reader", &["~*", "+@read"]);
    let mut writer = user(&server, "writer", &["~*", "+@write"]);
    for (command, read_only) in COMMANDS {
        let args = invocation(command, key_for(command));
        assert!(!is_noperm(&run(&mut bloom, &args)), "+@bloom: {command}");
        assert_eq!(
            is_noperm(&run(&mut reader, &args)),
            !read_only,
            "+@read: {command}"
        );
        assert_eq!(
            is_noperm(&run(&mut writer, &args)),
            read_only,
            "+@write: {command}"
        );
    }
    let categories: Vec<String> = redis::cmd("ACL").arg("CAT").query(&mut admin).unwrap();
    assert!(categories.iter().any(|category| category == "bloom"));
}

#[test]
fn a_user_who_may_only_read_bf_keys_reads_them_and_writes_none() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut admin = server.connect();
        keys_holding_a(&mut admin);
        let mut reader = user(&server, "keyreader", &["+@all", "%R~bf:*"]);
        for command in [
            "BF.EXISTS",
            "BF.MEXISTS",
            "BF.CARD",
            "BF.INFO",
            "BF.SCANDUMP",
            "WBF.EXISTS",
            "WBF.MEXISTS",
            "WBF.INFO",
        ] {
            let outcome = run(&mut reader, &invocation(command, key_for(command)));
            assert!(outcome.is_ok(), "{kind:?} {command}: {outcome:?}");
        }
        for command in [
            "BF.ADD",
            "BF.MADD",
            "BF.INSERT",
            "BF.RESERVE",
            "BF.LOADCHUNK",
            "WBF.ADD",
            "WBF.MADD",
            "WBF.RESERVE",
        ] {
            let outcome = run(&mut reader, &invocation(command, key_for(command)));
            assert!(is_noperm(&outcome), "{kind:?} {command}: {outcome:?}");
        }
    }
}

/// What RedisBloom's own `test_docs_help.py` expects of `COMMAND DOCS`
/// (b28c294): summary, complexity, arity and the top-level argument names.
/// A RedisBloom user's tooling that reads them finds the same text (before,
/// 9 of its tests failed on wording and on `BF.RESERVE`'s `seed`).
const REDISBLOOM_DOCS: [(&str, &str, &str, i64, &[&str]); 10] = [
    (
        "bf.add",
        "Adds an item to a Bloom Filter",
        "O(k), where k is the number of hash functions used by the last sub-filter",
        3,
        &["key", "item"],
    ),
    (
        "bf.exists",
        "Checks whether an item exists in a Bloom Filter",
        "O(k), where k is the number of hash functions used by the last sub-filter",
        3,
        &["key", "item"],
    ),
    (
        "bf.info",
        "Returns information about a Bloom Filter",
        "O(1)",
        -2,
        &["key", "single_value"],
    ),
    (
        "bf.card",
        "Returns the cardinality of a Bloom filter",
        "O(1)",
        2,
        &["key"],
    ),
    (
        "bf.insert",
        "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
        "O(k * n), where k is the number of hash functions and n is the number of items",
        -4,
        &[
            "key",
            "capacity",
            "error",
            "expansion",
            "nocreate",
            "nonscaling",
            "items",
            "item",
        ],
    ),
    (
        "bf.loadchunk",
        "Restores a filter previously saved using SCANDUMP",
        "O(n), where n is the capacity",
        4,
        &["key", "iterator", "data"],
    ),
    (
        "bf.madd",
        "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
        "O(k * n), where k is the number of hash functions and n is the number of items",
        -3,
        &["key", "item"],
    ),
    (
        "bf.mexists",
        "Checks whether one or more items exist in a Bloom Filter",
        "O(k * n), where k is the number of hash functions and n is the number of items",
        -3,
        &["key", "item"],
    ),
    (
        "bf.reserve",
        "Creates a new Bloom Filter",
        "O(1)",
        -4,
        &["key", "error_rate", "capacity", "expansion", "nonscaling"],
    ),
    (
        "bf.scandump",
        "Begins an incremental save of the bloom filter",
        "O(n), where n is the capacity",
        3,
        &["key", "iterator"],
    ),
];

/// A RESP map or flat key-value array as (key, value) pairs.
fn pairs(value: &redis::Value) -> Vec<(String, redis::Value)> {
    match value {
        redis::Value::Map(entries) => entries
            .iter()
            .filter_map(|(k, v)| {
                redis::from_redis_value_ref::<String>(k)
                    .ok()
                    .map(|k| (k, v.clone()))
            })
            .collect(),
        redis::Value::Array(items) => items
            .chunks(2)
            .filter_map(|kv| match kv {
                [k, v] => redis::from_redis_value_ref::<String>(k)
                    .ok()
                    .map(|k| (k, v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn field(value: &redis::Value, name: &str) -> Option<redis::Value> {
    pairs(value)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[test]
fn command_docs_read_as_redisbloom_s() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut connection = server.connect();
        for (command, summary, complexity, arity, args) in REDISBLOOM_DOCS {
            let reply: redis::Value = redis::cmd("COMMAND")
                .arg("DOCS")
                .arg(command)
                .query(&mut connection)
                .unwrap();
            let docs =
                field(&reply, command).unwrap_or_else(|| panic!("{kind:?} {command}: {reply:?}"));
            let text = |name: &str| {
                field(&docs, name)
                    .and_then(|v| redis::from_redis_value_ref::<String>(&v).ok())
                    .unwrap_or_default()
            };
            assert_eq!(text("summary"), summary, "{kind:?} {command}");
            assert_eq!(text("complexity"), complexity, "{kind:?} {command}");
            if let Some(found) = field(&docs, "arity") {
                assert_eq!(
                    redis::from_redis_value_ref::<i64>(&found).unwrap(),
                    arity,
                    "{kind:?} {command}"
                );
            }
            let names: Vec<String> = match field(&docs, "arguments") {
                Some(redis::Value::Array(list)) => list
                    .iter()
                    .map(|arg| {
                        field(arg, "name")
                            .and_then(|v| redis::from_redis_value_ref::<String>(&v).ok())
                            .unwrap_or_default()
                    })
                    .collect(),
                other => panic!("{kind:?} {command}: arguments {other:?}"),
            };
            assert_eq!(names, args, "{kind:?} {command}");
        }
    }
}
