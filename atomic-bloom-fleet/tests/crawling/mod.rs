//! What the fleet tests share: the crawl examples' workers (blocking and
//! async) and synthetic web, the exact set of pages a crawl must find, the
//! two drivers behind one type, and a crawl by several in-process clients.

#![allow(dead_code)]

#[path = "../../examples/fleet_crawl/fleet.rs"]
pub mod fleet;
#[path = "../../examples/fleet_crawl/fleet_async.rs"]
pub mod fleet_async;
#[path = "../../../examples/crawl/links.rs"]
pub mod links;
#[path = "../../../examples/crawl/web.rs"]
pub mod web;

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use atomic_bloom_fleet::{Error, FleetConfig, FleetFrontier};
use fleet::Fetch;
use url::Url;
use web::SyntheticWeb;

/// Worker threads that share one blocking client in a test's crawl: their
/// calls share rounds on the client's wire.
pub const BLOCKING_WORKERS: usize = 4;

/// Worker tasks that share one async client in a test's crawl.
pub const TOKIO_WORKERS: usize = 16;

/// Which driver a client runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    Blocking,
    Tokio,
}

impl Driver {
    /// The driver of a seed's clients: `FLEET_DRIVER=blocking` or `tokio`
    /// for all; by default the blocking one for even `turn`s and the tokio
    /// one for odd ones, so that a run of seeds tries both at no more cost
    /// than one.
    pub fn for_turn(turn: u64) -> Driver {
        match std::env::var("FLEET_DRIVER").as_deref() {
            Ok("blocking") => Driver::Blocking,
            Ok("tokio") => Driver::Tokio,
            Ok(other) => panic!("FLEET_DRIVER is blocking or tokio, not {other}"),
            Err(_) if turn.is_multiple_of(2) => Driver::Blocking,
            Err(_) => Driver::Tokio,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Driver::Blocking => "blocking",
            Driver::Tokio => "tokio",
        }
    }
}

/// The tests' tokio runtime (two worker threads, as the machine has two
/// cores), shared by every async client of a test binary.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// A fleet frontier on either driver.
pub enum Frontier {
    Blocking(Box<FleetFrontier>),
    Tokio(Arc<atomic_bloom_fleet::tokio::FleetFrontier>),
}

impl Frontier {
    /// Connects a client on `driver`.
    pub fn connect(config: &FleetConfig, driver: Driver) -> Result<Frontier, Error> {
        Ok(match driver {
            Driver::Blocking => Frontier::Blocking(Box::new(FleetFrontier::connect(config)?)),
            Driver::Tokio => Frontier::Tokio(Arc::new(
                runtime().block_on(atomic_bloom_fleet::tokio::FleetFrontier::connect(config))?,
            )),
        })
    }

    /// Connects, retrying while the server is unavailable (through a fault
    /// proxy a connect can meet more faults than a short `retry_for`
    /// outlasts), up to 40 tries.
    pub fn connect_retrying(config: &FleetConfig, driver: Driver) -> Frontier {
        let mut tries = 0;
        loop {
            match Frontier::connect(config, driver) {
                Ok(frontier) => return frontier,
                Err(Error::ServerUnavailable { .. }) if tries < 40 => tries += 1,
                Err(other) => panic!("connect ({driver:?}): {other}"),
            }
        }
    }

    /// URLs taken and not popped, and popped and not completed.
    pub fn held(&self) -> (usize, usize) {
        match self {
            Frontier::Blocking(frontier) => frontier.held(),
            Frontier::Tokio(frontier) => frontier.held(),
        }
    }

