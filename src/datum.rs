//! The pgdict datum: a PostgreSQL inline varlena that can name a dictionary.
//!
//! A datum is what pgdict stores for one value: a header, then either the value's bytes
//! as they are (raw) or a codec's payload. The first bytes are PostgreSQL's own inline varlena
//! layouts (`src/include/postgres.h` in PostgreSQL 15, `src/include/varatt.h` from 16), so raw,
//! pglz and lz4 datums are byte-compatible with what PostgreSQL stores, and PostgreSQL's datums
//! (read with pageinspect, say) decode here. Only compression method 3, which PostgreSQL leaves
//! unused, is pgdict's own: an *extended* header that adds a codec and a dictionary id.
//!
//! # Layout
//!
//! Multi-byte integers are little-endian; bit diagrams show the most significant bit first.
//! The low bits of the first byte select the form, as in PostgreSQL on little-endian machines:
//!
//! ```text
//!   first byte   form                                        PostgreSQL's test
//!   xxxxxxx1     raw, 1-byte header, total_len 1..=127       VARATT_IS_1B
//!   00000001     a TOAST pointer (not inline): rejected      VARATT_IS_1B_E
//!   xxxxxx00     raw, 4-byte header, total_len < 2^30        VARATT_IS_4B_U
//!   xxxxxx10     compressed, 8-byte or longer header         VARATT_IS_4B_C
//! ```
//!
//! **Raw, short** (1-byte header; `total_len` <= 127):
//!
//! ```text
//!   byte 0       LLLLLLL1     total_len = byte >> 1             1..=127 (0x01 is taken)
//!   bytes 1..    the raw bytes                                  raw_len = total_len - 1
//! ```
//!
//! **Raw, long** (4-byte header):
//!
//! ```text
//!   bytes 0..4   u32  LLLLLLLL LLLLLLLL LLLLLLLL LLLLLL00
//!                     total_len = word >> 2                     4..=2^30-1
//!   bytes 4..    the raw bytes                                  raw_len = total_len - 4
//! ```
//!
//! **Compressed** (PostgreSQL's `varattrib_4b.va_compressed`):
//!
//! ```text
//!   bytes 0..4   u32  LLLLLLLL LLLLLLLL LLLLLLLL LLLLLL10       va_header
//!                     total_len = word >> 2                     >= the header's length
//!   bytes 4..8   u32  MMRRRRRR RRRRRRRR RRRRRRRR RRRRRRRR       va_tcinfo
//!                     raw_len = word & 0x3fff_ffff              0..=2^30-1
//!                     method  = word >> 30                      0 pglz, 1 lz4 (PostgreSQL's
//!                                                               TOAST_PGLZ/LZ4_COMPRESSION_ID),
//!                                                               2 rejected, 3 extended
//!   bytes 8..    the codec's payload (methods 0 and 1)
//! ```
//!
//! **Extended** (method 3; pgdict only), continuing after byte 8:
//!
//! ```text
//!   byte 8       codec        0 pglz, 1 lz4, 2 zstd; anything else is rejected
//!   bytes 9..    dict id      unsigned LEB128: 7 bits a byte, least significant group first,
//!                             the top bit set on every byte but the last; 1 to 5 bytes
//!                  CIIIIIII [CIIIIIII [CIIIIIII [CIIIIIII [0000IIII]]]]
//!                             value 1..=u32::MAX, in the fewest bytes that hold it
//!   then         the codec's payload
//! ```
//!
//! `total_len` counts every byte of the datum, headers included. The extended header is
//! 10 to 14 bytes long. Payloads: pglz is PostgreSQL's pglz stream ([`crate::pglz`]); lz4 is one
//! raw lz4 block ([`crate::lz4`]); zstd is one magicless frame without dictionary id, content
//! size or checksum ([`crate::zstd`]). With a dictionary, each codec reads the dictionary as
//! history that comes just before the datum.
//!
//! # Writing: the smallest form wins
//!
//! [`DatumEncoder::encode`] tries, for the codec it is given:
//!
//! - **raw**, with the 1-byte header when the datum fits in 127 bytes, else the 4-byte one;
//! - **plain**, PostgreSQL's own form: pglz with PostgreSQL's default strategy (method 0; the
//!   payload is byte-identical to PostgreSQL 15's) or lz4 as PostgreSQL calls it (method 1).
//!   zstd has no PostgreSQL form, and an extended header cannot say "no dictionary" (ids start
//!   at 1), so zstd without a dictionary stores the value raw;
//! - **dictionary**: the extended form, when a dictionary is given (pglz with
//!   [`Strategy::DICTIONARY`], lz4 with the dictionary attached, zstd with the prepared
//!   dictionary),
//!
//! and stores whichever whole datum is smallest; on a tie the earlier one in that list (raw
//! decodes fastest; plain is what PostgreSQL itself can read). So a datum is never larger than
//! its raw form: `raw_len + 1` bytes up to 126 raw bytes, `raw_len + 4` beyond.
//!
//! lz4 and zstd write their payloads straight into the output, after the best datum so far: a
//! winner moves down over it, a loser is cut off, so that no payload buffer as large as the
//! value is kept or copied. (pglz's payload is copied out of its compressor's buffer.)
//!
//! Trying several forms costs time, so the dictionary form is compressed first and each pglz
//! attempt is told how long a payload can be and still win: pglz checks its output size as it
//! goes and gives up there (the limit only moves where pglz gives up, never what it writes, so
//! plain payloads stay PostgreSQL's). When the dictionary form compresses well, the plain
//! attempt after it stops early.
//!
//! PostgreSQL's own writer (`toast_compress_datum`) keeps a compressed value only if it saves
//! more than 2 bytes over the raw *payload* (an allowance for alignment padding), where pgdict
//! compares whole datums. pgdict may therefore store a value compressed that PostgreSQL would
//! have stored raw; the datum is still one PostgreSQL reads. Raw inputs are limited to
//! [`MAX_INPUT_LEN`] bytes so that the raw form always fits a 4-byte header.
//!
//! # Reading: what is rejected
//!
//! [`parse_header`] (the header alone), [`check_header`] (the header, and the `raw_len` its
//! payload can expand to) and [`decode`] reject, with a [`DatumError`] that names the byte
//! position and the numbers involved (never a panic, never an out-of-bounds read or an
//! allocation the payload cannot justify):
//!
//! - an empty datum, or a header cut off by the end of the datum;
//! - the byte `0x01`: a TOAST pointer, which points at a value stored elsewhere;
//! - a `total_len` shorter than the header, or different from the datum's length;
//! - method 2, or an extended codec byte other than 0, 1, 2;
//! - a dictionary id varint that is cut off, longer than 5 bytes, over `u32::MAX`, not in its
//!   shortest form (a last byte of 0 after others), or 0;
//! - a dictionary id that the [`DictionaryLookup`] does not have
//!   ([`DatumError::MissingDictionary`]: sync the stores);
//! - a `raw_len` the payload cannot possibly expand to (checked before allocating: from
//!   [`check_header`] on), and any payload that does not decode to exactly `raw_len` bytes, or
//!   reaches back before its history (the codec errors, wrapped with the payload's position:
//!   [`decode`] only).
//!
//! Decoding with the wrong dictionary (another dictionary under the same id) is not detected by
//! the format: it gives an error or `raw_len` bytes of wrong content. The one exception: a
//! dictionary from a store knows the codecs it was built for
//! ([`PreparedDictionary::built_for`]), and a datum that names it with another codec was
//! written with another dictionary of its id ([`DatumError::ForeignDictionary`]).
//!
//! [`decode_prefix`] returns the first K bytes of any form, decoding no further than it must,
//! as PostgreSQL does for `substr()` on compressed values: for pglz it reads at most
//! [`pglz::maximum_compressed_size`] payload bytes. zstd decodes a datum of up to
//! [`zstd::PREFIX_WHOLE_MAX`] bytes (one zstd block, which its streaming decoder would decode
//! whole anyway) whole and cuts it.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::dict::CodecSet;
use crate::lz4::{self, Lz4Compressor, Lz4Dictionary};
use crate::pglz::{self, Compressor, PglzDictionary, Strategy};
use crate::zstd::{self, ZstdCompressor, ZstdDecompressor, ZstdDictionary};

/// The largest raw length a compressed header can record, and the largest `total_len` of any
/// header: 30 bits, PostgreSQL's varlena limit (1 GiB - 1).
pub const MAX_RAW_LEN: usize = (1 << 30) - 1;

/// The largest input [`DatumEncoder::encode`] accepts: its raw form (4-byte header) must fit
/// [`MAX_RAW_LEN`].
pub const MAX_INPUT_LEN: usize = MAX_RAW_LEN - RAW_LONG_HEADER_LEN;

/// The largest datum with a 1-byte header (PostgreSQL's `VARATT_SHORT_MAX`).
pub const MAX_SHORT_TOTAL_LEN: usize = 0x7f;

/// Bytes of the 1-byte raw header.
const RAW_SHORT_HEADER_LEN: usize = 1;
/// Bytes of the 4-byte raw header.
const RAW_LONG_HEADER_LEN: usize = 4;
/// Bytes of the compressed header (`va_header` and `va_tcinfo`).
const COMPRESSED_HEADER_LEN: usize = 8;
/// Where the extended header's codec byte is.
const CODEC_POS: usize = COMPRESSED_HEADER_LEN;
/// Where the extended header's dictionary id starts.
const DICT_ID_POS: usize = CODEC_POS + 1;
/// Most bytes a dictionary id takes: 5 × 7 bits hold 32.
const MAX_DICT_ID_BYTES: usize = 5;
/// The longest header of any form (the extended one with a 5-byte dictionary id): what
/// [`read_header`] needs to see of a datum, at most, to read its header.
pub const MAX_HEADER_LEN: usize = DICT_ID_POS + MAX_DICT_ID_BYTES;

