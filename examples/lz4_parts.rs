//! Where the lz4 datum encoder's time goes: its two liblz4 calls timed apart, side by side with
//! PostgreSQL's C pglz in one process.
//!
//! ```text
//! cargo run --release --example lz4_parts -- [ROUNDS] ROWFILE...
//! ```
//!
//! The rows are split as `dict_ratio` splits them: zstd's trainer builds a 64 KB dictionary
//! from the odd rows, and the jobs run on the even rows (at most 3000 a file). One round runs
//! each job once over those rows, one datum at a time; the jobs alternate within the round, and
//! each job's time is divided into C's time of the same round (so above 1.0 is faster than C)
//! before the median over the rounds (default 30) is taken.
//!
//! First table, per file, speed over C's default `pglz_compress`:
//!
//! - `datum`: the datum encoder, lz4 with the 64 KB dictionary (`dict_ratio`'s `lz4_dict`),
//!   which compresses each datum with the dictionary and plainly and keeps the smaller;
//! - `with_dict`, `plain`: those two calls alone ([`Lz4Compressor`]); the datum encoder can at
//!   best run at `1 / (1 / with_dict + 1 / plain)`;
//! - `default`: liblz4's `LZ4_compress_default` (what PostgreSQL calls: its hash table cleared
//!   every call), the bytes `plain` must equal.
//!
//! Second table, all files' rows pooled by size: `LZ4_compress_default` over
//! [`Lz4Compressor::compress_into`] (above 1.0: clearing the table every call would be faster
//! for inputs of that size), the measurement behind the compressor's `PLAIN_CLEAR_TABLE_MIN`.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use pgdict::datum::{Codec, DatumEncoder, PreparedDictionary};
use pgdict::lz4::{self, Lz4Compressor};

mod common;

/// The dictionary's size, as `dict_ratio`'s lz4 dictionary.
const DICT_SIZE: usize = 64 * 1024;
/// At most this many even rows of a file are compressed.
const MAX_ROWS: usize = 3000;
/// Size classes of the second table (bytes, each from one edge up to the next).
const SIZE_EDGES: [usize; 9] = [0, 128, 256, 384, 512, 1024, 2048, 4096, usize::MAX];

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = match args.first().map(|a| a.parse::<usize>()) {
        Some(Ok(n)) if n > 0 => {
            args.remove(0);
            n
        }
        _ => 30,
    };
    if args.is_empty() {
        eprintln!("usage: lz4_parts [ROUNDS] ROWFILE...");
        std::process::exit(2);
    }
    let mut pooled: Vec<Vec<u8>> = Vec::new();
    println!("speed over C's default pglz_compress, median of {rounds} rounds");
    println!(
        "{:28} {:>8} {:>9} {:>8} {:>8} {:>9}",
        "input", "datum", "with_dict", "plain", "default", "best sum"
    );
    for file in &args {
        let rows =
            pgdict::rows::read_row_file(Path::new(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let (datums, samples) = common::interleaved_split(&rows, MAX_ROWS);
        let dict = ::zstd::dict::from_samples(&samples, DICT_SIZE).expect("zstd training");
        let prepared = PreparedDictionary::new(1, &dict).expect("dictionary");
        let speeds = file_speeds(&datums, &prepared, rounds);
        let best_sum = 1.0 / (1.0 / speeds[1] + 1.0 / speeds[2]);
        let name = Path::new(file)
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy();
        println!(
            "{name:28} {:>7.2}x {:>8.2}x {:>7.2}x {:>7.2}x {:>8.2}x",
            speeds[0], speeds[1], speeds[2], speeds[3], best_sum
        );
        pooled.extend(datums.iter().map(|d| d.to_vec()));
    }
    println!();
    println!("LZ4_compress_default over Lz4Compressor::compress_into, rows pooled by size");
    for edge in SIZE_EDGES.windows(2) {
        let class: Vec<&[u8]> = pooled
            .iter()
            .filter(|r| (edge[0]..edge[1]).contains(&r.len()))
            .map(|r| &r[..])
            .collect();
        if !class.is_empty() {
            let upper = if edge[1] == usize::MAX {
                "".to_string()
            } else {
                edge[1].to_string()
            };
            println!(
                "{:>5}..{upper:<5} {:>6} rows {:>6.2}x",
                edge[0],
                class.len(),
                cleared_over_reused(&class, rounds)
            );
        }
    }
}

/// Per job (datum encoder, dictionary call, plain call, `LZ4_compress_default`): the median
/// over the rounds of C's time divided by the job's.
fn file_speeds(datums: &[&[u8]], dict: &PreparedDictionary, rounds: usize) -> [f64; 4] {
    let mut encoder = DatumEncoder::new();
    let mut compressor = Lz4Compressor::new();
    let strategy = pgdict_pgref::strategy_default();
    let mut out = Vec::new();
    let mut ratios: [Vec<f64>; 4] = Default::default();
    for _ in 0..rounds {
        let c = time(|| {
            let mut c = pgdict_pgref::exclusive();
            for d in datums {
                black_box(c.compress_into(d, &strategy, &mut out));
            }
        });
        let jobs = [
            time(|| {
                for d in datums {
                    out.clear();
                    black_box(encoder.encode_into(d, Codec::Lz4, Some(dict), &mut out))
                        .expect("encode");
                }
            }),
            time(|| {
                for d in datums {
                    out.clear();
                    black_box(compressor.compress_with_dict_into(d, dict.lz4(), &mut out))
                        .expect("lz4 with dictionary");
                }
            }),
            time(|| {
                for d in datums {
                    out.clear();
                    black_box(compressor.compress_into(d, &mut out)).expect("lz4");
                }
            }),
            time(|| {
                for d in datums {
                    out.clear();
                    black_box(lz4::compress_into(d, &mut out)).expect("lz4 default");
                }
            }),
        ];
        for (list, job) in ratios.iter_mut().zip(jobs) {
            list.push(c / job);
        }
    }
    ratios.map(median)
}

/// Median over the rounds of `Lz4Compressor::compress_into`'s time over
/// `LZ4_compress_default`'s (`lz4::compress_into`), alternated.
fn cleared_over_reused(datums: &[&[u8]], rounds: usize) -> f64 {
    let mut compressor = Lz4Compressor::new();
    let mut out = Vec::new();
    let mut ratios = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let reused = time(|| {
            for d in datums {
                out.clear();
                black_box(compressor.compress_into(d, &mut out)).expect("lz4");
            }
        });
        let cleared = time(|| {
            for d in datums {
                out.clear();
                black_box(lz4::compress_into(d, &mut out)).expect("lz4 default");
            }
        });
        ratios.push(reused / cleared);
    }
    median(ratios)
}

/// Seconds `job` takes.
fn time(job: impl FnOnce()) -> f64 {
    let start = Instant::now();
    job();
    start.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
