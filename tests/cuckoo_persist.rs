//! Saving and loading `CuckooFilter`: round trips, and every kind of bad
//! input its own error (FORMAT.md, "CuckooFilter (kind 6)").

mod common;

use atomic_bloom::{BloomFilter, CuckooFilter, Error};
use common::saved::{body_start, reseal};

fn bytes_of(filter: &CuckooFilter<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    filter.write_to(&mut out).unwrap();
    out
}

fn read(bytes: &[u8]) -> Result<CuckooFilter<u64>, Error> {
    CuckooFilter::read_from(bytes)
}

/// A small filter without growth, some items in: 10 slots of 12 bits a
/// bucket, 4 buckets (one line).
fn small() -> CuckooFilter<u64> {
    let filter = CuckooFilter::builder(20, 0.01).seed(3).build().unwrap();
    for item in 0..15u64 {
        filter.insert(&item).unwrap();
    }
    filter
}

// Offsets in a saved filter's body (FORMAT.md).
fn rate_at() -> usize {
    body_start()
}
fn growth_at() -> usize {
    body_start() + 8
}
fn stages_at() -> usize {
    body_start() + 17
}
fn slot_bits_at() -> usize {
    body_start() + 25
}
fn buckets_at() -> usize {
    body_start() + 27
}
fn stage_rate_at() -> usize {
    body_start() + 35
}
fn slots_at() -> usize {
    body_start() + 43
}

fn with(bytes: &[u8], at: usize, field: &[u8]) -> Vec<u8> {
    let mut changed = bytes.to_vec();
    changed[at..at + field.len()].copy_from_slice(field);
    reseal(&mut changed);
    changed
}

#[test]
fn a_round_trip_answers_counts_and_removes_as_before() {
    let filter = small();
    filter.insert(&3).unwrap();
    let loaded = read(&bytes_of(&filter)).unwrap();
    assert_eq!(loaded, filter);
    assert_eq!(loaded.len(), 16);
    assert_eq!(loaded.count(&3), 2);
    assert!((0..15u64).all(|item| loaded.contains(&item)));
    assert!(loaded.remove(&3) && loaded.remove(&3) && !loaded.remove(&3));
    assert_eq!(format!("{loaded:?}"), format!("{filter:?}"));

    let growing: CuckooFilter<u64> = CuckooFilter::builder(100, 0.001)
        .seed(9)
        .growth(true)
        .build()
        .unwrap();
    for item in 0..2_000u64 {
        growing.insert(&item).unwrap();
    }
    assert!(growing.stages() > 2);
    let loaded = read(&bytes_of(&growing)).unwrap();
    assert_eq!(loaded, growing);
    assert_eq!(loaded.stages(), growing.stages());
    for item in 2_000..10_000u64 {
        loaded.insert(&item).unwrap();
    }
    assert!((0..10_000u64).all(|item| loaded.contains(&item)));
    assert_eq!(
        bytes_of(&read(&bytes_of(&loaded)).unwrap()),
        bytes_of(&loaded)
    );
}

