//! The fleet client's error type.

use std::fmt;
use std::time::Duration;

/// Everything that can go wrong with a fleet client: a server that cannot
/// be reached or refuses, a fleet whose stored settings differ, a setting
/// out of range.
///
/// Every variant's message says what to do about it.
///
/// # Example
///
/// ```
/// use atomic_bloom_fleet::{Error, FleetConfig, FleetSeen};
///
/// let refused = FleetSeen::connect(&FleetConfig::new("redis://127.0.0.1:6379/").shards(0));
/// match refused {
///     Err(Error::InvalidFleetConfig { setting, .. }) => assert_eq!(setting, "shards"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A server could not be reached: it is down, unreachable or timed
    /// out, or did not answer as asked (too few replicas for `WAIT`).
    /// Batches whose fate is unknown are kept and sent again by the next
    /// call.
    ServerUnavailable {
        /// The server's address, as configured or as the cluster named it.
        node: String,
        /// What the connection said.
        reason: String,
    },
    /// A fleet key holds another type than a Bloom filter (or a list, for
    /// the queues).
    WrongKeyType {
        /// The key.
        key: String,
    },
    /// The server has no `BF.*` commands: the module is not loaded.
    ModuleMissing {
        /// The server's address.
        node: String,
    },
    /// The server refused a fleet command for another reason.
    ServerRefused {
        /// The server's address.
        node: String,
        /// The server's error text.
        message: String,
    },
    /// A fleet client's settings differ from those the fleet's first
    /// client stored on the server: the processes would split the fleet.
    FleetSettingsDiffer {
        /// The key holding the fleet's settings.
        key: String,
        /// The setting that differs.
        setting: String,
        /// The fleet's value.
        fleet: String,
        /// This client's value.
        this: String,
    },
    /// Two fleet times that bound each other do not fit: `setting` must be
    /// at most (or at least) `limit`, which the other settings named in
    /// `reason` decide.
    FleetTimesConflict {
        /// The setting that does not fit.
        setting: &'static str,
        /// Its value.
        value: Duration,
        /// `"at most"` or `"at least"`.
        bound: &'static str,
        /// The bound, from the other settings.
        limit: Duration,
        /// Why, and which other setting to change instead.
        reason: &'static str,
    },
    /// A fleet configuration value is out of range.
    InvalidFleetConfig {
        /// The setting.
        setting: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// An async call ran where tokio cannot do its I/O: outside a tokio
    /// runtime, or on one built without its I/O or time driver. The call
    /// did nothing it cannot finish later: the next call, on a runtime that
    /// can, goes on with what it began.
    RuntimeUnusable {
        /// What tokio said.
        reason: String,
    },
    /// The local filter in front of the server could not be built (its
    /// capacity and rate, [`FleetConfig::local_filter`](crate::FleetConfig::local_filter)).
    LocalFilter(atomic_bloom::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ServerUnavailable { node, reason } => write!(
                f,
                "the server at {node} cannot be reached ({reason}): start it or check the \
                 address; batches whose fate is unknown are kept and sent again by the next call"
            ),
            Error::WrongKeyType { key } => write!(
                f,
                "key {key} holds another type: choose another key prefix for the fleet, or \
                 delete the key"
            ),
            Error::ModuleMissing { node } => write!(
                f,
                "the server at {node} has no BF.* commands: load the module with \
                 `--loadmodule target/release/libatomic_bloom_redis.so` (or RedisBloom)"
            ),
            Error::ServerRefused { node, message } => {
                write!(f, "the server at {node} refused a fleet command: {message}")
            }
            Error::FleetSettingsDiffer {
                key,
                setting,
                fleet,
                this,
            } => write!(
                f,
                "this client's {setting} is {this} but the fleet's is {fleet} (stored in \
                 {key}): start every process with the same shards, capacity, error rate and \
                 expansion, or give this fleet another prefix"
            ),
            Error::FleetTimesConflict {
                setting,
                value,
                bound,
                limit,
                reason,
            } => write!(
                f,
                "fleet setting `{setting}` is {value:?} but must be {bound} {limit:?}: {reason}; \
                 set `{setting}` to {bound} {limit:?}"
            ),
            Error::InvalidFleetConfig { setting, expected } => {
                write!(f, "fleet setting `{setting}` must be {expected}")
            }
            Error::RuntimeUnusable { reason } => write!(
                f,
                "this async fleet call cannot do its I/O here ({reason}): await it inside a \
                 tokio runtime with its I/O and time drivers (`#[tokio::main]`, or a runtime \
                 built with `enable_all()`)"
            ),
            Error::LocalFilter(error) => write!(f, "the fleet's local filter: {error}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::LocalFilter(error) => Some(error),
            _ => None,
        }
    }
}

impl From<atomic_bloom::Error> for Error {
    fn from(error: atomic_bloom::Error) -> Error {
        Error::LocalFilter(error)
    }
}
