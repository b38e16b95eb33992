//! pgdict: dictionary-trained compression of small PostgreSQL datums.
//!
//! The library is organised by concept:
//!
// The feature's items are linked only where they are built (`cargo doc --no-default-features`).
#![cfg_attr(
    feature = "pg-store",
    doc = "- [`conninfo`]: PostgreSQL connection strings, read as libpq reads them (`pg-store` \
           feature)."
)]
#![cfg_attr(
    not(feature = "pg-store"),
    doc = "- `conninfo`: PostgreSQL connection strings (`pg-store` feature, off in this build)."
)]
//! - [`datum`]: the datum format (PostgreSQL's varlena headers, extended to name a dictionary).
//! - [`dict`]: dictionary files and the stores that keep them (a directory, a PostgreSQL table).
//! - [`lz4`]: liblz4 as PostgreSQL calls it, and with prepared dictionaries attached per datum.
//! - [`measure`]: timing implementations side by side (interleaved rounds, medians).
//! - [`pglz`]: PostgreSQL's pglz codec, byte-identical to PostgreSQL 15's C code.
//! - [`rows`]: reading datums from row files (lines, JSON Lines).
//! - [`zstd`]: zstd with prepared dictionaries, in frames that leave out what the datum header
//!   says.
//!
//! The formats and invariants other parts rely on are in `DESIGN.md` (the shared contract);
//! each module documents the format it implements at its top.
//!
//! # An application's side
//!
//! Dictionaries are trained once, from sample rows (`pgdict-trainer`, a command and a
//! library), and added to a store. A program that writes the column then compresses each value
//! with the store's active dictionary, and any program that has the store decodes it:
//!
//! ```
//! use pgdict::datum::{self, Codec, DatumEncoder};
//! use pgdict::dict::DirStore;
//! # use pgdict::dict::{CodecSet, Metadata};
//! # let rows = pgdict::rows::read_row_file(std::path::Path::new(concat!(
//! #     env!("CARGO_MANIFEST_DIR"),
//! #     "/corpus/events.jsonl"
//! # )))?;
//! # let dir = tempfile::tempdir()?;
//! # let store_path = dir.path().join("dicts");
//! # // A stand-in for a trained dictionary: the last 4095 bytes of some rows (pglz reaches no
//! # // farther back). `pgdict_trainer::train` builds a better one.
//! # let sample: Vec<u8> = rows[1000..1020].concat();
//! # DirStore::create(&store_path)?.add(
//! #     CodecSet::only(Codec::Pglz),
//! #     &sample[sample.len() - 4095..],
//! #     Metadata::new(),
//! # )?;
//! # let row: &[u8] = &rows[0];
//!
//! // The store the trainer added to (`dicts/` by default: `DirStore::default_path()`).
//! let store = DirStore::open(&store_path)?;
//! // The dictionary to compress with: the newest one built for pglz that is not retired.
//! let dict = store.active(Codec::Pglz)?.ok_or("no pglz dictionary in the store")?;
//! let prepared = store.prepared(dict.id())?; // indexed once, shared between threads
//!
//! // The stored datum is the smallest of the raw bytes, PostgreSQL's own pglz form and the
//! // dictionary form; its header names the dictionary. Keep one encoder per thread.
//! let mut encoder = DatumEncoder::new();
//! let stored = encoder.encode(row, Codec::Pglz, Some(&prepared))?;
//! assert!(stored.len() < row.len()); // PostgreSQL's pglz stores this row raw
//! assert_eq!(datum::parse_header(&stored)?.form.dict_id(), Some(dict.id()));
//!
//! // `stored` goes into a `bytea` column as it is. Reading it back, the store resolves the
//! // dictionary the header names (on any node that has the store, a standby included); a
//! // missing one is an error naming its id, never a wrong value.
//! assert_eq!(datum::decode(&stored, &store)?, row);
//! // The first bytes alone, as PostgreSQL's `substr()` reads a compressed value.
//! assert_eq!(datum::decode_prefix(&stored, 16, &store)?, &row[..16]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(feature = "pg-store")]
pub mod conninfo;
pub mod datum;
pub mod dict;
pub mod lz4;
pub mod measure;
pub mod pglz;
pub mod rows;
pub mod zstd;

/// Compiles only for a `T` that threads may share, so that `const _: () =
/// assert_send_sync::<T>();` beside a type keeps its promise to be shared.
pub(crate) const fn assert_send_sync<T: Send + Sync>() {}

/// The Rust examples in README.md, compiled (and run, unless marked otherwise) by `cargo test
/// --doc`, so that they keep to the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;
