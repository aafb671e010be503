//! What a node must be before the fleet uses it: the connection's set-up
//! from the URL, the module (and `WAITAOF`) there, the scripts loaded, and
//! an eviction policy that keeps the fleet's keys.

use redis::{Cmd, ConnectionAddr, IntoConnectionInfo, Value};

use super::durability::Durability;
use super::failure::{classify, Failure};
use super::link::Node;
use crate::Error;

/// The set-up commands of `url`'s connections, and its node.
pub(super) fn parse_url(url: &str) -> Result<(Node, Vec<Cmd>), Error> {
    let invalid = || Error::InvalidFleetConfig {
        setting: "url",
        expected: "a redis:// URL such as redis://127.0.0.1:6379/ (TCP: no TLS, no unix socket)",
    };
    let info = url.into_connection_info().map_err(|_| invalid())?;
    let ConnectionAddr::Tcp(host, port) = info.addr() else {
        return Err(invalid());
    };
    let settings = info.redis_settings();
    let mut setup = Vec::new();
    if let Some(password) = settings.password() {
        let mut auth = redis::cmd("AUTH");
        if let Some(username) = settings.username() {
            auth.arg(username);
        }
        setup.push(auth.arg(password).clone());
    }
    if settings.db() != 0 {
        setup.push(redis::cmd("SELECT").arg(settings.db()).clone());
    }
    Ok((Node::new(host, *port), setup))
}

/// `COMMAND INFO command`.
pub(super) fn command_info(command: &str) -> Cmd {
    redis::cmd("COMMAND").arg("INFO").arg(command).clone()
}

/// Whether a `COMMAND INFO` reply names the command.
pub(super) fn has_command(reply: Option<&Value>) -> bool {
    match reply {
        Some(Value::Array(entries)) => entries.iter().any(|entry| *entry != Value::Nil),
        _ => false,
    }
}

/// What `prepare`'s replies say of the node at `address`: the module
/// there (and `WAITAOF`, if asked for), the scripts loaded.
pub(super) fn check_prepared(
    address: &str,
    replies: &[Value],
    durability: Durability,
) -> Result<(), Failure> {
    if let Some(Value::ServerError(error)) = replies.first() {
        return Err(classify(address, "", &error.clone().into()));
    }
    if !has_command(replies.first()) {
        return Err(Failure::Refused(Error::ModuleMissing {
            node: address.to_string(),
        }));
    }
    if durability.aof.is_some() && !has_command(replies.get(1)) {
        return Err(Failure::Refused(Error::ServerRefused {
            node: address.to_string(),
            message: "this server has no WAITAOF (Redis 7.2 and Valkey have it): turn \
                      wait_for_aof off, or upgrade it"
                .to_string(),
        }));
    }
    warn_if_evicting(address, replies.get(2));
    for reply in &replies[3.min(replies.len())..] {
        if let Value::ServerError(error) = reply {
            return Err(classify(address, "", &error.clone().into()));
        }
    }
    Ok(())
}

/// Logs a warning when the node at `address` may evict the fleet's keys
/// (its `CONFIG GET maxmemory-policy` reply): a filter or queue evicted
/// loses items, a batch's answer evicted makes a batch sent again run
/// twice. Nodes whose ACL refuses `CONFIG` are passed over.
fn warn_if_evicting(address: &str, reply: Option<&Value>) {
    if let Some(Value::Array(pair)) = reply {
        if let [_, Value::BulkString(policy)] = pair.as_slice() {
            let policy = String::from_utf8_lossy(policy);
            if policy != "noeviction" {
                log::warn!(
                    "atomic-bloom fleet: {address} has maxmemory-policy {policy}, which may \
                     evict the fleet's keys and lose queued URLs: set it to noeviction"
                );
            }
        }
    }
}
