//! Unit tests of the cuckoo core (against naive references) and of the
//! filter's contract.

use super::core::{Native, Probe, RedisBloom, Scheme, Shape, Table};
use super::naive::{hashes, NaiveSubFilter};
use super::CuckooFilter;
use crate::Error;

/// The 8-bit slots of `table`, bucket by bucket: the byte array of
/// [`NaiveSubFilter`].
fn slots_of(table: &Table) -> Vec<u8> {
    let shape = table.shape();
    (0..shape.buckets())
        .flat_map(|bucket| (0..shape.bucket_slots()).map(move |index| (bucket, index)))
        .map(|(bucket, index)| table.slot(bucket, index) as u8)
        .collect()
}

#[test]
fn inserts_and_removes_take_the_lowest_slot_as_a_byte_array_reference_does() {
    for (bucket_size, buckets) in [(1u32, 64u64), (2, 128), (3, 32), (4, 16), (7, 8), (255, 2)] {
        let table = Table::new(Shape::new(8, bucket_size, buckets as usize).unwrap()).unwrap();
        let mut naive = NaiveSubFilter::new(bucket_size as usize, buckets);
        let items: Vec<u64> = hashes(u64::from(bucket_size))
            .take(2 * bucket_size as usize * buckets as usize + 40)
            .collect();
        let mut refused = 0;
        for (i, &hash) in items.iter().enumerate() {
            let probe = table.probe(&RedisBloom, hash);
            let inserted = table.insert_free(&probe);
            assert_eq!(
                inserted,
                naive.insert_free(hash),
                "insert {i} of {bucket_size}x{buckets}"
            );
            refused += usize::from(!inserted);
            assert_eq!(slots_of(&table), naive.data, "after insert {i}");
            if i % 3 == 0 {
                let victim = items[i / 2];
                let probe = table.probe(&RedisBloom, victim);
                let count = table.count_in(probe.first, probe.fingerprint)
                    + table.count_in(probe.second, probe.fingerprint);
                assert_eq!(count, naive.count(victim));
                assert_eq!(table.remove(&probe), naive.delete(victim));
                assert_eq!(slots_of(&table), naive.data, "after delete {i}");
            }
        }
        assert!(
            refused > 0,
            "{bucket_size}x{buckets}: the table never filled"
        );
        assert!(!table.is_empty());
    }
}

#[test]
fn every_slot_width_finds_and_removes_what_it_holds() {
    for (bits, slots) in [
        (8u32, 8u32),
        (8, 3),
        (10, 12),
        (12, 5),
        (12, 10),
        (16, 4),
        (16, 8),
        (21, 3),
        (32, 2),
        (32, 4),
        (16, 5),
    ] {
        let table = Table::new(Shape::new(bits, slots, 97).unwrap()).unwrap();
        let items: Vec<u64> = hashes(u64::from(bits * slots))
            .take(97 * slots as usize / 2)
            .collect();
        for &hash in &items {
            let probe = table.probe(&Native, hash);
            assert!(
                table.insert_free(&probe) || table.relocate(&Native, &probe),
                "{bits}x{slots}"
            );
        }
        assert_eq!(table.len(), items.len(), "{bits}x{slots}");
        for &hash in &items {
            assert!(
                table.contains(&table.probe(&Native, hash)),
                "{bits}x{slots}"
            );
        }
        for &hash in &items {
            assert!(table.remove(&table.probe(&Native, hash)), "{bits}x{slots}");
        }
        assert!(table.is_empty(), "{bits}x{slots}");
    }
}

#[test]
fn a_full_table_refuses_and_keeps_every_fingerprint() {
    let table = Table::new(Shape::new(12, 5, 40).unwrap()).unwrap();
    let mut held = Vec::new();
    for hash in hashes(3) {
        let probe = table.probe(&Native, hash);
        if !(table.insert_free(&probe) || table.relocate(&Native, &probe)) {
            break;
        }
        held.push(hash);
    }
    let before: Vec<u64> = (0..40)
        .flat_map(|b| (0..5).map(move |s| (b, s)))
        .map(|(b, s)| table.slot(b, s))
        .collect();
    let mut refused = 0;
    for hash in hashes(99).take(200) {
        let probe = table.probe(&Native, hash);
        if !(table.insert_free(&probe) || table.relocate(&Native, &probe)) {
            refused += 1;
        } else {
            held.push(hash);
        }
    }
    assert!(refused > 0);
    assert!(held.len() > 180, "load {} of 200", held.len());
    for &hash in &held {
        assert!(table.contains(&table.probe(&Native, hash)));
    }
    let mut fingerprints_before: Vec<u64> = before.into_iter().filter(|&v| v != 0).collect();
    fingerprints_before.sort_unstable();
    assert!(fingerprints_before.len() <= held.len());
}

#[test]
fn shapes_out_of_range_are_errors() {
    assert!(matches!(
        Shape::new(1, 4, 4),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        Shape::new(33, 4, 4),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        Shape::new(8, 0, 4),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        Shape::new(8, 256, 4),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        Shape::new(12, 3, 4),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        Shape::new(8, 2, 0),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        Shape::new(8, 255, usize::MAX / 2),
        Err(Error::LengthOverflow { .. })
    ));
}

