//! Clearing a scalable filter while others insert: stage 0 is cleared in
//! place and a list of it alone replaces the stage list (the protocol of
//! `src/PROTOCOLS.md`, "Scalable filter: clear").

use super::growth::StageList;
use super::{lock, ScalableBloomFilter};
use crate::sync::{Arc, Ordering};

impl<T: ?Sized, S> ScalableBloomFilter<T, S> {
    /// Removes every item, while other threads may insert and look up: the
    /// filter is back to its first stage, empty, and the other stages are
    /// freed once no call still holds them. A growth that had stopped at
    /// the memory limit is tried again when the first stage fills.
    ///
    /// O(the first stage's size): its words are set to 0 in place, so
    /// nothing is allocated.
    ///
    /// # Consistency
    ///
    /// An insert that happens-before the clear is gone after it; one that
    /// happens-after it is kept, and is told it was new. An insert racing
    /// the clear may be kept, gone, or kept in part (then `contains` says
    /// no for it); a stage appended by a growth racing the clear is dropped
    /// with the others, unless the growth came from an insert made after
    /// the clear's new stage list was published. A lookup racing a clear
    /// may see any of these; [`stages`](Self::stages) and the other figures
    /// are snapshots.
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::Arc;
    /// use atomic_bloom::ScalableBloomFilter;
    ///
    /// let f: Arc<ScalableBloomFilter<u64>> = Arc::new(ScalableBloomFilter::new(100, 0.01)?);
    /// let first_stage = f.memory_bytes();
    /// for i in 0..10_000u64 { f.insert(&i); }
    /// assert!(f.stages() > 1);
    /// f.clear(); // through the Arc
    /// assert_eq!((f.stages(), f.memory_bytes()), (1, first_stage));
    /// assert!(!f.contains(&7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&self) {
        let first = {
            let current = self.list();
            Arc::clone(current.older.first().unwrap_or(&current.newest))
        };
        // Stage 0 first, and only then the list: an insert that loads the
        // new list sets its bits after the clearing, so a growth from such
        // an insert holds its item. One that loaded an older list and
        // grows it races to publish on that list, which the store below
        // replaces or its compare-and-swap finds replaced.
        first.clear();
        let memory_bytes = first.memory_bytes();
        let only_first = Arc::new(StageList::first(first, memory_bytes));
        // SeqCst inside arc-swap (a lock under loom): a load that
        // happens-after this sees the new list, and a growth's
        // compare-and-swap on an older list fails from here on.
        self.stages.store(only_first);
        // Under the error's mutex, which a failed growth holds while it
        // checks that its list is still current before recording (see
        // `append_stage`): no growth of a replaced list records its error
        // after this.
        let mut error = lock(&self.growth_error);
        *error = None;
        // Release: as where a growth clears it.
        self.growth_failed.store(false, Ordering::Release);
    }
}
