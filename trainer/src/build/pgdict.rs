//! pgdict's builder: a dictionary refined with the real codec, segment by segment, for the
//! codec's window and match rules.
//!
//! 1. **Count.** Document frequencies of the k-mers of the training rows ([`KmerCounts`]):
//!    how many rows hold each. Only content shared *across* rows helps, since every datum is
//!    compressed alone. k follows the codec's match finder: 4 bytes for pglz (its history is
//!    hashed on 4 bytes; matches start at 3), 5 for lz4 (liblz4 looks dictionary positions up
//!    by a 5-byte hash; matches start at 4).
//! 2. **Seed.** Candidate dictionaries, each rated by compressing a *probe* slice of the
//!    training rows with the real compressor ([`Probe`]): pgdict's own selection (maximal
//!    frequent runs of rows, chosen greedily by uncovered k-mer frequency per byte,
//!    [`Pool::select`]), zstd's trainer at the budget and at 64 KiB (its end), and for lz4
//!    zstd's dictionary with pgdict's own pglz dictionary as its last 4 KB. An lz4 seed is
//!    rated at each of its three *phases* (0, 1 or 2 bytes cut from its front; see the lz4
//!    notes below). The best [`PgdictBuilder::refined_seeds`] (2) on the probe are refined;
//!    for lz4 all three ([`PgdictBuilder::lz4_refined_seeds`]).
//! 3. **Refine**, each seed twice, once per [`Refill`] way (pglz: a third time, the pool
//!    way with larger first steps, [`PgdictBuilder::pglz_wide_first_drop`]; and the best
//!    seed once more the pool way with more patience,
//!    [`PgdictBuilder::pglz_patient_refinements`]).
//!    The probe's payloads are read back to credit each dictionary byte with the stored bytes
//!    it saved (pglz's residual and wide ways: only for bytes the row could not copy from
//!    itself, [`PgdictBuilder::pglz_new_bytes_credit`]).
//!    The dictionary is cut into pieces of at most 64 bytes (where usage is lowest). Each
//!    round then either
//!    - *replaces*: trims the bytes nothing copied from the ends of pieces, drops the pieces
//!      that earned least per byte (half the budget at first, three quarters for lz4), and
//!      refills the space in front with new candidates from the training rows (their k-mers
//!      already in the dictionary count as covered, and pieces dropped before are not taken
//!      again); the other pieces keep their order, and so the neighbours a long match runs on
//!      into. The candidates are valued by the k-mer counts of all the samples
//!      ([`Refill::Pool`]) or by counts taken only where the current dictionary leaves the
//!      pool rows costly ([`Refill::Residual`]: literals and short copies, what the rows
//!      still lack). The trial is probed as it is and once more reordered (below), the better
//!      kept; or
//!    - *reorders* (every fourth round): pieces copied late in datums go nearest the end.
//!      pglz reaches only the last 4095 bytes, and after n bytes of datum only the last
//!      4095 − n, so what a datum needs late must sit at the very end; pglz also tries the
//!      pieces by value per byte, most valuable last (`reorder_by_value`);
//!
//!    and keeps the change only if the probe's total stored size shrinks. An lz4 trial moves
//!    no kept byte off liblz4's grid (see below): it trims whole steps of 3 bytes, a dropped
//!    piece leaves its last (length mod 3) bytes to the piece before it, and the trial is cut
//!    at its front to the phase of the dictionary it changes; so the probe judges the change
//!    of content, not a new draw of which copies hold the hash slots. New candidates that
//!    earned less than the median piece in a rejected round are not tried again; after
//!    `patience` rejections in a row (3; 5 for lz4, whose probe is noisier) the share
//!    replaced is halved, and refinement ends when it
//!    is under 1 % (or when it has compressed `max_probe_bytes` of rows: a bound on work, not
//!    time, so the same samples always give the same dictionary). For lz4 a last pass then
//!    tries cutting one or two bytes at piece boundaries 512 B to 48 KiB before the end
//!    (shifting the parts on either side against liblz4's grid), each kept if the probe
//!    improves. The refinements run side by side on threads, each on its own, so their
//!    order does not change the result.
//! 4. **Swap** (pglz). The best result so far on the validation rows (below) is refined
//!    more each way with other rows in the roles: probe rows taken from the candidate rows,
//!    new candidates cut from the former probe rows or the rest of the pool, three variants
//!    and the first roles again a round, up to [`PgdictBuilder::swap_rounds`] rounds each
//!    from the best so far; the swapped roles also refine the pool way crediting new bytes
//!    only ([`PgdictBuilder::pglz_swapped_new_bytes_pool`]). The
//!    first refinements fitted their probe; fresh rows judge each piece anew and fresh
//!    candidate rows offer pieces not yet tried ([`PgdictBuilder::swapped_stage`]).
//! 5. **Choose.** Every dictionary a refinement keeps is checked on *validation* rows, a slice
//!    of the training rows apart from both the probe rows and the rows candidates are cut
//!    from; the one that stores them smallest is the result. The probe judges many small
//!    changes and so comes to favour its own rows; the validation rows judge only the few
//!    results, so the choice stays honest (on the corpus, refining until the probe stops
//!    improving made some sets worse on held-out rows than zstd's dictionary). For lz4 they
//!    also choose each result's phase.
//!
//! For lz4 the end matters too: liblz4 indexes every third dictionary position into a
//! 4096-slot table, later positions overwriting earlier ones, so the start of a 64 KiB
//! dictionary is reachable only where nothing later collides with it. Measured on the corpus,
//! the last 8 KB of zstd's 64 KiB dictionary earn 42-85 % of what the whole saves on the probe
//! rows. Refilling in front leaves the positions indexed at the end alone. The positions
//! indexed are 0, 3, 6, ... counted from the *start*, so one byte more or less in front moves
//! the grid under every later byte: another copy of a repeated string then holds its slot,
//! and a match found there runs on for a different length. The effect is not small: cutting
//! two bytes from the front of zstd's 64 KiB dictionary raises the lz4 ratio of the user-agent
//! rows from 5.07 to 5.75 (and mdn's from 4.51 to 4.63). Hence the phase of seeds, trials
//! and results above is chosen, never left to chance.

use std::collections::HashSet;

use pgdict::datum::Codec;

use super::kmer::{self, KmerCounts, KmerSet};
use super::probe::{costly_bytes, Outcome, Probe};
use super::select::{fingerprint, Pool};
use super::{max_useful_size, BuildError};
use crate::progress::counted;

/// The parameters of pgdict's builder; [`Default`] is what `Builder::Pgdict` uses.
#[derive(Clone, Debug)]
pub struct PgdictBuilder {
    /// Length of the k-mers counted (at most 8); `None`: the codec's (4 for pglz, 5 for lz4).
    pub k: Option<usize>,
    /// Sample bytes whose k-mers are counted (rows taken evenly across the samples).
    pub count_bytes: usize,
    /// Sample bytes from which new segments are cut.
    pub pool_bytes: usize,
    /// Sample bytes the codec check compresses each round (at most a third of the samples).
    pub probe_bytes: usize,
    /// Sample bytes held out to choose between refined dictionaries (at most a sixth of the
    /// samples); 0: the probe chooses.
    pub validation_bytes: usize,
    /// For the [`Refill::Residual`] candidates: copies shorter than this leave their bytes
    /// costly.
    pub residual_short: usize,
    /// A k-mer must be held by this share of the counted rows (and by 2 rows at least) to be
    /// part of a candidate segment.
    pub min_df_share: f64,
    /// Refinement rounds at most.
    pub max_rounds: usize,
    /// Rejected rounds in a row before the share of the dictionary replaced is halved (pglz).
    pub patience: usize,
    /// The same for lz4, whose probe judges each trial with more noise (which copy of a
    /// repeated string holds liblz4's hash slot moves with the content): more tries before
    /// the steps shrink. On the corpus, 5 rather than 3 raised the lz4 gain over zstd's
    /// trainer from 5.0 % to 5.2 % (fortunes from 0.0 % to 1.7 %); for pglz it did nothing
    /// (6.9 % against 7.0 %) but take longer.
    pub lz4_patience: usize,
    /// Whether zstd's trainer seeds the refinement too.
    pub zstd_seeds: bool,
    /// How many of the seeds (the best on the probe rows) are refined; the validation rows
    /// choose between the results.
    pub refined_seeds: usize,
    /// The same for lz4, which has one seed more (see the top): on the corpus refining all
    /// three rather than the best two raised the lz4 gain from 4.8 % to 5.0 % (airports from
    /// 5.0 % to 5.9 %); for pglz the third seed's results were never chosen.
    pub lz4_refined_seeds: usize,
    /// The work each refinement (one seed, one [`Refill`] way) may do: row bytes compressed
    /// by its probe and validation checks, and pool rows passed over for residual candidates.
    /// Checked before each round, so the last round started may take a refinement past it by
    /// that round's work. A bound on work, not on time, so that the same samples give the same
    /// dictionary however loaded the machine is.
    pub max_probe_bytes: usize,
    /// Whether pglz's best result is refined more (each way) with the probe and the
    /// candidate rows swapped (see the module, step 4). On the corpus one swap raised the
    /// gain over zstd's trainer from 7.0 % to 7.3 % (user agents 2.8 % to 4.4 %).
    pub swapped_stage: bool,
    /// How many times the swapped stage runs, each from the best result so far (it stops
    /// early when that best is one it started from already). On the corpus 1 round gave
    /// 7.47 %, 2 gave 7.53 %, 4 gave 7.63 % (GSoC 9.5 % to 10.3 %), 8 gave 7.64 %. With
    /// [`Self::pglz_swapped_new_bytes_pool`] 6 rather than 4 raised it from 7.99 % to 8.01 %
    /// (airports 10.6 % to 10.8 %).
    pub swap_rounds: usize,
    /// [`Self::probe_bytes`] for pglz builds. On the corpus only MDN's rows bind it (the
    /// probe is at most a third of the samples): 2 MiB rather than 1 raised MDN's gain over
    /// zstd's trainer from 12.9 % to 13.5 %, the geometric mean from 7.39 % to 7.47 %. lz4 and
    /// the pglz build nested in it keep `probe_bytes`.
    pub pglz_probe_bytes: usize,
    /// pglz's first refinements: each seed is refined once more, [`Refill::Pool`], its first
    /// rounds replacing this share of the budget rather than `FIRST_DROP_SHARE`; `None`:
    /// not (the swapped stage and lz4 never do). Larger first steps reach further from the
    /// seed, which some sets need and others lose by; the validation rows choose per set.
    /// On the corpus 0.75 raised the gain over zstd's trainer from 7.31 % to 7.64 % (user
    /// agents 1.9 % to 4.4 %, no other set changed), for 5-20 % more build time; refining it
    /// both ways gave the same dictionaries for 30-55 % more. All first refinements at 0.75
    /// gave 7.14 %; an extra 0.35 both ways 7.44 % (GSoC 10.3 % to 9.2 %).
    pub pglz_wide_first_drop: Option<f64>,
    /// Whether pglz's refinements of the residual way (also in the swapped stage) and the
    /// wide way credit each dictionary copy only for the bytes the row's plain parse left
    /// literal ([`Probe::crediting_new_bytes`]; the pool ways credit every byte copied). A
    /// copy of what the datum would have copied from itself saves little, which the usual
    /// credit misses on long rows; and two ways of judging pieces give the validation rows
    /// more to choose from. On the corpus it raised the gain over zstd's trainer from 7.64 %
    /// to 7.93 % (MDN 12.7 % to 14.4 %, GSoC 10.3 % to 10.5 %, HTML 5.7 % to 6.1 %, fortunes
    /// 6.5 % to 6.7 %, user agents 4.40 % to 4.29 %); the first refinements alone 7.89 %.
    /// For every refinement it gave 7.75 % (user agents 3.5 %), for all first ones 7.70 %,
    /// for the wide way alone 7.81 %. The nested pglz build of lz4 does not.
    pub pglz_new_bytes_credit: bool,
    /// pglz's first refinements: more refinements of single seeds with more
    /// [`Self::patience`] (rejected rounds in a row before the steps shrink), each
    /// [`PatientRefinement`] one; empty: none. A more patient refinement settles elsewhere,
    /// and the validation rows choose; what helps is more diverse results to choose from.
    /// On the corpus the best seed's pool way with patience 4 raised the gain over zstd's
    /// trainer from 7.93 % to 7.96 % (airports 10.3 % to 10.5 %, geonames 6.18 % to 6.23 %;
    /// no set lost) for 6 % more build time (10,000 geonames rows: 9.1 to 9.6 s).
    /// Besides it, the same with patience 5 gave 7.94 % (airports 10.3 %: the validation
    /// rows took the patience-5 result), patience 4 for the second seed's residual way
    /// 7.94 % (GSoC 10.4 %), both 7.92 %; the best seed's residual or wide way with
    /// patience 4 was never chosen, nor (earlier) the second seed's pool way.
    /// Patience 4 in place of 3 for every first refinement gave 7.75 % (user agents 4.3 %
    /// to 3.1 %), for the swapped stage 7.91 %, for all three first ways of the best seed
    /// 7.78 %. The nested pglz build of lz4 does none.
    pub pglz_patient_refinements: Vec<PatientRefinement>,
    /// Whether the swapped stage's swapped roles (not the first roles again) also refine the
    /// pool way with their probe crediting new bytes only ([`Self::pglz_new_bytes_credit`]):
    /// one more result for the validation rows to choose from, judged another way. On the
    /// corpus it raised the gain over zstd's trainer from 7.96 % to 7.99 % (airports 10.5 %
    /// to 10.6 %, MDN 14.35 % to 14.49 %, GSoC 10.54 % to 10.56 %; HTML and fortunes
    /// -0.01 %), and with 6 [`Self::swap_rounds`] rather than 4 to 8.01 %; both together
    /// took the 10,000-row geonames build from 9.34-9.53 s to 11.68-11.85 s (four
    /// alternated pairs: mean 9.43 to 11.77 s, +24.8 %). Also for the first roles it gave
    /// 7.98 % (Debian 5.32 % to 5.25 %), for them alone 7.95 %.
    pub pglz_swapped_new_bytes_pool: bool,
}

