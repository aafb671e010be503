//! `CF.*` at the edges of what a client may hand the server: filters made
//! from hand-written `CF.LOADCHUNK` headers (a sub-filter of other than a
//! power of two of buckets, counts past 2^63) answer as RedisBloom's and
//! keep a replica equal to its primary.

mod common;

use common::{dump_payload, ok, replica_caught_up, replicate, reply, Server};

/// RedisBloom's 38-byte `CF.SCANDUMP` header.
fn header(items: u64, buckets: u64, deletes: u64, filters: u64, fields: [u16; 3]) -> Vec<u8> {
    let mut out: Vec<u8> = [items, buckets, deletes, filters]
        .iter()
        .flat_map(|field| field.to_le_bytes())
        .collect();
    out.extend(fields.iter().flat_map(|field| field.to_le_bytes()));
    out
}

fn load_chunk(c: &mut redis::Connection, key: &str, iterator: u64, data: &[u8]) {
    let answer: String = redis::cmd("CF.LOADCHUNK")
        .arg(key)
        .arg(iterator)
        .arg(data)
        .query(c)
        .unwrap_or_else(|error| panic!("CF.LOADCHUNK {key} {iterator}: {error}"));
    assert_eq!(answer, "OK");
}

/// A full filter of two sub-filters whose second has 6 buckets (a header
/// of 2 buckets and expansion 3, which RedisBloom loads): there a failed
/// relocation's undoing does not put the slots back. A client's add that
/// then fails (here: its growth would pass `bf-memory-limit-per-filter`)
/// does not travel to the replica, so it must leave the filter as it was.
#[test]
fn a_failed_add_to_a_filter_of_odd_buckets_leaves_it_as_its_replica_holds_it() {
    let primary = Server::start(common::Kind::Valkey, &[], &[]);
    let replica = Server::start(common::Kind::Valkey, &[], &[]);
    let mut r = replica.connect();
    replicate(&mut r, &primary);
    let mut p = primary.connect();
    // Linked before the writes, which must travel as commands (a sync
    // after them would copy the primary's filter whole).
    assert!(
        replica_caught_up(&mut p, &mut r),
        "the replica never synced"
    );
    load_chunk(&mut p, "odd", 1, &header(16, 2, 0, 2, [2, 20, 3]));
    // Every slot taken: sub-filter 0's 4 bytes end at 4, sub-filter 1's
    // 12 at 16.
    let slots: Vec<u8> = (0..16u8)
        .map(|i| i.wrapping_mul(37).wrapping_add(11) | 1)
        .collect();
    load_chunk(&mut p, "odd", 5, &slots[..4]);
    load_chunk(&mut p, "odd", 17, &slots[4..]);
    let before = dump_payload(&mut p, "odd");
    let used: i64 = reply(&mut p, &["MEMORY", "USAGE", "odd"]);
    ok(
        &mut p,
        &[
            "CONFIG",
            "SET",
            "bf.bf-memory-limit-per-filter",
            &(used + 8).to_string(),
        ],
    );
    let mut refused = 0;
    for at in 0..20 {
        let item = format!("item:{at}");
        if redis::cmd("CF.ADD")
            .arg("odd")
            .arg(&item)
            .query::<redis::Value>(&mut p)
            .is_err()
        {
            refused += 1;
        }
        let _ = redis::cmd("CF.INSERT")
            .arg("odd")
            .arg("ITEMS")
            .arg(format!("{item}:a"))
            .arg(format!("{item}:b"))
            .query::<redis::Value>(&mut p);
    }
    assert_eq!(refused, 20, "every add needs a third sub-filter");
    assert!(replica_caught_up(&mut p, &mut r), "the replica lags");
    assert!(
        dump_payload(&mut p, "odd") == dump_payload(&mut r, "odd"),
        "the replica's filter differs from its primary's"
    );
    assert!(
        dump_payload(&mut p, "odd") == before,
        "failed adds changed the filter"
    );
}

/// `CF.INFO` answers its counts as RedisBloom does, as signed 64-bit
/// numbers: a header's items or deletes past 2^63 (or a delete from a
/// filter whose count is 0) come back negative there, and here.
#[test]
fn cf_info_answers_counts_past_2_63_as_redisbloom_does() {
    let server = Server::start(common::Kind::Valkey, &[], &[]);
    let mut c = server.connect();
    load_chunk(
        &mut c,
        "big",
        1,
        &header(u64::MAX - 4, 4, 1 << 63, 1, [2, 20, 1]),
    );
    let info: Vec<redis::Value> = reply(&mut c, &["CF.INFO", "big"]);
    let field = |name: &str| {
        let at = info
            .iter()
            .position(|value| *value == redis::Value::SimpleString(name.into()))
            .unwrap_or_else(|| panic!("no {name} in {info:?}"));
        info[at + 1].clone()
    };
    // RedisBloom b28c294's replies to the same header.
    assert_eq!(field("Number of items inserted"), redis::Value::Int(-5));
    assert_eq!(
        field("Number of items deleted"),
        redis::Value::Int(i64::MIN)
    );
    // A count of 0 and a fingerprint loaded into its slots: a delete
    // takes the count below 0, as in RedisBloom.
    load_chunk(&mut c, "zero", 1, &header(0, 4, 0, 1, [2, 20, 1]));
    load_chunk(&mut c, "zero", 9, &(1..=8).collect::<Vec<u8>>());
    let deleted: i64 = (0..300)
        .map(|at| reply::<i64>(&mut c, &["CF.DEL", "zero", &format!("i{at}")]))
        .sum();
    assert!(deleted > 0, "no delete found a fingerprint");
    let debug: String = reply(&mut c, &["CF.DEBUG", "zero"]);
    assert!(
        debug.contains(&format!("items:{}", 0u64.wrapping_sub(deleted as u64))),
        "{debug}"
    );
    let info: Vec<redis::Value> = reply(&mut c, &["CF.INFO", "zero"]);
    assert_eq!(info[7], redis::Value::Int(-deleted), "{info:?}");
}
