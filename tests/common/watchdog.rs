//! A watchdog for a call that may never return: it runs on a thread of its
//! own, and the test fails (rather than hangs) when it has not returned in
//! time. The thread is left running; the test binary's exit ends it.

use std::sync::mpsc;
use std::time::Duration;

/// Runs `call` on a new thread and returns what it returned, or panics
/// naming `what` if it has not returned within `limit`.
pub fn within<R: Send + 'static>(
    limit: Duration,
    what: &str,
    call: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        // The receiver is gone only once the test has failed.
        let _ = sender.send(call());
    });
    match receiver.recv_timeout(limit) {
        Ok(outcome) => outcome,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no return within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}
