//! The datum format (`pgdict::datum`): round trips over the corpus rows for every codec and
//! dictionary size, PostgreSQL-identical plain forms, a table of hand-made corrupt headers with
//! their exact errors, wrong dictionaries, and property tests (no panics on any bytes; round
//! trips and prefixes on random values).
//!
//! The corpus is read from `$PGDICT_CORPUS/rows`, else `../shared/corpus/rows` next to the
//! workspace (`support/corpus.rs`). A missing corpus fails the tests.

use std::collections::HashMap;
use std::sync::Arc;

use pgdict::datum::{
    self, Codec, DatumDecoder, DatumEncoder, DatumError, Dictionaries, DictionaryLookup, Form,
    Header, LookupFailure, NoDictionaries, PreparedDictionary, MAX_INPUT_LEN,
};
use pgdict::dict::CodecSet;
use pgdict::{lz4, pglz, zstd};
use proptest::prelude::*;

#[allow(dead_code)]
#[path = "support/corpus.rs"]
mod corpus;

/// Rows per set that are encoded (the rows after them make the dictionaries).
const ROWS: usize = 300;

/// Dictionary sizes every corpus round trip runs with (0 = no dictionary at all, and also an
/// empty dictionary under an id).
const DICT_SIZES: [usize; 6] = [0, 1, 100, 4095, 4096, 65536];

/// A dictionary id per dictionary size, so that every varint length (1 to 5 bytes) is used.
const DICT_IDS: [u32; 6] = [1, 127, 128, 16_384, 2_097_152, u32::MAX];

// ---------------------------------------------------------------------------------------------
// Corpus

/// The datums of one row file, read with `pgdict::rows`.
fn row_set(file: &str) -> Vec<Vec<u8>> {
    let path = corpus::rows_dir().join(file);
    let rows = pgdict::rows::read_row_file(&path)
        .unwrap_or_else(|e| panic!("cannot read the corpus row file: {e}"));
    assert!(
        rows.len() > ROWS,
        "{file}: {} rows, the test needs more than {ROWS}",
        rows.len()
    );
    rows
}

/// A dictionary of exactly `size` bytes: the rows after the tested ones, concatenated, cut
/// from the front so that the rows nearest the end (the ones pglz reaches) are whole.
fn dict_bytes(rows: &[Vec<u8>], size: usize) -> Vec<u8> {
    let mut dict = Vec::new();
    for row in &rows[ROWS..] {
        if dict.len() >= size {
            break;
        }
        dict.extend_from_slice(row);
    }
    assert!(dict.len() >= size, "not enough rows for {size} bytes");
    dict.split_off(dict.len() - size)
}

/// The largest datum the raw form of `raw_len` bytes takes.
fn raw_form_len(raw_len: usize) -> usize {
    if raw_len <= 126 {
        raw_len + 1
    } else {
        raw_len + 4
    }
}

/// How often each form won, and the bytes in and out, for one set × codec × dictionary.
#[derive(Default)]
struct Tally {
    raw: usize,
    plain: usize,
    dict: usize,
    raw_bytes: usize,
    stored_bytes: usize,
}

/// What a value was encoded with, and where its decoder finds dictionaries.
struct Setting<'a> {
    codec: Codec,
    dict: Option<&'a PreparedDictionary>,
    dicts: &'a dyn DictionaryLookup,
}

/// Checks everything about one encoded datum: header, size, PostgreSQL's forms, decoding and
/// prefix decoding.
fn check_datum(
    raw: &[u8],
    stored: &[u8],
    header: Header,
    setting: &Setting<'_>,
    decoder: &mut DatumDecoder,
    context: &str,
) {
    let Setting { codec, dict, dicts } = *setting;
    assert_eq!(
        datum::parse_header(stored),
        Ok(header),
        "{context}: parse_header disagrees with what encode returned"
    );
    assert_eq!(header.total_len, stored.len(), "{context}");
    assert_eq!(header.raw_len, raw.len(), "{context}");
    assert!(
        stored.len() <= raw_form_len(raw.len()),
        "{context}: {} bytes stored for {} raw",
        stored.len(),
        raw.len()
    );
    let payload = &stored[header.header_len..];
    match header.form {
        Form::RawShort => {
            assert!(raw.len() <= 126, "{context}");
            assert_eq!(stored[0], ((raw.len() as u8 + 1) << 1) | 1, "{context}");
            assert_eq!(payload, raw, "{context}");
        }
        Form::RawLong => {
            assert!(raw.len() > 126, "{context}: a short header would do");
            assert_eq!(stored[..4], ((stored.len() as u32) << 2).to_le_bytes());
            assert_eq!(payload, raw, "{context}");
        }
        Form::Pglz => {
            assert_eq!(codec, Codec::Pglz, "{context}");
            // PostgreSQL's varlena: va_header, va_tcinfo with method 0, then its own payload.
            assert_eq!(
                stored[..4],
                (((stored.len() as u32) << 2) | 2).to_le_bytes()
            );
            assert_eq!(stored[4..8], (raw.len() as u32).to_le_bytes());
            let reference = pgdict_pgref::compress(raw, &pgdict_pgref::strategy_default());
            assert_eq!(
                reference.as_deref(),
                Some(payload),
                "{context}: plain pglz differs from PostgreSQL's"
            );
            assert_eq!(
                pgdict_pgref::decompress(payload, raw.len(), true).as_deref(),
                Some(raw),
                "{context}: PostgreSQL cannot decode the plain pglz payload"
            );
        }
        Form::Lz4 => {
            assert_eq!(codec, Codec::Lz4, "{context}");
            assert_eq!(
                stored[..4],
                (((stored.len() as u32) << 2) | 2).to_le_bytes()
            );
            assert_eq!(stored[4..8], ((raw.len() as u32) | (1 << 30)).to_le_bytes());
            assert_eq!(lz4::compress(raw).unwrap(), payload, "{context}");
        }
        Form::Extended { codec: c, dict_id } => {
            assert_eq!(c, codec, "{context}");
            let dict = dict.unwrap_or_else(|| panic!("{context}: extended form without a dict"));
            assert_eq!(dict_id, dict.id(), "{context}");
            assert_eq!(stored[4..8], ((raw.len() as u32) | (3 << 30)).to_le_bytes());
            assert_eq!(stored[8], codec.code(), "{context}");
        }
    }
    assert_eq!(
        (kind_of(header.form), stored.len()),
        smallest_form(raw, codec, dict),
        "{context}: not the smallest form (or not the simplest of the smallest)"
    );
    if codec == Codec::Zstd && dict.is_none() {
        assert!(header.form.is_raw(), "{context}: zstd without a dictionary");
    }

    let decoded = decoder
        .decode(stored, dicts)
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    assert!(decoded == raw, "{context}: decodes to other bytes");
    for k in prefix_lengths(raw.len()) {
        let prefix = decoder
            .decode_prefix(stored, k, dicts)
            .unwrap_or_else(|e| panic!("{context}, prefix {k}: {e}"));
        assert!(
            prefix == raw[..k.min(raw.len())],
            "{context}: prefix of {k} bytes differs"
        );
    }
}

