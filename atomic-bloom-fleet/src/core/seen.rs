//! A seen-set shared by every process of a fleet: its rounds, which both
//! drivers run. The offers that callers make at the same time share a
//! round (see `group`): their items go out together, a batch per shard's
//! chunk, one pipeline per node, and each caller gets the answers of its
//! own items.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::mem;

use super::call::Call;
use super::client::Client;
use super::group::{Group, Retry, Serve, Ticket};
use super::lock;
use super::wire::{Batch, Wire};
use crate::sync::{Arc, Mutex};
use crate::Error;

/// A seen-set's memory of answers that did not reach their callers.
#[derive(Debug, Default)]
struct Book {
    /// Answers of batches sent again after a round that failed, and of
    /// callers that left before taking theirs, for the caller who asks
    /// again: an item is new if any of its occurrences was (a repeat
    /// within a batch is answered seen by the server).
    recovered: HashMap<String, bool>,
    /// Batches whose answers a failed (or dropped) round never got.
    unresolved: Vec<Batch>,
}

impl Book {
    /// Keeps `new` as an answer for `item`: a repeat's `false` does not
    /// undo the first occurrence's `true`.
    fn recover(&mut self, item: String, new: bool) {
        *self.recovered.entry(item).or_default() |= new;
    }
}

/// One caller's items, as a round takes them.
pub(crate) type Offer = Vec<String>;

/// One caller's answers. Dropped untaken (its caller left while its round
/// was under way), they go to the book, for the caller who offers the
/// same items again: each item is answered new once.
pub(crate) struct Answer {
    items: Vec<String>,
    outcome: Option<Result<Vec<bool>, Error>>,
    book: Arc<Mutex<Book>>,
}

impl Answer {
    /// For each item, `true` if no process offered it before.
    pub(crate) fn take(mut self) -> Result<Vec<bool>, Error> {
        self.outcome
            .take()
            .expect("an answer is taken once, by its caller")
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(Ok(flags)) = self.outcome.take() {
            let mut book = lock(&self.book);
            for (item, new) in mem::take(&mut self.items).into_iter().zip(flags) {
                book.recover(item, new);
            }
        }
    }
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answer")
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

/// A seen-set's client: its calls share rounds through its group.
#[derive(Debug)]
pub(crate) struct SeenCore {
    pub(crate) client: Client,
    /// Only a round's server changes it, between its awaits.
    book: Arc<Mutex<Book>>,
    group: Group<Offer, Answer>,
}

impl SeenCore {
    /// The seen-set of `client`: a round takes offers of up to
    /// `max_buffered` items in all (and a larger one alone).
    pub(crate) fn new(client: Client) -> SeenCore {
        SeenCore {
            group: Group::new(client.config.max_buffered),
            client,
            book: Arc::default(),
        }
    }

