//! Sampling rows: seeded, reproducible reservoir sampling, bounded by rows and by bytes, with a
//! held-out split that never shares a row with the training sample.
//!
//! Rows stream through a [`Sampler`] once, in any number, in constant memory (the two
//! reservoirs). Each row first draws which side it belongs to (held out with probability
//! `eval_share`), then a random key; each side keeps the rows with the smallest keys that fit
//! its bounds: the rows in key order up to the first that does not fit (a *bottom-k* sample,
//! which is uniform over the rows seen: every subset of the bounded size is equally likely).
//! Rows larger than the byte bound take no part. A row lands on one side only, so the two
//! samples never overlap (identical rows in the input are distinct rows, and may fall on both
//! sides).
//!
//! Given the same seed and the same rows in the same order, the sample is the same, row for
//! row and in the same order (rows come out in the order they were read). The random stream is
//! `rand`'s `StdRng` (ChaCha12) seeded from the `u64` seed, so it holds for a given build; a
//! `rand` major version may change the stream.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Training rows sampled when not told otherwise (`pgdict-trainer --max-rows`; `pgdict
/// compare` takes as many, and as many again to evaluate).
pub const DEFAULT_MAX_ROWS: usize = 10_000;

/// How much a sample may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Rows at most.
    pub max_rows: usize,
    /// Bytes (sum of the rows' lengths) at most.
    pub max_bytes: usize,
}

impl Limits {
    /// No bound on rows nor bytes.
    pub const UNBOUNDED: Limits = Limits {
        max_rows: usize::MAX,
        max_bytes: usize::MAX,
    };
}

/// The training rows and the held-out rows, each in the order they were read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Rows to build the dictionary from.
    pub train: Vec<Vec<u8>>,
    /// Rows to evaluate it on; none of them is in `train`.
    pub eval: Vec<Vec<u8>>,
    /// Rows offered to the sampler in all.
    pub rows_seen: u64,
    /// Bytes offered to the sampler in all.
    pub bytes_seen: u64,
    /// Rows left out for being longer than their side may hold in all (its `max_bytes`).
    pub rows_too_long: u64,
}

/// One side's reservoir: the rows in key order up to the first that does not fit the limits.
#[derive(Debug)]
struct Reservoir {
    limits: Limits,
    /// Max-heap on the key: the first row to go when the limits are exceeded.
    rows: BinaryHeap<Entry>,
    bytes: usize,
    /// The smallest key of a row that did not fit (put out, or turned away): no row with a key
    /// as large can be in the sample, as the rows before it in key order already fill it.
    cutoff: Option<u64>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    key: u64,
    /// Position in the input, to return rows in input order (and to break key ties).
    index: Reverse<u64>,
    row: Vec<u8>,
}

impl Reservoir {
    fn new(limits: Limits) -> Reservoir {
        Reservoir {
            limits,
            rows: BinaryHeap::new(),
            bytes: 0,
            cutoff: None,
        }
    }

    fn cut_at(&mut self, key: u64) {
        self.cutoff = Some(self.cutoff.map_or(key, |cutoff| cutoff.min(key)));
    }

    /// Whether `row` is longer than this side may hold in all: it is never taken.
    fn too_long(&self, row: &[u8]) -> bool {
        row.len() > self.limits.max_bytes
    }

    fn offer(&mut self, key: u64, index: u64, row: &[u8]) {
        if self.limits.max_rows == 0 || self.too_long(row) {
            return;
        }
        if self.cutoff.is_some_and(|cutoff| key >= cutoff) {
            // After a row that did not fit in key order, even if it would fit: taking it would
            // favour rows read late, once a smaller row has made room.
            return;
        }
        let full = self.rows.len() >= self.limits.max_rows
            || self.bytes + row.len() > self.limits.max_bytes;
        if full && self.rows.peek().is_some_and(|top| top.key <= key) {
            // Taken, it would be the first to go.
            self.cut_at(key);
            return;
        }
        self.bytes += row.len();
        self.rows.push(Entry {
            key,
            index: Reverse(index),
            row: row.to_vec(),
        });
        while self.rows.len() > self.limits.max_rows || self.bytes > self.limits.max_bytes {
            let Some(out) = self.rows.pop() else { break };
            self.bytes -= out.row.len();
            self.cut_at(out.key);
        }
    }

