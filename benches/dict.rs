//! The dictionary codecs side by side with PostgreSQL's C pglz, per corpus row set: the
//! criterion counterpart of `examples/dict_ratio.rs` (which reports ratios and checks the
//! targets; this times the same work with criterion's statistics and baselines).
//!
//! # Running
//!
//! ```text
//! cargo bench --bench dict                          # everything, about 4 minutes on 2 cores
//! cargo bench --bench dict -- --quick               # a rough pass
//! cargo bench --bench dict -- dict_compress/csv     # a filter (a regex on the benchmark id)
//! PGDICT_CORPUS=/path/to/corpus cargo bench --bench dict
//! ```
//!
//! The corpus is read in place from `$PGDICT_CORPUS`, or else from `../shared/corpus` next to
//! the workspace; a missing corpus is an error, not an empty run.
//!
//! # What is measured
//!
//! Each of the 8 files of `rows/` is split as the dictionary-codec issue asks
//! (`examples/common`): every second row (the 2nd, 4th, ...) trains the dictionary, the others
//! (the 1st, 3rd, ...) are the datums, each
//! compressed on its own. The dictionary is `dict_ratio`'s stand-in: zstd's trainer
//! (`zstd::dict::from_samples`) at 64 KiB; `lz4_dict` uses all of it, `pglz_dict` its last
//! 4 KiB (pglz reaches 4095 bytes back), `zstd_dict` the same 4 KiB behind zstd's entropy
//! tables counted on the training rows.
//!
//! Three groups per row set, one iteration going once through its datums:
//!
//! - `dict_compress/<set>`: every datum, throughput in all their raw bytes. `pglz_c` is
//!   PostgreSQL 15's C `pglz_compress` with the default strategy (what TOAST runs), the call
//!   alone: no datum header is written for it, which favours C by a few nanoseconds a datum.
//!   `pglz_dict`, `lz4_dict` and `zstd_dict` are pgdict's datum encoder writing the whole
//!   stored datum, with everything it tries (for pglz: plain pglz as well, when it could be
//!   smaller). `lz4` is pgdict's plain lz4 (`Lz4Compressor`): the bytes PostgreSQL's
//!   `LZ4_compress_default` writes, its state reused rather than cleared per call, so faster
//!   than PostgreSQL's call on short rows (`examples/lz4_parts.rs` times the two).
//!   `pglz_dict` / `pglz_c` is the issue's compression target (at most 1: not slower).
//! - `dict_decompress/<set>`: the issue's decompression target, on the same rows: the datums
//!   that both C's `always` strategy and `pglz_dict` stored compressed. `pglz_c_always` is C's
//!   `pglz_decompress` on its own payloads (padded once at start-up, as in `benches/pglz.rs`);
//!   `pglz_dict` is the datum decoder (header, dictionary lookup, decoding). The target:
//!   `pglz_dict` at least 1.5x C's throughput.
//! - `dict_decompress_own/<set>`: each method decoding every datum it stored compressed (the
//!   `always` strategy leaves most short rows raw, the dictionary forms few), throughput in
//!   those datums' raw bytes: `pglz_c_always`, `pglz_dict`, `lz4_dict`, `zstd_dict`.
//!
//! At start-up one line per set goes to stderr: datums, raw bytes, and for each method how many
//! datums it stored compressed and the bytes of all its stored datums; every datum's round
//! trip is checked first.
//!
//! # Reading the results
//!
//! Compare functions within a group, in one run: absolute times drift by 20–30 % on this
//! shared machine. `examples/dict_ratio.rs` times the two targets round by round (paired), which
//! holds better on a noisy machine than two criterion measurements taken a few seconds apart.

use std::hint::black_box;
use std::sync::Arc;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput,
};
use pgdict::datum::{Codec, DatumDecoder, DatumEncoder, Dictionaries, PreparedDictionary};
use pgdict::lz4::Lz4Compressor;
use pgdict_pgref::PaddedPayload;

