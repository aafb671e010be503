//! The async fleet crawl: tokio tasks share a
//! `atomic_bloom_fleet::tokio::FleetFrontier` over the same synthetic web
//! as the blocking crawl (`fleet_crawl`), and with any crawl process, blocking or
//! async, started against the same server or cluster.
//!
//! ```text
//! cargo run --release -p atomic-bloom-fleet --example fleet_crawl_async -- --redis redis://127.0.0.1:6379/ --tasks 64
//! ```

mod cli;
#[allow(dead_code)] // the blocking crawl, which `fleet_crawl` runs
mod fleet;
mod fleet_async;
#[path = "../../../examples/crawl/links.rs"]
mod links;
#[path = "../../../examples/crawl/site.rs"]
mod site;
#[path = "../../../examples/crawl/web.rs"]
mod web;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use atomic_bloom_fleet::tokio::FleetFrontier;
use clap::Parser;

async fn run(args: &cli::Args) -> Result<(), String> {
    if !(1..=65_536).contains(&args.tasks) {
        return Err("--tasks must be between 1 and 65536".into());
    }
    let setup = cli::setup(args)?;
    let on_complete = cli::on_complete(args)?;
    let frontier =
        (FleetFrontier::connect(&setup.config).await).map_err(|e| format!("fleet: {e}"))?;
    cli::describe(args, &setup.what, &format!("{} tokio tasks", args.tasks));
    let give_up = Duration::from_secs(120);
    let frontier = Arc::new(frontier);
    let crawl = fleet_async::crawl(
        frontier,
        args.tasks,
        setup.start,
        setup.fetch,
        on_complete,
        give_up,
    );
    cli::report(&crawl.await?);
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(&cli::Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("crawl: {message}");
            ExitCode::FAILURE
        }
    }
}