    /// Crawls `web` from its start URLs with many workers sharing the
    /// client (`BLOCKING_WORKERS` threads, or `TOKIO_WORKERS` tasks),
    /// giving up after a minute of errors.
    pub fn crawl(
        &self,
        web: &SyntheticWeb,
        fetch: &Fetch,
        on_complete: &fleet::OnComplete,
    ) -> Result<fleet::FleetTally, String> {
        let give_up = Duration::from_secs(60);
        match self {
            Frontier::Blocking(frontier) => fleet::crawl(
                frontier,
                BLOCKING_WORKERS,
                web.start_urls(),
                fetch,
                on_complete,
                give_up,
            ),
            Frontier::Tokio(frontier) => runtime().block_on(fleet_async::crawl(
                Arc::clone(frontier),
                TOKIO_WORKERS,
                web.start_urls(),
                Arc::clone(fetch),
                Arc::clone(on_complete),
                give_up,
            )),
        }
    }
}

/// Settings for an exact crawl of the small web (its filters' rates far
/// below one false positive there) on `shards` shards, taking 16 URLs a
/// pop; each test adds its timeout, retries and lease.
pub fn exact_config(url: &str, prefix: &str, shards: usize) -> FleetConfig {
    FleetConfig::new(url)
        .prefix(prefix)
        .shards(shards)
        .capacity(10_000, 1e-7)
        .local_filter(10_000, 1e-8)
        .pop_batch(16)
}

/// A web of 30 hosts x 100 articles: 3,570 pages.
pub fn small_web() -> SyntheticWeb {
    SyntheticWeb::new(7, 30, 100)
}

/// Fetches pages of `web` (a copy).
pub fn fetch(web: &SyntheticWeb) -> Fetch {
    let web = web.clone();
    Arc::new(move |page: &Url| web.fetch(page))
}

/// Every page reachable from the start URLs, by an exact breadth-first
/// search: what one process crawls alone, with no false positive.
pub fn reachable(web: &SyntheticWeb) -> HashSet<String> {
    let mut seen: HashSet<String> = web.start_urls().into_iter().collect();
    let mut queue: VecDeque<String> = seen.iter().cloned().collect();
    let mut pages = HashSet::new();
    while let Some(url) = queue.pop_front() {
        let base = Url::parse(&url).expect("a URL");
        let Some(html) = web.fetch(&base) else {
            continue;
        };
        pages.insert(url);
        for href in links::extract_links(&html) {
            if let Some(link) = links::resolve(&base, href) {
                let link = String::from(link);
                if seen.insert(link.clone()) {
                    queue.push_back(link);
                }
            }
        }
    }
    assert!(pages.len() <= web.page_count());
    pages
}

/// Fetches pages of `web`, `pause` a page, as a slower site would.
pub fn fetch_slowly(web: &SyntheticWeb, pause: Duration) -> Fetch {
    let web = web.clone();
    Arc::new(move |page: &Url| {
        std::thread::sleep(pause);
        web.fetch(page)
    })
}

/// `frontiers`, many workers each (see `Frontier::crawl`), crawl the
/// pages `fetch` returns, from `web`'s start URLs, while `meanwhile` runs
/// on this thread; each client's tally.
pub fn crawl_with(
    frontiers: &[Frontier],
    web: &SyntheticWeb,
    fetch: &Fetch,
    meanwhile: impl FnOnce(),
) -> Vec<fleet::FleetTally> {
    let done: fleet::OnComplete = Arc::new(|_: &str| Ok(()));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (frontiers.iter())
            .map(|frontier| {
                let done = &done;
                scope.spawn(move || frontier.crawl(web, fetch, done))
            })
            .collect();
        meanwhile();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("no panic").expect("the crawl ends"))
            .collect()
    })
}

/// Checks that `tallies` crawled every page of `expected` once: none
/// twice, none missing (the rates are small enough for an exact crawl).
pub fn each_page_once(tallies: &[fleet::FleetTally], expected: &HashSet<String>, what: &str) {
    let mut union = HashSet::new();
    for tally in tallies {
        for page in &tally.crawled {
            assert!(union.insert(page.clone()), "{what}: {page} crawled twice");
        }
    }
    let missing = expected.difference(&union).count();
    assert_eq!(missing, 0, "{what}: {missing} pages never crawled");
    assert_eq!(union.len(), expected.len(), "{what}: pages not of the web");
}