    /// Offers `items` with the next round: `true` for each item no
    /// process offered before (see `FleetSeen::insert_many`). A round
    /// dropped before it answered offers them again.
    pub(crate) fn offer<'t, I: AsRef<str> + Sync>(
        &'t self,
        items: &'t [I],
    ) -> Ticket<'t, Offer, Answer> {
        self.client.count_offered(items.len() as u64);
        let owned = move || items.iter().map(|item| item.as_ref().to_string()).collect();
        let again = move || Retry::Ask(owned(), items.len());
        self.group.submit(owned(), items.len(), Box::new(again))
    }

    async fn insert(&self, wire: &mut Wire, offers: &[Offer]) -> Vec<Result<Vec<bool>, Error>> {
        let client = &self.client;
        let mut outcomes: Vec<Option<Result<Vec<bool>, Error>>> =
            (0..offers.len()).map(|_| None).collect();
        // Answers a failed round never got come first: a caller asking
        // again for the same items is answered from them. A batch that
        // fails again holds up only the offers of its items. (Batches a
        // dropped round left in flight are unresolved too.)
        let again = {
            let mut book = lock(&self.book);
            let left = mem::take(&mut wire.sending);
            book.unresolved.extend(left);
            mem::take(&mut book.unresolved)
        };
        if !again.is_empty() {
            wire.sending = again;
            let answers = client.offer(wire, false).await;
            if let Some(error) = self.sort_out(wire, answers) {
                let book = lock(&self.book);
                let waiting: HashSet<&str> = (book.unresolved.iter())
                    .flat_map(|batch| batch.items.iter().map(String::as_str))
                    .collect();
                for (offer, outcome) in offers.iter().zip(&mut outcomes) {
                    if offer.iter().any(|item| waiting.contains(item.as_str())) {
                        *outcome = Some(Err(error.clone()));
                    }
                }
            }
        }
        let local = client.local.as_ref();
        let mut answers: Vec<Vec<bool>> = offers
            .iter()
            .map(|items| vec![false; items.len()])
            .collect();
        let mut hashes: Vec<Vec<u64>> = (offers.iter())
            .map(|items| vec![0; if local.is_some() { items.len() } else { 0 }])
            .collect();
        let mut by_shard: Vec<Vec<(usize, usize)>> = vec![Vec::new(); client.keys.len()];
        // Answers from the book leave it only when an offer that got them
        // is answered: a round that fails on that offer's batches, or is
        // dropped, leaves them for the next (their items are in the local
        // filter already). A repeat, within an offer or across the
        // round's, is answered `false`.
        let mut from_book: HashSet<&str> = HashSet::new();
        let mut claims: Vec<Vec<(&str, bool)>> = vec![Vec::new(); offers.len()];
        {
            let book = lock(&self.book);
            for (offer, items) in offers.iter().enumerate() {
                if outcomes[offer].is_some() {
                    continue;
                }
                for (at, item) in items.iter().enumerate() {
                    if let Some(&answer) = book.recovered.get(item) {
                        let first = from_book.insert(item);
                        answers[offer][at] = first && answer;
                        if first {
                            claims[offer].push((item, answer));
                        }
                        continue;
                    }
                    if let Some(local) = local {
                        hashes[offer][at] = local.hash_item(item.as_str());
                        if local.contains_hash(hashes[offer][at]) {
                            client.count_answered_locally(1);
                            continue;
                        }
                    }
                    by_shard[client.shard_of(item)].push((offer, at));
                }
            }
        }
        let mut positions = Vec::new();
        for (shard, ats) in by_shard.iter().enumerate() {
            for chunk in ats.chunks(client.config.batch_size) {
                let id = wire.next_id();
                wire.sending.push(Batch {
                    shard,
                    id,
                    items: (chunk.iter())
                        .map(|&(offer, at)| offers[offer][at].clone())
                        .collect(),
                    first_seq: 0,
                });
                positions.push(chunk);
            }
        }
        if !wire.sending.is_empty() {
            let results = client.offer(wire, false).await;
            // A batch that failed fails every offer with an item in it.
            for (chunk, result) in positions.iter().zip(&results) {
                if let Err(error) = result {
                    for &(offer, _) in *chunk {
                        outcomes[offer].get_or_insert_with(|| Err(error.clone()));
                    }
                }
            }
            // The answers of offers that failed are kept for the caller who
            // asks again; the batches that failed are sent again first.
            let mut book = lock(&self.book);
            let sending = mem::take(&mut wire.sending);
            for ((batch, chunk), result) in sending.into_iter().zip(positions).zip(results) {
                let Ok(flags) = result else {
                    book.unresolved.push(batch);
                    continue;
                };
                for ((&(offer, at), item), new) in chunk.iter().zip(batch.items).zip(flags) {
                    if let Some(local) = local {
                        local.insert_hash(hashes[offer][at]);
                    }
                    match outcomes[offer] {
                        Some(_) => book.recover(item, new),
                        None => answers[offer][at] = new,
                    }
                }
            }
        }
        let mut book = lock(&self.book);
        (outcomes.into_iter().zip(answers).zip(claims))
            .map(|((outcome, answers), claims)| match outcome {
                Some(failed) => failed,
                None => {
                    // Only the answer claimed leaves: a caller that left
                    // meanwhile may have turned a `false` into a `true`
                    // (its answer, untaken), which waits for the next.
                    for (item, claimed) in claims {
                        if book.recovered.get(item) == Some(&claimed) {
                            book.recovered.remove(item);
                        }
                    }
                    Ok(answers)
                }
            })
            .collect()
    }

    /// Keeps the answers of the batches in flight that got one for the
    /// caller who offers their items again (one per item: new if any
    /// occurrence was), and the batches that failed to be sent again
    /// first; the first error, if any failed.
    fn sort_out(&self, wire: &mut Wire, outcomes: Vec<Result<Vec<bool>, Error>>) -> Option<Error> {
        let mut first_error = None;
        let mut book = lock(&self.book);
        for (batch, outcome) in wire.sending.drain(..).zip(outcomes) {
            match outcome {
                Ok(flags) => {
                    for (item, new) in batch.items.into_iter().zip(flags) {
                        if let Some(local) = &self.client.local {
                            local.insert(&item);
                        }
                        book.recover(item, new);
                    }
                }
                Err(error) => {
                    book.unresolved.push(batch);
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error
    }
}

impl Serve for SeenCore {
    type Request = Offer;
    type Answer = Answer;

    /// The combined call of a round: every offer's items, each offer
    /// answered on its own.
    fn serve<'a>(&'a self, wire: &'a mut Wire, offers: Vec<Offer>) -> Call<'a, Vec<Answer>> {
        Call::new(wire.port(), async move {
            let outcomes = self.insert(wire, &offers).await;
            (offers.into_iter().zip(outcomes))
                .map(|(items, outcome)| Answer {
                    items,
                    outcome: Some(outcome),
                    book: Arc::clone(&self.book),
                })
                .collect()
        })
    }
}

/// One offer through a round of its own, run to its end by the caller:
/// what the core's tests drive.
#[cfg(test)]
pub(crate) fn insert_many<'a, I: AsRef<str> + Sync>(
    core: &'a SeenCore,
    wire: &'a mut Wire,
    items: &'a [I],
) -> Call<'a, Result<Vec<bool>, Error>> {
    core.client.count_offered(items.len() as u64);
    let offer: Offer = items.iter().map(|item| item.as_ref().to_string()).collect();
    Call::new(wire.port(), async move {
        let outcomes = core.insert(wire, std::slice::from_ref(&offer)).await;
        outcomes.into_iter().next().expect("one offer, one outcome")
    })
}
