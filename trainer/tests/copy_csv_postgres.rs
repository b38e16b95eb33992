//! The CSV reader (`pgdict_trainer::source::csv`) against PostgreSQL 15's own `COPY ... FROM
//! ... (FORMAT csv)` (`copy_oracle`): generated records of one or two fields, built from the
//! bytes CSV treats specially (quotes, escaped quotes and escapes, delimiters, line ends of the
//! three kinds in and out of quotes, `\.`, the NULL string), are loaded by the server and read
//! by pgdict as records, with COPY's defaults, with two other delimiters and NULL strings, and
//! with two other quotes, one with an escape of its own (`QUOTE '''', ESCAPE '\'`), and with
//! the backslash as the escape of COPY's default quote (`ESCAPE '\'`) (a quarter
//! of the inputs have one field, so that a record `\.` can load). Whatever the server loads,
//! pgdict must read as the same values, NULLs (an unquoted empty field) told from empty
//! strings (`""`). What the server refuses for a line end (one of another kind than the first
//! line's, outside quotes), pgdict must refuse; what it refuses for another reason, pgdict may
//! read or refuse.

mod copy_oracle;

use std::io::Cursor;

use copy_oracle::{line_end, CopyOracle, Tally};
use pgdict_trainer::source::{csv, Column, CsvOptions, CsvSyntax};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// What a field is made of, besides the quote, the escape, the delimiter and the NULL
/// string: plain bytes (the first eight), COPY's default quote and two others, backslashes,
/// the end-of-data marker and line ends.
const TOKENS: &[&[u8]] = &[
    b"a",
    b"Z",
    b" ",
    b"0",
    b"N",
    b".",
    b"\xc3\xa9",
    b"\xff",
    b"\"",
    b"'",
    b"%",
    b"\\",
    b"\\.",
    b"\n",
    b"\r\n",
    b"\r",
    b",",
    b";",
    b"\t",
];

/// The options tried (COPY's CSV syntax: delimiter, quote, escape and NULL string), how `COPY`
/// says them (empty: COPY's defaults), and how many cases (each one COPY of one to four
/// records).
fn options() -> [(CsvSyntax, &'static str, usize); 6] {
    let syntax = |delimiter, quote, escape, null: &str| CsvSyntax {
        delimiter,
        quote,
        escape,
        null: null.as_bytes().to_vec(),
        force_quote: false,
    };
    [
        (CsvSyntax::default(), "", 2000),
        (
            syntax(b';', b'"', b'"', "NULL"),
            ", DELIMITER ';', NULL 'NULL'",
            800,
        ),
        (
            syntax(b'\t', b'"', b'"', "\\N"),
            ", DELIMITER E'\\t', NULL '\\N'",
            800,
        ),
        // An escape other than the quote.
        (
            syntax(b',', b'\'', b'\\', ""),
            ", QUOTE '''', ESCAPE '\\'",
            1200,
        ),
        // The backslash as the escape of COPY's default quote (CSV as many other tools write
        // it).
        (syntax(b',', b'"', b'\\', ""), ", ESCAPE '\\'", 800),
        // A quote that is its own escape, and a NULL string that holds COPY's default quote.
        (
            syntax(b',', b'%', b'%', "\""),
            ", QUOTE '%', NULL '\"'",
            800,
        ),
    ]
}

/// One generated input: records of (mostly) `fields` fields in `syntax`, a field quoted now
/// and then (whole, or a part of it); the NULL string among the tokens.
fn generate(rng: &mut StdRng, syntax: &CsvSyntax, fields: usize) -> Vec<u8> {
    let CsvSyntax {
        delimiter,
        quote,
        escape,
        ref null,
        ..
    } = *syntax;
    let line_end = line_end(rng);
    let mut input = Vec::new();
    let records = rng.random_range(1..=4);
    for record in 0..records {
        // Now and then the end-of-data marker as a whole record (with its line end or, last,
        // without one: then it is data).
        if rng.random_range(0..10) == 0 {
            input.extend_from_slice(b"\\.");
            if record + 1 < records || rng.random_range(0..2) == 0 {
                input.extend_from_slice(line_end);
            }
            continue;
        }
        for field in 0..fields {
            if field > 0 {
                input.push(delimiter);
            }
            if rng.random_range(0..8) == 0 {
                input.extend_from_slice(null); // A NULL field.
                continue;
            }
            let quoted = rng.random_range(0..3) == 0;
            if quoted {
                input.push(quote);
            }
            for _ in 0..rng.random_range(0..6) {
                // Plain bytes are the likelier, so that many records load.
                let token = match rng.random_range(0..14) {
                    0..=2 => TOKENS[rng.random_range(0..TOKENS.len())].to_vec(),
                    3 => vec![delimiter],
                    4 => null.clone(),
                    // In quotes a lone quote would close them: escaped, mostly.
                    5 if quoted && rng.random_range(0..4) != 0 => vec![escape, quote],
                    5 => vec![quote],
                    6 => vec![escape],
                    7 => vec![escape, escape],
                    _ => TOKENS[rng.random_range(0..8)].to_vec(),
                };
                input.extend_from_slice(&token);
            }
            if quoted && rng.random_range(0..8) != 0 {
                input.push(quote);
            }
        }
        if record + 1 < records || rng.random_range(0..8) != 0 {
            input.extend_from_slice(line_end);
        }
    }
    input
}

/// The values (`None`: NULL) of column `index` as pgdict's CSV reader reads `input`.
fn read_column(
    input: &[u8],
    index: usize,
    syntax: &CsvSyntax,
) -> Result<Vec<Option<Vec<u8>>>, String> {
    let options = CsvOptions {
        has_header: false,
        syntax: syntax.clone(),
        ..CsvOptions::new(Column::Index(index))
    };
    let (_, records) = csv::records(Cursor::new(input.to_vec()), &options, "in".into())
        .map_err(|e| e.to_string())?;
    records
        .map(|record| record.map(|record| record.value))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

#[test]
fn what_copy_from_loads_reads_as_the_same_values() {
    let mut oracle = CopyOracle::start();
    let mut rng = StdRng::seed_from_u64(15);
    for (syntax, said, cases) in options() {
        let mut tally = Tally::default();
        for case in 0..cases {
            // One field in a quarter of the cases: a record `\.` is then one a table takes.
            let fields = if rng.random_range(0..4) == 0 { 1 } else { 2 };
            let input = generate(&mut rng, &syntax, fields);
            let columns = ["a", "a, b"][fields - 1];
            let shown = String::from_utf8_lossy(&input);
            let context = format!("options{said}, case {case}");
            let options = format!(", FORMAT csv{said}");
            let read = || read_column(&input, 0, &syntax);
            let loaded =
                oracle.load_tallied((columns, &options), &input, &mut tally, &context, read);
            let Some(rows) = loaded else {
                continue;
            };
            for index in 0..fields {
                let expected: Vec<Option<Vec<u8>>> =
                    rows.iter().map(|row| row[index].clone()).collect();
                let read = read_column(&input, index, &syntax);
                assert!(
                    read.as_ref() == Ok(&expected),
                    "{context}, column {index}: input {shown:?}\nPostgreSQL loaded \
                     {expected:?}\npgdict read {read:?}",
                );
            }
        }
        tally.check(said, cases);
    }
}
