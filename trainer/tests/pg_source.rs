//! The PostgreSQL table source on a real PostgreSQL 15 server (the cluster harness of the
//! workspace's tests, `tests/support/cluster.rs`):
//!
//! - a text column read whole comes back row for row (NULLs skipped), a bytea column byte for
//!   byte; a jsonb column as its text, with a note saying that is not what PostgreSQL stores;
//!   text in the database's encoding (LATIN1, SQL_ASCII), not converted to the client's;
//! - with `rows_wanted` much smaller than the table, only a sample of its pages is read
//!   (`TABLESAMPLE SYSTEM ... REPEATABLE`): fewer rows, the same ones for the same seed;
//! - statistics that promise rows the table no longer holds: all the rows that remain come
//!   back (by the live-row count, which already says 3, so the table is read whole); the
//!   sample's share is set by the rows that hold a value (NULLs left out), counted by the
//!   server's live-row count where ANALYZE has not run (never, or not on an inheritance
//!   parent);
//! - with no live-row count to correct statistics that are out of date (reset, as after a
//!   crash), a page sample that holds no row: the whole column is read instead; one that holds
//!   fewer rows than wanted: the table is read again, a pass of its own that the trainer's
//!   sampler starts afresh with, and the report says so; unless its rows, large, hold the bytes
//!   the trainer keeps (`--max-bytes`);
//! - a composite value with a NULL field is a value; `char(n)` keeps its trailing blanks;
//! - a missing table or column is an error naming it (and the columns there are);
//! - a connection string without a host connects through PGHOST and PGPORT, as psql would;
//!   a role that must give a password finds it in the password file; a role the server takes
//!   only over TLS connects with the default sslmode and `require`; a missing database, an
//!   unknown role, a missing or wrong password and a table the role may not read each get a
//!   hint that fits;
//! - the CLI end to end: `pgdict-trainer --pg-source ... --pg-store ...` trains from a column
//!   and stores the dictionary in the PostgreSQL store, whose datums decode;
//! - on a hot standby: a source, sampled by pages; a `--pg-store` there is refused before a
//!   row is read;
//! - rows are streamed whatever their sizes (large rows after small ones need no temporary
//!   files on the server), and a table read whole comes in the same order after another
//!   session's scan stopped part of the way (the same sample for the same seed);
//! - a signal cancels the query under way.

#[allow(dead_code)] // this test uses only part of the harness
#[path = "../../tests/support/cluster.rs"]
mod cluster;

mod corpus;

use corpus::corpus_rows;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use cluster::PgCluster;
use pgdict::datum::{self, Codec, DatumEncoder};
use pgdict::dict::{DirStore, PgStore};
use pgdict_trainer::progress::NoProgress;
use pgdict_trainer::source::{self, PgSource, SourceError, SourceSpec};
use serde_json::{json, Value};

fn spec(
    cluster: &PgCluster,
    table: &str,
    column: &str,
    wanted: Option<u64>,
    seed: u64,
) -> SourceSpec {
    SourceSpec::Postgres(PgSource {
        conninfo: cluster.connection_string(),
        table: table.into(),
        column: column.into(),
        rows_wanted: wanted,
        bytes_wanted: None,
        seed,
    })
}

fn read(spec: &SourceSpec) -> Vec<Vec<u8>> {
    source::open(spec)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn sorted(mut rows: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    rows.sort();
    rows
}

/// The rows of a corpus row file (read as the trainer reads it), and the same as text.
fn corpus_rows_and_texts(name: &str) -> (Vec<Vec<u8>>, Vec<String>) {
    let rows: Vec<Vec<u8>> = source::open(&SourceSpec::from_arg(&corpus_rows(name), None))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let texts = rows
        .iter()
        .map(|row| String::from_utf8(row.clone()).unwrap())
        .collect();
    (rows, texts)
}

/// A proxy to the server on `port` for one connection: it lets the startup through and
/// closes the connection when the client sends anything more (with trust authentication and
/// no TLS, its first query). Returns its port.
fn closing_at_first_query(port: u16) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut client, _) = listener.accept().unwrap();
        let mut server = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // The startup message: its length (itself included), then the rest.
        let mut length = [0; 4];
        client.read_exact(&mut length).unwrap();
        let mut startup = vec![0; u32::from_be_bytes(length) as usize - 4];
        client.read_exact(&mut startup).unwrap();
        server.write_all(&[&length[..], &startup].concat()).unwrap();
        let (mut answers, mut to_client) =
            (server.try_clone().unwrap(), client.try_clone().unwrap());
        std::thread::spawn(move || std::io::copy(&mut answers, &mut to_client));
        let _ = client.read(&mut [0]);
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
    });
    proxy_port
}

