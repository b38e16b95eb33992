//! `--pg-store`, `dict sync --from-pg` and `--pg-source` end to end, on a throwaway PostgreSQL
//! 15 cluster (the workspace's harness, `tests/support/cluster.rs`): the demo trains into the
//! PostgreSQL store, datums compressed with it decode with a directory store synced from it,
//! and a retirement in the table reaches the directory store; that directory store synced
//! into another database's store (`dict sync --from DIR --pg-store ...`) decodes them too;
//! `compress` and `compare` read their rows from a table column; `compress` reads what `COPY
//! ... TO` writes (text and binary, one column or several), and `decompress`'s binary COPY
//! loads back with `COPY ... FROM`; `--keep-columns` loads each datum beside its id and gives
//! the rows back; a store on a hot standby reads, and refuses writes.

#[allow(dead_code)] // this test uses only part of the harness
#[path = "../../tests/support/cluster.rs"]
mod cluster;

#[path = "../../trainer/tests/corpus/mod.rs"]
mod corpus;

use std::path::Path;
use std::process::{Command, Output};

use cluster::PgCluster;
use corpus::corpus_rows;
use pgdict_trainer::source::{copy, CsvSyntax};

/// Runs pgdict in `dir`, with no store named by the environment.
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgdict"))
        .args(args)
        .current_dir(dir)
        .env_remove("PGDICT_STORE")
        .env_remove("PGDICT_PG_STORE")
        .output()
        .expect("run pgdict")
}

