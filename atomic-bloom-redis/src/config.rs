//! The module's settings as server configs: `CONFIG GET` / `CONFIG SET`,
//! `MODULE LOADEX ... CONFIG name value`, and lines of the config file.
//!
//! | config | default | range | what it sets |
//! |---|---|---|---|
//! | `bf-error-rate` | 0.01 | (0, 1) | the rate of a filter `BF.ADD` / `BF.MADD` / `BF.INSERT` create without one |
//! | `bf-initial-size` | 100 | 1 to 2^30 | their capacity |
//! | `bf-expansion-factor` | 2 | 0 to 32768 (0: `NONSCALING`) | their growth |
//! | `bf-memory-limit-per-filter` | 0 (none) | bytes (`64mb` and the like) | the most a client's command may make one filter take (this module's; RedisBloom has none) |
//!
//! The names are RedisBloom's, registered as it registers them (Redis 8's
//! unprefixed configs): `bf-error-rate` where the server takes unprefixed
//! names (Redis 8), `bf.bf-error-rate` where it prefixes every module
//! config with the module's name (Valkey, which ignores the flag, and Redis
//! 7.0, which refuses it and gets the names without it). Either way a
//! config is named as RedisBloom's is on the same server.
//!
//! The load arguments of earlier releases (`ERROR_RATE 0.001 INITIAL_SIZE
//! 1000 EXPANSION 4`, or the config names) are still read: they set the
//! defaults, which the config file and `MODULE LOADEX ... CONFIG` then
//! override.
//!
//! The server calls the callbacks below on its main thread, as it runs
//! commands: the values are plain atomics read by commands.

use std::ffi::{c_char, c_int, c_longlong, c_void, CString};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use redis_module::{raw, Context};

/// The largest capacity RedisBloom accepts.
pub(crate) const MAX_CAPACITY: i64 = 1 << 30;
/// The largest expansion RedisBloom accepts (0 means `NONSCALING`).
pub(crate) const MAX_EXPANSION: i64 = 32768;
/// The largest error rate a filter is built at: RedisBloom caps a larger
/// one to it.
pub(crate) const MAX_ERROR_RATE: f64 = 0.25;

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

/// `bf-error-rate`, as `f64` bits.
static ERROR_RATE: AtomicU64 = AtomicU64::new(0x3f84_7ae1_47ae_147b); // 0.01
/// `bf-initial-size`.
static INITIAL_SIZE: AtomicI64 = AtomicI64::new(100);
/// `bf-expansion-factor`; 0 is `NONSCALING`.
static EXPANSION: AtomicI64 = AtomicI64::new(2);
/// `bf-memory-limit-per-filter` lives in `value.rs`, where the RDB
/// callbacks read it too.
use crate::value::MEMORY_LIMIT;

/// The defaults of a filter created without options, as the configs say
/// now.
pub(crate) fn defaults() -> Defaults {
    // Relaxed: independent values, set and read on the server's main
    // thread; they publish nothing else.
    let expansion = EXPANSION.load(Ordering::Relaxed);
    // Relaxed: as above.
    let capacity = INITIAL_SIZE.load(Ordering::Relaxed) as u64;
    // Relaxed: as above.
    let error_rate = f64::from_bits(ERROR_RATE.load(Ordering::Relaxed));
    Defaults {
        capacity,
        error_rate,
        expansion: (expansion != 0).then_some(expansion as u32),
    }
}

pub(crate) use crate::value::memory_limit;

/// A numeric config: its name, where it lives, its bounds and flags.
struct Numeric {
    name: &'static str,
    value: &'static AtomicI64,
    min: i64,
    max: i64,
    flags: u32,
}

