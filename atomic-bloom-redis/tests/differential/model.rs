//! What each server holds of a filter, as far as its answers tell, and
//! the checks of one server's answers against it: the models behind the
//! differential test's table of differences by design.

use std::collections::HashSet;

use crate::bf_stream::resp::Reply;

pub const OURS: usize = 0;
pub const THEIRS: usize = 1;
pub const SIDE_NAMES: [&str; 2] = ["this module", "RedisBloom"];
pub const FULL: &str = "ERR non scaling filter is full";
/// What one server holds of a filter, as far as its answers tell.
#[derive(Clone, Default)]
pub struct Side {
    /// Adds that answered 1.
    pub count: u64,
    /// Items it holds for sure: answered 0 or 1 to an add, 1 to a lookup.
    pub held: HashSet<Vec<u8>>,
    /// The most stages it has reported.
    pub filters: u64,
}

#[derive(Clone)]
pub struct Filter {
    /// RedisBloom's filter on both servers: compared with no exception.
    pub exact: bool,
    pub nonscaling: bool,
    /// The capacity asked for (the first stage's).
    pub capacity: u64,
    pub growth: u64,
    pub sides: [Side; 2],
}

impl Filter {
    /// The capacity `BF.INFO` reports with `stages` stages.
    pub fn capacity_with(&self, stages: u64) -> u64 {
        if self.nonscaling {
            return self.capacity;
        }
        (0..stages)
            .map(|stage| {
                self.growth
                    .checked_pow(stage as u32)
                    .map_or(u64::MAX, |factor| factor.saturating_mul(self.capacity))
            })
            .fold(0, u64::saturating_add)
    }
}

#[derive(Clone)]
pub enum Held {
    Missing,
    Other,
    Filter(Filter),
}

/// Where `BF.INSERT`'s items start, read as RedisBloom reads its options.
pub fn insert_items_at(args: &[Vec<u8>]) -> Option<usize> {
    let mut at = 2;
    while at < args.len() {
        match args[at].first().map(u8::to_ascii_lowercase) {
            Some(b'i') => return Some(at + 1),
            Some(b'c') | Some(b'e') => at += 2,
            Some(b'n') => at += 1,
            _ => return None,
        }
    }
    None
}

/// `BF.INFO`'s field names, by the word that asks for one.
pub fn info_field(word: &[u8]) -> Option<&'static str> {
    let word = String::from_utf8_lossy(word).to_ascii_lowercase();
    Some(match word.as_str() {
        "capacity" => "Capacity",
        "size" => "Size",
        "filters" => "Number of filters",
        "items" => "Number of items inserted",
        "expansion" => "Expansion rate",
        _ => return None,
    })
}

/// The values of a `BF.INFO` reply with their field names (RESP2: a flat
/// array, or one value; RESP3: a map).
pub fn info_values<'a>(
    reply: &'a mut Reply,
    asked: Option<&'static str>,
) -> Vec<(String, &'a mut Reply)> {
    match reply {
        Reply::Map(pairs) => pairs
            .iter_mut()
            .map(|(name, value)| (name.to_string().trim_start_matches('+').to_string(), value))
            .collect(),
        Reply::Array(values) => {
            if values.len() == 1 {
                return match asked {
                    Some(name) => vec![(name.to_string(), &mut values[0])],
                    None => Vec::new(),
                };
            }
            let mut found = Vec::new();
            let mut iter = values.iter_mut();
            while let (Some(name), Some(value)) = (iter.next(), iter.next()) {
                found.push((name.to_string().trim_start_matches('+').to_string(), value));
            }
            found
        }
        _ => Vec::new(),
    }
}

pub const BY_DESIGN_VALUE: Reply = Reply::Nil;

