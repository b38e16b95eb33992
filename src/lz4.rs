//! lz4 as PostgreSQL uses it, plus prepared dictionaries.
//!
//! # What PostgreSQL stores
//!
//! PostgreSQL 14 and later can compress TOAST values with lz4
//! (`src/backend/access/common/toast_compression.c`, `--with-lz4`). The payload after the
//! 8-byte compressed varlena header (see `datum.rs`) is one **raw lz4 block**: no lz4 frame, no
//! magic number, no length prefix; the header already holds the raw length.
//!
//! - `lz4_compress_datum` calls `LZ4_compress_default(src, dst, valsize, max_size)` with
//!   `max_size = LZ4_compressBound(valsize)`, so compression cannot fail for lack of room and
//!   runs liblz4's fastest (unbounded-output) path. It gives up (returns NULL: store raw) when
//!   the block is larger than the input (`len > valsize`); a block of the same size is kept.
//! - Its caller `toast_compress_datum` (`toast_internals.c`) then keeps the compressed form only
//!   if the whole compressed varlena is more than 2 bytes smaller than the raw bytes:
//!   `VARSIZE(tmp) < valsize - 2`, where `VARSIZE(tmp)` counts the 8 header bytes.
//!   Those decisions belong to the datum writer; this module only produces and reads payloads.
//! - `lz4_decompress_datum` uses `LZ4_decompress_safe(src, dst, srcSize, rawsize)` and then
//!   trusts the returned length; pgdict insists that it equals the header's raw length.
//! - `lz4_decompress_datum_slice` (for `substr()` and friends) uses
//!   `LZ4_decompress_safe_partial(src, dst, srcSize, slicelength, slicelength)`, which stops
//!   after `slicelength` output bytes (liblz4 >= 1.8.3; PostgreSQL falls back to a full decode
//!   before that).
//!
//! [`compress`] is byte-identical to PostgreSQL's payload: it calls `LZ4_compress_default` of
//! the liblz4 1.10 that the `lz4-sys` crate builds from source. [`decompress`] and
//! [`decompress_prefix`] are the two decoders above.
//!
//! # Dictionaries
//!
//! lz4's window is 64 KiB: a match offset is a 16-bit number, 1..=65535. A dictionary is data
//! that logically comes just before the datum, so only its last 64 KiB can ever be referenced;
//! [`Lz4Dictionary`] keeps exactly those ([`DICT_WINDOW`]).
//!
//! liblz4's own recipe for a dictionary used many times, followed here:
//!
//! - once per dictionary: `LZ4_initStream` + `LZ4_loadDict` into a *dictionary stream* (a hash
//!   table of the dictionary's positions, 16 KiB), kept in the [`Lz4Dictionary`] next to the
//!   bytes it points into;
//! - once per datum, in a reusable *working stream* ([`Lz4Compressor`], no allocation per call):
//!   `LZ4_resetStream_fast`, `LZ4_attach_dictionary(working, dictionary_stream)` (no copy: the
//!   working stream only reads the dictionary stream), then
//!   `LZ4_compress_fast_continue(working, ..., acceleration 1)`. For inputs over 4 KiB liblz4
//!   copies the dictionary's table into the working stream instead, which is faster there.
//! - decoding: `LZ4_decompress_safe_usingDict` / `LZ4_decompress_safe_partial_usingDict` with the
//!   dictionary bytes in place (no copy per datum).
//!
//! The result is still a plain lz4 block: a decoder given the same dictionary bytes as "data
//! before the output" reads it. A dictionary shorter than 8 bytes gives liblz4 nothing to hash,
//! so such a dictionary (the empty one included) compresses exactly like [`compress`], and
//! its output decodes with or without the dictionary.
//!
//! `lz4-sys` declares only part of liblz4's API; the streaming and dictionary functions are
//! declared below (signatures from liblz4 1.10's `lz4.h`). They are in the library `lz4-sys`
//! compiles.
//!
//! # Limits and errors
//!
//! A datum's raw length is below 2^30 ([`MAX_RAW_LEN`]); decoders reject a larger `raw_len`
//! before allocating anything, and never allocate more than the caller-given `raw_len` (or the
//! requested prefix length). Corrupt input gives an [`Error`] carrying liblz4's return code or
//! the lengths that disagree; liblz4's `_safe` decoders never read or write out of bounds.

use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::LazyLock;

use memchr::memmem::Finder;

/// The largest raw length a datum can have: the varlena header keeps it in 30 bits.
pub const MAX_RAW_LEN: usize = (1 << 30) - 1;

/// How many trailing dictionary bytes lz4 can reach: its window, 64 KiB.
///
/// (The largest match offset is 65535, so the very first of these bytes is reachable only by a
/// match that starts 1 byte into the datum; liblz4 itself keeps 64 KiB.)
pub const DICT_WINDOW: usize = 64 * 1024;

