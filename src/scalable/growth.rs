//! How the scalable filter grows: the plan that fixes the size and rate of
//! every stage, the immutable stage list, and appending a stage to it (the
//! protocol of `src/PROTOCOLS.md`, "Scalable filter: growth").

use super::{lock, ScalableBloomFilter};
use crate::fill::Tracked;
use crate::sizing::{self, Geometry, Scheme};
use crate::sync::{Arc, Ordering};
use crate::{BloomFilter, Error, Layout, Sizing};

/// One stage of a [`ScalableBloomFilter`], as
/// [`stage_stats`](ScalableBloomFilter::stage_stats) reports it.
///
/// # Example
///
/// ```
/// let f: atomic_bloom::ScalableBloomFilter<u64> =
///     atomic_bloom::ScalableBloomFilter::builder(1_000, 0.01).seed(1).build()?;
/// for i in 0..10_000u64 { f.insert(&i); }
/// let stages = f.stage_stats();
/// assert_eq!(stages.len(), f.stages());
/// // Every stage but the newest grew once it reached its fill (a small
/// // one, by the rate of its bits: within a few percent of the mark).
/// assert!(stages[0].set_bits as f64 >= 0.9 * stages[0].set_bits_when_full as f64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct StageStats {
    /// Items the stage holds at its own rate (after rounding its size up).
    pub capacity: usize,
    /// The stage's own false-positive rate; the stages' rates sum to at
    /// most the filter's.
    pub target_fpr: f64,
    /// Bits set now: a popcount of the stage, O(its size).
    pub set_bits: usize,
    /// Set bits at which the stage counts as full, and the filter grows. A
    /// stage of 64 cache lines or fewer counts as full when the rate of its
    /// bits would pass its target with one more item instead, which
    /// unevenly loaded blocks reach a few percent before or after this.
    pub set_bits_when_full: usize,
    /// Bytes the stage takes.
    pub memory_bytes: usize,
}

impl<T: ?Sized> Stage<T> {
    pub(super) fn stats(&self) -> StageStats {
        let (set_bits, set_bits_when_full) = self.fill();
        StageStats {
            capacity: self.filter().capacity(),
            target_fpr: self.filter().target_fpr(),
            set_bits,
            set_bits_when_full,
            memory_bytes: self.memory_bytes(),
        }
    }
}

/// A stage: a Bloom core without a hasher of its own (one hash serves every
/// stage), and the mark at which it is full.
pub(crate) type Stage<T> = Tracked<T, ()>;

/// The default memory limit: 1 GiB.
pub(super) const DEFAULT_MEMORY_LIMIT: usize = 1 << 30;

/// The largest growth factor (RedisBloom's largest `EXPANSION`).
pub(crate) const MAX_GROWTH_FACTOR: u32 = 32768;

/// The least a second stage's rate may be, as a share of the first
/// stage's: ten halvings, so that an item costs it at most about
/// `log2(1024) / ln 2 = 14.4` bits more than one of the first (see
/// [`first_stage_share`](super::ScalableBloomFilterBuilder::first_stage_share)).
const MIN_SECOND_STAGE_RATIO: f64 = 1.0 / 1024.0;

/// How the filter grows: stage `i` holds `initial_capacity · growth^i` items
/// at rate `rate · (1 - tightening) · tightening^i` (Almeida et al.), or,
/// with a first-stage share `f`, stage 0 at `rate · f` and stage `i ≥ 1` at
/// `rate · (1 - f) · (1 - tightening) · tightening^(i-1)`. Either way the
/// rates of all stages sum to `rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct GrowthPlan {
    pub(crate) initial_capacity: usize,
    /// The total rate the user asked for.
    pub(crate) rate: f64,
    pub(crate) growth: u32,
    pub(crate) tightening: f64,
    /// The first stage's share of `rate`; `None`: `1 - tightening`.
    pub(crate) first_share: Option<f64>,
    pub(crate) layout: Layout,
    pub(crate) sizing: Sizing,
    pub(crate) memory_limit: Option<usize>,
    /// Overrides the first stage's fill, in set bits (loom models only).
    pub(crate) first_stage_fill_bits: Option<usize>,
    /// Every insert counts towards a stage's fill, none sampled: growth is
    /// decided by the bits alone (see the builder's `exact_fill`).
    pub(crate) exact_fill: bool,
}

