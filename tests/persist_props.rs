//! Hostile input, generated: well-sealed headers and bodies with arbitrary
//! fields, then random byte flips. Every loader returns `Err` or a filter
//! that writes back the bytes it was read from; none panics.

mod common;

use atomic_bloom::{BloomFilter, CountingBloomFilter, Frontier, ScalableBloomFilter};
use common::saved::reseal;
use proptest::prelude::*;

/// Field values that sit on the edges of what is valid.
fn edgy_u64() -> BoxedStrategy<u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(3),
        Just(1 << 40),
        Just(u64::MAX),
        any::<u64>(),
    ]
    .boxed()
}

fn edgy_rate() -> BoxedStrategy<f64> {
    prop_oneof![
        Just(0.0f64),
        Just(1.0),
        Just(f64::NAN),
        Just(-0.5),
        Just(f64::INFINITY),
        any::<f64>(),
    ]
    .boxed()
}

/// Mostly `valid`, sometimes `invalid`: so that many inputs get deep into
/// the loader and some load, while every field is sometimes wrong.
fn mostly<V: std::fmt::Debug + Clone + 'static>(
    valid: impl Strategy<Value = V> + 'static,
    invalid: impl Strategy<Value = V> + 'static,
) -> BoxedStrategy<V> {
    prop_oneof![9 => valid, 1 => invalid].boxed()
}

/// A bit-array section of `layout` (0 cache line, 1 word, 2 counters, 3
/// compact): layout, sizing, lines per block, k, capacity, rate, blocks,
/// data, count.
fn bits_section(layout: u8) -> BoxedStrategy<Vec<u8>> {
    let lines = if layout == 3 {
        prop_oneof![Just(1u8), Just(2)].boxed()
    } else {
        Just(1u8).boxed()
    };
    (
        (
            mostly(Just(layout), any::<u8>()),
            mostly(0u8..2, any::<u8>()),
            mostly(lines, any::<u8>()),
        ),
        mostly(1u32..11, prop_oneof![Just(0u32), any::<u32>()]),
        mostly(1u64..100_000, edgy_u64()),
        mostly(0.0001f64..0.5, edgy_rate()),
        mostly(
            prop_oneof![Just(1u64), Just(2), Just(3), Just(4)],
            edgy_u64(),
        ),
        any::<u64>(),
        mostly(Just(true), Just(false)),
    )
        .prop_map(
            |((layout, sizing, lines), k, capacity, rate, blocks, fill, true_count)| {
                let mut out = vec![layout, sizing, lines];
                out.extend(k.to_le_bytes());
                out.extend(capacity.to_le_bytes());
                out.extend(rate.to_le_bytes());
                out.extend(blocks.to_le_bytes());
                // Data for at most 4 blocks, whatever the count claims.
                let mut ones = 0u64;
                for word in 0..blocks.min(4) * 8 {
                    let bits = fill.rotate_left(word as u32) & fill.wrapping_mul(word | 1);
                    // The count a loader checks: set bits, or non-zero counters.
                    ones += if layout == 2 {
                        bits.to_le_bytes().iter().filter(|&&byte| byte != 0).count() as u64
                    } else {
                        u64::from(bits.count_ones())
                    };
                    out.extend(bits.to_le_bytes());
                }
                out.extend(if true_count { ones } else { fill }.to_le_bytes());
                out
            },
        )
        .boxed()
}

/// A scalable body: growth options, stage count, stages.
fn scalable_section() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![Just(0u8), Just(1), Just(3)]
        .prop_flat_map(|layout| {
            (
                (
                    mostly(Just(layout), any::<u8>()),
                    mostly(0u8..2, any::<u8>()),
                ),
                mostly(
                    prop_oneof![Just(2u32), Just(4), Just(1), Just(1000)],
                    any::<u32>(),
                ),
                (
                    mostly(0.8f64..=0.9, edgy_rate()),
                    mostly(
                        prop_oneof![Just(u64::MAX), (0.01f64..0.99).prop_map(f64::to_bits)],
                        edgy_rate().prop_map(f64::to_bits),
                    ),
                ),
                mostly(0.0001f64..0.5, edgy_rate()),
                mostly(1u64..100_000, edgy_u64()),
                mostly(Just(u64::MAX), edgy_u64()),
                prop::collection::vec(bits_section(layout), 1..4),
                prop_oneof![9 => Just(None), 1 => edgy_u64().prop_map(Some)],
            )
        })
        .prop_map(
            |(
                (layout, sizing),
                growth,
                (tightening, share),
                rate,
                initial,
                limit,
                stages,
                count,
            )| {
                let mut out = vec![layout, sizing];
                out.extend(growth.to_le_bytes());
                out.extend(tightening.to_le_bytes());
                out.extend(share.to_le_bytes());
                out.extend(rate.to_le_bytes());
                out.extend(initial.to_le_bytes());
                out.extend(limit.to_le_bytes());
                out.extend(count.unwrap_or(stages.len() as u64).to_le_bytes());
                stages.into_iter().for_each(|stage| out.extend(stage));
                out
            },
        )
        .boxed()
}

