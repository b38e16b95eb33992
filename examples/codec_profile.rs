//! One codec job, repeated, for `valgrind --tool=callgrind` instruction counts.
//!
//! ```text
//! cargo build --release --example codec_profile
//! valgrind --tool=callgrind target/release/examples/codec_profile MODE ROWFILE [REPEAT]
//! ```
//!
//! The rows are split as `dict_ratio` splits them: zstd's trainer builds a dictionary from the
//! odd rows (pglz keeps its last 4 KB), and the job runs on the even rows (at most 3000).
//! MODE is one of:
//!
//! - `encode`: the datum encoder with the pglz dictionary (what `dict_ratio` times as `pglz_dict`),
//!   printing a digest of the datums it wrote;
//! - `dict`: pglz with the dictionary alone (`Strategy::DICTIONARY`), no plain attempt;
//! - `plain`: pgdict's plain pglz, default strategy;
//! - `c`: PostgreSQL's C pglz, default strategy;
//! - `decode`: the datum decoder on the encoder's datums; `decode_same`: the same on the rows
//!   C's always strategy stores compressed (the rows of `dict_ratio`'s decompression target);
//! - `c_decode`: C's `pglz_decompress` on C's always-strategy payloads; `c_decode_same`: only
//!   the payloads stored compressed (the other side of `decode_same`);
//! - `slices_decode`, `slices_c_decode`: ROWFILE is a payload file instead, cut into 2 KiB
//!   slices and compressed with the default strategy; pgdict's or C's plain decoder;
//! - `stats`: no timing; how often the plain form beats the dictionary form, and by how much.
//!
//! Callgrind's totals include the set-up (reading rows, training); compare the cost of the
//! job's own functions, or run two REPEAT counts and subtract.

use std::hint::black_box;
use std::path::Path;

use pgdict::datum::{self, Codec, DatumDecoder, DatumEncoder, Dictionaries, PreparedDictionary};
use pgdict::pglz;

mod common;

/// The modes, as the module documentation describes them.
const MODES: [&str; 11] = [
    "encode",
    "dict",
    "plain",
    "c",
    "decode",
    "decode_same",
    "c_decode",
    "c_decode_same",
    "slices_decode",
    "slices_c_decode",
    "stats",
];

