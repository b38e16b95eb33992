//! The PostgreSQL store: the same records as the directory store, in a table, so that
//! physical replication carries dictionaries to standbys.
//!
//! A dictionary is committed to this store before any datum that uses it is written, so WAL
//! order delivers it to every physical standby before those datums: a standby resolves a
//! datum's dictionary id from its own replica of the table ([`PgStore`] opened on the standby,
//! read-only).
//!
//! # Schema
//!
//! Created on first open on a primary (in one transaction, under an advisory lock, so
//! concurrent first opens do not collide), by the role that opens it, which then owns the
//! schema and both tables; never created, or written, on a standby. Schema version 2:
//!
//! ```sql
//! CREATE SCHEMA pgdict;
//! CREATE TABLE pgdict.dictionaries (
//!     id              bigint PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),
//!     codecs          smallint NOT NULL CHECK (codecs BETWEEN 1 AND 7),  -- the file's bit set
//!     created_micros  bigint NOT NULL CHECK (created_micros >= 0),       -- since the epoch
//!     created         timestamptz GENERATED ALWAYS AS (...) STORED,      -- for people
//!     metadata        json CHECK (octet_length(metadata::text) <= 65536),  -- as written
//!     content         bytea NOT NULL CHECK (length(content) BETWEEN 1 AND 1048576),  -- (1)
//!     content_sha256  bytea NOT NULL CHECK (content_sha256 = sha256(content)),
//!     file_sha256     bytea NOT NULL CHECK (length(file_sha256) = 32)  -- the record's, id in it
//! );
//! CREATE TABLE pgdict.retired (
//!     id          bigint PRIMARY KEY REFERENCES pgdict.dictionaries (id),
//!     retired_at  timestamptz NOT NULL DEFAULT now()
//! );
//! ```
//!
//! (1) Tables made before a dictionary had to hold content keep `length(content) <= 1048576`
//! (the shape check reads no constraint): loading refuses an empty row there as damaged.
//!
//! A row holds the fields of the dictionary file ([`crate::dict::file`]) and that file's
//! `file_sha256`, which covers the id: loading rebuilds the file from the row and checks it,
//! so a row that was given another id (or changed in any field) is refused
//! ([`StoreError::RowChanged`]), as a file would be.
//!
//! Triggers on both tables refuse every `UPDATE`, `DELETE` and `TRUNCATE` (the function
//! `pgdict.refuse_change()`): a dictionary never changes, retirement only goes one way, and
//! since rows are never deleted, no id is ever used twice. They are enabled `ALWAYS`, so
//! `session_replication_role = replica` (a superuser's, or a logical replication worker's)
//! does not silence them. Opening checks the store's shape: schema version, columns, the four
//! triggers enabled `ALWAYS`, and one owner for the schema and both tables (a schema another
//! role owns would let that role replace the tables); anything else is refused by name. The
//! tables' owner and a superuser can still disable the triggers or drop the store, as anyone
//! who can write a directory store's files can delete them: where that matters, give users a
//! role that does not own the tables (`SELECT` on both to read; to add, `INSERT` and `UPDATE`
//! on `pgdict.dictionaries`, whose lock below needs `UPDATE`; to retire, `INSERT` on
//! `pgdict.retired`).
//!
//! Every statement runs with `search_path` set to `pg_catalog, pg_temp`, so that no function
//! or operator another role creates in a schema on the user's path (`public`) stands in for
//! PostgreSQL's own.
//!
//! # Ids
//!
//! [`PgStore::add`] takes `SHARE ROW EXCLUSIVE` on `pgdict.dictionaries` (it conflicts with
//! itself, not with readers), reads `max(id) + 1` and inserts, in one transaction: concurrent
//! writers queue on the lock and each sees the others' committed rows, so no two get the same
//! id, and an id is used only once it is committed.
//!
//! # Reading
//!
//! [`PgStore::get`] checks each row as the file format would: codec bits, metadata, and the
//! content against its stored SHA-256. Rows are cached by id after their first load (they
//! are immutable); a missing id is not cached, since it may arrive later by replication.

