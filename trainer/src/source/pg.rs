//! The PostgreSQL source: a column read through a server-side cursor, sampled by pages when
//! the table is large (see the parent module's documentation).

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use pgdict::dict::describe_pg_error;
use postgres::Client;

use super::{PageSample, PgSource, Rows, SourceError};

/// The most rows fetched per round trip.
const MAX_BATCH: i64 = 1000;
/// The bytes a fetch aims at. Rows are fetched one at first, then twice as many per round
/// trip while a fetch brings less than half this, and proportionally fewer when it brings
/// more: a table of megabyte values is fetched a few at a time, not 1000 (a gigabyte) at
/// once, and one of small rows reaches 1000 a fetch after ten round trips.
const BATCH_BYTES: usize = 8 << 20;
/// The cursor's name.
const CURSOR: &str = "pgdict_trainer_sample";
/// A table is sampled by pages when it holds more than this many times the rows wanted;
/// the sample then aims at this many times the rows wanted.
const OVERSAMPLE: f64 = 3.0;

/// What went wrong while doing `what` on `server`: the server's error, or a connection
/// that closed under the client (the server stopped or crashed: the client sees the end of
/// the stream or, as often, a reset).
fn pg_error(server: &str, what: &str, e: &postgres::Error) -> SourceError {
    let reset = std::error::Error::source(e)
        .and_then(|cause| cause.downcast_ref::<std::io::Error>())
        .is_some_and(|io| {
            use std::io::ErrorKind::*;
            matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            )
        });
    if e.is_closed() || reset {
        return SourceError::ConnectionLost {
            server: server.to_string(),
            what: what.to_string(),
            message: describe_pg_error(e),
        };
    }
    SourceError::Postgres {
        server: server.to_string(),
        what: what.to_string(),
        message: describe_pg_error(e),
        sqlstate: sqlstate(e),
    }
}

/// The SQLSTATE of an error the server sent.
fn sqlstate(e: &postgres::Error) -> Option<String> {
    e.code().map(|code| code.code().to_string())
}

/// The rows to fetch next, after a fetch of `batch` rows brought `bytes` (see
/// [`BATCH_BYTES`]).
pub(super) fn next_batch(batch: i64, bytes: usize) -> i64 {
    if bytes > BATCH_BYTES {
        let scaled = batch as f64 * BATCH_BYTES as f64 / bytes as f64;
        (scaled as i64).clamp(1, MAX_BATCH)
    } else if bytes < BATCH_BYTES / 2 {
        batch.saturating_mul(2).min(MAX_BATCH)
    } else {
        batch
    }
}

/// The cursor's state.
struct Cursor {
    client: Client,
    /// Cancels the session's query if a signal ends the process while the cursor lives.
    _cancel_on_signal: crate::interrupt::Registration,
    server: String,
    /// "column C of T", for error messages.
    read: String,
    /// The query without TABLESAMPLE.
    full_query: String,
    /// Shared with [`Rows`]: cleared if the sample finds no rows and the whole column is
    /// read instead.
    page_sample: Rc<Cell<Option<PageSample>>>,
    buffer: VecDeque<Vec<u8>>,
    /// Rows the next fetch asks for (see [`BATCH_BYTES`]).
    batch: i64,
    yielded: u64,
    done: bool,
}

