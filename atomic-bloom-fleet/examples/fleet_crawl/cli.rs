//! What the blocking and the async fleet crawls share: their options, the
//! fleet's settings they make, where pages come from, the file of pages
//! crawled, and the report.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use atomic_bloom_fleet::FleetConfig;
use clap::Parser;
use indicatif::HumanCount;
use url::Url;

use crate::fleet::{Fetch, FleetTally, OnComplete};
use crate::site::SiteArgs;

/// Crawl a synthetic web (or a directory of HTML files) with every other
/// crawl process started against the same Valkey or Redis server (or
/// cluster) with the atomic-bloom-redis module: together they crawl each
/// page once.
#[derive(Parser, Debug)]
#[command(name = "fleet_crawl")]
pub struct Args {
    /// The fleet's server, or any node of its cluster.
    #[arg(long, value_name = "URL")]
    pub redis: String,
    /// Worker threads (the blocking crawl).
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Worker tasks (the async crawl, `fleet_crawl_async`).
    #[arg(long, default_value_t = 64)]
    pub tasks: usize,
    #[command(flatten)]
    pub site: SiteArgs,
    /// Target false-positive rate of the fleet's filters (the local one
    /// gets a tenth of it).
    #[arg(long, default_value_t = 0.01)]
    pub rate: f64,
    /// Keys the fleet's filter and queue are spread over.
    #[arg(long, default_value_t = 8)]
    pub shards: usize,
    /// The prefix of the fleet's keys.
    #[arg(long, default_value = "crawl")]
    pub prefix: String,
    /// No local filter and batches of one, every link a round trip (the
    /// way scrapy-redis dedupes), to compare with.
    #[arg(long)]
    pub naive: bool,
    /// Write every URL this process crawled here, one a line, each as it
    /// completes (before its lease ends), so that a process killed
    /// mid-crawl leaves what it finished.
    #[arg(long, value_name = "FILE")]
    pub crawled_out: Option<PathBuf>,
    /// Seconds a popped URL stays leased to this process without a word
    /// from it; the URLs of a process that dies go back to the fleet after
    /// this.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub lease: f64,
}

/// What a crawl starts from: the fleet's settings, a description of the
/// pages' source, how to fetch a page, and the URLs to push first.
pub struct Setup {
    pub config: FleetConfig,
    pub what: String,
    pub fetch: Fetch,
    pub start: Vec<String>,
}

/// The crawl `args` ask for.
pub fn setup(args: &Args) -> Result<Setup, String> {
    let (site, what, capacity) = args.site.open()?;
    let lease = Duration::try_from_secs_f64(args.lease).map_err(|e| format!("--lease: {e}"))?;
    let mut config = FleetConfig::new(args.redis.as_str())
        .prefix(args.prefix.as_str())
        .shards(args.shards)
        .capacity(capacity, args.rate)
        .local_filter(capacity, args.rate / 10.0)
        .lease(lease)
        // The longest retries a lease leaves room for (two thirds of it
        // less three timeouts of 2 s), 30 s at most.
        .retry_for(
            (lease * 2 / 3)
                .saturating_sub(Duration::from_secs(6))
                .min(Duration::from_secs(30)),
        );
    if args.naive {
        config = config.without_local_filter().batch_size(1);
    }
    let start = site.start_urls();
    let site = Arc::new(site);
    let fetch: Fetch = Arc::new(move |page: &Url| site.fetch(page));
    Ok(Setup {
        config,
        what,
        fetch,
        start,
    })
}

/// What the crawl does with each page it completes: with `--crawled-out`,
/// writes it to the file (unbuffered, one write a line) before its lease
/// ends, so a killed process's file holds every page it finished.
pub fn on_complete(args: &Args) -> Result<OnComplete, String> {
    let Some(path) = args.crawled_out.clone() else {
        return Ok(Arc::new(|_: &str| Ok(())));
    };
    let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = Mutex::new(file);
    Ok(Arc::new(move |page: &str| {
        (file.lock().unwrap_or_else(|e| e.into_inner()))
            .write_all(format!("{page}\n").as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))
    }))
}

/// The first line of the report: what is crawled, by whom.
pub fn describe(args: &Args, what: &str, workers: &str) {
    println!(
        "{what}\nfleet: {}, {} shards, {workers}{}",
        args.redis,
        args.shards,
        if args.naive {
            ", naive (every link a round trip)"
        } else {
            ""
        }
    );
}

/// The report: pages and links a second, and what the client sent.
pub fn report(tally: &FleetTally) {
    let seconds = tally.elapsed.as_secs_f64();
    let stats = &tally.stats;
    println!(
        "crawled {} pages, {} links in {:.2} s: {:.0} pages/s, {:.0} links/s",
        HumanCount(tally.pages as u64),
        HumanCount(tally.links as u64),
        seconds,
        tally.pages as f64 / seconds,
        tally.links as f64 / seconds,
    );
    println!(
        "links answered locally: {:.1}%; sent {} to the server in {} round trips \
         ({} new there, {} taken back); {} errors",
        stats.local_share() * 100.0,
        HumanCount(stats.sent),
        HumanCount(stats.round_trips),
        HumanCount(stats.new_on_server),
        HumanCount(stats.taken),
        tally.errors,
    );
}
