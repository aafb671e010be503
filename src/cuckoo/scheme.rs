//! Schemes: how an item's hash becomes a fingerprint and two buckets. The
//! library's own ([`Native`]) and RedisBloom's ([`RedisBloom`]).

/// How an item's 64-bit hash becomes a fingerprint and its two buckets,
/// for a table of `buckets` buckets of `slot_bits`-bit slots.
///
/// The contract a scheme keeps (the table relies on it, and no check can
/// catch a scheme that breaks it):
///
/// * [`fingerprint`](Scheme::fingerprint) is never 0 (0 is an empty slot)
///   and fits in the table's slot width;
/// * [`alternate`](Scheme::alternate) is an involution for each
///   fingerprint: `alternate(alternate(b, fp), fp) == b`, and both are
///   below `buckets`: a fingerprint is moved between the two buckets of
///   its item knowing only where it is and what it is;
/// * where [`RESERVES_ALL_ONES`](Scheme::RESERVES_ALL_ONES) is true,
///   [`fingerprint`](Scheme::fingerprint) never returns the all-ones slot
///   value, which the concurrent relocation uses to reserve a slot.
pub trait Scheme {
    /// Whether fingerprints leave the all-ones slot value free: only then
    /// can [`Table::relocate`](super::core::Table::relocate) (the concurrent
    /// relocation) serve the scheme.
    const RESERVES_ALL_ONES: bool;

    /// The fingerprint of `hash`, in `1..2^slot_bits` (and not all ones
    /// where [`RESERVES_ALL_ONES`](Scheme::RESERVES_ALL_ONES)).
    fn fingerprint(&self, hash: u64, slot_bits: u32) -> u64;

    /// The first bucket of `hash`, below `buckets`.
    fn index(&self, hash: u64, buckets: usize) -> usize;

    /// The other bucket of `fingerprint` when it sits in `bucket`.
    fn alternate(&self, bucket: usize, fingerprint: u64, buckets: usize) -> usize;
}

/// An item's fingerprint and its two buckets (equal when the scheme maps
/// both to one bucket).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The fingerprint: never 0.
    pub fingerprint: u64,
    /// The bucket looked in first.
    pub first: usize,
    /// The other bucket.
    pub second: usize,
}

impl Probe {
    /// `hash`'s probe under `scheme` in a table of `buckets` buckets of
    /// `slot_bits`-bit slots.
    #[inline(always)]
    pub fn new<S: Scheme>(scheme: &S, hash: u64, slot_bits: u32, buckets: usize) -> Self {
        let fingerprint = scheme.fingerprint(hash, slot_bits);
        let first = scheme.index(hash, buckets);
        let second = scheme.alternate(first, fingerprint, buckets);
        Probe {
            fingerprint,
            first,
            second,
        }
    }
}

/// `x` mapped onto `0..n` by multiply-shift (the high half of `x · n`):
/// never a `%`.
#[inline(always)]
fn reduce(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// The library's scheme, for any bucket count (never a `%`).
///
/// From the item hash `h`, two words `(a, b)` of position material
/// (`hash::position_words`): the first bucket is `a` mapped onto the
/// buckets by multiply-shift, the fingerprint `b` mapped onto
/// `1..=2^w - 2` (0 is empty, all ones is the relocation's reservation).
/// The alternate bucket of fingerprint `f` in bucket `i` is
/// `(H(f) - i) mod n`, with `H(f)` a mix of `f` mapped onto the `n`
/// buckets: an involution for every `n`, computed with one compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Native;

impl Scheme for Native {
    const RESERVES_ALL_ONES: bool = true;

    #[inline(always)]
    fn fingerprint(&self, hash: u64, slot_bits: u32) -> u64 {
        let (_, material) = crate::hash::position_words(hash);
        1 + reduce(material, (1u64 << slot_bits) - 2)
    }

    #[inline(always)]
    fn index(&self, hash: u64, buckets: usize) -> usize {
        let (material, _) = crate::hash::position_words(hash);
        reduce(material, buckets as u64) as usize
    }

    #[inline(always)]
    fn alternate(&self, bucket: usize, fingerprint: u64, buckets: usize) -> usize {
        let mixed = crate::hash::more_material(fingerprint);
        let pivot = reduce(mixed, buckets as u64) as usize;
        if pivot >= bucket {
            pivot - bucket
        } else {
            pivot + buckets - bucket
        }
    }
}

/// RedisBloom's cuckoo scheme (its `src/cuckoo.c`), for 8-bit slots:
/// fingerprint `h % 255 + 1`, first bucket `h % n`, alternate bucket
/// `(i ^ (f · 0x5bd1e995)) % n`. The hash `h` is MurmurHash64A of the item
/// with seed 0, which the caller computes.
///
/// RedisBloom sizes every sub-filter to a power of two of buckets, where
/// its lookups' `(h ^ (f · 0x5bd1e995)) % n` equals this alternate of
/// `h % n`; for other bucket counts the two differ, so load only powers of
/// two. All 255 fingerprint values are in use: the concurrent
/// [`Table::relocate`](super::core::Table::relocate) does not serve this scheme;
/// [`ByteTable::kick_out`](super::core::ByteTable::kick_out) (RedisBloom's
/// own single-threaded relocation) does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RedisBloom;

/// RedisBloom's alternate-bucket multiplier (MurmurHash2's `m`).
const REDISBLOOM_ALT_MULTIPLIER: u64 = 0x5bd1_e995;

impl Scheme for RedisBloom {
    const RESERVES_ALL_ONES: bool = false;

    #[inline(always)]
    fn fingerprint(&self, hash: u64, _slot_bits: u32) -> u64 {
        hash % 255 + 1
    }

    #[inline(always)]
    fn index(&self, hash: u64, buckets: usize) -> usize {
        (hash % buckets as u64) as usize
    }

    #[inline(always)]
    fn alternate(&self, bucket: usize, fingerprint: u64, buckets: usize) -> usize {
        ((bucket as u64 ^ fingerprint.wrapping_mul(REDISBLOOM_ALT_MULTIPLIER)) % buckets as u64)
            as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_alternate_is_an_involution_for_any_bucket_count() {
        for buckets in [1usize, 2, 3, 7, 100, 1001, 65_536] {
            for hash in 0..2_000u64 {
                let probe = Probe::new(
                    &Native,
                    hash.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    12,
                    buckets,
                );
                assert!(probe.first < buckets && probe.second < buckets);
                assert_eq!(
                    Native.alternate(probe.second, probe.fingerprint, buckets),
                    probe.first
                );
                assert!(probe.fingerprint >= 1 && probe.fingerprint < (1 << 12) - 1);
            }
        }
    }

    #[test]
    fn redisbloom_alternate_matches_its_lookup_for_powers_of_two() {
        for buckets in [1usize, 2, 64, 1 << 20] {
            for hash in [0u64, 1, 254, 255, u64::MAX, 0xdead_beef_0bad_f00d] {
                let probe = Probe::new(&RedisBloom, hash, 8, buckets);
                let fp = hash % 255 + 1;
                assert_eq!(probe.fingerprint, fp);
                // RedisBloom's lookup: h2 = h ^ (fp * 0x5bd1e995), then % n.
                let h2 = hash ^ (fp * 0x5bd1_e995);
                assert_eq!(probe.second as u64, h2 % buckets as u64);
                assert_eq!(RedisBloom.alternate(probe.second, fp, buckets), probe.first);
            }
        }
    }
}
