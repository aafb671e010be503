//! Dedup of a crawler's link stream: the job the library is for, measured
//! on real links rather than on `u64` keys.
//!
//! The stream is every link the crawl example offers to its frontier, in
//! crawl order: at setup the synthetic web of `examples/crawl/web.rs`
//! (150 hosts x 500 articles, seed 42) is crawled once, sequentially,
//! breadth-first with an exact `HashSet`, extracting and resolving links
//! with `examples/crawl/links.rs` exactly as the example does (fragments
//! dropped, `mailto:` and `javascript:` skipped). About 2.8M links, 97% of
//! them duplicates (navigation on every page, popular articles); setup
//! prints the exact counts. With `DEDUP_DIR=/path/to/html` the stream comes
//! from a crawl of a directory of HTML files instead, as `--dir` does in the
//! example: `DEDUP_DIR="$(rustc --print sysroot)/share/doc/rust/html"`
//! gives about 2.8M `file://` links, 98% duplicates, 56k distinct, 300 MiB
//! of URL text (crawled in about 10 s). Criterion stores both streams'
//! results under the same names: compare a `DEDUP_DIR` run only with
//! itself.
//!
//! One operation is offering one link: insert it and count it when the
//! subject says it is new. Each subject is sized for the stream's distinct
//! count at a 1% target rate, with fixed seeds, and is emptied (untimed)
//! before every pass over the stream, so each timed pass goes from empty to
//! full as a crawl does:
//!
//! * `atomic-bloom`, `atomic-bloom-word`: `BloomFilter<str>` with
//!   `Layout::CacheLine` and `Layout::Word`, one `insert` per link;
//! * `atomic-bloom-insert_many`, `atomic-bloom-word-insert_many`: the same
//!   filters through `insert_many`, one call per page with that page's
//!   links (about 36 on average), as a crawler that extracts a page's links
//!   and then offers them together would;
//! * `fastbloom-default`, `fastbloom-wyhash`: fastbloom's
//!   `AtomicBloomFilter` with its default hasher (seeded) and with this
//!   crate's `DefaultHasher` (wyhash);
//! * `floor`: one wyhash of the link (this crate's `DefaultHasher`, as the
//!   filters hash a `str`) and one touch of one word of an array the size of
//!   the `CacheLine` filter: a relaxed load, and a `fetch_or` only when the
//!   bit is missing. Reading the stream and hashing it cost this much
//!   whatever the filter;
//! * `dashset`: `dashmap::DashSet<&str>`, exact, presized for the distinct
//!   count, default (SipHash) hasher. It stores borrowed `&str`, so no
//!   allocation is timed: a crawler's `DashSet<String>` would also pay for
//!   copying each new URL. A fresh set is built (untimed) for every pass.
//!
//! At 1 and 2 threads. The stream is cut into as many contiguous runs of
//! whole pages as there are threads (not interleaved): thread 0 offers the
//! first half of the crawl, thread 1 the second, at the same time. Throughput
//! is the stream's length per pass. Setup also prints, for each subject, how
//! many links it called new on one thread beside the exact distinct count.
//!
//! Run: `cargo bench -p atomic-bloom-benches --bench dedup` (about 2 minutes on 2 cores), or a
//! subset, e.g. `cargo bench -p atomic-bloom-benches --bench dedup -- 'dedup/atomic-bloom/'`; for a
//! smoke run add `--warm-up-time 0.2 --measurement-time 0.5`. Compare only
//! figures of one run, on a quiet machine.
//!
//! Target: `atomic-bloom` at least 2x fastbloom's `AtomicBloomFilter` (with
//! either hasher), at 1 and 2 threads.
//!
//! Left out: fetching and parsing (the stream is prebuilt, so this measures
//! the filter, its hashing of ~36-byte URLs and reading the stream, not a
//! crawl), the frontier's queue (`Frontier` = filter + queue; the crawl
//! example measures it), `contains`, and the scalable filter. The filters are
//! small (128 KiB for ~80k distinct URLs) and stay in L2: this is the
//! hashing-bound regime; `benches/bloom.rs` covers filters larger than the
//! cache.

#[allow(dead_code)]
#[path = "../examples/crawl/links.rs"]
mod links;
#[allow(dead_code)]
#[path = "../examples/crawl/site.rs"]
mod site;
#[allow(dead_code)]
#[path = "../examples/crawl/web.rs"]
mod web;

use std::collections::{HashSet, VecDeque};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use atomic_bloom::{BloomFilter, DefaultHasher, Layout};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use dashmap::DashSet;
use url::Url;

use links::{extract_links, resolve};
use site::Site;

mod common;

use common::{Floor, Subject, RATE, SEED, THREADS};

/// The synthetic web: the example's seed and articles per host, a tenth of
/// its hosts (about 2.8M links offered).
const WEB_SEED: u64 = 42;
const HOSTS: usize = 150;
const PAGES_PER_HOST: usize = 500;

