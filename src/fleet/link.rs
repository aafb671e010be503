//! The connections of a fleet client: one per server node, each shard
//! routed to the node that owns its slot, every call one pipeline per node.
//!
//! A standalone server is a fleet of one node. A cluster is found by
//! `INFO cluster` on the configured address, and mapped with `CLUSTER
//! SLOTS`; a `MOVED` or `ASK` reply, or a node that cannot be reached, maps
//! it again. Routing here rather than through the `redis` crate's cluster
//! connection keeps one pipeline per node and lets every error name the
//! node that failed.

use std::time::Duration;

use redis::{Client, Cmd, ConnectionAddr, ConnectionInfo, Value};

use super::keys::{self, ShardKeys};
use super::scripts;
use crate::Error;

/// Why a pipeline failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The node could not be reached, or the connection dropped: what was
    /// sent may or may not have run. Send it again once reconnected.
    Unreachable {
        /// The node.
        node: String,
        /// What the connection said.
        reason: String,
    },
    /// The cluster moved a slot: map it again and send again.
    Moved,
    /// The server refused the command: sending it again changes nothing.
    Refused(Error),
}

impl Failure {
    /// The error a caller sees.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Failure::Unreachable { node, reason } => Error::ServerUnavailable { node, reason },
            Failure::Moved => Error::ServerUnavailable {
                node: "cluster".to_string(),
                reason: "slots kept moving while the fleet sent a batch".to_string(),
            },
            Failure::Refused(error) => error,
        }
    }
}

/// One server node.
struct Node {
    /// `host:port`.
    address: String,
    client: Client,
    connection: Option<redis::Connection>,
}

/// Every node the fleet's shards live on.
pub(crate) struct Link {
    /// The configured address: where a lost map is found again.
    seed: ConnectionInfo,
    timeout: Duration,
    /// Replicas each node's pipeline waits for, and for how long.
    wait: Option<(usize, Duration)>,
    nodes: Vec<Node>,
    /// The node (index into `nodes`) of each shard.
    shard_node: Vec<usize>,
    /// The cluster slot of each shard (all 0 on a standalone server).
    shard_slot: Vec<u16>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<&str> = self
            .nodes
            .iter()
            .map(|node| node.address.as_str())
            .collect();
        f.debug_struct("Link")
            .field("nodes", &nodes)
            .field("shard_node", &self.shard_node)
            .finish()
    }
}

fn address_of(info: &ConnectionInfo) -> String {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        other => other.to_string(),
    }
}

/// A refusal from the server, sorted into the fleet's errors.
fn refusal(node: &str, key: &str, error: &redis::RedisError) -> Error {
    let text = error.to_string();
    let code = error.code().unwrap_or_default();
    if code == "WRONGTYPE" || text.contains("WRONGTYPE") {
        Error::WrongKeyType {
            key: key.to_string(),
        }
    } else if text.contains("nknown command") || text.contains("nknown Redis command") {
        Error::ModuleMissing {
            node: node.to_string(),
        }
    } else {
        Error::ServerRefused {
            node: node.to_string(),
            message: text,
        }
    }
}

fn classify(node: &str, key: &str, error: &redis::RedisError) -> Failure {
    let code = error.code().unwrap_or_default();
    if code == "MOVED"
        || code == "ASK"
        || code == "CLUSTERDOWN"
        || code == "TRYAGAIN"
        || code == "NOSCRIPT"
    {
        // An `ASK` that gets here is one the asked node bounced again; a
        // `NOSCRIPT` comes from a node that restarted or was promoted:
        // mapping the nodes again loads the scripts there.
        Failure::Moved
    } else if error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
        || code == "LOADING"
        || code == "MASTERDOWN"
    {
        Failure::Unreachable {
            node: node.to_string(),
            reason: error.to_string(),
        }
    } else {
        Failure::Refused(refusal(node, key, error))
    }
}

/// The node's connection, opened if it is not.
fn open(node: &mut Node, timeout: Duration) -> Result<&mut redis::Connection, Failure> {
    if node.connection.is_none() {
        let address = &node.address;
        let unreachable = |error: redis::RedisError| Failure::Unreachable {
            node: address.clone(),
            reason: error.to_string(),
        };
        let connection = node
            .client
            .get_connection_with_timeout(timeout)
            .map_err(unreachable)?;
        connection
            .set_read_timeout(Some(timeout))
            .and_then(|()| connection.set_write_timeout(Some(timeout)))
            .map_err(unreachable)?;
        node.connection = Some(connection);
    }
    Ok(node.connection.as_mut().expect("opened above"))
}

