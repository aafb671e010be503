//! `--revisit-after N`: the frontier forgets a page once N other pages
//! have been admitted after it, so a link found later admits it again.
//! The exact map of last visits beside it checks that no page is crawled
//! again sooner than N pages after its last visit, and measures the gaps.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Shards of the map: few enough to be cheap, enough that workers rarely
/// wait on one another's lock.
const SHARDS: usize = 64;

/// The page counter, the stop, and the exact map of every page's last
/// visit (its number among all pages crawled).
#[derive(Debug)]
pub struct Revisits {
    /// Pages between two visits of a page that the frontier promises.
    pub after: usize,
    /// Pages to crawl before stopping: with re-visits a crawl never ends.
    pub max_pages: u64,
    visits: AtomicU64,
    stop: AtomicBool,
    last: Vec<Mutex<HashMap<String, u64>>>,
}

/// What one worker saw of the gaps between visits; summed at the end.
#[derive(Debug, Default, Clone, Copy)]
pub struct Gaps {
    /// Visits of a page crawled before.
    pub revisits: usize,
    /// Of those, sooner than `after` pages after the last visit.
    pub too_soon: usize,
    pub shortest: Option<u64>,
    pub longest: u64,
    pub total: u64,
}

impl Gaps {
    pub fn add(&mut self, other: &Gaps) {
        self.revisits += other.revisits;
        self.too_soon += other.too_soon;
        self.shortest = match (self.shortest, other.shortest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.longest = self.longest.max(other.longest);
        self.total += other.total;
    }
}

impl Revisits {
    pub fn new(after: usize, max_pages: u64) -> Self {
        Revisits {
            after,
            max_pages,
            visits: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            last: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, url: &str) -> MutexGuard<'_, HashMap<String, u64>> {
        let index = wyhash::wyhash(url.as_bytes(), 0) as usize % SHARDS;
        self.last[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the crawl has crawled its pages.
    pub fn stopped(&self) -> bool {
        // Relaxed: a flag; the workers only stop on it.
        self.stop.load(Ordering::Relaxed)
    }

    /// Numbers the visit of the popped `url` and notes its gap since the
    /// last one; false (and the crawl stops) once `max_pages` are crawled.
    pub fn visit(&self, url: &str, gaps: &mut Gaps) -> bool {
        // Relaxed: a ticket; pages are numbered in the order they are
        // popped, to within the workers' few pages in flight.
        let number = self.visits.fetch_add(1, Ordering::Relaxed);
        if number >= self.max_pages {
            // Relaxed: as above.
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        if let Some(last) = self.shard(url).insert(url.to_string(), number) {
            let between = number.saturating_sub(last + 1);
            gaps.revisits += 1;
            gaps.too_soon += usize::from(between < self.after as u64);
            gaps.shortest = Some(gaps.shortest.map_or(between, |s| s.min(between)));
            gaps.longest = gaps.longest.max(between);
            gaps.total += between;
        }
        true
    }

    /// Distinct pages visited, and the bytes of the exact map as a
    /// `HashMap<String, u64>`: the strings' heap bytes plus hashbrown's
    /// table (a power of two of buckets at most 7/8 full, each a `String`,
    /// a `u64` and a control byte).
    pub fn map_bytes(&self) -> (usize, usize) {
        let (mut pages, mut strings) = (0, 0);
        for shard in &self.last {
            let shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            pages += shard.len();
            strings += shard.keys().map(String::capacity).sum::<usize>();
        }
        let buckets = (pages.saturating_mul(8) / 7).max(4).next_power_of_two();
        let bucket = std::mem::size_of::<String>() + std::mem::size_of::<u64>() + 1;
        (pages, strings + buckets * bucket)
    }
}
