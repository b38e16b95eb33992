//! The dictionary file: one dictionary, self-describing, versioned and checksummed.
//!
//! A dictionary is immutable bytes (its *content*) plus what is needed to trust and explain
//! them: its id, the codecs it was built for, when it was created, and how it was trained.
//! The file holds all of it, so a file is meaningful on its own: the id is inside it (its name
//! only repeats it), and loading checks it against two SHA-256 sums before anything uses it.
//! The same bytes are what [`Dictionary::to_bytes`] writes and [`Dictionary::from_bytes`]
//! reads; the directory store keeps one such file per dictionary, and the PostgreSQL store
//! keeps the same fields in columns.
//!
//! # Layout (version 1)
//!
//! Integers are little-endian. The fixed header is 64 bytes; the lengths in it give the whole
//! file's length, which must be exactly the file's size.
//!
//! ```text
//!   offset  size  field             value
//!        0     8  magic             89 50 47 44 49 43 54 0a  ("\x89PGDICT\n")
//!        8     2  version           u16 = 1
//!       10     2  codecs            u16 bit set: bit 0 pglz, bit 1 lz4, bit 2 zstd;
//!                                   at least one bit, no other bits
//!       12     4  id                u32, 1..=u32::MAX
//!       16     8  created           u64 microseconds since 1970-01-01 00:00:00 UTC,
//!                                   at most 2^63 - 1 (a PostgreSQL bigint)
//!       24     4  metadata_len  m   u32, 0..=65536
//!       28     4  content_len   n   u32, 1..=1048576 (1 MiB): a dictionary needs content
//!       32    32  content_sha256    SHA-256 of the content
//!       64     m  metadata          UTF-8 JSON object (training provenance, measured gain:
//!                                   see [`Metadata`]); m = 0 means no metadata at all
//!     64+m     n  content           the dictionary's bytes
//!   64+m+n    32  file_sha256       SHA-256 of bytes 0 .. 64+m+n (everything before it)
//! ```
//!
//! The file is `96 + m + n` bytes. The magic's first byte has its top bit set and its last is
//! a line feed, so a 7-bit or line-ending-converting copy is caught at once (as PNG does).
//!
//! # Reading: what is rejected
//!
//! [`Dictionary::from_bytes`] checks, in this order, and names the first thing wrong
//! ([`FormatError`]): a file shorter than the magic, a wrong magic, a file shorter than the version
//! field, a version other than 1, a file shorter than the fixed header, a metadata or content
//! length over its cap, a content length of 0, a file whose size is not `96 + m + n` (truncated or
//! with bytes after the checksum), a `file_sha256` that does not match, then (the file is now known
//! to be as it was written) an id of 0, codec bits that are empty or unknown, a creation time over
//! 2^63 - 1 microseconds (which the PostgreSQL store could not hold), a `content_sha256` that does
//! not match the content, and metadata that is not a JSON object of the expected shape. The caps
//! are checked against the file's size before anything is allocated, so a header can never make a
//! reader allocate more than the file it was given.
//!
//! Every single-bit flip and every truncation of a file is detected: a flip in the magic,
//! version or lengths fails those checks; any other flip fails `file_sha256`.
//!
//! # Versions
//!
//! A reader rejects versions it does not know: a later version may change any field after the
//! version. Metadata a reader does not know needs no new version: a [`Dictionary`] keeps its
//! metadata as the bytes it was read with ([`Dictionary::metadata_json`]), so a file read and
//! written back, or copied between stores, keeps every key byte for byte. Metadata parsed into
//! [`Metadata`] and made into a dictionary again ([`Dictionary::new`]) keeps less: unknown
//! top-level keys ([`Metadata::other`]) and all of `parameters`, but not unknown keys inside a
//! `gains` entry, which [`Gain`] has no room for (and the JSON is written anew, so its bytes
//! may differ).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::datum::{Codec, DatumError, PreparedDictionary};
use crate::zstd;

/// The file's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"\x89PGDICT\n";

/// The file format version this code writes, and the only one it reads.
pub const VERSION: u16 = 1;

/// Bytes of the fixed header, before the metadata.
pub const HEADER_LEN: usize = 64;

/// Bytes of the trailing checksum.
pub const CHECKSUM_LEN: usize = 32;

/// The longest content a dictionary may have: 1 MiB. lz4 reaches back 64 KiB and pglz 4095
/// bytes; zstd dictionaries are useful up to a few hundred KiB.
pub const MAX_CONTENT_LEN: usize = 1 << 20;

/// The longest metadata a dictionary may have: 64 KiB of JSON.
pub const MAX_METADATA_LEN: usize = 1 << 16;

/// The latest creation time a dictionary may have, in microseconds since the Unix epoch:
/// `i64::MAX` (the year 294,247), what a PostgreSQL `bigint`, and so the PostgreSQL store,
/// holds. Every dictionary one store holds fits the other.
pub const MAX_CREATED_MICROS: u64 = i64::MAX as u64;

/// The longest file there can be.
pub const MAX_FILE_LEN: usize = HEADER_LEN + MAX_METADATA_LEN + MAX_CONTENT_LEN + CHECKSUM_LEN;

