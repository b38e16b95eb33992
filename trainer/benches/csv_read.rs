//! Reading one column of CSV (`pgdict_trainer::source::read_rows`, what `compress`, `compare`
//! and the trainer run over a CSV file), per corpus row set, in COPY's default syntax and in
//! `QUOTE '''', ESCAPE '\'`.
//!
//! # Running
//!
//! ```text
//! cargo bench -p pgdict-trainer --bench csv_read                  # about a minute
//! cargo bench -p pgdict-trainer --bench csv_read -- --save-baseline before
//! cargo bench -p pgdict-trainer --bench csv_read -- --baseline before   # after a change
//! ```
//!
//! The corpus is read in place from `$PGDICT_CORPUS`, or else from `../shared/corpus` next to
//! the workspace; a missing corpus is an error, not an empty run.
//!
//! # What is measured
//!
//! Each line of a row set (as it is: JSON text, with its quotes) is the `body` of a record
//! `n,body` under a header `id,body`, written as `COPY ... TO` writes it
//! ([`CsvSyntax::write_field`]): JSON documents come out quoted, their quotes escaped. One
//! iteration reads every `body` (`csv_read/<set>/default`, `.../quote_escape`); throughput in
//! the CSV's bytes. COPY's default has read loops of its own (`trainer/src/source/csv.rs`):
//! the general loops read it 10-15 % slower.

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pgdict_trainer::source::{read_rows, Column, CsvOptions, CsvSyntax, Format};

#[path = "../tests/corpus/mod.rs"]
mod corpus;

/// The eight row sets of the shared corpus.
const ROW_SETS: [&str; 8] = [
    "csv_airports.txt",
    "html_stackexchange_bodies.jsonl",
    "json_geonames_cities.jsonl",
    "json_gsoc2018_projects.jsonl",
    "json_mdn_browser_compat.jsonl",
    "json_user_agents.jsonl",
    "text_debian_packages.jsonl",
    "text_fortunes.jsonl",
];

/// The lines of `rows` as the `body` column of a CSV in `syntax`.
fn csv_of(rows: &[u8], syntax: &CsvSyntax) -> Vec<u8> {
    let mut csv = b"id,body\n".to_vec();
    let lines = rows.split(|&b| b == b'\n').filter(|line| !line.is_empty());
    for (n, line) in lines.enumerate() {
        csv.extend_from_slice(format!("{n},").as_bytes());
        syntax.write_field(line, false, &mut csv);
        csv.push(b'\n');
    }
    csv
}

fn csv_read(c: &mut Criterion) {
    let syntaxes = [
        ("default", CsvSyntax::default()),
        (
            "quote_escape",
            CsvSyntax {
                quote: b'\'',
                escape: b'\\',
                ..CsvSyntax::default()
            },
        ),
    ];
    for set in ROW_SETS {
        let rows = std::fs::read(corpus::corpus_rows(set)).expect("the corpus row set reads");
        let name = set.split('.').next().unwrap_or(set);
        let mut group = c.benchmark_group(format!("csv_read/{name}"));
        for (syntax_name, syntax) in &syntaxes {
            let csv: Arc<[u8]> = csv_of(&rows, syntax).into();
            let format = Format::Csv(CsvOptions {
                syntax: syntax.clone(),
                ..CsvOptions::new(Column::Name("body".into()))
            });
            // What is timed must read the lines back, before it is timed.
            let read: Vec<Vec<u8>> = read_rows(Cursor::new(Arc::clone(&csv)), &format, "bench")
                .expect("the CSV opens")
                .collect::<Result<_, _>>()
                .expect("the CSV reads");
            let lines = rows.split(|&b| b == b'\n').filter(|line| !line.is_empty());
            assert!(
                read.iter().map(Vec::as_slice).eq(lines),
                "csv_read/{name}/{syntax_name}: the bodies read differ from the lines written"
            );
            group.throughput(Throughput::Bytes(csv.len() as u64));
            group.bench_function(*syntax_name, |b| {
                b.iter(|| {
                    let rows = read_rows(Cursor::new(Arc::clone(&csv)), &format, "bench");
                    let rows = rows.expect("the CSV opens");
                    rows.map(|row| row.expect("the CSV reads").len())
                        .sum::<usize>()
                });
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = csv_read
}
criterion_main!(benches);
