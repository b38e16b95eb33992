//! PostgreSQL's CSV format: what `COPY ... TO ... (FORMAT csv)` writes and `COPY ... FROM`
//! reads (`copyto.c`, `copyfromparse.c`), with COPY's DELIMITER, QUOTE, ESCAPE and NULL
//! options ([`CsvSyntax`]). Read as rows (one column's values), or as records split around
//! the column (what `--keep-columns` reads), which [`Layout::Csv`] writes back with another
//! value in the column.
//!
//! ```text
//!   record     fields separated by the delimiter, ended outside quotes by \n, \r\n or \r,
//!              as the first record ends (COPY writes \n)
//!   "..."      a quoted part of a field (QUOTE, by default "): a delimiter or a line end in
//!              it is data; it may start anywhere in a field (a"b,c"d is the value ab,cd, as
//!              COPY reads it)
//!   ESCAPE     in a quoted part, before a quote or an escape: that byte is data (by default
//!              the quote itself, so "" is one "); before any other byte it is data itself
//!   NULL       an unquoted field that is the NULL string, by default empty ("" is the empty
//!              string; a quoted field is never NULL)
//!   \.         a record of these two bytes alone on its first line, with its line end: the
//!              end of the data (what follows is not read)
//!   header     the first record, unless CsvOptions::has_header says there is none: the
//!              columns' names
//! ```
//!
//! The data is read as bytes, in an encoding whose multibyte characters never hold an ASCII
//! byte (UTF-8, any server encoding): in SJIS, BIG5, GBK, UHC, GB18030 or JOHAB (client-only
//! encodings, `COPY ... (ENCODING 'SJIS')`), a character's second byte may be a quote, an
//! escape or a delimiter, and would be read as one.
//!
//! Every record must have as many fields as the first. A UTF-8 byte order mark at the start of
//! a header is not part of the first column's name (spreadsheets write one); elsewhere it is
//! data, as COPY reads it (and it is written back). As in `COPY ... FROM`, the first line end
//! decides the input's kind: a `\r` or `\n` outside quotes that is not a line end of that kind
//! is refused. A record is held whole, up to PostgreSQL's limit for one value
//! ([`MAX_DATUM_LEN`](super::datums_file::MAX_DATUM_LEN)) and its line end, and refused past
//! it.
//!
//! [`CsvSyntax::write_field`] writes a value as `COPY ... TO` does: quoted when it holds the
//! delimiter, the quote, a line feed or a carriage return, when it is the NULL string (unquoted
//! it would be NULL), and when it is `\.` alone on its line; in quotes, the escape written
//! before each quote and escape; with FORCE_QUOTE, always quoted. NULL is written as the NULL
//! string. (COPY ... FROM's FORCE_NOT_NULL and FORCE_NULL are not taken: a field is NULL by the
//! rule above.)

use std::io::BufRead;
use std::ops::Range;

use super::copy::{check_options, Layout, Record, CSV_BROKEN_END};
use super::{until_error, Column, Iter, LineEnd, RowIter, SourceError, TextRecords};

/// COPY's default QUOTE, and ESCAPE (a quote in a quoted part is written twice).
const QUOTE: u8 = b'"';

/// The byte order mark UTF-8 text may start with.
const BYTE_ORDER_MARK: &[u8] = "\u{feff}".as_bytes();

/// How `COPY ... (FORMAT csv)` writes a record's fields: its DELIMITER, QUOTE, ESCAPE and NULL
/// options ([`Default`]: COPY's, a comma, `"` for both quote and escape, NULL an empty field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSyntax {
    /// The field delimiter (`b','`).
    pub delimiter: u8,
    /// What opens and closes a quoted part of a field (`b'"'`).
    pub quote: u8,
    /// What makes the quote or the escape after it data, in a quoted part (`b'"'`: the quote,
    /// so that `""` is one quote).
    pub escape: u8,
    /// What an unquoted field is to be NULL (by default empty).
    pub null: Vec<u8>,
    /// Whether the column's values are written quoted whatever they hold, NULL aside (COPY's
    /// FORCE_QUOTE for the column, or `*`). Reading takes quoted values either way.
    pub force_quote: bool,
}

impl Default for CsvSyntax {
    fn default() -> CsvSyntax {
        CsvSyntax {
            delimiter: b',',
            quote: QUOTE,
            escape: QUOTE,
            null: Vec::new(),
            force_quote: false,
        }
    }
}

impl CsvSyntax {
    /// Refuses options that `COPY` refuses in CSV (`ProcessCopyOptions`, `copy.c`), in its
    /// words and order: a delimiter that is a line end, not ASCII, or the quote; a quote or an
    /// escape that is not one ASCII byte; a NULL string with a line end, the delimiter or the
    /// quote in it. And a quote or an escape that is a line end, which COPY takes but pgdict
    /// does not read.
    pub fn check(&self) -> Result<(), String> {
        check_options(self.delimiter, &self.null, Some((self.quote, self.escape)))?;
        if [self.quote, self.escape]
            .iter()
            .any(|b| matches!(b, b'\n' | b'\r'))
        {
            return Err("pgdict does not read CSV whose quote or escape is a line end".into());
        }
        Ok(())
    }

    /// What ends the output when an error stops it: [`CSV_BROKEN_END`] in this quote, a quote
    /// that nothing closes, so that `COPY ... FROM` fails (`unterminated CSV quoted field`)
    /// rather than loading the records before it, and so does pgdict's reader. Each quote and
    /// escape in its words is escaped, so that none closes the quote.
    pub fn broken_end(&self) -> Vec<u8> {
        let (default_quote, words) = CSV_BROKEN_END.split_at(1);
        debug_assert_eq!(default_quote, [QUOTE]);
        let mut out = vec![self.quote];
        self.write_escaped(words, &mut out);
        out
    }

    /// Appends `value` with the escape before each quote and escape in it (what a quoted part
    /// holds).
    fn write_escaped(&self, value: &[u8], out: &mut Vec<u8>) {
        let mut at = 0;
        while let Some(special) = self.next_special(value, at) {
            out.extend_from_slice(&value[at..special]);
            out.push(self.escape);
            out.push(value[special]);
            at = special + 1;
        }
        out.extend_from_slice(&value[at..]);
    }

    /// Where the first quote or escape at or after `from` is in `bytes` ([`find_near`]).
    fn next_special(&self, bytes: &[u8], from: usize) -> Option<usize> {
        let (quote, escape) = (self.quote, self.escape);
        let is = |b| b == quote || b == escape;
        find_near(bytes, from, is, |rest| memchr::memchr2(quote, escape, rest))
    }

    /// Whether the byte at `at` in `bytes`, in a quoted part, is an escape that makes the byte
    /// after it data: a quote or an escape (`CopyReadAttributesCSV`). An escape before any
    /// other byte is data itself.
    fn escapes(&self, bytes: &[u8], at: usize) -> bool {
        let next = bytes.get(at + 1);
        bytes[at] == self.escape && next.is_some_and(|&b| b == self.quote || b == self.escape)
    }

