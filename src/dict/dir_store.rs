//! The directory store: one dictionary file per id in a directory.
//!
//! The default store is the directory `dicts/` (relative to the working directory); the
//! environment variable `PGDICT_STORE` overrides it ([`DirStore::default_path`]), and the CLI's
//! flag overrides both.
//!
//! ```text
//!   dicts/
//!     00000001.pgdict       dictionary 1 (see [`crate::dict::file`] for the format)
//!     00000002.pgdict
//!     00000002.retired      dictionary 2 is retired (an empty marker file)
//!     .tmp-00000003-...     an add in progress, or one a crash interrupted (ignored)
//!     .damaged-00000004-... a damaged file that a repair replaced, kept as it was (ignored)
//! ```
//!
//! A dictionary's file name is its id in decimal, zero-padded to 8 digits (ids over 99999999
//! take the digits they need), then `.pgdict`. Nothing else is read as a dictionary: other
//! names, `1.pgdict` included, are ignored.
//!
//! # Adding, atomically and without id races
//!
//! [`DirStore::add`] takes the next id, one more than the highest id ever used (any
//! `.pgdict`, `.retired` or claim name: retired ids count, and the store never deletes a
//! dictionary or a marker), and:
//!
//! 1. writes the whole file to a new temporary file in the same directory (`.tmp-...`,
//!    created exclusively) and fsyncs it;
//! 2. claims the id: creates `.tmp-claim-<id>` (the id as in a file name) exclusively, which
//!    fails while another adder holds it;
//! 3. hard-links the temporary file to its final name. `link(2)` fails if the name exists;
//! 4. removes the claim and the temporary name, and fsyncs the directory, so the new name
//!    survives a crash.
//!
//! When step 2 or 3 finds the id taken, another process got there first: this adder rereads
//! the directory and tries a later id, never the lost one again (the file must be rewritten:
//! the id is inside it).
//!
//! A reader therefore sees either no file for an id or a complete, fsynced one, and a crash at
//! any point leaves either no dictionary or a complete one, plus at most a stray temporary
//! file ([`DirStore::temp_files`], [`DirStore::remove_temp_files`]), which the next add (after
//! it succeeds) or insert (finding a claim in its way) removes once it is [`STALE_TEMP_AGE`]
//! old (an add in progress holds its temporary file for milliseconds, so no other writer's
//! file goes). Two processes never get the same id, with no lock file to go stale.
//!
//! ## Without hard links
//!
//! Some file systems have no hard links: exFAT and FAT (a USB stick), VirtualBox shared
//! folders; `link(2)` says EPERM or EOPNOTSUPP there (and a security policy can refuse it to
//! some processes only). Step 3 then renames the temporary file to the final name if that is
//! still free. `rename(2)` would replace a file of that name, so it is the claim that makes
//! the check and the rename one step: every adder claims the id first, whichever way it then
//! names the file, so adders that link and adders that rename exclude each other too. The
//! rename is atomic, so readers still see no file or a complete one.
//!
//! A claim counts as a used id while it exists, so a crash between claim and publishing leaves
//! a gap in the ids: a claim is a temporary file, removed once stale, and by then a later id
//! has usually been taken (if not, the id was never published, and can be).
//!
//! # Repairing
//!
//! A dictionary never changes, but its file can be damaged (a disk error, a copy cut off).
//! [`DirStore::repair`] (what `pgdict dict sync --repair` runs) puts an intact copy of the same
//! dictionary, from another store, in its place: it writes the copy to a temporary file and
//! fsyncs it, hard-links the damaged file to a hidden `.damaged-...` name (its bytes are kept,
//! never deleted; without hard links, it copies them there and fsyncs the copy), renames the
//! copy over the damaged name (atomic: a reader sees the damaged file or the intact one, never
//! no file) and fsyncs the directory. It refuses a file that reads as an intact dictionary.
//!
//! Retiring creates the marker `<id>.retired` (exclusively; retiring twice is a no-op) and
//! fsyncs the directory. Markers are never removed: retirement only goes one way.
//!
//! # Reading
//!
//! [`DirStore::get`] reads a file (refusing one longer than any dictionary file can be before
//! reading it), checks it ([`Dictionary::from_bytes`]) and checks that the id inside is the id
//! in its name; a damaged file gives an error naming the file, and every other dictionary keeps
//! working. Dictionaries are immutable, so each is cached after its first load, and so is its
//! [`PreparedDictionary`] (built on first use by [`DirStore::prepared`] or a decode).
//!
//! # Fault injection (tests)
//!
//! When the environment variable `PGDICT_FAULT_INJECT` is `dir-store-add-after-temp`,
//! [`DirStore::add`] aborts the process right after writing and fsyncing the temporary file,
//! before linking it: the crash the atomicity rule is about. Tests set it in a child process.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::datum::{Codec, DictionaryLookup, LookupFailure, PreparedDictionary};
use crate::dict::file::{self, CodecSet, Dictionary, FormatError, Metadata};
use crate::dict::{lookup_answer, newest_active, Cache, Store, StoreEntry, StoreError};