const NUMERIC: [Numeric; 3] = [
    Numeric {
        name: "bf-initial-size",
        value: &INITIAL_SIZE,
        min: 1,
        max: MAX_CAPACITY,
        flags: raw::REDISMODULE_CONFIG_DEFAULT,
    },
    Numeric {
        name: "bf-expansion-factor",
        value: &EXPANSION,
        min: 0,
        max: MAX_EXPANSION,
        flags: raw::REDISMODULE_CONFIG_DEFAULT,
    },
    Numeric {
        name: "bf-memory-limit-per-filter",
        value: &MEMORY_LIMIT,
        min: 0,
        max: i64::MAX,
        flags: raw::REDISMODULE_CONFIG_MEMORY,
    },
];

/// Registers the configs with `start` (from the load arguments) as their
/// defaults, then has the server apply the config file and `MODULE LOADEX`
/// to them.
///
/// # Errors
///
/// A line for the server's log: a config the server would not register,
/// or a value from the config file or `LOADEX` out of range.
///
/// `register_others` registers the configs of files later in the
/// layering cannot name (the cuckoo filters' `cf-*`), with the same flags,
/// before the server applies the config file to them all.
pub(crate) fn register(
    ctx: &Context,
    start: &Defaults,
    register_others: fn(&Context, u32) -> Result<(), String>,
) -> Result<(), String> {
    // Relaxed: the module is loading; nothing else reads them yet. A rate
    // over 0.25 is kept as 0.25, as RedisBloom keeps it.
    ERROR_RATE.store(
        start.error_rate.min(MAX_ERROR_RATE).to_bits(),
        Ordering::Relaxed,
    );
    // Relaxed: as above.
    INITIAL_SIZE.store(start.capacity as i64, Ordering::Relaxed);
    // Relaxed: as above.
    EXPANSION.store(start.expansion.map_or(0, i64::from), Ordering::Relaxed);
    // Unprefixed (as RedisBloom registers them) where the server knows
    // the flag; a server that refuses it (Redis 7.0) refuses the first
    // config, and gets them all without it.
    let register_every =
        |extra| register_all(ctx, extra).and_then(|()| register_others(ctx, extra));
    if register_every(raw::REDISMODULE_CONFIG_UNPREFIXED).is_err() {
        register_every(0)?;
    }
    ctx.log_notice(
        "atomic-bloom: configs bf-error-rate, bf-initial-size, bf-expansion-factor, \
         bf-memory-limit-per-filter (CONFIG GET bf.bf-error-rate and so on where the server \
         prefixes module configs: Valkey, Redis 7)",
    );
    // Safety: filled in at load, called during load with the module's
    // context.
    let load = unsafe { raw::RedisModule_LoadConfigs }.ok_or("the server has no module configs")?;
    // Safety: as above.
    if unsafe { load(ctx.ctx) } != raw::REDISMODULE_OK as c_int {
        return Err("a bf config in the config file or MODULE LOADEX is out of range".into());
    }
    Ok(())
}

