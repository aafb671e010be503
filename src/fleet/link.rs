//! The connections of a fleet client: one per server node, each shard
//! routed to the node that owns its slot, every call one pipeline per node.
//!
//! A standalone server is a fleet of one node. A cluster is found by
//! `INFO cluster` on the configured address, and mapped with `CLUSTER
//! SLOTS`; the caller maps it again after a `MOVED` or a node that cannot
//! be reached, and an `ASK` is answered here, with `ASKING` on the node
//! the slot is migrating to. Every node's pipeline is written before any
//! is read, so a call over three nodes is one round trip, and each command
//! gets its own outcome, so one failing node fails only its own commands.
//! Routing here rather than through the `redis` crate's cluster connection
//! keeps one pipeline per node and lets every error name the node that
//! failed.

use std::time::Duration;

use redis::{Client, Cmd, ConnectionAddr, ConnectionInfo, Value};

use super::durability::Durability;
use super::failure::{classify, Failure};
use super::keys::{self, ShardKeys};
use super::scripts;
use crate::Error;

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
    /// What each node's pipeline waits for after its writes.
    durability: Durability,
    nodes: Vec<Node>,
    /// The node (index into `nodes`) of each route: the shards, then the
    /// fleet's own keys.
    shard_node: Vec<usize>,
    /// The cluster slot of each route.
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
    /// Connects to `url` and maps the routes to nodes: the shards of `keys`,
    /// then the fleet's own keys under `fleet_tag` (route `keys.len()`).
    ///
    /// # Errors
    ///
    /// `InvalidFleetConfig` for a URL the client cannot parse,
    /// `ServerUnavailable` when no node answers, `ModuleMissing` when a node
    /// has no `BF.INSERT`.
    pub(crate) fn connect(
        url: &str,
        timeout: Duration,
        durability: Durability,
        keys: &[ShardKeys],
        fleet_tag: &str,
    ) -> Result<Link, Error> {
        Link::connect_knowing(url, Vec::new(), timeout, durability, keys, fleet_tag)
    }

    /// As [`connect`](Self::connect), trying `known` nodes (another link's
    /// [`known_nodes`](Self::known_nodes)) when the configured one does not
    /// answer: the heartbeat's own connections, opened at its first beat,
    /// find the cluster although the configured node died since connect.
    pub(crate) fn connect_knowing(
        url: &str,
        known: Vec<(String, Client)>,
        timeout: Duration,
        durability: Durability,
        keys: &[ShardKeys],
        fleet_tag: &str,
    ) -> Result<Link, Error> {
        let client = Client::open(url).map_err(|_| Error::InvalidFleetConfig {
            setting: "url",
            expected: "a redis:// URL such as redis://127.0.0.1:6379/",
        })?;
        let seed = client.get_connection_info().clone();
        let mut link = Link {
            seed,
            timeout,
            durability,
            nodes: (known.into_iter())
                .map(|(address, client)| Node {
                    address,
                    client,
                    connection: None,
                })
                .collect(),
            shard_node: Vec::new(),
            shard_slot: (keys.iter().map(|shard| keys::slot(&shard.tag)))
                .chain([keys::slot(fleet_tag)])
                .collect(),
        };
        link.map().map_err(Failure::into_error)?;
        Ok(link)
    }

    /// Every node's address and client (no connection): what another link
    /// falls back on.
    pub(crate) fn known_nodes(&self) -> Vec<(String, Client)> {
        (self.nodes.iter())
            .map(|node| (node.address.clone(), node.client.clone()))
            .collect()
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
            // Each range is [first, last, primary, replicas...]: as many
            // entries as the range has replicas, so read it loosely.
            let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(connection)
                .map_err(|error| classify(&seed_address, "", &error))?;
            let ranges: Vec<(i64, i64, Vec<Value>)> = (ranges.into_iter())
                .filter_map(|range| match range.as_slice() {
                    [Value::Int(first), Value::Int(last), Value::Array(primary), ..] => {
                        Some((*first, *last, primary.clone()))
                    }
                    _ => None,
                })
                .collect();
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
                    other => {
                        return Err(Failure::Stale {
                            node: seed_address,
                            reason: format!("CLUSTER SLOTS named a node as {other:?}"),
                        })
                    }
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
            // A node known before keeps its connection; the scripts are
            // loaded again all the same (a `NOSCRIPT` brought us here).
            let known = (self.nodes.iter_mut())
                .find(|old| old.address == node.address && old.connection.is_some());
            if let Some(old) = known {
                node.connection = old.connection.take();
            }
            match prepare(node, self.timeout, self.durability) {
                Ok(()) => {}
                Err(Failure::Refused(error)) => return Err(Failure::Refused(error)),
                // A node down now fails its own commands, not the map.
                Err(failure) => {
                    log::warn!("atomic-bloom fleet: {}", failure.into_error());
                    node.connection = None;
                }
            }
        }
        self.nodes = nodes;
        self.shard_node = shard_node;
        Ok(())
    }

    /// Maps the nodes again, after a failure that may mean the map is
    /// stale; a map that fails now is tried again by the next call.
    pub(crate) fn map_again(&mut self) {
        if self.map().is_err() {
            for node in &mut self.nodes {
                node.connection = None;
            }
        }
    }

    /// Runs `commands` (each for a shard, naming a key for errors): one
    /// pipeline per node, every pipeline written before any is read. Each
    /// command gets its own outcome, in order.
    pub(crate) fn send(
        &mut self,
        commands: &[(usize, String, Cmd)],
    ) -> Vec<Result<Value, Failure>> {
        let mut outcomes: Vec<Option<Result<Value, Failure>>> =
            (0..commands.len()).map(|_| None).collect();
        let mut written = Vec::new();
        for node_index in 0..self.nodes.len() {
            let mine: Vec<usize> = (0..commands.len())
                .filter(|&at| self.shard_node[commands[at].0] == node_index)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut pipeline = redis::pipe();
            for &at in &mine {
                pipeline.add_command(commands[at].2.clone());
            }
            self.durability.append(&mut pipeline);
            let timeout = self.timeout;
            let node = &mut self.nodes[node_index];
            let address = node.address.clone();
            let key = &commands[mine[0]].1;
            let sent = open(node, timeout).and_then(|connection| {
                (connection.send_packed_command(&pipeline.get_packed_pipeline()))
                    .map_err(|error| classify(&address, key, &error))
            });
            match sent {
                Ok(()) => written.push((node_index, mine)),
                Err(failure) => {
                    node.connection = None;
                    for &at in &mine {
                        outcomes[at] = Some(Err(failure.clone()));
                    }
                }
            }
        }
        let mut asked = Vec::new();
        for (node_index, mine) in written {
            self.receive(node_index, &mine, commands, &mut outcomes, &mut asked);
        }
        for (at, target) in asked {
            outcomes[at] = Some(self.ask(&target, &commands[at]));
        }
        outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every command has an outcome"))
            .collect()
    }

    /// Reads the replies of the pipeline written to `node_index` for the
    /// commands `mine`: each command's own, or, with `WAIT` on, a failure
    /// for all of them when the replicas did not all take the writes.
    fn receive(
        &mut self,
        node_index: usize,
        mine: &[usize],
        commands: &[(usize, String, Cmd)],
        outcomes: &mut [Option<Result<Value, Failure>>],
        asked: &mut Vec<(usize, String)>,
    ) {
        let node = &mut self.nodes[node_index];
        let address = node.address.clone();
        let connection = node.connection.as_mut().expect("written above");
        let expected = mine.len() + self.durability.replies();
        let mut replies = Vec::with_capacity(expected);
        let mut lost = None;
        while replies.len() < expected {
            match connection.recv_response() {
                Ok(reply) => replies.push(reply),
                Err(error) => {
                    // What the connection holds is unknown: open a new one.
                    node.connection = None;
                    let key = &commands[mine[replies.len().min(mine.len() - 1)]].1;
                    lost = Some(classify(&address, key, &error));
                    break;
                }
            }
        }
        if let (Some(failure), true) = (&lost, self.durability.replies() > 0) {
            // The writes may have run and not reached the replicas.
            for &at in mine {
                outcomes[at] = Some(Err(failure.clone()));
            }
            return;
        }
        let mut refused = false;
        for (position, &at) in mine.iter().enumerate() {
            outcomes[at] = Some(match replies.get(position) {
                Some(Value::ServerError(error)) => {
                    if let ("ASK", Some(target)) = (error.code(), error.details()) {
                        asked.push((at, target.to_string()));
                        continue;
                    }
                    let failure = classify(&address, &commands[at].1, &error.clone().into());
                    refused |= matches!(failure, Failure::Refused(_));
                    Err(failure)
                }
                Some(reply) => Ok(reply.clone()),
                None => Err(lost
                    .clone()
                    .expect("a reply is missing only after a failure")),
            });
        }
        if let Some(failure) =
            (replies.get(mine.len()..)).and_then(|waits| self.durability.check(&address, waits))
        {
            for &at in mine {
                if let Some(Ok(_)) = outcomes[at] {
                    outcomes[at] = Some(Err(failure.clone()));
                }
            }
        }
        if refused {
            self.refusals_from_a_lost_module(node_index, mine, outcomes);
        }
    }

    /// Turns refusals from `node_index` into [`Error::ModuleMissing`] when
    /// the node has no `BF.INSERT` (it restarted without the module).
    fn refusals_from_a_lost_module(
        &mut self,
        node_index: usize,
        mine: &[usize],
        outcomes: &mut [Option<Result<Value, Failure>>],
    ) {
        let timeout = self.timeout;
        let node = &mut self.nodes[node_index];
        let Ok(connection) = open(node, timeout) else {
            return;
        };
        if let Ok(false) = has_command(connection, "BF.INSERT") {
            for &at in mine {
                if let Some(Err(Failure::Refused(_))) = outcomes[at] {
                    outcomes[at] = Some(Err(Failure::Refused(Error::ModuleMissing {
                        node: node.address.clone(),
                    })));
                }
            }
        }
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
            .ok_or_else(|| Failure::Stale {
                node: target.to_string(),
                reason: format!("an ASK named no address: {target}"),
            })?;
        let mut node = Node {
            address: address.clone(),
            client: self.node_client(&address, host, port)?,
            connection: None,
        };
        let connection = open(&mut node, self.timeout)?;
        // The node the slot moves to may own no slot yet, so no map loaded
        // the scripts there.
        let mut pipeline = redis::pipe();
        let mut before = 0;
        for script in scripts::Scripts::get().all() {
            pipeline.add_command(script.load());
            before += 1;
        }
        pipeline.cmd("ASKING").add_command(cmd.clone());
        before += 1;
        // The same waits as any pipeline: a write answered through ASK is
        // as easily undone by a failover as any other.
        self.durability.append(&mut pipeline);
        let expected = before + 1 + self.durability.replies();
        // Replies read one by one, as `send`'s are: a server error keeps
        // its code (`BUSY`, `NOREPLICAS`, `MISCONF`, which the redis crate
        // does not know and a pipeline's query turns into an untyped
        // error, so they were taken as refusals).
        connection
            .send_packed_command(&pipeline.get_packed_pipeline())
            .map_err(|error| classify(&address, key, &error))?;
        let mut replies = Vec::with_capacity(expected);
        while replies.len() < expected {
            match connection.recv_response() {
                Ok(reply) => replies.push(reply),
                Err(error) => {
                    node.connection = None;
                    return Err(classify(&address, key, &error));
                }
            }
        }
        let (reply, waits) = (&replies[before], &replies[before + 1..]);
        if let Some(failure) = self.durability.check(&address, waits) {
            return Err(failure);
        }
        match reply {
            Value::ServerError(error) => Err(classify(&address, key, &error.clone().into())),
            reply => Ok(reply.clone()),
        }
    }
}