/// `LZ4_STREAM_MINSIZE` in liblz4 1.10's `lz4.h`: `(1 << LZ4_MEMORY_USAGE) + 32` with the
/// default `LZ4_MEMORY_USAGE` of 14 (lz4-sys does not change it). `LZ4_stream_t` is a union of
/// this many bytes with a struct holding a `u32[4096]` hash table, two pointers and three
/// `u32`s, so it is 8-byte aligned on 64-bit targets. `LZ4_initStream` checks both size and
/// alignment and returns NULL if either is wrong, which [`Lz4Stream::new`] checks.
const LZ4_STREAM_SIZE: usize = (1 << 14) + 32;

/// `LZ4_ACCELERATION_DEFAULT`: what `LZ4_compress_default` uses, and what PostgreSQL gets.
const ACCELERATION: c_int = 1;

/// Plain inputs of at least this many bytes are compressed with a freshly cleared hash table
/// ([`Lz4Compressor::compress_into`]); shorter ones reuse the table as liblz4's fast reset
/// leaves it. A cleared table costs a 16 KiB memset but lets liblz4 run its no-history loop,
/// which a reused table (positions of earlier inputs, to be skipped) does not. The cleared
/// table's speed over the reused one's, the corpus rows by size (`examples/lz4_parts.rs`, two
/// runs, against this compressor before it cleared any table): 0.70-0.76x under 128 bytes,
/// 0.93-0.94x at 128-256, 0.89-0.94x at 256-384, 0.96-1.02x at 384-512, 1.05-1.06x at
/// 512-1024, 1.09-1.14x at 1-2 KiB, 1.20-1.24x at 2-4 KiB (from 4 KiB liblz4 clears it
/// anyway). The bytes are the same either way.
const PLAIN_CLEAR_TABLE_MIN: usize = 512;

/// liblz4 functions that `lz4-sys` 1.11 does not declare. Signatures from liblz4 1.10's
/// `lz4.h`; `LZ4_stream_t*` is spelled as a pointer to [`Lz4Stream`].
mod ffi {
    use super::Lz4Stream;
    use std::os::raw::{c_char, c_int, c_void};

    extern "C" {
        /// `LZ4_stream_t* LZ4_initStream(void* stateBuffer, size_t size)`
        pub fn LZ4_initStream(state_buffer: *mut c_void, size: usize) -> *mut Lz4Stream;
        /// `void LZ4_resetStream_fast(LZ4_stream_t* streamPtr)`
        pub fn LZ4_resetStream_fast(stream: *mut Lz4Stream);
        /// `int LZ4_loadDict(LZ4_stream_t* streamPtr, const char* dictionary, int dictSize)`
        pub fn LZ4_loadDict(
            stream: *mut Lz4Stream,
            dictionary: *const c_char,
            dict_size: c_int,
        ) -> c_int;
        /// `void LZ4_attach_dictionary(LZ4_stream_t* workingStream,
        ///                             const LZ4_stream_t* dictionaryStream)`
        pub fn LZ4_attach_dictionary(working: *mut Lz4Stream, dictionary: *const Lz4Stream);
        /// `int LZ4_compress_fast_continue(LZ4_stream_t* streamPtr, const char* src, char* dst,
        ///                                 int srcSize, int dstCapacity, int acceleration)`
        pub fn LZ4_compress_fast_continue(
            stream: *mut Lz4Stream,
            src: *const c_char,
            dst: *mut c_char,
            src_size: c_int,
            dst_capacity: c_int,
            acceleration: c_int,
        ) -> c_int;
        /// `int LZ4_compress_fast_extState_fastReset(void* state, const char* src, char* dst,
        ///                                           int srcSize, int dstCapacity,
        ///                                           int acceleration)` (static-linking API)
        pub fn LZ4_compress_fast_extState_fastReset(
            state: *mut c_void,
            src: *const c_char,
            dst: *mut c_char,
            src_size: c_int,
            dst_capacity: c_int,
            acceleration: c_int,
        ) -> c_int;
        /// `int LZ4_decompress_safe_usingDict(const char* src, char* dst, int srcSize,
        ///                                    int dstCapacity, const char* dictStart,
        ///                                    int dictSize)`
        pub fn LZ4_decompress_safe_usingDict(
            src: *const c_char,
            dst: *mut c_char,
            src_size: c_int,
            dst_capacity: c_int,
            dict_start: *const c_char,
            dict_size: c_int,
        ) -> c_int;
        /// `int LZ4_decompress_safe_partial_usingDict(const char* src, char* dst,
        ///                                            int compressedSize, int targetOutputSize,
        ///                                            int maxOutputSize, const char* dictStart,
        ///                                            int dictSize)`
        pub fn LZ4_decompress_safe_partial_usingDict(
            src: *const c_char,
            dst: *mut c_char,
            compressed_size: c_int,
            target_output_size: c_int,
            max_output_size: c_int,
            dict_start: *const c_char,
            dict_size: c_int,
        ) -> c_int;
    }
}

