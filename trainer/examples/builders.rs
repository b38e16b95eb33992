//! The dictionary builders compared: zstd's trainer (the baseline) against pgdict's builder,
//! for pglz (4 KB) and lz4 (64 KB).
//!
//! ```text
//! cargo run --release -p pgdict-trainer --example builders -- [--no-timing] ROWFILE...
//! ```
//!
//! Each ROWFILE (`.txt`: one datum per line; `.jsonl`: a JSON string is its decoded text, any
//! other value its line) is split interleaved: the odd rows (index 1, 3, ...) train, the even
//! rows (0, 2, ...) are evaluated, each compressed alone by pgdict's datum encoder with the
//! dictionary (id 1). Ratio = raw bytes / stored bytes, whole stored datums counted (the
//! encoder keeps the smallest of raw, plain and dictionary form).
//!
//! Builders (all trained on the same odd rows):
//!
//! - `zstd4k`: `zstd::dict::from_samples(rows, 4096)`, whole (its header and entropy tables
//!   included), for pglz;
//! - `zstd64k`: `zstd::dict::from_samples(rows, 65536)`: its last 4096 bytes for pglz, all of
//!   it for lz4. The pglz baseline is the better of the two by geometric mean (printed);
//! - `pgdict`: `Builder::Pgdict.build(rows, codec, size)` for pglz (4096) and lz4 (65536).
//!
//! The last table times each builder; unless `--no-timing`, it also times pgdict's 4 KB pglz
//! build from 10,000 rows (or all the rows of a smaller file), every row of the file being a
//! candidate, as the trainer would sample them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pgdict::datum::Codec;
use pgdict::measure::geometric_mean;
use pgdict_trainer::build::{self, Builder};
use pgdict_trainer::eval::{ratio, stored_bytes};

const PGLZ_SIZE: usize = 4096;
const LZ4_SIZE: usize = 64 * 1024;
const TIMED_ROWS: usize = 10_000;

/// pglz gain target (pgdict over the baseline, geometric mean of ratios) and lz4's.
const PGLZ_TARGET: f64 = 1.08;
const LZ4_TARGET: f64 = 1.05;

struct SetResult {
    name: String,
    eval_rows: usize,
    raw: usize,
    pglz_plain: usize,
    pglz_zstd4k: usize,
    pglz_zstd64k: usize,
    pglz_pgdict: usize,
    pglz_pgdict_len: usize,
    lz4_plain: usize,
    lz4_zstd: usize,
    lz4_pgdict: usize,
    lz4_pgdict_len: usize,
    time_zstd4k: Duration,
    time_zstd64k: Duration,
    time_pglz: Duration,
    time_lz4: Duration,
    /// Rows and time of the 10,000-row pglz build.
    timed: Option<(usize, usize, Duration)>,
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn run(path: &Path, rows: &[Vec<u8>], timing: bool) -> anyhow::Result<SetResult> {
    // Every odd row trains (no cap on their bytes, unlike dict_ratio's split: the builders are
    // compared with one another here, on the same rows).
    let train: Vec<&[u8]> = rows.iter().skip(1).step_by(2).map(|r| &r[..]).collect();
    let eval: Vec<&[u8]> = rows.iter().step_by(2).map(|r| &r[..]).collect();
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into(),
    );

    let (zstd4k, time_zstd4k) = timed(|| build::zstd::train(&train, PGLZ_SIZE));
    let zstd4k = zstd4k?;
    let (zstd64k, time_zstd64k) = timed(|| build::zstd::train(&train, LZ4_SIZE));
    let zstd64k = zstd64k?;
    let zstd64k_tail = &zstd64k[zstd64k.len().saturating_sub(PGLZ_SIZE)..];
    let (pglz_dict, time_pglz) = timed(|| Builder::Pgdict.build(&train, Codec::Pglz, PGLZ_SIZE));
    let pglz_dict = pglz_dict?;
    let (lz4_dict, time_lz4) = timed(|| Builder::Pgdict.build(&train, Codec::Lz4, LZ4_SIZE));
    let lz4_dict = lz4_dict?;

    let timed_build = if timing {
        // Every row of the file is a candidate; take TIMED_ROWS of them evenly.
        let n = rows.len().min(TIMED_ROWS);
        let sample: Vec<&[u8]> = (0..n).map(|i| &rows[i * rows.len() / n][..]).collect();
        let bytes = sample.iter().map(|r| r.len()).sum();
        let (dict, time) = timed(|| Builder::Pgdict.build(&sample, Codec::Pglz, PGLZ_SIZE));
        dict?;
        Some((sample.len(), bytes, time))
    } else {
        None
    };

    Ok(SetResult {
        name,
        eval_rows: eval.len(),
        raw: eval.iter().map(|r| r.len()).sum(),
        pglz_plain: stored_bytes(&eval, Codec::Pglz, None)?,
        pglz_zstd4k: stored_bytes(&eval, Codec::Pglz, Some(&zstd4k))?,
        pglz_zstd64k: stored_bytes(&eval, Codec::Pglz, Some(zstd64k_tail))?,
        pglz_pgdict: stored_bytes(&eval, Codec::Pglz, Some(&pglz_dict))?,
        pglz_pgdict_len: pglz_dict.len(),
        lz4_plain: stored_bytes(&eval, Codec::Lz4, None)?,
        lz4_zstd: stored_bytes(&eval, Codec::Lz4, Some(&zstd64k))?,
        lz4_pgdict: stored_bytes(&eval, Codec::Lz4, Some(&lz4_dict))?,
        lz4_pgdict_len: lz4_dict.len(),
        time_zstd4k,
        time_zstd64k,
        time_pglz,
        time_lz4,
        timed: timed_build,
    })
}

