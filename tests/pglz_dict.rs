//! pglz with a dictionary: matches that start in the dictionary (and run on into the datum),
//! round trips over the corpus rows for every dictionary size, and corrupt references.

#[allow(dead_code)] // each test binary uses a different part
#[path = "support/corpus.rs"]
mod corpus;

use pgdict::pglz::{self, Compressor, Error, PglzDictionary, Strategy};
use proptest::prelude::*;

fn round_trip(
    compressor: &mut Compressor,
    dict: &PglzDictionary,
    full_dict: &[u8],
    input: &[u8],
) -> Option<usize> {
    let payload = compressor
        .compress_with_dict(input, dict, &Strategy::DICTIONARY)?
        .to_vec();
    // The decoder is given the whole dictionary and finds the reachable tail itself.
    let decoded =
        pglz::decompress_with_dict(&payload, input.len(), full_dict).unwrap_or_else(|e| {
            panic!(
                "{} bytes with a {}-byte dictionary: {e}",
                input.len(),
                full_dict.len()
            )
        });
    assert!(
        decoded == input,
        "{} bytes with a {}-byte dictionary decode wrongly",
        input.len(),
        full_dict.len()
    );
    for k in [0, 1, input.len() / 2, input.len().saturating_sub(1)] {
        let prefix =
            pglz::decompress_prefix_with_dict(&payload, input.len(), k, full_dict).unwrap();
        assert_eq!(prefix, &input[..k]);
    }
    Some(payload.len())
}

#[test]
fn corpus_rows_round_trip_with_every_dictionary_size() {
    let mut compressor = Compressor::new();
    for (name, rows) in corpus::row_sets() {
        // Odd rows make the dictionary, even rows are compressed (as the measurements do).
        let training: Vec<u8> = rows
            .iter()
            .skip(1)
            .step_by(2)
            .take(400)
            .flatten()
            .copied()
            .collect();
        let evaluated: Vec<&Vec<u8>> = rows.iter().step_by(2).take(300).collect();
        let mut stored = [0usize; 2];
        for size in [0, 1, 100, 4095, 4096, 65536] {
            let full_dict = &training[training.len().saturating_sub(size)..];
            let dict = PglzDictionary::new(full_dict);
            assert_eq!(dict.len(), full_dict.len().min(pglz::DICT_WINDOW));
            let mut total = 0;
            for row in &evaluated {
                total += round_trip(&mut compressor, &dict, full_dict, row).unwrap_or(row.len());
            }
            if size == 0 {
                stored[0] = total;
            }
            if size == 4096 {
                stored[1] = total;
            }
        }
        // A 4 KB dictionary of the same kind of rows must help.
        assert!(
            stored[1] < stored[0],
            "{name}: {} bytes with a dictionary, {} without",
            stored[1],
            stored[0]
        );
    }
}

#[test]
fn a_match_can_start_in_the_dictionary_and_run_into_the_datum() {
    let dict = b"...........the quick brown fox ";
    let input = b"the quick brown fox the quick brown fox the quick brown fox !";
    let prepared = PglzDictionary::new(dict);
    let mut compressor = Compressor::new();
    let payload = compressor
        .compress_with_dict(input, &prepared, &Strategy::ALWAYS)
        .unwrap()
        .to_vec();
    // One tag for the first 60 bytes: it starts 20 bytes back, in the dictionary, and runs on
    // into the datum (each repeat copies the one before); then the literal '!'.
    assert_eq!(payload, [0b0000_0001, 0x0f, 20, 60 - 18, b'!']);
    assert_eq!(
        pglz::decompress_with_dict(&payload, input.len(), dict).unwrap(),
        input
    );
}

