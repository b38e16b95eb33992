//! The PostgreSQL store (`pgdict::dict::PgStore`) on real PostgreSQL 15 servers (the cluster
//! harness in tests/support/cluster.rs), and the standby test:
//!
//! - add, get, list, retire; a dictionary read back from the table (by a store with no cache)
//!   is the one added, byte for byte in file form;
//! - the database itself refuses UPDATE, DELETE and TRUNCATE of dictionaries and retirements,
//!   a row whose checksum does not match its content, and an id used twice;
//! - what a superuser or the owner does to the tables is caught: the triggers hold in replica
//!   mode, relabelled rows read as damaged, rows past dropped CHECK constraints are named,
//!   tables that are not the store's (a trigger disabled or calling another function, another
//!   schema version, other columns, other owners) are refused when opened, and no function on
//!   the search path stands in for PostgreSQL's; a retired dictionary a role may not retire
//!   never goes in active; read-only transactions are the store's read-only error;
//! - 8 threads, each with its own connection and its own first open of a store that does not
//!   exist yet, adding 5 dictionaries each: 40 distinct ids, all readable;
//! - sync from the PostgreSQL store into a directory store, and from a directory store into
//!   the PostgreSQL store of a new database (under the same ids), and the refusal of a
//!   conflict either way; what another writer put there meanwhile is found, and retired if
//!   the source has; adds after gaps in the ids, and after the last id;
//! - the standby test: a primary and a streaming hot standby; dictionaries added on the
//!   primary, then datums compressed with them inserted into a bytea column; once the standby
//!   has replayed, every datum read there decodes to its original bytes through a store opened
//!   on the standby; a datum naming an id the standby lacks gives the error naming the id, the
//!   store and `sync`; the standby store never writes (opening creates nothing, writes are
//!   refused); a dictionary added later resolves once replayed (no negative caching); a store
//!   of another schema version is refused there too.
//!
//! The datums are rows of the shared corpus (`$PGDICT_CORPUS/rows`, else `../shared/corpus/rows`);
//! a missing corpus fails the test.

#![cfg(feature = "pg-store")]

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use pgdict::datum::{self, Codec, DatumEncoder, DatumError, Form, PreparedDictionary};
use pgdict::dict::{
    self, describe_pg_error, CodecSet, Destination, Dictionary, DirStore, FormatError, Gain,
    Inserted, Metadata, PgStore, Repaired, Store, StoreEntry, StoreError, SyncReport,
};
use support::{corpus, PgCluster};

fn metadata(source: &str) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.source = Some(source.into());
    metadata.trainer = Some("tests/store_pg.rs".into());
    metadata.sample_rows = Some(500);
    metadata.parameters.insert("size".into(), 4095.into());
    metadata.gains.push(Gain {
        codec: Codec::Pglz,
        rows: 500,
        raw_bytes: 100_000,
        plain_bytes: 99_000,
        dict_bytes: 30_000,
    });
    metadata
}

fn content(tag: &str, index: usize) -> Vec<u8> {
    let mut bytes = format!("{{\"tag\": \"{tag}\", \"index\": {index}, \"pad\": \"").into_bytes();
    bytes.extend(std::iter::repeat_n(b'a' + (index % 26) as u8, 300));
    bytes.extend_from_slice(b"\"}");
    bytes
}

/// The rows of a shared-corpus row file, read with pgdict's own reader.
fn corpus_rows(file: &str) -> Vec<Vec<u8>> {
    let path = corpus::dir().join("rows").join(file);
    let rows = pgdict::rows::read_row_file(&path)
        .unwrap_or_else(|e| panic!("cannot read corpus rows {}: {e}", path.display()));
    assert!(
        rows.len() >= 1000,
        "{} has only {} rows",
        path.display(),
        rows.len()
    );
    rows
}

/// A dictionary of `size` bytes: the end of the even-numbered rows, concatenated.
fn train(rows: &[Vec<u8>], size: usize) -> Vec<u8> {
    let joined: Vec<u8> = rows.iter().step_by(2).flatten().copied().collect();
    joined[joined.len().saturating_sub(size)..].to_vec()
}

/// The message of a failed statement, with SQLSTATE.
fn sql_error(client: &mut postgres::Client, sql: &str) -> String {
    match client.batch_execute(sql) {
        Ok(()) => panic!("the server accepted: {sql}"),
        Err(e) => describe_pg_error(&e),
    }
}

// ---------------------------------------------------------------------------------------------
// One primary

