//! pglz side by side: pgdict, PostgreSQL's C and the `pglz` crate, on the same datums.
//!
//! # Running
//!
//! ```text
//! cargo bench --bench pglz                      # everything, about 4.5 minutes on 2 cores
//! cargo bench --bench pglz -- --quick           # a rough pass, under a minute
//! cargo bench --bench pglz -- compress/csv      # a filter (a regex on the benchmark id)
//! cargo bench --bench pglz -- 8KiB/             # the 8 KiB slices only
//! PGDICT_CORPUS=/path/to/corpus cargo bench --bench pglz
//! ```
//!
//! The corpus is read in place at bench time from `$PGDICT_CORPUS`, or else from
//! `../shared/corpus` next to the workspace (see its `MANIFEST.md`); a missing corpus is an
//! error, not an empty run. Criterion's own options work after `--`, e.g.
//! `--measurement-time 5` or `--save-baseline before` then `--baseline before`.
//!
//! # What is measured
//!
//! Every input is a set of datums, each compressed (or decompressed) on its own, as TOAST
//! does. One iteration goes through the whole set once, one datum at a time, with PostgreSQL's
//! default strategy (`PGLZ_strategy_default`, what TOAST uses).
//!
//! - Row sets: the 8 files of `rows/`, every row a datum (`pgdict::rows::read_row_file`).
//!   Most rows are short, and the default strategy gives up on a datum that does not shrink
//!   by 25 %: for most row sets `compress/` mostly times that attempt (as PostgreSQL would
//!   spend it), and `decompress/` decodes only the few rows that did compress (the start-up
//!   lines say how many; none for `json_user_agents`, which then has no `decompress/` group).
//! - Slices: a few files of `payloads/` cut into 2 KiB and 8 KiB datums (a short tail that
//!   is not a whole slice is dropped), named `<file stem>_2KiB` and `<file stem>_8KiB`.
//!
//! For each input there are two groups, `compress/<input>` and `decompress/<input>`, each with
//! the functions `pgdict`, `c` (PostgreSQL 15's `pglz_compress` / `pglz_decompress` from
//! `libpgcommon.a`, through the test-only crate `pgdict-pgref`) and `pglz_crate` (the `pglz`
//! crate, 0.1.2). Decompression decodes the datums that compressed, each implementation its
//! own output (checked at start-up to round-trip). Throughput is in raw bytes: all raw bytes
//! of the set for compression, the raw bytes of the datums decoded for decompression.
//!
//! At start-up one line per input goes to stderr: datums, raw bytes, how many datums each
//! implementation compressed and to how many bytes, and whether pgdict's and the crate's
//! payloads are byte-identical to C's. When they are, the three do exactly the same work and
//! the speed comparison is like for like.
//!
//! # Reading the results
//!
//! Compare functions *within a group*: the number that matters is a ratio of times in one
//! run, `pgdict` / `c` (below 1: pgdict is faster), and `pglz_crate` / `c`. From run to run it
//! moves by about ±0.05, by up to ±0.15 for groups whose iteration takes microseconds (the
//! decompress groups of row sets where few rows compressed, and in `--quick` mode, which takes
//! two samples). Absolute times and throughputs drift by 20–30 % on this shared 2-core
//! machine from one run to the next (other jobs, frequency scaling): do not compare them
//! across runs, nor read criterion's "change" lines as a regression unless the ratio to `c`
//! in the same run moved too.
//!
//! `decompress/csv_airports` decodes 4 datums (310 payload bytes), about 60 ns each: it times
//! the per-call cost of each decoder (and of pgref's wrapper) more than decoding.
//!
//! Measurement settings are short on purpose (see [`common::config`]): flat sampling, 10 samples,
//! 0.5 s of warm-up and 1.5 s of measurement per function; the slowest iteration (compressing
//! `json_mdn_browser_compat`, 9 MB) takes about 50 ms, well inside a sample.

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput,
};
use pgdict_pgref::PaddedPayload;

mod common;
#[allow(dead_code)] // the tests' corpus reader; the bench uses part of it
#[path = "../tests/support/corpus.rs"]
mod corpus;

/// Files of `payloads/` cut into slices: English prose, GeoJSON full of floating-point numbers,
/// SQL `INSERT`s, PostgreSQL heap pages (binary with text), HTML, a JSON array of records.
const SLICED_PAYLOADS: [&str; 6] = [
    "payloads/canterbury/alice29.txt",
    "payloads/simdjson/canada.json",
    "payloads/sql/northwind.sql",
    "payloads/postgres/pg_proc_heap",
    "payloads/snappy_testdata/html",
    "payloads/datasets/cars.json",
];

/// Slice sizes in bytes: a datum just over TOAST's 2 KB threshold, and one of a heap page.
const SLICE_SIZES: [usize; 2] = [2 * 1024, 8 * 1024];

/// One input: a named set of datums.
struct Input {
    /// `csv_airports`, `alice29_8KiB`, …: the `<input>` of the group names.
    name: String,
    datums: Vec<Vec<u8>>,
}

