//! `pgdict inspect`: each datum's header, checked as a reader checks it.

use std::collections::BTreeSet;
use std::io::{self, Write};

use anyhow::Context;
use pgdict::datum::{self, DatumDecoder, Form, Header};
use serde_json::json;

use crate::datum_input::{Datums, Position};
use crate::output::Output;
use crate::store::LazyStore;
use crate::text::{thousands, Align, Table};
use crate::{DatumFormatArg, InspectArgs, StoreArgs};

/// Exit status when some datums are invalid.
const STATUS_INVALID: u8 = 3;

/// What was found about one datum (not its bytes: the input streams through).
struct Found {
    position: Position,
    /// The datum's length in bytes.
    len: usize,
    header: Result<Header, String>,
    /// With --verify: `Ok` if it decodes, else why not.
    check: Option<Result<(), String>>,
}

pub fn run(store_args: &StoreArgs, args: &InspectArgs) -> anyhow::Result<u8> {
    let datums = Datums::open(&args.datums)?;
    let (origin, format) = (datums.origin.clone(), datums.format);
    let store = LazyStore::new(store_args);
    let mut decoder = DatumDecoder::new();
    let mut value = Vec::new();
    let mut found = Vec::new();
    for d in datums {
        let d = d?;
        let header = datum::parse_header(&d.bytes).map_err(|e| e.to_string());
        let check = (args.verify && header.is_ok()).then(|| {
            decoder
                .decode_into(&d.bytes, &store, &mut value)
                .map(drop)
                .map_err(|e| e.to_string())
        });
        found.push(Found {
            position: d.position,
            len: d.bytes.len(),
            header,
            check,
        });
    }
    let invalid = found
        .iter()
        .filter(|f| f.header.is_err() || matches!(f.check, Some(Err(_))))
        .count();

    let mut out = Output::stdout();
    if args.json {
        write_json_lines(&mut out, &found)
    } else {
        write_table(&mut out, &origin, format, &found, args.verify)
    }
    .context("cannot write to standard output")?;
    out.finish()?;
    if invalid > 0 {
        eprintln!(
            "pgdict: {invalid} of the {} datums of {} are invalid",
            found.len(),
            origin
        );
        return Ok(STATUS_INVALID);
    }
    Ok(0)
}

/// The form's short name, PostgreSQL's method number, the codec and the dictionary id.
fn columns(form: Form) -> (&'static str, String, String, String) {
    let dash = || "-".to_string();
    match form {
        Form::RawShort | Form::RawLong => ("raw", dash(), dash(), dash()),
        Form::Pglz => ("compressed", "0".into(), "pglz".into(), dash()),
        Form::Lz4 => ("compressed", "1".into(), "lz4".into(), dash()),
        Form::Extended { codec, dict_id } => (
            "extended",
            "3".into(),
            codec.name().into(),
            dict_id.to_string(),
        ),
    }
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
fn cells(n: usize, f: &Found, verify: bool) -> Vec<String> {
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
                Some(Ok(())) => "ok",
                Some(Err(_)) => "FAILED",
                None => "-",
            }
            .into(),
        );
    }
    row
}

/// The table, written a line at a time (its widths measured in a first pass: a table of
/// millions of datums is never held as text), then the summary and each problem.
fn write_table(
    out: &mut Output,
    origin: &str,
    format: DatumFormatArg,
    found: &[Found],
    verify: bool,
) -> io::Result<()> {
    let table = table_columns(verify);
    let rows = || {
        found
            .iter()
            .enumerate()
            .map(|(i, f)| cells(i + 1, f, verify))
    };
    let widths = table.widths(rows());
    out.write_all(table.line(&widths, &table.header()).as_bytes())?;
    for row in rows() {
        out.write_all(table.line(&widths, &row).as_bytes())?;
    }
    out.write_all(summary(origin, format, found).as_bytes())
}

/// What the datums hold in all, and a line for each invalid one.
fn summary(origin: &str, format: DatumFormatArg, found: &[Found]) -> String {
    let mut problems = Vec::new();
    let (mut raw_bytes, mut stored_bytes) = (0u64, 0u64);
    let (mut raw, mut plain, mut extended) = (0u64, 0u64, 0u64);
    let mut ids = BTreeSet::new();
    for (i, f) in found.iter().enumerate() {
        let n = i + 1;
        match &f.header {
            Ok(h) => {
                raw_bytes += h.raw_len as u64;
                stored_bytes += h.total_len as u64;
                match h.form {
                    Form::RawShort | Form::RawLong => raw += 1,
                    Form::Pglz | Form::Lz4 => plain += 1,
                    Form::Extended { dict_id, .. } => {
                        extended += 1;
                        ids.insert(dict_id);
                    }
                }
            }
            Err(e) => problems.push(format!("datum {n} ({}): {e}", f.position)),
        }
        if let Some(Err(e)) = &f.check {
            problems.push(format!("datum {n} ({}): {e}", f.position));
        }
    }
    let valid = (raw + plain + extended) as usize;
    let ratio = if stored_bytes > 0 {
        raw_bytes as f64 / stored_bytes as f64
    } else {
        0.0
    };
    let dicts = if ids.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = ids.iter().map(u32::to_string).collect();
        format!(" (dictionary {})", list.join(", "))
    };
    let mut out = format!(
        "{} datums of {} ({}): {} raw bytes stored in {} ({ratio:.2}x); {} raw, {} in \
         PostgreSQL's own compressed form, {} with a dictionary{dicts}{}\n",
        thousands(found.len() as u64),
        origin,
        format_name(format),
        thousands(raw_bytes),
        thousands(stored_bytes),
        thousands(raw),
        thousands(plain),
        thousands(extended),
        if valid < found.len() {
            format!(", {} invalid", found.len() - valid)
        } else {
            String::new()
        },
    );
    for problem in problems {
        out.push_str(&format!("  {problem}\n"));
    }
    out
}

/// A JSON object per datum, a line each.
fn write_json_lines(out: &mut Output, found: &[Found]) -> io::Result<()> {
    for (i, f) in found.iter().enumerate() {
        let mut object = json!({
            "datum": i + 1,
            "at": f.position.to_string(),
            "bytes": f.len,
        });
        match &f.header {
            Ok(h) => {
                let (form, _, codec, _) = columns(h.form);
                object["valid"] = json!(true);
                object["form"] = json!(form);
                object["method"] = match h.form {
                    Form::RawShort | Form::RawLong => json!(null),
                    Form::Pglz => json!(0),
                    Form::Lz4 => json!(1),
                    Form::Extended { .. } => json!(3),
                };
                object["codec"] = h.form.codec().map_or(json!(null), |_| json!(codec));
                object["dict_id"] = json!(h.form.dict_id());
                object["postgres_compatible"] = json!(h.form.is_postgres_compatible());
                object["header_bytes"] = json!(h.header_len);
                object["raw_bytes"] = json!(h.raw_len);
                object["stored_bytes"] = json!(h.total_len);
                object["description"] = json!(h.to_string());
            }
            Err(e) => {
                object["valid"] = json!(false);
                object["error"] = json!(e);
            }
        }
        if let Some(check) = &f.check {
            object["decodes"] = json!(check.is_ok());
            if let Err(e) = check {
                object["valid"] = json!(false);
                object["error"] = json!(e);
            }
        }
        out.write_all(object.to_string().as_bytes())?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn format_name(format: DatumFormatArg) -> &'static str {
    match format {
        DatumFormatArg::Datums => "datums file",
        DatumFormatArg::Hex => "hex",
        DatumFormatArg::Varlena => "varlenas",
    }
}
