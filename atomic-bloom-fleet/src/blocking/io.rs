//! The blocking driver's I/O: a TCP connection per node, opened, written
//! and read as the core's rounds say, with the pipeline's timeout on the
//! connect and on every write and read.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::thread;
use std::time::Instant;

use crate::core::call::{Io, Pipeline, Received};
use crate::core::resp::Replies;

/// The connections of one wire (or of a heartbeat), by node address.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    streams: HashMap<String, TcpStream>,
    buffer: Vec<u8>,
}

/// A connection to `pipeline`'s node.
fn open(pipeline: &Pipeline) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    for address in (pipeline.host.as_str(), pipeline.port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, pipeline.timeout) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(pipeline.timeout))?;
                stream.set_write_timeout(Some(pipeline.timeout))?;
                return Ok(stream);
            }
            Err(error) => last = error,
        }
    }
    Err(last)
}

impl Connections {
    /// Does what a call asked for.
    pub(crate) fn perform(&mut self, io: Io) -> Vec<Received> {
        match io {
            Io::Sleep(until) => {
                thread::sleep(until.saturating_duration_since(Instant::now()));
                Vec::new()
            }
            Io::Round(pipelines) => self.round(pipelines),
        }
    }

    /// Writes every pipeline, then reads each one's replies.
    fn round(&mut self, pipelines: Vec<Pipeline>) -> Vec<Received> {
        let mut one_offs = Vec::with_capacity(pipelines.len());
        let mut written = Vec::with_capacity(pipelines.len());
        for pipeline in &pipelines {
            let mut one_off = None;
            let outcome = if pipeline.one_off {
                open(pipeline).and_then(|mut stream| {
                    stream.write_all(&pipeline.bytes)?;
                    one_off = Some(stream);
                    Ok(())
                })
            } else {
                (self.node_stream(pipeline)).and_then(|stream| stream.write_all(&pipeline.bytes))
            };
            written.push(outcome.err().map(|error| error.to_string()));
            one_offs.push(one_off);
        }
        let mut received = Vec::with_capacity(pipelines.len());
        for ((pipeline, failed), one_off) in pipelines.iter().zip(written).zip(one_offs) {
            let outcome = match (failed, one_off) {
                (Some(reason), _) => Received::failed(reason),
                (None, Some(mut stream)) => read(&mut stream, pipeline, &mut self.buffer),
                (None, None) => match self.streams.get_mut(&pipeline.address) {
                    Some(stream) => read(stream, pipeline, &mut self.buffer),
                    None => Received::failed("no connection"),
                },
            };
            if outcome.lost.is_some() && !pipeline.one_off {
                // What the connection holds is unknown: the core opens a
                // new one next time.
                self.streams.remove(&pipeline.address);
            }
            received.push(outcome);
        }
        received
    }

    /// The node's connection for `pipeline`, opened anew if the core says
    /// so.
    fn node_stream(&mut self, pipeline: &Pipeline) -> io::Result<&mut TcpStream> {
        if pipeline.connect {
            self.streams.remove(&pipeline.address);
            let stream = open(pipeline)?;
            self.streams.insert(pipeline.address.clone(), stream);
        }
        // None: failed, so that the core opens one, set up.
        (self.streams.get_mut(&pipeline.address))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "no connection"))
    }
}

/// Reads `pipeline`'s replies from `stream`.
fn read(stream: &mut TcpStream, pipeline: &Pipeline, buffer: &mut Vec<u8>) -> Received {
    buffer.resize(64 * 1024, 0);
    let mut replies = Replies::new(pipeline.replies);
    loop {
        let read = stream.read(buffer);
        if let Some(received) = replies.take(read, buffer) {
            return received;
        }
    }
}
