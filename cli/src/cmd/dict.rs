//! `pgdict dict list | show | retire | sync`.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use pgdict::datum::Codec;
use pgdict::dict::{
    self, file::hex, Destination, Dictionary, DirStore, Gain, PgStore, Store, StoreEntry,
    StoreError,
};
use pgdict_trainer::round3;
use serde_json::{json, Value};

use crate::output::Output;
use crate::store::{open_dir, AnyStore};
use crate::text::{printable, ratio, thousands, times, utc, Align, Table};
use crate::{DictCommand, StoreArgs, SyncArgs};

pub fn run(store_args: &StoreArgs, command: DictCommand) -> anyhow::Result<u8> {
    match command {
        DictCommand::List { json } => list(store_args, json),
        DictCommand::Show { id, json, content } => show(store_args, id, json, content.as_deref()),
        DictCommand::Retire { id } => retire(store_args, id),
        DictCommand::Sync(args) => sync(store_args, &args),
    }
}

/// A store's entry and its dictionary, or why the dictionary cannot be read.
type Listed = (StoreEntry, Result<Arc<Dictionary>, StoreError>);

/// For each codec, the id `--dict auto` picks: the newest active dictionary built for it.
/// Like `--dict auto`, it stops at an active dictionary that cannot be read (it cannot tell
/// what that one was built for): codecs without a pick by then get none.
fn auto_ids(entries: &[Listed]) -> BTreeMap<Codec, u32> {
    let mut auto = BTreeMap::new();
    for (entry, dict) in entries.iter().rev() {
        if entry.retired {
            continue;
        }
        let Ok(dict) = dict else { break };
        for codec in dict.codecs().iter() {
            auto.entry(codec).or_insert(entry.id);
        }
    }
    auto
}

fn status(entry: &StoreEntry, auto: &BTreeMap<Codec, u32>) -> String {
    if entry.retired {
        return "retired".into();
    }
    let picks: Vec<&str> = auto
        .iter()
        .filter(|(_, &id)| id == entry.id)
        .map(|(codec, _)| codec.name())
        .collect();
    if picks.is_empty() {
        "active".into()
    } else {
        format!("active, auto for {}", picks.join("+"))
    }
}

/// The measured gains: `pglz 2.61x` (stored bytes of plain pglz over the dictionary's; plain
/// lz4's for an lz4 dictionary), `zstd 1.75x vs pglz` (zstd is judged against plain pglz).
fn gains(dict: &Dictionary) -> String {
    let gains: Vec<String> = dict
        .metadata()
        .gains
        .iter()
        .map(|g| {
            let mut gain = format!("{} {}", g.codec, times(g.gain()));
            if g.baseline() != g.codec {
                gain.push_str(&format!(" vs {}", g.baseline()));
            }
            gain
        })
        .collect();
    if gains.is_empty() {
        "-".into()
    } else {
        gains.join(", ")
    }
}

/// Every dictionary of the store, each loaded, or with why it cannot be.
fn load_all(store: &AnyStore) -> anyhow::Result<Vec<Listed>> {
    let entries = store
        .list()
        .with_context(|| format!("cannot list {}", store.describe()))?;
    Ok(entries
        .into_iter()
        .map(|entry| (entry, store.get(entry.id)))
        .collect())
}

/// The error for the dictionaries that could not be read (after the others were listed), if
/// any: the first one's reason as the detail.
fn unreadable_error(entries: Vec<Listed>) -> anyhow::Result<()> {
    let mut ids = Vec::new();
    let mut first = None;
    for (entry, dict) in entries {
        if let Err(error) = dict {
            ids.push(entry.id.to_string());
            first.get_or_insert(error);
        }
    }
    match first {
        None => Ok(()),
        Some(error) => Err(anyhow::Error::new(error).context(if ids.len() == 1 {
            format!("cannot read dictionary {}", ids[0])
        } else {
            format!(
                "cannot read dictionaries {} (the first one's reason below)",
                ids.join(", ")
            )
        })),
    }
}