/// The environment variable that names the default store.
pub const STORE_ENV: &str = "PGDICT_STORE";

/// The default store when [`STORE_ENV`] is not set.
pub const DEFAULT_DIR: &str = "dicts";

/// The extension of dictionary files.
const DICT_EXT: &str = "pgdict";
/// The extension of retirement markers.
const RETIRED_EXT: &str = "retired";
/// Temporary files start with this (a dot: hidden, and never a dictionary name).
const TEMP_PREFIX: &str = ".tmp-";
/// An add's claim on an id while it publishes the file: this, then the id as in a
/// dictionary's file name. A temporary file too.
const CLAIM_PREFIX: &str = ".tmp-claim-";
/// A temporary file this old is left by an add that never finished (a crash, a signal): each
/// add removes those it finds.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);
/// Damaged files a repair replaced are kept under names that start with this.
const DAMAGED_PREFIX: &str = ".damaged-";
/// The fault injection variable and the value that aborts `add` before linking.
const FAULT_ENV: &str = "PGDICT_FAULT_INJECT";
const FAULT_ADD_AFTER_TEMP: &str = "dir-store-add-after-temp";
/// How many ids one add tries before giving up: each failure means another process added a
/// dictionary in between, so this bounds nothing a real workload reaches.
const MAX_ADD_ATTEMPTS: usize = 1000;
/// How many times [`DirStore::insert`] looks for an id another writer is putting in the store
/// (waiting 1, 2, 4, ... 64 ms in between: about half a second in all).
const INSERT_ATTEMPTS: usize = 12;

/// Distinguishes the temporary files of one process.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// A directory of dictionary files (see the module documentation). One store serves every
/// thread of a program (`Send + Sync`): each dictionary is read and prepared once.
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
    /// Dictionaries loaded and prepared so far.
    cache: Cache,
}

const _: () = crate::assert_send_sync::<DirStore>();

/// What a directory listing holds.
#[derive(Debug, Default)]
struct Scan {
    dicts: BTreeSet<u32>,
    retired: BTreeSet<u32>,
    /// Ids an add holds a claim on while it publishes, or held when a crash interrupted it.
    claimed: BTreeSet<u32>,
    /// Temporary files, claims included.
    temps: Vec<PathBuf>,
}

/// Whether [`DirStore::insert`] wrote the dictionary or found it there already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// The store did not hold the id; it does now.
    Added,
    /// The store already held this very dictionary (same content).
    AlreadyPresent,
    /// [`DirStore::insert_retired`] only: the store already held this very dictionary, active
    /// (another writer put it there in between), and the marker made just now retired it. A
    /// retirement like [`DirStore::retire`]'s returning true, which the caller cannot learn by
    /// retiring again.
    AlreadyPresentNowRetired,
}

/// What [`DirStore::repair`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repaired {
    /// The damaged file was replaced; its bytes are kept at this path.
    Replaced {
        /// Where the damaged file's bytes are now.
        kept_as: PathBuf,
    },
    /// The file reads as this very dictionary now (repaired by someone else meanwhile).
    AlreadyIntact,
}

impl DirStore {
    /// The default store's path: `$PGDICT_STORE` if it is set and not empty, else `dicts`.
    pub fn default_path() -> PathBuf {
        match std::env::var_os(STORE_ENV) {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => PathBuf::from(DEFAULT_DIR),
        }
    }

