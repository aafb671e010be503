//! Parsing what clients and the server's `--loadmodule` line send: numbers
//! as RedisBloom parses them, the options of `BF.RESERVE` and `BF.INSERT`,
//! the module's defaults, and RedisBloom's error texts for each refusal.

use redis_module::{RedisError, RedisString};

use crate::value::Options;

/// The largest capacity RedisBloom accepts.
pub(crate) const MAX_CAPACITY: i64 = 1 << 30;
/// The largest expansion RedisBloom accepts (0 means `NONSCALING`).
pub(crate) const MAX_EXPANSION: i64 = 32768;

/// What a filter created without options gets (`BF.ADD` on a new key).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Defaults {
    pub(crate) capacity: u64,
    pub(crate) error_rate: f64,
    /// `None`: new filters are `NONSCALING` (`EXPANSION 0`).
    pub(crate) expansion: Option<u32>,
}

/// RedisBloom's defaults: 100 items at 1%, doubling.
pub(crate) const REDISBLOOM_DEFAULTS: Defaults = Defaults {
    capacity: 100,
    error_rate: 0.01,
    expansion: Some(2),
};

/// The largest error rate a filter is built at: RedisBloom caps a larger
/// one to it.
pub(crate) const MAX_ERROR_RATE: f64 = 0.25;

/// The defaults of a filter created without options, as the configs say
/// now (`config.rs`).
pub(crate) fn defaults() -> Defaults {
    crate::config::defaults()
}

/// Parses the module's load arguments (`ERROR_RATE 0.001 INITIAL_SIZE 1000
/// EXPANSION 4`; RedisBloom 8's `bf-error-rate`, `bf-initial-size`,
/// `bf-expansion-factor` also) into the configs' starting values. A
/// `CF_MAX_EXPANSIONS` is accepted and ignored: this module has no cuckoo
/// filters.
///
/// # Errors
///
/// A message for the server's log when a name is unknown, a value is
/// missing or out of RedisBloom's range.
pub(crate) fn load_defaults(args: &[RedisString]) -> Result<Defaults, String> {
    let mut defaults = REDISBLOOM_DEFAULTS;
    // A single empty argument is no argument (as RedisBloom treats it).
    let args: Vec<&RedisString> = args
        .iter()
        .filter(|arg| !(args.len() == 1 && arg.as_slice().is_empty()))
        .collect();
    if args.len() % 2 != 0 {
        return Err(format!(
            "module arguments come in pairs (NAME value), got {}",
            args.len()
        ));
    }
    for pair in args.chunks(2) {
        let name = String::from_utf8_lossy(pair[0].as_slice()).to_ascii_lowercase();
        let value = pair[1].as_slice();
        match name.as_str() {
            "error_rate" | "bf-error-rate" => {
                defaults.error_rate = parse_f64(value)
                    .filter(|rate| *rate > 0.0 && *rate < 1.0)
                    .ok_or_else(|| bad_argument("ERROR_RATE", value, "in (0, 1)"))?;
            }
            "initial_size" | "bf-initial-size" => {
                defaults.capacity = parse_i64(value)
                    .filter(|capacity| (1..=MAX_CAPACITY).contains(capacity))
                    .ok_or_else(|| bad_argument("INITIAL_SIZE", value, "in [1, 1073741824]"))?
                    as u64;
            }
            "expansion" | "bf-expansion-factor" => {
                let expansion = parse_i64(value)
                    .filter(|expansion| (0..=MAX_EXPANSION).contains(expansion))
                    .ok_or_else(|| bad_argument("EXPANSION", value, "in [0, 32768]"))?;
                defaults.expansion = (expansion != 0).then_some(expansion as u32);
            }
            "cf_max_expansions" | "cf-max-expansions" => {}
            _ => {
                return Err(format!(
                    "unknown module argument '{name}': pass ERROR_RATE, INITIAL_SIZE or EXPANSION"
                ))
            }
        }
    }
    Ok(defaults)
}

fn bad_argument(name: &str, value: &[u8], range: &str) -> String {
    format!(
        "invalid {name} '{}': it must be a number {range}",
        String::from_utf8_lossy(value)
    )
}

