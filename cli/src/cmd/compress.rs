//! `pgdict compress`: rows in, datums out.
//!
//! Each row is compressed on its own, so rows can be compressed side by side: the main thread
//! reads rows into batches, `--jobs` threads compress them (each with its own encoder), and the
//! main thread writes the batches back in input order. The output does not depend on the number
//! of threads.

use std::io::Write;

use anyhow::Context;
use pgdict::datum::{Codec, DatumEncoder, PreparedDictionary};
use pgdict_trainer::progress::{Bars, InputProgress, Phase, Progress};
use pgdict_trainer::source::{self, copy, datums_file, SourceSpec};

use crate::fail::{user_error, HintExt};
use crate::in_order::{self, Batch, ItemReader, ResultWriter};
use crate::output::{write_hex_line, Output};
use crate::row_input::{print_note, row_source};
use crate::store::AnyStore;
use crate::text::{counted, thousands};
use crate::{CompressArgs, DictArg, StoreArgs};

pub fn run(store_args: &StoreArgs, args: &CompressArgs) -> anyhow::Result<u8> {
    let codec = args.codec.codec();
    // The dictionary first: a missing store or id fails before anything is read or written.
    let dict = match args.dict {
        DictArg::None => None,
        choice => {
            let store = AnyStore::open(store_args).hint(
                "create a store with `pgdict demo`, point --store (or PGDICT_STORE) at one, or \
                 compress without a dictionary: --dict none",
            )?;
            match store.choose(choice, codec)? {
                Some(dict) => Some((
                    dict.id(),
                    store
                        .prepared(dict.id())
                        .with_context(|| format!("cannot prepare dictionary {}", dict.id()))?,
                )),
                None => None,
            }
        }
    };
    if codec == Codec::Zstd && dict.is_none() && !args.quiet {
        eprintln!(
            "pgdict: note: zstd without a dictionary has no stored form: every row stays raw \
             (give --dict, or use --codec pglz or lz4)"
        );
    }
    if args.rows.pg_source.is_none() {
        Output::refuse_the_input(args.output.as_deref(), &args.rows.input)?;
    }
    let spec = row_source(&args.rows, None)?;
    let what = spec.describe();
    let rows = source::open(&spec).with_context(|| format!("cannot read the rows of {what}"))?;
    // Worth saying even with --quiet: it is about what was compressed.
    print_note(&rows);
    // `-o NAME.hex` asks for hex lines as plainly as --hex does, and `-o NAME.copy` for binary
    // COPY as --copy does: a datums file under either name would mislead whoever opens it.
    let named = |extension: &str| {
        let output = args.output.as_deref();
        output.is_some_and(|path| path.extension().is_some_and(|ext| ext == extension))
    };
    let form = match (args.copy, args.hex) {
        (true, _) => OutForm::Copy,
        (false, true) => OutForm::Hex,
        _ if named("copy") => OutForm::Copy,
        _ if named("hex") => OutForm::Hex,
        _ => OutForm::DatumsFile,
    };
    let binary = form != OutForm::Hex;
    let mut out = Output::open(args.output.as_deref(), binary, "write hex lines with --hex")?;
    // An error drops `out` unfinished: its file is left as it was (see crate::output).
    let progress = Bars::new(args.quiet || out.is_terminal());
    let dict = dict.as_ref().map(|(_, prepared)| &**prepared);
    let jobs = args.jobs.map_or_else(crate::default_jobs, usize::from);
    let counts = match compress(rows, codec, dict, form, &mut out, &progress, jobs) {
        Ok(counts) => counts,
        Err(e) => {
            write_broken_end(&mut out, form);
            return Err(e.context(format!("cannot compress the rows of {what}")));
        }
    };
    if counts.rows == 0 {
        const FILE_HINT: &str =
            "give a file with at least one row (an empty line is no row); nothing was written";
        const TABLE_HINT: &str =
            "the table is empty or the column holds only NULLs; nothing was written";
        let hint = match spec {
            SourceSpec::Postgres(_) => TABLE_HINT,
            _ => FILE_HINT,
        };
        return Err(user_error(format!("{what} holds no rows"), hint));
    }
    if form == OutForm::Copy {
        copy::write_trailer(&mut out).with_context(|| format!("cannot write to {}", out.name()))?;
    }
    out.finish()?;
    if !args.quiet {
        let with = match dict {
            Some(dict) => format!("{codec} and dictionary {}", dict.id()),
            None => format!("{codec}, no dictionary"),
        };
        let ratio = if counts.stored_bytes > 0 {
            counts.raw_bytes as f64 / counts.stored_bytes as f64
        } else {
            0.0
        };
        eprintln!(
            "pgdict: {}, {} -> {} stored ({ratio:.2}x) with {with}: {} with the dictionary, {} \
             plain, {} raw",
            counted(counts.rows, "row"),
            counted(counts.raw_bytes, "byte"),
            counted(counts.stored_bytes, "byte"),
            thousands(counts.dict),
            thousands(counts.plain),
            thousands(counts.raw),
        );
    }
    Ok(0)
}

/// How the datums are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutForm {
    /// Length-prefixed records (`pgdict_trainer::source::datums_file`).
    DatumsFile,
    /// One `\x...` line each.
    Hex,
    /// PostgreSQL's binary COPY of one bytea column (`pgdict_trainer::source::copy`): the
    /// header before the first datum, the trailer after the last.
    Copy,
}

