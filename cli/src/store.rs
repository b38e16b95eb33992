//! The dictionary store a command works with: the directory (`--store`, `PGDICT_STORE`,
//! `dicts`) or, with `--pg-store`, the PostgreSQL one.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use pgdict::datum::{self, Codec, DictionaryLookup, LookupFailure, PreparedDictionary};
use pgdict::dict::{CodecSet, Dictionary, DirStore, Metadata, PgStore, StoreEntry, StoreError};

use crate::fail::user_error;
use crate::DictArg;
use crate::StoreArgs;

/// A directory store or a PostgreSQL store.
pub enum AnyStore {
    Dir(DirStore),
    Pg(Box<PgStore>),
}

impl AnyStore {
    /// Opens the store the arguments name; it must exist.
    pub fn open(args: &StoreArgs) -> anyhow::Result<AnyStore> {
        match &args.pg_store {
            Some(conninfo) => Ok(AnyStore::Pg(Box::new(
                PgStore::connect(conninfo)
                    .context("cannot open the PostgreSQL dictionary store")?,
            ))),
            None => Ok(AnyStore::Dir(open_dir(&args.store)?)),
        }
    }

    /// Opens the store the arguments name, creating a directory store that does not exist
    /// (a PostgreSQL store creates its tables itself).
    pub fn open_or_create(args: &StoreArgs) -> anyhow::Result<AnyStore> {
        match &args.pg_store {
            Some(_) => AnyStore::open(args),
            None => Ok(AnyStore::Dir(DirStore::create(&args.store).with_context(
                || {
                    format!(
                        "cannot create the dictionary store {}",
                        args.store.display()
                    )
                },
            )?)),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            AnyStore::Dir(s) => s.describe(),
            AnyStore::Pg(s) => s.describe(),
        }
    }

    pub fn list(&self) -> Result<Vec<StoreEntry>, StoreError> {
        match self {
            AnyStore::Dir(s) => s.list(),
            AnyStore::Pg(s) => s.list(),
        }
    }

    pub fn is_retired(&self, id: u32) -> Result<bool, StoreError> {
        match self {
            AnyStore::Dir(s) => s.is_retired(id),
            AnyStore::Pg(s) => s.is_retired(id),
        }
    }

    pub fn get(&self, id: u32) -> Result<Arc<Dictionary>, StoreError> {
        match self {
            AnyStore::Dir(s) => s.get(id),
            AnyStore::Pg(s) => s.get(id),
        }
    }

    pub fn prepared(&self, id: u32) -> Result<Arc<PreparedDictionary>, StoreError> {
        match self {
            AnyStore::Dir(s) => s.prepared(id),
            AnyStore::Pg(s) => s.prepared(id),
        }
    }

    pub fn active(&self, codec: Codec) -> Result<Option<Arc<Dictionary>>, StoreError> {
        match self {
            AnyStore::Dir(s) => s.active(codec),
            AnyStore::Pg(s) => s.active(codec),
        }
    }

    pub fn retire(&self, id: u32) -> Result<bool, StoreError> {
        match self {
            AnyStore::Dir(s) => s.retire(id),
            AnyStore::Pg(s) => s.retire(id),
        }
    }

    pub fn add(
        &self,
        codecs: CodecSet,
        content: &[u8],
        metadata: Metadata,
    ) -> Result<Arc<Dictionary>, StoreError> {
        match self {
            AnyStore::Dir(s) => s.add(codecs, content, metadata),
            AnyStore::Pg(s) => s.add(codecs, content, metadata),
        }
    }

    /// Where a dictionary lives, for messages: its file, or the store.
    pub fn location(&self, id: u32) -> String {
        match self {
            AnyStore::Dir(s) => s.file_path(id).display().to_string(),
            AnyStore::Pg(s) => s.describe(),
        }
    }

