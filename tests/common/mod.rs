//! Shared by the integration tests: every test runs across both layouts.

#![allow(dead_code)]

use atomic_bloom::{BloomFilter, Layout};

pub const LAYOUTS: [Layout; 2] = [Layout::CacheLine, Layout::Word];

/// A seeded filter of `u64`s.
pub fn filter(capacity: usize, rate: f64, layout: Layout, seed: u64) -> BloomFilter<u64> {
    BloomFilter::builder(capacity, rate)
        .seed(seed)
        .layout(layout)
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
