//! The pglz compressor: PostgreSQL 15's `pglz_compress`, match for match.
//!
//! See the module documentation of [`crate::pglz`] for the algorithm. The names follow
//! `pg_lzcompress.c` where a concept exists in both: `hist_start` (the newest position of each
//! hash list), `good_match`, `good_drop`, `result_max`, `ctrlb`.

use super::{Strategy, MAX_MATCH, MIN_MATCH};

/// Positions a history list can reach back to (`PGLZ_HISTORY_SIZE`). The ring of links to the
/// previous position with the same hash has this many slots.
const HISTORY_SIZE: usize = 4096;

/// Hash buckets for inputs of 1 KB and more (`PGLZ_MAX_HISTORY_LISTS`).
const MAX_HASH_SIZE: usize = 8192;

/// A candidate this many bytes back, or farther, ends the walk down a history list: its offset
/// would not fit the 12-bit tag field once PostgreSQL's `thisoff >= 0x0fff` test is applied.
const WALK_LIMIT: usize = 0x0fff;

/// A reusable pglz compressor: the history tables and the output buffer, kept between calls
/// so that compressing allocates nothing once the buffer has grown to the largest input.
///
/// ```
/// use pgdict::pglz::{self, Compressor, Strategy};
///
/// let mut compressor = Compressor::new();
/// let row = b"{\"id\": 1, \"name\": \"alpha\", \"tags\": [\"alpha\", \"alpha\", \"alpha\"]}";
/// let payload = compressor.compress(row, &Strategy::ALWAYS).expect("compressible").to_vec();
/// assert_eq!(pglz::decompress(&payload, row.len()).unwrap(), row);
///
/// // PostgreSQL's default strategy refuses inputs under 32 bytes: store those raw.
/// assert!(compressor.compress(b"short", &Strategy::DEFAULT).is_none());
/// ```
pub struct Compressor {
    /// For each hash bucket, 1 + the newest input position with that hash; 0 = empty list.
    hist_start: Box<[u32; MAX_HASH_SIZE]>,
    /// For input position `p`, at slot `p % HISTORY_SIZE`: 1 + the previous position with the
    /// same hash; 0 = none. A slot is overwritten 4096 positions later, by which time `p` is
    /// beyond [`WALK_LIMIT`] and no longer visited.
    hist_prev: Box<[u32; HISTORY_SIZE]>,
    /// Output buffer; grows to `input.len() + 4` (PostgreSQL's `PGLZ_MAX_OUTPUT`), never shrinks.
    out: Vec<u8>,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("buffer_capacity", &self.out.len())
            .finish_non_exhaustive()
    }
}

/// Compresses `input` with `strategy` into a new vector; `None` when the strategy judges it not
/// worth compressing. Builds a [`Compressor`] per call: reuse one to compress many values.
pub fn compress(input: &[u8], strategy: &Strategy) -> Option<Vec<u8>> {
    Compressor::new().compress(input, strategy).map(<[u8]>::to_vec)
}

impl Compressor {
    /// A compressor with empty tables and no output buffer yet.
    pub fn new() -> Compressor {
        Compressor {
            hist_start: Box::new([0; MAX_HASH_SIZE]),
            hist_prev: Box::new([0; HISTORY_SIZE]),
            out: Vec::new(),
        }
    }

    /// Compresses `input`, returning the payload exactly as PostgreSQL 15's `pglz_compress`
    /// writes it, or `None` when PostgreSQL would return -1 (the strategy refuses the input or
    /// the result does not save enough): store the value raw then.
    ///
    /// The returned slice borrows the compressor's buffer until the next call.
    pub fn compress(&mut self, input: &[u8], strategy: &Strategy) -> Option<&[u8]> {
        let len = self.compress_to_buffer(input, strategy)?;
        Some(&self.out[..len])
    }

