//! Dictionaries and the stores that keep them.
//!
//! A datum compressed with a dictionary names it by id (see [`crate::datum`]), so every node
//! that reads the datum must resolve that id, forever, to the same bytes. This module holds:
//!
//! - [`file`](mod@file): the dictionary file format and [`Dictionary`], the immutable record
//!   (id, codecs, creation time, training metadata, content, checksums) every store keeps.
//! - [`DirStore`]: the default store, a directory of files (`dicts/`, or `$PGDICT_STORE`).
#![cfg_attr(
    feature = "pg-store",
    doc = "- [`PgStore`] (feature `pg-store`, on by default): the same records in a PostgreSQL \
           table, so that physical standbys receive a dictionary, in WAL order, before any datum \
           that uses it."
)]
#![cfg_attr(
    not(feature = "pg-store"),
    doc = "- `PgStore` (feature `pg-store`, off in this build): the same records in a PostgreSQL \
           table."
)]
//! - [`sync()`]: copies dictionaries into a directory store from another directory store or
//!   from a PostgreSQL store, refusing (and changing nothing) when one id holds different
//!   content on the two sides; [`sync_with`] can also replace damaged files from the source.
//!
//! The rules every store keeps (`DESIGN.md`, "Dictionaries and the store"):
//!
//! - An id is never reused, not even after its dictionary is retired; a new dictionary gets
//!   the highest id ever used, plus one. Two writers never get the same id.
//! - A dictionary never changes once added. Retiring it only stops its use for compression:
//!   retired dictionaries still decode.
//! - Adding is atomic: a crash leaves either no dictionary or a complete, verified one.
//! - Loading verifies checksums and that the id inside a record is the id it is filed under.
//!
//! Both stores implement [`crate::datum::DictionaryLookup`], so a datum decodes straight
//! through a store:
//!
//! ```no_run
//! use pgdict::datum;
//! use pgdict::dict::DirStore;
//!
//! let store = DirStore::open(DirStore::default_path())?;
//! # let stored: Vec<u8> = Vec::new();
//! let value = datum::decode(&stored, &store)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::datum::{Codec, DatumError, LookupFailure, PreparedDictionary};

pub mod dir_store;
pub mod file;
#[cfg(feature = "pg-store")]
pub mod pg_store;
pub mod sync;

pub use dir_store::{DirStore, Inserted, Repaired};
pub use file::{CodecSet, Dictionary, FormatError, Gain, Metadata, Sha256Sum};
#[cfg(feature = "pg-store")]
pub use pg_store::{describe_pg_error, PgStore};
pub use sync::{sync, sync_into, sync_with, Conflict, Destination, SyncOptions, SyncReport};

/// One dictionary a store holds, as [`Store::entries`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreEntry {
    /// The dictionary's id.
    pub id: u32,
    /// Whether it is retired (still decodes, no longer used to compress).
    pub retired: bool,
}

/// What every store can do for a reader (and for [`sync()`]): list, load and describe.
pub trait Store {
    /// What the store is, for messages: its path, its server and table.
    fn describe(&self) -> String;

    /// Every dictionary the store holds, by increasing id.
    fn entries(&self) -> Result<Vec<StoreEntry>, StoreError>;

    /// The dictionary with this id, verified (checksums, id); [`StoreError::NotFound`] if the
    /// store does not hold it.
    fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError>;
}