/// Every form `raw` can take and its length, worked out independently of the encoder: each
/// codec called directly with its unmodified strategy, every form's size computed by hand. In
/// order of simplicity: raw, then plain (PostgreSQL reads it), then dictionary.
fn forms(raw: &[u8], codec: Codec, dict: Option<&PreparedDictionary>) -> Vec<(FormKind, usize)> {
    let ext_header = |d: &PreparedDictionary| {
        9 + match d.id() {
            0..=0x7f => 1,
            0x80..=0x3fff => 2,
            0x4000..=0x1f_ffff => 3,
            0x20_0000..=0x0fff_ffff => 4,
            _ => 5,
        }
    };
    let mut candidates = vec![(FormKind::Raw, raw_form_len(raw.len()))];
    match codec {
        Codec::Pglz => {
            if let Some(p) = pglz::compress(raw, &pglz::Strategy::DEFAULT) {
                candidates.push((FormKind::Plain, 8 + p.len()));
            }
            if let Some(d) = dict {
                let mut c = pglz::Compressor::new();
                if let Some(p) = c.compress_with_dict(raw, d.pglz(), &pglz::Strategy::DICTIONARY) {
                    candidates.push((FormKind::Dictionary, ext_header(d) + p.len()));
                }
            }
        }
        Codec::Lz4 => {
            candidates.push((FormKind::Plain, 8 + lz4::compress(raw).unwrap().len()));
            if let Some(d) = dict {
                let p = lz4::Lz4Compressor::new()
                    .compress_with_dict(raw, d.lz4())
                    .unwrap();
                candidates.push((FormKind::Dictionary, ext_header(d) + p.len()));
            }
        }
        Codec::Zstd => {
            if let Some(d) = dict {
                candidates.push((
                    FormKind::Dictionary,
                    ext_header(d)
                        + zstd::compress_with_dict(
                            raw,
                            d.zstd().expect("prepared for every codec"),
                        )
                        .unwrap()
                        .len(),
                ));
            }
        }
    }
    candidates
}

/// The smallest form's kind and length ([`forms`]); of forms of one length, the simpler.
fn smallest_form(raw: &[u8], codec: Codec, dict: Option<&PreparedDictionary>) -> (FormKind, usize) {
    let candidates = forms(raw, codec, dict);
    let shortest = candidates.iter().map(|&(_, len)| len).min().unwrap();
    candidates
        .into_iter()
        .find(|&(_, len)| len == shortest)
        .unwrap()
}

/// The kinds of form the encoder chooses among.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum FormKind {
    Raw,
    Plain,
    Dictionary,
}

fn kind_of(form: Form) -> FormKind {
    match form {
        Form::RawShort | Form::RawLong => FormKind::Raw,
        Form::Pglz | Form::Lz4 => FormKind::Plain,
        Form::Extended { .. } => FormKind::Dictionary,
    }
}