/// One of pglz's more patient first refinements ([`PgdictBuilder::pglz_patient_refinements`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatientRefinement {
    /// Which seed, by rank on the probe rows (0: the best); skipped if there are fewer.
    pub seed: usize,
    /// The way it refills; [`Refill::Residual`] credits new bytes only, as the first
    /// residual refinements do ([`PgdictBuilder::pglz_new_bytes_credit`]).
    pub refill: Refill,
    /// Rejected rounds in a row before the share replaced is halved.
    pub patience: usize,
}

/// Where a refinement takes its new candidate segments from. The builder refines each of its
/// best seeds once each way and keeps the result that stores the validation rows smallest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refill {
    /// Runs of the pool rows whose k-mers many rows hold (the counts of all the samples).
    Pool,
    /// The same, with k-mers counted only where the current dictionary leaves the pool rows
    /// costly (literals and short copies): what the rows still lack, the marginal gain.
    Residual,
}

impl Refill {
    /// Both ways, in the order they are tried.
    pub const ALL: [Refill; 2] = [Refill::Pool, Refill::Residual];
}

impl Default for PgdictBuilder {
    fn default() -> Self {
        PgdictBuilder {
            k: None,
            count_bytes: 16 << 20,
            pool_bytes: 2 << 20,
            probe_bytes: 1 << 20,
            validation_bytes: 1 << 20,
            residual_short: 5,
            min_df_share: 0.001,
            max_rounds: 300,
            patience: 3,
            lz4_patience: 5,
            zstd_seeds: true,
            refined_seeds: 2,
            lz4_refined_seeds: 3,
            max_probe_bytes: 384 << 20,
            swapped_stage: true,
            swap_rounds: 6,
            pglz_probe_bytes: 2 << 20,
            pglz_wide_first_drop: Some(0.75),
            pglz_new_bytes_credit: true,
            pglz_patient_refinements: vec![PatientRefinement {
                seed: 0,
                refill: Refill::Pool,
                patience: 4,
            }],
            pglz_swapped_new_bytes_pool: true,
        }
    }
}

/// The size of the zstd dictionary whose end seeds the refinement, besides one of the budget.
const ZSTD_SEED_SIZE: usize = 64 * 1024;

/// Longest piece a seed dictionary is cut into.
const SEED_PIECE: usize = 64;

/// Share of the budget replaced by the first rounds (pglz; lz4's); refinement ends when it is
/// under [`MIN_DROP_SHARE`]. Large first steps reach further from the seed: on the corpus,
/// starting at half (pglz) and three quarters (lz4) rather than a quarter raised the gain over
/// zstd's trainer from 6.4 % to 7.0 % (pglz) and from 4.2 % to 4.9 % (lz4).
const FIRST_DROP_SHARE: f64 = 0.5;
const LZ4_FIRST_DROP_SHARE: f64 = 0.75;
const MIN_DROP_SHARE: f64 = 0.01;

/// A residual k-mer must be costly in this share of the pool rows (and in 2 at least) to be
/// part of a [`Refill::Residual`] candidate.
const RESIDUAL_MIN_DF_SHARE: f64 = 0.002;

/// Refinements [`PgdictBuilder::refine_all`] runs: starts, their context, the first drop
/// share and the refill ways.
type RefineGroup<'s, 'p, 'a> = (&'s [State], &'s Context<'p, 'a>, f64, &'s [Refill]);

/// What every refinement round reads.
struct Context<'p, 'a> {
    /// The candidates of the pool rows, by the counts of all the samples.
    pool: &'p Pool<'a>,
    /// The rows candidates are cut from.
    pool_rows: &'p [&'a [u8]],
    /// The rows each trial is compressed with.
    probe: &'p Probe<'a>,
    /// Dictionary bytes at most.
    budget: usize,
    /// The k-mer length.
    k: usize,
    /// Whether the codec indexes the dictionary on a grid (lz4): trials keep the phase.
    grid: bool,
    /// The `min_df` of residual pools.
    residual_min_df: u32,
    /// Rejected rounds in a row before the share replaced is halved; `None`: the builder's.
    patience: Option<usize>,
}

impl<'p, 'a> Context<'p, 'a> {
    fn new(
        pool: &'p Pool<'a>,
        pool_rows: &'p [&'a [u8]],
        probe: &'p Probe<'a>,
        budget: usize,
        k: usize,
        grid: bool,
    ) -> Self {
        Context {
            pool,
            pool_rows,
            probe,
            budget,
            k,
            grid,
            residual_min_df: ((pool_rows.len() as f64 * RESIDUAL_MIN_DF_SHARE).ceil() as u32)
                .max(2),
            patience: None,
        }
    }
}

/// Below this many rows the probe is all of them (and candidates come from the same rows).
const MIN_ROWS_TO_SPLIT: usize = 40;

/// zstd's dictionary magic number as it starts a dictionary file: pgdict prepares bytes that
/// start with it as a zstd-format dictionary, so a built dictionary must not.
const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];

/// Distances from the end of an lz4 dictionary at which its parts are shifted against each
/// other ([`shift`]).
const LZ4_SHIFT_POINTS: [usize; 20] = [
    512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336,
    16384, 20480, 24576, 32768, 49152,
];

/// liblz4 indexes every this many dictionary positions, counted from the dictionary's start.
const LZ4_DICT_STEP: usize = 3;

/// The phase of an lz4 dictionary of `len` bytes: with the same phase, the bytes at each
/// distance from the end are indexed (or not) the same way, however long the dictionary.
/// (`LZ4_loadDict` hashes positions 0, 3, 6, ... from the start, and each of the 4096 slots
/// keeps the last position hashed there: which of a repeated string's copies a datum finds,
/// and how far the match then runs, change with the phase; on the user-agent rows cutting
/// two bytes from the front of zstd's dictionary changes the lz4 ratio from 5.07 to 5.75.)
fn lz4_phase(len: usize) -> usize {
    len % LZ4_DICT_STEP
}

/// The k-mer length that suits a codec's match finder.
pub fn codec_k(codec: Codec) -> usize {
    match codec {
        Codec::Pglz => 4,
        Codec::Lz4 | Codec::Zstd => 5,
    }
}

/// A piece of the dictionary being refined.
#[derive(Clone, Debug)]
struct Piece {
    bytes: Vec<u8>,
    /// Stored bytes it saved in the last probe (0 before it was probed).
    earned: f64,
    /// Whether the round being tried added it.
    fresh: bool,
}

impl Piece {
    fn density(&self) -> f64 {
        self.earned / self.bytes.len().max(1) as f64
    }
}

/// The dictionary being refined: its pieces in order, the joined bytes, where each piece
/// starts, and what the probe measured.
#[derive(Clone)]
struct State {
    pieces: Vec<Piece>,
    dict: Vec<u8>,
    starts: Vec<usize>,
    outcome: Outcome,
}

impl State {
    /// Joins `pieces`, probes the result and credits each piece with its bytes' usage. With a
    /// `phase` (lz4), up to two bytes are first cut from the front so that the length is
    /// `phase` modulo [`LZ4_DICT_STEP`]: then every byte at the same distance from the end is
    /// hashed or not as before ([`lz4_phase`]).
    fn new(mut pieces: Vec<Piece>, probe: &Probe<'_>, phase: Option<usize>) -> State {
        if let Some(phase) = phase {
            let len: usize = pieces.iter().map(|p| p.bytes.len()).sum();
            let mut cut = (len + LZ4_DICT_STEP - phase) % LZ4_DICT_STEP;
            if len > LZ4_DICT_STEP {
                while cut > 0 {
                    let first = &mut pieces[0].bytes;
                    let n = cut.min(first.len());
                    first.drain(..n);
                    cut -= n;
                    if first.is_empty() {
                        pieces.remove(0);
                    }
                }
            }
        }
        let mut dict = Vec::new();
        let mut starts = Vec::with_capacity(pieces.len());
        for piece in &pieces {
            starts.push(dict.len());
            dict.extend_from_slice(&piece.bytes);
        }
        let outcome = probe.measure(&dict, true);
        for (piece, &start) in pieces.iter_mut().zip(&starts) {
            piece.earned = outcome.usage[start..start + piece.bytes.len()].iter().sum();
        }
        State {
            pieces,
            dict,
            starts,
            outcome,
        }
    }

