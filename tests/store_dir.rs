//! The directory store (`pgdict::dict::DirStore`) and `sync` between directory stores, with
//! real files and real processes:
//!
//! - add, get, list and retire; ids are never reused, not even after the newest dictionary is
//!   retired and the store reopened; a store that used the last id says so; loaded (and
//!   added) dictionaries are cached;
//! - damaged files (truncated, bit-flipped, another dictionary's file under this id's name,
//!   over-long) are detected, named, and do not stop the other dictionaries from loading; the
//!   largest possible file loads;
//! - datums decode through the store; retired dictionaries still decode; a missing id gives
//!   the error that names the id and the store and suggests `sync`;
//! - 8 processes adding 5 dictionaries each at once get 40 distinct ids, and every file is
//!   valid;
//! - a process that aborts after writing its temporary file and before linking it, and
//!   processes SIGKILLed at arbitrary points of their adds, leave a valid store: ids 1..=N with
//!   every file complete, no partial dictionary, and the next add works;
//! - under `strace`, an add, a retirement and a repair fsync each new file before it gets its
//!   name and the directory after (what only a crash of the machine would otherwise show);
//! - `sync` copies what is missing (and retirements), and refuses a conflict or a damaged
//!   source, changing nothing; asked to, it repairs damaged destination files from the
//!   source, keeping their bytes, and still refuses a conflict; a retired dictionary goes in
//!   retired, never active, even when stopped part way; what a second sync did meanwhile is
//!   found done, and a dictionary another writer put in active meanwhile is reported retired
//!   when the sync's insert retires it;
//! - `check_can_add` (the trainer's check before it trains) writes nothing;
//! - the process tests, the fsync order and the repair run again on exFAT (mounted through
//!   FUSE; root only, see `support/small_fs.rs`), which has no hard links: adds claim their
//!   ids there, and a claim a crash left is named when it holds an id a sync must put in.
//!
//! The processes are this test binary itself, run with `--ignored --exact child_adder` and the
//! `PGDICT_TEST_CHILD_*` variables that tell the child what to do.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

#[path = "support/small_fs.rs"]
mod small_fs;

use pgdict::datum::{self, Codec, DatumEncoder, DatumError, DictionaryLookup, Form};
use pgdict::dict::{
    self, CodecSet, Destination, Dictionary, DirStore, FormatError, Gain, Inserted, Metadata,
    Repaired, Store, StoreEntry, StoreError, SyncOptions, SyncReport,
};
use small_fs::SmallFs;
use tempfile::TempDir;

/// The child's store directory; its presence makes `child_adder` a child.
const CHILD_STORE: &str = "PGDICT_TEST_CHILD_STORE";
/// How many dictionaries the child adds.
const CHILD_ADDS: &str = "PGDICT_TEST_CHILD_ADDS";
/// A tag that goes into each content, so every dictionary is distinct and traceable.
const CHILD_TAG: &str = "PGDICT_TEST_CHILD_TAG";
/// A file the child waits for before adding, so that all children start at once.
const CHILD_GO: &str = "PGDICT_TEST_CHILD_GO";

// ---------------------------------------------------------------------------------------------
// Helpers

fn new_store() -> (TempDir, DirStore) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = DirStore::open(dir.path()).expect("open an empty directory as a store");
    (dir, store)
}

/// Distinct content for tag and index, a few hundred bytes.
fn content(tag: &str, index: usize) -> Vec<u8> {
    format!("{{\"tag\": \"{tag}\", \"index\": {index}, \"pad\": \"")
        .into_bytes()
        .into_iter()
        .chain(std::iter::repeat_n(b'a' + (index % 26) as u8, 200))
        .chain(*b"\"}")
        .collect()
}

fn metadata(source: &str) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.source = Some(source.into());
    metadata.trainer = Some("tests/store_dir.rs".into());
    metadata.sample_rows = Some(1000);
    metadata.parameters.insert("seed".into(), 42.into());
    metadata.gains.push(Gain {
        codec: Codec::Pglz,
        rows: 1000,
        raw_bytes: 400_000,
        plain_bytes: 390_000,
        dict_bytes: 150_000,
    });
    metadata
}

fn ids(entries: &[StoreEntry]) -> Vec<u32> {
    entries.iter().map(|e| e.id).collect()
}

/// The project's own rows (always present): events of a web shop, as JSON.
fn event_rows() -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/events.jsonl");
    let rows = pgdict::rows::read_row_file(&path)
        .unwrap_or_else(|e| panic!("cannot read the project corpus: {e}"));
    assert!(
        rows.len() >= 1000,
        "{} has {} rows",
        path.display(),
        rows.len()
    );
    rows
}

/// A pglz-sized dictionary: the last 4095 bytes of the even-numbered rows concatenated.
fn dictionary_from(rows: &[Vec<u8>]) -> Vec<u8> {
    let joined: Vec<u8> = rows
        .iter()
        .step_by(2)
        .take(200)
        .flatten()
        .copied()
        .collect();
    joined[joined.len() - 4095..].to_vec()
}

/// Every dictionary in the store at `dir`, loaded by a fresh store (no cache), with errors.
fn load_all(dir: &Path) -> BTreeMap<u32, Result<Arc<Dictionary>, String>> {
    let store = DirStore::open(dir).unwrap();
    store
        .list()
        .unwrap()
        .into_iter()
        .map(|e| (e.id, store.get(e.id).map_err(|err| err.to_string())))
        .collect()
}

/// Every file in `dir` with its bytes: to show that an operation changed nothing.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Starts a child that adds `adds` dictionaries to `store`. Its output is captured, except
/// with `quiet` (for children that are killed, whose output nobody reads).
fn spawn_adder(
    store: &Path,
    adds: usize,
    tag: &str,
    go: Option<&Path>,
    fault: bool,
    quiet: bool,
) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(exe);
    command
        .args(["--ignored", "--exact", "child_adder", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD_STORE, store)
        .env(CHILD_ADDS, adds.to_string())
        .env(CHILD_TAG, tag)
        .env_remove("PGDICT_FAULT_INJECT")
        .stdout(if quiet { Stdio::null() } else { Stdio::piped() })
        .stderr(if quiet { Stdio::null() } else { Stdio::piped() });
    if let Some(go) = go {
        command.env(CHILD_GO, go);
    }
    if fault {
        command.env("PGDICT_FAULT_INJECT", "dir-store-add-after-temp");
    }
    command.spawn().expect("spawning a child test process")
}

/// The ids that claim files in the store `dir` hold (adds on a file system without hard
/// links make them, and a killed add leaves its own).
fn claims(dir: &Path) -> BTreeSet<u32> {
    fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().ok()?;
            name.strip_prefix(".tmp-claim-")?.parse().ok()
        })
        .collect()
}

/// The ids a child reported (`added <id> <tag> <index>` lines).
fn reported(stdout: &[u8]) -> Vec<(u32, String, usize)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| {
            // The harness may have written "test child_adder ... " before the first line.
            let at = line.find("added ")?;
            let mut words = line[at + "added ".len()..].split(' ');
            let id = words.next()?.parse().ok()?;
            let tag = words.next()?.to_string();
            let index = words.next()?.parse().ok()?;
            Some((id, tag, index))
        })
        .collect()
}

