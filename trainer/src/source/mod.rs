//! Where training rows come from: files, a directory, standard input, a PostgreSQL column.
//!
//! [`open`] turns a [`SourceSpec`] into [`Rows`], an iterator of datums that reads its input
//! as it goes ([`open_records`]: of whole COPY or CSV records, see [`copy`], [`csv`]): nothing
//! is loaded whole, so a source of any size streams through the reservoir sampler
//! ([`crate::sample`]) in the sampler's memory. Every error names where it happened
//! (the file and line, the datums file record, the server's host and port).
//!
//! | source | a datum is | spec |
//! |---|---|---|
//! | file of lines | one line, without its line feed (and a carriage return before it); empty lines are skipped | [`Format::Lines`] |
//! | JSON Lines | a JSON string: its decoded text; any other value: the line as it is (compact JSON text, as in the shared corpus); empty lines are skipped | [`Format::JsonLines`] |
//! | datums file | one record: u32 little-endian length, then the bytes ([`datums_file`]); binary datums welcome | [`Format::Datums`] |
//! | CSV column | one field of each record, as `COPY ... FROM` reads CSV ([`csv`]), chosen by header name or 0-based index; NULLs and empty values are skipped | [`Format::Csv`] |
//! | COPY data | one field of each row of `COPY ... TO` output, text or binary ([`copy`]), chosen by 0-based index (or a name in a text format `HEADER`); NULLs and empty values are skipped | [`Format::Copy`] |
//! | directory | one regular file each, whole, in file-name order (subdirectories are not entered) | [`SourceSpec::Dir`] |
//! | standard input | as the format says | [`SourceSpec::Stdin`] |
//! | PostgreSQL column | one non-NULL value: `bytea` as its bytes, any other type as its text output in the database's encoding | [`SourceSpec::Postgres`] |
//!
//! The PostgreSQL source streams a plain `SELECT` of the column (`pg`: a thread owns the connection
//! and hands the rows over in batches of up to 8 MiB or 1000 rows, a larger row alone): the server
//! sends rows as it reads them, storing none, and the client holds two batches at most. When the
//! caller says how many rows it wants ([`PgSource::rows_wanted`]) and the table's statistics
//! (`pg_class.reltuples`; for a partitioned table not analyzed as a whole, its partitions') say it
//! holds more than nine times that, so that the sample reads at most a third of its pages, only a
//! share of its pages is read: `TABLESAMPLE SYSTEM (p) REPEATABLE (seed)`, with `p` chosen for
//! three times the rows wanted and rounded up to a power of 2^(1/4) (three to 3.6 times; the
//! reservoir sampler then picks among them). SYSTEM sampling takes whole pages, so rows stored
//! together are sampled together; on tables whose rows differ by where they sit (say, old rows and
//! new rows of a changing schema) prefer a larger `rows_wanted`. The same seed reads the same rows
//! in the same order, and so gives the same sample, while the table's contents, their layout on its
//! pages and (coarsely: the rounding keeps `p` through an ANALYZE's small changes) its statistics
//! stay the same; a table read whole is read without synchronized scans (which start where another
//! session's scan is). `jsonb` and other binary-stored types arrive as text, which is not the bytes
//! PostgreSQL compresses for them ([`Rows::note`] says so); `text`, `json`, `varchar` and `bytea`
//! arrive as stored, and so does a domain over any of them (it is stored as its base type). Text is
//! read as the bytes the database holds (`convert_to(value::text, getdatabaseencoding())`), not
//! converted to the client encoding: in a LATIN1 database `é` is one byte, as PostgreSQL stores and
//! compresses it, and a SQL_ASCII database may hold bytes that are not UTF-8 at all.
//!
//! Statistics far out of date make a sample that holds fewer rows than wanted: rows deleted since
//! the last ANALYZE with no live-row count to say so (counts lost in a crash or to `pg_stat_reset`;
//! a standby counts none), or values set to NULL since (no count says that). The table is then read
//! again: by a share of its pages set as above, but by the rows the first sample held (over three
//! times its share), or whole when those are too few (none among them); and again while a sample
//! comes back short, the pages read before the last read being at most half as many as it reads.
//! A caller that bounds the bytes it keeps too ([`PgSource::bytes_wanted`]: the trainer's
//! `--max-bytes`) has what it keeps from a sample of large rows that holds those bytes, however
//! few its rows: such a sample is not short, and is not read again (the rows and bytes counted are
//! those the caller may keep, [`BytesWanted`]: a sample of rows it keeps none of is no reason to
//! read more rows like them); one short of both is read again by the share its rows call for or
//! the one its bytes call for (three times the bytes wanted, as the bytes it held say the table
//! holds), whichever is smaller.
//! After a sample that held no row the next read's rows follow as if they were the first; after one
//! that held some, the rows end, [`Rows::next_pass`] says that another pass follows, and its rows
//! replace them (a caller that samples starts afresh, with the same seed, so that the sample
//! repeats; one that does not ask keeps the short sample). [`Rows::short_sample`] tells the report.
//!
//! Here: the specs, [`Rows`] and opening a source. The formats have their modules: [`copy`]
//! (text in `copy/text.rs`, binary in `copy/binary.rs`), [`csv`], [`datums_file`], and, private,
//! `lines` (lines and JSON Lines, and the line reading under COPY's text format and CSV); the
//! PostgreSQL source is `pg`, the command-line flags that choose a format [`ColumnFlags`].

pub mod copy;
pub mod csv;
pub mod datums_file;
mod flags;
mod lines;
mod pg;

use lines::{LineEnd, LineRows, TextRecords};

use std::cell::Cell;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgdict::rows::RowFormat;
use rustix::event::{PollFd, PollFlags, Timespec};

pub use csv::{CsvOptions, CsvSyntax};
pub use datums_file::DatumsFileError;
pub use flags::{ColumnFlags, FormatConflict, FormatName};

/// How a file (or standard input) holds its datums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// One datum per line.
    Lines,
    /// One JSON value per line.
    JsonLines,
    /// Length-prefixed records ([`datums_file`]).
    Datums,
    /// One column of a CSV file.
    Csv(CsvOptions),
    /// One column of PostgreSQL's COPY output, text or binary ([`copy`]), and the text
    /// format's delimiter and NULL string.
    Copy(copy::CopyOptions),
}

/// A file name's extension in lower case (`None` without one, or not UTF-8): what the name
/// says the file holds, whichever case it is written in.
pub fn extension(path: &Path) -> Option<String> {
    let extension = path.extension()?.to_str()?;
    Some(extension.to_ascii_lowercase())
}

impl Format {
    /// The format a file name implies: `.jsonl`/`.ndjson` JSON Lines, `.datums` a datums file,
    /// `.copy` COPY data of one column, anything else lines; in any case (`.JSONL` too). (CSV
    /// needs a column, so it is never guessed.)
    pub fn from_path(path: &Path) -> Format {
        match extension(path).as_deref() {
            Some("jsonl" | "ndjson") => Format::JsonLines,
            Some("datums") => Format::Datums,
            Some("copy") => Format::Copy(copy::CopyOptions::default()),
            _ => Format::Lines,
        }
    }

