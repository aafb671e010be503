//! The crate's one error type, the groups its variants fall in, and the
//! I/O error it keeps as its source.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::sync::PlainArc;

/// Everything that can go wrong when building, combining, saving or loading
/// a filter.
///
/// Every bad input has its own variant, and every message says what to do
/// about it. Nothing in this crate panics or silently clamps on bad input.
///
/// The variants fall into a few groups, which [`kind`](Error::kind) names:
/// match on it to handle a whole group (bad parameters, filters that cannot
/// be combined, memory, I/O, input that cannot be loaded), and on the
/// variant where one case needs its own handling. An [`Error::Io`] keeps the
/// [`std::io::Error`] it met as its [`source`](std::error::Error::source).
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, Error, ErrorKind};
///
/// let err = BloomFilter::<str>::new(0, 0.01).unwrap_err();
/// assert_eq!(err, Error::ZeroCapacity);
/// assert_eq!(err.kind(), ErrorKind::Parameter);
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
    /// A scalable filter's first-stage share of the rate was not strictly
    /// between 0 and 1 (or NaN).
    InvalidFirstStageShare {
        /// The share that was passed.
        share: f64,
    },
    /// A scalable filter's first-stage share leaves its second stage a
    /// rate under 1/1024 of the first stage's (see
    /// [`first_stage_share`](crate::ScalableBloomFilterBuilder::first_stage_share)).
    SecondStageTooDense {
        /// The share that was passed.
        share: f64,
        /// The tightening ratio it was passed with.
        tightening: f64,
        /// The largest share that ratio allows.
        max_share: f64,
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
    /// A windowed filter was asked to remember a window of 0 items.
    ZeroWindow,
    /// A windowed filter's time window was zero, or too long to count in
    /// nanoseconds (more than about 292 years).
    InvalidWindowDuration {
        /// The duration that was passed.
        duration: std::time::Duration,
    },
    /// A windowed filter's time window is shorter than
    /// [`WindowedBloomFilter::MIN_TIME_WINDOW`](crate::WindowedBloomFilter::MIN_TIME_WINDOW)
    /// (1 ms): an insert could not place its item in a generation before
    /// that generation's share of the window ran out.
    WindowTooShort {
        /// The duration that was passed.
        duration: std::time::Duration,
        /// The shortest time window a windowed filter keeps.
        min: std::time::Duration,
    },
    /// A windowed filter's generation count does not suit its layout: 2,
    /// 4 or 8 for [`Layout::CacheLine`](crate::Layout::CacheLine) and
    /// [`Layout::Word`](crate::Layout::Word), 2 to 16 for
    /// [`Layout::Compact`](crate::Layout::Compact).
    InvalidGenerations {
        /// The count that was passed.
        generations: u32,
        /// The layout it was passed with.
        layout: crate::Layout,
    },
    /// A [`CuckooFilter`](crate::CuckooFilter) was asked for a rate below
    /// what its tightest fingerprints (32 bits) give.
    CuckooRateTooLow {
        /// The rate that was passed.
        rate: f64,
        /// The lowest rate a cuckoo filter gives.
        lowest: f64,
    },
    /// A [`CuckooFilter`](crate::CuckooFilter) found no room for an item:
    /// both its buckets are full and no chain of moves frees a slot. The
    /// filter holds exactly what it held before the insert.
    CuckooFilterFull {
        /// Items the filter holds (what `len()` says).
        len: usize,
        /// Its capacity.
        capacity: usize,
    },
    /// Reading or writing a saved filter failed in the operating system
    /// (file not found, permission denied, disk full, ...), or in the
    /// reader or writer passed in. Its message says what was being done
    /// and to which file, and leaves the system's own words to its
    /// [`source`](std::error::Error::source), so that an error-chain
    /// printer shows each once.
    Io {
        /// What kind of I/O error it was (`source.kind()`), to match on.
        kind: io::ErrorKind,
        /// What was being done: `"reading"` or `"saving"` a file, or
        /// reading from or writing to the reader or writer passed in.
        operation: &'static str,
        /// The file `load` read or `save` wrote; `None` for a reader or
        /// writer passed in.
        path: Option<PathBuf>,
        /// The error itself: also what
        /// [`source`](std::error::Error::source) returns.
        source: IoError,
    },
    /// Loading: the input does not start with the format's magic bytes
    /// (`FORMAT.md`), so it is not a saved atomic-bloom filter.
    NotAFilter,
    /// Loading: the input was written in a format version this build does
    /// not read.
    UnsupportedVersion {
        /// The version in the input.
        found: u16,
        /// The newest version this build reads.
        supported: u16,
    },
    /// Loading: the input holds another kind of filter than the one asked
    /// for.
    WrongKind {
        /// The type `read_from` was called on.
        expected: &'static str,
        /// The type the input holds.
        found: &'static str,
    },
    /// Loading: the input's kind byte names no kind of filter.
    UnknownKind {
        /// The kind byte in the input.
        found: u8,
    },
    /// Loading: the input's filter was hashed with a scheme this build does
    /// not know, so its bits cannot be probed.
    UnsupportedHashScheme {
        /// The hash scheme id in the input.
        found: u8,
    },
    /// Loading: the input ended before the filter did.
    Truncated {
        /// The part of the format that was being read.
        section: &'static str,
    },
    /// Loading: a checksum does not match the bytes it covers; some bit of
    /// the input was changed after it was written.
    ChecksumMismatch {
        /// The part of the format the checksum covers.
        section: &'static str,
        /// The checksum stored in the input.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// Loading: a stored length or size does not fit this machine's address
    /// space, or overflows when multiplied out.
    LengthOverflow {
        /// The field that holds it.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// Loading: the input's filter sets zero bits per item (k = 0).
    ZeroHashes,
    /// Loading: the input's scalable filter has no stage.
    ZeroStages,
    /// Loading: the input's false-positive rate is not strictly between 0
    /// and 1 (or is NaN).
    InvalidStoredRate {
        /// The rate in the input.
        rate: f64,
    },
    /// Loading: a count stored in the input disagrees with what the input
    /// holds (set bits against the bits, queued items against the items).
    CountMismatch {
        /// What is counted.
        field: &'static str,
        /// The count stored in the input.
        stored: u64,
        /// The count of what was read.
        counted: u64,
    },
    /// Loading: a field holds a value no filter can have (an unknown layout,
    /// a block count that is not a power of two, a reserved byte that is not
    /// zero, ...).
    InvalidField {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A saved windowed filter's epoch is past
    /// [`WindowedBloomFilter::MAX_LOADED_EPOCH`](crate::WindowedBloomFilter::MAX_LOADED_EPOCH):
    /// loaded, it could not rotate for a server's life.
    EpochOutOfRange {
        /// The epoch the input holds.
        epoch: u64,
        /// The last epoch a filter may be loaded at.
        max: u64,
    },
    /// Loading: a frontier's queued item could not be decoded.
    InvalidItem {
        /// Its position in the queue, from 0.
        index: u64,
        /// Why it could not be decoded.
        reason: String,
    },
    /// Loading: the input goes on after the end of the filter.
    TrailingBytes,
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
                "growth factor {growth} is outside [1, 32768]: pass 2 (the default; stages \
                 double), 4 for fewer, larger stages, or 1 for stages of equal size"
            ),
            Error::InvalidTighteningRatio { ratio } => write!(
                f,
                "tightening ratio {ratio} is outside [0.8, 0.9]: pass 0.85 (the default), \
                 or 0.9 for less memory per stage and a smaller first stage"
            ),
            Error::InvalidFirstStageShare { share } => write!(
                f,
                "first-stage share {share} is not strictly between 0 and 1: pass 0.8 to give \
                 the first stage 80% of the rate, or leave it unset for 1 - tightening ratio"
            ),
            Error::SecondStageTooDense {
                share,
                tightening,
                max_share,
            } => write!(
                f,
                "first-stage share {share} at tightening ratio {tightening} leaves the second \
                 stage a rate under 1/1024 of the first's: each of its items would cost over 14 \
                 bits more, for under 0.021 bits saved an item in the first stage; pass a share \
                 of at most {max_share} (0.99 passes at every ratio)"
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
            Error::ZeroWindow => write!(
                f,
                "a window of 0 items remembers nothing: pass the number of most recent items \
                 the filter must remember (for a time window, the most items inserted in one \
                 window)"
            ),
            Error::InvalidWindowDuration { duration } => write!(
                f,
                "time window {duration:?} is zero or too long: pass a duration from 1 ms to \
                 about 292 years, such as Duration::from_secs(3600)"
            ),
            Error::WindowTooShort { duration, min } => write!(
                f,
                "time window {duration:?} is shorter than {min:?}, the shortest a windowed filter \
                 keeps (an insert must place its item before its generation's share of the \
                 window runs out): pass at least {min:?}, or use a count window"
            ),
            Error::InvalidGenerations {
                generations,
                layout,
            } => write!(
                f,
                "{generations} generations do not suit a windowed {layout:?} filter: pass 2, 4 \
                 or 8 for Layout::CacheLine or Layout::Word, 2 to 16 for Layout::Compact, or \
                 leave it unset for the layout's least memory"
            ),
            Error::Io {
                kind,
                operation,
                path: Some(path),
                ..
            } => {
                let advice = match kind {
                    io::ErrorKind::NotFound if *operation == SAVING => {
                        "check that its directory exists"
                    }
                    io::ErrorKind::NotFound => "check the path",
                    io::ErrorKind::PermissionDenied => "check its permissions",
                    _ if *operation == SAVING => {
                        "check the path, its permissions and the free space"
                    }
                    _ => "check the path and its permissions",
                };
                write!(f, "{operation} {} failed: {advice}", path.display())
            }
            Error::Io { operation, .. } => write!(
                f,
                "{operation} failed: the error is the reader's or writer's own (this error's \
                 source)"
            ),
            Error::NotAFilter => write!(
                f,
                "the input does not start with atomic-bloom's magic bytes: it is not a saved \
                 filter (or was written by another program); pass a file written by `save`"
            ),
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "the input is in format version {found}, and this build reads up to version \
                 {supported}: load it with the atomic-bloom that wrote it, or a newer one"
            ),
            Error::WrongKind { expected, found } => write!(
                f,
                "the input holds a {found}, not a {expected}: load it with `{found}::read_from`"
            ),
            Error::UnknownKind { found } => write!(
                f,
                "the input's kind byte {found} names no filter: the input is corrupt or from a \
                 newer atomic-bloom"
            ),
            Error::UnsupportedHashScheme { found } => write!(
                f,
                "the input was hashed with scheme {found}, which this build does not know: \
                 load it with the atomic-bloom that wrote it"
            ),
            Error::Truncated { section } => write!(
                f,
                "the input ended inside the {section}: the file was cut short (an interrupted \
                 copy or download?); load a complete copy"
            ),
            Error::ChecksumMismatch {
                section,
                stored,
                computed,
            } => write!(
                f,
                "the {section} is corrupt: its checksum is {computed:#010x} but {stored:#010x} \
                 was stored; load an intact copy"
            ),
            Error::LengthOverflow { field, value } => write!(
                f,
                "the input's {field} ({value}) is too large for this machine: the input is \
                 corrupt, or was written on a 64-bit machine for a larger filter than fits here"
            ),
            Error::ZeroHashes => write!(
                f,
                "the input's filter sets 0 bits per item (k = 0), which no filter does: the \
                 input is corrupt"
            ),
            Error::ZeroStages => write!(
                f,
                "the input's scalable filter has no stage, which no filter has: the input is \
                 corrupt"
            ),
            Error::InvalidStoredRate { rate } => write!(
                f,
                "the input's false-positive rate {rate} is not strictly between 0 and 1: the \
                 input is corrupt"
            ),
            Error::CountMismatch {
                field,
                stored,
                counted,
            } => write!(
                f,
                "the input stores {stored} {field} but holds {counted}: the input is corrupt"
            ),
            Error::InvalidField { field, value } => write!(
                f,
                "the input's {field} is {value}, which no filter has: the input is corrupt"
            ),
            Error::EpochOutOfRange { epoch, max } => write!(
                f,
                "the input's windowed filter is at epoch {epoch}, past {max}: loaded, it could \
                 not rotate for a server's life (no filter reaches it in centuries), so the \
                 input is corrupt; rebuild the filter"
            ),
            Error::InvalidItem { index, reason } => write!(
                f,
                "queued item {index} cannot be decoded ({reason}): load the frontier with the \
                 item type it was saved with"
            ),
            Error::CuckooRateTooLow { rate, lowest } => write!(
                f,
                "a cuckoo filter cannot reach a false-positive rate of {rate:e}: its tightest \
                 fingerprints give {lowest:e}; pass a rate at or above that"
            ),
            Error::CuckooFilterFull { len, capacity } => write!(
                f,
                "the cuckoo filter is full ({len} items, capacity {capacity}) and nothing was \
                 lost: remove items, build a larger filter, or build it with `.growth(true)`"
            ),
            Error::TrailingBytes => write!(
                f,
                "the input goes on after the end of the filter: pass exactly the bytes one \
                 `write_to` wrote"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.get()),
            _ => None,
        }
    }
}