    /// The dictionary to compress `codec` with: `auto` is the newest active one built for the
    /// codec; an id must be built for the codec and not retired; `none` is none.
    pub fn choose(&self, choice: DictArg, codec: Codec) -> anyhow::Result<Option<Arc<Dictionary>>> {
        match choice {
            DictArg::None => Ok(None),
            DictArg::Auto => match self
                .active(codec)
                .with_context(|| format!("cannot look for a {codec} dictionary"))?
            {
                Some(dict) => Ok(Some(dict)),
                None => Err(user_error(
                    format!(
                        "{} has no active dictionary built for {codec}",
                        self.describe()
                    ),
                    match codec {
                        Codec::Zstd => "train one (`pgdict-trainer --codec zstd ROWS`) or give \
                                        --dict ID; without a dictionary zstd stores every row \
                                        raw"
                        .to_string(),
                        _ => format!(
                            "train one (`pgdict demo` makes a pglz and an lz4 dictionary, \
                             `pgdict-trainer --codec {codec} ROWS` one from your rows), give \
                             --dict ID, or --dict none for PostgreSQL's plain {codec}"
                        ),
                    },
                )),
            },
            DictArg::Id(id) => {
                let dict = self
                    .get(id)
                    .with_context(|| format!("cannot load dictionary {id}"))?;
                if !dict.codecs().contains(codec) {
                    return Err(user_error(
                        format!(
                            "dictionary {id} was built for {}, not for {codec}",
                            dict.codecs()
                        ),
                        format!("use --codec {} or another dictionary", first_codec(&dict)),
                    ));
                }
                // DESIGN.md: a retired dictionary still decodes but no longer compresses.
                let retired = self
                    .is_retired(id)
                    .with_context(|| format!("cannot read whether dictionary {id} is retired"))?;
                if retired {
                    return Err(user_error(
                        format!(
                            "dictionary {id} is retired: it still decodes the datums that name \
                             it, but no longer compresses"
                        ),
                        format!(
                            "give --dict auto (the newest active {codec} dictionary) or the id \
                             of an active one (`pgdict dict list`)"
                        ),
                    ));
                }
                Ok(Some(dict))
            }
        }
    }
}

fn first_codec(dict: &Dictionary) -> Codec {
    dict.codecs().iter().next().unwrap_or(Codec::Pglz)
}

/// Opens an existing directory store (a missing one gets [`crate::fail`]'s hint: `pgdict demo`
/// or `--store`).
pub fn open_dir(path: &Path) -> anyhow::Result<DirStore> {
    DirStore::open(path)
        .with_context(|| format!("cannot open the dictionary store {}", path.display()))
}

impl DictionaryLookup for AnyStore {
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        match self {
            AnyStore::Dir(s) => s.dictionary(id),
            AnyStore::Pg(s) => s.dictionary(id),
        }
    }

    fn describe(&self) -> String {
        match self {
            AnyStore::Dir(s) => DictionaryLookup::describe(s),
            AnyStore::Pg(s) => DictionaryLookup::describe(s.as_ref()),
        }
    }
}

/// A store opened on first use: decoding plain datums needs none, so a missing store only
/// matters once a datum names a dictionary.
pub struct LazyStore<'a> {
    args: &'a StoreArgs,
    store: OnceLock<Result<AnyStore, String>>,
}

impl<'a> LazyStore<'a> {
    pub fn new(args: &'a StoreArgs) -> LazyStore<'a> {
        LazyStore {
            args,
            store: OnceLock::new(),
        }
    }

    fn get(&self) -> &Result<AnyStore, String> {
        self.store.get_or_init(|| {
            AnyStore::open(self.args)
                .map_err(|e| e.chain().last().map(|c| c.to_string()).unwrap_or_default())
        })
    }

    /// What the arguments name, whether or not it could be opened.
    pub fn name(&self) -> String {
        match &self.args.pg_store {
            Some(_) => "the PostgreSQL store (--pg-store)".into(),
            None => format!("the dictionary store {}", self.args.store.display()),
        }
    }
}

impl DictionaryLookup for LazyStore<'_> {
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        match self.get() {
            Ok(store) => store.dictionary(id),
            // No store: the decode error names the id and says the store cannot be opened.
            Err(_) => Ok(None),
        }
    }

    fn describe(&self) -> String {
        match self.get() {
            Ok(store) => DictionaryLookup::describe(store),
            Err(why) => format!("{} (it cannot be opened: {why})", self.name()),
        }
    }
}