    /// The format's name, as `--format` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Lines => "lines",
            Format::JsonLines => "jsonl",
            Format::Datums => "datums",
            Format::Csv(_) => "csv",
            Format::Copy(_) => "copy",
        }
    }

    /// What is read, for messages: `CSV column body`, `COPY column 1`, or the format's name.
    pub fn describe(&self) -> String {
        match self {
            Format::Csv(csv) => format!("CSV column {}", csv.column),
            Format::Copy(copy::CopyOptions {
                column: Some(column),
                ..
            }) => format!("COPY column {column}"),
            other => other.name().to_string(),
        }
    }
}

/// A CSV or COPY delimiter, or a CSV quote or escape, as given on a command line: one byte, or
/// `\t` or `tab` for a tab.
pub fn parse_delimiter(text: &str) -> Result<u8, String> {
    match text.as_bytes() {
        [byte] => Ok(*byte),
        b"\\t" | b"tab" => Ok(b'\t'),
        _ => Err(format!("{text:?} is not one byte")),
    }
}

/// A CSV or COPY column, by header name or 0-based index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// The column whose header is this name.
    Name(String),
    /// The column at this 0-based index.
    Index(usize),
}

impl Column {
    /// `"3"` is index 3, anything else a name.
    pub fn parse(text: &str) -> Column {
        match text.parse() {
            Ok(index) => Column::Index(index),
            Err(_) => Column::Name(text.to_string()),
        }
    }
}

impl std::fmt::Display for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Column::Name(name) => write!(f, "{name:?}"),
            Column::Index(index) => write!(f, "#{index}"),
        }
    }
}

/// A PostgreSQL table column to sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSource {
    /// A libpq-style connection string or `postgresql://` URL (see `pgdict::conninfo`).
    pub conninfo: String,
    /// The table (or view, materialized view), as SQL would name it: `events`,
    /// `public.events`, `"Mixed Case"`.
    pub table: String,
    /// The column's name, as it is (not quoted).
    pub column: String,
    /// About how many rows the caller will keep; `None` reads the whole column. With a
    /// number, a table of more than nine times as many rows is sampled by pages (see the
    /// module documentation).
    pub rows_wanted: Option<u64>,
    /// How many bytes the caller will keep at most, if it bounds them too (`None`: it keeps
    /// rows whatever their bytes): a page sample that holds fewer rows than `rows_wanted` but
    /// this many bytes is enough, and is not read again. Only with `rows_wanted`.
    pub bytes_wanted: Option<BytesWanted>,
    /// The seed of `TABLESAMPLE ... REPEATABLE`, so that a sample can be repeated.
    pub seed: u64,
}

/// The bytes a caller keeps of a PostgreSQL column at most ([`PgSource::bytes_wanted`]), and
/// which rows count towards them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesWanted {
    /// The bytes (the sum of the rows' lengths) kept at most.
    pub bytes: u64,
    /// The longest row every part of the sample may keep (the smaller of their byte bounds:
    /// a sampler keeps no row longer than a part may hold in all, and drops a longer one whole).
    pub longest_row: u64,
    /// The longest row some part may keep (the larger bound; `longest_row` for a sample of one
    /// part). When no row of a page sample is `longest_row` or shorter, the bytes and rows that
    /// count are those of its rows no longer than this; when none is that short either, no
    /// larger read is expected to add a row the caller keeps, and the sample is not read again.
    pub longest_row_kept: u64,
}

/// Where rows come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceSpec {
    /// A file.
    File {
        /// Its path.
        path: PathBuf,
        /// How it holds datums.
        format: Format,
    },
    /// A directory: one datum per regular file.
    Dir(PathBuf),
    /// Standard input.
    Stdin(Format),
    /// A PostgreSQL table column.
    Postgres(PgSource),
}

impl SourceSpec {
    /// The source a command-line argument names: `-` is standard input (lines unless `format`
    /// says otherwise), a directory is [`SourceSpec::Dir`], anything else a file in `format`
    /// or, without one, the format its name implies ([`Format::from_path`]).
    pub fn from_arg(arg: &Path, format: Option<Format>) -> SourceSpec {
        if arg == Path::new("-") {
            return SourceSpec::Stdin(format.unwrap_or(Format::Lines));
        }
        if format.is_none() && arg.is_dir() {
            return SourceSpec::Dir(arg.to_path_buf());
        }
        let format = format.unwrap_or_else(|| Format::from_path(arg));
        SourceSpec::File {
            path: arg.to_path_buf(),
            format,
        }
    }

    /// The input's name, as the readers' messages give it: a file's or directory's path,
    /// "standard input", or (a PostgreSQL column) [`SourceSpec::describe`].
    pub fn input_name(&self) -> String {
        match self {
            SourceSpec::File { path, .. } | SourceSpec::Dir(path) => path.display().to_string(),
            SourceSpec::Stdin(_) => "standard input".to_string(),
            SourceSpec::Postgres(_) => self.describe(),
        }
    }

    /// What the source is, for messages and for a dictionary's metadata (`source`); never
    /// includes a password.
    pub fn describe(&self) -> String {
        match self {
            SourceSpec::File { path, format } => {
                format!("file {} ({})", path.display(), format.describe())
            }
            SourceSpec::Dir(path) => format!("directory {}", path.display()),
            SourceSpec::Stdin(format) => format!("standard input ({})", format.describe()),
            SourceSpec::Postgres(pg) => format!(
                "table {} column {} at {}",
                pg.table,
                pg.column,
                describe_conninfo(&pg.conninfo)
            ),
        }
    }
}