/// Prefix lengths to try for a value of `len` bytes (some past the end, which are capped).
fn prefix_lengths(len: usize) -> Vec<usize> {
    let mut ks = vec![
        0,
        1,
        17,
        len / 3,
        len.saturating_sub(1),
        len,
        len + 1,
        1 << 40,
    ];
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// Round trips every tested row of a set with every codec and dictionary size, and prints how
/// often each form won.
fn corpus_round_trip(file: &str) {
    let rows = row_set(file);
    let tested = &rows[..ROWS];
    let mut encoder = DatumEncoder::new();
    let mut decoder = DatumDecoder::new();
    let mut report = Vec::new();
    for codec in Codec::ALL {
        // No dictionary at all.
        let mut cases: Vec<(String, Option<Arc<PreparedDictionary>>)> = vec![("none".into(), None)];
        for (&size, &id) in DICT_SIZES.iter().zip(&DICT_IDS) {
            let bytes = dict_bytes(&rows, size);
            let dict = PreparedDictionary::new(id, &bytes).unwrap();
            cases.push((format!("{size}"), Some(Arc::new(dict))));
        }
        for (label, dict) in &cases {
            let dicts: Dictionaries = dict.iter().cloned().collect();
            let mut tally = Tally::default();
            let mut out = b"prefix that encode_into keeps".to_vec();
            for (index, raw) in tested.iter().enumerate() {
                let context = format!("{file} row {index}, {codec}, dictionary {label}");
                let start = out.len();
                let header = encoder
                    .encode_into(raw, codec, dict.as_deref(), &mut out)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let stored = &out[start..];
                let alone = encoder.encode(raw, codec, dict.as_deref()).unwrap();
                assert_eq!(alone, stored, "{context}: encode and encode_into differ");
                let setting = Setting {
                    codec,
                    dict: dict.as_deref(),
                    dicts: &dicts,
                };
                check_datum(raw, stored, header, &setting, &mut decoder, &context);
                match header.form {
                    Form::RawShort | Form::RawLong => tally.raw += 1,
                    Form::Pglz | Form::Lz4 => tally.plain += 1,
                    Form::Extended { .. } => tally.dict += 1,
                }
                tally.raw_bytes += raw.len();
                tally.stored_bytes += stored.len();
            }
            assert!(out.starts_with(b"prefix that encode_into keeps"));
            report.push(format!(
                "{file:38} {codec:4} dict {label:>5}: raw {:3} plain {:3} dict {:3}  ratio {:.2}",
                tally.raw,
                tally.plain,
                tally.dict,
                tally.raw_bytes as f64 / tally.stored_bytes as f64
            ));
        }
    }
    // Visible with `--nocapture`: how often each form wins.
    println!("{}", report.join("\n"));
}

macro_rules! corpus_tests {
    ($($name:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $name() {
                corpus_round_trip($file);
            }
        )*

        /// Every row file of the corpus has a round-trip test above.
        #[test]
        fn every_row_file_is_tested() {
            let tested = [$($file),*];
            let mut files: Vec<String> = std::fs::read_dir(corpus::rows_dir())
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            assert_eq!(files, tested, "add the new row files to corpus_tests!");
        }
    };
}

corpus_tests! {
    round_trip_csv_airports => "csv_airports.txt",
    round_trip_html_stackexchange_bodies => "html_stackexchange_bodies.jsonl",
    round_trip_json_geonames_cities => "json_geonames_cities.jsonl",
    round_trip_json_gsoc2018_projects => "json_gsoc2018_projects.jsonl",
    round_trip_json_mdn_browser_compat => "json_mdn_browser_compat.jsonl",
    round_trip_json_user_agents => "json_user_agents.jsonl",
    round_trip_text_debian_packages => "text_debian_packages.jsonl",
    round_trip_text_fortunes => "text_fortunes.jsonl",
}

// ---------------------------------------------------------------------------------------------
// Headers, forms and limits

/// Builds a compressed header: `va_header`, `va_tcinfo`, and for method 3 the given extended
/// bytes (codec byte and varint, possibly malformed).
fn compressed(total_len: u32, raw_len: u32, method: u32, extended: &[u8]) -> Vec<u8> {
    let mut out = ((total_len << 2) | 0b10).to_le_bytes().to_vec();
    out.extend_from_slice(&(raw_len | (method << 30)).to_le_bytes());
    out.extend_from_slice(extended);
    out
}

/// `bytes` grown (with `fill`) or cut to `len` bytes.
fn sized(mut bytes: Vec<u8>, len: usize, fill: u8) -> Vec<u8> {
    bytes.resize(len, fill);
    bytes
}

fn dict(id: u32, bytes: &[u8]) -> Arc<PreparedDictionary> {
    Arc::new(PreparedDictionary::new(id, bytes).unwrap())
}

/// The smallest pglz dictionary datum is 13 bytes (10 of header, a control byte, a 2-byte tag
/// of up to 17 bytes), so it beats raw's n + 1 from 13 raw bytes on, which
/// `Strategy::DICTIONARY` starts trying at.
#[test]
fn a_pglz_dictionary_datum_pays_from_13_bytes() {
    let text = b"0123456789abcdefghij";
    let d = dict(3, text);
    let mut encoder = DatumEncoder::new();
    for n in 10..=17 {
        let stored = encoder.encode(&text[..n], Codec::Pglz, Some(&d)).unwrap();
        let expected = if n >= 13 { 13 } else { n + 1 };
        assert_eq!(stored.len(), expected, "{n} bytes");
    }
}

#[test]
fn corrupt_headers_are_rejected_with_exact_errors() {
    let d7: Dictionaries = [dict(7, b"some dictionary bytes, some dictionary bytes")]
        .into_iter()
        .collect();
    let cases: Vec<(&str, Vec<u8>, DatumError)> = vec![
        // No bytes at all.
        ("empty", vec![], DatumError::Empty),
        // 0x01 alone: a TOAST pointer's first byte.
        (
            "toast pointer",
            vec![0x01],
            DatumError::ToastPointer { vartag: None },
        ),
        // 0x01 then vartag 18: PostgreSQL's on-disk TOAST pointer.
        (
            "toast pointer, on-disk",
            sized(vec![0x01, 18], 18, 0),
            DatumError::ToastPointer { vartag: Some(18) },
        ),
        // Low bits 00 announce a 4-byte header, but only 1 byte is there.
        (
            "raw long header cut",
            vec![0x10],
            DatumError::TruncatedHeader {
                form: "raw",
                needed: 4,
                len: 1,
            },
        ),
        // Low bits 10 announce a compressed header; 3 bytes cannot hold va_header.
        (
            "compressed va_header cut",
            vec![0x22, 0, 0],
            DatumError::TruncatedHeader {
                form: "compressed",
                needed: 4,
                len: 3,
            },
        ),
        // va_header complete (total 8), va_tcinfo missing.
        (
            "compressed va_tcinfo cut",
            vec![0x22, 0, 0, 0, 0],
            DatumError::TruncatedHeader {
                form: "compressed",
                needed: 8,
                len: 5,
            },
        ),
        // A zero byte (PostgreSQL's alignment padding): a 4-byte header of total_len 0.
        (
            "raw long total 0",
            vec![0, 0, 0, 0],
            DatumError::TotalLenTooSmall {
                total_len: 0,
                header_len: 4,
            },
        ),
        // Raw long total_len 3 is shorter than its own 4-byte header.
        (
            "raw long total 3",
            vec![3 << 2, 0, 0, 0],
            DatumError::TotalLenTooSmall {
                total_len: 3,
                header_len: 4,
            },
        ),
        // Compressed total_len 7 is shorter than the 8-byte header.
        (
            "compressed total 7",
            compressed(7, 0, 0, &[]),
            DatumError::TotalLenTooSmall {
                total_len: 7,
                header_len: 8,
            },
        ),
        // Compressed total_len 4: va_header alone, a length no compressed datum has (refused
        // as such, before its missing va_tcinfo is looked for).
        (
            "compressed total 4",
            vec![(4 << 2) | 2, 0, 0, 0],
            DatumError::TotalLenTooSmall {
                total_len: 4,
                header_len: 8,
            },
        ),
        // Extended with a 2-byte id (11-byte header) claiming total_len 10.
        (
            "extended total shorter than header",
            compressed(10, 0, 3, &[0, 0x81, 0x01, 0xaa]),
            DatumError::TotalLenTooSmall {
                total_len: 10,
                header_len: 11,
            },
        ),
        // Raw short says 3 bytes (0x07), 2 given.
        (
            "raw short, datum shorter",
            vec![0x07, b'a'],
            DatumError::LengthMismatch {
                total_len: 3,
                len: 2,
            },
        ),
        // Raw short says 3 bytes, 4 given.
        (
            "raw short, datum longer",
            vec![0x07, b'a', b'b', b'c'],
            DatumError::LengthMismatch {
                total_len: 3,
                len: 4,
            },
        ),
        // Raw long says 10 bytes, 6 given.
        (
            "raw long, datum shorter",
            vec![10 << 2, 0, 0, 0, b'a', b'b'],
            DatumError::LengthMismatch {
                total_len: 10,
                len: 6,
            },
        ),
        // Compressed says 20 bytes, 12 given.
        (
            "compressed, datum shorter",
            sized(compressed(20, 30, 0, &[]), 12, 0),
            DatumError::LengthMismatch {
                total_len: 20,
                len: 12,
            },
        ),
        // Method 2 is defined neither by PostgreSQL nor by pgdict.
        (
            "method 2",
            sized(compressed(12, 30, 2, &[]), 12, 0),
            DatumError::UnknownMethod { method: 2 },
        ),
        // Extended header without its codec byte.
        (
            "codec byte missing",
            compressed(8, 0, 3, &[]),
            DatumError::TruncatedHeader {
                form: "extended",
                needed: 9,
                len: 8,
            },
        ),
        // Codec 3 is not defined.
        (
            "codec 3",
            sized(compressed(16, 30, 3, &[3, 7]), 16, 0),
            DatumError::UnknownCodec { code: 3 },
        ),
        // Codec 0xff is not defined.
        (
            "codec 0xff",
            sized(compressed(16, 30, 3, &[0xff, 7]), 16, 0),
            DatumError::UnknownCodec { code: 0xff },
        ),
        // The datum ends right after the codec byte: no dictionary id at all.
        (
            "varint missing",
            compressed(9, 0, 3, &[0]),
            DatumError::DictIdTruncated {
                position: 9,
                len: 9,
            },
        ),
        // The id's first byte says another follows, and the datum ends.
        (
            "varint cut after 1 byte",
            compressed(10, 0, 3, &[0, 0x87]),
            DatumError::DictIdTruncated {
                position: 10,
                len: 10,
            },
        ),
        // Six varint bytes: the 5th still has the continuation bit.
        (
            "varint of 6 bytes",
            sized(
                compressed(20, 30, 3, &[0, 0x81, 0x80, 0x80, 0x80, 0x80, 0x01]),
                20,
                0,
            ),
            DatumError::DictIdTooLong {
                position: 13,
                byte: 0x80,
            },
        ),
        // 5 bytes worth 2^32 + ...: the 5th byte has bit 4 set, beyond u32.
        (
            "varint over u32::MAX",
            sized(
                compressed(20, 30, 3, &[0, 0xff, 0xff, 0xff, 0xff, 0x1f]),
                20,
                0,
            ),
            DatumError::DictIdOverflow {
                position: 13,
                byte: 0x1f,
            },
        ),
        // 5th byte 0x70: bits 32..=34.
        (
            "varint with high bits in the 5th byte",
            sized(
                compressed(20, 30, 3, &[0, 0x81, 0x80, 0x80, 0x80, 0x70]),
                20,
                0,
            ),
            DatumError::DictIdOverflow {
                position: 13,
                byte: 0x70,
            },
        ),
        // Id 1 written in two bytes (0x81 0x00): a trailing zero group.
        (
            "non-minimal varint",
            sized(compressed(20, 30, 3, &[0, 0x81, 0x00]), 20, 0),
            DatumError::DictIdNotMinimal { position: 10 },
        ),
        // Id 0 written in two bytes (0x80 0x00): non-minimal is reported first.
        (
            "non-minimal zero",
            sized(compressed(20, 30, 3, &[0, 0x80, 0x00]), 20, 0),
            DatumError::DictIdNotMinimal { position: 10 },
        ),
        // A 5-byte id with a zero last byte is non-minimal too.
        (
            "non-minimal 5-byte varint",
            sized(
                compressed(20, 30, 3, &[1, 0xff, 0xff, 0xff, 0xff, 0x00]),
                20,
                0,
            ),
            DatumError::DictIdNotMinimal { position: 13 },
        ),
        // Dictionary id 0.
        (
            "dict id 0",
            sized(compressed(20, 30, 3, &[2, 0x00]), 20, 0),
            DatumError::DictIdZero { position: 9 },
        ),
    ];
    for (what, bytes, expected) in cases {
        assert_eq!(datum::parse_header(&bytes), Err(expected.clone()), "{what}");
        assert_eq!(datum::check_header(&bytes), Err(expected.clone()), "{what}");
        assert_eq!(datum::decode(&bytes, &d7), Err(expected.clone()), "{what}");
        assert_eq!(
            datum::decode_prefix(&bytes, 5, &d7),
            Err(expected.clone()),
            "{what}"
        );
        let message = expected.to_string();
        assert!(message.starts_with("datum: "), "{what}: {message}");
    }
}

/// A pglz payload of ten literals, "abcdefghij": two control bytes and the literals.
const LITERALS: [u8; 12] = [
    0x00, b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'h', 0x00, b'i', b'j',
];

#[test]
fn corrupt_payloads_are_rejected_with_exact_errors() {
    let mut encoder = DatumEncoder::new();
    let value = b"abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc".repeat(3);
    let pglz_datum = encoder.encode(&value, Codec::Pglz, None).unwrap();
    assert_eq!(datum::parse_header(&pglz_datum).unwrap().form, Form::Pglz);
    let pglz_payload = pglz_datum[8..].to_vec();
    let lz4_datum = encoder.encode(&value, Codec::Lz4, None).unwrap();
    assert_eq!(datum::parse_header(&lz4_datum).unwrap().form, Form::Lz4);
    let lz4_payload = lz4_datum[8..].to_vec();
    let max = (1u32 << 30) - 1;

    let with_payload = |raw_len: u32, method: u32, ext: &[u8], payload: &[u8]| {
        let total = 8 + ext.len() + payload.len();
        let mut datum = compressed(total as u32, raw_len, method, ext);
        datum.extend_from_slice(payload);
        datum
    };
    let d9: Dictionaries = [dict(9, b"0123456789")].into_iter().collect();

    let cases: Vec<(&str, Vec<u8>, DatumError)> = vec![
        // raw_len one more than the pglz payload produces.
        (
            "pglz, raw_len + 1",
            with_payload(value.len() as u32 + 1, 0, &[], &pglz_payload),
            DatumError::Pglz {
                payload_pos: 8,
                error: pglz::Error::OutputShort {
                    produced: value.len(),
                    raw_len: value.len() + 1,
                    payload_len: pglz_payload.len(),
                },
            },
        ),
        // Ten literals, raw_len 9: the output is full before the payload ends.
        (
            "pglz, raw_len - 1",
            with_payload(9, 0, &[], &LITERALS),
            DatumError::Pglz {
                payload_pos: 8,
                error: pglz::Error::TrailingInput {
                    consumed: 11,
                    payload_len: 12,
                    raw_len: 9,
                },
            },
        ),
        // The largest raw_len a header holds, with a 4-byte payload: refused before allocating.
        (
            "pglz, raw_len at the limit",
            with_payload(max, 0, &[], &[0, b'a', b'b', b'c']),
            DatumError::Pglz {
                payload_pos: 8,
                error: pglz::Error::RawLenImpossible {
                    raw_len: max as usize,
                    payload_len: 4,
                    max_possible: 4 * 88,
                },
            },
        ),
        // A match tag (offset 5) at output position 0: before the start of the history.
        (
            "pglz, offset before the output",
            with_payload(3, 0, &[], &[0x01, 0x00, 0x05]),
            DatumError::Pglz {
                payload_pos: 8,
                error: pglz::Error::OffsetBeforeStart {
                    src_pos: 1,
                    dst_pos: 0,
                    offset: 5,
                    history: 0,
                },
            },
        ),
        // The same tag with dictionary 9 (10 bytes of history) in front, reaching 11 back.
        (
            "pglz with dictionary, offset before the dictionary",
            with_payload(3, 3, &[0, 9], &[0x01, 0x00, 0x0b]),
            DatumError::Pglz {
                payload_pos: 10,
                error: pglz::Error::OffsetBeforeStart {
                    src_pos: 1,
                    dst_pos: 0,
                    offset: 11,
                    history: 10,
                },
            },
        ),
        // lz4 with raw_len + 1: the block is complete one byte early.
        (
            "lz4, raw_len + 1",
            with_payload(value.len() as u32 + 1, 1, &[], &lz4_payload),
            DatumError::Lz4 {
                payload_pos: 8,
                error: lz4::Error::LengthMismatch {
                    expected: value.len() + 1,
                    produced: value.len(),
                },
            },
        ),
        // lz4 claiming 1 GiB - 1 from 4 payload bytes (at most 4 × 256).
        (
            "lz4, raw_len at the limit",
            with_payload(max, 1, &[], &[0x40, b'a', b'b', b'c']),
            DatumError::RawLenImpossible {
                codec: Codec::Lz4,
                raw_len: max as usize,
                payload_len: 4,
                max_possible: 1024,
            },
        ),
        // zstd with dictionary 9 claiming 1 GiB - 1 from 6 bytes (at most 2 blocks of 128 KiB).
        (
            "zstd, raw_len at the limit",
            with_payload(max, 3, &[2, 9], &[0; 6]),
            DatumError::RawLenImpossible {
                codec: Codec::Zstd,
                raw_len: max as usize,
                payload_len: 6,
                max_possible: 2 * 128 * 1024,
            },
        ),
        // zstd with an empty payload.
        (
            "zstd, empty payload",
            with_payload(0, 3, &[2, 9], &[]),
            DatumError::Zstd {
                payload_pos: 10,
                error: zstd::Error::EmptyPayload,
            },
        ),
        // An extended datum whose dictionary the store does not have.
        (
            "missing dictionary",
            with_payload(value.len() as u32, 3, &[0, 42], &pglz_payload),
            DatumError::MissingDictionary {
                id: 42,
                store: d9.describe(),
            },
        ),
    ];
    for (what, bytes, expected) in cases {
        assert_eq!(datum::decode(&bytes, &d9), Err(expected.clone()), "{what}");
        assert!(expected.to_string().starts_with("datum: "), "{what}");
    }

    // lz4 with raw_len - 1: liblz4 runs out of output room (its code is liblz4's business).
    let short = with_payload(value.len() as u32 - 1, 1, &[], &lz4_payload);
    assert!(
        matches!(
            datum::decode(&short, &d9),
            Err(DatumError::Lz4 { payload_pos: 8, error: lz4::Error::Corrupt { code, .. } })
                if code < 0
        ),
        "{:?}",
        datum::decode(&short, &d9)
    );

    // A pglz payload that ends early: the whole decode fails, and so does a prefix it cannot
    // fill (pglz itself would quietly return fewer bytes, as PostgreSQL's does).
    let early = with_payload(100, 0, &[], &LITERALS);
    assert_eq!(
        datum::decode(&early, &()),
        Err(DatumError::Pglz {
            payload_pos: 8,
            error: pglz::Error::OutputShort {
                produced: 10,
                raw_len: 100,
                payload_len: 12,
            },
        })
    );
    assert_eq!(
        datum::decode_prefix(&early, 50, &()),
        Err(DatumError::DecodedLength {
            payload_pos: 8,
            expected: 50,
            produced: 10,
        })
    );
    assert_eq!(
        datum::decode_prefix(&early, 10, &()).unwrap(),
        b"abcdefghij"
    );

    // A prefix of the whole value is checked as the whole decode: an lz4 payload that goes on
    // past raw_len, or has bytes after its block, was returned cut by the partial decoder.
    let mut trailing = lz4_payload.clone();
    trailing.extend_from_slice(b"\0\0");
    for (what, bytes) in [
        ("lz4, raw_len - 1", short.clone()),
        (
            "lz4, bytes after the block",
            with_payload(value.len() as u32, 1, &[], &trailing),
        ),
    ] {
        let whole = datum::decode(&bytes, &d9).unwrap_err();
        let raw_len = datum::parse_header(&bytes).unwrap().raw_len;
        for k in [raw_len, raw_len + 1, usize::MAX] {
            assert_eq!(
                datum::decode_prefix(&bytes, k, &d9),
                Err(whole.clone()),
                "{what}, {k}"
            );
        }
    }
    // A raw_len that the payload cannot produce is refused for a prefix too, as lz4's is (a
    // 4-byte pglz payload claiming 2^30 - 1 bytes).
    let impossible = with_payload(max, 0, &[], b"\0abc");
    let expected = DatumError::Pglz {
        payload_pos: 8,
        error: pglz::Error::RawLenImpossible {
            raw_len: max as usize,
            payload_len: 4,
            max_possible: 4 * 88,
        },
    };
    assert_eq!(datum::decode(&impossible, &()), Err(expected.clone()));
    assert_eq!(datum::decode_prefix(&impossible, 3, &()), Err(expected));
}

#[test]
fn missing_dictionary_message_names_the_id_the_store_and_the_fix() {
    let mut encoder = DatumEncoder::new();
    let d = dict(
        31_337,
        &b"{\"name\": \"alpha\", \"kind\": \"beta\"}".repeat(8),
    );
    let raw = b"{\"name\": \"alpha\", \"kind\": \"gamma\"}";
    let stored = encoder.encode(raw, Codec::Pglz, Some(&d)).unwrap();
    assert_eq!(
        datum::parse_header(&stored).unwrap().form,
        Form::Extended {
            codec: Codec::Pglz,
            dict_id: 31_337
        }
    );
    let store = Dictionaries::described("/var/lib/pgdict/dicts");
    let error = datum::decode(&stored, &store).unwrap_err();
    assert_eq!(
        error,
        DatumError::MissingDictionary {
            id: 31_337,
            store: "/var/lib/pgdict/dicts".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "datum: dictionary 31337 is not in /var/lib/pgdict/dicts"
    );
    for none in [&NoDictionaries as &dyn DictionaryLookup, &()] {
        assert!(matches!(
            datum::decode_prefix(&stored, 3, none),
            Err(DatumError::MissingDictionary { id: 31_337, .. })
        ));
    }
    // A plain HashMap works as a lookup too.
    let map: HashMap<u32, Arc<PreparedDictionary>> = [(31_337, d.clone())].into_iter().collect();
    assert_eq!(datum::decode(&stored, &map).unwrap(), raw);
}

#[test]
fn a_lookup_that_answers_with_another_id_is_caught() {
    struct Liar(Arc<PreparedDictionary>);
    impl DictionaryLookup for Liar {
        fn dictionary(&self, _id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
            Ok(Some(self.0.clone()))
        }
        fn describe(&self) -> String {
            "the liar".into()
        }
    }
    let a = dict(5, b"{\"city\": \"Lisbon\", \"country\": \"Portugal\"}");
    // pglz too: the decoder takes its dictionary datums by a path of their own when the
    // lookup lends the dictionary.
    for codec in [Codec::Lz4, Codec::Pglz] {
        let stored = DatumEncoder::new()
            .encode(
                b"{\"city\": \"Porto\", \"country\": \"Portugal\"}",
                codec,
                Some(&a),
            )
            .unwrap();
        assert_eq!(
            datum::parse_header(&stored).unwrap().form.dict_id(),
            Some(5)
        );
        assert_eq!(
            datum::decode(&stored, &Liar(dict(6, b"x"))),
            Err(DatumError::WrongDictionary {
                wanted: 5,
                got: 6,
                store: "the liar".into()
            })
        );
        // A map lends its dictionaries (`DictionaryLookup::borrowed`): the same check.
        let map: HashMap<u32, Arc<PreparedDictionary>> = [(5, dict(6, b"x"))].into_iter().collect();
        assert_eq!(
            datum::decode(&stored, &map),
            Err(DatumError::WrongDictionary {
                wanted: 5,
                got: 6,
                store: "an in-memory map of 1 dictionaries".into()
            })
        );
    }
}

/// zstd reads bytes that start with its dictionary magic number as a zstd dictionary and
/// refuses them if they are not one; any bytes make a pglz or lz4 dictionary, so one prepared
/// for those codecs has no zstd side to refuse them (it had: such content was refused for
/// every codec, in zstd's words).
#[test]
fn a_dictionary_for_pglz_or_lz4_may_start_with_zstd_magic() {
    let mut content = 0xEC30_A437u32.to_le_bytes().to_vec(); // zstd's dictionary magic number
    content.extend_from_slice(b"{\"city\": \"Lisbon\", \"country\": \"Portugal\"}");
    let raw = b"{\"city\": \"Porto\", \"country\": \"Portugal\"}";
    let level = zstd::DEFAULT_LEVEL;
    assert!(matches!(
        PreparedDictionary::new(4, &content),
        Err(DatumError::DictionaryPrepare { id: 4, .. })
    ));
    let for_zstd = CodecSet::of(&[Codec::Lz4, Codec::Zstd]);
    assert!(PreparedDictionary::for_codecs(4, &content, for_zstd, level).is_err());
    let pglz_lz4 = CodecSet::of(&[Codec::Pglz, Codec::Lz4]);
    let dict = Arc::new(PreparedDictionary::for_codecs(4, &content, pglz_lz4, level).unwrap());
    assert!(dict.zstd().is_none());
    assert_eq!(dict.codecs(), Some(pglz_lz4));
    let mut encoder = DatumEncoder::new();
    for codec in [Codec::Pglz, Codec::Lz4] {
        let stored = encoder.encode(raw, codec, Some(&dict)).unwrap();
        assert_eq!(
            datum::parse_header(&stored).unwrap().form,
            Form::Extended { codec, dict_id: 4 }
        );
        let map: HashMap<u32, Arc<PreparedDictionary>> = [(4, dict.clone())].into_iter().collect();
        assert_eq!(datum::decode(&stored, &map).unwrap(), raw);
    }
    assert_eq!(
        encoder.encode(raw, Codec::Zstd, Some(&dict)),
        Err(DatumError::DictionaryNotForCodec {
            id: 4,
            codec: Codec::Zstd,
            built_for: pglz_lz4,
        })
    );
    // Widening it to zstd does not give it a zstd side it lacks.
    let widened = PreparedDictionary::for_codecs(4, &content, pglz_lz4, level)
        .unwrap()
        .built_for(CodecSet::ALL);
    assert_eq!(widened.codecs(), Some(pglz_lz4));
}

#[test]
fn a_dictionary_built_for_other_codecs_is_not_the_one_a_datum_names() {
    let content = b"{\"city\": \"Lisbon\", \"country\": \"Portugal\"}";
    let raw = b"{\"city\": \"Porto\", \"country\": \"Portugal\"}";
    let any_codec = dict(9, content);
    let pglz_only = Arc::new(
        PreparedDictionary::new(9, content)
            .unwrap()
            .built_for(CodecSet::only(Codec::Pglz)),
    );
    assert_eq!(pglz_only.codecs(), Some(CodecSet::only(Codec::Pglz)));
    let mut encoder = DatumEncoder::new();
    // Encoding with a codec the dictionary was not built for is refused.
    assert_eq!(
        encoder.encode(raw, Codec::Lz4, Some(&pglz_only)),
        Err(DatumError::DictionaryNotForCodec {
            id: 9,
            codec: Codec::Lz4,
            built_for: CodecSet::only(Codec::Pglz),
        })
    );
    // Such a datum (written with another dictionary 9, here one for any codec) is refused by
    // the decoder, whole or a prefix, lent by a map or handed out: it would decode to wrong
    // bytes.
    let map: HashMap<u32, Arc<PreparedDictionary>> = [(9, pglz_only.clone())].into_iter().collect();
    let mut in_memory = Dictionaries::new();
    in_memory.insert(pglz_only.clone());
    for codec in [Codec::Lz4, Codec::Zstd] {
        let stored = encoder.encode(raw, codec, Some(&any_codec)).unwrap();
        assert_eq!(
            datum::parse_header(&stored).unwrap().form,
            Form::Extended { codec, dict_id: 9 }
        );
        let lookups: [&dyn DictionaryLookup; 2] = [&map, &in_memory];
        for lookup in lookups {
            let foreign = DatumError::ForeignDictionary {
                id: 9,
                codec,
                built_for: CodecSet::only(Codec::Pglz),
                store: lookup.describe(),
            };
            assert_eq!(datum::decode(&stored, lookup), Err(foreign.clone()));
            assert_eq!(datum::decode_prefix(&stored, 4, lookup), Err(foreign));
        }
    }
    // A pglz datum, by the decoder's fast path for them, against a dictionary for lz4 only.
    let stored = encoder.encode(raw, Codec::Pglz, Some(&any_codec)).unwrap();
    let lz4_only = PreparedDictionary::new(9, content)
        .unwrap()
        .built_for(CodecSet::only(Codec::Lz4));
    let lz4_map: HashMap<u32, Arc<PreparedDictionary>> =
        [(9, Arc::new(lz4_only))].into_iter().collect();
    assert!(matches!(
        datum::decode(&stored, &lz4_map),
        Err(DatumError::ForeignDictionary {
            codec: Codec::Pglz,
            ..
        })
    ));
    // The codec it was built for works, by the fast path for pglz and the general one.
    let stored = encoder.encode(raw, Codec::Pglz, Some(&pglz_only)).unwrap();
    assert_eq!(datum::decode(&stored, &map).unwrap(), raw);
    assert_eq!(datum::decode(&stored, &in_memory).unwrap(), raw);
    assert_eq!(datum::decode_prefix(&stored, 4, &map).unwrap(), &raw[..4]);
}

#[test]
fn toast_pointer_message_says_what_it_is() {
    let message = datum::parse_header(&[0x01, 18, 0, 0])
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "datum: byte 0 is 0x01, a TOAST pointer (vartag 18, on-disk), not an inline datum; \
         fetch the value it points to first"
    );
}

#[test]
fn accepted_edge_headers() {
    // 0x03: a raw datum of 1 byte, the empty value.
    assert_eq!(
        datum::parse_header(&[0x03]),
        Ok(Header {
            form: Form::RawShort,
            total_len: 1,
            raw_len: 0,
            header_len: 1
        })
    );
    assert_eq!(datum::decode(&[0x03], &()).unwrap(), b"");
    // 0xff: the largest short datum, 127 bytes.
    let short = sized(vec![0xff], 127, b'z');
    assert_eq!(datum::decode(&short, &()).unwrap(), vec![b'z'; 126]);
    // A 4-byte header on a small value (PostgreSQL's in-memory form) is read too.
    let long = [5 << 2, 0, 0, 0, b'x'];
    assert_eq!(datum::parse_header(&long).unwrap().form, Form::RawLong);
    assert_eq!(datum::decode(&long, &()).unwrap(), b"x");
    assert_eq!(datum::decode_prefix(&long, 0, &()).unwrap(), b"");
    // The empty raw long datum.
    assert_eq!(datum::decode(&[4 << 2, 0, 0, 0], &()).unwrap(), b"");
    // The largest dictionary id, 5 bytes.
    let max_id = sized(
        compressed(20, 0, 3, &[1, 0xff, 0xff, 0xff, 0xff, 0x0f]),
        20,
        0,
    );
    assert_eq!(
        datum::parse_header(&max_id).unwrap(),
        Header {
            form: Form::Extended {
                codec: Codec::Lz4,
                dict_id: u32::MAX
            },
            total_len: 20,
            raw_len: 0,
            header_len: 14
        }
    );
    // The longest header there is: what a reader of datums back to back reads ahead.
    assert_eq!(datum::MAX_HEADER_LEN, 14);
    assert_eq!(
        datum::read_header(&max_id[..datum::MAX_HEADER_LEN])
            .unwrap()
            .header_len,
        datum::MAX_HEADER_LEN
    );
    // read_header reads a header from the front of a longer buffer (datums back to back).
    let mut two = vec![0x07, b'a', b'b'];
    two.extend_from_slice(&[0x05, b'c']);
    assert_eq!(datum::read_header(&two).unwrap().total_len, 3);
    assert_eq!(
        datum::parse_header(&two),
        Err(DatumError::LengthMismatch {
            total_len: 3,
            len: 5
        })
    );
}

#[test]
fn dictionary_ids_use_every_varint_length() {
    let mut encoder = DatumEncoder::new();
    let bytes = b"The quick brown fox jumps over the lazy dog. ".repeat(20);
    let raw = b"The quick brown fox jumps over the lazy cat. The quick brown fox.";
    for (id, id_len) in [
        (1, 1),
        (127, 1),
        (128, 2),
        (16_383, 2),
        (16_384, 3),
        ((1 << 21) - 1, 3),
        (1 << 21, 4),
        ((1 << 28) - 1, 4),
        (1 << 28, 5),
        (u32::MAX, 5),
    ] {
        let d = dict(id, &bytes);
        for codec in Codec::ALL {
            let stored = encoder.encode(raw, codec, Some(&d)).unwrap();
            let header = datum::parse_header(&stored).unwrap();
            assert_eq!(
                header.form,
                Form::Extended { codec, dict_id: id },
                "id {id}"
            );
            assert_eq!(header.header_len, 9 + id_len, "id {id}");
            let dicts: Dictionaries = [d.clone()].into_iter().collect();
            assert_eq!(
                datum::decode(&stored, &dicts).unwrap(),
                raw,
                "id {id} {codec}"
            );
        }
    }
}

#[test]
fn raw_header_switches_at_127_bytes() {
    let mut encoder = DatumEncoder::new();
    for len in [0, 1, 125, 126, 127, 128, 5000] {
        let raw = noise(len, len as u64 + 1);
        for codec in Codec::ALL {
            let stored = encoder.encode(&raw, codec, None).unwrap();
            let header = datum::parse_header(&stored).unwrap();
            let (form, header_len) = if len <= 126 {
                (Form::RawShort, 1)
            } else {
                (Form::RawLong, 4)
            };
            assert_eq!(header.form, form, "{len} bytes of noise, {codec}");
            assert_eq!(stored.len(), len + header_len);
        }
    }
}

#[test]
fn ties_go_to_the_simpler_form() {
    // With an empty dictionary, the dictionary form can at best equal the plain one (its
    // header is 2 bytes longer): plain wins.
    let mut encoder = DatumEncoder::new();
    let d = dict(1, b"");
    let raw = b"abcdefgh".repeat(40);
    for codec in [Codec::Pglz, Codec::Lz4] {
        let header = encoder
            .encode_into(&raw, codec, Some(&d), &mut Vec::new())
            .unwrap();
        assert!(header.form.is_postgres_compatible(), "{codec}: {header}");
        assert!(!header.form.is_raw(), "{codec}: {header}");
    }
}

/// Ties between forms of one length, found among many small values: the simpler form wins
/// (raw, then plain, then dictionary), so that PostgreSQL reads every datum it could.
/// `smallest_form` says which; the corpus round trips meet few ties.
#[test]
fn ties_between_forms_of_one_length_go_to_the_simpler() {
    let d = dict(
        1,
        &b"the quick brown fox jumps over the lazy dog; ".repeat(20),
    );
    let mut encoder = DatumEncoder::new();
    let mut ties = HashMap::<(FormKind, FormKind), usize>::new();
    let mut state = 0x1234_5678_u64;
    for n in 0..20_000usize {
        // Letters, and pieces of the dictionary's words, xorshift-chosen.
        let len = 8 + n % 150;
        let mut raw = Vec::with_capacity(len + 16);
        while raw.len() < len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state.is_multiple_of(3) {
                raw.extend_from_slice(&b"quick brown fox "[..(state >> 8) as usize % 16 + 1]);
            } else {
                raw.push(b'a' + (state >> 20) as u8 % 26);
            }
        }
        raw.truncate(len);
        let header = encoder
            .encode_into(&raw, Codec::Lz4, Some(&d), &mut Vec::new())
            .unwrap();
        let (kind, len) = smallest_form(&raw, Codec::Lz4, Some(&d));
        assert_eq!(
            (kind_of(header.form), header.total_len),
            (kind, len),
            "{raw:?}"
        );
        // The forms the winner tied with.
        for (other, other_len) in forms(&raw, Codec::Lz4, Some(&d)) {
            assert!(len <= other_len);
            if other != kind && other_len == len {
                *ties.entry((kind, other)).or_default() += 1;
            }
        }
    }
    // Both kinds of tie were met (else the test shows nothing).
    assert!(
        ties.contains_key(&(FormKind::Raw, FormKind::Plain))
            || ties.contains_key(&(FormKind::Raw, FormKind::Dictionary)),
        "{ties:?}"
    );
    assert!(
        ties.contains_key(&(FormKind::Plain, FormKind::Dictionary)),
        "{ties:?}"
    );
}

