//! Reading datums from row files: the formats of `corpus/` and `../shared/corpus/rows`.
//!
//! - `*.jsonl`, `*.ndjson` (JSON Lines, the extension in any case): one JSON value per line. A JSON string is the datum (decoded, so
//!   it may contain newlines); any other value is the datum as its line of compact JSON text.
//! - anything else: one datum per line, verbatim; the line feed (and a carriage return
//!   before it) is not part of the datum. A carriage return at the very end of the input,
//!   with no line feed after it, ends no line and is the last datum's.
//!
//! Empty lines are not datums and are skipped; so, in JSON Lines, are lines of only JSON
//! whitespace (spaces, tabs, carriage returns), which hold no value either, while in lines a
//! line of spaces is a row of spaces. A UTF-8 byte order mark at the start of a JSON
//! Lines file is not part of its first value ([`BYTE_ORDER_MARK`]; RFC 8259 lets a JSON reader
//! ignore one, and Windows tools write one); in lines, every byte is the row's.

use std::borrow::Cow;
use std::fs;
use std::io;
use std::path::Path;

/// The UTF-8 byte order mark, skipped at the start of JSON Lines.
pub const BYTE_ORDER_MARK: &[u8] = b"\xef\xbb\xbf";

/// How a row file encodes its datums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFormat {
    /// One datum per line.
    Lines,
    /// One JSON value per line: a string is its decoded text, anything else the line itself.
    JsonLines,
}

impl RowFormat {
    /// The format a file's extension implies, as the commands read it: `.jsonl` or `.ndjson`
    /// (in any case) is JSON Lines, anything else lines.
    pub fn from_path(path: &Path) -> RowFormat {
        let extension = path.extension().and_then(|e| e.to_str());
        match extension.map(str::to_ascii_lowercase).as_deref() {
            Some("jsonl" | "ndjson") => RowFormat::JsonLines,
            _ => RowFormat::Lines,
        }
    }
}

/// A row file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RowsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// A JSON Lines file holds a line that is not JSON.
    #[error("{path}:{line}: not a JSON value: {message}")]
    BadJson {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What the JSON parser said.
        message: String,
    },
}

/// A line of JSON Lines that is not one JSON value: what the JSON parser said, with the column
/// where it stopped. (The parser's "line 1" is left out: its line is always the first of
/// what it was given, and the reader names the file's line.)
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JsonLineError(String);

impl From<serde_json::Error> for JsonLineError {
    fn from(error: serde_json::Error) -> JsonLineError {
        let message = error.to_string();
        let position = format!(" at line {} column {}", error.line(), error.column());
        match message.strip_suffix(&position) {
            Some(what) => JsonLineError(format!("{what} at column {}", error.column())),
            None => JsonLineError(message),
        }
    }
}

/// Whether `byte` is whitespace in JSON's grammar (RFC 8259: space, tab, line feed, carriage
/// return).
fn is_json_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Reads every datum of a row file, in the format its extension implies.
pub fn read_row_file(path: &Path) -> Result<Vec<Vec<u8>>, RowsError> {
    let bytes = fs::read(path).map_err(|source| RowsError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse_rows(
        &bytes,
        RowFormat::from_path(path),
        &path.display().to_string(),
    )
}

/// Splits `bytes` into datums; `origin` names the source in errors.
pub fn parse_rows(
    bytes: &[u8],
    format: RowFormat,
    origin: &str,
) -> Result<Vec<Vec<u8>>, RowsError> {
    let mut datums = Vec::new();
    let bytes = match format {
        RowFormat::JsonLines => bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes),
        RowFormat::Lines => bytes,
    };
    for (index, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let row = line_row(line, format).map_err(|e| RowsError::BadJson {
            path: origin.to_string(),
            line: index + 1,
            message: e.to_string(),
        })?;
        datums.extend(row.map(Cow::into_owned));
    }
    Ok(datums)
}

