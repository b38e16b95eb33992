//! Where output goes: standard output (buffered; a closed pipe ends the command quietly, see
//! [`crate::fail`]) or a file given with `-o`.
//!
//! A regular file is written all or nothing: into a temporary file beside it, which replaces
//! the file only when everything is written and flushed to disk ([`Output::finish`]). A command
//! that fails half way (bad input, a full disk) leaves an existing file as it was and no partial
//! file behind: dropping an unfinished [`Output`] removes the temporary file, and so does a
//! signal that ends the process (Ctrl-C; see [`remove_unfinished_on_signals`]). The new file keeps
//! the old one's permissions and (where allowed) owner, and a symbolic link is followed (the
//! file it names is replaced, the link stays). Anything else at the path (`/dev/null`, a named
//! pipe) is written in place, as a shell's `>` would: replacing a device with a file would break
//! it for every program. A regular file that is the command's input is refused
//! ([`Output::refuse_the_input`]).
//!
//! What is written in place (standard output, a pipe) cannot be taken back: an error ends it
//! with a mark its reader refuses ([`Output::end_broken`]), and so does a signal that ends the
//! process while the mark is registered ([`Output::end_broken_on_signal`]), so that a `COPY`
//! reading it fails rather than committing the rows before.

use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{fchown, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use anyhow::Context;
use pgdict_trainer::interrupt::Registration;
use pgdict_trainer::source;
use rustix::event::{PollFd, PollFlags, Timespec};
use tempfile::NamedTempFile;

use crate::fail::{usage_error, user_error, Hint};

/// The temporary files of the outputs not yet finished: a signal that ends the process runs
/// no destructor, so [`remove_unfinished`] removes them. Held while one is made, replaces its
/// file or is removed, so that none is missed or removed twice.
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn unfinished() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic while it was held leaves the list as valid as before.
    UNFINISHED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes the temporary files of the outputs not finished yet, and returns with the list
/// locked, so that no output makes another or replaces its file: for a signal's handler, which
/// then ends the process.
fn remove_unfinished() -> MutexGuard<'static, Vec<PathBuf>> {
    let paths = unfinished();
    for path in paths.iter() {
        fs::remove_file(path).ok();
    }
    paths
}

/// From the first temporary file on (once): on Ctrl-C (SIGINT), SIGTERM or SIGHUP, removes
/// the unfinished ones ([`remove_unfinished`]) before the process ends as the signal would
/// have ([`pgdict_trainer::interrupt`]): the files they were to replace stay as they were, and
/// nothing is left beside them.
fn remove_unfinished_on_signals() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // Kept locked until the process ends: no output makes another file meanwhile.
        let registration = pgdict_trainer::interrupt::on_signal(|| {
            std::mem::forget(remove_unfinished());
        });
        // For the life of the process.
        std::mem::forget(registration);
    });
}

/// What a command writes, for [`Output::refuse_a_name_for_another_format`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// A datums file (`compress`).
    Datums,
    /// Hex lines (`compress --hex`), which load as CSV.
    HexLines,
    /// Binary COPY of one `bytea` column (`compress --copy`).
    BinaryCopy,
    /// COPY data or CSV, the rows as read with their datums in place (`--keep-columns`).
    Records,
    /// Rows, one a line (`decompress`): CSV rows come back as CSV.
    Lines,
    /// Rows as JSON Lines (`decompress --out-format jsonl`).
    JsonLines,
}

impl Writes {
    fn describe(self) -> &'static str {
        match self {
            Writes::Datums => "a datums file",
            Writes::HexLines => "hex lines",
            Writes::BinaryCopy => "binary COPY data",
            Writes::Records => "COPY data or CSV",
            Writes::Lines => "lines of text",
            Writes::JsonLines => "JSON Lines",
        }
    }
}

/// An output: standard output or a file.
pub struct Output {
    inner: BufWriter<Box<dyn Write>>,
    /// What it is, for messages: "standard output", or the path as given.
    name: String,
    /// Whether it is a terminal (where binary bytes are refused and a progress bar would mix
    /// with the output).
    terminal: bool,
    /// For a regular file: the file to replace and the temporary file that becomes it.
    replace: Option<(PathBuf, NamedTempFile)>,
    /// For what is written in place (standard output, a device or pipe): its file, for a
    /// signal's handler to write a broken end to ([`Output::end_broken_on_signal`]).
    in_place: Option<fs::File>,
    /// Once a broken end is registered: held by each write, which flushes before letting go,
    /// so that the handler finds the output ended where a record ends (every write is of whole
    /// records), and writes nothing inside one.
    write_lock: Option<Arc<Mutex<()>>>,
}

