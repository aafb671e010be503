//! Group commit: calls that the tasks (or threads) of one client make at
//! the same time share one round on the wire instead of taking turns.
//!
//! A call submits its request and gets a [`Ticket`]. While no round is
//! under way, the first ticket to look becomes the server: it takes the
//! queued requests (its own among them, oldest first, up to the group's
//! limit: a round closes at a size), runs one combined call for all of
//! them through the wire (one pipeline per node per round trip), and hands
//! each ticket its own answer ([`Round::finish`]). Requests that arrive
//! meanwhile wait for the next round, which closes when the one in flight
//! returns: a client has at most one round, so one pipeline per node, in
//! flight on its connections, and each round carries everything that
//! gathered while the last one travelled.
//!
//! What a caller that leaves (a cancelled future) leaves behind:
//! - a request still queued is withdrawn: dropped, never sent (a push's
//!   request buffers its URL as it drops);
//! - a request in a round under way is sent with the round, and its answer
//!   is dropped when it comes (a seen-set's answers go to its book for the
//!   caller who asks again, a popped URL goes back to the queue);
//! - a server that leaves drops its round: every ticket of it asks again
//!   (or takes the answer its [`Again`] gives: a push's URL was buffered as
//!   the round dropped it), and what the dropped combined call had begun
//!   stays with the wire, as for any dropped call; the oldest waiting
//!   ticket serves next.
//!
//! Nothing here does I/O or blocks: a ticket is polled with a
//! [`Context`] and wakes its waker when its turn comes, so the tokio
//! driver awaits it and the blocking driver parks its thread on it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::mem;
use std::task::{Context, Poll, Waker};

use super::call::Call;
use super::lock;
use super::wire::Wire;
use crate::sync::Mutex;

/// What runs a group's rounds: the combined call of a round's requests,
/// answering each, in order.
pub(crate) trait Serve {
    type Request;
    type Answer;

    fn serve<'a>(
        &'a self,
        wire: &'a mut Wire,
        requests: Vec<Self::Request>,
    ) -> Call<'a, Vec<Self::Answer>>;
}

/// Requests that share rounds, and their answers.
pub(crate) struct Group<R, A> {
    state: Mutex<State<R, A>>,
    /// The most one round takes, in the requests' weights (a first
    /// request heavier than this goes alone).
    limit: usize,
}

impl<R, A> fmt::Debug for Group<R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Group")
            .field("queued", &state.queue.len())
            .field("serving", &state.serving)
            .field("limit", &self.limit)
            .finish()
    }
}

/// A queued request.
struct Entry<R> {
    ticket: u64,
    weight: usize,
    request: R,
}

/// Where a ticket stands.
enum Slot<A> {
    /// Waiting for a round to take it; woken when no round is under way.
    Queued(Option<Waker>),
    /// In the round under way; woken when it ends.
    Serving(Option<Waker>),
    /// Its answer, for the caller to take.
    Answered(A),
    /// Its round was dropped before it answered: ask again.
    Interrupted,
}

impl<A> Slot<A> {
    fn waker(&mut self) -> Option<&mut Option<Waker>> {
        match self {
            Slot::Queued(waker) | Slot::Serving(waker) => Some(waker),
            Slot::Answered(_) | Slot::Interrupted => None,
        }
    }
}

struct State<R, A> {
    next_ticket: u64,
    queue: VecDeque<Entry<R>>,
    slots: HashMap<u64, Slot<A>>,
    /// A round is under way.
    serving: bool,
}

impl<R, A> State<R, A> {
    /// The wakers of every queued ticket: once no round is under way, the
    /// first of them to look serves.
    fn queued_wakers(&mut self) -> Vec<Waker> {
        let slots = &mut self.slots;
        (self.queue.iter())
            .filter_map(|entry| match slots.get_mut(&entry.ticket) {
                Some(Slot::Queued(waker)) => waker.take(),
                _ => None,
            })
            .collect()
    }
}

/// What a ticket's turn brings.
pub(crate) enum Turn<'g, R, A> {
    /// Its answer.
    Answered(A),
    /// Its caller serves this round: run the combined call for the
    /// round's requests, then [`Round::finish`].
    Serve(Round<'g, R, A>),
}

