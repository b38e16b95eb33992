//! zstd with prepared dictionaries, in headerless (magicless) frames.
//!
//! # Payload format
//!
//! A zstd payload is one zstd frame in the **magicless** format (`ZSTD_f_zstd1_magicless`: a
//! standard frame without its 4-byte magic number) whose header records **no dictionary id, no
//! content size and no checksum**: the datum header already holds the raw length and the
//! dictionary id (`DESIGN.md`, "Datum format"). What is left of the frame header is 2 bytes
//! (frame header descriptor, window descriptor), then the blocks, each with a 3-byte block
//! header. The frames are made with these compression parameters:
//!
//! | parameter                | value                         | why                          |
//! |--------------------------|-------------------------------|------------------------------|
//! | `ZSTD_c_format`          | `ZSTD_f_zstd1_magicless`      | the datum header says "zstd" |
//! | `ZSTD_c_dictIDFlag`      | 0                             | the datum header has the id  |
//! | `ZSTD_c_contentSizeFlag` | 0                             | the datum header has raw_len |
//! | `ZSTD_c_checksumFlag`    | 0                             | PostgreSQL checksums pages   |
//! | `ZSTD_c_compressionLevel`| [`DEFAULT_LEVEL`] (3) or set  |                              |
//!
//! and decoded with `ZSTD_d_format = ZSTD_f_zstd1_magicless`. The format parameter needs the
//! `zstd` crate's `experimental` feature (zstd's static-linking-only API).
//!
//! # Dictionaries
//!
//! A [`ZstdDictionary`] is prepared once per dictionary: a digested compression dictionary
//! (`ZSTD_CDict`, built for one compression level) and a digested decompression dictionary
//! (`ZSTD_DDict`), both shared read-only between threads. Bytes that start with zstd's
//! dictionary magic number (`0xEC30A437`, as the ZDICT/COVER trainer writes) are read as a
//! zstd-format dictionary with entropy tables; any other bytes as raw content that logically
//! precedes the datum. A dictionary of 0 bytes means no dictionary.
//!
//! Per thread, a [`ZstdCompressor`] keeps one compression context (`ZSTD_CCtx`) and references
//! a dictionary for one call at a time; a [`ZstdDecompressor`] keeps one decompression context.
//! The free functions ([`compress`], [`decompress`], ...) create a context per call: fine for
//! tools and tests, wasteful per datum (creating a decompression context costs about 15 us,
//! more than decoding most of the corpus rows).
//!
//! # Limits and errors
//!
//! A datum's raw length is below 2^30 ([`MAX_RAW_LEN`]). Decoders reject a larger `raw_len`
//! before allocating. A whole frame is decoded into a buffer of `raw_len` bytes and
//! [`OUTPUT_ROOM`] to spare and must produce exactly `raw_len` bytes: one that runs on into the
//! room is [`Error::TooLong`], as one that overruns it. The `_into` forms reuse the caller's
//! vector and hand zstd exactly that much of it, so they decide as a fresh decode does, errors
//! included. The prefix of a datum of up to [`PREFIX_WHOLE_MAX`] bytes (one zstd block) is cut
//! from a whole decode; a longer datum's prefix is streamed into a buffer of exactly its
//! length, stopping after it, in a context of its own whose window buffer is limited to what a
//! frame of `raw_len` bytes with this dictionary can need
//! ([`ZstdDecompressor::decompress_prefix_with_dict`]).

use std::fmt;
use std::io::Cursor;

use ::zstd::dict::{DecoderDictionary, EncoderDictionary};
use ::zstd::zstd_safe::{
    self, zstd_sys::ZSTD_ErrorCode, CCtx, CDict, CParameter, DCtx, DParameter, ErrorCode,
    FrameFormat, InBuffer, OutBuffer, ResetDirective, WriteBuf,
};

/// The largest raw length a datum can have: the varlena header keeps it in 30 bits.
pub const MAX_RAW_LEN: usize = (1 << 30) - 1;

/// Bytes of room a whole-frame decode gets beyond `raw_len`. zstd copies a sequence with
/// wide unchecked writes only when the sequence ends at least 32 bytes (its
/// `WILDCOPY_OVERLENGTH`) before the end of the output buffer, and sends the others down a
/// slower checked path (`ZSTD_execSequenceEnd`); with 32 bytes to spare, none of a frame that
/// ends at `raw_len` takes it. Measured side by side on every even row's dictionary frame
/// (docs/performance-history.md, "zstd: the dictionary's format"): 1.04-1.13x on six of the
/// eight corpus sets, level on the other two (GSoC projects, Debian packages).
pub const OUTPUT_ROOM: usize = 32;

/// The compression level used unless one is given: zstd's own default.
pub const DEFAULT_LEVEL: i32 = 3;

