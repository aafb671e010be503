//! The `WBF.*` commands: windowed filters, which forget on schedule
//! (`windowed/`), beside the `BF.*` ones, with RedisBloom's reply
//! conventions.
//!
//! * `WBF.RESERVE key error_rate window [TIME seconds] [GENERATIONS g]`
//! * `WBF.ADD key item`, `WBF.MADD key item [item ...]` (a client's
//!   creating the key with the module's defaults, as `BF.ADD` does)
//! * `WBF.EXISTS key item`, `WBF.MEXISTS key item [item ...]`
//! * `WBF.INFO key`
//!
//! Replication: effects, never clocks. A new key travels as a
//! `WBF.RESERVE` with its `SEED` and generations, adds as a `WBF.MADD` of
//! every item (an item added again moves into the current generation, so
//! repeats change the filter too); where the replica (or the replay)
//! cannot build the filter, it holds none, and refuses and logs the adds
//! that follow rather than make one of its defaults (`replica.rs`). A
//! count window rotates by inserts, the same on every copy. A time window
//! rotates by the primary's clock only:
//! on a primary, every command on a key first performs the rotations that
//! are due and propagates them as `WBF.ADVANCE key epoch left_ms` (reach
//! that epoch; the current generation ends `left_ms` from now), which
//! replicas and the AOF apply; they never rotate by their own clock, and
//! a replica promoted to primary goes on from the end its primary set.
//! `WBF.LOADCHUNK key offset data` replays an AOF rewrite. Both are the
//! server's own: a client's is refused.

use redis_module::{
    key::RedisKeyWritable, Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue,
};

use crate::args::{error, new_seed, parse_f64, parse_i64};
use crate::bf_reads::{reply_bools, reply_fields};
use crate::config::{self, MAX_CAPACITY, MAX_ERROR_RATE};
use crate::filter::{NO_MEMORY, OVER_LIMIT};
use crate::replica::{self, creation_refused, is_replayed, not_held};
use crate::windowed::data_type::WINDOWED_TYPE;
use crate::windowed::{
    schedule, server_ms, Loading, WindowOptions, WindowValue, Windowed, MAX_TIME_MS,
};

const NOT_FOUND: &str = "ERR not found";
const LOADING: &str = "ERR the windowed filter is still being replayed from the AOF";
const INTERNAL: &str = "ERR this command is sent by a primary to its replicas and by the \
                        AOF only: use WBF.ADD, WBF.MADD and the others";
/// The longest `TIME`, in seconds.
const MAX_TIME_SECONDS: i64 = (MAX_TIME_MS / 1000) as i64;

/// The server's monotonic clock (`server_ms`), when this command may
/// rotate time windows by it: a client's command on a primary. Replicas
/// and replays follow their primary's `WBF.ADVANCE` instead.
fn primary_clock(ctx: &Context) -> Option<i64> {
    let following = ContextFlags::REPLICATED | ContextFlags::LOADING | ContextFlags::SLAVE;
    (!ctx.get_flags().intersects(following)).then(server_ms)
}

/// The most one filter may take for this command (`bf-memory-limit-per-filter`
/// for a client's; none for a replayed one).
fn memory_cap(ctx: &Context) -> Option<usize> {
    config::memory_limit().filter(|_| !is_replayed(ctx))
}

/// The windowed value under `key` for writing; another type is `WRONGTYPE`.
fn value_mut(key: &RedisKeyWritable) -> Result<Option<&mut WindowValue>, RedisError> {
    key.get_value::<WindowValue>(&WINDOWED_TYPE)
        .map_err(|_| RedisError::WrongType)
}

/// Whether `word` is `arg`, ignoring case.
fn is(arg: &RedisString, word: &str) -> bool {
    arg.as_slice().eq_ignore_ascii_case(word.as_bytes())
}

