//! The PostgreSQL source: a column streamed from a plain `SELECT`, sampled by pages when the
//! table is large, and read again when a page sample holds fewer rows than wanted, and fewer
//! bytes than wanted where the caller bounds them too ([`Wanted`]; see the parent module's
//! documentation).
//!
//! A reader thread owns the connection: the postgres crate's streaming query
//! (`Client::query_raw`) borrows the client for as long as its rows are read, which [`Rows`]
//! cannot hold. The thread runs the query and hands its rows over in batches of about
//! [`BATCH_BYTES`] through a rendezvous channel, so that the source holds at most two batches
//! (the one being taken and the next, waiting) and the row being read. The client reads the
//! socket only while the thread asks for a row, so a waiting thread stops the server too
//! (it blocks writing to the socket), and a `SELECT` sends its rows as it makes them. A page
//! sample that holds less than wanted ([`Wanted::met_by`]) is followed, in the same read-only
//! transaction, by the next read ([`next_sample`]), announced by [`Handed::ReadAgain`]: the
//! source's side ends the pass there, unless it has returned no row yet.
//!
//! Not a cursor: a `FETCH n` is run to completion on the server, its result stored whole (in
//! memory, then in temporary files past `work_mem`) before a row is sent, and the client
//! collects the n rows at once: an n chosen from the sizes of the rows before cannot bound the
//! bytes of the rows after (small rows, then large ones: hundreds of megabytes in one fetch,
//! which a server with a `temp_file_limit` refused).

use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pgdict::dict::describe_pg_error;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::Client;

use super::{
    BytesWanted, PageSample, PgSource, Rows, ShortOfBytes, ShortSample, SourceError, TableRead,
};

/// The bytes of rows a batch holds at most (a row larger than this is a batch alone).
const BATCH_BYTES: usize = 8 << 20;
/// The rows a batch holds at most: small rows cost more than their bytes (a `Vec` each).
const BATCH_ROWS: usize = 1000;
/// A batch not yet full is handed over when this long has passed since the last (or it holds
/// the first row): rows that come slowly come as they come, and rows that come fast still
/// come a batch at a time (a hand-over per row would wake a thread per row). Rows read within
/// this time of the last hand-over wait for the next row or the end, however long the server
/// takes to make it.
const PARTIAL_BATCH_AFTER: Duration = Duration::from_millis(100);
/// The page sample aims at this many times the rows wanted (the reservoir sampler picks among
/// them), and is taken only when that is under 1 / `OVERSAMPLE` of the table's rows: when the
/// table holds more than `OVERSAMPLE`² (nine) times the rows wanted.
const OVERSAMPLE: f64 = 3.0;
/// The smallest share of the pages sampled, in percent.
const MIN_SAMPLE_PERCENT: f64 = 0.0001;

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

/// The share of a table's pages to sample, in percent, for about [`OVERSAMPLE`] times
/// `wanted` rows of the `estimated_rows` it holds; `None` (read it whole) unless it holds more
/// than `OVERSAMPLE`² times `wanted`, so that the sample reads at most a third of its pages.
fn sample_percent(wanted: u64, estimated_rows: f64) -> Option<f64> {
    let wanted = wanted as f64;
    (estimated_rows > OVERSAMPLE * OVERSAMPLE * wanted).then(|| {
        let percent = (100.0 * OVERSAMPLE * wanted / estimated_rows).max(MIN_SAMPLE_PERCENT);
        quarter_octave_up(percent).min(100.0 / OVERSAMPLE)
    })
}