// Field offsets in the fixed header.
const VERSION_POS: usize = 8;
const CODECS_POS: usize = 10;
const ID_POS: usize = 12;
const CREATED_POS: usize = 16;
const METADATA_LEN_POS: usize = 24;
const CONTENT_LEN_POS: usize = 28;
const CONTENT_SHA_POS: usize = 32;

/// A SHA-256 sum.
pub type Sha256Sum = [u8; 32];

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> Sha256Sum {
    Sha256::digest(bytes).into()
}

/// A SHA-256 sum in lower-case hex.
pub fn hex(sum: &Sha256Sum) -> String {
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why bytes are not a valid dictionary file (or why a dictionary cannot be made).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file ends inside a fixed-size field.
    #[error("dictionary file: truncated: the {field} needs {needed} bytes, the file has {len}")]
    Truncated {
        /// The field cut off.
        field: &'static str,
        /// Bytes the file needs up to the end of that field.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// The first 8 bytes are not [`MAGIC`].
    #[error(
        "dictionary file: bad magic {} (expected {}): not a pgdict dictionary file",
        hex_bytes(found),
        hex_bytes(&MAGIC)
    )]
    BadMagic {
        /// The first 8 bytes.
        found: [u8; 8],
    },
    /// The version field holds a version this code does not read.
    #[error("dictionary file: unknown version {version} (this pgdict reads version {VERSION})")]
    UnknownVersion {
        /// The version in the file.
        version: u16,
    },
    /// The metadata length is over [`MAX_METADATA_LEN`].
    #[error("dictionary file: metadata length {len} is over the limit of {MAX_METADATA_LEN}")]
    MetadataTooLong {
        /// The length given.
        len: usize,
    },
    /// The content is empty: a dictionary with no content gives nothing to any codec, yet
    /// `--dict auto` would pick it as the newest for its codecs.
    #[error("dictionary file: the content is empty: a dictionary needs content")]
    EmptyContent,
    /// The content length is over [`MAX_CONTENT_LEN`].
    #[error("dictionary file: content length {len} is over the limit of {MAX_CONTENT_LEN}")]
    ContentTooLong {
        /// The length given.
        len: usize,
    },
    /// The file is longer than any dictionary file can be ([`MAX_FILE_LEN`]): refused before
    /// it is read.
    #[error("dictionary file: {len} bytes is over the largest possible file ({MAX_FILE_LEN})")]
    FileTooLong {
        /// The file's length.
        len: u64,
    },
    /// The file's size is not what its header's lengths make it.
    #[error(
        "dictionary file: the header's lengths (metadata {metadata_len}, content \
         {content_len}) make the file {expected} bytes, but it has {len} ({})",
        if len < expected { "truncated" } else { "bytes after the checksum" }
    )]
    LengthMismatch {
        /// The header's metadata length.
        metadata_len: usize,
        /// The header's content length.
        content_len: usize,
        /// The file length those imply.
        expected: usize,
        /// The file's actual length.
        len: usize,
    },
    /// The trailing SHA-256 does not match the bytes before it.
    #[error(
        "dictionary file: checksum mismatch: the file says {}, its bytes hash to {} \
         (the file is damaged)",
        hex(stored),
        hex(computed)
    )]
    ChecksumMismatch {
        /// The sum in the file.
        stored: Sha256Sum,
        /// The sum of the bytes.
        computed: Sha256Sum,
    },
    /// The content's SHA-256 does not match the content.
    #[error(
        "dictionary file: content checksum mismatch: the header says {}, the content hashes \
         to {}",
        hex(stored),
        hex(computed)
    )]
    ContentChecksumMismatch {
        /// The sum in the header.
        stored: Sha256Sum,
        /// The sum of the content.
        computed: Sha256Sum,
    },
    /// The id is 0; ids start at 1.
    #[error("dictionary file: dictionary id 0 is reserved (ids start at 1)")]
    IdZero,
    /// The codec bit set is empty or has bits beyond the known codecs.
    #[error(
        "dictionary file: codec bits {bits:#06x} are not a non-empty set of known codecs \
         (bit 0 pglz, bit 1 lz4, bit 2 zstd)"
    )]
    BadCodecs {
        /// The bit set in the file.
        bits: u16,
    },
    /// The creation time is over [`MAX_CREATED_MICROS`].
    #[error(
        "dictionary file: creation time {micros} (microseconds since 1970) is over the limit \
         of {MAX_CREATED_MICROS}, what a PostgreSQL bigint holds"
    )]
    CreatedOutOfRange {
        /// The creation time given.
        micros: u64,
    },
    /// The metadata is not valid UTF-8 JSON of the expected shape.
    #[error("dictionary file: bad metadata: {message}")]
    BadMetadata {
        /// What is wrong with it.
        message: String,
    },
}

