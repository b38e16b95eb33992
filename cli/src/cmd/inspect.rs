//! `pgdict inspect`: each datum's header, checked as a reader checks it.

use std::collections::BTreeSet;
use std::io::Write;

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
    let text = if args.json {
        json_lines(&found)
    } else {
        table(&origin, format, &found, args.verify)
    };
    out.write_all(text.as_bytes())
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

fn table(origin: &str, format: DatumFormatArg, found: &[Found], verify: bool) -> String {
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
    let mut table = Table::new(&spec);
    let mut problems = Vec::new();
    let (mut raw_bytes, mut stored_bytes) = (0u64, 0u64);
    let (mut raw, mut plain, mut extended) = (0u64, 0u64, 0u64);
    let mut ids = BTreeSet::new();
    for (i, f) in found.iter().enumerate() {
        let n = i + 1;
        let mut row = match &f.header {
            Ok(h) => {
                let (form, method, codec, dict) = columns(h.form);
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
            Err(e) => {
                problems.push(format!("datum {n} ({}): {e}", f.position));
                let mut row = vec![n.to_string(), f.position.to_string(), "INVALID".into()];
                row.extend(std::iter::repeat_n("-".to_string(), 5));
                // Its length, as stored bytes: the header cannot be trusted for more.
                row.push(f.len.to_string());
                row.push("-".into());
                row
            }
        };
        if verify {
            row.push(match &f.check {
                Some(Ok(())) => "ok".into(),
                Some(Err(e)) => {
                    problems.push(format!("datum {n} ({}): {e}", f.position));
                    "FAILED".into()
                }
                None => "-".into(),
            });
        }
        table.row(row);
    }
    let mut out = table.render();
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
    out.push_str(&format!(
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
    ));
    for problem in problems {
        out.push_str(&format!("  {problem}\n"));
    }
    out
}

fn json_lines(found: &[Found]) -> String {
    let mut out = String::new();
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
        out.push_str(&object.to_string());
        out.push('\n');
    }
    out
}

fn format_name(format: DatumFormatArg) -> &'static str {
    match format {
        DatumFormatArg::Datums => "datums file",
        DatumFormatArg::Hex => "hex",
        DatumFormatArg::Varlena => "varlenas",
    }
}