impl Output {
    /// Standard output.
    pub fn stdout() -> Output {
        let in_place = io::stdout().as_fd().try_clone_to_owned().ok();
        Output {
            inner: BufWriter::with_capacity(BUFFER, Box::new(io::stdout().lock())),
            name: "standard output".into(),
            terminal: io::stdout().is_terminal(),
            replace: None,
            in_place: in_place.map(fs::File::from),
            write_lock: None,
        }
    }

    /// While the returned registration lives, a signal that ends the process (Ctrl-C, SIGTERM,
    /// SIGHUP: [`pgdict_trainer::interrupt`]) writes `mark` to an output written in place
    /// before it ends, as an error writes it ([`Output::end_broken`]): the output stops after
    /// a whole record, which a `COPY` reading a pipe takes for the end of the data, and
    /// commits (`timeout 60 pgdict compress ... --copy | psql -c "COPY ..."` loaded the rows
    /// read so far). Every write from here on must be of whole records: each is flushed under
    /// a lock the handler takes, so that the mark goes where a record ends (inside a quoted
    /// CSV field its quote would close the field, and the rows would load). The handler waits
    /// a second at most for the lock and for room in a pipe: a reader that stopped reading
    /// must not keep the signal from ending the process, which then ends where the output
    /// stands (inside a record, if a write was under way). A regular file written through a
    /// temporary one needs none of this (a signal removes it). Drop the registration once the
    /// output is finished.
    pub fn end_broken_on_signal(&mut self, mark: &[u8]) -> Option<Registration> {
        let file = self.in_place.take()?;
        // Whole records from here: what is buffered goes out first.
        self.inner.flush().ok()?;
        let lock = Arc::new(Mutex::new(()));
        self.write_lock = Some(lock.clone());
        let mark = mark.to_vec();
        Some(pgdict_trainer::interrupt::on_signal(move || {
            let Some(held) = lock_within(&lock, SIGNAL_WAIT) else {
                return; // A write is under way, and does not end.
            };
            if writable_within(&file, SIGNAL_WAIT) {
                // Nothing to say if it fails: the process is ending on the signal.
                let _ = (&file).write_all(&mark);
            }
            // Held until the process ends: nothing is written after the mark.
            std::mem::forget(held);
        }))
    }

    /// Ends an output that an error stopped half way with `mark`, which no reader of its form
    /// takes, so that what reads a stream (a pipe into `psql -c "COPY ... FROM STDIN"`, `pgdict
    /// decompress -`) fails too, rather than taking what came before the error for all of it.
    /// A regular file is not written at all then (it is dropped unfinished). A failure to
    /// write the mark is not reported: the error being reported says what went wrong.
    pub fn end_broken(&mut self, mark: &[u8]) {
        let _ = self.write_all(mark).and_then(|()| self.flush());
    }

    /// `path` (`-`: standard output), or standard output without one. `binary` refuses to
    /// write to a terminal: binary bytes there are of no use and can upset it.
    pub fn open(path: Option<&Path>, binary: bool, alternative: &str) -> anyhow::Result<Output> {
        let out = match path {
            Some(path) if path != Path::new("-") => Output::file(path)?,
            _ => Output::stdout(),
        };
        if binary && out.terminal {
            return Err(user_error(
                "refusing to write binary datums to a terminal",
                format!("write to a file with -o FILE, pipe the output, or {alternative}"),
            ));
        }
        Ok(out)
    }

    /// A file `flag` names that is written beside a report on standard output (`compare --svg`,
    /// `dict show --content`): made at once, so that a path that cannot be written fails
    /// before the work, and not `-`, which would mix it with the report.
    pub fn beside_report(path: &Path, flag: &str) -> anyhow::Result<Output> {
        if path == Path::new("-") {
            return Err(usage_error(
                format!("{flag} - would mix with the report on standard output"),
                format!("give {flag} a file name"),
            ));
        }
        Output::file(path)
    }

    /// [`Output::refuse_a_name_for_another_format`] for `--keep-columns`, which writes COPY
    /// data or CSV (in `compress` and `decompress` alike).
    pub fn refuse_a_name_for_kept_columns(output: Option<&Path>) -> anyhow::Result<()> {
        Output::refuse_a_name_for_another_format(
            output,
            Writes::Records,
            "--keep-columns",
            "name the output .copy (or .csv for CSV), or drop --keep-columns",
        )
    }

