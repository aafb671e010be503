//! What a server does with a command from its primary or its AOF that it
//! cannot apply: it holds no filter rather than a different one, and says
//! why in its log.
//!
//! This module's primary propagates a new filter as a `BF.RESERVE` /
//! `WBF.RESERVE` with the options it was built with and its seed, and
//! every add after it as one that never creates (`BF.INSERT key NOCREATE
//! ITEMS`, `WBF.MADD`). A replica (or an AOF replay) that cannot build the
//! filter (its allocator refuses, its memory is short) holds no key there,
//! and those adds are refused: were they to create the key as a client's
//! add does, with defaults and a seed of its own, the replica would hold a
//! filter its primary never had (`Window` 100 against the primary's
//! 400,000,000), answer otherwise, and keep it when promoted.
//!
//! RedisBloom's streams (its AOF, a RedisBloom primary's) create keys with
//! bare `BF.ADD`, `BF.MADD` and `BF.INSERT`, with RedisBloom's defaults or
//! the options they name: replayed here they create the same filter,
//! RedisBloom's own (`redisbloom/`), as RedisBloom did. Except where this
//! server refused the stream's own creation of that key (`refused.rs`
//! remembers which): there the key stays missing and the adds are refused.
//! `WBF.*` keys are this module's only: a replayed `WBF` add never creates.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use redis_module::{Context, ContextFlags, RedisError, RedisString};

use crate::refused::{self, Recorded};
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

/// The most of a key a log line shows.
const LOGGED_KEY_CHARS: usize = 200;

/// `key` as a log line may hold it: the server's log takes a `printf`
/// format and a C string, so `%` is doubled and control bytes (a NUL among
/// them) are escaped; a long key is cut, with its length.
fn loggable(key: &RedisString) -> String {
    let text = key.to_string_lossy();
    let mut shown: String = text.escape_debug().take(LOGGED_KEY_CHARS).collect();
    if shown.len() < text.escape_debug().count() {
        shown.push_str(&format!("... ({} bytes)", key.as_slice().len()));
    }
    shown.replace('%', "%%")
}

/// Log lines of one kind at most `burst` per `LOG_EVERY_MS`, the rest
/// counted and told in the next line: a primary may send thousands of
/// refused commands a second.
struct Throttle {
    /// Lines written in this period.
    written: AtomicU64,
    /// Lines not written since the last one that was.
    skipped: AtomicU64,
    /// When this period began (`server_ms`).
    since: AtomicI64,
    burst: u64,
}

/// The period of a [`Throttle`].
const LOG_EVERY_MS: i64 = 10_000;

impl Throttle {
    const fn new(burst: u64) -> Throttle {
        Throttle {
            written: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            since: AtomicI64::new(i64::MIN),
            burst,
        }
    }

    /// Whether to write a line now, and how many were not written before
    /// it.
    fn admit(&self) -> Option<u64> {
        let now = server_ms();
        // Relaxed (each below): commands and their logs run on the
        // server's main thread; the counts publish nothing else.
        if now.saturating_sub(self.since.load(Ordering::Relaxed)) >= LOG_EVERY_MS {
            // Relaxed: as above.
            self.since.store(now, Ordering::Relaxed);
            // Relaxed: as above.
            self.written.store(0, Ordering::Relaxed);
        }
        // Relaxed: as above.
        if self.written.fetch_add(1, Ordering::Relaxed) >= self.burst {
            // Relaxed: as above.
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        // Relaxed: as above.
        Some(self.skipped.swap(0, Ordering::Relaxed))
    }
}

/// Refused creations: each logged, up to 16 every ten seconds.
static REFUSED_CREATIONS: Throttle = Throttle::new(16);
/// Refused adds: one line every ten seconds.
static REFUSED_ADDS: Throttle = Throttle::new(1);

/// `refused`, the error a creating `command` (`BF.RESERVE`, `WBF.RESERVE`,
/// `BF.LOADCHUNK`, a bare add) met, logged when the command is replayed:
/// this server then holds no filter under `key`, and refuses its primary's
/// adds to it. With `remember` (a missing `BF` key: RedisBloom's bare adds
/// would create it) the refusal is kept (`refused.rs`).
pub(crate) fn creation_refused(
    ctx: &Context,
    command: &str,
    key: &RedisString,
    refused: RedisError,
    remember: bool,
) -> RedisError {
    if !is_replayed(ctx) {
        return refused;
    }
    let recorded = remember.then(|| refused::record(ctx, key.as_slice()));
    if let Some(earlier) = REFUSED_CREATIONS.admit() {
        let why = refused.to_string().replace('%', "%%");
        ctx.log_warning(&format!(
            "atomic-bloom: {command} '{key}' from the primary (or the AOF) was refused here \
             ({why}): this server holds no filter under '{key}' and refuses the adds to it \
             that follow; give it the memory and resync it (a replica) or replay again (an \
             AOF) to hold the primary's filter ({earlier} such refusals not logged before \
             this one)",
            key = loggable(key)
        ));
    }
    if recorded == Some(Recorded::Full) {
        ctx.log_warning(&format!(
            "atomic-bloom: more refused creations than this server keeps ({} MiB of keys): \
             from now on every add from the primary (or the AOF) for a key this server \
             holds no filter under is refused, until FLUSHALL or a full resync",
            refused::MOST_BYTES >> 20
        ));
    }
    refused
}

/// Whether a bare replayed add (RedisBloom's way to create a key) may
/// create `key`, which this server holds no filter under: not where this
/// server refused the creation of `key` before.
pub(crate) fn may_create(ctx: &Context, key: &RedisString) -> bool {
    !refused::blocks(ctx, key.as_slice())
}

/// This server now holds a filter under `key`, whoever made it.
pub(crate) fn created(ctx: &Context, key: &RedisString) {
    refused::created(ctx, key.as_slice());
}

/// The error a replayed `command` gets for a `key` this server holds no
/// filter under (where a client's would create it), logged at most once
/// every ten seconds with how many were refused.
pub(crate) fn not_held(ctx: &Context, command: &str, key: &RedisString) -> RedisError {
    if let Some(earlier) = REFUSED_ADDS.admit() {
        ctx.log_warning(&format!(
            "atomic-bloom: {command} '{}' from the primary (or the AOF) refused: this server \
             holds no filter under that key (its creation was refused here, logged before), \
             and a replayed add never makes one with defaults; {} such adds refused since the \
             last of these lines",
            loggable(key),
            earlier + 1
        ));
    }
    RedisError::Str(NOT_HELD)
}
