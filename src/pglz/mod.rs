//! pglz: PostgreSQL's LZ compression, byte-identical to PostgreSQL 15.
//!
//! This is a Rust implementation of `src/common/pg_lzcompress.c`. Without a dictionary its
//! output is byte-for-byte what PostgreSQL 15's `pglz_compress` produces on x86_64, for every
//! input and strategy, and its decoder accepts exactly the streams PostgreSQL's
//! `pglz_decompress` accepts. Both claims are checked by differential tests against
//! PostgreSQL's own C code (`tests/pglz_differential.rs`).
//!
//! # Entry points
//!
//! - [`Compressor::compress`]`(input, strategy)`: compresses `input` with a [`Strategy`]
//!   ([`Strategy::DEFAULT`] is what PostgreSQL uses for TOAST, [`Strategy::ALWAYS`] compresses
//!   whatever saves a byte). Returns `None` when the strategy judges the input not worth
//!   compressing: the caller stores it raw. That is a normal outcome, not an error. The
//!   compressor keeps its work tables between calls, so compressing allocates nothing once
//!   warm. [`compress()`] is the one-shot form.
//! - [`decompress()`]`(payload, raw_len)`: decodes a whole payload; the payload must produce
//!   exactly `raw_len` bytes and be consumed exactly (PostgreSQL's `check_complete = true`).
//! - [`decompress_prefix`]`(payload, raw_len, k)`: decodes only the first `k` bytes, reading
//!   at most [`maximum_compressed_size`]`(k, payload.len())` payload bytes (PostgreSQL's
//!   `check_complete = false`, used for `substr()` on compressed values).
//!
//! # The format
//!
//! A payload is a sequence of groups. Each group starts with a control byte whose bits, from
//! the least significant up, say what each of the next (up to) eight items is:
//!
//! - bit 0: a literal byte, copied from the payload to the output;
//! - bit 1: a match tag of 2 or 3 bytes, copying earlier output to the current position.
//!
//! A tag holds a 12-bit offset (1..=4095 bytes back from the current output position) and a
//! length of 3..=273 bytes:
//!
//! ```text
//!   T1        T2         [T3]
//!   7--4 3--0 7------0   7------0
//!   OOOO LLLL OOOO OOOO  EEEE EEEE
//!
//!   offset = (T1 >> 4) << 8 | T2                      1..=4095
//!   length = (T1 & 0x0f) + 3             if LLLL != 0xf  (3..=17)
//!   length = 18 + T3                     if LLLL == 0xf  (18..=273)
//! ```
//!
//! A match may overlap the bytes it produces (offset < length): a run of 200 spaces is one
//! literal space and a tag "length 199, offset 1". The payload carries no length of its own:
//! the raw length is stored beside it (in the varlena header), and decoding stops when the
//! output is full or the payload is exhausted.
//!
//! # The compressor
//!
//! For every input position, a hash of the next four bytes (of the byte alone in the last
//! three positions) selects a history list of earlier positions with the same hash, newest
//! first. The compressor walks that list, measuring each candidate's match, and stops when:
//! a match of `good_match` bytes or more is found (`match_size_good`, 128 in both built-in
//! strategies, lowered by `match_size_drop` percent at each step down the list); the list
//! ends; or the next candidate is 4095 or more bytes back (so the compressor itself never emits
//! offsets above 4094). A match of three bytes or more becomes a tag, anything less a literal.
//! The hash table has 512 to 8192 buckets depending on the input length, and PostgreSQL reads
//! the input through `char`, which is signed on x86_64: the hash sign-extends bytes 0x80..=0xff,
//! and so does this implementation, or the buckets (and so the output) would differ.
//!
//! Compression gives up (returns `None`) when the strategy's conditions fail: the input is
//! shorter than `min_input_size` or longer than `max_input_size`; no match was found within
//! the first `first_success_by` output bytes; or the output would not be at least
//! `min_comp_rate` percent smaller than the input.
//!
//! Differences from the C code are internal only: PostgreSQL keeps the history in doubly linked
//! lists with 4096 recycled entries; this implementation keeps, per position, a link to the
//! previous position with the same hash (in a ring of links). Both walk the same candidates in
//! the same order and stop at the same place, so they choose the same matches. Plain
//! compression also links positions ahead of the walks (the lists do not depend on the
//! matches), skips candidates that cannot be longer than the best match with one 4-byte
//! comparison, and stops as soon as a lower bound of the output proves that PostgreSQL would
//! refuse the result (see `Compressor::compress_plain` in `compress.rs`).

