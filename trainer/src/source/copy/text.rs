//! The text format (the table in the parent module's documentation): one column of it read a
//! line at a time, and a field escaped as `COPY ... TO` writes it.

use std::io::BufRead;
use std::ops::Range;

use super::super::{Column, LineEnd, SourceError, TextRecords};
use super::{CopyOptions, Record};

/// One column of COPY text data, a line at a time.
pub(super) struct TextRows<R> {
    /// The input, where it is, the line being read and the column's place in it.
    pub(super) text: TextRecords<R>,
    /// The column asked for (and, for messages, how), the delimiter and the NULL string.
    pub(super) options: CopyOptions,
}

impl<R: BufRead> TextRows<R> {
    pub(super) fn new(input: R, options: CopyOptions, origin: String) -> Result<Self, SourceError> {
        let mut rows = TextRows {
            text: TextRecords::new(input, origin),
            options,
        };
        match rows.options.column.clone() {
            Some(Column::Index(index)) => {
                rows.text.index = index;
                // A header line said to be there: passed over, and kept to be written back.
                if rows.options.header && rows.read_line()?.is_some() {
                    let fields = split_fields(&rows.text.buf, rows.options.text_delimiter());
                    rows.text.fields = Some(fields.len());
                    rows.text.header = Some(rows.text.buf.clone());
                }
            }
            Some(Column::Name(name)) => {
                let no_column = |origin: &str, reason: String| SourceError::NoColumn {
                    format: "COPY",
                    origin: origin.to_string(),
                    column: Column::Name(name.clone()),
                    reason,
                };
                if rows.read_line()?.is_none() {
                    return Err(no_column(&rows.text.origin, "the input is empty".into()));
                }
                let delimiter = rows.options.text_delimiter();
                let names: Vec<Vec<u8>> = split_fields(&rows.text.buf, delimiter)
                    .into_iter()
                    .map(|field| unescape(&rows.text.buf[field]))
                    .collect();
                rows.text.fields = Some(names.len());
                match names.iter().position(|n| n == name.as_bytes()) {
                    Some(index) => {
                        rows.text.index = index;
                        rows.text.header = Some(rows.text.buf.clone());
                    }
                    None => {
                        let names: Vec<_> =
                            names.iter().map(|n| String::from_utf8_lossy(n)).collect();
                        return Err(no_column(
                            &format!("{}:1", rows.text.origin),
                            format!(
                                "the first line, read as COPY's HEADER, has {}",
                                names.join(", ")
                            ),
                        ));
                    }
                }
            }
            None => {}
        }
        Ok(rows)
    }

    fn bad(&self, line: u64, message: String) -> SourceError {
        SourceError::BadCopy {
            origin: format!("{}:{line}", self.text.origin),
            message,
        }
    }

    /// Reads the next line into `buf` (a line end that a backslash escapes is part of it);
    /// its first line's number, or `None` at the end of the data.
    fn read_line(&mut self) -> Result<Option<u64>, SourceError> {
        let Some(first) = self.text.start_record() else {
            return Ok(None);
        };
        loop {
            if !self.text.append_line()? {
                if self.text.buf.is_empty() {
                    return Ok(None);
                }
                break; // The data ends after a `\` and a line end.
            }
            let buf = &self.text.buf;
            let Some(mut end) = LineEnd::ending(buf) else {
                // The data ends without a line end. A `\` at its very end stands for nothing:
                // dropped here, it cannot escape the line end a record written back ends with.
                if escaped(buf) {
                    self.text.buf.pop();
                }
                break;
            };
            if end == LineEnd::CrLf && escaped(&buf[..buf.len() - 2]) {
                end = LineEnd::Lf; // `\` and a carriage return: one in the data.
            }
            let line = &buf[..buf.len() - end.len()];
            if escaped(line) {
                continue; // `\` and a line feed or carriage return: one in the data.
            }
            let (outside, written) = (
                "that no backslash escapes",
                "in data COPY writes them as \\r and \\n",
            );
            let after_marker = line.ends_with(b"\\.") && !escaped(&line[..line.len() - 2]);
            (self.text.take_line_end(end, after_marker, outside, written))
                .map_err(|message| self.bad(first, message))?;
            break;
        }
        if let Some(at) = end_marker(&self.text.buf) {
            if at + 2 != self.text.buf.len() {
                return Err(self.bad(
                    first,
                    "more on the line after `\\.`, the end-of-data marker".into(),
                ));
            }
            self.text.buf.truncate(at);
            self.text.ended = true;
            if self.text.buf.is_empty() {
                return Ok(None);
            }
        }
        Ok(Some(first))
    }
}

