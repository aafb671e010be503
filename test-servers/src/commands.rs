//! What the tests send that is not the point of any one of them: a
//! command whose reply is taken as it comes, `BF.SCANDUMP` walked to its
//! end and `BF.LOADCHUNK` fed back, lookups and adds in batches, `CONFIG
//! SET`, `REPLICAOF`, a server's `used_memory`, and its AOF (waiting for a
//! rewrite, reading it, copying it to another server's directory).

use std::path::Path;
use std::time::{Duration, Instant};

use redis::{Connection, FromRedisValue};

use crate::Server;

/// A dump as `BF.SCANDUMP` hands it out: each chunk's bytes with the
/// iterator that `BF.LOADCHUNK` takes it back at.
pub type Chunks = Vec<(i64, Vec<u8>)>;

/// The reply to a command expected to succeed (`refusal`'s other half);
/// panics, naming the command, on an error.
pub fn reply<T: FromRedisValue>(connection: &mut Connection, command: &[&str]) -> T {
    redis::cmd(command[0])
        .arg(&command[1..])
        .query(connection)
        .unwrap_or_else(|error| panic!("{command:?}: {error}"))
}

/// A command that must answer `OK`.
pub fn ok(connection: &mut Connection, command: &[&str]) {
    let answer: String = reply(connection, command);
    assert_eq!(answer, "OK", "{command:?}");
}

/// Whether `key` exists (`EXISTS`).
pub fn exists(connection: &mut Connection, key: &str) -> bool {
    let count: i64 = reply(connection, &["EXISTS", key]);
    count == 1
}

/// `CONFIG SET name value`.
pub fn config_set(connection: &mut Connection, name: &str, value: &str) {
    let _: () = reply(connection, &["CONFIG", "SET", name, value]);
}

/// `REPLICAOF` the server `primary`, sent to the server behind `replica`.
pub fn replicate(replica: &mut Connection, primary: &Server) {
    ok(
        replica,
        &["REPLICAOF", "127.0.0.1", &primary.port.to_string()],
    );
}

/// `command key item...` (`BF.MADD`, `WBF.MEXISTS`, ...) over `items`,
/// `batch` items a call; the replies in order.
pub fn batched<T: FromRedisValue>(
    connection: &mut Connection,
    command: &str,
    key: &str,
    items: &[String],
    batch: usize,
) -> Vec<T> {
    let mut replies = Vec::with_capacity(items.len());
    for part in items.chunks(batch) {
        let answers: Vec<T> = redis::cmd(command)
            .arg(key)
            .arg(part)
            .query(connection)
            .unwrap_or_else(|error| panic!("{command} {key}: {error}"));
        replies.extend(answers);
    }
    replies
}

/// One `BF.SCANDUMP key iterator`: the next iterator and the chunk.
pub fn scandump_step(connection: &mut Connection, key: &str, iterator: i64) -> (i64, Vec<u8>) {
    redis::cmd("BF.SCANDUMP")
        .arg(key)
        .arg(iterator)
        .query(connection)
        .unwrap_or_else(|error| panic!("BF.SCANDUMP {key} {iterator}: {error}"))
}

/// RedisBloom's client loop from `iterator` on: `BF.SCANDUMP` until it
/// answers `[0, ""]` (10,000 calls at most), calling `between` after each
/// chunk with the iterator it was asked at (a test that changes the key
/// while it is dumped does it there); every chunk.
pub fn scan_dump_from(
    connection: &mut Connection,
    key: &str,
    mut iterator: i64,
    mut between: impl FnMut(&mut Connection, i64),
) -> Chunks {
    let mut chunks = Vec::new();
    for _ in 0..10_000 {
        let (next, chunk) = scandump_step(connection, key, iterator);
        if next == 0 {
            assert!(chunk.is_empty(), "BF.SCANDUMP {key}: bytes past the end");
            return chunks;
        }
        between(connection, iterator);
        chunks.push((next, chunk));
        iterator = next;
    }
    panic!("BF.SCANDUMP {key} never ended");
}

/// Every chunk of a whole dump of `key`.
pub fn scan_dump(connection: &mut Connection, key: &str) -> Chunks {
    scan_dump_from(connection, key, 0, |_, _| {})
}

/// One `BF.LOADCHUNK key iterator data`, as the server answers it.
pub fn load_chunk(
    connection: &mut Connection,
    key: &str,
    iterator: i64,
    data: &[u8],
) -> redis::RedisResult<String> {
    redis::cmd("BF.LOADCHUNK")
        .arg(key)
        .arg(iterator)
        .arg(data)
        .query(connection)
}

/// Loads `chunks` into `key`, each answered `OK`.
pub fn load_chunks(connection: &mut Connection, key: &str, chunks: &[(i64, Vec<u8>)]) {
    for (iterator, data) in chunks {
        let answer = load_chunk(connection, key, *iterator, data)
            .unwrap_or_else(|error| panic!("BF.LOADCHUNK {key} {iterator}: {error}"));
        assert_eq!(answer, "OK", "BF.LOADCHUNK {key} {iterator}");
    }
}

/// `RESTORE key 0 payload`, as the server answers it.
pub fn restore(
    connection: &mut Connection,
    key: &str,
    payload: &[u8],
) -> redis::RedisResult<String> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(connection)
}

/// `used_memory` of `INFO memory`: what the server has allocated.
pub fn used_memory(connection: &mut Connection) -> i64 {
    let info: String = reply(connection, &["INFO", "memory"]);
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|value| value.trim().parse().ok())
        .expect("used_memory in INFO memory")
}

/// Waits (up to 60 s) until no AOF rewrite is running or scheduled.
pub fn wait_for_aof_rewrite(connection: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info: String = reply(connection, &["INFO", "persistence"]);
        if !info.contains("aof_rewrite_in_progress:1") && !info.contains("aof_rewrite_scheduled:1")
        {
            return;
        }
        assert!(Instant::now() < deadline, "the AOF rewrite never finished");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The text of a server directory's AOF: its `.aof` file, or the files of
/// its `appendonlydir` (Redis 7, Valkey).
pub fn aof_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let files = if path.is_dir() && path.file_name().is_some_and(|name| name == "appendonlydir")
        {
            let entries = std::fs::read_dir(&path).unwrap().flatten();
            entries.map(|entry| entry.path()).collect()
        } else if path.extension().is_some_and(|ext| ext == "aof") {
            vec![path]
        } else {
            Vec::new()
        };
        for file in files {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(file).unwrap()));
        }
    }
    text
}

/// Copies every file of the directory `from` into `to` (made if missing):
/// an AOF's `appendonlydir` into another server's directory.
pub fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in std::fs::read_dir(from).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), to.join(file.file_name())).unwrap();
    }
}