/// The largest window a frame may ask of a decoder: zstd's `ZSTD_WINDOWLOG_MAX`.
const WINDOW_LOG_MAX: u32 = if usize::BITS == 32 { 30 } else { 31 };

/// The smallest window zstd uses: `ZSTD_WINDOWLOG_ABSOLUTEMIN`.
const WINDOW_LOG_MIN: u32 = 10;

/// What went wrong in a zstd call. Variants carry the numbers needed to debug corrupt input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller-given raw length is over [`MAX_RAW_LEN`]; nothing was allocated.
    #[error("zstd: raw length {raw_len} is over the limit of {max} bytes")]
    RawLenTooLarge {
        /// The raw length asked for.
        raw_len: usize,
        /// [`MAX_RAW_LEN`].
        max: usize,
    },
    /// The input to compress is over [`MAX_RAW_LEN`] bytes: no datum can hold it.
    #[error("zstd: input of {len} bytes is over the limit of {max} bytes")]
    InputTooLarge {
        /// The input's length.
        len: usize,
        /// [`MAX_RAW_LEN`].
        max: usize,
    },
    /// The compression level is outside zstd's range.
    #[error("zstd: compression level {level} is outside {min}..={max}")]
    Level {
        /// The level asked for.
        level: i32,
        /// zstd's lowest (fastest) level.
        min: i32,
        /// zstd's highest level.
        max: i32,
    },
    /// zstd refused the dictionary: it starts with zstd's dictionary magic number but is not a
    /// valid zstd-format dictionary (or memory ran out).
    #[error("zstd: cannot load the dictionary of {len} bytes (a zstd-format dictionary with an invalid header?)")]
    Dictionary {
        /// The dictionary's length.
        len: usize,
    },
    /// zstd could not create a context (out of memory).
    #[error("zstd: cannot create a {what} context")]
    Context {
        /// "compression" or "decompression".
        what: &'static str,
    },
    /// zstd failed to compress, or refused a parameter.
    #[error("zstd: compression of {input_len} bytes failed: {name} (zstd error {code})")]
    Compress {
        /// zstd's error number (`ZSTD_ErrorCode`).
        code: usize,
        /// zstd's name for it.
        name: &'static str,
        /// The input's length.
        input_len: usize,
    },
    /// Bytes follow the payload's frame (a datum's payload is exactly one frame).
    #[error("zstd: {payload_len}-byte payload has bytes after its {frame_len}-byte frame")]
    TrailingBytes {
        /// Length of the frame at the start of the payload.
        frame_len: usize,
        /// Length of the payload.
        payload_len: usize,
    },
    /// The payload is empty: a frame has at least a header.
    #[error("zstd: empty payload")]
    EmptyPayload,
    /// A block of the payload's frame is larger than a block may be (128 KiB, zstd's
    /// `Block_Maximum_Size` at most): libzstd's one-shot decoder takes such a raw or RLE block
    /// while its streaming decoder (the prefix decode) refuses it, so both refuse it here
    /// (found by fuzzing, `tests/fuzz_regressions.rs`).
    #[error("zstd: a block of the payload's frame holds {size} bytes, over the {max}-byte limit")]
    BlockTooLarge {
        /// The block's size (its header's Block_Size).
        size: usize,
        /// [`MAX_BLOCK_CONTENT`].
        max: usize,
    },
    /// The raw length is more than the payload's frame can produce, by its block headers
    /// (refused before any output is allocated).
    #[error(
        "zstd: raw length {raw_len} is more than the {payload_len}-byte payload's blocks can \
         produce (at most {max_content})"
    )]
    RawLenOverFrame {
        /// The raw length asked for.
        raw_len: usize,
        /// Length of the payload.
        payload_len: usize,
        /// The most the frame's blocks can produce.
        max_content: usize,
    },
    /// The payload's frame cannot be walked by its headers (a block header cut off, a block
    /// running past the payload's end, the reserved block type): a whole decode refuses it
    /// before allocating the raw length, which the blocks would otherwise not bound.
    #[error(
        "zstd: corrupt payload of {payload_len} bytes: its frame's block headers are cut off \
         or malformed"
    )]
    MalformedFrame {
        /// Length of the payload.
        payload_len: usize,
    },
    /// zstd found the payload malformed (or made with another dictionary).
    #[error("zstd: corrupt payload of {payload_len} bytes: {name} (zstd error {code})")]
    Corrupt {
        /// zstd's error number (`ZSTD_ErrorCode`).
        code: usize,
        /// zstd's name for it.
        name: &'static str,
        /// The payload's length.
        payload_len: usize,
    },
    /// The payload decodes to more than the header's raw length.
    #[error("zstd: payload decodes to more than the expected {expected} bytes")]
    TooLong {
        /// The raw length from the datum header.
        expected: usize,
    },
    /// The payload decodes to fewer bytes than the header's raw length.
    #[error("zstd: payload decodes to {produced} bytes, expected {expected}")]
    LengthMismatch {
        /// The raw length from the datum header.
        expected: usize,
        /// What the frame decoded to.
        produced: usize,
    },
    /// A prefix decode ended (end of frame or of payload) before the requested number of bytes.
    #[error("zstd: payload ends after {produced} bytes, before the {wanted} requested (raw length {raw_len})")]
    PrefixShort {
        /// The prefix length asked for (at most `raw_len`).
        wanted: usize,
        /// What the frame decoded to.
        produced: usize,
        /// The raw length from the datum header.
        raw_len: usize,
    },
    /// An output buffer could not be allocated.
    #[error("zstd: cannot allocate {bytes} bytes")]
    OutOfMemory {
        /// The allocation size asked for.
        bytes: usize,
    },
}