impl<R: BufRead> TextRows<R> {
    /// Reads the next line into `buf` and finds the column in it: the line's number and where
    /// the column's field is in `buf`; `None` at the end of the data.
    pub(super) fn next_field(&mut self) -> Result<Option<(u64, Range<usize>)>, SourceError> {
        let Some(line) = self.read_line()? else {
            return Ok(None);
        };
        let mut fields = split_fields(&self.text.buf, self.options.text_delimiter());
        let count = fields.len();
        (self.text.check_width(count, "lines")).map_err(|message| self.bad(line, message))?;
        if self.options.column.is_none() && count != 1 {
            let separated = match self.options.text_delimiter() {
                b'\t' => "tab-separated".to_string(),
                other => format!("separated by {:?}", char::from(other)),
            };
            return Err(self.bad(
                line,
                format!("{count} fields ({separated}), where one is read (say which)"),
            ));
        }
        if self.text.index >= count {
            return Err(SourceError::NoColumn {
                format: "COPY",
                origin: format!("{}:{line}", self.text.origin),
                column: (self.options.column.clone()).unwrap_or(Column::Index(self.text.index)),
                reason: format!("the line has {count} fields"),
            });
        }
        Ok(Some((line, fields.swap_remove(self.text.index))))
    }

    pub(super) fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        let Some((line, field)) = self.next_field()? else {
            return Ok(None);
        };
        let end = self.text.line_end();
        let mut record = Record::in_line(None, line, &self.text.buf, field.clone(), end);
        record.value = self.take_value(field);
        Ok(Some(record))
    }

    /// The value of the field at `field` in `buf`, `None` if it is the NULL string: copied out
    /// of a small record; made in a large record's buffer itself, taken (see
    /// [`TextRecords::take_field`]). Either way a large buffer is let go after
    /// ([`TextRecords::release_large_buf`]).
    pub(super) fn take_value(&mut self, field: Range<usize>) -> Option<Vec<u8>> {
        let value = if !self.text.is_large() {
            self.options.value(&self.text.buf[field])
        } else if &self.text.buf[field.clone()] == self.options.text_null() {
            None
        } else {
            let mut value = self.text.take_field(field);
            unescape_in_place(&mut value);
            Some(value)
        };
        self.text.release_large_buf();
        value
    }
}

impl<R: BufRead> TextRows<R> {
    /// The next non-NULL, non-empty value, `None` at the end of the data.
    pub(super) fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        while let Some((_, field)) = self.next_field()? {
            match self.take_value(field) {
                Some(value) if !value.is_empty() => return Ok(Some(value)),
                _ => {} // NULL, or empty.
            }
        }
        Ok(None)
    }
}

/// Where the fields of a text line are (escapes in place), split at the delimiters no
/// backslash escapes. (A line end byte in it is escaped: `read_line` ends the line at any
/// other.)
fn split_fields(line: &[u8], delimiter: u8) -> Vec<Range<usize>> {
    let mut fields = Vec::new();
    let mut start = 0;
    let mut at = 0;
    // memchr2 skips the bytes between those that matter (SIMD): most of a line.
    while let Some(found) = memchr::memchr2(b'\\', delimiter, &line[at..]) {
        let byte = at + found;
        at = byte + 1;
        if line[byte] == b'\\' {
            at += 1; // The next byte is escaped, whatever it is.
        } else {
            fields.push(start..byte);
            start = at;
        }
        if at >= line.len() {
            break;
        }
    }
    fields.push(start..line.len());
    fields
}

/// Where the first `\.` that no backslash escapes starts in a text line.
fn end_marker(line: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'\\', line.get(at..)?) {
        let backslash = at + found;
        if line.get(backslash + 1) == Some(&b'.') {
            return Some(backslash);
        }
        at = backslash + 2; // Past the byte it escapes.
    }
    None
}