fn main() {
    let usage = || -> ! {
        eprintln!(
            "usage: codec_profile MODE ROWFILE [REPEAT]; MODE: {}",
            MODES.join(", ")
        );
        std::process::exit(2);
    };
    let args = common::args();
    let (Some(mode), Some(path)) = (args.first().and_then(|a| a.to_str()), args.get(1)) else {
        usage()
    };
    if !MODES.contains(&mode) || args.len() > 3 {
        usage();
    }
    let path = Path::new(path);
    let repeat: usize = match args.get(2).map(|r| r.to_str().and_then(|r| r.parse().ok())) {
        None => 1,
        Some(Some(repeat)) => repeat,
        Some(None) => usage(),
    };
    if let Some(slice) = mode.strip_prefix("slices") {
        return slices(slice, path, repeat);
    }
    let rows = common::read_rows(path).unwrap_or_else(|e| common::fail(e));
    let (datums, samples) = common::interleaved_split(&rows, 3000);
    let dict = ::zstd::dict::from_samples(&samples, 64 * 1024)
        .unwrap_or_else(|e| common::fail(format!("{}: zstd's trainer: {e}", path.display())));
    let small = &dict[dict.len().saturating_sub(4096)..];
    let prepared = PreparedDictionary::new(1, small)
        .unwrap_or_else(|e| common::fail(format!("{}: {e}", path.display())));
    let prepared = std::sync::Arc::new(prepared);
    let dicts: Dictionaries = [prepared.clone()].into_iter().collect();
    let mut encoder = DatumEncoder::new();
    let mut compressor = pglz::Compressor::new();
    let mut out = Vec::new();
    // The `_same` modes keep only the rows C's always strategy stores compressed (as
    // `toast_compress_datum` does: payload and 8-byte header more than 2 bytes smaller than
    // the raw bytes), the rows of `dict_ratio`'s decompression target.
    let always = pgdict_pgref::strategy_always();
    let stored_compressed = |d: &[u8], payload: &[u8]| common::toast_keeps(d.len(), payload.len());
    let c_stores_compressed =
        |d: &&&[u8]| pgdict_pgref::compress(d, &always).is_some_and(|p| stored_compressed(d, &p));
    match mode {
        "encode" => {
            let mut stored = 0;
            // FNV-1a of the first pass's datums: two builds that print the same digest wrote
            // the same bytes (for changes meant to keep the output).
            let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
            for pass in 0..repeat {
                for d in &datums {
                    out.clear();
                    black_box(encoder.encode_into(d, Codec::Pglz, Some(&prepared), &mut out))
                        .unwrap();
                    stored += out.len();
                    if pass == 0 {
                        for &b in &out {
                            digest = (digest ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                        }
                    }
                }
            }
            let raw: usize = datums.iter().map(|d| d.len()).sum();
            eprintln!(
                "{raw} raw bytes per pass, {stored} stored in all {repeat} passes, \
                 digest {digest:016x}"
            );
        }
        "dict" => {
            for _ in 0..repeat {
                for d in &datums {
                    black_box(compressor.compress_with_dict(
                        d,
                        prepared.pglz(),
                        &pglz::Strategy::DICTIONARY,
                    ));
                }
            }
        }
        "plain" => {
            for _ in 0..repeat {
                for d in &datums {
                    black_box(compressor.compress(d, &pglz::Strategy::DEFAULT));
                }
            }
        }
        "c" => {
            let strategy = pgdict_pgref::strategy_default();
            for _ in 0..repeat {
                let mut c = pgdict_pgref::exclusive();
                for d in &datums {
                    black_box(c.compress_into(d, &strategy, &mut out));
                }
            }
        }
        "decode" | "decode_same" => {
            let stored: Vec<Vec<u8>> = datums
                .iter()
                .filter(|d| mode == "decode" || c_stores_compressed(d))
                .map(|d| encoder.encode(d, Codec::Pglz, Some(&prepared)).unwrap())
                .filter(|s| datum::parse_header(s).unwrap().form.codec().is_some())
                .collect();
            let mut decoder = DatumDecoder::new();
            for _ in 0..repeat {
                for s in &stored {
                    black_box(decoder.decode_into(s, &dicts, &mut out)).unwrap();
                }
            }
        }
        "c_decode" | "c_decode_same" => {
            let payloads: Vec<(pgdict_pgref::PaddedPayload, usize)> = datums
                .iter()
                .filter_map(|d| {
                    let payload = pgdict_pgref::compress(d, &always)?;
                    let stored = mode == "c_decode" || stored_compressed(d, &payload);
                    stored.then(|| (pgdict_pgref::PaddedPayload::new(&payload), d.len()))
                })
                .collect();
            for _ in 0..repeat {
                for (p, raw_len) in &payloads {
                    out.resize(*raw_len, 0);
                    black_box(pgdict_pgref::decompress_padded_into(p, &mut out, true));
                }
            }
        }
        "stats" => stats(&datums, &prepared),
        other => unreachable!("mode {other} is checked against MODES"),
    }
}

/// Modes `slices_decode` and `slices_c_decode`: a payload file cut into 2 KiB slices,
/// each compressed with the default strategy (as `vs_postgres` does), decoded by pgdict's
/// or C's plain pglz decoder.
fn slices(which: &str, path: &Path, repeat: usize) {
    let bytes = std::fs::read(path)
        .unwrap_or_else(|e| common::fail(format!("cannot read {}: {e}", path.display())));
    let payloads: Vec<(Vec<u8>, usize)> = bytes
        .chunks(2048)
        .filter_map(|raw| pglz::compress(raw, &pglz::Strategy::DEFAULT).map(|p| (p, raw.len())))
        .collect();
    let mut out = Vec::new();
    match which {
        "_decode" => {
            for _ in 0..repeat {
                for (p, raw_len) in &payloads {
                    out.resize(*raw_len, 0);
                    black_box(pglz::decompress_into(p, &mut out)).unwrap();
                }
            }
        }
        "_c_decode" => {
            let padded: Vec<(pgdict_pgref::PaddedPayload, usize)> = payloads
                .iter()
                .map(|(p, n)| (pgdict_pgref::PaddedPayload::new(p), *n))
                .collect();
            for _ in 0..repeat {
                for (p, raw_len) in &padded {
                    out.resize(*raw_len, 0);
                    black_box(pgdict_pgref::decompress_padded_into(p, &mut out, true));
                }
            }
        }
        other => unreachable!("mode slices{other} is checked against MODES"),
    }
}

/// How the plain form compares with the dictionary form, datum by datum, and how often
/// `Compressor::plain_may_fit` proves that the plain attempt cannot win (as the datum encoder
/// asks it: the plain datum must be shorter than raw, and no longer than the dictionary form).
fn stats(datums: &[&[u8]], prepared: &PreparedDictionary) {
    let mut compressor = pglz::Compressor::new();
    let (mut plain_wins, mut plain_saved, mut skipped) = (0, 0, 0);
    for d in datums {
        let dict_len = compressor
            .compress_with_dict(d, prepared.pglz(), &pglz::Strategy::DICTIONARY)
            .map(|p| p.len() + 10);
        let plain_len = compressor
            .compress(d, &pglz::Strategy::DEFAULT)
            .map(|p| p.len() + 8);
        let raw_len = common::raw_datum_len(d.len());
        // The longest plain payload that wins: shorter than raw, and no longer than the
        // dictionary form (a tie goes to plain); and that the default strategy accepts.
        let max_payload = match dict_len {
            Some(dict_len) if dict_len < raw_len => dict_len - 8,
            _ => raw_len - 9,
        }
        .min(pglz::Strategy::DEFAULT.longest_payload(d.len()));
        if d.len() < 32 || !compressor.plain_may_fit(d, max_payload) {
            skipped += 1;
        }
        if let Some(p) = plain_len {
            let best_other = dict_len.unwrap_or(raw_len).min(raw_len);
            if p < best_other {
                plain_wins += 1;
                plain_saved += best_other - p;
            }
        }
    }
    println!(
        "{} datums; plain wins {plain_wins}, saving {plain_saved} bytes; plain attempt skipped \
         for {skipped}",
        datums.len()
    );
}
