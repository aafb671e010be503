//! A seeded generator of `BF.*` command streams, for the differential test
//! against RedisBloom (`tests/differential.rs`) and the equivalence of a
//! primary, its replica, a reload and an AOF restart
//! (`tests/equivalence.rs`).
//!
//! A stream holds: `BF.RESERVE` with random capacity, rate, `EXPANSION` and
//! `NONSCALING` (in any order and case); `BF.ADD`, `BF.MADD` and
//! `BF.INSERT` (options in any order, abbreviated as RedisBloom reads them,
//! `NOCREATE`) with duplicates, items of other keys, binary and empty
//! items, and bursts that fill `NONSCALING` filters and grow scaling ones;
//! `BF.EXISTS` / `BF.MEXISTS` over added and never-added items; `BF.INFO`
//! with no field and with each; `BF.CARD`; `BF.SCANDUMP` at any iterator;
//! dumps copied into new keys (whole, or in pieces cut inside chunks);
//! RedisBloom's filters adopted (`Step::Adopt`); a plain string key and
//! filters overwritten by `SET` (wrong types); `BF.LOADCHUNK` of garbage;
//! bad numbers (`+1`, `01`, `1e3`, `-1`, `0`, `nan`, `inf`, empty, past
//! 2^63, past RedisBloom's ranges), unknown options and wrong arity; 20% of
//! commands over RESP3.
//!
//! Left out on purpose:
//! * keys that spell an option (`expansion`, `nonscaling`): RedisBloom's
//!   `BF.RESERVE` looks for its options from the command name on
//!   (`RMUtil_ArgIndex` over all of argv), so such a key is read as the
//!   option there; this module looks only after the capacity, by design;
//! * `SEED`, this module's own `BF.RESERVE` option (how a primary sends a
//!   new filter's seed to its replicas), which RedisBloom ignores: a bad
//!   seed is refused here and taken there;
//! * `BF.INSERT ... N ...`: RedisBloom reads the third byte of a
//!   one-letter option, past its end.

#![allow(dead_code)]

pub mod resp;

use std::collections::{HashMap, HashSet};

/// splitmix64 (`test-servers`): the streams' choices.
pub use test_servers::Rng;

/// The keys filters live under.
pub const FILTERS: [&str; 8] = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"];
/// Keys that receive copies of dumps (`Step::Copy`).
pub const COPIES: [&str; 2] = ["copy0", "copy1"];
/// Keys that receive RedisBloom's filters (`Step::Adopt`).
pub const ADOPTED: [&str; 2] = ["rb0", "rb1"];
/// A plain string (the stream's first command sets it).
pub const STRING: &str = "plain";
/// A key only read and sent garbage chunks.
pub const MISSING: &str = "missing";

/// Every key a stream names.
pub fn all_keys() -> Vec<&'static str> {
    let mut keys = FILTERS.to_vec();
    keys.extend(COPIES);
    keys.extend(ADOPTED);
    keys.extend([STRING, MISSING]);
    keys
}

/// A command, and whether it goes over a RESP3 connection.
#[derive(Clone, Debug)]
pub struct Command {
    pub args: Vec<Vec<u8>>,
    pub resp3: bool,
}

impl Command {
    /// The command's name, upper case.
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.args[0]).to_ascii_uppercase()
    }

    /// The key it names (every command here names it second).
    pub fn key(&self) -> Option<String> {
        (self.args.get(1)).map(|key| String::from_utf8_lossy(key).into_owned())
    }
}

/// One step of a stream.
#[derive(Clone, Debug)]
pub enum Step {
    Command(Command),
    /// `DEL to`, then `BF.SCANDUMP from` chunk by chunk into
    /// `BF.LOADCHUNK to`, on each server from its own filter. With `cut`,
    /// each chunk but a RedisBloom header goes in two pieces, cut at a
    /// place `cut` picks; with `stop_early`, the last piece is never sent
    /// (the key stays loading).
    Copy {
        from: String,
        to: String,
        cut: Option<u64>,
        stop_early: bool,
        /// Sends the last piece again after the load (a client retrying
        /// after a lost reply): both modules answer `OK`.
        resend: bool,
    },
    /// The RedisBloom server's filter under `from`, dumped and loaded into
    /// `to` on every server (without a RedisBloom server: one of
    /// RedisBloom's recorded dumps, `pick` choosing which).
    Adopt {
        from: String,
        to: String,
        pick: u64,
    },
}