impl GrowthPlan {
    /// Checks the options a user (or a saved file) chose.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        crate::sizing::validate(self.initial_capacity, self.rate)?;
        if !(1..=MAX_GROWTH_FACTOR).contains(&self.growth) {
            return Err(Error::InvalidGrowthFactor {
                growth: self.growth as usize,
            });
        }
        if !(0.8..=0.9).contains(&self.tightening) {
            return Err(Error::InvalidTighteningRatio {
                ratio: self.tightening,
            });
        }
        if let Some(share) = self
            .first_share
            .filter(|share| !(*share > 0.0 && *share < 1.0))
        {
            return Err(Error::InvalidFirstStageShare { share });
        }
        if let Some(share) = self.first_share {
            // The second stage's rate over the first's is
            // (1 - share)(1 - tightening) / share; at least the ratio above
            // while the share is at most this.
            let rest = 1.0 - self.tightening;
            let max_share = rest / (rest + MIN_SECOND_STAGE_RATIO);
            if share > max_share {
                return Err(Error::SecondStageTooDense {
                    share,
                    tightening: self.tightening,
                    max_share,
                });
            }
        }
        Ok(())
    }

    /// The rate of stage `index`; they sum to `rate` over all stages.
    pub(crate) fn stage_rate(&self, index: usize) -> f64 {
        let ratio = self.tightening;
        match self.first_share {
            None => {
                let exponent = i32::try_from(index).unwrap_or(i32::MAX);
                self.rate * (1.0 - ratio) * ratio.powi(exponent)
            }
            Some(share) if index == 0 => self.rate * share,
            Some(share) => {
                let exponent = i32::try_from(index - 1).unwrap_or(i32::MAX);
                self.rate * (1.0 - share) * (1.0 - ratio) * ratio.powi(exponent)
            }
        }
    }

    /// The capacity asked of stage `index`: the initial capacity times the
    /// growth factor to the `index`th power (`None` past `usize`).
    pub(crate) fn stage_capacity(&self, index: usize) -> Option<usize> {
        u32::try_from(index)
            .ok()
            .and_then(|exponent| (self.growth as usize).checked_pow(exponent))
            .and_then(|factor| factor.checked_mul(self.initial_capacity))
    }

    /// The geometry of stage `index`. Sizing a new rate takes up to a few
    /// milliseconds, and its result is remembered process-wide (see
    /// [`size_ahead`](Self::size_ahead)).
    pub(crate) fn geometry(&self, index: usize) -> Result<Geometry, Error> {
        let rate = self.stage_rate(index);
        let capacity = self.stage_capacity(index).ok_or(Error::TooLarge {
            capacity: usize::MAX,
            rate,
        })?;
        sizing::plan(
            Scheme::for_layout(self.layout, rate),
            self.sizing,
            capacity,
            rate,
        )
    }

    /// Sizes stage `index` before it is needed, so that the inserts that
    /// meet the stage before it sealed find its size remembered instead of
    /// each computing it (up to a few milliseconds) before they can go on.
    /// Called when the filter is built and after each growth, outside any
    /// flag.
    pub(crate) fn size_ahead(&self, index: usize) {
        // An error here is met, and reported, when the stage is appended.
        let _ = self.geometry(index);
    }

    /// Allocates stage `index` with `geometry`, in a filter that already
    /// takes `memory_so_far` bytes; returns it and its bytes.
    pub(crate) fn allocate<T: ?Sized>(
        &self,
        index: usize,
        geometry: Geometry,
        memory_so_far: usize,
    ) -> Result<(Stage<T>, usize), Error> {
        let bytes = Stage::<T>::memory_bytes_for(geometry.blocks);
        let needed = memory_so_far.saturating_add(bytes);
        match self.memory_limit {
            Some(limit) if needed > limit && index == 0 => {
                return Err(Error::MemoryLimitTooSmall {
                    limit,
                    first_stage: bytes,
                })
            }
            Some(limit) if needed > limit => {
                return Err(Error::MemoryLimitReached { limit, needed })
            }
            _ => {}
        }
        let fill = if index == 0 {
            self.first_stage_fill_bits
        } else {
            None
        };
        let filter = BloomFilter::from_parts(geometry, self.stage_rate(index), ())?;
        Ok((Stage::new_empty(filter, fill, self.exact_fill), bytes))
    }
}

/// The stages, oldest first; never changed once published.
pub(super) struct StageList<T: ?Sized> {
    pub(super) older: Vec<Arc<Stage<T>>>,
    pub(super) newest: Arc<Stage<T>>,
    pub(super) memory_bytes: usize,
    /// The newest stage was found full: no insert that loads this list puts
    /// an item into it while the filter can grow (see
    /// [`insert_past_seal`](ScalableBloomFilter::insert_past_seal)). Read
    /// with the list, from the line an insert reads anyway.
    pub(super) sealed: bool,
}