    fn compress_to_buffer(&mut self, input: &[u8], strategy: &Strategy) -> Option<usize> {
        // PostgreSQL's lengths are int32: anything longer cannot be handed to it at all.
        let slen = i32::try_from(input.len()).ok()?;
        if strategy.match_size_good <= 0
            || slen < strategy.min_input_size
            || slen > strategy.max_input_size
        {
            return None;
        }

        // Limit the match parameters to the supported range, as PostgreSQL does.
        let good_match = strategy.match_size_good.clamp(17, MAX_MATCH as i32) as usize;
        let good_drop = strategy.match_size_drop.clamp(0, 100) as usize;
        let need_rate = strategy.min_comp_rate.clamp(0, 99);

        // The largest result the strategy accepts; PostgreSQL approximates for huge inputs to
        // avoid overflowing int32, and so must we to agree on the edge.
        let result_max = if slen > i32::MAX / 100 {
            (slen / 100) * (100 - need_rate)
        } else {
            (slen * (100 - need_rate)) / 100
        } as usize;
        let first_success_by = i64::from(strategy.first_success_by);

        // PostgreSQL sizes the hash table by input length: a small table is cheap to clear
        // for short inputs, a large one avoids collisions for long ones.
        let hash_size = match slen {
            0..=127 => 512,
            128..=255 => 1024,
            256..=511 => 2048,
            512..=1023 => 4096,
            _ => MAX_HASH_SIZE,
        };
        let mask = hash_size - 1;
        let hist_start = &mut self.hist_start[..hash_size];
        hist_start.fill(0);
        let hist_prev = &mut *self.hist_prev;

        let out_len = input.len() + 4;
        if self.out.len() < out_len {
            self.out.resize(out_len, 0);
        }
        let out = &mut self.out[..out_len];

        let mut writer = TagWriter::new();
        let mut found_match = false;
        let mut dp = 0;
        while dp < input.len() {
            // Checked once per item; an item writes at most 4 bytes (control byte and a
            // 3-byte tag), which is why the buffer has 4 bytes of slack.
            if writer.bp >= result_max {
                return None;
            }
            // Give up early on incompressible input (e.g. already compressed data).
            if !found_match && writer.bp as i64 >= first_success_by {
                return None;
            }

            let hash = hist_idx(input, dp, mask);
            let (match_len, match_off) =
                find_match(input, dp, hist_start[hash], hist_prev, good_match, good_drop);
            if match_len >= MIN_MATCH {
                writer.tag(out, match_len, match_off);
                hist_add(hist_start, hist_prev, dp, hash);
                for p in dp + 1..dp + match_len {
                    hist_add(hist_start, hist_prev, p, hist_idx(input, p, mask));
                }
                dp += match_len;
                found_match = true;
            } else {
                writer.literal(out, input[dp]);
                hist_add(hist_start, hist_prev, dp, hash);
                dp += 1;
            }
        }

        let result_size = writer.finish(out);
        (result_size < result_max).then_some(result_size)
    }
}

/// The history bucket for position `pos`: a hash of the next four bytes, or of the byte alone
/// in the last three positions (`pglz_hist_idx`).
///
/// Bytes are sign-extended, as PostgreSQL reads them through `char`, signed on x86_64. Without
/// the sign extension bytes 0x80..=0xff land in other buckets and the output differs.
#[inline(always)]
fn hist_idx(input: &[u8], pos: usize, mask: usize) -> usize {
    let signed = |i: usize| i32::from(input[pos + i] as i8);
    let hash = if input.len() - pos < 4 {
        signed(0)
    } else {
        (signed(0) << 6) ^ (signed(1) << 4) ^ (signed(2) << 2) ^ signed(3)
    };
    (hash as usize) & mask
}

/// Puts position `pos` at the head of history list `hash` (`pglz_hist_add`).
#[inline(always)]
fn hist_add(hist_start: &mut [u32], hist_prev: &mut [u32; HISTORY_SIZE], pos: usize, hash: usize) {
    hist_prev[pos % HISTORY_SIZE] = hist_start[hash];
    // Positions are below 2^31 (the input length fits i32), so pos + 1 fits u32.
    hist_start[hash] = pos as u32 + 1;
}