/// zstd's error number for a failed call's return code (`ZSTD_getErrorCode`).
fn error_number(code: ErrorCode) -> usize {
    code.wrapping_neg()
}

fn compress_error(code: ErrorCode, input_len: usize) -> Error {
    Error::Compress {
        code: error_number(code),
        name: zstd_safe::get_error_name(code),
        input_len,
    }
}

fn corrupt(code: ErrorCode, payload_len: usize) -> Error {
    Error::Corrupt {
        code: error_number(code),
        name: zstd_safe::get_error_name(code),
        payload_len,
    }
}

fn check_level(level: i32) -> Result<(), Error> {
    let range = ::zstd::compression_level_range();
    if !range.contains(&level) {
        return Err(Error::Level {
            level,
            min: *range.start(),
            max: *range.end(),
        });
    }
    Ok(())
}

fn check_input(input: &[u8]) -> Result<(), Error> {
    if input.len() > MAX_RAW_LEN {
        return Err(Error::InputTooLarge {
            len: input.len(),
            max: MAX_RAW_LEN,
        });
    }
    Ok(())
}

/// Checks what every decode checks first: the raw length within [`MAX_RAW_LEN`], a payload,
/// and no bytes after its frame.
fn check_payload(payload: &[u8], raw_len: usize) -> Result<(), Error> {
    check_frame(payload, raw_len).map(|_| ())
}

/// [`check_payload`] for a whole decode, which allocates the raw length: that length must
/// also be one the frame's blocks can produce. (A prefix decode streams only the bytes asked
/// for, and gives them even when the frame is shorter than the header says, as PostgreSQL's
/// slicing does.)
fn check_whole_payload(payload: &[u8], raw_len: usize) -> Result<(), Error> {
    // A header's claim is checked against what the blocks can make before the output is
    // allocated (and, for the decoder into a buffer, zeroed): 37 KB of hostile payload
    // claiming 1 GiB made it commit 1 GiB before zstd found the frame short. A frame that
    // cannot be walked bounds nothing, and zstd would refuse it anyway: it is refused first
    // (24 KB with a reserved block type committed 1 GiB the same way).
    let frame = check_frame(payload, raw_len)?.ok_or(Error::MalformedFrame {
        payload_len: payload.len(),
    })?;
    if raw_len > frame.max_content {
        return Err(Error::RawLenOverFrame {
            raw_len,
            payload_len: payload.len(),
            max_content: frame.max_content,
        });
    }
    Ok(())
}

/// [`check_payload`], giving the frame's extent where its headers are whole.
fn check_frame(payload: &[u8], raw_len: usize) -> Result<Option<FrameExtent>, Error> {
    if raw_len > MAX_RAW_LEN {
        return Err(Error::RawLenTooLarge {
            raw_len,
            max: MAX_RAW_LEN,
        });
    }
    if payload.is_empty() {
        return Err(Error::EmptyPayload);
    }
    let frame = magicless_frame(payload);
    if let Some(frame) = frame {
        if frame.len < payload.len() {
            return Err(Error::TrailingBytes {
                frame_len: frame.len,
                payload_len: payload.len(),
            });
        }
        if frame.largest_block > MAX_BLOCK_CONTENT {
            return Err(Error::BlockTooLarge {
                size: frame.largest_block,
                max: MAX_BLOCK_CONTENT,
            });
        }
    }
    Ok(frame)
}

/// A magicless frame's extent, from its headers ([`magicless_frame`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FrameExtent {
    /// Bytes of the frame, checksum included.
    len: usize,
    /// The most its blocks can produce: a raw block its size, an RLE block the size it
    /// repeats its byte to, a compressed block at most 128 KiB (zstd's block maximum).
    max_content: usize,
    /// The largest Block_Size of its block headers.
    largest_block: usize,
}

