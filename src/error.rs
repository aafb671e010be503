//! The crate's one error type.

use std::fmt;

/// Everything that can go wrong when building or combining a filter.
///
/// Every bad input has its own variant, and every message says what to do
/// about it. Nothing in this crate panics or silently clamps on bad input.
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, Error};
///
/// let err = BloomFilter::<str>::new(0, 0.01).unwrap_err();
/// assert_eq!(err, Error::ZeroCapacity);
/// println!("{err}"); // capacity must be at least 1: pass the number of items ...
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The requested capacity was 0.
    ZeroCapacity,
    /// The target false-positive rate was not strictly between 0 and 1
    /// (or was NaN).
    InvalidFalsePositiveRate {
        /// The rate that was passed.
        rate: f64,
    },
    /// The filter needed for this capacity and rate would be larger than the
    /// address space allows (more than `isize::MAX` bytes).
    TooLarge {
        /// The capacity that was asked for.
        capacity: usize,
        /// The false-positive rate that was asked for.
        rate: f64,
    },
    /// The allocator could not provide the filter's memory.
    AllocationFailed {
        /// How many bytes were requested.
        bytes: usize,
    },
    /// The operating system's entropy source failed while seeding a filter.
    SeedUnavailable {
        /// What the entropy source reported.
        reason: String,
    },
    /// `union` was given a filter with a different number of blocks.
    SizeMismatch {
        /// Bytes of bit array in `self`.
        ours: usize,
        /// Bytes of bit array in the other filter.
        theirs: usize,
    },
    /// `union` was given a filter with a different number of hash functions.
    HashCountMismatch {
        /// `num_hashes()` of `self`.
        ours: u32,
        /// `num_hashes()` of the other filter.
        theirs: u32,
    },
    /// `union` was given a filter with a different [`Layout`](crate::Layout).
    LayoutMismatch {
        /// The layout of `self`.
        ours: crate::Layout,
        /// The layout of the other filter.
        theirs: crate::Layout,
    },
    /// `union` was given a filter whose hasher (seed) differs.
    HasherMismatch,
    /// A scalable filter's growth factor was not 2 or 4.
    InvalidGrowthFactor {
        /// The factor that was passed.
        growth: usize,
    },
    /// A scalable filter's tightening ratio was outside [0.8, 0.9] (or NaN).
    InvalidTighteningRatio {
        /// The ratio that was passed.
        ratio: f64,
    },
    /// A scalable filter's memory limit is smaller than its first stage.
    MemoryLimitTooSmall {
        /// The limit that was set, in bytes.
        limit: usize,
        /// Bytes the first stage needs.
        first_stage: usize,
    },
    /// A scalable filter is full and its next stage would pass its memory
    /// limit (or could not be made at all: see `needed`).
    MemoryLimitReached {
        /// The limit that was set, in bytes.
        limit: usize,
        /// Bytes the filter would take with its next stage.
        needed: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ZeroCapacity => write!(
                f,
                "capacity must be at least 1: pass the number of items you expect to insert"
            ),
            Error::InvalidFalsePositiveRate { rate } => write!(
                f,
                "false-positive rate {rate} is not strictly between 0 and 1: \
                 pass a probability such as 0.01 for 1%"
            ),
            Error::TooLarge { capacity, rate } => write!(
                f,
                "a filter for {capacity} items at rate {rate} would need more than isize::MAX bytes: \
                 lower the capacity or raise the rate"
            ),
            Error::AllocationFailed { bytes } => write!(
                f,
                "could not allocate {bytes} bytes for the filter: \
                 lower the capacity, raise the rate, or free memory"
            ),
            Error::SeedUnavailable { reason } => write!(
                f,
                "the OS entropy source failed ({reason}): \
                 pass an explicit seed with the builder's `.seed(..)`"
            ),
            Error::SizeMismatch { ours, theirs } => write!(
                f,
                "cannot combine filters of different sizes ({ours} vs {theirs} bytes): \
                 build both with the same capacity, rate and layout"
            ),
            Error::HashCountMismatch { ours, theirs } => write!(
                f,
                "cannot combine filters with different hash counts ({ours} vs {theirs}): \
                 build both with the same rate and layout"
            ),
            Error::LayoutMismatch { ours, theirs } => write!(
                f,
                "cannot combine a {ours:?} filter with a {theirs:?} filter: \
                 build both with the same layout"
            ),
            Error::HasherMismatch => write!(
                f,
                "cannot combine filters with different hashers or seeds: \
                 build both with the same `.seed(..)`"
            ),
            Error::InvalidGrowthFactor { growth } => write!(
                f,
                "growth factor {growth} is not supported: pass 2 (the default; stages double) \
                 or 4 (fewer, larger stages)"
            ),
            Error::InvalidTighteningRatio { ratio } => write!(
                f,
                "tightening ratio {ratio} is outside [0.8, 0.9]: pass 0.85 (the default), \
                 or 0.9 for less memory per stage and a smaller first stage"
            ),
            Error::MemoryLimitTooSmall { limit, first_stage } => write!(
                f,
                "the memory limit of {limit} bytes is smaller than the first stage \
                 ({first_stage} bytes): raise the limit or lower the initial capacity"
            ),
            Error::MemoryLimitReached { limit, needed } => write!(
                f,
                "the filter is full and its next stage would take it to {needed} bytes, \
                 past its memory limit of {limit}: raise `.memory_limit(..)`, or accept a \
                 rising false-positive rate (`insert` keeps adding to the last stage)"
            ),
        }
    }
}

impl std::error::Error for Error {}