/// The row one line holds, given with its line feed (the last line of a file may have none):
/// `None` for an empty line, and in JSON Lines for a line of only whitespace. The line feed,
/// and a carriage return before it, are not part of the row; a carriage return that ends the
/// input with no line feed after it is, in lines (it ends no line), and is whitespace around
/// the value in JSON Lines. An error only for JSON Lines, a line that is not one JSON value
/// ([`json_line_row`]).
pub fn line_row(line: &[u8], format: RowFormat) -> Result<Option<Cow<'_, [u8]>>, JsonLineError> {
    let line = match line.strip_suffix(b"\n") {
        Some(line) => line.strip_suffix(b"\r").unwrap_or(line),
        None if format == RowFormat::JsonLines => line.strip_suffix(b"\r").unwrap_or(line),
        None => line,
    };
    let holds_nothing = match format {
        RowFormat::Lines => line.is_empty(),
        // No value, as in an empty line (a stray `\r`, indentation left by an editor).
        RowFormat::JsonLines => line.iter().all(|&b| is_json_whitespace(b)),
    };
    if holds_nothing {
        return Ok(None);
    }
    match format {
        RowFormat::Lines => Ok(Some(Cow::Borrowed(line))),
        RowFormat::JsonLines => json_line_row(line).map(Some),
    }
}