/// What went wrong in an lz4 call. Variants carry the numbers needed to debug corrupt input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller-given raw length is over [`MAX_RAW_LEN`]; nothing was allocated.
    #[error("lz4: raw length {raw_len} is over the limit of {max} bytes")]
    RawLenTooLarge {
        /// The raw length asked for.
        raw_len: usize,
        /// [`MAX_RAW_LEN`].
        max: usize,
    },
    /// The raw length is more than the payload could expand to ([`MAX_EXPANSION`] times its
    /// length); nothing was allocated.
    #[error(
        "lz4: a {payload_len}-byte payload cannot expand to {raw_len} bytes (at most \
         {max_possible})"
    )]
    RawLenImpossible {
        /// The raw length asked for.
        raw_len: usize,
        /// The payload's length.
        payload_len: usize,
        /// [`MAX_EXPANSION`] times the payload's length.
        max_possible: usize,
    },
    /// The input to compress is over [`MAX_RAW_LEN`] bytes: no datum can hold it.
    #[error("lz4: input of {len} bytes is over the limit of {max} bytes")]
    InputTooLarge {
        /// The input's length.
        len: usize,
        /// [`MAX_RAW_LEN`].
        max: usize,
    },
    /// The payload is longer than liblz4 can take (`int` sizes).
    #[error("lz4: payload of {len} bytes is over liblz4's limit of {max} bytes")]
    PayloadTooLarge {
        /// The payload's length.
        len: usize,
        /// `i32::MAX`.
        max: usize,
    },
    /// A match with offset 0, which the block format forbids (liblz4 does not check it).
    #[error("lz4: corrupt payload (a match at byte {pos} of {payload_len} has offset 0)")]
    ZeroOffset {
        /// Payload position of the match's offset field.
        pos: usize,
        /// Length of the payload.
        payload_len: usize,
    },
    /// liblz4 found the payload malformed (a negative return code: minus the input position
    /// where decoding failed, minus one).
    #[error("lz4: corrupt payload of {payload_len} bytes (liblz4 returned {code})")]
    Corrupt {
        /// liblz4's return code (negative).
        code: i32,
        /// The payload's length.
        payload_len: usize,
    },
    /// The payload is a valid block of another length than the header's raw length.
    #[error("lz4: payload decodes to {produced} bytes, expected {expected}")]
    LengthMismatch {
        /// The raw length from the datum header.
        expected: usize,
        /// What the block decoded to.
        produced: usize,
    },
    /// A prefix decode ended before the requested number of bytes: the block is shorter than
    /// the header's raw length says.
    #[error("lz4: payload ends after {produced} bytes, before the {wanted} requested (raw length {raw_len})")]
    PrefixShort {
        /// The prefix length asked for (at most `raw_len`).
        wanted: usize,
        /// What the block decoded to.
        produced: usize,
        /// The raw length from the datum header.
        raw_len: usize,
    },
    /// liblz4 reported a compression failure (it returns 0 only when the output does not fit,
    /// which the bound makes impossible).
    #[error("lz4: compression of {input_len} bytes failed (liblz4 returned {code})")]
    CompressFailed {
        /// liblz4's return code.
        code: i32,
        /// The input's length.
        input_len: usize,
    },
    /// The output buffer could not be allocated.
    #[error("lz4: cannot allocate {bytes} bytes")]
    OutOfMemory {
        /// The allocation size asked for.
        bytes: usize,
    },
}

/// Storage for one `LZ4_stream_t`: the size and alignment liblz4 1.10 requires.
///
/// Only liblz4 reads or writes its contents; Rust sees plain bytes. Always boxed, so its
/// address is stable: the dictionary stream's address is kept in working streams.
#[repr(C, align(8))]
struct Lz4Stream([u8; LZ4_STREAM_SIZE]);

// The layout liblz4 1.10 was built for (see LZ4_STREAM_SIZE).
const _: () = assert!(
    std::mem::size_of::<Lz4Stream>() == LZ4_STREAM_SIZE && std::mem::align_of::<Lz4Stream>() == 8
);

impl Lz4Stream {
    /// A boxed, initialised (`LZ4_initStream`) stream.
    fn new() -> Box<Lz4Stream> {
        let mut stream = Box::new(Lz4Stream([0; LZ4_STREAM_SIZE]));
        let ptr: *mut Lz4Stream = &mut *stream;
        // SAFETY: `ptr` points to LZ4_STREAM_SIZE writable bytes, 8-byte aligned, owned by the
        // box; LZ4_initStream only zeroes `sizeof(LZ4_stream_t_internal)` <= that many bytes.
        let init = unsafe { ffi::LZ4_initStream(ptr.cast::<c_void>(), LZ4_STREAM_SIZE) };
        // NULL would mean a size or alignment this file got wrong for this liblz4: a build bug,
        // not an input problem, and every later call would be unsound, so stop here.
        assert_eq!(init, ptr, "LZ4_initStream refused the stream buffer");
        stream
    }
}

