//! Seeded fault schedules against a cluster: three Valkey nodes, each
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
//! `FLEET_CLUSTER_SEEDS=N` runs seeds 0..N (6 by default),
//! `FLEET_CLUSTER_SEEDS=a..b` seeds a..b, `FLEET_CLUSTER_SEED=n` one.

mod common;
mod crawling;
mod faults;

use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom::fleet::{FleetConfig, FleetFrontier};
use atomic_bloom::Error;
use common::{Cluster, Kind};
use crawling::{reachable, small_web};
use faults::{Proxy, Rng};

/// The clients' timeout: a delayed reply waits longer than this.
const TIMEOUT: Duration = Duration::from_millis(250);

/// How long the proxy holds a delayed reply: past the clients' timeout.
const DELAY: Duration = Duration::from_millis(300);

fn config(url: &str, prefix: &str) -> FleetConfig {
    FleetConfig::new(url)
        .prefix(prefix)
        .shards(6)
        .capacity(10_000, 1e-7)
        .local_filter(10_000, 1e-8)
        .pop_batch(16)
        .timeout(TIMEOUT)
        .retry_for(Duration::from_secs(3))
        .lease(Duration::from_secs(8))
}

/// Each node announces its proxy's port (now, and on every restart); waits
/// (up to 30 s) until every node's `CLUSTER SLOTS` names proxies only.
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

/// One seed: a crawl through the proxies while the schedule runs.
fn run_seed(cluster: &mut Cluster, proxies: &[Proxy], seed: u64) -> (u64, bool) {
    let web = small_web();
    let expected = reachable(&web);
    let mut plan = Rng(seed ^ 0x0c10_57e4);
    // 0 to 15 faults per thousand reply chunks, each kind.
    let per_mille = plan.next() % 16;
    for (node, proxy) in proxies.iter().enumerate() {
        proxy.reseed(seed * 3 + node as u64, per_mille);
    }
    let faults_before: u64 = (proxies.iter())
        .map(|proxy| {
            proxy
                .schedule
                .faults
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    let prefix = format!("cseed{seed}");
    let frontiers: Vec<FleetFrontier> = (0..3)
        .map(|client| {
            let url = proxies[client].url();
            let mut tries = 0;
            loop {
                match FleetFrontier::connect(&config(&url, &prefix)) {
                    Ok(frontier) => break frontier,
                    Err(Error::ServerUnavailable { .. }) if tries < 40 => tries += 1,
                    Err(other) => panic!("seed {seed}: connect: {other}"),
                }
            }
        })
        .collect();
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
        "cluster seed {seed} ({per_mille}/1000 faults of each kind, node {blackholed} \
         blackholed {blackhole_for:?} at {blackhole_at:?}, node {restarted} restarted: \
         {restart} at {restart_at:?})"
    );
    crawling::each_page_once(&tallies, &expected, &what);
    for frontier in &frontiers {
        assert_eq!(
            frontier.held(),
            (0, 0),
            "{what}: a client holds work at the end"
        );
    }
    let faults: u64 = (proxies.iter())
        .map(|proxy| {
            proxy
                .schedule
                .faults
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum::<u64>()
        - faults_before;
    let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
    eprintln!("{what}: {faults} reply faults, {retries} retries");
    (faults, restart)
}

#[test]
fn seeded_cluster_schedules_lose_and_repeat_nothing() {
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut cluster = Cluster::start_with(Kind::Valkey, 3, &aof);
    let proxies: Vec<Proxy> = (cluster.nodes.iter())
        .map(|node| Proxy::start(node.port, 0, 0, DELAY))
        .collect();
    announce_proxies(&mut cluster, &proxies);
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
