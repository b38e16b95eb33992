//! Differential tests: pgdict's pglz against PostgreSQL 15's own C code (`libpgcommon.a`,
//! through the test-only `pgdict-pgref` shim).
//!
//! For each input and strategy: the compressed bytes must be identical (or both must refuse),
//! pgdict must decode C's output, and C must decode pgdict's. For arbitrary payloads the two
//! decoders must agree on accept/reject and on the bytes produced.

#[allow(dead_code)] // each test binary uses a different part
#[path = "support/corpus.rs"]
mod corpus;

use pgdict::pglz::{self, Compressor};
use pgdict_pgref::PglzStrategy;
use proptest::prelude::*;

fn to_c(strategy: &pglz::Strategy) -> PglzStrategy {
    PglzStrategy {
        min_input_size: strategy.min_input_size,
        max_input_size: strategy.max_input_size,
        min_comp_rate: strategy.min_comp_rate,
        first_success_by: strategy.first_success_by,
        match_size_good: strategy.match_size_good,
        match_size_drop: strategy.match_size_drop,
    }
}

/// Checks one input under one strategy, both directions. Returns whether it was compressed.
fn check_input(
    compressor: &mut Compressor,
    input: &[u8],
    strategy: &pglz::Strategy,
    what: &str,
) -> bool {
    let ours = compressor.compress(input, strategy).map(<[u8]>::to_vec);
    let theirs = pgdict_pgref::compress(input, &to_c(strategy));
    match (&ours, &theirs) {
        (Some(ours), Some(theirs)) if ours != theirs => {
            let first_diff = ours.iter().zip(theirs.iter()).position(|(a, b)| a != b);
            panic!(
                "{what}: output differs from PostgreSQL's (pgdict {} bytes, C {} bytes, first \
                 difference at {first_diff:?}; {strategy:?})",
                ours.len(),
                theirs.len()
            );
        }
        (Some(_), Some(_)) | (None, None) => {}
        _ => panic!(
            "{what}: pgdict {} but PostgreSQL {} ({} input bytes, {strategy:?})",
            if ours.is_some() {
                "compressed"
            } else {
                "refused"
            },
            if theirs.is_some() {
                "compressed"
            } else {
                "refused"
            },
            input.len()
        ),
    }
    let Some(payload) = ours else { return false };
    let decoded = pglz::decompress(&payload, input.len())
        .unwrap_or_else(|e| panic!("{what}: pgdict cannot decode C's output: {e}"));
    assert!(
        decoded == input,
        "{what}: pgdict decodes C's output wrongly"
    );
    let c_decoded = pgdict_pgref::decompress(&payload, input.len(), true)
        .unwrap_or_else(|| panic!("{what}: C rejects pgdict's output"));
    assert!(
        c_decoded == input,
        "{what}: C decodes pgdict's output wrongly"
    );
    true
}

const BUILT_IN: [(&str, pglz::Strategy); 2] = [
    ("default", pglz::Strategy::DEFAULT),
    ("always", pglz::Strategy::ALWAYS),
];

#[test]
fn built_in_strategies_match_postgresql() {
    assert_eq!(
        to_c(&pglz::Strategy::DEFAULT),
        pgdict_pgref::strategy_default()
    );
    assert_eq!(
        to_c(&pglz::Strategy::ALWAYS),
        pgdict_pgref::strategy_always()
    );
}

#[test]
fn corpus_payloads_whole_and_in_2k_and_8k_slices() {
    let mut compressor = Compressor::new();
    let mut checked = 0;
    let mut compressed = 0;
    for (name, bytes) in corpus::payload_files() {
        for (strategy_name, strategy) in &BUILT_IN {
            compressed += check_input(
                &mut compressor,
                &bytes,
                strategy,
                &format!("{name} whole, {strategy_name}"),
            ) as usize;
            checked += 1;
            for slice_len in [2048, 8192] {
                for (i, slice) in bytes.chunks(slice_len).enumerate() {
                    let what = format!("{name} slice {i} of {slice_len}, {strategy_name}");
                    compressed += check_input(&mut compressor, slice, strategy, &what) as usize;
                    checked += 1;
                }
            }
        }
    }
    // Most slices of the corpus compress: the comparison is not vacuous.
    assert!(
        checked > 30_000 && compressed > checked / 2,
        "{compressed} of {checked}"
    );
}

