//! Where a fleet's server is and how its clients talk to it, and what a
//! client did.

use std::time::Duration;

use crate::core::Durability;
use crate::Error;

/// Items a batch may hold: the server-side script passes them to
/// `BF.INSERT` as the arguments of one call.
const MAX_BATCH: usize = 4096;

/// Where a fleet's server is and how its clients talk to it.
///
/// Every process of a fleet must use the same `prefix`, `shards`,
/// capacity and rate; the rest may differ per process.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use atomic_bloom_fleet::FleetConfig;
///
/// let config = FleetConfig::new("redis://127.0.0.1:7000/")
///     .shards(16)
///     .batch_size(512)
///     .linger(Duration::from_millis(5));
/// assert_eq!(config.shard_count(), 16);
/// ```
#[derive(Clone, Debug)]
pub struct FleetConfig {
    pub(crate) url: String,
    pub(crate) prefix: String,
    pub(crate) shards: usize,
    pub(crate) capacity: usize,
    pub(crate) error_rate: f64,
    pub(crate) local_filter: bool,
    pub(crate) local_capacity: usize,
    pub(crate) local_error_rate: f64,
    pub(crate) batch_size: usize,
    pub(crate) linger: Duration,
    pub(crate) max_buffered: usize,
    pub(crate) pop_batch: usize,
    pub(crate) timeout: Duration,
    pub(crate) retry_for: Duration,
    pub(crate) result_ttl: Duration,
    pub(crate) lease: Duration,
    pub(crate) expansion: u32,
    pub(crate) durability: Durability,
}

impl FleetConfig {
    /// A fleet on the server (or any node of the cluster) at `url`, such as
    /// `redis://127.0.0.1:6379/`, with the defaults: prefix `atomic-bloom`,
    /// 8 shards, 10 million items at 1%, a local filter, batches of 256
    /// items or 10 ms, 64 batches buffered at most, pops of 64, a 2 s
    /// timeout, retries for 30 s, results kept an hour, leases of 60 s,
    /// shard filters that double as they fill, no waiting for replicas.
    pub fn new(url: impl Into<String>) -> Self {
        FleetConfig {
            url: url.into(),
            prefix: "atomic-bloom".to_string(),
            shards: 8,
            capacity: 10_000_000,
            error_rate: 0.01,
            local_filter: true,
            local_capacity: 1_000_000,
            local_error_rate: 0.001,
            batch_size: 256,
            linger: Duration::from_millis(10),
            max_buffered: 64 * 256,
            pop_batch: 64,
            timeout: Duration::from_secs(2),
            retry_for: Duration::from_secs(30),
            result_ttl: Duration::from_secs(3600),
            lease: Duration::from_secs(60),
            expansion: 2,
            durability: Durability::default(),
        }
    }

    /// The prefix of every key of the fleet.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The number of keys the fleet's filter and queue are spread over; on
    /// a cluster, at least its number of nodes. 1 to 16384.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// The shards, as configured.
    pub fn shard_count(&self) -> usize {
        self.shards
    }

    /// Distinct items the whole fleet expects, and the false-positive rate
    /// of the server's filters (each shard reserves `capacity / shards`
    /// and grows past it, keeping the rate).
    pub fn capacity(mut self, capacity: usize, error_rate: f64) -> Self {
        self.capacity = capacity;
        self.error_rate = error_rate;
        self
    }

    /// The local filter in front of the server: on (the default), sized for
    /// `capacity` items at `error_rate` and growing past it. A false
    /// positive here drops a new item, so a fleet drops at most the sum of
    /// the two rates.
    pub fn local_filter(mut self, capacity: usize, error_rate: f64) -> Self {
        self.local_filter = true;
        self.local_capacity = capacity;
        self.local_error_rate = error_rate;
        self
    }

    /// No local filter: every item goes to the server (with
    /// `batch_size(1)`, the way scrapy-redis dedupes).
    pub fn without_local_filter(mut self) -> Self {
        self.local_filter = false;
        self
    }

