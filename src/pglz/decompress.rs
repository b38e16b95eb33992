//! The pglz decoder: PostgreSQL 15's `pglz_decompress`, in safe Rust.
//!
//! It accepts exactly what PostgreSQL accepts and rejects the rest with an [`Error`] naming the
//! position of the damage. PostgreSQL's checks, kept here: a tag must not run past the payload,
//! its offset must not be 0 (the copy would never make progress) nor reach before the start
//! of the output. With `check_complete`, the output must be filled and the payload consumed
//! exactly. One limit of its own: a raw length over [`MAX_RAW_LEN`] (2^30 - 1, the most a
//! varlena's 30-bit length can say) is refused before anything is allocated, where C would
//! decode into whatever buffer it is given. (Compared with PostgreSQL's C on arbitrary and
//! damaged payloads by `tests/pglz_differential.rs`; a longer run, 27 million payloads and
//! every payload of 0-3 bytes at 20 raw lengths, both `check_complete` values, found no
//! difference in verdict, length or bytes.)
//!
//! The copies work in wide steps and may write past the end of what a call returns, within
//! the output buffer: after [`decompress_prefix_into`] returns `n`, only `out[..n]` is the
//! output, and the rest of `out` may have changed (C leaves it as it was).

use super::{Error, DICT_WINDOW, MAX_EXPANSION_PER_PAYLOAD_BYTE, MAX_RAW_LEN};

/// Decodes a whole payload that must expand to exactly `raw_len` bytes.
///
/// Allocates `raw_len` bytes only after checking that `raw_len` is within [`MAX_RAW_LEN`] and
/// that the payload is long enough to possibly produce it.
pub fn decompress(payload: &[u8], raw_len: usize) -> Result<Vec<u8>, Error> {
    decompress_with_dict(payload, raw_len, &[])
}

/// Decodes a whole payload into `out`, which it must fill exactly (`out.len()` is the raw
/// length).
pub fn decompress_into(payload: &[u8], out: &mut [u8]) -> Result<(), Error> {
    decompress_into_with_dict(payload, out, &[])
}

/// Decodes as much of the first `out.len()` bytes as `payload` yields, and returns how many
/// bytes that is: PostgreSQL's `pglz_decompress` with `check_complete = false`. The payload
/// may end early (fewer bytes decoded) or go on past `out` (the rest is not read). Bytes of
/// `out` after the count returned may have been written too (see the module documentation).
pub fn decompress_prefix_into(payload: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    decode(payload, &[], out, false)
}

/// Decodes the first `prefix_len` bytes of a value whose raw length is `raw_len`.
///
/// Reads at most [`maximum_compressed_size`]`(prefix_len, payload.len())` bytes of the
/// payload, as PostgreSQL does when it fetches a slice of a compressed TOAST value. When
/// `prefix_len >= raw_len` this is [`decompress`]. Otherwise the result may be shorter than
/// `prefix_len` if the payload ends first (PostgreSQL's `check_complete = false`).
pub fn decompress_prefix(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
) -> Result<Vec<u8>, Error> {
    decompress_prefix_with_dict(payload, raw_len, prefix_len, &[])
}

/// [`decompress`] for a payload compressed with a dictionary
/// ([`Compressor::compress_with_dict`](super::Compressor::compress_with_dict)). `dict` is the
/// dictionary's content; only its last [`DICT_WINDOW`] bytes can be referenced, and they are
/// read in place, not copied.
pub fn decompress_with_dict(payload: &[u8], raw_len: usize, dict: &[u8]) -> Result<Vec<u8>, Error> {
    check_raw_len(payload.len(), raw_len)?;
    let mut out = vec![0; raw_len];
    decompress_into_with_dict(payload, &mut out, dict)?;
    Ok(out)
}

