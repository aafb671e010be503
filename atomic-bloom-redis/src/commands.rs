//! The `BF.*` commands: arguments in, RedisBloom's replies and error texts
//! out. The filters do the work (`value.rs`); the data type's callbacks are
//! in `data_type.rs`.
//!
//! Replication: what the primary applied travels, never more. A command
//! that creates a filter is propagated as a `BF.RESERVE` with the options
//! the filter was built with (a capped rate as built) and its random
//! `SEED`, so a replica's filter has the primary's bits. The items a
//! command added follow as `BF.INSERT key NOCREATE ITEMS` (all of them when
//! it took every item, else those it added; nothing when it added none),
//! which never creates: a replica or an AOF replay that could not build the
//! filter holds no key, and refuses them (`replica.rs`). Replicas and the
//! AOF apply no memory limit, and a filter grows before the new item that
//! needs room (`filter.rs`), so the same items in the same order build the
//! same filter there.
//!
//! A bare `BF.ADD`, `BF.MADD` or `BF.INSERT` (no `NOCREATE`) for a missing
//! key, replayed, comes from a RedisBloom stream (its AOF, a RedisBloom
//! primary): it creates RedisBloom's filter, as RedisBloom did, where this
//! server did not refuse the stream's own creation of that key; so does a
//! replayed `BF.RESERVE` without a `SEED`.

use redis_module::{
    key::RedisKeyWritable, raw, Context, RedisError, RedisResult, RedisString, RedisValue,
};

use crate::args::{self, error};
use crate::config;
use crate::data_type::BLOOM_TYPE;
use crate::dump::{self, ChunkError, SentChunk};
use crate::filter::{Added, Bloom, Options, AT_LIMIT, NO_MEMORY, OVER_LIMIT};
use crate::redisbloom::data_type::REDISBLOOM_TYPE;
use crate::redisbloom::{Chain, ChainAdd, ChainError, ChainOptions};
use crate::replica::{self, creation_refused, is_replayed, not_held};
use crate::value::Value;

const NOT_FOUND: &str = "ERR not found";
const FULL: &str = "ERR non scaling filter is full";
const FAILED: &str = "ERR problem inserting into filter";
const LOADING: &str =
    "ERR the filter is being restored: send its remaining BF.LOADCHUNK chunks, or DEL it";

/// The same, for writing.
enum FoundMut<'a> {
    Ours(&'a mut Value),
    Theirs(&'a mut Chain),
}

/// The filter under `key` for writing; a key of another type is
/// `WRONGTYPE`.
fn found_mut(key: &RedisKeyWritable) -> Result<Option<FoundMut<'_>>, RedisError> {
    if let Ok(value) = key.get_value::<Value>(&BLOOM_TYPE) {
        return Ok(value.map(FoundMut::Ours));
    }
    // A load's placeholder (`redisbloom/unheld.rs`) is no filter.
    key.get_value::<Chain>(&REDISBLOOM_TYPE)
        .map(|chain| {
            chain
                .filter(|chain| !chain.is_placeholder())
                .map(FoundMut::Theirs)
        })
        .map_err(|_| RedisError::WrongType)
}

/// Adds `items` to a RedisBloom filter as RedisBloom does: each in turn,
/// going on past an item that could not get a link ("problem inserting"),
/// stopping at the first a full `NONSCALING` filter refuses.
fn add_to_chain(chain: &mut Chain, items: &[&[u8]], cap: Option<usize>) -> Vec<Added> {
    let mut outcomes = Vec::with_capacity(items.len());
    for item in items {
        let outcome = match chain.add(item, cap) {
            ChainAdd::Added(new) => Added::Item(new),
            ChainAdd::Full => Added::Full,
            ChainAdd::OverLimit => Added::OverLimit,
            ChainAdd::Failed => Added::Failed,
            ChainAdd::AtLimit => Added::AtLimit,
        };
        outcomes.push(outcome);
        if outcome == Added::Full {
            break;
        }
    }
    outcomes
}

/// The items of a command, from argument `from` on.
fn items(args: &[RedisString], from: usize) -> Vec<&[u8]> {
    args[from..].iter().map(RedisString::as_slice).collect()
}

/// The most one filter may take for this command: the operator's
/// `bf-memory-limit-per-filter` for a client's command; none for one the
/// server replays (a replica's stream, the AOF), which must never refuse
/// what its primary accepted.
fn memory_cap(ctx: &Context) -> Option<usize> {
    config::memory_limit().filter(|_| !is_replayed(ctx))
}

