//! The report of `compare` and `demo`: a table, or JSON.

use pgdict::datum::Codec;
use pgdict_trainer::source::{PageSample, ShortSample};
use pgdict_trainer::{round_to, SizeBucket};
use serde_json::{json, Map, Value};

use crate::measure::{Comparison, MethodResult, Stats, METHODS};
use crate::text::{counted, mb_s, percent, printable, ratio, thousands, times, Align, Table};

/// What was compared, besides the measurements.
pub struct Setup {
    /// The rows' source.
    pub input: String,
    /// Rows read.
    pub rows: u64,
    /// How a large PostgreSQL table was sampled by pages before the rows were read, if it was.
    pub page_sample: Option<PageSample>,
    /// A page sample of the table that held too few rows, if one did: it was read again.
    pub short_sample: Option<ShortSample>,
    /// Rows kept when more were read than would be used (`--max-rows`): a seeded, uniform
    /// sample, in input order, that the split and evaluation take their rows from.
    pub sampled: Option<usize>,
    /// Rows evaluated.
    pub evaluated: usize,
    /// Rows the dictionaries were trained on (`None`: they came from the store).
    pub train_rows: Option<usize>,
    /// How many evaluated rows are identical to a training row (`None`: no split): the split
    /// keeps rows apart, not values, and a dictionary stores a value it holds in a few bytes.
    pub repeated_eval_rows: Option<u64>,
    /// Each codec's dictionary, by codec number.
    pub dicts: [Option<DictSummary>; 3],
}

/// A dictionary used, for the report.
pub struct DictSummary {
    pub bytes: usize,
    pub id: Option<u32>,
    pub origin: String,
}

/// A size bucket's name and bounds (raw bytes, inclusive; `None`: no upper bound).
pub fn bucket_label(bucket: SizeBucket) -> (&'static str, u64, Option<u64>) {
    match bucket {
        SizeBucket::Under64 => ("< 64 B", 0, Some(63)),
        SizeBucket::To256 => ("64-256 B", 64, Some(255)),
        SizeBucket::To1K => ("256 B-1 KB", 256, Some(1023)),
        SizeBucket::To4K => ("1-4 KB", 1024, Some(4095)),
        SizeBucket::Over4K => (">= 4 KB", 4096, None),
    }
}

/// The note under every table.
const NOTE: &str = "\
ratio: raw bytes / stored bytes, whole datums (headers counted); vs pglz: plain pglz's stored
bytes (what PostgreSQL stores) / this method's; stored raw: datums kept uncompressed;
MB/s: of raw bytes, every datum written (compress) or read back (decompress)
zstd*: no dictionary is not a form pgdict stores; counted as the frame behind a 10-byte header
sizes: raw bytes, a range holding its first size and not its last (64-256 B: 64 to 255)";

pub fn table(setup: &Setup, comparison: &Comparison) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "rows: {} from {}\n",
        thousands(setup.rows),
        printable(setup.input.as_bytes())
    ));
    if let Some(pages) = setup.page_sample {
        out.push_str(&format!("      read from {pages}\n"));
    }
    if let Some(short) = setup.short_sample {
        out.push_str(&format!("note: {}\n", short.note(setup.page_sample)));
    }
    if let Some(kept) = setup.sampled {
        out.push_str(&format!(
            "      a sample of {} of them kept (seeded, uniform, in input order)\n",
            thousands(kept as u64)
        ));
    }
    let of_the_sample = if setup.sampled.is_some() {
        " of the sample"
    } else {
        ""
    };
    match setup.train_rows {
        Some(train) => out.push_str(&format!(
            "      {} (the 2nd, 4th, ...{of_the_sample}) trained the dictionaries, {} of the \
             others {} evaluated\n",
            thousands(train as u64),
            thousands(setup.evaluated as u64),
            if setup.evaluated == 1 { "was" } else { "were" },
        )),
        None => out.push_str(&format!(
            "      {} evaluated with dictionaries from the store\n",
            thousands(setup.evaluated as u64),
        )),
    }
    if let Some(repeated) = setup.repeated_eval_rows.filter(|&n| n > 0) {
        let note = pgdict_trainer::sample::held_out_repeats_note(
            repeated,
            setup.evaluated as u64,
            "evaluated",
        );
        out.push_str(&format!("note: {note}\n"));
    }
    out.push_str("dictionaries:\n");
    for codec in Codec::ALL {
        match &setup.dicts[codec.code() as usize] {
            Some(d) => out.push_str(&format!(
                "  {:<5} {:>6} bytes  {}\n",
                codec.name(),
                thousands(d.bytes as u64),
                printable(d.origin.as_bytes())
            )),
            None => out.push_str(&format!(
                "  {:<5} none (no {}+dict row)\n",
                codec.name(),
                codec.name()
            )),
        }
    }
    out.push('\n');
    let buckets: Vec<(usize, SizeBucket)> = SizeBucket::ALL
        .into_iter()
        .enumerate()
        .filter(|&(b, _)| comparison.pglz().buckets[b].datums > 0)
        .collect();
    let every = match buckets.as_slice() {
        [(_, only)] => format!(" (every datum is {})", bucket_label(*only).0),
        _ => String::new(),
    };
    out.push_str(&group_table(
        &format!("all sizes{every}: {}", group_size(&comparison.pglz().all)),
        comparison,
        |r| &r.all,
    ));
    if buckets.len() > 1 {
        for (b, bucket) in buckets {
            out.push('\n');
            out.push_str(&group_table(
                &format!(
                    "{}: {}",
                    bucket_label(bucket).0,
                    group_size(&comparison.pglz().buckets[b])
                ),
                comparison,
                |r| &r.buckets[b],
            ));
        }
    }
    out.push('\n');
    out.push_str(NOTE);
    out.push_str(&format!(
        "\ntimes: the median round of at least {} (and 0.25 s), the methods interleaved in each\n",
        comparison.min_rounds
    ));
    out
}

