//! Training in one call: split rows, build a dictionary, measure it on the held-out rows, and
//! (separately) put it in a store with its provenance.
//!
//! The crate documentation has an example that trains, stores and compresses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::parser::ValueSource;
use pgdict::datum::{Codec, DatumError, PreparedDictionary};
use pgdict::dict::file::{self, MAX_CONTENT_LEN};
use pgdict::dict::{CodecSet, Dictionary, DirStore, Metadata, StoreError};
use pgdict::zstd;
use serde_json::{json, Map, Value};

use crate::build::{BuildError, Builder};
use crate::eval::{self, EvalError, Evaluation, Method, EVAL_DICT_ID};
use crate::progress::{counted, thousands, InputProgress, NoProgress, Phase, Progress};
use crate::sample::{Limits, Sampler};
use crate::source::SourceError;

/// The default dictionary size for pglz: 4 KiB (pglz reaches the last 4095 bytes of it).
pub const PGLZ_DEFAULT_SIZE: usize = 4096;
/// The default dictionary size for lz4: 64 KiB, all that lz4 reaches.
pub const LZ4_DEFAULT_SIZE: usize = 64 * 1024;
/// The default share of rows held out for evaluation.
pub const DEFAULT_HOLDOUT: f64 = 0.2;
/// A dictionary must save at least this share of the bytes plain compression stores, on the
/// held-out rows, to be stored (without `--force`): 1 %. Under that it costs a lookup per
/// datum and a file to keep in sync for nothing a user would notice.
pub const MIN_SAVING: f64 = 0.01;

/// The default size of a dictionary for `codec` (zstd: 64 KiB, as lz4).
pub fn default_size(codec: Codec) -> usize {
    match codec {
        Codec::Pglz => PGLZ_DEFAULT_SIZE,
        Codec::Lz4 | Codec::Zstd => LZ4_DEFAULT_SIZE,
    }
}

/// How to train.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainOptions {
    /// The codec the dictionary is for.
    pub codec: Codec,
    /// Which builder.
    pub builder: Builder,
    /// The dictionary's size at most; `None`: [`default_size`] of the codec.
    pub size: Option<usize>,
    /// The share of rows held out for evaluation (0 to 1; [`train`] only: [`train_split`] is
    /// given its held-out rows).
    pub holdout: f64,
    /// The seed of the split.
    pub seed: u64,
    /// The id the dictionary is measured under: every dictionary datum's header holds it as
    /// LEB128 (1 byte up to 127, 2 up to 16,383), so the store's next id measures the datums
    /// as they will be stored. Default [`EVAL_DICT_ID`] (1).
    pub dict_id: u32,
}

impl Default for TrainOptions {
    /// pglz, pgdict's builder, 4 KiB, 20 % held out, seed 0, measured as dictionary 1.
    fn default() -> Self {
        TrainOptions {
            codec: Codec::Pglz,
            builder: Builder::Pgdict,
            size: None,
            holdout: DEFAULT_HOLDOUT,
            seed: 0,
            dict_id: EVAL_DICT_ID,
        }
    }
}

impl TrainOptions {
    /// The size the dictionary is built at.
    pub fn size(&self) -> usize {
        self.size.unwrap_or_else(|| default_size(self.codec))
    }
}

/// A dictionary built and measured, not yet stored.
#[derive(Clone, Debug)]
pub struct Trained {
    /// The codec it was built for.
    pub codec: Codec,
    /// Its bytes (never empty).
    pub content: Vec<u8>,
    /// The builder that made it ([`Builder::for_codec`]: zstd's trainer for every zstd
    /// dictionary, whichever builder was asked for); `None` for content given to
    /// [`measure_content`], which was not built.
    pub builder: Option<Builder>,
    /// The size asked for (the content may be shorter); given content, its length.
    pub size: usize,
    /// Seconds the builder took (0 for given content).
    pub train_seconds: f64,
    /// How many rows it was built from (0 for given content).
    pub train_rows: u64,
    /// Bytes of the training rows.
    pub train_bytes: u64,
    /// What it does to the held-out rows.
    pub evaluation: Evaluation,
    /// The id it was measured under ([`TrainOptions::dict_id`]).
    pub measured_as_id: u32,
}

impl Trained {
    /// Whether the dictionary saves at least [`MIN_SAVING`] of what plain compression with its
    /// codec stores (plain pglz for zstd, see [`Method::baseline`]), on the held-out rows
    /// (false when there were none).
    pub fn helps(&self) -> bool {
        self.evaluation.helps(self.codec, MIN_SAVING)
    }

