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
