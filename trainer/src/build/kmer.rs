//! Counting k-mers (substrings of k bytes, k <= 8) by the number of rows that hold them.
//!
//! Each datum is compressed on its own, so a substring that recurs within one row is the row's
//! own business (its history already holds it); what a dictionary can add is a substring that
//! recurs *across* rows. The count kept here is therefore a document frequency: how many rows
//! hold the k-mer at least once.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The longest k-mer a [`Kmer`] key holds.
pub const MAX_K: usize = 8;

/// A k-mer as a key: its bytes little-endian in a `u64`, the unused high bytes zero.
pub type Kmer = u64;

/// A hasher for [`Kmer`] keys: one multiply and a fold, enough to spread byte strings over
/// both the low bits (bucket) and the high bits (control bytes) of a `HashMap`.
#[derive(Default, Clone, Copy)]
pub struct KmerHasher(u64);

impl Hasher for KmerHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
}

/// A `HashMap` keyed by k-mers.
pub type KmerMap<V> = HashMap<Kmer, V, BuildHasherDefault<KmerHasher>>;

/// A `HashSet` of k-mers.
pub type KmerSet = HashSet<Kmer, BuildHasherDefault<KmerHasher>>;

/// The k-mer key of `bytes[..k]`; `bytes` must hold at least `k` (<= 8) bytes.
#[inline]
pub fn key(bytes: &[u8], k: usize) -> Kmer {
    debug_assert!(k <= MAX_K && bytes.len() >= k);
    if bytes.len() >= 8 {
        let word = u64::from_le_bytes(bytes[..8].try_into().unwrap());
        if k == 8 {
            word
        } else {
            word & ((1u64 << (8 * k)) - 1)
        }
    } else {
        bytes[..k]
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
    }
}

/// The keys of every k-mer of `row`, by start position (none if the row is shorter than k).
pub fn keys(row: &[u8], k: usize) -> impl Iterator<Item = Kmer> + '_ {
    (0..(row.len() + 1).saturating_sub(k)).map(move |i| key(&row[i..], k))
}

/// Document frequencies of the k-mers of a set of rows.
#[derive(Debug, Clone)]
pub struct KmerCounts {
    k: usize,
    rows: usize,
    counts: KmerMap<u32>,
}

impl KmerCounts {
    /// Counts, for each k-mer, the rows of `rows` that hold it.
    pub fn count<S: AsRef<[u8]>>(rows: &[S], k: usize) -> KmerCounts {
        KmerCounts::count_where(rows, k, |_, _| true)
    }

    /// Counts, for each k-mer of the rows `wanted`, the rows of `rows` that hold it; any
    /// other k-mer has [`KmerCounts::df`] 0. The same numbers as [`KmerCounts::count`] for
    /// the k-mers that will be looked up, in the memory of those only: 16 MiB of high-entropy
    /// rows hold some 16 million distinct k-mers, and counting them all took 0.5-0.8 GB.
    pub fn count_only<S: AsRef<[u8]>, W: AsRef<[u8]>>(
        rows: &[S],
        k: usize,
        wanted: &[W],
    ) -> KmerCounts {
        assert!((1..=MAX_K).contains(&k), "k-mers of 1 to 8 bytes, not {k}");
        let mut keys_wanted: Vec<Kmer> = wanted.iter().flat_map(|w| keys(w.as_ref(), k)).collect();
        keys_wanted.sort_unstable();
        keys_wanted.dedup();
        let mut counts = KmerMap::with_capacity_and_hasher(keys_wanted.len(), Default::default());
        counts.extend(keys_wanted.into_iter().map(|key| (key, 0)));
        count_rows_into(&mut counts, rows, k, |_, _| true, false);
        KmerCounts {
            k,
            rows: rows.len(),
            counts,
        }
    }

    /// Counts, for each k-mer, the rows of `rows` that hold it at a position `keep` marks:
    /// `keep[r][i]` says whether the k-mer starting at byte `i` of row `r` counts.
    pub fn count_marked<S: AsRef<[u8]>>(rows: &[S], keep: &[Vec<bool>], k: usize) -> KmerCounts {
        KmerCounts::count_where(rows, k, |row, i| {
            keep.get(row)
                .and_then(|marks| marks.get(i))
                .copied()
                .unwrap_or(false)
        })
    }

