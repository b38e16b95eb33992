//! The `pgdict` command line: glue over the `pgdict` library and the `pgdict-trainer` crate.
//!
//! Every command lives in its own module under `cmd/`; this file holds the argument
//! definitions (their doc comments are the help text) and [`main`], which turns the outcome
//! into an exit status (see [`EXIT_STATUS`]) and renders errors as a title, details and a hint
//! ([`fail`]). The binary (`src/main.rs`) only calls [`main`].
//!
//! The command is a library so that the fuzz targets (`fuzz/`, a workspace of their own) reach
//! the parsers of datum inputs, which read bytes the user hands `decompress` and `inspect`:
//! they call them through the hidden `fuzzing` module. Nothing here is an API for other
//! crates.

// These pages are the command's internals, read with `--document-private-items` (.ci/run): the
// public items (`main`, the hidden `fuzzing` module) serve only the binary and the fuzz
// targets, so a public page linking a private item breaks no promise. Links must still resolve.
#![allow(rustdoc::private_intra_doc_links)]

mod cmd;
mod corpus;
mod datum_input;
mod fail;
mod in_order;
mod measure;
mod output;
mod report;
mod row_input;
mod store;
mod svg;
mod text;

/// What the fuzz target `datum_input` (`fuzz/fuzz_targets/datum_input.rs`) calls: a datum input
/// opened as `decompress` and `inspect` open it, its format told or given, also from a stream
/// whose reads the target hands out, and what telling a format makes of an input's start.
/// Hidden: neither the command's nor an API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::datum_input::{
        tell, Datum, Datums, Position, StreamRead, Told, READ_BUFFER, TEXT_WINDOW,
    };
    pub use crate::{DatumFormatArg, DatumInput};
}

use std::path::PathBuf;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use pgdict::datum::Codec;
use pgdict_trainer::source::{ColumnFlags, FormatName};

/// The exit statuses, as the top-level help lists them.
const EXIT_STATUS: &str = "\
Exit status:
  0  success, also when the reader of the output goes away early (`pgdict inspect x | head`)
  1  error: nothing more was done; the message says what failed and what to do next
     (inspect --verify: a dictionary the datums name could not be had, so they were not checked)
  2  usage: an unknown flag, a bad value, flags that do not go together; nothing was done
  3  inspect: every datum was read, but some are invalid (each is marked in the output)
  4  dict sync: the two stores hold different dictionaries under one id; nothing was changed

Environment:
  PGDICT_STORE     the dictionary store directory, when --store is not given (default: dicts)
  PGDICT_PG_STORE  a PostgreSQL store to use instead, when neither --store nor --pg-store is
                   given";

/// Dictionary-trained compression of small PostgreSQL datums
///
/// PostgreSQL compresses a value only when its row is over about 2 KB, and its pglz gives up
/// on most small JSON documents, log lines and CSV rows. pgdict trains a dictionary on sample
/// rows (content typical of the column) and compresses each value with PostgreSQL's own codecs
/// (pglz, lz4) or zstd, reading the dictionary as history that comes just before the value.
/// Each stored datum names its dictionary by id; plain pglz and lz4 datums are exactly what
/// PostgreSQL stores.
///
/// Start here:
///
///   pgdict demo                          train on the bundled sample rows, store two
///                                        dictionaries in ./dicts, print what they buy
///   pgdict compare ROWS                  what a dictionary buys on your rows, per size
///   pgdict compress ROWS -o x.datums     compress with the newest dictionary in the store
///   pgdict inspect x.datums              each datum's header: form, codec, dictionary, sizes
///   pgdict decompress x.datums           and back to rows
///   pgdict dict list                     the store's dictionaries
///
/// ROWS is a file of lines, JSON Lines (.jsonl), a length-prefixed datums file (.datums), a
/// CSV column (--csv-column), COPY ... TO output (.copy, text or binary), a directory (one
/// datum per file), or `-` for standard input.
#[derive(Debug, Parser)]
#[command(
    name = "pgdict",
    version,
    after_help = EXIT_STATUS,
    propagate_version = true,
    max_term_width = 100,
    verbatim_doc_comment
)]
struct Cli {
    #[command(flatten)]
    store: StoreArgs,

    #[command(subcommand)]
    command: Command,
}

