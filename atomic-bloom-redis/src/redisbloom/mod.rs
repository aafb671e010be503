//! RedisBloom's own filters, served as RedisBloom serves them: a chain of
//! sub-filters ("links") with RedisBloom's hashing, bit layout and growth,
//! so that a filter that came from RedisBloom (its RDB, its `BF.SCANDUMP`
//! stream) answers every item exactly as RedisBloom would, keeps growing
//! as RedisBloom grows it, and saves back in RedisBloom's own encoding.
//! New filters are this module's own (`value.rs`), but for those a
//! RedisBloom stream (its AOF, a RedisBloom primary) creates when replayed
//! here: those are RedisBloom's, made as it makes them ([`Chain::new`]).
//!
//! The facts, from RedisBloom's sources (read, not copied: its licence is
//! RSALv2/SSPLv1/AGPLv3; its `deps/bloom` is BSD and MurmurHash2 public
//! domain):
//!
//! * An item hashes to `(a, b)`: MurmurHash2 with seed `0x9747b28c`, then
//!   with seed `a`; or, with the `FORCE64` option, MurmurHash64A with seed
//!   `0xc6a4a7935bd1e995`, then with seed `a`.
//! * Bit `i` of a link's `hashes` is `(a + i·b) mod m` in wrapping 64-bit
//!   arithmetic, with `m = 2^n2` (links made with power-of-two rounding)
//!   or the stored bit count (`n2 = 0`); bit `x` is bit `x % 8` of byte
//!   `x / 8`.
//! * An item is present if every bit is set in some link; an add checks
//!   every link first, then adds to the last, which, once it holds
//!   `entries` items, is followed by a new link of `entries · growth` items
//!   at half its error rate (unless `NONSCALING`).
//! * A link is sized as `bloom_init` sizes it: `bpe = -ln(error) / ln²2`,
//!   `hashes = ceil(ln 2 · bpe)`, bits from `entries · bpe` (kept, with
//!   `NOROUND`, or rounded up to a power of two), then to whole 64-bit
//!   words.

pub(crate) mod data_type;
mod murmur;
pub(crate) mod rdb;
mod stream;
pub(crate) mod unheld;

use murmur::murmur2;
pub(crate) use murmur::murmur64a;

/// Options of a chain (RedisBloom's `BLOOM_OPT_*`).
pub(crate) const NOROUND: u32 = 1;
pub(crate) const ENTS_IS_BITS: u32 = 2;
pub(crate) const FORCE64: u32 = 4;
pub(crate) const NO_SCALING: u32 = 8;
const KNOWN_OPTIONS: u32 = NOROUND | ENTS_IS_BITS | FORCE64 | NO_SCALING;

/// `ln 2`, as RedisBloom writes it: to 15 digits, not `std`'s, so that
/// `hashes` comes out as RedisBloom computes and checks it.
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;
/// `ln² 2`, likewise.
const LN2_SQUARED: f64 = 0.480453013918201;
/// A new link's error rate, against the last link's.
const TIGHTENING: f64 = 0.5;

/// Links a chain may have (RedisBloom sets none, but halves each new
/// link's rate, so its own growth stops at about 1,075 links, where the
/// rate underflows; only a crafted header has more). A header that claims
/// more is refused before anything is allocated, and an add that needs
/// link 4,097 is refused.
pub(crate) const MAX_LINKS: u64 = 4096;
/// Hashes a link may have: RedisBloom's own links have at most 1,074 (at
/// the smallest rate a double holds); a hostile header could claim 2^32
/// and make every lookup loop that long.
const MAX_HASHES: u32 = 2048;
/// Bytes a link may take: what a link of 2^30 items (RedisBloom's largest
/// capacity) times its growth could need is far below this.
const MAX_LINK_BYTES: u64 = 1 << 40;

