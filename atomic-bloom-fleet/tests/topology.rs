//! The fleet client while the servers under it change, against real
//! servers: a node that dies stops only its own shards, a slot migrated
//! mid-crawl (`ASK`, `TRYAGAIN`), a failover mid-crawl with `WAIT` on, and
//! too few replicas for `WAIT`.

use test_servers as common;
mod crawling;
use test_servers::faults;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::Error;
use atomic_bloom_fleet::{FleetConfig, FleetFrontier};
use common::{node_id, Cluster, Kind, Server};
use crawling::{reachable, small_web, Driver, Frontier};
use faults::Rng;

/// Rates small enough for an exact crawl, short retries.
fn config(url: &str, prefix: &str, shards: usize) -> FleetConfig {
    crawling::exact_config(url, prefix, shards)
        .timeout(Duration::from_millis(500))
        .retry_for(Duration::from_secs(5))
        .lease(Duration::from_secs(30))
}

fn three(config: &FleetConfig, driver: Driver) -> Vec<Frontier> {
    (0..3)
        .map(|_| Frontier::connect(config, driver).expect("connects"))
        .collect()
}

/// A slot on its way from `source` to `target`: open (`CLUSTER SETSLOT`
/// `IMPORTING` on the target, `MIGRATING` on the source) until `close`.
struct Migration<'a> {
    slot: i64,
    target: &'a Server,
    from: redis::Connection,
    target_id: String,
}

impl<'a> Migration<'a> {
    /// Opens the migration of the slot of `key` (a key on `source`).
    fn open(source: &'a Server, target: &'a Server, key: &str) -> Migration<'a> {
        let mut from = source.connect();
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut from)
            .unwrap();
        let target_id = node_id(target);
        set_slot(target, slot, "IMPORTING", &node_id(source));
        set_slot(source, slot, "MIGRATING", &target_id);
        Migration {
            slot,
            target,
            from,
            target_id,
        }
    }

    /// `MIGRATE`s `keys` (if any) from the source to the target.
    fn migrate(&mut self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(self.target.port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("REPLACE")
            .arg("KEYS")
            .arg(keys)
            .query::<()>(&mut self.from)
            .unwrap()
    }

    /// Moves every key of the slot left on the source, `batch` keys a
    /// `MIGRATE`, `pause` after each.
    fn migrate_all(&mut self, batch: usize, pause: Duration) {
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(self.slot)
                .arg(batch)
                .query(&mut self.from)
                .unwrap();
            if keys.is_empty() {
                return;
            }
            self.migrate(&keys);
            std::thread::sleep(pause);
        }
    }

    /// Ends it: each of `nodes` gives the slot to the target.
    fn close<'b>(&self, nodes: impl IntoIterator<Item = &'b Server>) {
        for node in nodes {
            set_slot(node, self.slot, "NODE", &self.target_id);
        }
    }
}

/// `CLUSTER SETSLOT slot state id` on `server`.
fn set_slot(server: &Server, slot: i64, state: &str, id: &str) {
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg(state)
        .arg(id)
        .query::<()>(&mut server.connect())
        .unwrap()
}

