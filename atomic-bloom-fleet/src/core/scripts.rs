//! The server-side scripts of a fleet, and the commands that run them.
//!
//! Every script may run twice for one intent (a reply lost, the request
//! sent again) and does what it did once:
//!
//! - an offer is idempotent by its result key, which keeps the answer
//!   until the client acknowledges it (`UNLINK`) or the result TTL ends;
//! - a take is idempotent by its lease token: a token still leased answers
//!   the URLs it holds instead of taking more;
//! - completing, renewing, and marking a client busy or idle are
//!   idempotent by nature.
//!
//! Times come from the server's clock (`TIME`), so the fleet's machines
//! need not agree on theirs. Leases are kept per shard, beside its queue,
//! one per take: an `inflight` hash (token -> the take's URLs, as JSON)
//! and a `leases` sorted set (token -> deadline in milliseconds). A lease
//! ends whole, once every URL of its take is done. Any script that reads
//! a shard's queue first puts the URLs of expired leases back at its head.

use redis::Cmd;

use super::keys::ShardKeys;

/// The server's clock in milliseconds, and the expired-lease reclaim that
/// every queue-reading script runs first. KEYS[1] queue, KEYS[2] inflight,
/// KEYS[3] leases.
const PRELUDE: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function in_chunks(command, key, values)
  for from = 1, #values, 1000 do
    redis.call(command, key, unpack(values, from, math.min(from + 999, #values)))
  end
end
local function reclaim()
  local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
  if #expired == 0 then return 0 end
  local back = {}
  for _, token in ipairs(expired) do
    local urls = redis.call('HGET', KEYS[2], token)
    if urls then
      for _, url in ipairs(cjson.decode(urls)) do back[#back + 1] = url end
    end
  end
  if #back > 0 then in_chunks('LPUSH', KEYS[1], back) end
  in_chunks('HDEL', KEYS[2], expired)
  in_chunks('ZREM', KEYS[3], expired)
  return #back
end
";

/// Offers a batch to a shard: `BF.INSERT` into its filter, `RPUSH` of the
/// items the filter did not hold onto its queue (when a queue key is
/// given), and the flags (`1` new, `0` seen) kept under the result key.
/// An item the filter refused (a full filter that cannot grow) is an
/// error naming the key, after the flags of the items before it are kept
/// and their new ones queued: the batch sent again resumes at the refused
/// item, so an item the first run added is still answered new (a script
/// sees the refusal as the whole reply's, so the items before it that the
/// filter holds count as new: an item held before such a refusal is
/// answered new, and queued, a second time). A
/// `BF.INSERT` refused as a whole is an error under its own code
/// (`WRONGTYPE`, `OOM`, ...), so that the client sorts it as it would the
/// bare reply.
///
/// KEYS: filter, result, [queue]. ARGV: capacity, error rate, TTL seconds,
/// expansion, items.
const OFFER: &str = r"
local done = redis.call('GET', KEYS[2]) or ''
local items = #ARGV - 4
if #done >= items then return done end
local first = 5 + #done
local command = {'BF.INSERT', KEYS[1], 'CAPACITY', ARGV[1], 'ERROR', ARGV[2],
  'EXPANSION', ARGV[4], 'ITEMS'}
for at = first, #ARGV do command[#command + 1] = ARGV[at] end
local added = redis.pcall(unpack(command))
if added.err then
  local code, rest = string.match(added.err, '^(%u+) (.*)$')
  if not code then code, rest = 'ERR', added.err end
  local err = added.err
  local per_item = string.find(err, 'full', 1, true)
    or string.find(err, 'bf-memory-limit', 1, true)
    or string.find(err, 'problem inserting', 1, true)
  if not per_item then
    return redis.error_reply(code .. ' BF.INSERT on ' .. KEYS[1] .. ' failed: ' .. rest)
  end
  -- A script sees an item's refusal as the whole reply's, though the
  -- items before it went in: those the filter holds now, up to the first
  -- it does not (the refused one). Whether each was new it cannot tell,
  -- so they count as new: queued and answered new once more at worst,
  -- rather than never.
  local present = redis.call('BF.MEXISTS', KEYS[1], unpack(ARGV, first, #ARGV))
  added = {}
  for at = 1, #present do
    if present[at] == 1 then
      added[at] = 1
    else
      added[at] = {err = err}
      break
    end
  end
end
local flags, fresh, refused = {}, {}, nil
for at = 1, #added do
  local answer = added[at]
  if answer == 1 then
    flags[at] = '1'
    fresh[#fresh + 1] = ARGV[first + at - 1]
  elseif answer == 0 then
    flags[at] = '0'
  else
    refused = (type(answer) == 'table' and answer.err) or tostring(answer)
    break
  end
end
if KEYS[3] and #fresh > 0 then
  for from = 1, #fresh, 1000 do
    redis.call('RPUSH', KEYS[3], unpack(fresh, from, math.min(from + 999, #fresh)))
  end
end
local result = done .. table.concat(flags)
if #result > #done then redis.call('SET', KEYS[2], result, 'EX', ARGV[3]) end
if refused then
  return redis.error_reply('FLEETITEM BF.INSERT on ' .. KEYS[1] .. ' refused an item: ' .. refused)
end
return result
";

/// Takes up to ARGV[1] URLs from the head of a shard's queue under the
/// lease token ARGV[3], leased for ARGV[2] milliseconds. A token still
/// leased is a take sent again: it answers the URLs it holds. The URLs
/// are read, leased, and only then trimmed off the queue: a server out of
/// memory refuses the lease (a script's first write) before anything left
/// the queue, so no URL is lost half-way.
///
/// KEYS: queue, inflight, leases.
const TAKE: &str = r"
reclaim()
local token = ARGV[3]
local held = redis.call('HGET', KEYS[2], token)
if held then
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), token)
  return cjson.decode(held)
end
local taken = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #taken == 0 then return {} end
redis.call('HSET', KEYS[2], token, cjson.encode(taken))
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), token)
redis.call('LTRIM', KEYS[1], #taken, -1)
return taken
";

/// Gives back URL ARGV[2] of lease ARGV[1] (a page its process dropped
/// without completing): off the take's URLs and back at the head of the
/// queue, once; the lease ends with its last URL. Answers 1 when it gave
/// the URL back, 0 when the lease no longer holds it (given back before,
/// or the lease expired and its URLs went back whole).
///
/// KEYS: queue, inflight, leases.
const RELEASE: &str = r"
local held = redis.call('HGET', KEYS[2], ARGV[1])
if not held then return 0 end
local urls = cjson.decode(held)
for at = 1, #urls do
  if urls[at] == ARGV[2] then
    table.remove(urls, at)
    redis.call('LPUSH', KEYS[1], ARGV[2])
    if #urls == 0 then
      redis.call('HDEL', KEYS[2], ARGV[1])
      redis.call('ZREM', KEYS[3], ARGV[1])
    else
      redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(urls))
    end
    return 1
  end
end
return 0
";

/// Extends the leases ARGV[2..] by ARGV[1] milliseconds from now; a token
/// that ended, or expired and went back on the queue, is not renewed.
/// Answers the tokens it did not extend. One key only: a script on keys
/// that a slot migration has split between two nodes is refused
/// (`TRYAGAIN`) until the migration ends, and renewals must not wait that
/// long. `allow-oom`: a server out of memory still renews (a score
/// changed, nothing added), or the leases of a live client would lapse and
/// its take go to others.
///
/// KEYS: leases.
const RENEW: &str = r"#!lua flags=allow-oom
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local missed = {}
for at = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[at]) then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[at])
  else
    missed[#missed + 1] = ARGV[at]
  end
end
return missed
";

/// The work a shard holds: its queue's length plus its leases, after
/// expired leases go back on the queue.
///
/// KEYS: queue, inflight, leases.
const PENDING: &str = r"
reclaim()
return redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[3])
";

/// Marks client ARGV[1] busy until ARGV[3] milliseconds from now (ARGV[2]
/// = 1), idle (0), or renews a live busy mark (2). A client that goes busy
/// from idle or from expired advances the epoch, so that a check of the
/// whole fleet that spans the change sees it; a renewal does not, and
/// never marks a client that is idle or expired (a heartbeat racing the
/// client's own idle mark): it answers 0 then, 1 otherwise.
///
/// KEYS: control hash (the epoch), busy clients (client -> deadline).
const STATE: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local until_now = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '0')
if ARGV[2] == '1' then
  if until_now <= now then redis.call('HINCRBY', KEYS[1], 'epoch', 1) end
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
elseif ARGV[2] == '2' then
  if until_now <= now then return 0 end
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
";

/// The control hash's epoch and the number of live busy clients, read at
/// once; busy clients whose deadline passed (dead or cut off) are dropped.
///
/// KEYS: control hash, busy clients.
const CENSUS: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local epoch = redis.call('HGET', KEYS[1], 'epoch') or '0'
return {epoch, redis.call('ZCARD', KEYS[2])}
";

/// Stores the fleet's shared settings (ARGV: field, value, ...) the first
/// time, and answers the stored value of the first field that differs
/// (`{field, stored}`), or an empty array.
///
/// KEYS: config hash.
const SETTINGS: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
  return {}
end
for at = 1, #ARGV, 2 do
  local stored = redis.call('HGET', KEYS[1], ARGV[at])
  if stored ~= ARGV[at + 1] then return {ARGV[at], stored or '(none)'} end
end
return {}
";

/// The write a pipeline makes before it waits for replicas (`WAIT`) or the
/// AOF (`WAITAOF`): both wait only for the last write made on their own
/// connection, and a command sent again after a lost reply may write
/// nothing (an offer answering from its stored result, a give-back or a
/// lease end with nothing left to do), so without a write of its own the
/// wait would not cover the first run's writes. `allow-oom`: a wait must
/// not fail because the server is out of memory when the writes it covers
/// did not.
///
/// KEYS: the shard's (or the fleet's) mark.
const MARK: &str = r"#!lua flags=allow-oom
return redis.call('INCR', KEYS[1])
";

/// A script and its SHA-1, by which it runs once loaded.
#[derive(Debug)]
pub(crate) struct Script {
    body: String,
    hash: String,
}

impl Script {
    fn new(body: String) -> Script {
        let hash = redis::Script::new(&body).get_hash().to_string();
        Script { body, hash }
    }

    /// `SCRIPT LOAD` of this script.
    pub(crate) fn load(&self) -> Cmd {
        let mut command = redis::cmd("SCRIPT");
        command.arg("LOAD").arg(&self.body);
        command
    }

    /// Runs it by its hash (`EVALSHA`): a node answers `NOSCRIPT` until the
    /// script is loaded there, and the client maps and loads again.
    fn run(&self, keys: &[&str]) -> Cmd {
        let mut command = redis::cmd("EVALSHA");
        command.arg(&self.hash).arg(keys.len());
        for key in keys {
            command.arg(*key);
        }
        command
    }
}

/// Every script of a fleet, each loaded on every node when the client maps
/// the nodes, so that a call sends a hash instead of the script's text.
#[derive(Debug)]
pub(crate) struct Scripts {
    offer: Script,
    take: Script,
    renew: Script,
    release: Script,
    pending: Script,
    state: Script,
    census: Script,
    settings: Script,
    mark: Script,
}

impl Scripts {
    /// The scripts, built once per process.
    pub(crate) fn get() -> &'static Scripts {
        static SCRIPTS: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
        SCRIPTS.get_or_init(|| {
            let on_queue = |body: &str| Script::new(format!("{PRELUDE}{body}"));
            Scripts {
                offer: Script::new(OFFER.to_string()),
                take: on_queue(TAKE),
                renew: Script::new(RENEW.to_string()),
                release: Script::new(RELEASE.to_string()),
                pending: on_queue(PENDING),
                state: Script::new(STATE.to_string()),
                census: Script::new(CENSUS.to_string()),
                settings: Script::new(SETTINGS.to_string()),
                mark: Script::new(MARK.to_string()),
            }
        })
    }

    /// All of them, to load.
    pub(crate) fn all(&self) -> [&Script; 9] {
        [
            &self.offer,
            &self.take,
            &self.renew,
            &self.release,
            &self.pending,
            &self.state,
            &self.census,
            &self.settings,
            &self.mark,
        ]
    }
}

fn scripts() -> &'static Scripts {
    Scripts::get()
}

/// The keys of a script that reads a shard's queue (the prelude's).
fn queue_keys(shard: &ShardKeys) -> [&str; 3] {
    [&shard.queue, &shard.inflight, &shard.leases]
}

/// The settings of a batch offer that are the same for every batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OfferSettings {
    /// Each shard's initial capacity.
    pub(crate) capacity: usize,
    /// The shards' false-positive rate.
    pub(crate) error_rate: f64,
    /// How long an answer waits for its acknowledgement, in seconds.
    pub(crate) ttl_seconds: u64,
    /// The growth factor of a shard's filter.
    pub(crate) expansion: u32,
}