/// Creates a filter under an empty `key` (named `key_name`), within `cap`
/// bytes.
fn create<'a>(
    ctx: &Context,
    key_name: &RedisString,
    key: &'a RedisKeyWritable,
    options: Options,
    cap: Option<usize>,
) -> Result<&'a mut Value, RedisError> {
    let bloom = Bloom::new(options).map_err(|failure| match failure {
        atomic_bloom::Error::AllocationFailed { .. } => error(NO_MEMORY),
        _ => error("ERR could not create filter"),
    })?;
    // Built lazily (calloc), so building to measure costs no resident memory.
    if cap.is_some_and(|cap| bloom.filter_bytes() > Value::filter_cap(cap)) {
        return Err(error(OVER_LIMIT));
    }
    key.set_value(&BLOOM_TYPE, Value::ready(bloom))?;
    replica::created(ctx, key_name);
    match found_mut(key)? {
        Some(FoundMut::Ours(value)) => Ok(value),
        _ => Err(error("ERR could not create filter")),
    }
}

/// Propagates a new filter as a `BF.RESERVE` with its seed.
fn replicate_creation(ctx: &Context, key: &RedisString, options: &Options) {
    let rate = options.error_rate.to_string();
    let capacity = options.capacity.to_string();
    let seed = options.seed.to_string();
    let growth = options.expansion.map(|growth| growth.to_string());
    let mut reserve: Vec<&[u8]> = vec![key.as_slice(), rate.as_bytes(), capacity.as_bytes()];
    match &growth {
        Some(growth) => reserve.extend([&b"EXPANSION"[..], growth.as_bytes()]),
        None => reserve.push(b"NONSCALING"),
    }
    reserve.extend([&b"SEED"[..], seed.as_bytes()]);
    ctx.replicate("BF.RESERVE", reserve.as_slice());
}

/// Propagates what adding `items` (the command's arguments from
/// `items_at` on) to the filter under `args[1]` did (see the module docs):
/// the creation it began with, then the items it added, as a `BF.INSERT`
/// that never creates.
fn replicate_added(
    ctx: &Context,
    args: &[RedisString],
    items_at: usize,
    created: Option<&Options>,
    outcomes: &[Added],
) {
    if let Some(options) = created {
        replicate_creation(ctx, &args[1], options);
    }
    let added: Vec<&RedisString> = args[items_at..]
        .iter()
        .zip(outcomes)
        .filter(|(_, outcome)| **outcome == Added::Item(true))
        .map(|(item, _)| item)
        .collect();
    if added.is_empty() {
        return;
    }
    let words = [ctx.create_string("NOCREATE"), ctx.create_string("ITEMS")];
    let mut insert: Vec<*mut raw::RedisModuleString> = Vec::with_capacity(added.len() + 3);
    insert.push(args[1].inner);
    insert.extend(words.iter().map(|word| word.inner));
    insert.extend(added.iter().map(|item| item.inner));
    // The server's own strings, not copies: a vector (`v`) of them is
    // propagated with their counts raised.
    // Safety: filled in at load; the context is the command's, the
    // strings live until the call returns, the vector's length is passed.
    unsafe {
        if let Some(replicate) = raw::RedisModule_Replicate {
            replicate(
                ctx.ctx,
                c"BF.INSERT".as_ptr(),
                c"v".as_ptr(),
                insert.as_ptr(),
                insert.len(),
            );
        }
    }
}

/// An array of one reply per outcome (it stops at the first `Full`),
/// written straight to the client: a hundred-item command is a hundred
/// small replies, with no `RedisValue` built for each.
fn reply_added(ctx: &Context, outcomes: &[Added]) -> RedisValue {
    raw::reply_with_array(ctx.ctx, outcomes.len() as std::os::raw::c_long);
    for outcome in outcomes {
        match outcome {
            Added::Item(new) => raw::reply_with_bool(ctx.ctx, (*new).into()),
            Added::Full => ctx.reply_error_string(FULL),
            Added::OverLimit => ctx.reply_error_string(OVER_LIMIT),
            Added::Failed => ctx.reply_error_string(FAILED),
            Added::AtLimit => ctx.reply_error_string(AT_LIMIT),
        };
    }
    RedisValue::NoReply
}