/// `va_tcinfo`: the raw length is in the low 30 bits (`VARLENA_EXTSIZE_MASK`).
const EXTSIZE_MASK: u32 = (1 << 30) - 1;
/// `va_tcinfo`: the method is in the top 2 bits (`VARLENA_EXTSIZE_BITS`).
const METHOD_SHIFT: u32 = 30;
/// Method numbers in `va_tcinfo`.
const METHOD_PGLZ: u32 = 0;
const METHOD_LZ4: u32 = 1;
const METHOD_EXTENDED: u32 = 3;

/// A codec a datum can be compressed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Codec {
    /// PostgreSQL's pglz ([`crate::pglz`]).
    Pglz,
    /// lz4 as PostgreSQL uses it: one raw block ([`crate::lz4`]).
    Lz4,
    /// zstd, in magicless frames ([`crate::zstd`]); only with a dictionary.
    Zstd,
}

impl Codec {
    /// Every codec, in the order of their numbers.
    pub const ALL: [Codec; 3] = [Codec::Pglz, Codec::Lz4, Codec::Zstd];

    /// The codec's number in the extended header.
    pub fn code(self) -> u8 {
        match self {
            Codec::Pglz => 0,
            Codec::Lz4 => 1,
            Codec::Zstd => 2,
        }
    }

    /// The codec with this number in the extended header.
    pub fn from_code(code: u8) -> Option<Codec> {
        match code {
            0 => Some(Codec::Pglz),
            1 => Some(Codec::Lz4),
            2 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// The codec's name: `pglz`, `lz4` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Pglz => "pglz",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which of the datum layouts a header has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// Raw bytes behind a 1-byte header.
    RawShort,
    /// Raw bytes behind a 4-byte header.
    RawLong,
    /// pglz without a dictionary, PostgreSQL's method 0.
    Pglz,
    /// lz4 without a dictionary, PostgreSQL's method 1.
    Lz4,
    /// pgdict's method 3: a codec with a dictionary.
    Extended {
        /// The codec of the payload.
        codec: Codec,
        /// The dictionary it was compressed with.
        dict_id: u32,
    },
}

impl Form {
    /// The codec of a compressed form; `None` for raw.
    pub fn codec(self) -> Option<Codec> {
        match self {
            Form::RawShort | Form::RawLong => None,
            Form::Pglz => Some(Codec::Pglz),
            Form::Lz4 => Some(Codec::Lz4),
            Form::Extended { codec, .. } => Some(codec),
        }
    }

    /// The dictionary id of the extended form; `None` for the others.
    pub fn dict_id(self) -> Option<u32> {
        match self {
            Form::Extended { dict_id, .. } => Some(dict_id),
            _ => None,
        }
    }

    /// Whether the payload is the raw bytes themselves.
    pub fn is_raw(self) -> bool {
        matches!(self, Form::RawShort | Form::RawLong)
    }

    /// Whether PostgreSQL itself reads this form (everything but the extended one).
    pub fn is_postgres_compatible(self) -> bool {
        !matches!(self, Form::Extended { .. })
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Form::RawShort => f.write_str("raw (1-byte header)"),
            Form::RawLong => f.write_str("raw (4-byte header)"),
            Form::Pglz => f.write_str("pglz (PostgreSQL, method 0)"),
            Form::Lz4 => f.write_str("lz4 (PostgreSQL, method 1)"),
            Form::Extended { codec, dict_id } => {
                write!(f, "{codec} with dictionary {dict_id} (pgdict, method 3)")
            }
        }
    }
}

/// A parsed datum header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The layout, with the codec and dictionary id where there are any.
    pub form: Form,
    /// Bytes of the whole datum, header included (the header's own `total_len`).
    pub total_len: usize,
    /// Bytes of the value once decoded.
    pub raw_len: usize,
    /// Bytes of the header: 1, 4, 8, or 10..=14 (extended).
    pub header_len: usize,
}

impl Header {
    /// Bytes after the header: the raw bytes or the codec's payload.
    pub fn payload_len(&self) -> usize {
        self.total_len - self.header_len
    }

    /// The range of the datum that holds the payload.
    pub fn payload_range(&self) -> std::ops::Range<usize> {
        self.header_len..self.total_len
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} bytes stored ({}-byte header, {}-byte payload), {} bytes raw",
            self.form,
            self.total_len,
            self.header_len,
            self.payload_len(),
            self.raw_len
        )
    }
}

/// Why a datum could not be read or written. Positions are byte offsets in the datum.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatumError {
    /// The datum has no bytes at all; the smallest datum is a 1-byte header.
    #[error("datum: empty input (the smallest datum is its 1-byte header)")]
    Empty,
    /// The first byte is `0x01`: PostgreSQL's external TOAST pointer (`VARATT_IS_1B_E`).
    #[error(
        "datum: byte 0 is 0x01, a TOAST pointer (vartag {}), not an inline datum; \
         fetch the value it points to first",
        vartag_name(*.vartag)
    )]
    ToastPointer {
        /// The byte after it (`va_tag`: 1 indirect, 2 and 3 expanded, 18 on-disk), if any.
        vartag: Option<u8>,
    },
    /// The datum ends inside a fixed-size header field.
    #[error(
        "datum: truncated header (the {form} header needs {needed} bytes, the datum has {len})"
    )]
    TruncatedHeader {
        /// The form the first bytes announce.
        form: &'static str,
        /// Bytes the header needs up to the end of the field that is cut off.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// The header's `total_len` is smaller than the header itself.
    #[error("datum: total_len {total_len} is less than the {header_len}-byte header")]
    TotalLenTooSmall {
        /// The header's `total_len`.
        total_len: usize,
        /// The header's own length.
        header_len: usize,
    },
    /// The header's `total_len` differs from the number of bytes given.
    #[error("datum: header says total_len {total_len}, but the datum has {len} bytes")]
    LengthMismatch {
        /// The header's `total_len`.
        total_len: usize,
        /// Bytes given.
        len: usize,
    },
    /// Compression method 2 in `va_tcinfo`: neither PostgreSQL nor pgdict defines it.
    #[error(
        "datum: compression method {method} in bytes 4..8 is not defined \
         (0 pglz, 1 lz4, 3 pgdict extended)"
    )]
    UnknownMethod {
        /// The method bits (always 2: the other values are defined).
        method: u32,
    },
    /// The extended header's codec byte is not 0, 1 or 2.
    #[error("datum: codec byte {code:#04x} at byte 8 is not defined (0 pglz, 1 lz4, 2 zstd)")]
    UnknownCodec {
        /// The byte seen.
        code: u8,
    },
    /// The dictionary id varint runs past the end of the datum.
    #[error(
        "datum: dictionary id is cut off at byte {position} (the datum has {len} bytes; \
         byte {} has the continuation bit)",
        .position - 1
    )]
    DictIdTruncated {
        /// Where the next varint byte should be.
        position: usize,
        /// Bytes present.
        len: usize,
    },
    /// The 5th varint byte has its continuation bit set: the id would be over 5 bytes.
    #[error(
        "datum: dictionary id is longer than 5 bytes (byte {position} is {byte:#04x}, \
         with the continuation bit)"
    )]
    DictIdTooLong {
        /// Position of the 5th varint byte.
        position: usize,
        /// The byte seen.
        byte: u8,
    },
    /// The 5th varint byte has bits above the 32 an id holds.
    #[error(
        "datum: dictionary id is over u32::MAX (byte {position} is {byte:#04x}; \
         a 5th byte holds at most 0x0f)"
    )]
    DictIdOverflow {
        /// Position of the 5th varint byte.
        position: usize,
        /// The byte seen.
        byte: u8,
    },
    /// The varint ends with a 0 byte after others: not the shortest encoding.
    #[error(
        "datum: dictionary id is not minimally encoded (its last byte, at {position}, is 0x00)"
    )]
    DictIdNotMinimal {
        /// Position of the varint's last byte.
        position: usize,
    },
    /// The header's dictionary id is 0; ids start at 1.
    #[error("datum: dictionary id at byte {position} is 0 (ids start at 1)")]
    DictIdZero {
        /// Position of the varint.
        position: usize,
    },
    /// The datum's dictionary is not in the store it was looked up in.
    #[error("datum: dictionary {id} is not in {store}")]
    MissingDictionary {
        /// The dictionary id from the header.
        id: u32,
        /// What was searched ([`DictionaryLookup::describe`]).
        store: String,
    },
    /// The store has the dictionary but cannot produce it (a damaged file, a lost
    /// connection).
    #[error("datum: dictionary {id} in {store} cannot be read: {reason}")]
    DictionaryUnreadable {
        /// The dictionary id from the header.
        id: u32,
        /// What was searched ([`DictionaryLookup::describe`]).
        store: String,
        /// What the store said, and its error ([`LookupFailure::downcast_ref`]).
        reason: LookupFailure,
    },
    /// A datum names a dictionary with a codec the dictionary found under that id was not
    /// built for: it was written with another dictionary of that id.
    #[error(
        "datum: dictionary {id} in {store} was built for {built_for}, not for {codec}: this \
         {codec} datum was written with another dictionary {id} (a store that gave the id to \
         a different dictionary), so decoding it here would give wrong bytes"
    )]
    ForeignDictionary {
        /// The dictionary id from the header.
        id: u32,
        /// The codec from the header.
        codec: Codec,
        /// What the dictionary found under `id` was built for.
        built_for: CodecSet,
        /// What was searched ([`DictionaryLookup::describe`]).
        store: String,
    },
    /// Encoding was asked for with a dictionary not built for the codec
    /// ([`PreparedDictionary::built_for`]).
    #[error("datum: dictionary {id} was built for {built_for}, not for {codec}")]
    DictionaryNotForCodec {
        /// The dictionary's id.
        id: u32,
        /// The codec asked for.
        codec: Codec,
        /// What the dictionary was built for.
        built_for: CodecSet,
    },
    /// The lookup answered with a dictionary of another id (a bug in the lookup).
    #[error("datum: asked {store} for dictionary {wanted}, got dictionary {got}")]
    WrongDictionary {
        /// The dictionary id from the header.
        wanted: u32,
        /// The id of the dictionary returned.
        got: u32,
        /// What was searched ([`DictionaryLookup::describe`]).
        store: String,
    },
    /// A dictionary with id 0 was asked for ([`PreparedDictionary::new`]).
    #[error("datum: dictionary id 0 is reserved (ids start at 1)")]
    DictionaryIdZero,
    /// zstd could not prepare a dictionary's bytes.
    #[error("datum: cannot prepare dictionary {id}: {error}")]
    DictionaryPrepare {
        /// The dictionary's id.
        id: u32,
        /// What zstd said.
        error: zstd::Error,
    },
    /// The header's `raw_len` is more than the payload could ever produce: rejected before
    /// allocating `raw_len` bytes.
    #[error(
        "datum: raw_len {raw_len} is impossible for a {payload_len}-byte {codec} payload \
         (at most {max_possible} bytes)"
    )]
    RawLenImpossible {
        /// The payload's codec.
        codec: Codec,
        /// The header's `raw_len`.
        raw_len: usize,
        /// The payload's length.
        payload_len: usize,
        /// The most such a payload can produce.
        max_possible: usize,
    },
    /// The pglz payload is corrupt (or decoded with the wrong dictionary).
    #[error("datum: payload at byte {payload_pos}: {error}")]
    Pglz {
        /// Where the payload starts in the datum.
        payload_pos: usize,
        /// What the decoder found.
        error: pglz::Error,
    },
    /// The lz4 payload is corrupt (or decoded with the wrong dictionary).
    #[error("datum: payload at byte {payload_pos}: {error}")]
    Lz4 {
        /// Where the payload starts in the datum.
        payload_pos: usize,
        /// What the decoder found.
        error: lz4::Error,
    },
    /// The zstd payload is corrupt (or decoded with the wrong dictionary).
    #[error("datum: payload at byte {payload_pos}: {error}")]
    Zstd {
        /// Where the payload starts in the datum.
        payload_pos: usize,
        /// What the decoder found.
        error: zstd::Error,
    },
    /// A payload decoded to another length than `raw_len`, or a prefix decode stopped short.
    #[error(
        "datum: payload at byte {payload_pos} decoded to {produced} bytes, expected {expected}"
    )]
    DecodedLength {
        /// Where the payload starts in the datum.
        payload_pos: usize,
        /// `raw_len`, or the prefix length asked for (at most `raw_len`).
        expected: usize,
        /// Bytes produced.
        produced: usize,
    },
    /// The value to encode is longer than [`MAX_INPUT_LEN`].
    #[error("datum: a value of {len} bytes is over the limit of {max} bytes")]
    InputTooLarge {
        /// The value's length.
        len: usize,
        /// [`MAX_INPUT_LEN`].
        max: usize,
    },
    /// lz4 failed to compress.
    #[error("datum: cannot compress: {0}")]
    Lz4Compress(lz4::Error),
    /// zstd failed to compress.
    #[error("datum: cannot compress: {0}")]
    ZstdCompress(zstd::Error),
}