#[test]
fn a_node_that_dies_stops_only_its_own_shards() {
    // Without full coverage required, the live nodes serve their slots
    // while the dead one's have no owner (no replica takes over).
    let mut cluster =
        Cluster::start_with(Kind::Valkey, 3, &["--cluster-require-full-coverage", "no"]);
    let config = config(&cluster.nodes[0].url(), "partial", 6)
        .retry_for(Duration::from_millis(300))
        .lease(Duration::from_secs(3));
    let frontier = FleetFrontier::connect(&config).unwrap();
    let urls: Vec<String> = (0..600)
        .map(|n| format!("https://site{n}.example/"))
        .collect();
    for url in &urls {
        frontier.push(url.clone()).unwrap();
    }
    frontier.flush().unwrap();
    // Two of the six shards live on the third node.
    let mut third = cluster.nodes[2].connect();
    let on_third: usize = redis::cmd("KEYS")
        .arg("partial:queue:*")
        .query::<Vec<String>>(&mut third)
        .unwrap()
        .iter()
        .map(|key| {
            redis::cmd("LLEN")
                .arg(key)
                .query::<usize>(&mut third)
                .unwrap()
        })
        .sum();
    assert!(on_third > 100, "{on_third} URLs on the third node");
    cluster.nodes[2].kill();
    // Pops go on from the shards of the two live nodes, each call a
    // shard's retry late at most.
    let started = Instant::now();
    let mut popped = HashSet::new();
    let mut errors = 0;
    while popped.len() < urls.len() - on_third {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "pops stopped at {}",
            popped.len()
        );
        match frontier.pop() {
            Ok(Some(page)) => {
                assert!(popped.insert(page.url().to_string()));
                frontier.push(format!("{}child", page.url())).ok();
                frontier.complete(page);
            }
            Ok(None) => {}
            Err(Error::ServerUnavailable { node, .. }) => {
                assert_eq!(node, format!("127.0.0.1:{}", cluster.nodes[2].port));
                errors += 1;
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    eprintln!(
        "{} pops, {errors} errors naming the dead node",
        popped.len()
    );
    // The children on live shards went out; those for the dead one wait.
    let error = frontier.flush().expect_err("the dead node's batches wait");
    assert!(
        error
            .to_string()
            .contains(&cluster.nodes[2].port.to_string()),
        "{error}"
    );
    // A page held for two leases while every call retries on the dead
    // node keeps its lease: the heartbeat renews it all along.
    let held = loop {
        if let Ok(Some(page)) = frontier.pop() {
            break page;
        }
    };
    let holding = Instant::now();
    while holding.elapsed() < Duration::from_secs(6) {
        frontier
            .flush()
            .expect_err("the dead node's batches still wait");
    }
    let other = FleetFrontier::connect(&config).unwrap();
    let mut taken_by_other = HashSet::new();
    let looking = Instant::now();
    while looking.elapsed() < Duration::from_secs(2) {
        if let Ok(Some(page)) = other.pop() {
            taken_by_other.insert(page.url().to_string());
            other.complete(page);
        }
    }
    // The other client, idle, takes from the live shards (the children
    // pushed above wait there) although a node is down.
    assert!(
        !taken_by_other.is_empty(),
        "a client that joined while a node was down popped nothing from the live shards"
    );
    assert!(
        !taken_by_other.contains(held.url()),
        "{} went to another client while its holder lived",
        held.url()
    );
    frontier.complete(held);
}

/// How long a page's fetch takes in the crawls that move slots or fail
/// over mid-way: 400 us per worker of a client, so that a crawl lasts as
/// long as it did with one worker a client (about 400 ms of fetches, and
/// the round trips beside). At 400 us with 4 workers a client a crawl
/// could end before the slot moved or the primary failed over (once each
/// here: "index out of bounds" for a queue key already gone, "the
/// failovers went unnoticed").
fn page_time(driver: Driver) -> Duration {
    let workers = match driver {
        Driver::Blocking => crawling::BLOCKING_WORKERS,
        Driver::Tokio => crawling::TOKIO_WORKERS,
    };
    Duration::from_micros(400) * workers as u32
}

#[test]
fn a_slot_migrated_mid_crawl_loses_and_repeats_nothing() {
    let web = small_web();
    let expected = reachable(&web);
    for kind in common::KINDS {
        let cluster = Cluster::start(kind, 3);
        let config = config(&cluster.nodes[1].url(), "moving", 3);
        let frontiers = three(&config, Driver::Blocking);
        let fetch = crawling::fetch_slowly(&web, page_time(Driver::Blocking));
        let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
            std::thread::sleep(Duration::from_millis(300));
            // Shard 0's slot moves from the first node to the second, a
            // key at a time, while the crawl goes on.
            let (source, target) = (&cluster.nodes[0], &cluster.nodes[1]);
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("moving:queue:*")
                .query(&mut source.connect())
                .unwrap();
            let mut migration = Migration::open(source, target, &keys[0]);
            migration.migrate_all(1, Duration::from_millis(30));
            migration.close(&cluster.nodes);
        });
        crawling::each_page_once(&tallies, &expected, &format!("{kind:?}"));
        let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
        eprintln!("{kind:?}: {retries} retries");
    }
}

