//! What the primary applied is what travels: a command refused in part
//! (past `bf-memory-limit-per-filter`, into a full `NONSCALING` filter, at
//! a capped error rate) reaches the replica and the AOF as its effect, so
//! the replica and an AOF replay hold the primary's filter byte for byte
//! (`DUMP`), answer its items and absent probes alike, and report the same
//! `BF.INFO`, on Valkey and Redis 7.0.

mod common;

use common::{
    batched, config_set, copy_files, dump_payload, exists, ok, replica_caught_up, replicate, reply,
    restore, Server, KINDS,
};

fn items(prefix: &str, range: std::ops::Range<u64>) -> Vec<String> {
    range.map(|i| format!("{prefix}:{i}")).collect()
}

/// Sends `command` and ignores what it answers: errors (refusals) are the
/// point here.
fn send(c: &mut redis::Connection, command: &mut redis::Cmd) {
    let _ = command.query::<redis::Value>(c);
}

/// The writes under test, with the primary's memory limit and a capped
/// default rate in force: a growth past the limit in a scaling filter (the
/// items after it refused one by one), a full `NONSCALING` filter, a key
/// `BF.ADD` creates at the capped rate, and `BF.INSERT` creating one.
fn refused_in_part(c: &mut redis::Connection) -> Vec<(&'static str, Vec<String>)> {
    let mut keys = Vec::new();
    send(c, redis::cmd("BF.RESERVE").arg(&["grows", "0.01", "500"]));
    let grows = items("grows", 0..20_000);
    for batch in grows.chunks(1000) {
        send(c, redis::cmd("BF.MADD").arg("grows").arg(batch));
    }
    keys.push(("grows", grows));
    send(
        c,
        redis::cmd("BF.RESERVE").arg(&["fixed", "0.001", "300", "NONSCALING"]),
    );
    let fixed = items("fixed", 0..400);
    send(c, redis::cmd("BF.MADD").arg("fixed").arg(&fixed));
    keys.push(("fixed", fixed));
    let added = items("added", 0..3000);
    for item in &added {
        send(c, redis::cmd("BF.ADD").arg("added").arg(item));
    }
    keys.push(("added", added));
    let inserted = items("inserted", 0..30_000);
    send(
        c,
        redis::cmd("BF.INSERT")
            .arg(&[
                "inserted",
                "CAPACITY",
                "200",
                "ERROR",
                "0.4",
                "EXPANSION",
                "3",
                "ITEMS",
            ])
            .arg(&inserted),
    );
    keys.push(("inserted", inserted));
    keys
}

/// What a key answers: `BF.INFO`, its items and 10,000 absent probes.
fn answers(c: &mut redis::Connection, key: &str, sent: &[String]) -> (redis::Value, Vec<bool>) {
    let info: redis::Value = reply(c, &["BF.INFO", key]);
    let mut found = batched(c, "BF.MEXISTS", key, sent, 2000);
    found.extend(batched::<bool>(
        c,
        "BF.MEXISTS",
        key,
        &items("absent", 0..10_000),
        2000,
    ));
    (info, found)
}

#[test]
fn a_replica_and_an_aof_replay_hold_what_the_primary_applied() {
    for kind in KINDS {
        let primary = Server::start(kind, &[], &["--appendonly", "yes"]);
        let replica = Server::start(kind, &[], &[]);
        let (mut p, mut r) = (primary.connect(), replica.connect());
        replicate(&mut r, &primary);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: no sync");
        // The replica's own default makes new filters NONSCALING: what it
        // applies from its primary must not (it did: a scaling filter's
        // creation was refused there, and its items were lost).
        config_set(&mut r, "bf.bf-expansion-factor", "0");
        for (config, value) in [
            ("bf.bf-memory-limit-per-filter", "65536"),
            ("bf.bf-error-rate", "0.3"),
        ] {
            config_set(&mut p, config, value);
        }
        let keys = refused_in_part(&mut p);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        // The primary refused some of every key's items: what is tested.
        let card: i64 = reply(&mut p, &["BF.CARD", "grows"]);
        assert!(
            card > 1000 && card < 20_000,
            "{kind:?}: {card} of 20,000 taken"
        );
        let mut on_primary = Vec::new();
        for (key, sent) in &keys {
            let here = (dump_payload(&mut p, key), answers(&mut p, key, sent));
            let there = (dump_payload(&mut r, key), answers(&mut r, key, sent));
            assert!(here.0.is_some(), "{kind:?} {key}: missing");
            assert!(here == there, "{kind:?} {key}: the replica differs");
            on_primary.push(here);
        }
        // The AOF holds the same effects: a replay rebuilds the same keys,
        // whatever the replaying server's own default growth.
        config_set(&mut p, "bf.bf-expansion-factor", "0");
        ok(&mut p, &["DEBUG", "LOADAOF"]);
        for ((key, sent), before) in keys.iter().zip(&on_primary) {
            let after = (dump_payload(&mut p, key), answers(&mut p, key, sent));
            assert!(&after == before, "{kind:?} {key}: the AOF replay differs");
        }
    }
}

