//! `pgdict decompress`: datums in, rows out.
//!
//! Datums are decoded in batches on `--jobs` threads, as `compress` encodes rows
//! ([`crate::in_order`]); a batch is handed on early when the input (a pipe) has nothing more
//! ready, so rows come out as datums come in.
//!
//! With `--keep-columns` the items are records of COPY data or CSV ([`copy::Record`]) whose
//! column holds a datum: each is written back with the datum's value in its place.

use std::borrow::Cow;
use std::io::Write;

use anyhow::Context;
use pgdict::datum::{self, DatumDecoder};
use pgdict::rows::json_line_row;
use pgdict_trainer::progress::{Bars, InputProgress, Phase};
use pgdict_trainer::source::copy::{CopyOptions, Layout, Record};
use pgdict_trainer::source::{self, copy, datums_file, Format, SourceSpec};

use crate::datum_input::{decoded_size, decoded_size_of_text, take_record_datum, Datum, Datums};
use crate::fail::{usage_error, user_error};
use crate::in_order::{self, Batch, ItemReader, Pieces, ResultWriter, HAND_OVER_MIN};
use crate::output::{Output, Writes};
use crate::row_input::{note_terminal_stdin, SourceItems};
use crate::store::{LazyStore, LocalDictionaries};
use crate::text::counted;
use crate::{DecompressArgs, RowOutFormat, StoreArgs};

pub fn run(store_args: &StoreArgs, args: &DecompressArgs) -> anyhow::Result<u8> {
    Output::refuse_the_input(args.output.as_deref(), &args.datums.input)?;
    if args.keep_columns {
        return run_records(store_args, args);
    }
    let datums = Datums::open(&args.datums)?;
    let origin = datums.origin.clone();
    let store = LazyStore::new(store_args);
    let out_format = args.out_format.unwrap_or_else(|| match &args.output {
        Some(path) => match Format::from_path(path) {
            Format::JsonLines => RowOutFormat::Jsonl,
            Format::Datums => RowOutFormat::Datums,
            Format::Copy(_) => RowOutFormat::Copy,
            Format::Lines | Format::Csv(_) => RowOutFormat::Lines,
        },
        None => RowOutFormat::Lines,
    });
    // A name saying another format than --out-format writes is refused, as compress does.
    let writes = match out_format {
        RowOutFormat::Lines => Writes::Lines,
        RowOutFormat::Jsonl => Writes::JsonLines,
        RowOutFormat::Datums => Writes::Datums,
        RowOutFormat::Copy => Writes::BinaryCopy,
    };
    Output::refuse_a_name_for_another_format(
        args.output.as_deref(),
        writes,
        "decompress",
        "name the output for what it holds: without --out-format, the name says what to write \
         (.jsonl: JSON Lines, .datums: a datums file, .copy: binary COPY, .csv or another \
         name: lines); decompress writes no hex lines",
    )?;
    let binary = matches!(out_format, RowOutFormat::Datums | RowOutFormat::Copy);
    let mut out = Output::open(
        args.output.as_deref(),
        binary,
        "write text with --out-format lines or jsonl",
    )?;
    let bars = Bars::new(out.is_terminal());
    let step = InputProgress::begin(&bars, Phase::Decompressing, datums.input_len);
    let to_rows = ToRows {
        prefix: args.prefix,
        out_format,
        origin: &origin,
    };
    let new_worker = || {
        let mut decoder = DatumDecoder::new();
        let mut dictionaries = LocalDictionaries::new(&store);
        move |batch| to_rows.decode_batch(&mut decoder, &mut dictionaries, batch)
    };
    let jobs = args.jobs.map_or_else(crate::default_jobs, usize::from);
    let mut reader = DatumReader { datums, step };
    let as_copy = out_format == RowOutFormat::Copy;
    // Held until the output is finished (`Output::end_broken_on_signal`).
    let on_signal = as_copy
        .then(|| out.end_broken_on_signal(copy::BROKEN_END))
        .flatten();
    if as_copy {
        copy::write_header(&mut out).with_context(|| format!("cannot write to {}", out.name()))?;
    }
    let written = in_order::run(
        jobs,
        new_worker,
        &mut reader,
        &mut RowWriter {
            out: &mut out,
            start: None,
        },
    );
    if let Err(error) = written {
        if as_copy {
            // So that a COPY reading a pipe fails, rather than loading the rows before the
            // error.
            out.end_broken(copy::BROKEN_END);
        }
        return Err(error);
    }
    if as_copy {
        copy::write_trailer(&mut out).with_context(|| format!("cannot write to {}", out.name()))?;
    }
    let DatumReader { datums, step } = reader;
    let decoded = step.items();
    step.end(|| datums.bytes_read(), &counted(decoded, "datum"));
    out.finish()?;
    drop(on_signal); // The output is whole.
    Ok(0)
}