/// [`decompress_into`] for a payload compressed with a dictionary: decodes into `out`, which
/// it must fill exactly.
// Inlined into the datum decoder, which calls it per dictionary datum: timed side by side in
// one process (datum decoder over the first 3000 even rows, 300 rounds), 1.8-2.2 % faster per
// CSV airport datum, 1.0-1.2 % per fortune (a hint alone left it a call).
#[inline(always)]
pub fn decompress_into_with_dict(payload: &[u8], out: &mut [u8], dict: &[u8]) -> Result<(), Error> {
    check_raw_len(payload.len(), out.len())?;
    decode(payload, dict_window(dict), out, true).map(|_| ())
}

/// [`decompress_prefix`] for a payload compressed with a dictionary.
pub fn decompress_prefix_with_dict(
    payload: &[u8],
    raw_len: usize,
    prefix_len: usize,
    dict: &[u8],
) -> Result<Vec<u8>, Error> {
    if prefix_len >= raw_len {
        return decompress_with_dict(payload, raw_len, dict);
    }
    if raw_len > MAX_RAW_LEN {
        return Err(Error::RawLenOverLimit {
            raw_len,
            limit: MAX_RAW_LEN,
        });
    }
    let readable = &payload[..maximum_compressed_size(prefix_len, payload.len())];
    // The prefix is bounded by what the readable part can produce, so a huge `prefix_len`
    // with a short payload does not allocate.
    let possible = readable
        .len()
        .saturating_mul(MAX_EXPANSION_PER_PAYLOAD_BYTE);
    let mut out = vec![0; prefix_len.min(possible)];
    let produced = decode(readable, dict_window(dict), &mut out, false)?;
    out.truncate(produced);
    Ok(out)
}

/// The part of a dictionary a pglz match can reach.
fn dict_window(dict: &[u8]) -> &[u8] {
    &dict[dict.len().saturating_sub(DICT_WINDOW)..]
}

/// The most payload bytes needed to decode the first `raw_len` bytes of a value whose payload
/// is `total_compressed_size` bytes (PostgreSQL 15's `pglz_maximum_compressed_size`).
///
/// All literals cost 9 bits per byte; 2 more bytes cover a tag that starts in the last group
/// and ends past the prefix. Capped at the payload size.
pub fn maximum_compressed_size(raw_len: usize, total_compressed_size: usize) -> usize {
    let literal_bytes = (raw_len as u128 * 9).div_ceil(8);
    (literal_bytes + 2).min(total_compressed_size as u128) as usize
}

/// Rejects a raw length over the limit, or one that the payload cannot possibly produce,
/// before anything is allocated for it. (Every decoding entry point checks this itself; it is
/// public for callers that size a reused buffer before decoding into it.)
pub fn check_raw_len(payload_len: usize, raw_len: usize) -> Result<(), Error> {
    if raw_len > MAX_RAW_LEN {
        return Err(Error::RawLenOverLimit {
            raw_len,
            limit: MAX_RAW_LEN,
        });
    }
    let max_possible = payload_len.saturating_mul(MAX_EXPANSION_PER_PAYLOAD_BYTE);
    if raw_len > max_possible {
        return Err(Error::RawLenImpossible {
            raw_len,
            payload_len,
            max_possible,
        });
    }
    Ok(())
}

