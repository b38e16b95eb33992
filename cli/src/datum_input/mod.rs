//! Reading a datum input (`decompress`, `inspect`) one datum at a time, in one of five
//! formats, or from a column of COPY data or CSV (`--copy-column`, `--csv-column`: what
//! `compress --keep-columns` writes, a bytea column copied out):
//!
//! ```text
//!   datums    u32 little-endian length, then the datum; again   (what `pgdict compress` writes)
//!   hex       lines of `\x09616263` as psql prints a bytea (`\\x09616263` as COPY's text
//!             format writes it), or bytea arrays `{"\\x0b61",NULL}`
//!   escape    lines of `\013abc` as psql prints a bytea under `bytea_output = escape`
//!   copy      PostgreSQL's binary COPY of one bytea column (`pgdict_trainer::source::copy`)
//!   varlena   datums back to back, each as long as its own header says
//! ```
//!
//! The input streams through: this reader holds one datum at a time (`decompress` then holds a few
//! batches of them, see `crate::in_order`). When neither `--format` nor the file name (`.datums`)
//! says the format, it is told from the input's start, at most [`TEXT_WINDOW`] bytes of it
//! ([`tell`]): binary COPY if it starts with COPY's signature; escape text if its first four lines
//! that are not empty (all of them, if it is all text with fewer) are text and each decode to one
//! datum, as long as its own header says, whatever follows them (escape text may hold `\\x`: a
//! backslash, then `x`); hex if its first line holding `\x` and the lines before it are text; a
//! datums file if each of its first records holds a datum exactly as long as the record, as the
//! datum's own header says (what `pgdict compress` writes); otherwise a datums file, then varlenas
//! back to back, whichever reads to the end. Standard input (or a pipe) is read only about as far
//! as telling needs (while its bytes keep coming it is told again once they have doubled, or after
//! a pause: `Source::tell_paced`), and then streams; it cannot be read twice, so only in that last
//! case is it held whole, up to [`HELD_LIMIT`] (give `--format` to stream it). A regular file is
//! read through once per format tried, keeping one datum at a time.
//!
//! Here: the reader ([`Datums`]) and the input it reads ([`Source`]); the text formats in
//! [`hex`] and [`escape`], varlenas in [`varlena`], telling the format in
//! [`detect`](mod@detect) (datums files and binary COPY are read by `pgdict_trainer::source`).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use pgdict::datum;
use pgdict_trainer::source::copy::Place;
use pgdict_trainer::source::{self, copy, datums_file, SourceError, SourceSpec};

use crate::fail::{usage_error, user_error, Hint, HintExt};
use crate::in_order::{ItemReader, HAND_OVER_MIN};
use crate::text::counted;
use crate::{DatumFormatArg, DatumInput};

mod detect;
mod escape;
mod hex;
mod varlena;

use detect::{detect, is_control};
pub use detect::{tell, Told};
use escape::EscapeLines;
use hex::{hex_literal, HexLines};
use varlena::Varlenas;

/// How much of the start of an input is looked at to tell hex text.
pub const TEXT_WINDOW: usize = 1 << 20;

/// The most of a stream held whole to tell varlenas from a datums file: PostgreSQL's limit for
/// one value, rounded up.
const HELD_LIMIT: u64 = 1 << 30;

/// Where a datum was found in its input, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    /// The 1-based line of a hex input.
    Line(usize),
    /// The 0-based byte offset of a datums file record or a varlena.
    Byte(u64),
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datum {
    pub bytes: Vec<u8>,
    pub position: Position,
}

/// The datums of a datum input, in order: an iterator that reads as it goes. Its errors name
/// the input and say which format was expected; an input without a single datum is an error
/// too, the iterator's last item.
pub struct Datums {
    /// The input, for messages: its path, or "standard input".
    pub origin: String,
    /// The format the datums are read in (given, or detected).
    pub format: DatumFormatArg,
    /// The input's size in bytes, if known (a file's; not standard input's).
    pub input_len: Option<u64>,
    /// How the datums are read: the format's name, or the column read.
    pub what: String,
    reader: Reader,
    /// Whether a datum was read: an input without one is an error.
    any_read: bool,
    done: bool,
}

/// What reads the datums of a [`Datums`].
enum Reader {
    /// A datum input in one of the five formats.
    Parsed(Parser<Input>),
    /// A column of COPY data or CSV ([`Datums::open_column`]).
    Column {
        layout: copy::Layout,
        records: source::Rows<copy::Record>,
    },
}

impl Datums {
    /// Opens the input and tells its format: `--format`, else from the file name, else from
    /// its bytes (see the module's documentation).
    pub fn open(input: &DatumInput) -> anyhow::Result<Datums> {
        if input.columns.given().is_some() {
            return Datums::open_column(input);
        }
        let path = &input.input;
        let (origin, source) = Source::open(path)?;
        let by_name = (source::extension(path).as_deref() == Some("datums"))
            .then_some(DatumFormatArg::Datums);
        Datums::from_source(origin, source, input.format.or(by_name))
    }

    /// Reads `rest` as [`Datums::open`] reads standard input: the format told as the bytes
    /// come, unless `format` is given. What the fuzz target reads through, handing the bytes
    /// out in reads of its choosing (a pipe's come as its writer wrote them); `origin` names
    /// the input in messages.
    pub fn open_stream(
        origin: &str,
        rest: impl StreamRead + 'static,
        format: Option<DatumFormatArg>,
    ) -> anyhow::Result<Datums> {
        Datums::from_source(origin.to_string(), Source::stream(rest), format)
    }

    /// The datums of `source`, in `format`, or told from its bytes.
    fn from_source(
        origin: String,
        source: Source,
        format: Option<DatumFormatArg>,
    ) -> anyhow::Result<Datums> {
        let (format, source) = match format {
            Some(format) => (format, source),
            None => detect(source, &origin)?,
        };
        let input_len = source.len();
        let reader = source
            .into_reader()
            .with_context(|| format!("cannot read {origin}"))?;
        Ok(Datums {
            reader: Reader::Parsed(Parser::new(format, reader, &origin)),
            origin,
            format,
            input_len,
            what: format_name(format).into(),
            any_read: false,
            done: false,
        })
    }

    /// A column of COPY data or CSV, as the column flags say (what `compress --keep-columns`
    /// writes): each non-NULL value a datum, a bytea's text in the text format and CSV (hex or
    /// escape format: [`take_record_datum`]), its bytes in binary COPY.
    fn open_column(input: &DatumInput) -> anyhow::Result<Datums> {
        let format = (input.columns.format(None))
            .map_err(|conflict| usage_error(conflict.message, conflict.hint))?
            .expect("a column flag says CSV or COPY data");
        let spec = SourceSpec::from_arg(&input.input, Some(format.clone()));
        let what = spec.describe();
        let (layout, records) =
            source::open_records(&spec).with_context(|| format!("cannot read {what}"))?;
        let origin = spec.input_name();
        let binary = layout.is_binary();
        Ok(Datums {
            origin,
            // How a datum's place is said: a line of text, a byte of binary COPY.
            format: if binary {
                DatumFormatArg::Copy
            } else {
                DatumFormatArg::Hex
            },
            input_len: records.input_len(),
            what: format.describe(),
            reader: Reader::Column { layout, records },
            any_read: false,
            done: false,
        })
    }

    /// What reads the input again, as it was read (a regular file can be).
    pub fn again(&self, input: &DatumInput) -> Option<DatumInput> {
        self.is_regular_file().then(|| DatumInput {
            input: input.input.clone(),
            format: input.columns.given().is_none().then_some(self.format),
            columns: input.columns.clone(),
        })
    }

    /// Whether the input is a regular file, which [`Datums::open`] can read again (with the
    /// format given: `--format` or [`Datums::format`]).
    pub fn is_regular_file(&self) -> bool {
        // Only a regular file's size is known.
        self.input_len.is_some()
    }

    /// How many bytes of the input the datums read so far span.
    pub fn bytes_read(&self) -> u64 {
        match &self.reader {
            Reader::Parsed(parser) => parser.bytes_read(),
            Reader::Column { records, .. } => records.input_read(),
        }
    }

    /// The next datum, `None` at the end of the input.
    fn next_datum(&mut self) -> anyhow::Result<Option<Datum>> {
        let (layout, records) = match &mut self.reader {
            Reader::Parsed(parser) => return parser.next_datum(),
            Reader::Column { layout, records } => (layout, records),
        };
        for record in records {
            let mut record = record?;
            if let Some(bytes) = take_record_datum(layout, &mut record, &self.origin)? {
                let position = match record.place {
                    Place::Line(line) => Position::Line(line as usize),
                    Place::Tuple { byte, .. } => Position::Byte(byte),
                };
                return Ok(Some(Datum { bytes, position }));
            }
        }
        Ok(None)
    }
}

/// The datum a record's column holds, taken out of it (its value is left `None`, and a bytea's
/// text is let go once read): its value in the binary format; in the text format and CSV the
/// bytes of its text as PostgreSQL's `byteain` reads a bytea (hex, `\x...`, or escape format,
/// what COPY writes under `bytea_output = escape`: [`bytea_datum`]); `None` for NULL. `origin`
/// names the input in the error for a value that is neither.
pub fn take_record_datum(
    layout: &copy::Layout,
    record: &mut copy::Record,
    origin: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(value) = record.value.take() else {
        return Ok(None);
    };
    if layout.is_binary() {
        return Ok(Some(value));
    }
    let datum = take_bytea_datum(value).with_context(|| {
        let written = match layout {
            copy::Layout::Csv { .. } => "in CSV (\\x... or escape format)",
            _ => "in COPY's text format (\\\\x... or escape format)",
        };
        format!(
            "{} of {origin} does not hold a datum as a bytea {written}",
            record.place
        )
    })?;
    Ok(Some(datum))
}

/// A datum's size in a batch (`in_order`): what it decodes to, as its header says, or its own
/// length where that is more (or no header reads). A batch closes at a size and its decoded
/// rows are held whole: sized by their datums alone, 4096 zstd datums of 56 bytes, each 1 MB
/// of one repeated byte, held 4 GB.
pub fn decoded_size(datum: &[u8]) -> usize {
    let raw_len = datum::read_header(datum).map_or(0, |header| header.raw_len);
    datum.len().max(raw_len)
}

