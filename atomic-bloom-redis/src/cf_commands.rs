//! The `CF.*` commands: RedisBloom's arguments, replies (RESP2 and RESP3)
//! and error texts, in RedisBloom's order of checks, on RedisBloom's own
//! cuckoo filters (`cuckoo/`).
//!
//! Replication: what the primary applied travels, never more, and never
//! a command whose meaning depends on the receiver's configs. A new filter
//! travels as `CF.LOADCHUNK key 1 <header>` (its every field, so a replica
//! whose `cf-*` configs differ builds the same filter), an add whose every
//! item went in (or, `NX`, was there already) as sent, and of another add
//! the items it inserted as `CF.INSERT key NOCREATE ITEMS ...` (an item
//! that was there already or had no room changed nothing and does not
//! travel: the primary's answer for it, which may be a duplicate refused,
//! never depends on the replica's), and `CF.DEL` (when it deleted), `CF.COMPACT` and `CF.LOADCHUNK` as sent.
//! Insertion is deterministic, so the same items in the same order leave
//! the same slots on the replica. A replayed command is not held to this
//! server's configs (ranges, `cf-max-expansions`) and grows as RedisBloom
//! grows; a replayed creation this server cannot make (memory) leaves no
//! key and is remembered, so RedisBloom's bare `CF.ADD`s that follow in its
//! stream do not make a filter of defaults there (`replica.rs`); a
//! replayed insert that could not get memory to grow drops the key rather
//! than hold a filter its primary does not have.