fn group_size(stats: &Stats) -> String {
    format!(
        "{}, {} raw bytes",
        counted(stats.datums, "datum"),
        thousands(stats.raw_bytes)
    )
}

fn group_table(
    title: &str,
    comparison: &Comparison,
    group: impl Fn(&MethodResult) -> &Stats,
) -> String {
    let mut table = Table::new(&[
        ("method", Align::Left),
        ("stored bytes", Align::Right),
        ("ratio", Align::Right),
        ("vs pglz", Align::Right),
        ("stored raw", Align::Right),
        ("compress MB/s", Align::Right),
        ("decompress MB/s", Align::Right),
    ]);
    let baseline = group(comparison.pglz());
    for result in &comparison.results {
        let stats = group(result);
        let label = if result.method == METHODS[4] {
            "zstd*".to_string()
        } else {
            result.method.label().to_string()
        };
        table.row(vec![
            label,
            thousands(stats.stored_bytes),
            ratio(stats.ratio()),
            times(stats.ratio_vs(baseline)),
            stats.raw_share().map_or("-".into(), percent),
            mb_s(stats.compress_mb_s()),
            mb_s(stats.decompress_mb_s()),
        ]);
    }
    format!("{title}\n{}", table.render())
}

fn stats_json(stats: &Stats, baseline: &Stats, storable: bool) -> Value {
    json!({
        "datums": stats.datums,
        "raw_bytes": stats.raw_bytes,
        "stored_bytes": stats.stored_bytes,
        "ratio": stats.ratio().map(|r| round_to(r, 4)),
        "ratio_vs_pglz": stats.ratio_vs(baseline).map(|r| round_to(r, 4)),
        "stored_raw_share": stats.raw_share().map(|r| round_to(r, 4)),
        "raw_datums": stats.raw_datums,
        "dict_datums": stats.dict_datums,
        "compress_mb_s": stats.compress_mb_s().map(|r| round_to(r, 1)),
        "decompress_mb_s": stats.decompress_mb_s().map(|r| round_to(r, 1)),
        "storable": storable,
    })
}

fn methods_json(comparison: &Comparison, group: impl Fn(&MethodResult) -> &Stats) -> Value {
    let baseline = group(comparison.pglz());
    let mut map = Map::new();
    for result in &comparison.results {
        let storable = result.method != METHODS[4];
        map.insert(
            result.method.key().into(),
            stats_json(group(result), baseline, storable),
        );
    }
    Value::Object(map)
}

