//! PostgreSQL's `COPY` formats, read as rows: what `COPY (SELECT body FROM t) TO STDOUT` (or
//! psql's `\copy ... TO 'file'`) writes in the text format, and the same with `(FORMAT
//! binary)`. A stream is binary when it starts with the binary signature, else text.
//! PostgreSQL's documentation ("COPY", "File Formats") describes both; what is accepted here is
//! what `COPY ... FROM` accepts (`copyfromparse.c`), except where said.
//!
//! Text format: one row a line, its fields separated by a tab, or by the byte COPY's
//! `DELIMITER` option names ([`CopyOptions`]).
//!
//! ```text
//!   line end     \n, \r\n or \r, as the first line ends (COPY writes \n); a \ before
//!                a \n or \r makes it part of the data
//!   \N           a whole field: NULL (or the string COPY's NULL option names, compared with
//!                the field before its escapes are decoded; `\N` is then `N`)
//!   \b \f \n \r \t \v
//!                backspace, form feed, line feed, carriage return, tab, vertical tab
//!   \0 .. \777   1 to 3 octal digits: the byte of that value (low 8 bits)
//!   \xH \xHH     1 or 2 hex digits: that byte (\x followed by no hex digit is x)
//!   \c           any other byte c is itself: \\ a backslash, \<tab> a tab in the data (and
//!                \ before the delimiter: the delimiter in the data, as COPY TO writes it)
//!   \ at the end of the data: nothing
//!   \.           at the end of a line: the end of the data, the line's text before it the
//!                last row (what follows is not read); elsewhere refused
//! ```
//!
//! PostgreSQL 15's `HEADER` option writes the column names as a first line: a column named by
//! its name ([`Column::Name`]) takes the first line as that header. Every line must have as
//! many fields as the first, and end as the first does: as in `COPY ... FROM`, the first line
//! end decides the input's kind, and a `\r` or `\n` that no backslash escapes and that is not
//! a line end of that kind is refused.
//!
//! The text is read as bytes, so the data must be in an encoding whose multibyte characters
//! never hold an ASCII byte: UTF-8, the database's own (every server encoding is such), LATIN1,
//! ... A client-only encoding (`COPY ... TO ... (ENCODING 'SJIS')`, or SJIS, BIG5, GBK, UHC,
//! GB18030, JOHAB as the client encoding) may put a `\` as a character's second byte, which
//! COPY writes unescaped (`COPY ... FROM` converts to the server's encoding before it parses);
//! read here, it would be taken for an escape.
//!
//! Where this differs from `COPY ... FROM` (`tests/copy_text_postgres.rs` loads generated
//! lines into a server and reads them here, with the default options and two others; what the
//! server loads reads as the same values, and what it refuses for a line end, pgdict refuses):
//! it refuses less. `\.` may end the data without a line end after it, and a NUL byte (`\0`)
//! is a byte of the value (a database refuses it in text; a `bytea` column copied as text
//! arrives as its hex text anyway).
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
//! A value is the bytes of its column's binary form: for `bytea` the bytes PostgreSQL stores;
//! for `text`, `varchar`, `json` and `xml` the text in the client encoding (the database's
//! bytes when the two are the same: `psql` sets it from the locale, `PGCLIENTENCODING`
//! overrides it); for `jsonb` a version byte (1) and the text. A value's
//! length is checked against PostgreSQL's limit before it is read, and its buffer grows as its
//! bytes arrive: a damaged length cannot make the reader allocate more than the input holds.
//!
//! [`write_header`], [`write_tuple`] and [`write_trailer`] write the binary format (what
//! `compress --copy` and `decompress --out-format copy` write), [`BROKEN_END`] ends what an
//! error stopped, and [`escape_text`] writes a text field as `COPY ... TO` does.
//!
//! As rows (see [`super`]), NULLs and empty values are skipped, as the other sources skip empty
//! lines and fields. As records ([`records`], what `--keep-columns` reads), every line or tuple
//! comes back split around the column: its value (or NULL), and the other fields as the input
//! holds them, so that [`Layout::write_record`] writes the record back with another value in
//! the column and every other byte as it came (the binary header is written anew: no flags, no
//! extension).

use std::borrow::Cow;
use std::io::{self, BufRead, Chain, Cursor, Read, Write};
use std::ops::Range;

use super::{until_error, Column, CsvSyntax, RowIter, SourceError};

mod binary;
mod text;

use binary::{write_field, BinaryRows};
pub use binary::{
    write_header, write_one_field_start, write_trailer, write_tuple, BinaryReader, BROKEN_END,
    SIGNATURE,
};
use text::TextRows;
pub use text::{escape_text, escape_text_with, unescape};

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

/// How COPY data is read: which column, and in the text format the field delimiter and the
/// NULL string (COPY's `DELIMITER` and `NULL` options, which binary data does not take).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyOptions {
    /// The column; `None`: the data must have one column.
    pub column: Option<Column>,
    /// The text format's field delimiter; `None`: a tab.
    pub delimiter: Option<u8>,
    /// The text format's NULL string; `None`: `\N`.
    pub null: Option<Vec<u8>>,
    /// The text data starts with a header line (PostgreSQL 15's `HEADER`), as a column named
    /// by name says anyway: with a column index, it is passed over (and written back first).
    pub header: bool,
}

