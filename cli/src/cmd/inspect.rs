//! `pgdict inspect`: each datum's header, checked as a reader checks it.
//!
//! The input streams through. `--json` writes each datum's line as it is read. The table's
//! columns are as wide as their widest cell, so it is written after a first pass has measured
//! them: a regular file is then read a second time, and only the input that cannot be (standard
//! input, a pipe) is held, as 32 bytes a datum ([`Held`]). Memory otherwise grows only with the
//! invalid datums, whose problems the summary lists.
//!
//! With `--verify`, a datum whose dictionary the store cannot give (not there, or its file
//! damaged) is *not checked*, not invalid: nothing is known to be wrong with the datum. The
//! summary counts those per dictionary, and the exit status is 1 (the check could not be
//! done) unless invalid datums make it 3.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::io::Write;

use anyhow::{anyhow, Context};
use pgdict::datum::{self, DatumDecoder, DatumError, Form, Header};
use serde::Serialize;

use crate::datum_input::{Datum, Datums, Position};
use crate::output::Output;
use crate::store::LazyStore;
use crate::text::{counted, thousands, Align, Table};
use crate::{DatumFormatArg, DatumInput, InspectArgs, StoreArgs};

/// Exit status when some datums are invalid.
const STATUS_INVALID: u8 = 3;

/// What was found about one datum (not its bytes: the input streams through).
struct Found {
    position: Position,
    /// The datum's length in bytes.
    len: usize,
    header: Result<Header, String>,
    /// With --verify, for a datum whose header reads: what decoding it found.
    check: Option<Check>,
}

/// What decoding a datum found (--verify).
#[derive(Clone, Debug, PartialEq)]
enum Check {
    /// It decodes to its raw length.
    Decodes,
    /// It does not decode: why.
    Fails(String),
    /// Its dictionary could not be had (not in the store, or unreadable), so it was not
    /// decoded: the error saying so.
    NotChecked(DatumError),
}

impl Check {
    /// What decoding gave.
    fn of(decoded: Result<(), DatumError>) -> Check {
        match decoded {
            Ok(()) => Check::Decodes,
            Err(
                e @ (DatumError::MissingDictionary { .. }
                | DatumError::DictionaryUnreadable { .. }
                | DatumError::ForeignDictionary { .. }),
            ) => Check::NotChecked(e),
            Err(e) => Check::Fails(e.to_string()),
        }
    }

    fn kind(&self) -> CheckKind {
        match self {
            Check::Decodes => CheckKind::Decodes,
            Check::Fails(_) => CheckKind::Fails,
            Check::NotChecked(_) => CheckKind::NotChecked,
        }
    }
}

/// A [`Check`] without its reasons, as [`Held`] keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckKind {
    Decodes,
    Fails,
    NotChecked,
}

impl CheckKind {
    /// A [`Check`] of this kind, its reasons left out (the table does not show them).
    fn check(self, dict_id: Option<u32>) -> Check {
        match self {
            CheckKind::Decodes => Check::Decodes,
            CheckKind::Fails => Check::Fails(String::new()),
            CheckKind::NotChecked => Check::NotChecked(DatumError::MissingDictionary {
                id: dict_id.unwrap_or(0),
                store: String::new(),
            }),
        }
    }
}

impl Found {
    /// What datum `d`'s header says; `check`, if given, is run on the datum when its header
    /// reads.
    fn read(d: Datum, check: Option<impl FnOnce(&[u8]) -> Check>) -> Found {
        // The header, and a raw length the payload can expand to: an impossible one is an
        // invalid datum whether or not --verify decodes it.
        let header = datum::check_header(&d.bytes).map_err(|e| e.to_string());
        let check = match (check, &header) {
            (Some(check), Ok(_)) => Some(check(&d.bytes)),
            _ => None,
        };
        Found {
            position: d.position,
            len: d.bytes.len(),
            header,
            check,
        }
    }
}