/// After a page sample of `percent` % of the pages held `held`, less than `wanted`
/// ([`Wanted::met_by`]): the sample to read instead; `None`, the whole column. Its share is set,
/// as [`sample_percent`] sets it by the statistics, by what those pages say the table holds
/// (`held` in every `percent` in 100): for three times the rows wanted, or, where the caller
/// bounds its bytes too, three times the bytes wanted, in the rows that count
/// ([`Wanted::counted`]), whichever reads fewer pages. Of large rows, the bytes wanted are in
/// fewer rows than wanted, which a share set by rows alone would read for nothing (the whole
/// column, where a share set by the bytes was under a third of its pages). No rows: the whole
/// column, as no estimate can be made. The share is always over three times `percent` (a
/// sample short of the rows and the bytes wanted held under a third of either its share was
/// set for), so that samples that keep coming back short end in the whole column after a few.
fn next_sample(wanted: Wanted, percent: f64, held: Held) -> Option<PageSample> {
    let in_table = |in_sample: u64| in_sample as f64 * 100.0 / percent;
    // Short, so some side counts (`None` only for a sample that is enough).
    let counted = wanted.counted(held).unwrap_or_default();
    let by_rows = sample_percent(wanted.rows, in_table(counted.rows));
    let by_bytes = wanted
        .bytes
        .map(|bytes| sample_percent(bytes.bytes, in_table(counted.bytes)));
    // `None` is the whole column: any share is fewer pages.
    let share = match (by_rows, by_bytes) {
        (Some(rows), Some(Some(bytes))) => Some(rows.min(bytes)),
        (None, Some(bytes)) => bytes,
        (rows, _) => rows,
    };
    share
        // Only ever larger (as it is): else a sample could be read again at its own share.
        .filter(|&next| next > percent)
        .map(|percent| PageSample {
            percent,
            estimated_rows: in_table(held.all.rows) as u64,
        })
}

/// What a page sample must hold for the caller: the rows it keeps, or, where it bounds the bytes
/// it keeps too, those bytes. The byte bound binds when the rows are large: the rows wanted would
/// hold more bytes than the caller keeps, and a sample that holds the bytes but not the rows
/// already gives it all it keeps, so a read again would be spent on rows it leaves out.
///
/// With a byte bound, rows count as the caller's sampler keeps them ([`BytesWanted`]; the
/// trainer's `SampleOptions::bytes_wanted` says why): it keeps rows on two sides (training and
/// held out), each side a share of the rows, in rows no longer than its own bound, and drops a
/// longer row whole. So each side counts the rows it may keep, and has enough, in expectation,
/// once they are the rows wanted or hold the bytes wanted. A side that may keep none of the rows
/// read (every one longer than its bound) is no reason to read again: a larger read is expected
/// to hold rows like these (the estimate the next read's share is set by), none of which it would
/// keep either. The side with the smaller bound counts fewer rows and bytes of any read, so it is
/// the one that decides ([`Wanted::counted`]), unless it may keep none of the rows read.
#[derive(Clone, Copy, Debug)]
struct Wanted {
    rows: u64,
    bytes: Option<BytesWanted>,
}

/// Rows and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Count {
    rows: u64,
    bytes: u64,
}

impl Count {
    fn add(&mut self, row: &[u8]) {
        self.rows += 1;
        self.bytes += row.len() as u64;
    }
}

/// What a read handed over, as [`Wanted`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Held {
    /// Every row.
    all: Count,
    /// The rows no longer than [`BytesWanted::longest_row`], which every side may keep (every
    /// row, without a byte bound).
    kept_by_all: Count,
    /// The rows no longer than [`BytesWanted::longest_row_kept`], which some side may keep
    /// (every row, without a byte bound).
    kept_by_one: Count,
}

impl Held {
    /// Counts `row`, as `wanted` counts it (without it, every row counts everywhere).
    fn add(&mut self, row: &[u8], wanted: Option<Wanted>) {
        let bytes = wanted.and_then(|wanted| wanted.bytes);
        let len = row.len() as u64;
        self.all.add(row);
        if bytes.is_none_or(|bytes| len <= bytes.longest_row) {
            self.kept_by_all.add(row);
        }
        if bytes.is_none_or(|bytes| len <= bytes.longest_row_kept) {
            self.kept_by_one.add(row);
        }
    }
}

impl Wanted {
    /// The rows of `held` that decide whether it is enough: those of the side with the
    /// smaller bound, unless it may keep none of them; `None` when no side may keep any row
    /// of a read that held some, so that no larger read is expected to add to what the caller
    /// keeps. (No rows at all: no estimate, and short.)
    fn counted(&self, held: Held) -> Option<Count> {
        if held.all.rows == 0 || held.kept_by_all.rows > 0 {
            Some(held.kept_by_all)
        } else {
            Some(held.kept_by_one).filter(|counted| counted.rows > 0)
        }
    }

    /// What `held`, short, held of the bytes wanted, for a report; `None` without a byte
    /// bound.
    fn short_of_bytes(&self, held: Held) -> Option<ShortOfBytes> {
        let bytes = self.bytes?;
        let counted = self.counted(held).unwrap_or_default();
        Some(ShortOfBytes {
            bytes: bytes.bytes,
            // The larger bound only when the rows it counts are the ones that did.
            longest_row: if counted == held.kept_by_all {
                bytes.longest_row
            } else {
                bytes.longest_row_kept
            },
            rows_counted: counted.rows,
            bytes_counted: counted.bytes,
        })
    }