/// Three clients on `driver` crawl a one-primary cluster with a replica,
/// `WAIT` on, while the primary fails over after each of `waits` (the
/// first to the replica, the next back, and so on); every page is crawled
/// exactly once and the failovers were noticed.
fn crawl_through_failovers(kind: Kind, prefix: &str, waits: &[Duration], driver: Driver) {
    let web = small_web();
    let expected = reachable(&web);
    let mut cluster = Cluster::start(kind, 1);
    let replica = cluster.add_replica(kind, 0);
    let config =
        config(&cluster.nodes[0].url(), prefix, 4).wait_for_replicas(1, Duration::from_millis(300));
    let frontiers = three(&config, driver);
    let fetch = crawling::fetch_slowly(&web, page_time(driver));
    let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
        let mut to = replica;
        for &wait in waits {
            std::thread::sleep(wait);
            cluster.fail_over_to(to);
            to = if to == replica { 0 } else { replica };
        }
    });
    crawling::each_page_once(&tallies, &expected, &format!("{kind:?} {prefix}"));
    let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
    assert!(
        retries > 0,
        "{kind:?} {prefix}: the failovers went unnoticed"
    );
    eprintln!("{kind:?} {prefix}: failovers after {waits:?}, {retries} retries");
}

#[test]
fn a_failover_mid_crawl_with_wait_loses_and_repeats_nothing() {
    for kind in common::KINDS {
        crawl_through_failovers(
            kind,
            "failover",
            &[Duration::from_millis(400)],
            Driver::Blocking,
        );
    }
}

/// Seeded failover schedules: per seed, one to three failovers (each
/// undoing the last) at intervals the seed draws, from early in the crawl.
/// `FLEET_FAILOVER_SEEDS=N` runs seeds 0..N (3 by default),
/// `FLEET_FAILOVER_SEED=n` replays one (the crawl's timing is not seeded).
/// Even seeds run the blocking driver, odd ones the tokio driver
/// (`FLEET_DRIVER` for one).
#[test]
fn seeded_failover_schedules_lose_and_repeat_nothing() {
    for seed in faults::seeds("FLEET_FAILOVER_SEED", "FLEET_FAILOVER_SEEDS", 3) {
        let mut rng = Rng(seed ^ 0xfa11);
        let failovers = 1 + rng.next() % 3;
        let waits: Vec<Duration> = (0..failovers)
            .map(|_| Duration::from_millis(50 + rng.next() % 400))
            .collect();
        let prefix = format!("failover-seed{seed}");
        crawl_through_failovers(Kind::Valkey, &prefix, &waits, Driver::for_turn(seed));
    }
}