/// PostgreSQL's name for a TOAST pointer's `va_tag` (`vartag_external`).
fn vartag_name(vartag: Option<u8>) -> String {
    match vartag {
        None => "missing".to_string(),
        Some(1) => "1, indirect".to_string(),
        Some(2) => "2, expanded read-only".to_string(),
        Some(3) => "3, expanded read-write".to_string(),
        Some(18) => "18, on-disk".to_string(),
        Some(tag) => format!("{tag}, unknown"),
    }
}

/// Reads the little-endian `u32` at `pos`, or reports the `form` header as truncated.
fn read_u32(bytes: &[u8], pos: usize, form: &'static str) -> Result<u32, DatumError> {
    match bytes.get(pos..pos + 4) {
        Some(word) => Ok(u32::from_le_bytes([word[0], word[1], word[2], word[3]])),
        None => Err(DatumError::TruncatedHeader {
            form,
            needed: pos + 4,
            len: bytes.len(),
        }),
    }
}

/// Reads the dictionary id varint at [`DICT_ID_POS`]; returns the id and its length in bytes.
fn read_dict_id(bytes: &[u8]) -> Result<(u32, usize), DatumError> {
    let mut value: u32 = 0;
    for index in 0..MAX_DICT_ID_BYTES {
        let position = DICT_ID_POS + index;
        let Some(&byte) = bytes.get(position) else {
            return Err(DatumError::DictIdTruncated {
                position,
                len: bytes.len(),
            });
        };
        if index == MAX_DICT_ID_BYTES - 1 {
            // Bits 28..=31 are the last four of a u32: the 5th byte may use only its low 4
            // bits, and must be the last.
            if byte & 0x80 != 0 {
                return Err(DatumError::DictIdTooLong { position, byte });
            }
            if byte & 0x70 != 0 {
                return Err(DatumError::DictIdOverflow { position, byte });
            }
        }
        value |= u32::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            // A 0 after other bytes adds nothing: the same id fits one byte fewer. Accepting
            // it would give one id several encodings.
            if byte == 0 && index > 0 {
                return Err(DatumError::DictIdNotMinimal { position });
            }
            if value == 0 {
                return Err(DatumError::DictIdZero {
                    position: DICT_ID_POS,
                });
            }
            return Ok((value, index + 1));
        }
    }
    unreachable!("the 5th byte either ends the varint or is rejected above")
}

/// Writes `id`'s LEB128 encoding (1 to 5 bytes, [`dict_id_len`]) at the start of `buf`;
/// returns its length.
fn put_dict_id(mut id: u32, buf: &mut [u8]) -> usize {
    let mut len = 0;
    while id >= 0x80 {
        buf[len] = (id as u8) | 0x80;
        id >>= 7;
        len += 1;
    }
    buf[len] = id as u8;
    len + 1
}

/// Bytes the LEB128 encoding of dictionary id `id` takes in an extended header.
pub fn dict_id_len(id: u32) -> usize {
    let bits = (32 - id.leading_zeros()).max(1) as usize;
    bits.div_ceil(7)
}

/// Reads the header at the start of `bytes` without requiring `bytes` to be exactly one datum:
/// `bytes` may be only the header, or a datum followed by others. Use [`parse_header`] for a
/// whole datum.
///
/// Checks everything the header alone can tell: its fields are all present, the method and
/// codec are defined, the dictionary id is a valid, minimal varint of 1..=u32::MAX, and
/// `total_len` covers the header.
// Inlined (with `parse_header` and `checked_payload`) into the decoders, which read a header
// per datum: the compiler left it a call of its own. Timed side by side in one process (the
// datum decoder over the first 3000 even rows, 300 rounds): 2.5-4.4 % faster per CSV
// airport datum, 1.1-1.9 % per fortune.
#[inline]
pub fn read_header(bytes: &[u8]) -> Result<Header, DatumError> {
    let Some(&first) = bytes.first() else {
        return Err(DatumError::Empty);
    };
    if first & 0x01 != 0 {
        if first == 0x01 {
            return Err(DatumError::ToastPointer {
                vartag: bytes.get(1).copied(),
            });
        }
        let total_len = usize::from(first >> 1);
        return Ok(Header {
            form: Form::RawShort,
            total_len,
            raw_len: total_len - RAW_SHORT_HEADER_LEN,
            header_len: RAW_SHORT_HEADER_LEN,
        });
    }
    let compressed = first & 0x02 != 0;
    let form_name = if compressed { "compressed" } else { "raw" };
    let total_len = (read_u32(bytes, 0, form_name)? >> 2) as usize;
    if !compressed {
        if total_len < RAW_LONG_HEADER_LEN {
            return Err(DatumError::TotalLenTooSmall {
                total_len,
                header_len: RAW_LONG_HEADER_LEN,
            });
        }
        return Ok(Header {
            form: Form::RawLong,
            total_len,
            raw_len: total_len - RAW_LONG_HEADER_LEN,
            header_len: RAW_LONG_HEADER_LEN,
        });
    }
    if total_len < COMPRESSED_HEADER_LEN {
        return Err(DatumError::TotalLenTooSmall {
            total_len,
            header_len: COMPRESSED_HEADER_LEN,
        });
    }
    let tcinfo = read_u32(bytes, 4, form_name)?;
    let raw_len = (tcinfo & EXTSIZE_MASK) as usize;
    let (form, header_len) = match tcinfo >> METHOD_SHIFT {
        METHOD_PGLZ => (Form::Pglz, COMPRESSED_HEADER_LEN),
        METHOD_LZ4 => (Form::Lz4, COMPRESSED_HEADER_LEN),
        METHOD_EXTENDED => {
            let Some(&code) = bytes.get(CODEC_POS) else {
                return Err(DatumError::TruncatedHeader {
                    form: "extended",
                    needed: CODEC_POS + 1,
                    len: bytes.len(),
                });
            };
            // Not `ok_or`: its error value would be built and dropped for every datum.
            let Some(codec) = Codec::from_code(code) else {
                return Err(DatumError::UnknownCodec { code });
            };
            let (dict_id, id_len) = read_dict_id(bytes)?;
            (Form::Extended { codec, dict_id }, DICT_ID_POS + id_len)
        }
        method => return Err(DatumError::UnknownMethod { method }),
    };
    if total_len < header_len {
        return Err(DatumError::TotalLenTooSmall {
            total_len,
            header_len,
        });
    }
    Ok(Header {
        form,
        total_len,
        raw_len,
        header_len,
    })
}

/// The dictionary id and header of `datum` if it is the commonest form, pglz with a
/// dictionary whose id takes one byte (1..=127), and the header's `total_len` is
/// `datum.len()`; otherwise `None`. For the datums it accepts it gives what [`parse_header`]
/// gives, read from fixed positions with no error to build: the decoder's fast path (see
/// [`DatumDecoder::decode_into`]).
#[inline(always)]
fn extended_pglz_short_id(datum: &[u8]) -> Option<(u32, Header)> {
    const HEADER_LEN: usize = DICT_ID_POS + 1;
    let head: &[u8; HEADER_LEN] = datum.get(..HEADER_LEN)?.try_into().ok()?;
    let word = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let tcinfo = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    let dict_id = u32::from(head[DICT_ID_POS]);
    // The low two bits 10: a 4-byte compressed header (01 would be a short raw header, 00 a
    // long raw one). An id byte under 0x80 is a whole LEB128 varint; 0 is no valid id.
    let matches = word & 0b11 == 0b10
        && (word >> 2) as usize == datum.len()
        && tcinfo >> METHOD_SHIFT == METHOD_EXTENDED
        && head[CODEC_POS] == Codec::Pglz.code()
        && (1..0x80).contains(&dict_id);
    let header = Header {
        form: Form::Extended {
            codec: Codec::Pglz,
            dict_id,
        },
        total_len: datum.len(),
        raw_len: (tcinfo & EXTSIZE_MASK) as usize,
        header_len: HEADER_LEN,
    };
    matches.then_some((dict_id, header))
}

