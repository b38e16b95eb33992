//! pgdict's trainer: samples a user's rows and builds a dictionary for each codec.
//!
//! Not yet implemented: see the trainer issue. The package exists so the workspace layout is
//! the one DESIGN.md describes from the start.