use std::sync::{Arc, Mutex, MutexGuard};

use postgres::error::SqlState;
use postgres::{Client, Transaction};

use crate::conninfo;
use crate::datum::{Codec, DictionaryLookup, LookupFailure, PreparedDictionary};
use crate::dict::file::{self, CodecSet, Dictionary, FormatError, Metadata};
use crate::dict::{
    lock, lookup_answer, newest_active, Cache, Inserted, Store, StoreEntry, StoreError,
};

/// The store's schema.
pub const SCHEMA: &str = "pgdict";

/// The advisory lock key that serializes schema creation: "pgdict" in ASCII.
const SETUP_LOCK_KEY: i64 = 0x7067_6469_6374;

/// The id the next added dictionary takes (ids are never reused: retired rows stay).
const NEXT_ID_SQL: &str = "SELECT coalesce(max(id), 0) + 1 FROM pgdict.dictionaries";

/// The version in the table's comment, which [`SCHEMA_SQL`] creates and opening checks.
const SCHEMA_VERSION: u32 = 2;

/// How the comment on `pgdict.dictionaries` starts, up to its version number.
const VERSION_COMMENT: &str = "pgdict dictionary store, schema version ";

/// The columns of each table, as `format_type` names their types.
const DICTIONARY_COLUMNS: &str = "id bigint, codecs smallint, created_micros bigint, \
     created timestamp with time zone, metadata json, content bytea, content_sha256 bytea, \
     file_sha256 bytea";
const RETIRED_COLUMNS: &str = "id bigint, retired_at timestamp with time zone";

/// The search path of every statement: PostgreSQL's catalog only.
const SEARCH_PATH_SQL: &str =
    "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)";

/// The schema's shape, or no row when either table is missing: whether one role owns the
/// schema and both tables, the table's comment, each table's columns, and how many of the
/// four triggers call `pgdict.refuse_change()` and are enabled `ALWAYS`.
const SHAPE_SQL: &str = r#"
SELECT n.nspowner = d.relowner AND n.nspowner = r.relowner,
       obj_description(d.oid, 'pg_class'),
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                          ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = d.oid AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                          ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT count(*) FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
          WHERE t.tgrelid IN (d.oid, r.oid) AND t.tgname IN ('refuse_change', 'refuse_truncate')
            AND t.tgenabled = 'A' AND p.proname = 'refuse_change' AND p.pronamespace = n.oid)
  FROM pg_namespace n
  JOIN pg_class d ON d.relnamespace = n.oid AND d.relname = 'dictionaries' AND d.relkind = 'r'
  JOIN pg_class r ON r.relnamespace = n.oid AND r.relname = 'retired' AND r.relkind = 'r'
 WHERE n.nspname = 'pgdict'
"#;

/// The schema, created in one transaction on first open. `CREATE SCHEMA` without `IF NOT
/// EXISTS`: a schema pgdict that is there already without the tables is not taken over.
const SCHEMA_SQL: &str = r#"
CREATE SCHEMA pgdict;

CREATE TABLE pgdict.dictionaries (
    id              bigint PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),
    codecs          smallint NOT NULL CHECK (codecs BETWEEN 1 AND 7),
    created_micros  bigint NOT NULL CHECK (created_micros >= 0),
    created         timestamptz
                    GENERATED ALWAYS AS (to_timestamp(created_micros / 1000000.0)) STORED,
    metadata        json CHECK (octet_length(metadata::text) <= 65536),
    content         bytea NOT NULL CHECK (length(content) BETWEEN 1 AND 1048576),
    content_sha256  bytea NOT NULL CHECK (content_sha256 = sha256(content)),
    file_sha256     bytea NOT NULL CHECK (length(file_sha256) = 32)
);
COMMENT ON TABLE pgdict.dictionaries IS
    'pgdict dictionary store, schema version 2: immutable rows; ids are never reused';

