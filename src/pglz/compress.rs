//! The pglz compressor: PostgreSQL 15's `pglz_compress`, match for match.
//!
//! See the module documentation of [`crate::pglz`] for the algorithm. The names follow
//! `pg_lzcompress.c` where a concept exists in both: `hist_start` (the newest position of each
//! hash list), `good_match`, `good_drop`, `result_max`, `ctrlb`.

use super::dict::SHARED_UNKNOWN;
use super::{PglzDictionary, Strategy, MAX_MATCH, MAX_OFFSET, MIN_MATCH};

/// Positions a history list can reach back to (`PGLZ_HISTORY_SIZE`). The ring of links to the
/// previous position with the same hash has this many slots.
const HISTORY_SIZE: usize = 4096;

/// Plain compression links the positions of this many at a time to their history lists,
/// ahead of the walks (see `Compressor::compress_plain`). At most 4096, so that a block's
/// links overwrite no slot of [`PLAIN_RING`] that a walk in the block still reads (those of
/// the 4094 positions before it). Measured on the 2 KiB slices of the 25 payload files (the
/// fastest of 60 passes each, against the rolling hash in blocks of 64): 64 positions 1.7 %
/// faster (median file), 256 3.4 %, 512 5.6 %, 1024 6.5 %, 2048 2.1 %, 4096 3.2 %; fewer
/// item loops are cut at a block's end, and a block of 1024 rarely links far past the
/// position where an input is given up.
const PLAIN_BLOCK: usize = 1024;

/// The block length while the refusal bound is counted (the recent inputs were mostly
/// refused): such inputs are usually given up part-way, and linking the rest of a block of
/// [`PLAIN_BLOCK`] first is wasted. Row sets, side by side with blocks of 1024 in one run:
/// user-agent rows (all refused) 26 % slower with 1024, Debian and fortunes 10 %.
const BOUND_BLOCK: usize = 64;

/// Positions whose buckets `link_block` hashes together, before linking them.
const HASH_CHUNK: usize = 64;

/// The ring of plain compression's links: the blocks being compressed and 4096 positions
/// before, which hold every candidate less than 4095 bytes back.
const PLAIN_RING: usize = 8192;

/// Longest input for which plain compression counts the positions that start unseen bytes
/// (to refuse early). The count hashes into a table of at most 32,768 slots
/// ([`SeenMarks`]); longer inputs fill so many of them that few positions still look unseen,
/// and the count would cost more than it saves (measured with 8192 slots: 8 KiB slices of a
/// JPEG, 0.7x C's speed with the count).
const UNSEEN_MAX_INPUT: usize = 4096;

/// Hash buckets for inputs of 1 KB and more (`PGLZ_MAX_HISTORY_LISTS`).
const MAX_HASH_SIZE: usize = 8192;

/// A candidate this many bytes back, or farther, ends the walk down a history list: PostgreSQL
/// stops at `thisoff >= 0x0fff`, so plain pglz never emits offset 4095.
const WALK_LIMIT: usize = 0x0fff;

/// With a dictionary the walk may use offset 4095 too (the decoder accepts it), so all of
/// [`super::DICT_WINDOW`] is reachable from the datum's first byte.
const DICT_WALK_LIMIT: usize = 0x1000;

/// Members of one class of the dictionary's lists (see `PglzDictionary`) whose bytes a walk
/// compares, at most. Most members are passed over without a comparison; this bounds the
/// rest on a dictionary with many near-copies of one string. Measured on the corpus rows
/// (datum encoder, stored bytes against comparing them all): 8 costs 0.14 % on the airport
/// CSV rows, 0.05 % on geonames, nothing elsewhere; 4 costs 0.22-1.4 % on four sets.
const MEMBER_COMPARES: usize = 8;

/// Hash buckets of a dictionary's index. The datum's own lists keep PostgreSQL's table sizes
/// (by input length); both use the same hash, each masked to its table.
///
/// 65,536 buckets (128 KB of `u16` per dictionary) for at most 4092 positions: most four-byte
/// strings that the dictionary lacks then find an empty list, and an empty list costs no walk
/// (and no mispredicted branch at its end). Measured on the corpus rows (300 encode passes,
/// user time): 8192 buckets 0.76 s (csv_airports) / 1.90 s (text_fortunes), 16,384
/// 0.66 / 1.80 s, 65,536 0.63 / 1.64 s, and 0.02-0.17 % fewer stored bytes.
pub(super) const DICT_HASH_SIZE: usize = 1 << DICT_HASH_BITS;
const DICT_HASH_BITS: u32 = 16;

/// A reusable pglz compressor: the history tables and the output buffer, kept between calls
/// so that compressing allocates nothing once the buffer has grown to the largest input (or
/// to the largest a caller keeps: [`Compressor::release_buffers_over`]).
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
    /// For each hash bucket, the newest input position with that hash, as a [`Self::base`]d
    /// entry (see there).
    hist_start: Box<[u32; MAX_HASH_SIZE]>,
    /// For input position `p`, at slot `p % HISTORY_SIZE`: the previous position with the
    /// same hash, as a based entry. A slot is overwritten 4096 positions later, by which time
    /// `p` is beyond [`WALK_LIMIT`] and no longer visited.
    hist_prev: Box<[u32; HISTORY_SIZE]>,
    /// Plain compression's links: for input position `p`, at slot `p % PLAIN_RING`, the
    /// previous position with the same hash, as a based entry.
    plain_prev: Box<[u32; PLAIN_RING]>,
    /// Plain compression's refusal bound: at `p`, how many positions before `p` start three
    /// bytes seen at no earlier position.
    unseen_before: Vec<u16>,
    /// The refusal bounds' marks of the three-byte strings an input has shown
    /// (`plain_may_fit`, `count_unseen`; see [`SeenMarks`]).
    seen: SeenMarks,
    /// Whether each of the last 32 plain compressions was refused (bit 0 the last), to
    /// decide whether counting for the refusal bound is likely to pay.
    recent_refusals: u32,
    /// Entries in the history tables are `base + position`. Each call starts with `base` past
    /// every entry of the calls before, so stale entries read as "none" (`entry < base`) and
    /// the tables need no clearing between calls, where PostgreSQL clears up to 16 KB per
    /// call. When `base` would overflow, the tables are cleared once and `base` restarts low.
    base: u32,
    /// `good_match` by walk step for the last strategy used.
    good_match: Box<GoodMatchSchedule>,
    /// Output buffer; grows to `input.len() + 4` (PostgreSQL's `PGLZ_MAX_OUTPUT`), never shrinks
    /// but is freed by [`Compressor::release_buffers_over`].
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

/// The output buffer for an input: `len` zero bytes, freshly allocated rather than grown in
/// place, so that for a large input the allocator hands over zeroed pages that only become
/// memory when pglz writes to them (a payload, or as much as it wrote before giving up),
/// where growing the old buffer wrote zeros over all of them.
fn zeroed_buffer(len: usize) -> Vec<u8> {
    vec![0; len]
}

/// Compresses `input` with `strategy` into a new vector; `None` when the strategy judges it not
/// worth compressing. Builds a [`Compressor`] per call: reuse one to compress many values.
pub fn compress(input: &[u8], strategy: &Strategy) -> Option<Vec<u8>> {
    Compressor::new()
        .compress(input, strategy)
        .map(<[u8]>::to_vec)
}

impl Compressor {
    /// A compressor with empty tables and no output buffer yet.
    pub fn new() -> Compressor {
        Compressor {
            hist_start: Box::new([0; MAX_HASH_SIZE]),
            hist_prev: Box::new([0; HISTORY_SIZE]),
            plain_prev: Box::new([0; PLAIN_RING]),
            unseen_before: Vec::new(),
            recent_refusals: 0,
            seen: SeenMarks::new(),
            base: 1,
            good_match: Box::new(GoodMatchSchedule::new(128, 10)),
            out: Vec::new(),
        }
    }

