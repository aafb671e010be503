//! Every `Error` variant, with a message that says what to do; no input
//! panics.

use atomic_bloom::{BloomFilter, Error, Layout};

fn build(capacity: usize, rate: f64, layout: Layout) -> Result<BloomFilter<str>, Error> {
    BloomFilter::builder(capacity, rate)
        .seed(1)
        .layout(layout)
        .build()
}

#[test]
fn zero_capacity() {
    let err = build(0, 0.01, Layout::CacheLine).unwrap_err();
    assert_eq!(err, Error::ZeroCapacity);
    assert!(err.to_string().contains("at least 1"));
}

#[test]
fn rates_outside_zero_one_and_nan() {
    for rate in [
        0.0,
        -0.0,
        1.0,
        -0.5,
        1.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        let err = build(1000, rate, Layout::CacheLine).unwrap_err();
        assert!(
            matches!(err, Error::InvalidFalsePositiveRate { .. }),
            "rate {rate}: {err:?}"
        );
        assert!(err.to_string().contains("such as 0.01"), "{err}");
    }
}

#[test]
fn too_large_for_the_address_space() {
    for layout in [Layout::CacheLine, Layout::Word] {
        let err = build(usize::MAX, 1e-9, layout).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("lower the capacity"), "{err}");
    }
}

#[test]
fn allocation_failure_is_an_error_not_an_abort() {
    // 2^55 bytes fits in isize but in no machine's address space.
    let err = build(1 << 55, 0.01, Layout::CacheLine).unwrap_err();
    assert!(matches!(err, Error::AllocationFailed { .. }), "{err:?}");
    assert!(err.to_string().contains("could not allocate"), "{err}");
}

#[test]
fn union_refuses_filters_built_differently() {
    let base = build(1000, 0.01, Layout::CacheLine).unwrap();

    let bigger = build(100_000, 0.01, Layout::CacheLine).unwrap();
    assert!(matches!(
        base.union(&bigger),
        Err(Error::SizeMismatch { .. })
    ));

    let other_layout = build(1000, 0.01, Layout::Word).unwrap();
    assert!(matches!(
        base.union(&other_layout),
        Err(Error::LayoutMismatch { .. })
    ));

    // Same size (one block, the minimum), different k.
    let one_block = build(1, 0.01, Layout::CacheLine).unwrap();
    let other_k = build(1, 0.3, Layout::CacheLine).unwrap();
    assert_eq!(one_block.num_bits(), other_k.num_bits());
    assert_ne!(one_block.num_hashes(), other_k.num_hashes());
    assert!(matches!(
        one_block.union(&other_k),
        Err(Error::HashCountMismatch { .. })
    ));

    let other_seed: BloomFilter<str> = BloomFilter::builder(1000, 0.01).seed(2).build().unwrap();
    let err = base.union(&other_seed).unwrap_err();
    assert_eq!(err, Error::HasherMismatch);
    assert!(err.to_string().contains("same `.seed(..)`"));

    for err in [
        base.union(&bigger).unwrap_err(),
        base.union(&other_layout).unwrap_err(),
        one_block.union(&other_k).unwrap_err(),
    ] {
        assert!(err.to_string().contains("build both"), "{err}");
    }
}

#[test]
fn seed_unavailable_message_points_at_seed() {
    let err = Error::SeedUnavailable {
        reason: "no entropy".into(),
    };
    assert!(err.to_string().contains(".seed(..)"));
}

#[test]
fn no_input_panics() {
    let rates = [
        f64::MIN_POSITIVE,
        1e-300,
        1e-12,
        1e-6,
        0.01,
        0.5,
        0.999,
        1.0 - f64::EPSILON,
        f64::NAN,
    ];
    for layout in [Layout::CacheLine, Layout::Word] {
        for rate in rates {
            for capacity in [1, 2, 63, 1000] {
                let outcome = std::panic::catch_unwind(|| build(capacity, rate, layout).is_ok());
                assert!(outcome.is_ok(), "{layout:?} {capacity} {rate} panicked");
            }
            // Past any machine: an error (too large, or the allocation
            // refused), never a panic or an abort.
            for capacity in [usize::MAX / 2, usize::MAX] {
                let outcome = std::panic::catch_unwind(|| build(capacity, rate, layout).is_err());
                assert_eq!(outcome.ok(), Some(true), "{layout:?} {capacity} {rate}");
            }
        }
    }
}