mod common;
#[allow(dead_code)] // the tests' corpus reader; the bench uses part of it
#[path = "../tests/support/corpus.rs"]
mod corpus;
#[path = "../examples/common/mod.rs"]
mod examples_common;

/// The stand-in dictionary's size: lz4's whole window.
const DICT_SIZE: usize = 64 * 1024;

/// The part of it pglz and zstd use: its end.
const SMALL_DICT_SIZE: usize = 4096;

/// One row set, prepared: its datums, the dictionaries, and each method's stored output.
struct RowSet {
    name: String,
    datums: Vec<Vec<u8>>,
    pglz_dict: Arc<PreparedDictionary>,
    lz4_dict: Arc<PreparedDictionary>,
    zstd_dict: Arc<PreparedDictionary>,
    dicts: Dictionaries,
    /// C's `always` strategy: for each datum, the payload PostgreSQL would keep.
    c_always: Vec<Option<PaddedPayload>>,
    /// The datum encoder's stored datums, per dictionary codec.
    pglz_stored: Vec<Vec<u8>>,
    lz4_stored: Vec<Vec<u8>>,
    zstd_stored: Vec<Vec<u8>>,
}

/// Splits, trains, prepares and stores one row set (`file` in `rows/`, its `rows`), checking
/// every round trip.
fn prepare(file: &str, rows: &[Vec<u8>]) -> RowSet {
    let name = file
        .rsplit_once('.')
        .map_or(file, |(stem, _)| stem)
        .to_string();
    let (evaluated, samples) = examples_common::interleaved_split(rows, usize::MAX);
    assert!(
        !evaluated.is_empty() && !samples.is_empty(),
        "dict bench: {name}: too few rows to split"
    );
    let dict = ::zstd::dict::from_samples(&samples, DICT_SIZE)
        .unwrap_or_else(|e| panic!("dict bench: {name}: zstd could not train: {e}"));
    let small = &dict[dict.len().saturating_sub(SMALL_DICT_SIZE)..];
    let zstd_content =
        examples_common::with_zstd_tables(small, &samples, pgdict::zstd::DEFAULT_LEVEL)
            .unwrap_or_else(|e| panic!("dict bench: {name}: {e}"));
    let prepared = |id: u32, bytes: &[u8]| {
        Arc::new(
            PreparedDictionary::new(id, bytes)
                .unwrap_or_else(|e| panic!("dict bench: {name}: cannot prepare a dictionary: {e}")),
        )
    };
    let pglz_dict = prepared(1, small);
    let lz4_dict = prepared(2, &dict);
    let zstd_dict = prepared(3, &zstd_content);
    let dicts: Dictionaries = [&pglz_dict, &lz4_dict, &zstd_dict]
        .into_iter()
        .map(Arc::clone)
        .collect();

    let datums: Vec<Vec<u8>> = evaluated.iter().map(|d| d.to_vec()).collect();
    let always = pgdict_pgref::strategy_always();
    let c_always = datums
        .iter()
        .map(|raw| {
            let payload = pgdict_pgref::compress(raw, &always)?;
            examples_common::toast_keeps(raw.len(), payload.len()).then(|| {
                let back = pgdict_pgref::decompress(&payload, raw.len(), true);
                assert!(
                    back.as_ref() == Some(raw),
                    "dict bench: {name}: C round trip"
                );
                PaddedPayload::new(&payload)
            })
        })
        .collect();
    let mut encoder = DatumEncoder::new();
    let mut decoder = DatumDecoder::new();
    let mut store = |codec: Codec, dict: &PreparedDictionary| -> Vec<Vec<u8>> {
        datums
            .iter()
            .enumerate()
            .map(|(i, raw)| {
                let datum = encoder
                    .encode(raw, codec, Some(dict))
                    .unwrap_or_else(|e| panic!("dict bench: {name}: even row {i}, {codec}: {e}"));
                match decoder.decode(&datum, &dicts) {
                    Ok(back) => assert!(
                        back == *raw,
                        "dict bench: {name}: even row {i}, {codec}: the round trip differs"
                    ),
                    Err(e) => panic!("dict bench: {name}: even row {i}, {codec}: {e}"),
                }
                datum
            })
            .collect()
    };
    let pglz_stored = store(Codec::Pglz, &pglz_dict);
    let lz4_stored = store(Codec::Lz4, &lz4_dict);
    let zstd_stored = store(Codec::Zstd, &zstd_dict);
    RowSet {
        name,
        datums,
        pglz_dict,
        lz4_dict,
        zstd_dict,
        dicts,
        c_always,
        pglz_stored,
        lz4_stored,
        zstd_stored,
    }
}