    /// Frees the buffers that grow with the input (the output buffer, the refusal bound's
    /// counts) if they are over `keep` bytes: they never shrink otherwise, so that after one
    /// large value they would stay as large for the compressor's life. Call it once a payload
    /// has been copied out.
    pub fn release_buffers_over(&mut self, keep: usize) {
        if self.out.len() > keep {
            self.out = Vec::new();
        }
        if self.unseen_before.len() * size_of::<u16>() > keep {
            self.unseen_before = Vec::new();
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

    /// Compresses `input` as if `dict` came just before it, so that matches can reach into the
    /// dictionary ([`decompress_with_dict`](super::decompress_with_dict) decodes it). The
    /// dictionary's index is only read: preparing it is [`PglzDictionary::new`]'s job, once.
    ///
    /// The strategy is applied as for plain compression; [`Strategy::DICTIONARY`] suits small
    /// datums. Returns `None` when the strategy judges the result not worth it.
    pub fn compress_with_dict(
        &mut self,
        input: &[u8],
        dict: &PglzDictionary,
        strategy: &Strategy,
    ) -> Option<&[u8]> {
        let len = self.compress_dict(input, dict, strategy)?;
        Some(&self.out[..len])
    }

    /// Whether plain pglz could compress `input` into a payload of at most `max_payload`
    /// bytes, with any strategy. `false` is a proof that it cannot, so a caller that only
    /// wants a payload of that size may skip the attempt; `true` promises nothing.
    ///
    /// The proof: every byte a match covers, except the last two of each match, starts three
    /// bytes that also start at an earlier position (the match's source, shifted by the same
    /// amount). So if `r` positions start three bytes seen at an earlier position, matches
    /// cover at most `r + 2 * m` bytes for `m` matches, and each match costs at least 2 bytes
    /// of tag: the payload holds at least `u = input.len() - r` bytes of literals and tags,
    /// as `l + 2 * m >= u` for `l` literals. Then there are `l + m >= u / 2` items, and a
    /// control byte for every eight: at least `u + ceil(u / 16)` bytes in all, and at least
    /// one control byte. Here `r` is counted with a hashed table, so collisions can only
    /// count too many positions, which weakens the bound but keeps it true. Counting costs
    /// about six instructions per position, and stops as soon as the bound exceeds
    /// `max_payload`; a compression attempt costs several times more. (Datum encoder on the
    /// CSV airport rows, callgrind: about 630 instructions per row of 107 bytes here, 750
    /// before the count read each key with one load and marked every slot with the same
    /// entry.)
    ///
    /// When the count cannot rule the attempt out, the attempt itself gives up as soon as it
    /// is sure to lose. A second, tighter bound for inputs of 2 KB or more (the cheapest parse
    /// that the repeated three- and four-byte strings allow, about 50 instructions a byte)
    /// was removed when timed side by side in one process: the datum encoder was 7.6 %
    /// faster without it on the HTML rows, 6.4 % on GSoC, 4.7 % on Debian, 3.2 % on MDN.
    pub fn plain_may_fit(&mut self, input: &[u8], max_payload: usize) -> bool {
        let n = input.len();
        // The most unseen positions a payload of `max_payload` bytes allows (see above): the
        // largest `u` with `u + max(1, ceil(u / 16)) <= max_payload`, as `u + ceil(u / 16)`
        // is `ceil(17 * u / 16)`: `floor(16 * max_payload / 17)`.
        if max_payload == 0 {
            return false;
        }
        let budget = max_payload - max_payload.div_ceil(17);
        // The last two positions start no three bytes: they always count.
        let mut unseen = n.min(2);
        if unseen > budget {
            return false;
        }
        if n < 3 {
            return true;
        }
        // Slots of one byte, 2 bits more than the base size: 4 KB for a 107-byte row, as
        // many bytes as the base size took in `hist_start`, for 4 times the slots. Fewer
        // collisions end the count sooner, and the table stays small in the cache after
        // the dictionary pass. Timed side by side in one process (datum encoder, 200
        // rounds), against the base size in `hist_start`'s 4-byte entries: 0.6-2.3 % faster
        // on the eight row sets (median of the per-round ratios, none below 1, an Intel
        // Xeon); on the airport and fortune rows, the base size in bytes was 0.99-1.00x, 3
        // bits more 1.00-1.01x. (All of `hist_start`, 32 KB, was 1.5-4.6 % slower than the
        // base size on an AMD EPYC, whose L1 data cache it fills.)
        //
        // Every position marks its slot with this call's epoch, so a position looked at
        // twice counts once: the last group below may overlap the one before it.
        let bits = seen_table_bits(n, MAY_FIT_EXTRA_BITS);
        let marks = &mut self.seen;
        marks.next_epoch();
        // Counted without a branch: whether a position repeats is as good as random.
        let mut mark = |key: u32| usize::from(!marks.mark(key, bits));
        // Positions with four bytes left read their three as a word (the fourth byte is
        // ignored, see `seen_slot`), in groups of `GROUP` with one check of the budget per
        // group: the count only grows, so checking less often only stops a little later,
        // with the same answer.
        const GROUP: usize = 8;
        let four_end = n - 3;
        // The key of the position with three bytes left.
        let last = if four_end >= GROUP {
            let mut pos = 0;
            while pos < four_end {
                // The last group ends at `four_end`, overlapping the one before.
                let start = pos.min(four_end - GROUP);
                let bytes: &[u8; GROUP + 3] = input[start..start + GROUP + 3].try_into().unwrap();
                for k in 0..GROUP {
                    let word: &[u8; 4] = bytes[k..k + 4].try_into().unwrap();
                    unseen += mark(u32::from_le_bytes(*word));
                }
                pos = start + GROUP;
                if unseen > budget {
                    return false;
                }
            }
            let word: &[u8; 4] = input[n - 4..].try_into().unwrap();
            u32::from_le_bytes(*word) >> 8
        } else {
            for window in input.windows(4) {
                unseen += mark(u32::from_le_bytes(window.try_into().unwrap()));
            }
            let [a, b, c] = input[four_end..].try_into().unwrap();
            u32::from_le_bytes([a, b, c, 0])
        };
        unseen += mark(last);
        unseen <= budget
    }

    /// Reserves history entries `base..base + len` for one call (see [`Self::base`]) and
    /// returns the first; clears the tables when the entries would overflow.
    fn claim(&mut self, len: usize) -> u32 {
        self.claim_from(self.base, len)
    }

    /// [`Self::claim`] with a first entry that is a multiple of [`PLAIN_RING`], so that an
    /// entry's slot in `plain_prev` is the entry itself modulo the ring: a walk down a list
    /// then masks each link to find the next (one operation on the chain of dependent
    /// loads) rather than subtracting `base` first.
    fn claim_ring_aligned(&mut self, len: usize) -> u32 {
        let aligned = self.base.checked_next_multiple_of(PLAIN_RING as u32);
        // No multiple left below u32::MAX: claim_from clears the tables.
        self.claim_from(aligned.unwrap_or(u32::MAX), len)
    }

    /// Reserves `base..base + len` (`base` at least [`Self::base`]), or clears the tables and
    /// starts again low when those entries would reach `u32::MAX`.
    fn claim_from(&mut self, base: u32, len: usize) -> u32 {
        let base = if u64::from(base) + len as u64 >= u64::from(u32::MAX) {
            self.hist_start.fill(0);
            self.hist_prev.fill(0);
            self.plain_prev.fill(0);
            // A multiple of PLAIN_RING above 0, which stays the entry for "none".
            PLAIN_RING as u32
        } else {
            base
        };
        self.base = base + len as u32;
        base
    }

    fn compress_to_buffer(&mut self, input: &[u8], strategy: &Strategy) -> Option<usize> {
        self.compress_plain(input, strategy)
    }

    /// Plain compression (no dictionary), PostgreSQL's `pglz_compress` match for match.
    ///
    /// PostgreSQL's algorithm ([`walk_exact`] is its match search as written), organised
    /// differently:
    ///
    /// - **History lists built ahead.** PostgreSQL adds every input position to the history
    ///   exactly once, in order, whatever the matches, so the list a position walks (all
    ///   earlier positions with its hash, newest first) does not depend on the matches. The
    ///   links are computed for a block of [`PLAIN_BLOCK`] positions at a time in a tight
    ///   loop, and a match skips its bytes without touching the history.
    /// - **Refusal proved early.** Every byte a match covers, except its last two, starts
    ///   three bytes that also start at an earlier position; a match costs at least 2
    ///   output bytes and a literal 1. So the bytes still to write are at least the number
    ///   of positions ahead whose three bytes appear nowhere before them (counted once per
    ///   call by [`Self::count_unseen`], collisions only lowering the count). When the output
    ///   so far plus that reaches `result_max`, PostgreSQL's result would be refused: stop.
    /// - **A faster walk** for positions with four bytes left ([`walk_four`]), when the
    ///   strategy's `good_match` never falls below 3 (both built-in strategies): a candidate
    ///   agreeing on three bytes agrees on four (the hash's low eight bits are the fourth
    ///   byte XORed with bits of the first three, and every table has at least 512 buckets),
    ///   so one 4-byte comparison tells a match from a non-match; matches under three bytes
    ///   are never used and, with such a schedule, cannot end the walk either. Once a match of
    ///   `best_len` bytes is known, a candidate must agree on bytes `best_len - 3 ..=
    ///   best_len` to be longer, which one 4-byte comparison tests first.
    ///
    /// The first-found longest match wins and the walk stops where PostgreSQL's does, so the
    /// output is the same.
    fn compress_plain(&mut self, input: &[u8], strategy: &Strategy) -> Option<usize> {
        // Counting the unseen positions costs a pass over the input, which pays only when
        // inputs are refused: do it while at least half of the last 32 were.
        let bound = self.recent_refusals.count_ones() >= 16 && input.len() <= UNSEEN_MAX_INPUT;
        let result = self.limits(input, strategy).and_then(|limits| {
            // Inputs shorter than the walk limit need no cut-off by offset. Each case is
            // compiled on its own, so that the item loop tests none of these per item.
            let long = input.len() >= WALK_LIMIT;
            let fast = self.good_match.floor >= MIN_MATCH;
            match (long, bound, fast) {
                (false, false, true) => {
                    self.compress_plain_with::<false, false, true>(input, limits)
                }
                (false, true, true) => self.compress_plain_with::<false, true, true>(input, limits),
                (true, false, true) => self.compress_plain_with::<true, false, true>(input, limits),
                (true, true, true) => self.compress_plain_with::<true, true, true>(input, limits),
                (false, false, false) => {
                    self.compress_plain_with::<false, false, false>(input, limits)
                }
                (false, true, false) => {
                    self.compress_plain_with::<false, true, false>(input, limits)
                }
                (true, false, false) => {
                    self.compress_plain_with::<true, false, false>(input, limits)
                }
                (true, true, false) => self.compress_plain_with::<true, true, false>(input, limits),
            }
        });
        self.recent_refusals = self.recent_refusals << 1 | u32::from(result.is_none());
        result
    }

    /// [`Self::compress_plain`] for an input of at least [`WALK_LIMIT`] bytes (`LONG`), with
    /// or without the refusal bound (`BOUND`), for a schedule whose `good_match` stays at 3 or
    /// more (`FAST`) or any other.
    fn compress_plain_with<const LONG: bool, const BOUND: bool, const FAST: bool>(
        &mut self,
        input: &[u8],
        limits: Limits,
    ) -> Option<usize> {
        let Limits {
            result_max,
            before_first_match,
            mask,
        } = limits;
        // Output reaching `limit` gives up: `before_first_match`, raised to `result_max` at
        // the first match.
        let mut limit = before_first_match;
        let n = input.len();

        // The refusal bound: `unseen_before[p]` positions before p start three bytes not seen
        // before them, of `unseen` in all; the output so far plus the unseen positions ahead
        // is a lower bound of the final output.
        let unseen = if BOUND { self.count_unseen(input) } else { 0 };
        if unseen >= result_max {
            // The bound at the first position: nothing to link or walk.
            return None;
        }
        let base = self.claim_ring_aligned(n);
        let unseen_before = &self.unseen_before[..];
        let out_len = n + 4;
        if self.out.len() < out_len {
            self.out = zeroed_buffer(out_len);
        }
        let out = &mut self.out[..out_len];
        let head = &mut *self.hist_start;
        let prev = &mut *self.plain_prev;
        let schedule = &*self.good_match;
        let mut writer = TagWriter::<false>::new();

        // Positions below `body_end` hash four bytes, the last three one byte.
        let body_end = n.saturating_sub(3);
        let mut dp = 0;
        let mut block_start = 0;
        while dp < n {
            // Link the positions of the next block to their lists. The walks of this block
            // reach back at most 4094 positions, into the blocks before, whose links the
            // ring still holds (see `PLAIN_BLOCK`).
            let block_len = if BOUND { BOUND_BLOCK } else { PLAIN_BLOCK };
            let block_end = (block_start + block_len).min(n);
            link_block(input, block_start, block_end, mask, base, head, prev);
            block_start = block_end;

            while dp < block_end {
                if writer.bp >= limit {
                    return None;
                }
                if BOUND && writer.bp + unseen >= result_max + usize::from(unseen_before[dp]) {
                    return None;
                }
                let entry = prev[dp % PLAIN_RING];
                // Entries from `cut` on are this call's positions less than 4095 bytes back
                // (in a short input, all of them).
                let cut = if LONG {
                    base + dp.saturating_sub(WALK_LIMIT - 1) as u32
                } else {
                    base
                };
                let (match_len, match_off) = if entry < cut {
                    (0, 0)
                } else if FAST && dp < body_end {
                    walk_four(input, dp, entry - base, prev, base, cut, schedule)
                } else {
                    walk_exact(input, dp, entry - base, prev, base, cut, schedule)
                };
                if match_len >= MIN_MATCH {
                    writer.checked_tag(out, match_len, match_off);
                    limit = result_max;
                    dp += match_len;
                } else {
                    writer.checked_literal(out, input[dp]);
                    dp += 1;
                }
            }
        }

        let result_size = writer.finish(out);
        (result_size < result_max).then_some(result_size)
    }

    /// Counts the positions of `input` whose three bytes start at no earlier position (the
    /// last two positions count too): `unseen_before[p]` of them before position `p`, for
    /// `p` in `0..=input.len()` (see [`Self::compress_plain`]). Returns the total. A hashed
    /// table stands for "seen": a collision can only make a position look seen, which lowers
    /// the counts of what lies ahead.
    fn count_unseen(&mut self, input: &[u8]) -> usize {
        debug_assert!(input.len() <= UNSEEN_MAX_INPUT);
        let n = input.len();
        // Slots of one byte, 3 bits more than the base size (64 to 128 per input byte from 64
        // to 512 bytes, at most 32 KB): a collision makes a position look seen, so fewer
        // collisions refuse sooner. Timed side by side in one process (plain compression of the
        // even rows, default strategy, 300 rounds, Intel Xeon), against the base size in
        // `hist_start`'s 4-byte entries, as before: 1.25x on the user-agent rows (all refused),
        // 1.14x on Debian, 1.10x on fortunes, geonames and the airport rows, 1.04x on HTML,
        // level on GSoC and MDN; on 2 KiB slices of the payload files (`vs_postgres`'s), 1.17x
        // on a JPEG, 1.14x on a PDF, level on six others. Bits more, on four row sets: 0,
        // 1.05-1.08x; 1, 1.08-1.15x; 2, 1.09-1.20x; 4, 1.08-1.33x; 5, 1.09-1.36x (past 3 bits
        // only the user agents gain, with 16-32 KB of table for a row).
        let bits = seen_table_bits(n, COUNT_EXTRA_BITS);
        let marks = &mut self.seen;
        marks.next_epoch();
        // Every count is written below: only grow the buffer.
        if self.unseen_before.len() <= n {
            self.unseen_before.resize(n + 1, 0);
        }
        let counts = &mut self.unseen_before[..=n];
        let mut unseen = 0;
        let mut seen = |key: u32| marks.mark(key, bits);
        // Positions with four bytes left: their first three, read as one word.
        for (window, count) in input.windows(4).zip(counts.iter_mut()) {
            *count = unseen as u16;
            let key = u32::from_le_bytes(window.try_into().unwrap());
            // Counted without a branch: whether a position repeats is as good as random.
            unseen += usize::from(!seen(key));
        }
        // Then the position with three bytes left, and the last two, which start none.
        let tail = n.saturating_sub(3);
        for (p, count) in counts.iter_mut().enumerate().take(n).skip(tail) {
            *count = unseen as u16;
            let unseen_here = match input.get(p..p + 3) {
                Some(&[a, b, c]) => !seen(u32::from(a) | u32::from(b) << 8 | u32::from(c) << 16),
                _ => true,
            };
            unseen += usize::from(unseen_here);
        }
        counts[n] = unseen as u16;
        unseen
    }

    /// What `strategy` asks of a call on `input`, as PostgreSQL's `pglz_compress` works it out
    /// before its loop; `None` when the strategy refuses the input outright. Also readies
    /// the `good_match` schedule.
    // Inlined into both compressors: a short datum pays for the call. Together with the datum
    // encoder's `Best::offer` inlined, timed side by side in one process (datum encoder, 300
    // rounds): 2.3-2.5 % faster per CSV airport datum, 0.3-0.8 % per fortune.
    #[inline]
    fn limits(&mut self, input: &[u8], strategy: &Strategy) -> Option<Limits> {
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
        if self.good_match.key != (good_match, good_drop) {
            *self.good_match = GoodMatchSchedule::new(good_match, good_drop);
        }
        let result_max = strategy.result_max(slen);

        // PostgreSQL sizes the hash table by input length: a small table is cheap to clear
        // for short inputs, a large one avoids collisions for long ones.
        let hash_size = match slen {
            0..=127 => 512,
            128..=255 => 1024,
            256..=511 => 2048,
            512..=1023 => 4096,
            _ => MAX_HASH_SIZE,
        };
        // Both of PostgreSQL's give-up checks at the top of its loop (output reached
        // `result_max`; no match yet and output reached `first_success_by`) as one limit.
        let first_success_by = usize::try_from(strategy.first_success_by).unwrap_or(0);
        Some(Limits {
            result_max,
            before_first_match: result_max.min(first_success_by),
            mask: hash_size - 1,
        })
    }

    /// Dictionary-mode compression: PostgreSQL's loop, with the dictionary's lists continuing
    /// each of the datum's (see [`History::find_match`]).
    fn compress_dict(
        &mut self,
        input: &[u8],
        dict: &PglzDictionary,
        strategy: &Strategy,
    ) -> Option<usize> {
        let Limits {
            result_max,
            before_first_match,
            mask,
        } = self.limits(input, strategy)?;
        // The mask is below MAX_HASH_SIZE; masked again, the compiler knows it too and drops
        // `History`'s reduction of each bucket index.
        let mask = mask & (MAX_HASH_SIZE - 1);
        // Output reaching `limit` gives up: `before_first_match`, raised to `result_max` at
        // the first match. Both are at most the input's length (the writes below rely on
        // it).
        let mut limit = before_first_match;
        assert!(before_first_match <= result_max && result_max <= input.len());

        // Claim entries base..base + slen for this call's positions (see `base`).
        let base = self.claim(input.len());
        let hist = History {
            start: &mut self.hist_start,
            prev: &mut self.hist_prev,
            base,
            dict,
        };

        let out_len = input.len() + 4;
        if self.out.len() < out_len {
            self.out = zeroed_buffer(out_len);
        }
        let out = &mut self.out[..out_len];

        let schedule = &self.good_match;
        let mut hist = hist;
        let mut writer = TagWriter::<true>::new();
        let mut dp = 0;
        while dp < input.len() {
            // Checked once per item; an item writes at most 4 bytes (control byte and a
            // 3-byte tag), which is why the buffer has 4 bytes of slack.
            if writer.bp >= limit {
                return None;
            }

            // With a dictionary the datum's lists keep PostgreSQL's small tables for short
            // inputs (cheap to touch), while the dictionary's index has DICT_HASH_SIZE
            // buckets: the same hash (dictionary mode's own, `dict_hash`), masked for each.
            let dict_bucket = dict_hash(input, dp);
            let hash = dict_bucket & mask;
            // The head of the datum's own list, read once: it tells whether the list holds a
            // position, and becomes the link of `dp` when `dp` joins the list below.
            let own = hist.head(hash);
            // The dictionary's list for this position, as a range of its classes.
            let dict_list = hist.dict_list(dict_bucket);
            // Most positions have no candidate in either list (75-90 % on the corpus rows):
            // those stay in this loop, which keeps its values in registers; the walk is a
            // call of its own. So is the commonest case with candidates, an empty own list and
            // one class in the dictionary's (13 of a fortune row's 30 walks), whose key
            // measures the match without the call (`one_class`).
            let (match_len, match_off) = if own >= hist.base || dict_list.len() > 1 {
                if dict_list.is_empty() {
                    hist.one_own(input, dp, own)
                        .unwrap_or_else(|| hist.find_match(input, dp, hash, dict_bucket, schedule))
                } else {
                    hist.find_match(input, dp, hash, dict_bucket, schedule)
                }
            } else if dict_list.len() == 1 {
                hist.one_class(input, dp, dict_list.start)
                    .unwrap_or_else(|| hist.find_match(input, dp, hash, dict_bucket, schedule))
            } else {
                (0, 0)
            };
            // PostgreSQL adds every byte a match covers to the history. With a dictionary
            // pgdict adds only the match's first byte: the dictionary already holds the text
            // such bytes would offer, so this costs about 1 % of the ratio on the corpus rows
            // and saves a hash and a list insertion per matched byte.
            hist.add_with_head(dp, hash, own);
            // SAFETY (both calls): `bp < limit <= result_max <= input.len()` (checked at the
            // top of the loop), and `out` has `input.len() + 4` bytes.
            if match_len >= MIN_MATCH {
                unsafe { writer.tag(out, match_len, match_off) };
                dp += match_len;
                limit = result_max;
            } else {
                unsafe { writer.literal(out, input[dp]) };
                dp += 1;
            }
        }

        let result_size = writer.finish(out);
        (result_size < result_max).then_some(result_size)
    }
}

/// Bits of the [`SeenMarks`] table that marks the three-byte strings an input of `n` bytes
/// has shown so far: 8 slots per byte rounded up to a power of two (at least 512 and at most
/// 8192: those once were the buckets of `hist_start`, where the marks were kept), then
/// `extra` bits more, up to all of the table.
fn seen_table_bits(n: usize, extra: u32) -> u32 {
    let bits = (usize::BITS - n.max(2).saturating_sub(1).leading_zeros() + 3).clamp(9, 13);
    (bits + extra).min(SEEN_BITS)
}

/// [`seen_table_bits`]'s `extra` for [`Compressor::plain_may_fit`] and
/// `Compressor::count_unseen` (see each for the measurements).
const MAY_FIT_EXTRA_BITS: u32 = 2;
const COUNT_EXTRA_BITS: u32 = 3;

/// [`SeenMarks`] has `1 << SEEN_BITS` slots of one byte (32 KB).
const SEEN_BITS: u32 = 15;
const SEEN_SLOTS: usize = 1 << SEEN_BITS;

/// A table of "seen" marks that needs no clearing between calls: a call marks a slot with
/// its epoch, and a slot holding any other value is unmarked. After 255 epochs the table is
/// cleared and the epochs start again. (A stale mark that read as this call's would only
/// make a position look seen, which weakens the bounds counted with it without making them
/// false; the clearing keeps them as strong as the hash allows.) `plain_may_fit` and
/// `count_unseen` share it, each call taking an epoch of its own.
struct SeenMarks {
    slots: Box<[u8; SEEN_SLOTS]>,
    epoch: u8,
}

impl SeenMarks {
    fn new() -> SeenMarks {
        SeenMarks {
            slots: Box::new([0; SEEN_SLOTS]),
            epoch: 0,
        }
    }

    /// Starts a new call: an epoch that no earlier call since the last clearing marked with.
    fn next_epoch(&mut self) {
        self.epoch = match self.epoch.checked_add(1) {
            Some(epoch) => epoch,
            None => {
                self.slots.fill(0);
                1
            }
        };
    }

    /// Marks the slot of three bytes `key` (see [`seen_slot`]) in a table of `bits` bits for
    /// this call; returns whether this call had marked it already.
    #[inline(always)]
    fn mark(&mut self, key: u32, bits: u32) -> bool {
        let slot = &mut self.slots[seen_slot(key, bits) % SEEN_SLOTS];
        let seen = *slot == self.epoch;
        *slot = self.epoch;
        seen
    }
}

/// The slot of three bytes `key` (little-endian; the top byte is ignored) in that table.
/// The multiplier is a multiple of 256, so the top byte never reaches the product's bits:
/// callers need not clear it.
#[inline(always)]
fn seen_slot(key: u32, bits: u32) -> usize {
    (key.wrapping_mul(0x3779_b100) >> (32 - bits)) as usize
}

/// The limits a strategy sets for one call (see `Compressor::limits`).
struct Limits {
    /// The largest payload the strategy accepts (PostgreSQL's `result_max`).
    result_max: usize,
    /// The output size at which to give up while no match has been found: the smaller of
    /// `result_max` and the strategy's `first_success_by` (PostgreSQL's two checks in one).
    before_first_match: usize,
    /// Mask of the hash table size PostgreSQL uses for this input length.
    mask: usize,
}

/// The history bucket for position `pos`: a hash of the next four bytes, or of the byte alone
/// in the last three positions (`pglz_hist_idx`). Always below `mask + 1` <= 8192.
///
/// Bytes are sign-extended, as PostgreSQL reads them through `char`, signed on x86_64. Without
/// the sign extension bytes 0x80..=0xff land in other buckets and the output differs.
#[inline(always)]
fn hist_idx(input: &[u8], pos: usize, mask: usize) -> usize {
    let hash = match input.get(pos..pos + 4) {
        Some(&[b0, b1, b2, b3]) => pg_hash4(b0, b1, b2, b3),
        _ => i16::from(input[pos] as i8) as u16,
    };
    usize::from(hash) & mask
}

/// PostgreSQL's hash of four bytes, unmasked, in 16 bits: the shifted bytes lie within
/// -8192..=8128, so these hold every bit that a mask of up to 8191 keeps (and 16-bit lanes
/// let `link_block`'s loop hash eight positions per vector instruction).
#[inline(always)]
fn pg_hash4(b0: u8, b1: u8, b2: u8, b3: u8) -> u16 {
    let signed = |b: u8| i16::from(b as i8);
    ((signed(b0) << 6) ^ (signed(b1) << 4) ^ (signed(b2) << 2) ^ signed(b3)) as u16
}

/// The 4 bytes at `pos`, for comparisons.
#[inline(always)]
fn four(input: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(input[pos..pos + 4].try_into().unwrap())
}

/// Links positions `block_start..block_end` of `input` to their history lists in `prev`
/// (`plain_prev`), with PostgreSQL's hash masked by `mask`. Kept out of line: the item loop
/// that calls it once per block keeps more of its own state in registers.
///
/// For each [`HASH_CHUNK`] positions, the buckets come first, each hashed from its own four
/// bytes in a loop that the compiler vectorizes, then the links, a load and two stores per
/// position. (Rolling the hash from one position to the next inside the link loop costs 13
/// instructions per position against about 9 here; see `PLAIN_BLOCK` for the time.) The
/// chunks are short so that the next chunk's hashes overlap with this chunk's links, which
/// wait on each other when positions share a bucket (runs of a byte: on the pgbench heap
/// pages, 6-12 % faster than hashing a whole block first).
#[inline(never)]
fn link_block(
    input: &[u8],
    block_start: usize,
    block_end: usize,
    mask: usize,
    base: u32,
    head: &mut [u32; MAX_HASH_SIZE],
    prev: &mut [u32; PLAIN_RING],
) {
    // Positions below `body_end` hash four bytes, the last three one byte.
    let body_end = input.len().saturating_sub(3);
    let mut chunk_start = block_start;
    while chunk_start < block_end {
        let chunk_end = (chunk_start + HASH_CHUNK).min(block_end);
        let mut buckets = [0u16; HASH_CHUNK];
        let buckets = &mut buckets[..chunk_end - chunk_start];
        let four_end = body_end.clamp(chunk_start, chunk_end);
        let (body, tail) = buckets.split_at_mut(four_end - chunk_start);
        if !body.is_empty() {
            let bytes = &input[chunk_start..four_end + 3];
            let quads = bytes
                .iter()
                .zip(&bytes[1..])
                .zip(&bytes[2..])
                .zip(&bytes[3..]);
            for (bucket, (((&b0, &b1), &b2), &b3)) in body.iter_mut().zip(quads) {
                *bucket = pg_hash4(b0, b1, b2, b3) & mask as u16;
            }
        }
        for (bucket, p) in tail.iter_mut().zip(four_end..) {
            *bucket = hist_idx(input, p, mask) as u16;
        }
        // A chunk's slots are contiguous in the ring (HASH_CHUNK divides PLAIN_RING).
        let first = chunk_start % PLAIN_RING;
        let links = &mut prev[first..first + buckets.len()];
        let entries = base + chunk_start as u32..;
        for ((link, &bucket), entry) in links.iter_mut().zip(buckets.iter()).zip(entries) {
            let bucket = usize::from(bucket) % MAX_HASH_SIZE;
            *link = head[bucket];
            head[bucket] = entry;
        }
        chunk_start = chunk_end;
    }
}

/// `pglz_find_match` for a position `pos` with four bytes left, starting at candidate
/// `first` (a position of this call, less than 4095 bytes back), in plain mode with a
/// schedule whose `good_match` stays at 3 or more. See [`Compressor::compress_plain`] for why
/// the result is PostgreSQL's. Returns `(length, offset)`; length 0 when nothing matches
/// three bytes.
#[inline(always)]
fn walk_four(
    input: &[u8],
    pos: usize,
    first: u32,
    prev: &[u32; PLAIN_RING],
    base: u32,
    cut: u32,
    schedule: &GoodMatchSchedule,
) -> (usize, usize) {
    let current = &input[pos..input.len().min(pos + MAX_MATCH)];
    let max_len = current.len();
    let mut best_len = 0;
    let mut best_off = 0;
    // Where a candidate must agree with `current` to beat `best_len`, and on what.
    let mut probe = 0;
    let mut want = four(current, 0);
    // The walk ends after this step (none while nothing of 3 bytes or more is found).
    let mut stop = usize::MAX;
    let mut step = 0;
    let mut entry = base + first;
    loop {
        let candidate = (entry - base) as usize;
        // `probe + 4 <= max_len`: `best_len < max_len`, and the candidate is before `pos`.
        if four(input, candidate + probe) == want {
            let len = common_prefix(&input[candidate..], current);
            if len > best_len {
                best_len = len;
                best_off = pos - candidate;
                if len == max_len {
                    break;
                }
                stop = schedule.stop_step(len);
                probe = len - 3;
                want = four(current, probe);
            }
        }
        // `base` is a multiple of the ring's size (`claim_ring_aligned`).
        let next = prev[entry as usize % PLAIN_RING];
        if next < cut || step >= stop {
            break;
        }
        step += 1;
        entry = next;
    }
    (best_len, best_off)
}

/// `pglz_find_match` as PostgreSQL writes it, for any position and schedule, starting at
/// candidate `first` (a position of this call, less than 4095 bytes back; later entries are
/// valid from `cut` on). Returns `(length, offset)` of the longest match, the first found
/// among equals; a length under [`MIN_MATCH`] means none.
#[inline(never)]
fn walk_exact(
    input: &[u8],
    pos: usize,
    first: u32,
    prev: &[u32; PLAIN_RING],
    base: u32,
    cut: u32,
    schedule: &GoodMatchSchedule,
) -> (usize, usize) {
    let current = &input[pos..input.len().min(pos + MAX_MATCH)];
    let mut best_len = 0;
    let mut best_off = 0;
    let mut step = 0;
    let mut candidate = first as usize;
    loop {
        let len = common_prefix(&input[candidate..], current);
        if len > best_len {
            best_len = len;
            best_off = pos - candidate;
        }
        let next = prev[candidate % PLAIN_RING];
        // PostgreSQL lowers `good_match` only when there is a next entry.
        if next < cut || best_len >= schedule.at(step) {
            break;
        }
        step += 1;
        candidate = (next - base) as usize;
    }
    (best_len, best_off)
}

/// The hash of dictionary mode, below [`DICT_HASH_SIZE`]: of the four bytes at `bytes[..4]`.
///
/// Dictionary-mode output need not match PostgreSQL's, so it does not use PostgreSQL's hash,
/// which folds four bytes of text into far fewer buckets than it has (the shifted bytes
/// overlap): many candidates on a list then do not even share their first bytes, and each
/// costs a step of the walk. A multiplicative hash spreads them.
#[inline(always)]
pub(super) fn hash4(bytes: &[u8]) -> usize {
    let word = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    (word.wrapping_mul(0x9e37_79b1) >> (32 - DICT_HASH_BITS)) as usize
}

/// [`hash4`] of input position `pos`, or (in the last three positions, which no four-byte
/// list holds) of the byte alone.
#[inline(always)]
fn dict_hash(input: &[u8], pos: usize) -> usize {
    match input.get(pos..pos + 4) {
        Some(four) => hash4(four),
        None => usize::from(input[pos]),
    }
}

/// What [`History::by_keys`] tells of a dictionary list.
enum Quick {
    /// Every class has eight bytes left and lies within reach, and none matches all eight:
    /// the longest match among them, and its offset (the first of equals).
    Longest(usize, usize),
    /// As `Longest`, but the class at this index of the list matches all eight bytes.
    Eight(usize),
    /// Not known from the keys: the list must be walked.
    Walk,
}

/// The history lists of one call (`hist_start` and the links between entries), and in
/// dictionary mode the dictionary's own lists, which continue each of the datum's.
struct History<'a> {
    start: &'a mut [u32; MAX_HASH_SIZE],
    prev: &'a mut [u32; HISTORY_SIZE],
    /// Entries below this belong to earlier calls and mean "none".
    base: u32,
    dict: &'a PglzDictionary,
}

impl History<'_> {
    /// The newest entry of history list `hash` (below [`Self::base`]: none).
    #[inline(always)]
    fn head(&self, hash: usize) -> u32 {
        self.start[hash % MAX_HASH_SIZE]
    }

