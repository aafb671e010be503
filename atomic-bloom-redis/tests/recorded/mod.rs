//! What RedisBloom recorded in `tests/fixtures/` (`redisbloom.rs`' RDB and
//! streams, `redisbloom_aof.rs`' AOF), and how both ask a server the same
//! questions: which probes a filter calls present, and `BF.INFO` as the
//! fixtures hold it.

#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value as Json;

/// The probes every fixture was asked about: `probe:0` to `probe:19999`.
pub const PROBES: usize = 20_000;

/// The fixtures' folder `tests/fixtures/{name}`.
pub fn fixtures(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The answers RedisBloom gave, as `answers.json` in `folder` holds them.
pub fn recorded(folder: &str) -> Json {
    let text = std::fs::read_to_string(fixtures(folder).join("answers.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Which probes the filter calls present, as indices, asked `batch` a
/// `BF.MEXISTS`.
pub fn positives(c: &mut redis::Connection, key: &str, batch: usize) -> Vec<u64> {
    let probes: Vec<String> = (0..PROBES).map(|i| format!("probe:{i}")).collect();
    let answers: Vec<bool> = crate::common::batched(c, "BF.MEXISTS", key, &probes, batch);
    (answers.into_iter().enumerate())
        .filter(|(_, present)| *present)
        .map(|(index, _)| index as u64)
        .collect()
}

/// The present probes a record holds (its `answers`).
pub fn expected_positives(record: &Json) -> Vec<u64> {
    record["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|index| index.as_u64().unwrap())
        .collect()
}

/// `BF.INFO` as a list of strings, numbers and nulls, as the fixtures hold
/// it.
pub fn info(c: &mut redis::Connection, key: &str) -> Json {
    let reply: Vec<redis::Value> = crate::common::reply(c, &["BF.INFO", key]);
    Json::Array(
        reply
            .into_iter()
            .map(|value| match value {
                redis::Value::SimpleString(text) => Json::from(text),
                redis::Value::BulkString(bytes) => Json::from(String::from_utf8(bytes).unwrap()),
                redis::Value::Int(number) => Json::from(number),
                _ => Json::Null,
            })
            .collect(),
    )
}
