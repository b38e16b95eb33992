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
        let found = match choice {
            DictArg::Id(id) => vec![store
                .get(id)
                .with_context(|| format!("cannot load dictionary {id}"))?],
            DictArg::Auto => {
                let mut found = Vec::new();
                for codec in Codec::ALL {
                    if let Some(dict) = store
                        .active(codec)
                        .with_context(|| format!("cannot look for a {codec} dictionary"))?
                    {
                        found.push(dict);
                    }
                }
                found
            }
            // Refused by the argument parser.
            DictArg::None => continue,
        };
        for dict in found {
            let prepared = store
                .prepared(dict.id())
                .with_context(|| format!("cannot prepare dictionary {}", dict.id()))?;
            for codec in dict.codecs().iter() {
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