    /// Plain pglz stored bytes over the stored bytes with the dictionary (its codec's), on the
    /// held-out rows: how many times smaller the dictionary makes them than PostgreSQL's
    /// default. 0 without held-out rows.
    pub fn gain_vs_pglz(&self) -> f64 {
        self.gain_vs(Method::Pglz)
    }

    /// The same against plain lz4.
    pub fn gain_vs_lz4(&self) -> f64 {
        self.gain_vs(Method::Lz4)
    }

    fn gain_vs(&self, baseline: Method) -> f64 {
        Method::of(self.codec, true)
            .and_then(|m| self.evaluation.all.gain(m, baseline))
            .unwrap_or(0.0)
    }

    /// [`TrainError::DoesNotHelp`] unless the dictionary [`helps`](Trained::helps);
    /// [`TrainError::NothingHeldOut`] when there were no held-out rows to judge by.
    pub fn check_helps(&self) -> Result<(), TrainError> {
        if self.helps() {
            return Ok(());
        }
        if self.evaluation.all.datums == 0 {
            return Err(TrainError::NothingHeldOut);
        }
        let codec = self.codec;
        let baseline = Method::baseline(codec);
        let plain = self.evaluation.all.get(baseline);
        let dict = Method::of(codec, true).and_then(|m| self.evaluation.all.get(m));
        if self.evaluation.saves_over_plain(codec, MIN_SAVING) {
            // So the saving over an empty dictionary is what falls short.
            if let (Some(plain), Some(dict), Some(empty)) =
                (plain, dict, self.evaluation.empty_dict_bytes)
            {
                return Err(TrainError::ContentDoesNotHelp {
                    codec,
                    baseline: baseline.codec(),
                    rows: self.evaluation.all.datums,
                    plain_bytes: plain.stored_bytes,
                    empty_bytes: empty,
                    dict_bytes: dict.stored_bytes,
                });
            }
        }
        Err(TrainError::DoesNotHelp {
            codec,
            baseline: baseline.codec(),
            rows: self.evaluation.all.datums,
            plain_bytes: plain.map_or(0, |m| m.stored_bytes),
            dict_bytes: dict.map_or(0, |m| m.stored_bytes),
        })
    }

    /// The builder's name (`--builder`), or `given` for content that was not built.
    pub fn builder_name(&self) -> &'static str {
        self.builder.map_or("given", Builder::name)
    }

    /// The metadata to store with the dictionary: `source` (the rows it was built from and
    /// measured on), the trainer and builder, the sample, the parameters given, and the
    /// measured gain ([`Gain`](pgdict::dict::Gain) for its codec; the whole evaluation under
    /// the key `eval`). Given content has no builder, sample or build time.
    pub fn metadata(&self, source: &str, parameters: Map<String, Value>) -> Metadata {
        let mut metadata = Metadata::new();
        metadata.source = Some(source.to_string());
        let version = env!("CARGO_PKG_VERSION");
        metadata.trainer = Some(match self.builder {
            Some(builder) => format!("pgdict-trainer {version} builder={builder}"),
            None => format!("pgdict-trainer {version} content given, not built"),
        });
        metadata.parameters = parameters;
        metadata
            .parameters
            .insert("size".into(), (self.size as u64).into());
        if self.builder.is_some() {
            metadata.sample_rows = Some(self.train_rows);
            metadata.sample_bytes = Some(self.train_bytes);
            metadata
                .parameters
                .insert("train_seconds".into(), json!(round3(self.train_seconds)));
        }
        metadata
            .gains
            .extend(self.evaluation.gain_record(self.codec));
        metadata
            .other
            .insert("eval".into(), evaluation_json(&self.evaluation));
        metadata
    }
}

/// `x` to three decimal places, as the trainer's JSON reports give ratios, gains, speeds and
/// seconds.
pub fn round3(x: f64) -> f64 {
    round_to(x, 3)
}

