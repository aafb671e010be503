//! The tokio driver's I/O: a TCP connection per node; each pipeline of a
//! round goes out and is read on a task of its own, so that one slow node
//! delays only its own replies, with the pipeline's timeout on the connect
//! and on every write and read.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::time::Duration;

use ::tokio::io::{AsyncReadExt, AsyncWriteExt};
use ::tokio::net::TcpStream;
use ::tokio::runtime::Handle;
use ::tokio::task::JoinSet;
use ::tokio::time;

use crate::core::call::{Io, Pipeline, Received};
use crate::core::resp::Replies;
use crate::Error;

/// Whether a call can run here: inside a tokio runtime. (Whether that
/// runtime has its I/O and time drivers tokio tells only by a panic: the
/// first round's tasks find out, see [`Connections::round`].)
pub(crate) fn runtime_can_run() -> Result<(), Error> {
    Handle::try_current()
        .map(drop)
        .map_err(|error| Error::RuntimeUnusable {
            reason: error.to_string(),
        })
}

/// What a task that panicked said.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    (payload.downcast_ref::<&str>().copied())
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a task of the round panicked")
}

/// The connections of one wire (or of a heartbeat), by node address.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    streams: HashMap<String, TcpStream>,
}

/// `step`, or a timed-out error once `limit` has passed.
async fn within<T>(limit: Duration, step: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    time::timeout(limit, step)
        .await
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")))
}

/// Sends `pipeline` on `stream` (or on a connection it opens) and reads its
/// replies; the connection back, unless it failed or was a one-off.
async fn exchange(pipeline: Pipeline, stream: Option<TcpStream>) -> (Received, Option<TcpStream>) {
    let limit = pipeline.timeout;
    let opened = match stream {
        Some(stream) => Ok(stream),
        // A connection the core thinks open is gone (a call dropped
        // mid-round took it): failed, so that the core opens one, set up.
        None if !pipeline.connect => {
            Err(io::Error::new(io::ErrorKind::NotConnected, "no connection"))
        }
        None => {
            within(
                limit,
                TcpStream::connect((pipeline.host.as_str(), pipeline.port)),
            )
            .await
        }
    };
    let mut stream = match opened.and_then(|stream| stream.set_nodelay(true).map(|()| stream)) {
        Ok(stream) => stream,
        Err(error) => return (Received::failed(error.to_string()), None),
    };
    if let Err(error) = within(limit, stream.write_all(&pipeline.bytes)).await {
        return (Received::failed(error.to_string()), None);
    }
    // Read into spare capacity: nothing to zero first.
    let mut buffer = Vec::with_capacity(64 * 1024);
    let mut replies = Replies::new(pipeline.replies);
    let received = loop {
        buffer.clear();
        let read = within(limit, stream.read_buf(&mut buffer)).await;
        if let Some(received) = replies.take(read, &buffer) {
            break received;
        }
    };
    let keep = received.lost.is_none() && !pipeline.one_off;
    (received, keep.then_some(stream))
}

impl Connections {
    /// Does what a call asked for; an error where this runtime cannot.
    pub(crate) async fn perform(&mut self, io: Io) -> Result<Vec<Received>, Error> {
        match io {
            Io::Sleep(until) => {
                time::sleep_until(time::Instant::from_std(until)).await;
                Ok(Vec::new())
            }
            Io::Round(pipelines) => self.round(pipelines).await,
        }
    }

    /// Every pipeline at once, each on its node's connection. A task that
    /// panicked (a runtime without its I/O or time driver panics in the
    /// first) makes the round an error: no try could do better.
    async fn round(&mut self, pipelines: Vec<Pipeline>) -> Result<Vec<Received>, Error> {
        let count = pipelines.len();
        let mut tasks = JoinSet::new();
        for (at, pipeline) in pipelines.into_iter().enumerate() {
            // A new connection replaces the node's (its bytes begin with
            // the set-up); a one-off leaves it be.
            let stream = match (pipeline.connect, pipeline.one_off) {
                (_, true) => None,
                (true, false) => self.streams.remove(&pipeline.address).and(None),
                (false, false) => self.streams.remove(&pipeline.address),
            };
            let address = pipeline.address.clone();
            tasks.spawn(async move { (at, address, exchange(pipeline, stream).await) });
        }
        let mut received: Vec<Received> = (0..count).map(|_| Received::default()).collect();
        let mut panicked = None;
        while let Some(done) = tasks.join_next().await {
            let (at, address, (answer, stream)) = match done {
                Ok(done) => done,
                Err(error) if error.is_panic() => {
                    let payload = error.into_panic();
                    panicked.get_or_insert_with(|| panic_text(payload.as_ref()).to_string());
                    continue;
                }
                Err(_) => continue,
            };
            if let Some(stream) = stream {
                self.streams.insert(address, stream);
            }
            received[at] = answer;
        }
        if let Some(reason) = panicked {
            return Err(Error::RuntimeUnusable { reason });
        }
        // A task cancelled (its runtime shutting down) answered nothing.
        for answer in &mut received {
            if answer.replies.is_empty() && answer.lost.is_none() {
                *answer = Received::failed("the exchange's task ended early");
            }
        }
        Ok(received)
    }
}
