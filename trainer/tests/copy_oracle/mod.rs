//! What the COPY differential tests (`copy_text_postgres.rs`, `copy_csv_postgres.rs`) share: a
//! PostgreSQL 15 server (the cluster harness of the workspace's tests,
//! `tests/support/cluster.rs`) that loads each generated input into a table of two text
//! columns, and the tally that says the comparison meant something.
//!
//! The database is SQL_ASCII and each COPY says `ENCODING 'SQL_ASCII'`, so that any byte but
//! NUL is a value's byte, as pgdict's readers read them.

#[allow(dead_code)] // these tests use only part of the harness
#[path = "../../../tests/support/cluster.rs"]
mod cluster;

use std::io::Write;

use cluster::PgCluster;
use rand::rngs::StdRng;
use rand::RngExt;

/// A server with the table `t (n serial, a text, b text)`, emptied after each load.
pub struct CopyOracle {
    client: postgres::Client,
    // Last: the server stops when the client has gone.
    _cluster: PgCluster,
}

/// A row as the server loaded it: columns `a` and `b`, NULL as `None`.
pub type Loaded = [Option<Vec<u8>>; 2];

impl CopyOracle {
    pub fn start() -> CopyOracle {
        let cluster = PgCluster::start();
        let mut client = cluster.sql_ascii_client("bytes");
        client
            .batch_execute("CREATE TABLE t (n serial, a text, b text)")
            .unwrap();
        CopyOracle {
            client,
            _cluster: cluster,
        }
    }

    /// Loads `input` by `COPY t (columns) FROM STDIN (ENCODING 'SQL_ASCII'{options})`: the
    /// rows in their order (a column not loaded is NULL), or the server's error message.
    pub fn load(
        &mut self,
        columns: &str,
        options: &str,
        input: &[u8],
    ) -> Result<Vec<Loaded>, String> {
        let statement = format!("COPY t ({columns}) FROM STDIN (ENCODING 'SQL_ASCII'{options})");
        let mut copy = self.client.copy_in(&statement).unwrap();
        copy.write_all(input).unwrap();
        if let Err(error) = copy.finish() {
            return Err(error
                .as_db_error()
                .map_or_else(|| error.to_string(), |e| e.message().into()));
        }
        let rows = self
            .client
            .query(
                "SELECT convert_to(a, 'SQL_ASCII'), convert_to(b, 'SQL_ASCII') FROM t ORDER BY n",
                &[],
            )
            .unwrap();
        self.client.batch_execute("TRUNCATE t").unwrap();
        Ok(rows.iter().map(|row| [row.get(0), row.get(1)]).collect())
    }
}

impl CopyOracle {
    /// [`CopyOracle::load`], tallied in `tally`: the rows loaded, or `None` if the server
    /// refused `input`. If it refused it for a line end ([`refuses_a_line_end`]), pgdict must
    /// refuse it too: `read` is pgdict's reading of it, which must fail (`case` names the
    /// input in the panic's message, beside the input itself).
    pub fn load_tallied<T: std::fmt::Debug>(
        &mut self,
        (columns, options): (&str, &str),
        input: &[u8],
        tally: &mut Tally,
        case: &str,
        read: impl FnOnce() -> Result<T, String>,
    ) -> Option<Vec<Loaded>> {
        match self.load(columns, options, input) {
            Ok(rows) => {
                tally.loaded += 1;
                Some(rows)
            }
            Err(refusal) if refuses_a_line_end(&refusal) => {
                tally.line_ends_refused += 1;
                let read = read();
                assert!(
                    read.is_err(),
                    "{case}: input {:?}\nPostgreSQL refused it: {refusal}\npgdict read {read:?}",
                    String::from_utf8_lossy(input),
                );
                None
            }
            Err(_) => None, // Refused for another reason: pgdict may read it or not.
        }
    }
}

/// A line end for a generated input: mostly `\n`, as COPY writes, else `\r\n` or `\r`.
pub fn line_end(rng: &mut StdRng) -> &'static [u8] {
    match rng.random_range(0..8) {
        0 | 1 => b"\r\n",
        2 => b"\r",
        _ => b"\n",
    }
}

/// Whether the server's error `message` refuses a line end of another kind than the first
/// line's (text: "literal carriage return found in data", "literal newline ..."; CSV:
/// "unquoted ..."; both: "end-of-copy marker does not match previous newline style").
fn refuses_a_line_end(message: &str) -> bool {
    [
        "carriage return found in data",
        "newline found in data",
        "newline style",
    ]
    .iter()
    .any(|refusal| message.contains(refusal))
}

/// How the inputs of one set of options fared.
#[derive(Default)]
pub struct Tally {
    /// Inputs the server loaded (and pgdict read as the same values).
    pub loaded: usize,
    /// Inputs the server refused for a line end (and pgdict refused).
    pub line_ends_refused: usize,
}

impl Tally {
    /// Asserts that enough of `cases` inputs loaded, and enough were refused for a line end, for
    /// the comparison to mean something; prints the counts under `said` (the options).
    pub fn check(&self, said: &str, cases: usize) {
        let (loaded, line_ends_refused) = (self.loaded, self.line_ends_refused);
        assert!(loaded > cases / 4, "only {loaded} of {cases} cases loaded");
        assert!(
            line_ends_refused > cases / 50,
            "only {line_ends_refused} of {cases} cases refused for a line end"
        );
        eprintln!(
            "options{said}: {loaded} of {cases} generated inputs loaded and read the same, \
             {line_ends_refused} refused for a line end by both"
        );
    }
}
