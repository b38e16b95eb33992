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
//!    [`Pool::select`]), and zstd's trainer at the budget and at 64 KiB (its end). The best
//!    seeds the refinement, which therefore starts no worse than the baseline on the probe.
//! 3. **Refine.** The probe's payloads are read back to credit each dictionary byte with the
//!    stored bytes it saved. The dictionary is cut into pieces of at most 64 bytes (where
//!    usage is lowest). Each round then either
//!    - *replaces*: trims the bytes nothing copied from the ends of pieces, drops the pieces
//!      that earned least per byte (a quarter of the budget at first), and refills the space
//!      in front with new candidates from the training rows (their k-mers already in the
//!      dictionary count as covered, and pieces dropped before are not taken again); the other
//!      pieces keep their order, and so the neighbours a long match runs on into; or
//!    - *reorders* (every fourth round): pieces copied late in datums go nearest the end.
//!      pglz reaches only the last 4095 bytes, and after n bytes of datum only the last
//!      4095 − n, so what a datum needs late must sit at the very end;
//!
//!    and keeps the change only if the probe's total stored size shrinks. New candidates that
//!    earned less than the median piece in a rejected round are not tried again; after
//!    `patience` rejections in a row the share replaced is halved, and refinement ends when it
//!    is under 1 % (or at `time_limit`).
//!
//! For lz4 the end matters too: liblz4 indexes every third dictionary position into a
//! 4096-slot table, later positions overwriting earlier ones, so the start of a 64 KiB
//! dictionary is reachable only where nothing later collides with it. Refilling in front
//! leaves the positions indexed at the end alone.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use pgdict::datum::Codec;

use super::kmer::{self, KmerCounts, KmerSet};
use super::probe::{Outcome, Probe};
use super::select::{fingerprint, Pool};
use super::{max_useful_size, BuildError};

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
    /// A k-mer must be held by this share of the counted rows (and by 2 rows at least) to be
    /// part of a candidate segment.
    pub min_df_share: f64,
    /// Refinement rounds at most.
    pub max_rounds: usize,
    /// Rejected rounds in a row before the share of the dictionary replaced is halved.
    pub patience: usize,
    /// Whether zstd's trainer seeds the refinement too.
    pub zstd_seeds: bool,
    /// Refinement stops once building has taken this long.
    pub time_limit: Duration,
}

impl Default for PgdictBuilder {
    fn default() -> Self {
        PgdictBuilder {
            k: None,
            count_bytes: 16 << 20,
            pool_bytes: 2 << 20,
            probe_bytes: 1 << 20,
            min_df_share: 0.001,
            max_rounds: 300,
            patience: 3,
            zstd_seeds: true,
            time_limit: Duration::from_secs(20),
        }
    }
}

/// The size of the zstd dictionary whose end seeds the refinement, besides one of the budget.
const ZSTD_SEED_SIZE: usize = 64 * 1024;

/// Longest piece a seed dictionary is cut into.
const SEED_PIECE: usize = 64;

/// Share of the budget replaced by the first rounds; refinement ends when it is under
/// [`MIN_DROP_SHARE`].
const FIRST_DROP_SHARE: f64 = 0.25;
const MIN_DROP_SHARE: f64 = 0.01;

/// Below this many rows the probe is all of them (and candidates come from the same rows).
const MIN_ROWS_TO_SPLIT: usize = 40;