    /// Opens the store in an existing directory.
    pub fn open(path: impl AsRef<Path>) -> Result<DirStore, StoreError> {
        let dir = path.as_ref().to_path_buf();
        match fs::metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(StoreError::NotAStore {
                    path: dir,
                    reason: "not a directory".into(),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotAStore {
                    path: dir,
                    reason: "no such directory (a new store is made by adding a dictionary \
                             to it)"
                        .into(),
                })
            }
            Err(source) => {
                return Err(StoreError::Io {
                    op: "open",
                    path: dir,
                    source,
                })
            }
        }
        Ok(DirStore {
            dir,
            cache: Cache::default(),
        })
    }

    /// Opens the store, creating the directory (and its parents) if it does not exist.
    pub fn create(path: impl AsRef<Path>) -> Result<DirStore, StoreError> {
        let dir = path.as_ref();
        fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            op: "create directory",
            path: dir.to_path_buf(),
            source,
        })?;
        DirStore::open(dir)
    }

    /// Checks that a dictionary could be added to the store at `path` now, without creating
    /// the store: that its directory, or the nearest one above it if it does not exist yet
    /// (where [`DirStore::create`] would make it), takes a new file. A caller about to spend
    /// minutes training a dictionary learns at once that it could not store it (a read-only
    /// file system, a directory it may not write). The probe is an empty temporary file,
    /// removed at once. Adding can still fail later (a full disk): this is not a reservation.
    pub fn check_can_add(path: impl AsRef<Path>) -> Result<(), StoreError> {
        let path = path.as_ref();
        let mut dir = path;
        loop {
            match fs::metadata(dir) {
                Ok(meta) if meta.is_dir() => break,
                Ok(_) => {
                    return Err(StoreError::NotAStore {
                        path: dir.to_path_buf(),
                        reason: "not a directory".into(),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    dir = match dir.parent() {
                        Some(parent) if !parent.as_os_str().is_empty() => parent,
                        _ => Path::new("."),
                    };
                }
                Err(source) => {
                    return Err(StoreError::Io {
                        op: "open",
                        path: dir.to_path_buf(),
                        source,
                    })
                }
            }
        }
        let probe = dir.join(format!(
            "{TEMP_PREFIX}probe-{}-{}",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        match OpenOptions::new().write(true).create_new(true).open(&probe) {
            Ok(_) => {
                let _ = fs::remove_file(&probe);
                Ok(())
            }
            Err(source) => Err(StoreError::Io {
                op: if dir == path {
                    "create a file in"
                } else {
                    "create the store's directory in"
                },
                path: dir.to_path_buf(),
                source,
            }),
        }
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// What the store is, for messages.
    pub fn describe(&self) -> String {
        format!("the dictionary store {}", self.dir.display())
    }

    /// The path of dictionary `id`'s file (whether or not it exists).
    pub fn file_path(&self, id: u32) -> PathBuf {
        self.dir.join(format!("{id:08}.{DICT_EXT}"))
    }

    fn retired_path(&self, id: u32) -> PathBuf {
        self.dir.join(format!("{id:08}.{RETIRED_EXT}"))
    }

    /// Every dictionary in the store, by increasing id, with its retired flag. Only names are
    /// read: use [`DirStore::get`] to load (and verify) each.
    pub fn list(&self) -> Result<Vec<StoreEntry>, StoreError> {
        let scan = self.scan()?;
        Ok(scan
            .dicts
            .iter()
            .map(|&id| StoreEntry {
                id,
                retired: scan.retired.contains(&id),
            })
            .collect())
    }

    /// The dictionary with this id, loaded and verified on first use, then cached.
    pub fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        self.cache.get(id, || self.load(id))
    }

    /// The dictionary with this id, read from its file and verified.
    fn load(&self, id: u32) -> Result<Dictionary, StoreError> {
        let path = self.file_path(id);
        let bytes = match read_capped(&path) {
            Ok(bytes) => bytes,
            // A symbolic link to nothing is a name the listing shows: not "not in the store".
            Err(ReadError::Io(e))
                if e.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(&path).is_err() =>
            {
                return Err(StoreError::NotFound {
                    id,
                    store: self.describe(),
                })
            }
            Err(ReadError::Io(source)) => {
                return Err(StoreError::Io {
                    op: "read",
                    path,
                    source,
                })
            }
            Err(ReadError::TooLong(len)) => {
                return Err(StoreError::Damaged {
                    location: path.display().to_string(),
                    error: FormatError::FileTooLong { len },
                })
            }
        };
        let dict = Dictionary::from_bytes(&bytes).map_err(|error| StoreError::Damaged {
            location: path.display().to_string(),
            error,
        })?;
        if dict.id() != id {
            return Err(StoreError::IdMismatch {
                location: path.display().to_string(),
                filed: id,
                inside: dict.id(),
            });
        }
        Ok(dict)
    }

    /// The dictionary with this id prepared for every codec, built on first use, then cached.
    pub fn prepared(&self, id: u32) -> Result<Arc<PreparedDictionary>, StoreError> {
        self.cache.prepared(self, id)
    }

    /// Whether dictionary `id` is retired.
    pub fn is_retired(&self, id: u32) -> Result<bool, StoreError> {
        let path = self.retired_path(id);
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError::Io {
                op: "check",
                path,
                source,
            }),
        }
    }

    /// The newest (highest id) dictionary that is not retired and was built for `codec`: the
    /// one to compress with. Damaged files are errors, not skipped.
    pub fn active(&self, codec: Codec) -> Result<Option<Arc<Dictionary>>, StoreError> {
        newest_active(self, codec)
    }

    /// Adds a dictionary with the next id (one more than the highest ever used) and returns
    /// it. Atomic and safe against concurrent adders in other processes (see the module
    /// documentation).
    pub fn add(
        &self,
        codecs: CodecSet,
        content: &[u8],
        metadata: Metadata,
    ) -> Result<Arc<Dictionary>, StoreError> {
        let template = Dictionary::new(1, codecs, file::now_micros(), metadata, content)
            .map_err(StoreError::Invalid)?;
        // The last id another adder took first: never tried again, even when the listing does
        // not show what took it yet (a directory cache over NFS; a name differing only in case
        // on a file system that ignores case).
        let mut lost = 0u32;
        for _ in 0..MAX_ADD_ATTEMPTS {
            let floor = lost
                .checked_add(1)
                .ok_or_else(|| StoreError::IdsExhausted {
                    store: self.describe(),
                })?;
            let next = self.next_id()?.max(floor);
            let dict = template.with_id(next).map_err(StoreError::Invalid)?;
            if self.write_new(&dict)? {
                let dict = Arc::new(dict);
                self.cache.insert(dict.clone());
                return Ok(dict);
            }
            // Another process took `next` in between: look again.
            lost = next;
        }
        Err(StoreError::TooMuchContention {
            store: self.describe(),
            attempts: MAX_ADD_ATTEMPTS,
        })
    }

    /// Puts `dict` in the store under its own id (what [`crate::dict::sync()`] does). If the
    /// store holds that id already, it must hold the same content: else
    /// [`StoreError::Exists`], and nothing is written.
    pub fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        let id = dict.id();
        let claim = self.claim_path(id);
        if claim.exists() {
            // A claim a crash left on this id would refuse every later insert of it (an add
            // only removes stale files after it succeeds, and a sync that cannot insert never
            // does): housekeeping first.
            let _ = self.remove_temp_files(STALE_TEMP_AGE);
        }
        for attempt in 0..INSERT_ATTEMPTS {
            match self.get(id) {
                Ok(there) => {
                    return if there.content_sha256() == dict.content_sha256() {
                        Ok(Inserted::AlreadyPresent)
                    } else {
                        Err(StoreError::Exists {
                            id,
                            store: self.describe(),
                            theirs: there.content_sha256(),
                            ours: dict.content_sha256(),
                        })
                    };
                }
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            if !claim.exists() && self.write_new(dict)? {
                self.cache.insert(Arc::new(dict.clone()));
                return Ok(Inserted::Added);
            }
            // Another writer holds the id's claim (a sync of the same id: milliseconds) or
            // wrote the id just now: wait for it, then compare with what it wrote.
            std::thread::sleep(Duration::from_millis(1 << attempt.min(6)));
        }
        // A claim holds the id still (see "Adding" in the module documentation): a crashed
        // adder's, not yet stale.
        if claim.exists() {
            return Err(StoreError::Claimed {
                id,
                store: self.describe(),
                claim,
            });
        }
        // The name was taken, then gone again, every time: only hand-made changes do that.
        Err(StoreError::TooMuchContention {
            store: self.describe(),
            attempts: INSERT_ATTEMPTS,
        })
    }

    /// Replaces the file of `dict`'s id, which must fail verification (damaged, or holding
    /// another id), with `dict`, keeping the damaged bytes under a hidden name (see "Repairing"
    /// in the module documentation). `dict` must come from a store that holds it intact: the
    /// damaged file cannot show that it held the same dictionary, so the caller vouches for it.
    /// A file that reads as a dictionary is not replaced: [`Repaired::AlreadyIntact`] if it is
    /// `dict`, else [`StoreError::Exists`]. A missing file is [`StoreError::NotFound`].
    pub fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError> {
        let id = dict.id();
        // Read the file afresh: the cache holds only dictionaries that loaded.
        match self.load(id) {
            Ok(there) if there.content_sha256() == dict.content_sha256() => {
                return Ok(Repaired::AlreadyIntact)
            }
            Ok(there) => {
                return Err(StoreError::Exists {
                    id,
                    store: self.describe(),
                    theirs: there.content_sha256(),
                    ours: dict.content_sha256(),
                })
            }
            Err(StoreError::Damaged { .. } | StoreError::IdMismatch { .. }) => {}
            Err(e) => return Err(e),
        }
        let final_path = self.file_path(id);
        let temp_path = self.write_temp(dict)?;
        let kept_as = self.dir.join(format!(
            "{DAMAGED_PREFIX}{id:08}-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        if let Err(source) = keep_under_new_name(&final_path, &kept_as) {
            let _ = fs::remove_file(&temp_path);
            return Err(StoreError::Io {
                op: "keep the damaged file under another name",
                path: final_path,
                source,
            });
        }
        if let Err(source) = fs::rename(&temp_path, &final_path) {
            let _ = fs::remove_file(&temp_path);
            let _ = fs::remove_file(&kept_as);
            return Err(StoreError::Io {
                op: "replace the damaged file",
                path: final_path,
                source,
            });
        }
        self.sync_dir()?;
        self.cache.insert(Arc::new(dict.clone()));
        Ok(Repaired::Replaced { kept_as })
    }

    /// Retires dictionary `id`: it still decodes, but [`DirStore::active`] no longer picks it.
    /// Returns whether it was retired just now (false: it already was). Its id is never
    /// reused.
    ///
    /// A damaged dictionary file can be retired (retiring needs no content, and a damaged
    /// newest dictionary would otherwise keep `active` failing for its codec until repaired);
    /// a missing one cannot.
    pub fn retire(&self, id: u32) -> Result<bool, StoreError> {
        match self.get(id) {
            Ok(_) | Err(StoreError::Damaged { .. } | StoreError::IdMismatch { .. }) => {}
            Err(e) => return Err(e),
        }
        self.mark_retired(id)
    }

    /// [`DirStore::insert`] of a dictionary that is retired: the retirement marker is made
    /// first, so that the dictionary is never active here, not even for a moment (a sync that
    /// failed between copying and retiring used to leave retired dictionaries active).
    ///
    /// If the insert fails, the marker stays, as every marker does (retiring goes one way): a
    /// marker without its dictionary is listed nowhere and picked by nothing, keeps its id
    /// from [`DirStore::add`] (as every id ever used does), and the next sync puts the
    /// dictionary in beside it, retired. Removing it would race with another sync of the same
    /// source, which may have found the marker, inserted the dictionary and reported it
    /// retired meanwhile. (A different dictionary that took the id meanwhile, which only a
    /// second source can put there, is [`StoreError::Exists`], and retired with the marker.)
    ///
    /// The dictionary found there already, with the same content, is
    /// [`Inserted::AlreadyPresentNowRetired`] if the marker was made just now (it was active
    /// until then: a writer put it in after the caller looked), else
    /// [`Inserted::AlreadyPresent`].
    pub fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        let marked_now = self.mark_retired(dict.id())?;
        match self.insert(dict)? {
            Inserted::AlreadyPresent if marked_now => Ok(Inserted::AlreadyPresentNowRetired),
            inserted => Ok(inserted),
        }
    }

    /// Creates `id`'s retirement marker; whether it was created just now (false: it was
    /// there).
    fn mark_retired(&self, id: u32) -> Result<bool, StoreError> {
        let path = self.retired_path(id);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(marker) => {
                marker.sync_all().map_err(|source| StoreError::Io {
                    op: "fsync",
                    path: path.clone(),
                    source,
                })?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(source) => {
                return Err(StoreError::Io {
                    op: "create",
                    path,
                    source,
                })
            }
        }
        self.sync_dir()?;
        Ok(true)
    }

    /// Temporary files in the store: adds in progress, or left by a crash.
    pub fn temp_files(&self) -> Result<Vec<PathBuf>, StoreError> {
        Ok(self.scan()?.temps)
    }

    /// Removes temporary files last modified more than `older_than` ago (an add in progress
    /// takes milliseconds; one a crash interrupted stays forever). Returns how many it removed.
    pub fn remove_temp_files(&self, older_than: Duration) -> Result<usize, StoreError> {
        let now = SystemTime::now();
        let mut removed = 0;
        for path in self.scan()?.temps {
            let modified = match fs::symlink_metadata(&path).and_then(|m| m.modified()) {
                Ok(modified) => modified,
                // Gone already: its add finished.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(StoreError::Io {
                        op: "stat",
                        path,
                        source,
                    })
                }
            };
            if now.duration_since(modified).unwrap_or_default() > older_than {
                match fs::remove_file(&path) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(StoreError::Io {
                            op: "remove",
                            path,
                            source,
                        })
                    }
                }
            }
        }
        Ok(removed)
    }

    /// The id [`DirStore::add`] tries first: one more than the highest id any dictionary file,
    /// retirement marker or claim has (a claim a crash left keeps its id from being taken
    /// until the claim is removed as stale). Another adder may take it first.
    pub fn next_id(&self) -> Result<u32, StoreError> {
        let scan = self.scan()?;
        let max = scan
            .dicts
            .last()
            .into_iter()
            .chain(scan.retired.last())
            .chain(scan.claimed.last())
            .max()
            .copied()
            .unwrap_or(0);
        max.checked_add(1).ok_or_else(|| StoreError::IdsExhausted {
            store: self.describe(),
        })
    }

    /// Reads the directory.
    fn scan(&self) -> Result<Scan, StoreError> {
        let io_err = |source| StoreError::Io {
            op: "list",
            path: self.dir.clone(),
            source,
        };
        let mut scan = Scan::default();
        for entry in fs::read_dir(&self.dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = name.strip_prefix(CLAIM_PREFIX).and_then(parse_id) {
                scan.claimed.insert(id);
                scan.temps.push(entry.path());
            } else if name.starts_with(TEMP_PREFIX) {
                scan.temps.push(entry.path());
            } else if let Some(id) = parse_name(name, DICT_EXT) {
                scan.dicts.insert(id);
            } else if let Some(id) = parse_name(name, RETIRED_EXT) {
                scan.retired.insert(id);
            }
        }
        scan.temps.sort();
        Ok(scan)
    }

    /// Writes `dict` to its file if no file has its id: temporary file, fsync, link, fsync the
    /// directory. Returns false, having written nothing, if the name is taken.
    fn write_new(&self, dict: &Dictionary) -> Result<bool, StoreError> {
        let final_path = self.file_path(dict.id());
        let temp_path = self.write_temp(dict)?;
        if std::env::var_os(FAULT_ENV).is_some_and(|v| v == FAULT_ADD_AFTER_TEMP) {
            // The crash the atomicity rule is about (see "Fault injection" above).
            std::process::abort();
        }
        let published = self.publish(&temp_path, &final_path, dict.id());
        // Whatever happened, the temporary name has served its purpose (a rename took it
        // already). A failure to remove it leaves a stray temporary file, which readers ignore.
        let _ = fs::remove_file(&temp_path);
        if published? {
            self.sync_dir()?;
            // Housekeeping, not part of the add: a failure here leaves the files as they
            // were, which readers ignore.
            let _ = self.remove_temp_files(STALE_TEMP_AGE);
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Gives the complete temporary file `temp` the name `final_path` unless that name is
    /// taken or `id` claimed by another adder (then false): under a claim on `id`, by a hard
    /// link, or on a file system without them by a rename (see "Adding" in the module
    /// documentation).
    fn publish(&self, temp: &Path, final_path: &Path, id: u32) -> Result<bool, StoreError> {
        let claim = self.claim_path(id);
        match OpenOptions::new().write(true).create_new(true).open(&claim) {
            Ok(_) => {}
            // Another adder holds the id, or a crash left its claim (see `next_id`).
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(source) => {
                return Err(StoreError::Io {
                    op: "create the claim file",
                    path: claim,
                    source,
                })
            }
        }
        let published = match fs::hard_link(temp, final_path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) if refuses_hard_links(&e) => rename_if_free(temp, final_path),
            Err(source) => Err(StoreError::Io {
                op: "link a new dictionary file to",
                path: final_path.to_path_buf(),
                source,
            }),
        };
        // The name is taken now (or the add failed): the claim has done its work. One that
        // cannot be removed is a stray temporary file, removed once it is stale.
        let _ = fs::remove_file(&claim);
        published
    }

    /// The claim file of `id` (a temporary file: readers ignore it, and a stale one goes).
    fn claim_path(&self, id: u32) -> PathBuf {
        self.dir.join(format!("{CLAIM_PREFIX}{id:08}"))
    }

    /// Writes `dict` to a new temporary file and fsyncs it; returns its path. On failure no
    /// temporary file is left.
    fn write_temp(&self, dict: &Dictionary) -> Result<PathBuf, StoreError> {
        let (temp_path, mut temp) = self.create_temp(dict.id())?;
        let written = temp
            .write_all(&dict.to_bytes())
            .map_err(|source| ("write", source))
            .and_then(|()| temp.sync_all().map_err(|source| ("fsync", source)));
        drop(temp);
        match written {
            Ok(()) => Ok(temp_path),
            Err((op, source)) => {
                let _ = fs::remove_file(&temp_path);
                Err(StoreError::Io {
                    op,
                    path: temp_path,
                    source,
                })
            }
        }
    }

    /// Creates a new, exclusively owned temporary file for dictionary `id`.
    fn create_temp(&self, id: u32) -> Result<(PathBuf, File), StoreError> {
        let pid = std::process::id();
        loop {
            let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let path = self
                .dir
                .join(format!("{TEMP_PREFIX}{id:08}-{pid}-{seq}-{nanos}"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok((path, file)),
                // Left by an earlier process with the same pid: take another name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => {
                    return Err(StoreError::Io {
                        op: "create",
                        path,
                        source,
                    })
                }
            }
        }
    }

    /// Makes the directory's entries durable (new names survive a crash).
    fn sync_dir(&self) -> Result<(), StoreError> {
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|source| StoreError::Io {
                op: "fsync directory",
                path: self.dir.clone(),
                source,
            })
    }
}