/// Not a test: the body of the child processes the tests below start.
#[test]
#[ignore = "run by other tests in child processes"]
fn child_adder() {
    let Some(store) = std::env::var_os(CHILD_STORE) else {
        return;
    };
    let adds: usize = std::env::var(CHILD_ADDS).unwrap().parse().unwrap();
    let tag = std::env::var(CHILD_TAG).unwrap();
    if let Some(go) = std::env::var_os(CHILD_GO) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !Path::new(&go).exists() {
            assert!(Instant::now() < deadline, "the go file never appeared");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let store = DirStore::open(store).unwrap();
    for index in 0..adds {
        let dict = store
            .add(
                CodecSet::ALL,
                &content(&tag, index),
                metadata(&format!("{tag}/{index}")),
            )
            .unwrap();
        println!("added {} {tag} {index}", dict.id());
    }
}

// ---------------------------------------------------------------------------------------------
// Add, get, list, retire

#[test]
fn add_get_list_retire() {
    let (dir, store) = new_store();
    assert_eq!(store.list().unwrap(), vec![]);
    let mut added = Vec::new();
    for index in 0..3 {
        let dict = store
            .add(
                CodecSet::only(Codec::Pglz),
                &content("a", index),
                metadata("a"),
            )
            .unwrap();
        assert_eq!(dict.id(), index as u32 + 1);
        added.push(dict);
    }
    for dict in &added {
        let path = dir.path().join(format!("{:08}.pgdict", dict.id()));
        assert_eq!(store.file_path(dict.id()), path);
        // The file is the dictionary's own bytes, and a fresh store reads back the same thing.
        assert_eq!(fs::read(&path).unwrap(), dict.to_bytes());
        let fresh = DirStore::open(dir.path()).unwrap();
        let loaded = fresh.get(dict.id()).unwrap();
        assert_eq!(*loaded, **dict);
        assert_eq!(loaded.metadata(), metadata("a"));
        assert_eq!(loaded.codecs(), CodecSet::only(Codec::Pglz));
        assert_eq!(loaded.content(), &content("a", dict.id() as usize - 1)[..]);
    }
    assert_eq!(ids(&store.list().unwrap()), vec![1, 2, 3]);
    assert!(store.temp_files().unwrap().is_empty());

    assert!(store.retire(2).unwrap());
    assert!(!store.retire(2).unwrap(), "retiring twice is a no-op");
    assert!(store.is_retired(2).unwrap());
    assert!(!store.is_retired(1).unwrap());
    assert_eq!(
        store.list().unwrap(),
        vec![
            StoreEntry {
                id: 1,
                retired: false
            },
            StoreEntry {
                id: 2,
                retired: true
            },
            StoreEntry {
                id: 3,
                retired: false
            },
        ]
    );
    // A retired dictionary still loads.
    assert_eq!(store.get(2).unwrap().content(), &content("a", 1)[..]);
    assert!(matches!(
        store.retire(9),
        Err(StoreError::NotFound { id: 9, .. })
    ));
    assert!(matches!(
        store.get(9),
        Err(StoreError::NotFound { id: 9, .. })
    ));
    // Files that are not dictionaries are ignored.
    fs::write(dir.path().join("README"), "not a dictionary").unwrap();
    fs::write(dir.path().join("7.pgdict"), "not canonical").unwrap();
    assert_eq!(ids(&store.list().unwrap()), vec![1, 2, 3]);
}

#[test]
fn ids_are_never_reused_after_retiring() {
    let (dir, store) = new_store();
    for index in 0..3 {
        store
            .add(CodecSet::ALL, &content("b", index), Metadata::new())
            .unwrap();
    }
    // Retire the newest: its id still counts.
    store.retire(3).unwrap();
    let reopened = DirStore::open(dir.path()).unwrap();
    assert_eq!(reopened.next_id().unwrap(), 4);
    let next = reopened
        .add(CodecSet::ALL, &content("b", 3), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 4);
    // Even if the retired dictionary's file were lost, its marker keeps the id used (and is
    // no dictionary: it is listed nowhere).
    reopened.retire(4).unwrap();
    fs::remove_file(reopened.file_path(4)).unwrap();
    assert_eq!(reopened.next_id().unwrap(), 5);
    assert_eq!(ids(&reopened.list().unwrap()), vec![1, 2, 3]);
    let next = DirStore::open(dir.path())
        .unwrap()
        .add(CodecSet::ALL, &content("b", 4), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 5);
}

/// A store that has used the last id (`u32::MAX`) says so, rather than wrapping round to
/// ids below the ones it used.
#[test]
fn a_store_that_used_the_last_id_adds_no_more() {
    let (dir, store) = new_store();
    store
        .add(CodecSet::ALL, &content("l", 0), Metadata::new())
        .unwrap();
    let last = Dictionary::new(
        u32::MAX,
        CodecSet::ALL,
        0,
        Metadata::new(),
        &content("l", 1),
    );
    assert_eq!(store.insert(&last.unwrap()).unwrap(), Inserted::Added);
    let before = snapshot(dir.path());
    assert!(matches!(
        store.next_id(),
        Err(StoreError::IdsExhausted { .. })
    ));
    let err = store
        .add(CodecSet::ALL, &content("l", 2), Metadata::new())
        .unwrap_err();
    assert!(matches!(err, StoreError::IdsExhausted { .. }), "{err:?}");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn active_is_the_newest_unretired_dictionary_for_the_codec() {
    let (_dir, store) = new_store();
    assert!(store.active(Codec::Pglz).unwrap().is_none());
    let pglz = CodecSet::only(Codec::Pglz);
    let lz4 = CodecSet::only(Codec::Lz4);
    store.add(pglz, &content("c", 0), Metadata::new()).unwrap();
    store.add(pglz, &content("c", 1), Metadata::new()).unwrap();
    store.add(lz4, &content("c", 2), Metadata::new()).unwrap();
    assert_eq!(store.active(Codec::Pglz).unwrap().unwrap().id(), 2);
    assert_eq!(store.active(Codec::Lz4).unwrap().unwrap().id(), 3);
    assert!(store.active(Codec::Zstd).unwrap().is_none());
    store.retire(2).unwrap();
    assert_eq!(store.active(Codec::Pglz).unwrap().unwrap().id(), 1);
}

#[test]
fn dictionaries_are_cached_after_first_load() {
    let (dir, store) = new_store();
    let added = store
        .add(CodecSet::ALL, &content("d", 0), Metadata::new())
        .unwrap();
    let reader = DirStore::open(dir.path()).unwrap();
    let first = reader.get(1).unwrap();
    let prepared = reader.prepared(1).unwrap();
    // Damage the file: the reader that loaded it does not read it again.
    let path = reader.file_path(1);
    fs::write(&path, b"garbage").unwrap();
    let again = reader.get(1).unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "get must return the cached Arc"
    );
    assert!(Arc::ptr_eq(&prepared, &reader.prepared(1).unwrap()));
    // A store that never loaded it sees the damage.
    let fresh = DirStore::open(dir.path()).unwrap();
    assert!(matches!(fresh.get(1), Err(StoreError::Damaged { .. })));
    // The store that added it never reads it back: it cached what it wrote.
    assert!(Arc::ptr_eq(&added, &store.get(1).unwrap()));
}

// ---------------------------------------------------------------------------------------------
// Damaged files

/// A file of dictionary `id` with no content and no metadata, sized and checksummed: what a
/// writer that skips the format's checks would write.
fn file_without_content(id: u32) -> Vec<u8> {
    let one_byte = Dictionary::new(id, CodecSet::ALL, 0, Metadata::new(), b"x").unwrap();
    let mut file = one_byte.to_bytes()[..dict::file::HEADER_LEN].to_vec();
    file[28..32].copy_from_slice(&0u32.to_le_bytes());
    file[32..64].copy_from_slice(&dict::file::sha256(b""));
    let file_sum = dict::file::sha256(&file);
    file.extend_from_slice(&file_sum);
    file
}

#[test]
fn a_dictionary_without_content_is_neither_added_nor_picked() {
    let (_dir, store) = new_store();
    assert!(matches!(
        store.add(CodecSet::ALL, b"", metadata("e")),
        Err(StoreError::Invalid(FormatError::EmptyContent))
    ));
    assert_eq!(store.list().unwrap(), vec![]);
    let first = store
        .add(CodecSet::ALL, &content("e", 0), metadata("e"))
        .unwrap();
    assert_eq!(first.id(), 1);
    // Put there by hand: damaged, and `--dict auto` says so rather than compress with it.
    fs::write(store.file_path(2), file_without_content(2)).unwrap();
    let fresh = DirStore::open(store.path()).unwrap();
    assert!(matches!(
        fresh.get(2),
        Err(StoreError::Damaged {
            error: FormatError::EmptyContent,
            ..
        })
    ));
    assert!(matches!(
        fresh.active(Codec::Pglz),
        Err(StoreError::Damaged {
            error: FormatError::EmptyContent,
            ..
        })
    ));
}

#[test]
fn damaged_files_are_named_and_the_others_still_load() {
    let (dir, store) = new_store();
    for index in 0..6 {
        store
            .add(CodecSet::ALL, &content("e", index), metadata("e"))
            .unwrap();
    }
    let path = |id: u32| store.file_path(id);
    let bytes = |id: u32| fs::read(path(id)).unwrap();

    // 1: truncated by one byte (the checksum's last byte is gone).
    let b = bytes(1);
    fs::write(path(1), &b[..b.len() - 1]).unwrap();
    // 2: one bit flipped in the content.
    let mut b = bytes(2);
    let mid = b.len() - 100;
    b[mid] ^= 0x04;
    fs::write(path(2), &b).unwrap();
    // 3: dictionary 5's file copied over dictionary 3's name (a valid file, the wrong id).
    fs::copy(path(5), path(3)).unwrap();
    // 4: cut to a few bytes.
    fs::write(path(4), &bytes(4)[..5]).unwrap();
    // 6: longer than any dictionary file can be (refused before it is read).
    let huge = fs::File::create(path(6)).unwrap();
    huge.set_len(dict::file::MAX_FILE_LEN as u64 + 1).unwrap();

    let fresh = DirStore::open(dir.path()).unwrap();
    let name = |id: u32| format!("{:08}.pgdict", id);
    let err = fresh.get(1).unwrap_err();
    match &err {
        StoreError::Damaged {
            location,
            error: FormatError::LengthMismatch { .. },
        } => assert!(location.ends_with(&name(1)), "{err}"),
        other => panic!("truncated file: {other:?}"),
    }
    assert!(err.to_string().contains("truncated"), "{err}");
    let err = fresh.get(2).unwrap_err();
    match &err {
        StoreError::Damaged {
            location,
            error: FormatError::ChecksumMismatch { .. },
        } => assert!(location.ends_with(&name(2)), "{err}"),
        other => panic!("bit flip: {other:?}"),
    }
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
    let err = fresh.get(3).unwrap_err();
    match &err {
        StoreError::IdMismatch {
            location,
            filed: 3,
            inside: 5,
        } => assert!(location.ends_with(&name(3)), "{err}"),
        other => panic!("wrong id inside: {other:?}"),
    }
    let err = fresh.get(4).unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Damaged {
                error: FormatError::Truncated { len: 5, .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = fresh.get(6).unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Damaged {
                error: FormatError::FileTooLong { .. },
                ..
            }
        ),
        "{err:?}"
    );
    // Putting dictionary 2 there again (what a sync does) is refused for the damage, which
    // only a repair replaces; it is not taken for a missing file, nor for an id another
    // writer keeps taking.
    let err = fresh.insert(&store.get(2).unwrap()).unwrap_err();
    assert!(
        matches!(&err, StoreError::Damaged { location, .. } if location.ends_with(&name(2))),
        "{err:?}"
    );
    assert_eq!(bytes(2), b);
    // The undamaged dictionary still loads, and listing still lists every name.
    assert_eq!(fresh.get(5).unwrap().content(), &content("e", 4)[..]);
    assert_eq!(ids(&fresh.list().unwrap()), vec![1, 2, 3, 4, 5, 6]);
    // The next id is still 7: damaged files still hold their ids.
    let next = fresh
        .add(CodecSet::ALL, &content("e", 6), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 7);

    // A damaged dictionary can be retired (retiring needs no content): a damaged newest
    // dictionary no longer stands in the way of `active` for its codec. It used to be
    // refused, leaving --dict auto failing until a repair.
    let damaged_newest = (dir.path().join(format!("{:08}.pgdict", 8)), bytes(5));
    fs::write(&damaged_newest.0, &damaged_newest.1[..40]).unwrap();
    assert!(fresh.active(Codec::Pglz).is_err());
    assert!(fresh.retire(8).unwrap());
    assert_eq!(fresh.active(Codec::Pglz).unwrap().unwrap().id(), 7);
    for id in [2, 3] {
        assert!(fresh.retire(id).unwrap());
        assert!(fresh.is_retired(id).unwrap());
    }
    // A missing one cannot.
    assert!(matches!(
        fresh.retire(9),
        Err(StoreError::NotFound { id: 9, .. })
    ));
}

/// The largest dictionary a file can hold (`MAX_FILE_LEN` bytes: 64 KiB of metadata, 1 MiB of
/// content) is stored and read back; a file one byte longer is refused unread (above).
#[test]
fn the_largest_possible_dictionary_file_loads() {
    let (dir, store) = new_store();
    let pad = "x".repeat(dict::file::MAX_METADATA_LEN - r#"{"pad":""}"#.len());
    let metadata = format!(r#"{{"pad":"{pad}"}}"#);
    let content = vec![b'c'; dict::file::MAX_CONTENT_LEN];
    let largest = Dictionary::from_parts(1, CodecSet::ALL, 0, &metadata, &content).unwrap();
    assert_eq!(largest.to_bytes().len(), dict::file::MAX_FILE_LEN);
    assert_eq!(store.insert(&largest).unwrap(), Inserted::Added);
    let fresh = DirStore::open(dir.path()).unwrap();
    assert_eq!(*fresh.get(1).unwrap(), largest);
}

#[test]
fn every_bit_flip_and_truncation_of_a_stored_file_is_detected() {
    let (dir, store) = new_store();
    store
        .add(CodecSet::ALL, b"small dictionary", metadata("f"))
        .unwrap();
    let path = store.file_path(1);
    let good = fs::read(&path).unwrap();
    for bit in 0..good.len() * 8 {
        let mut bad = good.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        fs::write(&path, &bad).unwrap();
        let fresh = DirStore::open(dir.path()).unwrap();
        assert!(fresh.get(1).is_err(), "flip of bit {bit} went unnoticed");
    }
    for len in 0..good.len() {
        fs::write(&path, &good[..len]).unwrap();
        let fresh = DirStore::open(dir.path()).unwrap();
        assert!(fresh.get(1).is_err(), "truncation to {len} went unnoticed");
    }
    fs::write(&path, &good).unwrap();
    assert!(DirStore::open(dir.path()).unwrap().get(1).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Decoding through the store

#[test]
fn datums_decode_through_the_store_and_a_missing_id_is_named() {
    let rows = event_rows();
    let (dir, store) = new_store();
    let dict = store
        .add(
            CodecSet::ALL,
            &dictionary_from(&rows),
            metadata("corpus/events.jsonl"),
        )
        .unwrap();
    let prepared = store.prepared(dict.id()).unwrap();
    let mut encoder = DatumEncoder::new();
    let mut extended = 0;
    let held_out: Vec<&Vec<u8>> = rows.iter().skip(1).step_by(2).take(300).collect();
    for codec in Codec::ALL {
        let mut stored = Vec::new();
        for row in &held_out {
            let datum = encoder.encode(row, codec, Some(&prepared)).unwrap();
            if let Form::Extended { dict_id, .. } = datum::parse_header(&datum).unwrap().form {
                assert_eq!(dict_id, dict.id());
                extended += 1;
            }
            stored.push(datum);
        }
        // Decoding through a fresh store (it loads and prepares the dictionary itself).
        let reader = DirStore::open(dir.path()).unwrap();
        for (datum, row) in stored.iter().zip(&held_out) {
            assert_eq!(&datum::decode(datum, &reader).unwrap(), *row);
        }
        // A retired dictionary still decodes.
        store.retire(dict.id()).unwrap();
        let reader = DirStore::open(dir.path()).unwrap();
        for (datum, row) in stored.iter().zip(&held_out) {
            assert_eq!(&datum::decode(datum, &reader).unwrap(), *row);
        }
    }
    assert!(
        extended >= 800,
        "only {extended} of 900 datums used the dictionary: the test proves little"
    );

    // A datum naming an id the store lacks.
    let other = pgdict::datum::PreparedDictionary::new(42, &dictionary_from(&rows)).unwrap();
    let datum = encoder
        .encode(held_out[0], Codec::Pglz, Some(&other))
        .unwrap();
    let err = datum::decode(&datum, &store).unwrap_err();
    assert_eq!(
        err,
        DatumError::MissingDictionary {
            id: 42,
            store: store.describe(),
        }
    );
    let message = err.to_string();
    assert!(message.contains("dictionary 42"), "{message}");
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );

    // A datum whose dictionary file is damaged: the message says what is wrong with it.
    fs::copy(store.file_path(1), store.file_path(42)).unwrap();
    let fresh = DirStore::open(dir.path()).unwrap();
    let err = datum::decode(&datum, &fresh).unwrap_err();
    let message = err.to_string();
    // The store's own error travels with it, for a caller to act on.
    let DatumError::DictionaryUnreadable { id: 42, reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(
            reason.downcast_ref::<StoreError>(),
            Some(StoreError::IdMismatch {
                filed: 42,
                inside: 1,
                ..
            })
        ),
        "{reason:?}"
    );
    assert!(message.contains("00000042.pgdict"), "{message}");
    assert!(message.contains("holds dictionary 1"), "{message}");
    assert!(DictionaryLookup::dictionary(&fresh, 1).unwrap().is_some());
}

#[test]
fn default_path_is_dicts_unless_pgdict_store_is_set() {
    // The only test in this binary that touches PGDICT_STORE.
    std::env::remove_var("PGDICT_STORE");
    assert_eq!(DirStore::default_path(), PathBuf::from("dicts"));
    std::env::set_var("PGDICT_STORE", "/srv/pgdict/dicts");
    assert_eq!(DirStore::default_path(), PathBuf::from("/srv/pgdict/dicts"));
    std::env::set_var("PGDICT_STORE", "");
    assert_eq!(DirStore::default_path(), PathBuf::from("dicts"));
    std::env::remove_var("PGDICT_STORE");

    let missing = tempfile::tempdir().unwrap().path().join("nope");
    let err = DirStore::open(&missing).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    let created = DirStore::create(&missing).unwrap();
    assert!(created.list().unwrap().is_empty());
    fs::remove_dir(&missing).unwrap();
    // Nor is a file: it is refused when opened, not when first listed.
    let file = tempfile::NamedTempFile::new().unwrap();
    let err = DirStore::open(file.path()).unwrap_err();
    assert!(
        matches!(&err, StoreError::NotAStore { reason, .. } if reason == "not a directory"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency and crashes, with real processes

#[test]
fn concurrent_adders_in_separate_processes_get_distinct_ids() {
    let (dir, _store) = new_store();
    concurrent_adders_get_distinct_ids(dir.path());
}

/// The same on exFAT, which has no hard links: the adds claim their ids instead.
#[test]
fn concurrent_adders_get_distinct_ids_without_hard_links() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    assert_no_hard_links(exfat.path());
    concurrent_adders_get_distinct_ids(exfat.path());
}

/// Without hard links, a claim a crashed add left holds its id: an add takes the next one,
/// and a sync that must put that very id in says which claim is in the way.
#[test]
fn a_leftover_claim_is_named_when_it_holds_an_id_without_hard_links() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    let store = DirStore::open(exfat.path()).unwrap();
    let claim = exfat.path().join(".tmp-claim-00000001");
    fs::write(&claim, b"").unwrap();
    let added = store
        .add(CodecSet::ALL, &content("c", 0), Metadata::new())
        .unwrap();
    assert_eq!(added.id(), 2);
    let one = Dictionary::new(1, CodecSet::ALL, 0, Metadata::new(), &content("c", 1)).unwrap();
    let err = store.insert(&one).unwrap_err();
    assert!(
        matches!(&err, StoreError::Claimed { id: 1, claim: named, .. } if *named == claim),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("removed once an hour old"),
        "{err}"
    );
    assert!(!store.file_path(1).exists());
}

/// A claim a crash left is removed once stale by the insert it is in the way of: a sync used
/// to fail on it for good, as only a successful write removed stale files.
#[test]
fn a_stale_claim_does_not_block_an_insert() {
    let (dir, store) = new_store();
    let claim = dir.path().join(".tmp-claim-00000003");
    let file = File::create(&claim).unwrap();
    file.set_modified(
        SystemTime::now() - dict::dir_store::STALE_TEMP_AGE - Duration::from_secs(60),
    )
    .unwrap();
    drop(file);
    let three = Dictionary::new(3, CodecSet::ALL, 0, Metadata::new(), &content("c", 3)).unwrap();
    assert_eq!(store.insert(&three).unwrap(), Inserted::Added);
    assert!(!claim.exists());
    assert_eq!(store.get(3).unwrap().content(), content("c", 3));
}

/// An insert that finds another writer's claim on the id waits for that writer, then compares
/// with what it wrote: three syncs into one store at once used to fail now and then with
/// "gave up ... taken by others", having looked twice within microseconds.
#[test]
fn an_insert_waits_for_the_writer_holding_the_claim() {
    let (source_dir, source) = new_store();
    source
        .add(CodecSet::ALL, &content("c", 0), Metadata::new())
        .unwrap();
    let (dir, store) = new_store();
    let claim = dir.path().join(".tmp-claim-00000001");
    fs::write(&claim, b"").unwrap();
    let other_writer = thread::spawn({
        let (from, to) = (source.file_path(1), store.file_path(1));
        // Written whole beside the source, then named, as a writer publishes: a copy made in
        // place could be read half written (Damaged), which no real writer shows.
        let whole = source_dir.path().join("copy");
        move || {
            thread::sleep(Duration::from_millis(50));
            fs::copy(from, &whole).unwrap();
            fs::rename(&whole, to).unwrap();
            fs::remove_file(claim).unwrap();
        }
    });
    let inserted = store.insert(&source.get(1).unwrap());
    other_writer.join().unwrap();
    assert_eq!(inserted.unwrap(), Inserted::AlreadyPresent);
    drop(source_dir);
}

/// A FIFO or a symbolic link to nothing under a dictionary's name is named as what it is;
/// reading the FIFO used to wait for a writer forever, and the link was "not in the store".
#[test]
fn a_fifo_or_dangling_link_named_as_a_dictionary_is_an_error_naming_it() {
    let (dir, store) = new_store();
    store
        .add(CodecSet::ALL, &content("c", 0), Metadata::new())
        .unwrap();
    let fifo = store.file_path(2);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink(dir.path().join("nowhere"), store.file_path(3)).unwrap();
    let fresh = DirStore::open(dir.path()).unwrap();
    assert_eq!(ids(&fresh.list().unwrap()), [1, 2, 3]);
    let err = fresh.get(2).unwrap_err();
    assert!(
        matches!(&err, StoreError::Io { path, .. } if *path == fifo),
        "{err:?}"
    );
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = fresh.get(3).unwrap_err();
    assert!(
        matches!(&err, StoreError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound),
        "{err:?}"
    );
    assert!(err.to_string().contains("00000003.pgdict"), "{err}");
    assert_eq!(fresh.get(1).unwrap().content(), content("c", 0));
}

/// An id lost once is not tried again, even when the listing does not show what took it: on
/// exFAT, which ignores case in names, `00000001.PGDICT` (no dictionary name, so not counted)
/// takes `00000001.pgdict`'s name. The add moves on to the next id at once, where it used to
/// try id 1 a thousand times and give up, and the file in the way is left as it was.
#[test]
fn an_id_lost_once_is_not_tried_again() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    let in_the_way = exfat.path().join("00000001.PGDICT");
    fs::write(&in_the_way, b"not a dictionary").unwrap();
    assert!(
        exfat.path().join("00000001.pgdict").exists(),
        "exFAT ignores case"
    );
    let store = DirStore::open(exfat.path()).unwrap();
    let added = store
        .add(CodecSet::ALL, &content("c", 0), Metadata::new())
        .unwrap();
    assert_eq!(added.id(), 2);
    assert_eq!(store.get(2).unwrap().content(), content("c", 0));
    assert_eq!(fs::read(&in_the_way).unwrap(), b"not a dictionary");
    assert!(claims(exfat.path()).is_empty());
}

/// Checks that `link(2)` fails in `dir`, as the tests of stores without hard links assume.
fn assert_no_hard_links(dir: &Path) {
    let file = dir.join("link-probe");
    fs::write(&file, b"x").unwrap();
    let linked = fs::hard_link(&file, dir.join("link-probe-2"));
    assert!(linked.is_err(), "{} has hard links", dir.display());
    fs::remove_file(&file).unwrap();
}

/// 8 processes add 5 dictionaries each to the empty store `dir` at once.
fn concurrent_adders_get_distinct_ids(dir: &Path) {
    const PROCESSES: usize = 8;
    const ADDS: usize = 5;
    let go_dir = tempfile::tempdir().unwrap();
    let go = go_dir.path().join("go");
    let children: Vec<Child> = (0..PROCESSES)
        .map(|p| spawn_adder(dir, ADDS, &format!("p{p}"), Some(&go), false, false))
        .collect();
    // Let every child start and wait at the go file, then release them together.
    std::thread::sleep(Duration::from_millis(300));
    fs::write(&go, b"go").unwrap();
    let mut reports = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "child failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let lines = reported(&output.stdout);
        assert_eq!(
            lines.len(),
            ADDS,
            "{}",
            String::from_utf8_lossy(&output.stdout)
        );
        reports.extend(lines);
    }
    let reported_ids: BTreeSet<u32> = reports.iter().map(|r| r.0).collect();
    assert_eq!(reported_ids.len(), PROCESSES * ADDS, "two adds got one id");
    assert_eq!(
        reported_ids,
        (1..=(PROCESSES * ADDS) as u32).collect::<BTreeSet<_>>()
    );
    // Every file is valid, and holds what the process that got its id added.
    let loaded = load_all(dir);
    assert_eq!(loaded.len(), PROCESSES * ADDS);
    for (id, tag, index) in &reports {
        let dict = loaded[id].as_ref().unwrap();
        assert_eq!(dict.content(), &content(tag, *index)[..], "id {id}");
        assert_eq!(dict.metadata().source, Some(format!("{tag}/{index}")));
    }
    let store = DirStore::open(dir).unwrap();
    assert!(store.temp_files().unwrap().is_empty());
}

/// Not a test: the body of the child that `durable_steps` traces. It adds dictionaries 1 and
/// 2, retires 1, then damages 2's file and repairs it.
#[test]
#[ignore = "run by other tests in child processes"]
fn child_add_retire_repair() {
    let Some(store) = std::env::var_os(CHILD_STORE) else {
        return;
    };
    let store = DirStore::open(store).unwrap();
    let add = |index| {
        store
            .add(CodecSet::ALL, &content("t", index), Metadata::new())
            .unwrap()
    };
    let (one, two) = (add(0), add(1));
    assert!(store.retire(one.id()).unwrap());
    fs::write(store.file_path(two.id()), b"damaged").unwrap();
    assert!(matches!(
        store.repair(&two).unwrap(),
        Repaired::Replaced { .. }
    ));
}

#[test]
fn adds_retirements_and_repairs_fsync_in_order() {
    let (dir, _store) = new_store();
    durable_steps(dir.path());
}

/// The same on exFAT, where files are named by rename and a repair copies the damaged bytes.
#[test]
fn adds_retirements_and_repairs_fsync_in_order_without_hard_links() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    durable_steps(exfat.path());
}

/// What `strace` saw a child do to names and files, in order (successful calls only).
#[derive(Debug)]
enum Step {
    /// A file created exclusively (`O_EXCL`).
    Create(PathBuf),
    /// An fsync of a file or a directory.
    Fsync(PathBuf),
    /// A link or a rename giving the file `from` the name `to`.
    Name { from: PathBuf, to: PathBuf },
}

/// The steps in an `strace -f -y -s 4096` log of openat, fsync, link and rename calls.
fn traced_steps(log: &str) -> Vec<Step> {
    let quoted = |args: &str| -> Vec<PathBuf> {
        args.split('"')
            .skip(1)
            .step_by(2)
            .map(PathBuf::from)
            .collect()
    };
    log.lines()
        .filter_map(|line| {
            // "<pid> <call>(<args>) = <result>", padded after a short pid and before the
            // "="; with -y an fd is "<n></path>".
            let (_pid, call) = line.split_once(' ')?;
            let (name, rest) = call.trim_start().split_once('(')?;
            let (args, result) = rest.rsplit_once(" = ")?;
            let args = args.trim_end().strip_suffix(')')?;
            if result.starts_with('-') {
                return None;
            }
            match name {
                "openat" if args.contains("O_EXCL") => Some(Step::Create(quoted(args).pop()?)),
                "fsync" => {
                    let path = args.split_once('<')?.1.strip_suffix('>')?;
                    Some(Step::Fsync(path.into()))
                }
                "link" | "linkat" | "rename" | "renameat" | "renameat2" => {
                    let mut paths = quoted(args);
                    let to = paths.pop()?;
                    let from = paths.pop()?;
                    Some(Step::Name { from, to })
                }
                _ => None,
            }
        })
        .collect()
}

/// Runs `child_add_retire_repair` on the empty store `dir` under `strace`, and checks that
/// every change it makes is durable once made, as the module documentation of
/// `pgdict::dict::dir_store` says: a file's bytes are fsynced before it gets a dictionary's
/// name, a retirement marker is fsynced, and the directory is fsynced after each (a crash then
/// never leaves a dictionary's name on a file whose bytes are not on disk, nor loses a name
/// once the change is done). A repair keeps the damaged bytes (linked, or copied and fsynced)
/// before the intact copy takes the name. Only `strace` can see this: the files read the same
/// either way until the machine crashes.
fn durable_steps(dir: &Path) {
    let has_strace = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success());
    if !has_strace {
        assert!(
            std::env::var_os("PGDICT_REQUIRE_ROOT_TESTS").is_none(),
            "PGDICT_REQUIRE_ROOT_TESTS is set, but strace is missing (Debian: strace)"
        );
        eprintln!("skipped: tracing the store's system calls needs strace (CI has it)");
        return;
    }
    // Paths as strace prints an fd's: canonical.
    let dir = dir.canonicalize().unwrap();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("strace.log");
    let output = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "4096", "-e", "signal=none", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=openat,fsync,link,linkat,rename,renameat,renameat2",
        ])
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child_add_retire_repair"])
        .args(["--nocapture", "--test-threads", "1"])
        .env(CHILD_STORE, &dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let log = fs::read_to_string(&log).unwrap();
    let steps = traced_steps(&log);
    let name = |path: &Path| path.file_name().unwrap().to_string_lossy().into_owned();
    let is_change = |step: &Step| match step {
        Step::Name { to, .. } => name(to).ends_with(".pgdict"),
        Step::Create(path) => name(path).ends_with(".retired"),
        Step::Fsync(_) => false,
    };
    let fsync_of = |step: &Step, path: &Path| matches!(step, Step::Fsync(p) if p == path);
    let mut named = Vec::new();
    let mut retired = Vec::new();
    for (at, step) in steps.iter().enumerate() {
        if !is_change(step) {
            continue;
        }
        // What the change did before the next change began.
        let after: Vec<&Step> = steps[at + 1..]
            .iter()
            .take_while(|s| !is_change(s))
            .collect();
        match step {
            Step::Name { from, to } => {
                assert!(
                    steps[..at].iter().any(|s| fsync_of(s, from)),
                    "{} named {} before its bytes were fsynced:\n{log}",
                    name(from),
                    name(to)
                );
                assert!(
                    after.iter().any(|s| fsync_of(s, &dir)),
                    "no fsync of the directory after naming {}:\n{log}",
                    name(to)
                );
                named.push((at, name(to)));
            }
            Step::Create(marker) => {
                let synced = after.iter().position(|s| fsync_of(s, marker));
                let dir_synced = after.iter().rposition(|s| fsync_of(s, &dir));
                assert!(
                    synced.is_some() && dir_synced > synced,
                    "{} was not fsynced, then its directory:\n{log}",
                    name(marker)
                );
                retired.push(name(marker));
            }
            Step::Fsync(_) => unreachable!(),
        }
    }
    let names: Vec<&str> = named.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        (names, retired),
        (
            vec!["00000001.pgdict", "00000002.pgdict", "00000002.pgdict"],
            vec!["00000001.retired".to_string()]
        ),
        "{log}"
    );
    // The repair (the last naming) kept the damaged bytes first.
    let repair = named[2].0;
    let kept = steps[..repair].iter().any(|step| match step {
        Step::Name { to, .. } => name(to).starts_with(".damaged-"),
        Step::Fsync(path) => name(path).starts_with(".damaged-"),
        Step::Create(_) => false,
    });
    assert!(kept, "the damaged bytes were not kept durably:\n{log}");
}

