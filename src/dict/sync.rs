//! `sync`: bringing a store up to date from another store.
//!
//! [`sync()`] copies into a store (a [`Destination`]: usually a [`DirStore`], kept in step with
//! a primary's `PgStore`; or a `PgStore` on a primary, to move dictionaries from
//! a directory into PostgreSQL) every dictionary of the source that it lacks, and retires there
//! what is retired in the source. It works in two phases, so that a refusal changes nothing:
//!
//! 1. **Check everything.** Load and verify every source dictionary (checksums, ids), and every
//!    destination dictionary whose id the source also has. An id holding different content on
//!    the two sides is a conflict; a damaged file on either side is an error, unless
//!    [`SyncOptions::repair`] is set and the damaged file is the destination's. Any conflict
//!    refuses the whole sync, listing every conflicting id, before anything is written.
//! 2. **Copy.** Retire what the destination holds and the source has retired; write each
//!    missing dictionary with the store's atomic add-under-an-id ([`DirStore::insert`]:
//!    temporary file, fsync, link, fsync the directory; or `PgStore::insert`: one
//!    transaction), by increasing id, a retired one retired as it goes in
//!    ([`DirStore::insert_retired`]: its marker first; `PgStore::insert_retired`: in the same
//!    transaction); with `repair`, replace each damaged destination file by the source's
//!    dictionary ([`DirStore::repair`], which keeps the damaged bytes; a PostgreSQL store's
//!    rows are never replaced), then retire it if the source has. A failure part way (a full
//!    disk, a lost connection) thus never leaves active a dictionary the source has retired,
//!    and [`sync_into`] says what was done before it.
//!
//! A damaged file cannot show which dictionary it held, so repairing trusts the source: it is
//! for stores kept in step from one source of truth (a primary's store and its standbys'),
//! where an id names the same dictionary everywhere.
//!
//! Only content decides whether two dictionaries with one id are the same (their content
//! SHA-256): that is all a decoder reads. Metadata differences are not conflicts.
//!
//! A writer that adds to the destination between the phases can still make phase 2 meet an
//! id it did not expect; [`DirStore::insert`] then refuses that id (nothing is overwritten),
//! and the dictionaries copied before it stay (each is complete and verified).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::dict::dir_store::{DirStore, Inserted, Repaired};
use crate::dict::file::{hex, Dictionary, Sha256Sum};
use crate::dict::{Store, StoreError};

/// One id that holds different dictionaries in the two stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The id.
    pub id: u32,
    /// Content SHA-256 of the source's dictionary.
    pub from_sha256: Sha256Sum,
    /// Content SHA-256 of the destination's dictionary.
    pub to_sha256: Sha256Sum,
}

/// What [`sync()`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Ids copied into the destination.
    pub copied: Vec<u32>,
    /// Ids the destination already held, with the same content.
    pub present: Vec<u32>,
    /// Ids retired in the destination because they are retired in the source.
    pub retired: Vec<u32>,
    /// Ids whose damaged destination file was replaced by the source's dictionary, with where
    /// the damaged bytes are kept ([`SyncOptions::repair`]).
    pub repaired: Vec<(u32, PathBuf)>,
}

impl SyncReport {
    /// Whether the destination was changed: anything copied, retired or repaired. (A sync
    /// that fails part way keeps what it did: this says whether there is anything to tell.)
    pub fn changed_destination(&self) -> bool {
        !(self.copied.is_empty() && self.retired.is_empty() && self.repaired.is_empty())
    }
}

/// How [`sync_with`] treats the destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// Replace a destination file that fails verification (damaged, or holding another id)
    /// with the source's dictionary of that id, keeping the damaged bytes beside it under a
    /// hidden name. Off: such a file is an error, and nothing is written.
    pub repair: bool,
}

/// A store [`sync()`] can write to.
pub trait Destination: Store {
    /// Puts `dict` in the store under its own id, unless the store holds that id already: then
    /// it must hold the same content ([`Inserted::AlreadyPresent`]), else
    /// [`StoreError::Exists`].
    fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError>;

    /// [`Destination::insert`] of a dictionary that is retired, never active in the store,
    /// not even for a moment. The dictionary found there already is
    /// [`Inserted::AlreadyPresentNowRetired`] if this retired it, else
    /// [`Inserted::AlreadyPresent`] (the caller retires it if need be).
    fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError>;

    /// Retires `id`; whether it was retired just now.
    fn retire(&self, id: u32) -> Result<bool, StoreError>;

    /// Replaces the damaged record of `dict`'s id with `dict` (see [`DirStore::repair`]).
    fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError>;
}

impl Destination for DirStore {
    fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        DirStore::insert(self, dict)
    }

    fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        DirStore::insert_retired(self, dict)
    }

    fn retire(&self, id: u32) -> Result<bool, StoreError> {
        DirStore::retire(self, id)
    }

    fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError> {
        DirStore::repair(self, dict)
    }
}

#[cfg(feature = "pg-store")]
impl Destination for crate::dict::PgStore {
    fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        crate::dict::PgStore::insert(self, dict)
    }

    fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        crate::dict::PgStore::insert_retired(self, dict)
    }

    fn retire(&self, id: u32) -> Result<bool, StoreError> {
        crate::dict::PgStore::retire(self, id)
    }

    /// Refused: the store's triggers refuse every `UPDATE` (a row reads as damaged only if
    /// someone disabled them and changed it).
    fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError> {
        Err(StoreError::ReadOnly {
            store: self.describe(),
            reason: format!(
                "dictionary {} cannot be replaced: rows never change there (its triggers refuse \
                 UPDATE); a row that reads as damaged was changed with them disabled",
                dict.id()
            ),
        })
    }
}

