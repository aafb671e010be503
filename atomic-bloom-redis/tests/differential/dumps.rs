//! Dumps: a filter copied through `BF.SCANDUMP` / `BF.LOADCHUNK` on each
//! server from its own filter, and RedisBloom's filter adopted into both.

use crate::bf_stream::pieces;
use crate::bf_stream::resp::Reply;
use crate::model::{Filter, Held, OURS, SIDE_NAMES, THEIRS};
use crate::{args, failure, mismatch, Failure, Run};

impl Run<'_> {
    /// `key`'s dump on one server: `(iterator to load at, chunk)` pairs, or
    /// the error `BF.SCANDUMP` answered.
    fn dump(&mut self, side: usize, key: &str) -> Result<Vec<(i64, Vec<u8>)>, Reply> {
        let mut chunks = Vec::new();
        let mut iterator = 0i64;
        for _ in 0..100_000 {
            self.tally.commands += 1;
            let reply = self.servers.call_one(
                side,
                &args(&[
                    b"BF.SCANDUMP",
                    key.as_bytes(),
                    iterator.to_string().as_bytes(),
                ]),
            );
            let (next, chunk) = match &reply {
                Reply::Array(parts) if parts.len() == 2 => match (&parts[0], &parts[1]) {
                    (Reply::Int(next), Reply::Bulk(chunk)) => (*next, chunk.clone()),
                    _ => return Err(reply),
                },
                _ => return Err(reply),
            };
            if next == 0 {
                return Ok(chunks);
            }
            chunks.push((next, chunk));
            iterator = next;
        }
        panic!("BF.SCANDUMP {key} never ended");
    }

    /// Loads `pieces` into `key` on one server: the first reply that is not
    /// `OK`, if any.
    fn load(&mut self, side: usize, key: &str, pieces: &[(i64, Vec<u8>)]) -> Option<Reply> {
        for (next, chunk) in pieces {
            self.tally.commands += 1;
            let reply = self.servers.call_one(side, &loadchunk(key, *next, chunk));
            if !reply.is_ok() {
                return Some(reply);
            }
        }
        None
    }

    /// `DEL key` on both servers, which must answer alike; `key` is then
    /// missing.
    fn delete(&mut self, key: &str) -> Result<(), Failure> {
        let deleted = self
            .servers
            .call(&args(&[b"DEL", key.as_bytes()]), false, self.tally);
        self.keys.insert(key.to_string(), Held::Missing);
        if deleted[OURS] != deleted[THEIRS] {
            return Err(failure(
                mismatch("reply", "DEL"),
                Some(deleted),
                Some(key.into()),
            ));
        }
        Ok(())
    }

    /// `BF.SCANDUMP from` into `BF.LOADCHUNK to` on each server, from its
    /// own filter; then the copy must answer as its original.
    pub(crate) fn copy(
        &mut self,
        from: &str,
        to: &str,
        cut: Option<u64>,
        resend: bool,
    ) -> Result<(), Failure> {
        self.delete(to)?;
        let dumps = [self.dump(OURS, from), self.dump(THEIRS, from)];
        let held = self.held(from);
        let [Ok(ours), Ok(theirs)] = &dumps else {
            return match dumps {
                [Err(a), Err(b)] if a == b => Ok(()),
                [a, b] => Err(failure(
                    mismatch("BF.SCANDUMP", format!("{a:?} / {b:?}")),
                    None,
                    Some(from.into()),
                )),
            };
        };
        if matches!(&held, Held::Filter(filter) if filter.exact) && ours != theirs {
            return Err(failure(
                mismatch(
                    "RedisBloom filter",
                    "the dumps of a RedisBloom filter held by both",
                ),
                None,
                Some(from.into()),
            ));
        }
        let mut last = Vec::new();
        for (side, chunks) in [(OURS, ours.clone()), (THEIRS, theirs.clone())] {
            let pieces = pieces(&chunks, cut);
            if let Some(refused) = self.load(side, to, &pieces) {
                return Err(failure(
                    mismatch(
                        "copy",
                        format!("{}: BF.LOADCHUNK answered {refused}", SIDE_NAMES[side]),
                    ),
                    None,
                    Some(to.into()),
                ));
            }
            last.extend(pieces.last().cloned());
        }
        if resend && last.len() == 2 {
            // The last piece again, as a client whose reply was lost.
            let mut replies = Vec::new();
            for (side, (next, chunk)) in last.into_iter().enumerate() {
                self.tally.commands += 1;
                replies.push(self.servers.call_one(side, &loadchunk(to, next, &chunk)));
            }
            if !(replies[OURS].is_ok() && replies[THEIRS].is_ok()) {
                return Err(failure(
                    mismatch("copy", "the last chunk sent again"),
                    Some([replies[OURS].clone(), replies[THEIRS].clone()]),
                    Some(to.into()),
                ));
            }
        }
        let Held::Filter(filter) = held else {
            return Err(failure(
                mismatch("copy", "dumped a key that holds no filter"),
                None,
                Some(to.into()),
            ));
        };
        self.keys
            .insert(to.to_string(), Held::Filter(filter.clone()));
        // The copy answers as its original, on each server.
        let mut probes: Vec<Vec<u8>> = filter.sides[THEIRS]
            .held
            .iter()
            .chain(&filter.sides[OURS].held)
            .take(150)
            .cloned()
            .collect();
        for _ in 0..100 {
            self.probes += 1;
            probes.push(format!("copy probe {}", self.probes).into_bytes());
        }
        for side in [OURS, THEIRS] {
            let mut answers = Vec::new();
            for key in [from, to] {
                let mut mexists = args(&[b"BF.MEXISTS", key.as_bytes()]);
                mexists.extend(probes.iter().cloned());
                let info = self
                    .servers
                    .call_one(side, &args(&[b"BF.INFO", key.as_bytes()]));
                answers.push((info, self.servers.call_one(side, &mexists)));
                self.tally.commands += 2;
            }
            if answers[0] != answers[1] {
                return Err(failure(
                    mismatch(
                        "copy",
                        format!(
                            "{}: the copy answers otherwise: BF.INFO {} / {}",
                            SIDE_NAMES[side], answers[0].0, answers[1].0
                        ),
                    ),
                    None,
                    Some(to.into()),
                ));
            }
        }
        Ok(())
    }

    /// RedisBloom's filter under `from`, dumped by the RedisBloom server
    /// and loaded into `to` on both: from then on compared exactly.
    pub(crate) fn adopt(&mut self, from: &str, to: &str) -> Result<(), Failure> {
        self.delete(to)?;
        let Held::Filter(filter) = self.held(from) else {
            return Ok(());
        };
        let chunks = self.dump(THEIRS, from).map_err(|error| {
            failure(
                mismatch("BF.SCANDUMP", format!("RedisBloom: {error}")),
                None,
                Some(from.to_string()),
            )
        })?;
        for side in [OURS, THEIRS] {
            if let Some(refused) = self.load(side, to, &chunks) {
                return Err(failure(
                    mismatch(
                        "RedisBloom filter",
                        format!("{}: loading RedisBloom's dump: {refused}", SIDE_NAMES[side]),
                    ),
                    None,
                    Some(to.into()),
                ));
            }
        }
        let theirs = filter.sides[THEIRS].clone();
        let adopted = Filter {
            exact: true,
            sides: [theirs.clone(), theirs],
            ..filter
        };
        self.keys.insert(to.to_string(), Held::Filter(adopted));
        let info = self
            .servers
            .call(&args(&[b"BF.INFO", to.as_bytes()]), false, self.tally);
        if info[OURS] != info[THEIRS] {
            return Err(failure(
                mismatch("RedisBloom filter", "BF.INFO of an adopted filter"),
                Some(info),
                Some(to.into()),
            ));
        }
        Ok(())
    }
}

/// `BF.LOADCHUNK key next chunk`.
fn loadchunk(key: &str, next: i64, chunk: &[u8]) -> Vec<Vec<u8>> {
    vec![
        b"BF.LOADCHUNK".to_vec(),
        key.as_bytes().to_vec(),
        next.to_string().into_bytes(),
        chunk.to_vec(),
    ]
}