/// Plain pglz is tried from PostgreSQL's 32 bytes on, 32 included: that value is stored as
/// PostgreSQL would store it.
#[test]
fn plain_pglz_is_tried_from_32_bytes() {
    let mut encoder = DatumEncoder::new();
    for (len, form) in [(31, Form::RawShort), (32, Form::Pglz)] {
        let header = encoder
            .encode_into(&vec![b'a'; len], Codec::Pglz, None, &mut Vec::new())
            .unwrap();
        assert_eq!(header.form, form, "{len} bytes: {header}");
    }
}

/// `check_header` (what `pgdict inspect` says without decoding) refuses a pglz raw length the
/// payload cannot expand to, as decoding would (lz4's and zstd's bounds are the decoder's own
/// checks, which the corrupt-payload tables hold).
#[test]
fn check_header_bounds_the_raw_length_by_the_payload() {
    let mut encoder = DatumEncoder::new();
    for codec in [Codec::Pglz, Codec::Lz4] {
        let stored = encoder.encode(&b"abc".repeat(40), codec, None).unwrap();
        assert!(datum::check_header(&stored).is_ok(), "{codec}");
    }
    // A pglz payload of 2 bytes (one literal) claiming a million.
    let pglz = compressed(10, 1_000_000, 0, &[0x00, b'a']);
    assert!(datum::parse_header(&pglz).is_ok());
    assert!(
        matches!(
            datum::check_header(&pglz),
            Err(DatumError::Pglz { payload_pos: 8, .. })
        ),
        "{:?}",
        datum::check_header(&pglz)
    );
    assert!(datum::decode(&pglz, &NoDictionaries).is_err());
}