impl CopyOptions {
    /// Column `column` (`None`: the only one), with the text format's tab and `\N`.
    pub fn column(column: Option<Column>) -> CopyOptions {
        CopyOptions {
            column,
            ..CopyOptions::default()
        }
    }

    /// Refuses what `COPY ... FROM` refuses of these options in the text format, in its words
    /// (`ProcessCopyOptions`, `copy.c`): a delimiter that is a line end, a backslash, a
    /// period, a lowercase ASCII letter or a digit (each reads as part of an escape), or not
    /// ASCII (a UTF-8 database's rule); a NULL string with a line end or the delimiter in it.
    pub fn check(&self) -> Result<(), String> {
        check_options(self.text_delimiter(), self.text_null(), None)
    }

    fn text_delimiter(&self) -> u8 {
        self.delimiter.unwrap_or(b'\t')
    }

    fn text_null(&self) -> &[u8] {
        self.null.as_deref().unwrap_or(b"\\N")
    }

    /// The text format's field: `None` if it is the NULL string, else its value.
    fn value(&self, field: &[u8]) -> Option<Vec<u8>> {
        (field != self.text_null()).then(|| unescape(field))
    }
}

/// The rows of COPY data (text or binary, told by its first bytes): the non-NULL, non-empty
/// values of one column, `None` for the only one.
pub(super) fn rows<R: BufRead + 'static>(
    input: R,
    options: &CopyOptions,
    origin: String,
) -> Result<RowIter, SourceError> {
    Ok(match open(input, options, origin)? {
        Reader::Text(mut text) => until_error(move || text.next_row()),
        Reader::Binary(mut binary) => until_error(move || binary.next_row()),
    })
}

/// The records of COPY data (text or binary, told by its first bytes), each split around the
/// column `options` name (`None`: the only one), NULLs and empty values included; and how they
/// are written back ([`Layout`]). The iterator ends at the end of the data or after its first
/// error. [`super::open_records`] opens a file or standard input this way.
pub fn records<R: BufRead + 'static>(
    input: R,
    options: &CopyOptions,
    origin: String,
) -> Result<(Layout, RecordIter), SourceError> {
    let mut reader = open(input, options, origin)?;
    let layout = match &reader {
        Reader::Text(text) => Layout::Text {
            header: text.text.header_line(),
            delimiter: text.options.text_delimiter(),
            null: text.options.text_null().to_vec(),
        },
        Reader::Binary(_) => Layout::Binary,
    };
    let records = until_error(move || match &mut reader {
        Reader::Text(text) => text.next_record(),
        Reader::Binary(binary) => binary.next_record(),
    });
    Ok((layout, records))
}

type RecordIter = super::Iter<Record>;

/// COPY data, opened: its first bytes told the format, and a column named by name was found.
enum Reader<R> {
    Text(TextRows<R>),
    Binary(BinaryRows<R>),
}

/// An input whose first bytes were read to tell its format: those bytes, then the rest.
pub(crate) type Told<R> = Chain<Cursor<Vec<u8>>, R>;

/// Whether `input` starts with binary COPY's [`SIGNATURE`], and the input whole again. Looks
/// at what `input` has buffered, taking bytes out of it only while they are a part of the
/// signature that more bytes must complete: text is read as it comes (a stream's first line is
/// not held back for more), and its bytes stay in `input`'s buffer, where a stream's watch
/// ([`super::Rows::may_wait`]) sees them.
pub(crate) fn tell_binary<R: BufRead>(
    mut input: R,
    origin: &str,
) -> Result<(bool, Told<R>), SourceError> {
    let mut start = Vec::with_capacity(SIGNATURE.len());
    while start.len() < SIGNATURE.len() {
        let buffered = match input.fill_buf() {
            Ok(buffered) => buffered,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(SourceError::Io {
                    origin: origin.to_string(),
                    source,
                })
            }
        };
        let rest = &SIGNATURE[start.len()..];
        let head = &buffered[..buffered.len().min(rest.len())];
        if head.is_empty() || !rest.starts_with(head) {
            break; // The end, or not the signature.
        }
        start.extend_from_slice(head);
        let taken = head.len();
        input.consume(taken);
    }
    Ok((start == SIGNATURE, Cursor::new(start).chain(input)))
}

/// Opens COPY data: tells text from binary by its first bytes and, for a column named by
/// name, reads the text header line.
fn open<R: BufRead>(
    input: R,
    options: &CopyOptions,
    origin: String,
) -> Result<Reader<Told<R>>, SourceError> {
    let (binary, input) = tell_binary(input, &origin)?;
    if !binary {
        return Ok(Reader::Text(TextRows::new(input, options.clone(), origin)?));
    }
    if options.delimiter.is_some() || options.null.is_some() || options.header {
        return Err(SourceError::BadCopy {
            origin,
            message: "binary COPY data has no delimiter, NULL string or header line (the \
                      text format's DELIMITER, NULL and HEADER)"
                .into(),
        });
    }
    let column = match &options.column {
        None => None,
        Some(Column::Index(index)) => Some(*index),
        Some(name @ Column::Name(_)) => {
            return Err(SourceError::NoColumn {
                format: "COPY",
                origin,
                column: name.clone(),
                reason: "binary COPY data does not name its columns (give a 0-based index)".into(),
            })
        }
    };
    Ok(Reader::Binary(BinaryRows {
        reader: BinaryReader::new(input, column),
        origin,
    }))
}