impl Step {
    /// The step as a line to replay by hand.
    pub fn describe(&self) -> String {
        match self {
            Step::Command(command) => format!(
                "{}{}",
                resp::command_line(&command.args),
                if command.resp3 { "  (RESP3)" } else { "" }
            ),
            other => format!("{other:?}"),
        }
    }
}

/// What kind of stream.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Items a key may be sent before the stream deletes it.
    pub item_budget: usize,
    /// Whether a copy may stop before its last piece (a key left loading:
    /// RedisBloom answers from a half-loaded filter, this module refuses
    /// to, so only streams for this module alone do it).
    pub stop_early: bool,
    /// Whether a capacity of 2^30 (RedisBloom's largest, a 1.2 GB filter
    /// allocated lazily) may be asked for.
    pub huge: bool,
    /// The most items in a burst (a multi-add that grows a filter).
    pub burst: usize,
}

/// Streams for the differential test.
pub const DIFFERENTIAL: Settings = Settings {
    item_budget: 5_000,
    stop_early: false,
    huge: true,
    burst: 400,
};

/// Streams for the equivalence test (a memory limit in force).
pub const EQUIVALENCE: Settings = Settings {
    item_budget: 30_000,
    stop_early: true,
    huge: true,
    burst: 2_000,
};

/// Valid and invalid numbers, as text.
const RATES: [&str; 12] = [
    "0.01", "0.001", "0.0001", "0.05", "0.1", "0.5", "0.999", "1e-3", ".02", "0.25", "0.3",
    "0.00001",
];
const BAD_RATES: [&str; 12] = [
    "0", "1", "-0.01", "nan", "inf", "-inf", "abc", "", "1.5", "0.01x", " 0.01", "+0.01",
];
const CAPACITIES: [&str; 10] = [
    "1", "2", "5", "10", "50", "100", "500", "1000", "10000", "100000",
];
const BAD_CAPACITIES: [&str; 14] = [
    "0",
    "-1",
    "+1",
    "01",
    "1e3",
    "abc",
    "",
    "1073741825",
    "99999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "1.0",
    " 5",
    "0x10",
];
const HUGE_CAPACITY: &str = "1073741824";
const EXPANSIONS: [&str; 6] = ["1", "2", "3", "4", "8", "2"];
const BAD_EXPANSIONS: [&str; 9] = [
    "0",
    "-1",
    "+2",
    "02",
    "32769",
    "abc",
    "",
    "1e1",
    "4294967298",
];
const INFO_FIELDS: [&str; 13] = [
    "CAPACITY",
    "SIZE",
    "FILTERS",
    "ITEMS",
    "EXPANSION",
    "capacity",
    "Size",
    "filters",
    "items",
    "expansion",
    "bogus",
    "CAP",
    "",
];
const ITERATORS: [&str; 16] = [
    "0",
    "1",
    "2",
    "9",
    "-1",
    "100",
    "4096",
    "9223372036854775807",
    "-9223372036854775808",
    "abc",
    "+1",
    "01",
    "1e3",
    "",
    "0",
    "0",
];
const CHUNK_ITERATORS: [&str; 10] = [
    "1",
    "2",
    "0",
    "-3",
    "17",
    "100",
    "abc",
    "+1",
    "9223372036854775807",
    "1",
];

/// What the generator remembers of a key, to steer the stream: the items
/// sent to it (duplicates), how many, and whether it may be huge.
#[derive(Default)]
struct KeyModel {
    items: Vec<Vec<u8>>,
    sent: usize,
    huge: bool,
}

pub struct Generator {
    rng: Rng,
    settings: Settings,
    keys: HashMap<String, KeyModel>,
    /// Every item the stream sent to each key name, over all its lives.
    history: HashMap<String, HashSet<Vec<u8>>>,
    fresh: u64,
    probes: u64,
    started: bool,
}

impl Generator {
    pub fn new(seed: u64, settings: Settings) -> Generator {
        Generator {
            rng: Rng(seed),
            settings,
            keys: HashMap::new(),
            history: HashMap::new(),
            fresh: 0,
            probes: 0,
            started: false,
        }
    }

