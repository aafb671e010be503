//! Compaction, RedisBloom's `CuckooFilter_Compact`: fingerprints of newer
//! sub-filters moved back into older ones where their buckets there have
//! room, and a newest sub-filter that empties freed.

use super::{alternate, Cuckoo};

impl Cuckoo {
    /// Moves fingerprints of newer sub-filters into older ones where their
    /// buckets there have room, newest first, freeing a newest sub-filter
    /// that empties; with `go_on` (`CF.COMPACT`) it goes on past a
    /// sub-filter that keeps a fingerprint, without (after deletes) it
    /// stops there. The deletes count starts again at 0.
    pub(crate) fn compact(&mut self, go_on: bool) {
        let mut index = self.filters.len();
        while index > 1 {
            index -= 1;
            if !self.compact_one(index) && !go_on {
                break;
            }
        }
        self.deletes = 0;
    }

    /// Compacts sub-filter `index` into the ones before it; whether every
    /// fingerprint found a place.
    fn compact_one(&mut self, index: usize) -> bool {
        let size = self.slots_per_bucket();
        let (older, newer) = self.filters.split_at_mut(index);
        let current = &mut newer[0];
        let mut moved_all = true;
        for bucket in 0..current.buckets() {
            for slot in 0..size {
                let at = bucket * size + slot;
                let fingerprint = current.table.get(at);
                if fingerprint == 0 {
                    continue;
                }
                let other = alternate(fingerprint, bucket);
                let placed =
                    (older.iter_mut()).any(|sub| sub.insert_free(bucket, other, fingerprint, size));
                if placed {
                    current.table.set(at, 0);
                } else {
                    moved_all = false;
                }
            }
        }
        if moved_all && index == self.filters.len() - 1 {
            self.drop_newest();
        }
        moved_all
    }

    /// Frees the newest sub-filter, the list one shorter.
    fn drop_newest(&mut self) {
        let mut list = std::mem::take(&mut self.filters).into_vec();
        list.pop();
        let mut shorter = Vec::new();
        if shorter.try_reserve_exact(list.len()).is_ok() {
            shorter.append(&mut list);
            self.filters = shorter.into_boxed_slice();
        } else {
            // No memory for a new list: the allocator shrinks this one
            // (in place where it can).
            self.filters = list.into_boxed_slice();
        }
    }
}
