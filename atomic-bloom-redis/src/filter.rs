//! A filter of this module's type: one of the library's filters, with what
//! RedisBloom's commands report about it (the capacity and rate asked for,
//! the expansion, the items added).

use atomic_bloom::{BloomFilter, Error, Layout, ScalableBloomFilter, Sizing};

/// The share of a scaling filter's rate its first stage gets: a new key is
/// built at 80% of the rate asked for (RedisBloom builds its first
/// sub-filter at 50%, which costs 1.4 bits per item more), and the stages
/// it grows share the rest, each 0.85 of the one before, so a filter grown
/// 1000x still spends less than RedisBloom's, whose stages halve their rate
/// each time.
const FIRST_STAGE_SHARE: f64 = 0.8;

/// How many times RedisBloom's bits per item a new key of this module's
/// may take. Past it a new key is RedisBloom's own filter, sized as
/// RedisBloom sizes it: at very low rates the compact layout's blocks
/// cost more bits an item than a filter spread over its whole array
/// (1.17x RedisBloom's at one in a million `NONSCALING`, 1.5x at 1e-10,
/// 4.2x at 1e-20, and past the address space from about 1e-45), while
/// down to one in a million (1.14x scaling, where the allowance comes
/// from) its filters keep their lead in speed.
pub(crate) const MOST_OVER_REDISBLOOM: f64 = 1.15;

/// Items of the filter whose bits per item [`Options::redisbloom_is_leaner`]
/// weighs: enough that whole blocks round nothing that counts.
const REFERENCE_ITEMS: usize = 1 << 20;

/// The filter behind a key.
pub(crate) enum Filter {
    /// Grows stage by stage (RedisBloom's default), keeping the total rate.
    Scaling(ScalableBloomFilter<[u8]>),
    /// `NONSCALING`: full once it holds the capacity asked for.
    Fixed(BloomFilter<[u8]>),
}

/// How a filter is created: by `BF.RESERVE`, `BF.INSERT`, or the first
/// `BF.ADD` / `BF.MADD` with the module's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Options {
    pub(crate) capacity: u64,
    pub(crate) error_rate: f64,
    /// The growth factor; `None` for `NONSCALING`.
    pub(crate) expansion: Option<u32>,
    /// The hash seed. Random for a new key; replicas and the AOF get it
    /// through the `SEED` of the `BF.RESERVE` the primary propagates.
    pub(crate) seed: u64,
}

/// Absent probes a user measures a small filter's rate with: RedisBloom's
/// own test adds 1,024 items and probes 10,240 absent ones.
const MIN_SAMPLE: f64 = 10_240.0;
/// Filters up to this capacity are sized for samples (`sizing_rate`).
const SMALL_CAPACITY: u64 = 100_000;
/// How often such a sample may measure over the asked rate, were the
/// count Poisson at the built rate: one in 1,000, which leaves room for a
/// filter's own rate to come out above the rate it was built at (its fill
/// varies with the seed) and still miss in under one of 200.
const SAMPLE_MISS: f64 = 0.001;

impl Options {
    /// The rate the filter is built at, at or under the one asked for: low
    /// enough that a sample of `max(10,240, capacity)` absent probes taken
    /// at capacity counts no more false positives than the asked rate
    /// allows, in at least 199 of 200 filters. At 1,024 items and 0.01% a
    /// sample allows one false positive, so the filter is built at about
    /// 0.0005%. Only filters of up to `SMALL_CAPACITY` items are built so
    /// (their bits cost little: at most about 120 KB more, at a rate of one
    /// in a million); larger ones are built at the rate asked, which the
    /// library's sizing keeps on average, so that `MEMORY USAGE` stays
    /// under RedisBloom's (atomic-bloom-redis/README.md, "Memory and speed").
    ///
    /// A scaling filter's first stage runs at `FIRST_STAGE_SHARE` of its
    /// rate: the share is given back here, so that the stage a sample at
    /// capacity measures is at the rate worked out.
    pub(crate) fn sizing_rate(&self) -> f64 {
        if self.capacity > SMALL_CAPACITY {
            return self.error_rate;
        }
        let sample = MIN_SAMPLE.max(self.capacity as f64);
        let allowed = (sample * self.error_rate).floor();
        let mean = largest_poisson_mean(allowed, 1.0 - SAMPLE_MISS);
        let stage_share = match self.expansion {
            Some(_) => FIRST_STAGE_SHARE,
            None => 1.0,
        };
        (mean / sample / stage_share).min(self.error_rate)
    }
}

