//! Reading text a line or a record at a time: lines and JSON Lines ([`LineRows`]), and the
//! line ends and bounded reads under COPY's text format and CSV ([`TextRecords`]).

use std::borrow::Cow;
use std::io::{self, BufRead, Read};
use std::ops::Range;

use pgdict::rows::{self, RowFormat};

use super::{datums_file, SourceError};

/// The longest line read: one value at PostgreSQL's limit, then `\r\n`.
const MAX_LINE_LEN: usize = datums_file::MAX_DATUM_LEN + 2;

/// A row read as it is (not a decoded JSON string) at least this long is handed over in the
/// line buffer itself, and the next line starts a fresh buffer: a copy would hold the row
/// twice, which for a row of hundreds of megabytes is the difference that counts. A shorter
/// row is copied out, so that one buffer, grown once, serves every small row.
pub(super) const HAND_OVER_MIN: usize = 1 << 20;

/// Lines or JSON Lines, a line at a time.
pub(super) struct LineRows<R> {
    reader: R,
    origin: String,
    format: RowFormat,
    line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> LineRows<R> {
    pub(super) fn new(reader: R, origin: String, format: RowFormat) -> LineRows<R> {
        LineRows {
            reader,
            origin,
            format,
            line: 0,
            buf: Vec::new(),
        }
    }
}

impl<R: BufRead> LineRows<R> {
    /// The next row, `None` at the end of the input.
    pub(super) fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        loop {
            self.buf.clear();
            let (line, stop) = (self.line + 1, Stop::LineFeed);
            if read_line_into(&mut self.reader, &mut self.buf, &self.origin, line, stop)? == 0 {
                return Ok(None);
            }
            self.line += 1;
            let mut line = &self.buf[..];
            if self.line == 1 && self.format == RowFormat::JsonLines {
                // Not part of the first value (see pgdict::rows).
                line = line.strip_prefix(rows::BYTE_ORDER_MARK).unwrap_or(line);
            }
            // pgdict::rows defines what a line holds (line feed, carriage return, empty lines,
            // JSON strings).
            match rows::line_row(line, self.format) {
                Ok(Some(Cow::Borrowed(row))) if row.len() >= HAND_OVER_MIN => {
                    // `row` is a slice of the buffer (the line without its end, and the
                    // first line without a byte order mark).
                    let start = row.as_ptr() as usize - self.buf.as_ptr() as usize;
                    let end = start + row.len();
                    let mut taken = std::mem::take(&mut self.buf);
                    taken.truncate(end);
                    taken.drain(..start);
                    return Ok(Some(taken));
                }
                Ok(Some(row)) => return Ok(Some(row.into_owned())),
                Ok(None) => {}
                Err(error) => {
                    return Err(SourceError::BadJson {
                        origin: self.origin.clone(),
                        line: self.line,
                        message: error.to_string(),
                    })
                }
            }
        }
    }
}

/// What a reader of text records (COPY's text format, CSV) keeps: the input and its name,
/// where it is, the record being read, and the column's place in a record.
pub(super) struct TextRecords<R> {
    pub(super) input: R,
    pub(super) origin: String,
    /// The column's index in a record.
    pub(super) index: usize,
    /// The field count of the first record, which every record must have.
    pub(super) fields: Option<usize>,
    /// How many line feeds and carriage returns have ended a read so far (`\r\n` counts in
    /// both): the lines read, by the input's kind of line end (a record that goes on past one,
    /// in an escape or in quotes, counts each, as an editor shows it).
    pub(super) line_feeds: u64,
    pub(super) carriage_returns: u64,
    /// The record being read, without its line end.
    pub(super) buf: Vec<u8>,
    /// Whether the end-of-data marker was read.
    pub(super) ended: bool,
    /// The header line, as the input holds it (written back first).
    pub(super) header: Option<Vec<u8>>,
    /// How the input's lines end: its first line end decides.
    pub(super) line_ends: Option<LineEnd>,
}

