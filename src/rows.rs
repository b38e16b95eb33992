//! Reading datums from row files: the formats of `corpus/` and `../shared/corpus/rows`.
//!
//! - `*.jsonl` (JSON Lines): one JSON value per line. A JSON string is the datum (decoded, so
//!   it may contain newlines); any other value is the datum as its line of compact JSON text.
//! - anything else: one datum per line, verbatim; the line feed (and a carriage return
//!   before it) is not part of the datum.
//!
//! Empty lines are not datums and are skipped.

use std::fs;
use std::io;
use std::path::Path;

/// How a row file encodes its datums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFormat {
    /// One datum per line.
    Lines,
    /// One JSON value per line: a string is its decoded text, anything else the line itself.
    JsonLines,
}

impl RowFormat {
    /// The format a file's extension implies: `.jsonl` is JSON Lines, anything else lines.
    pub fn from_path(path: &Path) -> RowFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl") => RowFormat::JsonLines,
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
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        match format {
            RowFormat::Lines => datums.push(line.to_vec()),
            RowFormat::JsonLines => {
                let value: serde_json::Value =
                    serde_json::from_slice(line).map_err(|e| RowsError::BadJson {
                        path: origin.to_string(),
                        line: index + 1,
                        message: e.to_string(),
                    })?;
                match value {
                    serde_json::Value::String(text) => datums.push(text.into_bytes()),
                    _ => datums.push(line.to_vec()),
                }
            }
        }
    }
    Ok(datums)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bad_json_names_the_line() {
        let err = parse_rows(b"\"ok\"\n{oops\n", RowFormat::JsonLines, "t.jsonl").unwrap_err();
        assert!(
            err.to_string().starts_with("t.jsonl:2: not a JSON value"),
            "{err}"
        );
    }

    #[test]
    fn lines_drop_line_feeds_and_empty_lines() {
        let rows = parse_rows(b"a,b\r\n\nc,d", RowFormat::Lines, "t.txt").unwrap();
        assert_eq!(rows, vec![b"a,b".to_vec(), b"c,d".to_vec()]);
    }
}