/// Why a store operation failed. Messages name the store and the file or row involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file system operation failed.
    #[error("dictionary store: cannot {op} {}: {source}", .path.display())]
    Io {
        /// What was being done ("read", "create", "fsync", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The path given as a directory store is not a directory.
    #[error("dictionary store: {} is not a dictionary store: {reason}", .path.display())]
    NotAStore {
        /// The path.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// The store does not hold this id.
    #[error("dictionary store: dictionary {id} is not in {store}")]
    NotFound {
        /// The id asked for.
        id: u32,
        /// The store ([`Store::describe`]).
        store: String,
    },
    /// A stored dictionary is damaged: its bytes fail a check of the file format.
    #[error("dictionary store: {location} is damaged: {error}")]
    Damaged {
        /// The file (or table row) holding it.
        location: String,
        /// What is wrong with it.
        error: FormatError,
    },
    /// A PostgreSQL store's row is not the record it was stored as: its fields (the id among
    /// them) do not hash to the file checksum kept with it.
    #[error(
        "dictionary store: {location} is not the dictionary it was stored as: its fields hash \
         to {}, the row keeps {} (changed, or given another id, behind the store's triggers)",
        file::hex(computed),
        file::hex(stored)
    )]
    RowChanged {
        /// The row.
        location: String,
        /// The file checksum kept in the row.
        stored: Sha256Sum,
        /// The file checksum of the row's fields.
        computed: Sha256Sum,
    },
    /// A stored dictionary's id is not the one it is filed under.
    #[error(
        "dictionary store: {location} holds dictionary {inside}, but is filed as dictionary \
         {filed} (a file renamed or copied by hand?)"
    )]
    IdMismatch {
        /// The file (or table row).
        location: String,
        /// The id it is filed under (its name, its row key).
        filed: u32,
        /// The id inside the record.
        inside: u32,
    },
    /// A dictionary given to a store is not valid (content too long, id 0, ...).
    #[error("dictionary store: cannot store this dictionary: {0}")]
    Invalid(FormatError),
    /// A dictionary could not be prepared for the codecs.
    #[error("dictionary store: cannot prepare dictionary {id} from {store}: {error}")]
    Prepare {
        /// Its id.
        id: u32,
        /// The store.
        store: String,
        /// What failed.
        error: DatumError,
    },
    /// Every id up to `u32::MAX` has been used.
    #[error(
        "dictionary store: {store} has used every dictionary id up to {}",
        u32::MAX
    )]
    IdsExhausted {
        /// The store.
        store: String,
    },
    /// Other writers kept taking the id this one chose.
    #[error(
        "dictionary store: gave up adding to {store} after {attempts} attempts: other writers \
         kept taking the id"
    )]
    TooMuchContention {
        /// The store.
        store: String,
        /// How many ids were tried.
        attempts: usize,
    },
    /// An id could not be put in a directory store because a claim on it is there (an add in
    /// progress, or one a crash interrupted).
    #[error(
        "dictionary store: cannot put dictionary {id} in {store}: {} claims the id (an add in \
         progress, or one that a crash interrupted: such a claim is removed once an hour old)",
        .claim.display()
    )]
    Claimed {
        /// The id.
        id: u32,
        /// The store.
        store: String,
        /// The claim file.
        claim: PathBuf,
    },
    /// The store cannot be written here (a PostgreSQL standby).
    #[error("dictionary store: {store} is read-only: {reason}")]
    ReadOnly {
        /// The store.
        store: String,
        /// Why.
        reason: String,
    },
    /// The store holds, under this id, another dictionary than the one being put there.
    #[error(
        "dictionary store: {store} already holds a different dictionary {id} (content sha256 \
         {} there, {} here)",
        file::hex(theirs),
        file::hex(ours)
    )]
    Exists {
        /// The id.
        id: u32,
        /// The store.
        store: String,
        /// Content SHA-256 of the dictionary in the store.
        theirs: Sha256Sum,
        /// Content SHA-256 of the dictionary being put.
        ours: Sha256Sum,
    },
    /// [`sync()`] found ids with different content on the two sides, and changed nothing.
    #[error(
        "dictionary sync: refused, nothing changed: {} id(s) hold different dictionaries in \
         {from} and {to}: {}; the stores have diverged (each added its own dictionaries under \
         the same ids): keep one of them as the source of truth",
        .conflicts.len(),
        sync::describe_conflicts(.conflicts)
    )]
    Conflict {
        /// The source store.
        from: String,
        /// The destination store.
        to: String,
        /// Every id in conflict.
        conflicts: Vec<Conflict>,
    },
    /// The store's PostgreSQL server could not be reached, or refused the connection.
    #[error("dictionary store: {store}: connecting: {message}")]
    Connect {
        /// The store.
        store: String,
        /// What the client or the server said.
        message: String,
        /// What to do next (`conninfo::ConnectError::hint`, with the `pg-store` feature).
        hint: &'static str,
    },
    /// The PostgreSQL server reported an error, or the connection failed.
    #[error("dictionary store: {store}: {what}: {message}")]
    Postgres {
        /// The store.
        store: String,
        /// What was being done.
        what: String,
        /// The server's message (severity, text, SQLSTATE, detail, hint) or the client's.
        message: String,
    },
}

/// A store's answer to [`DictionaryLookup::dictionary`](crate::datum::DictionaryLookup):
/// "not there" is `Ok(None)`; any other failure is the reason the dictionary cannot be read.
pub(crate) fn lookup_answer(
    prepared: Result<Arc<PreparedDictionary>, StoreError>,
) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
    match prepared {
        Ok(prepared) => Ok(Some(prepared)),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(LookupFailure::new(e)),
    }
}

/// The newest (highest id) dictionary in `store` that is not retired and was built for
/// `codec`: the one to compress with. A dictionary that fails to load is an error, not skipped.
pub(crate) fn newest_active(
    store: &impl Store,
    codec: Codec,
) -> Result<Option<Arc<Dictionary>>, StoreError> {
    for entry in store.entries()?.into_iter().rev() {
        if entry.retired {
            continue;
        }
        let dict = store.get(entry.id)?;
        if dict.codecs().contains(codec) {
            return Ok(Some(dict));
        }
    }
    Ok(None)
}

/// A store's dictionaries by id, as loaded (and verified) and as prepared for the codecs.
/// Dictionaries are immutable, so nothing in it is ever invalidated.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    dicts: Mutex<HashMap<u32, Arc<Dictionary>>>,
    prepared: Mutex<HashMap<u32, Arc<PreparedDictionary>>>,
}

impl Cache {
    /// The dictionary with this id: the cached one, else what `load` reads, then cached.
    /// (Two threads may both load it; the first to finish is kept, and both get that one.)
    pub(crate) fn get(
        &self,
        id: u32,
        load: impl FnOnce() -> Result<Dictionary, StoreError>,
    ) -> Result<Arc<Dictionary>, StoreError> {
        if let Some(dict) = lock(&self.dicts).get(&id) {
            return Ok(dict.clone());
        }
        let dict = load()?;
        Ok(lock(&self.dicts)
            .entry(id)
            .or_insert_with(|| Arc::new(dict))
            .clone())
    }

    /// Caches a dictionary the store has just written.
    pub(crate) fn insert(&self, dict: Arc<Dictionary>) {
        lock(&self.dicts).insert(dict.id(), dict);
    }

    /// Dictionary `id` of `store` prepared for every codec: built on first use, then cached.
    pub(crate) fn prepared(
        &self,
        store: &impl Store,
        id: u32,
    ) -> Result<Arc<PreparedDictionary>, StoreError> {
        if let Some(prepared) = lock(&self.prepared).get(&id) {
            return Ok(prepared.clone());
        }
        let dict = store.get(id)?;
        let prepared = dict.prepare().map_err(|error| StoreError::Prepare {
            id,
            store: store.describe(),
            error,
        })?;
        Ok(lock(&self.prepared)
            .entry(id)
            .or_insert_with(|| Arc::new(prepared))
            .clone())
    }
}

/// Locks a store's cache. A cache stays consistent whatever a panicking holder did (every
/// change is a single insert), so a poisoned lock is taken as it is.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