/// The largest a block may be, and a compressed block decode to (zstd's `Block_Maximum_Size`
/// is at most this).
pub const MAX_BLOCK_CONTENT: usize = 128 * 1024;

/// The length of the magicless frame at the start of `payload`, found by walking its header
/// and block headers, or `None` if they are cut short or malformed (a whole decode refuses
/// those as [`Error::MalformedFrame`]; a prefix decode leaves them to zstd).
///
/// A datum's payload is one frame; zstd's one-shot decoder would go on to decode a second
/// frame after it, and its streaming decoder (the prefix decode) would not, so a payload
/// with bytes after its frame is refused by both (found by fuzzing,
/// `tests/fuzz_regressions.rs`). The layout, from the zstd format: a frame header descriptor
/// byte (content-size field size in bits 7-6, single segment in bit 5, checksum in bit 2,
/// dictionary-id field size in bits 1-0), a window byte unless single segment, the dictionary
/// id (0, 1, 2 or 4 bytes), the content size (0 or 1 when single segment, 2, 4 or 8 bytes);
/// then blocks, each a 3-byte little-endian header (last-block bit 0, type in bits 1-2, size
/// in bits 3-23) and its content (size bytes; 1 byte for an RLE block); then a 4-byte
/// checksum if the frame has one.
fn magicless_frame(payload: &[u8]) -> Option<FrameExtent> {
    let descriptor = *payload.first()?;
    let single_segment = descriptor & 0x20 != 0;
    let dict_id_len = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let content_size_len = match descriptor >> 6 {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut pos = 1 + usize::from(!single_segment) + dict_id_len + content_size_len;
    let mut max_content = 0usize;
    let mut largest_block = 0;
    loop {
        let header = payload.get(pos..pos + 3)?;
        let header = u32::from(header[0]) | u32::from(header[1]) << 8 | u32::from(header[2]) << 16;
        let last = header & 1 != 0;
        let size = (header >> 3) as usize;
        let (stored, content) = match (header >> 1) & 3 {
            0 => (size, size),
            1 => (1, size),
            2 => (size, MAX_BLOCK_CONTENT),
            _ => return None,
        };
        pos += 3 + stored;
        max_content = max_content.saturating_add(content);
        largest_block = largest_block.max(size);
        if last {
            break;
        }
    }
    pos += if descriptor & 0x04 != 0 { 4 } else { 0 };
    (pos <= payload.len()).then_some(FrameExtent {
        len: pos,
        max_content,
        largest_block,
    })
}

/// An empty vector with room for exactly `len` bytes, or an error instead of an abort.
fn alloc_output(len: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { bytes: len })?;
    Ok(out)
}

/// A zstd dictionary, prepared once for compression (at one level) and for decompression.
///
/// `Send + Sync`: zstd never modifies a `ZSTD_CDict` or `ZSTD_DDict` after creating it, and
/// documents both as shareable between threads. One per dictionary, shared; each thread uses
/// its own [`ZstdCompressor`] and [`ZstdDecompressor`].
pub struct ZstdDictionary {
    /// `None` for the empty dictionary (no dictionary).
    prepared: Option<Prepared>,
    /// Length of the bytes it was built from.
    len: usize,
    /// The level its compression side was built for.
    level: i32,
}

struct Prepared {
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

const _: () = crate::assert_send_sync::<ZstdDictionary>();

impl ZstdDictionary {
    /// Prepares a dictionary for compression at [`DEFAULT_LEVEL`] and for decompression.
    pub fn new(dict: &[u8]) -> Result<ZstdDictionary, Error> {
        ZstdDictionary::with_level(dict, DEFAULT_LEVEL)
    }

    /// Prepares a dictionary for compression at `level` and for decompression. The bytes are
    /// copied (digested) into zstd's structures; the caller may drop them.
    pub fn with_level(dict: &[u8], level: i32) -> Result<ZstdDictionary, Error> {
        check_level(level)?;
        let prepared = if dict.is_empty() {
            None
        } else {
            let failed = |_| Error::Dictionary { len: dict.len() };
            Some(Prepared {
                encoder: EncoderDictionary::try_copy(dict, level).map_err(failed)?,
                decoder: DecoderDictionary::try_copy(dict).map_err(failed)?,
            })
        };
        Ok(ZstdDictionary {
            prepared,
            len: dict.len(),
            level,
        })
    }

    /// Length of the bytes the dictionary was built from.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the dictionary is empty (no dictionary).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The compression level the dictionary was prepared for; compressing with it uses this
    /// level (zstd takes the level from a referenced `ZSTD_CDict`).
    pub fn level(&self) -> i32 {
        self.level
    }

    fn cdict(&self) -> Option<&CDict<'static>> {
        self.prepared.as_ref().map(|p| p.encoder.as_cdict())
    }
}