/// What the table says of a datum, held between the two passes when the input cannot be read
/// again: 32 bytes a datum, where a [`Found`] takes 88 (think of a column of ten million rows
/// piped in from psql). Why a datum is invalid is not kept: the summary has it.
struct Held {
    /// The line of a hex datum, the byte offset of the others.
    at: u64,
    /// The datum's length, and its header's lengths and form if it reads (none can be over
    /// 1 GiB: a datum is at most PostgreSQL's varlena limit).
    len: u32,
    total_len: u32,
    raw_len: u32,
    form: Option<Form>,
    header_len: u8,
    /// With --verify: what decoding found.
    check: Option<CheckKind>,
}

impl Held {
    fn new(f: &Found) -> Held {
        let at = match f.position {
            Position::Line(line) => line as u64,
            Position::Byte(offset) => offset,
        };
        let small = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let header = f.header.as_ref().ok();
        Held {
            at,
            len: small(f.len),
            total_len: small(header.map_or(0, |h| h.total_len)),
            raw_len: small(header.map_or(0, |h| h.raw_len)),
            form: header.map(|h| h.form),
            header_len: header.map_or(0, |h| u8::try_from(h.header_len).unwrap_or(u8::MAX)),
            check: f.check.as_ref().map(Check::kind),
        }
    }

    /// The datum's [`Found`] again, without the reasons (the table does not show them); `hex`
    /// if the input is hex (its positions are lines).
    fn found(&self, hex: bool) -> Found {
        let header = self.form.map(|form| Header {
            form,
            total_len: self.total_len as usize,
            raw_len: self.raw_len as usize,
            header_len: self.header_len.into(),
        });
        Found {
            position: match hex {
                true => Position::Line(self.at as usize),
                false => Position::Byte(self.at),
            },
            len: self.len as usize,
            header: header.ok_or_else(String::new),
            check: self
                .check
                .map(|kind| kind.check(self.form.and_then(Form::dict_id))),
        }
    }
}

/// Reads each datum's header and, with --verify, decodes it.
struct Inspector<'a> {
    store: LazyStore<'a>,
    verify: bool,
    decoder: DatumDecoder,
    value: Vec<u8>,
}

impl Inspector<'_> {
    fn inspect(&mut self, d: Datum) -> Found {
        let decode = |bytes: &[u8]| {
            Check::of(
                self.decoder
                    .decode_into(bytes, &self.store, &mut self.value)
                    .map(drop),
            )
        };
        Found::read(d, self.verify.then_some(decode))
    }
}

pub fn run(store_args: &StoreArgs, args: &InspectArgs) -> anyhow::Result<u8> {
    let datums = Datums::open(&args.datums)?;
    let origin = datums.origin.clone();
    let mut inspector = Inspector {
        store: LazyStore::new(store_args),
        verify: args.verify,
        decoder: DatumDecoder::new(),
        value: Vec::new(),
    };
    let mut out = Output::stdout();
    let summary = if args.json {
        write_json_lines(&mut out, datums, &mut inspector)?
    } else {
        write_table(&mut out, &args.datums, datums, &mut inspector)?
    };
    out.finish()?;
    let invalid = summary.problems.len();
    if invalid > 0 {
        eprintln!(
            "pgdict: {invalid} of the {} datums of {origin} are invalid",
            summary.datums
        );
        if let Some(what) = summary.not_checked_text(&origin) {
            eprintln!("pgdict: cannot check {what}");
        }
        return Ok(STATUS_INVALID);
    }
    let not_checked = summary.not_checked_text(&origin);
    if let (Some(what), Some((_, first))) = (not_checked, summary.not_checked.into_values().next())
    {
        return Err(anyhow::Error::new(first).context(format!("cannot check {what}")));
    }
    Ok(0)
}

/// What the datums hold in all, gathered a datum at a time.
#[derive(Default)]
struct Summary {
    datums: u64,
    raw_bytes: u64,
    stored_bytes: u64,
    /// Datums by form: raw, PostgreSQL's own compressed form, extended.
    raw: u64,
    plain: u64,
    extended: u64,
    /// The dictionaries extended datums name.
    dict_ids: BTreeSet<u32>,
    /// A line for each invalid datum: its header does not read, or (with --verify) it does
    /// not decode (never both: only a datum whose header reads is decoded).
    problems: Vec<String>,
    /// With --verify, the datums not checked, by dictionary id: how many, and the first
    /// one's error.
    not_checked: BTreeMap<u32, (u64, DatumError)>,
}