    /// The mean datum position at which each piece was copied (0 if never).
    fn mean_positions(&self) -> Vec<f64> {
        self.pieces
            .iter()
            .zip(&self.starts)
            .map(|(piece, &start)| {
                let range = start..start + piece.bytes.len();
                let used: f64 = self.outcome.usage[range.clone()].iter().sum();
                let reach: f64 = self.outcome.reach[range].iter().sum();
                if used > 0.0 {
                    reach / used
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// At most this share of the rows (the longest) is cut by [`cut_over_long`]: outliers.
const MAX_OVER_LONG_SHARE: f64 = 0.125;

/// The bytes of the smallest slice the split takes from `total` bytes of rows: the probe's or
/// the validation rows' (see [`PgdictBuilder::build_noting`]).
fn smallest_slice(total: usize, probe_bytes: usize, validation_bytes: usize) -> usize {
    let probe = probe_bytes.min(total / 3);
    let validation = validation_bytes.min(total / 6);
    if validation == 0 {
        probe
    } else {
        probe.min(validation)
    }
}

/// `rows`, the few longest cut to a prefix when one alone would be more than half of the
/// smallest slice of the split (by the bytes of the other rows): the slices are taken by
/// bytes, so a 4 MB row among small ones was the whole probe, or left no candidate rows. The
/// prefix is what a dictionary helps most (a pglz datum reaches it only from its first 4095
/// bytes, an lz4 datum from its first 64 KiB).
fn cut_over_long(mut rows: Vec<&[u8]>, probe_bytes: usize, validation_bytes: usize) -> Vec<&[u8]> {
    let mut longest_first: Vec<usize> = (0..rows.len()).collect();
    longest_first.sort_by_key(|&i| std::cmp::Reverse(rows[i].len()));
    let most = (rows.len() as f64 * MAX_OVER_LONG_SHARE) as usize;
    // Bytes of the rows not cut.
    let mut rest: usize = rows.iter().map(|r| r.len()).sum();
    let mut over_long = 0;
    for &i in longest_first.iter().take(most) {
        let without = rest - rows[i].len();
        if rows[i].len() <= smallest_slice(without, probe_bytes, validation_bytes) / 2 {
            break;
        }
        rest = without;
        over_long += 1;
    }
    let limit = (smallest_slice(rest, probe_bytes, validation_bytes) / 2).max(1);
    for &i in &longest_first[..over_long] {
        rows[i] = &rows[i][..limit];
    }
    rows
}

/// Rows taken evenly from `rows` (every n-th from the first, skipping `skip`) until
/// `max_bytes`; their indexes. When the rows stepped on are (nearly) all skipped, so that
/// they give less than a quarter of what is wanted (a step that is a multiple of the probe's
/// lands on probe rows only), each skipped row gives its turn to the next row of its step that
/// is not.
fn spread(rows: &[&[u8]], max_bytes: usize, skip: &HashSet<usize>) -> Vec<usize> {
    // Only then: on the corpus, giving every skipped row's turn to its neighbour also under
    // the default sizes took the next rows of sorted sets (near copies of the probe's) into
    // the candidate pool, and the gain over zstd's trainer fell from 7.0 % to 6.7 % (MDN
    // 12.2 % to 10.8 %, Debian 5.1 % to 4.6 %). Not only when nothing was picked: with the
    // probe and the pool both 2 MiB of a large sample, the probe stopped a few steps before
    // the end and the pool got just the rows of those steps (64 rows, 14 KB). Below half
    // rather than a quarter: the trainer's held-out bytes (8 sets x pglz, lz4, seed 1) were
    // better for 4 of the 5 dictionaries it changed (GSoC lz4 -4.2 %, Debian pglz +0.08 %),
    // but the `builders` example's split lost MDN 14.5 % -> 13.3 % (pglz) and the pglz gain
    // over zstd's trainer fell from 8.0 % to 7.9 %, under the trainer issue's 8.
    let picked = spread_with(rows, max_bytes, skip, false);
    let bytes_of = |indexes: &[usize]| indexes.iter().map(|&i| rows[i].len()).sum::<usize>();
    let available: usize = (0..rows.len())
        .filter(|i| !skip.contains(i))
        .map(|i| rows[i].len())
        .sum();
    if bytes_of(&picked) < max_bytes.min(available) / 4 {
        spread_with(rows, max_bytes, skip, true)
    } else {
        picked
    }
}

fn spread_with(
    rows: &[&[u8]],
    max_bytes: usize,
    skip: &HashSet<usize>,
    next_in_step: bool,
) -> Vec<usize> {
    let total: usize = rows.iter().map(|r| r.len()).sum();
    let step = total.div_ceil(max_bytes.max(1)).max(1);
    let mut picked = Vec::new();
    let mut bytes = 0;
    let mut i = 0;
    while i < rows.len() && bytes < max_bytes {
        let last = if next_in_step {
            (i + step).min(rows.len())
        } else {
            i + 1
        };
        if let Some(j) = (i..last).find(|j| !skip.contains(j)) {
            picked.push(j);
            bytes += rows[j].len();
        }
        i += step;
    }
    picked
}

/// `dict` cut into pieces of at most [`SEED_PIECE`] bytes, each cut where `usage` is lowest;
/// runs of unused bytes are pieces of their own, so that refinement can drop them.
fn cut(dict: &[u8], usage: &[f64]) -> Vec<Piece> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, &u) in usage.iter().enumerate() {
        match runs.last_mut() {
            Some(last) if (usage[last.0] > 0.0) == (u > 0.0) => last.1 = i + 1,
            _ => runs.push((i, i + 1)),
        }
    }
    let mut pieces = Vec::new();
    for (mut start, end) in runs {
        while end - start > SEED_PIECE {
            let at = (start + SEED_PIECE / 2..start + SEED_PIECE)
                .min_by(|&a, &b| usage[a].total_cmp(&usage[b]))
                .unwrap_or(start + SEED_PIECE);
            pieces.push((start, at));
            start = at;
        }
        pieces.push((start, end));
    }
    pieces
        .into_iter()
        .map(|(start, end)| Piece {
            bytes: dict[start..end].to_vec(),
            earned: 0.0,
            fresh: false,
        })
        .collect()
}

impl PgdictBuilder {
    /// Builds a dictionary of at most `size` bytes for `codec` from `samples`; empty when
    /// nothing recurs across rows. For zstd, which has its own trainer built for its format,
    /// this is zstd's trainer.
    pub fn build<S: AsRef<[u8]>>(
        &self,
        samples: &[S],
        codec: Codec,
        size: usize,
    ) -> Result<Vec<u8>, BuildError> {
        self.build_noting(samples, codec, size, &|_| {})
    }

    /// [`PgdictBuilder::build`], telling `note` which stage (see the top) begins: counting,
    /// seeding, rating, refining, refining with swapped roles (each round), choosing. An lz4
    /// build's seed that ends in a pglz dictionary tells that build's stages while seeding.
    pub fn build_noting<S: AsRef<[u8]>>(
        &self,
        samples: &[S],
        codec: Codec,
        size: usize,
        note: &dyn Fn(&str),
    ) -> Result<Vec<u8>, BuildError> {
        if codec == Codec::Zstd {
            return super::zstd::build(samples, codec, size);
        }
        let budget = size.min(max_useful_size(codec));
        let k = self
            .k
            .unwrap_or_else(|| codec_k(codec))
            .clamp(1, kmer::MAX_K);
        let rows: Vec<&[u8]> = samples
            .iter()
            .map(|s| s.as_ref())
            .filter(|r| !r.is_empty())
            .collect();
        if rows.is_empty() {
            return Err(BuildError::NoSamples);
        }

        // The probe rows are kept apart from the rows new segments are cut from, so that a
        // segment is kept for helping other rows, not the row it came from.
        let split = rows.len() >= MIN_ROWS_TO_SPLIT;
        let probe_bytes = if codec == Codec::Pglz {
            self.pglz_probe_bytes
        } else {
            self.probe_bytes
        };
        let rows = if split {
            cut_over_long(rows, probe_bytes, self.validation_bytes)
        } else {
            rows
        };
        let total_bytes: usize = rows.iter().map(|r| r.len()).sum();
        let probe_index = if split {
            spread(&rows, probe_bytes.min(total_bytes / 3), &HashSet::new())
        } else {
            (0..rows.len()).collect()
        };
        let probe_set: HashSet<usize> = if split {
            probe_index.iter().copied().collect()
        } else {
            HashSet::new()
        };
        let count_rows: Vec<&[u8]> = spread(&rows, self.count_bytes, &HashSet::new())
            .into_iter()
            .map(|i| rows[i])
            .collect();
        let min_df = ((count_rows.len() as f64 * self.min_df_share).ceil() as u32).max(2);
        // Validation rows, apart from both: they choose between refined dictionaries, so that
        // the choice does not reward fitting the probe rows.
        let valid_index = if split {
            let rest: Vec<usize> = (0..rows.len()).filter(|i| !probe_set.contains(i)).collect();
            let rest_bytes: usize = rest.iter().map(|&i| rows[i].len()).sum();
            let want = self.validation_bytes.min(total_bytes / 6);
            if want == 0 {
                Vec::new()
            } else {
                let step = rest_bytes.div_ceil(want).max(1);
                rest.into_iter().step_by(step).collect()
            }
        } else {
            Vec::new()
        };
        let mut apart = probe_set;
        apart.extend(valid_index.iter().copied());
        let mut pool_rows: Vec<&[u8]> = spread(&rows, self.pool_bytes, &apart)
            .into_iter()
            .map(|i| rows[i])
            .collect();
        let probe_rows: Vec<&[u8]> = probe_index.iter().map(|&i| rows[i]).collect();
        // Only the k-mers of the rows pools are made of (the pool rows, and the probe rows in
        // the swapped stage) are ever looked up.
        let count_for = |pool_rows: &[&[u8]]| {
            note(&format!(
                "counting the {k}-byte strings of {}",
                counted(count_rows.len() as u64, "row")
            ));
            let wanted: Vec<&[u8]> = pool_rows.iter().chain(&probe_rows).copied().collect();
            KmerCounts::count_only(&count_rows, k, &wanted)
        };
        let mut counts = count_for(&pool_rows);
        let mut pool = Pool::new(pool_rows.clone(), &counts, min_df);
        if pool.is_empty() && split {
            // The rows apart from the probe and validation rows share nothing; rows of every
            // role, rather than no dictionary.
            pool_rows = spread(&rows, self.pool_bytes, &HashSet::new())
                .into_iter()
                .map(|i| rows[i])
                .collect();
            counts = count_for(&pool_rows);
            pool = Pool::new(pool_rows.clone(), &counts, min_df);
        }
        if pool.is_empty() {
            return Ok(Vec::new());
        }
        // Only the swapped stage's pools need the counts again: kept for it alone, and
        // dropped once those are made, not held while every refinement allocates its own.
        let swapped_stage = self.swapped_stage && codec == Codec::Pglz && split;
        let counts_for_swap = swapped_stage.then_some(counts);
        let probe = Probe::new(probe_rows, codec);
        let valid = Probe::new(valid_index.iter().map(|&i| rows[i]).collect(), codec);

        // Seeds.
        note("seeding");
        let mut seeds: Vec<Vec<u8>> = Vec::new();
        let mut own = pool.select(&KmerSet::default(), &HashSet::new(), budget);
        own.reverse(); // chosen best first; the best goes last
        seeds.push(own.into_iter().flat_map(|s| s.bytes).collect());
        if self.zstd_seeds {
            let mut sizes = vec![budget, ZSTD_SEED_SIZE.max(budget)];
            sizes.dedup();
            for train_size in sizes {
                // zstd's trainer refuses too few or too small samples: then it seeds nothing.
                if let Ok(z) = super::zstd::train(&count_rows, train_size) {
                    seeds.push(z[z.len().saturating_sub(budget)..].to_vec());
                }
            }
            // For lz4, zstd's dictionary again, its end replaced by pgdict's own pglz
            // dictionary: the end is where liblz4's hash slots survive (see the top).
            if codec == Codec::Lz4 && budget > max_useful_size(Codec::Pglz) {
                if let Ok(z) = super::zstd::train(&count_rows, budget) {
                    // One seed refined (two ways): half the work of a pglz build. Without
                    // the swapped stage: with it the lz4 gain over zstd's trainer fell from
                    // 5.2 % to 4.9 % (airports 5.5 % to 3.3 %). Without crediting new bytes,
                    // no patient refinement runs.
                    let nested = PgdictBuilder {
                        refined_seeds: 1,
                        swapped_stage: false,
                        pglz_probe_bytes: self.probe_bytes,
                        pglz_wide_first_drop: None,
                        pglz_new_bytes_credit: false,
                        ..self.clone()
                    };
                    // About a third of an lz4 build's time (29 % on the MDN rows, 36 % on
                    // airports): its stages are told too.
                    let end = nested.build_noting(
                        samples,
                        Codec::Pglz,
                        max_useful_size(Codec::Pglz),
                        &|stage| note(&format!("seeding the end with pglz: {stage}")),
                    )?;
                    let keep = budget.saturating_sub(end.len()).min(z.len());
                    let mut seed = z[z.len() - keep..].to_vec();
                    seed.extend_from_slice(&end);
                    seeds.push(seed);
                }
            }
        }
        // An lz4 seed is rated at each phase (0 to 2 bytes cut from its front), the best kept;
        // refinement then keeps that phase.
        let phases = if codec == Codec::Lz4 {
            LZ4_DICT_STEP
        } else {
            1
        };
        note(&format!("rating {}", counted(seeds.len() as u64, "seed")));
        let mut rated: Vec<(Vec<u8>, Outcome)> = seeds
            .into_iter()
            .map(|seed| {
                (0..phases.min(seed.len()).max(1))
                    .map(|cut| {
                        let outcome = probe.measure(&seed[cut..], true);
                        (seed[cut..].to_vec(), outcome)
                    })
                    .min_by_key(|(_, outcome)| outcome.stored)
                    .expect("a seed is measured once at least")
            })
            .collect();
        rated.sort_by_key(|(_, outcome)| outcome.stored);
        let refined = if codec == Codec::Lz4 {
            self.lz4_refined_seeds
        } else {
            self.refined_seeds
        };
        rated.truncate(refined.max(1));
        let starts: Vec<State> = rated
            .iter()
            .map(|(seed, outcome)| State::new(cut(seed, &outcome.usage), &probe, None))
            .collect();

        // Refinement: each start once each way; the validation rows choose, the first listed
        // on a tie.
        let context = Context::new(&pool, &pool_rows, &probe, budget, k, codec == Codec::Lz4);
        note(&format!(
            "refining {}",
            counted(starts.len() as u64, "seed")
        ));
        let mut results = if codec == Codec::Pglz && self.pglz_new_bytes_credit {
            // The residual and the wide way judge pieces by the bytes they add to what the
            // rows copy from themselves; the pool way as before.
            let new_probe = probe.clone().crediting_new_bytes();
            let new_starts: Vec<State> = rated
                .iter()
                .map(|(seed, _)| {
                    let outcome = new_probe.measure(seed, true);
                    State::new(cut(seed, &outcome.usage), &new_probe, None)
                })
                .collect();
            let new_context = Context::new(&pool, &pool_rows, &new_probe, budget, k, false);
            let mut groups: Vec<RefineGroup> = vec![
                (&starts, &context, FIRST_DROP_SHARE, &[Refill::Pool]),
                (
                    &new_starts,
                    &new_context,
                    FIRST_DROP_SHARE,
                    &[Refill::Residual],
                ),
            ];
            if let Some(wide) = self.pglz_wide_first_drop {
                groups.push((&new_starts, &new_context, wide, &[Refill::Pool]));
            }
            let patient: Vec<(&PatientRefinement, Context)> = self
                .pglz_patient_refinements
                .iter()
                .filter(|p| p.seed < starts.len())
                .map(|p| {
                    let probe = match p.refill {
                        Refill::Pool => &probe,
                        Refill::Residual => &new_probe,
                    };
                    let mut context = Context::new(&pool, &pool_rows, probe, budget, k, false);
                    context.patience = Some(p.patience);
                    (p, context)
                })
                .collect();
            for (p, context) in &patient {
                let starts = match p.refill {
                    Refill::Pool => &starts,
                    Refill::Residual => &new_starts,
                };
                groups.push((
                    &starts[p.seed..=p.seed],
                    context,
                    FIRST_DROP_SHARE,
                    std::slice::from_ref(&p.refill),
                ));
            }
            self.refine_all(&groups, &valid)
        } else {
            let mut ways: Vec<(f64, &[Refill])> = vec![(FIRST_DROP_SHARE, &Refill::ALL)];
            if let (Codec::Pglz, Some(wide)) = (codec, self.pglz_wide_first_drop) {
                ways.push((wide, &[Refill::Pool]));
            }
            let groups: Vec<RefineGroup> = ways
                .iter()
                .map(|&(drop, refills)| (&starts[..], &context, drop, refills))
                .collect();
            self.refine_all(&groups, &valid)
        };
        // pglz: the best result so far (on the validation rows) is refined once more, each
        // way, with other rows in the roles of the probe and the candidates: the first
        // refinements fitted their probe rows; fresh rows judge the pieces anew, and fresh
        // candidate rows offer pieces not tried yet. Three variants (new probe from the pool
        // rows with candidates from the former probe rows or from the rest of the pool; the
        // rest of the pool as probe with the former probe rows as candidates) and the first
        // roles again, each round from the best so far. On the corpus the second and third
        // variants raised the gain over zstd's trainer from 7.32 % to 7.39 % (airports 9.6 %
        // to 10.0 %); no set lost.
        // The validation rows, apart from all of them, still choose among all results.
        if let Some(counts) = counts_for_swap {
            let new_probe_index = spread(&pool_rows, probe.bytes(), &HashSet::new());
            let new_probe_set: HashSet<usize> = new_probe_index.iter().copied().collect();
            let new_probe_rows: Vec<&[u8]> =
                new_probe_index.iter().map(|&i| pool_rows[i]).collect();
            let rest_pool_rows: Vec<&[u8]> = (0..pool_rows.len())
                .filter(|i| !new_probe_set.contains(i))
                .map(|i| pool_rows[i])
                .collect();
            let old_probe_rows: Vec<&[u8]> = probe_index.iter().map(|&i| rows[i]).collect();
            // Each variant's probe and pool, built once for every round (they do not depend
            // on the start). The last variant is no swap: the first roles again, with the
            // first refinements' own probe and pool, from the best so far (on the corpus
            // 7.63 -> 7.69 %, user agents 4.4 -> 4.6 %; no set lost).
            let swapped: Vec<(Probe, Pool, Vec<&[u8]>)> = [
                (new_probe_rows.clone(), old_probe_rows.clone()),
                (new_probe_rows, rest_pool_rows.clone()),
                (rest_pool_rows, old_probe_rows),
            ]
            .into_iter()
            .filter(|(probe_rows, pool_rows)| !probe_rows.is_empty() && !pool_rows.is_empty())
            .map(|(probe_rows, pool_rows)| {
                let pool = Pool::new(pool_rows.clone(), &counts, min_df);
                (Probe::new(probe_rows, codec), pool, pool_rows)
            })
            .collect();
            drop(counts);
            let first_roles = (probe.rows() > 0 && !pool_rows.is_empty()).then_some((
                &probe,
                &pool,
                &pool_rows[..],
            ));
            let variants: Vec<(&Probe, &Pool, &[&[u8]])> = swapped
                .iter()
                .map(|(probe, pool, pool_rows)| (probe, pool, &pool_rows[..]))
                .chain(first_roles)
                .collect();
            let new_probes: Vec<Option<Probe>> = variants
                .iter()
                .map(|v| {
                    self.pglz_new_bytes_credit
                        .then(|| v.0.clone().crediting_new_bytes())
                })
                .collect();
            let mut done: Vec<Vec<u8>> = Vec::new();
            for round in 1..=self.swap_rounds {
                note(&format!(
                    "refining with other rows in the roles, round {round} of at most {}",
                    self.swap_rounds
                ));
                let (_, first) = results
                    .iter()
                    .min_by_key(|(stored, _)| *stored)
                    .expect("at least one way to refill");
                if done.contains(first) {
                    break; // the same start would give the same results
                }
                let first = first.clone();
                for (i, (&(variant_probe, variant_pool, variant_pool_rows), new_probe)) in
                    variants.iter().zip(&new_probes).enumerate()
                {
                    // The pool way with the variant's probe; the residual way with the same
                    // rows crediting new bytes only (when `pglz_new_bytes_credit`), and for
                    // the swapped roles (the first `swapped.len()` variants) the pool way so
                    // too (when `pglz_swapped_new_bytes_pool`). Ways judged by the same probe
                    // share one start: measuring it twice would give the same state.
                    let ways: Vec<(&Probe, Vec<Refill>)> = match new_probe {
                        Some(new_probe) => {
                            let mut new_ways = vec![Refill::Residual];
                            if self.pglz_swapped_new_bytes_pool && i < swapped.len() {
                                new_ways.push(Refill::Pool);
                            }
                            vec![(variant_probe, vec![Refill::Pool]), (new_probe, new_ways)]
                        }
                        None => vec![(variant_probe, Refill::ALL.to_vec())],
                    };
                    let starts: Vec<(State, Context)> = ways
                        .iter()
                        .map(|&(probe, _)| {
                            let outcome = probe.measure(&first, true);
                            let start = State::new(cut(&first, &outcome.usage), probe, None);
                            let context = Context::new(
                                variant_pool,
                                variant_pool_rows,
                                probe,
                                budget,
                                k,
                                false,
                            );
                            (start, context)
                        })
                        .collect();
                    let groups: Vec<RefineGroup> = starts
                        .iter()
                        .zip(&ways)
                        .map(|((start, context), (_, refills))| {
                            (
                                std::slice::from_ref(start),
                                context,
                                FIRST_DROP_SHARE,
                                &refills[..],
                            )
                        })
                        .collect();
                    let more = self.refine_all(&groups, &valid);
                    results.extend(more);
                }
                done.push(first);
            }
        }
        note(&format!(
            "choosing among {} results on {}",
            results.len(),
            counted(valid.rows() as u64, "validation row")
        ));
        Ok(choose(results, codec, &valid).expect("at least one way to refill"))
    }

    /// Refines, for each group `(starts, context, first drop share, refill ways)`, each start
    /// once per refill way (the drop share is pglz's; lz4 starts at [`LZ4_FIRST_DROP_SHARE`]
    /// whatever it is given). They run side by side on threads; each refinement's work is
    /// bounded on its own, so the results do not depend on the order they run in. The
    /// results in the order of the groups, then of their starts, then of the refill ways.
    fn refine_all(
        &self,
        groups: &[RefineGroup<'_, '_, '_>],
        valid: &Probe<'_>,
    ) -> Vec<(usize, Vec<u8>)> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = groups
                .iter()
                .flat_map(|&(starts, context, drop, refills)| {
                    starts.iter().flat_map(move |state| {
                        refills
                            .iter()
                            .map(move |&refill| (state, context, refill, drop))
                    })
                })
                .map(|(state, context, refill, drop)| {
                    scope.spawn(move || self.refine(state, context, valid, refill, drop))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a refinement panicked"))
                .collect()
        })
    }

    /// Refines `start`, new candidates coming from `refill`, the first rounds replacing
    /// `first_drop` of the budget (pglz), until it converges or has done
    /// [`Self::max_probe_bytes`] of work. Returns the refined dictionary that stores the
    /// `valid` rows smallest (or, without validation rows, the last), and that size (or the
    /// probe's).
    fn refine(
        &self,
        start: &State,
        context: &Context<'_, '_>,
        valid: &Probe<'_>,
        refill: Refill,
        first_drop: f64,
    ) -> (usize, Vec<u8>) {
        let probe = context.probe;
        let mut state = start.clone();
        // Row bytes compressed so far: by the probe, the validation rows and (for residual
        // counts) the pool rows.
        let mut work = 0;
        let pool_bytes: usize = context.pool_rows.iter().map(|r| r.len()).sum();
        let validate = |state: &State, work: &mut usize| {
            if valid.rows() > 0 {
                *work += valid.bytes();
                valid.measure(&state.dict, false).stored
            } else {
                state.outcome.stored
            }
        };
        let mut kept = (validate(&state, &mut work), state.dict.clone());
        let mut keep = |state: &State, work: &mut usize| {
            let stored = validate(state, work);
            if stored < kept.0 {
                kept = (stored, state.dict.clone());
            }
        };
        // The residual pool of the current state, made when a round first needs it (and
        // kept while the state is: rebuilding it every round was a sixth of a build).
        let mut residual: Option<Pool<'_>> = None;
        let mut banned: HashSet<u64> = HashSet::new();
        let mut drop_share = if context.grid {
            LZ4_FIRST_DROP_SHARE
        } else {
            first_drop
        };
        let mut rejected = 0;
        for round in 0..self.max_rounds {
            if drop_share < MIN_DROP_SHARE || work >= self.max_probe_bytes {
                break;
            }
            if round % 4 == 3 {
                let mut trial = reorder(&state, probe);
                work += probe.bytes();
                if !context.grid {
                    let valued = reorder_by_value(&state, probe);
                    work += probe.bytes();
                    if valued.outcome.stored < trial.outcome.stored {
                        trial = valued;
                    }
                }
                if trial.outcome.stored < state.outcome.stored {
                    state = trial;
                    residual = None;
                    keep(&state, &mut work);
                }
                continue;
            }
            // A replacing round probes its trial twice (as it is and reordered).
            work += 2 * probe.bytes();
            let (mut trial, dropped) = match refill {
                Refill::Pool => self.replace(&state, context.pool, &banned, drop_share, context),
                Refill::Residual => {
                    let pool = residual.get_or_insert_with(|| {
                        work += pool_bytes;
                        let marks = self.residual_marks(&state.dict, context);
                        context.pool.recounted(&marks, context.residual_min_df)
                    });
                    self.replace(&state, pool, &banned, drop_share, context)
                }
            };
            if trial.outcome.stored < state.outcome.stored {
                for piece in &mut trial.pieces {
                    piece.fresh = false;
                }
                state = trial;
                residual = None;
                keep(&state, &mut work);
                banned.extend(dropped);
                rejected = 0;
            } else {
                // Do not try again the new pieces that earned less per byte than the median
                // kept one: the next round refills with others.
                let mut old: Vec<f64> = trial
                    .pieces
                    .iter()
                    .filter(|p| !p.fresh)
                    .map(Piece::density)
                    .collect();
                old.sort_by(f64::total_cmp);
                let median = old.get(old.len() / 2).copied().unwrap_or(0.0);
                banned.extend(
                    trial
                        .pieces
                        .iter()
                        .filter(|p| p.fresh && p.density() < median)
                        .map(|p| fingerprint(&p.bytes)),
                );
                rejected += 1;
                let patience = if context.grid {
                    self.lz4_patience
                } else {
                    context.patience.unwrap_or(self.patience)
                };
                if rejected >= patience {
                    drop_share /= 2.0;
                    rejected = 0;
                }
            }
        }
        // lz4: which copy of a repeated string holds its hash slot, and so how far a match
        // found there runs, depends on the phase of each part against the grid; try shifting
        // the parts on either side of a few cut points by one or two bytes.
        if context.grid {
            for &back in &LZ4_SHIFT_POINTS {
                let mut best: Option<State> = None;
                for cut in 1..LZ4_DICT_STEP {
                    if work >= self.max_probe_bytes {
                        break;
                    }
                    if let Some(trial) = shift(&state, back, cut, probe) {
                        work += probe.bytes();
                        let to_beat = best.as_ref().unwrap_or(&state).outcome.stored;
                        if trial.outcome.stored < to_beat {
                            best = Some(trial);
                        }
                    }
                }
                if let Some(better) = best {
                    state = better;
                    keep(&state, &mut work);
                }
            }
        }
        kept
    }

    /// Per pool row, which of its k-mers `dict` leaves costly (by start position): those with
    /// a byte written literally or copied in a match shorter than [`Self::residual_short`].
    /// Their document frequencies over the pool rows value the residual candidates
    /// ([`Pool::recounted`]).
    fn residual_marks(&self, dict: &[u8], context: &Context<'_, '_>) -> Vec<Vec<bool>> {
        let k = context.k;
        let costly = costly_bytes(
            context.pool_rows,
            context.probe.codec(),
            dict,
            self.residual_short,
        );
        costly
            .iter()
            .map(|c| c.windows(k).map(|w| w.contains(&true)).collect())
            .collect()
    }

    /// A replacing round: trims unused ends, drops the pieces that earned least per byte
    /// (`drop_share` of the budget) and refills in front from `pool`; if moving pieces by
    /// where datums copy them ([`reorder`]) then helps the probe, the trial is the reordered
    /// one. Returns the probed trial (its new pieces marked `fresh`) and the fingerprints of
    /// the dropped pieces.
    fn replace(
        &self,
        state: &State,
        pool: &Pool<'_>,
        banned: &HashSet<u64>,
        drop_share: f64,
        context: &Context<'_, '_>,
    ) -> (State, Vec<u64>) {
        let (budget, k) = (context.budget, context.k);
        let align = context.grid;
        let mut pieces = state.pieces.clone();
        for (piece, &start) in pieces.iter_mut().zip(&state.starts) {
            let used = &state.outcome.usage[start..start + piece.bytes.len()];
            if let (Some(mut first), Some(mut last)) = (
                used.iter().position(|&u| u > 0.0),
                used.iter().rposition(|&u| u > 0.0),
            ) {
                if align {
                    // Trim by whole grid steps: the bytes kept stay on the grid as they were.
                    first -= first % LZ4_DICT_STEP;
                    let end_cut = used.len() - 1 - last;
                    last += end_cut % LZ4_DICT_STEP;
                }
                piece.bytes = piece.bytes[first..=last].to_vec();
            }
        }
        let mut order: Vec<usize> = (0..pieces.len()).collect();
        order.sort_by(|&a, &b| pieces[a].density().total_cmp(&pieces[b].density()));
        let target = (budget as f64 * drop_share) as usize;
        let mut freed = 0;
        let mut keep = vec![true; pieces.len()];
        let mut dropped = Vec::new();
        for &i in &order {
            if freed >= target {
                break;
            }
            keep[i] = false;
            freed += pieces[i].bytes.len();
            dropped.push(fingerprint(&pieces[i].bytes));
        }
        if align {
            // A dropped piece leaves its last (length mod 3) bytes at the end of the piece
            // before it, so that the pieces before it stay on the grid as they were.
            let mut kept_pieces: Vec<Piece> = Vec::with_capacity(pieces.len());
            for (piece, keep) in pieces.into_iter().zip(keep) {
                if keep {
                    kept_pieces.push(piece);
                } else if let Some(before) = kept_pieces.last_mut() {
                    let filler = piece.bytes.len() % LZ4_DICT_STEP;
                    before
                        .bytes
                        .extend_from_slice(&piece.bytes[piece.bytes.len() - filler..]);
                }
            }
            pieces = kept_pieces;
        } else {
            let mut keep = keep.into_iter();
            pieces.retain(|_| keep.next().unwrap_or(true));
        }

        let mut covered = KmerSet::default();
        for piece in &pieces {
            covered.extend(kmer::keys(&piece.bytes, k));
        }
        let mut trial_banned = banned.clone();
        trial_banned.extend(dropped.iter().copied());
        let kept: usize = pieces.iter().map(|p| p.bytes.len()).sum();
        // Chosen best first; the best goes nearest the kept pieces.
        let mut fresh: Vec<Piece> = pool
            .select(&covered, &trial_banned, budget.saturating_sub(kept))
            .into_iter()
            .rev()
            .map(|s| Piece {
                bytes: s.bytes,
                earned: 0.0,
                fresh: true,
            })
            .collect();
        fresh.append(&mut pieces);
        // New pieces in front are reachable only early in a datum (pglz) or lose their hash
        // slots to later positions (lz4); moving them where datums used them gives them a
        // fair trial.
        let phase = context.grid.then(|| lz4_phase(state.dict.len()));
        let trial = State::new(fresh, context.probe, phase);
        let moved = reorder(&trial, context.probe);
        let trial = if moved.outcome.stored < trial.outcome.stored {
            moved
        } else {
            trial
        };
        (trial, dropped)
    }
}

/// Of the refined `results` (each the stored size of the validation rows, or of the probe
/// rows without them, and the dictionary), the one that stores the validation rows smallest,
/// the first listed on a tie. For lz4 with validation rows, each result is tried also with
/// one and two bytes cut from its front: its phase ([`lz4_phase`]) is chosen too. A choice
/// that starts with zstd's dictionary magic loses its first byte (lz4: three, which keeps the
/// phase), the one a datum is least likely to reach. `None` if there is no result.
fn choose(results: Vec<(usize, Vec<u8>)>, codec: Codec, valid: &Probe<'_>) -> Option<Vec<u8>> {
    let mut best: Option<(usize, Vec<u8>)> = None;
    for (stored, dict) in results {
        // For lz4 the validation rows choose the phase too.
        let mut options = Vec::new();
        if codec == Codec::Lz4 && valid.rows() > 0 {
            for cut in 1..LZ4_DICT_STEP.min(dict.len()) {
                let stored = valid.measure(&dict[cut..], false).stored;
                options.push((stored, dict[cut..].to_vec()));
            }
        }
        options.insert(0, (stored, dict));
        for (stored, dict) in options {
            if best.as_ref().is_none_or(|b| stored < b.0) {
                best = Some((stored, dict));
            }
        }
    }
    let (_, mut dict) = best?;
    if dict.starts_with(&ZSTD_DICT_MAGIC) {
        // The first bytes are the ones a datum is least likely to reach; for lz4, three,
        // which keeps the phase.
        dict.drain(
            ..if codec == Codec::Lz4 {
                LZ4_DICT_STEP
            } else {
                1
            },
        );
    }
    Some(dict)
}

/// `state` with `cut` bytes removed from the start of the piece that starts nearest `back`
/// bytes before the end (not the first piece), probed; `None` if that piece is too short.
fn shift(state: &State, back: usize, cut: usize, probe: &Probe<'_>) -> Option<State> {
    let target = state.dict.len().checked_sub(back)?;
    let i = (1..state.pieces.len()).min_by_key(|&i| state.starts[i].abs_diff(target))?;
    if state.pieces[i].bytes.len() <= cut {
        return None;
    }
    let mut pieces = state.pieces.clone();
    pieces[i].bytes.drain(..cut);
    Some(State::new(pieces, probe, None))
}

/// The other order a pglz reordering round tries: pieces by what they earned per byte, least
/// first, so that the most valuable sit nearest the end, where every datum position reaches
/// them and the walk down a history list meets them first. On the corpus trying it besides
/// [`reorder`] raised the gain over zstd's trainer from 7.1 % to 7.3 % (the StackExchange
/// bodies 4.3 % to 5.7 %, no set lost). Not tried for lz4, whose end must also keep liblz4's
/// hash slots.
fn reorder_by_value(state: &State, probe: &Probe<'_>) -> State {
    let densities: Vec<f64> = state.pieces.iter().map(Piece::density).collect();
    sorted_by_keys(state, probe, &densities)
}

/// A reordering round: pieces by the mean datum position they were copied at, earliest first,
/// so that what datums need late sits nearest the end (a stable sort: pieces used together
/// keep their order).
fn reorder(state: &State, probe: &Probe<'_>) -> State {
    // The same length: an lz4 dictionary keeps its phase.
    sorted_by_keys(state, probe, &state.mean_positions())
}

/// `state`'s pieces in ascending order of `keys` (one per piece; a stable sort), measured
/// on `probe`.
fn sorted_by_keys(state: &State, probe: &Probe<'_>, keys: &[f64]) -> State {
    let mut order: Vec<usize> = (0..state.pieces.len()).collect();
    order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    State::new(
        order.iter().map(|&i| state.pieces[i].clone()).collect(),
        probe,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Vec<u8>> {
        (0..400)
            .map(|i| {
                format!(
                    "{{\"id\":{i},\"name\":\"station {}\",\"kind\":\"{}\",\"country\":\"{}\",\
                     \"timezone\":\"Europe/{}\"}}",
                    i * 7919 % 1000,
                    ["airport", "heliport", "seaplane_base"][i % 3],
                    ["FR", "DE", "IT", "ES"][i % 4],
                    ["Paris", "Berlin", "Rome", "Madrid"][i % 4],
                )
                .into_bytes()
            })
            .collect()
    }

    #[test]
    fn fits_the_window_and_helps() {
        let rows = rows();
        for (codec, size) in [(Codec::Pglz, 4096), (Codec::Lz4, 65536), (Codec::Pglz, 100)] {
            let dict = PgdictBuilder::default().build(&rows, codec, size).unwrap();
            assert!(!dict.is_empty());
            assert!(
                dict.len() <= size.min(max_useful_size(codec)),
                "{}",
                dict.len()
            );
            let plain = crate::eval::stored_bytes(&rows, codec, None).unwrap();
            let with = crate::eval::stored_bytes(&rows, codec, Some(&dict)).unwrap();
            assert!(with < plain, "{codec}: {with} >= {plain}");
        }
    }

    #[test]
    fn is_deterministic() {
        let rows = rows();
        let builder = PgdictBuilder::default();
        for (codec, size) in [(Codec::Pglz, 2048), (Codec::Lz4, 8192)] {
            let a = builder.build(&rows, codec, size).unwrap();
            let b = builder.build(&rows, codec, size).unwrap();
            assert_eq!(a, b, "{codec}");
        }
    }

    /// Bytes of a 64-bit LCG: no 4-byte string recurs.
    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (x >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn one_huge_row_does_not_take_the_split() {
        let small = rows();
        let mut huge = noise(100);
        huge.resize(1 << 20, b'x');
        let stored_with = |samples: &[Vec<u8>]| {
            let dict = PgdictBuilder::default()
                .build(samples, Codec::Pglz, 4096)
                .unwrap();
            crate::eval::stored_bytes(&small, Codec::Pglz, Some(&dict)).unwrap()
        };
        let without_huge = stored_with(&small);
        for huge_first in [true, false] {
            let mut samples = small.clone();
            if huge_first {
                samples.insert(0, huge.clone());
            } else {
                samples.push(huge.clone());
            }
            // It alone was the probe, or made every other row a validation row: no
            // candidate rows, no dictionary (or, from rows of every role, a worse one).
            let with = stored_with(&samples);
            assert!(
                with * 20 <= without_huge * 21,
                "huge first {huge_first}: {with} bytes, {without_huge} without it"
            );
        }
    }

    /// Where the rows apart from the probe and validation rows share nothing, the candidates
    /// come from rows of every role rather than no dictionary being built.
    #[test]
    fn candidates_come_from_every_row_when_the_pool_rows_share_nothing() {
        // Rows of one length: the probe takes every third (a third of the bytes), starting
        // with the first; those alone share content, the others are noise.
        let noise = noise(120 * 60);
        let rows: Vec<Vec<u8>> = (0..120)
            .map(|i| match i % 3 {
                0 => format!("{{\"kind\":\"airport\",\"country\":\"FR\",\"id\":{i:<21}}}")
                    .into_bytes(),
                _ => noise[i * 60..(i + 1) * 60].to_vec(),
            })
            .collect();
        assert!(rows.iter().all(|row| row.len() == 60));
        let dict = PgdictBuilder::default()
            .build(&rows, Codec::Pglz, 4096)
            .unwrap();
        assert!(!dict.is_empty(), "no dictionary");
        let shared: Vec<Vec<u8>> = rows.iter().step_by(3).cloned().collect();
        let plain = crate::eval::stored_bytes(&shared, Codec::Pglz, None).unwrap();
        let with = crate::eval::stored_bytes(&shared, Codec::Pglz, Some(&dict)).unwrap();
        assert!(with * 2 < plain, "{with} bytes with it, {plain} without");
    }

    #[test]
    fn only_the_over_long_rows_are_cut() {
        let small = rows();
        let huge = vec![b'x'; 1 << 20];
        let mut samples: Vec<&[u8]> = small.iter().map(|r| &r[..]).collect();
        samples.insert(7, &huge);
        let cut_rows = cut_over_long(samples.clone(), 2 << 20, 1 << 20);
        let small_bytes: usize = small.iter().map(|r| r.len()).sum();
        assert_eq!(cut_rows[7].len(), small_bytes / 6 / 2);
        assert_eq!(cut_rows[..7], samples[..7]);
        assert_eq!(cut_rows[8..], samples[8..]);
        // Rows of like lengths are left whole.
        assert_eq!(
            cut_over_long(samples[8..].to_vec(), 2 << 20, 1 << 20),
            samples[8..]
        );
    }

    #[test]
    fn nothing_shared_gives_nothing() {
        let rows: Vec<Vec<u8>> = noise(50 * 40).chunks(40).map(<[u8]>::to_vec).collect();
        let dict = PgdictBuilder::default()
            .build(&rows, Codec::Pglz, 4096)
            .unwrap();
        assert!(dict.is_empty());
    }

    #[test]
    fn lz4_phase_cuts_the_front_and_shift_cuts_inside() {
        let rows = rows();
        let row_refs: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        let probe = Probe::new(row_refs, Codec::Lz4);
        let dict: Vec<u8> = rows.concat()[..1000].to_vec();
        let pieces = |sizes: &[usize]| {
            let mut at = 0;
            sizes
                .iter()
                .map(|&n| {
                    at += n;
                    Piece {
                        bytes: dict[at - n..at].to_vec(),
                        earned: 0.0,
                        fresh: false,
                    }
                })
                .collect::<Vec<_>>()
        };
        // 1000 bytes have phase 1: phase 0 cuts one byte, phase 2 two (the first piece, of
        // one byte, goes whole); the end is kept.
        for (phase, cut, first_piece) in [(1, 0, 0..1), (0, 1, 1..500), (2, 2, 2..500)] {
            let state = State::new(pieces(&[1, 499, 500]), &probe, Some(phase));
            assert_eq!(lz4_phase(state.dict.len()), phase);
            assert_eq!(state.dict, dict[cut..]);
            assert_eq!(state.pieces[0].bytes, dict[first_piece]);
        }
        // Shifting 400 bytes before the end cuts the piece that starts at 500.
        let state = State::new(pieces(&[500, 500]), &probe, None);
        let shifted = shift(&state, 400, 2, &probe).unwrap();
        assert_eq!(shifted.dict[..500], dict[..500]);
        assert_eq!(shifted.dict[500..], dict[502..]);
    }

    #[test]
    fn spread_steps_past_skipped_rows() {
        let rows: Vec<&[u8]> = vec![b"0123456789"; 100];
        // The probe's rows are every other one; a spread of the rest stepping by 2 used to
        // land on probe rows only and pick nothing.
        let probe: HashSet<usize> = spread(&rows, 500, &HashSet::new()).into_iter().collect();
        assert_eq!(probe.len(), 50);
        let rest = spread(&rows, 500, &probe);
        assert_eq!(rest.len(), 50);
        assert!(rest.iter().all(|i| !probe.contains(i)));
        // Without skipped rows, every step's first row.
        assert_eq!(
            spread(&rows, 250, &HashSet::new()),
            (0..100).step_by(4).collect::<Vec<_>>()
        );
    }

    #[test]
    fn spread_steps_past_mostly_skipped_rows() {
        let rows: Vec<&[u8]> = vec![b"0123456789"; 100];
        // Stepping by 4 as a probe that stopped before the end: only the last two steps'
        // rows were free, 20 bytes of the 250 wanted.
        let probe: HashSet<usize> = (0..92).step_by(4).collect();
        let rest = spread(&rows, 250, &probe);
        assert!(rest.iter().all(|i| !probe.contains(i)));
        assert_eq!(rest.len(), 25, "{rest:?}");
    }

    #[test]
    fn cut_keeps_every_byte() {
        let dict: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let usage: Vec<f64> = (0..300)
            .map(|i| {
                if (100..120).contains(&i) {
                    0.0
                } else {
                    1.0 + (i % 7) as f64
                }
            })
            .collect();
        let pieces = cut(&dict, &usage);
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.bytes.clone()).collect();
        assert_eq!(joined, dict);
        assert!(pieces.iter().all(|p| p.bytes.len() <= SEED_PIECE));
        assert!(pieces.iter().any(|p| p.bytes == dict[100..120]));
    }

    #[test]
    fn cut_cuts_long_runs_where_usage_is_lowest_and_unused_runs_apart() {
        let dict: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
        // Used bytes, with dips at 40 and 100 (the least used within 32 to 64 bytes of a
        // piece's start), and unused ones at 150..160 and 170.
        let usage: Vec<f64> = (0..200)
            .map(|i| match i {
                40 | 100 => 0.5,
                150..160 | 170 => 0.0,
                _ => 2.0 + (i % 5) as f64,
            })
            .collect();
        let pieces = cut(&dict, &usage);
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.bytes.clone()).collect();
        assert_eq!(joined, dict);
        let mut end = 0;
        let bounds: Vec<(usize, usize)> = pieces
            .iter()
            .map(|p| {
                end += p.bytes.len();
                (end - p.bytes.len(), end)
            })
            .collect();
        // 100..150 is 50 bytes: not cut.
        let want = [
            (0, 40),
            (40, 100),
            (100, 150),
            (150, 160),
            (160, 170),
            (170, 171),
            (171, 200),
        ];
        assert_eq!(bounds, want);
        // A run of exactly the longest piece is one piece.
        let pieces = cut(&dict[..SEED_PIECE], &vec![1.0; SEED_PIECE]);
        assert_eq!(pieces.len(), 1);
        let pieces = cut(&dict[..SEED_PIECE + 1], &vec![1.0; SEED_PIECE + 1]);
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| !p.fresh && p.earned == 0.0));
    }

    #[test]
    fn a_piece_is_valued_by_what_it_earned_per_byte() {
        let piece = |len, earned| Piece {
            bytes: vec![b'a'; len],
            earned,
            fresh: false,
        };
        assert_eq!(piece(4, 10.0).density(), 2.5);
        assert_eq!(piece(0, 3.0).density(), 3.0);
    }

    #[test]
    fn mean_positions_are_each_pieces_reach_over_its_usage() {
        let piece = |len| Piece {
            bytes: vec![b'a'; len],
            earned: 0.0,
            fresh: false,
        };
        let state = State {
            pieces: vec![piece(2), piece(3), piece(1)],
            dict: vec![b'a'; 6],
            starts: vec![0, 2, 5],
            outcome: Outcome {
                stored: 0,
                sizes: Vec::new(),
                // Piece 0 copied at positions 10 (usage 1) and 40 (usage 2); piece 1 never;
                // piece 2 at 7.
                usage: vec![1.0, 2.0, 0.0, 0.0, 0.0, 0.5],
                reach: vec![10.0, 80.0, 0.0, 0.0, 0.0, 3.5],
            },
        };
        assert_eq!(state.mean_positions(), [30.0, 0.0, 7.0]);
    }

    #[test]
    fn the_phase_and_k_follow_the_codec() {
        assert_eq!([0, 1, 2, 3, 1000, 65536].map(lz4_phase), [0, 1, 2, 0, 1, 1]);
        assert_eq!(codec_k(Codec::Pglz), 4);
        assert_eq!(codec_k(Codec::Lz4), 5);
        assert_eq!(codec_k(Codec::Zstd), 5);
    }

    #[test]
    fn the_smallest_slice_is_the_probes_or_the_validation_rows() {
        // A third of the rows at most for the probe, a sixth for the validation rows.
        assert_eq!(smallest_slice(600, 1000, 1000), 100);
        assert_eq!(smallest_slice(600, 50, 1000), 50);
        assert_eq!(smallest_slice(600, 1000, 70), 70);
        // No validation rows: the probe's.
        assert_eq!(smallest_slice(600, 1000, 0), 200);
        assert_eq!(smallest_slice(5, 1000, 1000), 1);
    }

    #[test]
    fn at_most_an_eighth_of_the_rows_are_cut() {
        let short = vec![b'a'; 100];
        let long = vec![b'b'; 10_000];
        // 14 rows of 100 bytes and 3 of 10,000: the longest two (an eighth of 17) are cut
        // to half a sixth of the rest, 1,400 + 9,000 bytes; the third is left whole.
        let mut rows: Vec<&[u8]> = vec![&short; 14];
        rows.insert(3, &long);
        rows.insert(9, &long[..9_000]);
        rows.insert(12, &long[..9_999]);
        let cut_rows = cut_over_long(rows.clone(), 1 << 20, 1 << 20);
        let lengths: Vec<usize> = cut_rows.iter().map(|r| r.len()).collect();
        let limit = (1_400 + 9_000) / 6 / 2;
        let mut want = vec![100; 17];
        want[3] = limit;
        want[9] = 9_000;
        want[12] = limit;
        assert_eq!(lengths, want);
        assert_eq!(cut_rows[3], &long[..limit]);
    }

    #[test]
    fn rows_at_half_the_smallest_slice_are_left_whole() {
        let short = vec![b'a'; 100];
        // Half of a sixth of the other 24 x 100 bytes is 200: a row of 200 stays, 201 is cut.
        for (len, cut_to) in [(200, 200), (201, 200)] {
            let long = vec![b'b'; len];
            let mut rows: Vec<&[u8]> = vec![&short; 24];
            rows.push(&long);
            let cut_rows = cut_over_long(rows, 1 << 20, 1 << 20);
            assert_eq!(cut_rows[24].len(), cut_to, "{len}");
            assert!(cut_rows[..24].iter().all(|r| r.len() == 100));
        }
    }

    #[test]
    fn spread_stops_once_it_has_the_bytes() {
        let long = [b'a'; 100];
        let short = [b'b'; 10];
        // 290 bytes: a step of 3 rows for 100; the first row alone has them.
        let mut rows: Vec<&[u8]> = vec![&short; 19];
        rows.insert(0, &long);
        assert_eq!(spread(&rows, 100, &HashSet::new()), [0]);
        assert_eq!(spread(&rows, 101, &HashSet::new()), [0, 3]);
        // No bytes wanted: a step of every row, and nothing picked.
        assert_eq!(spread(&rows, 0, &HashSet::new()), Vec::<usize>::new());
    }

    #[test]
    fn spread_keeps_its_steps_when_they_give_a_quarter_of_the_free_rows() {
        let rows: Vec<&[u8]> = vec![b"0123456789"; 100];
        // Only rows 1, 2, 3 and 5 are free. Stepping by 2 lands on row 2 alone: 10 bytes,
        // exactly a quarter of the 40 free ones, so the steps stand (giving a skipped row's
        // turn to the next free row of its step would take rows 1, 2 and 5).
        let skip: HashSet<usize> = (0..100).filter(|i| ![1, 2, 3, 5].contains(i)).collect();
        assert_eq!(spread(&rows, 500, &skip), [2]);
        // With row 7 free too, row 2 is a fifth of the free bytes: the turns are given.
        let skip: HashSet<usize> = (0..100).filter(|i| ![1, 2, 3, 5, 7].contains(i)).collect();
        assert_eq!(spread(&rows, 500, &skip), [1, 2, 5, 7]);
    }

    #[test]
    fn residual_marks_are_the_kmers_with_a_costly_byte() {
        // The row copies "QWERTY" (6 bytes, not short) and a 30-byte string from the
        // dictionary; every other byte is a literal.
        let long: &[u8] = b"the long string the rows share";
        let dict = [&b"QWERTYUIOP"[..], long].concat();
        let row = [&b"0123456789QWERTYz"[..], long, b"!abcdefghijklmnop"].concat();
        let pool_rows: Vec<&[u8]> = vec![&row, b"abc"];
        let k = 4;
        let counts = KmerCounts::count(&pool_rows, k);
        let pool = Pool::new(pool_rows.clone(), &counts, 2);
        let builder = PgdictBuilder::default();
        for codec in [Codec::Pglz, Codec::Lz4] {
            let probe = Probe::new(pool_rows.clone(), codec);
            let context = Context::new(&pool, &pool_rows, &probe, 4096, k, false);
            let marks = builder.residual_marks(&dict, &context);
            // The 4-mers wholly inside the copies are not costly: those at 10..=12 and
            // 17..=43; a row shorter than k has none.
            let want: Vec<bool> = (0..=row.len() - k)
                .map(|i| !(10..=12).contains(&i) && !(17..=43).contains(&i))
                .collect();
            assert_eq!(marks, [want, Vec::new()], "{codec}");
        }
    }

    /// A piece of the dictionary being refined, as `replace` is handed it: not fresh, nothing
    /// earned yet.
    fn piece(bytes: &[u8]) -> Piece {
        Piece {
            bytes: bytes.to_vec(),
            earned: 0.0,
            fresh: false,
        }
    }

    /// What a refinement test reads: its rows as both the probe and the candidate rows, and
    /// the pool of the strings (of the codec's k-mer length) that `min_df` of them hold.
    struct Bench<'a> {
        rows: Vec<&'a [u8]>,
        pool: Pool<'a>,
        probe: Probe<'a>,
    }