/// Bytes liblz4 may need to compress `len` bytes (`LZ4_COMPRESSBOUND`). `len` <= MAX_RAW_LEN.
fn compress_bound(len: usize) -> usize {
    debug_assert!(len <= MAX_RAW_LEN);
    len + len / 255 + 16
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

fn check_payload(payload: &[u8]) -> Result<c_int, Error> {
    let len = c_int::try_from(payload.len()).map_err(|_| Error::PayloadTooLarge {
        len: payload.len(),
        max: c_int::MAX as usize,
    })?;
    check_offsets(payload)?;
    Ok(len)
}

/// Rejects a block with a match of offset 0, which the lz4 block format calls invalid but
/// liblz4's decoders accept: its whole decoder then writes zeros, its partial decoder other
/// bytes, so `substr()` and a whole read of the same corrupt datum would disagree (found by
/// fuzzing, `tests/fuzz_regressions.rs`). Anything else wrong with the block (truncation,
/// offsets reaching too far) is left to liblz4.
///
/// A zero offset is two zero bytes in a row, and most blocks hold no such pair (0-15 % of the
/// corpus sets' dictionary blocks do): memchr's vectorized search rules it out first, and only
/// a block with a pair is walked ([`find_zero_offset`]). Measured in one binary over every
/// even row's stored block (docs/performance-history.md, "lz4 through the datum encoder"):
/// check and decode together 1.24-1.37x faster than walking every block with a 64 KB
/// dictionary, 0.96-1.17x without one (plain blocks of small rows are mostly literals, which
/// the walk skips in one step).
fn check_offsets(block: &[u8]) -> Result<(), Error> {
    if ZERO_PAIR.find(block).is_none() {
        return Ok(());
    }
    find_zero_offset(block)
}

/// Two zero bytes in a row: what a zero offset looks like.
static ZERO_PAIR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(&[0, 0]));

/// The walk [`check_offsets`] does when the block holds a pair of zero bytes, sequence by
/// sequence: a token (literal length in the high nibble, match length in the low), the literal
/// length's extension bytes, the literals, then the 2-byte little-endian offset and the match
/// length's extension bytes.
fn find_zero_offset(block: &[u8]) -> Result<(), Error> {
    // Reads a length that continues in extension bytes while they are 255.
    fn extended(block: &[u8], pos: &mut usize, nibble: usize) -> usize {
        let mut len = nibble;
        if nibble == 15 {
            while let Some(&byte) = block.get(*pos) {
                *pos += 1;
                len += usize::from(byte);
                if byte != 255 {
                    break;
                }
            }
        }
        len
    }
    let mut pos = 0;
    while let Some(&token) = block.get(pos) {
        pos += 1;
        let literals = extended(block, &mut pos, usize::from(token >> 4));
        pos = pos.saturating_add(literals);
        let Some(&[low, high]) = block.get(pos..pos.saturating_add(2)) else {
            // The last sequence has literals only (or the block is cut short).
            return Ok(());
        };
        if low == 0 && high == 0 {
            return Err(Error::ZeroOffset {
                pos,
                payload_len: block.len(),
            });
        }
        pos += 2;
        extended(block, &mut pos, usize::from(token & 15));
    }
    Ok(())
}

/// The most raw bytes one byte of an lz4 block can stand for: each extra match-length byte
/// (255) adds 255 bytes of output, the first bytes of a sequence give less, and nothing more,
/// rounded up. The datum decoder checks a header's raw length against it too.
pub const MAX_EXPANSION: usize = 256;

/// Refuses a raw length `payload` cannot expand to, before any output is allocated (and
/// zeroed): a 1-byte payload claiming 1 GiB would have it committed.
fn check_expansion(payload: &[u8], raw_len: usize) -> Result<(), Error> {
    let max_possible = payload.len().saturating_mul(MAX_EXPANSION);
    if raw_len > max_possible {
        return Err(Error::RawLenImpossible {
            raw_len,
            payload_len: payload.len(),
            max_possible,
        });
    }
    Ok(())
}

fn check_raw_len(raw_len: usize) -> Result<(), Error> {
    if raw_len > MAX_RAW_LEN {
        return Err(Error::RawLenTooLarge {
            raw_len,
            max: MAX_RAW_LEN,
        });
    }
    Ok(())
}

/// A zero-filled output buffer of `len` bytes, or an error if it cannot be had.
///
/// Zero-filled, not merely reserved: liblz4 does not reject a match with offset 0 (the block
/// format calls it invalid), and its decoders then "copy" the match from the bytes they are
/// writing. Over uninitialised memory that would hand heap garbage to the caller (found by
/// fuzzing: `tests/fuzz_regressions.rs`); over zeros it yields zeros. [`check_offsets`] now
/// refuses such blocks first; the zero fill stays as the second line of defence, since the
/// leak it prevents would be silent.
fn alloc_output(len: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    zero_output(&mut out, len)?;
    Ok(out)
}

