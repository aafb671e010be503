//! A real data type: dumps (`BF.SCANDUMP` / `BF.LOADCHUNK`), RDB, AOF
//! rewrite, `DEBUG RELOAD`, a restart, `RESTORE`, `MEMORY USAGE`,
//! `DEL` / `RENAME` / `COPY` / `EXPIRE`, and a replica that answers as its
//! primary: against Valkey and Redis 7.0.

mod common;

use common::{
    aof_text, batched, config_set, crc64, error_text, load_chunk, load_chunks, ok,
    replica_caught_up, replicate, reply, restore, scan_dump, scan_dump_from, scandump_step,
    used_memory, wait_for_aof_rewrite, Kind, Server, KINDS,
};
use redis::Value;

fn items(range: std::ops::Range<u64>) -> Vec<String> {
    range
        .map(|i| format!("https://host{}.example/page{i}.html", i % 97))
        .collect()
}

fn madd(c: &mut redis::Connection, key: &str, items: &[String]) -> Vec<i64> {
    batched(c, "BF.MADD", key, items, 500)
}

fn mexists(c: &mut redis::Connection, key: &str, items: &[String]) -> Vec<i64> {
    batched(c, "BF.MEXISTS", key, items, 500)
}

fn info(c: &mut redis::Connection, key: &str) -> Vec<redis::Value> {
    redis::cmd("BF.INFO").arg(key).query(c).unwrap()
}

/// A filter's full answer: BF.INFO, and BF.MEXISTS over its items and
/// 20,000 absent probes (false positives included).
fn answers(c: &mut redis::Connection, key: &str) -> (Vec<redis::Value>, Vec<i64>) {
    let probes = items(0..30_000);
    (info(c, key), mexists(c, key, &probes))
}

#[test]
fn a_dump_loaded_back_answers_exactly_as_the_original() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(&mut c, &["BF.RESERVE", "scaling", "0.01", "1000"]);
        ok(
            &mut c,
            &["BF.RESERVE", "fixed", "0.001", "20000", "NONSCALING"],
        );
        for key in ["scaling", "fixed"] {
            madd(&mut c, key, &items(0..10_000));
            let before = answers(&mut c, key);
            let chunks = scan_dump(&mut c, key);
            assert!(!chunks.is_empty());
            // The position in the low 48 bits; the dump's number above.
            assert_eq!(chunks[0].0 & ((1 << 48) - 1), 1 + chunks[0].1.len() as i64);
            let _: i64 = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
            load_chunks(&mut c, key, &chunks);
            assert_eq!(answers(&mut c, key), before, "{kind:?} {key}");
            // Into another key, as RedisBloom's test_scandump_with_content.
            let copy = format!("{key}-copy");
            load_chunks(&mut c, &copy, &chunks);
            assert_eq!(answers(&mut c, &copy), before, "{kind:?} {copy}");
            // And it goes on working.
            let added: i64 = reply(&mut c, &["BF.ADD", key, "after the load"]);
            assert_eq!(added, 1);
        }
        // Scans past the end, negative, huge: never an error.
        for iter in [-1i64, 1 << 40, i64::MAX, i64::MIN] {
            let (next, data) = scandump_step(&mut c, "fixed", iter);
            assert_eq!((next, data.len()), (0, 0), "{kind:?} {iter}");
        }
        assert_eq!(
            common::refusal(&mut c, &["BF.SCANDUMP", "fixed", "str"]),
            "Second argument must be numeric"
        );
        assert_eq!(
            common::refusal(&mut c, &["BF.SCANDUMP", "noexist", "0"]),
            "ERR not found"
        );
        assert_eq!(
            common::refusal(&mut c, &["BF.LOADCHUNK", "fixed", "str", "data"]),
            "ERR Second argument must be numeric"
        );
    }
}

/// A 64 MiB filter dumps in 16 MiB chunks, as RedisBloom's do.
#[test]
fn a_large_filter_dumps_in_several_chunks() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut c = server.connect();
    ok(
        &mut c,
        &["BF.RESERVE", "huge", "0.01", "50000000", "NONSCALING"],
    );
    madd(&mut c, "huge", &items(0..5_000));
    let before = answers(&mut c, "huge");
    let chunks = scan_dump(&mut c, "huge");
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    assert!(chunks.iter().all(|(_, data)| data.len() <= 16 << 20));
    let _: i64 = reply(&mut c, &["DEL", "huge"]);
    load_chunks(&mut c, "huge", &chunks);
    assert_eq!(answers(&mut c, "huge"), before);
}

