//! The subjects of `benches/contention.rs`: this crate's filters and their
//! peers behind one interface, plus the floor. Included by that bench alone
//! (`#[path]`), so the other benches' `mod common;` does not see it.

// Each bench includes this and uses a part of it.
#![allow(dead_code)]

use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Mutex, RwLock};

use atomic_bloom::{
    BloomFilter, CountingBloomFilter, DefaultHasher, Frontier, Layout, ScalableBloomFilter,
};
use crossbeam_queue::SegQueue;
use dashmap::DashSet;
use growable_bloom_filter::GrowableBloom;

pub use super::common::{Subject, RATE, SEED};

/// A [`Subject`] of the contention curves: what the bench also asks of it.
pub trait Contender: Subject<u64> {
    /// Untimed housekeeping between timed stretches: frontiers drop their
    /// queued items here, so queues do not grow without bound.
    fn tidy(&mut self) {}
    /// Bytes it allocated, where known (`≈`: an estimate).
    fn memory(&self) -> String;
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// hashbrown's table for `len` u64 keys: buckets (a power of two at most 7/8
/// full), 8 bytes plus one control byte each.
fn exact_set_bytes(len: usize) -> String {
    let buckets = (len * 8 / 7).max(1).next_power_of_two();
    format!("≈{}", mib(buckets * 9))
}

fn hasher() -> DefaultHasher {
    DefaultHasher::with_seed(SEED)
}

// ---- this crate ----

/// A seeded `BloomFilter<u64>` for `items` items.
pub fn bloom(items: usize, layout: Layout) -> BloomFilter<u64> {
    BloomFilter::builder(items, RATE)
        .seed(SEED)
        .layout(layout)
        .build()
        .unwrap()
}

impl Contender for BloomFilter<u64> {
    fn memory(&self) -> String {
        format!(
            "{} (capacity {})",
            mib(self.memory_bytes()),
            self.capacity()
        )
    }
}

/// A seeded `CountingBloomFilter<u64>` for `items` items.
pub fn counting(items: usize) -> CountingBloomFilter<u64> {
    CountingBloomFilter::builder(items, RATE)
        .seed(SEED)
        .build()
        .unwrap()
}

impl Contender for CountingBloomFilter<u64> {
    fn memory(&self) -> String {
        format!(
            "{} (capacity {})",
            mib(self.memory_bytes()),
            self.capacity()
        )
    }
}

/// `ScalableBloomFilter<u64>` that starts at `final_items / 64`; emptied
/// by building it again.
pub struct Scalable {
    filter: ScalableBloomFilter<u64>,
    final_items: usize,
}

impl Scalable {
    pub fn new(final_items: usize) -> Self {
        let filter = ScalableBloomFilter::builder(final_items / 64, RATE)
            .seed(SEED)
            .build()
            .unwrap();
        Scalable {
            filter,
            final_items,
        }
    }
}

impl Subject<u64> for Scalable {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        self.filter.insert(&key)
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.filter.contains(&key)
    }
    fn reset(&mut self) {
        *self = Scalable::new(self.final_items);
    }
}

impl Contender for Scalable {
    fn memory(&self) -> String {
        format!(
            "{} now, {} stages",
            mib(self.filter.memory_bytes()),
            self.filter.stages()
        )
    }
}

/// `Frontier<u64>` (a seeded `Layout::Word` filter): insert is `push`,
/// contains is `seen`; emptied by building it again.
pub struct OurFrontier {
    frontier: Frontier<u64>,
    items: usize,
}

impl OurFrontier {
    pub fn new(items: usize) -> Self {
        let filter = bloom(items, Layout::Word);
        // Writes every word: the pages are faulted in here, untimed.
        filter.clear();
        OurFrontier {
            frontier: Frontier::from_filter(filter),
            items,
        }
    }
}

impl Subject<u64> for OurFrontier {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        self.frontier.push(key)
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.frontier.seen(&key)
    }
    fn reset(&mut self) {
        *self = OurFrontier::new(self.items);
    }
}

impl Contender for OurFrontier {
    fn tidy(&mut self) {
        while self.frontier.pop().is_some() {}
    }
    fn memory(&self) -> String {
        format!(
            "{} (capacity {})",
            mib(self.frontier.memory_bytes()),
            self.frontier.capacity()
        )
    }
}

