//! Hostile `BF.LOADCHUNK` input, thousands of chunks against each server:
//! flipped bits, truncated chunks, garbage, absurd iterators, and a header
//! that claims a terabyte. The server never crashes, a flipped bit never
//! loads, and nothing allocates more than the chunks hold.

mod common;

use common::{crc32c, error_text, reply, scan_dump, used_memory, Server, KINDS};
use redis::Value;

/// xorshift64*: a fixed-seed stream of test choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The replies a chunk may get: OK or one of RedisBloom's four errors
/// ("not found": a missing key takes only a first chunk).
const CHUNK_ERRORS: [&str; 4] = [
    "ERR not found",
    "ERR received bad data",
    "ERR invalid offset - no link found",
    "ERR invalid chunk - Too big for current filter",
];

fn load_chunk(c: &mut redis::Connection, key: &str, iter: i64, data: &[u8]) -> Result<(), String> {
    match common::load_chunk(c, key, iter, data) {
        Ok(ok) => {
            assert_eq!(ok, "OK");
            Ok(())
        }
        Err(error) => {
            let text = error_text(&error);
            assert!(
                CHUNK_ERRORS.contains(&text.as_str()),
                "unexpected reply: {text}"
            );
            Err(text)
        }
    }
}

/// Whether `key` holds a loaded filter (not missing, not still loading).
fn is_loaded(c: &mut redis::Connection, key: &str) -> bool {
    redis::cmd("BF.INFO").arg(key).query::<Value>(c).is_ok()
}

fn filled_source(c: &mut redis::Connection, key: &str, nonscaling: bool) -> Vec<(i64, Vec<u8>)> {
    let mut reserve = redis::cmd("BF.RESERVE");
    reserve.arg(key).arg("0.01").arg("2000");
    if nonscaling {
        reserve.arg("NONSCALING");
    }
    let _: String = reserve.query(c).unwrap();
    let items: Vec<String> = (0..1500).map(|i| format!("item{i}")).collect();
    let _: Vec<i64> = redis::cmd("BF.MADD").arg(key).arg(&items).query(c).unwrap();
    scan_dump(c, key)
}

#[test]
fn flipped_bits_never_load() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        let mut rng = Rng(0x5eed + kind as u64);
        for nonscaling in [false, true] {
            let chunks = filled_source(&mut c, &format!("source-{nonscaling}"), nonscaling);
            let bits: usize = chunks.iter().map(|(_, data)| data.len() * 8).sum();
            for trial in 0..1000 {
                // Every bit of a small dump once in a while, random ones else.
                let bit = if bits <= 1000 {
                    trial % bits
                } else {
                    rng.below(bits)
                };
                let mut corrupt = chunks.clone();
                let (mut chunk, mut at) = (0, bit / 8);
                while at >= corrupt[chunk].1.len() {
                    at -= corrupt[chunk].1.len();
                    chunk += 1;
                }
                corrupt[chunk].1[at] ^= 1 << (bit % 8);
                let key = "target";
                let _: i64 = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
                let refused = corrupt
                    .iter()
                    .map(|(iter, data)| load_chunk(&mut c, key, *iter, data))
                    .filter(Result::is_err)
                    .count();
                assert!(
                    !is_loaded(&mut c, key),
                    "{kind:?}: bit {bit} flipped and the dump loaded ({refused} chunks refused)"
                );
            }
        }
        let pong: String = reply(&mut c, &["PING"]);
        assert_eq!(pong, "PONG");
        assert!(server.is_alive());
    }
}