/// Walks the history list starting at `head` (1 + a position, or 0) for the longest match with
/// `input[pos..]` (`pglz_find_match`). Returns `(length, offset)`; a length under
/// [`MIN_MATCH`] means no usable match.
#[inline(always)]
fn find_match(
    input: &[u8],
    pos: usize,
    head: u32,
    hist_prev: &[u32; HISTORY_SIZE],
    mut good_match: usize,
    good_drop: usize,
) -> (usize, usize) {
    let limit = MAX_MATCH.min(input.len() - pos);
    let mut best_len = 0;
    let mut best_off = 0;
    let mut entry = head;
    while entry != 0 {
        let candidate = entry as usize - 1;
        let off = pos - candidate;
        if off >= WALK_LIMIT {
            break;
        }

        // Only a longer match counts, so a candidate that differs at byte `best_len` cannot
        // win; checking that byte first skips most candidates without a full comparison.
        // (PostgreSQL compares from the start; the chosen match is the same.)
        if best_len < limit && input[candidate + best_len] == input[pos + best_len] {
            let len = common_prefix(&input[candidate..], &input[pos..pos + limit]);
            if len > best_len {
                best_len = len;
                best_off = off;
            }
        }

        entry = hist_prev[candidate % HISTORY_SIZE];
        // Be content with shorter matches the farther down the list we go.
        if entry != 0 {
            if best_len >= good_match {
                break;
            }
            good_match -= good_match * good_drop / 100;
        }
    }
    (best_len, best_off)
}

/// Length of the common prefix of `a` and `b`; `a` must be at least as long as `b`.
#[inline(always)]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let a = &a[..b.len()];
    let mut chunks_a = a.chunks_exact(8);
    let mut chunks_b = b.chunks_exact(8);
    let mut len = 0;
    for (x, y) in (&mut chunks_a).zip(&mut chunks_b) {
        let diff = u64::from_le_bytes(x.try_into().unwrap()) ^ u64::from_le_bytes(y.try_into().unwrap());
        if diff != 0 {
            return len + (diff.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    len + chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Writes literals and tags with their control bits (`pglz_out_ctrl`, `pglz_out_literal`,
/// `pglz_out_tag`).
struct TagWriter {
    /// Output bytes written so far.
    bp: usize,
    /// Where the current control byte goes. Starts at 0 as a scratch slot: the first item
    /// "flushes" an empty control byte there before claiming the same slot for real, which is
    /// what PostgreSQL's `ctrl_dummy` does.
    ctrl_pos: usize,
    /// The control byte being assembled.
    ctrlb: u8,
    /// The bit of `ctrlb` for the next item; 0 when a new control byte is needed.
    ctrl: u8,
}

impl TagWriter {
    fn new() -> Self {
        TagWriter {
            bp: 0,
            ctrl_pos: 0,
            ctrlb: 0,
            ctrl: 0,
        }
    }

    #[inline(always)]
    fn next_item(&mut self, out: &mut [u8]) {
        if self.ctrl == 0 {
            out[self.ctrl_pos] = self.ctrlb;
            self.ctrl_pos = self.bp;
            self.bp += 1;
            self.ctrlb = 0;
            self.ctrl = 1;
        }
    }

    #[inline(always)]
    fn literal(&mut self, out: &mut [u8], byte: u8) {
        self.next_item(out);
        out[self.bp] = byte;
        self.bp += 1;
        self.ctrl <<= 1;
    }

    #[inline(always)]
    fn tag(&mut self, out: &mut [u8], len: usize, off: usize) {
        debug_assert!((MIN_MATCH..=MAX_MATCH).contains(&len) && (1..WALK_LIMIT).contains(&off));
        self.next_item(out);
        self.ctrlb |= self.ctrl;
        self.ctrl <<= 1;
        let off_high = ((off & 0xf00) >> 4) as u8;
        if len > 17 {
            out[self.bp] = off_high | 0x0f;
            out[self.bp + 1] = off as u8;
            out[self.bp + 2] = (len - 18) as u8;
            self.bp += 3;
        } else {
            out[self.bp] = off_high | (len - 3) as u8;
            out[self.bp + 1] = off as u8;
            self.bp += 2;
        }
    }

    /// Stores the last control byte and returns the output length.
    fn finish(self, out: &mut [u8]) -> usize {
        out[self.ctrl_pos] = self.ctrlb;
        self.bp
    }
}
