//! `Frontier`'s body: its seen-filter and its queued items.

use std::io::{Read, Write};

use super::bloom::{read_bits, write_bits};
use super::scalable::{read_stages, write_stages};
use super::{reserve_as_read, to_usize, Decoder, Encoder, Kind, Saved};
use crate::frontier::Seen;
use crate::{DefaultHasher, Error, Frontier, WindowedBloomFilter};

/// How a [`Frontier`]'s queued items are saved: as bytes that
/// [`decode`](FrontierItem::decode) turns back into the item.
///
/// Implemented for `String`, `Box<str>`, `Vec<u8>` and the integer types
/// (little-endian, so the bytes are the same on every platform). Implement
/// it for your own item type to save a `Frontier` of it.
///
/// # Example
///
/// ```
/// use atomic_bloom::FrontierItem;
///
/// #[derive(Hash, PartialEq, Debug)]
/// struct PageId(u32);
///
/// impl FrontierItem for PageId {
///     fn encode(&self, out: &mut Vec<u8>) {
///         self.0.encode(out);
///     }
///     fn decode(bytes: &[u8]) -> Result<Self, String> {
///         u32::decode(bytes).map(PageId)
///     }
/// }
///
/// let mut bytes = Vec::new();
/// PageId(7).encode(&mut bytes);
/// assert_eq!(PageId::decode(&bytes), Ok(PageId(7)));
/// ```
pub trait FrontierItem: Sized {
    /// Appends the item's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// The item whose bytes [`encode`](FrontierItem::encode) wrote, or why
    /// `bytes` are not one.
    ///
    /// # Errors
    ///
    /// A message saying why `bytes` do not decode; loading reports it in
    /// [`Error::InvalidItem`].
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

impl FrontierItem for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        String::from_utf8(bytes.to_vec()).map_err(|error| error.to_string())
    }
}

impl FrontierItem for Box<str> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        String::decode(bytes).map(String::into_boxed_str)
    }
}

impl FrontierItem for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        Ok(bytes.to_vec())
    }
}

macro_rules! integer_items {
    ($($integer:ty),*) => {$(
        impl FrontierItem for $integer {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            fn decode(bytes: &[u8]) -> Result<Self, String> {
                bytes.try_into().map(<$integer>::from_le_bytes).map_err(|_| {
                    format!(
                        "{} bytes, not the {} of a {}",
                        bytes.len(),
                        std::mem::size_of::<$integer>(),
                        stringify!($integer)
                    )
                })
            }
        }
    )*};
}

integer_items!(u16, u32, u64, u128, i16, i32, i64, i128);

impl FrontierItem for usize {
    /// As a `u64`, the same on every platform.
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u64).encode(out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let value = u64::decode(bytes)?;
        usize::try_from(value).map_err(|_| format!("{value} does not fit a usize here"))
    }
}

/// The seen-filter's kind byte in a frontier's body.
fn seen_kind<T, S>(seen: &Seen<T, S>) -> Kind {
    match seen {
        Seen::Fixed(_) => Kind::Bloom,
        Seen::Scalable(_) => Kind::Scalable,
        Seen::Windowed(_) => Kind::Windowed,
    }
}

impl<T: FrontierItem> Saved for Frontier<T, DefaultHasher> {
    const KIND: Kind = Kind::Frontier;

    fn seed(&self) -> u64 {
        match self.seen_filter() {
            Seen::Fixed(tracked) => tracked.filter().hasher().seed(),
            Seen::Scalable(filter) => filter.hasher().seed(),
            Seen::Windowed(filter) => filter.hasher().seed(),
        }
    }

    fn write_body<W: Write>(&self, out: &mut Encoder<W>) -> Result<(), Error> {
        // Drain first, then the filter: every drained item's push inserted
        // it into the filter before queueing it, and the pop acquired that.
        let items = self.take_queued();
        let written = write_seen_and_items(out, self.seen_filter(), &items);
        self.requeue(items);
        written
    }

