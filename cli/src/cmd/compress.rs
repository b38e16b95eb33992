//! `pgdict compress`: rows in, datums out.
//!
//! Each row is compressed on its own, so rows can be compressed side by side: the main thread
//! reads rows into batches, `--jobs` threads compress them (each with its own encoder), and the
//! main thread writes the batches back in input order. The output does not depend on the number
//! of threads.

use std::io::Write;

use std::sync::mpsc;

use anyhow::{anyhow, Context};
use pgdict::datum::{Codec, DatumEncoder, PreparedDictionary};
use pgdict_trainer::progress::{Bars, InputProgress, Phase, Progress};
use pgdict_trainer::source::{self, datums_file, SourceSpec};

use crate::fail::{user_error, HintExt};
use crate::output::{write_hex_line, Output};
use crate::row_input::{print_note, row_source};
use crate::store::AnyStore;
use crate::text::thousands;
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
    let spec = row_source(&args.rows, None)?;
    let what = spec.describe();
    let rows = source::open(&spec).with_context(|| format!("cannot read the rows of {what}"))?;
    // Worth saying even with --quiet: it is about what was compressed.
    print_note(&rows);
    // `-o NAME.hex` asks for hex lines as plainly as --hex does: a binary datums file under
    // that name would mislead whoever opens it.
    let hex = args.hex
        || args
            .output
            .as_deref()
            .is_some_and(|path| path.extension().is_some_and(|ext| ext == "hex"));
    let mut out = Output::open(args.output.as_deref(), !hex, "write hex lines with --hex")?;
    // An error drops `out` unfinished: its file is left as it was (see crate::output).
    let progress = Bars::new(args.quiet || out.is_terminal());
    let dict = dict.as_ref().map(|(_, prepared)| &**prepared);
    let jobs = args.jobs.map_or_else(default_jobs, usize::from);
    let counts = compress(rows, codec, dict, hex, &mut out, &progress, jobs)
        .with_context(|| format!("cannot compress the rows of {what}"))?;
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
            "pgdict: {} rows, {} bytes -> {} bytes stored ({ratio:.2}x) with {with}: {} with the \
             dictionary, {} plain, {} raw",
            thousands(counts.rows),
            thousands(counts.raw_bytes),
            thousands(counts.stored_bytes),
            thousands(counts.dict),
            thousands(counts.plain),
            thousands(counts.raw),
        );
    }
    Ok(0)
}

/// Threads that compress when --jobs does not say: one per core.
fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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

/// A batch closes at this many rows, or at [`BATCH_BYTES`] of them.
const BATCH_ROWS: usize = 4096;
const BATCH_BYTES: usize = 1 << 20;

/// Rows read together, compressed by one thread.
struct Batch {
    /// The 0-based number of its first row, for messages.
    first_row: u64,
    rows: Vec<Vec<u8>>,
    bytes: usize,
}

/// A batch's output, ready to write.
struct Compressed {
    bytes: Vec<u8>,
    counts: Counts,
}

/// Compresses `rows` on `jobs` threads, each with its own encoder, in batches: this thread
/// reads rows and writes the batches back in input order, so the output is the same bytes
/// whatever `jobs` is. At most two batches a thread are in flight. An error (a row that cannot
/// be read or compressed) ends the output after the rows before it.
fn compress(
    mut rows: source::Rows,
    codec: Codec,
    dict: Option<&PreparedDictionary>,
    hex: bool,
    out: &mut Output,
    progress: &dyn Progress,
    jobs: usize,
) -> anyhow::Result<Counts> {
    let jobs = jobs.max(1);
    let mut step = InputProgress::begin(progress, Phase::Compressing, rows.input_len());
    let mut counts = Counts::default();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut to_workers = Vec::with_capacity(jobs);
        let mut in_order = InOrder {
            from_workers: Vec::with_capacity(jobs),
            written: 0,
        };
        for _ in 0..jobs {
            let (batches, batch_rx) = mpsc::channel::<Batch>();
            let (done_tx, done) = mpsc::channel();
            scope.spawn(move || {
                let mut encoder = DatumEncoder::new();
                for batch in batch_rx {
                    let compressed = compress_batch(&mut encoder, batch, codec, dict, hex);
                    if done_tx.send(compressed).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(batches);
            in_order.from_workers.push(done);
        }
        let mut sent = 0u64;
        let mut send = |batch: Batch, in_order: &mut InOrder| -> anyhow::Result<()> {
            if sent - in_order.written >= 2 * jobs as u64 {
                in_order.write_next(out, &mut counts)?;
            }
            to_workers[(sent % jobs as u64) as usize]
                .send(batch)
                .map_err(|_| anyhow!("a compressing thread stopped"))?;
            sent += 1;
            Ok(())
        };
        let mut batch = Batch::starting_at(0);
        let read_result = loop {
            let row = match rows.next() {
                None => break Ok(()),
                Some(Err(error)) => break Err(error),
                Some(Ok(row)) => row,
            };
            batch.bytes += row.len();
            batch.rows.push(row);
            if batch.rows.len() >= BATCH_ROWS || batch.bytes >= BATCH_BYTES {
                let next = Batch::starting_at(batch.first_row + batch.rows.len() as u64);
                send(std::mem::replace(&mut batch, next), &mut in_order)?;
            }
            step.item(|| rows.input_read());
        };
        if !batch.rows.is_empty() {
            send(batch, &mut in_order)?;
        }
        while in_order.written < sent {
            in_order.write_next(out, &mut counts)?;
        }
        // After the rows before it are written, as a single thread would have.
        read_result?;
        Ok(())
    })?;
    step.end(
        || rows.input_read(),
        &format!("{} rows", thousands(counts.rows)),
    );
    Ok(counts)
}

/// The workers' outputs, taken in the order their batches were sent (batch `k` went to
/// worker `k % jobs`, and each worker answers its batches in order).
struct InOrder {
    from_workers: Vec<mpsc::Receiver<anyhow::Result<Compressed>>>,
    written: u64,
}

impl InOrder {
    fn write_next(&mut self, out: &mut Output, counts: &mut Counts) -> anyhow::Result<()> {
        let worker = (self.written % self.from_workers.len() as u64) as usize;
        let compressed = self.from_workers[worker]
            .recv()
            .map_err(|_| anyhow!("a compressing thread stopped"))??;
        out.write_all(&compressed.bytes)
            .with_context(|| format!("cannot write to {}", out.name()))?;
        counts.add(&compressed.counts);
        self.written += 1;
        Ok(())
    }
}

impl Batch {
    fn starting_at(first_row: u64) -> Batch {
        Batch {
            first_row,
            rows: Vec::new(),
            bytes: 0,
        }
    }
}

/// A batch's datums, as datums file records or hex lines.
fn compress_batch(
    encoder: &mut DatumEncoder,
    batch: Batch,
    codec: Codec,
    dict: Option<&PreparedDictionary>,
    hex: bool,
) -> anyhow::Result<Compressed> {
    let mut bytes = Vec::with_capacity(batch.bytes + batch.rows.len() * 4);
    let mut counts = Counts::default();
    let mut datum = Vec::new();
    for (row_number, row) in (batch.first_row + 1..).zip(&batch.rows) {
        datum.clear();
        let header = encoder
            .encode_into(row, codec, dict, &mut datum)
            .with_context(|| format!("row {row_number}"))?;
        if hex {
            write_hex_line(&mut bytes, &datum)?;
        } else {
            datums_file::Writer::new(&mut bytes).write_datum(&datum)?;
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
    }
    Ok(Compressed { bytes, counts })
}