/// The group an [`Error`] falls in: what [`Error::kind`] returns, for code
/// that handles a whole group alike.
///
/// # Example
///
/// ```
/// use atomic_bloom::{BloomFilter, Error, ErrorKind};
///
/// fn open(path: &str) -> Result<BloomFilter<str>, Error> {
///     match BloomFilter::load(path) {
///         // No file yet, or one that cannot be read as a filter: start afresh.
///         Err(err) if err.kind() == ErrorKind::Load => BloomFilter::new(1_000_000, 0.01),
///         Err(Error::Io { kind: std::io::ErrorKind::NotFound, .. }) => {
///             BloomFilter::new(1_000_000, 0.01)
///         }
///         other => other,
///     }
/// }
/// let seen = open("/no/such/dir/seen.bloom")?;
/// assert!(seen.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A constructor or builder was given a value it cannot build from (a
    /// capacity of 0, a rate outside (0, 1), a growth option out of range,
    /// a filter too large for the address space): fix the argument.
    Parameter,
    /// Two filters built differently were to be combined (`union`): build
    /// both alike.
    Incompatible,
    /// The system could not provide what was needed: memory (the
    /// allocator refused, a scalable filter reached its memory limit, a
    /// cuckoo filter is full) or the entropy that seeds a filter.
    Resource,
    /// Reading or writing failed in the operating system or in the reader
    /// or writer passed in: the variant is [`Error::Io`], and its
    /// [`source`](std::error::Error::source) is the [`std::io::Error`].
    Io,
    /// The input being loaded is not a filter this build can read:
    /// corrupt, cut short, of another kind or a newer format version.
    Load,
}