    /// Where the quoted part that opens before `from` in `bytes` closes: the place of its
    /// closing quote, past every escaped quote and escape; `None` if it does not close.
    fn closing_quote(&self, bytes: &[u8], mut from: usize) -> Option<usize> {
        let quote = self.quote;
        if quote == self.escape {
            // COPY's default: `""` is data, any other quote closes (a loop of its own: see
            // `copy_quoted`).
            loop {
                let found = find_byte(bytes, from, quote)?;
                match bytes.get(found + 1) == Some(&quote) {
                    true => from = found + 2,
                    false => return Some(found),
                }
            }
        }
        // Only the quotes need looking at: one is data when an odd run of escapes stands
        // right before it (they pair up from the left, the last one escaping the quote). An
        // escape before any other byte is data, and a run cannot reach back past the opening
        // quote, which is not an escape. Stopping at every escape instead, as `unquote` must,
        // read text full of backslashes in `QUOTE '''', ESCAPE '\'` 1.6-2.1 times slower
        // (and so did `QuoteState::scan`: `benches/csv_read.rs`, fortunes, HTML and Debian).
        loop {
            let found = find_byte(bytes, from, quote)?;
            if escapes_before(bytes, from, found, self.escape).is_multiple_of(2) {
                return Some(found);
            }
            from = found + 1;
        }
    }

    /// Whether `COPY ... TO` quotes `value`: always with FORCE_QUOTE ([`CsvSyntax::force_quote`]);
    /// else when it holds the delimiter, the quote, a line feed or a carriage return, when it
    /// is the NULL string, and when it is `\.` and `alone` (the record has no other field). (An
    /// escape alone does not make it quoted: outside quotes an escape is data.)
    pub fn needs_quotes(&self, value: &[u8], alone: bool) -> bool {
        self.force_quote
            || value == self.null
            || (alone && value == b"\\.")
            || memchr::memchr3(self.delimiter, self.quote, b'\n', value).is_some()
            || memchr::memchr(b'\r', value).is_some()
    }

    /// Appends `value` as a CSV field, as `COPY ... TO` writes it ([`CsvSyntax::needs_quotes`]):
    /// quoted, the escape before each quote and escape in it, or as it is; `alone`: the record
    /// has no other field.
    pub fn write_field(&self, value: &[u8], alone: bool, out: &mut Vec<u8>) {
        if !self.needs_quotes(value, alone) {
            out.extend_from_slice(value);
            return;
        }
        out.push(self.quote);
        self.write_escaped(value, out);
        out.push(self.quote);
    }

    /// Where the fields of a record are, split at the delimiters outside quotes; and the text
    /// of field `column` ([`CsvSyntax::unquote`]) if a quote is in it, read in the same pass
    /// (empty otherwise: its text is its bytes).
    fn split_fields(
        &self,
        record: &[u8],
        column: Option<usize>,
    ) -> Result<(Vec<Field>, Vec<u8>), &'static str> {
        let mut fields = Vec::new();
        let mut text = Vec::new();
        let mut start = 0;
        let mut quoted = false;
        let mut at = 0;
        // Outside quotes only these two bytes matter (a line end byte there ended the record:
        // `read_record`), inside only a quote and the escape (`closing_quote`).
        while let Some(found) = memchr::memchr2(self.delimiter, self.quote, &record[at..]) {
            let byte = at + found;
            let in_column = column == Some(fields.len());
            if in_column && (quoted || record[byte] == self.quote) {
                text.reserve(record.len() - start); // At most the rest of the record.
                text.extend_from_slice(&record[at..byte]);
            }
            if record[byte] == self.quote {
                quoted = true;
                // The column's text is copied as its quotes are found: unquoting it in a second
                // pass read CSV 1.45-1.67 times slower where quotes are dense (JSON documents
                // in COPY's default syntax), 1.04-1.35 times elsewhere (`benches/csv_read.rs`).
                let close = match in_column {
                    true => self.copy_quoted(record, byte + 1, &mut text),
                    false => self.closing_quote(record, byte + 1),
                };
                at = close.ok_or("unterminated CSV quoted field")? + 1;
            } else {
                fields.push(Field {
                    range: start..byte,
                    quoted,
                });
                start = byte + 1;
                at = start;
                quoted = false;
            }
        }
        if quoted && column == Some(fields.len()) {
            text.extend_from_slice(&record[at..]);
        }
        fields.push(Field {
            range: start..record.len(),
            quoted,
        });
        Ok((fields, text))
    }

    /// A field's bytes with its quoted parts' quotes taken out, and the escape before each
    /// quote or escape in them (the field is whole: every quoted part in it is closed).
    fn unquote(&self, raw: &[u8]) -> Vec<u8> {
        let mut value = Vec::with_capacity(raw.len());
        let mut at = 0;
        while let Some(opening) = find_byte(raw, at, self.quote) {
            value.extend_from_slice(&raw[at..opening]);
            let close = self.copy_quoted(raw, opening + 1, &mut value);
            at = close.map_or(raw.len(), |close| close + 1);
        }
        value.extend_from_slice(&raw[at..]);
        value
    }

    /// [`CsvSyntax::closing_quote`], appending the quoted part's data to `value` on the way:
    /// its bytes without the escape before each escaped quote or escape.
    fn copy_quoted(&self, bytes: &[u8], mut from: usize, value: &mut Vec<u8>) -> Option<usize> {
        let quote = self.quote;
        if quote == self.escape {
            // COPY's default: `""` is one quote of data, any other quote closes (a loop of its
            // own: the general one made reading a CSV of JSON documents or of prose 10-15 %
            // slower).
            loop {
                let found = find_byte(bytes, from, quote)?;
                extend_short(value, &bytes[from..], found - from);
                match bytes.get(found + 1) == Some(&quote) {
                    true => {
                        value.push(quote);
                        from = found + 2;
                    }
                    false => return Some(found),
                }
            }
        }
        loop {
            let special = self.next_special(bytes, from)?;
            value.extend_from_slice(&bytes[from..special]);
            if self.escapes(bytes, special) {
                value.push(bytes[special + 1]);
                from = special + 2;
            } else if bytes[special] == quote {
                return Some(special);
            } else {
                value.push(bytes[special]); // An escape that escapes nothing is data.
                from = special + 1;
            }
        }
    }
}

/// Where the first byte that `is` at or after `from` is in `bytes`: the next few bytes looked at
/// one by one before `search` takes over. In JSON quotes are a few bytes apart, too close for
/// a search (memchr) to pay (it made reading a CSV of JSON documents 10 % slower), where in
/// prose the search skips long runs.
fn find_near(
    bytes: &[u8],
    from: usize,
    is: impl Fn(u8) -> bool,
    search: impl Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    const LOOK: usize = 16;
    let near = bytes.get(from..)?;
    let (first, rest) = near.split_at(near.len().min(LOOK));
    match first.iter().position(|&b| is(b)) {
        Some(found) => Some(from + found),
        None => search(rest).map(|found| from + first.len() + found),
    }
}

/// How many escapes stand right before `at` in `bytes`, counted back no further than `from`.
/// In a quoted part they pair up from the left, each pair one escape of data: an odd run makes
/// the byte at `at` data (a quote) or leaves an escape that acts on what follows `bytes`.
fn escapes_before(bytes: &[u8], from: usize, at: usize, escape: u8) -> usize {
    let run = bytes[from..at].iter().rev().take_while(|&&b| b == escape);
    run.count()
}

/// Appends the first `len` bytes of `rest` to `value`. A short run is copied as a fixed
/// [`SHORT_RUN`] bytes and cut back, which compiles to a few moves where a copy of any length
/// calls `memmove`: quotes in JSON leave runs of a few bytes between them (reading JSON in
/// COPY's default CSV 1.06-1.14x faster, other text level; in the general loop of
/// `copy_quoted`, where escapes come in pairs, level or slower).
fn extend_short(value: &mut Vec<u8>, rest: &[u8], len: usize) {
    match rest.get(..SHORT_RUN) {
        Some(run) if len <= SHORT_RUN => {
            let end = value.len() + len;
            value.extend_from_slice(run);
            value.truncate(end);
        }
        _ => value.extend_from_slice(&rest[..len]),
    }
}

