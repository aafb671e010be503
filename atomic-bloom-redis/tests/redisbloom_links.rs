//! RedisBloom filters whose fields pass RedisBloom's own checks but whose
//! next sub-filter cannot be sized (its bit count overflows 64 bits, or
//! its bit exponent reaches 64): they come in as RedisBloom takes them
//! (`BF.LOADCHUNK`, `RESTORE`, an RDB file), an add that needs the next
//! link answers RedisBloom's "problem inserting", never a panic (a panic
//! in a module is the whole server's death), and they go out and come
//! back every way. (Refusing them where they enter kept a panic away, but
//! also refused what RedisBloom itself builds: a first link at 5e-324,
//! whose next link's rate is 0: `tests/redisbloom_edges.rs`.)

mod chains;
mod common;

use chains::{
    assert_reloads_everywhere, header, rdb_file, restore_payload, Chain, Link, ENTS_IS_BITS,
};
use common::{config_set, error_text, load_chunk, load_chunks, restore, Server, KINDS};

/// The chain: a full link of 2^60 items, growth 1: the next link's
/// bits pass 2^63 and its bit exponent comes out 64.
fn overflowing_entries() -> Chain {
    Chain::of(0, 1, vec![Link::word(1 << 60, 1 << 60)])
}

/// With `ENTS_IS_BITS` a link's size is a bit exponent: a full link of 32
/// items at growth 2 asks for 2^64 bits.
fn overflowing_exponent() -> Chain {
    Chain::of(ENTS_IS_BITS, 2, vec![Link::word(32, 32)])
}

/// The chains whose next link overflows, by what overflows.
fn overflowing() -> [(&'static str, Chain); 2] {
    [
        ("entries", overflowing_entries()),
        ("exponent", overflowing_exponent()),
    ]
}

/// The server answers `PING` and is still running.
fn alive(server: &mut Server) -> bool {
    server.is_alive()
        && redis::cmd("PING")
            .query::<String>(&mut server.connect())
            .is_ok_and(|pong| pong == "PONG")
}

/// An item for `key` answers as RedisBloom's would: with its bits all zero
/// (a header's), "problem inserting" (the next link cannot be sized); with
/// them all set (the payloads' and files'), 0 (present); lookups answer
/// alike; the server lives.
fn use_key(server: &mut Server, key: &str, bits_set: bool) {
    let mut c = server.connect();
    let added = redis::cmd("BF.ADD")
        .arg(key)
        .arg("x")
        .query::<i64>(&mut c)
        .map_err(|error| error_text(&error));
    let expected = if bits_set {
        Ok(0)
    } else {
        Err("ERR problem inserting into filter".to_string())
    };
    assert_eq!(added, expected, "{:?}: {key}", server.kind);
    let found: Vec<bool> = redis::cmd("BF.MEXISTS")
        .arg(key)
        .arg(&["x", "y"])
        .query(&mut c)
        .unwrap();
    assert_eq!(found, [bits_set, bits_set], "{:?}: {key}", server.kind);
    assert!(alive(server), "{:?}: the server died on {key}", server.kind);
}

#[test]
fn a_header_whose_next_link_overflows_loads_and_its_adds_never_crash() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &["--aof-use-rdb-preamble", "no"]);
        for (name, chain) in overflowing() {
            let loaded = load_chunk(&mut server.connect(), name, 1, &header(&chain));
            assert_eq!(loaded.ok().as_deref(), Some("OK"), "{kind:?} {name}");
            use_key(&mut server, name, false);
        }
        assert_reloads_everywhere(&mut server, &["entries", "exponent"]);
    }
}

#[test]
fn a_restore_payload_whose_next_link_overflows_loads() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        for (name, chain) in overflowing() {
            let restored = restore(&mut server.connect(), name, &restore_payload(&chain));
            assert_eq!(restored.ok().as_deref(), Some("OK"), "{kind:?} {name}");
            use_key(&mut server, name, true);
        }
    }
}

#[test]
fn an_rdb_file_whose_next_link_overflows_loads() {
    for kind in KINDS {
        let payloads: Vec<(&str, Vec<u8>)> = overflowing()
            .into_iter()
            .map(|(name, chain)| (name, restore_payload(&chain)))
            .collect();
        let values: Vec<(&str, &[u8])> = payloads
            .iter()
            .map(|(name, payload)| (*name, payload.as_slice()))
            .collect();
        let mut server = Server::unlaunched(kind, &[], &[]);
        std::fs::write(server.dir.join("dump.rdb"), rdb_file(&values)).unwrap();
        server.launch().expect("the server loads the file");
        for (name, _) in overflowing() {
            let card: i64 = redis::cmd("BF.CARD")
                .arg(name)
                .query(&mut server.connect())
                .unwrap();
            assert_eq!(
                card,
                if name == "entries" { 1 << 60 } else { 32 },
                "{kind:?}"
            );
            use_key(&mut server, name, true);
        }
    }
}

/// A full link of 2^20 items growing 32,768-fold: the next link would
/// take about 47 GB.
fn huge_next_link() -> Chain {
    Chain::of(0, 32768, vec![Link::word(1 << 20, 1 << 20)])
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