/// Decodes `payload` into `out` until either is exhausted; returns the bytes written.
///
/// With `check_complete`, anything but "output full and payload consumed" is an error.
/// `dict` is the history before the output (empty for plain pglz): a match may start in it
/// and run on into the output.
fn decode(
    payload: &[u8],
    dict: &[u8],
    out: &mut [u8],
    check_complete: bool,
) -> Result<usize, Error> {
    let mut sp = 0;
    let mut dp = 0;
    // The control bits of the current group not yet used, with a sentinel bit above them: the
    // group is done when only the sentinel is left. 1 = no group yet.
    let mut bits: u32 = 1;
    // PostgreSQL reads items while both the payload and the output have room, and stops at the
    // first item for which either has run out, even inside a group: every item here checks
    // that too, in branches that go one way until the very end.
    //
    // Whether a group ends before the next tag is as hard to predict as the data: a branch on
    // it missed about once a group. So a step takes a literal run, reads the next control byte
    // only if the group is done (a select, not a branch), takes the next group's leading
    // literal run (empty when the group went on), then the tag. Only a group of eight
    // literals needs a branch, and it is rare.
    loop {
        if !literal_run(payload, &mut sp, out, &mut dp, &mut bits) {
            break;
        }
        // Next comes a control byte or a tag: either way PostgreSQL stops here if a buffer
        // has run out.
        if sp >= payload.len() || dp >= out.len() {
            break;
        }
        let group_done = bits == 1;
        let next_group = u32::from(payload.get(sp).copied().unwrap_or(0)) | 0x100;
        bits = std::hint::select_unpredictable(group_done, next_group, bits);
        sp += usize::from(group_done);
        if !literal_run(payload, &mut sp, out, &mut dp, &mut bits) {
            break;
        }
        if bits == 1 {
            continue;
        }
        if sp >= payload.len() || dp >= out.len() {
            break;
        }
        dp = decode_tag(payload, &mut sp, dict, out, dp)?;
        bits >>= 1;
    }
    finish(payload, out, sp, dp, check_complete)
}

/// Copies the run of literals the control bits start with (0 to 8 bytes, up to the next tag
/// or the group's end) and drops their bits. Returns false if a buffer ran out first (the
/// decode is over).
#[inline(always)]
fn literal_run(
    payload: &[u8],
    sp: &mut usize,
    out: &mut [u8],
    dp: &mut usize,
    bits: &mut u32,
) -> bool {
    let literals = bits.trailing_zeros() as usize;
    if *sp + 8 <= payload.len() && *dp + 8 <= out.len() {
        // Copy eight bytes, keep `literals` of them: the rest are overwritten by what follows
        // before anything reads them. Copying even when the run is empty spares a
        // hard-to-predict branch.
        out[*dp..*dp + 8].copy_from_slice(&payload[*sp..*sp + 8]);
        *sp += literals;
        *dp += literals;
    } else {
        for _ in 0..literals {
            if *sp >= payload.len() || *dp >= out.len() {
                return false;
            }
            out[*dp] = payload[*sp];
            *sp += 1;
            *dp += 1;
        }
    }
    *bits >>= literals;
    true
}

/// The end of a decode: with `check_complete`, anything but "output full and payload
/// consumed" is an error; otherwise the bytes written.
fn finish(
    payload: &[u8],
    out: &[u8],
    sp: usize,
    dp: usize,
    check_complete: bool,
) -> Result<usize, Error> {
    if check_complete {
        if dp != out.len() {
            return Err(Error::OutputShort {
                produced: dp,
                raw_len: out.len(),
                payload_len: payload.len(),
            });
        }
        if sp != payload.len() {
            return Err(Error::TrailingInput {
                consumed: sp,
                payload_len: payload.len(),
                raw_len: out.len(),
            });
        }
    }
    Ok(dp)
}

