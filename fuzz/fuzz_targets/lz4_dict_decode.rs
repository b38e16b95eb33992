//! lz4 decode with an arbitrary dictionary of 0..=68 KiB (lz4 reaches its last 64 KiB): whole
//! and prefix decodes of an arbitrary block, raw length below 1 MiB.
//!
//! Checks: no panic and no memory error around liblz4; a success has exactly `raw_len` (or
//! `min(prefix_len, raw_len)`) bytes; what pgdict accepts, a simple reference decoder written
//! from the block format accepts too, with the same bytes and without an offset-0 match (this
//! also catches an output byte liblz4 would not have written); the whole dictionary and its
//! last 64 KiB decode alike, as do the free function and a prepared `Lz4Dictionary`; decoding
//! into a reused buffer that holds other bytes gives what a fresh decode gives; a block that
//! decodes without a dictionary decodes the same with one; and the whole decode's first bytes
//! are the prefix.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgdict::lz4::{self, Lz4Dictionary, DICT_WINDOW};
use pgdict_fuzz::{
    lz4_reference_decode, lz4_reference_decode_prefix, WithDict, MAX_LZ4_DICT_LEN, MAX_RAW_LEN,
};

fuzz_target!(|data: &[u8]| {
    let WithDict {
        dict,
        raw_len,
        prefix_len,
        payload,
    } = WithDict::parse(data, MAX_LZ4_DICT_LEN, MAX_RAW_LEN);
    let wanted = prefix_len.min(raw_len);

    let whole = lz4::decompress_with_dict(payload, raw_len, dict);
    if let Ok(out) = &whole {
        assert_eq!(out.len(), raw_len);
        let reference =
            lz4_reference_decode(payload, dict, raw_len).map(|r| (r.out, r.zero_offset));
        assert_eq!(
            reference.as_ref(),
            Some(&(out.clone(), false)),
            "liblz4 and the reference disagree"
        );
    }
    let window = &dict[dict.len().saturating_sub(DICT_WINDOW)..];
    if window.len() < dict.len() {
        assert_eq!(lz4::decompress_with_dict(payload, raw_len, window), whole);
    }
    let plain = lz4::decompress(payload, raw_len);
    let mut reused = dict.to_vec();
    let plain_into = lz4::decompress_into(payload, raw_len, &mut reused).map(|()| reused);
    assert_eq!(plain_into, plain);
    if let Ok(plain) = &plain {
        assert_eq!(
            whole.as_ref(),
            Ok(plain),
            "decodes without a dictionary only"
        );
    }

    let prefix = lz4::decompress_prefix_with_dict(payload, raw_len, prefix_len, dict);
    if let Ok(out) = &prefix {
        assert_eq!(out.len(), wanted);
        let reference =
            lz4_reference_decode_prefix(payload, dict, wanted).map(|r| (r.out, r.zero_offset));
        assert_eq!(
            reference.as_ref(),
            Some(&(out.clone(), false)),
            "liblz4 and the reference disagree"
        );
    }
    if let Ok(whole) = &whole {
        match &prefix {
            Ok(out) => assert_eq!(out[..], whole[..wanted]),
            Err(e) => panic!("whole decode succeeds but the prefix of {wanted} fails: {e:?}"),
        }
    }

    // A prepared dictionary decodes with its own bytes (the last 64 KiB).
    if data.first().is_some_and(|b| b & 1 == 1) {
        let prepared = Lz4Dictionary::new(dict);
        assert_eq!(prepared.as_bytes(), window);
        assert_eq!(prepared.decompress(payload, raw_len), whole);
        // Into a reused buffer that holds other bytes: the same result.
        let mut reused = payload.to_vec();
        let into = prepared
            .decompress_into(payload, raw_len, &mut reused)
            .map(|()| reused);
        assert_eq!(into, whole);
        assert_eq!(
            prepared.decompress_prefix(payload, raw_len, prefix_len),
            prefix
        );
    }
});
