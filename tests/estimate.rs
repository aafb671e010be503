//! `len_estimate()` tracks the number of distinct items inserted.

mod common;

use common::{filter, LAYOUTS};

#[test]
fn len_estimate_within_3_percent_from_1_to_100_percent_of_capacity() {
    for layout in LAYOUTS {
        for rate in [0.01, 0.001] {
            let f = filter(1_000_000, rate, layout, 21);
            let capacity = f.capacity() as u64;
            let mut inserted = 0u64;
            for percent in [1, 2, 5, 10, 25, 50, 75, 100] {
                let target = capacity * percent / 100;
                for key in inserted..target {
                    f.insert(&key);
                }
                inserted = target;
                let estimate = f.len_estimate() as f64;
                let error = (estimate - inserted as f64).abs() / inserted as f64;
                assert!(
                    error < 0.03,
                    "{layout:?} at {rate}, {percent}% of capacity: estimated {estimate} for {inserted}"
                );
            }
        }
    }
}

#[test]
fn duplicates_do_not_move_the_estimate() {
    for layout in LAYOUTS {
        let f = filter(100_000, 0.01, layout, 22);
        for key in 0..50_000u64 {
            f.insert(&key);
        }
        let once = f.len_estimate();
        for key in 0..50_000u64 {
            f.insert(&key);
        }
        assert_eq!(f.len_estimate(), once, "{layout:?}");
    }
}

#[test]
fn estimated_fpr_rises_with_fill() {
    for layout in LAYOUTS {
        let f = filter(100_000, 0.01, layout, 23);
        assert_eq!(f.estimated_fpr(), 0.0);
        let mut last = 0.0;
        for chunk in 0..10u64 {
            for key in chunk * 10_000..(chunk + 1) * 10_000 {
                f.insert(&key);
            }
            let now = f.estimated_fpr();
            assert!(now > last, "{layout:?}");
            last = now;
        }
        // At (or, sized exactly, just under) capacity the estimate is at
        // the target, give or take the 1% error of the item estimate.
        assert!(
            last < 0.0103,
            "{layout:?}: {last} at 100k of capacity {}",
            f.capacity()
        );
    }
}
