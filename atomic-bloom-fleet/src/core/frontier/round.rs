//! A frontier's rounds: the calls that its tasks (or threads) make at the
//! same time share one round on the wire (see `group`). A round buffers
//! its pushes' URLs (marking the client busy, or sending a full shard,
//! first, once for all of them), sends what is due (every shard when any
//! of its calls flushes: a pop, a flush, a check) in one offer, ends what
//! rides on pipelines for its flushes, checks the fleet once for all its
//! checks, and takes from the queues once for all its pops: each call gets
//! its own answer.
//!
//! The steps keep the order the calls had alone (pushes, then sends,
//! completions, the check, the take), and nothing a round does after its
//! take awaits: the URLs taken are in the buffer before the round could be
//! dropped.

use std::collections::BTreeSet;
use std::sync::PoisonError;

use crate::core::call::Call;
use crate::core::group::{Again, Retry, Serve, Ticket};
use crate::core::lock;
use crate::core::wire::{TakenUrl, Wire};
use crate::sync::{Arc, RwLock};
use crate::Error;

use super::{first_error, Buffered, FrontierCore, Leased, PushLeft, State, Unsent};

/// What a caller asks of a frontier's round.
#[derive(Debug)]
pub(crate) enum Request {
    /// The rest of a push (see [`PushLeft`]).
    Push(PushLeft),
    /// A URL to visit.
    Pop,
    /// Send what is buffered, and what rides on pipelines.
    Flush,
    /// Whether the whole fleet is out of work.
    IsFinished,
}

/// A round's answer to one request, of the request's kind.
#[derive(Debug)]
pub(crate) enum Answer {
    Pushed(Result<bool, Error>),
    /// A push whose URL was not taken: the error, and the URL held until
    /// the caller takes the error. Dropped untaken (its caller left, or
    /// its round was dropped and the push told its URL is on its way), it
    /// buffers the URL, as a dropped push does.
    Refused(Error, PushLeft),
    Popped(Result<Option<Leased>, Error>),
    Flushed(Result<(), Error>),
    Finished(Result<bool, Error>),
}

impl Answer {
    pub(crate) fn pushed(self) -> Result<bool, Error> {
        match self {
            Answer::Pushed(answer) => answer,
            Answer::Refused(error, mut left) => {
                // Taken by its caller, who pushes the URL again.
                left.url = None;
                Err(error)
            }
            other => unreachable!("a push answered {other:?}"),
        }
    }

    pub(crate) fn popped(self) -> Result<Option<Leased>, Error> {
        match self {
            Answer::Popped(answer) => answer,
            other => unreachable!("a pop answered {other:?}"),
        }
    }

    pub(crate) fn flushed(self) -> Result<(), Error> {
        match self {
            Answer::Flushed(answer) => answer,
            other => unreachable!("a flush answered {other:?}"),
        }
    }

    pub(crate) fn finished(self) -> Result<bool, Error> {
        match self {
            Answer::Finished(answer) => answer,
            other => unreachable!("a check answered {other:?}"),
        }
    }
}

/// Marks a check's idling over when dropped: a check dropped mid-way (its
/// round dropped) leaves the mark unsure, for the next round to send
/// again.
struct Idling<'a> {
    state: &'a RwLock<State>,
    /// Whether the idle mark reached the server.
    idle: Option<bool>,
}

impl Drop for Idling<'_> {
    fn drop(&mut self) {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        state.idling = false;
        match self.idle {
            Some(true) => {
                state.busy = false;
                state.unsure = false;
            }
            Some(false) => {}
            None => state.unsure = true,
        }
    }
}

