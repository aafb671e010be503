//! RedisBloom's RDB encoding of a cuckoo filter (`MBbloomCF`), read from
//! any [`RdbInput`]: the server's RDB stream (`data_type.rs`) or, for the
//! fuzz targets, bytes.
//!
//! Encoding 4 (RedisBloom 2.2 on, and this module): the number of
//! sub-filters, the first one's buckets, items, deletes, bucket size, max
//! iterations and expansion, then per sub-filter its buckets and its slots
//! as a string. Encodings 1 to 3 (RedisBloom 1.1 to 2.0): the number of
//! sub-filters, buckets and items, then per sub-filter its slots (each of
//! the first one's buckets); RedisBloom reads their deletes as 0 and their
//! bucket size, max iterations and expansion from its configs now, and so
//! does this module (`defaults`).
//!
//! RedisBloom checks only that there are sub-filters and buckets, then
//! aborts the server on a string of the wrong length; here every field is
//! checked against what RedisBloom can write before it is used, and a
//! value that fails is refused (`RESTORE`: "Bad data format"). A value is
//! held to what a `CF.LOADCHUNK` header of it must be (the first
//! sub-filter's buckets a power of two, sub-filter `i` of `buckets ·
//! expansion^i` buckets, no second sub-filter without expansion), so that
//! every filter this module holds dumps, rewrites and copies into one it
//! accepts again. (A filter of an old encoding grown while RedisBloom had
//! no expansion, loaded under a `cf-expansion-factor` other than 1, fails
//! that: RedisBloom loads it, and then its own `CF.SCANDUMP` of it loads
//! into a different filter.)

use super::table::Table;
use super::{buckets_at, Cuckoo, Fields, Gathered, MAX_BUCKETS, MAX_FILTERS};
use crate::redisbloom::rdb::RdbInput;

/// The encoding RedisBloom writes, and this module.
pub(crate) const ENCODING_VERSION: i32 = 4;

