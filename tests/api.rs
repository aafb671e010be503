//! The idioms a Rust user reaches for: `clear` through an `Arc`, `Clone`,
//! `PartialEq`, `Extend`, `par_insert` over what a crawler holds, a cheap
//! `Debug`, errors grouped by kind with their I/O source, `Send + Sync`.

mod common;

use std::error::Error as _;
use std::sync::Arc;

use atomic_bloom::{
    AsItem, BloomFilter, CountingBloomFilter, Error, ErrorKind, Frontier, IoError, Layout,
    ScalableBloomFilter, Sizing, WindowedBloomFilter,
};
use common::LAYOUTS;
use rayon::prelude::*;

fn is_send_sync<T: Send + Sync>() {}

#[test]
fn every_public_type_is_send_and_sync() {
    is_send_sync::<BloomFilter<str>>();
    is_send_sync::<BloomFilter<[u8]>>();
    is_send_sync::<BloomFilter<std::rc::Rc<u64>>>(); // stores no T
    is_send_sync::<CountingBloomFilter<str>>();
    is_send_sync::<ScalableBloomFilter<str>>();
    is_send_sync::<WindowedBloomFilter<str>>();
    is_send_sync::<Frontier<String>>();
    is_send_sync::<Error>();
    is_send_sync::<ErrorKind>();
    is_send_sync::<IoError>();
}

fn urls(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("https://example.com/{i}"))
        .collect()
}