/// Why a chain or a link was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChainError {
    /// Fields that RedisBloom would refuse, or that no RedisBloom wrote.
    Invalid(&'static str),
    /// A chain RedisBloom would hold, past this module's limits
    /// ([`MAX_LINKS`], [`MAX_HASHES`], [`MAX_LINK_BYTES`]): refused with
    /// an error where a client sends it, and held as no key where a load
    /// meets it (`data_type.rs`).
    PastLimits(&'static str),
    /// The allocator had no memory for the bits.
    OutOfMemory,
    /// The links' bits would pass the caller's byte cap
    /// (`bf-memory-limit-per-filter`).
    OverLimit,
}

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainError::Invalid(why) => write!(f, "invalid RedisBloom filter: {why}"),
            ChainError::PastLimits(why) => {
                write!(f, "a RedisBloom filter past this module's limits: {why}")
            }
            ChainError::OutOfMemory => f.write_str("no memory for a RedisBloom filter's bits"),
            ChainError::OverLimit => f.write_str("its bits would pass bf-memory-limit-per-filter"),
        }
    }
}

/// An item's two hashes.
#[derive(Clone, Copy, Debug)]
struct Hash {
    a: u64,
    b: u64,
}

/// One sub-filter of a chain: RedisBloom's `struct bloom` and its item
/// count.
pub(crate) struct Link {
    pub(crate) shape: Shape,
    /// Items added to this link.
    pub(crate) size: u64,
    /// `bits / 8` bytes.
    pub(crate) data: Box<[u8]>,
}

/// `bytes` zero bytes from the allocator's zeroed path (`calloc`: pages are
/// the kernel's until written).
pub(crate) fn zeroed(bytes: u64) -> Result<Box<[u8]>, ChainError> {
    if bytes == 0 {
        return Ok(Box::new([]));
    }
    let bytes = usize::try_from(bytes).map_err(|_| ChainError::OutOfMemory)?;
    let layout = std::alloc::Layout::array::<u8>(bytes).map_err(|_| ChainError::OutOfMemory)?;
    // Safety: a non-zero size.
    let first = unsafe { std::alloc::alloc_zeroed(layout) };
    if first.is_null() {
        return Err(ChainError::OutOfMemory);
    }
    // Safety: a fresh allocation of `bytes` zero bytes with the layout a
    // boxed `[u8]` of that length frees it with.
    Ok(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(first, bytes)) })
}

/// `floor(log2(x))` for a finite `x >= 1`, as C's `logb` gives it.
fn logb(x: f64) -> f64 {
    ((x.to_bits() >> 52) & 0x7ff) as f64 - 1023.0
}

/// The fields of a link but its item count and bits: read from an
/// encoding, or as `bloom_init` works them out from an item count, an error
/// rate and the chain's options ([`Shape::of`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shape {
    pub(crate) entries: u64,
    pub(crate) error: f64,
    pub(crate) hashes: u32,
    pub(crate) bpe: f64,
    pub(crate) bits: u64,
    pub(crate) n2: u8,
}

impl Shape {
    /// `bits / 8`: for a shape [`Shape::of`] made, whole 64-bit words.
    pub(crate) fn bytes(&self) -> u64 {
        self.bits / 8
    }

    /// The link RedisBloom's `bloom_init(entries, error, options)` makes,
    /// its arithmetic checked: an item count, bit count or bit exponent
    /// that overflows (RedisBloom's C wraps or shifts by 64) is refused,
    /// never a link of 0 bits or a modulus that is not its size.
    pub(crate) fn of(entries: u64, error: f64, options: u32) -> Result<Shape, ChainError> {
        let invalid = ChainError::Invalid("a link whose size cannot be worked out");
        if entries < 1 || !(error > 0.0 && error < 1.0) {
            return Err(ChainError::Invalid("capacity or error rate out of range"));
        }
        let bpe = -(error.ln() / LN2_SQUARED);
        let bpe = if bpe < 0.0 { -bpe } else { bpe };
        let (entries, bits, n2) = if options & ENTS_IS_BITS != 0 {
            // The count is a bit exponent: 2^n2 bits, n2 below 64.
            let n2 = u8::try_from(entries)
                .ok()
                .filter(|n2| *n2 < 64)
                .ok_or(invalid)?;
            let bits = 1u64 << n2;
            (((bits as f64) / bpe) as u64, bits, n2)
        } else if options & NOROUND != 0 {
            let wanted = entries as f64 * bpe;
            if wanted.is_nan() || wanted >= u64::MAX as f64 {
                return Err(invalid);
            }
            (entries, (wanted as u64).max(1), 0)
        } else {
            let wanted = entries as f64 * bpe;
            let exponent = logb(wanted);
            // The next power of two must be a u64: 2^63 at most.
            if !(0.0..63.0).contains(&exponent) {
                return Err(invalid);
            }
            let n2 = (exponent + 1.0) as u8;
            let bits = 1u64 << n2;
            let bit_diff = ((bits as f64) - wanted) as u64;
            let item_diff = ((bit_diff as f64) / bpe) as u64;
            (entries.checked_add(item_diff).ok_or(invalid)?, bits, n2)
        };
        // Whole words; a NOROUND size just under 2^64 rounds past it and
        // is refused (it overflowed here, a panic under overflow checks).
        let bits = bits
            .div_ceil(64)
            .checked_mul(64)
            .ok_or(ChainError::Invalid(
                "a link whose size cannot be worked out",
            ))?;
        Ok(Shape {
            entries,
            error,
            hashes: (LN2 * bpe).ceil() as u32,
            bpe,
            bits,
            n2,
        })
    }
}

