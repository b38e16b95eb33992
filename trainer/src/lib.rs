//! pgdict's trainer: samples a user's rows and builds a dictionary for each codec.
//!
//! - [`build`]: the dictionary builders ([`build::Builder`]): zstd's trainer, the baseline,
//!   and pgdict's own, which knows each codec's window and match rules.
//! - [`eval`]: what a dictionary buys, in whole stored datums.
//! - [`sample`]: seeded reservoir sampling of rows, with a held-out split.

#![warn(missing_docs)]

pub mod build;
pub mod eval;
pub mod sample;
