//! Seeded fault schedules against a cluster: three Valkey primaries, each
//! behind a fault proxy (`faults/mod.rs`) that it announces as its own
//! address (`cluster-announce-port`), so that every connection the clients
//! make, those `CLUSTER SLOTS`, `MOVED` and `ASK` send them to included,
//! goes through a proxy. Per seed, drawn from it: reply faults on every
//! node (dropped after the node ran the command, cut mid-reply, delayed
//! past the clients' timeout), one node blackholed for a while, and in
//! two seeds of five one node SIGKILLed and restarted from its append-only
//! file and its cluster configuration. Three in-process clients crawl the
//! small web over six shards; every page is crawled exactly once and every
//! client finishes on its own, holding nothing.
//!
//! The same with a replica behind each primary (six nodes, six proxies,
//! the clients waiting for a replica with `WAIT`): per seed, besides the
//! reply faults and a blackholed node, one of a graceful `CLUSTER
//! FAILOVER`, a primary SIGKILLed (its replica takes over; it comes back
//! as the new primary's replica) or a replica SIGKILLed and restarted.
//!
//! `FLEET_CLUSTER_SEEDS=N` runs seeds 0..N (6 by default),
//! `FLEET_CLUSTER_SEEDS=a..b` seeds a..b, `FLEET_CLUSTER_SEED=n` one;
//! `FLEET_REPLICATED_SEEDS` and `FLEET_REPLICATED_SEED` likewise for the
//! cluster with replicas (4 by default). Seeds take turns between the
//! blocking and the tokio driver (in the cluster with replicas, a primary
//! killed on the tokio driver at seed 0, on the blocking one at seed 4);
//! `FLEET_DRIVER=blocking` or `tokio` runs every seed on one.

use test_servers as common;
mod crawling;
use test_servers::faults;

use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::FleetConfig;
use common::{Cluster, Kind};
use crawling::{reachable, small_web, Driver, Frontier};
use faults::{Proxy, Rng};

/// The clients' timeout: a delayed reply waits longer than this.
const TIMEOUT: Duration = Duration::from_millis(250);

/// How long the proxy holds a delayed reply: past the clients' timeout.
const DELAY: Duration = Duration::from_millis(300);

fn config(url: &str, prefix: &str) -> FleetConfig {
    crawling::exact_config(url, prefix, 6)
        .timeout(TIMEOUT)
        .retry_for(Duration::from_secs(3))
        .lease(Duration::from_secs(8))
}

/// With replicas: every pipeline waits for one, and calls retry long
/// enough to outlast a failover (the nodes' timeout is 1 s).
fn replicated_config(url: &str, prefix: &str) -> FleetConfig {
    config(url, prefix)
        .retry_for(Duration::from_secs(4))
        .wait_for_replicas(1, Duration::from_millis(150))
}

/// The nodes' timeout in the cluster with replicas: a primary SIGKILLed is
/// replaced by its replica a second or two later.
const NODE_TIMEOUT: &str = "1000";

/// A proxy in front of every node of `cluster` (dealing no faults until
/// reseeded), announced by its node.
fn behind_proxies(cluster: &mut Cluster) -> Vec<Proxy> {
    let proxies: Vec<Proxy> = (cluster.nodes.iter())
        .map(|node| Proxy::start(node.port, 0, 0, DELAY))
        .collect();
    announce_proxies(cluster, &proxies);
    proxies
}

/// The cluster with replicas: three Valkey primaries (a failover needs a
/// majority of them), each with a replica, every node with its AOF
/// (fsynced always) and `NODE_TIMEOUT`, behind its proxy; whole. The
/// cluster, its (primary, replica) pairs, and the proxies.
fn replicated_cluster() -> (Cluster, Vec<(usize, usize)>, Vec<Proxy>) {
    let extra = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--cluster-node-timeout",
        NODE_TIMEOUT,
    ];
    let mut cluster = Cluster::start_with(Kind::Valkey, 3, &extra);
    let pairs: Vec<(usize, usize)> = (0..3)
        .map(|primary| {
            (
                primary,
                cluster.add_replica_with(Kind::Valkey, primary, &extra),
            )
        })
        .collect();
    let proxies = behind_proxies(&mut cluster);
    wait_healthy(&cluster, &pairs);
    (cluster, pairs, proxies)
}