    /// Refuses an `-o` path whose name says another format (`.datums`, `.hex`, `.copy`,
    /// `.csv`, `.jsonl`, `.ndjson`, in any case) than what `command` writes: the file would
    /// mislead whoever opens it, and be read back as what its name says. Other names say
    /// nothing, and are taken.
    pub fn refuse_a_name_for_another_format(
        output: Option<&Path>,
        writes: Writes,
        command: &str,
        hint: &str,
    ) -> anyhow::Result<()> {
        let Some((path, extension)) =
            output.and_then(|path| Some((path, source::extension(path)?)))
        else {
            return Ok(());
        };
        let says = match extension.as_str() {
            "datums" => "a datums file",
            "hex" => "hex lines",
            "copy" => "COPY data",
            "csv" => "CSV",
            "jsonl" | "ndjson" => "JSON Lines",
            _ => return Ok(()),
        };
        let fits = match writes {
            Writes::Datums => extension == "datums",
            // Hex lines load as CSV (each line a bytea literal).
            Writes::HexLines => matches!(extension.as_str(), "hex" | "csv"),
            Writes::BinaryCopy => extension == "copy",
            Writes::Records => matches!(extension.as_str(), "copy" | "csv"),
            Writes::Lines => extension == "csv",
            Writes::JsonLines => matches!(extension.as_str(), "jsonl" | "ndjson"),
        };
        if fits {
            return Ok(());
        }
        Err(usage_error(
            format!(
                "{command} writes {}, but the name {} says {says}",
                writes.describe(),
                path.display()
            ),
            hint,
        ))
    }

    /// Refuses an `-o` path that is the input file itself (under any name: a hard link, a
    /// symbolic link, another spelling of its path). The output would replace the input once
    /// written, and `decompress --prefix` would cut its rows short for good; a named pipe or a
    /// device, written in place, is left to the user as a shell's `>` would.
    pub fn refuse_the_input(output: Option<&Path>, input: &Path) -> anyhow::Result<()> {
        let Some(output) = output else {
            return Ok(());
        };
        let stdin = input == Path::new("-");
        let input_metadata = if stdin {
            // Standard input redirected from a file (`< rows.txt`).
            io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .and_then(|fd| fs::File::from(fd).metadata())
        } else {
            fs::metadata(input)
        };
        let (Ok(out), Ok(inp)) = (fs::metadata(output), input_metadata) else {
            return Ok(());
        };
        if out.is_file() && (out.dev(), out.ino()) == (inp.dev(), inp.ino()) {
            let input = if stdin {
                "file on standard input".to_string()
            } else {
                input.display().to_string()
            };
            return Err(user_error(
                format!(
                    "the output {} is the input {input}: writing it would replace what is being \
                     read",
                    output.display(),
                ),
                "write to another file (-o), then rename it if you want it in the input's place",
            ));
        }
        Ok(())
    }

    /// Refuses an output file in `input` where that is a directory whose files are the rows
    /// (`compress DIR`): it would be read as a row the next time (a file that is there as the
    /// command starts is one already). Standard output (`-`) and what is not a regular file (a
    /// named pipe, which the directory's reader passes over) are not refused.
    pub fn refuse_a_file_in_the_rows(output: Option<&Path>, input: &Path) -> anyhow::Result<()> {
        let Some(output) = output.filter(|output| *output != Path::new("-")) else {
            return Ok(());
        };
        let Some(dir_metadata) = fs::metadata(input).ok().filter(fs::Metadata::is_dir) else {
            return Ok(());
        };
        if fs::metadata(output).is_ok_and(|out| !out.is_file()) {
            return Ok(());
        }
        // The name given, and the file written where a symbolic link leads: either is read.
        let written = fs::canonicalize(output).unwrap_or_else(|_| match fs::read_link(output) {
            // A link to a file not made yet.
            Ok(target) => output.parent().unwrap_or(Path::new("")).join(target),
            Err(_) => output.to_path_buf(),
        });
        let in_dir = |path: &Path| {
            fs::metadata(directory_of(path)).is_ok_and(|parent| {
                (parent.dev(), parent.ino()) == (dir_metadata.dev(), dir_metadata.ino())
            })
        };
        if in_dir(output) || in_dir(&written) {
            return Err(user_error(
                format!(
                    "the output {} is in the input directory {}, each of whose files is read as a \
                     row: it would be read as one",
                    output.display(),
                    input.display(),
                ),
                "write to a file outside the directory (-o)",
            ));
        }
        Ok(())
    }

