//! What a client's calls hold while they run: the wire (the nodes, what
//! rides on the next pipeline, the ids, what is in flight) and the items,
//! URLs and messages it carries.

use std::time::Instant;

use redis::Cmd;

use super::link::Link;
use super::Rng;

/// Items for one shard, under an id that stays theirs until the server's
/// answer is in.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) shard: usize,
    pub(crate) id: u64,
    pub(crate) items: Vec<String>,
    /// The push sequence number of the first item (0 where unused).
    pub(crate) first_seq: u64,
}

/// A command for one shard, with the key its errors name.
pub(crate) type ShardCommand = (usize, String, Cmd);

/// A URL taken from the fleet: the shard and lease token it came under.
#[derive(Debug)]
pub(crate) struct TakenUrl {
    pub(crate) shard: usize,
    pub(crate) token: String,
    pub(crate) url: String,
}

/// Something the server must hear that needs no answer, carried in front
/// of the next pipeline and kept until one succeeds.
#[derive(Debug)]
pub(crate) enum Piggyback {
    /// A batch's answer is in: delete its result key.
    Acknowledge { shard: usize, key: String },
    /// Every URL of a lease is done: end it.
    Complete { shard: usize, token: String },
    /// A URL of a lease was dropped without being completed: give it back
    /// to the queue (the lease ends once its other URLs are done).
    Release {
        shard: usize,
        token: String,
        url: String,
    },
}

/// What one round at a time uses (its server holds it for the whole
/// round, see `group`): the nodes, what rides on the next pipeline, the
/// next id, a take whose answer has not come back, and the batches in
/// flight.
#[derive(Debug)]
pub(crate) struct Wire {
    pub(crate) link: Link,
    pub(crate) piggyback: Vec<Piggyback>,
    next_id: u64,
    /// The take commands and their lease tokens: set before they are sent,
    /// so that a call dropped mid-way (a cancelled future) leaves them to
    /// the next take, which sends them again.
    pub(crate) unfinished_take: Option<Vec<(ShardCommand, String)>>,
    /// The pauses' jitter.
    pub(crate) rng: Rng,
    /// The batches of the offer in flight: left here by a call dropped
    /// mid-way, for the next call to take back (a batch keeps its id until
    /// its answer is in).
    pub(crate) sending: Vec<Batch>,
}

/// A client's wire and its driver's connections, used by one round at a
/// time (by the ticket that serves it, see `group`).
#[derive(Debug)]
pub(crate) struct Session<C> {
    pub(crate) wire: Wire,
    pub(crate) io: C,
}

impl<C: Default> Session<C> {
    pub(crate) fn new(wire: Wire) -> Session<C> {
        Session {
            wire,
            io: C::default(),
        }
    }
}

impl Wire {
    /// A wire on `link`, its pauses jittered by `rng`.
    pub(crate) fn new(link: Link, rng: Rng) -> Wire {
        Wire {
            link,
            piggyback: Vec::new(),
            next_id: 0,
            unfinished_take: None,
            rng,
            sending: Vec::new(),
        }
    }

    /// The port this wire's calls ask for I/O through.
    pub(crate) fn port(&self) -> crate::sync::Arc<super::call::Port> {
        crate::sync::Arc::clone(&self.link.port)
    }

    /// The time the driver gave at this step.
    pub(crate) fn now(&self) -> Instant {
        self.link.port.now()
    }

    /// Whether a take's answer was lost: its URLs wait on the server under
    /// their leases until the next take collects them (or the leases end).
    pub(crate) fn has_unfinished_take(&self) -> bool {
        self.unfinished_take.is_some()
    }

    /// Whether something waits to ride on the next pipeline.
    pub(crate) fn carries_anything(&self) -> bool {
        !self.piggyback.is_empty()
    }

    /// A fresh id for a batch or a take.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}
