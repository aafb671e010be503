//! RedisBloom filters built by hand, in each encoding a server takes them
//! in: the `BF.SCANDUMP` header (`BF.LOADCHUNK key 1`), the module value of
//! RedisBloom's RDB type, a `DUMP` payload (`RESTORE`) and a whole RDB
//! file; and RedisBloom's own payloads re-encoded for both servers. For
//! chains RedisBloom's checks pass but no command of RedisBloom's made
//! (hostile or at the module's limits), and for what RedisBloom wrote.

#![allow(dead_code)]

use std::path::PathBuf;

/// RedisBloom's chain options (`BLOOM_OPT_*`).
pub const NOROUND: u32 = 1;
pub const ENTS_IS_BITS: u32 = 2;
pub const FORCE64: u32 = 4;
pub const NO_SCALING: u32 = 8;

/// A link as RedisBloom's header and RDB carry it.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub bytes: u64,
    pub bits: u64,
    pub size: u64,
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    pub entries: u64,
    pub n2: u8,
}

impl Link {
    /// A link of one 64-bit word at 1% (RedisBloom's checks pass: its
    /// hashes are `ceil(ln 2 · bpe)`), holding `size` of `entries` items.
    pub fn word(entries: u64, size: u64) -> Link {
        Link {
            bytes: 8,
            bits: 64,
            size,
            error: 0.01,
            bpe: 9.585,
            hashes: 7,
            entries,
            n2: 0,
        }
    }
}

/// A chain: RedisBloom's `SBChain`, its links' bits all zero (or, in an
/// RDB value, all set: see [`rdb_fields`]).
#[derive(Clone, Debug)]
pub struct Chain {
    pub size: u64,
    pub options: u32,
    pub growth: u32,
    pub links: Vec<Link>,
}

impl Chain {
    /// A chain of `links`, its size their sizes' sum (wrapping, as a
    /// hostile header may claim).
    pub fn of(options: u32, growth: u32, links: Vec<Link>) -> Chain {
        let size = links
            .iter()
            .fold(0u64, |sum, link| sum.wrapping_add(link.size));
        Chain {
            size,
            options,
            growth,
            links,
        }
    }
}

/// RedisBloom's `BF.SCANDUMP` header of `chain` (packed, little-endian).
pub fn header(chain: &Chain) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&chain.size.to_le_bytes());
    out.extend_from_slice(&(chain.links.len() as u32).to_le_bytes());
    out.extend_from_slice(&chain.options.to_le_bytes());
    out.extend_from_slice(&chain.growth.to_le_bytes());
    for link in &chain.links {
        out.extend_from_slice(&link.bytes.to_le_bytes());
        out.extend_from_slice(&link.bits.to_le_bytes());
        out.extend_from_slice(&link.size.to_le_bytes());
        out.extend_from_slice(&link.error.to_le_bytes());
        out.extend_from_slice(&link.bpe.to_le_bytes());
        out.extend_from_slice(&link.hashes.to_le_bytes());
        out.extend_from_slice(&link.entries.to_le_bytes());
        out.push(link.n2);
    }
    out
}

/// A length in the RDB's encoding.
pub fn rdb_len(out: &mut Vec<u8>, n: u64) {
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
/// them (encoding 4), each behind its opcode, then the end opcode; every
/// bit set.
pub fn rdb_fields(chain: &Chain) -> Vec<u8> {
    let (uint, double, string, eof) = (2u8, 4u8, 5u8, 0u8);
    let mut out = Vec::new();
    let unsigned = |out: &mut Vec<u8>, n: u64| {
        out.push(uint);
        rdb_len(out, n);
    };
    unsigned(&mut out, chain.size);
    unsigned(&mut out, chain.links.len() as u64);
    unsigned(&mut out, u64::from(chain.options));
    unsigned(&mut out, u64::from(chain.growth));
    for link in &chain.links {
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
    }
    out.push(eof);
    out
}

/// RedisBloom's fixtures (`tests/fixtures/redisbloom`).
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom")
}

/// A `DUMP` payload of `chain` in RedisBloom's type: the type byte and
/// module id of a payload RedisBloom wrote, then the fields, RDB version 9
/// (both servers take it) and the CRC-64 trailer.
pub fn restore_payload(chain: &Chain) -> Vec<u8> {
    let written = std::fs::read(fixtures().join("default.dump")).unwrap();
    let mut payload = written[..10].to_vec();
    payload.extend(rdb_fields(chain));
    sealed(payload)
}