    fn read_body<R: Read>(input: &mut Decoder<R>, seed: u64) -> Result<Self, Error> {
        let hasher = DefaultHasher::with_seed(seed);
        input.part("frontier's filter kind");
        let seen = match input.u8()? {
            kind if kind == Kind::Bloom as u8 => Seen::fixed(read_bits(input, hasher)?),
            kind if kind == Kind::Scalable as u8 => Seen::Scalable(read_stages(input, hasher)?),
            kind if kind == Kind::Windowed as u8 => {
                Seen::Windowed(Box::new(WindowedBloomFilter::read_body(input, seed)?))
            }
            other => {
                return Err(Error::InvalidField {
                    field: "frontier's filter kind",
                    value: u64::from(other),
                })
            }
        };
        input.part("queued item count");
        let stored = input.u64()?;
        let count = to_usize(stored, "queued item count")?;
        let mut items = Vec::new();
        for index in 0..stored {
            input.part("queued item");
            let length = to_usize(input.u64()?, "queued item length")?;
            let mut bytes = Vec::new();
            input.chunks(length, |chunk| {
                reserve_as_read(&mut bytes, length, chunk.len())?;
                bytes.extend_from_slice(chunk);
                Ok(())
            })?;
            match T::decode(&bytes) {
                Ok(item) => {
                    reserve_as_read(&mut items, count, 1024)?;
                    items.push(item);
                }
                Err(reason) => input.defer(Error::InvalidItem { index, reason }),
            }
        }
        Ok(Frontier::from_loaded(seen, items))
    }
}

fn write_seen_and_items<T: FrontierItem, W: Write>(
    out: &mut Encoder<W>,
    seen: &Seen<T, DefaultHasher>,
    items: &[T],
) -> Result<(), Error> {
    out.u8(seen_kind(seen) as u8)?;
    match seen {
        Seen::Fixed(tracked) => write_bits(out, tracked.filter())?,
        Seen::Scalable(filter) => write_stages(out, filter)?,
        Seen::Windowed(filter) => filter.write_body(out)?,
    }
    out.usize(items.len())?;
    let mut bytes = Vec::new();
    for item in items {
        bytes.clear();
        item.encode(&mut bytes);
        out.usize(bytes.len())?;
        out.bytes(&bytes)?;
    }
    Ok(())
}

saving_methods! {
    /// # Saving and loading
    ///
    /// In the format of `FORMAT.md`: the seen-filter and every queued item, so
    /// a crawler that restarts from a saved frontier neither forgets what it
    /// has seen nor loses what it had still to visit. The items are saved
    /// through [`FrontierItem`]; only frontiers with the [`DefaultHasher`]
    /// save.
    impl[T: FrontierItem] Frontier<T, DefaultHasher>,
        "Frontier",
        "Frontier::<String>",
        "Frontier::<String>::new(1000, 0.01)?"
    {
        /// Writes the frontier to `out` (wrap a file in a `BufWriter`, or use
        /// [`save`](Self::save)).
        ///
        /// # Consistency
        ///
        /// It pops every queued item, writes the filter and the items, and
        /// queues them again in the same order. Nothing is lost or queued
        /// twice, but while it writes, other threads' `pop` may find the queue
        /// empty (a worker that takes an empty queue for the end of the crawl
        /// should save at a quiet moment), and items pushed meanwhile are
        /// queued before the saved ones come back. Items popped by workers
        /// before the save are in its filter and not in its queue: finish or
        /// re-push them after a restart. Every push that happened-before the
        /// call is in the output.
        ///
        /// # Errors
        ///
        /// [`Error::Io`] when `out` fails; the items are queued again even
        /// then.
        ///
        /// # Example
        ///
        /// ```
        /// use atomic_bloom::Frontier;
        ///
        /// let frontier: Frontier<String> = Frontier::new(1000, 0.01)?;
        /// frontier.push("https://example.com/".to_string());
        /// frontier.push("https://example.com/about".to_string());
        /// assert_eq!(frontier.pop().as_deref(), Some("https://example.com/"));
        ///
        /// let mut bytes = Vec::new();
        /// frontier.write_to(&mut bytes)?;
        /// let restarted: Frontier<String> = Frontier::read_from(bytes.as_slice())?;
        /// assert!(!restarted.push("https://example.com/".to_string())); // seen
        /// assert_eq!(restarted.pop().as_deref(), Some("https://example.com/about"));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn write_to;

        /// Reads a frontier that [`write_to`](Self::write_to) wrote, checking
        /// every field and both checksums; allocates only as the input delivers.
        ///
        /// # Errors
        ///
        /// As [`BloomFilter::read_from`](crate::BloomFilter::read_from) and
        /// [`ScalableBloomFilter::read_from`](crate::ScalableBloomFilter::read_from),
        /// and [`Error::InvalidItem`] when an item does not decode as a `T`.
        fn read_from;
    }
}
