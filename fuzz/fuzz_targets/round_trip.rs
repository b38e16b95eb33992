//! Round trip: arbitrary input, codec and dictionary (none, arbitrary bytes of up to 8000, or
//! one of the fixed dictionaries).
//!
//! Checks, for the datum: `DatumEncoder::encode` succeeds, gives the same bytes whether the
//! encoder is fresh or reused, is never larger than the raw datum nor than any candidate
//! form it could have stored (plain, dictionary), and `datum::decode` (and `decode_prefix`)
//! give the input back. For each codec on its own, with the same dictionary: compress, then
//! decompress gives the input; plain pglz with PostgreSQL's `DEFAULT` and `ALWAYS` strategies
//! too, and (with the `pgref` feature) its payload is byte-identical to PostgreSQL 15's C.

#![no_main]

use std::cell::RefCell;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use pgdict::datum::{self, Codec, DatumEncoder, DatumError, Dictionaries, PreparedDictionary};
use pgdict::lz4::{self, Lz4Compressor};
use pgdict::pglz::{self, Compressor, Strategy};
use pgdict::zstd::{self, ZstdCompressor};
use pgdict_fuzz::{fixed_dictionaries, RoundTrip};

thread_local! {
    static ENCODER: RefCell<DatumEncoder> = RefCell::new(DatumEncoder::new());
    static PGLZ: RefCell<Compressor> = RefCell::new(Compressor::new());
}

/// zstd's dictionary magic number, little-endian: bytes that start with it must be a valid
/// zstd-format dictionary.
const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];

fuzz_target!(|data: &[u8]| {
    let rt = RoundTrip::parse(data);
    let input = rt.input;
    let codec = [Codec::Pglz, Codec::Lz4, Codec::Zstd, Codec::Pglz][usize::from(rt.flags & 3)];
    let fixed = fixed_dictionaries();
    let dict: Option<Arc<PreparedDictionary>> = match (rt.flags >> 2) & 3 {
        0 => None,
        1 => match PreparedDictionary::new(rt.dict_id, rt.dict) {
            Ok(d) => Some(Arc::new(d)),
            Err(DatumError::DictionaryPrepare { .. }) => {
                assert!(
                    rt.dict.starts_with(&ZSTD_DICT_MAGIC),
                    "{} bytes",
                    rt.dict.len()
                );
                return;
            }
            Err(e) => panic!("cannot prepare dictionary {}: {e:?}", rt.dict_id),
        },
        _ => Some(Arc::clone(&fixed[rt.dict_id as usize % fixed.len()])),
    };
    let dict = dict.as_deref();

    // The datum.
    let stored = ENCODER
        .with(|e| e.borrow_mut().encode(input, codec, dict))
        .expect("encode");
    let fresh = DatumEncoder::new()
        .encode(input, codec, dict)
        .expect("encode");
    assert_eq!(stored, fresh, "a reused encoder differs from a fresh one");
    let raw_total = if input.len() < 127 {
        input.len() + 1
    } else {
        input.len() + 4
    };
    assert!(
        stored.len() <= raw_total,
        "{} bytes for {} raw",
        stored.len(),
        input.len()
    );
    let header = datum::parse_header(&stored).expect("the stored datum parses");
    assert_eq!(header.raw_len, input.len());
    let mut dicts = Dictionaries::new();
    if let Some(d) = dict {
        dicts.insert(Arc::new(
            PreparedDictionary::new(d.id(), d.as_bytes()).expect("prepares again"),
        ));
    }
    assert_eq!(datum::decode(&stored, &dicts).expect("decode"), input);
    let wanted = rt.prefix_len.min(input.len());
    assert_eq!(
        datum::decode_prefix(&stored, rt.prefix_len, &dicts).expect("decode_prefix"),
        input[..wanted]
    );

    // Each codec on its own, and the datum against every form it could have chosen.
    let ext_header = dict.map_or(0, |d| {
        9 + (32 - d.id().leading_zeros()).div_ceil(7) as usize
    });
    match codec {
        Codec::Pglz => {
            if let Some(d) = dict {
                let payload = PGLZ.with(|c| {
                    c.borrow_mut()
                        .compress_with_dict(input, d.pglz(), &Strategy::DICTIONARY)
                        .map(<[u8]>::to_vec)
                });
                if let Some(payload) = payload {
                    let back = pglz::decompress_with_dict(&payload, input.len(), d.as_bytes());
                    assert_eq!(back.as_deref(), Ok(input));
                    assert!(stored.len() <= ext_header + payload.len());
                }
            }
        }
        Codec::Lz4 => {
            let mut compressor = Lz4Compressor::new();
            let plain = lz4::compress(input).expect("lz4 compresses");
            assert_eq!(lz4::decompress(&plain, input.len()).as_deref(), Ok(input));
            assert!(stored.len() <= 8 + plain.len());
            assert_eq!(compressor.compress(input).as_ref(), Ok(&plain));
            if let Some(d) = dict {
                let payload = compressor.compress_with_dict(input, d.lz4()).expect("lz4");
                let back = lz4::decompress_with_dict(&payload, input.len(), d.as_bytes());
                assert_eq!(back.as_deref(), Ok(input));
                assert!(stored.len() <= ext_header + payload.len());
            }
            // The same compressor again, its tables as the calls above left them: plain blocks
            // stay PostgreSQL's bytes (half the input, then all of it, across the size from
            // which the compressor clears its table first).
            let half = &input[..input.len() / 2];
            assert_eq!(compressor.compress(half), lz4::compress(half));
            assert_eq!(compressor.compress(input).as_ref(), Ok(&plain));
        }
        Codec::Zstd => {
            if let Some(d) = dict {
                let mut compressor = ZstdCompressor::new().expect("a zstd context");
                let payload = compressor
                    .compress_with_dict(input, d.zstd().expect("prepared for every codec"))
                    .expect("zstd");
                let back = zstd::decompress_with_dict(
                    &payload,
                    input.len(),
                    d.zstd().expect("prepared for every codec"),
                );
                assert_eq!(back.as_deref(), Ok(input));
                if !d.is_empty() {
                    assert!(stored.len() <= ext_header + payload.len());
                }
            }
        }
    }

    // Plain pglz with PostgreSQL's strategies.
    for (strategy, name) in [(Strategy::DEFAULT, "default"), (Strategy::ALWAYS, "always")] {
        let payload = PGLZ.with(|c| {
            c.borrow_mut()
                .compress(input, &strategy)
                .map(<[u8]>::to_vec)
        });
        assert_eq!(
            pglz::compress(input, &strategy),
            payload,
            "one-shot vs reused ({name})"
        );
        if let Some(payload) = &payload {
            assert_eq!(pglz::decompress(payload, input.len()).as_deref(), Ok(input));
            if codec == Codec::Pglz && name == "default" {
                assert!(stored.len() <= 8 + payload.len());
            }
        }
        #[cfg(feature = "pgref")]
        {
            let c_strategy = if name == "default" {
                pgdict_pgref::strategy_default()
            } else {
                pgdict_pgref::strategy_always()
            };
            let c = pgdict_pgref::compress(input, &c_strategy);
            assert_eq!(payload, c, "Rust and PostgreSQL's C pglz differ ({name})");
        }
    }
});
