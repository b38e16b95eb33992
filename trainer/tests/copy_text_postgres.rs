//! The COPY source's text format against PostgreSQL 15's own `COPY ... FROM` (`copy_oracle`):
//! generated lines of two fields, built from the escapes and bytes the format treats specially,
//! are loaded by the server and read by pgdict, with COPY's default delimiter and NULL string
//! and with two others (`DELIMITER '|', NULL 'NULL'` and `DELIMITER ',', NULL ''`). Whatever
//! the server loads, pgdict must read as the same values (NULLs and empty values aside, which a
//! source skips). What the server refuses for a line end (one of another kind than the first
//! line's, that no backslash escapes), pgdict must refuse. What it refuses for another reason,
//! pgdict may read or refuse: it refuses less, as its module documentation says, and in a run
//! that printed the inputs only the server refused, these were all: a NUL byte (`\0`, which a
//! database refuses in text), `\.` at the very end of the data without a line end, and lines
//! of three fields, which the two-column table refuses.

mod copy_oracle;

use std::io::Write;

use copy_oracle::{line_end, CopyOracle, Tally};
use pgdict_trainer::source::copy::CopyOptions;
use pgdict_trainer::source::{self, Column, Format, SourceSpec};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// What a field is made of: plain bytes, every escape (well and badly formed), the delimiter
/// and line ends escaped and not, and the end-of-data marker.
const TOKENS: &[&[u8]] = &[
    b"a",
    b"Z",
    b" ",
    b"0",
    b"7",
    b"8",
    b"f",
    b"g",
    b"N",
    b".",
    b"\xc3\xa9",
    b"\xff",
    b"\\",
    b"\\\\",
    b"\\t",
    b"\\n",
    b"\\r",
    b"\\b",
    b"\\f",
    b"\\v",
    b"\\x",
    b"\\x4",
    b"\\x4g",
    b"\\xG",
    b"\\xff",
    b"\\0",
    b"\\1",
    b"\\12",
    b"\\123",
    b"\\777",
    b"\\8",
    b"\\q",
    b"\\.",
    b"\\N",
    b"\\\t",
    b"\\\n",
    b"\\\r",
    b"\t",
    b"\r",
    b"\n",
];

/// COPY's text options tried: the delimiter, the NULL string, how `COPY` says them (empty:
/// the defaults, tab and `\N`), and how many cases (each one COPY of one to four lines).
const OPTIONS: [(u8, &str, &str, usize); 3] = [
    (b'\t', "\\N", "", 2000),
    (b'|', "NULL", ", DELIMITER '|', NULL 'NULL'", 1000),
    (b',', "", ", DELIMITER ',', NULL ''", 1000),
];

/// One generated input: lines of (mostly) two fields, separated by `delimiter`, `null` a
/// field's NULL.
fn generate(rng: &mut StdRng, delimiter: u8, null: &[u8]) -> Vec<u8> {
    // The delimiter, bare and escaped, and the NULL string inside a field, besides the rest.
    let bare = [delimiter];
    let escaped = [b'\\', delimiter];
    let extra: [&[u8]; 3] = [&bare, &escaped, null];
    let line_end = line_end(rng);
    let mut input = Vec::new();
    let lines = rng.random_range(1..=4);
    for line in 0..lines {
        for field in 0..2 {
            if field == 1 {
                input.push(delimiter);
            }
            if rng.random_range(0..8) == 0 {
                input.extend_from_slice(null);
                continue;
            }
            for _ in 0..rng.random_range(0..6) {
                // Plain bytes are the likelier, so that many lines load.
                let token = match rng.random_range(0..12) {
                    0..=2 => TOKENS[rng.random_range(0..TOKENS.len())],
                    3 => extra[rng.random_range(0..extra.len())],
                    _ => TOKENS[rng.random_range(0..12)],
                };
                input.extend_from_slice(token);
            }
        }
        if line + 1 < lines || rng.random_range(0..8) != 0 {
            input.extend_from_slice(line_end);
        }
    }
    input
}

/// The values of column `index` as pgdict's COPY source reads `input` with `options`.
fn read_column(input: &[u8], index: usize, options: &CopyOptions) -> Result<Vec<Vec<u8>>, String> {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(input).unwrap();
    let spec = SourceSpec::File {
        path: file.path().to_path_buf(),
        format: Format::Copy(CopyOptions {
            column: Some(Column::Index(index)),
            ..options.clone()
        }),
    };
    source::open(&spec)
        .and_then(|rows| rows.collect())
        .map_err(|e| e.to_string())
}

#[test]
fn what_copy_from_loads_reads_as_the_same_values() {
    let mut oracle = CopyOracle::start();
    let mut rng = StdRng::seed_from_u64(15);
    for (delimiter, null, said, cases) in OPTIONS {
        let options = match said {
            "" => CopyOptions::default(),
            _ => CopyOptions {
                column: None,
                delimiter: Some(delimiter),
                null: Some(null.as_bytes().to_vec()),
                header: false,
            },
        };
        let mut tally = Tally::default();
        for case in 0..cases {
            let input = generate(&mut rng, delimiter, null.as_bytes());
            let shown = String::from_utf8_lossy(&input);
            let context = format!("options{said}, case {case}");
            let read = || read_column(&input, 0, &options);
            let loaded = oracle.load_tallied(("a, b", said), &input, &mut tally, &context, read);
            let Some(rows) = loaded else {
                continue;
            };
            for index in 0..2 {
                let expected: Vec<Vec<u8>> = rows
                    .iter()
                    .filter_map(|row| row[index].clone())
                    .filter(|value| !value.is_empty())
                    .collect();
                let read = read_column(&input, index, &options);
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
