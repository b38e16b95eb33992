//! `pgdict-trainer`: one command from "a table of small values" to "a dictionary in the store,
//! and what it buys". See `pgdict-trainer --help`.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use pgdict::datum::{dict_id_len, Codec};
use pgdict::dict::file::MAX_CONTENT_LEN;
use pgdict::dict::{CodecSet, DirStore, PgStore, StoreError};
use pgdict_trainer::eval::EVAL_DICT_ID;
use pgdict_trainer::progress::{counted, thousands, Bars};
use pgdict_trainer::source::{
    self, ColumnFlags, FormatName, PageSample, PgSource, ShortSample, SourceSpec,
};
use pgdict_trainer::{
    check_content, evaluation_json, is_dictionary_file, measure_content, round3, sample_source,
    store, train_split, Builder, Method, SampleOptions, StoreTarget, TrainError, TrainOptions,
    Trained, DICTIONARY_FILE_HINT,
};
use serde_json::{json, Map, Value};

/// Exit status: a dictionary was refused as not helping.
const EXIT_REFUSED: u8 = 3;

const AFTER_HELP: &str = "\
HOW IT WORKS:
  1. Sample: rows stream from SOURCE through a seeded reservoir sampler (the same --seed and
     input give the same sample). Each row is held out with probability --holdout; held-out
     rows are never trained on.
  2. Build: a dictionary of --size bytes for the codec. pglz can reach only the last 4095
     bytes of a dictionary, lz4 the last 64 KiB; pgdict's builder knows this and checks its
     candidates with the real codec. A zstd dictionary is zstd's trainer's, in zstd's format
     (entropy tables, then content). With --content FILE nothing is built: FILE is the
     dictionary, and every sampled row is held out.
  3. Evaluate: every held-out row is stored alone, as pgdict stores it (whole datum, header
     counted, with the id the store gives next; the smallest of raw, plain and dictionary
     form): plain pglz (PostgreSQL's default), pglz with the dictionary, plain lz4, lz4
     with the dictionary, and for a zstd dictionary zstd with it. The report gives ratios
     (raw/stored) per size bucket and speeds.
  4. Store: if the dictionary saves at least 1% of what plain compression stores with its
     codec (plain pglz for zstd, which pgdict stores only with a dictionary), and 1% of what
     the codec stores with an empty dictionary (the dictionary form's own saving), it is
     added to the store and its new id printed. Otherwise it is refused (exit 3) unless
     --force.

SOURCES:
  rows.txt               one datum per line (line feed not included; empty lines skipped)
  rows.jsonl             JSON Lines: a JSON string is its decoded text, other values the line
  rows.datums            length-prefixed: u32 little-endian length, then the bytes (binary ok)
  rows.csv --csv-column body      one CSV column, by header name or 0-based index
  rows.copy              what COPY (SELECT body FROM t) TO STDOUT writes, text or
                         (FORMAT binary); of several columns --copy-column picks one
                         (CSV and COPY data in the database's encoding, or UTF-8: not in
                         SJIS, BIG5, GBK, UHC, GB18030 or JOHAB, whose characters may hold
                         the bytes of \\ and \", which COPY leaves unescaped in them)
  DIR/                   one datum per regular file, in file-name order
  -                      standard input (--format says how it holds datums; lines by default)
  --pg-source 'host=db user=app dbname=app' --table events --column payload
                         a PostgreSQL column (bytea as bytes, other types as text); large
                         tables are sampled by pages (TABLESAMPLE SYSTEM ... REPEATABLE)

EXIT STATUS:
  0  the dictionary was built, helps, and was stored (or --dry-run)
  1  error: unreadable source, no rows, unreachable database, store failure, ...
  2  usage error: bad or missing arguments
  3  no dictionary helps: the one built does not save at least 1% on the held-out rows
     (--force stores it anyway), or the rows share nothing to build one from (random or
     already compressed data), or are too few (to hold some out; for zstd's trainer); with
     --codec both, the other dictionary may have been stored

EXAMPLES:
  pgdict-trainer rows.jsonl                     train a 4 KB pglz dictionary into dicts/
  pgdict-trainer --codec both --json rows.txt   pglz and lz4 dictionaries, JSON report
  pgdict-trainer --codec zstd rows.jsonl        a 64 KB zstd dictionary (not PostgreSQL's)
  pgdict-trainer --dry-run --builder zstd rows.txt   measure zstd's trainer, store nothing
  pgdict dict show 3 --content d3.bin && pgdict-trainer --codec lz4 --content d3.bin \\
      --store other rows.txt                    lz4 dictionary 3 of one store, measured on
                                                these rows, into another under a new id
                                                (--codec as `dict show` says: pglz is the
                                                default)";

/// Train a compression dictionary for small PostgreSQL values, measure what it buys on rows
/// it was not trained on, and add it to a pgdict dictionary store.
#[derive(Debug, Parser)]
#[command(name = "pgdict-trainer", version, after_help = AFTER_HELP)]
struct Args {
    /// The rows to train on: a file, a directory (one datum per file) or `-` for standard
    /// input. Not with --pg-source.
    #[arg(value_name = "SOURCE", required_unless_present = "pg_source")]
    source: Option<PathBuf>,

    /// How SOURCE holds datums. Default: from the file name (.jsonl/.ndjson: jsonl,
    /// .datums: datums, .copy: copy, else lines); csv when --csv-column is given, copy when
    /// --copy-column is.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<FormatName>,

    #[command(flatten)]
    columns: ColumnFlags,

    /// Sample a PostgreSQL table column instead of SOURCE: a libpq-style connection string
    /// ('host=... port=... user=... dbname=...') or a postgresql:// URL, read as psql reads
    /// it: a service, PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ~/.pgpass, and TLS with
    /// sslmode (verify-ca, verify-full), sslrootcert, sslcert, sslkey, PGSSL*.
    /// Needs --table and --column.
    #[arg(
        long,
        value_name = "CONNINFO",
        requires_all = ["table", "column"],
        conflicts_with_all = ["source", "format", "ColumnFlags"]
    )]
    pg_source: Option<String>,

    /// The table (or view) to sample, as SQL names it: events, public.events, "Mixed".
    #[arg(long, value_name = "TABLE", requires = "pg_source")]
    table: Option<String>,

    /// The column to sample (its name as it is, unquoted).
    #[arg(long, value_name = "COLUMN", requires = "pg_source")]
    column: Option<String>,

    /// The codec the dictionary is for: pglz (PostgreSQL's default compression), lz4
    /// (default_toast_compression = lz4), both (two dictionaries, one each), or zstd
    /// (pgdict's own datums only: PostgreSQL cannot read them).
    #[arg(long, value_enum, default_value_t = CodecArg::Pglz)]
    codec: CodecArg,

    /// Dictionary size in bytes (K, M suffixes: KiB, MiB), at most 1 MiB (a dictionary file's
    /// limit), and where zstd's trainer builds (zstd, lz4 with --builder zstd) at least 256.
    /// Default: 4096 for pglz (it reaches the last 4095 bytes), 65536 for lz4 (its window) and
    /// zstd.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    size: Option<usize>,

    /// Which builder: pgdict (codec-aware, refined with the real codec) or zstd (zstd's
    /// trainer, the baseline, its content cut to the codec's window). A zstd dictionary is
    /// always zstd's trainer's, made for its format.
    #[arg(long, value_enum, default_value_t = BuilderArg::Pgdict)]
    builder: BuilderArg,

    /// Measure and store FILE's bytes (`-`: standard input, with the rows elsewhere) as the
    /// dictionary instead of building one: a dictionary made elsewhere, or written out of a
    /// store by `pgdict dict show ID --content FILE` (a store's .pgdict file itself is
    /// refused). Every sampled row is held out (nothing is trained on; rows the content was
    /// made from flatter it); the dictionary is then judged and stored as a built one, under a
    /// new id. Not with --builder, --size or --holdout.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["builder", "size", "holdout"]
    )]
    content: Option<PathBuf>,

    /// Seed of the sampling draw: the same seed and input give the same sample, and so the
    /// same dictionary.
    #[arg(long, default_value_t = 0)]
    seed: u64,

    /// Training rows to keep at most (more rows: a better dictionary, a slower build).
    #[arg(
        long,
        value_name = "N",
        default_value_t = pgdict_trainer::sample::DEFAULT_MAX_ROWS,
        value_parser = pgdict_trainer::sample::parse_max_rows
    )]
    max_rows: usize,

    /// Training bytes to keep at most (K, M, G suffixes). Rows longer than this are skipped.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_bytes)]
    max_bytes: usize,

    /// Share of rows held out to measure the dictionary on, never trained on (0 to 0.9).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.2, value_parser = parse_holdout)]
    holdout: f64,

    /// The directory store to add the dictionary to (created if missing).
    #[arg(
        long,
        value_name = "DIR",
        env = "PGDICT_STORE",
        default_value = "dicts"
    )]
    store: PathBuf,

    /// Add the dictionary to the PostgreSQL store (table pgdict.dictionaries, created if
    /// missing) at this connection string, instead of a directory. From PGDICT_PG_STORE when
    /// neither --store nor --pg-store is given, as for `pgdict`.
    #[arg(long, value_name = "CONNINFO", env = "PGDICT_PG_STORE")]
    pg_store: Option<String>,

    /// Store the dictionary even if it does not help on the held-out rows.
    #[arg(long)]
    force: bool,

    /// Build and evaluate, but store nothing.
    #[arg(long)]
    dry_run: bool,

    /// No progress bars and no report: print only the new dictionary id(s).
    #[arg(long, short)]
    quiet: bool,

    /// Print a JSON report on standard output (one object per dictionary, one per line)
    /// instead of the text report.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CodecArg {
    Pglz,
    Lz4,
    Both,
    Zstd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BuilderArg {
    Pgdict,
    Zstd,
}

fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("unknown unit {unit:?} (use K, M or G)")),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a byte count"))?;
    n.checked_mul(1 << shift)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text} is out of range (1 byte and up)"))
}

/// A dictionary size: [`parse_bytes`], at most what a dictionary file holds (checked before
/// any work, not when storing).
fn parse_size(text: &str) -> Result<usize, String> {
    let size = parse_bytes(text)?;
    if size > MAX_CONTENT_LEN {
        return Err(format!(
            "{text} is over {MAX_CONTENT_LEN} bytes, the most a dictionary file holds"
        ));
    }
    Ok(size)
}

fn parse_holdout(text: &str) -> Result<f64, String> {
    let share: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if (0.0..=0.9).contains(&share) {
        Ok(share)
    } else {
        Err(format!("{share} is not between 0 and 0.9"))
    }
}

/// An error for the user: what failed, and what to do about it.
struct Failure {
    message: String,
    hint: Option<&'static str>,
    code: u8,
}

impl From<TrainError> for Failure {
    fn from(error: TrainError) -> Failure {
        let hint = match &error {
            TrainError::NoRows { .. } | TrainError::NoRowsToMeasure { .. } => Some(
                "check that the source holds rows and that --format matches it; rows longer \
                 than --max-bytes are skipped",
            ),
            TrainError::Source(error) => error.hint(),
            TrainError::AllHeldOut { .. }
            | TrainError::Build(
                pgdict_trainer::BuildError::NothingToLearn { rows: 1, .. }
                | pgdict_trainer::BuildError::TooFewRowsForZstd { .. },
            ) => Some(
                "give more rows (a whole column, or thousands of them); --holdout sets the share \
                      held out from training to measure the dictionary",
            ),
            TrainError::Build(pgdict_trainer::BuildError::TooSmallForZstd { .. }) => None,
            TrainError::Build(_) => Some(
                "the rows may share too little (random or already compressed data), or --size \
                 leaves too little room for what they share",
            ),
            _ => None,
        };
        let code = match error {
            TrainError::DoesNotHelp { .. }
            | TrainError::ContentDoesNotHelp { .. }
            | TrainError::NothingHeldOut
            | TrainError::AllHeldOut { .. }
            | TrainError::Build(
                pgdict_trainer::BuildError::NothingToLearn { .. }
                | pgdict_trainer::BuildError::TooFewRowsForZstd { .. },
            ) => EXIT_REFUSED,
            _ => 1,
        };
        Failure {
            message: error.to_string(),
            hint,
            code,
        }
    }
}