/// Where dictionaries are kept: every command that reads or writes them takes these.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Dictionary store")]
pub struct StoreArgs {
    /// The dictionary store: a directory of dictionary files (one `NNNNNNNN.pgdict` per id).
    /// `pgdict demo` creates one.
    #[arg(
        long,
        global = true,
        env = "PGDICT_STORE",
        default_value = "dicts",
        value_name = "DIR"
    )]
    pub store: PathBuf,

    /// Use the dictionary store in a PostgreSQL database instead of the directory (the tables
    /// pgdict.dictionaries and pgdict.retired, which reach physical standbys by replication).
    /// A libpq connection string or URL: "host=db1 dbname=app user=pgdict"; read as psql
    /// reads it: a service, PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ~/.pgpass, and TLS
    /// with sslmode (verify-ca, verify-full), sslrootcert, sslcert, sslkey, PGSSL*.
    #[arg(long, global = true, env = "PGDICT_PG_STORE", value_name = "CONNINFO")]
    pub pg_store: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    Compress(CompressArgs),
    Decompress(DecompressArgs),
    Inspect(InspectArgs),
    Compare(CompareArgs),
    Dict {
        #[command(subcommand)]
        command: DictCommand,
    },
    Demo(DemoArgs),
}

/// Where rows come from (`compress`, `compare`).
#[derive(Debug, Clone, Args)]
pub struct RowInput {
    /// The rows: a file, a directory (one datum per file, in name order), or `-` for standard
    /// input.
    #[arg(value_name = "ROWS", default_value = "-")]
    pub input: PathBuf,

    /// How the input holds its rows. Without it: from the file name (.jsonl and .ndjson are
    /// JSON Lines, .datums a datums file, .copy COPY data), else lines; `csv` when
    /// --csv-column is given, `copy` when --copy-column is.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<FormatName>,

    #[command(flatten)]
    pub columns: ColumnFlags,

    /// Read the rows from a PostgreSQL table column instead of ROWS: a libpq-style connection
    /// string ('host=... port=... user=... dbname=...') or a postgresql:// URL, read as psql
    /// reads it (a service, PGHOST, PGPORT, PGUSER, ~/.pgpass, TLS settings; see --pg-store).
    /// Needs --table and --column. bytea, text, varchar, json, xml (and domains over them)
    /// arrive as PostgreSQL stores them; other types (jsonb among them) as their text output,
    /// with a note.
    #[arg(
        long,
        value_name = "CONNINFO",
        requires_all = ["table", "column"],
        conflicts_with_all = ["input", "format", "ColumnFlags"]
    )]
    pub pg_source: Option<String>,

    /// The table (or view) of --pg-source, as SQL names it: events, public.events, "Mixed".
    #[arg(long, value_name = "TABLE", requires = "pg_source")]
    pub table: Option<String>,

    /// The column of --pg-source (its name as it is, unquoted); NULLs are skipped.
    #[arg(long, value_name = "COLUMN", requires = "pg_source")]
    pub column: Option<String>,
}

/// Where datums come from (`decompress`, `inspect`).
#[derive(Debug, Clone, Args)]
pub struct DatumInput {
    /// The datums: a file, or `-` for standard input.
    #[arg(value_name = "DATUMS", default_value = "-")]
    pub input: PathBuf,

    /// How the input holds its datums. Without it: a .datums file is a datums file; otherwise
    /// an input starting with COPY's signature is binary COPY, text up to a line with `\x` is
    /// hex, text whose lines each hold one datum (the first
    /// four) escape text, and records that each hold a datum of their length (the first four)
    /// a datums file; else a datums file is tried, then varlenas back to back
    /// (standard input is then held in memory, up to 1 GiB; with --format it streams).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        conflicts_with = "ColumnFlags"
    )]
    pub format: Option<DatumFormatArg>,

    // The datums as a column of COPY data or CSV (what `compress --keep-columns` writes): a
    // bytea's text in the text format and CSV (hex, or escape format), its bytes in binary
    // COPY; NULLs skipped.
    #[command(flatten)]
    pub columns: ColumnFlags,
}

