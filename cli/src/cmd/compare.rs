//! `pgdict compare`: what dictionaries buy on a row source, against plain pglz.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use pgdict::datum::{Codec, PreparedDictionary};
use pgdict::dict::CodecSet;
use pgdict_trainer::progress::Bars;
use pgdict_trainer::source::SourceSpec;
use pgdict_trainer::{train_split, Builder, TrainError, TrainOptions, Trained};

use crate::fail::user_error;
use crate::measure::{self, Comparison, DictInfo, Timing};
use crate::output::Output;
use crate::report::{self, DictSummary, Setup};
use crate::row_input::{read_rows, ReadRows};
use crate::store::AnyStore;
use crate::text::{counted, thousands};
use crate::{CompareArgs, DictArg, StoreArgs};

/// Each phase (compress, decompress) is timed for at least this long, all methods together.
pub const MIN_TIME: Duration = Duration::from_millis(250);

/// The interleaved split: (training rows: the 2nd, 4th, ... ; evaluated rows: the others).
pub fn interleave(rows: Vec<Vec<u8>>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut train = Vec::with_capacity(rows.len() / 2);
    let mut eval = Vec::with_capacity(rows.len().div_ceil(2));
    for (i, row) in rows.into_iter().enumerate() {
        if i % 2 == 1 {
            train.push(row);
        } else {
            eval.push(row);
        }
    }
    (train, eval)
}

/// Trains a dictionary for `codec` on `train` (evaluated by the trainer on `holdout`).
pub fn train(
    train: &[Vec<u8>],
    holdout: &[Vec<u8>],
    codec: Codec,
    builder: Builder,
    bars: &Bars,
) -> Result<Trained, TrainError> {
    let options = TrainOptions {
        codec,
        builder,
        ..TrainOptions::default()
    };
    train_split(train, holdout, &options, bars)
}

/// How a trained dictionary is described in the report.
pub fn trained_origin(trained: &Trained) -> String {
    format!(
        "trained by the {} builder on {} rows in {:.2} s",
        trained.builder_name(),
        thousands(trained.train_rows),
        trained.train_seconds
    )
}

/// A trained dictionary, prepared under `id` for measuring.
pub fn trained_info(trained: &Trained, id: u32) -> anyhow::Result<DictInfo> {
    Ok(DictInfo {
        prepared: Arc::new(
            PreparedDictionary::for_codecs(
                id,
                &trained.content,
                CodecSet::only(trained.codec),
                pgdict::zstd::DEFAULT_LEVEL,
            )
            .context("cannot prepare the trained dictionary")?,
        ),
        id: None,
        origin: trained_origin(trained),
    })
}

