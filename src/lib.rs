//! Lock-free probabilistic filters for multithreaded services.
//!
//! One filter is shared as `Arc<Filter>` by every worker thread, and every
//! operation takes `&self`: no locks, no `&mut`, no per-thread copies.
//!
//! * [`BloomFilter`]: a fixed-capacity Bloom filter. All of an item's bits
//!   live in one 64-byte cache line ([`Layout::CacheLine`], the default, in
//!   two of its words; [`Layout::Compact`], anywhere in it, for the least
//!   memory), or in one 64-bit word ([`Layout::Word`]), where an insert is a
//!   single atomic test-and-set and exactly one of several racing inserters
//!   of the same item is told it was new.
//! * [`CountingBloomFilter`]: a Bloom filter with `remove`, on one-byte
//!   counters updated by compare-and-swap, sticky when they saturate.
//! * [`CuckooFilter`]: membership with `remove` at about 13 bits per item
//!   at 1% (a seventh of the counting filter's memory): fingerprints
//!   packed in words, inserted and removed by one compare-and-swap, moved
//!   by relocation without ever hiding an item from a reader; full is an
//!   error that loses nothing, or a new stage with growth.
//! * [`ScalableBloomFilter`]: grows stage by stage without a capacity
//!   guess, lock-free, keeping the total false-positive rate it was given.
//! * [`WindowedBloomFilter`]: remembers the last `window` items (or the
//!   last `T` of time) and forgets older ones on schedule: generations
//!   rotated without locks.
//! * [`Frontier`]: a crawler's to-visit queue that drops what it has seen
//!   and knows when the crawl is over: a filter in front of a lock-free
//!   queue, and a count of the items in flight.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use atomic_bloom::{BloomFilter, Layout};
//!
//! // A crawler's visited set: 1M URLs at a 1% false-positive rate.
//! let visited: Arc<BloomFilter<str>> = Arc::new(
//!     BloomFilter::builder(1_000_000, 0.01).layout(Layout::Word).build()?,
//! );
//! let worker = {
//!     let visited = Arc::clone(&visited);
//!     std::thread::spawn(move || visited.insert("https://example.com/"))
//! };
//! let was_new = worker.join().unwrap();
//! assert!(was_new);
//! assert!(visited.contains("https://example.com/"));
//! assert!(!visited.insert("https://example.com/")); // seen before
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bulk insert
//!
//! `par_insert` (feature `rayon`, on by default) inserts the items of a
//! rayon parallel iterator on rayon's thread pool, as the program holds
//! them: a `Vec<String>` goes into a filter of `str` through `par_iter()`
//! ([`AsItem`] says what an item may be). Every filter also takes
//! `Extend`, and [`BloomFilter::insert_many`] works through a slice with
//! the blocks of items ahead prefetched.
//!
//! ```
//! use rayon::prelude::*;
//! use atomic_bloom::BloomFilter;
//!
//! let seen: BloomFilter<str> = BloomFilter::new(1_000_000, 0.01)?;
//! let urls: Vec<String> = (0..100_000).map(|i| format!("https://example.com/{i}")).collect();
//! let new = seen.par_insert(urls.par_iter());
//! assert!(new > 99_000);
//! assert!(seen.contains("https://example.com/99999"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Accuracy
//!
//! Filters are sized with the exact expected false-positive rate of their
//! blocked layout (plain Bloom formulas under-size blocked filters), then
//! rounded up to a whole block ([`Sizing::Exact`], the default), or to a
//! power of two of blocks ([`Sizing::PowerOfTwo`]); [`BloomFilter::capacity`] reports how many items the
//! rounded filter holds at the target rate, and the measured rate at that
//! many items stays at the target.
//!
//! # Memory
//!
//! [`Layout::Compact`] (with the default [`Sizing::Exact`]) takes the least: 9.9 bits per
//! item at 1% and 15.0 at 0.1%, within 4% of an unblocked filter. Arrays
//! come from the allocator's zeroed path, so a large filter costs resident
//! memory only where bits have been set.
//!
//! ```
//! use atomic_bloom::{BloomFilter, Layout, Sizing};
//!
//! let lean: BloomFilter<str> = BloomFilter::builder(1_000_000, 0.01)
//!     .layout(Layout::Compact)
//!     .build()?;
//! assert_eq!(lean.sizing(), Sizing::Exact);
//! assert!(lean.memory_bytes() < 1_250_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Consistency
//!
//! Bits only go from 0 to 1, until a `clear` (which also takes `&self`; its
//! docs say what an insert racing it may see). An insert that
//! happens-before a lookup (through a join, a channel, a lock or any
//! release/acquire pair) is always seen by it; a lookup that races an
//! insert of the same item may or may not see it. A [`CuckooFilter`]'s
//! fingerprints also leave slots (remove) and move between them
//! (relocation); its docs say what a concurrent reader sees. Counts such as
//! [`BloomFilter::len_estimate`] are snapshots.
//!
//! Every filter is `Send + Sync`, `Clone` (a snapshot), `PartialEq` and
//! `Eq` (built alike, with the same bits), `Extend` and `Debug` (which
//! counts no bits).
//!
//! # Crate features
//!
//! * `rayon` (on by default): `par_insert` on every filter inserts from a
//!   rayon parallel iterator. Without it (`default-features = false`) the
//!   crate does not depend on rayon.
//! * `serde`: `Serialize` and `Deserialize` for every filter, as the bytes of
//!   the saved-filter format and with the same checks as `read_from`.
//!
//! # Saving and loading
//!
//! Every type has `write_to` / `read_from` and crash-safe `save` / `load`,
//! in one versioned little-endian format with checksums (`FORMAT.md` in the
//! repository). Loading hostile input returns an [`Error`] naming what is
//! wrong, never panics, and allocates only as the input delivers bytes.
//!
//! ```
//! use atomic_bloom::ScalableBloomFilter;
//!
//! let seen: ScalableBloomFilter<str> = ScalableBloomFilter::new(1_000, 0.01)?;
//! seen.insert("https://example.com/");
//! let mut bytes = Vec::new();
//! seen.write_to(&mut bytes)?;
//! let restored: ScalableBloomFilter<str> = ScalableBloomFilter::read_from(bytes.as_slice())?;
//! assert!(restored.contains("https://example.com/"));
//! # Ok::<(), atomic_bloom::Error>(())
//! ```
//!
//! # Beyond one process
//!
//! The crate `atomic-bloom-fleet` shares a seen-set and a crawler's queue
//! between the processes of a fleet, through a Valkey or Redis server (or
//! cluster) running this repository's module (`atomic-bloom-redis`) or
//! RedisBloom, with one of this crate's filters in front and pipelined
//! batches; this crate compiles no network client.
//!
//! Model checks of every atomic protocol live in `loom-tests/`; they compile
//! this crate with `RUSTFLAGS="--cfg atomic_bloom_loom"`, which swaps the
//! atomics in `src/sync.rs` for loom's. It is not a cargo feature.