/// Makes `out` `len` zero bytes (see [`alloc_output`] for why zeros), reusing its allocation
/// when it is large enough.
fn zero_output(out: &mut Vec<u8>, len: usize) -> Result<(), Error> {
    out.clear();
    out.try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { bytes: len })?;
    out.resize(len, 0);
    Ok(())
}

/// Runs one liblz4 compression call into room reserved at the end of `out` and keeps its
/// output there; on failure `out` is unchanged.
///
/// The room is `LZ4_compressBound` bytes, a little more than the input, and is left as it is,
/// not zero-filled first: only the bytes liblz4 writes are ever touched, and kept. Zeroing the
/// whole bound made every page of it resident, for a large value as much memory again as the
/// input, however well it compressed (a 200 MiB row: 210 MB). Compression only writes its
/// output, so no byte of the room is read before it is written.
///
/// `call(src, src_len, dst, dst_capacity)` must write at most `dst_capacity` bytes at `dst` and
/// return how many it wrote (or <= 0 on failure).
fn compress_with(
    input: &[u8],
    out: &mut Vec<u8>,
    call: impl FnOnce(*const c_char, c_int, *mut c_char, c_int) -> c_int,
) -> Result<usize, Error> {
    check_input(input)?;
    let bound = compress_bound(input.len());
    let start = out.len();
    out.try_reserve(bound)
        .map_err(|_| Error::OutOfMemory { bytes: bound })?;
    let room = &mut out.spare_capacity_mut()[..bound];
    // Both fit: input.len() <= MAX_RAW_LEN < 2^30, bound < 2^30 + 2^22 + 16.
    let written = call(
        input.as_ptr().cast::<c_char>(),
        input.len() as c_int,
        room.as_mut_ptr().cast::<c_char>(),
        bound as c_int,
    );
    if written <= 0 || written as usize > bound {
        return Err(Error::CompressFailed {
            code: written,
            input_len: input.len(),
        });
    }
    let written = written as usize;
    // SAFETY: `call` wrote `written` <= `bound` bytes at the start of the room, which is within
    // `out`'s capacity (reserved above): the first `start + written` bytes are initialised.
    unsafe { out.set_len(start + written) };
    Ok(written)
}

/// Compresses `input` into one raw lz4 block, byte-identical to PostgreSQL's lz4 payload
/// (`LZ4_compress_default` with an output bound of `LZ4_compressBound(len)`).
///
/// The block may be larger than the input (incompressible data); deciding whether to store it
/// is the caller's business (see the module documentation for PostgreSQL's rule).
pub fn compress(input: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    compress_into(input, &mut out)?;
    Ok(out)
}

/// [`compress`], appending the block to `out` (whose existing contents are kept, so a datum
/// header can be written first) and returning the block's length.
///
/// This runs liblz4's `LZ4_compress_default` itself, which puts a 16 KiB state on the stack and
/// clears it per call; [`Lz4Compressor::compress_into`] produces the same bytes reusing one.
pub fn compress_into(input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
    compress_with(input, out, |src, src_len, dst, dst_cap| {
        // SAFETY: `src` points to `src_len` readable bytes and `dst` to `dst_cap` writable ones
        // (see compress_with); LZ4_compress_default reads and writes only within those.
        unsafe { lz4_sys::LZ4_compress_default(src, dst, src_len, dst_cap) }
    })
}

/// Decompresses a whole raw lz4 block that must decode to exactly `raw_len` bytes
/// (`LZ4_decompress_safe`, as PostgreSQL).
pub fn decompress(payload: &[u8], raw_len: usize) -> Result<Vec<u8>, Error> {
    decompress_impl(payload, raw_len, &[])
}

