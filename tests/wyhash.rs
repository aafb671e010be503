//! `atomic_bloom::WyHash` (ported to drop the `wyhash` crate's `rand_core`)
//! against the `wyhash` crate 0.6's `WyHash`, bit for bit: every saved
//! filter's bits come from these hashes.

use std::hash::{BuildHasher, Hash, Hasher};

use atomic_bloom::{DefaultHasher, WyHash};
use proptest::prelude::*;

fn ours(seed: u64, writes: &[Vec<u8>]) -> u64 {
    let mut hasher = WyHash::with_seed(seed);
    for bytes in writes {
        hasher.write(bytes);
    }
    hasher.finish()
}

fn theirs(seed: u64, writes: &[Vec<u8>]) -> u64 {
    let mut hasher = wyhash::WyHash::with_seed(seed);
    for bytes in writes {
        hasher.write(bytes);
    }
    hasher.finish()
}

/// Every length from 0 to 200 (each remainder of a 32-byte chunk, several
/// chunks), every byte value in play, a few seeds.
#[test]
fn every_length_and_seed_hashes_alike() {
    for seed in [0, 1, 7, 42, u64::MAX, 0xa076_1d64_78bd_642f] {
        for len in 0..=200usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 131 + len * 7 + 3) as u8).collect();
            let writes = [bytes];
            assert_eq!(
                ours(seed, &writes),
                theirs(seed, &writes),
                "seed {seed}, length {len}"
            );
        }
    }
}

/// What a filter hashes: integers, strings, byte slices, tuples, through
/// the `DefaultHasher`.
#[test]
fn the_items_a_filter_hashes_hash_alike() {
    fn both<T: Hash + ?Sized>(seed: u64, item: &T) {
        let ours = DefaultHasher::with_seed(seed).hash_one(item);
        let theirs = wyhash::WyHasherBuilder::new(seed).hash_one(item);
        assert_eq!(ours, theirs);
    }
    for seed in 0..20u64 {
        for i in 0..1_000u64 {
            both(seed, &i);
            both(seed, &(i as u32));
            both(
                seed,
                format!("https://host{}.example/page/{i}", i % 7).as_str(),
            );
            both(seed, &format!("{i}").into_bytes()[..]);
            both(seed, &(i, "x", [i as u8; 3]));
        }
        both(seed, "");
        both(seed, &[0u8; 0][..]);
    }
}

proptest! {
    #[test]
    fn any_writes_hash_alike(seed in any::<u64>(), writes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..100), 0..6)) {
        prop_assert_eq!(ours(seed, &writes), theirs(seed, &writes));
    }
}