/// A payload and the raw length of the datum it decodes to.
struct Packed<P> {
    payload: P,
    raw_len: usize,
}

/// Each implementation's output for one input: the datums its compressor accepted.
struct Outputs {
    pgdict: Vec<Packed<Vec<u8>>>,
    c: Vec<Packed<PaddedPayload>>,
    pglz_crate: Vec<Packed<Vec<u8>>>,
}

/// The row sets, in file-name order (each named by its file's stem), then the slices of
/// [`SLICED_PAYLOADS`].
fn load_inputs() -> Vec<Input> {
    let mut inputs: Vec<Input> = corpus::row_sets()
        .into_iter()
        .map(|(file, datums)| Input {
            name: stem(&file).to_string(),
            datums,
        })
        .collect();
    for relative in SLICED_PAYLOADS {
        let bytes = corpus::read(relative);
        let file = relative.rsplit('/').next().unwrap_or(relative);
        for size in SLICE_SIZES {
            inputs.push(Input {
                name: format!("{}_{}KiB", stem(file), size / 1024),
                datums: bytes.chunks_exact(size).map(<[u8]>::to_vec).collect(),
            });
        }
    }
    inputs
}

/// `alice29` for `alice29.txt`, `pg_proc_heap` for `pg_proc_heap`.
fn stem(file: &str) -> &str {
    file.rsplit_once('.').map_or(file, |(stem, _)| stem)
}

/// Compresses every datum with each implementation, checks that each decodes its own output
/// back to the datum, and reports the outcome on stderr.
fn compress_all(input: &Input) -> Outputs {
    let mut compressor = pgdict::pglz::Compressor::new();
    let c_strategy = pgdict_pgref::strategy_default();
    let mut outputs = Outputs {
        pgdict: Vec::new(),
        c: Vec::new(),
        pglz_crate: Vec::new(),
    };
    let (mut same_pgdict, mut same_crate) = (true, true);
    for datum in &input.datums {
        let raw_len = datum.len();
        let pgdict = compressor
            .compress(datum, &pgdict::pglz::Strategy::DEFAULT)
            .map(<[u8]>::to_vec);
        let c = pgdict_pgref::compress(datum, &c_strategy);
        let pglz_crate = ::pglz::compress(datum, &::pglz::Strategy::DEFAULT);
        same_pgdict &= pgdict == c;
        same_crate &= pglz_crate == c;

        if let Some(payload) = pgdict {
            let decoded = pgdict::pglz::decompress(&payload, raw_len);
            assert!(
                decoded.as_ref() == Ok(datum),
                "pglz bench: pgdict does not round-trip a datum of {}",
                input.name
            );
            outputs.pgdict.push(Packed { payload, raw_len });
        }
        if let Some(payload) = c {
            let decoded = pgdict_pgref::decompress(&payload, raw_len, true);
            assert!(
                decoded.as_ref() == Some(datum),
                "pglz bench: C does not round-trip a datum of {}",
                input.name
            );
            let payload = PaddedPayload::new(&payload);
            outputs.c.push(Packed { payload, raw_len });
        }
        if let Some(payload) = pglz_crate {
            let mut decoded = vec![0; raw_len];
            let written = ::pglz::decompress_into(&payload, &mut decoded, true);
            assert!(
                written == Some(raw_len) && decoded == *datum,
                "pglz bench: the pglz crate does not round-trip a datum of {}",
                input.name
            );
            outputs.pglz_crate.push(Packed { payload, raw_len });
        }
    }

    let summary =
        |name: &str, packed: usize, stored: usize| format!("{name} {packed} → {stored} B");
    eprintln!(
        "pglz bench: {}: {} datums, {} B raw; compressed: {}, {}, {}; identical to C: pgdict {}, pglz_crate {}",
        input.name,
        input.datums.len(),
        input.datums.iter().map(Vec::len).sum::<usize>(),
        summary("pgdict", outputs.pgdict.len(), outputs.pgdict.iter().map(|p| p.payload.len()).sum()),
        summary("c", outputs.c.len(), outputs.c.iter().map(|p| p.payload.len()).sum()),
        summary(
            "pglz_crate",
            outputs.pglz_crate.len(),
            outputs.pglz_crate.iter().map(|p| p.payload.len()).sum()
        ),
        yes_no(same_pgdict),
        yes_no(same_crate),
    );
    outputs
}

fn yes_no(yes: bool) -> &'static str {
    if yes {
        "yes"
    } else {
        "NO"
    }
}

/// Raw bytes that decompressing `packed` produces, for [`Throughput::Bytes`].
fn raw_bytes<P>(packed: &[Packed<P>]) -> u64 {
    packed.iter().map(|p| p.raw_len as u64).sum()
}