/// The dictionaries one thread has taken from a store, lent to its decoder by reference. A
/// store hands each dictionary out under a lock and as an `Arc`, and threads decoding side by
/// side contend on both for every datum; this asks once per dictionary a thread meets.
pub struct LocalDictionaries<'a> {
    store: &'a LazyStore<'a>,
    /// Few: most inputs name one dictionary or two.
    taken: Vec<(u32, Arc<PreparedDictionary>)>,
}

impl<'a> LocalDictionaries<'a> {
    pub fn new(store: &'a LazyStore<'a>) -> LocalDictionaries<'a> {
        LocalDictionaries {
            store,
            taken: Vec::new(),
        }
    }

    /// Takes from the store the dictionaries these datums name that this thread does not
    /// have yet. It stops at one that cannot be had rather than ask again for every datum
    /// naming it: from there the decoder asks the store itself, and fails at that datum with
    /// the store's reason, which ends the batch.
    pub fn take_for<'d>(&mut self, datums: impl IntoIterator<Item = &'d [u8]>) {
        for bytes in datums {
            let Some(id) = datum::read_header(bytes)
                .ok()
                .and_then(|h| h.form.dict_id())
            else {
                continue;
            };
            if self.taken.iter().all(|(taken, _)| *taken != id) {
                match self.store.dictionary(id) {
                    Ok(Some(dictionary)) => self.taken.push((id, dictionary)),
                    Ok(None) | Err(_) => return,
                }
            }
        }
    }
}