#[test]
fn a_process_killed_between_temp_file_and_rename_leaves_a_valid_store() {
    let (dir, _store) = new_store();
    killed_between_temp_file_and_rename(dir.path());
}

#[test]
fn a_process_killed_between_temp_file_and_rename_leaves_a_valid_store_without_hard_links() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    killed_between_temp_file_and_rename(exfat.path());
}

/// A child adding a third dictionary to the store `dir` aborts once its temporary file is
/// written.
fn killed_between_temp_file_and_rename(dir: &Path) {
    let store = DirStore::open(dir).unwrap();
    for index in 0..2 {
        store
            .add(CodecSet::ALL, &content("g", index), Metadata::new())
            .unwrap();
    }
    let before = snapshot(dir);
    let output = spawn_adder(dir, 1, "crash", None, true, false)
        .wait_with_output()
        .unwrap();
    assert_eq!(
        output.status.signal(),
        Some(6),
        "the child should have aborted (SIGABRT) in add: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(reported(&output.stdout).is_empty());

    // The child got as far as a complete temporary file for id 3, and no further.
    let temps = store.temp_files().unwrap();
    assert_eq!(temps.len(), 1, "{temps:?}");
    let temp = Dictionary::from_bytes(&fs::read(&temps[0]).unwrap()).unwrap();
    assert_eq!(temp.id(), 3);
    assert_eq!(temp.content(), &content("crash", 0)[..]);
    // The store is as before: no dictionary 3, the others valid.
    let mut after = snapshot(dir);
    after.retain(|name, _| !name.starts_with(".tmp-"));
    assert_eq!(after, before);
    let fresh = DirStore::open(dir).unwrap();
    assert_eq!(ids(&fresh.list().unwrap()), vec![1, 2]);
    assert!(matches!(
        fresh.get(3),
        Err(StoreError::NotFound { id: 3, .. })
    ));
    assert!(load_all(dir).values().all(Result::is_ok));
    // The id was never used, so the next add takes it; then the leftover can be cleaned.
    let next = fresh
        .add(CodecSet::ALL, &content("g", 2), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 3);
    assert_eq!(
        fresh.remove_temp_files(Duration::from_secs(3600)).unwrap(),
        0
    );
    assert_eq!(fresh.remove_temp_files(Duration::ZERO).unwrap(), 1);
    assert!(fresh.temp_files().unwrap().is_empty());
    assert_eq!(ids(&fresh.list().unwrap()), vec![1, 2, 3]);
}

#[test]
fn processes_killed_at_arbitrary_points_leave_a_valid_store() {
    let (dir, _store) = new_store();
    killed_at_arbitrary_points(dir.path());
}

#[test]
fn processes_killed_at_arbitrary_points_leave_a_valid_store_without_hard_links() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    killed_at_arbitrary_points(exfat.path());
}

