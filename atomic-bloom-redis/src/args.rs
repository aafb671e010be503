//! Parsing what clients and the server's `--loadmodule` line send: numbers
//! as the server parses them (RedisBloom's parsers are the server's), the
//! options of `BF.RESERVE` and `BF.INSERT`, the module's defaults, and
//! RedisBloom's error texts for each refusal.

use redis_module::{RedisError, RedisString};

use crate::config::{
    self, Defaults, MAX_CAPACITY, MAX_ERROR_RATE, MAX_EXPANSION, REDISBLOOM_DEFAULTS,
};
use crate::filter::Options;
use crate::redisbloom::ChainOptions;

/// Parses the module's load arguments (`ERROR_RATE 0.001 INITIAL_SIZE 1000
/// EXPANSION 4`; RedisBloom 8's `bf-error-rate`, `bf-initial-size`,
/// `bf-expansion-factor` also) into the configs' starting values, and
/// `CF_MAX_EXPANSIONS n` (or `cf-max-expansions n`) into
/// `cf-max-expansions`'s.
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
        let value = pair[1];
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
            "cf_max_expansions" | "cf-max-expansions" => {
                let most = parse_i64(value)
                    .ok_or_else(|| bad_argument("CF_MAX_EXPANSIONS", value, "in [1, 65536]"))?;
                crate::cuckoo::config::set_max_expansions(most)?;
            }
            _ => {
                return Err(format!(
                    "unknown module argument '{name}': pass ERROR_RATE, INITIAL_SIZE, EXPANSION \
                     or CF_MAX_EXPANSIONS"
                ))
            }
        }
    }
    Ok(defaults)
}

fn bad_argument(name: &str, value: &RedisString, range: &str) -> String {
    format!(
        "invalid {name} '{}': it must be a number {range}",
        value.to_string_lossy()
    )
}

/// A double as the server parses one (`RedisModule_StringToDouble`, as
/// RedisBloom does): the whole argument; infinities pass (the range checks
/// refuse them), NaN does not.
pub(crate) fn parse_f64(arg: &RedisString) -> Option<f64> {
    arg.parse_float().ok()
}

/// A 64-bit integer as the server parses one (`RedisModule_StringToLongLong`,
/// as RedisBloom does): the whole argument, no sign but `-`, no leading
/// zeros, no spaces.
pub(crate) fn parse_i64(arg: &RedisString) -> Option<i64> {
    arg.parse_integer().ok()
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

/// `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]`:
/// RedisBloom's parse, in its order, with its error texts and its arity (4
/// to 7 arguments), so every reply is RedisBloom's. Arguments after the
/// capacity that name no option are ignored, as RedisBloom ignores them.
///
/// `SEED s` is this module's: a primary propagates each new filter's seed
/// with it, so that replicas and the AOF build the same bits (`replayed`:
/// the command comes from the primary or the AOF, which may carry all of
/// `EXPANSION n NONSCALING SEED s`). A client may pin a seed too, within
/// RedisBloom's arity.
pub(crate) fn reserve_options(args: &[RedisString], replayed: bool) -> Result<Reserve, RedisError> {
    let most = if replayed { 9 } else { 7 };
    if !(4..=most).contains(&args.len()) {
        return Err(RedisError::WrongArity);
    }
    let error_rate = parse_f64(&args[2]).ok_or(error("ERR bad error rate"))?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(error(
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ));
    }
    let error_rate = error_rate.min(MAX_ERROR_RATE);
    let capacity = parse_i64(&args[3]).ok_or(error("ERR bad capacity"))?;
    if !(1..=MAX_CAPACITY).contains(&capacity) {
        return Err(error("ERR capacity must be in the range [1, 1073741824]"));
    }
    let options = &args[4..];
    let find = |word: &str| options.iter().position(|arg| is(arg, word));
    let configured = config::defaults().expansion;
    // `bf-expansion-factor 0` makes new filters NONSCALING, as the option;
    // but not one the primary (or the AOF) created: it names its growth
    // (`EXPANSION n` or `NONSCALING`), which this server's default must not
    // overrule.
    let names_growth = find("EXPANSION").is_some() || find("NONSCALING").is_some();
    let default_nonscaling = configured.is_none() && !(replayed && names_growth);
    let mut nonscaling = default_nonscaling || find("NONSCALING").is_some();
    let mut expansion = configured.map_or(0, i64::from);
    if let Some(at) = find("EXPANSION") {
        let value = options.get(at + 1).ok_or(error("ERR no expansion"))?;
        expansion = parse_i64(value).ok_or(error("ERR bad expansion"))?;
        if expansion == 0 {
            nonscaling = true;
        } else if nonscaling {
            return Err(error("Nonscaling filters cannot expand"));
        }
        if !(0..=MAX_EXPANSION).contains(&expansion) {
            return Err(error("ERR expansion must be in the range [0, 32768]"));
        }
    }
    let seed = match find("SEED") {
        Some(at) => {
            let value = options.get(at + 1).ok_or(error("ERR no seed"))?;
            Some(parse_u64(value.as_slice()).ok_or(error("ERR bad seed"))?)
        }
        None => None,
    };
    Ok(Reserve {
        options: Options {
            capacity: capacity as u64,
            error_rate,
            expansion: (!nonscaling && expansion != 0).then_some(expansion as u32),
            seed: seed.unwrap_or_else(new_seed),
        },
        chain: ChainOptions {
            capacity: capacity as u64,
            error_rate,
            growth: expansion as u32,
            nonscaling,
        },
        seeded: seed.is_some(),
    })
}

