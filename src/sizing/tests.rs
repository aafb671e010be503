use super::*;

#[test]
fn set_bits_at_inverts_items_from_set_bits() {
    let schemes = [
        Scheme::CacheLine,
        Scheme::Word,
        Scheme::Counters,
        Scheme::Compact { lines: 1 },
        Scheme::Compact { lines: 2 },
    ];
    for scheme in schemes {
        for sizing in [Sizing::PowerOfTwo, Sizing::Exact] {
            let geometry = plan(scheme, sizing, 100_000, 0.01).unwrap();
            for items in [1.0, 1_000.0, 100_000.0] {
                let bits = set_bits_at(&geometry, items);
                let back = items_from_set_bits(&geometry, bits.round() as usize);
                assert!(
                    (back - items).abs() <= 1.0 + items * 1e-4,
                    "{scheme:?} {sizing:?} {items} {back}"
                );
            }
        }
    }
}

/// Bits per asked item, sized exactly, within 2-3% of what 512-bit blocks
/// reach down to 1e-4 and 1024-bit blocks below (9.9, 15.5, 21.9, 26.7,
/// 33.6), and nowhere near the power-of-two doubling.
#[test]
fn compact_exact_bits_per_item_meet_the_targets() {
    let targets = [
        (0.01, 10.2),
        (0.001, 15.8),
        (0.0001, 22.6),
        (0.00001, 27.5),
        (0.000001, 34.6),
    ];
    for (rate, most) in targets {
        for capacity in [1_000_000, 6_000_000, 30_000_000] {
            let scheme = Scheme::for_layout(Layout::Compact, rate);
            let geometry = plan(scheme, Sizing::Exact, capacity, rate).unwrap();
            let bits_per_item = (geometry.blocks * LINE_BITS) as f64 / capacity as f64;
            assert!(
                bits_per_item <= most,
                "{rate} x {capacity}: {bits_per_item:.2} bits per item (at most {most})"
            );
            assert!(expected_rate(&geometry, capacity as f64) <= rate);
        }
    }
}

#[test]
fn compact_takes_two_lines_only_where_they_save_memory() {
    assert_eq!(compact_scheme(0.01), Scheme::Compact { lines: 1 });
    for rate in [0.00001, 0.000001, 1e-9] {
        assert_eq!(compact_scheme(rate), Scheme::Compact { lines: 2 }, "{rate}");
    }
}

#[test]
fn exact_sizing_rounds_to_a_block_and_power_of_two_to_a_power() {
    for scheme in [
        Scheme::CacheLine,
        Scheme::Word,
        Scheme::Counters,
        Scheme::Compact { lines: 1 },
        Scheme::Compact { lines: 2 },
    ] {
        let exact = plan(scheme, Sizing::Exact, 1_000_000, 0.001).unwrap();
        let rounded = plan(scheme, Sizing::PowerOfTwo, 1_000_000, 0.001).unwrap();
        assert!(exact.scheme_blocks().is_power_of_two() || exact.blocks < rounded.blocks);
        assert!(rounded.scheme_blocks().is_power_of_two());
        assert_eq!(exact.bits_per_word, rounded.bits_per_word);
        // One block fewer would not hold the capacity at the rate.
        let smaller = Geometry {
            blocks: exact.blocks - scheme.lines_per_block(),
            ..exact
        };
        assert!(expected_rate(&smaller, 1_000_000.0) > 0.001, "{scheme:?}");
        assert!(expected_rate(&exact, 1_000_000.0) <= 0.001, "{scheme:?}");
        assert!(exact.capacity >= 1_000_000 && rounded.capacity >= exact.capacity);
    }
}

#[test]
fn absurd_rates_size_in_bounded_time_and_too_large_is_an_error() {
    for layout in [Layout::CacheLine, Layout::Word, Layout::Compact] {
        let scheme = Scheme::for_layout(layout, 0.9999);
        assert!(
            plan(scheme, Sizing::Exact, 1000, 0.9999).is_ok(),
            "{layout:?}"
        );
        // Out of reach of 20 (or 32) bits per item: too large, not a hang.
        let scheme = Scheme::for_layout(layout, 1e-300);
        assert!(
            matches!(
                plan(scheme, Sizing::Exact, 1000, 1e-300),
                Err(Error::TooLarge { .. })
            ),
            "{layout:?}"
        );
    }
    assert_eq!(
        plan(
            Scheme::Compact { lines: 2 },
            Sizing::Exact,
            usize::MAX,
            1e-9
        ),
        Err(Error::TooLarge {
            capacity: usize::MAX,
            rate: 1e-9
        })
    );
}
