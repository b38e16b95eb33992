//! The report of `compare` and `demo`: a table, or JSON.

use pgdict::datum::Codec;
use pgdict_trainer::source::{PageSample, ShortSample};
use pgdict_trainer::SizeBucket;
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

fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

fn stats_json(stats: &Stats, baseline: &Stats, storable: bool) -> Value {
    json!({
        "datums": stats.datums,
        "raw_bytes": stats.raw_bytes,
        "stored_bytes": stats.stored_bytes,
        "ratio": stats.ratio().map(|r| round(r, 4)),
        "ratio_vs_pglz": stats.ratio_vs(baseline).map(|r| round(r, 4)),
        "stored_raw_share": stats.raw_share().map(|r| round(r, 4)),
        "raw_datums": stats.raw_datums,
        "dict_datums": stats.dict_datums,
        "compress_mb_s": stats.compress_mb_s().map(|r| round(r, 1)),
        "decompress_mb_s": stats.decompress_mb_s().map(|r| round(r, 1)),
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