impl Link {
    /// A new, empty link of `shape`, within this module's bounds.
    fn from_shape(shape: Shape) -> Result<Link, ChainError> {
        Link {
            shape,
            size: 0,
            data: Box::new([]),
        }
        .with_zeroed_bits(shape.bytes())
    }

    /// Checks a link's fields, for bits `data_bytes` long, as RedisBloom's
    /// `bloom_validate_integrity` does, and this module's bounds on hashes
    /// and bytes.
    fn validate_fields(&self, data_bytes: u64) -> Result<(), ChainError> {
        let shape = &self.shape;
        let n2_fits = shape.n2 == 0 || (shape.n2 <= 63 && shape.bits >= 1u64 << shape.n2);
        let valid = shape.error > 0.0
            && shape.error < 1.0
            && shape.n2 <= 63
            && n2_fits
            && shape.bits != 0
            && data_bytes.checked_mul(8) == Some(shape.bits)
            && f64::from(shape.hashes) == (LN2 * shape.bpe).ceil();
        if !valid {
            return Err(ChainError::Invalid("link fields RedisBloom would refuse"));
        }
        if shape.hashes > MAX_HASHES || data_bytes > MAX_LINK_BYTES {
            return Err(ChainError::PastLimits(
                "a link of more than 2,048 hashes or 2^40 bytes",
            ));
        }
        Ok(())
    }

    /// This link's fields (its `data` ignored), checked for bits
    /// `data_bytes` long, then given that many zero bytes: a link read from
    /// a header or an RDB, allocated only once its fields pass.
    pub(crate) fn with_zeroed_bits(self, data_bytes: u64) -> Result<Link, ChainError> {
        self.validate_fields(data_bytes)?;
        Ok(Link {
            data: zeroed(data_bytes)?,
            ..self
        })
    }

    /// This link's fields (its `data` ignored), checked for `data`, which
    /// becomes its bits: a link read from an RDB, its bits held once.
    pub(crate) fn with_bits(self, data: Box<[u8]>) -> Result<Link, ChainError> {
        self.validate_fields(data.len() as u64)?;
        Ok(Link { data, ..self })
    }

    /// A copy (its bits from the allocator's zeroed path, then copied).
    pub(crate) fn try_clone(&self) -> Result<Link, ChainError> {
        let mut copy = Link {
            data: Box::new([]),
            ..*self
        }
        .with_zeroed_bits(self.data.len() as u64)?;
        copy.data.copy_from_slice(&self.data);
        Ok(copy)
    }

    /// The modulus of bit positions.
    fn modulus(&self) -> u64 {
        if self.shape.n2 > 0 {
            1u64 << self.shape.n2
        } else {
            self.shape.bits
        }
    }

    /// The bit positions of `hash` in this link.
    fn positions(&self, hash: Hash) -> impl Iterator<Item = u64> {
        let modulus = self.modulus();
        (0..u64::from(self.shape.hashes))
            .map(move |i| hash.a.wrapping_add(i.wrapping_mul(hash.b)) % modulus)
    }