#[test]
fn corpus_rows_every_row_of_every_set() {
    let mut compressor = Compressor::new();
    for (name, rows) in corpus::row_sets() {
        let mut compressed = [0; 2];
        for (i, row) in rows.iter().enumerate() {
            for (s, (strategy_name, strategy)) in BUILT_IN.iter().enumerate() {
                let what = format!("{name} row {i}, {strategy_name}");
                compressed[s] += check_input(&mut compressor, row, strategy, &what) as usize;
            }
        }
        // "always" compresses nearly every row; each set has rows it compresses.
        assert!(
            compressed[1] > 0,
            "{name}: no row compressed with the always strategy"
        );
    }
}

/// Makes the compressor's last 32 plain calls refusals (`refused`) or successes, which
/// decides whether its next call counts positions for its refusal bound: both ways must give
/// PostgreSQL's output.
fn prime(compressor: &mut Compressor, refused: bool) {
    for _ in 0..32 {
        if refused {
            // Under `min_input_size`: refused.
            assert!(compressor
                .compress(&[b'x'; 31], &pglz::Strategy::DEFAULT)
                .is_none());
        } else {
            assert!(compressor
                .compress(&[b'x'; 64], &pglz::Strategy::ALWAYS)
                .is_some());
        }
    }
}

#[test]
fn refusal_bound_on_and_off_match_postgresql() {
    let mut compressor = Compressor::new();
    let mut checked = 0;
    let mut check = |input: &[u8], what: &str| {
        for (strategy_name, strategy) in &BUILT_IN {
            for refused in [true, false] {
                prime(&mut compressor, refused);
                let what = format!("{what}, {strategy_name}, primed refused {refused}");
                check_input(&mut compressor, input, strategy, &what);
                checked += 1;
            }
        }
    };
    for (name, rows) in corpus::row_sets() {
        for (i, row) in rows.iter().enumerate().step_by(5) {
            check(row, &format!("{name} row {i}"));
        }
    }
    for (name, bytes) in corpus::payload_files() {
        for slice_len in [2048, 4096] {
            for (i, slice) in bytes.chunks(slice_len).enumerate().step_by(7) {
                check(slice, &format!("{name} slice {i} of {slice_len}"));
            }
        }
    }
    assert!(checked > 50_000, "{checked}");
}

#[test]
fn every_length_up_to_64() {
    let mut compressor = Compressor::new();
    for len in 0..=64usize {
        let patterns: [Vec<u8>; 5] = [
            vec![b'a'; len],
            vec![0xff; len],
            (0..len).map(|i| (i % 3) as u8 + 0x80).collect(),
            (0..len).map(|i| (i * 37 % 251) as u8).collect(),
            b"abcabcabd\x80\x81\x82abc"
                .iter()
                .copied()
                .cycle()
                .take(len)
                .collect(),
        ];
        for (p, input) in patterns.iter().enumerate() {
            for (strategy_name, strategy) in &BUILT_IN {
                check_input(
                    &mut compressor,
                    input,
                    strategy,
                    &format!("len {len} pattern {p} {strategy_name}"),
                );
            }
        }
    }
}

#[test]
fn maximum_compressed_size_matches_postgresql() {
    let values = [
        0,
        1,
        2,
        3,
        7,
        8,
        9,
        100,
        1000,
        4095,
        4096,
        1 << 20,
        (1 << 30) - 1,
        i32::MAX / 9,
        i32::MAX - 1,
        i32::MAX,
    ];
    for &raw in &values {
        for &total in &values {
            assert_eq!(
                pglz::maximum_compressed_size(raw as usize, total as usize),
                pgdict_pgref::maximum_compressed_size(raw, total) as usize,
                "raw {raw}, total {total}"
            );
        }
    }
}

/// Inputs with structure a compressor can find: literal runs, byte runs, and repeats of
/// earlier content at every distance, including around the 4095-byte window edge.
fn structured_input() -> impl Strategy<Value = Vec<u8>> {
    let segment = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..40).prop_map(Segment::Literal),
        (any::<u8>(), 1..600usize).prop_map(|(b, n)| Segment::Run(b, n)),
        (1..5000usize, 1..300usize).prop_map(|(back, n)| Segment::Repeat(back, n)),
        (4080..4110usize, 1..40usize).prop_map(|(back, n)| Segment::Repeat(back, n)),
    ];
    prop::collection::vec(segment, 0..200).prop_map(|segments| {
        let mut out = Vec::new();
        for segment in segments {
            match segment {
                Segment::Literal(bytes) => out.extend_from_slice(&bytes),
                Segment::Run(byte, n) => out.extend(std::iter::repeat_n(byte, n)),
                Segment::Repeat(back, n) => {
                    let start = out.len().saturating_sub(back);
                    for i in 0..n.min(out.len() - start) {
                        out.push(out[start + i]);
                    }
                }
            }
        }
        out.truncate(70_000);
        out
    })
}