#[test]
fn decoder_copies_a_straddling_match_from_dictionary_then_output() {
    // Control byte 0b01: a tag (length 5, offset 3) then a literal 'Z'.
    let payload = [0b0000_0001, 0x02, 0x03, b'Z'];
    let out = pglz::decompress_with_dict(&payload, 6, b"xyzabc").unwrap();
    // 3 bytes back is "abc" in the dictionary; the match runs on over its own output.
    assert_eq!(out, b"abcabZ");
}

/// Regression (found by `arbitrary_payloads_with_a_dictionary_never_panic`): a match that
/// lies wholly in the dictionary, ending exactly at the output's end, left nothing to copy
/// from the output, and the empty copy computed a position before the output's start.
#[test]
fn a_match_wholly_in_the_dictionary_that_fills_the_output() {
    // Tag: length 3, offset 3, at output position 0 with raw_len 3.
    let payload = [0b0000_0001, 0x00, 0x03];
    assert_eq!(
        pglz::decompress_with_dict(&payload, 3, b"xyzabc").unwrap(),
        b"abc"
    );
    // A prefix that ends inside the dictionary part.
    let payload = [0b0000_0001, 0x02, 0x03];
    assert_eq!(
        pglz::decompress_prefix_with_dict(&payload, 5, 2, b"xyzabc").unwrap(),
        b"ab"
    );
}

#[test]
fn reference_before_the_dictionary_is_an_error_naming_the_history() {
    // Offset 7 at output position 0 with a 6-byte dictionary.
    let payload = [0b0000_0001, 0x00, 0x07];
    assert_eq!(
        pglz::decompress_with_dict(&payload, 3, b"xyzabc"),
        Err(Error::OffsetBeforeStart {
            src_pos: 1,
            dst_pos: 0,
            offset: 7,
            history: 6
        })
    );
    // Without the dictionary the same payload is corrupt too.
    assert!(pglz::decompress(&payload, 3).is_err());
}

#[test]
fn only_the_last_4095_dictionary_bytes_are_reachable() {
    let mut dict = vec![b'-'; 10_000];
    dict[..8].copy_from_slice(b"UNREACH!");
    let prepared = PglzDictionary::new(&dict);
    assert_eq!(prepared.as_bytes(), &dict[dict.len() - 4095..]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_round_trip_with_random_dictionaries(
        dict in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..6000),
        input in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..5000),
    ) {
        let prepared = PglzDictionary::new(&dict);
        round_trip(&mut Compressor::new(), &prepared, &dict, &input);
    }

    /// Decoding arbitrary payloads with a dictionary never panics; a success has raw_len bytes.
    #[test]
    fn arbitrary_payloads_with_a_dictionary_never_panic(
        dict in prop::collection::vec(any::<u8>(), 0..5000),
        payload in prop::collection::vec(any::<u8>(), 0..400),
        raw_len in 0..3000usize,
    ) {
        if let Ok(out) = pglz::decompress_with_dict(&payload, raw_len, &dict) {
            prop_assert_eq!(out.len(), raw_len);
        }
        let _ = pglz::decompress_prefix_with_dict(&payload, raw_len, raw_len / 2, &dict);
    }

    /// A payload made with one dictionary and decoded with another: an error or raw_len bytes.
    #[test]
    fn wrong_dictionary_is_an_error_or_wrong_bytes_of_the_right_length(
        dict_a in prop::collection::vec(any::<u8>(), 1..5000),
        dict_b in prop::collection::vec(any::<u8>(), 0..5000),
        input in prop::collection::vec(prop_oneof![Just(b'a'), any::<u8>()], 0..3000),
    ) {
        let mut full = dict_a.clone();
        full.extend_from_slice(&input);
        let prepared = PglzDictionary::new(&dict_a);
        let Some(payload) = Compressor::new().compress_with_dict(&input, &prepared, &Strategy::ALWAYS).map(<[u8]>::to_vec) else {
            return Ok(());
        };
        if let Ok(out) = pglz::decompress_with_dict(&payload, input.len(), &dict_b) {
            prop_assert_eq!(out.len(), input.len());
        }
    }
}