impl FrontierCore {
    /// Asks `request` of the next round. A round dropped before it
    /// answered asks again, but for a push, whose URL the dropped round
    /// buffered: it is on its way.
    pub(crate) fn ask(&self, request: Request) -> Ticket<'_, Request, Answer> {
        let again: Again<'_, Request, Answer> = match request {
            Request::Push(_) => Box::new(|| Retry::Answer(Answer::Pushed(Ok(true)))),
            Request::Pop => Box::new(|| Retry::Ask(Request::Pop, 1)),
            Request::Flush => Box::new(|| Retry::Ask(Request::Flush, 1)),
            Request::IsFinished => Box::new(|| Retry::Ask(Request::IsFinished, 1)),
        };
        self.group.submit(request, 1, again)
    }

    async fn round(self: &Arc<Self>, wire: &mut Wire, requests: Vec<Request>) -> Vec<Answer> {
        let mut answers: Vec<Option<Answer>> = (0..requests.len()).map(|_| None).collect();
        let mut pushes = Vec::new();
        let (mut pops, mut flushes, mut checks) = (Vec::new(), Vec::new(), Vec::new());
        for (at, request) in requests.into_iter().enumerate() {
            match request {
                Request::Push(left) => pushes.push((at, left)),
                Request::Pop => pops.push(at),
                Request::Flush => flushes.push(at),
                Request::IsFinished => checks.push(at),
            }
        }
        // Pushes answered by their shard's send: (request, shard).
        let mut waiting = Vec::new();
        self.buffer_pushes(wire, &mut pushes, &mut answers, &mut waiting)
            .await;
        let flushing = !(pops.is_empty() && flushes.is_empty() && checks.is_empty());
        let shards: Vec<usize> = if flushing {
            (0..self.outboxes.len()).collect()
        } else {
            let due: BTreeSet<usize> = waiting.iter().map(|&(_, shard)| shard).collect();
            due.into_iter().collect()
        };
        let unsent = match shards.is_empty() {
            true => Unsent::new(),
            false => self.send(wire, &shards).await,
        };
        for (at, shard) in waiting {
            let pushed = unsent
                .get(&shard)
                .map_or(Ok(true), |error| Err(error.clone()));
            answers[at] = Some(Answer::Pushed(pushed));
        }
        let flushed = first_error(unsent);
        if !flushes.is_empty() {
            let outcome = self.flush_rest(wire, flushed.clone()).await;
            for at in flushes {
                answers[at] = Some(Answer::Flushed(outcome.clone()));
            }
        }
        if !checks.is_empty() {
            let outcome = match &flushed {
                Ok(()) => self.check(wire).await,
                Err(error) => Err(error.clone()),
            };
            for at in checks {
                answers[at] = Some(Answer::Finished(outcome.clone()));
            }
        }
        if !pops.is_empty() {
            let (urls, otherwise) = self.take_for(wire, pops.len(), &flushed).await;
            lock(&self.taken).buffer.extend(urls);
            for at in pops {
                let popped = match self.pop_taken(Vec::new()) {
                    Some(page) => Ok(Some(page)),
                    None => otherwise.clone().map(|()| None),
                };
                answers[at] = Some(Answer::Popped(popped));
            }
        }
        (answers.into_iter())
            .map(|answer| answer.expect("a round answers every request"))
            .collect()
    }

    /// Buffers the URLs of `pushes`, marking the client busy first, or
    /// sending the shards that are full, once for all of them; answers the
    /// pushes that are done, and lists in `waiting` those whose shard is
    /// due to send. A push whose mark or room cannot be had is answered
    /// the error, its URL not taken (its caller pushes it again; a caller
    /// that left, or a round dropped, leaves it buffered: see
    /// [`Answer::Refused`]).
    async fn buffer_pushes(
        &self,
        wire: &mut Wire,
        pushes: &mut [(usize, PushLeft)],
        answers: &mut [Option<Answer>],
        waiting: &mut Vec<(usize, usize)>,
    ) {
        loop {
            let mut not_ready = false;
            let mut full = BTreeSet::new();
            for (at, left) in pushes.iter_mut() {
                if let Some(shard) = left.due.take() {
                    waiting.push((*at, shard));
                }
                let Some((url, hash)) = left.url.take() else {
                    continue;
                };
                match self.buffer(url, hash, wire.now()) {
                    Buffered::Seen => answers[*at] = Some(Answer::Pushed(Ok(false))),
                    Buffered::Queued { due: None } => answers[*at] = Some(Answer::Pushed(Ok(true))),
                    Buffered::Queued { due: Some(shard) } => waiting.push((*at, shard)),
                    Buffered::NotReady(url) => {
                        left.url = Some((url, hash));
                        not_ready = true;
                    }
                    Buffered::Full(url, shard) => {
                        left.url = Some((url, hash));
                        full.insert(shard);
                    }
                }
            }
            let failed: Unsent = if not_ready {
                match self.busy(wire).await {
                    Ok(()) => continue,
                    Err(error) => (0..self.outboxes.len())
                        .map(|shard| (shard, error.clone()))
                        .collect(),
                }
            } else if !full.is_empty() {
                let full: Vec<usize> = full.into_iter().collect();
                self.send(wire, &full).await
            } else {
                return;
            };
            for (at, left) in pushes.iter_mut() {
                let Some((url, _)) = &left.url else {
                    continue;
                };
                if let Some(error) = failed.get(&self.client.shard_of(url)) {
                    let refused = PushLeft {
                        core: Arc::clone(&left.core),
                        url: left.url.take(),
                        due: None,
                    };
                    answers[*at] = Some(Answer::Refused(error.clone(), refused));
                }
            }
        }
    }

    /// What a flush does after the round's send: sends what waits to ride
    /// on a pipeline (completions, give-backs) even when no batch went.
    async fn flush_rest(&self, wire: &mut Wire, flushed: Result<(), Error>) -> Result<(), Error> {
        self.queue_completions(wire);
        self.busy_if(wire, wire.carries_anything()).await?;
        self.client.send_piggyback(wire).await;
        flushed
    }

    /// URLs for `pops` pops beyond what the buffer holds, taken from the
    /// fleet's queues (what was buffered sent first: `flushed`), and what
    /// a pop that gets none answers.
    async fn take_for(
        &self,
        wire: &mut Wire,
        pops: usize,
        flushed: &Result<(), Error>,
    ) -> (Vec<TakenUrl>, Result<(), Error>) {
        let nothing = |outcome| (Vec::new(), outcome);
        let buffered = lock(&self.taken).buffer.len();
        if buffered >= pops {
            return nothing(flushed.clone());
        }
        let client = &self.client;
        // Completions held back by batches that cannot be sent pile up
        // with every page crawled: past `max_buffered` of them, no more
        // work is taken until the batches go, so this client's maps stay
        // bounded.
        if let Err(error) = flushed {
            if self.done.len() >= client.config.max_buffered {
                return nothing(Err(error.clone()));
            }
        }
        // An idle client goes busy only for a queue that has something: an
        // idle fleet polling its empty queues changes nothing a check of
        // the fleet reads. A node that is down hides only its own shards.
        if !self.state().busy {
            match client.queued(wire).await {
                (0, Some(error)) => return nothing(Err(error)),
                (0, None) => return nothing(flushed.clone()),
                (_, _) => {}
            }
        }
        if let Err(error) = self.busy(wire).await {
            return nothing(Err(error));
        }
        let count = client.config.pop_batch.max(pops - buffered);
        match client.take(wire, count).await {
            Ok(urls) => (urls, flushed.clone()),
            Err(error) => nothing(Err(error)),
        }
    }

    /// Whether the whole fleet is out of work (see `is_finished`'s docs),
    /// after the round sent what was buffered.
    async fn check(&self, wire: &mut Wire) -> Result<bool, Error> {
        let client = &self.client;
        let idling = {
            let mut state = self.state_mut();
            if state.busy || state.unsure {
                if self.holds_work(wire) {
                    return Ok(false);
                }
                // Pushes now wait for the next round.
                state.idling = true;
                Some(Idling {
                    state: &self.state,
                    idle: None,
                })
            } else {
                None
            }
        };
        if let Some(mut idling) = idling {
            // The census's pipeline ends leases: with a live mark.
            self.busy_if(wire, wire.carries_anything()).await?;
            if client.holds_leases() {
                // Completions still to send: the census's pipeline carries
                // them, and the next check goes idle.
                client.census(wire).await?;
                if client.holds_leases() {
                    idling.idle = Some(false);
                    return Ok(false);
                }
            }
            client.set_busy(wire, false).await?;
            idling.idle = Some(true);
        }
        let (epoch, busy) = client.census(wire).await?;
        if busy > 0 || client.pending(wire).await? > 0 {
            return Ok(false);
        }
        let unchanged = client.census(wire).await?.0 == epoch;
        // A push dropped while it waited for this round buffered its URL
        // without it: not finished, and the next round marks the client
        // busy and sends it.
        Ok(unchanged && !self.holds_work(wire))
    }
}