use redis_module::key::RedisKeyWritable;
use redis_module::{raw, Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{error, parse_i64};
use crate::cuckoo::config::{self, Bounds, Settings};
use crate::cuckoo::data_type::CUCKOO_TYPE;
use crate::cuckoo::{CreateError, Cuckoo, Growth, Insert, Lookup, HEADER_BYTES};
use crate::filter::{NO_MEMORY, OVER_LIMIT};
use crate::replica::{self, creation_refused, is_replayed, not_held};

pub(crate) const NOT_FOUND: &str = "ERR not found";

fn resp3(ctx: &Context) -> bool {
    ctx.get_flags().contains(ContextFlags::FLAGS_RESP3)
}

/// The filter under `key`, for writing; another type is `WRONGTYPE`.
/// A load's placeholder (`redisbloom/unheld.rs`) is no filter.
pub(crate) fn found_mut(key: &RedisKeyWritable) -> Result<Option<&mut Cuckoo>, RedisError> {
    key.get_value::<Cuckoo>(&CUCKOO_TYPE)
        .map(|cuckoo| cuckoo.filter(|cuckoo| !cuckoo.is_placeholder()))
        .map_err(|_| RedisError::WrongType)
}

/// The ranges this command's numbers must be in: the configs' for a
/// client, RedisBloom's widest for a replayed command.
pub(crate) fn bounds(ctx: &Context, now: &Settings) -> Bounds {
    if is_replayed(ctx) {
        Bounds::widest()
    } else {
        now.bounds.clone()
    }
}

fn creation_error(failure: CreateError) -> RedisError {
    match failure {
        CreateError::OutOfMemory => error(NO_MEMORY),
        CreateError::Invalid => error("ERR Could not create filter"),
        CreateError::OverLimit => error(OVER_LIMIT),
    }
}

/// The most one filter may take for this command: the operator's
/// `bf-memory-limit-per-filter` for a client's command, none for one the
/// server replays, which must never refuse what its primary accepted.
pub(crate) fn memory_cap(ctx: &Context) -> Option<u64> {
    crate::config::memory_limit()
        .filter(|_| !is_replayed(ctx))
        .map(|cap| cap as u64)
}

/// Propagates a new, empty filter: its header at iterator 1.
fn replicate_creation(ctx: &Context, key: &RedisString, header: &[u8; HEADER_BYTES]) {
    let at = ctx.create_string("1");
    // Bytes with NULs: not through `create_string`, which wants text.
    let header = RedisString::create_from_slice(ctx.ctx, &header[..]);
    ctx.replicate("CF.LOADCHUNK", &[key, &at, &header]);
}

/// The words before an insert's items in the `CF.INSERT` it replicates
/// as: the key, `NOCREATE`, `ITEMS`.
const REPLICATED_WORDS: usize = 3;

thread_local! {
    /// An add's replicated `CF.INSERT` (its key, words and the items it
    /// inserted), kept from command to command (they run on the main
    /// thread, one at a time): no allocation per command.
    static REPLICATED: std::cell::RefCell<Vec<*mut raw::RedisModuleString>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Propagates the items an add inserted (`insert` past its first
/// [`REPLICATED_WORDS`]), as a `CF.INSERT` that never creates, the
/// server's own strings passed along.
fn replicate_inserted(
    ctx: &Context,
    key: &RedisString,
    insert: &mut [*mut raw::RedisModuleString],
) {
    if insert.len() <= REPLICATED_WORDS {
        return;
    }
    let words = [ctx.create_string("NOCREATE"), ctx.create_string("ITEMS")];
    insert[0] = key.inner;
    insert[1] = words[0].inner;
    insert[2] = words[1].inner;
    // Safety: filled in at load; the context is the command's, the
    // strings live until the call returns, the vector's length is passed.
    unsafe {
        if let Some(replicate) = raw::RedisModule_Replicate {
            replicate(
                ctx.ctx,
                c"CF.INSERT".as_ptr(),
                c"v".as_ptr(),
                insert.as_ptr(),
                insert.len(),
            );
        }
    }
}

/// `NAME value` of `CF.RESERVE`, found as RedisBloom finds it: the first
/// argument of the whole command (name and key included) that is `name`.
fn reserve_option(
    args: &[RedisString],
    name: &str,
    default: i64,
    range: &std::ops::RangeInclusive<i64>,
) -> Result<i64, RedisError> {
    let Some(at) =
        (args.iter()).position(|arg| arg.as_slice().eq_ignore_ascii_case(name.as_bytes()))
    else {
        return Ok(default);
    };
    let value = (args.get(at + 1))
        .and_then(parse_i64)
        .ok_or_else(|| RedisError::String(format!("Couldn't parse {name}")))?;
    if !range.contains(&value) {
        return Err(RedisError::String(format!(
            "{name}: value must be in the range [{}, {}]",
            range.start(),
            range.end()
        )));
    }
    Ok(value)
}

/// `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]`.
pub(crate) fn cf_reserve(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() < 3 || args.len() % 2 == 0 {
        return Err(RedisError::WrongArity);
    }
    let capacity = parse_i64(&args[2]).ok_or(error("Bad capacity"))?;
    let now = config::settings();
    let bounds = bounds(ctx, &now);
    let max_iterations = reserve_option(
        args,
        "MAXITERATIONS",
        now.max_iterations.into(),
        &bounds.max_iterations,
    )?;
    let bucket_size = reserve_option(
        args,
        "BUCKETSIZE",
        now.bucket_size.into(),
        &bounds.bucket_size,
    )?;
    let expansion = reserve_option(args, "EXPANSION", now.expansion.into(), &bounds.expansion)?;
    let most = *bounds.capacity.end();
    if bucket_size * 2 > capacity || capacity > most {
        return Err(RedisError::String(format!(
            "Capacity must be in the range [2 * BUCKETSIZE, {most}]"
        )));
    }
    let key = ctx.open_key_writable(&args[1]);
    if found_mut(&key)?.is_some() {
        return Err(creation_refused(
            ctx,
            "CF.RESERVE",
            &args[1],
            error("ERR item exists"),
            false,
        ));
    }
    let made = Cuckoo::new(
        capacity as u64,
        bucket_size as u16,
        max_iterations as u16,
        expansion as u16,
        memory_cap(ctx),
    )
    .map_err(|failure| {
        creation_refused(ctx, "CF.RESERVE", &args[1], creation_error(failure), true)
    })?;
    let header = made.header();
    key.set_value(&CUCKOO_TYPE, made)?;
    replica::created(ctx, &args[1]);
    replicate_creation(ctx, &args[1], &header);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// How an add command inserts.
struct Adding {
    /// `CF.ADDNX` / `CF.INSERTNX`: only items not there.
    unique: bool,
    /// `CF.INSERT*`: an array of answers.
    multi: bool,
    /// No `NOCREATE`.
    create: bool,
    /// The capacity of a filter it creates.
    capacity: u64,
}

/// One item's answer, as RedisBloom writes it: RESP3 booleans but for
/// `CF.INSERTNX`, -1 (RESP3 `CF.INSERT`: false) for no room in an array.
fn reply_outcome(ctx: &Context, adding: &Adding, outcome: Insert, resp3: bool) {
    let booleans = resp3 && !(adding.unique && adding.multi);
    match outcome {
        Insert::Inserted | Insert::Exists => {
            let yes = outcome == Insert::Inserted;
            if booleans {
                raw::reply_with_bool(ctx.ctx, yes.into());
            } else {
                raw::reply_with_long_long(ctx.ctx, yes.into());
            }
        }
        Insert::NoSpace | Insert::NoMemory | Insert::OverLimit => {
            if resp3 && !adding.unique {
                raw::reply_with_bool(ctx.ctx, 0);
            } else {
                raw::reply_with_long_long(ctx.ctx, -1);
            }
        }
    };
}

/// Adds `args[items_at..]` to the filter under `args[1]` (RedisBloom's
/// `cfInsertCommon`).
fn add(
    ctx: &Context,
    command: &str,
    args: &[RedisString],
    items_at: usize,
    adding: Adding,
) -> RedisResult {
    let name = &args[1];
    let key = ctx.open_key_writable(name);
    let replayed = is_replayed(ctx);
    let now = config::settings();
    let mut created = None;
    let cuckoo = match found_mut(&key)? {
        Some(cuckoo) => cuckoo,
        None if adding.create && (!replayed || replica::may_create(ctx, name)) => {
            let made = Cuckoo::new(
                adding.capacity,
                now.bucket_size,
                now.max_iterations,
                now.expansion,
                memory_cap(ctx),
            )
            .map_err(|failure| {
                creation_refused(ctx, command, name, creation_error(failure), true)
            })?;
            created = Some(made.header());
            key.set_value(&CUCKOO_TYPE, made)?;
            replica::created(ctx, name);
            found_mut(&key)?.ok_or(error("ERR Could not create filter"))?
        }
        None if replayed => return Err(not_held(ctx, command, name)),
        None => return Err(error(NOT_FOUND)),
    };
    if let Some(header) = &created {
        replicate_creation(ctx, name, header);
    }
    if !replayed && cuckoo.filters().len() >= now.max_expansions {
        return Err(error("Maximum expansions reached"));
    }
    let growth = if replayed || grows_like_redisbloom() {
        Growth::AsRedisBloom
    } else {
        Growth::NotForDuplicates
    };
    let items = &args[items_at..];
    let cap = memory_cap(ctx);
    let resp3 = resp3(ctx);
    // Room for every item, taken before any is inserted.
    let mut inserted = REPLICATED.with_borrow_mut(std::mem::take);
    inserted.clear();
    if inserted
        .try_reserve(REPLICATED_WORDS + items.len())
        .is_err()
    {
        return Err(error("ERR Insufficient memory"));
    }
    inserted.resize(REPLICATED_WORDS, std::ptr::null_mut());
    let mut starved = false;
    // Every item in, or there already: the command as sent does on the
    // replica what it did here (the filters are the same, and no item met
    // this server's duplicate rule, cap or memory).
    let mut all_applied = true;
    let mut single = None;
    if adding.multi {
        raw::reply_with_array(ctx.ctx, items.len() as std::os::raw::c_long);
    }
    for item in items {
        let outcome = cuckoo.insert(&Lookup::of(item.as_slice()), adding.unique, growth, cap);
        if outcome == Insert::Inserted {
            inserted.push(item.inner);
        }
        starved |= outcome == Insert::NoMemory;
        all_applied &= matches!(outcome, Insert::Inserted | Insert::Exists);
        if adding.multi {
            reply_outcome(ctx, &adding, outcome, resp3);
        } else {
            single = Some(outcome);
        }
    }
    if replayed && starved {
        // The primary had the memory to grow this filter; this server has
        // not: it holds no key rather than a filter the primary never had.
        key.delete()?;
        replicate_dropped(ctx, name);
        return Err(creation_refused(
            ctx,
            command,
            name,
            error("ERR Insufficient memory"),
            true,
        ));
    }
    if all_applied && inserted.len() > REPLICATED_WORDS {
        ctx.replicate_verbatim();
    } else {
        replicate_inserted(ctx, name, &mut inserted);
    }
    inserted.clear();
    if inserted.capacity() <= KEPT_REPLICATED {
        REPLICATED.with_borrow_mut(|kept| *kept = inserted);
    }
    match single {
        None => Ok(RedisValue::NoReply),
        Some(Insert::NoSpace) => Err(error("Filter is full")),
        Some(Insert::NoMemory) => Err(error("ERR Insufficient memory")),
        Some(Insert::OverLimit) => Err(error(OVER_LIMIT)),
        Some(outcome) if resp3 => Ok(RedisValue::Bool(outcome == Insert::Inserted)),
        Some(outcome) => Ok(RedisValue::Integer((outcome == Insert::Inserted).into())),
    }
}

/// Most words whose list [`REPLICATED`] keeps (8 KiB).
const KEPT_REPLICATED: usize = 1024;

/// Whether `CF_GROW_LIKE_REDISBLOOM` was set when the server started: a
/// client's duplicates then grow filters as RedisBloom's do (to compare
/// the two growths).
fn grows_like_redisbloom() -> bool {
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SET.get_or_init(|| std::env::var_os("CF_GROW_LIKE_REDISBLOOM").is_some())
}

/// Propagates the removal of a key this server could not keep equal to
/// its primary's.
fn replicate_dropped(ctx: &Context, name: &RedisString) {
    ctx.replicate("DEL", &[name]);
}

/// `CF.ADD key item` / `CF.ADDNX key item`.
pub(crate) fn cf_add(ctx: &Context, args: &[RedisString]) -> RedisResult {
    add_one(ctx, args, false)
}

/// `CF.ADDNX key item`.
pub(crate) fn cf_addnx(ctx: &Context, args: &[RedisString]) -> RedisResult {
    add_one(ctx, args, true)
}

fn add_one(ctx: &Context, args: &[RedisString], unique: bool) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let adding = Adding {
        unique,
        multi: false,
        create: true,
        capacity: config::settings().initial_size,
    };
    let command = if unique { "CF.ADDNX" } else { "CF.ADD" };
    add(ctx, command, args, 2, adding)
}

/// `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item...`.
pub(crate) fn cf_insert(ctx: &Context, args: &[RedisString]) -> RedisResult {
    insert_many(ctx, args, false)
}

/// `CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...`.
pub(crate) fn cf_insertnx(ctx: &Context, args: &[RedisString]) -> RedisResult {
    insert_many(ctx, args, true)
}

/// RedisBloom's parse of `CF.INSERT`: options known by their first
/// letter, the items after the first `I...` word.
fn insert_many(ctx: &Context, args: &[RedisString], unique: bool) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let now = config::settings();
    let bounds = bounds(ctx, &now);
    let mut adding = Adding {
        unique,
        multi: true,
        create: true,
        capacity: now.initial_size,
    };
    let mut at = 2;
    let mut items_at = None;
    while at < args.len() && items_at.is_none() {
        match args[at].as_slice().first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                at += 1;
                let value = args.get(at).ok_or(RedisError::WrongArity)?;
                let capacity = parse_i64(value).ok_or(error("Bad capacity"))?;
                if !bounds.capacity.contains(&capacity) {
                    return Err(RedisError::String(format!(
                        "Capacity must be in the range [cf-bucket-size * 2, {}]",
                        bounds.capacity.end()
                    )));
                }
                adding.capacity = capacity as u64;
                at += 1;
            }
            Some(b'i') => {
                at += 1;
                items_at = Some(at);
            }
            Some(b'n') => {
                adding.create = false;
                at += 1;
            }
            _ => return Err(error("Unknown argument received")),
        }
    }
    let items_at = items_at
        .filter(|&at| at < args.len())
        .ok_or(RedisError::WrongArity)?;
    let command = if unique { "CF.INSERTNX" } else { "CF.INSERT" };
    add(ctx, command, args, items_at, adding)
}

