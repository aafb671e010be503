//! MurmurHash2 (32-bit) and MurmurHash64A, Austin Appleby's public-domain
//! hashes, as RedisBloom's filters hash items with them: little-endian
//! words, the tail folded in from its last byte down.

/// MurmurHash2 of `key` with `seed`.
pub(crate) fn murmur2(key: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1_e995;
    // The length enters as C's `int` would: truncated to 32 bits.
    let mut h = seed ^ key.len() as u32;
    let mut words = key.chunks_exact(4);
    for word in words.by_ref() {
        let mut k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (index, &byte) in tail.iter().enumerate().rev() {
            h ^= u32::from(byte) << (8 * index);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

/// MurmurHash64A of `key` with `seed`.
pub(crate) fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for word in words.by_ref() {
        let mut k = u64::from_le_bytes(word.try_into().unwrap_or_default());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (index, &byte) in tail.iter().enumerate().rev() {
            h ^= u64::from(byte) << (8 * index);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^ (h >> R)
}