/// Whether `path`'s file name is one a directory store reads (`00000001.pgdict`, a
/// dictionary; `00000001.retired`, its retirement): a file written under such a name in a
/// store replaces, adds or retires a dictionary, so pgdict writes none but through the store.
pub fn names_a_store_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| {
            parse_name(name, DICT_EXT).is_some() || parse_name(name, RETIRED_EXT).is_some()
        })
}

/// The id of a store file name `<digits>.<ext>`, if the digits are the id's canonical form
/// (at least 8 digits, zero-padded to 8 only).
fn parse_name(name: &str, ext: &str) -> Option<u32> {
    parse_id(name.strip_suffix(ext)?.strip_suffix('.')?)
}

/// The id whose canonical form (at least 8 digits, zero-padded to 8 only) `digits` is.
fn parse_id(digits: &str) -> Option<u32> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id: u32 = digits.parse().ok()?;
    (id != 0 && format!("{id:08}") == digits).then_some(id)
}

/// Renames `temp` to `final_path` unless a file has that name (then false). Safe only under
/// the id's claim: `rename(2)` replaces a file that appears between the check and the rename.
fn rename_if_free(temp: &Path, final_path: &Path) -> Result<bool, StoreError> {
    match fs::symlink_metadata(final_path) {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::rename(temp, final_path)
            .map(|()| true)
            .map_err(|source| StoreError::Io {
                op: "rename a new dictionary file to",
                path: final_path.to_path_buf(),
                source,
            }),
        Err(source) => Err(StoreError::Io {
            op: "stat",
            path: final_path.to_path_buf(),
            source,
        }),
    }
}