#[test]
fn each_bad_field_gets_its_own_error() {
    let good = bytes_of(&small());
    assert!(read(&good).is_ok());
    for rate in [0.0, 1.0, f64::NAN, -1.0] {
        let bytes = with(&good, rate_at(), &rate.to_le_bytes());
        assert!(
            matches!(read(&bytes), Err(Error::InvalidStoredRate { .. })),
            "{rate}"
        );
    }
    let bytes = with(&good, growth_at(), &[2]);
    assert!(matches!(
        read(&bytes),
        Err(Error::InvalidField {
            field: "cuckoo growth",
            ..
        })
    ));
    let bytes = with(&good, stages_at(), &0u64.to_le_bytes());
    assert_eq!(read(&bytes).unwrap_err(), Error::ZeroStages);
    let bytes = with(&good, stages_at(), &2u64.to_le_bytes());
    assert!(matches!(
        read(&bytes),
        Err(Error::InvalidField {
            field: "cuckoo stage count",
            ..
        })
    ));
    for packing in [[13u8, 10], [12, 4], [0, 0], [8, 255], [16, 3]] {
        let bytes = with(&good, slot_bits_at(), &packing);
        assert!(
            matches!(read(&bytes), Err(Error::InvalidField { .. })),
            "{packing:?}: {:?}",
            read(&bytes)
        );
    }
    let bytes = with(&good, buckets_at(), &0u64.to_le_bytes());
    assert!(matches!(
        read(&bytes),
        Err(Error::InvalidField {
            field: "cuckoo buckets",
            ..
        })
    ));
    let bytes = with(&good, buckets_at(), &u64::MAX.to_le_bytes());
    assert!(
        matches!(read(&bytes), Err(Error::LengthOverflow { .. })),
        "{:?}",
        read(&bytes)
    );
    let bytes = with(&good, stage_rate_at(), &0.02f64.to_le_bytes());
    assert!(matches!(read(&bytes), Err(Error::InvalidStoredRate { .. })));
    // A reserved slot (all ones), and a bit in a word's spare top four.
    let bytes = with(&good, slots_at(), &[0xff, 0x0f]);
    assert!(matches!(
        read(&bytes),
        Err(Error::InvalidField {
            field: "cuckoo word with a reserved slot",
            ..
        })
    ));
    let bytes = with(&good, slots_at() + 7, &[0x10 | good[slots_at() + 7]]);
    assert!(matches!(
        read(&bytes),
        Err(Error::InvalidField {
            field: "cuckoo word with bits outside its slots",
            ..
        })
    ));
    // A word past the last slot: the library fills the line with buckets
    // (4 of 2 words), so the file is made to say 3 buckets, words 6 and 7
    // of the line (the fourth bucket) empty and the count that of the
    // first three; it loads, and a bit in word 6 is refused.
    let mut three = good.clone();
    three[buckets_at()..buckets_at() + 8].copy_from_slice(&3u64.to_le_bytes());
    three[slots_at() + 6 * 8..slots_at() + 8 * 8].fill(0);
    let held = (0..6)
        .map(|word| {
            let at = slots_at() + word * 8;
            let bits = u64::from_le_bytes(three[at..at + 8].try_into().unwrap());
            (0..5)
                .filter(|lane| bits >> (12 * lane) & 0xfff != 0)
                .count() as u64
        })
        .sum::<u64>();
    let count_at = slots_at() + 64 + 4;
    three[count_at..count_at + 8].copy_from_slice(&held.to_le_bytes());
    reseal(&mut three);
    let loaded = read(&three).unwrap();
    assert_eq!((loaded.len() as u64, loaded.capacity()), (held, 29));
    let bytes = with(&three, slots_at() + 6 * 8, &[1]);
    assert!(matches!(
        read(&bytes),
        Err(Error::InvalidField {
            field: "cuckoo word with bits outside its slots",
            ..
        })
    ));
    // The stored fingerprint count, after the line and its checksum.
    let count_at = slots_at() + 64 + 4;
    assert_eq!(
        u64::from_le_bytes(good[count_at..count_at + 8].try_into().unwrap()),
        15
    );
    let bytes = with(&good, count_at, &14u64.to_le_bytes());
    assert!(matches!(
        read(&bytes),
        Err(Error::CountMismatch {
            field: "fingerprints",
            ..
        })
    ));
}

#[test]
fn every_cut_and_every_flipped_bit_is_an_error() {
    let good = bytes_of(&small());
    for cut in 0..good.len() {
        assert!(
            matches!(read(&good[..cut]), Err(Error::Truncated { .. })),
            "cut at {cut}"
        );
    }
    for byte in 0..good.len() {
        for bit in 0..8 {
            let mut bytes = good.clone();
            bytes[byte] ^= 1 << bit;
            assert!(read(&bytes).is_err(), "flip of bit {bit} of byte {byte}");
        }
    }
}

#[test]
fn a_claim_of_a_huge_table_fails_having_allocated_what_the_input_holds() {
    let good = bytes_of(&small());
    // 2^40 buckets of 10 slots: 2.6 TB claimed, 100 bytes given.
    let bytes = with(&good, buckets_at(), &(1u64 << 40).to_le_bytes());
    assert!(
        matches!(read(&bytes), Err(Error::Truncated { .. })),
        "{:?}",
        read(&bytes)
    );
}