/// A chunk sent again after a lost reply (the same iterator and bytes) is
/// taken as done, the last one too; anything else at that place is still
/// RedisBloom's error. A SCANDUMP that jumps back starts over there and
/// gives the same bytes.
#[test]
fn a_chunk_sent_again_is_taken_once_and_a_dump_can_start_anywhere() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(
            &mut c,
            &["BF.RESERVE", "big", "0.001", "20000000", "NONSCALING"],
        );
        madd(&mut c, "big", &items(0..5_000));
        let before = answers(&mut c, "big");
        let chunks = scan_dump(&mut c, "big");
        assert!(chunks.len() >= 3, "{kind:?}: {} chunks", chunks.len());
        // Chunk 2 asked for again, out of order: the same bytes.
        assert_eq!(
            scandump_step(&mut c, "big", chunks[0].0),
            chunks[1].clone(),
            "{kind:?}"
        );
        let _: i64 = reply(&mut c, &["DEL", "big"]);
        for (index, (iter, data)) in chunks.iter().enumerate() {
            for _ in 0..2 {
                let ok = load_chunk(&mut c, "big", *iter, data)
                    .unwrap_or_else(|e| panic!("{kind:?} chunk {index}: {e}"));
                assert_eq!(ok, "OK");
            }
            if index + 1 < chunks.len() {
                // Other bytes where the chunk was: refused.
                let mut other = data.clone();
                other[0] ^= 1;
                let refused = load_chunk(&mut c, "big", *iter, &other).unwrap_err();
                assert_eq!(
                    error_text(&refused),
                    "ERR invalid offset - no link found",
                    "{kind:?} chunk {index}"
                );
            }
        }
        assert_eq!(answers(&mut c, "big"), before, "{kind:?}");
    }
}

#[test]
fn keys_behave_as_keys_of_any_type() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        madd(&mut c, "k", &items(0..1000));
        let kind_name: String = reply(&mut c, &["TYPE", "k"]);
        assert_eq!(kind_name, "atombloom");
        let usage: i64 = reply(&mut c, &["MEMORY", "USAGE", "k"]);
        let size: Vec<i64> = reply(&mut c, &["BF.INFO", "k", "SIZE"]);
        assert!(
            usage >= size[0] && size[0] > 1000,
            "{kind:?}: usage {usage}, size {size:?}"
        );
        let before = answers(&mut c, "k");
        let copied: i64 = reply(&mut c, &["COPY", "k", "k2"]);
        assert_eq!(copied, 1, "{kind:?}");
        assert_eq!(answers(&mut c, "k2"), before);
        ok(&mut c, &["RENAME", "k2", "k3"]);
        assert_eq!(answers(&mut c, "k3"), before);
        // COPY is a copy: adding to it leaves the original alone.
        let _: i64 = reply(&mut c, &["BF.ADD", "k3", "only in k3"]);
        let in_k: i64 = reply(&mut c, &["BF.EXISTS", "k", "only in k3"]);
        assert_eq!(in_k, 0);
        let set: i64 = reply(&mut c, &["PEXPIRE", "k3", "50"]);
        assert_eq!(set, 1);
        std::thread::sleep(std::time::Duration::from_millis(150));
        let exists: i64 = reply(&mut c, &["EXISTS", "k3"]);
        assert_eq!(exists, 0, "{kind:?}: expired");
        let deleted: i64 = reply(&mut c, &["DEL", "k"]);
        assert_eq!(deleted, 1);
        // DUMP / RESTORE through the RDB callbacks.
        madd(&mut c, "r", &items(0..1000));
        let before = answers(&mut c, "r");
        let payload: Vec<u8> = reply(&mut c, &["DUMP", "r"]);
        restore(&mut c, "r2", &payload).unwrap();
        assert_eq!(answers(&mut c, "r2"), before, "{kind:?}");
    }
}

