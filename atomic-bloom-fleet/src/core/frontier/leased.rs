//! What a frontier hands out and how often it renews it: a [`Leased`]
//! URL, and the [`Heartbeat`]'s clock.

use std::fmt;
use std::time::{Duration, Instant};

use super::FrontierCore;
use crate::core::wire::TakenUrl;
use crate::sync::Arc;
use crate::FleetConfig;

/// A URL popped from the fleet, leased to this process until it is passed
/// to `complete`.
///
/// # Example
///
/// ```no_run
/// use atomic_bloom_fleet::{FleetConfig, FleetFrontier};
///
/// fn main() -> Result<(), atomic_bloom_fleet::Error> {
///     let frontier = FleetFrontier::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
///     if let Some(page) = frontier.pop()? {
///         println!("crawling {}", page.url());
///         frontier.complete(page);
///     }
///     Ok(())
/// }
/// ```
///
/// A `Leased` dropped without being completed (a worker that panicked, or
/// returned early with `?`) gives its URL back: it goes back at the head
/// of the fleet's queue with the frontier's next call that reaches the
/// server, for any process to crawl, and no longer holds up its lease or
/// the fleet's end. The same type serves the blocking and the tokio
/// frontier.
pub struct Leased {
    /// The URL and its lease; `None` once completed.
    pub(super) page: Option<TakenUrl>,
    /// The frontier it came from, which gives it back if it is dropped.
    pub(super) owner: Arc<FrontierCore>,
}

impl Leased {
    /// The URL.
    pub fn url(&self) -> &str {
        &self
            .page
            .as_ref()
            .expect("a Leased holds its URL until consumed")
            .url
    }
}

impl Drop for Leased {
    /// Gives the URL back when it was not completed.
    fn drop(&mut self) {
        if let Some(page) = self.page.take() {
            self.owner.give_back(page);
        }
    }
}

impl fmt::Debug for Leased {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leased")
            .field("page", &self.page)
            .finish_non_exhaustive()
    }
}

/// When the heartbeat beats: every third of a lease from the connect,
/// however long a beat takes, and a timeout after a beat that failed.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    every: Duration,
    again: Duration,
    next: Instant,
}

impl Heartbeat {
    /// The first beat a third of a lease after `now`.
    pub(crate) fn new(config: &FleetConfig, now: Instant) -> Heartbeat {
        let every = config.lease / 3;
        Heartbeat {
            every,
            again: config.timeout,
            next: now + every,
        }
    }

    /// When the next beat starts.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }

    /// A beat starts at `now`: the one after starts a third of a lease
    /// after this one was due (or now, if that has passed).
    pub(crate) fn started(&mut self, now: Instant) {
        self.next = (self.next + self.every).max(now);
    }

    /// The beat failed at `now`: try again a timeout later.
    pub(crate) fn failed(&mut self, now: Instant) {
        self.next = self.next.min(now + self.again);
    }
}