/// The row a line of JSON Lines holds: a JSON string's decoded text, or the line itself for any
/// other JSON value. The line must be UTF-8 and one JSON value (whitespace around it allowed).
///
/// A value other than a string is only checked, never built: building it (a
/// `serde_json::Value`, with its maps and strings) took four fifths of `pgdict decompress -o
/// x.jsonl`'s time. Checked so, a number beyond `f64` (`1e999`), a `\ud800` inside an array
/// and nesting deeper than 128 levels are accepted, as JSON's grammar accepts them; the row is
/// the line as it is either way.
pub fn json_line_row(line: &[u8]) -> Result<Cow<'_, [u8]>, JsonLineError> {
    let first = line.iter().find(|&&b| !is_json_whitespace(b));
    if first == Some(&b'"') {
        let text: String = serde_json::from_slice(line)?;
        return Ok(Cow::Owned(text.into_bytes()));
    }
    // serde_json checks the UTF-8 of a string it builds, not of one it skips.
    if simdutf8::basic::from_utf8(line).is_err() {
        let bad = std::str::from_utf8(line).map_or_else(|e| e.valid_up_to(), |_| line.len());
        return Err(JsonLineError(format!(
            "invalid UTF-8 at byte {bad} of the line"
        )));
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(line)?;
    Ok(Cow::Borrowed(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_starts_json_lines_not_their_first_value() {
        let file = b"\xef\xbb\xbf{\"a\":1}\n";
        let rows = parse_rows(file, RowFormat::JsonLines, "t").unwrap();
        assert_eq!(rows, [b"{\"a\":1}".to_vec()]);
        let rows = parse_rows(file, RowFormat::Lines, "t").unwrap();
        assert_eq!(rows, [file[..file.len() - 1].to_vec()]);
    }

    #[test]
    fn json_strings_are_decoded_other_values_kept_verbatim() {
        let file = b"\"line one\\nline two\"\n{\"a\": 1}\n\n[1,2]\r\n";
        let rows = parse_rows(file, RowFormat::JsonLines, "t.jsonl").unwrap();
        assert_eq!(
            rows,
            vec![
                b"line one\nline two".to_vec(),
                b"{\"a\": 1}".to_vec(),
                b"[1,2]".to_vec()
            ]
        );
    }

    #[test]
    fn bad_json_names_the_line_and_the_column() {
        let err = parse_rows(b"\"ok\"\n{oops\n", RowFormat::JsonLines, "t.jsonl").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.jsonl:2: not a JSON value: key must be a string at column 2"
        );
    }

    /// A JSON Lines line of only whitespace holds no value, as an empty line holds none: it is
    /// skipped (it was an error, "EOF while parsing a value"). In lines it is a row.
    #[test]
    fn a_line_of_whitespace_is_skipped_in_json_lines_and_a_row_in_lines() {
        let file = b"1\n  \n\t\r\n\r\n \t \n2\n \r";
        let rows = parse_rows(file, RowFormat::JsonLines, "ws.jsonl").unwrap();
        assert_eq!(rows, vec![b"1".to_vec(), b"2".to_vec()]);
        let rows = parse_rows(file, RowFormat::Lines, "ws.txt").unwrap();
        let expected: [&[u8]; 6] = [b"1", b"  ", b"\t", b" \t ", b"2", b" \r"];
        assert_eq!(rows, expected);
    }

    #[test]
    fn a_json_line_is_checked_and_kept_or_decoded() {
        let row = |line: &[u8]| json_line_row(line).map(Cow::into_owned);
        assert_eq!(row(b" \"a\\u00e9\" ").unwrap(), "a\u{e9}".as_bytes());
        assert!(matches!(
            json_line_row(b"{\"k\": [1, 2.5e3, null]}"),
            Ok(Cow::Borrowed(_))
        ));
        assert_eq!(row(b" 42 ").unwrap(), b" 42 ");
        // What JSON's grammar allows but a serde_json::Value would not hold.
        assert_eq!(row(b"1e999").unwrap(), b"1e999");
        assert_eq!(row(b"[\"\\ud800\"]").unwrap(), b"[\"\\ud800\"]");
        let deep = [vec![b'['; 200], vec![b']'; 200]].concat();
        assert_eq!(row(&deep).unwrap(), deep);
        // Not one JSON value, or not UTF-8.
        for bad in [
            &b""[..],
            b"   ",
            b"{oops",
            b"[1] [2]",
            b"\"a\" x",
            b"\"\\ud800\"",
            b"[\"\xff\"]",
            b"\"\xff\"",
            b"nul",
        ] {
            assert!(row(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let e = row(b"[\"ok\", \"\xc3\"]").unwrap_err();
        assert_eq!(e.to_string(), "invalid UTF-8 at byte 8 of the line");
    }

    #[test]
    fn the_extension_says_json_lines_in_any_case() {
        for name in ["a.jsonl", "a.JSONL", "b.ndjson", "b.NdJson"] {
            assert_eq!(RowFormat::from_path(Path::new(name)), RowFormat::JsonLines);
        }
        for name in ["a.json", "a.txt", "jsonl", "a.jsonl.gz"] {
            assert_eq!(RowFormat::from_path(Path::new(name)), RowFormat::Lines);
        }
    }

    #[test]
    fn lines_drop_line_feeds_and_empty_lines() {
        let rows = parse_rows(b"a,b\r\n\nc,d", RowFormat::Lines, "t.txt").unwrap();
        assert_eq!(rows, vec![b"a,b".to_vec(), b"c,d".to_vec()]);
    }

    /// A carriage return with no line feed after it ends no line: at the end of the input it
    /// is the last row's (a lone `\r` is a row), and only JSON Lines reads it as whitespace.
    #[test]
    fn a_carriage_return_ending_the_input_is_data_in_lines() {
        let rows = parse_rows(b"a\r\nb\r", RowFormat::Lines, "t.txt").unwrap();
        assert_eq!(rows, vec![b"a".to_vec(), b"b\r".to_vec()]);
        let rows = parse_rows(b"a\n\r", RowFormat::Lines, "t.txt").unwrap();
        assert_eq!(rows, vec![b"a".to_vec(), b"\r".to_vec()]);
        let rows = parse_rows(b"1\r\n2\r", RowFormat::JsonLines, "t.jsonl").unwrap();
        assert_eq!(rows, vec![b"1".to_vec(), b"2".to_vec()]);
    }
}
