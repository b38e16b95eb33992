//! Errors a person can act on: a title (what failed), the details (why, from the libraries'
//! errors), and a hint (what to do next), on standard error:
//!
//! ```text
//! error: cannot open the dictionary store
//!   detail: dictionary store: dicts is not a dictionary store: no such directory (...)
//!   hint: create one with `pgdict demo`, or point --store (or PGDICT_STORE) at a store
//! ```
//!
//! Commands build errors with `anyhow` context: the outermost message is the title, the ones
//! beneath it the details. A hint comes from a [`Hint`] context a command attached, or else from
//! what the error is ([`known_hint`]: a missing store, an unknown dictionary id, a file that is
//! not there, ...). A broken pipe (the reader of our output went away, as `| head` does) is
//! not an error: the exit status is 0 and nothing is printed.

use std::fmt;
use std::io;

use pgdict::datum::DatumError;
use pgdict::dict::StoreError;
use pgdict_trainer::source::SourceError;

/// Exit status of an error.
pub const STATUS_ERROR: u8 = 1;
/// Exit status of a usage error: flags that do not go together (clap's own errors exit 2 too).
pub const STATUS_USAGE: u8 = 2;
/// Exit status of `dict sync` refusing because the stores diverged.
pub const STATUS_CONFLICT: u8 = 4;

/// A hint, attached to an error as context: `.context(Hint("..."))`. It is printed after the
/// details, never as one of them.
#[derive(Debug)]
pub struct Hint(pub String);

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Attaches a hint to a result's error.
pub trait HintExt<T> {
    /// Adds `hint` to the error (the innermost hint wins over what [`known_hint`] would say,
    /// an outer one over an inner one).
    fn hint(self, hint: impl Into<String>) -> anyhow::Result<T>;
}

impl<T, E> HintExt<T> for Result<T, E>
where
    E: Into<anyhow::Error>,
{
    fn hint(self, hint: impl Into<String>) -> anyhow::Result<T> {
        self.map_err(|e| e.into().context(Hint(hint.into())))
    }
}

/// An error made by the CLI itself, with its hint: `Err(user_error("title", "hint"))`.
pub fn user_error(title: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::msg(title.into()).context(Hint(hint.into()))
}

/// Flags that do not go together, which clap cannot tell: exits 2, as clap's errors do.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A [`UsageError`] with its hint.
pub fn usage_error(title: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(title.into())).context(Hint(hint.into()))
}

/// Whether the error is (or was caused by) a write to a closed pipe, also one that
/// `serde_json::to_writer` met (its error holds the I/O error, which its `source` skips).
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let kind = match cause.downcast_ref::<serde_json::Error>() {
            Some(json) => json.io_error_kind(),
            None => cause.downcast_ref::<io::Error>().map(io::Error::kind),
        };
        kind == Some(io::ErrorKind::BrokenPipe)
    })
}

/// Prints the error (unless it is a broken pipe) and returns the exit status.
pub fn report(error: &anyhow::Error) -> u8 {
    if is_broken_pipe(error) {
        return 0;
    }
    eprint!("{}", render(error));
    if error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<StoreError>(),
            Some(StoreError::Conflict { .. })
        )
    }) {
        return STATUS_CONFLICT;
    }
    if error.chain().any(|cause| cause.is::<UsageError>()) {
        return STATUS_USAGE;
    }
    STATUS_ERROR
}

/// The text [`report`] prints: `error: TITLE`, a `detail:` line per cause that adds something,
/// and a `hint:` line.
pub fn render(error: &anyhow::Error) -> String {
    let hint = error
        .downcast_ref::<Hint>()
        .map(|h| h.0.clone())
        .or_else(|| known_hint(error));
    let mut messages: Vec<String> = Vec::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if hint.as_deref() == Some(text.as_str()) {
            // A Hint context layer (the chain shows a context as its text).
            continue;
        }
        // Libraries often repeat their cause at the end of their own message: say it once.
        if messages.last().is_some_and(|prev| prev.contains(&text)) {
            continue;
        }
        messages.push(text);
    }
    let mut out = String::new();
    let mut parts = messages.into_iter();
    out.push_str(&format!(
        "error: {}\n",
        parts.next().unwrap_or_else(|| "unknown error".into())
    ));
    for detail in parts {
        out.push_str(&format!("  detail: {detail}\n"));
    }
    if let Some(hint) = hint {
        out.push_str(&format!("  hint: {hint}\n"));
    }
    out
}

/// What to do about a PostgreSQL store's row that is not what was stored.
const PG_ROW_CHANGED: &str = "the row was changed behind the store's triggers (by the tables' \
     owner or a superuser), and pgdict never rewrites a PostgreSQL store's row: restore it from \
     a backup of the table; the other dictionaries still work";

