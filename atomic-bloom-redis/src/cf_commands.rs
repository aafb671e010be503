//! The `CF.*` commands: RedisBloom's arguments, replies (RESP2 and RESP3)
//! and error texts, in RedisBloom's order of checks, on RedisBloom's own
//! cuckoo filters (`cuckoo/`).
//!
//! Replication: what the primary applied travels, never more, and never
//! a command whose meaning depends on the receiver's configs. A new filter
//! travels as `CF.LOADCHUNK key 1 <header>` (its every field, so a replica
//! whose `cf-*` configs differ builds the same filter), the items an add
//! inserted as `CF.INSERT key NOCREATE ITEMS ...` (an item that was there
//! already (`NX`), or had no room, changed nothing and does not travel),
//! and `CF.DEL` (when it deleted), `CF.COMPACT` and `CF.LOADCHUNK` as sent.
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
use crate::bf_reads::reply_fields;
use crate::cuckoo::config::{self, Bounds, Settings};
use crate::cuckoo::data_type::CUCKOO_TYPE;
use crate::cuckoo::{CreateError, Cuckoo, Growth, Insert, Lookup, Scanned, HEADER_BYTES};
use crate::filter::{NO_MEMORY, OVER_LIMIT};
use crate::replica::{self, creation_refused, is_replayed, not_held};

const NOT_FOUND: &str = "ERR not found";

fn resp3(ctx: &Context) -> bool {
    ctx.get_flags().contains(ContextFlags::FLAGS_RESP3)
}

/// The filter under `key`, for writing; another type is `WRONGTYPE`.
/// A load's placeholder (`redisbloom/unheld.rs`) is no filter.
fn found_mut(key: &RedisKeyWritable) -> Result<Option<&mut Cuckoo>, RedisError> {
    key.get_value::<Cuckoo>(&CUCKOO_TYPE)
        .map(|cuckoo| cuckoo.filter(|cuckoo| !cuckoo.is_placeholder()))
        .map_err(|_| RedisError::WrongType)
}

/// The ranges this command's numbers must be in: the configs' for a
/// client, RedisBloom's widest for a replayed command.
fn bounds(ctx: &Context, now: &Settings) -> Bounds {
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
fn memory_cap(ctx: &Context) -> Option<u64> {
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

/// Propagates the items an add inserted, as a `CF.INSERT` that never
/// creates, the server's own strings passed along.
fn replicate_inserted(ctx: &Context, key: &RedisString, inserted: &[&RedisString]) {
    if inserted.is_empty() {
        return;
    }
    let words = [ctx.create_string("NOCREATE"), ctx.create_string("ITEMS")];
    let mut insert: Vec<*mut raw::RedisModuleString> = Vec::with_capacity(inserted.len() + 3);
    insert.push(key.inner);
    insert.extend(words.iter().map(|word| word.inner));
    insert.extend(inserted.iter().map(|item| item.inner));
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
pub(crate) fn cf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 || args.len() % 2 == 0 {
        return Err(RedisError::WrongArity);
    }
    let capacity = parse_i64(&args[2]).ok_or(error("Bad capacity"))?;
    let now = config::settings();
    let bounds = bounds(ctx, &now);
    let max_iterations = reserve_option(
        &args,
        "MAXITERATIONS",
        now.max_iterations.into(),
        &bounds.max_iterations,
    )?;
    let bucket_size = reserve_option(
        &args,
        "BUCKETSIZE",
        now.bucket_size.into(),
        &bounds.bucket_size,
    )?;
    let expansion = reserve_option(&args, "EXPANSION", now.expansion.into(), &bounds.expansion)?;
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
    let growth = if replayed || std::env::var_os("CF_GROW_LIKE_REDISBLOOM").is_some() {
        Growth::AsRedisBloom
    } else {
        Growth::NotForDuplicates
    };
    let items = &args[items_at..];
    let cap = memory_cap(ctx);
    let resp3 = resp3(ctx);
    let mut inserted = Vec::new();
    let mut starved = false;
    let mut single = None;
    if adding.multi {
        raw::reply_with_array(ctx.ctx, items.len() as std::os::raw::c_long);
    }
    for item in items {
        let outcome = cuckoo.insert(&Lookup::of(item.as_slice()), adding.unique, growth, cap);
        if outcome == Insert::Inserted {
            inserted.push(item);
        }
        starved |= outcome == Insert::NoMemory;
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
    replicate_inserted(ctx, name, &inserted);
    match single {
        None => Ok(RedisValue::NoReply),
        Some(Insert::NoSpace) => Err(error("Filter is full")),
        Some(Insert::NoMemory) => Err(error("ERR Insufficient memory")),
        Some(Insert::OverLimit) => Err(error(OVER_LIMIT)),
        Some(outcome) if resp3 => Ok(RedisValue::Bool(outcome == Insert::Inserted)),
        Some(outcome) => Ok(RedisValue::Integer((outcome == Insert::Inserted).into())),
    }
}

/// Propagates the removal of a key this server could not keep equal to
/// its primary's.
fn replicate_dropped(ctx: &Context, name: &RedisString) {
    ctx.replicate("DEL", &[name]);
}

/// `CF.ADD key item` / `CF.ADDNX key item`.
pub(crate) fn cf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_one(ctx, args, false)
}

/// `CF.ADDNX key item`.
pub(crate) fn cf_addnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_one(ctx, args, true)
}

fn add_one(ctx: &Context, args: Vec<RedisString>, unique: bool) -> RedisResult {
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
    add(ctx, command, &args, 2, adding)
}

/// `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item...`.
pub(crate) fn cf_insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    insert_many(ctx, args, false)
}

