//! The sample rows `pgdict demo` trains on: the project's `corpus/`, read from the working
//! directory when it is there (a clone of the repository), else the copy built into the
//! binary, so that the demo works from any directory.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::ValueEnum;
use pgdict::rows::{self, RowFormat};

/// Which sample rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sample {
    /// corpus/events.jsonl: 2000 analytics events of a web shop, JSON, 168-599 bytes.
    Events,
    /// corpus/app_logs.txt: 2000 log lines of the shop's services, 106-188 bytes.
    AppLogs,
    /// corpus/orders_csv.txt: 2000 orders as CSV rows, 124-199 bytes.
    OrdersCsv,
}

static EVENTS: &str = include_str!("../../corpus/events.jsonl");
static APP_LOGS: &str = include_str!("../../corpus/app_logs.txt");
static ORDERS_CSV: &str = include_str!("../../corpus/orders_csv.txt");

impl Sample {
    /// The file's path in the repository.
    pub fn path(self) -> PathBuf {
        Path::new("corpus").join(match self {
            Sample::Events => "events.jsonl",
            Sample::AppLogs => "app_logs.txt",
            Sample::OrdersCsv => "orders_csv.txt",
        })
    }

    fn embedded(self) -> &'static str {
        match self {
            Sample::Events => EVENTS,
            Sample::AppLogs => APP_LOGS,
            Sample::OrdersCsv => ORDERS_CSV,
        }
    }

    /// A short name for messages and metadata.
    pub fn name(self) -> &'static str {
        match self {
            Sample::Events => "events",
            Sample::AppLogs => "app-logs",
            Sample::OrdersCsv => "orders-csv",
        }
    }
}

/// Whether `file` holds the rows a demo dictionary recorded as its source (`origin`,
/// [`Loaded::origin`]): the sample file it read (the same file, or the same bytes as the
/// built-in copy), or the built-in copy.
pub fn is_demo_source(origin: &str, file: &Path) -> bool {
    Sample::value_variants().iter().any(|&sample| {
        let path = sample.path();
        let read = origin == path.display().to_string();
        let built_in = origin == format!("{} (built into pgdict)", path.display());
        let same_file =
            || matches!((path.canonicalize(), file.canonicalize()), (Ok(a), Ok(b)) if a == b);
        let same_bytes =
            || std::fs::read(file).is_ok_and(|bytes| bytes == sample.embedded().as_bytes());
        (read || built_in) && (same_file() || same_bytes())
    })
}

/// The rows of a sample, and where they were read: the file in `./corpus` if there is one,
/// else the built-in copy.
pub struct Loaded {
    pub rows: Vec<Vec<u8>>,
    /// "corpus/events.jsonl", or "corpus/events.jsonl (built into pgdict)".
    pub origin: String,
    /// Whether the rows came from the file (paths in the suggestions then work).
    pub from_file: bool,
}

pub fn load(sample: Sample) -> anyhow::Result<Loaded> {
    let path = sample.path();
    let format = RowFormat::from_path(&path);
    let (bytes, origin, from_file) = match std::fs::read(&path) {
        Ok(bytes) => (bytes, path.display().to_string(), true),
        Err(_) => (
            sample.embedded().as_bytes().to_vec(),
            format!("{} (built into pgdict)", path.display()),
            false,
        ),
    };
    let rows = rows::parse_rows(&bytes, format, &origin)
        .with_context(|| format!("cannot read the sample rows of {origin}"))?;
    Ok(Loaded {
        rows,
        origin,
        from_file,
    })
}
