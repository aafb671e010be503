//! RedisBloom's cuckoo-filter type, `MBbloomCF` at encoding version 4: a
//! server that loads this module instead of RedisBloom loads RedisBloom's
//! RDB files, `RESTORE`s its `DUMP`s and replays its AOFs, and saves,
//! dumps and rewrites these filters as RedisBloom does, so that RedisBloom
//! loads them back.

use std::os::raw::{c_int, c_longlong, c_void};

use redis_module::native_types::RedisType;
use redis_module::{logging, raw};

use super::config::settings;
use super::rdb::{self, RdbOutput, ENCODING_VERSION};
use super::{Cuckoo, Fields};
use crate::redisbloom::data_type::ServerInput;

pub(crate) static CUCKOO_TYPE: RedisType = RedisType::new(
    "MBbloomCF",
    ENCODING_VERSION,
    crate::data_type::type_methods(rdb_load, rdb_save, aof_rewrite, free, mem_usage, copy),
);

/// The server's RDB stream of one value, written.
struct ServerOutput(*mut raw::RedisModuleIO);

impl RdbOutput for ServerOutput {
    fn unsigned(&mut self, value: u64) {
        raw::save_unsigned(self.0, value);
    }

    fn bytes(&mut self, value: &[u8]) {
        raw::save_slice(self.0, value);
    }
}

unsafe extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // Safety: the server passes a value this type created, and reads or
    // writes it nowhere else while it saves it (its main thread, or a
    // forked child's copy).
    let cuckoo = unsafe { &*value.cast::<Cuckoo>() };
    rdb::save(cuckoo, &mut ServerOutput(io));
}

unsafe extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let now = settings();
    let defaults = Fields {
        bucket_size: now.bucket_size,
        max_iterations: now.max_iterations,
        expansion: now.expansion,
    };
    let cap = crate::data_type::restore_cap(io).map(|cap| cap as u64);
    match rdb::load(&mut ServerInput(io), encver, defaults, cap) {
        Ok(cuckoo) => Box::into_raw(Box::new(cuckoo)).cast::<c_void>(),
        // A load (RDB file, full sync, AOF preamble) holds no key there and
        // goes on; a RESTORE is refused.
        Err(why) => crate::redisbloom::unheld::refuse_with(
            io,
            &format!("a RedisBloom cuckoo filter of encoding {encver}: {why}"),
            || Box::into_raw(Box::new(Cuckoo::placeholder())).cast::<c_void>(),
        ),
    }
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // Safety: the server passes a value this type created, which nothing
    // else reads or writes while it is rewritten (a forked child's copy,
    // or the main thread).
    let cuckoo = unsafe { &*value.cast::<Cuckoo>() };
    if cuckoo.is_placeholder() {
        return;
    }
    // RedisBloom's rewrite: the header at 1 (even for a filter with no
    // items, which CF.SCANDUMP would not give), then every piece, each
    // straight from its sub-filter.
    let header = cuckoo.header();
    emit(aof, key, 1, &header);
    let mut iterator = 1i64;
    while let Some((next, piece)) = cuckoo.piece_in_place(iterator) {
        emit(aof, key, next, piece);
        iterator = next;
    }
}

/// One `CF.LOADCHUNK key at data` line of the rewritten AOF.
fn emit(aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString, at: i64, data: &[u8]) {
    // Safety: EmitAOF exists in every server this module loads into; "slb"
    // is a module string, a long long and a buffer with its length, which
    // is what follows.
    unsafe {
        raw::RedisModule_EmitAOF.unwrap()(
            aof,
            c"CF.LOADCHUNK".as_ptr(),
            c"slb".as_ptr(),
            key,
            at as c_longlong,
            data.as_ptr(),
            data.len(),
        );
    }
}

unsafe extern "C" fn free(value: *mut c_void) {
    // Safety: the server passes a value this type created, once.
    drop(unsafe { Box::from_raw(value.cast::<Cuckoo>()) });
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // Safety: the server passes a value this type created.
    let bytes = unsafe { &*value.cast::<Cuckoo>() }.memory_bytes();
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // Safety: the server passes a value this type created.
    let cuckoo = unsafe { &*value.cast::<Cuckoo>() };
    if crate::data_type::copy_cap().is_some_and(|cap| cuckoo.memory_bytes() > cap as u64) {
        logging::log_notice(
            "atomic-bloom: COPY refused: the copy would pass bf-memory-limit-per-filter",
        );
        return std::ptr::null_mut();
    }
    match cuckoo.try_clone() {
        Some(copy) => Box::into_raw(Box::new(copy)).cast::<c_void>(),
        None => std::ptr::null_mut(),
    }
}