CREATE TABLE pgdict.retired (
    id          bigint PRIMARY KEY REFERENCES pgdict.dictionaries (id),
    retired_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgdict.retired IS
    'pgdict: retired dictionaries (they still decode; they are no longer used to compress)';

CREATE FUNCTION pgdict.refuse_change() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'pgdict: % on %.% refused: dictionaries are immutable, retirement is '
                    'permanent, and ids are never reused', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'add a new dictionary instead, and retire the old one';
END
$$;

CREATE TRIGGER refuse_change BEFORE UPDATE OR DELETE ON pgdict.dictionaries
    FOR EACH ROW EXECUTE FUNCTION pgdict.refuse_change();
CREATE TRIGGER refuse_truncate BEFORE TRUNCATE ON pgdict.dictionaries
    FOR EACH STATEMENT EXECUTE FUNCTION pgdict.refuse_change();
CREATE TRIGGER refuse_change BEFORE UPDATE OR DELETE ON pgdict.retired
    FOR EACH ROW EXECUTE FUNCTION pgdict.refuse_change();
CREATE TRIGGER refuse_truncate BEFORE TRUNCATE ON pgdict.retired
    FOR EACH STATEMENT EXECUTE FUNCTION pgdict.refuse_change();
ALTER TABLE pgdict.dictionaries ENABLE ALWAYS TRIGGER refuse_change;
ALTER TABLE pgdict.dictionaries ENABLE ALWAYS TRIGGER refuse_truncate;
ALTER TABLE pgdict.retired ENABLE ALWAYS TRIGGER refuse_change;
ALTER TABLE pgdict.retired ENABLE ALWAYS TRIGGER refuse_truncate;
"#;

/// A dictionary store in a PostgreSQL database (see the module documentation). One store
/// serves every thread of a program (`Send + Sync`): each dictionary is read and prepared once,
/// and its queries take turns on one connection.
pub struct PgStore {
    client: Mutex<Client>,
    description: String,
    /// The server was a standby when the store was opened.
    opened_on_standby: bool,
    /// Dictionaries loaded and prepared so far.
    cache: Cache,
}

const _: () = crate::assert_send_sync::<PgStore>();

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("description", &self.description)
            .field("opened_on_standby", &self.opened_on_standby)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects with a libpq-style connection string or URL, as libpq would (see
    /// [`crate::conninfo`]), and opens the store: on a primary, creates the schema if it is
    /// missing; on a standby, only checks that it is there (it arrives by replication once the
    /// primary has it).
    pub fn connect(conninfo: &str) -> Result<PgStore, StoreError> {
        let description = describe_conninfo(conninfo);
        let info = conninfo::parse(conninfo).map_err(|message| StoreError::Postgres {
            store: description.clone(),
            what: "reading the connection string".into(),
            message,
        })?;
        let client = info.connect().map_err(|e| StoreError::Connect {
            store: description.clone(),
            message: e.describe(),
            hint: e.hint(),
        })?;
        PgStore::from_client(client, description)
    }

    /// Opens the store over an existing connection; `description` names the store in
    /// messages (say, the server and database).
    pub fn from_client(
        mut client: Client,
        description: impl Into<String>,
    ) -> Result<PgStore, StoreError> {
        let description = description.into();
        let pg_err = |what: &str, e: postgres::Error| StoreError::Postgres {
            store: description.clone(),
            what: what.into(),
            message: describe_pg_error(&e),
        };
        // First, before any other statement: PostgreSQL's own functions and operators only.
        client
            .execute(SEARCH_PATH_SQL, &[])
            .map_err(|e| pg_err("setting the search path", e))?;
        let standby: bool = client
            .query_one("SELECT pg_is_in_recovery()", &[])
            .map_err(|e| pg_err("checking whether the server is a standby", e))?
            .get(0);
        let not_a_store = |message: String| StoreError::Postgres {
            store: description.clone(),
            what: "opening the store".into(),
            message,
        };
        if standby {
            let shape =
                read_shape(&mut client).map_err(|e| pg_err("reading the store's shape", e))?;
            match shape {
                Some(shape) => shape.check().map_err(not_a_store)?,
                None => {
                    return Err(not_a_store(
                        "the tables pgdict.dictionaries and pgdict.retired do not exist here; \
                         a standby never creates them: open the store on the primary once, \
                         and they arrive by replication"
                            .into(),
                    ))
                }
            }
        } else {
            let mut tx = client
                .transaction()
                .map_err(|e| pg_err("starting the setup transaction", e))?;
            tx.execute(
                "SELECT pg_catalog.pg_advisory_xact_lock($1::int8)",
                &[&SETUP_LOCK_KEY],
            )
            .map_err(|e| pg_err("taking the setup lock", e))?;
            match read_shape(&mut tx).map_err(|e| pg_err("reading the store's shape", e))? {
                Some(shape) => shape.check().map_err(not_a_store)?,
                None => {
                    let schema_exists: bool = tx
                        .query_one(
                            "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = 'pgdict')",
                            &[],
                        )
                        .map_err(|e| pg_err("looking for the schema pgdict", e))?
                        .get(0);
                    if schema_exists {
                        return Err(not_a_store(
                            "the schema pgdict exists without the store's tables \
                             (pgdict.dictionaries and pgdict.retired): pgdict creates the \
                             schema itself, so that no other role owns it; drop the schema \
                             or use another database"
                                .into(),
                        ));
                    }
                    tx.batch_execute(SCHEMA_SQL)
                        .map_err(|e| pg_err("creating the schema pgdict", e))?;
                }
            }
            tx.commit()
                .map_err(|e| pg_err("committing the setup transaction", e))?;
        }
        Ok(PgStore {
            client: Mutex::new(client),
            description,
            opened_on_standby: standby,
            cache: Cache::default(),
        })
    }

    /// What the store is, for messages: the table, database, server and user.
    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// Whether the server was a standby when the store was opened (every write then fails).
    pub fn opened_on_standby(&self) -> bool {
        self.opened_on_standby
    }

    /// Every dictionary in the store, by increasing id, with its retired flag.
    pub fn list(&self) -> Result<Vec<StoreEntry>, StoreError> {
        let rows = self
            .client()
            .query(
                "SELECT d.id, r.id IS NOT NULL FROM pgdict.dictionaries d \
                 LEFT JOIN pgdict.retired r USING (id) ORDER BY d.id",
                &[],
            )
            .map_err(|e| self.pg_err("listing dictionaries", e))?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.get(0);
                // The CHECK constraint keeps ids in u32's range; a row out of it is damage.
                let id = u32::try_from(id)
                    .ok()
                    .filter(|&id| id != 0)
                    .ok_or_else(|| StoreError::Postgres {
                        store: self.describe(),
                        what: "listing dictionaries".into(),
                        message: format!(
                            "the row id = {id} is outside the ids a dictionary can have \
                             (1 to 4294967295): the table's CHECK constraint was removed"
                        ),
                    })?;
                Ok(StoreEntry {
                    id,
                    retired: row.get(1),
                })
            })
            .collect()
    }

    /// Whether dictionary `id` is retired (false for an id the store does not hold).
    pub fn is_retired(&self, id: u32) -> Result<bool, StoreError> {
        let row = self
            .client()
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pgdict.retired WHERE id = $1)",
                &[&i64::from(id)],
            )
            .map_err(|e| self.pg_err(&format!("checking whether dictionary {id} is retired"), e))?;
        Ok(row.get(0))
    }

    /// The dictionary with this id, loaded and verified on first use, then cached.
    pub fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        self.cache.get(id, || self.load(id))
    }

    /// The dictionary with this id, read from its row and verified.
    fn load(&self, id: u32) -> Result<Dictionary, StoreError> {
        let row = self
            .client()
            .query_opt(
                "SELECT codecs, created_micros, coalesce(metadata::text, ''), content, \
                 content_sha256, file_sha256 FROM pgdict.dictionaries WHERE id = $1",
                &[&i64::from(id)],
            )
            .map_err(|e| self.pg_err(&format!("reading dictionary {id}"), e))?;
        let Some(row) = row else {
            return Err(StoreError::NotFound {
                id,
                store: self.describe(),
            });
        };
        let location = format!("the row id = {id} of {}", self.description);
        let damaged = |error| StoreError::Damaged {
            location: location.clone(),
            error,
        };
        let bits: i16 = row.get(0);
        let codecs = u16::try_from(bits)
            .ok()
            .and_then(CodecSet::from_bits)
            .ok_or_else(|| damaged(FormatError::BadCodecs { bits: bits as u16 }))?;
        let created_micros: i64 = row.get(1);
        let metadata: String = row.get(2);
        let content: Vec<u8> = row.get(3);
        let stored_sha: Vec<u8> = row.get(4);
        let stored_file_sha: Vec<u8> = row.get(5);
        let dict = Dictionary::from_parts(
            id,
            codecs,
            created_micros.max(0) as u64,
            &metadata,
            &content,
        )
        .map_err(damaged)?;
        if stored_sha.as_slice() != dict.content_sha256() {
            let stored = sha_or_zeros(&stored_sha);
            return Err(damaged(FormatError::ContentChecksumMismatch {
                stored,
                computed: dict.content_sha256(),
            }));
        }
        // The record's checksum covers the id: a row given another id fails here.
        let computed = dict.file_sha256();
        if stored_file_sha.as_slice() != computed {
            return Err(StoreError::RowChanged {
                location,
                stored: sha_or_zeros(&stored_file_sha),
                computed,
            });
        }
        Ok(dict)
    }

    /// The dictionary with this id prepared for every codec, built on first use, then cached.
    pub fn prepared(&self, id: u32) -> Result<Arc<PreparedDictionary>, StoreError> {
        self.cache.prepared(self, id)
    }

    /// The newest (highest id) dictionary that is not retired and was built for `codec`.
    pub fn active(&self, codec: Codec) -> Result<Option<Arc<Dictionary>>, StoreError> {
        newest_active(self, codec)
    }

    /// Adds a dictionary with the next id (`max(id) + 1`, under a table lock) and returns it,
    /// committed. Fails with [`StoreError::ReadOnly`] on a standby.
    pub fn add(
        &self,
        codecs: CodecSet,
        content: &[u8],
        metadata: Metadata,
    ) -> Result<Arc<Dictionary>, StoreError> {
        let template = Dictionary::new(1, codecs, file::now_micros(), metadata, content)
            .map_err(StoreError::Invalid)?;
        let mut client = self.client();
        let what = "adding a dictionary";
        let mut tx = self.begin_write(&mut client, what)?;
        let next: i64 = tx
            .query_one(NEXT_ID_SQL, &[])
            .map_err(|e| self.pg_err(what, e))?
            .get(0);
        let id = self.id_from_next(next)?;
        let dict = template.with_id(id).map_err(StoreError::Invalid)?;
        self.insert_row(&mut tx, &dict, false, what)?;
        tx.commit().map_err(|e| self.pg_err(what, e))?;
        drop(client);
        let dict = Arc::new(dict);
        self.cache.insert(dict.clone());
        Ok(dict)
    }

    /// The id [`PgStore::add`] would give now (`max(id) + 1`, read without the lock: another
    /// adder may take it first).
    pub fn next_id(&self) -> Result<u32, StoreError> {
        let next: i64 = self
            .client()
            .query_one(NEXT_ID_SQL, &[])
            .map_err(|e| self.pg_err("reading the next id", e))?
            .get(0);
        self.id_from_next(next)
    }

    fn id_from_next(&self, next: i64) -> Result<u32, StoreError> {
        u32::try_from(next).map_err(|_| StoreError::IdsExhausted {
            store: self.describe(),
        })
    }

    /// Puts `dict` in the store under its own id (what [`crate::dict::sync()`] does, from a
    /// directory store into this one). If the store holds that id already, it must hold the
    /// same content: else [`StoreError::Exists`], and nothing is written. Takes the lock
    /// [`PgStore::add`] takes, so an add never meets the id in between. Fails with
    /// [`StoreError::ReadOnly`] on a standby.
    pub fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.insert_as(dict, false)
    }

    /// [`PgStore::insert`] of a dictionary that is retired: its row and its retirement go in
    /// one transaction, so that it is never active here, not even for a moment (a sync that
    /// failed in between used to leave a retired dictionary active). An id held already is
    /// compared as by `insert`, and not retired.
    pub fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.insert_as(dict, true)
    }

    fn insert_as(&self, dict: &Dictionary, retired: bool) -> Result<Inserted, StoreError> {
        let mut client = self.client();
        let what = format!("inserting dictionary {}", dict.id());
        let mut tx = self.begin_write(&mut client, &what)?;
        if self.insert_row(&mut tx, dict, true, &what)? == 0 {
            let theirs: Vec<u8> = tx
                .query_one(
                    "SELECT content_sha256 FROM pgdict.dictionaries WHERE id = $1",
                    &[&i64::from(dict.id())],
                )
                .map_err(|e| self.pg_err(&what, e))?
                .get(0);
            return if theirs == dict.content_sha256() {
                Ok(Inserted::AlreadyPresent)
            } else {
                Err(StoreError::Exists {
                    id: dict.id(),
                    store: self.describe(),
                    theirs: theirs.try_into().unwrap_or_default(),
                    ours: dict.content_sha256(),
                })
            };
        }
        if retired {
            tx.execute(
                "INSERT INTO pgdict.retired (id) VALUES ($1)",
                &[&i64::from(dict.id())],
            )
            .map_err(|e| self.pg_err(&format!("retiring dictionary {}", dict.id()), e))?;
        }
        tx.commit().map_err(|e| self.pg_err(&what, e))?;
        drop(client);
        self.cache.insert(Arc::new(dict.clone()));
        Ok(Inserted::Added)
    }

    /// Starts a transaction that adds to `pgdict.dictionaries`, refused on a standby, holding
    /// the lock that makes writers take turns (see "Ids" in the module documentation).
    fn begin_write<'c>(
        &self,
        client: &'c mut Client,
        what: &str,
    ) -> Result<Transaction<'c>, StoreError> {
        self.refuse_on_standby(client)?;
        let mut tx = client.transaction().map_err(|e| self.pg_err(what, e))?;
        tx.batch_execute("LOCK TABLE pgdict.dictionaries IN SHARE ROW EXCLUSIVE MODE")
            .map_err(|e| self.pg_err(what, e))?;
        Ok(tx)
    }

    /// Inserts `dict`'s row; returns how many rows went in. With `if_absent`, an id the table
    /// holds already is left as it is (0); without, it is an error.
    fn insert_row(
        &self,
        tx: &mut Transaction<'_>,
        dict: &Dictionary,
        if_absent: bool,
        what: &str,
    ) -> Result<u64, StoreError> {
        let on_conflict = if if_absent {
            " ON CONFLICT (id) DO NOTHING"
        } else {
            ""
        };
        let metadata_json = (!dict.metadata_json().is_empty()).then(|| dict.metadata_json());
        tx.execute(
            format!(
                "INSERT INTO pgdict.dictionaries \
                 (id, codecs, created_micros, metadata, content, content_sha256, file_sha256) \
                 VALUES ($1, $2, $3, $4::text::json, $5, $6, $7){on_conflict}"
            )
            .as_str(),
            &[
                &i64::from(dict.id()),
                &(dict.codecs().bits() as i16),
                // A dictionary's creation time fits (at most `file::MAX_CREATED_MICROS`).
                &i64::try_from(dict.created_micros()).unwrap_or(i64::MAX),
                &metadata_json,
                &dict.content(),
                &dict.content_sha256().as_slice(),
                &dict.file_sha256().as_slice(),
            ],
        )
        .map_err(|e| self.pg_err(what, e))
    }

    /// Retires dictionary `id`: it still decodes, but [`PgStore::active`] no longer picks it.
    /// Returns whether it was retired just now (false: it already was).
    pub fn retire(&self, id: u32) -> Result<bool, StoreError> {
        let mut client = self.client();
        self.refuse_on_standby(&mut client)?;
        let inserted = client
            .execute(
                "INSERT INTO pgdict.retired (id) VALUES ($1) ON CONFLICT (id) DO NOTHING",
                &[&i64::from(id)],
            )
            .map_err(|e| {
                if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) {
                    StoreError::NotFound {
                        id,
                        store: self.describe(),
                    }
                } else {
                    self.pg_err(&format!("retiring dictionary {id}"), e)
                }
            })?;
        Ok(inserted == 1)
    }

    /// Fails with [`StoreError::ReadOnly`] if the server is a standby now, so that a caller
    /// about to make a dictionary (minutes of training) learns at once that it cannot store
    /// it. Every write checks again: a standby may be promoted, a primary demoted.
    pub fn check_writable(&self) -> Result<(), StoreError> {
        self.refuse_on_standby(&mut self.client())
    }

    /// Refuses to write on a standby (checked at each write: a standby may be promoted).
    fn refuse_on_standby(&self, client: &mut Client) -> Result<(), StoreError> {
        let standby: bool = client
            .query_one("SELECT pg_is_in_recovery()", &[])
            .map_err(|e| self.pg_err("checking whether the server is a standby", e))?
            .get(0);
        if standby {
            return Err(StoreError::ReadOnly {
                store: self.describe(),
                reason: "the server is a standby (pg_is_in_recovery() is true); add and \
                         retire dictionaries on the primary: they reach standbys by \
                         replication"
                    .into(),
            });
        }
        Ok(())
    }

    fn client(&self) -> MutexGuard<'_, Client> {
        lock(&self.client)
    }

    fn pg_err(&self, what: &str, e: postgres::Error) -> StoreError {
        if e.code() == Some(&SqlState::READ_ONLY_SQL_TRANSACTION) {
            return StoreError::ReadOnly {
                store: self.describe(),
                reason: describe_pg_error(&e),
            };
        }
        StoreError::Postgres {
            store: self.describe(),
            what: what.into(),
            message: describe_pg_error(&e),
        }
    }
}