/// Copies into `to` what `from` has and `to` lacks (see the module documentation); a damaged
/// file is an error ([`sync_with`] can repair it).
pub fn sync(from: &dyn Store, to: &dyn Destination) -> Result<SyncReport, StoreError> {
    sync_with(from, to, SyncOptions::default())
}

/// [`sync()`], with options.
pub fn sync_with(
    from: &dyn Store,
    to: &dyn Destination,
    options: SyncOptions,
) -> Result<SyncReport, StoreError> {
    let mut report = SyncReport::default();
    sync_into(from, to, options, &mut report)?;
    Ok(report)
}

/// [`sync_with`], saying in `report` what it did also when it fails part way (phase 2 can:
/// a full disk, a lost connection, a privilege missing), so that the failure can say which
/// dictionaries were copied, repaired or retired before it.
pub fn sync_into(
    from: &dyn Store,
    to: &dyn Destination,
    options: SyncOptions,
    report: &mut SyncReport,
) -> Result<(), StoreError> {
    // Phase 1: check everything.
    let source = from.entries()?;
    let destination: BTreeMap<u32, bool> = to
        .entries()?
        .into_iter()
        .map(|entry| (entry.id, entry.retired))
        .collect();
    let mut conflicts = Vec::new();
    let mut to_copy = Vec::new();
    let mut to_retire = Vec::new();
    let mut to_repair = Vec::new();
    let mut to_retire_repaired = Vec::new();
    for entry in &source {
        let dict = from.get(entry.id)?;
        match destination.get(&entry.id) {
            Some(&retired_there) => {
                let there = match to.get(entry.id) {
                    Ok(there) => there,
                    Err(StoreError::Damaged { .. } | StoreError::IdMismatch { .. })
                        if options.repair =>
                    {
                        // Retired after the repairs, last in phase 2.
                        if entry.retired && !retired_there {
                            to_retire_repaired.push(entry.id);
                        }
                        to_repair.push(dict);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if there.content_sha256() != dict.content_sha256() {
                    conflicts.push(Conflict {
                        id: entry.id,
                        from_sha256: dict.content_sha256(),
                        to_sha256: there.content_sha256(),
                    });
                    continue;
                }
                report.present.push(entry.id);
                if entry.retired && !retired_there {
                    to_retire.push(entry.id);
                }
            }
            None => to_copy.push((dict, entry.retired)),
        }
    }
    if !conflicts.is_empty() {
        return Err(StoreError::Conflict {
            from: from.describe(),
            to: to.describe(),
            conflicts,
        });
    }
    // Phase 2: retire what the destination holds already, copy (a retired dictionary goes in
    // retired), repair, then retire what was repaired. A failure part way leaves no
    // dictionary active that the source has retired.
    let result = (|| {
        for id in to_retire {
            if to.retire(id)? {
                report.retired.push(id);
            }
        }
        for (dict, retired) in to_copy {
            let inserted = if retired {
                to.insert_retired(&dict)?
            } else {
                to.insert(&dict)?
            };
            match inserted {
                Inserted::Added => {
                    report.copied.push(dict.id());
                    if retired {
                        report.retired.push(dict.id());
                    }
                }
                // Another writer put it there since phase 1.
                Inserted::AlreadyPresent => {
                    report.present.push(dict.id());
                    if retired && to.retire(dict.id())? {
                        report.retired.push(dict.id());
                    }
                }
                // Put there active since phase 1, and retired by the insert (a directory
                // store's marker comes first: retiring again would find it and say "already").
                Inserted::AlreadyPresentNowRetired => {
                    report.present.push(dict.id());
                    report.retired.push(dict.id());
                }
            }
        }
        for dict in to_repair {
            match to.repair(&dict)? {
                Repaired::Replaced { kept_as } => report.repaired.push((dict.id(), kept_as)),
                Repaired::AlreadyIntact => report.present.push(dict.id()),
            }
        }
        for id in to_retire_repaired {
            if to.retire(id)? {
                report.retired.push(id);
            }
        }
        Ok(())
    })();
    report.present.sort_unstable();
    report.retired.sort_unstable();
    result
}

/// The conflicts for an error message: `3 (sha256 0123456789abcdef... there, ... here)`.
pub(crate) fn describe_conflicts(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|c| {
            format!(
                "id {} (content sha256 {}... in the source, {}... in the destination)",
                c.id,
                &hex(&c.from_sha256)[..16],
                &hex(&c.to_sha256)[..16]
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_says_whether_the_destination_was_changed() {
        assert!(!SyncReport::default().changed_destination());
        let only_present = SyncReport {
            present: vec![1, 2],
            ..SyncReport::default()
        };
        assert!(!only_present.changed_destination());
        for changed in [
            SyncReport {
                copied: vec![3],
                ..SyncReport::default()
            },
            SyncReport {
                retired: vec![3],
                ..SyncReport::default()
            },
            SyncReport {
                repaired: vec![(3, PathBuf::from(".damaged-00000003"))],
                ..SyncReport::default()
            },
        ] {
            assert!(changed.changed_destination(), "{changed:?}");
        }
    }
}