fn list(store_args: &StoreArgs, json: bool) -> anyhow::Result<u8> {
    let store = AnyStore::open(store_args)?;
    let entries = load_all(&store)?;
    let auto = auto_ids(&entries);
    let mut out = Output::stdout();
    if json {
        for (entry, dict) in &entries {
            let line = match dict {
                Ok(dict) => summary_json(entry, dict, &auto),
                Err(error) => json!({
                    "id": entry.id,
                    "retired": entry.retired,
                    "error": error.to_string(),
                }),
            };
            writeln!(out, "{line}")?;
        }
    } else if entries.is_empty() {
        writeln!(
            out,
            "{} holds no dictionaries yet (`pgdict demo` trains two)",
            store.describe()
        )?;
    } else {
        let mut table = Table::new(&[
            ("id", Align::Right),
            ("codecs", Align::Left),
            ("bytes", Align::Right),
            ("created (UTC)", Align::Left),
            ("status", Align::Left),
            ("gain vs plain", Align::Left),
            ("source", Align::Left),
        ]);
        for (entry, dict) in &entries {
            table.row(match dict {
                Ok(dict) => vec![
                    entry.id.to_string(),
                    dict.codecs().to_string(),
                    thousands(dict.content().len() as u64),
                    utc(dict.created_micros()),
                    status(entry, &auto),
                    gains(dict),
                    dict.metadata()
                        .source
                        .map_or_else(|| "-".into(), |s| printable(s.as_bytes())),
                ],
                Err(_) => {
                    let mut row = vec![entry.id.to_string()];
                    row.extend(["?", "?", "?"].map(String::from));
                    row.push(
                        if entry.retired {
                            "retired, unreadable"
                        } else {
                            "unreadable"
                        }
                        .into(),
                    );
                    row.extend(["-", "-"].map(String::from));
                    row
                }
            });
        }
        write!(out, "{}", table.render())?;
    }
    out.finish()?;
    unreadable_error(entries)?;
    Ok(0)
}

fn summary_json(entry: &StoreEntry, dict: &Dictionary, auto: &BTreeMap<Codec, u32>) -> Value {
    let metadata = dict.metadata();
    json!({
        "id": entry.id,
        "codecs": dict.codecs().iter().map(Codec::name).collect::<Vec<_>>(),
        "bytes": dict.content().len(),
        "created_micros": dict.created_micros(),
        "created": utc(dict.created_micros()),
        "retired": entry.retired,
        "auto_for": auto.iter().filter(|(_, &id)| id == entry.id).map(|(c, _)| c.name()).collect::<Vec<_>>(),
        "content_sha256": hex(&dict.content_sha256()),
        "source": metadata.source,
        "gains": metadata.gains.iter().map(|g| json!({
            "codec": g.codec.name(),
            "baseline": g.baseline().name(),
            "rows": g.rows,
            "raw_bytes": g.raw_bytes,
            "plain_bytes": g.plain_bytes,
            "dict_bytes": g.dict_bytes,
            "gain": g.gain().map(round3),
        })).collect::<Vec<_>>(),
    })
}

fn show(
    store_args: &StoreArgs,
    id: u32,
    json: bool,
    content: Option<&std::path::Path>,
) -> anyhow::Result<u8> {
    let content_file = content
        .map(|path| Output::beside_report(path, "--content"))
        .transpose()?;
    let store = AnyStore::open(store_args)?;
    let dict = store
        .get(id)
        .with_context(|| format!("cannot show dictionary {id}"))?;
    // The others are read for the status (`--dict auto`'s pick); one that cannot be read
    // changes the pick, and is not this command's error.
    let entries = load_all(&store)?;
    let entry = entries
        .iter()
        .find(|(e, _)| e.id == id)
        .map(|(e, _)| *e)
        .unwrap_or(StoreEntry { id, retired: false });
    let auto = auto_ids(&entries);
    if let Some(mut file) = content_file {
        // As every output file: replaced only by a whole one (see crate::output).
        file.write_all(dict.content())
            .with_context(|| format!("cannot write {}", file.name()))?;
        file.finish()?;
    }
    let metadata = dict.metadata();
    let mut out = Output::stdout();
    if json {
        let mut object = summary_json(&entry, &dict, &auto);
        object["location"] = json!(store.location(id));
        object["metadata"] = serde_json::from_str(dict.metadata_json()).unwrap_or(Value::Null);
        writeln!(out, "{object}")?;
    } else {
        let mut lines = vec![
            ("stored in", store.location(id)),
            ("status", status(&entry, &auto)),
            ("codecs", dict.codecs().to_string()),
            (
                "content",
                format!(
                    "{} bytes, sha256 {}",
                    thousands(dict.content().len() as u64),
                    hex(&dict.content_sha256())
                ),
            ),
            ("created", utc(dict.created_micros())),
        ];
        // Metadata comes from whoever made the dictionary: shown escaped, never as terminal
        // control sequences.
        if let Some(source) = &metadata.source {
            lines.push(("source", printable(source.as_bytes())));
        }
        if let Some(trainer) = &metadata.trainer {
            lines.push(("trainer", printable(trainer.as_bytes())));
        }
        if let (Some(rows), Some(bytes)) = (metadata.sample_rows, metadata.sample_bytes) {
            lines.push((
                "trained on",
                format!("{} rows, {} bytes", thousands(rows), thousands(bytes)),
            ));
        }
        if !metadata.parameters.is_empty() {
            lines.push((
                "parameters",
                Value::Object(metadata.parameters.clone()).to_string(),
            ));
        }
        for gain in &metadata.gains {
            lines.push(("measured", measured(gain)));
        }
        writeln!(out, "dictionary {id}")?;
        for (key, value) in lines {
            writeln!(out, "  {:<11} {value}", format!("{key}:"))?;
        }
        if let Some(path) = content {
            writeln!(out, "  {:<11} written to {}", "content:", path.display())?;
        }
    }
    out.finish()?;
    Ok(0)
}