impl Error {
    /// The group this error falls in.
    ///
    /// Every variant belongs to exactly one group; a variant added later
    /// joins one of them (the match below has no catch-all, so the
    /// compiler asks for its group).
    ///
    /// # Example
    ///
    /// ```
    /// use atomic_bloom::{BloomFilter, ErrorKind};
    ///
    /// let err = BloomFilter::<u64>::read_from(&b"not a filter"[..]).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Load);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ZeroCapacity
            | Error::InvalidFalsePositiveRate { .. }
            | Error::TooLarge { .. }
            | Error::InvalidGrowthFactor { .. }
            | Error::InvalidTighteningRatio { .. }
            | Error::InvalidFirstStageShare { .. }
            | Error::SecondStageTooDense { .. }
            | Error::MemoryLimitTooSmall { .. }
            | Error::ZeroWindow
            | Error::InvalidWindowDuration { .. }
            | Error::WindowTooShort { .. }
            | Error::InvalidGenerations { .. }
            | Error::CuckooRateTooLow { .. } => ErrorKind::Parameter,
            Error::SizeMismatch { .. }
            | Error::HashCountMismatch { .. }
            | Error::LayoutMismatch { .. }
            | Error::HasherMismatch => ErrorKind::Incompatible,
            Error::AllocationFailed { .. }
            | Error::MemoryLimitReached { .. }
            | Error::CuckooFilterFull { .. }
            | Error::SeedUnavailable { .. } => ErrorKind::Resource,
            Error::Io { .. } => ErrorKind::Io,
            Error::NotAFilter
            | Error::UnsupportedVersion { .. }
            | Error::WrongKind { .. }
            | Error::UnknownKind { .. }
            | Error::UnsupportedHashScheme { .. }
            | Error::Truncated { .. }
            | Error::ChecksumMismatch { .. }
            | Error::LengthOverflow { .. }
            | Error::ZeroHashes
            | Error::ZeroStages
            | Error::InvalidStoredRate { .. }
            | Error::CountMismatch { .. }
            | Error::InvalidField { .. }
            | Error::EpochOutOfRange { .. }
            | Error::InvalidItem { .. }
            | Error::TrailingBytes => ErrorKind::Load,
        }
    }
}

