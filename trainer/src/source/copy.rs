//! PostgreSQL's `COPY` formats, read as rows: what `COPY (SELECT body FROM t) TO STDOUT` (or
//! psql's `\copy ... TO 'file'`) writes in the text format, and the same with `(FORMAT
//! binary)`. A stream is binary when it starts with the binary signature, else text.
//! PostgreSQL's documentation ("COPY", "File Formats") describes both; what is accepted here is
//! what `COPY ... FROM` accepts (`copyfromparse.c`), except where said.
//!
//! Text format: one row a line, its fields separated by a tab.
//!
//! ```text
//!   line end     \n, or \r\n; a \ before it makes it part of the data (COPY writes \n)
//!   \N           a whole field: NULL
//!   \b \f \n \r \t \v
//!                backspace, form feed, line feed, carriage return, tab, vertical tab
//!   \0 .. \777   1 to 3 octal digits: the byte of that value (low 8 bits)
//!   \xH \xHH     1 or 2 hex digits: that byte (\x followed by no hex digit is x)
//!   \c           any other byte c is itself: \\ a backslash, \<tab> a tab in the data
//!   \ at the end of the data: nothing
//!   \.           at the end of a line: the end of the data, the line's text before it the
//!                last row (what follows is not read); elsewhere refused
//! ```
//!
//! PostgreSQL 15's `HEADER` option writes the column names as a first line: a column named by
//! its name ([`Column::Name`]) takes the first line as that header. Every line must have as
//! many fields as the first. A carriage return that no backslash escapes, other than at the
//! end of a line, is refused.
//!
//! Where this differs from `COPY ... FROM` (`tests/copy_text_postgres.rs` loads generated
//! lines into a server and reads them here; what the server loads reads as the same values):
//! the delimiter is always a tab and NULL always `\N` (options pgdict does not take); a lone
//! carriage return never ends a line (PostgreSQL takes it for the line end if the first line
//! ends so; no `COPY ... TO` writes that); and it refuses less. Lines may end in `\n` and
//! `\r\n` in one input (PostgreSQL wants one kind), `\.` may end the data without a line end
//! after it, and a NUL byte (`\0`) is a byte of the value (a database refuses it in text; a
//! `bytea` column copied as text arrives as its hex text anyway).
//!
//! Binary format, integers big-endian:
//!
//! ```text
//!   signature   11 bytes   PGCOPY\n\377\r\n\0
//!   flags       i32        bit 16: each tuple carries an OID (WITH OIDS, PostgreSQL 11 and
//!                          older: refused); bits 17-31 must be 0; bits 0-15 are ignored
//!   extension   i32 n      then n bytes, skipped
//!   tuple       i16 k      the field count, the same in every tuple
//!               k times:   i32 len, then len bytes, the value; -1: NULL (no bytes)
//!   ...
//!   trailer     i16 -1     (the input may also end after a whole tuple, as PostgreSQL takes it)
//! ```
//!
//! A value is the bytes of its column's binary form: for `text`, `varchar`, `json`, `xml` and
//! `bytea` the bytes PostgreSQL stores; for `jsonb` a version byte (1) and the text. A value's
//! length is checked against PostgreSQL's limit before it is read, and its buffer grows as its
//! bytes arrive: a damaged length cannot make the reader allocate more than the input holds.
//!
//! [`write_header`], [`write_tuple`] and [`write_trailer`] write the binary format (what
//! `compress --copy` and `decompress --out-format copy` write), [`BROKEN_END`] ends what an
//! error stopped, and [`escape_text`] writes a text field as `COPY ... TO` does.
//!
//! As rows (see [`super`]), NULLs and empty values are skipped, as the other sources skip empty
//! lines and fields.

use std::io::{self, BufRead, Cursor, Read, Write};

use super::datums_file::{self, MAX_DATUM_LEN};
use super::{read_line_into, until_error, Column, ReadRow, RowIter, SourceError};

/// The first bytes of every binary COPY stream.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The flag that says each tuple carries an OID (PostgreSQL 11 and older, `WITH OIDS`).
const OIDS: u32 = 1 << 16;

/// A tuple of no columns: what pgdict writes to end binary COPY that an error stopped half way
/// (`compress --copy`, `decompress --out-format copy`), so that `COPY ... FROM` fails rather
/// than loading the tuples before it (it takes data that ends after a whole tuple), and so does
/// [`BinaryReader`].
pub const BROKEN_END: &[u8] = &[0, 0];