#[test]
fn postgres_column_source() {
    let (rows, texts) = corpus_rows_and_texts("json_user_agents.jsonl");
    let binary: Vec<Vec<u8>> = (0..300u32)
        .map(|i| {
            let mut row = vec![0u8, 0xff, 0x80, b'\n'];
            row.extend_from_slice(&i.to_le_bytes());
            row.extend_from_slice(b"\0shared binary tail\0");
            row
        })
        .collect();

    let cluster = PgCluster::start();
    let mut client = cluster.client();
    client
        .batch_execute(
            "CREATE TABLE events (id serial PRIMARY KEY, payload text, blob bytea) \
                 WITH (autovacuum_enabled = false);
             CREATE SCHEMA app;
             CREATE TABLE app.\"Mixed Case\" (\"Body\" json);
             INSERT INTO app.\"Mixed Case\" VALUES ('{\"a\": 1}'), (NULL), ('[2]');
             CREATE DOMAIN app.note AS text;
             CREATE DOMAIN app.blob AS bytea;
             CREATE DOMAIN app.small_blob AS app.blob CHECK (length(VALUE) < 100);
             CREATE DOMAIN app.doc AS json;
             CREATE TABLE kinds (j jsonb, n app.note, v varchar(20), b app.small_blob, d app.doc);
             INSERT INTO kinds VALUES ('{\"b\": [1, 2]}', 'n', 'v', '\\x00ff', '[3]');
             CREATE TABLE shrunk (v text) WITH (autovacuum_enabled = false);
             INSERT INTO shrunk SELECT 'row ' || g FROM generate_series(1, 20000) g;
             ANALYZE shrunk;
             DELETE FROM shrunk WHERE v NOT IN ('row 1', 'row 5000', 'row 19999');
             CREATE TABLE parts (k int, v text) PARTITION BY RANGE (k);
             CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (5000);
             CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (5000) TO (MAXVALUE);
             INSERT INTO parts SELECT g, 'part row ' || g FROM generate_series(1, 20000) g;
             ANALYZE parts_low; ANALYZE parts_high;
             CREATE TABLE mostly_null (v text) WITH (autovacuum_enabled = false);
             INSERT INTO mostly_null SELECT CASE WHEN g % 100 = 0 THEN 'kept ' || g END
                 FROM generate_series(1, 20000) g;
             ANALYZE mostly_null;
             CREATE TABLE unanalyzed (v text) WITH (autovacuum_enabled = false);
             INSERT INTO unanalyzed SELECT 'unanalyzed row ' || g FROM generate_series(1, 20000) g;
             CREATE TABLE inherited (v text) WITH (autovacuum_enabled = false);
             CREATE TABLE inherited_a () INHERITS (inherited) WITH (autovacuum_enabled = false);
             CREATE TABLE inherited_b () INHERITS (inherited) WITH (autovacuum_enabled = false);
             INSERT INTO inherited_a SELECT 'a ' || g FROM generate_series(1, 10000) g;
             INSERT INTO inherited_b SELECT 'b ' || g FROM generate_series(1, 10000) g;
             CREATE TYPE pair AS (n int, t text);
             CREATE TABLE shapes (p pair, c char(6));
             INSERT INTO shapes VALUES ('(1,x)', 'ab   '), ('(2,)', 'xyz'), ('(,)', NULL),
                 (NULL, 'abcdef');
             SELECT pg_stat_force_next_flush();",
        )
        .unwrap();
    client
        .execute(
            "INSERT INTO events (payload) SELECT unnest($1::text[])",
            &[&texts],
        )
        .unwrap();
    client
        .execute("INSERT INTO events (payload) VALUES (NULL)", &[])
        .unwrap();
    client
        .execute(
            "INSERT INTO events (blob) SELECT unnest($1::bytea[])",
            &[&binary],
        )
        .unwrap();
    client.batch_execute("ANALYZE events").unwrap();

    // The whole column, NULLs skipped; text as text, bytea as bytes.
    let all = read(&spec(&cluster, "events", "payload", None, 0));
    assert_eq!(all.len(), rows.len());
    assert!(sorted(all) == sorted(rows.clone()), "text rows differ");
    // (No ORDER BY: a column comes in the order the server reads it.)
    let blobs = sorted(read(&spec(&cluster, "public.events", "blob", None, 0)));
    assert!(blobs == sorted(binary.clone()), "bytea rows differ");
    // Quoted names, and json as its text.
    assert_eq!(
        read(&spec(&cluster, "app.\"Mixed Case\"", "Body", None, 0)),
        [b"{\"a\": 1}".to_vec(), b"[2]".to_vec()]
    );

    // Types stored as their text output carry no note; jsonb, stored in binary, does.
    let note = |table: &str, column: &str| {
        source::open(&spec(&cluster, table, column, None, 0))
            .unwrap()
            .note()
            .map(str::to_string)
    };
    for (table, column) in [
        ("events", "payload"),
        ("events", "blob"),
        ("app.\"Mixed Case\"", "Body"),
        ("kinds", "n"),
        ("kinds", "v"),
        ("kinds", "b"),
        ("kinds", "d"),
    ] {
        assert_eq!(note(table, column), None, "{table}.{column}");
    }
    let jsonb = note("kinds", "j").expect("a jsonb column has a note");
    assert!(jsonb.starts_with("column j is jsonb: its values are read as their text output"));
    assert_eq!(
        read(&spec(&cluster, "kinds", "j", None, 0)),
        [b"{\"b\": [1, 2]}".to_vec()]
    );
    // A domain over a domain over bytea is read as its bytes, not as its hex text output.
    assert_eq!(
        read(&spec(&cluster, "kinds", "b", None, 0)),
        [vec![0, 0xff]]
    );
    assert_eq!(
        read(&spec(&cluster, "kinds", "d", None, 0)),
        [b"[3]".to_vec()]
    );

    // Text arrives in the database's encoding, as stored, not in the client's (UTF-8): 'é' is
    // one byte in LATIN1, and a SQL_ASCII database holds bytes that need not be UTF-8 (read
    // in the client's UTF-8, the server refused to send them: "invalid byte sequence for
    // encoding "UTF8": 0xe9"). jsonb's text too: the 'é' the client sent is the LATIN1
    // database's one byte, and the SQL_ASCII database's two UTF-8 bytes, kept unconverted.
    for (database, encoding, jsonb_e) in [
        ("latin1", "LATIN1", &b"\xe9"[..]),
        ("ascii", "SQL_ASCII", &b"\xc3\xa9"[..]),
    ] {
        client
            .batch_execute(&format!(
                "CREATE DATABASE {database} TEMPLATE template0 ENCODING '{encoding}' \
                 LC_COLLATE 'C' LC_CTYPE 'C'"
            ))
            .unwrap();
        let conninfo = format!("{} dbname={database}", cluster.connection_string());
        let mut other = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
        other
            .batch_execute(
                "CREATE TABLE t (v text, j jsonb);
                 INSERT INTO t VALUES (convert_from('\\x636166e9'::bytea, 'LATIN1'), NULL),
                     (NULL, '{\"k\": \"café\"}');",
            )
            .unwrap();
        let column = |column: &str| {
            read(&SourceSpec::Postgres(PgSource {
                conninfo: conninfo.clone(),
                table: "t".into(),
                column: column.into(),
                rows_wanted: None,
                bytes_wanted: None,
                seed: 0,
            }))
        };
        assert_eq!(column("v"), [b"caf\xe9".to_vec()], "{encoding}");
        let jsonb = [&b"{\"k\": \"caf"[..], jsonb_e, b"\"}"].concat();
        assert_eq!(column("j"), [jsonb], "{encoding}");
    }

    // A sample of pages: ~3x 200 rows of the 7,236, the same for the same seed.
    let a = read(&spec(&cluster, "events", "payload", Some(200), 7));
    let b = read(&spec(&cluster, "events", "payload", Some(200), 7));
    let c = read(&spec(&cluster, "events", "payload", Some(200), 8));
    assert!(
        (100..3000).contains(&a.len()),
        "sampled {} of {} rows",
        a.len(),
        rows.len()
    );
    // The rows say how they were read, with the table's statistics.
    let mut sampled = source::open(&spec(&cluster, "events", "payload", Some(200), 7)).unwrap();
    assert_eq!(sampled.by_ref().count(), a.len());
    let reltuples: f32 = client
        .query_one(
            "SELECT reltuples FROM pg_class WHERE relname = 'events'",
            &[],
        )
        .unwrap()
        .get(0);
    let pages = sampled.page_sample().expect("a sample of pages");
    // The rows that hold a value: the table's, less its NULLs (ANALYZE read them all).
    assert!(f64::from(reltuples) > rows.len() as f64 + 1.0);
    assert!(
        pages.estimated_rows.abs_diff(rows.len() as u64) <= 1,
        "{} rows estimated, {} hold a value",
        pages.estimated_rows,
        rows.len()
    );
    // The share for three times the rows wanted, rounded up to a quarter octave (at most
    // 2^(1/4) = 1.19 times as much).
    let wanted_percent = 100.0 * 3.0 * 200.0 / rows.len() as f64;
    assert!(
        (wanted_percent * 0.999..wanted_percent * 1.19).contains(&pages.percent),
        "{} % of the pages, for {wanted_percent}",
        pages.percent
    );
    let mut whole = source::open(&spec(&cluster, "events", "payload", None, 0)).unwrap();
    assert_eq!(whole.by_ref().count(), rows.len());
    assert_eq!(whole.page_sample(), None);
    assert!(a == b, "the same seed sampled other rows");
    assert!(a != c, "another seed sampled the same rows");
    // Every sampled row is a row of the table.
    let known: std::collections::HashSet<&Vec<u8>> = rows.iter().collect();
    assert!(a.iter().all(|r| known.contains(r)));
    // A table asking for more rows than it has is read whole.
    assert_eq!(
        read(&spec(&cluster, "events", "payload", Some(10_000), 7)).len(),
        rows.len()
    );

    // A partitioned table analyzed only partition by partition (as autovacuum does): its
    // partitions' statistics say how large it is, and it is sampled by pages too.
    let mut parts = source::open(&spec(&cluster, "parts", "v", Some(1000), 1)).unwrap();
    let sampled_parts = parts.by_ref().count();
    let pages = parts
        .page_sample()
        .expect("a partitioned table sampled by pages");
    assert_eq!(pages.estimated_rows, 20_000);
    assert!((1..20_000).contains(&sampled_parts), "{sampled_parts}");

    // A column that is NULL in 99 rows of 100: its 200 values are fewer than the sample
    // wants, so it is read whole (the sample's share was set by the 20,000 rows, and a
    // handful came back).
    let mut mostly_null = source::open(&spec(&cluster, "mostly_null", "v", Some(100), 1)).unwrap();
    assert_eq!(mostly_null.by_ref().count(), 200);
    assert_eq!(mostly_null.page_sample(), None);
    // Never analyzed (reltuples -1), and an inheritance parent (reltuples 0, its rows in its
    // children): the live rows the server counts say how large they are, and they are
    // sampled by pages (both were read whole).
    for (table, rows) in [("unanalyzed", 20_000), ("inherited", 20_000)] {
        let mut sampled = source::open(&spec(&cluster, table, "v", Some(2000), 1)).unwrap();
        let count = sampled.by_ref().count();
        let pages = sampled
            .page_sample()
            .unwrap_or_else(|| panic!("{table}: read whole"));
        assert_eq!(pages.estimated_rows, rows, "{table}");
        assert!(
            (1..rows as usize / 2).contains(&count),
            "{table}: {count} rows"
        );
    }
    // A composite value with a NULL field is a value (IS NOT NULL is false for it), and
    // char(n) is read with the trailing blanks PostgreSQL stores.
    let pairs = sorted(read(&spec(&cluster, "shapes", "p", None, 0)));
    assert_eq!(
        pairs,
        [b"(,)".to_vec(), b"(1,x)".to_vec(), b"(2,)".to_vec()]
    );
    let chars = sorted(read(&spec(&cluster, "shapes", "c", None, 0)));
    assert_eq!(
        chars,
        [b"ab    ".to_vec(), b"abcdef".to_vec(), b"xyz   ".to_vec()]
    );

    // ANALYZE said 20,000 rows, 3 remain: all 3 come back (the live-row count says 3, so the
    // table is read whole, not sampled).
    let shrunk = read(&spec(&cluster, "shrunk", "v", Some(100), 1));
    assert_eq!(
        sorted(shrunk),
        [
            b"row 1".to_vec(),
            b"row 19999".to_vec(),
            b"row 5000".to_vec()
        ]
    );

    // Missing table, missing column.
    let err = source::open(&spec(&cluster, "nope", "payload", None, 0)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "PostgreSQL at 127.0.0.1:{}: looking up table nope: no table",
            cluster.port()
        )),
        "{text}"
    );
    // A mixed-case name unquoted is not a name SQL reads: the hint says how to give it.
    let err = source::open(&spec(&cluster, "app.Mixed Case", "Body", None, 0)).unwrap_err();
    assert!(err.to_string().contains("(SQLSTATE 42602)"), "{err}");
    assert!(err.hint().unwrap().contains("quote a name"), "{err}");
    let err = source::open(&spec(&cluster, "events", "body", None, 0)).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("no such column; events has id, payload, blob"),
        "{err}"
    );

    // A connection lost as the table is looked up is said to be lost, not taken for a table
    // that is not there (it was "no table, view or materialized view named events").
    let conninfo = format!(
        "host=127.0.0.1 port={} user=postgres sslmode=disable",
        closing_at_first_query(cluster.port())
    );
    let err = source::open(&SourceSpec::Postgres(PgSource {
        conninfo,
        table: "events".into(),
        column: "payload".into(),
        rows_wanted: None,
        bytes_wanted: None,
        seed: 0,
    }))
    .unwrap_err();
    assert!(matches!(err, SourceError::ConnectionLost { .. }), "{err}");
    assert!(err.to_string().contains("looking up table events"), "{err}");

    // The CLI end to end: from the column into the PostgreSQL store.
    let conninfo = cluster.connection_string();
    let output = Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
        .args(["--json", "--seed", "3", "--pg-source", &conninfo])
        .args([
            "--table",
            "events",
            "--column",
            "payload",
            "--pg-store",
            &conninfo,
        ])
        .env_remove("PGDICT_STORE")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["dict_id"], 1);
    assert_eq!(
        report["sample"]["rows_seen"].as_u64(),
        Some(rows.len() as u64)
    );
    assert!(report["gain_vs_pglz"].as_f64().unwrap() > 4.0, "{report}");
    let store = PgStore::connect(&conninfo).unwrap();
    let dict = store.get(1).unwrap();
    assert_eq!(
        dict.content().len() as u64,
        report["dict_bytes"].as_u64().unwrap()
    );
    let metadata = dict.metadata();
    assert_eq!(
        metadata.source.as_deref(),
        Some(
            format!(
                "table events column payload at 127.0.0.1:{}",
                cluster.port()
            )
            .as_str()
        )
    );
    let prepared = store.prepared(1).unwrap();
    let mut encoder = DatumEncoder::new();
    for row in rows.iter().take(200) {
        let stored = encoder.encode(row, Codec::Pglz, Some(&prepared)).unwrap();
        assert!(stored.len() < row.len() / 2);
        assert_eq!(&datum::decode(&stored, &store).unwrap(), row);
    }

    // Connection strings as libpq reads them: no host, but PGHOST (the server's socket
    // directory) and PGPORT, as `psql` would take them (it used to fail: "both host and
    // hostaddr are missing").
    let trainer = |conninfo: &str, env: &[(&str, String)]| {
        Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
            .args(["--dry-run", "--pg-source", conninfo])
            .args(["--table", "events", "--column", "payload"])
            .env_remove("PGDICT_STORE")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap()
    };
    let socket = cluster.sock_dir().display().to_string();
    let env = [
        ("PGHOST", socket.clone()),
        ("PGPORT", cluster.port().to_string()),
    ];
    let output = trainer("user=postgres", &env);
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(0), "{err}");
    let at = format!("at {socket}/.s.PGSQL.{}:", cluster.port());
    assert!(out.contains(&at), "{out}");
    // What the server refuses, with the hint for each: no such database, no such role, a
    // table the role may not read.
    client.batch_execute("CREATE ROLE reader LOGIN").unwrap();
    for (conninfo, said, hint) in [
        (
            "user=postgres dbname=nowhere",
            "database \"nowhere\" does not exist",
            "hint: the server has no such database",
        ),
        (
            "user=ghost",
            "role \"ghost\" does not exist",
            "hint: the server refused the user",
        ),
        (
            "user=reader dbname=postgres",
            "permission denied for table events",
            "hint: the user may not read it",
        ),
    ] {
        let output = trainer(conninfo, &env);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{conninfo}: {err}");
        assert!(
            err.contains(said) && err.contains(hint),
            "{conninfo}: {err}"
        );
    }

    // A role that must give a password (scram-sha-256 for it alone, ahead of the cluster's
    // trust): found in the password file PGPASSFILE names, as libpq finds it; without it, or
    // with a wrong one, refused with a hint that says so.
    let hba = cluster.data_dir().join("pg_hba.conf");
    let rules = fs::read_to_string(&hba).unwrap();
    fs::write(
        &hba,
        format!("host all secretive 127.0.0.1/32 scram-sha-256\n{rules}"),
    )
    .unwrap();
    client
        .batch_execute(
            "SET password_encryption = 'scram-sha-256';
             CREATE ROLE secretive LOGIN PASSWORD 's3:cr\\t';
             GRANT SELECT ON events TO secretive;
             SELECT pg_reload_conf();",
        )
        .unwrap();
    let pgpass = tempfile::tempdir().unwrap();
    let pgpass_file = pgpass.path().join("pgpass");
    fs::write(
        &pgpass_file,
        format!(
            "# comment\n127.0.0.1:{}:postgres:secretive:s3\\:cr\\\\t\n",
            cluster.port()
        ),
    )
    .unwrap();
    fs::set_permissions(&pgpass_file, fs::Permissions::from_mode(0o600)).unwrap();
    let secretive = format!(
        "host=127.0.0.1 port={} user=secretive dbname=postgres",
        cluster.port()
    );
    let refused = trainer(&secretive, &[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains("password missing") && err.contains("hint: the server asks for a password"),
        "{err}"
    );
    let refused = trainer(&secretive, &[("PGPASSWORD", "wrong".into())]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains("SQLSTATE 28P01") && err.contains("hint: the server refused the user"),
        "{err}"
    );
    let output = trainer(
        &secretive,
        &[("PGPASSFILE", pgpass_file.display().to_string())],
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");

    // TLS, as production servers require it: a role the server takes only over TLS (a
    // `hostnossl ... reject` line for it) connects with the default sslmode (prefer), which
    // encrypts as libpq's does, and with sslmode=require; with sslmode=disable the server
    // refuses it. (It used to be refused whatever the sslmode: pgdict had no TLS.)
    let certs = tempfile::tempdir().unwrap();
    cluster::self_signed(certs.path(), "server", "/CN=localhost");
    let rules = fs::read_to_string(&hba).unwrap();
    fs::write(
        &hba,
        format!("hostnossl all tls_only 127.0.0.1/32 reject\n{rules}"),
    )
    .unwrap();
    for statement in [
        "CREATE ROLE tls_only LOGIN",
        "GRANT SELECT ON events TO tls_only",
    ] {
        client.batch_execute(statement).unwrap();
    }
    cluster.serve_tls(
        &certs.path().join("server.crt"),
        &certs.path().join("server.key"),
        None,
    );
    let tls_only = format!(
        "host=127.0.0.1 port={} user=tls_only dbname=postgres",
        cluster.port()
    );
    for sslmode in ["", " sslmode=prefer", " sslmode=require"] {
        let output = trainer(&format!("{tls_only}{sslmode}"), &[]);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{sslmode}: {err}");
    }
    let refused = trainer(&format!("{tls_only} sslmode=disable"), &[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("no encryption"), "{err}");

    // Last, as it makes the server restart: the backend of a source being read dies. The
    // table's 50 MB (of rows 2.7 KB long, stored compressed) are more than the connection
    // and the reader hold at once: the server is still sending.
    client
        .batch_execute(
            "CREATE TABLE wide AS SELECT repeat('wide row ' || g, 300) AS v \
             FROM generate_series(1, 20000) g",
        )
        .unwrap();
    let mut reading = source::open(&spec(&cluster, "wide", "v", None, 0)).unwrap();
    reading.next().unwrap().unwrap();
    let backend: i32 = client
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT % FROM wide %' \
             AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    let killed = Command::new("kill")
        .args(["-KILL", &backend.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let err = reading
        .find_map(Result::err)
        .expect("the rows went on after their backend died");
    assert!(matches!(err, SourceError::ConnectionLost { .. }), "{err:?}");
    // The client sees the end of the stream or a reset, as the timing falls.
    assert!(
        err.to_string().starts_with(&format!(
            "PostgreSQL at 127.0.0.1:{}: reading rows of column v of wide: the connection \
             to the server was lost (",
            cluster.port()
        )),
        "{err}"
    );
    assert!(err
        .hint()
        .unwrap()
        .contains("shut down, restarted or crashed"));
}

/// Rows are streamed, whatever their sizes: a cursor fetched 1000 rows at a time once the
/// rows before were small, and the server stores a FETCH's rows whole before it sends them
/// (in temporary files past `work_mem`), as the client held them whole. Large rows after 1100
/// small ones took 9 MB of temporary files, which a `temp_file_limit` of 1 MB refused.
#[test]
fn large_rows_after_small_ones_are_streamed() {
    let cluster = PgCluster::start();
    cluster
        .client()
        .batch_execute(
            "CREATE TABLE growing (v text);
             INSERT INTO growing SELECT 'small row ' || g FROM generate_series(1, 1100) g;
             INSERT INTO growing SELECT repeat('large value ' || g || ' ', 2000)
                 FROM generate_series(1, 300) g;",
        )
        .unwrap();
    let conninfo = format!(
        "{} options='-c work_mem=64kB -c temp_file_limit=1MB'",
        cluster.connection_string()
    );
    let rows = source::open(&SourceSpec::Postgres(PgSource {
        conninfo,
        table: "growing".into(),
        column: "v".into(),
        rows_wanted: None,
        bytes_wanted: None,
        seed: 0,
    }))
    .unwrap()
    .collect::<Result<Vec<_>, _>>()
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), 1400);
    assert!(rows[1399].len() > 30_000);
}

/// Rows that come slowly (a view's, here one a second, 9 KB each so that the server sends
/// each as it is made) are handed over as they come, not a batch of 1000 later (the first
/// three took the whole view's 30 s); and a source dropped before its end cancels its query
/// on the server at once, not when the reader next has a row to hand over (here 60 s later;
/// the second row makes the server send all of the first, which it holds until 8 KB more).
#[test]
fn slow_rows_come_as_they_come_and_a_dropped_source_cancels_its_query() {
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    client
        .batch_execute(
            "CREATE VIEW slow AS SELECT repeat('x', 9000) || g || pg_sleep(1)::text AS v
                 FROM generate_series(1, 30) g;
             CREATE VIEW stalled AS SELECT repeat('x', 9000) || g
                 || pg_sleep(CASE WHEN g <= 2 THEN 0 ELSE 60 END)::text AS v
                 FROM generate_series(1, 4) g;",
        )
        .unwrap();
    let open = |view: &str| {
        source::open(&SourceSpec::Postgres(PgSource {
            conninfo: cluster.connection_string(),
            table: view.into(),
            column: "v".into(),
            rows_wanted: None,
            bytes_wanted: None,
            seed: 0,
        }))
        .unwrap()
    };
    let started = Instant::now();
    let mut rows = open("slow");
    for _ in 0..3 {
        assert!(rows.next().unwrap().unwrap().starts_with(b"xxx"));
    }
    // Three or four seconds' rows and the startup: far from the 30 s a whole batch took.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the third row came after {:?}",
        started.elapsed()
    );
    drop(rows);
    let running = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE state = 'active' AND pid <> pg_backend_pid() \
                 AND query LIKE 'SELECT % FROM stalled %'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let mut rows = open("stalled");
    assert!(rows.next().unwrap().unwrap().starts_with(b"xxx"));
    assert_eq!(running(&mut client), 1);
    drop(rows);
    let dropped = Instant::now();
    while running(&mut client) > 0 {
        assert!(
            dropped.elapsed() < Duration::from_secs(10),
            "the dropped source's query still runs after {:?}",
            dropped.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A table read whole gives the same sample for the same seed after another session's scan
/// stopped part of the way: with `synchronize_seqscans` (on by default, for tables over a
/// quarter of `shared_buffers`), the read started where that scan had stopped, and the
/// sampler, which draws by position, took other rows.
#[test]
fn a_table_read_whole_is_read_in_the_same_order() {
    let cluster = PgCluster::start_with(&["shared_buffers = 128kB"]);
    let mut client = cluster.client();
    // 20,000 rows in 200 pages: read whole for 2,000 training rows (and 500 held out).
    client
        .batch_execute(
            "CREATE TABLE scanned (v text) WITH (autovacuum_enabled = false);
             INSERT INTO scanned SELECT 'row ' || g || ' ' || repeat(md5(g::text), 1 + g % 3)
                 FROM generate_series(1, 20000) g;
             ANALYZE scanned;",
        )
        .unwrap();
    let sample = || {
        let output = Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
            .args(["--dry-run", "--json", "--max-rows", "2000"])
            .args(["--pg-source", &cluster.connection_string()])
            .args(["--table", "scanned", "--column", "v"])
            .env_remove("PGDICT_STORE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["sample"]["rows_seen"], 20_000, "{report}");
        assert_eq!(report["sample"]["table_sample_percent"], Value::Null);
        report["sample"].clone()
    };
    let first = sample();
    // A scan that stops after a quarter of the table leaves the place synchronized scans
    // start at there.
    let stopped: Vec<postgres::Row> = client
        .query("SELECT v FROM scanned LIMIT 5000", &[])
        .unwrap();
    assert_eq!(stopped.len(), 5000);
    assert_eq!(sample(), first);
}

/// A table whose statistics (ANALYZE's `reltuples`) say `rows` rows, of which only those where
/// `kept` holds remain, with no live-row count to correct them: the DELETE's counts are flushed
/// and then reset, as a crash or `pg_stat_reset` leaves them (autovacuum, which only acts on
/// those counts, then leaves the table alone too). Row `id` N (from 1) holds `value`, an SQL
/// expression of `g` = N (`'row ' || g`: `row N`).
fn stale_table(client: &mut postgres::Client, table: &str, rows: u32, kept: &str, value: &str) {
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (id int, v text) WITH (autovacuum_enabled = false);
             INSERT INTO {table} SELECT g, {value} FROM generate_series(1, {rows}) g;
             ANALYZE {table};
             DELETE FROM {table} WHERE NOT ({kept});
             SELECT pg_stat_force_next_flush();"
        ))
        .unwrap();
    // A statement of its own: the flush happens as the batch above ends.
    client
        .batch_execute(&format!(
            "SELECT pg_stat_reset_single_table_counters('{table}'::regclass)"
        ))
        .unwrap();
    let (reltuples, live): (f32, i64) = {
        let row = client
            .query_one(
                "SELECT c.reltuples, s.n_live_tup FROM pg_class c \
                 JOIN pg_stat_all_tables s ON s.relid = c.oid WHERE c.oid = $1::text::regclass",
                &[&table],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((reltuples, live), (rows as f32, 0), "{table}'s statistics");
}

/// `row N`, as [`stale_table`] makes it.
const ROW_N: &str = "'row ' || g";

/// The first seed whose `TABLESAMPLE SYSTEM (percent)` of `table` holds no row. With one seed,
/// SYSTEM takes a page when a hash of its number and the seed is under a cutoff that grows with
/// the share, so that a seed whose sample is empty at this share is empty at any smaller one.
fn seed_of_an_empty_sample(client: &mut postgres::Client, table: &str, percent: f64) -> u64 {
    (0..100u64)
        .find(|&seed| {
            let query = format!(
                "SELECT count(*) FROM {table} TABLESAMPLE SYSTEM ({percent}) REPEATABLE ({seed})"
            );
            client.query_one(&query, &[]).unwrap().get::<_, i64>(0) == 0
        })
        .expect("a seed whose page sample is empty")
}

/// A page sample that holds no row, as statistics far out of date make it (20,000 rows by
/// ANALYZE, 3 left, no live-row count): the whole column is read instead, all 3 rows.
#[test]
fn an_empty_page_sample_reads_the_whole_column() {
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    stale_table(
        &mut client,
        "emptied",
        20_000,
        "id IN (1, 10000, 19999)",
        ROW_N,
    );
    let seed = seed_of_an_empty_sample(&mut client, "emptied", 10.0);
    let mut rows = source::open(&spec(&cluster, "emptied", "v", Some(100), seed)).unwrap();
    // The statistics set a sample of pages (1.7 % of them, for 3 x 100 of 20,000 rows), which
    // holds no row at this seed ...
    let planned = rows.page_sample().expect("a page sample planned");
    assert_eq!(planned.estimated_rows, 20_000);
    assert!(planned.percent <= 10.0, "{planned:?}");
    // ... and the rows come from the whole column.
    let all: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        sorted(all),
        [
            b"row 1".to_vec(),
            b"row 10000".to_vec(),
            b"row 19999".to_vec()
        ]
    );
    assert_eq!(rows.page_sample(), None, "read whole, not from pages");
}

/// A page sample that holds some rows, but fewer than wanted, as statistics far out of date
/// make it (40,000 rows by ANALYZE, 1 in 20 left, no live-row count): the rows are read again,
/// from a share of the pages set by what the first sample held (or whole), and a sampler that
/// starts afresh with the next pass keeps the same sample for the same seed. The trainer says
/// so. (It trained on the first sample's few rows.)
#[test]
fn a_page_sample_short_of_the_rows_wanted_is_read_again() {
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    stale_table(&mut client, "thinned", 40_000, "id % 20 = 0", ROW_N);
    let left: Vec<Vec<u8>> = (1..=2000)
        .map(|i| format!("row {}", i * 20).into_bytes())
        .collect();
    let wanted = 100;
    // A seed whose first sample holds a few rows (not none, which the whole column follows
    // as if it were the first read: see above).
    let (seed, planned, first) = (0..100u64)
        .find_map(|seed| {
            let rows = source::open(&spec(&cluster, "thinned", "v", Some(wanted), seed)).unwrap();
            let planned = rows.page_sample().expect("a page sample planned");
            let query = format!(
                "SELECT count(*) FROM thinned TABLESAMPLE SYSTEM ({}) REPEATABLE ({seed})",
                planned.percent
            );
            let first = client.query_one(&query, &[]).unwrap().get::<_, i64>(0) as u64;
            (first > 0).then_some((seed, planned, first))
        })
        .expect("a seed whose page sample holds rows");
    // 0.84 % of the pages, for 3 x 100 of 40,000 rows: about 17 rows of the 2,000 left.
    assert_eq!(planned.estimated_rows, 40_000);
    assert!(first < wanted, "{first} rows in the first sample");

    let passes = || {
        let mut rows = source::open(&spec(&cluster, "thinned", "v", Some(wanted), seed)).unwrap();
        let short: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
        // The first pass ends after the short sample's rows, and says why ...
        assert_eq!(short.len() as u64, first);
        assert!(rows.next().is_none(), "a pass ended is not read on");
        assert_eq!(
            rows.page_sample(),
            Some(planned),
            "the rows so far are the sample's"
        );
        let said = rows.short_sample().expect("the short sample noted");
        assert_eq!(
            said,
            source::ShortSample {
                percent: planned.percent,
                rows: first,
                rows_wanted: wanted,
                estimated_rows: 40_000,
                bytes: short.iter().map(Vec::len).sum::<usize>() as u64,
                bytes_wanted: None,
            }
        );
        // ... and the next begins, with at least the rows wanted, from the table's rows.
        assert!(rows.next_pass());
        let again: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
        assert!(again.len() as u64 >= wanted, "{} rows", again.len());
        assert!(again.iter().all(|row| left.contains(row)));
        if let Some(pages) = rows.page_sample() {
            // Over three times the share, set by the rows the first sample held.
            assert!(pages.percent > 3.0 * planned.percent, "{pages:?}");
            assert!(pages.estimated_rows < 40_000 / 5, "{pages:?}");
        }
        assert!(!rows.next_pass(), "the last pass");
        (short, again, rows.page_sample())
    };
    let (short, again, pages) = passes();
    assert_eq!(
        passes(),
        (short.clone(), again.clone(), pages),
        "the same seed"
    );
    // A caller that does not ask for the next pass keeps the short sample.
    assert_eq!(
        read(&spec(&cluster, "thinned", "v", Some(wanted), seed)),
        short
    );

    // The trainer's sampler starts afresh with the next pass: the rows of the second alone,
    // the same for the same seed.
    let options = pgdict_trainer::SampleOptions {
        max_rows: 80,
        seed,
        ..Default::default()
    };
    assert_eq!(options.rows_wanted(), wanted);
    let sample = || {
        let mut rows = source::open(&spec(&cluster, "thinned", "v", Some(wanted), seed)).unwrap();
        pgdict_trainer::sample_source(&mut rows, &options, "thinned", &NoProgress).unwrap()
    };
    let sampled = sample();
    assert_eq!(sampled.rows_seen, again.len() as u64);
    assert_eq!((sampled.train.len(), sampled.eval.len()), (80, 20));
    assert_eq!(sample(), sampled);

    // The trainer end to end: trained on 80 rows of the second read, and a note on the first.
    let trainer = |json: bool| {
        let output = Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
            .args(["--dry-run", "--force", "--max-rows", "80"])
            .args(["--seed", &seed.to_string()])
            .args(json.then_some("--json"))
            .args(["--pg-source", &cluster.connection_string()])
            .args(["--table", "thinned", "--column", "v"])
            .env_remove("PGDICT_STORE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        String::from_utf8(output.stdout).unwrap()
    };
    let report: Value = serde_json::from_str(&trainer(true)).unwrap();
    let sample = &report["sample"];
    assert_eq!(sample["rows_seen"], again.len(), "{report}");
    assert_eq!(sample["train_rows"], 80, "{report}");
    assert_eq!(sample["table_short_sample"]["rows"], first, "{report}");
    assert_eq!(
        sample["table_short_sample"]["table_rows_estimate"], 40_000,
        "{report}"
    );
    // The trainer bounds the bytes it keeps too (by default 64 MiB and 16 MiB held out), and
    // says what the sample held of them.
    let short_bytes = short.iter().map(Vec::len).sum::<usize>() as u64;
    assert_eq!(sample["table_short_sample"]["bytes"], short_bytes);
    assert_eq!(sample["table_short_sample"]["rows_wanted"], wanted);
    assert_eq!(sample["table_short_sample"]["bytes_wanted"], 80 << 20);
    let text = trainer(false);
    assert!(
        text.contains(&format!(
            "note: the table's statistics (about 40,000 rows) are out of date: 0.84 % of its \
             pages held {} ({} bytes), fewer than the 100 rows and the 83,886,080 bytes wanted; \
             read again ",
            pgdict_trainer::progress::counted(first, "row"),
            pgdict_trainer::progress::thousands(short_bytes),
        )),
        "{text}"
    );

    // The dictionary stored says so in its metadata: the short sample, as the report gives it,
    // and the share of the pages its rows came from (none: the whole column).
    let store = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
        .args(["--force", "--max-rows", "80", "--seed", &seed.to_string()])
        .args(["--pg-source", &cluster.connection_string()])
        .args(["--table", "thinned", "--column", "v"])
        .arg("--store")
        .arg(store.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dict = DirStore::open(store.path()).unwrap().get(1).unwrap();
    let parameters = dict.metadata().parameters;
    assert_eq!(
        parameters["table_short_sample"],
        json!({
            "sample_percent": planned.percent,
            "rows": first,
            "table_rows_estimate": 40_000,
            "bytes": short_bytes,
            "rows_wanted": wanted,
            "bytes_wanted": 80 << 20,
            "rows_counted": first,
            "bytes_counted": short_bytes,
            "longest_row_counted": 16 << 20,
        }),
        "{parameters:?}"
    );
    assert_eq!(
        parameters.get("table_sample_percent"),
        pages.map(|pages| json!(pages.percent)).as_ref(),
        "{parameters:?}"
    );
}

/// A page sample short of the rows wanted that holds the bytes the trainer keeps (its
/// `--max-bytes`, and as much again in proportion for the held-out rows), as large rows make it
/// (statistics as above, rows of 2.1 KB): the sampler would keep no more bytes from a larger
/// read, so the table is not read again (it was, for a sample of rows the sampler then left
/// out). Nor is it when the held-out side may keep none of these rows, or no side may: a larger
/// read would hold rows like them. With a byte bound the sample falls short of, it still is.
#[test]
fn a_page_sample_short_of_rows_but_not_of_the_bytes_kept_is_not_read_again() {
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    stale_table(
        &mut client,
        "bulky",
        40_000,
        "id % 20 = 0",
        "'row ' || g || repeat(' filler', 300)",
    );
    // 80 rows and 16 KiB to train on, 20 rows and 4 KiB held out: 100 rows or 20 KiB, in rows
    // of at most 4 KiB.
    let options = pgdict_trainer::SampleOptions {
        max_rows: 80,
        max_bytes: 16 << 10,
        ..Default::default()
    };
    let wanted = options.rows_wanted();
    let bytes_wanted = options.bytes_wanted();
    assert_eq!((wanted, bytes_wanted.bytes), (100, 20 << 10));
    assert_eq!(bytes_wanted.longest_row, 4 << 10);
    let spec = |seed, bytes_wanted| {
        SourceSpec::Postgres(PgSource {
            conninfo: cluster.connection_string(),
            table: "bulky".into(),
            column: "v".into(),
            rows_wanted: Some(wanted),
            bytes_wanted,
            seed,
        })
    };
    let planned = source::open(&spec(0, None))
        .unwrap()
        .page_sample()
        .expect("a page sample planned");
    assert_eq!(planned.estimated_rows, 40_000);
    // A seed whose first sample holds fewer rows than wanted, but the bytes wanted.
    let (seed, first, first_bytes) = (0..100u64)
        .find_map(|seed| {
            let query = format!(
                "SELECT count(*), coalesce(sum(octet_length(v)), 0)::int8 \
                 FROM bulky TABLESAMPLE SYSTEM ({}) REPEATABLE ({seed})",
                planned.percent
            );
            let row = client.query_one(&query, &[]).unwrap();
            let (rows, bytes) = (row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64);
            (rows < wanted && bytes >= bytes_wanted.bytes).then_some((seed, rows, bytes))
        })
        .expect("a seed whose page sample holds the bytes wanted");

    // The source: one pass, of the sample's rows, and nothing said short.
    let mut rows = source::open(&spec(seed, Some(bytes_wanted))).unwrap();
    let read: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(read.len() as u64, first);
    assert_eq!(read.iter().map(Vec::len).sum::<usize>() as u64, first_bytes);
    assert!(!rows.next_pass(), "read again");
    assert_eq!(rows.short_sample(), None);
    assert_eq!(rows.page_sample(), Some(planned));
    // Without a byte bound the sample is short, and read again.
    let mut rows = source::open(&spec(seed, None)).unwrap();
    assert_eq!(rows.by_ref().count() as u64, first);
    assert!(rows.next_pass(), "not read again without a byte bound");
    assert_eq!(rows.short_sample().map(|short| short.rows), Some(first));
    // Rows the held-out side may not keep (over its 1 KiB of --max-bytes 4K), which fill the
    // training side's 4 KiB, or that no side may keep (over the 1 KiB of --max-bytes 1K): no
    // larger read of rows like these would add to the sample, and none follows (both read
    // again before).
    for max_bytes in [4 << 10, 1 << 10] {
        let bound = pgdict_trainer::SampleOptions {
            max_bytes,
            ..options
        };
        let mut rows = source::open(&spec(seed, Some(bound.bytes_wanted()))).unwrap();
        assert_eq!(rows.by_ref().count() as u64, first, "{max_bytes}");
        assert!(!rows.next_pass(), "read again with --max-bytes {max_bytes}");
        assert_eq!(rows.short_sample(), None);
    }
    // The trainer's sampler, with --max-bytes 4K, draws from that one read: it keeps a row to
    // train on, and none held out, as it would from any read.
    let bound = pgdict_trainer::SampleOptions {
        max_bytes: 4 << 10,
        seed,
        ..options
    };
    let mut rows = source::open(&spec(seed, Some(bound.bytes_wanted()))).unwrap();
    let sample = pgdict_trainer::sample_source(&mut rows, &bound, "bulky", &NoProgress).unwrap();
    assert_eq!(sample.rows_seen, first);
    assert_eq!((sample.train.len(), sample.eval.len()), (1, 0));
    assert!(sample.rows_too_long > 0);

    // The trainer: its sample from that one read, by --max-bytes; by default (64 MiB, which
    // the rows fall far short of), from the read again. The report and the stored
    // dictionary's metadata say which.
    let store = tempfile::tempdir().unwrap();
    let trainer = |max_bytes: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
            .args(["--force", "--json", "--max-rows", "80"])
            .args(["--max-bytes", max_bytes, "--seed", &seed.to_string()])
            .args(["--pg-source", &cluster.connection_string()])
            .args(["--table", "bulky", "--column", "v"])
            .arg("--store")
            .arg(store.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let id = report["dict_id"].as_u64().unwrap() as u32;
        let dict = DirStore::open(store.path()).unwrap().get(id).unwrap();
        (report["sample"].clone(), dict.metadata().parameters)
    };
    let (sample, parameters) = trainer("16K");
    assert_eq!(sample["rows_seen"], first, "{sample}");
    assert_eq!(sample["bytes_seen"], first_bytes, "{sample}");
    assert_eq!(sample["table_short_sample"], Value::Null, "{sample}");
    assert_eq!(sample["table_sample_percent"], planned.percent, "{sample}");
    assert!(
        sample["train_bytes"].as_u64().unwrap() <= 16 << 10,
        "{sample}"
    );
    assert_eq!(parameters["table_sample_percent"], planned.percent);
    assert_eq!(parameters.get("table_short_sample"), None, "{parameters:?}");
    let (sample, parameters) = trainer("64M");
    assert!(sample["rows_seen"].as_u64().unwrap() >= wanted, "{sample}");
    assert_eq!(sample["table_short_sample"]["rows"], first, "{sample}");
    assert_eq!(
        parameters["table_short_sample"], sample["table_short_sample"],
        "{parameters:?}"
    );
    assert_eq!(
        parameters.get("table_sample_percent"),
        Some(&sample["table_sample_percent"]).filter(|share| !share.is_null()),
        "{parameters:?}"
    );
}

/// `share` rounded up to a power of 2^(1/4), as the source rounds a page sample's share.
fn quarter_octave_up(share: f64) -> f64 {
    ((share.log2() * 4.0 - 1e-9).ceil() / 4.0).exp2()
}

/// The share of the pages to read for three times `wanted` of what the table holds (rows or
/// bytes), as `in_sample` of it in `percent` % of its pages says; `None`, the whole column, when
/// that is a third of the table or more.
fn share_for(wanted: u64, in_sample: u64, percent: f64) -> Option<f64> {
    let in_table = in_sample as f64 * 100.0 / percent;
    (in_table > 9.0 * wanted as f64)
        .then(|| quarter_octave_up(300.0 * wanted as f64 / in_table).min(100.0 / 3.0))
}

/// A page sample short of the rows wanted and of the bytes the trainer keeps, as large rows
/// make it (statistics as above, rows of 2.1 KB): it is read again, by a share set by the
/// bytes it missed, which reads fewer pages than one set by the rows it missed (it was set by
/// the rows alone).
#[test]
fn a_page_sample_short_of_rows_and_bytes_is_read_again_by_the_bytes_missing() {
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    stale_table(
        &mut client,
        "heavy",
        40_000,
        "id % 20 = 0",
        "'row ' || g || repeat(' filler', 300)",
    );
    // 80 rows and 64 KiB to train on, 20 rows and 16 KiB held out: 100 rows or 80 KiB.
    let options = pgdict_trainer::SampleOptions {
        max_rows: 80,
        max_bytes: 64 << 10,
        ..Default::default()
    };
    let (wanted, bytes_wanted) = (options.rows_wanted(), options.bytes_wanted());
    assert_eq!((wanted, bytes_wanted.bytes), (100, 80 << 10));
    let spec = |seed| {
        SourceSpec::Postgres(PgSource {
            conninfo: cluster.connection_string(),
            table: "heavy".into(),
            column: "v".into(),
            rows_wanted: Some(wanted),
            bytes_wanted: Some(bytes_wanted),
            seed,
        })
    };
    let planned = source::open(&spec(0))
        .unwrap()
        .page_sample()
        .expect("a page sample planned");
    let mut sampled = |percent: f64, seed: u64| -> (u64, u64) {
        let query = format!(
            "SELECT count(*), coalesce(sum(octet_length(v)), 0)::int8 \
             FROM heavy TABLESAMPLE SYSTEM ({percent}) REPEATABLE ({seed})"
        );
        let row = client.query_one(&query, &[]).unwrap();
        (row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64)
    };
    // A seed whose first sample holds some rows, but fewer rows and bytes than wanted, and for
    // which the bytes call for fewer pages than the rows.
    let (seed, first, first_bytes, by_bytes) = (0..100u64)
        .find_map(|seed| {
            let (rows, bytes) = sampled(planned.percent, seed);
            let short = rows > 0 && rows < wanted && bytes < bytes_wanted.bytes;
            let by_rows = share_for(wanted, rows, planned.percent).unwrap_or(100.0);
            let by_bytes = share_for(bytes_wanted.bytes, bytes, planned.percent)?;
            // ... and whose read again is enough (not short in its turn).
            let (rows_again, bytes_again) = sampled(by_bytes, seed);
            let enough = rows_again >= wanted || bytes_again >= bytes_wanted.bytes;
            (short && by_bytes < by_rows && enough).then_some((seed, rows, bytes, by_bytes))
        })
        .expect("a seed whose page sample is short of rows and bytes");

    let mut rows = source::open(&spec(seed)).unwrap();
    assert_eq!(rows.by_ref().count() as u64, first);
    assert!(rows.next_pass(), "not read again");
    let short = rows.short_sample().expect("the short sample noted");
    assert_eq!((short.rows, short.percent), (first, planned.percent));
    // It says what it held of the bytes too: every row counted (none over 16 KiB).
    assert_eq!(short.bytes, first_bytes);
    assert_eq!(
        short.bytes_wanted,
        Some(source::ShortOfBytes {
            bytes: 80 << 10,
            longest_row: 16 << 10,
            rows_counted: first,
            bytes_counted: first_bytes,
        })
    );
    // The read again: the share the bytes call for, and the rows of those pages.
    let again = rows.page_sample().expect("a page sample again");
    assert_eq!(again.percent, by_bytes, "{first} rows, {first_bytes} bytes");
    assert_eq!(
        again.estimated_rows,
        (first as f64 * 100.0 / planned.percent) as u64
    );
    let read: Vec<Vec<u8>> = rows.by_ref().collect::<Result<_, _>>().unwrap();
    let expected = sampled(by_bytes, seed);
    let read_bytes = read.iter().map(Vec::len).sum::<usize>() as u64;
    assert_eq!((read.len() as u64, read_bytes), expected);
    assert!(!rows.next_pass(), "the last pass");
    // The trainer samples that read.
    let sample = pgdict_trainer::sample_source(
        &mut source::open(&spec(seed)).unwrap(),
        &pgdict_trainer::SampleOptions { seed, ..options },
        "heavy",
        &NoProgress,
    )
    .unwrap();
    assert_eq!((sample.rows_seen, sample.bytes_seen), expected);
}

/// On a hot standby: rows are read from its replica of a table (a read-only transaction, page
/// sample included), and a `--pg-store` there is refused before any row is read or any
/// dictionary trained, as a standby cannot store it (it used to train, then fail).
#[test]
fn a_standby_is_a_source_but_never_a_store() {
    let primary = PgCluster::start();
    let (_, texts) = corpus_rows_and_texts("json_geonames_cities.jsonl");
    let mut client = primary.client();
    client
        .batch_execute("CREATE TABLE cities (doc text)")
        .unwrap();
    for _ in 0..10 {
        client
            .execute("INSERT INTO cities SELECT unnest($1::text[])", &[&texts])
            .unwrap();
    }
    client.batch_execute("ANALYZE cities").unwrap();
    // The store's tables exist only once a primary has opened it.
    PgStore::connect(&primary.connection_string()).unwrap();
    let standby = primary.start_standby();
    primary.wait_for_replay(&standby);

    let train = |store: &PgCluster, option: &str| {
        Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"))
            .args([option, "--pg-source", &standby.connection_string()])
            .args(["--table", "cities", "--column", "doc", "--codec", "pglz"])
            .args(["--pg-store", &store.connection_string()])
            .env_remove("PGDICT_STORE")
            .output()
            .unwrap()
    };
    // The text report (the default seed: no option changes it) says what was read before
    // training, and said it before the store was refused.
    let refused = train(&standby, "--seed=0");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is read-only: the server is a standby"),
        "{stderr}"
    );
    assert!(
        refused.stdout.is_empty(),
        "it read rows first: {}",
        String::from_utf8_lossy(&refused.stdout)
    );

    let stored = train(&primary, "--json");
    let stderr = String::from_utf8_lossy(&stored.stderr);
    assert_eq!(stored.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&stored.stdout).unwrap();
    assert_eq!(report["dict_id"], 1);
    // Ten copies of the set in the table: a page sample was read, from the standby.
    assert!(
        report["sample"]["table_sample_percent"].as_f64().unwrap() < 100.0,
        "{report}"
    );
    let dict = PgStore::connect(&primary.connection_string())
        .unwrap()
        .get(1)
        .unwrap();
    assert!(dict
        .metadata()
        .source
        .unwrap()
        .ends_with(&format!("at 127.0.0.1:{}", standby.port())));
}

/// Ctrl-C while the trainer waits on a slow read: the query is cancelled on the server, not
/// left running until it next writes to a closed socket (see
/// `PgCluster::assert_interrupt_cancels_read`; `pgdict compress` is checked in
/// cli/tests/pg_store.rs).
#[test]
fn an_interrupted_read_cancels_its_query() {
    let cluster = PgCluster::start();
    let mut trainer = Command::new(env!("CARGO_BIN_EXE_pgdict-trainer"));
    trainer.arg("--dry-run").env_remove("PGDICT_STORE");
    cluster.assert_interrupt_cancels_read(trainer);
}
