//! RedisBloom filters whose fields pass RedisBloom's own checks but whose
//! next sub-filter cannot be sized (its bit count overflows 64 bits, or
//! comes out 0): refused where they enter (`BF.LOADCHUNK`, `RESTORE`, an
//! RDB file), never a panic at the next `BF.ADD` (a panic in a module is
//! the whole server's death).

mod common;

use std::path::PathBuf;

use common::{config_set, error_text, load_chunk, load_chunks, restore, Server, KINDS};

/// RedisBloom's chain options (`BLOOM_OPT_*`).
const ENTS_IS_BITS: u32 = 2;

/// A link as RedisBloom's header and RDB carry it.
#[derive(Clone, Copy)]
struct Link {
    bytes: u64,
    bits: u64,
    size: u64,
    error: f64,
    bpe: f64,
    hashes: u32,
    entries: u64,
    n2: u8,
}

/// A one-link chain, full, whose next link cannot be sized.
struct Chain {
    size: u64,
    options: u32,
    growth: u32,
    link: Link,
}

/// The chain: a full link of 2^60 items, growth 1: the next link's
/// bits pass 2^63 and its bit exponent comes out 64.
fn overflowing_entries() -> Chain {
    Chain {
        size: 1 << 60,
        options: 0,
        growth: 1,
        link: Link {
            bytes: 8,
            bits: 64,
            size: 1 << 60,
            error: 0.01,
            bpe: 9.585,
            hashes: 7,
            entries: 1 << 60,
            n2: 0,
        },
    }
}

/// With `ENTS_IS_BITS` a link's size is a bit exponent: a full link of 32
/// items at growth 2 asks for 2^64 bits.
fn overflowing_exponent() -> Chain {
    Chain {
        size: 32,
        options: ENTS_IS_BITS,
        growth: 2,
        link: Link {
            bytes: 8,
            bits: 64,
            size: 32,
            error: 0.01,
            bpe: 9.585,
            hashes: 7,
            entries: 32,
            n2: 0,
        },
    }
}

/// RedisBloom's `BF.SCANDUMP` header of `chain`.
fn header(chain: &Chain) -> Vec<u8> {
    let link = chain.link;
    let mut out = Vec::new();
    out.extend_from_slice(&chain.size.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&chain.options.to_le_bytes());
    out.extend_from_slice(&chain.growth.to_le_bytes());
    out.extend_from_slice(&link.bytes.to_le_bytes());
    out.extend_from_slice(&link.bits.to_le_bytes());
    out.extend_from_slice(&link.size.to_le_bytes());
    out.extend_from_slice(&link.error.to_le_bytes());
    out.extend_from_slice(&link.bpe.to_le_bytes());
    out.extend_from_slice(&link.hashes.to_le_bytes());
    out.extend_from_slice(&link.entries.to_le_bytes());
    out.push(link.n2);
    out
}

/// A length in the RDB's encoding.
fn rdb_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// The module-value fields of `chain` as RedisBloom's `rdb_save` writes
/// them (encoding 4), each behind its opcode, then the end opcode.
fn rdb_fields(chain: &Chain) -> Vec<u8> {
    let (uint, double, string, eof) = (2u8, 4u8, 5u8, 0u8);
    let mut out = Vec::new();
    let unsigned = |out: &mut Vec<u8>, n: u64| {
        out.push(uint);
        rdb_len(out, n);
    };
    let link = chain.link;
    unsigned(&mut out, chain.size);
    unsigned(&mut out, 1);
    unsigned(&mut out, u64::from(chain.options));
    unsigned(&mut out, u64::from(chain.growth));
    unsigned(&mut out, link.entries);
    out.push(double);
    out.extend_from_slice(&link.error.to_le_bytes());
    unsigned(&mut out, u64::from(link.hashes));
    out.push(double);
    out.extend_from_slice(&link.bpe.to_le_bytes());
    unsigned(&mut out, link.bits);
    unsigned(&mut out, u64::from(link.n2));
    out.push(string);
    rdb_len(&mut out, link.bytes);
    out.resize(out.len() + link.bytes as usize, 0xff);
    unsigned(&mut out, link.size);
    out.push(eof);
    out
}