/// `x` to `places` decimal places (halves away from zero), as the JSON reports give their
/// numbers: no more digits than the measurement holds.
pub fn round_to(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// The evaluation as JSON: `datums`, `raw_bytes`, an object per method (`stored_bytes`,
/// `ratio`, `dict_datums`, `raw_datums`, `compress_mb_s`, `decompress_mb_s`), the gains of
/// the dictionary methods over plain pglz and lz4 (`pglz_dict_vs_pglz`, ...), and the same
/// per size bucket under `buckets` (keyed by label: `<64`, `64-256`, `256-1K`, `1K-4K`,
/// `>=4K`; all five, with null ratios and speeds where a bucket has no rows).
pub fn evaluation_json(evaluation: &Evaluation) -> Value {
    fn group(g: &eval::Group) -> Value {
        // Ratios and speeds of no rows are not numbers: null.
        let num = |x: f64| {
            if g.datums > 0 && x.is_finite() {
                json!(round3(x))
            } else {
                Value::Null
            }
        };
        let mut map = Map::new();
        map.insert("datums".into(), g.datums.into());
        map.insert("raw_bytes".into(), g.raw_bytes.into());
        for method in Method::ALL {
            if let Some(m) = g.get(method) {
                map.insert(
                    method.name().into(),
                    json!({
                        "stored_bytes": m.stored_bytes,
                        "ratio": num(m.ratio(g.raw_bytes)),
                        "dict_datums": m.dict_datums,
                        "raw_datums": m.raw_datums,
                        "compress_mb_s": num(m.compress_mb_s(g.raw_bytes)),
                        "decompress_mb_s": num(m.decompress_mb_s(g.raw_bytes)),
                    }),
                );
            }
        }
        for method in Method::ALL.into_iter().filter(|m| m.uses_dict()) {
            for baseline in [Method::Pglz, Method::Lz4] {
                if let Some(gain) = g.gain(method, baseline) {
                    let key = format!("{}_vs_{}", method.name(), baseline.name());
                    map.insert(key, num(gain));
                }
            }
        }
        Value::Object(map)
    }
    let mut all = group(&evaluation.all);
    if let Value::Object(map) = &mut all {
        let buckets: Map<String, Value> = evaluation
            .buckets
            .iter()
            .filter_map(|b| Some((b.bucket?.label().to_string(), group(b))))
            .collect();
        map.insert("buckets".into(), Value::Object(buckets));
        if let Some(empty) = evaluation.empty_dict_bytes {
            map.insert("empty_dict_stored_bytes".into(), empty.into());
        }
    }
    all
}

/// Why training (or storing) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// The source gave no rows (or only empty ones): nothing to learn from, and no dictionary
    /// is made.
    #[error(
        "no rows to train on: {origin} gave no datums{}; no dictionary was created",
        if *.seen > 0 { format!(" (of {}, none fit the sample bounds)", counted(*.seen, "row")) } else { String::new() }
    )]
    NoRows {
        /// The source.
        origin: String,
        /// Rows the source gave (all too large for the bounds, when not 0).
        seen: u64,
    },
    /// The source gave no rows to measure given content on (`pgdict-trainer --content`):
    /// nothing is stored.
    #[error(
        "no rows to measure the given dictionary on: {origin} gave no datums{}; nothing was stored",
        if *.seen > 0 { format!(" (of {}, none fit the sample bounds)", counted(*.seen, "row")) } else { String::new() }
    )]
    NoRowsToMeasure {
        /// The source.
        origin: String,
        /// Rows the source gave (all too large for the bounds, when not 0).
        seen: u64,
    },
    /// Every sampled row was held out (a source of a row or two, as the draw fell): nothing
    /// is left to build from.
    #[error(
        "{} held out to measure the dictionary on, and none is left to train on; no \
         dictionary was created",
        if *.rows == 1 { "the one sampled row was".to_string() } else { format!("all {rows} sampled rows were") }
    )]
    AllHeldOut {
        /// The rows held out.
        rows: usize,
    },
    /// Reading the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The builder failed.
    #[error("building the dictionary: {0}")]
    Build(#[from] BuildError),
    /// Evaluating failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// Content given to [`measure_content`] cannot be a dictionary ([`check_content`]).
    #[error("the dictionary content {0}")]
    BadContent(String),
    /// The dictionary could not be prepared for the codecs.
    #[error("preparing the dictionary: {0}")]
    Prepare(pgdict::datum::DatumError),
    /// The dictionary does not save enough on the held-out rows.
    #[error(
        "the dictionary does not help: on {}, {codec} with it stores {dict_bytes} \
         bytes against {plain_bytes} for plain {baseline} (it must save at least {}%); not stored \
         (--force stores it anyway)",
        counted(*.rows, "held-out row"),
        MIN_SAVING * 100.0
    )]
    DoesNotHelp {
        /// The codec judged.
        codec: Codec,
        /// What it was judged against, without a dictionary: the same codec (pglz for zstd).
        baseline: Codec,
        /// Held-out rows (0: none to judge by).
        rows: u64,
        /// Stored bytes with plain `baseline` compression.
        plain_bytes: u64,
        /// Stored bytes with the dictionary.
        dict_bytes: u64,
    },
    /// The dictionary saves over plain compression, but no more than an empty dictionary
    /// does ([`Evaluation::empty_dict_bytes`](crate::eval::Evaluation::empty_dict_bytes)):
    /// the saving is the dictionary form's, not the content's.
    #[error(
        "the dictionary's content does not help: on {}, {codec} with it stores {dict_bytes} \
         bytes against {plain_bytes} for plain {baseline}, but {empty_bytes} with an empty \
         dictionary (the dictionary form's own saving; the content must save at least {}% \
         more); not stored (--force stores it anyway)",
        counted(*.rows, "held-out row"),
        MIN_SAVING * 100.0
    )]
    ContentDoesNotHelp {
        /// The codec judged.
        codec: Codec,
        /// What it was judged against, without a dictionary: the same codec (pglz for zstd).
        baseline: Codec,
        /// Held-out rows.
        rows: u64,
        /// Stored bytes with plain `baseline` compression.
        plain_bytes: u64,
        /// Stored bytes with `codec` and an empty dictionary.
        empty_bytes: u64,
        /// Stored bytes with the dictionary.
        dict_bytes: u64,
    },
    /// No rows were held out, so the gain could not be measured.
    #[error(
        "no rows were held out to measure the dictionary on (--holdout is 0, or the source \
         has too few rows); not stored (--force stores it anyway)"
    )]
    NothingHeldOut,
    /// Writing to the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Splits `rows` into training and held-out rows (a seeded draw: each row is held out with