fn main() -> anyhow::Result<()> {
    let mut timing = true;
    let mut paths = Vec::new();
    // `args_os`: `args` panics on a file name that is not UTF-8.
    for arg in std::env::args_os().skip(1) {
        match arg.to_str().unwrap_or_default() {
            "--no-timing" => timing = false,
            "-h" | "--help" => {
                println!("usage: builders [--no-timing] ROWFILE...");
                return Ok(());
            }
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    anyhow::ensure!(
        !paths.is_empty(),
        "usage: builders [--no-timing] ROWFILE..."
    );

    let mut results = Vec::new();
    for path in &paths {
        // The error names the file.
        let rows = pgdict::rows::read_row_file(path)?;
        let result =
            run(path, &rows, timing).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        eprintln!("builders: {} done", result.name);
        results.push(result);
    }

    println!("ratio = raw / stored bytes of the even rows, each alone, whole datums counted");
    println!(
        "{:<28} {:>6} {:>9} | {:>6} {:>7} {:>7} {:>7} {:>7} | {:>6} {:>7} {:>7} {:>7}",
        "input",
        "rows",
        "raw",
        "pglz",
        "zstd4k",
        "zstd64k",
        "pgdict",
        "gain",
        "lz4",
        "zstd64k",
        "pgdict",
        "gain"
    );
    let r = |a: usize, s: usize| ratio(a, s);
    for s in &results {
        let base = r(s.raw, s.pglz_zstd4k).max(r(s.raw, s.pglz_zstd64k));
        println!(
            "{:<28} {:>6} {:>9} | {:>6.2} {:>7.2} {:>7.2} {:>7.2} {:>+6.1}% | {:>6.2} {:>7.2} {:>7.2} {:>+6.1}%",
            s.name,
            s.eval_rows,
            s.raw,
            r(s.raw, s.pglz_plain),
            r(s.raw, s.pglz_zstd4k),
            r(s.raw, s.pglz_zstd64k),
            r(s.raw, s.pglz_pgdict),
            (r(s.raw, s.pglz_pgdict) / base - 1.0) * 100.0,
            r(s.raw, s.lz4_plain),
            r(s.raw, s.lz4_zstd),
            r(s.raw, s.lz4_pgdict),
            (r(s.raw, s.lz4_pgdict) / r(s.raw, s.lz4_zstd) - 1.0) * 100.0,
        );
    }
    let geo = |f: fn(&SetResult) -> usize| geometric_mean(results.iter().map(|s| r(s.raw, f(s))));
    let g_plain = geo(|s| s.pglz_plain);
    let g_4k = geo(|s| s.pglz_zstd4k);
    let g_64k = geo(|s| s.pglz_zstd64k);
    let g_pglz = geo(|s| s.pglz_pgdict);
    let g_lz4_plain = geo(|s| s.lz4_plain);
    let g_lz4_zstd = geo(|s| s.lz4_zstd);
    let g_lz4 = geo(|s| s.lz4_pgdict);
    let (base_name, g_base) = if g_64k >= g_4k {
        ("zstd64k (last 4 KB of a 64 KB dictionary)", g_64k)
    } else {
        ("zstd4k (a 4 KB dictionary)", g_4k)
    };
    println!(
        "{:<28} {:>6} {:>9} | {:>6.2} {:>7.2} {:>7.2} {:>7.2} {:>+6.1}% | {:>6.2} {:>7.2} {:>7.2} {:>+6.1}%",
        "geometric mean",
        "",
        "",
        g_plain,
        g_4k,
        g_64k,
        g_pglz,
        (g_pglz / g_base - 1.0) * 100.0,
        g_lz4_plain,
        g_lz4_zstd,
        g_lz4,
        (g_lz4 / g_lz4_zstd - 1.0) * 100.0,
    );
    println!();
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!(
        "pglz baseline: {base_name}; pgdict/baseline {:.3}x (target >= {PGLZ_TARGET}: {})",
        g_pglz / g_base,
        verdict(g_pglz / g_base >= PGLZ_TARGET)
    );
    println!(
        "lz4 baseline: zstd64k (64 KB); pgdict/baseline {:.3}x (target >= {LZ4_TARGET}: {})",
        g_lz4 / g_lz4_zstd,
        verdict(g_lz4 / g_lz4_zstd >= LZ4_TARGET)
    );

    println!();
    println!("build seconds (training rows = odd rows) and pgdict dictionary bytes");
    println!(
        "{:<28} {:>8} {:>8} {:>10} {:>10} {:>6} {:>6} | {:>24}",
        "input",
        "zstd4k",
        "zstd64k",
        "pgdict/pglz",
        "pgdict/lz4",
        "pglz B",
        "lz4 B",
        "pglz build from N rows"
    );
    for s in &results {
        let timed = s.timed.map_or_else(String::new, |(rows, bytes, time)| {
            format!(
                "{rows} rows, {:.1} MB: {:.2}s",
                bytes as f64 / 1e6,
                time.as_secs_f64()
            )
        });
        println!(
            "{:<28} {:>8.2} {:>8.2} {:>10.2} {:>10.2} {:>6} {:>6} | {:>24}",
            s.name,
            s.time_zstd4k.as_secs_f64(),
            s.time_zstd64k.as_secs_f64(),
            s.time_pglz.as_secs_f64(),
            s.time_lz4.as_secs_f64(),
            s.pglz_pgdict_len,
            s.lz4_pgdict_len,
            timed,
        );
    }
    Ok(())
}