impl DictionaryLookup for LocalDictionaries<'_> {
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        self.store.dictionary(id)
    }

    fn borrowed(&self, id: u32) -> Option<&PreparedDictionary> {
        self.taken
            .iter()
            .find(|(taken, _)| *taken == id)
            .map(|(_, dictionary)| &**dictionary)
    }

    fn describe(&self) -> String {
        self.store.describe()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use pgdict::datum::DatumEncoder;

    use super::*;

    /// The arguments naming the directory store at `store` (`--store`, no `--pg-store`).
    pub(crate) fn dir_store_args(store: PathBuf) -> StoreArgs {
        StoreArgs {
            store,
            pg_store: None,
        }
    }

    fn refusal(chosen: anyhow::Result<Option<Arc<Dictionary>>>) -> String {
        crate::fail::render(&chosen.expect_err("refused"))
    }

    #[test]
    fn a_dictionary_is_chosen_by_id_or_as_the_newest_active_one_for_the_codec() {
        let dir = tempfile::tempdir().unwrap();
        let store = AnyStore::open_or_create(&dir_store_args(dir.path().join("dicts"))).unwrap();
        let chosen = |choice, codec| store.choose(choice, codec).unwrap().map(|d| d.id());
        // None yet: --dict auto says how to have one.
        let none = refusal(store.choose(DictArg::Auto, Codec::Lz4));
        assert!(
            none.contains("has no active dictionary built for lz4"),
            "{none}"
        );
        assert!(
            none.contains("or --dict none for PostgreSQL's plain lz4"),
            "{none}"
        );
        let none = refusal(store.choose(DictArg::Auto, Codec::Zstd));
        assert!(
            none.contains("without a dictionary zstd stores every row raw"),
            "{none}"
        );

        let add = |codec, content: &str| {
            let content = content.repeat(20);
            let codecs = CodecSet::only(codec);
            store
                .add(codecs, content.as_bytes(), Metadata::new())
                .unwrap()
                .id()
        };
        let older = add(Codec::Pglz, "an older pglz dictionary");
        let newer = add(Codec::Pglz, "a newer pglz dictionary");
        let lz4 = add(Codec::Lz4, "an lz4 dictionary");
        let listed: Vec<u32> = store.list().unwrap().iter().map(|e| e.id).collect();
        assert_eq!(listed, [older, newer, lz4]);
        assert_eq!(chosen(DictArg::Auto, Codec::Pglz), Some(newer));
        assert_eq!(chosen(DictArg::Auto, Codec::Lz4), Some(lz4));
        assert_eq!(chosen(DictArg::Id(older), Codec::Pglz), Some(older));
        assert_eq!(chosen(DictArg::None, Codec::Pglz), None);
        let other_codec = refusal(store.choose(DictArg::Id(lz4), Codec::Pglz));
        let says = format!("dictionary {lz4} was built for lz4, not for pglz");
        assert!(other_codec.contains(&says), "{other_codec}");
        assert!(
            other_codec.contains("hint: use --codec lz4"),
            "{other_codec}"
        );
        let missing = refusal(store.choose(DictArg::Id(99), Codec::Pglz));
        assert!(missing.contains("cannot load dictionary 99"), "{missing}");
        // A retired one decodes, but is chosen neither by id nor as the newest.
        assert!(store.retire(newer).unwrap());
        let retired = refusal(store.choose(DictArg::Id(newer), Codec::Pglz));
        assert!(
            retired.contains(&format!("dictionary {newer} is retired")),
            "{retired}"
        );
        assert_eq!(chosen(DictArg::Auto, Codec::Pglz), Some(older));
        assert!(store
            .location(older)
            .ends_with(&format!("{older:08}.pgdict")));
    }

    #[test]
    fn a_store_is_opened_once_a_datum_names_a_dictionary_and_each_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        // No store: no dictionary, and the reason said where the decode error names it.
        let missing = dir_store_args(dir.path().join("missing"));
        let lazy = LazyStore::new(&missing);
        assert!(lazy.dictionary(1).unwrap().is_none());
        let reason = DictionaryLookup::describe(&lazy);
        let name = format!("the dictionary store {}", missing.store.display());
        assert!(
            reason.starts_with(&format!("{name} (it cannot be opened: ")),
            "{reason}"
        );

        let args = dir_store_args(dir.path().join("dicts"));
        let store = AnyStore::open_or_create(&args).unwrap();
        let content = "a dictionary of words".repeat(20);
        let id = store
            .add(
                CodecSet::only(Codec::Lz4),
                content.as_bytes(),
                Metadata::new(),
            )
            .unwrap()
            .id();
        let encode = |dict: &PreparedDictionary| {
            let row = "words of a dictionary".repeat(4);
            let mut encoder = DatumEncoder::new();
            encoder
                .encode(row.as_bytes(), Codec::Lz4, Some(dict))
                .unwrap()
        };
        let named = encode(&store.prepared(id).unwrap());
        let unknown = encode(&PreparedDictionary::new(77, content.as_bytes()).unwrap());
        // An empty dictionary adds nothing: the datum is plain lz4.
        let plain = encode(&PreparedDictionary::new(78, b"").unwrap());
        assert_eq!(datum::read_header(&plain).unwrap().form.dict_id(), None);

        let lazy = LazyStore::new(&args);
        let mut local = LocalDictionaries::new(&lazy);
        assert!(local.borrowed(id).is_none());
        local.take_for([&plain[..], &named, &named]);
        assert!(local.borrowed(id).is_some());
        assert_eq!(local.taken.len(), 1);
        // It stops at one the store does not have, leaving the rest to the decoder.
        let mut local = LocalDictionaries::new(&lazy);
        local.take_for([&unknown[..], &named]);
        assert!(local.borrowed(77).is_none() && local.borrowed(id).is_none());
        assert!(local.dictionary(id).unwrap().is_some());
        assert_eq!(DictionaryLookup::describe(&local), store.describe());
    }
}