    impl<'a> Bench<'a> {
        fn new(rows: &'a [Vec<u8>], codec: Codec, min_df: u32) -> Self {
            let rows: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
            let counts = KmerCounts::count(&rows, codec_k(codec));
            Bench {
                pool: Pool::new(rows.clone(), &counts, min_df),
                probe: Probe::new(rows.clone(), codec),
                rows,
            }
        }

        /// A refinement's context within `budget` bytes (for lz4 on liblz4's grid).
        fn context(&self, budget: usize) -> Context<'_, 'a> {
            let codec = self.probe.codec();
            Context::new(
                &self.pool,
                &self.rows,
                &self.probe,
                budget,
                codec_k(codec),
                codec == Codec::Lz4,
            )
        }
    }

    /// Two strings every row of [`replace_rows`] holds: a dictionary piece of either is
    /// copied whole.
    const USED_A: &[u8] = b"QWERTYUIOPASDFGH";
    const USED_B: &[u8] = b"ZXCVBNMLKJHGFDSA";

    fn replace_rows() -> Vec<Vec<u8>> {
        (0..20)
            .map(|i| {
                format!(
                    "{i:02} {} and {}, then MNBVCXZPOIUYTREW.",
                    "QWERTYUIOPASDFGH", "ZXCVBNMLKJHGFDSA"
                )
                .into_bytes()
            })
            .collect()
    }

