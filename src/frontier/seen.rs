//! The frontier's seen-filter: a fixed filter with its fill mark, a
//! scalable one, or a windowed one, behind one set of methods.

use std::fmt;
use std::hash::{BuildHasher, Hash};

use crate::fill::Tracked;
use crate::{BloomFilter, Layout, ScalableBloomFilter, WindowedBloomFilter};

pub(crate) enum Seen<T, S> {
    Fixed(Tracked<T, S>),
    Scalable(ScalableBloomFilter<T, S>),
    /// Forgets: an item is admitted again once it has left the window.
    /// Boxed: its ring's cache-padded words make it several times the size
    /// of the others.
    Windowed(Box<WindowedBloomFilter<T, S>>),
}

/// What inserting into the seen-filter did.
pub(crate) struct Inserted {
    /// The item was new.
    pub(crate) new: bool,
    /// The filter can no longer keep its rate: a fixed filter passed its
    /// capacity, or a scalable one stopped growing at its memory limit.
    pub(crate) over_capacity: bool,
}

impl<T, S> Seen<T, S> {
    /// A fixed filter; the items it holds already count towards its fill
    /// (a popcount of the filter, O(size)).
    pub(crate) fn fixed(filter: BloomFilter<T, S>) -> Self {
        Seen::Fixed(Tracked::new_filled(filter, None, false))
    }

    /// A fixed filter just built, which holds nothing: its fill starts at
    /// 0 without a pass over the bits (a constructor costs what it
    /// allocates; the popcount of a fresh multi-gigabyte filter took
    /// seconds).
    pub(crate) fn fresh(filter: BloomFilter<T, S>) -> Self {
        Seen::Fixed(Tracked::new_empty(filter, None, false))
    }

    /// Whether the filter is past what it holds at its rate now.
    pub(crate) fn is_over_capacity(&self) -> bool {
        match self {
            Seen::Fixed(tracked) => tracked.is_full(),
            Seen::Scalable(filter) => filter.growth_failed(),
            Seen::Windowed(_) => false,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        match self {
            Seen::Fixed(tracked) => tracked.filter().capacity(),
            Seen::Scalable(filter) => filter.capacity(),
            Seen::Windowed(filter) => filter.window(),
        }
    }

    pub(crate) fn target_fpr(&self) -> f64 {
        match self {
            Seen::Fixed(tracked) => tracked.filter().target_fpr(),
            Seen::Scalable(filter) => filter.target_fpr(),
            Seen::Windowed(filter) => filter.target_fpr(),
        }
    }

    pub(crate) fn estimated_fpr(&self) -> f64 {
        match self {
            Seen::Fixed(tracked) => tracked.filter().estimated_fpr(),
            Seen::Scalable(filter) => filter.estimated_fpr(),
            Seen::Windowed(filter) => filter.expected_fpr(),
        }
    }

    pub(crate) fn len_estimate(&self) -> usize {
        match self {
            Seen::Fixed(tracked) => tracked.filter().len_estimate(),
            Seen::Scalable(filter) => filter.len_estimate(),
            // Every ended generation took its capacity of new items.
            Seen::Windowed(filter) => (filter.epoch() as usize)
                .saturating_mul(filter.generation_capacity())
                .saturating_add(filter.generation_len()),
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        match self {
            Seen::Fixed(tracked) => tracked.memory_bytes(),
            Seen::Scalable(filter) => filter.memory_bytes(),
            Seen::Windowed(filter) => filter.memory_bytes(),
        }
    }

    pub(crate) fn layout(&self) -> Layout {
        match self {
            Seen::Fixed(tracked) => tracked.filter().layout(),
            Seen::Scalable(filter) => filter.layout(),
            Seen::Windowed(filter) => filter.layout(),
        }
    }
}

impl<T, S: BuildHasher> Seen<T, S> {
    /// Inserts `item` (hashed with the filter's hasher).
    #[inline]
    pub(crate) fn insert<Q: ?Sized + Hash>(&self, item: &Q) -> Inserted {
        match self {
            Seen::Fixed(tracked) => {
                let outcome = tracked.insert_hash(tracked.filter().hasher().hash_one(item));
                Inserted {
                    new: outcome.new,
                    over_capacity: outcome.full,
                }
            }
            Seen::Scalable(filter) => {
                let new = filter.insert_hash(filter.hasher().hash_one(item));
                Inserted {
                    new,
                    over_capacity: new && filter.growth_failed(),
                }
            }
            Seen::Windowed(filter) => Inserted {
                // Seen within the window: dropped, and its age kept.
                new: filter.insert_hash_if_new(filter.hasher().hash_one(item)),
                over_capacity: false,
            },
        }
    }

    /// Whether `item` may have been inserted.
    #[inline]
    pub(crate) fn contains<Q: ?Sized + Hash>(&self, item: &Q) -> bool {
        match self {
            Seen::Fixed(tracked) => tracked.contains_hash(tracked.filter().hasher().hash_one(item)),
            Seen::Scalable(filter) => filter.contains_hash(filter.hasher().hash_one(item)),
            Seen::Windowed(filter) => filter.contains_hash(filter.hasher().hash_one(item)),
        }
    }
}

impl<T, S: fmt::Debug> fmt::Debug for Seen<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seen::Fixed(tracked) => tracked.filter().fmt(f),
            Seen::Scalable(filter) => filter.fmt(f),
            Seen::Windowed(filter) => filter.fmt(f),
        }
    }
}
