//! pgdict's pglz side by side with PostgreSQL's C pglz and the `pglz` crate, on your data.
//!
//! ```text
//! cargo run --release --example vs_postgres -- [--slice N] [--json] [--strategy default|always] PATH...
//! ```
//!
//! A PATH ending in `.txt`, `.jsonl` or `.ndjson` (in any case) is a row file, read as
//! [`pgdict::rows`] reads it: one datum per line (see the corpus's MANIFEST.md). Any other file
//! is cut into N-byte slices (default 2048), each a datum. Every datum is compressed on its
//! own, as PostgreSQL compresses each value; each implementation's payloads are decoded back
//! to their datums before anything is timed.
//!
//! For each PATH it reports the stored bytes (the compressed payload, or the raw datum when the
//! strategy refuses it; no varlena header), compression and decompression throughput in MB/s of
//! raw data (`n/a` where no datum was stored compressed: nothing to decode), and whether
//! pgdict's output is identical to C's for every datum. The three
//! implementations are timed in interleaved rounds on the same datums, and the median round is
//! kept, so the ratios hold even on a noisy machine; absolute numbers drift from run to run.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pgdict::measure::{self, mbps};
use pgdict::pglz;

struct Options {
    slice: usize,
    json: bool,
    strategy: pglz::Strategy,
    strategy_name: &'static str,
    paths: Vec<PathBuf>,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        slice: 2048,
        json: false,
        strategy: pglz::Strategy::DEFAULT,
        strategy_name: "default",
        paths: Vec::new(),
    };
    // Not `env::args`, which panics on a file name that is not UTF-8.
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let Some(flag) = arg.to_str() else {
            options.paths.push(PathBuf::from(arg));
            continue;
        };
        match flag {
            "--slice" => {
                let value = args.next().ok_or("--slice needs a number of bytes")?;
                let value = value.to_string_lossy();
                options.slice = value
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("--slice: not a positive number: {value}"))?;
            }
            "--json" => options.json = true,
            "--strategy" => match args.next().as_ref().and_then(|value| value.to_str()) {
                Some("default") => {}
                Some("always") => {
                    options.strategy = pglz::Strategy::ALWAYS;
                    options.strategy_name = "always";
                }
                other => {
                    return Err(format!(
                        "--strategy: expected default or always, got {other:?}"
                    ))
                }
            },
            "-h" | "--help" => {
                return Err(
                    "usage: vs_postgres [--slice N] [--json] [--strategy default|always] PATH..."
                        .into(),
                )
            }
            _ if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            _ => options.paths.push(PathBuf::from(arg)),
        }
    }
    if options.paths.is_empty() {
        return Err(
            "usage: vs_postgres [--slice N] [--json] [--strategy default|always] PATH...".into(),
        );
    }
    Ok(options)
}

fn load_datums(path: &Path, slice: usize) -> Result<Vec<Vec<u8>>, String> {
    let extension = path.extension().and_then(|e| e.to_str());
    let is_row_file = matches!(
        extension.map(str::to_ascii_lowercase).as_deref(),
        Some("txt" | "jsonl" | "ndjson")
    );
    let datums = if is_row_file {
        pgdict::rows::read_row_file(path).map_err(|e| e.to_string())?
    } else {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        bytes.chunks(slice).map(<[u8]>::to_vec).collect()
    };
    if datums.is_empty() {
        return Err(format!("{}: no datums to measure", path.display()));
    }
    Ok(datums)
}

/// Checks that `decode` gives every datum back from its payload (`None`: stored raw), before
/// the timing trusts it: `Err` names the implementation and the datum.
fn check_round_trips(
    who: &str,
    datums: &[Vec<u8>],
    payloads: &[Option<Vec<u8>>],
    decode: impl Fn(&[u8], &mut [u8]) -> Option<usize>,
) -> Result<(), String> {
    for (n, (datum, payload)) in datums.iter().zip(payloads).enumerate() {
        let Some(payload) = payload else { continue };
        let mut out = vec![0; datum.len()];
        if decode(payload, &mut out) != Some(datum.len()) || out != *datum {
            return Err(format!("{who}: datum {} does not decode back", n + 1));
        }
    }
    Ok(())
}

/// One implementation's results on one input.
#[derive(Default, Clone, Copy)]
struct Measured {
    stored_bytes: usize,
    compress_mbps: f64,
    decompress_mbps: f64,
}

struct Report {
    input: String,
    datums: usize,
    raw_bytes: usize,
    identical: bool,
    pgdict: Measured,
    c: Measured,
    pglz_crate: Measured,
}

