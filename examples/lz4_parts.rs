//! Where the lz4 datum encoder's time goes: its two liblz4 calls timed apart, side by side with
//! PostgreSQL's C pglz in one process.
//!
//! ```text
//! cargo run --release --example lz4_parts -- [ROUNDS] ROWFILE...
//! ```
//!
//! The rows are split as `dict_ratio` splits them: zstd's trainer builds a 64 KB dictionary
//! from the odd rows, and the jobs run on the even rows (at most 3000 a file), one datum at a
//! time. Each job is timed against its yardstick with `measure::paired_ratio`: both once per
//! round, for ROUNDS rounds (default 30), and the median of the rounds' ratios (above 1.0: the
//! job is faster).
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
//! Second table, all files' rows pooled by size: `LZ4_compress_default` (its table cleared every
//! call) over [`Lz4Compressor::compress_into`], the measurement behind the compressor's
//! `PLAIN_CLEAR_TABLE_MIN`. The compressor clears its table itself from that size (512 bytes)
//! on, so those classes now read about 1.0; below it, the table shows what clearing would cost.
//! (Run against the compressor before it cleared any table, the classes from 512 bytes read
//! 1.05-1.24x: see the constant.)

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use pgdict::datum::{Codec, DatumDecoder, DatumEncoder, Dictionaries, PreparedDictionary};
use pgdict::lz4::{self, Lz4Compressor};
use pgdict::measure::{self, Job};

mod common;

/// The dictionary's size, as `dict_ratio`'s lz4 dictionary.
const DICT_SIZE: usize = 64 * 1024;
/// At most this many even rows of a file are compressed.
const MAX_ROWS: usize = 3000;
/// Size classes of the second table (bytes, each from one edge up to the next).
const SIZE_EDGES: [usize; 9] = [0, 128, 256, 384, 512, 1024, 2048, 4096, usize::MAX];

fn main() {
    let (rounds, args) = common::rounds_and_files("lz4_parts [ROUNDS] ROWFILE...", 30);
    let mut pooled: Vec<Vec<u8>> = Vec::new();
    println!("speed over C's default pglz_compress, median of {rounds} rounds");
    println!(
        "{:28} {:>8} {:>9} {:>8} {:>8} {:>9}",
        "input", "datum", "with_dict", "plain", "default", "best sum"
    );
    for file in &args {
        let rows = common::read_rows(file).unwrap_or_else(|e| common::fail(e));
        let (datums, samples) = common::interleaved_split(&rows, MAX_ROWS);
        let dict = ::zstd::dict::from_samples(&samples, DICT_SIZE)
            .unwrap_or_else(|e| common::fail(format!("{}: zstd's trainer: {e}", file.display())));
        let prepared = PreparedDictionary::new(1, &dict)
            .unwrap_or_else(|e| common::fail(format!("{}: {e}", file.display())));
        let prepared = Arc::new(prepared);
        check_outputs(&datums, &prepared)
            .unwrap_or_else(|e| common::fail(format!("{}: {e}", file.display())));
        let speeds = file_speeds(&datums, &prepared, rounds);
        let best_sum = 1.0 / (1.0 / speeds[1] + 1.0 / speeds[2]);
        let name = file.file_stem().unwrap_or_default().to_string_lossy();
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

/// Per job (datum encoder, dictionary call, plain call, `LZ4_compress_default`): its speed over
/// C's default `pglz_compress` on the same datums, paired round by round.
/// Checks what the jobs write before they are timed: the datum encoder's datums and the
/// dictionary call's blocks decode back to their rows, and `plain` writes `default`'s bytes.
fn check_outputs(datums: &[&[u8]], dict: &Arc<PreparedDictionary>) -> Result<(), String> {
    let (mut encoder, mut decoder) = (DatumEncoder::new(), DatumDecoder::new());
    let (mut with_dict, mut plain) = (Lz4Compressor::new(), Lz4Compressor::new());
    let dicts: Dictionaries = [dict.clone()].into_iter().collect();
    for (n, &d) in datums.iter().enumerate() {
        let wrong = |what: &str| Err(format!("row {}: {what}", 2 * n + 1));
        let stored = encoder
            .encode(d, Codec::Lz4, Some(dict))
            .map_err(|e| e.to_string())?;
        if decoder.decode(&stored, &dicts).as_deref() != Ok(d) {
            return wrong("the datum does not decode back");
        }
        let block = with_dict
            .compress_with_dict(d, dict.lz4())
            .map_err(|e| e.to_string())?;
        if lz4::decompress_with_dict(&block, d.len(), dict.lz4().as_bytes()).as_deref() != Ok(d) {
            return wrong("the block made with the dictionary does not decode back");
        }
        if plain.compress(d).ok() != lz4::compress(d).ok() {
            return wrong("plain and LZ4_compress_default wrote different bytes");
        }
    }
    Ok(())
}

fn file_speeds(datums: &[&[u8]], dict: &PreparedDictionary, rounds: usize) -> [f64; 4] {
    let strategy = pgdict_pgref::strategy_default();
    let mut c_out = Vec::new();
    let mut c: Job = Box::new(move || {
        let mut c = pgdict_pgref::exclusive();
        for d in datums {
            black_box(c.compress_into(d, &strategy, &mut c_out));
        }
    });
    let (mut encoder, mut with_dict, mut plain) = (
        DatumEncoder::new(),
        Lz4Compressor::new(),
        Lz4Compressor::new(),
    );
    let (mut out_datum, mut out_dict, mut out_plain, mut out_default) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut jobs: [Job; 4] = [
        Box::new(move || {
            for d in datums {
                out_datum.clear();
                black_box(encoder.encode_into(d, Codec::Lz4, Some(dict), &mut out_datum))
                    .expect("encode");
            }
        }),
        Box::new(move || {
            for d in datums {
                out_dict.clear();
                black_box(with_dict.compress_with_dict_into(d, dict.lz4(), &mut out_dict))
                    .expect("lz4 with dictionary");
            }
        }),
        Box::new(move || {
            for d in datums {
                out_plain.clear();
                black_box(plain.compress_into(d, &mut out_plain)).expect("lz4");
            }
        }),
        Box::new(move || {
            for d in datums {
                out_default.clear();
                black_box(lz4::compress_into(d, &mut out_default)).expect("lz4 default");
            }
        }),
    ];
    jobs.each_mut()
        .map(|job| measure::paired_ratio(job, &mut c, rounds, Duration::ZERO).0)
}

/// `LZ4_compress_default`'s (`lz4::compress_into`) speed over `Lz4Compressor::compress_into`'s
/// on `datums`, paired round by round.
fn cleared_over_reused(datums: &[&[u8]], rounds: usize) -> f64 {
    let mut compressor = Lz4Compressor::new();
    let (mut out_reused, mut out_cleared) = (Vec::new(), Vec::new());
    let mut reused: Job = Box::new(move || {
        for d in datums {
            out_reused.clear();
            black_box(compressor.compress_into(d, &mut out_reused)).expect("lz4");
        }
    });
    let mut cleared: Job = Box::new(move || {
        for d in datums {
            out_cleared.clear();
            black_box(lz4::compress_into(d, &mut out_cleared)).expect("lz4 default");
        }
    });
    measure::paired_ratio(&mut cleared, &mut reused, rounds, Duration::ZERO).0
}
