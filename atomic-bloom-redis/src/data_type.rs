//! The module's data type: how the server saves, loads, rewrites, measures,
//! copies and frees a key's value. Every path through bytes goes through
//! the record of `record/`, whose checksums turn a corrupt RDB payload or
//! `RESTORE` into a refused load, never into a filter.

use std::io::{self, Read, Write};
use std::os::raw::{c_int, c_void};

use redis_module::native_types::RedisType;
use redis_module::{logging, raw, RedisBuffer};

use crate::dump::DumpState;
use crate::dump::{Pending, CHUNK_BYTES};
use crate::filter::Bloom;
use crate::value::{self, Value};

/// The type's name (`TYPE key`; exactly nine characters) and encoding
/// version.
pub(crate) static BLOOM_TYPE: RedisType = RedisType::new(
    "atombloom",
    ENCODING_VERSION,
    type_methods(rdb_load, rdb_save, aof_rewrite, free, mem_usage, copy),
);

/// The server's callbacks of a data type that saves, loads, rewrites,
/// frees, measures and copies its values (this module's two types).
pub(crate) const fn type_methods(
    rdb_load: unsafe extern "C" fn(*mut raw::RedisModuleIO, c_int) -> *mut c_void,
    rdb_save: unsafe extern "C" fn(*mut raw::RedisModuleIO, *mut c_void),
    aof_rewrite: unsafe extern "C" fn(
        *mut raw::RedisModuleIO,
        *mut raw::RedisModuleString,
        *mut c_void,
    ),
    free: unsafe extern "C" fn(*mut c_void),
    mem_usage: unsafe extern "C" fn(*const c_void) -> usize,
    copy: unsafe extern "C" fn(
        *mut raw::RedisModuleString,
        *mut raw::RedisModuleString,
        *const c_void,
    ) -> *mut c_void,
) -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        free: Some(free),
        mem_usage: Some(mem_usage),
        digest: None,
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(copy),
        defrag: None,
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    }
}

const ENCODING_VERSION: i32 = 1;

/// RDB layout: a tag, then for a filter its record as a run of string
/// buffers (each preceded by `1`, the run ended by `0`), so that neither
/// saving nor loading holds a second copy of a large filter; for a key
/// still loading, the record's length and the bytes received.
const TAG_READY: u64 = 1;
const TAG_LOADING: u64 = 2;
const MORE: u64 = 1;
const END: u64 = 0;

/// RDB buffers of at most this many bytes.
const RDB_CHUNK_BYTES: usize = 1 << 20;

/// Writes a record to the RDB a buffer at a time (a run of `MORE`
/// buffers; [`finish`](Self::finish) ends it).
pub(crate) struct RdbWriter {
    io: *mut raw::RedisModuleIO,
    buffer: Vec<u8>,
}

impl RdbWriter {
    pub(crate) fn new(io: *mut raw::RedisModuleIO) -> RdbWriter {
        RdbWriter {
            io,
            buffer: Vec::with_capacity(RDB_CHUNK_BYTES),
        }
    }

    /// Writes what is buffered and ends the run.
    pub(crate) fn finish(mut self) {
        self.emit();
        raw::save_unsigned(self.io, END);
    }

    fn emit(&mut self) {
        if !self.buffer.is_empty() {
            raw::save_unsigned(self.io, MORE);
            raw::save_slice(self.io, &self.buffer);
            self.buffer.clear();
        }
    }
}

impl Write for RdbWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= RDB_CHUNK_BYTES {
            self.emit();
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads a record back a buffer at a time.
pub(crate) struct RdbReader {
    io: *mut raw::RedisModuleIO,
    buffer: Option<RedisBuffer>,
    at: usize,
    ended: bool,
}

impl RdbReader {
    pub(crate) fn new(io: *mut raw::RedisModuleIO) -> RdbReader {
        RdbReader {
            io,
            buffer: None,
            at: 0,
            ended: false,
        }
    }
}

impl Read for RdbReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(buffer) = &self.buffer {
                let rest = &buffer.as_ref()[self.at..];
                if !rest.is_empty() {
                    let n = rest.len().min(out.len());
                    out[..n].copy_from_slice(&rest[..n]);
                    self.at += n;
                    return Ok(n);
                }
            }
            if self.ended {
                return Ok(0);
            }
            let io_error = |_| io::Error::other("RDB read failed");
            match raw::load_unsigned(self.io).map_err(io_error)? {
                MORE => {
                    self.buffer = Some(raw::load_string_buffer(self.io).map_err(io_error)?);
                    self.at = 0;
                }
                END => self.ended = true,
                _ => return Err(io::Error::other("bad RDB run marker")),
            }
        }
    }
}