impl fmt::Debug for ZstdDictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZstdDictionary")
            .field("len", &self.len)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

/// A reusable zstd compressor: one compression context, reused for every datum (zstd then
/// allocates nothing per call once its workspace has grown). One per thread; it works with any
/// number of dictionaries.
pub struct ZstdCompressor {
    /// The context. Between calls it holds no parameters and no dictionary: each call sets
    /// them and [`Session`] resets them when the call ends.
    cctx: CCtx<'static>,
    /// Level for compression without a dictionary.
    level: i32,
}

/// One compression call's use of a context: resets session and parameters on drop, which also
/// drops the context's reference to the call's dictionary (`ZSTD_clearAllDicts`).
struct Session<'c> {
    cctx: &'c mut CCtx<'static>,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        // Cannot fail when the session is reset with the parameters (zstd allows a parameter
        // reset once no frame is in progress, and the session reset ends any frame); if it
        // somehow did, the next call resets again before referencing anything.
        let _ = self.cctx.reset(ResetDirective::SessionAndParameters);
    }
}

impl ZstdCompressor {
    /// A compressor at [`DEFAULT_LEVEL`].
    pub fn new() -> Result<ZstdCompressor, Error> {
        ZstdCompressor::with_level(DEFAULT_LEVEL)
    }

    /// A compressor at `level` (for compression without a dictionary; a dictionary brings its
    /// own level, see [`ZstdDictionary::with_level`]).
    pub fn with_level(level: i32) -> Result<ZstdCompressor, Error> {
        check_level(level)?;
        let cctx = CCtx::try_create().ok_or(Error::Context {
            what: "compression",
        })?;
        Ok(ZstdCompressor { cctx, level })
    }

    /// The level used without a dictionary.
    pub fn level(&self) -> i32 {
        self.level
    }

    /// Compresses `input` into one magicless frame, without a dictionary.
    pub fn compress(&mut self, input: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.compress_into(input, &mut out)?;
        Ok(out)
    }

