//! `pgdict demo`: the quick start on the bundled sample rows.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use pgdict::datum::Codec;
use pgdict::dict::{CodecSet, Dictionary};
use pgdict_trainer::progress::Bars;
use serde_json::json;

use crate::cmd::compare::{self, interleave, trained_info, trained_origin, MIN_TIME};
use crate::corpus;
use crate::measure::{self, DictInfo, Timing};
use crate::output::Output;
use crate::report::Setup;
use crate::store::AnyStore;
use crate::text::thousands;
use crate::{DemoArgs, StoreArgs};

pub fn run(store_args: &StoreArgs, args: &DemoArgs) -> anyhow::Result<u8> {
    let loaded = corpus::load(args.sample)?;
    let total = loaded.rows.len();
    let (train_rows, eval_rows) = interleave(loaded.rows);
    let store = AnyStore::open_or_create(store_args)?;
    let bars = Bars::new(false);
    let mut out = Output::stdout();
    // A reader that goes early (`pgdict demo | head -1`) does not stop the dictionaries from
    // being stored: the store must not depend on who reads the output.
    let mut reader_gone = false;
    let title = format!(
        "pgdict demo: {} sample rows of {}",
        thousands(total as u64),
        loaded.origin
    );
    say(&mut out, &mut reader_gone, &title)?;

    let mut dicts: [Option<DictInfo>; 3] = [None, None, None];
    for codec in Codec::ALL {
        if reader_gone && codec == Codec::Zstd {
            break; // Trained for the comparison alone, which nobody would read.
        }
        let trained = compare::train(
            &train_rows,
            &eval_rows,
            codec,
            args.builder.builder(),
            &bars,
        )
        .with_context(|| format!("cannot train the {codec} dictionary"))?;
        if codec == Codec::Zstd {
            // Trained for the comparison only: the quick start stores PostgreSQL's two codecs.
            let mut info = trained_info(&trained, 1)?;
            info.origin = format!("{} (not stored)", info.origin);
            dicts[codec.code() as usize] = Some(info);
            continue;
        }
        let mut parameters = serde_json::Map::new();
        parameters.insert("split".into(), json!("interleaved: the 2nd, 4th, ... rows"));
        parameters.insert("demo".into(), json!(args.sample.name()));
        let metadata = trained.metadata(&loaded.origin, parameters);
        let (dict, added) = match same_content(&store, codec, &trained.content)? {
            Some(dict) => (dict, false),
            None => (
                store
                    .add(CodecSet::only(codec), &trained.content, metadata)
                    .with_context(|| format!("cannot add the {codec} dictionary to the store"))?,
                true,
            ),
        };
        let what = format!(
            "dictionary {} ({codec}, {} bytes)",
            dict.id(),
            thousands(dict.content().len() as u64)
        );
        let done = match added {
            true => format!("added {what} to {}", store.describe()),
            false => format!("kept {what}: {} already holds it", store.describe()),
        };
        say(&mut out, &mut reader_gone, &done)?;
        dicts[codec.code() as usize] = Some(DictInfo {
            prepared: store
                .prepared(dict.id())
                .with_context(|| format!("cannot prepare dictionary {}", dict.id()))?,
            id: Some(dict.id()),
            origin: format!("dictionary {}, {}", dict.id(), trained_origin(&trained)),
        });
    }
    if reader_gone {
        return Ok(0); // The comparison is for the reader alone.
    }
    writeln!(out)?;
    let comparison = measure::compare(
        &eval_rows,
        &dicts,
        Timing {
            rounds: args.rounds,
            min_time: MIN_TIME,
        },
    )?;
    let setup = Setup {
        input: loaded.origin.clone(),
        rows: total as u64,
        page_sample: None,
        short_sample: None,
        sampled: None,
        evaluated: eval_rows.len(),
        train_rows: Some(train_rows.len()),
        repeated_eval_rows: Some(pgdict_trainer::sample::held_out_repeats(
            &train_rows,
            &eval_rows,
        )),
        dicts: compare::summaries(&dicts),
    };
    write!(out, "{}", crate::report::table(&setup, &comparison))?;
    let path = args.sample.path();
    let rows = if loaded.from_file {
        path.display().to_string()
    } else {
        "ROWS".to_string()
    };
    // The store the demo used, so that the commands below read it (not ./dicts). The
    // connection string is not echoed: it may hold a password.
    let store_flag = match &store_args.pg_store {
        Some(_) => " --pg-store CONNINFO".to_string(),
        None if store_args.store == std::path::Path::new("dicts") => String::new(),
        None => format!(" --store {}", store_args.store.display()),
    };
    writeln!(out)?;
    writeln!(
        out,
        "next (pgdict is target/release/pgdict once built; `pgdict COMMAND --help` explains each):"
    )?;
    writeln!(out, "  pgdict{store_flag} dict list")?;
    writeln!(
        out,
        "  pgdict{store_flag} compress {rows} --hex | head -3      # one bytea literal per row"
    )?;
    writeln!(
        out,
        "  pgdict{store_flag} compress {rows} -o rows.datums && pgdict{store_flag} inspect rows.datums | head"
    )?;
    writeln!(
        out,
        "  pgdict compare --svg ratio.svg {}",
        if loaded.from_file {
            corpus::Sample::OrdersCsv.path().display().to_string()
        } else {
            "ROWS".into()
        }
    )?;
    out.finish()?;
    Ok(0)
}