#[test]
fn a_full_filter_errs_and_loses_nothing() {
    let f: CuckooFilter<u64> = CuckooFilter::builder(1000, 0.01).seed(5).build().unwrap();
    let mut held = Vec::new();
    let mut failures = 0;
    for item in 0..(f.capacity() as u64 * 2) {
        match f.insert(&item) {
            Ok(()) => held.push(item),
            Err(Error::CuckooFilterFull { len, capacity }) => {
                assert_eq!((len, capacity), (held.len(), f.capacity()));
                failures += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert!(failures > 0);
    assert!(held.len() >= f.capacity());
    assert_eq!(f.len(), held.len());
    assert!(held.iter().all(|item| f.contains(item)));
}

#[test]
fn growth_keeps_every_item_and_the_total_rate() {
    let f: CuckooFilter<u64> = CuckooFilter::builder(1000, 0.01)
        .seed(5)
        .growth(true)
        .build()
        .unwrap();
    for item in 0..50_000u64 {
        f.insert(&item).unwrap();
    }
    assert!(f.stages() >= 5, "{}", f.stages());
    assert!((0..50_000u64).all(|item| f.contains(&item)));
    assert_eq!(f.len(), 50_000);
    let false_positives = (1u64 << 40..(1u64 << 40) + 200_000)
        .filter(|i| f.contains(i))
        .count();
    assert!(false_positives < 2_000, "{false_positives} of 200000");
    for item in 0..50_000u64 {
        assert!(f.remove(&item));
    }
    assert!(f.is_empty());
    f.clear();
    assert_eq!(f.stages(), 1);
}

/// An item inserted more times than its two buckets hold gets the full
/// error with growth too: its copies can only move between those buckets,
/// and a stage appended for one more copy doubles the memory (156 copies of
/// one item grew a 1M-item filter to 13 stages and 30 GB).
#[test]
fn with_growth_a_copy_past_its_buckets_gets_the_full_error() {
    let f: CuckooFilter<u64> = CuckooFilter::builder(1000, 0.01)
        .seed(5)
        .growth(true)
        .build()
        .unwrap();
    let probe = f.first_stage().table.probe(&Native, f.hash_item(&7));
    assert_ne!(probe.first, probe.second, "the test wants two buckets");
    let room = 2 * f.bucket_slots() as usize;
    for _ in 0..room {
        f.insert(&7).unwrap();
    }
    let past = f.insert(&7);
    assert!(
        matches!(past, Err(Error::CuckooFilterFull { .. })),
        "copy {} of 7: {past:?}, {} stages",
        room + 1,
        f.stages()
    );
    assert_eq!((f.stages(), f.count(&7), f.len()), (1, room, room));
    // Other items still grow it, and the item's copies then go to the
    // newest stage, up to its buckets there.
    for item in 100..20_000u64 {
        f.insert(&item).unwrap();
    }
    let stages = f.stages();
    assert!(stages > 1);
    let later = f.growth_state().unwrap().later.load();
    let newest = &later.last().unwrap().table;
    let probe = newest.probe(&Native, f.hash_item(&7));
    let buckets = if probe.first == probe.second { 1 } else { 2 };
    let room_there = buckets * newest.shape().bucket_slots() as usize - newest.count(&probe);
    let more = (0..3 * room).take_while(|_| f.insert(&7).is_ok()).count();
    assert_eq!((more, f.stages()), (room_there, stages));
    assert_eq!(f.count(&7), room + room_there);
}

#[test]
fn lookups_take_a_borrowed_form() {
    let f: CuckooFilter<String> = CuckooFilter::builder(100, 0.01).seed(1).build().unwrap();
    f.insert(&"url".to_string()).unwrap();
    f.insert("url").unwrap();
    assert_eq!(f.count("url"), 2);
    assert!(f.remove("url"));
    assert!(f.contains("url"));
    assert_eq!(f.count("url"), 1);
    assert_eq!(f.hash_item("url"), f.hash_item(&"url".to_string()));
    assert!(f.remove("url"));
}

#[test]
#[should_panic(expected = "CuckooFilter::extend: the cuckoo filter is full")]
fn extend_panics_when_full() {
    let mut f: CuckooFilter<u64> = CuckooFilter::builder(10, 0.01).seed(1).build().unwrap();
    f.extend(0..10_000u64);
}

#[test]
fn a_probe_is_a_scheme_function_of_the_hash() {
    let table = Table::new(Shape::new(12, 10, 1000).unwrap()).unwrap();
    let probe: Probe = table.probe(&Native, 42);
    assert_eq!(
        Native.alternate(probe.first, probe.fingerprint, 1000),
        probe.second
    );
}

#[test]
fn send_and_sync() {
    fn both<X: Send + Sync>() {}
    both::<CuckooFilter<str>>();
    both::<Table>();
}

#[test]
fn items_present_are_found_while_others_relocate() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let table = Table::new(Shape::new(12, 5, 200).unwrap()).unwrap();
    let stable: Vec<u64> = hashes(1).take(700).collect();
    for &hash in &stable {
        let probe = table.probe(&Native, hash);
        assert!(table.insert_free(&probe) || table.relocate(&Native, &probe));
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for seed in [2u64, 3] {
            let (table, done) = (&table, &done);
            scope.spawn(move || {
                for round in 0..300u64 {
                    let batch: Vec<u64> = hashes(seed * 1000 + round).take(250).collect();
                    let mut held = Vec::new();
                    for &hash in &batch {
                        let probe = table.probe(&Native, hash);
                        if table.insert_free(&probe) || table.relocate(&Native, &probe) {
                            held.push(hash);
                        }
                    }
                    for &hash in &held {
                        assert!(
                            table.remove(&table.probe(&Native, hash)),
                            "an inserted copy not removed"
                        );
                    }
                }
                done.store(true, Ordering::Relaxed);
            });
        }
        let (table, done, stable) = (&table, &done, &stable);
        scope.spawn(move || {
            while !done.load(Ordering::Relaxed) {
                for &hash in stable {
                    assert!(
                        table.contains(&table.probe(&Native, hash)),
                        "a present item missed"
                    );
                }
            }
        });
    });
    assert_eq!(table.len(), stable.len());
}