/// Ends an output that an error stopped half way with a mark that no reader of the form takes
/// ([`Output::end_broken`]): PostgreSQL's COPY would otherwise commit the datums before the
/// error, as it takes binary COPY data that ends after a whole tuple, and CSV that ends after
/// a whole line.
fn write_broken_end(out: &mut Output, form: OutForm) {
    out.end_broken(match form {
        // A record longer than any datum may be.
        OutForm::DatumsFile => &[0xff; 4],
        // Not hex: the bytea input function refuses it.
        OutForm::Hex => b"\\x-- pgdict stopped on an error: the datums before this line are not all of the rows\n",
        OutForm::Copy => copy::BROKEN_END,
    });
}

/// What the datums became, summed.
#[derive(Default)]
struct Counts {
    rows: u64,
    raw_bytes: u64,
    stored_bytes: u64,
    raw: u64,
    plain: u64,
    dict: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.rows += other.rows;
        self.raw_bytes += other.raw_bytes;
        self.stored_bytes += other.stored_bytes;
        self.raw += other.raw;
        self.plain += other.plain;
        self.dict += other.dict;
    }
}

/// A batch's output, ready to write: the datums of its rows up to the first that could not be
/// compressed, and why that one could not.
struct Compressed {
    bytes: Vec<u8>,
    counts: Counts,
    error: Option<anyhow::Error>,
}

/// Compresses `rows` on `jobs` threads, each with its own encoder, in batches: this thread
/// reads rows and writes the batches back in input order ([`crate::in_order`]), so the output
/// is the same bytes whatever `jobs` is. An error (a row that cannot be read or compressed)
/// ends the output after the rows before it.
fn compress(
    rows: source::Rows,
    codec: Codec,
    dict: Option<&PreparedDictionary>,
    form: OutForm,
    out: &mut Output,
    progress: &dyn Progress,
    jobs: usize,
) -> anyhow::Result<Counts> {
    let step = InputProgress::begin(progress, Phase::Compressing, rows.input_len());
    let mut reader = RowReader { rows, step };
    let mut writer = DatumWriter {
        out,
        counts: Counts::default(),
        form,
    };
    let new_worker = || {
        let mut encoder = DatumEncoder::new();
        move |batch| compress_batch(&mut encoder, batch, codec, dict, form)
    };
    in_order::run(jobs, new_worker, &mut reader, &mut writer)?;
    let RowReader { rows, step } = reader;
    let counts = writer.counts;
    step.end(|| rows.input_read(), &counted(counts.rows, "row"));
    Ok(counts)
}

/// The rows, read a row at a time, with progress.
struct RowReader<'a> {
    rows: source::Rows,
    step: InputProgress<'a>,
}

impl ItemReader for RowReader<'_> {
    type Item = Vec<u8>;

    fn next_item(&mut self) -> Option<anyhow::Result<(Vec<u8>, usize)>> {
        let row = self.rows.next()?;
        self.step.item(|| self.rows.input_read());
        Some(row.map_err(Into::into).map(|row| {
            let len = row.len();
            (row, len)
        }))
    }

    fn may_wait(&self) -> bool {
        self.rows.may_wait()
    }
}

/// Writes each batch's datums and adds up what they became.
struct DatumWriter<'a> {
    out: &'a mut Output,
    counts: Counts,
    /// The datums' form: binary COPY writes its header with the first datum, so that an input
    /// without rows writes nothing.
    form: OutForm,
}

impl ResultWriter<Compressed> for DatumWriter<'_> {
    fn write(&mut self, compressed: Compressed) -> anyhow::Result<()> {
        if self.form == OutForm::Copy && self.counts.rows == 0 && compressed.counts.rows > 0 {
            copy::write_header(self.out)
                .with_context(|| format!("cannot write to {}", self.out.name()))?;
        }
        self.out
            .write_all(&compressed.bytes)
            .with_context(|| format!("cannot write to {}", self.out.name()))?;
        self.counts.add(&compressed.counts);
        compressed.error.map_or(Ok(()), Err)
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.out
            .flush()
            .with_context(|| format!("cannot write to {}", self.out.name()))
    }
}

/// A batch's datums, as datums file records, hex lines or COPY tuples, up to the first row
/// that cannot be compressed.
fn compress_batch(
    encoder: &mut DatumEncoder,
    batch: Batch<Vec<u8>>,
    codec: Codec,
    dict: Option<&PreparedDictionary>,
    form: OutForm,
) -> Compressed {
    let mut bytes = Vec::with_capacity(batch.bytes() + batch.items.len() * 4);
    let mut counts = Counts::default();
    let mut datum = Vec::new();
    let mut compress_row = |row: &[u8], bytes: &mut Vec<u8>| -> anyhow::Result<()> {
        datum.clear();
        let header = encoder.encode_into(row, codec, dict, &mut datum)?;
        match form {
            OutForm::DatumsFile => datums_file::Writer::new(bytes).write_datum(&datum)?,
            OutForm::Hex => write_hex_line(bytes, &datum)?,
            OutForm::Copy => copy::write_tuple(bytes, &[Some(&datum)])?,
        }
        counts.rows += 1;
        counts.raw_bytes += row.len() as u64;
        counts.stored_bytes += datum.len() as u64;
        if header.form.is_raw() {
            counts.raw += 1;
        } else if header.form.dict_id().is_some() {
            counts.dict += 1;
        } else {
            counts.plain += 1;
        }
        Ok(())
    };
    let mut error = None;
    for (row_number, row) in (batch.first + 1..).zip(&batch.items) {
        if let Err(e) = compress_row(row, &mut bytes) {
            error = Some(e.context(format!("row {row_number}")));
            break;
        }
    }
    Compressed {
        bytes,
        counts,
        error,
    }
}