/// Why rows could not be read. Messages name the file and line, or the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A file or directory could not be opened or read.
    #[error("cannot read {origin}: {source}")]
    Io {
        /// The file, directory or "standard input".
        origin: String,
        /// What the system said.
        source: io::Error,
    },
    /// A JSON Lines line that is not JSON.
    #[error("{origin}:{line}: not a JSON value: {message}")]
    BadJson {
        /// The file.
        origin: String,
        /// 1-based line number.
        line: u64,
        /// What the JSON parser said.
        message: String,
    },
    /// A CSV file that the CSV reader rejects.
    #[error("{origin}:{line}: bad CSV: {message}")]
    BadCsv {
        /// The file.
        origin: String,
        /// 1-based line number.
        line: u64,
        /// What the CSV reader said.
        message: String,
    },
    /// The CSV or COPY column asked for is not there.
    #[error("{origin}: no {format} column {column}: {reason}")]
    NoColumn {
        /// The file.
        origin: String,
        /// "CSV" or "COPY".
        format: &'static str,
        /// The column asked for.
        column: Column,
        /// Why (the header's names, the record's width).
        reason: String,
    },
    /// COPY data that is not what `COPY ... TO` writes ([`copy`]).
    #[error("{origin}: bad COPY data: {message}")]
    BadCopy {
        /// The file (and line, for the text format).
        origin: String,
        /// What is wrong, and where (the tuple and byte, for the binary format).
        message: String,
    },
    /// Lines asked of binary COPY data (it starts with that format's signature): read so, it
    /// would be its bytes cut at line feeds.
    #[error(
        "{origin} starts with the signature of binary COPY data (PGCOPY\\n\\377\\r\\n\\0): it \
         holds no lines"
    )]
    BinaryCopyAsLines {
        /// The file or "standard input".
        origin: String,
    },
    /// Records ([`open_records`]) asked of a source that is not COPY data or CSV in a file or
    /// on standard input.
    #[error(
        "{origin}: records are read from COPY data or CSV in a file or on standard input only"
    )]
    NoRecords {
        /// The source, as [`SourceSpec::describe`] names it.
        origin: String,
    },
    /// A line or file longer than any value PostgreSQL can store: refused once that much has
    /// been read, never buffered whole.
    #[error("{origin}: {what} is over PostgreSQL's limit of {max} bytes for one value")]
    TooLong {
        /// The file (and line).
        origin: String,
        /// "the line" or "the file (N bytes)".
        what: String,
        /// [`datums_file::MAX_DATUM_LEN`].
        max: usize,
    },
    /// A damaged datums file.
    #[error(transparent)]
    DatumsFile(#[from] DatumsFileError),
    /// The connection string is not one.
    #[error("invalid PostgreSQL connection string: {message}")]
    BadConninfo {
        /// What the parser said.
        message: String,
    },
    /// The server could not be reached, or refused the connection.
    #[error("cannot connect to PostgreSQL at {server}: {message}")]
    Connect {
        /// `host:port` (every host the connection string lists).
        server: String,
        /// What the client or the server said.
        message: String,
        /// The SQLSTATE of the server's refusal; none when no server answered.
        sqlstate: Option<String>,
        /// What to do next ([`pgdict::conninfo::ConnectError::hint`]).
        hint: &'static str,
    },
    /// The connection closed or was reset under the client: the server stopped, restarted or
    /// crashed.
    #[error("PostgreSQL at {server}: {what}: the connection to the server was lost ({message})")]
    ConnectionLost {
        /// `host:port`.
        server: String,
        /// What was being done.
        what: String,
        /// What the client saw: "connection closed", or the system's error.
        message: String,
    },
    /// The server reported an error.
    #[error("PostgreSQL at {server}: {what}: {message}")]
    Postgres {
        /// `host:port`.
        server: String,
        /// What was being done.
        what: String,
        /// The server's message.
        message: String,
        /// Its SQLSTATE, if the server sent the error.
        sqlstate: Option<String>,
    },
}

impl SourceError {
    /// What to do next, for the errors whose remedy the error itself tells (shared by
    /// `pgdict` and `pgdict-trainer`).
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            SourceError::BadJson { .. } => {
                "each line of a JSON Lines file must be one JSON value; `--format lines` takes \
                 every line as it is"
            }
            SourceError::BadCsv { .. } => {
                "the input must be CSV as COPY ... (FORMAT csv) writes it: a field with the \
                 delimiter, a quote or a line break in quotes, a quote inside one doubled (give \
                 --csv-delimiter, --csv-quote and --csv-escape as COPY was given DELIMITER, \
                 QUOTE and ESCAPE)"
            }
            SourceError::NoColumn { format: "COPY", .. } => {
                "check --copy-column (a 0-based index, or a name the first line of text COPY \
                 data gives as its HEADER)"
            }
            SourceError::NoColumn { .. } => {
                "check --csv-column (a header name or a 0-based index) and --csv-header or \
                 --csv-no-header"
            }
            SourceError::BadCopy { .. } => {
                "the input must be what COPY ... TO writes, in the text format (a tab between \
                 fields) or (FORMAT binary); of several columns, --copy-column picks one"
            }
            SourceError::BinaryCopyAsLines { .. } => {
                "read it as COPY data: --format copy (with --copy-column N for data of several \
                 columns), or name the file *.copy"
            }
            SourceError::Io { source, .. } if source.kind() == io::ErrorKind::IsADirectory => {
                "a directory is read as one row per file only without --format (and the column \
                 flags); give a file to read it in a format"
            }
            SourceError::DatumsFile(_) => {
                "a datums file is what `pgdict compress` writes; for text use --format lines or \
                 jsonl"
            }
            SourceError::Connect { hint, .. } => hint,
            // insufficient_privilege
            SourceError::Postgres { sqlstate, .. } if sqlstate.as_deref() == Some("42501") => {
                "the user may not read it: connect as one who may, or GRANT SELECT on the table \
                 to this one"
            }
            // invalid_name: `--table 'Mixed Case'` unquoted.
            SourceError::Postgres { sqlstate, .. } if sqlstate.as_deref() == Some("42602") => {
                "the table is named as SQL names it: quote a name with capitals or spaces in \
                 it (--table '\"Mixed Case\"'), and give the schema if it is not on the \
                 search_path (--table 'app.events')"
            }
            // serialization_failure: on a standby, a query cancelled by a recovery conflict.
            SourceError::Postgres { sqlstate, .. } if sqlstate.as_deref() == Some("40001") => {
                "on a standby, a long read can be cancelled by a conflict with recovery: \
                 set hot_standby_feedback = on (or raise max_standby_streaming_delay) on the \
                 standby, or read from the primary; then run the command again"
            }
            // admin_shutdown and crash_shutdown, sent as the session ends.
            SourceError::Postgres { sqlstate, .. }
                if matches!(sqlstate.as_deref(), Some("57P01" | "57P02")) =>
            {
                "the server was shut down (or the session ended by an administrator): run the \
                 command again once it accepts connections"
            }
            SourceError::ConnectionLost { .. } => {
                "the server may have been shut down, restarted or crashed (its log says); run \
                 the command again once it accepts connections"
            }
            _ => return None,
        })
    }
}

/// The datums of an opened source, read as they are asked for; or with `T` another item
/// ([`copy::Record`]: see [`open_records`]).
///
/// Besides iterating, it tells how far it has read ([`Rows::input_read`]) out of how much
/// ([`Rows::input_len`]), for a progress bar.
pub struct Rows<T = Vec<u8>> {
    iter: Box<dyn Iterator<Item = Result<T, SourceError>>>,
    read: Arc<AtomicU64>,
    len: Option<u64>,
    note: Option<String>,
    /// For a stream: what tells whether its next read may wait.
    stream: Option<StreamWatch>,
    /// For a PostgreSQL table: how it is read, as its reader finds out.
    table_read: Rc<TableRead>,
}

/// How a PostgreSQL table is read, as its reader finds out: shared by [`Rows`] and the
/// reader's stream (`pg`).
#[derive(Default)]
struct TableRead {
    /// The share of its pages read, if it is sampled by pages.
    page_sample: Cell<Option<PageSample>>,
    /// The first page sample that held fewer rows than wanted, if one did.
    short_sample: Cell<Option<ShortSample>>,
    /// The rows returned so far are a pass that ended short: the rows end there (`None`)
    /// until the caller asks for the next pass ([`Rows::next_pass`]).
    pass_ended: Cell<bool>,
    /// What the next pass reads, once one has ended: a sample of pages, or the whole column.
    next_page_sample: Cell<Option<PageSample>>,
}

