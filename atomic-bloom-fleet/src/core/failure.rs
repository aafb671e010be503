//! Why a fleet command failed, and what to do about it: one table,
//! [`SERVER_ERRORS`], sorts every server error code the fleet can meet
//! into retry, remap, wait or final; errors that are not the server's
//! (timeouts, dropped connections) wait.

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
    /// The node is not ready (the table's [`Action::Wait`] codes, too few
    /// replicas for `WAIT`): pause, send again.
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

    /// Whether the server refused it for want of memory (`OOM` under
    /// `noeviction`, from the command or from a script's): final for a
    /// caller, who hears it at once, but what must reach the server in the
    /// end (a give-back) is sent again later.
    pub(crate) fn is_out_of_memory(&self) -> bool {
        matches!(self, Failure::Refused(Error::ServerRefused { message, .. }) if message.contains("OOM"))
    }

    /// Whether sending again at once may work (no pause needed).
    pub(crate) fn is_stale(&self) -> bool {
        matches!(self, Failure::Stale { .. })
    }
}

/// What the fleet does about a failed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// The node lost the fleet's scripts (a restart, a failover): load
    /// them again (the nodes are mapped again, which loads them) and send
    /// again at once.
    Retry,
    /// The map of slots is stale: map the nodes again and send again at
    /// once (`ASK` is answered on the spot, see `link`).
    Remap,
    /// The node cannot serve now and will later, or its reply was lost:
    /// pause, send again, until `retry_for` runs out. Nothing the fleet
    /// sends is refused for good by these, so nothing is dropped.
    Wait,
    /// The server refused the command: sending it again changes nothing.
    Final,
}

/// Every server error code the fleet can meet, by what it does about it
/// (the error's code text: the `redis` crate does not know `BUSY`,
/// `NOREPLICAS` or `MISCONF`). A code not here is [`Action::Final`], and
/// an error that is not the server's (a timeout, a dropped or refused
/// connection) is [`Action::Wait`]: see [`action_of`].
pub(crate) const SERVER_ERRORS: &[(&str, Action)] = &[
    // Slot moved for good, or for one command; a write on a node that is
    // a replica now (a failover).
    ("MOVED", Action::Remap),
    ("ASK", Action::Remap),
    ("READONLY", Action::Remap),
    // A script cache emptied by a restart or a failover.
    ("NOSCRIPT", Action::Retry),
    // A script running past its time on the node (busy-reply-threshold).
    ("BUSY", Action::Wait),
    // Loading its dataset after a restart.
    ("LOADING", Action::Wait),
    // A multi-key command whose keys are split by a slot migration.
    ("TRYAGAIN", Action::Wait),
    // `min-replicas-to-write` not met.
    ("NOREPLICAS", Action::Wait),
    // A failed RDB save with `stop-writes-on-bgsave-error`.
    ("MISCONF", Action::Wait),
    ("CLUSTERDOWN", Action::Wait),
    ("MASTERDOWN", Action::Wait),
    // Out of memory under `noeviction`: the operator must act, and a
    // caller hears it at once (a buffered batch is sent again later).
    ("OOM", Action::Final),
    ("WRONGTYPE", Action::Final),
    // An item the filter refused (the fleet's offer script).
    ("FLEETITEM", Action::Final),
    ("NOPERM", Action::Final),
    ("NOAUTH", Action::Final),
    ("CROSSSLOT", Action::Final),
    ("EXECABORT", Action::Final),
    // A script or command error.
    ("ERR", Action::Final),
];

/// What to do about `error`: the table's row for a server's code; `Wait`
/// for a reply lost, late or never sent (I/O, a parse of a cut reply);
/// `Final` for anything else (a client-side error).
pub(crate) fn action_of(error: &RedisError) -> Action {
    if let Some(code) = error.code() {
        return (SERVER_ERRORS.iter())
            .find(|(known, _)| *known == code)
            .map_or(Action::Final, |&(_, action)| action);
    }
    match error.retry_method() {
        RetryMethod::Reconnect
        | RetryMethod::RetryImmediately
        | RetryMethod::ReconnectFromInitialConnections
        | RetryMethod::WaitAndRetry => Action::Wait,
        RetryMethod::MovedRedirect
        | RetryMethod::AskRedirect
        | RetryMethod::RefreshSlotsAndRetry => Action::Remap,
        _ => Action::Final,
    }
}