/// probability `holdout`; see [`crate::sample`]), builds a dictionary from the first and
/// evaluates it on the second.
pub fn train(rows: &[Vec<u8>], options: &TrainOptions) -> Result<Trained, TrainError> {
    let (train_rows, holdout) = split(rows, options.holdout, options.seed);
    train_split(&train_rows, &holdout, options, &NoProgress)
}

/// The seeded split [`train`] makes: (training rows, held-out rows), each in input order.
/// Empty rows are dropped.
pub fn split(rows: &[Vec<u8>], holdout: f64, seed: u64) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut sampler = Sampler::new(seed, Limits::UNBOUNDED, Limits::UNBOUNDED, holdout);
    for row in rows.iter().filter(|r| !r.is_empty()) {
        sampler.push(row);
    }
    let sample = sampler.finish();
    (sample.train, sample.eval)
}

/// Builds a dictionary from `train_rows` and evaluates it on `holdout` (which should share no
/// row with them); `options.holdout` and `options.seed` are not used. Fails with
/// [`TrainError::NoRows`] when there is nothing to train on: an empty dictionary is never
/// returned.
pub fn train_split(
    train_rows: &[Vec<u8>],
    holdout: &[Vec<u8>],
    options: &TrainOptions,
    progress: &dyn Progress,
) -> Result<Trained, TrainError> {
    if train_rows.iter().all(|r| r.is_empty()) {
        let held_out = holdout.iter().filter(|r| !r.is_empty()).count();
        if held_out > 0 {
            return Err(TrainError::AllHeldOut { rows: held_out });
        }
        return Err(TrainError::NoRows {
            origin: "the sample".into(),
            seen: 0,
        });
    }
    let size = options.size();
    progress.begin(Phase::Building, None);
    let start = Instant::now();
    let content = options
        .builder
        .build_noting(train_rows, options.codec, size, &|stage| {
            progress.note(stage)
        })?;
    let train_seconds = start.elapsed().as_secs_f64();
    progress.end(&format!(
        "{} bytes from {} in {train_seconds:.2} s",
        content.len(),
        counted(train_rows.len() as u64, "row")
    ));
    // The builders never return an empty dictionary; keep the promise whatever they do.
    if content.is_empty() {
        return Err(BuildError::NothingToLearn {
            rows: train_rows.len(),
            size,
        }
        .into());
    }
    let evaluation = evaluate_content(&content, options.dict_id, holdout, options.codec, progress)?;
    Ok(Trained {
        codec: options.codec,
        content,
        builder: Some(options.builder.for_codec(options.codec)),
        size,
        train_seconds,
        train_rows: train_rows.len() as u64,
        train_bytes: train_rows.iter().map(|r| r.len() as u64).sum(),
        evaluation,
        measured_as_id: options.dict_id,
    })
}

/// Measures `content`, a dictionary made elsewhere (`pgdict dict show --content` writes one
/// out of a store), on `holdout` as [`train_split`] measures a built one, as dictionary
/// `dict_id` ([`TrainOptions::dict_id`]); nothing is built. The result is judged
/// ([`Trained::check_helps`]) and stored ([`store()`]) as a built one. Refuses content that
/// [`check_content`] refuses.
pub fn measure_content(
    content: Vec<u8>,
    dict_id: u32,
    holdout: &[Vec<u8>],
    codec: Codec,
    progress: &dyn Progress,
) -> Result<Trained, TrainError> {
    check_content(&content, CodecSet::only(codec)).map_err(TrainError::BadContent)?;
    let evaluation = evaluate_content(&content, dict_id, holdout, codec, progress)?;
    Ok(Trained {
        codec,
        size: content.len(),
        content,
        builder: None,
        train_seconds: 0.0,
        train_rows: 0,
        train_bytes: 0,
        evaluation,
        measured_as_id: dict_id,
    })
}

