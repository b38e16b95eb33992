//! Reading inputs: rows (through the trainer's sources) and datums (datums files, hex text as
//! psql prints a bytea, binary varlenas back to back).

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use anyhow::{anyhow, Context};
use pgdict::datum;
use pgdict_trainer::progress::{Phase, Progress};
use pgdict_trainer::source::{
    self, datums_file, CsvColumn, CsvOptions, Format, PgSource, SourceSpec,
};

use crate::fail::{user_error, HintExt};
use crate::text::thousands;
use crate::{DatumFormatArg, DatumInput, RowFormatArg, RowInput};

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
    Ok(SourceSpec::from_arg(&input.input, format))
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
    let by_bytes = rows.input_len();
    let position = |rows: &source::Rows, count: usize| match by_bytes {
        Some(_) => rows.input_read(),
        None => count as u64,
    };
    progress.begin(Phase::Reading, by_bytes);
    let mut all = Vec::new();
    while let Some(row) = rows.next() {
        all.push(row?);
        if all.len().is_multiple_of(1024) {
            progress.update(position(&rows, all.len()));
        }
    }
    progress.update(position(&rows, all.len()));
    progress.end(&format!("{} rows", thousands(all.len() as u64)));
    Ok(all)
}

/// Says what a source notes about its rows (a PostgreSQL column read as text that is not
/// what PostgreSQL stores): the measurements are of those rows.
pub fn print_note(rows: &source::Rows) {
    if let Some(note) = rows.note() {
        eprintln!("pgdict: note: {note}");
    }
}

/// Where a datum was found in its input, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    /// The 1-based line of a hex input.
    Line(usize),
    /// The 0-based byte offset of a datums file record or a varlena.
    Byte(usize),
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Line(line) => write!(f, "line {line}"),
            Position::Byte(offset) => write!(f, "byte {offset}"),
        }
    }
}

/// One datum of a datum input.
#[derive(Clone, Debug)]
pub struct Datum {
    pub bytes: Vec<u8>,
    pub position: Position,
}

/// The datums of a datum input, and the format they were read in.
pub struct Datums {
    pub origin: String,
    pub format: DatumFormatArg,
    pub datums: Vec<Datum>,
}

/// Reads a whole file, or standard input for `-`.
pub fn read_input(path: &Path) -> anyhow::Result<(String, Vec<u8>)> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        return Ok(("standard input".into(), bytes));
    }
    let origin = path.display().to_string();
    let read = || -> io::Result<Vec<u8>> {
        let mut file = fs::File::open(path)?;
        let len = file.metadata()?.len();
        // A file larger than memory is a clear error, not an abort on allocation failure.
        let mut bytes = Vec::new();
        usize::try_from(len)
            .ok()
            .and_then(|len| bytes.try_reserve_exact(len).ok())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    format!("{len} bytes do not fit in memory"),
                )
            })?;
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let bytes = read().with_context(|| format!("cannot read {origin}"))?;
    Ok((origin, bytes))
}

/// Reads the datums of a datum input, in the format given or the one detected.
pub fn read_datums(input: &DatumInput) -> anyhow::Result<Datums> {
    let (origin, bytes) = read_input(&input.input)?;
    let by_name = input
        .input
        .extension()
        .is_some_and(|e| e == "datums")
        .then_some(DatumFormatArg::Datums);
    let parsed = match input.format.or(by_name) {
        Some(format) => parse(&bytes, format, &origin)
            .map(|datums| (format, datums))
            .with_context(|| format!("cannot read the datums of {origin}"))
            .hint(format_hint(format))?,
        None => detect(&bytes, &origin)
            .with_context(|| format!("cannot read the datums of {origin}"))?,
    };
    if parsed.1.is_empty() {
        return Err(user_error(
            format!("{origin} holds no datums"),
            "give a datums file written by `pgdict compress`, or hex lines as psql prints a bytea",
        ));
    }
    Ok(Datums {
        origin,
        format: parsed.0,
        datums: parsed.1,
    })
}

fn format_hint(format: DatumFormatArg) -> &'static str {
    match format {
        DatumFormatArg::Datums => {
            "a datums file is what `pgdict compress` writes (u32 little-endian length, then the \
             datum); for hex text use --format hex"
        }
        DatumFormatArg::Hex => {
            "give one datum per line as psql prints a bytea: \\x followed by an even number of \
             hex digits (`psql -At` prints nothing else)"
        }
        DatumFormatArg::Varlena => {
            "varlenas back to back, each as long as its header says; for hex text use --format \
             hex"
        }
    }
}

