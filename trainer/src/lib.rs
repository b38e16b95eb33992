//! pgdict's trainer: samples a user's rows, builds a dictionary for a codec, measures what it
//! buys on held-out rows, and adds it to a dictionary store.
//!
//! The one-call API, for programs that train (the `pgdict` CLI's `compare` and `demo`):
//!
//! - [`train()`]`(rows, options)` → [`Trained`] (content, codec, builder, time, evaluation);
//!   [`train_split`] when the held-out rows are already set apart (as [`sample`] does);
//!   [`measure_content`] for a dictionary made elsewhere, measured as a built one;
//! - [`evaluate`]`(holdout, dict, codec, progress)` → [`Evaluation`]: plain pglz, pglz with
//!   the dictionary, plain lz4, lz4 with it (and zstd with it, for a zstd dictionary), per
//!   size bucket, with speeds;
//! - [`source::open`]`(spec)` → [`source::Rows`], an iterator of datums from a file, a
//!   directory, standard input or a PostgreSQL column; [`source::datums_file`] reads and
//!   writes the length-prefixed datums file;
//! - [`sample_source`]`(rows, options, origin, progress)` → training and held-out rows,
//!   drawn by seeded reservoir sampling as the source streams by;
//! - [`store`]`(target, trained, metadata)` → the stored dictionary, with its new id.
//!
//! The parts:
//!
//! - [`build`]: the dictionary builders ([`build::Builder`]): zstd's trainer, the baseline,
//!   and pgdict's own, which knows each codec's window and match rules.
//! - [`eval`]: what a dictionary buys, in whole stored datums.
//! - [`sample`]: seeded reservoir sampling of rows, with a held-out split.
//! - [`source`]: where rows come from.
//! - [`progress`]: progress reports (and `indicatif` bars) for the long steps.
//!
//! # Example
//!
//! Train a pglz dictionary on sample rows, add it to a directory store, and compress a row
//! with it ([`pgdict`]'s crate documentation shows the application's side in full):
//!
//! ```
//! use pgdict::datum::{self, Codec, DatumEncoder};
//! use pgdict::dict::DirStore;
//! use pgdict_trainer::{StoreTarget, TrainOptions};
//! # let rows = pgdict::rows::read_row_file(std::path::Path::new(concat!(
//! #     env!("CARGO_MANIFEST_DIR"),
//! #     "/../corpus/events.jsonl"
//! # )))?;
//! # let dir = tempfile::tempdir()?;
//! # let store_path = dir.path().join("dicts");
//! # let rows = &rows[..500];
//!
//! // pglz, pgdict's own builder, 4 KB; a fifth of the rows held out to measure it on.
//! let trained = pgdict_trainer::train(rows, &TrainOptions::default())?;
//! // At least 1 % saved on the held-out rows, against PostgreSQL's plain pglz.
//! trained.check_helps()?;
//! assert!(trained.gain_vs_pglz() > 2.0); // these 500 rows: 2.85x smaller
//!
//! let metadata = trained.metadata("events.jsonl", Default::default());
//! let target = StoreTarget::Dir(store_path.clone());
//! let dict = pgdict_trainer::store(&target, &trained, metadata)?;
//!
//! let store = DirStore::open(&store_path)?;
//! let prepared = store.prepared(dict.id())?;
//! let stored = DatumEncoder::new().encode(&rows[0], Codec::Pglz, Some(&prepared))?;
//! assert_eq!(datum::decode(&stored, &store)?, rows[0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod build;
pub mod eval;
pub mod interrupt;
pub mod progress;
pub mod sample;
pub mod source;
mod train;

pub use build::{BuildError, Builder};
pub use eval::{evaluate, EvalError, Evaluation, Group, Measured, Method, SizeBucket};
pub use train::{
    check_content, chosen_pg_store, default_size, evaluation_json, is_dictionary_file,
    measure_content, round3, round_to, sample_source, split, store, train, train_split,
    SampleOptions, StoreFlagsConflict, StoreTarget, TrainError, TrainOptions, Trained,
    DEFAULT_HOLDOUT, DICTIONARY_FILE_HINT, LZ4_DEFAULT_SIZE, MIN_SAVING, PGLZ_DEFAULT_SIZE,
};