#[test]
fn tiny_and_extreme_filters_work() {
    for layout in [Layout::CacheLine, Layout::Word] {
        let f = build(1, 0.5, layout).unwrap();
        assert!(f.insert("only"));
        assert!(f.contains("only"));
        let f = build(10, 0.999_999, layout).unwrap();
        assert!(f.insert("x") || f.contains("x"));
        assert!(f.contains("x"));
        let f = build(10, 1e-12, layout).unwrap();
        assert!(f.insert("x"));
        assert!(!f.insert("x"));
    }
}

#[test]
fn counting_builder_reports_the_same_errors() {
    use atomic_bloom::CountingBloomFilter;
    let build = |capacity: usize, rate: f64| {
        CountingBloomFilter::<str>::builder(capacity, rate)
            .seed(1)
            .build()
    };
    assert_eq!(build(0, 0.01).unwrap_err(), Error::ZeroCapacity);
    assert!(matches!(
        build(1000, f64::NAN).unwrap_err(),
        Error::InvalidFalsePositiveRate { .. }
    ));
    assert!(matches!(
        build(usize::MAX, 1e-9).unwrap_err(),
        Error::TooLarge { .. }
    ));
    assert!(matches!(
        build(1 << 55, 0.01).unwrap_err(),
        Error::AllocationFailed { .. }
    ));
    for rate in [f64::MIN_POSITIVE, 1e-12, 0.5, 1.0 - f64::EPSILON] {
        let outcome = std::panic::catch_unwind(|| build(10, rate).map(|f| f.insert("x")));
        assert!(outcome.is_ok(), "rate {rate} panicked");
    }
}