/// How `add_items` may create a missing key.
struct Creation {
    /// Whether it may (no `NOCREATE`).
    allowed: bool,
    /// This module's filter, for a client's command.
    options: Options,
    /// RedisBloom's, for a replayed one (`replica.rs`).
    chain: ChainOptions,
}

/// Adds the items (the arguments from `items_at` on) to the filter under
/// `args[1]`, creating it if missing (and allowed).
fn add_items(
    ctx: &Context,
    command: &str,
    args: &[RedisString],
    items_at: usize,
    creation: Creation,
) -> Result<Vec<Added>, RedisError> {
    let key_name = &args[1];
    let items = items(args, items_at);
    let key = ctx.open_key_writable(key_name);
    let cap = memory_cap(ctx);
    let (value, created) = match found_mut(&key)? {
        Some(FoundMut::Theirs(chain)) => {
            let outcomes = add_to_chain(chain, &items, cap);
            if is_replayed(ctx) && outcomes.contains(&Added::AtLimit) {
                return Err(drop_past_limits(ctx, command, key_name, &key));
            }
            replicate_added(ctx, args, items_at, None, &outcomes);
            return Ok(outcomes);
        }
        Some(FoundMut::Ours(value)) => (value, None),
        None if is_replayed(ctx) => {
            return replayed_creation(ctx, command, key_name, &key, &items, creation)
        }
        None if creation.allowed && redisbloom_is_leaner(&creation) => {
            let chain = create_leaner(ctx, key_name, &key, &creation.chain, cap)?;
            let outcomes = add_to_chain(chain, &items, cap);
            replicate_added(ctx, args, items_at, None, &outcomes);
            return Ok(outcomes);
        }
        None if creation.allowed => (
            create(ctx, key_name, &key, creation.options, cap)?,
            Some(creation.options),
        ),
        None => return Err(error(NOT_FOUND)),
    };
    let Value::Ready(bloom, _) = value else {
        return Err(error(LOADING));
    };
    let outcomes = bloom.add_many(&items, cap.map(Value::filter_cap));
    replicate_added(ctx, args, items_at, created.as_ref(), &outcomes);
    Ok(outcomes)
}

/// A replayed add (RedisBloom's stream) that took RedisBloom's filter
/// past this module's limits, where RedisBloom went on: this server holds
/// no key there rather than a filter that is not its primary's, remembers
/// it as refused, says so in its log, and its own AOF and replicas drop
/// the key too.
fn drop_past_limits(
    ctx: &Context,
    command: &str,
    key_name: &RedisString,
    key: &RedisKeyWritable,
) -> RedisError {
    if let Err(error) = key.delete() {
        return error;
    }
    ctx.replicate("DEL", &[key_name.as_slice()][..]);
    creation_refused(ctx, command, key_name, error(AT_LIMIT), true)
}

/// Whether a new key of `creation` is RedisBloom's filter: where this
/// module's would take more memory an item than RedisBloom's by more than
/// [`MOST_OVER_REDISBLOOM`](crate::filter::MOST_OVER_REDISBLOOM) (very low
/// rates). A rate RedisBloom cannot size is left to this module's, which
/// cannot either: "could not create filter", as RedisBloom answers.
fn redisbloom_is_leaner(creation: &Creation) -> bool {
    Chain::first_shape(&creation.chain)
        .is_ok_and(|(shape, _)| creation.options.redisbloom_is_leaner(shape.bpe))
}

/// Creates RedisBloom's filter for a client's command under an empty
/// `key`, within `cap` bytes (the allocator refuses: RedisBloom's
/// "Insufficient memory"), and propagates it as the header of its dump
/// (`BF.LOADCHUNK key 1 header`), which makes the same empty filter where
/// it is replayed, whatever that server's defaults.
fn create_leaner<'a>(
    ctx: &Context,
    key_name: &RedisString,
    key: &'a RedisKeyWritable,
    options: &ChainOptions,
    cap: Option<usize>,
) -> Result<&'a mut Chain, RedisError> {
    let chain = Chain::new(options, cap).map_err(|failure| match failure {
        ChainError::OverLimit => error(OVER_LIMIT),
        ChainError::OutOfMemory | ChainError::PastLimits(_) => error(NO_MEMORY),
        ChainError::Invalid(_) => error("ERR could not create filter"),
    })?;
    let header = chain.header();
    key.set_value(&REDISBLOOM_TYPE, chain)?;
    replica::created(ctx, key_name);
    ctx.replicate(
        "BF.LOADCHUNK",
        &[key_name.as_slice(), b"1", header.as_slice()][..],
    );
    match found_mut(key)? {
        Some(FoundMut::Theirs(chain)) => Ok(chain),
        _ => Err(error("ERR could not create filter")),
    }
}

