//! RedisBloom's RDB encoding of a chain, read from any [`RdbInput`]: the
//! server's RDB stream (`data_type.rs`) or, for the fuzz targets, bytes.
//!
//! RDB, as RedisBloom writes it: the item count, the number of links, the
//! options (encoding 2 on), the growth (encoding 4 on; 2 before), then per
//! link its entries, error (double), hashes, bits per entry (double), bits
//! and n2 (encoding 1 on; before: bits = entries · bpe, n2 = 0), its bits
//! as a string, and its item count. Every count is checked against what
//! the input holds before anything is allocated for it.

use super::{memory_bytes_of, Chain, ChainError, Link, Shape, KNOWN_OPTIONS, MAX_LINKS};

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

/// Where an RDB value's fields go: the server's RDB stream
/// (`data_type.rs`) or, for the fuzz targets, bytes.
pub(crate) trait RdbOutput {
    fn unsigned(&mut self, value: u64);
    fn double(&mut self, value: f64);
    fn string(&mut self, bytes: &[u8]);
}

/// An RDB value as bytes, as [`BytesInput`] reads them.
#[derive(Default)]
pub(crate) struct BytesOutput(pub(crate) Vec<u8>);

impl RdbOutput for BytesOutput {
    fn unsigned(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn double(&mut self, value: f64) {
        self.unsigned(value.to_bits());
    }

    fn string(&mut self, bytes: &[u8]) {
        self.0
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.0.extend_from_slice(bytes);
    }
}

/// Writes `chain` as RedisBloom's `rdb_save` does, at encoding 4.
pub(crate) fn save(chain: &Chain, out: &mut impl RdbOutput) {
    out.unsigned(chain.size);
    out.unsigned(chain.links.len() as u64);
    out.unsigned(u64::from(chain.options));
    out.unsigned(u64::from(chain.growth));
    for link in &chain.links {
        out.unsigned(link.shape.entries);
        out.double(link.shape.error);
        out.unsigned(u64::from(link.shape.hashes));
        out.double(link.shape.bpe);
        out.unsigned(link.shape.bits);
        out.unsigned(u64::from(link.shape.n2));
        out.string(&link.data);
        out.unsigned(link.size);
    }
}

/// Reads a chain written with encoding `encver` (0 to 4). One that would
/// take more than `cap` bytes (a client's `RESTORE` under
/// `bf-memory-limit-per-filter`) is refused before its bits are read.
///
/// # Errors
///
/// [`ChainError::Invalid`] for a value RedisBloom would refuse, or that
/// ends early; [`ChainError::OverLimit`] past `cap`;
/// [`ChainError::PastLimits`] for one RedisBloom would hold but this module
/// cannot, and only once the whole value is read (its links one at a
/// time, none kept), so that a load that meets it can hold no key there
/// and go on with the next.
pub(crate) fn load(
    input: &mut impl RdbInput,
    encver: i32,
    cap: Option<usize>,
) -> Result<Chain, ChainError> {
    let truncated = |()| ChainError::Invalid("the RDB ends early");
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(ChainError::Invalid("an encoding newer than this module's"));
    }
    let size = input.unsigned().map_err(truncated)?;
    let count = input.unsigned().map_err(truncated)?;
    if count == 0 {
        return Err(ChainError::Invalid("no links"));
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
    // Past the limits: read on (the links as they come, none kept), and
    // refuse the whole once it is read.
    let mut past = (count > MAX_LINKS).then_some(ChainError::PastLimits("more than 4,096 links"));
    let mut links = Vec::with_capacity(count.min(MAX_LINKS) as usize);
    let (mut sizes, mut bits_bytes) = (Some(0u64), 0u64);
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
        bits_bytes = bits_bytes.saturating_add(bits.div_ceil(8));
        let links_so_far = usize::try_from(count).unwrap_or(usize::MAX);
        if cap.is_some_and(|cap| memory_bytes_of(links_so_far, bits_bytes, 0) > cap as u64) {
            return Err(ChainError::OverLimit);
        }
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
        let link = Link {
            shape,
            size: 0,
            data: Box::new([]),
        }
        .with_bits(data);
        let link_size = input.unsigned().map_err(truncated)?;
        sizes = sizes.and_then(|sum| sum.checked_add(link_size));
        match link {
            Ok(link) if past.is_none() => links.push(Link {
                size: link_size,
                ..link
            }),
            Ok(_) => {}
            Err(limit @ ChainError::PastLimits(_)) => past = Some(limit),
            Err(refused) => return Err(refused),
        }
    }
    match past {
        // RedisBloom's own checks of the whole, then the limit.
        Some(past) => {
            if options & !KNOWN_OPTIONS != 0 || sizes != Some(size) {
                return Err(ChainError::Invalid("a chain RedisBloom would refuse"));
            }
            Err(past)
        }
        None => Chain::checked(links, size, options, growth),
    }
}