/// [`decoded_size`] for a bytea's text that holds a datum, as COPY's text format and CSV write
/// it (its header read from the first hex digits of `\x...`; escape format, which is rare,
/// counts as its length).
pub fn decoded_size_of_text(value: &[u8]) -> usize {
    let Some(digits) = value.strip_prefix(b"\\x") else {
        return value.len();
    };
    let header_digits = &digits[..digits.len().min(2 * datum::MAX_HEADER_LEN) & !1];
    let header = const_hex::decode(header_digits).unwrap_or_default();
    let raw_len = datum::read_header(&header).map_or(0, |header| header.raw_len);
    value.len().max(raw_len)
}

/// [`bytea_datum`], taking the text: a large hex text (the datum of a large row) is decoded in
/// its own buffer, not into a second one beside it.
fn take_bytea_datum(mut text: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    if text.len() < HAND_OVER_MIN || !text.starts_with(b"\\x") {
        return bytea_datum(&text);
    }
    hex::hex_literal_in_place(&mut text)?;
    Ok(text)
}

/// The datum a bytea's text holds: hex (`\x...`), or escape format (`\013abc`, as
/// [`escape::escape_literal`] reads it) where it decodes to a datum exactly as long as its own
/// header says. Every text without a backslash is a bytea in escape format, so that check is
/// what keeps a header line or a column of text from being read as datums.
fn bytea_datum(text: &[u8]) -> anyhow::Result<Vec<u8>> {
    if text.starts_with(b"\\x") {
        return hex_literal(std::str::from_utf8(text)?);
    }
    let bytes = escape::escape_literal(text)
        .context("not a bytea in hex (\\x...), nor in escape format")?;
    let why = match datum::read_header(&bytes) {
        Ok(header) if header.total_len == bytes.len() => return Ok(bytes),
        Ok(header) => format!(
            "its header says {}",
            counted(header.total_len as u64, "byte")
        ),
        Err(e) => e.to_string(),
    };
    anyhow::bail!(
        "not a bytea in hex (\\x...), and in escape format it is {}, not a datum ({why}): {}",
        counted(bytes.len() as u64, "byte"),
        hex::shorten(&crate::text::printable(text), 40)
    )
}

impl ItemReader for Datums {
    type Item = Datum;

    fn next_item(&mut self) -> Option<anyhow::Result<(Datum, usize)>> {
        let datum = self.next()?;
        Some(datum.map(|datum| {
            let size = decoded_size(&datum.bytes);
            (datum, size)
        }))
    }

    /// Whether reading the next datum may wait for bytes that have not arrived: the input is
    /// standard input or a pipe, nothing of it is buffered, and nothing is ready to be read.
    fn may_wait(&self) -> bool {
        match &self.reader {
            Reader::Parsed(parser) => parser.input().may_wait(),
            Reader::Column { records, .. } => records.may_wait(),
        }
    }
}

/// What a stream's bytes are read from: standard input or a pipe (a [`File`]), or a reader the
/// fuzz target makes ([`Datums::open_stream`]).
pub trait StreamRead: Read + Send {
    /// Whether a read would return at once, with bytes or at the end, or will within `wait`
    /// (for [`ItemReader::may_wait`], which does not wait, and for telling the format, which
    /// waits a little before it tells what has come).
    fn ready_within(&self, wait: Duration) -> bool;
}

impl StreamRead for File {
    fn ready_within(&self, wait: Duration) -> bool {
        source::ready_within(self, wait)
    }
}

/// The bytes of a stream not yet read.
type Rest = Box<dyn StreamRead>;

/// The bytes of a datum input.
enum Source {
    /// A regular file: read from its start as often as needed.
    File(File),
    /// Standard input, or a pipe: read once. `head` holds the bytes already read from `rest`
    /// to tell the format, which come first.
    Stream { head: Vec<u8>, rest: Rest },
    /// Standard input, or a pipe, held whole to be read more than once.
    Memory(Vec<u8>),
}

impl Source {
    /// Opens `path` (`-` is standard input); also returns its name for messages.
    fn open(path: &Path) -> anyhow::Result<(String, Source)> {
        if path.as_os_str() == "-" {
            crate::row_input::note_terminal_stdin("datums");
            // Its file descriptor, to ask whether bytes are ready (`Input::may_wait`).
            let stdin = io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .context("cannot read standard input")?;
            return Ok(("standard input".into(), Source::stream(File::from(stdin))));
        }
        let origin = path.display().to_string();
        let open = || -> io::Result<Source> {
            let file = File::open(path)?;
            Ok(if file.metadata()?.is_file() {
                Source::File(file)
            } else {
                Source::stream(file)
            })
        };
        let source = open().with_context(|| format!("cannot read {origin}"))?;
        Ok((origin, source))
    }

    /// A stream not read from yet.
    fn stream(rest: impl StreamRead + 'static) -> Source {
        Source::Stream {
            head: Vec::new(),
            rest: Box::new(rest),
        }
    }

    /// The source, readable more than once: a stream is read into memory, up to `limit` bytes
    /// ([`HELD_LIMIT`]); a longer one is refused rather than held (`/dev/zero` would take all
    /// memory), with a hint to give its format, which streams it.
    fn rereadable(self, origin: &str, limit: u64) -> anyhow::Result<Source> {
        match self {
            Source::Stream { head, rest } => {
                let mut bytes = head;
                let room = limit.saturating_sub(bytes.len() as u64);
                // One byte past the limit tells a stream that is over it.
                rest.take(room.saturating_add(1))
                    .read_to_end(&mut bytes)
                    .with_context(|| format!("cannot read {origin}"))?;
                if bytes.len() as u64 > limit {
                    return Err(user_error(
                        format!(
                            "cannot tell the format of {origin}: its start is not hex text, nor \
                             plainly a datums file, and telling a datums file from varlenas \
                             would hold over {} of it in memory",
                            counted(limit, "byte")
                        ),
                        "say which it is with --format datums|varlena; then it is read as it \
                         comes",
                    ));
                }
                Ok(Source::Memory(bytes))
            }
            other => Ok(other),
        }
    }

    /// What the input's first bytes tell of its format ([`tell`]), read as far as that needs:
    /// at most [`TEXT_WINDOW`] bytes. A stream keeps what it reads in its `head`, to be read
    /// again as its start.
    fn tell(&mut self) -> io::Result<Told> {
        self.tell_paced(RETELL_PAUSE, tell)
    }

    /// [`Source::tell`], a stream told again at most every `pause` while its bytes keep coming
    /// and its head has not doubled, by `tell` (tests count what it scans).
    fn tell_paced(
        &mut self,
        pause: Duration,
        mut tell: impl FnMut(&[u8], bool) -> Option<Told>,
    ) -> io::Result<Told> {
        let (start, ended) = match self {
            Source::File(_) | Source::Memory(_) => {
                let mut start = Vec::new();
                self.reread()?
                    .take(TEXT_WINDOW as u64)
                    .read_to_end(&mut start)?;
                let ended = start.len() < TEXT_WINDOW;
                (start, ended)
            }
            Source::Stream { head, rest } => {
                let mut chunk = vec![0; READ_BUFFER];
                // While the head may be all text only a read that brings the end of a line
                // (after a `\x`, or of escape text), a control character (invalid UTF-8 alone
                // waits for one) or the end can settle it; after a control character the text
                // stops there, and any read can. Such a read makes the head due to be told.
                //
                // Telling reads the head from its start, so telling it after every such read
                // is quadratic (1 MiB of text lines that tell nothing, a line a read: about
                // 10,000 tellings scanning 2.9 GB). A due head is told once it has doubled
                // since it was last told, which keeps all those tellings under twice the head;
                // and, so that a slow writer is not kept waiting, once `pause` has passed since
                // the last telling, or as soon as no byte comes within what is left of `pause`
                // (a writer that stops to wait for the answer). What a start tells stands
                // ([`tell`]): told later, the head tells the same, only holding more of the
                // input. The end of the input or of the window settles any head: told at once.
                let mut control_seen = false;
                let mut due = false;
                let mut told_len = 0;
                let mut told_at = Instant::now();
                loop {
                    let read = match rest.read(&mut chunk) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        read => read?,
                    };
                    let ended = read == 0;
                    head.extend_from_slice(&chunk[..read]);
                    control_seen |= chunk[..read].iter().any(|&b| is_control(b));
                    due |= control_seen || chunk[..read].contains(&b'\n');
                    let settled = ended || head.len() >= TEXT_WINDOW;
                    let paced = due
                        && (head.len() >= 2 * told_len || {
                            let waited = told_at.elapsed();
                            waited >= pause || !rest.ready_within(pause - waited)
                        });
                    if settled || paced {
                        if let Some(told) = tell(head, ended) {
                            return Ok(told);
                        }
                        (due, told_len, told_at) = (false, head.len(), Instant::now());
                    }
                }
            }
        };
        // The whole input or the whole window: enough to tell.
        Ok(tell(&start, ended).unwrap_or(Told::Unknown))
    }

    /// The input's size in bytes, if it is a file.
    fn len(&self) -> Option<u64> {
        match self {
            Source::File(file) => file.metadata().ok().map(|m| m.len()),
            Source::Stream { .. } | Source::Memory(_) => None,
        }
    }

    /// A reader from the start of the input, for one look at it (after
    /// [`Source::rereadable`]).
    fn reread(&self) -> io::Result<Box<dyn BufRead + '_>> {
        Ok(match self {
            Source::File(file) => Box::new(from_start(file)?),
            Source::Memory(bytes) => Box::new(&bytes[..]),
            Source::Stream { .. } => {
                return Err(io::Error::other("a stream cannot be read twice"));
            }
        })
    }

    /// A reader from the start of the input, to read the datums.
    fn into_reader(self) -> io::Result<Input> {
        Ok(match self {
            Source::File(file) => Input::File(from_start(file)?),
            Source::Stream { head, rest } => Input::Stream(BufReader::with_capacity(
                READ_BUFFER,
                Cursor::new(head).chain(rest),
            )),
            Source::Memory(bytes) => Input::Memory(Cursor::new(bytes)),
        })
    }
}