fn parse(bytes: &[u8], format: DatumFormatArg, origin: &str) -> anyhow::Result<Vec<Datum>> {
    match format {
        DatumFormatArg::Datums => parse_datums_file(bytes, origin),
        DatumFormatArg::Hex => parse_hex(bytes),
        DatumFormatArg::Varlena => parse_varlenas(bytes),
    }
}

/// Tells the format from the bytes: text holding `\x` is hex; otherwise a datums file, then
/// varlenas back to back, whichever reads to the end.
fn detect(bytes: &[u8], origin: &str) -> anyhow::Result<(DatumFormatArg, Vec<Datum>)> {
    if is_text(bytes) && bytes.windows(2).any(|w| w == b"\\x") {
        let datums = parse_hex(bytes).hint(format_hint(DatumFormatArg::Hex))?;
        return Ok((DatumFormatArg::Hex, datums));
    }
    let as_datums = match parse_datums_file(bytes, origin) {
        Ok(datums) => return Ok((DatumFormatArg::Datums, datums)),
        Err(e) => e,
    };
    let as_varlenas = match parse_varlenas(bytes) {
        Ok(datums) => return Ok((DatumFormatArg::Varlena, datums)),
        Err(e) => e,
    };
    Err(user_error(
        format!(
            "the input is neither hex text (no `\\x`), nor a datums file ({}), nor varlenas back \
             to back ({})",
            root_message(&as_datums),
            root_message(&as_varlenas)
        ),
        "say which it is with --format datums|hex|varlena",
    ))
}

fn root_message(error: &anyhow::Error) -> String {
    error
        .chain()
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// Text: UTF-8 with no control characters but tab, carriage return and line feed.
fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok()
        && bytes
            .iter()
            .all(|&b| b >= 0x20 || b == b'\t' || b == b'\r' || b == b'\n')
}

fn parse_datums_file(bytes: &[u8], origin: &str) -> anyhow::Result<Vec<Datum>> {
    let mut reader = datums_file::Reader::new(bytes, origin);
    let mut datums = Vec::new();
    let mut offset = 0;
    while let Some(datum) = reader.read_datum()? {
        let len = datum.len();
        datums.push(Datum {
            bytes: datum,
            position: Position::Byte(offset),
        });
        offset += datums_file::PREFIX_LEN + len;
    }
    Ok(datums)
}

fn parse_varlenas(bytes: &[u8]) -> anyhow::Result<Vec<Datum>> {
    let mut datums = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        let header = datum::read_header(&bytes[offset..])
            .with_context(|| format!("varlena at byte {offset}"))?;
        let end = offset + header.total_len;
        if end > bytes.len() {
            anyhow::bail!(
                "the varlena at byte {offset} says it is {} bytes long, but only {} bytes are left",
                header.total_len,
                bytes.len() - offset
            );
        }
        datums.push(Datum {
            bytes: bytes[offset..end].to_vec(),
            position: Position::Byte(offset),
        });
        offset = end;
    }
    Ok(datums)
}

/// Hex text: each line holds datums as psql prints a bytea (`\x0b616263`), or a bytea array as
/// pageinspect's `tuple_data_split` prints one (`{"\\x0b616263",NULL}`). psql's decorations
/// (a header line over a line of dashes, `(3 rows)`, `-[ RECORD 1 ]-`) are skipped, and in
/// rows of several columns (`1 | \x0b61`) every field that is a bytea is a datum.
fn parse_hex(bytes: &[u8]) -> anyhow::Result<Vec<Datum>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("not text: invalid UTF-8 at byte {}", e.valid_up_to()))?;
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let is_rule = |line: &str| !line.is_empty() && line.chars().all(|c| c == '-' || c == '+');
    let mut datums = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        let header = lines.get(index + 1).is_some_and(|next| is_rule(next));
        if line.is_empty()
            || header
            || is_rule(line)
            || is_row_count(line)
            || line.starts_with("-[ RECORD")
        {
            continue;
        }
        let mut found = false;
        for field in line.split('|').map(str::trim) {
            if field.starts_with("\\x") {
                found = true;
                let bytes = hex_literal(field).map_err(|e| anyhow!("line {number}: {e}"))?;
                datums.push(Datum {
                    bytes,
                    position: Position::Line(number),
                });
            } else if field.starts_with('{') {
                found = true;
                for bytes in bytea_array(field).map_err(|e| anyhow!("line {number}: {e}"))? {
                    datums.push(Datum {
                        bytes,
                        position: Position::Line(number),
                    });
                }
            }
        }
        if !found {
            anyhow::bail!(
                "line {number}: not a hex datum (no field starts with \\x): {}",
                shorten(line, 60)
            );
        }
    }
    Ok(datums)
}

