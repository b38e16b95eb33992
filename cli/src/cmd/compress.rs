//! `pgdict compress`: rows in, datums out.
//!
//! Each row is compressed on its own, so rows can be compressed side by side: the main thread
//! reads rows into batches, `--jobs` threads compress them (each with its own encoder), and the
//! main thread writes the batches back in input order. The output does not depend on the number
//! of threads.
//!
//! With `--keep-columns` the items are records of COPY data or CSV rather than rows
//! ([`copy::Record`]): each is written back with its column's value replaced by the datum,
//! NULLs as they came.

use std::borrow::Cow;
use std::io::Write;

use anyhow::Context;
use pgdict::datum::{Codec, DatumEncoder, PreparedDictionary};
use pgdict_trainer::progress::{Bars, Phase, Progress};
use pgdict_trainer::source::copy::{Layout, Record};
use pgdict_trainer::source::{self, copy, datums_file, SourceError, SourceSpec};

use crate::fail::{usage_error, user_error, HintExt};
use crate::in_order::{self, Batch, Pieces, ResultWriter, HAND_OVER_MIN};
use crate::output::{make_hex_digits_in_place, write_hex_line, Output, Writes};
use crate::row_input::{print_note, row_source, SourceItems};
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
        Output::refuse_a_file_in_the_rows(args.output.as_deref(), &args.rows.input)?;
    }
    let spec = row_source(&args.rows, None)?;
    let what = spec.describe();
    let jobs = args.jobs.map_or_else(crate::default_jobs, usize::from);
    let dict = dict.as_ref().map(|(_, prepared)| &**prepared);
    // `on_signal`: the broken end a signal writes to an output written in place, held until
    // the output is finished (`Output::end_broken_on_signal`).
    let (counts, out, on_signal) = if args.keep_columns {
        Output::refuse_a_name_for_kept_columns(args.output.as_deref())?;
        let (layout, records) = match source::open_records(&spec) {
            Err(SourceError::NoRecords { .. }) => {
                return Err(usage_error(
                    "--keep-columns writes COPY data or CSV back, so it reads COPY data or CSV",
                    "name the column with --copy-column or --csv-column (or say --format copy)",
                ))
            }
            opened => opened.with_context(|| format!("cannot read the rows of {what}"))?,
        };
        let mut out = Output::open(
            args.output.as_deref(),
            layout.is_binary(),
            "give COPY text (no FORMAT binary) to have text back",
        )?;
        let on_signal = out.end_broken_on_signal(&layout.broken_end());
        let progress = Bars::new(args.quiet || out.is_terminal());
        let counts = compress(records, &layout, codec, dict, &mut out, &progress, jobs)
            .map_err(|e| e.context(format!("cannot compress the rows of {what}")))?;
        (counts, out, on_signal)
    } else {
        let rows =
            source::open(&spec).with_context(|| format!("cannot read the rows of {what}"))?;
        // Worth saying even with --quiet: it is about what was compressed.
        print_note(&rows);
        // `-o NAME.hex` asks for hex lines as plainly as --hex does, and `-o NAME.copy` for
        // binary COPY as --copy does; a name that says another format than the one asked for
        // (or rows: `.jsonl`) is refused, as the file would mislead whoever opens it.
        let output = args.output.as_deref();
        let form = match (
            args.copy,
            args.hex,
            output.and_then(source::extension).as_deref(),
        ) {
            (true, _, _) | (false, false, Some("copy")) => OutForm::Copy,
            (false, true, _) | (false, false, Some("hex")) => OutForm::Hex,
            _ => OutForm::DatumsFile,
        };
        let writes = match form {
            OutForm::DatumsFile => Writes::Datums,
            OutForm::Hex => Writes::HexLines,
            OutForm::Copy => Writes::BinaryCopy,
        };
        Output::refuse_a_name_for_another_format(
            output,
            writes,
            "compress",
            "name the output for what it holds: .datums (a datums file), .hex or .csv (hex \
             lines, --hex), .copy (binary COPY, --copy)",
        )?;
        let binary = form != OutForm::Hex;
        let mut out = Output::open(args.output.as_deref(), binary, "write hex lines with --hex")?;
        // An error drops `out` unfinished: its file is left as it was (see crate::output).
        let on_signal = out.end_broken_on_signal(&form.broken_end());
        let progress = Bars::new(args.quiet || out.is_terminal());
        let counts = compress(rows, &form, codec, dict, &mut out, &progress, jobs)
            .map_err(|e| e.context(format!("cannot compress the rows of {what}")))?;
        (counts, out, on_signal)
    };
    if counts.items() == 0 {
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
    drop(on_signal); // The output is whole.
    if !args.quiet {
        let with = match dict {
            Some(dict) => format!("{codec} and dictionary {}", dict.id()),
            None => format!("{codec}, no dictionary"),
        };
        // No ratio of nothing: a column of NULLs stores no bytes.
        let ratio = match counts.stored_bytes {
            0 => String::new(),
            stored => format!(" ({:.2}x)", counts.raw_bytes as f64 / stored as f64),
        };
        let nulls = match counts.nulls {
            0 => String::new(),
            n => format!("; {} kept", counted(n, "NULL")),
        };
        eprintln!(
            "pgdict: {}, {} -> {} stored{ratio} with {with}: {} with the dictionary, {} plain, \
             {} raw{nulls}",
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

/// What is compressed: a row, or a COPY record whose column is (`--keep-columns`).
trait Item: Send {
    /// How the results are written: [`OutForm`] for rows, [`Layout`] for records.
    type Form: Form;

    /// What to compress; `None`: nothing (a NULL), the item is written as it came.
    fn value(&self) -> Option<&[u8]>;

    /// Appends the item's output, with `datum` in place of its value.
    fn write(
        &self,
        form: &Self::Form,
        datum: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) -> anyhow::Result<()>;

    /// Where the item's output holds the datum in one piece (a datums file, binary COPY of
    /// rows: its bytes; hex lines, COPY text and CSV records: its hex digits, which this makes
    /// of `datum` in place): appends the item's output to `out` with `datum` handed over as
    /// that piece ([`Pieces::put`]), and returns true. Else writes nothing, leaves `datum` as
    /// it is and returns false, for the caller to copy it in with [`Item::write`].
    fn write_handing_over(
        &self,
        form: &Self::Form,
        datum: &mut Vec<u8>,
        out: &mut Pieces,
    ) -> anyhow::Result<bool>;
}

/// What an output holds besides the items: what comes before the first and after the last,
/// and the end that marks an output an error stopped.
trait Form: Sync {
    fn write_start(&self, out: &mut Vec<u8>);
    fn write_end(&self, out: &mut impl Write) -> std::io::Result<()>;
    /// Ends an output that an error stopped half way with a mark that no reader of the form
    /// takes ([`Output::end_broken`]): PostgreSQL's COPY would otherwise commit the datums
    /// before the error, as it takes binary COPY data that ends after a whole tuple, and text
    /// that ends after a whole line.
    fn broken_end(&self) -> Cow<'static, [u8]>;
}

impl Item for Vec<u8> {
    type Form = OutForm;

    fn value(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn write(&self, form: &OutForm, datum: Option<&[u8]>, out: &mut Vec<u8>) -> anyhow::Result<()> {
        let datum = datum.context("a row is always compressed")?;
        match form {
            OutForm::DatumsFile => datums_file::Writer::new(out).write_datum(datum)?,
            OutForm::Hex => write_hex_line(out, datum)?,
            OutForm::Copy => copy::write_tuple(out, &[Some(datum)])?,
        }
        Ok(())
    }

    fn write_handing_over(
        &self,
        form: &OutForm,
        datum: &mut Vec<u8>,
        out: &mut Pieces,
    ) -> anyhow::Result<bool> {
        match form {
            OutForm::DatumsFile => {
                datums_file::Writer::new(out.bytes()).write_datum_len(datum.len())?;
                out.put(datum);
            }
            OutForm::Copy => {
                copy::write_one_field_start(out.bytes(), datum.len())?;
                out.put(datum);
            }
            OutForm::Hex => {
                out.bytes().extend_from_slice(b"\\x");
                make_hex_digits_in_place(datum);
                out.put(datum);
                out.bytes().push(b'\n');
            }
        }
        Ok(true)
    }
}

impl Form for OutForm {
    fn write_start(&self, out: &mut Vec<u8>) {
        if *self == OutForm::Copy {
            copy::write_header(out).expect("a Vec takes every write");
        }
    }

    fn write_end(&self, out: &mut impl Write) -> std::io::Result<()> {
        match self {
            OutForm::Copy => copy::write_trailer(out),
            OutForm::DatumsFile | OutForm::Hex => Ok(()),
        }
    }

    fn broken_end(&self) -> Cow<'static, [u8]> {
        Cow::Borrowed(match self {
            // A record longer than any datum may be.
            OutForm::DatumsFile => &[0xff; 4],
            // Not hex: the bytea input function refuses it.
            OutForm::Hex => b"\\x-- pgdict stopped on an error: the datums before this line are not all of the rows\n",
            OutForm::Copy => copy::BROKEN_END,
        })
    }
}

impl Item for Record {
    type Form = Layout;

    fn value(&self) -> Option<&[u8]> {
        self.value.as_deref()
    }

    fn write(
        &self,
        layout: &Layout,
        datum: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) -> anyhow::Result<()> {
        Ok(layout.write_bytea_record(out, self, datum)?)
    }

    fn write_handing_over(
        &self,
        layout: &Layout,
        datum: &mut Vec<u8>,
        out: &mut Pieces,
    ) -> anyhow::Result<bool> {
        let Some(after) = layout.write_bytea_record_around_hex(out.bytes(), self, datum.len())
        else {
            return Ok(false);
        };
        make_hex_digits_in_place(datum);
        out.put(datum);
        out.bytes().extend_from_slice(&after);
        Ok(true)
    }
}

impl Form for Layout {
    fn write_start(&self, out: &mut Vec<u8>) {
        Layout::write_start(self, out);
    }

    fn write_end(&self, out: &mut impl Write) -> std::io::Result<()> {
        Layout::write_end(self, out)
    }

    fn broken_end(&self) -> Cow<'static, [u8]> {
        Layout::broken_end(self)
    }
}

/// What the datums became, summed.
#[derive(Default)]
struct Counts {
    /// Values compressed.
    rows: u64,
    raw_bytes: u64,
    stored_bytes: u64,
    raw: u64,
    plain: u64,
    dict: u64,
    /// NULLs written back as they came (`--keep-columns`).
    nulls: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.rows += other.rows;
        self.raw_bytes += other.raw_bytes;
        self.stored_bytes += other.stored_bytes;
        self.raw += other.raw;
        self.plain += other.plain;
        self.dict += other.dict;
        self.nulls += other.nulls;
    }

    /// Items written: values compressed and NULLs.
    fn items(&self) -> u64 {
        self.rows + self.nulls
    }
}

/// A batch's output, ready to write: its items up to the first that could not be compressed,
/// and why that one could not.
struct Compressed {
    bytes: Pieces,
    counts: Counts,
    error: Option<anyhow::Error>,
}

/// Compresses `items` on `jobs` threads, each with its own encoder, in batches: this thread
/// reads them and writes the batches back in input order ([`crate::in_order`]), so the output
/// is the same bytes whatever `jobs` is. The form's start is written before the first item
/// and its end after the last (neither when there are no items). An error (an item that cannot
/// be read or compressed) ends the output after the items before it, with the form's broken
/// end.
fn compress<T: Item>(
    items: source::Rows<T>,
    form: &T::Form,
    codec: Codec,
    dict: Option<&PreparedDictionary>,
    out: &mut Output,
    progress: &dyn Progress,
    jobs: usize,
) -> anyhow::Result<Counts> {
    let size = |item: &T| item.value().map_or(0, <[u8]>::len);
    let mut reader = SourceItems::new(items, progress, Phase::Compressing, size);
    let mut writer = DatumWriter {
        out,
        counts: Counts::default(),
        form,
    };
    let new_worker = || {
        let mut encoder = DatumEncoder::new();
        move |batch| compress_batch(&mut encoder, batch, codec, dict, form)
    };
    let done = in_order::run(jobs, new_worker, &mut reader, &mut writer);
    let DatumWriter { out, counts, .. } = writer;
    let written = done.and_then(|()| {
        if counts.items() > 0 {
            form.write_end(out)
                .with_context(|| format!("cannot write to {}", out.name()))?;
        }
        Ok(())
    });
    if let Err(error) = written {
        out.end_broken(&form.broken_end());
        return Err(error);
    }
    reader.end(&counted(counts.rows, "row"));
    Ok(counts)
}

/// Writes each batch's output and adds up what its datums became.
struct DatumWriter<'a, F> {
    out: &'a mut Output,
    counts: Counts,
    /// The output's form, whose start goes before the first item: an input without items
    /// writes nothing.
    form: &'a F,
}