/// A stored SHA-256 as a sum, for messages (a column of another length padded or cut).
fn sha_or_zeros(bytes: &[u8]) -> file::Sha256Sum {
    let mut sum = [0; 32];
    let n = bytes.len().min(32);
    sum[..n].copy_from_slice(&bytes[..n]);
    sum
}

/// What the catalog says of the store's tables ([`SHAPE_SQL`]).
struct Shape {
    one_owner: bool,
    comment: Option<String>,
    dictionary_columns: Option<String>,
    retired_columns: Option<String>,
    always_triggers: i64,
}

/// The store's shape, `None` when either table is missing.
fn read_shape(client: &mut impl postgres::GenericClient) -> Result<Option<Shape>, postgres::Error> {
    let Some(row) = client.query_opt(SHAPE_SQL, &[])? else {
        return Ok(None);
    };
    Ok(Some(Shape {
        one_owner: row.try_get(0)?,
        comment: row.try_get(1)?,
        dictionary_columns: row.try_get(2)?,
        retired_columns: row.try_get(3)?,
        always_triggers: row.try_get(4)?,
    }))
}

impl Shape {
    /// `Err` with what is wrong when the tables are not a store this code reads and trusts.
    fn check(&self) -> Result<(), String> {
        let version = self
            .comment
            .as_deref()
            .and_then(|comment| comment.strip_prefix(VERSION_COMMENT))
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse::<u32>().ok());
        match version {
            Some(SCHEMA_VERSION) => {}
            Some(version) => {
                return Err(format!(
                    "pgdict.dictionaries is a store of schema version {version}, made by \
                     another version of pgdict; this one reads version {SCHEMA_VERSION} (its \
                     rows keep the checksum of the whole record, id included)"
                ))
            }
            None => {
                return Err(
                    "pgdict.dictionaries is not a pgdict store: its comment does not \
                            give pgdict's schema version (pgdict creates the tables itself)"
                        .into(),
                )
            }
        }
        let columns = [
            (
                "pgdict.dictionaries",
                &self.dictionary_columns,
                DICTIONARY_COLUMNS,
            ),
            ("pgdict.retired", &self.retired_columns, RETIRED_COLUMNS),
        ];
        for (table, found, expected) in columns {
            if found.as_deref() != Some(expected) {
                return Err(format!(
                    "{table} has the columns ({}), not the store's ({expected})",
                    found.as_deref().unwrap_or("")
                ));
            }
        }
        if self.always_triggers != 4 {
            return Err(format!(
                "{} of the 4 triggers that keep the store immutable (refuse_change and \
                 refuse_truncate on pgdict.dictionaries and pgdict.retired, calling \
                 pgdict.refuse_change()) are there and enabled ALWAYS; a store whose rows can \
                 change or go is not trusted (ALTER TABLE ... ENABLE ALWAYS TRIGGER ..., as \
                 its owner, restores one that was disabled)",
                self.always_triggers
            ));
        }
        if !self.one_owner {
            return Err(
                "the schema pgdict and its tables have different owners: the schema's \
                        owner could replace the tables; one role must own all three"
                    .into(),
            );
        }
        Ok(())
    }
}