/// Registers the `bf` configs, with `extra` flags.
fn register_all(ctx: &Context, extra: u32) -> Result<(), String> {
    let failed = |name: &str| format!("the server refused the config {name}");
    // Safety (each call): the server's registration functions, filled in
    // at load, called during load; the names are NUL-terminated and the
    // server copies them; the callbacks match the server's signatures.
    let register_numeric = unsafe { raw::RedisModule_RegisterNumericConfig }
        .ok_or("the server has no module configs")?;
    let register_string = unsafe { raw::RedisModule_RegisterStringConfig }
        .ok_or("the server has no module configs")?;
    let name = CString::new("bf-error-rate").map_err(|e| e.to_string())?;
    let default = CString::new(defaults().error_rate.to_string()).map_err(|e| e.to_string())?;
    // Safety: see above.
    let status = unsafe {
        register_string(
            ctx.ctx,
            name.as_ptr(),
            default.as_ptr(),
            raw::REDISMODULE_CONFIG_DEFAULT | extra,
            Some(get_error_rate),
            Some(set_error_rate),
            None,
            std::ptr::null_mut(),
        )
    };
    if status != raw::REDISMODULE_OK as c_int {
        return Err(failed("bf-error-rate"));
    }
    for (index, config) in NUMERIC.iter().enumerate() {
        let name = CString::new(config.name).map_err(|e| e.to_string())?;
        // Safety: see above; the private data is the config's index.
        let status = unsafe {
            register_numeric(
                ctx.ctx,
                name.as_ptr(),
                // Relaxed: see `register`.
                config.value.load(Ordering::Relaxed),
                config.flags | extra,
                config.min,
                config.max,
                Some(get_numeric),
                Some(set_numeric),
                None,
                index as *mut c_void,
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(failed(config.name));
        }
    }
    Ok(())
}

extern "C" fn get_numeric(_name: *const c_char, index: *mut c_void) -> c_longlong {
    // Relaxed: see `defaults`.
    NUMERIC[index as usize].value.load(Ordering::Relaxed)
}

extern "C" fn set_numeric(
    _name: *const c_char,
    value: c_longlong,
    index: *mut c_void,
    _error: *mut *mut raw::RedisModuleString,
) -> c_int {
    // The server checked the bounds given at registration. Relaxed: see
    // `defaults`.
    NUMERIC[index as usize]
        .value
        .store(value, Ordering::Relaxed);
    raw::REDISMODULE_OK as c_int
}

/// The server takes the string `get` returns and does not free it: the
/// module keeps the last one it made (see `RedisModule_RegisterStringConfig`).
static ERROR_RATE_TEXT: std::sync::Mutex<Option<ServerString>> = std::sync::Mutex::new(None);

/// A string the module made with the server's allocator.
pub(crate) struct ServerString(pub(crate) *mut raw::RedisModuleString);

// Safety: used only on the server's main thread, under the mutex.
unsafe impl Send for ServerString {}

impl Drop for ServerString {
    fn drop(&mut self) {
        // Safety: made by `RedisModule_CreateString` with no context, freed
        // once.
        if let Some(free) = unsafe { raw::RedisModule_FreeString } {
            unsafe { free(std::ptr::null_mut(), self.0) };
        }
    }
}

/// A server string holding `text`.
pub(crate) fn server_string(text: &str) -> *mut raw::RedisModuleString {
    // Safety: filled in at load; no context: the module owns the string.
    match unsafe { raw::RedisModule_CreateString } {
        Some(create) => unsafe { create(std::ptr::null_mut(), text.as_ptr().cast(), text.len()) },
        None => std::ptr::null_mut(),
    }
}

extern "C" fn get_error_rate(
    _name: *const c_char,
    _private: *mut c_void,
) -> *mut raw::RedisModuleString {
    let text = defaults().error_rate.to_string();
    let made = ServerString(server_string(&text));
    let pointer = made.0;
    // The previous string is freed here; the server has copied it.
    *ERROR_RATE_TEXT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(made);
    pointer
}

extern "C" fn set_error_rate(
    name: *const c_char,
    value: *mut raw::RedisModuleString,
    _private: *mut c_void,
    error: *mut *mut raw::RedisModuleString,
) -> c_int {
    // The server's own parser, as for the rate of `BF.RESERVE`, and
    // RedisBloom's checks and texts: a rate over 0.25 is kept as 0.25.
    // Safety (`name`, when read): the server passes its NUL-terminated name
    // of the config.
    let name = || unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    let mut rate = 0.0;
    let text = if raw::string_to_double(value, &mut rate) != raw::Status::Ok {
        format!("Invalid value for `{}`", name())
    } else if !(rate > 0.0 && rate < 1.0) {
        format!(
            "Value for `{}` must be in the range (0.000000, 1.000000)",
            name()
        )
    } else {
        // Relaxed: see `defaults`.
        ERROR_RATE.store(rate.min(MAX_ERROR_RATE).to_bits(), Ordering::Relaxed);
        return raw::REDISMODULE_OK as c_int;
    };
    // Safety: the server frees the error string it is handed.
    unsafe { *error = server_string(&text) };
    raw::REDISMODULE_ERR as c_int
}
