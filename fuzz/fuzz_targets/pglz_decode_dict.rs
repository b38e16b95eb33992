//! pglz whole decode with an arbitrary dictionary of 0..=8000 bytes (pglz reaches its last
//! 4095) and an arbitrary payload and raw length below 1 MiB.
//!
//! Checks: no panic; a success has exactly `raw_len` bytes; only the dictionary's last 4095
//! bytes matter (the whole dictionary and its last 4095 bytes decode alike); a payload that
//! decodes without a dictionary decodes to the same bytes with any dictionary (a match that
//! stays inside the output does not see the history before it); the prefix path with
//! `prefix_len >= raw_len` is the whole decode.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgdict::pglz::{self, DICT_WINDOW};
use pgdict_fuzz::{WithDict, MAX_PGLZ_DICT_LEN, MAX_RAW_LEN};

fuzz_target!(|data: &[u8]| {
    let WithDict {
        dict,
        raw_len,
        payload,
        ..
    } = WithDict::parse(data, MAX_PGLZ_DICT_LEN, MAX_RAW_LEN);
    let with_dict = pglz::decompress_with_dict(payload, raw_len, dict);
    if let Ok(out) = &with_dict {
        assert_eq!(out.len(), raw_len);
    }
    let window = &dict[dict.len().saturating_sub(DICT_WINDOW)..];
    if window.len() < dict.len() {
        assert_eq!(
            pglz::decompress_with_dict(payload, raw_len, window),
            with_dict
        );
    }
    if let Ok(plain) = pglz::decompress(payload, raw_len) {
        assert_eq!(
            with_dict.as_ref(),
            Ok(&plain),
            "decodes without a dictionary only"
        );
    }
    assert_eq!(
        pglz::decompress_prefix_with_dict(payload, raw_len, raw_len, dict),
        with_dict
    );
    // No `PglzDictionary` here: preparing one took over two thirds of this target's time
    // under the instrumentation, for one equality (tests/pglz_dict.rs checks that it keeps
    // the last 4095 bytes); `round_trip` fuzzes the preparation.
});