/// `payload` (a `DUMP` payload without its trailer) with RDB version 9 and
/// its CRC-64.
fn sealed(mut payload: Vec<u8>) -> Vec<u8> {
    payload.extend_from_slice(&9u16.to_le_bytes());
    let crc = test_servers::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

/// A `DUMP` payload RedisBloom wrote (in a Valkey server, whose RDB version
/// Redis 7.0 does not take), as RDB version 9: both servers restore it.
pub fn for_both_servers(payload: &[u8]) -> Vec<u8> {
    sealed(payload[..payload.len() - 10].to_vec())
}

/// An RDB file (version 9: both servers load it) holding each `DUMP`
/// payload (version 9, as [`restore_payload`] and [`for_both_servers`]
/// make them) under its key, in database 0, with a zero checksum (not
/// checked).
pub fn rdb_file(values: &[(&str, &[u8])]) -> Vec<u8> {
    let mut file = b"REDIS0009".to_vec();
    file.extend_from_slice(&[0xfe, 0x00]);
    for (key, payload) in values {
        file.push(payload[0]);
        rdb_len(&mut file, key.len() as u64);
        file.extend_from_slice(key.as_bytes());
        file.extend_from_slice(&payload[1..payload.len() - 10]);
    }
    file.push(0xff);
    file.extend_from_slice(&[0; 8]);
    file
}

/// A command as an AOF holds it.
pub fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend(b"\r\n");
    }
    out
}

/// `DUMP key` without its trailer (RDB version and checksum: a server's
/// own), or `None` for a missing key.
pub fn dumped_fields(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    test_servers::dump_payload(c, key).map(|payload| payload[..payload.len() - 10].to_vec())
}

/// Every way `keys` of `server` (started with `--aof-use-rdb-preamble
/// no`) go out and come back holds them, byte for byte: `RESTORE` of
/// their `DUMP`, a replica's full sync, `DEBUG RELOAD`, `SAVE` and a
/// restart, and an AOF rewrite (as `BF.LOADCHUNK` commands, then with an
/// RDB preamble) and a restart. A state the module cannot load again fails
/// here: the server refuses it, dies, or comes back without it.
pub fn assert_reloads_everywhere(server: &mut test_servers::Server, keys: &[&str]) {
    use test_servers::{
        config_set, ok, replica_caught_up, replicate, reply, wait_for_aof_rewrite, Server,
    };
    let kind = server.kind;
    let mut c = server.connect();
    let held: Vec<Vec<u8>> = keys
        .iter()
        .map(|key| dumped_fields(&mut c, key).unwrap_or_else(|| panic!("{kind:?}: no {key}")))
        .collect();
    let same = |c: &mut redis::Connection, way: &str| {
        for (key, held) in keys.iter().zip(&held) {
            assert_eq!(
                dumped_fields(c, key).as_ref(),
                Some(held),
                "{kind:?}: {key} after {way}"
            );
        }
    };
    for key in keys {
        let payload = test_servers::dump_payload(&mut c, key).unwrap();
        let copy = format!("{key}:restored");
        let restored = test_servers::restore(&mut c, &copy, &payload);
        assert_eq!(
            restored.ok().as_deref(),
            Some("OK"),
            "{kind:?}: RESTORE {key}"
        );
        let _: i64 = reply(&mut c, &["DEL", &copy]);
    }
    let mut replica = Server::start(kind, &[], &[]);
    let mut r = replica.connect();
    replicate(&mut r, server);
    assert!(
        replica_caught_up(&mut c, &mut r),
        "{kind:?}: the replica did not sync"
    );
    assert!(replica.is_alive(), "{kind:?}: the replica died in its sync");
    same(&mut r, "a replica's full sync");
    drop(r);
    replica.stop(false);
    ok(&mut c, &["DEBUG", "RELOAD"]);
    same(&mut c, "DEBUG RELOAD");
    ok(&mut c, &["SAVE"]);
    drop(c);
    server.stop(false);
    server.launch().expect("a restart from the RDB file");
    let mut c = server.connect();
    same(&mut c, "a restart from the RDB file");
    for preamble in ["no", "yes"] {
        config_set(&mut c, "aof-use-rdb-preamble", preamble);
        config_set(&mut c, "appendonly", "yes");
        wait_for_aof_rewrite(&mut c);
        let _: redis::Value = reply(&mut c, &["BGREWRITEAOF"]);
        wait_for_aof_rewrite(&mut c);
        drop(c);
        server.stop(false);
        std::fs::remove_file(server.dir.join("dump.rdb")).ok();
        server.set_extra(&["--appendonly", "yes", "--aof-use-rdb-preamble", preamble]);
        server.launch().expect("a restart from the AOF");
        c = server.connect();
        same(
            &mut c,
            &format!("an AOF rewrite (RDB preamble: {preamble})"),
        );
    }
}
