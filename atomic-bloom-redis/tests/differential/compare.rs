//! The table applied: one server's answers on a filter of this module's
//! type, checked against what that server holds, then compared with the
//! other's but for what the table lets differ.

use crate::bf_stream::resp::{quoted, Reply};
use crate::bf_stream::Command;
use crate::model::{
    check_info, info_field, insert_items_at, item_answers, take_add, take_lookup, Filter, OURS,
    SIDE_NAMES, THEIRS,
};
use crate::{mismatch, Mismatch, Run, CHUNK_ERRORS, FULL};

impl Run<'_> {
    /// A command on a filter of this module's own type (RedisBloom's on
    /// the other server): compared as the table says. `Ok(true)`: the key
    /// must go (RedisBloom took a stray chunk into its bits).
    pub(crate) fn on_filter(
        &mut self,
        command: &Command,
        name: &str,
        filter: &mut Filter,
        replies: &mut [Reply; 2],
    ) -> Result<bool, Mismatch> {
        let argv = &command.args;
        let same = |replies: &[Reply; 2]| {
            if replies[OURS] == replies[THEIRS] {
                Ok(false)
            } else {
                Err(mismatch("reply", "a filter of this module's type"))
            }
        };
        let either_error = replies.iter().any(|reply| reply.error().is_some());
        match name {
            "BF.ADD" | "BF.MADD" | "BF.INSERT" | "BF.EXISTS" | "BF.MEXISTS" => {
                let items: &[Vec<u8>] = match name {
                    "BF.ADD" | "BF.EXISTS" if argv.len() == 3 => &argv[2..],
                    "BF.MADD" | "BF.MEXISTS" => &argv[2..],
                    "BF.INSERT" => {
                        insert_items_at(argv).map_or(&[], |at| &argv[at.min(argv.len())..])
                    }
                    _ => &[],
                };
                let answers = [
                    item_answers(name, &replies[OURS]),
                    item_answers(name, &replies[THEIRS]),
                ];
                let [Some(ours), Some(theirs)] = answers else {
                    return same(replies);
                };
                let adds = !name.ends_with("EXISTS");
                for (side, answers) in [(OURS, &ours), (THEIRS, &theirs)] {
                    self.check_answers(filter, side, adds, items, answers)?;
                }
                for at in 0..ours.len().max(theirs.len()) {
                    let (a, b) = (ours.get(at), theirs.get(at));
                    if a == b {
                        continue;
                    }
                    let text = |answer: Option<&Reply>| match answer {
                        None => "nothing".to_string(),
                        Some(answer) => match answer.as_int() {
                            Some(n) => n.to_string(),
                            None => "full".to_string(),
                        },
                    };
                    if a.and_then(Reply::as_int).is_some()
                        && a.and_then(Reply::as_int) == b.and_then(Reply::as_int)
                    {
                        return Err(mismatch(
                            "reply",
                            format!("item {at}: same answer, other type"),
                        ));
                    }
                    let kind = format!(
                        "{} answered {} here, {} in RedisBloom",
                        if adds { "an add" } else { "a lookup" },
                        text(a),
                        text(b)
                    );
                    self.tolerate(&kind);
                }
                Ok(false)
            }
            "BF.INFO" if !either_error && argv.len() <= 3 => {
                let asked = argv.get(2).and_then(|word| info_field(word));
                if argv.len() == 3 && asked.is_none() {
                    return same(replies);
                }
                let differed = replies[OURS] != replies[THEIRS];
                for side in [OURS, THEIRS] {
                    check_info(filter, side, &mut replies[side], asked)
                        .map_err(|why| mismatch("BF.INFO", why))?;
                }
                same(replies)?;
                if differed {
                    self.tolerate("BF.INFO Size, Capacity, filters or items");
                }
                Ok(false)
            }
            "BF.CARD" if !either_error && argv.len() == 2 => {
                for side in [OURS, THEIRS] {
                    let count = filter.sides[side].count as i64;
                    if replies[side] != Reply::Int(count) {
                        return Err(mismatch(
                            "count",
                            format!("{}: BF.CARD, {count} adds answered 1", SIDE_NAMES[side]),
                        ));
                    }
                }
                if replies[OURS] != replies[THEIRS] {
                    self.tolerate("BF.CARD");
                }
                Ok(false)
            }
            "BF.SCANDUMP" if !either_error && argv.len() == 3 => {
                let iterator: i64 = String::from_utf8_lossy(&argv[2]).parse().unwrap_or(-1);
                if iterator < 0 {
                    return same(replies);
                }
                for side in [OURS, THEIRS] {
                    let shaped = match &replies[side] {
                        Reply::Array(parts) if parts.len() == 2 => match (&parts[0], &parts[1]) {
                            (Reply::Int(next), Reply::Bulk(chunk)) => {
                                *next >= 0 && (iterator != 0 || (*next > 0 && !chunk.is_empty()))
                            }
                            _ => false,
                        },
                        _ => false,
                    };
                    if !shaped {
                        return Err(mismatch(
                            "BF.SCANDUMP",
                            format!("{}: not [next, chunk]", SIDE_NAMES[side]),
                        ));
                    }
                }
                if replies[OURS] != replies[THEIRS] {
                    self.tolerate("BF.SCANDUMP chunk");
                }
                Ok(false)
            }
            "BF.LOADCHUNK" if argv.len() == 4 => {
                if replies[OURS] == replies[THEIRS] {
                    return Ok(false);
                }
                // RedisBloom refuses an iterator at or below 0 or below
                // the chunk's length before it looks at its filter: the
                // same refusal is due here.
                let iterator = String::from_utf8_lossy(&argv[2]).parse::<i64>();
                if iterator.is_ok_and(|at| at <= 0 || at < argv[3].len() as i64) {
                    return same(replies);
                }
                match replies[OURS].error() {
                    // The key goes if RedisBloom wrote the bytes into it.
                    Some(error) if CHUNK_ERRORS.contains(&error.as_str()) => {
                        Ok(replies[THEIRS].is_ok())
                    }
                    _ => Err(mismatch(
                        "BF.LOADCHUNK",
                        "a stray chunk into a live filter of this module's type",
                    )),
                }
            }
            _ => same(replies),
        }
    }

    /// One server's answers to an add or a lookup: as many as the items (an
    /// add may stop at the full error), each as the server's filter allows.
    fn check_answers(
        &mut self,
        filter: &mut Filter,
        side: usize,
        adds: bool,
        items: &[Vec<u8>],
        answers: &[Reply],
    ) -> Result<(), Mismatch> {
        let who = SIDE_NAMES[side];
        let stopped = adds
            && answers.len() < items.len()
            && answers.last().and_then(Reply::error).as_deref() == Some(FULL);
        if answers.len() > items.len() || (answers.len() < items.len() && !stopped) {
            return Err(mismatch(
                "reply",
                format!("{who}: {} answers to {} items", answers.len(), items.len()),
            ));
        }
        for (at, (item, answer)) in items.iter().zip(answers).enumerate() {
            self.tally.item_answers += 1;
            self.tally.sure_answers += u64::from(filter.sides[side].held.contains(item));
            let checked = if adds {
                take_add(filter, side, item, answer)
            } else {
                take_lookup(filter, side, item, answer)
            };
            checked.map_err(|why| {
                let kind = if why.contains("false negative") || why.contains("held") {
                    "false negative"
                } else {
                    "answer"
                };
                mismatch(kind, format!("item {at} {}: {why}", quoted(item)))
            })?;
        }
        Ok(())
    }
}
