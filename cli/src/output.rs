//! Where output goes: standard output (buffered; a closed pipe ends the command quietly, see
//! [`crate::fail`]) or a file given with `-o`.
//!
//! A file is written all or nothing: into a temporary file beside it, which replaces the file
//! only when everything is written and flushed to disk ([`Output::finish`]). A command that
//! fails half way (bad input, a full disk) leaves an existing file as it was and no partial
//! file behind: dropping an unfinished [`Output`] removes the temporary file.

use std::fs::Permissions;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use tempfile::NamedTempFile;

use crate::fail::user_error;

/// An output: standard output or a file.
pub struct Output {
    inner: BufWriter<Box<dyn Write>>,
    /// For a file: its path and the temporary file that becomes it.
    file: Option<(PathBuf, NamedTempFile)>,
}

impl Output {
    /// Standard output.
    pub fn stdout() -> Output {
        Output {
            inner: BufWriter::with_capacity(1 << 16, Box::new(io::stdout().lock())),
            file: None,
        }
    }

    /// `path` (replaced by [`Output::finish`]), or standard output without one. `binary`
    /// refuses to write to a terminal: binary bytes there are of no use and can upset it.
    pub fn open(path: Option<&Path>, binary: bool, alternative: &str) -> anyhow::Result<Output> {
        match path {
            Some(path) if path != Path::new("-") => Output::file(path),
            _ => {
                if binary && io::stdout().is_terminal() {
                    return Err(user_error(
                        "refusing to write binary datums to a terminal",
                        format!("write to a file with -o FILE, pipe the output, or {alternative}"),
                    ));
                }
                Ok(Output::stdout())
            }
        }
    }

    /// Whether this is standard output on a terminal (where a progress bar would mix with the
    /// output).
    pub fn is_terminal(&self) -> bool {
        self.file.is_none() && io::stdout().is_terminal()
    }

    /// A file at `path`, written through a temporary file in the same directory (so that the
    /// final rename stays within one file system).
    pub fn file(path: &Path) -> anyhow::Result<Output> {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let temp = tempfile::Builder::new()
            .prefix(".pgdict-")
            .suffix(".tmp")
            // As `File::create` would: rw for all, less the umask (a temporary file's
            // default is owner-only).
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let writer = temp
            .reopen()
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Output {
            inner: BufWriter::with_capacity(1 << 16, Box::new(writer)),
            file: Some((path.to_path_buf(), temp)),
        })
    }

    /// What the output is, for messages.
    pub fn name(&self) -> String {
        match &self.file {
            Some((path, _)) => path.display().to_string(),
            None => "standard output".into(),
        }
    }

    /// Flushes everything written; a file is synced to disk and then takes the place of
    /// whatever was at its path.
    pub fn finish(mut self) -> anyhow::Result<()> {
        let name = self.name();
        self.inner
            .flush()
            .with_context(|| format!("cannot write to {name}"))?;
        if let Some((path, temp)) = self.file.take() {
            temp.as_file()
                .sync_all()
                .with_context(|| format!("cannot write to {name}"))?;
            temp.persist(&path)
                .map_err(|e| e.error)
                .with_context(|| format!("cannot replace {name}"))?;
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `bytes` as a bytea hex literal line: `\x0b616263`.
pub fn write_hex_line(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut line = Vec::with_capacity(3 + 2 * bytes.len());
    line.extend_from_slice(b"\\x");
    for &b in bytes {
        line.push(DIGITS[usize::from(b >> 4)]);
        line.push(DIGITS[usize::from(b & 0x0f)]);
    }
    line.push(b'\n');
    out.write_all(&line)
}
