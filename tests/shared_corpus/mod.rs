//! The shared corpus (`../shared/corpus`, see its MANIFEST.md), read in place at test time.
//!
//! `PGDICT_CORPUS` overrides the location. A missing corpus fails the test: a differential
//! test that silently checks nothing would prove nothing.

#![allow(dead_code)] // each test binary uses a different part

use std::fs;
use std::path::{Path, PathBuf};

/// The corpus directory.
pub fn dir() -> PathBuf {
    let dir = match std::env::var_os("PGDICT_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    assert!(
        dir.join("MANIFEST.md").is_file(),
        "the shared corpus is missing at {} (set PGDICT_CORPUS to its location)",
        dir.display()
    );
    dir
}

/// Every file under `payloads/`, sorted, with its contents.
pub fn payload_files() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    collect_files(&dir().join("payloads"), &mut files);
    files.sort();
    let loaded: Vec<_> = files
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(dir()).unwrap().display().to_string();
            (name, fs::read(&path).unwrap())
        })
        .collect();
    assert!(
        loaded.len() >= 30,
        "expected the corpus's 32 payload files, found {}",
        loaded.len()
    );
    loaded
}

/// Every row file under `rows/`, sorted, with its datums.
pub fn row_sets() -> Vec<(String, Vec<Vec<u8>>)> {
    let mut files = Vec::new();
    collect_files(&dir().join("rows"), &mut files);
    files.sort();
    let loaded: Vec<_> = files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, pgdict::rows::read_row_file(&path).unwrap())
        })
        .collect();
    assert_eq!(loaded.len(), 8, "expected the corpus's 8 row sets");
    loaded
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}
