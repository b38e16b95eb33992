//! The pglz decoder: PostgreSQL 15's `pglz_decompress`, in safe Rust.
//!
//! It accepts exactly what PostgreSQL accepts and rejects the rest with an [`Error`] naming the
//! position of the damage. PostgreSQL's checks, kept here: a tag must not run past the payload,
//! its offset must not be 0 (the copy would never make progress) nor reach before the start
//! of the output. With `check_complete`, the output must be filled and the payload consumed
//! exactly.

use super::{Error, DICT_WINDOW, MAX_EXPANSION_PER_PAYLOAD_BYTE, MAX_RAW_LEN};

/// Decodes a whole payload that must expand to exactly `raw_len` bytes.
///
/// Allocates `raw_len` bytes only after checking that `raw_len` is within [`MAX_RAW_LEN`] and
/// that the payload is long enough to possibly produce it.
pub fn decompress(payload: &[u8], raw_len: usize) -> Result<Vec<u8>, Error> {
    check_raw_len(payload.len(), raw_len)?;
    let mut out = vec![0; raw_len];
    decompress_into(payload, &mut out)?;
    Ok(out)
}

/// Decodes a whole payload into `out`, which it must fill exactly (`out.len()` is the raw
/// length).
pub fn decompress_into(payload: &[u8], out: &mut [u8]) -> Result<(), Error> {
    check_raw_len(payload.len(), out.len())?;
    decode(payload, &[], out, true).map(|_| ())
}

/// Decodes as much of the first `out.len()` bytes as `payload` yields, and returns how many
/// bytes were written: PostgreSQL's `pglz_decompress` with `check_complete = false`. The
/// payload may end early (fewer bytes written) or go on past `out` (the rest is not read).
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
    if prefix_len >= raw_len {
        return decompress(payload, raw_len);
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
    let produced = decompress_prefix_into(readable, &mut out)?;
    out.truncate(produced);
    Ok(out)
}

/// [`decompress`] for a payload compressed with a dictionary
/// ([`Compressor::compress_with_dict`](super::Compressor::compress_with_dict)). `dict` is the
/// dictionary's content; only its last [`DICT_WINDOW`] bytes can be referenced, and they are
/// read in place, not copied.
pub fn decompress_with_dict(payload: &[u8], raw_len: usize, dict: &[u8]) -> Result<Vec<u8>, Error> {
    check_raw_len(payload.len(), raw_len)?;
    let mut out = vec![0; raw_len];
    decode(payload, dict_window(dict), &mut out, true)?;
    Ok(out)
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
/// before anything is allocated for it.
fn check_raw_len(payload_len: usize, raw_len: usize) -> Result<(), Error> {
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
    while sp < payload.len() && dp < out.len() {
        let mut ctrl = payload[sp];
        sp += 1;

        // Eight literals in a row, with room for all of them: one copy instead of eight.
        if ctrl == 0 && payload.len() - sp >= 8 && out.len() - dp >= 8 {
            out[dp..dp + 8].copy_from_slice(&payload[sp..sp + 8]);
            sp += 8;
            dp += 8;
            continue;
        }

        for _ in 0..8 {
            if sp >= payload.len() || dp >= out.len() {
                break;
            }
            if ctrl & 1 == 0 {
                out[dp] = payload[sp];
                dp += 1;
                sp += 1;
            } else {
                let tag_pos = sp;
                let truncated = Error::TruncatedTag {
                    src_pos: tag_pos,
                    payload_len: payload.len(),
                };
                let [t1, t2] = *payload.get(sp..sp + 2).ok_or(truncated.clone())? else {
                    unreachable!("a two-byte slice")
                };
                sp += 2;
                let mut len = usize::from(t1 & 0x0f) + 3;
                let off = (usize::from(t1 & 0xf0) << 4) | usize::from(t2);
                if len == 18 {
                    len += usize::from(*payload.get(sp).ok_or(truncated)?);
                    sp += 1;
                }
                if off == 0 {
                    return Err(Error::ZeroOffset {
                        src_pos: tag_pos,
                        dst_pos: dp,
                    });
                }
                if off > dp + dict.len() {
                    return Err(Error::OffsetBeforeStart {
                        src_pos: tag_pos,
                        dst_pos: dp,
                        offset: off,
                        history: dp + dict.len(),
                    });
                }
                // Don't emit more than requested: a prefix may end inside a match.
                let mut len = len.min(out.len() - dp);
                if off > dp {
                    // The match starts `off - dp` bytes before the end of the dictionary and
                    // may run on into the output: copy the dictionary part from where it is,
                    // then go on as an ordinary match that now starts at output byte 0.
                    let from_dict = &dict[dict.len() - (off - dp)..];
                    let n = from_dict.len().min(len);
                    out[dp..dp + n].copy_from_slice(&from_dict[..n]);
                    dp += n;
                    len -= n;
                }
                if len > 0 {
                    copy_match(out, dp, off, len);
                    dp += len;
                }
            }
            ctrl >>= 1;
        }
    }

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

/// Copies `len` bytes from `off` bytes back to `out[dp..]`; the regions may overlap.
///
/// When `off < len` the match repeats the last `off` bytes. Copying `off` bytes at a time keeps
/// each copy free of overlap, and after each copy the repeated unit is twice as long, so the
/// offset can double: "11234" + (len 16, off 4) becomes "112341234" with 12 left at offset 8,
/// then "11234123412341234" with 4 left, which is a plain copy.
#[inline(always)]
fn copy_match(out: &mut [u8], mut dp: usize, mut off: usize, mut len: usize) {
    let src = dp - off;
    if off == 1 {
        let byte = out[src];
        out[dp..dp + len].fill(byte);
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