/// The reader the datums are parsed from.
enum Input {
    File(BufReader<File>),
    /// The bytes read to tell the format, then the rest of the stream.
    Stream(BufReader<io::Chain<Cursor<Vec<u8>>, Rest>>),
    Memory(Cursor<Vec<u8>>),
}

impl Input {
    /// See `Datums`' [`ItemReader::may_wait`]. A file or memory never waits for long.
    fn may_wait(&self) -> bool {
        match self {
            Input::Stream(reader) => {
                let (head, rest) = reader.get_ref().get_ref();
                reader.buffer().is_empty()
                    && head.position() >= head.get_ref().len() as u64
                    && !rest.ready_within(Duration::ZERO)
            }
            Input::File(_) | Input::Memory(_) => false,
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::File(reader) => reader.read(buf),
            Input::Stream(reader) => reader.read(buf),
            Input::Memory(cursor) => cursor.read(buf),
        }
    }
}

impl BufRead for Input {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Input::File(reader) => reader.fill_buf(),
            Input::Stream(reader) => reader.fill_buf(),
            Input::Memory(cursor) => cursor.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            Input::File(reader) => reader.consume(amount),
            Input::Stream(reader) => reader.consume(amount),
            Input::Memory(cursor) => cursor.consume(amount),
        }
    }
}

/// How long a stream's head waits to be told again while bytes keep coming (see
/// [`Source::tell_paced`]).
const RETELL_PAUSE: Duration = Duration::from_millis(100);

/// Bytes read from a file or stream at a time.
pub const READ_BUFFER: usize = 1 << 16;

/// `file` (owned, or `&File`), buffered, from its first byte.
fn from_start<F: Read + Seek>(mut file: F) -> io::Result<BufReader<F>> {
    file.seek(SeekFrom::Start(0))?;
    Ok(BufReader::with_capacity(READ_BUFFER, file))
}

impl Iterator for Datums {
    type Item = anyhow::Result<Datum>;

    fn next(&mut self) -> Option<anyhow::Result<Datum>> {
        if self.done {
            return None;
        }
        let item = match self.next_datum() {
            Ok(Some(datum)) => {
                self.any_read = true;
                return Some(Ok(datum));
            }
            Ok(None) if self.any_read => None,
            Ok(None) => Some(Err(user_error(
                format!("{} holds no datums", self.origin),
                match self.reader {
                    Reader::Parsed(_) => {
                        "give a datums file written by `pgdict compress`, or hex lines as psql \
                         prints a bytea"
                    }
                    Reader::Column { .. } => "the column holds only NULLs, or there are no rows",
                },
            ))),
            Err(e) => {
                let hint = match self.reader {
                    // The reader's own hint (a CSV file read as hex lines) is more to the point.
                    _ if e.downcast_ref::<Hint>().is_some() => None,
                    Reader::Parsed(_) => Some(format_hint(self.format)),
                    // A reader's error (bad CSV, no such column) tells its own remedy.
                    Reader::Column { .. } if e.downcast_ref::<SourceError>().is_some() => None,
                    Reader::Column { .. } => Some(
                        "name the column that holds the datums, as `pgdict compress \
                         --keep-columns` writes them (a bytea column copied out)",
                    ),
                };
                let e = e.context(format!("cannot read the datums of {}", self.origin));
                Some(match hint {
                    Some(hint) => Err(e).hint(hint),
                    None => Err(e),
                })
            }
        };
        self.done = true;
        item
    }
}

/// What a format looks like, for the hint of an input that does not read as it.
fn format_hint(format: DatumFormatArg) -> &'static str {
    match format {
        DatumFormatArg::Datums => {
            "a datums file is what `pgdict compress` writes (u32 little-endian length, then the \
             datum); for hex text use --format hex"
        }
        DatumFormatArg::Hex => {
            "give one datum per line as psql prints a bytea: \\x followed by an even number of \
             hex digits (`psql -At` prints nothing else); COPY data of a bytea column under \
             bytea_output = escape is read with --copy-column 0"
        }
        DatumFormatArg::Escape => {
            "give one datum per line as psql -At prints a bytea under bytea_output = escape: \
             printable characters, \\\\ for a backslash, \\ and three octal digits for \
             any other byte"
        }
        DatumFormatArg::Varlena => {
            "varlenas back to back, each as long as its header says; for hex text use --format \
             hex"
        }
        DatumFormatArg::Copy => {
            "give PostgreSQL's binary COPY of one bytea column, as COPY (SELECT payload FROM t) \
             TO STDOUT (FORMAT binary) writes it"
        }
    }
}

/// Reads datums in one format.
enum Parser<R: BufRead> {
    Datums(datums_file::Reader<R>),
    Hex(HexLines<R>),
    Escape(EscapeLines<R>),
    Varlena(Varlenas<R>),
    Copy(copy::BinaryReader<R>),
}

impl<R: BufRead> Parser<R> {
    fn new(format: DatumFormatArg, input: R, origin: &str) -> Parser<R> {
        match format {
            DatumFormatArg::Datums => Parser::Datums(datums_file::Reader::new(input, origin)),
            DatumFormatArg::Hex => Parser::Hex(HexLines::new(input)),
            DatumFormatArg::Escape => Parser::Escape(EscapeLines::new(input)),
            DatumFormatArg::Varlena => Parser::Varlena(Varlenas::new(input)),
            DatumFormatArg::Copy => Parser::Copy(copy::BinaryReader::new(input, None)),
        }
    }

    fn next_datum(&mut self) -> anyhow::Result<Option<Datum>> {
        match self {
            Parser::Datums(reader) => {
                let position = Position::Byte(reader.offset());
                Ok(reader.read_datum()?.map(|bytes| Datum { bytes, position }))
            }
            Parser::Hex(lines) => lines.next_datum(),
            Parser::Escape(lines) => lines.next_datum(),
            Parser::Varlena(varlenas) => varlenas.next_datum(),
            Parser::Copy(reader) => Ok(reader.next_value()?.map(|(bytes, at)| Datum {
                bytes,
                position: Position::Byte(at),
            })),
        }
    }

    /// The reader the datums are read from.
    fn input(&self) -> &R {
        match self {
            Parser::Datums(reader) => reader.get_ref(),
            Parser::Hex(lines) => &lines.input,
            Parser::Escape(lines) => &lines.input,
            Parser::Varlena(varlenas) => &varlenas.input,
            Parser::Copy(reader) => &reader.input,
        }
    }

    /// Bytes of the input the datums read so far span.
    fn bytes_read(&self) -> u64 {
        match self {
            Parser::Datums(reader) => reader.offset(),
            Parser::Hex(lines) => lines.offset,
            Parser::Escape(lines) => lines.offset,
            Parser::Varlena(varlenas) => varlenas.offset,
            Parser::Copy(reader) => reader.offset,
        }
    }
}

/// A format's name, for messages.
fn format_name(format: DatumFormatArg) -> &'static str {
    match format {
        DatumFormatArg::Datums => "datums file",
        DatumFormatArg::Hex => "hex",
        DatumFormatArg::Escape => "escape",
        DatumFormatArg::Varlena => "varlenas",
        DatumFormatArg::Copy => "binary COPY",
    }
}

/// Line `number` of `input`, its line end included, or `None` at the end of the input. A line
/// over `max_len` bytes is refused, not buffered whole: no datum makes one.
fn read_bounded_line(
    input: &mut impl BufRead,
    max_len: usize,
    number: usize,
) -> anyhow::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let read = (&mut *input)
        .take(max_len as u64)
        .read_until(b'\n', &mut line)
        .with_context(|| format!("cannot read line {number}"))?;
    if read == 0 {
        return Ok(None);
    }
    if read == max_len && line.last() != Some(&b'\n') && !at_end(input)? {
        anyhow::bail!(
            "line {number} is over {max_len} bytes, longer than a line holding a bytea of \
             PostgreSQL's largest value"
        );
    }
    Ok(Some(line))
}