/// How a datum input holds its datums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatumFormatArg {
    /// Length-prefixed records, as `pgdict compress` writes them: u32 little-endian length,
    /// then the datum.
    Datums,
    /// Hex text, one datum per line: `\x09616263` as psql prints a bytea (aligned or `-At`
    /// output; headers and row counts are skipped), `\\x09616263` as COPY's text format
    /// writes it (psql's \copy; `\N`, a NULL, is skipped), or a bytea array `{"\\x..",NULL}`
    /// as pageinspect's tuple_data_split prints it. In a line of several fields (`|` or a tab
    /// between them), each bytea is a datum.
    Hex,
    /// Escape text, one datum per line: a bytea as psql prints it under `bytea_output =
    /// escape` (`\212\002\000...`, `\\` for a backslash), one column of `-At` output.
    Escape,
    /// Binary varlenas back to back, each as long as its own header says.
    Varlena,
    /// PostgreSQL's binary COPY of one bytea column, as `COPY (SELECT payload FROM t) TO
    /// STDOUT (FORMAT binary)` writes it (NULLs are skipped); told by its signature.
    Copy,
}

/// A codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodecArg {
    /// PostgreSQL's pglz (its default TOAST compression); a dictionary's last 4095 bytes are in
    /// reach.
    Pglz,
    /// lz4, as PostgreSQL calls it (`default_toast_compression = lz4`); 64 KB of dictionary in
    /// reach.
    Lz4,
    /// zstd, pgdict's own: stored only with a dictionary (without one, values stay raw).
    Zstd,
}

impl CodecArg {
    pub fn codec(self) -> Codec {
        match self {
            CodecArg::Pglz => Codec::Pglz,
            CodecArg::Lz4 => Codec::Lz4,
            CodecArg::Zstd => Codec::Zstd,
        }
    }
}

/// Which dictionary to compress with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DictArg {
    /// This id.
    Id(u32),
    /// The newest active dictionary built for the codec.
    Auto,
    /// None.
    None,
}

fn parse_dict_arg(text: &str) -> Result<DictArg, String> {
    match text {
        "auto" => Ok(DictArg::Auto),
        "none" => Ok(DictArg::None),
        _ => match text.parse::<u32>() {
            Ok(0) => Err("dictionary ids start at 1".into()),
            Ok(id) => Ok(DictArg::Id(id)),
            Err(_) => Err(format!(
                "`{text}` is not a dictionary id (a number from 1), `auto` or `none`"
            )),
        },
    }
}

/// `compare --dict`: as [`parse_dict_arg`], without `none`, which would leave nothing to
/// compare (it used to end in "the store has no active dictionary", which was not why).
fn parse_compare_dict_arg(text: &str) -> Result<DictArg, String> {
    match parse_dict_arg(text)? {
        DictArg::None => Err("`none` leaves nothing to compare: give a dictionary id or \
                              `auto`, or leave --dict out to train dictionaries on the rows"
            .into()),
        dict => Ok(dict),
    }
}

/// `--rounds`: 1 or more (0 was taken, and ran rounds all the same).
fn parse_rounds(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 rounds time nothing: give 1 or more".into()),
        Ok(rounds) => Ok(rounds),
        Err(_) => Err(format!("`{text}` is not a number of rounds")),
    }
}

/// A dictionary id alone (`dict show`, `dict retire`): `auto` and `none` are not ids.
fn parse_dict_id(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err("dictionary ids start at 1".into()),
        Ok(id) => Ok(id),
        Err(_) => Err(format!(
            "`{text}` is not a dictionary id (a number from 1 to {})",
            u32::MAX
        )),
    }
}

/// Which dictionary builder trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BuilderArg {
    /// pgdict's builder: knows each codec's window and match rules, checks candidates with the
    /// real codec (a few seconds per dictionary).
    Pgdict,
    /// zstd's trainer (ZDICT), the baseline: fast, its content cut to the codec's window.
    /// zstd's own dictionary is always this one's, made for zstd's format.
    Zstd,
}

impl BuilderArg {
    pub fn builder(self) -> pgdict_trainer::build::Builder {
        match self {
            BuilderArg::Pgdict => pgdict_trainer::build::Builder::Pgdict,
            BuilderArg::Zstd => pgdict_trainer::build::Builder::Zstd,
        }
    }
}