/// What to do after the PostgreSQL store's connection string was refused, or one of its
/// statements failed (a failure to connect is [`StoreError::Connect`]), by what was being
/// done and the SQLSTATE.
fn postgres_hint(what: &str, message: &str) -> &'static str {
    if what == "reading the connection string" {
        "give a libpq connection string (host=... dbname=...) or URL (postgresql://...), as \
         psql takes it"
    } else if message.contains("(SQLSTATE 42501)") {
        "the role lacks a privilege the store needs: USAGE on the schema pgdict and SELECT on \
         its two tables to read; to add, INSERT and UPDATE on pgdict.dictionaries (adding locks \
         it in a mode that needs UPDATE, which its triggers refuse); to retire, INSERT on \
         pgdict.retired; CREATE on the database for the first open, which makes them"
    } else if what == "opening the store" {
        "pgdict creates its schema itself and opens only a store it made: point the connection \
         string at the database that holds it, or at one without a schema pgdict"
    } else if message.contains("SQLSTATE") {
        "the server refused the statement: its message and SQLSTATE above say why"
    } else {
        "the connection to the server failed: check that the server is still up and reachable"
    }
}

/// What to do about a store's error, where there is something to do.
fn store_hint(error: &StoreError) -> Option<&'static str> {
    Some(match error {
        StoreError::NotAStore { .. } => {
            "create a store with `pgdict demo` (it trains two dictionaries into ./dicts), or \
             point --store (or PGDICT_STORE) at an existing one"
        }
        StoreError::NotFound { .. } => {
            "`pgdict dict list` shows the ids this store holds; `pgdict dict sync --from DIR` \
             copies dictionaries from another store"
        }
        StoreError::Conflict { .. } | StoreError::Exists { .. } => {
            "the stores have diverged: each gave these ids to a different dictionary, and the \
             datums written with either name it by id: keep both stores whole (deleting a \
             dictionary loses its datums), decode each side's datums with its own store, and \
             from now on add dictionaries on one side only and sync from it"
        }
        StoreError::RowChanged { .. } => PG_ROW_CHANGED,
        StoreError::Damaged { .. } | StoreError::IdMismatch { .. } => {
            "mend it from a store that holds it intact: `pgdict dict sync --from DIR --repair` \
             (or --from-pg CONNINFO); without one, `pgdict dict retire ID` stops --dict auto \
             from choosing it (datums that name it cannot be decoded until it is mended), and \
             --dict ID chooses another"
        }
        StoreError::Claimed { .. } => {
            "another pgdict may be putting that id in the store now: run it again in a moment; \
             if none is running, the claim was left by one that was killed, and removing the \
             claim file named above lets the id in"
        }
        StoreError::TooMuchContention { .. } => {
            "other processes kept adding to the store at the same time: run it again"
        }
        StoreError::IdsExhausted { .. } => {
            "a file or retirement marker with a huge id (made by hand?) takes the ids after it: \
             list the store's directory for the highest-numbered name"
        }
        StoreError::Connect { hint, .. } => hint,
        StoreError::Postgres { what, message, .. } => postgres_hint(what, message),
        _ => return None,
    })
}