/// Reads a filter written with encoding `encver` (1 to 4) (`defaults`:
/// what an encoding before 4 does not say, RedisBloom's configs now),
/// refusing one
/// whose slots would pass `cap` bytes before they are read (a `RESTORE`
/// under `bf-memory-limit-per-filter`: a compressed payload may hold many
/// times its size). A value refused for its fields is read to its end
/// first (its sub-filters as RedisBloom would read them: the count modulo
/// 2^16), so that a load can go on past it (`redisbloom/unheld.rs`).
///
/// # Errors
///
/// Why it was refused, for the log.
pub(crate) fn load(
    input: &mut impl RdbInput,
    encver: i32,
    defaults: Fields,
    cap: Option<u64>,
) -> Result<Cuckoo, &'static str> {
    let truncated = |()| "the RDB ends early";
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err("an encoding newer than this module's");
    }
    let filters = input.unsigned().map_err(truncated)?;
    let buckets = input.unsigned().map_err(truncated)?;
    let items = input.unsigned().map_err(truncated)?;
    let mut deletes = 0;
    let mut fields = defaults;
    // The first field that is not as RedisBloom writes it.
    let mut refused: Option<&'static str> = None;
    let refuse = |refused: &mut Option<&'static str>, why: &'static str| {
        refused.get_or_insert(why);
    };
    if filters == 0
        || filters > MAX_FILTERS as u64
        || buckets > MAX_BUCKETS
        || !buckets.is_power_of_two()
    {
        refuse(
            &mut refused,
            "no sub-filters, or more than 65535, or buckets not a power of two below 2^56",
        );
    }
    if encver >= ENCODING_VERSION {
        deletes = input.unsigned().map_err(truncated)?;
        let field = |value: u64, least: u64, most: u64| {
            u16::try_from(value)
                .ok()
                .filter(|v| (least..=most).contains(&u64::from(*v)))
        };
        let bucket_size = input.unsigned().map_err(truncated)?;
        let max_iterations = input.unsigned().map_err(truncated)?;
        let expansion = input.unsigned().map_err(truncated)?;
        match (
            field(bucket_size, 1, 255),
            field(max_iterations, 1, 65535),
            field(expansion, 0, 32768),
        ) {
            (Some(bucket_size), Some(max_iterations), Some(expansion)) => {
                fields = Fields {
                    bucket_size,
                    max_iterations,
                    expansion,
                };
            }
            _ => refuse(
                &mut refused,
                "a bucket size, max iterations or expansion out of RedisBloom's ranges",
            ),
        }
    }
    if fields.expansion == 0 && filters > 1 {
        refuse(
            &mut refused,
            "sub-filters past the first in a filter that cannot grow",
        );
    }
    let size = u64::from(fields.bucket_size);
    // `filters` is the input's, any 64-bit number (refused past 65535).
    let mut total = 16u64.saturating_mul(filters).saturating_add(40);
    let count = usize::from(filters as u16);
    let mut gathered = Gathered::with_room(count);
    if gathered.is_none() {
        refuse(&mut refused, "no memory for the sub-filters");
    }
    for index in 0..count {
        let sub_buckets = if encver >= ENCODING_VERSION {
            input.unsigned().map_err(truncated)?
        } else {
            buckets
        };
        if Some(sub_buckets) != buckets_at(buckets, fields.expansion, index) {
            refuse(
                &mut refused,
                "a sub-filter whose buckets are not buckets x expansion^i",
            );
        }
        total = total.saturating_add(sub_buckets.saturating_mul(size));
        if cap.is_some_and(|cap| total > cap) {
            // A RESTORE (never a load, which has no cap): refused at once,
            // before the slots are read.
            return Err("its slots would pass bf-memory-limit-per-filter");
        }
        // The string's length is what the input holds: the server read it.
        let slots = input.string().map_err(truncated)?;
        if refused.is_some() {
            continue;
        }
        if Some(slots.len() as u64) != sub_buckets.checked_mul(size) {
            refuse(&mut refused, "slots that are not buckets x bucket size");
            continue;
        }
        match (
            Table::from_bytes(sub_buckets, fields.bucket_size, &slots),
            &mut gathered,
        ) {
            (Some(table), Some(gathered)) => gathered.push(table),
            _ => refuse(&mut refused, "no memory for a sub-filter"),
        }
    }
    match (refused, gathered) {
        (None, Some(gathered)) => Ok(Cuckoo::assemble(items, deletes, fields, gathered)),
        (why, _) => Err(why.unwrap_or("no memory for the sub-filters")),
    }
}

/// Where a filter's fields go (the server's RDB stream, or bytes).
pub(crate) trait RdbOutput {
    fn unsigned(&mut self, value: u64);
    fn bytes(&mut self, value: &[u8]);
}

/// Writes `cuckoo` as RedisBloom does (encoding 4): each sub-filter's
/// slots as one string, straight from the table.
pub(crate) fn save(cuckoo: &Cuckoo, out: &mut impl RdbOutput) {
    out.unsigned(cuckoo.filters().len() as u64);
    out.unsigned(cuckoo.buckets());
    out.unsigned(cuckoo.items);
    out.unsigned(cuckoo.deletes);
    out.unsigned(u64::from(cuckoo.bucket_size));
    out.unsigned(u64::from(cuckoo.max_iterations));
    out.unsigned(u64::from(cuckoo.expansion));
    for sub in cuckoo.filters() {
        out.unsigned(sub.buckets());
        out.bytes(sub.bytes());
    }
}

/// An RDB value as bytes, as [`crate::redisbloom::rdb::BytesInput`] reads
/// them (for the fuzz targets: what they load, they save and load again).
pub(crate) struct BytesOutput(pub(crate) Vec<u8>);

impl RdbOutput for BytesOutput {
    fn unsigned(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn bytes(&mut self, value: &[u8]) {
        self.0
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.0.extend_from_slice(value);
    }
}