/// `--keep-columns`: COPY records in, each written back in the same format with its column's
/// datum decompressed.
fn run_records(store_args: &StoreArgs, args: &DecompressArgs) -> anyhow::Result<u8> {
    Output::refuse_a_name_for_kept_columns(args.output.as_deref())?;
    // COPY data of one column unless the flags say otherwise.
    let format = (args.datums.columns.format(None))
        .map_err(|conflict| usage_error(conflict.message, conflict.hint))?
        .unwrap_or_else(|| Format::Copy(CopyOptions::default()));
    let spec = SourceSpec::from_arg(&args.datums.input, Some(format));
    if matches!(spec, SourceSpec::Stdin(_)) {
        note_terminal_stdin("COPY data or CSV");
    }
    let what = spec.describe();
    let (layout, records) =
        source::open_records(&spec).with_context(|| format!("cannot read {what}"))?;
    let store = LazyStore::new(store_args);
    let mut out = Output::open(
        args.output.as_deref(),
        layout.is_binary(),
        "give COPY text (no FORMAT binary) to have text back",
    )?;
    // Held until the output is finished (`Output::end_broken_on_signal`).
    let on_signal = out.end_broken_on_signal(&layout.broken_end());
    let bars = Bars::new(out.is_terminal());
    // By what the datum decodes to (see `decoded_size`): the batch's rows are held whole.
    let size: fn(&Record) -> usize = match layout.is_binary() {
        true => |record| record.value.as_deref().map_or(0, decoded_size),
        false => |record| record.value.as_deref().map_or(0, decoded_size_of_text),
    };
    let mut reader = SourceItems::new(records, &bars, Phase::Decompressing, size);
    let origin = spec.input_name();
    let to_records = ToRecords {
        prefix: args.prefix,
        layout: &layout,
        origin: &origin,
    };
    let new_worker = || {
        let mut decoder = DatumDecoder::new();
        let mut dictionaries = LocalDictionaries::new(&store);
        move |batch| to_records.decode_batch(&mut decoder, &mut dictionaries, batch)
    };
    let jobs = args.jobs.map_or_else(crate::default_jobs, usize::from);
    let mut writer = RowWriter {
        out: &mut out,
        start: Some(layout.write_start_bytes()),
    };
    let written = in_order::run(jobs, new_worker, &mut reader, &mut writer);
    let started = writer.start.is_none();
    let ended = written.and_then(|()| {
        if !started {
            return Err(user_error(
                format!("{what} holds no rows"),
                "give COPY data or CSV with at least one row; nothing was written",
            ));
        }
        layout
            .write_end(&mut out)
            .with_context(|| format!("cannot write to {}", out.name()))
    });
    if let Err(error) = ended {
        if started {
            // So that a COPY reading a pipe fails, rather than loading the rows before the
            // error.
            out.end_broken(&layout.broken_end());
        }
        return Err(error);
    }
    let rows = reader.step.items();
    reader.end(&counted(rows, "row"));
    out.finish()?;
    drop(on_signal); // The output is whole.
    Ok(0)
}

/// How records are written back, and where they came from, for messages.
#[derive(Clone, Copy)]
struct ToRecords<'a> {
    prefix: Option<usize>,
    layout: &'a Layout,
    origin: &'a str,
}

