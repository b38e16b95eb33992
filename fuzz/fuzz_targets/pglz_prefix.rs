//! pglz prefix decode (PostgreSQL's slice decoding for `substr()`), with and without an
//! arbitrary dictionary.
//!
//! Checks: no panic; the prefix has at most `min(prefix_len, raw_len)` bytes; when the whole
//! decode succeeds, the prefix decode succeeds too and is exactly the whole decode's first
//! `min(prefix_len, raw_len)` bytes (so `maximum_compressed_size` never cuts off a byte the
//! prefix needs); `maximum_compressed_size` agrees with PostgreSQL's; and, without a
//! dictionary (with the `pgref` feature), C's `pglz_decompress` over the same readable bytes
//! gives the same prefix.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgdict::pglz;
use pgdict_fuzz::{WithDict, MAX_PGLZ_DICT_LEN, MAX_RAW_LEN};

fuzz_target!(|data: &[u8]| {
    let WithDict {
        dict,
        raw_len,
        prefix_len,
        payload,
    } = WithDict::parse(data, MAX_PGLZ_DICT_LEN, MAX_RAW_LEN);
    let wanted = prefix_len.min(raw_len);
    let prefix = if dict.is_empty() {
        pglz::decompress_prefix(payload, raw_len, prefix_len)
    } else {
        pglz::decompress_prefix_with_dict(payload, raw_len, prefix_len, dict)
    };
    if let Ok(out) = &prefix {
        assert!(
            out.len() <= wanted,
            "{} bytes for a prefix of {wanted}",
            out.len()
        );
    }
    let whole = pglz::decompress_with_dict(payload, raw_len, dict);
    if let Ok(whole) = &whole {
        match &prefix {
            Ok(out) => assert_eq!(out[..], whole[..wanted], "prefix of {wanted}"),
            Err(e) => panic!("whole decode succeeds but the prefix of {wanted} fails: {e:?}"),
        }
    }

    let readable = pglz::maximum_compressed_size(prefix_len, payload.len());
    assert!(readable <= payload.len());
    #[cfg(feature = "pgref")]
    if let (Ok(k), Ok(len)) = (i32::try_from(prefix_len), i32::try_from(payload.len())) {
        let c_readable = pgdict_pgref::maximum_compressed_size(k, len);
        assert_eq!(
            readable as i64,
            i64::from(c_readable),
            "maximum_compressed_size({k}, {len})"
        );
        if dict.is_empty() && prefix_len < raw_len {
            // PostgreSQL's slice decode: the readable part, check_complete = false.
            let c = pgdict_pgref::decompress(&payload[..readable], prefix_len, false);
            assert_eq!(c.as_ref(), prefix.as_ref().ok(), "Rust {prefix:?}");
        }
    }
});
