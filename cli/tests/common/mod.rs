//! The harness of the `pgdict` end-to-end tests: a temporary working directory, the binary
//! run in it, and assertions on a finished run.

#![allow(dead_code)] // each test binary uses a different part

#[path = "../../../tests/support/child.rs"]
pub mod child;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// A temporary working directory for one test.
pub struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    /// The command, run in this directory.
    pub fn command(&self, args: &[&str]) -> Command {
        pgdict_in(self.dir.path(), args)
    }

    /// pgdict started with `args`, its standard input, output and error pipes to the test.
    #[allow(dead_code)] // not every test binary streams
    pub fn spawn_piped(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start pgdict")
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("run pgdict"))
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        Run::from(child::output_with_stdin(&mut self.command(args), stdin))
    }

    /// pgdict run with `args` on a terminal ([`child::output_on_terminal`]): what the
    /// terminal showed (output and errors together) is the run's `stdout` and `stderr` alike.
    pub fn run_on_terminal(&self, args: &[&str]) -> Run {
        let output = child::output_on_terminal(&self.command(args));
        Run {
            status: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stdout).into_owned(),
            stdout: output.stdout,
        }
    }

    /// The dictionaries of `pgdict demo --rounds 1` in ./dicts, what most tests need a store
    /// for; the demo's standard output.
    pub fn demo_store(&self) -> String {
        self.copy_demo_store(DemoStore::Events, "dicts")
    }

    /// A store a demo made ([`DemoStore`]), copied into `to` here; the first demo's standard
    /// output.
    pub fn copy_demo_store(&self, which: DemoStore, to: &str) -> String {
        let made = which.made();
        copy_files(&made.dir.join("dicts"), &self.path(to));
        made.stdout.clone()
    }
}

/// Stores that demos make, each made once per test binary (on first use) and then copied: a
/// demo trains for about ten seconds, and most tests only need its dictionaries. A demo is
/// deterministic (its training is bounded by work, not time), so a copy holds the same
/// dictionaries the test would have made. The demo's own test runs it for real.
#[derive(Clone, Copy, Debug)]
pub enum DemoStore {
    /// `pgdict demo --rounds 1`: the built-in rows' pglz (1) and lz4 (2) dictionaries.
    Events,
    /// `--sample app-logs`: corpus/app_logs.txt's, also as 1 and 2.
    AppLogs,
    /// `--sample orders-csv`: corpus/orders.csv's, as 1 and 2.
    OrdersCsv,
    /// [`DemoStore::Events`], then `--sample app-logs` into the same store: 1 to 4.
    EventsThenAppLogs,
}

struct MadeStore {
    /// The directory the demos ran in; the store is its `dicts`.
    dir: PathBuf,
    /// The first demo's standard output.
    stdout: String,
}

impl DemoStore {
    /// The store a demo starts from, if not an empty one, and the sample it trains on.
    fn recipe(self) -> (Option<DemoStore>, &'static str) {
        match self {
            DemoStore::Events => (None, "events"),
            DemoStore::AppLogs => (None, "app-logs"),
            DemoStore::OrdersCsv => (None, "orders-csv"),
            DemoStore::EventsThenAppLogs => (Some(DemoStore::Events), "app-logs"),
        }
    }

    fn made(self) -> &'static MadeStore {
        static MADE: [OnceLock<MadeStore>; 4] = [const { OnceLock::new() }; 4];
        MADE[self as usize].get_or_init(|| {
            let (base, sample) = self.recipe();
            let dir = demo_stores_dir().join(format!("{self:?}"));
            // (What a panicked earlier try left.)
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir(&dir).unwrap();
            if let Some(base) = base {
                copy_files(&base.made().dir.join("dicts"), &dir.join("dicts"));
            }
            let run = pgdict_in(&dir, &["demo", "--rounds", "1", "--sample", sample])
                .output()
                .expect("run pgdict");
            let run = Run::from(run).ok();
            MadeStore {
                stdout: match base {
                    Some(base) => base.made().stdout.clone(),
                    None => run.stdout(),
                },
                dir,
            }
        })
    }
}

/// `pgdict ARGS` in `dir`, with no store from the environment.
fn pgdict_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pgdict"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("PGDICT_STORE")
        .env_remove("PGDICT_PG_STORE");
    command
}

/// This process's directory for [`DemoStore`]s, under Cargo's scratch directory for
/// integration tests: statics are never dropped, so a `TempDir` there would never be removed.
/// The directories of this test binary's earlier runs, whose processes are gone (no
/// `/proc/PID`), are removed.
fn demo_stores_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("demo-stores");
        fs::create_dir_all(&parent).unwrap();
        let prefix = format!("{}-", env!("CARGO_CRATE_NAME"));
        for entry in fs::read_dir(&parent).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let gone = name
                .strip_prefix(&prefix)
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if gone {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
        let dir = parent.join(format!("{prefix}{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).unwrap();
        dir
    })
}

/// Copies the files of directory `from` into `to`, which is created if missing.
fn copy_files(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// A finished run.
pub struct Run {
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            status: output.status.code(),
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Asserts exit status 0.
    pub fn ok(self) -> Run {
        assert_eq!(
            self.status,
            Some(0),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr
        );
        self
    }

    /// Asserts the exit status and that stderr holds every phrase.
    pub fn fails(self, status: i32, phrases: &[&str]) -> Run {
        assert_eq!(
            self.status,
            Some(status),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr
        );
        for phrase in phrases {
            assert!(
                self.stderr.contains(phrase),
                "stderr lacks {phrase:?}:\n{}",
                self.stderr
            );
        }
        self
    }
}

/// The project's sample rows.
pub fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(name)
}

pub fn corpus_arg(name: &str) -> String {
    corpus(name).display().to_string()
}
