//! Seeded fault schedules against a real server: a TCP proxy between the
//! fleet's clients and the server drops replies after the server ran the
//! command, cuts connections in the middle of a reply, delays replies past
//! the clients' timeout and blackholes the server for a while, and the
//! server is killed and restarted from its append-only file, and one
//! client is cut off past its lease, each by a schedule drawn from the
//! seed. Per seed three in-process clients crawl the small web, each
//! through its own proxy; every page is crawled, twice only if the client
//! cut off had crawled it (or the server was out of every client's reach
//! long enough for a lease to lapse: a restart slowed by a loaded machine),
//! every client finishes on its own and holds nothing at the end, and a
//! client with other settings never joins.
//! (Processes SIGKILLed mid-crawl are `fleet_faults.rs`'s; the same
//! schedules against a cluster, `fleet_cluster_schedules.rs`'s.)
//!
//! `FLEET_SEEDS=N` runs seeds 0..N (30 by default), `FLEET_SEEDS=a..b`
//! seeds a..b, `FLEET_SEED=n` replays one. Even seeds run the blocking
//! driver, odd ones the tokio driver (`FLEET_DRIVER=blocking` or `tokio`
//! runs every seed on one). A failing seed names itself; the threads'
//! timing is not seeded, so a replay draws the same faults in a similar,
//! not identical, order. `FLEET_RESTART_PAUSE_MS=n` keeps the server down
//! n ms longer at each restart (as a loaded machine does).

use test_servers as common;
mod crawling;
use test_servers::faults;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::Error;
use atomic_bloom_fleet::FleetConfig;
use common::{Kind, Server};
use crawling::{reachable, small_web, Driver, Frontier};
use faults::{Proxy, Rng};

/// The clients' timeout: a delayed reply waits longer than this.
const TIMEOUT: Duration = Duration::from_millis(250);

/// How long the proxy holds a delayed reply: past the clients' timeout.
const DELAY: Duration = Duration::from_millis(300);

/// The clients' lease: a client cut off for longer loses its takes.
const LEASE: Duration = Duration::from_secs(6);

/// How long the server must be out of the clients' reach before a lease
/// may lapse: a lease is renewed every third of it, so the last renewal
/// before an outage may be that old, and a beat that fails is tried again
/// a timeout later.
const LAPSE: Duration =
    Duration::from_millis((LEASE.as_millis() * 2 / 3 - 2 * TIMEOUT.as_millis()) as u64);

/// The longest span of `outages` (from, to), overlapping ones joined.
fn longest_outage(mut outages: Vec<(Duration, Duration)>) -> Duration {
    outages.sort();
    let mut joined: Vec<(Duration, Duration)> = Vec::new();
    for (from, to) in outages {
        match joined.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => joined.push((from, to)),
        }
    }
    (joined.iter().map(|(from, to)| to.saturating_sub(*from)))
        .max()
        .unwrap_or_default()
}

/// Every page of `expected` crawled; a page crawled twice only if the
/// client `stalled` (cut off past its lease) crawled it, or any page if
/// the server was out of every client's reach long enough for leases to
/// lapse (`lapsed`), and at most twice.
fn only_the_stalled_repeat(
    tallies: &[crawling::fleet::FleetTally],
    expected: &HashSet<String>,
    (stalled, lapsed): (Option<usize>, bool),
    what: &str,
) {
    let mut count: HashMap<&String, usize> = HashMap::new();
    for tally in tallies {
        for page in &tally.crawled {
            *count.entry(page).or_default() += 1;
        }
    }
    let missing = expected
        .iter()
        .filter(|page| !count.contains_key(page))
        .count();
    assert_eq!(missing, 0, "{what}: {missing} pages never crawled");
    assert_eq!(count.len(), expected.len(), "{what}: pages not of the web");
    let stalled_pages: HashSet<&String> = (stalled.iter())
        .flat_map(|&stalled| &tallies[stalled].crawled)
        .collect();
    let twice = count.values().filter(|&&times| times > 1).count();
    for (page, &times) in &count {
        assert!(
            times == 1 || (times == 2 && (lapsed || stalled_pages.contains(page))),
            "{what}: {page} crawled {times} times"
        );
    }
    let whose = if lapsed {
        "leases lapsed while the server was out of reach"
    } else {
        "all the stalled client's"
    };
    eprintln!("{what}: {twice} pages crawled twice, {whose}");
}

fn config(url: &str, prefix: &str) -> FleetConfig {
    crawling::exact_config(url, prefix, 4)
        .timeout(TIMEOUT)
        .retry_for(Duration::from_secs(2))
        .lease(LEASE)
}