/// A frontier body: filter kind, filter, queued items (UTF-8 or not).
fn frontier_section() -> BoxedStrategy<Vec<u8>> {
    let item = (
        prop_oneof![9 => Just(None), 1 => edgy_u64().prop_map(Some)],
        mostly(
            "[a-z/:.]{0,30}".prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..30),
        ),
    );
    (
        prop_oneof![
            9 => prop_oneof![bits_section(1).prop_map(|bits| (1u8, bits)), scalable_section().prop_map(|s| (3u8, s))],
            1 => (any::<u8>(), bits_section(1)),
        ],
        prop::collection::vec(item, 0..4),
        prop_oneof![9 => Just(None), 1 => edgy_u64().prop_map(Some)],
    )
        .prop_map(|((kind, filter), items, count)| {
            let mut out = vec![kind];
            out.extend(filter);
            out.extend(count.unwrap_or(items.len() as u64).to_le_bytes());
            for (length, bytes) in items {
                out.extend(length.unwrap_or(bytes.len() as u64).to_le_bytes());
                out.extend(bytes);
            }
            out
        })
        .boxed()
}

/// A sealed input: header with arbitrary fields, a body of the kind it
/// names (or, sometimes, of another), and checksums that match.
fn sealed_input() -> impl Strategy<Value = Vec<u8>> {
    let body = prop_oneof![
        prop_oneof![Just(0u8), Just(1), Just(3)]
            .prop_flat_map(bits_section)
            .prop_map(|body| (1u8, body)),
        bits_section(2).prop_map(|body| (2u8, body)),
        scalable_section().prop_map(|body| (3u8, body)),
        frontier_section().prop_map(|body| (4u8, body)),
    ];
    (
        mostly(Just(4u16), any::<u16>()),
        prop_oneof![9 => Just(None), 1 => any::<u8>().prop_map(Some)],
        mostly(Just(1u8), any::<u8>()),
        mostly(Just(0u32), any::<u32>()),
        any::<u64>(),
        body,
    )
        .prop_map(
            |(version, kind, scheme, reserved, seed, (body_kind, body))| {
                let mut out = b"ATMBLOOM".to_vec();
                out.extend(version.to_le_bytes());
                out.extend([kind.unwrap_or(body_kind), scheme]);
                out.extend(reserved.to_le_bytes());
                out.extend(seed.to_le_bytes());
                out.extend([0; 4]);
                out.extend(body);
                out.extend([0; 4]);
                reseal(&mut out);
                out
            },
        )
}

/// Loads `input` with every loader; any filter that loads from the current
/// format version must write back the bytes it came from (one that loads
/// from an older version is written in the current one).
fn load_everything(input: &[u8]) -> Result<(), TestCaseError> {
    fn check<V>(
        input: &[u8],
        loaded: Result<V, atomic_bloom::Error>,
        write: impl Fn(&V, &mut Vec<u8>) -> Result<(), atomic_bloom::Error>,
    ) -> Result<(), TestCaseError> {
        if let Ok(value) = loaded {
            let mut again = Vec::new();
            write(&value, &mut again).unwrap();
            if input[8..10] == 4u16.to_le_bytes() {
                prop_assert_eq!(&input[..again.len().min(input.len())], &again[..]);
            }
        }
        Ok(())
    }
    check(input, BloomFilter::<u64>::read_from(input), |f, out| {
        f.write_to(out)
    })?;
    check(
        input,
        CountingBloomFilter::<u64>::read_from(input),
        |f, out| f.write_to(out),
    )?;
    check(
        input,
        ScalableBloomFilter::<u64>::read_from(input),
        |f, out| f.write_to(out),
    )?;
    check(input, Frontier::<Vec<u8>>::read_from(input), |f, out| {
        f.write_to(out)
    })?;
    check(input, Frontier::<String>::read_from(input), |f, out| {
        f.write_to(out)
    })?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn sealed_inputs_with_arbitrary_fields_load_or_fail_cleanly(input in sealed_input()) {
        load_everything(&input)?;
    }

    #[test]
    fn flipped_bytes_load_or_fail_cleanly(
        input in sealed_input(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        reseal_after in any::<bool>(),
    ) {
        let mut input = input;
        for (at, mask) in flips {
            let at = at.index(input.len());
            input[at] ^= mask;
        }
        if reseal_after {
            reseal(&mut input);
        }
        load_everything(&input)?;
    }

    #[test]
    fn any_unsealed_change_of_a_byte_is_caught(
        items in prop::collection::vec(any::<u64>(), 0..200),
        at in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let filter: BloomFilter<u64> = BloomFilter::builder(1000, 0.01).seed(3).build().unwrap();
        for item in &items {
            filter.insert(item);
        }
        let mut bytes = Vec::new();
        filter.write_to(&mut bytes).unwrap();
        let at = at.index(bytes.len());
        bytes[at] ^= mask;
        // An unsealed change is always caught.
        prop_assert!(BloomFilter::<u64>::read_from(bytes.as_slice()).is_err());
    }
}