/// Decodes the match tag at `payload[*sp..]` and copies the match to `out[dp..]` (at most up
/// to the end of `out`). Advances `*sp` past the tag and returns the new output position.
#[inline(always)]
fn decode_tag(
    payload: &[u8],
    sp: &mut usize,
    dict: &[u8],
    out: &mut [u8],
    mut dp: usize,
) -> Result<usize, Error> {
    let tag_pos = *sp;
    let truncated = || Error::TruncatedTag {
        src_pos: tag_pos,
        payload_len: payload.len(),
    };
    // Read three bytes where there are three (a 2-byte tag leaves the third unused), so that
    // only a tag at the very end of the payload pays for a second look.
    let (t1, t2, t3) = match payload.get(tag_pos..tag_pos + 3) {
        Some(&[t1, t2, t3]) => (t1, t2, Some(t3)),
        _ => match payload.get(tag_pos..tag_pos + 2) {
            Some(&[t1, t2]) => (t1, t2, None),
            _ => return Err(truncated()),
        },
    };
    let mut len = usize::from(t1 & 0x0f) + 3;
    let off = (usize::from(t1 & 0xf0) << 4) | usize::from(t2);
    *sp = tag_pos + 2;
    if len == 18 {
        len += usize::from(t3.ok_or_else(truncated)?);
        *sp += 1;
    }
    // Offset 0, or one reaching before the history: one comparison for both (0 wraps to the
    // largest value).
    if off.wrapping_sub(1) >= dp + dict.len() {
        return Err(bad_offset(tag_pos, dp, off, dict.len()));
    }
    // Short matches are the common case (a 2-byte tag covers 3..=17 bytes): with room for
    // 16 bytes in the output, and a source 8 or more bytes back in the output or 16 or more
    // inside the dictionary, copy two fixed 8-byte chunks without a loop. Anything else (a
    // short repeat, or a match that runs from the dictionary into the output; both rare)
    // takes the general path below.
    if len <= 16 && dp + 16 <= out.len() {
        let awkward = off < 8 || off.wrapping_sub(dp + 1) < 15;
        if !awkward && dict.len() >= 16 {
            // Whether a match comes from the dictionary or from the output so far is as
            // random as the data: pick the buffer, and the position in it, by selects
            // instead of a branch, and load once. (Loading from both buffers and selecting
            // the value was 5-10 % slower per datum on AMD EPYC; the likely cause is the
            // unused load, which reads output bytes just written by overlapping stores.)
            let in_output = off <= dp;
            let from_out = if in_output { dp - off } else { 0 };
            let from_dict = if in_output {
                0
            } else {
                dict.len() - (off - dp)
            };
            let at = std::hint::select_unpredictable(in_output, from_out, from_dict);
            let low = load8(std::hint::select_unpredictable(in_output, &*out, dict), at);
            out[dp..dp + 8].copy_from_slice(&low.to_ne_bytes());
            // Read after the first store: with an offset of 8..16 it sees bytes just
            // written, already final.
            let high = load8(
                std::hint::select_unpredictable(in_output, &*out, dict),
                at + 8,
            );
            out[dp + 8..dp + 16].copy_from_slice(&high.to_ne_bytes());
            return Ok(dp + len);
        }
        if !awkward {
            // A dictionary under 16 bytes (none, for plain pglz): the offset check leaves no
            // room for a match 16 bytes inside it, so this one is in the output.
            let src = dp - off;
            copy_chunk8(out, src, dp);
            copy_chunk8(out, src + 8, dp + 8);
            return Ok(dp + len);
        }
    }
    // Don't emit more than requested: a prefix may end inside a match.
    let mut len = len.min(out.len() - dp);
    if off > dp {
        // The match starts `off - dp` bytes before the end of the dictionary.
        let back = off - dp;
        let from = dict.len() - back;
        if len + 15 <= back && dp + len + 15 <= out.len() {
            // Wholly inside the dictionary, with 16-byte chunks fitting both buffers: copy
            // by chunks (the bytes past `len` are overwritten by what follows).
            let mut i = 0;
            while i < len {
                let chunk: [u8; 16] = dict[from + i..from + i + 16].try_into().unwrap();
                out[dp + i..dp + i + 16].copy_from_slice(&chunk);
                i += 16;
            }
            return Ok(dp + len);
        }
        if len + 7 <= back && dp + len + 7 <= out.len() {
            // The same with 8-byte chunks.
            let mut i = 0;
            while i < len {
                let chunk: [u8; 8] = dict[from + i..from + i + 8].try_into().unwrap();
                out[dp + i..dp + i + 8].copy_from_slice(&chunk);
                i += 8;
            }
            return Ok(dp + len);
        }
        // Otherwise the match may run on into the output: copy the dictionary part from
        // where it is, then go on as an ordinary match that now starts at output byte 0.
        let from_dict = &dict[dict.len() - back..];
        let n = from_dict.len().min(len);
        out[dp..dp + n].copy_from_slice(&from_dict[..n]);
        dp += n;
        len -= n;
    }
    if len > 0 {
        copy_match(out, dp, off, len);
        dp += len;
    }
    Ok(dp)
}