/// One line or tuple of COPY data, split around the column read, so that it can be written
/// back with that column's value replaced ([`Layout::write_record`]): how `pgdict compress
/// --keep-columns` writes each datum beside the other columns of its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The column's value, escapes decoded; `None`: NULL.
    pub value: Option<Vec<u8>>,
    /// Where the record starts in the input, for messages.
    pub place: Place,
    /// The fields before the column as the input holds them: text fields escaped, each with
    /// the tab after it; binary fields each after its length.
    before: Vec<u8>,
    /// The fields after the column (text: each after the tab before it).
    after: Vec<u8>,
    /// The field count of a binary tuple.
    fields: i16,
    /// The line end that follows a text record (the input's: `\n`, or `\r\n` as COPY
    /// writes on Windows, or `\r`), written back after it; none for a binary tuple.
    end: &'static [u8],
}

impl Record {
    /// Whether the column is the record's only field (text and CSV).
    fn is_alone(&self) -> bool {
        self.before.is_empty() && self.after.is_empty()
    }

    /// A record of text data (COPY's text format, or CSV) that starts on `line`, holds `bytes`
    /// and ends in `end`: its column's `value` (`None`: NULL), the field at `field`; the bytes
    /// before and after that field kept as the input holds them.
    pub(super) fn in_line(
        value: Option<Vec<u8>>,
        line: u64,
        bytes: &[u8],
        field: Range<usize>,
        end: &'static [u8],
    ) -> Record {
        Record {
            value,
            place: Place::Line(line),
            before: bytes[..field.start].to_vec(),
            after: bytes[field.end..].to_vec(),
            fields: 0,
            end,
        }
    }
}

/// Where a [`Record`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The 1-based line of text data.
    Line(u64),
    /// A tuple of binary data.
    Tuple {
        /// Its 1-based number.
        number: u64,
        /// The byte its field count starts at.
        byte: u64,
    },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Line(line) => write!(f, "line {line}"),
            Place::Tuple { number, byte } => write!(f, "tuple {number} (byte {byte})"),
        }
    }
}

/// The format records came in, and so how they are written back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The text format.
    Text {
        /// The first line, when it was read as COPY's `HEADER` (a column named by its name),
        /// with its line end: written back first, as it was.
        header: Option<Vec<u8>>,
        /// The field delimiter.
        delimiter: u8,
        /// The NULL string.
        null: Vec<u8>,
    },
    /// CSV ([`super::csv`]).
    Csv {
        /// The header record, as it came (with its line end): written back first.
        header: Option<Vec<u8>>,
        /// How a field is written.
        syntax: CsvSyntax,
    },
    /// The binary format.
    Binary,
}

/// What pgdict writes after the records when an error stops it, in the text format: `COPY ...
/// FROM` refuses the line (`end-of-copy marker corrupt`) rather than loading the lines before
/// it, and so does pgdict's reader. ([`BROKEN_END`] is the binary format's.)
pub const TEXT_BROKEN_END: &[u8] =
    b"\\.-- pgdict stopped on an error: the lines before this one are not all of the rows\n";

impl Layout {
    /// Whether this is the binary format.
    pub fn is_binary(&self) -> bool {
        *self == Layout::Binary
    }

    /// What comes before the first record ([`Layout::write_start`]).
    pub fn write_start_bytes(&self) -> Vec<u8> {
        let mut start = Vec::new();
        self.write_start(&mut start);
        start
    }

    /// Appends what comes before the first record: the binary header, or the header line.
    pub fn write_start(&self, out: &mut Vec<u8>) {
        match self {
            Layout::Binary => write_header(out).expect("a Vec takes every write"),
            Layout::Text {
                header: Some(line), ..
            }
            | Layout::Csv {
                header: Some(line), ..
            } => out.extend_from_slice(line),
            Layout::Text { header: None, .. } | Layout::Csv { header: None, .. } => {}
        }
    }

    /// Appends `record` with its column's value replaced by `value` (`None`: NULL), given as
    /// the layout holds a value: for text the value's text (escaped here), for binary its
    /// binary form (a `bytea`'s bytes, as they are).
    pub fn write_record(
        &self,
        out: &mut Vec<u8>,
        record: &Record,
        value: Option<&[u8]>,
    ) -> io::Result<()> {
        match self {
            Layout::Text {
                delimiter, null, ..
            } => write_text_record(out, record, |out| match value {
                Some(value) => escape_text_with(value, *delimiter, out),
                None => out.extend_from_slice(null),
            }),
            Layout::Csv { syntax, .. } => write_text_record(out, record, |out| match value {
                Some(value) => syntax.write_field(value, record.is_alone(), out),
                None => out.extend_from_slice(&syntax.null),
            }),
            Layout::Binary => {
                out.extend_from_slice(&record.fields.to_be_bytes());
                out.extend_from_slice(&record.before);
                write_field(out, value)?;
                out.extend_from_slice(&record.after);
            }
        }
        Ok(())
    }