/// A line end of COPY data (text or CSV). `COPY ... FROM` takes the first line end for the
/// input's kind (`eol_type` in `copyfromparse.c`) and refuses a line end of another kind
/// (PostgreSQL's "literal carriage return found in data", "literal newline found in data", and
/// "unquoted ..." in CSV): the bytes of one are data only where a backslash (text) or quotes
/// (CSV) make them so. `COPY ... TO` writes `\n` (`\r\n` on Windows); records written back
/// (`--keep-columns`) end as the input's lines do ([`TextRecords::line_end`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LineEnd {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
    /// `\r` alone.
    Cr,
}

impl LineEnd {
    /// The kind of line end `line` ends in, if any.
    pub(super) fn ending(line: &[u8]) -> Option<LineEnd> {
        match line {
            [.., b'\r', b'\n'] => Some(LineEnd::CrLf),
            [.., b'\n'] => Some(LineEnd::Lf),
            [.., b'\r'] => Some(LineEnd::Cr),
            _ => None,
        }
    }

    /// How many bytes it takes.
    pub(super) fn len(self) -> usize {
        match self {
            LineEnd::CrLf => 2,
            LineEnd::Lf | LineEnd::Cr => 1,
        }
    }

    /// Its bytes.
    pub(super) fn bytes(self) -> &'static [u8] {
        match self {
            LineEnd::Lf => b"\n",
            LineEnd::CrLf => b"\r\n",
            LineEnd::Cr => b"\r",
        }
    }

    /// How messages write it.
    pub(super) fn name(self) -> &'static str {
        match self {
            LineEnd::Lf => "\\n",
            LineEnd::CrLf => "\\r\\n",
            LineEnd::Cr => "\\r",
        }
    }
}

impl<R> TextRecords<R> {
    /// The line end the input's lines have, as its first line decides: what a record written
    /// back ends in (a line feed, as `COPY ... TO` writes, before a line has ended).
    pub(super) fn line_end(&self) -> &'static [u8] {
        self.line_ends.map_or(b"\n", LineEnd::bytes)
    }

    /// The header line with the input's line end, if one was read.
    pub(super) fn header_line(&self) -> Option<Vec<u8>> {
        let header = self.header.as_ref()?;
        Some([header.as_slice(), self.line_end()].concat())
    }

    /// At the start of `input`, which `origin` names in messages.
    pub(super) fn new(input: R, origin: String) -> TextRecords<R> {
        TextRecords {
            input,
            origin,
            index: 0,
            fields: None,
            line_feeds: 0,
            carriage_returns: 0,
            buf: Vec::new(),
            ended: false,
            header: None,
            line_ends: None,
        }
    }
}

impl<R: BufRead> TextRecords<R> {
    /// Checks that a record of `count` fields is as wide as the first (which sets the width):
    /// else the message, naming what came before (`lines`, `records`).
    pub(super) fn check_width(&mut self, count: usize, before: &str) -> Result<(), String> {
        let expected = *self.fields.get_or_insert(count);
        if count == expected {
            return Ok(());
        }
        Err(format!(
            "{count} fields, where the {before} before have {expected}"
        ))
    }

    /// How many whole lines have been read.
    pub(super) fn lines(&self) -> u64 {
        match self.line_ends {
            Some(LineEnd::Cr) => self.carriage_returns,
            _ => self.line_feeds,
        }
    }

    /// Frees `buf` if it grew to [`HAND_OVER_MIN`] bytes or more, once the record's value has
    /// been copied out of it: a large record is then not held a second time, beside its value,
    /// while the value is compressed (nor kept until a record as large comes). A buffer grown
    /// by small records stays, for the next one.
    pub(super) fn release_large_buf(&mut self) {
        if self.buf.capacity() >= HAND_OVER_MIN {
            self.buf = Vec::new();
        }
    }

