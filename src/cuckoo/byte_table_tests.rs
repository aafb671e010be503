//! Unit tests of [`ByteTable`] against naive references: RedisBloom's
//! sub-filter as a byte array, and slot-by-slot searches.

use super::byte_table::{ByteTable, MAX_BYTE_TABLE_BUCKETS};
use super::core::RedisBloom;
use super::naive::{hashes, NaiveSubFilter};
use crate::Error;

#[test]
fn the_redisbloom_scheme_on_bytes_matches_a_byte_array_reference_byte_for_byte() {
    for (bucket_size, buckets) in [
        (1u32, 64u64),
        (2, 128),
        (3, 32),
        (4, 16),
        (7, 8),
        (8, 8),
        (9, 4),
        (16, 4),
        (255, 2),
    ] {
        let mut table = ByteTable::new(bucket_size, buckets as usize).unwrap();
        let mut naive = NaiveSubFilter::new(bucket_size as usize, buckets);
        let items: Vec<u64> = hashes(u64::from(bucket_size))
            .take(2 * bucket_size as usize * buckets as usize + 40)
            .collect();
        let mut refused = 0;
        for (i, &hash) in items.iter().enumerate() {
            let probe = table.probe(&RedisBloom, hash);
            let inserted = table.insert_free(&probe) || table.kick_out(&RedisBloom, &probe, 20);
            let expected = naive.insert_free(hash) || naive.kick_out(hash, 20);
            assert_eq!(inserted, expected, "insert {i} of {bucket_size}x{buckets}");
            refused += usize::from(!inserted);
            assert_eq!(table.as_bytes(), naive.data, "after insert {i}");
            if i % 3 == 0 {
                let victim = items[i / 2];
                let probe = table.probe(&RedisBloom, victim);
                let count = table.count_in(probe.first, probe.fingerprint as u8)
                    + table.count_in(probe.second, probe.fingerprint as u8);
                assert_eq!(count, naive.count(victim));
                assert_eq!(table.contains(&probe), count > 0);
                assert_eq!(table.remove(&probe), naive.delete(victim));
                assert_eq!(table.as_bytes(), naive.data, "after delete {i}");
            }
        }
        assert!(
            refused > 0,
            "{bucket_size}x{buckets}: the table never filled"
        );
        assert_eq!(table.len(), naive.data.iter().filter(|&&b| b != 0).count());
    }
}

/// A small xorshift for slot contents.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly a few values, so that buckets hold repeats, zeros and
            // the bytes SWAR gets wrong first (0x80, 0xff, 0x01).
            [0u8, 0, 1, 0x7f, 0x80, 0xff, 0x81, (state >> 32) as u8][(state % 8) as usize]
        })
        .collect()
}

#[test]
fn every_bucket_search_finds_the_lowest_match_up_to_the_table_s_last_byte() {
    let sizes = (1u32..=20).chain([31, 32, 33, 64, 255]);
    for bucket_size in sizes {
        for buckets in [1usize, 2, 3, 5] {
            let mut table = ByteTable::new(bucket_size, buckets).unwrap();
            let data = bytes(u64::from(bucket_size) * 31 + buckets as u64, table.slots());
            table.as_bytes_mut().copy_from_slice(&data);
            for bucket in 0..buckets {
                let slots = &data[bucket * bucket_size as usize..][..bucket_size as usize];
                for value in [0u8, 1, 0x7f, 0x80, 0x81, 0xfe, 0xff, slots[0]] {
                    let lowest = slots.iter().position(|&s| s == value).map(|i| i as u32);
                    let what = format!("{bucket_size}x{buckets} bucket {bucket} value {value}");
                    assert_eq!(table.find(bucket, value), lowest, "{what}");
                    if value == 0 {
                        assert_eq!(table.find_free(bucket), lowest, "{what}");
                    }
                    let count = slots.iter().filter(|&&s| s == value).count();
                    assert_eq!(table.count_in(bucket, value), count, "{what}");
                }
                for index in 0..bucket_size {
                    assert_eq!(table.slot(bucket, index), slots[index as usize]);
                }
                table.prefetch(bucket);
            }
            table.prefetch(buckets);
            assert_eq!(table.as_bytes(), data, "{bucket_size}x{buckets}");
        }
    }
}

#[test]
fn a_byte_table_takes_its_slots_and_sixteen_bytes() {
    #[cfg(target_pointer_width = "64")]
    assert_eq!(std::mem::size_of::<ByteTable>(), 16);
    #[cfg(target_pointer_width = "64")]
    assert_eq!(std::mem::size_of::<Option<ByteTable>>(), 16);
    for (bucket_size, buckets) in [(1, 1), (1, 2), (2, 4), (3, 7), (255, 2), (2, 512)] {
        let table = ByteTable::new(bucket_size, buckets).unwrap();
        assert_eq!(table.memory_bytes(), bucket_size as usize * buckets);
        assert_eq!(table.slots(), bucket_size as usize * buckets);
        assert_eq!(
            (table.bucket_slots(), table.buckets()),
            (bucket_size, buckets)
        );
        assert!(table.is_empty());
    }
    let mut table = ByteTable::new(255, 3).unwrap();
    table.set_slot(2, 254, 9);
    assert_eq!(table.as_bytes()[3 * 255 - 1], 9);
    let copy = table.try_clone().unwrap();
    assert_eq!(copy, table);
    assert_eq!(copy.len(), 1);
    table.set_slot(2, 254, 0);
    assert_ne!(copy, table);
}

#[test]
fn shapes_no_table_can_have_are_errors() {
    let invalid =
        |result: Result<ByteTable, Error>| matches!(result, Err(Error::InvalidField { .. }));
    assert!(invalid(ByteTable::new(0, 4)));
    assert!(invalid(ByteTable::new(256, 4)));
    assert!(invalid(ByteTable::new(2, 0)));
    let overflow =
        |result: Result<ByteTable, Error>| matches!(result, Err(Error::LengthOverflow { .. }));
    assert!(overflow(ByteTable::new(255, usize::MAX)));
    #[cfg(target_pointer_width = "64")]
    {
        assert!(overflow(ByteTable::new(
            1,
            MAX_BYTE_TABLE_BUCKETS as usize + 1
        )));
        // 2^55 bytes: more than any allocator gives.
        assert!(matches!(
            ByteTable::new(1, 1 << 55),
            Err(Error::AllocationFailed { bytes }) if bytes == 1 << 55
        ));
    }
}