    /// [`ZstdCompressor::compress`], appending the frame to `out` (whose contents are kept, so
    /// a datum header can be written first) and returning the frame's length.
    pub fn compress_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        let level = self.level;
        self.compress_impl(input, None, level, out)
    }

    /// Compresses `input` with `dict` at the dictionary's level. The empty dictionary means no
    /// dictionary (at the dictionary's level).
    pub fn compress_with_dict(
        &mut self,
        input: &[u8],
        dict: &ZstdDictionary,
    ) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.compress_with_dict_into(input, dict, &mut out)?;
        Ok(out)
    }

    /// [`ZstdCompressor::compress_with_dict`], appending the frame to `out` and returning its
    /// length.
    pub fn compress_with_dict_into(
        &mut self,
        input: &[u8],
        dict: &ZstdDictionary,
        out: &mut Vec<u8>,
    ) -> Result<usize, Error> {
        self.compress_impl(input, dict.cdict(), dict.level, out)
    }

    fn compress_impl(
        &mut self,
        input: &[u8],
        cdict: Option<&CDict<'static>>,
        level: i32,
        out: &mut Vec<u8>,
    ) -> Result<usize, Error> {
        check_input(input)?;
        let input_len = input.len();
        let fail = |code| compress_error(code, input_len);
        let bound = zstd_safe::compress_bound(input_len);
        out.try_reserve(bound)
            .map_err(|_| Error::OutOfMemory { bytes: bound })?;

        let session = Session {
            cctx: &mut self.cctx,
        };
        let cctx = &mut *session.cctx;
        // Start from a clean context whatever a previous call left.
        cctx.reset(ResetDirective::SessionAndParameters)
            .map_err(fail)?;
        for param in [
            CParameter::Format(FrameFormat::Magicless),
            CParameter::DictIdFlag(false),
            CParameter::ContentSizeFlag(false),
            CParameter::ChecksumFlag(false),
            CParameter::CompressionLevel(level),
        ] {
            cctx.set_parameter(param).map_err(fail)?;
        }
        if let Some(cdict) = cdict {
            // SAFETY: this only widens the borrow's lifetime to the `'static` the stored context
            // type asks for; the `CDict<'static>` itself owns its data. The context keeps the
            // pointer until its dictionaries are cleared, and only compression calls on it
            // dereference it. Those run within this function, while `cdict` is borrowed; when
            // `session` drops (at return, or on unwind), the context is reset with its
            // parameters, which clears the reference, and every call resets it again before
            // use. Dropping a context does not touch a referenced `CDict`.
            let cdict: &'static CDict<'static> = unsafe { &*(cdict as *const CDict<'static>) };
            cctx.ref_cdict(cdict).map_err(fail)?;
        }
        let start = out.len();
        let mut cursor = Cursor::new(&mut *out);
        cursor.set_position(start as u64);
        let written = cctx.compress2(&mut cursor, input).map_err(fail)?;
        drop(session);
        debug_assert_eq!(out.len(), start + written);
        Ok(written)
    }
}

impl fmt::Debug for ZstdCompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZstdCompressor")
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

/// A reusable zstd decompressor: one decompression context set to the magicless format.
pub struct ZstdDecompressor {
    /// Never references a dictionary: dictionaries are passed per call.
    dctx: DCtx<'static>,
}

/// Datums of up to this many raw bytes (zstd's largest block, `ZSTD_BLOCKSIZE_MAX`) have their
/// prefixes cut from a whole decode; longer ones are streamed. pgdict's frames of up to this
/// size are one block, which zstd's streaming decoder decodes whole before handing out its
/// first byte, so streaming saves nothing there. It needs a context with a window buffer:
/// creating one per call cost about 15 us, 5-71x a whole decode of a corpus row, and a kept
/// one sizes its buffer by what it decoded before, which changed the outcome for a corrupt
/// frame (found by fuzzing: `tests/fuzz_regressions.rs`; docs/performance-history.md, the
/// zstd section).
pub const PREFIX_WHOLE_MAX: usize = 128 * 1024;

/// A decompression context for magicless frames.
fn magicless_dctx<'a>() -> Result<DCtx<'a>, Error> {
    let mut dctx = DCtx::try_create().ok_or(Error::Context {
        what: "decompression",
    })?;
    dctx.set_parameter(DParameter::Format(FrameFormat::Magicless))
        .map_err(|code| corrupt(code, 0))?;
    Ok(dctx)
}

/// The largest window log a frame of `raw_len` bytes compressed with a dictionary of
/// `dict_len` bytes can declare, with one step to spare: zstd shrinks the window of a
/// compression whose size it knows to `ceil(log2(raw_len + dict_len))`, at least 2^10.
fn window_log_limit(raw_len: usize, dict_len: usize) -> u32 {
    let total = raw_len.saturating_add(dict_len).max(1);
    let ceil_log2 = usize::BITS - (total - 1).leading_zeros();
    (ceil_log2 + 1).clamp(WINDOW_LOG_MIN, WINDOW_LOG_MAX)
}

impl ZstdDecompressor {
    /// A decompressor for magicless frames.
    pub fn new() -> Result<ZstdDecompressor, Error> {
        Ok(ZstdDecompressor {
            dctx: magicless_dctx()?,
        })
    }

    /// Decompresses a whole frame made without a dictionary; it must decode to exactly
    /// `raw_len` bytes.
    pub fn decompress(&mut self, payload: &[u8], raw_len: usize) -> Result<Vec<u8>, Error> {
        self.decompress_impl(payload, raw_len, None)
    }

    /// Decompresses a whole frame made with `dict`; it must decode to exactly `raw_len` bytes.
    pub fn decompress_with_dict(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        dict: &ZstdDictionary,
    ) -> Result<Vec<u8>, Error> {
        self.decompress_impl(payload, raw_len, Some(dict))
    }

    /// [`Self::decompress`] into `out`, replacing its contents and reusing its allocation
    /// (see [`Self::decompress_with_dict_into`]). On error `out` is left empty.
    pub fn decompress_into(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        self.decompress_into_impl(payload, raw_len, None, out)
    }

    /// [`Self::decompress_with_dict`] into `out`, replacing its contents and reusing its
    /// allocation: for a caller decoding many small frames (the datum decoder), one allocation
    /// instead of one per frame. Gives what a fresh decode gives, errors included: zstd sees
    /// exactly `raw_len` + [`OUTPUT_ROOM`] bytes of `out`, whatever its capacity. On error
    /// `out` is left empty.
    pub fn decompress_with_dict_into(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        dict: &ZstdDictionary,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        self.decompress_into_impl(payload, raw_len, Some(dict), out)
    }

    fn decompress_impl(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        dict: Option<&ZstdDictionary>,
    ) -> Result<Vec<u8>, Error> {
        check_whole_payload(payload, raw_len)?;
        self.decode_checked(payload, raw_len, dict)
    }

    /// A whole decode of a payload `check_payload` accepted, into a fresh vector with room for
    /// `raw_len + OUTPUT_ROOM` bytes, which zstd writes into uninitialised (`WriteBuf` for
    /// `Vec` hands it the spare capacity and sets the length).
    fn decode_checked(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        dict: Option<&ZstdDictionary>,
    ) -> Result<Vec<u8>, Error> {
        // raw_len <= MAX_RAW_LEN: no overflow.
        let mut out = alloc_output(raw_len + OUTPUT_ROOM)?;
        let res = self.decode_frame(&mut out, payload, dict);
        whole_frame_verdict(res, raw_len, payload.len())?;
        Ok(out)
    }

    /// Decodes into the first `raw_len + OUTPUT_ROOM` bytes of `out`, then cuts it to what zstd
    /// wrote. Giving zstd that window, not `out`'s capacity, keeps the outcome that of a fresh
    /// decode: with more room a corrupt frame can run on and fail on something other than the
    /// room's end. The window is initialised memory, so no `unsafe` is needed: a reused buffer
    /// already holds most of it, and only the part past its length is zeroed. (Timed in one
    /// process over every even row's dictionary frame, against the allocating call:
    /// 1.01-1.06x; docs/performance-history.md, the zstd section.)
    fn decompress_into_impl(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        dict: Option<&ZstdDictionary>,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let result = check_whole_payload(payload, raw_len).and_then(|()| {
            // raw_len <= MAX_RAW_LEN: no overflow.
            let room = raw_len + OUTPUT_ROOM;
            if out.len() < room {
                out.try_reserve_exact(room - out.len())
                    .map_err(|_| Error::OutOfMemory { bytes: room })?;
                out.resize(room, 0);
            }
            let res = self.decode_frame(&mut out[..room], payload, dict);
            if let Ok(produced) = res {
                // zstd wrote `produced` (<= room) bytes from the start: keep exactly those.
                out.truncate(produced);
            }
            whole_frame_verdict(res, raw_len, payload.len())
        });
        if result.is_err() {
            out.clear();
        }
        result
    }

    /// One-shot decoding of a whole frame into `dst` (no window buffer is allocated); zstd's
    /// result: the bytes produced, or its error code.
    fn decode_frame<C: WriteBuf + ?Sized>(
        &mut self,
        dst: &mut C,
        payload: &[u8],
        dict: Option<&ZstdDictionary>,
    ) -> Result<usize, ErrorCode> {
        match dict.and_then(|d| d.prepared.as_ref()) {
            Some(p) => self
                .dctx
                .decompress_using_ddict(dst, payload, p.decoder.as_ddict()),
            None => self.dctx.decompress(dst, payload),
        }
    }

    /// Decompresses the first `prefix_len` bytes (capped at `raw_len`) of a frame made without
    /// a dictionary. See [`ZstdDecompressor::decompress_prefix_with_dict`].
    pub fn decompress_prefix(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        prefix_len: usize,
    ) -> Result<Vec<u8>, Error> {
        decompress_prefix_impl(Some(self), payload, raw_len, prefix_len, None)
    }

    /// Decompresses the first `prefix_len` bytes (capped at `raw_len`) of a frame made with
    /// `dict`; the result has exactly that many bytes, or the call fails.
    ///
    /// A frame of up to [`PREFIX_WHOLE_MAX`] raw bytes is decoded whole and cut, so its prefix
    /// fails wherever its whole decode fails. A longer one is streamed, stopping once the
    /// prefix is out, so corruption after it may go unnoticed; streaming needs a window
    /// buffer, and this uses a context of its own, limited to the window a frame of `raw_len`
    /// bytes with this dictionary can declare (a frame asking for more is refused), and freed
    /// when the call returns.
    pub fn decompress_prefix_with_dict(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        prefix_len: usize,
        dict: &ZstdDictionary,
    ) -> Result<Vec<u8>, Error> {
        decompress_prefix_impl(Some(self), payload, raw_len, prefix_len, Some(dict))
    }
}

/// A prefix: cut from a whole decode on `decompressor` (a new one if `None`: the free
/// functions) for a datum of up to [`PREFIX_WHOLE_MAX`] bytes, else streamed in a context of
/// its own, so a free function creates no context it does not use.
fn decompress_prefix_impl(
    decompressor: Option<&mut ZstdDecompressor>,
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
    dict: Option<&ZstdDictionary>,
) -> Result<Vec<u8>, Error> {
    check_payload(payload, raw_len)?;
    let wanted = prefix_len.min(raw_len);
    if wanted == 0 {
        return Ok(Vec::new());
    }
    if raw_len > PREFIX_WHOLE_MAX {
        return stream_prefix(payload, raw_len, wanted, dict);
    }
    let mut out = match decompressor {
        Some(d) => d.decode_checked(payload, raw_len, dict)?,
        None => ZstdDecompressor::new()?.decode_checked(payload, raw_len, dict)?,
    };
    out.truncate(wanted);
    Ok(out)
}

/// A whole-frame decode's result for a datum of `raw_len` bytes, given zstd's result with
/// `raw_len + OUTPUT_ROOM` bytes of output room.
fn whole_frame_verdict(
    res: Result<usize, ErrorCode>,
    raw_len: usize,
    payload_len: usize,
) -> Result<(), Error> {
    match res {
        Ok(produced) if produced == raw_len => Ok(()),
        // Ran on into the room: the same error as running past it.
        Ok(produced) if produced > raw_len => Err(Error::TooLong { expected: raw_len }),
        Ok(produced) => Err(Error::LengthMismatch {
            expected: raw_len,
            produced,
        }),
        Err(code)
            if zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall) =>
        {
            Err(Error::TooLong { expected: raw_len })
        }
        Err(code) => Err(corrupt(code, payload_len)),
    }
}