    /// Puts position `pos` at the head of history list `hash` (`pglz_hist_add`), whose head
    /// [`Self::head`] read as `head`.
    #[inline(always)]
    fn add_with_head(&mut self, pos: usize, hash: usize, head: u32) {
        self.prev[pos % HISTORY_SIZE] = head;
        // `base + pos` fits: `compress_dict` reserved base..base + input length.
        self.start[hash % MAX_HASH_SIZE] = self.base + pos as u32;
    }

    /// The dictionary's list `dict_bucket`: indices of `PglzDictionary::classes`.
    #[inline(always)]
    fn dict_list(&self, dict_bucket: usize) -> std::ops::Range<usize> {
        let bucket = dict_bucket % DICT_HASH_SIZE;
        usize::from(self.dict.list_start[bucket])..usize::from(self.dict.list_start[bucket + 1])
    }

    /// [`Self::find_match`] at `pos` when the dictionary's list is empty and the datum's own
    /// list is the one position that entry `own` (its head) names, or `None` when the list
    /// holds more or that position needs the walk (it lies out of reach, it matches all
    /// eight bytes compared here, or the datum has fewer than eight left).
    ///
    /// The walk would compare that position and stop, as no entry follows: one comparison of
    /// eight bytes measures the match. As the walk's, the offset means nothing for a match
    /// under [`MIN_MATCH`] bytes. Most of the datum's non-empty lists are of this kind, and
    /// most of their positions share only the hash (on the CSV airport rows, 2.6 such lists a
    /// row, while a row takes 1.2 matches from its own bytes in all; counted with temporary
    /// counters). Timed side by side in one process (datum encoder, 200 rounds): 0.4-1.4 %
    /// faster per datum on the eight row sets (airports 1.1 %, fortunes 1.3 %, geonames 1.4 %;
    /// none slower).
    #[inline(always)]
    fn one_own(&self, input: &[u8], pos: usize, own: u32) -> Option<(usize, usize)> {
        let candidate = (own - self.base) as usize;
        let off = pos - candidate;
        // Out of reach, the walk's end; within reach, the position's link is still its own.
        if off >= DICT_WALK_LIMIT || self.prev[candidate % HISTORY_SIZE] >= self.base {
            return None;
        }
        let word = u64::from_le_bytes(input.get(pos..pos + 8)?.try_into().unwrap());
        let earlier = u64::from_le_bytes(input[candidate..candidate + 8].try_into().unwrap());
        match word ^ earlier {
            0 => None,
            diff => Some((agreeing_bytes(diff), off)),
        }
    }

