//! A frontier's heartbeat on a thread of its own, on connections of its
//! own, timed by the core's [`Heartbeat`]: both drivers' frontiers run it,
//! so that an async frontier's leases outlive the runtime that connected
//! it and are renewed however busy that runtime is.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use super::{drive, Connections};
use crate::core::frontier::{FrontierCore, Heartbeat};
use crate::sync::Arc;
use crate::Error;

/// The thread that renews a frontier's leases and busy mark, until
/// stopped.
#[derive(Debug)]
pub(crate) struct HeartbeatThread {
    /// Wakes the thread to end when dropped.
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl HeartbeatThread {
    /// Starts the heartbeat of `core`, a connected frontier's: its first
    /// beat a third of a lease from now.
    ///
    /// # Errors
    ///
    /// The thread could not be started, or the heartbeat's link not built.
    pub(crate) fn start(core: &Arc<FrontierCore>) -> Result<HeartbeatThread, Error> {
        let mut link = core.client.beat_link()?;
        let (stop, stopped) = mpsc::channel::<()>();
        let beat = Arc::clone(core);
        let mut clock = Heartbeat::new(&core.client.config, Instant::now());
        let thread = thread::Builder::new()
            .name("atomic-bloom-fleet-heartbeat".into())
            .spawn(move || {
                let mut io = Connections::default();
                let wait =
                    |clock: &Heartbeat| clock.next().saturating_duration_since(Instant::now());
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait(&clock)) {
                    clock.started(Instant::now());
                    if !drive(&mut io, beat.beat(&mut link)) {
                        clock.failed(Instant::now());
                    }
                }
            })
            .map_err(|error| Error::ServerUnavailable {
                node: "this process".into(),
                reason: format!("cannot start the lease heartbeat thread: {error}"),
            })?;
        Ok(HeartbeatThread {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the heartbeat; waits for a beat under way to end if `wait`
    /// (else the thread ends on its own once it has).
    pub(crate) fn stop(&mut self, wait: bool) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            if wait {
                let _ = thread.join();
            }
        }
    }
}