#[test]
fn truncated_garbage_and_absurd_chunks_are_refused_cleanly() {
    for kind in KINDS {
        let mut server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        let mut rng = Rng(0xbad + kind as u64);
        let chunks = filled_source(&mut c, "source", false);
        let (first_iter, first) = chunks[0].clone();
        let absurd = [
            i64::MIN,
            -1,
            0,
            1,
            2,
            1 << 40,
            i64::MAX,
            first_iter,
            first_iter + 1,
        ];
        for trial in 0..3000 {
            let key = ["missing", "source", "loading"][trial % 3];
            if key == "missing" {
                let _: i64 = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
            }
            if key == "loading" && !is_loaded(&mut c, key) {
                // A key in the middle of a load: its first chunk only,
                // where the filter's bytes are cut in two.
                let _: i64 = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
                let cut = first.len() / 2;
                let _ = load_chunk(&mut c, key, 1 + cut as i64, &first[..cut]);
            }
            let (iter, data) = match trial % 4 {
                // A real chunk cut short, with its own iterator.
                0 => (first_iter, first[..rng.below(first.len())].to_vec()),
                // Garbage of any length up to 4 KiB.
                1 => {
                    let length = rng.below(4096);
                    (
                        absurd[rng.below(absurd.len())],
                        (0..length).map(|_| rng.next() as u8).collect(),
                    )
                }
                // A real chunk at an absurd iterator.
                2 => (absurd[rng.below(absurd.len())], first.clone()),
                // The envelope alone, then garbage where the filter goes.
                _ => {
                    let mut data = first[..56.min(first.len())].to_vec();
                    data.extend((0..rng.below(2000)).map(|_| rng.next() as u8));
                    (1 + data.len() as i64, data)
                }
            };
            let _ = load_chunk(&mut c, key, iter, &data);
        }
        // The source filter was never touched by chunks aimed at it.
        assert!(is_loaded(&mut c, "source"));
        let found: Vec<i64> = reply(&mut c, &["BF.MEXISTS", "source", "item0", "item1499"]);
        assert_eq!(found, [1, 1]);
        let pong: String = reply(&mut c, &["PING"]);
        assert_eq!(pong, "PONG");
        assert!(server.is_alive(), "{kind:?}: {}", server.log());
    }
}

/// A first chunk whose (resealed) envelope claims a terabyte of filter:
/// the key holds what was sent, not what was claimed.
#[test]
fn a_header_claiming_a_terabyte_allocates_what_it_holds() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        let chunks = filled_source(&mut c, "source", false);
        let mut first = chunks[0].1.clone();
        first[44..52].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let crc = crc32c(&first[..52]);
        first[52..56].copy_from_slice(&crc.to_le_bytes());
        let used_before = used_memory(&mut c);
        load_chunk(&mut c, "claimed", 1 + first.len() as i64, &first).unwrap();
        let usage: i64 = reply(&mut c, &["MEMORY", "USAGE", "claimed"]);
        assert!(
            usage < 64 * 1024,
            "{kind:?}: {usage} bytes for a {}-byte chunk",
            first.len()
        );
        assert!(used_memory(&mut c) < used_before + (16 << 20));
        // It is not a filter until every byte came.
        assert!(!is_loaded(&mut c, "claimed"));
        let text = common::refusal(&mut c, &["BF.ADD", "claimed", "x"]);
        assert!(text.contains("being restored"), "{text}");
    }
}

/// A record that claims 2^64 - 1 items (its checksums right: anyone can
/// write one) takes adds without its count wrapping: `BF.CARD` stays at the
/// top, and the key reloads. (The count wrapped; under the tests' overflow
/// checks the add panicked and killed the server.)
#[test]
fn a_record_claiming_two_to_the_64_items_takes_adds_without_wrapping() {
    for kind in KINDS {
        let server = Server::start(kind, &[], &[]);
        let mut c = server.connect();
        let mut chunks = filled_source(&mut c, "source", false);
        let first = &mut chunks[0].1;
        first[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        let crc = crc32c(&first[..52]);
        first[52..56].copy_from_slice(&crc.to_le_bytes());
        common::load_chunks(&mut c, "top", &chunks);
        let added: bool = reply(&mut c, &["BF.ADD", "top", "never added before"]);
        assert!(added, "{kind:?}");
        let card: i64 = reply(&mut c, &["BF.CARD", "top"]);
        assert_eq!(card, i64::MAX, "{kind:?}");
        common::ok(&mut c, &["DEBUG", "RELOAD"]);
        let card: i64 = reply(&mut c, &["BF.CARD", "top"]);
        assert_eq!(card, i64::MAX, "{kind:?}: after a reload");
    }
}