/// `n` to its three leading digits: statistics estimate a count, they do not know it.
fn round_to_3_digits(n: u64) -> u64 {
    let mut unit = 1;
    while n / unit >= 1000 {
        unit *= 10;
    }
    n.saturating_add(unit / 2) / unit * unit
}

/// How a large PostgreSQL table was read: a share of its pages (`TABLESAMPLE SYSTEM`), for
/// three to 3.6 times the rows wanted (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageSample {
    /// The share of the table's pages read, in percent.
    pub percent: f64,
    /// The rows the table holds, as its statistics (`pg_class.reltuples`) estimate.
    pub estimated_rows: u64,
}

/// `1.3 % of its pages`: a share of a table's pages to two significant digits (0.99999 is
/// 1.0), down to the smallest share asked for (0.0001 %).
fn share_of_pages(percent: f64) -> String {
    let digits = |p: f64| 1 - p.log10().floor() as i32;
    let unit = 10f64.powi(-digits(percent));
    let percent = (percent / unit).round() * unit;
    let decimals = digits(percent).clamp(0, 4) as usize;
    format!("{percent:.decimals$} % of its pages")
}

impl std::fmt::Display for PageSample {
    /// `1.3 % of its pages (TABLESAMPLE SYSTEM; about 3,000,000 rows in all)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (TABLESAMPLE SYSTEM; about {} rows in all)",
            share_of_pages(self.percent),
            crate::progress::thousands(round_to_3_digits(self.estimated_rows))
        )
    }
}

/// A page sample of a PostgreSQL table that held fewer rows than wanted (and fewer bytes, where
/// the caller bounds them too), the statistics it was set by being out of date (see the module
/// documentation): the table was read again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShortSample {
    /// The share of the table's pages read, in percent.
    pub percent: f64,
    /// The rows they held.
    pub rows: u64,
    /// The rows wanted ([`PgSource::rows_wanted`]).
    pub rows_wanted: u64,
    /// The rows the table holds, as its statistics estimated them.
    pub estimated_rows: u64,
    /// The bytes of the rows they held.
    pub bytes: u64,
    /// Where the caller bounds the bytes it keeps too ([`PgSource::bytes_wanted`]): the bytes
    /// wanted, and the rows and bytes that counted towards them.
    pub bytes_wanted: Option<ShortOfBytes>,
}

/// What a [`ShortSample`] held of the bytes wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortOfBytes {
    /// The bytes wanted ([`BytesWanted::bytes`]).
    pub bytes: u64,
    /// The longest row that counted ([`BytesWanted::longest_row`], or
    /// [`BytesWanted::longest_row_kept`] when no row held was that short).
    pub longest_row: u64,
    /// The rows held no longer than `longest_row`: they, not every row, count towards the rows
    /// wanted too.
    pub rows_counted: u64,
    /// Their bytes.
    pub bytes_counted: u64,
}

impl ShortSample {
    /// What a report says of it, and of the read that followed (`then`: a sample of pages, or
    /// `None`, the whole column): `the table's statistics (about 300,000 rows) are out of date:
    /// 13 % of its pages held 2,012 rows, fewer than the 12,500 wanted; read again from 4.8 %
    /// of its pages (ANALYZE the table to sample it in one read)`. With a byte bound, the bytes
    /// too: `held 232 rows (561,040 bytes), fewer than the 1,250 rows and the 1,024,000 bytes
    /// wanted`, and when some rows were too long to count, which did: `held 6 rows (1,501,000
    /// bytes, of which 1,000 in 1 row of at most 262,144 bytes, which count)`.
    pub fn note(&self, then: Option<PageSample>) -> String {
        let thousands = crate::progress::thousands;
        let counted = crate::progress::counted;
        let held_and_wanted = match self.bytes_wanted {
            None => format!(
                "{}, fewer than the {} wanted",
                counted(self.rows, "row"),
                thousands(self.rows_wanted)
            ),
            Some(wanted) => format!(
                "{} ({} bytes{}), fewer than the {} and the {} bytes wanted",
                counted(self.rows, "row"),
                thousands(self.bytes),
                if wanted.rows_counted == self.rows {
                    String::new()
                } else {
                    format!(
                        ", of which {} in {} of at most {} bytes, which count",
                        thousands(wanted.bytes_counted),
                        counted(wanted.rows_counted, "row"),
                        thousands(wanted.longest_row)
                    )
                },
                counted(self.rows_wanted, "row"),
                thousands(wanted.bytes)
            ),
        };
        format!(
            "the table's statistics (about {} rows) are out of date: {} held {held_and_wanted}; \
             read again {} (ANALYZE the table to sample it in one read)",
            thousands(round_to_3_digits(self.estimated_rows)),
            share_of_pages(self.percent),
            match then {
                Some(sample) => format!("from {}", share_of_pages(sample.percent)),
                None => "whole".to_string(),
            }
        )
    }

    /// What a JSON report, and a trained dictionary's metadata, say of it
    /// (`table_short_sample`): `{"sample_percent": 0.84, "rows": 17, "table_rows_estimate":
    /// 40000, "bytes": 35819, "rows_wanted": 100, "bytes_wanted": 81920, "rows_counted": 17,
    /// "bytes_counted": 35819, "longest_row_counted": 16384}`, the share of the pages read,
    /// the rows they held and the rows the statistics promised; their bytes and the rows
    /// wanted; and where the bytes are bounded too (else null), the bytes wanted and the rows
    /// and bytes that counted towards them, in rows no longer than `longest_row_counted`.
    pub fn to_json(&self) -> serde_json::Value {
        let of_bytes = self.bytes_wanted;
        serde_json::json!({
            "sample_percent": self.percent,
            "rows": self.rows,
            "table_rows_estimate": self.estimated_rows,
            "bytes": self.bytes,
            "rows_wanted": self.rows_wanted,
            "bytes_wanted": of_bytes.map(|wanted| wanted.bytes),
            "rows_counted": of_bytes.map(|wanted| wanted.rows_counted),
            "bytes_counted": of_bytes.map(|wanted| wanted.bytes_counted),
            "longest_row_counted": of_bytes.map(|wanted| wanted.longest_row),
        })
    }
}

/// A stream's buffer state ([`Watched`]) and a second handle to it, to ask whether bytes are
/// ready.
struct StreamWatch {
    drained: Rc<Cell<bool>>,
    handle: File,
}

