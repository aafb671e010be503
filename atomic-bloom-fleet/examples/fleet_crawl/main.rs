//! The fleet crawl (`fleet_crawl`; the library's one-process crawl is
//! `crawl`): worker threads share a `FleetFrontier`, and so do all the
//! crawl processes started against the same server or cluster (blocking
//! or async, `fleet_crawl_async`): together they crawl each
//! page once, and a process that dies loses nothing.
//!
//! ```text
//! cargo run --release -p atomic-bloom-fleet --example fleet_crawl -- --redis redis://127.0.0.1:6379/ --crawled-out pages.txt
//! cargo run --release -p atomic-bloom-fleet --example fleet_crawl -- --help
//! ```
//!
//! The synthetic web and the link extraction are the library's crawl
//! example's (`examples/crawl/` at the repository's root).

mod cli;
mod fleet;
#[path = "../../../examples/crawl/links.rs"]
mod links;
#[path = "../../../examples/crawl/site.rs"]
mod site;
#[path = "../../../examples/crawl/web.rs"]
mod web;

use std::process::ExitCode;
use std::time::Duration;

use atomic_bloom_fleet::FleetFrontier;
use clap::Parser;

fn run(args: &cli::Args) -> Result<(), String> {
    if !(1..=1024).contains(&args.threads) {
        return Err("--threads must be between 1 and 1024".into());
    }
    let setup = cli::setup(args)?;
    let on_complete = cli::on_complete(args)?;
    let frontier = FleetFrontier::connect(&setup.config).map_err(|e| format!("fleet: {e}"))?;
    cli::describe(args, &setup.what, &format!("{} threads", args.threads));
    let give_up = Duration::from_secs(120);
    let (threads, start) = (args.threads, setup.start);
    let tally = fleet::crawl(
        &frontier,
        threads,
        start,
        &setup.fetch,
        &on_complete,
        give_up,
    )?;
    cli::report(&tally);
    Ok(())
}

fn main() -> ExitCode {
    match run(&cli::Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("crawl: {message}");
            ExitCode::FAILURE
        }
    }
}
