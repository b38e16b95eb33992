//! pglz whole decode with an arbitrary dictionary of 0..=8000 bytes (pglz reaches its last
//! 4095) and an arbitrary payload and raw length below 1 MiB.
//!
//! Checks: no panic; a success has exactly `raw_len` bytes; only the dictionary's last 4095
//! bytes matter (the whole dictionary and its last 4095 bytes decode alike); a payload that
//! decodes without a dictionary decodes to the same bytes with any dictionary (a match that
//! stays inside the output does not see the history before it); the prefix path with
//! `prefix_len >= raw_len` is the whole decode; and (with the `pgref` feature) PostgreSQL 15's
//! C `pglz_decompress` as the oracle of the bytes ([`c_with_history`]).

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
    #[cfg(feature = "pgref")]
    c_with_history(window, payload, raw_len, &with_dict);
    // No `PglzDictionary` here: preparing one took over two thirds of this target's time
    // under the instrumentation, for one equality (tests/pglz_dict.rs checks that it keeps
    // the last 4095 bytes); `round_trip` fuzzes the preparation.
});

/// C has no dictionary, but a payload that writes the history first as literals gives it one:
/// a control byte of 0 then 8 literal bytes, for every 8 bytes of history, then the datum's
/// payload, decoded to `history + raw_len` bytes. The datum's bytes must be C's after the
/// history. C's history is the last multiple of 8 bytes of `window` (with one byte in front of
/// a 4095-byte window, which no offset reaches: 4095 is the farthest): when that is all of
/// it, C and pgdict must accept the same payloads; when a few bytes are left out in front,
/// whatever C decodes pgdict must decode alike.
#[cfg(feature = "pgref")]
fn c_with_history(
    window: &[u8],
    payload: &[u8],
    raw_len: usize,
    with_dict: &Result<Vec<u8>, pglz::Error>,
) {
    let padded;
    let (history, whole) = if window.len() == DICT_WINDOW {
        padded = [&[0u8][..], window].concat();
        (&padded[..], true)
    } else {
        let kept = window.len() / 8 * 8;
        (&window[window.len() - kept..], kept == window.len())
    };
    let mut stream = Vec::with_capacity(history.len() / 8 * 9 + payload.len());
    for group in history.chunks_exact(8) {
        stream.push(0);
        stream.extend_from_slice(group);
    }
    stream.extend_from_slice(payload);
    let c = pgdict_pgref::decompress(&stream, history.len() + raw_len, true)
        .map(|out| out[history.len()..].to_vec());
    match (&c, with_dict) {
        (Some(c), Ok(ours)) => assert_eq!(c, ours, "C and pgdict decode differently"),
        (Some(_), Err(e)) => panic!("C decodes what pgdict refuses: {e:?}"),
        (None, Ok(_)) if whole => panic!("pgdict decodes what C refuses"),
        (None, _) => {}
    }
}