fn hex_bytes(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The set of codecs a dictionary was built for (as the file's bit set).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodecSet(u16);

impl CodecSet {
    /// Every codec.
    pub const ALL: CodecSet = CodecSet(0b111);

    /// The set holding only `codec`.
    pub fn only(codec: Codec) -> CodecSet {
        CodecSet(1 << codec.code())
    }

    /// The set of these codecs.
    pub fn of(codecs: &[Codec]) -> CodecSet {
        CodecSet(codecs.iter().fold(0, |bits, c| bits | (1 << c.code())))
    }

    /// The set these file bits stand for, if they are a non-empty set of known codecs.
    pub fn from_bits(bits: u16) -> Option<CodecSet> {
        (bits != 0 && bits & !CodecSet::ALL.0 == 0).then_some(CodecSet(bits))
    }

    /// The file bits: bit `codec.code()` for each codec.
    pub fn bits(self) -> u16 {
        self.0
    }

    /// The set without `codec`.
    pub fn without(self, codec: Codec) -> CodecSet {
        CodecSet(self.0 & !(1 << codec.code()))
    }

    /// Whether `codec` is in the set.
    pub fn contains(self, codec: Codec) -> bool {
        self.0 & (1 << codec.code()) != 0
    }

    /// Whether the set is empty (never, for a dictionary's set).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The codecs in the set, in the order of their numbers.
    pub fn iter(self) -> impl Iterator<Item = Codec> {
        Codec::ALL.into_iter().filter(move |&c| self.contains(c))
    }
}

impl fmt::Debug for CodecSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for CodecSet {
    /// The codec names joined by `+`: `pglz+lz4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Codec::name).collect();
        f.write_str(&names.join("+"))
    }
}

/// The gain a dictionary was measured to give on held-out rows (rows it was not trained on),
/// for one codec, against the same codec without a dictionary as PostgreSQL uses it (plain
/// pglz for a pglz dictionary, plain lz4 for an lz4 one: what a column of that compression
/// method would store; for a zstd dictionary plain pglz, PostgreSQL's default, as PostgreSQL
/// has no zstd and pgdict no plain zstd form: see [`Gain::baseline`]). Byte counts are of
/// whole stored datums, headers included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gain {
    /// The codec used with the dictionary.
    pub codec: Codec,
    /// How many held-out rows.
    pub rows: u64,
    /// Their raw bytes.
    pub raw_bytes: u64,
    /// What they take stored as PostgreSQL stores them with the [`Gain::baseline`] codec
    /// (plain pglz or lz4, or raw where it does not compress).
    pub plain_bytes: u64,
    /// What they take stored with the dictionary (each datum at its smallest form).
    pub dict_bytes: u64,
}

impl Gain {
    /// raw / plain: the ratio PostgreSQL gets on its own; `None` when `plain_bytes` is 0 (a
    /// metadata writer's, never a measurement: a stored datum has a header).
    pub fn plain_ratio(&self) -> Option<f64> {
        ratio(self.raw_bytes, self.plain_bytes)
    }

    /// raw / dict: the ratio with the dictionary; `None` when `dict_bytes` is 0.
    pub fn dict_ratio(&self) -> Option<f64> {
        ratio(self.raw_bytes, self.dict_bytes)
    }

    /// plain / dict: how many times smaller than plain compression with the
    /// [`Gain::baseline`] codec the dictionary makes the rows; `None` when `dict_bytes` is 0.
    pub fn gain(&self) -> Option<f64> {
        ratio(self.plain_bytes, self.dict_bytes)
    }

    /// The codec `plain_bytes` was measured with: [`Gain::baseline_for`] the gain's codec.
    pub fn baseline(&self) -> Codec {
        Gain::baseline_for(self.codec)
    }

    /// The codec a dictionary for `codec` is judged against, used without a dictionary: the
    /// same codec, except zstd, which PostgreSQL does not have and pgdict stores only with a
    /// dictionary: plain pglz, PostgreSQL's default.
    pub fn baseline_for(codec: Codec) -> Codec {
        match codec {
            Codec::Zstd => Codec::Pglz,
            other => other,
        }
    }

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("codec".into(), self.codec.name().into());
        map.insert("rows".into(), self.rows.into());
        map.insert("raw_bytes".into(), self.raw_bytes.into());
        map.insert("plain_bytes".into(), self.plain_bytes.into());
        map.insert("dict_bytes".into(), self.dict_bytes.into());
        Value::Object(map)
    }

    fn from_json(value: &Value, at: &str) -> Result<Gain, String> {
        let map = value
            .as_object()
            .ok_or_else(|| format!("{at} is not an object"))?;
        let codec_name = map
            .get("codec")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at}.codec is not a string"))?;
        let codec = Codec::ALL
            .into_iter()
            .find(|c| c.name() == codec_name)
            .ok_or_else(|| format!("{at}.codec {codec_name:?} is not a codec"))?;
        let number = |key: &str| {
            map.get(key)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("{at}.{key} is not a non-negative integer"))
        };
        Ok(Gain {
            codec,
            rows: number("rows")?,
            raw_bytes: number("raw_bytes")?,
            plain_bytes: number("plain_bytes")?,
            dict_bytes: number("dict_bytes")?,
        })
    }
}

/// num / den, `None` for a denominator of 0.
fn ratio(num: u64, den: u64) -> Option<f64> {
    (den != 0).then(|| num as f64 / den as f64)
}

