//! The fleet's protocol core: everything the fleet decides, and no I/O.
//!
//! What to send (the scripts, their keys, the pipelines per node), what a
//! reply means (the error table, the waits for replicas and the AOF), the
//! leases and their renewal, the retries and their pauses, the state of a
//! reply that was lost (a batch kept with its id, a take kept with its
//! tokens), the order of completions, and when the heartbeat beats: all
//! here, written once. Nothing here opens a socket, sleeps or reads a
//! clock: a client call is a [`Call`](call::Call) that asks its driver
//! for rounds of pipelines and for sleeps, and takes the time as `now` at
//! each step (see `call` for the call order). The calls that a client's
//! tasks or threads make at the same time share rounds ([`group`]: the
//! first caller whose turn comes runs one combined call for all of them,
//! and each gets its own answer). The blocking driver (`crate::blocking`)
//! and the tokio driver (`crate::tokio`) only run calls: they wait for
//! their turn, answer the I/O of the rounds they serve, and run the
//! heartbeat when [`Heartbeat`](frontier::Heartbeat) says.

pub(crate) mod call;
pub(crate) mod client;
mod durability;
mod execute;
mod failure;
pub(crate) mod frontier;
pub(crate) mod group;
mod keys;
mod link;
#[cfg(test)]
mod model;
#[cfg(test)]
mod model_tests;
pub(crate) mod resp;
mod scripts;
#[cfg(test)]
mod seeded_tests;
pub(crate) mod seen;
mod setup;
#[cfg(test)]
mod shared_crawl_tests;
#[cfg(test)]
mod shared_round_tests;
#[cfg(test)]
mod tests;
pub(crate) mod wire;

use std::sync::PoisonError;
use std::time::Duration;

use crate::sync::{Mutex, MutexGuard};

pub(crate) use durability::Durability;

/// Locks `mutex`; a thread that panicked holding it left nothing half-done
/// that the fleet's state relies on (each change is one assignment or push).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `duration` in whole milliseconds, as the server's commands take it.
pub(crate) fn millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

/// The client's id and the pauses' jitter: a count hashed with a seed the
/// driver draws (a test, a fixed one).
#[derive(Debug)]
pub(crate) struct Rng {
    hasher: atomic_bloom::DefaultHasher,
    drawn: u64,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng {
            hasher: atomic_bloom::DefaultHasher::with_seed(seed),
            drawn: 0,
        }
    }

    /// A number none of the others drawn predicts.
    pub(crate) fn draw(&mut self) -> u64 {
        self.drawn += 1;
        std::hash::BuildHasher::hash_one(&self.hasher, self.drawn)
    }
}

/// A seed no other process draws: the OS's entropy (or, failing that, the
/// time and the process id).
pub(crate) fn fresh_seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        since_epoch.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32)
    })
}
