//! RedisBloom's cuckoo-filter configs, registered as RedisBloom registers
//! them (string configs with its names, ranges and error texts):
//!
//! | config | default | range | what it sets |
//! |---|---|---|---|
//! | `cf-bucket-size` | 2 | 1 to 255 (to half of `cf-initial-size` once that is set) | slots per bucket of a filter `CF.ADD` / `CF.INSERT` create |
//! | `cf-initial-size` | 1024 | 4 (twice `cf-bucket-size` once that is set) to 2^30 | their capacity |
//! | `cf-max-iterations` | 20 | 1 to 65535 | their relocation moves |
//! | `cf-expansion-factor` | 1 | 0 to 32768 (0: never grow) | their growth |
//! | `cf-max-expansions` | 32 | 1 to 65536 | the sub-filters past which a client's add is refused |
//!
//! Named as RedisBloom's are on the same server (`bf.cf-bucket-size` where
//! the server prefixes module configs). The ranges are kept here, as the
//! commands check `BUCKETSIZE` and `CAPACITY` against them, and a
//! `CF.LOADCHUNK` header's bucket size.

use std::ffi::{c_char, c_int, c_void, CString};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use redis_module::{raw, Context};

use crate::config::{server_string, ServerString};

/// The largest capacity (`cf-initial-size`'s and `CF.RESERVE`'s).
pub(crate) const MAX_CAPACITY: i64 = 1 << 30;

/// One config: its name, value and range (the range's ends may move).
struct Setting {
    name: &'static str,
    value: AtomicI64,
    min: AtomicI64,
    max: AtomicI64,
}

impl Setting {
    const fn new(name: &'static str, value: i64, min: i64, max: i64) -> Setting {
        Setting {
            name,
            value: AtomicI64::new(value),
            min: AtomicI64::new(min),
            max: AtomicI64::new(max),
        }
    }

    // Relaxed (every load and store of these): configs are set and read
    // on the server's main thread; they publish nothing else.
    fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    fn range(&self) -> RangeInclusive<i64> {
        // Relaxed: see `get`.
        self.min.load(Ordering::Relaxed)..=self.max.load(Ordering::Relaxed)
    }
}

const BUCKET_SIZE: usize = 0;
const INITIAL_SIZE: usize = 1;
const MAX_ITERATIONS: usize = 2;
const EXPANSION: usize = 3;
const MAX_EXPANSIONS: usize = 4;

static SETTINGS: [Setting; 5] = [
    Setting::new("cf-bucket-size", 2, 1, 255),
    Setting::new("cf-initial-size", 1024, 4, MAX_CAPACITY),
    Setting::new("cf-max-iterations", 20, 1, 65535),
    Setting::new("cf-expansion-factor", 1, 0, 32768),
    Setting::new("cf-max-expansions", 32, 1, 65536),
];

/// The ranges a command checks its numbers against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) bucket_size: RangeInclusive<i64>,
    pub(crate) capacity: RangeInclusive<i64>,
    pub(crate) max_iterations: RangeInclusive<i64>,
    pub(crate) expansion: RangeInclusive<i64>,
}

impl Bounds {
    /// RedisBloom's ranges before any config moved them: what a command
    /// the server replays (its primary's, its AOF's) is held to, so that
    /// this server's own configs never refuse what the primary accepted.
    pub(crate) fn widest() -> Bounds {
        Bounds {
            bucket_size: 1..=255,
            capacity: 4..=MAX_CAPACITY,
            max_iterations: 1..=65535,
            expansion: 0..=32768,
        }
    }
}

/// What new filters get, and the ranges, as the configs say now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) bucket_size: u16,
    pub(crate) initial_size: u64,
    pub(crate) max_iterations: u16,
    pub(crate) expansion: u16,
    pub(crate) max_expansions: usize,
    pub(crate) bounds: Bounds,
}