/// Writes the binary format's header: the signature, no flags, no header extension.
pub fn write_header(out: &mut impl Write) -> io::Result<()> {
    out.write_all(SIGNATURE)?;
    out.write_all(&0u32.to_be_bytes())?;
    out.write_all(&0u32.to_be_bytes())
}

/// Appends one tuple of `fields` (`None`: NULL) in the binary format.
pub fn write_tuple(out: &mut Vec<u8>, fields: &[Option<&[u8]>]) -> io::Result<()> {
    let count = i16::try_from(fields.len())
        .map_err(|_| io::Error::other("too many fields for one COPY tuple"))?;
    out.extend_from_slice(&count.to_be_bytes());
    for field in fields {
        match field {
            Some(value) => {
                let len = i32::try_from(value.len())
                    .map_err(|_| io::Error::other("a value too long for one COPY field"))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(value);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    Ok(())
}

/// Writes the binary format's trailer, which ends the tuples.
pub fn write_trailer(out: &mut impl Write) -> io::Result<()> {
    out.write_all(&(-1i16).to_be_bytes())
}

/// Why COPY data cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Reading failed.
    #[error("cannot read the COPY data: {0}")]
    Io(#[source] io::Error),
    /// The data is not COPY data, or is damaged; the message names the tuple or line and byte.
    #[error("{0}")]
    Format(String),
}

/// A [`CopyError::Format`].
fn malformed(message: impl Into<String>) -> CopyError {
    CopyError::Format(message.into())
}

/// Reads one column of a binary COPY stream, a value at a time, skipping NULLs.
pub struct BinaryReader<R> {
    /// The stream.
    pub input: R,
    /// Bytes read so far.
    pub offset: u64,
    /// Which column: `None` for the only one (a tuple of more columns is refused).
    column: Option<usize>,
    /// The field count of the first tuple, which every tuple must have.
    fields: Option<i16>,
    /// Tuples read so far (the 1-based number of the last one).
    tuples: u64,
    header_read: bool,
    ended: bool,
}

impl<R: Read> BinaryReader<R> {
    /// A reader of `column` (0-based) of `input`; `None`: the tuples must have one column.
    pub fn new(input: R, column: Option<usize>) -> BinaryReader<R> {
        BinaryReader {
            input,
            offset: 0,
            column,
            fields: None,
            tuples: 0,
            header_read: false,
            ended: false,
        }
    }

    /// The next value and the byte offset of its first byte; `None` after the trailer or at
    /// the end of the input after a whole tuple.
    pub fn next_value(&mut self) -> Result<Option<(Vec<u8>, u64)>, CopyError> {
        if !self.header_read {
            self.read_header()?;
            self.header_read = true;
        }
        while !self.ended {
            let at = self.offset;
            let mut count = [0u8; 2];
            match self.read_up_to(&mut count)? {
                0 => {
                    self.ended = true;
                    break;
                }
                2 => {}
                _ => {
                    return Err(malformed(format!(
                        "the COPY data ends inside a field count at byte {at}"
                    )))
                }
            }
            let count = i16::from_be_bytes(count);
            if count == -1 {
                self.ended = true;
                let mut more = [0u8; 1];
                if self.read_up_to(&mut more)? != 0 {
                    return Err(malformed(format!(
                        "the COPY data goes on after its trailer (byte {})",
                        at + 2
                    )));
                }
                break;
            }
            self.tuples += 1;
            let wanted = self.wanted_field(count, at)?;
            let mut found = None;
            for field in 0..count as usize {
                if let Some(value) = self.read_field(field == wanted)? {
                    found = Some(value);
                }
            }
            if let Some(value) = found {
                return Ok(Some(value));
            } // A NULL: on to the next tuple.
        }
        Ok(None)
    }

    /// The index of the field to keep in a tuple of `count` fields starting at byte `at`.
    fn wanted_field(&mut self, count: i16, at: u64) -> Result<usize, CopyError> {
        let tuple = self.tuples;
        if count == 0 {
            return Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) has no columns: the end pgdict writes when it \
                 stops on an error (`compress`, `decompress`) (the tuples before it are not all of the rows)"
            )));
        }
        if count < 0 {
            return Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) gives a field count of {count} (-1, the \
                 trailer, is the only one below 0)"
            )));
        }
        match self.fields {
            Some(fields) if fields != count => {
                return Err(malformed(format!(
                    "COPY tuple {tuple} (byte {at}) has {count} columns, where the tuples \
                     before have {fields}"
                )))
            }
            _ => self.fields = Some(count),
        }
        match self.column {
            None if count != 1 => Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) has {count} columns, where one is read (say \
                 which)"
            ))),
            None => Ok(0),
            Some(column) if column >= count as usize => Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) has {count} columns: there is no column #{column} \
                 (columns count from 0)"
            ))),
            Some(column) => Ok(column),
        }
    }

    /// Reads one field: its value and offset if `keep` and it is not NULL; else skips it.
    fn read_field(&mut self, keep: bool) -> Result<Option<(Vec<u8>, u64)>, CopyError> {
        let tuple = self.tuples;
        let at = self.offset;
        let len = i32::from_be_bytes(self.read_exact_at::<4>("field length")?);
        if len == -1 {
            return Ok(None);
        }
        let len = match usize::try_from(len) {
            Ok(len) if len <= MAX_DATUM_LEN => len,
            Ok(_) => {
                return Err(malformed(format!(
                    "COPY tuple {tuple} (byte {at}) gives a value a length of {len} bytes, over \
                     PostgreSQL's limit of {MAX_DATUM_LEN}"
                )))
            }
            Err(_) => {
                return Err(malformed(format!(
                    "COPY tuple {tuple} (byte {at}) gives a value a length of {len} (-1, NULL, \
                     is the only one below 0)"
                )))
            }
        };
        let start = self.offset;
        let mut value = Vec::new();
        let got = if keep {
            // Grows as bytes arrive: a damaged length cannot make this allocate 1 GiB.
            (&mut self.input)
                .take(len as u64)
                .read_to_end(&mut value)
                .map_err(CopyError::Io)? as u64
        } else {
            io::copy(&mut (&mut self.input).take(len as u64), &mut io::sink())
                .map_err(CopyError::Io)?
        };
        self.offset += got;
        if got < len as u64 {
            return Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) says a value is {len} bytes long, but only {got} \
                 bytes are left"
            )));
        }
        Ok(keep.then_some((value, start)))
    }

    fn read_header(&mut self) -> Result<(), CopyError> {
        let mut signature = [0u8; 11];
        let read = self.read_up_to(&mut signature)?;
        if signature[..read] != SIGNATURE[..read] || read < SIGNATURE.len() {
            return Err(malformed(
                "the input does not start with the binary COPY signature PGCOPY\\n\\377\\r\\n\\0",
            ));
        }
        let flags = u32::from_be_bytes(self.read_exact_at::<4>("header flags")?);
        if flags & OIDS != 0 {
            return Err(malformed(
                "the COPY data carries OIDs (WITH OIDS, PostgreSQL 11 and older): copy the \
                 columns alone",
            ));
        }
        if flags >> 16 != 0 {
            return Err(malformed(format!(
                "the COPY header has critical flags {flags:#010x} that no PostgreSQL release \
                 writes (bits 17-31)"
            )));
        }
        let extension = u32::from_be_bytes(self.read_exact_at::<4>("header extension length")?);
        if extension > i32::MAX as u32 {
            return Err(malformed(format!(
                "the COPY header gives its extension a length of {} (below 0)",
                extension as i32
            )));
        }
        let skipped = io::copy(
            &mut (&mut self.input).take(u64::from(extension)),
            &mut io::sink(),
        )
        .map_err(CopyError::Io)?;
        self.offset += skipped;
        if skipped < u64::from(extension) {
            return Err(malformed(format!(
                "the COPY header extension of {extension} bytes is cut short"
            )));
        }
        Ok(())
    }

    /// `N` bytes that must be there, `what` naming them if they are not.
    fn read_exact_at<const N: usize>(&mut self, what: &str) -> Result<[u8; N], CopyError> {
        let at = self.offset;
        let mut bytes = [0u8; N];
        if self.read_up_to(&mut bytes)? < N {
            return Err(malformed(format!(
                "the COPY data ends inside the {what} at byte {at}"
            )));
        }
        Ok(bytes)
    }

    /// Fills `buf` as far as the input goes; the number of bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize, CopyError> {
        let filled = datums_file::read_up_to(&mut self.input, buf).map_err(CopyError::Io)?;
        self.offset += filled as u64;
        Ok(filled)
    }
}