impl ToRecords<'_> {
    fn decode_batch(
        &self,
        decoder: &mut DatumDecoder,
        dictionaries: &mut LocalDictionaries,
        mut batch: Batch<Record>,
    ) -> Decoded {
        let mut error = None;
        // The datums first, to take their dictionaries together: a text column holds each
        // as a bytea's text, let go once read.
        let mut datums = Vec::with_capacity(batch.items.len());
        for record in &mut batch.items {
            match take_record_datum(self.layout, record, self.origin) {
                Ok(datum) => datums.push(datum),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        dictionaries.take_for(datums.iter().flatten().map(|datum| &datum[..]));
        let dictionaries = &*dictionaries;
        let mut rows = Pieces::with_capacity(batch.room());
        let mut value = Vec::new();
        // Each datum is let go once its row is written.
        for (record, datum) in batch.items.iter().zip(datums) {
            let Some(datum) = datum else {
                self.layout
                    .write_record(rows.bytes(), record, None)
                    .expect("a NULL is written to a Vec");
                continue;
            };
            let written = decode(decoder, &datum, self.prefix, dictionaries, &mut value)
                .map_err(anyhow::Error::from)
                .and_then(|()| Ok(self.put_record(&mut rows, record, &mut value)?));
            if let Err(e) = written {
                error = Some(e.context(format!(
                    "cannot decompress the datum of {} of {}",
                    record.place, self.origin
                )));
                break;
            }
        }
        Decoded { rows, error }
    }

    /// Appends `record` with `value` in its column's place: a large value that the record
    /// holds as it is handed over to `rows` (taken, not copied), else copied.
    fn put_record(
        &self,
        rows: &mut Pieces,
        record: &Record,
        value: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        if value.len() >= HAND_OVER_MIN {
            if let Some(after) =
                (self.layout).write_record_around_value(rows.bytes(), record, value)
            {
                rows.put(value);
                rows.bytes().extend_from_slice(&after);
                return Ok(());
            }
        }
        self.layout.write_record(rows.bytes(), record, Some(value))
    }
}

/// The datums, read a datum at a time, with progress.
struct DatumReader<'a> {
    datums: Datums,
    step: InputProgress<'a>,
}

impl ItemReader for DatumReader<'_> {
    type Item = Datum;

    fn next_item(&mut self) -> Option<anyhow::Result<(Datum, usize)>> {
        let datum = self.datums.next_item()?;
        self.step.item(|| self.datums.bytes_read());
        Some(datum)
    }

    fn may_wait(&self) -> bool {
        self.datums.may_wait()
    }
}

/// Writes each batch's rows.
struct RowWriter<'a> {
    out: &'a mut Output,
    /// What goes before the first batch, until it is written.
    start: Option<Vec<u8>>,
}

impl ResultWriter<Decoded> for RowWriter<'_> {
    /// Writes a batch's rows, then returns the error that ended the batch, if one did.
    fn write(&mut self, decoded: Decoded) -> anyhow::Result<()> {
        if let Some(start) = self.start.take() {
            self.out
                .write_all(&start)
                .with_context(|| format!("cannot write to {}", self.out.name()))?;
        }
        self.out
            .write_pieces(decoded.rows.pieces())
            .with_context(|| format!("cannot write to {}", self.out.name()))?;
        decoded.error.map_or(Ok(()), Err)
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.out
            .flush()
            .with_context(|| format!("cannot write to {}", self.out.name()))
    }
}

/// What each datum becomes, and where it came from, for messages.
#[derive(Clone, Copy)]
struct ToRows<'a> {
    prefix: Option<usize>,
    out_format: RowOutFormat,
    origin: &'a str,
}

/// A batch's output, ready to write: the rows of its datums up to the first that could not be
/// decompressed or written, and why that one could not.
struct Decoded {
    rows: Pieces,
    error: Option<anyhow::Error>,
}