/// What to do instead of giving a dictionary file ([`is_dictionary_file`]) as content.
pub const DICTIONARY_FILE_HINT: &str = "give its content: `pgdict dict show ID --content FILE` \
     writes a stored dictionary's content to FILE; to copy dictionaries from one store to \
     another, use `pgdict dict sync --from DIR`";

/// Whether `content` is a whole pgdict dictionary file (it starts with the file's magic):
/// stored as content, its header, metadata and checksums would be a new dictionary's history.
pub fn is_dictionary_file(content: &[u8]) -> bool {
    content.starts_with(&file::MAGIC)
}

/// Why `content` cannot be a dictionary: empty, a whole dictionary file
/// ([`is_dictionary_file`]), longer than a dictionary file holds ([`MAX_CONTENT_LEN`], 1 MiB),
/// or, where `codecs` holds zstd, starting with zstd's dictionary magic number without being a
/// zstd dictionary (zstd would refuse it; pglz and lz4 take any bytes).
pub fn check_content(content: &[u8], codecs: CodecSet) -> Result<(), String> {
    if content.is_empty() {
        return Err("is empty: a dictionary needs content".into());
    }
    if is_dictionary_file(content) {
        return Err(
            "is a pgdict dictionary file (header, metadata and checksums), not a \
                    dictionary's content"
                .into(),
        );
    }
    if content.len() > MAX_CONTENT_LEN {
        return Err(format!(
            "holds more than {} bytes, a dictionary's limit",
            thousands(MAX_CONTENT_LEN as u64)
        ));
    }
    match PreparedDictionary::for_codecs(EVAL_DICT_ID, content, codecs, zstd::DEFAULT_LEVEL) {
        Err(DatumError::DictionaryPrepare { error, .. }) => {
            Err(format!("cannot be read as a dictionary: {error}"))
        }
        _ => Ok(()),
    }
}

/// `content` prepared as dictionary `dict_id` and measured on `holdout`.
fn evaluate_content(
    content: &[u8],
    dict_id: u32,
    holdout: &[Vec<u8>],
    codec: Codec,
    progress: &dyn Progress,
) -> Result<Evaluation, TrainError> {
    let codecs = eval::measured_codecs(codec);
    let prepared = PreparedDictionary::for_codecs(dict_id, content, codecs, zstd::DEFAULT_LEVEL);
    let prepared = Arc::new(prepared.map_err(TrainError::Prepare)?);
    Ok(eval::evaluate(holdout, Some(&prepared), codec, progress)?)
}

/// Where a dictionary goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreTarget {
    /// A directory store (created if missing).
    Dir(PathBuf),
    /// A PostgreSQL store, by connection string.
    Pg(String),
}

/// `--store` and `--pg-store` both given on the command line: a usage error in both commands.
#[derive(Debug, thiserror::Error)]
#[error("the argument '--store <DIR>' cannot be used with '--pg-store <CONNINFO>'")]
pub struct StoreFlagsConflict;

/// The PostgreSQL store `pgdict` and `pgdict-trainer` alike use (`None`: the directory store),
/// from `--pg-store`'s value (`conninfo`: the flag's, or `PGDICT_PG_STORE`'s) and where it and
/// `--store` got theirs: the two flags together are refused; a flag outranks the environment
/// (`--store` outranks `PGDICT_PG_STORE`); a PostgreSQL store outranks a directory named by
/// `PGDICT_STORE` or the default; and an empty `PGDICT_PG_STORE` (exported empty to unset it)
/// names no store, as an empty `PGDICT_STORE` names none, rather than the local server's
/// defaults.
pub fn chosen_pg_store(
    store: Option<ValueSource>,
    pg_store: Option<ValueSource>,
    conninfo: Option<String>,
) -> Result<Option<String>, StoreFlagsConflict> {
    let command_line = Some(ValueSource::CommandLine);
    match (store == command_line, pg_store == command_line) {
        (true, true) => Err(StoreFlagsConflict),
        (true, false) => Ok(None),
        (false, true) => Ok(conninfo),
        (false, false) => Ok(conninfo.filter(|conninfo| !conninfo.is_empty())),
    }
}

impl StoreTarget {
    /// The default: the directory store at [`DirStore::default_path`] (`$PGDICT_STORE`, else
    /// `dicts`).
    pub fn default_dir() -> StoreTarget {
        StoreTarget::Dir(DirStore::default_path())
    }