/// The error for a tag at `tag_pos` whose offset is 0 or reaches before the history.
#[cold]
fn bad_offset(tag_pos: usize, dp: usize, off: usize, dict_len: usize) -> Error {
    if off == 0 {
        Error::ZeroOffset {
            src_pos: tag_pos,
            dst_pos: dp,
        }
    } else {
        Error::OffsetBeforeStart {
            src_pos: tag_pos,
            dst_pos: dp,
            offset: off,
            history: dp + dict_len,
        }
    }
}

/// The eight bytes at `bytes[at..]`, as a native-endian word (only ever stored back as bytes).
#[inline(always)]
fn load8(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Copies `out[src..src + 8]` to `out[dst..dst + 8]` (`src + 8 <= dst`, or the source bytes are
/// read before any is written: one 8-byte load, one store).
#[inline(always)]
fn copy_chunk8(out: &mut [u8], src: usize, dst: usize) {
    let chunk: [u8; 8] = out[src..src + 8].try_into().unwrap();
    out[dst..dst + 8].copy_from_slice(&chunk);
}

/// Copies `len` bytes from `off` bytes back to `out[dp..]`; the regions may overlap.
///
/// When `off < len` the match repeats the last `off` bytes. Copying `off` bytes at a time keeps
/// each copy free of overlap, and after each copy the repeated unit is twice as long, so the
/// offset can double: "11234" + (len 16, off 4) becomes "112341234" with 12 left at offset 8,
/// then "11234123412341234" with 4 left, which is a plain copy.
#[inline(always)]
fn copy_match(out: &mut [u8], mut dp: usize, mut off: usize, mut len: usize) {
    let src = dp - off;
    // The common case: the match is 8 or more bytes back and there is room to overshoot.
    // Copy 8 bytes at a time (16 when the match is that far back: long matches, such as runs
    // of blank padding a row apart, take half the steps); each chunk reads only bytes that
    // are already final (they are at least a chunk back), and the bytes written past the
    // match are overwritten by what follows it (they are never returned: the caller's length
    // stops before them).
    if off >= 32 && dp + len + 32 <= out.len() {
        let mut i = 0;
        while i < len {
            let chunk: [u8; 32] = out[src + i..src + i + 32].try_into().unwrap();
            out[dp + i..dp + i + 32].copy_from_slice(&chunk);
            i += 32;
        }
        return;
    }
    if off >= 16 && dp + len + 16 <= out.len() {
        let mut i = 0;
        while i < len {
            let chunk: [u8; 16] = out[src + i..src + i + 16].try_into().unwrap();
            out[dp + i..dp + i + 16].copy_from_slice(&chunk);
            i += 16;
        }
        return;
    }
    if off >= 8 && dp + len + 8 <= out.len() {
        let mut i = 0;
        while i < len {
            copy_chunk8(out, src + i, dp + i);
            i += 8;
        }
        return;
    }
    if off == 1 {
        let byte = out[src];
        out[dp..dp + len].fill(byte);
        return;
    }
    // A repeat of 2..8 bytes: write the first 8 bytes one by one (a forward byte copy repeats
    // the pattern by itself), then the rest in 8-byte chunks from a whole number of periods
    // back, at least 8 bytes: the same bytes, since the output repeats every `off`.
    if len > 8 && dp + len + 8 <= out.len() {
        for i in 0..8 {
            out[dp + i] = out[src + i];
        }
        let period = off * 8_usize.div_ceil(off);
        let mut i = 8;
        while i < len {
            copy_chunk8(out, dp + i - period, dp + i);
            i += 8;
        }
        return;
    }
    while off < len {
        out.copy_within(src..src + off, dp);
        dp += off;
        len -= off;
        off *= 2;
    }
    out.copy_within(src..src + len, dp);
}