/// A replayed add for a missing key. This module's primary never sends a
/// creating add (its creations travel as `BF.RESERVE`): one that does not
/// create is refused. A bare one is RedisBloom's, which creates the key
/// with its defaults or the options named: so does this server, with
/// RedisBloom's filter, unless it refused the stream's own creation of
/// that key before (then the key stays missing).
fn replayed_creation(
    ctx: &Context,
    command: &str,
    key_name: &RedisString,
    key: &RedisKeyWritable,
    items: &[&[u8]],
    creation: Creation,
) -> Result<Vec<Added>, RedisError> {
    if !creation.allowed || !replica::may_create(ctx, key_name) {
        return Err(not_held(ctx, command, key_name));
    }
    let chain = create_chain(ctx, key_name, key, &creation.chain)
        .map_err(|refused| creation_refused(ctx, command, key_name, refused, true))?;
    let outcomes = add_to_chain(chain, items, None);
    // The same bare command makes the same filter where it is replayed
    // again (this server's own AOF).
    ctx.replicate_verbatim();
    Ok(outcomes)
}

/// Creates RedisBloom's filter under an empty `key`, as RedisBloom does.
fn create_chain<'a>(
    ctx: &Context,
    key_name: &RedisString,
    key: &'a RedisKeyWritable,
    options: &ChainOptions,
) -> Result<&'a mut Chain, RedisError> {
    let chain = Chain::new(options, None).map_err(|failure| match failure {
        ChainError::OutOfMemory | ChainError::PastLimits(_) => error(NO_MEMORY),
        _ => error("ERR could not create filter"),
    })?;
    key.set_value(&REDISBLOOM_TYPE, chain)?;
    replica::created(ctx, key_name);
    match found_mut(key)? {
        Some(FoundMut::Theirs(chain)) => Ok(chain),
        _ => Err(error("ERR could not create filter")),
    }
}

/// What `BF.ADD` and `BF.MADD` create a missing key with: the configs'.
fn default_creation() -> Creation {
    Creation {
        allowed: true,
        options: args::default_options(),
        chain: args::default_chain_options(),
    }
}

/// `BF.ADD key item`: 1 if the item was new, 0 if it may have been there.
pub(crate) fn bf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let outcomes = add_items(ctx, "BF.ADD", &args, 2, default_creation())?;
    match outcomes.first() {
        Some(Added::Item(new)) => Ok(RedisValue::Bool(*new)),
        Some(Added::OverLimit) => Err(error(OVER_LIMIT)),
        Some(Added::Failed) => Err(error(FAILED)),
        Some(Added::AtLimit) => Err(error(AT_LIMIT)),
        _ => Err(error(FULL)),
    }
}

/// `BF.MADD key item [item ...]`: one reply per item.
pub(crate) fn bf_madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let outcomes = add_items(ctx, "BF.MADD", &args, 2, default_creation())?;
    Ok(reply_added(ctx, &outcomes))
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE]
/// [NONSCALING] ITEMS item [item ...]`.
pub(crate) fn bf_insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let parsed = args::insert_args(&args)?;
    let creation = Creation {
        allowed: parsed.create,
        options: parsed.options,
        chain: parsed.chain,
    };
    let outcomes = add_items(ctx, "BF.INSERT", &args, parsed.items_at, creation)?;
    Ok(reply_added(ctx, &outcomes))
}

