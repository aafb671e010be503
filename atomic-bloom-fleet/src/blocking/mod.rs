//! The blocking driver: [`FleetSeen`] and [`FleetFrontier`] run the core's
//! calls on a socket per node (`io.rs`); the calls that a client's threads
//! make at the same time share rounds on the wire (the core's group
//! commit: the thread whose turn it is runs the round for all of them, the
//! others park until their answer is in); a frontier's heartbeat runs on a
//! thread of its own, on connections of its own (`heartbeat.rs`, which the
//! tokio driver's frontiers run too).

mod heartbeat;
mod io;

use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Instant;

use crate::core::call::{Call, Step};
use crate::core::client::Client;
use crate::core::frontier::{Answer, FrontierCore, Push, Request};
use crate::core::group::{Serve, Ticket, Turn};
use crate::core::seen::SeenCore;
use crate::core::wire::Wire;
use crate::core::{fresh_seed, lock};
use crate::sync::{Arc, Mutex};
use crate::{Error, FleetConfig, Leased};

pub(crate) use heartbeat::HeartbeatThread;
pub(crate) use io::Connections;

/// Runs `call` to its end, answering its I/O on `io`.
fn drive<T>(io: &mut Connections, mut call: Call<'_, T>) -> T {
    loop {
        match call.step(Instant::now()) {
            Step::Done(value) => return value,
            Step::Io(request) => call.answer(io.perform(request)),
        }
    }
}

/// A client's wire and this driver's connections.
type Session = crate::core::wire::Session<Connections>;

impl Session {
    /// Runs the call `make` makes of the wire.
    fn run<'s, T>(&'s mut self, make: impl FnOnce(&'s mut Wire) -> Call<'s, T>) -> T {
        drive(&mut self.io, make(&mut self.wire))
    }
}

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Waits for `ticket`'s answer, parked while another thread's round is
/// under way, serving the rounds whose turn comes to it on `session` with
/// `core`'s combined call.
fn answer<S: Serve>(
    session: &Mutex<Session>,
    mut ticket: Ticket<'_, S::Request, S::Answer>,
    core: &S,
) -> S::Answer {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        let mut round = match ticket.poll_turn(&mut context) {
            Poll::Pending => {
                thread::park();
                continue;
            }
            Poll::Ready(Turn::Answered(answer)) => return answer,
            Poll::Ready(Turn::Serve(round)) => round,
        };
        let requests = round.take_requests();
        let answers = lock(session).run(|wire| core.serve(wire, requests));
        round.finish(answers);
    }
}