/// Compress rows into datums, each on its own, as PostgreSQL stores a value
///
/// Each row becomes the smallest of: its raw bytes, PostgreSQL's own compressed form (pglz or
/// lz4, byte-identical to what PostgreSQL writes), and the dictionary form (pgdict's header,
/// naming the dictionary's id). So no datum is ever larger than the raw value plus its 1- or
/// 4-byte header.
///
/// Output: a datums file (u32 little-endian length, then the datum, per row), or with --hex
/// one `\x...` line per datum, ready to paste into SQL as a bytea literal, or with --copy
/// PostgreSQL's binary COPY of one bytea column; or with --keep-columns the input's COPY
/// data or CSV, each row with its datum in place of the value.
///
/// Examples:
///
///   pgdict compress rows.jsonl -o rows.datums
///   pgdict compress --codec lz4 --dict 2 rows.txt --hex | head -3
///   pgdict compress rows.txt --copy | psql -c 'COPY t (payload) FROM STDIN (FORMAT binary)'
///   pgdict compress --pg-source 'dbname=app' --table events --column payload -o e.datums
///   psql -c 'COPY (SELECT id, body FROM events) TO STDOUT' \
///     | pgdict compress --keep-columns --copy-column 1 \
///     | psql -c 'COPY events_packed (id, payload) FROM STDIN'
///   pgdict compress --keep-columns --csv-column body events.csv -o packed.csv
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct CompressArgs {
    #[command(flatten)]
    rows: RowInput,

    /// The codec.
    #[arg(long, value_enum, default_value = "pglz")]
    codec: CodecArg,

    /// The dictionary: an id from the store, `auto` (the newest active dictionary built for the
    /// codec), or `none` (PostgreSQL's plain compression).
    #[arg(long, default_value = "auto", value_name = "ID|auto|none", value_parser = parse_dict_arg)]
    dict: DictArg,

    /// Write the datums to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Write one hex line per datum (`\x...`, a bytea literal) instead of a datums file.
    /// Implied when `-o`'s file name ends in `.hex`.
    #[arg(long)]
    hex: bool,

    /// Write PostgreSQL's binary COPY format of one bytea column instead of a datums file, to
    /// load with `COPY t (payload) FROM STDIN (FORMAT binary)`. Implied when `-o`'s file name
    /// ends in `.copy`.
    #[arg(long, conflicts_with = "hex")]
    copy: bool,

    /// Keep each row's other columns: read COPY data (text or binary) or CSV and write it back
    /// in the same format, each row as it came but for the --copy-column (--csv-column)
    /// value, which becomes its datum (a bytea; NULL stays NULL, an empty value is compressed
    /// as any other). The rows then load with `COPY t (id, payload) FROM STDIN` (with the
    /// input's format options), each datum beside its id.
    #[arg(long, conflicts_with_all = ["hex", "copy", "pg_source"])]
    keep_columns: bool,

    /// Print no summary on standard error.
    #[arg(short, long)]
    quiet: bool,

    /// Compress on N threads, 1 to 256 (default: one per core). The output is the same bytes
    /// for any N.
    #[arg(short, long, value_name = "N", value_parser = jobs_range())]
    jobs: Option<u16>,
}

/// Decompress datums back to rows
///
/// Reads what `pgdict compress` writes (a datums file, hex lines, binary COPY), and datums
/// copied out of PostgreSQL (psql's `\x...` output of a bytea holding a datum, a binary COPY
/// of the column, or pageinspect's raw varlenas), or the datum column of COPY data or CSV
/// (--copy-column, --csv-column; with --keep-columns the other columns are kept). Dictionaries
/// are looked up in the store by the id in each datum's header.
///
/// Examples:
///
///   pgdict decompress rows.datums
///   pgdict decompress --prefix 40 rows.datums     the first 40 bytes of each, as substr() does
///   pgdict decompress packed.csv --csv-column body --out-format jsonl
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct DecompressArgs {
    #[command(flatten)]
    datums: DatumInput,

    /// Decode only the first K bytes of each datum (what PostgreSQL does for `substr()` on a
    /// compressed value; pglz then reads only the payload bytes those K bytes need). Written as
    /// JSON Lines, a UTF-8 character the K bytes cut in two is left out.
    #[arg(long, value_name = "K")]
    prefix: Option<usize>,

    /// How to write the rows: `lines` (one per line; fails on a row with a line feed), `jsonl`
    /// (a row that is a JSON value other than a string as it is, any other row as a JSON
    /// string), `datums` (length-prefixed, any bytes), or `copy` (binary COPY of one column,
    /// any bytes: COPY t (body) FROM STDIN (FORMAT binary) loads it into a text or bytea
    /// column). Each is what `--format` reads back. Default: from the name of `-o`'s file as
    /// `--format` reads names (.jsonl/.ndjson: jsonl, .datums: datums, .copy: copy), else
    /// lines; a name saying another format than the one given (or .hex) is refused.
    #[arg(long, value_enum, value_name = "FORMAT")]
    out_format: Option<RowOutFormat>,

    /// Write the rows to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Keep each row's other columns: read COPY data (text or binary) or CSV whose
    /// --copy-column (--csv-column) holds datums (bytea: `\\x...` in the text format, `\x...`
    /// in CSV, or escape format as COPY writes it under bytea_output = escape), and write it
    /// back in the same format with each datum decompressed (NULL stays NULL). What `pgdict
    /// compress --keep-columns` wrote, or `COPY t (id, payload) TO STDOUT` of the table it was
    /// loaded into, comes back as the rows it was made from.
    #[arg(long, conflicts_with_all = ["out_format", "format"])]
    keep_columns: bool,

    /// Decompress on N threads, 1 to 256 (default: one per core). The output is the same bytes
    /// for any N.
    #[arg(short, long, value_name = "N", value_parser = jobs_range())]
    jobs: Option<u16>,
}