/// Three rounds of 4 processes adding to the store `dir`, killed after 40, 95 and 150 ms.
fn killed_at_arbitrary_points(dir: &Path) {
    const PROCESSES: usize = 4;
    let mut total_killed = 0;
    // Ids that claims killed adds left took, with no dictionary.
    let mut skipped = BTreeSet::new();
    for (round, delay_ms) in [40u64, 95, 150].into_iter().enumerate() {
        let children: Vec<Child> = (0..PROCESSES)
            .map(|p| spawn_adder(dir, 100_000, &format!("r{round}p{p}"), None, false, true))
            .collect();
        // Process start-up takes a while; wait until the round's first dictionaries appear,
        // then kill everyone in the middle of whatever they are doing.
        let start_count = DirStore::open(dir).unwrap().list().unwrap().len();
        let deadline = Instant::now() + Duration::from_secs(30);
        while DirStore::open(dir).unwrap().list().unwrap().len() < start_count + 2 {
            assert!(Instant::now() < deadline, "the children added nothing");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        for mut child in children {
            child.kill().unwrap();
            let status = child.wait().unwrap();
            assert_eq!(status.signal(), Some(9), "{status}");
            total_killed += 1;
        }
        // Every id from 1 up is a complete, valid dictionary: no partial files, and no gaps
        // but the ids of claims that killed adds left (only without hard links), which no
        // add takes.
        let loaded = load_all(dir);
        let claimed = claims(dir);
        // A claim without its dictionary (the add was killed before its rename) leaves a gap
        // for good: removing the claim below frees no id, as a later one is taken by then.
        skipped.extend(claimed.iter().filter(|id| !loaded.contains_key(id)));
        let n = loaded.keys().chain(&skipped).copied().max().unwrap();
        assert!(loaded.len() > start_count, "round {round} added nothing");
        assert!(loaded.keys().all(|id| !skipped.contains(id)));
        assert_eq!(
            loaded
                .keys()
                .chain(&skipped)
                .copied()
                .collect::<BTreeSet<_>>(),
            (1..=n).collect::<BTreeSet<_>>()
        );
        for (id, dict) in &loaded {
            let dict = dict.as_ref().unwrap_or_else(|e| panic!("id {id}: {e}"));
            assert!(dict.metadata().source.unwrap().starts_with('r'));
        }
        // The store takes new dictionaries at the next id.
        let store = DirStore::open(dir).unwrap();
        let next = store
            .add(
                CodecSet::ALL,
                &content("after", round),
                metadata(&format!("round {round}, after the kills")),
            )
            .unwrap();
        assert_eq!(next.id(), n + 1);
        // Leftover temporary files (an add killed before its link) are never dictionaries.
        let temps = store.temp_files().unwrap();
        eprintln!(
            "round {round}: {} dictionaries after killing {PROCESSES} adders, {} temporary \
             files left ({} of them claims)",
            loaded.len(),
            temps.len(),
            claimed.len()
        );
        for temp in temps {
            let name = temp.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with(".tmp-"), "{name}");
        }
        store.remove_temp_files(Duration::ZERO).unwrap();
    }
    assert_eq!(total_killed, 3 * PROCESSES);
}