/// zstd's dictionary magic number as it starts a dictionary file: pgdict prepares bytes that
/// start with it as a zstd-format dictionary, so a built dictionary must not.
const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];

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
    /// Joins `pieces`, probes the result and credits each piece with its bytes' usage.
    fn new(mut pieces: Vec<Piece>, probe: &Probe<'_>) -> State {
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

/// Rows taken evenly from `rows` (every n-th from the first, skipping `skip`) until
/// `max_bytes`; their indexes.
fn spread(rows: &[&[u8]], max_bytes: usize, skip: &HashSet<usize>) -> Vec<usize> {
    let total: usize = rows.iter().map(|r| r.len()).sum();
    let step = total.div_ceil(max_bytes.max(1)).max(1);
    let mut picked = Vec::new();
    let mut bytes = 0;
    let mut i = 0;
    while i < rows.len() && bytes < max_bytes {
        if !skip.contains(&i) {
            picked.push(i);
            bytes += rows[i].len();
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
        if codec == Codec::Zstd {
            return super::zstd::build(samples, codec, size);
        }
        let started = Instant::now();
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
        let total_bytes: usize = rows.iter().map(|r| r.len()).sum();
        let split = rows.len() >= MIN_ROWS_TO_SPLIT;
        let probe_index = if split {
            spread(
                &rows,
                self.probe_bytes.min(total_bytes / 3),
                &HashSet::new(),
            )
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
        let counts = KmerCounts::count(&count_rows, k);
        let min_df = ((count_rows.len() as f64 * self.min_df_share).ceil() as u32).max(2);
        let pool_rows: Vec<&[u8]> = spread(&rows, self.pool_bytes, &probe_set)
            .into_iter()
            .map(|i| rows[i])
            .collect();
        let pool = Pool::new(pool_rows, &counts, min_df);
        if pool.is_empty() {
            return Ok(Vec::new());
        }
        let probe = Probe::new(probe_index.iter().map(|&i| rows[i]).collect(), codec);

        // Seeds.
        let mut seeds: Vec<Vec<u8>> = Vec::new();
        let mut own = pool.select(&mut KmerSet::default(), &HashSet::new(), budget);
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
        }
        let mut best: Option<(usize, Vec<u8>, Outcome)> = None;
        for seed in seeds {
            let outcome = probe.measure(&seed, true);
            if best.as_ref().is_none_or(|b| outcome.stored < b.2.stored) {
                best = Some((outcome.stored, seed, outcome));
            }
        }
        let (_, seed, seed_outcome) = best.expect("at least pgdict's own seed");
        let mut state = State::new(cut(&seed, &seed_outcome.usage), &probe);

        // Refinement.
        let mut banned: HashSet<u64> = HashSet::new();
        let mut drop_share = FIRST_DROP_SHARE;
        let mut rejected = 0;
        for round in 0..self.max_rounds {
            if drop_share < MIN_DROP_SHARE || started.elapsed() >= self.time_limit {
                break;
            }
            if round % 4 == 3 {
                let trial = reorder(&state, &probe);
                if trial.outcome.stored < state.outcome.stored {
                    state = trial;
                }
                continue;
            }
            let (trial, fresh, dropped) =
                self.replace(&state, &pool, &banned, budget, drop_share, k, &probe);
            if trial.outcome.stored < state.outcome.stored {
                state = trial;
                banned.extend(dropped);
                rejected = 0;
            } else {
                // Do not try again the new pieces that earned less per byte than the median
                // kept one: the next round refills with others.
                let mut kept: Vec<f64> = trial.pieces[fresh..].iter().map(Piece::density).collect();
                kept.sort_by(f64::total_cmp);
                let median = kept.get(kept.len() / 2).copied().unwrap_or(0.0);
                banned.extend(
                    trial.pieces[..fresh]
                        .iter()
                        .filter(|p| p.density() < median)
                        .map(|p| fingerprint(&p.bytes)),
                );
                rejected += 1;
                if rejected >= self.patience {
                    drop_share /= 2.0;
                    rejected = 0;
                }
            }
        }
        let mut dict = state.dict;
        if dict.starts_with(&ZSTD_DICT_MAGIC) {
            // The first byte is the one a datum is least likely to reach.
            dict.remove(0);
        }
        Ok(dict)
    }

    /// A replacing round: trims unused ends, drops the pieces that earned least per byte
    /// (`drop_share` of the budget) and refills in front from `pool`. Returns the probed trial,
    /// how many pieces in front are new, and the fingerprints of the dropped pieces.
    #[allow(clippy::too_many_arguments)]
    fn replace(
        &self,
        state: &State,
        pool: &Pool<'_>,
        banned: &HashSet<u64>,
        budget: usize,
        drop_share: f64,
        k: usize,
        probe: &Probe<'_>,
    ) -> (State, usize, Vec<u64>) {
        let mut pieces = state.pieces.clone();
        for (piece, &start) in pieces.iter_mut().zip(&state.starts) {
            let used = &state.outcome.usage[start..start + piece.bytes.len()];
            if let (Some(first), Some(last)) = (
                used.iter().position(|&u| u > 0.0),
                used.iter().rposition(|&u| u > 0.0),
            ) {
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
        let mut keep = keep.into_iter();
        pieces.retain(|_| keep.next().unwrap_or(true));

        let mut covered = KmerSet::default();
        for piece in &pieces {
            covered.extend(kmer::keys(&piece.bytes, k));
        }
        let mut trial_banned = banned.clone();
        trial_banned.extend(dropped.iter().copied());
        let kept: usize = pieces.iter().map(|p| p.bytes.len()).sum();
        // Chosen best first; the best goes nearest the kept pieces.
        let mut fresh: Vec<Piece> = pool
            .select(&mut covered, &trial_banned, budget.saturating_sub(kept))
            .into_iter()
            .rev()
            .map(|s| Piece {
                bytes: s.bytes,
                earned: 0.0,
            })
            .collect();
        let fresh_count = fresh.len();
        fresh.append(&mut pieces);
        (State::new(fresh, probe), fresh_count, dropped)
    }
}

/// A reordering round: pieces by the mean datum position they were copied at, earliest first,
/// so that what datums need late sits nearest the end (a stable sort: pieces used together
/// keep their order).
fn reorder(state: &State, probe: &Probe<'_>) -> State {
    let positions = state.mean_positions();
    let mut order: Vec<usize> = (0..state.pieces.len()).collect();
    order.sort_by(|&a, &b| positions[a].total_cmp(&positions[b]));
    State::new(
        order.iter().map(|&i| state.pieces[i].clone()).collect(),
        probe,
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
        let builder = PgdictBuilder {
            time_limit: Duration::from_secs(3600),
            ..PgdictBuilder::default()
        };
        let a = builder.build(&rows, Codec::Pglz, 2048).unwrap();
        let b = builder.build(&rows, Codec::Pglz, 2048).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn nothing_shared_gives_nothing() {
        // Bytes of a 64-bit LCG: no 4-byte string recurs.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let rows: Vec<Vec<u8>> = (0..50)
            .map(|_| {
                (0..40)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        (x >> 56) as u8
                    })
                    .collect()
            })
            .collect();
        let dict = PgdictBuilder::default()
            .build(&rows, Codec::Pglz, 4096)
            .unwrap();
        assert!(dict.is_empty());
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
}