/// The configs now.
pub(crate) fn settings() -> Settings {
    Settings {
        bucket_size: SETTINGS[BUCKET_SIZE].get() as u16,
        initial_size: SETTINGS[INITIAL_SIZE].get() as u64,
        max_iterations: SETTINGS[MAX_ITERATIONS].get() as u16,
        expansion: SETTINGS[EXPANSION].get() as u16,
        max_expansions: SETTINGS[MAX_EXPANSIONS].get() as usize,
        bounds: Bounds {
            bucket_size: SETTINGS[BUCKET_SIZE].range(),
            capacity: SETTINGS[INITIAL_SIZE].range(),
            max_iterations: SETTINGS[MAX_ITERATIONS].range(),
            expansion: SETTINGS[EXPANSION].range(),
        },
    }
}

/// Sets config `index` to `value` if it is in range, moving the ranges
/// that depend on it as RedisBloom does; the error text otherwise.
fn set(index: usize, name: &str, value: i64) -> Result<(), String> {
    let setting = &SETTINGS[index];
    let range = setting.range();
    if !range.contains(&value) {
        return Err(format!(
            "Value for `{name}` must be in the range [{}, {}]",
            range.start(),
            range.end()
        ));
    }
    // Relaxed (the stores below): see `Setting::get`.
    setting.value.store(value, Ordering::Relaxed);
    match index {
        BUCKET_SIZE => SETTINGS[INITIAL_SIZE]
            .min
            .store(value * 2, Ordering::Relaxed),
        INITIAL_SIZE => SETTINGS[BUCKET_SIZE]
            .max
            .store((value / 2).min(255), Ordering::Relaxed),
        _ => {}
    }
    Ok(())
}

/// Sets `cf-max-expansions` from the module's load arguments
/// (`CF_MAX_EXPANSIONS n` or `cf-max-expansions n`).
///
/// # Errors
///
/// A line for the log when `n` is out of range.
pub(crate) fn set_max_expansions(value: i64) -> Result<(), String> {
    set(MAX_EXPANSIONS, "cf-max-expansions", value)
}

/// The strings `get` handed the server, one per config (the server does
/// not free them).
static TEXTS: Mutex<[Option<ServerString>; 5]> = Mutex::new([None, None, None, None, None]);

/// Registers the five configs with `extra` flags (see `config.rs`).
///
/// # Errors
///
/// A line for the log when the server refuses one.
pub(crate) fn register_all(ctx: &Context, extra: u32) -> Result<(), String> {
    // Safety: filled in at load; called during load.
    let register = unsafe { raw::RedisModule_RegisterStringConfig }
        .ok_or("the server has no module configs")?;
    for (index, setting) in SETTINGS.iter().enumerate() {
        let name = CString::new(setting.name).map_err(|e| e.to_string())?;
        let default = CString::new(setting.get().to_string()).map_err(|e| e.to_string())?;
        // Safety: the server's registration function during load; the
        // strings are NUL-terminated and copied by the server; the private
        // data is the config's index.
        let status = unsafe {
            register(
                ctx.ctx,
                name.as_ptr(),
                default.as_ptr(),
                raw::REDISMODULE_CONFIG_DEFAULT | extra,
                Some(get_text),
                Some(set_text),
                None,
                index as *mut c_void,
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(format!("the server refused the config {}", setting.name));
        }
    }
    Ok(())
}

extern "C" fn get_text(_name: *const c_char, index: *mut c_void) -> *mut raw::RedisModuleString {
    let index = index as usize;
    let made = ServerString(server_string(&SETTINGS[index].get().to_string()));
    let pointer = made.0;
    // The string handed out before is freed here; the server has copied it.
    TEXTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())[index] = Some(made);
    pointer
}

extern "C" fn set_text(
    name: *const c_char,
    value: *mut raw::RedisModuleString,
    index: *mut c_void,
    error: *mut *mut raw::RedisModuleString,
) -> c_int {
    // Safety: the server passes its NUL-terminated name of the config.
    let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    let mut number = 0i64;
    let outcome = if raw::string_to_longlong(value, &mut number) != raw::Status::Ok {
        Err(format!("Invalid value for `{name}`"))
    } else {
        set(index as usize, &name, number)
    };
    match outcome {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        Err(text) => {
            // Safety: the server frees the error string it is handed.
            unsafe { *error = server_string(&text) };
            raw::REDISMODULE_ERR as c_int
        }
    }
}
