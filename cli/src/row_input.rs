//! Reading a row input (`compress`, `compare`) through the trainer's sources: a file of
//! lines, JSON Lines, a datums file, a CSV column, a directory, standard input, or a
//! PostgreSQL column.

use std::io::IsTerminal;

use anyhow::Context;
use pgdict_trainer::progress::{InputProgress, Phase, Progress};
use pgdict_trainer::source::{self, CsvColumn, CsvOptions, Format, PgSource, SourceSpec};

use crate::fail::user_error;
use crate::text::thousands;
use crate::{RowFormatArg, RowInput};

/// The source a row input names. `rows_wanted` is how many rows the caller will use, if it
/// knows: a PostgreSQL table much larger than that is sampled by pages (see
/// [`source`]), a file is read whole.
pub fn row_source(input: &RowInput, rows_wanted: Option<u64>) -> anyhow::Result<SourceSpec> {
    if let Some(conninfo) = &input.pg_source {
        return Ok(SourceSpec::Postgres(PgSource {
            conninfo: conninfo.clone(),
            // clap makes --pg-source require both.
            table: input.table.clone().unwrap_or_default(),
            column: input.column.clone().unwrap_or_default(),
            rows_wanted,
            seed: 0,
        }));
    }
    let format = match (input.format, &input.csv_column) {
        (None, None) => None,
        (Some(RowFormatArg::Lines), None) => Some(Format::Lines),
        (Some(RowFormatArg::Jsonl), None) => Some(Format::JsonLines),
        (Some(RowFormatArg::Datums), None) => Some(Format::Datums),
        (Some(RowFormatArg::Csv) | None, Some(column)) => {
            let mut options = CsvOptions::new(CsvColumn::parse(column));
            options.has_header = !input.csv_no_header;
            Some(Format::Csv(options))
        }
        (Some(RowFormatArg::Csv), None) => {
            return Err(user_error(
                "--format csv needs a column",
                "name it with --csv-column NAME (from the header line) or a 0-based index",
            ))
        }
        (Some(other), Some(_)) => {
            return Err(user_error(
                format!("--csv-column reads CSV, but --format says {other:?}"),
                "drop --format (or say --format csv)",
            ))
        }
    };
    let spec = SourceSpec::from_arg(&input.input, format);
    if matches!(spec, SourceSpec::Stdin(_)) {
        note_terminal_stdin("rows");
    }
    Ok(spec)
}

/// Says so when standard input, about to be read, is a terminal: a command run without its
/// input file would otherwise wait without a word.
pub fn note_terminal_stdin(what: &str) {
    if std::io::stdin().is_terminal() {
        eprintln!("pgdict: reading {what} from standard input (a terminal); end with Ctrl-D");
    }
}

/// Every row of a row input, in order (of a PostgreSQL table sampled by pages, about
/// `rows_wanted` or more, see [`row_source`]). The source's note, if any, goes to stderr;
/// `progress` counts the bytes read, or the rows when the input's size is not known.
pub fn read_rows(
    input: &RowInput,
    rows_wanted: Option<u64>,
    progress: &dyn Progress,
) -> anyhow::Result<(SourceSpec, Vec<Vec<u8>>)> {
    let spec = row_source(input, rows_wanted)?;
    let what = spec.describe();
    let rows = source::open(&spec)
        .and_then(|rows| {
            print_note(&rows);
            collect_rows(rows, progress)
        })
        .with_context(|| format!("cannot read the rows of {what}"))?;
    Ok((spec, rows))
}

fn collect_rows(
    mut rows: source::Rows,
    progress: &dyn Progress,
) -> Result<Vec<Vec<u8>>, source::SourceError> {
    let mut step = InputProgress::begin(progress, Phase::Reading, rows.input_len());
    let mut all = Vec::new();
    while let Some(row) = rows.next() {
        all.push(row?);
        step.item(|| rows.input_read());
    }
    step.end(
        || rows.input_read(),
        &format!("{} rows", thousands(all.len() as u64)),
    );
    Ok(all)
}

/// Says what a source notes about its rows (a PostgreSQL column read as text that is not
/// what PostgreSQL stores): the measurements are of those rows.
pub fn print_note(rows: &source::Rows) {
    if let Some(note) = rows.note() {
        eprintln!("pgdict: note: {note}");
    }
}
