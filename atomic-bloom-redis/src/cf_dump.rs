//! The `CF.*` commands that read a filter whole or in pieces, and write it
//! in pieces: `CF.INFO`, `CF.DEBUG`, `CF.SCANDUMP`, `CF.LOADCHUNK`.

use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{error, parse_i64};
use crate::bf_reads::reply_fields;
use crate::cf_commands::{bounds, found_mut, memory_cap, NOT_FOUND};
use crate::cuckoo::config;
use crate::cuckoo::data_type::CUCKOO_TYPE;
use crate::cuckoo::{CreateError, Cuckoo, Scanned, HEADER_BYTES};
use crate::filter::OVER_LIMIT;
use crate::replica::{self, creation_refused, is_replayed, not_held};

/// The filter under `args[1]` for `CF.INFO`, `CF.DEBUG` and `CF.SCANDUMP`:
/// `ERR not found` when missing, `WRONGTYPE` on another type.
fn read<T>(
    ctx: &Context,
    key: &RedisString,
    answer: impl FnOnce(&Cuckoo) -> T,
) -> Result<T, RedisError> {
    let key = ctx.open_key(key);
    match key.get_value::<Cuckoo>(&CUCKOO_TYPE) {
        Ok(Some(cuckoo)) if !cuckoo.is_placeholder() => Ok(answer(cuckoo)),
        Ok(_) => Err(error(NOT_FOUND)),
        Err(_) => Err(RedisError::WrongType),
    }
}

/// A count as RedisBloom replies with it (`RedisModule_ReplyWithLongLong`
/// of its unsigned field): the same 64 bits, signed, so that a count past
/// 2^63 (a hand-made header's, or one a delete took below 0) answers
/// negative as there.
fn integer(value: u64) -> RedisValue {
    RedisValue::Integer(value as i64)
}

/// `CF.INFO key`.
pub(crate) fn cf_info(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let fields = read(ctx, &args[1], |cuckoo| {
        [
            ("Size", integer(cuckoo.redisbloom_bytes())),
            ("Number of buckets", integer(cuckoo.buckets())),
            ("Number of filters", integer(cuckoo.filters().len() as u64)),
            ("Number of items inserted", integer(cuckoo.items)),
            ("Number of items deleted", integer(cuckoo.deletes)),
            ("Bucket size", integer(cuckoo.bucket_size.into())),
            ("Expansion rate", integer(cuckoo.expansion.into())),
            ("Max iterations", integer(cuckoo.max_iterations.into())),
        ]
    })?;
    Ok(reply_fields(ctx, &fields))
}

/// `CF.DEBUG key`.
pub(crate) fn cf_debug(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let line = read(ctx, &args[1], Cuckoo::debug_line)?;
    Ok(RedisValue::BulkString(line))
}

/// `CF.SCANDUMP key iterator`: `[next, bytes]`, `[0, nil]` at the end.
/// Each call costs its own piece: the piece's bytes are read out of the
/// sub-filter's table, and nothing else.
pub(crate) fn cf_scandump(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let iterator = parse_i64(&args[2])
        .filter(|at| *at >= 0)
        .ok_or(error("Invalid position"))?;
    PIECE_BUFFER.with_borrow_mut(|piece| {
        read(ctx, &args[1], |cuckoo| {
            let scanned = cuckoo.scan_dump(iterator, piece);
            if matches!(scanned, Scanned::NoMemory) {
                ctx.reply_error_string("ERR Insufficient memory");
                *piece = Vec::new();
                return;
            }
            raw::reply_with_array(ctx.ctx, 2);
            match scanned {
                Scanned::End => {
                    raw::reply_with_long_long(ctx.ctx, 0);
                    raw::reply_with_null(ctx.ctx);
                }
                Scanned::Header(header) => {
                    raw::reply_with_long_long(ctx.ctx, 1);
                    raw::reply_with_string_buffer(ctx.ctx, header.as_ptr().cast(), header.len());
                }
                Scanned::Piece(next) => {
                    raw::reply_with_long_long(ctx.ctx, next);
                    raw::reply_with_string_buffer(ctx.ctx, piece.as_ptr().cast(), piece.len());
                }
                Scanned::NoMemory => {}
            }
            if !matches!(scanned, Scanned::Piece(_)) {
                // A dump's end (or start): the buffer is let go.
                *piece = Vec::new();
            }
        })
    })?;
    Ok(RedisValue::NoReply)
}

thread_local! {
    /// `CF.SCANDUMP`'s piece buffer, kept while a dump goes on (a fresh
    /// 16 MiB buffer per piece costs more in page faults than the copy;
    /// commands run on the server's main thread).
    static PIECE_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `CF.LOADCHUNK key iterator data`: a header at iterator 1 makes the
/// filter (its slots empty), later pieces fill it.
pub(crate) fn cf_loadchunk(ctx: &Context, args: &[RedisString]) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    let name = &args[1];
    let key = ctx.open_key_writable(name);
    let iterator = parse_i64(&args[2])
        .filter(|at| *at != 0)
        .ok_or(error("Invalid position"))?;
    let data = args[3].as_slice();
    let held = found_mut(&key)?;
    if iterator == 1 {
        if held.is_some() {
            return Err(creation_refused(
                ctx,
                "CF.LOADCHUNK",
                name,
                error("ERR item exists"),
                false,
            ));
        }
        if data.len() != HEADER_BYTES {
            return Err(error("Invalid header"));
        }
        let bounds = bounds(ctx, &config::settings());
        let made = Cuckoo::from_header(data, &bounds, memory_cap(ctx)).map_err(|failure| {
            let refused = error("Couldn't create filter!");
            match failure {
                CreateError::OutOfMemory => {
                    creation_refused(ctx, "CF.LOADCHUNK", name, refused, true)
                }
                CreateError::OverLimit => error(OVER_LIMIT),
                CreateError::Invalid => refused,
            }
        })?;
        key.set_value(&CUCKOO_TYPE, made)?;
        replica::created(ctx, name);
    } else {
        let Some(cuckoo) = held else {
            if is_replayed(ctx) {
                return Err(not_held(ctx, "CF.LOADCHUNK", name));
            }
            return Err(error(NOT_FOUND));
        };
        if !cuckoo.load_piece(iterator, data) {
            return Err(error("Couldn't load chunk!"));
        }
    }
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}