    /// Items per batch, 1 to 4096.
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }

    /// How long an item may wait for its batch to fill: a push that finds
    /// its shard's oldest item this old sends the batch. No thread runs in
    /// the background: [`FleetFrontier::pop`](crate::FleetFrontier::pop) and
    /// [`flush`](crate::FleetFrontier::flush) send what waits, too.
    pub fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// Items the client holds for the server at most, over all shards;
    /// past it, a push that cannot send returns the error instead of
    /// buffering. At least `batch_size`. A frontier also stops taking
    /// work (its `pop` returns the error) while this many completed pages
    /// wait for batches that cannot be sent.
    pub fn max_buffered(mut self, items: usize) -> Self {
        self.max_buffered = items;
        self
    }

    /// URLs a frontier takes from the server at once (spread over the
    /// shards), 1 to 4096.
    pub fn pop_batch(mut self, items: usize) -> Self {
        self.pop_batch = items;
        self
    }

    /// How long to wait for a connection or a reply.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long a call keeps retrying a server that cannot be reached
    /// before it returns the error (the batch stays buffered). At most two
    /// thirds of [`lease`](Self::lease) less three
    /// [`timeout`](Self::timeout)s (30 s fits the default 60 s lease), and
    /// at most [`result_ttl`](Self::result_ttl): checked at connect
    /// ([`Error::FleetTimesConflict`]).
    pub fn retry_for(mut self, retry_for: Duration) -> Self {
        self.retry_for = retry_for;
        self
    }

    /// How long the server keeps a batch's answer for a client that never
    /// acknowledges it (one that died): longer than any outage a client
    /// should retry through. At least [`retry_for`](Self::retry_for).
    pub fn result_ttl(mut self, ttl: Duration) -> Self {
        self.result_ttl = ttl;
        self
    }

    /// How long a popped URL stays leased to this client without a word
    /// from it: a live client renews its leases (a thread of
    /// [`FleetFrontier`](crate::FleetFrontier) does, every third of this), and the URLs of a
    /// client that died or was cut off for longer go back on the queue for
    /// others. A client stalled past its lease may see its URLs crawled a
    /// second time. At least 6 × [`timeout`](Self::timeout): the heartbeat
    /// has its own connections, so a call that is retrying never delays it,
    /// and a lease outlives one failed beat.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// The growth factor of the shards' filters once they pass their
    /// capacity (each new stage `expansion` times the last), 1 to 32768;
    /// passed to `BF.INSERT` so that a module's own default does not decide.
    /// Every process of a fleet must use the same.
    pub fn expansion(mut self, expansion: u32) -> Self {
        self.expansion = expansion;
        self
    }

    /// Waits, after each pipeline to a node, until `replicas` replicas have
    /// its writes (`WAIT`), for up to `timeout`; fewer is a failure retried
    /// like an unreachable node (each command of the fleet is idempotent,
    /// so sending it again is safe). Without it, a failover to a replica
    /// that had not caught up can undo an acknowledged batch or take. Every
    /// write waits, connecting (the fleet's settings) and the busy mark
    /// included, and each pipeline makes a write of its own before the
    /// wait, so that a command sent again after a lost reply is covered by
    /// the wait too; `timeout` must be shorter than
    /// [`timeout`](Self::timeout).
    ///
    /// # Consistency
    ///
    /// What it promises is that `replicas` replicas had the writes when the
    /// call returned, not which ones. When a primary has more replicas
    /// than `replicas`, a failover may promote one that had not
    /// acknowledged (a cluster prefers the replica with the most of the
    /// primary's stream, but promotes whichever asks first when that one
    /// is down or slow), and an acknowledged batch or take is then undone:
    /// a URL lost, or a take handed out again. Ask for every replica each
    /// primary has for an acknowledgement that survives the loss of its
    /// primary; a smaller number bounds how many replicas must be lost
    /// with it, not which one takes over.
    pub fn wait_for_replicas(mut self, replicas: usize, timeout: Duration) -> Self {
        self.durability.replicas = Some((replicas, timeout));
        self
    }

    /// Waits, after each pipeline to a node, until the node has written
    /// and fsynced its writes to its append-only file (`WAITAOF 1 0`), for
    /// up to `timeout`; later is a failure retried like an unreachable
    /// node. With it, an acknowledged batch or take survives the node's
    /// machine going down (a killed process loses nothing its AOF `write`
    /// held even without it). The server needs `WAITAOF` (Redis
    /// 7.2, Valkey) and `appendonly yes`; a node without it is refused at
    /// connect. `timeout` must be shorter than [`timeout`](Self::timeout).
    pub fn wait_for_aof(mut self, timeout: Duration) -> Self {
        self.durability.aof = Some(timeout);
        self
    }

    /// Checks every setting.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        let invalid = |setting, expected| Err(Error::InvalidFleetConfig { setting, expected });
        if !(1..=16384).contains(&self.shards) {
            return invalid("shards", "between 1 and 16384");
        }
        if self.prefix.is_empty() || self.prefix.contains(['{', '}']) {
            return invalid("prefix", "non-empty, without { or }");
        }
        if self.capacity == 0 || !(self.error_rate > 0.0 && self.error_rate < 1.0) {
            return invalid(
                "capacity",
                "a capacity of at least 1 and an error rate in (0, 1)",
            );
        }
        let local_rate = self.local_error_rate;
        if self.local_filter
            && (self.local_capacity == 0 || !(local_rate > 0.0 && local_rate < 1.0))
        {
            return invalid(
                "local_filter",
                "a capacity of at least 1 and an error rate in (0, 1)",
            );
        }
        if !(1..=MAX_BATCH).contains(&self.batch_size) {
            return invalid("batch_size", "between 1 and 4096");
        }
        if self.max_buffered < self.batch_size {
            return invalid("max_buffered", "at least batch_size");
        }
        if !(1..=MAX_BATCH).contains(&self.pop_batch) {
            return invalid("pop_batch", "between 1 and 4096");
        }
        if self.timeout.is_zero() {
            return invalid("timeout", "longer than zero");
        }
        if self.result_ttl < Duration::from_secs(1) {
            return invalid("result_ttl", "at least one second");
        }
        // The heartbeat beats every third of a lease, on its own
        // connections; a beat may take a timeout to connect and another to
        // answer, and one beat may fail.
        if self.lease < self.timeout * 6 {
            return invalid(
                "lease",
                "at least 6 times the timeout, so that a heartbeat renews it in time even \
                 when one beat fails",
            );
        }
        self.check_times()?;
        if !(1..=32768).contains(&self.expansion) {
            return invalid("expansion", "between 1 and 32768");
        }
        if let Some(timeout) = self.durability.aof {
            if timeout.is_zero() || timeout >= self.timeout {
                return invalid(
                    "wait_for_aof",
                    "a timeout longer than zero and shorter than `timeout` (a reply must come \
                     before the client stops waiting)",
                );
            }
        }
        if let Some((replicas, timeout)) = self.durability.replicas {
            if replicas == 0 || timeout.is_zero() || timeout >= self.timeout {
                return invalid(
                    "wait_for_replicas",
                    "at least one replica, and a timeout longer than zero and shorter than \
                     `timeout` (a reply must come before the client stops waiting)",
                );
            }
        }
        Ok(())
    }
}

