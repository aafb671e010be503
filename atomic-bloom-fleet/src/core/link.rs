//! The nodes of a fleet client: one connection per server node (the
//! driver's), each shard routed to the node that owns its slot, every call
//! one pipeline per node.
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

use crate::sync::Arc;
use std::collections::HashSet;
use std::time::Duration;

use redis::{Cmd, Value};

use super::call::{Pipeline, Port};
use super::durability::Durability;
use super::failure::{classify, Failure};
use super::keys::{self, FleetKeys, ShardKeys};
use super::scripts;
use super::setup::{check_prepared, command_info, has_command, parse_url};
use crate::Error;

/// One server node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// `host:port`.
    pub(crate) address: String,
    host: String,
    port: u16,
}

impl Node {
    pub(super) fn new(host: &str, port: u16) -> Node {
        Node {
            address: format!("{host}:{port}"),
            host: host.to_string(),
            port,
        }
    }

    /// `host:port` as an `ASK` or a `MOVED` names it.
    fn parse(address: &str) -> Option<Node> {
        let (host, port) = address.rsplit_once(':')?;
        Some(Node::new(host, port.parse().ok()?))
    }
}

/// A pipeline's replies to its own commands, and the failure that cut them
/// short (a lost connection, a refused set-up).
type Exchanged = (Vec<Value>, Option<Failure>);

/// Every node the fleet's shards live on.
#[derive(Debug)]
pub(crate) struct Link {
    /// Where this link's calls ask for I/O.
    pub(crate) port: Arc<Port>,
    /// The configured address: where a lost map is found again.
    seed: Node,
    /// What a new connection sends first (`AUTH`, `SELECT`, from the URL).
    setup: Vec<Cmd>,
    timeout: Duration,
    /// What each node's pipeline waits for after its writes.
    durability: Durability,
    nodes: Vec<Node>,
    /// The node (index into `nodes`) of each route: the shards, then the
    /// fleet's own keys.
    shard_node: Vec<usize>,
    /// The cluster slot of each route.
    shard_slot: Vec<u16>,
    /// Each route's mark: the write a pipeline makes before its waits.
    marks: Vec<String>,
    /// Nodes whose connection the driver holds, set up.
    connected: HashSet<String>,
}

impl Link {
    /// A link to `url`, not mapped yet ([`map`](Self::map) does): routes for
    /// the shards of `keys`, then the fleet's own keys under `fleet_tag`
    /// (route `keys.len()`); `known` nodes (another link's
    /// [`nodes`](Self::nodes)) are tried when the configured one does not
    /// answer.
    ///
    /// # Errors
    ///
    /// `InvalidFleetConfig` for a URL this client cannot use.
    pub(crate) fn new(
        url: &str,
        timeout: Duration,
        durability: Durability,
        (keys, fleet): (&[ShardKeys], &FleetKeys),
        known: Vec<Node>,
    ) -> Result<Link, Error> {
        let (seed, setup) = parse_url(url)?;
        Ok(Link {
            port: Arc::default(),
            seed,
            setup,
            timeout,
            durability,
            nodes: known,
            shard_node: Vec::new(),
            shard_slot: (keys.iter().map(|shard| keys::slot(&shard.tag)))
                .chain([keys::slot(&fleet.tag)])
                .collect(),
            marks: (keys.iter().map(|shard| shard.mark.clone()))
                .chain([fleet.mark.clone()])
                .collect(),
            connected: HashSet::new(),
        })
    }

    /// Every node known: what another link falls back on.
    pub(crate) fn nodes(&self) -> Vec<Node> {
        self.nodes.clone()
    }

    /// Whether the nodes were mapped.
    pub(crate) fn is_mapped(&self) -> bool {
        !self.shard_node.is_empty()
    }

    /// The node that holds route `shard`.
    pub(crate) fn node_of(&self, shard: usize) -> &str {
        self.shard_node
            .get(shard)
            .map_or(self.seed.address.as_str(), |&node| {
                self.nodes[node].address.as_str()
            })
    }