    /// Every item the stream has sent to `key` (in adds), over all the
    /// key's lives.
    pub fn items_sent(&self, key: &str) -> Vec<Vec<u8>> {
        let mut items: Vec<Vec<u8>> = self
            .history
            .get(key)
            .map(|items| items.iter().cloned().collect())
            .unwrap_or_default();
        items.sort();
        items
    }

    fn model(&mut self, key: &str) -> &mut KeyModel {
        self.keys.entry(key.to_string()).or_default()
    }

    fn key(&mut self) -> String {
        match self.rng.below(100) {
            0..=67 => self.rng.pick(&FILTERS).to_string(),
            68..=77 => self.rng.pick(&COPIES).to_string(),
            78..=89 => self.rng.pick(&ADOPTED).to_string(),
            90..=95 => STRING.to_string(),
            _ => MISSING.to_string(),
        }
    }

    fn fresh_item(&mut self) -> Vec<u8> {
        self.fresh += 1;
        format!("f:{}", self.fresh).into_bytes()
    }

    /// An item for an add to `key`.
    fn add_item(&mut self, key: &str) -> Vec<u8> {
        let roll = self.rng.below(100);
        let own = self.keys.get(key).map_or(0, |model| model.items.len());
        let item = match roll {
            0..=34 if own > 0 => {
                let at = self.rng.below(own);
                self.keys[key].items[at].clone()
            }
            35..=44 => {
                // An item of another key.
                let other = self.rng.pick(&FILTERS);
                match self.keys.get(other).map_or(0, |model| model.items.len()) {
                    0 => self.fresh_item(),
                    count => {
                        let at = self.rng.below(count);
                        self.keys[other].items[at].clone()
                    }
                }
            }
            92..=96 => {
                let length = self.rng.below(13);
                (0..length).map(|_| self.rng.next() as u8).collect()
            }
            97 => Vec::new(),
            98 => {
                let mut long = self.fresh_item();
                long.resize(600, b'x');
                long
            }
            _ => self.fresh_item(),
        };
        let model = self.model(key);
        model.sent += 1;
        if model.items.len() < 20_000 {
            model.items.push(item.clone());
        }
        self.history
            .entry(key.to_string())
            .or_default()
            .insert(item.clone());
        item
    }

    /// An item for a lookup in `key`: one it was sent, or one never sent
    /// anywhere.
    fn lookup_item(&mut self, key: &str) -> Vec<u8> {
        let own = self.keys.get(key).map_or(0, |model| model.items.len());
        match self.rng.below(100) {
            0..=44 if own > 0 => {
                let at = self.rng.below(own);
                self.keys[key].items[at].clone()
            }
            45..=52 => {
                let other = self.rng.pick(&FILTERS);
                match self.keys.get(other).map_or(0, |model| model.items.len()) {
                    0 => b"nothing".to_vec(),
                    count => {
                        let at = self.rng.below(count);
                        self.keys[other].items[at].clone()
                    }
                }
            }
            _ => {
                self.probes += 1;
                format!("a:{}", self.probes).into_bytes()
            }
        }
    }

    fn name(&mut self, upper: &str) -> Vec<u8> {
        if self.rng.percent(20) {
            upper.to_ascii_lowercase().into_bytes()
        } else {
            upper.as_bytes().to_vec()
        }
    }

    /// A word in one of its spellings.
    fn word(&mut self, spellings: &[&str]) -> Vec<u8> {
        self.rng.pick(spellings).as_bytes().to_vec()
    }

    fn number(&mut self, good: &[&str], bad: &[&str], bad_percent: u64) -> (Vec<u8>, bool) {
        if self.rng.percent(bad_percent) {
            (self.rng.pick(bad).as_bytes().to_vec(), false)
        } else {
            (self.rng.pick(good).as_bytes().to_vec(), true)
        }
    }

    /// A capacity for a new filter; a huge one now and then.
    fn capacity(&mut self, bad_percent: u64) -> (Vec<u8>, bool) {
        if self.settings.huge && self.rng.below(400) == 0 {
            return (HUGE_CAPACITY.as_bytes().to_vec(), true);
        }
        self.number(&CAPACITIES, &BAD_CAPACITIES, bad_percent)
    }