// ---- peers ----

/// fastbloom's `AtomicBloomFilter` with this crate's hasher (wyhash).
pub fn fastbloom(items: usize) -> fastbloom::AtomicBloomFilter<DefaultHasher> {
    fastbloom::AtomicBloomFilter::with_false_pos(RATE)
        .hasher(hasher())
        .expected_items(items)
}

impl<S: BuildHasher + Send + Sync> Contender for fastbloom::AtomicBloomFilter<S> {
    fn memory(&self) -> String {
        mib(self.num_bits() / 8)
    }
}

/// bloomfilter's `Bloom` (needs `&mut` to insert) in an `RwLock`.
pub fn bloomfilter_rwlock(items: usize) -> RwLock<bloomfilter::Bloom<u64>> {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&SEED.to_le_bytes());
    RwLock::new(bloomfilter::Bloom::new_for_fp_rate_with_seed(items, RATE, &seed).unwrap())
}

impl Subject<u64> for RwLock<bloomfilter::Bloom<u64>> {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        !self.write().unwrap().check_and_set(&key)
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.read().unwrap().check(&key)
    }
    fn reset(&mut self) {
        self.get_mut().unwrap().clear();
    }
}

impl Contender for RwLock<bloomfilter::Bloom<u64>> {
    fn memory(&self) -> String {
        mib(self.read().unwrap().len() as usize / 8)
    }
}

/// bloomcraft's `StandardBloomFilter`: lock-free, `&self` insert.
pub fn bloomcraft(items: usize) -> bloomcraft::filters::StandardBloomFilter<u64> {
    bloomcraft::filters::StandardBloomFilter::new(items, RATE).unwrap()
}

impl Subject<u64> for bloomcraft::filters::StandardBloomFilter<u64> {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        bloomcraft::filters::StandardBloomFilter::insert(self, &key);
        true
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        bloomcraft::filters::StandardBloomFilter::contains(self, &key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl Contender for bloomcraft::filters::StandardBloomFilter<u64> {
    fn memory(&self) -> String {
        mib(self.memory_usage())
    }
}

/// bloomcraft's `CountingBloomFilter` (its `insert` and `delete` take
/// `&mut self`) in a `Mutex`.
pub fn bloomcraft_counting(items: usize) -> Mutex<bloomcraft::filters::CountingBloomFilter<u64>> {
    Mutex::new(bloomcraft::filters::CountingBloomFilter::new(items, RATE))
}

impl Contender for Mutex<bloomcraft::filters::CountingBloomFilter<u64>> {
    fn memory(&self) -> String {
        mib(self.lock().unwrap().memory_usage())
    }
}

/// growable-bloom-filter's `GrowableBloom` in a `Mutex`, starting at
/// `final_items / 64`; emptied by building it again.
pub struct Growable {
    filter: Mutex<GrowableBloom>,
    final_items: usize,
}

impl Growable {
    pub fn new(final_items: usize) -> Self {
        Growable {
            filter: Mutex::new(GrowableBloom::new(RATE, final_items / 64)),
            final_items,
        }
    }
}

impl Subject<u64> for Growable {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        self.filter.lock().unwrap().insert(key)
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.filter.lock().unwrap().contains(key)
    }
    fn reset(&mut self) {
        *self = Growable::new(self.final_items);
    }
}

impl Contender for Growable {
    fn memory(&self) -> String {
        "not reported".into()
    }
}

/// bloomcraft's `AtomicScalableBloomFilter`, starting at `final_items / 64`;
/// emptied by building it again.
pub struct BloomcraftScalable {
    filter: bloomcraft::filters::AtomicScalableBloomFilter<u64>,
    final_items: usize,
}

impl BloomcraftScalable {
    pub fn new(final_items: usize) -> Self {
        BloomcraftScalable {
            filter: bloomcraft::filters::AtomicScalableBloomFilter::new(final_items / 64, RATE)
                .unwrap(),
            final_items,
        }
    }
}

impl Subject<u64> for BloomcraftScalable {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        self.filter.insert(&key);
        true
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.filter.contains(&key)
    }
    fn reset(&mut self) {
        *self = BloomcraftScalable::new(self.final_items);
    }
}

