//! Reading a row input (`compress`, `compare`) through the trainer's sources: a file of
//! lines, JSON Lines, a datums file, a CSV column, COPY data, a directory, standard input, or
//! a PostgreSQL column.

use std::io::IsTerminal;

use anyhow::Context;
use pgdict_trainer::progress::{InputProgress, Phase, Progress};
use pgdict_trainer::sample::{Limits, Sampler};
use pgdict_trainer::source::{self, PgSource, SourceSpec};

use crate::fail::usage_error;
use crate::in_order::ItemReader;
use crate::text::{counted, thousands};
use crate::RowInput;

/// The source a row input names. `rows_wanted` is how many rows the caller will use, if it
/// knows: a PostgreSQL table much larger than that is sampled by pages (see
/// [`source`]), a file is read whole (and sampled as it is read: [`read_rows`]).
pub fn row_source(input: &RowInput, rows_wanted: Option<u64>) -> anyhow::Result<SourceSpec> {
    if let Some(conninfo) = &input.pg_source {
        return Ok(SourceSpec::Postgres(PgSource {
            conninfo: conninfo.clone(),
            // clap makes --pg-source require both.
            table: input.table.clone().unwrap_or_default(),
            column: input.column.clone().unwrap_or_default(),
            rows_wanted,
            bytes_wanted: None,
            seed: 0,
        }));
    }
    let format = (input.columns)
        .format(input.format)
        .map_err(|conflict| usage_error(conflict.message, conflict.hint))?;
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

/// The rows a row input gave: every row, or a sample of them.
pub struct ReadRows {
    /// The source they came from.
    pub spec: SourceSpec,
    /// The rows kept, in input order.
    pub rows: Vec<Vec<u8>>,
    /// Rows read from the source (more than `rows.len()` when a sample was kept).
    pub rows_read: u64,
    /// How a large PostgreSQL table was sampled by pages before its rows were read, if it was.
    pub page_sample: Option<source::PageSample>,
    /// A page sample of the table that held too few rows, if one did: it was read again.
    pub short_sample: Option<source::ShortSample>,
}

/// The seed of [`read_rows`]'s sample: the same input gives the same rows on every run.
const SAMPLE_SEED: u64 = 0;

/// The rows of a row input, in order. With `rows_wanted`, at most that many are kept: a
/// seeded, uniform sample of the rows read, held in memory as the input streams by (the
/// trainer's [`Sampler`]), so a file far larger than memory can be sampled. A PostgreSQL table
/// much larger than that is first sampled by pages (see [`row_source`]). The source's note, if
/// any, goes to stderr; `progress` counts the bytes read, or the rows when the input's size is
/// not known.
pub fn read_rows(
    input: &RowInput,
    rows_wanted: Option<u64>,
    progress: &dyn Progress,
) -> anyhow::Result<ReadRows> {
    let spec = row_source(input, rows_wanted)?;
    let what = spec.describe();
    let (rows, rows_read, page_sample, short_sample) = source::open(&spec)
        .and_then(|mut rows| {
            print_note(&rows);
            let (kept, read) = collect_rows(&mut rows, rows_wanted, progress)?;
            Ok((kept, read, rows.page_sample(), rows.short_sample()))
        })
        .with_context(|| format!("cannot read the rows of {what}"))?;
    Ok(ReadRows {
        spec,
        rows,
        rows_read,
        page_sample,
        short_sample,
    })
}

fn collect_rows(
    rows: &mut source::Rows,
    rows_wanted: Option<u64>,
    progress: &dyn Progress,
) -> Result<(Vec<Vec<u8>>, u64), source::SourceError> {
    // A pass that ends short (a PostgreSQL page sample with fewer rows than wanted) is
    // followed by another, whose rows replace its own.
    let (kept, read, step) = loop {
        let mut step = InputProgress::begin(progress, Phase::Reading, rows.input_len());
        let (kept, read) = match rows_wanted {
            None => {
                let mut all = Vec::new();
                while let Some(row) = rows.next() {
                    all.push(row?);
                    step.item(|| rows.input_read());
                }
                let read = all.len() as u64;
                (all, read)
            }
            Some(wanted) => {
                let limits = Limits {
                    max_rows: usize::try_from(wanted).unwrap_or(usize::MAX),
                    max_bytes: usize::MAX,
                };
                // Every row on the training side of the sampler: one reservoir, nothing held
                // out.
                let mut sampler = Sampler::new(SAMPLE_SEED, limits, Limits::UNBOUNDED, 0.0);
                while let Some(row) = rows.next() {
                    sampler.push(&row?);
                    step.item(|| rows.input_read());
                }
                let sample = sampler.finish();
                (sample.train, sample.rows_seen)
            }
        };
        if !rows.next_pass() {
            break (kept, read, step);
        }
        let summary = format!("{}: too few, read again", counted(read, "row"));
        step.end(|| rows.input_read(), &summary);
    };
    let summary = if kept.len() as u64 == read {
        counted(read, "row")
    } else {
        format!(
            "{}, a sample of {} kept",
            counted(read, "row"),
            thousands(kept.len() as u64)
        )
    };
    step.end(|| rows.input_read(), &summary);
    Ok((kept, read))
}

/// The items of an opened source ([`source::Rows`]: rows, or COPY records), read one at a time
/// for [`crate::in_order::run`], with progress.
pub struct SourceItems<'a, T> {
    pub items: source::Rows<T>,
    pub step: InputProgress<'a>,
    /// An item's size in bytes, for batching.
    size: fn(&T) -> usize,
}