/// The [`std::io::Error`] an [`Error::Io`] met, shared by the error's
/// clones (an `io::Error` cannot be cloned). It derefs to the `io::Error`;
/// two are equal when their kinds and messages are.
///
/// # Example
///
/// ```
/// use std::error::Error as _;
/// use atomic_bloom::{BloomFilter, Error};
///
/// let err = BloomFilter::<u64>::load("/no/such/dir/filter.bin").unwrap_err();
/// let Error::Io { source, .. } = &err else { panic!("{err:?}") };
/// assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
/// let io = err.source().unwrap().downcast_ref::<std::io::Error>().unwrap();
/// assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
/// ```
#[derive(Clone)]
pub struct IoError(PlainArc<io::Error>);

impl IoError {
    /// The `io::Error`.
    ///
    /// # Example
    ///
    /// ```
    /// let err = atomic_bloom::IoError::from(std::io::Error::other("disk on fire"));
    /// assert_eq!(err.get().to_string(), "disk on fire");
    /// ```
    pub fn get(&self) -> &io::Error {
        &self.0
    }
}

impl From<io::Error> for IoError {
    fn from(error: io::Error) -> Self {
        IoError(PlainArc::new(error))
    }
}

impl std::ops::Deref for IoError {
    type Target = io::Error;