    /// Runs one round: each entry's commands on its node (on a connection of
    /// its own if `one_off`), after the set-up of a new connection.
    async fn exchange(&mut self, work: Vec<(Node, Vec<Cmd>, bool)>) -> Vec<Exchanged> {
        let mut pipelines = Vec::with_capacity(work.len());
        let mut sent = Vec::with_capacity(work.len());
        for (node, commands, one_off) in work {
            let connect = one_off || !self.connected.contains(&node.address);
            let mut pipeline = redis::pipe();
            let setup = if connect { self.setup.len() } else { 0 };
            for command in self.setup.iter().take(setup) {
                pipeline.add_command(command.clone());
            }
            let replies = setup + commands.len();
            for command in commands {
                pipeline.add_command(command);
            }
            pipelines.push(Pipeline {
                address: node.address.clone(),
                host: node.host.clone(),
                port: node.port,
                connect,
                one_off,
                bytes: pipeline.get_packed_pipeline(),
                replies,
                timeout: self.timeout,
            });
            sent.push((node, one_off, setup));
        }
        let received = self.port.round(pipelines).await;
        let mut exchanged = Vec::with_capacity(sent.len());
        for ((node, one_off, setup), received) in sent.into_iter().zip(received) {
            let mut replies = received.replies;
            let mut failure = received.lost.map(|reason| Failure::Unreachable {
                node: node.address.clone(),
                reason,
            });
            let set_up: Vec<Value> = replies.drain(..setup.min(replies.len())).collect();
            if let Some(Value::ServerError(error)) =
                (set_up.iter()).find(|reply| matches!(reply, Value::ServerError(_)))
            {
                failure = Some(classify(&node.address, "", &error.clone().into()));
                replies.clear();
            }
            if !one_off {
                if failure.is_none() {
                    self.connected.insert(node.address.clone());
                } else {
                    self.connected.remove(&node.address);
                }
            }
            exchanged.push((replies, failure));
        }
        exchanged
    }

    /// Finds the nodes again: the configured one, and the cluster's if it
    /// is one. Checks each has the module and loads the scripts there.
    pub(crate) async fn map(&mut self) -> Result<(), Failure> {
        // The configured address first, then every node known from the
        // last map: a cluster whose configured node died is still found.
        let mut candidates = vec![self.seed.clone()];
        for node in &self.nodes {
            if !candidates.contains(node) {
                candidates.push(node.clone());
            }
        }
        let mut last_failure = None;
        let mut found = None;
        for candidate in candidates {
            let mut slots = redis::cmd("CLUSTER");
            slots.arg("SLOTS");
            let commands = vec![redis::cmd("INFO").arg("cluster").clone(), slots];
            let [(replies, failure)]: [Exchanged; 1] = (self
                .exchange(vec![(candidate.clone(), commands, false)])
                .await)
                .try_into()
                .expect("one pipeline, one outcome");
            match (replies.first(), failure) {
                (_, Some(failure)) => last_failure = Some(failure),
                (Some(Value::ServerError(error)), None) => {
                    last_failure = Some(classify(&candidate.address, "", &error.clone().into()))
                }
                (Some(Value::BulkString(info)), None) => {
                    let cluster = String::from_utf8_lossy(info).contains("cluster_enabled:1");
                    found = Some((candidate, cluster.then(|| replies.into_iter().nth(1))));
                    break;
                }
                (other, None) => {
                    last_failure = Some(Failure::Stale {
                        node: candidate.address.clone(),
                        reason: format!("INFO cluster answered {other:?}"),
                    })
                }
            }
        }
        let Some((seed, slots)) = found else {
            return Err(last_failure.expect("at least the configured address was tried"));
        };
        let (nodes, shard_node) = match slots {
            None => (vec![seed], vec![0; self.shard_slot.len()]),
            Some(slots) => self.routes(&seed.address, slots)?,
        };
        self.prepare(&nodes).await?;
        self.nodes = nodes;
        self.shard_node = shard_node;
        Ok(())
    }