    /// Whether `held` is enough: the rows wanted, or the bytes wanted, in the rows that
    /// count ([`Wanted::counted`]).
    fn met_by(&self, held: Held) -> bool {
        self.counted(held).is_none_or(|counted| {
            counted.rows >= self.rows
                || self.bytes.is_some_and(|bytes| counted.bytes >= bytes.bytes)
        })
    }
}

/// `share` rounded up to the next power of 2^(1/4) (..., 1, 1.19, 1.41, 1.68, 2, 2.38, ...):
/// the statistics a share is computed from move a little with each ANALYZE, and a share that
/// moved with them would sample other pages (another sample from the same rows). Rounded up,
/// it reads at most 19 % more than asked, never less.
pub(super) fn quarter_octave_up(share: f64) -> f64 {
    // Less a hair, so that a power of 2^(1/4) computed with a rounding error above it stays
    // itself rather than going up a step.
    let steps = (share.log2() * 4.0 - 1e-9).ceil();
    (steps / 4.0).exp2()
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
    // else the server goes on with the query under way (a slow view's) until it next writes
    // to the closed connection.
    let token = client.cancel_token();
    let tls = info.tls.clone();
    let cancel: Cancel = Arc::new(move || {
        let _ = pgdict::conninfo::cancel_query(&token, &tls);
    });
    let cancel_on_signal = {
        let cancel = cancel.clone();
        crate::interrupt::on_signal(move || cancel())
    };
    let pg_err = |what: &str, e: postgres::Error| pg_error(&server, what, &e);
    let what = format!("looking up table {}", source.table);
    let row = client
        .query_opt(
            "SELECT c.oid, c.oid::regclass::text, c.relkind::text \
             FROM pg_class c WHERE c.oid = to_regclass($1)",
            &[&source.table],
        )
        .map_err(|e| pg_err(&what, e))?
        .ok_or_else(|| SourceError::Postgres {
            sqlstate: None,
            server: server.clone(),
            what: what.clone(),
            message: format!(
                "no table, view or materialized view named {} (names are resolved as SQL \
                 resolves them: quote mixed-case names, add the schema if it is not on the \
                 search_path)",
                source.table
            ),
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
    let queries = Queries {
        expr,
        table: table.clone(),
        not_null: format!("{quoted_column} IS DISTINCT FROM NULL"),
        // REPEATABLE takes a float8; keep the seed exact in it.
        seed: source.seed % (1 << 52),
    };
    // TABLESAMPLE works on tables and materialized views (kinds r, m, p), not views.
    let wanted = source
        .rows_wanted
        .filter(|_| matches!(relkind.as_str(), "r" | "m" | "p"))
        .map(|rows| Wanted {
            rows,
            bytes: source.bytes_wanted,
        });
    let page_sample = wanted.and_then(|wanted| {
        sample_percent(wanted.rows, estimated_rows).map(|percent| PageSample {
            percent,
            estimated_rows: estimated_rows as u64,
        })
    });
    let table_read = Rc::new(TableRead::default());
    table_read.page_sample.set(page_sample);
    let read = format!("column {} of {table}", source.column);
    let reader = Reader {
        client,
        cancel: cancel.clone(),
        _cancel_on_signal: cancel_on_signal,
        server,
        read: read.clone(),
    };
    let plan = page_sample.zip(wanted);
    let (hand, handed) = mpsc::sync_channel(0);
    let thread = std::thread::Builder::new()
        .name("pgdict-pg-reader".into())
        .spawn(move || reader.run(&queries, plan, &hand))
        .map_err(|source| SourceError::Io {
            origin: format!("a thread reading {read}"),
            source,
        })?;
    let mut stream = Stream {
        handed,
        thread: Some(thread),
        cancel,
        table_read: table_read.clone(),
        batch: Vec::new().into_iter(),
        rows_in_pass: 0,
        done: false,
    };
    // An error the server finds as the query starts (a table the role may not read) fails
    // the opening, before any row is asked for.
    stream.wait_until_started()?;
    Ok(Rows {
        iter: Box::new(stream),
        read: Default::default(),
        len: None,
        note,
        stream: None,
        table_read,
    })
}

/// The queries that read the column's values (NULLs left out, as the bytes stored): of the
/// whole table, or of a share of its pages.
struct Queries {
    /// The column, as the bytes to read.
    expr: String,
    /// The table, as SQL names it.
    table: String,
    /// The condition that leaves NULLs out.
    not_null: String,
    /// The seed of the page samples.
    seed: u64,
}

impl Queries {
    /// The query reading the pages `sample` says (all of them, `None`).
    fn read(&self, sample: Option<PageSample>) -> String {
        let Queries {
            expr,
            table,
            not_null,
            seed,
        } = self;
        match sample {
            Some(PageSample { percent, .. }) => format!(
                "SELECT {expr} FROM {table} TABLESAMPLE SYSTEM ({percent}) REPEATABLE ({seed}) \
                 WHERE {not_null}"
            ),
            None => format!("SELECT {expr} FROM {table} WHERE {not_null}"),
        }
    }
}

/// Cancels the query the connection runs (shared by the reader thread, the source and the
/// signal handler).
type Cancel = Arc<dyn Fn() + Send + Sync>;

/// What the reader thread hands over.
enum Handed {
    /// The server began to send the first query's rows (or said it has none): it took the
    /// query.
    Started,
    /// Rows, in the order read.
    Rows(Vec<Vec<u8>>),
    /// The page sample just read held fewer rows than wanted (the statistics promised rows
    /// its pages did not hold): the rows of another read follow, a larger sample or (`None`)
    /// the whole column.
    ReadAgain {
        short: ShortSample,
        then: Option<PageSample>,
    },
}

/// The reader thread's side: the connection, and what it reads.
struct Reader {
    client: Client,
    /// Cancels the session's query: when nobody takes its rows any more.
    cancel: Cancel,
    /// Cancels the session's query if a signal ends the process while the reader lives.
    _cancel_on_signal: crate::interrupt::Registration,
    server: String,
    /// "column C of T", for error messages.
    read: String,
}

/// What the rows of a query came to.
enum Streamed {
    /// These rows were handed over.
    Rows(Held),
    /// The source was dropped: nobody takes the rows.
    NobodyTakes,
}

impl Reader {
    /// Reads the rows of the column and hands them over: of the page sample `plan` says, for
    /// what is wanted, or of the whole column. A page sample that holds less than wanted
    /// ([`Wanted::met_by`]) is followed by another read ([`next_sample`]: a larger sample or
    /// the whole column), and so on. Ends early, without an error, when the source is dropped.
    fn run(
        mut self,
        queries: &Queries,
        plan: Option<(PageSample, Wanted)>,
        hand: &SyncSender<Handed>,
    ) -> Result<(), SourceError> {
        // Not synchronized: a scan of a large table may start where another session's scan
        // is (`synchronize_seqscans`), and the rows would come in another order, which the
        // sampler would take as other rows (it draws by position). Read-only: the column of
        // a view may call any function.
        self.client
            .batch_execute("SET synchronize_seqscans = off; BEGIN READ ONLY")
            .map_err(|e| pg_error(&self.server, &format!("starting to read {}", self.read), &e))?;
        let (mut sample, wanted) = match plan {
            Some((sample, wanted)) => (Some(sample), Some(wanted)),
            None => (None, None),
        };
        let mut first = true;
        let streamed = loop {
            let streamed = self.stream(&queries.read(sample), hand, first, wanted)?;
            first = false;
            let (Streamed::Rows(held), Some(read), Some(wanted)) = (&streamed, sample, wanted)
            else {
                break streamed;
            };
            if wanted.met_by(*held) {
                break streamed;
            }
            let short = ShortSample {
                percent: read.percent,
                rows: held.all.rows,
                rows_wanted: wanted.rows,
                estimated_rows: read.estimated_rows,
                bytes: held.all.bytes,
                bytes_wanted: wanted.short_of_bytes(*held),
            };
            sample = next_sample(wanted, read.percent, *held);
            let then = sample;
            if hand.send(Handed::ReadAgain { short, then }).is_err() {
                break Streamed::NobodyTakes;
            }
        };
        if let Streamed::NobodyTakes = streamed {
            // The source was dropped, and cancelled the query then (`Stream`'s `Drop`); again
            // here, for a query that began after (a read again). No COMMIT: it would wait
            // for the rest of the rows, which the client reads to reach its answer.
            (self.cancel)();
            return Ok(());
        }
        // Nothing was written; a failure here loses no row.
        let _ = self.client.batch_execute("COMMIT");
        Ok(())
    }

    /// Hands over the rows of `query` in batches ([`Batches`]), after [`Handed::Started`] if
    /// `first`; counts them as `wanted` counts (all their bytes, without it).
    fn stream(
        &mut self,
        query: &str,
        hand: &SyncSender<Handed>,
        first: bool,
        wanted: Option<Wanted>,
    ) -> Result<Streamed, SourceError> {
        let what = format!("reading rows of {}", self.read);
        let server = &self.server;
        let failed = |e: postgres::Error| pg_error(server, &what, &e);
        let no_parameters: [&(dyn ToSql + Sync); 0] = [];
        let mut rows = self
            .client
            .query_raw(query, no_parameters)
            .map_err(failed)?;
        let mut next = rows.next().map_err(failed)?;
        if first && hand.send(Handed::Started).is_err() {
            return Ok(Streamed::NobodyTakes);
        }
        let mut batches = Batches::default();
        let mut held = Held::default();
        let mut handed_at = Instant::now();
        while let Some(row) = next {
            // The query reads the column as bytea.
            let row: Vec<u8> = row.get(0);
            held.add(&row, wanted);
            // A full batch is handed over; so are rows that come slowly (a slow view's), as
            // they come: the first at once, as the wait for the next may be long.
            let ready = batches.push(row).or_else(|| {
                (held.all.rows == 1 || handed_at.elapsed() >= PARTIAL_BATCH_AFTER)
                    .then(|| batches.take())
            });
            if let Some(batch) = ready {
                if hand.send(Handed::Rows(batch)).is_err() {
                    return Ok(Streamed::NobodyTakes);
                }
                handed_at = Instant::now();
            }
            next = rows.next().map_err(failed)?;
        }
        let last = batches.take();
        if !last.is_empty() && hand.send(Handed::Rows(last)).is_err() {
            return Ok(Streamed::NobodyTakes);
        }
        Ok(Streamed::Rows(held))
    }
}

/// Rows gathered into batches of at most [`BATCH_BYTES`] and [`BATCH_ROWS`]; a row larger than
/// `BATCH_BYTES` is a batch alone.
#[derive(Default)]
struct Batches {
    rows: Vec<Vec<u8>>,
    bytes: usize,
}

impl Batches {
    /// Adds `row`; returns the batch before it when `row` does not fit in it.
    fn push(&mut self, row: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        let full = !self.rows.is_empty()
            && (self.rows.len() == BATCH_ROWS || self.bytes + row.len() > BATCH_BYTES);
        let batch = full.then(|| self.take());
        self.bytes += row.len();
        self.rows.push(row);
        batch
    }

    /// The rows gathered so far, as a batch of their own (empty if there are none).
    fn take(&mut self) -> Vec<Vec<u8>> {
        self.bytes = 0;
        std::mem::take(&mut self.rows)
    }
}

/// The source's side: takes the batches the reader thread hands over.
struct Stream {
    handed: Receiver<Handed>,
    /// The reader thread, until it has ended: what it ended with is the end of the rows (or
    /// their error).
    thread: Option<JoinHandle<Result<(), SourceError>>>,
    /// Cancels the reader's query: when the source is dropped before its end.
    cancel: Cancel,
    /// Shared with [`Rows`]: what a read again changes.
    table_read: Rc<TableRead>,
    batch: std::vec::IntoIter<Vec<u8>>,
    /// The rows returned since the read began (or was begun again).
    rows_in_pass: u64,
    done: bool,
}

impl Stream {
    /// The next thing handed over; `None` when the reader thread has ended, which it did with
    /// an error if `Err`.
    fn take(&mut self) -> Result<Option<Handed>, SourceError> {
        match self.handed.recv() {
            Ok(handed) => Ok(Some(handed)),
            Err(mpsc::RecvError) => match self.thread.take().map(JoinHandle::join) {
                Some(Ok(ended)) => ended.map(|()| None),
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => Ok(None),
            },
        }
    }

    /// Waits until the server has taken the query (or refused it: its error).
    fn wait_until_started(&mut self) -> Result<(), SourceError> {
        match self.take()? {
            Some(Handed::Started) | None => Ok(()),
            Some(Handed::Rows(_) | Handed::ReadAgain { .. }) => {
                unreachable!("the reader says it started before it hands rows over")
            }
        }
    }

    /// The next row; `None` at the end of the rows, or at the end of a pass
    /// ([`TableRead::pass_ended`] set).
    fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        loop {
            if let Some(row) = self.batch.next() {
                self.rows_in_pass += 1;
                return Ok(Some(row));
            }
            match self.take()? {
                Some(Handed::Rows(batch)) => self.batch = batch.into_iter(),
                Some(Handed::ReadAgain { short, then }) => {
                    let read = &self.table_read;
                    // The first: the sample the statistics set, which says they are out of
                    // date.
                    if read.short_sample.get().is_none() {
                        read.short_sample.set(Some(short));
                    }
                    // Rows returned are a pass, which the caller ends; with none (an empty
                    // sample), the next read's rows follow as if they were the first.
                    if self.rows_in_pass > 0 {
                        self.rows_in_pass = 0;
                        read.pass_ended.set(true);
                        read.next_page_sample.set(then);
                        return Ok(None);
                    }
                    read.page_sample.set(then);
                }
                Some(Handed::Started) => {}
                None => return Ok(None),
            }
        }
    }
}

impl Drop for Stream {
    /// A source dropped before its end (an error elsewhere, a reader of the output gone):
    /// the reader thread would learn it only when it next hands rows over, a batch later (a
    /// slow view's: minutes), the server running the query until then.
    fn drop(&mut self) {
        if self
            .thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
        {
            (self.cancel)();
        }
    }
}

impl Iterator for Stream {
    type Item = Result<Vec<u8>, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        // A pass that ended is not the end: the rows of the next follow once the caller asks
        // for them (`Rows::next_pass`).
        if self.done || self.table_read.pass_ended.get() {
            return None;
        }
        let row = self.next_row();
        if self.table_read.pass_ended.get() {
            return None;
        }
        super::end_after_error(&mut self.done, row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_hold_up_to_1000_rows_or_8_mib_and_a_larger_row_alone() {
        let batch_sizes = |rows: &[usize]| {
            let mut batches = Batches::default();
            let mut sizes = Vec::new();
            for &len in rows {
                if let Some(full) = batches.push(vec![0; len]) {
                    sizes.push(full.iter().map(Vec::len).collect::<Vec<_>>());
                }
            }
            sizes.push(batches.take().iter().map(Vec::len).collect());
            sizes
        };
        // Small rows: 1000 a batch.
        let small = batch_sizes(&[10; 2500]);
        let counts: Vec<usize> = small.iter().map(Vec::len).collect();
        assert_eq!(counts, [1000, 1000, 500]);
        // Small rows, then 3 MiB ones: a batch ends before the row that would take it over
        // 8 MiB.
        let mib = 1 << 20;
        assert_eq!(
            batch_sizes(&[10, 10, 3 * mib, 3 * mib, 3 * mib, 10]),
            [vec![10, 10, 3 * mib, 3 * mib], vec![3 * mib, 10]]
        );
        // A row of 8 MiB fills a batch; one over it is a batch alone.
        assert_eq!(
            batch_sizes(&[8 * mib, 1, 20 * mib, 1]),
            [vec![8 * mib], vec![1], vec![20 * mib], vec![1]]
        );
        assert_eq!(batch_sizes(&[]), [Vec::<usize>::new()]);
    }

    #[test]
    fn shares_round_up_to_a_quarter_octave() {
        let steps = [1.0, 1.189, 1.414, 1.682, 2.0];
        let near = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-3;
        // Powers of 2^(1/4) stay themselves.
        for k in -60..=27 {
            let power = (k as f64 / 4.0).exp2();
            assert!(near(quarter_octave_up(power), power), "{power}");
        }
        // Anything between two goes up to the next.
        assert!(near(quarter_octave_up(1.0001), steps[1]));
        assert!(near(quarter_octave_up(1.3), steps[2]));
        assert!(near(quarter_octave_up(1.5), steps[3]));
        assert!(near(quarter_octave_up(1.99), steps[4]));
        assert!(near(quarter_octave_up(0.0123), 0.013139));
        // Never less than asked, never 19 % more; and the same for estimates a little apart
        // (8,000,000 rows, then 8,010,000 after an ANALYZE).
        for i in 1..10_000 {
            let share = i as f64 * 0.0037;
            let rounded = quarter_octave_up(share);
            assert!(
                share <= rounded && rounded < share * 1.1893,
                "{share} {rounded}"
            );
        }
        assert_eq!(
            sample_percent(20_000, 8_000_000.0),
            sample_percent(20_000, 8_010_000.0)
        );
    }

    #[test]
    fn a_table_is_sampled_from_over_nine_times_the_rows_wanted() {
        assert_eq!(sample_percent(1000, 9000.0), None);
        assert_eq!(sample_percent(1000, 0.0), None);
        // Just over: the share would be just under a third, and rounding up stops there.
        assert_eq!(sample_percent(1000, 9001.0), Some(100.0 / 3.0));
        // 1 % asked: 1 %; 0.75 %: the next quarter octave up, 2^(-1/4) = 0.84 %.
        assert_eq!(sample_percent(1000, 300_000.0), Some(1.0));
        let percent = sample_percent(1000, 400_000.0).unwrap();
        assert!((percent - 0.8409).abs() < 1e-4, "{percent}");
        // Never under the smallest share.
        let tiny = sample_percent(1, 1e12).unwrap();
        assert!((MIN_SAMPLE_PERCENT..MIN_SAMPLE_PERCENT * 1.19).contains(&tiny));
    }

    /// Wanted: `rows`, and `bytes` in rows of at most 4 KiB where `Some`.
    fn wanted(rows: u64, bytes: Option<u64>) -> Wanted {
        Wanted {
            rows,
            bytes: bytes.map(|bytes| BytesWanted {
                bytes,
                longest_row: 4096,
                longest_row_kept: 4096,
            }),
        }
    }

    /// Held: `rows` rows of `bytes` bytes, all of them counted.
    fn held(rows: u64, bytes: u64) -> Held {
        let all = Count { rows, bytes };
        Held {
            all,
            kept_by_all: all,
            kept_by_one: all,
        }
    }

    #[test]
    fn a_short_sample_is_followed_by_a_larger_one_or_the_whole_column() {
        // 9 rows in 0.84 % of the pages: about 1,070 rows in all, over nine times 100, so a
        // sample for 300 of them, rounded up to 32 %.
        let next = next_sample(wanted(100, None), 0.8409, held(9, 900)).unwrap();
        assert_eq!(next.estimated_rows, 1070);
        assert_eq!(next.percent, 32.0);
        // No rows, or too few for a sample to save much: the whole column.
        assert_eq!(next_sample(wanted(100, None), 0.8409, held(0, 0)), None);
        assert_eq!(next_sample(wanted(100, None), 1.0, held(9, 900)), None);
        // From any share, with samples that each hold a row fewer than wanted (the most that
        // is short), or a byte fewer: over three times the share each time, until the whole
        // column; so the pages read before it are at most half of the table.
        for wanted_rows in [1, 10, 100, 12_500, 1_000_000] {
            for step in -40..=20 {
                let short_of_rows = |percent| {
                    next_sample(wanted(wanted_rows, None), percent, held(wanted_rows - 1, 0))
                };
                let short_of_bytes = |percent| {
                    let bytes = wanted_rows * 100;
                    next_sample(
                        wanted(u64::MAX, Some(bytes)),
                        percent,
                        held(wanted_rows, bytes - 1),
                    )
                };
                for next_sample in [&short_of_rows as &dyn Fn(f64) -> _, &short_of_bytes] {
                    let mut percent = quarter_octave_up((step as f64 / 4.0).exp2());
                    let mut read_before = percent;
                    while let Some(next) = next_sample(percent) {
                        assert!(next.percent > 3.0 * percent, "{percent} {next:?}");
                        percent = next.percent;
                        read_before += percent;
                    }
                    assert!(read_before <= 50.0, "{wanted_rows}: {read_before} % before");
                }
            }
        }
    }

    /// With a byte bound, the next share is the smaller of those the rows and the bytes call
    /// for: large rows hold the bytes wanted in fewer rows than wanted.
    #[test]
    fn a_read_again_is_set_by_the_rows_or_the_bytes_missing_whichever_reads_less() {
        // 17 rows of 2 KiB in 0.84 % of the pages: about 2,020 rows and 4.1 MB in all. For
        // 100 rows: 300 of the 2,020, 14.8 %, rounded up to 16 %. For 80 KiB: 240 KiB of the
        // 4.1 MB, 5.9 %, rounded up to 6.73 %.
        let short = held(17, 17 << 11);
        let by_rows = next_sample(wanted(100, None), 0.8409, short).unwrap();
        assert_eq!(by_rows.percent, 16.0);
        let by_bytes = next_sample(wanted(100, Some(80 << 10)), 0.8409, short).unwrap();
        assert!((by_bytes.percent - 6.727).abs() < 0.001, "{by_bytes:?}");
        // The rows the table holds are still estimated by the rows.
        assert_eq!(by_bytes.estimated_rows, by_rows.estimated_rows);
        // Bytes that call for the whole column, or more pages than the rows do: the rows'.
        for bytes in [8 << 20, 400 << 10] {
            assert_eq!(
                next_sample(wanted(100, Some(bytes)), 0.8409, short),
                Some(by_rows),
                "{bytes}"
            );
        }
        // Rows that call for the whole column (2,020 rows are under nine times 300 wanted):
        // the bytes' share still reads less.
        let whole = next_sample(wanted(300, None), 0.8409, short);
        assert_eq!(whole, None);
        assert_eq!(
            next_sample(wanted(300, Some(80 << 10)), 0.8409, short),
            Some(by_bytes)
        );
    }

    /// As the trainer's sampler keeps them, with 20 % held out of `--max-rows 10000
    /// --max-bytes 1M`: 12,500 rows, or 1.25 MiB in rows of at most 256 KiB (the held-out
    /// side's bound), else in rows of at most 1 MiB (the training side's).
    #[test]
    fn rows_count_as_the_sides_may_keep_them() {
        let wanted = Wanted {
            rows: 12_500,
            bytes: Some(BytesWanted {
                bytes: 1_310_720,
                longest_row: 262_144,
                longest_row_kept: 1 << 20,
            }),
        };
        let read = |rows: &[(u64, usize)]| {
            let mut held = Held::default();
            for &(len, count) in rows {
                for _ in 0..count {
                    held.add(&vec![b'x'; len as usize], Some(wanted));
                }
            }
            held
        };
        // Rows of 300 KB, which only the training side keeps: five hold its bytes, and no read
        // gives the held-out side any; four do not, and the next share is set by their bytes.
        let large = read(&[(300_000, 5)]);
        assert_eq!(
            wanted.counted(large),
            Some(Count {
                rows: 5,
                bytes: 1_500_000
            })
        );
        assert!(wanted.met_by(large));
        let fewer = read(&[(300_000, 4)]);
        assert!(!wanted.met_by(fewer));
        let next = next_sample(wanted, 1.0, fewer).unwrap();
        // 1.2 MB in 1 % of the pages, 120 MB in all: 3 x 1.25 MiB of it is 3.3 %, rounded up.
        assert_eq!(next.percent, quarter_octave_up(300.0 * 1_310_720.0 / 120e6));
        assert_eq!(next.estimated_rows, 400);
        // With one row the held-out side may keep, that side decides: it has too few bytes.
        let mixed = read(&[(300_000, 5), (1000, 1)]);
        assert_eq!(
            wanted.counted(mixed),
            Some(Count {
                rows: 1,
                bytes: 1000
            })
        );
        assert!(!wanted.met_by(mixed));
        // Rows no side keeps: nothing a larger read would add to.
        let too_long = read(&[(2 << 20, 3)]);
        assert_eq!(wanted.counted(too_long), None);
        assert!(wanted.met_by(too_long));
        // No rows at all: short, and the whole column next.
        assert!(!wanted.met_by(Held::default()));
        assert_eq!(next_sample(wanted, 1.0, Held::default()), None);
        // Rows the held-out side leaves out are no rows to it: 12,500 rows, half of them
        // 300 KB, are short (it took them for enough).
        let half_large = read(&[(300_000, 6250), (10, 6250)]);
        assert_eq!(half_large.all.rows, 12_500);
        assert!(!wanted.met_by(half_large));
        assert!(wanted.met_by(read(&[(300_000, 6250), (10, 12_500)])));
        // Without a byte bound every row counts, however long.
        let by_rows = Wanted {
            rows: 100,
            bytes: None,
        };
        let mut held = Held::default();
        for len in [10, 2 << 20] {
            for _ in 0..50 {
                held.add(&vec![b'x'; len], None);
            }
        }
        assert_eq!(by_rows.counted(held), Some(held.all));
        assert!(by_rows.met_by(held));
    }
}