    fn deref(&self) -> &io::Error {
        &self.0
    }
}

impl PartialEq for IoError {
    fn eq(&self, other: &Self) -> bool {
        PlainArc::ptr_eq(&self.0, &other.0)
            || (self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string())
    }
}

impl fmt::Debug for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

/// What [`Error::Io`] says `save` was doing.
pub(crate) const SAVING: &str = "saving";
/// What [`Error::Io`] says `load` was doing.
pub(crate) const READING: &str = "reading";

/// An I/O error met while doing something unnamed: reading or writing.
impl From<IoError> for Error {
    fn from(source: IoError) -> Self {
        Error::io(source, "reading or writing")
    }
}

impl Error {
    /// An [`Error::Io`] met while doing `operation`, to no named file.
    pub(crate) fn io(source: impl Into<IoError>, operation: &'static str) -> Self {
        let source = source.into();
        Error::Io {
            kind: source.kind(),
            operation,
            path: None,
            source,
        }
    }

    /// This error, saying that it was met doing `operation` to the file at
    /// `path`, if it is an I/O error.
    pub(crate) fn on_file(self, operation: &'static str, path: &Path) -> Self {
        match self {
            Error::Io { kind, source, .. } => Error::Io {
                kind,
                operation,
                path: Some(path.to_path_buf()),
                source,
            },
            other => other,
        }
    }
}