impl Serve for Arc<FrontierCore> {
    type Request = Request;
    type Answer = Answer;

    /// The combined call of a round: each request's answer, in order.
    fn serve<'a>(&'a self, wire: &'a mut Wire, requests: Vec<Request>) -> Call<'a, Vec<Answer>> {
        Call::new(wire.port(), self.round(wire, requests))
    }
}

/// One request through a round of its own, run to its end by the caller:
/// what the core's tests drive.
#[cfg(test)]
impl FrontierCore {
    pub(crate) fn push_slow<'a>(
        self: &'a Arc<Self>,
        wire: &'a mut Wire,
        left: PushLeft,
    ) -> Call<'a, Result<bool, Error>> {
        self.alone(wire, Request::Push(left), Answer::pushed)
    }

    pub(crate) fn flush<'a>(
        self: &'a Arc<Self>,
        wire: &'a mut Wire,
    ) -> Call<'a, Result<(), Error>> {
        self.alone(wire, Request::Flush, Answer::flushed)
    }

    pub(crate) fn pop<'a>(
        self: &'a Arc<Self>,
        wire: &'a mut Wire,
    ) -> Call<'a, Result<Option<Leased>, Error>> {
        self.alone(wire, Request::Pop, Answer::popped)
    }

    pub(crate) fn is_finished<'a>(
        self: &'a Arc<Self>,
        wire: &'a mut Wire,
    ) -> Call<'a, Result<bool, Error>> {
        self.alone(wire, Request::IsFinished, Answer::finished)
    }

    fn alone<'a, T: 'a>(
        self: &'a Arc<Self>,
        wire: &'a mut Wire,
        request: Request,
        answer: fn(Answer) -> T,
    ) -> Call<'a, T> {
        Call::new(wire.port(), async move {
            let answers = self.round(wire, vec![request]).await;
            answer(answers.into_iter().next().expect("one request, one answer"))
        })
    }
}