    /// Counts, for each k-mer, the rows that hold it at a position where `counts_at(row
    /// index, byte position)` is true; a row counts once per k-mer however often it holds it.
    fn count_where<S: AsRef<[u8]>>(
        rows: &[S],
        k: usize,
        counts_at: impl Fn(usize, usize) -> bool,
    ) -> KmerCounts {
        assert!((1..=MAX_K).contains(&k), "k-mers of 1 to 8 bytes, not {k}");
        let mut counts = KmerMap::default();
        count_rows_into(&mut counts, rows, k, counts_at, true);
        KmerCounts {
            k,
            rows: rows.len(),
            counts,
        }
    }

    /// The k-mer length.
    pub fn k(&self) -> usize {
        self.k
    }

    /// How many rows were counted.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// How many rows hold the k-mer `key`.
    #[inline]
    pub fn df(&self, key: Kmer) -> u32 {
        self.counts.get(&key).copied().unwrap_or(0)
    }

    /// How many distinct k-mers were seen.
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }
}

/// Adds to `counts`, for each k-mer, the rows that hold it at a position where
/// `counts_at(row index, byte position)` is true (a row once per k-mer however often it
/// holds it); k-mers not in `counts` yet are added if `add_new`, else passed over.
fn count_rows_into<S: AsRef<[u8]>>(
    counts: &mut KmerMap<u32>,
    rows: &[S],
    k: usize,
    counts_at: impl Fn(usize, usize) -> bool,
    add_new: bool,
) {
    let mut row_keys = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        row_keys.clear();
        row_keys.extend(
            keys(row.as_ref(), k)
                .enumerate()
                .filter(|&(i, _)| counts_at(r, i))
                .map(|(_, key)| key),
        );
        row_keys.sort_unstable();
        row_keys.dedup();
        for &key in &row_keys {
            if add_new {
                *counts.entry(key).or_insert(0) += 1;
            } else if let Some(count) = counts.get_mut(&key) {
                *count += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_short_and_long_rows_agree() {
        let row = b"abcdefghijk";
        for k in 1..=8 {
            let all: Vec<Kmer> = keys(row, k).collect();
            assert_eq!(all.len(), row.len() + 1 - k);
            for (i, &key) in all.iter().enumerate() {
                // The same k bytes near the end of the row (fewer than 8 left) give the same key.
                let copy = row[i..i + k].to_vec();
                assert_eq!(key, super::key(&copy, k), "k={k} i={i}");
            }
        }
        assert_eq!(keys(b"abc", 4).count(), 0);
    }

    #[test]
    fn counts_rows_not_occurrences() {
        let rows = [&b"abcabcabc"[..], b"xxabcxx", b"zzzz"];
        let counts = KmerCounts::count(&rows, 3);
        assert_eq!(counts.df(key(b"abc", 3)), 2);
        assert_eq!(counts.df(key(b"bca", 3)), 1);
        assert_eq!(counts.df(key(b"zzz", 3)), 1);
        assert_eq!(counts.df(key(b"qqq", 3)), 0);
        assert_eq!(counts.rows(), 3);
    }

    #[test]
    fn counting_only_wanted_kmers_gives_their_counts() {
        let rows = [&b"abcabcabc"[..], b"xxabcxx", b"zzzz", b"bcax"];
        let all = KmerCounts::count(&rows, 3);
        let wanted = [&b"zabca"[..], b"xx"];
        let only = KmerCounts::count_only(&rows, 3, &wanted);
        for kmer in [&b"zab"[..], b"abc", b"bca"] {
            assert_eq!(only.df(key(kmer, 3)), all.df(key(kmer, 3)));
        }
        assert_eq!(only.df(key(b"bca", 3)), 2);
        // Not wanted: not kept.
        assert_eq!(all.df(key(b"zzz", 3)), 1);
        assert_eq!(only.df(key(b"zzz", 3)), 0);
        assert_eq!(only.distinct(), 3);
        assert_eq!(only.rows(), 4);
    }

    #[test]
    fn marked_counts_skip_unmarked_positions() {
        let rows = [&b"abcabc"[..], b"xxabcx"];
        // Row 0: only the k-mer at 3 ("abc") counts; row 1: none (the mask is too short, and
        // positions past its end do not count).
        let keep = vec![vec![false, false, false, true], vec![false, false]];
        let counts = KmerCounts::count_marked(&rows, &keep, 3);
        assert_eq!(counts.df(key(b"abc", 3)), 1);
        assert_eq!(counts.df(key(b"bca", 3)), 0);
        assert_eq!(counts.df(key(b"xab", 3)), 0);
        assert_eq!(counts.rows(), 2);
    }
}
