//! The harness of the `pgdict` end-to-end tests: a temporary working directory, the binary
//! run in it, and assertions on a finished run.

#![allow(dead_code)] // each test binary uses a different part

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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
        let mut command = Command::new(env!("CARGO_BIN_EXE_pgdict"));
        command
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("PGDICT_STORE")
            .env_remove("PGDICT_PG_STORE");
        command
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("run pgdict"))
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run pgdict");
        // Written from another thread: the child writes output while it reads, and a pipe
        // that nobody empties would stop both.
        let mut pipe = child.stdin.take().unwrap();
        let input = stdin.to_vec();
        let writer = std::thread::spawn(move || pipe.write_all(&input));
        let run = Run::from(child.wait_with_output().unwrap());
        writer.join().unwrap().unwrap();
        run
    }

    /// `pgdict demo` into ./dicts, quickly: what most tests need a store for.
    pub fn demo(&self) -> Run {
        self.run(&["demo", "--rounds", "1"]).ok()
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
