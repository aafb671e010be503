//! An ID allocator on a `ScalableBloomFilter`: hands out the shortest ID not
//! yet in use, from any thread, with no capacity guess.
//!
//! IDs are walked in shortlex order (`a` … `z`, `0` … `9`, then `aa`, `ab`,
//! …) by a shared atomic cursor, and the filter records every ID in use,
//! both handed out and reserved by hand (a user who picked their own short
//! name). An allocation skips the IDs the filter says are used. A false
//! positive only skips a free ID; an ID is never handed out twice, and a
//! reserved one never handed out.
//!
//! The filter's stages use `Layout::Word`, so a `reserve` racing an
//! allocation of the same ID has exactly one winner (except across a stage
//! growth, where both may win: for strict uniqueness under such races use a
//! fixed `BloomFilter` with `Layout::Word`).
//!
//! Run: `cargo run --release --example id_allocator`

use std::sync::atomic::{AtomicU64, Ordering};

use atomic_bloom::{Error, Layout, ScalableBloomFilter};

/// The characters of an ID, in order.
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Hands out the shortest IDs not yet in use.
#[derive(Debug)]
pub struct IdAllocator {
    used: ScalableBloomFilter<str>,
    /// Position of the next candidate in shortlex order.
    cursor: AtomicU64,
}

impl IdAllocator {
    /// An allocator expecting about `expected` IDs (it grows past that), at
    /// a false-positive rate `rate`: the share of free IDs skipped.
    pub fn new(expected: usize, rate: f64) -> Result<Self, Error> {
        Ok(IdAllocator {
            used: ScalableBloomFilter::builder(expected, rate)
                .layout(Layout::Word)
                .build()?,
            cursor: AtomicU64::new(0),
        })
    }

    /// Marks `id` as in use; false if it already was (or is a false
    /// positive of the filter: then it may be free, but cannot be reserved).
    pub fn reserve(&self, id: &str) -> bool {
        self.used.insert(id)
    }

    /// The shortest ID not in use, now marked used.
    pub fn allocate(&self) -> String {
        loop {
            // Relaxed: the cursor only hands each candidate to one caller;
            // the filter's test-and-set decides whether it is free.
            let position = self.cursor.fetch_add(1, Ordering::Relaxed);
            let candidate = shortlex(position);
            if self.used.insert(&candidate) {
                return candidate;
            }
        }
    }

    /// IDs in use, estimated.
    pub fn in_use_estimate(&self) -> usize {
        self.used.len_estimate()
    }

    /// Bytes of the filter.
    pub fn memory_bytes(&self) -> usize {
        self.used.memory_bytes()
    }
}

/// The ID at `position` in shortlex order over [`ALPHABET`]: all IDs of
/// length 1 first, then of length 2, and so on.
pub fn shortlex(mut position: u64) -> String {
    let base = ALPHABET.len() as u64;
    let mut length = 1u32;
    let mut of_this_length = base;
    while position >= of_this_length {
        position -= of_this_length;
        length += 1;
        of_this_length = of_this_length.saturating_mul(base);
    }
    let mut id = vec![0u8; length as usize];
    for slot in id.iter_mut().rev() {
        *slot = ALPHABET[(position % base) as usize];
        position /= base;
    }
    String::from_utf8(id).expect("the alphabet is ASCII")
}

fn main() -> Result<(), Error> {
    let allocator = IdAllocator::new(1_000, 0.001)?;
    for name in ["a", "b", "admin", "x9"] {
        allocator.reserve(name);
    }
    let threads = 4;
    let per_thread = 50_000;
    let ids: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    (0..per_thread)
                        .map(|_| allocator.allocate())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("allocating threads do not panic"))
            .collect()
    });
    let mut by_length = std::collections::BTreeMap::new();
    for id in &ids {
        *by_length.entry(id.len()).or_insert(0usize) += 1;
    }
    println!(
        "{} IDs from {threads} threads; by length: {by_length:?}",
        ids.len()
    );
    println!(
        "in use (estimated): {}, filter: {} bytes",
        allocator.in_use_estimate(),
        allocator.memory_bytes()
    );
    Ok(())
}
