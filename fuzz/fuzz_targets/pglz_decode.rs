//! pglz whole decode, no dictionary: arbitrary payload, arbitrary raw length below 1 MiB.
//!
//! Checks: no panic; a success has exactly `raw_len` bytes; `decompress`, `decompress_into`,
//! `decompress_prefix_into` (PostgreSQL's `check_complete = false`) and a decode with an
//! empty dictionary agree; an impossible raw length is refused before allocating; and (with
//! the `pgref` feature) PostgreSQL 15's C `pglz_decompress` accepts exactly the same payloads,
//! with the same bytes, in both `check_complete` modes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgdict::pglz;
use pgdict_fuzz::Plain;

/// The most raw bytes a payload byte can stand for, rounded up (pglz's `MAX_EXPANSION...`).
const EXPANSION: usize = 88;

fuzz_target!(|data: &[u8]| {
    let Plain { raw_len, payload } = Plain::parse(data);
    let whole = pglz::decompress(payload, raw_len);
    if let Ok(out) = &whole {
        assert_eq!(out.len(), raw_len);
    }
    assert_eq!(pglz::decompress_with_dict(payload, raw_len, &[]), whole);

    if raw_len > payload.len() * EXPANSION {
        assert!(
            matches!(whole, Err(pglz::Error::RawLenImpossible { .. })),
            "raw_len {raw_len} for {} payload bytes: {whole:?}",
            payload.len()
        );
        return;
    }
    let mut buf = vec![0u8; raw_len];
    match (&whole, pglz::decompress_into(payload, &mut buf)) {
        (Ok(out), Ok(())) => assert_eq!(out, &buf),
        (Err(a), Err(b)) => assert_eq!(a, &b),
        (a, b) => panic!("decompress {a:?} but decompress_into {b:?}"),
    }

    // Without check_complete the same loop runs and stops quietly where the strict decode
    // complains of a short output or trailing bytes.
    let mut partial = vec![0u8; raw_len];
    let produced = pglz::decompress_prefix_into(payload, &mut partial);
    match (&whole, &produced) {
        (Ok(out), Ok(n)) => {
            assert_eq!(*n, raw_len);
            assert_eq!(out, &partial);
        }
        (Err(pglz::Error::OutputShort { produced: p, .. }), Ok(n)) => assert_eq!(p, n),
        (Err(pglz::Error::TrailingInput { .. }), Ok(n)) => assert_eq!(*n, raw_len),
        (Err(a), Err(b)) => assert_eq!(a, b),
        (a, b) => panic!("decompress {a:?} but decompress_prefix_into {b:?}"),
    }

    #[cfg(feature = "pgref")]
    {
        let c = pgdict_pgref::decompress(payload, raw_len, true);
        assert_eq!(
            c.as_ref(),
            whole.as_ref().ok(),
            "C and Rust disagree: Rust {whole:?}"
        );
        let mut c_partial = vec![0u8; raw_len];
        let c_produced = pgdict_pgref::decompress_into(payload, &mut c_partial, false);
        assert_eq!(
            c_produced,
            produced.as_ref().ok().copied(),
            "Rust {produced:?}"
        );
        if let Some(n) = c_produced {
            assert_eq!(c_partial[..n], partial[..n]);
        }
    }
});