impl Summary {
    /// Counts datum `n` (1-based).
    fn add(&mut self, n: u64, f: &Found) {
        self.datums += 1;
        // A datum that does not decode is invalid, and counted as such only: not in the
        // bytes, nor as a datum of its form.
        let fails = matches!(f.check, Some(Check::Fails(_)));
        match &f.header {
            Ok(_) if fails => {}
            Ok(h) => {
                self.raw_bytes += h.raw_len as u64;
                self.stored_bytes += h.total_len as u64;
                match h.form {
                    Form::RawShort | Form::RawLong => self.raw += 1,
                    Form::Pglz | Form::Lz4 => self.plain += 1,
                    Form::Extended { dict_id, .. } => {
                        self.extended += 1;
                        self.dict_ids.insert(dict_id);
                    }
                }
            }
            Err(e) => self.problem(n, f, e),
        }
        match &f.check {
            Some(Check::Fails(e)) => self.problem(n, f, e),
            Some(Check::NotChecked(e)) => {
                let id = f.header.as_ref().ok().and_then(|h| h.form.dict_id());
                self.not_checked
                    .entry(id.unwrap_or(0))
                    .or_insert_with(|| (0, e.clone()))
                    .0 += 1;
            }
            _ => {}
        }
    }

    /// `2,000 datums of rows.datums, which name dictionary 1`: the datums not checked, if any
    /// (why, the errors say: a dictionary the store lacks, cannot read, or holds for another
    /// codec).
    fn not_checked_text(&self, origin: &str) -> Option<String> {
        if self.not_checked.is_empty() {
            return None;
        }
        let count: u64 = self.not_checked.values().map(|(n, _)| n).sum();
        let ids: Vec<String> = self.not_checked.keys().map(u32::to_string).collect();
        let noun = if ids.len() == 1 {
            "dictionary"
        } else {
            "dictionaries"
        };
        Some(format!(
            "{} of {origin}, which name {noun} {}",
            counted(count, "datum"),
            ids.join(", ")
        ))
    }

    fn problem(&mut self, n: u64, f: &Found, error: &str) {
        self.problems
            .push(format!("datum {n} ({}): {error}", f.position));
    }

    /// The summary under the table, and a line for each problem.
    fn text(&self, origin: &str, what: &str) -> String {
        let readable = self.raw + self.plain + self.extended;
        let ratio = if self.stored_bytes > 0 {
            self.raw_bytes as f64 / self.stored_bytes as f64
        } else {
            0.0
        };
        let dicts = if self.dict_ids.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self.dict_ids.iter().map(u32::to_string).collect();
            format!(" (dictionary {})", list.join(", "))
        };
        let mut unreadable = if readable < self.datums {
            format!(", {} invalid", self.datums - readable)
        } else {
            String::new()
        };
        let not_checked: u64 = self.not_checked.values().map(|(n, _)| n).sum();
        if not_checked > 0 {
            unreadable.push_str(&format!(", {} not checked", thousands(not_checked)));
        }
        let mut out = format!(
            "{} of {} ({}): {} raw bytes stored in {} ({ratio:.2}x); {} raw, {} in \
             PostgreSQL's own compressed form, {} with a dictionary{dicts}{unreadable}\n",
            counted(self.datums, "datum"),
            origin,
            what,
            thousands(self.raw_bytes),
            thousands(self.stored_bytes),
            thousands(self.raw),
            thousands(self.plain),
            thousands(self.extended),
        );
        for problem in &self.problems {
            out.push_str(&format!("  {problem}\n"));
        }
        for (n, error) in self.not_checked.values() {
            out.push_str(&format!(
                "  {} not checked: {error}\n",
                counted(*n, "datum")
            ));
        }
        out
    }
}

/// A JSON object per datum, a line each, written as the datums are read.
fn write_json_lines(
    out: &mut Output,
    datums: Datums,
    inspector: &mut Inspector,
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    for (n, d) in (1..).zip(datums) {
        let found = inspector.inspect(d?);
        summary.add(n, &found);
        serde_json::to_writer(&mut *out, &DatumJson::new(n, &found)).context(WRITE_FAILED)?;
        out.write_all(b"\n").context(WRITE_FAILED)?;
    }
    Ok(summary)
}