#[test]
fn prepared_dictionary_errors() {
    assert_eq!(
        PreparedDictionary::new(0, b"abc").unwrap_err(),
        DatumError::DictionaryIdZero
    );
    // zstd's dictionary magic number followed by garbage: zstd refuses it.
    let mut bad = vec![0x37, 0xa4, 0x30, 0xec];
    bad.extend_from_slice(&[0xff; 60]);
    assert!(matches!(
        PreparedDictionary::new(3, &bad),
        Err(DatumError::DictionaryPrepare { id: 3, .. })
    ));
}

#[test]
fn input_over_the_limit_is_refused() {
    // Zeroed allocations are mapped lazily: this costs no real memory.
    let huge = vec![0u8; MAX_INPUT_LEN + 1];
    let mut out = b"kept".to_vec();
    assert_eq!(
        DatumEncoder::new().encode_into(&huge, Codec::Pglz, None, &mut out),
        Err(DatumError::InputTooLarge {
            len: MAX_INPUT_LEN + 1,
            max: MAX_INPUT_LEN
        })
    );
    assert_eq!(out, b"kept");
}

#[test]
fn header_display_for_inspect() {
    let header = Header {
        form: Form::Extended {
            codec: Codec::Zstd,
            dict_id: 12,
        },
        total_len: 40,
        raw_len: 300,
        header_len: 10,
    };
    assert_eq!(
        header.to_string(),
        "zstd with dictionary 12 (pgdict, method 3): 40 bytes stored (10-byte header, \
         30-byte payload), 300 bytes raw"
    );
}