    /// The primaries and each route's, from a `CLUSTER SLOTS` reply.
    fn routes(&self, seed: &str, slots: Option<Value>) -> Result<(Vec<Node>, Vec<usize>), Failure> {
        let ranges = match slots {
            Some(Value::Array(ranges)) => ranges,
            Some(Value::ServerError(error)) => return Err(classify(seed, "", &error.into())),
            other => {
                return Err(Failure::Stale {
                    node: seed.to_string(),
                    reason: format!("CLUSTER SLOTS answered {other:?}"),
                })
            }
        };
        // Each range is [first, last, primary, replicas...]: as many
        // entries as the range has replicas, so read it loosely.
        let ranges: Vec<(i64, i64, &[Value])> = (ranges.iter())
            .filter_map(|range| match range {
                Value::Array(range) => match range.as_slice() {
                    [Value::Int(first), Value::Int(last), Value::Array(primary), ..] => {
                        Some((*first, *last, primary.as_slice()))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let mut nodes: Vec<Node> = Vec::new();
        let mut shard_node = Vec::with_capacity(self.shard_slot.len());
        for &slot in &self.shard_slot {
            let owner = ranges
                .iter()
                .find(|(low, high, _)| (*low..=*high).contains(&i64::from(slot)));
            let Some((_, _, primary)) = owner else {
                return Err(Failure::Unreachable {
                    node: seed.to_string(),
                    reason: format!("no node serves slot {slot}: the cluster is not ready"),
                });
            };
            let node = match primary {
                [Value::BulkString(host), Value::Int(port), ..] => {
                    Node::new(&String::from_utf8_lossy(host), *port as u16)
                }
                other => {
                    return Err(Failure::Stale {
                        node: seed.to_string(),
                        reason: format!("CLUSTER SLOTS named a node as {other:?}"),
                    })
                }
            };
            let index = match nodes.iter().position(|known| *known == node) {
                Some(index) => index,
                None => {
                    nodes.push(node);
                    nodes.len() - 1
                }
            };
            shard_node.push(index);
        }
        Ok((nodes, shard_node))
    }

    /// Checks each of `nodes` has the module (and `WAITAOF`, when asked to
    /// wait for it), warns about an eviction policy, and loads the fleet's
    /// scripts there, in one round. A node that cannot be reached now fails
    /// its own commands later, not the map.
    async fn prepare(&mut self, nodes: &[Node]) -> Result<(), Failure> {
        let mut commands = vec![command_info("BF.INSERT"), command_info("WAITAOF")];
        commands.push(
            redis::cmd("CONFIG")
                .arg("GET")
                .arg("maxmemory-policy")
                .clone(),
        );
        commands.extend(scripts::Scripts::get().all().map(scripts::Script::load));
        let work = (nodes.iter())
            .map(|node| (node.clone(), commands.clone(), false))
            .collect();
        for (node, (replies, failure)) in nodes.iter().zip(self.exchange(work).await) {
            let address = &node.address;
            let checked = match failure {
                Some(failure) => Err(failure),
                None => check_prepared(address, &replies, self.durability),
            };
            match checked {
                Ok(()) => {}
                Err(Failure::Refused(error)) => return Err(Failure::Refused(error)),
                Err(failure) => {
                    log::warn!("atomic-bloom fleet: {}", failure.into_error());
                    self.connected.remove(address);
                }
            }
        }
        Ok(())
    }

    /// Maps the nodes again, after a failure that may mean the map is
    /// stale; a map that fails now is tried again by the next call, on new
    /// connections.
    pub(crate) async fn map_again(&mut self) {
        if self.map().await.is_err() {
            self.connected.clear();
        }
    }

    /// Runs `commands` (each for a route, naming a key for errors): one
    /// pipeline per node, every pipeline written before any is read. Each
    /// command gets its own outcome, in order.
    pub(crate) async fn send(
        &mut self,
        commands: &[(usize, String, Cmd)],
    ) -> Vec<Result<Value, Failure>> {
        let mut outcomes: Vec<Option<Result<Value, Failure>>> =
            (0..commands.len()).map(|_| None).collect();
        let mut work = Vec::new();
        let mut groups = Vec::new();
        for (index, node) in self.nodes.iter().enumerate() {
            let mine: Vec<usize> = (0..commands.len())
                .filter(|&at| self.shard_node.get(commands[at].0) == Some(&index))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut pipeline: Vec<Cmd> = mine.iter().map(|&at| commands[at].2.clone()).collect();
            self.durability
                .append(&mut pipeline, &self.marks[commands[mine[0]].0]);
            work.push((node.clone(), pipeline, false));
            groups.push(mine);
        }
        let exchanged = self.exchange(work).await;
        // Commands for no node (nothing mapped yet): the node is sought again.
        for outcome in outcomes.iter_mut().filter(|outcome| outcome.is_none()) {
            *outcome = Some(Err(Failure::Unreachable {
                node: self.seed.address.clone(),
                reason: "the nodes are not mapped yet".into(),
            }));
        }
        let mut asked = Vec::new();
        let mut refused_nodes = Vec::new();
        for (mine, (replies, lost)) in groups.into_iter().zip(exchanged) {
            let address = &self.nodes[self.shard_node[commands[mine[0]].0]].address;
            let refused = self.receive(
                address,
                &mine,
                commands,
                replies,
                lost,
                &mut outcomes,
                &mut asked,
            );
            if refused {
                refused_nodes.push((self.shard_node[commands[mine[0]].0], mine));
            }
        }
        if !asked.is_empty() {
            for ((at, _), outcome) in asked.iter().zip(self.ask(&asked, commands).await) {
                outcomes[*at] = Some(outcome);
            }
        }
        if !refused_nodes.is_empty() {
            self.refusals_from_a_lost_module(refused_nodes, &mut outcomes)
                .await;
        }
        outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every command has an outcome"))
            .collect()
    }

    /// Sorts the replies of the pipeline `address` got for the commands
    /// `mine`: each command's own, or, with waits on, a failure for all of
    /// them when the writes did not get where they were asked to be.
    /// Answers whether the node refused any.
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &self,
        address: &str,
        mine: &[usize],
        commands: &[(usize, String, Cmd)],
        replies: Vec<Value>,
        lost: Option<Failure>,
        outcomes: &mut [Option<Result<Value, Failure>>],
        asked: &mut Vec<(usize, Node)>,
    ) -> bool {
        if let (Some(failure), true) = (&lost, self.durability.replies() > 0) {
            // The writes may have run and not reached the replicas.
            for &at in mine {
                outcomes[at] = Some(Err(failure.clone()));
            }
            return false;
        }
        let mut refused = false;
        for (position, &at) in mine.iter().enumerate() {
            outcomes[at] = Some(match replies.get(position) {
                Some(Value::ServerError(error)) => {
                    let target = error.details().and_then(|details| {
                        Node::parse(details.split_whitespace().last().unwrap_or(details))
                    });
                    if let ("ASK", Some(target)) = (error.code(), target) {
                        asked.push((at, target));
                        continue;
                    }
                    let failure = classify(address, &commands[at].1, &error.clone().into());
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
            (replies.get(mine.len()..)).and_then(|waits| self.durability.check(address, waits))
        {
            for &at in mine {
                if let Some(Ok(_)) = outcomes[at] {
                    outcomes[at] = Some(Err(failure.clone()));
                }
            }
        }
        refused
    }

    /// Turns refusals from `refused` nodes into [`Error::ModuleMissing`]
    /// when the node has no `BF.INSERT` (it restarted without the module).
    async fn refusals_from_a_lost_module(
        &mut self,
        refused: Vec<(usize, Vec<usize>)>,
        outcomes: &mut [Option<Result<Value, Failure>>],
    ) {
        let work = (refused.iter())
            .map(|(node, _)| {
                (
                    self.nodes[*node].clone(),
                    vec![command_info("BF.INSERT")],
                    false,
                )
            })
            .collect();
        for ((node, mine), (replies, failure)) in refused.iter().zip(self.exchange(work).await) {
            if failure.is_some() || has_command(replies.first()) {
                continue;
            }
            for &at in mine {
                if let Some(Err(Failure::Refused(_))) = outcomes[at] {
                    outcomes[at] = Some(Err(Failure::Refused(Error::ModuleMissing {
                        node: self.nodes[*node].address.clone(),
                    })));
                }
            }
        }
    }

    /// Runs each `asked` command on the node its slot is migrating to
    /// (`ASK slot host:port`), after `ASKING`, as a cluster asks a client
    /// to: one round, a connection of its own each.
    async fn ask(
        &mut self,
        asked: &[(usize, Node)],
        commands: &[(usize, String, Cmd)],
    ) -> Vec<Result<Value, Failure>> {
        // The node the slot moves to may own no slot yet, so no map loaded
        // the scripts there.
        let loads: Vec<Cmd> = (scripts::Scripts::get().all().into_iter())
            .map(scripts::Script::load)
            .collect();
        let before = loads.len() + 1;
        let work = (asked.iter())
            .map(|(at, target)| {
                let mut pipeline = loads.clone();
                pipeline.push(redis::cmd("ASKING"));
                pipeline.push(commands[*at].2.clone());
                // The same waits as any pipeline: a write answered through
                // ASK is as easily undone by a failover as any other. The
                // write before them is in the command's slot: ASKING again.
                if self.durability.waits() {
                    pipeline.push(redis::cmd("ASKING"));
                }
                self.durability
                    .append(&mut pipeline, &self.marks[commands[*at].0]);
                (target.clone(), pipeline, true)
            })
            .collect();
        let exchanged = self.exchange(work).await;
        (asked.iter().zip(exchanged))
            .map(|((at, target), (replies, lost))| {
                let (address, key) = (&target.address, &commands[*at].1);
                if let Some(failure) = lost {
                    return Err(failure);
                }
                let waits = before + 1 + usize::from(self.durability.waits());
                if let Some(failure) = self.durability.check(address, &replies[waits..]) {
                    return Err(failure);
                }
                match &replies[before] {
                    Value::ServerError(error) => Err(classify(address, key, &error.clone().into())),
                    reply => Ok(reply.clone()),
                }
            })
            .collect()
    }
}