    fn into_rows(self) -> Vec<Vec<u8>> {
        let mut entries = self.rows.into_vec();
        entries.sort_by_key(|e| e.index.0);
        entries.into_iter().map(|e| e.row).collect()
    }
}

/// Streams rows into a training sample and a held-out sample.
#[derive(Debug)]
pub struct Sampler {
    rng: StdRng,
    /// A row is held out when its draw is below this (`eval_share` of `u64::MAX`).
    eval_threshold: u64,
    train: Reservoir,
    eval: Reservoir,
    rows_seen: u64,
    bytes_seen: u64,
    rows_too_long: u64,
}

impl Sampler {
    /// A sampler drawing from `seed`: rows are held out with probability `eval_share`
    /// (clamped to 0..=1); each side keeps at most its limits.
    pub fn new(seed: u64, train: Limits, eval: Limits, eval_share: f64) -> Sampler {
        let share = if eval_share.is_nan() {
            0.0
        } else {
            eval_share.clamp(0.0, 1.0)
        };
        let eval_threshold = if share >= 1.0 {
            u64::MAX
        } else {
            (share * u64::MAX as f64) as u64
        };
        Sampler {
            rng: StdRng::seed_from_u64(seed),
            eval_threshold,
            train: Reservoir::new(train),
            eval: Reservoir::new(eval),
            rows_seen: 0,
            bytes_seen: 0,
            rows_too_long: 0,
        }
    }

    /// Offers the next row.
    pub fn push(&mut self, row: &[u8]) {
        let side = self.rng.next_u64();
        let key = self.rng.next_u64();
        let index = self.rows_seen;
        self.rows_seen += 1;
        self.bytes_seen += row.len() as u64;
        let reservoir = if side < self.eval_threshold {
            &mut self.eval
        } else {
            &mut self.train
        };
        if reservoir.too_long(row) {
            self.rows_too_long += 1;
        }
        reservoir.offer(key, index, row);
    }

    /// The two samples.
    pub fn finish(self) -> Sample {
        Sample {
            train: self.train.into_rows(),
            eval: self.eval.into_rows(),
            rows_seen: self.rows_seen,
            bytes_seen: self.bytes_seen,
            rows_too_long: self.rows_too_long,
        }
    }
}

/// How many of the `held_out` rows are identical to one of the `training` rows. A split keeps
/// rows apart, not values: where a value repeats it can fall on both sides, and a dictionary
/// holding it stores its held-out copies in a few bytes, so a report says how many there are
/// (`pgdict-trainer`'s held-out rows, `pgdict compare`'s evaluated ones). Each held-out row
/// counts, so two held-out copies of one training row count twice.
pub fn held_out_repeats(training: &[Vec<u8>], held_out: &[Vec<u8>]) -> u64 {
    let training: std::collections::HashSet<&[u8]> = training.iter().map(Vec::as_slice).collect();
    held_out
        .iter()
        .filter(|row| training.contains(row.as_slice()))
        .count() as u64
}

/// The note a report prints where [`held_out_repeats`] found `repeated` of its `rows` held-out
/// rows identical to a training row; `called` is what the report calls those rows ("held-out",
/// "evaluated").
pub fn held_out_repeats_note(repeated: u64, rows: u64, called: &str) -> String {
    format!(
        "{} of the {} {called} rows are identical to a training row: the gain measured on them \
         is that of a value seen before (as where the column repeats values)",
        crate::progress::thousands(repeated),
        crate::progress::thousands(rows),
    )
}

