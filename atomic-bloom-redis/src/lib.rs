//! `atomic-bloom-redis`: a Valkey / Redis module that serves atomic-bloom's
//! filters behind RedisBloom's `BF.*` commands, and RedisBloom's cuckoo
//! filters behind its `CF.*` commands.
//!
//! ```text
//! cargo build --release -p atomic-bloom-redis
//! valkey-server --loadmodule target/release/libatomic_bloom_redis.so [ERROR_RATE 0.01 INITIAL_SIZE 100 EXPANSION 2]
//! ```
//!
//! Commands, replies and error texts are RedisBloom's: `BF.RESERVE`,
//! `BF.ADD`, `BF.MADD`, `BF.EXISTS`, `BF.MEXISTS`, `BF.INSERT`, `BF.INFO`,
//! `BF.CARD`, `BF.SCANDUMP`, `BF.LOADCHUNK`. What differs is the engine:
//! every stage is one of atomic-bloom's compact, exactly sized filters (the
//! least memory for the rate: under RedisBloom's at 1% and 0.1%), a scaling
//! filter keeps its *total* false-positive rate at the rate asked for, a
//! multi-item command hashes and prefetches its items in batches, and every
//! byte that comes back from a dump, an RDB file or `RESTORE` is checked
//! (checksums, then every field) before it becomes a filter.
//!
//! Windowed filters, which forget on schedule, are served beside them
//! behind commands of their own: `WBF.RESERVE`, `WBF.ADD`, `WBF.MADD`,
//! `WBF.EXISTS`, `WBF.MEXISTS`, `WBF.INFO` (a type of their own,
//! `wbloom-ab`).
//!
//! RedisBloom's cuckoo filters are served as RedisBloom serves them, on its
//! own data (type `MBbloomCF`): `CF.RESERVE`, `CF.ADD`, `CF.ADDNX`,
//! `CF.INSERT`, `CF.INSERTNX`, `CF.EXISTS`, `CF.MEXISTS`, `CF.COUNT`,
//! `CF.DEL`, `CF.COMPACT`, `CF.SCANDUMP`, `CF.LOADCHUNK`, `CF.INFO`,
//! `CF.DEBUG`, each sub-filter a table of the library's cuckoo core.
//!
//! Layout, each file using only those after it (no circles; `lib.rs`
//! hands the earlier files what the later ones define):
//! `fuzzing.rs` (the fuzz targets' entry points), `wbf_commands.rs` (the
//! `WBF.*` commands), `cf_entry.rs` (the `CF.*` commands' entry points:
//! each call's arguments lent, not copied), `cf_dump.rs` (`CF.INFO`,
//! `CF.DEBUG`, `CF.SCANDUMP`, `CF.LOADCHUNK`), `cf_commands.rs` (the other
//! `CF.*` commands),
//! `commands.rs` (the `BF.*` commands that write: parsing and replies),
//! `bf_reads.rs` (those that read, and the reply helpers), `events.rs`
//! (flushes, `SWAPDB` and loads, to what each concerns), `args.rs`
//! (numbers, options, module arguments), `cuckoo/` (RedisBloom's cuckoo
//! filters: its scheme on the core's tables, its header, pieces and RDB
//! encoding, its type, configs and command info), `command_info.rs` (ACL
//! categories, key specs, docs), `config.rs` (the server configs and the
//! defaults they set), `replica.rs` (a primary's or an AOF's command that
//! cannot be applied: no filter rather than a different one; RedisBloom's
//! streams create as RedisBloom did), `windowed/` (a windowed key's value,
//! its record, its type, and the timer that ends a time window's
//! generations on a primary when they are due), `redisbloom/` (RedisBloom's
//! own filters, its type, hashing and encodings, served as RedisBloom
//! serves them, and the keys a load holds none under), `data_type.rs` (the
//! server's callbacks), `value.rs` (a key's value: a filter, or a dump
//! still loading), `dump.rs` (`BF.SCANDUMP` / `BF.LOADCHUNK`), `record/`
//! (a filter's bytes; its `envelope.rs`, what they share with a windowed
//! key's), `filter.rs` (a key's filter), `alloc.rs` (the server's
//! allocator, alignment honoured) and `refused.rs` (the keys whose
//! replayed creation was refused here).

#![deny(unsafe_op_in_unsafe_fn)]
// Built for the fuzz targets, the commands and callbacks are not registered.
#![cfg_attr(fuzzing, allow(dead_code, unused_imports))]

