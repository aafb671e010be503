//! A seen-set shared by every process of a fleet.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::mem;

use super::client::{Batch, Client};
use super::{lock, FleetConfig, FleetStats};
use crate::sync::Mutex;
use crate::Error;

/// A seen-set shared by every process of a fleet: a local lock-free filter
/// in front of sharded Bloom filters on a Valkey or Redis server (or
/// cluster) with a Bloom module.
///
/// [`insert_many`](Self::insert_many) answers, for each item, whether the
/// fleet saw it for the first time: the local filter answers what this
/// process offered before, and the rest goes to the server in one pipeline
/// of batches. Share it between threads as `Arc<FleetSeen>`; calls that go
/// to the server take turns on its connections.
///
/// # Consistency
///
/// Across the fleet, each item is answered new at most once (the server's
/// filter decides, one batch at a time), and once up to the false-positive
/// rates of the server's filters and of the local filter (an item wrongly
/// held by either is answered seen). One exception: when a shard's filter
/// refuses an item part-way through a batch (full, and not allowed to
/// grow), the items of the batch before it that the filter holds are
/// answered new, whether this batch or an earlier one added them (the
/// server's script cannot tell them apart), so such an item may be
/// answered new twice; never one answered seen that no one was answered
/// new for.
///
/// # Example
///
/// ```no_run
/// use atomic_bloom::fleet::{FleetConfig, FleetSeen};
///
/// # fn main() -> Result<(), atomic_bloom::Error> {
/// let seen = FleetSeen::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
/// let new = seen.insert_many(&["a", "b", "a"])?;
/// assert_eq!(new, [true, true, false]);
/// # Ok(())
/// # }
/// ```
pub struct FleetSeen {
    client: Client,
    /// Answers of batches sent again after a call that failed, for the
    /// caller who asks again.
    recovered: Mutex<HashMap<String, bool>>,
    /// Batches whose answers a failed call never got.
    unresolved: Mutex<Vec<Batch>>,
}

impl FleetSeen {
    /// Connects to the fleet's server (or cluster) and checks it has the
    /// module.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFleetConfig`] for a setting out of range,
    /// [`Error::FleetTimesConflict`] for a `retry_for` longer than the
    /// `lease` leaves room for, or a `result_ttl` shorter than it,
    /// [`Error::ServerUnavailable`] when the server cannot be reached,
    /// [`Error::ModuleMissing`] when it has no `BF.*` commands.
    pub fn connect(config: &FleetConfig) -> Result<FleetSeen, Error> {
        Ok(FleetSeen {
            client: Client::connect(config)?,
            recovered: Mutex::new(HashMap::new()),
            unresolved: Mutex::new(Vec::new()),
        })
    }

    /// Offers `items` to the fleet: `true` for each item no process offered
    /// before (up to the false-positive rates), `false` for the others and
    /// for a repeat within `items`.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] when the server could not be reached
    /// for [`retry_for`](FleetConfig::retry_for), [`Error::WrongKeyType`]
    /// or [`Error::ServerRefused`] when it refused. No item is then marked
    /// seen here; what reached the server is kept, and a later call
    /// finds out, so offering the same items again answers them as the
    /// first, lost, reply would have. A batch that keeps failing fails
    /// only the calls that offer its items again; calls for other items
    /// go on.
    pub fn insert_many<I: AsRef<str>>(&self, items: &[I]) -> Result<Vec<bool>, Error> {
        let client = &self.client;
        client.count_offered(items.len() as u64);
        let mut wire = client.wire();
        let mut unresolved = lock(&self.unresolved);
        let mut recovered = lock(&self.recovered);
        // Answers a failed call never got come first: a caller asking again
        // for the same items is answered from them. A batch that fails
        // again holds up only the calls that offer its items.
        let mut stuck = None;
        if !unresolved.is_empty() {
            let batches = mem::take(&mut *unresolved);
            let answers = client.offer(&mut wire, &batches, false);
            stuck = sort_out(client, &mut recovered, &mut unresolved, batches, answers);
        }
        let waiting: HashSet<&str> = (unresolved.iter())
            .flat_map(|batch| batch.items.iter().map(String::as_str))
            .collect();
        if let Some(error) = stuck {
            if items.iter().any(|item| waiting.contains(item.as_ref())) {
                return Err(error);
            }
        }
        drop(waiting);
        let local = client.local.as_ref();
        let mut answers = vec![false; items.len()];
        let mut local_hashes = vec![0; if local.is_some() { items.len() } else { 0 }];
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); client.keys.len()];
        for (at, item) in items.iter().enumerate() {
            let item = item.as_ref();
            if let Some(answer) = recovered.remove(item) {
                answers[at] = answer;
                continue;
            }
            if let Some(local) = local {
                local_hashes[at] = local.hash_item(item);
                if local.contains_hash(local_hashes[at]) {
                    client.count_answered_locally(1);
                    continue;
                }
            }
            by_shard[client.shard_of(item)].push(at);
        }
        drop(recovered);
        let mut batches = Vec::new();
        let mut positions = Vec::new();
        for (shard, ats) in by_shard.iter().enumerate() {
            for chunk in ats.chunks(client.config.batch_size) {
                batches.push(Batch {
                    shard,
                    id: wire.next_id(),
                    items: chunk
                        .iter()
                        .map(|&at| items[at].as_ref().to_string())
                        .collect(),
                    first_seq: 0,
                });
                positions.push(chunk);
            }
        }
        if batches.is_empty() {
            return Ok(answers);
        }
        let outcomes = client.offer(&mut wire, &batches, false);
        if outcomes.iter().any(Result::is_err) {
            // The answers that did come are kept for the caller who asks
            // again; the batches that failed are sent again first.
            let mut recovered = lock(&self.recovered);
            let error = sort_out(client, &mut recovered, &mut unresolved, batches, outcomes);
            return Err(error.expect("some batch failed"));
        }
        for (ats, flags) in positions.into_iter().zip(outcomes) {
            for (&at, new) in ats.iter().zip(flags.expect("checked above")) {
                answers[at] = new;
                if let Some(local) = local {
                    local.insert_hash(local_hashes[at]);
                }
            }
        }
        Ok(answers)
    }

    /// Offers one item: [`insert_many`](Self::insert_many) of one.
    ///
    /// # Errors
    ///
    /// As for `insert_many`.
    pub fn insert(&self, item: &str) -> Result<bool, Error> {
        Ok(self.insert_many(&[item])?[0])
    }

    /// What this client did so far.
    pub fn stats(&self) -> FleetStats {
        self.client.stats()
    }

    /// The configuration it connected with.
    pub fn config(&self) -> &FleetConfig {
        &self.client.config
    }
}

/// Keeps the answers of the `batches` that got one for the caller who
/// offers their items again, and the batches that failed to be sent again
/// first; the first error, if any failed.
fn sort_out(
    client: &Client,
    recovered: &mut HashMap<String, bool>,
    unresolved: &mut Vec<Batch>,
    batches: Vec<Batch>,
    outcomes: Vec<Result<Vec<bool>, Error>>,
) -> Option<Error> {
    let mut first_error = None;
    for (batch, outcome) in batches.into_iter().zip(outcomes) {
        match outcome {
            Ok(flags) => {
                for (item, new) in batch.items.into_iter().zip(flags) {
                    if let Some(local) = &client.local {
                        local.insert(&item);
                    }
                    recovered.insert(item, new);
                }
            }
            Err(error) => {
                unresolved.push(batch);
                first_error.get_or_insert(error);
            }
        }
    }
    first_error
}

impl fmt::Debug for FleetSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetSeen")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}