impl Link {
    /// Connects to `url` and maps the shards of `keys` to nodes.
    ///
    /// # Errors
    ///
    /// `InvalidFleetConfig` for a URL the client cannot parse,
    /// `ServerUnavailable` when no node answers, `ModuleMissing` when a node
    /// has no `BF.INSERT`.
    pub(crate) fn connect(
        url: &str,
        timeout: Duration,
        wait: Option<(usize, Duration)>,
        keys: &[ShardKeys],
    ) -> Result<Link, Error> {
        let client = Client::open(url).map_err(|_| Error::InvalidFleetConfig {
            setting: "url",
            expected: "a redis:// URL such as redis://127.0.0.1:6379/",
        })?;
        let seed = client.get_connection_info().clone();
        let mut link = Link {
            seed,
            timeout,
            wait,
            nodes: Vec::new(),
            shard_node: Vec::new(),
            shard_slot: keys.iter().map(|shard| keys::slot(&shard.tag)).collect(),
        };
        link.map().map_err(Failure::into_error)?;
        Ok(link)
    }

    /// The node that holds `shard`.
    pub(crate) fn node_of(&self, shard: usize) -> &str {
        &self.nodes[self.shard_node[shard]].address
    }

    fn node_client(&self, address: &str, host: &str, port: u16) -> Result<Client, Failure> {
        let info = self
            .seed
            .clone()
            .set_addr(ConnectionAddr::Tcp(host.to_string(), port));
        Client::open(info).map_err(|error| Failure::Unreachable {
            node: address.to_string(),
            reason: error.to_string(),
        })
    }

    /// Finds the nodes again: the configured one, and the cluster's if it
    /// is one. Checks each has the module.
    fn map(&mut self) -> Result<(), Failure> {
        // The configured address first, then every node known from the
        // last map: a cluster whose configured node died is still found.
        let mut candidates = vec![(address_of(&self.seed), Client::open(self.seed.clone()))];
        for node in &self.nodes {
            if candidates
                .iter()
                .all(|(address, _)| *address != node.address)
            {
                candidates.push((node.address.clone(), Ok(node.client.clone())));
            }
        }
        let mut last_failure = None;
        let mut found = None;
        for (address, client) in candidates {
            let mut node = match client {
                Ok(client) => Node {
                    address,
                    client,
                    connection: None,
                },
                Err(error) => {
                    last_failure = Some(Failure::Unreachable {
                        node: address,
                        reason: error.to_string(),
                    });
                    continue;
                }
            };
            let name = node.address.clone();
            let answer = open(&mut node, self.timeout).and_then(|connection| {
                redis::cmd("INFO")
                    .arg("cluster")
                    .query::<String>(connection)
                    .map_err(|error| classify(&name, "", &error))
            });
            match answer {
                Ok(info) => {
                    found = Some((node, info));
                    break;
                }
                Err(failure) => last_failure = Some(failure),
            }
        }
        let Some((mut seed, info)) = found else {
            return Err(last_failure.expect("at least the configured address was tried"));
        };
        let seed_address = seed.address.clone();
        let connection = open(&mut seed, self.timeout)?;
        let mut nodes = Vec::new();
        let mut shard_node = vec![0; self.shard_slot.len()];
        if info.contains("cluster_enabled:1") {
            let ranges: Vec<(i64, i64, Vec<Value>)> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(connection)
                .map_err(|error| classify(&seed_address, "", &error))?;
            for (shard, &slot) in self.shard_slot.iter().enumerate() {
                let owner = ranges
                    .iter()
                    .find(|(low, high, _)| (*low..=*high).contains(&i64::from(slot)));
                let Some((_, _, primary)) = owner else {
                    return Err(Failure::Unreachable {
                        node: seed_address,
                        reason: format!("no node serves slot {slot}: the cluster is not ready"),
                    });
                };
                let (host, port) = match primary.as_slice() {
                    [Value::BulkString(host), Value::Int(port), ..] => {
                        (String::from_utf8_lossy(host).into_owned(), *port as u16)
                    }
                    _ => return Err(Failure::Moved),
                };
                let address = format!("{host}:{port}");
                let index = match nodes.iter().position(|node: &Node| node.address == address) {
                    Some(index) => index,
                    None => {
                        let client = self.node_client(&address, &host, port)?;
                        nodes.push(Node {
                            address,
                            client,
                            connection: None,
                        });
                        nodes.len() - 1
                    }
                };
                shard_node[shard] = index;
            }
        } else {
            nodes.push(seed);
        }
        for node in &mut nodes {
            let address = node.address.clone();
            let connection = open(node, self.timeout)?;
            let found: Value = redis::cmd("COMMAND")
                .arg("INFO")
                .arg("BF.INSERT")
                .query(connection)
                .map_err(|error| classify(&address, "", &error))?;
            let missing = match &found {
                Value::Array(entries) => entries.iter().all(|entry| *entry == Value::Nil),
                _ => true,
            };
            if missing {
                return Err(Failure::Refused(Error::ModuleMissing { node: address }));
            }
            warn_if_evicting(&address, connection);
            let mut load = redis::pipe();
            for script in scripts::Scripts::get().all() {
                load.add_command(script.load()).ignore();
            }
            load.query::<()>(connection)
                .map_err(|error| classify(&address, "", &error))?;
        }
        self.nodes = nodes;
        self.shard_node = shard_node;
        Ok(())
    }