impl<'a, T> SourceItems<'a, T> {
    /// `items`, their progress shown as `phase` on `progress`.
    pub fn new(
        items: source::Rows<T>,
        progress: &'a dyn Progress,
        phase: Phase,
        size: fn(&T) -> usize,
    ) -> Self {
        let step = InputProgress::begin(progress, phase, items.input_len());
        SourceItems { items, step, size }
    }

    /// Ends the progress display with `summary`.
    pub fn end(self, summary: &str) {
        let SourceItems { items, step, .. } = self;
        step.end(|| items.input_read(), summary);
    }
}

impl<T: Send> ItemReader for SourceItems<'_, T> {
    type Item = T;

    fn next_item(&mut self) -> Option<anyhow::Result<(T, usize)>> {
        let item = self.items.next()?;
        self.step.item(|| self.items.input_read());
        Some(item.map_err(Into::into).map(|item| {
            let size = (self.size)(&item);
            (item, size)
        }))
    }

    fn may_wait(&self) -> bool {
        self.items.may_wait()
    }
}

/// Says what a source notes about its rows (a PostgreSQL column read as text that is not
/// what PostgreSQL stores): the measurements are of those rows.
pub fn print_note(rows: &source::Rows) {
    if let Some(note) = rows.note() {
        eprintln!("pgdict: note: {note}");
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use pgdict_trainer::progress::NoProgress;

    use super::*;

    /// The messages a progress display ended with.
    #[derive(Default)]
    struct Ends(std::cell::RefCell<Vec<String>>);

    impl Progress for Ends {
        fn end(&self, message: &str) {
            self.0.borrow_mut().push(message.into());
        }
    }

    /// The rows of a file of `n` numbered lines, opened.
    fn numbered_rows(n: usize) -> (tempfile::NamedTempFile, source::Rows) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        for i in 0..n {
            writeln!(file, "row {i}").unwrap();
        }
        file.flush().unwrap();
        let spec = SourceSpec::from_arg(file.path(), Some(source::Format::Lines));
        let rows = source::open(&spec).unwrap();
        (file, rows)
    }

    /// The rows `collect_rows` keeps of a file of `n` numbered lines, and how many it read.
    fn collect(n: usize, rows_wanted: Option<u64>) -> (Vec<usize>, u64) {
        let (_file, mut rows) = numbered_rows(n);
        let (kept, read) = collect_rows(&mut rows, rows_wanted, &NoProgress).unwrap();
        let numbers = kept
            .iter()
            .map(|row| std::str::from_utf8(&row[4..]).unwrap().parse().unwrap())
            .collect();
        (numbers, read)
    }

    #[test]
    fn the_progress_ends_saying_how_many_rows_were_read_and_kept() {
        for (rows_wanted, summary) in [
            (None, "2,000 rows"),
            (Some(3000), "2,000 rows"),
            (Some(600), "2,000 rows, a sample of 600 kept"),
        ] {
            let (_file, mut rows) = numbered_rows(2000);
            let ends = Ends::default();
            collect_rows(&mut rows, rows_wanted, &ends).unwrap();
            assert_eq!(ends.0.take(), [summary]);
        }
    }

    #[test]
    fn source_items_are_handed_out_sized_and_end_their_progress() {
        let (_file, rows) = numbered_rows(3);
        let ends = Ends::default();
        let mut items =
            SourceItems::new(rows, &ends, Phase::Reading, |row: &Vec<u8>| 10 * row.len());
        let mut read = Vec::new();
        while let Some(item) = items.next_item() {
            read.push(item.unwrap());
        }
        let row = |i: usize| format!("row {i}").into_bytes();
        assert_eq!(read, [(row(0), 50), (row(1), 50), (row(2), 50)]);
        items.end("3 rows");
        assert_eq!(ends.0.take(), ["3 rows"]);
    }

    #[test]
    fn without_a_cap_every_row_is_kept_in_order() {
        let (kept, read) = collect(1000, None);
        assert_eq!(kept, (0..1000).collect::<Vec<_>>());
        assert_eq!(read, 1000);
    }

    #[test]
    fn with_a_cap_a_sample_from_the_whole_input_is_kept_in_order() {
        let (kept, read) = collect(20_000, Some(600));
        assert_eq!(read, 20_000);
        assert_eq!(kept.len(), 600);
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "not in input order");
        // Uniform over the input, not its first rows: each tenth of the file gives about 60
        // rows (binomial, n = 600, p = 0.1: 30..90 is over 4.5 standard deviations).
        for tenth in 0..10 {
            let here = kept.iter().filter(|&&i| i / 2000 == tenth).count();
            assert!((30..90).contains(&here), "{here} rows from tenth {tenth}");
        }
        // Seeded: the same rows on every run.
        assert_eq!(collect(20_000, Some(600)).0, kept);
    }

    #[test]
    fn a_cap_above_the_input_keeps_every_row() {
        let (kept, read) = collect(500, Some(600));
        assert_eq!(kept, (0..500).collect::<Vec<_>>());
        assert_eq!(read, 500);
    }
}
