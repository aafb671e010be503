//! The tokio driver (feature `tokio`): [`FleetSeen`] and [`FleetFrontier`]
//! with the blocking ones' methods, async. They run the same protocol core
//! (no decision of the protocol is made here): the calls that a client's
//! tasks make at the same time share rounds on the wire (the core's
//! group commit: the task whose turn it is runs the round for all of
//! them, each pipeline of it on a task of its own, and each task gets its
//! own answer), and a frontier's heartbeat runs on a thread of its own
//! (the blocking driver's), on connections of its own, so that its leases
//! are renewed whatever becomes of the runtime that connected it. A
//! blocking and an async client of one fleet work together.
//!
//! Every method is cancel-safe: a call dropped mid-way (a `select!`, a
//! timeout), or before its round, leaves what it had begun to the next
//! round, and nothing half-done to the tasks whose calls shared its round:
//! a pushed URL is buffered, a batch is sent again with its id, a take
//! with its tokens, a busy or idle mark is sent again, a seen-set's
//! answers are kept for the caller who offers the same items again, a
//! popped URL goes back to the queue, and a completion counts from the
//! call to `complete`. The other calls of a round dropped by the task
//! running it are made again by their own tasks.
//!
//! Calls must be awaited inside a tokio runtime with its I/O and time
//! drivers (`enable_all`); elsewhere each call answers
//! [`Error::RuntimeUnusable`] at once, and leaves what it began to the
//! next. A client may move between runtimes.

mod io;

use std::future::{poll_fn, Future};
use std::time::Instant;

use ::tokio::sync::Mutex;

use crate::blocking::HeartbeatThread;
use crate::core::call::{Call, Step};
use crate::core::client::Client;
use crate::core::fresh_seed;
use crate::core::frontier::{Answer, FrontierCore, Push, Request};
use crate::core::group::{Serve, Ticket, Turn};
use crate::core::seen::SeenCore;
use crate::core::wire::Wire;
use crate::sync::Arc;
use crate::{Error, FleetConfig, Leased};

use io::Connections;

/// Runs `call` to its end, answering its I/O on `io`; where this runtime
/// cannot do the I/O, drops it (as a cancelled future is dropped: what it
/// began stays with the wire) and answers why.
async fn drive<T>(io: &mut Connections, mut call: Call<'_, T>) -> Result<T, Error> {
    io::runtime_can_run()?;
    loop {
        let request = match call.step(Instant::now()) {
            Step::Done(value) => return Ok(value),
            Step::Io(request) => request,
        };
        call.answer(io.perform(request).await?);
    }
}

/// A client's wire and this driver's connections.
type Session = crate::core::wire::Session<Connections>;

impl Session {
    /// Runs the call `make` makes of the wire.
    async fn run<'s, T>(
        &'s mut self,
        make: impl FnOnce(&'s mut Wire) -> Call<'s, T>,
    ) -> Result<T, Error> {
        drive(&mut self.io, make(&mut self.wire)).await
    }
}