/// How a dictionary was trained, and what it was measured to give: the file's metadata,
/// stored as a JSON object. Every field may be absent.
///
/// ```json
/// {"source": "table public.events(payload)", "trainer": "pgdict-trainer 0.1 pglz-window",
///  "sample_rows": 10000, "sample_bytes": 4312345, "parameters": {"seed": 1, "size": 4095},
///  "gains": [{"codec": "pglz", "rows": 5000, "raw_bytes": 2156000, "plain_bytes": 1843000,
///             "dict_bytes": 702000}]}
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metadata {
    /// Where the training rows came from: a file, a table column.
    pub source: Option<String>,
    /// What built the dictionary: the program, its version, the method.
    pub trainer: Option<String>,
    /// How many rows were sampled for training.
    pub sample_rows: Option<u64>,
    /// Their bytes.
    pub sample_bytes: Option<u64>,
    /// The trainer's parameters (seed, target size, ...).
    pub parameters: Map<String, Value>,
    /// Gains measured on held-out rows, one per codec evaluated.
    pub gains: Vec<Gain>,
    /// Top-level keys this version of pgdict does not know, kept as they are (unknown keys
    /// inside a `gains` entry are not kept: see "Versions" in the module documentation).
    pub other: Map<String, Value>,
}

impl Metadata {
    /// No metadata.
    pub fn new() -> Metadata {
        Metadata::default()
    }

    /// The metadata as a JSON object; empty metadata is the empty string.
    pub fn to_json(&self) -> String {
        if *self == Metadata::default() {
            return String::new();
        }
        let mut map = self.other.clone();
        if let Some(source) = &self.source {
            map.insert("source".into(), source.clone().into());
        }
        if let Some(trainer) = &self.trainer {
            map.insert("trainer".into(), trainer.clone().into());
        }
        if let Some(rows) = self.sample_rows {
            map.insert("sample_rows".into(), rows.into());
        }
        if let Some(bytes) = self.sample_bytes {
            map.insert("sample_bytes".into(), bytes.into());
        }
        if !self.parameters.is_empty() {
            map.insert("parameters".into(), Value::Object(self.parameters.clone()));
        }
        if !self.gains.is_empty() {
            let gains = self.gains.iter().map(Gain::to_json).collect();
            map.insert("gains".into(), Value::Array(gains));
        }
        Value::Object(map).to_string()
    }

    /// Reads metadata written by [`Metadata::to_json`] (or anything of the same shape); the
    /// empty string is no metadata.
    pub fn from_json(json: &str) -> Result<Metadata, FormatError> {
        Metadata::parse(json).map_err(|message| FormatError::BadMetadata { message })
    }

    fn parse(json: &str) -> Result<Metadata, String> {
        if json.is_empty() {
            return Ok(Metadata::default());
        }
        let value: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let Value::Object(mut map) = value else {
            return Err("not a JSON object".into());
        };
        let mut take_string = |key: &str| match map.remove(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("{key} is not a string")),
        };
        let source = take_string("source")?;
        let trainer = take_string("trainer")?;
        let mut take_u64 = |key: &str| match map.remove(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("{key} is not a non-negative integer")),
        };
        let sample_rows = take_u64("sample_rows")?;
        let sample_bytes = take_u64("sample_bytes")?;
        let parameters = match map.remove("parameters") {
            None => Map::new(),
            Some(Value::Object(p)) => p,
            Some(_) => return Err("parameters is not an object".into()),
        };
        let gains = match map.remove("gains") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| Gain::from_json(item, &format!("gains[{i}]")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("gains is not an array".into()),
        };
        Ok(Metadata {
            source,
            trainer,
            sample_rows,
            sample_bytes,
            parameters,
            gains,
            other: map,
        })
    }
}

/// One dictionary: its content and everything its file records. Immutable once made.
///
/// ```
/// use pgdict::dict::{CodecSet, Dictionary, Metadata};
///
/// let mut metadata = Metadata::new();
/// metadata.source = Some("corpus/events.jsonl".into());
/// let dict = Dictionary::new(7, CodecSet::ALL, 1_700_000_000_000_000, metadata,
///                            b"{\"event\": \"page_view\", \"user\": ")?;
/// let file = dict.to_bytes();
/// assert_eq!(Dictionary::from_bytes(&file)?, dict);
/// assert!(Dictionary::from_bytes(&file[..file.len() - 1]).is_err());
/// # Ok::<(), pgdict::dict::FormatError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Dictionary {
    id: u32,
    codecs: CodecSet,
    created_micros: u64,
    /// The metadata as stored (so a dictionary read back writes back the same bytes).
    metadata_json: Box<str>,
    content: Box<[u8]>,
    content_sha256: Sha256Sum,
}

impl Dictionary {
    /// A dictionary with this id, codecs, creation time (microseconds since the Unix epoch),
    /// metadata and content. Fails if the id is 0, the set of codecs is empty, the creation
    /// time is over [`MAX_CREATED_MICROS`], the content is empty, or the content or metadata
    /// is over its cap.
    pub fn new(
        id: u32,
        codecs: CodecSet,
        created_micros: u64,
        metadata: Metadata,
        content: &[u8],
    ) -> Result<Dictionary, FormatError> {
        Dictionary::from_parts(id, codecs, created_micros, &metadata.to_json(), content)
    }

