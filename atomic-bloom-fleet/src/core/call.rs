//! The seam between the protocol core and a driver: a [`Call`] is one
//! client call (a pop, a flush, a connect, a heartbeat ...) in progress,
//! and a driver runs it by answering the I/O it asks for.
//!
//! # Call order
//!
//! ```text
//! let mut call = core_operation(&mut wire);          // nothing sent yet
//! loop {
//!     match call.step(now()) {                        // time enters here only
//!         Step::Done(value) => break value,
//!         Step::Io(Io::Round(pipelines)) => {          // write every pipeline, then read each
//!             let received = transport.round(pipelines);
//!             call.answer(received);
//!         }
//!         Step::Io(Io::Sleep(until)) => { sleep_until(until); call.answer(Vec::new()) }
//!     }
//! }
//! ```
//!
//! A call's logic is written once, as sequential code over [`Port`]: it
//! awaits nothing but the port's requests, so polling it never blocks and
//! never does I/O; [`Call::step`] polls it with a waker that does nothing,
//! and the driver answers what it asked for before the next step. The same
//! call runs unchanged under the blocking driver (a socket per node, a
//! thread sleep) and the tokio one, and in the core's tests against
//! scripted replies and a clock that jumps.

use std::future::Future;
use std::pin::Pin;
use std::sync::PoisonError;

use crate::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use redis::Value;

/// One node's pipeline of a round: commands written together, whose
/// replies are read in order.
#[derive(Debug)]
pub(crate) struct Pipeline {
    /// `host:port`: the driver keeps one connection per address.
    pub(crate) address: String,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// Open a new connection first, dropping the one the driver holds (the
    /// bytes then begin with the connection's set-up commands).
    pub(crate) connect: bool,
    /// A connection for this pipeline alone, closed after it (an `ASK`).
    pub(crate) one_off: bool,
    /// The commands, as the server reads them.
    pub(crate) bytes: Vec<u8>,
    /// How many replies to read.
    pub(crate) replies: usize,
    /// How long a connect, a write or a read may take.
    pub(crate) timeout: Duration,
}

/// What a driver read for one pipeline.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Received {
    /// The replies read, in order (fewer than asked when `lost`).
    pub(crate) replies: Vec<Value>,
    /// Why the rest never came (the connection failed, timed out, closed),
    /// after which the driver dropped the connection.
    pub(crate) lost: Option<String>,
}

impl Received {
    /// Nothing came: the connection could not be opened or written.
    pub(crate) fn failed(reason: impl Into<String>) -> Received {
        Received {
            replies: Vec::new(),
            lost: Some(reason.into()),
        }
    }
}

/// What a call asks its driver to do.
#[derive(Debug)]
pub(crate) enum Io {
    /// Write every pipeline (each to its node), then read each one's
    /// replies; answer with one [`Received`] per pipeline, in order.
    Round(Vec<Pipeline>),
    /// Wake the call at this instant (answer with nothing).
    Sleep(Instant),
}

/// Where a call stands after a step.
#[derive(Debug)]
pub(crate) enum Step<T> {
    /// Do this, then [`Call::answer`].
    Io(Io),
    /// The call's result.
    Done(T),
}

/// A request in flight between a call and its driver.
#[derive(Debug, Default)]
struct Slot {
    now: Option<Instant>,
    request: Option<Io>,
    answer: Option<Vec<Received>>,
}

/// A call's side of the seam: where it reads the time and asks for I/O.
#[derive(Debug, Default)]
pub(crate) struct Port(Mutex<Slot>);

impl Port {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The time the driver gave at this step.
    pub(crate) fn now(&self) -> Instant {
        self.slot()
            .now
            .expect("a call reads the time only while it is stepped")
    }

    /// Sends `pipelines` and waits for what came back, one [`Received`]
    /// each.
    pub(crate) fn round(&self, pipelines: Vec<Pipeline>) -> Request<'_> {
        Request {
            port: self,
            io: Some(Io::Round(pipelines)),
        }
    }

    /// Waits until `until`.
    pub(crate) async fn sleep_until(&self, until: Instant) {
        Request {
            port: self,
            io: Some(Io::Sleep(until)),
        }
        .await;
    }
}

/// A request to the driver: pending until it answers.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    port: &'a Port,
    io: Option<Io>,
}

impl Future for Request<'_> {
    type Output = Vec<Received>;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Vec<Received>> {
        let mut slot = self.port.slot();
        if let Some(io) = self.io.take() {
            slot.request = Some(io);
            return Poll::Pending;
        }
        match slot.answer.take() {
            Some(answer) => Poll::Ready(answer),
            None => Poll::Pending,
        }
    }
}

/// One client call in progress (see the module's call order).
pub(crate) struct Call<'a, T> {
    port: Arc<Port>,
    future: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<T> std::fmt::Debug for Call<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call").field("port", &self.port).finish()
    }
}

impl<'a, T> Call<'a, T> {
    /// `future`, whose only I/O is `port`'s.
    pub(crate) fn new(port: Arc<Port>, future: impl Future<Output = T> + Send + 'a) -> Self {
        Call {
            port,
            future: Box::pin(future),
        }
    }

    /// Runs the call up to its next request, or its end; `now` is the
    /// driver's clock.
    pub(crate) fn step(&mut self, now: Instant) -> Step<T> {
        self.port.slot().now = Some(now);
        let mut context = Context::from_waker(Waker::noop());
        match self.future.as_mut().poll(&mut context) {
            Poll::Ready(value) => Step::Done(value),
            Poll::Pending => Step::Io(
                (self.port.slot().request.take())
                    .expect("a pending call waits only for its driver"),
            ),
        }
    }

    /// The answer to the last [`Step::Io`].
    pub(crate) fn answer(&mut self, received: Vec<Received>) {
        self.port.slot().answer = Some(received);
    }
}
