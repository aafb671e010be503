//! The crawl's fleet mode (`--redis URL`, feature `redis`): worker threads
//! share a `FleetFrontier`, and so do the other crawl processes pointed at
//! the same server or cluster, so each page is crawled once by the fleet.
//!
//! Only std, `url`, atomic-bloom and `links.rs`: the module's fleet tests
//! (`atomic-bloom-redis/tests/fleet.rs`) include this file too.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::{FleetFrontier, FleetStats};
use url::Url;

use super::links::{extract_links, resolve};

/// What a process's workers did, summed.
#[derive(Debug, Default)]
pub struct FleetTally {
    /// Pages fetched.
    pub pages: usize,
    /// Links found in them and resolved.
    pub links: usize,
    /// Calls that returned an error (each tried again).
    pub errors: usize,
    /// The first error, as the client reported it.
    pub first_error: Option<String>,
    /// Every URL fetched, in no order.
    pub crawled: Vec<String>,
    /// Wall time from the first pop to the fleet's end.
    pub elapsed: Duration,
    /// The fleet client's counts.
    pub stats: FleetStats,
}

/// How long a worker waits between two looks at an empty fleet.
const IDLE_PAUSE: Duration = Duration::from_millis(5);

/// How long a worker waits after an error before trying again.
const ERROR_PAUSE: Duration = Duration::from_millis(100);

/// What the crawl calls with each page it completes, before the page's
/// lease ends (`--crawled-out` writes it to a file).
pub type OnComplete<'a> = &'a (dyn Fn(&str) -> Result<(), String> + Sync);

/// Pushes `start`, then crawls with `threads` workers until the whole
/// fleet is out of work, fetching pages with `fetch` and passing each
/// completed page to `on_complete`. Errors are counted, printed once, and
/// tried again, for up to `give_up_after` in a row: a process that gives
/// up loses nothing, as the URLs it held go back to the fleet when their
/// leases end.
///
/// # Errors
///
/// The client's error, once errors have lasted `give_up_after`.
pub fn crawl(
    frontier: &FleetFrontier,
    threads: usize,
    start: Vec<String>,
    fetch: &(dyn Fn(&Url) -> Option<String> + Sync),
    on_complete: OnComplete<'_>,
    give_up_after: Duration,
) -> Result<FleetTally, String> {
    let total = Mutex::new(FleetTally::default());
    let started = Instant::now();
    let worker = Worker {
        frontier,
        fetch,
        on_complete,
        give_up_after,
        total: &total,
    };
    for url in start {
        worker.retry(|| frontier.push(url.clone()))?;
    }
    worker.retry(|| frontier.flush())?;
    let outcomes: Vec<Result<(), String>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(|| worker.run())).collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|_| Err("a worker panicked".into()))
            })
            .collect()
    });
    let mut total = total.into_inner().unwrap_or_else(|e| e.into_inner());
    total.elapsed = started.elapsed();
    total.stats = frontier.stats();
    outcomes.into_iter().collect::<Result<(), String>>()?;
    Ok(total)
}

struct Worker<'a> {
    frontier: &'a FleetFrontier,
    fetch: &'a (dyn Fn(&Url) -> Option<String> + Sync),
    on_complete: OnComplete<'a>,
    give_up_after: Duration,
    total: &'a Mutex<FleetTally>,
}

impl Worker<'_> {
    /// Runs `call` until it succeeds, counting and pausing after errors.
    fn retry<T>(
        &self,
        mut call: impl FnMut() -> Result<T, atomic_bloom_fleet::Error>,
    ) -> Result<T, String> {
        let mut failing_since = None;
        loop {
            match call() {
                Ok(value) => return Ok(value),
                Err(error) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    {
                        let mut total = self.total.lock().unwrap_or_else(|e| e.into_inner());
                        total.errors += 1;
                        if total.first_error.is_none() {
                            eprintln!("crawl: {error} (trying again)");
                            total.first_error = Some(error.to_string());
                        }
                    }
                    if since.elapsed() > self.give_up_after {
                        return Err(format!("giving up after {:?}: {error}", self.give_up_after));
                    }
                    thread::sleep(ERROR_PAUSE);
                }
            }
        }
    }

    fn run(&self) -> Result<(), String> {
        let mut pages = 0;
        let mut links = 0;
        let mut crawled = Vec::new();
        let mut found = Vec::new();
        loop {
            let Some(page) = self.retry(|| self.frontier.pop())? else {
                if self.retry(|| self.frontier.is_finished())? {
                    break;
                }
                thread::sleep(IDLE_PAUSE);
                continue;
            };
            let url = page.url().to_string();
            if let Some((base, html)) = Url::parse(&url)
                .ok()
                .and_then(|base| (self.fetch)(&base).map(|html| (base, html)))
            {
                pages += 1;
                found.extend(
                    extract_links(&html)
                        .filter_map(|href| resolve(&base, href))
                        .map(String::from),
                );
                links += found.len();
                for link in found.drain(..) {
                    self.retry(|| self.frontier.push(link.clone()))?;
                }
                (self.on_complete)(&url)?;
                crawled.push(url);
            }
            self.frontier.complete(page);
        }
        let mut total = self.total.lock().unwrap_or_else(|e| e.into_inner());
        total.pages += pages;
        total.links += links;
        total.crawled.append(&mut crawled);
        Ok(())
    }
}