/// A `RESTORE` payload with a bit flipped inside the filter, resealed so
/// the server's own checksum passes: our record's checksums refuse it,
/// with an error reply and no crash.
#[test]
fn a_corrupt_restore_payload_is_an_error_not_a_crash() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        madd(&mut c, "r", &items(0..300));
        let payload: Vec<u8> = reply(&mut c, &["DUMP", "r"]);
        let body = payload.len() - 8;
        assert_eq!(
            crc64(&payload[..body]).to_le_bytes(),
            payload[body..],
            "the trailer is CRC-64"
        );
        let mut refused = 0;
        for at in (20..body - 2).step_by(37) {
            let outcome = common::restore_flipped(&mut c, "bad", &payload, at, 0x10);
            match outcome {
                Err(error) => {
                    refused += 1;
                    let text = error_text(&error);
                    assert!(
                        text.contains("payload") || text.contains("Bad data"),
                        "{text}"
                    );
                }
                // A flip in RDB framing the server reads past (a length
                // byte that still parses) must still leave a filter that
                // answers as the original.
                Ok(_) => assert_eq!(answers(&mut c, "bad"), answers(&mut c, "r")),
            }
            let pong: String = reply(&mut c, &["PING"]);
            assert_eq!(pong, "PONG");
        }
        assert!(refused > 10, "{kind:?}: only {refused} refused");
    }
}

#[test]
fn a_key_survives_debug_reload_a_restart_and_an_aof_rewrite() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &["--aof-use-rdb-preamble", "no"]);
        let mut c = server.connect();
        madd(&mut c, "scaling", &items(0..20_000));
        let _: Vec<i64> = reply(
            &mut c,
            &[
                "BF.INSERT",
                "fixed",
                "CAPACITY",
                "5000",
                "NONSCALING",
                "ITEMS",
                "a",
                "b",
            ],
        );
        let before = (answers(&mut c, "scaling"), answers(&mut c, "fixed"));
        ok(&mut c, &["DEBUG", "RELOAD"]);
        assert_eq!(
            (answers(&mut c, "scaling"), answers(&mut c, "fixed")),
            before,
            "{kind:?} reload"
        );
        // A restart from the RDB file.
        ok(&mut c, &["SAVE"]);
        drop(c);
        server.stop(false);
        server.launch().unwrap();
        let mut c = server.connect();
        assert_eq!(
            (answers(&mut c, "scaling"), answers(&mut c, "fixed")),
            before,
            "{kind:?} restart"
        );
        // An AOF rewritten as BF.LOADCHUNK commands, replayed at start.
        config_set(&mut c, "appendonly", "yes");
        wait_for_aof_rewrite(&mut c);
        let _: Value = reply(&mut c, &["BGREWRITEAOF"]);
        wait_for_aof_rewrite(&mut c);
        drop(c);
        server.stop(false);
        // The rewrite went through the module's callback: the AOF holds
        // the filters as BF.LOADCHUNK commands, and no RDB is left to load.
        assert!(
            aof_text(&server.dir).contains("BF.LOADCHUNK"),
            "{kind:?}: no BF.LOADCHUNK in the AOF"
        );
        std::fs::remove_file(server.dir.join("dump.rdb")).ok();
        server.set_extra(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
        server.launch().unwrap();
        let mut c = server.connect();
        assert_eq!(
            (answers(&mut c, "scaling"), answers(&mut c, "fixed")),
            before,
            "{kind:?} aof"
        );
    }
}

/// A replica's filters answer as its primary's, false positives included:
/// creation propagates the filter's seed.
#[test]
fn a_replica_answers_as_its_primary() {
    for kind in KINDS {
        let primary = Server::start(kind, &[], &[]);
        let replica = Server::start(kind, &[], &[]);
        let mut p = primary.connect();
        let mut r = replica.connect();
        // Some state before the replica attaches (full sync, RDB)...
        madd(&mut p, "before", &items(0..5_000));
        replicate(&mut r, &primary);
        // ...and some after (the command stream).
        madd(&mut p, "after", &items(0..5_000));
        ok(&mut p, &["BF.RESERVE", "reserved", "0.05", "100"]);
        madd(&mut p, "reserved", &items(0..3_000));
        let _: Vec<i64> = redis::cmd("BF.INSERT")
            .arg(&[
                "inserted",
                "CAPACITY",
                "300",
                "EXPANSION",
                "3",
                "ITEMS",
                "x",
                "y",
            ])
            .query(&mut p)
            .unwrap();
        assert!(
            replica_caught_up(&mut p, &mut r),
            "{kind:?}: the replica never caught up"
        );
        for key in ["before", "after", "reserved", "inserted"] {
            assert_eq!(answers(&mut r, key), answers(&mut p, key), "{kind:?} {key}");
        }
    }
}

