//! zstd with a dictionary: raw content against a zstd-format dictionary (entropy tables in
//! front of the same content), and compression levels, in stored bytes and speed.
//!
//! ```text
//! cargo run --release --example zstd_dictionaries -- [ROUNDS] ROWFILE...
//! ```
//!
//! The rows are split as `dict_ratio` splits them: zstd's trainer builds a 64 KB dictionary
//! from the odd rows, and the even rows (at most 3000 a file) are compressed one datum at a time
//! by the datum encoder with `Codec::Zstd`. The yardstick is the trained dictionary's last 4 KB
//! as raw content (no entropy tables) at level 3, what `dict_ratio`'s `zstd_dict` used until it
//! took zstd's tables (`tables L3` below). Each variant reports its whole stored datums against
//! the yardstick's, and its compression and decompression speed over the yardstick's
//! (`measure::paired_ratio`, ROUNDS rounds, default 20; above 1.0: faster). Every datum's round
//! trip is checked first.
//!
//! - `content L1`, `L-1`, `L5`: the same 4 KB at other levels;
//! - `tables L3`, `tables L1`: the same 4 KB with zstd's entropy tables in front
//!   (`ZDICT_finalizeDictionary` on the training rows, for that level), so each block can
//!   reuse the dictionary's tables instead of building new ones;
//! - `trained 4K L3`: zstd's trainer asked for 4 KB directly (tables and content, as
//!   `pgdict compare` trains zstd's dictionary, there at 64 KB).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use pgdict::datum::{Codec, DatumDecoder, DatumEncoder, Dictionaries, PreparedDictionary};
use pgdict::measure::{self, Job};

mod common;

/// The trained dictionary's size, as `dict_ratio`'s.
const TRAIN_SIZE: usize = 64 * 1024;
/// The part of its end kept as content (what pglz reaches).
const CONTENT_SIZE: usize = 4096;
/// At most this many even rows of a file are compressed.
const MAX_ROWS: usize = 3000;

fn main() {
    let (rounds, args) = common::rounds_and_files("zstd_dictionaries [ROUNDS] ROWFILE...", 20);
    println!("against the 4 KB content at level 3, median of {rounds} rounds");
    println!(
        "{:26} {:>14} {:>8} {:>10} {:>8} {:>9} {:>9}",
        "input", "variant", "dict", "stored", "bytes", "compress", "decode"
    );
    for file in &args {
        let rows = common::read_rows(file).unwrap_or_else(|e| common::fail(e));
        let (datums, samples) = common::interleaved_split(&rows, MAX_ROWS);
        let train = |size| {
            ::zstd::dict::from_samples(&samples, size).unwrap_or_else(|e| {
                common::fail(format!("{}: zstd's trainer: {e}", file.display()))
            })
        };
        let trained = train(TRAIN_SIZE);
        let content = &trained[trained.len().saturating_sub(CONTENT_SIZE)..];
        let variants: Vec<(&str, Vec<u8>, i32)> = vec![
            ("content L1", content.to_vec(), 1),
            ("content L-1", content.to_vec(), -1),
            ("content L5", content.to_vec(), 5),
            ("tables L3", tables(content, &samples, 3), 3),
            ("tables L1", tables(content, &samples, 1), 1),
            ("trained 4K L3", train(CONTENT_SIZE), 3),
        ];
        let name = file.file_stem().unwrap_or_default().to_string_lossy();
        let base = Encoded::new(&datums, content, 3);
        for (label, bytes, level) in &variants {
            let variant = Encoded::new(&datums, bytes, *level);
            let (compress, decode) = speeds(&datums, &variant, &base, rounds);
            let stored_change = variant.stored() as f64 / base.stored() as f64 - 1.0;
            println!(
                "{name:26} {label:>14} {:>8} {:>10} {:>+7.1}% {:>8.2}x {:>8.2}x",
                bytes.len(),
                variant.stored(),
                stored_change * 100.0,
                compress,
                decode
            );
        }
        println!(
            "{name:26} {:>14} {:>8} {:>10}",
            "(yardstick)",
            content.len(),
            base.stored()
        );
    }
}

/// [`common::with_zstd_tables`], or the end of the run.
fn tables(content: &[u8], samples: &[&[u8]], level: i32) -> Vec<u8> {
    common::with_zstd_tables(content, samples, level).unwrap_or_else(|e| panic!("{e}"))
}

/// A dictionary prepared at one level, and every datum encoded with it (round trip checked).
struct Encoded {
    dict: Arc<PreparedDictionary>,
    dicts: Dictionaries,
    datums: Vec<u8>,
    ends: Vec<usize>,
}

impl Encoded {
    fn new(rows: &[&[u8]], dict: &[u8], level: i32) -> Encoded {
        let dict = Arc::new(PreparedDictionary::with_zstd_level(1, dict, level).expect("prepare"));
        let mut dicts = Dictionaries::new();
        dicts.insert(dict.clone());
        let mut encoder = DatumEncoder::new();
        let mut decoder = DatumDecoder::new();
        let (mut datums, mut ends) = (Vec::new(), Vec::new());
        for row in rows {
            let start = datums.len();
            encoder
                .encode_into(row, Codec::Zstd, Some(&dict), &mut datums)
                .expect("encode");
            let back = decoder.decode(&datums[start..], &dicts).expect("decode");
            assert!(back == *row, "round trip changed a row");
            ends.push(datums.len());
        }
        Encoded {
            dict,
            dicts,
            datums,
            ends,
        }
    }

    fn stored(&self) -> usize {
        self.datums.len()
    }
}

/// Compression and decompression speed of `variant` over `base`, round by round.
fn speeds(rows: &[&[u8]], variant: &Encoded, base: &Encoded, rounds: usize) -> (f64, f64) {
    let (compress, _) = measure::paired_ratio(
        &mut compress_job(rows, variant),
        &mut compress_job(rows, base),
        rounds,
        Duration::ZERO,
    );
    let (decode, _) = measure::paired_ratio(
        &mut decode_job(variant),
        &mut decode_job(base),
        rounds,
        Duration::ZERO,
    );
    (compress, decode)
}

/// One round: every row through the datum encoder with `encoded`'s dictionary.
fn compress_job<'a>(rows: &'a [&'a [u8]], encoded: &'a Encoded) -> Job<'a> {
    let mut encoder = DatumEncoder::new();
    let mut out = Vec::new();
    Box::new(move || {
        for row in rows {
            out.clear();
            encoder
                .encode_into(row, Codec::Zstd, Some(&encoded.dict), &mut out)
                .expect("encode");
            black_box(&out);
        }
    })
}

/// One round: every datum of `encoded` through the datum decoder.
fn decode_job(encoded: &Encoded) -> Job<'_> {
    let mut decoder = DatumDecoder::new();
    let mut out = Vec::new();
    Box::new(move || {
        let mut start = 0;
        for &end in &encoded.ends {
            decoder
                .decode_into(&encoded.datums[start..end], &encoded.dicts, &mut out)
                .expect("decode");
            black_box(&out);
            start = end;
        }
    })
}