// ---------------------------------------------------------------------------------------------
// Sync between directory stores

/// Two new stores, the first (the source of a sync) holding dictionaries 1 to `dicts`.
fn source_and_destination(dicts: usize) -> [(TempDir, DirStore); 2] {
    let source = new_store();
    for index in 0..dicts {
        source
            .1
            .add(CodecSet::ALL, &content("s", index), metadata("s"))
            .unwrap();
    }
    [source, new_store()]
}

/// A directory store whose writes fail once `writes` of them are done (a disk that fills,
/// a connection lost), for syncs that stop part way.
struct FailingStore {
    store: DirStore,
    writes: std::cell::Cell<usize>,
}

impl FailingStore {
    fn write(&self) -> Result<(), StoreError> {
        match self.writes.get().checked_sub(1) {
            Some(left) => {
                self.writes.set(left);
                Ok(())
            }
            None => Err(StoreError::Io {
                op: "write",
                path: self.store.path().to_path_buf(),
                source: io::Error::from_raw_os_error(28), // ENOSPC
            }),
        }
    }
}

impl Store for FailingStore {
    fn describe(&self) -> String {
        self.store.describe()
    }
    fn entries(&self) -> Result<Vec<StoreEntry>, StoreError> {
        Store::entries(&self.store)
    }
    fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        Store::get(&self.store, id)
    }
}

