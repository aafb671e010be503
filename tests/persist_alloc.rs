//! Loading allocates no more than the input's real length justifies: inputs
//! whose sealed headers claim terabytes fail as truncated, having allocated
//! about what they hold. A counting allocator measures it.

mod common;

use std::sync::Mutex;

use atomic_bloom::{BloomFilter, CountingBloomFilter, Error, Frontier, ScalableBloomFilter};
use common::counting_alloc::{live, peak, reset_peak, CountingAlloc};
use common::saved::{body_start, reseal};

/// One measurement at a time: the tests of this file run on threads.
static MEASURING: Mutex<()> = Mutex::new(());

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// The most bytes `read` had allocated at once beyond what was live before.
fn peak_during<R>(read: impl FnOnce() -> R) -> (R, usize) {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let before = live();
    reset_peak();
    let result = read();
    (result, peak().saturating_sub(before))
}

fn patch(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
    reseal(bytes);
}

/// Bytes of a small saved filter, cut after its first `keep` body bytes and
/// resealed, with the field at body offset `at` set to `value`.
fn claim(mut bytes: Vec<u8>, at: usize, value: u64, keep: usize) -> Vec<u8> {
    let body = body_start();
    patch(&mut bytes, body + at, &value.to_le_bytes());
    bytes.truncate(body + keep);
    bytes
}

const LIMIT: usize = 1 << 20;

#[test]
fn a_bloom_filter_claiming_four_terabytes_allocates_what_it_holds() {
    let filter: BloomFilter<u64> = BloomFilter::builder(100_000, 0.01).seed(1).build().unwrap();
    let mut bytes = Vec::new();
    filter.write_to(&mut bytes).unwrap();
    assert!(bytes.len() > 100_000);
    // Block count at body offset 21: 2^36 blocks of 64 bytes.
    let input = claim(bytes, 21, 1 << 36, 100_000);
    let (result, peak) = peak_during(|| BloomFilter::<u64>::read_from(input.as_slice()));
    assert_eq!(
        result.unwrap_err(),
        Error::Truncated {
            section: "bit array"
        }
    );
    assert!(
        peak < 3 * 100_000 + LIMIT,
        "peak {peak} bytes for a {}-byte input",
        input.len()
    );
}

#[test]
fn a_counting_filter_claiming_four_terabytes_allocates_what_it_holds() {
    let filter: CountingBloomFilter<u64> = CountingBloomFilter::builder(1_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let mut bytes = Vec::new();
    filter.write_to(&mut bytes).unwrap();
    let input = claim(bytes, 21, 1 << 36, 10_000);
    let (result, peak) = peak_during(|| CountingBloomFilter::<u64>::read_from(input.as_slice()));
    assert_eq!(
        result.unwrap_err(),
        Error::Truncated {
            section: "counter array"
        }
    );
    assert!(peak < LIMIT, "peak {peak} bytes");
}

#[test]
fn a_scalable_filter_claiming_a_trillion_stages_allocates_what_it_holds() {
    let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let mut bytes = Vec::new();
    filter.write_to(&mut bytes).unwrap();
    // Stage count at body offset 42; the input holds one stage.
    let mut input = bytes.clone();
    patch(&mut input, body_start() + 42, &(1u64 << 40).to_le_bytes());
    let (result, peak) = peak_during(|| ScalableBloomFilter::<u64>::read_from(input.as_slice()));
    assert!(result.is_err());
    assert!(peak < LIMIT, "peak {peak} bytes");
}

#[test]
fn a_frontier_claiming_huge_items_allocates_what_it_holds() {
    let frontier: Frontier<String> = Frontier::new(100, 0.01).unwrap();
    frontier.push("https://example.com/".to_string());
    let mut bytes = Vec::new();
    frontier.write_to(&mut bytes).unwrap();
    let tail = bytes.len() - 4;
    // The last item's length (8 bytes before its 20 bytes), then the count.
    let mut huge_item = bytes.clone();
    patch(&mut huge_item, tail - 20 - 8, &(1u64 << 50).to_le_bytes());
    let (result, peak) = peak_during(|| Frontier::<String>::read_from(huge_item.as_slice()));
    assert_eq!(
        result.unwrap_err(),
        Error::Truncated {
            section: "queued item"
        }
    );
    assert!(peak < LIMIT, "peak {peak} bytes");

    let mut many_items = bytes;
    patch(&mut many_items, tail - 20 - 16, &(1u64 << 60).to_le_bytes());
    let (result, peak) = peak_during(|| Frontier::<String>::read_from(many_items.as_slice()));
    assert_eq!(
        result.unwrap_err(),
        Error::Truncated {
            section: "queued item"
        }
    );
    assert!(peak < LIMIT, "peak {peak} bytes");
}
