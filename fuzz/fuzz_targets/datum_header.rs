//! Datum header parsing and datum decoding on arbitrary bytes, with a fixed set of five
//! dictionaries (ids of 1 to 5 LEB128 bytes; see `fixed_dictionaries`).
//!
//! Checks: no panic; `read_header` describes a header that is all there (`header_len <=
//! bytes.len()`), covered by `total_len`, that depends only on its own bytes and re-reads the
//! same from them alone, with a minimal dict id varint and `raw_len < 2^30`; `parse_header`
//! is `read_header` plus `total_len == len`; a decode succeeds only with exactly `raw_len`
//! bytes (a raw datum decodes to its payload); a reused `DatumDecoder` succeeds or fails as a
//! fresh one does, with the same bytes; `decode_into` a buffer holding other bytes gives the
//! same bytes; and the whole decode's first bytes are the prefix decode. Run with
//! `-malloc_limit_mb` to check that no header makes the decoder allocate more than its payload
//! can justify (see README.md).

#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use pgdict::datum::{self, Codec, DatumDecoder, DatumError, Form};
use pgdict::zstd;
use pgdict_fuzz::{fixed_set, same_outcome, DatumInput};

/// `ZSTD_error_frameParameter_windowTooLarge` ("Frame requires too much memory for decoding").
const ZSTD_ERROR_WINDOW_TOO_LARGE: usize = 16;

thread_local! {
    static DECODER: RefCell<DatumDecoder> = RefCell::new(DatumDecoder::new());
}

/// Bytes the minimal LEB128 form of `id` takes.
fn varint_len(id: u32) -> usize {
    (32 - id.leading_zeros()).max(1).div_ceil(7) as usize
}

fuzz_target!(|data: &[u8]| {
    let DatumInput { prefix_len, datum } = DatumInput::parse(data);
    let read = datum::read_header(datum);
    if let Ok(h) = &read {
        assert!(
            h.header_len <= datum.len(),
            "{h:?} from {} bytes",
            datum.len()
        );
        assert!(h.header_len <= h.total_len, "{h:?}");
        assert!(h.raw_len < 1 << 30, "{h:?}");
        assert_eq!(datum::read_header(&datum[..h.header_len]).as_ref(), Ok(h));
        match h.form {
            Form::RawShort | Form::RawLong => {
                assert_eq!(h.raw_len, h.total_len - h.header_len, "{h:?}");
            }
            Form::Pglz | Form::Lz4 => assert_eq!(h.header_len, 8),
            Form::Extended { dict_id, .. } => {
                assert_ne!(dict_id, 0);
                assert_eq!(h.header_len, 9 + varint_len(dict_id), "{h:?}");
            }
        }
    }
    let parsed = datum::parse_header(datum);
    match (&read, &parsed) {
        (Ok(r), Ok(p)) => {
            assert_eq!(r, p);
            assert_eq!(p.total_len, datum.len());
        }
        (Ok(r), Err(DatumError::LengthMismatch { .. })) => assert_ne!(r.total_len, datum.len()),
        (Err(r), Err(p)) => assert_eq!(r, p),
        (r, p) => panic!("read_header {r:?} but parse_header {p:?}"),
    }

    let dicts = fixed_set();
    let whole = datum::decode(datum, dicts);
    let reused = DECODER.with(|d| d.borrow_mut().decode(datum, dicts));
    assert!(
        same_outcome(&reused, &whole),
        "reused {reused:?}, fresh {whole:?}"
    );
    if let Ok(out) = &whole {
        let h = parsed.as_ref().expect("a decoded datum has a valid header");
        assert_eq!(out.len(), h.raw_len);
        if h.form.is_raw() {
            assert_eq!(out[..], datum[h.payload_range()]);
        }
    }

    // decode_into a reused buffer that holds other bytes (of any length): the same outcome
    // and bytes as a fresh decode, so nothing of the old contents survives.
    let mut buf = vec![0xa5u8; prefix_len % 8192];
    let into = DECODER.with(|d| d.borrow_mut().decode_into(datum, dicts, &mut buf));
    match (&whole, &into) {
        (Ok(out), Ok(h)) => {
            assert_eq!(&buf, out, "decode_into kept bytes of the old buffer");
            assert_eq!(Ok(h), parsed.as_ref());
        }
        (Err(_), Err(_)) => {}
        (w, i) => panic!("decode {w:?} but decode_into {i:?}"),
    }

    let prefix = datum::decode_prefix(datum, prefix_len, dicts);
    let reused = DECODER.with(|d| d.borrow_mut().decode_prefix(datum, prefix_len, dicts));
    assert!(
        same_outcome(&reused, &prefix),
        "reused {reused:?}, fresh {prefix:?}"
    );
    if let (Ok(out), Ok(h)) = (&prefix, &parsed) {
        assert_eq!(out.len(), prefix_len.min(h.raw_len));
    }
    if let Ok(whole) = &whole {
        let wanted = prefix_len.min(whole.len());
        let zstd_form = parsed.as_ref().unwrap().form.codec() == Some(Codec::Zstd);
        match &prefix {
            Ok(out) => assert_eq!(out[..], whole[..wanted], "prefix of {wanted}"),
            // zstd's streaming prefix decode refuses frames asking for a larger window than
            // the raw length can need (documented); the one-shot decode does not look.
            Err(DatumError::Zstd {
                error: zstd::Error::Corrupt { code, .. },
                ..
            }) if zstd_form && *code == ZSTD_ERROR_WINDOW_TOO_LARGE => {}
            Err(e) => panic!("whole decode succeeds but the prefix of {wanted} fails: {e:?}"),
        }
    }
});