    /// Whether this output is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The output at `path`: a regular file (or a new one) through a temporary file in its
    /// directory (so that the final rename stays within one file system), anything else in
    /// place.
    ///
    /// A dictionary store's file is never written: not under a name a directory store reads
    /// (`00000001.pgdict`, `00000001.retired`), nor over a file that is a dictionary (it may be
    /// the only copy of one that datums name).
    pub fn file(path: &Path) -> anyhow::Result<Output> {
        let name = path.display().to_string();
        let cannot_create = || format!("cannot create {name}");
        if pgdict::dict::dir_store::names_a_store_file(path) {
            return Err(user_error(
                format!(
                    "{name} is named as a dictionary store's file: written in a store, it would \
                     replace, add or retire a dictionary"
                ),
                "write to a file of another name",
            ));
        }
        // Follows a symbolic link; a dangling one is a new file, as for `File::create`.
        let existing = fs::metadata(path).ok();
        if let Some(metadata) = &existing {
            if metadata.is_dir() {
                return Err(user_error(
                    format!("{name} is a directory"),
                    "give the path of a file to write",
                ));
            }
            if metadata.is_file() && is_a_dictionary_file(path) {
                return Err(user_error(
                    format!(
                        "{name} is a pgdict dictionary file: writing it would destroy the \
                         dictionary, and every datum that names it could no longer be decoded"
                    ),
                    "write to another file",
                ));
            }
            if !metadata.is_file() {
                let device = OpenOptions::new()
                    .write(true)
                    .open(path)
                    .with_context(|| format!("cannot write to {name}"))?;
                return Ok(Output {
                    terminal: device.is_terminal(),
                    in_place: device.try_clone().ok(),
                    write_lock: None,
                    inner: BufWriter::with_capacity(BUFFER, Box::new(device)),
                    name,
                    replace: None,
                });
            }
        }
        let target = match existing {
            Some(_) => fs::canonicalize(path).with_context(cannot_create)?,
            None => path.to_path_buf(),
        };
        let dir = directory_of(&target);
        remove_unfinished_on_signals();
        // Held until the output is made and its temporary file listed (on an error before
        // that, the temporary file is removed as it is dropped).
        let mut unfinished = unfinished();
        // Made with our own `open`, whose error is the system's alone (`tempfile_in` adds the
        // temporary file's path to it, a name the user never gave).
        let temp = tempfile::Builder::new()
            .prefix(".pgdict-")
            .suffix(".tmp")
            .make_in(dir, |path| {
                // As `File::create` would: rw for all, less the umask (a temporary file's
                // default is owner-only).
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o666)
                    .open(path)
            });
        let temp = match temp {
            Ok(temp) => temp,
            // (Not for a directory that is there but takes no new file by that answer: /proc.)
            Err(e) if e.kind() == io::ErrorKind::NotFound && !dir.is_dir() => {
                return Err(user_error(
                    format!(
                        "cannot create {name}: there is no directory {}",
                        dir.display()
                    ),
                    "create the directory first, or give a path in one that exists",
                ))
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(Hint(
                        "the output is written to a new file in its directory, then renamed \
                         over it: the directory must be writable"
                            .into(),
                    ))
                    .context(format!("cannot create a file in {}", dir.display()))
                    .context(cannot_create()))
            }
        };
        if let Some(metadata) = existing {
            keep_owner(temp.as_file(), &metadata);
            // After the owner: a change of owner clears the set-user-id and set-group-id bits.
            temp.as_file()
                .set_permissions(metadata.permissions())
                .with_context(cannot_create)?;
        }
        let writer = temp.reopen().with_context(cannot_create)?;
        unfinished.push(temp.path().to_path_buf());
        Ok(Output {
            inner: BufWriter::with_capacity(BUFFER, Box::new(writer)),
            name,
            terminal: false,
            replace: Some((target, temp)),
            in_place: None,
            write_lock: None,
        })
    }

    /// What the output is, for messages.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Flushes everything written; a regular file is synced to disk and then takes the place
    /// of whatever was at its path.
    pub fn finish(mut self) -> anyhow::Result<()> {
        let name = self.name();
        Write::flush(&mut self).with_context(|| format!("cannot write to {name}"))?;
        if let Some((_, temp)) = &self.replace {
            // On failure, dropping `self` removes the temporary file.
            temp.as_file()
                .sync_all()
                .with_context(|| format!("cannot write to {name}"))?;
        }
        if let Some((target, temp)) = self.replace.take() {
            // On failure the temporary file is removed (dropped with the error).
            unlist(temp, |temp| temp.persist(&target).map_err(|e| e.error))
                .with_context(|| format!("cannot replace {name}"))?;
        }
        Ok(())
    }
}

impl Drop for Output {
    /// An unfinished file's temporary file is removed (by `NamedTempFile`'s own drop).
    fn drop(&mut self) {
        if let Some((_, temp)) = self.replace.take() {
            unlist(temp, drop);
        }
    }
}

/// The directory a file at `path` is in: its parent, `.` for a bare name.
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Whether the file at `path` starts as a dictionary file does ([`pgdict::dict::file::MAGIC`]).
/// A file that cannot be read is not known to be one (writing it will say why it fails).
fn is_a_dictionary_file(path: &Path) -> bool {
    let mut start = [0; pgdict::dict::file::MAGIC.len()];
    fs::File::open(path)
        .and_then(|mut file| io::Read::read_exact(&mut file, &mut start))
        .is_ok_and(|()| start == pgdict::dict::file::MAGIC)
}

