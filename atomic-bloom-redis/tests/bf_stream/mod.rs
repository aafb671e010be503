//! A seeded generator of `BF.*` command streams, for the differential test
//! against RedisBloom (`tests/differential.rs`) and the equivalence of a
//! primary, its replica, a reload and an AOF replay
//! (`tests/equivalence.rs`): reserves with random capacity, rate,
//! `EXPANSION` and `NONSCALING`; adds, multi-adds and inserts with
//! duplicates, `NOCREATE` and full filters; lookups; `BF.INFO` in every
//! form; `BF.CARD`; dumps copied into new keys; a key of another type; bad
//! arguments, bad numbers and wrong arity.
//!
//! Key names never spell an option (`expansion`, `nonscaling`, ...):
//! RedisBloom looks for options from the command name on, so such a key is
//! read as the option there, a difference this module keeps by design (it
//! looks only after the capacity).

#![allow(dead_code)]

/// splitmix64: small, seedable, the same everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.below(choices.len())]
    }
}

/// Keys the filters live under; `COPIES` receive dumps; `STRING` holds a
/// plain string (`WRONGTYPE`); `MISSING` never exists (only reads and
/// `BF.LOADCHUNK` name it).
pub const KEYS: [&str; 6] = ["k0", "k1", "k2", "k3", "k4", "k5"];
pub const COPIES: [&str; 2] = ["copy0", "copy1"];
/// Keys that receive a RedisBloom filter (`Step::Adopt`).
pub const ADOPTED: [&str; 2] = ["rb0", "rb1"];
pub const STRING: &str = "plain";
pub const MISSING: &str = "missing";

/// One step of a stream.
#[derive(Clone, Debug)]
pub enum Step {
    /// A command, sent as is.
    Command(Vec<String>),
    /// `BF.SCANDUMP from` chunk by chunk into `BF.LOADCHUNK to` (after
    /// `DEL to`), on each server from its own filter.
    Copy { from: String, to: String },
    /// The same, from the RedisBloom server's filter into `to` on every
    /// server (the differential test; elsewhere the same as `Copy`).
    Adopt { from: String, to: String },
}

pub struct Generator {
    rng: Rng,
    fresh: u64,
}

