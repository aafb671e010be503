//! Copies racing a rotation, and the epoch's limits, staged on one thread
//! (from the review of issue 34's fixes): a rotation another thread would
//! run is run inside the copy's snapshot, or begun and left half done.

use std::convert::Infallible;

use super::WindowedBloomFilter;
use crate::Layout;

/// A copy whose bits are read before a rotation and whose rotation state
/// is read after it took the oldest generation's items for the new
/// current generation's: kept `g` more generations, past the horizon,
/// and a slot twice full. Here the rotation to generation 2 (which
/// forgets generation 0) runs while the copy reads the bits; one
/// rotation of the copy later, generation 0's items must be gone from it.
#[test]
fn a_copy_racing_a_rotation_forgets_what_its_original_forgot() {
    for layout in [Layout::CacheLine, Layout::Compact, Layout::Word] {
        let filter: WindowedBloomFilter<u64> = WindowedBloomFilter::builder(1_000, 0.01)
            .seed(5)
            .layout(layout)
            .generations(2)
            .manual_rotation()
            .build()
            .unwrap();
        let old = 0..1_000u64;
        for item in old.clone() {
            filter.insert(&item);
        }
        filter.advance();
        let copy = filter
            .copy_with(|bits| {
                let copied = bits.snapshot();
                filter.advance();
                Ok::<_, Infallible>(copied)
            })
            .unwrap();
        assert_eq!(filter.epoch(), 2);
        assert!(old.clone().filter(|item| filter.contains(item)).count() < 50);
        copy.advance();
        let kept = old.filter(|item| copy.contains(item)).count();
        assert!(
            kept < 50,
            "{layout:?}: {kept} of 1,000 items of generation 0 found in a copy at epoch {}",
            copy.epoch()
        );
    }
}
