//! The shared corpus (`../shared/corpus`, described by its MANIFEST.md), read in place.
//!
//! `PGDICT_CORPUS` overrides the location. A missing corpus fails the test: a test over the
//! corpus that silently checks nothing would prove nothing.
//!
//! [`rows`] parses a row file here with serde_json, independently of `pgdict::rows`, so a
//! test that checks pgdict against PostgreSQL does not also trust pgdict to produce its inputs.
//! [`row_sets`] reads every row file with `pgdict::rows`, as pgdict's own tools do.
//!
//! Tests that need no cluster include this file alone:
//! `#[allow(dead_code)] #[path = "support/corpus.rs"] mod corpus;`.

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

/// The directory of row files (`rows/`).
pub fn rows_dir() -> PathBuf {
    dir().join("rows")
}

/// The bytes of a corpus file, by its path inside the corpus (`payloads/canterbury/alice29.txt`).
pub fn read(relative: &str) -> Vec<u8> {
    let path = dir().join(relative);
    fs::read(&path).unwrap_or_else(|e| panic!("cannot read corpus file {}: {e}", path.display()))
}

/// The datums of a row file (`rows/...`): for `.jsonl`, a line holding a JSON string is the
/// decoded string and any other line is the line itself; for other files, each line verbatim.
/// Line feeds are not part of datums.
pub fn rows(relative: &str) -> Vec<Vec<u8>> {
    let bytes = read(relative);
    let json = relative.ends_with(".jsonl");
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
        .map(|(index, line)| {
            if !json {
                return line.to_vec();
            }
            let value: serde_json::Value = serde_json::from_slice(line)
                .unwrap_or_else(|e| panic!("{relative} line {}: invalid JSON: {e}", index + 1));
            match value {
                serde_json::Value::String(text) => text.into_bytes(),
                _ => line.to_vec(),
            }
        })
        .collect()
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

/// Every row file under `rows/`, sorted, with its datums as `pgdict::rows` reads them.
pub fn row_sets() -> Vec<(String, Vec<Vec<u8>>)> {
    let mut files = Vec::new();
    collect_files(&rows_dir(), &mut files);
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