impl<R, A> fmt::Debug for Turn<'_, R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Turn::Answered(_) => f.write_str("Answered"),
            Turn::Serve(round) => write!(f, "Serve({} requests)", round.tickets.len()),
        }
    }
}

/// What a ticket whose round was dropped does (see [`Again`]).
pub(crate) enum Retry<R, A> {
    /// Asks again with this request, of this weight.
    Ask(R, usize),
    /// Takes this answer.
    Answer(A),
}

/// What a ticket whose round was dropped does, asked when it finds out.
pub(crate) type Again<'t, R, A> = Box<dyn FnMut() -> Retry<R, A> + Send + 't>;

impl<R, A> Group<R, A> {
    /// A group whose rounds take up to `limit` of the requests' weights.
    pub(crate) fn new(limit: usize) -> Group<R, A> {
        Group {
            state: Mutex::new(State {
                next_ticket: 0,
                queue: VecDeque::new(),
                slots: HashMap::new(),
                serving: false,
            }),
            limit: limit.max(1),
        }
    }

    /// Queues `request` (of `weight`, in the limit's units) for the next
    /// round; `again` says what to do if that round is dropped.
    pub(crate) fn submit<'t>(
        &'t self,
        request: R,
        weight: usize,
        again: Again<'t, R, A>,
    ) -> Ticket<'t, R, A> {
        let mut state = lock(&self.state);
        state.next_ticket += 1;
        let ticket = state.next_ticket;
        state.queue.push_back(Entry {
            ticket,
            weight,
            request,
        });
        state.slots.insert(ticket, Slot::Queued(None));
        Ticket {
            group: self,
            ticket,
            again,
        }
    }
}

/// A submitted request, until its caller has its answer. Dropped before,
/// it withdraws the request if no round took it yet, and otherwise drops
/// the answer when it comes (see the module's docs).
pub(crate) struct Ticket<'g, R, A> {
    group: &'g Group<R, A>,
    ticket: u64,
    again: Again<'g, R, A>,
}

impl<R, A> fmt::Debug for Ticket<'_, R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("ticket", &self.ticket)
            .finish()
    }
}

impl<'g, R, A> Ticket<'g, R, A> {
    /// Its turn: its answer, or the round it serves; pending (waking
    /// `context`'s waker later) while another round is under way. A
    /// ticket whose round was dropped asks again first (see [`Again`]). A
    /// ticket that was answered is spent.
    pub(crate) fn poll_turn(&mut self, context: &mut Context<'_>) -> Poll<Turn<'g, R, A>> {
        let group = self.group;
        let mut guard = lock(&group.state);
        if let Some(Slot::Interrupted) = guard.slots.get(&self.ticket) {
            guard.slots.remove(&self.ticket);
            drop(guard);
            let (request, weight) = match (self.again)() {
                Retry::Ask(request, weight) => (request, weight),
                Retry::Answer(answer) => return Poll::Ready(Turn::Answered(answer)),
            };
            guard = lock(&group.state);
            guard.queue.push_back(Entry {
                ticket: self.ticket,
                weight,
                request,
            });
            guard.slots.insert(self.ticket, Slot::Queued(None));
        }
        let state = &mut *guard;
        let slot = state
            .slots
            .get_mut(&self.ticket)
            .expect("a ticket is polled until its turn, not after");
        match slot {
            Slot::Answered(_) => {
                let Some(Slot::Answered(answer)) = state.slots.remove(&self.ticket) else {
                    unreachable!("matched above");
                };
                return Poll::Ready(Turn::Answered(answer));
            }
            Slot::Interrupted => unreachable!("asked again above"),
            Slot::Serving(waker) => {
                *waker = Some(context.waker().clone());
                return Poll::Pending;
            }
            Slot::Queued(waker) if state.serving => {
                *waker = Some(context.waker().clone());
                return Poll::Pending;
            }
            Slot::Queued(_) => {}
        }
        // No round under way: this caller serves the oldest requests, up
        // to the limit.
        state.serving = true;
        let mut tickets = Vec::new();
        let mut requests = Vec::new();
        let mut weight = 0;
        while let Some(entry) = state.queue.front() {
            if !tickets.is_empty() && weight + entry.weight > group.limit {
                break;
            }
            let entry = state.queue.pop_front().expect("looked at");
            weight += entry.weight;
            if let Some(slot) = state.slots.get_mut(&entry.ticket) {
                let waker = slot.waker().and_then(Option::take);
                *slot = Slot::Serving(waker);
            }
            tickets.push(entry.ticket);
            requests.push(entry.request);
        }
        Poll::Ready(Turn::Serve(Round {
            group,
            tickets,
            requests,
            finished: false,
        }))
    }
}

impl<R, A> Drop for Ticket<'_, R, A> {
    fn drop(&mut self) {
        let mut state = lock(&self.group.state);
        let mut withdrawn = None;
        let mut answer = None;
        match state.slots.remove(&self.ticket) {
            Some(Slot::Queued(_)) => {
                let at = (state.queue.iter()).position(|entry| entry.ticket == self.ticket);
                withdrawn = at.and_then(|at| state.queue.remove(at));
            }
            Some(Slot::Answered(left)) => answer = Some(left),
            // A round under way finds no slot and drops the answer.
            Some(Slot::Serving(_) | Slot::Interrupted) | None => {}
        }
        // A ticket woken to serve that leaves passes the turn on.
        let wake = if state.serving {
            Vec::new()
        } else {
            state.queued_wakers()
        };
        drop(state);
        // Dropped outside the lock: a request or an answer may do work of
        // its own as it drops (buffer a URL, give one back).
        drop(withdrawn);
        drop(answer);
        wake.into_iter().for_each(Waker::wake);
    }
}