/// `CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...`.
pub(crate) fn cf_insertnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    insert_many(ctx, args, true)
}

/// RedisBloom's parse of `CF.INSERT`: options known by their first
/// letter, the items after the first `I...` word.
fn insert_many(ctx: &Context, args: Vec<RedisString>, unique: bool) -> RedisResult {
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
    add(ctx, command, &args, items_at, adding)
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
pub(crate) fn cf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    check(ctx, &args, false, false)
}

/// `CF.MEXISTS key item...`.
pub(crate) fn cf_mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    check(ctx, &args, true, false)
}

/// `CF.COUNT key item`.
pub(crate) fn cf_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    check(ctx, &args, false, true)
}

/// `CF.DEL key item`: 1 if a copy of its fingerprint was cleared.
pub(crate) fn cf_del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
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
pub(crate) fn cf_compact(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
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

/// The filter under `args[1]` for `CF.INFO`, `CF.DEBUG` and `CF.SCANDUMP`:
/// `ERR not found` when missing, `WRONGTYPE` on another type.
fn read<T>(
    ctx: &Context,
    key: &RedisString,
    answer: impl FnOnce(&Cuckoo) -> T,
) -> Result<T, RedisError> {
    let key = ctx.open_key(key);
    match key.get_value::<Cuckoo>(&CUCKOO_TYPE) {
        Ok(Some(cuckoo)) if !cuckoo.is_placeholder() => Ok(answer(cuckoo)),
        Ok(_) => Err(error(NOT_FOUND)),
        Err(_) => Err(RedisError::WrongType),
    }
}

/// A count as RedisBloom replies with it (`RedisModule_ReplyWithLongLong`
/// of its unsigned field): the same 64 bits, signed, so that a count past
/// 2^63 (a hand-made header's, or one a delete took below 0) answers
/// negative as there.
fn integer(value: u64) -> RedisValue {
    RedisValue::Integer(value as i64)
}

/// `CF.INFO key`.
pub(crate) fn cf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let fields = read(ctx, &args[1], |cuckoo| {
        [
            ("Size", integer(cuckoo.redisbloom_bytes())),
            ("Number of buckets", integer(cuckoo.buckets())),
            ("Number of filters", integer(cuckoo.filters().len() as u64)),
            ("Number of items inserted", integer(cuckoo.items)),
            ("Number of items deleted", integer(cuckoo.deletes)),
            ("Bucket size", integer(cuckoo.bucket_size.into())),
            ("Expansion rate", integer(cuckoo.expansion.into())),
            ("Max iterations", integer(cuckoo.max_iterations.into())),
        ]
    })?;
    Ok(reply_fields(ctx, &fields))
}