impl ToRows<'_> {
    fn decode_batch(
        &self,
        decoder: &mut DatumDecoder,
        dictionaries: &mut LocalDictionaries,
        batch: Batch<Datum>,
    ) -> Decoded {
        dictionaries.take_for(batch.items.iter().map(|datum| &datum.bytes[..]));
        let dictionaries = &*dictionaries;
        let mut rows = Pieces::with_capacity(batch.room());
        let mut value = Vec::new();
        let mut error = None;
        for (index, datum) in (batch.first + 1..).zip(batch.items) {
            if let Err(e) =
                self.decode_datum(decoder, dictionaries, index, datum, &mut value, &mut rows)
            {
                error = Some(e);
                break;
            }
        }
        Decoded { rows, error }
    }

    /// Appends the row of datum `index` (1-based) to `rows`; `value` is room to decode it in.
    /// A large row that the output holds byte for byte is handed over to `rows` in `value`.
    /// The datum is let go once decoded: a large row written as a JSON string is held twice
    /// (the row and its string), and the datum beside them would make it three times.
    fn decode_datum(
        &self,
        decoder: &mut DatumDecoder,
        dictionaries: &LocalDictionaries,
        index: u64,
        datum: Datum,
        value: &mut Vec<u8>,
        rows: &mut Pieces,
    ) -> anyhow::Result<()> {
        let Datum { bytes, position } = datum;
        let at = || format!("datum {index} ({position} of {})", self.origin);
        decode(decoder, &bytes, self.prefix, dictionaries, value)
            .with_context(|| format!("cannot decompress {}", at()))?;
        let cut = self.prefix.is_some()
            && datum::parse_header(&bytes).is_ok_and(|h| h.raw_len > value.len());
        drop(bytes);
        if cut && self.out_format == RowOutFormat::Jsonl {
            // A JSON string holds whole characters: leave out one that the cut split.
            let whole = match std::str::from_utf8(value) {
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                _ => value.len(),
            };
            value.truncate(whole);
        }
        if value.len() >= HAND_OVER_MIN {
            let handed_over = put_large_row(self.out_format, value, rows)
                .with_context(|| format!("cannot write the row of {}", at()))?;
            if handed_over {
                return Ok(());
            }
        }
        let rows = rows.bytes();
        match self.out_format {
            RowOutFormat::Lines => lines_row(value, rows),
            RowOutFormat::Jsonl => jsonl_row(value, rows),
            RowOutFormat::Datums => {
                datums_file::Writer::new(rows).write_datum(value)?;
                Ok(())
            }
            RowOutFormat::Copy => Ok(copy::write_tuple(rows, &[Some(value)])?),
        }
        .with_context(|| format!("cannot write the row of {}", at()))
    }
}

/// Decodes `datum` into `value`: whole, or with `prefix` its first K bytes (what PostgreSQL's
/// `substr()` reads).
fn decode(
    decoder: &mut DatumDecoder,
    datum: &[u8],
    prefix: Option<usize>,
    dictionaries: &LocalDictionaries,
    value: &mut Vec<u8>,
) -> Result<(), datum::DatumError> {
    match prefix {
        Some(k) => *value = decoder.decode_prefix(datum, k, dictionaries)?,
        None => {
            decoder.decode_into(datum, dictionaries, value)?;
        }
    }
    Ok(())
}

/// Writes `row` as [`ToRows::decode_datum`] writes it in `format`, handing it over to `rows`
/// (taking it, not copying it) where the output holds it byte for byte: true then; false,
/// with nothing written, where it does not (a JSON Lines row written as a JSON string).
fn put_large_row(
    format: RowOutFormat,
    row: &mut Vec<u8>,
    rows: &mut Pieces,
) -> anyhow::Result<bool> {
    let after: &[u8] = match format {
        RowOutFormat::Lines => {
            check_line(row)?;
            b"\n"
        }
        RowOutFormat::Jsonl if jsonl_verbatim(row) => b"\n",
        RowOutFormat::Jsonl => return Ok(false),
        RowOutFormat::Datums => {
            datums_file::Writer::new(rows.bytes()).write_datum_len(row.len())?;
            b""
        }
        RowOutFormat::Copy => {
            copy::write_one_field_start(rows.bytes(), row.len())?;
            b""
        }
    };
    rows.put(row);
    rows.bytes().extend_from_slice(after);
    Ok(true)
}