    /// [`Self::find_match`] at `pos` when the datum's own list is empty and the dictionary's
    /// list is the one class `class`, or `None` when that class needs the walk (it lies out
    /// of reach or has fewer than eight bytes left, or the datum has fewer than eight).
    ///
    /// The walk would measure the class by its key (`by_keys`, or for a schedule under 8 the
    /// same comparison of eight bytes) and stop there unless all eight match; then the class
    /// and its members decide (`class_and_members`). As the walk's, the offset means nothing
    /// for a match under [`MIN_MATCH`] bytes. Inlined into the dictionary loop, this saves
    /// the call of the walk for its commonest case: timed side by side in one process (datum
    /// encoder, 300 rounds, several runs), 2.0-2.5 % faster on the CSV airport rows, 1.3-4.2 %
    /// on fortunes, 0.3-2.5 % on HTML, 0.3-6 % on the other five sets, none slower. Taking
    /// every list with an empty own list by its keys here (`by_keys` inlined) was 2-3 %
    /// slower than the walk on geonames, Debian and MDN.
    #[inline(always)]
    fn one_class(&self, input: &[u8], pos: usize, class: usize) -> Option<(usize, usize)> {
        let word = u64::from_le_bytes(input.get(pos..pos + 8)?.try_into().unwrap());
        let dict_len = self.dict.len();
        let candidate = usize::from(self.dict.classes[class].pos);
        if candidate + 8 > dict_len || pos + dict_len - candidate >= DICT_WALK_LIMIT {
            return None;
        }
        let len = agreeing_bytes(word ^ self.dict.keys[class]);
        if len < 8 {
            return Some((len, pos + dict_len - candidate));
        }
        Some(self.class_and_members(input, pos, class))
    }