/// Whether `input` has no more bytes. A read a signal interrupted is tried again, as
/// `read_until` does: it says nothing of the input.
fn at_end(input: &mut impl BufRead) -> io::Result<bool> {
    loop {
        match input.fill_buf() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            buffered => return Ok(buffered?.is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::detect::text_len;
    use super::escape::escape_literal;
    use super::*;

    #[test]
    fn a_large_hex_datum_is_decoded_in_its_texts_buffer_to_the_same_bytes() {
        let bytes: Vec<u8> = (0..HAND_OVER_MIN as u32 + 3)
            .map(|i| (i * 7) as u8)
            .collect();
        let text = [&b"\\x"[..], const_hex::encode(&bytes).as_bytes()].concat();
        let small = b"\\x0a0b".to_vec();
        for (text, in_place) in [(text, true), (small, false)] {
            let expected = bytea_datum(&text).unwrap();
            let at = text.as_ptr();
            let datum = take_bytea_datum(text).unwrap();
            assert!(datum == expected);
            assert_eq!(datum.as_ptr() == at, in_place);
        }
    }
    use crate::output::write_hex_line;

    /// A datum is sized by what it decodes to: 1 MB of one byte in a datum of a few hundred
    /// bytes counts as 1 MB, so that a batch of them closes after one (the batch of 4096 such
    /// datums was held decoded whole). A raw datum or one whose header does not read counts as
    /// its length.
    #[test]
    fn a_datum_is_sized_by_what_it_decodes_to() {
        let row = vec![b'a'; 1_000_000];
        let datum = pgdict::datum::DatumEncoder::new()
            .encode(&row, pgdict::datum::Codec::Lz4, None)
            .unwrap();
        assert!(datum.len() < 10_000, "{}", datum.len());
        assert_eq!(decoded_size(&datum), row.len());
        let mut hex = Vec::new();
        write_hex_line(&mut hex, &datum).unwrap();
        let text = hex.strip_suffix(b"\n").unwrap();
        assert_eq!(decoded_size_of_text(text), row.len());
        // Only its header's digits are read: a cut-off text is sized the same.
        assert_eq!(decoded_size_of_text(&text[..40]), row.len());
        assert_eq!(decoded_size(b"\x0bshort"), 6); // Its header says 5 bytes: its length.
        assert_eq!(decoded_size(b"\x01 a TOAST pointer"), 17);
        assert_eq!(decoded_size_of_text(b"\\x0x"), 4);
        // The longest header, extended with a 5-byte dictionary id, is read whole.
        let dictionary = pgdict::datum::PreparedDictionary::new(u32::MAX, b"aaaa").unwrap();
        let datum = pgdict::datum::DatumEncoder::new()
            .encode(&row, pgdict::datum::Codec::Zstd, Some(&dictionary))
            .unwrap();
        assert_eq!(pgdict::datum::read_header(&datum).unwrap().header_len, 14);
        hex.clear();
        write_hex_line(&mut hex, &datum).unwrap();
        assert_eq!(decoded_size_of_text(&hex[..30]), row.len());
        assert_eq!(decoded_size_of_text(b"escape \\001 format"), 18);
        // The reader gives each datum that size, and a batch closes at 1 MiB of it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ones.datums");
        datums_file::write(&path, std::iter::repeat_n(&datum[..], 3)).unwrap();
        let input = file_input(path);
        let mut datums = Datums::open(&input).unwrap();
        let mut batch = crate::in_order::Batch::starting_at(0);
        while !batch.is_full() {
            let (read, size) = datums.next_item().unwrap().unwrap();
            assert_eq!(size, row.len());
            batch.push(read, size);
        }
        assert_eq!(batch.items.len(), 2, "1 MiB closes a batch");
        // The room reserved for its result is capped at two full batches (2 MiB).
        assert_eq!(batch.room(), 2_000_000);
        let (read, size) = datums.next_item().unwrap().unwrap();
        batch.push(read, size);
        assert_eq!(batch.room(), 2 << 20);
    }

    /// Every datum of `input` read in `format`, or the first error.
    fn parse(format: DatumFormatArg, input: impl BufRead) -> anyhow::Result<Vec<Datum>> {
        let mut parser = Parser::new(format, input, "t");
        let mut datums = Vec::new();
        while let Some(datum) = parser.next_datum()? {
            datums.push(datum);
        }
        Ok(datums)
    }

    fn detect_bytes(bytes: &[u8]) -> anyhow::Result<DatumFormatArg> {
        detect(Source::Memory(bytes.to_vec()), "t").map(|(format, _)| format)
    }

    #[test]
    fn binary_copy_is_told_by_its_signature() {
        let mut data = Vec::new();
        copy::write_header(&mut data).unwrap();
        copy::write_tuple(&mut data, &[Some(b"\x07abc")]).unwrap();
        copy::write_trailer(&mut data).unwrap();
        assert_eq!(detect_bytes(&data).unwrap(), DatumFormatArg::Copy);
        let found = parse(DatumFormatArg::Copy, &data[..]).unwrap();
        assert_eq!(found[0].bytes, b"\x07abc");
        assert_eq!(found[0].position, Position::Byte(25));
        // Its first bytes wait for more; cut short, they are something else.
        assert_eq!(tell(&data[..5], false), None);
        assert_eq!(tell(&data[..5], true), Some(Told::Unknown));
    }

    fn hex(text: &str) -> Vec<Vec<u8>> {
        parse(DatumFormatArg::Hex, text.as_bytes())
            .unwrap()
            .into_iter()
            .map(|d| d.bytes)
            .collect()
    }

    /// A reader that hands out one byte per call, as a pipe may.
    struct ByteByByte<'a>(&'a [u8]);

    impl Read for ByteByByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&byte, rest)), Some(slot)) => {
                    *slot = byte;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn a_hex_line_over_the_limit_is_refused_not_buffered() {
        let read = |text: &str| -> anyhow::Result<Vec<Vec<u8>>> {
            let mut lines = HexLines::new(BufReader::with_capacity(4, ByteByByte(text.as_bytes())));
            lines.max_line_len = 16;
            let mut datums = Vec::new();
            while let Some(datum) = lines.next_datum()? {
                datums.push(datum.bytes);
            }
            Ok(datums)
        };
        // 16 bytes with the line feed, and 16 without one at the end: read.
        let six = || vec![1, 2, 3, 4, 5, 6];
        assert_eq!(read("\\x010203040506 \n").unwrap(), [six()]);
        assert_eq!(read("\\x01\n\\x010203040506  ").unwrap(), [vec![1], six()]);
        // 17: refused, naming the line.
        let error = read("\\x01\n\\x0102030405060708\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 2 is over 16 bytes, longer than a line holding a bytea of PostgreSQL's largest \
             value"
        );
        let error = read("\\x01\n\\x0102030405060708").unwrap_err();
        assert!(
            error.to_string().starts_with("line 2 is over 16 bytes"),
            "{error}"
        );
    }

    /// A reader that hands out its reads in turn, each a part or an error (`Interrupted`: a
    /// read a signal interrupted), then ends.
    struct Reads(std::collections::VecDeque<io::Result<&'static [u8]>>);

    impl Read for Reads {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.pop_front() {
                Some(Ok(part)) => {
                    buf[..part.len()].copy_from_slice(part);
                    Ok(part.len())
                }
                Some(Err(e)) => Err(e),
                None => Ok(0),
            }
        }
    }

    impl StreamRead for Reads {
        fn ready_within(&self, _wait: Duration) -> bool {
            true
        }
    }

    /// The file at `path`, its format told from its bytes.
    fn file_input(path: std::path::PathBuf) -> DatumInput {
        DatumInput {
            input: path,
            format: None,
            columns: Default::default(),
        }
    }

    fn interrupted() -> io::Result<&'static [u8]> {
        Err(io::ErrorKind::Interrupted.into())
    }

    fn open_stream(
        reads: impl IntoIterator<Item = io::Result<&'static [u8]>>,
    ) -> anyhow::Result<Datums> {
        Datums::open_stream("standard input", Reads(reads.into_iter().collect()), None)
    }

    #[test]
    fn a_stream_is_told_through_an_interrupted_read_and_a_failed_read_is_its_error() {
        let parts = [
            interrupted(),
            Ok(&b"\\x0561\n"[..]),
            interrupted(),
            Ok(b"\\x0562\n"),
        ];
        let datums = open_stream(parts).unwrap();
        assert_eq!(datums.format, DatumFormatArg::Hex);
        let read: Vec<_> = datums.map(|datum| datum.unwrap().bytes).collect();
        assert_eq!(read, [b"\x05a", b"\x05b"]);
        // Not taken for the end of the input, which would tell it (hex) from what came.
        let parts = [Ok(&b"\\x05"[..]), Err(io::Error::other("the pipe broke"))];
        let Err(error) = open_stream(parts) else {
            panic!("a failed read told a format");
        };
        assert!(format!("{error:#}").contains("the pipe broke"), "{error:#}");
    }

    #[test]
    fn only_a_regular_file_is_read_again_and_in_the_format_it_was_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("datums.txt");
        std::fs::write(&path, b"\\x0561\n").unwrap();
        let input = file_input(path.clone());
        let datums = Datums::open(&input).unwrap();
        assert!(datums.is_regular_file());
        assert!(!datums.may_wait());
        let again = datums.again(&input).expect("a file is read again");
        assert_eq!(
            (again.input, again.format),
            (path, Some(DatumFormatArg::Hex))
        );
        let stream = open_stream([Ok(&b"\\x0561\n"[..])]).unwrap();
        assert!(!stream.is_regular_file());
        assert!(stream.again(&input).is_none());
    }

    #[test]
    fn an_input_read_whole_is_told_as_a_whole() {
        // A file of a line of escape text: all of it, so told (four lines tell a longer one).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one-line");
        std::fs::write(&path, b"\\011abc\n").unwrap();
        let input = file_input(path);
        let mut datums = Datums::open(&input).unwrap();
        assert_eq!(datums.format, DatumFormatArg::Escape);
        assert_eq!(datums.next().unwrap().unwrap().bytes, b"\x09abc");
        // A file longer than the window is told by its window, whose end is not the input's:
        // a character it cuts is text yet, so the line with `\x` is one, and hex is told (the
        // hex reader then names what is wrong with the line).
        let mut text = b"\\x".to_vec();
        text.resize(TEXT_WINDOW - 1, b'0');
        text.extend_from_slice("é\n".as_bytes());
        let path = dir.path().join("cut");
        std::fs::write(&path, &text).unwrap();
        let datums = Datums::open(&file_input(path)).unwrap();
        assert_eq!(datums.format, DatumFormatArg::Hex);
        // A stream of varlenas, told by nothing in its start, is held whole to be read.
        let varlenas = Vec::leak(long_varlenas(3, 50, b'v'));
        let datums = open_stream([Ok(&varlenas[..])]).unwrap();
        assert_eq!(datums.format, DatumFormatArg::Varlena);
        let read: Vec<_> = datums.map(|datum| datum.unwrap().bytes).collect();
        assert_eq!(read, varlenas.chunks(50).collect::<Vec<_>>());
    }

    #[test]
    fn a_line_as_long_as_the_limit_is_read_through_an_interrupted_read() {
        // A line of exactly 16 bytes, the limit, with no line feed: whether it goes on is
        // asked of the next read, which a signal interrupts before it tells.
        let read = |after: Option<io::Result<&'static [u8]>>| {
            let parts = [Ok(&b"\\x010203040506  "[..]), interrupted()].into_iter();
            let mut input = Reads(parts.chain(after).collect());
            read_bounded_line(&mut BufReader::with_capacity(16, &mut input), 16, 1)
        };
        assert_eq!(read(None).unwrap().unwrap(), b"\\x010203040506  ");
        let e = read(Some(Ok(b"\n"))).unwrap_err();
        assert!(e.to_string().starts_with("line 1 is over 16 bytes"), "{e}");
        // A read that fails says nothing of the line either: its error is the line's.
        let e = read(Some(Err(io::Error::other("the disk failed")))).unwrap_err();
        assert_eq!(e.to_string(), "the disk failed");
    }

    /// Raw varlenas with a 4-byte header, `len` bytes each (header included), of `fill`.
    fn long_varlenas(count: usize, len: usize, fill: u8) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..count {
            out.extend_from_slice(&((len as u32) << 2).to_le_bytes());
            out.extend(std::iter::repeat_n(fill, len - 4));
        }
        out
    }

    #[test]
    fn psql_aligned_unaligned_and_arrays() {
        assert_eq!(hex("\\x0b616263\n"), [b"\x0b\x61\x62\x63".to_vec()]);
        let aligned = "   datum    \n------------\n \\x0b616263\n \\x07AbCd\n(2 rows)\n\n";
        assert_eq!(hex(aligned), [b"\x0babc".to_vec(), vec![0x07, 0xab, 0xcd]]);
        let columns = " id | datum\n----+-----------\n  1 | \\x0b616263\n(1 row)\n";
        assert_eq!(hex(columns), [b"\x0babc".to_vec()]);
        // Only psql's count of rows is passed over: other words in parentheses are no datum.
        for not_a_count in ["(some rows)", "( rows)"] {
            let text = format!("\\x0b61\n{not_a_count}\n");
            let e = parse(DatumFormatArg::Hex, text.as_bytes()).unwrap_err();
            assert!(format!("{e:#}").starts_with("line 2: "), "{e:#}");
        }
        let array = "{\"\\\\x0b616263\",NULL,\"\\\\x05ff\"}\n";
        assert_eq!(hex(array), [b"\x0babc".to_vec(), vec![0x05, 0xff]]);
        // Arrays of anything else, and JSON, in a table's other columns are no datums.
        let others = "1\t\\\\x0b616263\t{1,2,3}\t{\"a\":1}\t{}\n";
        assert_eq!(hex(others), [b"\x0babc".to_vec()]);
        let e = parse(DatumFormatArg::Hex, &b"{1,2}\n"[..]).unwrap_err();
        assert!(format!("{e:#}").contains("not a hex datum"), "{e:#}");
        let crlf = " \\x0b616263\r\n\\x05ff";
        assert_eq!(hex(crlf), [b"\x0babc".to_vec(), vec![0x05, 0xff]]);
        // COPY's text format: the backslash doubled, `\N` a NULL (no datum); told as hex.
        let copy_text = "\\N\n\\\\x0b616263\n\\N\n\\\\x05ff\n";
        assert_eq!(hex(copy_text), [b"\x0babc".to_vec(), vec![0x05, 0xff]]);
        assert_eq!(
            detect_bytes(copy_text.as_bytes()).unwrap(),
            DatumFormatArg::Hex
        );
        // All of a table's columns, tab-separated; a NULL payload is no datum.
        let table = "1\t\\\\x0b616263\tnote\n2\t\\N\tnote\n3\t\\\\x05ff\t\\N\n";
        assert_eq!(hex(table), [b"\x0babc".to_vec(), vec![0x05, 0xff]]);
        // ... with COPY's HEADER line first; a line of names later on is no header.
        let header = format!("id\tpayload\tnote\n{table}");
        assert_eq!(hex(&header), [b"\x0babc".to_vec(), vec![0x05, 0xff]]);
        let e = parse(
            DatumFormatArg::Hex,
            format!("{table}id\tpayload\n{table}").as_bytes(),
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("line 4: not a hex datum"),
            "{e:#}"
        );
        // Three backslashes are no literal.
        let e = parse(DatumFormatArg::Hex, &b"\\\\\\x05ff\n"[..]).unwrap_err();
        assert!(format!("{e:#}").contains("not a hex datum"), "{e:#}");
    }

    #[test]
    fn an_input_not_in_its_format_is_told_what_the_format_looks_like() {
        // How the datums are said to be read, and the error reading them.
        let error_of = |format, bytes: &'static [u8]| {
            let datums = Datums::open_stream("t", Reads([Ok(bytes)].into()), Some(format));
            let datums = datums.unwrap();
            let what = datums.what.clone();
            let last = datums.last().expect("an error, the last item");
            (
                what,
                crate::fail::render(&last.expect_err("not read as datums")),
            )
        };
        for (format, name, looks) in [
            (
                DatumFormatArg::Datums,
                "datums file",
                "u32 little-endian length, then the datum",
            ),
            (
                DatumFormatArg::Hex,
                "hex",
                "\\x followed by an even number of hex digits",
            ),
            (
                DatumFormatArg::Escape,
                "escape",
                "bytea_output = escape: printable characters",
            ),
            (
                DatumFormatArg::Varlena,
                "varlenas",
                "varlenas back to back, each as long as its",
            ),
            (
                DatumFormatArg::Copy,
                "binary COPY",
                "binary COPY of one bytea column",
            ),
        ] {
            let (what, error) = error_of(format, b"\\q is no datum");
            assert_eq!(what, name);
            assert!(error.contains("cannot read the datums of t"), "{error}");
            assert!(error.contains(&format!("hint: {}", format_hint(format))));
            assert!(format_hint(format).contains(looks), "{format:?}: {error}");
        }
        // The reader's own hint, where it has one, says more.
        let (_, error) = error_of(DatumFormatArg::Hex, b"id,body\n1,\\x0561\n");
        assert!(error.contains("hint: this looks like CSV"), "{error}");
    }

    #[test]
    fn bad_hex_names_the_line() {
        let error = |text: &[u8]| {
            let e = parse(DatumFormatArg::Hex, text).unwrap_err();
            format!("{e:#}")
        };
        assert_eq!(
            error(b"\\x0b61\n\\x0b6\n"),
            "line 2: the \\x literal has an odd number of hex digits (3): is it cut off?"
        );
        let e = error(b"\\x0b61\nhello\n");
        assert!(e.starts_with("line 2: not a hex datum"), "{e}");
        let e = error(b"\\x0g\n");
        assert!(e.contains("'g' at character 4"), "{e}");
        // Not a prefix to skip, as some hex decoders take it.
        let e = error(b"\\x0X0b61\n");
        assert!(e.contains("'X' at character 4"), "{e}");
        assert_eq!(
            error(b"\\x0b61\n\\x\xff\n"),
            "not text: invalid UTF-8 at byte 9"
        );
    }

    #[test]
    fn a_bytea_column_reads_as_byteain_reads_it_where_it_holds_datums() {
        // Hex, and escape format: `\011abc` is the raw datum 0x09 'a' 'b' 'c' (0x09: the 1-byte
        // header of 4 bytes).
        assert_eq!(bytea_datum(b"\\x09616263").unwrap(), b"\x09abc");
        assert_eq!(bytea_datum(b"\\011abc").unwrap(), b"\x09abc");
        assert_eq!(bytea_datum(b"\\011a\\\\c").unwrap(), b"\x09a\\c");
        // All printable, and still a datum: `A` is the 1-byte header of 32 bytes.
        let printable = format!("A{}", "x".repeat(31));
        assert_eq!(
            bytea_datum(printable.as_bytes()).unwrap(),
            printable.as_bytes()
        );
        // A header line, or text: a bytea in escape format, but no datum.
        for (text, said) in [
            (&b"body"[..], "it is 4 bytes, not a datum (datum: "),
            (
                b"Ax",
                "it is 2 bytes, not a datum (its header says 32 bytes)",
            ),
            (b"", "it is 0 bytes, not a datum"),
            (b"\\q", "nor in escape format"),
            (b"\\x0g", "'g' at character 4"),
        ] {
            let e = format!("{:#}", bytea_datum(text).unwrap_err());
            assert!(e.contains(said), "{e}");
        }
    }

    #[test]
    fn messages_show_control_bytes_escaped() {
        assert_eq!(
            crate::text::printable(b"a\\x\0\x1b[31m\xff\t\xc3\xa9"),
            "a\\x\\0\\u{1b}[31m\\xff\\té"
        );
        let e = format!("{:#}", bytea_datum(b"\x0c\0\0\0\x19hello").unwrap_err());
        assert!(e.ends_with(": \\u{c}\\0\\0\\0\\u{19}hello"), "{e}");
    }

    #[test]
    fn detects_each_format() {
        let datums = b"\x02\x00\x00\x00\x05a\x03\x00\x00\x00\x07bc";
        assert_eq!(detect_bytes(datums).unwrap(), DatumFormatArg::Datums);
        let found = parse(DatumFormatArg::Datums, &datums[..]).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].position, Position::Byte(6));
        let varlenas = b"\x05a\x07bc";
        assert_eq!(detect_bytes(varlenas).unwrap(), DatumFormatArg::Varlena);
        let found = parse(DatumFormatArg::Varlena, &varlenas[..]).unwrap();
        assert_eq!(found[1].bytes, b"\x07bc");
        assert_eq!(found[1].position, Position::Byte(2));
        assert_eq!(detect_bytes(b" \\x05ff\n").unwrap(), DatumFormatArg::Hex);
        let e = detect_bytes(b"\x01\x02").unwrap_err();
        assert!(format!("{e:#}").contains("neither hex text"), "{e:#}");
        // An empty input reads as a datums file with no datums (the caller says so).
        assert_eq!(detect_bytes(b"").unwrap(), DatumFormatArg::Datums);
    }

    #[test]
    fn escape_text_is_read_as_postgresql_reads_it() {
        // byteaout's escape form of three short raw datums: "a"; "b\c", its backslash
        // doubled; " x ", whose spaces are bytes of it (nothing is trimmed). A NULL (an empty
        // line) is skipped, and a CRLF line end taken.
        let text = b"\\005a\n\n\\011b\\\\c\r\n\\011 x \n";
        assert_eq!(detect_bytes(text).unwrap(), DatumFormatArg::Escape);
        let found = parse(DatumFormatArg::Escape, &text[..]).unwrap();
        let bytes: Vec<&[u8]> = found.iter().map(|d| &d.bytes[..]).collect();
        assert_eq!(bytes, [&b"\x05a"[..], b"\x09b\\c", b"\x09 x "]);
        let lines: Vec<&Position> = found.iter().map(|d| &d.position).collect();
        assert_eq!(
            lines,
            [&Position::Line(1), &Position::Line(3), &Position::Line(4)]
        );
        // The bytes read reach the end of each datum's line, the empty line's too.
        let mut parser = Parser::new(DatumFormatArg::Escape, &text[..], "t");
        let mut ends = Vec::new();
        while parser.next_datum().unwrap().is_some() {
            ends.push(parser.bytes_read());
        }
        assert_eq!(ends, [6, 17, text.len() as u64]);
        // byteain's rules: three octal digits, the first 0-3; a doubled backslash.
        assert_eq!(escape_literal(b"\\377\\000\\\\").unwrap(), b"\xff\x00\\");
        for bad in [&b"\\x05"[..], b"\\400", b"\\12", b"a\\"] {
            let e = escape_literal(bad).unwrap_err().to_string();
            assert!(e.starts_with("invalid input syntax for type bytea"), "{e}");
        }
        let e = parse(DatumFormatArg::Escape, &b"\\005a\n\\9\n"[..]).unwrap_err();
        assert!(
            format!("{e:#}").starts_with("line 2: invalid input"),
            "{e:#}"
        );
        // A value holding a backslash then `x` (`\\x` in escape text) is not hex text's
        // literal: psql's escape output of zstd datums often has one.
        let text = b"\\037C:\\\\xfiles\\\\data\n\\005a\n";
        assert_eq!(detect_bytes(text).unwrap(), DatumFormatArg::Escape);
        let found = parse(DatumFormatArg::Escape, &text[..]).unwrap();
        assert_eq!(found[0].bytes, b"\x1fC:\\xfiles\\data");
        // Told by its first four lines, whatever follows them: a pipe told by them is read as
        // the whole file is, and a line after them that is no text is the reader's to name.
        let mut text = b"\\005a\n".repeat(4);
        assert_eq!(tell(&text, false), Some(Told::Escape));
        text.extend_from_slice(b"\xff\n");
        assert_eq!(tell(&text, true), Some(Told::Escape));
        assert_eq!(detect_bytes(&text).unwrap(), DatumFormatArg::Escape);
        // Fewer lines tell it only where they are all the input, the last one ended by it.
        assert_eq!(tell(&text[12..], true), Some(Told::Unknown));
        assert_eq!(tell(&text[12..18], true), Some(Told::Escape));
        assert_eq!(tell(&text[12..17], true), Some(Told::Escape));
        // A line yet to end is no line: `\005ab` would not be one datum.
        assert_eq!(tell(&text[..23], false), None);
        // Text whose lines are not datums is not escape text (nor any other format).
        let e = detect_bytes(b"abc\ndef\n").unwrap_err();
        assert!(format!("{e:#}").contains("neither hex text"), "{e:#}");
    }

    #[test]
    fn detection_reads_the_whole_input() {
        // Varlenas of 300,000 bytes: the first header, read as a datums file's length prefix,
        // claims 1,200,000 bytes, which the input holds; only the prefix after that, inside
        // the fifth varlena's `a`s, is over the limit.
        let varlenas = long_varlenas(6, 300_000, b'a');
        assert_eq!(detect_bytes(&varlenas).unwrap(), DatumFormatArg::Varlena);
        // Cut at the end, it is neither.
        let e = detect_bytes(&varlenas[..varlenas.len() - 1]).unwrap_err();
        assert!(
            format!("{e:#}").contains("but only 299999 bytes are left"),
            "{e:#}"
        );
    }

    #[test]
    fn hex_is_told_from_the_start_of_the_input() {
        // Text whose first TEXT_WINDOW bytes end inside a UTF-8 character.
        let mut text = "\\x0b616263 é\n".repeat(TEXT_WINDOW / 14 + 1).into_bytes();
        let cut = (1..TEXT_WINDOW).rev().find(|&i| text[i] == 0xc3).unwrap() + 1;
        assert_eq!(text_len(&text[..cut], false), cut);
        assert_eq!(text_len(&text[..cut], true), cut - 1);
        // What follows the window is not looked at: the hex reader finds it.
        text.truncate(TEXT_WINDOW);
        text.extend_from_slice(b"\x00\n");
        assert_eq!(detect_bytes(&text).unwrap(), DatumFormatArg::Hex);
        // A control character is no text, cut or not.
        assert_eq!(text_len(b"\\x0b\x00", false), 4);
        assert_eq!(text_len(b"\\x0b\xc3\x00", false), 4);
    }

    #[test]
    fn hex_is_told_by_its_first_line_holding_a_hex_literal() {
        // Lines before it (psql's header) and the line itself must be text; what follows is
        // the hex reader's to judge, which names the line.
        let text = b"bytea\n-----\n\\x0561\n\x00\x01\n";
        assert_eq!(detect_bytes(text).unwrap(), DatumFormatArg::Hex);
        let e = parse(DatumFormatArg::Hex, &text[..]).unwrap_err();
        assert!(format!("{e:#}").contains("line 4"), "{e:#}");
        assert_eq!(tell(&text[..19], false), Some(Told::Hex));
        // Not text before it, or in it: not hex.
        assert!(detect_bytes(b"\x01\n\\x0561\n").is_err());
        assert!(detect_bytes(b"\\x05\x0061\n").is_err());
        // Undecided while the text goes on, until the line ends, the input ends or the window
        // is full.
        assert_eq!(tell(b"a\n\\x05", false), None);
        assert_eq!(tell(b"a\n\\x05", true), Some(Told::Hex));
        assert_eq!(tell(b"no literal\n", false), None);
        let long = vec![b'a'; TEXT_WINDOW + 1];
        assert_eq!(tell(&long, false), Some(Told::Unknown));
    }

    /// A datums file holding `datums`.
    fn datums_file(datums: &[&[u8]]) -> Vec<u8> {
        let mut file = Vec::new();
        let mut writer = datums_file::Writer::new(&mut file);
        for datum in datums {
            writer.write_datum(datum).unwrap();
        }
        writer.finish().unwrap();
        file
    }

    #[test]
    fn a_datums_file_is_told_by_its_first_records() {
        // Raw datums, with a 1-byte and a 4-byte header, each as long as its record.
        let short = b"\x07ab";
        let long = long_varlenas(1, 300, b'z');
        let four = datums_file(&[short, &long, short, short]);
        assert_eq!(tell(&four, false), Some(Told::DatumsFile));
        // What follows the first four records is the reader's to judge.
        let five = datums_file(&[short, &long, short, short, b"\x05ab"]);
        assert_eq!(tell(&five, true), Some(Told::DatumsFile));
        // Fewer records: told once no more can come.
        let two = datums_file(&[short, &long]);
        assert_eq!(tell(&two, false), None);
        assert_eq!(tell(&two, true), Some(Told::DatumsFile));
        assert_eq!(tell(&two[..two.len() - 1], false), None);
        // A record whose datum says another length: not told, whatever follows.
        let wrong = datums_file(&[b"\x05ab", short]);
        assert_eq!(tell(&wrong[..7], false), Some(Told::Unknown));
        assert_eq!(tell(&wrong, true), Some(Told::Unknown));
        assert_eq!(detect_bytes(&wrong).unwrap(), DatumFormatArg::Datums);
        // Varlenas back to back, whose first header claims more than the window holds.
        let varlenas = long_varlenas(6, 300_000, b'a');
        assert_eq!(tell(&varlenas[..1000], false), None);
        assert_eq!(tell(&varlenas, true), Some(Told::Unknown));
        // A datums file cut off after records that agree is one: its reader says where.
        let cut = &four[..four.len() - 1];
        assert_eq!(detect_bytes(cut).unwrap(), DatumFormatArg::Datums);
        let e = parse(DatumFormatArg::Datums, cut).unwrap_err();
        assert!(format!("{e:#}").contains("record 4"), "{e:#}");
    }

    /// Detects the format of a pipe that holds `start` and stays open meanwhile (reading to its
    /// end would wait for ever), then writes `rest`, closes it and reads the datums. `start`
    /// comes in its parts, a little apart, so that a read may bring only the last.
    fn detect_an_open_pipe(start: &[&[u8]], rest: &[u8]) -> (DatumFormatArg, Vec<Vec<u8>>) {
        use std::io::Write;

        let (reader, mut writer) = io::pipe().unwrap();
        let (told, format_told) = std::sync::mpsc::channel();
        let (read, datums_read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let source = Source::stream(File::from(std::os::fd::OwnedFd::from(reader)));
            let (format, source) = detect(source, "t").unwrap();
            told.send(format).unwrap();
            // Then the datums, from the first: those read to tell are read again.
            let mut parser = Parser::new(format, source.into_reader().unwrap(), "t");
            let mut datums = Vec::new();
            while let Some(datum) = parser.next_datum().unwrap() {
                datums.push(datum.bytes);
            }
            read.send(datums).unwrap();
        });
        for part in start {
            std::thread::sleep(std::time::Duration::from_millis(50));
            writer.write_all(part).unwrap();
        }
        let wait = std::time::Duration::from_secs(30);
        let format = format_told
            .recv_timeout(wait)
            .expect("detection waited for the input's end");
        writer.write_all(rest).unwrap();
        drop(writer);
        (format, datums_read.recv_timeout(wait).unwrap())
    }

    #[test]
    fn a_stream_is_read_only_as_far_as_telling_needs() {
        // Hex: as far as its first line holding a literal.
        let start: [&[u8]; 2] = [b"bytea\n-----\n", b"\\x0561\n\\x05"];
        let (format, datums) = detect_an_open_pipe(&start, b"61\n");
        assert_eq!(format, DatumFormatArg::Hex);
        assert_eq!(datums, [b"\x05a".to_vec(), b"\x05a".to_vec()]);
        // A datums file: as far as its fourth record, even when the read that completes it
        // brings only text (a raw datum of 20 bytes: its header is `)`).
        let datum = [&b")"[..], &[b'a'; 19]].concat();
        let file = datums_file(&[&datum[..]; 6]);
        let fourth = 3 * 24 + 4;
        let start = [&file[..fourth], &file[fourth..4 * 24]];
        let (format, datums) = detect_an_open_pipe(&start, &file[4 * 24..]);
        assert_eq!(format, DatumFormatArg::Datums);
        assert_eq!(datums, vec![datum; 6]);
    }

    /// A stream that hands out `bytes` a line per read (the last line as far as it goes). Its
    /// writer stops after `stops_at` bytes, if that is before their end: nothing more is ready
    /// to read, and a read would wait for ever (here it fails). A read after the one that
    /// told the end fails too: the end settles what the stream is.
    struct LinePerRead {
        bytes: Vec<u8>,
        at: usize,
        stops_at: usize,
        ended: bool,
    }

    impl LinePerRead {
        fn new(bytes: &[u8], stops_at: usize) -> LinePerRead {
            LinePerRead {
                bytes: bytes.to_vec(),
                at: 0,
                stops_at,
                ended: false,
            }
        }

        fn waits(&self) -> bool {
            self.at >= self.stops_at && self.at < self.bytes.len()
        }
    }

    impl Read for LinePerRead {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.waits() {
                return Err(io::Error::other("read on after the writer stopped"));
            }
            if self.ended {
                return Err(io::Error::other("read on after the end"));
            }
            self.ended = self.at == self.bytes.len();
            let rest = &self.bytes[self.at..];
            let line = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            let n = line.min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.at += n;
            Ok(n)
        }
    }

    impl StreamRead for LinePerRead {
        fn ready_within(&self, _wait: Duration) -> bool {
            !self.waits()
        }
    }

    /// What `source`, a stream, holds of its input after telling.
    fn head_of(source: &Source) -> &[u8] {
        match source {
            Source::Stream { head, .. } => head,
            _ => panic!("not a stream"),
        }
    }

    #[test]
    fn a_stream_of_undecided_lines_is_told_again_only_as_its_head_doubles() {
        // Text lines with no `\x`, no datum on any line: undecided until the window is full.
        // Each read brings a line, which may settle it, and more is always ready. Telling
        // after each read scanned 16 GiB here (a line of 32 bytes a read).
        let lines: Vec<u8> = (0..TEXT_WINDOW / 32 + 10)
            .flat_map(|i| format!("plain line {i:>20}\n").into_bytes())
            .collect();
        // After a control character any read may settle it (it is not text from there on).
        let mut control = lines.clone();
        control[300_000] = 0x01;
        for bytes in [lines, control] {
            let mut source = Source::stream(LinePerRead::new(&bytes, usize::MAX));
            let (mut tellings, mut scanned) = (0, 0);
            let told = source
                .tell_paced(Duration::MAX, |head, ended| {
                    tellings += 1;
                    scanned += head.len();
                    tell(head, ended)
                })
                .unwrap();
            assert_eq!(told, Told::Unknown);
            // Read as far as the window: a line of 32 bytes ends there.
            let head = head_of(&source);
            assert_eq!(head.len(), TEXT_WINDOW);
            assert!(
                scanned < 4 * head.len(),
                "{tellings} tellings scanned {scanned} bytes of a {}-byte head",
                head.len()
            );
        }
    }

    #[test]
    fn a_pipe_is_ready_once_bytes_or_its_end_have_come() {
        use std::io::Write;

        let (reader, mut writer) = io::pipe().unwrap();
        let mut reader = File::from(std::os::fd::OwnedFd::from(reader));
        assert!(!reader.ready_within(Duration::ZERO));
        writer.write_all(b"x").unwrap();
        assert!(reader.ready_within(Duration::ZERO));
        reader.read_exact(&mut [0]).unwrap();
        assert!(!reader.ready_within(Duration::from_millis(10)));
        drop(writer);
        assert!(reader.ready_within(Duration::ZERO));
    }

    #[test]
    fn a_stream_may_wait_only_where_nothing_of_it_is_buffered_or_ready() {
        // Told by its first line; its writer then writes one more and stops.
        let text = b"\\x0561\n\\x0562\n\\x0563\n";
        let mut source = Source::stream(LinePerRead::new(text, 14));
        assert_eq!(source.tell().unwrap(), Told::Hex);
        let mut input = source.into_reader().unwrap();
        let mut may_wait_after = |expected: &[u8]| {
            assert_eq!(input.fill_buf().unwrap(), expected);
            let buffered = input.may_wait();
            input.consume(expected.len());
            (buffered, input.may_wait())
        };
        // The head told, then a line that had come, then nothing more has.
        assert_eq!(may_wait_after(&text[..7]), (false, false));
        assert_eq!(may_wait_after(&text[7..14]), (false, true));
        let memory = Source::Memory(text.to_vec()).into_reader().unwrap();
        assert!(!memory.may_wait());
    }

    #[test]
    fn a_stream_is_told_when_its_writer_stops_or_the_pause_is_over() {
        // Hex from its third line on: told on the 19 bytes to its end, when the reader stops
        // there (told sooner than its head doubled: no more bytes came), or when the pause
        // since the last telling is over (none here), though more keeps coming.
        let text = b"bytea\n-----\n\\x0561\n\\x0562\n";
        for (stops_at, pause) in [(19, Duration::MAX), (usize::MAX, Duration::ZERO)] {
            let mut source = Source::stream(LinePerRead::new(text, stops_at));
            let told = source.tell_paced(pause, tell).unwrap();
            assert_eq!(told, Told::Hex);
            assert_eq!(head_of(&source), &text[..19]);
        }
        // Neither: read on, and told at the end, the same.
        let mut source = Source::stream(LinePerRead::new(text, usize::MAX));
        assert_eq!(source.tell_paced(Duration::MAX, tell).unwrap(), Told::Hex);
        assert_eq!(head_of(&source), text);
        // Or once the head has doubled since it was last told: at once, on the first line.
        let mut source = Source::stream(LinePerRead::new(&text[12..], usize::MAX));
        assert_eq!(source.tell_paced(Duration::MAX, tell).unwrap(), Told::Hex);
        assert_eq!(head_of(&source), &text[12..19]);
        // The end settles a line that has no line end.
        let mut source = Source::stream(LinePerRead::new(&text[12..18], usize::MAX));
        assert_eq!(source.tell_paced(Duration::MAX, tell).unwrap(), Told::Hex);
        assert_eq!(head_of(&source), &text[12..18]);
    }

    #[test]
    fn a_stream_held_to_tell_its_format_is_refused_past_the_limit() {
        use std::io::Write;

        let varlenas = long_varlenas(2, 50, b'v');
        let held = |limit: u64, close: bool| {
            let (reader, mut writer) = io::pipe().unwrap();
            writer.write_all(&varlenas).unwrap();
            // Left open, the stream has no end (like `/dev/zero`): the limit alone can stop
            // the read.
            let writer = (!close).then_some(writer);
            let (sender, held) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let source = Source::stream(File::from(std::os::fd::OwnedFd::from(reader)));
                let held = source.rereadable("standard input", limit);
                let _ = sender.send(held.map(|source| match source {
                    Source::Memory(bytes) => bytes,
                    _ => panic!("not held in memory"),
                }));
            });
            let held = held.recv_timeout(std::time::Duration::from_secs(30));
            drop(writer);
            held.expect("the read went on past the limit")
        };
        for close in [false, true] {
            let e = held(99, close).expect_err("a stream over the limit was held");
            assert!(
                format!("{e:#}").contains("over 99 bytes of it in memory"),
                "{e:#}"
            );
            assert!(
                format!("{e:?}").contains("--format datums|varlena"),
                "{e:?}"
            );
        }
        assert_eq!(held(100, true).unwrap(), varlenas);
    }

    #[test]
    fn reads_from_a_reader_that_hands_out_one_byte_at_a_time() {
        let mut varlenas = b"\x05a\x03".to_vec();
        varlenas.extend(long_varlenas(3, 300, b'z'));
        let found = parse(
            DatumFormatArg::Varlena,
            BufReader::with_capacity(1, ByteByByte(&varlenas)),
        )
        .unwrap();
        let lengths: Vec<usize> = found.iter().map(|d| d.bytes.len()).collect();
        assert_eq!(lengths, [2, 1, 300, 300, 300]);
        assert_eq!(found[4].position, Position::Byte(603));
        assert_eq!(found[2].bytes[4..], [b'z'; 296]);

        let mut file = Vec::new();
        let mut writer = datums_file::Writer::new(&mut file);
        for datum in [&b"\x05abcd"[..], b"", &[7; 300]] {
            writer.write_datum(datum).unwrap();
        }
        writer.finish().unwrap();
        let found = parse(
            DatumFormatArg::Datums,
            BufReader::with_capacity(1, ByteByByte(&file)),
        )
        .unwrap();
        let got: Vec<&[u8]> = found.iter().map(|d| &d.bytes[..]).collect();
        assert_eq!(got, [&b"\x05abcd"[..], b"", &[7; 300]]);
        assert_eq!(found[2].position, Position::Byte(13));

        let text = b" datum\n-------\n\\x0b616263\n(1 row)\n";
        let found = parse(
            DatumFormatArg::Hex,
            BufReader::with_capacity(1, ByteByByte(text)),
        )
        .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].position, Position::Line(3));
    }

    #[test]
    fn a_varlena_cut_off_names_what_is_left() {
        let mut input = long_varlenas(2, 300, b'q');
        input.truncate(450);
        let e = parse(DatumFormatArg::Varlena, &input[..]).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "the varlena at byte 300 says it is 300 bytes long, but only 150 bytes are left"
        );
        let e = parse(DatumFormatArg::Varlena, &b"\x05a\x01\x12"[..]).unwrap_err();
        assert!(
            format!("{e:#}").starts_with("varlena at byte 2: datum: byte 0 is 0x01, a TOAST"),
            "{e:#}"
        );
    }

    #[test]
    fn a_varlena_is_handed_out_without_reading_past_it() {
        // The datum's bytes, then a read that fails: a read past them (a stream whose next
        // bytes have not come: the datum would wait for them) is an error.
        let then_fail =
            |datum| Reads([Ok(datum), Err(io::Error::other("read past the datum"))].into());
        // A 1-byte header, and a 4-byte one: each datum shorter than the longest header.
        for datum in [&b"\x07ab"[..], b"\x18\0\0\0ab"] {
            let mut varlenas = Varlenas::new(then_fail(datum));
            let found = varlenas.next_datum().unwrap().unwrap();
            assert_eq!(found.bytes, datum);
        }
        // A read's error is the reader's, unless a signal interrupted it: then it is tried
        // again.
        let e = Varlenas::new(Reads([Err(io::Error::other("read past the datum"))].into()))
            .next_datum()
            .unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "cannot read the varlena at byte 0: read past the datum"
        );
        let parts = [interrupted(), Ok(&b"\x07a"[..]), interrupted(), Ok(b"b")];
        let mut varlenas = Varlenas::new(Reads(parts.into()));
        assert_eq!(varlenas.next_datum().unwrap().unwrap().bytes, b"\x07ab");
    }

    #[test]
    fn opens_a_file_larger_than_the_window_and_reads_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.bin");
        let datums: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| {
                let len = 200 + (i as usize * 37) % 1500;
                let mut raw = ((len as u32) << 2).to_le_bytes().to_vec();
                raw.extend((0..len - 4).map(|j| (i as usize + j) as u8));
                raw
            })
            .collect();
        let total: usize = datums.iter().map(Vec::len).sum();
        assert!(total > 2 * TEXT_WINDOW, "{total}");
        datums_file::write(&path, datums.iter().map(Vec::as_slice)).unwrap();
        let input = file_input(path.clone());
        let mut read = Datums::open(&input).unwrap();
        assert_eq!(read.format, DatumFormatArg::Datums);
        assert_eq!(read.input_len, Some((total + 4 * datums.len()) as u64));
        let mut got = Vec::new();
        for datum in read.by_ref() {
            got.push(datum.unwrap().bytes);
        }
        assert_eq!(got, datums);
        assert_eq!(read.bytes_read(), read.input_len.unwrap());
        assert!(read.next().is_none());

        // The same datums back to back, without the file's framing: varlenas.
        std::fs::write(&path, datums.concat()).unwrap();
        let read = Datums::open(&input).unwrap();
        assert_eq!(read.format, DatumFormatArg::Varlena);
        let got: Vec<Vec<u8>> = read.map(|d| d.unwrap().bytes).collect();
        assert_eq!(got, datums);

        // Cut: no format reads to the end. Read as varlenas, the error comes after the datums
        // before the cut.
        std::fs::write(&path, &datums.concat()[..total - 100]).unwrap();
        let e = Datums::open(&input).err().unwrap();
        assert!(
            format!("{e:#}").contains("the input is neither hex text"),
            "{e:#}"
        );
        let as_varlenas = DatumInput {
            input: path.clone(),
            format: Some(DatumFormatArg::Varlena),
            columns: Default::default(),
        };
        let results: Vec<anyhow::Result<Datum>> = Datums::open(&as_varlenas).unwrap().collect();
        assert_eq!(results.len(), datums.len());
        let e = results.last().unwrap().as_ref().unwrap_err();
        assert!(format!("{e:#}").contains("bytes are left"), "{e:#}");
        assert!(results[..datums.len() - 1].iter().all(|r| r.is_ok()));

        std::fs::write(&path, b"").unwrap();
        let results: Vec<anyhow::Result<Datum>> = Datums::open(&input).unwrap().collect();
        assert_eq!(results.len(), 1);
        let e = results[0].as_ref().unwrap_err();
        assert!(
            format!("{e:#}").contains("big.bin holds no datums"),
            "{e:#}"
        );
    }

    /// `parse`'s outcome as comparable text: the datums, or the error's whole message.
    fn outcome(result: anyhow::Result<Vec<Datum>>) -> Result<Vec<Datum>, String> {
        result.map_err(|e| format!("{e:#}"))
    }

    const FORMATS: [DatumFormatArg; 3] = [
        DatumFormatArg::Datums,
        DatumFormatArg::Hex,
        DatumFormatArg::Varlena,
    ];

    proptest::proptest! {
        /// A `\x` literal reads as a byte per pair of hex digits, of either case, and as
        /// nothing else (the SIMD decoder is checked against the definition).
        #[test]
        fn hex_literals_are_digit_pairs_and_nothing_else(
            digits in "(0[xX])?[0-9a-fA-FxX\\\\é ]{0,70}",
        ) {
            let pairs = digits.len() % 2 == 0 && digits.bytes().all(|b| b.is_ascii_hexdigit());
            let expected = pairs.then(|| {
                let pair = |p: &[u8]| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16);
                digits.as_bytes().chunks(2).map(|p| pair(p).unwrap()).collect::<Vec<u8>>()
            });
            let read = hex_literal(&format!("\\x{digits}"));
            proptest::prop_assert_eq!(read.as_ref().ok(), expected.as_ref(), "{:?}", read);
            let mut line = Vec::new();
            if let Some(bytes) = expected {
                write_hex_line(&mut line, &bytes).unwrap();
                let lower = format!("\\x{}\n", digits.to_ascii_lowercase());
                proptest::prop_assert_eq!(String::from_utf8(line).unwrap(), lower);
            }
        }

        /// A datum written as byteaout writes a bytea, in hex or escape format, reads back as
        /// itself; any text gives a datum exactly as long as its header says, or an error.
        #[test]
        fn a_bytea_column_reads_a_datum_in_either_output_format(
            row in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            text in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let mut datum = if row.len() < 127 {
                vec![(((row.len() + 1) as u8) << 1) | 1]
            } else {
                (((row.len() + 4) as u32) << 2).to_le_bytes().to_vec()
            };
            datum.extend_from_slice(&row);
            // byteaout under bytea_output = escape: a backslash doubled, printable ASCII as
            // itself, any other byte as three octal digits.
            let mut escaped = Vec::new();
            for &byte in &datum {
                match byte {
                    b'\\' => escaped.extend_from_slice(b"\\\\"),
                    0x20..=0x7e => escaped.push(byte),
                    _ => escaped.extend_from_slice(format!("\\{byte:03o}").as_bytes()),
                }
            }
            let hex = format!("\\x{}", const_hex::encode(&datum));
            proptest::prop_assert_eq!(bytea_datum(hex.as_bytes()).unwrap(), datum.clone());
            proptest::prop_assert_eq!(bytea_datum(&escaped).unwrap(), datum);
            if let Ok(bytes) = bytea_datum(&text) {
                let header = datum::read_header(&bytes).unwrap();
                proptest::prop_assert_eq!(header.total_len, bytes.len());
            }
        }

        /// Any bytes, in any format: no panic, and the same datums or the same error whether
        /// the input arrives at once or a byte at a time.
        #[test]
        fn any_bytes_read_alike_at_once_and_byte_by_byte(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        ) {
            for format in FORMATS {
                let at_once = outcome(parse(format, &bytes[..]));
                let trickled = outcome(parse(
                    format,
                    BufReader::with_capacity(1, ByteByByte(&bytes)),
                ));
                proptest::prop_assert_eq!(at_once, trickled, "{:?}", format);
            }
        }

        /// What the start of an input tells stands whatever follows, so a stream, told as its
        /// bytes come, is told as the whole file is; and the whole input is always told.
        #[test]
        fn what_a_start_tells_stands(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Strategy::prop_map(
                        proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
                        |row| {
                            let mut datum = vec![((row.len() as u8 + 1) << 1) | 1];
                            datum.extend(row);
                            datums_file(&[&datum])
                        },
                    ),
                    // A record whose datum says it is a byte longer.
                    proptest::prelude::Just(datums_file(&[b"\x07a"])),
                    proptest::prelude::Just(b"\\x0561\n".to_vec()),
                    // Escape text: a raw datum's line, and the four lines that tell it.
                    proptest::prelude::Just(b"\\005a\n".to_vec()),
                    proptest::prelude::Just(b"\\005a\n".repeat(4)),
                    proptest::prelude::Just(b"\n".to_vec()),
                    proptest::prelude::Just("é".as_bytes().to_vec()),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
                ],
                0..12,
            ),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let bytes = parts.concat();
            let whole = tell(&bytes, true);
            proptest::prop_assert!(whole.is_some());
            let start = &bytes[..cut.index(bytes.len() + 1)];
            if let Some(told) = tell(start, false) {
                proptest::prop_assert_eq!(Some(told), whole, "{:?}", start);
            }
        }

        /// Datums written in each format read back as themselves, and detection tells the
        /// format; cut anywhere, a datums file or varlenas give an error, never other datums.
        #[test]
        fn datums_read_back_in_each_format(
            rows in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
                1..12,
            ),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            // Raw varlenas: a 1-byte header up to 126 bytes of row, else a 4-byte one.
            let varlenas: Vec<Vec<u8>> = rows
                .iter()
                .map(|row| {
                    let mut datum = if row.len() < 127 {
                        vec![(((row.len() + 1) as u8) << 1) | 1]
                    } else {
                        (((row.len() + 4) as u32) << 2).to_le_bytes().to_vec()
                    };
                    datum.extend_from_slice(row);
                    datum
                })
                .collect();
            let mut file = Vec::new();
            let mut writer = datums_file::Writer::new(&mut file);
            for datum in &varlenas {
                writer.write_datum(datum).unwrap();
            }
            writer.finish().unwrap();
            let back_to_back = varlenas.concat();
            let hex_text: String = varlenas
                .iter()
                .map(|d| {
                    let digits: String = d.iter().map(|b| format!("{b:02x}")).collect();
                    format!("\\x{digits}\n")
                })
                .collect();
            for (format, input) in [
                (DatumFormatArg::Datums, &file),
                (DatumFormatArg::Varlena, &back_to_back),
                (DatumFormatArg::Hex, &hex_text.as_bytes().to_vec()),
            ] {
                let read: Vec<Vec<u8>> = parse(format, &input[..])
                    .unwrap()
                    .into_iter()
                    .map(|d| d.bytes)
                    .collect();
                proptest::prop_assert_eq!(&read, &varlenas, "{:?}", format);
                if format != DatumFormatArg::Varlena {
                    // Varlenas can read as a datums file by chance, the others cannot.
                    proptest::prop_assert_eq!(detect_bytes(input).unwrap(), format);
                }
                if format != DatumFormatArg::Hex {
                    let cut = cut.index(input.len());
                    let cut_off = parse(format, &input[..cut]);
                    let complete = cut_off.as_ref().is_ok_and(|datums| {
                        datums.iter().map(|d| &d.bytes).eq(varlenas.iter().take(datums.len()))
                    });
                    // A cut between two datums reads as the datums before it.
                    let between = (0..=varlenas.len()).any(|n| {
                        let framing = if format == DatumFormatArg::Datums { 4 } else { 0 };
                        varlenas[..n].iter().map(|d| d.len() + framing).sum::<usize>() == cut
                    });
                    proptest::prop_assert_eq!(complete, between, "{:?} cut at {}", format, cut);
                }
            }
        }
    }
}