/// Parses the header of a whole datum: [`read_header`], and the header's `total_len` must be
/// `datum.len()`.
#[inline]
pub fn parse_header(datum: &[u8]) -> Result<Header, DatumError> {
    let header = read_header(datum)?;
    if header.total_len != datum.len() {
        return Err(DatumError::LengthMismatch {
            total_len: header.total_len,
            len: datum.len(),
        });
    }
    Ok(header)
}

/// [`parse_header`], and the header's `raw_len` within what its payload can expand to: every
/// check that needs no decoding (what a reader of headers, such as `pgdict inspect`, can say
/// of a datum without its dictionary). A datum that passes may still fail to decode.
pub fn check_header(datum: &[u8]) -> Result<Header, DatumError> {
    let (header, payload) = checked_payload(datum)?;
    if header.form.codec() == Some(Codec::Pglz) {
        let (pglz_err, _, _) = payload_errors(header.header_len);
        pglz::check_raw_len(payload.len(), header.raw_len).map_err(pglz_err)?;
    }
    Ok(header)
}

/// A dictionary prepared for every codec it may be used with: built once from its bytes, then
/// shared (`Send + Sync`, usually in an [`Arc`]) by every thread that encodes or decodes with
/// it.
pub struct PreparedDictionary {
    id: u32,
    /// The codecs its store says it was built for ([`PreparedDictionary::built_for`]); `None`:
    /// any codec.
    codecs: Option<CodecSet>,
    bytes: Box<[u8]>,
    pglz: PglzDictionary,
    lz4: Lz4Dictionary,
    /// `None` only where `codecs` leaves zstd out ([`PreparedDictionary::for_codecs`]).
    zstd: Option<ZstdDictionary>,
}

const _: () = crate::assert_send_sync::<PreparedDictionary>();

impl PreparedDictionary {
    /// Prepares `bytes` as dictionary `id` for pglz (its last 4095 bytes, indexed), lz4 (its
    /// last 64 KiB, loaded into a dictionary stream) and zstd (digested at zstd's default
    /// level). Any bytes work, including none; zstd reads bytes that start with its dictionary
    /// magic number as a zstd-format dictionary, and fails if they are not a valid one.
    pub fn new(id: u32, bytes: &[u8]) -> Result<PreparedDictionary, DatumError> {
        PreparedDictionary::with_zstd_level(id, bytes, zstd::DEFAULT_LEVEL)
    }

    /// [`PreparedDictionary::new`], with zstd compressing at `level`.
    pub fn with_zstd_level(
        id: u32,
        bytes: &[u8],
        level: i32,
    ) -> Result<PreparedDictionary, DatumError> {
        PreparedDictionary::prepare(id, bytes, None, level)
    }

    /// Prepares `bytes` as dictionary `id` to be used with `codecs` only (as
    /// [`PreparedDictionary::built_for`] says), zstd compressing at `zstd_level`. The zstd side
    /// is prepared only if zstd is one of them: then any bytes make a pglz or lz4 dictionary
    /// (zstd refuses bytes that start with its dictionary magic number and are not a zstd
    /// dictionary), and nothing is spent on a side that is never used.
    pub fn for_codecs(
        id: u32,
        bytes: &[u8],
        codecs: CodecSet,
        zstd_level: i32,
    ) -> Result<PreparedDictionary, DatumError> {
        PreparedDictionary::prepare(id, bytes, Some(codecs), zstd_level)
    }

    fn prepare(
        id: u32,
        bytes: &[u8],
        codecs: Option<CodecSet>,
        level: i32,
    ) -> Result<PreparedDictionary, DatumError> {
        if id == 0 {
            return Err(DatumError::DictionaryIdZero);
        }
        let zstd = match codecs {
            Some(codecs) if !codecs.contains(Codec::Zstd) => None,
            _ => Some(
                ZstdDictionary::with_level(bytes, level)
                    .map_err(|error| DatumError::DictionaryPrepare { id, error })?,
            ),
        };
        Ok(PreparedDictionary {
            id,
            codecs,
            bytes: bytes.into(),
            pglz: PglzDictionary::new(bytes),
            lz4: Lz4Dictionary::new(bytes),
            zstd,
        })
    }

    /// The dictionary, to be used only with `codecs` (those of them it was prepared for: one
    /// prepared without a zstd side, [`PreparedDictionary::for_codecs`], never becomes one for
    /// zstd). Encoding with another codec is refused, and so is decoding a datum that names
    /// this id with another codec: pgdict never writes one, so it was written with another
    /// dictionary of this id (two stores that gave one id to different dictionaries), and its
    /// bytes would come out wrong. A stored dictionary is prepared for the codecs it was built
    /// for ([`crate::dict::Dictionary::prepare`]).
    pub fn built_for(mut self, codecs: CodecSet) -> PreparedDictionary {
        self.codecs = Some(match self.zstd {
            Some(_) => codecs,
            None => codecs.without(Codec::Zstd),
        });
        self
    }

    /// The codecs it may be used with, if it is restricted to some
    /// ([`PreparedDictionary::built_for`]).
    pub fn codecs(&self) -> Option<CodecSet> {
        self.codecs
    }

    /// The codecs it was built for, when `codec` is not one of them (it must not be used with
    /// `codec`); `None` when it may be.
    fn built_for_others(&self, codec: Codec) -> Option<CodecSet> {
        self.codecs.filter(|codecs| !codecs.contains(codec))
    }

    /// The dictionary's id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The dictionary's bytes, whole.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Length of the dictionary's bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the dictionary has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The pglz side: the last 4095 bytes and their index.
    pub fn pglz(&self) -> &PglzDictionary {
        &self.pglz
    }

    /// The lz4 side: the last 64 KiB and their dictionary stream.
    pub fn lz4(&self) -> &Lz4Dictionary {
        &self.lz4
    }

    /// The zstd side, the digested dictionaries: `None` for a dictionary prepared for codecs
    /// other than zstd ([`PreparedDictionary::for_codecs`]).
    pub fn zstd(&self) -> Option<&ZstdDictionary> {
        self.zstd.as_ref()
    }

    /// The zstd side, for a codec already checked ([`PreparedDictionary::built_for_others`]):
    /// a dictionary without one is not for zstd, and says so.
    fn zstd_side(&self) -> Result<&ZstdDictionary, DatumError> {
        self.zstd
            .as_ref()
            .ok_or_else(|| DatumError::DictionaryNotForCodec {
                id: self.id,
                codec: Codec::Zstd,
                built_for: self.codecs.unwrap_or(CodecSet::ALL),
            })
    }
}

impl fmt::Debug for PreparedDictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedDictionary")
            .field("id", &self.id)
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// Where a decoder finds dictionaries by id: implemented by the dictionary store, and here for
/// [`Dictionaries`], a plain [`HashMap`], [`NoDictionaries`] and `()`.
pub trait DictionaryLookup {
    /// The dictionary with this id: `Ok(None)` when there is none; `Err(reason)` when there is
    /// one but it cannot be had (a damaged file, a lost connection), so that the decode error
    /// says what is wrong instead of calling the dictionary missing.
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure>;

    /// The dictionary with this id, borrowed, where the lookup holds its dictionaries in
    /// memory; `None` sends the decoder to [`Self::dictionary`]. A borrow spares each decode
    /// the two atomic operations of cloning and dropping an `Arc`.
    fn borrowed(&self, _id: u32) -> Option<&PreparedDictionary> {
        None
    }

    /// What is searched, for error messages: the store's path, say.
    fn describe(&self) -> String;
}

/// Why a [`DictionaryLookup`] could not produce a dictionary it holds: the lookup's own error
/// (a [`crate::dict::StoreError`] for the stores), kept whole so that a caller can act on what
/// failed ([`Self::downcast_ref`]) rather than on its text.
///
/// It displays as that error. It is not that error's `source()`: [`DatumError`]'s message
/// already includes it, and a chain that showed it twice would say the same thing twice.
/// Two failures are equal when their messages are (as [`DatumError`] compares).
#[derive(Clone, Debug)]
pub struct LookupFailure(Arc<dyn std::error::Error + Send + Sync>);

impl LookupFailure {
    /// Wraps the lookup's error (a message is a `&str` or `String`).
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LookupFailure {
        LookupFailure(Arc::from(error.into()))
    }

