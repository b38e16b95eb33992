//! Support code shared by integration tests: include it with `mod support;`.
//!
//! - [`cluster`]: throwaway PostgreSQL clusters (a primary, and streaming standbys of it).
//! - [`corpus`]: the shared corpus (`../shared/corpus`), read in place.

#![allow(dead_code)] // each test binary uses a different part

pub mod cluster;
pub mod corpus;

#[allow(unused_imports)] // not every test binary starts a cluster
pub use cluster::PgCluster;
