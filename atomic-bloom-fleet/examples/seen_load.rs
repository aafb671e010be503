//! Load on one async seen-set: `--tasks` tokio tasks offer batches of new
//! items as fast as they are answered, while a probe task offers one new
//! item at a time (`insert`), every millisecond; prints the items a second
//! and the probe's latency (p50, p99). The busy tasks' calls and the
//! probe's share rounds on the client's wire.
//!
//! ```text
//! cargo run --release -p atomic-bloom-fleet --example seen_load -- --redis redis://127.0.0.1:6379/ --tasks 64
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atomic_bloom_fleet::tokio::FleetSeen;
use atomic_bloom_fleet::FleetConfig;
use clap::Parser;
use tokio::task::JoinSet;

/// Load one async seen-set and measure a single insert's latency.
#[derive(Parser, Debug)]
#[command(name = "seen_load")]
struct Args {
    /// The fleet's server, or any node of its cluster.
    #[arg(long, value_name = "URL")]
    redis: String,
    /// Busy tasks (0: the probe alone).
    #[arg(long, default_value_t = 64)]
    tasks: usize,
    /// Items a busy task offers per call.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// How long to run.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Keys the fleet's filter is spread over.
    #[arg(long, default_value_t = 8)]
    shards: usize,
    /// The prefix of the fleet's keys.
    #[arg(long, default_value = "load")]
    prefix: String,
}

/// The `quantile` (0 to 1) of sorted `samples`.
fn quantile(samples: &[Duration], quantile: f64) -> Duration {
    let at = ((samples.len() as f64 - 1.0) * quantile).round() as usize;
    samples.get(at).copied().unwrap_or_default()
}

async fn run(args: &Args) -> Result<(), String> {
    let seconds =
        Duration::try_from_secs_f64(args.seconds).map_err(|e| format!("--seconds: {e}"))?;
    let config = FleetConfig::new(args.redis.as_str())
        .prefix(args.prefix.as_str())
        .shards(args.shards)
        .capacity(100_000_000, 0.01)
        .local_filter(10_000_000, 0.001);
    let seen = Arc::new(
        FleetSeen::connect(&config)
            .await
            .map_err(|e| format!("fleet: {e}"))?,
    );
    // Items no earlier run offered: they go to the server.
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let run = format!("{:x}-{}", since_epoch.as_nanos(), std::process::id());
    let started = Instant::now();
    let deadline = started + seconds;
    let mut busy = JoinSet::new();
    for task in 0..args.tasks {
        let (seen, run, batch) = (Arc::clone(&seen), run.clone(), args.batch);
        busy.spawn(async move {
            let mut offered = 0u64;
            for call in 0u64.. {
                if Instant::now() >= deadline {
                    break;
                }
                let items: Vec<String> = (0..batch)
                    .map(|at| format!("{run}-{task}-{call}-{at}"))
                    .collect();
                seen.insert_many(&items).await.map_err(|e| e.to_string())?;
                offered += batch as u64;
            }
            Ok::<u64, String>(offered)
        });
    }
    let mut latencies = Vec::new();
    for probe in 0u64.. {
        if Instant::now() >= deadline {
            break;
        }
        let sent = Instant::now();
        let new = seen
            .insert(&format!("{run}-probe-{probe}"))
            .await
            .map_err(|e| format!("probe: {e}"))?;
        latencies.push(sent.elapsed());
        if !new {
            return Err(format!("probe {probe} was answered seen"));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut offered = 0;
    while let Some(done) = busy.join_next().await {
        offered += done.map_err(|e| e.to_string())??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let stats = seen.stats();
    latencies.sort();
    println!(
        "{} busy tasks offered {offered} items in {elapsed:.2} s: {:.0} items/s; {} round trips",
        args.tasks,
        offered as f64 / elapsed,
        stats.round_trips
    );
    println!(
        "single insert with {} tasks busy: p50 {} us, p99 {} us ({} probes)",
        args.tasks,
        quantile(&latencies, 0.5).as_micros(),
        quantile(&latencies, 0.99).as_micros(),
        latencies.len()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(&Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("seen_load: {message}");
            ExitCode::FAILURE
        }
    }
}