const RATES: [&str; 12] = [
    "0.01", "0.001", "0.0001", "0.00001", "0.001", "0.0001", "0.05", "0", "1", "-0.5", "abc",
    "+0.01",
];
const CAPACITIES: [&str; 14] = [
    "100",
    "1000",
    "50",
    "10",
    "3",
    "1",
    "500",
    "0",
    "-5",
    "+10",
    "010",
    "1e3",
    "abc",
    "99999999999999999999",
];
const EXPANSIONS: [&str; 9] = ["1", "2", "4", "3", "0", "-1", "abc", "32768", "32769"];
const INFO_FIELDS: [&str; 7] = [
    "CAPACITY",
    "SIZE",
    "FILTERS",
    "ITEMS",
    "EXPANSION",
    "capacity",
    "bogus",
];

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator {
            rng: Rng(seed),
            fresh: 0,
        }
    }

    /// Fresh items made so far: `fresh:1` to `fresh:{n}`.
    pub fn fresh(&self) -> u64 {
        self.fresh
    }

    fn key(&mut self) -> String {
        match self.rng.below(100) {
            0..=84 => KEYS[self.rng.below(KEYS.len())].to_string(),
            85..=89 => ADOPTED[self.rng.below(ADOPTED.len())].to_string(),
            90..=94 => COPIES[self.rng.below(COPIES.len())].to_string(),
            _ => STRING.to_string(),
        }
    }

    fn item(&mut self) -> String {
        if self.rng.chance(20) {
            self.fresh += 1;
            format!("fresh:{}", self.fresh)
        } else {
            format!("item:{}", self.rng.below(400))
        }
    }

    fn items(&mut self, most: usize) -> Vec<String> {
        let count = 1 + self.rng.below(most);
        (0..count).map(|_| self.item()).collect()
    }

    pub fn next_step(&mut self) -> Step {
        let key = self.key();
        let roll = self.rng.below(100);
        let mut command: Vec<String> = Vec::new();
        let mut push = |parts: &[&str]| command.extend(parts.iter().map(|s| s.to_string()));
        match roll {
            0..=7 => {
                push(&["BF.RESERVE", &key]);
                let rate = self.rng.pick(&RATES);
                let capacity = self.rng.pick(&CAPACITIES);
                push(&[rate, capacity]);
                if self.rng.chance(30) {
                    let expansion = self.rng.pick(&EXPANSIONS);
                    push(&["EXPANSION", expansion]);
                }
                if self.rng.chance(25) {
                    push(&["NONSCALING"]);
                }
                if self.rng.chance(3) {
                    push(&["EXTRA"]);
                }
            }
            8..=37 => {
                let item = self.item();
                push(&["BF.ADD", &key, &item]);
            }
            38..=52 => {
                push(&["BF.MADD", &key]);
                let items = self.items(12);
                command.extend(items);
            }
            53..=62 => {
                push(&["BF.INSERT", &key]);
                if self.rng.chance(30) {
                    let capacity = self.rng.pick(&CAPACITIES);
                    push(&["CAPACITY", capacity]);
                }
                if self.rng.chance(30) {
                    let rate = self.rng.pick(&RATES);
                    push(&["ERROR", rate]);
                }
                if self.rng.chance(15) {
                    let expansion = self.rng.pick(&EXPANSIONS);
                    push(&["EXPANSION", expansion]);
                }
                if self.rng.chance(20) {
                    push(&["NOCREATE"]);
                }
                if self.rng.chance(15) {
                    push(&["NONSCALING"]);
                }
                if !self.rng.chance(4) {
                    push(&["ITEMS"]);
                    let items = self.items(8);
                    command.extend(items);
                }
            }
            63..=74 => {
                let item = self.item();
                push(&["BF.EXISTS", &key, &item]);
            }
            75..=82 => {
                push(&["BF.MEXISTS", &key]);
                let items = self.items(12);
                command.extend(items);
            }
            83..=88 => {
                push(&["BF.INFO", &key]);
                if self.rng.chance(70) {
                    let field = self.rng.pick(&INFO_FIELDS);
                    push(&[field]);
                }
            }
            89..=91 => push(&["BF.CARD", &key]),
            92 => {
                let to = COPIES[self.rng.below(COPIES.len())].to_string();
                let from = KEYS[self.rng.below(KEYS.len())].to_string();
                return Step::Copy { from, to };
            }
            93 => {
                let to = ADOPTED[self.rng.below(ADOPTED.len())].to_string();
                let from = KEYS[self.rng.below(KEYS.len())].to_string();
                return Step::Adopt { from, to };
            }
            94 => push(&["DEL", &key]),
            95..=96 => {
                // Wrong arity.
                let name = self.rng.pick(&[
                    "BF.ADD",
                    "BF.MADD",
                    "BF.EXISTS",
                    "BF.MEXISTS",
                    "BF.INFO",
                    "BF.CARD",
                    "BF.RESERVE",
                    "BF.INSERT",
                    "BF.SCANDUMP",
                    "BF.LOADCHUNK",
                ]);
                push(&[name]);
                if self.rng.chance(50) {
                    push(&[&key]);
                }
            }
            97 => {
                let iterator = self.rng.pick(&["0", "-1", "abc", "+1", "1e3"]);
                push(&["BF.SCANDUMP", MISSING, iterator]);
            }
            _ => {
                // A chunk into a missing key: RedisBloom's replies.
                let iterator = self.rng.pick(&["1", "2", "17", "-3", "abc", "0"]);
                let chunk = self
                    .rng
                    .pick(&["", "x", "garbage chunk", "0123456789abcdef"]);
                push(&["BF.LOADCHUNK", MISSING, iterator, chunk]);
            }
        }
        Step::Command(command)
    }
}
