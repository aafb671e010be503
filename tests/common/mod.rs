//! Shared by the integration tests: every test runs across every layout and
//! sizing.

#![allow(dead_code)]

use atomic_bloom::{BloomFilter, Layout, Sizing};

/// A layout and a sizing: what a builder is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub layout: Layout,
    pub sizing: Sizing,
}

impl From<Layout> for Config {
    fn from(layout: Layout) -> Self {
        Config {
            layout,
            sizing: Sizing::PowerOfTwo,
        }
    }
}

/// Every layout, power-of-two and exact.
pub const LAYOUTS: [Config; 6] = [
    config(Layout::CacheLine, Sizing::PowerOfTwo),
    config(Layout::Word, Sizing::PowerOfTwo),
    config(Layout::Compact, Sizing::PowerOfTwo),
    config(Layout::CacheLine, Sizing::Exact),
    config(Layout::Word, Sizing::Exact),
    config(Layout::Compact, Sizing::Exact),
];

pub const fn config(layout: Layout, sizing: Sizing) -> Config {
    Config { layout, sizing }
}

/// A seeded filter of `u64`s.
pub fn filter(
    capacity: usize,
    rate: f64,
    config: impl Into<Config>,
    seed: u64,
) -> BloomFilter<u64> {
    let config = config.into();
    BloomFilter::builder(capacity, rate)
        .seed(seed)
        .layout(config.layout)
        .sizing(config.sizing)
        .build()
        .expect("valid parameters")
}

/// A crawler-like URL for key `i`: many hosts, shared prefixes.
pub fn url(i: u64) -> String {
    format!(
        "https://host{}.example/section/{}/page-{}.html",
        i % 97,
        i % 13,
        i
    )
}

pub mod counting_alloc;
pub mod saved;
pub mod watchdog;