fn main() -> ExitCode {
    // clap exits with 2 on a usage error, 0 for --help and --version.
    let matches = Args::command().get_matches();
    let mut args = match Args::from_arg_matches(&matches) {
        Ok(args) => args,
        Err(error) => error.exit(),
    };
    // The store is chosen as `pgdict` chooses it.
    args.pg_store = match pgdict_trainer::chosen_pg_store(
        matches.value_source("store"),
        matches.value_source("pg_store"),
        args.pg_store.take(),
    ) {
        Ok(pg_store) => pg_store,
        Err(conflict) => Args::command()
            .error(ErrorKind::ArgumentConflict, conflict)
            .exit(),
    };
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            let mut stderr = io::stderr().lock();
            let _ = writeln!(stderr, "pgdict-trainer: error: {}", failure.message);
            if let Some(hint) = failure.hint {
                let _ = writeln!(stderr, "  hint: {hint}");
            }
            ExitCode::from(failure.code)
        }
    }
}

fn source_spec(args: &Args) -> Result<SourceSpec, Failure> {
    let usage = |message: String| Failure {
        message,
        hint: None,
        code: 2,
    };
    if let Some(conninfo) = &args.pg_source {
        let sampling = sample_options(args);
        return Ok(SourceSpec::Postgres(PgSource {
            conninfo: conninfo.clone(),
            table: args.table.clone().unwrap_or_default(),
            column: args.column.clone().unwrap_or_default(),
            rows_wanted: Some(sampling.rows_wanted()),
            bytes_wanted: Some(sampling.bytes_wanted()),
            seed: args.seed,
        }));
    }
    let Some(path) = &args.source else {
        return Err(usage("give a SOURCE or --pg-source".into()));
    };
    let stdin = Path::new("-");
    if path == stdin && args.content.as_deref() == Some(stdin) {
        return Err(usage(
            "standard input cannot hold both the rows (SOURCE -) and the dictionary content \
             (--content -): give one of them as a file"
                .into(),
        ));
    }
    let format = args
        .columns
        .format(args.format)
        .map_err(|conflict| Failure {
            message: conflict.message,
            hint: Some(conflict.hint),
            code: 2,
        })?;
    Ok(SourceSpec::from_arg(path, format))
}