impl<F: Form> ResultWriter<Compressed> for DatumWriter<'_, F> {
    fn write(&mut self, compressed: Compressed) -> anyhow::Result<()> {
        if self.counts.items() == 0 && compressed.counts.items() > 0 {
            let mut start = Vec::new();
            self.form.write_start(&mut start);
            self.out
                .write_all(&start)
                .with_context(|| format!("cannot write to {}", self.out.name()))?;
        }
        self.out
            .write_pieces(compressed.bytes.pieces())
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

/// A batch's output, up to the first item that cannot be compressed.
fn compress_batch<T: Item>(
    encoder: &mut DatumEncoder,
    batch: Batch<T>,
    codec: Codec,
    dict: Option<&PreparedDictionary>,
    form: &T::Form,
) -> Compressed {
    // Room for the datums of small rows (a large datum is handed over, not copied in).
    let mut bytes = Pieces::with_capacity(batch.room() + batch.items.len() * 4);
    let mut counts = Counts::default();
    let mut datum = Vec::new();
    let mut compress_item = |item: &T, bytes: &mut Pieces| -> anyhow::Result<()> {
        let Some(value) = item.value() else {
            item.write(form, None, bytes.bytes())?;
            counts.nulls += 1;
            return Ok(());
        };
        datum.clear();
        let header = encoder.encode_into(value, codec, dict, &mut datum)?;
        let stored_len = datum.len();
        if stored_len < HAND_OVER_MIN || !item.write_handing_over(form, &mut datum, bytes)? {
            item.write(form, Some(&datum), bytes.bytes())?;
        }
        counts.rows += 1;
        counts.raw_bytes += value.len() as u64;
        counts.stored_bytes += stored_len as u64;
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
    for (row_number, item) in (batch.first + 1..).zip(&batch.items) {
        if let Err(e) = compress_item(item, &mut bytes) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A row whose output cannot be written when it is `bad`.
    struct Failing(Vec<u8>);

    impl Item for Failing {
        type Form = OutForm;

        fn value(&self) -> Option<&[u8]> {
            Some(&self.0)
        }

        fn write(
            &self,
            form: &OutForm,
            datum: Option<&[u8]>,
            out: &mut Vec<u8>,
        ) -> anyhow::Result<()> {
            anyhow::ensure!(self.0 != b"bad", "cannot write it");
            self.0.write(form, datum, out)
        }

        /// Never: every datum goes through `write`.
        fn write_handing_over(
            &self,
            _form: &OutForm,
            _datum: &mut Vec<u8>,
            _out: &mut Pieces,
        ) -> anyhow::Result<bool> {
            Ok(false)
        }
    }

    fn batch<T>(first: u64, items: impl IntoIterator<Item = T>) -> Batch<T> {
        let mut batch = Batch::starting_at(first);
        for item in items {
            batch.push(item, 0);
        }
        batch
    }

    #[test]
    fn a_batch_counts_what_each_datum_became() {
        let repeated = b"abcdefgh".repeat(16);
        let rows = [repeated.clone(), b"tiny".to_vec(), b"x".repeat(300)];
        let mut encoder = DatumEncoder::new();
        let plain = compress_batch(
            &mut encoder,
            batch(0, rows.clone()),
            Codec::Pglz,
            None,
            &OutForm::DatumsFile,
        );
        assert!(plain.error.is_none());
        let c = &plain.counts;
        let datums: Vec<Vec<u8>> = rows
            .iter()
            .map(|row| DatumEncoder::new().encode(row, Codec::Pglz, None).unwrap())
            .collect();
        let stored: usize = datums.iter().map(Vec::len).sum();
        assert_eq!((c.rows, c.raw, c.plain, c.dict, c.nulls), (3, 1, 2, 0, 0));
        assert_eq!((c.raw_bytes, c.stored_bytes), (432, stored as u64));
        assert_eq!(c.items(), 3);

        // With a dictionary: the row it holds is stored with it; the row of x stays plain (the
        // dictionary has nothing for it, and its id would take a byte).
        let dict = PreparedDictionary::new(5, &repeated).unwrap();
        let with_dict = compress_batch(
            &mut encoder,
            batch(0, rows),
            Codec::Pglz,
            Some(&dict),
            &OutForm::DatumsFile,
        );
        let c = &with_dict.counts;
        assert_eq!((c.rows, c.raw, c.plain, c.dict), (3, 1, 1, 1));

        // A NULL of a record is written as it came, and counted apart.
        let [(layout, records), _] = crate::cmd::second_column_records("1\t\\N\n2\tv\n", "");
        let kept = compress_batch(&mut encoder, batch(0, records), Codec::Pglz, None, &layout);
        let c = &kept.counts;
        assert_eq!((c.rows, c.raw, c.nulls, c.items()), (1, 1, 1, 2));
        assert_eq!((c.raw_bytes, c.stored_bytes), (1, 2));

        // Counts add up field by field.
        let mut sum = Counts::default();
        sum.add(&plain.counts);
        sum.add(&with_dict.counts);
        sum.add(&kept.counts);
        let c = &sum;
        assert_eq!((c.rows, c.raw, c.plain, c.dict, c.nulls), (7, 3, 3, 1, 1));
        let raw_bytes = 2 * 432 + 1;
        let stored_bytes = plain.counts.stored_bytes + with_dict.counts.stored_bytes + 2;
        assert_eq!((c.raw_bytes, c.stored_bytes), (raw_bytes, stored_bytes));
    }

    #[test]
    fn a_batch_stops_at_the_first_item_that_cannot_be_written() {
        let items = ["first", "bad", "after"].map(|row| Failing(row.into()));
        let mut encoder = DatumEncoder::new();
        let form = OutForm::Hex;
        let compressed = compress_batch(&mut encoder, batch(40, items), Codec::Pglz, None, &form);
        let error = compressed.error.expect("stopped");
        assert_eq!(format!("{error:#}"), "row 42: cannot write it");
        assert_eq!(compressed.counts.rows, 1);
        let mut expected = Vec::new();
        let datum = DatumEncoder::new()
            .encode(b"first", Codec::Pglz, None)
            .unwrap();
        write_hex_line(&mut expected, &datum).unwrap();
        assert_eq!(compressed.bytes.pieces().concat(), expected);
    }

    #[test]
    fn an_output_form_starts_ends_and_breaks_as_its_readers_need() {
        let written = |write: &dyn Fn(&mut Vec<u8>)| {
            let mut out = Vec::new();
            write(&mut out);
            out
        };
        assert_eq!(
            written(&|out| OutForm::Copy.write_start(out)),
            written(&|out| copy::write_header(out).unwrap())
        );
        assert_eq!(
            written(&|out| OutForm::Copy.write_end(out).unwrap()),
            written(&|out| copy::write_trailer(out).unwrap())
        );
        for form in [OutForm::Hex, OutForm::DatumsFile] {
            assert_eq!(written(&|out| form.write_start(out)), b"");
            assert_eq!(written(&|out| form.write_end(out).unwrap()), b"");
        }
        assert_eq!(&*OutForm::Copy.broken_end(), copy::BROKEN_END);
        assert_eq!(&*OutForm::DatumsFile.broken_end(), [0xff; 4]);
        let hex = OutForm::Hex.broken_end();
        assert!(hex.starts_with(b"\\x-- pgdict stopped on an error") && hex.ends_with(b"\n"));
    }

    #[test]
    fn a_large_datum_is_handed_over_and_the_output_is_the_same() {
        // zstd without a dictionary stores every row raw: a datum 4 bytes longer than its row.
        let rows = [
            b"small".to_vec(),
            vec![b'x'; HAND_OVER_MIN],
            b"after".to_vec(),
        ];
        for form in [OutForm::DatumsFile, OutForm::Copy, OutForm::Hex] {
            let mut batch = Batch::starting_at(0);
            for row in &rows {
                batch.push(row.clone(), row.len());
            }
            let mut encoder = DatumEncoder::new();
            let compressed = compress_batch(&mut encoder, batch, Codec::Zstd, None, &form);
            assert!(compressed.error.is_none());
            // Each row written whole, its datum copied in.
            let mut expected = Vec::new();
            for row in &rows {
                let datum = DatumEncoder::new().encode(row, Codec::Zstd, None).unwrap();
                row.write(&form, Some(&datum), &mut expected).unwrap();
            }
            let written = compressed.bytes.pieces().concat();
            assert!(written == expected, "{form:?}");
            // Bytes, the large datum (as it is, or its hex digits), bytes.
            let pieces = compressed.bytes.pieces();
            let datum_len = HAND_OVER_MIN + 4;
            let piece_len = match form {
                OutForm::Hex => 2 * datum_len,
                OutForm::DatumsFile | OutForm::Copy => datum_len,
            };
            assert_eq!(pieces.len(), 3, "{form:?}");
            assert_eq!(pieces[1].len(), piece_len, "{form:?}");
        }
    }

    #[test]
    fn a_large_datums_hex_digits_are_handed_over_in_records_and_the_output_is_the_same() {
        let large = "x".repeat(HAND_OVER_MIN);
        let text = format!("1\tsmall\tz\n2\t{large}\tz\n3\t\\N\tz\n");
        let csv = format!("1,small,z\r\n2,\"{large}\",z\r\n3,,z\r\n");
        for (layout, records) in crate::cmd::second_column_records(&text, &csv) {
            let mut batch = Batch::starting_at(0);
            for record in &records {
                batch.push(record.clone(), 0);
            }
            let mut encoder = DatumEncoder::new();
            let compressed = compress_batch(&mut encoder, batch, Codec::Zstd, None, &layout);
            assert!(compressed.error.is_none());
            // Each record written whole, its datum's hex text copied in.
            let mut expected = Vec::new();
            for record in &records {
                let datum = record.value.as_ref().map(|value| {
                    DatumEncoder::new()
                        .encode(value, Codec::Zstd, None)
                        .unwrap()
                });
                record
                    .write(&layout, datum.as_deref(), &mut expected)
                    .unwrap();
            }
            let written = compressed.bytes.pieces().concat();
            assert!(written == expected, "{layout:?}");
            // The records before and the large one's first fields, its datum's digits (a raw
            // datum, 4 bytes longer than the value), its other fields and the records after.
            let pieces = compressed.bytes.pieces();
            assert_eq!(pieces.len(), 3, "{layout:?}");
            assert_eq!(pieces[1].len(), 2 * (HAND_OVER_MIN + 4), "{layout:?}");
        }
    }
}