    /// Appends `record` with its column's value replaced by the `bytea` value `bytes` (`None`:
    /// NULL): in the text format and CSV its hex text (`\x` and two digits a byte, as COPY
    /// writes a bytea), in the binary format its bytes.
    pub fn write_bytea_record(
        &self,
        out: &mut Vec<u8>,
        record: &Record,
        bytes: Option<&[u8]>,
    ) -> io::Result<()> {
        let Some(bytes) = bytes else {
            return self.write_record(out, record, None);
        };
        match self {
            Layout::Binary => return self.write_record(out, record, Some(bytes)),
            // No hex digit needs escaping (a delimiter cannot be one, nor `x`:
            // CopyOptions::check): only the backslash of `\x` is doubled.
            Layout::Text { .. } => {
                write_text_record(out, record, |out| write_hex(bytes, b"\\\\x", out))
            }
            Layout::Csv { syntax, .. } => write_text_record(out, record, |out| {
                // Quoted as COPY quotes it: where the delimiter or the quote is in it (CSV
                // allows a hex digit, `x` or `\` as either) or it is the NULL string; in
                // quotes, a quote or an escape in it escaped.
                let start = out.len();
                write_hex(bytes, b"\\x", out);
                if syntax.needs_quotes(&out[start..], false) {
                    let hex = out.split_off(start);
                    syntax.write_field(&hex, false, out);
                }
            }),
        }
        Ok(())
    }

    /// [`Layout::write_bytea_record`] of a `bytea` value of `len` bytes whose hex digits the
    /// caller puts in a piece of its own (a large datum's, made in place, not copied): appends
    /// what comes before the digits (the fields before the column, `\x`) and returns what
    /// comes after them (the fields after, the line end). `None`, with nothing appended, where
    /// the record does not hold the bare digits: binary COPY (the value's bytes), and CSV that
    /// may quote them (a hex digit, `x` or `\` as its delimiter or quote, FORCE_QUOTE, or a
    /// NULL string as long as the hex text).
    pub fn write_bytea_record_around_hex(
        &self,
        out: &mut Vec<u8>,
        record: &Record,
        len: usize,
    ) -> Option<Vec<u8>> {
        let prefix: &[u8] = match self {
            Layout::Binary => return None,
            Layout::Text { .. } => b"\\\\x",
            Layout::Csv { syntax, .. } => {
                let every_hex_byte = b"\\x0123456789abcdef";
                if syntax.needs_quotes(every_hex_byte, false) || syntax.null.len() == 2 + 2 * len {
                    return None;
                }
                b"\\x"
            }
        };
        out.extend_from_slice(&record.before);
        out.extend_from_slice(prefix);
        Some([&record.after[..], record.end].concat())
    }

    /// [`Layout::write_record`] of `value` where the record holds it as it is, so that the
    /// caller can put it in a piece of its own (a large row, handed over, not copied):
    /// appends what comes before it (the fields before the column) and returns what comes
    /// after it (the fields after, the line end). `None`, with nothing appended, where it is
    /// not as it is: binary COPY (its length goes first), a value the text format escapes, and
    /// one CSV quotes.
    pub fn write_record_around_value(
        &self,
        out: &mut Vec<u8>,
        record: &Record,
        value: &[u8],
    ) -> Option<Vec<u8>> {
        let as_it_is = match self {
            Layout::Binary => false,
            Layout::Text { delimiter, .. } => !text::needs_escapes(value, *delimiter),
            Layout::Csv { syntax, .. } => !syntax.needs_quotes(value, record.is_alone()),
        };
        if !as_it_is {
            return None;
        }
        out.extend_from_slice(&record.before);
        Some([&record.after[..], record.end].concat())
    }

    /// Writes what comes after the last record: the binary trailer (text and CSV have no end
    /// mark).
    pub fn write_end(&self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Layout::Binary => write_trailer(out),
            Layout::Text { .. } | Layout::Csv { .. } => Ok(()),
        }
    }

    /// What ends the output when an error stops it ([`BROKEN_END`], [`TEXT_BROKEN_END`],
    /// [`CSV_BROKEN_END`] in the layout's quote).
    pub fn broken_end(&self) -> Cow<'static, [u8]> {
        match self {
            Layout::Binary => Cow::Borrowed(BROKEN_END),
            Layout::Text { .. } => Cow::Borrowed(TEXT_BROKEN_END),
            Layout::Csv { syntax, .. } => Cow::Owned(syntax.broken_end()),
        }
    }
}

/// What pgdict writes after the records when an error stops it, in CSV with COPY's default
/// quote: a quote that nothing closes, so that `COPY ... FROM` fails (`unterminated CSV quoted
/// field`) rather than loading the records before it, and so does pgdict's reader
/// ([`CsvSyntax::broken_end`] writes it in another quote). (CSV takes `\.` followed by more as
/// data, so [`TEXT_BROKEN_END`] would not do.)
pub const CSV_BROKEN_END: &[u8] =
    b"\"-- pgdict stopped on an error: the lines before this one are not all of the rows\n";