// ---------------------------------------------------------------------------------------------
// Wrong dictionaries

/// Decoding with another dictionary under the same id gives an error or exactly raw_len bytes.
fn assert_wrong_dict_is_safe(stored: &[u8], raw_len: usize, wrong: &Dictionaries) {
    match datum::decode(stored, wrong) {
        Ok(decoded) => assert_eq!(decoded.len(), raw_len),
        Err(e) => assert!(e.to_string().starts_with("datum: "), "{e}"),
    }
    for k in prefix_lengths(raw_len) {
        match datum::decode_prefix(stored, k, wrong) {
            Ok(decoded) => assert_eq!(decoded.len(), k.min(raw_len)),
            Err(e) => assert!(e.to_string().starts_with("datum: "), "{e}"),
        }
    }
}

#[test]
fn wrong_dictionary_gives_an_error_or_raw_len_bytes() {
    let rows = row_set("json_user_agents.jsonl");
    let other = row_set("text_fortunes.jsonl");
    let mut encoder = DatumEncoder::new();
    // Per codec and replacement: [errors, wrong bytes, right bytes].
    let mut outcomes = [[[0usize; 3]; 4]; 3];
    for size in [100, 4095, 65536] {
        let a = dict(5, &dict_bytes(&rows, size));
        let replacements = [
            dict_bytes(&other, size),
            dict_bytes(&other, 10),
            Vec::new(),
            vec![0; size],
        ];
        for codec in Codec::ALL {
            for raw in &rows[..60] {
                let stored = encoder.encode(raw, codec, Some(&a)).unwrap();
                if datum::parse_header(&stored)
                    .unwrap()
                    .form
                    .dict_id()
                    .is_none()
                {
                    continue;
                }
                for (r, bytes) in replacements.iter().enumerate() {
                    let wrong: Dictionaries = [dict(5, bytes)].into_iter().collect();
                    assert_wrong_dict_is_safe(&stored, raw.len(), &wrong);
                    let outcome = match datum::decode(&stored, &wrong) {
                        Err(_) => 0,
                        Ok(d) if d != *raw => 1,
                        Ok(_) => 2,
                    };
                    outcomes[usize::from(codec.code())][r][outcome] += 1;
                }
            }
        }
    }
    for codec in Codec::ALL {
        for (r, what) in ["other rows", "10 bytes", "empty", "zeros"]
            .iter()
            .enumerate()
        {
            let [errors, wrong, right] = outcomes[usize::from(codec.code())][r];
            println!(
                "wrong dictionary, {codec:4} {what:10}: {errors} errors, {wrong} wrong bytes, \
                 {right} right bytes"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Properties

/// Small deterministic pseudo-random bytes (xorshift), for incompressible values.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

/// Values worth compressing: random bytes from a small alphabet, runs, and pieces of `dict`.
fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400),
        proptest::collection::vec(prop::sample::select(b"ab {}\":,".to_vec()), 0..600),
        (0..2000usize, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
        (
            0..PROP_DICT.len(),
            0..300usize,
            proptest::collection::vec(any::<u8>(), 0..20)
        )
            .prop_map(|(start, len, extra)| {
                let mut v = PROP_DICT[start..(start + len).min(PROP_DICT.len())].to_vec();
                v.extend_from_slice(&extra);
                v.extend_from_slice(&PROP_DICT[..len.min(PROP_DICT.len())]);
                v
            }),
    ]
}

const PROP_DICT: &[u8] =
    b"{\"id\": 17, \"name\": \"Lisbon\", \"country\": \"PT\", \"population\": \
    545923, \"timezone\": \"Europe/Lisbon\", \"tags\": [\"capital\", \"port\", \"coastal\"]} \
    GET /index.html HTTP/1.1 User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36";

fn prop_dicts() -> (Arc<PreparedDictionary>, Dictionaries) {
    let d = dict(77, PROP_DICT);
    let set = [d.clone()].into_iter().collect();
    (d, set)
}

/// A header of a random form followed by random payload bytes: reaches the decoders.
fn headed_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        0u32..4,
        0u8..4,
        prop_oneof![Just(77u32), 1u32..200],
        prop_oneof![0u32..3000, Just((1 << 30) - 1)],
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<bool>(),
    )
        .prop_map(|(method, codec, id, raw_len, payload, exact)| {
            let mut ext = Vec::new();
            if method == 3 {
                ext.push(codec);
                let mut id = id;
                while id >= 0x80 {
                    ext.push(id as u8 | 0x80);
                    id >>= 7;
                }
                ext.push(id as u8);
            }
            let total = 8 + ext.len() + payload.len();
            let total = if exact { total } else { total ^ 1 };
            let mut bytes = compressed(total as u32, raw_len, method, &ext);
            bytes.extend_from_slice(&payload);
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), k in 0usize..100) {
        let (_, dicts) = prop_dicts();
        let _ = datum::read_header(&bytes);
        if let Ok(header) = datum::parse_header(&bytes) {
            prop_assert_eq!(header.total_len, bytes.len());
            prop_assert!(header.header_len <= header.total_len);
        }
        if let Ok(decoded) = datum::decode(&bytes, &dicts) {
            prop_assert_eq!(decoded.len(), datum::parse_header(&bytes).unwrap().raw_len);
        }
        let _ = datum::decode_prefix(&bytes, k, &dicts);
    }

    #[test]
    fn headed_bytes_never_panic(bytes in headed_bytes(), k in 0usize..5000) {
        let (_, dicts) = prop_dicts();
        if let Ok(decoded) = datum::decode(&bytes, &dicts) {
            prop_assert_eq!(decoded.len(), datum::parse_header(&bytes).unwrap().raw_len);
        }
        if let Ok(prefix) = datum::decode_prefix(&bytes, k, &dicts) {
            prop_assert_eq!(prefix.len(), k.min(datum::parse_header(&bytes).unwrap().raw_len));
        }
    }

    #[test]
    fn encode_decode_round_trip(raw in value_strategy(), with_dict in any::<bool>(), k in 0usize..700) {
        let (d, dicts) = prop_dicts();
        let dict = with_dict.then_some(&*d);
        let mut encoder = DatumEncoder::new();
        let mut decoder = DatumDecoder::new();
        for codec in Codec::ALL {
            let stored = encoder.encode(&raw, codec, dict).unwrap();
            let header = datum::parse_header(&stored).unwrap();
            prop_assert!(stored.len() <= raw_form_len(raw.len()));
            prop_assert_eq!(
                (kind_of(header.form), stored.len()),
                smallest_form(&raw, codec, dict)
            );
            prop_assert_eq!(header.raw_len, raw.len());
            if dict.is_none() {
                prop_assert!(header.form.dict_id().is_none());
            }
            prop_assert_eq!(decoder.decode(&stored, &dicts).unwrap(), raw.clone());
            prop_assert_eq!(
                decoder.decode_prefix(&stored, k, &dicts).unwrap(),
                raw[..k.min(raw.len())].to_vec()
            );
        }
    }

    #[test]
    fn corrupted_datums_never_panic(
        raw in value_strategy(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        k in 0usize..700,
    ) {
        let (d, dicts) = prop_dicts();
        let mut encoder = DatumEncoder::new();
        for codec in Codec::ALL {
            let mut stored = encoder.encode(&raw, codec, Some(&d)).unwrap();
            for (at, xor) in &flips {
                let i = at.index(stored.len());
                stored[i] ^= xor;
            }
            if let Ok(decoded) = datum::decode(&stored, &dicts) {
                prop_assert_eq!(decoded.len(), datum::parse_header(&stored).unwrap().raw_len);
            }
            if let Ok(prefix) = datum::decode_prefix(&stored, k, &dicts) {
                let raw_len = datum::parse_header(&stored).unwrap().raw_len;
                prop_assert_eq!(prefix.len(), k.min(raw_len));
            }
        }
    }

    #[test]
    fn random_wrong_dictionary_never_panics(
        raw in value_strategy(),
        wrong in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let (d, _) = prop_dicts();
        let wrong: Dictionaries = [dict(77, &wrong)].into_iter().collect();
        let mut encoder = DatumEncoder::new();
        for codec in Codec::ALL {
            let stored = encoder.encode(&raw, codec, Some(&d)).unwrap();
            assert_wrong_dict_is_safe(&stored, raw.len(), &wrong);
        }
    }
}