/// psql's `(1 row)`, `(25 rows)`.
fn is_row_count(line: &str) -> bool {
    line.strip_prefix('(')
        .and_then(|l| l.strip_suffix(" rows)").or_else(|| l.strip_suffix(" row)")))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The bytes of a `\x...` literal.
fn hex_literal(field: &str) -> anyhow::Result<Vec<u8>> {
    let digits = field
        .strip_prefix("\\x")
        .ok_or_else(|| anyhow::anyhow!("a bytea in hex starts with \\x: {}", shorten(field, 40)))?;
    if let Some(pos) = digits.find(|c: char| !c.is_ascii_hexdigit()) {
        anyhow::bail!(
            "{:?} at character {} of the \\x literal is not a hex digit",
            digits[pos..].chars().next().unwrap_or(' '),
            pos + 3
        );
    }
    if digits.len() % 2 != 0 {
        anyhow::bail!(
            "the \\x literal has an odd number of hex digits ({}): is it cut off?",
            digits.len()
        );
    }
    Ok(digits
        .as_bytes()
        .chunks(2)
        .map(|pair| (hex_value(pair[0]) << 4) | hex_value(pair[1]))
        .collect())
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit - b'A' + 10,
    }
}

/// The non-NULL elements of a bytea array literal, `{"\\x0b61",NULL,"\\x0d6263"}`.
fn bytea_array(field: &str) -> anyhow::Result<Vec<Vec<u8>>> {
    let inner = field
        .strip_prefix('{')
        .and_then(|f| f.strip_suffix('}'))
        .ok_or_else(|| anyhow::anyhow!("an array literal ends with }}: {}", shorten(field, 40)))?;
    let mut out = Vec::new();
    for element in inner.split(',').map(str::trim) {
        if element.is_empty() || element.eq_ignore_ascii_case("NULL") {
            continue;
        }
        let unquoted = element
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .map(|e| e.replace("\\\\", "\\"))
            .unwrap_or_else(|| element.to_string());
        out.push(hex_literal(&unquoted)?);
    }
    Ok(out)
}

/// `text` cut to `max` characters, with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<Vec<u8>> {
        parse_hex(text.as_bytes())
            .unwrap()
            .into_iter()
            .map(|d| d.bytes)
            .collect()
    }

    #[test]
    fn psql_aligned_unaligned_and_arrays() {
        assert_eq!(hex("\\x0b616263\n"), [b"\x0b\x61\x62\x63".to_vec()]);
        let aligned = "   datum    \n------------\n \\x0b616263\n \\x07AbCd\n(2 rows)\n\n";
        assert_eq!(hex(aligned), [b"\x0babc".to_vec(), vec![0x07, 0xab, 0xcd]]);
        let columns = " id | datum\n----+-----------\n  1 | \\x0b616263\n(1 row)\n";
        assert_eq!(hex(columns), [b"\x0babc".to_vec()]);
        let array = "{\"\\\\x0b616263\",NULL,\"\\\\x05ff\"}\n";
        assert_eq!(hex(array), [b"\x0babc".to_vec(), vec![0x05, 0xff]]);
    }

    #[test]
    fn bad_hex_names_the_line() {
        let err = parse_hex(b"\\x0b61\n\\x0b6\n").unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "line 2: the \\x literal has an odd number of hex digits (3): is it cut off?"
        );
        let err = parse_hex(b"\\x0b61\nhello\n").unwrap_err();
        assert!(
            err.to_string().starts_with("line 2: not a hex datum"),
            "{err}"
        );
        let err = parse_hex(b"\\x0g\n").unwrap_err();
        assert!(format!("{err:#}").contains("'g' at character 4"), "{err:#}");
    }

    #[test]
    fn detects_each_format() {
        let datums = b"\x02\x00\x00\x00\x05a\x03\x00\x00\x00\x07bc";
        let (format, found) = detect(datums, "t").unwrap();
        assert_eq!(format, DatumFormatArg::Datums);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].position, Position::Byte(6));
        let (format, found) = detect(b"\x05a\x07bc", "t").unwrap();
        assert_eq!(format, DatumFormatArg::Varlena);
        assert_eq!(found[1].bytes, b"\x07bc");
        let (format, _) = detect(b" \\x05ff\n", "t").unwrap();
        assert_eq!(format, DatumFormatArg::Hex);
        assert!(detect(b"\x01\x02", "t").is_err());
    }
}