#[derive(Debug, Clone)]
enum Segment {
    Literal(Vec<u8>),
    Run(u8, usize),
    Repeat(usize, usize),
}

/// Any strategy, including out-of-range fields PostgreSQL clamps.
fn any_strategy() -> impl Strategy<Value = pglz::Strategy> {
    (
        prop_oneof![Just(0), Just(32), -5..100i32],
        prop_oneof![Just(i32::MAX), 0..5000i32],
        -10..120i32,
        prop_oneof![Just(1024), Just(i32::MAX), -1..200i32],
        prop_oneof![Just(128), -5..300i32],
        -10..120i32,
    )
        .prop_map(|(a, b, c, d, e, f)| pglz::Strategy {
            min_input_size: a,
            max_input_size: b,
            min_comp_rate: c,
            first_success_by: d,
            match_size_good: e,
            match_size_drop: f,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_match_postgresql(input in prop::collection::vec(any::<u8>(), 0..70_000)) {
        let mut compressor = Compressor::new();
        for (name, strategy) in &BUILT_IN {
            check_input(&mut compressor, &input, strategy, name);
        }
    }

    #[test]
    fn structured_inputs_match_postgresql(input in structured_input()) {
        let mut compressor = Compressor::new();
        for (name, strategy) in &BUILT_IN {
            check_input(&mut compressor, &input, strategy, name);
        }
    }

    #[test]
    fn custom_strategies_match_postgresql(input in structured_input(), strategy in any_strategy()) {
        check_input(&mut Compressor::new(), &input, &strategy, "custom");
    }

    /// Arbitrary payloads: both decoders accept the same ones and produce the same bytes,
    /// for whole decoding and for prefix decoding.
    #[test]
    fn decoders_agree_on_arbitrary_payloads(
        payload in prop::collection::vec(any::<u8>(), 0..300),
        raw_len in 0..3000usize,
    ) {
        let ours = pglz::decompress(&payload, raw_len).ok();
        let theirs = pgdict_pgref::decompress(&payload, raw_len, true);
        prop_assert_eq!(ours, theirs);

        let mut out = vec![0; raw_len];
        let ours = pglz::decompress_prefix_into(&payload, &mut out).ok().map(|n| out[..n].to_vec());
        let theirs = pgdict_pgref::decompress(&payload, raw_len, false);
        prop_assert_eq!(ours, theirs);
    }

    /// Payloads that are mostly valid (a real payload with a few bytes changed) reach deeper
    /// into the decoder than random bytes.
    #[test]
    fn decoders_agree_on_damaged_payloads(
        input in structured_input(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let Some(mut payload) = pglz::compress(&input, &pglz::Strategy::ALWAYS) else { return Ok(()) };
        for (at, byte) in flips {
            let at = at.index(payload.len());
            payload[at] ^= byte;
        }
        for payload in [&payload[..], &payload[..cut.index(payload.len() + 1)]] {
            let ours = pglz::decompress(payload, input.len()).ok();
            let theirs = pgdict_pgref::decompress(payload, input.len(), true);
            prop_assert_eq!(ours, theirs);
            let mut out = vec![0; input.len()];
            let ours = pglz::decompress_prefix_into(payload, &mut out).ok().map(|n| out[..n].to_vec());
            prop_assert_eq!(ours, pgdict_pgref::decompress(payload, input.len(), false));
        }
    }

    /// Prefix decoding reads no more than PostgreSQL's bound and yields the value's prefix.
    #[test]
    fn prefix_decoding_yields_the_prefix(input in structured_input(), k in any::<prop::sample::Index>()) {
        let Some(payload) = pglz::compress(&input, &pglz::Strategy::ALWAYS) else { return Ok(()) };
        let k = k.index(input.len() + 1);
        let bound = pglz::maximum_compressed_size(k, payload.len());
        let prefix = pglz::decompress_prefix(&payload[..bound], input.len(), k);
        // When k == raw_len the whole payload is needed; the bound is then the payload size.
        prop_assert_eq!(prefix.unwrap(), &input[..k]);
    }
}