    #[test]
    fn replace_trims_unused_ends_drops_the_least_dense_and_refills() {
        let rows = replace_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let (pool, probe) = (&bench.pool, &bench.probe);
        let context = bench.context(100);
        // Bytes no row holds around the copied string, a piece no row copies, a piece
        // copied whole.
        let padded = [&[0xf0; 8][..], USED_A, &[0xf1; 8]].concat();
        let unused = vec![0xf2; 40];
        let state = State::new(
            vec![piece(&padded), piece(&unused), piece(USED_B)],
            probe,
            None,
        );
        assert!(state.pieces[1].earned == 0.0 && state.pieces[2].earned > 0.0);
        // A tenth of the 100-byte budget: the unused piece alone (40 bytes) frees it.
        let (trial, dropped) =
            PgdictBuilder::default().replace(&state, pool, &HashSet::new(), 0.1, &context);
        assert_eq!(dropped, [fingerprint(&unused)]);
        let mut kept: Vec<&[u8]> = trial
            .pieces
            .iter()
            .filter(|p| !p.fresh)
            .map(|p| &p.bytes[..])
            .collect();
        kept.sort();
        assert_eq!(kept, [USED_A, USED_B]);
        // The refill: strings of the rows, within the budget.
        let fresh: Vec<&Piece> = trial.pieces.iter().filter(|p| p.fresh).collect();
        assert!(!fresh.is_empty());
        assert!(fresh.iter().all(|p| rows
            .iter()
            .any(|r| r.windows(p.bytes.len()).any(|w| w == &p.bytes[..]))));
        assert!(trial.dict.len() <= 100, "{}", trial.dict.len());
        // Half the budget: the unused piece and one of the 16 bytes the rows copy.
        let (_, dropped) =
            PgdictBuilder::default().replace(&state, pool, &HashSet::new(), 0.5, &context);
        assert_eq!(dropped.len(), 2);
        assert_eq!(dropped[0], fingerprint(&unused));
        assert!([USED_A, USED_B].map(fingerprint).contains(&dropped[1]));
    }

