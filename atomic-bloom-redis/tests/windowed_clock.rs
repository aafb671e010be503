//! A time window keeps time by the server's monotonic clock, not its wall
//! clock: a server whose wall clock steps (NTP, an operator's `date -s`, a
//! VM resumed) neither forgets an item inside its window nor keeps one past
//! its horizon, and what it saves carries the time left, not an instant of
//! its clock. Valkey runs under libfaketime (Debian's `libfaketime`;
//! `.ci/install-servers` installs it) with only the wall clock faked
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`), stepped by rewriting the file it
//! reads; a second server, unfaked, takes a `RESTORE`.
//!
//! Not Redis 7.0: Debian's is built with jemalloc, and under libfaketime
//! 0.9.10 (Debian 12's) it hangs before it serves (wolfcw/libfaketime#130:
//! jemalloc's initialisation reads the clock, libfaketime's first call
//! looks up `__ftime`, which glibc no longer has, and the lookup's error
//! message needs `malloc`, which waits for jemalloc's initialisation). The
//! module reads the same clock there (`RedisModule_MonotonicMicroseconds`,
//! Redis 7.0's API as Valkey's).

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{dump_payload, Kind, Server};

/// libfaketime's library for threaded programs (the servers run threads
/// of their own): `$FAKETIME_LIB`, or Debian's.
fn faketime_library() -> PathBuf {
    std::env::var_os("FAKETIME_LIB")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"))
}

/// A server of `kind` whose wall clock is the real one plus what
/// [`step`] last wrote (seconds, signed); its monotonic clock is the
/// real one.
fn stepped_server(kind: Kind) -> (Server, PathBuf) {
    let library = faketime_library();
    assert!(
        library.exists(),
        "{} is missing: `apt-get install -y faketime` (or set FAKETIME_LIB)",
        library.display()
    );
    let mut server = Server::unlaunched(kind, &[], &[]);
    let offset = server.dir.join("faketime");
    write_offset(&offset, 0);
    server.set_env("LD_PRELOAD", &library.to_string_lossy());
    server.set_env("FAKETIME_TIMESTAMP_FILE", &offset.to_string_lossy());
    server.set_env("FAKETIME_NO_CACHE", "1");
    server.set_env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    // No shared memory for child processes (it outlives a killed server).
    server.set_env("FAKETIME_DISABLE_SHM", "1");
    server
        .launch()
        .expect("the server starts under libfaketime");
    (server, offset)
}

/// Sets the stepped server's wall clock to the real one plus `seconds`,
/// and waits (up to 5 s) until its `TIME` says so: libfaketime reads the
/// file again once a second. A new file is renamed over the old, so that
/// the server never reads one half written.
fn step(c: &mut redis::Connection, offset: &Path, seconds: i64) {
    write_offset(offset, seconds);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ahead = server_seconds(c) - real_seconds();
        if (ahead - seconds).abs() < 60 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the wall clock did not step to {seconds:+} s (it is {ahead:+} s)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write_offset(offset: &Path, seconds: i64) {
    let next = offset.with_extension("next");
    std::fs::write(&next, format!("{seconds:+}\n")).expect("the offset file");
    std::fs::rename(&next, offset).expect("the offset file");
}

/// The server's wall clock (`TIME`), in seconds since the Unix epoch.
fn server_seconds(c: &mut redis::Connection) -> i64 {
    let (seconds, _): (i64, i64) = redis::cmd("TIME").query(c).unwrap();
    seconds
}

fn real_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn items(prefix: &str) -> Vec<String> {
    (0..300)
        .map(|i| format!("https://{prefix}.example/page{i}.html"))
        .collect()
}

fn found(c: &mut redis::Connection, key: &str, items: &[String]) -> usize {
    let answers: Vec<bool> = redis::cmd("WBF.MEXISTS")
        .arg(key)
        .arg(items)
        .query(c)
        .unwrap();
    answers.into_iter().filter(|&f| f).count()
}

fn ok(c: &mut redis::Connection, args: &[&str]) {
    let reply: String = redis::cmd(args[0]).arg(&args[1..]).query(c).unwrap();
    assert_eq!(reply, "OK", "{args:?}");
}

/// Forward 2 h: a 1 h window still holds items added a moment before (it
/// forgot them all). Back 5 h: a 2 s window has forgotten its items 3 s
/// later (it kept them until the wall clock came back). A `DEBUG RELOAD`
/// and a `DUMP` restored on a server whose wall clock is hours apart carry
/// the time left.
#[test]
fn a_stepped_wall_clock_neither_forgets_early_nor_keeps_late() {
    // Valkey only (see the file's docs).
    let kind = Kind::Valkey;
    let (server, offset) = stepped_server(kind);
    let plain = Server::start(kind, &[], &[]);
    let mut c = server.connect();
    let mut other = plain.connect();

    ok(
        &mut c,
        &["WBF.RESERVE", "hour", "0.01", "1000", "TIME", "3600"],
    );
    let hour = items("hour");
    let _: Vec<bool> = redis::cmd("WBF.MADD")
        .arg("hour")
        .arg(&hour)
        .query(&mut c)
        .unwrap();
    step(&mut c, &offset, 7200);
    assert_eq!(
        found(&mut c, "hour", &hour),
        hour.len(),
        "{kind:?}: a 2 h step of the wall clock forgot items a moment old in a 1 h window"
    );
    let _: String = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
    assert_eq!(found(&mut c, "hour", &hour), hour.len(), "{kind:?}: reload");

    ok(
        &mut c,
        &["WBF.RESERVE", "short", "0.01", "1000", "TIME", "2"],
    );
    let short = items("short");
    let added = Instant::now();
    let _: Vec<bool> = redis::cmd("WBF.MADD")
        .arg("short")
        .arg(&short)
        .query(&mut c)
        .unwrap();
    step(&mut c, &offset, 7200 - 5 * 3600);
    // Carried to a server whose wall clock is 3 h ahead of this one's.
    let payload = dump_payload(&mut c, "short").expect("DUMP short");
    let _: String = redis::cmd("RESTORE")
        .arg("short")
        .arg(0)
        .arg(payload)
        .query(&mut other)
        .unwrap();
    assert_eq!(found(&mut other, "short", &short), short.len(), "{kind:?}");
    // The horizon is 2.5 s (5 generations of 0.5 s) after the adds.
    std::thread::sleep(Duration::from_millis(3000).saturating_sub(added.elapsed()));
    let kept = found(&mut c, "short", &short);
    // 300 probes at 1%: 3 false positives on average.
    assert!(
        kept <= 15,
        "{kind:?}: {kept} of 300 items kept past a 2 s window after a 5 h step back"
    );
    let carried = found(&mut other, "short", &short);
    assert!(carried <= 15, "{kind:?}: {carried} kept after RESTORE");
    // And the 1 h window still holds its items, the clock stepped twice.
    assert_eq!(found(&mut c, "hour", &hour), hour.len(), "{kind:?}: back");
}