impl<T> std::fmt::Debug for Rows<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("read", &self.input_read())
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl<T> Rows<T> {
    /// Rows from any iterator (for tests, and for callers with rows at hand).
    pub fn from_rows<I>(iter: I) -> Rows<T>
    where
        I: IntoIterator<Item = Result<T, SourceError>>,
        I::IntoIter: 'static,
    {
        Rows {
            iter: Box::new(iter.into_iter()),
            read: Arc::default(),
            len: None,
            note: None,
            stream: None,
            table_read: Rc::default(),
        }
    }

    /// How many bytes of input there are (a file's size, a directory's files' sizes), when
    /// known.
    pub fn input_len(&self) -> Option<u64> {
        self.len
    }

    /// What a reader of the rows should know about them, when the source has something to say:
    /// a PostgreSQL column whose stored bytes are not the text the rows hold.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// How a large PostgreSQL table was sampled by its pages, if it was: the rows read are
    /// those of the sampled pages. Set when the rows are opened; certain once they are all
    /// read (a sample that holds fewer rows than wanted is followed by another read: see
    /// [`Rows::next_pass`]).
    pub fn page_sample(&self) -> Option<PageSample> {
        self.table_read.page_sample.get()
    }

    /// The first page sample of a PostgreSQL table that held fewer rows than wanted, if one
    /// did: the table was read again, as [`Rows::page_sample`] then says.
    pub fn short_sample(&self) -> Option<ShortSample> {
        self.table_read.short_sample.get()
    }

    /// Whether the rows are read again, from the start, now that they ended (the iterator
    /// returned `None`): a PostgreSQL page sample that held fewer rows than wanted is followed
    /// by a larger sample or the whole column (see the module documentation). If so, the rows
    /// read so far are to be dropped and the next pass's taken in their place, by a sampler
    /// begun afresh (with the same seed, the same sample again); the iterator then goes on
    /// with them. A caller that does not ask keeps the rows of the short sample, and the
    /// source ends there. False for every other source, and at the end of the last pass.
    pub fn next_pass(&mut self) -> bool {
        let table_read = &self.table_read;
        let next = table_read.pass_ended.replace(false);
        if next {
            table_read
                .page_sample
                .set(table_read.next_page_sample.take());
        }
        next
    }

    /// How many bytes of input were read so far (for files; 0 for standard input and
    /// PostgreSQL).
    pub fn input_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Whether reading the next row may wait for input that has not come: standard input or a
    /// named pipe with nothing buffered and nothing ready to read. A caller holding rows back
    /// (to compress them in batches) hands them on first, so that rows come out as they come
    /// in. A file or a directory never waits for long: false. A PostgreSQL column: false too,
    /// though a slow view's rows may come slowly; its reader hands them over as they come (at
    /// least every 100 ms), but a caller holding rows back holds them.
    pub fn may_wait(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(|stream| stream.drained.get() && !ready_to_read(&stream.handle))
    }
}

/// Whether a read of `input` would return at once (bytes, or the end of the input), asked
/// without waiting (`poll` with a zero timeout). If it cannot be asked, the answer is no: a
/// caller then hands on what it holds, which is never wrong, only slower.
pub fn ready_to_read(input: impl AsFd) -> bool {
    ready_within(input, Duration::ZERO)
}

/// Whether a read of `input` would return at once, or will within `wait`: [`ready_to_read`],
/// waiting up to `wait` for bytes to come (for ever if it is too long for `poll`). A signal
/// ends the wait early, answering no.
pub fn ready_within(input: impl AsFd, wait: Duration) -> bool {
    let mut poll = [PollFd::new(&input, PollFlags::IN)];
    let timeout = Timespec::try_from(wait).ok();
    matches!(rustix::event::poll(&mut poll, timeout.as_ref()), Ok(ready) if ready > 0)
}

/// A buffered reader that keeps a flag saying whether its buffer is empty, for [`Rows`] to
/// see while the row reader owns it.
struct Watched<R> {
    inner: BufReader<R>,
    drained: Rc<Cell<bool>>,
}

impl<R: Read> Watched<R> {
    fn note(&self) {
        self.drained.set(self.inner.buffer().is_empty());
    }
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf);
        self.note();
        read
    }
}

impl<R: Read> BufRead for Watched<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let buffered = self.inner.fill_buf()?;
        self.drained.set(buffered.is_empty());
        Ok(buffered)
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
        self.note();
    }
}

impl<T> Iterator for Rows<T> {
    type Item = Result<T, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.iter.next()
    }
}

/// Opens a source (see the module documentation for what a datum is in each).
///
/// Fails only if the source cannot be opened at all (a missing file, an unreachable server, a
/// CSV column not in the header); errors further on come out of the iterator, after which it
/// ends.
pub fn open(spec: &SourceSpec) -> Result<Rows, SourceError> {
    match spec {
        SourceSpec::File { path, format } => open_input(Some(path), |input, origin| {
            from_buffered(input, format, origin)
        }),
        SourceSpec::Stdin(format) => {
            open_input(None, |input, origin| from_buffered(input, format, origin))
        }
        SourceSpec::Dir(path) => open_dir(path),
        SourceSpec::Postgres(pg) => pg::open(pg),
    }
}

/// Opens a file or standard input holding COPY data (text or binary) or CSV, as records
/// ([`copy::Record`]): every line, CSV record or tuple, split around the column (NULLs and empty
/// values included); and the layout that writes them back. Fails for other sources and
/// formats ([`SourceError::NoRecords`]).
pub fn open_records(spec: &SourceSpec) -> Result<(copy::Layout, Rows<copy::Record>), SourceError> {
    let no_records = || SourceError::NoRecords {
        origin: spec.describe(),
    };
    let (path, format) = match spec {
        SourceSpec::File { path, format } => (Some(path.as_path()), format),
        SourceSpec::Stdin(format) => (None, format),
        SourceSpec::Dir(_) | SourceSpec::Postgres(_) => return Err(no_records()),
    };
    // Refused before the input is opened.
    type Records = Result<(copy::Layout, Iter<copy::Record>), SourceError>;
    let records: Box<dyn FnOnce(Box<dyn BufRead>, String) -> Records> = match format {
        Format::Csv(options) => Box::new(|reader, origin| csv::records(reader, options, origin)),
        Format::Copy(options) => Box::new(|reader, origin| copy::records(reader, options, origin)),
        Format::Lines | Format::JsonLines | Format::Datums => return Err(no_records()),
    };
    let mut layout = None;
    let rows = open_input(path, |reader, origin| {
        let (found, records) = records(reader, origin)?;
        layout = Some(found);
        Ok(records)
    })?;
    Ok((layout.expect("set when the input opens"), rows))
}

/// Opens the file at `path` (`None`: standard input) and reads it with `read`, which is given
/// the input, buffered, and its name for messages. A regular file reports its length and the
/// bytes read; a stream (standard input, a named pipe) whether its next read may wait.
fn open_input<T>(
    path: Option<&Path>,
    read: impl FnOnce(Box<dyn BufRead>, String) -> Result<Iter<T>, SourceError>,
) -> Result<Rows<T>, SourceError> {
    match path {
        Some(path) => {
            let origin = path.display().to_string();
            let io_err = |source| SourceError::Io {
                origin: origin.clone(),
                source,
            };
            let file = File::open(path).map_err(io_err)?;
            let metadata = file.metadata().map_err(io_err)?;
            if !metadata.is_file() {
                // A named pipe or a device: read as standard input is.
                return open_stream(file, origin, read);
            }
            let len = metadata.len();
            let counter = Arc::new(AtomicU64::new(0));
            let reader = Counting {
                inner: file,
                read: counter.clone(),
            };
            let buffered = BufReader::with_capacity(READ_BUFFER, reader);
            Ok(Rows {
                iter: read(Box::new(buffered), origin)?,
                read: counter,
                len: Some(len),
                note: None,
                stream: None,
                table_read: Rc::default(),
            })
        }
        None => {
            let origin = "standard input".to_string();
            // A file of its own (a second descriptor), not `Stdin` and its buffer:
            // `Rows::may_wait` must see every byte read and not yet taken.
            match io::stdin().as_fd().try_clone_to_owned() {
                Ok(stdin) => open_stream(File::from(stdin), origin, read),
                Err(source) => Err(SourceError::Io { origin, source }),
            }
        }
    }
}