    fn reserve(&mut self, key: &str) -> Vec<Vec<u8>> {
        let mut args = vec![self.name("BF.RESERVE"), key.as_bytes().to_vec()];
        let (rate, _) = self.number(&RATES, &BAD_RATES, 20);
        let (capacity, _) = self.capacity(15);
        args.extend([rate, capacity]);
        let mut options: Vec<Vec<Vec<u8>>> = Vec::new();
        if self.rng.percent(35) {
            let (growth, _) = self.number(&EXPANSIONS, &BAD_EXPANSIONS, 20);
            let growth = if self.rng.percent(3) {
                b"32768".to_vec()
            } else {
                growth
            };
            options.push(vec![
                self.word(&["EXPANSION", "expansion", "Expansion"]),
                growth,
            ]);
        }
        if self.rng.percent(25) {
            options.push(vec![self.word(&["NONSCALING", "nonscaling", "NonScaling"])]);
        }
        if self.rng.percent(3) {
            options.push(vec![self.word(&["EXTRA", "foo", "ITEMS", "0.5"])]);
        }
        if self.rng.percent(50) {
            options.reverse();
        }
        args.extend(options.into_iter().flatten());
        if self.rng.percent(3) {
            args.push(b"EXPANSION".to_vec());
        }
        args
    }

    fn insert(&mut self, key: &str, most: usize) -> Vec<Vec<u8>> {
        let mut args = vec![self.name("BF.INSERT"), key.as_bytes().to_vec()];
        let mut options: Vec<Vec<Vec<u8>>> = Vec::new();
        if self.rng.percent(30) {
            let (capacity, _) = self.capacity(15);
            options.push(vec![
                self.word(&["CAPACITY", "capacity", "cap", "C"]),
                capacity,
            ]);
        }
        if self.rng.percent(30) {
            let (rate, _) = self.number(&RATES, &BAD_RATES, 15);
            options.push(vec![self.word(&["ERROR", "error", "er", "ERR"]), rate]);
        }
        if self.rng.percent(15) {
            let (growth, _) = self.number(&EXPANSIONS, &BAD_EXPANSIONS, 20);
            options.push(vec![
                self.word(&["EXPANSION", "expansion", "e", "EXP"]),
                growth,
            ]);
        }
        if self.rng.percent(15) {
            options.push(vec![self.word(&["NOCREATE", "nocreate", "noc", "NoCreate"])]);
        }
        if self.rng.percent(15) {
            options.push(vec![self.word(&["NONSCALING", "nonscaling", "non", "no"])]);
        }
        if self.rng.percent(3) {
            options.push(vec![self.word(&["foo", "", "x", "ZZ", "SEED"])]);
        }
        // Options in any order.
        for at in (1..options.len()).rev() {
            let other = self.rng.below(at + 1);
            options.swap(at, other);
        }
        args.extend(options.into_iter().flatten());
        if !self.rng.percent(3) {
            args.push(self.word(&["ITEMS", "items", "i", "It"]));
            let count = 1 + self.rng.below(most);
            for _ in 0..count {
                let item = self.add_item(key);
                args.push(item);
            }
        }
        args
    }

    fn wrong_arity(&mut self, key: &str) -> Vec<Vec<u8>> {
        let key = key.as_bytes().to_vec();
        let text = |words: &[&str]| -> Vec<Vec<u8>> {
            words.iter().map(|word| word.as_bytes().to_vec()).collect()
        };
        let mut args = match self.rng.below(16) {
            0 => text(&["BF.ADD", "k"]),
            1 => text(&["BF.ADD", "k", "a", "b"]),
            2 => text(&["BF.EXISTS", "k"]),
            3 => text(&["BF.EXISTS", "k", "a", "b"]),
            4 => text(&["BF.MADD", "k"]),
            5 => text(&["BF.MEXISTS", "k"]),
            6 => text(&["BF.INFO"]),
            7 => text(&["BF.INFO", "k", "CAPACITY", "x"]),
            8 => text(&["BF.CARD", "k", "x"]),
            9 => text(&["BF.SCANDUMP", "k"]),
            10 => text(&["BF.LOADCHUNK", "k", "1"]),
            11 => text(&["BF.LOADCHUNK", "k", "1", "x", "y"]),
            12 => text(&["BF.RESERVE", "k", "0.01"]),
            13 => text(&[
                "BF.RESERVE",
                "k",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "NONSCALING",
                "x",
            ]),
            14 => self.rng.pick(&[
                text(&["BF.INSERT", "k", "ITEMS"]),
                text(&["BF.INSERT", "k"]),
                text(&["BF.INSERT", "k", "CAPACITY"]),
                text(&["BF.INSERT", "k", "CAPACITY", "10"]),
                text(&["BF.INSERT", "k", "NOCREATE", "ITEMS"]),
                text(&["BF.INSERT", "k", "ERROR"]),
            ]),
            _ => text(&["BF.CARD"]),
        };
        if args.len() > 1 {
            args[1] = key;
        }
        args
    }