/// Offers `items` to `shard` under the result key `result`.
pub(crate) fn offer<I: AsRef<str>>(
    shard: &ShardKeys,
    result: &str,
    queue: bool,
    settings: OfferSettings,
    items: &[I],
) -> Cmd {
    let mut command = if queue {
        scripts().offer.run(&[&shard.seen, result, &shard.queue])
    } else {
        scripts().offer.run(&[&shard.seen, result])
    };
    command
        .arg(settings.capacity)
        .arg(settings.error_rate)
        .arg(settings.ttl_seconds)
        .arg(settings.expansion);
    for item in items {
        command.arg(item.as_ref());
    }
    command
}

/// Takes up to `count` URLs from `shard`'s queue under `token`, leased for
/// `lease_ms`.
pub(crate) fn take(shard: &ShardKeys, token: &str, count: usize, lease_ms: u64) -> Cmd {
    let mut command = scripts().take.run(&queue_keys(shard));
    command.arg(count).arg(lease_ms).arg(token);
    command
}

/// Ends the lease `token` of `shard` (every URL of its take is done): two
/// plain commands, each harmless when repeated.
pub(crate) fn complete(shard: &ShardKeys, token: &str) -> [Cmd; 2] {
    let mut forget = redis::cmd("HDEL");
    forget.arg(&shard.inflight).arg(token);
    let mut end = redis::cmd("ZREM");
    end.arg(&shard.leases).arg(token);
    [forget, end]
}