/// [`decompress`] into `out`, replacing its contents and reusing its allocation: for a caller
/// decoding many small blocks, one allocation instead of one per block (the datum decoder's
/// lz4 datums with a 64 KiB dictionary, every even row of each corpus row set, timed in one
/// process against [`Lz4Dictionary::decompress`]: 2-10 % faster, most on the shortest rows).
/// On error the contents of `out` are unspecified.
pub fn decompress_into(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<(), Error> {
    decompress_into_impl(payload, raw_len, &[], out)
}

/// Decompresses the first `prefix_len` bytes of a block whose whole raw length is `raw_len`
/// (`LZ4_decompress_safe_partial`, as PostgreSQL's slice decoding). `prefix_len` is capped at
/// `raw_len`; the result has exactly that many bytes, or the call fails.
///
/// Decoding stops once the prefix is produced, so corruption after it goes unnoticed (as in
/// PostgreSQL).
pub fn decompress_prefix(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
) -> Result<Vec<u8>, Error> {
    decompress_prefix_impl(payload, raw_len, prefix_len, &[])
}

/// Decompresses a whole block made by [`Lz4Compressor::compress_with_dict`] with a dictionary
/// with these bytes. `dict` may be the whole dictionary or [`Lz4Dictionary::as_bytes`]: only
/// the last [`DICT_WINDOW`] bytes are used. No copy of the dictionary is made.
pub fn decompress_with_dict(payload: &[u8], raw_len: usize, dict: &[u8]) -> Result<Vec<u8>, Error> {
    decompress_impl(payload, raw_len, dict_window(dict))
}

/// [`decompress_prefix`] for a block made with a dictionary; see [`decompress_with_dict`].
pub fn decompress_prefix_with_dict(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
    dict: &[u8],
) -> Result<Vec<u8>, Error> {
    decompress_prefix_impl(payload, raw_len, prefix_len, dict_window(dict))
}

/// The last [`DICT_WINDOW`] bytes of `dict`: all an lz4 block can reach.
fn dict_window(dict: &[u8]) -> &[u8] {
    &dict[dict.len().saturating_sub(DICT_WINDOW)..]
}

fn decompress_impl(payload: &[u8], raw_len: usize, dict: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    decompress_into_impl(payload, raw_len, dict, &mut out)?;
    Ok(out)
}

fn decompress_into_impl(
    payload: &[u8],
    raw_len: usize,
    dict: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    check_raw_len(raw_len)?;
    let src_len = check_payload(payload)?;
    if let Err(error) = check_expansion(payload, raw_len) {
        out.clear();
        return Err(error);
    }
    debug_assert!(dict.len() <= DICT_WINDOW);
    zero_output(out, raw_len)?;
    let dst = out.as_mut_ptr().cast::<c_char>();
    // SAFETY: `payload` is `src_len` readable bytes; `dst` has room for `raw_len` (< 2^30, so it
    // fits a c_int) bytes; `dict` is `dict.len()` (<= 64 KiB) readable bytes that do not overlap
    // `dst`. The _safe decoders write at most `raw_len` bytes to `dst`, read only within `src`
    // and `dict`, and reject any match offset reaching before `dict` (or before `dst` when
    // `dict` is empty, which makes the call the same as LZ4_decompress_safe).
    let code = unsafe {
        ffi::LZ4_decompress_safe_usingDict(
            payload.as_ptr().cast::<c_char>(),
            dst,
            src_len,
            raw_len as c_int,
            dict.as_ptr().cast::<c_char>(),
            dict.len() as c_int,
        )
    };
    if code < 0 {
        return Err(Error::Corrupt {
            code,
            payload_len: payload.len(),
        });
    }
    let produced = code as usize;
    if produced != raw_len {
        return Err(Error::LengthMismatch {
            expected: raw_len,
            produced,
        });
    }
    Ok(())
}

fn decompress_prefix_impl(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
    dict: &[u8],
) -> Result<Vec<u8>, Error> {
    check_raw_len(raw_len)?;
    let src_len = check_payload(payload)?;
    check_expansion(payload, raw_len)?;
    debug_assert!(dict.len() <= DICT_WINDOW);
    let wanted = prefix_len.min(raw_len);
    let mut out = alloc_output(wanted)?;
    let dst = out.as_mut_ptr().cast::<c_char>();
    // SAFETY: as in decompress_into_impl, with `wanted` (<= raw_len < 2^30) writable bytes at
    // `dst`; the partial decoder stops after `wanted` bytes and never writes past `dst + wanted`
    // (targetOutputSize == dstCapacity). An empty `dict` makes this call
    // LZ4_decompress_safe_partial, PostgreSQL's slice decoder.
    let code = unsafe {
        ffi::LZ4_decompress_safe_partial_usingDict(
            payload.as_ptr().cast::<c_char>(),
            dst,
            src_len,
            wanted as c_int,
            wanted as c_int,
            dict.as_ptr().cast::<c_char>(),
            dict.len() as c_int,
        )
    };
    if code < 0 {
        return Err(Error::Corrupt {
            code,
            payload_len: payload.len(),
        });
    }
    let produced = code as usize;
    if produced != wanted {
        return Err(Error::PrefixShort {
            wanted,
            produced,
            raw_len,
        });
    }
    Ok(out)
}

/// An lz4 dictionary, prepared once: its last 64 KiB and a dictionary stream loaded from them.
///
/// Share one per dictionary between threads (`Send + Sync`); each thread compresses with its
/// own [`Lz4Compressor`]. Decoding needs only the bytes ([`Lz4Dictionary::as_bytes`]).
pub struct Lz4Dictionary {
    /// Dictionary stream (`LZ4_loadDict` done once). Its internal pointer refers into `bytes`'
    /// heap buffer, which never moves or changes while `self` lives.
    stream: Box<Lz4Stream>,
    /// The last [`DICT_WINDOW`] bytes of the dictionary.
    bytes: Box<[u8]>,
    /// What `LZ4_loadDict` loaded: 0 for dictionaries under 8 bytes, which it ignores.
    loaded: usize,
}

// Why `Lz4Dictionary` is `Send + Sync` (the compiler derives both, since the stream is plain
// bytes to Rust; this is why that is sound): after `new` returns, nothing writes the stream or
// the bytes. `LZ4_attach_dictionary` takes the dictionary stream as `const LZ4_stream_t*` and
// stores only its address in the caller's working stream; `LZ4_compress_fast_continue` then
// reads the dictionary stream's table and the dictionary bytes, or `memcpy`s the table into the
// working stream (inputs over 4 KiB). Concurrent readers of immutable memory are fine, and the
// heap buffers stay put when the struct moves between threads.
const _: () = crate::assert_send_sync::<Lz4Dictionary>();

impl Lz4Dictionary {
    /// Prepares a dictionary from its bytes, keeping the last [`DICT_WINDOW`] of them.
    ///
    /// Any bytes work, including none (then compression is the same as [`compress`]).
    pub fn new(dict: &[u8]) -> Lz4Dictionary {
        let bytes: Box<[u8]> = dict_window(dict).into();
        let mut stream = Lz4Stream::new();
        // SAFETY: `stream` was initialised by LZ4_initStream; `bytes` is `bytes.len()`
        // (<= 64 KiB) readable bytes. The stream keeps a pointer into `bytes`' heap buffer, which
        // lives as long as the stream (both are fields of the returned value, never replaced).
        let loaded = unsafe {
            ffi::LZ4_loadDict(
                &mut *stream,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len() as c_int,
            )
        };
        Lz4Dictionary {
            stream,
            bytes,
            loaded: loaded.max(0) as usize,
        }
    }

    /// The bytes a decoder needs: the dictionary's last [`DICT_WINDOW`] bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// How many bytes [`Lz4Dictionary::as_bytes`] holds.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the dictionary is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// [`decompress_with_dict`] with this dictionary.
    pub fn decompress(&self, payload: &[u8], raw_len: usize) -> Result<Vec<u8>, Error> {
        decompress_impl(payload, raw_len, &self.bytes)
    }

    /// [`Self::decompress`] into `out`, replacing its contents and reusing its allocation
    /// (see [`decompress_into`]). On error the contents of `out` are unspecified.
    pub fn decompress_into(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        decompress_into_impl(payload, raw_len, &self.bytes, out)
    }

    /// [`decompress_prefix_with_dict`] with this dictionary.
    pub fn decompress_prefix(
        &self,
        payload: &[u8],
        raw_len: usize,
        prefix_len: usize,
    ) -> Result<Vec<u8>, Error> {
        decompress_prefix_impl(payload, raw_len, prefix_len, &self.bytes)
    }
}

impl Clone for Lz4Dictionary {
    /// Prepares the same bytes again: the stream cannot be copied, it points into its own bytes.
    fn clone(&self) -> Self {
        Lz4Dictionary::new(&self.bytes)
    }
}

impl fmt::Debug for Lz4Dictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lz4Dictionary")
            .field("len", &self.bytes.len())
            .field("loaded", &self.loaded)
            .finish_non_exhaustive()
    }
}