    /// The lookup's error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Display for LookupFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for LookupFailure {
    fn eq(&self, other: &LookupFailure) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for LookupFailure {}

/// A set of prepared dictionaries in memory, by id.
#[derive(Clone, Debug, Default)]
pub struct Dictionaries {
    by_id: HashMap<u32, Arc<PreparedDictionary>, BuildHasherDefault<IdHasher>>,
    description: Option<String>,
}

/// The hasher of [`Dictionaries`]: one multiplication per id. Every decode of a dictionary
/// datum looks its id up, and the standard hasher (SipHash) cost about 5 % of decoding a
/// 200-byte row. Flooding needs many colliding keys in the map, and only the caller puts
/// dictionaries there; a datum's id is only looked up.
#[derive(Clone, Copy, Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(byte));
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.write_u64(u64::from(id));
    }

    fn write_u64(&mut self, value: u64) {
        // Fibonacci hashing: an odd constant near 2^64 / golden ratio spreads consecutive ids
        // over the high bits, which the map's control bytes use.
        self.0 = value.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Dictionaries {
    /// An empty set.
    pub fn new() -> Dictionaries {
        Dictionaries::default()
    }

    /// An empty set that error messages call `description` (a store's path, say).
    pub fn described(description: impl Into<String>) -> Dictionaries {
        Dictionaries {
            by_id: HashMap::default(),
            description: Some(description.into()),
        }
    }

    /// Adds a dictionary under its id; returns the one it replaces, if any.
    pub fn insert(&mut self, dict: Arc<PreparedDictionary>) -> Option<Arc<PreparedDictionary>> {
        self.by_id.insert(dict.id(), dict)
    }

    /// The dictionary with this id, if there is one.
    pub fn get(&self, id: u32) -> Option<&Arc<PreparedDictionary>> {
        self.by_id.get(&id)
    }

    /// How many dictionaries the set holds.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

impl FromIterator<Arc<PreparedDictionary>> for Dictionaries {
    fn from_iter<I: IntoIterator<Item = Arc<PreparedDictionary>>>(iter: I) -> Self {
        let mut set = Dictionaries::new();
        for dict in iter {
            set.insert(dict);
        }
        set
    }
}

impl DictionaryLookup for Dictionaries {
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        Ok(self.by_id.get(&id).cloned())
    }

    fn borrowed(&self, id: u32) -> Option<&PreparedDictionary> {
        self.by_id.get(&id).map(|d| &**d)
    }

    fn describe(&self) -> String {
        match &self.description {
            Some(description) => description.clone(),
            None => format!("an in-memory set of {} dictionaries", self.by_id.len()),
        }
    }
}

impl DictionaryLookup for HashMap<u32, Arc<PreparedDictionary>> {
    fn dictionary(&self, id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        Ok(self.get(&id).cloned())
    }

    fn borrowed(&self, id: u32) -> Option<&PreparedDictionary> {
        self.get(&id).map(|d| &**d)
    }

    fn describe(&self) -> String {
        format!("an in-memory map of {} dictionaries", self.len())
    }
}

/// No dictionaries at all: decodes raw and PostgreSQL datums, and reports every extended
/// datum's dictionary as missing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoDictionaries;

impl DictionaryLookup for NoDictionaries {
    fn dictionary(&self, _id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        Ok(None)
    }

    fn describe(&self) -> String {
        "an empty set of dictionaries (no store was given)".to_string()
    }
}

/// `()` is [`NoDictionaries`].
impl DictionaryLookup for () {
    fn dictionary(&self, _id: u32) -> Result<Option<Arc<PreparedDictionary>>, LookupFailure> {
        Ok(None)
    }

    fn describe(&self) -> String {
        NoDictionaries.describe()
    }
}

/// pglz's buffers that grow with the input are kept up to this size, for the next datum, and
/// freed beyond it ([`Compressor::release_buffers_over`]): a large value's would otherwise be
/// held beside its datum, and for as long as the encoder lives.
const PGLZ_KEEP_BUFFERS_MAX: usize = 1 << 20;

/// Writes datums, keeping every codec's work state between calls: one per thread.
///
/// ```
/// use pgdict::datum::{self, Codec, DatumEncoder, Form, NoDictionaries};
///
/// let mut encoder = DatumEncoder::new();
/// let row = b"{\"name\": \"alpha\", \"tags\": [\"alpha\", \"alpha\", \"alpha\", \"alpha\"]}";
/// let stored = encoder.encode(row, Codec::Pglz, None).unwrap();
/// assert_eq!(datum::parse_header(&stored).unwrap().form, Form::Pglz);
/// assert_eq!(datum::decode(&stored, &NoDictionaries).unwrap(), row);
/// ```
#[derive(Debug, Default)]
pub struct DatumEncoder {
    pglz: Compressor,
    lz4: Lz4Compressor,
    /// Created on first use: making a zstd context can fail, and most callers never need one.
    zstd: Option<ZstdCompressor>,
}

/// The smallest candidate so far while encoding.
struct Best {
    /// Where the datum starts in the output.
    start: usize,
    /// The header of what `out[start..]` holds; `None` while only raw has been considered
    /// (raw is written last, and only if nothing beat it).
    header: Option<Header>,
    /// Length of the smallest datum so far (raw's at first).
    total_len: usize,
    /// Its [`Rank`]: on equal lengths the lower rank wins.
    rank: Rank,
}

/// Preference between datums of equal length: raw decodes fastest, and plain is what
/// PostgreSQL itself reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Raw,
    Plain,
    Dictionary,
}

impl Best {
    /// The largest payload with which a datum of this header length and rank would win;
    /// `None` if even a 1-byte payload would not.
    fn max_payload(&self, header_len: usize, rank: Rank) -> Option<usize> {
        let ties_win = usize::from(rank < self.rank);
        let limit = (self.total_len + ties_win).checked_sub(header_len + 1)?;
        (limit >= 1).then_some(limit)
    }

    /// Writes the candidate over the best if it wins (shorter, or as long with a lower rank).
    // Inlined into each form's attempt (the compiler kept it a call of its own): see
    // `pglz::Compressor::limits` for what the two together save per datum.
    #[inline(always)]
    fn offer(&mut self, out: &mut Vec<u8>, form: Form, raw_len: usize, payload: &[u8]) {
        let (header_len, rank) = compressed_header_len(form);
        match self.max_payload(header_len, rank) {
            Some(max) if payload.len() <= max => {}
            _ => return,
        }
        let total_len = header_len + payload.len();
        // The header is put together here and appended in one piece, not field by field:
        // timed side by side in one process (datum encoder, 300 rounds), 1.4 % faster per CSV
        // airport datum, 0.6 % per fortune.
        let header = compressed_header(form, total_len, raw_len);
        out.truncate(self.start);
        out.reserve(total_len);
        out.extend_from_slice(&header[..header_len]);
        out.extend_from_slice(payload);
        debug_assert_eq!(out.len() - self.start, total_len);
        self.won(form, total_len, raw_len, header_len, rank);
    }

    /// [`Best::offer`] for a codec that appends its payload to a `Vec` (lz4, zstd): `compress`
    /// writes it straight into `out`, after the best datum so far (after `best.start` while
    /// that is raw, which is written last), behind room for the header. A winner is given its
    /// header there and, if a datum was before it, moved down over that one; a loser is cut
    /// off. The datum's bytes are [`Best::offer`]'s, without a payload buffer to copy from: for
    /// a large value that buffer was as large again as the payload. Nothing is compressed
    /// when even a 1-byte payload would lose. On error `out` may hold a partial candidate (the
    /// caller cuts it off).
    fn attempt<E>(
        &mut self,
        out: &mut Vec<u8>,
        form: Form,
        raw_len: usize,
        compress: impl FnOnce(&mut Vec<u8>) -> Result<usize, E>,
    ) -> Result<(), E> {
        let (header_len, rank) = compressed_header_len(form);
        let Some(max) = self.max_payload(header_len, rank) else {
            return Ok(());
        };
        let at = match self.header {
            Some(_) => self.start + self.total_len,
            None => self.start,
        };
        debug_assert_eq!(out.len(), at);
        out.resize(at + header_len, 0);
        compress(out)?;
        let payload_len = out.len() - at - header_len;
        if payload_len > max {
            out.truncate(at);
            return Ok(());
        }
        let total_len = header_len + payload_len;
        let header = compressed_header(form, total_len, raw_len);
        out[at..at + header_len].copy_from_slice(&header[..header_len]);
        if at != self.start {
            out.copy_within(at.., self.start);
            out.truncate(self.start + total_len);
        }
        self.won(form, total_len, raw_len, header_len, rank);
        Ok(())
    }

    /// Records the datum of `form` that `out[start..]` now holds as the best.
    #[inline(always)]
    fn won(&mut self, form: Form, total_len: usize, raw_len: usize, header_len: usize, rank: Rank) {
        self.total_len = total_len;
        self.rank = rank;
        self.header = Some(Header {
            form,
            total_len,
            raw_len,
            header_len,
        });
    }
}

/// The header length of a compressed datum of `form` (not raw), and its [`Rank`].
#[inline(always)]
fn compressed_header_len(form: Form) -> (usize, Rank) {
    match form {
        Form::Extended { dict_id, .. } => (DICT_ID_POS + dict_id_len(dict_id), Rank::Dictionary),
        _ => (COMPRESSED_HEADER_LEN, Rank::Plain),
    }
}

/// The header of a compressed datum of `form` (not raw), in the first
/// [`compressed_header_len`] bytes.
#[inline(always)]
fn compressed_header(form: Form, total_len: usize, raw_len: usize) -> [u8; MAX_HEADER_LEN] {
    let mut header = [0; MAX_HEADER_LEN];
    // total_len <= raw's total <= MAX_RAW_LEN, and raw_len <= MAX_INPUT_LEN: both fit 30 bits.
    header[..4].copy_from_slice(&(((total_len as u32) << 2) | 0b10).to_le_bytes());
    let method = match form {
        Form::Pglz => METHOD_PGLZ,
        Form::Lz4 => METHOD_LZ4,
        _ => METHOD_EXTENDED,
    };
    header[4..8].copy_from_slice(&((raw_len as u32) | (method << METHOD_SHIFT)).to_le_bytes());
    if let Form::Extended { codec, dict_id } = form {
        header[CODEC_POS] = codec.code();
        put_dict_id(dict_id, &mut header[DICT_ID_POS..]);
    }
    header
}