mod compress;
mod decompress;
mod dict;

pub use compress::{compress, Compressor};
pub use decompress::{
    check_raw_len, decompress, decompress_into, decompress_prefix, decompress_prefix_into,
    maximum_compressed_size,
};
pub use decompress::{
    decompress_into_with_dict, decompress_prefix_with_dict, decompress_with_dict,
};
pub use dict::PglzDictionary;

/// Longest match a tag can encode (`PGLZ_MAX_MATCH`).
pub const MAX_MATCH: usize = 273;

/// Shortest match worth a tag: a 2-byte tag for fewer than 3 bytes saves nothing.
pub const MIN_MATCH: usize = 3;

/// Largest offset a tag can encode. PostgreSQL's compressor only emits offsets below 4095;
/// its decoder, and this one, accept 4095 too.
pub const MAX_OFFSET: usize = 4095;

/// The dictionary bytes a pglz match can reach: offsets go up to 4095, so only the last 4095
/// bytes of a dictionary are ever referenced (and the datum's own bytes push the dictionary
/// out of reach as it grows).
pub const DICT_WINDOW: usize = 4095;

/// Largest raw length pgdict decodes or compresses: 1 GiB - 1, PostgreSQL's varlena limit.
///
/// Decoding allocates at most this many bytes, and only when the payload is long enough to
/// possibly expand to the requested length (see [`Error::RawLenImpossible`]).
pub const MAX_RAW_LEN: usize = (1 << 30) - 1;

/// The most raw bytes one payload byte can stand for: a 25-byte group (control byte and eight
/// 3-byte tags) yields 8 × 273 = 2184 bytes, 87.36 per payload byte. Used to reject a raw
/// length the payload cannot possibly produce before allocating for it.
const MAX_EXPANSION_PER_PAYLOAD_BYTE: usize = 88;

/// How hard the compressor tries, and when it gives up: PostgreSQL's `PGLZ_Strategy`, with its
/// field names and meaning.
///
/// Fields are `i32` as in C, and out-of-range values are clamped the way PostgreSQL clamps
/// them, so any strategy PostgreSQL accepts behaves the same here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strategy {
    /// Inputs shorter than this are not compressed.
    pub min_input_size: i32,
    /// Inputs longer than this are not compressed.
    pub max_input_size: i32,
    /// The output must be at least this many percent smaller than the input (clamped to 0..=99).
    pub min_comp_rate: i32,
    /// Give up if no match has been found once this many output bytes were written.
    pub first_success_by: i32,
    /// Stop walking a history list at a match this long (clamped to 17..=273; 0 or less
    /// disables compression).
    pub match_size_good: i32,
    /// Lower `match_size_good` by this many percent at each step down a history list
    /// (clamped to 0..=100).
    pub match_size_drop: i32,
}

impl Strategy {
    /// PostgreSQL's `PGLZ_strategy_default`, the one TOAST uses.
    pub const DEFAULT: Strategy = Strategy {
        min_input_size: 32,       // Data chunks under 32 bytes are not compressed
        max_input_size: i32::MAX, // No upper limit on what we try to compress
        min_comp_rate: 25,        // Require 25 % compression, or not worth it
        first_success_by: 1024,   // Give up if no match in the first 1 KB of output
        match_size_good: 128,     // Stop history lookup at a 128-byte match
        match_size_drop: 10,      // Lower the good match size by 10 % at every step
    };

    /// PostgreSQL's `PGLZ_strategy_always`: compresses anything that saves one byte.
    pub const ALWAYS: Strategy = Strategy {
        min_input_size: 0, // Chunks of any size are compressed
        max_input_size: i32::MAX,
        min_comp_rate: 0,           // Saving one single byte is enough
        first_success_by: i32::MAX, // Never give up early
        match_size_good: 128,       // Stop history lookup at a 128-byte match
        match_size_drop: 6,         // Look harder for a good match
    };
}

impl Strategy {
    /// pgdict's strategy for compressing with a dictionary.
    ///
    /// PostgreSQL's 32-byte minimum and 25 % rule were made for an empty history, where short
    /// inputs rarely compress. With a dictionary short inputs do, and the datum encoder
    /// compares whole stored datums (headers included) and keeps the smallest form anyway, so
    /// this strategy only refuses what cannot pay: inputs under 13 bytes (the dictionary form
    /// is at least 13 bytes, its 10-byte header and one tag under a control byte, against raw's
    /// n + 1) and results that save nothing. It still gives up after 1 KB of output without a
    /// match, as PostgreSQL's default does, so incompressible data costs little time.
    pub const DICTIONARY: Strategy = Strategy {
        min_input_size: 13, // Under 13 bytes no dictionary datum beats raw
        max_input_size: i32::MAX,
        min_comp_rate: 0, // Any saving; the datum encoder picks the smallest form
        first_success_by: 1024, // Give up if no match in the first 1 KB of output
        match_size_good: 128, // As PostgreSQL's default
        match_size_drop: 10,
    };
}

