//! A multithreaded web crawler whose workers share one `Frontier<String>`:
//! the job `atomic-bloom` is for.
//!
//! ```text
//! cargo run --release --example crawl                  # a synthetic web: 1500 hosts x 500 pages
//! cargo run --release --example crawl -- --verify      # also count new URLs wrongly dropped
//! cargo run --release --example crawl -- --dir "$(rustc --print sysroot)/share/doc/rust/html" --verify
//! cargo run --release --example crawl -- --help        # every option
//! ```
//!
//! Each worker takes a URL from the frontier (`wait_take`), fetches the
//! page, finds its links, resolves them against the page's URL and pushes
//! them back while it still holds the page; the frontier drops every URL it
//! has seen before, so each page is fetched once, and tells the workers when
//! nothing is queued and no worker holds a page: the crawl is over. The web is generated from `--seed` as it is fetched (`web.rs`), so
//! nothing has to be downloaded; `--dir` crawls a directory of HTML files
//! through `file://` URLs instead (`site.rs`).
//!
//! At the end it reports pages crawled, links found, duplicates dropped,
//! new URLs wrongly dropped by false positives (with `--verify`, which keeps
//! an exact record of every URL beside the filter), throughput, and the
//! frontier's memory beside that of an exact `HashSet<String>`.
//!
//! With `--revisit-after N` the frontier forgets (`Frontier::windowed`):
//! a page is admitted again once N other pages have been admitted after
//! it, so each page is crawled again, and never sooner than N pages after
//! its last visit, until `--max-pages` pages are crawled. The report then
//! gives the re-visits and the pages between visits, checked against an
//! exact map of every page's last visit, and the filter's memory beside
//! that map's (`revisit.rs`).
//!
//! ```text
//! cargo run --release --example crawl -- --revisit-after 200000
//! ```
//!
//! A fleet of crawl processes sharing one frontier through Valkey or Redis
//! is the `atomic-bloom-fleet` crate's `fleet_crawl` example, over this
//! same web (`cargo run -p atomic-bloom-fleet --example fleet_crawl --
//! --redis URL`).

mod links;
mod report;
mod revisit;
mod site;
mod web;

use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom::{BloomFilter, Frontier, Layout, ScalableBloomFilter, WindowedBloomFilter};
use clap::{Parser, ValueEnum};
use indicatif::{HumanCount, ProgressBar, ProgressStyle};
use url::Url;

use links::{extract_links, resolve};
use report::{ExactRecord, Tally};
use revisit::Revisits;
use site::{Site, SiteArgs};

/// Crawl a synthetic web (or a directory of HTML files) with worker threads
/// sharing one atomic-bloom Frontier.
#[derive(Parser, Debug)]
#[command(name = "crawl")]
struct Args {
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    #[command(flatten)]
    site: SiteArgs,
    /// Target false-positive rate: the share of new URLs the frontier may
    /// wrongly drop as seen.
    #[arg(long, default_value_t = 0.01)]
    rate: f64,
    /// Layout of the seen-filter: `word` never queues a URL twice,
    /// `cache-line` takes less memory but two workers racing on one new URL
    /// may both queue it.
    #[arg(long, value_enum, default_value_t = LayoutArg::Word)]
    layout: LayoutArg,
    /// A scalable filter that starts at capacity/64 and grows.
    #[arg(long)]
    scalable: bool,
    /// Crawl each page again once N other pages have been crawled since
    /// its last visit, and never sooner: the frontier forgets on schedule
    /// (a windowed filter, word layout: a link found by two workers at once
    /// is admitted once; --layout does not apply).
    #[arg(long, value_name = "N", conflicts_with_all = ["scalable", "verify"])]
    revisit_after: Option<usize>,
    /// With --revisit-after: pages to crawl before stopping [default: 3 x
    /// the pages of the web].
    #[arg(long, value_name = "PAGES", requires = "revisit_after")]
    max_pages: Option<u64>,
    /// Keep an exact record of every URL to count the new ones wrongly
    /// dropped by false positives (slower, more memory).
    #[arg(long)]
    verify: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LayoutArg {
    Word,
    CacheLine,
}

/// What the workers share.
struct Crawl<'a> {
    site: &'a Site,
    frontier: &'a Frontier<String>,
    exact: Option<ExactRecord>,
    /// `--revisit-after`: the page count, the stop, the exact last visits.
    revisits: Option<Revisits>,
    progress: ProgressBar,
}

/// More worker threads than this is a typo.
const MAX_THREADS: usize = 1024;

/// Pages a worker crawls between two updates of the progress bar.
const PROGRESS_EVERY: usize = 1024;

