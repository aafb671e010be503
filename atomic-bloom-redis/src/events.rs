//! The server events that change what the module keeps about keys
//! outside their values: flushes, `SWAPDB`, loads. Each goes to what it
//! concerns: the refused creations (`refused.rs`), the time windows'
//! schedule (`windowed/schedule.rs`) and a load's placeholders
//! (`redisbloom/unheld.rs`). A module has one callback per event.

use std::ffi::c_void;

use redis_module::{raw, Context};

use crate::cuckoo::data_type::CUCKOO_TYPE;
use crate::cuckoo::Cuckoo;
use crate::redisbloom::unheld;
use crate::refused;
use crate::windowed::schedule;

extern "C" fn on_flush(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_START || data.is_null() {
        return;
    }
    // Safety: the server passes its flush info with this event.
    let info = unsafe { &*data.cast::<raw::RedisModuleFlushInfo>() };
    let db = (info.dbnum >= 0).then_some(info.dbnum);
    refused::clear(db);
    schedule::flushed(db);
}

extern "C" fn on_swap(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    if data.is_null() {
        return;
    }
    // Safety: the server passes its swap info with this event.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    refused::swap(info.dbnum_first, info.dbnum_second);
    schedule::swapped(info.dbnum_first, info.dbnum_second);
}

/// A whole dataset begins to load (an RDB, a full sync, an AOF): the
/// refusals are forgotten. A load ends (or one loaded beside the old has
/// replaced it: `repl-diskless-load swapdb`): its placeholders go
/// (`redisbloom/unheld.rs`).
extern "C" fn on_load(
    ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    // (A load beside the old dataset, `repl-diskless-load swapdb`, starts
    // as `LOADING_REPL_START` too: what its values refuse is kept for the
    // dataset that replaces the old.)
    let replaced = event.id == raw::REDISMODULE_EVENT_LOADING
        && matches!(
            subevent,
            raw::REDISMODULE_SUBEVENT_LOADING_RDB_START
                | raw::REDISMODULE_SUBEVENT_LOADING_AOF_START
                | raw::REDISMODULE_SUBEVENT_LOADING_REPL_START
        );
    if replaced {
        refused::clear(None);
    }
    let ended = if event.id == raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD {
        subevent == raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_COMPLETED
    } else {
        matches!(
            subevent,
            raw::REDISMODULE_SUBEVENT_LOADING_ENDED | raw::REDISMODULE_SUBEVENT_LOADING_FAILED
        )
    };
    if ended && !ctx.is_null() {
        unheld::load_ended(&Context::new(ctx), |key| {
            key.get_value::<Cuckoo>(&CUCKOO_TYPE)
                .ok()
                .flatten()
                .is_some_and(Cuckoo::is_placeholder)
        });
    }
}

/// Subscribes to the server events above.
///
/// # Errors
///
/// A line for the server's log when the server refuses a subscription
/// (the events are Redis 6's and 7's; Redis 7.0 and Valkey have them all).
pub(crate) fn subscribe(ctx: &Context) -> Result<(), String> {
    // Safety: filled in at load; called during load with the module's
    // context.
    let subscribe = unsafe { raw::RedisModule_SubscribeToServerEvent }
        .ok_or("the server has no server events")?;
    let events: [(u64, raw::RedisModuleEventCallback); 4] = [
        (raw::REDISMODULE_EVENT_FLUSHDB, Some(on_flush)),
        (raw::REDISMODULE_EVENT_SWAPDB, Some(on_swap)),
        (raw::REDISMODULE_EVENT_LOADING, Some(on_load)),
        (raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD, Some(on_load)),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // Safety: as above; the callbacks match the server's signature.
        if unsafe { subscribe(ctx.ctx, event, callback) } != raw::REDISMODULE_OK as i32 {
            return Err(format!("the server refused the subscription to event {id}"));
        }
    }
    Ok(())
}