/// How long a run [`extend_short`] copies as one.
const SHORT_RUN: usize = 16;

/// Where the first `byte` at or after `from` is in `bytes` ([`find_near`]).
fn find_byte(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    find_near(
        bytes,
        from,
        |b| b == byte,
        |rest| memchr::memchr(byte, rest),
    )
}

/// Where a record's quotes stand as its lines are read, as `COPY ... FROM` follows them to
/// tell a line end in the data from one that ends the record (`CopyReadLineText`).
#[derive(Default)]
struct QuoteState {
    /// Whether the bytes so far leave a quoted part open.
    in_quotes: bool,
    /// Whether the byte before was an escape in quotes that makes the next quote data (with an
    /// escape other than the quote).
    escaping: bool,
}

impl QuoteState {
    /// Follows the quotes through `bytes`, the next bytes of the record.
    fn scan(&mut self, bytes: &[u8], syntax: &CsvSyntax) {
        let (quote, escape) = (syntax.quote, syntax.escape);
        if quote == escape {
            // The quote is its own escape: quotes open and close in turn (`""` in quotes
            // closes and reopens), so an odd count leaves them open.
            let quotes = memchr::memchr_iter(quote, bytes).count();
            self.in_quotes ^= quotes % 2 == 1;
            return;
        }
        // Quote by quote, as `closing_quote` finds the end of a quoted part: a quote in
        // quotes is data after an odd run of escapes, the escape carried over from the bytes
        // before (`escaping`) counting as one more where the run reaches back to their end.
        let mut at = 0;
        let mut carried = self.escaping;
        while let Some(found) = memchr::memchr(quote, &bytes[at..]) {
            let byte = at + found;
            self.in_quotes = match self.in_quotes {
                true => Self::odd_escapes(bytes, at, byte, carried, escape),
                false => true,
            };
            carried = false; // A quote ends what an escape before it could do.
            at = byte + 1;
        }
        self.escaping =
            self.in_quotes && Self::odd_escapes(bytes, at, bytes.len(), carried, escape);
    }

    /// Whether an odd number of escapes stands right before `end` in `bytes` (back to `from`
    /// at the most), an escape `carried` over from before `bytes` counted where the run reaches
    /// back to `from`.
    fn odd_escapes(bytes: &[u8], from: usize, end: usize, carried: bool, escape: u8) -> bool {
        let run = escapes_before(bytes, from, end, escape);
        let carried = carried && run == end - from;
        (run + usize::from(carried)) % 2 == 1
    }
}

/// Which CSV column, and how the file is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    /// The column.
    pub column: Column,
    /// Whether the first record is a header (names, not a datum).
    pub has_header: bool,
    /// How the fields are written: delimiter, quote, escape and NULL string.
    pub syntax: CsvSyntax,
}

impl CsvOptions {
    /// Column `column` of a file with a header, in COPY's default syntax.
    pub fn new(column: Column) -> CsvOptions {
        CsvOptions {
            column,
            has_header: true,
            syntax: CsvSyntax::default(),
        }
    }

    /// Refuses the options that [`CsvSyntax::check`] refuses.
    pub fn check(&self) -> Result<(), String> {
        self.syntax.check()
    }
}

/// The rows of CSV data: the non-NULL, non-empty values of one column.
pub(super) fn rows<R: BufRead + 'static>(
    input: R,
    options: &CsvOptions,
    origin: String,
) -> Result<RowIter, SourceError> {
    let mut reader = CsvReader::new(input, options, origin)?;
    Ok(until_error(move || reader.next_row()))
}

/// The records of CSV data, each split around the column `options` names, NULLs and empty
/// values included; and how they are written back ([`Layout::Csv`]). The iterator ends at the
/// end of the data or after its first error.
pub fn records<R: BufRead + 'static>(
    input: R,
    options: &CsvOptions,
    origin: String,
) -> Result<(Layout, Iter<Record>), SourceError> {
    let mut reader = CsvReader::new(input, options, origin)?;
    let layout = Layout::Csv {
        header: reader.text.header_line(),
        syntax: options.syntax.clone(),
    };
    Ok((layout, until_error(move || reader.next_record())))
}

/// A field of a record: where it is, and whether a quote was in it (a quoted field is never
/// NULL).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    range: Range<usize>,
    quoted: bool,
}

impl Field {
    /// The field's text in `record`, its quoted parts unquoted.
    fn text(&self, record: &[u8], syntax: &CsvSyntax) -> Vec<u8> {
        let raw = &record[self.range.clone()];
        match self.quoted {
            false => raw.to_vec(),
            true => syntax.unquote(raw),
        }
    }

    /// The field's value in `record`, given its `text` if it is quoted (read by
    /// [`CsvSyntax::split_fields`]); `None`: NULL (unquoted, the NULL string).
    fn value(&self, record: &[u8], syntax: &CsvSyntax, text: Vec<u8>) -> Option<Vec<u8>> {
        let raw = &record[self.range.clone()];
        match self.quoted {
            true => Some(text),
            false => (raw != syntax.null).then(|| raw.to_vec()),
        }
    }
}

/// One column of CSV data, a record at a time.
struct CsvReader<R> {
    /// The input, where it is, the record being read and the column's place in it.
    text: TextRecords<R>,
    syntax: CsvSyntax,
    /// The column asked for, for messages.
    column: Column,
}

impl<R: BufRead> CsvReader<R> {
    fn new(input: R, options: &CsvOptions, origin: String) -> Result<Self, SourceError> {
        let mut reader = CsvReader {
            text: TextRecords::new(input, origin),
            syntax: options.syntax.clone(),
            column: options.column.clone(),
        };
        let name = match &options.column {
            Column::Index(index) => {
                reader.text.index = *index;
                None
            }
            Column::Name(name) if options.has_header => Some(name),
            Column::Name(_) => {
                return Err(reader.no_column(
                    reader.text.origin.clone(),
                    "the file has no header to name columns (give an index)".into(),
                ))
            }
        };
        if !options.has_header {
            return Ok(reader);
        }
        let Some(line) = reader.read_record()? else {
            return match name {
                Some(_) => {
                    Err(reader.no_column(reader.text.origin.clone(), "the input is empty".into()))
                }
                None => Ok(reader),
            };
        };
        let (fields, _) = reader.split(line, None)?;
        reader.text.fields = Some(fields.len());
        if let Some(name) = name {
            let mut names: Vec<Vec<u8>> = fields
                .iter()
                // A name is the field's text, whatever the NULL string.
                .map(|field| field.text(&reader.text.buf, &reader.syntax))
                .collect();
            if let Some(first) = names.first_mut() {
                if first.starts_with(BYTE_ORDER_MARK) {
                    first.drain(..BYTE_ORDER_MARK.len());
                }
            }
            match names.iter().position(|n| n == name.as_bytes()) {
                Some(index) => reader.text.index = index,
                None => {
                    let names: Vec<_> = names.iter().map(|n| String::from_utf8_lossy(n)).collect();
                    let reason = format!("the header has {}", names.join(", "));
                    return Err(reader.no_column(reader.text.origin.clone(), reason));
                }
            }
        }
        reader.text.header = Some(reader.text.buf.clone());
        Ok(reader)
    }

    fn bad(&self, line: u64, message: impl Into<String>) -> SourceError {
        SourceError::BadCsv {
            origin: self.text.origin.clone(),
            line,
            message: message.into(),
        }
    }