pub fn json(setup: &Setup, comparison: &Comparison) -> Value {
    let mut dicts = Map::new();
    for codec in Codec::ALL {
        dicts.insert(
            codec.name().into(),
            match &setup.dicts[codec.code() as usize] {
                Some(d) => json!({"bytes": d.bytes, "id": d.id, "origin": d.origin}),
                None => Value::Null,
            },
        );
    }
    let pglz = comparison.pglz();
    let buckets: Vec<Value> = SizeBucket::ALL
        .into_iter()
        .enumerate()
        .map(|(b, bucket)| {
            let (label, min, max) = bucket_label(bucket);
            json!({
                "bucket": label,
                "min_bytes": min,
                "max_bytes": max,
                "datums": pglz.buckets[b].datums,
                "raw_bytes": pglz.buckets[b].raw_bytes,
                "methods": methods_json(comparison, |r| &r.buckets[b]),
            })
        })
        .collect();
    json!({
        "input": setup.input,
        "rows": setup.rows,
        "sampled_rows": setup.sampled,
        "table_sample_percent": setup.page_sample.map(|pages| pages.percent),
        "table_rows_estimate": setup.page_sample.map(|pages| pages.estimated_rows),
        "table_short_sample": setup.short_sample.map(|short| short.to_json()),
        "evaluated_rows": setup.evaluated,
        "split": if setup.train_rows.is_some() { "interleaved" } else { "none" },
        "train_rows": setup.train_rows,
        "eval_rows_identical_to_training_rows": setup.repeated_eval_rows,
        "min_rounds": comparison.min_rounds,
        "rounds": {
            "compress": comparison.rounds.compress,
            "decompress": comparison.rounds.decompress,
        },
        "dictionaries": dicts,
        "all": {
            "datums": pglz.all.datums,
            "raw_bytes": pglz.all.raw_bytes,
            "methods": methods_json(comparison, |r| &r.all),
        },
        "buckets": buckets,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::measure::Rounds;

    /// Stats of `datums` rows of `raw_bytes` in all, stored in `stored_bytes`, `raw_datums` of
    /// them raw, written in 2 ms and read back in 1 ms.
    fn stats(datums: u64, raw_bytes: u64, stored_bytes: u64, raw_datums: u64) -> Stats {
        Stats {
            datums,
            raw_bytes,
            stored_bytes,
            raw_datums,
            dict_datums: 0,
            compress_seconds: 0.002,
            decompress_seconds: 0.001,
        }
    }

    /// pglz, pglz+dict and zstd over 3 rows under 64 bytes and, with `large`, one of 256 B-1
    /// KB.
    pub(crate) fn comparison(large: bool) -> Comparison {
        // Stored bytes a small row, raw small rows, stored bytes of the large row.
        let stored = [(0, (30, 3, 430)), (1, (20, 2, 400)), (4, (25, 2, 410))];
        let results = stored
            .map(|(m, (small, raw, large_stored))| {
                let mut buckets = vec![Stats::default(); SizeBucket::ALL.len()];
                buckets[0] = stats(3, 90, 3 * small, raw);
                if large {
                    buckets[2] = stats(1, 1000, large_stored, 0);
                }
                let all = buckets.iter().sum();
                MethodResult {
                    method: METHODS[m],
                    all,
                    buckets,
                }
            })
            .to_vec();
        Comparison {
            results,
            min_rounds: 3,
            rounds: Rounds {
                compress: 4,
                decompress: 5,
            },
        }
    }

    /// Rows split and sampled, a pglz dictionary trained.
    fn trained() -> Setup {
        Setup {
            input: "rows\x1b.txt".into(),
            rows: 12_345,
            page_sample: None,
            short_sample: None,
            sampled: Some(8),
            evaluated: 4,
            train_rows: Some(4),
            repeated_eval_rows: Some(1),
            dicts: [
                Some(DictSummary {
                    bytes: 4096,
                    id: None,
                    origin: "trained".into(),
                }),
                None,
                None,
            ],
        }
    }

    /// One row of a page sample evaluated with a store's pglz dictionary.
    fn from_the_store() -> Setup {
        Setup {
            input: "table t".into(),
            rows: 1,
            page_sample: Some(PageSample {
                percent: 2.5,
                estimated_rows: 40_000,
            }),
            sampled: None,
            evaluated: 1,
            train_rows: None,
            repeated_eval_rows: None,
            dicts: [
                Some(DictSummary {
                    bytes: 4096,
                    id: Some(3),
                    origin: "dictionary 3".into(),
                }),
                None,
                None,
            ],
            ..trained()
        }
    }

    #[test]
    fn a_table_of_one_size() {
        let expected = "\
rows: 12,345 from rows\\u{1b}.txt
      a sample of 8 of them kept (seeded, uniform, in input order)
      4 (the 2nd, 4th, ... of the sample) trained the dictionaries, 4 of the others were evaluated
note: 1 of the 4 evaluated rows are identical to a training row: the gain measured on them is \
that of a value seen before (as where the column repeats values)
dictionaries:
  pglz   4,096 bytes  trained
  lz4   none (no lz4+dict row)
  zstd  none (no zstd+dict row)

all sizes (every datum is < 64 B): 3 datums, 90 raw bytes
method     stored bytes  ratio  vs pglz  stored raw  compress MB/s  decompress MB/s
pglz                 90   1.00    1.00x     100.0 %            0.0              0.1
pglz+dict            60   1.50    1.50x      66.7 %            0.0              0.1
zstd*                75   1.20    1.20x      66.7 %            0.0              0.1

";
        let table = table(&trained(), &comparison(false));
        let (head, note) = table.split_at(expected.len());
        assert_eq!(head, expected);
        assert_eq!(note, format!("{NOTE}\ntimes: the median round of at least 3 (and 0.25 s), the methods interleaved in each\n"));
    }

    #[test]
    fn a_table_of_sizes_has_one_of_every_size_with_rows_after_all() {
        let table = table(&from_the_store(), &comparison(true));
        let titles: Vec<&str> = table
            .lines()
            .filter(|line| line.contains("raw bytes"))
            .collect();
        let expected = [
            "all sizes: 4 datums, 1,090 raw bytes",
            "< 64 B: 3 datums, 90 raw bytes",
            "256 B-1 KB: 1 datum, 1,000 raw bytes",
            // The note's.
            "ratio: raw bytes / stored bytes, whole datums (headers counted); vs pglz: plain pglz's stored",
            "MB/s: of raw bytes, every datum written (compress) or read back (decompress)",
            "sizes: raw bytes, a range holding its first size and not its last (64-256 B: 64 to 255)",
        ];
        assert_eq!(titles, expected);
        let head = "\
rows: 1 from table t
      read from 2.5 % of its pages (TABLESAMPLE SYSTEM; about 40,000 rows in all)
      1 evaluated with dictionaries from the store
dictionaries:
  pglz   4,096 bytes  dictionary 3
  lz4   none (no lz4+dict row)
";
        assert!(table.starts_with(head), "{table}");
        let all = "\
pglz                520   2.10    1.00x      75.0 %            0.3              0.5
pglz+dict           460   2.37    1.13x      50.0 %            0.3              0.5
zstd*               485   2.25    1.07x      50.0 %            0.3              0.5
";
        assert!(table.contains(all), "{table}");
    }

    #[test]
    fn a_split_of_all_rows_with_no_repeats_says_so_and_no_more() {
        let one = Setup {
            sampled: None,
            evaluated: 1,
            repeated_eval_rows: Some(0),
            ..trained()
        };
        let table = table(&one, &comparison(false));
        let expected = "\
rows: 12,345 from rows\\u{1b}.txt
      4 (the 2nd, 4th, ...) trained the dictionaries, 1 of the others was evaluated
dictionaries:
";
        assert!(table.starts_with(expected), "{table}");
    }

    #[test]
    fn json_reports_every_size_and_method() {
        let trained = json(&trained(), &comparison(true));
        let at = |pointer: &str| trained.pointer(pointer).unwrap().clone();
        assert_eq!(at("/all/methods/pglz_dict/ratio"), json!(2.3696));
        assert_eq!(at("/all/methods/pglz_dict/ratio_vs_pglz"), json!(1.1304));
        assert_eq!(at("/all/methods/pglz_dict/stored_raw_share"), json!(0.5));
        assert_eq!(at("/all/methods/pglz/compress_mb_s"), json!(0.3));
        assert_eq!(at("/all/methods/pglz/decompress_mb_s"), json!(0.5));
        let storable =
            ["pglz", "pglz_dict", "zstd"].map(|m| at(&format!("/all/methods/{m}/storable")));
        assert_eq!(storable, [json!(true), json!(true), json!(false)]);
        let sizes: Vec<Value> = (0..5)
            .map(|b| at(&format!("/buckets/{b}/datums")))
            .collect();
        assert_eq!(sizes, [3, 0, 1, 0, 0].map(|n| json!(n)));
        assert_eq!(at("/buckets/1/methods/pglz/ratio"), Value::Null);
        assert_eq!(at("/buckets/4/min_bytes"), json!(4096));
        assert_eq!(at("/buckets/4/max_bytes"), Value::Null);
        assert_eq!(at("/split"), json!("interleaved"));
        assert_eq!(at("/sampled_rows"), json!(8));
        assert_eq!(at("/rounds"), json!({"compress": 4, "decompress": 5}));
        assert_eq!(
            at("/dictionaries/pglz"),
            json!({"bytes": 4096, "id": null, "origin": "trained"})
        );
        assert_eq!(at("/dictionaries/lz4"), Value::Null);
        let stored = json(&from_the_store(), &comparison(false));
        assert_eq!(stored["split"], json!("none"));
        assert_eq!(stored["train_rows"], Value::Null);
        assert_eq!(stored["table_sample_percent"], json!(2.5));
        assert_eq!(stored["table_rows_estimate"], json!(40_000));
        assert_eq!(stored["dictionaries"]["pglz"]["id"], json!(3));
    }
}