pub fn run(store_args: &StoreArgs, args: &CompareArgs) -> anyhow::Result<u8> {
    // The rows needed: --max-rows evaluated, as many again to train on when training. An
    // input with more rows is sampled down to them as it is read (a large table is first
    // sampled by pages).
    let max = args.max_rows.max(1) as u64;
    let rows_wanted = Some(if args.dict.is_empty() {
        max.saturating_mul(2)
    } else {
        max
    });
    let chart = (args.svg.as_deref())
        .map(|path| Output::beside_report(path, "--svg"))
        .transpose()?;
    let bars = Bars::new(args.json);
    let ReadRows {
        spec,
        rows,
        rows_read,
        page_sample,
        short_sample,
    } = read_rows(&args.rows, rows_wanted, &bars)?;
    let input = spec.describe();
    if rows.is_empty() {
        let hint = match spec {
            SourceSpec::Postgres(_) => "the table is empty or the column holds only NULLs",
            _ => "give a file with rows (see `pgdict compare --help` for the formats)",
        };
        return Err(user_error(format!("{input} holds no rows"), hint));
    }
    let sampled = (rows.len() as u64) < rows_read;
    let total = rows.len();
    let (eval, dicts, train_rows, repeated_eval_rows) = if args.dict.is_empty() {
        if total < 2 {
            return Err(user_error(
                format!("{input} holds a single row: nothing to train on and evaluate apart"),
                "give more rows, or compare with dictionaries from the store: --dict auto",
            ));
        }
        let (train_part, eval) = interleave(rows);
        // The split keeps rows apart, not values: said in the report.
        let repeated = pgdict_trainer::sample::held_out_repeats(&train_part, &eval);
        let mut dicts: [Option<DictInfo>; 3] = [None, None, None];
        for codec in Codec::ALL {
            match train(&train_part, &eval, codec, args.builder.builder(), &bars) {
                Ok(trained) => {
                    dicts[codec.code() as usize] =
                        Some(trained_info(&trained, u32::from(codec.code()) + 1)?);
                }
                Err(TrainError::Build(error)) => {
                    eprintln!("pgdict: no {codec} dictionary: {error}");
                }
                // The trainer's words for these speak of its own sample and held-out share.
                Err(TrainError::NoRows { .. } | TrainError::AllHeldOut { .. }) => {
                    eprintln!(
                        "pgdict: no {codec} dictionary: the {} it would train on {} empty",
                        counted(train_part.len() as u64, "row"),
                        if train_part.len() == 1 { "is" } else { "are" }
                    );
                }
                Err(error) => {
                    return Err(error).with_context(|| format!("cannot train a {codec} dictionary"))
                }
            }
        }
        let train_rows = train_part.len();
        (eval, dicts, Some(train_rows), Some(repeated))
    } else {
        let store = AnyStore::open(store_args)?;
        let dicts = from_store(&store, &args.dict)?;
        for id in trained_on(&store, &dicts, &spec)? {
            eprintln!(
                "pgdict: note: dictionary {id} was trained on {input}: the rows it was built \
                 from are among those compared, and compress better than rows it has not seen \
                 (without --dict, compare trains on half of the rows and measures the other \
                 half)"
            );
        }
        (rows, dicts, None, None)
    };
    let comparison = measure::compare(
        &eval,
        &dicts,
        Timing {
            rounds: args.rounds,
            min_time: MIN_TIME,
        },
    )?;
    let setup = Setup {
        input: input.clone(),
        rows: rows_read,
        page_sample,
        short_sample,
        sampled: sampled.then_some(total),
        evaluated: eval.len(),
        train_rows,
        repeated_eval_rows,
        dicts: summaries(&dicts),
    };
    print(&setup, &comparison, args.json, chart, &input)?;
    Ok(0)
}

/// The report's view of the dictionaries.
pub fn summaries(dicts: &[Option<DictInfo>; 3]) -> [Option<DictSummary>; 3] {
    dicts.clone().map(|d| {
        d.map(|d| DictSummary {
            bytes: d.prepared.len(),
            id: d.id,
            origin: d.origin,
        })
    })
}

/// Prints the table (or JSON), then writes the chart into `chart`, made before the work
/// ([`Output::beside_report`]: an existing chart is replaced only by a whole one). The report
/// comes first: a chart that cannot be written (a full disk) does not take it with it.
pub fn print(
    setup: &Setup,
    comparison: &Comparison,
    json: bool,
    chart: Option<Output>,
    title: &str,
) -> anyhow::Result<()> {
    let mut out = Output::stdout();
    if json {
        writeln!(out, "{}", report::json(setup, comparison))?;
    } else {
        write!(out, "{}", report::table(setup, comparison))?;
    }
    out.finish()?;
    if let Some(mut chart) = chart {
        chart
            .write_all(crate::svg::chart(title, comparison).as_bytes())
            .with_context(|| format!("cannot write the chart to {}", chart.name()))?;
        chart.finish()?;
    }
    Ok(())
}