/// Settles a temporary file (`settle` renames it over its file, or drops it, which removes
/// it) and takes it off the list of unfinished ones, under the list's lock: a signal's handler
/// removes it before, or finds it gone.
fn unlist<T>(temp: NamedTempFile, settle: impl FnOnce(NamedTempFile) -> T) -> T {
    let mut unfinished = unfinished();
    let path = temp.path().to_path_buf();
    let settled = settle(temp);
    unfinished.retain(|listed| *listed != path);
    settled
}

/// Bytes buffered before a write.
const BUFFER: usize = 1 << 16;

/// A write that failed, naming the output: what a report's `writeln!(out, ...)?` returns, so
/// that the message says where it could not write (not a bare "No space left on device").
#[derive(Debug)]
struct WriteFailed {
    name: String,
    source: io::Error,
}

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write to {}", self.name)
    }
}

impl std::error::Error for WriteFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl Output {
    /// `error`, naming this output; of the same kind, so that a closed pipe stays one.
    fn named(&self, error: io::Error) -> io::Error {
        let kind = error.kind();
        io::Error::new(
            kind,
            WriteFailed {
                name: self.name.clone(),
                source: error,
            },
        )
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.write_lock.is_some() {
            return self.write_all(buf).map(|()| buf.len());
        }
        self.inner.write(buf).map_err(|e| self.named(e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.write_pieces(&[buf])
    }

    fn flush(&mut self) -> io::Result<()> {
        self.locked(|inner| inner.flush())
    }
}

impl Output {
    /// Writes `pieces` one after the other as one write: under the write lock once, flushed
    /// after the last, so that a signal's broken end ([`Output::end_broken_on_signal`]) comes
    /// before or after them all. A record may span two pieces: a datum's length, then the
    /// datum handed over whole ([`crate::in_order::Pieces`]).
    pub fn write_pieces(&mut self, pieces: &[impl AsRef<[u8]>]) -> io::Result<()> {
        let flush = self.write_lock.is_some();
        self.locked(|inner| {
            for piece in pieces {
                inner.write_all(piece.as_ref())?;
            }
            match flush {
                true => inner.flush(),
                false => Ok(()),
            }
        })
    }

    /// Runs `write` on the buffered writer, under the write lock where there is one (then
    /// `write` must leave nothing buffered: see `end_broken_on_signal`), its error naming
    /// the output.
    fn locked(
        &mut self,
        write: impl FnOnce(&mut BufWriter<Box<dyn Write>>) -> io::Result<()>,
    ) -> io::Result<()> {
        let held = (self.write_lock.as_ref())
            .map(|lock| lock.lock().unwrap_or_else(PoisonError::into_inner));
        let written = write(&mut self.inner);
        drop(held);
        written.map_err(|e| self.named(e))
    }
}

/// How long a signal's handler waits for a write under way to end, and then for room in a
/// pipe, before the process ends without the broken end ([`Output::end_broken_on_signal`]).
const SIGNAL_WAIT: Duration = Duration::from_secs(1);

/// `lock`, if it can be had within `wait`.
fn lock_within(lock: &Mutex<()>, wait: Duration) -> Option<MutexGuard<'_, ()>> {
    let start = Instant::now();
    loop {
        match lock.try_lock() {
            Ok(held) => return Some(held),
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

/// Whether `file` takes a short write without blocking within `wait` (a pipe with room: a
/// write of less than `PIPE_BUF` bytes then goes in whole).
fn writable_within(file: &fs::File, wait: Duration) -> bool {
    let mut poll = [PollFd::new(file, PollFlags::OUT)];
    let wait = Timespec::try_from(wait).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    });
    matches!(rustix::event::poll(&mut poll, Some(&wait)), Ok(ready) if ready > 0)
        && poll[0].revents().contains(PollFlags::OUT)
}

/// Gives the file that replaces another that file's owner and group, as far as allowed: root
/// replacing a user's file must not leave it root's. Without the right (not root), the group
/// alone is tried, then nothing: the new file is then the writer's, no reason to fail.
fn keep_owner(file: &fs::File, old: &fs::Metadata) {
    if fchown(file, Some(old.uid()), Some(old.gid())).is_err() {
        fchown(file, None, Some(old.gid())).ok();
    }
}

/// Writes `bytes` as a bytea hex literal line: `\x09616263`.
pub fn write_hex_line(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let mut line = vec![0; 3 + 2 * bytes.len()];
    let (start, rest) = line.split_at_mut(2);
    let (digits, end) = rest.split_at_mut(2 * bytes.len());
    start.copy_from_slice(b"\\x");
    const_hex::encode_to_slice(bytes, digits).map_err(io::Error::other)?;
    end[0] = b'\n';
    out.write_all(&line)
}

/// Turns `bytes` into their hex digits, two lowercase ones a byte (what [`write_hex_line`]
/// writes between `\x` and the line feed, and COPY text and CSV after `\x`), in their own
/// buffer: for a large datum, which its digits are then handed over in, where writing them out
/// of it held the datum, its digits and their copy in the batch's bytes at once. The digits are
/// written from the end back, a chunk at a time, each chunk's bytes copied aside first: a
/// byte's digits never land on a byte not yet read (those are all before them). The buffer
/// grows by reallocation, which for a large one moves its pages rather than copying them.
pub fn make_hex_digits_in_place(bytes: &mut Vec<u8>) {
    const CHUNK: usize = 64 * 1024;
    let len = bytes.len();
    bytes.reserve_exact(len);
    bytes.resize(2 * len, 0);
    let mut chunk = vec![0; CHUNK.min(len)];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let chunk = &mut chunk[..end - start];
        chunk.copy_from_slice(&bytes[start..end]);
        const_hex::encode_to_slice(chunk, &mut bytes[2 * start..2 * end])
            .expect("the slice holds two digits a byte");
        end = start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_made_in_place_are_the_digits_written() {
        // Lengths around the chunk of 64 KiB, every byte value in them.
        for len in [0, 1, 2, 255, 65_535, 65_536, 65_537, 3 * 65_536 + 5] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 256) as u8).collect();
            let mut written = Vec::new();
            write_hex_line(&mut written, &bytes).unwrap();
            let mut digits = bytes.clone();
            make_hex_digits_in_place(&mut digits);
            assert!(digits == written[2..written.len() - 1], "{len} bytes");
        }
    }

    #[test]
    fn an_output_name_that_says_another_format_is_refused() {
        use Writes::*;
        // What each name says, and which of the writers it fits; other names say nothing.
        let names = [
            ("x.datums", "a datums file", &[Datums][..]),
            ("x.HEX", "hex lines", &[HexLines]),
            ("x.copy", "COPY data", &[BinaryCopy, Records]),
            ("x.csv", "CSV", &[HexLines, Records, Lines]),
            ("x.jsonl", "JSON Lines", &[JsonLines]),
            ("x.ndjson", "JSON Lines", &[JsonLines]),
        ];
        let writers = [Datums, HexLines, BinaryCopy, Records, Lines, JsonLines];
        let refusal = |name: &str, writes| {
            let result = Output::refuse_a_name_for_another_format(
                Some(Path::new(name)),
                writes,
                "it",
                "the hint",
            );
            result.err().map(|e| crate::fail::render(&e))
        };
        for (name, says, fits) in names {
            for writes in writers {
                match refusal(name, writes) {
                    None => assert!(fits.contains(&writes), "{name} taken for {writes:?}"),
                    Some(error) => {
                        assert!(!fits.contains(&writes), "{name} refused for {writes:?}");
                        let expected = format!(
                            "error: it writes {}, but the name {name} says {says}\n  hint: the \
                             hint\n",
                            writes.describe()
                        );
                        assert_eq!(error, expected);
                    }
                }
            }
        }
        for writes in writers {
            for name in ["x.txt", "x", "datums", "-"] {
                assert_eq!(refusal(name, writes), None, "{name}");
            }
        }
        let describe = writers.map(Writes::describe);
        let expected = [
            "a datums file",
            "hex lines",
            "binary COPY data",
            "COPY data or CSV",
            "lines of text",
            "JSON Lines",
        ];
        assert_eq!(describe, expected);
        let kept = Output::refuse_a_name_for_kept_columns(Some(Path::new("x.datums")));
        let error = crate::fail::render(&kept.unwrap_err());
        let says = "error: --keep-columns writes COPY data or CSV, but the name x.datums says";
        assert!(error.starts_with(says), "{error}");
        assert!(Output::refuse_a_name_for_kept_columns(Some(Path::new("x.csv"))).is_ok());
    }

    #[test]
    fn a_file_beside_a_report_is_not_standard_output() {
        let error = Output::beside_report(Path::new("-"), "--svg")
            .err()
            .unwrap();
        let error = crate::fail::render(&error);
        assert!(
            error.starts_with("error: --svg - would mix with the report"),
            "{error}"
        );
    }

    /// What reaches the file: each write, and whether the write lock was held then; flushes.
    #[derive(Debug, PartialEq)]
    enum Event {
        Write { len: usize, locked: bool },
        Flush,
    }

    struct Recorder {
        events: Arc<Mutex<Vec<Event>>>,
        lock: Arc<Mutex<()>>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let locked = matches!(self.lock.try_lock(), Err(TryLockError::WouldBlock));
            let event = Event::Write {
                len: buf.len(),
                locked,
            };
            self.events.lock().unwrap().push(event);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            self.events.lock().unwrap().push(Event::Flush);
            Ok(())
        }
    }

    /// An output named `name` of 16 bytes of buffer, written in place into `file`;
    /// `write_lock`: the write lock of a broken end registered.
    fn writing_to(
        name: &str,
        file: impl Write + 'static,
        write_lock: Option<Arc<Mutex<()>>>,
    ) -> Output {
        Output {
            inner: BufWriter::with_capacity(16, Box::new(file)),
            name: name.into(),
            terminal: false,
            replace: None,
            in_place: None,
            write_lock,
        }
    }

    /// An output whose file is a [`Recorder`], and what it records; `lock`: the write lock of
    /// a broken end registered.
    fn recorded(lock: Option<Arc<Mutex<()>>>) -> (Output, Arc<Mutex<Vec<Event>>>) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let recorder = Recorder {
            events: events.clone(),
            lock: lock.clone().unwrap_or_default(),
        };
        (writing_to("recorder", recorder, lock), events)
    }

    #[test]
    fn a_broken_end_is_written_after_what_came_and_flushed() {
        let (mut out, events) = recorded(None);
        out.write_all(b"rows").unwrap();
        out.end_broken(b"MARK!");
        let write = Event::Write {
            len: 9,
            locked: false,
        };
        assert_eq!(*events.lock().unwrap(), [write, Event::Flush]);
    }

    #[test]
    fn pieces_are_written_under_the_write_lock_as_one() {
        // A broken end registered (the write lock there): a datum's length, the datum handed
        // over (past the buffer, written straight through), then the next record's bytes.
        let (mut out, events) = recorded(Some(Arc::default()));
        let pieces = [vec![4; 4], vec![b'd'; 100], vec![b'n'; 3]];
        out.write_pieces(&pieces).unwrap();
        // The signal's handler could have come only before or after: no flush, no lock let
        // go, between the pieces (each written on its own, the length went out alone).
        let locked = |len| Event::Write { len, locked: true };
        assert_eq!(
            *events.lock().unwrap(),
            [locked(4), locked(100), locked(3), Event::Flush]
        );
    }

    /// The names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn listed_unfinished(dir: &Path) -> usize {
        unfinished()
            .iter()
            .filter(|path| path.starts_with(dir))
            .count()
    }

    #[test]
    fn a_file_is_replaced_whole_when_finished_and_left_as_it_was_when_not() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();

        // Dropped unfinished: the old file stays, its temporary file is gone and unlisted.
        let mut out = Output::file(&path).unwrap();
        out.write_all(b"half").unwrap();
        assert_eq!(
            listing(dir.path()).len(),
            2,
            "the temporary file is beside it"
        );
        assert_eq!(listed_unfinished(dir.path()), 1);
        drop(out);
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(listing(dir.path()), ["out.txt"]);
        assert_eq!(listed_unfinished(dir.path()), 0);

        // Finished: the new bytes, the old permissions, nothing beside it.
        let mut out = Output::file(&path).unwrap();
        assert!(!out.is_terminal());
        assert_eq!(out.name(), path.display().to_string());
        out.write_all(b"new").unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "old",
            "not before finishing"
        );
        out.finish().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(listing(dir.path()), ["out.txt"]);
        assert_eq!(listed_unfinished(dir.path()), 0);

        // A symbolic link: the file it names is replaced, the link stays.
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("out.txt", &link).unwrap();
        let mut out = Output::file(&link).unwrap();
        out.write_all(b"through the link").unwrap();
        out.finish().unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&path).unwrap(), "through the link");

        // A new file by a bare name is made in the current directory.
        assert_eq!(directory_of(Path::new("new.txt")), Path::new("."));
        assert_eq!(directory_of(&path), dir.path());
    }

    #[test]
    fn what_is_not_a_regular_file_is_written_in_place() {
        let mut out = Output::file(Path::new("/dev/null")).unwrap();
        out.write_all(b"gone").unwrap();
        assert!(out.replace.is_none() && out.in_place.is_some());
        out.finish().unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn a_directory_a_dictionary_and_a_store_name_are_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let error = |path: &Path| crate::fail::render(&Output::file(path).err().unwrap());
        assert!(error(dir.path()).contains("is a directory"));
        let dictionary = dir.path().join("my.dict");
        let mut bytes = pgdict::dict::file::MAGIC.to_vec();
        bytes.extend_from_slice(b"the rest");
        fs::write(&dictionary, &bytes).unwrap();
        assert!(error(&dictionary).contains("is a pgdict dictionary file"));
        assert_eq!(fs::read(&dictionary).unwrap(), bytes);
        let store_file = dir.path().join("00000001.pgdict");
        assert!(error(&store_file).contains("is named as a dictionary store's file"));
        let missing = dir.path().join("no-such-dir/out.txt");
        assert!(error(&missing).contains("there is no directory"));
        // Only the whole magic is a dictionary's: its first bytes alone are not.
        let short = dir.path().join("short.dict");
        fs::write(&short, &pgdict::dict::file::MAGIC[..4]).unwrap();
        Output::file(&short).unwrap().finish().unwrap();
        assert_eq!(fs::read(&short).unwrap(), b"");
        assert_eq!(listing(dir.path()), ["my.dict", "short.dict"]);
    }

    #[test]
    fn a_directory_that_is_there_but_takes_no_file_is_not_said_to_be_missing() {
        // /proc answers a new file's name with "not found".
        let error = crate::fail::render(&Output::file(Path::new("/proc/out.txt")).err().unwrap());
        assert!(error.contains("cannot create a file in /proc"), "{error}");
        assert!(!error.contains("there is no directory"), "{error}");
    }

    #[test]
    fn no_output_is_written_among_the_rows_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("rows");
        fs::create_dir(&rows).unwrap();
        fs::write(rows.join("a.txt"), "a row").unwrap();
        let refused = |output: &Path, input: &Path| {
            Output::refuse_a_file_in_the_rows(Some(output), input)
                .err()
                .map(|e| crate::fail::render(&e))
        };
        // New or there, by its name or where a link outside leads.
        std::os::unix::fs::symlink(rows.join("new.datums"), dir.path().join("into.datums"))
            .unwrap();
        for output in ["rows/out.datums", "rows/a.txt", "into.datums"] {
            let error = refused(&dir.path().join(output), &rows).expect(output);
            assert!(error.contains("is in the input directory"), "{error}");
        }
        // Elsewhere, standard output, no directory of rows, or no regular file among them (a
        // named pipe, which the reader passes over): not refused.
        let fifo = rows.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let a_row = rows.join("a.txt");
        let taken = [
            (dir.path().join("out.datums"), &rows),
            (PathBuf::from("-"), &rows),
            (rows.join("out.datums"), &a_row),
            (fifo, &rows),
        ];
        for (output, input) in taken {
            assert_eq!(refused(&output, input), None, "{}", output.display());
        }
        assert!(Output::refuse_a_file_in_the_rows(None, &rows).is_ok());
    }

    /// A file that takes no write.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(28)) // ENOSPC
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_names_the_output_and_keeps_its_kind() {
        let mut out = writing_to("full.txt", Full, None);
        let errors = [
            out.write(b"past the 16 bytes of buffer").unwrap_err(),
            out.write_all(b"past the 16 bytes of buffer").unwrap_err(),
        ];
        for error in errors {
            assert_eq!(error.kind(), io::ErrorKind::StorageFull);
            assert_eq!(error.to_string(), "cannot write to full.txt");
            let source = std::error::Error::source(error.get_ref().unwrap()).unwrap();
            assert_eq!(
                source.to_string(),
                io::Error::from_raw_os_error(28).to_string()
            );
        }
    }

    #[test]
    fn a_lock_is_had_within_the_wait_or_not_at_all() {
        let lock = Mutex::new(());
        assert!(lock_within(&lock, Duration::ZERO).is_some());
        let held = lock.lock().unwrap();
        let start = Instant::now();
        assert!(lock_within(&lock, Duration::from_millis(50)).is_none());
        assert!(start.elapsed() >= Duration::from_millis(50));
        drop(held);
        // A panic while it was held leaves it to be had.
        let poisoned = Arc::new(Mutex::new(()));
        let holder = poisoned.clone();
        std::thread::spawn(move || {
            let _held = holder.lock().unwrap();
            panic!("poisons the lock");
        })
        .join()
        .unwrap_err();
        assert!(lock_within(&poisoned, Duration::ZERO).is_some());
    }

    #[test]
    fn a_pipe_is_writable_while_it_has_room() {
        let (reader, writer) = io::pipe().unwrap();
        let writer = fs::File::from(std::os::fd::OwnedFd::from(writer));
        assert!(writable_within(&writer, Duration::ZERO));
        // A page at a time, each taking a free one of the pipe's pages whole: no write blocks.
        let mut pages = 0;
        while writable_within(&writer, Duration::ZERO) {
            (&writer).write_all(&[0; 4096]).unwrap();
            pages += 1;
        }
        assert!(pages > 0);
        let start = Instant::now();
        assert!(!writable_within(&writer, Duration::from_millis(20)));
        assert!(start.elapsed() >= Duration::from_millis(20));
        // Nor once its reader is gone (an error is ready on it: no room, though).
        drop(reader);
        assert!(!writable_within(&writer, Duration::ZERO));
    }
}