/// A seen-set shared by every process of a fleet: a local lock-free filter
/// in front of sharded Bloom filters on a Valkey or Redis server (or
/// cluster) with a Bloom module.
///
/// [`insert_many`](Self::insert_many) answers, for each item, whether the
/// fleet saw it for the first time: the local filter answers what this
/// process offered before, and the rest goes to the server in one pipeline
/// of batches. Share it between threads as `Arc<FleetSeen>`: the calls that
/// threads make at the same time share one round on its connections (one
/// pipeline per node), and each thread gets the answers to its own items.
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
/// use atomic_bloom_fleet::{FleetConfig, FleetSeen};
///
/// fn main() -> Result<(), atomic_bloom_fleet::Error> {
///     let seen = FleetSeen::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
///     let new = seen.insert_many(&["a", "b", "a"])?;
///     assert_eq!(new, [true, true, false]);
///     Ok(())
/// }
/// ```
pub struct FleetSeen {
    core: SeenCore,
    session: Mutex<Session>,
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
    /// [`Error::ModuleMissing`] when it has no `BF.*` commands,
    /// [`Error::FleetSettingsDiffer`] when the fleet's first client used
    /// other shards, capacity, rate or expansion.
    pub fn connect(config: &FleetConfig) -> Result<FleetSeen, Error> {
        let (client, wire) = Client::new(config, fresh_seed())?;
        let seen = FleetSeen {
            core: SeenCore::new(client),
            session: Mutex::new(Session::new(wire)),
        };
        lock(&seen.session).run(|wire| Call::new(wire.port(), seen.core.client.connect(wire)))?;
        Ok(seen)
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
    pub fn insert_many<I: AsRef<str> + Sync>(&self, items: &[I]) -> Result<Vec<bool>, Error> {
        answer(&self.session, self.core.offer(items), &self.core).take()
    }

    /// Offers one item: [`insert_many`](Self::insert_many) of one.
    ///
    /// # Errors
    ///
    /// As for `insert_many`.
    pub fn insert(&self, item: &str) -> Result<bool, Error> {
        Ok(self.insert_many(&[item])?[0])
    }
}

crate::accessors::client_accessors!(seen FleetSeen);

impl FleetFrontier {
    /// Asks `request` of the next round, and waits for its answer.
    fn ask(&self, request: Request) -> Answer {
        answer(&self.session, self.core.ask(request), &self.core)
    }
}

/// A crawler's to-visit queue shared by every process of a fleet, on a
/// Valkey or Redis server (or cluster) with a Bloom module: each URL is
/// handed out once across the fleet (up to the false-positive rates), and
/// any process takes what any other found.
///
/// [`push`](Self::push) drops a URL this process pushed before (its local
/// filter answers, no round trip) and buffers the rest; a batch leaves for
/// its shard when full or old, and a script on the server adds it to the
/// shard's filter and queues the URLs the filter did not hold.
/// [`pop`](Self::pop) takes URLs from every shard's queue, a batch at a
/// time, each under a lease; [`complete`](Self::complete) says a popped
/// URL is done (its links pushed), and ends its lease once the server has
/// answered those pushes; [`is_finished`](Self::is_finished) says when the
/// whole fleet is out of work. A thread of the frontier renews its leases
/// while it lives; the URLs of a process that dies go back on the queue
/// when their leases end. See [the crate docs](crate) for why the queues
/// live on the server, and for failures.
///
/// Share it between threads as `Arc<FleetFrontier>`.
///
/// # Consistency
///
/// Every URL pushed by any process is crawled (popped and completed) at
/// least once, up to the false-positive rates: a URL leaves the server
/// only when the process that popped it completes it after its links
/// reached the server. It is popped twice only when a process died or was
/// cut off from the server for longer than the
/// [`lease`](FleetConfig::lease) while it held the URL (a take is leased
/// whole, so a process that dies re-queues its unfinished takes whole,
/// finished pages among them), with one more exception: a batch that a
/// shard refused part way (its filter full and unable to grow) queues
/// again the URLs before the refused one that the filter already held
/// (a script sees the refusal as the whole reply's, so it cannot tell
/// them from the ones it added), and they may be crawled a second time.
/// A URL is poppable once the batch that carried it has been answered.
/// `is_finished` is true only when no live process holds, buffers, leases
/// or has queued a URL, read in a way that a change during the check makes
/// it false.
///
/// # Example
///
/// ```no_run
/// use atomic_bloom_fleet::{FleetConfig, FleetFrontier};
///
/// fn main() -> Result<(), atomic_bloom_fleet::Error> {
///     let frontier = FleetFrontier::connect(&FleetConfig::new("redis://127.0.0.1:6379/"))?;
///     frontier.push("https://example.com/".to_string())?;
///     frontier.flush()?;
///     if let Some(page) = frontier.pop()? {
///         assert_eq!(page.url(), "https://example.com/");
///         // fetch it, push its links ...
///         frontier.complete(page);
///     }
///     Ok(())
/// }
/// ```
pub struct FleetFrontier {
    core: Arc<FrontierCore>,
    session: Mutex<Session>,
    heartbeat: HeartbeatThread,
}

impl FleetFrontier {
    /// Connects to the fleet's server (or cluster), checks it has the
    /// module and that the fleet's stored settings match these, and starts
    /// the thread that renews this client's leases (on connections of its
    /// own, opened by its first beat: two per node in all).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFleetConfig`] for a setting out of range,
    /// [`Error::FleetTimesConflict`] for a `retry_for` longer than the
    /// `lease` leaves room for, or a `result_ttl` shorter than it,
    /// [`Error::ServerUnavailable`] when the server cannot be reached,
    /// [`Error::ModuleMissing`] when it has no `BF.*` commands,
    /// [`Error::FleetSettingsDiffer`] when the fleet's first client used
    /// other shards, capacity, rate or expansion.
    pub fn connect(config: &FleetConfig) -> Result<FleetFrontier, Error> {
        let (client, wire) = Client::new(config, fresh_seed())?;
        let core = Arc::new(FrontierCore::new(client));
        let session = Mutex::new(Session::new(wire));
        lock(&session).run(|wire| core.connect(wire))?;
        let heartbeat = HeartbeatThread::start(&core)?;
        Ok(FleetFrontier {
            core,
            session,
            heartbeat,
        })
    }