#[test]
fn too_few_replicas_is_an_error_until_one_has_the_writes() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let port = server.port.to_string();
    let mut replica = Server::start(Kind::Valkey, &[], &["--replicaof", "127.0.0.1", &port]);
    let config = config(&server.url(), "durable", 2)
        .retry_for(Duration::from_millis(300))
        .wait_for_replicas(1, Duration::from_millis(200));
    // Connecting writes the fleet's settings, so it waits for the replica.
    let deadline = Instant::now() + Duration::from_secs(30);
    let frontier = loop {
        match FleetFrontier::connect(&config) {
            Ok(frontier) => break frontier,
            Err(error) => assert!(Instant::now() < deadline, "{error}"),
        }
    };
    replica.kill();
    // Every write waits for the replica: the busy mark, the batch.
    match frontier.push("https://example.com/".to_string()) {
        Err(Error::ServerUnavailable { reason, .. }) => {
            assert!(reason.contains("replicas"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    replica.launch().expect("the replica starts again");
    loop {
        let pushed = frontier.push("https://example.com/".to_string());
        if pushed.is_ok() && frontier.flush().is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "{pushed:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Sent again and again, queued once.
    let page = frontier.pop().unwrap().expect("the URL");
    assert_eq!(page.url(), "https://example.com/");
    frontier.complete(page);
    assert!(frontier.pop().unwrap().is_none());
    let mut connection = replica.connect();
    let queued: Vec<String> = redis::cmd("KEYS")
        .arg("durable:queue:*")
        .query(&mut connection)
        .unwrap();
    assert!(
        queued.is_empty(),
        "the replica saw the URL taken: {queued:?}"
    );
}

/// With `wait_for_aof`, every pipeline waits for the node's fsync, and a
/// server killed right after a batch comes back from its AOF with every
/// URL. (A killed process loses nothing its AOF `write` held in any case;
/// what the fsync adds shows only when the machine itself goes down,
/// which a test here cannot do.) A server without `WAITAOF` (Redis 7.0),
/// or without an AOF, is refused at connect.
#[test]
fn wait_for_aof_waits_for_the_fsync_and_refuses_a_server_without_it() {
    let aof = ["--appendonly", "yes", "--appendfsync", "everysec"];
    let mut server = Server::start(Kind::Valkey, &[], &aof);
    let fsynced = |url: &str| config(url, "fsynced", 2).wait_for_aof(Duration::from_millis(400));
    let frontier = FleetFrontier::connect(&fsynced(&server.url())).unwrap();
    let urls: Vec<String> = (0..500)
        .map(|n| format!("https://example.com/{n}"))
        .collect();
    for url in &urls {
        frontier.push(url.clone()).unwrap();
    }
    frontier.flush().unwrap();
    server.kill();
    server
        .launch()
        .expect("the server starts again from its AOF");
    let mut popped = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while popped.len() < urls.len() {
        assert!(
            Instant::now() < deadline,
            "{} of {} URLs came back",
            popped.len(),
            urls.len()
        );
        if let Ok(Some(page)) = frontier.pop() {
            popped.insert(page.url().to_string());
            frontier.complete(page);
        }
    }
    assert_eq!(popped, urls.into_iter().collect::<HashSet<_>>());

    let old = Server::start(Kind::Redis, &[], &aof);
    match FleetFrontier::connect(&fsynced(&old.url())) {
        Err(Error::ServerRefused { message, .. }) => {
            assert!(message.contains("WAITAOF"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let no_aof = Server::start(Kind::Valkey, &[], &[]);
    match FleetFrontier::connect(&fsynced(&no_aof.url())) {
        Err(Error::ServerRefused { message, .. }) => {
            assert!(message.contains("appendonly"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

/// A take answered through `ASK` (its slot migrating, its keys already on
/// the node the slot moves to) waits for the replicas as any other: with
/// that node's replica gone, no URL is handed out from it, since a
/// failover could undo the take.
#[test]
fn a_take_answered_through_ask_waits_for_the_replicas() {
    let mut cluster = Cluster::start(Kind::Valkey, 2);
    cluster.add_replica(Kind::Valkey, 0);
    let replica_of_second = cluster.add_replica(Kind::Valkey, 1);
    let config = config(&cluster.nodes[0].url(), "asked", 2)
        .retry_for(Duration::from_millis(300))
        .lease(Duration::from_secs(30))
        .wait_for_replicas(1, Duration::from_millis(200));
    let holder = FleetFrontier::connect(&config).unwrap();
    for n in 0..200 {
        holder.push(format!("https://site{n}.example/")).unwrap();
    }
    holder.flush().unwrap();
    // A take held, so that shard 0's lease keys exist.
    let held = holder.pop().unwrap().expect("a URL");
    // Shard 0 (on the first node) moves to the second, every key of it,
    // and the slot stays migrating: its commands are answered through ASK.
    let (source, target) = (&cluster.nodes[0], &cluster.nodes[1]);
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("asked:queue:*")
        .query(&mut source.connect())
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    Migration::open(source, target, &keys[0]).migrate_all(10, Duration::ZERO);
    cluster.nodes[replica_of_second].kill();
    let taker = FleetFrontier::connect(&config).unwrap();
    for _ in 0..3 {
        if let Ok(Some(page)) = taker.pop() {
            panic!(
                "{} was handed out through ASK without its replica",
                page.url()
            );
        }
    }
    holder.complete(held);
}

/// A heartbeat that read the client busy, then was slow to send (its
/// first beat maps the nodes, and one of them stalls), while the client
/// went idle meanwhile: the beat does not mark it busy again (which would
/// hold up every `is_finished` of the fleet for a lease).
#[test]
fn a_slow_heartbeat_does_not_mark_an_idle_client_busy_again() {
    let cluster = Cluster::start(Kind::Valkey, 2);
    let config = config(&cluster.nodes[0].url(), "rebusy", 2)
        .timeout(Duration::from_millis(500))
        .retry_for(Duration::from_millis(300))
        .lease(Duration::from_secs(3));
    let frontier = FleetFrontier::connect(&config).unwrap();
    let connected = Instant::now();
    // Busy (a push), and holding nothing once it is sent.
    frontier.push("https://example.com/".to_string()).unwrap();
    frontier.flush().unwrap();
    let at = |seconds: f64| {
        let when = connected + Duration::from_secs_f64(seconds);
        std::thread::sleep(when.saturating_duration_since(Instant::now()));
    };
    let mut first = cluster.nodes[0].connect();
    let mut busy_clients = || -> usize {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("rebusy:clients:*")
            .query(&mut first)
            .unwrap();
        (keys.iter())
            .map(|key| {
                redis::cmd("ZCARD")
                    .arg(key)
                    .query::<usize>(&mut first)
                    .unwrap()
            })
            .sum()
    };
    assert_eq!(busy_clients(), 1, "the pushing client is busy");
    // The first beat starts a third of a lease after connecting, and its
    // map waits a timeout for the stalled second node.
    at(0.7);
    cluster.nodes[1].pause();
    at(1.2);
    // Idle now (the fleet is not finished: the URL is queued, or the
    // check fails on the stalled node).
    assert!(!frontier.is_finished().unwrap_or(false));
    at(2.2);
    cluster.nodes[1].resume();
    assert_eq!(busy_clients(), 0, "the idle client was marked busy again");
}

/// A slot migration that has moved some of a shard's keys and not others
/// (here its queue, for two leases): a script on the shard's keys is
/// refused (`TRYAGAIN`) until it ends, and the lease renewals must not be
/// among them, or a URL held all along goes to another client.
#[test]
fn leases_are_renewed_while_a_migration_splits_their_shard() {
    let cluster = Cluster::start(Kind::Valkey, 2);
    let config = config(&cluster.nodes[0].url(), "split", 2)
        .timeout(Duration::from_millis(250))
        .retry_for(Duration::from_millis(200))
        .lease(Duration::from_millis(1500));
    let holder = FleetFrontier::connect(&config).unwrap();
    for n in 0..200 {
        holder.push(format!("https://site{n}.example/")).unwrap();
    }
    holder.flush().unwrap();
    let held = holder.pop().unwrap().expect("a URL");
    // The node whose shard leased the held URL, and the other.
    let holds = |server: &Server| -> Option<String> {
        let mut connection = server.connect();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("split:inflight:*")
            .query(&mut connection)
            .unwrap();
        keys.into_iter().find(|key| {
            let takes: Vec<String> = redis::cmd("HVALS").arg(key).query(&mut connection).unwrap();
            takes
                .iter()
                .any(|take| take.contains(&held.url().replace('/', "\\/")))
                || takes.iter().any(|take| take.contains(held.url()))
        })
    };
    let (source, target, inflight) = match holds(&cluster.nodes[0]) {
        Some(key) => (&cluster.nodes[0], &cluster.nodes[1], key),
        None => (
            &cluster.nodes[1],
            &cluster.nodes[0],
            holds(&cluster.nodes[1]).expect("the held URL's take"),
        ),
    };
    let queue = inflight.replace(":inflight:", ":queue:");
    let mut migration = Migration::open(source, target, &inflight);
    migration.migrate(&[queue]);
    // Two leases with the shard split between the nodes.
    std::thread::sleep(Duration::from_secs(3));
    migration.migrate_all(100, Duration::ZERO);
    migration.close(&cluster.nodes);
    let other = FleetFrontier::connect(&config).unwrap();
    let looking = Instant::now();
    while looking.elapsed() < Duration::from_secs(2) {
        if let Ok(Some(page)) = other.pop() {
            assert_ne!(
                page.url(),
                held.url(),
                "the held URL went to another client while its holder lived"
            );
            other.complete(page);
        }
    }
    holder.complete(held);
}

/// A client whose configured node dies before its first heartbeat still
/// renews its leases: the heartbeat's own connections find the cluster
/// through the nodes the client already knows. Before, they tried the
/// configured node alone, so a live holder's lease lapsed and another
/// client took its page.
#[test]
fn the_heartbeat_finds_the_cluster_when_the_configured_node_is_dead() {
    let mut cluster =
        Cluster::start_with(Kind::Valkey, 3, &["--cluster-require-full-coverage", "no"]);
    let prefix = "beatpath";
    let settings = |url: &str| {
        config(url, prefix, 6)
            .retry_for(Duration::from_millis(300))
            .lease(Duration::from_secs(3))
    };
    let other = FleetFrontier::connect(&settings(&cluster.nodes[0].url())).unwrap();
    // The victim: a node without the fleet's own keys (settings, epoch,
    // busy clients), which every client needs.
    let holds_fleet_keys = |server: &Server| {
        !redis::cmd("KEYS")
            .arg(format!("{prefix}:config:*"))
            .query::<Vec<String>>(&mut server.connect())
            .unwrap()
            .is_empty()
    };
    let victim = (0..3)
        .find(|&node| !holds_fleet_keys(&cluster.nodes[node]))
        .expect("two nodes without the fleet's keys");
    let holder = FleetFrontier::connect(&settings(&cluster.nodes[victim].url())).unwrap();
    for n in 0..600 {
        other.push(format!("https://site{n}.example/")).unwrap();
    }
    other.flush().unwrap();
    // Idle until now, the holder has not beaten yet: its heartbeat opens
    // its connections only once there is something to renew.
    cluster.nodes[victim].kill();
    let started = Instant::now();
    let mut last = None;
    let held = loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing to pop: {last:?}"
        );
        match holder.pop() {
            Ok(Some(page)) => break page,
            other => last = Some(other.map(|page| page.map(|page| page.url().to_string()))),
        }
    };
    // Held for two leases; the other client takes all it can meanwhile.
    let mut taken_by_other = HashSet::new();
    let holding = Instant::now();
    while holding.elapsed() < Duration::from_secs(6) {
        match other.pop() {
            Ok(Some(page)) => {
                taken_by_other.insert(page.url().to_string());
                other.complete(page);
            }
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    assert!(
        !taken_by_other.contains(held.url()),
        "{} went to another client while its holder lived (its lease was not renewed)",
        held.url()
    );
    holder.complete(held);
}

/// A completion that reaches its shard through `ASK` while the node the
/// slot moves to refuses writes for a while (`NOREPLICAS`: it asks for a
/// replica it does not have) is sent again once the state has passed: its
/// lease ends and its page is never crawled again. Before, the `ASK` path
/// read replies through a pipeline query, which turns error codes the
/// redis crate does not know into untyped errors, taken as final
/// refusals: the completion was dropped, its lease left the map and was
/// no longer renewed, and the page went to another client.
#[test]
fn a_completion_refused_for_a_while_through_ask_is_sent_again() {
    let cluster = Cluster::start(Kind::Valkey, 2);
    let (source, target) = (&cluster.nodes[0], &cluster.nodes[1]);
    let settings = config(&source.url(), "asked", 2)
        .pop_batch(1)
        .retry_for(Duration::from_millis(300))
        .lease(Duration::from_secs(3));
    let holder = FleetFrontier::connect(&settings).unwrap();
    for n in 0..40 {
        holder.push(format!("https://ask{n}.example/")).unwrap();
    }
    holder.flush().unwrap();
    // A page of the source's shard: its take is in that shard's inflight.
    let (held, inflight) = loop {
        let page = holder.pop().unwrap().expect("queued pages");
        let inflight: Vec<String> = redis::cmd("KEYS")
            .arg("asked:inflight:*")
            .query(&mut source.connect())
            .unwrap();
        let takes: Vec<String> = match inflight.first() {
            Some(key) => redis::cmd("HVALS")
                .arg(key)
                .query(&mut source.connect())
                .unwrap(),
            None => Vec::new(),
        };
        // The take's URLs as JSON (whose slashes Lua escapes): the host.
        let host = page
            .url()
            .trim_start_matches("https://")
            .trim_end_matches('/');
        if takes
            .iter()
            .any(|take| take.contains(&format!("{host}\\/")))
        {
            break (page, inflight);
        }
        holder.complete(page);
    };
    // The shard's slot moves to the target, its keys with it, and stays
    // open (MIGRATING / IMPORTING): the source answers ASK for them.
    let mut migration = Migration::open(source, target, &inflight[0]);
    migration.migrate_all(100, Duration::ZERO);
    let min_replicas = |value: &str| {
        redis::cmd("CONFIG")
            .arg(&["SET", "min-replicas-to-write", value])
            .query::<()>(&mut target.connect())
            .unwrap()
    };
    let held_url = held.url().to_string();
    min_replicas("1");
    holder.complete(held);
    // The completion rides on the next pipeline (a pop's take), through
    // ASK: refused for now.
    let pop_and_complete = |frontier: &FleetFrontier| -> Option<String> {
        match frontier.pop() {
            Ok(Some(page)) => {
                let url = page.url().to_string();
                frontier.complete(page);
                Some(url)
            }
            _ => None,
        }
    };
    let _ = pop_and_complete(&holder);
    std::thread::sleep(Duration::from_millis(800));
    min_replicas("0");
    migration.close([source, target]);
    // Past the lease: another client takes what comes back, while the
    // holder's next calls carry the completion again.
    let other = FleetFrontier::connect(&settings).unwrap();
    let mut taken_by_other = HashSet::new();
    let looking = Instant::now();
    while looking.elapsed() < Duration::from_secs(6) {
        let _ = pop_and_complete(&holder);
        match pop_and_complete(&other) {
            Some(url) => {
                taken_by_other.insert(url);
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    assert!(
        !taken_by_other.contains(&held_url),
        "{held_url} was crawled again: its completion, refused for a while, was dropped"
    );
}