/// How `decompress` writes rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RowOutFormat {
    /// One row per line.
    Lines,
    /// One JSON value per line.
    Jsonl,
    /// Length-prefixed records.
    Datums,
    /// PostgreSQL's binary COPY of one column.
    Copy,
}

/// Show each datum's header: form, PostgreSQL method, codec, dictionary id, raw and stored size
///
/// Reads datums files, hex lines as psql prints a bytea (`\x09616263`, aligned or `psql -At`
/// output) or COPY's text format writes it (`\\x09616263`), bytea arrays as pageinspect's
/// `tuple_data_split` prints them, a binary COPY of a bytea column, and binary varlenas back
/// to back; and the datum column of COPY data or CSV (--copy-column, --csv-column: what
/// `compress --keep-columns` writes). Every datum is checked as a reader checks it; an invalid
/// one is marked, and the exit status is then 3.
///
/// To look at what PostgreSQL itself stored, with pageinspect (`[2]`: the column's number;
/// tuple_data_split gives every column, and an integer's bytes are no datum):
///
///   psql -At -c "SELECT (tuple_data_split('t'::regclass, t_data, t_infomask, t_infomask2,
///                t_bits))[2] FROM heap_page_items(get_raw_page('t', 0))" | pgdict inspect
///
/// The datums `compress --keep-columns` wrote beside the other columns:
///
///   pgdict inspect packed.csv --csv-column body
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
// The help is this comment as written: SQL's `[2]` is a subscript, not a link, and escaping it
// would show the backslashes.
#[allow(rustdoc::broken_intra_doc_links)]
struct InspectArgs {
    #[command(flatten)]
    datums: DatumInput,

    /// Also decode each datum (looking its dictionary up in the store) and say whether it reads
    /// back to its raw length (`ok`). A datum whose dictionary the store lacks, cannot read or
    /// holds for another codec is `unchecked`, not invalid; then the exit status is 1, unless
    /// invalid datums make it 3. A datum holds no checksum: decoded with another store's
    /// dictionary of the same id and codec it may still read back to its length, in wrong
    /// bytes (`pgdict dict sync` keeps stores from differing under one id).
    #[arg(long)]
    verify: bool,

    /// One JSON object per datum instead of the table.
    #[arg(long)]
    json: bool,
}