impl FleetConfig {
    /// The longest `retry_for` a `lease` leaves room for (see
    /// [`check_times`](Self::check_times)).
    pub(crate) fn longest_retry_for(&self) -> Duration {
        (self.lease * 2 / 3).saturating_sub(self.timeout * 3)
    }

    /// Checks `lease`, `retry_for` and `result_ttl` against each other.
    fn check_times(&self) -> Result<(), Error> {
        let longest = self.longest_retry_for();
        if self.retry_for > longest {
            return Err(Error::FleetTimesConflict {
                setting: "retry_for",
                value: self.retry_for,
                bound: "at most",
                limit: longest,
                reason: "two thirds of `lease` less three `timeout`s: the heartbeat renews \
                         leases every third of a lease, a beat may wait for a call that is \
                         retrying and then take a timeout to connect and another to answer, and \
                         a take whose reply was lost is renewed only once it is sent again; or \
                         make `lease` longer",
            });
        }
        // The server keeps answers in whole seconds.
        let ttl = Duration::from_secs(self.result_ttl.as_secs());
        if ttl < self.retry_for {
            return Err(Error::FleetTimesConflict {
                setting: "result_ttl",
                value: self.result_ttl,
                bound: "at least",
                limit: self.retry_for.max(Duration::from_secs(1)),
                reason: "`retry_for` (in whole seconds): a batch sent again after its answer \
                         expired would find its own new items seen and never queue them; or \
                         make `retry_for` shorter",
            });
        }
        Ok(())
    }
}

/// What a fleet client did, counted since it connected.
///
/// # Consistency
///
/// Each count is exact once the client's calls have returned; read while
/// they run, the counts may be from slightly different moments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FleetStats {
    /// Items offered (pushed, or passed to `insert_many`).
    pub offered: u64,
    /// Items the local filter answered as seen, without a round trip.
    pub answered_locally: u64,
    /// Items sent to the server.
    pub sent: u64,
    /// Items the server found new (queued for the fleet, for a frontier).
    pub new_on_server: u64,
    /// Items taken from the fleet's queues.
    pub taken: u64,
    /// Pipelines sent (round trips), tries included.
    pub round_trips: u64,
    /// Pipelines that failed and were tried again.
    pub retries: u64,
}

impl FleetStats {
    /// The share of offered items answered without a round trip.
    pub fn local_share(&self) -> f64 {
        if self.offered == 0 {
            0.0
        } else {
            self.answered_locally as f64 / self.offered as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(config: &FleetConfig) -> (&'static str, String) {
        match config.validate() {
            Err(error @ Error::FleetTimesConflict { setting, .. }) => (setting, error.to_string()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_defaults_fit_together() {
        FleetConfig::new("redis://127.0.0.1/").validate().unwrap();
    }

    #[test]
    fn a_retry_longer_than_the_lease_allows_is_refused() {
        // A 12 s lease with the default 30 s of retries.
        let config = FleetConfig::new("redis://127.0.0.1/").lease(Duration::from_secs(12));
        let (setting, message) = refusal(&config);
        assert_eq!(setting, "retry_for");
        assert!(
            message.contains("set `retry_for` to at most 2s"),
            "{message}"
        );
        assert!(message.contains("lease"), "{message}");
        config.retry_for(Duration::from_secs(2)).validate().unwrap();
    }

    #[test]
    fn results_kept_shorter_than_the_retries_are_refused() {
        let config = FleetConfig::new("redis://127.0.0.1/")
            .result_ttl(Duration::from_secs(10))
            .retry_for(Duration::from_secs(20));
        let (setting, message) = refusal(&config);
        assert_eq!(setting, "result_ttl");
        assert!(
            message.contains("set `result_ttl` to at least 20s"),
            "{message}"
        );
        config
            .result_ttl(Duration::from_secs(20))
            .validate()
            .unwrap();
    }
}
