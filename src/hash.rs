//! The default hasher, seeding, and the derivation of every probe position
//! from one 64-bit hash.

use std::hash::BuildHasher;

use crate::{Error, WyHash};

/// The default [`BuildHasher`] of every filter: wyhash with a 64-bit seed.
///
/// [`DefaultHasher::random`] seeds it from the operating system's entropy
/// source, so an attacker cannot predict which bits an item sets and poison
/// the filter. [`DefaultHasher::with_seed`] gives reproducible filters, which
/// is what two filters need to be combined with `union`.
///
/// # Example
///
/// ```
/// use std::hash::BuildHasher;
/// use atomic_bloom::DefaultHasher;
///
/// let a = DefaultHasher::with_seed(7);
/// let b = DefaultHasher::with_seed(7);
/// assert_eq!(a.hash_one("url"), b.hash_one("url"));
/// assert_eq!(a.seed(), 7);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DefaultHasher {
    seed: u64,
}

impl DefaultHasher {
    /// A hasher with a fixed seed: the same items set the same bits in every
    /// process and on every platform.
    pub const fn with_seed(seed: u64) -> Self {
        DefaultHasher { seed }
    }

    /// A hasher seeded from the operating system's entropy source.
    ///
    /// # Errors
    ///
    /// [`Error::SeedUnavailable`] if the entropy source fails (rare: very
    /// early boot, or a sandbox that forbids `getrandom`). Use
    /// [`DefaultHasher::with_seed`] there.
    ///
    /// # Example
    ///
    /// ```
    /// let hasher = atomic_bloom::DefaultHasher::random()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn random() -> Result<Self, Error> {
        getrandom::u64()
            .map(Self::with_seed)
            .map_err(|e| Error::SeedUnavailable {
                reason: e.to_string(),
            })
    }

    /// The seed this hasher was built with.
    pub const fn seed(&self) -> u64 {
        self.seed
    }
}

/// A number two calls, in this process or another, are unlikely to share:
/// the operating system's entropy, or where that fails the clock's
/// nanoseconds mixed with the process id. Names temporary files; never a
/// filter's seed.
pub(crate) fn unlikely_to_repeat() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        since_epoch.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32)
    })
}

/// Prints no seed: a random seed is what keeps the filter's positions
/// unpredictable, and `Debug` output ends up in logs.
impl std::fmt::Debug for DefaultHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DefaultHasher { seed: <hidden> }")
    }
}

impl BuildHasher for DefaultHasher {
    type Hasher = WyHash;

    #[inline]
    fn build_hasher(&self) -> WyHash {
        WyHash::with_seed(self.seed)
    }
}

/// Multiplies as 128 bits and folds the halves (wyhash's `mum`): every output
/// bit depends on every input bit, so fields cut from the result are
/// independent of the low bits that chose the block.
#[inline(always)]
fn fold_multiply(value: u64, constant: u64) -> u64 {
    let product = (value as u128).wrapping_mul(constant as u128);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Two 64-bit words of bit-position material derived from one item hash.
#[inline(always)]
pub(crate) fn position_words(hash: u64) -> (u64, u64) {
    (
        fold_multiply(hash ^ 0xa076_1d64_78bd_642f, 0xe703_7ed1_a0b4_28db),
        fold_multiply(hash ^ 0x8ebc_6af0_9c88_c6e3, 0x5899_65cc_7537_4cc3),
    )
}

/// The next 64-bit word of bit-position material after `previous`, for
/// layouts that need more than [`position_words`] gives.
#[inline(always)]
pub(crate) fn more_material(previous: u64) -> u64 {
    fold_multiply(previous ^ 0x1d8e_4e27_c47d_124f, 0xa076_1d64_78bd_642f)
}

/// Bits taken per position: one of 64 bits in a word.
pub(crate) const POSITION_BITS: u32 = 6;

/// Positions one 64-bit word of material yields after its low 4 bits (which
/// pick a word inside the block) are skipped.
pub(crate) const POSITIONS_PER_WORD: u32 = (64 - 4) / POSITION_BITS;

/// A mask with up to `count` bits (fewer where positions collide), each at
/// a position taken from the next 6-bit field of `first >> 4`, then of
/// `second >> 4` once `first` has given its ten.
#[inline(always)]
pub(crate) fn bit_mask(first: u64, second: u64, count: u32) -> u64 {
    let mut mask = field_mask(first, count.min(POSITIONS_PER_WORD));
    if count > POSITIONS_PER_WORD {
        mask |= field_mask(second, count - POSITIONS_PER_WORD);
    }
    mask
}

/// Two masks of `count` bits each, from `first` and `second`, built in one
/// loop so the two chains of shifts overlap.
#[inline(always)]
pub(crate) fn bit_mask_pair(first: u64, second: u64, count: u32) -> (u64, u64) {
    let (mut first_fields, mut second_fields) = (first >> 4, second >> 4);
    let (mut first_mask, mut second_mask) = (0u64, 0u64);
    for _ in 0..count {
        first_mask |= 1u64 << (first_fields & 63);
        second_mask |= 1u64 << (second_fields & 63);
        first_fields >>= POSITION_BITS;
        second_fields >>= POSITION_BITS;
    }
    (first_mask, second_mask)
}

#[inline(always)]
fn field_mask(material: u64, count: u32) -> u64 {
    let mut fields = material >> 4;
    let mut mask = 0u64;
    for _ in 0..count {
        mask |= 1u64 << (fields & 63);
        fields >>= POSITION_BITS;
    }
    mask
}