/// What `--content -` names.
const STDIN_NAME: &str = "standard input";

/// Where `--content` content comes from, for messages and metadata: the file, or
/// [`STDIN_NAME`].
fn content_name(path: &Path) -> String {
    if path == Path::new("-") {
        STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// The dictionary content `--content` names (`-`: standard input), checked as
/// [`measure_content`] checks it.
fn read_content(path: &Path, codecs: CodecSet) -> Result<Vec<u8>, Failure> {
    let fail = |message: String| Failure {
        message,
        hint: None,
        code: 1,
    };
    let stdin = path == Path::new("-");
    let name = match content_name(path) {
        name if stdin => format!("on {name}"),
        name => name,
    };
    // No more than a dictionary may hold is read, and one byte to tell that there is more.
    let mut content = Vec::new();
    let limit = MAX_CONTENT_LEN as u64 + 1;
    let read = if stdin {
        std::io::stdin()
            .lock()
            .take(limit)
            .read_to_end(&mut content)
    } else {
        std::fs::File::open(path).and_then(|file| file.take(limit).read_to_end(&mut content))
    };
    read.map_err(|e| fail(format!("cannot read the dictionary content {name}: {e}")))?;
    check_content(&content, codecs).map_err(|why| Failure {
        hint: is_dictionary_file(&content).then_some(DICTIONARY_FILE_HINT),
        ..fail(format!("the dictionary content {name} {why}"))
    })?;
    Ok(content)
}

/// What a codec cannot reach of given content `len` bytes long, if anything: pglz reaches
/// only the last 4095 bytes of a dictionary, lz4 the last 64 KiB.
fn beyond_reach(codec: Codec, len: usize) -> Option<String> {
    let reach = match codec {
        Codec::Pglz => pgdict::pglz::DICT_WINDOW,
        Codec::Lz4 => pgdict::lz4::DICT_WINDOW,
        Codec::Zstd => return None,
    };
    (len > reach).then(|| {
        format!(
            "{codec} reaches only the last {} bytes of the {}-byte content: the first {} are \
             stored but never used",
            thousands(reach as u64),
            thousands(len as u64),
            thousands((len - reach) as u64)
        )
    })
}

fn sample_options(args: &Args) -> SampleOptions {
    SampleOptions {
        seed: args.seed,
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
        holdout: args.holdout,
    }
}

fn run(args: &Args) -> Result<u8, Failure> {
    let spec = source_spec(args)?;
    let described = spec.describe();
    let options = sample_options(args);
    let bars = Bars::new(args.quiet);
    let target = match &args.pg_store {
        Some(conninfo) => StoreTarget::Pg(conninfo.clone()),
        None => StoreTarget::Dir(args.store.clone()),
    };

    let codecs: &[Codec] = match args.codec {
        CodecArg::Pglz => &[Codec::Pglz],
        CodecArg::Lz4 => &[Codec::Lz4],
        CodecArg::Both => &[Codec::Pglz, Codec::Lz4],
        CodecArg::Zstd => &[Codec::Zstd],
    };
    let builder = match args.builder {
        BuilderArg::Pgdict => Builder::Pgdict,
        BuilderArg::Zstd => Builder::Zstd,
    };
    if let Some(size) = args.size {
        for &codec in codecs {
            let least = builder.min_size(codec);
            if size < least {
                return Err(Failure {
                    message: format!(
                        "--size {size} is too small: zstd's trainer, which builds {codec} \
                         dictionaries{}, makes them of {least} bytes or more",
                        if codec == Codec::Zstd {
                            ""
                        } else {
                            " with --builder zstd"
                        },
                    ),
                    hint: None,
                    code: 2,
                });
            }
        }
    }

    // A store that could not take the dictionary fails now, not after the work of training:
    // an unreachable PostgreSQL store or one on a standby, a directory store on a read-only
    // file system (which is created only when a dictionary goes into it).
    let next_id = next_id(&target, args.dry_run).map_err(TrainError::from)?;

    // Given content is read and checked before the rows are.
    let content = match &args.content {
        Some(path) => {
            let content = read_content(path, CodecSet::of(codecs))?;
            for &codec in codecs {
                if let Some(note) = beyond_reach(codec, content.len()) {
                    eprintln!("pgdict-trainer: note: {note}");
                }
            }
            Some(content)
        }
        None => None,
    };

    let start = Instant::now();
    let mut rows = source::open(&spec).map_err(TrainError::from)?;
    // A note is about what the dictionary will fit: worth saying even with --quiet.
    if let Some(note) = rows.note() {
        eprintln!("pgdict-trainer: note: {note}");
    }
    let mut sample =
        sample_source(&mut rows, &options, &described, &bars).map_err(|error| match error {
            TrainError::NoRows { origin, seen } if content.is_some() => {
                TrainError::NoRowsToMeasure { origin, seen }
            }
            error => error,
        })?;
    if content.is_some() {
        // Nothing is trained on: every row measures the dictionary.
        let train = std::mem::take(&mut sample.train);
        sample.eval.extend(train);
    }
    let page_sample = rows.page_sample();
    let short_sample = rows.short_sample();
    drop(rows);
    let sample_seconds = start.elapsed().as_secs_f64();

    let mut out = Output::new(args);
    let of_pages = page_sample.map_or(String::new(), |sample| format!(" from {sample}"));
    let sampled = match &content {
        Some(_) => format!(
            "{} ({} bytes), all held out: the dictionary is given",
            counted(sample.eval.len() as u64, "row"),
            thousands(sample.eval.iter().map(Vec::len).sum::<usize>() as u64),
        ),
        None => format!(
            "{} ({} bytes), {} held out",
            counted(sample.train.len() as u64, "training row"),
            thousands(sample.train.iter().map(Vec::len).sum::<usize>() as u64),
            thousands(sample.eval.len() as u64),
        ),
    };
    out.text(&format!(
        "source: {described}: {}, {} bytes read in {sample_seconds:.2} s{of_pages}\n\
         sample: {sampled} (seed {})\n",
        counted(sample.rows_seen, "row"),
        thousands(sample.bytes_seen),
        args.seed,
    ))?;
    if let Some(short) = short_sample {
        out.text(&format!("note: {}\n", short.note(page_sample)))?;
    }
    let repeated = pgdict_trainer::sample::held_out_repeats(&sample.train, &sample.eval);
    if repeated > 0 && content.is_none() {
        // The split keeps rows apart, not values: a value that repeats can fall on both sides,
        // and a dictionary holding it stores its held-out copies in a few bytes.
        let note = pgdict_trainer::sample::held_out_repeats_note(
            repeated,
            sample.eval.len() as u64,
            "held-out",
        );
        out.text(&format!("note: {note}\n"))?;
    }
    if sample.rows_too_long > 0 {
        out.text(&format!(
            "note: {} left out, each longer than the sample may hold in all (--max-bytes {}; \
             {} for the held-out rows)\n",
            counted(sample.rows_too_long, "row"),
            thousands(options.max_bytes as u64),
            thousands(options.holdout_limits().max_bytes as u64),
        ))?;
    }

    let mut refused = false;
    let mut stored = 0;
    for &codec in codecs {
        // With --codec both, the second dictionary takes the id after the first's.
        let dict_id = next_id.saturating_add(stored);
        let train_options = TrainOptions {
            codec,
            builder,
            size: args.size,
            holdout: args.holdout,
            seed: args.seed,
            dict_id,
        };
        let trained = match &content {
            Some(content) => measure_content(content.clone(), dict_id, &sample.eval, codec, &bars)?,
            None => train_split(&sample.train, &sample.eval, &train_options, &bars)?,
        };
        let verdict = trained.check_helps();
        let mut report = Report {
            trained: &trained,
            page_sample,
            short_sample,
            held_out_repeats: repeated,
            dict_id: None,
            store: None,
            refused: None,
        };
        match verdict {
            Err(error) if !args.force => {
                refused = true;
                report.refused = Some(error.to_string());
            }
            _ if args.dry_run => {}
            _ => {
                let mut parameters = Map::new();
                parameters.insert("seed".into(), args.seed.into());
                parameters.insert("max_rows".into(), (args.max_rows as u64).into());
                parameters.insert("max_bytes".into(), (args.max_bytes as u64).into());
                if content.is_none() {
                    parameters.insert("holdout".into(), json!(args.holdout));
                }
                parameters.insert("rows_seen".into(), sample.rows_seen.into());
                // How a table's rows were read: from a share of its pages (none: whole), after
                // a sample that held too few, if one did.
                if let Some(pages) = page_sample {
                    parameters.insert("table_sample_percent".into(), pages.percent.into());
                }
                if let Some(short) = short_sample {
                    parameters.insert("table_short_sample".into(), short.to_json());
                }
                parameters.insert("forced".into(), (args.force && !trained.helps()).into());
                if let Some(path) = &args.content {
                    parameters.insert("content_file".into(), content_name(path).into());
                }
                let metadata = trained.metadata(&described, parameters);
                let dict = match store(&target, &trained, metadata) {
                    Ok(dict) => dict,
                    Err(error) => return Err(unstored(error, &trained, &described)),
                };
                stored += 1;
                report.dict_id = Some(dict.id());
                report.store = Some(target.describe());
            }
        }
        out.report(&report, &sample, args)?;
        if let Some(message) = &report.refused {
            let mut stderr = io::stderr().lock();
            let _ = writeln!(stderr, "pgdict-trainer: refused: {message}");
        }
    }
    Ok(if refused { EXIT_REFUSED } else { 0 })
}

/// The failure of a store that did not take `trained`, with the dictionary kept in a file
/// (in the current directory, else the temporary one), so that the work of sampling and
/// building is not lost: its content, which `--content` stores without building it again.
fn unstored(error: TrainError, trained: &Trained, described: &str) -> Failure {
    let mut failure = Failure::from(error);
    if trained.content.is_empty() {
        return failure;
    }
    let name = format!(
        "pgdict-unstored-{}-{}.bin",
        trained.codec.name(),
        std::process::id()
    );
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        let path = dir.join(&name);
        // A new file only: nothing of the user's is overwritten.
        let Ok(mut file) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        else {
            continue;
        };
        if file
            .write_all(&trained.content)
            .and_then(|()| file.sync_all())
            .is_err()
        {
            drop(file);
            let _ = std::fs::remove_file(&path);
            continue;
        }
        failure.message.push_str(&format!(
            "\nthe dictionary ({} bytes) is kept in {}: `pgdict-trainer --content {} --codec {}` \
             with the same source ({described}) measures and stores it without building it again",
            thousands(trained.content.len() as u64),
            path.display(),
            path.display(),
            trained.codec.name(),
        ));
        break;
    }
    failure
}

/// The id the store will give the next dictionary, which it is measured under: its header
/// holds the id, 1 byte long up to 127, 2 bytes up to 16,383. Checks first that the store can
/// take a dictionary (not with `dry_run`, which reads a directory store if there is one and
/// leaves a PostgreSQL store alone: measured as dictionary 1).
fn next_id(target: &StoreTarget, dry_run: bool) -> Result<u32, StoreError> {
    match target {
        StoreTarget::Pg(_) if dry_run => Ok(EVAL_DICT_ID),
        StoreTarget::Pg(conninfo) => {
            let store = PgStore::connect(conninfo)?;
            store.check_writable()?;
            store.next_id()
        }
        StoreTarget::Dir(path) => {
            if !dry_run {
                DirStore::check_can_add(path)?;
            }
            match DirStore::open(path) {
                Ok(store) => store.next_id(),
                // Not made yet (it is, by the first dictionary added).
                Err(StoreError::NotAStore { .. }) if !path.exists() => Ok(1),
                Err(error) => Err(error),
            }
        }
    }
}

/// One dictionary's outcome.
struct Report<'a> {
    trained: &'a Trained,
    /// How the source table was sampled by pages, if it was.
    page_sample: Option<PageSample>,
    /// A page sample of the source table that held too few rows, if one did: it was read again.
    short_sample: Option<ShortSample>,
    /// How many held-out rows equal a training row ([`pgdict_trainer::sample::held_out_repeats`]).
    held_out_repeats: u64,
    dict_id: Option<u32>,
    store: Option<String>,
    refused: Option<String>,
}