/// The ids of `dicts` whose recorded training source is `spec`: as the trainer records it
/// (its description, or a file's path), or as the demo does ([`crate::corpus::is_demo_source`]).
fn trained_on(
    store: &AnyStore,
    dicts: &[Option<DictInfo>; 3],
    spec: &SourceSpec,
) -> anyhow::Result<Vec<u32>> {
    let described = spec.describe();
    let file = match spec {
        SourceSpec::File { path, .. } => Some(path.as_path()),
        _ => None,
    };
    let mut ids: Vec<u32> = dicts.iter().flatten().filter_map(|d| d.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut same = Vec::new();
    for id in ids {
        let source = store
            .get(id)
            .with_context(|| format!("cannot load dictionary {id}"))?
            .metadata()
            .source;
        let trained_here = source.is_some_and(|source| {
            source == described
                || file.is_some_and(|file| {
                    source == file.display().to_string()
                        || crate::corpus::is_demo_source(&source, file)
                })
        });
        if trained_here {
            same.push(id);
        }
    }
    Ok(same)
}

/// The dictionaries `--dict` names, by codec: each id serves the codecs it was built for (the
/// first given wins), `auto` the newest active one per codec.
fn from_store(store: &AnyStore, choices: &[DictArg]) -> anyhow::Result<[Option<DictInfo>; 3]> {
    let mut dicts: [Option<DictInfo>; 3] = [None, None, None];
    for &choice in choices {
        // Each dictionary found, with the codecs it serves.
        let found = match choice {
            DictArg::Id(id) => {
                let dict = store
                    .get(id)
                    .with_context(|| format!("cannot load dictionary {id}"))?;
                vec![(dict.codecs(), dict)]
            }
            DictArg::Auto => {
                let mut found = Vec::new();
                for codec in Codec::ALL {
                    if let Some(dict) = store
                        .active(codec)
                        .with_context(|| format!("cannot look for a {codec} dictionary"))?
                    {
                        // Only the codec it was picked for: the newest for another codec may
                        // be another dictionary.
                        found.push((CodecSet::only(codec), dict));
                    }
                }
                found
            }
            // Refused by the argument parser.
            DictArg::None => continue,
        };
        for (codecs, dict) in found {
            let prepared = store
                .prepared(dict.id())
                .with_context(|| format!("cannot prepare dictionary {}", dict.id()))?;
            for codec in codecs.iter() {
                let slot = &mut dicts[codec.code() as usize];
                if slot.is_none() {
                    *slot = Some(DictInfo {
                        prepared: prepared.clone(),
                        id: Some(dict.id()),
                        // The source shows when `auto` took a dictionary trained on other
                        // rows (a store serving several columns).
                        origin: format!(
                            "dictionary {}{} of {}{}",
                            dict.id(),
                            // Named by id, a retired one is measured: said, as compress would
                            // refuse it.
                            if store.is_retired(dict.id())? {
                                " (retired)"
                            } else {
                                ""
                            },
                            store.describe(),
                            match dict.metadata().source {
                                Some(source) => format!(", trained on {source}"),
                                None => String::new(),
                            }
                        ),
                    });
                }
            }
        }
    }
    if dicts.iter().all(Option::is_none) {
        return Err(user_error(
            format!(
                "{} has no active dictionary to compare with",
                store.describe()
            ),
            "train some with `pgdict demo`, or compare without --dict (compare then trains on \
             half of the rows)",
        ));
    }
    Ok(dicts)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use pgdict::dict::Metadata;
    use pgdict_trainer::source::Format;

    use super::*;

    #[test]
    fn the_interleaved_split_trains_on_every_second_row() {
        let rows: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i]).collect();
        let (train, eval) = interleave(rows);
        assert_eq!(train, [[1], [3]]);
        assert_eq!(eval, [[0], [2], [4]]);
        assert_eq!(interleave(vec![vec![9]]), (vec![], vec![vec![9]]));
    }

    #[test]
    fn a_trained_dictionary_is_described_and_prepared_for_its_codec() {
        let rows = crate::corpus::load(crate::corpus::Sample::AppLogs)
            .unwrap()
            .rows;
        let (train_rows, eval) = interleave(rows);
        // Not the defaults (pglz, pgdict's builder).
        let trained = train(
            &train_rows,
            &eval,
            Codec::Lz4,
            Builder::Zstd,
            &Bars::new(true),
        )
        .unwrap();
        assert_eq!(trained.codec, Codec::Lz4);
        let origin = trained_origin(&trained);
        let expected = format!(
            "trained by the zstd builder on 1,000 rows in {:.2} s",
            trained.train_seconds
        );
        assert_eq!(origin, expected);
        let info = trained_info(&trained, 3).unwrap();
        assert_eq!((info.id, info.origin), (None, expected));
        assert_eq!(info.prepared.id(), 3);
        assert_eq!(info.prepared.len(), trained.content.len());
    }

    /// A directory store in `dir` holding, for each of `dicts`, a dictionary built for its
    /// codecs and trained on its source (ids from 1).
    fn store_holding(dir: &Path, dicts: &[(&[Codec], Option<&str>)]) -> AnyStore {
        let args = crate::store::tests::dir_store_args(dir.join("dicts"));
        let store = AnyStore::open_or_create(&args).unwrap();
        for (n, (codecs, source)) in dicts.iter().enumerate() {
            let mut metadata = Metadata::new();
            metadata.source = source.map(String::from);
            let content = format!("dictionary number {n} ").repeat(20);
            let added = store
                .add(CodecSet::of(codecs), content.as_bytes(), metadata)
                .unwrap();
            assert_eq!(added.id() as usize, n + 1);
        }
        store
    }

    /// Each codec's dictionary: its id and how the report describes it.
    fn chosen(dicts: &[Option<DictInfo>; 3]) -> Vec<Option<(u32, String)>> {
        let summaries = summaries(dicts);
        for (dict, summary) in dicts.iter().zip(&summaries) {
            if let (Some(dict), Some(summary)) = (dict, summary) {
                assert_eq!(summary.bytes, dict.prepared.len());
            }
        }
        summaries
            .into_iter()
            .map(|d| d.map(|d| (d.id.unwrap(), d.origin)))
            .collect()
    }

    #[test]
    fn dictionaries_from_the_store_serve_the_codecs_they_were_built_for() {
        use Codec::*;
        let dir = tempfile::tempdir().unwrap();
        let store = store_holding(
            dir.path(),
            &[
                (&[Pglz, Lz4], Some("rows.jsonl")),
                (&[Lz4], None),
                (&[Zstd], Some("other.csv")),
            ],
        );
        let of = format!("of {}", store.describe());
        let one = Some((1, format!("dictionary 1 {of}, trained on rows.jsonl")));
        let two = Some((2, format!("dictionary 2 {of}")));
        let three = Some((3, format!("dictionary 3 {of}, trained on other.csv")));
        let auto = from_store(&store, &[DictArg::Auto]).unwrap();
        assert_eq!(chosen(&auto), [one.clone(), two.clone(), three.clone()]);
        // The first given wins a codec.
        let first = from_store(&store, &[DictArg::Id(1), DictArg::Auto]).unwrap();
        assert_eq!(chosen(&first), [one.clone(), one.clone(), three]);
        let only = from_store(&store, &[DictArg::Id(2)]).unwrap();
        assert_eq!(chosen(&only), [None, two, None]);

        // Retired: auto passes it by; named by id, it is measured and said to be retired.
        assert!(store.retire(3).unwrap());
        let auto = from_store(&store, &[DictArg::Auto]).unwrap();
        assert_eq!(auto[Zstd.code() as usize].as_ref().map(|d| d.id), None);
        let retired = from_store(&store, &[DictArg::Id(3)]).unwrap();
        let three = Some((
            3,
            format!("dictionary 3 (retired) {of}, trained on other.csv"),
        ));
        assert_eq!(chosen(&retired), [None, None, three]);

        // Nothing to compare with.
        let refused = |choices: &[DictArg]| match from_store(&store, choices) {
            Ok(_) => panic!("{choices:?} taken"),
            Err(error) => error,
        };
        let error = refused(&[DictArg::None]);
        assert!(
            crate::fail::render(&error).contains("has no active dictionary to compare with"),
            "{error:#}"
        );
        let missing = refused(&[DictArg::Id(9)]);
        assert_eq!(missing.to_string(), "cannot load dictionary 9");
    }

    #[test]
    fn a_dictionary_trained_on_the_compared_rows_is_told() {
        use Codec::*;
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("rows.jsonl");
        std::fs::write(&rows, "{}\n").unwrap();
        let demo = dir.path().join("events.jsonl");
        let sample = crate::corpus::tests::in_repository(crate::corpus::Sample::Events);
        std::fs::copy(sample, &demo).unwrap();
        let spec = SourceSpec::from_arg(&rows, None);
        let described = spec.describe();
        let rows_path = rows.display().to_string();
        let store = store_holding(
            dir.path(),
            &[
                (&[Pglz], Some(&rows_path)),
                (&[Lz4], Some(&described)),
                (&[Zstd], Some("corpus/events.jsonl")),
                (&[Pglz, Lz4], Some("other.jsonl")),
                (&[Zstd], None),
            ],
        );
        let trained_on_dicts = |ids: [u32; 3], spec: &SourceSpec| {
            let dicts = ids.map(|id| from_store(&store, &[DictArg::Id(id)]).unwrap());
            let dicts = [0, 1, 2].map(|codec| dicts[codec][codec].clone());
            trained_on(&store, &dicts, spec).unwrap()
        };
        // By its path or its description; each id once.
        assert_eq!(trained_on_dicts([1, 2, 5], &spec), [1, 2]);
        assert_eq!(trained_on_dicts([1, 4, 5], &spec), [1]);
        assert_eq!(trained_on_dicts([4, 4, 5], &spec), Vec::<u32>::new());
        // The demo's sample, by its bytes.
        let demo_spec = SourceSpec::from_arg(&demo, Some(Format::Lines));
        assert_eq!(trained_on_dicts([4, 4, 3], &demo_spec), [3]);
        assert_eq!(
            trained_on_dicts([1, 2, 3], &SourceSpec::Stdin(Format::Lines)),
            Vec::<u32>::new()
        );
    }
}
