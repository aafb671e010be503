//! What the primary applied is what travels: a command refused in part
//! (past `bf-memory-limit-per-filter`, into a full `NONSCALING` filter, at
//! a capped error rate) reaches the replica and the AOF as its effect, so
//! the replica and an AOF replay hold the primary's filter byte for byte
//! (`DUMP`), answer its items and absent probes alike, and report the same
//! `BF.INFO`, on Valkey and Redis 7.0.

mod common;

use common::{dump_payload, replica_caught_up, Server, KINDS};

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
    let info: redis::Value = redis::cmd("BF.INFO").arg(key).query(c).unwrap();
    let mut found = Vec::new();
    let absent = items("absent", 0..10_000);
    for batch in sent.chunks(2000).chain(absent.chunks(2000)) {
        let answers: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg(key)
            .arg(batch)
            .query(c)
            .unwrap();
        found.extend(answers);
    }
    (info, found)
}

#[test]
fn a_replica_and_an_aof_replay_hold_what_the_primary_applied() {
    for kind in KINDS {
        let primary = Server::start(kind, &[], &["--appendonly", "yes"]);
        let replica = Server::start(kind, &[], &[]);
        let (mut p, mut r) = (primary.connect(), replica.connect());
        let _: String = redis::cmd("REPLICAOF")
            .arg(&["127.0.0.1", &primary.port.to_string()])
            .query(&mut r)
            .unwrap();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: no sync");
        // The replica's own default makes new filters NONSCALING: what it
        // applies from its primary must not (it did: a scaling filter's
        // creation was refused there, and its items were lost).
        let _: () = redis::cmd("CONFIG")
            .arg(&["SET", "bf.bf-expansion-factor", "0"])
            .query(&mut r)
            .unwrap();
        for (config, value) in [
            ("bf.bf-memory-limit-per-filter", "65536"),
            ("bf.bf-error-rate", "0.3"),
        ] {
            let _: () = redis::cmd("CONFIG")
                .arg(&["SET", config, value])
                .query(&mut p)
                .unwrap();
        }
        let keys = refused_in_part(&mut p);
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        // The primary refused some of every key's items: what is tested.
        let card: i64 = redis::cmd("BF.CARD").arg("grows").query(&mut p).unwrap();
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
        let _: () = redis::cmd("CONFIG")
            .arg(&["SET", "bf.bf-expansion-factor", "0"])
            .query(&mut p)
            .unwrap();
        let _: String = redis::cmd("DEBUG").arg("LOADAOF").query(&mut p).unwrap();
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
        let _: String = redis::cmd("REPLICAOF")
            .arg(&["127.0.0.1", &primary.port.to_string()])
            .query(&mut r)
            .unwrap();
        let _: String = redis::cmd("BF.RESERVE")
            .arg(&["big", "0.01", "100000"])
            .query(&mut p)
            .unwrap();
        send(
            &mut p,
            redis::cmd("BF.MADD").arg("big").arg(items("b", 0..1000)),
        );
        let payload = dump_payload(&mut p, "big").unwrap();
        let limit = |c: &mut redis::Connection, bytes: &str| {
            let _: () = redis::cmd("CONFIG")
                .arg(&["SET", "bf.bf-memory-limit-per-filter", bytes])
                .query(c)
                .unwrap();
        };
        let restore = |c: &mut redis::Connection, key: &str| {
            redis::cmd("RESTORE")
                .arg(key)
                .arg(0)
                .arg(payload.as_slice())
                .query::<String>(c)
        };
        limit(&mut p, "65536");
        assert!(
            restore(&mut p, "copy").is_err(),
            "{kind:?}: restored past the limit"
        );
        let exists: i64 = redis::cmd("EXISTS").arg("copy").query(&mut p).unwrap();
        assert_eq!(exists, 0, "{kind:?}");
        // The replica's own limit does not apply to its primary's RESTORE.
        limit(&mut p, "0");
        limit(&mut r, "65536");
        restore(&mut p, "copy").unwrap();
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
        let primary = Server::start(kind, &[], &["--appendonly", "yes"]);
        let replica = Server::start_with_address_space(kind, 3 << 30);
        let (mut p, mut r) = (primary.connect(), replica.connect());
        let _: String = redis::cmd("REPLICAOF")
            .arg(&["127.0.0.1", &primary.port.to_string()])
            .query(&mut r)
            .unwrap();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: no sync");
        let _: String = redis::cmd("WBF.RESERVE")
            .arg(&["wbig", "0.0000001", "1000000000"])
            .query(&mut p)
            .unwrap();
        let _: String = redis::cmd("BF.RESERVE")
            .arg(&["bbig", "0.0000001", "1000000000"])
            .query(&mut p)
            .unwrap();
        let sent = items("big", 0..50);
        let _: Vec<bool> = redis::cmd("WBF.MADD")
            .arg("wbig")
            .arg(&sent)
            .query(&mut p)
            .unwrap();
        let _: bool = redis::cmd("WBF.ADD")
            .arg(&["wbig", "one more"])
            .query(&mut p)
            .unwrap();
        let _: Vec<bool> = redis::cmd("BF.MADD")
            .arg("bbig")
            .arg(&sent)
            .query(&mut p)
            .unwrap();
        let _: bool = redis::cmd("BF.ADD")
            .arg(&["bbig", "one more"])
            .query(&mut p)
            .unwrap();
        // Keys the replica can build, made by an add with the defaults.
        let _: bool = redis::cmd("WBF.ADD")
            .arg(&["wsmall", "a"])
            .query(&mut p)
            .unwrap();
        let _: bool = redis::cmd("BF.ADD")
            .arg(&["bsmall", "a"])
            .query(&mut p)
            .unwrap();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        for key in ["wbig", "bbig"] {
            let exists: i64 = redis::cmd("EXISTS").arg(key).query(&mut r).unwrap();
            assert_eq!(
                exists, 0,
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
        let _: bool = redis::cmd("BF.ADD")
            .arg(&["bbig", "after a restart"])
            .query(&mut p)
            .unwrap();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        let exists: i64 = redis::cmd("EXISTS").arg("bbig").query(&mut r).unwrap();
        assert_eq!(exists, 0, "{kind:?}: a bbig of its own after a restart");
        // Renamed on the primary, the filters the replica could not build
        // go on under new names: the adds to those never create them there
        // either (this server never sees a RENAME of a key it does not
        // hold). The old names, free again, take new filters as any key.
        for (from, to) in [("bbig", "bbig2"), ("wbig", "wbig2")] {
            let _: String = redis::cmd("RENAME").arg(&[from, to]).query(&mut p).unwrap();
        }
        let _: bool = redis::cmd("BF.ADD")
            .arg(&["bbig2", "renamed"])
            .query(&mut p)
            .unwrap();
        let _: Vec<bool> = redis::cmd("BF.MADD")
            .arg("bbig2")
            .arg(&sent)
            .query(&mut p)
            .unwrap();
        let _: bool = redis::cmd("WBF.ADD")
            .arg(&["wbig2", "renamed"])
            .query(&mut p)
            .unwrap();
        let _: bool = redis::cmd("BF.ADD")
            .arg(&["bbig", "a new filter"])
            .query(&mut p)
            .unwrap();
        assert!(replica_caught_up(&mut p, &mut r), "{kind:?}: fell behind");
        for key in ["wbig2", "bbig2"] {
            let exists: i64 = redis::cmd("EXISTS").arg(key).query(&mut r).unwrap();
            assert_eq!(
                exists, 0,
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
        let from = primary.dir.join("appendonlydir");
        let to = short.dir.join("appendonlydir");
        std::fs::create_dir_all(&to).unwrap();
        for file in std::fs::read_dir(&from).unwrap() {
            let file = file.unwrap();
            std::fs::copy(file.path(), to.join(file.file_name())).unwrap();
        }
        short.launch().expect("the server starts from the AOF");
        let mut s = short.connect();
        for key in ["wbig", "wbig2", "bbig2"] {
            let exists: i64 = redis::cmd("EXISTS").arg(key).query(&mut s).unwrap();
            assert_eq!(
                exists, 0,
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