/// Waits for `ticket`'s answer, serving the rounds whose turn comes to it
/// on `session` with `core`'s combined call. A round this runtime
/// cannot run is dropped (its other calls ask again) and answers why.
async fn answer<S: Serve>(
    session: &Mutex<Session>,
    mut ticket: Ticket<'_, S::Request, S::Answer>,
    core: &S,
) -> Result<S::Answer, Error> {
    loop {
        let mut round = match poll_fn(|context| ticket.poll_turn(context)).await {
            Turn::Answered(answer) => return Ok(answer),
            Turn::Serve(round) => round,
        };
        let requests = round.take_requests();
        let answers = session
            .lock()
            .await
            .run(|wire| core.serve(wire, requests))
            .await?;
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
/// of batches. Share it between tasks as `Arc<FleetSeen>`: the calls that
/// tasks make at the same time share one round on its connections (one
/// pipeline per node), and each task gets the answers to its own items.
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
/// use atomic_bloom_fleet::tokio::FleetSeen;
/// use atomic_bloom_fleet::FleetConfig;
///
/// #[tokio::main]
/// async fn main() -> Result<(), atomic_bloom_fleet::Error> {
///     let seen = FleetSeen::connect(&FleetConfig::new("redis://127.0.0.1:6379/")).await?;
///     let new = seen.insert_many(&["a", "b", "a"]).await?;
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
    /// other shards, capacity, rate or expansion,
    /// [`Error::RuntimeUnusable`] outside a tokio runtime with its I/O and
    /// time drivers.
    pub async fn connect(config: &FleetConfig) -> Result<FleetSeen, Error> {
        io::runtime_can_run()?;
        let (client, wire) = Client::new(config, fresh_seed())?;
        let seen = FleetSeen {
            core: SeenCore::new(client),
            session: Mutex::new(Session::new(wire)),
        };
        let connected = seen
            .session
            .lock()
            .await
            .run(|wire| Call::new(wire.port(), seen.core.client.connect(wire)))
            .await?;
        connected.map(|()| seen)
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
    /// go on. [`Error::RuntimeUnusable`] where tokio cannot do the I/O.
    pub async fn insert_many<I: AsRef<str> + Sync>(&self, items: &[I]) -> Result<Vec<bool>, Error> {
        io::runtime_can_run()?;
        let ticket = self.core.offer(items);
        answer(&self.session, ticket, &self.core).await?.take()
    }

    /// Offers one item: [`insert_many`](Self::insert_many) of one.
    ///
    /// # Errors
    ///
    /// As for `insert_many`.
    pub async fn insert(&self, item: &str) -> Result<bool, Error> {
        Ok(self.insert_many(&[item]).await?[0])
    }
}

crate::accessors::client_accessors!(seen FleetSeen);

impl FleetFrontier {
    /// Asks `request` of the next round, and waits for its answer.
    async fn ask(&self, request: Request) -> Result<Answer, Error> {
        io::runtime_can_run()?;
        let ticket = self.core.ask(request);
        answer(&self.session, ticket, &self.core).await
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
/// while it lives (whatever becomes of the runtime it was connected on);
/// the URLs of a process that dies go back on the queue when their leases
/// end. See [the crate docs](crate) for why the queues
/// live on the server, and for failures.
///
/// Share it between tasks as `Arc<FleetFrontier>`.
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
/// use atomic_bloom_fleet::tokio::FleetFrontier;
/// use atomic_bloom_fleet::FleetConfig;
///
/// #[tokio::main]
/// async fn main() -> Result<(), atomic_bloom_fleet::Error> {
///     let frontier = FleetFrontier::connect(&FleetConfig::new("redis://127.0.0.1:6379/")).await?;
///     frontier.push("https://example.com/".to_string()).await?;
///     frontier.flush().await?;
///     if let Some(page) = frontier.pop().await? {
///         assert_eq!(page.url(), "https://example.com/");
///         // fetch it, push its links ...
///         frontier.complete(page).await;
///     }
///     Ok(())
/// }
/// ```
pub struct FleetFrontier {
    core: Arc<FrontierCore>,
    session: Mutex<Session>,
    /// Stopped when the frontier drops.
    heartbeat: HeartbeatThread,
}

impl FleetFrontier {
    /// Connects to the fleet's server (or cluster), checks it has the
    /// module and that the fleet's stored settings match these, and starts
    /// the thread that renews this client's leases (on connections of its
    /// own, opened by its first beat: two per node in all). The thread is
    /// not the runtime's: the leases are renewed while the frontier lives,
    /// on this runtime or another.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFleetConfig`] for a setting out of range,
    /// [`Error::FleetTimesConflict`] for a `retry_for` longer than the
    /// `lease` leaves room for, or a `result_ttl` shorter than it,
    /// [`Error::ServerUnavailable`] when the server cannot be reached,
    /// [`Error::ModuleMissing`] when it has no `BF.*` commands,
    /// [`Error::FleetSettingsDiffer`] when the fleet's first client used
    /// other shards, capacity, rate or expansion,
    /// [`Error::RuntimeUnusable`] outside a tokio runtime with its I/O and
    /// time drivers; [`Error::ServerUnavailable`] naming this process when
    /// the heartbeat's thread cannot be started.
    pub async fn connect(config: &FleetConfig) -> Result<FleetFrontier, Error> {
        io::runtime_can_run()?;
        let (client, wire) = Client::new(config, fresh_seed())?;
        let core = Arc::new(FrontierCore::new(client));
        let session = Mutex::new(Session::new(wire));
        session
            .lock()
            .await
            .run(|wire| core.connect(wire))
            .await??;
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
    /// `Ok(false)`. A push dropped before it returns (a cancelled future),
    /// even while it waits for another call of this client, keeps its URL,
    /// for the next call to send. [`Error::RuntimeUnusable`] where tokio
    /// cannot do the I/O (the URL is kept then too).
    pub async fn push(&self, url: String) -> Result<bool, Error> {
        // Holds the URL until it is buffered, and buffers it if dropped.
        let left = match self.core.push(url, Instant::now()) {
            Push::Answered(accepted) => return Ok(accepted),
            Push::Slow(left) => left,
        };
        self.ask(Request::Push(left)).await?.pushed()
    }

    /// Sends every buffered batch now, and the completions they held back.
    ///
    /// # Errors
    ///
    /// As for [`push`](Self::push); the batches stay buffered.
    pub async fn flush(&self) -> Result<(), Error> {
        self.ask(Request::Flush).await?.flushed()
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
    /// [`Error::RuntimeUnusable`] where tokio cannot do the I/O.
    pub async fn pop(&self) -> Result<Option<Leased>, Error> {
        if let Some(page) = self.core.pop_buffered() {
            return Ok(Some(page));
        }
        self.ask(Request::Pop).await?.popped()
    }

    /// Says a popped URL is done: its links are pushed (the pushes have
    /// returned). A lease covers one take (the URLs a `pop` fetched from
    /// one shard at once) and ends on the server, with a later call of this
    /// client, once every URL of the take is completed and the server has
    /// answered every push made before. Until then it is renewed; if this
    /// process dies first, the take's URLs are crawled again by others.
    ///
    /// The page is completed by this call, before the future it returns is
    /// polled: a future dropped unpolled (a `select!` whose other branch
    /// was ready) gives nothing back, and awaiting it waits for nothing.
    pub fn complete(&self, page: Leased) -> impl Future<Output = ()> {
        self.core.complete(page);
        std::future::ready(())
    }

    /// Whether the whole fleet is out of work: no live process holds,
    /// buffers, leases or has queued a URL. Sends what this process
    /// buffered and its completions, and marks it idle on the server when
    /// it holds nothing. Leases of processes that died are put back on the
    /// queues here.
    ///
    /// A push dropped while it waited for this call (a cancelled future)
    /// buffered its URL meanwhile: the call answers `false`, and the next
    /// call sends the URL.
    ///
    /// # Errors
    ///
    /// [`Error::ServerUnavailable`] (or another server error);
    /// [`Error::RuntimeUnusable`] where tokio cannot do the I/O.
    pub async fn is_finished(&self) -> Result<bool, Error> {
        self.ask(Request::IsFinished).await?.finished()
    }
}

impl Drop for FleetFrontier {
    /// Stops the heartbeat (without waiting for a beat under way: a drop
    /// in a task does not block its runtime). What this client held and
    /// did not complete goes back to the fleet when its leases end.
    fn drop(&mut self) {
        self.heartbeat.stop(false);
    }
}

crate::accessors::client_accessors!(frontier FleetFrontier);