    /// Runs `commands` (each for a shard, naming a key for errors), one
    /// pipeline per node, and returns their replies in order. On a failure
    /// that leaves some replies unknown, drops the node's connection (the
    /// next call reconnects) or maps the cluster again.
    pub(crate) fn run(&mut self, commands: &[(usize, String, Cmd)]) -> Result<Vec<Value>, Failure> {
        let result = self.run_mapped(commands);
        if let Err(Failure::Moved | Failure::Unreachable { .. }) = &result {
            // A map that fails now is found again by the next call.
            if self.map().is_err() {
                for node in &mut self.nodes {
                    node.connection = None;
                }
            }
        }
        result
    }

    fn run_mapped(&mut self, commands: &[(usize, String, Cmd)]) -> Result<Vec<Value>, Failure> {
        let mut replies = vec![Value::Nil; commands.len()];
        let mut asked = Vec::new();
        for node_index in 0..self.nodes.len() {
            let mine: Vec<usize> = (0..commands.len())
                .filter(|&at| self.shard_node[commands[at].0] == node_index)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut pipeline = redis::pipe();
            // Each reply comes back as it is, a server error included, so
            // that an error names its own command's key.
            pipeline.ignore_errors();
            for &at in &mine {
                pipeline.add_command(commands[at].2.clone());
            }
            if let Some((replicas, timeout)) = self.wait {
                pipeline
                    .cmd("WAIT")
                    .arg(replicas)
                    .arg(timeout.as_millis() as u64);
            }
            let timeout = self.timeout;
            let node = &mut self.nodes[node_index];
            let address = node.address.clone();
            let connection = open(node, timeout)?;
            let mut answer = match pipeline.query::<Vec<Value>>(connection) {
                Ok(answer) => answer,
                Err(error) => {
                    // What the connection held is unknown: open a new one.
                    node.connection = None;
                    return Err(classify(&address, &commands[mine[0]].1, &error));
                }
            };
            if let Some((replicas, _)) = self.wait {
                let acknowledged = match answer.pop() {
                    Some(Value::Int(count)) => count,
                    _ => 0,
                };
                if acknowledged < replicas as i64 {
                    return Err(Failure::Unreachable {
                        node: address,
                        reason: format!(
                            "{acknowledged} of the {replicas} replicas asked for acknowledged \
                             the writes in time"
                        ),
                    });
                }
            }
            for (&at, reply) in mine.iter().zip(answer) {
                if let Value::ServerError(error) = &reply {
                    if let ("ASK", Some(target)) = (error.code(), error.details()) {
                        asked.push((at, target.to_string()));
                        continue;
                    }
                    let error = redis::RedisError::from(error.clone());
                    return Err(classify(&address, &commands[at].1, &error));
                }
                replies[at] = reply;
            }
        }
        for (at, target) in asked {
            replies[at] = self.ask(&target, &commands[at])?;
        }
        Ok(replies)
    }

    /// Runs `command` on the node a slot is migrating to (`ASK slot
    /// host:port`), after `ASKING`, as a cluster asks a client to.
    fn ask(&self, target: &str, command: &(usize, String, Cmd)) -> Result<Value, Failure> {
        let (key, cmd) = (&command.1, &command.2);
        let address = target
            .split_whitespace()
            .last()
            .unwrap_or(target)
            .to_string();
        let (host, port) = address
            .rsplit_once(':')
            .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
            .ok_or(Failure::Moved)?;
        let mut node = Node {
            address: address.clone(),
            client: self.node_client(&address, host, port)?,
            connection: None,
        };
        let connection = open(&mut node, self.timeout)?;
        let mut pipeline = redis::pipe();
        pipeline.cmd("ASKING").ignore().add_command(cmd.clone());
        let (reply,): (Value,) = pipeline
            .query(connection)
            .map_err(|error| classify(&address, key, &error))?;
        Ok(reply)
    }
}

/// Logs a warning when `connection`'s node may evict the fleet's keys: a
/// filter or queue evicted loses items, a batch's answer evicted makes a
/// batch sent again run twice. Nodes whose ACL refuses `CONFIG` are
/// passed over.
fn warn_if_evicting(address: &str, connection: &mut redis::Connection) {
    let policy: Result<Vec<String>, _> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(connection);
    if let Ok([_, policy]) = policy.as_deref() {
        if policy != "noeviction" {
            log::warn!(
                "atomic-bloom fleet: {address} has maxmemory-policy {policy}, which may evict \
                 the fleet's keys and lose queued URLs: set it to noeviction"
            );
        }
    }
}