/// The rows of COPY data (text or binary, told by its first bytes): the non-NULL, non-empty
/// values of one column, `None` for the only one.
pub(super) fn rows<R: BufRead + 'static>(
    mut input: R,
    column: Option<&Column>,
    origin: String,
) -> Result<RowIter, SourceError> {
    // Only as many bytes as tell the formats apart: text whose first bytes are not the
    // signature's is read as they come (a stream's first line is not held back for more).
    let mut start = Vec::with_capacity(SIGNATURE.len());
    while start.len() < SIGNATURE.len() && SIGNATURE.starts_with(&start) {
        let mut chunk = [0u8; SIGNATURE.len()];
        let wanted = SIGNATURE.len() - start.len();
        match input.read(&mut chunk[..wanted]) {
            Ok(0) => break,
            Ok(n) => start.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => return Err(SourceError::Io { origin, source }),
        }
    }
    let binary = start == SIGNATURE;
    let input = Cursor::new(start).chain(input);
    if binary {
        let column = match column {
            None => None,
            Some(Column::Index(index)) => Some(*index),
            Some(name @ Column::Name(_)) => {
                return Err(SourceError::NoColumn {
                    format: "COPY",
                    origin,
                    column: name.clone(),
                    reason: "binary COPY data does not name its columns (give a 0-based index)"
                        .into(),
                })
            }
        };
        return Ok(until_error(BinaryRows {
            reader: BinaryReader::new(input, column),
            origin,
        }));
    }
    Ok(until_error(TextRows::new(input, column.cloned(), origin)?))
}