/// The table, then the summary and each problem. The first pass measures the columns (and
/// holds what it found only when the input cannot be read again); the second writes each line.
fn write_table(
    out: &mut Output,
    input: &DatumInput,
    datums: Datums,
    inspector: &mut Inspector,
) -> anyhow::Result<Summary> {
    let verify = inspector.verify;
    let table = table_columns(verify);
    let (origin, what, format) = (datums.origin.clone(), datums.what.clone(), datums.format);
    // Text formats name a datum by its line.
    let hex = matches!(format, DatumFormatArg::Hex | DatumFormatArg::Escape);
    let read_again = datums.again(input);
    let mut widths = table.widths(std::iter::empty::<Vec<String>>());
    let mut summary = Summary::default();
    let mut held = Vec::new();
    // Datums that did not decode, or were not checked, for the second pass.
    let mut not_decoded = BTreeMap::new();
    for (n, d) in (1..).zip(datums) {
        let found = inspector.inspect(d?);
        table.widen(&mut widths, &cells(n, &found, verify));
        summary.add(n, &found);
        if read_again.is_none() {
            held.push(Held::new(&found));
        } else if let Some(check) = found.check.as_ref().filter(|c| **c != Check::Decodes) {
            not_decoded.insert(n, check.clone());
        }
    }
    let mut write_line = |cells: &[String]| {
        out.write_all(table.line(&widths, cells).as_bytes())
            .context(WRITE_FAILED)
    };
    write_line(&table.header())?;
    match read_again {
        None => {
            for (n, held) in (1..).zip(&held) {
                write_line(&cells(n, &held.found(hex), verify))?;
            }
        }
        Some(input) => {
            let mut read = 0;
            for (n, d) in (1..).zip(Datums::open(&input)?) {
                let d = d?;
                // Decoded in the first pass: its result is looked up, not computed again.
                let decoded = |_: &[u8]| not_decoded.remove(&n).unwrap_or(Check::Decodes);
                let found = Found::read(d, verify.then_some(decoded));
                write_line(&cells(n, &found, verify))?;
                read = n;
            }
            if read != summary.datums {
                return Err(anyhow!(
                    "{origin} changed while it was read: {} datums, then {read}",
                    summary.datums
                ));
            }
        }
    }
    out.write_all(summary.text(&origin, &what).as_bytes())
        .context(WRITE_FAILED)?;
    Ok(summary)
}

const WRITE_FAILED: &str = "cannot write to standard output";

/// The form's short name, in the table and the JSON lines.
fn form_name(form: Form) -> &'static str {
    match form {
        Form::RawShort | Form::RawLong => "raw",
        Form::Pglz | Form::Lz4 => "compressed",
        Form::Extended { .. } => "extended",
    }
}

/// PostgreSQL's compression method number; none for a raw datum.
fn method(form: Form) -> Option<u8> {
    match form {
        Form::RawShort | Form::RawLong => None,
        Form::Pglz => Some(0),
        Form::Lz4 => Some(1),
        Form::Extended { .. } => Some(3),
    }
}

/// The form's short name, PostgreSQL's method number, the codec and the dictionary id.
fn columns(form: Form) -> (&'static str, String, String, String) {
    let dash = || "-".to_string();
    (
        form_name(form),
        method(form).map_or_else(dash, |method| method.to_string()),
        form.codec().map_or_else(dash, |codec| codec.name().into()),
        form.dict_id().map_or_else(dash, |id| id.to_string()),
    )
}

/// The table's columns.
fn table_columns(verify: bool) -> Table {
    let mut spec = vec![
        ("datum", Align::Right),
        ("at", Align::Left),
        ("form", Align::Left),
        ("method", Align::Right),
        ("codec", Align::Left),
        ("dict", Align::Right),
        ("header", Align::Right),
        ("raw", Align::Right),
        ("stored", Align::Right),
        ("ratio", Align::Right),
    ];
    if verify {
        spec.push(("check", Align::Left));
    }
    Table::new(&spec)
}