impl<T: ?Sized> StageList<T> {
    /// A list of `first` alone, not sealed.
    pub(super) fn first(first: Arc<Stage<T>>, memory_bytes: usize) -> Self {
        StageList {
            older: Vec::new(),
            newest: first,
            memory_bytes,
            sealed: false,
        }
    }

    pub(super) fn all(&self) -> impl DoubleEndedIterator<Item = &Stage<T>> {
        self.older
            .iter()
            .map(|stage| &**stage)
            .chain(std::iter::once(&*self.newest))
    }

    pub(super) fn len(&self) -> usize {
        self.older.len() + 1
    }

    /// Whether a stage before the newest holds `hash` (newest of them
    /// first): an insert then has nothing to do.
    #[inline]
    pub(super) fn older_contain(&self, hash: u64) -> bool {
        self.older
            .iter()
            .rev()
            .any(|stage| stage.contains_hash(hash))
    }

    /// This list with `stage` appended (and not sealed).
    fn with(&self, stage: Stage<T>, bytes: usize) -> Self {
        let mut older = self.older.clone();
        older.push(Arc::clone(&self.newest));
        StageList {
            older,
            newest: Arc::new(stage),
            memory_bytes: self.memory_bytes + bytes,
            sealed: false,
        }
    }

    /// The same stages, the newest sealed.
    fn sealed(&self) -> Self {
        StageList {
            older: self.older.clone(),
            newest: Arc::clone(&self.newest),
            memory_bytes: self.memory_bytes,
            sealed: true,
        }
    }
}

/// Why a growth failed, and the stage it could not append: a growth that
/// appends that stage (or a later one) takes the refusal back, and nothing
/// else does.
#[derive(Clone)]
pub(super) struct Refusal {
    /// The index the refused stage would have had.
    pub(super) stage: usize,
    pub(super) error: Error,
}

/// Whether a growth error stands for good: the filter's own memory limit or
/// sizes past the address space. An allocation the system refused may
/// succeed later, and is tried again.
fn is_permanent(error: &Error) -> bool {
    !matches!(error, Error::AllocationFailed { .. })
}

impl<T: ?Sized, S> ScalableBloomFilter<T, S> {
    /// The newest stage of `seen` was found full by an insert into it:
    /// seals it, then appends the next stage.
    ///
    /// Sealing publishes `seen` marked sealed, by a compare-and-swap on
    /// `seen`: from then on an insert that loads the list puts nothing into
    /// the full stage (see [`insert_past_seal`](Self::insert_past_seal)).
    /// If the list changed meanwhile, it was sealed by another thread (then
    /// this one helps it grow), grown, or cleared (nothing to do). No
    /// thread waits on another: every one that meets the sealed list may
    /// append, and of racing appends exactly one compare-and-swap succeeds.
    /// After a growth that failed for good (the memory limit) it does
    /// nothing; after one the allocator refused, it tries again.
    #[cold]
    pub(super) fn seal_and_grow(&self, seen: &Arc<StageList<T>>) {
        if self.growth_stopped() {
            return;
        }
        let sealed = if seen.sealed {
            Arc::clone(seen)
        } else {
            let sealed = Arc::new(seen.sealed());
            // SeqCst inside arc-swap (a lock under loom): a load that comes
            // after this in that order returns the sealed list or a later
            // one, so its insert does not go into the full stage.
            let previous = self.stages.compare_and_swap(seen, Arc::clone(&sealed));
            if Arc::ptr_eq(&previous, seen) {
                sealed
            } else if previous.sealed && Arc::ptr_eq(&previous.newest, &seen.newest) {
                Arc::clone(&previous)
            } else {
                return;
            }
        };
        // A failure is recorded for `growth_error` and tried again at the
        // next insert that finds the stage full.
        let _ = self.append_stage(&sealed);
    }

    /// Inserts `hash` when `seen`, the list loaded, has its newest stage
    /// sealed and its older stages do not hold `hash`: the insert does not
    /// wait for the thread that sealed it. While the filter can grow it
    /// appends the next stage itself (racing the others: the losers drop
    /// theirs), loads the list again and inserts into the new newest
    /// stage. When the growth failed (the memory limit, or the allocator),
    /// it inserts into the sealed stage, which overfills as documented, and
    /// tries the growth again when that stage's fill says full.
    #[cold]
    pub(super) fn insert_past_seal(&self, seen: &Arc<StageList<T>>, hash: u64) -> bool {
        let mut current = Arc::clone(seen);
        loop {
            if self.growth_failed() {
                let outcome = current.newest.insert_hash(hash);
                if outcome.full {
                    self.seal_and_grow(&current);
                }
                return outcome.new;
            }
            // A failure is recorded (the next round then inserts into the
            // sealed stage), unless a clear replaced `current`.
            let _ = self.append_stage(&current);
            let next = Arc::clone(&self.list());
            if next.older_contain(hash) {
                return false;
            }
            if !next.sealed {
                let outcome = next.newest.insert_hash(hash);
                if outcome.full {
                    self.seal_and_grow(&next);
                }
                return outcome.new;
            }
            // Sealed again: another boundary, or this one's growth failed.
            current = next;
        }
    }