/// One seed: a crawl through the proxy while the schedule runs.
fn run_seed(server: &mut Server, seed: u64) -> (u64, bool) {
    let web = small_web();
    let expected = reachable(&web);
    let mut plan = Rng(seed ^ 0x5eed);
    // 0 to 20 faults per thousand reply chunks, each kind.
    let per_mille = plan.next() % 21;
    // A proxy per client, so that one client can be cut off alone.
    let proxies: Vec<Proxy> = (0..3)
        .map(|client| Proxy::start(server.port, seed * 3 + client, per_mille, DELAY))
        .collect();
    let prefix = format!("seed{seed}");
    let driver = Driver::for_turn(seed);
    let frontiers: Vec<Frontier> = (proxies.iter())
        .map(|proxy| Frontier::connect_retrying(&config(&proxy.url(), &prefix), driver))
        .collect();
    let blackhole_at = Duration::from_millis(plan.next() % 1000);
    let blackhole_for = Duration::from_millis(plan.next() % 1200);
    let restart = plan.chance(300);
    let restart_at = Duration::from_millis(plan.next() % 1000);
    // In one seed of five, one client is cut off past its lease (as a
    // process stopped with SIGSTOP would be): its leased pages go to the
    // others, and it finishes once it is back.
    let stalled = plan.chance(200).then(|| (plan.next() % 3) as usize);
    let stall_at = blackhole_at + blackhole_for + Duration::from_millis(plan.next() % 500);
    let fetch = crawling::fetch_slowly(&web, Duration::from_micros(200));
    let restart_pause = std::env::var("FLEET_RESTART_PAUSE_MS").map_or(0, |ms| {
        ms.parse()
            .expect("FLEET_RESTART_PAUSE_MS is a number of milliseconds")
    });
    // When the server was out of every client's reach (the blackhole, a
    // restart), as the events ran: they run one after the other, and a
    // restart on a loaded machine can take seconds.
    let mut outages = Vec::new();
    let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
        let started = Instant::now();
        let mut events = vec![(blackhole_at, 0), (restart_at, 1), (stall_at, 2)];
        events.sort();
        for (at, event) in events {
            thread::sleep(at.saturating_sub(started.elapsed()));
            match event {
                0 => {
                    let from = started.elapsed();
                    (proxies.iter()).for_each(|proxy| proxy.blackhole(blackhole_for));
                    outages.push((from, from + blackhole_for));
                }
                2 => {
                    if let Some(victim) = stalled {
                        // Once it holds work (or 3 s on).
                        let holding = Instant::now();
                        while frontiers[victim].held() == (0, 0)
                            && holding.elapsed() < Duration::from_secs(3)
                        {
                            thread::sleep(Duration::from_millis(1));
                        }
                        proxies[victim].blackhole(LEASE + Duration::from_secs(1));
                    }
                }
                1 if restart => {
                    let from = started.elapsed();
                    server.kill();
                    thread::sleep(Duration::from_millis(restart_pause));
                    server
                        .launch()
                        .expect("the server starts again from its AOF");
                    outages.push((from, started.elapsed()));
                }
                _ => {}
            }
        }
        // A process with another shard count never joins.
        let other = config(&proxies[0].url(), &prefix).shards(8);
        for _ in 0..20 {
            match Frontier::connect(&other, driver) {
                Err(Error::FleetSettingsDiffer { .. }) => break,
                Err(Error::ServerUnavailable { .. }) => continue,
                Ok(_) => panic!("seed {seed}: a client with 8 shards joined a fleet of 4"),
                Err(error) => panic!("seed {seed}: {error}"),
            }
        }
    });
    let outage = longest_outage(outages);
    let lapsed = outage >= LAPSE;
    let what = format!(
        "seed {seed} ({} driver, {per_mille}/1000 faults of each kind, blackhole {blackhole_for:?} at \
         {blackhole_at:?}, restart {restart} at {restart_at:?}, client {stalled:?} cut off \
         past its lease at {stall_at:?}, server out of reach {outage:?} at most)",
        driver.name()
    );
    match (stalled, lapsed) {
        (None, false) => crawling::each_page_once(&tallies, &expected, &what),
        (stalled, lapsed) => only_the_stalled_repeat(&tallies, &expected, (stalled, lapsed), &what),
    }
    for frontier in &frontiers {
        assert_eq!(
            frontier.held(),
            (0, 0),
            "{what}: a client holds work at the end"
        );
    }
    let faults: u64 = (proxies.iter())
        .map(|proxy| proxy.schedule.faults.load(Ordering::Relaxed))
        .sum();
    let errors: usize = tallies.iter().map(|tally| tally.errors).sum();
    let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
    eprintln!(
        "seed {seed}: {faults} reply faults, {retries} retries, {errors} errors the crawl saw"
    );
    (faults, restart)
}

#[test]
fn seeded_fault_schedules_lose_and_repeat_nothing() {
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut server = Server::start(Kind::Valkey, &[], &aof);
    let (mut faults, mut restarts) = (0, 0);
    let seeds = faults::seeds("FLEET_SEED", "FLEET_SEEDS", 30);
    for &seed in &seeds {
        let (seed_faults, restarted) = run_seed(&mut server, seed);
        faults += seed_faults;
        restarts += usize::from(restarted);
    }
    eprintln!(
        "{} seeds passed: {faults} reply faults, {restarts} restarts from the AOF",
        seeds.len()
    );
}
