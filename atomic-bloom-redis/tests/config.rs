//! The module's settings as server configs, against real servers: `CONFIG
//! GET` / `SET`, `MODULE LOADEX ... CONFIG`, the config file, the load
//! arguments of earlier releases, and the per-filter memory limit, which a
//! client's command obeys and a replica's stream does not.

mod common;

use common::{module_path, refusal, Kind, Server, KINDS};

/// The config's name on `kind`: both servers prefix module configs with
/// the module's name, as they do RedisBloom's (`bf.bf-error-rate`).
fn name(kind: Kind, config: &str) -> String {
    let _ = kind;
    format!("bf.{config}")
}

fn config_get(connection: &mut redis::Connection, name: &str) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query(connection)
        .unwrap();
    assert_eq!(pair.len(), 2, "CONFIG GET {name}: {pair:?}");
    pair[1].clone()
}

fn config_set(
    connection: &mut redis::Connection,
    name: &str,
    value: &str,
) -> redis::RedisResult<()> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(connection)
}

/// `BF.INFO key CAPACITY` of a filter created by `BF.ADD`.
fn default_capacity(connection: &mut redis::Connection, key: &str) -> i64 {
    let _: bool = redis::cmd("BF.ADD")
        .arg(key)
        .arg("x")
        .query(connection)
        .unwrap();
    let capacity: Vec<i64> = redis::cmd("BF.INFO")
        .arg(key)
        .arg("CAPACITY")
        .query(connection)
        .unwrap();
    capacity[0]
}

#[test]
fn config_get_and_set_change_what_new_filters_get() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut connection = server.connect();
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-error-rate")),
            "0.01"
        );
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-initial-size")),
            "100"
        );
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-expansion-factor")),
            "2"
        );
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-memory-limit-per-filter")),
            "0"
        );
        config_set(&mut connection, &name(kind, "bf-initial-size"), "5000").unwrap();
        config_set(&mut connection, &name(kind, "bf-error-rate"), "0.001").unwrap();
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-error-rate")),
            "0.001"
        );
        assert_eq!(default_capacity(&mut connection, "a"), 5000, "{kind:?}");
        // A filter at 0.1% takes more than one at 1% for the same capacity.
        config_set(&mut connection, &name(kind, "bf-error-rate"), "0.01").unwrap();
        let _: bool = redis::cmd("BF.ADD")
            .arg("b")
            .arg("x")
            .query(&mut connection)
            .unwrap();
        let (at_tenth, at_one): (i64, i64) = (
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg("a")
                .query(&mut connection)
                .unwrap(),
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg("b")
                .query(&mut connection)
                .unwrap(),
        );
        assert!(at_tenth > at_one, "{kind:?}: {at_tenth} <= {at_one}");
        // Out of range: refused, with the value unchanged.
        for (config, value) in [
            ("bf-error-rate", "0"),
            ("bf-error-rate", "1"),
            ("bf-error-rate", "lots"),
            ("bf-initial-size", "0"),
            ("bf-initial-size", "1073741825"),
            ("bf-expansion-factor", "32769"),
        ] {
            assert!(
                config_set(&mut connection, &name(kind, config), value).is_err(),
                "{kind:?}: {config} {value} accepted"
            );
        }
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-initial-size")),
            "5000"
        );
        // Expansion 0: new filters are NONSCALING, full at their capacity.
        config_set(&mut connection, &name(kind, "bf-expansion-factor"), "0").unwrap();
        config_set(&mut connection, &name(kind, "bf-initial-size"), "10").unwrap();
        let items: Vec<String> = (0..50).map(|i| i.to_string()).collect();
        // (The client reports the reply's first error element.)
        let full = redis::cmd("BF.MADD")
            .arg("c")
            .arg(&items)
            .query::<redis::Value>(&mut connection)
            .unwrap_err();
        assert!(
            common::error_text(&full).contains("non scaling filter is full"),
            "{full:?}"
        );
    }
}

#[test]
fn loadex_config_file_and_old_load_arguments_set_the_defaults() {
    // MODULE LOADEX ... CONFIG (Valkey: RedisBloom's names).
    let server = Server::start_without_module(Kind::Valkey);
    let mut connection = server.connect();
    let _: String = redis::cmd("MODULE")
        .arg("LOADEX")
        .arg(module_path().to_string_lossy().as_ref())
        .arg("CONFIG")
        .arg("bf.bf-initial-size")
        .arg(777)
        .query(&mut connection)
        .unwrap();
    assert_eq!(default_capacity(&mut connection, "k"), 777);
    // A config-file line (the command line is one) beside the module.
    for kind in KINDS {
        let line = format!("--{}", name(kind, "bf-initial-size"));
        let server = Server::start(kind, &[], &[&line, "333"]);
        assert_eq!(
            default_capacity(&mut server.connect(), "k"),
            333,
            "{kind:?}"
        );
        // The arguments of earlier releases, still read; a config-file line
        // wins over them.
        let server = Server::start(kind, &["INITIAL_SIZE", "444", "EXPANSION", "4"], &[]);
        let mut connection = server.connect();
        assert_eq!(default_capacity(&mut connection, "k"), 444, "{kind:?}");
        assert_eq!(
            config_get(&mut connection, &name(kind, "bf-expansion-factor")),
            "4"
        );
    }
}