/// Standard output, in the mode asked for; a closed pipe ends output quietly.
struct Output {
    json: bool,
    quiet: bool,
    closed: bool,
}

impl Output {
    fn new(args: &Args) -> Output {
        Output {
            json: args.json,
            quiet: args.quiet,
            closed: false,
        }
    }

    fn write(&mut self, text: &str) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        let mut stdout = io::stdout().lock();
        match stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(Failure {
                message: format!("cannot write to standard output: {e}"),
                hint: None,
                code: 1,
            }),
        }
    }

    /// Text for the human report only.
    fn text(&mut self, text: &str) -> Result<(), Failure> {
        if self.json || self.quiet {
            return Ok(());
        }
        self.write(text)
    }

    fn report(
        &mut self,
        report: &Report,
        sample: &pgdict_trainer::sample::Sample,
        args: &Args,
    ) -> Result<(), Failure> {
        if self.json {
            let line = json_report(report, sample, args).to_string() + "\n";
            return self.write(&line);
        }
        if self.quiet {
            return match report.dict_id {
                Some(id) => self.write(&format!("{id}\n")),
                None => Ok(()),
            };
        }
        let text = text_report(report, args);
        self.write(&text)
    }
}

fn json_report(report: &Report, sample: &pgdict_trainer::sample::Sample, args: &Args) -> Value {
    let t = report.trained;
    json!({
        "dict_id": report.dict_id,
        "stored": report.dict_id.is_some(),
        "store": report.store,
        "dry_run": args.dry_run,
        "refused": report.refused,
        "codec": t.codec.name(),
        "dict_bytes": t.content.len(),
        "measured_as_id": t.measured_as_id,
        "size": t.size,
        "builder": t.builder.map(Builder::name),
        "content_file": args.content.as_deref().map(content_name),
        "train_seconds": round3(t.train_seconds),
        "seed": args.seed,
        "sample": {
            "rows_seen": sample.rows_seen,
            "bytes_seen": sample.bytes_seen,
            "train_rows": t.train_rows,
            "train_bytes": t.train_bytes,
            "holdout_rows": sample.eval.len(),
            "holdout_rows_identical_to_training_rows": report.held_out_repeats,
            "rows_too_long": sample.rows_too_long,
            "table_sample_percent": report.page_sample.map(|pages| pages.percent),
            "table_rows_estimate": report.page_sample.map(|pages| pages.estimated_rows),
            "table_short_sample": report.short_sample.map(|short| short.to_json()),
        },
        "helps": t.helps(),
        "gain_vs_pglz": round3(t.gain_vs_pglz()),
        "gain_vs_lz4": round3(t.gain_vs_lz4()),
        "eval": evaluation_json(&t.evaluation),
    })
}

