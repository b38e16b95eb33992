//! Where output goes: standard output (buffered; a closed pipe ends the command quietly, see
//! [`crate::fail`]) or a file given with `-o`.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::fail::user_error;

/// An output: standard output or a file.
pub struct Output {
    inner: BufWriter<Box<dyn Write>>,
    /// The file, if not standard output (for messages).
    path: Option<PathBuf>,
}

impl Output {
    /// Standard output.
    pub fn stdout() -> Output {
        Output {
            inner: BufWriter::with_capacity(1 << 16, Box::new(io::stdout().lock())),
            path: None,
        }
    }

    /// `path` (created or truncated), or standard output without one. `binary` refuses to
    /// write to a terminal: binary bytes there are of no use and can upset it.
    pub fn open(path: Option<&Path>, binary: bool, alternative: &str) -> anyhow::Result<Output> {
        match path {
            Some(path) if path != Path::new("-") => {
                let file = File::create(path)
                    .with_context(|| format!("cannot create {}", path.display()))?;
                Ok(Output {
                    inner: BufWriter::with_capacity(1 << 16, Box::new(file)),
                    path: Some(path.to_path_buf()),
                })
            }
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

    /// What the output is, for messages.
    pub fn name(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "standard output".into(),
        }
    }

    /// Flushes everything written.
    pub fn finish(mut self) -> anyhow::Result<()> {
        let name = self.name();
        self.inner
            .flush()
            .with_context(|| format!("cannot write to {name}"))
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
