//! The row sources (`pgdict_trainer::source::read_rows`) on arbitrary bytes, in every file
//! format: lines, JSON Lines, a datums file, a CSV column, COPY data (text or binary).
//!
//! Layout: a mode byte, whose value modulo [`FORMATS`] picks the format and column (see
//! [`format`]), then the input.
//!
//! Checks: no panic, and reading stops at the first error; no row is over PostgreSQL's limit
//! for one value; no row is empty where the format skips empty values (lines, CSV, COPY);
//! and for COPY text of one column, the rows read, written back as `COPY ... TO` writes them
//! (`copy::escape_text`), read back the same.

#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use pgdict_trainer::source::copy::{self, SIGNATURE};
use pgdict_trainer::source::datums_file::MAX_DATUM_LEN;
use pgdict_trainer::source::{read_rows, Column, CsvOptions, Format};

/// How many formats the mode byte picks from.
const FORMATS: u8 = 8;

/// The format mode `mode` picks.
fn format(mode: u8) -> Format {
    let csv = |column, has_header, delimiter| {
        Format::Csv(CsvOptions {
            column,
            has_header,
            delimiter,
        })
    };
    match mode % FORMATS {
        0 => Format::Lines,
        1 => Format::JsonLines,
        2 => Format::Datums,
        3 => csv(Column::Name("b".into()), true, b','),
        4 => csv(Column::Index(1), false, b'\t'),
        5 => Format::Copy(None),
        6 => Format::Copy(Some(Column::Index(1))),
        _ => Format::Copy(Some(Column::Name("b".into()))),
    }
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
    if format == Format::Copy(None) && !input.starts_with(SIGNATURE) {
        let mut text = Vec::new();
        for row in &read {
            copy::escape_text(row, &mut text);
            text.push(b'\n');
        }
        assert_eq!(rows_of(&text, &format), read, "escaped: {text:?}");
    }
});