/// Gives the file `path` the new name `kept_as` too: a hard link, or on a file system without
/// them a copy, fsynced. On failure `kept_as` does not exist.
fn keep_under_new_name(path: &Path, kept_as: &Path) -> io::Result<()> {
    match fs::hard_link(path, kept_as) {
        Err(e) if refuses_hard_links(&e) => {
            let mut from = File::open(path)?;
            let mut copy = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(kept_as)?;
            let copied = io::copy(&mut from, &mut copy).and_then(|_| copy.sync_all());
            if copied.is_err() {
                let _ = fs::remove_file(kept_as);
            }
            copied
        }
        linked => linked,
    }
}

/// Whether `link(2)` failed because the file system has no hard links: it says EPERM
/// (exFAT, FAT, VirtualBox shared folders) or EOPNOTSUPP. Either can only mean that here: the
/// adder created the file it links, in a directory it could create it in.
fn refuses_hard_links(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::Unsupported
    )
}

enum ReadError {
    Io(io::Error),
    TooLong(u64),
}

/// Reads a file, refusing one longer than any dictionary file can be before reading it (and
/// never reading more than that, should it grow meanwhile).
fn read_capped(path: &Path) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking: opening a FIFO of a dictionary's name would otherwise wait for a writer.
    // (It changes nothing for a regular file.)
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(ReadError::Io)?;
    let metadata = file.metadata().map_err(ReadError::Io)?;
    if !metadata.is_file() {
        return Err(ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a dictionary file is one)",
        )));
    }
    let len = metadata.len();
    let cap = file::MAX_FILE_LEN as u64;
    if len > cap {
        return Err(ReadError::TooLong(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLong(bytes.len() as u64));
    }
    Ok(bytes)
}

