//! Why a fleet command failed, and what to do about it: each outcome
//! sorted by the `redis` crate's own [`RetryMethod`], the way its cluster
//! client sorts them.

use redis::{RedisError, RetryMethod};

use crate::Error;

/// Why a command failed, by what to do next.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    /// The node could not be reached, the connection dropped or a reply
    /// was late: what was sent may or may not have run. Reconnect, pause,
    /// send again.
    Unreachable {
        /// The node.
        node: String,
        /// What the connection said.
        reason: String,
    },
    /// The node is not ready (`TRYAGAIN`, `CLUSTERDOWN`, `LOADING`,
    /// `MASTERDOWN`, `OOM`, too few replicas): pause, send again.
    Busy {
        /// The node.
        node: String,
        /// What it said.
        reason: String,
    },
    /// The map of slots is stale (`MOVED`, `READONLY`) or the node lost the
    /// scripts (`NOSCRIPT`, after a restart or a failover): map the nodes
    /// again (which loads the scripts) and send again.
    Stale {
        /// The node.
        node: String,
        /// What it said.
        reason: String,
    },
    /// The server refused the command: sending it again changes nothing.
    Refused(Error),
}

impl Failure {
    /// The error a caller sees.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Failure::Unreachable { node, reason }
            | Failure::Busy { node, reason }
            | Failure::Stale { node, reason } => Error::ServerUnavailable { node, reason },
            Failure::Refused(error) => error,
        }
    }

    /// Whether the nodes should be mapped again before the next try.
    pub(crate) fn needs_map(&self) -> bool {
        matches!(self, Failure::Unreachable { .. } | Failure::Stale { .. })
    }

    /// Whether sending again at once may work (no pause needed).
    pub(crate) fn is_stale(&self) -> bool {
        matches!(self, Failure::Stale { .. })
    }
}

/// Sorts `error`, from `node`, for a command on `key`.
pub(crate) fn classify(node: &str, key: &str, error: &RedisError) -> Failure {
    let code = error.code().unwrap_or_default();
    let node = node.to_string();
    let reason = error.to_string();
    // Errors the crate does not know, and ones a script wraps (its own
    // code first, the key named after it).
    match code {
        "NOSCRIPT" => return Failure::Stale { node, reason },
        "OOM" => return Failure::Busy { node, reason },
        "WRONGTYPE" => {
            return Failure::Refused(Error::WrongKeyType {
                key: key.to_string(),
            })
        }
        _ => {}
    }
    match error.retry_method() {
        RetryMethod::MovedRedirect
        | RetryMethod::RefreshSlotsAndRetry
        | RetryMethod::AskRedirect => Failure::Stale { node, reason },
        RetryMethod::WaitAndRetry => Failure::Busy { node, reason },
        RetryMethod::Reconnect
        | RetryMethod::RetryImmediately
        | RetryMethod::ReconnectFromInitialConnections => Failure::Unreachable { node, reason },
        // A refusal (NoRetry), or a kind this version of the crate does not
        // know: sending again would be refused again.
        _ => Failure::Refused(Error::ServerRefused {
            node,
            message: reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error a server's `-text` reply makes.
    fn server(text: &str) -> RedisError {
        match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()) {
            Ok(redis::Value::ServerError(error)) => error.into(),
            Err(error) => error,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_reply_is_sorted_by_what_to_do() {
        let sorted = |text| classify("n:1", "k", &server(text));
        assert!(matches!(
            sorted("MOVED 12 10.0.0.2:7001"),
            Failure::Stale { .. }
        ));
        assert!(matches!(
            sorted("READONLY You can't write"),
            Failure::Stale { .. }
        ));
        assert!(matches!(
            sorted("NOSCRIPT No matching script"),
            Failure::Stale { .. }
        ));
        assert!(matches!(
            sorted("TRYAGAIN Multiple keys"),
            Failure::Busy { .. }
        ));
        assert!(matches!(
            sorted("CLUSTERDOWN The cluster is down"),
            Failure::Busy { .. }
        ));
        assert!(matches!(
            sorted("LOADING loading the dataset"),
            Failure::Busy { .. }
        ));
        assert!(matches!(
            sorted("OOM command not allowed"),
            Failure::Busy { .. }
        ));
        match sorted("WRONGTYPE BF.INSERT on k: Operation against a key") {
            Failure::Refused(Error::WrongKeyType { key }) => assert_eq!(key, "k"),
            other => panic!("{other:?}"),
        }
        match sorted("FLEETITEM BF.INSERT on k refused an item: full") {
            Failure::Refused(Error::ServerRefused { node, message }) => {
                assert_eq!(node, "n:1");
                assert!(message.contains("full"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let dropped = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(matches!(
            classify("n:1", "k", &dropped),
            Failure::Unreachable { .. }
        ));
    }
}