impl Crawl<'_> {
    /// Pushes `url`, noting it in the tally (and the exact record).
    fn offer(&self, url: String, tally: &mut Tally) -> bool {
        if let Some(exact) = &self.exact {
            exact.offer(&url);
        }
        tally.offered += 1;
        let len = url.len();
        let accepted = self.frontier.push(url);
        if accepted {
            tally.queued += 1;
            tally.queued_bytes += len;
        }
        accepted
    }

    /// Fetches the page at `url` and offers its links.
    fn visit(&self, url: &str, found: &mut Vec<String>, tally: &mut Tally) {
        if let Some(exact) = &self.exact {
            tally.popped_again += usize::from(exact.popped(url));
        }
        let page = Url::parse(url)
            .ok()
            .and_then(|base| self.site.fetch(&base).map(|html| (base, html)));
        let Some((base, html)) = page else {
            tally.not_fetched += 1;
            return;
        };
        tally.pages += 1;
        for href in extract_links(&html) {
            tally.links_found += 1;
            match resolve(&base, href) {
                Some(mut link) => {
                    if link.scheme() == "file" {
                        link.set_query(None); // a file has one URL
                    }
                    found.push(String::from(link));
                }
                None => tally.skipped += 1,
            }
        }
    }

    fn worker(&self) -> Tally {
        let mut tally = Tally::default();
        let mut found = Vec::new();
        let mut done = 0;
        // `None`: nothing is queued and no worker holds a page, whose links
        // could still come. A page is held until `url` drops, after its
        // links were pushed.
        while let Some(url) = self.frontier.wait_take() {
            if self.revisits.as_ref().is_some_and(Revisits::stopped) {
                break;
            }
            if let Some(revisits) = &self.revisits {
                if !revisits.visit(&url, &mut tally.gaps) {
                    continue;
                }
            }
            self.visit(&url, &mut found, &mut tally);
            for link in found.drain(..) {
                // The resolved link owns its `String` already: `push` moves
                // it (`push_ref` would copy it).
                self.offer(link, &mut tally);
            }
            done += 1;
            if done % PROGRESS_EVERY == 0 {
                self.progress.inc(PROGRESS_EVERY as u64);
                self.progress
                    .set_message(format!("{} queued", self.frontier.len()));
            }
        }
        self.progress.inc((done % PROGRESS_EVERY) as u64);
        tally
    }
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("crawl: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if !(1..=MAX_THREADS).contains(&args.threads) {
        return Err(format!("--threads must be between 1 and {MAX_THREADS}"));
    }
    let (site, what, capacity) = args.site.open()?;
    let frontier =
        build_frontier(args, capacity).map_err(|e| format!("cannot build the frontier: {e}"))?;
    let setup = match args.revisit_after {
        Some(after) => format!(
            "{what}\nfrontier: windowed, {:?} layout, re-admits a page after {} others \
             (--revisit-after {} + 4 per thread in flight) at target rate {}%, {} threads",
            frontier.layout(),
            HumanCount(frontier.capacity() as u64),
            HumanCount(after as u64),
            args.rate * 100.0,
            args.threads,
        ),
        None => format!(
            "{what}\nfrontier: {:?} layout, {} capacity {} at target rate {}%, {} threads",
            frontier.layout(),
            if args.scalable {
                "scalable, initial"
            } else {
                "fixed"
            },
            HumanCount(frontier.capacity() as u64),
            args.rate * 100.0,
            args.threads,
        ),
    };
    let revisits = args.revisit_after.map(|after| {
        let max_pages = args.max_pages.unwrap_or(3 * site.size() as u64);
        Revisits::new(after, max_pages)
    });
    let crawl = Crawl {
        site: &site,
        frontier: &frontier,
        exact: args.verify.then(ExactRecord::new),
        revisits,
        progress: spinner(),
    };
    let mut tally = Tally::default();
    // Before the workers start: they stop once nothing is pending.
    for url in site.start_urls() {
        crawl.offer(url, &mut tally);
    }

    let started = Instant::now();
    let joined: Vec<_> = thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads)
            .map(|_| scope.spawn(|| crawl.worker()))
            .collect();
        workers.into_iter().map(|w| w.join()).collect()
    });
    let elapsed = started.elapsed();
    crawl.progress.finish_and_clear();
    for worker in joined {
        tally.add(&worker.map_err(|_| "a worker thread panicked".to_string())?);
    }
    report::print(
        &setup,
        &tally,
        elapsed,
        &frontier,
        crawl.exact.as_ref(),
        crawl.revisits.as_ref(),
    );
    Ok(())
}

/// The frontier the arguments ask for, seeded with `--seed`.
fn build_frontier(args: &Args, capacity: usize) -> Result<Frontier<String>, atomic_bloom::Error> {
    if let Some(after) = args.revisit_after {
        // Pages are admitted by the filter then queued, and numbered after
        // they are popped: each worker may hold one page between admission
        // and queue and one between pop and number, which can bring two
        // visits up to 4 per thread closer than their admissions were; the
        // window takes that much more than the promise.
        let filter =
            WindowedBloomFilter::builder(after.saturating_add(4 * args.threads), args.rate)
                .seed(args.site.seed)
                .layout(Layout::Word)
                .build()?;
        return Ok(Frontier::from_windowed(filter));
    }
    let layout = match args.layout {
        LayoutArg::Word => Layout::Word,
        LayoutArg::CacheLine => Layout::CacheLine,
    };
    if args.scalable {
        let filter = ScalableBloomFilter::builder((capacity / 64).max(1), args.rate)
            .layout(layout)
            .seed(args.site.seed)
            .build()?;
        return Ok(Frontier::from_scalable(filter));
    }
    let filter = BloomFilter::builder(capacity, args.rate)
        .layout(layout)
        .seed(args.site.seed)
        .build()?;
    Ok(Frontier::from_filter(filter))
}

/// A spinner with pages crawled, pages/s and the queue's length, drawn on
/// stderr when it is a terminal.
fn spinner() -> ProgressBar {
    let style = ProgressStyle::with_template(
        "{spinner} {human_pos} pages crawled in {elapsed}, {per_sec}, {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let progress = ProgressBar::new_spinner().with_style(style);
    progress.enable_steady_tick(Duration::from_millis(100));
    progress
}