/// `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]`.
/// A replayed one that fails is logged and remembered (`replica.rs`); a
/// replayed one without a `SEED` is RedisBloom's, and makes its filter.
pub(crate) fn bf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let replayed = is_replayed(ctx);
    let reserve = args::reserve_options(&args, replayed)?;
    let key = ctx.open_key_writable(&args[1]);
    if found_mut(&key)?.is_some() {
        return Err(creation_refused(
            ctx,
            "BF.RESERVE",
            &args[1],
            error("ERR item exists"),
            false,
        ));
    }
    let refused = |refused| creation_refused(ctx, "BF.RESERVE", &args[1], refused, true);
    let creation = Creation {
        allowed: true,
        options: reserve.options,
        chain: reserve.chain,
    };
    if replayed && !reserve.seeded {
        create_chain(ctx, &args[1], &key, &reserve.chain).map_err(refused)?;
        ctx.replicate_verbatim();
    } else if !replayed && redisbloom_is_leaner(&creation) {
        create_leaner(ctx, &args[1], &key, &reserve.chain, memory_cap(ctx))?;
    } else {
        create(ctx, &args[1], &key, reserve.options, memory_cap(ctx)).map_err(refused)?;
        replicate_creation(ctx, &args[1], &reserve.options);
    }
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `BF.LOADCHUNK key iterator data`: takes back what `BF.SCANDUMP` gave.
pub(crate) fn bf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    let next = args::parse_i64(&args[2]).ok_or(error("ERR Second argument must be numeric"))?;
    let chunk = args[3].as_slice();
    let cap = memory_cap(ctx);
    let key = ctx.open_key_writable(&args[1]);
    // A first chunk this server had no memory for, replayed: the key stays
    // missing, and RedisBloom's bare adds that follow must not create it
    // (`replica.rs`).
    let refused = |refused| creation_refused(ctx, "BF.LOADCHUNK", &args[1], refused, true);
    let missing = found_mut(&key)?.is_none();
    let outcome = match found_mut(&key)? {
        // RedisBloom's stream: its header at iterator 1 (this module's
        // first chunk is at 1 + its length).
        None if next == 1 => match Chain::from_header(chunk, cap) {
            Ok(chain) => key.set_value(&REDISBLOOM_TYPE, chain).map(drop),
            Err(ChainError::OverLimit) => return Err(error(OVER_LIMIT)),
            Err(ChainError::OutOfMemory) => return Err(refused(error(NO_MEMORY))),
            Err(why) => {
                redis_module::logging::log_warning(format!(
                    "atomic-bloom: BF.LOADCHUNK refused a RedisBloom header: {why}"
                ));
                // Replayed: the bare adds that follow make no filter there.
                return Err(refused(error(ChunkError::BadData.message())));
            }
        },
        Some(FoundMut::Theirs(chain)) => chain.load_piece(next, chunk).map_err(error),
        // RedisBloom: a missing key takes nothing but a header.
        None if !dump::is_first_chunk(next, chunk) => return Err(error("ERR not found")),
        None => match dump::start(next, chunk, cap.map(Value::filter_cap)) {
            Ok(Ok(pending)) => key
                .set_value(&BLOOM_TYPE, Value::Loading(pending))
                .map(drop),
            Ok(Err((bloom, state))) => key
                .set_value(&BLOOM_TYPE, Value::Ready(bloom, state))
                .map(drop),
            Err(failure @ ChunkError::OutOfMemory) => {
                return Err(refused(error(failure.message())))
            }
            Err(failure) => return Err(error(failure.message())),
        },
        Some(FoundMut::Ours(Value::Ready(_, state)))
            if state.last_chunk == Some(SentChunk::of(next, chunk)) =>
        {
            // The chunk that completed this filter, sent again.
            Ok(())
        }
        Some(FoundMut::Ours(Value::Ready(..))) => {
            // RedisBloom's checks, in its order: an iterator at or below 0
            // or below the chunk's length is bad data before the filter is
            // looked at; its loop deletes the key first, so a first chunk
            // for a live filter is bad data; any other chunk has no place
            // in a filter that is whole.
            let (length, position) = (chunk.len() as i64, dump::position(next));
            let refused = if next <= 0 || position < length || position == 1 + length {
                ChunkError::BadData
            } else {
                ChunkError::InvalidOffset
            };
            return Err(error(refused.message()));
        }
        Some(FoundMut::Ours(value @ Value::Loading(_))) => {
            let Value::Loading(pending) = value else {
                unreachable!()
            };
            match pending.resume(next, chunk) {
                Ok(None) => Ok(()),
                Ok(Some((bloom, state))) => {
                    *value = Value::Ready(bloom, state);
                    Ok(())
                }
                Err(refused) => {
                    if pending.is_complete() {
                        // Every byte arrived and they do not parse.
                        key.delete()?;
                        ctx.replicate_verbatim();
                    }
                    return Err(error(refused.message()));
                }
            }
        }
    };
    outcome?;
    if missing {
        replica::created(ctx, &args[1]);
    }
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}
