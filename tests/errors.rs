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