/// `base`, with `min_comp_rate` raised (never lowered) so that pglz gives up as soon as its
/// output grows past `max_payload` bytes: a payload that long could not win anyway, and pglz
/// checks its output size as it goes, so a hopeless attempt stops early instead of running to
/// the end. The rate only decides when pglz gives up, never which bytes it writes, so a
/// payload it does return is the one `base` would have returned.
fn strategy_within(base: &Strategy, raw_len: usize, max_payload: usize) -> Strategy {
    // pglz accepts a payload of p bytes iff p < result_max(rate) (its own arithmetic, below);
    // find the highest rate whose result_max is still over max_payload.
    let Ok(slen) = i64::try_from(raw_len) else {
        return *base;
    };
    let result_max = |rate: i64| {
        if slen > i64::from(i32::MAX / 100) {
            (slen / 100) * (100 - rate)
        } else {
            (slen * (100 - rate)) / 100
        }
    };
    let target = max_payload as i64 + 1;
    // slen * (100 - rate) / 100 >= target  <=>  rate <= 100 - ceil(100 * target / slen).
    let needed = (100 * target.unsigned_abs()).div_ceil(slen.unsigned_abs().max(1));
    let mut rate = (100 - needed.min(100) as i64).clamp(0, 99);
    while rate > 0 && result_max(rate) < target {
        rate -= 1;
    }
    let base_rate = base.min_comp_rate.clamp(0, 99);
    Strategy {
        min_comp_rate: (rate as i32).max(base_rate),
        ..*base
    }
}

/// Length of the raw datum of `raw_len` bytes, and its header length.
fn raw_datum_len(raw_len: usize) -> (usize, usize) {
    if raw_len + RAW_SHORT_HEADER_LEN <= MAX_SHORT_TOTAL_LEN {
        (raw_len + RAW_SHORT_HEADER_LEN, RAW_SHORT_HEADER_LEN)
    } else {
        (raw_len + RAW_LONG_HEADER_LEN, RAW_LONG_HEADER_LEN)
    }
}

/// Refuses an input longer than [`MAX_INPUT_LEN`] (a function of the length alone, so that
/// its limit is tested without a 1 GiB input).
fn check_input_len(len: usize) -> Result<(), DatumError> {
    if len > MAX_INPUT_LEN {
        return Err(DatumError::InputTooLarge {
            len,
            max: MAX_INPUT_LEN,
        });
    }
    Ok(())
}

/// Appends the raw datum of `raw` (1-byte header up to 127 bytes in all) and returns its header.
/// `raw.len()` must be at most [`MAX_INPUT_LEN`].
fn write_raw(raw: &[u8], out: &mut Vec<u8>) -> Header {
    let (total_len, header_len) = raw_datum_len(raw.len());
    out.reserve(total_len);
    let form = if header_len == RAW_SHORT_HEADER_LEN {
        out.push(((total_len as u8) << 1) | 0x01);
        Form::RawShort
    } else {
        out.extend_from_slice(&((total_len as u32) << 2).to_le_bytes());
        Form::RawLong
    };
    out.extend_from_slice(raw);
    Header {
        form,
        total_len,
        raw_len: raw.len(),
        header_len,
    }
}

impl DatumEncoder {
    /// An encoder with fresh codec state.
    pub fn new() -> DatumEncoder {
        DatumEncoder::default()
    }

    /// Encodes `raw` as the smallest of its raw, plain `codec` and (with `dict`) dictionary
    /// forms; see the module documentation.
    pub fn encode(
        &mut self,
        raw: &[u8],
        codec: Codec,
        dict: Option<&PreparedDictionary>,
    ) -> Result<Vec<u8>, DatumError> {
        let mut out = Vec::new();
        self.encode_into(raw, codec, dict, &mut out)?;
        Ok(out)
    }

    /// [`DatumEncoder::encode`], appending the datum to `out` (whose contents are kept) and
    /// returning its header, which says which form was chosen. On error `out` is unchanged.
    pub fn encode_into(
        &mut self,
        raw: &[u8],
        codec: Codec,
        dict: Option<&PreparedDictionary>,
        out: &mut Vec<u8>,
    ) -> Result<Header, DatumError> {
        check_input_len(raw.len())?;
        let start = out.len();
        let mut best = Best {
            start,
            header: None,
            total_len: raw_datum_len(raw.len()).0,
            rank: Rank::Raw,
        };
        let result = self.try_compressed(raw, codec, dict, out, &mut best);
        if let Err(error) = result {
            out.truncate(start);
            return Err(error);
        }
        Ok(match best.header {
            Some(header) => header,
            None => write_raw(raw, out),
        })
    }