/// `COPY` copies the filter stage for stage (no serialized copy between):
/// fed the same items afterwards, the copy grows where its original does
/// and the two stay byte for byte alike.
#[test]
fn a_copy_grows_where_its_original_does() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(
            &mut c,
            &["BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "2"],
        );
        madd(&mut c, "k", &items(0..1500));
        let copied: i64 = reply(&mut c, &["COPY", "k", "k2"]);
        assert_eq!(copied, 1, "{kind:?}");
        for key in ["k", "k2"] {
            madd(&mut c, key, &items(1500..20_000));
        }
        let original = common::dump_payload(&mut c, "k").unwrap();
        let copy = common::dump_payload(&mut c, "k2").unwrap();
        assert!(
            original == copy,
            "{kind:?}: the copy differs from its original"
        );
        let stages: Vec<i64> = reply(&mut c, &["BF.INFO", "k2", "FILTERS"]);
        assert!(stages[0] >= 4, "{kind:?}: {stages:?}");
    }
}

/// `BF.SCANDUMP` at any iterator costs its chunk: iterator 0 answers the
/// envelope and the filter's first bytes, a chunk from any position equals that part of
/// the dump, past the end is `[0, ""]`; and a dump taken while items are
/// added between its chunks still loads (each page is sealed with the
/// checksum of the bytes handed out).
#[test]
fn scandump_at_any_iterator_and_a_dump_that_changes_between_chunks() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &["--proto-max-bulk-len", "64mb"]);
        let mut c = server.connect();
        ok(
            &mut c,
            &["BF.RESERVE", "big", "0.0001", "10000000", "NONSCALING"],
        );
        madd(&mut c, "big", &items(0..5000));
        let (first, envelope) = scandump_step(&mut c, "big", 0);
        // The dump's number in bits 48 and up, the position below; the
        // envelope and the filter's first 64 bytes (O(1), and longer than
        // the 80 bytes RedisBloom's tests corrupt).
        assert_eq!(
            (first & ((1 << 48) - 1), envelope.len()),
            (121, 120),
            "{kind:?}"
        );
        assert!(first >> 48 > 0, "{kind:?}: a dump without a number");
        // However many dumps begin, every iterator stays below 2^53: a
        // client holding integers as doubles (a Lua script, JavaScript)
        // sends it back exactly (it did not from the 32nd dump on).
        for _ in 0..100 {
            let (next, _) = scandump_step(&mut c, "big", 0);
            assert!(next < 1 << 53, "{kind:?}: iterator {next} past 2^53");
        }
        let mut chunks = vec![(first, envelope)];
        // Adds between chunks: the dump must still load.
        chunks.extend(scan_dump_from(&mut c, "big", first, |c, iterator| {
            let from = 1_000_000 + iterator as u64;
            madd(c, "big", &items(from..from + 20_000));
        }));
        assert!(chunks.len() >= 3, "{kind:?}: {} chunks", chunks.len());
        load_chunks(&mut c, "copy", &chunks);
        let found = mexists(&mut c, "copy", &items(0..5000));
        assert!(found.iter().all(|&f| f == 1), "{kind:?}");
        // A chunk from any position is that part of a dump of the filter
        // as it is now.
        let now: Vec<u8> = (scan_dump(&mut c, "big").into_iter())
            .flat_map(|(_, chunk)| chunk)
            .collect();
        for at in [100u64, 70_000, now.len() as u64 - 10, 12_345_678] {
            let (next, chunk) = scandump_step(&mut c, "big", at as i64 + 1);
            let end = (at as usize + chunk.len()).min(now.len());
            assert_eq!(&chunk[..], &now[at as usize..end], "{kind:?} at {at}");
            assert_eq!(next, 1 + end as i64, "{kind:?} at {at}");
        }
        let past = scandump_step(&mut c, "big", i64::MAX);
        assert_eq!(past, (0, Vec::new()), "{kind:?}");
    }
}