/// The output room a prefix decode starts with: a block's most. It grows as zstd fills it,
/// so that the room reserved follows the bytes the frame gives, not the length its header
/// claims (a 24 KB datum claiming 1 GiB reserved 1 GiB).
const PREFIX_FIRST_ROOM: usize = MAX_BLOCK_CONTENT;

/// Streams the first `wanted` (1..=`raw_len`) bytes out of a frame, in a context of its own.
fn stream_prefix(
    payload: &[u8],
    raw_len: usize,
    wanted: usize,
    dict: Option<&ZstdDictionary>,
) -> Result<Vec<u8>, Error> {
    let mut out = alloc_output(wanted.min(PREFIX_FIRST_ROOM))?;
    let prepared = dict.and_then(|d| d.prepared.as_ref());
    let dict_len = dict.map_or(0, |d| d.len);
    let bad = |code| corrupt(code, payload.len());

    // A context of its own, borrowing the dictionary for this call only: the streaming window
    // buffer it allocates is freed on return, and its size depends on this frame alone.
    let mut dctx = magicless_dctx()?;
    dctx.set_parameter(DParameter::WindowLogMax(window_log_limit(
        raw_len, dict_len,
    )))
    .map_err(bad)?;
    if let Some(p) = prepared {
        dctx.ref_ddict(p.decoder.as_ddict()).map_err(bad)?;
    }

    let mut input = InBuffer::around(payload);
    loop {
        if out.len() == out.capacity() {
            // Full, short of `wanted`: twice the room, at most `wanted`.
            let more = out.len().min(wanted - out.len());
            out.try_reserve_exact(more)
                .map_err(|_| Error::OutOfMemory {
                    bytes: out.len() + more,
                })?;
        }
        let (in_before, out_before) = (input.pos(), out.len());
        // zstd writes into the spare capacity and sets `out`'s length.
        let mut output = OutBuffer::around_pos(&mut out, out_before);
        let hint = dctx
            .decompress_stream(&mut output, &mut input)
            .map_err(bad)?;
        let produced = output.pos();
        if produced >= wanted {
            break;
        }
        // End of frame (hint 0), or no progress: the payload ran out before the prefix.
        if hint == 0 || (input.pos() == in_before && produced == out_before) {
            return Err(Error::PrefixShort {
                wanted,
                produced,
                raw_len,
            });
        }
    }
    // The allocator may have given more room than asked for.
    out.truncate(wanted);
    Ok(out)
}

