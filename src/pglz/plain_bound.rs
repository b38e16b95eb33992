//! A lower bound on the payload plain pglz can write, for the datum encoder's decision to skip
//! the plain attempt after the dictionary form ([`Compressor::plain_may_fit`]).
//!
//! Any pglz payload is a parse of the input into literals (1 byte), tags (2 or 3 bytes, for
//! 3–273 bytes copied from at most 4095 bytes back), and a control bit per item. A match of
//! `L` bytes at `p`, copied from an earlier `q`, repeats the four bytes at each of
//! `p..=p + L - 4` (they stand at `q..`), and a 3-byte match repeats the three bytes at `p`.
//! So no match starts where the three bytes do not repeat, and a match that has reached `e`
//! goes on past it only if the four bytes at `e - 3` repeat. The cheapest parse under just
//! those rules (every tag priced at 2 bytes) costs no more than pglz's own parse, which obeys
//! them and more. Repeats are found with hashed tables, where a collision can only claim a
//! repeat that is not there: that lowers the bound, so it stays a bound.
//!
//! `plain_may_fit`'s first bound counts every position whose three bytes repeat as one byte
//! saved. This one knows that three such positions in a row save one byte, not three, unless
//! their four-byte strings repeat too. It costs more per byte (about 50 instructions, against
//! 12 for the first bound and 60-85 for a plain attempt), so it only runs when the first bound
//! cannot rule the attempt out. Measured with `examples/codec_profile.rs stats` (even rows, a
//! zstd-trained dictionary's last 4 KB), the plain attempts left went from 469 to 59 of 632
//! datums on the GSoC JSON rows, 266 to 36 of 1450 on the HTML rows, 210 to 16 of 3000 on the
//! fortunes, 136 to 1 of 3000 on the airport CSV rows; plain won for 0, 1, 3 and 0 of them.
//! Still, a plain attempt that is sure to lose gives up early, and the attempts the bound
//! saves cost less than the bound on inputs under 2 KB: it only runs on longer ones
//! (`PARSE_BOUND_MIN_INPUT` in `compress.rs`).
//!
//! [`Compressor::plain_may_fit`]: super::Compressor::plain_may_fit

/// Costs in eighths of a byte: each item also takes one control bit. Every tag is priced at
/// 2 bytes, also those of 18 bytes or more (3): that only lowers the bound.
const LITERAL_COST: u64 = 8 + 1;
const TAG_COST: u64 = 16 + 1;

/// "No parse gets here": a cost that `min` never picks over a real one.
const NONE: u64 = u64::MAX / 2;

const TABLE_BITS: u32 = 13;
const TABLE_SIZE: usize = 1 << TABLE_BITS;

/// The tables of [`ParseBound::may_fit`], kept between calls.
pub(super) struct ParseBound {
    /// Newest position of each hashed three-byte string, as `base + position`.
    seen3: Box<[u32; TABLE_SIZE]>,
    /// The same for four-byte strings.
    seen4: Box<[u32; TABLE_SIZE]>,
    /// Entries below this are from earlier calls (as in the compressor's history tables).
    base: u32,
}

impl ParseBound {
    pub(super) fn new() -> ParseBound {
        ParseBound {
            seen3: Box::new([0; TABLE_SIZE]),
            seen4: Box::new([0; TABLE_SIZE]),
            base: 1,
        }
    }