/// A scaling filter that grows while it is dumped: the chunks hold the
/// stages of the header call, and they load with every item added before
/// it (before, a stage added mid-dump made the rest of the chunks another
/// record's, and `BF.LOADCHUNK` refused them as bad data).
#[test]
fn a_filter_that_grows_while_it_is_dumped_loads() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(&mut c, &["BF.RESERVE", "grows", "0.01", "1000"]);
        madd(&mut c, "grows", &items(0..900));
        let filters = |c: &mut redis::Connection, key: &str| -> i64 {
            let reply: Vec<i64> = redis::cmd("BF.INFO")
                .arg(&[key, "FILTERS"])
                .query(c)
                .unwrap();
            reply[0]
        };
        let stages_at_start = filters(&mut c, "grows");
        let mut next_item = 900u64;
        let chunks = scan_dump_from(&mut c, "grows", 0, |c, _| {
            madd(c, "grows", &items(next_item..next_item + 3_000));
            next_item += 3_000;
        });
        assert!(
            filters(&mut c, "grows") > stages_at_start,
            "{kind:?}: it grew during the dump"
        );
        load_chunks(&mut c, "copy", &chunks);
        let found = mexists(&mut c, "copy", &items(0..900));
        assert!(found.iter().all(|&f| f == 1), "{kind:?}");
        assert_eq!(filters(&mut c, "copy"), stages_at_start, "{kind:?}");
    }
}

/// A client whose `BF.SCANDUMP` reply was lost asks for the same chunk
/// again after other clients added (and the filter grew): the chunks it
/// then holds still load, with every item added before the dump (before,
/// the retry missed the key's one cached cursor, counted the new stage, and
/// `BF.LOADCHUNK` refused the chunk as too big).
#[test]
fn a_scandump_chunk_asked_again_after_the_filter_grew_still_loads() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(&mut c, &["BF.RESERVE", "k", "0.01", "1000"]);
        madd(&mut c, "k", &items(0..900));
        let (first, envelope) = scandump_step(&mut c, "k", 0);
        let lost = scandump_step(&mut c, "k", first);
        assert!(lost.0 > first);
        madd(&mut c, "k", &items(900..20_000));
        let mut chunks = vec![(first, envelope)];
        chunks.extend(scan_dump_from(&mut c, "k", first, |_, _| {}));
        load_chunks(&mut c, "copy", &chunks);
        assert!(
            mexists(&mut c, "copy", &items(0..900))
                .iter()
                .all(|&f| f == 1),
            "{kind:?}"
        );
    }
}

/// A key still loading (`BF.LOADCHUNK` part way) that a client `DUMP`s and
/// `RESTORE`s on a server with a memory limit is held to it as a finished
/// filter is: the record its envelope announces would pass the limit
/// (before, it was restored, and its remaining chunks loaded unchecked).
#[test]
fn restore_of_a_key_still_loading_holds_to_the_memory_limit() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(
            &mut c,
            &["BF.RESERVE", "big", "0.001", "200000", "NONSCALING"],
        );
        let chunks = scan_dump(&mut c, "big");
        load_chunks(&mut c, "half", &chunks[..1]);
        let payload = common::dump_payload(&mut c, "half").expect("a loading key dumps");
        config_set(&mut c, "bf.bf-memory-limit-per-filter", "65536");
        let restored = restore(&mut c, "again", &payload);
        assert!(
            restored.is_err(),
            "{kind:?}: a loading key restored past the limit"
        );
        // Within the limit it restores and completes.
        config_set(&mut c, "bf.bf-memory-limit-per-filter", "0");
        assert_eq!(restore(&mut c, "again", &payload).unwrap(), "OK");
        load_chunks(&mut c, "again", &chunks[1..]);
    }
}