/// A `DUMP` payload of `chain` in RedisBloom's type: the type byte and
/// module id of a payload RedisBloom wrote, then the fields, RDB version 9
/// (both servers take it) and the CRC-64 trailer.
fn restore_payload(chain: &Chain) -> Vec<u8> {
    let written = std::fs::read(fixtures().join("default.dump")).unwrap();
    let mut payload = written[..10].to_vec();
    payload.extend(rdb_fields(chain));
    payload.extend_from_slice(&9u16.to_le_bytes());
    let crc = common::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

/// An RDB file holding `chain` under `key`: version 9 (both servers load
/// it), database 0, the value, and a zero checksum (not checked).
fn rdb_file(chain: &Chain, key: &str) -> Vec<u8> {
    let payload = restore_payload(chain);
    let mut file = b"REDIS0009".to_vec();
    file.extend_from_slice(&[0xfe, 0x00]);
    file.push(payload[0]);
    rdb_len(&mut file, key.len() as u64);
    file.extend_from_slice(key.as_bytes());
    file.extend_from_slice(&payload[1..payload.len() - 10]);
    file.push(0xff);
    file.extend_from_slice(&[0; 8]);
    file
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom")
}

/// The chains whose next link overflows, by what overflows.
fn overflowing() -> [(&'static str, Chain); 2] {
    [
        ("entries", overflowing_entries()),
        ("exponent", overflowing_exponent()),
    ]
}

/// `overflowing_entries` with a next link that fits: three items of
/// four.
fn fitting() -> Chain {
    let mut fits = overflowing_entries();
    fits.size = 3;
    fits.link.size = 3;
    fits.link.entries = 4;
    fits
}

/// The server answers `PING` and is still running.
fn alive(server: &mut Server) -> bool {
    server.is_alive()
        && redis::cmd("PING")
            .query::<String>(&mut server.connect())
            .is_ok_and(|pong| pong == "PONG")
}

/// Adds to `key` and probes it: a reply of any kind, and the server lives.
fn use_key(server: &mut Server, key: &str) {
    let mut c = server.connect();
    let _ = redis::cmd("BF.ADD")
        .arg(key)
        .arg("x")
        .query::<redis::Value>(&mut c);
    let _ = redis::cmd("BF.MADD")
        .arg(key)
        .arg(&["y", "z"])
        .query::<redis::Value>(&mut c);
    let _ = redis::cmd("BF.EXISTS")
        .arg(key)
        .arg("x")
        .query::<redis::Value>(&mut c);
    assert!(alive(server), "{:?}: the server died on {key}", server.kind);
}

#[test]
fn a_header_whose_next_link_overflows_is_refused_and_adds_never_crash() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        for (name, chain) in overflowing() {
            let refused = load_chunk(&mut server.connect(), name, 1, &header(&chain))
                .map_err(|error| error_text(&error));
            assert_eq!(
                refused,
                Err("ERR received bad data".to_string()),
                "{kind:?} {name}"
            );
            use_key(&mut server, name);
        }
    }
}

#[test]
fn a_restore_payload_whose_next_link_overflows_is_refused() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        for (name, chain) in overflowing() {
            let restored = restore(&mut server.connect(), name, &restore_payload(&chain));
            assert!(restored.is_err(), "{kind:?} {name}: RESTORE took it");
            use_key(&mut server, name);
        }
        // The payload builder makes what the server takes: the same chain
        // with a next link that fits loads and answers.
        let fits = fitting();
        let restored = restore(&mut server.connect(), "fits", &restore_payload(&fits));
        assert_eq!(restored.unwrap(), "OK", "{kind:?}");
        use_key(&mut server, "fits");
    }
}

#[test]
fn an_rdb_file_whose_next_link_overflows_is_refused_at_load() {
    for kind in KINDS {
        for (name, chain) in overflowing() {
            let mut server = Server::unlaunched(kind, &[], &[]);
            std::fs::write(server.dir.join("dump.rdb"), rdb_file(&chain, name)).unwrap();
            match server.launch() {
                // Refused as a corrupt file: the server stops at load, with
                // the module's reason in its log, and never answers.
                Err(why) => assert!(
                    why.contains("RDB load refused") && why.contains("exited at start"),
                    "{kind:?} {name}: {why}"
                ),
                Ok(()) => panic!("{kind:?} {name}: the server loaded the file"),
            }
        }
        // The file builder makes what the server loads.
        let fits = fitting();
        let mut server = Server::unlaunched(kind, &[], &[]);
        std::fs::write(server.dir.join("dump.rdb"), rdb_file(&fits, "fits")).unwrap();
        server.launch().unwrap();
        let card: i64 = redis::cmd("BF.CARD")
            .arg("fits")
            .query(&mut server.connect())
            .unwrap();
        assert_eq!(card, 3, "{kind:?}");
        use_key(&mut server, "fits");
    }
}

/// A full link of 2^20 items growing 32,768-fold: the next link would
/// take about 47 GB.
fn huge_next_link() -> Chain {
    Chain {
        size: 1 << 20,
        options: 0,
        growth: 32768,
        link: Link {
            bytes: 8,
            bits: 64,
            size: 1 << 20,
            error: 0.01,
            bpe: 9.585,
            hashes: 7,
            entries: 1 << 20,
            n2: 0,
        },
    }
}

/// Under `bf-memory-limit-per-filter`, a RedisBloom filter whose next link
/// would pass the limit answers the limit's error, and the link is never
/// allocated: under a 3 GiB address space a 47 GB link cannot be, and the
/// add answered "problem inserting" (it was allocated, then measured, at
/// every add; the fuzz target redisbloom_header found it as a 36-second
/// input).
#[test]
fn a_next_link_past_the_memory_limit_is_refused_before_it_is_allocated() {
    for kind in KINDS {
        let server = Server::start_with_address_space(kind, 3 << 30);
        let mut c = server.connect();
        load_chunks(&mut c, "huge", &[(1, header(&huge_next_link()))]);
        config_set(&mut c, "bf.bf-memory-limit-per-filter", "65536");
        for item in ["a", "b", "c"] {
            let refused = redis::cmd("BF.ADD")
                .arg(&["huge", item])
                .query::<i64>(&mut c)
                .map_err(|error| error_text(&error));
            let text = refused.expect_err("an add past the limit");
            assert!(
                text.contains("bf-memory-limit-per-filter"),
                "{kind:?}: {text}"
            );
        }
    }
}
