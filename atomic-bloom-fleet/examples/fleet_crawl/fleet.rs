//! The fleet crawl (`--redis URL`): worker threads share a
//! `FleetFrontier`, and so do the other crawl processes pointed at the same
//! server or cluster, so each page is crawled once by the fleet. What the
//! async crawl (`fleet_async.rs`) shares with it is here too.
//!
//! Only std, `url`, the fleet crate and `links.rs`: the fleet's tests
//! (`tests/crawling`) include this file too.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::{Error, FleetFrontier, FleetStats};
use url::Url;

use super::links::{extract_links, resolve};

/// How a crawl fetches a page: `None` for a page that is not there.
pub type Fetch = Arc<dyn Fn(&Url) -> Option<String> + Send + Sync>;

/// The links of the page at `url`, resolved, or `None` when it could not
/// be fetched.
pub fn links_of(fetch: &Fetch, url: &str) -> Option<Vec<String>> {
    let base = Url::parse(url).ok()?;
    let html = fetch(&base)?;
    let links = extract_links(&html)
        .filter_map(|href| resolve(&base, href))
        .map(String::from)
        .collect();
    Some(links)
}

/// Counts `error` in `total` (printing the first), and says whether to
/// give up: errors have lasted `give_up_after` since `since`.
pub fn note_error(
    total: &Mutex<FleetTally>,
    error: &Error,
    since: &mut Option<Instant>,
    give_up_after: Duration,
) -> Result<(), String> {
    let since = *since.get_or_insert_with(Instant::now);
    let mut total = total.lock().unwrap_or_else(|e| e.into_inner());
    total.errors += 1;
    if total.first_error.is_none() {
        eprintln!("crawl: {error} (trying again)");
        total.first_error = Some(error.to_string());
    }
    if since.elapsed() > give_up_after {
        return Err(format!("giving up after {give_up_after:?}: {error}"));
    }
    Ok(())
}

/// Adds a worker's counts to `total`.
pub fn add_up(total: &Mutex<FleetTally>, pages: usize, links: usize, mut crawled: Vec<String>) {
    let mut total = total.lock().unwrap_or_else(|e| e.into_inner());
    total.pages += pages;
    total.links += links;
    total.crawled.append(&mut crawled);
}

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
pub const IDLE_PAUSE: Duration = Duration::from_millis(5);

/// How long a worker waits after an error before trying again.
pub const ERROR_PAUSE: Duration = Duration::from_millis(100);

/// What the crawl calls with each page it completes, before the page's
/// lease ends (`--crawled-out` writes it to a file).
pub type OnComplete = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

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
    fetch: &Fetch,
    on_complete: &OnComplete,
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
    fetch: &'a Fetch,
    on_complete: &'a OnComplete,
    give_up_after: Duration,
    total: &'a Mutex<FleetTally>,
}

impl Worker<'_> {
    /// Runs `call` until it succeeds, counting and pausing after errors.
    fn retry<T>(&self, mut call: impl FnMut() -> Result<T, Error>) -> Result<T, String> {
        let mut failing_since = None;
        loop {
            match call() {
                Ok(value) => return Ok(value),
                Err(error) => {
                    note_error(self.total, &error, &mut failing_since, self.give_up_after)?
                }
            }
            thread::sleep(ERROR_PAUSE);
        }
    }

    fn run(&self) -> Result<(), String> {
        let (mut pages, mut links, mut crawled) = (0, 0, Vec::new());
        loop {
            let Some(page) = self.retry(|| self.frontier.pop())? else {
                if self.retry(|| self.frontier.is_finished())? {
                    break;
                }
                thread::sleep(IDLE_PAUSE);
                continue;
            };
            let url = page.url().to_string();
            if let Some(found) = links_of(self.fetch, &url) {
                pages += 1;
                links += found.len();
                for link in found {
                    self.retry(|| self.frontier.push(link.clone()))?;
                }
                (self.on_complete)(&url)?;
                crawled.push(url);
            }
            self.frontier.complete(page);
        }
        add_up(self.total, pages, links, crawled);
        Ok(())
    }
}