    fn contains(&self, hash: Hash) -> bool {
        self.positions(hash)
            .all(|bit| self.data[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }

    /// Sets `hash`'s bits; true if one was clear (the item was new here).
    fn add(&mut self, hash: Hash) -> bool {
        let mut was_clear = false;
        for bit in self.positions(hash) {
            let byte = &mut self.data[(bit / 8) as usize];
            let mask = 1u8 << (bit % 8);
            was_clear |= *byte & mask == 0;
            *byte |= mask;
        }
        was_clear
    }
}

/// What a chain of `links` links takes, as [`Chain::memory_bytes`] counts
/// it, when its bits take `bits_bytes` and `more` bytes more: what every
/// way in measures against `bf-memory-limit-per-filter` (a header, an RDB
/// value, a new link, a copy).
pub(crate) fn memory_bytes_of(links: usize, bits_bytes: u64, more: u64) -> u64 {
    (links as u64)
        .saturating_mul(64)
        .saturating_add(32)
        .saturating_add(bits_bytes)
        .saturating_add(more)
}

/// A RedisBloom filter: its `SBChain`.
pub(crate) struct Chain {
    pub(crate) links: Vec<Link>,
    /// Items added (`BF.CARD`).
    pub(crate) size: u64,
    pub(crate) options: u32,
    pub(crate) growth: u32,
}

/// What adding an item did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChainAdd {
    Added(bool),
    /// A `NONSCALING` filter holds its capacity.
    Full,
    /// The next link would pass the caller's byte cap.
    OverLimit,
    /// The next link could not be made (RedisBloom: "problem inserting").
    Failed,
    /// The chain is at this module's limits: the next link would be link
    /// 4,097, or the item count would pass 2^64 - 1 (RedisBloom's wraps,
    /// to a chain its own loader refuses). Refused, the chain unchanged,
    /// so that what a command leaves always loads again.
    AtLimit,
}

/// What RedisBloom makes a new filter from (`bfCreateChain`): the first
/// link's capacity and the chain's error rate, its growth (kept as given,
/// even when `NONSCALING`, as RedisBloom keeps it) and whether it scales.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ChainOptions {
    pub(crate) capacity: u64,
    pub(crate) error_rate: f64,
    pub(crate) growth: u32,
    pub(crate) nonscaling: bool,
}

impl Chain {
    /// A new, empty chain as RedisBloom's `BF.RESERVE`, `BF.ADD` and
    /// `BF.INSERT` make one (`SB_NewChain` with `FORCE64 | NOROUND`): one
    /// link of `capacity` items at half the error rate (the whole rate when
    /// `NONSCALING`).
    ///
    /// # Errors
    ///
    /// [`ChainError::Invalid`] for options RedisBloom would not build
    /// ("could not create filter"), [`ChainError::OverLimit`] when it would
    /// take more than `cap` bytes (measured before anything is allocated),
    /// [`ChainError::OutOfMemory`] when the allocator refuses the bits.
    pub(crate) fn new(options: &ChainOptions, cap: Option<usize>) -> Result<Chain, ChainError> {
        let (shape, flags) = Chain::first_shape(options)?;
        if cap.is_some_and(|cap| memory_bytes_of(1, shape.bytes(), 0) > cap as u64) {
            return Err(ChainError::OverLimit);
        }
        Chain::checked(vec![Link::from_shape(shape)?], 0, flags, options.growth)
    }

    /// The first link of a new chain of `options`, and the chain's flags.
    pub(crate) fn first_shape(options: &ChainOptions) -> Result<(Shape, u32), ChainError> {
        let flags = FORCE64 | NOROUND | if options.nonscaling { NO_SCALING } else { 0 };
        let tightening = if options.nonscaling { 1.0 } else { TIGHTENING };
        let shape = Shape::of(options.capacity, options.error_rate * tightening, flags)?;
        Ok((shape, flags))
    }

    /// A chain read from a header or an RDB, its fields checked as
    /// RedisBloom checks a chain it loads, and against this module's
    /// bounds; its `links` come from [`Link::with_zeroed_bits`], which
    /// checked theirs.
    pub(crate) fn checked(
        links: Vec<Link>,
        size: u64,
        options: u32,
        growth: u32,
    ) -> Result<Chain, ChainError> {
        if links.is_empty() {
            return Err(ChainError::Invalid("no links"));
        }
        if links.len() as u64 > MAX_LINKS {
            return Err(ChainError::PastLimits("more than 4,096 links"));
        }
        if options & !KNOWN_OPTIONS != 0 {
            return Err(ChainError::Invalid("unknown options"));
        }
        let total = links
            .iter()
            .try_fold(0u64, |sum, link| sum.checked_add(link.size));
        if total != Some(size) {
            return Err(ChainError::Invalid("item counts that do not add up"));
        }
        // A next link that cannot be sized (its rate underflows to 0, its
        // size passes 2^64 bits) is the add's affair, as in RedisBloom:
        // "problem inserting". RedisBloom builds such chains itself (a
        // first link at 5e-324, whose next link's rate is 0).
        Ok(Chain {
            links,
            size,
            options,
            growth,
        })
    }