/// The rows `reader` holds in `format`, read as they are asked for; `origin` names it in
/// errors. For callers with a reader of their own (the sources above open files, standard
/// input, a directory or a server); it reports no input length.
pub fn read_rows<R: BufRead + 'static>(
    reader: R,
    format: &Format,
    origin: impl Into<String>,
) -> Result<Rows, SourceError> {
    Ok(Rows::from_rows(from_buffered(
        reader,
        format,
        origin.into(),
    )?))
}

/// A stream (standard input, a named pipe), read with `read` (see [`open_input`]); its reads
/// may wait for input that has not come: [`Rows::may_wait`] tells when.
fn open_stream<T>(
    stream: File,
    origin: String,
    read: impl FnOnce(Box<dyn BufRead>, String) -> Result<Iter<T>, SourceError>,
) -> Result<Rows<T>, SourceError> {
    let io_err = |source| SourceError::Io {
        origin: origin.clone(),
        source,
    };
    let handle = stream.try_clone().map_err(io_err)?;
    let drained = Rc::new(Cell::new(true));
    let watched = Watched {
        inner: BufReader::with_capacity(READ_BUFFER, stream),
        drained: drained.clone(),
    };
    Ok(Rows {
        iter: read(Box::new(watched), origin)?,
        read: Arc::default(),
        len: None,
        note: None,
        stream: Some(StreamWatch { drained, handle }),
        table_read: Rc::default(),
    })
}

/// What a source's reader iterates over.
type Iter<T> = Box<dyn Iterator<Item = Result<T, SourceError>>>;

type RowIter = Iter<Vec<u8>>;

/// Bytes read from a file or standard input at a time.
const READ_BUFFER: usize = 1 << 16;

/// The datums of `buffered`, in `format`; `origin` names it in errors.
fn from_buffered<R: BufRead + 'static>(
    buffered: R,
    format: &Format,
    origin: String,
) -> Result<RowIter, SourceError> {
    Ok(match format {
        Format::Lines => {
            // Binary COPY read as lines would be its bytes cut at line feeds, silently: told
            // by its first bytes when the first row is asked for (a stream may not have
            // written any yet when it is opened).
            let mut input = Some(buffered);
            let mut lines = None;
            until_error(move || {
                if let Some(input) = input.take() {
                    let (binary, input) = copy::tell_binary(input, &origin)?;
                    if binary {
                        return Err(SourceError::BinaryCopyAsLines {
                            origin: origin.clone(),
                        });
                    }
                    lines = Some(LineRows::new(input, origin.clone(), RowFormat::Lines));
                }
                match &mut lines {
                    Some(lines) => lines.next_row(),
                    None => Ok(None),
                }
            })
        }
        Format::JsonLines => {
            let mut lines = LineRows::new(buffered, origin, RowFormat::JsonLines);
            until_error(move || lines.next_row())
        }
        Format::Datums => Box::new(
            datums_file::Reader::new(buffered, origin).map(|r| r.map_err(SourceError::from)),
        ),
        Format::Csv(options) => csv::rows(buffered, options, origin)?,
        Format::Copy(options) => copy::rows(buffered, options, origin)?,
    })
}

/// A reader that counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// One step of a row iterator that stops for good at the end or after its first error (a
/// source cannot be trusted past a read or parse error): `done` records that it has stopped.
pub(crate) fn end_after_error<T, E>(
    done: &mut bool,
    row: Result<Option<T>, E>,
) -> Option<Result<T, E>> {
    let item = row.transpose();
    *done = !matches!(item, Some(Ok(_)));
    item
}

/// The items `next` reads (the next one, `None` at the end of the input), as an iterator that
/// ends at the end of the input or after the first error ([`end_after_error`]).
fn until_error<T>(mut next: impl FnMut() -> Result<Option<T>, SourceError> + 'static) -> Iter<T> {
    let mut done = false;
    Box::new(std::iter::from_fn(move || {
        if done {
            return None;
        }
        let item = next();
        end_after_error(&mut done, item)
    }))
}

/// A directory's regular files, one datum each, in file-name order.
fn open_dir(path: &Path) -> Result<Rows, SourceError> {
    let origin = path.display().to_string();
    let io_err = |origin: String| move |source| SourceError::Io { origin, source };
    let mut files = Vec::new();
    let mut len = 0;
    for entry in fs::read_dir(path).map_err(io_err(origin.clone()))? {
        let entry = entry.map_err(io_err(origin.clone()))?;
        let file = entry.path();
        // Follow symbolic links; skip subdirectories, sockets and the like, and links to
        // nothing.
        let meta = match fs::metadata(&file) {
            Ok(meta) => meta,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && entry.file_type().is_ok_and(|t| t.is_symlink()) =>
            {
                continue
            }
            Err(e) => return Err(io_err(file.display().to_string())(e)),
        };
        if meta.is_file() {
            len += meta.len();
            files.push((entry.file_name(), file));
        }
    }
    files.sort();
    let read = Arc::new(AtomicU64::new(0));
    let counter = read.clone();
    let iter = files.into_iter().map(move |(_, file)| {
        let origin = file.display().to_string();
        let meta = fs::metadata(&file).map_err(io_err(origin.clone()))?;
        if meta.len() > datums_file::MAX_DATUM_LEN as u64 {
            return Err(SourceError::TooLong {
                origin,
                what: format!("the file ({} bytes)", meta.len()),
                max: datums_file::MAX_DATUM_LEN,
            });
        }
        let datum = fs::read(&file).map_err(io_err(origin))?;
        counter.fetch_add(datum.len() as u64, Ordering::Relaxed);
        Ok(datum)
    });
    Ok(Rows {
        iter: Box::new(iter),
        read,
        len: Some(len),
        note: None,
        stream: None,
        table_read: Rc::default(),
    })
}