fn text_report(report: &Report, args: &Args) -> String {
    let t = report.trained;
    let mut s = String::new();
    let _ = match &args.content {
        Some(path) => writeln!(
            s,
            "\n{} dictionary: {} bytes given {}, not built",
            t.codec,
            t.content.len(),
            match content_name(path).as_str() {
                STDIN_NAME => format!("on {STDIN_NAME}"),
                file => format!("in {file}"),
            }
        ),
        None => writeln!(
            s,
            "\n{} dictionary: {} bytes (size {}), builder {}, built in {:.2} s from {}",
            t.codec,
            t.content.len(),
            t.size,
            t.builder_name(),
            t.train_seconds,
            counted(t.train_rows, "row")
        ),
    };
    if t.evaluation.all.datums == 0 {
        let _ = writeln!(s, "held-out rows: none, so nothing was measured");
    } else {
        write_measurements(&mut s, t);
    }
    match (&report.refused, report.dict_id) {
        (Some(message), _) => {
            let _ = writeln!(s, "refused: {message}");
        }
        (None, Some(id)) => {
            let _ = writeln!(
                s,
                "stored as dictionary {id} in the {}",
                report.store.as_deref().unwrap_or("store")
            );
            // Another adder took the id measured under, and the new one is longer.
            let longer = dict_id_len(id).saturating_sub(dict_id_len(t.measured_as_id));
            if longer > 0 {
                let _ = writeln!(
                    s,
                    "note: measured as id {}, so each datum stored with it is up to \
                     {longer} byte(s) larger than measured",
                    t.measured_as_id
                );
            }
        }
        // Neither refused nor stored: only a dry run gets here (`run` stores or fails).
        (None, None) => {
            let _ = writeln!(s, "dry run: not stored");
        }
    }
    s
}