/// One column of binary COPY data, as rows.
struct BinaryRows<R> {
    reader: BinaryReader<R>,
    origin: String,
}

impl<R: Read> ReadRow for BinaryRows<R> {
    fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        loop {
            match self.reader.next_value() {
                Ok(Some((value, _))) if value.is_empty() => {} // An empty value is no row.
                Ok(value) => return Ok(value.map(|(value, _)| value)),
                Err(CopyError::Io(source)) => {
                    let origin = self.origin.clone();
                    return Err(SourceError::Io { origin, source });
                }
                Err(CopyError::Format(message)) => {
                    let origin = self.origin.clone();
                    return Err(SourceError::BadCopy { origin, message });
                }
            }
        }
    }
}

/// One column of COPY text data, a line at a time.
struct TextRows<R> {
    input: R,
    origin: String,
    /// The column asked for, for messages.
    column: Option<Column>,
    /// Its index in a line.
    index: usize,
    /// The field count of the first line, which every line must have.
    fields: Option<usize>,
    /// The 1-based number of the last line read (a line with escaped line feeds counts each).
    line: u64,
    /// The line being read, without its line end.
    buf: Vec<u8>,
    /// Whether the end-of-data marker was read.
    ended: bool,
}

impl<R: BufRead> TextRows<R> {
    fn new(input: R, column: Option<Column>, origin: String) -> Result<Self, SourceError> {
        let mut rows = TextRows {
            input,
            origin,
            index: 0,
            column,
            fields: None,
            line: 0,
            buf: Vec::new(),
            ended: false,
        };
        match rows.column.clone() {
            Some(Column::Index(index)) => rows.index = index,
            Some(Column::Name(name)) => {
                let no_column = |origin: &str, reason: String| SourceError::NoColumn {
                    format: "COPY",
                    origin: origin.to_string(),
                    column: Column::Name(name.clone()),
                    reason,
                };
                let Some(first) = rows.read_line()? else {
                    return Err(no_column(&rows.origin, "the input is empty".into()));
                };
                let names: Vec<Vec<u8>> = split_fields(&rows.buf)
                    .map_err(|message| rows.bad(first, message.into()))?
                    .into_iter()
                    .map(|field| unescape(field).unwrap_or_else(|| b"\\N".to_vec()))
                    .collect();
                rows.fields = Some(names.len());
                match names.iter().position(|n| n == name.as_bytes()) {
                    Some(index) => rows.index = index,
                    None => {
                        let names: Vec<_> =
                            names.iter().map(|n| String::from_utf8_lossy(n)).collect();
                        return Err(no_column(
                            &format!("{}:1", rows.origin),
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
            origin: format!("{}:{line}", self.origin),
            message,
        }
    }

    /// Reads the next line into `buf` (a line feed that a backslash escapes is part of it);
    /// its first line's number, or `None` at the end of the data.
    fn read_line(&mut self) -> Result<Option<u64>, SourceError> {
        self.buf.clear();
        if self.ended {
            return Ok(None);
        }
        let first = self.line + 1;
        loop {
            let read = read_line_into(&mut self.input, &mut self.buf, &self.origin, self.line + 1)?;
            if read == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                break; // The data ends after a `\` and a line feed.
            }
            self.line += 1;
            if self.buf.last() != Some(&b'\n') {
                break; // The data ends without a line feed.
            }
            if escaped(&self.buf[..self.buf.len() - 1]) {
                continue; // `\` and a line feed: a line feed in the data.
            }
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') && !escaped(&self.buf[..self.buf.len() - 1]) {
                self.buf.pop();
            }
            break;
        }
        if let Some(at) = end_marker(&self.buf) {
            if at + 2 != self.buf.len() {
                return Err(self.bad(
                    first,
                    "more on the line after `\\.`, the end-of-data marker".into(),
                ));
            }
            self.buf.truncate(at);
            self.ended = true;
            if self.buf.is_empty() {
                return Ok(None);
            }
        }
        Ok(Some(first))
    }
}

impl<R: BufRead> ReadRow for TextRows<R> {
    fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        while let Some(line) = self.read_line()? {
            let fields =
                split_fields(&self.buf).map_err(|message| self.bad(line, message.into()))?;
            let count = fields.len();
            let expected = *self.fields.get_or_insert(count);
            if count != expected {
                return Err(self.bad(
                    line,
                    format!("{count} fields, where the lines before have {expected}"),
                ));
            }
            let field = match (&self.column, fields.get(self.index)) {
                (None, _) if count != 1 => {
                    return Err(self.bad(
                        line,
                        format!("{count} fields (tab-separated), where one is read (say which)"),
                    ))
                }
                (_, Some(field)) => *field,
                (Some(column), None) => {
                    return Err(SourceError::NoColumn {
                        format: "COPY",
                        origin: format!("{}:{line}", self.origin),
                        column: column.clone(),
                        reason: format!("the line has {count} fields"),
                    })
                }
                (None, None) => unreachable!("a line has at least one field"),
            };
            match unescape(field) {
                Some(value) if !value.is_empty() => return Ok(Some(value)),
                _ => {} // NULL, or empty.
            }
        }
        Ok(None)
    }
}

/// The fields of a text line, escapes in place, split at the tabs no backslash escapes.
fn split_fields(line: &[u8]) -> Result<Vec<&[u8]>, &'static str> {
    let mut fields = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < line.len() {
        match line[at] {
            b'\\' => at += 1, // The next byte is escaped, whatever it is.
            b'\t' => {
                fields.push(&line[start..at]);
                start = at + 1;
            }
            b'\r' => {
                return Err(
                    "a carriage return in the data that no backslash escapes (COPY writes it \
                     as \\r)",
                )
            }
            _ => {}
        }
        at += 1;
    }
    fields.push(&line[start..]);
    Ok(fields)
}

/// Where the first `\.` that no backslash escapes starts in a text line.
fn end_marker(line: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < line.len() {
        if line[at] == b'\\' {
            if line.get(at + 1) == Some(&b'.') {
                return Some(at);
            }
            at += 1;
        }
        at += 1;
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
    for &byte in value {
        let escaped = match byte {
            b'\\' => b'\\',
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x0b => b'v',
            _ => {
                out.push(byte);
                continue;
            }
        };
        out.extend_from_slice(&[b'\\', escaped]);
    }
}

/// A text field's value, escapes decoded (see the module documentation); `None` for NULL.
pub fn unescape(field: &[u8]) -> Option<Vec<u8>> {
    if field == b"\\N" {
        return None;
    }
    let octal = |b: u8| (b'0'..=b'7').contains(&b).then(|| b - b'0');
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut value = Vec::with_capacity(field.len());
    let mut at = 0;
    while at < field.len() {
        let byte = field[at];
        at += 1;
        if byte != b'\\' {
            value.push(byte);
            continue;
        }
        let Some(&next) = field.get(at) else {
            break; // A backslash at the end of the data stands for nothing.
        };
        at += 1;
        let decoded = match next {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            b'0'..=b'7' => {
                let mut code = u32::from(next - b'0');
                for _ in 0..2 {
                    match field.get(at).copied().and_then(octal) {
                        Some(digit) => {
                            code = code * 8 + u32::from(digit);
                            at += 1;
                        }
                        None => break,
                    }
                }
                code as u8 // `\777` is 0xff: the low 8 bits, as PostgreSQL takes them.
            }
            b'x' => match field.get(at).copied().and_then(hex) {
                Some(high) => {
                    at += 1;
                    match field.get(at).copied().and_then(hex) {
                        Some(low) => {
                            at += 1;
                            high << 4 | low
                        }
                        None => high,
                    }
                }
                None => b'x',
            },
            other => other,
        };
        value.push(decoded);
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_rows(input: &str, column: Option<Column>) -> Result<Vec<Vec<u8>>, SourceError> {
        rows(
            Cursor::new(input.as_bytes().to_vec()),
            column.as_ref(),
            "in".into(),
        )?
        .collect()
    }

    fn strings(rows: Vec<Vec<u8>>) -> Vec<String> {
        rows.into_iter()
            .map(|row| String::from_utf8(row).unwrap())
            .collect()
    }

    #[test]
    fn text_escapes_decode_as_postgresql_decodes_them() {
        for (field, value) in [
            (&b"plain"[..], &b"plain"[..]),
            (b"a\\tb\\nc\\rd\\\\e", b"a\tb\nc\rd\\e"),
            (b"\\b\\f\\v", b"\x08\x0c\x0b"),
            (b"\\101\\0\\7x\\18", b"A\0\x07x\x018"),
            (b"\\777\\400", b"\xff\x00"),
            (b"\\x41\\x4g\\xg\\x", b"A\x04gxgx"),
            (b"\\q\\.\\\t", b"q.\t"),
            (b"end\\", b"end"),
            (b"", b""),
            (b"\\\\N", b"\\N"),
        ] {
            assert_eq!(unescape(field).as_deref(), Some(value), "{field:?}");
        }
        assert_eq!(unescape(b"\\N"), None);
    }

    #[test]
    fn text_lines_are_rows_nulls_and_empty_values_skipped() {
        let input = "one\n\\N\n\ntwo\\nlines\r\nthree\\\nfour\nlast";
        assert_eq!(
            strings(text_rows(input, None).unwrap()),
            ["one", "two\nlines", "three\nfour", "last"]
        );
        // `\.` ends the data.
        assert_eq!(
            strings(text_rows("a\n\\.\nnot read\n", None).unwrap()),
            ["a"]
        );
        assert_eq!(
            strings(text_rows("a\nlast\\.\r\nnot read\n", None).unwrap()),
            ["a", "last"]
        );
        assert_eq!(
            strings(text_rows("a\\\\.\n\\\\.\n", None).unwrap()),
            ["a\\.", "\\."]
        );
        // A backslash pair before the line feed is a backslash, and the line ends.
        assert_eq!(
            strings(text_rows("a\\\\\nb\n", None).unwrap()),
            ["a\\", "b"]
        );
    }

    #[test]
    fn a_text_column_is_chosen_by_index_or_header_name() {
        let input = "1\tfirst\\tbody\tx\n2\t\\N\ty\n3\tthird\tz\n";
        let index = Some(Column::Index(1));
        assert_eq!(
            strings(text_rows(input, index).unwrap()),
            ["first\tbody", "third"]
        );
        let header = format!("id\tbody\\\\text\tk\n{input}");
        let name = Some(Column::Name("body\\text".into()));
        assert_eq!(
            strings(text_rows(&header, name).unwrap()),
            ["first\tbody", "third"]
        );
    }

    #[test]
    fn text_that_is_not_copy_data_is_refused_naming_the_line() {
        let error =
            |input: &str, column: Option<Column>| text_rows(input, column).unwrap_err().to_string();
        assert_eq!(
            error("a\tb\n", None),
            "in:1: bad COPY data: 2 fields (tab-separated), where one is read (say which)"
        );
        assert_eq!(
            error("a\tb\nc\n", Some(Column::Index(0))),
            "in:2: bad COPY data: 1 fields, where the lines before have 2"
        );
        assert_eq!(
            error("a\tb\n", Some(Column::Index(2))),
            "in:1: no COPY column #2: the line has 2 fields"
        );
        assert_eq!(
            error("a\rb\n", None),
            "in:1: bad COPY data: a carriage return in the data that no backslash escapes \
             (COPY writes it as \\r)"
        );
        assert_eq!(
            error("id\tbody\n", Some(Column::Name("text".into()))),
            "in:1: no COPY column \"text\": the first line, read as COPY's HEADER, has id, body"
        );
        assert_eq!(
            error("a\nb\\.c\n", None),
            "in:2: bad COPY data: more on the line after `\\.`, the end-of-data marker"
        );
        // The line number is that of the line's first line.
        assert_eq!(
            error("a\nb\\\nc\rd\n", None),
            "in:2: bad COPY data: a carriage return in the data that no backslash escapes \
             (COPY writes it as \\r)"
        );
    }

    /// Binary COPY data of tuples of `values`.
    fn binary(tuples: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut out = Vec::new();
        write_header(&mut out).unwrap();
        for tuple in tuples {
            write_tuple(&mut out, tuple).unwrap();
        }
        write_trailer(&mut out).unwrap();
        out
    }

    fn values(input: &[u8], column: Option<usize>) -> Result<Vec<(Vec<u8>, u64)>, CopyError> {
        let mut reader = BinaryReader::new(input, column);
        let mut values = Vec::new();
        while let Some(value) = reader.next_value()? {
            values.push(value);
        }
        Ok(values)
    }

    #[test]
    fn binary_values_come_back_nulls_skipped() {
        let input = binary(&[
            &[Some(b"\x07abc")],
            &[None],
            &[Some(b"")],
            &[Some(b"\x05z")],
        ]);
        let read = values(&input, None).unwrap();
        assert_eq!(
            read,
            [
                (b"\x07abc".to_vec(), 25),
                (Vec::new(), 41),
                (b"\x05z".to_vec(), 47)
            ]
        );
        // Without the trailer, as PostgreSQL takes it; a header extension is skipped, and so
        // are the flags PostgreSQL ignores (bits 0-15).
        assert_eq!(values(&input[..input.len() - 2], None).unwrap().len(), 3);
        let mut extended = input.clone();
        extended.splice(15..19, [0, 0, 0, 3, b'x', b'y', b'z']);
        assert_eq!(values(&extended, None).unwrap()[0].0, b"\x07abc");
        let mut ignored = input.clone();
        ignored[13..15].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(values(&ignored, None).unwrap().len(), 3);
    }

    #[test]
    fn a_binary_column_is_chosen_by_index() {
        let input = binary(&[
            &[Some(b"1"), Some(b"first"), None],
            &[Some(b"2"), None, Some(b"x")],
            &[Some(b"3"), Some(b"third"), Some(b"y")],
        ]);
        let column = |index| {
            values(&input, Some(index))
                .unwrap()
                .into_iter()
                .map(|(value, _)| String::from_utf8(value).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(column(1), ["first", "third"]);
        assert_eq!(column(2), ["x", "y"]);
        let rows: Vec<Vec<u8>> = rows(
            Cursor::new(input.clone()),
            Some(&Column::Index(1)),
            "in".into(),
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
        assert_eq!(rows, [b"first".to_vec(), b"third".to_vec()]);
        let by_name = rows_error(&input, Some(Column::Name("body".into())));
        assert_eq!(
            by_name,
            "in: no COPY column \"body\": binary COPY data does not name its columns (give a \
             0-based index)"
        );
    }

    fn rows_error(input: &[u8], column: Option<Column>) -> String {
        match rows(Cursor::new(input.to_vec()), column.as_ref(), "in".into()) {
            Ok(rows) => rows.collect::<Result<Vec<_>, _>>().unwrap_err().to_string(),
            Err(error) => error.to_string(),
        }
    }

    proptest::proptest! {
        // What is written reads back; any bytes after a valid header read or fail, never
        // panic, and allocate no more than they hold.
        #[test]
        fn binary_values_read_back_and_any_bytes_are_safe(
            given in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..40)),
                0..20,
            ),
            tail in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            column in 0usize..3,
        ) {
            let tuples: Vec<Vec<Option<&[u8]>>> = given
                .iter()
                .map(|v| {
                    let mut tuple = vec![Some(&b"other"[..]); 3];
                    tuple[column] = v.as_deref();
                    tuple
                })
                .collect();
            let slices: Vec<&[Option<&[u8]>]> = tuples.iter().map(|t| &t[..]).collect();
            let read: Vec<Vec<u8>> = values(&binary(&slices), Some(column))
                .unwrap()
                .into_iter()
                .map(|(value, _)| value)
                .collect();
            let expected: Vec<Vec<u8>> = given.iter().flatten().cloned().collect();
            proptest::prop_assert_eq!(read, expected);
            let mut input = binary(&[]);
            input.truncate(19);
            input.extend_from_slice(&tail);
            let _ = values(&input, None);
            let _ = values(&input, Some(column));
        }

        // One column, as pgdict writes datums and rows: what is written reads back to the
        // end of the input, with the trailer or without; and BROKEN_END after the tuples in
        // place of the trailer makes the reader fail.
        #[test]
        fn one_column_written_reads_back_and_a_broken_end_fails(
            given in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..40)),
                0..20,
            ),
            trailer: bool,
        ) {
            let mut input = Vec::new();
            write_header(&mut input).unwrap();
            for value in &given {
                write_tuple(&mut input, &[value.as_deref()]).unwrap();
            }
            let tuples_end = input.len();
            if trailer {
                write_trailer(&mut input).unwrap();
            }
            let mut reader = BinaryReader::new(&input[..], None);
            let mut read = Vec::new();
            while let Some((value, _)) = reader.next_value().unwrap() {
                read.push(value);
            }
            let expected: Vec<Vec<u8>> = given.iter().flatten().cloned().collect();
            proptest::prop_assert_eq!(read, expected);
            proptest::prop_assert_eq!(reader.offset, input.len() as u64);
            let mut broken = input[..tuples_end].to_vec();
            broken.extend_from_slice(BROKEN_END);
            let mut reader = BinaryReader::new(&broken[..], None);
            let error = loop {
                match reader.next_value() {
                    Ok(Some(_)) => {}
                    Ok(None) => panic!("the broken end was read as an end"),
                    Err(error) => break error.to_string(),
                }
            };
            proptest::prop_assert!(error.contains("has no columns"), "{}", error);
        }

        // Any text reads or fails with an error, never a panic; what escaping writes reads
        // back.
        #[test]
        fn text_reads_back_what_is_escaped(
            values in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 1..30),
                0..10,
            ),
            noise in proptest::collection::vec(proptest::num::u8::ANY, 0..80),
        ) {
            let mut input = Vec::new();
            for value in &values {
                escape_text(value, &mut input);
                input.push(b'\n');
            }
            let read: Vec<Vec<u8>> = rows(Cursor::new(input), None, "in".into())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            proptest::prop_assert_eq!(read, values);
            if noise.starts_with(SIGNATURE) {
                return Ok(());
            }
            if let Ok(rows) = rows(Cursor::new(noise), Some(&Column::Index(1)), "in".into()) {
                for row in rows {
                    let _ = row;
                }
            }
        }
    }

    #[test]
    fn binary_data_that_cannot_be_read_is_named() {
        let input = binary(&[&[Some(b"\x07abc")]]);
        let error = |input: &[u8], column| values(input, column).unwrap_err().to_string();
        assert!(error(b"PGCOPY\n", None).contains("binary COPY signature"));
        let mut oids = input.clone();
        oids[12] = 1;
        assert!(error(&oids, None).contains("OIDs"));
        let mut critical = input.clone();
        critical[11] = 0x80;
        assert!(error(&critical, None).contains("critical flags 0x80000000"));
        let mut negative_extension = input.clone();
        negative_extension[15] = 0xff;
        assert!(error(&negative_extension, None).contains("(below 0)"));
        assert!(error(&input[..21], None).contains("field length at byte 21"));
        assert!(error(&input[..26], None).contains("only 1 bytes are left"));
        let mut two = input.clone();
        two[20] = 2;
        assert!(error(&two, None).contains("tuple 1 (byte 19) has 2 columns, where one is read"));
        assert!(error(&input, Some(1)).contains("there is no column #1"));
        let mut long = input.clone();
        long[21..25].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        assert!(error(&long, None).contains("over PostgreSQL's limit"));
        let mut negative = input.clone();
        negative[21..25].copy_from_slice(&(-2i32).to_be_bytes());
        assert!(error(&negative, None).contains("a length of -2 (-1, NULL"));
        let mut after = input.clone();
        after.push(0);
        assert!(error(&after, None).contains("after its trailer"));
        let mut zero = input.clone();
        zero[19..21].copy_from_slice(BROKEN_END);
        assert!(error(&zero, None).contains("has no columns"));
        let uneven = binary(&[&[Some(b"a"), Some(b"b")], &[Some(b"c")]]);
        assert!(error(&uneven, Some(0))
            .contains("tuple 2 (byte 31) has 1 columns, where the tuples before have 2"));
    }
}
