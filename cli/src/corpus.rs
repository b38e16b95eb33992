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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The sample's file in the repository's corpus/, from the package's directory (where
    /// `cargo test` runs).
    pub(crate) fn in_repository(sample: Sample) -> PathBuf {
        Path::new("..").join(sample.path())
    }

    #[test]
    fn each_sample_names_its_own_file() {
        let names: Vec<(&str, PathBuf)> = Sample::value_variants()
            .iter()
            .map(|&sample| (sample.name(), sample.path()))
            .collect();
        assert_eq!(
            names,
            [
                ("events", PathBuf::from("corpus/events.jsonl")),
                ("app-logs", PathBuf::from("corpus/app_logs.txt")),
                ("orders-csv", PathBuf::from("corpus/orders_csv.txt")),
            ]
        );
        for &sample in Sample::value_variants() {
            let file = std::fs::read(in_repository(sample)).unwrap();
            assert!(file == sample.embedded().as_bytes(), "{}", sample.name());
        }
    }

    #[test]
    fn load_reads_the_file_or_else_the_built_in_copy() {
        for &sample in Sample::value_variants() {
            let loaded = load(sample).unwrap();
            let path = sample.path().display().to_string();
            // Tests run in the package's directory, which has no corpus/ of its own.
            assert!(!sample.path().exists());
            assert!(!loaded.from_file);
            assert_eq!(loaded.origin, format!("{path} (built into pgdict)"));
            let format = RowFormat::from_path(&sample.path());
            let expected = rows::parse_rows(sample.embedded().as_bytes(), format, &path).unwrap();
            assert_eq!(loaded.rows.len(), 2000, "{path}");
            assert_eq!(loaded.rows, expected);
        }
    }

    #[test]
    fn a_demo_source_is_the_sample_it_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.jsonl");
        std::fs::write(&copy, EVENTS).unwrap();
        let edited = dir.path().join("edited.jsonl");
        std::fs::write(&edited, format!("{EVENTS}{{}}\n")).unwrap();
        let read = "corpus/events.jsonl";
        let built_in = "corpus/events.jsonl (built into pgdict)";

        // The rows it recorded, read from a file or built in.
        assert!(is_demo_source(read, &copy));
        assert!(is_demo_source(built_in, &copy));
        assert!(is_demo_source(read, &in_repository(Sample::Events)));
        assert!(is_demo_source(
            "corpus/orders_csv.txt",
            &in_repository(Sample::OrdersCsv)
        ));
        // Other rows, another sample's, or a source that is no sample.
        assert!(!is_demo_source(read, &edited));
        assert!(!is_demo_source(read, &dir.path().join("missing.jsonl")));
        assert!(!is_demo_source("corpus/app_logs.txt", &copy));
        assert!(!is_demo_source("rows.jsonl", &copy));
        assert!(!is_demo_source("corpus/events.jsonl (built in)", &copy));
    }
}