impl Options {
    /// Bits per item of this module's layout at the rate asked (a scaling
    /// filter's first stage at its share of it), sized, not allocated;
    /// `None` where no filter of that rate can be sized.
    fn compact_bits_per_item(&self) -> Option<f64> {
        let rate = match self.expansion {
            Some(_) => self.error_rate * FIRST_STAGE_SHARE,
            None => self.error_rate,
        };
        let bytes = BloomFilter::<[u8]>::builder(REFERENCE_ITEMS, rate)
            .layout(Layout::Compact)
            .sizing(Sizing::Exact)
            .memory_bytes()
            .ok()?;
        Some(bytes as f64 * 8.0 / REFERENCE_ITEMS as f64)
    }

    /// Whether a new key of these options is RedisBloom's filter, whose
    /// first link takes `redisbloom_bits_per_item`: where this module's
    /// would take more than [`MOST_OVER_REDISBLOOM`] times as many bits an
    /// item (at the rate asked: the bits a small filter spends on samples
    /// are its own affair), or cannot be sized. The size formulas decide,
    /// not the capacity: both grow with it alike.
    pub(crate) fn redisbloom_is_leaner(&self, redisbloom_bits_per_item: f64) -> bool {
        self.compact_bits_per_item()
            .is_none_or(|ours| ours > MOST_OVER_REDISBLOOM * redisbloom_bits_per_item)
    }
}

/// The largest mean of a Poisson count that stays at or under `allowed`
/// with probability at least `confidence`.
fn largest_poisson_mean(allowed: f64, confidence: f64) -> f64 {
    if allowed > 1_000.0 {
        // The normal approximation with the continuity correction: within
        // a fraction of a percent here.
        let z = 3.090; // the 99.9% quantile
        let root = (-z + (z * z + 4.0 * (allowed + 0.5)).sqrt()) / 2.0;
        return root * root;
    }
    let cdf = |mean: f64| {
        let mut term = (-mean).exp();
        let mut sum = term;
        let mut count = 0.0;
        while count < allowed {
            count += 1.0;
            term *= mean / count;
            sum += term;
        }
        sum
    };
    let (mut low, mut high) = (0.0, allowed + 1.0);
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if cdf(middle) >= confidence {
            low = middle;
        } else {
            high = middle;
        }
    }
    low
}

/// A filter and what the commands report about it.
pub(crate) struct Bloom {
    pub(crate) filter: Filter,
    pub(crate) options: Options,
    /// Items added and not found there before (`BF.CARD`, "Number of items
    /// inserted"): a false positive is not counted, as in RedisBloom.
    pub(crate) items: u64,
}

/// The reply to a command that would take a filter past
/// `bf-memory-limit-per-filter`.
pub(crate) const OVER_LIMIT: &str = "ERR the filter would pass bf-memory-limit-per-filter: raise \
                                     the limit (CONFIG SET), or ask for a smaller capacity or a \
                                     larger error rate";
/// The reply to an add a RedisBloom filter at this module's limits
/// refuses (RedisBloom's "problem inserting", and why).
pub(crate) const AT_LIMIT: &str = "ERR problem inserting into filter: it is at this module's \
                                   limits (4,096 sub-filters, 2^64 - 1 items): add to another key";
/// RedisBloom's reply when a filter's bits could not be allocated.
pub(crate) const NO_MEMORY: &str = "ERR Insufficient memory to create filter";

/// What adding one item did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Added {
    /// `true` if the item was new.
    Item(bool),
    /// A `NONSCALING` filter that holds its capacity refused a new item.
    Full,
    /// The item needed a stage that would take the filter past
    /// `bf-memory-limit-per-filter`.
    OverLimit,
    /// The filter could not make its next stage (the allocator refused, or
    /// a RedisBloom filter's next link is too large): RedisBloom's
    /// "problem inserting"; the next new item tries again.
    Failed,
    /// A RedisBloom filter at this module's limits (4,096 links, 2^64 - 1
    /// items) refused the item: what a command leaves must load again.
    AtLimit,
}

impl Bloom {
    /// An empty filter.
    ///
    /// # Errors
    ///
    /// The library's, for options it cannot build (an allocation that
    /// failed, sizes that overflow).
    pub(crate) fn new(options: Options) -> Result<Bloom, Error> {
        let capacity = usize::try_from(options.capacity).map_err(|_| Error::TooLarge {
            capacity: usize::MAX,
            rate: options.error_rate,
        })?;
        // The least memory for the rate: bits anywhere in a line (or two),
        // and no rounding up to a power of two.
        let filter = match options.expansion {
            Some(growth) => Filter::Scaling(
                ScalableBloomFilter::builder(capacity, options.sizing_rate())
                    .growth_factor(growth as usize)
                    .first_stage_share(FIRST_STAGE_SHARE)
                    .layout(Layout::Compact)
                    .sizing(Sizing::Exact)
                    // Redis's maxmemory governs, as for every other type.
                    .unlimited_memory()
                    // Full by its bits alone, so that a replica, a reload
                    // and an AOF replay grow at the item the primary did.
                    .exact_fill()
                    .seed(options.seed)
                    .build()?,
            ),
            None => Filter::Fixed(
                BloomFilter::builder(capacity, options.sizing_rate())
                    .layout(Layout::Compact)
                    .sizing(Sizing::Exact)
                    .seed(options.seed)
                    .build()?,
            ),
        };
        Ok(Bloom {
            filter,
            options,
            items: 0,
        })
    }