/// The table's row for datum `n`.
fn cells(n: u64, f: &Found, verify: bool) -> Vec<String> {
    let mut row = match &f.header {
        Ok(h) => {
            let (form, method, codec, dict) = columns(h.form);
            vec![
                n.to_string(),
                f.position.to_string(),
                form.to_string(),
                method,
                codec,
                dict,
                h.header_len.to_string(),
                h.raw_len.to_string(),
                h.total_len.to_string(),
                format!("{:.2}", h.raw_len as f64 / h.total_len as f64),
            ]
        }
        Err(_) => {
            let mut row = vec![n.to_string(), f.position.to_string(), "INVALID".into()];
            row.extend(std::iter::repeat_n("-".to_string(), 5));
            // Its length, as stored bytes: the header cannot be trusted for more.
            row.push(f.len.to_string());
            row.push("-".into());
            row
        }
    };
    if verify {
        row.push(
            match &f.check {
                Some(Check::Decodes) => "ok",
                Some(Check::Fails(_)) => "FAILED",
                Some(Check::NotChecked(_)) => "unchecked",
                None => "-",
            }
            .into(),
        );
    }
    row
}

/// Datum `n`'s line of `--json`: its keys in alphabetical order, and only those that apply
/// (a header that does not read has no form, a datum not decoded no `decodes`). Serialized as
/// it is, not built as a `serde_json::Value`: building one was most of the time `--json` took.
#[derive(Serialize)]
struct DatumJson<'a> {
    #[serde(serialize_with = "as_text")]
    at: &'a Position,
    bytes: usize,
    /// Null for a raw datum.
    #[serde(skip_serializing_if = "Option::is_none")]
    codec: Option<Option<&'static str>>,
    datum: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    decodes: Option<bool>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "some_as_text"
    )]
    description: Option<&'a Header>,
    /// Null unless the datum names a dictionary.
    #[serde(skip_serializing_if = "Option::is_none")]
    dict_id: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    form: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    header_bytes: Option<usize>,
    /// PostgreSQL's compression method: null for a raw datum.
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<Option<u8>>,
    /// With --verify, why a datum was not decoded: its dictionary could not be had.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_checked: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    postgres_compatible: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stored_bytes: Option<usize>,
    valid: bool,
}

impl<'a> DatumJson<'a> {
    fn new(n: u64, f: &'a Found) -> Self {
        let header = f.header.as_ref().ok();
        let form = header.map(|h| h.form);
        let check_error = match &f.check {
            Some(Check::Fails(e)) => Some(e.as_str()),
            _ => None,
        };
        DatumJson {
            at: &f.position,
            bytes: f.len,
            codec: form.map(|form| form.codec().map(|codec| codec.name())),
            datum: n,
            decodes: match &f.check {
                Some(Check::Decodes) => Some(true),
                Some(Check::Fails(_)) => Some(false),
                Some(Check::NotChecked(_)) | None => None,
            },
            description: header,
            dict_id: form.map(Form::dict_id),
            error: check_error.or(f.header.as_ref().err().map(String::as_str)),
            form: form.map(form_name),
            header_bytes: header.map(|h| h.header_len),
            method: form.map(method),
            not_checked: match &f.check {
                Some(Check::NotChecked(e)) => Some(e.to_string()),
                _ => None,
            },
            postgres_compatible: form.map(Form::is_postgres_compatible),
            raw_bytes: header.map(|h| h.raw_len),
            stored_bytes: header.map(|h| h.total_len),
            valid: header.is_some() && check_error.is_none(),
        }
    }
}