fn evaluate(name: String, datums: &[Vec<u8>], options: &Options) -> Result<Report, String> {
    let strategy = options.strategy;
    let c_strategy = pgdict_pgref::PglzStrategy {
        min_input_size: strategy.min_input_size,
        max_input_size: strategy.max_input_size,
        min_comp_rate: strategy.min_comp_rate,
        first_success_by: strategy.first_success_by,
        match_size_good: strategy.match_size_good,
        match_size_drop: strategy.match_size_drop,
    };
    let crate_strategy = ::pglz::Strategy {
        min_input_size: strategy.min_input_size,
        max_input_size: strategy.max_input_size,
        min_comp_rate: strategy.min_comp_rate,
        first_success_by: strategy.first_success_by,
        match_size_good: strategy.match_size_good,
        match_size_drop: strategy.match_size_drop,
    };
    let raw_bytes: usize = datums.iter().map(Vec::len).sum();
    let max_len = datums.iter().map(Vec::len).max().unwrap_or(0);

    // Compress once each, for stored sizes, identity and the payloads to decode.
    let mut compressor = pglz::Compressor::new();
    let ours: Vec<Option<Vec<u8>>> = datums
        .iter()
        .map(|d| compressor.compress(d, &strategy).map(<[u8]>::to_vec))
        .collect();
    let theirs: Vec<Option<Vec<u8>>> = datums
        .iter()
        .map(|d| pgdict_pgref::compress(d, &c_strategy))
        .collect();
    let crates: Vec<Option<Vec<u8>>> = datums
        .iter()
        .map(|d| ::pglz::compress(d, &crate_strategy))
        .collect();
    let identical = ours == theirs;
    check_round_trips("pgdict", datums, &ours, |p, out| {
        pglz::decompress_into(p, out).ok().map(|()| out.len())
    })?;
    check_round_trips("C", datums, &theirs, |p, out| {
        pgdict_pgref::decompress_into(p, out, true)
    })?;
    check_round_trips("the pglz crate", datums, &crates, |p, out| {
        ::pglz::decompress_into(p, out, true)
    })?;
    let stored = |payloads: &[Option<Vec<u8>>]| -> usize {
        payloads
            .iter()
            .zip(datums)
            .map(|(p, d)| p.as_ref().map_or(d.len(), Vec::len))
            .sum()
    };
    // Decompression throughput counts the raw bytes of the datums that were compressed.
    let compressed_raw = |payloads: &[Option<Vec<u8>>]| -> usize {
        payloads
            .iter()
            .zip(datums)
            .filter(|(p, _)| p.is_some())
            .map(|(_, d)| d.len())
            .sum()
    };

    let mut c_out = Vec::new();
    let mut crate_out = vec![0; ::pglz::max_compressed_buffer_size(max_len)];
    let compress_times = measure::side_by_side(
        &mut [
            Box::new(|| {
                for d in datums {
                    black_box(compressor.compress(black_box(d), &strategy));
                }
            }),
            Box::new(|| {
                // The shim serialises C's non-reentrant compressor with a lock; take it once
                // per round so that C's timing carries no per-call lock.
                let mut c = pgdict_pgref::exclusive();
                for d in datums {
                    black_box(c.compress_into(black_box(d), &c_strategy, &mut c_out));
                }
            }),
            Box::new(|| {
                for d in datums {
                    black_box(::pglz::compress_into(
                        black_box(d),
                        &mut crate_out,
                        &crate_strategy,
                    ));
                }
            }),
        ],
        5,
        Duration::from_millis(300),
    )
    .medians;

    // C reads up to 2 bytes past a corrupt payload, so the shim pads payloads; pad them once
    // here so that C's timing includes no copy.
    let theirs_padded: Vec<Option<pgdict_pgref::PaddedPayload>> = theirs
        .iter()
        .map(|p| p.as_deref().map(pgdict_pgref::PaddedPayload::new))
        .collect();
    let mut out = vec![0; max_len];
    let mut out_c = vec![0; max_len];
    let mut out_crate = vec![0; max_len];
    let decompress_times = measure::side_by_side(
        &mut [
            Box::new(|| {
                for (p, d) in ours.iter().zip(datums) {
                    if let Some(p) = p {
                        pglz::decompress_into(black_box(p), &mut out[..d.len()]).unwrap();
                    }
                }
            }),
            Box::new(|| {
                for (p, d) in theirs_padded.iter().zip(datums) {
                    if let Some(p) = p {
                        pgdict_pgref::decompress_padded_into(
                            black_box(p),
                            &mut out_c[..d.len()],
                            true,
                        )
                        .unwrap();
                    }
                }
            }),
            Box::new(|| {
                for (p, d) in crates.iter().zip(datums) {
                    if let Some(p) = p {
                        ::pglz::decompress_into(black_box(p), &mut out_crate[..d.len()], true)
                            .unwrap();
                    }
                }
            }),
        ],
        5,
        Duration::from_millis(300),
    )
    .medians;

    let measured = |i: usize, payloads: &[Option<Vec<u8>>]| Measured {
        stored_bytes: stored(payloads),
        compress_mbps: mbps(raw_bytes, compress_times[i]),
        decompress_mbps: mbps(compressed_raw(payloads), decompress_times[i]),
    };
    Ok(Report {
        input: name,
        datums: datums.len(),
        raw_bytes,
        identical,
        pgdict: measured(0, &ours),
        c: measured(1, &theirs),
        pglz_crate: measured(2, &crates),
    })
}