/// Checks one server's `BF.INFO` reply against what is known of its
/// filter, and blanks the values that differ by design.
pub fn check_info(
    filter: &mut Filter,
    side: usize,
    reply: &mut Reply,
    asked: Option<&'static str>,
) -> Result<(), String> {
    let scaling = !filter.nonscaling;
    let values = info_values(reply, asked);
    let stages = values
        .iter()
        .find(|(name, _)| name == "Number of filters")
        .and_then(|(_, value)| value.as_int());
    let who = SIDE_NAMES[side];
    for (name, value) in values {
        let number = value.as_int();
        match name.as_str() {
            "Size" => {
                if number.is_none_or(|size| size <= 0) {
                    return Err(format!("{who}: Size {value}"));
                }
                *value = BY_DESIGN_VALUE;
            }
            "Number of items inserted" => {
                if number != Some(filter.sides[side].count as i64) {
                    return Err(format!(
                        "{who}: {value} items inserted, {} of its adds answered 1",
                        filter.sides[side].count
                    ));
                }
                *value = BY_DESIGN_VALUE;
            }
            "Number of filters" if scaling => {
                let stages = number.unwrap_or(0) as u64;
                if stages < filter.sides[side].filters.max(1) {
                    return Err(format!(
                        "{who}: {stages} filters, after {}",
                        filter.sides[side].filters
                    ));
                }
                filter.sides[side].filters = stages;
                *value = BY_DESIGN_VALUE;
            }
            "Capacity" if scaling => {
                let capacity = number.unwrap_or(-1) as u64;
                let least = filter.sides[side].filters.max(1);
                let found = match stages {
                    Some(stages) => {
                        (filter.capacity_with(stages as u64) == capacity).then_some(stages as u64)
                    }
                    None => (least..least + 64).find(|&n| filter.capacity_with(n) == capacity),
                };
                let Some(found) = found else {
                    return Err(format!(
                        "{who}: Capacity {capacity} is no sum of stages of {} x {}^i from {least} \
                         stages",
                        filter.capacity, filter.growth
                    ));
                };
                filter.sides[side].filters = found;
                *value = BY_DESIGN_VALUE;
            }
            _ => {}
        }
    }
    Ok(())
}

/// One server's answer to adding `item`, checked against what it holds,
/// and remembered.
pub fn take_add(
    filter: &mut Filter,
    side: usize,
    item: &[u8],
    answer: &Reply,
) -> Result<(), String> {
    let (nonscaling, capacity) = (filter.nonscaling, filter.capacity);
    let known = &mut filter.sides[side];
    let held = known.held.contains(item);
    let full = nonscaling && known.count >= capacity;
    let who = SIDE_NAMES[side];
    match (answer.as_int(), answer.error()) {
        (Some(1), _) if held => Err(format!("{who}: 1 (new) for an item it held")),
        (Some(1), _) if full => Err(format!("{who}: added past its capacity {capacity}")),
        (Some(1), _) => {
            known.count += 1;
            known.held.insert(item.to_vec());
            Ok(())
        }
        (Some(0), _) => {
            known.held.insert(item.to_vec());
            Ok(())
        }
        (_, Some(error)) if error == FULL && held => {
            Err(format!("{who}: full for an item it held"))
        }
        (_, Some(error)) if error == FULL && !full => Err(format!(
            "{who}: full at {} of {capacity} items",
            known.count
        )),
        (_, Some(error)) if error == FULL => Ok(()),
        _ => Err(format!("{who}: answered {answer} to an add")),
    }
}

/// One server's answer to looking `item` up, checked and remembered.
pub fn take_lookup(
    filter: &mut Filter,
    side: usize,
    item: &[u8],
    answer: &Reply,
) -> Result<(), String> {
    let known = &mut filter.sides[side];
    match answer.as_int() {
        Some(1) => {
            known.held.insert(item.to_vec());
            Ok(())
        }
        Some(0) if known.held.contains(item) => Err(format!(
            "{}: 0 for an item it holds (a false negative)",
            SIDE_NAMES[side]
        )),
        Some(0) => Ok(()),
        _ => Err(format!(
            "{}: answered {answer} to a lookup",
            SIDE_NAMES[side]
        )),
    }
}

/// A command's item answers: one for `BF.ADD` / `BF.EXISTS`, an array for
/// the others; `None` for a command-level reply (an error).
pub fn item_answers(name: &str, reply: &Reply) -> Option<Vec<Reply>> {
    match (name, reply) {
        ("BF.ADD" | "BF.EXISTS", Reply::Int(_) | Reply::Bool(_)) => Some(vec![reply.clone()]),
        ("BF.ADD", Reply::Error(text)) if text == FULL.as_bytes() => Some(vec![reply.clone()]),
        ("BF.MADD" | "BF.MEXISTS" | "BF.INSERT", Reply::Array(answers)) => Some(answers.clone()),
        _ => None,
    }
}