pub(super) fn open(source: &PgSource) -> Result<Rows, SourceError> {
    let info = pgdict::conninfo::parse(&source.conninfo)
        .map_err(|message| SourceError::BadConninfo { message })?;
    let server = info.servers();
    let mut client = info.connect().map_err(|e| SourceError::Connect {
        server: server.clone(),
        message: e.describe(),
        sqlstate: e.sqlstate(),
        hint: e.hint(),
    })?;
    // Ctrl-C (or SIGTERM, SIGHUP) cancels the query on the server before the process ends:
    // else the server goes on with the fetch under way (a slow view's, a large batch's).
    let token = client.cancel_token();
    let tls = info.tls.clone();
    let cancel_on_signal = crate::interrupt::on_signal(move || {
        let _ = pgdict::conninfo::cancel_query(&token, &tls);
    });
    let pg_err = |what: &str, e: postgres::Error| pg_error(&server, what, &e);
    let what = format!("looking up table {}", source.table);
    let row = client
        .query_one(
            "SELECT c.oid, c.oid::regclass::text, c.relkind::text \
             FROM pg_class c WHERE c.oid = to_regclass($1)",
            &[&source.table],
        )
        .map_err(|e| match e.as_db_error() {
            Some(_) => pg_err(&what, e),
            // query_one fails without a database error when there is no row.
            None => SourceError::Postgres {
                sqlstate: None,
                server: server.clone(),
                what: what.clone(),
                message: format!(
                    "no table, view or materialized view named {} (names are resolved as \
                     SQL resolves them: quote mixed-case names, add the schema if it is \
                     not on the search_path)",
                    source.table
                ),
            },
        })?;
    let oid: u32 = row.get(0);
    let table: String = row.get(1);
    let relkind: String = row.get(2);
    // How many rows hold a value, which the sample's share is set by. For each table with
    // rows of its own in the inheritance tree (a partitioned table's partitions, an inheritance
    // parent's children): reltuples (from the last ANALYZE; -1 before the first, 0 for a
    // parent whose rows are its children's), or the live rows the server counts
    // (`n_live_tup`) where that is fewer (rows deleted since) or reltuples says nothing. The
    // live count may be behind (statistics not flushed yet, or none: a standby) or counted
    // twice (inserts flushed after an ANALYZE), so it only ever lowers a known reltuples,
    // which reads more rows, not fewer. Less the share of NULLs ANALYZE found in the column.
    let estimated_rows: f64 = client
        .query_one(
            "WITH RECURSIVE tree(oid) AS ( \
               SELECT $1::oid \
               UNION ALL SELECT i.inhrelid FROM pg_inherits i \
               JOIN tree ON i.inhparent = tree.oid), \
             null_frac AS ( \
               SELECT s.null_frac::float8 AS share FROM pg_stats s \
               JOIN pg_class c ON c.relname = s.tablename \
               JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname \
               WHERE c.oid = $1 AND s.attname = $2 ORDER BY s.inherited DESC LIMIT 1) \
             SELECT coalesce(sum(CASE \
                 WHEN c.reltuples > 0 AND coalesce(s.n_live_tup, 0) > 0 \
                     THEN least(c.reltuples::float8, s.n_live_tup::float8) \
                 WHEN c.reltuples > 0 THEN c.reltuples::float8 \
                 ELSE coalesce(s.n_live_tup, 0)::float8 END), 0)::float8 \
               * (1 - least(greatest(coalesce((SELECT share FROM null_frac), 0), 0), 1)) \
             FROM tree JOIN pg_class c ON c.oid = tree.oid \
             LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid \
             WHERE c.relkind IN ('r', 'm')",
            &[&oid, &source.column],
        )
        .map_err(|e| pg_err(&format!("estimating the rows of {table}"), e))?
        .get(0);
    let what = format!("looking up column {} of {table}", source.column);
    let column = client
        .query_opt(
            // A domain is stored as its base type (`base` follows domains over domains).
            // Whether that type is bytea, and whether it is stored as its text output:
            // variable-length string types (`name` is fixed-length), json and xml.
            "WITH RECURSIVE col AS ( \
               SELECT quote_ident(a.attname) AS name, \
                      format_type(a.atttypid, a.atttypmod) AS type_name, a.atttypid \
               FROM pg_attribute a WHERE a.attrelid = $1 AND a.attname = $2 \
               AND a.attnum > 0 AND NOT a.attisdropped), \
             base(oid) AS ( \
               SELECT atttypid FROM col \
               UNION ALL SELECT t.typbasetype FROM pg_type t JOIN base b ON t.oid = b.oid \
               WHERE t.typtype = 'd') \
             SELECT col.name, t.oid = 'bytea'::regtype, col.type_name, t.typlen = -1 \
             AND (t.typcategory = 'S' OR t.oid IN ('json'::regtype, 'xml'::regtype)), \
             t.oid = 'bpchar'::regtype \
             FROM col, base JOIN pg_type t ON t.oid = base.oid WHERE t.typtype <> 'd'",
            &[&oid, &source.column],
        )
        .map_err(|e| pg_err(&what, e))?;
    let Some(column) = column else {
        let names: Vec<String> = client
            .query(
                "SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = $1 \
                 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                &[&oid],
            )
            .map_err(|e| pg_err(&what, e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        return Err(SourceError::Postgres {
            sqlstate: None,
            server,
            what,
            message: format!("no such column; {table} has {}", names.join(", ")),
        });
    };
    let quoted_column: String = column.get(0);
    let bytea: bool = column.get(1);
    let type_name: String = column.get(2);
    let stored_as_text: bool = column.get(3);
    let padded: bool = column.get(4);
    let note = (!bytea && !stored_as_text).then(|| {
        format!(
            "column {} is {type_name}: its values are read as their text output, which is \
             not the bytes PostgreSQL stores and compresses for {type_name} (bytea, text, \
             varchar, json and xml are read as stored); the dictionary fits the text",
            source.column
        )
    });
    // Text as the bytes the database holds: in its own encoding, not converted to the
    // client's (UTF-8, which the postgres crate asks for); in a SQL_ASCII database, bytes
    // that need not be UTF-8 at all.
    let expr = if bytea {
        // A domain over bytea arrives as bytea through the cast; bytea itself is unchanged.
        format!("{quoted_column}::bytea")
    } else if padded {
        // char(n) is stored with its trailing blanks, which a cast to text strips; its text
        // output (what concat takes) keeps them.
        format!("convert_to(concat({quoted_column}), getdatabaseencoding())")
    } else {
        format!("convert_to({quoted_column}::text, getdatabaseencoding())")
    };
    // IS DISTINCT FROM NULL: a composite value with a NULL field is a value (IS NOT NULL is
    // false for it).
    let not_null = format!("{quoted_column} IS DISTINCT FROM NULL");
    let full_query = format!("SELECT {expr} FROM {table} WHERE {not_null}");
    // TABLESAMPLE works on tables and materialized views (kinds r, m, p), not views.
    let sample_percent = match source.rows_wanted {
        Some(wanted) if matches!(relkind.as_str(), "r" | "m" | "p") && estimated_rows > 0.0 => {
            let percent = 100.0 * OVERSAMPLE * wanted as f64 / estimated_rows;
            (percent < 100.0 / OVERSAMPLE).then_some(percent.max(0.0001))
        }
        _ => None,
    };
    let query = match sample_percent {
        Some(percent) => format!(
            "SELECT {expr} FROM {table} TABLESAMPLE SYSTEM ({percent}) REPEATABLE ({}) \
             WHERE {not_null}",
            // REPEATABLE takes a float8; keep the seed exact in it.
            source.seed % (1 << 52)
        ),
        None => full_query.clone(),
    };
    let page_sample = Rc::new(Cell::new(sample_percent.map(|percent| PageSample {
        percent,
        estimated_rows: estimated_rows as u64,
    })));
    let mut cursor = Cursor {
        client,
        _cancel_on_signal: cancel_on_signal,
        server,
        read: format!("column {} of {table}", source.column),
        full_query,
        page_sample: page_sample.clone(),
        buffer: VecDeque::new(),
        batch: 1,
        yielded: 0,
        done: false,
    };
    cursor.declare(&query)?;
    Ok(Rows {
        iter: Box::new(cursor),
        read: Default::default(),
        len: None,
        note,
        stream: None,
        page_sample,
    })
}

impl Cursor {
    fn err(&self, what: &str, e: postgres::Error) -> SourceError {
        pg_error(&self.server, what, &e)
    }

    /// Starts a read-only transaction holding the cursor for `query`.
    fn declare(&mut self, query: &str) -> Result<(), SourceError> {
        let sql = format!("BEGIN READ ONLY; DECLARE {CURSOR} NO SCROLL CURSOR FOR {query}");
        self.client
            .batch_execute(&sql)
            .map_err(|e| self.err(&format!("opening a cursor on {}", self.read), e))
    }

    fn fetch(&mut self) -> Result<(), SourceError> {
        let sql = format!("FETCH {} FROM {CURSOR}", self.batch);
        let rows = self
            .client
            .query(sql.as_str(), &[])
            .map_err(|e| self.err(&format!("fetching rows of {}", self.read), e))?;
        let mut bytes = 0;
        for row in rows {
            // The query reads every column as bytea.
            let value = row.get::<_, Vec<u8>>(0);
            bytes += value.len();
            self.buffer.push_back(value);
        }
        self.batch = next_batch(self.batch, bytes);
        Ok(())
    }

    fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        if self.buffer.is_empty() {
            self.fetch()?;
        }
        if self.buffer.is_empty() && self.page_sample.get().is_some() && self.yielded == 0 {
            // The statistics promised rows the sampled pages did not hold: read it all.
            self.client.batch_execute("COMMIT").map_err(|e| {
                self.err(&format!("closing the sampling cursor on {}", self.read), e)
            })?;
            self.page_sample.set(None);
            let query = self.full_query.clone();
            self.declare(&query)?;
            self.fetch()?;
        }
        match self.buffer.pop_front() {
            Some(datum) => {
                self.yielded += 1;
                Ok(Some(datum))
            }
            None => {
                let _ = self.client.batch_execute("COMMIT");
                Ok(None)
            }
        }
    }
}

impl Iterator for Cursor {
    type Item = Result<Vec<u8>, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let row = self.next_row();
        super::end_after_error(&mut self.done, row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_grow_to_1000_rows_and_shrink_to_about_8_mib() {
        // Small rows: 1, 2, 4, ... 1000 a fetch.
        let mut batch = 1;
        let mut batches = Vec::new();
        for _ in 0..12 {
            batches.push(batch);
            batch = next_batch(batch, batch as usize * 100);
        }
        assert_eq!(batches, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000]);
        // 1 MiB rows: 1000 of them shrink to 8 a fetch, and stay there.
        assert_eq!(next_batch(1000, 1000 << 20), 8);
        assert_eq!(next_batch(8, 8 << 20), 8);
        assert_eq!(next_batch(4, 4 << 20), 4);
        // A value over the aim on its own: one at a time.
        assert_eq!(next_batch(2, 1 << 30), 1);
        assert_eq!(next_batch(1, 1 << 30), 1);
    }
}