#[test]
fn add_get_list_retire_and_immutability_in_the_database() {
    let cluster = PgCluster::start();
    let store = PgStore::connect(&cluster.connection_string()).unwrap();
    assert!(!store.opened_on_standby());
    assert!(store
        .describe()
        .contains(&format!("127.0.0.1:{}", cluster.port())));
    assert_eq!(store.list().unwrap(), vec![]);

    let mut added = Vec::new();
    for index in 0..3 {
        let next_id = store.next_id().unwrap();
        let dict = store
            .add(CodecSet::ALL, &content("a", index), metadata("a"))
            .unwrap();
        assert_eq!(dict.id(), index as u32 + 1);
        assert_eq!(dict.id(), next_id);
        added.push(dict);
    }
    // One byte with no metadata is a dictionary too; no content is none.
    assert!(matches!(
        store.add(CodecSet::only(Codec::Lz4), b"", Metadata::new()),
        Err(StoreError::Invalid(FormatError::EmptyContent))
    ));
    let one_byte = store
        .add(CodecSet::only(Codec::Lz4), b"x", Metadata::new())
        .unwrap();
    assert_eq!(one_byte.id(), 4);
    added.push(one_byte);
    // A second store on another connection has no cache: it reads the rows.
    let reader = PgStore::connect(&cluster.connection_string()).unwrap();
    for dict in &added {
        let loaded = reader.get(dict.id()).unwrap();
        assert_eq!(*loaded, **dict);
        assert_eq!(loaded.to_bytes(), dict.to_bytes());
    }
    assert!(matches!(
        reader.get(99),
        Err(StoreError::NotFound { id: 99, .. })
    ));

    assert!(!reader.is_retired(2).unwrap());
    assert!(store.retire(2).unwrap());
    assert!(!store.retire(2).unwrap());
    assert!(reader.is_retired(2).unwrap());
    assert!(!reader.is_retired(1).unwrap() && !reader.is_retired(99).unwrap());
    assert!(matches!(
        store.retire(99),
        Err(StoreError::NotFound { id: 99, .. })
    ));
    assert_eq!(
        reader.list().unwrap(),
        [1, 2, 3, 4]
            .map(|id| StoreEntry {
                id,
                retired: id == 2
            })
            .to_vec()
    );
    assert_eq!(reader.active(Codec::Pglz).unwrap().unwrap().id(), 3);
    assert_eq!(reader.active(Codec::Lz4).unwrap().unwrap().id(), 4);
    // The newest is retired: its id is still never reused.
    store.retire(4).unwrap();
    assert_eq!(reader.next_id().unwrap(), 5);
    let next = store
        .add(CodecSet::ALL, &content("a", 4), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 5);

    // The database refuses every change to a stored dictionary or a retirement.
    let mut client = cluster.client();
    let refused = [
        "UPDATE pgdict.dictionaries SET content = 'x'::bytea WHERE id = 1",
        "UPDATE pgdict.dictionaries SET id = 100 WHERE id = 1",
        "UPDATE pgdict.dictionaries SET metadata = NULL WHERE id = 1",
        "DELETE FROM pgdict.dictionaries WHERE id = 3",
        "TRUNCATE pgdict.dictionaries CASCADE",
        "DELETE FROM pgdict.retired WHERE id = 2",
        "UPDATE pgdict.retired SET id = 1 WHERE id = 2",
        "TRUNCATE pgdict.retired",
    ];
    for sql in refused {
        let message = sql_error(&mut client, sql);
        assert!(message.contains("refused"), "{sql}: {message}");
        assert!(message.contains("immutable"), "{sql}: {message}");
    }
    // Rows no dictionary file could be, each with what the server says refusing it.
    let invalid_rows = [
        (
            "a content checksum that is not the content's",
            "INSERT INTO pgdict.dictionaries \
             (id, codecs, created_micros, content, content_sha256, file_sha256) \
             VALUES (50, 1, 0, 'abc'::bytea, sha256('abd'::bytea), sha256('x'::bytea))",
            "check constraint",
        ),
        (
            "metadata over the file format's 64 KiB",
            "INSERT INTO pgdict.dictionaries \
             (id, codecs, created_micros, metadata, content, content_sha256, file_sha256) \
             VALUES (50, 1, 0, json_build_object('a', repeat('x', 65536)), 'abc'::bytea, \
                     sha256('abc'::bytea), sha256('x'::bytea))",
            "dictionaries_metadata_check",
        ),
        (
            "no content",
            "INSERT INTO pgdict.dictionaries \
             (id, codecs, created_micros, content, content_sha256, file_sha256) \
             VALUES (50, 1, 0, ''::bytea, sha256(''::bytea), sha256('x'::bytea))",
            "dictionaries_content_check",
        ),
        (
            "an id no dictionary can have",
            "INSERT INTO pgdict.dictionaries \
             (id, codecs, created_micros, content, content_sha256, file_sha256) \
             VALUES (0, 1, 0, 'abc'::bytea, sha256('abc'::bytea), sha256('x'::bytea))",
            "dictionaries_id_check",
        ),
        (
            "an id taken",
            "INSERT INTO pgdict.dictionaries \
             (id, codecs, created_micros, content, content_sha256, file_sha256) \
             VALUES (1, 1, 0, 'abc'::bytea, sha256('abc'::bytea), sha256('x'::bytea))",
            "23505",
        ),
    ];
    for (what, sql, refusal) in invalid_rows {
        let message = sql_error(&mut client, sql);
        assert!(message.contains(refusal), "{what}: {message}");
    }
    // Nothing changed.
    let fresh = PgStore::connect(&cluster.connection_string()).unwrap();
    for dict in &added {
        assert_eq!(*fresh.get(dict.id()).unwrap(), **dict);
    }
    assert_eq!(fresh.list().unwrap().len(), 5);
    // The human-readable creation time is the exact one, to the microsecond.
    let row = client
        .query_one(
            "SELECT (extract(epoch FROM created) * 1000000)::bigint = created_micros \
             FROM pgdict.dictionaries WHERE id = 1",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0));
}

