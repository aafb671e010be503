//! The fleet client against the module in real servers: three clients
//! crawl the crawl example's synthetic web through one server and through
//! a three-node cluster, each page once, on either driver and on both at
//! once; a server killed mid-crawl loses nothing; each failure is its own
//! error.

use test_servers as common;

mod crawling;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::Error;
use atomic_bloom_fleet::{FleetConfig, FleetSeen};
use common::{Cluster, Kind, Server};
use crawling::{fleet, fleet::Fetch, reachable, small_web, web::SyntheticWeb, Driver, Frontier};
use url::Url;

/// A fleet config for `url`: small rates, so that the crawl is exact in
/// practice (about 0.4 false positives expected over the web).
fn config(url: &str, prefix: &str, shards: usize) -> FleetConfig {
    FleetConfig::new(url)
        .prefix(prefix)
        .shards(shards)
        .capacity(10_000, 0.0001)
        .local_filter(10_000, 0.00001)
        // Takes of 16 URLs spread a small web evenly.
        .pop_batch(16)
        .retry_for(Duration::from_millis(300))
}

/// Three clients, many workers each, on `drivers`, crawl the pages `fetch`
/// returns, from `web`'s start URLs, through the server at `url`, while
/// `meanwhile` runs on this thread; returns each client's tally.
#[allow(clippy::too_many_arguments)]
fn crawl_with_three(
    url: &str,
    web: &SyntheticWeb,
    fetch: &Fetch,
    prefix: &str,
    shards: usize,
    drivers: [Driver; 3],
    meanwhile: impl FnOnce(),
) -> Vec<fleet::FleetTally> {
    let frontiers: Vec<Frontier> = (drivers.iter())
        .map(|&driver| Frontier::connect(&config(url, prefix, shards), driver).expect("connects"))
        .collect();
    crawling::crawl_with(&frontiers, web, fetch, meanwhile)
}

use Driver::{Blocking, Tokio};

/// No page twice across the fleet, together what one process crawls
/// alone, and a fair share each.
fn check_fleet(tallies: &[fleet::FleetTally], expected: &HashSet<String>) {
    let mut union = HashSet::new();
    for tally in tallies {
        for page in &tally.crawled {
            assert!(union.insert(page.clone()), "{page} crawled twice");
            assert!(expected.contains(page), "{page} is not a page of the web");
        }
    }
    assert!(
        union.len() * 1000 >= expected.len() * 999,
        "the fleet crawled {} of {} pages",
        union.len(),
        expected.len()
    );
    for tally in tallies {
        eprintln!(
            "a client crawled {} pages: {:?}",
            tally.crawled.len(),
            tally.stats
        );
        // A fair share is a third; a client starved by the scheduler on a
        // loaded 2-core machine has measured 19.97%, so the bound is an
        // eighth: what it catches is a client left out.
        assert!(
            tally.crawled.len() * 8 >= union.len(),
            "a client crawled {} of {} pages, under 12.5%",
            tally.crawled.len(),
            union.len()
        );
        assert!(tally.stats.answered_locally > 0, "{:?}", tally.stats);
    }
}

#[test]
fn three_clients_on_one_server_crawl_each_page_once() {
    let web = small_web();
    let expected = reachable(&web);
    // Valkey on the blocking driver, Redis 7.0 on the tokio one.
    for (kind, driver) in common::KINDS.into_iter().zip([Blocking, Tokio]) {
        let server = Server::start(kind, &[], &[]);
        let fetch = crawling::fetch(&web);
        let tallies = crawl_with_three(&server.url(), &web, &fetch, "crawl", 8, [driver; 3], || {});
        check_fleet(&tallies, &expected);
        // The shards' filters and queues are there, and the queues empty.
        let mut connection = server.connect();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("crawl:seen:*")
            .query(&mut connection)
            .unwrap();
        assert_eq!(keys.len(), 8, "{kind:?}: {keys:?}");
    }
}