/// A row as a line: refused if it would not read back as itself.
fn lines_row(value: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()> {
    check_line(value)?;
    out.extend_from_slice(value);
    out.push(b'\n');
    Ok(())
}

/// Refuses a row that would not read back as itself from a line.
fn check_line(value: &[u8]) -> anyhow::Result<()> {
    let problem = if value.contains(&b'\n') {
        Some("holds a line feed")
    } else if value.is_empty() {
        Some("is empty (an empty line is no row)")
    } else if value.ends_with(b"\r") {
        Some("ends with a carriage return")
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(user_error(
            format!("the row {problem}, so it cannot be written as a line"),
            "write JSON Lines (--out-format jsonl, or -o ROWS.jsonl) or a datums file \
             (--out-format datums, or -o ROWS.datums)",
        ));
    }
    Ok(())
}

/// Whether a row is written to JSON Lines as it is: when the reader reads the line back as
/// itself.
fn jsonl_verbatim(value: &[u8]) -> bool {
    !value.contains(&b'\n')
        && !value.ends_with(b"\r")
        && matches!(json_line_row(value), Ok(Cow::Borrowed(_)))
}

/// A row as a JSON Lines line, as the JSON Lines reader reads it back: a row that is one JSON
/// value other than a string on one line stays as it is; any other row becomes a JSON string.
fn jsonl_row(value: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()> {
    if jsonl_verbatim(value) {
        out.extend_from_slice(value);
    } else {
        let text = std::str::from_utf8(value).map_err(|e| {
            user_error(
                format!(
                    "the row is not UTF-8 text (byte {} is not), so it cannot be a JSON string",
                    e.valid_up_to()
                ),
                "write a datums file (--out-format datums), which holds any bytes",
            )
        })?;
        serde_json::to_writer(&mut *out, text)?;
    }
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonl(value: &[u8]) -> String {
        let mut out = Vec::new();
        jsonl_row(value, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Appends what the path for small rows writes for `row` in `format`.
    fn write_small_row(format: RowOutFormat, row: &[u8], out: &mut Vec<u8>) {
        match format {
            RowOutFormat::Lines => lines_row(row, out).unwrap(),
            RowOutFormat::Jsonl => jsonl_row(row, out).unwrap(),
            RowOutFormat::Datums => datums_file::Writer::new(out).write_datum(row).unwrap(),
            RowOutFormat::Copy => copy::write_tuple(out, &[Some(row)]).unwrap(),
        }
    }

    #[test]
    fn jsonl_rows_read_back_as_themselves() {
        assert_eq!(jsonl(b"{\"a\":1}"), "{\"a\":1}\n");
        assert_eq!(jsonl(b"42"), "42\n");
        assert_eq!(jsonl(b"plain text"), "\"plain text\"\n");
        assert_eq!(jsonl(b"\"quoted\""), "\"\\\"quoted\\\"\"\n");
        assert_eq!(jsonl(b"two\nlines"), "\"two\\nlines\"\n");
        assert_eq!(jsonl(b""), "\"\"\n");
        let mut out = Vec::new();
        assert!(jsonl_row(b"\xff", &mut out).is_err());
    }

    #[test]
    fn a_large_row_is_handed_over_where_the_output_holds_it_as_it_is() {
        let text = vec![b'x'; HAND_OVER_MIN];
        let array = [&b"[\""[..], &text, b"\"]"].concat();
        for format in [
            RowOutFormat::Lines,
            RowOutFormat::Jsonl,
            RowOutFormat::Datums,
            RowOutFormat::Copy,
        ] {
            for row in [&text, &array] {
                // What the path for small rows writes.
                let mut expected = Vec::new();
                write_small_row(format, row, &mut expected);
                let mut rows = Pieces::with_capacity(0);
                rows.bytes().extend_from_slice(b"before");
                let mut value = row.clone();
                let at = value.as_ptr();
                let handed_over = put_large_row(format, &mut value, &mut rows).unwrap();
                // Only text, which JSON Lines writes as a JSON string, is not as it is.
                let as_it_is = format != RowOutFormat::Jsonl || row == &array;
                assert_eq!(handed_over, as_it_is, "{format:?}");
                let written = rows.pieces().concat();
                if !handed_over {
                    assert_eq!(written, b"before");
                    assert_eq!(&value, row);
                    continue;
                }
                assert!(written[6..] == expected[..], "{format:?}");
                assert!(
                    rows.pieces().iter().any(|piece| piece.as_ptr() == at),
                    "{format:?}"
                );
            }
        }
        // A row that is no line is refused, and nothing written.
        let mut rows = Pieces::with_capacity(0);
        let mut value = [&text[..], b"\n"].concat();
        assert!(put_large_row(RowOutFormat::Lines, &mut value, &mut rows).is_err());
        assert_eq!(value.len(), HAND_OVER_MIN + 1);
        assert_eq!(rows.pieces(), [Vec::<u8>::new()]);
    }

    #[test]
    fn a_large_row_is_handed_over_in_records_it_stands_in_as_it_is_and_the_output_is_the_same() {
        let text = "1\tv\tz\n2\t\\N\tz\n";
        let csv = "1,v,z\r\n2,,z\r\n";
        let layouts_and_records = crate::cmd::second_column_records(text, csv);
        let large = vec![b'x'; HAND_OVER_MIN];
        // Escaped in the text format, quoted in CSV.
        let large_tab = [&large[..], b"\t"].concat();
        let large_comma = [&large[..], b",\""].concat();
        for (layout, records) in layouts_and_records {
            let to_records = ToRecords {
                prefix: None,
                layout: &layout,
                origin: "in",
            };
            for mut record in records {
                // The value is taken out of the record (a NULL's too).
                let _ = take_record_datum(&layout, &mut record, "in");
                assert_eq!(record.value, None);
                for row in [&b"small"[..], &large, &large_tab, &large_comma] {
                    let mut expected = b"before".to_vec();
                    layout
                        .write_record(&mut expected, &record, Some(row))
                        .unwrap();
                    let mut rows = Pieces::with_capacity(0);
                    rows.bytes().extend_from_slice(b"before");
                    let mut value = row.to_vec();
                    let at = value.as_ptr();
                    to_records
                        .put_record(&mut rows, &record, &mut value)
                        .unwrap();
                    assert!(rows.pieces().concat() == expected, "{layout:?}");
                    let as_it_is = match layout {
                        Layout::Csv { .. } => row != &large_comma[..],
                        _ => row != &large_tab[..],
                    } && row.len() >= HAND_OVER_MIN;
                    if as_it_is {
                        // The fields before, the row handed over, the fields after.
                        assert_eq!(rows.pieces().len(), 3, "{layout:?}");
                        assert_eq!(rows.pieces()[1].as_ptr(), at, "{layout:?}");
                        assert!(value.is_empty());
                    } else {
                        assert_eq!(rows.pieces().len(), 1, "{layout:?}");
                        assert_eq!(value, row);
                    }
                }
            }
        }
    }

    /// The rows `to_rows` writes for `datums` (a batch whose first is datum `first + 1`), and
    /// the error that stopped it, if one did. No store: a datum that names a dictionary fails.
    fn decoded(to_rows: ToRows, first: u64, datums: &[Vec<u8>]) -> (Vec<u8>, Option<String>) {
        let decoded = decode_all(to_rows, first, datums);
        let error = decoded.error.map(|e| format!("{e:#}"));
        (decoded.rows.pieces().concat(), error)
    }

    /// What `to_rows` makes of `datums` (see [`decoded`]).
    fn decode_all(to_rows: ToRows, first: u64, datums: &[Vec<u8>]) -> Decoded {
        let dir = tempfile::tempdir().unwrap();
        let args = crate::store::tests::dir_store_args(dir.path().join("dicts"));
        let store = LazyStore::new(&args);
        let mut dictionaries = LocalDictionaries::new(&store);
        let mut batch = Batch::starting_at(first);
        for (line, bytes) in (first as usize + 1..).zip(datums) {
            let datum = Datum {
                bytes: bytes.clone(),
                position: crate::datum_input::Position::Line(line),
            };
            batch.push(datum, bytes.len());
        }
        to_rows.decode_batch(&mut DatumDecoder::new(), &mut dictionaries, batch)
    }

    /// `row` as a pglz datum (stored raw when pglz does not pay).
    fn pglz(row: &[u8]) -> Vec<u8> {
        pgdict::datum::DatumEncoder::new()
            .encode(row, pgdict::datum::Codec::Pglz, None)
            .unwrap()
    }

    fn to_rows(out_format: RowOutFormat, prefix: Option<usize>) -> ToRows<'static> {
        ToRows {
            prefix,
            out_format,
            origin: "in.hex",
        }
    }

    #[test]
    fn each_datum_becomes_a_row_in_the_format_asked_for() {
        let rows: [&[u8]; 2] = [&b"{\"a\":1}".repeat(20), "café".as_bytes()];
        let datums: Vec<Vec<u8>> = rows.iter().map(|row| pglz(row)).collect();
        for format in [
            RowOutFormat::Lines,
            RowOutFormat::Jsonl,
            RowOutFormat::Datums,
            RowOutFormat::Copy,
        ] {
            let mut expected = Vec::new();
            for row in rows {
                write_small_row(format, row, &mut expected);
            }
            assert_eq!(
                decoded(to_rows(format, None), 0, &datums),
                (expected, None),
                "{format:?}"
            );
        }
        // A prefix: the first K bytes; in a JSON string, without a character the cut split.
        let prefix = |format, k| decoded(to_rows(format, Some(k)), 0, &datums[1..]).0;
        assert_eq!(prefix(RowOutFormat::Lines, 4), b"caf\xc3\n");
        assert_eq!(prefix(RowOutFormat::Jsonl, 4), b"\"caf\"\n");
        assert_eq!(prefix(RowOutFormat::Jsonl, 5), "\"café\"\n".as_bytes());
        assert_eq!(prefix(RowOutFormat::Jsonl, 9), "\"café\"\n".as_bytes());
        assert_eq!(prefix(RowOutFormat::Lines, 2), b"ca\n");
        // Only a character the cut split is left out: bytes that are no text stay, and a JSON
        // string cannot hold them.
        let not_text =
            |row: &[u8], k| decoded(to_rows(RowOutFormat::Jsonl, Some(k)), 0, &[pglz(row)]).1;
        let refused = "the row is not UTF-8 text";
        assert!(not_text(b"a\xffbcd", 3).is_some_and(|e| e.contains(refused)));
        assert!(not_text(b"caf\xc3", 4).is_some_and(|e| e.contains(refused)));
        assert!(not_text(b"caf\xc3", 9).is_some_and(|e| e.contains(refused)));
        assert_eq!(not_text(b"caf\xc3", 3), None);
    }

    #[test]
    fn a_large_row_is_handed_over_and_a_small_one_copied() {
        for len in [HAND_OVER_MIN - 1, HAND_OVER_MIN] {
            let row = vec![b'x'; len];
            let decoded = decode_all(to_rows(RowOutFormat::Lines, None), 0, &[pglz(&row)]);
            let pieces = decoded.rows.pieces();
            assert_eq!(pieces.concat(), [&row[..], b"\n"].concat());
            let handed_over = pieces.iter().any(|piece| piece[..] == row[..]);
            assert_eq!(handed_over, len == HAND_OVER_MIN, "{len}");
        }
    }

    #[test]
    fn a_batch_stops_at_the_first_datum_that_cannot_be_decompressed_or_written() {
        let lines = to_rows(RowOutFormat::Lines, None);
        let (rows, error) = decoded(lines, 6, &[pglz(b"one"), vec![0x01, 0x02], pglz(b"three")]);
        assert_eq!(rows, b"one\n");
        let error = error.expect("stopped");
        assert!(
            error.starts_with("cannot decompress datum 8 (line 8 of in.hex): datum: byte 0"),
            "{error}"
        );
        // A row that lines cannot hold.
        let (rows, error) = decoded(lines, 0, &[pglz(b"one"), pglz(b"two\nlines")]);
        assert_eq!(rows, b"one\n");
        let error = error.expect("stopped");
        assert!(
            error.starts_with("cannot write the row of datum 2 (line 2 of in.hex): ")
                && error
                    .ends_with(": the row holds a line feed, so it cannot be written as a line"),
            "{error}"
        );
    }

    #[test]
    fn lines_refuse_what_would_not_read_back() {
        let mut out = Vec::new();
        lines_row(b"a,b", &mut out).unwrap();
        assert_eq!(out, b"a,b\n");
        assert!(lines_row(b"a\nb", &mut out).is_err());
        assert!(lines_row(b"", &mut out).is_err());
        assert!(lines_row(b"a\r", &mut out).is_err());
    }

    proptest::proptest! {
        /// Whatever `jsonl_row` writes, the JSON Lines reader reads back as the row.
        #[test]
        fn jsonl_rows_read_back_through_the_reader(row in "[\\[\\]{}\":,0-9a-z \\\\.e+\\-é]{0,24}") {
            let mut out = Vec::new();
            jsonl_row(row.as_bytes(), &mut out).unwrap();
            let back = pgdict::rows::parse_rows(&out, pgdict::rows::RowFormat::JsonLines, "t")
                .unwrap();
            proptest::prop_assert_eq!(back, vec![row.into_bytes()]);
        }
    }
}