/// What a superuser or the tables' owner can do to the store is caught where it can be: the
/// triggers hold under `session_replication_role = replica`; a row given another id reads as
/// damaged; tables that are not the store's (a disabled trigger, another schema version, a
/// hand-made table, a schema another role owns or made) are refused by name when opened; and
/// functions a role puts before PostgreSQL's on the search path are not called.
#[test]
fn what_is_done_to_the_tables_is_caught() {
    let cluster = PgCluster::start();
    let mut admin = cluster.client();
    let mut database = |name: &str| -> (String, postgres::Client) {
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let conninfo = format!("{} dbname={name}", cluster.connection_string());
        let client = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
        (conninfo, client)
    };
    let open_error = |conninfo: &str| match PgStore::connect(conninfo) {
        Ok(_) => panic!("{conninfo}: the store opened"),
        Err(e) => e.to_string(),
    };

    // Replica mode silences ordinary triggers, not the store's.
    let (conninfo, mut client) = database("replica_role");
    let store = PgStore::connect(&conninfo).unwrap();
    for index in 0..2 {
        store
            .add(CodecSet::ALL, &content("r", index), Metadata::new())
            .unwrap();
    }
    // A role that does not own the tables: reading needs SELECT; adding, INSERT and a lock
    // that needs UPDATE (which the triggers refuse as they refuse the owner's).
    client
        .batch_execute(
            "CREATE ROLE writer LOGIN;
             GRANT USAGE ON SCHEMA pgdict TO writer;
             GRANT SELECT, INSERT ON pgdict.dictionaries, pgdict.retired TO writer",
        )
        .unwrap();
    let writer = PgStore::connect(&format!("{conninfo} user=writer")).unwrap();
    assert_eq!(writer.get(1).unwrap().id(), 1);
    let err = writer
        .add(CodecSet::ALL, &content("w", 0), Metadata::new())
        .unwrap_err();
    assert!(err.to_string().contains("42501"), "{err}");
    client
        .batch_execute("GRANT UPDATE ON pgdict.dictionaries TO writer")
        .unwrap();
    let added = writer
        .add(CodecSet::ALL, &content("w", 0), Metadata::new())
        .unwrap();
    assert_eq!(added.id(), 3);
    assert!(writer.retire(3).unwrap());
    // A role that may add but not retire: a retired dictionary it is given goes in retired,
    // or not at all (one transaction), never active.
    client
        .batch_execute(
            "CREATE ROLE copier LOGIN;
             GRANT USAGE ON SCHEMA pgdict TO copier;
             GRANT SELECT, INSERT, UPDATE ON pgdict.dictionaries TO copier;
             GRANT SELECT ON pgdict.retired TO copier",
        )
        .unwrap();
    let copier = PgStore::connect(&format!("{conninfo} user=copier")).unwrap();
    let nine = Dictionary::new(9, CodecSet::ALL, 0, Metadata::new(), &content("c", 9)).unwrap();
    let err = copier.insert_retired(&nine).unwrap_err();
    assert!(err.to_string().contains("42501"), "{err}");
    assert!(matches!(
        store.get(9),
        Err(StoreError::NotFound { id: 9, .. })
    ));
    let message = sql_error(
        &mut client,
        "SET session_replication_role = replica; DELETE FROM pgdict.dictionaries WHERE id = 3",
    );
    assert!(message.contains("immutable"), "{message}");
    client
        .batch_execute("SET session_replication_role = DEFAULT")
        .unwrap();

    // Rows relabelled (triggers disabled by the owner, ids swapped, triggers back): each
    // row reads as damaged, not as the other dictionary.
    client
        .batch_execute(PgCluster::SWAP_DICTIONARIES_1_AND_2)
        .unwrap();
    let fresh = PgStore::connect(&conninfo).unwrap();
    for id in [1, 2] {
        let err = fresh.get(id).unwrap_err();
        assert!(matches!(err, StoreError::RowChanged { .. }), "{err:?}");
        assert!(err.to_string().contains("given another id"), "{err}");
    }

    // A trigger disabled (or enabled only for origin sessions, as before schema version 2).
    client
        .batch_execute("ALTER TABLE pgdict.retired ENABLE TRIGGER refuse_change")
        .unwrap();
    let message = open_error(&conninfo);
    assert!(message.contains("3 of the 4 triggers"), "{message}");
    client
        .batch_execute(
            "ALTER TABLE pgdict.retired ENABLE ALWAYS TRIGGER refuse_change;
             COMMENT ON TABLE pgdict.dictionaries IS 'pgdict dictionary store, schema version 1'",
        )
        .unwrap();
    let message = open_error(&conninfo);
    assert!(message.contains("schema version 1"), "{message}");
    // A trigger of the store's name that calls another function than the store's (one that
    // lets every change through), in another schema or in pgdict.
    client
        .batch_execute(
            "COMMENT ON TABLE pgdict.dictionaries IS 'pgdict dictionary store, schema version 2'",
        )
        .unwrap();
    PgStore::connect(&conninfo).unwrap();
    for function in ["public.refuse_change", "pgdict.allow_change"] {
        client
            .batch_execute(&format!(
                "CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql
                     AS 'BEGIN RETURN coalesce(NEW, OLD); END';
                 DROP TRIGGER refuse_change ON pgdict.retired;
                 CREATE TRIGGER refuse_change BEFORE UPDATE OR DELETE ON pgdict.retired
                     FOR EACH ROW EXECUTE FUNCTION {function}();
                 ALTER TABLE pgdict.retired ENABLE ALWAYS TRIGGER refuse_change"
            ))
            .unwrap();
        let message = open_error(&conninfo);
        assert!(
            message.contains("3 of the 4 triggers"),
            "{function}: {message}"
        );
    }
    // The retirement table with a column more.
    client
        .batch_execute(
            "DROP TRIGGER refuse_change ON pgdict.retired;
             CREATE TRIGGER refuse_change BEFORE UPDATE OR DELETE ON pgdict.retired
                 FOR EACH ROW EXECUTE FUNCTION pgdict.refuse_change();
             ALTER TABLE pgdict.retired ENABLE ALWAYS TRIGGER refuse_change;
             ALTER TABLE pgdict.retired ADD COLUMN note text",
        )
        .unwrap();
    let message = open_error(&conninfo);
    assert!(
        message.contains("pgdict.retired has the columns (id bigint, retired_at"),
        "{message}"
    );

    // A database whose transactions are read-only (default_transaction_read_only, as on a
    // primary being demoted): writes are refused as the store's own read-only error.
    let (conninfo, mut client) = database("read_only");
    PgStore::connect(&conninfo).unwrap();
    client
        .batch_execute("ALTER DATABASE read_only SET default_transaction_read_only = on")
        .unwrap();
    let store = PgStore::connect(&conninfo).unwrap();
    let err = store
        .add(CodecSet::ALL, &content("o", 0), Metadata::new())
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    assert!(err.to_string().contains("25006"), "{err}");

    // Tables made by hand: opened as they were, they would be trusted.
    let (conninfo, mut client) = database("hand_made");
    client
        .batch_execute(
            "CREATE SCHEMA pgdict;
             CREATE TABLE pgdict.dictionaries (id integer PRIMARY KEY, codecs integer,
                 created_micros bigint, metadata json, content bytea, content_sha256 bytea);
             CREATE TABLE pgdict.retired (id bigint PRIMARY KEY, retired_at timestamptz)",
        )
        .unwrap();
    let message = open_error(&conninfo);
    assert!(message.contains("not a pgdict store"), "{message}");
    client
        .batch_execute(
            "COMMENT ON TABLE pgdict.dictionaries IS 'pgdict dictionary store, schema version 2'",
        )
        .unwrap();
    let message = open_error(&conninfo);
    assert!(
        message.contains("has the columns (id integer, codecs integer"),
        "{message}"
    );

    // A schema that exists without the tables, or that another role owns, is not taken over.
    let (conninfo, mut client) = database("other_schema");
    client.batch_execute("CREATE SCHEMA pgdict").unwrap();
    let message = open_error(&conninfo);
    assert!(
        message.contains("schema pgdict exists without"),
        "{message}"
    );
    client
        .batch_execute(
            "DROP SCHEMA pgdict;
             CREATE ROLE mallory LOGIN;
             CREATE ROLE app LOGIN;
             GRANT CREATE ON DATABASE other_schema TO app",
        )
        .unwrap();
    let app = format!("{conninfo} user=app");
    PgStore::connect(&app).unwrap();
    client
        .batch_execute("ALTER SCHEMA pgdict OWNER TO mallory")
        .unwrap();
    let message = open_error(&app);
    assert!(message.contains("different owners"), "{message}");
    client
        .batch_execute(
            "ALTER SCHEMA pgdict OWNER TO app;
             ALTER TABLE pgdict.retired OWNER TO mallory",
        )
        .unwrap();
    let message = open_error(&app);
    assert!(message.contains("different owners"), "{message}");

    // Rows the table's CHECK constraints would refuse, put there by its owner once they are
    // dropped: a content checksum that is not the content's reads as that damage, and an id
    // no dictionary can have stops the listing, by name.
    let (conninfo, mut client) = database("unchecked");
    let store = PgStore::connect(&conninfo).unwrap();
    let row = |id: i64, content: &str| {
        format!(
            "INSERT INTO pgdict.dictionaries \
             (id, codecs, created_micros, content, content_sha256, file_sha256) \
             VALUES ({id}, 1, 0, 'abc'::bytea, sha256('{content}'::bytea), sha256('x'::bytea))"
        )
    };
    client
        .batch_execute(&format!(
            "ALTER TABLE pgdict.dictionaries DROP CONSTRAINT dictionaries_id_check;
             ALTER TABLE pgdict.dictionaries DROP CONSTRAINT dictionaries_check;
             {}",
            row(5, "abd")
        ))
        .unwrap();
    let err = store.get(5).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Damaged {
                error: FormatError::ContentChecksumMismatch { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        store.list().unwrap(),
        [StoreEntry {
            id: 5,
            retired: false
        }]
    );
    for id in [0, 1 << 32] {
        client.batch_execute(&row(id, "abc")).unwrap();
        let message = store.list().unwrap_err().to_string();
        assert!(
            message.contains(&format!("the row id = {id} is outside")),
            "{message}"
        );
        client
            .batch_execute(&format!(
                "ALTER TABLE pgdict.dictionaries DISABLE TRIGGER refuse_change;
                 DELETE FROM pgdict.dictionaries WHERE id = {id};
                 ALTER TABLE pgdict.dictionaries ENABLE ALWAYS TRIGGER refuse_change"
            ))
            .unwrap();
    }

    // A function that would stand in for PostgreSQL's, first on the database's search path:
    // not called (the store took itself for a standby, and refused to write).
    let (conninfo, mut client) = database("search_path");
    client
        .batch_execute(
            "CREATE FUNCTION public.pg_is_in_recovery() RETURNS boolean LANGUAGE sql
                 AS 'SELECT true';
             ALTER DATABASE search_path SET search_path = public, pg_catalog",
        )
        .unwrap();
    let store = PgStore::connect(&conninfo).unwrap();
    assert!(!store.opened_on_standby());
    let dict = store
        .add(CodecSet::ALL, &content("s", 0), Metadata::new())
        .unwrap();
    assert_eq!(dict.id(), 1);
}

#[test]
fn concurrent_writers_get_distinct_ids() {
    const THREADS: usize = 8;
    const ADDS: usize = 5;
    let cluster = PgCluster::start();
    let conninfo = cluster.connection_string();
    // No store yet: the threads' first opens race to create the schema as well.
    let barrier = Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let conninfo = conninfo.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let store = PgStore::connect(&conninfo).unwrap();
                (0..ADDS)
                    .map(|i| {
                        let tag = format!("t{t}");
                        let dict = store
                            .add(CodecSet::ALL, &content(&tag, i), metadata(&tag))
                            .unwrap();
                        (dict.id(), tag, i)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let added: Vec<(u32, String, usize)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let ids: BTreeSet<u32> = added.iter().map(|a| a.0).collect();
    assert_eq!(ids.len(), THREADS * ADDS, "two writers got one id");
    assert_eq!(ids, (1..=(THREADS * ADDS) as u32).collect());
    let reader = PgStore::connect(&conninfo).unwrap();
    assert_eq!(reader.list().unwrap().len(), THREADS * ADDS);
    for (id, tag, index) in &added {
        assert_eq!(
            reader.get(*id).unwrap().content(),
            &content(tag, *index)[..]
        );
    }
}

#[test]
fn sync_between_the_pg_store_and_a_directory_store() {
    let cluster = PgCluster::start();
    let store = PgStore::connect(&cluster.connection_string()).unwrap();
    let rows = corpus_rows("json_user_agents.jsonl");
    let dict_bytes = train(&rows, 4095);
    let first = store
        .add(CodecSet::ALL, &dict_bytes, metadata("user agents"))
        .unwrap();
    for index in 0..2 {
        store
            .add(CodecSet::ALL, &content("p", index), Metadata::new())
            .unwrap();
    }
    store.retire(2).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let local = DirStore::open(dir.path()).unwrap();
    let report = dict::sync(&store, &local).unwrap();
    assert_eq!(report.copied, vec![1, 2, 3]);
    assert_eq!(report.retired, vec![2]);
    for id in 1..=3 {
        let file = fs::read(local.file_path(id)).unwrap();
        assert_eq!(file, store.get(id).unwrap().to_bytes(), "id {id}");
    }
    assert!(local.is_retired(2).unwrap());
    // Datums compressed against the database's dictionary decode through the directory.
    let prepared = store.prepared(first.id()).unwrap();
    let mut encoder = DatumEncoder::new();
    let mut extended = 0;
    for row in rows.iter().skip(1).step_by(2).take(200) {
        let datum = encoder.encode(row, Codec::Pglz, Some(&prepared)).unwrap();
        extended += usize::from(matches!(
            datum::parse_header(&datum).unwrap().form,
            Form::Extended { .. }
        ));
        assert_eq!(&datum::decode(&datum, &local).unwrap(), row);
    }
    assert!(extended > 150, "only {extended} datums used the dictionary");
    // Again: nothing to do.
    let report = dict::sync(&store, &local).unwrap();
    assert!(report.copied.is_empty() && report.retired.is_empty());
    assert_eq!(report.present, vec![1, 2, 3]);

    // A directory store that made its own dictionary 2: refused, nothing changed.
    let other_dir = tempfile::tempdir().unwrap();
    let other = DirStore::open(other_dir.path()).unwrap();
    other.insert(&store.get(1).unwrap()).unwrap();
    other
        .add(CodecSet::ALL, b"a different dictionary 2", Metadata::new())
        .unwrap();
    let names_before: Vec<_> = fs::read_dir(other_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let err = dict::sync(&store, &other).unwrap_err();
    match &err {
        StoreError::Conflict {
            conflicts, from, ..
        } => {
            assert_eq!(conflicts.iter().map(|c| c.id).collect::<Vec<_>>(), [2]);
            assert!(from.contains("PostgreSQL store"), "{from}");
        }
        other => panic!("expected a conflict: {other:?}"),
    }
    let names_after: Vec<_> = fs::read_dir(other_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names_after, names_before);
    assert!(!other.file_path(3).exists());

    // The other way: a directory store's dictionaries moved into the store of a new database,
    // under their own ids (so that datums written with them decode there), retirements too.
    let source_dir = tempfile::tempdir().unwrap();
    let source = DirStore::open(source_dir.path()).unwrap();
    source.insert(&store.get(1).unwrap()).unwrap();
    for index in 0..2 {
        source
            .add(CodecSet::ALL, &content("d", index), metadata("dir"))
            .unwrap();
    }
    source.retire(3).unwrap();
    cluster
        .client()
        .batch_execute("CREATE DATABASE moved")
        .unwrap();
    let moved_conninfo = format!("{} dbname=moved", cluster.connection_string());
    let moved = PgStore::connect(&moved_conninfo).unwrap();
    let report = dict::sync(&source, &moved).unwrap();
    assert_eq!(report.copied, vec![1, 2, 3]);
    assert_eq!(report.retired, vec![3]);
    // Read back by a store with no cache: the same dictionaries, byte for byte in file form.
    let fresh = PgStore::connect(&moved_conninfo).unwrap();
    for id in 1..=3 {
        assert_eq!(
            fresh.get(id).unwrap().to_bytes(),
            source.get(id).unwrap().to_bytes(),
            "id {id}"
        );
    }
    assert!(fresh.is_retired(3).unwrap());
    let report = dict::sync(&source, &moved).unwrap();
    assert!(report.copied.is_empty() && report.retired.is_empty());
    assert_eq!(report.present, vec![1, 2, 3]);
    // The next add takes the id after them, and after the highest one when ids have gaps (a
    // sync can leave them).
    let added = moved
        .add(CodecSet::ALL, &content("m", 0), Metadata::new())
        .unwrap();
    assert_eq!(added.id(), 4);
    let ten = source.get(1).unwrap().with_id(10).unwrap();
    assert_eq!(moved.insert(&ten).unwrap(), dict::Inserted::Added);
    let added = moved
        .add(CodecSet::ALL, &content("m", 1), Metadata::new())
        .unwrap();
    assert_eq!(added.id(), 11);
    // Once the last id is used, adding says so rather than wrapping round to id 0.
    let last = source.get(1).unwrap().with_id(u32::MAX).unwrap();
    assert_eq!(moved.insert(&last).unwrap(), dict::Inserted::Added);
    assert!(matches!(
        moved.next_id(),
        Err(StoreError::IdsExhausted { .. })
    ));
    let err = moved
        .add(CodecSet::ALL, &content("m", 2), Metadata::new())
        .unwrap_err();
    assert!(matches!(err, StoreError::IdsExhausted { .. }), "{err:?}");
    assert_eq!(moved.list().unwrap().len(), 7);
    // Another writer putting each dictionary in, active, just before this sync does: each is
    // found there, and the one the source has retired is retired all the same.
    cluster
        .client()
        .batch_execute("CREATE DATABASE raced")
        .unwrap();
    let raced = PgStore::connect(&format!("{} dbname=raced", cluster.connection_string())).unwrap();
    let report = dict::sync(&source, &Raced(&raced)).unwrap();
    assert_eq!(
        report,
        SyncReport {
            present: vec![1, 2, 3],
            retired: vec![3],
            ..SyncReport::default()
        }
    );
    assert_eq!(
        raced.list().unwrap(),
        [1, 2, 3].map(|id| StoreEntry {
            id,
            retired: id == 3
        })
    );

    // Into the first database's store, whose 2 and 3 are other dictionaries: refused, and
    // nothing written.
    let before = store.list().unwrap();
    let err = dict::sync(&source, &store).unwrap_err();
    match &err {
        StoreError::Conflict { conflicts, to, .. } => {
            assert_eq!(conflicts.iter().map(|c| c.id).collect::<Vec<_>>(), [2, 3]);
            assert!(to.contains("PostgreSQL store"), "{to}");
        }
        other => panic!("expected a conflict: {other:?}"),
    }
    assert_eq!(store.list().unwrap(), before);
    // A single id put there by hand: the same content is already present, another refused.
    assert_eq!(
        store.insert(&source.get(1).unwrap()).unwrap(),
        dict::Inserted::AlreadyPresent
    );
    let err = store.insert(&source.get(2).unwrap()).unwrap_err();
    assert!(matches!(err, StoreError::Exists { id: 2, .. }), "{err:?}");
    assert_eq!(store.list().unwrap(), before);
}

/// A PostgreSQL store into which another writer puts each dictionary, active, just before a
/// sync does (a sync from another source that has not retired it yet).
struct Raced<'a>(&'a PgStore);

impl Store for Raced<'_> {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn entries(&self) -> Result<Vec<StoreEntry>, StoreError> {
        self.0.list()
    }
    fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        self.0.get(id)
    }
}