/// Writes `line` and a line end to `out` at once, unless its reader has gone (`reader_gone`,
/// set here when a write finds the pipe closed).
fn say(out: &mut impl Write, reader_gone: &mut bool, line: &str) -> std::io::Result<()> {
    if *reader_gone {
        return Ok(());
    }
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            *reader_gone = true;
            Ok(())
        }
        written => written,
    }
}

/// The dictionary `--dict auto` picks for `codec`, if it has this content: running the demo
/// again (the builders are deterministic) keeps it rather than adding a copy.
fn same_content(
    store: &AnyStore,
    codec: Codec,
    content: &[u8],
) -> anyhow::Result<Option<Arc<Dictionary>>> {
    let sha = pgdict::dict::file::sha256(content);
    Ok(store
        .active(codec)
        .with_context(|| format!("cannot look for a {codec} dictionary"))?
        .filter(|dict| dict.content_sha256() == sha))
}

#[cfg(test)]
mod tests {
    use std::io;

    use pgdict::dict::Metadata;

    use super::*;

    /// A writer that takes writes until `fail` is set, then fails them with it, and counts
    /// its flushes.
    #[derive(Default)]
    struct Reader {
        taken: Vec<u8>,
        flushes: usize,
        fail: Option<io::ErrorKind>,
    }

    impl Write for Reader {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            match self.fail {
                Some(kind) => Err(kind.into()),
                None => self.taken.write(buf),
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }

    #[test]
    fn a_line_is_said_at_once_until_the_reader_goes() {
        let mut reader = Reader::default();
        let mut gone = false;
        say(&mut reader, &mut gone, "one").unwrap();
        assert_eq!(
            (&reader.taken[..], reader.flushes, gone),
            (&b"one\n"[..], 1, false)
        );
        // The reader goes: not an error, and nothing more is written.
        reader.fail = Some(io::ErrorKind::BrokenPipe);
        say(&mut reader, &mut gone, "two").unwrap();
        assert!(gone);
        reader.fail = None;
        say(&mut reader, &mut gone, "three").unwrap();
        assert_eq!((&reader.taken[..], reader.flushes), (&b"one\n"[..], 1));
        // Any other failure is an error.
        let mut reader = Reader {
            fail: Some(io::ErrorKind::StorageFull),
            ..Reader::default()
        };
        let mut gone = false;
        let error = say(&mut reader, &mut gone, "one").unwrap_err();
        assert_eq!((error.kind(), gone), (io::ErrorKind::StorageFull, false));
    }

    #[test]
    fn a_dictionary_is_kept_when_auto_picks_one_with_the_same_content() {
        let dir = tempfile::tempdir().unwrap();
        let args = crate::store::tests::dir_store_args(dir.path().join("dicts"));
        let store = AnyStore::open_or_create(&args).unwrap();
        let content = "a trained dictionary ".repeat(20);
        let kept = |codec, content: &str| {
            same_content(&store, codec, content.as_bytes())
                .unwrap()
                .map(|dict| dict.id())
        };
        assert_eq!(kept(Codec::Pglz, &content), None);
        let add = |content: &str| {
            store
                .add(
                    CodecSet::only(Codec::Pglz),
                    content.as_bytes(),
                    Metadata::new(),
                )
                .unwrap()
                .id()
        };
        let id = add(&content);
        assert_eq!(kept(Codec::Pglz, &content), Some(id));
        assert_eq!(kept(Codec::Lz4, &content), None);
        assert_eq!(kept(Codec::Pglz, "another dictionary"), None);
        // Only the one auto picks: a newer one with other content takes its place.
        add("a newer dictionary");
        assert_eq!(kept(Codec::Pglz, &content), None);
    }
}
