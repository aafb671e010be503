//! Memory at capacity: for n = 1,000,000 distinct `u64` keys at a 1% and a
//! 0.1% target rate, builds each filter of this crate and each peer, inserts
//! the n keys, and prints a markdown table of the heap it holds, bits per
//! item, and the false-positive rate measured over 1M absent keys.
//!
//! ```text
//! cargo run --release -p atomic-bloom-benches --example bits_per_item
//! ```
//!
//! Memory is measured the same way for every subject: a counting global
//! allocator (around `System`) gives the heap bytes live after building and
//! inserting, minus those live before; `peak` is the most held at any moment
//! in between (a growing table or filter copies or keeps its old part while
//! it grows). Heap requested, not resident: allocator and page overhead is
//! not counted. Where a subject reports its own size (`memory_bytes()` here,
//! `memory_usage()` in bloomcraft, the number of bits in fastbloom and
//! bloomfilter) it is printed beside it.
//!
//! Bits per item are given at n and, for this crate's filters, also at the
//! filter's own `capacity()`: sizes are rounded up to a power of two, so a
//! filter may hold more than n at the target rate. The growing filters start
//! at n/64. `Frontier` is measured with its queue drained: the row is its
//! filter; the queue holding items is extra (printed below the table).

use std::collections::HashSet;
use std::time::Instant;

use atomic_bloom::{
    BloomFilter, CountingBloomFilter, Frontier, Layout, ScalableBloomFilter, Sizing,
};
use dashmap::DashSet;
use growable_bloom_filter::GrowableBloom;

#[path = "../../tests/common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{live, peak, reset_peak, CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const N: usize = 1_000_000;
const PROBES: u64 = 1_000_000;
const RATES: [f64; 2] = [0.01, 0.001];
const SEED: u64 = 0x5eed;