/// A `--max-rows` value from a command line: a number of rows, 1 or more (0 would keep
/// nothing to train on or evaluate).
pub fn parse_max_rows(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 rows leave nothing to work on: give 1 or more".into()),
        Ok(rows) => Ok(rows),
        Err(e) => Err(format!("`{text}` is not a number of rows: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("row {i:05}").into_bytes()).collect()
    }

    fn sample(seed: u64, train: Limits, eval: Limits, share: f64, rows: &[Vec<u8>]) -> Sample {
        let mut sampler = Sampler::new(seed, train, eval, share);
        for row in rows {
            sampler.push(row);
        }
        sampler.finish()
    }

    #[test]
    fn same_seed_same_sample_other_seed_other_sample() {
        let rows = rows(5000);
        let limits = Limits {
            max_rows: 300,
            max_bytes: usize::MAX,
        };
        let a = sample(7, limits, limits, 0.2, &rows);
        let b = sample(7, limits, limits, 0.2, &rows);
        let c = sample(8, limits, limits, 0.2, &rows);
        assert_eq!(a, b);
        assert_ne!(a.train, c.train);
        assert_eq!(a.train.len(), 300);
        assert_eq!(a.eval.len(), 300);
        assert_eq!(a.rows_seen, 5000);
    }

    #[test]
    fn held_out_rows_never_train() {
        let rows = rows(2000);
        let s = sample(1, Limits::UNBOUNDED, Limits::UNBOUNDED, 0.25, &rows);
        assert_eq!(s.train.len() + s.eval.len(), 2000);
        let train: std::collections::HashSet<_> = s.train.iter().collect();
        assert!(s.eval.iter().all(|r| !train.contains(r)));
        // About a quarter held out.
        assert!((400..600).contains(&s.eval.len()), "{}", s.eval.len());
        // Input order kept.
        assert!(s.train.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bounded_by_bytes() {
        let rows = rows(1000); // 9 bytes each
        let train = Limits {
            max_rows: usize::MAX,
            max_bytes: 95,
        };
        let s = sample(3, train, Limits::UNBOUNDED, 0.0, &rows);
        assert_eq!(s.train.len(), 10);
        assert!(s.eval.is_empty());
        // A row larger than the byte bound is never taken.
        let s = sample(
            3,
            Limits {
                max_rows: 5,
                max_bytes: 4,
            },
            Limits::UNBOUNDED,
            0.0,
            &rows,
        );
        assert!(s.train.is_empty());
        // ... and counted, for the report to say so.
        assert_eq!(s.rows_too_long, 1000);
        let s = sample(3, train, Limits::UNBOUNDED, 0.0, &rows);
        assert_eq!(s.rows_too_long, 0);
    }

    /// Under a byte bound that binds, with rows of two sizes: a small row read late is kept
    /// as often as one read early. (The reservoir used to take any row that fit once a small
    /// row had made room: small rows in the second half were kept 1.65 times as often.)
    #[test]
    fn uniform_under_a_byte_bound() {
        let rows: Vec<Vec<u8>> = (0..200)
            .map(|i| vec![b'a'; if i % 2 == 0 { 100 } else { 1000 }])
            .collect();
        let limits = Limits {
            max_rows: usize::MAX,
            max_bytes: 5000,
        };
        let mut small_kept = [0u32; 2];
        for seed in 0..4000 {
            let mut sampler = Sampler::new(seed, limits, Limits::UNBOUNDED, 0.0);
            for row in &rows {
                sampler.push(row);
            }
            for entry in sampler.train.rows.iter().filter(|e| e.row.len() == 100) {
                small_kept[usize::from(entry.index.0 >= 100)] += 1;
            }
        }
        let [early, late] = small_kept.map(f64::from);
        assert!((0.9..1.1).contains(&(late / early)), "{small_kept:?}");
    }

    /// With rows of one length, a byte bound of exactly n rows' bytes keeps the same rows as
    /// a bound of n rows: a row that fills the bound exactly is taken.
    #[test]
    fn a_byte_bound_filled_exactly_is_a_row_bound() {
        let rows = rows(500); // 9 bytes each
        for seed in 0..20 {
            let bound = |max_rows, max_bytes| Limits {
                max_rows,
                max_bytes,
            };
            let by_rows = sample(
                seed,
                bound(10, usize::MAX),
                bound(5, usize::MAX),
                0.3,
                &rows,
            );
            let by_bytes = sample(
                seed,
                bound(usize::MAX, 90),
                bound(usize::MAX, 45),
                0.3,
                &rows,
            );
            assert_eq!(by_rows.train.len(), 10);
            assert_eq!(by_rows.eval.len(), 5);
            assert_eq!(by_bytes, by_rows, "seed {seed}");
        }
        // A row as long as the bound is taken, and not counted as too long.
        let one_row = Limits {
            max_rows: usize::MAX,
            max_bytes: 9,
        };
        let s = sample(5, one_row, Limits::UNBOUNDED, 0.0, &rows);
        assert_eq!(s.train.len(), 1);
        assert_eq!(s.rows_too_long, 0);
        assert_eq!((s.rows_seen, s.bytes_seen), (500, 500 * 9));
    }

    /// A row that fits is taken, whatever the rows held: one that fills the byte bound
    /// exactly, one longer than all of them. Checked on a reservoir directly: in a sampler,
    /// the rows read after one wrongly turned away mostly hide it (they would put it out).
    #[test]
    fn a_row_that_fits_is_taken() {
        // The keys kept, the bytes held, the cutoff.
        let offer_all = |max_bytes, offers: &[(u64, usize)]| {
            let mut reservoir = Reservoir::new(Limits {
                max_rows: 10,
                max_bytes,
            });
            for (index, &(key, len)) in (0..).zip(offers) {
                reservoir.offer(key, index, &vec![b'r'; len]);
            }
            let mut keys: Vec<u64> = reservoir.rows.iter().map(|e| e.key).collect();
            keys.sort_unstable();
            (keys, reservoir.bytes, reservoir.cutoff)
        };
        // Filling the bound exactly, with the largest key yet.
        assert_eq!(offer_all(10, &[(1, 4), (2, 6)]), (vec![1, 2], 10, None));
        // Longer than every row held.
        assert_eq!(offer_all(1000, &[(1, 5), (2, 50)]), (vec![1, 2], 55, None));
        // A byte over the bound, with the largest key: turned away, the cutoff at its key.
        assert_eq!(offer_all(10, &[(1, 4), (2, 7)]), (vec![1], 4, Some(2)));
        // With the smallest key: it puts out the row of the largest.
        assert_eq!(offer_all(10, &[(2, 4), (1, 7)]), (vec![1], 7, Some(2)));
    }

    /// Rows longer than the byte bound take no part: among them, the bound still fills with
    /// the rows that fit (a too-long row that set the cutoff would keep out most of them).
    #[test]
    fn rows_longer_than_the_bound_take_no_part() {
        let rows: Vec<Vec<u8>> = (0..500)
            .map(|i| match i % 2 {
                0 => format!("row {i:05}").into_bytes(),
                _ => vec![b'x'; 100],
            })
            .collect();
        let limits = Limits {
            max_rows: usize::MAX,
            max_bytes: 90,
        };
        for seed in 0..5 {
            let s = sample(seed, limits, Limits::UNBOUNDED, 0.0, &rows);
            assert_eq!(s.train.len(), 10, "seed {seed}");
            assert!(s.train.iter().all(|row| row.len() == 9));
            assert_eq!(s.rows_too_long, 250);
        }
    }

    #[test]
    fn uniform_enough() {
        // Each of 100 rows should be picked in about 10 % of 2000 samples of 10.
        let rows = rows(100);
        let limits = Limits {
            max_rows: 10,
            max_bytes: usize::MAX,
        };
        let mut hits = [0u32; 100];
        for seed in 0..2000 {
            for row in sample(seed, limits, limits, 0.0, &rows).train {
                let i: usize = String::from_utf8(row).unwrap()[4..].parse().unwrap();
                hits[i] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (120..290).contains(&h)), "{hits:?}");
    }

    #[test]
    fn max_rows_is_a_number_of_1_or_more() {
        assert_eq!(parse_max_rows("250"), Ok(250));
        assert_eq!(parse_max_rows("1"), Ok(1));
        assert!(parse_max_rows("0").unwrap_err().contains("give 1 or more"));
        let error = parse_max_rows("ten").unwrap_err();
        assert!(
            error.starts_with("`ten` is not a number of rows"),
            "{error}"
        );
    }

    #[test]
    fn held_out_repeats_counts_each_held_out_copy_of_a_training_value() {
        let rows = |values: &[&str]| -> Vec<Vec<u8>> {
            values.iter().map(|v| v.as_bytes().to_vec()).collect()
        };
        let training = rows(&["a", "b", "b"]);
        assert_eq!(held_out_repeats(&training, &rows(&["b", "c", "b", "a"])), 3);
        assert_eq!(held_out_repeats(&training, &rows(&["c", "d"])), 0);
        assert_eq!(held_out_repeats(&[], &rows(&["a"])), 0);
    }
}