/// Sorts `error`, from `node`, for a command on `key`, by [`action_of`].
pub(crate) fn classify(node: &str, key: &str, error: &RedisError) -> Failure {
    let node = node.to_string();
    let reason = error.to_string();
    match action_of(error) {
        Action::Retry | Action::Remap => Failure::Stale { node, reason },
        Action::Wait if error.code().is_some() => Failure::Busy { node, reason },
        Action::Wait => Failure::Unreachable { node, reason },
        Action::Final if error.code() == Some("WRONGTYPE") => {
            Failure::Refused(Error::WrongKeyType {
                key: key.to_string(),
            })
        }
        Action::Final => Failure::Refused(Error::ServerRefused {
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

    /// One test per row of the table: the code's action, and the failure
    /// a reply with it becomes.
    macro_rules! row {
        ($name:ident, $reply:expr, $action:ident, $failure:pat) => {
            #[test]
            fn $name() {
                let error = server($reply);
                assert_eq!(action_of(&error), Action::$action, "{}", $reply);
                let code = error.code().expect("a server's error has a code");
                if let Some(&(_, listed)) = SERVER_ERRORS.iter().find(|(known, _)| *known == code) {
                    assert_eq!(listed, Action::$action, "{code}");
                }
                let failure = classify("n:1", "k", &error);
                assert!(matches!(failure, $failure), "{}: {failure:?}", $reply);
            }
        };
    }

    row!(
        moved_remaps,
        "MOVED 12 10.0.0.2:7001",
        Remap,
        Failure::Stale { .. }
    );
    row!(
        ask_remaps,
        "ASK 12 10.0.0.2:7001",
        Remap,
        Failure::Stale { .. }
    );
    row!(
        readonly_remaps,
        "READONLY You can't write against a read only replica.",
        Remap,
        Failure::Stale { .. }
    );
    row!(
        noscript_retries,
        "NOSCRIPT No matching script",
        Retry,
        Failure::Stale { .. }
    );
    row!(
        busy_waits,
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        Wait,
        Failure::Busy { .. }
    );
    row!(
        loading_waits,
        "LOADING Redis is loading the dataset in memory",
        Wait,
        Failure::Busy { .. }
    );
    row!(
        tryagain_waits,
        "TRYAGAIN Multiple keys request during rehashing of slot",
        Wait,
        Failure::Busy { .. }
    );
    row!(
        noreplicas_waits,
        "NOREPLICAS Not enough good replicas to write.",
        Wait,
        Failure::Busy { .. }
    );
    row!(misconf_waits, "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.", Wait, Failure::Busy { .. });
    row!(
        clusterdown_waits,
        "CLUSTERDOWN The cluster is down",
        Wait,
        Failure::Busy { .. }
    );
    row!(
        masterdown_waits,
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        Wait,
        Failure::Busy { .. }
    );
    row!(
        oom_is_final,
        "OOM command not allowed when used memory > 'maxmemory'.",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        wrongtype_is_final,
        "WRONGTYPE BF.INSERT on k failed: Operation against a key holding the wrong kind of value",
        Final,
        Failure::Refused(Error::WrongKeyType { .. })
    );
    row!(
        a_refused_item_is_final,
        "FLEETITEM BF.INSERT on k refused an item: full",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        noperm_is_final,
        "NOPERM User has no permissions to run the 'evalsha' command",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        noauth_is_final,
        "NOAUTH Authentication required.",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        crossslot_is_final,
        "CROSSSLOT Keys in request don't hash to the same slot",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        execabort_is_final,
        "EXECABORT Transaction discarded because of previous errors.",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        a_script_error_is_final,
        "ERR user_script:1: Script attempted to access nonexistent global variable",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );
    row!(
        an_unknown_code_is_final,
        "SOMENEWCODE a server of the future",
        Final,
        Failure::Refused(Error::ServerRefused { .. })
    );

    #[test]
    fn every_row_has_a_test() {
        // The rows the tests above cover, by code: a row added to the
        // table without its test fails here.
        let tested = [
            "MOVED",
            "ASK",
            "READONLY",
            "NOSCRIPT",
            "BUSY",
            "LOADING",
            "TRYAGAIN",
            "NOREPLICAS",
            "MISCONF",
            "CLUSTERDOWN",
            "MASTERDOWN",
            "OOM",
            "WRONGTYPE",
            "FLEETITEM",
            "NOPERM",
            "NOAUTH",
            "CROSSSLOT",
            "EXECABORT",
            "ERR",
        ];
        let listed: Vec<&str> = SERVER_ERRORS.iter().map(|(code, _)| *code).collect();
        assert_eq!(listed, tested);
    }

    /// Errors that are not the server's: a reply lost or late waits.
    fn io(kind: std::io::ErrorKind) -> RedisError {
        RedisError::from(std::io::Error::from(kind))
    }

    #[test]
    fn a_timeout_waits() {
        for kind in [std::io::ErrorKind::TimedOut, std::io::ErrorKind::WouldBlock] {
            assert_eq!(action_of(&io(kind)), Action::Wait, "{kind:?}");
            assert!(matches!(
                classify("n:1", "k", &io(kind)),
                Failure::Unreachable { .. }
            ));
        }
    }

    #[test]
    fn a_dropped_or_refused_connection_waits() {
        for kind in [
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::ConnectionRefused,
            std::io::ErrorKind::ConnectionAborted,
            std::io::ErrorKind::BrokenPipe,
            std::io::ErrorKind::UnexpectedEof,
        ] {
            assert_eq!(action_of(&io(kind)), Action::Wait, "{kind:?}");
            assert!(matches!(
                classify("n:1", "k", &io(kind)),
                Failure::Unreachable { .. }
            ));
        }
    }
}
