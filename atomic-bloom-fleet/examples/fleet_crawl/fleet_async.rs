//! The async fleet crawl (`fleet_crawl_async --redis URL --tasks N`): tokio tasks
//! share a `atomic_bloom_fleet::tokio::FleetFrontier`, over the same
//! synthetic web and with the same tally as the blocking crawl
//! (`fleet.rs`), and with any blocking or async crawl process pointed at
//! the same server.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atomic_bloom_fleet::tokio::FleetFrontier;

use tokio::task::JoinSet;

use super::fleet::{
    add_up, links_of, note_error, Fetch, FleetTally, OnComplete, ERROR_PAUSE, IDLE_PAUSE,
};

/// Runs `call` until it succeeds, counting errors in `total` and pausing
/// after each, for up to `give_up_after` in a row.
macro_rules! retry {
    ($total:expr, $give_up_after:expr, $call:expr) => {{
        let mut failing_since = None;
        loop {
            match $call.await {
                Ok(value) => break Ok::<_, String>(value),
                Err(error) => {
                    if let Err(gave_up) =
                        note_error(&$total, &error, &mut failing_since, $give_up_after)
                    {
                        break Err(gave_up);
                    }
                }
            }
            tokio::time::sleep(ERROR_PAUSE).await;
        }
    }};
}

/// Pushes `start`, then crawls with `tasks` tokio tasks until the whole
/// fleet is out of work, as the blocking `fleet::crawl` does with threads.
///
/// # Errors
///
/// The client's error, once errors have lasted `give_up_after`.
pub async fn crawl(
    frontier: Arc<FleetFrontier>,
    tasks: usize,
    start: Vec<String>,
    fetch: Fetch,
    on_complete: OnComplete,
    give_up_after: Duration,
) -> Result<FleetTally, String> {
    let total = Arc::new(Mutex::new(FleetTally::default()));
    let started = Instant::now();
    for url in start {
        retry!(total, give_up_after, frontier.push(url.clone()))?;
    }
    retry!(total, give_up_after, frontier.flush())?;
    let mut workers = JoinSet::new();
    for _ in 0..tasks {
        let (frontier, fetch) = (Arc::clone(&frontier), Arc::clone(&fetch));
        let (on_complete, total) = (Arc::clone(&on_complete), Arc::clone(&total));
        workers.spawn(
            async move { work(&frontier, &fetch, &on_complete, &total, give_up_after).await },
        );
    }
    let mut outcome = Ok(());
    while let Some(joined) = workers.join_next().await {
        let done = joined.unwrap_or_else(|_| Err("a task panicked".into()));
        outcome = outcome.and(done);
    }
    let mut total = std::mem::take(&mut *total.lock().unwrap_or_else(|e| e.into_inner()));
    total.elapsed = started.elapsed();
    total.stats = frontier.stats();
    outcome.map(|()| total)
}

/// One task's crawl: pop, fetch, push the links, complete, until the fleet
/// is out of work.
async fn work(
    frontier: &FleetFrontier,
    fetch: &Fetch,
    on_complete: &OnComplete,
    total: &Mutex<FleetTally>,
    give_up_after: Duration,
) -> Result<(), String> {
    let (mut pages, mut links, mut crawled) = (0, 0, Vec::new());
    loop {
        let popped: Option<_> = retry!(*total, give_up_after, frontier.pop())?;
        let Some(page) = popped else {
            if retry!(*total, give_up_after, frontier.is_finished())? {
                break;
            }
            tokio::time::sleep(IDLE_PAUSE).await;
            continue;
        };
        let url = page.url().to_string();
        if let Some(found) = links_of(fetch, &url) {
            pages += 1;
            links += found.len();
            for link in found {
                retry!(*total, give_up_after, frontier.push(link.clone()))?;
            }
            on_complete(&url)?;
            crawled.push(url);
        }
        frontier.complete(page).await;
    }
    add_up(total, pages, links, crawled);
    Ok(())
}
