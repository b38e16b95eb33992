//! Escape text: what psql prints of a bytea column under `bytea_output = escape`, read as
//! PostgreSQL's `byteain` reads it.

use std::io::BufRead;

use anyhow::anyhow;
use pgdict_trainer::source::datums_file;

use super::{read_bounded_line, Datum, Position};

/// The longest escape line read: a value at PostgreSQL's limit (1 GiB - 1) as psql prints it
/// under `bytea_output = escape`, four characters a byte at most, and the line end.
const MAX_ESCAPE_LINE_LEN: usize = 4 * datums_file::MAX_DATUM_LEN + 2;

/// Escape text: each line one datum, as `psql -At` prints a bytea column under `bytea_output
/// = escape` (PostgreSQL's `byteaout`). The line is the value exactly: nothing is trimmed, as
/// a space is a byte of it; only the line end (`\n`, `\r\n`) goes. An empty line (psql's
/// NULL, and no datum) is skipped.
pub(super) struct EscapeLines<R> {
    pub(super) input: R,
    /// The longest line read ([`MAX_ESCAPE_LINE_LEN`]).
    max_line_len: usize,
    /// Number of the last line read (1-based).
    line_number: usize,
    /// Byte offset of the end of the last line read.
    pub(super) offset: u64,
}

impl<R: BufRead> EscapeLines<R> {
    pub(super) fn new(input: R) -> EscapeLines<R> {
        EscapeLines {
            input,
            max_line_len: MAX_ESCAPE_LINE_LEN,
            line_number: 0,
            offset: 0,
        }
    }

    pub(super) fn next_datum(&mut self) -> anyhow::Result<Option<Datum>> {
        loop {
            let number = self.line_number + 1;
            let Some(line) = read_bounded_line(&mut self.input, self.max_line_len, number)? else {
                return Ok(None);
            };
            self.line_number = number;
            self.offset += line.len() as u64;
            let value = line.strip_suffix(b"\n").unwrap_or(&line);
            let value = value.strip_suffix(b"\r").unwrap_or(value);
            if value.is_empty() {
                continue;
            }
            let bytes = escape_literal(value).map_err(|e| anyhow!("line {number}: {e}"))?;
            return Ok(Some(Datum {
                bytes,
                position: Position::Line(number),
            }));
        }
    }
}

/// The bytes of a bytea in escape text, as PostgreSQL's `byteain` reads it: `\\` is a
/// backslash, `\` and three octal digits (the first 0-3) a byte, any other byte itself; any
/// other backslash is PostgreSQL's error.
pub(super) fn escape_literal(text: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        match &text[at..] {
            [b'\\', b'\\', ..] => {
                bytes.push(b'\\');
                at += 2;
            }
            [b'\\', high @ b'0'..=b'3', mid @ b'0'..=b'7', low @ b'0'..=b'7', ..] => {
                bytes.push(((high - b'0') << 6) | ((mid - b'0') << 3) | (low - b'0'));
                at += 4;
            }
            [b'\\', ..] => anyhow::bail!(
                "invalid input syntax for type bytea (a backslash at character {} is followed \
                 by neither a backslash nor three octal digits)",
                at + 1
            ),
            [byte, ..] => {
                bytes.push(*byte);
                at += 1;
            }
            [] => unreachable!("at < text.len()"),
        }
    }
    Ok(bytes)
}