#[test]
fn an_error_rate_over_a_quarter_is_built_at_a_quarter() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut connection = server.connect();
    for (key, rate) in [("quarter", "0.25"), ("high", "0.99")] {
        let _: String = redis::cmd("BF.RESERVE")
            .arg(key)
            .arg(rate)
            .arg(100_000)
            .arg("SEED")
            .arg(1)
            .query(&mut connection)
            .unwrap();
    }
    let dump = |connection: &mut redis::Connection, key: &str| -> Vec<u8> {
        let chunk: (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(key)
            .arg(0)
            .query(connection)
            .unwrap();
        chunk.1
    };
    assert_eq!(
        dump(&mut connection, "high"),
        dump(&mut connection, "quarter")
    );
}

#[test]
fn the_memory_limit_binds_clients_and_never_a_replica() {
    for kind in KINDS {
        let primary = Server::start(kind, &[], &[]);
        let replica = Server::start(kind, &[], &[]);
        let (mut p, mut r) = (primary.connect(), replica.connect());
        let limit = name(kind, "bf-memory-limit-per-filter");
        config_set(&mut p, &limit, "1mb").unwrap();
        assert_eq!(config_get(&mut p, &limit), "1048576");
        // Creation past the limit: refused, and nothing created.
        let text = refusal(&mut p, &["BF.RESERVE", "big", "0.01", "10000000"]);
        assert!(
            text.contains("bf-memory-limit-per-filter"),
            "{kind:?}: {text}"
        );
        let exists: i64 = redis::cmd("EXISTS").arg("big").query(&mut p).unwrap();
        assert_eq!(exists, 0);
        // Growth past the limit: the items before it go in, then an error.
        let _: String = redis::cmd("BF.RESERVE")
            .arg("grows")
            .arg("0.01")
            .arg(1000)
            .query(&mut p)
            .unwrap();
        let items: Vec<String> = (0..2_000_000).map(|i| format!("item:{i}")).collect();
        // (The client reports the reply's first error element: the last.)
        let over = redis::cmd("BF.MADD")
            .arg("grows")
            .arg(&items)
            .query::<redis::Value>(&mut p)
            .unwrap_err();
        assert!(
            common::error_text(&over).contains("bf-memory-limit-per-filter"),
            "{kind:?}: {over:?}"
        );
        let card: i64 = redis::cmd("BF.CARD").arg("grows").query(&mut p).unwrap();
        assert!(card > 100_000 && card < 1_900_000, "{kind:?}: {card} added");
        let used: i64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg("grows")
            .query(&mut p)
            .unwrap();
        assert!(used <= 1_100_000, "{kind:?}: {used} bytes");
        // A replica with a limit applies all its primary sends.
        config_set(&mut p, &limit, "0").unwrap();
        config_set(&mut r, &limit, "1mb").unwrap();
        let _: String = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(primary.port)
            .query(&mut r)
            .unwrap();
        // Up to 30 s: a full sync waits out the primary's diskless delay.
        let in_sync = |p: &mut redis::Connection, r: &mut redis::Connection| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < deadline {
                let acked: i64 = redis::cmd("WAIT").arg(1).arg(100).query(p).unwrap();
                let link: String = redis::cmd("INFO").arg("replication").query(r).unwrap();
                if acked == 1 && link.contains("master_link_status:up") {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            false
        };
        assert!(
            in_sync(&mut p, &mut r),
            "{kind:?}: the replica never caught up"
        );
        // Through the command stream, not the first sync's RDB.
        let _: String = redis::cmd("BF.RESERVE")
            .arg("big")
            .arg("0.01")
            .arg(10_000_000)
            .query(&mut p)
            .unwrap();
        let _: Vec<bool> = redis::cmd("BF.MADD")
            .arg("big")
            .arg(&items[..1000])
            .query(&mut p)
            .unwrap();
        assert!(in_sync(&mut p, &mut r), "{kind:?}: the replica fell behind");
        let found: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg("big")
            .arg(&items[..1000])
            .query(&mut r)
            .unwrap();
        assert!(found.into_iter().all(|found| found), "{kind:?}");
    }
}

/// `COPY` holds to `bf-memory-limit-per-filter` for every type of the
/// module's, as `RESTORE` does: a filter made before the limit was set is
/// not copied past it (it was).
#[test]
fn copy_keeps_the_memory_limit() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        for reserve in [
            &["BF.RESERVE", "big", "0.01", "10000000"][..],
            &["WBF.RESERVE", "wbig", "0.01", "1000000"],
            &["BF.RESERVE", "small", "0.01", "1000"],
            &["WBF.RESERVE", "wsmall", "0.01", "1000"],
        ] {
            let _: String = redis::cmd(reserve[0])
                .arg(&reserve[1..])
                .query(&mut c)
                .unwrap();
        }
        config_set(&mut c, &name(kind, "bf-memory-limit-per-filter"), "1mb").unwrap();
        for (from, to, copied) in [
            ("big", "big2", false),
            ("wbig", "wbig2", false),
            ("small", "small2", true),
            ("wsmall", "wsmall2", true),
        ] {
            let done: i64 = redis::cmd("COPY")
                .arg(&[from, to])
                .query(&mut c)
                .unwrap_or(0);
            assert_eq!(done == 1, copied, "{kind:?}: COPY {from}");
            let exists: i64 = redis::cmd("EXISTS").arg(to).query(&mut c).unwrap();
            assert_eq!(exists == 1, copied, "{kind:?}: {to}");
        }
    }
}