impl Destination for FailingStore {
    fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.write()?;
        self.store.insert(dict)
    }
    fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.write()?;
        self.store.insert_retired(dict)
    }
    fn retire(&self, id: u32) -> Result<bool, StoreError> {
        self.write()?;
        self.store.retire(id)
    }
    fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError> {
        self.write()?;
        self.store.repair(dict)
    }
}

/// `insert_retired` makes the retirement marker before it puts the dictionary in, so that the
/// dictionary is never active there, and the marker stays when the insert fails: here the id
/// holds another dictionary (only a second source can put one there), which is refused, and
/// retired.
#[test]
fn insert_retired_retires_the_id_first() {
    let (_dir, store) = new_store();
    let theirs = store
        .add(CodecSet::ALL, &content("i", 0), Metadata::new())
        .unwrap();
    let ours = Dictionary::new(1, CodecSet::ALL, 0, Metadata::new(), &content("i", 1)).unwrap();
    let err = store.insert_retired(&ours).unwrap_err();
    assert!(matches!(err, StoreError::Exists { id: 1, .. }), "{err:?}");
    assert!(store.is_retired(1).unwrap());
    assert_eq!(store.get(1).unwrap().content(), theirs.content());
    // Into a free id: in, and retired.
    let two = ours.with_id(2).unwrap();
    assert_eq!(store.insert_retired(&two).unwrap(), Inserted::Added);
    assert_eq!(
        store.list().unwrap(),
        [1, 2].map(|id| StoreEntry { id, retired: true })
    );
}

/// A destination with another writer that acts just before this sync makes each change.
struct Raced {
    store: DirStore,
    other: OtherWriter,
}

/// What [`Raced`]'s other writer does.
#[derive(Clone, Copy, PartialEq)]
enum OtherWriter {
    /// Makes the same change (a second sync of the same source).
    SameSync,
    /// Puts each dictionary in active (a sync from another source that has not retired it
    /// yet); changes nothing else. Before `insert_retired`'s marker or between the marker and
    /// the file, it is the same to that: the marker is made just now, and the file is found
    /// there.
    AddsActive,
}

impl Raced {
    fn new(dir: &Path, other: OtherWriter) -> Raced {
        Raced {
            store: DirStore::open(dir).unwrap(),
            other,
        }
    }
}