/// Extends `tokens`' leases on `shard` by `lease_ms`.
pub(crate) fn renew(shard: &ShardKeys, tokens: &[String], lease_ms: u64) -> Cmd {
    let mut command = scripts().renew.run(&[&shard.leases]);
    command.arg(lease_ms);
    for token in tokens {
        command.arg(token);
    }
    command
}

/// Gives `url` of `shard`'s lease `token` back to the queue.
pub(crate) fn release(shard: &ShardKeys, token: &str, url: &str) -> Cmd {
    let mut command = scripts().release.run(&queue_keys(shard));
    command.arg(token).arg(url);
    command
}

/// Queued and leased URLs of `shard`.
pub(crate) fn pending(shard: &ShardKeys) -> Cmd {
    scripts().pending.run(&queue_keys(shard))
}

/// What a client's busy mark becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Idle: it holds nothing.
    Idle,
    /// Busy for a lease, from idle, expired or busy.
    Busy,
    /// Busy for another lease, if it is busy now (a heartbeat).
    Renew,
}

/// Marks `client` busy for `lease_ms`, idle, or renews its busy mark.
pub(crate) fn state(control: &str, clients: &str, client: &str, mark: Mark, lease_ms: u64) -> Cmd {
    let mut command = scripts().state.run(&[control, clients]);
    let mode = match mark {
        Mark::Idle => 0,
        Mark::Busy => 1,
        Mark::Renew => 2,
    };
    command.arg(client).arg(mode).arg(lease_ms);
    command
}

/// Reads the epoch and the live busy clients.
pub(crate) fn census(control: &str, clients: &str) -> Cmd {
    scripts().census.run(&[control, clients])
}

/// Stores or compares the fleet's shared settings.
pub(crate) fn settings(config: &str, fields: &[(&str, String)]) -> Cmd {
    let mut command = scripts().settings.run(&[config]);
    for (field, value) in fields {
        command.arg(*field).arg(value);
    }
    command
}

/// The write before a wait, on `mark` (a shard's or the fleet's).
pub(crate) fn mark(mark: &str) -> Cmd {
    scripts().mark.run(&[mark])
}
