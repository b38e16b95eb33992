//! `--pg-store` and `dict sync --from-pg` end to end, on a throwaway PostgreSQL 15 cluster (the
//! workspace's harness, `tests/support/cluster.rs`): the demo trains into the PostgreSQL
//! store, datums compressed with it decode with a directory store synced from it, and a
//! retirement in the table reaches the directory store.

#[allow(dead_code)] // this test uses only part of the harness
#[path = "../../tests/support/cluster.rs"]
mod cluster;

use std::path::Path;
use std::process::{Command, Output};

use cluster::PgCluster;

fn pgdict(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_pgdict"))
        .args(args)
        .current_dir(dir)
        .env_remove("PGDICT_STORE")
        .env_remove("PGDICT_PG_STORE")
        .output()
        .expect("run pgdict");
    assert!(
        output.status.success(),
        "pgdict {args:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn pg_store_and_sync_from_it() {
    let cluster = PgCluster::start();
    let conninfo = cluster.connection_string();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let pg = ["--pg-store", conninfo.as_str()];

    let out = stdout(&pgdict(dir, &[&pg[..], &["dict", "list"]].concat()));
    assert!(out.contains("holds no dictionaries yet"), "{out}");
    let out = stdout(&pgdict(
        dir,
        &[&pg[..], &["demo", "--rounds", "1"]].concat(),
    ));
    assert!(out.contains("added dictionary 1 (pglz"), "{out}");
    assert!(
        out.contains("the PostgreSQL store pgdict.dictionaries"),
        "{out}"
    );
    assert!(
        !dir.join("dicts").exists(),
        "the demo wrote to the directory store"
    );
    let out = stdout(&pgdict(dir, &[&pg[..], &["dict", "list"]].concat()));
    assert!(out.contains("active, auto for pglz"), "{out}");

    let rows = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/orders_csv.txt");
    let rows = rows.to_str().unwrap();
    pgdict(
        dir,
        &[&pg[..], &["compress", rows, "-o", "o.datums", "-q"]].concat(),
    );
    // Read through the table directly, then through a directory store synced from it.
    let back = pgdict(dir, &[&pg[..], &["decompress", "o.datums"]].concat());
    assert_eq!(back.stdout, std::fs::read(rows).unwrap());
    pgdict(dir, &["dict", "retire", "2", "--pg-store", &conninfo]);
    let out = stdout(&pgdict(
        dir,
        &["dict", "sync", "--from-pg", &conninfo, "--to", "replica"],
    ));
    assert!(out.contains("copied:          1, 2"), "{out}");
    assert!(out.contains("retired there:   2"), "{out}");
    let back = pgdict(dir, &["decompress", "o.datums", "--store", "replica"]);
    assert_eq!(back.stdout, std::fs::read(rows).unwrap());
}