/// The call the crawler wrote, on every filter: `Vec<String>`
/// through `par_iter()` into a filter of `str`, counted as `insert` would.
#[test]
fn par_insert_takes_references_to_owned_strings() {
    let urls = urls(20_000);
    let bloom: BloomFilter<str> = BloomFilter::builder(100_000, 0.01).seed(1).build().unwrap();
    let counting: CountingBloomFilter<str> = CountingBloomFilter::builder(100_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let scalable: ScalableBloomFilter<str> = ScalableBloomFilter::builder(1_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let windowed: WindowedBloomFilter<str> = WindowedBloomFilter::builder(100_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let new = [
        bloom.par_insert(urls.par_iter()),
        counting.par_insert(urls.par_iter()),
        scalable.par_insert(urls.par_iter()),
        windowed.par_insert(urls.par_iter()),
    ];
    let sequential: BloomFilter<str> = BloomFilter::builder(100_000, 0.01).seed(1).build().unwrap();
    let expected = urls.iter().filter(|url| sequential.insert(url)).count();
    for (filter, count) in ["bloom", "counting", "scalable", "windowed"]
        .iter()
        .zip(new)
    {
        // Racing inserts of distinct items: each is new unless a false
        // positive says otherwise, which a sequential run sees alike.
        assert!(
            count.abs_diff(expected) <= expected / 100,
            "{filter}: {count} new of {expected}"
        );
    }
    assert!(urls.iter().all(|url| bloom.contains(url)
        && counting.contains(url)
        && scalable.contains(url)
        && windowed.contains(url)));
    // And the same items as `&str`, owned `String`s, or integers by value.
    let strs: Vec<&str> = urls.iter().map(String::as_str).collect();
    assert_eq!(bloom.par_insert(strs.par_iter()), 0);
    assert_eq!(bloom.par_insert(urls.clone().into_par_iter()), 0);
    let numbers: BloomFilter<u64> = BloomFilter::builder(10_000, 0.01).seed(1).build().unwrap();
    assert!(numbers.par_insert((0..1_000u64).into_par_iter()) > 990);
    assert_eq!(numbers.par_insert(vec![5u64, 6].par_iter()), 0);
}

#[test]
fn extend_takes_items_references_and_owners() {
    let urls = urls(1_000);
    let mut bloom: BloomFilter<str> = BloomFilter::builder(10_000, 0.01).seed(1).build().unwrap();
    bloom.extend(&urls);
    bloom.extend(["https://a.example/"]);
    bloom.extend(vec![Box::<str>::from("https://b.example/")]);
    let mut counting: CountingBloomFilter<str> = CountingBloomFilter::builder(10_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    counting.extend(urls.iter());
    counting.extend(&urls);
    let mut scalable: ScalableBloomFilter<[u8]> = ScalableBloomFilter::builder(100, 0.01)
        .seed(1)
        .build()
        .unwrap();
    scalable.extend(urls.iter().map(|url| url.as_bytes().to_vec()));
    let mut frontier: Frontier<String> = Frontier::from_filter(
        BloomFilter::builder(10_000, 0.01)
            .seed(1)
            .layout(Layout::Word)
            .build()
            .unwrap(),
    );
    frontier.extend(urls.iter().cloned().chain(urls.iter().cloned()));
    for url in &urls {
        assert!(bloom.contains(url));
        // At least the two copies (more where other items share all its
        // counters, as `count` says).
        assert!(counting.count(url) >= 2);
        assert!(scalable.contains(url.as_bytes()));
    }
    assert!(bloom.contains("https://a.example/") && bloom.contains("https://b.example/"));
    assert!(frontier.len() <= urls.len() && frontier.len() > urls.len() * 98 / 100);
}

/// A user's own owner type goes in once it says what item it stands for.
#[test]
fn a_users_owner_type_implements_as_item() {
    struct Url(String);
    impl AsItem<str> for Url {
        fn as_item(&self) -> &str {
            &self.0
        }
    }
    let seen: BloomFilter<str> = BloomFilter::builder(1_000, 0.01).seed(1).build().unwrap();
    let pages: Vec<Url> = (0..100).map(|i| Url(format!("/{i}"))).collect();
    assert_eq!(seen.par_insert(pages.into_par_iter()), 100);
    assert!(seen.contains("/99"));
}

/// `clear` through an `Arc` while other threads insert: nothing panics,
/// and what is inserted after the clear (joined) is found.
#[test]
fn clear_through_an_arc_while_others_insert() {
    for config in LAYOUTS {
        let bloom: Arc<BloomFilter<u64>> = Arc::new(common::filter(50_000, 0.01, config, 3));
        let counting: Arc<CountingBloomFilter<u64>> = Arc::new(
            CountingBloomFilter::builder(50_000, 0.01)
                .seed(3)
                .build()
                .unwrap(),
        );
        let scalable: Arc<ScalableBloomFilter<u64>> = Arc::new(
            ScalableBloomFilter::builder(500, 0.01)
                .layout(config.layout)
                .sizing(config.sizing)
                .seed(3)
                .build()
                .unwrap(),
        );
        let first_stage = scalable.memory_bytes();
        std::thread::scope(|scope| {
            for thread in 0..2u64 {
                let (bloom, counting, scalable) = (&bloom, &counting, &scalable);
                scope.spawn(move || {
                    for i in 0..20_000u64 {
                        let item = thread << 32 | i;
                        bloom.insert(&item);
                        counting.insert(&item);
                        scalable.insert(&item);
                    }
                });
            }
            for _ in 0..20 {
                bloom.clear();
                counting.clear();
                scalable.clear();
                std::thread::yield_now();
            }
        });
        bloom.clear();
        counting.clear();
        scalable.clear();
        assert!(bloom.is_empty(), "{config:?}");
        assert_eq!(counting.len_estimate(), 0, "{config:?}");
        assert_eq!(scalable.stages(), 1, "{config:?}");
        assert_eq!(scalable.memory_bytes(), first_stage, "{config:?}");
        assert_eq!(scalable.len_estimate(), 0, "{config:?}");
        for item in 0..10_000u64 {
            assert!(bloom.insert(&item) || bloom.contains(&item));
            counting.insert(&item);
            scalable.insert(&item);
        }
        assert!(
            (0..10_000u64).all(|item| bloom.contains(&item)
                && counting.contains(&item)
                && scalable.contains(&item)),
            "{config:?}"
        );
        // The scalable filter grows again after its clear.
        assert!(scalable.stages() > 1, "{config:?}");
    }
}

/// A scalable filter stopped at its memory limit grows again once cleared.
#[test]
fn a_cleared_scalable_filter_grows_again_after_its_memory_limit() {
    let filter: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(1_000, 0.01)
        .memory_limit(64 * 1024)
        .seed(1)
        .build()
        .unwrap();
    let refused = (0..1_000_000u64).find_map(|i| filter.try_insert(&i).err());
    assert!(matches!(refused, Some(Error::MemoryLimitReached { .. })));
    let stages_at_limit = filter.stages();
    filter.clear();
    assert!(filter.growth_error().is_none());
    for i in 0..1_000_000u64 {
        filter
            .try_insert(&i)
            .unwrap_or_else(|err| panic!("item {i}: {err}"));
        if filter.stages() == stages_at_limit {
            return;
        }
    }
    panic!("the cleared filter did not grow back to {stages_at_limit} stages");
}

#[test]
fn clones_are_equal_snapshots_and_equality_needs_seed_parameters_and_bits() {
    for config in LAYOUTS {
        let a = common::filter(10_000, 0.01, config, 5);
        for i in 0..5_000u64 {
            a.insert(&i);
        }
        let b = a.clone();
        assert_eq!(a, b, "{config:?}");
        a.insert(&1_000_000);
        assert_ne!(a, b, "{config:?}");
        b.insert(&1_000_000);
        assert_eq!(a, b, "{config:?}");
        assert_ne!(
            a,
            common::filter(10_000, 0.01, config, 6),
            "{config:?}: seed"
        );
        let empty_a = common::filter(10_000, 0.01, config, 5);
        empty_a.insert(&3);
        empty_a.clear();
        assert_eq!(empty_a, common::filter(10_000, 0.01, config, 5));
        assert_ne!(
            empty_a,
            common::filter(10_000, 0.02, config, 5),
            "{config:?}: rate"
        );
    }

    let counting: CountingBloomFilter<u64> = CountingBloomFilter::builder(1_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    counting.insert(&1);
    let copy = counting.clone();
    assert_eq!(copy, counting);
    assert_eq!(copy.count(&1), 1);
    copy.insert(&1);
    assert_ne!(copy, counting);
    assert_eq!(counting.count(&1), 1, "a clone shares nothing");

    let scalable: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01)
        .seed(1)
        .build()
        .unwrap();
    for i in 0..2_000u64 {
        scalable.insert(&i);
    }
    let copy = scalable.clone();
    assert_eq!(copy, scalable);
    assert_eq!(copy.stages(), scalable.stages());
    assert!((0..2_000u64).all(|i| copy.contains(&i)));
    for i in 2_000..20_000u64 {
        copy.insert(&i);
    }
    assert!(copy.stages() > scalable.stages());
    assert_ne!(copy, scalable);
    let other_growth: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01)
        .growth_factor(4)
        .seed(1)
        .build()
        .unwrap();
    let same: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let fresh: ScalableBloomFilter<u64> = ScalableBloomFilter::builder(100, 0.01)
        .seed(1)
        .build()
        .unwrap();
    assert_eq!(same, fresh);
    assert_ne!(same, other_growth);
}

/// `Debug` names the parameters and counts no bits: no field that needs a
/// pass over the array.
#[test]
fn debug_counts_no_bits() {
    let bloom: BloomFilter<u64> = BloomFilter::new(1_000, 0.01).unwrap();
    let counting: CountingBloomFilter<u64> = CountingBloomFilter::new(1_000, 0.01).unwrap();
    let scalable: ScalableBloomFilter<u64> = ScalableBloomFilter::new(1_000, 0.01).unwrap();
    let frontier: Frontier<u64> = Frontier::new(1_000, 0.01).unwrap();
    for text in [
        format!("{bloom:?}"),
        format!("{counting:?}"),
        format!("{scalable:?}"),
        format!("{frontier:?}"),
    ] {
        assert!(text.contains("capacity"), "{text}");
        for costly in ["len_estimate", "estimated_fpr", "set_bits"] {
            assert!(!text.contains(costly), "{text}");
        }
    }
}

#[test]
fn errors_fall_in_groups_and_keep_their_io_source() {
    let parameter = BloomFilter::<str>::new(0, 0.01).unwrap_err();
    assert_eq!(parameter.kind(), ErrorKind::Parameter);
    assert!(parameter.source().is_none());
    let a: BloomFilter<str> = BloomFilter::builder(100, 0.01).seed(1).build().unwrap();
    let b: BloomFilter<str> = BloomFilter::builder(100, 0.01)
        .seed(1)
        .layout(Layout::Word)
        .build()
        .unwrap();
    assert_eq!(a.union(&b).unwrap_err().kind(), ErrorKind::Incompatible);
    let load = BloomFilter::<str>::read_from(&[0u8; 3][..]).unwrap_err();
    assert_eq!(load.kind(), ErrorKind::Load);
    let resource = BloomFilter::<str>::new(1 << 55, 0.01).unwrap_err();
    assert_eq!(resource.kind(), ErrorKind::Resource);

    let missing = std::env::temp_dir()
        .join(format!("atomic-bloom-api-{}", std::process::id()))
        .join("missing.bin");
    let io = BloomFilter::<str>::load(&missing).unwrap_err();
    assert_eq!(io.kind(), ErrorKind::Io);
    assert!(matches!(
        io,
        Error::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        }
    ));
    let source = io.source().expect("an I/O error has its source");
    let os = source
        .downcast_ref::<std::io::Error>()
        .expect("the source is the io::Error itself");
    assert_eq!(os.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(os.raw_os_error(), Some(2), "the OS error code is kept");
    let copy = io.clone();
    assert_eq!(copy, io);
    assert!(copy.source().is_some());
    assert!(io.to_string().contains("check the path"), "{io}");

    // A writer that fails hands its own error through.
    struct Refuses;
    impl std::io::Write for Refuses {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("quota exceeded"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let written = a.write_to(Refuses).unwrap_err();
    assert_eq!(written.kind(), ErrorKind::Io);
    assert_eq!(written.source().unwrap().to_string(), "quota exceeded");
}

/// A saved frontier's queued items are pending again once loaded, and a
/// save (which pops and puts back the queue) never makes the crawl look
/// over.
#[test]
fn saving_and_loading_a_frontier_keeps_its_items_pending() {
    let frontier: Frontier<String> = Frontier::new(1_000, 0.01).unwrap();
    frontier.push("a".to_string());
    frontier.push("b".to_string());
    let held = frontier.take().unwrap();
    let mut saved = Vec::new();
    frontier.write_to(&mut saved).unwrap();
    assert!(!frontier.is_finished());
    assert_eq!(frontier.len(), 1);
    drop(held);
    assert!(!frontier.is_finished(), "b is still queued");
    let loaded: Frontier<String> = Frontier::read_from(saved.as_slice()).unwrap();
    assert!(!loaded.is_finished());
    let b = loaded.wait_take().unwrap();
    assert_eq!(b.as_str(), "b");
    assert!(!loaded.is_finished());
    drop(b);
    assert!(loaded.is_finished() && loaded.wait_take().is_none());
}

/// A constructor costs what it allocates: a frontier's brand-new filter is
/// not read. `Frontier::new(1 << 40, 0.9999999999)` reserves gigabytes the
/// allocator hands out zeroed and unmapped; before, the frontier counted
/// their set bits (none) to start its fill tally, a pass over every page
/// (8 s, against 0.017 s for the same `BloomFilter`). A watchdog of a few
/// seconds fails it instead of timing it.
#[test]
fn a_frontier_of_a_huge_sparse_filter_is_made_without_reading_it() {
    use std::time::Duration;
    let frontier = common::watchdog::within(
        Duration::from_secs(3),
        "Frontier::new(1 << 40, 0.9999999999)",
        || Frontier::<u64>::new(1 << 40, 0.9999999999),
    );
    let frontier = frontier.expect("zeroed pages the allocator reserves, not commits");
    assert!(
        frontier.memory_bytes() > 1 << 30,
        "{}",
        frontier.memory_bytes()
    );
    assert!(frontier.push(7) && !frontier.push(7));
    assert!(!frontier.is_over_capacity());
}

/// A builder's `memory_bytes` is what `build` allocates, for every layout
/// and sizing, and its refusals are `build`'s, without allocating: a
/// request for terabytes is answered in bytes.
#[test]
fn a_builders_planned_memory_is_what_build_allocates() {
    for layout in [Layout::CacheLine, Layout::Word, Layout::Compact] {
        for sizing in [Sizing::Exact, Sizing::PowerOfTwo] {
            for (capacity, rate) in [(1, 0.5), (1000, 0.01), (123_457, 1e-4), (50_000, 1e-9)] {
                let builder = || {
                    BloomFilter::<u64>::builder(capacity, rate)
                        .layout(layout)
                        .sizing(sizing)
                        .seed(7)
                };
                assert_eq!(
                    builder().memory_bytes().unwrap(),
                    builder().build().unwrap().memory_bytes(),
                    "{layout:?} {sizing:?} {capacity} at {rate}"
                );
            }
        }
    }
    let huge = BloomFilter::<u64>::builder(1 << 40, 1e-30).layout(Layout::Compact);
    assert!(huge.memory_bytes().unwrap() > 1 << 45);
    for (capacity, rate) in [(0, 0.01), (10, 0.0), (10, 1.0), (10, f64::NAN)] {
        let planned = BloomFilter::<u64>::builder(capacity, rate).memory_bytes();
        let built = BloomFilter::<u64>::builder(capacity, rate)
            .build()
            .map(|f| f.memory_bytes());
        assert_eq!(
            planned.map_err(|e| e.to_string()),
            built.map_err(|e| e.to_string())
        );
    }
}