/// A record sent one byte per `BF.LOADCHUNK` is held in about its own
/// bytes while it loads, not a separate allocation and slot per byte
/// (before: about 40 times the record).
#[test]
fn a_record_sent_a_byte_at_a_time_is_held_in_about_its_bytes() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        ok(
            &mut c,
            &["BF.RESERVE", "src", "0.01", "150000", "NONSCALING"],
        );
        let record: Vec<u8> = scan_dump(&mut c, "src")
            .into_iter()
            .flat_map(|(_, chunk)| chunk)
            .collect();
        let before = used_memory(&mut c);
        // The envelope first (a first chunk holds it whole), then all but
        // the last byte one at a time: the key stays loading, holding them.
        assert_eq!(
            load_chunk(&mut c, "bytes", 57, &record[..56]).unwrap(),
            "OK"
        );
        for (batch_start, batch) in record[56..record.len() - 1].chunks(10_000).enumerate() {
            let mut pipe = redis::pipe();
            for (i, byte) in batch.iter().enumerate() {
                let offset = 56 + batch_start * 10_000 + i;
                pipe.cmd("BF.LOADCHUNK")
                    .arg("bytes")
                    .arg(offset as i64 + 2)
                    .arg(&[*byte][..])
                    .ignore();
            }
            let _: () = pipe.query(&mut c).unwrap();
        }
        let held = used_memory(&mut c) - before;
        assert!(
            held < 3 * record.len() as i64,
            "{kind:?}: {held} bytes held for a record of {}",
            record.len()
        );
        let last = load_chunk(
            &mut c,
            "bytes",
            record.len() as i64 + 1,
            &record[record.len() - 1..],
        );
        assert_eq!(last.unwrap(), "OK", "{kind:?}");
    }
}

/// Two dumps of one key interleaved, the key changing (and growing)
/// between their calls, stand at the same offsets: each goes on with the
/// stages and page checksums its own first chunk announced, and each loads
/// with every item added before it began. Before, the key kept one cursor
/// per offset, whichever dump made it: the first dump's later chunks were
/// made with the second's cursors, and did not load ("received bad data",
/// "invalid chunk - Too big for current filter").
#[test]
fn two_dumps_of_a_changing_key_at_the_same_offsets_both_load() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &["--proto-max-bulk-len", "64mb"]);
        let mut c = server.connect();
        // A fixed filter of about 18 MB (two chunks), and a scaling one
        // that grows between the two dumps' first calls.
        ok(
            &mut c,
            &["BF.RESERVE", "fixed", "0.01", "15000000", "NONSCALING"],
        );
        ok(
            &mut c,
            &["BF.RESERVE", "grows", "0.01", "1000", "EXPANSION", "2"],
        );
        // The fixed filter's dumps meet after their first chunk of bits
        // (the page it cut), the scaling one's at their header call (the
        // stages it counted).
        for (key, steps) in [("fixed", 2), ("grows", 1)] {
            let before = items(0..900);
            madd(&mut c, key, &before);
            let walk = |c: &mut redis::Connection| -> Vec<(i64, Vec<u8>)> {
                let mut taken = vec![scandump_step(c, key, 0)];
                while taken.len() < steps {
                    let last = taken.last().unwrap().0;
                    taken.push(scandump_step(c, key, last));
                }
                taken
            };
            // Dump A begins; the key changes (the scaling one grows a
            // stage); dump B takes the same steps and stands where A does.
            let mut a = walk(&mut c);
            madd(&mut c, key, &items(10_000..12_000));
            let b = walk(&mut c);
            let position = |next: i64| next & ((1 << 48) - 1);
            assert_eq!(
                position(b.last().unwrap().0),
                position(a.last().unwrap().0),
                "{kind:?} {key}: the two dumps stand at the same offset"
            );
            // A goes on to its end.
            let last = a.last().unwrap().0;
            a.extend(scan_dump_from(&mut c, key, last, |_, _| {}));
            let copy = format!("{key}-a");
            load_chunks(&mut c, &copy, &a);
            assert!(
                mexists(&mut c, &copy, &before)
                    .iter()
                    .all(|&found| found == 1),
                "{kind:?} {key}: dump A lost items added before it began"
            );
        }
    }
}