/// The start-up line: what each method stored, and how many rows `same` both store compressed.
fn describe(set: &RowSet, same: &[usize]) -> String {
    let raw: usize = set.datums.iter().map(Vec::len).sum();
    let datum_summary = |stored: &[Vec<u8>]| {
        let compressed = stored
            .iter()
            .filter(|d| examples_common::is_compressed(d))
            .count();
        let bytes: usize = stored.iter().map(Vec::len).sum();
        format!("{compressed} compressed, {bytes} bytes stored")
    };
    let c_compressed = set.c_always.iter().flatten().count();
    let c_bytes: usize = set
        .c_always
        .iter()
        .zip(&set.datums)
        .map(|(payload, raw)| match payload {
            Some(p) => 8 + p.len(),
            None => examples_common::raw_datum_len(raw.len()),
        })
        .sum();
    format!(
        "dict bench: {}: {} datums, {raw} raw bytes; pglz_c_always {c_compressed} compressed, \
         {c_bytes} bytes stored; pglz_dict {}; lz4_dict {}; zstd_dict {}; same rows {}",
        set.name,
        set.datums.len(),
        datum_summary(&set.pglz_stored),
        datum_summary(&set.lz4_stored),
        datum_summary(&set.zstd_stored),
        same.len(),
    )
}

/// The datums both C's `always` strategy and `pglz_dict` stored compressed (indexes).
fn same_rows(set: &RowSet) -> Vec<usize> {
    (0..set.datums.len())
        .filter(|&i| {
            set.c_always[i].is_some() && examples_common::is_compressed(&set.pglz_stored[i])
        })
        .collect()
}

/// `dict_compress/<set>`: every datum, once per iteration. Each function returns a sum of
/// stored sizes, so that the work cannot be optimised away.
fn bench_compress(group: &mut BenchmarkGroup<'_, WallTime>, set: &RowSet) {
    let datums = &set.datums;
    common::bench_c_compress(group, "pglz_c", datums);

    let mut encoder = DatumEncoder::new();
    let mut out = Vec::new();
    let mut encode_all = |codec: Codec, dict: &PreparedDictionary| {
        let mut stored = 0;
        for datum in datums {
            out.clear();
            encoder
                .encode_into(black_box(datum), codec, Some(dict), &mut out)
                .expect("checked at start-up");
            stored += out.len();
        }
        stored
    };
    group.bench_function("pglz_dict", |b| {
        b.iter(|| encode_all(Codec::Pglz, &set.pglz_dict))
    });

    let mut lz4 = Lz4Compressor::new();
    let mut lz4_out = Vec::new();
    group.bench_function("lz4", |b| {
        b.iter(|| {
            let mut stored = 0;
            for datum in datums {
                lz4_out.clear();
                stored += lz4
                    .compress_into(black_box(datum), &mut lz4_out)
                    .expect("liblz4 compresses any datum under 2 GB");
            }
            stored
        });
    });

    group.bench_function("lz4_dict", |b| {
        b.iter(|| encode_all(Codec::Lz4, &set.lz4_dict))
    });
    group.bench_function("zstd_dict", |b| {
        b.iter(|| encode_all(Codec::Zstd, &set.zstd_dict))
    });
}