/// What to do next, for the errors whose remedy does not depend on the command.
fn known_hint(error: &anyhow::Error) -> Option<String> {
    for cause in error.chain() {
        if let Some(hint) = cause.downcast_ref::<StoreError>().and_then(store_hint) {
            return Some(hint.into());
        }
        let hint = match cause.downcast_ref::<DatumError>() {
            Some(DatumError::MissingDictionary { .. }) => Some(
                "copy it from a store that has it: `pgdict dict sync --from DIR` (or --from-pg \
                 CONNINFO), or point --store at that store",
            ),
            Some(DatumError::ForeignDictionary { .. }) => Some(
                "decode with the store the datums were written with (--store, --pg-store); keep \
                 one store as the source of truth and copy from it with `pgdict dict sync`, \
                 which refuses stores that hold different dictionaries under one id",
            ),
            // The store's error is the reason, and its hint the remedy.
            Some(DatumError::DictionaryUnreadable { reason, .. }) => {
                reason.downcast_ref::<StoreError>().and_then(store_hint)
            }
            _ => None,
        };
        if let Some(hint) = hint {
            return Some(hint.into());
        }
        if let Some(hint) = cause
            .downcast_ref::<SourceError>()
            .and_then(SourceError::hint)
        {
            return Some(hint.into());
        }
        if let Some(e) = cause.downcast_ref::<io::Error>() {
            let hint = match e.kind() {
                io::ErrorKind::NotFound => "check the path (`-` reads standard input)",
                io::ErrorKind::PermissionDenied => {
                    "check the permissions of the file or directory named above"
                }
                io::ErrorKind::ReadOnlyFilesystem => {
                    "the file system named above is mounted read-only"
                }
                io::ErrorKind::IsADirectory => {
                    "the path named above is a directory, where a file is needed"
                }
                _ => continue,
            };
            return Some(hint.into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;
    use pgdict::datum::LookupFailure;
    use pgdict::dict::{Conflict, FormatError};

    #[test]
    fn title_details_and_hint() {
        let io = io::Error::new(io::ErrorKind::NotFound, "No such file or directory");
        let err = Err::<(), _>(io)
            .context("cannot read rows.txt")
            .context("cannot compress")
            .unwrap_err();
        assert_eq!(
            render(&err),
            "error: cannot compress\n  detail: cannot read rows.txt\n  detail: No such file \
             or directory\n  hint: check the path (`-` reads standard input)\n"
        );
    }

    #[test]
    fn explicit_hint_wins_and_is_not_a_detail() {
        let err = Err::<(), _>(io::Error::other("boom"))
            .context("inner")
            .hint("do this")
            .map_err(|e| e.context("outer"))
            .unwrap_err();
        assert_eq!(
            render(&err),
            "error: outer\n  detail: inner\n  detail: boom\n  hint: do this\n"
        );
    }

    #[test]
    fn repeated_cause_is_said_once() {
        let err =
            anyhow::Error::new(io::Error::other("disk full")).context("cannot write x: disk full");
        assert_eq!(render(&err), "error: cannot write x: disk full\n");
    }

    /// The hint line [`render`] prints for `error`, if any.
    fn hint_of(error: impl Into<anyhow::Error>) -> Option<String> {
        let error = error.into().context("cannot do it");
        render(&error)
            .lines()
            .find_map(|line| line.strip_prefix("  hint: "))
            .map(str::to_owned)
    }

    /// Asserts that `error` is rendered with a hint that starts with `start`.
    fn assert_hint(error: impl Into<anyhow::Error> + fmt::Debug, start: &str) {
        let described = format!("{error:?}");
        let hint = hint_of(error);
        assert!(
            hint.as_deref().is_some_and(|h| h.starts_with(start)),
            "{described}: hint {hint:?}, expected one starting {start:?}"
        );
    }

    fn store() -> String {
        "directory store dicts".into()
    }

    /// Dictionary `id`'s file, damaged.
    fn damaged(id: u32) -> StoreError {
        StoreError::Damaged {
            location: format!("dicts/{id:08}.pgdict"),
            error: FormatError::UnknownVersion { version: 9 },
        }
    }

    fn postgres(what: &str, message: &str) -> StoreError {
        StoreError::Postgres {
            store: "PostgreSQL store host=db".into(),
            what: what.into(),
            message: message.into(),
        }
    }

    #[test]
    fn each_store_error_has_its_remedy() {
        let diverged = "the stores have diverged";
        let mend = "mend it from a store that holds it intact";
        let cases: Vec<(StoreError, &str)> = vec![
            (
                StoreError::NotAStore {
                    path: "dicts".into(),
                    reason: "no such directory".into(),
                },
                "create a store with `pgdict demo`",
            ),
            (
                StoreError::NotFound {
                    id: 7,
                    store: store(),
                },
                "`pgdict dict list` shows the ids",
            ),
            (
                StoreError::Conflict {
                    from: "a".into(),
                    to: "b".into(),
                    conflicts: vec![Conflict {
                        id: 1,
                        from_sha256: [1; 32],
                        to_sha256: [2; 32],
                    }],
                },
                diverged,
            ),
            (
                StoreError::Exists {
                    id: 1,
                    store: store(),
                    theirs: [1; 32],
                    ours: [2; 32],
                },
                diverged,
            ),
            (
                StoreError::RowChanged {
                    location: "row 1".into(),
                    stored: [1; 32],
                    computed: [2; 32],
                },
                PG_ROW_CHANGED,
            ),
            (damaged(1), mend),
            (
                StoreError::IdMismatch {
                    location: "dicts/00000002.pgdict".into(),
                    filed: 2,
                    inside: 1,
                },
                mend,
            ),
            (
                StoreError::Claimed {
                    id: 3,
                    store: store(),
                    claim: "dicts/.tmp-claim-00000003".into(),
                },
                "another pgdict may be putting that id",
            ),
            (
                StoreError::TooMuchContention {
                    store: store(),
                    attempts: 64,
                },
                "other processes kept adding",
            ),
            (
                StoreError::IdsExhausted { store: store() },
                "a file or retirement marker with a huge id",
            ),
            (
                StoreError::Connect {
                    store: store(),
                    message: "refused".into(),
                    hint: "start the server",
                },
                "start the server",
            ),
            (
                StoreError::Io {
                    op: "read",
                    path: "dicts".into(),
                    source: io::Error::from(io::ErrorKind::PermissionDenied),
                },
                "check the permissions",
            ),
        ];
        for (error, start) in cases {
            assert_hint(error, start);
        }
        // Nothing to say beyond the message.
        let read_only = StoreError::ReadOnly {
            store: store(),
            reason: "the server is a standby".into(),
        };
        assert_eq!(hint_of(read_only), None);
        assert_eq!(
            hint_of(StoreError::Invalid(FormatError::UnknownVersion {
                version: 9
            })),
            None
        );
    }

    #[test]
    fn a_postgres_stores_remedy_follows_what_failed() {
        let privilege = "the role lacks a privilege";
        let cases = [
            (
                "reading the connection string",
                "invalid",
                "give a libpq connection string",
            ),
            // A missing privilege, whatever was being done.
            (
                "opening the store",
                "permission denied (SQLSTATE 42501)",
                privilege,
            ),
            (
                "adding a dictionary",
                "permission denied (SQLSTATE 42501)",
                privilege,
            ),
            (
                "opening the store",
                "relation exists (SQLSTATE 42P07)",
                "pgdict creates its schema",
            ),
            (
                "opening the store",
                "connection closed",
                "pgdict creates its schema",
            ),
            (
                "adding a dictionary",
                "deadlock (SQLSTATE 40P01)",
                "the server refused",
            ),
            (
                "adding a dictionary",
                "connection closed",
                "the connection to the server failed",
            ),
        ];
        for (what, message, start) in cases {
            assert_hint(postgres(what, message), start);
        }
    }

    #[test]
    fn a_datums_missing_dictionary_has_its_remedy() {
        assert_hint(
            DatumError::MissingDictionary {
                id: 4,
                store: store(),
            },
            "copy it from a store that has it",
        );
        assert_hint(
            DatumError::ForeignDictionary {
                id: 4,
                codec: pgdict::datum::Codec::Lz4,
                built_for: pgdict::dict::CodecSet::ALL,
                store: store(),
            },
            "decode with the store the datums were written with",
        );
        let unreadable = |reason: LookupFailure| DatumError::DictionaryUnreadable {
            id: 4,
            store: store(),
            reason,
        };
        assert_hint(
            unreadable(LookupFailure::new(damaged(4))),
            "mend it from a store that holds it intact",
        );
        assert_eq!(hint_of(unreadable(LookupFailure::new("gone"))), None);
    }

    #[test]
    fn a_sources_error_has_its_own_hint() {
        let bad_json = SourceError::BadJson {
            origin: "rows.jsonl".into(),
            line: 3,
            message: "expected value".into(),
        };
        assert_hint(bad_json, "each line of a JSON Lines file");
    }

    #[test]
    fn a_file_systems_error_has_a_hint_by_its_kind() {
        use io::ErrorKind::*;
        let cases = [
            (NotFound, "check the path"),
            (PermissionDenied, "check the permissions"),
            (
                ReadOnlyFilesystem,
                "the file system named above is mounted read-only",
            ),
            (IsADirectory, "the path named above is a directory"),
        ];
        for (kind, start) in cases {
            assert_hint(io::Error::from(kind), start);
        }
        assert_eq!(hint_of(io::Error::from(WouldBlock)), None);
    }

    #[test]
    fn exit_status_by_what_failed() {
        let conflict = StoreError::Conflict {
            from: "a".into(),
            to: "b".into(),
            conflicts: Vec::new(),
        };
        assert_eq!(
            report(&anyhow::Error::new(conflict).context("cannot sync")),
            STATUS_CONFLICT
        );
        let usage = usage_error("--json and --svg do not go together", "give one");
        assert_eq!(report(&usage.context("cannot compare")), STATUS_USAGE);
        assert_eq!(report(&user_error("no rows", "give some")), STATUS_ERROR);
    }

    #[test]
    fn broken_pipe_is_success() {
        let err = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("cannot write to standard output");
        assert!(is_broken_pipe(&err));
        assert_eq!(report(&err), 0);
        // Met while writing JSON.
        let json = serde_json::Error::io(io::Error::from(io::ErrorKind::BrokenPipe));
        let err = anyhow::Error::new(json).context("cannot write to standard output");
        assert!(is_broken_pipe(&err));
        let json = serde_json::Error::io(io::Error::other("disk full"));
        assert!(!is_broken_pipe(&anyhow::Error::new(json)));
    }
}