/// `WBF.RESERVE key error_rate window [TIME seconds] [GENERATIONS g]
/// [SEED s]` (`SEED`: what a primary sends its replicas and the AOF).
fn reserve_options(args: &[RedisString]) -> Result<WindowOptions, RedisError> {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let error_rate = parse_f64(&args[2]).ok_or(error("ERR bad error rate"))?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(error(
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ));
    }
    let window = parse_i64(&args[3]).ok_or(error("ERR bad window"))?;
    if !(1..=MAX_CAPACITY).contains(&window) {
        return Err(error("ERR window must be in the range [1, 1073741824]"));
    }
    let mut options = WindowOptions {
        window: window as u64,
        error_rate: error_rate.min(MAX_ERROR_RATE),
        generations: None,
        time_ms: 0,
        seed: 0,
    };
    let mut seed = None;
    let mut at = 4;
    while at < args.len() {
        let name = &args[at];
        let value = args.get(at + 1).ok_or_else(|| {
            RedisError::String(format!(
                "ERR no value after {}",
                name.to_string_lossy().to_ascii_uppercase()
            ))
        })?;
        if is(name, "TIME") {
            let seconds = parse_i64(value)
                .filter(|seconds| (1..=MAX_TIME_SECONDS).contains(seconds))
                .ok_or(error(
                    "ERR bad TIME: whole seconds in the range [1, 315360000]",
                ))?;
            options.time_ms = seconds as u64 * 1000;
        } else if is(name, "GENERATIONS") {
            let generations = parse_i64(value)
                .filter(|g| (2..=16).contains(g))
                .ok_or(error(
                    "ERR bad GENERATIONS: it must be in the range [2, 16]",
                ))?;
            options.generations = Some(generations as u32);
        } else if is(name, "SEED") {
            let text = std::str::from_utf8(value.as_slice()).ok();
            seed = Some(
                text.and_then(|text| text.parse::<u64>().ok())
                    .ok_or(error("ERR bad seed"))?,
            );
        } else {
            return Err(RedisError::String(format!(
                "ERR unknown argument '{}': WBF.RESERVE takes TIME seconds and GENERATIONS g",
                name.to_string_lossy()
            )));
        }
        at += 2;
    }
    options.seed = seed.unwrap_or_else(new_seed);
    Ok(options)
}

/// What `WBF.ADD` / `WBF.MADD` create a missing key with: a count window
/// of the module's default capacity at its default rate.
fn default_options() -> WindowOptions {
    let defaults = config::defaults();
    WindowOptions {
        window: defaults.capacity,
        error_rate: defaults.error_rate,
        generations: None,
        time_ms: 0,
        seed: new_seed(),
    }
}

/// Creates a filter under an empty `key` and propagates its creation.
fn create<'a>(
    ctx: &Context,
    key_name: &RedisString,
    key: &'a RedisKeyWritable,
    options: WindowOptions,
) -> Result<&'a mut Windowed, RedisError> {
    let windowed = Windowed::new(options, server_ms()).map_err(|failure| match failure {
        atomic_bloom::Error::AllocationFailed { .. } => error(NO_MEMORY),
        atomic_bloom::Error::TooLarge { .. } => error("ERR the window is too large to build"),
        _ => error("ERR could not create filter"),
    })?;
    // Built lazily (calloc), so building to measure costs no resident memory.
    if memory_cap(ctx).is_some_and(|cap| windowed.filter_bytes() > WindowValue::filter_cap(cap)) {
        return Err(error(OVER_LIMIT));
    }
    let options = windowed.options;
    key.set_value(&WINDOWED_TYPE, WindowValue::Ready(windowed))?;
    schedule::note_key(ctx, key_name);
    replica::created(ctx, key_name);
    replicate_creation(ctx, key_name, &options);
    match value_mut(key)? {
        Some(WindowValue::Ready(windowed)) => Ok(windowed),
        _ => Err(error("ERR could not create filter")),
    }
}

/// Propagates a new filter as a `WBF.RESERVE` with its seed and
/// generations.
fn replicate_creation(ctx: &Context, key: &RedisString, options: &WindowOptions) {
    let rate = options.error_rate.to_string();
    let window = options.window.to_string();
    let seconds = (options.time_ms / 1000).to_string();
    let generations = options.generations.unwrap_or(0).to_string();
    let seed = options.seed.to_string();
    let mut reserve: Vec<&[u8]> = vec![key.as_slice(), rate.as_bytes(), window.as_bytes()];
    if options.time_ms > 0 {
        reserve.extend([&b"TIME"[..], seconds.as_bytes()]);
    }
    reserve.extend([
        &b"GENERATIONS"[..],
        generations.as_bytes(),
        b"SEED",
        seed.as_bytes(),
    ]);
    ctx.replicate("WBF.RESERVE", reserve.as_slice());
}

