//! The `CF.*` commands' entry points, created at load: each call's
//! arguments are the server's own strings, lent to the command for the
//! call. (`redis_module`'s wrapper retains every argument into a new
//! vector and releases each after the call: for 100 items a command that
//! is 200 calls into the server and an allocation big enough to make the
//! server's allocator sort its free lists, each command: more than the
//! filter's own work.)

use std::cell::RefCell;
use std::ffi::CString;
use std::mem::ManuallyDrop;
use std::os::raw::c_int;

use redis_module::{raw, Context, RedisResult, RedisString};

use crate::cf_commands as cf;
use crate::cf_dump;

/// A command's handler.
type Handler = fn(&Context, &[RedisString]) -> RedisResult;

/// Most arguments whose list is kept from call to call (8 KiB).
const KEPT_ARGUMENTS: usize = 512;

thread_local! {
    /// The list the arguments are lent through, kept between calls (the
    /// commands run on the server's main thread, one at a time).
    static LENT: RefCell<Vec<ManuallyDrop<RedisString>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `handler` on the call's arguments and replies with its result.
fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    let context = Context::new(ctx);
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // Safety: the server passes `argc` valid strings at `argv`, alive
        // for the call.
        Ok(count) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, count) },
        _ => &[],
    };
    // Taken out of its cell, so that a command that runs another one
    // inside it (none does) would find an empty list, not a borrowed one.
    let mut lent = LENT.with_borrow_mut(std::mem::take);
    lent.clear();
    if lent.try_reserve(argv.len()).is_err() {
        return context.reply(Err(crate::args::error("ERR Insufficient memory"))) as c_int;
    }
    // Not retained, and never released (`ManuallyDrop`): the server owns
    // them and keeps them past the call.
    lent.extend(
        argv.iter()
            .map(|&inner| ManuallyDrop::new(RedisString::from_redis_module_string(ctx, inner))),
    );
    // Safety: `ManuallyDrop<T>` has `T`'s layout, so the list is a slice
    // of `RedisString`s; the handler gets it for the call only.
    let args: &[RedisString] =
        unsafe { std::slice::from_raw_parts(lent.as_ptr().cast::<RedisString>(), lent.len()) };
    let response = handler(&context, args);
    lent.clear();
    if lent.capacity() <= KEPT_ARGUMENTS {
        LENT.with_borrow_mut(|kept| *kept = lent);
    }
    context.reply(response) as c_int
}

/// An entry point for `handler` (the server's callbacks carry no data: one
/// function each).
macro_rules! entry {
    ($handler:path) => {{
        extern "C" fn entry(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            run(ctx, argv, argc, $handler)
        }
        entry as unsafe extern "C" fn(_, _, _) -> c_int
    }};
}

/// Creates the `CF.*` commands (their info and ACL categories come after,
/// from `command_info.rs`).
///
/// # Errors
///
/// A line for the log when the server refuses one.
pub(crate) fn register(ctx: &Context) -> Result<(), String> {
    let commands = [
        ("cf.reserve", entry!(cf::cf_reserve), "write deny-oom"),
        ("cf.add", entry!(cf::cf_add), "write deny-oom"),
        ("cf.addnx", entry!(cf::cf_addnx), "write deny-oom"),
        ("cf.insert", entry!(cf::cf_insert), "write deny-oom"),
        ("cf.insertnx", entry!(cf::cf_insertnx), "write deny-oom"),
        ("cf.exists", entry!(cf::cf_exists), "readonly fast"),
        ("cf.mexists", entry!(cf::cf_mexists), "readonly fast"),
        ("cf.count", entry!(cf::cf_count), "readonly fast"),
        ("cf.del", entry!(cf::cf_del), "write fast"),
        // RedisBloom registers it readonly, though it moves fingerprints:
        // a read-only replica would then change its copy apart from its
        // primary's. Here it is a write.
        ("cf.compact", entry!(cf::cf_compact), "write"),
        ("cf.scandump", entry!(cf_dump::cf_scandump), "readonly fast"),
        (
            "cf.loadchunk",
            entry!(cf_dump::cf_loadchunk),
            "write deny-oom",
        ),
        ("cf.info", entry!(cf_dump::cf_info), "readonly fast"),
        ("cf.debug", entry!(cf_dump::cf_debug), "readonly fast"),
    ];
    // Safety: filled in at load and never changed.
    let Some(create) = (unsafe { raw::RedisModule_CreateCommand }) else {
        return Err("the server cannot create commands".into());
    };
    for (name, function, flags) in commands {
        let (c_name, c_flags) = (
            CString::new(name).expect("no NUL"),
            CString::new(flags).expect("no NUL"),
        );
        // Safety: during load, with the module's context; the strings
        // live across the call (the server copies them).
        let status = unsafe {
            create(
                ctx.ctx,
                c_name.as_ptr(),
                Some(function),
                c_flags.as_ptr(),
                1,
                1,
                1,
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(format!("the server refused to create {name}"));
        }
    }
    Ok(())
}