impl Contender for BloomcraftScalable {
    fn memory(&self) -> String {
        mib(self.filter.memory_usage())
    }
}

/// An exact `DashSet<u64>` presized for `items`, hashed with wyhash as the
/// filters are.
pub fn dashset(items: usize) -> DashSet<u64, DefaultHasher> {
    DashSet::with_capacity_and_hasher(items, hasher())
}

impl Subject<u64> for DashSet<u64, DefaultHasher> {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        DashSet::insert(self, key)
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        DashSet::contains(self, &key)
    }
    fn reset(&mut self) {
        self.clear();
    }
}

impl Contender for DashSet<u64, DefaultHasher> {
    fn memory(&self) -> String {
        exact_set_bytes(self.capacity())
    }
}

/// An exact `HashSet<u64>` presized for `items`, wyhash, in a `Mutex`.
pub fn mutex_hashset(items: usize) -> Mutex<HashSet<u64, DefaultHasher>> {
    Mutex::new(HashSet::with_capacity_and_hasher(items, hasher()))
}

impl Subject<u64> for Mutex<HashSet<u64, DefaultHasher>> {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        self.lock().unwrap().insert(key)
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.lock().unwrap().contains(&key)
    }
    fn reset(&mut self) {
        self.get_mut().unwrap().clear();
    }
}

impl Contender for Mutex<HashSet<u64, DefaultHasher>> {
    fn memory(&self) -> String {
        exact_set_bytes(self.lock().unwrap().capacity())
    }
}

/// A frontier from std: an exact set and a queue under one `Mutex`.
pub struct MutexFrontier(Mutex<(HashSet<u64, DefaultHasher>, VecDeque<u64>)>);

impl MutexFrontier {
    pub fn new(items: usize) -> Self {
        MutexFrontier(Mutex::new((
            HashSet::with_capacity_and_hasher(items, hasher()),
            VecDeque::new(),
        )))
    }
}

impl Subject<u64> for MutexFrontier {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        let mut guard = self.0.lock().unwrap();
        let (seen, queue) = &mut *guard;
        let new = seen.insert(key);
        if new {
            queue.push_back(key);
        }
        new
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.0.lock().unwrap().0.contains(&key)
    }
    fn reset(&mut self) {
        let (seen, queue) = self.0.get_mut().unwrap();
        seen.clear();
        queue.clear();
    }
}

impl Contender for MutexFrontier {
    fn tidy(&mut self) {
        self.0.get_mut().unwrap().1.clear();
    }
    fn memory(&self) -> String {
        exact_set_bytes(self.0.lock().unwrap().0.capacity())
    }
}

/// A lock-free frontier from parts: an exact `DashSet` and crossbeam's
/// `SegQueue`.
pub struct DashFrontier {
    seen: DashSet<u64, DefaultHasher>,
    queue: SegQueue<u64>,
}

impl DashFrontier {
    pub fn new(items: usize) -> Self {
        DashFrontier {
            seen: dashset(items),
            queue: SegQueue::new(),
        }
    }
}

impl Subject<u64> for DashFrontier {
    #[inline]
    fn insert(&self, &key: &u64) -> bool {
        let new = self.seen.insert(key);
        if new {
            self.queue.push(key);
        }
        new
    }
    #[inline]
    fn contains(&self, &key: &u64) -> bool {
        self.seen.contains(&key)
    }
    fn reset(&mut self) {
        self.seen.clear();
        self.queue = SegQueue::new();
    }
}

impl Contender for DashFrontier {
    fn tidy(&mut self) {
        self.queue = SegQueue::new();
    }
    fn memory(&self) -> String {
        exact_set_bytes(self.seen.capacity())
    }
}

// ---- the floor ----

pub use super::common::Floor;

/// A floor the size of `bytes`, hashed like every subject here.
pub fn floor(bytes: usize) -> Floor {
    Floor::new(bytes, hasher())
}

impl Contender for Floor {
    fn memory(&self) -> String {
        mib(self.bytes())
    }
}