/// Opens `node`'s connection, checks it has the module (and `WAITAOF`,
/// when asked to wait for it), warns about an eviction policy, and loads
/// the fleet's scripts there.
fn prepare(node: &mut Node, timeout: Duration, durability: Durability) -> Result<(), Failure> {
    let address = node.address.clone();
    let connection = open(node, timeout)?;
    let missing =
        !has_command(connection, "BF.INSERT").map_err(|error| classify(&address, "", &error))?;
    if missing {
        return Err(Failure::Refused(Error::ModuleMissing { node: address }));
    }
    if durability.aof.is_some()
        && !has_command(connection, "WAITAOF").map_err(|error| classify(&address, "", &error))?
    {
        return Err(Failure::Refused(Error::ServerRefused {
            node: address,
            message: "this server has no WAITAOF (Redis 7.2 and Valkey have it): turn \
                      wait_for_aof off, or upgrade it"
                .to_string(),
        }));
    }
    warn_if_evicting(&address, connection);
    let mut load = redis::pipe();
    for script in scripts::Scripts::get().all() {
        load.add_command(script.load()).ignore();
    }
    load.query::<()>(connection)
        .map_err(|error| classify(&address, "", &error))
}

/// Whether `connection`'s node has `command`.
fn has_command(
    connection: &mut redis::Connection,
    command: &str,
) -> Result<bool, redis::RedisError> {
    let found: Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg(command)
        .query(connection)?;
    Ok(match &found {
        Value::Array(entries) => entries.iter().any(|entry| *entry != Value::Nil),
        _ => false,
    })
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