/// Runs pgdict expecting success.
fn pgdict(dir: &Path, args: &[&str]) -> Output {
    let output = run(dir, args);
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

/// Runs pgdict expecting it to fail with `status`; returns its stderr.
fn pgdict_fails(dir: &Path, args: &[&str], status: i32) -> String {
    let output = run(dir, args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(status),
        "pgdict {args:?}: {stderr}"
    );
    assert!(output.stdout.is_empty(), "pgdict {args:?} wrote to stdout");
    stderr
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

    // And from the directory into the store of another database (--pg-store is the
    // destination when --to is not given): the datums decode there too.
    cluster
        .client()
        .batch_execute("CREATE DATABASE moved")
        .unwrap();
    let moved = format!("{conninfo} dbname=moved");
    let out = stdout(&pgdict(
        dir,
        &["dict", "sync", "--from", "replica", "--pg-store", &moved],
    ));
    assert!(
        out.starts_with("synced the PostgreSQL store pgdict.dictionaries in database moved"),
        "{out}"
    );
    assert!(out.contains("copied:          1, 2"), "{out}");
    assert!(out.contains("retired there:   2"), "{out}");
    let back = pgdict(dir, &["decompress", "o.datums", "--pg-store", &moved]);
    assert_eq!(back.stdout, std::fs::read(rows).unwrap());
    // A store is not synced from itself.
    let err = pgdict_fails(
        dir,
        &["dict", "sync", "--from-pg", &moved, "--pg-store", &moved],
        2,
    );
    assert!(
        err.contains("the source and the destination are the same store"),
        "{err}"
    );

    // Rows relabelled behind the triggers: named as damaged, with a remedy that can work
    // (sync --repair cannot rewrite a PostgreSQL store's row).
    let mut moved_client =
        postgres::Client::connect(&format!("{conninfo} dbname=moved"), postgres::NoTls).unwrap();
    moved_client
        .batch_execute(PgCluster::SWAP_DICTIONARIES_1_AND_2)
        .unwrap();
    let output = run(dir, &["decompress", "o.datums", "--pg-store", &moved]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{err}");
    assert!(
        err.contains("is not the dictionary it was stored as"),
        "{err}"
    );
    assert!(
        err.contains("restore it from a backup of the table"),
        "{err}"
    );
    // Tables pgdict did not make are not opened, and the hint says why.
    moved_client
        .batch_execute(
            "DROP SCHEMA pgdict CASCADE;
             CREATE SCHEMA pgdict;
             CREATE TABLE pgdict.dictionaries (id bigint);
             CREATE TABLE pgdict.retired (id bigint)",
        )
        .unwrap();
    let err = pgdict_fails(dir, &["dict", "list", "--pg-store", &moved], 1);
    assert!(err.contains("not a pgdict store"), "{err}");
    assert!(err.contains("opens only a store it made"), "{err}");
}

#[test]
fn compress_and_compare_read_a_postgres_column() {
    let rows_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/orders_csv.txt");
    let text = std::fs::read_to_string(&rows_file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cluster = PgCluster::start();
    let conninfo = cluster.connection_string();
    let mut client = cluster.client();
    client
        .batch_execute(
            "CREATE TABLE orders (id serial PRIMARY KEY, line text, doc jsonb);
             CREATE TABLE empty (v text);
             INSERT INTO empty VALUES (NULL);
             CREATE TABLE big (v text);
             INSERT INTO big SELECT 'order ' || g || ' shipped to warehouse ' || g % 7
             FROM generate_series(1, 30000) g;
             ANALYZE big;",
        )
        .unwrap();
    client
        .execute(
            "INSERT INTO orders (line) SELECT unnest($1::text[])",
            &[&lines],
        )
        .unwrap();
    client
        .execute("INSERT INTO orders (doc) VALUES ('{\"a\": [1, 2]}')", &[])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let source = ["--pg-source", conninfo.as_str(), "--table", "orders"];

    // Every non-NULL value of the column, compressed and read back.
    pgdict(
        dir,
        &[
            &["compress", "--dict", "none", "-o", "o.datums", "-q"],
            &source[..],
            &["--column", "line"],
        ]
        .concat(),
    );
    let back = pgdict(dir, &["decompress", "o.datums"]);
    let mut back: Vec<String> = stdout(&back).lines().map(str::to_string).collect();
    let mut expected: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    back.sort();
    expected.sort();
    assert!(back == expected, "the column's rows came back different");

    // jsonb arrives as its text, and pgdict says so.
    let out = pgdict(
        dir,
        &[
            &["compress", "--dict", "none", "--hex", "-q"],
            &source[..],
            &["--column", "doc"],
        ]
        .concat(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pgdict: note: column doc is jsonb: its values are read as their text"),
        "{stderr}"
    );
    assert_eq!(stdout(&out).lines().count(), 1);

    // compare reads the whole column, trains on half and evaluates the rest.
    let out = stdout(&pgdict(
        dir,
        &[
            &["compare", "--json", "--rounds", "1"],
            &source[..],
            &["--column", "line"],
        ]
        .concat(),
    ));
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["rows"], lines.len(), "{out}");
    let input = report["input"].as_str().unwrap();
    assert!(input.starts_with("table orders column line at "), "{input}");

    // With --max-rows, a table far larger than the rows needed is sampled by pages.
    // `compare --json` of column v of `table`, 100 rows wanted (200: training and evaluated).
    let compare_100_rows = |table: &str| {
        stdout(&pgdict(
            dir,
            &[
                "compare",
                "--json",
                "--rounds",
                "1",
                "--max-rows",
                "100",
                "--pg-source",
                &conninfo,
                "--table",
                table,
                "--column",
                "v",
            ],
        ))
    };
    let out = compare_100_rows("big");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = report["rows"].as_u64().unwrap();
    assert!((200..30_000).contains(&rows), "{rows} rows read of 30,000");
    // ... and what the pages gave, sampled down to 2 x 100 rows.
    assert_eq!(
        report["sampled_rows"].as_u64().unwrap_or(rows),
        200,
        "{out}"
    );
    assert_eq!(report["train_rows"], 100, "{out}");
    assert_eq!(report["evaluated_rows"], 100, "{out}");
    assert_eq!(report["table_short_sample"], serde_json::Value::Null);

    // Statistics far out of date (40,000 rows by ANALYZE, 2,000 left, the live-row counts
    // reset as a crash leaves them): the page sample holds fewer than the 200 rows wanted, and
    // the table is read again; the rows kept are the second read's (they were the first's).
    client
        .batch_execute(
            "CREATE TABLE thinned (id int, v text) WITH (autovacuum_enabled = false);
             INSERT INTO thinned SELECT g, 'order ' || g || ' shipped to warehouse ' || g % 7
             FROM generate_series(1, 40000) g;
             ANALYZE thinned;
             DELETE FROM thinned WHERE id % 20 <> 0;
             SELECT pg_stat_force_next_flush();",
        )
        .unwrap();
    client
        .batch_execute("SELECT pg_stat_reset_single_table_counters('thinned'::regclass)")
        .unwrap();
    let out = compare_100_rows("thinned");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let short = &report["table_short_sample"];
    let first = short["rows"].as_u64().unwrap();
    assert!((1..200).contains(&first), "{out}");
    assert_eq!(short["table_rows_estimate"], 40_000, "{out}");
    let rows = report["rows"].as_u64().unwrap();
    assert!((200..=2000).contains(&rows), "{out}");
    assert_eq!(
        report["sampled_rows"].as_u64().unwrap_or(rows),
        200,
        "{out}"
    );
    assert_eq!(report["train_rows"], 100, "{out}");

    // ROWS and --pg-source together is a usage error, and so is a missing --column.
    let stderr = pgdict_fails(
        dir,
        &[&["compare", "rows.txt"], &source[..], &["--column", "line"]].concat(),
        2,
    );
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    let stderr = pgdict_fails(dir, &[&["compress"], &source[..]].concat(), 2);
    assert!(stderr.contains("--column"), "{stderr}");
    // A column of NULLs holds no rows: an error, and nothing written.
    let empty = [
        "--pg-source",
        conninfo.as_str(),
        "--table",
        "empty",
        "--column",
        "v",
    ];
    for command in [
        &["compare"][..],
        &["compress", "--dict", "none", "-o", "e.datums"],
    ] {
        let stderr = pgdict_fails(dir, &[command, &empty[..]].concat(), 1);
        assert!(
            stderr.contains("table empty column v at ")
                && stderr.contains("holds no rows")
                && stderr.contains("the table is empty or the column holds only NULLs"),
            "{stderr}"
        );
    }
    assert!(!dir.join("e.datums").exists());

    // Datums kept in a bytea column read back as the server prints them (psql prints what
    // byteaout gives) under either bytea_output: hex, the default, and escape, each told by
    // its look. lz4 without a dictionary: raw datums of both header sizes, and compressed.
    let rows = rows_file.to_str().unwrap();
    let compressed = |form: &str| {
        let args = [
            "compress", "--dict", "none", "--codec", "lz4", form, "-q", rows,
        ];
        pgdict(dir, &args).stdout
    };
    let hex = String::from_utf8(compressed("--hex")).unwrap();
    // Loaded as the README says, `\copy datums (payload) FROM 'rows.hex' (FORMAT csv)`:
    // psql sends the file through COPY FROM STDIN, as here; each hex line is a bytea literal
    // to CSV (text COPY would read its `\x` as an escape of its own).
    let stored = copy_into_new_table(&mut client, "datums", "csv", hex.as_bytes());
    assert_eq!(stored.len(), lines.len());
    let written: Vec<Vec<u8>> = hex
        .lines()
        .map(|line| {
            let digits = line.strip_prefix("\\x").unwrap();
            (0..digits.len())
                .step_by(2)
                .map(|at| u8::from_str_radix(&digits[at..at + 2], 16).unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        stored, written,
        "the table holds other bytes than pgdict wrote"
    );
    // The same datums through binary COPY, both ways: loaded from `compress --copy`, and
    // copied out of the table for `decompress` and `inspect`.
    let copy = compressed("--copy");
    let copied = copy_into_new_table(&mut client, "copied", "binary", &copy);
    assert_eq!(copied, written, "binary COPY stored other bytes");
    // A compress that stops on an error ends its stream so that COPY refuses it: nothing of
    // it is loaded (PostgreSQL would commit the whole tuples before a plain end).
    std::fs::write(dir.join("bad.jsonl"), "{\"a\": 1}\n{bad\n").unwrap();
    let broken = run(dir, &["compress", "bad.jsonl", "--dict", "none", "--copy"]);
    assert_eq!(broken.status.code(), Some(1));
    let mut copy_in = client
        .copy_in("COPY copied (payload) FROM STDIN (FORMAT binary)")
        .unwrap();
    std::io::Write::write_all(&mut copy_in, &broken.stdout).unwrap();
    let refused = copy_in.finish().unwrap_err();
    assert!(
        format!("{refused:?}").contains("row field count is 0, expected 1"),
        "{refused:?}"
    );
    let count: i64 = client
        .query_one("SELECT count(*) FROM copied", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, lines.len() as i64);
    let binary_copy = copy_out(
        &mut client,
        "COPY (SELECT payload FROM datums ORDER BY id) TO STDOUT (FORMAT binary)",
    );
    // What the server gave, in a file: `decompress` gives the rows back, and `inspect` tells
    // its format.
    let reads_back = |file: &str, bytes: &[u8], format: &str| {
        std::fs::write(dir.join(file), bytes).unwrap();
        let back = stdout(&pgdict(dir, &["decompress", file]));
        assert!(
            back.lines().eq(lines.iter().copied()),
            "{format}: the rows came back different"
        );
        let summary = stdout(&pgdict(dir, &["inspect", file]));
        let summary = summary.lines().last().unwrap();
        assert!(
            summary.contains(&format!("datums of {file} ({format})")),
            "{summary}"
        );
    };
    reads_back("out.copy", &binary_copy, "binary COPY");
    // COPY's text format, psql's `\copy ... TO` (each literal's backslash doubled, `\N` for a
    // NULL, which is no datum), is read as hex. (No ORDER BY for a whole table: the rows of a
    // table written once come out in the order they went in.)
    let copy_text = copy_out(
        &mut client,
        "COPY (SELECT payload FROM (SELECT id, payload FROM datums UNION ALL SELECT 0, NULL) d \
         ORDER BY id) TO STDOUT",
    );
    assert!(copy_text.starts_with(b"\\N\n\\\\x"), "{copy_text:?}");
    reads_back("out.txt", &copy_text, "hex");
    // ... and a whole table (id, payload), tab-separated.
    let whole_table = copy_out(&mut client, "COPY datums TO STDOUT");
    assert!(whole_table.starts_with(b"1\t\\\\x"), "{whole_table:?}");
    reads_back("table.txt", &whole_table, "hex");
    for output in ["hex", "escape"] {
        client
            .batch_execute(&format!("SET bytea_output = {output}"))
            .unwrap();
        let printed: String = client
            .query("SELECT payload::text FROM datums ORDER BY id", &[])
            .unwrap()
            .iter()
            .map(|row| row.get::<_, String>(0) + "\n")
            .collect();
        reads_back("printed.txt", printed.as_bytes(), output);
    }
}

/// Loads `data` into a new table `table (id serial, payload bytea)` with `COPY table (payload)
/// FROM STDIN (FORMAT format)`, as psql sends a file, and gives the payloads back in order.
fn copy_into_new_table(
    client: &mut postgres::Client,
    table: &str,
    format: &str,
    data: &[u8],
) -> Vec<Vec<u8>> {
    copy_into_new_column(client, table, "bytea", format, data)
}

/// [`copy_into_new_table`] with a payload column of `column_type` (`bytea` or `text`, whose
/// values come back as their UTF-8 bytes).
/// What `COPY ... TO STDOUT` (`query`) writes.
fn copy_out(client: &mut postgres::Client, query: &str) -> Vec<u8> {
    let mut copied = Vec::new();
    std::io::Read::read_to_end(&mut client.copy_out(query).unwrap(), &mut copied).unwrap();
    copied
}

/// The first `count` fortunes of the shared corpus.
fn fortunes(count: usize) -> Vec<Option<String>> {
    std::fs::read_to_string(corpus_rows("text_fortunes.jsonl"))
        .unwrap()
        .lines()
        .take(count)
        .map(|line| Some(serde_json::from_str(line).unwrap()))
        .collect()
}

/// A table `notes (id serial, body text, COLUMN)` of `bodies`, in order: `column` declares
/// the third column, and `value` is its value, an SQL expression of the body `b` and its
/// 1-based number `n`.
fn create_notes(
    client: &mut postgres::Client,
    bodies: &[Option<String>],
    column: &str,
    value: &str,
) {
    let name = column.split(' ').next().unwrap();
    client
        .batch_execute(&format!(
            "CREATE TABLE notes (id serial PRIMARY KEY, body text, {column})"
        ))
        .unwrap();
    client
        .execute(
            &format!(
                "INSERT INTO notes (body, {name}) SELECT b, {value} FROM unnest($1::text[]) \
                 WITH ORDINALITY AS u(b, n) ORDER BY n"
            ),
            &[&bodies],
        )
        .unwrap();
}

fn copy_into_new_column(
    client: &mut postgres::Client,
    table: &str,
    column_type: &str,
    format: &str,
    data: &[u8],
) -> Vec<Vec<u8>> {
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (id serial PRIMARY KEY, payload {column_type})"
        ))
        .unwrap();
    let mut copy = client
        .copy_in(&format!(
            "COPY {table} (payload) FROM STDIN (FORMAT {format})"
        ))
        .unwrap();
    std::io::Write::write_all(&mut copy, data).unwrap();
    copy.finish().unwrap();
    let payload = match column_type {
        "text" => "convert_to(payload, 'UTF8')",
        _ => "payload",
    };
    client
        .query(&format!("SELECT {payload} FROM {table} ORDER BY id"), &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// What `COPY ... TO` writes, `compress` reads as rows: the text format and the binary one, a
/// column of one or of several (`--copy-column`, by index or by the name in a text HEADER).
/// Each is checked end to end through PostgreSQL: compressed, decompressed to binary COPY
/// (`-o back.copy`), and loaded with `COPY ... FROM`, the table must hold what the column held.
#[test]
fn compress_reads_what_copy_to_writes_and_decompress_writes_what_copy_from_loads() {
    // What COPY's text format escapes, and what it would mistake if it did not.
    let controls: String = (1u8..32).chain([127]).map(char::from).collect();
    let mut bodies: Vec<Option<String>> = vec![
        Some("tab\there\tand\tthere".into()),
        Some("a back\\slash, and one at the end \\".into()),
        Some("\\.".into()),
        Some("\\N".into()),
        Some("crlf\r\nand lf\n".into()),
        Some("\r".into()),
        Some("caf\u{e9} \u{65e5}\u{672c}".into()),
        Some(controls),
        Some(String::new()),
        None,
    ];
    bodies.extend(fortunes(300));
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    create_notes(
        &mut client,
        &bodies,
        "blob bytea",
        "convert_to(b, 'UTF8') || '\\x00ff'::bytea",
    );
    let mut column = |expression: &str| -> Vec<Vec<u8>> {
        client
            .query(
                &format!(
                    "SELECT {expression} FROM notes WHERE length({expression}) > 0 ORDER BY id"
                ),
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    };
    let texts = column("convert_to(body, 'UTF8')");
    let blobs = column("blob");
    assert_eq!(texts.len(), bodies.len() - 2);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    for (n, (query, options, column_type)) in [
        (
            "COPY (SELECT body FROM notes ORDER BY id) TO STDOUT",
            &[][..],
            "text",
        ),
        (
            "COPY (SELECT body FROM notes ORDER BY id) TO STDOUT (FORMAT binary)",
            &[],
            "text",
        ),
        (
            "COPY (SELECT id, body, blob FROM notes ORDER BY id) TO STDOUT (HEADER)",
            &["--copy-column", "body"],
            "text",
        ),
        (
            "COPY (SELECT id, body, blob FROM notes ORDER BY id) TO STDOUT (FORMAT binary)",
            &["--copy-column", "1"],
            "text",
        ),
        (
            "COPY (SELECT id, body, blob FROM notes ORDER BY id) TO STDOUT (FORMAT binary)",
            &["--copy-column", "2"],
            "bytea",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let copied = copy_out(&mut client, query);
        std::fs::write(dir.join("rows.copy"), &copied).unwrap();
        pgdict(
            dir,
            &[
                &[
                    "compress",
                    "rows.copy",
                    "--dict",
                    "none",
                    "-o",
                    "rows.datums",
                    "-q",
                ],
                options,
            ]
            .concat(),
        );
        pgdict(dir, &["decompress", "rows.datums", "-o", "back.copy"]);
        let back = std::fs::read(dir.join("back.copy")).unwrap();
        let loaded = copy_into_new_column(
            &mut client,
            &format!("back{n}"),
            column_type,
            "binary",
            &back,
        );
        let expected = if column_type == "bytea" {
            &blobs
        } else {
            &texts
        };
        assert!(loaded == *expected, "{query}: the rows came back different");
    }

    // Data of several columns needs --copy-column; one that is not there is named.
    let copied = copy_out(&mut client, "COPY notes TO STDOUT");
    std::fs::write(dir.join("notes.copy"), &copied).unwrap();
    let stderr = pgdict_fails(
        dir,
        &["compress", "notes.copy", "--dict", "none", "-o", "n.datums"],
        1,
    );
    assert!(
        stderr.contains("notes.copy:1: bad COPY data: 3 fields (tab-separated), where one is read")
            && stderr.contains("--copy-column picks one"),
        "{stderr}"
    );
    let stderr = pgdict_fails(
        dir,
        &[
            "compress",
            "notes.copy",
            "--copy-column",
            "3",
            "--dict",
            "none",
            "-o",
            "n.datums",
        ],
        1,
    );
    assert!(
        stderr.contains("notes.copy:1: no COPY column #3: the line has 3 fields"),
        "{stderr}"
    );
    assert!(!dir.join("n.datums").exists());
}

/// `compress --keep-columns` writes COPY data that loads each datum beside its row's other
/// columns (NULLs kept), and `decompress --keep-columns` turns what `COPY ... TO` then writes
/// of that table back into the very bytes the first `COPY ... TO` wrote: in the text format
/// (with a HEADER, the column by name; and with `DELIMITER '|', NULL ''`), the binary one (by
/// index) and CSV (with a HEADER; with `DELIMITER ';'`; and with `NULL 'NULL'`), with
/// dictionaries. An error half
/// way ends the output with a mark that makes `COPY ... FROM` load nothing (text and CSV).
#[test]
fn keep_columns_loads_each_datum_beside_its_id_and_gives_the_rows_back() {
    let mut bodies: Vec<Option<String>> = vec![
        Some("tab\there, a back\\slash, crlf\r\nand lf\n".into()),
        Some("\\.".into()),
        Some(String::new()),
        None,
    ];
    bodies.extend(fortunes(400));
    bodies.push(Some("NULL".into())); // Last: the broken-end cases count the lines before.
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    create_notes(
        &mut client,
        &bodies,
        "tag text",
        "CASE WHEN n % 3 = 0 THEN NULL ELSE 't' || n END",
    );
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    pgdict(dir, &["demo", "--rounds", "1", "--sample", "app-logs"]);
    for (format, options, flags) in [
        ("text", "(HEADER)", &["--copy-column", "body"][..]),
        ("binary", "(FORMAT binary)", &["--copy-column", "1"]),
        (
            "pipes",
            "(DELIMITER '|', NULL '')",
            &[
                "--copy-column",
                "1",
                "--copy-delimiter",
                "|",
                "--copy-null",
                "",
            ],
        ),
        // CSV: the body quoted where it holds a comma, a quote or a line end, `""` for the
        // empty string, NULL an empty field.
        ("csv", "(FORMAT csv, HEADER)", &["--csv-column", "body"]),
        (
            "csv_semicolons",
            "(FORMAT csv, DELIMITER ';')",
            &[
                "--csv-column",
                "1",
                "--csv-no-header",
                "--csv-delimiter",
                ";",
            ],
        ),
        // NULL 'NULL': a NULL is written as the string, the body "NULL" quoted, the empty
        // body bare.
        (
            "csv_nulls",
            "(FORMAT csv, NULL 'NULL')",
            &["--csv-column", "1", "--csv-no-header", "--csv-null", "NULL"],
        ),
        // DELIMITER 'a': a bytea's hex text quoted where it holds an `a`, as COPY quotes it.
        (
            "csv_delimiter_a",
            "(FORMAT csv, DELIMITER 'a')",
            &[
                "--csv-column",
                "1",
                "--csv-no-header",
                "--csv-delimiter",
                "a",
            ],
        ),
        // QUOTE '''', ESCAPE '\': in quotes a backslash before each quote and backslash; the
        // header read with them.
        (
            "csv_quote_escape",
            r"(FORMAT csv, HEADER, QUOTE '''', ESCAPE '\')",
            &[
                "--csv-column",
                "body",
                "--csv-quote",
                "'",
                "--csv-escape",
                "\\",
            ],
        ),
        // QUOTE 'a': a bytea's hex text quoted where it holds an `a`, each `a` in it doubled.
        (
            "csv_quote_a",
            "(FORMAT csv, QUOTE 'a')",
            &["--csv-column", "1", "--csv-no-header", "--csv-quote", "a"],
        ),
        // FORCE_QUOTE *: every value quoted, a bytea's hex text among them (not a NULL).
        (
            "csv_force_quote",
            "(FORMAT csv, FORCE_QUOTE *)",
            &["--csv-column", "1", "--csv-no-header", "--csv-force-quote"],
        ),
    ] {
        let copied = copy_out(
            &mut client,
            &format!("COPY (SELECT id, body, tag FROM notes ORDER BY id) TO STDOUT {options}"),
        );
        std::fs::write(dir.join("rows.copy"), &copied).unwrap();
        let compress = [
            "compress",
            "rows.copy",
            "--keep-columns",
            "--codec",
            "lz4",
            "-o",
            "packed.copy",
        ];
        let compress = [&compress[..], flags].concat();
        // With NULL '', an empty body is written as NULL is (as COPY ... TO writes it), and
        // loads as NULL.
        let empty_is_null = flags.contains(&"");
        let nulls = if empty_is_null { "2 NULLs" } else { "1 NULL" };
        let stderr = String::from_utf8_lossy(&pgdict(dir, &compress).stderr).into_owned();
        assert!(
            stderr.contains(&format!(
                "{} rows",
                bodies.len() - if empty_is_null { 2 } else { 1 }
            )) && stderr.contains("with lz4 and dictionary 2")
                && stderr.contains(&format!("; {nulls} kept")),
            "{stderr}"
        );
        let table = format!("packed_{format}");
        client
            .batch_execute(&format!(
                "CREATE TABLE {table} (id int PRIMARY KEY, body bytea, tag text)"
            ))
            .unwrap();
        // (COPY ... FROM takes no FORCE_QUOTE.)
        let load_options = options.replace(", FORCE_QUOTE *", "");
        let mut copy = client
            .copy_in(&format!("COPY {table} FROM STDIN {load_options}"))
            .unwrap();
        std::io::Write::write_all(&mut copy, &std::fs::read(dir.join("packed.copy")).unwrap())
            .unwrap();
        copy.finish().unwrap();
        // Every datum beside its id, NULL where the body was; the datums smaller than the text
        // (the dictionary is of other rows, log lines: 5 % smaller).
        let misplaced: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM notes n FULL JOIN {table} p USING (id) WHERE (p.body \
                     IS NULL) <> (n.body IS NULL OR ({empty_is_null} AND n.body = '')) OR p.tag \
                     IS DISTINCT FROM n.tag"
                ),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(misplaced, 0, "{format}");
        let (text_bytes, datum_bytes): (i64, i64) = {
            let row = client
                .query_one(
                    &format!(
                        "SELECT sum(octet_length(n.body))::int8, sum(octet_length(p.body))::int8 \
                         FROM notes n JOIN {table} p USING (id)"
                    ),
                    &[],
                )
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert!(datum_bytes < text_bytes, "{datum_bytes} of {text_bytes}");
        let back = copy_out(
            &mut client,
            &format!("COPY (SELECT id, body, tag FROM {table} ORDER BY id) TO STDOUT {options}"),
        );
        std::fs::write(dir.join("back.copy"), &back).unwrap();
        // What compress wrote is what COPY ... TO writes for the same rows, byte for byte.
        assert!(
            back == std::fs::read(dir.join("packed.copy")).unwrap(),
            "{format}: COPY wrote the packed rows otherwise"
        );
        let decompress = [
            "decompress",
            "back.copy",
            "--keep-columns",
            "-o",
            "rows-back.copy",
        ];
        pgdict(dir, &[&decompress[..], flags].concat());
        let rows_back = std::fs::read(dir.join("rows-back.copy")).unwrap();
        assert!(
            rows_back == copied,
            "{format}: the rows came back different"
        );
        // Copied out under bytea_output = escape, the datums read the same (as byteain reads
        // either form): the rows come back as they were, and inspect finds every datum.
        if format != "binary" {
            client.batch_execute("SET bytea_output = escape").unwrap();
            let escaped = copy_out(
                &mut client,
                &format!(
                    "COPY (SELECT id, body, tag FROM {table} ORDER BY id) TO STDOUT {options}"
                ),
            );
            client.batch_execute("RESET bytea_output").unwrap();
            assert!(escaped != back, "{format}: bytea_output = escape wrote hex");
            std::fs::write(dir.join("escaped.copy"), &escaped).unwrap();
            let decompress = [
                "decompress",
                "escaped.copy",
                "--keep-columns",
                "-o",
                "rows-escaped.copy",
            ];
            pgdict(dir, &[&decompress[..], flags].concat());
            assert!(
                std::fs::read(dir.join("rows-escaped.copy")).unwrap() == copied,
                "{format}: the rows came back different from escape-format datums"
            );
            let inspect = |file: &str| {
                let output = pgdict(dir, &[&["inspect", file, "--json"][..], flags].concat());
                stdout(&output).lines().count()
            };
            let datums = inspect("back.copy");
            assert!(datums > 50, "{format}: {datums}");
            assert_eq!(inspect("escaped.copy"), datums, "{format}");
        }
    }

    // A bad line after good ones: the lines before it are written, then a line that makes
    // COPY fail, so that nothing is loaded. In CSV that line opens a quote that nothing
    // closes (CSV takes `\.` followed by more as data).
    client
        .batch_execute("CREATE TABLE broken (id int, body bytea, tag text)")
        .unwrap();
    for (options, bad_line, flags, said, end, refused) in [
        (
            "",
            "21\tonly two fields\n",
            &["--copy-column", "1"][..],
            "bad.copy:21: bad COPY data: 2 fields, where the lines before have 3",
            copy::TEXT_BROKEN_END.to_vec(),
            "end-of-copy marker corrupt",
        ),
        (
            "(FORMAT csv)",
            "21,only two fields\n",
            &["--csv-column", "1", "--csv-no-header"],
            // Line 76: the bodies before it hold line feeds, in quotes.
            "bad.copy:76: bad CSV: 2 fields, where the records before have 3",
            copy::CSV_BROKEN_END.to_vec(),
            "unterminated CSV quoted field",
        ),
        // With another quote, the end mark opens that quote; the `e`s in its words are escaped
        // so that none closes it.
        (
            r"(FORMAT csv, QUOTE 'e', ESCAPE '\')",
            "21,only two words\n",
            &[
                "--csv-column",
                "1",
                "--csv-no-header",
                "--csv-quote",
                "e",
                "--csv-escape",
                "\\",
            ],
            "bad.copy:76: bad CSV: 2 fields, where the records before have 3",
            CsvSyntax {
                quote: b'e',
                escape: b'\\',
                ..CsvSyntax::default()
            }
            .broken_end(),
            "unterminated CSV quoted field",
        ),
    ] {
        let mut bad = copy_out(
            &mut client,
            &format!(
                "COPY (SELECT id, body, tag FROM notes ORDER BY id LIMIT 20) TO STDOUT {options}"
            ),
        );
        bad.extend_from_slice(bad_line.as_bytes());
        std::fs::write(dir.join("bad.copy"), &bad).unwrap();
        let compress = ["compress", "bad.copy", "--keep-columns", "-j", "1"];
        let output = run(dir, &[&compress[..], flags].concat());
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{stderr}");
        assert_eq!(
            output.stdout.iter().filter(|&&b| b == b'\n').count(),
            21,
            "20 lines and the end mark"
        );
        assert!(output.stdout.ends_with(&end));
        let mut copy = client
            .copy_in(&format!("COPY broken FROM STDIN {options}"))
            .unwrap();
        std::io::Write::write_all(&mut copy, &output.stdout).unwrap();
        let error = copy.finish().unwrap_err();
        let message = error.as_db_error().map(|e| e.message().to_string());
        assert_eq!(message.as_deref(), Some(refused), "{error}");
        let loaded: i64 = client
            .query_one("SELECT count(*) FROM broken", &[])
            .unwrap()
            .get(0);
        assert_eq!(loaded, 0);
    }
}

#[test]
fn an_unreachable_source_database_is_named_with_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let conninfo = format!(
        "host=127.0.0.1 port={} user=postgres connect_timeout=5",
        cluster::free_port()
    );
    let source = ["--pg-source", &conninfo, "--table", "t", "--column", "c"];
    for command in [
        &["compare"][..],
        &["compress", "--dict", "none", "-o", "o.datums"],
    ] {
        let stderr = pgdict_fails(dir.path(), &[command, &source[..]].concat(), 1);
        assert!(
            stderr.contains("cannot connect to PostgreSQL at 127.0.0.1:")
                && stderr
                    .contains("hint: is the server running and listening on that host and port?"),
            "{stderr}"
        );
    }
    assert!(!dir.path().join("o.datums").exists());
}

/// A PostgreSQL store opened on a hot standby lists and reads what the primary added, and
/// refuses every write, saying once where to make it; the demo runs there, keeping the
/// dictionaries a demo on the primary stored (so it needs no write).
#[test]
fn a_store_on_a_standby_reads_and_refuses_writes() {
    let primary = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let on_primary = primary.connection_string();
    pgdict(dir, &["demo", "--rounds", "1", "--pg-store", &on_primary]);
    let standby = primary.start_standby();
    primary.wait_for_replay(&standby);
    let on_standby = standby.connection_string();

    let out = stdout(&pgdict(dir, &["dict", "list", "--pg-store", &on_standby]));
    assert!(out.contains("active, auto for lz4"), "{out}");
    let out = stdout(&pgdict(
        dir,
        &["demo", "--rounds", "1", "--pg-store", &on_standby],
    ));
    assert!(out.contains("kept dictionary 1 (pglz"), "{out}");
    // The commands it suggests read the same store (they read ./dicts), without echoing the
    // connection string, which may hold a password.
    assert!(
        out.contains("  pgdict --pg-store CONNINFO dict list\n"),
        "{out}"
    );
    assert!(!out.contains(&on_standby), "{out}");
    // The advice is said once (the hint used to repeat the detail word for word).
    let stderr = pgdict_fails(dir, &["dict", "retire", "1", "--pg-store", &on_standby], 1);
    assert!(
        stderr.contains("is read-only: the server is a standby"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("on the primary").count(), 1, "{stderr}");
}

/// Ctrl-C while `compress` waits on a slow read cancels the query on the server (see
/// `PgCluster::assert_interrupt_cancels_read`), with its output written to standard output
/// (no temporary file: the handler is there for the source).
#[test]
fn an_interrupted_compress_cancels_its_query() {
    let cluster = PgCluster::start();
    let mut compress = Command::new(env!("CARGO_BIN_EXE_pgdict"));
    compress
        .args(["compress", "--dict", "none"])
        .env_remove("PGDICT_STORE")
        .env_remove("PGDICT_PG_STORE");
    cluster.assert_interrupt_cancels_read(compress);
}