    #[test]
    fn lz4_replace_trims_and_drops_by_whole_grid_steps() {
        let rows = replace_rows();
        // No candidate is held by 100 rows: nothing refills, so nothing is cut for the phase.
        let bench = Bench::new(&rows, Codec::Lz4, 100);
        let (pool, probe) = (&bench.pool, &bench.probe);
        let context = bench.context(100);
        let padded = [&[0xf0; 7][..], USED_A, &[0xf1; 5]].concat();
        let unused = [&[0xf2; 39][..], &[0xf3, 0xf4]].concat();
        let state = State::new(
            vec![piece(USED_B), piece(&padded), piece(&unused)],
            probe,
            None,
        );
        let used: Vec<usize> = (0..state.dict.len())
            .filter(|&i| state.outcome.usage[i] > 0.0)
            .collect();
        let used_a_at = 16 + 7;
        let want_used: Vec<usize> = (0..16).chain(used_a_at..used_a_at + 16).collect();
        assert_eq!(used, want_used);
        let (trial, dropped) =
            PgdictBuilder::default().replace(&state, pool, &HashSet::new(), 0.1, &context);
        assert_eq!(dropped, [fingerprint(&unused)]);
        // The padded piece keeps one byte before the copied string (7 = 2 steps + 1) and two
        // after it (5 = 1 step + 2); the dropped piece, of 41 bytes (13 steps + 2), leaves its
        // last two bytes at its end.
        let trimmed = [&[0xf0][..], USED_A, &[0xf1, 0xf1, 0xf3, 0xf4]].concat();
        let mut pieces: Vec<&[u8]> = trial.pieces.iter().map(|p| &p.bytes[..]).collect();
        pieces.sort();
        assert_eq!(pieces, [USED_B, &trimmed[..]]);
        assert!(trial.pieces.iter().all(|p| !p.fresh));
    }

