//! The row sources (`pgdict_trainer::source::read_rows`) on arbitrary bytes, in every file
//! format: lines, JSON Lines, a datums file, a CSV column, COPY data (text or binary).
//!
//! Layout: a mode byte, whose value modulo [`FORMATS`] picks the format, column and COPY
//! options (see [`format`]), then the input.
//!
//! Checks: no panic, and reading stops at the first error; no row is over PostgreSQL's limit
//! for one value; no row is empty where the format skips empty values (lines, CSV, COPY);
//! and for COPY text of one column, the rows read, written back as `COPY ... TO` writes them
//! (`copy::escape_text`), read back the same. For COPY data and CSV, its records
//! (`copy::records`, `csv::records`: what `--keep-columns` reads) hold the rows: their values,
//! NULLs and empty ones left out, are the rows read, up to the same error; and the records
//! written back (`Layout::write_record`) read back as the same records, and write back as the
//! same bytes; each value written as a bytea (`Layout::write_bytea_record`) reads back as its
//! hex text, the other fields kept.

#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use pgdict_trainer::source::copy::{self, CopyOptions, SIGNATURE};
use pgdict_trainer::source::datums_file::MAX_DATUM_LEN;
use pgdict_trainer::source::{csv, read_rows, Column, CsvOptions, CsvSyntax, Format};

/// How many formats the mode byte picks from.
const FORMATS: u8 = 12;

/// The format mode `mode` picks.
fn format(mode: u8) -> Format {
    let csv_in = |column, has_header, syntax| {
        Format::Csv(CsvOptions {
            column,
            has_header,
            syntax,
        })
    };
    let csv = |column, has_header, delimiter, null: &[u8]| {
        let syntax = CsvSyntax {
            delimiter,
            null: null.to_vec(),
            ..CsvSyntax::default()
        };
        csv_in(column, has_header, syntax)
    };
    match mode % FORMATS {
        0 => Format::Lines,
        1 => Format::JsonLines,
        2 => Format::Datums,
        3 => csv(Column::Name("b".into()), true, b',', b""),
        4 => csv(Column::Index(1), false, b'\t', b"\\N"),
        // A hex digit as the delimiter: a bytea's hex text is quoted where it holds one.
        9 => csv(Column::Index(1), false, b'a', b""),
        // An escape other than the quote.
        10 => {
            let syntax = CsvSyntax {
                quote: b'\'',
                escape: b'\\',
                ..CsvSyntax::default()
            };
            csv_in(Column::Name("b".into()), true, syntax)
        }
        // A hex digit as the quote, `x` as the escape: a bytea's hex text is quoted where it
        // holds the one, and both escaped in it; and every value quoted (FORCE_QUOTE).
        11 => {
            let syntax = CsvSyntax {
                quote: b'a',
                escape: b'x',
                null: b"N".to_vec(),
                force_quote: true,
                ..CsvSyntax::default()
            };
            csv_in(Column::Index(1), false, syntax)
        }
        5 => Format::Copy(CopyOptions::default()),
        6 => Format::Copy(CopyOptions::column(Some(Column::Index(1)))),
        7 => Format::Copy(CopyOptions::column(Some(Column::Name("b".into())))),
        // With a header line said to be there (--copy-header), passed over by index.
        _ => Format::Copy(CopyOptions {
            column: Some(Column::Index(1)),
            delimiter: Some(b'|'),
            null: Some(Vec::new()),
            header: true,
        }),
    }
}

/// The layout and the records read before the first error; `None` for a format without
/// records, or an input that does not open.
fn records_of(input: &[u8], format: &Format) -> Option<(copy::Layout, Vec<copy::Record>)> {
    let input = Cursor::new(input.to_vec());
    let (layout, records) = match format {
        Format::Copy(options) => copy::records(input, options, "fuzz".into()).ok()?,
        Format::Csv(options) => csv::records(input, options, "fuzz".into()).ok()?,
        _ => return None,
    };
    Some((layout, records.map_while(Result::ok).collect()))
}

/// `records` written back by `layout`, each with its own value.
fn write_back(layout: &copy::Layout, records: &[copy::Record]) -> Vec<u8> {
    let mut out = layout.write_start_bytes();
    for record in records {
        layout
            .write_record(&mut out, record, record.value.as_deref())
            .unwrap();
    }
    layout.write_end(&mut out).unwrap();
    out
}

/// The rows read before the first error.
fn rows_of(input: &[u8], format: &Format) -> Vec<Vec<u8>> {
    let Ok(rows) = read_rows(Cursor::new(input.to_vec()), format, "fuzz") else {
        return Vec::new();
    };
    let mut read = Vec::new();
    let mut failed = false;
    for row in rows {
        assert!(!failed, "a row came after an error");
        match row {
            Ok(row) => read.push(row),
            Err(_) => failed = true,
        }
    }
    read
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let format = format(mode);
    let read = rows_of(input, &format);
    for row in &read {
        assert!(row.len() <= MAX_DATUM_LEN);
        if !matches!(format, Format::JsonLines | Format::Datums) {
            assert!(!row.is_empty(), "an empty row in {format:?}");
        }
    }
    if let Some((layout, records)) = records_of(input, &format) {
        let values: Vec<Vec<u8>> = records
            .iter()
            .filter_map(|record| record.value.clone())
            .filter(|value| !value.is_empty())
            .collect();
        assert_eq!(values, read, "the records' values are not the rows");
        let written = write_back(&layout, &records);
        let (again_layout, again) = records_of(&written, &format).expect("what was written opens");
        assert_eq!(again_layout, layout);
        let values = |records: &[copy::Record]| -> Vec<Option<Vec<u8>>> {
            records.iter().map(|r| r.value.clone()).collect()
        };
        assert_eq!(values(&again), values(&records), "written: {written:?}");
        assert_eq!(write_back(&layout, &again), written);

        // Each value written as a bytea (what `compress --keep-columns` writes) reads back as
        // its hex text (binary COPY: its bytes), and the record, its own value put back, writes
        // as before: the other fields are kept.
        let mut packed = layout.write_start_bytes();
        for record in &records {
            (layout.write_bytea_record(&mut packed, record, record.value.as_deref())).unwrap();
        }
        layout.write_end(&mut packed).unwrap();
        let (_, unpacked) = records_of(&packed, &format).expect("what was written opens");
        assert_eq!(unpacked.len(), records.len(), "packed: {packed:?}");
        for (unpacked, record) in unpacked.iter().zip(&records) {
            let bytea = record.value.as_ref().map(|value| match layout {
                copy::Layout::Binary => value.clone(),
                _ => {
                    let digits: String = value.iter().map(|byte| format!("{byte:02x}")).collect();
                    [&b"\\x"[..], digits.as_bytes()].concat()
                }
            });
            assert_eq!(unpacked.value, bytea, "packed: {packed:?}");
        }
        let mut restored = layout.write_start_bytes();
        for (unpacked, record) in unpacked.iter().zip(&records) {
            (layout.write_record(&mut restored, unpacked, record.value.as_deref())).unwrap();
        }
        layout.write_end(&mut restored).unwrap();
        assert_eq!(restored, written, "packed: {packed:?}");
    }
    if format == Format::Copy(CopyOptions::default()) && !input.starts_with(SIGNATURE) {
        let mut text = Vec::new();
        for row in &read {
            copy::escape_text(row, &mut text);
            text.push(b'\n');
        }
        assert_eq!(rows_of(&text, &format), read, "escaped: {text:?}");
    }
});
