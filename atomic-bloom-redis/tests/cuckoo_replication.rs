//! A replica, an AOF replay and `DEBUG RELOAD` hold the primary's cuckoo
//! filters byte for byte (`DUMP`) after every kind of `CF.*` write: new
//! keys from `CF.RESERVE` (with and without options), `CF.ADD`,
//! `CF.ADDNX`, `CF.INSERT` and `CF.INSERTNX` (with `CAPACITY`), adds that
//! find an item there (`NX`) or no room (`EXPANSION 0`), a client's
//! duplicate flood (refused growth), growth, `CF.DEL` (of items there and
//! not), deletes that compact, `CF.COMPACT`, `CF.LOADCHUNK` streams, and
//! all of these inside `MULTI` and `EVAL`; the replica runs with other
//! `cf-*` configs than its primary, which must not matter. On Valkey and
//! Redis 7.0.

mod common;

use common::{
    copy_files, dump_payload, ok, replica_caught_up, replicate, reply, wait_for_aof_rewrite,
    Server, KINDS,
};

/// Every key the workload writes.
const KEYS: [&str; 11] = [
    "reserved",
    "defaults",
    "addnx",
    "inserted",
    "insertnx",
    "full",
    "dups",
    "grown",
    "compacted",
    "copied",
    "scripted",
];

fn send(c: &mut redis::Connection, args: &[&str]) {
    let _ = redis::cmd(args[0]).arg(&args[1..]).query::<redis::Value>(c);
}

fn items(prefix: &str, range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("{prefix}:{i}")).collect()
}

fn insert(
    c: &mut redis::Connection,
    command: &str,
    key: &str,
    options: &[&str],
    values: &[String],
) {
    let _ = redis::cmd(command)
        .arg(key)
        .arg(options)
        .arg("ITEMS")
        .arg(values)
        .query::<redis::Value>(c);
}

/// The writes under test, on the primary behind `c`.
fn workload(c: &mut redis::Connection) {
    send(
        c,
        &[
            "CF.RESERVE",
            "reserved",
            "5000",
            "BUCKETSIZE",
            "3",
            "MAXITERATIONS",
            "30",
            "EXPANSION",
            "3",
        ],
    );
    insert(c, "CF.INSERT", "reserved", &[], &items("r", 0..12_000));
    for item in items("d", 0..1500) {
        send(c, &["CF.ADD", "defaults", &item]);
    }
    for item in items("x", 0..300).iter().chain(&items("x", 0..300)) {
        send(c, &["CF.ADDNX", "addnx", item]);
    }
    insert(
        c,
        "CF.INSERT",
        "inserted",
        &["CAPACITY", "700"],
        &items("i", 0..3000),
    );
    insert(
        c,
        "CF.INSERT",
        "inserted",
        &["NOCREATE"],
        &items("i", 0..500),
    );
    insert(
        c,
        "CF.INSERTNX",
        "insertnx",
        &["CAPACITY", "300"],
        &items("n", 0..1000),
    );
    send(c, &["CF.RESERVE", "full", "64", "EXPANSION", "0"]);
    insert(c, "CF.INSERT", "full", &[], &items("f", 0..200));
    send(c, &["CF.ADD", "full", "one more"]);
    send(c, &["CF.RESERVE", "dups", "64", "EXPANSION", "2"]);
    insert(c, "CF.INSERT", "dups", &[], &vec!["hot".to_string(); 50]);
    for _ in 0..10 {
        send(c, &["CF.ADD", "dups", "hot"]);
    }
    send(
        c,
        &[
            "CF.RESERVE",
            "grown",
            "100",
            "BUCKETSIZE",
            "1",
            "EXPANSION",
            "2",
        ],
    );
    insert(c, "CF.INSERT", "grown", &[], &items("g", 0..2000));
    for item in items("g", 0..300).iter().chain(&items("never", 0..100)) {
        send(c, &["CF.DEL", "grown", item]);
    }
    send(c, &["CF.RESERVE", "compacted", "200", "EXPANSION", "1"]);
    insert(c, "CF.INSERT", "compacted", &[], &items("c", 0..1500));
    for item in items("c", 0..1000).iter().step_by(3) {
        send(c, &["CF.DEL", "compacted", item]);
    }
    send(c, &["CF.COMPACT", "compacted"]);
    // A stream copied, as RedisBloom's client loop copies one.
    let mut iterator = 0i64;
    loop {
        let (next, piece): (i64, Option<Vec<u8>>) = redis::cmd("CF.SCANDUMP")
            .arg("grown")
            .arg(iterator)
            .query(c)
            .unwrap();
        let Some(piece) = piece.filter(|_| next != 0) else {
            break;
        };
        let _: String = redis::cmd("CF.LOADCHUNK")
            .arg("copied")
            .arg(next)
            .arg(piece)
            .query(c)
            .unwrap();
        iterator = next;
    }
    // MULTI and EVAL.
    let _: redis::Value = redis::pipe()
        .atomic()
        .cmd("CF.ADD")
        .arg("scripted")
        .arg("m1")
        .cmd("CF.INSERTNX")
        .arg("scripted")
        .arg("ITEMS")
        .arg("m1")
        .arg("m2")
        .cmd("CF.DEL")
        .arg("scripted")
        .arg("m1")
        .query(c)
        .unwrap();
    let _: redis::Value = redis::cmd("EVAL")
        .arg(
            "for i = 1, 300 do redis.call('CF.ADD', KEYS[1], 'e' .. i) end \
             redis.call('CF.DEL', KEYS[1], 'e1') return redis.call('CF.COMPACT', KEYS[1])",
        )
        .arg(1)
        .arg("scripted")
        .query(c)
        .unwrap();
}