fn json_line(report: &Report, options: &Options) -> String {
    let part = |m: &Measured| {
        serde_json::json!({
            "stored_bytes": m.stored_bytes,
            "compress_mbps": (m.compress_mbps * 10.0).round() / 10.0,
            "decompress_mbps": (m.decompress_mbps * 10.0).round() / 10.0,
        })
    };
    serde_json::json!({
        "input": report.input,
        "strategy": options.strategy_name,
        "datums": report.datums,
        "raw_bytes": report.raw_bytes,
        "identical": report.identical,
        "pgdict": part(&report.pgdict),
        "c": part(&report.c),
        "pglz_crate": part(&report.pglz_crate),
        "compress_speedup_vs_c": ratio(report.pgdict.compress_mbps, report.c.compress_mbps),
        "decompress_speedup_vs_c": ratio(report.pgdict.decompress_mbps, report.c.decompress_mbps),
    })
    .to_string()
}

/// `a / b` to two decimals; `None` where either side measured nothing (no datum was stored
/// compressed, so none was decoded).
fn ratio(a: f64, b: f64) -> Option<f64> {
    (a > 0.0 && b > 0.0).then(|| (a / b * 100.0).round() / 100.0)
}

/// A ratio in the table: `1.23x`, or `n/a`.
fn ratio_cell(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "n/a".into(), |ratio| format!("{ratio:.2}x"))
}

fn print_table_header() {
    println!(
        "{:<44} {:>7} {:>10} {:>5} | {:>21} | {:>21} | {:>21} | {:>13}",
        "input",
        "datums",
        "raw",
        "same",
        "pgdict: stored  c/d MB/s",
        "C: stored  c/d MB/s",
        "pglz crate: stored c/d",
        "vs C: c / d"
    );
}

fn print_table_row(r: &Report) {
    let cell = |m: &Measured| {
        format!(
            "{:>9} {:>5.0} {:>5.0}",
            m.stored_bytes, m.compress_mbps, m.decompress_mbps
        )
    };
    println!(
        "{:<44} {:>7} {:>10} {:>5} | {:>21} | {:>21} | {:>21} | {:>6} {:>6}",
        r.input,
        r.datums,
        r.raw_bytes,
        if r.identical { "yes" } else { "NO" },
        cell(&r.pgdict),
        cell(&r.c),
        cell(&r.pglz_crate),
        ratio_cell(ratio(r.pgdict.compress_mbps, r.c.compress_mbps)),
        ratio_cell(ratio(r.pgdict.decompress_mbps, r.c.decompress_mbps)),
    );
}

fn main() {
    let options = parse_args().unwrap_or_else(|message| {
        eprintln!("vs_postgres: {message}");
        std::process::exit(2);
    });
    if !options.json {
        println!(
            "pglz, strategy {}, each datum compressed alone; C = {}",
            options.strategy_name,
            pgdict_pgref::PG_VERSION
        );
        print_table_header();
    }
    let mut all_identical = true;
    let mut speedups = (Vec::new(), Vec::new());
    for path in &options.paths {
        let datums = load_datums(path, options.slice).unwrap_or_else(|message| {
            eprintln!("vs_postgres: {message}");
            std::process::exit(1);
        });
        let name = path.display().to_string();
        let report = evaluate(name, &datums, &options).unwrap_or_else(|message| {
            eprintln!("vs_postgres: {}: {message}", path.display());
            std::process::exit(1);
        });
        all_identical &= report.identical;
        // Only what was measured: a file that stored nothing compressed has no decode speed.
        speedups
            .0
            .extend(ratio(report.pgdict.compress_mbps, report.c.compress_mbps));
        speedups.1.extend(ratio(
            report.pgdict.decompress_mbps,
            report.c.decompress_mbps,
        ));
        if options.json {
            println!("{}", json_line(&report, &options));
        } else {
            print_table_row(&report);
        }
    }
    if !options.json {
        // The middle value, or the mean of the two middle values of an even count.
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            let middle = v.len() / 2;
            ratio_cell(match v.len() {
                0 => None,
                n if n % 2 == 0 => Some((v[middle - 1] + v[middle]) / 2.0),
                _ => Some(v[middle]),
            })
        };
        println!(
            "median speed vs C: compress {}, decompress {}; output identical to C: {}",
            median(&mut speedups.0),
            median(&mut speedups.1),
            if all_identical {
                "yes, every datum"
            } else {
                "NO"
            }
        );
    }
    if !all_identical {
        std::process::exit(1);
    }
}