    /// Offers `url` to the fleet: `Ok(false)` if this process pushed it
    /// before (answered locally), `Ok(true)` if it is on its way to the
    /// server, which queues it for the fleet if no process pushed it before.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error) when this
    /// shard's buffer is full and cannot be sent: the URL was not taken;
    /// push it again later. The same error when the URL filled a batch that
    /// could not be sent: the URL is buffered, and pushing it again answers
    /// `Ok(false)`.
    pub fn push(&self, url: String) -> Result<bool, Error> {
        match self.core.push(url, Instant::now()) {
            Push::Answered(accepted) => Ok(accepted),
            Push::Slow(left) => self.ask(Request::Push(left)).pushed(),
        }
    }

    /// Sends every buffered batch now, and the completions they held back.
    ///
    /// # Errors
    ///
    /// As for [`push`](Self::push); the batches stay buffered.
    pub fn flush(&self) -> Result<(), Error> {
        self.ask(Request::Flush).flushed()
    }

    /// A URL to visit, leased to this process: taken from the fleet's
    /// queues (a batch at a time, after sending what this process
    /// buffered), or `None` when they are empty for now. Pass it to
    /// [`complete`](Self::complete) once its links are pushed.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error); a take whose
    /// answer was lost is finished by the next call, so no URL is lost.
    /// The error of the batches that cannot be sent, with nothing taken,
    /// once [`max_buffered`](FleetConfig::max_buffered) completions wait
    /// for them (their pages' links are in those batches).
    pub fn pop(&self) -> Result<Option<Leased>, Error> {
        match self.core.pop_buffered() {
            Some(page) => Ok(Some(page)),
            None => self.ask(Request::Pop).popped(),
        }
    }

    /// Says a popped URL is done: its links are pushed (the pushes have
    /// returned). A lease covers one take (the URLs a `pop` fetched from
    /// one shard at once) and ends on the server, with a later call of this
    /// client, once every URL of the take is completed and the server has
    /// answered every push made before. Until then it is renewed; if this
    /// process dies first, the take's URLs are crawled again by others.
    pub fn complete(&self, page: Leased) {
        self.core.complete(page);
    }

    /// Whether the whole fleet is out of work: no live process holds,
    /// buffers, leases or has queued a URL. Sends what this process
    /// buffered and its completions, and marks it idle on the server when
    /// it holds nothing. Leases of processes that died are put back on the
    /// queues here.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error).
    pub fn is_finished(&self) -> Result<bool, Error> {
        self.ask(Request::IsFinished).finished()
    }
}

impl Drop for FleetFrontier {
    /// Stops the heartbeat. What this client held and did not complete
    /// goes back to the fleet when its leases end.
    fn drop(&mut self) {
        self.heartbeat.stop(true);
    }
}

crate::accessors::client_accessors!(frontier FleetFrontier);