/// The filter under `key` for a lookup: none for a missing key or one of
/// another type (RedisBloom answers 0 for both).
fn lookup_filter(key: &redis_module::key::RedisKey) -> Option<&Cuckoo> {
    (key.get_value::<Cuckoo>(&CUCKOO_TYPE).ok().flatten()).filter(|cuckoo| !cuckoo.is_placeholder())
}

/// `CF.EXISTS`, `CF.MEXISTS` and `CF.COUNT`.
fn check(ctx: &Context, args: &[RedisString], multi: bool, count: bool) -> RedisResult {
    if (!multi && args.len() != 3) || (multi && args.len() < 3) {
        return Err(RedisError::WrongArity);
    }
    let key = ctx.open_key(&args[1]);
    let cuckoo = lookup_filter(&key);
    let answer = |item: &RedisString| -> u64 {
        cuckoo.map_or(0, |cuckoo| {
            let lookup = Lookup::of(item.as_slice());
            if count {
                cuckoo.count(&lookup)
            } else {
                cuckoo.contains(&lookup).into()
            }
        })
    };
    let items = &args[2..];
    if !multi {
        let value = answer(&items[0]);
        if count {
            return Ok(RedisValue::Integer(
                i64::try_from(value).unwrap_or(i64::MAX),
            ));
        }
        return Ok(RedisValue::Bool(value != 0));
    }
    raw::reply_with_array(ctx.ctx, items.len() as std::os::raw::c_long);
    for item in items {
        raw::reply_with_bool(ctx.ctx, (answer(item) != 0).into());
    }
    Ok(RedisValue::NoReply)
}