    /// The longest match at `pos` among dictionary class `class`, whose position matches at
    /// least eight bytes, and its members (the walk's end when no better match came before).
    #[inline(never)]
    fn class_and_members(&self, input: &[u8], pos: usize, class: usize) -> (usize, usize) {
        let dict = self.dict.as_bytes();
        let classes = &self.dict.classes;
        let current = &input[pos..input.len().min(pos + MAX_MATCH)];
        let candidate = usize::from(classes[class].pos);
        let off = pos + dict.len() - candidate;
        let len = dict_match_len(&dict[candidate..], input, current);
        let members = usize::from(classes[class].members)..usize::from(classes[class + 1].members);
        self.dict_members(input, pos, members, len, len, off)
    }

    /// Walks history list `hash` for the longest match with `input[pos..]`
    /// (`pglz_find_match`): newest first through the datum's own positions, then through the
    /// dictionary's, newest first. Returns `(length, offset)`; a
    /// length under [`MIN_MATCH`] means no usable match.
    ///
    /// `good_match[k]` is the match length that ends the walk after `k` steps down the list
    /// (PostgreSQL lowers it by `match_size_drop` percent per step).
    #[inline(never)]
    fn find_match(
        &self,
        input: &[u8],
        pos: usize,
        hash: usize,
        dict_bucket: usize,
        good_match: &GoodMatchSchedule,
    ) -> (usize, usize) {
        let bucket = hash % MAX_HASH_SIZE;
        let current = &input[pos..input.len().min(pos + MAX_MATCH)];
        let mut best_len = 0;
        let mut best_off = 0;
        let mut step = 0;
        let dict_list = self.dict_list(dict_bucket);

        // The datum's own earlier positions (entries >= base).
        let mut entry = self.start[bucket];
        while entry >= self.base {
            let candidate = (entry - self.base) as usize;
            let off = pos - candidate;
            if off >= DICT_WALK_LIMIT {
                // Dictionary candidates lie farther back still.
                return (best_len, best_off);
            }
            // Only a longer match counts, so a candidate that differs at byte `best_len`
            // cannot win; checking that byte first skips most candidates without a full
            // comparison. (PostgreSQL compares from the start; the chosen match is the same.)
            let earlier = &input[candidate..];
            if best_len < current.len() && earlier[best_len] == current[best_len] {
                let len = common_prefix(earlier, current);
                if len > best_len {
                    best_len = len;
                    best_off = off;
                    // Nothing can beat a match of all that is left (or of MAX_MATCH bytes),
                    // and a tie does not replace the best: the walk cannot change the result.
                    if best_len == current.len() {
                        return (best_len, best_off);
                    }
                }
            }
            entry = self.prev[candidate % HISTORY_SIZE];
            // Be content with shorter matches the farther down the list we go (PostgreSQL
            // applies this only when there is a next entry).
            let next_exists = entry >= self.base || !dict_list.is_empty();
            if !next_exists || best_len >= good_match.at(step) {
                return (best_len, best_off);
            }
            step += 1;
        }

        // Then the dictionary's positions: the newest of each class (see `PglzDictionary`),
        // and the members of a class whose eight bytes the datum matches.
        let dict = self.dict.as_bytes();
        // The first eight bytes to match, when the datum has eight left.
        let current8 = current
            .get(..8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()));
        let classes = &self.dict.classes[dict_list.start..=dict_list.end];
        // Every list is first searched by its classes' keys (`by_keys`), however short. Only
        // lists of 4 classes or more were, until timed side by side in one process (both
        // variants in one binary, alternating passes of the datum encoder, 300 rounds): all
        // lists 2 % faster per datum on the airport, fortune and geonames rows; from 2
        // classes on level with 4.
        if let Some(word) = current8 {
            if good_match.floor >= 8 {
                match self.by_keys(pos, word, dict_list.clone()) {
                    Quick::Longest(len, off) => {
                        return if len > best_len {
                            (len, off)
                        } else {
                            (best_len, best_off)
                        };
                    }
                    // The walk would take the classes before this one, each matching
                    // fewer than eight bytes, without an end (best_len < 8 <= good_match),
                    // then this one, which matches more than all of them, then others,
                    // which match less: this one and its members decide.
                    Quick::Eight(k) if best_len < 8 => {
                        return self.class_and_members(input, pos, dict_list.start + k);
                    }
                    _ => {}
                }
            }
        }
        for (class, next) in classes.iter().zip(&classes[1..]) {
            let candidate = usize::from(class.pos);
            let off = pos + dict.len() - candidate;
            if off >= DICT_WALK_LIMIT {
                break;
            }
            // Most candidates match fewer than eight bytes: measure those with one
            // comparison and keep the longest without a branch (whether a candidate wins
            // is as good as random); only a candidate matching all eight needs the loop.
            let first8 = dict
                .get(candidate..candidate + 8)
                .map(|d| u64::from_le_bytes(d.try_into().unwrap()));
            match (current8, first8) {
                (Some(c), Some(d)) if c != d => {
                    let len = agreeing_bytes(c ^ d);
                    let better = len > best_len;
                    best_off = if better { off } else { best_off };
                    best_len = best_len.max(len);
                }
                _ => {
                    let len = dict_match_len(&dict[candidate..], input, current);
                    if len > best_len {
                        best_len = len;
                        best_off = off;
                    }
                    // With fewer than eight bytes left, the members match as far as this
                    // one (and have no members then: positions with fewer than eight
                    // bytes left are classes of their own).
                    if current8.is_some() {
                        let members = usize::from(class.members)..usize::from(next.members);
                        step += members.len();
                        (best_len, best_off) =
                            self.dict_members(input, pos, members, len, best_len, best_off);
                    }
                }
            }
            if best_len == current.len() || best_len >= good_match.at(step) {
                break;
            }
            step += 1;
        }
        (best_len, best_off)
    }

    /// The dictionary's part of the walk at `pos`, whose first eight bytes are `word`, down
    /// list `list` (indices of `PglzDictionary::classes`), found from the classes' keys
    /// alone where it can be: see [`Quick`]. The walk's `good_match` schedule must stay at 8
    /// or more, so that no match of under eight bytes ends it early.
    ///
    /// A class whose key matches fewer than eight bytes matches that far, and so do its
    /// members: the longest match among such classes is the key with the longest common
    /// prefix (the first of equals, as the walk takes the first), which one pass over the
    /// keys finds without a branch. At most one class matches all eight bytes (keys are
    /// distinct).
    #[inline(always)]
    fn by_keys(&self, pos: usize, word: u64, list: std::ops::Range<usize>) -> Quick {
        let dict_len = self.dict.len();
        let classes = &self.dict.classes[list.clone()];
        // Classes are newest first: the first has the fewest bytes left, and the last lies
        // the farthest back.
        let (Some(newest), Some(oldest)) = (classes.first(), classes.last()) else {
            return Quick::Walk;
        };
        let (newest, oldest) = (usize::from(newest.pos), usize::from(oldest.pos));
        if newest + 8 > dict_len || pos + dict_len - oldest >= DICT_WALK_LIMIT {
            return Quick::Walk;
        }
        let (mut len, mut at) = (0, 0);
        for (i, &key) in self.dict.keys[list].iter().enumerate() {
            let this = agreeing_bytes(word ^ key);
            at = if this > len { i } else { at };
            len = len.max(this);
        }
        if len == 8 {
            Quick::Eight(at)
        } else {
            Quick::Longest(len, pos + dict_len - usize::from(classes[at].pos))
        }
    }

    /// The longest match with `input[pos..]` among the class members `members[range]`
    /// (newest first) of a class whose newest position matches `last_len` bytes, or
    /// `(best_len, best_off)` if none is longer.
    #[inline(always)]
    fn dict_members(
        &self,
        input: &[u8],
        pos: usize,
        range: std::ops::Range<usize>,
        mut last_len: usize,
        mut best_len: usize,
        mut best_off: usize,
    ) -> (usize, usize) {
        let dict = self.dict.as_bytes();
        let members = &self.dict.members;
        let current = &input[pos..input.len().min(pos + MAX_MATCH)];
        let mut i = range.start;
        let mut compares = 0;
        while i < range.end && compares < MEMBER_COMPARES {
            let member = members[i];
            // A member sharing more bytes with the one before than the datum matches of
            // that one matches exactly as far (no better), and so do the members after it
            // up to its skip, which share at least as many.
            if usize::from(member.rank()) > last_len {
                i = usize::from(member.skip);
                continue;
            }
            let candidate = usize::from(member.pos);
            let off = pos + dict.len() - candidate;
            if off >= DICT_WALK_LIMIT {
                break;
            }
            if member.shared != SHARED_UNKNOWN && usize::from(member.shared) < last_len {
                // It agrees with the one before on fewer bytes than the datum does: it
                // matches just those (no better), and no byte needs reading.
                last_len = usize::from(member.shared);
            } else {
                compares += 1;
                last_len = dict_match_len(&dict[candidate..], input, current);
                if last_len > best_len {
                    best_len = last_len;
                    best_off = off;
                    if best_len == current.len() {
                        break;
                    }
                }
            }
            i += 1;
        }
        (best_len, best_off)
    }
}

