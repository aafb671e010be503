//! The windowed filters' data type (`TYPE key`: `wbloom-ab`): how the
//! server saves, loads, rewrites, measures, copies and frees a `WBF` key.
//! Every path through bytes goes through the record of `record.rs`.

use std::io::Write;
use std::os::raw::{c_int, c_void};

use redis_module::native_types::RedisType;
use redis_module::{logging, raw};

use super::record::RecordError;
use super::{schedule, server_ms, Loading, WindowValue, Windowed};
use crate::data_type::{
    copy_cap, restore_cap, type_methods, AofWriter, ChunkNumber, RdbReader, RdbWriter,
};

/// The type's name (exactly nine characters) and encoding version.
pub(crate) static WINDOWED_TYPE: RedisType = RedisType::new(
    "wbloom-ab",
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        // A key that goes leaves the timer's schedule.
        unlink2: Some(unlink),
        ..type_methods(rdb_load, rdb_save, aof_rewrite, free, mem_usage, copy)
    },
);

unsafe extern "C" fn unlink(ctx: *mut raw::RedisModuleKeyOptCtx, _value: *const c_void) {
    // Safety: filled in at load (Redis 7.0 and Valkey have both); the
    // server's context and string, read while the callback runs.
    unsafe {
        let (Some(name_of), Some(db_of)) = (
            raw::RedisModule_GetKeyNameFromOptCtx,
            raw::RedisModule_GetDbIdFromOptCtx,
        ) else {
            return;
        };
        let name = name_of(ctx);
        if name.is_null() {
            return;
        }
        let mut length = 0usize;
        let bytes = raw::RedisModule_StringPtrLen.unwrap()(name, &mut length);
        schedule::forget(
            db_of(ctx),
            std::slice::from_raw_parts(bytes.cast::<u8>(), length),
        );
    }
}

/// Notes a time window a load (or `RESTORE`) brought for the timer.
fn note_loaded(io: *mut raw::RedisModuleIO, windowed: &Windowed) {
    if !windowed.is_timed() {
        return;
    }
    // Safety: filled in at load (Redis 7.0 and Valkey have them); the
    // server's context and string for `io`, read while the callback runs.
    unsafe {
        let (Some(name_of), Some(db_of)) = (
            raw::RedisModule_GetKeyNameFromIO,
            raw::RedisModule_GetDbIdFromIO,
        ) else {
            return;
        };
        let name = name_of(io);
        if name.is_null() {
            return;
        }
        let mut length = 0usize;
        let bytes = raw::RedisModule_StringPtrLen.unwrap()(name, &mut length);
        let ctx = raw::RedisModule_GetContextFromIO.unwrap()(io);
        schedule::note(
            ctx,
            db_of(io),
            std::slice::from_raw_parts(bytes.cast::<u8>(), length),
            windowed.next_rotation_ms,
        );
    }
}

const ENCODING_VERSION: i32 = 1;

/// RDB layout: a tag; for a filter its record as a run of string buffers
/// (`data_type.rs`'s writer); for a key whose AOF chunks were still
/// arriving, the record's length and the bytes received.
const TAG_READY: u64 = 1;
const TAG_LOADING: u64 = 2;

unsafe extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // Safety: the server passes a value this type created.
    let value = unsafe { &*value.cast::<WindowValue>() };
    match value {
        WindowValue::Ready(windowed) => {
            raw::save_unsigned(io, TAG_READY);
            let mut out = RdbWriter::new(io);
            // The writer never fails; a library error would be a bug.
            if let Err(error) = windowed.write_record(&mut out, server_ms()) {
                logging::log_warning(format!("atomic-bloom: RDB save failed: {error}"));
            }
            out.finish();
        }
        WindowValue::Loading(loading) => {
            raw::save_unsigned(io, TAG_LOADING);
            raw::save_unsigned(io, loading.total);
            raw::save_slice(io, &loading.received);
        }
    }
}