#![deny(unsafe_op_in_unsafe_fn)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, missing_debug_implementations)]

// The filters' own modules first: rustdoc lists a type's `impl` blocks in
// the order their modules are declared, so each type's page opens with
// the block that holds its constructors.
mod bloom;
mod counting;
mod cuckoo;
mod frontier;
mod scalable;
mod windowed;

mod batch;
mod bits;
mod block;
mod builder;
mod builder_options;
mod counters;
mod error;
mod fill;
mod hash;
mod item;
mod item_methods;
mod layout;
#[cfg(feature = "rayon")]
mod parallel;
mod persist;
mod sizing;
mod sync;
mod tally;
mod traits;
mod wire;
mod wyhash_v1;

pub use bloom::BloomFilter;
pub use builder::{BloomFilterBuilder, CountingBloomFilterBuilder};
pub use counting::CountingBloomFilter;
/// The cuckoo core under [`CuckooFilter`], for the Valkey/Redis module's
/// RedisBloom-compatible `CF.*` commands; not a stable interface.
#[doc(hidden)]
pub use cuckoo::core as cuckoo_core;
pub use cuckoo::{CuckooFilter, CuckooFilterBuilder};
pub use error::{Error, ErrorKind, IoError};
pub use frontier::{Frontier, Taken, WaitTake};
pub use hash::DefaultHasher;
pub use item::AsItem;
pub use layout::{Layout, Sizing};
pub use persist::{FrontierItem, SaveCursor};
pub use scalable::{ScalableBloomFilter, ScalableBloomFilterBuilder, StageStats};
pub use windowed::{Rotation, WindowedBloomFilter, WindowedBloomFilterBuilder};
pub use wyhash_v1::WyHash;

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