/// Performs the rotations due by the primary's clock (`clock`: `None` on
/// a replica or in a replay), propagates them as `WBF.ADVANCE`, and
/// notes the key's next end for the timer (`windowed/schedule.rs`).
fn catch_up(ctx: &Context, key: &RedisString, windowed: &mut Windowed, clock: Option<i64>) {
    let Some(now) = clock else {
        return;
    };
    if schedule::catch_up(ctx, key, windowed, now) {
        schedule::note_window(ctx, key, windowed);
    }
}

/// Adds `items` to the filter under `key_name`, creating it if missing.
fn add_items(
    ctx: &Context,
    command: &str,
    key_name: &RedisString,
    items: &[&[u8]],
) -> Result<Vec<bool>, RedisError> {
    let key = ctx.open_key_writable(key_name);
    let windowed = match value_mut(&key)? {
        Some(WindowValue::Ready(windowed)) => {
            catch_up(ctx, key_name, windowed, primary_clock(ctx));
            windowed
        }
        Some(WindowValue::Loading(_)) => return Err(error(LOADING)),
        None if is_replayed(ctx) => return Err(not_held(ctx, command, key_name)),
        None => create(ctx, key_name, &key, default_options())?,
    };
    let answers = items
        .iter()
        .map(|item| windowed.filter.insert(item))
        .collect();
    let mut madd: Vec<&[u8]> = Vec::with_capacity(items.len() + 1);
    madd.push(key_name.as_slice());
    madd.extend_from_slice(items);
    ctx.replicate("WBF.MADD", madd.as_slice());
    Ok(answers)
}

/// The items of a command, from argument `from` on.
fn items(args: &[RedisString], from: usize) -> Vec<&[u8]> {
    args[from..].iter().map(RedisString::as_slice).collect()
}

/// `WBF.RESERVE key error_rate window [TIME seconds] [GENERATIONS g]`.
/// A replayed one that fails is logged (`replica.rs`).
pub(crate) fn wbf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let options = reserve_options(&args)?;
    let key = ctx.open_key_writable(&args[1]);
    if value_mut(&key)?.is_some() {
        return Err(creation_refused(
            ctx,
            "WBF.RESERVE",
            &args[1],
            error("ERR item exists"),
            false,
        ));
    }
    // Not remembered (`replica.rs`): a replayed WBF add never creates.
    create(ctx, &args[1], &key, options)
        .map_err(|refused| creation_refused(ctx, "WBF.RESERVE", &args[1], refused, false))?;
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `WBF.ADD key item`: 1 if the item was not seen within the window.
pub(crate) fn wbf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let answers = add_items(ctx, "WBF.ADD", &args[1], &items(&args, 2))?;
    Ok(RedisValue::Bool(answers[0]))
}

/// `WBF.MADD key item [item ...]`: one answer per item.
pub(crate) fn wbf_madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let answers = add_items(ctx, "WBF.MADD", &args[1], &items(&args, 2))?;
    Ok(reply_bools(ctx, &answers))
}

/// Answers from the value under `key_name` (`None`: missing), after the
/// rotations due on a primary: the key is opened for writing only when
/// one is due (a read otherwise touches nothing a `WATCH` sees).
fn read_value<T>(
    ctx: &Context,
    key_name: &RedisString,
    answer: impl FnOnce(Option<&WindowValue>) -> Result<T, RedisError>,
) -> Result<T, RedisError> {
    let clock = primary_clock(ctx);
    let key = ctx.open_key(key_name);
    let value = key
        .get_value::<WindowValue>(&WINDOWED_TYPE)
        .map_err(|_| RedisError::WrongType)?;
    let due = match (value, clock) {
        (Some(WindowValue::Ready(windowed)), Some(now)) => {
            windowed.is_timed() && now >= windowed.next_rotation_ms
        }
        _ => false,
    };
    if !due {
        return answer(value);
    }
    drop(key);
    let key = ctx.open_key_writable(key_name);
    let value = value_mut(&key)?;
    if let Some(WindowValue::Ready(windowed)) = value {
        catch_up(ctx, key_name, windowed, clock);
    }
    answer(value_mut(&key)?.map(|value| &*value))
}

/// Whether each item was seen within the window (`None`: no such key).
fn lookup(
    ctx: &Context,
    key_name: &RedisString,
    items: &[&[u8]],
) -> Result<Option<Vec<bool>>, RedisError> {
    read_value(ctx, key_name, |value| match value {
        None => Ok(None),
        Some(WindowValue::Loading(_)) => Err(error(LOADING)),
        Some(WindowValue::Ready(windowed)) => Ok(Some(
            items
                .iter()
                .map(|item| windowed.filter.contains(item))
                .collect(),
        )),
    })
}