/// "the PostgreSQL store pgdict.dictionaries in database D at HOST:PORT (user U)", from a
/// connection string, never with its password.
fn describe_conninfo(conninfo: &str) -> String {
    let Ok(info) = conninfo::parse_for_messages(conninfo) else {
        return "the PostgreSQL store pgdict.dictionaries (at an unparsable connection string)"
            .into();
    };
    let mut text = String::from("the PostgreSQL store pgdict.dictionaries");
    if let Some(db) = info.config.get_dbname() {
        text.push_str(&format!(" in database {db}"));
    }
    text.push_str(&format!(" at {}", info.servers()));
    if let Some(user) = info.config.get_user() {
        text.push_str(&format!(" (user {user})"));
    }
    text
}

/// A PostgreSQL client error with everything it knows, for messages: for an error the server
/// sent, its severity, message, SQLSTATE, detail and hint (the error's own `Display` says only
/// "db error"); else the error and its chain of causes, each cause once.
pub fn describe_pg_error(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut text = format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
        if let Some(detail) = db.detail() {
            text.push_str(&format!("; detail: {detail}"));
        }
        if let Some(hint) = db.hint() {
            text.push_str(&format!("; hint: {hint}"));
        }
        return text;
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl Store for PgStore {
    fn describe(&self) -> String {
        PgStore::describe(self)
    }

    fn entries(&self) -> Result<Vec<StoreEntry>, StoreError> {
        self.list()
    }

    fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        PgStore::get(self, id)
    }
}

impl DictionaryLookup for PgStore {
    /// The prepared dictionary; `Ok(None)` if the store does not hold it (yet: on a standby it
    /// may arrive later), `Err` with the reason if it cannot be read.
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        lookup_answer(self.prepared(id))
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_the_server_and_never_the_password() {
        let text = describe_conninfo(
            "host=127.0.0.1 port=5433 user=app password=secret dbname=shop connect_timeout=3",
        );
        assert_eq!(
            text,
            "the PostgreSQL store pgdict.dictionaries in database shop at 127.0.0.1:5433 \
             (user app)"
        );
        let text = describe_conninfo("postgresql://app:secret@db.example:6000/shop");
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("db.example:6000"), "{text}");
    }
}