/// One rule for every filter: the same hostile request gets the same error
/// from every constructor, whatever the filter, layout or rotation (a
/// windowed filter's count is a window: its 0 is `ZeroWindow`; a cuckoo
/// filter's fingerprints set a lowest rate whatever the capacity, and a
/// rate under it is `CuckooRateTooLow`, naming it). Before, the windowed
/// filters built (1, 1e-300) (3.2 GB at a 1M window, and `expected_fpr()`
/// 0), and the scalable one named its first stage's rate.
#[test]
fn every_constructor_gives_the_same_error_for_the_same_request() {
    use atomic_bloom::{Frontier, ScalableBloomFilter, WindowedBloomFilter};
    use std::time::Duration;

    type Build = Box<dyn Fn(usize, f64) -> Result<(), Error>>;
    fn ok<T>(_: T) {}
    let mut constructors: Vec<(String, bool, Build)> = Vec::new();
    for layout in [Layout::CacheLine, Layout::Word, Layout::Compact] {
        constructors.push((
            format!("BloomFilter {layout:?}"),
            false,
            Box::new(move |c, r| build(c, r, layout).map(ok)),
        ));
        constructors.push((
            format!("ScalableBloomFilter {layout:?}"),
            false,
            Box::new(move |c, r| {
                ScalableBloomFilter::<str>::builder(c, r)
                    .seed(1)
                    .layout(layout)
                    .build()
                    .map(ok)
            }),
        ));
        constructors.push((
            format!("WindowedBloomFilter {layout:?}"),
            true,
            Box::new(move |c, r| {
                WindowedBloomFilter::<str>::builder(c, r)
                    .seed(1)
                    .layout(layout)
                    .build()
                    .map(ok)
            }),
        ));
        constructors.push((
            format!("WindowedBloomFilter {layout:?}, time window"),
            true,
            Box::new(move |c, r| {
                WindowedBloomFilter::<str>::builder(c, r)
                    .seed(1)
                    .layout(layout)
                    .time_window(Duration::from_secs(60))
                    .build()
                    .map(ok)
            }),
        ));
    }
    constructors.push((
        "CountingBloomFilter".into(),
        false,
        Box::new(|c, r| {
            atomic_bloom::CountingBloomFilter::<str>::builder(c, r)
                .seed(1)
                .build()
                .map(ok)
        }),
    ));
    constructors.push((
        "Frontier::new".into(),
        false,
        Box::new(|c, r| Frontier::<String>::new(c, r).map(ok)),
    ));
    constructors.push((
        "Frontier::scalable".into(),
        false,
        Box::new(|c, r| Frontier::<String>::scalable(c, r).map(ok)),
    ));
    constructors.push((
        "Frontier::windowed".into(),
        true,
        Box::new(|c, r| Frontier::<String>::windowed(c, r).map(ok)),
    ));

    let bad_rates = [
        0.0,
        -0.0,
        1.0,
        1.5,
        -0.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    // Rates no filter reaches, for any capacity.
    let unreachable = [1e-300, 1e-200, 1e-100, f64::MIN_POSITIVE, 5e-324];
    let mut table: Vec<(usize, f64, Option<Error>)> = Vec::new();
    for capacity in [0, 1, 1000, 1 << 20, usize::MAX] {
        for rate in bad_rates {
            let expected = (capacity != 0).then_some(Error::InvalidFalsePositiveRate { rate });
            table.push((capacity, rate, expected));
        }
        for rate in unreachable {
            let expected = (capacity != 0).then_some(Error::TooLarge { capacity, rate });
            table.push((capacity, rate, expected));
        }
    }
    // Past the address space at any rate.
    for rate in [0.5, 0.01, 1e-9] {
        table.push((
            usize::MAX,
            rate,
            Some(Error::TooLarge {
                capacity: usize::MAX,
                rate,
            }),
        ));
    }
    // The cuckoo filter's lowest rate, as its error names it.
    let lowest = match atomic_bloom::CuckooFilter::<str>::new(1, 1e-300) {
        Err(Error::CuckooRateTooLow { lowest, .. }) => lowest,
        other => panic!("a cuckoo filter at 1e-300: {other:?}"),
    };
    constructors.push((
        "CuckooFilter".into(),
        false,
        Box::new(move |c, r| {
            let built = atomic_bloom::CuckooFilter::<str>::builder(c, r)
                .seed(1)
                .build();
            // Its own rule for a rate under its lowest, else the others'.
            match built {
                Err(Error::CuckooRateTooLow {
                    rate,
                    lowest: named,
                }) if rate < lowest && named == lowest => {
                    Err(Error::TooLarge { capacity: c, rate })
                }
                built => built.map(ok),
            }
        }),
    ));
    let same = |a: &Error, b: &Error| format!("{a:?}") == format!("{b:?}");
    let mut wrong = Vec::new();
    for (capacity, rate, expected) in &table {
        for (name, windowed, constructor) in &constructors {
            let expected = expected.clone().unwrap_or(if *windowed {
                Error::ZeroWindow
            } else {
                Error::ZeroCapacity
            });
            match constructor(*capacity, *rate) {
                Err(err) if same(&err, &expected) => {}
                outcome => wrong.push(format!(
                    "{name} ({capacity}, {rate:e}): {outcome:?}, expected {expected:?}"
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        table.len() * constructors.len(),
        wrong.join("\n")
    );
}

/// What an error-chain printer (anyhow's `{:#}`, eyre) shows: the error,
/// then each `source()` in turn.
fn chain(error: &dyn std::error::Error) -> String {
    let mut shown = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        shown.push_str(": ");
        shown.push_str(&cause.to_string());
        source = cause.source();
    }
    shown
}

/// An I/O error's message names what was being done and the file, and
/// leaves the operating system's words to its `source()`, so a chain
/// printer shows each once.
fn assert_io_error_says(error: &Error, words: &[&str]) {
    let shown = error.to_string();
    for word in words {
        assert!(shown.contains(word), "{word:?} is not in {shown:?}");
    }
    let source = std::error::Error::source(error)
        .expect("an I/O error has its source")
        .to_string();
    assert!(
        !shown.contains(&source),
        "{shown:?} repeats its source {source:?}"
    );
    assert_eq!(chain(error).matches(&source).count(), 1, "{}", chain(error));
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("atomic-bloom-errors-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_io_error_names_the_file_and_what_was_being_done() {
    let dir = scratch_dir("io");
    let missing = dir.join("missing.bloom");
    let loaded = BloomFilter::<str>::load(&missing).unwrap_err();
    assert_io_error_says(
        &loaded,
        &["reading", &missing.display().to_string(), "check the path"],
    );
    assert!(
        matches!(&loaded, Error::Io { operation: "reading", path: Some(path), .. } if *path == missing),
        "{loaded:?}"
    );

    let nowhere = dir.join("no-such-dir").join("seen.bloom");
    let filter: BloomFilter<str> = BloomFilter::new(100, 0.01).unwrap();
    let saved = filter.save(&nowhere).unwrap_err();
    assert_io_error_says(
        &saved,
        &["saving", &nowhere.display().to_string(), "directory exists"],
    );

    // A directory where the file should be: opened, then refused on read.
    let directory = BloomFilter::<str>::load(&dir).unwrap_err();
    assert_io_error_says(&directory, &["reading", &dir.display().to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_io_error_of_a_reader_or_writer_says_which() {
    struct Fails;
    impl std::io::Write for Fails {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("quota exceeded"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl std::io::Read for Fails {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("connection reset"))
        }
    }
    let filter: BloomFilter<str> = BloomFilter::new(100, 0.01).unwrap();
    assert_io_error_says(&filter.write_to(Fails).unwrap_err(), &["writing", "writer"]);
    assert_io_error_says(
        &BloomFilter::<str>::read_from(Fails).unwrap_err(),
        &["reading", "reader"],
    );
}