    fn garbage_chunk(&mut self, key: &str) -> Vec<Vec<u8>> {
        // Mostly where no filter of this module's type is live: RedisBloom
        // writes a stray chunk into its own filter's bits, and the
        // differential test then starts that key again.
        let key = match self.rng.below(10) {
            0..=4 => MISSING,
            5..=6 => self.rng.pick(&ADOPTED),
            _ => key,
        };
        let iterator = self.rng.pick(&CHUNK_ITERATORS).as_bytes().to_vec();
        let length = self.rng.pick(&[0usize, 1, 8, 12, 65, 100]);
        let data: Vec<u8> = (0..length).map(|_| self.rng.next() as u8).collect();
        vec![
            self.name("BF.LOADCHUNK"),
            key.as_bytes().to_vec(),
            iterator,
            data,
        ]
    }

    /// The next step.
    pub fn next_step(&mut self) -> Step {
        let resp3 = self.rng.percent(20);
        let command = |args: Vec<Vec<u8>>| Step::Command(Command { args, resp3 });
        if !self.started {
            self.started = true;
            return command(vec![
                b"SET".to_vec(),
                STRING.as_bytes().to_vec(),
                b"text".to_vec(),
            ]);
        }
        let key = self.key();
        if self
            .keys
            .get(&key)
            .is_some_and(|model| model.sent > self.settings.item_budget)
        {
            self.keys.remove(&key);
            return command(vec![b"DEL".to_vec(), key.into_bytes()]);
        }
        let huge = self.keys.get(&key).is_some_and(|model| model.huge);
        let roll = self.rng.below(1000);
        let args = match roll {
            0..=79 => {
                let args = self.reserve(&key);
                self.mark_huge(&key, &args);
                args
            }
            80..=279 => {
                let item = self.add_item(&key);
                vec![self.name("BF.ADD"), key.into_bytes(), item]
            }
            280..=419 => {
                let mut args = vec![self.name("BF.MADD"), key.as_bytes().to_vec()];
                let count = 1 + self.rng.below(12);
                for _ in 0..count {
                    let item = self.add_item(&key);
                    args.push(item);
                }
                args
            }
            420..=519 => {
                let args = self.insert(&key, 12);
                self.mark_huge(&key, &args);
                args
            }
            520..=619 => {
                let item = self.lookup_item(&key);
                vec![self.name("BF.EXISTS"), key.into_bytes(), item]
            }
            620..=719 => {
                let mut args = vec![self.name("BF.MEXISTS"), key.as_bytes().to_vec()];
                let count = 1 + self.rng.below(20);
                for _ in 0..count {
                    let item = self.lookup_item(&key);
                    args.push(item);
                }
                args
            }
            720..=799 => {
                let mut args = vec![self.name("BF.INFO"), key.into_bytes()];
                if self.rng.percent(60) {
                    args.push(self.rng.pick(&INFO_FIELDS).as_bytes().to_vec());
                }
                args
            }
            800..=829 => vec![self.name("BF.CARD"), key.into_bytes()],
            830..=859 if !huge => {
                let iterator = self.rng.pick(&ITERATORS).as_bytes().to_vec();
                vec![self.name("BF.SCANDUMP"), key.into_bytes(), iterator]
            }
            860..=879 => self.garbage_chunk(&key),
            880..=899 => return self.copy(),
            900..=914 => return self.adopt(),
            915..=929 => {
                self.keys.remove(&key);
                vec![b"DEL".to_vec(), key.into_bytes()]
            }
            930..=934 => {
                self.keys.remove(&key);
                vec![b"SET".to_vec(), key.into_bytes(), b"text".to_vec()]
            }
            935..=959 => self.wrong_arity(&key),
            _ => {
                // A burst: fills a NONSCALING filter, grows a scaling one.
                let mut args = if self.rng.percent(50) {
                    vec![self.name("BF.MADD"), key.as_bytes().to_vec()]
                } else {
                    let name = self.name("BF.INSERT");
                    vec![name, key.as_bytes().to_vec(), b"ITEMS".to_vec()]
                };
                let count = 50 + self.rng.below(self.settings.burst - 49);
                for _ in 0..count {
                    let item = self.add_item(&key);
                    args.push(item);
                }
                args
            }
        };
        command(args)
    }

