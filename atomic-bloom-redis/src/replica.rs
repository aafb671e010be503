//! What a server does with a command from its primary or its AOF that it
//! cannot apply: it holds no filter rather than a different one, and says
//! why in its log.
//!
//! A primary propagates a new filter as a `BF.RESERVE` / `WBF.RESERVE`
//! with the options it was built with and its seed, then the adds. A
//! replica (or an AOF replay) that cannot build it (its allocator refuses,
//! its memory is short) holds no key there; were the adds that follow to
//! create the key as a client's add does, with this server's defaults and
//! a seed of its own, the replica would hold a filter its primary never
//! had (`Window` 100 against the primary's 400,000,000), answer otherwise,
//! and keep it when promoted. So a replayed command never creates a key
//! but by a `RESERVE` (or a whole record: `RESTORE`, `LOADCHUNK`); an add
//! for a key this server holds no filter under is refused, and logged.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use redis_module::{Context, ContextFlags, RedisError, RedisString};

use crate::windowed::server_ms;

/// What a replayed add answers for a key this server holds no filter
/// under (the server logs a replica's error replies to its primary).
const NOT_HELD: &str = "ERR not found: this server holds no filter under the key (its \
                        creation from the primary or the AOF was refused here: see the log)";

/// Whether the command comes from the primary (a replica's stream) or the
/// AOF, not from a client.
pub(crate) fn is_replayed(ctx: &Context) -> bool {
    ctx.get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// `key` as a log line may hold it: the server's log takes a `printf`
/// format and a C string, so `%` is doubled and control bytes (a NUL among
/// them) are escaped.
fn loggable(key: &RedisString) -> String {
    key.to_string_lossy()
        .escape_debug()
        .to_string()
        .replace('%', "%%")
}

/// `refused`, the error a creating `command` (`BF.RESERVE`, `WBF.RESERVE`)
/// met, logged when the command is replayed: this server then holds no
/// filter under `key`, and refuses its primary's adds to it.
pub(crate) fn creation_refused(
    ctx: &Context,
    command: &str,
    key: &RedisString,
    refused: RedisError,
) -> RedisError {
    if is_replayed(ctx) {
        let why = refused.to_string().replace('%', "%%");
        ctx.log_warning(&format!(
            "atomic-bloom: {command} '{key}' from the primary (or the AOF) was refused here \
             ({why}): this server holds no filter under '{key}' and refuses the adds to it \
             that follow; give it the memory and resync it (a replica) or replay again (an \
             AOF) to hold the primary's filter",
            key = loggable(key)
        ));
    }
    refused
}

/// Replayed adds refused since the last line about them.
static SKIPPED: AtomicU64 = AtomicU64::new(0);
/// When that line was written (`server_ms`).
static LOGGED_AT: AtomicI64 = AtomicI64::new(i64::MIN);
/// At most one line about refused adds per this many ms: a primary may
/// send thousands a second.
const LOG_EVERY_MS: i64 = 10_000;

/// The error a replayed `command` gets for a `key` this server holds no
/// filter under (where a client's would create it), logged at most once
/// every ten seconds with how many were refused.
pub(crate) fn not_held(ctx: &Context, command: &str, key: &RedisString) -> RedisError {
    // Relaxed: commands and their logs run on the server's main thread;
    // the count publishes nothing else.
    let skipped = SKIPPED.fetch_add(1, Ordering::Relaxed) + 1;
    let now = server_ms();
    // Relaxed: as above.
    let last = LOGGED_AT.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= LOG_EVERY_MS {
        // Relaxed: as above.
        LOGGED_AT.store(now, Ordering::Relaxed);
        // Relaxed: as above.
        SKIPPED.store(0, Ordering::Relaxed);
        ctx.log_warning(&format!(
            "atomic-bloom: {command} '{}' from the primary (or the AOF) refused: this server \
             holds no filter under that key (its creation was refused here, logged before), \
             and a replayed add never makes one with this server's defaults; {skipped} such \
             adds refused since the last of these lines",
            loggable(key)
        ));
    }
    RedisError::Str(NOT_HELD)
}