/// A double as Redis parses one: the whole argument, finite or not (the
/// range checks reject what is not).
pub(crate) fn parse_f64(bytes: &[u8]) -> Option<f64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// A 64-bit integer: the whole argument, nothing more.
pub(crate) fn parse_i64(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// A fresh random seed for a new filter; wyhash-seeded from OS entropy, or
/// a fixed one if the OS refuses (logged).
pub(crate) fn new_seed() -> u64 {
    getrandom::u64().unwrap_or_else(|error| {
        redis_module::logging::log_warning(format!(
            "atomic-bloom: no OS entropy for a seed ({error}); using a fixed one"
        ));
        0x5eed_5eed_5eed_5eed
    })
}

/// A module error with RedisBloom's text.
pub(crate) fn error(text: &'static str) -> RedisError {
    RedisError::Str(text)
}

/// Whether `arg` is `word`, ignoring case.
fn is(arg: &RedisString, word: &str) -> bool {
    arg.as_slice().eq_ignore_ascii_case(word.as_bytes())
}

/// `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [SEED s]`:
/// RedisBloom's parse, in its order. `SEED` is this module's: a primary
/// propagates it so that replicas and the AOF build the same bits.
pub(crate) fn reserve_options(args: &[RedisString]) -> Result<Options, RedisError> {
    if !(4..=9).contains(&args.len()) {
        return Err(RedisError::WrongArity);
    }
    let error_rate = parse_f64(args[2].as_slice()).ok_or(error("ERR bad error rate"))?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(error(
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ));
    }
    let error_rate = error_rate.min(MAX_ERROR_RATE);
    let capacity = parse_i64(args[3].as_slice()).ok_or(error("ERR bad capacity"))?;
    if !(1..=MAX_CAPACITY).contains(&capacity) {
        return Err(error("ERR capacity must be in the range [1, 1073741824]"));
    }
    let options = &args[4..];
    let nonscaling = options.iter().any(|arg| is(arg, "NONSCALING"));
    let mut expansion = if nonscaling {
        None
    } else {
        defaults().expansion
    };
    if let Some(at) = options.iter().position(|arg| is(arg, "EXPANSION")) {
        let value = options.get(at + 1).ok_or(error("ERR no expansion"))?;
        let value = parse_i64(value.as_slice()).ok_or(error("ERR bad expansion"))?;
        if value != 0 && nonscaling {
            return Err(error("Nonscaling filters cannot expand"));
        }
        if !(0..=MAX_EXPANSION).contains(&value) {
            return Err(error("ERR expansion must be in the range [0, 32768]"));
        }
        expansion = (value != 0).then_some(value as u32);
    }
    let seed = match options.iter().position(|arg| is(arg, "SEED")) {
        Some(at) => {
            let value = options.get(at + 1).ok_or(error("ERR no seed"))?;
            parse_u64(value.as_slice()).ok_or(error("ERR bad seed"))?
        }
        None => new_seed(),
    };
    Ok(Options {
        capacity: capacity as u64,
        error_rate,
        expansion,
        seed,
    })
}

fn parse_u64(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE]
/// [NONSCALING] ITEMS item ...`: the options for a new key, whether one may
/// be created, and where the items start. RedisBloom's parse: an option is
/// known by its first letters, may repeat (the last wins), and errors are
/// its texts.
pub(crate) struct InsertArgs {
    pub(crate) options: Options,
    pub(crate) create: bool,
    pub(crate) items_at: usize,
}

pub(crate) fn insert_args(args: &[RedisString]) -> Result<InsertArgs, RedisError> {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let defaults = defaults();
    let (mut capacity, mut error_rate, mut expansion) = (
        defaults.capacity as i64,
        defaults.error_rate,
        defaults.expansion.map_or(0, i64::from),
    );
    let (mut create, mut nonscaling) = (true, false);
    let mut at = 2;
    let items_at = loop {
        let Some(arg) = args.get(at) else {
            return Err(RedisError::WrongArity);
        };
        let word = arg.as_slice().to_ascii_lowercase();
        let value = || args.get(at + 1).ok_or(RedisError::WrongArity);
        match word.first() {
            Some(b'i') => break at + 1,
            Some(b'c') => {
                capacity = parse_i64(value()?.as_slice())
                    .filter(|capacity| (1..=MAX_CAPACITY).contains(capacity))
                    .ok_or(error("Bad capacity"))?;
                at += 2;
            }
            Some(b'e') if word.get(1) == Some(&b'r') => {
                error_rate = parse_f64(value()?.as_slice())
                    .filter(|rate| *rate > 0.0 && *rate < 1.0)
                    .ok_or(error("Bad error rate"))?;
                at += 2;
            }
            Some(b'e') => {
                expansion = parse_i64(value()?.as_slice())
                    .filter(|expansion| (0..=MAX_EXPANSION).contains(expansion))
                    .ok_or(error("Bad expansion"))?;
                at += 2;
            }
            Some(b'n') if word.get(2) == Some(&b'c') => {
                create = false;
                at += 1;
            }
            Some(b'n') => {
                nonscaling = true;
                at += 1;
            }
            _ => return Err(error("Unknown argument received")),
        }
    };
    if items_at >= args.len() {
        return Err(RedisError::WrongArity);
    }
    Ok(InsertArgs {
        options: Options {
            capacity: capacity as u64,
            error_rate: error_rate.min(MAX_ERROR_RATE),
            expansion: (!nonscaling && expansion != 0).then_some(expansion as u32),
            seed: new_seed(),
        },
        create,
        items_at,
    })
}