    fn mark_huge(&mut self, key: &str, args: &[Vec<u8>]) {
        if args.iter().any(|arg| arg == HUGE_CAPACITY.as_bytes()) {
            self.model(key).huge = true;
        }
    }

    fn copy(&mut self) -> Step {
        let from = if self.rng.percent(80) {
            self.rng.pick(&FILTERS)
        } else {
            self.rng.pick(&ADOPTED)
        };
        let to = self.rng.pick(&COPIES).to_string();
        let from_model = self.keys.get(from);
        if from_model.is_some_and(|model| model.huge) {
            return Step::Command(Command {
                args: vec![b"BF.INFO".to_vec(), from.as_bytes().to_vec()],
                resp3: false,
            });
        }
        let items = from_model
            .map(|model| model.items.clone())
            .unwrap_or_default();
        let sent = from_model.map_or(0, |model| model.sent);
        self.keys.insert(
            to.clone(),
            KeyModel {
                items,
                sent,
                huge: false,
            },
        );
        let cut = self.rng.percent(30).then(|| self.rng.next());
        let stop_early = self.settings.stop_early && cut.is_some() && self.rng.percent(30);
        Step::Copy {
            from: from.to_string(),
            to,
            cut,
            stop_early,
            resend: !stop_early && self.rng.percent(20),
        }
    }

    fn adopt(&mut self) -> Step {
        let from = self.rng.pick(&FILTERS);
        let to = self.rng.pick(&ADOPTED).to_string();
        if self.keys.get(from).is_some_and(|model| model.huge) {
            return Step::Command(Command {
                args: vec![b"BF.CARD".to_vec(), from.as_bytes().to_vec()],
                resp3: false,
            });
        }
        let items = self
            .keys
            .get(from)
            .map(|model| model.items.clone())
            .unwrap_or_default();
        self.keys.insert(
            to.clone(),
            KeyModel {
                sent: items.len(),
                items,
                huge: false,
            },
        );
        Step::Adopt {
            from: from.to_string(),
            to,
            pick: self.rng.next(),
        }
    }
}

/// The least a dump's first piece holds: a header, which neither module
/// takes in pieces (RedisBloom's whole, loaded at iterator 1; this
/// module's 56-byte envelope, which says how long the record is).
const HEADER_BYTES: usize = 64;

/// The pieces a dump is loaded in: each `(iterator, chunk)` whole, or in
/// two when `cut` says so, never inside a header. A piece's iterator is
/// one past its end, as `BF.LOADCHUNK` reads it in both modules.
pub fn pieces(chunks: &[(i64, Vec<u8>)], cut: Option<u64>) -> Vec<(i64, Vec<u8>)> {
    let mut pieces = Vec::new();
    for (index, (next, chunk)) in chunks.iter().enumerate() {
        let least = if index == 0 { HEADER_BYTES } else { 1 };
        match cut {
            Some(cut) if *next != 1 && chunk.len() > least => {
                let seed = cut.wrapping_add(index as u64 * 0x9e37_79b9);
                let at = least + (seed % (chunk.len() - least) as u64) as usize;
                let end_of_first = *next - (chunk.len() - at) as i64;
                pieces.push((end_of_first, chunk[..at].to_vec()));
                pieces.push((*next, chunk[at..].to_vec()));
            }
            _ => pieces.push((*next, chunk.clone())),
        }
    }
    pieces
}