/// One measured gain, as `dict show` says it.
fn measured(gain: &Gain) -> String {
    format!(
        "on {} held-out rows ({} bytes): plain {} stores {} bytes, {} with this dictionary {}: \
         {} smaller (ratio {} -> {})",
        thousands(gain.rows),
        thousands(gain.raw_bytes),
        gain.baseline(),
        thousands(gain.plain_bytes),
        gain.codec,
        thousands(gain.dict_bytes),
        times(gain.gain()),
        ratio(gain.plain_ratio()),
        ratio(gain.dict_ratio())
    )
}

fn retire(store_args: &StoreArgs, id: u32) -> anyhow::Result<u8> {
    let store = AnyStore::open(store_args)?;
    let done = store
        .retire(id)
        .with_context(|| format!("cannot retire dictionary {id}"))?;
    // A damaged dictionary can be retired too, but decodes nothing until it is mended.
    let decodes = match store.get(id) {
        Err(
            StoreError::Damaged { .. }
            | StoreError::IdMismatch { .. }
            | StoreError::RowChanged { .. },
        ) => {
            "it is damaged: datums that name it decode once it is mended (`pgdict dict sync \
             --from DIR --repair`)"
        }
        _ => "datums that name it still decode",
    };
    let mut out = Output::stdout();
    if done {
        writeln!(
            out,
            "retired dictionary {id} in {}: {decodes}; `--dict auto` no longer picks it",
            store.describe()
        )?;
    } else {
        writeln!(
            out,
            "dictionary {id} was already retired in {}",
            store.describe()
        )?;
    }
    out.finish()?;
    Ok(0)
}

fn sync(store_args: &StoreArgs, args: &SyncArgs) -> anyhow::Result<u8> {
    // Flags that do not go together, found once the stores are opened: a usage error.
    let same_store = |name: String| {
        crate::fail::usage_error(
            format!("the source and the destination are the same store: {name}"),
            "give the other store with --to DIR, or --pg-store CONNINFO (default: --store)",
        )
    };
    let from: Box<dyn Store> = match (&args.from.from, &args.from.from_pg) {
        (Some(dir), _) => Box::new(open_dir(dir).context("cannot open the source store")?),
        (None, Some(conninfo)) => {
            Box::new(PgStore::connect(conninfo).context("cannot open the source PostgreSQL store")?)
        }
        (None, None) => unreachable!("clap requires --from or --from-pg"),
    };
    // The destination: --to, else the store every command uses (--pg-store, else --store).
    let to: Box<dyn Destination> = match (&args.to, &store_args.pg_store) {
        (None, Some(conninfo)) => {
            let to = PgStore::connect(conninfo)
                .context("cannot open the destination PostgreSQL store")?;
            if to.describe() == from.describe() {
                return Err(same_store(to.describe()));
            }
            Box::new(to)
        }
        (to, _) => {
            let to_path = to.clone().unwrap_or_else(|| store_args.store.clone());
            if let Some(from_dir) = &args.from.from {
                if same_dir(from_dir, &to_path) {
                    return Err(same_store(to_path.display().to_string()));
                }
            }
            Box::new(DirStore::create(&to_path).with_context(|| {
                format!("cannot open the destination store {}", to_path.display())
            })?)
        }
    };
    let options = dict::SyncOptions {
        repair: args.repair,
    };
    let mut report = dict::SyncReport::default();
    let synced = dict::sync_into(from.as_ref(), to.as_ref(), options, &mut report);
    let mut out = Output::stdout();
    if let Err(error) = synced {
        // What was done before the failure stays done (each dictionary complete, none that
        // the source retired left active): say what it was.
        if report.changed_destination() {
            writeln!(
                out,
                "stopped syncing {} from {}; done before the error:",
                to.describe(),
                from.describe()
            )?;
            write_sync_report(&mut out, &report, args.repair)?;
            out.finish()?;
        }
        return Err(anyhow::Error::new(error))
            .with_context(|| format!("cannot sync {} from {}", to.describe(), from.describe()));
    }
    writeln!(out, "synced {} from {}", to.describe(), from.describe())?;
    write_sync_report(&mut out, &report, args.repair)?;
    out.finish()?;
    Ok(0)
}

