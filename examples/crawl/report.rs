//! What a crawl counts, the exact record behind `--verify`, and the report
//! printed at the end.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use atomic_bloom::Frontier;
use indicatif::{HumanBytes, HumanCount};

use crate::revisit::{Gaps, Revisits};

/// What one worker counted; summed over the workers at the end.
#[derive(Debug, Default)]
pub struct Tally {
    /// Pages fetched.
    pub pages: usize,
    /// URLs popped with no page behind them (a 404, another scheme or
    /// host, a file that is not HTML).
    pub not_fetched: usize,
    /// `href` values found in pages.
    pub links_found: usize,
    /// Links not followed: not http, https or file, or not a URL.
    pub skipped: usize,
    /// URLs pushed to the frontier (resolved links and start URLs).
    pub offered: usize,
    /// Pushes the frontier accepted.
    pub queued: usize,
    /// Bytes of the URLs accepted.
    pub queued_bytes: usize,
    /// URLs popped a second time (with `--verify`).
    pub popped_again: usize,
    /// Pages between visits of a page (with `--revisit-after`).
    pub gaps: Gaps,
}

impl Tally {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Tally) {
        self.pages += other.pages;
        self.not_fetched += other.not_fetched;
        self.links_found += other.links_found;
        self.skipped += other.skipped;
        self.offered += other.offered;
        self.queued += other.queued;
        self.queued_bytes += other.queued_bytes;
        self.popped_again += other.popped_again;
        self.gaps.add(&other.gaps);
    }
}

/// Shards of the exact record: few enough to be cheap, enough that workers
/// rarely wait on one another's lock.
const SHARDS: usize = 64;

/// Every URL offered to the frontier, each with whether it was popped: after
/// the crawl, a URL never popped was never accepted, so every push of it
/// was a false positive of the filter.
#[derive(Debug)]
pub struct ExactRecord {
    shards: Vec<Mutex<HashMap<String, bool>>>,
}