    /// Refines a dictionary holding only a string the probe rows lack, with validation rows
    /// that need it, that do not, and none.
    #[test]
    fn refine_keeps_what_the_validation_rows_compress_best() {
        let rows = replace_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let probe = &bench.probe;
        let context = bench.context(64);
        let only_valid = b"the validation rows alone hold this string";
        let start = State::new(vec![piece(only_valid)], probe, None);
        let builder = PgdictBuilder::default();
        let refine = |valid: &Probe<'_>| builder.refine(&start, &context, valid, Refill::Pool, 0.5);

        // Rows that need the start's string: refining only makes them larger.
        let needing: Vec<Vec<u8>> = (0..10)
            .map(|i| {
                format!("{i:02} {} ok", "the validation rows alone hold this string").into_bytes()
            })
            .collect();
        let needing = Probe::new(needing.iter().map(|r| &r[..]).collect(), Codec::Pglz);
        let (stored, dict) = refine(&needing);
        assert_eq!(dict, only_valid);
        assert_eq!(stored, needing.measure(only_valid, false).stored);

        // Rows like the probe's: the refined dictionary, by their size.
        let alike: Vec<Vec<u8>> = replace_rows().into_iter().rev().take(10).collect();
        let alike = Probe::new(alike.iter().map(|r| &r[..]).collect(), Codec::Pglz);
        let (stored, dict) = refine(&alike);
        assert_eq!(stored, alike.measure(&dict, false).stored);
        assert!(stored < alike.measure(only_valid, false).stored);

        // No validation rows: the probe's size of the last dictionary.
        let (stored, dict) = refine(&Probe::new(Vec::new(), Codec::Pglz));
        assert_eq!(stored, probe.measure(&dict, false).stored);
        assert!(stored < start.outcome.stored);
    }

