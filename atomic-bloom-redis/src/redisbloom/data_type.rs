//! RedisBloom's data type, `MBbloom--` at encoding version 4: a server that
//! loads this module instead of RedisBloom loads RedisBloom's RDB files
//! (and AOF preambles) into [`Chain`]s, and saves and rewrites them as
//! RedisBloom does, so that RedisBloom loads them back.
//!
//! RDB, as RedisBloom writes it: the item count, the number of links, the
//! options (encoding 2 on), the growth (encoding 4 on; 2 before), then per
//! link its entries, error (double), hashes, bits per entry (double), bits
//! and n2 (encoding 1 on; before: bits = entries · bpe, n2 = 0), its bits
//! as a string, and its item count. Every count is checked against what
//! the input holds before anything is allocated for it.

use std::os::raw::{c_int, c_longlong, c_void};

use redis_module::native_types::RedisType;
use redis_module::{logging, raw};

use super::rdb::{self, RdbInput, RdbOutput, ENCODING_VERSION};
use super::{unheld, Chain, ChainError, Link};
use crate::data_type::{copy_cap, restore_cap};

pub(crate) static REDISBLOOM_TYPE: RedisType = RedisType::new(
    "MBbloom--",
    ENCODING_VERSION,
    crate::data_type::type_methods(rdb_load, rdb_save, aof_rewrite, free, mem_usage, copy),
);

unsafe extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // Safety: the server passes a value this type created.
    let chain = unsafe { &*value.cast::<Chain>() };
    rdb::save(chain, &mut ServerOutput(io));
}

/// The server's RDB stream of one value, written.
struct ServerOutput(*mut raw::RedisModuleIO);

impl RdbOutput for ServerOutput {
    fn unsigned(&mut self, value: u64) {
        raw::save_unsigned(self.0, value);
    }

    fn double(&mut self, value: f64) {
        raw::save_double(self.0, value);
    }

    fn string(&mut self, bytes: &[u8]) {
        raw::save_slice(self.0, bytes);
    }
}

/// The server's RDB stream of one value.
pub(crate) struct ServerInput(pub(crate) *mut raw::RedisModuleIO);

impl RdbInput for ServerInput {
    fn unsigned(&mut self) -> Result<u64, ()> {
        raw::load_unsigned(self.0).map_err(drop)
    }

    fn double(&mut self) -> Result<f64, ()> {
        raw::load_double(self.0).map_err(drop)
    }

    fn string(&mut self) -> Result<Box<[u8]>, ()> {
        let buffer = raw::load_string_buffer(self.0).map_err(drop)?;
        let bytes = buffer.as_ref();
        if bytes.is_empty() {
            return Ok(Box::new([]));
        }
        let adopted = std::ptr::slice_from_raw_parts_mut(bytes.as_ptr().cast_mut(), bytes.len());
        std::mem::forget(buffer);
        // Safety: the server allocated the buffer with RedisModule_Alloc
        // and hands it over; this module's global allocator is the
        // server's (`alloc.rs`), which frees a byte buffer with
        // RedisModule_Free, as `RedisBuffer` would have: the box owns it.
        Ok(unsafe { Box::from_raw(adopted) })
    }
}

unsafe extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        logging::log_warning(format!(
            "atomic-bloom: a RedisBloom filter of encoding {encver}, newer than {ENCODING_VERSION}"
        ));
        return std::ptr::null_mut();
    }
    match rdb::load(&mut ServerInput(io), encver, restore_cap(io)) {
        Ok(chain) => Box::into_raw(Box::new(chain)).cast::<c_void>(),
        // RedisBloom's filter, which this module cannot hold: a load holds
        // no key there and goes on (a RESTORE is refused).
        Err(past @ ChainError::PastLimits(_)) => unheld::refuse(io, &past),
        Err(error) => {
            logging::log_warning(format!("atomic-bloom: RDB load refused: {error}"));
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // Safety: the server passes a value this type created.
    let chain = unsafe { &*value.cast::<Chain>() };
    if chain.is_placeholder() {
        // No filter (a load's placeholder, which a rewrite never meets:
        // the server rewrites nothing while it loads).
        return;
    }
    let mut iterator = 0i64;
    loop {
        let (next, piece) = chain.scan_dump(iterator);
        if next == 0 {
            break;
        }
        // RedisBloom's BF.LOADCHUNK stream: the header at 1, then each piece
        // at the iterator after it.
        let at = if iterator == 0 { 1 } else { next };
        // Safety: EmitAOF exists in every server this module loads into;
        // "slb" is a module string, a long long and a buffer with its
        // length, which is what follows.
        unsafe {
            raw::RedisModule_EmitAOF.unwrap()(
                aof,
                c"BF.LOADCHUNK".as_ptr(),
                c"slb".as_ptr(),
                key,
                at as c_longlong,
                piece.as_ptr(),
                piece.len(),
            );
        }
        iterator = next;
    }
}

unsafe extern "C" fn free(value: *mut c_void) {
    // Safety: the server passes a value this type created, once.
    drop(unsafe { Box::from_raw(value.cast::<Chain>()) });
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // Safety: the server passes a value this type created.
    unsafe { &*value.cast::<Chain>() }.memory_bytes()
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // Safety: the server passes a value this type created.
    let chain = unsafe { &*value.cast::<Chain>() };
    if copy_cap().is_some_and(|cap| chain.memory_bytes() > cap) {
        logging::log_notice(
            "atomic-bloom: COPY refused: the copy would pass bf-memory-limit-per-filter",
        );
        return std::ptr::null_mut();
    }
    let Ok(links) = chain
        .links
        .iter()
        .map(Link::try_clone)
        .collect::<Result<Vec<_>, _>>()
    else {
        return std::ptr::null_mut();
    };
    let copy = Chain {
        links,
        size: chain.size,
        options: chain.options,
        growth: chain.growth,
    };
    Box::into_raw(Box::new(copy)).cast::<c_void>()
}