impl Destination for Raced<'_> {
    fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.0.insert(dict)?;
        self.0.insert(dict)
    }
    fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.0.insert(dict)?;
        self.0.insert_retired(dict)
    }
    fn retire(&self, id: u32) -> Result<bool, StoreError> {
        self.0.retire(id)
    }
    fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError> {
        Destination::repair(self.0, dict)
    }
}

// ---------------------------------------------------------------------------------------------
// The standby test

/// One row set's datums: which dictionary and codec, and the original rows.
struct DatumSet {
    file: &'static str,
    dict: Arc<Dictionary>,
    codec: Codec,
    rows: Vec<Vec<u8>>,
}

#[test]
fn a_standby_resolves_dictionaries_from_the_replicated_store() {
    const ROWS_PER_SET: usize = 400;
    let primary = PgCluster::start();
    let standby = primary.start_standby();

    // Before the primary has a store, opening one on the standby fails clearly, and creates
    // nothing (a standby cannot, and the store never tries).
    let err = PgStore::connect(&standby.connection_string()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("open the store on the primary"),
        "{message}"
    );
    assert!(
        message.contains(&format!("127.0.0.1:{}", standby.port())),
        "{message}"
    );

    // On the primary: the store, then its dictionaries (committed), then the datums.
    let store = PgStore::connect(&primary.connection_string()).unwrap();
    let mut sets = Vec::new();
    for (file, codec, size) in [
        ("json_user_agents.jsonl", Codec::Pglz, 4095),
        ("csv_airports.txt", Codec::Lz4, 16 * 1024),
        ("json_geonames_cities.jsonl", Codec::Zstd, 16 * 1024),
    ] {
        let rows = corpus_rows(file);
        let dict = store
            .add(CodecSet::only(codec), &train(&rows, size), metadata(file))
            .unwrap();
        let held_out: Vec<Vec<u8>> = rows
            .into_iter()
            .skip(1)
            .step_by(2)
            .take(ROWS_PER_SET)
            .collect();
        sets.push(DatumSet {
            file,
            dict,
            codec,
            rows: held_out,
        });
    }
    let mut client = primary.client();
    client
        .batch_execute(
            "CREATE TABLE datums (id serial PRIMARY KEY, set text NOT NULL, raw bytea NOT NULL, \
             datum bytea NOT NULL)",
        )
        .unwrap();
    let mut encoder = DatumEncoder::new();
    let mut extended = 0;
    let mut tx = client.transaction().unwrap();
    for set in &sets {
        let prepared = set.dict.prepare().unwrap();
        for row in &set.rows {
            let datum = encoder.encode(row, set.codec, Some(&prepared)).unwrap();
            if let Form::Extended { dict_id, .. } = datum::parse_header(&datum).unwrap().form {
                assert_eq!(dict_id, set.dict.id());
                extended += 1;
            }
            tx.execute(
                "INSERT INTO datums (set, raw, datum) VALUES ($1, $2, $3)",
                &[&set.file, row, &datum],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
    let total = sets.len() * ROWS_PER_SET;
    assert!(
        extended * 10 >= total * 9,
        "only {extended} of {total} datums used their dictionary: the test would prove little"
    );
    // A datum written by a node whose store has a dictionary 999 this cluster never had.
    let foreign = PreparedDictionary::new(999, &train(&sets[0].rows, 4095)).unwrap();
    let foreign_datum = encoder
        .encode(&sets[0].rows[0], Codec::Pglz, Some(&foreign))
        .unwrap();
    assert!(matches!(
        datum::parse_header(&foreign_datum).unwrap().form,
        Form::Extended { dict_id: 999, .. }
    ));
    client
        .execute(
            "INSERT INTO datums (set, raw, datum) VALUES ('foreign', $1, $2)",
            &[&sets[0].rows[0], &foreign_datum],
        )
        .unwrap();
    primary.wait_for_replay(&standby);

    // On the standby: a read-only store over the replicated tables.
    let on_standby = PgStore::connect(&standby.connection_string()).unwrap();
    assert!(on_standby.opened_on_standby());
    assert_eq!(on_standby.list().unwrap(), store.list().unwrap());
    let mut standby_client = standby.client();
    let rows = standby_client
        .query(
            "SELECT set, raw, datum FROM datums WHERE set <> 'foreign' ORDER BY id",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), total);
    let mut decoded = 0;
    for (row, original) in rows.iter().zip(sets.iter().flat_map(|s| &s.rows)) {
        let raw: Vec<u8> = row.get(1);
        let stored: Vec<u8> = row.get(2);
        assert_eq!(&raw, original);
        let value = datum::decode(&stored, &on_standby).unwrap_or_else(|e| {
            panic!(
                "a datum of {} does not decode on the standby: {e}",
                row.get::<_, String>(0)
            )
        });
        assert_eq!(value, raw);
        decoded += 1;
    }
    assert_eq!(decoded, total);

    // The datum naming an id the standby lacks: the error names the id, the store and sync.
    let stored: Vec<u8> = standby_client
        .query_one("SELECT datum FROM datums WHERE set = 'foreign'", &[])
        .unwrap()
        .get(0);
    let err = datum::decode(&stored, &on_standby).unwrap_err();
    assert_eq!(
        err,
        DatumError::MissingDictionary {
            id: 999,
            store: on_standby.describe(),
        }
    );
    let message = err.to_string();
    assert!(message.contains("dictionary 999"), "{message}");
    assert!(
        message.contains(&format!("127.0.0.1:{}", standby.port())),
        "{message}"
    );
    assert!(message.contains("pgdict.dictionaries"), "{message}");

    // The standby never writes to the store: the store refuses, and so would the server.
    let err = on_standby
        .add(CodecSet::ALL, b"written on a standby", Metadata::new())
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    assert!(err.to_string().contains("standby"), "{err}");
    let err = on_standby.retire(1).unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    assert!(err.to_string().contains("the server is a standby"), "{err}");
    let message = sql_error(
        &mut standby_client,
        "INSERT INTO pgdict.retired (id) VALUES (1)",
    );
    assert!(message.contains("25006"), "{message}");
    assert_eq!(on_standby.list().unwrap(), store.list().unwrap());
    assert!(store.list().unwrap().iter().all(|e| !e.retired));

    // A dictionary added on the primary later (one the standby was asked for before it
    // existed) resolves once replayed: a missing id is not remembered as missing.
    let next_id = store.list().unwrap().len() as u32 + 1;
    let early = PreparedDictionary::new(next_id, &train(&sets[0].rows, 4095)).unwrap();
    let early_datum = encoder
        .encode(&sets[0].rows[2], Codec::Pglz, Some(&early))
        .unwrap();
    assert!(matches!(
        datum::decode(&early_datum, &on_standby),
        Err(DatumError::MissingDictionary { .. })
    ));
    let later = store
        .add(
            CodecSet::ALL,
            early.as_bytes(),
            metadata("added after the standby looked"),
        )
        .unwrap();
    assert_eq!(later.id(), next_id);
    primary.wait_for_replay(&standby);
    assert_eq!(
        datum::decode(&early_datum, &on_standby).unwrap(),
        sets[0].rows[2]
    );

    // A standby's store is a sync source like any other.
    let dir = tempfile::tempdir().unwrap();
    let local = DirStore::open(dir.path()).unwrap();
    let report = dict::sync(&on_standby, &local).unwrap();
    assert_eq!(report.copied.len(), sets.len() + 1);
    assert!(Path::new(&local.file_path(1)).is_file());

    // A standby's store in step with the primary's is a sync destination that needs no write,
    // a retired dictionary included: syncing into it succeeds, changing nothing.
    store.retire(1).unwrap();
    primary.wait_for_replay(&standby);
    let report = dict::sync(&store, &on_standby).unwrap();
    assert_eq!(
        report,
        SyncReport {
            present: (1..=next_id).collect(),
            ..SyncReport::default()
        }
    );

    // A standby checks the store's shape as a primary does: a table that says it is another
    // schema version (changed on the primary by its owner) is refused there too, by name.
    client
        .batch_execute(
            "COMMENT ON TABLE pgdict.dictionaries IS 'pgdict dictionary store, schema version 1'",
        )
        .unwrap();
    primary.wait_for_replay(&standby);
    let message = PgStore::connect(&standby.connection_string())
        .unwrap_err()
        .to_string();
    assert!(message.contains("schema version 1"), "{message}");
}
