//! zstd decode (magicless frames) with a dictionary: one of the fixed dictionaries (raw
//! content of several sizes, a zstd-format dictionary with entropy tables, the empty one) or
//! arbitrary bytes of up to 8000 (zstd reads bytes that start with its dictionary magic number
//! as a zstd-format dictionary, so the fuzzer can reach that parser too). Whole and prefix
//! decodes of an arbitrary payload, raw length below 1 MiB.
//!
//! Checks: no panic and no memory error around libzstd; a success has exactly `raw_len` (or
//! `min(prefix_len, raw_len)`) bytes; a decoder reused across calls (as the datum decoder
//! does) succeeds or fails as a fresh one does, with the same bytes, so no state leaks from one
//! datum into the next (the error may differ: see `same_outcome`); a fresh context decoding
//! into a buffer reused across runs gives exactly the fresh result, error included; and
//! the whole decode's first bytes are the prefix. The prefix decode may refuse a frame that
//! the whole decode accepts only for the reason it documents: the frame asks for a window
//! larger than a frame of `raw_len` bytes can need.

#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use pgdict::zstd::{self, Error, ZstdDecompressor, ZstdDictionary};
use pgdict_fuzz::{fixed_dictionaries, same_outcome, Choice, MAX_PGLZ_DICT_LEN, MAX_RAW_LEN};

/// `ZSTD_error_frameParameter_windowTooLarge` ("Frame requires too much memory for decoding").
const ZSTD_ERROR_WINDOW_TOO_LARGE: usize = 16;

thread_local! {
    static DECODER: RefCell<ZstdDecompressor> =
        RefCell::new(ZstdDecompressor::new().expect("a zstd decompression context"));
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fuzz_target!(|data: &[u8]| {
    let Choice { choice, input } = Choice::parse(data, MAX_PGLZ_DICT_LEN, MAX_RAW_LEN);
    let fixed = fixed_dictionaries();
    let arbitrary;
    let dict: &ZstdDictionary = match fixed.get(usize::from(choice) % (fixed.len() + 1)) {
        Some(prepared) => prepared.zstd().expect("prepared for every codec"),
        None => match ZstdDictionary::new(input.dict) {
            Ok(d) => {
                arbitrary = d;
                &arbitrary
            }
            Err(Error::Dictionary { .. }) => return,
            Err(e) => panic!("unexpected dictionary error {e:?}"),
        },
    };
    let (payload, raw_len, prefix_len) = (input.payload, input.raw_len, input.prefix_len);
    let wanted = prefix_len.min(raw_len);

    let whole = zstd::decompress_with_dict(payload, raw_len, dict);
    if let Ok(out) = &whole {
        assert_eq!(out.len(), raw_len);
    }
    let reused = DECODER.with(|d| d.borrow_mut().decompress_with_dict(payload, raw_len, dict));
    assert!(
        same_outcome(&reused, &whole),
        "reused {reused:?}, fresh {whole:?}"
    );
    // On a fresh context too, into a buffer kept from earlier runs (other bytes, any
    // capacity): exactly the fresh result, error included, and an empty buffer on error.
    let into = OUTPUT.with(|out| {
        let mut out = out.borrow_mut();
        let mut fresh = ZstdDecompressor::new().expect("a zstd decompression context");
        let res = fresh.decompress_with_dict_into(payload, raw_len, dict, &mut out);
        res.map(|()| out.clone())
            .inspect_err(|_| assert!(out.is_empty()))
    });
    assert_eq!(into, whole);
    if choice & 0x80 != 0 {
        // Interleave a decode without a dictionary on the reused decoder.
        let plain = DECODER.with(|d| d.borrow_mut().decompress(payload, raw_len));
        let fresh = zstd::decompress(payload, raw_len);
        assert!(
            same_outcome(&plain, &fresh),
            "reused {plain:?}, fresh {fresh:?}"
        );
        if dict.is_empty() {
            assert!(same_outcome(&plain, &whole), "{plain:?} {whole:?}");
        }
    }

    let prefix = zstd::decompress_prefix_with_dict(payload, raw_len, prefix_len, dict);
    if let Ok(out) = &prefix {
        assert_eq!(out.len(), wanted);
    }
    let reused = DECODER.with(|d| {
        d.borrow_mut()
            .decompress_prefix_with_dict(payload, raw_len, prefix_len, dict)
    });
    assert!(
        same_outcome(&reused, &prefix),
        "reused {reused:?}, fresh {prefix:?}"
    );
    if let Ok(whole) = &whole {
        match &prefix {
            Ok(out) => assert_eq!(out[..], whole[..wanted], "prefix of {wanted}"),
            Err(Error::Corrupt { code, .. }) if *code == ZSTD_ERROR_WINDOW_TOO_LARGE => {}
            Err(e) => panic!("whole decode succeeds but the prefix of {wanted} fails: {e:?}"),
        }
    }
});