impl fmt::Debug for ZstdDecompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZstdDecompressor").finish_non_exhaustive()
    }
}

/// Compresses `input` into one magicless frame at [`DEFAULT_LEVEL`], without a dictionary
/// (creates a context per call; use a [`ZstdCompressor`] per datum).
pub fn compress(input: &[u8]) -> Result<Vec<u8>, Error> {
    ZstdCompressor::new()?.compress(input)
}

/// Compresses `input` with `dict` (creates a context per call).
pub fn compress_with_dict(input: &[u8], dict: &ZstdDictionary) -> Result<Vec<u8>, Error> {
    ZstdCompressor::new()?.compress_with_dict(input, dict)
}

/// Decompresses a whole frame made without a dictionary to exactly `raw_len` bytes (creates a
/// context per call).
pub fn decompress(payload: &[u8], raw_len: usize) -> Result<Vec<u8>, Error> {
    ZstdDecompressor::new()?.decompress(payload, raw_len)
}

/// Decompresses a whole frame made with `dict` to exactly `raw_len` bytes (creates a context
/// per call).
pub fn decompress_with_dict(
    payload: &[u8],
    raw_len: usize,
    dict: &ZstdDictionary,
) -> Result<Vec<u8>, Error> {
    ZstdDecompressor::new()?.decompress_with_dict(payload, raw_len, dict)
}

/// Decompresses the first `prefix_len` bytes of a frame made without a dictionary.
pub fn decompress_prefix(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
) -> Result<Vec<u8>, Error> {
    decompress_prefix_impl(None, payload, raw_len, prefix_len, None)
}

/// Decompresses the first `prefix_len` bytes of a frame made with `dict`.
pub fn decompress_prefix_with_dict(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
    dict: &ZstdDictionary,
) -> Result<Vec<u8>, Error> {
    decompress_prefix_impl(None, payload, raw_len, prefix_len, Some(dict))
}