/// The evaluation's table (ratios per size bucket), speeds and raw-stored counts.
fn write_measurements(s: &mut String, t: &Trained) {
    let e = &t.evaluation;
    let _ = writeln!(
        s,
        "held-out rows, each stored alone as a whole datum (header counted, the dictionary's \
         as id {}); ratio = raw/stored",
        t.measured_as_id
    );
    // zstd's column only where it was measured (a zstd dictionary).
    let zstd = e.all.zstd_dict.is_some();
    let zstd_head = if zstd {
        format!(" {:>7}", "zstd+d")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "  {:<8} {:>6} {:>10} {:>7} {:>7} {:>7} {:>7}{zstd_head} {:>9} {:>9}",
        "size", "rows", "raw bytes", "pglz", "+dict", "lz4", "+dict", "vs pglz", "vs lz4"
    );
    let dict_method = Method::of(t.codec, true).expect("every codec has a dictionary method");
    for group in e.buckets.iter().chain([&e.all]) {
        if group.datums == 0 && group.bucket.is_some() {
            continue;
        }
        let label = group.bucket.map_or("all", |b| b.label());
        let ratio = |m| group.ratio(m).map_or("-".into(), |r| format!("{r:.2}"));
        let gain = |b| {
            group
                .gain(dict_method, b)
                .map_or("-".into(), |g| format!("{g:.2}x"))
        };
        let zstd_cell = if zstd {
            format!(" {:>7}", ratio(Method::ZstdDict))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:<8} {:>6} {:>10} {:>7} {:>7} {:>7} {:>7}{zstd_cell} {:>9} {:>9}",
            label,
            group.datums,
            group.raw_bytes,
            ratio(Method::Pglz),
            ratio(Method::PglzDict),
            ratio(Method::Lz4),
            ratio(Method::Lz4Dict),
            gain(Method::Pglz),
            gain(Method::Lz4),
        );
    }
    let _ = writeln!(
        s,
        "  speed, MB/s of raw bytes (all rows): compress / decompress"
    );
    let mut speeds = Vec::new();
    for method in Method::ALL {
        if let Some(m) = e.all.get(method) {
            speeds.push(format!(
                "{} {:.0} / {:.0}",
                method.name(),
                m.compress_mb_s(e.all.raw_bytes),
                m.decompress_mb_s(e.all.raw_bytes)
            ));
        }
    }
    let _ = writeln!(s, "    {}", speeds.join(", "));
    let raw: Vec<String> = Method::ALL
        .into_iter()
        .filter_map(|method| {
            Some(format!(
                "{} {}",
                method.name(),
                e.all.get(method)?.raw_datums
            ))
        })
        .collect();
    let _ = writeln!(
        s,
        "  rows stored raw (compression did not pay): {}",
        raw.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each error's hint says what to do about it (none where the message says it all), and
    /// a dictionary refused, or too few rows to build one from, exits with 3.
    #[test]
    fn each_training_error_has_its_hint_and_exit_status() {
        use pgdict_trainer::BuildError;
        const CHECK_SOURCE: &str = "check that the source holds rows";
        const MORE_ROWS: &str = "give more rows";
        const SHARE_TOO_LITTLE: &str = "the rows may share too little";
        let cases = [
            (
                TrainError::NoRows {
                    origin: "rows.txt".into(),
                    seen: 0,
                },
                Some(CHECK_SOURCE),
                1,
            ),
            (
                TrainError::NoRowsToMeasure {
                    origin: "rows.txt".into(),
                    seen: 0,
                },
                Some(CHECK_SOURCE),
                1,
            ),
            (
                TrainError::AllHeldOut { rows: 2 },
                Some(MORE_ROWS),
                EXIT_REFUSED,
            ),
            (
                BuildError::NothingToLearn {
                    rows: 1,
                    size: 4096,
                }
                .into(),
                Some(MORE_ROWS),
                EXIT_REFUSED,
            ),
            (
                BuildError::NothingToLearn {
                    rows: 300,
                    size: 4096,
                }
                .into(),
                Some(SHARE_TOO_LITTLE),
                EXIT_REFUSED,
            ),
            (
                BuildError::TooFewRowsForZstd { rows: 6 }.into(),
                Some(MORE_ROWS),
                EXIT_REFUSED,
            ),
            // The message names the least size; `pgdict-trainer` refuses such a --size before
            // any work, so only a library caller meets it.
            (BuildError::TooSmallForZstd { size: 100 }.into(), None, 1),
            (
                BuildError::Zstd {
                    rows: 9,
                    bytes: 90,
                    message: "Src size is incorrect".into(),
                }
                .into(),
                Some(SHARE_TOO_LITTLE),
                1,
            ),
            (TrainError::NothingHeldOut, None, EXIT_REFUSED),
            (TrainError::BadContent("is empty".into()), None, 1),
        ];
        for (error, hint, code) in cases {
            let described = error.to_string();
            let failure = Failure::from(error);
            assert_eq!(failure.message, described);
            match (failure.hint, hint) {
                (Some(got), Some(wanted)) => assert!(got.starts_with(wanted), "{described}: {got}"),
                (got, wanted) => assert_eq!(got, wanted, "{described}"),
            }
            assert_eq!(failure.code, code, "{described}");
        }
    }

    #[test]
    fn byte_counts_take_binary_units_and_refuse_zero_and_overflow() {
        for (text, bytes) in [
            ("1", 1),
            ("10B", 10),
            ("2k", 2 << 10),
            ("64M", 64 << 20),
            ("64MiB", 64 << 20),
            ("3GB", 3 << 30),
            ("1gib", 1 << 30),
            (" 5K ", 5 << 10),
        ] {
            assert_eq!(parse_bytes(text), Ok(bytes), "{text:?}");
        }
        for (text, error) in [
            ("0", "0 is out of range (1 byte and up)"),
            ("0K", "0K is out of range"),
            ("17179869184G", "is out of range"),
            ("99999999999999999999", "is not a byte count"),
            ("", "is not a byte count"),
            ("5T", "unknown unit \"T\" (use K, M or G)"),
            ("-1", "unknown unit \"-1\""),
        ] {
            let got = parse_bytes(text).unwrap_err();
            assert!(got.contains(error), "{text:?}: {got}");
        }
    }

    #[test]
    fn a_dictionary_size_is_at_most_what_a_dictionary_file_holds() {
        assert_eq!(parse_size("1M"), Ok(MAX_CONTENT_LEN));
        assert_eq!(parse_size("4096"), Ok(4096));
        let got = parse_size("1025K").unwrap_err();
        assert!(got.contains("the most a dictionary file holds"), "{got}");
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn the_holdout_share_is_between_0_and_0_9() {
        for (text, share) in [("0", 0.0), ("0.2", 0.2), ("0.9", 0.9)] {
            assert_eq!(parse_holdout(text), Ok(share), "{text:?}");
        }
        for text in ["0.95", "-0.1", "NaN", "x", ""] {
            assert!(parse_holdout(text).is_err(), "{text:?}");
        }
    }
}