    fn hash(&self, item: &[u8]) -> Hash {
        if self.options & FORCE64 != 0 {
            let a = murmur64a(item, 0xc6a4_a793_5bd1_e995);
            Hash {
                a,
                b: murmur64a(item, a),
            }
        } else {
            let a = murmur2(item, 0x9747_b28c);
            Hash {
                a: u64::from(a),
                b: u64::from(murmur2(item, a)),
            }
        }
    }

    pub(crate) fn contains(&self, item: &[u8]) -> bool {
        let hash = self.hash(item);
        self.links.iter().rev().any(|link| link.contains(hash))
    }

    /// The shape of the link RedisBloom would add after the last:
    /// `entries · growth` items at half the error rate.
    fn next_shape(&self) -> Result<Shape, ChainError> {
        let last = self.links.last().ok_or(ChainError::Invalid("no links"))?;
        let entries = last
            .shape
            .entries
            .checked_mul(u64::from(self.growth))
            .ok_or(ChainError::Invalid("a next link past 2^64 items"))?;
        Shape::of(entries, last.shape.error * TIGHTENING, self.options)
    }

    /// Adds `item` as RedisBloom's `SBChain_Add` does; a new link that would
    /// take the chain past `cap` bytes is refused, and so is whatever would
    /// take it past this module's limits ([`ChainAdd::AtLimit`]).
    pub(crate) fn add(&mut self, item: &[u8], cap: Option<usize>) -> ChainAdd {
        let hash = self.hash(item);
        if self.links.iter().rev().any(|link| link.contains(hash)) {
            return ChainAdd::Added(false);
        }
        if self.size == u64::MAX {
            return ChainAdd::AtLimit;
        }
        let full = self
            .links
            .last()
            .is_some_and(|last| last.size >= last.shape.entries);
        if full {
            if self.options & NO_SCALING != 0 {
                return ChainAdd::Full;
            }
            let Ok(shape) = self.next_shape() else {
                return ChainAdd::Failed;
            };
            if self.links.len() as u64 >= MAX_LINKS {
                return ChainAdd::AtLimit;
            }
            // Measured before anything is allocated: a link past the cap
            // (up to a terabyte) is never made, let alone made and dropped
            // at every add.
            let bytes = memory_bytes_of(self.links.len() + 1, self.bits_bytes(), shape.bytes());
            if cap.is_some_and(|cap| bytes > cap as u64) {
                return ChainAdd::OverLimit;
            }
            match Link::from_shape(shape) {
                Ok(link) => self.links.push(link),
                Err(_) => return ChainAdd::Failed,
            }
        }
        let Some(last) = self.links.last_mut() else {
            return ChainAdd::Failed;
        };
        let added = last.add(hash);
        if added {
            last.size += 1;
            self.size += 1;
        }
        ChainAdd::Added(added)
    }

    /// Capacity as `BF.INFO` reports it: every link's entries.
    pub(crate) fn capacity(&self) -> u64 {
        self.links
            .iter()
            .fold(0u64, |sum, link| sum.saturating_add(link.shape.entries))
    }

    /// Bytes, as RedisBloom counts them for `BF.INFO` and `MEMORY USAGE`:
    /// its chain (32 bytes), 64 per link, and the bits.
    pub(crate) fn memory_bytes(&self) -> usize {
        usize::try_from(memory_bytes_of(self.links.len(), self.bits_bytes(), 0))
            .unwrap_or(usize::MAX)
    }

    /// Bytes of the links' bits.
    fn bits_bytes(&self) -> u64 {
        self.links.iter().map(|link| link.data.len() as u64).sum()
    }

    /// The growth factor, or none for `NONSCALING`.
    pub(crate) fn expansion(&self) -> Option<u32> {
        (self.options & NO_SCALING == 0).then_some(self.growth)
    }
}
