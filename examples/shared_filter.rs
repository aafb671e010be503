//! Dedup a stream of crawler links with one `BloomFilter` shared by worker
//! threads, and check the result against an exact `HashSet`.
//!
//! ```text
//! cargo run --release --example shared_filter [THREADS] [DISTINCT_URLS]
//! ```
//!
//! Each worker walks its own slice of a link stream in which every distinct
//! URL appears about 30 times (navigation links on every page, as on real
//! sites), inserting each link and counting the ones the filter says are
//! new. At the end it reports how many distinct URLs were accepted, how many
//! new URLs were wrongly dropped (false positives, checked exactly), the
//! throughput, and the filter's memory beside an exact `HashSet`'s.

use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use atomic_bloom::{BloomFilter, Layout};

const REPEATS: u64 = 30;

fn url(id: u64) -> String {
    format!(
        "https://site{}.example/docs/{}/page-{}.html",
        id % 211,
        id % 17,
        id
    )
}

/// The `position`-th link of the stream: each distinct id appears `REPEATS`
/// times, scattered (an odd multiplier permutes positions mod 2^64).
fn link_at(position: u64, distinct: u64) -> u64 {
    position.wrapping_mul(0x9e37_79b9_7f4a_7c15) % (distinct * REPEATS) % distinct
}

fn parse_arg(index: usize, default: u64) -> Result<u64, String> {
    match std::env::args().nth(index) {
        None => Ok(default),
        Some(text) => match text.parse::<u64>() {
            Ok(value) if value > 0 => Ok(value),
            _ => Err(format!(
                "argument {index} must be a positive integer, got {text:?}"
            )),
        },
    }
}

fn main() -> ExitCode {
    let (threads, distinct) = match (parse_arg(1, 4), parse_arg(2, 1_000_000)) {
        (Ok(threads), Ok(distinct)) => (threads, distinct),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("usage: shared_filter [THREADS] [DISTINCT_URLS]\n{e}");
            return ExitCode::FAILURE;
        }
    };
    // Layout::Word: a URL is never accepted twice, even when two workers
    // meet it at the same instant.
    let filter: BloomFilter<str> = match BloomFilter::builder(distinct as usize, 0.01)
        .layout(Layout::Word)
        .build()
    {
        Ok(filter) => filter,
        Err(e) => {
            eprintln!("cannot build the filter: {e}");
            return ExitCode::FAILURE;
        }
    };
    let filter = Arc::new(filter);
    let accepted = Arc::new(AtomicUsize::new(0));
    let links = distinct * REPEATS;

    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|worker| {
            let (filter, accepted) = (Arc::clone(&filter), Arc::clone(&accepted));
            std::thread::spawn(move || {
                let mut mine = 0;
                for position in (worker..links).step_by(threads as usize) {
                    if filter.insert(&url(link_at(position, distinct))) {
                        mine += 1;
                    }
                }
                // Relaxed: summed after the workers are joined.
                accepted.fetch_add(mine, Ordering::Relaxed);
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker panicked");
    }
    let elapsed = start.elapsed();

    // The exact answer, for the report.
    let mut exact: HashSet<String> = (0..links).map(|p| url(link_at(p, distinct))).collect();
    exact.shrink_to_fit();
    let exact_bytes = exact.capacity() * (std::mem::size_of::<String>() + 1)
        + exact.iter().map(String::capacity).sum::<usize>();
    // Relaxed: the workers were joined above.
    let accepted = accepted.load(Ordering::Relaxed);
    let lost = exact.iter().filter(|url| !filter.contains(url)).count();
    let wrongly_dropped = exact.len().saturating_sub(accepted);

    println!("threads                  {threads}");
    println!("links processed          {links}");
    println!("distinct URLs            {}", exact.len());
    println!("accepted as new          {accepted}");
    println!(
        "duplicates dropped       {}",
        links as usize - accepted - wrongly_dropped
    );
    println!(
        "new URLs wrongly dropped {wrongly_dropped} ({:.3}%, target 1%)",
        100.0 * wrongly_dropped as f64 / exact.len() as f64
    );
    println!("false negatives          {lost}");
    println!(
        "throughput               {:.1} M links/s (URL formatting included)",
        links as f64 / elapsed.as_secs_f64() / 1e6
    );
    println!(
        "memory                   {:.1} MiB filter vs {:.1} MiB exact HashSet<String>",
        filter.memory_bytes() as f64 / (1 << 20) as f64,
        exact_bytes as f64 / (1 << 20) as f64
    );
    println!("filter                   {filter:?}");
    if lost != 0 || accepted > exact.len() {
        eprintln!("error: the filter lost an item or accepted a URL twice");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