/// Each node announces its proxy's port (now, and on every restart); waits
/// (up to 30 s) until every node's `CLUSTER SLOTS` names proxies only
/// (replicas included).
fn announce_proxies(cluster: &mut Cluster, proxies: &[Proxy]) {
    for (node, proxy) in cluster.nodes.iter_mut().zip(proxies) {
        let port = proxy.port.to_string();
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-announce-port")
            .arg(&port)
            .query::<()>(&mut node.connect())
            .expect("CONFIG SET cluster-announce-port");
        node.push_extra(&["--cluster-announce-port", &port]);
    }
    let proxy_ports: Vec<i64> = proxies.iter().map(|proxy| i64::from(proxy.port)).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let announced = cluster.nodes.iter().all(|node| {
            let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(&mut node.connect())
                .unwrap_or_default();
            slot_ports(&slots)
                .iter()
                .all(|port| proxy_ports.contains(port))
        });
        if announced {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the nodes do not announce their proxies in 30 s"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

/// The ports a `CLUSTER SLOTS` reply names (each range's nodes).
fn slot_ports(slots: &[redis::Value]) -> Vec<i64> {
    let mut ports = Vec::new();
    for range in slots {
        if let redis::Value::Array(fields) = range {
            for node in fields.iter().skip(2) {
                if let redis::Value::Array(node) = node {
                    if let Some(redis::Value::Int(port)) = node.get(1) {
                        ports.push(*port);
                    }
                }
            }
        }
    }
    ports
}

/// A seed's start: every proxy dealing `per_mille` faults of each kind,
/// drawn from `seed`, and three clients on `driver` connected through
/// proxies 0, 1 and 2 under `prefix` with the settings `make` gives
/// (retried while a proxy still refuses); the clients, and the client
/// faults dealt before.
fn start_seed(
    proxies: &[Proxy],
    (seed, driver): (u64, Driver),
    per_mille: u64,
    prefix: &str,
    make: impl Fn(&str, &str) -> FleetConfig,
) -> (Vec<Frontier>, u64) {
    for (node, proxy) in proxies.iter().enumerate() {
        proxy.reseed(seed * proxies.len() as u64 + node as u64, per_mille);
    }
    let faults_before = faults_dealt(proxies);
    let frontiers = (0..3)
        .map(|client| Frontier::connect_retrying(&make(&proxies[client].url(), prefix), driver))
        .collect();
    (frontiers, faults_before)
}

/// Reply faults every proxy has dealt so far.
fn faults_dealt(proxies: &[Proxy]) -> u64 {
    (proxies.iter())
        .map(|proxy| {
            proxy
                .schedule
                .faults
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum()
}

/// What every seed checks at the end: each page crawled once, no client
/// holding work; prints the seed's faults and retries.
fn check_the_end(
    tallies: &[crawling::fleet::FleetTally],
    frontiers: &[Frontier],
    expected: &std::collections::HashSet<String>,
    faults: u64,
    what: &str,
) {
    crawling::each_page_once(tallies, expected, what);
    for frontier in frontiers {
        assert_eq!(
            frontier.held(),
            (0, 0),
            "{what}: a client holds work at the end"
        );
    }
    let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
    eprintln!("{what}: {faults} reply faults, {retries} retries");
}

/// One seed: a crawl through the proxies while the schedule runs.
fn run_seed(cluster: &mut Cluster, proxies: &[Proxy], seed: u64) -> (u64, bool) {
    let web = small_web();
    let expected = reachable(&web);
    let mut plan = Rng(seed ^ 0x0c10_57e4);
    // 0 to 15 faults per thousand reply chunks, each kind.
    let per_mille = plan.next() % 16;
    let driver = Driver::for_turn(seed);
    let (frontiers, faults_before) = start_seed(
        proxies,
        (seed, driver),
        per_mille,
        &format!("cseed{seed}"),
        config,
    );
    let blackholed = (plan.next() % 3) as usize;
    let blackhole_at = Duration::from_millis(plan.next() % 1000);
    let blackhole_for = Duration::from_millis(plan.next() % 1500);
    let restart = plan.chance(400);
    let restarted = (plan.next() % 3) as usize;
    let restart_at = Duration::from_millis(plan.next() % 1500);
    let fetch = crawling::fetch_slowly(&web, Duration::from_micros(200));
    let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
        let started = Instant::now();
        let mut events = vec![(blackhole_at, false), (restart_at, true)];
        events.sort();
        for (at, is_restart) in events {
            thread::sleep(at.saturating_sub(started.elapsed()));
            if !is_restart {
                proxies[blackholed].blackhole(blackhole_for);
            } else if restart {
                let node = &mut cluster.nodes[restarted];
                node.kill();
                node.launch()
                    .expect("the node starts again from its AOF and nodes.conf");
            }
        }
    });
    let what = format!(
        "cluster seed {seed} ({} driver, {per_mille}/1000 faults of each kind, node \
         {blackholed} blackholed {blackhole_for:?} at {blackhole_at:?}, node {restarted} \
         restarted: {restart} at {restart_at:?})",
        driver.name()
    );
    let faults = faults_dealt(proxies) - faults_before;
    check_the_end(&tallies, &frontiers, &expected, faults, &what);
    (faults, restart)
}

/// What befalls one shard of the cluster with replicas in a seed.
#[derive(Clone, Copy, Debug)]
enum ShardEvent {
    Nothing,
    /// Its replica takes over by `CLUSTER FAILOVER`.
    GracefulFailover,
    /// Its primary SIGKILLed 300 ms into a stall of its replication link
    /// (clients still write to it, the replica hears nothing): the replica
    /// takes over once the other primaries see the node fail, without
    /// what the primary applied in the stall; the node comes back as a
    /// replica. Only writes a replica acknowledged (`WAIT`) were answered.
    PrimaryKilled,
    /// Its replica SIGKILLed and restarted (writes wait for it meanwhile).
    ReplicaKilled,
}

/// The node of `pair` that answers as a primary (the first if neither yet).
fn primary_of(cluster: &Cluster, pair: (usize, usize)) -> usize {
    if cluster.is_primary(pair.1) && !cluster.is_primary(pair.0) {
        pair.1
    } else {
        pair.0
    }
}

/// Waits (up to 60 s) until every pair has one primary and a replica whose
/// link to it is up, and every node reports `cluster_state:ok`.
fn wait_healthy(cluster: &Cluster, pairs: &[(usize, usize)]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pairs_ok = pairs.iter().all(|&(a, b)| {
            let replica = if cluster.is_primary(a) { b } else { a };
            cluster.is_primary(a) != cluster.is_primary(b)
                && cluster.nodes[replica]
                    .info("replication")
                    .contains("master_link_status:up")
        });
        let states_ok = pairs_ok
            && cluster.nodes.iter().all(|node| {
                let info: String = node
                    .try_connect()
                    .and_then(|mut connection| {
                        redis::cmd("CLUSTER").arg("INFO").query(&mut connection)
                    })
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
            });
        if states_ok {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster is not whole again in 60 s"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// One seed of the cluster with replicas.
fn run_replicated_seed(
    cluster: &mut Cluster,
    proxies: &[Proxy],
    pairs: &[(usize, usize)],
    seed: u64,
) -> (u64, ShardEvent, u64) {
    let web = small_web();
    let expected = reachable(&web);
    let mut plan = Rng(seed ^ 0x2e91_1ca5);
    // 0 to 10 faults per thousand reply chunks, each kind.
    let per_mille = plan.next() % 11;
    let prefix = format!("rseed{seed}");
    // Seed 0 (a primary killed) on the tokio driver, seed 4 on the blocking.
    let driver = Driver::for_turn(seed + 1);
    let (frontiers, faults_before) = start_seed(
        proxies,
        (seed, driver),
        per_mille,
        &prefix,
        replicated_config,
    );
    let blackholed = (plan.next() % proxies.len() as u64) as usize;
    let blackhole_at = Duration::from_millis(plan.next() % 1000);
    let blackhole_for = Duration::from_millis(plan.next() % 1500);
    // In turn, so that any four seeds in a row try each.
    let event = match seed % 4 {
        0 => ShardEvent::PrimaryKilled,
        1 => ShardEvent::GracefulFailover,
        2 => ShardEvent::ReplicaKilled,
        _ => ShardEvent::Nothing,
    };
    let shard = (plan.next() % pairs.len() as u64) as usize;
    let event_at = Duration::from_millis(100 + plan.next() % 1200);
    let fetch = crawling::fetch_slowly(&web, Duration::from_micros(200));
    let mut lost_bytes = 0;
    let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
        let started = Instant::now();
        let mut events = vec![(blackhole_at, false), (event_at, true)];
        events.sort();
        for (at, is_shard_event) in events {
            thread::sleep(at.saturating_sub(started.elapsed()));
            if !is_shard_event {
                proxies[blackholed].blackhole(blackhole_for);
                continue;
            }
            let primary = primary_of(cluster, pairs[shard]);
            let replica = if primary == pairs[shard].0 {
                pairs[shard].1
            } else {
                pairs[shard].0
            };
            match event {
                ShardEvent::Nothing => {}
                ShardEvent::GracefulFailover => cluster.fail_over_to(replica),
                ShardEvent::PrimaryKilled => {
                    proxies[primary].stall_replication(Duration::from_secs(5));
                    // Clients write for 300 ms at least, and until the
                    // primary is ahead of what its replica has (up to 2 s).
                    let stalled = replication_offset(&cluster.nodes[primary], "master_repl_offset");
                    let deadline = Instant::now() + Duration::from_secs(2);
                    thread::sleep(Duration::from_millis(300));
                    let mut ahead =
                        replication_offset(&cluster.nodes[primary], "master_repl_offset");
                    while ahead <= stalled && Instant::now() < deadline {
                        thread::sleep(Duration::from_millis(20));
                        ahead = replication_offset(&cluster.nodes[primary], "master_repl_offset");
                    }
                    cluster.nodes[primary].kill();
                    proxies[primary].cut_replication();
                    let has = replication_offset(&cluster.nodes[replica], "slave_repl_offset");
                    lost_bytes = ahead.saturating_sub(has);
                    cluster.wait_until_primary(replica, Instant::now() + Duration::from_secs(30));
                    cluster.nodes[primary]
                        .launch()
                        .expect("the old primary starts again, as a replica");
                }
                ShardEvent::ReplicaKilled => {
                    let node = &mut cluster.nodes[replica];
                    node.kill();
                    thread::sleep(Duration::from_millis(200));
                    node.launch().expect("the replica starts again");
                }
            }
        }
    });
    let what = format!(
        "replicated cluster seed {seed} ({} driver, {per_mille}/1000 faults of each kind, \
         node {blackholed} blackholed {blackhole_for:?} at {blackhole_at:?}, shard {shard}: \
         {event:?} at {event_at:?}, {lost_bytes} bytes of replication stream lost)",
        driver.name()
    );
    let faults = faults_dealt(proxies) - faults_before;
    check_the_end(&tallies, &frontiers, &expected, faults, &what);
    drop(frontiers);
    wait_healthy(cluster, pairs);
    (faults, event, lost_bytes)
}

/// A replication offset field of `INFO replication` (0 if unreadable).
fn replication_offset(node: &common::Server, field: &str) -> u64 {
    node.info("replication")
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn seeded_cluster_schedules_lose_and_repeat_nothing() {
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut cluster = Cluster::start_with(Kind::Valkey, 3, &aof);
    let proxies = behind_proxies(&mut cluster);
    let seeds = faults::seeds("FLEET_CLUSTER_SEED", "FLEET_CLUSTER_SEEDS", 6);
    let (mut faults, mut restarts) = (0, 0);
    for &seed in &seeds {
        let (seed_faults, restarted) = run_seed(&mut cluster, &proxies, seed);
        faults += seed_faults;
        restarts += usize::from(restarted);
    }
    assert!(
        faults > 0,
        "the schedules dealt no fault: the clients bypass the proxies"
    );
    eprintln!(
        "{} cluster seeds passed: {faults} reply faults, {restarts} nodes restarted from their AOF",
        seeds.len()
    );
}

#[test]
fn seeded_replicated_cluster_schedules_lose_and_repeat_nothing() {
    let (mut cluster, pairs, proxies) = replicated_cluster();
    let seeds = faults::seeds("FLEET_REPLICATED_SEED", "FLEET_REPLICATED_SEEDS", 4);
    let (mut faults, mut lost_bytes, mut kills) = (0, 0, 0);
    let mut events = Vec::new();
    for &seed in &seeds {
        let (seed_faults, event, lost) = run_replicated_seed(&mut cluster, &proxies, &pairs, seed);
        faults += seed_faults;
        lost_bytes += lost;
        kills += usize::from(matches!(event, ShardEvent::PrimaryKilled));
        events.push(event);
    }
    assert!(
        faults > 0,
        "the schedules dealt no fault to a client: the clients bypass the proxies"
    );
    // A primary killed in a stall must have lost its replica writes, or
    // the kill tried nothing `WAIT` guards against.
    assert!(
        kills == 0 || lost_bytes > 0,
        "{kills} primaries killed and no replication stream lost: the stall held nothing"
    );
    eprintln!(
        "{} seeds of the cluster with replicas passed: {faults} reply faults to clients, \
         {lost_bytes} bytes of replication stream lost in {kills} primary kills; {events:?}",
        seeds.len()
    );
}

/// Issue 37: a `WAIT` covers only the last write made on its own
/// connection. An offer whose reply is lost while its primary's
/// replication link is stalled is sent again on a new connection, where it
/// answers from its stored result and writes nothing: the `WAIT` after it
/// must still wait for the offer's first run to reach the replica, or the
/// batch is acknowledged, the primary dies, the replica takes over without
/// it, and its URLs (held by the client's local filter, never pushed again)
/// are lost. Every URL pushed must be crawled.
#[test]
fn an_offer_sent_again_after_a_lost_reply_waits_for_its_replica() {
    // The victim is the first primary.
    let (mut cluster, pairs, proxies) = replicated_cluster();
    let replica = pairs[0].1;
    // A shard a node; batches leave on flush only.
    let config = replicated_config(&proxies[0].url(), "lost")
        .shards(3)
        .linger(Duration::from_secs(60));
    let frontier = atomic_bloom_fleet::FleetFrontier::connect(&config).expect("connects");
    frontier.push("https://warm.example/".into()).unwrap();
    frontier.flush().unwrap();
    proxies[0].stall_replication(Duration::from_secs(20));
    proxies[0].drop_reply_to(b":seen:");
    let urls: Vec<String> = (0..200)
        .map(|n| format!("https://lost{n}.example/"))
        .collect();
    for url in &urls {
        assert!(frontier.push(url.clone()).unwrap());
    }
    let flushed = frontier.flush();
    assert_eq!(
        proxies[0]
            .schedule
            .dropped_on_request
            .load(std::sync::atomic::Ordering::Relaxed),
        1,
        "the offer's reply was not dropped"
    );
    eprintln!("flush while the replica is stalled: {flushed:?}");
    // The primary dies with what its replica never had.
    cluster.nodes[0].kill();
    proxies[0].cut_replication();
    cluster.wait_until_primary(replica, Instant::now() + Duration::from_secs(30));
    cluster.nodes[0]
        .launch()
        .expect("the old primary starts again, as a replica");
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(error) = frontier.flush() {
        assert!(Instant::now() < deadline, "{error}");
    }
    let mut crawled = std::collections::HashSet::new();
    while !frontier.is_finished().unwrap_or(false) {
        assert!(Instant::now() < deadline, "the fleet never finished");
        while let Ok(Some(page)) = frontier.pop() {
            crawled.insert(page.url().to_string());
            frontier.complete(page);
        }
    }
    let lost: Vec<&String> = urls.iter().filter(|url| !crawled.contains(*url)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} URLs lost with the primary: their batch was acknowledged before its replica \
         had it",
        lost.len(),
        urls.len()
    );
}