/// Every link offered in a crawl, in order, in one arena.
struct Stream {
    /// The links, concatenated.
    text: String,
    /// Where each link ends in `text`.
    ends: Vec<usize>,
    /// Where each page's links end in `ends` (the start URLs count as the
    /// first page).
    page_ends: Vec<usize>,
    /// Distinct links.
    distinct: usize,
    /// What was crawled.
    what: String,
}

impl Stream {
    /// The links as slices of the arena.
    fn links(&self) -> Vec<&str> {
        let mut start = 0;
        (self.ends.iter())
            .map(|&end| {
                let link = &self.text[start..end];
                start = end;
                link
            })
            .collect()
    }

    /// The links of each page (pages with none left out).
    fn pages<'a>(&self, links: &'a [&'a str]) -> Vec<&'a [&'a str]> {
        let mut start = 0;
        (self.page_ends.iter())
            .filter_map(|&end| {
                let page = &links[start..end];
                start = end;
                (!page.is_empty()).then_some(page)
            })
            .collect()
    }
}

/// Crawls `site` sequentially, breadth-first, with an exact set, recording
/// every link offered, as the crawl example resolves them.
fn crawl(site: &Site, what: String) -> Stream {
    let mut stream = Stream {
        text: String::new(),
        ends: Vec::new(),
        page_ends: Vec::new(),
        distinct: 0,
        what,
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<String> = VecDeque::new();
    let mut offer = |link: &str, stream: &mut Stream, queue: &mut VecDeque<String>| {
        stream.text.push_str(link);
        stream.ends.push(stream.text.len());
        if !seen.contains(link) {
            seen.insert(link.to_string());
            queue.push_back(link.to_string());
        }
    };
    for url in site.start_urls() {
        offer(&url, &mut stream, &mut queue);
    }
    stream.page_ends.push(stream.ends.len());
    while let Some(page) = queue.pop_front() {
        let Ok(base) = Url::parse(&page) else {
            continue;
        };
        let Some(html) = site.fetch(&base) else {
            continue;
        };
        for href in extract_links(&html) {
            if let Some(mut link) = resolve(&base, href) {
                if link.scheme() == "file" {
                    link.set_query(None); // a file has one URL, as in the example
                }
                offer(link.as_str(), &mut stream, &mut queue);
            }
        }
        stream.page_ends.push(stream.ends.len());
    }
    stream.distinct = seen.len();
    stream
}

/// The stream of `DEDUP_DIR`, or of the synthetic web.
fn stream() -> Stream {
    let (site, what) = match std::env::var_os("DEDUP_DIR") {
        Some(dir) => Site::dir(Path::new(&dir)),
        None => Site::synthetic(WEB_SEED, HOSTS, PAGES_PER_HOST),
    }
    .unwrap_or_else(|e| panic!("dedup bench: {e}"));
    let started = Instant::now();
    let stream = crawl(&site, what);
    let len = stream.ends.len();
    eprintln!(
        "dedup stream: {}\n  {len} links offered from {} pages, {} distinct, \
         {:.2}% duplicates, {:.1} MiB of URL text, crawled in {:.1?}",
        stream.what,
        stream.page_ends.len() - 1,
        stream.distinct,
        100.0 * (1.0 - stream.distinct as f64 / len.max(1) as f64),
        stream.text.len() as f64 / (1 << 20) as f64,
        started.elapsed(),
    );
    assert!(stream.distinct > 0, "dedup bench: the crawl found no links");
    stream
}

/// A deduplicating set under test.
trait Dedup<'a>: Sync {
    /// Offers one page's links; how many the subject called new.
    fn offer(&self, page: &[&'a str]) -> usize;
    /// Empties the subject (untimed).
    fn reset(&mut self);
}

/// A [`Subject`] offered one link at a time: ours one `insert` per link,
/// fastbloom, the floor.
struct OneByOne<S>(S);

impl<'a, S: Subject<str>> Dedup<'a> for OneByOne<S> {
    #[inline]
    fn offer(&self, page: &[&'a str]) -> usize {
        page.iter().filter(|&&link| self.0.insert(link)).count()
    }
    fn reset(&mut self) {
        self.0.reset();
    }
}

/// `BloomFilter<str>`, one `insert_many` per page.
struct OursBatch(BloomFilter<str>);

impl<'a> Dedup<'a> for OursBatch {
    #[inline]
    fn offer(&self, page: &[&'a str]) -> usize {
        self.0
            .insert_many(page)
            .into_iter()
            .filter(|&new| new)
            .count()
    }
    fn reset(&mut self) {
        self.0.clear();
    }
}

/// An exact concurrent set of borrowed links, rebuilt by `reset`.
struct Exact<'a> {
    set: DashSet<&'a str>,
    capacity: usize,
}

impl<'a> Exact<'a> {
    fn new(capacity: usize) -> Self {
        Exact {
            set: DashSet::with_capacity(capacity),
            capacity,
        }
    }
}

impl<'a> Dedup<'a> for Exact<'a> {
    #[inline]
    fn offer(&self, page: &[&'a str]) -> usize {
        page.iter().filter(|&&link| self.set.insert(link)).count()
    }
    fn reset(&mut self) {
        *self = Exact::new(self.capacity);
    }
}

fn ours(distinct: usize, layout: Layout) -> BloomFilter<str> {
    BloomFilter::builder(distinct, RATE)
        .seed(SEED)
        .layout(layout)
        .build()
        .expect("a valid filter")
}

/// Offers every page of `runs` (one run per thread, in parallel); the wall
/// time and how many links were called new.
fn offer_all<'a, D: Dedup<'a>>(subject: &D, runs: &[&[&[&'a str]]]) -> (Duration, usize) {
    let offer_run = |run: &[&[&'a str]]| run.iter().map(|page| subject.offer(page)).sum::<usize>();
    let started = Instant::now();
    let new = if let [run] = runs {
        offer_run(run)
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (runs.iter())
                .map(|&run| scope.spawn(move || offer_run(run)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        })
    };
    (started.elapsed(), new)
}

/// `pages` cut into `threads` contiguous runs of about equal link counts.
fn split<'p, 'a>(pages: &'p [&'a [&'a str]], threads: usize) -> Vec<&'p [&'a [&'a str]]> {
    let total: usize = pages.iter().map(|p| p.len()).sum();
    let mut runs = Vec::with_capacity(threads);
    let (mut start, mut links) = (0, 0);
    for (i, page) in pages.iter().enumerate() {
        links += page.len();
        if links * threads >= total * (runs.len() + 1) && runs.len() + 1 < threads {
            runs.push(&pages[start..=i]);
            start = i + 1;
        }
    }
    runs.push(&pages[start..]);
    runs
}

/// Benchmarks `subject` at 1 and 2 threads, after a one-thread check of how
/// many links it calls new.
fn bench_subject<'a, D: Dedup<'a>>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut subject: D,
    pages: &[&'a [&'a str]],
    distinct: usize,
) {
    let (_, new) = offer_all(&subject, &[pages]);
    eprintln!(
        "  {name:<31} called {new} links new of {distinct} distinct ({} = {:.3}% dropped)",
        distinct as i64 - new as i64,
        100.0 * (distinct as f64 - new as f64) / distinct as f64,
    );
    for threads in THREADS {
        let runs = split(pages, threads);
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        subject.reset();
                        let (time, new) = offer_all(&subject, &runs);
                        black_box(new);
                        time
                    })
                    .sum()
            })
        });
    }
}

fn dedup(c: &mut Criterion) {
    let stream = stream();
    let links = stream.links();
    let pages = stream.pages(&links);
    let n = stream.distinct;

    let mut group = c.benchmark_group("dedup");
    group.throughput(Throughput::Elements(links.len() as u64));
    group.sampling_mode(SamplingMode::Flat);
    let pages = &pages[..];
    bench_subject(
        &mut group,
        "atomic-bloom",
        OneByOne(ours(n, Layout::CacheLine)),
        pages,
        n,
    );
    bench_subject(
        &mut group,
        "atomic-bloom-word",
        OneByOne(ours(n, Layout::Word)),
        pages,
        n,
    );
    bench_subject(
        &mut group,
        "atomic-bloom-insert_many",
        OursBatch(ours(n, Layout::CacheLine)),
        pages,
        n,
    );
    bench_subject(
        &mut group,
        "atomic-bloom-word-insert_many",
        OursBatch(ours(n, Layout::Word)),
        pages,
        n,
    );
    bench_subject(
        &mut group,
        "fastbloom-default",
        OneByOne(
            fastbloom::AtomicBloomFilter::with_false_pos(RATE)
                .seed(&u128::from(SEED))
                .expected_items(n),
        ),
        pages,
        n,
    );
    bench_subject(
        &mut group,
        "fastbloom-wyhash",
        OneByOne(
            fastbloom::AtomicBloomFilter::with_false_pos(RATE)
                .hasher(DefaultHasher::with_seed(SEED))
                .expected_items(n),
        ),
        pages,
        n,
    );
    let floor = Floor::new(
        ours(n, Layout::CacheLine).num_bits() / 8,
        DefaultHasher::with_seed(SEED),
    );
    bench_subject(&mut group, "floor", OneByOne(floor), pages, n);
    bench_subject(&mut group, "dashset", Exact::new(n), pages, n);
    group.finish();
}

criterion_group! {
    name = benches;
    // Here, not on the group, so that `--warm-up-time` and
    // `--measurement-time` on the command line override them.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = dedup
}
criterion_main!(benches);