/// Times C's `pglz_decompress` over `payloads` (with their raw lengths) as one function.
fn bench_c_decompress(
    group: &mut BenchmarkGroup<'_, WallTime>,
    payloads: &[(&PaddedPayload, usize)],
) {
    let raw_bytes = payloads.iter().map(|&(_, len)| len as u64).sum();
    let mut out = vec![0; payloads.iter().map(|&(_, len)| len).max().unwrap_or(0)];
    group.throughput(Throughput::Bytes(raw_bytes));
    group.bench_function("pglz_c_always", |b| {
        b.iter(|| {
            for &(payload, raw_len) in payloads {
                let out = &mut out[..raw_len];
                pgdict_pgref::decompress_padded_into(black_box(payload), out, true)
                    .expect("checked at start-up");
            }
            black_box(&mut out);
        });
    });
}

/// Times the datum decoder over `stored` (with their raw lengths) as function `name`.
fn bench_datum_decode(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    stored: &[(&[u8], usize)],
    dicts: &Dictionaries,
) {
    let raw_bytes = stored.iter().map(|&(_, len)| len as u64).sum();
    let mut decoder = DatumDecoder::new();
    let mut out = Vec::new();
    group.throughput(Throughput::Bytes(raw_bytes));
    group.bench_function(name, |b| {
        b.iter(|| {
            for &(datum, _) in stored {
                decoder
                    .decode_into(black_box(datum), dicts, &mut out)
                    .expect("checked at start-up");
            }
            black_box(&mut out);
        });
    });
}

/// The stored datums of `stored` that are compressed, with their raw lengths.
fn compressed<'a>(stored: &'a [Vec<u8>], datums: &[Vec<u8>]) -> Vec<(&'a [u8], usize)> {
    stored
        .iter()
        .zip(datums)
        .filter(|(d, _)| examples_common::is_compressed(d))
        .map(|(d, raw)| (&d[..], raw.len()))
        .collect()
}

fn dict_codecs(c: &mut Criterion) {
    eprintln!("dict bench: C is {}", pgdict_pgref::PG_VERSION);
    for (file, rows) in corpus::row_sets() {
        let set = prepare(&file, &rows);
        let same = same_rows(&set);
        eprintln!("{}", describe(&set, &same));

        let mut group = c.benchmark_group(format!("dict_compress/{}", set.name));
        // An iteration takes milliseconds: one per sample is plenty (see benches/pglz.rs).
        group.sampling_mode(SamplingMode::Flat);
        group.throughput(Throughput::Bytes(
            set.datums.iter().map(|d| d.len() as u64).sum(),
        ));
        bench_compress(&mut group, &set);
        group.finish();

        if same.is_empty() {
            eprintln!("dict bench: {}: no datum both stored compressed", set.name);
        } else {
            let mut group = c.benchmark_group(format!("dict_decompress/{}", set.name));
            group.sampling_mode(SamplingMode::Flat);
            let c_payloads: Vec<(&PaddedPayload, usize)> = same
                .iter()
                .map(|&i| {
                    let payload = set.c_always[i].as_ref().expect("a same row");
                    (payload, set.datums[i].len())
                })
                .collect();
            bench_c_decompress(&mut group, &c_payloads);
            let dict_datums: Vec<(&[u8], usize)> = same
                .iter()
                .map(|&i| (&set.pglz_stored[i][..], set.datums[i].len()))
                .collect();
            bench_datum_decode(&mut group, "pglz_dict", &dict_datums, &set.dicts);
            group.finish();
        }

        let mut group = c.benchmark_group(format!("dict_decompress_own/{}", set.name));
        group.sampling_mode(SamplingMode::Flat);
        let c_payloads: Vec<(&PaddedPayload, usize)> = set
            .c_always
            .iter()
            .zip(&set.datums)
            .filter_map(|(payload, raw)| Some((payload.as_ref()?, raw.len())))
            .collect();
        if !c_payloads.is_empty() {
            bench_c_decompress(&mut group, &c_payloads);
        }
        for (name, stored) in [
            ("pglz_dict", &set.pglz_stored),
            ("lz4_dict", &set.lz4_stored),
            ("zstd_dict", &set.zstd_stored),
        ] {
            let own = compressed(stored, &set.datums);
            if !own.is_empty() {
                bench_datum_decode(&mut group, name, &own, &set.dicts);
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = dict_codecs
}
criterion_main!(benches);