impl Store for Raced {
    fn describe(&self) -> String {
        self.store.describe()
    }
    fn entries(&self) -> Result<Vec<StoreEntry>, StoreError> {
        Store::entries(&self.store)
    }
    fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        Store::get(&self.store, id)
    }
}

impl Destination for Raced {
    fn insert(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        self.store.insert(dict)?;
        self.store.insert(dict)
    }
    fn insert_retired(&self, dict: &Dictionary) -> Result<Inserted, StoreError> {
        match self.other {
            OtherWriter::SameSync => self.store.insert_retired(dict)?,
            OtherWriter::AddsActive => self.store.insert(dict)?,
        };
        self.store.insert_retired(dict)
    }
    fn retire(&self, id: u32) -> Result<bool, StoreError> {
        if self.other == OtherWriter::SameSync {
            self.store.retire(id)?;
        }
        self.store.retire(id)
    }
    fn repair(&self, dict: &Dictionary) -> Result<Repaired, StoreError> {
        if self.other == OtherWriter::SameSync {
            self.store.repair(dict)?;
        }
        self.store.repair(dict)
    }
}

/// Two syncs of one source into one store at once: what the other one did between this one's
/// check and its write is found done, and reported as present, not as done again.
#[test]
fn a_sync_finds_done_what_another_did_meanwhile() {
    let [(_src_dir, source), (dst_dir, destination)] = source_and_destination(4);
    for id in [1, 2] {
        destination.insert(&source.get(id).unwrap()).unwrap();
    }
    fs::write(destination.file_path(1), b"damaged").unwrap();
    for id in [2, 3] {
        source.retire(id).unwrap();
    }
    let raced = Raced::new(dst_dir.path(), OtherWriter::SameSync);
    let report = dict::sync_with(&source, &raced, SyncOptions { repair: true }).unwrap();
    assert_eq!(
        report,
        SyncReport {
            present: vec![1, 2, 3, 4],
            ..SyncReport::default()
        }
    );
    assert_eq!(
        destination.list().unwrap(),
        [1, 2, 3, 4].map(|id| StoreEntry {
            id,
            retired: id == 2 || id == 3
        })
    );
    for id in 1..=4 {
        assert_eq!(
            destination.get(id).unwrap().to_bytes(),
            source.get(id).unwrap().to_bytes()
        );
    }
}

/// A dictionary the source has retired, put in active by another writer after the sync
/// looked: the sync's `insert_retired` retires it, and the report says so, as a sync into a
/// PostgreSQL store says (`tests/store_pg.rs`, its `Raced`). It used to say it was present
/// only: the marker `insert_retired` makes first was the retirement, and retiring again found
/// it made.
#[test]
fn a_sync_reports_retiring_what_a_writer_added_active_meanwhile() {
    let [(_src_dir, source), (dst_dir, destination)] = source_and_destination(3);
    source.retire(3).unwrap();
    let raced = Raced::new(dst_dir.path(), OtherWriter::AddsActive);
    let report = dict::sync(&source, &raced).unwrap();
    assert_eq!(
        report,
        SyncReport {
            present: vec![1, 2, 3],
            retired: vec![3],
            ..SyncReport::default()
        }
    );
    assert_eq!(
        destination.list().unwrap(),
        [1, 2, 3].map(|id| StoreEntry {
            id,
            retired: id == 3
        })
    );
    // Found there retired already, it is present alone: the marker was not made just now.
    let three = source.get(3).unwrap();
    assert_eq!(
        destination.insert_retired(&three).unwrap(),
        Inserted::AlreadyPresent
    );
}

/// A sync that fails part way leaves no dictionary active that the source has retired, and
/// says what it did before the failure. It used to copy everything first and retire last, so
/// a full disk left every retired dictionary it had copied active: `--dict auto` then
/// compressed with a dictionary its operator had retired.
#[test]
fn a_sync_that_stops_part_way_leaves_no_retired_dictionary_active() {
    let [(_src_dir, source), (_dst_dir, destination)] = source_and_destination(5);
    // The destination holds 1 and 2, active; the source has retired 2, 3 and 4.
    for id in [1, 2] {
        destination.insert(&source.get(id).unwrap()).unwrap();
    }
    for id in [2, 3, 4] {
        source.retire(id).unwrap();
    }
    for writes in 0..4 {
        let copy = TempDir::new().unwrap();
        let to = DirStore::create(copy.path().join("dicts")).unwrap();
        for id in [1, 2] {
            to.insert(&source.get(id).unwrap()).unwrap();
        }
        let failing = FailingStore {
            store: to,
            writes: writes.into(),
        };
        let mut report = SyncReport::default();
        let error =
            dict::sync_into(&source, &failing, SyncOptions::default(), &mut report).unwrap_err();
        assert!(error.to_string().contains("No space left"), "{error}");
        // Every dictionary the sync put there went in as the source has it: retired or not.
        let to = &failing.store;
        let mut copied = Vec::new();
        for entry in to.list().unwrap().into_iter().filter(|e| e.id > 2) {
            let retired_in_source = source.is_retired(entry.id).unwrap();
            assert_eq!(
                entry.retired, retired_in_source,
                "after {writes} writes: dictionary {} in {report:?}",
                entry.id
            );
            copied.push(entry.id);
        }
        assert_eq!(copied, report.copied);
        // The report says what was done: every copy and retirement it lists is there.
        for &id in &report.copied {
            assert_eq!(
                to.get(id).unwrap().to_bytes(),
                source.get(id).unwrap().to_bytes()
            );
        }
        for &id in &report.retired {
            assert!(to.is_retired(id).unwrap(), "{id} reported retired");
        }
        // The writes, in order: retire 2 (held already), copy 3 and 4 retired, copy 5.
        assert_eq!(report.retired.len(), writes.min(3), "{report:?}");
        assert_eq!(report.copied.len(), writes.saturating_sub(1), "{report:?}");
    }
    // Without a failure: everything.
    let report = dict::sync(&source, &destination).unwrap();
    assert_eq!(report.copied, vec![3, 4, 5]);
    assert_eq!(report.retired, vec![2, 3, 4]);
    assert!(destination.is_retired(3).unwrap() && !destination.is_retired(5).unwrap());
}

#[test]
fn sync_copies_what_is_missing_and_retirements() {
    let [(_src_dir, source), (dst_dir, destination)] = source_and_destination(4);
    source.retire(2).unwrap();
    // The destination already has dictionary 1 (the same one, copied earlier).
    destination.insert(&source.get(1).unwrap()).unwrap();

    let report = dict::sync(&source, &destination).unwrap();
    assert_eq!(report.copied, vec![2, 3, 4]);
    assert_eq!(report.present, vec![1]);
    assert_eq!(report.retired, vec![2]);
    let loaded = load_all(dst_dir.path());
    assert_eq!(loaded.len(), 4);
    for (id, dict) in loaded {
        let dict = dict.unwrap();
        // Copied byte for byte: metadata and creation time included.
        assert_eq!(dict.to_bytes(), source.get(id).unwrap().to_bytes());
    }
    assert!(destination.is_retired(2).unwrap());
    assert!(destination.temp_files().unwrap().is_empty());

    // Nothing left to do; then a retirement in the source follows.
    let report = dict::sync(&source, &destination).unwrap();
    assert_eq!(report.copied, Vec::<u32>::new());
    assert_eq!(report.present, vec![1, 2, 3, 4]);
    assert!(report.retired.is_empty());
    source.retire(4).unwrap();
    assert_eq!(dict::sync(&source, &destination).unwrap().retired, vec![4]);
    // New dictionaries in the destination continue after the synced ids.
    let next = destination
        .add(CodecSet::ALL, &content("d", 0), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 5);
}

