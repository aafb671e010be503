//! Where a fleet's keys live: K shards, each a filter key and a queue key
//! sharing one hash tag, with the tags chosen so that the K shards fall in
//! K equal ranges of the 16384 cluster slots, and so on every node of a
//! cluster whose nodes own equal slot ranges.

use std::hash::BuildHasher;

use atomic_bloom::DefaultHasher;

/// Cluster slots (Redis and Valkey).
const SLOTS: u16 = 16384;

/// The seed that routes items to shards: the same in every process of a
/// fleet, and different from any filter's.
const ROUTING_SEED: u64 = 0x7368_6172_6473_2121;

/// CRC-16/XMODEM, the cluster's key hash.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The cluster slot of a hash tag.
pub(crate) fn slot(tag: &str) -> u16 {
    crc16(tag.as_bytes()) % SLOTS
}

/// The keys of one shard.
#[derive(Clone, Debug)]
pub(crate) struct ShardKeys {
    /// The hash tag every key of the shard carries.
    pub(crate) tag: String,
    /// The Bloom filter of the shard's items.
    pub(crate) seen: String,
    /// The shard's queue of items the fleet has yet to hand out.
    pub(crate) queue: String,
    /// The prefix of the shard's batch results (a suffix makes one key per
    /// batch).
    pub(crate) results: String,
    /// The shard's URLs out on lease: lease token -> the take's URLs.
    pub(crate) inflight: String,
    /// The shard's lease tokens: token -> deadline (server milliseconds).
    pub(crate) leases: String,
    /// The write a pipeline to the shard's node makes before it waits for
    /// replicas or the AOF (see `durability`).
    pub(crate) mark: String,
}

/// The first tag `{prefix}-{shard}-{n}` whose slot is in `low..high`.
fn tag_in(prefix: &str, shard: usize, low: u16, high: u16) -> String {
    // Some suffix lands in the range: at 16384 shards a range is one slot,
    // found within a few tens of thousands of tries.
    (0u64..)
        .map(|attempt| format!("{prefix}-{shard}-{attempt}"))
        .find(|tag| (low..high.max(low + 1)).contains(&slot(tag)))
        .expect("some tag falls in every slot range")
}

/// The fleet's own keys (its settings, its epoch, its busy clients): one
/// hash tag per prefix, whatever the shard count, so that every process
/// of a fleet reads the same settings and refuses to start with others.
///
/// The tag is the one shard 0 has at 8 shards (the default), so a fleet
/// started by an earlier version with 8 shards keeps its stored settings.
pub(crate) fn fleet_keys(prefix: &str) -> FleetKeys {
    let tag = tag_in(prefix, 0, 0, SLOTS / 8);
    FleetKeys {
        config: format!("{prefix}:config:{{{tag}}}"),
        control: format!("{prefix}:control:{{{tag}}}"),
        clients: format!("{prefix}:clients:{{{tag}}}"),
        mark: format!("{prefix}:mark:{{{tag}}}"),
        tag,
    }
}

/// The keys of the fleet as a whole, all under one hash tag.
#[derive(Clone, Debug)]
pub(crate) struct FleetKeys {
    /// The hash tag of all of them.
    pub(crate) tag: String,
    /// The fleet's shared settings (a hash).
    pub(crate) config: String,
    /// The epoch of busy transitions (a hash).
    pub(crate) control: String,
    /// The busy clients, each with its deadline (a sorted set).
    pub(crate) clients: String,
    /// The write before a wait, as a shard's `mark`.
    pub(crate) mark: String,
}

/// The keys of `shards` shards under `prefix`: shard `i`'s tag hashes to a
/// slot in `[i, i + 1) * 16384 / shards`.
pub(crate) fn shard_keys(prefix: &str, shards: usize) -> Vec<ShardKeys> {
    (0..shards)
        .map(|shard| {
            let low = (shard * usize::from(SLOTS) / shards) as u16;
            let high = ((shard + 1) * usize::from(SLOTS) / shards) as u16;
            let tag = tag_in(prefix, shard, low, high);
            ShardKeys {
                seen: format!("{prefix}:seen:{{{tag}}}"),
                queue: format!("{prefix}:queue:{{{tag}}}"),
                results: format!("{prefix}:result:{{{tag}}}"),
                inflight: format!("{prefix}:inflight:{{{tag}}}"),
                leases: format!("{prefix}:leases:{{{tag}}}"),
                mark: format!("{prefix}:mark:{{{tag}}}"),
                tag,
            }
        })
        .collect()
}

/// The shard of an item's bytes: the same in every process.
pub(crate) fn shard_of(bytes: &[u8], shards: usize) -> usize {
    let hash = DefaultHasher::with_seed(ROUTING_SEED).hash_one(bytes);
    ((u128::from(hash) * shards as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_cluster_specification() {
        // The cluster specification's test vector.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(slot("foo"), 12182);
    }

    #[test]
    fn shards_spread_over_equal_slot_ranges() {
        for shards in [1, 3, 8, 64] {
            let keys = shard_keys("crawl", shards);
            for (index, shard) in keys.iter().enumerate() {
                let tag = &shard.tag;
                assert!(shard.seen.ends_with(&format!("{{{tag}}}")));
                let slot = usize::from(slot(tag));
                assert_eq!(slot * shards / 16384, index, "{shards} shards: {tag}");
                assert!(shard.queue.ends_with(&format!("{{{tag}}}")));
            }
        }
    }

    #[test]
    fn the_fleet_keys_do_not_move_with_the_shard_count() {
        for prefix in ["atomic-bloom", "crawl", "x"] {
            let fleet = fleet_keys(prefix);
            assert_eq!(fleet.tag, shard_keys(prefix, 8)[0].tag, "{prefix}");
            for key in [&fleet.config, &fleet.control, &fleet.clients] {
                assert!(key.ends_with(&format!("{{{}}}", fleet.tag)), "{key}");
            }
        }
    }

    #[test]
    fn items_spread_over_shards() {
        let mut counts = [0usize; 8];
        for i in 0..80_000 {
            counts[shard_of(format!("https://host{i}.example/").as_bytes(), 8)] += 1;
        }
        assert!(
            counts.iter().all(|&count| (9_000..11_000).contains(&count)),
            "{counts:?}"
        );
    }
}