#[test]
fn three_clients_on_a_three_node_cluster_spread_shards_over_every_node() {
    let web = small_web();
    let expected = reachable(&web);
    // Valkey on the tokio driver, Redis 7.0 on the blocking one.
    for (kind, driver) in common::KINDS.into_iter().zip([Tokio, Blocking]) {
        let cluster = Cluster::start(kind, 3);
        // Any node will do as the address.
        let fetch = crawling::fetch(&web);
        let url = cluster.nodes[1].url();
        let tallies = crawl_with_three(&url, &web, &fetch, "crawl", 6, [driver; 3], || {});
        check_fleet(&tallies, &expected);
        for node in &cluster.nodes {
            let mut connection = node.connect();
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("crawl:seen:*")
                .query(&mut connection)
                .unwrap();
            assert_eq!(keys.len(), 2, "{kind:?} node {}: {keys:?}", node.port);
        }
    }
}

#[test]
fn a_server_killed_mid_crawl_loses_nothing_and_repeats_nothing() {
    let web = SyntheticWeb::new(11, 60, 100);
    let expected = reachable(&web);
    let mut server = Server::start(
        Kind::Valkey,
        &[],
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let url = server.url();
    let fetched = Arc::new(AtomicUsize::new(0));
    let fetch: Fetch = {
        let (fetched, web) = (Arc::clone(&fetched), web.clone());
        Arc::new(move |page: &Url| {
            // Relaxed: a progress count the test reads to pick its moment.
            fetched.fetch_add(1, Ordering::Relaxed);
            web.fetch(page)
        })
    };
    let drivers = [Blocking, Tokio, Blocking];
    let tallies = crawl_with_three(&url, &web, &fetch, "crash", 8, drivers, || {
        let deadline = Instant::now() + Duration::from_secs(30);
        // Relaxed: as above.
        while fetched.load(Ordering::Relaxed) < expected.len() / 3 {
            assert!(Instant::now() < deadline, "the crawl does not start");
            std::thread::sleep(Duration::from_millis(1));
        }
        server.kill();
        std::thread::sleep(Duration::from_millis(800));
        server
            .launch()
            .expect("the server starts again, from its AOF");
    });
    let errors: usize = tallies.iter().map(|tally| tally.errors).sum();
    assert!(
        errors > 0,
        "the clients saw no error: the kill came too late"
    );
    let first = tallies
        .iter()
        .find_map(|tally| tally.first_error.clone())
        .unwrap();
    assert!(
        first.contains(&format!("127.0.0.1:{}", server.port)),
        "{first}"
    );
    let mut union = HashSet::new();
    for tally in &tallies {
        for page in &tally.crawled {
            assert!(union.insert(page.clone()), "{page} crawled twice");
        }
    }
    assert!(
        union.len() * 1000 >= expected.len() * 999,
        "the fleet crawled {} of {} pages after the crash",
        union.len(),
        expected.len()
    );
}

/// A blocking client and two async ones (tokio) crawl one web through one
/// server together: one fleet, each page once, every client its share.
#[test]
fn a_blocking_and_an_async_client_share_one_fleet() {
    let web = small_web();
    let expected = reachable(&web);
    let server = Server::start(Kind::Valkey, &[], &[]);
    let fetch = crawling::fetch(&web);
    let drivers = [Blocking, Tokio, Tokio];
    let tallies = crawl_with_three(&server.url(), &web, &fetch, "mixed", 4, drivers, || {});
    check_fleet(&tallies, &expected);
}

#[test]
fn each_failure_is_its_own_error() {
    // Nothing listening.
    let port = common::free_port();
    let down = FleetSeen::connect(&FleetConfig::new(format!("redis://127.0.0.1:{port}/")));
    match down {
        Err(Error::ServerUnavailable { node, .. }) => assert_eq!(node, format!("127.0.0.1:{port}")),
        other => panic!("{other:?}"),
    }
    // A server without the module.
    let bare = Server::start_without_module(Kind::Valkey);
    match FleetSeen::connect(&FleetConfig::new(bare.url())) {
        Err(error @ Error::ModuleMissing { .. }) => {
            assert!(error.to_string().contains("--loadmodule"), "{error}")
        }
        other => panic!("{other:?}"),
    }
    // A bad setting.
    let server = Server::start(Kind::Redis, &[], &[]);
    match FleetSeen::connect(&FleetConfig::new(server.url()).batch_size(0)) {
        Err(Error::InvalidFleetConfig { setting, .. }) => assert_eq!(setting, "batch_size"),
        other => panic!("{other:?}"),
    }
    match FleetSeen::connect(&FleetConfig::new("not a url")) {
        Err(Error::InvalidFleetConfig { setting, .. }) => assert_eq!(setting, "url"),
        other => panic!("{other:?}"),
    }
    // A fleet key that holds a string.
    let seen = FleetSeen::connect(&FleetConfig::new(server.url()).prefix("typed").shards(1))
        .expect("connects");
    let mut connection = server.connect();
    let keys: Vec<String> = {
        seen.insert("first").expect("the first insert");
        redis::cmd("KEYS")
            .arg("typed:seen:*")
            .query(&mut connection)
            .unwrap()
    };
    redis::cmd("SET")
        .arg(&keys[0])
        .arg("a string")
        .query::<()>(&mut connection)
        .unwrap();
    match seen.insert("second") {
        Err(Error::WrongKeyType { key }) => assert_eq!(key, keys[0]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_shared_seen_set_answers_each_item_new_once() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = FleetConfig::new(server.url())
        .prefix("dedup")
        .shards(4)
        .capacity(100_000, 0.0001)
        .local_filter(100_000, 0.00001);
    let clients: Vec<FleetSeen> = (0..3)
        .map(|_| FleetSeen::connect(&config).expect("connects"))
        .collect();
    // Each client offers 0..3000 shifted by its index, twice: 4000
    // distinct items, each answered new exactly once across the fleet.
    let new_counts: Vec<usize> = std::thread::scope(|scope| {
        let handles: Vec<_> = (clients.iter().enumerate())
            .map(|(index, client)| {
                scope.spawn(move || {
                    let items: Vec<String> = (index * 500..index * 500 + 3000)
                        .map(|n| format!("https://host{}.example/page{n}", n % 7))
                        .collect();
                    let mut new = 0;
                    for round in 0..2 {
                        for chunk in items.chunks(100) {
                            let answers = client.insert_many(chunk).expect("inserted");
                            new += answers.iter().filter(|&&new| new).count();
                            assert!(round == 0 || answers.iter().all(|&new| !new));
                        }
                    }
                    new
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    assert_eq!(new_counts.iter().sum::<usize>(), 4000, "{new_counts:?}");
    for client in &clients {
        let stats = client.stats();
        // The second round is answered here, without a round trip.
        assert_eq!(stats.answered_locally, 3000, "{stats:?}");
        assert_eq!(stats.sent, 3000, "{stats:?}");
    }
}

/// A tokio push dropped at its first await (a `select!` that another
/// branch won), while it marks the client busy, keeps its URL: the next
/// call sends it, and it is popped. Before, it was lost. (A runtime of one
/// thread: the push's first round cannot have ended by then.)
#[test]
fn a_cancelled_tokio_push_keeps_its_url() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "cancelled-push", 2);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let frontier = atomic_bloom_fleet::tokio::FleetFrontier::connect(&config)
            .await
            .expect("connects");
        let url = "https://example.com/cancelled".to_string();
        tokio::select! {
            biased;
            pushed = frontier.push(url.clone()) => panic!("no round trip: {pushed:?}"),
            () = std::future::ready(()) => {}
        }
        frontier.flush().await.expect("flushed");
        let page = (frontier.pop().await)
            .expect("popped")
            .expect("the cancelled push's URL");
        assert_eq!(page.url(), url);
        frontier.complete(page).await;
        assert!(frontier.is_finished().await.expect("checked"));
    });
}
