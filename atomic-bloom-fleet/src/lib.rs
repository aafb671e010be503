//! A fleet of processes on one seen-set, served by Valkey or Redis with a
//! Bloom module (`atomic-bloom-redis`, or RedisBloom), for the filters of
//! [`atomic_bloom`]. Needs Rust 1.88 (the `redis` crate's minimum).
//!
//! [`FleetSeen`] is a seen-set shared by every process of a fleet: it
//! answers, for each item, whether any process offered it before.
//! [`FleetFrontier`] is a crawler's to-visit queue on top of it: each URL
//! is handed out once across the whole fleet (up to the false-positive
//! rate), and a process that runs dry takes queued URLs that others found.
//!
//! What makes a fleet cheaper than sending every link to the server:
//!
//! - **A local filter in front.** Most of a crawler's links repeat ones the
//!   same process found before (navigation bars, the same host's pages).
//!   A lock-free [`ScalableBloomFilter`](atomic_bloom::ScalableBloomFilter) in the
//!   process answers those without a round trip; only what is new here
//!   goes to the server.
//! - **Pipelined batches.** What goes to the server waits in a buffer per
//!   shard until [`batch_size`](FleetConfig::batch_size) items or
//!   [`linger`](FleetConfig::linger) have gathered, and leaves in one
//!   pipeline per node, a script per batch that runs `BF.INSERT` and queues
//!   the items the filter did not hold.
//! - **Shards over a cluster.** One logical filter is
//!   [`shards`](FleetConfig::shards) keys whose hash tags fall in equal
//!   ranges of the cluster's slots, so a cluster spreads them over its
//!   nodes; each item goes to the shard its hash picks, the same in every
//!   process.
//!
//! # Work sharing
//!
//! The fleet's queues live on the server, one list per shard beside its
//! filter: the script that finds a URL new queues it in the same step, so
//! a URL is queued once or not at all, and any process takes from any
//! shard. A process that runs dry therefore gets work as long as any is
//! queued anywhere, with no owner to ask and nothing to rebalance when a
//! process joins or leaves. The price is a round trip per
//! [`pop_batch`](FleetConfig::pop_batch) URLs; forwarding links to the
//! process that owns their host would save it, but stalls the fleet on its
//! slowest process.
//!
//! # Failures
//!
//! A batch or a pop whose reply is lost (a server that dies, a dropped
//! connection, a reply later than [`timeout`](FleetConfig::timeout)) is
//! sent again with the same id until [`retry_for`](FleetConfig::retry_for)
//! runs out, after a jittered pause that doubles each time; the server
//! answers a repeat with what the first run did, so nothing is queued
//! twice and nothing is lost. Past that the call returns
//! [`Error::ServerUnavailable`], naming the node, and the batch stays in
//! the client to go out with the next call. A warning naming the node is
//! logged (the `log` crate) at each failed try. An item the server's
//! filter refuses (a full filter that cannot grow, an out-of-memory
//! server) is an [`Error::ServerRefused`] naming the key, never an item
//! silently answered seen.
//!
//! # Leases: every page crawled at least once
//!
//! [`FleetFrontier::pop`] hands out a URL under a lease kept on the server
//! (a per-shard hash of URLs out and the deadline of each take, from the
//! server's clock); [`FleetFrontier::complete`] ends it, but only once the
//! server has answered every push the page made, so a page whose links
//! were lost is crawled again instead. A thread of the frontier renews the
//! leases every third of [`lease`](FleetConfig::lease). When a process
//! dies, or is cut off for longer than its lease, any other client's next
//! look at the queues puts its URLs back at their head.
//!
//! The guarantee: every URL pushed by any process is crawled (popped and
//! completed) at least once, up to the false-positive rates; twice only
//! when a process died or stalled past its lease while holding it, so at
//! most what one process held (its last take, and pages completed whose
//! completion had not reached the server). A fleet operator does nothing
//! when a machine dies: its work comes back within one lease.
//!
//! # Durability
//!
//! An acknowledged batch or take is in the primary's memory. With
//! [`wait_for_replicas`](FleetConfig::wait_for_replicas), each pipeline
//! also waits for that many replicas (`WAIT`, after a write of its own, so
//! that a command sent again after a lost reply is covered too), and a
//! shortfall is retried like an unreachable node, so a failover to one of
//! those replicas does not undo it (a failover to another replica, when a
//! primary has more than that many, can: see the option).
//! A cluster's `MOVED` maps the slots again; `ASK` is answered with
//! `ASKING` on the node the slot is migrating to.
//!
//! # Termination
//!
//! [`FleetFrontier::is_finished`] is true once no live process holds,
//! buffers, leases or has queued a URL: each client marks itself busy on
//! the server (with a deadline its heartbeat renews) before it takes work
//! and idle once it has none, and the check reads the busy clients, every
//! shard's queue and leases, and the busy clients again. A client that
//! dies while busy stops counting when its deadline passes, and its leased
//! URLs go back on the queue. A busy or idle mark whose reply was lost is
//! sent again by the next call. A client moves work (buffers, sends,
//! takes, ends a lease) only while its mark surely lives; one that cannot
//! renew it takes and moves nothing until it can, so the shards' counts a
//! check reads at different instants are one snapshot.
//!
//! # Two drivers, one protocol
//!
//! Every decision of the protocol (what to send, what a reply means,
//! leases, retries, the state of a lost reply, the order of completions,
//! when the heartbeat beats) lives in a core that does no I/O and reads no
//! clock. Two drivers run it: the blocking one at the crate's root
//! ([`FleetSeen`], [`FleetFrontier`]: a socket per node, and one thread
//! per frontier for the heartbeat) and, with the feature `tokio`, an async
//! one with the same methods in [`tokio`] (the same heartbeat thread, so
//! that leases outlive the runtime). Blocking and async clients of one
//! fleet work together.
//!
//! # Many tasks, one wire
//!
//! Share one client between a process's threads or tasks (`Arc`): the
//! calls they make at the same time share rounds on its connections, a
//! group commit. The first call whose turn comes sends, in one pipeline per
//! node, what every waiting call needs (their batches, one take for all
//! their pops, one check for all their checks); calls made meanwhile wait
//! for the next round, which leaves when this one returns (at most 1,024
//! calls a round, or [`max_buffered`](FleetConfig::max_buffered) items for
//! a seen-set), and each call gets its own answer. A call dropped before
//! its round withdraws what it asked; one dropped while its round is under
//! way leaves nothing half-done: its items were sent with their ids, and
//! its answers are kept as a lost reply's would be.
//!
//! # Crate features
//!
//! - `tokio`: the async driver, [`tokio::FleetSeen`]
//!   and [`tokio::FleetFrontier`].
//!
//! # Shared settings
//!
//! The first client stores the fleet's shards, capacity, error rate and
//! expansion on the server; a client started with others is refused at
//! connect ([`Error::FleetSettingsDiffer`]) instead of splitting the
//! fleet. A server whose `maxmemory-policy` may evict the fleet's keys is
//! reported at connect (a logged warning).
//!
//! # Example
//!
//! ```no_run
//! use atomic_bloom_fleet::{FleetConfig, FleetFrontier};
//!
//! fn main() -> Result<(), atomic_bloom_fleet::Error> {
//!     let config = FleetConfig::new("redis://127.0.0.1:6379/")
//!         .prefix("crawl")
//!         .shards(8)
//!         .capacity(10_000_000, 0.01);
//!     let frontier = FleetFrontier::connect(&config)?;
//!     frontier.push("https://example.com/".to_string())?;
//!     frontier.flush()?;
//!     while !frontier.is_finished()? {
//!         while let Some(page) = frontier.pop()? {
//!             // fetch `page.url()`, push its links ...
//!             frontier.complete(page);
//!         }
//!     }
//!     Ok(())
//! }
//! ```

#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, missing_debug_implementations)]

#[cfg(not(atomic_bloom_loom))]
mod accessors;
#[cfg(not(atomic_bloom_loom))]
mod blocking;
#[cfg(not(atomic_bloom_loom))]
mod config;
#[cfg(not(atomic_bloom_loom))]
mod core;
#[cfg(not(atomic_bloom_loom))]
mod error;
#[doc(hidden)]
pub mod order;
mod sync;
#[cfg(all(feature = "tokio", not(atomic_bloom_loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;

#[cfg(not(atomic_bloom_loom))]
pub use blocking::{FleetFrontier, FleetSeen};
#[cfg(not(atomic_bloom_loom))]
pub use config::{FleetConfig, FleetStats};
#[cfg(not(atomic_bloom_loom))]
pub use core::frontier::Leased;
#[cfg(not(atomic_bloom_loom))]
pub use error::Error;

/// The README's examples compile as doctests.
#[cfg(all(doctest, not(atomic_bloom_loom)))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
