//! The byte layout of saved filters (FORMAT.md), for tests that break it.

/// Where the header's CRC-32C sits; it covers the bytes before it.
pub const HEADER_CRC_AT: usize = 24;

/// Where the body begins.
pub fn body_start() -> usize {
    HEADER_CRC_AT + 4
}

/// Rewrites every checksum of `bytes` (a whole saved filter) so that they
/// match its bytes again: what an attacker who knows the format does. From
/// version 4 on, bit arrays are in pages with their own checksums and the
/// body's covers the rest: the body is walked to find them.
pub fn reseal(bytes: &mut [u8]) {
    let header = crc32c::crc32c(&bytes[..HEADER_CRC_AT]);
    bytes[HEADER_CRC_AT..body_start()].copy_from_slice(&header.to_le_bytes());
    let end = bytes.len() - 4;
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    let body = if version >= 4 {
        let mut walk = Walk {
            bytes: &mut bytes[..end],
            at: body_start(),
            crc: 0,
        };
        match walk.bytes[10] {
            1 => walk.bit_array(),
            3 => walk.scalable(),
            5 => walk.windowed(),
            6 => walk.cuckoo(),
            4 => match walk.bytes.get(walk.at) {
                Some(1) => {
                    walk.fields(1);
                    walk.bit_array()
                }
                Some(3) => {
                    walk.fields(1);
                    walk.scalable()
                }
                Some(5) => {
                    walk.fields(1);
                    walk.windowed()
                }
                _ => None,
            },
            _ => None,
        };
        let rest = walk.bytes.len().saturating_sub(walk.at);
        walk.fields(rest);
        walk.crc
    } else {
        crc32c::crc32c(&bytes[body_start()..end])
    };
    bytes[end..].copy_from_slice(&body.to_le_bytes());
}

/// A walk over a version 4 body: fields go into the body's checksum, each
/// page of bits gets its own rewritten. `None` once the bytes run out.
struct Walk<'a> {
    bytes: &'a mut [u8],
    at: usize,
    crc: u32,
}

impl Walk<'_> {
    fn fields(&mut self, n: usize) -> Option<()> {
        let field = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.crc = crc32c::crc32c_append(self.crc, field);
        self.at += n;
        Some(())
    }

    fn u64_at(&self, at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(
            self.bytes.get(at..at + 8)?.try_into().ok()?,
        ))
    }

    /// A bit-array section: 31 bytes of fields (the block count last),
    /// then 64-byte blocks in pages of 64 KiB, each with its checksum.
    fn bit_array(&mut self) -> Option<()> {
        let blocks = self.u64_at(self.at + 23)?;
        self.fields(31)?;
        self.pages(blocks)
    }

    /// `lines` 64-byte lines in pages of 64 KiB, each with its checksum.
    fn pages(&mut self, lines: u64) -> Option<()> {
        let mut left = usize::try_from(lines.checked_mul(64)?).ok()?;
        let mut index = 0u64;
        while left > 0 {
            let page = left.min(64 * 1024);
            let bits = self.bytes.get(self.at..self.at + page)?;
            // Seeded with the page's index (FORMAT.md).
            let crc = crc32c::crc32c_append(crc32c::crc32c(&index.to_le_bytes()), bits);
            index += 1;
            self.bytes
                .get_mut(self.at + page..self.at + page + 4)?
                .copy_from_slice(&crc.to_le_bytes());
            self.at += page + 4;
            left -= page;
        }
        Some(())
    }

    /// A scalable body: 54 bytes of growth options (the stage count last),
    /// then each stage's bit array.
    fn scalable(&mut self) -> Option<()> {
        let stages = self.u64_at(self.at + 46)?;
        self.fields(54)?;
        for _ in 0..stages {
            self.bit_array()?;
        }
        Some(())
    }

    /// A windowed body (kind 5): 56 bytes of fields (generations at 2,
    /// blocks at 32), 8 per generation of ends, 17 of rotation state, then
    /// the lines: two per block for cache-line and word, one per block and
    /// generation for compact (layout byte 3).
    fn windowed(&mut self) -> Option<()> {
        let layout = *self.bytes.get(self.at)?;
        let generations = u64::from(*self.bytes.get(self.at + 2)?);
        let blocks = self.u64_at(self.at + 32)?;
        let fields = 56 + 8 * usize::from(*self.bytes.get(self.at + 2)?) + 17;
        self.fields(fields)?;
        let lines = if layout == 3 {
            blocks.checked_mul(generations)?
        } else {
            blocks.checked_mul(2)?
        };
        self.pages(lines)
    }

    /// A cuckoo body (kind 6): 25 bytes of options (the stage count at 17),
    /// then per stage 18 bytes of shape (slot bits, bucket slots, buckets at
    /// 2, rate), its lines in pages, and an 8-byte fingerprint count.
    fn cuckoo(&mut self) -> Option<()> {
        let stages = self.u64_at(self.at + 17)?;
        self.fields(25)?;
        for _ in 0..stages {
            let slot_bits = u64::from(*self.bytes.get(self.at)?);
            let bucket_slots = u64::from(*self.bytes.get(self.at + 1)?);
            let buckets = self.u64_at(self.at + 2)?;
            self.fields(18)?;
            let per_word = 64u64.checked_div(slot_bits)?;
            let words = buckets.checked_mul(bucket_slots)?.div_ceil(per_word.max(1));
            self.pages(words.div_ceil(8))?;
            self.fields(8)?;
        }
        Some(())
    }
}