/// A client's `RESTORE` is held to `bf-memory-limit-per-filter` (it was
/// not: a payload could bring a filter of any size); a replica applying
/// its primary's `RESTORE` is not, whatever its own setting, so that it
/// holds what its primary holds.
#[test]
fn restore_holds_to_the_memory_limit_and_a_replica_follows_its_primary() {
    for kind in KINDS {
        let primary = Server::start(kind, &[], &[]);
        let replica = Server::start(kind, &[], &[]);
        let mut p = primary.connect();
        let mut r = replica.connect();
        replicate(&mut r, &primary);
        ok(&mut p, &["BF.RESERVE", "big", "0.01", "100000"]);
        send(
            &mut p,
            redis::cmd("BF.MADD").arg("big").arg(items("b", 0..1000)),
        );
        let payload = dump_payload(&mut p, "big").unwrap();
        let limit = "bf.bf-memory-limit-per-filter";
        config_set(&mut p, limit, "65536");
        assert!(
            restore(&mut p, "copy", &payload).is_err(),
            "{kind:?}: restored past the limit"
        );
        assert!(!exists(&mut p, "copy"), "{kind:?}");
        // The replica's own limit does not apply to its primary's RESTORE.
        config_set(&mut p, limit, "0");
        config_set(&mut r, limit, "65536");
        restore(&mut p, "copy", &payload).unwrap();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        assert_eq!(
            dump_payload(&mut r, "copy"),
            Some(payload.clone()),
            "{kind:?}: the replica's copy differs"
        );
    }
}