/// The `compress/<input>` group: every datum of the set, one `compress` call each.
fn bench_compress(group: &mut BenchmarkGroup<'_, WallTime>, datums: &[Vec<u8>]) {
    // The returned stored sizes are summed so that the work cannot be optimised away.
    let mut compressor = pgdict::pglz::Compressor::new();
    group.bench_function("pgdict", |b| {
        b.iter(|| {
            let mut stored = 0;
            for datum in datums {
                let strategy = &pgdict::pglz::Strategy::DEFAULT;
                stored += compressor
                    .compress(black_box(datum), strategy)
                    .map_or(0, <[u8]>::len);
            }
            stored
        });
    });

    common::bench_c_compress(group, "c", datums);

    // Also one reused output buffer; the crate allocates its history tables inside each call,
    // which is its API's cost as users pay it.
    let largest = datums.iter().map(Vec::len).max().unwrap_or(0);
    let mut crate_out = vec![0; ::pglz::max_compressed_buffer_size(largest)];
    group.bench_function("pglz_crate", |b| {
        b.iter(|| {
            let mut stored = 0;
            for datum in datums {
                let dest = &mut crate_out[..::pglz::max_compressed_buffer_size(datum.len())];
                stored += ::pglz::compress_into(black_box(datum), dest, &::pglz::Strategy::DEFAULT)
                    .unwrap_or(0);
            }
            stored
        });
    });
}

/// The `decompress/<input>` group: each implementation decodes its own payloads, into one
/// reused buffer cut to each datum's raw length, checking completeness as PostgreSQL does for
/// a whole datum (`check_complete = true`).
fn bench_decompress(group: &mut BenchmarkGroup<'_, WallTime>, outputs: &Outputs) {
    let largest = |raw_lens: &mut dyn Iterator<Item = usize>| raw_lens.max().unwrap_or(0);

    let mut out = vec![0; largest(&mut outputs.pgdict.iter().map(|p| p.raw_len))];
    group.throughput(Throughput::Bytes(raw_bytes(&outputs.pgdict)));
    group.bench_function("pgdict", |b| {
        b.iter(|| {
            for packed in &outputs.pgdict {
                let out = &mut out[..packed.raw_len];
                pgdict::pglz::decompress_into(black_box(&packed.payload), out)
                    .expect("pgdict decodes its own output");
            }
            black_box(&mut out);
        });
    });

    // C decodes from payloads padded once at start-up (`PaddedPayload`), not through
    // `pgdict_pgref::decompress_into`, which copies every payload into a padded buffer before
    // each call. PostgreSQL's `pglz_decompress` reads the payload where it lies in the
    // varlena, and pgdict and the crate read it in place too; a per-call copy would charge C
    // for a safety measure of the test wrapper (C may read 2 bytes past a corrupt payload),
    // not for its own work. This is the fairest form to C.
    let mut out = vec![0; largest(&mut outputs.c.iter().map(|p| p.raw_len))];
    group.throughput(Throughput::Bytes(raw_bytes(&outputs.c)));
    group.bench_function("c", |b| {
        b.iter(|| {
            for packed in &outputs.c {
                let out = &mut out[..packed.raw_len];
                pgdict_pgref::decompress_padded_into(black_box(&packed.payload), out, true)
                    .expect("C decodes its own output");
            }
            black_box(&mut out);
        });
    });

    let mut out = vec![0; largest(&mut outputs.pglz_crate.iter().map(|p| p.raw_len))];
    group.throughput(Throughput::Bytes(raw_bytes(&outputs.pglz_crate)));
    group.bench_function("pglz_crate", |b| {
        b.iter(|| {
            for packed in &outputs.pglz_crate {
                let out = &mut out[..packed.raw_len];
                ::pglz::decompress_into(black_box(&packed.payload), out, true)
                    .expect("the crate decodes its own output");
            }
            black_box(&mut out);
        });
    });
}

fn pglz(c: &mut Criterion) {
    eprintln!("pglz bench: C is {}", pgdict_pgref::PG_VERSION);
    for input in load_inputs() {
        let outputs = compress_all(&input);

        let mut group = c.benchmark_group(format!("compress/{}", input.name));
        // An iteration over a whole row set takes milliseconds: one iteration per sample is
        // plenty, and linear sampling would run ever longer samples up to 10 times the first.
        group.sampling_mode(SamplingMode::Flat);
        group.throughput(Throughput::Bytes(
            input.datums.iter().map(|d| d.len() as u64).sum(),
        ));
        bench_compress(&mut group, &input.datums);
        group.finish();

        // Under the default strategy's 25 % minimum saving, some row sets of short rows have
        // nothing compressed (json_user_agents): there is nothing to decode.
        if outputs.pgdict.is_empty() && outputs.c.is_empty() && outputs.pglz_crate.is_empty() {
            eprintln!(
                "pglz bench: {}: no datum compressed, no decompress group",
                input.name
            );
            continue;
        }
        let mut group = c.benchmark_group(format!("decompress/{}", input.name));
        group.sampling_mode(SamplingMode::Flat);
        bench_decompress(&mut group, &outputs);
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = pglz
}
criterion_main!(benches);