#[test]
fn sync_refuses_a_conflict_and_changes_nothing() {
    let [(_src_dir, source), (dst_dir, destination)] = source_and_destination(4);
    // The destination's own dictionaries 1 and 2: 1 is the same, 2 is not.
    destination.insert(&source.get(1).unwrap()).unwrap();
    destination
        .add(CodecSet::ALL, &content("other", 0), Metadata::new())
        .unwrap();
    source.retire(1).unwrap();
    let before = snapshot(dst_dir.path());

    let err = dict::sync(&source, &destination).unwrap_err();
    match &err {
        StoreError::Conflict { conflicts, .. } => {
            assert_eq!(conflicts.len(), 1);
            assert_eq!(conflicts[0].id, 2);
            assert_eq!(
                conflicts[0].from_sha256,
                source.get(2).unwrap().content_sha256()
            );
        }
        other => panic!("expected a conflict: {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("nothing changed"), "{message}");
    assert!(message.contains("id 2"), "{message}");
    // Not even the missing ids 3 and 4, nor the retirement of 1, were written.
    assert_eq!(snapshot(dst_dir.path()), before);

    // `insert` refuses the same way, one id at a time.
    let err = destination.insert(&source.get(2).unwrap()).unwrap_err();
    assert!(matches!(err, StoreError::Exists { id: 2, .. }), "{err:?}");
    assert_eq!(snapshot(dst_dir.path()), before);

    // Asked to repair, it still refuses: a damaged dictionary 1 is no reason to write anything.
    fs::write(dst_dir.path().join("00000001.pgdict"), b"damaged").unwrap();
    let before = snapshot(dst_dir.path());
    let destination = DirStore::open(dst_dir.path()).unwrap();
    let err = dict::sync_with(&source, &destination, SyncOptions { repair: true }).unwrap_err();
    match &err {
        StoreError::Conflict { conflicts, .. } => {
            assert_eq!(conflicts.iter().map(|c| c.id).collect::<Vec<_>>(), vec![2])
        }
        other => panic!("expected a conflict: {other:?}"),
    }
    assert_eq!(snapshot(dst_dir.path()), before);
}

#[test]
fn sync_refuses_a_damaged_source_and_changes_nothing() {
    let [(src_dir, _), (dst_dir, destination)] = source_and_destination(3);
    let path = src_dir.path().join("00000003.pgdict");
    let mut bytes = fs::read(&path).unwrap();
    bytes[70] ^= 1;
    fs::write(&path, bytes).unwrap();
    let source = DirStore::open(src_dir.path()).unwrap();
    let err = dict::sync(&source, &destination).unwrap_err();
    match &err {
        StoreError::Damaged { location, .. } => {
            assert!(location.ends_with("00000003.pgdict"), "{err}")
        }
        other => panic!("expected a damaged source: {other:?}"),
    }
    assert!(snapshot(dst_dir.path()).is_empty());
}

#[test]
fn sync_repairs_damaged_destination_files_only_when_asked() {
    let dst_dir = tempfile::tempdir().unwrap();
    sync_repairs_damaged_files_in(dst_dir.path());
}

/// The same with the destination on exFAT: a repair keeps the damaged bytes by copying them,
/// as there are no hard links.
#[test]
fn sync_repairs_damaged_destination_files_without_hard_links() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    sync_repairs_damaged_files_in(exfat.path());
}

/// Syncs dictionaries 1 to 3 of a source to the empty store `dst`, damages two of them, and
/// checks that only a sync asked to repair them does.
fn sync_repairs_damaged_files_in(dst: &Path) {
    let [(_src_dir, source), _] = source_and_destination(4);
    let destination = DirStore::open(dst).unwrap();
    for id in 1..=3 {
        destination.insert(&source.get(id).unwrap()).unwrap();
    }
    for id in [3, 4] {
        source.retire(id).unwrap();
    }
    // Dictionary 2's file gets a flipped bit; 3's is replaced by dictionary 1's file.
    let path = |id: u32| dst.join(format!("{id:08}.pgdict"));
    let mut flipped = fs::read(path(2)).unwrap();
    flipped[80] ^= 0x10;
    fs::write(path(2), &flipped).unwrap();
    let misfiled = fs::read(path(1)).unwrap();
    fs::write(path(3), &misfiled).unwrap();
    let before = snapshot(dst);

    // Not asked to repair: the damaged file stops the sync, and nothing is written.
    let destination = DirStore::open(dst).unwrap();
    let err = dict::sync(&source, &destination).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    assert_eq!(snapshot(dst), before);

    let repair = SyncOptions { repair: true };
    let report = dict::sync_with(&source, &destination, repair).unwrap();
    assert_eq!(report.copied, vec![4]);
    assert_eq!(report.present, vec![1]);
    // Retired as it went in (4), and after its repair (3): reported by id.
    assert_eq!(report.retired, vec![3, 4]);
    let repaired: Vec<u32> = report.repaired.iter().map(|(id, _)| *id).collect();
    assert_eq!(repaired, vec![2, 3]);
    // Every file now holds the source's dictionary, byte for byte.
    let loaded = load_all(dst);
    assert_eq!(loaded.keys().copied().collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    for (id, dict) in loaded {
        assert_eq!(dict.unwrap().to_bytes(), source.get(id).unwrap().to_bytes());
    }
    // The damaged bytes are kept, hidden, and count as no dictionary and no temporary file.
    for ((id, kept_as), damaged) in report.repaired.iter().zip([&flipped, &misfiled]) {
        assert_eq!(kept_as.parent(), Some(dst));
        let name = kept_as.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&format!(".damaged-{id:08}-")), "{name}");
        assert_eq!(&fs::read(kept_as).unwrap(), damaged);
    }
    assert!(destination.temp_files().unwrap().is_empty());
    assert_eq!(ids(&destination.list().unwrap()), vec![1, 2, 3, 4]);
    assert!(destination.is_retired(3).unwrap());
    // The store in use was repaired too (what it cached), and the next id follows.
    assert_eq!(
        destination.get(2).unwrap().content_sha256(),
        source.get(2).unwrap().content_sha256()
    );
    let next = destination
        .add(CodecSet::ALL, &content("d", 0), Metadata::new())
        .unwrap();
    assert_eq!(next.id(), 5);

    // Once repaired, there is nothing to repair; an intact file is never replaced.
    let report = dict::sync_with(&source, &destination, repair).unwrap();
    assert!(report.repaired.is_empty());
    assert_eq!(
        destination.repair(&source.get(2).unwrap()).unwrap(),
        Repaired::AlreadyIntact
    );
    let other = Dictionary::new(2, CodecSet::ALL, 0, Metadata::new(), &content("o", 0)).unwrap();
    let err = destination.repair(&other).unwrap_err();
    assert!(matches!(err, StoreError::Exists { id: 2, .. }), "{err:?}");
    let err = destination.repair(&source.get(4).unwrap().with_id(9).unwrap());
    assert!(
        matches!(err, Err(StoreError::NotFound { id: 9, .. })),
        "{err:?}"
    );
}

/// `check_can_add` probes where an add would write, and leaves nothing behind.
#[test]
fn check_can_add_creates_nothing() {
    let (dir, store) = new_store();
    store
        .add(CodecSet::ALL, &content("c", 0), Metadata::new())
        .unwrap();
    let before = snapshot(dir.path());
    DirStore::check_can_add(dir.path()).unwrap();
    // A store that does not exist yet: the nearest directory above it is probed.
    DirStore::check_can_add(dir.path().join("new/deeper")).unwrap();
    assert_eq!(snapshot(dir.path()), before);
    assert!(!dir.path().join("new").exists());
    let file = dir.path().join("00000001.pgdict");
    let err = DirStore::check_can_add(&file).unwrap_err();
    assert!(
        matches!(&err, StoreError::NotAStore { path, .. } if *path == file),
        "{err:?}"
    );
}

/// On a read-only file system, `check_can_add` names the directory that refuses a file: the
/// store's own, or the one it would be made in.
#[test]
fn check_can_add_names_the_directory_that_refuses_a_file() {
    let Some(small) = SmallFs::mount(64) else {
        return;
    };
    fs::create_dir(small.join("dicts")).unwrap();
    small.remount_read_only();
    let refusal = |store: PathBuf| match DirStore::check_can_add(store) {
        Err(StoreError::Io { op, path, .. }) => (op, path),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refusal(small.join("dicts")),
        ("create a file in", small.join("dicts"))
    );
    assert_eq!(
        refusal(small.join("new/dicts")),
        (
            "create the store's directory in",
            small.path().to_path_buf()
        )
    );
}

#[test]
fn an_add_removes_temporary_files_an_interrupted_add_left_an_hour_ago() {
    let (dir, store) = new_store();
    let stale = dir.path().join(".tmp-00000001-4242-0-0");
    let recent = dir.path().join(".tmp-00000001-4243-0-0");
    for path in [&stale, &recent] {
        fs::write(path, b"half a dictionary").unwrap();
    }
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 3600);
    fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    store
        .add(CodecSet::ALL, &content("a", 0), Metadata::new())
        .unwrap();
    // The recent one may be another writer's add in progress: it stays.
    assert_eq!(store.temp_files().unwrap(), vec![recent]);
    assert_eq!(ids(&store.list().unwrap()), vec![1]);
}