    /// Whether the last growth failed for good, so none is tried again.
    fn growth_stopped(&self) -> bool {
        // Relaxed: a hint that spares a doomed attempt; the error it
        // announces is read under the mutex.
        self.growth_failed.load(Ordering::Relaxed)
            && lock(&self.growth_error)
                .as_ref()
                .is_some_and(|refusal| is_permanent(&refusal.error))
    }

    /// Allocates the stage after `current`'s newest and publishes the
    /// longer list if `current` is still the list (else another thread
    /// grew it, which serves as well). A failure is recorded for
    /// [`growth_error`](Self::growth_error), unless a clear replaced
    /// `current` meanwhile, and returned; a success that published the
    /// stage takes back a refusal of it (see [`Refusal`]).
    pub(super) fn append_stage(&self, current: &Arc<StageList<T>>) -> Result<(), Error> {
        let index = current.len();
        let stage = self
            .plan
            .geometry(index)
            .and_then(|geometry| self.plan.allocate(index, geometry, current.memory_bytes));
        match stage {
            Ok((stage, bytes)) => {
                let longer = Arc::new(current.with(stage, bytes));
                // SeqCst inside arc-swap: publishes the allocated stage with
                // the list. A loser drops its stage: the winner's is the one
                // stage of this boundary.
                let previous = self.stages.compare_and_swap(current, longer);
                let appended = Arc::ptr_eq(&previous, current);
                drop(previous);
                self.plan.size_ahead(index + 1);
                if appended {
                    self.take_back_refusal(index);
                }
                Ok(())
            }
            Err(error) => {
                let mut recorded = lock(&self.growth_error);
                // A clear that replaced `current` meanwhile made room: its
                // error stands for a list that is gone. Checked under the
                // mutex, which the clear takes after its store, so a clear
                // either finds this record and resets it, or comes first
                // and is seen here. So does a growth that appends this
                // stage (`take_back_refusal`).
                if Arc::ptr_eq(&self.list(), current) {
                    *recorded = Some(Refusal {
                        stage: index,
                        error: error.clone(),
                    });
                    // Release: whoever sees the flag finds the error stored.
                    self.growth_failed.store(true, Ordering::Release);
                }
                Err(error)
            }
        }
    }

    /// Stage `index` was appended: a refusal of it (or of an earlier one)
    /// no longer stands. One of a later stage does: the list this growth
    /// published has been sealed and refused its next stage meanwhile (no
    /// flag keeps others from growing it while this thread sizes ahead).
    /// Under the error's mutex, not after a relaxed look at the flag: a
    /// thread refused this same stage records while its list is still the
    /// filter's, under the mutex, so either its record comes first and is
    /// taken back here, or it comes after the compare-and-swap that
    /// happened-before this lock and sees the longer list.
    #[cold]
    fn take_back_refusal(&self, index: usize) {
        let mut recorded = lock(&self.growth_error);
        if recorded
            .as_ref()
            .is_some_and(|refusal| refusal.stage <= index)
        {
            *recorded = None;
            // Release: as where a refusal is recorded.
            self.growth_failed.store(false, Ordering::Release);
        }
    }

    /// Grows now if the newest stage of `seen` is full, within `max_bytes`
    /// in all: what a single writer does before it inserts a new item (see
    /// [`insert_hash_within`](Self::insert_hash_within)). The list to
    /// insert into if it grew; `None` if `seen` has room.
    #[cold]
    pub(super) fn grow_before_insert(
        &self,
        seen: &Arc<StageList<T>>,
        max_bytes: usize,
    ) -> Result<Option<Arc<StageList<T>>>, Error> {
        let index = seen.len();
        let geometry = self.plan.geometry(index)?;
        let needed = seen
            .memory_bytes
            .saturating_add(Stage::<T>::memory_bytes_for(geometry.blocks));
        if needed > max_bytes {
            return Err(Error::MemoryLimitReached {
                limit: max_bytes,
                needed,
            });
        }
        if self.growth_stopped() {
            if let Some(error) = self.growth_error() {
                return Err(error);
            }
        }
        self.append_stage(seen)?;
        Ok(Some(Arc::clone(&self.list())))
    }
}