/// Every key's `DUMP` on the server behind `c`.
fn dumps(c: &mut redis::Connection) -> Vec<Option<Vec<u8>>> {
    KEYS.iter().map(|key| dump_payload(c, key)).collect()
}

#[test]
fn a_replica_an_aof_replay_and_a_reload_hold_the_primary_s_cuckoo_filters() {
    for kind in KINDS {
        let primary = Server::start(
            kind,
            &[],
            &[
                "--appendonly",
                "yes",
                "--aof-use-rdb-preamble",
                "no",
                "--appendfsync",
                "always",
            ],
        );
        // Other defaults on the replica: a creation must travel whole.
        let replica = Server::start(kind, &["CF_MAX_EXPANSIONS", "1"], &[]);
        let mut r = replica.connect();
        for (name, value) in [
            ("bf.cf-bucket-size", "4"),
            ("bf.cf-initial-size", "64"),
            ("bf.cf-max-iterations", "3"),
            ("bf.cf-expansion-factor", "0"),
        ] {
            let _: () = reply(&mut r, &["CONFIG", "SET", name, value]);
        }
        replicate(&mut r, &primary);
        let mut p = primary.connect();
        workload(&mut p);
        assert!(
            replica_caught_up(&mut p, &mut r),
            "{kind:?}: the replica lags"
        );
        let expected = dumps(&mut p);
        for (key, dump) in KEYS.iter().zip(&expected) {
            assert!(dump.is_some(), "{kind:?}: no {key} on the primary");
        }
        let got = dumps(&mut r);
        for (at, key) in KEYS.iter().enumerate() {
            assert!(
                got[at] == expected[at],
                "{kind:?}: {key} differs on the replica"
            );
        }
        // DEBUG RELOAD.
        ok(&mut p, &["DEBUG", "RELOAD"]);
        assert!(
            dumps(&mut p) == expected,
            "{kind:?}: DEBUG RELOAD changed a filter"
        );
        // The AOF (every command as the primary propagated it), replayed
        // by a server of other defaults; then its rewrite, replayed.
        let mut replay = Server::unlaunched(
            kind,
            &[],
            &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
        );
        copy_files(
            &primary.dir.join("appendonlydir"),
            &replay.dir.join("appendonlydir"),
        );
        replay.launch().unwrap();
        let mut a = replay.connect();
        let got = dumps(&mut a);
        for (at, key) in KEYS.iter().enumerate() {
            assert!(
                got[at] == expected[at],
                "{kind:?}: {key} differs after the AOF"
            );
        }
        let _: String = reply(&mut a, &["BGREWRITEAOF"]);
        wait_for_aof_rewrite(&mut a);
        replay.stop(false);
        replay.launch().unwrap();
        let mut a = replay.connect();
        let got = dumps(&mut a);
        for (at, key) in KEYS.iter().enumerate() {
            assert!(
                got[at] == expected[at],
                "{kind:?}: {key} differs after the rewrite"
            );
        }
    }
}

/// RedisBloom's own streams (its AOF, a RedisBloom primary) replayed here
/// grow as RedisBloom grew: a duplicate flood that a client's command may
/// not grow a filter with (`tests/cuckoo.rs`) does, when replayed.
#[test]
fn a_replayed_duplicate_flood_grows_as_redisbloom_grew() {
    let mut server = Server::unlaunched(common::Kind::Valkey, &[], &["--appendonly", "yes"]);
    let dir = server.dir.join("appendonlydir");
    std::fs::create_dir_all(&dir).unwrap();
    let mut aof = Vec::new();
    let mut command = |args: &[&str]| {
        aof.extend(format!("*{}\r\n", args.len()).bytes());
        for arg in args {
            aof.extend(format!("${}\r\n{arg}\r\n", arg.len()).bytes());
        }
    };
    command(&["SELECT", "0"]);
    command(&["CF.RESERVE", "hot", "64", "EXPANSION", "2"]);
    for _ in 0..20 {
        command(&["CF.ADD", "hot", "same"]);
    }
    std::fs::write(dir.join("appendonly.aof.1.incr.aof"), aof).unwrap();
    std::fs::write(
        dir.join("appendonly.aof.manifest"),
        "file appendonly.aof.1.incr.aof seq 1 type i\n",
    )
    .unwrap();
    server.launch().unwrap();
    let mut c = server.connect();
    let debug: String = reply(&mut c, &["CF.DEBUG", "hot"]);
    // RedisBloom: 4 copies a sub-filter, so 5 sub-filters for 20.
    assert_eq!(
        debug,
        "bktsize:2 buckets:32 items:20 deletes:0 filters:5 max_iterations:20 expansion:2"
    );
    let count: i64 = reply(&mut c, &["CF.COUNT", "hot", "same"]);
    assert_eq!(count, 20);
}