    /// [`Dictionary::new`] with the metadata given as its stored JSON text (as a store keeps
    /// it), which is checked and kept byte for byte.
    pub fn from_parts(
        id: u32,
        codecs: CodecSet,
        created_micros: u64,
        metadata_json: &str,
        content: &[u8],
    ) -> Result<Dictionary, FormatError> {
        if id == 0 {
            return Err(FormatError::IdZero);
        }
        if codecs.is_empty() {
            return Err(FormatError::BadCodecs {
                bits: codecs.bits(),
            });
        }
        check_created(created_micros)?;
        if content.len() > MAX_CONTENT_LEN {
            return Err(FormatError::ContentTooLong { len: content.len() });
        }
        if content.is_empty() {
            return Err(FormatError::EmptyContent);
        }
        if metadata_json.len() > MAX_METADATA_LEN {
            return Err(FormatError::MetadataTooLong {
                len: metadata_json.len(),
            });
        }
        Metadata::from_json(metadata_json)?;
        Ok(Dictionary {
            id,
            codecs,
            created_micros,
            metadata_json: metadata_json.into(),
            content: content.into(),
            content_sha256: sha256(content),
        })
    }

    /// The same dictionary under another id (what a store does when it allocates the id).
    pub fn with_id(&self, id: u32) -> Result<Dictionary, FormatError> {
        if id == 0 {
            return Err(FormatError::IdZero);
        }
        Ok(Dictionary { id, ..self.clone() })
    }

    /// The dictionary's id (≥ 1).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The codecs it was built for.
    pub fn codecs(&self) -> CodecSet {
        self.codecs
    }

    /// When it was created, in microseconds since the Unix epoch.
    pub fn created_micros(&self) -> u64 {
        self.created_micros
    }

    /// When it was created.
    pub fn created(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.created_micros)
    }

    /// Its metadata, parsed.
    pub fn metadata(&self) -> Metadata {
        Metadata::from_json(&self.metadata_json).expect("metadata was checked when made")
    }

    /// Its metadata as stored: a JSON object, or the empty string for none.
    pub fn metadata_json(&self) -> &str {
        &self.metadata_json
    }

    /// Its content: the bytes a codec reads as history.
    pub fn content(&self) -> &[u8] {
        &self.content
    }

    /// SHA-256 of the content: two dictionaries with the same id are the same dictionary
    /// exactly when these agree.
    pub fn content_sha256(&self) -> Sha256Sum {
        self.content_sha256
    }

    /// Prepares the content under this dictionary's id, for the codecs it was built for
    /// ([`PreparedDictionary::for_codecs`]).
    pub fn prepare(&self) -> Result<PreparedDictionary, DatumError> {
        PreparedDictionary::for_codecs(self.id, &self.content, self.codecs, zstd::DEFAULT_LEVEL)
    }

    /// Length of the file [`Dictionary::to_bytes`] writes.
    pub fn file_len(&self) -> usize {
        HEADER_LEN + self.metadata_json.len() + self.content.len() + CHECKSUM_LEN
    }

    /// The dictionary file (see the module documentation for the layout).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.file_len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.codecs.bits().to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.created_micros.to_le_bytes());
        // Both lengths are capped (by the constructors) far below u32::MAX.
        out.extend_from_slice(&(self.metadata_json.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.content.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.content_sha256);
        debug_assert_eq!(out.len(), HEADER_LEN);
        out.extend_from_slice(self.metadata_json.as_bytes());
        out.extend_from_slice(&self.content);
        let file_sha = sha256(&out);
        out.extend_from_slice(&file_sha);
        out
    }

    /// The SHA-256 that ends the dictionary's file ([`Dictionary::to_bytes`]): of all that
    /// comes before it, the id included. The PostgreSQL store keeps it beside its columns, so
    /// that a row given another id is caught as a file given another id would be.
    pub fn file_sha256(&self) -> Sha256Sum {
        let file = self.to_bytes();
        let mut sum = [0; CHECKSUM_LEN];
        sum.copy_from_slice(&file[file.len() - CHECKSUM_LEN..]);
        sum
    }

    /// Reads a dictionary file, checking everything (see "Reading: what is rejected" in the
    /// module documentation).
    pub fn from_bytes(file: &[u8]) -> Result<Dictionary, FormatError> {
        let len = file.len();
        let need = |field: &'static str, needed: usize| {
            if len < needed {
                Err(FormatError::Truncated { field, needed, len })
            } else {
                Ok(())
            }
        };
        need("magic", MAGIC.len())?;
        let found: [u8; 8] = file[..8].try_into().expect("8 bytes");
        if found != MAGIC {
            return Err(FormatError::BadMagic { found });
        }
        need("version", VERSION_POS + 2)?;
        let version = u16_at(file, VERSION_POS);
        if version != VERSION {
            return Err(FormatError::UnknownVersion { version });
        }
        need("fixed header", HEADER_LEN)?;
        let metadata_len = u32_at(file, METADATA_LEN_POS) as usize;
        let content_len = u32_at(file, CONTENT_LEN_POS) as usize;
        if metadata_len > MAX_METADATA_LEN {
            return Err(FormatError::MetadataTooLong { len: metadata_len });
        }
        if content_len > MAX_CONTENT_LEN {
            return Err(FormatError::ContentTooLong { len: content_len });
        }
        if content_len == 0 {
            return Err(FormatError::EmptyContent);
        }
        let expected = HEADER_LEN + metadata_len + content_len + CHECKSUM_LEN;
        if len != expected {
            return Err(FormatError::LengthMismatch {
                metadata_len,
                content_len,
                expected,
                len,
            });
        }
        let body_end = len - CHECKSUM_LEN;
        let stored: Sha256Sum = file[body_end..].try_into().expect("32 bytes");
        let computed = sha256(&file[..body_end]);
        if stored != computed {
            return Err(FormatError::ChecksumMismatch { stored, computed });
        }
        // From here on the bytes are as they were written.
        let id = u32_at(file, ID_POS);
        if id == 0 {
            return Err(FormatError::IdZero);
        }
        let bits = u16_at(file, CODECS_POS);
        let codecs = CodecSet::from_bits(bits).ok_or(FormatError::BadCodecs { bits })?;
        let created_micros = u64::from_le_bytes(
            file[CREATED_POS..CREATED_POS + 8]
                .try_into()
                .expect("8 bytes"),
        );
        check_created(created_micros)?;
        let content_start = HEADER_LEN + metadata_len;
        let content = &file[content_start..body_end];
        let stored: Sha256Sum = file[CONTENT_SHA_POS..CONTENT_SHA_POS + 32]
            .try_into()
            .expect("32 bytes");
        let computed = sha256(content);
        if stored != computed {
            return Err(FormatError::ContentChecksumMismatch { stored, computed });
        }
        let metadata_json = std::str::from_utf8(&file[HEADER_LEN..content_start]).map_err(|e| {
            FormatError::BadMetadata {
                message: format!("not UTF-8: {e}"),
            }
        })?;
        Metadata::from_json(metadata_json)?;
        Ok(Dictionary {
            id,
            codecs,
            created_micros,
            metadata_json: metadata_json.into(),
            content: content.into(),
            content_sha256: computed,
        })
    }
}