    fn no_column(&self, origin: String, reason: String) -> SourceError {
        SourceError::NoColumn {
            format: "CSV",
            origin,
            column: self.column.clone(),
            reason,
        }
    }

    /// Reads the next record into `buf` (a line end inside quotes is part of it); the number of
    /// its first line, or `None` at the end of the data.
    fn read_record(&mut self) -> Result<Option<u64>, SourceError> {
        let Some(first) = self.text.start_record() else {
            return Ok(None);
        };
        let mut quotes = QuoteState::default();
        loop {
            let start = self.text.buf.len();
            if !self.text.append_line()? {
                if self.text.buf.is_empty() {
                    return Ok(None);
                }
                break; // The data ends inside quotes, after a line end.
            }
            let end = LineEnd::ending(&self.text.buf);
            // `\.` alone on the record's first line ends the data, whatever the quote (COPY
            // looks for it before it follows the quotes: so even where the quote is `\`).
            let line = end.map(|end| &self.text.buf[..self.text.buf.len() - end.len()]);
            let ends_data = start == 0 && line == Some(&b"\\."[..]);
            if !ends_data {
                quotes.scan(&self.text.buf[start..], &self.syntax);
            }
            let Some(end) = end else {
                break; // The data ends without a line end.
            };
            if quotes.in_quotes {
                continue; // A line end in the data.
            }
            let (outside, written) = ("outside quotes", "in data COPY writes them in quotes");
            (self.text.take_line_end(end, ends_data, outside, written))
                .map_err(|message| self.bad(first, message))?;
            if ends_data {
                self.text.ended = true;
                return Ok(None);
            }
            break;
        }
        if quotes.in_quotes {
            return Err(self.bad(
                first,
                "a quoted field in this record is not closed before the end of the input (the \
                 rest of the input would be read as part of it)",
            ));
        }
        Ok(Some(first))
    }

    /// The fields of the record in `buf`, which starts on `line`, and the text of field
    /// `column` if it is quoted ([`CsvSyntax::split_fields`]).
    fn split(
        &self,
        line: u64,
        column: Option<usize>,
    ) -> Result<(Vec<Field>, Vec<u8>), SourceError> {
        (self.syntax.split_fields(&self.text.buf, column))
            .map_err(|message| self.bad(line, message))
    }

    /// Reads the next record into `buf` and finds the column in it: the record's first line,
    /// the column's field and its text if it is quoted; `None` at the end of the data.
    fn next_field(&mut self) -> Result<Option<(u64, Field, Vec<u8>)>, SourceError> {
        let Some(line) = self.read_record()? else {
            return Ok(None);
        };
        let (mut fields, text) = self.split(line, Some(self.text.index))?;
        let count = fields.len();
        (self.text.check_width(count, "records")).map_err(|message| self.bad(line, message))?;
        if self.text.index >= count {
            let origin = format!("{}:{line}", self.text.origin);
            return Err(self.no_column(origin, format!("the record has {count} fields")));
        }
        Ok(Some((line, fields.swap_remove(self.text.index), text)))
    }

