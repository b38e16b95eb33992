//! The CSV reader (`pgdict_trainer::source::csv`) against PostgreSQL 15's own `COPY ... FROM
//! ... (FORMAT csv)` (`copy_oracle`): generated records of one or two fields, built from the
//! bytes CSV treats specially (quotes, doubled quotes, delimiters, line ends of the three kinds
//! in and out of quotes, `\.`, the NULL string), are loaded by the server and read by pgdict as
//! records, with COPY's default comma and NULL and with two other delimiters and NULL strings
//! (a quarter of the inputs have one field, so that a record `\.` can load). Whatever the
//! server loads, pgdict must read as the same values, NULLs (an unquoted empty field) told from
//! empty strings (`""`). What the server refuses for a line end (one of another kind than the
//! first line's, outside quotes), pgdict must refuse; what it refuses for another reason,
//! pgdict may read or refuse.

mod copy_oracle;

use std::io::Cursor;

use copy_oracle::{line_end, CopyOracle, Tally};
use pgdict_trainer::source::{csv, Column, CsvOptions};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// What a field is made of: plain bytes, quotes alone and doubled, line ends, backslashes and
/// the end-of-data marker.
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
    b"\"\"",
    b"\\",
    b"\\.",
    b"\n",
    b"\r\n",
    b"\r",
    b",",
    b";",
    b"\t",
];

/// The delimiters and NULL strings tried, how `COPY` says them (empty: the default comma and
/// empty NULL), and how many cases (each one COPY of one to four records).
const OPTIONS: [(u8, &str, &str, usize); 3] = [
    (b',', "", "", 2000),
    (b';', "NULL", ", DELIMITER ';', NULL 'NULL'", 800),
    (b'\t', "\\N", ", DELIMITER E'\\t', NULL '\\N'", 800),
];

/// One generated input: records of (mostly) `fields` fields, separated by `delimiter`, a
/// field quoted now and then (whole, or a part of it); the NULL string `null` among the
/// tokens.
fn generate(rng: &mut StdRng, delimiter: u8, null: &[u8], fields: usize) -> Vec<u8> {
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
                input.push(b'"');
            }
            for _ in 0..rng.random_range(0..6) {
                // Plain bytes are the likelier, so that many records load.
                let token = match rng.random_range(0..12) {
                    0..=2 => TOKENS[rng.random_range(0..TOKENS.len())],
                    3 => &[delimiter][..],
                    4 => null,
                    _ => TOKENS[rng.random_range(0..8)],
                };
                // In quotes a lone quote would close them: doubled, mostly.
                match (quoted, token) {
                    (true, b"\"") if rng.random_range(0..4) != 0 => {
                        input.extend_from_slice(b"\"\"")
                    }
                    _ => input.extend_from_slice(token),
                }
            }
            if quoted && rng.random_range(0..8) != 0 {
                input.push(b'"');
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
    delimiter: u8,
    null: &[u8],
) -> Result<Vec<Option<Vec<u8>>>, String> {
    let options = CsvOptions {
        has_header: false,
        delimiter,
        null: null.to_vec(),
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
    for (delimiter, null, said, cases) in OPTIONS {
        let null = null.as_bytes();
        let mut tally = Tally::default();
        for case in 0..cases {
            // One field in a quarter of the cases: a record `\.` is then one a table takes.
            let fields = if rng.random_range(0..4) == 0 { 1 } else { 2 };
            let input = generate(&mut rng, delimiter, null, fields);
            let columns = ["a", "a, b"][fields - 1];
            let shown = String::from_utf8_lossy(&input);
            let context = format!("options{said}, case {case}");
            let options = format!(", FORMAT csv{said}");
            let read = || read_column(&input, 0, delimiter, null);
            let loaded =
                oracle.load_tallied((columns, &options), &input, &mut tally, &context, read);
            let Some(rows) = loaded else {
                continue;
            };
            for index in 0..fields {
                let expected: Vec<Option<Vec<u8>>> =
                    rows.iter().map(|row| row[index].clone()).collect();
                let read = read_column(&input, index, delimiter, null);
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