/// PostgreSQL's `good_match` at each step of a walk: it starts at `match_size_good` (clamped)
/// and is lowered by `match_size_drop` percent per step, in integer arithmetic, so after at
/// most 137 steps (from 273 with a 1 % drop) it stops changing. Computed once per strategy
/// rather than with a division at every step.
struct GoodMatchSchedule {
    /// The strategy's (clamped) `match_size_good` and `match_size_drop` this was made for.
    key: (usize, usize),
    by_step: [u16; GoodMatchSchedule::STEPS],
    /// The lowest `good_match` of the schedule (where it stops changing).
    floor: usize,
    /// For a best match of `len` bytes, the first step whose `good_match` is at most `len`:
    /// the walk ends after that step. `u16::MAX` when `len` is below [`Self::floor`].
    stop_by_len: [u16; MAX_MATCH + 1],
}

impl GoodMatchSchedule {
    const STEPS: usize = 256;

    fn new(good_match: usize, good_drop: usize) -> Self {
        let mut by_step = [0; Self::STEPS];
        let mut good = good_match;
        for slot in &mut by_step {
            *slot = good as u16;
            good -= good * good_drop / 100;
        }
        // The schedule is constant from step STEPS - 1 on (see `at`).
        let floor = usize::from(by_step[Self::STEPS - 1]);
        let mut stop_by_len = [u16::MAX; MAX_MATCH + 1];
        for (len, stop) in stop_by_len.iter_mut().enumerate() {
            if let Some(step) = by_step.iter().position(|&g| usize::from(g) <= len) {
                *stop = step as u16;
            }
        }
        GoodMatchSchedule {
            key: (good_match, good_drop),
            by_step,
            floor,
            stop_by_len,
        }
    }

    /// The step after which a walk with a best match of `len` bytes ends; `usize::MAX`
    /// when it never does.
    #[inline(always)]
    fn stop_step(&self, len: usize) -> usize {
        match self.stop_by_len[len] {
            u16::MAX => usize::MAX,
            step => usize::from(step),
        }
    }

    #[inline(always)]
    fn at(&self, step: usize) -> usize {
        usize::from(self.by_step[step.min(Self::STEPS - 1)])
    }
}

/// Match length of `current` against a candidate that starts in the dictionary: the rest of
/// the dictionary (`dict_tail`) and then the datum from its first byte.
#[inline(always)]
fn dict_match_len(dict_tail: &[u8], input: &[u8], current: &[u8]) -> usize {
    let in_dict = dict_tail.len().min(current.len());
    let len = common_prefix(dict_tail, &current[..in_dict]);
    if len < in_dict || in_dict == current.len() {
        return len;
    }
    in_dict + common_prefix(input, &current[in_dict..])
}

/// How many leading bytes two 8-byte little-endian words agree on, given their XOR `diff`
/// (8 when they are equal): the first differing byte holds the lowest set bit.
#[inline(always)]
fn agreeing_bytes(diff: u64) -> usize {
    (diff.trailing_zeros() / 8) as usize
}

