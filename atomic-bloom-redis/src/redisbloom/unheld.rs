//! RedisBloom filters a load met that this module cannot hold (past its
//! limits: more than 4,096 links, a link of more than 2,048 hashes or
//! 2^40 bytes; a cuckoo filter RedisBloom could not have written): the
//! load holds no key there and goes on.
//!
//! A module's RDB callback cannot skip a key: a value it refuses stops the
//! load, and a server loading its RDB file, its AOF's preamble or its
//! primary's full sync then exits. So the callback reads the whole value,
//! remembers the key as refused (`refused.rs`: RedisBloom's bare adds that
//! follow in an AOF or a replication stream then make no filter of
//! defaults there), logs why, and hands the server a placeholder: a chain
//! of no links, which every command takes for a missing key. When the load
//! ends, the placeholders are deleted (the keys they were loaded under, or
//! wherever a replayed `RENAME`, `MOVE` or `COPY` took them: every
//! database is scanned, only after a load that made one). Nothing saves
//! a placeholder: a server saves nothing while it loads.
//!
//! A client's `RESTORE` of such a value is an error reply, as for any
//! value the module refuses.

use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis_module::{logging, raw, Context, KeysCursor, RedisString};

use super::data_type::REDISBLOOM_TYPE;
use super::{Chain, ChainError};
use crate::refused;

/// Placeholders made since the last load ended.
static PLACED: AtomicUsize = AtomicUsize::new(0);

impl Chain {
    /// A placeholder for a key a load holds no filter under.
    fn placeholder() -> Chain {
        Chain {
            links: Vec::new(),
            size: 0,
            options: 0,
            growth: 0,
        }
    }

    /// Whether this is a load's placeholder: no filter.
    pub(crate) fn is_placeholder(&self) -> bool {
        self.links.is_empty()
    }
}

/// The server's flags while `io` is read.
fn flags(io: *mut raw::RedisModuleIO) -> u32 {
    // Safety: both exist in every server this module loads into; the
    // context belongs to `io`, which the server passed to the callback.
    (unsafe {
        let ctx = raw::RedisModule_GetContextFromIO.unwrap()(io);
        raw::RedisModule_GetContextFlags.unwrap()(ctx)
    }) as u32
}

/// What `rdb_load` hands the server for a value this module cannot hold
/// (`why`): while the server loads (an RDB file, an AOF, a full sync, in
/// place or beside the old dataset), a placeholder ([`hold_none`]); else
/// (a `RESTORE`) null, the server's error reply, and on a replica (its
/// primary's `RESTORE`) the key remembered as refused, so that the
/// primary's bare adds make no filter there.
pub(crate) fn refuse(io: *mut raw::RedisModuleIO, why: &ChainError) -> *mut c_void {
    refuse_with(io, why, || {
        Box::into_raw(Box::new(Chain::placeholder())).cast::<c_void>()
    })
}

/// [`refuse`] for any of the module's RedisBloom types, `placeholder`
/// making the type's placeholder (a cuckoo filter's too).
pub(crate) fn refuse_with(
    io: *mut raw::RedisModuleIO,
    why: &dyn std::fmt::Display,
    placeholder: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let flags = flags(io);
    if flags & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING) != 0
    {
        hold_none(io, why);
        return placeholder();
    }
    if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0 {
        if let Some((db, key)) = key_of(io) {
            refused::record_in(db, &key);
        }
    }
    logging::log_warning(format!("atomic-bloom: RESTORE refused: {why}"));
    std::ptr::null_mut()
}

/// The key and database of the value `io` reads, where the server says.
fn key_of(io: *mut raw::RedisModuleIO) -> Option<(i32, Vec<u8>)> {
    // Safety: filled in at load (Redis 7.0 and Valkey have both); the
    // server's string, read and copied while the callback runs.
    unsafe {
        let name = raw::RedisModule_GetKeyNameFromIO?(io);
        let db = raw::RedisModule_GetDbIdFromIO?(io);
        if name.is_null() {
            return None;
        }
        let mut length = 0usize;
        let bytes = raw::RedisModule_StringPtrLen.unwrap()(name, &mut length);
        Some((
            db,
            std::slice::from_raw_parts(bytes.cast::<u8>(), length).to_vec(),
        ))
    }
}

/// For a value a load met and this module cannot hold (`why`): the key
/// remembered as refused, a line in the log, and one more placeholder to
/// delete when the load ends (the caller makes it).
fn hold_none(io: *mut raw::RedisModuleIO, why: &dyn std::fmt::Display) {
    let key = key_of(io);
    if let Some((db, key)) = &key {
        refused::record_in(*db, key);
    }
    let shown = key.map_or_else(
        || "a key".to_string(),
        |(_, key)| format!("'{}'", String::from_utf8_lossy(&key).escape_debug()),
    );
    logging::log_warning(
        format!(
            "atomic-bloom: the load holds no key under {shown} ({why}): this module serves \
             RedisBloom filters of up to 4,096 sub-filters, 2,048 hashes and 2^40 bytes a \
             sub-filter, and cuckoo filters as RedisBloom writes them; the adds that follow \
             for it are refused"
        )
        .replace('%', "%%"),
    );
    // Relaxed: loads and their end run on the server's main thread.
    PLACED.fetch_add(1, Ordering::Relaxed);
}

/// A load ended: the placeholders it made are deleted, in every database:
/// this module's RedisBloom chains, and the keys `other_placeholder` says
/// are placeholders of another type (the cuckoo filters, whose files come
/// earlier in the layering and so name their type there).
pub(crate) fn load_ended(
    ctx: &Context,
    other_placeholder: impl Fn(&redis_module::key::RedisKey) -> bool,
) {
    // Relaxed: as above.
    if PLACED.swap(0, Ordering::Relaxed) == 0 {
        return;
    }
    // Safety: filled in at load; the event's context, which has a client
    // whose database is selected here and put back after.
    let selected = unsafe { raw::RedisModule_GetSelectedDb.unwrap()(ctx.ctx) };
    let mut db = 0;
    // Safety: as above; a database past the last is refused.
    while unsafe { raw::RedisModule_SelectDb.unwrap()(ctx.ctx, db) } == raw::REDISMODULE_OK as i32 {
        let found = std::cell::RefCell::new(Vec::new());
        let cursor = KeysCursor::new();
        let collect =
            |_: &Context, name: &RedisString, key: Option<&redis_module::key::RedisKey>| {
                let chain = key
                    .and_then(|key| key.get_value::<Chain>(&REDISBLOOM_TYPE).ok().flatten())
                    .is_some_and(Chain::is_placeholder);
                let cuckoo = key.is_some_and(&other_placeholder);
                let placeholder = chain || cuckoo;
                if placeholder {
                    found.borrow_mut().push(name.as_slice().to_vec());
                }
            };
        while cursor.scan(ctx, &collect) {}
        for name in found.into_inner() {
            let name = ctx.create_string(name);
            let _ = ctx.open_key_writable(&name).delete();
        }
        db += 1;
    }
    // Safety: as above.
    unsafe { raw::RedisModule_SelectDb.unwrap()(ctx.ctx, selected) };
}