/// The requests one server runs together, until it finishes them.
pub(crate) struct Round<'g, R, A> {
    group: &'g Group<R, A>,
    tickets: Vec<u64>,
    requests: Vec<R>,
    finished: bool,
}

impl<R, A> Round<'_, R, A> {
    /// The round's requests, oldest first, for the combined call.
    pub(crate) fn take_requests(&mut self) -> Vec<R> {
        mem::take(&mut self.requests)
    }

    /// Hands each ticket its answer (`answers` in the order of
    /// [`take_requests`](Self::take_requests)); the answers of tickets
    /// dropped meanwhile are dropped, before the next round may start: what
    /// they leave behind as they drop (a URL buffered) is in place for it.
    pub(crate) fn finish(mut self, answers: Vec<A>) {
        assert_eq!(answers.len(), self.tickets.len(), "an answer per request");
        self.finished = true;
        let mut state = lock(&self.group.state);
        let mut wake = Vec::new();
        let mut unclaimed = Vec::new();
        for (&ticket, answer) in self.tickets.iter().zip(answers) {
            match state.slots.get_mut(&ticket) {
                Some(slot) => {
                    wake.extend(slot.waker().and_then(Option::take));
                    *slot = Slot::Answered(answer);
                }
                None => unclaimed.push(answer),
            }
        }
        // Dropped outside the lock (an answer may do work of its own as it
        // drops), while this round is still under way.
        if !unclaimed.is_empty() {
            drop(state);
            drop(unclaimed);
            state = lock(&self.group.state);
        }
        state.serving = false;
        wake.extend(state.queued_wakers());
        drop(state);
        wake.into_iter().for_each(Waker::wake);
    }
}

impl<R, A> Drop for Round<'_, R, A> {
    /// A round dropped unfinished (its server cancelled, or its runtime
    /// unusable): its tickets ask again, and the next round may start.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Requests never taken drop first (a push's buffers its URL), while
        // this round is still under way.
        drop(mem::take(&mut self.requests));
        let mut state = lock(&self.group.state);
        let mut wake = Vec::new();
        for ticket in &self.tickets {
            if let Some(slot) = state.slots.get_mut(ticket) {
                wake.extend(slot.waker().and_then(Option::take));
                *slot = Slot::Interrupted;
            }
        }
        state.serving = false;
        wake.extend(state.queued_wakers());
        drop(state);
        wake.into_iter().for_each(Waker::wake);
    }
}

impl<R, A> fmt::Debug for Round<'_, R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Round")
            .field("tickets", &self.tickets)
            .finish_non_exhaustive()
    }
}