impl Store for DirStore {
    fn describe(&self) -> String {
        DirStore::describe(self)
    }

    fn entries(&self) -> Result<Vec<StoreEntry>, StoreError> {
        self.list()
    }

    fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        DirStore::get(self, id)
    }
}

impl DictionaryLookup for DirStore {
    /// The prepared dictionary; `Ok(None)` if the store does not hold it, `Err` with the
    /// reason if its file is damaged.
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        lookup_answer(self.prepared(id))
    }

    fn describe(&self) -> String {
        DirStore::describe(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse_name("00000001.pgdict", "pgdict"), Some(1));
        assert_eq!(parse_name("123456789.pgdict", "pgdict"), Some(123_456_789));
        assert_eq!(parse_name("4294967295.retired", "retired"), Some(u32::MAX));
        assert_eq!(parse_name("1.pgdict", "pgdict"), None);
        assert_eq!(parse_name("000000001.pgdict", "pgdict"), None);
        assert_eq!(parse_name("00000000.pgdict", "pgdict"), None);
        assert_eq!(parse_name("4294967296.pgdict", "pgdict"), None);
        assert_eq!(parse_name("0000000a.pgdict", "pgdict"), None);
        assert_eq!(parse_name("00000001pgdict", "pgdict"), None);
        assert_eq!(parse_name("00000001.pgdict.tmp", "pgdict"), None);
    }

    /// How an add publishes its file under a claim, and the rename it takes on a file system
    /// without hard links, both exercised on any file system (`tests/store_dir.rs` runs whole
    /// adds on exFAT).
    #[test]
    fn publishing_under_a_claim() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::open(dir.path()).unwrap();
        let temp = |bytes: &[u8]| {
            let path = dir.path().join(format!("{TEMP_PREFIX}test"));
            fs::write(&path, bytes).unwrap();
            path
        };
        let names = || {
            let mut names: Vec<String> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        let first = store.file_path(1);

        // A free id: the file gets its name, and neither the temporary file nor the claim
        // stays.
        let one = temp(b"one");
        assert!(store.publish(&one, &first, 1).unwrap());
        fs::remove_file(&one).unwrap();
        assert_eq!(fs::read(&first).unwrap(), b"one");
        assert_eq!(names(), ["00000001.pgdict"]);

        // A taken name is left as it was (the caller removes its temporary file).
        let second = temp(b"another one");
        assert!(!store.publish(&second, &first, 1).unwrap());
        assert!(!rename_if_free(&second, &first).unwrap());
        assert_eq!(fs::read(&first).unwrap(), b"one");
        assert_eq!(names(), [".tmp-test", "00000001.pgdict"]);
        fs::remove_file(&second).unwrap();

        // Another add's claim (or one a crash left) holds its id, even where this add could
        // link (an adder refused `link(2)` renames under its claim, and a rename would replace
        // the linked file): nothing is written, and the claim counts as a used id, so the next
        // add takes the one after.
        fs::write(store.claim_path(2), b"").unwrap();
        let third = temp(b"two");
        assert!(!store.publish(&third, &store.file_path(2), 2).unwrap());
        assert!(!store.file_path(2).exists());
        assert_eq!(store.next_id().unwrap(), 3);
        fs::remove_file(&third).unwrap();
        // The claim is a temporary file: it goes once stale, and its id is free again.
        assert_eq!(store.temp_files().unwrap(), [store.claim_path(2)]);
        assert_eq!(store.remove_temp_files(Duration::ZERO).unwrap(), 1);
        assert_eq!(store.next_id().unwrap(), 2);

        // Without hard links the file is renamed to a free name, so the temporary one goes.
        let fourth = temp(b"two");
        assert!(rename_if_free(&fourth, &store.file_path(2)).unwrap());
        assert_eq!(fs::read(store.file_path(2)).unwrap(), b"two");
        assert_eq!(names(), ["00000001.pgdict", "00000002.pgdict"]);
    }

    /// Both answers of a file system without hard links count as that (exFAT says EPERM;
    /// EOPNOTSUPP has no file system in the tests), and no other failure does.
    #[test]
    fn what_refuses_hard_links() {
        for (errno, refuses) in [
            (libc::EPERM, true),
            (libc::EOPNOTSUPP, true),
            (libc::EEXIST, false),
            (libc::ENOSPC, false),
            (libc::EMLINK, false),
        ] {
            let error = io::Error::from_raw_os_error(errno);
            assert_eq!(refuses_hard_links(&error), refuses, "{error}");
        }
    }

    #[test]
    fn keeping_a_file_under_a_new_name() {
        let dir = tempfile::tempdir().unwrap();
        let (path, kept) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&path, b"damaged").unwrap();
        keep_under_new_name(&path, &kept).unwrap();
        assert_eq!(fs::read(&kept).unwrap(), b"damaged");
        assert_eq!(fs::read(&path).unwrap(), b"damaged");
        // Never over another file.
        let err = keep_under_new_name(&path, &kept).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    }
}