    /// Whether the record in `buf` is [`HAND_OVER_MIN`] bytes or more: its value is then made
    /// in `buf` itself ([`TextRecords::take_field`]), not copied out of it.
    pub(super) fn is_large(&self) -> bool {
        self.buf.len() >= HAND_OVER_MIN
    }

    /// Takes `buf`, leaving it empty, with only the bytes at `field` in it (moved to its start):
    /// a large record's value is then made where it stands, not held twice, as record and
    /// value, at once.
    pub(super) fn take_field(&mut self, field: Range<usize>) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.truncate(field.end);
        buf.drain(..field.start);
        buf
    }

    /// Starts a record: empties `buf`; the number of the record's first line, or `None` after
    /// the end-of-data marker.
    pub(super) fn start_record(&mut self) -> Option<u64> {
        self.buf.clear();
        (!self.ended).then_some(self.lines() + 1)
    }

    /// Appends the input's next line to `buf`, through its line end (a line feed, a carriage
    /// return, or both: see [`LineEnd::ending`]) or to the end of the input: whether there was
    /// one. Each such byte stops the read, so that the reader sees every one: a line end, or
    /// data that a backslash or quotes make so.
    pub(super) fn append_line(&mut self) -> Result<bool, SourceError> {
        let start = self.buf.len();
        let (line, stop) = (self.lines() + 1, Stop::LineEnd);
        let read = read_line_into(&mut self.input, &mut self.buf, &self.origin, line, stop)?;
        let end = LineEnd::ending(&self.buf[start..]);
        self.line_feeds += u64::from(matches!(end, Some(LineEnd::Lf | LineEnd::CrLf)));
        self.carriage_returns += u64::from(matches!(end, Some(LineEnd::Cr | LineEnd::CrLf)));
        Ok(read > 0)
    }

    /// Takes the line end `end`, which ends `buf` and which no backslash or quotes make data,
    /// off `buf`, if it is of the input's kind (the first decides); else what is wrong, in
    /// words that say where a line end byte is not data (`outside`) and how COPY writes one
    /// in the data (`written`). `after_marker`: the line ends in the end-of-data marker `\.`,
    /// after which COPY reads one byte where lines end in `\r`, so that a `\r\n` there ends
    /// the data at its `\r` (the `\n` is past the end, never read).
    pub(super) fn take_line_end(
        &mut self,
        mut end: LineEnd,
        after_marker: bool,
        outside: &str,
        written: &str,
    ) -> Result<(), String> {
        if after_marker && self.line_ends == Some(LineEnd::Cr) && end == LineEnd::CrLf {
            self.buf.pop(); // The line feed, past the end of the data.
            end = LineEnd::Cr;
        }
        let kind = *self.line_ends.get_or_insert(end);
        if kind != end {
            let stray = match (kind, end) {
                (LineEnd::CrLf, LineEnd::Lf) => "a line feed alone",
                (LineEnd::CrLf, _) => "a carriage return alone",
                (LineEnd::Lf, _) => "a carriage return",
                (LineEnd::Cr, _) => "a line feed",
            };
            return Err(format!(
                "{stray} {outside}, where lines end in {} (COPY ... FROM takes the first line's \
                 end for every line; {written})",
                kind.name(),
            ));
        }
        self.buf.truncate(self.buf.len() - end.len());
        Ok(())
    }
}

/// Where [`read_line_into`] stops.
#[derive(Clone, Copy)]
enum Stop {
    /// After a line feed.
    LineFeed,
    /// After a line feed, or a carriage return (and a line feed right after it).
    LineEnd,
}

