//! RedisBloom's RDB encoding of a chain, read from any [`RdbInput`]: the
//! server's RDB stream (`data_type.rs`) or, for the fuzz targets, bytes.
//!
//! RDB, as RedisBloom writes it: the item count, the number of links, the
//! options (encoding 2 on), the growth (encoding 4 on; 2 before), then per
//! link its entries, error (double), hashes, bits per entry (double), bits
//! and n2 (encoding 1 on; before: bits = entries · bpe, n2 = 0), its bits
//! as a string, and its item count. Every count is checked against what
//! the input holds before anything is allocated for it.

use super::{Chain, ChainError, Link, Shape, MAX_LINKS};

/// RedisBloom's encoding version, which this module writes and reads (and
/// every older one).
pub(crate) const ENCODING_VERSION: i32 = 4;

/// Where an RDB value's fields come from. Each read fails when the input
/// ends early.
pub(crate) trait RdbInput {
    fn unsigned(&mut self) -> Result<u64, ()>;
    fn double(&mut self) -> Result<f64, ()>;
    /// A string, owned: the server's own buffer where it can be adopted, so
    /// a link's bits are held once.
    fn string(&mut self) -> Result<Box<[u8]>, ()>;
}

/// An RDB value as bytes, for the fuzz targets: each unsigned and double
/// as 8 little-endian bytes, each string as a 4-byte length and its bytes.
pub(crate) struct BytesInput<'a>(pub(crate) &'a [u8]);

impl BytesInput<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], ()> {
        if self.0.len() < n {
            return Err(());
        }
        let (field, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(field)
    }
}

impl RdbInput for BytesInput<'_> {
    fn unsigned(&mut self) -> Result<u64, ()> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(drop)?))
    }

    fn double(&mut self) -> Result<f64, ()> {
        Ok(f64::from_bits(self.unsigned()?))
    }

    fn string(&mut self) -> Result<Box<[u8]>, ()> {
        let length = u32::from_le_bytes(self.take(4)?.try_into().map_err(drop)?);
        Ok(self.take(length as usize)?.into())
    }
}

/// Reads a chain written with encoding `encver` (0 to 4).
pub(crate) fn load(input: &mut impl RdbInput, encver: i32) -> Result<Chain, ChainError> {
    let truncated = |()| ChainError::Invalid("the RDB ends early");
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(ChainError::Invalid("an encoding newer than this module's"));
    }
    let size = input.unsigned().map_err(truncated)?;
    let count = input.unsigned().map_err(truncated)?;
    if count == 0 || count > MAX_LINKS {
        return Err(ChainError::Invalid("no links, or more than 4096"));
    }
    let options = if encver >= 2 {
        input.unsigned().map_err(truncated)?
    } else {
        0
    };
    let growth = if encver >= 4 {
        input.unsigned().map_err(truncated)?
    } else {
        2
    };
    let options = u32::try_from(options).map_err(|_| ChainError::Invalid("unknown options"))?;
    let growth = u32::try_from(growth).map_err(|_| ChainError::Invalid("growth past 2^32"))?;
    let mut links = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let entries = input.unsigned().map_err(truncated)?;
        let error = input.double().map_err(truncated)?;
        let hashes = u32::try_from(input.unsigned().map_err(truncated)?)
            .map_err(|_| ChainError::Invalid("hashes"))?;
        let bpe = input.double().map_err(truncated)?;
        let (bits, n2) = if encver == 0 {
            ((entries as f64 * bpe) as u64, 0)
        } else {
            let bits = input.unsigned().map_err(truncated)?;
            let n2 = u8::try_from(input.unsigned().map_err(truncated)?)
                .map_err(|_| ChainError::Invalid("n2"))?;
            (bits, n2)
        };
        // The string's length is what the input holds: the server read it.
        let data = input.string().map_err(truncated)?;
        if (data.len() as f64) < (bits as f64 / 8.0).ceil() {
            return Err(ChainError::Invalid("bits shorter than the link says"));
        }
        let shape = Shape {
            entries,
            error,
            hashes,
            bpe,
            bits,
            n2,
        };
        let mut link = Link {
            shape,
            size: 0,
            data: Box::new([]),
        }
        .with_bits(data)?;
        link.size = input.unsigned().map_err(truncated)?;
        links.push(link);
    }
    Chain::checked(links, size, options, growth)
}