/// Appends `prefix`, then `bytes` in hex, two lowercase digits a byte.
fn write_hex(bytes: &[u8], prefix: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(prefix);
    let digits = out.len();
    out.resize(digits + 2 * bytes.len(), 0);
    const_hex::encode_to_slice(bytes, &mut out[digits..])
        .expect("the slice holds two digits a byte");
}

/// Appends a text record: the fields before its column, what `value` writes of the column, the
/// fields after, and the line end.
fn write_text_record(out: &mut Vec<u8>, record: &Record, value: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(&record.before);
    value(out);
    out.extend_from_slice(&record.after);
    out.extend_from_slice(record.end);
}

/// Refuses a delimiter and a NULL string that `COPY ... FROM` refuses, and in CSV (`csv`: its
/// quote and escape) a quote and an escape, in its words and, where several apply, its order
/// (`ProcessCopyOptions`, `copy.c`; checked with psql on PostgreSQL 15): a delimiter that is
/// not ASCII (a UTF-8 database's rule) or a line end; a NULL string with a line end; in the
/// text format a delimiter that is a backslash, a period, a lowercase ASCII letter or a digit
/// (each reads as part of an escape); in CSV a quote that is not one ASCII byte or is the
/// delimiter, an escape that is not one ASCII byte; a NULL string with the delimiter in it,
/// and in CSV the quote.
pub(super) fn check_options(
    delimiter: u8,
    null: &[u8],
    csv: Option<(u8, u8)>,
) -> Result<(), String> {
    if !delimiter.is_ascii() {
        return Err("COPY delimiter must be a single one-byte character".into());
    }
    if delimiter == b'\n' || delimiter == b'\r' {
        return Err("COPY delimiter cannot be newline or carriage return".into());
    }
    if null.contains(&b'\n') || null.contains(&b'\r') {
        return Err("COPY null representation cannot use newline or carriage return".into());
    }
    let unsafe_in_text = b"\\.abcdefghijklmnopqrstuvwxyz0123456789";
    if csv.is_none() && (delimiter == 0 || unsafe_in_text.contains(&delimiter)) {
        return Err(format!(
            "COPY delimiter cannot be \"{}\"",
            char::from(delimiter).escape_default()
        ));
    }
    // A C string of one byte: not NUL, and ASCII in a UTF-8 database.
    let one_byte = |byte: u8| byte != 0 && byte.is_ascii();
    if let Some((quote, escape)) = csv {
        if !one_byte(quote) {
            return Err("COPY quote must be a single one-byte character".into());
        }
        if delimiter == quote {
            return Err("COPY delimiter and quote must be different".into());
        }
        if !one_byte(escape) {
            return Err("COPY escape must be a single one-byte character".into());
        }
    }
    if null.contains(&delimiter) {
        return Err("COPY delimiter must not appear in the NULL specification".into());
    }
    if let Some((quote, _)) = csv {
        if null.contains(&quote) {
            return Err("CSV quote character must not appear in the NULL specification".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::lines::HAND_OVER_MIN;

    fn text_rows(input: &str, column: Option<Column>) -> Result<Vec<Vec<u8>>, SourceError> {
        rows(
            Cursor::new(input.as_bytes().to_vec()),
            &CopyOptions::column(column),
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
            assert_eq!(unescape(field), value, "{field:?}");
        }
        // NULL is the reader's to tell, from the whole field: unescaped, `\N` is `N`.
        assert_eq!(unescape(b"\\N"), b"N");
    }

    #[test]
    fn text_lines_are_rows_nulls_and_empty_values_skipped() {
        let input = "one\n\\N\n\ntwo\\nlines\nthree\\\nfour\nlast";
        assert_eq!(
            strings(text_rows(input, None).unwrap()),
            ["one", "two\nlines", "three\nfour", "last"]
        );
        // Lines end as the first one does: in \r\n, or in \r alone (which a backslash makes
        // data).
        assert_eq!(
            strings(text_rows("one\r\ntwo\\r\\n\r\n\r\nlast", None).unwrap()),
            ["one", "two\r\n", "last"]
        );
        assert_eq!(
            strings(text_rows("one\rtwo\\\rthree\r\\N\r\rlast\r", None).unwrap()),
            ["one", "two\rthree", "last"]
        );
        // `\.` ends the data.
        assert_eq!(
            strings(text_rows("a\n\\.\nnot read\n", None).unwrap()),
            ["a"]
        );
        assert_eq!(
            strings(text_rows("a\r\nlast\\.\r\nnot read\n", None).unwrap()),
            ["a", "last"]
        );
        assert_eq!(
            strings(text_rows("a\\\\.\n\\\\.\n", None).unwrap()),
            ["a\\.", "\\."]
        );
        // Where lines end in \r, COPY reads the \r after `\.` and no further.
        assert_eq!(
            strings(text_rows("a\rlast\\.\r\nnot read\n", None).unwrap()),
            ["a", "last"]
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
        // By index, the header line is data unless said to be a header (--copy-header).
        let by_index = |header_flag| {
            let options = CopyOptions {
                header: header_flag,
                ..CopyOptions::column(Some(Column::Index(1)))
            };
            let read = rows(
                Cursor::new(header.clone().into_bytes()),
                &options,
                "in".into(),
            );
            strings(read.unwrap().collect::<Result<_, _>>().unwrap())
        };
        assert_eq!(by_index(false), ["body\\text", "first\tbody", "third"]);
        assert_eq!(by_index(true), ["first\tbody", "third"]);
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
        // COPY ... FROM takes the first line end's kind for all (a \r or \n that a backslash
        // escapes is data).
        let stray = |stray: &str, kind: &str| {
            format!(
                "{stray} that no backslash escapes, where lines end in {kind} (COPY ... FROM \
                 takes the first line's end for every line; in data COPY writes them as \\r and \\n)"
            )
        };
        let cases = [
            ("a\rb\n", 2, "a line feed", "\\r"),
            ("a\r\\\nb\r\n", 2, "a line feed", "\\r"),
            ("a\nb\r\n", 2, "a carriage return", "\\n"),
            ("a\nb\\\nc\rd\n", 2, "a carriage return", "\\n"),
            ("a\r\nb\n", 2, "a line feed alone", "\\r\\n"),
            ("a\r\nb\\\r\n", 2, "a line feed alone", "\\r\\n"),
            ("a\r\nb\rc\r\n", 2, "a carriage return alone", "\\r\\n"),
            ("a\rb\rc\\\rd\re\nf\r", 5, "a line feed", "\\r"),
        ];
        for (input, line, found, kind) in cases {
            let expected = format!("in:{line}: bad COPY data: {}", stray(found, kind));
            assert_eq!(error(input, None), expected, "{input:?}");
        }
        assert_eq!(
            error("id\tbody\n", Some(Column::Name("text".into()))),
            "in:1: no COPY column \"text\": the first line, read as COPY's HEADER, has id, body"
        );
        assert_eq!(
            error("a\nb\\.c\n", None),
            "in:2: bad COPY data: more on the line after `\\.`, the end-of-data marker"
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
            &CopyOptions::column(Some(Column::Index(1))),
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

    #[test]
    fn a_large_text_line_is_let_go_once_its_value_is_out_and_a_small_ones_buffer_kept() {
        let large = "z".repeat(HAND_OVER_MIN);
        // An escape in the value, which is decoded out of the line.
        let input = format!("1\t{large}\\t\n2\tsmall\n");
        let value = format!("{large}\t");
        for as_records in [false, true] {
            let mut text = text_reader(&input);
            let next = |text: &mut TextRows<_>| match as_records {
                false => text.next_row().unwrap(),
                true => text.next_record().unwrap().and_then(|record| record.value),
            };
            assert_eq!(next(&mut text).unwrap(), value.as_bytes());
            assert_eq!(text.text.buf.capacity(), 0, "the large line is still held");
            assert_eq!(next(&mut text).unwrap(), b"small");
            assert!(
                text.text.buf.capacity() > 0,
                "the small line's buffer was let go"
            );
        }
    }

    #[test]
    fn escapes_decoded_in_place_are_the_value_unescape_makes() {
        let large = [&b"\\\\x"[..], &b"0f".repeat(HAND_OVER_MIN)].concat();
        for field in [
            &b""[..],
            b"plain",
            b"\\\\x0a\\b\\f\\n\\r\\t\\v\\.",
            b"\\0\\7\\101\\777\\1234\\8",
            b"\\x\\x4\\x41\\x4g\\xff0",
            b"end\\",
            b"\\",
            &large,
        ] {
            let mut in_place = field.to_vec();
            text::unescape_in_place(&mut in_place);
            assert_eq!(
                in_place,
                unescape(field),
                "{:?}",
                String::from_utf8_lossy(field)
            );
        }
    }

    #[test]
    fn a_large_text_value_is_made_in_its_lines_buffer_and_a_small_one_copied() {
        let large = "z".repeat(HAND_OVER_MIN);
        let input = format!("1\t\\\\x{large}\\t\tz\n2\tsmall\tz\n");
        let mut text = text_reader(&input);
        for value in [format!("\\x{large}\t"), "small".to_string()] {
            let (_, field) = text.next_field().unwrap().unwrap();
            let line_at = text.text.buf.as_ptr();
            let read = text.take_value(field).unwrap();
            assert!(read == value.as_bytes());
            let in_place = read.as_ptr() == line_at;
            assert_eq!(
                in_place,
                value.len() > HAND_OVER_MIN,
                "made in place: {in_place}"
            );
        }
        // Records keep the fields around the value, to be written back as they came.
        let (layout, records) = read_records(input.as_bytes(), Some(Column::Index(1)));
        assert!(write_back(&layout, &records, <[u8]>::to_vec) == input.as_bytes());
    }

    /// A reader of COPY text data's second column.
    fn text_reader(input: &str) -> TextRows<impl BufRead> {
        let options = CopyOptions::column(Some(Column::Index(1)));
        match open(
            Cursor::new(input.as_bytes().to_vec()),
            &options,
            "in".into(),
        )
        .unwrap()
        {
            Reader::Text(text) => text,
            Reader::Binary(_) => panic!("text COPY data read as binary"),
        }
    }

    fn rows_error(input: &[u8], column: Option<Column>) -> String {
        match rows(
            Cursor::new(input.to_vec()),
            &CopyOptions::column(column),
            "in".into(),
        ) {
            Ok(rows) => rows.collect::<Result<Vec<_>, _>>().unwrap_err().to_string(),
            Err(error) => error.to_string(),
        }
    }

    /// The layout and records of COPY data.
    fn read_records(input: &[u8], column: Option<Column>) -> (Layout, Vec<Record>) {
        let (layout, records) = records(
            Cursor::new(input.to_vec()),
            &CopyOptions::column(column),
            "in".into(),
        )
        .unwrap();
        (layout, records.collect::<Result<_, _>>().unwrap())
    }

    /// `records` written back by `layout`, each value replaced by `replace` of it.
    fn write_back(
        layout: &Layout,
        records: &[Record],
        replace: impl Fn(&[u8]) -> Vec<u8>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        layout.write_start(&mut out);
        for record in records {
            let value = record.value.as_deref().map(&replace);
            layout
                .write_record(&mut out, record, value.as_deref())
                .unwrap();
        }
        layout.write_end(&mut out).unwrap();
        out
    }

    #[test]
    fn text_records_keep_nulls_empty_values_and_the_other_columns() {
        let input = "id\tbody\tnote\n1\tfirst\\tbody\t\\N\n2\t\\N\tx\\\\y\n3\t\tz\n";
        let (layout, read) = read_records(input.as_bytes(), Some(Column::Name("body".into())));
        assert_eq!(
            layout,
            Layout::Text {
                header: Some(b"id\tbody\tnote\n".to_vec()),
                delimiter: b'\t',
                null: b"\\N".to_vec(),
            }
        );
        let values: Vec<_> = read.iter().map(|r| r.value.as_deref()).collect();
        assert_eq!(values, [Some(&b"first\tbody"[..]), None, Some(b"")]);
        let places: Vec<_> = read.iter().map(|r| r.place.to_string()).collect();
        assert_eq!(places, ["line 2", "line 3", "line 4"]);
        // Written back as they are, the same text; replaced, only the column changes.
        assert_eq!(write_back(&layout, &read, <[u8]>::to_vec), input.as_bytes());
        let upper = write_back(&layout, &read, |v| [b"<", v, b">\n"].concat());
        assert_eq!(
            String::from_utf8(upper).unwrap(),
            "id\tbody\tnote\n1\t<first\\tbody>\\n\t\\N\n2\t\\N\tx\\\\y\n3\t<>\\n\tz\n"
        );
        // By index, the first line is a record like any other.
        let (layout, read) = read_records(input.as_bytes(), Some(Column::Index(2)));
        let Layout::Text { header: None, .. } = layout else {
            panic!("{layout:?}")
        };
        assert_eq!(read.len(), 4);
        assert_eq!(read[1].value, None);
        assert_eq!(write_back(&layout, &read, <[u8]>::to_vec), input.as_bytes());
        // A `\` at the very end of the data stands for nothing, in a record written back too
        // (it would escape the line feed after it).
        let (layout, read) = read_records(b"a\tb\\", Some(Column::Index(0)));
        assert_eq!(write_back(&layout, &read, <[u8]>::to_vec), b"a\tb\n");
        // The last column, and the only one.
        let (layout, read) = read_records(b"a\n\\N\n\n", None);
        let values: Vec<_> = read.iter().map(|r| r.value.as_deref()).collect();
        assert_eq!(values, [Some(&b"a"[..]), None, Some(b"")]);
        assert_eq!(write_back(&layout, &read, <[u8]>::to_vec), b"a\n\\N\n\n");
    }

    #[test]
    fn a_delimiter_and_a_null_string_are_read_and_written_as_copy_takes_them() {
        let options = CopyOptions {
            column: Some(Column::Index(1)),
            delimiter: Some(b'|'),
            null: Some(b"NULL".to_vec()),
            header: false,
        };
        let input = b"1|a\\|b\\tc|NULL\n2|\\N|x\n3||NULL\n4|NULL|y\n";
        let read: Vec<Vec<u8>> = rows(Cursor::new(input.to_vec()), &options, "in".into())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // `\N` is no NULL here (it is `N`); `NULL` is, as a whole field.
        assert_eq!(read, [b"a|b\tc".to_vec(), b"N".to_vec()]);
        let (layout, records) =
            records(Cursor::new(input.to_vec()), &options, "in".into()).unwrap();
        let records: Vec<Record> = records.collect::<Result<_, _>>().unwrap();
        assert_eq!(
            layout,
            Layout::Text {
                header: None,
                delimiter: b'|',
                null: b"NULL".to_vec(),
            }
        );
        // Written back: the delimiter in a value escaped, NULL as the NULL string (and `\N`,
        // which is `N`, as `N`).
        let written = write_back(&layout, &records, <[u8]>::to_vec);
        assert_eq!(written, b"1|a\\|b\\tc|NULL\n2|N|x\n3||NULL\n4|NULL|y\n");
        let mut out = Vec::new();
        layout.write_record(&mut out, &records[0], None).unwrap();
        layout
            .write_record(&mut out, &records[1], Some(b"p|q"))
            .unwrap();
        assert_eq!(out, b"1|NULL|NULL\n2|p\\|q|x\n");
        // Binary data takes none of them, nor a header line.
        let binary_data = binary(&[&[Some(b"a")]]);
        let header = CopyOptions {
            header: true,
            ..CopyOptions::column(Some(Column::Index(0)))
        };
        for options in [&options, &header] {
            let error = match rows(Cursor::new(binary_data.clone()), options, "in".into()) {
                Ok(_) => panic!("binary data read with {options:?}"),
                Err(error) => error.to_string(),
            };
            assert!(
                error.contains("binary COPY data has no delimiter, NULL string or header line"),
                "{error}"
            );
        }
    }

    #[test]
    fn binary_records_keep_nulls_empty_values_and_the_other_columns() {
        let input = binary(&[
            &[Some(b"1"), Some(b"first"), None],
            &[Some(b"2"), None, Some(b"x")],
            &[None, Some(b""), Some(b"y")],
        ]);
        let (layout, read) = read_records(&input, Some(Column::Index(1)));
        assert_eq!(layout, Layout::Binary);
        let values: Vec<_> = read.iter().map(|r| r.value.as_deref()).collect();
        assert_eq!(values, [Some(&b"first"[..]), None, Some(b"")]);
        assert_eq!(
            read[2].place,
            Place::Tuple {
                number: 3,
                byte: 55
            }
        );
        assert_eq!(write_back(&layout, &read, <[u8]>::to_vec), input);
        let replaced = write_back(&layout, &read, |v| [v, b"!"].concat());
        let expected = binary(&[
            &[Some(b"1"), Some(b"first!"), None],
            &[Some(b"2"), None, Some(b"x")],
            &[None, Some(b"!"), Some(b"y")],
        ]);
        assert_eq!(replaced, expected);
    }

    #[test]
    fn the_text_broken_end_is_refused_by_the_reader() {
        let mut input = b"a\nb\n".to_vec();
        input.extend_from_slice(TEXT_BROKEN_END);
        let error = rows_error(&input, None);
        assert!(
            error.contains("in:3: bad COPY data: more on the line after `\\.`"),
            "{error}"
        );
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

        // Records of any columns, text or binary, written back as they are, give the same
        // bytes; and each record's value is the column's.
        #[test]
        fn records_written_back_are_the_input(
            given in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..12)),
                    3,
                ),
                0..12,
            ),
            column in 0usize..3,
        ) {
            let tuples: Vec<Vec<Option<&[u8]>>> = given
                .iter()
                .map(|fields| fields.iter().map(|f| f.as_deref()).collect())
                .collect();
            let slices: Vec<&[Option<&[u8]>]> = tuples.iter().map(|t| &t[..]).collect();
            let mut text = Vec::new();
            for fields in &tuples {
                for (at, field) in fields.iter().enumerate() {
                    if at > 0 {
                        text.push(b'\t');
                    }
                    match field {
                        Some(value) => escape_text(value, &mut text),
                        None => text.extend_from_slice(b"\\N"),
                    }
                }
                text.push(b'\n');
            }
            let expected: Vec<Option<&[u8]>> = tuples.iter().map(|t| t[column]).collect();
            for input in [binary(&slices), text] {
                let (layout, read) = read_records(&input, Some(Column::Index(column)));
                let values: Vec<Option<&[u8]>> = read.iter().map(|r| r.value.as_deref()).collect();
                proptest::prop_assert_eq!(&values, &expected);
                proptest::prop_assert_eq!(write_back(&layout, &read, <[u8]>::to_vec), input);
            }
        }

        // Escaping leaves no byte 0x08-0x0d and no bare delimiter, and puts a backslash only
        // before one of `\\ b f n r t v` or the delimiter; unescaping gives the value back.
        // (Values of mostly plain bytes, longer than the 16-byte chunks `find_escaped` scans,
        // as well as short ones.)
        #[test]
        fn escaping_escapes_exactly_what_copy_escapes(
            value in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => proptest::num::u8::ANY,
                    1 => proptest::sample::select(vec![b'\\', 8, 9, 10, 11, 12, 13, b'|', 1]),
                ],
                0..100,
            ),
            delimiter in proptest::sample::select(vec![b'\t', b'|', b',', 1]),
        ) {
            let mut out = Vec::new();
            escape_text_with(&value, delimiter, &mut out);
            proptest::prop_assert!(!out.iter().any(|b| (8..=13).contains(b)), "{:?}", out);
            let mut at = 0;
            while at < out.len() {
                proptest::prop_assert!(out[at] != delimiter, "{:?}", out);
                if out[at] == b'\\' {
                    let next = out[at + 1];
                    proptest::prop_assert!(b"\\bfnrtv".contains(&next) || next == delimiter);
                    at += 1;
                }
                at += 1;
            }
            proptest::prop_assert_eq!(unescape(&out), value);
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
            let read: Vec<Vec<u8>> = rows(Cursor::new(input), &CopyOptions::default(), "in".into())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            proptest::prop_assert_eq!(read, values);
            if noise.starts_with(SIGNATURE) {
                return Ok(());
            }
            let column = CopyOptions::column(Some(Column::Index(1)));
            if let Ok(rows) = rows(Cursor::new(noise), &column, "in".into()) {
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
