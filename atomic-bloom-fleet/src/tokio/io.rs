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
use ::tokio::task::JoinSet;
use ::tokio::time;

use crate::core::call::{Io, Pipeline, Received};
use crate::core::resp::Replies;

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
    /// Does what a call asked for.
    pub(crate) async fn perform(&mut self, io: Io) -> Vec<Received> {
        match io {
            Io::Sleep(until) => {
                time::sleep_until(time::Instant::from_std(until)).await;
                Vec::new()
            }
            Io::Round(pipelines) => self.round(pipelines).await,
        }
    }

    /// Every pipeline at once, each on its node's connection.
    async fn round(&mut self, pipelines: Vec<Pipeline>) -> Vec<Received> {
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
        while let Some(done) = tasks.join_next().await {
            let Ok((at, address, (answer, stream))) = done else {
                continue;
            };
            if let Some(stream) = stream {
                self.streams.insert(address, stream);
            }
            received[at] = answer;
        }
        // A task that panicked or was cancelled answered nothing.
        for answer in &mut received {
            if answer.replies.is_empty() && answer.lost.is_none() {
                *answer = Received::failed("the exchange's task ended early");
            }
        }
        received
    }
}