/// The lines of a sync's report: the ids copied, already there, retired there, repaired.
fn write_sync_report(
    out: &mut impl Write,
    report: &dict::SyncReport,
    repair: bool,
) -> std::io::Result<()> {
    let ids = |ids: &[u32]| -> String {
        if ids.is_empty() {
            "none".into()
        } else {
            ids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(out, "  copied:          {}", ids(&report.copied))?;
    writeln!(out, "  already there:   {}", ids(&report.present))?;
    writeln!(out, "  retired there:   {}", ids(&report.retired))?;
    if repair {
        let repaired: Vec<u32> = report.repaired.iter().map(|(id, _)| *id).collect();
        writeln!(out, "  repaired:        {}", ids(&repaired))?;
        for (id, kept_as) in &report.repaired {
            writeln!(
                out,
                "    dictionary {id}: the damaged file is kept as {}",
                kept_as.display()
            )?;
        }
    }
    Ok(())
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgdict::dict::{CodecSet, Metadata};

    fn measured_as(gain: &Gain) -> Dictionary {
        let mut metadata = Metadata::new();
        metadata.gains.push(gain.clone());
        Dictionary::new(1, CodecSet::ALL, 0, metadata, b"content").unwrap()
    }

    fn dictionary(id: u32, codecs: &[Codec]) -> Arc<Dictionary> {
        let content = format!("dictionary {id}");
        Arc::new(
            Dictionary::new(
                id,
                CodecSet::of(codecs),
                0,
                Metadata::new(),
                content.as_bytes(),
            )
            .unwrap(),
        )
    }

    fn active(id: u32, codecs: &[Codec]) -> Listed {
        let entry = StoreEntry { id, retired: false };
        (entry, Ok(dictionary(id, codecs)))
    }

    fn retired(id: u32, codecs: &[Codec]) -> Listed {
        let entry = StoreEntry { id, retired: true };
        (entry, Ok(dictionary(id, codecs)))
    }

    fn unreadable(id: u32, retired: bool) -> Listed {
        let error = StoreError::Damaged {
            location: format!("dicts/{id:08}.pgdict"),
            error: dict::FormatError::UnknownVersion { version: 9 },
        };
        (StoreEntry { id, retired }, Err(error))
    }

    #[test]
    fn auto_picks_the_newest_active_dictionary_for_each_codec() {
        use Codec::*;
        let entries = [
            active(1, &[Pglz, Lz4, Zstd]),
            active(2, &[Pglz]),
            active(3, &[Lz4]),
            retired(4, &[Pglz, Lz4]),
            unreadable(5, true),
        ];
        let auto = auto_ids(&entries);
        assert_eq!(auto, BTreeMap::from([(Pglz, 2), (Lz4, 3), (Zstd, 1)]));
        let statuses: Vec<String> = entries.iter().map(|(e, _)| status(e, &auto)).collect();
        assert_eq!(
            statuses,
            [
                "active, auto for zstd",
                "active, auto for pglz",
                "active, auto for lz4",
                "retired",
                "retired"
            ]
        );
        let picks = |entry: &Listed| {
            let (entry, dict) = entry;
            summary_json(entry, dict.as_ref().unwrap(), &auto)["auto_for"].clone()
        };
        assert_eq!(picks(&entries[0]), json!(["zstd"]));
        assert_eq!(picks(&entries[3]), json!([]));

        // One dictionary picked for two codecs.
        let auto = auto_ids(&[active(1, &[Zstd]), active(2, &[Pglz, Lz4])]);
        let entry = StoreEntry {
            id: 2,
            retired: false,
        };
        assert_eq!(status(&entry, &auto), "active, auto for pglz+lz4");
        let entry = StoreEntry {
            id: 3,
            retired: false,
        };
        assert_eq!(status(&entry, &auto), "active");

        // An active dictionary that cannot be read stops the picking, as --dict auto does.
        let entries = [active(1, &[Pglz]), unreadable(2, false), active(3, &[Lz4])];
        assert_eq!(auto_ids(&entries), BTreeMap::from([(Lz4, 3)]));
    }

    #[test]
    fn the_dictionaries_that_cannot_be_read_are_one_error_after_the_list() {
        let readable = [active(1, &[Codec::Pglz])];
        assert!(unreadable_error(readable.into()).is_ok());
        let one = unreadable_error(vec![active(1, &[Codec::Pglz]), unreadable(2, false)]);
        let one = format!("{:#}", one.unwrap_err());
        assert!(
            one.starts_with("cannot read dictionary 2: dictionary store: dicts/00000002.pgdict")
        );
        let two = unreadable_error(vec![
            unreadable(3, true),
            active(4, &[Codec::Pglz]),
            unreadable(5, false),
        ]);
        let two = format!("{:#}", two.unwrap_err());
        assert!(
            two.starts_with(
                "cannot read dictionaries 3, 5 (the first one's reason below): dictionary \
                 store: dicts/00000003.pgdict"
            ),
            "{two}"
        );
    }

    #[test]
    fn a_sync_report_lists_the_ids_and_the_repairs_only_when_asked() {
        let report = dict::SyncReport {
            copied: vec![1, 2],
            present: vec![],
            retired: vec![3],
            repaired: vec![(4, "dicts/.damaged-00000004-123-456".into())],
        };
        let written = |repair: bool| {
            let mut out = Vec::new();
            write_sync_report(&mut out, &report, repair).unwrap();
            String::from_utf8(out).unwrap()
        };
        let lines = "  copied:          1, 2\n  already there:   none\n  retired there:   3\n";
        assert_eq!(written(false), lines);
        assert_eq!(
            written(true),
            format!(
                "{lines}  repaired:        4\n    dictionary 4: the damaged file is kept as \
                 dicts/.damaged-00000004-123-456\n"
            )
        );
    }

    #[test]
    fn the_same_directory_however_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("dicts");
        std::fs::create_dir(&store).unwrap();
        assert!(same_dir(&store, &dir.path().join("./dicts/../dicts")));
        assert!(!same_dir(&store, dir.path()));
        // Not there (yet): the same path only.
        let missing = dir.path().join("new");
        assert!(same_dir(&missing, &missing));
        assert!(!same_dir(&missing, &store));
        assert!(!same_dir(&missing, &dir.path().join("other")));
    }

    #[test]
    fn gains_over_zero_bytes_show_as_dashes() {
        let measured_gain = Gain {
            codec: Codec::Lz4,
            rows: 3,
            raw_bytes: 3000,
            plain_bytes: 2000,
            dict_bytes: 1000,
        };
        let dict = measured_as(&measured_gain);
        assert_eq!(gains(&dict), "lz4 2.00x");
        assert_eq!(
            measured(&measured_gain),
            "on 3 held-out rows (3,000 bytes): plain lz4 stores 2,000 bytes, lz4 with this \
             dictionary 1,000: 2.00x smaller (ratio 1.50 -> 3.00)"
        );
        let entry = StoreEntry {
            id: 1,
            retired: false,
        };
        let json = summary_json(&entry, &dict, &BTreeMap::new());
        assert_eq!(json["gains"][0]["gain"], 2.0);

        // Metadata may say 0 bytes (no measurement does): no NaN.
        let zero = Gain {
            codec: Codec::Zstd,
            plain_bytes: 0,
            dict_bytes: 0,
            ..measured_gain
        };
        let dict = measured_as(&zero);
        assert_eq!(gains(&dict), "zstd - vs pglz");
        assert_eq!(
            measured(&zero),
            "on 3 held-out rows (3,000 bytes): plain pglz stores 0 bytes, zstd with this \
             dictionary 0: - smaller (ratio - -> -)"
        );
        assert_eq!(
            summary_json(&entry, &dict, &BTreeMap::new())["gains"][0]["gain"],
            Value::Null
        );
    }
}