    /// A copy, stage for stage (`COPY`): it answers, and grows, as this
    /// filter does.
    ///
    /// # Errors
    ///
    /// The library's `AllocationFailed` when the bits cannot be allocated.
    pub(crate) fn try_clone(&self) -> Result<Bloom, Error> {
        let filter = match &self.filter {
            Filter::Scaling(filter) => Filter::Scaling(filter.try_clone()?),
            Filter::Fixed(filter) => Filter::Fixed(filter.try_clone()?),
        };
        Ok(Bloom {
            filter,
            options: self.options,
            items: self.items,
        })
    }

    /// Adds `items` in order, prefetching their blocks in batches, as
    /// RedisBloom adds them: an item already present is 0 and needs no
    /// room; a new one into a full `NONSCALING` filter is refused and ends
    /// the command; a new one that needs a stage past `memory_cap` (a
    /// client's command under `bf-memory-limit-per-filter`) or that the
    /// allocator refuses is refused alone, and the items after it are
    /// tried. A scaling filter grows before the new item that needs room,
    /// never after the item that filled it, so that a replica fed the items
    /// the primary accepted grows where the primary did.
    pub(crate) fn add_many(&mut self, items: &[&[u8]], memory_cap: Option<usize>) -> Vec<Added> {
        let outcomes: Vec<Added> = match &self.filter {
            Filter::Scaling(filter) => filter
                .insert_many_within(items, memory_cap.unwrap_or(usize::MAX))
                .into_iter()
                .map(|outcome| match outcome {
                    Ok(new) => Added::Item(new),
                    Err(Error::MemoryLimitReached { .. }) => Added::OverLimit,
                    Err(_) => Added::Failed,
                })
                .collect(),
            Filter::Fixed(filter) => {
                let present = filter.contains_many(items);
                let mut room = self.options.capacity.saturating_sub(self.items);
                let mut outcomes = Vec::with_capacity(items.len());
                for (item, present) in items.iter().zip(present) {
                    // Absent before the command, an item may have come in
                    // earlier in it (a duplicate): present is present.
                    if present || (room == 0 && filter.contains(item)) {
                        outcomes.push(Added::Item(false));
                    } else if room == 0 {
                        outcomes.push(Added::Full);
                        break;
                    } else {
                        let new = filter.insert(item);
                        room -= u64::from(new);
                        outcomes.push(Added::Item(new));
                    }
                }
                outcomes
            }
        };
        let added = outcomes
            .iter()
            .filter(|&&outcome| outcome == Added::Item(true))
            .count();
        // A count at 2^64 - 1 stays there (a record may claim any count):
        // never a wrap, nor a panic under overflow checks.
        self.items = self.items.saturating_add(added as u64);
        outcomes
    }

    /// Whether each item may be in the filter.
    pub(crate) fn exists_many(&self, items: &[&[u8]]) -> Vec<bool> {
        match &self.filter {
            Filter::Scaling(filter) => filter.contains_many(items),
            Filter::Fixed(filter) => filter.contains_many(items),
        }
    }

    /// The capacity RedisBloom reports: what was asked for, summed over the
    /// stages as they were planned (each `expansion` times the one before).
    pub(crate) fn capacity(&self) -> u64 {
        match (&self.filter, self.options.expansion) {
            (Filter::Scaling(filter), Some(growth)) => (0..filter.stages())
                .map(|stage| {
                    u64::from(growth)
                        .checked_pow(stage as u32)
                        .map_or(u64::MAX, |factor| {
                            factor.saturating_mul(self.options.capacity)
                        })
                })
                .fold(0, u64::saturating_add),
            _ => self.options.capacity,
        }
    }

    /// Stages ("Number of filters").
    pub(crate) fn stages(&self) -> usize {
        match &self.filter {
            Filter::Scaling(filter) => filter.stages(),
            Filter::Fixed(_) => 1,
        }
    }

    /// Bytes the filter allocated.
    pub(crate) fn filter_bytes(&self) -> usize {
        match &self.filter {
            Filter::Scaling(filter) => filter.memory_bytes(),
            Filter::Fixed(filter) => filter.memory_bytes(),
        }
    }
}