#[test]
fn other_kinds_are_refused_both_ways() {
    let bloom: BloomFilter<u64> = BloomFilter::new(100, 0.01).unwrap();
    let mut bytes = Vec::new();
    bloom.write_to(&mut bytes).unwrap();
    assert!(matches!(
        read(&bytes),
        Err(Error::WrongKind {
            found: "BloomFilter",
            ..
        })
    ));
    let cuckoo = bytes_of(&small());
    assert!(matches!(
        BloomFilter::<u64>::read_from(cuckoo.as_slice()),
        Err(Error::WrongKind {
            found: "CuckooFilter",
            ..
        })
    ));
}

#[test]
fn save_and_load_a_file() {
    let path = std::env::temp_dir().join(format!("cuckoo-persist-{}.bin", std::process::id()));
    let filter = small();
    filter.save(&path).unwrap();
    assert_eq!(CuckooFilter::<u64>::load(&path).unwrap(), filter);
    std::fs::remove_file(&path).unwrap();
}

/// A save while other threads insert and remove writes a file that loads:
/// the fingerprint count of each stage is the count of the slots written,
/// not a second look at slots that changed meanwhile.
#[test]
fn a_save_racing_inserts_and_removes_loads() {
    let filter: CuckooFilter<u64> = CuckooFilter::builder(200_000, 0.01)
        .seed(4)
        .build()
        .unwrap();
    for item in 0..100_000u64 {
        filter.insert(&item).unwrap();
    }
    let saving = std::sync::atomic::AtomicBool::new(true);
    let refused = std::thread::scope(|scope| {
        for thread in 0..2u64 {
            let (filter, saving) = (&filter, &saving);
            scope.spawn(move || {
                let mut next = (thread + 1) << 40;
                while saving.load(std::sync::atomic::Ordering::Relaxed) {
                    for item in next..next + 64 {
                        filter.insert(&item).unwrap();
                    }
                    for item in next..next + 64 {
                        assert!(filter.remove(&item));
                    }
                    next += 64;
                }
            });
        }
        let refused: Vec<String> = (0..100)
            .filter_map(|_| read(&bytes_of(&filter)).err().map(|e| e.to_string()))
            .collect();
        saving.store(false, std::sync::atomic::Ordering::Relaxed);
        refused
    });
    assert!(
        refused.is_empty(),
        "{} of 100 saves did not load, the first: {}",
        refused.len(),
        refused[0]
    );
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trips_and_validates() {
    let filter = small();
    let json = serde_json::to_string(&filter).unwrap();
    let loaded: CuckooFilter<u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(loaded, filter);
    let mut values: Vec<u8> = serde_json::from_str(&json).unwrap();
    values[40] ^= 1;
    let error = serde_json::from_str::<CuckooFilter<u64>>(&serde_json::to_string(&values).unwrap())
        .unwrap_err();
    assert!(error.to_string().contains("corrupt"), "{error}");
}

/// Found by the fuzzer (cuckoo_read_from): a growing filter whose stored
/// first capacity does not back its stages planned a next stage from it,
/// and its first growth asked the allocator for 3 TB. Such a file is
/// refused: every stage must be the one the growth options give its index.
#[test]
fn growth_options_that_do_not_back_the_stages_are_refused() {
    let growing: CuckooFilter<u64> = CuckooFilter::builder(100, 0.01)
        .seed(2)
        .growth(true)
        .build()
        .unwrap();
    for item in 0..300u64 {
        growing.insert(&item).unwrap();
    }
    assert!(growing.stages() > 1);
    let good = bytes_of(&growing);
    assert!(read(&good).is_ok());
    let first_capacity_at = body_start() + 9;
    for claimed in [1u64 << 40, 150, 50, 0] {
        let bytes = with(&good, first_capacity_at, &claimed.to_le_bytes());
        assert!(
            matches!(read(&bytes), Err(Error::InvalidField { .. })),
            "first capacity {claimed}: {:?}",
            read(&bytes).map(|f| f.capacity())
        );
    }
    // Without growth the field is 0.
    let plain = bytes_of(&small());
    let bytes = with(&plain, first_capacity_at, &7u64.to_le_bytes());
    assert!(matches!(read(&bytes), Err(Error::InvalidField { .. })));
}
