//! Relocation: making room for a fingerprint whose two buckets are full.
//!
//! * [`Table::relocate`]: concurrent. A breadth-first search (as MemC3's
//!   and libcuckoo's) from the two buckets, to a bounded depth and node
//!   count, for a chain of moves that ends in a free slot; then the moves,
//!   from the free end backwards, each by `Table::move_slot` (see the
//!   core's docs). A move that finds the table changed under it (its
//!   target taken, its fingerprint removed) ends the attempt and the
//!   search starts again; a search that finds no chain leaves the table
//!   exactly as it was.
//!
//! RedisBloom's single-threaded relocation (`Filter_KOInsert`) is
//! [`ByteTable::kick_out`](super::byte_table::ByteTable::kick_out).

use super::core::{SlotRef, Table};
use super::scheme::{Probe, Scheme};

/// The longest chain of moves the search looks for.
const MAX_DEPTH: u8 = 5;

/// The most buckets one search visits.
const MAX_NODES: usize = 2_000;

/// A bucket the search reached: by moving `value`, at `from` in the
/// parent's bucket, into it.
#[derive(Clone, Copy, Debug)]
struct Node {
    bucket: usize,
    parent: u32,
    from: SlotRef,
    value: u64,
    depth: u8,
}

const ROOT: u32 = u32::MAX;

/// Buckets the search has reached: open addressing over `bucket + 1`.
struct Visited {
    slots: Vec<usize>,
}

impl Visited {
    fn new() -> Self {
        Visited {
            slots: vec![0; (MAX_NODES * 2).next_power_of_two()],
        }
    }

    fn clear(&mut self) {
        self.slots.iter_mut().for_each(|slot| *slot = 0);
    }

    /// Marks `bucket`; false if it was marked already.
    fn insert(&mut self, bucket: usize) -> bool {
        let mask = self.slots.len() - 1;
        let key = bucket + 1;
        let mut at = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> 7) & mask;
        loop {
            match self.slots[at] {
                0 => {
                    self.slots[at] = key;
                    return true;
                }
                k if k == key => return false,
                _ => at = (at + 1) & mask,
            }
        }
    }
}

/// What one search and its moves came to.
enum Attempt {
    /// The fingerprint is in.
    Inserted,
    /// The table changed under a move, or the freed slot was taken: search
    /// again.
    Raced,
    /// No chain of moves within the bounds: the table is full for it.
    Full,
}

/// The search's buffers, kept across attempts of one relocation.
struct Search {
    nodes: Vec<Node>,
    visited: Visited,
    occupied: Vec<(SlotRef, u64)>,
}

impl Table {
    /// Inserts the probe's fingerprint, moving others out of the way if
    /// both its buckets are full; false, with every fingerprint where it
    /// was (or moved to its other bucket), when no chain of moves within
    /// the search's bounds ends in a free slot.
    ///
    /// Relocations are serialized by the table's own lock; `insert_free`,
    /// `remove` and lookups never take it. Only for schemes with
    /// [`Scheme::RESERVES_ALL_ONES`]: for others it moves nothing and
    /// returns whether a free slot could be had.
    pub fn relocate<S: Scheme>(&self, scheme: &S, probe: &Probe) -> bool {
        if !S::RESERVES_ALL_ONES {
            return self.insert_free(probe);
        }
        let _relocating = self.lock_relocation();
        let mut search = Search {
            nodes: Vec::new(),
            visited: Visited::new(),
            occupied: Vec::new(),
        };
        loop {
            if self.insert_free(probe) {
                return true;
            }
            match self.attempt(scheme, probe, &mut search) {
                Attempt::Inserted => return true,
                Attempt::Full => return false,
                Attempt::Raced => crate::sync::wait_round(0),
            }
        }
    }

    fn attempt<S: Scheme>(&self, scheme: &S, probe: &Probe, search: &mut Search) -> Attempt {
        let buckets = self.shape().buckets();
        let Search {
            nodes,
            visited,
            occupied,
        } = search;
        nodes.clear();
        visited.clear();
        let unused = SlotRef { word: 0, shift: 0 };
        for bucket in [probe.first, probe.second] {
            if visited.insert(bucket) {
                nodes.push(Node {
                    bucket,
                    parent: ROOT,
                    from: unused,
                    value: 0,
                    depth: 0,
                });
            }
        }
        let mut next = 0;
        while next < nodes.len() {
            let node = nodes[next];
            if let Some(free) = self.free_slot(node.bucket) {
                return self.move_along(nodes, next, free, probe);
            }
            if node.depth < MAX_DEPTH {
                self.occupied(node.bucket, occupied);
                for &(from, value) in occupied.iter() {
                    if nodes.len() >= MAX_NODES {
                        break;
                    }
                    let other = scheme.alternate(node.bucket, value, buckets);
                    if visited.insert(other) {
                        nodes.push(Node {
                            bucket: other,
                            parent: next as u32,
                            from,
                            value,
                            depth: node.depth + 1,
                        });
                    }
                }
            }
            next += 1;
        }
        Attempt::Full
    }

    /// Moves the fingerprints of the chain ending at `nodes[leaf]`, from
    /// its free slot backwards, then inserts the probe's fingerprint.
    fn move_along(&self, nodes: &[Node], leaf: usize, free: SlotRef, probe: &Probe) -> Attempt {
        let mut at = leaf;
        let mut to = free;
        while nodes[at].parent != ROOT {
            let node = nodes[at];
            let parent = nodes[node.parent as usize];
            if !self.move_slot(node.from, parent.bucket, to, node.bucket, node.value) {
                return Attempt::Raced;
            }
            to = node.from;
            at = node.parent as usize;
        }
        if self.insert_free(probe) {
            Attempt::Inserted
        } else {
            Attempt::Raced
        }
    }
}