impl ExactRecord {
    pub fn new() -> Self {
        ExactRecord {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, url: &str) -> MutexGuard<'_, HashMap<String, bool>> {
        let index = wyhash::wyhash(url.as_bytes(), 0) as usize % SHARDS;
        // A poisoned shard still holds good data: a worker that panicked
        // fails the crawl anyway.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `url` was offered (before it is pushed).
    pub fn offer(&self, url: &str) {
        let mut shard = self.shard(url);
        if !shard.contains_key(url) {
            shard.insert(url.to_string(), false);
        }
    }

    /// Records that `url` was popped; true when it had been popped before.
    pub fn popped(&self, url: &str) -> bool {
        self.shard(url)
            .get_mut(url)
            .is_some_and(|popped| std::mem::replace(popped, true))
    }

    /// Distinct URLs offered, how many of them were never popped, and their
    /// bytes.
    fn totals(&self) -> (usize, usize, usize) {
        let (mut distinct, mut never_popped, mut bytes) = (0, 0, 0);
        for shard in &self.shards {
            let shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            distinct += shard.len();
            never_popped += shard.values().filter(|&&popped| !popped).count();
            bytes += shard.keys().map(String::capacity).sum::<usize>();
        }
        (distinct, never_popped, bytes)
    }
}

/// Bytes of a `HashSet<String>` of `count` strings holding `string_bytes`
/// between them: the strings' heap bytes, plus hashbrown's table (a power of
/// two of buckets, at most 7/8 full, each a `String` and one control byte).
fn hash_set_bytes(count: usize, string_bytes: usize) -> usize {
    let buckets = (count.saturating_mul(8) / 7).max(4).next_power_of_two();
    string_bytes + buckets * (std::mem::size_of::<String>() + 1)
}

fn row(name: &str, value: impl std::fmt::Display) {
    println!("  {name:<26} {value}");
}

/// Prints the report of a crawl that took `elapsed`.
pub fn print(
    setup: &str,
    tally: &Tally,
    elapsed: Duration,
    frontier: &Frontier<String>,
    exact: Option<&ExactRecord>,
    revisits: Option<&Revisits>,
) {
    let percent = |part: usize, whole: usize| 100.0 * part as f64 / whole.max(1) as f64;
    let per_second = |count: usize| HumanCount((count as f64 / elapsed.as_secs_f64()) as u64);
    println!("{setup}\n");
    row("pages crawled", HumanCount(tally.pages as u64));
    row(
        "not fetched (404, other)",
        HumanCount(tally.not_fetched as u64),
    );
    row("links found", HumanCount(tally.links_found as u64));
    row(
        "URLs offered",
        format_args!(
            "{} ({} links skipped: mailto:, javascript: ...)",
            HumanCount(tally.offered as u64),
            HumanCount(tally.skipped as u64)
        ),
    );
    row("new URLs queued", HumanCount(tally.queued as u64));
    let dropped = tally.offered - tally.queued;
    row(
        "duplicates dropped",
        format_args!(
            "{} ({:.1}% of URLs offered)",
            HumanCount(dropped as u64),
            percent(dropped, tally.offered)
        ),
    );
    let (distinct, set_bytes, measured) = match exact {
        Some(exact) => {
            let (distinct, never_popped, bytes) = exact.totals();
            row(
                "new URLs wrongly dropped",
                format_args!(
                    "{} of {} distinct URLs ({:.3}%)",
                    HumanCount(never_popped as u64),
                    HumanCount(distinct as u64),
                    percent(never_popped, distinct)
                ),
            );
            row("URLs queued twice", HumanCount(tally.popped_again as u64));
            (distinct, bytes, "measured")
        }
        None => {
            row(
                "new URLs wrongly dropped",
                "run with --verify to count them",
            );
            (tally.queued, tally.queued_bytes, "estimated")
        }
    };
    row("wall time", format_args!("{:.2} s", elapsed.as_secs_f64()));
    row(
        "throughput",
        format_args!(
            "{} pages/s, {} links/s",
            per_second(tally.pages),
            per_second(tally.links_found)
        ),
    );
    let filter_bytes = frontier.memory_bytes();
    if let Some(revisits) = revisits {
        print_revisits(tally, revisits, filter_bytes, frontier);
        return;
    }
    let set_bytes = hash_set_bytes(distinct, set_bytes);
    row(
        "memory",
        format_args!(
            "frontier's filter {}, an exact HashSet<String> of the URLs {} ({measured}): {:.0}x",
            HumanBytes(filter_bytes as u64),
            HumanBytes(set_bytes as u64),
            set_bytes as f64 / filter_bytes.max(1) as f64
        ),
    );
    row(
        "estimated FPR",
        format_args!(
            "{:.3}% (target {}%)",
            frontier.estimated_fpr() * 100.0,
            frontier.target_fpr() * 100.0
        ),
    );
    row(
        "over capacity",
        if frontier.is_over_capacity() {
            "yes: the rate rose past its target; rerun with a larger --capacity or --scalable"
        } else {
            "no"
        },
    );
}

/// The re-visit rows: the gaps between visits against the promise, and
/// the windowed filter's memory beside the exact map of last visits.
fn print_revisits(
    tally: &Tally,
    revisits: &Revisits,
    filter_bytes: usize,
    frontier: &Frontier<String>,
) {
    let gaps = &tally.gaps;
    let (pages, map_bytes) = revisits.map_bytes();
    row(
        "re-visits",
        format_args!(
            "{} of {} pages crawled, {} distinct pages",
            HumanCount(gaps.revisits as u64),
            HumanCount(tally.pages as u64),
            HumanCount(pages as u64)
        ),
    );
    if gaps.revisits > 0 {
        row(
            "pages between visits",
            format_args!(
                "shortest {}, mean {}, longest {} (promised: at least {})",
                HumanCount(gaps.shortest.unwrap_or(0)),
                HumanCount(gaps.total / gaps.revisits as u64),
                HumanCount(gaps.longest),
                HumanCount(revisits.after as u64)
            ),
        );
    }
    row(
        "re-visited too soon",
        format_args!(
            "{} (by the exact map of last visits; pages are numbered as they are popped, \
             so a worker descheduled between admitting and queueing a page, or popping and \
             numbering it, can make a gap look shorter than the admissions it spanned)",
            gaps.too_soon
        ),
    );
    row(
        "memory",
        format_args!(
            "frontier's windowed filter {}, the exact map of last visits {}: {:.0}x",
            HumanBytes(filter_bytes as u64),
            HumanBytes(map_bytes as u64),
            map_bytes as f64 / filter_bytes.max(1) as f64
        ),
    );
    row(
        "target FPR",
        format_args!(
            "{}% (a page whose visit is due is dropped at this rate, and found again by its next link)",
            frontier.target_fpr() * 100.0
        ),
    );
}