    /// The next non-NULL, non-empty value, `None` at the end of the data.
    fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        while let Some((_, field, text)) = self.next_field()? {
            match self.take_value(&field, text) {
                Some(value) if !value.is_empty() => return Ok(Some(value)),
                _ => {} // NULL, or empty.
            }
        }
        Ok(None)
    }

    fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        let Some((line, field, text)) = self.next_field()? else {
            return Ok(None);
        };
        let mut record = Record::in_line(
            None,
            line,
            &self.text.buf,
            field.range.clone(),
            self.text.line_end(),
        );
        record.value = self.take_value(&field, text);
        Ok(Some(record))
    }

    /// The field's value ([`Field::value`]): copied out of a small record; an unquoted one of
    /// a large record is its buffer itself, taken ([`TextRecords::take_field`]). (A quoted
    /// field's `text` is already a buffer of its own.) Either way a large buffer is let go
    /// after ([`TextRecords::release_large_buf`]).
    fn take_value(&mut self, field: &Field, text: Vec<u8>) -> Option<Vec<u8>> {
        let value = if field.quoted || !self.text.is_large() {
            field.value(&self.text.buf, &self.syntax, text)
        } else if self.text.buf[field.range.clone()] == self.syntax.null[..] {
            None
        } else {
            Some(self.text.take_field(field.range.clone()))
        };
        self.text.release_large_buf();
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::lines::HAND_OVER_MIN;
    use std::io::Cursor;

    fn reader(input: &str, column: Column, has_header: bool) -> CsvReader<Cursor<Vec<u8>>> {
        let options = CsvOptions {
            has_header,
            ..CsvOptions::new(column)
        };
        CsvReader::new(
            Cursor::new(input.as_bytes().to_vec()),
            &options,
            "in".into(),
        )
        .unwrap()
    }

    /// Every record's value of column 0 of headerless `input` (`None`: NULL).
    fn values(input: &str) -> Result<Vec<Option<String>>, String> {
        values_in(input, CsvSyntax::default())
    }

    /// Every record's value of column 0 of headerless `input` in `syntax`.
    fn values_in(input: &str, syntax: CsvSyntax) -> Result<Vec<Option<String>>, String> {
        let options = CsvOptions {
            has_header: false,
            syntax,
            ..CsvOptions::new(Column::Index(0))
        };
        let input = Cursor::new(input.as_bytes().to_vec());
        let mut reader = CsvReader::new(input, &options, "in".into()).unwrap();
        let mut values = Vec::new();
        while let Some(record) = reader.next_record().map_err(|e| e.to_string())? {
            values.push(record.value.map(|v| String::from_utf8(v).unwrap()));
        }
        Ok(values)
    }

    #[test]
    fn a_large_record_is_let_go_once_its_value_is_out_and_a_small_ones_buffer_kept() {
        let large = "y".repeat(HAND_OVER_MIN);
        // Quoted (its text unquoted while splitting) and not; read as rows and as records.
        for (field, value) in [
            (format!("\"{large}\"\"\""), format!("{large}\"")),
            (large.clone(), large.clone()),
        ] {
            let input = format!("1,{field}\n2,small\n");
            for as_records in [false, true] {
                let mut reader = reader(&input, Column::Index(1), false);
                let next = |reader: &mut CsvReader<_>| match as_records {
                    false => reader.next_row().unwrap(),
                    true => reader
                        .next_record()
                        .unwrap()
                        .and_then(|record| record.value),
                };
                assert_eq!(next(&mut reader).unwrap(), value.as_bytes());
                assert_eq!(
                    reader.text.buf.capacity(),
                    0,
                    "the large record is still held"
                );
                assert_eq!(next(&mut reader).unwrap(), b"small");
                assert!(
                    reader.text.buf.capacity() > 0,
                    "the small record's buffer was let go"
                );
            }
        }
    }

    #[test]
    fn a_large_unquoted_value_is_made_in_its_records_buffer_and_a_small_one_copied() {
        let large = "y".repeat(HAND_OVER_MIN);
        let input = format!("1,{large},z\r\n2,small,z\r\n");
        let mut reader = reader(&input, Column::Index(1), false);
        for value in [&large[..], "small"] {
            let (_, field, text) = reader.next_field().unwrap().unwrap();
            let record_at = reader.text.buf.as_ptr();
            let read = reader.take_value(&field, text).unwrap();
            assert_eq!(read, value.as_bytes());
            let in_place = read.as_ptr() == record_at;
            assert_eq!(in_place, value == large, "made in place: {in_place}");
        }
        // Records keep the fields around the value, to be written back as they came.
        let csv_options = CsvOptions {
            has_header: false,
            ..CsvOptions::new(Column::Index(1))
        };
        let (layout, records) = read_records(input.as_bytes(), &csv_options);
        assert!(write_back(&layout, &records) == input);
    }

    #[test]
    fn fields_read_as_copy_from_reads_them() {
        let some = |s: &str| Some(s.to_string());
        for (input, expected) in [
            ("plain\n", vec![some("plain")]),
            ("\n\"\"\n", vec![None, some("")]),
            ("\"a,b\"\n", vec![some("a,b")]),
            ("\"say \"\"hi\"\"\"\n", vec![some("say \"hi\"")]),
            ("a\"b,c\"d\n", vec![some("ab,cd")]),
            ("x\"\"y\n", vec![some("xy")]),
            ("\"\"\"\"\n", vec![some("\"")]),
            (
                "\"two\nlines\"\r\nnext\r\n",
                vec![some("two\nlines"), some("next")],
            ),
            ("\"cr\r\nin quotes\"\n", vec![some("cr\r\nin quotes")]),
            // Lines end as the first does, here in \r alone; in quotes \r and \n are data.
            (
                "one\r\"x\ny\"\r\"cr\ralone\"\r\r\\.\rnot read\r",
                vec![some("one"), some("x\ny"), some("cr\ralone"), None],
            ),
            ("\"cr\r\"\nnext\n", vec![some("cr\r"), some("next")]),
            (
                "back\\slash\n\\.x\n",
                vec![some("back\\slash"), some("\\.x")],
            ),
            ("before\n\\.\nafter\n", vec![some("before")]),
            // Where lines end in \r, COPY reads the \r after `\.` and no further.
            ("one\r\\.\r\nnot read\n", vec![some("one")]),
            ("last\n\\.", vec![some("last"), some("\\.")]),
            ("\"\\.\"\n", vec![some("\\.")]),
            ("no line end", vec![some("no line end")]),
            ("\u{feff}marked\n", vec![some("\u{feff}marked")]),
            ("", vec![]),
        ] {
            assert_eq!(values(input).unwrap(), expected, "{input:?}");
        }
    }

    /// QUOTE ', ESCAPE \\: an escape other than the quote.
    fn single_quotes_and_backslashes() -> CsvSyntax {
        CsvSyntax {
            quote: b'\'',
            escape: b'\\',
            ..CsvSyntax::default()
        }
    }

    #[test]
    fn another_quote_and_escape_read_as_copy_from_reads_them() {
        let some = |s: &str| Some(s.to_string());
        for (input, expected) in [
            ("'a,b'\n", vec![some("a,b")]),
            ("'it\\'s'\n", vec![some("it's")]),
            ("'back\\\\slash'\n", vec![some("back\\slash")]),
            // An escape before another byte is data, and outside quotes is data.
            ("'back\\slash'\n", vec![some("back\\slash")]),
            ("a\\'b,'\n", vec![some("a\\b,")]),
            ("\"x\"\n", vec![some("\"x\"")]),
            ("''\n\n", vec![some(""), None]),
            // An escaped quote does not close the quotes: the record goes on past the line end.
            ("'a\\'\nb'\nnext\n", vec![some("a'\nb"), some("next")]),
            // An escaped escape escapes nothing: the quote after it closes.
            ("'end\\\\'\nnext\n", vec![some("end\\"), some("next")]),
            ("'\\\\\\''\n", vec![some("\\'")]),
            ("\\.\nnot read\n", vec![]),
        ] {
            let read = values_in(input, single_quotes_and_backslashes());
            assert_eq!(read.unwrap(), expected, "{input:?}");
        }
        // The quote as its own escape, as by default: doubled in quotes.
        let percent = CsvSyntax {
            quote: b'%',
            escape: b'%',
            ..CsvSyntax::default()
        };
        let read = values_in("%5%%, \"x\"%\n%%\n", percent).unwrap();
        assert_eq!(read, [some("5%, \"x\""), some("")]);
        // A backslash quote: `\.` alone on a record's first line still ends the data, as
        // COPY looks for it before the quotes.
        let backslash = CsvSyntax {
            quote: b'\\',
            escape: b'\\',
            ..CsvSyntax::default()
        };
        let read = values_in("\\a,b\\\n\\.\nnot read\n", backslash).unwrap();
        assert_eq!(read, [some("a,b")]);
    }

    /// The value of `record`, which must be one field (`None`: NULL), as
    /// [`CsvSyntax::split_fields`] reads it.
    fn one_value(record: &[u8], syntax: &CsvSyntax) -> Option<Vec<u8>> {
        let (fields, text) = syntax.split_fields(record, Some(0)).unwrap();
        assert_eq!(fields.len(), 1, "{}", record.escape_ascii());
        fields[0].value(record, syntax, text)
    }

    /// Every string of up to eight bytes made of the quote, the escape, a line feed and a plain
    /// byte, in the syntax `QUOTE '''', ESCAPE '\'`.
    fn short_strings() -> impl Iterator<Item = Vec<u8>> {
        const BYTES: [u8; 4] = [b'\'', b'\\', b'\n', b'x'];
        (0..=8u32).flat_map(|len| {
            (0..BYTES.len().pow(len)).map(move |mut n| {
                let mut bytes = Vec::new();
                for _ in 0..len {
                    bytes.push(BYTES[n % BYTES.len()]);
                    n /= BYTES.len();
                }
                bytes
            })
        })
    }

    /// `CopyReadLineText`'s CSV quote tracking, a byte at a time: whether `bytes` leave a
    /// quoted part open, and an escape in it waiting for its next byte (an escape that is the
    /// quote is no escape there).
    fn line_quotes_byte_by_byte(bytes: &[u8], syntax: &CsvSyntax) -> (bool, bool) {
        let escape = (syntax.escape != syntax.quote).then_some(syntax.escape);
        let (mut in_quote, mut last_was_escape) = (false, false);
        for &c in bytes {
            if in_quote && Some(c) == escape {
                last_was_escape = !last_was_escape;
            }
            if c == syntax.quote && !last_was_escape {
                in_quote = !in_quote;
            }
            if Some(c) != escape {
                last_was_escape = false;
            }
        }
        (in_quote, last_was_escape)
    }

    /// `CopyReadAttributesCSV`'s reading of one field, a byte at a time: its value, whether a
    /// quoted part is left open, and where the first one closes.
    fn field_byte_by_byte(raw: &[u8], syntax: &CsvSyntax) -> (Vec<u8>, bool, Option<usize>) {
        let (mut value, mut in_quote, mut at) = (Vec::new(), false, 0);
        let mut first_close = None;
        while let Some(&c) = raw.get(at) {
            at += 1;
            if !in_quote {
                match c == syntax.quote {
                    true => in_quote = true,
                    false => value.push(c),
                }
                continue;
            }
            let next = raw.get(at).copied();
            if c == syntax.escape && next.is_some_and(|n| n == syntax.escape || n == syntax.quote) {
                value.extend(next);
                at += 1;
            } else if c == syntax.quote {
                in_quote = false;
                first_close = first_close.or(Some(at - 1));
            } else {
                value.push(c);
            }
        }
        (value, in_quote, first_close)
    }

    #[test]
    fn quotes_and_escapes_are_followed_as_copy_follows_them_byte_by_byte() {
        // `'` for the quote, with `\` or itself as the escape.
        let own_escape = CsvSyntax {
            escape: b'\'',
            ..single_quotes_and_backslashes()
        };
        for syntax in [single_quotes_and_backslashes(), own_escape] {
            for bytes in short_strings() {
                let context = format!("{} in {syntax:?}", bytes.escape_ascii());
                // The line follower, given the bytes whole or in two parts anywhere (an escape
                // that is the quote is the quote: no state of its own).
                let (in_quotes, escaping) = line_quotes_byte_by_byte(&bytes, &syntax);
                let expected = (in_quotes, escaping && syntax.escape != syntax.quote);
                for split in 0..=bytes.len() {
                    let mut state = QuoteState::default();
                    state.scan(&bytes[..split], &syntax);
                    state.scan(&bytes[split..], &syntax);
                    let got = (state.in_quotes, state.escaping);
                    assert_eq!(got, expected, "{context} split at {split}");
                }
                // A field: where its first quoted part closes, and its value, alone or as the
                // record's one field.
                let (value, open, first_close) = field_byte_by_byte(&bytes, &syntax);
                if let Some(opening) = bytes.iter().position(|&b| b == syntax.quote) {
                    let close = syntax.closing_quote(&bytes, opening + 1);
                    assert_eq!(close, first_close, "{context}");
                }
                if !open {
                    assert_eq!(syntax.unquote(&bytes), value, "{context}");
                    // (The empty string unquoted is NULL.)
                    let read = one_value(&bytes, &syntax).unwrap_or_default();
                    assert_eq!(read, value, "{context}");
                    // And as the first or the second of two fields.
                    for (record, column) in [
                        ([&bytes[..], b",x"].concat(), 0),
                        ([&b"x,"[..], &bytes].concat(), 1),
                    ] {
                        let (fields, text) = syntax.split_fields(&record, Some(column)).unwrap();
                        assert_eq!(fields.len(), 2, "{context}");
                        let read = fields[column]
                            .value(&record, &syntax, text)
                            .unwrap_or_default();
                        assert_eq!(read, value, "{context} in field {column}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_short_run_is_appended_whole_and_nothing_past_it() {
        let bytes: Vec<u8> = (0..40).collect();
        for rest_len in 0..=bytes.len() {
            for len in 0..=rest_len {
                let mut value = b"before".to_vec();
                extend_short(&mut value, &bytes[..rest_len], len);
                assert_eq!(
                    value,
                    [&b"before"[..], &bytes[..len]].concat(),
                    "{len} of {rest_len}"
                );
            }
        }
    }

    #[test]
    fn another_quote_and_escape_write_as_copy_to_writes_them() {
        let syntax = single_quotes_and_backslashes();
        for (value, written) in [
            (&b"plain"[..], &b"plain"[..]),
            (b"it's", b"'it\\'s'"),
            // An escape alone does not quote a value; in quotes it is escaped.
            (b"back\\slash", b"back\\slash"),
            (b"a,b\\c", b"'a,b\\\\c'"),
            (b"say \"hi\"", b"say \"hi\""),
            (b"", b"''"),
        ] {
            let mut out = Vec::new();
            syntax.write_field(value, false, &mut out);
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(written)
            );
            assert_eq!(one_value(&out, &syntax).unwrap(), value);
        }
    }

    #[test]
    fn force_quote_quotes_every_value() {
        let syntax = CsvSyntax {
            force_quote: true,
            ..CsvSyntax::default()
        };
        for (value, written) in [
            (&b"plain"[..], &b"\"plain\""[..]),
            (b"", b"\"\""),
            (b"say \"hi\"", b"\"say \"\"hi\"\"\""),
        ] {
            let mut out = Vec::new();
            syntax.write_field(value, false, &mut out);
            assert_eq!(out, written, "{:?}", String::from_utf8_lossy(value));
        }
        // A bytea's hex text too, as COPY ... TO (FORMAT csv, FORCE_QUOTE *) writes it.
        let options = CsvOptions {
            has_header: false,
            syntax,
            ..CsvOptions::new(Column::Index(1))
        };
        let (layout, records) = read_records(b"1,x,\"y\"\n", &options);
        let mut out = Vec::new();
        (layout.write_bytea_record(&mut out, &records[0], Some(b"\x01"))).unwrap();
        assert_eq!(out, b"1,\"\\x01\",\"y\"\n");
        // NULL stays the bare NULL string.
        out.clear();
        (layout.write_bytea_record(&mut out, &records[0], None)).unwrap();
        assert_eq!(out, b"1,,\"y\"\n");
    }

    #[test]
    fn the_broken_end_leaves_its_quote_open_whatever_the_quote() {
        assert_eq!(CsvSyntax::default().broken_end(), CSV_BROKEN_END);
        // `e` and `t` are in the message: escaped, they close nothing.
        for (quote, escape) in [(b'e', b'e'), (b'e', b't'), (b'\'', b'\\')] {
            let syntax = CsvSyntax {
                quote,
                escape,
                ..CsvSyntax::default()
            };
            let mut input = b"x\n".to_vec();
            input.extend(syntax.broken_end());
            let input = String::from_utf8(input).unwrap();
            let error = values_in(&input, syntax).unwrap_err();
            assert!(
                error.starts_with("in:2: bad CSV: a quoted field in this record is not closed"),
                "{input:?}: {error}"
            );
        }
    }

    #[test]
    fn bad_records_name_their_line() {
        for (input, message) in [
            (
                "a\n\"open\nb\n",
                "in:2: bad CSV: a quoted field in this record is not closed",
            ),
            (
                "a\n\"open\n",
                "in:2: bad CSV: a quoted field in this record is not closed",
            ),
            (
                "a\nb\rc\n",
                "in:2: bad CSV: a carriage return outside quotes, where lines end in \\n \
                 (COPY ... FROM takes the first line's end for every line; in data COPY writes \
                 them in quotes)",
            ),
            (
                "a\n\"q\"\r\n",
                "in:2: bad CSV: a carriage return outside quotes, where lines end in \\n",
            ),
            (
                "a\r\n\"q\nr\"\n",
                "in:2: bad CSV: a line feed alone outside quotes, where lines end in \\r\\n",
            ),
            (
                "a\rb\n",
                "in:2: bad CSV: a line feed outside quotes, where lines end in \\r",
            ),
            (
                "a\nb,c\n",
                "in:2: bad CSV: 2 fields, where the records before have 1",
            ),
            // A carriage return in quotes is no line in input whose lines end in \n (nor a
            // line feed in quotes where they end in \r).
            (
                "\"x\ry\"\n\"p\rq\"\nb,c\n",
                "in:3: bad CSV: 2 fields, where the records before have 1",
            ),
            (
                "\"x\ny\"\r\"p\nq\"\rb,c\r",
                "in:3: bad CSV: 2 fields, where the records before have 1",
            ),
        ] {
            let error = values(input).unwrap_err();
            assert!(error.starts_with(message), "{input:?}: {error}");
        }
    }

    #[test]
    fn a_column_is_found_by_name_or_index() {
        let input = "id,\"the body\"\n1,one\n2,\n";
        // A byte order mark before the header is not part of the first name.
        let marked = format!("\u{feff}{input}");
        let mut by_first_name = reader(&marked, Column::Name("id".into()), true);
        assert_eq!(by_first_name.next_row().unwrap().unwrap(), b"1");
        let mut by_name = reader(input, Column::Name("the body".into()), true);
        assert_eq!(
            by_name.text.header.as_deref(),
            Some(&b"id,\"the body\""[..])
        );
        assert_eq!(by_name.next_row().unwrap().unwrap(), b"one");
        assert_eq!(by_name.next_row().unwrap(), None); // The NULL is no row.
        let options = CsvOptions::new(Column::Name("body".into()));
        let error = CsvReader::new(
            Cursor::new(input.as_bytes().to_vec()),
            &options,
            "in".into(),
        )
        .err()
        .unwrap();
        assert_eq!(
            error.to_string(),
            "in: no CSV column \"body\": the header has id, the body"
        );
        let mut by_index = reader(input, Column::Index(5), true);
        let error = by_index.next_row().unwrap_err().to_string();
        assert_eq!(error, "in:2: no CSV column #5: the record has 2 fields");
    }

    /// The layout and the records of `input`, read with `options`.
    fn read_records(input: &[u8], options: &CsvOptions) -> (Layout, Vec<Record>) {
        let (layout, records) = records(Cursor::new(input.to_vec()), options, "in".into()).unwrap();
        (layout, records.collect::<Result<_, _>>().unwrap())
    }

    /// `records` written back by `layout`, each with its own value.
    fn write_back(layout: &Layout, records: &[Record]) -> String {
        let mut out = layout.write_start_bytes();
        for record in records {
            layout
                .write_record(&mut out, record, record.value.as_deref())
                .unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn records_split_around_the_column_and_write_back_as_they_came() {
        let input = "id,body,note\n1,\"a, b\",x\n2,,\"\"\n3,\"\",\"y\"\"z\"\n";
        let options = CsvOptions::new(Column::Name("body".into()));
        let (layout, records) = read_records(input.as_bytes(), &options);
        let values: Vec<_> = records.iter().map(|r| r.value.clone()).collect();
        assert_eq!(values, [Some(b"a, b".to_vec()), None, Some(Vec::new())]);
        assert_eq!(write_back(&layout, &records), input);
    }

    #[test]
    fn a_bytea_is_its_hex_text_quoted_where_the_delimiter_is_in_it() {
        // `\x01ab` holds `a`, `x`, `\` and `1`, not `,`, `e` or `9`: quoted only where it holds
        // the delimiter, as COPY ... TO quotes it.
        for (delimiter, quoted) in [
            (b',', false),
            (b'a', true),
            (b'x', true),
            (b'\\', true),
            (b'1', true),
            (b'e', false),
            (b'9', false),
        ] {
            let options = CsvOptions {
                has_header: false,
                syntax: CsvSyntax {
                    delimiter,
                    ..CsvSyntax::default()
                },
                ..CsvOptions::new(Column::Index(1))
            };
            let input = [&b"0"[..], &[delimiter], b"zz", &[delimiter], b"q\n"].concat();
            let (layout, first) = read_records(&input, &options);
            let mut out = Vec::new();
            layout
                .write_bytea_record(&mut out, &first[0], Some(b"\x01\xab"))
                .unwrap();
            let field: &[u8] = if quoted { b"\"\\x01ab\"" } else { b"\\x01ab" };
            let expected = [&b"0"[..], &[delimiter], field, &[delimiter], b"q\n"].concat();
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&expected)
            );
            let (_, again) = read_records(&out, &options);
            assert_eq!(
                again[0].value.as_deref(),
                Some(&b"\\x01ab"[..]),
                "{}",
                String::from_utf8_lossy(&out)
            );
        }
    }

    #[test]
    fn a_bytea_record_around_its_hex_digits_is_the_record_written_where_they_stand_bare() {
        let value = b"\x01\xab\xff";
        let digits = b"01abff";
        let csv = |delimiter, force_quote| {
            let syntax = CsvSyntax {
                delimiter,
                force_quote,
                ..CsvSyntax::default()
            };
            let options = CsvOptions {
                has_header: false,
                syntax,
                ..CsvOptions::new(Column::Index(1))
            };
            let input = [&b"0"[..], &[delimiter], b"zz", &[delimiter], b"q\r\n"].concat();
            read_records(&input, &options)
        };
        let text = {
            let options = crate::source::copy::CopyOptions::column(Some(Column::Index(1)));
            let input = Cursor::new(b"0\tzz\tq\n".to_vec());
            let (layout, records) =
                crate::source::copy::records(input, &options, "in".into()).unwrap();
            (layout, records.collect::<Result<Vec<_>, _>>().unwrap())
        };
        // Bare digits: text, CSV whose delimiter is no hex byte. Else (quoted where a hex
        // digit, `x` or `\` is the delimiter, or always) not written around them.
        for ((layout, records), bare) in [
            (text, true),
            (csv(b',', false), true),
            (csv(b'|', false), true),
            (csv(b'a', false), false),
            (csv(b'x', false), false),
            (csv(b'\\', false), false),
            (csv(b'9', false), false),
            (csv(b',', true), false),
        ] {
            let mut written = Vec::new();
            let record = &records[0];
            layout
                .write_bytea_record(&mut written, record, Some(value))
                .unwrap();
            let mut around = Vec::new();
            match layout.write_bytea_record_around_hex(&mut around, record, value.len()) {
                Some(after) => {
                    assert!(bare, "{layout:?}");
                    around.extend_from_slice(digits);
                    around.extend_from_slice(&after);
                    assert_eq!(
                        String::from_utf8_lossy(&around),
                        String::from_utf8_lossy(&written)
                    );
                }
                None => assert!(!bare && around.is_empty(), "{layout:?}"),
            }
        }
    }

    #[test]
    fn a_byte_order_mark_in_the_data_is_data_and_written_back() {
        // A fuzz find (row_sources): the mark was taken off the input's first record, so a
        // record written back from it read back with another first field.
        let input = "\u{feff}\u{feff}\tx\ty\n";
        let options = CsvOptions {
            has_header: false,
            syntax: CsvSyntax {
                delimiter: b'\t',
                ..CsvSyntax::default()
            },
            ..CsvOptions::new(Column::Index(1))
        };
        let (layout, records) = read_records(input.as_bytes(), &options);
        assert_eq!(write_back(&layout, &records), input);
    }

    #[test]
    fn fields_are_written_as_copy_to_writes_them() {
        let syntax = CsvSyntax::default();
        for (value, alone, written) in [
            (&b"plain"[..], false, &b"plain"[..]),
            (b"", false, b"\"\""),
            (b"NULL", false, b"NULL"),
            (b"a,b", false, b"\"a,b\""),
            (b"say \"hi\"", false, b"\"say \"\"hi\"\"\""),
            (b"line\nfeed", false, b"\"line\nfeed\""),
            (b"carriage\rreturn", false, b"\"carriage\rreturn\""),
            (b"\\.", true, b"\"\\.\""),
            (b"\\.", false, b"\\."),
            (b"a;b", false, b"a;b"),
        ] {
            let mut out = Vec::new();
            syntax.write_field(value, alone, &mut out);
            assert_eq!(out, written, "{:?}", String::from_utf8_lossy(value));
            // And it reads back as the value.
            assert_eq!(one_value(&out, &syntax).unwrap(), value);
        }
        // With another NULL string, a value that is the string is quoted, the empty one not.
        let syntax = CsvSyntax {
            null: b"NULL".to_vec(),
            ..CsvSyntax::default()
        };
        for (value, written) in [
            (&b"NULL"[..], &b"\"NULL\""[..]),
            (b"", b""),
            (b"NULLs", b"NULLs"),
        ] {
            let mut out = Vec::new();
            syntax.write_field(value, false, &mut out);
            assert_eq!(out, written, "{:?}", String::from_utf8_lossy(value));
            assert_eq!(one_value(&out, &syntax).unwrap(), value);
        }
    }

    #[test]
    fn a_null_string_reads_as_null_unquoted_only() {
        let options = CsvOptions {
            has_header: false,
            syntax: CsvSyntax {
                null: b"\\N".to_vec(),
                ..CsvSyntax::default()
            },
            ..CsvOptions::new(Column::Index(1))
        };
        let input = b"1,\\N,a\n2,\"\\N\",b\n3,,c\n4,\\Nx,\\N\n";
        let (layout, records) = read_records(input, &options);
        let values: Vec<Option<&[u8]>> = records.iter().map(|r| r.value.as_deref()).collect();
        assert_eq!(values, [None, Some(&b"\\N"[..]), Some(b""), Some(b"\\Nx")]);
        // Written back as they came: NULL as the string, the value `\N` quoted, `` bare.
        assert_eq!(write_back(&layout, &records).as_bytes(), input);
    }

    #[test]
    fn delimiters_copy_refuses_are_refused() {
        for (delimiter, null, message) in [
            (b'"', "", "COPY delimiter and quote must be different"),
            (
                b'\n',
                "",
                "COPY delimiter cannot be newline or carriage return",
            ),
            (
                0xe9,
                "",
                "COPY delimiter must be a single one-byte character",
            ),
            (
                b',',
                "a\rb",
                "COPY null representation cannot use newline or carriage return",
            ),
            (
                b'"',
                "\n",
                "COPY null representation cannot use newline or carriage return",
            ),
            (
                b',',
                "a,b",
                "COPY delimiter must not appear in the NULL specification",
            ),
            (
                b',',
                "\"",
                "CSV quote character must not appear in the NULL specification",
            ),
            // Where several apply, the first in PostgreSQL 15's order (checked with psql).
            (b'"', "a\"", "COPY delimiter and quote must be different"),
            (
                b',',
                "a,\"",
                "COPY delimiter must not appear in the NULL specification",
            ),
            (
                b'\n',
                "\n",
                "COPY delimiter cannot be newline or carriage return",
            ),
        ] {
            let syntax = CsvSyntax {
                delimiter,
                null: null.as_bytes().to_vec(),
                ..CsvSyntax::default()
            };
            assert_eq!(syntax.check().unwrap_err(), message);
        }
        let syntax = CsvSyntax {
            delimiter: b'x',
            ..CsvSyntax::default()
        };
        assert_eq!(syntax.check(), Ok(()));
        // A quote and an escape, in the same order.
        for (delimiter, quote, escape, null, message) in [
            (
                b',',
                0xe9,
                b'"',
                "",
                "COPY quote must be a single one-byte character",
            ),
            (
                b',',
                0,
                b'"',
                "",
                "COPY quote must be a single one-byte character",
            ),
            (
                b';',
                b';',
                b'"',
                "",
                "COPY delimiter and quote must be different",
            ),
            (
                b';',
                b';',
                0xe9,
                "",
                "COPY delimiter and quote must be different",
            ),
            (
                b',',
                b'"',
                0xe9,
                "",
                "COPY escape must be a single one-byte character",
            ),
            (
                b',',
                b'\'',
                0xe9,
                "a,'",
                "COPY escape must be a single one-byte character",
            ),
            (
                b',',
                b'\'',
                b'\\',
                "it's",
                "CSV quote character must not appear in the NULL specification",
            ),
            (
                b',',
                b'\r',
                b'"',
                "",
                "pgdict does not read CSV whose quote or escape is a line end",
            ),
        ] {
            let syntax = CsvSyntax {
                delimiter,
                quote,
                escape,
                null: null.as_bytes().to_vec(),
                ..CsvSyntax::default()
            };
            assert_eq!(syntax.check().unwrap_err(), message);
        }
        // The NULL string may hold the quote of COPY's default when another is given, and the
        // escape.
        let syntax = CsvSyntax {
            null: "\"\\N".into(),
            ..single_quotes_and_backslashes()
        };
        assert_eq!(syntax.check(), Ok(()));
    }

    /// The bytes values and options are made of in the property test: every byte CSV treats
    /// specially, and a few plain ones, so that values often hold the options' bytes.
    const ALPHABET: &[u8] = b"a,;'\"\\.%xN \t\n\r";

    proptest::proptest! {
        // In any syntax COPY takes, records of any values written as COPY ... TO writes them
        // read back as the same values, NULLs told from empty strings; and the broken end
        // after them makes the reader fail. But for a record whose first line COPY ... TO
        // writes as `\.`, which COPY ... FROM (and pgdict) reads as the end of the data: a
        // quoted value `.` and a line end under QUOTE '\', or an empty value and a NULL under
        // DELIMITER '\', NULL '.' (both checked on the server).
        #[test]
        fn any_syntax_reads_back_what_it_writes(
            // Delimiter, quote and escape: not the line ends at the alphabet's end.
            options in proptest::collection::vec(0..ALPHABET.len() - 2, 3),
            null in proptest::collection::vec(0..ALPHABET.len(), 0..3),
            force_quote: bool,
            fields in 1usize..=2,
            rows in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::of(proptest::collection::vec(0..ALPHABET.len(), 0..8)),
                    2,
                ),
                0..6,
            ),
        ) {
            // The quote is not the delimiter (COPY refuses that): the next byte if it would be.
            let (delimiter, escape) = (ALPHABET[options[0]], ALPHABET[options[2]]);
            let mut quote = ALPHABET[options[1]];
            if quote == delimiter {
                quote = ALPHABET[(options[1] + 1) % (ALPHABET.len() - 2)];
            }
            let line_end = |b: u8| b == b'\n' || b == b'\r';
            let null: Vec<u8> = null
                .iter()
                .map(|&at| ALPHABET[at])
                .filter(|&b| b != delimiter && b != quote && !line_end(b))
                .collect();
            let syntax = CsvSyntax { delimiter, quote, escape, null, force_quote };
            proptest::prop_assert_eq!(syntax.check(), Ok(()));
            let rows: Vec<Vec<Option<Vec<u8>>>> = rows
                .iter()
                .map(|row| {
                    let value = |v: &Vec<usize>| v.iter().map(|&at| ALPHABET[at]).collect();
                    row[..fields].iter().map(|field| field.as_ref().map(value)).collect()
                })
                .collect();
            let mut input = Vec::new();
            for row in &rows {
                let start = input.len();
                for (at, field) in row.iter().enumerate() {
                    if at > 0 {
                        input.push(delimiter);
                    }
                    match field {
                        Some(value) => syntax.write_field(value, fields == 1, &mut input),
                        None => input.extend_from_slice(&syntax.null),
                    }
                }
                input.push(b'\n');
                let first_line = input[start..].split(|&b| line_end(b)).next();
                proptest::prop_assume!(first_line != Some(&b"\\."[..]));
            }
            for column in 0..fields {
                let options = CsvOptions {
                    has_header: false,
                    syntax: syntax.clone(),
                    ..CsvOptions::new(Column::Index(column))
                };
                let (_, read) = read_records(&input, &options);
                let read: Vec<_> = read.into_iter().map(|record| record.value).collect();
                let written: Vec<_> = rows.iter().map(|row| row[column].clone()).collect();
                proptest::prop_assert_eq!(read, written, "{:?}", String::from_utf8_lossy(&input));
                let mut broken = input.clone();
                broken.extend(syntax.broken_end());
                let (_, records) =
                    records(Cursor::new(broken), &options, "in".into()).unwrap();
                let last = records.last();
                proptest::prop_assert!(matches!(last, Some(Err(_))), "{:?}", last);
            }
        }
    }
}