/// Length of the common prefix of `a` and `b`; `a` must be at least as long as `b`.
#[inline(always)]
pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let a = &a[..b.len()];
    let mut chunks_a = a.chunks_exact(8);
    let mut chunks_b = b.chunks_exact(8);
    let mut len = 0;
    for (x, y) in (&mut chunks_a).zip(&mut chunks_b) {
        let diff =
            u64::from_le_bytes(x.try_into().unwrap()) ^ u64::from_le_bytes(y.try_into().unwrap());
        if diff != 0 {
            return len + agreeing_bytes(diff);
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
///
/// With `SELECT`, a new control byte is started without a branch: taken once in eight items,
/// between items whose kind is as good as random, that branch is often mispredicted.
/// Dictionary mode selects (per datum, min of 21 in-process rounds: airports 536 -> 523 ns,
/// fortunes 1424 -> 1396 ns, geonames 1504 -> 1480 ns); plain mode keeps the branch (the
/// selects cost it 19 % more instructions on the HTML rows, for no time saved).
struct TagWriter<const SELECT: bool> {
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

impl<const SELECT: bool> TagWriter<SELECT> {
    fn new() -> Self {
        TagWriter {
            bp: 0,
            ctrl_pos: 0,
            ctrlb: 0,
            ctrl: 0,
        }
    }

    /// `out[i] = byte`, unchecked with `SELECT`.
    ///
    /// # Safety
    ///
    /// With `SELECT`, `i < out.len()`.
    #[inline(always)]
    unsafe fn store(out: &mut [u8], i: usize, byte: u8) {
        if SELECT {
            debug_assert!(i < out.len());
            // SAFETY: the caller's promise.
            unsafe { *out.get_unchecked_mut(i) = byte };
        } else {
            out[i] = byte;
        }
    }

    /// # Safety
    ///
    /// With `SELECT`, `self.bp + 4 <= out.len()` (as for [`Self::literal`]).
    #[inline(always)]
    unsafe fn next_item(&mut self, out: &mut [u8]) {
        if SELECT {
            // The control byte is stored at every item: the last store to its slot is the
            // final one. `flush` is all ones when a new control byte starts here (masks,
            // as the compiler turns `if` selects back into the branch).
            // SAFETY: `ctrl_pos <= bp` (a control byte's slot is claimed where the output
            // ends), below `out.len()` by the caller's promise.
            unsafe { Self::store(out, self.ctrl_pos, self.ctrlb) };
            let flush = usize::from(self.ctrl == 0);
            let mask = flush.wrapping_neg();
            self.ctrl_pos = (self.bp & mask) | (self.ctrl_pos & !mask);
            self.bp += flush;
            self.ctrlb &= !(mask as u8);
            self.ctrl |= flush as u8;
        } else if self.ctrl == 0 {
            out[self.ctrl_pos] = self.ctrlb;
            self.ctrl_pos = self.bp;
            self.bp += 1;
            self.ctrlb = 0;
            self.ctrl = 1;
        }
    }

    /// Writes a literal.
    ///
    /// # Safety
    ///
    /// With `SELECT` (whose writes are unchecked), `self.bp + 4 <= out.len()`: an item
    /// writes at most four bytes from `bp` on (a control byte and a 3-byte tag). Without
    /// `SELECT` every write is checked, and the call is always safe.
    #[inline(always)]
    unsafe fn literal(&mut self, out: &mut [u8], byte: u8) {
        // SAFETY (all three): the caller's promise; `next_item` moves `bp` on by at most
        // one, so the literal lands at most at the old `bp + 1`.
        unsafe {
            self.next_item(out);
            Self::store(out, self.bp, byte);
        }
        self.bp += 1;
        self.ctrl <<= 1;
    }

    /// Writes a match tag.
    ///
    /// # Safety
    ///
    /// As for [`Self::literal`].
    #[inline(always)]
    unsafe fn tag(&mut self, out: &mut [u8], len: usize, off: usize) {
        // Plain pglz stays below WALK_LIMIT; dictionary mode may use the tag's whole range.
        debug_assert!((MIN_MATCH..=MAX_MATCH).contains(&len) && (1..=MAX_OFFSET).contains(&off));
        // SAFETY: the caller's promise.
        unsafe { self.next_item(out) };
        self.ctrlb |= self.ctrl;
        self.ctrl <<= 1;
        let off_high = ((off & 0xf00) >> 4) as u8;
        // SAFETY (both branches): `next_item` moved `bp` on by at most one, so the tag's
        // last byte is at most at the old `bp + 3`, below `out.len()` by the caller's
        // promise.
        if len > 17 {
            unsafe {
                Self::store(out, self.bp, off_high | 0x0f);
                Self::store(out, self.bp + 1, off as u8);
                Self::store(out, self.bp + 2, (len - 18) as u8);
            }
            self.bp += 3;
        } else {
            unsafe {
                Self::store(out, self.bp, off_high | (len - 3) as u8);
                Self::store(out, self.bp + 1, off as u8);
            }
            self.bp += 2;
        }
    }

    /// Stores the last control byte and returns the output length.
    fn finish(self, out: &mut [u8]) -> usize {
        out[self.ctrl_pos] = self.ctrlb;
        self.bp
    }
}

/// Plain mode's writer checks every write, so its items need no promise from the caller.
impl TagWriter<false> {
    /// [`TagWriter::literal`], safe: an index out of bounds panics.
    #[inline(always)]
    fn checked_literal(&mut self, out: &mut [u8], byte: u8) {
        // SAFETY: without `SELECT` the writes are checked; `literal` has no precondition.
        unsafe { self.literal(out, byte) }
    }

    /// [`TagWriter::tag`], safe: an index out of bounds panics.
    #[inline(always)]
    fn checked_tag(&mut self, out: &mut [u8], len: usize, off: usize) {
        // SAFETY: as for `checked_literal`.
        unsafe { self.tag(out, len, off) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs of every kind of redundancy: the sample rows, runs, repeats at short and long
    /// distances, and bytes without any.
    fn inputs() -> Vec<Vec<u8>> {
        let mut inputs: Vec<Vec<u8>> = [
            include_str!("../../corpus/events.jsonl"),
            include_str!("../../corpus/app_logs.txt"),
            include_str!("../../corpus/orders_csv.txt"),
        ]
        .iter()
        .flat_map(|file| file.lines().map(|l| l.as_bytes().to_vec()))
        .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect()
        };
        for len in [0, 1, 2, 3, 4, 5, 31, 32, 100, 1000, 5000] {
            inputs.push(vec![b'a'; len]);
            inputs.push(b"abc".iter().copied().cycle().take(len).collect());
            inputs.push(random(len));
            let unit = random(len / 7 + 1);
            inputs.push(unit.iter().copied().cycle().take(len).collect());
            let mut mixed = random(len);
            for i in (0..len).step_by(11) {
                mixed[i] = b'x';
            }
            inputs.push(mixed);
        }
        inputs
    }

    #[test]
    fn buffers_over_the_limit_are_freed_and_the_payloads_stay_the_same() {
        let large = b"a large value, compressible, a large value ".repeat(50_000);
        let small = b"a small value, a small value, a small value".to_vec();
        let fresh = |input: &[u8]| compress(input, &Strategy::DEFAULT).unwrap();
        let mut compressor = Compressor::new();
        assert_eq!(
            compressor.compress(&small, &Strategy::DEFAULT).unwrap(),
            fresh(&small)
        );
        compressor.release_buffers_over(1 << 20);
        assert_eq!(
            compressor.out.len(),
            small.len() + 4,
            "a small buffer is kept"
        );
        assert_eq!(
            compressor.compress(&large, &Strategy::DEFAULT).unwrap(),
            fresh(&large)
        );
        compressor.release_buffers_over(1 << 20);
        assert_eq!(
            compressor.out.capacity(),
            0,
            "the large value's buffer was not freed"
        );
        // Grown again from nothing, and into a buffer that held a longer payload.
        assert_eq!(
            compressor.compress(&large, &Strategy::DEFAULT).unwrap(),
            fresh(&large)
        );
        assert_eq!(
            compressor.compress(&small, &Strategy::DEFAULT).unwrap(),
            fresh(&small)
        );
    }

    #[test]
    fn compression_is_the_same_when_history_entries_run_out() {
        let inputs = inputs();
        let all_outputs = |compressor: &mut Compressor| {
            let mut outputs = Vec::new();
            for input in &inputs {
                for strategy in [Strategy::DEFAULT, Strategy::ALWAYS] {
                    outputs.push(compressor.compress(input, &strategy).map(<[u8]>::to_vec));
                }
            }
            outputs
        };
        let expected = all_outputs(&mut Compressor::new());
        // Entries run out a few calls in: with ring-aligned entries left, with some left but
        // none aligned, and with almost none.
        let ring = PLAIN_RING as u32;
        for start in [u32::MAX - 3 * ring - 7, u32::MAX - ring + 5, u32::MAX - 10] {
            let mut worn = Compressor::new();
            worn.base = start;
            assert!(
                all_outputs(&mut worn) == expected,
                "different after entry {start}"
            );
            assert!(worn.base < start);
        }
    }

    #[test]
    fn longest_payload_is_what_the_rate_accepts() {
        // The rate decides only whether a payload is returned, never its bytes: the default
        // strategy returns the payload of the same strategy without a rate exactly when it is
        // at most `longest_payload` long (inputs of 32 bytes to 1 KB, where no other rule
        // refuses).
        let loose = Strategy {
            min_comp_rate: 0,
            ..Strategy::DEFAULT
        };
        let (mut accepted, mut refused) = (0, 0);
        let mut compressor = Compressor::new();
        let mut inputs = inputs();
        // Runs of three sample lines: more of them save 25 %.
        let joined: Vec<Vec<u8>> = inputs.chunks(3).map(<[Vec<u8>]>::concat).collect();
        inputs.extend(joined);
        for input in inputs.iter().filter(|i| (32..1024).contains(&i.len())) {
            let Some(len) = compressor.compress(input, &loose).map(<[u8]>::len) else {
                continue;
            };
            let fits = len <= Strategy::DEFAULT.longest_payload(input.len());
            assert_eq!(
                compressor.compress(input, &Strategy::DEFAULT).is_some(),
                fits
            );
            accepted += usize::from(fits);
            refused += usize::from(!fits);
        }
        assert!(accepted > 50 && refused > 50, "{accepted} {refused}");
        assert_eq!(Strategy::ALWAYS.longest_payload(100), 99);
        assert_eq!(Strategy::DEFAULT.longest_payload(0), 0);
    }

    /// Dictionaries of sample rows (their lists for keys and punctuation hold many classes),
    /// each with inputs: other rows, and a long input whose later positions cannot reach the
    /// oldest classes.
    fn sample_dictionaries() -> Vec<(PglzDictionary, Vec<Vec<u8>>)> {
        [
            include_str!("../../corpus/events.jsonl"),
            include_str!("../../corpus/orders_csv.txt"),
        ]
        .iter()
        .map(|file| {
            let lines: Vec<&[u8]> = file.lines().map(str::as_bytes).collect();
            let mut inputs: Vec<Vec<u8>> = lines[200..300].iter().map(|l| l.to_vec()).collect();
            inputs.push(lines[300..400].concat());
            (PglzDictionary::new(&lines[1..200].concat()), inputs)
        })
        .collect()
    }

    /// The history of a call that has added no position yet: the datum's own lists are empty.
    fn empty_history<'a>(compressor: &'a mut Compressor, dict: &'a PglzDictionary) -> History<'a> {
        History {
            start: &mut compressor.hist_start,
            prev: &mut compressor.hist_prev,
            base: compressor.base,
            dict,
        }
    }

    #[test]
    fn one_class_agrees_with_the_walk() {
        // Every position of the sample inputs whose dictionary list is one class, the datum's
        // own lists empty; with the dictionary strategy's schedule and one that drops under 8.
        let mut counts = [0; 3];
        for (dict, inputs) in sample_dictionaries() {
            let mut compressor = Compressor::new();
            let hist = empty_history(&mut compressor, &dict);
            for schedule in [
                GoodMatchSchedule::new(128, 10),
                GoodMatchSchedule::new(128, 50),
            ] {
                for input in &inputs {
                    for pos in 0..input.len() {
                        let bucket = dict_hash(input, pos);
                        let list = hist.dict_list(bucket);
                        if list.len() != 1 {
                            continue;
                        }
                        let walk = hist.find_match(input, pos, bucket & 511, bucket, &schedule);
                        match hist.one_class(input, pos, list.start) {
                            Some((len, off)) => {
                                counts[usize::from(len >= 8)] += 1;
                                assert_eq!(len, walk.0, "position {pos}");
                                if len >= MIN_MATCH {
                                    assert_eq!(off, walk.1, "position {pos}");
                                }
                            }
                            None => counts[2] += 1,
                        }
                    }
                }
            }
        }
        assert!(counts.iter().all(|&n| n > 100), "{counts:?}");
    }

    #[test]
    fn one_own_agrees_with_the_walk() {
        // Every position of the sample inputs whose dictionary list is empty and whose own
        // list is not, with every earlier position added to the datum's lists.
        let mut counts = [0; 3];
        for (dict, inputs) in sample_dictionaries() {
            let mut compressor = Compressor::new();
            let schedule = GoodMatchSchedule::new(128, 10);
            for input in &inputs {
                let mut hist = empty_history(&mut compressor, &dict);
                for pos in 0..input.len() {
                    let bucket = dict_hash(input, pos);
                    let hash = bucket & 511;
                    let own = hist.head(hash);
                    if own >= hist.base && hist.dict_list(bucket).is_empty() {
                        let walk = hist.find_match(input, pos, hash, bucket, &schedule);
                        match hist.one_own(input, pos, own) {
                            Some((len, off)) => {
                                counts[usize::from(len >= MIN_MATCH)] += 1;
                                assert_eq!(len, walk.0, "position {pos}");
                                if len >= MIN_MATCH {
                                    assert_eq!(off, walk.1, "position {pos}");
                                }
                            }
                            None => counts[2] += 1,
                        }
                    }
                    hist.add_with_head(pos, hash, own);
                }
                // Past this input's entries: the next input's lists start empty.
                compressor.claim(input.len());
            }
        }
        assert!(counts.iter().all(|&n| n > 100), "{counts:?}");
    }

    #[test]
    fn by_keys_agrees_with_measuring_every_class() {
        // Every position of the sample inputs whose dictionary list is not empty.
        let mut counts = [0; 3];
        for (dict, inputs) in sample_dictionaries() {
            let dict_bytes = dict.as_bytes();
            let mut compressor = Compressor::new();
            let hist = empty_history(&mut compressor, &dict);
            for input in &inputs {
                for pos in 0..input.len().saturating_sub(7) {
                    let word = u64::from_le_bytes(input[pos..pos + 8].try_into().unwrap());
                    let bucket = hash4(&input[pos..pos + 4]);
                    let list = usize::from(dict.list_start[bucket])
                        ..usize::from(dict.list_start[bucket + 1]);
                    if list.is_empty() {
                        continue;
                    }
                    let current = &input[pos..input.len().min(pos + MAX_MATCH)];
                    // Each class's match, as the walk measures it, newest first.
                    let lens: Vec<(usize, usize)> = list
                        .clone()
                        .map(|c| {
                            let candidate = usize::from(dict.classes[c].pos);
                            let off = pos + dict_bytes.len() - candidate;
                            (
                                dict_match_len(&dict_bytes[candidate..], input, current),
                                off,
                            )
                        })
                        .collect();
                    match hist.by_keys(pos, word, list.clone()) {
                        Quick::Longest(len, off) => {
                            counts[0] += 1;
                            assert!(lens.iter().all(|&(l, o)| l < 8 && o < DICT_WALK_LIMIT));
                            let best = lens.iter().map(|&(l, _)| l).max().unwrap();
                            let first = lens.iter().find(|&&(l, _)| l == best).unwrap();
                            assert_eq!((len, off), *first);
                        }
                        Quick::Eight(k) => {
                            counts[1] += 1;
                            assert!(lens.iter().all(|&(_, o)| o < DICT_WALK_LIMIT));
                            for (i, &(l, _)) in lens.iter().enumerate() {
                                assert_eq!(l >= 8, i == k);
                            }
                        }
                        Quick::Walk => {
                            counts[2] += 1;
                            let newest = usize::from(dict.classes[list.start].pos);
                            assert!(
                                newest + 8 > dict_bytes.len()
                                    || lens.last().unwrap().1 >= DICT_WALK_LIMIT
                            );
                        }
                    }
                }
            }
        }
        assert!(counts.iter().all(|&n| n > 100), "{counts:?}");
    }

    #[test]
    fn plain_may_fit_never_rules_out_a_payload_pglz_writes() {
        let mut compressor = Compressor::new();
        let mut checker = Compressor::new();
        let (mut checked, mut ruled_out) = (0, 0);
        for input in inputs() {
            for strategy in [Strategy::DEFAULT, Strategy::ALWAYS] {
                let Some(payload) = compressor.compress(&input, &strategy) else {
                    continue;
                };
                checked += 1;
                let len = payload.len();
                assert!(
                    checker.plain_may_fit(&input, len),
                    "a {len}-byte payload of a {}-byte input was ruled out",
                    input.len()
                );
                // One byte less may well be ruled out; count how often, so the check is
                // known to rule anything out at all.
                ruled_out += usize::from(!checker.plain_may_fit(&input, len - 1));
            }
        }
        assert!(checked > 400, "only {checked} payloads checked");
        assert!(ruled_out > 0);
    }

    #[test]
    fn plain_may_fit_counts_three_repeated_positions_in_a_row_as_one_match() {
        // "abc" followed by a different byte each time: a quarter of the positions start
        // three repeated bytes, but no four bytes repeat, so each repeat is at best a 3-byte
        // match (2 bytes of tag and a control bit) followed by a literal.
        let input: Vec<u8> = (0..96u8).flat_map(|k| [b'a', b'b', b'c', k]).collect();
        let mut compressor = Compressor::new();
        // In eighths of a byte: 4 literals, then 95 times a tag and a literal.
        let parsed = (4 * 9 + 95 * (17 + 9_usize)).div_ceil(8);
        // The count of repeated positions allows 95 bytes less than the input, and a control
        // byte per 16 of those: the cheapest parse needs more, but the count cannot tell.
        let unseen = input.len() - 95;
        assert!(compressor.plain_may_fit(&input, unseen + unseen.div_ceil(16) + 2));
        assert!(unseen + unseen.div_ceil(16) + 2 < parsed);
        assert!(!compressor.plain_may_fit(&input, unseen));
        // (pglz itself finds none of these matches: its lists are by four-byte hash.)
        let payload_len = compressor
            .compress(&input, &Strategy::ALWAYS)
            .map(<[u8]>::len);
        assert!(payload_len.is_none_or(|len| len >= parsed));
    }

    #[test]
    fn plain_may_fit_rules_out_payloads_of_bytes_without_repeats() {
        let mut compressor = Compressor::new();
        let distinct: Vec<u8> = (0..=255).collect();
        // 256 positions, none of whose three bytes repeat: 256 literals and 32 control bytes.
        // The count knows the literals and the control bytes of half as many items (the
        // attempt, which the bound lets through from 272 bytes, needs 288).
        assert!(!compressor.plain_may_fit(&distinct, 271));
        assert!(compressor.plain_may_fit(&distinct, 272));
        assert!(!compressor.plain_may_fit(b"", 0));
        assert!(compressor.plain_may_fit(b"", 1));
        // One byte and its control byte.
        assert!(!compressor.plain_may_fit(b"x", 1));
        assert!(compressor.plain_may_fit(b"x", 2));
        assert!(compressor.plain_may_fit(&[b'a'; 1000], 20));
    }

    #[test]
    fn plain_may_fit_forgets_the_marks_of_earlier_calls_across_epochs() {
        let mut compressor = Compressor::new();
        let distinct: Vec<u8> = (0..=255).collect();
        // Each round marks the distinct bytes' slots once, then 254 calls mark one other
        // slot each: the epoch comes round again, and the marks of the round before must not
        // read as this call's (they would let the bound through).
        for _ in 0..3 {
            assert!(!compressor.plain_may_fit(&distinct, 271));
            for _ in 0..254 {
                assert!(compressor.plain_may_fit(b"\0\0\0", 10));
            }
        }
    }
}