/// Serializes a value as the string its `Display` writes, without building that string.
fn as_text<S: serde::Serializer>(value: &impl Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// [`as_text`] for a field skipped when `None`.
fn some_as_text<S: serde::Serializer>(
    value: &Option<impl Display>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => s.collect_str(value),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgdict::datum::{Codec, DatumEncoder};

    /// The `--json` line of `bytes` read as datum 7 at byte 40, checked by `check` if given.
    fn json_line(bytes: Vec<u8>, check: Option<Check>) -> String {
        let datum = Datum {
            bytes,
            position: Position::Byte(40),
        };
        let found = Found::read(datum, check.map(|check| move |_: &[u8]| check));
        serde_json::to_string(&DatumJson::new(7, &found)).unwrap()
    }

    #[test]
    fn json_lines_hold_the_keys_that_apply_in_alphabetical_order() {
        assert_eq!(
            json_line(b"\x09abc".to_vec(), None),
            r#"{"at":"byte 40","bytes":4,"codec":null,"datum":7,"description":"raw (1-byte header): 4 bytes stored (1-byte header, 3-byte payload), 3 bytes raw","dict_id":null,"form":"raw","header_bytes":1,"method":null,"postgres_compatible":true,"raw_bytes":3,"stored_bytes":4,"valid":true}"#
        );
        let row = compressible_row();
        let pglz = DatumEncoder::new().encode(&row, Codec::Pglz, None).unwrap();
        let stored = pglz.len();
        let line = json_line(
            pglz.clone(),
            Some(Check::Fails("it does not decode".into())),
        );
        let expected = format!(
            r#"{{"at":"byte 40","bytes":{stored},"codec":"pglz","datum":7,"decodes":false,"description":"pglz (PostgreSQL, method 0): {stored} bytes stored (8-byte header, {}-byte payload), 128 bytes raw","dict_id":null,"error":"it does not decode","form":"compressed","header_bytes":8,"method":0,"postgres_compatible":true,"raw_bytes":128,"stored_bytes":{stored},"valid":false}}"#,
            stored - 8
        );
        assert_eq!(line, expected);
        // Not checked: no `decodes`, and the reason; valid as far as its header goes.
        let missing = DatumError::MissingDictionary {
            id: 4,
            store: "the dictionary store dicts".into(),
        };
        let line = json_line(pglz, Some(Check::NotChecked(missing)));
        assert!(
            !line.contains("decodes") && !line.contains("error"),
            "{line}"
        );
        assert!(
            line.contains(
                r#","not_checked":"datum: dictionary 4 is not in the dictionary store dicts"#
            ),
            "{line}"
        );
        assert!(line.ends_with(r#","valid":true}"#), "{line}");
        // A header that does not read: no header keys, and no check was run.
        let line = json_line(vec![0x01, 0x02], Some(Check::Decodes));
        assert!(
            line.starts_with(
                r#"{"at":"byte 40","bytes":2,"datum":7,"error":"datum: byte 0 is 0x01"#
            ),
            "{line}"
        );
        assert!(line.ends_with(r#","valid":false}"#), "{line}");
    }

    /// The summary counts a datum that does not decode as invalid, and nowhere else: not in
    /// the bytes, nor as one of its form (it used to be both, beside "1 invalid" on the
    /// problem lines only). Nor does a raw length its payload cannot reach pass unverified.
    #[test]
    fn the_summary_counts_a_datum_that_fails_as_invalid_only() {
        let row = compressible_row();
        let pglz = DatumEncoder::new().encode(&row, Codec::Pglz, None).unwrap();
        let mut summary = Summary::default();
        for (n, check) in [(1, Check::Decodes), (2, Check::Fails("no".into()))] {
            summary.add(n, &found(&pglz, n as usize, Some(check)));
        }
        assert_eq!((summary.datums, summary.plain), (2, 1));
        assert_eq!(summary.raw_bytes, 128);
        assert_eq!(summary.stored_bytes, pglz.len() as u64);
        let text = summary.text("x.hex", "hex");
        assert!(text.contains(", 1 invalid\n"), "{text}");
        assert_eq!(summary.problems.len(), 1);

        // pglz claiming 2^30 - 1 bytes from a 9-byte payload: invalid without --verify.
        let impossible = b"\x46\x00\x00\x00\xff\xff\xff\x3f\x00abcdefgh";
        let found = found(impossible, 3, None);
        let error = found.header.as_ref().unwrap_err();
        assert!(
            error.contains("cannot expand to 1073741823 bytes"),
            "{error}"
        );
    }

    /// 128 bytes that pglz compresses.
    fn compressible_row() -> Vec<u8> {
        [b"abcdefgh".as_slice(); 16].concat()
    }

    /// What datum `bytes` at `line` is found to be, checked as `check` says if given.
    fn found(bytes: &[u8], line: usize, check: Option<Check>) -> Found {
        let datum = Datum {
            bytes: bytes.to_vec(),
            position: Position::Line(line),
        };
        Found::read(datum, check.map(|check| move |_: &[u8]| check))
    }

    fn missing(id: u32) -> DatumError {
        DatumError::MissingDictionary {
            id,
            store: "dicts".into(),
        }
    }

    #[test]
    fn each_form_has_its_columns() {
        let dash = || "-".to_string();
        let columns_of = |form| {
            let (name, method, codec, dict) = columns(form);
            [name.to_string(), method, codec, dict]
        };
        assert_eq!(
            columns_of(Form::RawShort),
            ["raw".into(), dash(), dash(), dash()]
        );
        assert_eq!(
            columns_of(Form::RawLong),
            ["raw".into(), dash(), dash(), dash()]
        );
        assert_eq!(columns_of(Form::Pglz), ["compressed", "0", "pglz", "-"]);
        assert_eq!(columns_of(Form::Lz4), ["compressed", "1", "lz4", "-"]);
        let extended = Form::Extended {
            codec: Codec::Zstd,
            dict_id: 9,
        };
        assert_eq!(columns_of(extended), ["extended", "3", "zstd", "9"]);

        // A datum's line, and what --verify adds to it.
        let row = compressible_row();
        let pglz = DatumEncoder::new().encode(&row, Codec::Pglz, None).unwrap();
        let stored = pglz.len();
        let ratio = format!("{:.2}", 128.0 / stored as f64);
        let expected = [
            "9",
            "line 3",
            "compressed",
            "0",
            "pglz",
            "-",
            "8",
            "128",
            &stored.to_string(),
            &ratio,
        ];
        assert_eq!(cells(9, &found(&pglz, 3, None), false), expected);
        for (check, shown) in [
            (None, "-"),
            (Some(Check::Decodes), "ok"),
            (Some(Check::Fails("no".into())), "FAILED"),
            (Some(Check::NotChecked(missing(4))), "unchecked"),
        ] {
            let line = cells(9, &found(&pglz, 3, check), true);
            assert_eq!(line[..10], expected, "{shown}");
            assert_eq!(line[10], shown);
        }
        // A header that does not read: its length only.
        let invalid = ["2", "line 5", "INVALID", "-", "-", "-", "-", "-", "3", "-"];
        assert_eq!(cells(2, &found(b"\x01ab", 5, None), false), invalid);
        assert_eq!(cells(2, &found(b"\x01ab", 5, None), true)[10], "-");
        assert_eq!(table_columns(false).header().len(), 10);
        assert_eq!(table_columns(true).header()[10], "check");
    }

    #[test]
    fn a_check_is_what_decoding_found() {
        assert_eq!(Check::of(Ok(())), Check::Decodes);
        for unavailable in [
            missing(4),
            DatumError::DictionaryUnreadable {
                id: 4,
                store: "dicts".into(),
                reason: pgdict::datum::LookupFailure::new("damaged"),
            },
            DatumError::ForeignDictionary {
                id: 4,
                codec: Codec::Lz4,
                built_for: pgdict::dict::CodecSet::only(Codec::Pglz),
                store: "dicts".into(),
            },
        ] {
            assert_eq!(
                Check::of(Err(unavailable.clone())),
                Check::NotChecked(unavailable)
            );
        }
        let corrupt = DatumError::DictIdZero { position: 1 };
        assert_eq!(
            Check::of(Err(corrupt.clone())),
            Check::Fails(corrupt.to_string())
        );
    }

    #[test]
    fn the_summary_counts_each_form_and_lists_each_problem() {
        let row = compressible_row();
        let encode = |codec, dict| DatumEncoder::new().encode(&row, codec, dict).unwrap();
        let pglz_dict = pgdict::datum::PreparedDictionary::new(7, &row).unwrap();
        let zstd_dict = pgdict::datum::PreparedDictionary::for_codecs(
            9,
            &row,
            pgdict::dict::CodecSet::only(Codec::Zstd),
            pgdict::zstd::DEFAULT_LEVEL,
        )
        .unwrap();
        let incompressible: Vec<u8> = (0..=255u8).map(|b| b.wrapping_mul(167)).collect();
        let raw_long = DatumEncoder::new()
            .encode(&incompressible, Codec::Pglz, None)
            .unwrap();
        let datums = [
            (b"\x09abc".to_vec(), Some(Check::Decodes)),
            (raw_long, Some(Check::Decodes)),
            (encode(Codec::Pglz, None), Some(Check::Decodes)),
            (encode(Codec::Lz4, None), Some(Check::Decodes)),
            (encode(Codec::Pglz, Some(&pglz_dict)), Some(Check::Decodes)),
            (
                encode(Codec::Zstd, Some(&zstd_dict)),
                Some(Check::NotChecked(missing(9))),
            ),
            (
                encode(Codec::Zstd, Some(&zstd_dict)),
                Some(Check::NotChecked(missing(9))),
            ),
            (
                encode(Codec::Lz4, None),
                Some(Check::Fails("it does not decode".into())),
            ),
            (vec![0x01, 0x02], None),
        ];
        let mut summary = Summary::default();
        let (mut raw_bytes, mut stored_bytes) = (0, 0);
        for (n, (bytes, check)) in (1..).zip(datums.iter().cloned()) {
            let found = found(&bytes, n as usize, check);
            if n < 8 {
                let header = found.header.as_ref().unwrap();
                raw_bytes += header.raw_len;
                stored_bytes += header.total_len;
            }
            summary.add(n, &found);
        }
        assert_eq!(
            summary.not_checked_text("x.hex").unwrap(),
            "2 datums of x.hex, which name dictionary 9"
        );
        let expected = format!(
            "9 datums of x.hex (hex): {raw_bytes} raw bytes stored in {stored_bytes} \
             ({:.2}x); 2 raw, 2 in PostgreSQL's own compressed form, 3 with a dictionary \
             (dictionary 7, 9), 2 invalid, 2 not checked\n  datum 8 (line 8): it does not \
             decode\n  datum 9 (line 9): datum: byte 0 is 0x01",
            raw_bytes as f64 / stored_bytes as f64
        );
        let text = summary.text("x.hex", "hex");
        assert!(text.starts_with(&expected), "{text}\n{expected}");
        assert!(
            text.ends_with("\n  2 datums not checked: datum: dictionary 9 is not in dicts\n"),
            "{text}"
        );

        // Another dictionary not had: both named.
        let other = encode(Codec::Pglz, Some(&pglz_dict));
        summary.add(10, &found(&other, 10, Some(Check::NotChecked(missing(7)))));
        assert_eq!(
            summary.not_checked_text("x.hex").unwrap(),
            "3 datums of x.hex, which name dictionaries 7, 9"
        );
        // Nothing: no ratio to divide by zero for, nothing not checked.
        let empty = Summary::default();
        assert_eq!(empty.not_checked_text("x.hex"), None);
        assert_eq!(
            empty.text("x.hex", "hex"),
            "0 datums of x.hex (hex): 0 raw bytes stored in 0 (0.00x); 0 raw, 0 in \
             PostgreSQL's own compressed form, 0 with a dictionary\n"
        );
    }

    #[test]
    fn a_held_datum_gives_back_its_table_line() {
        assert!(std::mem::size_of::<Held>() <= 32);
        let row = compressible_row();
        let pglz = DatumEncoder::new().encode(&row, Codec::Pglz, None).unwrap();
        let dict = pgdict::datum::PreparedDictionary::new(7, &row).unwrap();
        let extended = DatumEncoder::new()
            .encode(&row, Codec::Pglz, Some(&dict))
            .unwrap();
        assert_eq!(
            datum::parse_header(&extended).unwrap().form.dict_id(),
            Some(7)
        );
        let datums = [b"\x09abc".to_vec(), pglz, vec![0x01, 0x02], extended];
        for (hex, position) in [(true, Position::Line(12)), (false, Position::Byte(1 << 40))] {
            for (bytes, check) in datums.iter().zip([
                Some(Check::Decodes),
                Some(Check::Fails("no".into())),
                None,
                Some(Check::NotChecked(DatumError::MissingDictionary {
                    id: 7,
                    store: "dicts".into(),
                })),
            ]) {
                let datum = Datum {
                    bytes: bytes.clone(),
                    position: position.clone(),
                };
                let found = Found::read(datum, Some(move |_: &[u8]| check.clone().unwrap()));
                let held = Held::new(&found);
                for verify in [false, true] {
                    assert_eq!(cells(9, &held.found(hex), verify), cells(9, &found, verify));
                }
            }
        }
    }
}
