//! Test references of the cuckoo core: hashes, and RedisBloom's
//! sub-filter as a plain byte array.

/// A splitmix64 stream: test hashes.
pub(super) fn hashes(seed: u64) -> impl Iterator<Item = u64> {
    let mut state = seed;
    std::iter::from_fn(move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Some(z ^ (z >> 31))
    })
}

/// RedisBloom's sub-filter as a plain byte array, written from its
/// description: the reference the core must match byte for byte.
pub(super) struct NaiveSubFilter {
    pub(super) data: Vec<u8>,
    bucket_size: usize,
    buckets: u64,
}

impl NaiveSubFilter {
    pub(super) fn new(bucket_size: usize, buckets: u64) -> Self {
        NaiveSubFilter {
            data: vec![0; bucket_size * buckets as usize],
            bucket_size,
            buckets,
        }
    }

    fn alt(&self, index: u64, fp: u8) -> u64 {
        (index ^ (u64::from(fp) * 0x5bd1e995)) % self.buckets
    }

    fn bucket(&mut self, index: u64) -> &mut [u8] {
        let at = index as usize * self.bucket_size;
        &mut self.data[at..at + self.bucket_size]
    }

    fn params(&self, hash: u64) -> (u8, u64, u64) {
        let fp = (hash % 255 + 1) as u8;
        let h2 = hash ^ (u64::from(fp) * 0x5bd1e995);
        (fp, hash % self.buckets, h2 % self.buckets)
    }

    pub(super) fn insert_free(&mut self, hash: u64) -> bool {
        let (fp, a, b) = self.params(hash);
        for index in [a, b] {
            if let Some(slot) = self.bucket(index).iter_mut().find(|s| **s == 0) {
                *slot = fp;
                return true;
            }
        }
        false
    }

    pub(super) fn kick_out(&mut self, hash: u64, max: u32) -> bool {
        let (mut fp, mut index, _) = self.params(hash);
        let mut victim = 0usize;
        for _ in 0..max {
            std::mem::swap(&mut self.bucket(index)[victim], &mut fp);
            index = self.alt(index, fp);
            if let Some(slot) = self.bucket(index).iter_mut().find(|s| **s == 0) {
                *slot = fp;
                return true;
            }
            victim = (victim + 1) % self.bucket_size;
        }
        for _ in 0..max {
            victim = (victim + self.bucket_size - 1) % self.bucket_size;
            index = self.alt(index, fp);
            std::mem::swap(&mut self.bucket(index)[victim], &mut fp);
        }
        false
    }

    pub(super) fn delete(&mut self, hash: u64) -> bool {
        let (fp, a, b) = self.params(hash);
        for index in [a, b] {
            if let Some(slot) = self.bucket(index).iter_mut().find(|s| **s == fp) {
                *slot = 0;
                return true;
            }
        }
        false
    }

    pub(super) fn count(&mut self, hash: u64) -> usize {
        let (fp, a, b) = self.params(hash);
        let first = self.bucket(a).iter().filter(|s| **s == fp).count();
        first + self.bucket(b).iter().filter(|s| **s == fp).count()
    }
}