    /// Refines a dictionary the probe rows lack, the residual way, with the work it may do
    /// as the bound: a residual round costs its two probes and one pass over the pool rows.
    #[test]
    fn refine_does_the_work_max_probe_bytes_allows_and_no_more() {
        let rows = replace_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let (pool, probe) = (&bench.pool, &bench.probe);
        let context = bench.context(32);
        let start = State::new(
            vec![piece(b"the validation rows alone hold this string")],
            probe,
            None,
        );
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        let refine_within = |max_probe_bytes: usize, valid: &Probe<'_>| {
            let builder = PgdictBuilder {
                max_probe_bytes,
                ..PgdictBuilder::default()
            };
            builder.refine(&start, &context, valid, Refill::Residual, 0.5)
        };
        // No work allowed: the start as it is.
        assert_eq!(refine_within(0, &no_valid).1, start.dict);
        // Work for one round: that round's trial, as `replace` makes it from the residual
        // pool of the start.
        let builder = PgdictBuilder::default();
        let marks = builder.residual_marks(&start.dict, &context);
        let residual = pool.recounted(&marks, context.residual_min_df);
        let (trial, _) = builder.replace(&start, &residual, &HashSet::new(), 0.5, &context);
        assert!(trial.outcome.stored < start.outcome.stored);
        let round = 2 * probe.bytes() + bench.rows.iter().map(|r| r.len()).sum::<usize>();
        assert_eq!(
            refine_within(round, &no_valid),
            (trial.outcome.stored, trial.dict.clone())
        );
        // A byte more: a second round, which stores the probe rows smaller still.
        let (stored, dict) = refine_within(round + 1, &no_valid);
        assert!(
            stored < trial.outcome.stored,
            "{stored} >= {}",
            trial.outcome.stored
        );
        assert_eq!(stored, probe.measure(&dict, false).stored);
        // Checking the start on validation rows counts too: their bytes alone leave no round.
        let alike: Vec<Vec<u8>> = replace_rows().into_iter().rev().take(10).collect();
        let alike = Probe::new(alike.iter().map(|r| &r[..]).collect(), Codec::Pglz);
        assert_eq!(refine_within(alike.bytes(), &alike).1, start.dict);
        assert_ne!(refine_within(alike.bytes() + round, &alike).1, start.dict);
    }

    /// 200 small JSON objects whose field names and values come from 16 words: a probe that
    /// refinement keeps improving on for several rounds.
    fn word_rows() -> Vec<Vec<u8>> {
        let words = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
            "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
        ];
        let word = |i: usize| words[i % words.len()];
        (0..200)
            .map(|i| {
                let (a, b, c, d, e) = (
                    word(i),
                    word(i * 7),
                    word(i * 3),
                    word(i / 3),
                    word(i * 5 + 1),
                );
                format!(r#"{{"{a}":{i},"{b}":"{c}-{d}","{e}":{}}}"#, i * 37 % 1000).into_bytes()
            })
            .collect()
    }

    /// Every fourth round reorders the pieces instead of replacing some; for pglz it probes
    /// two orders (by where datums copy, by value), as much work as a replacing round.
    #[test]
    fn refine_counts_a_reordering_rounds_two_probes() {
        let rows = word_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let probe = &bench.probe;
        let context = bench.context(200);
        let start = State::new(vec![piece(b"a string the rows lack")], probe, None);
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        let refine_within = |max_probe_bytes: usize| {
            let builder = PgdictBuilder {
                max_probe_bytes,
                ..PgdictBuilder::default()
            };
            builder.refine(&start, &context, &no_valid, Refill::Pool, 0.5)
        };
        // Rounds 0 to 2 replace (two probes each), round 3 reorders (two probes), round 4
        // replaces again: it starts only while the work done is under the bound.
        let probe_bytes = probe.bytes();
        let after_round_3 = refine_within(6 * probe_bytes + 1);
        assert_eq!(refine_within(8 * probe_bytes), after_round_3);
        let after_round_4 = refine_within(8 * probe_bytes + 1);
        assert!(
            after_round_4.0 < after_round_3.0,
            "{} >= {}",
            after_round_4.0,
            after_round_3.0
        );
    }

    /// Refines `start` on the lz4 `bench` within `max_probe_bytes` of work, halving the drop
    /// share every two rejected rounds, without validation rows.
    fn lz4_refined(bench: &Bench<'_>, start: &State, max_probe_bytes: usize) -> (usize, Vec<u8>) {
        let builder = PgdictBuilder {
            max_probe_bytes,
            lz4_patience: 2,
            ..PgdictBuilder::default()
        };
        let no_valid = Probe::new(Vec::new(), Codec::Lz4);
        builder.refine(
            start,
            &bench.context(start.dict.len()),
            &no_valid,
            Refill::Pool,
            0.5,
        )
    }

    /// lz4: once the replacing rounds end, by a drop share halved under [`MIN_DROP_SHARE`],
    /// the parts around each shift point are shifted by one byte, then two, each trial one
    /// probe's work, and the best kept.
    #[test]
    fn lz4_refine_shifts_the_parts_once_its_rounds_end() {
        let rows = word_rows();
        // No candidate is held by 1,000 rows: a replacing round only trims and drops.
        let bench = Bench::new(&rows, Codec::Lz4, 1000);
        let probe = &bench.probe;
        // 13 rows as the pieces, 609 bytes: only the first shift point (512 from the end)
        // is in the dictionary.
        let pieces: Vec<Piece> = rows[40..53].iter().map(|r| piece(r)).collect();
        let start = State::new(pieces, probe, None);
        assert_eq!(start.dict.len(), 609);
        let refine_within = |max_probe_bytes| lz4_refined(&bench, &start, max_probe_bytes);
        // The shifts: the piece starting nearest 512 bytes from the end loses its first byte,
        // or its first two, which stores the probe rows smaller still.
        let [by_one, by_two] = [1, 2].map(|cut| shift(&start, 512, cut, probe).unwrap());
        assert!(by_one.outcome.stored < start.outcome.stored);
        assert!(by_two.outcome.stored < by_one.outcome.stored);
        // The rounds, all rejected: 0.75 halved 7 times is under 0.01, so 14 replacing rounds
        // (two probes each) and the 4 reordering rounds among them (one probe each).
        let probe_bytes = probe.bytes();
        let rounds = (14 * 2 + 4) * probe_bytes;
        assert_eq!(
            refine_within(rounds),
            (start.outcome.stored, start.dict.clone())
        );
        assert_eq!(
            refine_within(rounds + probe_bytes),
            (by_one.outcome.stored, by_one.dict)
        );
        let by_two = (by_two.outcome.stored, by_two.dict);
        assert_eq!(refine_within(rounds + 2 * probe_bytes), by_two);
        // No other shift point is in the dictionary: more work changes nothing.
        assert_eq!(refine_within(usize::MAX), by_two);
    }

    /// lz4: of two shifts at a point that store the probe rows equally, the first (by one
    /// byte) is taken, and the next point shifts that.
    #[test]
    fn lz4_refine_takes_the_first_of_equal_shifts() {
        let rows = word_rows();
        let bench = Bench::new(&rows, Codec::Lz4, 1000);
        let probe = &bench.probe;
        // 1,468 bytes: two shift points, 512 and 1,024 bytes from the end.
        let pieces: Vec<Piece> = rows[161..192].iter().map(|r| piece(r)).collect();
        let start = State::new(pieces, probe, None);
        assert_eq!(start.dict.len(), 1468);
        let [by_one, by_two] = [1, 2].map(|cut| shift(&start, 512, cut, probe).unwrap());
        assert!(by_one.outcome.stored < start.outcome.stored);
        assert_eq!(by_one.outcome.stored, by_two.outcome.stored);
        // At the second point the best shift of the first: by two bytes.
        let [then_one, then_two] = [1, 2].map(|cut| shift(&by_one, 1024, cut, probe).unwrap());
        assert!(then_two.outcome.stored < by_one.outcome.stored);
        assert!(then_two.outcome.stored < then_one.outcome.stored);
        // The rounds are rejected (as in the test above).
        assert_eq!(
            lz4_refined(&bench, &start, usize::MAX),
            (then_two.outcome.stored, then_two.dict)
        );
    }

    /// A replacing round whose trial stores the probe rows only as small is rejected: here
    /// the state stays the one the shifts improve on.
    #[test]
    fn lz4_refine_takes_no_round_that_only_ties() {
        let rows = word_rows();
        let bench = Bench::new(&rows, Codec::Lz4, 1000);
        let probe = &bench.probe;
        // The pieces of the first lz4 test after 30 bytes no row holds.
        let mut pieces = vec![piece(&noise(30))];
        pieces.extend(rows[40..53].iter().map(|r| piece(r)));
        let start = State::new(pieces, probe, None);
        // A round that drops only those bytes (and trims the ends no row copies) stores the
        // rows in as many bytes, in a dictionary too short for a shift.
        let context = bench.context(start.dict.len());
        let builder = PgdictBuilder::default();
        let (tie, _) = builder.replace(&start, &bench.pool, &HashSet::new(), 0.03, &context);
        assert_eq!(tie.outcome.stored, start.outcome.stored);
        assert!(tie.dict.len() < 512);
        // The start, shifted by two bytes at its one shift point, as in the first lz4 test.
        let shifted = shift(&start, 512, 2, probe).unwrap();
        assert!(shifted.outcome.stored < start.outcome.stored);
        assert_eq!(
            lz4_refined(&bench, &start, usize::MAX),
            (shifted.outcome.stored, shifted.dict)
        );
    }

    /// Refinement runs while the drop share is at least [`MIN_DROP_SHARE`]: a first drop of
    /// exactly that runs rounds, one just under it none.
    #[test]
    fn refine_runs_down_to_the_least_drop_share() {
        let rows = word_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let probe = &bench.probe;
        let context = bench.context(200);
        let start = State::new(vec![piece(b"a string the rows lack")], probe, None);
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        let builder = PgdictBuilder::default();
        let refine =
            |first_drop| builder.refine(&start, &context, &no_valid, Refill::Pool, first_drop);
        let (stored, _) = refine(MIN_DROP_SHARE);
        assert!(
            stored < start.outcome.stored,
            "{stored} >= {}",
            start.outcome.stored
        );
        assert_eq!(
            refine(MIN_DROP_SHARE * 0.99),
            (start.outcome.stored, start.dict.clone())
        );
    }

    /// A rejected round bans its new pieces that earned less per byte than the median piece
    /// it kept: the next round refills with others.
    #[test]
    fn a_rejected_round_bans_its_new_pieces_below_the_median() {
        let rows = word_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let (pool, probe) = (&bench.pool, &bench.probe);
        let pieces: Vec<Piece> = rows[37..45].iter().map(|r| piece(r)).collect();
        let start = State::new(pieces, probe, None);
        let context = bench.context(start.dict.len());
        let builder = PgdictBuilder::default();
        // The first round: its trial stores the probe rows no smaller.
        let (rejected, _) = builder.replace(&start, pool, &HashSet::new(), 0.5, &context);
        assert!(rejected.outcome.stored >= start.outcome.stored);
        // It kept 4 pieces; the median is the third least dense.
        let mut kept: Vec<f64> = rejected
            .pieces
            .iter()
            .filter(|p| !p.fresh)
            .map(Piece::density)
            .collect();
        kept.sort_by(f64::total_cmp);
        assert_eq!(kept.len(), 4);
        let fresh: Vec<&Piece> = rejected.pieces.iter().filter(|p| p.fresh).collect();
        let banned: HashSet<u64> = fresh
            .iter()
            .filter(|p| p.density() < kept[2])
            .map(|p| fingerprint(&p.bytes))
            .collect();
        assert!(!banned.is_empty() && banned.len() < fresh.len());
        // The second round, refilled without them, is taken.
        let (second, _) = builder.replace(&start, pool, &banned, 0.5, &context);
        assert!(second.outcome.stored < start.outcome.stored);
        let two_rounds = PgdictBuilder {
            max_probe_bytes: 4 * probe.bytes(),
            ..PgdictBuilder::default()
        };
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        assert_eq!(
            two_rounds.refine(&start, &context, &no_valid, Refill::Pool, 0.5),
            (second.outcome.stored, second.dict)
        );
    }

    /// pglz: a reordering round tries the pieces in the order datums copy them and in the
    /// order of their value, and takes the better if it stores the probe rows smaller.
    #[test]
    fn a_pglz_reordering_round_takes_the_better_order() {
        let rows = word_rows();
        // No candidate is held by 1,000 rows: a replacing round only trims and drops.
        let bench = Bench::new(&rows, Codec::Pglz, 1000);
        let (pool, probe) = (&bench.pool, &bench.probe);
        // Three rows in 12-byte pieces, backwards.
        let pieces: Vec<Piece> = rows[30..33]
            .iter()
            .flat_map(|r| r.chunks(12))
            .map(piece)
            .collect();
        let start = State::new(pieces.into_iter().rev().collect(), probe, None);
        let by_use = reorder(&start, probe);
        let by_value = reorder_by_value(&start, probe);
        assert!(by_use.outcome.stored < start.outcome.stored);
        assert!(by_value.outcome.stored < by_use.outcome.stored);
        let context = bench.context(start.dict.len());
        // A replacing round that drops nothing (and has nothing to refill with) tries the
        // order datums copy in too, and takes it.
        let builder = PgdictBuilder::default();
        let (replaced, _) = builder.replace(&start, pool, &HashSet::new(), 0.0, &context);
        assert_eq!(replaced.dict, by_use.dict);
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        let refine_within = |max_probe_bytes| {
            let builder = PgdictBuilder {
                max_probe_bytes,
                ..PgdictBuilder::default()
            };
            builder.refine(&start, &context, &no_valid, Refill::Pool, 0.5)
        };
        // Rounds 0 to 2 are rejected; round 3 reorders.
        let probe_bytes = probe.bytes();
        assert_eq!(
            refine_within(6 * probe_bytes),
            (start.outcome.stored, start.dict.clone())
        );
        assert_eq!(
            refine_within(8 * probe_bytes),
            (by_value.outcome.stored, by_value.dict)
        );
    }

    /// Validation rows no dictionary changes (noise, nothing to copy): every result stores
    /// them the same, and refine keeps the first, the start, not the most refined.
    #[test]
    fn refine_keeps_the_first_of_equals() {
        let rows = replace_rows();
        let bench = Bench::new(&rows, Codec::Pglz, 2);
        let probe = &bench.probe;
        let context = bench.context(64);
        let start = State::new(
            vec![piece(b"the validation rows alone hold this string")],
            probe,
            None,
        );
        let noise = noise(30 * 20);
        let valid = Probe::new(noise.chunks(20).collect(), Codec::Pglz);
        let builder = PgdictBuilder::default();
        // Without validation rows the probe's best is a different dictionary.
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        let (_, refined) = builder.refine(&start, &context, &no_valid, Refill::Pool, 0.5);
        assert_ne!(refined, start.dict);
        let (stored, dict) = builder.refine(&start, &context, &valid, Refill::Pool, 0.5);
        assert_eq!(dict, start.dict);
        assert_eq!(stored, valid.measure(&refined, false).stored);
    }

    /// `n` rows of 60 bytes that share most of their bytes.
    fn rows_of_60(n: usize) -> Vec<Vec<u8>> {
        let rows: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                format!("{{\"kind\":\"airport\",\"country\":\"FR\",\"id\":{i:<21}}}").into_bytes()
            })
            .collect();
        assert!(rows.iter().all(|row| row.len() == 60));
        rows
    }

    /// What `build_noting` tells of a build, in order.
    fn notes_of(
        builder: &PgdictBuilder,
        rows: &[Vec<u8>],
        codec: Codec,
        size: usize,
    ) -> Vec<String> {
        let notes = std::cell::RefCell::new(Vec::new());
        builder
            .build_noting(rows, codec, size, &|note| {
                notes.borrow_mut().push(note.to_string())
            })
            .unwrap();
        notes.into_inner()
    }

    /// The notes count the rows of each role, the seeds and the refinements, which no
    /// dictionary shows.
    #[test]
    fn the_notes_count_the_roles_the_seeds_and_the_refinements() {
        // 121 rows of 60 bytes (7260): the probe takes every third from the first until a
        // third of the bytes, 41 rows; of the other 80 every fourth is a validation row, for a
        // sixth of the bytes (1210 of 4800), 20 rows. The 60 left share enough for candidates:
        // the strings are counted once.
        let rows = rows_of_60(121);
        let builder = PgdictBuilder {
            swap_rounds: 1,
            ..PgdictBuilder::default()
        };
        // pglz: the best 2 of 3 seeds refined three ways (pool, residual, wide), the best once
        // more with patience: 7 results. The swapped round: three variants of the roles, each
        // the pool way, and the residual and pool ways crediting new bytes only; the first
        // roles the pool and residual ways: 11 more.
        assert_eq!(
            notes_of(&builder, &rows, Codec::Pglz, 4096),
            [
                "counting the 4-byte strings of 121 rows",
                "seeding",
                "rating 3 seeds",
                "refining 2 seeds",
                "refining with other rows in the roles, round 1 of at most 1",
                "choosing among 18 results on 20 validation rows",
            ]
        );
        // Under 40 rows nothing is split: every row probes, none validates, and no roles swap.
        assert_eq!(
            notes_of(&builder, &rows[..39], Codec::Pglz, 4096),
            [
                "counting the 4-byte strings of 39 rows",
                "seeding",
                "rating 3 seeds",
                "refining 2 seeds",
                "choosing among 7 results on 0 validation rows",
            ]
        );
        // pglz's probe takes `pglz_probe_bytes` (lz4's `probe_bytes`): 600 bytes, 10 rows, one
        // in 13; of the other 111 (6660 bytes) every sixth validates, 19 rows.
        let small_probe = PgdictBuilder {
            pglz_probe_bytes: 600,
            swapped_stage: false,
            ..PgdictBuilder::default()
        };
        let notes = notes_of(&small_probe, &rows, Codec::Pglz, 4096);
        assert_eq!(
            notes.last().unwrap(),
            "choosing among 7 results on 19 validation rows"
        );
        // Candidate rows of at most 1260 bytes, fewer than the probe's 2460: the swapped probe
        // takes them all, and the two variants that need the rest of them are skipped: 3 + 2.
        let small_pool = PgdictBuilder {
            pool_bytes: 1200,
            ..builder.clone()
        };
        let notes = notes_of(&small_pool, &rows, Codec::Pglz, 4096);
        assert_eq!(
            notes.last().unwrap(),
            "choosing among 12 results on 20 validation rows"
        );
        // A patient refinement of a seed not refined is skipped.
        let third_seed = PgdictBuilder {
            swapped_stage: false,
            pglz_patient_refinements: vec![PatientRefinement {
                seed: 2,
                refill: Refill::Pool,
                patience: 4,
            }],
            ..PgdictBuilder::default()
        };
        let notes = notes_of(&third_seed, &rows, Codec::Pglz, 4096);
        assert_eq!(
            notes.last().unwrap(),
            "choosing among 6 results on 20 validation rows"
        );
        // lz4: all 3 seeds, each both ways. Its seed ending in a pglz dictionary is made only
        // when the budget is more than pglz's window.
        let pglz_window = max_useful_size(Codec::Pglz);
        assert_eq!(
            notes_of(&builder, &rows, Codec::Lz4, pglz_window),
            [
                "counting the 5-byte strings of 121 rows",
                "seeding",
                "rating 3 seeds",
                "refining 3 seeds",
                "choosing among 6 results on 20 validation rows",
            ]
        );
        // That seed's end is a pglz build of its own, told as it goes: one seed refined two
        // ways (not wide, not crediting new bytes, no patient refinement), no swapped roles.
        assert_eq!(
            notes_of(&builder, &rows, Codec::Lz4, pglz_window + 1),
            [
                "counting the 5-byte strings of 121 rows",
                "seeding",
                "seeding the end with pglz: counting the 4-byte strings of 121 rows",
                "seeding the end with pglz: seeding",
                "seeding the end with pglz: rating 3 seeds",
                "seeding the end with pglz: refining 1 seed",
                "seeding the end with pglz: choosing among 2 results on 20 validation rows",
                "rating 4 seeds",
                "refining 3 seeds",
                "choosing among 6 results on 20 validation rows",
            ]
        );
        // Its probe takes lz4's `probe_bytes`, not `pglz_probe_bytes` (which would leave 19
        // validation rows, as above).
        let small_pglz_probe = PgdictBuilder {
            pglz_probe_bytes: 600,
            ..builder.clone()
        };
        let notes = notes_of(&small_pglz_probe, &rows, Codec::Lz4, pglz_window + 1);
        assert_eq!(
            notes[6],
            "seeding the end with pglz: choosing among 2 results on 20 validation rows"
        );
    }

    #[test]
    fn choose_takes_the_smallest_on_the_validation_rows_and_its_lz4_phase() {
        let no_valid = Probe::new(Vec::new(), Codec::Pglz);
        let results = || {
            [&b"first"[..], b"second", b"third", b"fourth"]
                .iter()
                .zip([500, 400, 400, 600])
                .map(|(dict, stored)| (stored, dict.to_vec()))
                .collect::<Vec<_>>()
        };
        // The smallest, the first of equals.
        assert_eq!(
            choose(results(), Codec::Pglz, &no_valid).unwrap(),
            b"second"
        );
        assert_eq!(choose(Vec::new(), Codec::Pglz, &no_valid), None);
        // lz4 tries each result with one and two bytes cut from its front on the validation
        // rows: here the whole dictionary is said to store them worst.
        let rows = replace_rows();
        let dict = [&b"xyz"[..], USED_A, USED_B].concat();
        for codec in [Codec::Pglz, Codec::Lz4] {
            let valid = Probe::new(rows.iter().map(|r| &r[..]).collect(), codec);
            let results = vec![(usize::MAX, dict.clone())];
            let chosen = choose(results.clone(), codec, &valid).unwrap();
            if codec == Codec::Pglz {
                assert_eq!(chosen, dict);
            } else {
                let one = valid.measure(&dict[1..], false).stored;
                let two = valid.measure(&dict[2..], false).stored;
                assert_eq!(chosen, dict[if one <= two { 1 } else { 2 }..]);
            }
            // Without validation rows, nothing to choose the phase by.
            let no_valid = Probe::new(Vec::new(), codec);
            assert_eq!(choose(results, codec, &no_valid).unwrap(), dict);
        }
        // A dictionary that starts with zstd's magic loses a byte (lz4: a grid step).
        let magic = [&ZSTD_DICT_MAGIC[..], b"rest"].concat();
        for (codec, cut) in [(Codec::Pglz, 1), (Codec::Lz4, LZ4_DICT_STEP)] {
            let no_valid = Probe::new(Vec::new(), codec);
            let chosen = choose(vec![(1, magic.clone())], codec, &no_valid).unwrap();
            assert_eq!(chosen, magic[cut..], "{codec}");
        }
    }
}
