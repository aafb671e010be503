//! `Serialize` / `Deserialize` for every filter (the `serde` feature):
//! the bytes of `FORMAT.md` as one byte string, read back with the same
//! validation as `read_from`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{self, Serializer};
use serde::{Deserialize, Serialize};

use super::{FrontierItem, Saved};
use crate::{
    BloomFilter, CountingBloomFilter, CuckooFilter, DefaultHasher, Frontier, ScalableBloomFilter,
    WindowedBloomFilter,
};

fn serialize<V: Saved, Z: Serializer>(value: &V, serializer: Z) -> Result<Z::Ok, Z::Error> {
    let bytes = super::write_to(value, Vec::new()).map_err(ser::Error::custom)?;
    serializer.serialize_bytes(&bytes)
}

/// Accepts a byte string, or a sequence of bytes for formats without one
/// (JSON); reads a whole filter and nothing after it.
struct SavedVisitor<V>(PhantomData<V>);

impl<V: Saved> SavedVisitor<V> {
    fn read<E: de::Error>(bytes: &[u8]) -> Result<V, E> {
        let mut input = bytes;
        let value = super::read_from(&mut input).map_err(E::custom)?;
        if !input.is_empty() {
            return Err(E::custom(crate::Error::TrailingBytes));
        }
        Ok(value)
    }
}

impl<'de, V: Saved> Visitor<'de> for SavedVisitor<V> {
    type Value = V;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("the bytes of a saved atomic-bloom filter")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<V, E> {
        Self::read(bytes)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V, A::Error> {
        // Grows as elements arrive: a length hint is not trusted.
        let mut bytes = Vec::new();
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.push(byte);
        }
        Self::read(&bytes)
    }
}

fn deserialize<'de, V: Saved, D: Deserializer<'de>>(deserializer: D) -> Result<V, D::Error> {
    deserializer.deserialize_bytes(SavedVisitor(PhantomData))
}

macro_rules! serde_through_format {
    ($([$($bounds:tt)*] $filter:ty),* $(,)?) => {$(
        impl<$($bounds)*> Serialize for $filter {
            fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
                serialize(self, serializer)
            }
        }

        impl<'de, $($bounds)*> Deserialize<'de> for $filter {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserialize(deserializer)
            }
        }
    )*};
}

serde_through_format!(
    [T: ?Sized] BloomFilter<T, DefaultHasher>,
    [T: ?Sized] CountingBloomFilter<T, DefaultHasher>,
    [T: ?Sized] ScalableBloomFilter<T, DefaultHasher>,
    [T: FrontierItem] Frontier<T, DefaultHasher>,
    [T: ?Sized] WindowedBloomFilter<T, DefaultHasher>,
    [T: ?Sized] CuckooFilter<T, DefaultHasher>,
);