/// A reusable lz4 compressor: two working `LZ4_stream_t`s (16 KiB each), so compressing a datum
/// allocates nothing but its output. One per thread; it works with any number of dictionaries.
///
/// Two streams, one per kind of call, because liblz4's fast reset keeps a stream's hash table
/// only while consecutive calls use the same table type: plain blocks under 64 KiB use 16-bit
/// entries, dictionary blocks 32-bit ones, and each switch clears all 16 KiB
/// (`LZ4_prepareTable`). The datum encoder tries both forms for every datum; on one shared
/// stream those two clears took a fifth of its time on the corpus's CSV airports rows (108
/// bytes on average): with two streams it encodes them 1.23x faster (in one process, 200
/// rounds; fortunes and user agents 1.07-1.08x, no set slower).
pub struct Lz4Compressor {
    /// Working stream for plain blocks (`LZ4_compress_fast_extState_fastReset`, which accepts
    /// it in any state a previous call left it in).
    plain: Box<Lz4Stream>,
    /// Working stream for dictionary blocks. Between calls it may hold stale pointers to the
    /// last input and dictionary; every call resets it (`LZ4_resetStream_fast`, which clears
    /// them) before use.
    with_dict: Box<Lz4Stream>,
}

impl Lz4Compressor {
    /// A compressor with freshly initialised working streams.
    pub fn new() -> Lz4Compressor {
        Lz4Compressor {
            plain: Lz4Stream::new(),
            with_dict: Lz4Stream::new(),
        }
    }

    /// [`compress`] reusing this compressor's state: the same bytes as `LZ4_compress_default`.
    pub fn compress(&mut self, input: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.compress_into(input, &mut out)?;
        Ok(out)
    }

