//! The memory and accuracy of every shape of `WindowedBloomFilter`: for
//! each layout and number of generations, the bits per window item (the
//! array sized exactly, over the window), the false-positive rate measured
//! at the worst moment of the cycle (every generation full) over 1M absent
//! probes beside the rate the sizing expects there, false negatives among
//! the last window's items, and the forget horizon; then the
//! Age-Partitioned Bloom Filter's least memory at the rate, by
//! CrowdStrike/apbf's own false-positive formula (k = 11, l = 46 and 19.66
//! bits per window item at 1%), the peer `benches/windowed.rs` builds.
//! Deterministic (fixed seeds, one thread); no timing.
//!
//! Run: `cargo run --release -p atomic-bloom-benches --example windowed_table [-- RATE]`

use atomic_bloom::{Layout, WindowedBloomFilter};

#[path = "../common/window_peers.rs"]
mod window_peers;

use window_peers::{apbf_bits_per_item, apbf_least_memory, apbf_rate};

const WINDOW: usize = 200_000;
const PROBES: u64 = 1_000_000;

fn main() {
    let rate: f64 = std::env::args()
        .nth(1)
        .map(|rate| rate.parse().expect("a rate such as 0.01"))
        .unwrap_or(0.01);
    println!("window {WINDOW}, target {rate}, {PROBES} absent probes at the worst moment\n");
    println!("| layout | generations | bits per window item | k | FP measured (expected) | false negatives | horizon, × window |");
    println!("|---|---|---|---|---|---|---|");
    let shapes = [2, 4, 8]
        .map(|g| (Layout::CacheLine, g))
        .into_iter()
        .chain([2, 4, 8].map(|g| (Layout::Word, g)))
        .chain((2..=10).map(|g| (Layout::Compact, g)));
    for (layout, generations) in shapes {
        let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(WINDOW, rate)
            .seed(0x5eed)
            .layout(layout)
            .generations(generations)
            .build()
            .expect("valid parameters");
        let mut next = 0u64;
        for _ in 0..3 * WINDOW {
            filter.insert(&next);
            next += 1;
        }
        // The worst moment: one item short of a rotation.
        while filter.generation_len() + 1 < filter.generation_capacity() {
            filter.insert(&next);
            next += 1;
        }
        let found = (0..PROBES)
            .filter(|&i| filter.contains(&((1 << 63) | i)))
            .count();
        let missed = (next - WINDOW as u64..next)
            .filter(|key| !filter.contains(key))
            .count();
        let horizon = (filter.generation_capacity() * generations as usize) as f64 / WINDOW as f64;
        println!(
            "| {layout:?} | {generations} | {:.1} | {} | {:.3}% ({:.3}%) | {missed} | {horizon:.2} |",
            filter.bits_per_item(),
            filter.num_hashes(),
            found as f64 / PROBES as f64 * 100.0,
            filter.expected_fpr() * 100.0,
        );
    }
    let (k, l) = apbf_least_memory(rate);
    println!(
        "\nAge-Partitioned Bloom Filter, its least memory within {rate} (CrowdStrike/apbf's \
         formula): k = {k}, l = {l}, {:.2} bits per window item, {:.3}% by the formula",
        apbf_bits_per_item(k, l),
        apbf_rate(k, l) * 100.0
    );
}