    /// What it is, for messages (no password).
    pub fn describe(&self) -> String {
        match self {
            StoreTarget::Dir(path) => format!("directory store {}", path.display()),
            StoreTarget::Pg(conninfo) => format!(
                "PostgreSQL store at {}",
                crate::source::describe_conninfo(conninfo)
            ),
        }
    }
}

/// Adds a trained dictionary to a store, for its codec, with `metadata`, and returns it (its
/// id is the new id). Refuses an empty content (nothing is written). Does not judge the gain:
/// call [`Trained::check_helps`] first unless forced.
pub fn store(
    target: &StoreTarget,
    trained: &Trained,
    metadata: Metadata,
) -> Result<Arc<Dictionary>, TrainError> {
    if trained.content.is_empty() {
        return Err(BuildError::NothingToLearn {
            rows: 0,
            size: trained.size,
        }
        .into());
    }
    let codecs = CodecSet::only(trained.codec);
    Ok(match target {
        StoreTarget::Dir(path) => {
            DirStore::create(path)?.add(codecs, &trained.content, metadata)?
        }
        StoreTarget::Pg(conninfo) => {
            pgdict::dict::PgStore::connect(conninfo)?.add(codecs, &trained.content, metadata)?
        }
    })
}

/// How [`sample_source`] samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleOptions {
    /// The seed of the draw.
    pub seed: u64,
    /// Training rows at most.
    pub max_rows: usize,
    /// Training bytes at most (rows longer than this are never taken).
    pub max_bytes: usize,
    /// The share of rows held out (0 to 1); the held-out sample is bounded in proportion:
    /// `max_rows * holdout / (1 - holdout)` rows, likewise bytes.
    pub holdout: f64,
}

impl Default for SampleOptions {
    /// Seed 0, 10,000 rows, 64 MiB, 20 % held out.
    fn default() -> Self {
        SampleOptions {
            seed: 0,
            max_rows: crate::sample::DEFAULT_MAX_ROWS,
            max_bytes: 64 << 20,
            holdout: DEFAULT_HOLDOUT,
        }
    }
}

impl SampleOptions {
    /// The bounds of the held-out sample.
    pub fn holdout_limits(&self) -> Limits {
        let share = if self.holdout.is_nan() {
            0.0
        } else {
            self.holdout.clamp(0.0, 1.0)
        };
        if share >= 1.0 {
            return Limits::UNBOUNDED;
        }
        let scale = |n: usize| {
            let scaled = (n as f64 * share / (1.0 - share)).ceil();
            if scaled >= usize::MAX as f64 {
                usize::MAX
            } else {
                scaled as usize
            }
        };
        Limits {
            max_rows: scale(self.max_rows),
            max_bytes: scale(self.max_bytes),
        }
    }

    /// How many rows the sample may hold in all (training and held out), for a source that
    /// can sample ahead ([`crate::source::PgSource::rows_wanted`]).
    pub fn rows_wanted(&self) -> u64 {
        (self.max_rows as u64).saturating_add(self.holdout_limits().max_rows as u64)
    }

    /// How many bytes the sample may hold in all, and the rows that count towards them, for a
    /// source that can sample ahead ([`crate::source::PgSource::bytes_wanted`]): rows that hold
    /// this many bytes fill the sample, however few they are.
    ///
    /// Each side is filled as the rows wanted fill it ([`SampleOptions::rows_wanted`]): its
    /// bounds are its share of the whole, and it gets that share of the rows, so it fills, in
    /// expectation, once the rows read hold the bytes of both sides' bounds in rows it may
    /// keep (no longer than its own bound: the sampler ([`crate::sample`]) drops a longer row
    /// whole, never truncated, and keeps it on the other side if that side's bound is larger).
    /// Both sides do once the rows no longer than the smaller of their bounds hold them: those
    /// count (the held-out side's bound, unless more than half is held out; the training side's
    /// with nothing held out). A row only one side may keep is left out as often as it falls on
    /// the other: counted, rows like it could end a read that leaves the other side short while
    /// more rows would fill it. But when no row read is that short, the side with the smaller
    /// bound keeps none of them whatever is read, and the rows the other side may keep count
    /// (`longest_row_kept`).
    pub fn bytes_wanted(&self) -> crate::source::BytesWanted {
        let held_out = self.holdout_limits();
        let (longest_row, longest_row_kept) = if held_out.max_rows == 0 {
            (self.max_bytes, self.max_bytes)
        } else {
            (
                self.max_bytes.min(held_out.max_bytes),
                self.max_bytes.max(held_out.max_bytes),
            )
        };
        crate::source::BytesWanted {
            bytes: (self.max_bytes as u64).saturating_add(held_out.max_bytes as u64),
            longest_row: longest_row as u64,
            longest_row_kept: longest_row_kept as u64,
        }
    }
}