/// `CF.DEBUG key`.
pub(crate) fn cf_debug(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let line = read(ctx, &args[1], Cuckoo::debug_line)?;
    Ok(RedisValue::BulkString(line))
}

/// `CF.SCANDUMP key iterator`: `[next, bytes]`, `[0, nil]` at the end.
/// Each call costs its own piece: the piece's bytes are read out of the
/// sub-filter's table, and nothing else.
pub(crate) fn cf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let iterator = parse_i64(&args[2])
        .filter(|at| *at >= 0)
        .ok_or(error("Invalid position"))?;
    PIECE_BUFFER.with_borrow_mut(|piece| {
        read(ctx, &args[1], |cuckoo| {
            let scanned = cuckoo.scan_dump(iterator, piece);
            if matches!(scanned, Scanned::NoMemory) {
                ctx.reply_error_string("ERR Insufficient memory");
                *piece = Vec::new();
                return;
            }
            raw::reply_with_array(ctx.ctx, 2);
            match scanned {
                Scanned::End => {
                    raw::reply_with_long_long(ctx.ctx, 0);
                    raw::reply_with_null(ctx.ctx);
                }
                Scanned::Header(header) => {
                    raw::reply_with_long_long(ctx.ctx, 1);
                    raw::reply_with_string_buffer(ctx.ctx, header.as_ptr().cast(), header.len());
                }
                Scanned::Piece(next) => {
                    raw::reply_with_long_long(ctx.ctx, next);
                    raw::reply_with_string_buffer(ctx.ctx, piece.as_ptr().cast(), piece.len());
                }
                Scanned::NoMemory => {}
            }
            if !matches!(scanned, Scanned::Piece(_)) {
                // A dump's end (or start): the buffer is let go.
                *piece = Vec::new();
            }
        })
    })?;
    Ok(RedisValue::NoReply)
}

thread_local! {
    /// `CF.SCANDUMP`'s piece buffer, kept while a dump goes on (a fresh
    /// 16 MiB buffer per piece costs more in page faults than the copy;
    /// commands run on the server's main thread).
    static PIECE_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `CF.LOADCHUNK key iterator data`: a header at iterator 1 makes the
/// filter (its slots empty), later pieces fill it.
pub(crate) fn cf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    let name = &args[1];
    let key = ctx.open_key_writable(name);
    let iterator = parse_i64(&args[2])
        .filter(|at| *at != 0)
        .ok_or(error("Invalid position"))?;
    let data = args[3].as_slice();
    let held = found_mut(&key)?;
    if iterator == 1 {
        if held.is_some() {
            return Err(creation_refused(
                ctx,
                "CF.LOADCHUNK",
                name,
                error("ERR item exists"),
                false,
            ));
        }
        if data.len() != HEADER_BYTES {
            return Err(error("Invalid header"));
        }
        let bounds = bounds(ctx, &config::settings());
        let made = Cuckoo::from_header(data, &bounds, memory_cap(ctx)).map_err(|failure| {
            let refused = error("Couldn't create filter!");
            match failure {
                CreateError::OutOfMemory => {
                    creation_refused(ctx, "CF.LOADCHUNK", name, refused, true)
                }
                CreateError::OverLimit => error(OVER_LIMIT),
                CreateError::Invalid => refused,
            }
        })?;
        key.set_value(&CUCKOO_TYPE, made)?;
        replica::created(ctx, name);
    } else {
        let Some(cuckoo) = held else {
            if is_replayed(ctx) {
                return Err(not_held(ctx, "CF.LOADCHUNK", name));
            }
            return Err(error(NOT_FOUND));
        };
        if !cuckoo.load_piece(iterator, data) {
            return Err(error("Couldn't load chunk!"));
        }
    }
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}