/// What `BF.RESERVE` asks for.
pub(crate) struct Reserve {
    /// This module's filter.
    pub(crate) options: Options,
    /// RedisBloom's, as it would build it (a replayed `BF.RESERVE` with no
    /// `SEED` is RedisBloom's: this module's primary always names one).
    pub(crate) chain: ChainOptions,
    /// Whether it named its `SEED`.
    pub(crate) seeded: bool,
}

/// A seed as the primary writes one: a `u64` in decimal.
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
    /// The same, for a filter RedisBloom would make (`replica.rs`).
    pub(crate) chain: ChainOptions,
    pub(crate) create: bool,
    pub(crate) items_at: usize,
}

pub(crate) fn insert_args(args: &[RedisString]) -> Result<InsertArgs, RedisError> {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let defaults = config::defaults();
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
                capacity = parse_i64(value()?)
                    .filter(|capacity| (1..=MAX_CAPACITY).contains(capacity))
                    .ok_or(error("Bad capacity"))?;
                at += 2;
            }
            Some(b'e') if word.get(1) == Some(&b'r') => {
                error_rate = parse_f64(value()?)
                    .filter(|rate| *rate > 0.0 && *rate < 1.0)
                    .ok_or(error("Bad error rate"))?;
                at += 2;
            }
            Some(b'e') => {
                expansion = parse_i64(value()?)
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
    let nonscaling = nonscaling || expansion == 0;
    Ok(InsertArgs {
        options: Options {
            capacity: capacity as u64,
            error_rate: error_rate.min(MAX_ERROR_RATE),
            expansion: (!nonscaling).then_some(expansion as u32),
            seed: new_seed(),
        },
        chain: ChainOptions {
            capacity: capacity as u64,
            error_rate: error_rate.min(MAX_ERROR_RATE),
            growth: expansion as u32,
            nonscaling,
        },
        create,
        items_at,
    })
}

/// The options of a filter RedisBloom's `BF.ADD` / `BF.MADD` create: the
/// configs' (RedisBloom's names and defaults).
pub(crate) fn default_chain_options() -> ChainOptions {
    let defaults = config::defaults();
    ChainOptions {
        capacity: defaults.capacity,
        error_rate: defaults.error_rate,
        growth: defaults.expansion.unwrap_or(0),
        nonscaling: defaults.expansion.is_none(),
    }
}

/// The options of a filter `BF.ADD` / `BF.MADD` create: the configs'.
pub(crate) fn default_options() -> Options {
    let defaults = config::defaults();
    Options {
        capacity: defaults.capacity,
        error_rate: defaults.error_rate,
        expansion: defaults.expansion,
        seed: new_seed(),
    }
}