    /// Whether a pglz payload of `input` could be `max_payload` bytes or shorter; `false` is
    /// a proof that none is.
    ///
    /// One pass, forwards, over the cheapest costs of the parses of everything before a
    /// position (see [`Parse`]). The cheapest of them only grows, so the pass stops as soon as
    /// it exceeds the budget.
    pub(super) fn may_fit(&mut self, input: &[u8], max_payload: usize) -> bool {
        let n = input.len();
        let budget = 8 * max_payload as u64;
        if u64::from(self.base) + n as u64 >= u64::from(u32::MAX) {
            self.seen3.fill(0);
            self.seen4.fill(0);
            self.base = 1;
        }
        let base = self.base;
        self.base += n as u32;
        // Enough buckets to keep collisions rare, at most the whole table.
        let bits = (usize::BITS - n.max(1).leading_zeros() + 3).clamp(9, TABLE_BITS);
        let shift = 32 - bits;
        let (seen3, seen4) = (&mut *self.seen3, &mut *self.seen4);
        let slot3 = |key: u32| ((key & 0x00ff_ffff).wrapping_mul(0x9e37_79b1) >> shift) as usize;

        let mut parse = Parse::START;
        let four_end = n.saturating_sub(3);
        let mut pos = 0;
        while pos < four_end {
            let chunk_end = four_end.min(pos + 8);
            while pos < chunk_end {
                let key = u32::from_le_bytes(input[pos..pos + 4].try_into().unwrap());
                let at3 = &mut seen3[slot3(key) & (TABLE_SIZE - 1)];
                let at4 = &mut seen4
                    [(key.wrapping_mul(0x85eb_ca77) >> shift) as usize & (TABLE_SIZE - 1)];
                let now = base + pos as u32;
                // An entry of an earlier call is more than `pos` back; pglz copies from at
                // most 4095 bytes back, so an older occurrence is no repeat either.
                let reach = pos.min(4095) as u32;
                let repeat3 = now.wrapping_sub(*at3) <= reach;
                let repeat4 = now.wrapping_sub(*at4) <= reach;
                *at3 = now;
                *at4 = now;
                parse.step(repeat3, repeat4);
                pos += 1;
            }
            if parse.cheapest() > budget {
                return false;
            }
        }
        // The last three positions: only the first of them starts three bytes.
        while pos < n {
            let repeat3 = pos + 3 == n && {
                let key = u32::from(input[pos])
                    | u32::from(input[pos + 1]) << 8
                    | u32::from(input[pos + 2]) << 16;
                let now = base + pos as u32;
                now.wrapping_sub(seen3[slot3(key) & (TABLE_SIZE - 1)]) <= pos.min(4095) as u32
            };
            parse.step(repeat3, false);
            pos += 1;
        }
        parse.boundary.min(parse.reach[0]) <= budget
    }
}

/// The cheapest parses of everything before a position (costs in eighths of a byte).
struct Parse {
    /// Ending at an item boundary at the position.
    boundary: u64,
    /// `reach[k]`: ending inside a match that has reached position + k (a match starting at
    /// `p` first reaches `p + 3`).
    reach: [u64; 3],
    /// Bit i: whether the four bytes at position - 1 - i repeat.
    repeats4: u32,
}

impl Parse {
    const START: Parse = Parse {
        boundary: 0,
        reach: [NONE; 3],
        repeats4: 0,
    };

    /// Moves on by one position, given whether the three and four bytes there repeat.
    /// Without branches: whether a string repeats is as good as random.
    #[inline(always)]
    fn step(&mut self, repeat3: bool, repeat4: bool) {
        let here = self.boundary.min(self.reach[0]);
        // A value or'ed with NONE is at least NONE: `min` never picks it.
        let unless = |flag: bool| u64::from(flag).wrapping_sub(1) & NONE;
        // A match that has reached the position goes on past it if the four bytes three
        // positions back repeat (so does its source, shifted along).
        let goes_on = self.reach[0] | unless(self.repeats4 & 0b100 != 0);
        let started = (here + TAG_COST) | unless(repeat3);
        self.reach = [self.reach[1].min(goes_on), self.reach[2], started];
        self.repeats4 = self.repeats4 << 1 | u32::from(repeat4);
        self.boundary = here + LITERAL_COST;
    }

    /// No parse of the whole input costs less than this.
    fn cheapest(&self) -> u64 {
        self.boundary
            .min(self.reach[0])
            .min(self.reach[1])
            .min(self.reach[2])
    }
}