/// The servers a connection string connects to, libpq's defaults filled in (`?` if it does
/// not parse), for messages; never the password (see [`pgdict::conninfo::servers`]).
pub fn describe_conninfo(conninfo: &str) -> String {
    match pgdict::conninfo::parse_for_messages(conninfo) {
        Ok(info) => info.servers(),
        Err(_) => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_sample_says_its_share_to_two_digits_and_the_rows_to_three() {
        let said = |percent, estimated_rows| {
            PageSample {
                percent,
                estimated_rows,
            }
            .to_string()
        };
        assert_eq!(
            said(1.2499954, 3_000_011),
            "1.2 % of its pages (TABLESAMPLE SYSTEM; about 3,000,000 rows in all)"
        );
        assert!(said(0.9999963, 12_345_678).starts_with("1.0 % of its pages"));
        assert!(said(0.9999963, 12_345_678).ends_with("about 12,300,000 rows in all)"));
        assert!(said(33.29, 999).starts_with("33 % "));
        assert!(said(0.0001, u64::MAX).starts_with("0.0001 % "));
        assert!(said(0.0123, 1_999_999).contains("0.012 % "));
        assert!(said(0.0123, 1_999_999).contains("about 2,000,000 rows"));
    }

    #[test]
    fn a_short_sample_says_how_far_the_statistics_were_off_and_what_was_read_instead() {
        let short = ShortSample {
            percent: 13.454,
            rows: 2012,
            rows_wanted: 12_500,
            estimated_rows: 300_011,
            bytes: 201_200,
            bytes_wanted: None,
        };
        assert_eq!(
            short.note(None),
            "the table's statistics (about 300,000 rows) are out of date: 13 % of its pages \
             held 2,012 rows, fewer than the 12,500 wanted; read again whole (ANALYZE the table \
             to sample it in one read)"
        );
        let then = PageSample {
            percent: 4.7568,
            estimated_rows: 14_954,
        };
        assert!(short
            .note(Some(then))
            .contains("; read again from 4.8 % of its pages (ANALYZE"));
        let one = ShortSample { rows: 1, ..short };
        assert!(one.note(None).contains(" held 1 row, "));
        let json = short.to_json();
        assert_eq!(json["rows"], 2012);
        assert_eq!(json["table_rows_estimate"], 300_011);
        assert_eq!(
            (&json["bytes"], &json["rows_wanted"]),
            (&201_200.into(), &12_500.into())
        );
        assert!(json["bytes_wanted"].is_null() && json["bytes_counted"].is_null());

        // With a byte bound, the bytes held and wanted too ...
        let of_bytes = ShortOfBytes {
            bytes: 1_310_720,
            longest_row: 262_144,
            rows_counted: 2012,
            bytes_counted: 1_005_000,
        };
        let large = ShortSample {
            bytes: 1_005_000,
            bytes_wanted: Some(of_bytes),
            ..short
        };
        assert!(
            large.note(None).contains(
                " held 2,012 rows (1,005,000 bytes), fewer than the 12,500 rows and the \
                 1,310,720 bytes wanted; read again whole"
            ),
            "{}",
            large.note(None)
        );
        let json = large.to_json();
        assert_eq!(json["bytes_wanted"], 1_310_720);
        assert_eq!(json["rows_counted"], 2012);
        assert_eq!(json["bytes_counted"], 1_005_000);
        assert_eq!(json["longest_row_counted"], 262_144);
        // ... and which rows counted, when some did not.
        let some_too_long = ShortSample {
            rows: 6,
            bytes: 1_501_000,
            bytes_wanted: Some(ShortOfBytes {
                rows_counted: 1,
                bytes_counted: 1000,
                ..of_bytes
            }),
            ..short
        };
        assert!(
            some_too_long.note(None).contains(
                " held 6 rows (1,501,000 bytes, of which 1,000 in 1 row of at most 262,144 \
                 bytes, which count), fewer than the 12,500 rows and the 1,310,720 bytes wanted"
            ),
            "{}",
            some_too_long.note(None)
        );
    }

    fn collect(spec: &SourceSpec) -> Result<Vec<Vec<u8>>, SourceError> {
        open(spec)?.collect()
    }

    fn file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn lines_stream_and_drop_line_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), "a.txt", b"one\r\n\ntwo\nthree");
        let spec = SourceSpec::from_arg(&path, None);
        assert_eq!(
            spec,
            SourceSpec::File {
                path: path.clone(),
                format: Format::Lines
            }
        );
        let mut rows = open(&spec).unwrap();
        assert_eq!(rows.input_len(), Some(15));
        let all: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(all, [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]);
        assert_eq!(rows.input_read(), 15);

        // A carriage return with no line feed after it ends no line: the last row's.
        let path = file(dir.path(), "b.txt", b"one\r\ntwo\r");
        let all: Vec<Vec<u8>> = open(&SourceSpec::from_arg(&path, None))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(all, [b"one".to_vec(), b"two\r".to_vec()]);
    }

    #[test]
    fn json_lines_decode_strings_and_name_the_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(
            dir.path(),
            "a.jsonl",
            b"\"a\\nb\"\n{\"k\":[1,2]}\n\n42\n{oops\n\"never\"\n",
        );
        let spec = SourceSpec::from_arg(&path, None);
        let rows: Vec<_> = open(&spec).unwrap().collect();
        assert_eq!(rows.len(), 4, "stops after the error: {rows:?}");
        assert_eq!(rows[0].as_ref().unwrap(), b"a\nb");
        assert_eq!(rows[1].as_ref().unwrap(), b"{\"k\":[1,2]}");
        assert_eq!(rows[2].as_ref().unwrap(), b"42");
        let err = rows[3].as_ref().unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}:5: not a JSON value", path.display())),
            "{err}"
        );
    }

    #[test]
    fn a_byte_order_mark_before_json_lines_is_skipped_and_kept_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let bom = "\u{feff}";
        let path = file(
            dir.path(),
            "b.jsonl",
            format!("{bom}{{\"a\":1}}\n\"{bom}x\"\n").as_bytes(),
        );
        let rows = collect(&SourceSpec::from_arg(&path, None)).unwrap();
        // Only the file's first three bytes: one inside a value is part of it.
        assert_eq!(
            rows,
            [b"{\"a\":1}".to_vec(), format!("{bom}x").into_bytes()]
        );
        // Lines are bytes as they are.
        let path = file(dir.path(), "b.txt", format!("{bom}first\n").as_bytes());
        let rows = collect(&SourceSpec::from_arg(&path, None)).unwrap();
        assert_eq!(rows, [format!("{bom}first").into_bytes()]);
    }

    /// The trainer's JSON Lines reader reads what `pgdict compress` reads (`pgdict::rows`): a
    /// line of only whitespace is skipped, and a bad line is named by line and column.
    #[test]
    fn json_lines_skip_whitespace_lines_and_name_a_bad_one_by_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), "ws.jsonl", b"1\n \t\r\n\r\n2\n");
        let rows = collect(&SourceSpec::from_arg(&path, None)).unwrap();
        assert_eq!(rows, [b"1".to_vec(), b"2".to_vec()]);
        let path = file(dir.path(), "bad.jsonl", b"1\n  [1,\n");
        let err = collect(&SourceSpec::from_arg(&path, None)).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("bad.jsonl:2: not a JSON value: EOF while parsing a value at column 5"),
            "{err}"
        );
    }

    #[test]
    fn datums_file_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.datums");
        datums_file::write(&path, [&b"x\ny"[..], b"\0\xff"]).unwrap();
        let rows = collect(&SourceSpec::from_arg(&path, None)).unwrap();
        assert_eq!(rows, [b"x\ny".to_vec(), b"\0\xff".to_vec()]);
        // A damaged one names the record.
        let path = file(
            dir.path(),
            "bad.datums",
            b"\x02\x00\x00\x00ab\x05\x00\x00\x00abc",
        );
        let err = collect(&SourceSpec::from_arg(&path, None)).unwrap_err();
        assert!(
            err.to_string().contains("record 2 at byte 6 is cut off"),
            "{err}"
        );
    }

    #[test]
    fn csv_column_by_name_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(
            dir.path(),
            "a.csv",
            b"id,body\n1,\"hello, world\"\n2,\n3,\"two\nlines\"\n",
        );
        let spec = |column| SourceSpec::File {
            path: path.clone(),
            format: Format::Csv(CsvOptions::new(column)),
        };
        let by_name = collect(&spec(Column::Name("body".into()))).unwrap();
        assert_eq!(by_name, [b"hello, world".to_vec(), b"two\nlines".to_vec()]);
        let by_index = collect(&spec(Column::parse("0"))).unwrap();
        assert_eq!(by_index, [b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]);
        let err = collect(&spec(Column::Name("nope".into()))).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: no CSV column \"nope\": the header has id, body",
                path.display()
            )
        );
        let err = collect(&spec(Column::Index(5))).unwrap_err();
        assert!(err.to_string().contains(":2: no CSV column #5"), "{err}");
    }

    #[test]
    fn bad_csv_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), "bad.csv", b"a,b\n1,2\n3,4\n5,6,7\n");
        let spec = SourceSpec::File {
            path: path.clone(),
            format: Format::Csv(CsvOptions::new(Column::Index(1))),
        };
        let rows: Vec<_> = open(&spec).unwrap().collect();
        assert_eq!(rows.len(), 3);
        let err = rows[2].as_ref().unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}:4: bad CSV: 3 fields, where the records before have 2",
                path.display()
            )
        );
    }

    #[test]
    fn a_quoted_field_left_open_at_the_end_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let rows = |bytes: &[u8]| {
            let path = file(dir.path(), "q.csv", bytes);
            collect(&SourceSpec::File {
                path,
                format: Format::Csv(CsvOptions::new(Column::Index(1))),
            })
        };
        // What the CSV reader reads as it should: quotes doubled or around delimiters and line
        // feeds, `"ab"c`, a quoted field ending the input.
        let good =
            rows(b"a,b\n1,\"x \"\"y\"\"\"\n2,\"5 ft 3\"\"\"\n3,\"ab\"c\n4,\"p,\nq\"\n5,\"end\"")
                .unwrap();
        assert_eq!(
            good,
            [&b"x \"y\""[..], b"5 ft 3\"", b"abc", b"p,\nq", b"end"].map(<[u8]>::to_vec)
        );
        // A quote opened on line 3 and never closed: the reader would give lines 3 to 5 as
        // one field; the record is refused, by its first line.
        let err = rows(b"a,b\n1,ok\n2,\"open\n3,x\n4,y\n")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("q.csv:3: bad CSV: a quoted field in this record is not closed before the end of the input (the rest of the input would be read as part of it)"), "{err}");
    }

    #[test]
    fn directory_one_datum_per_file_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "b", b"second");
        file(dir.path(), "a", b"first\nwith a newline");
        file(dir.path(), "c.bin", b"\0\x01\x02");
        fs::create_dir(dir.path().join("sub")).unwrap();
        file(&dir.path().join("sub"), "z", b"not read");
        // A link to nothing is skipped too (it stopped the whole read).
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("d-dangling")).unwrap();
        let spec = SourceSpec::from_arg(dir.path(), None);
        assert_eq!(spec, SourceSpec::Dir(dir.path().to_path_buf()));
        let mut rows = open(&spec).unwrap();
        assert_eq!(rows.input_len(), Some(6 + 20 + 3));
        let all: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            all,
            [
                b"first\nwith a newline".to_vec(),
                b"second".to_vec(),
                b"\0\x01\x02".to_vec()
            ]
        );
        assert_eq!(rows.input_read(), 29);
    }

    #[test]
    fn missing_file_names_it() {
        let spec = SourceSpec::from_arg(Path::new("/nonexistent/rows.txt"), None);
        let err = open(&spec).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read /nonexistent/rows.txt: "),
            "{err}"
        );
    }

    #[test]
    fn a_named_pipe_is_a_stream_that_says_when_a_read_would_wait() {
        use std::io::Write;
        use std::sync::mpsc;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success());
        // The writer writes a part each time it is told to, then closes the pipe.
        let (tell, told) = mpsc::channel::<&str>();
        let (done, wrote) = mpsc::channel();
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            let mut pipe = File::options().write(true).open(writer_path).unwrap();
            for part in told {
                pipe.write_all(part.as_bytes()).unwrap();
                done.send(()).unwrap();
            }
        });
        tell.send("a\nb\n").unwrap();
        let spec = SourceSpec::File {
            path,
            format: Format::Lines,
        };
        let mut rows = open(&spec).unwrap();
        wrote.recv().unwrap();
        assert_eq!(rows.input_len(), None);
        assert_eq!(rows.next().unwrap().unwrap(), b"a");
        assert!(!rows.may_wait(), "b is buffered");
        assert_eq!(rows.next().unwrap().unwrap(), b"b");
        assert!(rows.may_wait(), "nothing buffered, nothing written");
        tell.send("c\n").unwrap();
        wrote.recv().unwrap();
        assert!(!rows.may_wait(), "c is ready");
        assert_eq!(rows.next().unwrap().unwrap(), b"c");
        drop(tell);
        writer.join().unwrap();
        assert!(!rows.may_wait(), "the end is ready");
        assert!(rows.next().is_none());
    }

    #[test]
    fn stdin_spec_and_descriptions() {
        assert_eq!(
            SourceSpec::from_arg(Path::new("-"), Some(Format::JsonLines)),
            SourceSpec::Stdin(Format::JsonLines)
        );
        let pg = SourceSpec::Postgres(PgSource {
            conninfo: "host=db.example port=6543 user=u password=secret".into(),
            table: "public.events".into(),
            column: "payload".into(),
            rows_wanted: None,
            bytes_wanted: None,
            seed: 0,
        });
        let text = pg.describe();
        assert_eq!(
            text,
            "table public.events column payload at db.example:6543"
        );
        assert_eq!(
            describe_conninfo("postgresql://h1,h2:7/db"),
            "h1:5432, h2:7"
        );
    }

    #[test]
    fn unreachable_server_names_host_and_port() {
        // A port nothing listens on: bind one, note it, release it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let spec = SourceSpec::Postgres(PgSource {
            conninfo: format!("host=127.0.0.1 port={port} user=postgres connect_timeout=5"),
            table: "t".into(),
            column: "c".into(),
            rows_wanted: None,
            bytes_wanted: None,
            seed: 0,
        });
        let err = open(&spec).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "cannot connect to PostgreSQL at 127.0.0.1:{port}: "
            )),
            "{err}"
        );
    }
}