unsafe extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // Safety: the server passes a value this module's type created.
    let value = unsafe { &*value.cast::<Value>() };
    match value {
        Value::Ready(bloom, _) => {
            raw::save_unsigned(io, TAG_READY);
            let mut out = RdbWriter::new(io);
            // The writer never fails; a library error would be a bug.
            if let Err(error) = bloom.write_record(&mut out) {
                logging::log_warning(format!("atomic-bloom: RDB save failed: {error}"));
            }
            out.finish();
        }
        Value::Loading(pending) => {
            raw::save_unsigned(io, TAG_LOADING);
            raw::save_unsigned(io, pending.total());
            // One string, as earlier builds wrote it: a copy, made only if
            // the allocator has room (a key is loading only while its
            // chunks stream in). Without room the key is saved with its
            // envelope alone, still loading: its client's next chunk is
            // then refused at its offset, where an abort would lose the
            // server.
            match pending.contiguous() {
                Some(received) => raw::save_slice(io, &received),
                None => {
                    logging::log_warning(
                        "atomic-bloom: no memory to save a key still loading whole; \
                         saved with its envelope alone",
                    );
                    raw::save_slice(io, pending.envelope_bytes());
                }
            }
        }
    }
}

/// The most a value (of either type: `BF` or `WBF`) restored by a
/// client's `RESTORE` may take, in all: the operator's `bf-memory-limit-per-filter` on a primary that is not
/// loading. An RDB file, a full sync, `DEBUG RELOAD` and a replica's
/// `RESTORE` from its primary (the server is loading, or a replica) take
/// what their source held.
pub(crate) fn restore_cap(io: *mut raw::RedisModuleIO) -> Option<usize> {
    let limit = value::memory_limit()?;
    // Safety: both exist in every server this module loads into; the
    // context belongs to `io`, which the server passed to this callback.
    let flags = unsafe {
        let ctx = raw::RedisModule_GetContextFromIO.unwrap()(io);
        raw::RedisModule_GetContextFlags.unwrap()(ctx)
    } as u32;
    let replaying = raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_SLAVE;
    (flags & replaying == 0).then_some(limit)
}

/// The most a value (of any of the module's types) copied by `COPY` may
/// take: `bf-memory-limit-per-filter`, on a primary that is not loading.
/// A replica's `COPY` comes from its primary, a loading server's from its
/// AOF: they copy what their source did.
pub(crate) fn copy_cap() -> Option<usize> {
    let limit = value::memory_limit()?;
    // Safety: exists in every server this module loads into; without a
    // context it answers the server's own flags (loading, a replica).
    let flags = unsafe { raw::RedisModule_GetContextFlags.unwrap()(std::ptr::null_mut()) } as u32;
    let replaying = raw::REDISMODULE_CTX_FLAGS_LOADING
        | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING
        | raw::REDISMODULE_CTX_FLAGS_SLAVE;
    (flags & replaying == 0).then_some(limit)
}

unsafe extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    if encver != ENCODING_VERSION {
        logging::log_warning(format!(
            "atomic-bloom: RDB encoding version {encver} is not {ENCODING_VERSION}"
        ));
        return std::ptr::null_mut();
    }
    let value = match raw::load_unsigned(io) {
        Ok(TAG_READY) => {
            match Bloom::read_record_within(
                RdbReader::new(io),
                restore_cap(io).map(Value::filter_cap),
            ) {
                Ok(bloom) => Value::ready(bloom),
                Err(error) => {
                    logging::log_warning(format!("atomic-bloom: RDB load refused: {error}"));
                    return std::ptr::null_mut();
                }
            }
        }
        Ok(TAG_LOADING) => {
            let total = raw::load_unsigned(io);
            let received = raw::load_string_buffer(io);
            match (total, received) {
                (Ok(total), Ok(received)) => {
                    let mut held = Vec::new();
                    if held.try_reserve_exact(received.as_ref().len()).is_err() {
                        logging::log_warning("atomic-bloom: no memory to load a key still loading");
                        return std::ptr::null_mut();
                    }
                    held.extend_from_slice(received.as_ref());
                    match Pending::from_parts(held, total, restore_cap(io)) {
                        Some(pending) => Value::Loading(pending),
                        None => return std::ptr::null_mut(),
                    }
                }
                _ => return std::ptr::null_mut(),
            }
        }
        _ => return std::ptr::null_mut(),
    };
    Box::into_raw(Box::new(value)).cast::<c_void>()
}