/// `WBF.EXISTS key item`: 0 for a missing key, as `BF.EXISTS`.
pub(crate) fn wbf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let found = lookup(ctx, &args[1], &items(&args, 2))?.is_some_and(|found| found[0]);
    Ok(RedisValue::Bool(found))
}

/// `WBF.MEXISTS key item [item ...]`.
pub(crate) fn wbf_mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let items = items(&args, 2);
    let found = lookup(ctx, &args[1], &items)?.unwrap_or_else(|| vec![false; items.len()]);
    Ok(reply_bools(ctx, &found))
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `WBF.INFO key`: `Window`, `Error rate`, `Generations`, `Epoch`, `Time
/// window ms` (0: a count window), `Size` (bytes) and `Items in current
/// generation`.
pub(crate) fn wbf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let fields = read_value(ctx, &args[1], |value| match value {
        None => Err(error(NOT_FOUND)),
        Some(WindowValue::Loading(_)) => Err(error(LOADING)),
        Some(value @ WindowValue::Ready(windowed)) => Ok([
            (
                "Window",
                RedisValue::Integer(to_i64(windowed.options.window)),
            ),
            ("Error rate", RedisValue::Float(windowed.options.error_rate)),
            (
                "Generations",
                RedisValue::Integer(windowed.filter.generations().into()),
            ),
            (
                "Epoch",
                RedisValue::Integer(to_i64(windowed.filter.epoch())),
            ),
            (
                "Time window ms",
                RedisValue::Integer(to_i64(windowed.options.time_ms)),
            ),
            (
                "Size",
                RedisValue::Integer(to_i64(value.memory_bytes() as u64)),
            ),
            (
                "Items in current generation",
                RedisValue::Integer(to_i64(windowed.filter.generation_len() as u64)),
            ),
        ]),
    })?;
    Ok(reply_fields(ctx, &fields))
}

/// `WBF.ADVANCE key epoch left_ms`: a primary's rotations, for its
/// replicas and the AOF.
pub(crate) fn wbf_advance(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    if !is_replayed(ctx) {
        return Err(error(INTERNAL));
    }
    let epoch = parse_i64(&args[2])
        .and_then(|epoch| u64::try_from(epoch).ok())
        .ok_or(error("ERR bad epoch"))?;
    let left = parse_i64(&args[3]).ok_or(error("ERR bad time left"))?;
    let key = ctx.open_key_writable(&args[1]);
    match value_mut(&key)? {
        Some(WindowValue::Ready(windowed)) => {
            windowed.follow(epoch, left, server_ms()).map_err(error)?;
            schedule::note_window(ctx, &args[1], windowed);
        }
        Some(WindowValue::Loading(_)) => return Err(error(LOADING)),
        None => return Err(not_held(ctx, "WBF.ADVANCE", &args[1])),
    }
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `WBF.LOADCHUNK key offset data`: a chunk of a key's record, as an AOF
/// rewrite wrote it (`windowed/data_type.rs`).
pub(crate) fn wbf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    if !is_replayed(ctx) {
        return Err(error(INTERNAL));
    }
    let offset = parse_i64(&args[2])
        .and_then(|offset| u64::try_from(offset).ok())
        .ok_or(error("ERR bad offset"))?;
    let chunk = args[3].as_slice();
    let now = server_ms();
    let key = ctx.open_key_writable(&args[1]);
    let outcome = match value_mut(&key)? {
        None if offset == 0 => Loading::start(chunk, now),
        Some(value @ WindowValue::Loading(_)) if offset > 0 => {
            let WindowValue::Loading(loading) = std::mem::replace(
                value,
                WindowValue::Loading(Loading {
                    total: 0,
                    received: Vec::new(),
                }),
            ) else {
                unreachable!("matched as loading")
            };
            loading.resume(offset, chunk, now)
        }
        _ => return Err(error("ERR a chunk out of place")),
    };
    match outcome {
        Ok(Ok(windowed)) => {
            key.set_value(&WINDOWED_TYPE, WindowValue::Ready(windowed))?;
            schedule::note_key(ctx, &args[1]);
        }
        Ok(Err(loading)) => key.set_value(&WINDOWED_TYPE, WindowValue::Loading(loading))?,
        Err(refused) => {
            key.delete()?;
            return Err(RedisError::String(format!("ERR {refused}")));
        }
    }
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}