/// A replica that cannot build a filter its primary built (here: its
/// address space is 3 GiB, the primary's 4 to 5 GB filters are allocated
/// lazily there) holds no filter under that key, and logs why: the
/// primary's adds that follow never create one there with the replica's
/// defaults and a seed of its own (they did: `Window` 100 against the
/// primary's 1,000,000,000, and a `BF` key of 100 items). Other keys go on
/// replicating. Then the primary's AOF, replayed by a server as short of
/// memory, holds the same: no key, never a default one.
#[test]
fn a_replica_that_cannot_build_a_filter_holds_none_and_never_a_default_one() {
    for kind in KINDS {
        // `appendfsync always`: the AOF is copied below while the primary
        // runs, and under `everysec` a write may wait out a background
        // fsync (up to 2 s) before it reaches the file.
        let primary = Server::start(
            kind,
            &[],
            &["--appendonly", "yes", "--appendfsync", "always"],
        );
        let replica = Server::start_with_address_space(kind, 3 << 30);
        let (mut p, mut r) = (primary.connect(), replica.connect());
        replicate(&mut r, &primary);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: no sync");
        ok(&mut p, &["WBF.RESERVE", "wbig", "0.0000001", "1000000000"]);
        // (At 1e-5: lower rates make RedisBloom's filter, which travels as a
        // BF.LOADCHUNK header.)
        ok(&mut p, &["BF.RESERVE", "bbig", "0.00001", "1000000000"]);
        let sent = items("big", 0..50);
        let _: Vec<bool> = batched(&mut p, "WBF.MADD", "wbig", &sent, 500);
        let _: bool = reply(&mut p, &["WBF.ADD", "wbig", "one more"]);
        let _: Vec<bool> = batched(&mut p, "BF.MADD", "bbig", &sent, 500);
        let _: bool = reply(&mut p, &["BF.ADD", "bbig", "one more"]);
        // Keys the replica can build, made by an add with the defaults.
        let _: bool = reply(&mut p, &["WBF.ADD", "wsmall", "a"]);
        let _: bool = reply(&mut p, &["BF.ADD", "bsmall", "a"]);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        for key in ["wbig", "bbig"] {
            assert!(
                !exists(&mut r, key),
                "{kind:?}: the replica holds a filter under {key} that is not its primary's"
            );
            assert!(
                replica.log().contains(&format!("'{key}'")),
                "{kind:?}: the replica's log does not say why it holds no {key}:\n{}",
                replica.log()
            );
        }
        for key in ["wsmall", "bsmall"] {
            assert_eq!(
                dump_payload(&mut r, key),
                dump_payload(&mut p, key),
                "{kind:?}: {key}"
            );
        }
        // The replica restarts from its own RDB and resyncs in part: it
        // remembers nothing of what it refused, and its primary's adds to
        // `bbig` still never create it there.
        let mut replica = replica;
        replica.stop(true);
        replica.push_extra(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
        replica.launch().expect("the replica restarts");
        let mut r = replica.connect();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: no resync");
        assert!(
            primary.info("stats").contains("sync_partial_ok:1"),
            "{kind:?}: not a partial resync"
        );
        let _: bool = reply(&mut p, &["BF.ADD", "bbig", "after a restart"]);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        assert!(
            !exists(&mut r, "bbig"),
            "{kind:?}: a bbig of its own after a restart"
        );
        // Renamed on the primary, the filters the replica could not build
        // go on under new names: the adds to those never create them there
        // either (this server never sees a RENAME of a key it does not
        // hold). The old names, free again, take new filters as any key.
        for (from, to) in [("bbig", "bbig2"), ("wbig", "wbig2")] {
            ok(&mut p, &["RENAME", from, to]);
        }
        let _: bool = reply(&mut p, &["BF.ADD", "bbig2", "renamed"]);
        let _: Vec<bool> = batched(&mut p, "BF.MADD", "bbig2", &sent, 500);
        let _: bool = reply(&mut p, &["WBF.ADD", "wbig2", "renamed"]);
        let _: bool = reply(&mut p, &["BF.ADD", "bbig", "a new filter"]);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        for key in ["wbig2", "bbig2"] {
            assert!(
                !exists(&mut r, key),
                "{kind:?}: the replica holds a filter under {key} that is not its primary's"
            );
        }
        assert_eq!(
            dump_payload(&mut r, "bbig"),
            dump_payload(&mut p, "bbig"),
            "{kind:?}: the new bbig"
        );
        // The primary's AOF (never rewritten: its commands as sent),
        // replayed by a server whose allocations fail the same way.
        let mut short = Server::unlaunched(kind, &[], &["--appendonly", "yes"]);
        short.set_address_space(3 << 30);
        copy_files(
            &primary.dir.join("appendonlydir"),
            &short.dir.join("appendonlydir"),
        );
        short.launch().expect("the server starts from the AOF");
        let mut s = short.connect();
        for key in ["wbig", "wbig2", "bbig2"] {
            assert!(
                !exists(&mut s, key),
                "{kind:?}: the AOF replay made a {key} of its own"
            );
        }
        // Each refused creation is logged (the refused adds, at most one
        // line in ten seconds).
        for key in ["wbig", "bbig"] {
            assert!(
                short.log().contains(&format!("RESERVE '{key}'")),
                "{kind:?}: the replay's log does not say why it holds no {key}:\n{}",
                short.log()
            );
        }
        for key in ["wsmall", "bsmall", "bbig"] {
            assert_eq!(
                dump_payload(&mut s, key),
                dump_payload(&mut p, key),
                "{kind:?}: {key} replayed"
            );
        }
    }
}

/// A time window's replica forgets on time though nothing reads the key
/// on its primary: the primary ends each generation when it is due (not
/// at the next command on the key) and propagates it, so what the
/// replica answers holds to the window's bound, `T × g / (g − 1)` (6 s for
/// `TIME 3 GENERATIONS 2`), give or take the replication's delay. (At
/// 7.5 s the replica still answered 1, until a read on the primary.)
#[test]
fn a_time_window_replica_forgets_on_time_without_reads_on_its_primary() {
    use std::time::{Duration, Instant};
    for kind in KINDS {
        let primary = Server::start(kind, &[], &["--appendonly", "yes"]);
        let replica = Server::start(kind, &[], &[]);
        let (mut p, mut r) = (primary.connect(), replica.connect());
        replicate(&mut r, &primary);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: no sync");
        ok(
            &mut p,
            &[
                "WBF.RESERVE",
                "w",
                "0.01",
                "1000",
                "TIME",
                "3",
                "GENERATIONS",
                "2",
            ],
        );
        let added = Instant::now();
        let _: bool = reply(&mut p, &["WBF.ADD", "w", "x"]);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        // From here on nothing is sent to the primary.
        let found = |r: &mut redis::Connection| -> bool { reply(r, &["WBF.EXISTS", "w", "x"]) };
        let at = |seconds: f64| {
            let when = added + Duration::from_secs_f64(seconds);
            if let Some(left) = when.checked_duration_since(Instant::now()) {
                std::thread::sleep(left);
            }
        };
        at(2.8);
        assert!(found(&mut r), "{kind:?}: forgotten within its window");
        // The bound, and 400 ms for the timer and the replication.
        at(6.4);
        assert!(!found(&mut r), "{kind:?}: remembered past its bound");
        assert!(
            common::aof_text(&primary.dir).contains("WBF.ADVANCE"),
            "{kind:?}: the AOF holds no rotation"
        );
    }
}