impl Strategy {
    /// PostgreSQL's `result_max` for an input of `slen` bytes: a payload must be shorter than
    /// this. PostgreSQL approximates for huge inputs to avoid overflowing int32, and so must
    /// we to agree on the edge.
    pub(crate) fn result_max(&self, slen: i32) -> usize {
        let need_rate = self.min_comp_rate.clamp(0, 99);
        if slen > i32::MAX / 100 {
            ((slen / 100) * (100 - need_rate)) as usize
        } else {
            ((slen * (100 - need_rate)) / 100) as usize
        }
    }

    /// The longest payload this strategy could return for an input of `input_len` bytes
    /// (`min_comp_rate` alone; the other rules can only refuse more): 0 when it returns none.
    pub fn longest_payload(&self, input_len: usize) -> usize {
        i32::try_from(input_len).map_or(0, |slen| self.result_max(slen).saturating_sub(1))
    }
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::DEFAULT
    }
}

/// Why a payload could not be decoded. Every variant carries the positions and lengths needed
/// to find the damage: `src_pos` is a byte offset in the payload, `dst_pos` in the output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A match tag starts at `src_pos` but the payload ends before its last byte.
    #[error(
        "pglz: corrupt input (match tag at payload byte {src_pos} is cut off by the end of \
         the {payload_len}-byte payload)"
    )]
    TruncatedTag {
        /// Payload position of the tag's first byte.
        src_pos: usize,
        /// Length of the payload.
        payload_len: usize,
    },
    /// A match tag with offset 0 (it would copy the byte being written).
    #[error(
        "pglz: corrupt input (match tag at payload byte {src_pos} has offset 0, at output \
         byte {dst_pos})"
    )]
    ZeroOffset {
        /// Payload position of the tag's first byte.
        src_pos: usize,
        /// Output position the match would have been copied to.
        dst_pos: usize,
    },
    /// A match tag reaches back before the start of the output (and of the dictionary, when
    /// there is one).
    #[error(
        "pglz: corrupt input (match tag at payload byte {src_pos} copies from {offset} bytes \
         back at output byte {dst_pos}, but only {history} bytes of history exist)"
    )]
    OffsetBeforeStart {
        /// Payload position of the tag's first byte.
        src_pos: usize,
        /// Output position the match would have been copied to.
        dst_pos: usize,
        /// The tag's offset.
        offset: usize,
        /// Bytes available behind `dst_pos`: output so far, plus the dictionary if any.
        history: usize,
    },
    /// The payload ended before `raw_len` bytes were produced.
    #[error(
        "pglz: corrupt input (the {payload_len}-byte payload ended after {produced} of \
         {raw_len} raw bytes)"
    )]
    OutputShort {
        /// Bytes produced.
        produced: usize,
        /// Bytes expected.
        raw_len: usize,
        /// Length of the payload.
        payload_len: usize,
    },
    /// All `raw_len` bytes were produced, but payload bytes remain.
    #[error(
        "pglz: corrupt input ({raw_len} raw bytes were complete after reading {consumed} of \
         the {payload_len} payload bytes)"
    )]
    TrailingInput {
        /// Payload bytes read.
        consumed: usize,
        /// Length of the payload.
        payload_len: usize,
        /// Bytes produced (all that were expected).
        raw_len: usize,
    },
    /// The raw length is over [`MAX_RAW_LEN`].
    #[error("pglz: raw length {raw_len} is over the limit of {limit} bytes")]
    RawLenOverLimit {
        /// The raw length asked for.
        raw_len: usize,
        /// [`MAX_RAW_LEN`].
        limit: usize,
    },
    /// The payload is too short to produce `raw_len` bytes, however it is read. Rejected
    /// before any allocation, so a damaged header cannot make the decoder allocate.
    #[error(
        "pglz: corrupt input (a {payload_len}-byte payload cannot expand to {raw_len} bytes; \
         at most {max_possible})"
    )]
    RawLenImpossible {
        /// The raw length asked for.
        raw_len: usize,
        /// Length of the payload.
        payload_len: usize,
        /// The most this payload could produce.
        max_possible: usize,
    },
}