/// Whether the byte after `text` is escaped: `text` ends in an odd run of backslashes (each
/// backslash escapes the byte after it, `\\` being one backslash).
fn escaped(text: &[u8]) -> bool {
    text.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// Appends `value` to `out` as `COPY ... TO` writes a field in the text format: a backslash
/// before each backslash and tab (the delimiter), and `\b \f \n \r \t \v` for those bytes;
/// every other byte as it is. [`unescape`] reads it back.
pub fn escape_text(value: &[u8], out: &mut Vec<u8>) {
    escape_text_with(value, b'\t', out);
}

/// [`escape_text`] for data whose field delimiter is `delimiter`: that byte, too, is written
/// after a backslash (`COPY ... TO` with `DELIMITER`).
pub fn escape_text_with(value: &[u8], delimiter: u8, out: &mut Vec<u8>) {
    out.reserve(value.len());
    let mut rest = value;
    while let Some(at) = find_escaped(rest, delimiter) {
        out.extend_from_slice(&rest[..at]);
        let escaped = match rest[at] {
            b'\\' => b'\\',
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x0b => b'v',
            other => other, // the delimiter
        };
        out.extend_from_slice(&[b'\\', escaped]);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

/// Whether [`escape_text_with`] would escape a byte of `value`: if not, it writes `value` as
/// it is.
pub(super) fn needs_escapes(value: &[u8], delimiter: u8) -> bool {
    find_escaped(value, delimiter).is_some()
}

/// Whether COPY's text format escapes `byte`: a backslash, one of 0x08-0x0d (backspace,
/// tab, line feed, vertical tab, form feed, carriage return), or the delimiter.
fn needs_escape(byte: u8, delimiter: u8) -> bool {
    byte == b'\\' || byte.wrapping_sub(0x08) <= 0x0d - 0x08 || byte == delimiter
}

/// Where the first byte of `bytes` that [`needs_escape`] is. Looks at 16 bytes at a time
/// with no early exit inside them, which the compiler turns into vector compares: values
/// seldom hold any such byte.
fn find_escaped(bytes: &[u8], delimiter: u8) -> Option<usize> {
    const CHUNK: usize = 16;
    let escape = |b: &u8| needs_escape(*b, delimiter);
    let mut chunks = bytes.chunks_exact(CHUNK);
    let mut start = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |any, b| any | escape(b)) {
            return chunk.iter().position(escape).map(|at| start + at);
        }
        start += CHUNK;
    }
    let tail = chunks.remainder();
    tail.iter().position(escape).map(|at| start + at)
}

/// A text field's value, escapes decoded (see the module documentation). (Whether the field
/// is the NULL string is for the reader to say, before: `\N` is NULL only as a whole field.)
pub fn unescape(field: &[u8]) -> Vec<u8> {
    let mut value = Vec::with_capacity(field.len());
    let mut at = 0;
    // The bytes up to each backslash as they are (memchr: SIMD), then the escape.
    while let Some(found) = memchr::memchr(b'\\', &field[at..]) {
        value.extend_from_slice(&field[at..at + found]);
        at += found + 1;
        let Some(decoded) = decode_escape(field, &mut at) else {
            break; // A backslash at the end of the data stands for nothing.
        };
        value.push(decoded);
    }
    value.extend_from_slice(&field[at..]);
    value
}

/// [`unescape`] made in `field`'s own buffer, which then holds the value: for a large field,
/// not held twice. Each escape is two bytes or more and decodes to one, so every byte is
/// written at or before where it was read.
pub(super) fn unescape_in_place(field: &mut Vec<u8>) {
    let (mut at, mut to) = (0, 0);
    loop {
        let found = memchr::memchr(b'\\', &field[at..]);
        let run_end = found.map_or(field.len(), |found| at + found);
        field.copy_within(at..run_end, to);
        to += run_end - at;
        if found.is_none() {
            break;
        }
        at = run_end + 1;
        let Some(decoded) = decode_escape(field, &mut at) else {
            break; // A backslash at the end of the data stands for nothing.
        };
        field[to] = decoded;
        to += 1;
    }
    field.truncate(to);
}

/// The byte the escape whose backslash is just before `at` in `field` stands for, `at` moved
/// past it; `None` for a backslash at the end of the data.
fn decode_escape(field: &[u8], at: &mut usize) -> Option<u8> {
    let octal = |b: u8| (b'0'..=b'7').contains(&b).then(|| b - b'0');
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let next = *field.get(*at)?;
    *at += 1;
    Some(match next {
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0b,
        b'0'..=b'7' => {
            let mut code = u32::from(next - b'0');
            for _ in 0..2 {
                match field.get(*at).copied().and_then(octal) {
                    Some(digit) => {
                        code = code * 8 + u32::from(digit);
                        *at += 1;
                    }
                    None => break,
                }
            }
            code as u8 // `\777` is 0xff: the low 8 bits, as PostgreSQL takes them.
        }
        b'x' => match field.get(*at).copied().and_then(hex) {
            Some(high) => {
                *at += 1;
                match field.get(*at).copied().and_then(hex) {
                    Some(low) => {
                        *at += 1;
                        high << 4 | low
                    }
                    None => high,
                }
            }
            None => b'x',
        },
        other => other,
    })
}
