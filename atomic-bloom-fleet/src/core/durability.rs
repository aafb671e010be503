//! What a pipeline waits for after its writes: replicas (`WAIT`) and the
//! node's own append-only file (`WAITAOF`).

use std::time::Duration;

use redis::{Cmd, Value};

use super::failure::Failure;
use super::millis;

/// The waits each node's pipeline ends with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Durability {
    /// Replicas that must have the writes, and for how long to wait.
    pub(crate) replicas: Option<(usize, Duration)>,
    /// How long to wait for the node to fsync the writes to its AOF.
    pub(crate) aof: Option<Duration>,
}

impl Durability {
    /// Whether pipelines wait at all.
    pub(crate) fn waits(&self) -> bool {
        self.replicas.is_some() || self.aof.is_some()
    }

    /// Replies the waits add to a pipeline (the write before them too).
    pub(crate) fn replies(&self) -> usize {
        usize::from(self.waits())
            + usize::from(self.replicas.is_some())
            + usize::from(self.aof.is_some())
    }

    /// Adds the waits to `pipeline`, after its commands, and before them a
    /// write of its own on `mark` (a key of the node's, in the slot of the
    /// pipeline's first command): a wait covers only the last write made
    /// on its connection, and a command sent again after a lost reply may
    /// write nothing (see `scripts::MARK`).
    pub(crate) fn append(&self, pipeline: &mut Vec<Cmd>, mark: &str) {
        if self.waits() {
            pipeline.push(super::scripts::mark(mark));
        }
        if let Some((replicas, timeout)) = self.replicas {
            pipeline.push(
                redis::cmd("WAIT")
                    .arg(replicas)
                    .arg(millis(timeout))
                    .clone(),
            );
        }
        if let Some(timeout) = self.aof {
            pipeline.push(
                redis::cmd("WAITAOF")
                    .arg(1)
                    .arg(0)
                    .arg(millis(timeout))
                    .clone(),
            );
        }
    }

    /// What the waits' `replies` (the pipeline's last ones) say: `None` when
    /// the writes are where they were asked to be; a failure to send them
    /// again (each fleet command is idempotent) otherwise.
    pub(crate) fn check(&self, node: &str, replies: &[Value]) -> Option<Failure> {
        let mut replies = replies.iter();
        if self.waits() {
            match replies.next() {
                Some(Value::Int(_)) => {}
                Some(Value::ServerError(error)) => return Some(refused(node, error)),
                reply => {
                    return Some(Failure::Busy {
                        node: node.to_string(),
                        reason: format!("the write before the wait answered {reply:?}"),
                    })
                }
            }
        }
        if let Some((replicas, _)) = self.replicas {
            match replies.next() {
                Some(Value::Int(count)) if *count >= replicas as i64 => {}
                // `WAIT` on a node that is a replica now: the map is stale.
                Some(Value::ServerError(error)) => {
                    return Some(Failure::Stale {
                        node: node.to_string(),
                        reason: format!("WAIT answered {error}"),
                    })
                }
                reply => {
                    return Some(Failure::Busy {
                        node: node.to_string(),
                        reason: format!(
                            "the writes reached fewer than the {replicas} replicas asked for in \
                             time (WAIT answered {reply:?})"
                        ),
                    })
                }
            }
        }
        if self.aof.is_some() {
            match replies.next() {
                Some(Value::Array(counts)) if counts.first() == Some(&Value::Int(1)) => {}
                Some(Value::ServerError(error)) => return Some(refused(node, error)),
                reply => {
                    return Some(Failure::Busy {
                        node: node.to_string(),
                        reason: format!(
                            "the node did not fsync the writes to its append-only file in time \
                             (WAITAOF answered {reply:?})"
                        ),
                    })
                }
            }
        }
        None
    }
}

/// What an error reply in the pipeline (the write before the wait, or
/// `WAITAOF`) means: the failure it is as the reply to any command.
fn refused(node: &str, error: &redis::ServerError) -> Failure {
    super::failure::classify(node, "", &redis::RedisError::from(error.clone()))
}