    /// [`compress_into`] reusing this compressor's state (`LZ4_compress_fast_extState_fastReset`,
    /// which gives the same bytes as `LZ4_compress_default` without clearing 16 KiB per call;
    /// inputs of 512 bytes or more, `PLAIN_CLEAR_TABLE_MIN`, clear it, which pays there).
    /// Appends to `out` and returns the block's length.
    pub fn compress_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        let work: *mut Lz4Stream = &mut *self.plain;
        compress_with(input, out, |src, src_len, dst, dst_cap| {
            // SAFETY: `work` is an initialised stream owned by `self` (borrowed mutably for this
            // call), which the _fastReset variant accepts in any state a previous call left it
            // in, and which LZ4_initStream may clear (LZ4_STREAM_SIZE bytes, 8-byte aligned, as
            // in Lz4Stream::new); `src`/`dst` are valid for `src_len`/`dst_cap` bytes (see
            // compress_with).
            unsafe {
                if src_len as usize >= PLAIN_CLEAR_TABLE_MIN {
                    ffi::LZ4_initStream(work.cast::<c_void>(), LZ4_STREAM_SIZE);
                }
                ffi::LZ4_compress_fast_extState_fastReset(
                    work.cast::<c_void>(),
                    src,
                    dst,
                    src_len,
                    dst_cap,
                    ACCELERATION,
                )
            }
        })
    }

    /// Compresses `input` as if `dict` came just before it. Returns a raw lz4 block that
    /// [`decompress_with_dict`] (or [`Lz4Dictionary::decompress`]) reads with the same bytes.
    pub fn compress_with_dict(
        &mut self,
        input: &[u8],
        dict: &Lz4Dictionary,
    ) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.compress_with_dict_into(input, dict, &mut out)?;
        Ok(out)
    }

    /// [`Lz4Compressor::compress_with_dict`], appending the block to `out` and returning its
    /// length.
    pub fn compress_with_dict_into(
        &mut self,
        input: &[u8],
        dict: &Lz4Dictionary,
        out: &mut Vec<u8>,
    ) -> Result<usize, Error> {
        if dict.loaded == 0 {
            // liblz4 ignored the dictionary (under 8 bytes): compress as PostgreSQL does, which
            // also decodes with the dictionary bytes in front (they are simply never referenced).
            return self.compress_into(input, out);
        }
        let work: *mut Lz4Stream = &mut *self.with_dict;
        let dict_stream: *const Lz4Stream = &*dict.stream;
        compress_with(input, out, |src, src_len, dst, dst_cap| {
            // SAFETY: `work` is an initialised stream owned by `self`, mutably borrowed for this
            // call; LZ4_resetStream_fast accepts it in any state a previous call left it in and
            // clears its stale history pointers. `dict_stream` was prepared by LZ4_loadDict and is
            // only read; it and the bytes it points into live as long as `dict`, which outlives
            // this call, and the attachment ends with this call (liblz4 clears it after one
            // compression, and the next call resets the stream before anything else).
            // `src`/`dst` are valid for `src_len`/`dst_cap` bytes (see compress_with), and
            // `dst_cap` >= LZ4_compressBound(src_len).
            unsafe {
                ffi::LZ4_resetStream_fast(work);
                ffi::LZ4_attach_dictionary(work, dict_stream);
                ffi::LZ4_compress_fast_continue(work, src, dst, src_len, dst_cap, ACCELERATION)
            }
        })
    }
}

impl Default for Lz4Compressor {
    fn default() -> Self {
        Lz4Compressor::new()
    }
}

impl fmt::Debug for Lz4Compressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lz4Compressor").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes rich in zeros, length nibbles of 15 and extension bytes of 255, so that blocks with
    /// zero pairs, zero offsets and long lengths are common.
    fn block_bytes() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            Just(0u8),
            Just(0xff),
            Just(0xf0),
            Just(0x0f),
            Just(0x10),
            any::<u8>()
        ];
        proptest::collection::vec(byte, 0..200)
    }

    #[test]
    fn compressing_leaves_the_room_past_the_block_untouched() {
        // Room marked beforehand: a block written over zeros would have zeroed it all.
        let input = b"pgdict pgdict pgdict pgdict pgdict pgdict pgdict".repeat(40);
        let bound = compress_bound(input.len());
        let mut out = vec![0xa5; 3 + bound];
        out.truncate(3);
        let written = Lz4Compressor::new()
            .compress_into(&input, &mut out)
            .unwrap();
        assert!(written < input.len() / 4, "{written} bytes");
        assert_eq!(out.len(), 3 + written);
        assert_eq!(&out[..3], &[0xa5; 3]);
        assert_eq!(decompress(&out[3..], input.len()).unwrap(), input);
        // SAFETY: the whole capacity was initialised by `vec!` above, and truncating a Vec of
        // bytes leaves the bytes past its length as they were.
        let past =
            unsafe { std::slice::from_raw_parts(out.as_ptr().add(out.len()), bound - written) };
        assert!(
            past.iter().all(|&b| b == 0xa5),
            "the room past the block was written"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Ruling a block out by its lack of a zero pair gives the walk's verdict.
        #[test]
        fn the_zero_pair_search_changes_no_verdict(block in block_bytes()) {
            prop_assert_eq!(check_offsets(&block), find_zero_offset(&block));
        }
    }
}