/// Appends to `buf` the input through its next `stop` (or to its end): the bytes read, 0 at
/// the end of the input. `buf` grows to [`MAX_LINE_LEN`] at the most, one value's limit plus
/// its line end: a longer line is refused ([`SourceError::TooLong`], naming `origin` and
/// `line`), not buffered whole.
fn read_line_into(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    origin: &str,
    line: u64,
    stop: Stop,
) -> Result<usize, SourceError> {
    let too_long = || SourceError::TooLong {
        origin: format!("{origin}:{line}"),
        what: "the line".into(),
        max: datums_file::MAX_DATUM_LEN,
    };
    // A line that goes on (COPY's escaped line feed) once `buf` is full is too long as well.
    let room = MAX_LINE_LEN.checked_sub(buf.len()).filter(|&room| room > 0);
    let room = room.ok_or_else(too_long)? as u64;
    let mut limited = reader.take(room);
    let read = match stop {
        Stop::LineFeed => limited.read_until(b'\n', buf),
        Stop::LineEnd => read_through_line_end(&mut limited, buf),
    };
    let read = read.map_err(|source| SourceError::Io {
        origin: format!("{origin}:{line}"),
        source,
    })?;
    if buf.len() == MAX_LINE_LEN && LineEnd::ending(buf).is_none() {
        return Err(too_long());
    }
    Ok(read)
}

/// [`BufRead::read_until`] for the first of two bytes: appends to `buf` the input through its
/// next line feed or carriage return (with a line feed right after that), or to its end; the
/// bytes read.
fn read_through_line_end(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let start = buf.len();
    let mut after_cr = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if after_cr {
            // A line feed right after the carriage return is part of the line end.
            if available.first() == Some(&b'\n') {
                buf.push(b'\n');
                reader.consume(1);
            }
            break;
        }
        if available.is_empty() {
            break; // The end of the input.
        }
        let found = memchr::memchr2(b'\n', b'\r', available);
        let taken = found.map_or(available.len(), |at| at + 1);
        buf.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        match buf.last() {
            _ if found.is_none() => {}
            Some(b'\r') => after_cr = true,
            _ => break,
        }
    }
    Ok(buf.len() - start)
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;

    #[test]
    fn a_large_row_is_handed_over_in_the_buffer_and_a_small_one_copied() {
        let large = "x".repeat(HAND_OVER_MIN);
        // JSON Lines after a byte order mark: the row starts past the buffer's start.
        for format in [RowFormat::Lines, RowFormat::JsonLines] {
            let bom = if format == RowFormat::JsonLines {
                "\u{feff}"
            } else {
                ""
            };
            let input = format!("{bom}[\"{large}\"]\r\n[1]\n");
            let mut rows = LineRows::new(input.as_bytes(), "test".into(), format);
            // Both formats take a JSON array line as it is.
            let (large, small) = (format!("[\"{large}\"]"), "[1]");
            // A buffer of room for the whole line, so that reading it does not move it.
            rows.buf = Vec::with_capacity(input.len());
            let buffer = rows.buf.as_ptr();
            let row = rows.next_row().unwrap().unwrap();
            assert_eq!(row, large.as_bytes());
            assert_eq!(row.as_ptr(), buffer, "the large row was copied");
            assert_eq!(
                rows.buf.capacity(),
                0,
                "the large row's buffer is still the reader's"
            );
            // A small row is copied out of a buffer that stays the reader's.
            rows.buf = Vec::with_capacity(64);
            let buffer = rows.buf.as_ptr();
            let row = rows.next_row().unwrap().unwrap();
            assert_eq!(row, small.as_bytes());
            assert_ne!(row.as_ptr(), buffer);
            assert_eq!(rows.buf.as_ptr(), buffer);
            assert!(rows.next_row().unwrap().is_none());
        }
    }

    #[test]
    fn a_line_ends_at_either_byte_and_cr_lf_is_one_end() {
        // A one-byte buffer: the line feed after a carriage return comes in the next fill.
        let mut reader = BufReader::with_capacity(1, &b"a\r\nb\rc\n\r\r\nlast"[..]);
        let mut lines = Vec::new();
        loop {
            let mut line = Vec::new();
            if read_through_line_end(&mut reader, &mut line).unwrap() == 0 {
                break;
            }
            lines.push(String::from_utf8(line).unwrap());
        }
        assert_eq!(lines, ["a\r\n", "b\r", "c\n", "\r", "\r\n", "last"]);
    }
}
