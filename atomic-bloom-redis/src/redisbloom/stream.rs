//! A RedisBloom filter as `BF.SCANDUMP` streams it and `BF.LOADCHUNK` takes
//! it back: iterator 0 gives `[1, header]`, then each call gives the next
//! piece of the links' bits in order, never across two links, with the
//! iterator one past the bits handed out so far; `[0, ""]` ends.
//!
//! The header is RedisBloom's packed little-endian `dumpedChainHeader`: the
//! item count (u64), the number of links (u32), the options (u32), the
//! growth (u32), then per link its bytes (u64), bits (u64), items (u64),
//! error (f64), bits per entry (f64), hashes (u32), entries (u64) and n2
//! (u8).

use super::{memory_bytes_of, Chain, ChainError, Link, Shape, MAX_LINKS};

/// Bytes of the header before the links.
const HEADER_FIXED_BYTES: usize = 8 + 4 + 4 + 4;
/// Bytes of one link in the header.
const HEADER_BYTES_PER_LINK: usize = 8 + 8 + 8 + 8 + 8 + 4 + 8 + 1;

/// Bytes per `BF.SCANDUMP` piece (RedisBloom's `MAX_SCANDUMP_SIZE`).
pub(crate) const PIECE_BYTES: usize = 16 << 20;

impl Chain {
    /// The header `BF.SCANDUMP key 0` hands out.
    pub(crate) fn header(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(HEADER_FIXED_BYTES + HEADER_BYTES_PER_LINK * self.links.len());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.options.to_le_bytes());
        out.extend_from_slice(&self.growth.to_le_bytes());
        for link in &self.links {
            out.extend_from_slice(&(link.data.len() as u64).to_le_bytes());
            out.extend_from_slice(&link.shape.bits.to_le_bytes());
            out.extend_from_slice(&link.size.to_le_bytes());
            out.extend_from_slice(&link.shape.error.to_le_bytes());
            out.extend_from_slice(&link.shape.bpe.to_le_bytes());
            out.extend_from_slice(&link.shape.hashes.to_le_bytes());
            out.extend_from_slice(&link.shape.entries.to_le_bytes());
            out.push(link.shape.n2);
        }
        out
    }

    /// A chain with zeroed bits from a header, checked as RedisBloom checks
    /// one (every field, the length exact) and against this module's
    /// bounds, before anything is allocated; refused with
    /// [`ChainError::OverLimit`] when it would take more than `cap` bytes.
    pub(crate) fn from_header(bytes: &[u8], cap: Option<usize>) -> Result<Chain, ChainError> {
        let bad = ChainError::Invalid("a header RedisBloom would refuse");
        if bytes.len() < HEADER_FIXED_BYTES {
            return Err(bad);
        }
        let mut at = 0;
        let mut take = |n: usize| {
            let field = &bytes[at..at + n];
            at += n;
            field
        };
        let u64_of = |field: &[u8]| u64::from_le_bytes(field.try_into().unwrap_or_default());
        let u32_of = |field: &[u8]| u32::from_le_bytes(field.try_into().unwrap_or_default());
        let size = u64_of(take(8));
        let count = u32_of(take(4));
        let options = u32_of(take(4));
        let growth = u32_of(take(4));
        let length = HEADER_BYTES_PER_LINK
            .checked_mul(count as usize)
            .and_then(|links| links.checked_add(HEADER_FIXED_BYTES));
        if count == 0 || length != Some(bytes.len()) {
            return Err(bad);
        }
        if u64::from(count) > MAX_LINKS {
            return Err(ChainError::PastLimits("more than 4,096 links"));
        }
        // Every link's fields first, so that nothing is allocated for a
        // header whose last link is wrong.
        let mut fields = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let data_bytes = u64_of(take(8));
            let bits = u64_of(take(8));
            let link_size = u64_of(take(8));
            // The rest in the header's order (a literal's fields are
            // evaluated as written).
            let shape = Shape {
                bits,
                error: f64::from_bits(u64_of(take(8))),
                bpe: f64::from_bits(u64_of(take(8))),
                hashes: u32_of(take(4)),
                entries: u64_of(take(8)),
                n2: take(1)[0],
            };
            fields.push((data_bytes, link_size, shape));
        }
        let claimed = fields
            .iter()
            .fold(0u64, |sum, field| sum.saturating_add(field.0));
        if cap.is_some_and(|cap| memory_bytes_of(fields.len(), claimed, 0) > cap as u64) {
            return Err(ChainError::OverLimit);
        }
        let mut links = Vec::with_capacity(fields.len());
        for (data_bytes, link_size, shape) in fields {
            let link = Link {
                shape,
                size: link_size,
                data: Box::new([]),
            };
            links.push(link.with_zeroed_bits(data_bytes)?);
        }
        Chain::checked(links, size, options, growth)
    }

    /// The reply to `BF.SCANDUMP key iterator`, as RedisBloom's.
    pub(crate) fn scan_dump(&self, iterator: i64) -> (i64, Vec<u8>) {
        if iterator == 0 {
            return (1, self.header());
        }
        match self.piece_at(iterator) {
            Some((link, offset)) => {
                let data = &self.links[link].data;
                let length = (data.len() - offset).min(PIECE_BYTES);
                (
                    iterator + length as i64,
                    data[offset..offset + length].to_vec(),
                )
            }
            None => (0, Vec::new()),
        }
    }

    /// The link and offset of iterator position `iterator` (RedisBloom's
    /// `getLinkPos`).
    fn piece_at(&self, iterator: i64) -> Option<(usize, usize)> {
        let mut position = u64::try_from(iterator.checked_sub(1)?).ok()?;
        for (index, link) in self.links.iter().enumerate() {
            let bytes = link.data.len() as u64;
            if position < bytes {
                return Some((index, position as usize));
            }
            position -= bytes;
        }
        None
    }

    /// Takes a piece `BF.SCANDUMP` handed out with `iterator`; RedisBloom's
    /// errors for one that is not in place.
    pub(crate) fn load_piece(&mut self, iterator: i64, piece: &[u8]) -> Result<(), &'static str> {
        let length = piece.len() as i64;
        if iterator <= 0 || iterator < length {
            return Err("ERR received bad data");
        }
        let (link, offset) = self
            .piece_at(iterator - length)
            .ok_or("ERR invalid offset - no link found")?;
        let data = &mut self.links[link].data;
        if piece.len() > data.len() - offset {
            return Err("ERR invalid chunk - Too big for current filter");
        }
        data[offset..offset + piece.len()].copy_from_slice(piece);
        Ok(())
    }
}
