//! The [`WyHash`] hasher the [`DefaultHasher`](crate::DefaultHasher)
//! builds: wyhash version 1, bit for bit as the `wyhash` crate 0.6 computes
//! it (its `v1` module), so that every saved filter keeps its bits.
//!
//! Ported from that crate (Copyright (C) 2019-2025 Diego Barrios Romero,
//! <https://github.com/eldruin/wyhash-rs>, MIT OR Apache-2.0, the licences
//! of this crate too) so that the library does not depend on `rand_core`,
//! which the crate needs for its random number generator and this library
//! never uses. `tests/wyhash.rs` checks it against the crate on many
//! inputs and ways of feeding them.

use std::hash::Hasher;

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;
const P3: u64 = 0x5899_65cc_7537_4cc3;
const P4: u64 = 0x1d8e_4e27_c47d_124f;
const P5: u64 = 0xeb44_acca_b455_d165;

/// The 128-bit product of `a` and `b`, its halves folded.
#[inline(always)]
fn mum(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    ((product >> 64) ^ product) as u64
}

/// Eight bytes, little-endian.
#[inline(always)]
fn read64(data: &[u8]) -> u64 {
    let mut le = [0u8; 8];
    le.copy_from_slice(&data[..8]);
    u64::from_le_bytes(le)
}

/// Four bytes, little-endian.
#[inline(always)]
fn read32(data: &[u8]) -> u64 {
    let mut le = [0u8; 4];
    le.copy_from_slice(&data[..4]);
    u64::from(u32::from_le_bytes(le))
}

/// Eight bytes as two little-endian halves, the first one high.
#[inline(always)]
fn read64_swapped(data: &[u8]) -> u64 {
    (read32(data) << 32) | read32(&data[4..])
}

/// The last 1 to 8 bytes, in wyhash v1's byte order.
#[inline(always)]
fn read_rest(data: &[u8]) -> u64 {
    match data.len() {
        1 => u64::from(data[0]),
        2 => u64::from(data[1]) << 8 | u64::from(data[0]),
        3 => u64::from(data[1]) << 16 | u64::from(data[0]) << 8 | u64::from(data[2]),
        4 => read32(data),
        5 => read32(data) << 8 | u64::from(data[4]),
        6 => read32(data) << 16 | u64::from(data[5]) << 8 | u64::from(data[4]),
        7 => {
            read32(data) << 24
                | u64::from(data[5]) << 16
                | u64::from(data[4]) << 8
                | u64::from(data[6])
        }
        _ => read64_swapped(data),
    }
}

/// Mixes `bytes` into `seed`.
#[inline]
fn core(bytes: &[u8], mut seed: u64) -> u64 {
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        seed = mum(
            seed ^ P0,
            mum(read64(chunk) ^ P1, read64(&chunk[8..]) ^ P2)
                ^ mum(read64(&chunk[16..]) ^ P3, read64(&chunk[24..]) ^ P4),
        );
    }
    seed ^= P0;
    let rest = chunks.remainder();
    match rest.len() {
        0 => {}
        1..=8 => seed = mum(seed, read_rest(rest) ^ P1),
        9..=16 => seed = mum(read64_swapped(rest) ^ seed, read_rest(&rest[8..]) ^ P2),
        17..=24 => {
            seed = mum(read64_swapped(rest) ^ seed, read64_swapped(&rest[8..]) ^ P2)
                ^ mum(seed, read_rest(&rest[16..]) ^ P3);
        }
        _ => {
            seed = mum(read64_swapped(rest) ^ seed, read64_swapped(&rest[8..]) ^ P2)
                ^ mum(
                    read64_swapped(&rest[16..]) ^ seed,
                    read_rest(&rest[24..]) ^ P4,
                );
        }
    }
    seed
}

/// wyhash version 1 as a [`Hasher`]: what [`DefaultHasher`](crate::DefaultHasher)
/// builds, seeded with its seed. Each `write` mixes its bytes in at once
/// (no buffering), as the `wyhash` crate's `WyHash` does, with the same
/// results.
///
/// # Example
///
/// ```
/// use std::hash::{BuildHasher, Hasher};
/// use atomic_bloom::{DefaultHasher, WyHash};
///
/// let mut hasher = WyHash::with_seed(7);
/// hasher.write(b"https://example.com/");
/// let built: WyHash = DefaultHasher::with_seed(7).build_hasher();
/// let mut same = built;
/// same.write(b"https://example.com/");
/// assert_eq!(hasher.finish(), same.finish());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct WyHash {
    state: u64,
    len: u64,
}

impl WyHash {
    /// A hasher starting from `seed`.
    #[inline]
    pub const fn with_seed(seed: u64) -> Self {
        WyHash {
            state: seed,
            len: 0,
        }
    }
}

impl Hasher for WyHash {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            self.state ^= P0;
        } else {
            self.state = core(bytes, self.state);
            self.len = self.len.wrapping_add(bytes.len() as u64);
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        mum(self.state, self.len ^ P5)
    }
}