/// What a dictionary buys on your rows: plain pglz against pglz, lz4 and zstd with dictionaries
///
/// By default the rows are split interleaved: every second row (the 2nd, 4th, ...) trains one
/// dictionary per codec (up to 4095 bytes for pglz, 64 KB for lz4 and zstd), the others are
/// evaluated, so no row is measured with a dictionary trained on it. Rows are kept apart, not
/// values: where values repeat, an evaluated row can equal a training row, and the report says
/// how many do (a dictionary stores such a value in a few bytes). With --dict, dictionaries
/// come from the store and every row is evaluated. The rows are held in memory: up to 20,000,
/// a seeded, uniform sample of a larger input taken as it streams by (--max-rows N: 2N rows,
/// or N with --dict).
///
/// For each method: datums, raw bytes, stored bytes (whole datums, headers counted), ratio
/// (raw / stored), ratio against plain pglz (what PostgreSQL does), the share stored raw, and
/// compress and decompress speed in MB/s of raw bytes (methods timed side by side in
/// interleaved rounds, median kept; decompress reads every stored datum back). Overall and
/// per raw size: < 64 B, 64-256 B, 256 B-1 KB, 1-4 KB, >= 4 KB.
///
/// `zstd` without a dictionary is not a form pgdict stores (an extended header must name a
/// dictionary): it is counted as its frame behind a 10-byte header, as a reference.
///
/// Examples:
///
///   pgdict compare corpus/events.jsonl
///   pgdict compare --dict auto --json rows.txt
///   pgdict compare --svg ratio.svg rows.jsonl
///   pgdict compare --max-rows 50000 --pg-source 'dbname=app' --table events --column payload
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct CompareArgs {
    #[command(flatten)]
    rows: RowInput,

    /// Use dictionaries from the store instead of training: an id (repeat for several codecs;
    /// each serves the codecs it was built for) or `auto` (the newest active one per codec).
    /// Codecs without one show only their plain method.
    #[arg(long, value_name = "ID|auto", value_parser = parse_compare_dict_arg)]
    dict: Vec<DictArg>,

    /// The dictionary builder, when training.
    #[arg(long, value_enum, default_value = "pgdict")]
    builder: BuilderArg,

    /// Evaluate at most N rows: an input of more than 2N rows (N with --dict) is sampled down
    /// to that many as it is read (seeded and uniform, the rows kept in input order), then
    /// split, so that memory and time stay bounded whatever the input's size. A large table is
    /// sampled by pages first. The default trains on as many rows as pgdict-trainer does.
    #[arg(
        long,
        value_name = "N",
        default_value_t = pgdict_trainer::sample::DEFAULT_MAX_ROWS,
        value_parser = pgdict_trainer::sample::parse_max_rows
    )]
    max_rows: usize,

    /// Timing rounds, at least (each method runs once per round; the median is kept).
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = parse_rounds)]
    rounds: usize,

    /// Print a JSON report instead of the table.
    #[arg(long)]
    json: bool,

    /// Also draw the ratio of each method per size bucket as an SVG chart into FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// Manage the dictionary store: list, show, retire, sync.
#[derive(Debug, Subcommand)]
enum DictCommand {
    /// List the store's dictionaries: id, codecs, size, creation time, status, source, gain.
    List {
        /// One JSON object per dictionary instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Show one dictionary: its metadata, checksum, how it was trained and what it was measured
    /// to buy on held-out rows.
    Show {
        /// The dictionary's id.
        #[arg(value_parser = parse_dict_id)]
        id: u32,
        /// A JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Write the dictionary's content (the bytes codecs read as history) to FILE
        /// (`pgdict-trainer --content FILE` measures it on other rows and stores it anew).
        #[arg(long, value_name = "FILE")]
        content: Option<PathBuf>,
    },
    /// Retire a dictionary: it still decodes every datum that names it, but `--dict auto` no
    /// longer picks it. Its id is never reused. There is no undo. A damaged dictionary can be
    /// retired too (then `--dict auto` picks the one before it); it decodes once mended.
    Retire {
        /// The dictionary's id.
        #[arg(value_parser = parse_dict_id)]
        id: u32,
    },
    /// Copy into a store the dictionaries another store has and it lacks, verifying
    /// checksums, and retire there what is retired in the source. Refuses, changing nothing,
    /// when one id holds different dictionaries in the two (exit status 4).
    ///
    /// Run it on every node that reads datums (a standby, a backup host) before reading
    /// datums that name new dictionaries. With --repair it also mends a damaged dictionary
    /// file from the source's copy. With --pg-store (and no --to) the destination is that
    /// PostgreSQL store, on a primary: `dict sync --from dicts --pg-store CONNINFO` moves a
    /// directory's dictionaries into PostgreSQL under the same ids, so that the datums
    /// written with them decode there.
    Sync(SyncArgs),
}

#[derive(Debug, Args)]
struct SyncArgs {
    #[command(flatten)]
    from: SyncFrom,

