//! A seen-set shared by every process of a fleet: its call, which both
//! drivers run.

use std::collections::{HashMap, HashSet};
use std::mem;

use super::call::Call;
use super::client::{Batch, Client, Wire};
use crate::Error;

/// A seen-set's memory of failed calls, kept with its wire.
#[derive(Debug, Default)]
pub(crate) struct Book {
    /// Answers of batches sent again after a call that failed, for the
    /// caller who asks again: an item is new if any of its occurrences
    /// was (a repeat within a batch is answered seen by the server).
    recovered: HashMap<String, bool>,
    /// Batches whose answers a failed (or dropped) call never got.
    unresolved: Vec<Batch>,
}

impl Book {
    /// Forgets the answers of `items`, returned to a caller.
    fn taken(&mut self, items: &HashSet<&str>) {
        for item in items {
            self.recovered.remove(*item);
        }
    }
}

/// Offers `items` to the fleet: `true` for each item no process offered
/// before (see `FleetSeen::insert_many`).
pub(crate) fn insert_many<'a, I: AsRef<str> + Sync>(
    client: &'a Client,
    wire: &'a mut Wire,
    items: &'a [I],
) -> Call<'a, Result<Vec<bool>, Error>> {
    Call::new(wire.port(), insert(client, wire, items))
}

async fn insert<I: AsRef<str>>(
    client: &Client,
    wire: &mut Wire,
    items: &[I],
) -> Result<Vec<bool>, Error> {
    client.count_offered(items.len() as u64);
    // Batches a dropped call left in flight are unresolved.
    let left = mem::take(&mut wire.sending);
    wire.book.unresolved.extend(left);
    // Answers a failed call never got come first: a caller asking again
    // for the same items is answered from them. A batch that fails again
    // holds up only the calls that offer its items.
    let mut stuck = None;
    if !wire.book.unresolved.is_empty() {
        wire.sending = mem::take(&mut wire.book.unresolved);
        let answers = client.offer(wire, false).await;
        stuck = sort_out(client, wire, answers);
    }
    if let Some(error) = stuck {
        let waiting: HashSet<&str> = (wire.book.unresolved.iter())
            .flat_map(|batch| batch.items.iter().map(String::as_str))
            .collect();
        if items.iter().any(|item| waiting.contains(item.as_ref())) {
            return Err(error);
        }
    }
    let local = client.local.as_ref();
    let mut answers = vec![false; items.len()];
    let mut local_hashes = vec![0; if local.is_some() { items.len() } else { 0 }];
    let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); client.keys.len()];
    // Answers from the book leave it only when this call returns them: a
    // call that fails on its own batches, or is dropped, leaves them for
    // the next (their items are in the local filter already).
    let mut from_book: HashSet<&str> = HashSet::new();
    for (at, item) in items.iter().enumerate() {
        let item = item.as_ref();
        if let Some(&answer) = wire.book.recovered.get(item) {
            // A repeat within `items` is answered `false`.
            answers[at] = from_book.insert(item) && answer;
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
    let mut positions = Vec::new();
    for (shard, ats) in by_shard.iter().enumerate() {
        for chunk in ats.chunks(client.config.batch_size) {
            let id = wire.next_id();
            wire.sending.push(Batch {
                shard,
                id,
                items: chunk
                    .iter()
                    .map(|&at| items[at].as_ref().to_string())
                    .collect(),
                first_seq: 0,
            });
            positions.push(chunk);
        }
    }
    if wire.sending.is_empty() {
        wire.book.taken(&from_book);
        return Ok(answers);
    }
    let outcomes = client.offer(wire, false).await;
    if outcomes.iter().any(Result::is_err) {
        // The answers that did come are kept for the caller who asks
        // again; the batches that failed are sent again first.
        let error = sort_out(client, wire, outcomes);
        return Err(error.expect("some batch failed"));
    }
    wire.sending.clear();
    wire.book.taken(&from_book);
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

/// Keeps the answers of the batches in flight that got one for the caller
/// who offers their items again (one per item: new if any occurrence
/// was), and the batches that failed to be sent again first; the first
/// error, if any failed.
fn sort_out(
    client: &Client,
    wire: &mut Wire,
    outcomes: Vec<Result<Vec<bool>, Error>>,
) -> Option<Error> {
    let mut first_error = None;
    for (batch, outcome) in wire.sending.drain(..).zip(outcomes) {
        match outcome {
            Ok(flags) => {
                for (item, new) in batch.items.into_iter().zip(flags) {
                    if let Some(local) = &client.local {
                        local.insert(&item);
                    }
                    // A repeat's `false` does not undo the first's `true`.
                    *wire.book.recovered.entry(item).or_default() |= new;
                }
            }
            Err(error) => {
                wire.book.unresolved.push(batch);
                first_error.get_or_insert(error);
            }
        }
    }
    first_error
}