mod alloc;
mod args;
mod bf_reads;
mod cf_commands;
mod cf_dump;
mod cf_entry;
mod command_info;
mod commands;
mod config;
mod cuckoo;
mod data_type;
mod dump;
mod events;
mod filter;
#[doc(hidden)]
pub mod fuzzing;
mod record;
mod redisbloom;
mod refused;
mod replica;
mod value;
mod wbf_commands;
mod windowed;

use redis_module::{redis_module, Context, RedisString, Status};

use cuckoo::data_type::CUCKOO_TYPE;
use data_type::BLOOM_TYPE;
use redisbloom::data_type::REDISBLOOM_TYPE;
use windowed::data_type::WINDOWED_TYPE;

/// Parses the module arguments into the defaults of new filters; a bad one
/// fails the load, with the reason in the server's log.
fn init(ctx: &Context, args: &[RedisString]) -> Status {
    ctx.set_module_options(redis_module::raw::ModuleOptions::HANDLE_IO_ERRORS);
    let loaded = cf_entry::register(ctx)
        .and_then(|()| args::load_defaults(args))
        .and_then(|defaults| config::register(ctx, &defaults, cuckoo::config::register_all))
        .and_then(|()| command_info::register(ctx, &cuckoo::command_info::COMMANDS))
        .and_then(|()| events::subscribe(ctx))
        .and_then(|()| windowed::schedule::subscribe(ctx));
    match loaded {
        Ok(()) => {
            let defaults = config::defaults();
            ctx.log_notice(&format!(
                "atomic-bloom: new filters hold {} items at {} (expansion {})",
                defaults.capacity,
                defaults.error_rate,
                defaults
                    .expansion
                    .map_or("none: NONSCALING".to_string(), |growth| growth.to_string())
            ));
            Status::Ok
        }
        Err(reason) => {
            ctx.log_warning(&format!("atomic-bloom: {reason}"));
            Status::Err
        }
    }
}

// Outside a server (the fuzz targets link this crate) there is no server
// allocator and nothing to register.
#[cfg(not(fuzzing))]
redis_module! {
    name: "bf",
    version: 10000,
    allocator: (alloc::ServerAlloc, alloc::ServerAlloc),
    data_types: [BLOOM_TYPE, REDISBLOOM_TYPE, WINDOWED_TYPE, CUCKOO_TYPE],
    init: init,
    commands: [
        ["bf.reserve", commands::bf_reserve, "write deny-oom", 1, 1, 1, ""],
        ["bf.add", commands::bf_add, "write deny-oom", 1, 1, 1, ""],
        ["bf.madd", commands::bf_madd, "write deny-oom", 1, 1, 1, ""],
        ["bf.insert", commands::bf_insert, "write deny-oom", 1, 1, 1, ""],
        ["bf.exists", bf_reads::bf_exists, "readonly fast", 1, 1, 1, ""],
        ["bf.mexists", bf_reads::bf_mexists, "readonly fast", 1, 1, 1, ""],
        ["bf.info", bf_reads::bf_info, "readonly fast", 1, 1, 1, ""],
        ["bf.card", bf_reads::bf_card, "readonly fast", 1, 1, 1, ""],
        ["bf.scandump", bf_reads::bf_scandump, "readonly", 1, 1, 1, ""],
        ["bf.loadchunk", commands::bf_loadchunk, "write deny-oom", 1, 1, 1, ""],
        ["wbf.reserve", wbf_commands::wbf_reserve, "write deny-oom", 1, 1, 1, ""],
        ["wbf.add", wbf_commands::wbf_add, "write deny-oom", 1, 1, 1, ""],
        ["wbf.madd", wbf_commands::wbf_madd, "write deny-oom", 1, 1, 1, ""],
        // Reads rotate a time window whose generation has ended (and
        // propagate it): readonly, yet they may replicate.
        ["wbf.exists", wbf_commands::wbf_exists, "readonly may-replicate", 1, 1, 1, ""],
        ["wbf.mexists", wbf_commands::wbf_mexists, "readonly may-replicate", 1, 1, 1, ""],
        ["wbf.info", wbf_commands::wbf_info, "readonly may-replicate", 1, 1, 1, ""],
        ["wbf.advance", wbf_commands::wbf_advance, "write", 1, 1, 1, ""],
        ["wbf.loadchunk", wbf_commands::wbf_loadchunk, "write deny-oom", 1, 1, 1, ""],
    ],
}