unsafe extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    if encver != ENCODING_VERSION {
        logging::log_warning(format!(
            "atomic-bloom: windowed RDB encoding version {encver} is not {ENCODING_VERSION}"
        ));
        return std::ptr::null_mut();
    }
    let cap = restore_cap(io).map(WindowValue::filter_cap);
    let value = match raw::load_unsigned(io) {
        Ok(TAG_READY) => match Windowed::read_record(RdbReader::new(io), server_ms(), cap) {
            Ok(windowed) => {
                note_loaded(io, &windowed);
                WindowValue::Ready(windowed)
            }
            Err(error) => {
                logging::log_warning(format!("atomic-bloom: RDB load refused: {error}"));
                return std::ptr::null_mut();
            }
        },
        // Only what AOF replay takes again (`WBF.LOADCHUNK`): the start of
        // a record, not yet whole, whose envelope says the length saved
        // beside it. Anything else would be kept here and dropped by this
        // server's own AOF at its next restart.
        Ok(TAG_LOADING) => match (raw::load_unsigned(io), raw::load_string_buffer(io)) {
            (Ok(total), Ok(received)) => match Loading::start(received.as_ref(), server_ms()) {
                Ok(Err(loading)) if loading.total == total => WindowValue::Loading(loading),
                _ => return std::ptr::null_mut(),
            },
            _ => return std::ptr::null_mut(),
        },
        _ => return std::ptr::null_mut(),
    };
    Box::into_raw(Box::new(value)).cast::<c_void>()
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // Safety: the server passes a value this type created.
    let value = unsafe { &*value.cast::<WindowValue>() };
    let mut out = AofWriter::new(aof, key, c"WBF.LOADCHUNK", ChunkNumber::Offset);
    match value {
        WindowValue::Ready(windowed) => {
            if let Err(error) = windowed.write_record(&mut out, server_ms()) {
                logging::log_warning(format!("atomic-bloom: AOF rewrite failed: {error}"));
            }
        }
        // The chunks received so far; the rest never came.
        WindowValue::Loading(loading) => {
            let _ = out.write_all(&loading.received);
        }
    }
    out.emit();
}

unsafe extern "C" fn free(value: *mut c_void) {
    // Safety: the server passes a value this type created, once.
    drop(unsafe { Box::from_raw(value.cast::<WindowValue>()) });
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // Safety: the server passes a value this type created.
    unsafe { &*value.cast::<WindowValue>() }.memory_bytes()
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // Safety: the server passes a value this type created.
    let value = unsafe { &*value.cast::<WindowValue>() };
    if copy_cap().is_some_and(|cap| value.memory_bytes() > cap) {
        logging::log_notice(
            "atomic-bloom: COPY refused: the copy would pass bf-memory-limit-per-filter",
        );
        return std::ptr::null_mut();
    }
    let copied = match value {
        WindowValue::Ready(windowed) => match copy_filter(windowed) {
            Ok(copy) => WindowValue::Ready(copy),
            Err(error) => {
                logging::log_warning(format!("atomic-bloom: COPY failed: {error}"));
                return std::ptr::null_mut();
            }
        },
        // An allocation that fails is the server's error reply, not an
        // abort (as `BF.*` keys copy).
        WindowValue::Loading(loading) => {
            let mut received = Vec::new();
            if received.try_reserve_exact(loading.received.len()).is_err() {
                return std::ptr::null_mut();
            }
            received.extend_from_slice(&loading.received);
            WindowValue::Loading(Loading {
                total: loading.total,
                received,
            })
        }
    };
    Box::into_raw(Box::new(copied)).cast::<c_void>()
}

/// A copy through the record (the library has no clone of a windowed
/// filter): the same bits, epoch and time left. The record's buffer is
/// asked for whole and may be refused (an error, where a buffer grown by
/// doubling aborted the server when the allocator had no room).
fn copy_filter(windowed: &Windowed) -> Result<Windowed, RecordError> {
    let now = server_ms();
    let length = windowed.record_len();
    let mut bytes = Vec::new();
    usize::try_from(length)
        .ok()
        .and_then(|length| bytes.try_reserve_exact(length).ok())
        .ok_or(RecordError::Filter(atomic_bloom::Error::AllocationFailed {
            bytes: usize::try_from(length).unwrap_or(usize::MAX),
        }))?;
    windowed
        .write_record(&mut bytes, now)
        .map_err(RecordError::Filter)?;
    Windowed::read_record(bytes.as_slice(), now, None)
}