fn check_created(micros: u64) -> Result<(), FormatError> {
    if micros > MAX_CREATED_MICROS {
        return Err(FormatError::CreatedOutOfRange { micros });
    }
    Ok(())
}

fn u16_at(bytes: &[u8], pos: usize) -> u16 {
    u16::from_le_bytes(bytes[pos..pos + 2].try_into().expect("2 bytes"))
}

fn u32_at(bytes: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes"))
}

impl fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dictionary")
            .field("id", &self.id)
            .field("codecs", &self.codecs)
            .field("created_micros", &self.created_micros)
            .field("len", &self.content.len())
            .field("content_sha256", &hex(&self.content_sha256))
            .field("metadata", &self.metadata_json)
            .finish()
    }
}

/// The current time in microseconds since the Unix epoch (0 if the clock is before it).
pub fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        d.as_micros()
            .try_into()
            .map_or(MAX_CREATED_MICROS, |m: u64| m.min(MAX_CREATED_MICROS))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Dictionary {
        let mut metadata = Metadata::new();
        metadata.source = Some("corpus/events.jsonl".into());
        metadata.sample_rows = Some(1000);
        metadata.parameters.insert("seed".into(), 7.into());
        metadata.gains.push(Gain {
            codec: Codec::Pglz,
            rows: 10,
            raw_bytes: 4000,
            plain_bytes: 3900,
            dict_bytes: 1500,
        });
        metadata.other.insert("future_key".into(), "kept".into());
        Dictionary::new(
            0x0102_0304,
            CodecSet::of(&[Codec::Pglz, Codec::Lz4]),
            0x1122_3344_5566,
            metadata,
            b"some dictionary content, some dictionary content",
        )
        .unwrap()
    }

    /// `file` with both checksums recomputed: a file a writer that skips the checks would
    /// write, which only the checks behind the checksums can refuse.
    fn reseal_both(mut file: Vec<u8>) -> Vec<u8> {
        let content_start = HEADER_LEN + u32_at(&file, METADATA_LEN_POS) as usize;
        let body_end = file.len() - CHECKSUM_LEN;
        let content_sum = sha256(&file[content_start..body_end]);
        file[CONTENT_SHA_POS..HEADER_LEN].copy_from_slice(&content_sum);
        let file_sum = sha256(&file[..body_end]);
        file[body_end..].copy_from_slice(&file_sum);
        file
    }

    /// A file with the header fields of `file` and this metadata and content, its lengths and
    /// both checksums made to match.
    fn rebuilt(file: &[u8], metadata: &[u8], content: &[u8]) -> Vec<u8> {
        let mut out = file[..HEADER_LEN].to_vec();
        out[METADATA_LEN_POS..METADATA_LEN_POS + 4]
            .copy_from_slice(&(metadata.len() as u32).to_le_bytes());
        out[CONTENT_LEN_POS..CONTENT_LEN_POS + 4]
            .copy_from_slice(&(content.len() as u32).to_le_bytes());
        out.extend_from_slice(metadata);
        out.extend_from_slice(content);
        out.extend_from_slice(&[0; CHECKSUM_LEN]);
        reseal_both(out)
    }

    /// A JSON object of exactly `len` bytes (at least 10), which [`Metadata`] reads.
    fn metadata_of_len(len: usize) -> String {
        let json = format!("{{\"pad\":\"{}\"}}", "x".repeat(len - 10));
        assert_eq!(json.len(), len);
        json
    }

    #[test]
    fn layout_matches_the_table() {
        let dict = sample();
        let file = dict.to_bytes();
        let m = dict.metadata_json().len();
        let n = dict.content().len();
        assert_eq!(file.len(), 96 + m + n);
        assert_eq!(&file[0..8], b"\x89PGDICT\n");
        assert_eq!(&file[8..10], &[1, 0]);
        assert_eq!(&file[10..12], &[0b011, 0]);
        assert_eq!(&file[12..16], &[4, 3, 2, 1]);
        assert_eq!(&file[16..24], &0x1122_3344_5566u64.to_le_bytes());
        assert_eq!(&file[24..28], &(m as u32).to_le_bytes());
        assert_eq!(&file[28..32], &(n as u32).to_le_bytes());
        assert_eq!(&file[32..64], &sha256(dict.content()));
        assert_eq!(&file[64..64 + m], dict.metadata_json().as_bytes());
        assert_eq!(&file[64 + m..64 + m + n], dict.content());
        assert_eq!(&file[64 + m + n..], &sha256(&file[..64 + m + n]));
    }

    #[test]
    fn round_trip_keeps_unknown_metadata() {
        let dict = sample();
        let back = Dictionary::from_bytes(&dict.to_bytes()).unwrap();
        assert_eq!(back, dict);
        assert_eq!(back.to_bytes(), dict.to_bytes());
        let metadata = back.metadata();
        assert_eq!(metadata.other["future_key"], "kept");
        assert_eq!(metadata.gains[0].dict_bytes, 1500);
        assert!((metadata.gains[0].gain().unwrap() - 2.6).abs() < 1e-9);
    }

    #[test]
    fn empty_metadata() {
        let dict = Dictionary::new(1, CodecSet::ALL, 0, Metadata::new(), b"x").unwrap();
        let file = dict.to_bytes();
        assert_eq!(file.len(), 97);
        assert_eq!(Dictionary::from_bytes(&file).unwrap(), dict);
    }

    #[test]
    fn a_dictionary_needs_content() {
        let new = |content: &[u8]| Dictionary::new(1, CodecSet::ALL, 0, Metadata::new(), content);
        assert_eq!(new(b""), Err(FormatError::EmptyContent));
        assert_eq!(
            Dictionary::from_parts(1, CodecSet::ALL, 0, "", b""),
            Err(FormatError::EmptyContent)
        );
        // The file a writer that skips the check would write: sized and checksummed.
        let empty = rebuilt(&new(b"x").unwrap().to_bytes(), b"", b"");
        assert_eq!(empty.len(), 96);
        assert_eq!(
            Dictionary::from_bytes(&empty),
            Err(FormatError::EmptyContent)
        );
        assert_eq!(
            FormatError::EmptyContent.to_string(),
            "dictionary file: the content is empty: a dictionary needs content"
        );
    }

    /// Every dictionary a directory store holds fits the PostgreSQL store's `bigint`.
    #[test]
    fn creation_times_past_a_bigint_are_refused() {
        let new = |micros| Dictionary::new(1, CodecSet::ALL, micros, Metadata::new(), b"x");
        assert_eq!(
            new(MAX_CREATED_MICROS + 1),
            Err(FormatError::CreatedOutOfRange {
                micros: MAX_CREATED_MICROS + 1
            })
        );
        assert_eq!(new(u64::MAX).unwrap_err().to_string(), "dictionary file: creation time 18446744073709551615 (microseconds since 1970) is over the limit of 9223372036854775807, what a PostgreSQL bigint holds");
        assert_eq!(
            new(MAX_CREATED_MICROS).unwrap().created_micros(),
            i64::MAX as u64
        );
    }

    #[test]
    fn resealed_files_with_bad_fields_are_refused() {
        let dict = sample();
        let file = dict.to_bytes();
        let mut no_codecs = file.clone();
        no_codecs[CODECS_POS..CODECS_POS + 2].copy_from_slice(&0u16.to_le_bytes());
        assert_eq!(
            Dictionary::from_bytes(&reseal_both(no_codecs)),
            Err(FormatError::BadCodecs { bits: 0 })
        );
        // JSON, but not an object; an empty object is taken.
        assert_eq!(
            Dictionary::from_bytes(&rebuilt(&file, b"[]", dict.content())),
            Err(FormatError::BadMetadata {
                message: "not a JSON object".into()
            })
        );
        let empty_object = Dictionary::from_bytes(&rebuilt(&file, b"{}", dict.content())).unwrap();
        assert_eq!(empty_object.metadata(), Metadata::new());
    }

    #[test]
    fn metadata_and_content_are_taken_up_to_their_caps_and_refused_past_them() {
        let at_cap = metadata_of_len(MAX_METADATA_LEN);
        let over_cap = metadata_of_len(MAX_METADATA_LEN + 1);
        let largest_content = vec![b'c'; MAX_CONTENT_LEN];
        let largest =
            Dictionary::from_parts(1, CodecSet::ALL, 0, &at_cap, &largest_content).unwrap();
        let file = largest.to_bytes();
        assert_eq!(file.len(), MAX_FILE_LEN);
        assert_eq!(Dictionary::from_bytes(&file), Ok(largest));

        // Sized and checksummed to match its header: only the cap refuses it.
        let long_metadata = rebuilt(&file, over_cap.as_bytes(), b"x");
        assert_eq!(
            u32_at(&long_metadata, METADATA_LEN_POS),
            MAX_METADATA_LEN as u32 + 1
        );
        assert_eq!(
            Dictionary::from_bytes(&long_metadata),
            Err(FormatError::MetadataTooLong {
                len: MAX_METADATA_LEN + 1
            })
        );

        assert_eq!(
            Dictionary::from_parts(1, CodecSet::ALL, 0, &over_cap, b"x"),
            Err(FormatError::MetadataTooLong {
                len: MAX_METADATA_LEN + 1
            })
        );
        let mut long_content = largest_content;
        long_content.push(b'c');
        assert_eq!(
            Dictionary::from_parts(1, CodecSet::ALL, 0, "", &long_content),
            Err(FormatError::ContentTooLong {
                len: MAX_CONTENT_LEN + 1
            })
        );
    }

    #[test]
    fn every_truncation_and_bit_flip_is_detected() {
        let file = sample().to_bytes();
        for len in 0..file.len() {
            assert!(Dictionary::from_bytes(&file[..len]).is_err(), "len {len}");
        }
        let mut longer = file.clone();
        longer.push(0);
        assert!(matches!(
            Dictionary::from_bytes(&longer),
            Err(FormatError::LengthMismatch { .. })
        ));
        for bit in 0..file.len() * 8 {
            let mut flipped = file.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(Dictionary::from_bytes(&flipped).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn named_errors() {
        let file = sample().to_bytes();
        assert_eq!(
            Dictionary::from_bytes(&file[..5]),
            Err(FormatError::Truncated {
                field: "magic",
                needed: 8,
                len: 5
            })
        );
        let mut bad = file.clone();
        bad[1] = b'X';
        assert!(matches!(
            Dictionary::from_bytes(&bad),
            Err(FormatError::BadMagic { .. })
        ));
        let mut bad = file.clone();
        bad[8] = 2;
        assert_eq!(
            Dictionary::from_bytes(&bad),
            Err(FormatError::UnknownVersion { version: 2 })
        );
        let mut bad = file.clone();
        bad[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Dictionary::from_bytes(&bad),
            Err(FormatError::ContentTooLong {
                len: u32::MAX as usize
            })
        );
        let truncated = &file[..file.len() - 1];
        let err = Dictionary::from_bytes(truncated).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let mut bad = file.clone();
        bad[70] ^= 0x20;
        assert!(matches!(
            Dictionary::from_bytes(&bad),
            Err(FormatError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn fields_are_checked_after_the_checksum() {
        // A file written with a valid checksum over bad fields (as a buggy writer would).
        let reseal = |mut file: Vec<u8>| {
            let end = file.len() - CHECKSUM_LEN;
            let sum = sha256(&file[..end]);
            file[end..].copy_from_slice(&sum);
            file
        };
        let file = sample().to_bytes();
        let mut bad = file.clone();
        bad[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Dictionary::from_bytes(&reseal(bad)),
            Err(FormatError::IdZero)
        );
        let mut bad = file.clone();
        bad[10] = 0b1000;
        assert_eq!(
            Dictionary::from_bytes(&reseal(bad)),
            Err(FormatError::BadCodecs { bits: 0b1000 })
        );
        let mut bad = file.clone();
        bad[16..24].copy_from_slice(&(1u64 << 63).to_le_bytes());
        assert_eq!(
            Dictionary::from_bytes(&reseal(bad)),
            Err(FormatError::CreatedOutOfRange { micros: 1 << 63 })
        );
        let mut latest = file.clone();
        latest[16..24].copy_from_slice(&MAX_CREATED_MICROS.to_le_bytes());
        let latest = Dictionary::from_bytes(&reseal(latest)).unwrap();
        assert_eq!(latest.created_micros(), MAX_CREATED_MICROS);
        let mut bad = file.clone();
        bad[40] ^= 1;
        assert!(matches!(
            Dictionary::from_bytes(&reseal(bad)),
            Err(FormatError::ContentChecksumMismatch { .. })
        ));
        let mut bad = file.clone();
        bad[64] = b'[';
        assert!(matches!(
            Dictionary::from_bytes(&reseal(bad)),
            Err(FormatError::BadMetadata { .. })
        ));
    }
}