    /// The directory store to bring up to date (created if missing). Default: --pg-store if
    /// given, else --store.
    #[arg(long, value_name = "DIR")]
    to: Option<PathBuf>,

    /// Replace each dictionary file of the destination that fails its checks (damaged, or
    /// filed under another id) with the source's dictionary of that id. The damaged file is
    /// kept beside it, hidden (`.damaged-ID-...`). Only for stores kept in step from one
    /// source, where an id names the same dictionary everywhere: a damaged file cannot show
    /// what it held. Without it, a damaged file stops the sync and nothing is written.
    #[arg(long)]
    repair: bool,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct SyncFrom {
    /// Copy from this directory store.
    #[arg(long, value_name = "DIR")]
    from: Option<PathBuf>,

    /// Copy from this PostgreSQL store (a libpq connection string or URL).
    #[arg(long, value_name = "CONNINFO")]
    from_pg: Option<String>,
}

/// The quick start: train, store, compress and compare on bundled sample rows.
///
/// Reads the sample rows in ./corpus (or, from any other directory, the copy built into the
/// binary), splits them interleaved, trains a pglz and an lz4 dictionary on one half, adds them
/// to the store (./dicts unless --store says otherwise), compresses the other half one row
/// at a time, and prints the comparison table of `pgdict compare`. Needs no database.
#[derive(Debug, Args)]
struct DemoArgs {
    /// Which sample rows.
    #[arg(long, value_enum, default_value = "events")]
    sample: corpus::Sample,

    /// The dictionary builder.
    #[arg(long, value_enum, default_value = "pgdict")]
    builder: BuilderArg,

    /// Timing rounds, at least.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = parse_rounds)]
    rounds: usize,
}

/// The most threads `compress` and `decompress` work on. Two batches (of up to 1 MiB of input
/// each) a thread are in flight, so this bounds their memory at 512 batches, and starting
/// threads fails long before `u16::MAX` (at about 16,000 on Linux's 65,530 memory maps a
/// process, or sooner under a limit of address space).
const MAX_JOBS: u16 = 256;

/// What --jobs takes: 1 to [`MAX_JOBS`].
fn jobs_range() -> clap::builder::RangedI64ValueParser<u16> {
    clap::value_parser!(u16).range(1..=i64::from(MAX_JOBS))
}

/// Threads that `compress` and `decompress` work on when --jobs does not say: one per core, at
/// most [`MAX_JOBS`].
fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(usize::from(MAX_JOBS)))
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let store = &cli.store;
    match cli.command {
        Command::Compress(args) => cmd::compress::run(store, &args),
        Command::Decompress(args) => cmd::decompress::run(store, &args),
        Command::Inspect(args) => cmd::inspect::run(store, &args),
        Command::Compare(args) => cmd::compare::run(store, &args),
        Command::Dict { command } => cmd::dict::run(store, command),
        Command::Demo(args) => cmd::demo::run(store, &args),
    }
}

/// Where `--store` and `--pg-store` got their values, wherever on the command line they
/// were given (they are global: before the command or after it).
fn store_sources(matches: &clap::ArgMatches) -> [Option<ValueSource>; 2] {
    let mut sources = ["store", "pg_store"].map(|id| matches.value_source(id));
    if let Some((_, sub)) = matches.subcommand() {
        for (source, deeper) in sources.iter_mut().zip(store_sources(sub)) {
            // The command line outranks the environment, which outranks a default.
            *source = (*source).max(deeper);
        }
    }
    sources
}

/// The store the arguments choose, as the trainer chooses it
/// ([`pgdict_trainer::chosen_pg_store`]).
fn choose_store(cli: &mut Cli, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
    let [store, pg_store] = store_sources(matches);
    cli.store.pg_store =
        pgdict_trainer::chosen_pg_store(store, pg_store, cli.store.pg_store.take()).map_err(
            |conflict| Cli::command().error(clap::error::ErrorKind::ArgumentConflict, conflict),
        )?;
    Ok(())
}

/// The `pgdict` command: parses the command line, runs the command, and says how it went as
/// the exit status ([`EXIT_STATUS`]).
pub fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)))
        .and_then(|(mut cli, matches)| choose_store(&mut cli, &matches).map(|()| cli));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout with status 0; usage errors to stderr with 2.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(status) => ExitCode::from(status),
        Err(error) => ExitCode::from(fail::report(&error)),
    }
}