/// splitmix64: a bijection, so `key(i)` for distinct `i` are distinct.
fn key(i: u64) -> u64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One line of the table.
struct Row {
    name: String,
    /// Heap bytes held after building and inserting n keys.
    bytes: usize,
    /// The most held at once while building and inserting.
    peak: usize,
    /// What the subject says it takes, and how it says so.
    own: Option<(usize, &'static str)>,
    /// Items the subject holds at the target rate, if it says.
    capacity: Option<usize>,
    /// False positives over `PROBES` absent keys.
    fpr: f64,
}

/// What `measure` needs of a subject.
struct Subject<F> {
    name: String,
    build: Box<dyn FnOnce() -> F>,
    insert: fn(&mut F, u64),
    contains: fn(&F, u64) -> bool,
    own: fn(&F) -> Option<(usize, &'static str)>,
    capacity: fn(&F) -> Option<usize>,
}

/// Builds the subject, inserts `key(0..n)`, notes its heap, then probes
/// `key(n..n + PROBES)`.
fn measure<F>(subject: Subject<F>) -> Row {
    let started = Instant::now();
    let before = live();
    reset_peak();
    let mut filter = (subject.build)();
    for i in 0..N as u64 {
        (subject.insert)(&mut filter, key(i));
    }
    let bytes = live().saturating_sub(before);
    let peak = peak().saturating_sub(before);
    let hits = (N as u64..N as u64 + PROBES)
        .filter(|&i| (subject.contains)(&filter, key(i)))
        .count();
    let row = Row {
        name: subject.name,
        bytes,
        peak,
        own: (subject.own)(&filter),
        capacity: (subject.capacity)(&filter),
        fpr: hits as f64 / PROBES as f64,
    };
    drop(filter);
    eprintln!("  {:<58} {:>6.2?}", row.name, started.elapsed());
    row
}

fn ours(n: usize, rate: f64, layout: Layout) -> BloomFilter<u64> {
    sized(n, rate, layout, Sizing::PowerOfTwo)
}

fn sized(n: usize, rate: f64, layout: Layout, sizing: Sizing) -> BloomFilter<u64> {
    BloomFilter::builder(n, rate)
        .seed(SEED)
        .layout(layout)
        .sizing(sizing)
        .build()
        .expect("a valid filter")
}

fn scalable(initial: usize, rate: f64) -> ScalableBloomFilter<u64> {
    ScalableBloomFilter::builder(initial, rate)
        .seed(SEED)
        .build()
        .expect("a valid filter")
}

/// Every subject at target rate `rate`.
fn rows(rate: f64, queue_extra: &mut Vec<String>) -> Vec<Row> {
    let pct = rate * 100.0;
    let mut rows = Vec::new();
    for (label, layout, sizing) in [
        ("CacheLine", Layout::CacheLine, Sizing::PowerOfTwo),
        ("Word", Layout::Word, Sizing::PowerOfTwo),
        ("Compact", Layout::Compact, Sizing::PowerOfTwo),
        ("CacheLine, Exact", Layout::CacheLine, Sizing::Exact),
        ("Compact, Exact", Layout::Compact, Sizing::Exact),
    ] {
        rows.push(measure(Subject {
            name: format!("atomic-bloom `BloomFilter` ({label})"),
            build: Box::new(move || sized(N, rate, layout, sizing)),
            insert: |f, k| {
                f.insert(&k);
            },
            contains: |f, k| f.contains(&k),
            own: |f| Some((f.memory_bytes(), "memory_bytes()")),
            capacity: |f| Some(f.capacity()),
        }));
    }
    rows.push(measure(Subject {
        name: "atomic-bloom `CountingBloomFilter`".into(),
        build: Box::new(move || {
            CountingBloomFilter::<u64>::builder(N, rate)
                .seed(SEED)
                .build()
                .expect("a valid filter")
        }),
        insert: |f, k| {
            f.insert(&k);
        },
        contains: |f, k| f.contains(&k),
        own: |f| Some((f.memory_bytes(), "memory_bytes()")),
        capacity: |f| Some(f.capacity()),
    }));
    for (label, initial) in [("grown from n/64", N / 64), ("sized at n", N)] {
        rows.push(measure(Subject {
            name: format!("atomic-bloom `ScalableBloomFilter` ({label})"),
            build: Box::new(move || scalable(initial, rate)),
            insert: |f, k| {
                f.insert(&k);
            },
            contains: |f, k| f.contains(&k),
            own: |f| Some((f.memory_bytes(), "memory_bytes()")),
            capacity: |f| Some(f.capacity()),
        }));
    }
    // The frontier: pushed full, then drained, so that what is left is its
    // filter (and an empty queue); the full queue is noted apart.
    {
        let before = live();
        let frontier: Frontier<u64> = Frontier::from_filter(ours(N, rate, Layout::Word));
        for i in 0..N as u64 {
            frontier.push(key(i));
        }
        let full = live() - before;
        let mut popped = 0;
        while frontier.pop().is_some() {
            popped += 1;
        }
        let drained = live() - before;
        queue_extra.push(format!(
            "`Frontier<u64>` at {pct}%: {} bytes with its queue holding {popped} keys, \
             {drained} once drained: the queue costs {:.1} bytes per `u64` key ({:.0} bits), \
             on top of the filter",
            full,
            (full - drained) as f64 / popped.max(1) as f64,
            (full - drained) as f64 * 8.0 / popped.max(1) as f64,
        ));
    }
    rows.push(measure(Subject {
        name: "atomic-bloom `Frontier` (Word; filter only, queue drained)".into(),
        build: Box::new(move || Frontier::from_filter(ours(N, rate, Layout::Word))),
        insert: |f, k| {
            f.push(k);
            f.pop();
        },
        contains: |f, k| f.seen(&k),
        own: |f| Some((f.memory_bytes(), "memory_bytes()")),
        capacity: |f| Some(f.capacity()),
    }));
    rows.push(measure(Subject {
        name: "fastbloom `AtomicBloomFilter`".into(),
        build: Box::new(move || {
            fastbloom::AtomicBloomFilter::with_false_pos(rate)
                .seed(&u128::from(SEED))
                .expected_items(N)
        }),
        insert: |f, k| {
            f.insert(&k);
        },
        contains: |f, k| f.contains(&k),
        own: |f| Some((f.num_bits() / 8, "num_bits()/8")),
        capacity: |_| None,
    }));
    rows.push(measure(Subject {
        name: "bloomfilter `Bloom`".into(),
        build: Box::new(move || {
            // Its two SipHash keys are the seed's halves: equal halves (a
            // seed such as `[7; 32]`) make its two hashes equal and its
            // rate several times the target, so the halves differ here.
            let mut seed = [0u8; 32];
            for (i, chunk) in seed.chunks_mut(8).enumerate() {
                chunk.copy_from_slice(&key(SEED + i as u64).to_le_bytes());
            }
            bloomfilter::Bloom::new_for_fp_rate_with_seed(N, rate, &seed).expect("a valid filter")
        }),
        insert: |f, k| f.set(&k),
        contains: |f, k| f.check(&k),
        own: |f| Some((f.len() as usize / 8, "len()/8 (bits)")),
        capacity: |_| None,
    }));
    for (label, initial) in [("grown from n/64", N / 64), ("sized at n", N)] {
        rows.push(measure(Subject {
            name: format!("growable-bloom-filter `GrowableBloom` ({label})"),
            build: Box::new(move || GrowableBloom::new(rate, initial)),
            insert: |f, k| {
                f.insert(k);
            },
            contains: |f, k| f.contains(k),
            own: |_| None,
            capacity: |f| Some(f.capacity()),
        }));
    }
    rows.push(measure(Subject {
        name: "bloomcraft `StandardBloomFilter`".into(),
        build: Box::new(move || {
            bloomcraft::filters::StandardBloomFilter::<u64>::new(N, rate).expect("a valid filter")
        }),
        insert: |f, k| f.insert(&k),
        contains: |f, k| f.contains(&k),
        own: |f| Some((f.memory_usage(), "memory_usage()")),
        capacity: |_| None,
    }));
    rows.push(measure(Subject {
        name: "bloomcraft `CountingBloomFilter`".into(),
        build: Box::new(move || bloomcraft::filters::CountingBloomFilter::<u64>::new(N, rate)),
        insert: |f, k| f.insert(&k),
        contains: |f, k| f.contains(&k),
        own: |f| Some((f.memory_usage(), "memory_usage()")),
        capacity: |_| None,
    }));
    rows.push(measure(Subject {
        name: "bloomcraft `AtomicScalableBloomFilter` (grown from n/64)".into(),
        build: Box::new(move || {
            bloomcraft::filters::AtomicScalableBloomFilter::<u64>::new(N / 64, rate)
                .expect("a valid filter")
        }),
        insert: |f, k| f.insert(&k),
        contains: |f, k| f.contains(&k),
        own: |f| Some((f.memory_usage(), "memory_usage()")),
        capacity: |_| None,
    }));
    rows.push(measure(Subject {
        name: "`DashSet<u64>` (exact, presized)".into(),
        build: Box::new(|| DashSet::<u64>::with_capacity(N)),
        insert: |f, k| {
            f.insert(k);
        },
        contains: |f, k| f.contains(&k),
        own: |_| None,
        capacity: |_| None,
    }));
    rows.push(measure(Subject {
        name: "`HashSet<u64>` (exact, presized)".into(),
        build: Box::new(|| HashSet::<u64>::with_capacity(N)),
        insert: |f, k| {
            f.insert(k);
        },
        contains: |f, k| f.contains(&k),
        own: |_| None,
        capacity: |_| None,
    }));
    rows
}

fn mib(bytes: usize) -> String {
    format!("{:.2}", bytes as f64 / (1 << 20) as f64)
}

fn print_table(rate: f64, rows: &[Row]) {
    println!(
        "\n### n = {N}, target rate {}%, {PROBES} absent probes\n",
        rate * 100.0
    );
    println!(
        "| subject | heap MiB | peak MiB | own figure (bytes) | bits/item at n | \
         capacity() | bits/item at capacity() | measured FPR |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|");
    for row in rows {
        let own = row
            .own
            .map_or("".to_string(), |(bytes, how)| format!("{bytes} `{how}`"));
        let (capacity, at_capacity) = match row.capacity {
            Some(c) => (
                c.to_string(),
                format!("{:.2}", row.bytes as f64 * 8.0 / c as f64),
            ),
            None => (String::new(), String::new()),
        };
        println!(
            "| {} | {} | {} | {own} | {:.2} | {capacity} | {at_capacity} | {:.3}% |",
            row.name,
            mib(row.bytes),
            mib(row.peak),
            row.bytes as f64 * 8.0 / N as f64,
            row.fpr * 100.0,
        );
    }
}

fn main() {
    let started = Instant::now();
    let mut queue_extra = Vec::new();
    let tables: Vec<(f64, Vec<Row>)> = RATES
        .iter()
        .map(|&rate| {
            eprintln!("target rate {}%:", rate * 100.0);
            (rate, rows(rate, &mut queue_extra))
        })
        .collect();
    println!("# Memory at capacity\n");
    println!(
        "Heap bytes live after building and inserting n distinct `u64` keys, \
         minus those before (counting global allocator); peak: the most held \
         at once meanwhile. Bits per item = heap bytes x 8 / n, and / capacity() \
         where the filter reports one. Growing filters start at n/64."
    );
    for (rate, rows) in &tables {
        print_table(*rate, rows);
    }
    println!();
    for line in &queue_extra {
        println!("* {line}");
    }
    eprintln!("done in {:.1?}", started.elapsed());
}