/// How a rewritten chunk is numbered.
#[derive(Clone, Copy)]
pub(crate) enum ChunkNumber {
    /// `BF.LOADCHUNK`'s: the iterator after the chunk (1 + bytes so far,
    /// this chunk's included), as `BF.SCANDUMP` hands it out.
    After,
    /// `WBF.LOADCHUNK`'s: the offset of the chunk's first byte.
    Offset,
}

/// Emits `command key number chunk` for each chunk of a record, cut as
/// `BF.SCANDUMP` cuts it (`CHUNK_BYTES`).
pub(crate) struct AofWriter {
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    command: &'static std::ffi::CStr,
    number: ChunkNumber,
    buffer: Vec<u8>,
    emitted: u64,
}

impl AofWriter {
    pub(crate) fn new(
        aof: *mut raw::RedisModuleIO,
        key: *mut raw::RedisModuleString,
        command: &'static std::ffi::CStr,
        number: ChunkNumber,
    ) -> Self {
        AofWriter {
            aof,
            key,
            command,
            number,
            buffer: Vec::new(),
            emitted: 0,
        }
    }

    /// Emits what is buffered; call once more after the last write.
    pub(crate) fn emit(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let number = match self.number {
            ChunkNumber::After => 1 + self.emitted + self.buffer.len() as u64,
            ChunkNumber::Offset => self.emitted,
        };
        self.emitted += self.buffer.len() as u64;
        // Safety: EmitAOF exists in every server this module loads into
        // (Redis 4+); "slb" is a module string, a long long and a buffer
        // with its length, which is what follows.
        unsafe {
            raw::RedisModule_EmitAOF.unwrap()(
                self.aof,
                self.command.as_ptr(),
                c"slb".as_ptr(),
                self.key,
                number as std::os::raw::c_longlong,
                self.buffer.as_ptr(),
                self.buffer.len(),
            );
        }
        self.buffer.clear();
    }
}

impl Write for AofWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        for piece in bytes.chunks(CHUNK_BYTES) {
            let room = CHUNK_BYTES - self.buffer.len();
            let (now, later) = piece.split_at(room.min(piece.len()));
            self.buffer.extend_from_slice(now);
            if self.buffer.len() == CHUNK_BYTES {
                self.emit();
            }
            self.buffer.extend_from_slice(later);
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // Safety: the server passes a value this module's type created.
    let value = unsafe { &*value.cast::<Value>() };
    let mut out = AofWriter::new(aof, key, c"BF.LOADCHUNK", ChunkNumber::After);
    match value {
        Value::Ready(bloom, _) => {
            if let Err(error) = bloom.write_record(&mut out) {
                logging::log_warning(format!("atomic-bloom: AOF rewrite failed: {error}"));
            }
        }
        Value::Loading(pending) => {
            // The chunks received so far; the rest never came.
            for chunk in pending.chunks() {
                let _ = out.write_all(chunk);
            }
        }
    }
    out.emit();
}

unsafe extern "C" fn free(value: *mut c_void) {
    // Safety: the server passes a value this module's type created, once.
    drop(unsafe { Box::from_raw(value.cast::<Value>()) });
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // Safety: the server passes a value this module's type created.
    unsafe { &*value.cast::<Value>() }.memory_bytes()
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // Safety: the server passes a value this module's type created.
    let value = unsafe { &*value.cast::<Value>() };
    if copy_cap().is_some_and(|cap| value.memory_bytes() > cap) {
        logging::log_notice(
            "atomic-bloom: COPY refused: the copy would pass bf-memory-limit-per-filter",
        );
        return std::ptr::null_mut();
    }
    let copy = match value {
        // Filter to filter, without a serialized copy between; an
        // allocation that fails is the server's error reply, not an abort.
        Value::Ready(bloom, _) => match bloom.try_clone() {
            Ok(bloom) => Value::Ready(bloom, DumpState::default()),
            Err(_) => return std::ptr::null_mut(),
        },
        Value::Loading(pending) => match pending.try_clone() {
            Some(pending) => Value::Loading(pending),
            None => return std::ptr::null_mut(),
        },
    };
    Box::into_raw(Box::new(copy)).cast::<c_void>()
}