    /// Offers the dictionary and plain forms to `best`, writing the winner into `out`.
    ///
    /// The dictionary form goes first: it usually wins. For pglz the plain attempt after it
    /// is then skipped when a bound proves that it cannot produce a payload small enough to
    /// win ([`Compressor::plain_may_fit`]: a count of the positions whose three bytes
    /// repeat), and otherwise gives up as soon as it is sure to lose. On the shared corpus's
    /// rows (the even rows of each set, a dictionary trained on the odd ones:
    /// `examples/codec_profile.rs stats`) the plain form won for 5 of 20,082 datums, and the
    /// bound skipped the plain attempt for 19,488 of them (a second bound for inputs of 2 KB
    /// or more skipped more but cost more time than the attempts it saved: see
    /// `plain_may_fit`).
    fn try_compressed(
        &mut self,
        raw: &[u8],
        codec: Codec,
        dict: Option<&PreparedDictionary>,
        out: &mut Vec<u8>,
        best: &mut Best,
    ) -> Result<(), DatumError> {
        let raw_len = raw.len();
        if let Some(d) = dict {
            if let Some(built_for) = d.built_for_others(codec) {
                return Err(DatumError::DictionaryNotForCodec {
                    id: d.id(),
                    codec,
                    built_for,
                });
            }
        }
        let dict_form = dict.map(|d| {
            let form = Form::Extended {
                codec,
                dict_id: d.id(),
            };
            (d, form, DICT_ID_POS + dict_id_len(d.id()))
        });
        let DatumEncoder { pglz, lz4, zstd } = self;
        match codec {
            Codec::Pglz => {
                if let Some((d, form, header_len)) = dict_form {
                    if let Some(max) = best.max_payload(header_len, Rank::Dictionary) {
                        let strategy = strategy_within(&Strategy::DICTIONARY, raw_len, max);
                        if let Some(payload) = pglz.compress_with_dict(raw, d.pglz(), &strategy) {
                            best.offer(out, form, raw_len, payload);
                        }
                    }
                }
                if let Some(max) = best.max_payload(COMPRESSED_HEADER_LEN, Rank::Plain) {
                    // Skipped when it provably cannot win (`plain_may_fit`): after a dictionary
                    // form, that is most attempts on the shared corpus's rows. The default
                    // strategy refuses inputs under 32 bytes without looking at them, and
                    // payloads that save under 25 %, a tighter limit than the dictionary
                    // form's where that form saves less.
                    let max = max.min(Strategy::DEFAULT.longest_payload(raw_len));
                    let tried = raw_len >= Strategy::DEFAULT.min_input_size as usize;
                    if tried && pglz.plain_may_fit(raw, max) {
                        // PostgreSQL's default strategy, only quicker to give up: what it
                        // returns is byte for byte PostgreSQL's payload.
                        let strategy = strategy_within(&Strategy::DEFAULT, raw_len, max);
                        if let Some(payload) = pglz.compress(raw, &strategy) {
                            best.offer(out, Form::Pglz, raw_len, payload);
                        }
                    }
                }
                // The payload is copied out: a large input's buffers are freed before the raw
                // form (if it wins) copies the input.
                pglz.release_buffers_over(PGLZ_KEEP_BUFFERS_MAX);
            }
            Codec::Lz4 => {
                if let Some((d, form, _)) = dict_form {
                    best.attempt(out, form, raw_len, |out| {
                        lz4.compress_with_dict_into(raw, d.lz4(), out)
                            .map_err(DatumError::Lz4Compress)
                    })?;
                }
                // PostgreSQL also drops a block larger than the value (`lz4_compress_datum`);
                // such a block never beats the raw datum, so `attempt` drops it too.
                best.attempt(out, Form::Lz4, raw_len, |out| {
                    lz4.compress_into(raw, out).map_err(DatumError::Lz4Compress)
                })?;
            }
            Codec::Zstd => {
                // No plain form: an extended header always names a dictionary.
                if let Some((d, form, header_len)) = dict_form {
                    if best.max_payload(header_len, Rank::Dictionary).is_some() {
                        let compressor = match zstd {
                            Some(compressor) => compressor,
                            None => zstd
                                .insert(ZstdCompressor::new().map_err(DatumError::ZstdCompress)?),
                        };
                        let side = d.zstd_side()?;
                        best.attempt(out, form, raw_len, |out| {
                            compressor
                                .compress_with_dict_into(raw, side, out)
                                .map_err(DatumError::ZstdCompress)
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reads datums, keeping a zstd decompression context between calls (about 100 KiB; creating
/// one costs more than decoding a small datum): one per thread. The free functions [`decode`]
/// and [`decode_prefix`] make one per call.
#[derive(Debug, Default)]
pub struct DatumDecoder {
    /// Created on first use (only extended zstd datums need it).
    zstd: Option<ZstdDecompressor>,
}

/// Checks that a payload of `payload_len` bytes could expand to `raw_len`, before `raw_len`
/// bytes are allocated for it. (pglz checks this itself.)
fn check_expansion(codec: Codec, raw_len: usize, payload_len: usize) -> Result<(), DatumError> {
    let max_possible = match codec {
        Codec::Pglz => return Ok(()),
        Codec::Lz4 => payload_len.saturating_mul(crate::lz4::MAX_EXPANSION),
        // Every block has a 3-byte header and produces at most a block's most.
        Codec::Zstd => payload_len
            .div_ceil(3)
            .saturating_mul(crate::zstd::MAX_BLOCK_CONTENT),
    };
    if raw_len > max_possible {
        return Err(DatumError::RawLenImpossible {
            codec,
            raw_len,
            payload_len,
            max_possible,
        });
    }
    Ok(())
}

/// Finds the dictionary an extended header names: borrowed from `dicts` where it lends it,
/// otherwise fetched into `owned`.
fn resolve<'a>(
    id: u32,
    codec: Codec,
    dicts: &'a dyn DictionaryLookup,
    owned: &'a mut Option<Arc<PreparedDictionary>>,
) -> Result<&'a PreparedDictionary, DatumError> {
    let dict = match dicts.borrowed(id) {
        Some(dict) => dict,
        None => {
            let found = dicts
                .dictionary(id)
                .map_err(|reason| DatumError::DictionaryUnreadable {
                    id,
                    store: dicts.describe(),
                    reason,
                })?
                .ok_or_else(|| DatumError::MissingDictionary {
                    id,
                    store: dicts.describe(),
                })?;
            &**owned.insert(found)
        }
    };
    if dict.id() != id {
        return Err(DatumError::WrongDictionary {
            wanted: id,
            got: dict.id(),
            store: dicts.describe(),
        });
    }
    if let Some(built_for) = dict.built_for_others(codec) {
        return Err(DatumError::ForeignDictionary {
            id,
            codec,
            built_for,
            store: dicts.describe(),
        });
    }
    Ok(dict)
}

/// A datum's header and payload, the payload checked against the most its codec can expand to
/// before anything is allocated for `raw_len`: what every decode starts with.
#[inline]
fn checked_payload(datum: &[u8]) -> Result<(Header, &[u8]), DatumError> {
    let header = parse_header(datum)?;
    let payload = &datum[header.payload_range()];
    if let Some(codec) = header.form.codec() {
        check_expansion(codec, header.raw_len, payload.len())?;
    }
    Ok((header, payload))
}

/// Decodes the pglz `payload` of the datum with this `header` into `out` (its `raw_len`
/// bytes), `dict` being the history before it (empty for plain pglz). pglz's own check bounds
/// `raw_len` by the payload before `out` grows.
#[inline(always)]
fn pglz_into(
    payload: &[u8],
    header: Header,
    dict: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), DatumError> {
    let (pglz_err, _, _) = payload_errors(header.header_len);
    pglz::check_raw_len(payload.len(), header.raw_len).map_err(pglz_err)?;
    out.resize(header.raw_len, 0);
    pglz::decompress_into_with_dict(payload, out, dict).map_err(pglz_err)
}

/// Wrappers for the codecs' errors that place them at the payload, which starts at byte `pos`.
fn payload_errors(
    pos: usize,
) -> (
    impl Fn(pglz::Error) -> DatumError + Copy,
    impl Fn(lz4::Error) -> DatumError + Copy,
    impl Fn(zstd::Error) -> DatumError + Copy,
) {
    (
        move |error| DatumError::Pglz {
            payload_pos: pos,
            error,
        },
        move |error| DatumError::Lz4 {
            payload_pos: pos,
            error,
        },
        move |error| DatumError::Zstd {
            payload_pos: pos,
            error,
        },
    )
}

impl DatumDecoder {
    /// A decoder with no state yet.
    pub fn new() -> DatumDecoder {
        DatumDecoder::default()
    }

    /// The zstd context, created on first use; `payload_pos` is for the error if that fails.
    fn zstd(&mut self, payload_pos: usize) -> Result<&mut ZstdDecompressor, DatumError> {
        match &mut self.zstd {
            Some(zstd) => Ok(zstd),
            slot @ None => {
                let created = ZstdDecompressor::new()
                    .map_err(|error| DatumError::Zstd { payload_pos, error })?;
                Ok(slot.insert(created))
            }
        }
    }

    /// Decodes a whole datum to its `raw_len` bytes, looking its dictionary (if any) up in
    /// `dicts`.
    pub fn decode(
        &mut self,
        datum: &[u8],
        dicts: &dyn DictionaryLookup,
    ) -> Result<Vec<u8>, DatumError> {
        let mut out = Vec::new();
        self.decode_into(datum, dicts, &mut out)?;
        Ok(out)
    }

    /// [`Self::decode`] into `out`, replacing its contents; reusing one buffer saves an
    /// allocation per datum (pglz and lz4 datums decode straight into it). Returns the header. On
    /// error the contents of `out` are unspecified.
    pub fn decode_into(
        &mut self,
        datum: &[u8],
        dicts: &dyn DictionaryLookup,
        out: &mut Vec<u8>,
    ) -> Result<Header, DatumError> {
        // The commonest datum, pglz with a dictionary, goes first and straight: its header is
        // read from fixed positions (`extended_pglz_short_id`), then it is decoded as the
        // general path below decodes it. Short rows feel the general header reading and
        // dispatch: timed in one binary, the same payloads with dictionary id 1 (this path) and
        // id 200 (the general path), 1.08-1.10x on the CSV airport rows C stores compressed,
        // 1.06-1.07x over every even row. (`dict_ratio`'s airports `dec vs C`: 1.44-1.46x ->
        // 1.52-1.53x; builds of one decoder differ by as much, see docs/performance-history.md,
        // "Decoding".)
        if let Some((dict_id, header)) = extended_pglz_short_id(datum) {
            let mut owned = None;
            let dict = resolve(dict_id, Codec::Pglz, dicts, &mut owned)?;
            let payload = &datum[header.header_len..];
            pglz_into(payload, header, dict.pglz().as_bytes(), out)?;
            return Ok(header);
        }
        let (header, payload) = checked_payload(datum)?;
        let (pos, raw_len) = (header.header_len, header.raw_len);
        let (_, lz4_err, zstd_err) = payload_errors(pos);
        // Every codec decodes into `out` in place, reusing its allocation (raw_len is bounded
        // by the payload before `out` grows: by pglz's own check, by `check_expansion` for lz4
        // and zstd).
        match header.form {
            Form::RawShort | Form::RawLong => {
                out.clear();
                out.extend_from_slice(payload);
            }
            Form::Pglz => pglz_into(payload, header, &[], out)?,
            Form::Lz4 => lz4::decompress_into(payload, raw_len, out).map_err(lz4_err)?,
            Form::Extended { codec, dict_id } => {
                let mut owned = None;
                let dict = resolve(dict_id, codec, dicts, &mut owned)?;
                match codec {
                    Codec::Pglz => pglz_into(payload, header, dict.pglz().as_bytes(), out)?,
                    Codec::Lz4 => {
                        dict.lz4()
                            .decompress_into(payload, raw_len, out)
                            .map_err(lz4_err)?;
                    }
                    Codec::Zstd => {
                        self.zstd(pos)?
                            .decompress_with_dict_into(payload, raw_len, dict.zstd_side()?, out)
                            .map_err(zstd_err)?;
                    }
                }
            }
        }
        // The codecs insist on raw_len already; this keeps the promise whatever they do.
        if out.len() != raw_len {
            return Err(DatumError::DecodedLength {
                payload_pos: pos,
                expected: raw_len,
                produced: out.len(),
            });
        }
        Ok(header)
    }

    /// Decodes the first `prefix_len` bytes of a datum (all of it if `prefix_len >= raw_len`):
    /// exactly `min(prefix_len, raw_len)` bytes, or an error. Corruption after the prefix may
    /// go unnoticed, as in PostgreSQL; for pglz at most
    /// [`pglz::maximum_compressed_size`]`(prefix_len)` payload bytes are read. The whole value
    /// is decoded and checked as [`Self::decode`] does it, and a `raw_len` that the payload
    /// cannot produce is refused for every codec.
    pub fn decode_prefix(
        &mut self,
        datum: &[u8],
        prefix_len: usize,
        dicts: &dyn DictionaryLookup,
    ) -> Result<Vec<u8>, DatumError> {
        let (header, payload) = checked_payload(datum)?;
        let (pos, raw_len) = (header.header_len, header.raw_len);
        if prefix_len >= raw_len {
            // The partial decoders stop at `raw_len`: they would not see a payload that goes
            // on past it, which `decode` refuses.
            return self.decode(datum, dicts);
        }
        let wanted = prefix_len;
        let (pglz_err, lz4_err, zstd_err) = payload_errors(pos);
        if header.form.codec() == Some(Codec::Pglz) {
            // `checked_payload` leaves this to pglz's whole decode, which a prefix skips.
            pglz::check_raw_len(payload.len(), raw_len).map_err(pglz_err)?;
        }
        let decoded = match header.form {
            Form::RawShort | Form::RawLong => payload[..wanted].to_vec(),
            Form::Pglz => pglz::decompress_prefix(payload, raw_len, wanted).map_err(pglz_err)?,
            Form::Lz4 => lz4::decompress_prefix(payload, raw_len, wanted).map_err(lz4_err)?,
            Form::Extended { codec, dict_id } => {
                let mut owned = None;
                let dict = resolve(dict_id, codec, dicts, &mut owned)?;
                match codec {
                    Codec::Pglz => pglz::decompress_prefix_with_dict(
                        payload,
                        raw_len,
                        wanted,
                        dict.pglz().as_bytes(),
                    )
                    .map_err(pglz_err)?,
                    Codec::Lz4 => dict
                        .lz4()
                        .decompress_prefix(payload, raw_len, wanted)
                        .map_err(lz4_err)?,
                    Codec::Zstd => self
                        .zstd(pos)?
                        .decompress_prefix_with_dict(payload, raw_len, wanted, dict.zstd_side()?)
                        .map_err(zstd_err)?,
                }
            }
        };
        // pglz, like PostgreSQL, stops quietly when the payload ends before the prefix.
        if decoded.len() != wanted {
            return Err(DatumError::DecodedLength {
                payload_pos: pos,
                expected: wanted,
                produced: decoded.len(),
            });
        }
        Ok(decoded)
    }
}

/// Decodes a whole datum (see [`DatumDecoder::decode`]; this makes a decoder per call).
pub fn decode(datum: &[u8], dicts: &dyn DictionaryLookup) -> Result<Vec<u8>, DatumError> {
    DatumDecoder::new().decode(datum, dicts)
}

/// Decodes the first `prefix_len` bytes of a datum (see [`DatumDecoder::decode_prefix`]).
pub fn decode_prefix(
    datum: &[u8],
    prefix_len: usize,
    dicts: &dyn DictionaryLookup,
) -> Result<Vec<u8>, DatumError> {
    DatumDecoder::new().decode_prefix(datum, prefix_len, dicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The datum of `raw` as the smallest of its candidates, each built on its own from the
    /// codecs' payloads (the way the encoder once did it, through a payload buffer): raw,
    /// plain, dictionary, the first of the shortest winning.
    fn smallest_built_apart(
        raw: &[u8],
        codec: Codec,
        dict: Option<&PreparedDictionary>,
    ) -> Vec<u8> {
        let mut raw_datum = Vec::new();
        write_raw(raw, &mut raw_datum);
        let mut candidates = vec![raw_datum];
        let mut add = |form: Form, payload: Vec<u8>| {
            let (header_len, _) = compressed_header_len(form);
            let header = compressed_header(form, header_len + payload.len(), raw.len());
            candidates.push([&header[..header_len], &payload].concat());
        };
        if codec == Codec::Lz4 {
            add(Form::Lz4, lz4::compress(raw).unwrap());
        }
        if let Some(d) = dict {
            let form = Form::Extended {
                codec,
                dict_id: d.id(),
            };
            let payload = match codec {
                Codec::Lz4 => Lz4Compressor::new()
                    .compress_with_dict(raw, d.lz4())
                    .unwrap(),
                Codec::Zstd => {
                    let mut payload = Vec::new();
                    let side = d.zstd_side().unwrap();
                    ZstdCompressor::new()
                        .unwrap()
                        .compress_with_dict_into(raw, side, &mut payload)
                        .unwrap();
                    payload
                }
                Codec::Pglz => unreachable!("pglz payloads are offered from its own buffer"),
            };
            add(form, payload);
        }
        candidates.into_iter().min_by_key(Vec::len).unwrap()
    }

    #[test]
    fn lz4_and_zstd_compressed_in_place_give_the_datums_built_apart() {
        let dict_bytes =
            br#"{"name": "alpha", "kind": "event", "tags": ["red", "green"]} "#.repeat(30);
        let dict = PreparedDictionary::new(300, &dict_bytes).unwrap();
        let mut noise = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            noise.push(x as u8);
        }
        let inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"a".to_vec(),
            br#"{"name": "alpha", "kind": "event", "tags": ["red"]}"#.to_vec(),
            dict_bytes[..1000].to_vec(),
            b"0123456789abcdef".repeat(12),
            b"unrelated to the dictionary, said twice; unrelated to the dictionary".repeat(3),
            noise.clone(),
            [&noise[..200], &b"zz".repeat(100)].concat(),
            b"a large value, compressible ".repeat(20_000),
        ];
        let mut forms = Vec::new();
        let mut encoder = DatumEncoder::new();
        for codec in [Codec::Lz4, Codec::Zstd] {
            for dict in [None, Some(&dict)] {
                for raw in &inputs {
                    let expected = smallest_built_apart(raw, codec, dict);
                    for before in [&b""[..], b"kept"] {
                        let mut out = before.to_vec();
                        let header = encoder.encode_into(raw, codec, dict, &mut out).unwrap();
                        assert_eq!(&out[..before.len()], before);
                        assert!(
                            out[before.len()..] == expected[..],
                            "{codec:?}, dictionary {}, {} bytes: {:?}",
                            dict.is_some(),
                            raw.len(),
                            header.form
                        );
                    }
                    forms.push((codec, dict.is_some(), parse_header(&expected).unwrap().form));
                }
            }
        }
        // The table reaches each way a candidate can end: raw winning, the first candidate
        // winning, and (lz4 with a dictionary) the plain form beating the dictionary form
        // written before it.
        let extended = |codec| Form::Extended {
            codec,
            dict_id: 300,
        };
        for reached in [
            (Codec::Lz4, false, Form::RawLong),
            (Codec::Lz4, false, Form::Lz4),
            (Codec::Lz4, true, Form::Lz4),
            (Codec::Lz4, true, extended(Codec::Lz4)),
            (Codec::Lz4, true, Form::RawLong),
            (Codec::Zstd, true, extended(Codec::Zstd)),
            (Codec::Zstd, true, Form::RawLong),
        ] {
            assert!(forms.contains(&reached), "no input gives {reached:?}");
        }
    }

    /// pglz's own `result_max` arithmetic (`pglz::compress`), to check `strategy_within`.
    fn result_max(raw_len: usize, rate: i32) -> i64 {
        let slen = raw_len as i64;
        let rate = i64::from(rate.clamp(0, 99));
        if slen > i64::from(i32::MAX / 100) {
            (slen / 100) * (100 - rate)
        } else {
            (slen * (100 - rate)) / 100
        }
    }

    #[test]
    fn strategy_within_accepts_every_winner_and_gives_up_as_early_as_it_can() {
        let lens = (0..300).chain([
            1000,
            4096,
            21_474_836,
            21_474_837,
            // Past 21,474,836 bytes, the first rate worked out can be one too high (its
            // result_max at or under max_payload): rate 50 for this one, which the step down
            // corrects to 49.
            21_474_899,
            100_000_000,
            MAX_INPUT_LEN,
        ]);
        for raw_len in lens {
            for max_payload in [
                1,
                2,
                raw_len / 3,
                raw_len / 2,
                (raw_len / 2).saturating_sub(1),
                raw_len.saturating_sub(10),
            ] {
                for base in [Strategy::DEFAULT, Strategy::DICTIONARY] {
                    let s = strategy_within(&base, raw_len, max_payload);
                    let rate = s.min_comp_rate;
                    assert_eq!(
                        Strategy {
                            min_comp_rate: base.min_comp_rate,
                            ..s
                        },
                        base
                    );
                    assert!(rate >= base.min_comp_rate && rate <= 99);
                    if rate > base.min_comp_rate {
                        // Raised: a payload of max_payload bytes is still accepted...
                        assert!(
                            result_max(raw_len, rate) > max_payload as i64,
                            "{raw_len} {max_payload}"
                        );
                        // ...and one rate more would refuse it.
                        if rate < 99 {
                            assert!(result_max(raw_len, rate + 1) <= max_payload as i64);
                        }
                    }
                }
            }
        }
    }

    /// The largest input is taken, its raw form filling the largest header exactly, and one
    /// byte more is refused.
    #[test]
    fn the_input_length_limit_is_exact() {
        assert_eq!(check_input_len(MAX_INPUT_LEN), Ok(()));
        assert_eq!(
            check_input_len(MAX_INPUT_LEN + 1),
            Err(DatumError::InputTooLarge {
                len: MAX_INPUT_LEN + 1,
                max: MAX_INPUT_LEN
            })
        );
        assert_eq!(
            raw_datum_len(MAX_INPUT_LEN),
            (MAX_RAW_LEN, RAW_LONG_HEADER_LEN)
        );
    }

    /// A zstd payload of n bytes is taken to hold at most n / 3 blocks, rounded up, of at most
    /// `MAX_BLOCK_CONTENT` bytes each: a raw length of exactly that passes, one byte more does
    /// not. The payload lengths tell rounding up from rounding down and a divisor of 3 from 2
    /// or 4.
    #[test]
    fn the_zstd_expansion_bound_is_exact() {
        let block = zstd::MAX_BLOCK_CONTENT;
        for (payload_len, blocks) in [(1, 1), (3, 1), (4, 2), (6, 2), (7, 3)] {
            let most = blocks * block;
            assert_eq!(check_expansion(Codec::Zstd, most, payload_len), Ok(()));
            assert_eq!(
                check_expansion(Codec::Zstd, most + 1, payload_len),
                Err(DatumError::RawLenImpossible {
                    codec: Codec::Zstd,
                    raw_len: most + 1,
                    payload_len,
                    max_possible: most,
                }),
                "{payload_len}-byte payload"
            );
        }
    }

    #[test]
    fn dict_id_varint_lengths() {
        for id in [
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            0x1f_ffff,
            0x20_0000,
            0x0fff_ffff,
            0x1000_0000,
            u32::MAX,
        ] {
            let mut bytes = [0xff; DICT_ID_POS + MAX_DICT_ID_BYTES];
            let len = put_dict_id(id, &mut bytes[DICT_ID_POS..]);
            assert_eq!(len, dict_id_len(id), "{id}");
            assert_eq!(read_dict_id(&bytes), Ok((id, len)), "{id}");
        }
    }

    proptest::proptest! {
        // Each case takes microseconds; the boundary cases (a short raw header's low bits,
        // ids 0 and 0x80) need a few thousand to come up.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8192))]

        /// The decoder's fast path reads a header exactly as `parse_header` does, and takes
        /// every datum of its form: extended pglz headers with fields a little off (flipped
        /// header bytes, a `total_len` a little off the datum's length, every id byte) are
        /// checked both ways.
        #[test]
        fn fast_header_path_reads_what_parse_header_reads(
            raw_len in 0u32..(1 << 30),
            id_byte in proptest::prop_oneof![
                proptest::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xff]),
                1u8..0x80,
                proptest::num::u8::ANY,
            ],
            payload_len in 0usize..24,
            flips in proptest::collection::vec(
                (
                    0..DICT_ID_POS + 1,
                    proptest::prop_oneof![1u8..4, proptest::num::u8::ANY],
                ),
                0..3,
            ),
            total_len_off in proptest::prop_oneof![proptest::strategy::Just(0), -2i64..=2],
        ) {
            let len = DICT_ID_POS + 1 + payload_len;
            let total_len = (len as i64 + total_len_off).max(0) as u32;
            let mut datum = vec![0x55; len];
            datum[..4].copy_from_slice(&((total_len << 2) | 0b10).to_le_bytes());
            let tcinfo = raw_len | (METHOD_EXTENDED << METHOD_SHIFT);
            datum[4..8].copy_from_slice(&tcinfo.to_le_bytes());
            datum[CODEC_POS] = Codec::Pglz.code();
            datum[DICT_ID_POS] = id_byte;
            for (pos, xor) in flips {
                datum[pos] ^= xor;
            }
            let general = parse_header(&datum);
            match extended_pglz_short_id(&datum) {
                Some((dict_id, header)) => {
                    proptest::prop_assert_eq!(general, Ok(header));
                    proptest::prop_assert_eq!(header.form.dict_id(), Some(dict_id));
                }
                None => proptest::prop_assert!(
                    !matches!(
                        general,
                        Ok(Header {
                            form: Form::Extended { codec: Codec::Pglz, dict_id },
                            ..
                        }) if dict_id < 0x80
                    ),
                    "the fast path missed {:?}",
                    general
                ),
            }
        }
    }
}