/// Streams `rows` through a seeded reservoir sampler (see [`crate::sample`]): at most
/// `options.max_rows` training rows and `options.max_bytes` training bytes, held-out rows in
/// proportion. Empty rows are skipped. A source read again ([`crate::source::Rows::next_pass`]:
/// a PostgreSQL page sample that held fewer rows than wanted) is sampled afresh, the same way.
/// `origin` names the source in [`TrainError::NoRows`], returned when no row made it into the
/// training sample: an empty source never makes a dictionary. `progress` counts input bytes
/// ([`Phase::Sampling`]) when the input's size is known, else rows.
pub fn sample_source(
    rows: &mut crate::source::Rows,
    options: &SampleOptions,
    origin: &str,
    progress: &dyn Progress,
) -> Result<crate::sample::Sample, TrainError> {
    let train_limits = Limits {
        max_rows: options.max_rows,
        max_bytes: options.max_bytes,
    };
    let sample = loop {
        let mut sampler = Sampler::new(
            options.seed,
            train_limits,
            options.holdout_limits(),
            options.holdout,
        );
        let mut step = InputProgress::begin(progress, Phase::Sampling, rows.input_len());
        while let Some(row) = rows.next() {
            let row = row?;
            if !row.is_empty() {
                sampler.push(&row);
            }
            step.item(|| rows.input_read());
        }
        if rows.next_pass() {
            // The sampler goes with the rows it holds.
            let summary = format!("{}: too few, read again", counted(step.items(), "row"));
            step.end(|| rows.input_read(), &summary);
            continue;
        }
        let sample = sampler.finish();
        step.end(|| rows.input_read(), &counted(sample.rows_seen, "row"));
        break sample;
    };
    // Held-out rows alone are rows: given content is measured on them, and a build says that
    // they were all held out.
    if sample.train.is_empty() && sample.eval.is_empty() {
        return Err(TrainError::NoRows {
            origin: origin.to_string(),
            seen: sample.rows_seen,
        });
    }
    Ok(sample)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_wanted_are_both_sides_and_count_rows_each_side_may_keep() {
        let bytes_wanted = |max_bytes, holdout| {
            let options = SampleOptions {
                max_bytes,
                holdout,
                ..Default::default()
            };
            let wanted = options.bytes_wanted();
            (wanted.bytes, wanted.longest_row, wanted.longest_row_kept)
        };
        // 20 % held out: a quarter as much again, in rows the held-out side may keep, else in
        // rows the training side may.
        assert_eq!(bytes_wanted(1000, 0.2), (1250, 250, 1000));
        // Nothing held out: the training side alone.
        assert_eq!(bytes_wanted(1000, 0.0), (1000, 1000, 1000));
        // Over a half held out: the training side has the smaller bound.
        assert_eq!(bytes_wanted(1000, 0.75), (4000, 1000, 3000));
    }

    /// An lz4 dictionary measured on three held-out rows of 1,000 bytes in all, each 64 to 255
    /// bytes long: plain pglz stores 900 bytes, plain lz4 1,000, pglz with the dictionary 300
    /// (in 0.3 ms), lz4 with it 400.
    fn lz4_trained_on_three_rows() -> Trained {
        let measured = |stored_bytes, compress_seconds| eval::Measured {
            stored_bytes,
            compress_seconds,
            ..Default::default()
        };
        let rows = eval::Group {
            datums: 3,
            raw_bytes: 1000,
            pglz: measured(900, 0.0),
            pglz_dict: Some(measured(300, 0.0003)),
            lz4: measured(1000, 0.0),
            lz4_dict: Some(measured(400, 0.0)),
            ..Default::default()
        };
        let bucket = |bucket| match bucket {
            eval::SizeBucket::To256 => eval::Group {
                bucket: Some(bucket),
                ..rows.clone()
            },
            _ => eval::Group {
                bucket: Some(bucket),
                pglz_dict: Some(measured(0, 0.0)),
                lz4_dict: Some(measured(0, 0.0)),
                ..Default::default()
            },
        };
        Trained {
            codec: Codec::Lz4,
            content: b"a dictionary".to_vec(),
            builder: None,
            size: 12,
            train_seconds: 0.0,
            train_rows: 0,
            train_bytes: 0,
            evaluation: Evaluation {
                buckets: eval::SizeBucket::ALL.into_iter().map(bucket).collect(),
                all: rows,
                empty_dict_bytes: Some(1000),
            },
            measured_as_id: 1,
        }
    }

    #[test]
    fn the_gains_are_of_the_dictionarys_codec_over_plain_pglz_and_plain_lz4() {
        let trained = lz4_trained_on_three_rows();
        assert_eq!(trained.gain_vs_pglz(), 900.0 / 400.0);
        assert_eq!(trained.gain_vs_lz4(), 1000.0 / 400.0);
    }

    #[test]
    fn round3_keeps_three_decimal_places() {
        assert_eq!(round3(2.0 / 3.0), 0.667);
        assert_eq!(round3(1234.56789), 1234.568);
        assert_eq!(round3(0.0004), 0.0);
        assert_eq!(round3(7.0), 7.0);
    }

    #[test]
    fn round_to_keeps_the_places_asked_for() {
        assert_eq!(round_to(2.0 / 3.0, 4), 0.6667);
        assert_eq!(round_to(123.45, 1), 123.5);
        assert_eq!(round_to(-0.25, 1), -0.3);
        assert_eq!(round_to(0.04, 1), 0.0);
        assert_eq!(round_to(1234.5, 0), 1235.0);
    }

    #[test]
    fn the_evaluation_json_rounds_and_has_null_ratios_and_speeds_for_empty_buckets() {
        let json = evaluation_json(&lz4_trained_on_three_rows().evaluation);
        for group in [&json, &json["buckets"]["64-256"]] {
            assert_eq!(group["datums"], 3);
            let pglz_dict = &group["pglz_dict"];
            assert_eq!(pglz_dict["stored_bytes"], 300);
            // 1,000 / 300 bytes; 1,000 bytes in 0.3 ms: 3.333 MB/s.
            assert_eq!(pglz_dict["ratio"], 3.333, "{group}");
            assert_eq!(pglz_dict["compress_mb_s"], 3.333, "{group}");
            // No time measured: 0, a number, as the rows were there.
            assert_eq!(pglz_dict["decompress_mb_s"], 0.0, "{group}");
            assert_eq!(group["lz4_dict_vs_lz4"], 2.5, "{group}");
            assert_eq!(group["pglz_dict_vs_pglz"], 3.0, "{group}");
        }
        for empty in ["<64", "256-1K", "1K-4K", ">=4K"] {
            let group = &json["buckets"][empty];
            assert_eq!(group["datums"], 0, "{empty}");
            for method in ["pglz", "lz4_dict"] {
                for key in ["ratio", "compress_mb_s", "decompress_mb_s"] {
                    assert!(
                        group[method][key].is_null(),
                        "{empty} {method} {key}: {group}"
                    );
                }
            }
            assert!(group["lz4_dict_vs_pglz"].is_null(), "{empty}: {group}");
        }
    }

    #[test]
    fn the_rows_wanted_are_both_sides() {
        let rows_wanted = |max_rows, holdout| {
            let options = SampleOptions {
                max_rows,
                holdout,
                ..Default::default()
            };
            options.rows_wanted()
        };
        assert_eq!(rows_wanted(10_000, 0.2), 12_500);
        assert_eq!(rows_wanted(10_000, 0.0), 10_000);
        // All held out: the held-out side is unbounded, and so is the whole.
        assert_eq!(rows_wanted(10_000, 1.0), u64::MAX);
    }

    #[test]
    fn the_store_flags_and_environment_choose_one_store() {
        use ValueSource::{CommandLine, DefaultValue, EnvVariable};
        let pg = || Some("host=db".to_string());
        let empty = || Some(String::new());
        let chosen = |store, pg_store, conninfo| chosen_pg_store(store, pg_store, conninfo);
        assert!(chosen(Some(CommandLine), Some(CommandLine), pg()).is_err());
        // A flag outranks the environment.
        assert_eq!(
            chosen(Some(CommandLine), Some(EnvVariable), pg()).unwrap(),
            None
        );
        assert_eq!(
            chosen(Some(EnvVariable), Some(CommandLine), pg()).unwrap(),
            pg()
        );
        // A PostgreSQL store outranks PGDICT_STORE and the default directory.
        for store in [Some(EnvVariable), Some(DefaultValue)] {
            assert_eq!(chosen(store, Some(EnvVariable), pg()).unwrap(), pg());
            assert_eq!(chosen(store, None, None).unwrap(), None);
            // Exported empty, PGDICT_PG_STORE names none; an empty flag is taken as given.
            assert_eq!(chosen(store, Some(EnvVariable), empty()).unwrap(), None);
            assert_eq!(chosen(store, Some(CommandLine), empty()).unwrap(), empty());
        }
    }
}
