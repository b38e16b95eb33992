//! The shared corpus's row sets (`../shared/corpus/rows` beside the repository, or
//! `$PGDICT_CORPUS/rows`), for the trainer's tests. A missing corpus fails the test.

use std::path::{Path, PathBuf};

/// The path of row set `name`, asserting that it is there.
pub fn corpus_rows(name: &str) -> PathBuf {
    let dir = match std::env::var_os("PGDICT_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"),
    };
    let path = dir.join("rows").join(name);
    assert!(
        path.is_file(),
        "the shared corpus is missing: no {} (set PGDICT_CORPUS to its location)",
        path.display()
    );
    path
}
