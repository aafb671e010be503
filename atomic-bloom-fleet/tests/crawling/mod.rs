//! What the fleet tests share: the crawl example's fleet worker and
//! synthetic web, the exact set of pages a crawl must find, and a crawl by
//! several in-process clients.

#![allow(dead_code)]

#[path = "../../examples/crawl/fleet.rs"]
pub mod fleet;
#[path = "../../../examples/crawl/links.rs"]
pub mod links;
#[path = "../../../examples/crawl/web.rs"]
pub mod web;

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use atomic_bloom_fleet::FleetFrontier;
use url::Url;
use web::SyntheticWeb;

/// A web of 30 hosts x 100 articles: 3,570 pages.
pub fn small_web() -> SyntheticWeb {
    SyntheticWeb::new(7, 30, 100)
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
pub fn fetch_slowly(
    web: &SyntheticWeb,
    pause: Duration,
) -> impl Fn(&Url) -> Option<String> + Sync + '_ {
    move |page: &Url| {
        std::thread::sleep(pause);
        web.fetch(page)
    }
}

/// `frontiers`, one worker each, crawl the pages `fetch` returns, from
/// `web`'s start URLs, while `meanwhile` runs on this thread; each
/// client's tally.
pub fn crawl_with(
    frontiers: &[FleetFrontier],
    web: &SyntheticWeb,
    fetch: &(dyn Fn(&Url) -> Option<String> + Sync),
    meanwhile: impl FnOnce(),
) -> Vec<fleet::FleetTally> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (frontiers.iter())
            .map(|frontier| {
                let start = web.start_urls();
                scope.spawn(move || {
                    let done = &|_: &str| Ok(());
                    fleet::crawl(frontier, 1, start, fetch, done, Duration::from_secs(60))
                })
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