/// `CF.EXISTS key item`.
pub(crate) fn cf_exists(ctx: &Context, args: &[RedisString]) -> RedisResult {
    check(ctx, args, false, false)
}

/// `CF.MEXISTS key item...`.
pub(crate) fn cf_mexists(ctx: &Context, args: &[RedisString]) -> RedisResult {
    check(ctx, args, true, false)
}

/// `CF.COUNT key item`.
pub(crate) fn cf_count(ctx: &Context, args: &[RedisString]) -> RedisResult {
    check(ctx, args, false, true)
}

/// `CF.DEL key item`: 1 if a copy of its fingerprint was cleared.
pub(crate) fn cf_del(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let key = ctx.open_key_writable(&args[1]);
    let Ok(Some(cuckoo)) = found_mut(&key) else {
        return Err(error("Not found"));
    };
    let deleted = cuckoo.delete(&Lookup::of(args[2].as_slice()));
    if deleted {
        ctx.replicate_verbatim();
    }
    if resp3(ctx) {
        Ok(RedisValue::Bool(deleted))
    } else {
        Ok(RedisValue::Integer(deleted.into()))
    }
}

/// `CF.COMPACT key`.
pub(crate) fn cf_compact(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let key = ctx.open_key_writable(&args[1]);
    let Ok(Some(cuckoo)) = found_mut(&key) else {
        return Err(error("Cuckoo filter was not found"));
    };
    cuckoo.compact(true);
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}
