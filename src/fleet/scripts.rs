//! The two server-side scripts of a fleet, and the commands that run them.
//!
//! Both are idempotent by an id the client picks: a batch or a pop whose
//! reply was lost is sent again with the same id, and the second run
//! answers what the first did instead of doing it twice. The answer waits
//! under a result key until the client acknowledges it (`UNLINK`), or for
//! the fleet's result TTL if the client never comes back.

use redis::Cmd;

use super::keys::ShardKeys;

/// Offers a batch to a shard: `BF.INSERT` into its filter, `RPUSH` of the
/// items the filter did not hold onto its queue (when a queue key is
/// given), and the flags (`1` new, `0` seen) kept under the result key.
///
/// KEYS: filter, result, [queue]. ARGV: capacity, error rate, TTL seconds,
/// items.
const OFFER: &str = r"
local done = redis.call('GET', KEYS[2])
if done then return done end
local command = {'BF.INSERT', KEYS[1], 'CAPACITY', ARGV[1], 'ERROR', ARGV[2], 'ITEMS'}
for at = 4, #ARGV do command[#command + 1] = ARGV[at] end
local added = redis.call(unpack(command))
local flags, fresh = {}, {}
for at = 1, #added do
  if added[at] == 1 then
    flags[at] = '1'
    fresh[#fresh + 1] = ARGV[at + 3]
  else
    flags[at] = '0'
  end
end
if KEYS[3] and #fresh > 0 then redis.call('RPUSH', KEYS[3], unpack(fresh)) end
local result = table.concat(flags)
redis.call('SET', KEYS[2], result, 'EX', ARGV[3])
return result
";

/// Takes up to ARGV[1] items from the head of a shard's queue and keeps
/// them under the result key for ARGV[2] seconds. A result key that does
/// not exist means no earlier run took anything, so taking now is safe.
///
/// KEYS: queue, result.
const TAKE: &str = r"
local done = redis.call('LRANGE', KEYS[2], 0, -1)
if #done > 0 then return done end
local taken = redis.call('LPOP', KEYS[1], ARGV[1])
if not taken then return {} end
redis.call('RPUSH', KEYS[2], unpack(taken))
redis.call('EXPIRE', KEYS[2], ARGV[2])
return taken
";

/// Marks a client busy (ARGV[2] = 1) or idle (0) in the fleet's control
/// hash; going busy also advances the hash's epoch, so that a check of
/// the whole fleet that spans the change sees it.
///
/// KEYS: control. ARGV: client, state.
const STATE: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[2] == '1' then redis.call('HINCRBY', KEYS[1], 'epoch', 1) end
return redis.call('HGET', KEYS[1], 'epoch')
";

/// The control hash's epoch and the number of busy clients, read at once.
///
/// KEYS: control.
const CENSUS: &str = r"
local fields = redis.call('HGETALL', KEYS[1])
local epoch, busy = '0', 0
for at = 1, #fields, 2 do
  if fields[at] == 'epoch' then epoch = fields[at + 1]
  elseif fields[at + 1] ~= '0' then busy = busy + 1 end
end
return {epoch, busy}
";

fn eval(script: &str, keys: &[&str]) -> Cmd {
    let mut command = redis::cmd("EVAL");
    command.arg(script).arg(keys.len());
    for key in keys {
        command.arg(*key);
    }
    command
}

/// Offers `items` to `shard` under the result key `result`.
pub(crate) fn offer<I: AsRef<str>>(
    shard: &ShardKeys,
    result: &str,
    queue: bool,
    capacity: usize,
    error_rate: f64,
    ttl_seconds: u64,
    items: &[I],
) -> Cmd {
    let mut command = if queue {
        eval(OFFER, &[&shard.seen, result, &shard.queue])
    } else {
        eval(OFFER, &[&shard.seen, result])
    };
    command.arg(capacity).arg(error_rate).arg(ttl_seconds);
    for item in items {
        command.arg(item.as_ref());
    }
    command
}

/// Takes up to `count` items from `shard`'s queue under the result key
/// `result`.
pub(crate) fn take(shard: &ShardKeys, result: &str, count: usize, ttl_seconds: u64) -> Cmd {
    let mut command = eval(TAKE, &[&shard.queue, result]);
    command.arg(count).arg(ttl_seconds);
    command
}

/// Marks `client` busy or idle.
pub(crate) fn state(control: &str, client: &str, busy: bool) -> Cmd {
    let mut command = eval(STATE, &[control]);
    command.arg(client).arg(u8::from(busy));
    command
}

/// Reads the epoch and the busy clients.
pub(crate) fn census(control: &str) -> Cmd {
    eval(CENSUS, &[control])
}
