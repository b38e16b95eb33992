//! Counting k-mers (substrings of k bytes, k <= 8) by the number of rows that hold them.
//!
//! Each datum is compressed on its own, so a substring that recurs within one row is the row's
//! own business (its history already holds it); what a dictionary can add is a substring that
//! recurs *across* rows. The count kept here is therefore a document frequency: how many rows
//! hold the k-mer at least once.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// The longest k-mer a [`Kmer`] key holds.
pub const MAX_K: usize = 8;

/// A k-mer as a key: its bytes little-endian in a `u64`, the unused high bytes zero.
pub type Kmer = u64;

/// A hasher for [`Kmer`] keys: one multiply and a fold, enough to spread byte strings over
/// both the low bits (bucket) and the high bits (control bytes) of a `HashSet`.
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
///
/// Kept as two parallel arrays, the k-mers and their counts, in the order of the k-mers'
/// keys multiplied by an odd constant (which spreads their top bits evenly), and a directory
/// of where each value of the top bits starts: 12 bytes a k-mer and 1 or 2 for the directory,
/// where a `HashMap<Kmer, u32>` took 17 bytes a bucket at up to two buckets a k-mer. The 3.6
/// million k-mers a build on 13,000 rows of base64 values looks up took 71 MB so, 48 MB now.
/// A look-up reads one directory entry and the keys it points to (2 to 4 on average).
#[derive(Debug, Clone)]
pub struct KmerCounts {
    k: usize,
    rows: usize,
    /// The distinct k-mers counted, each as [`spread`] gives it, in ascending order.
    spread_keys: Vec<u64>,
    /// The count of the k-mer at the same index of `spread_keys`.
    counts: Vec<u32>,
    /// `bucket_starts[b]..bucket_starts[b + 1]` are the indexes of the spread keys whose top
    /// bits (`key >> bucket_shift`) are `b`.
    bucket_starts: Vec<u32>,
    bucket_shift: u32,
}

/// A k-mer key multiplied by an odd constant: a bijection of `u64` (two k-mers are equal if
/// and only if their spread keys are), whose top bits, unlike a k-mer's, are spread evenly
/// enough to index a directory by.
#[inline]
fn spread(key: Kmer) -> u64 {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15)
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
        let mut spread_keys: Vec<u64> = wanted
            .iter()
            .flat_map(|w| keys(w.as_ref(), k))
            .map(spread)
            .collect();
        spread_keys.sort_unstable();
        spread_keys.dedup();
        spread_keys.shrink_to_fit();
        let counts = vec![0; spread_keys.len()];
        let mut table = KmerCounts::with_keys(k, rows.len(), spread_keys, counts);
        let mut row_keys = Vec::new();
        for row in rows {
            row_spread_keys(row.as_ref(), k, |_| true, &mut row_keys);
            for &key in &row_keys {
                if let Some(index) = table.index(key) {
                    table.counts[index] += 1;
                }
            }
        }
        table
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
    /// Each row's distinct k-mers go into one list, sorted: a k-mer's count is the length of
    /// its run there.
    fn count_where<S: AsRef<[u8]>>(
        rows: &[S],
        k: usize,
        counts_at: impl Fn(usize, usize) -> bool,
    ) -> KmerCounts {
        assert!((1..=MAX_K).contains(&k), "k-mers of 1 to 8 bytes, not {k}");
        let mut all = Vec::new();
        let mut row_keys = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            row_spread_keys(row.as_ref(), k, |i| counts_at(r, i), &mut row_keys);
            all.extend_from_slice(&row_keys);
        }
        all.sort_unstable();
        let mut spread_keys: Vec<u64> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        for run in all.chunk_by(|a, b| a == b) {
            spread_keys.push(run[0]);
            counts.push(run.len() as u32);
        }
        KmerCounts::with_keys(k, rows.len(), spread_keys, counts)
    }

    /// The table of `spread_keys` (ascending, distinct) with `counts`, its directory made:
    /// about one bucket for every 2 to 4 keys.
    fn with_keys(k: usize, rows: usize, spread_keys: Vec<u64>, counts: Vec<u32>) -> KmerCounts {
        debug_assert!(spread_keys.windows(2).all(|w| w[0] < w[1]));
        debug_assert_eq!(spread_keys.len(), counts.len());
        // The indexes are u32, as the counts are.
        let len = u32::try_from(spread_keys.len()).expect("fewer than 2^32 k-mers");
        let bucket_bits = (u32::BITS - (len / 4).leading_zeros()).max(1);
        let bucket_shift = u64::BITS - bucket_bits;
        let buckets = 1usize << bucket_bits;
        let mut bucket_starts = Vec::with_capacity(buckets + 1);
        let mut index = 0;
        for bucket in 0..buckets as u64 {
            while spread_keys
                .get(index)
                .is_some_and(|&key| key >> bucket_shift < bucket)
            {
                index += 1;
            }
            bucket_starts.push(index as u32);
        }
        bucket_starts.push(len);
        KmerCounts {
            k,
            rows,
            spread_keys,
            counts,
            bucket_starts,
            bucket_shift,
        }
    }

    /// The index of the spread key `key` in the table, if it is there.
    #[inline]
    fn index(&self, key: u64) -> Option<usize> {
        let bucket = (key >> self.bucket_shift) as usize;
        let start = self.bucket_starts[bucket] as usize;
        let end = self.bucket_starts[bucket + 1] as usize;
        self.spread_keys[start..end]
            .iter()
            .position(|&k| k == key)
            .map(|i| start + i)
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
        self.index(spread(key)).map_or(0, |i| self.counts[i])
    }

    /// How many distinct k-mers were seen.
    pub fn distinct(&self) -> usize {
        self.spread_keys.len()
    }
}

/// Sets `out` to the distinct [`spread`] keys of the k-mers of `row` at the positions where
/// `counts_at(byte position)` is true, in ascending order.
fn row_spread_keys(row: &[u8], k: usize, counts_at: impl Fn(usize) -> bool, out: &mut Vec<u64>) {
    out.clear();
    out.extend(
        keys(row, k)
            .enumerate()
            .filter(|&(i, _)| counts_at(i))
            .map(|(_, key)| spread(key)),
    );
    out.sort_unstable();
    out.dedup();
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

    /// Each k-mer's rows counted the obvious way: a set of the row's k-mers, then a map.
    fn naive_counts(
        rows: &[Vec<u8>],
        k: usize,
        counts_at: impl Fn(usize, usize) -> bool,
    ) -> std::collections::HashMap<Kmer, u32> {
        let mut counts = std::collections::HashMap::new();
        for (r, row) in rows.iter().enumerate() {
            let held: HashSet<Kmer> = (0..(row.len() + 1).saturating_sub(k))
                .filter(|&i| counts_at(r, i))
                .map(|i| key(&row[i..], k))
                .collect();
            for key in held {
                *counts.entry(key).or_insert(0) += 1;
            }
        }
        counts
    }

    #[test]
    fn counts_agree_with_a_naive_count() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // Small alphabets make k-mers recur within and across rows; all 256 bytes make
        // nearly every k-mer distinct, thousands of them, so the directory has many buckets.
        for alphabet in [2usize, 5, 256] {
            let mut random_rows = |count, max_len| -> Vec<Vec<u8>> {
                (0..count)
                    .map(|_| {
                        let len = rng.random_range(0..max_len);
                        (0..len)
                            .map(|_| rng.random_range(0..alphabet) as u8)
                            .collect()
                    })
                    .collect()
            };
            let rows = random_rows(300, 60);
            // Other rows for the wanted k-mers: some of theirs are in `rows`, some not.
            let others = random_rows(40, 30);
            let wanted: Vec<&[u8]> = rows[..100].iter().chain(&others).map(|r| &r[..]).collect();
            let marks: Vec<Vec<bool>> = rows
                .iter()
                .map(|row| row.iter().map(|_| rng.random_bool(0.5)).collect())
                .collect();
            for k in 1..=MAX_K {
                let all = naive_counts(&rows, k, |_, _| true);
                let marked = naive_counts(&rows, k, |r, i| marks[r][i]);
                let counts = KmerCounts::count(&rows, k);
                let only = KmerCounts::count_only(&rows, k, &wanted);
                let marked_counts = KmerCounts::count_marked(&rows, &marks, k);
                let wanted_keys: HashSet<Kmer> = wanted.iter().flat_map(|w| keys(w, k)).collect();
                let every_key = all.keys().chain(&wanted_keys);
                // And k-mers no row holds (most, for k > 2).
                let absent: Vec<Kmer> = (0..200)
                    .map(|_| key(&rng.random::<u64>().to_le_bytes(), k))
                    .collect();
                for &key in every_key.chain(&absent) {
                    let df = all.get(&key).copied().unwrap_or(0);
                    let context = format!("alphabet {alphabet}, k={k}, key {key:#x}");
                    assert_eq!(counts.df(key), df, "{context}");
                    let only_df = if wanted_keys.contains(&key) { df } else { 0 };
                    assert_eq!(only.df(key), only_df, "{context}");
                    let marked_df = marked.get(&key).copied().unwrap_or(0);
                    assert_eq!(marked_counts.df(key), marked_df, "{context}");
                }
                assert_eq!(counts.distinct(), all.len());
                assert_eq!(only.distinct(), wanted_keys.len());
                assert_eq!(marked_counts.distinct(), marked.len());
                assert_eq!(counts.rows(), rows.len());
            }
        }
        // No rows, or none of k bytes: nothing counted, and any look-up is 0.
        let empty = KmerCounts::count(&[&b"ab"[..], b""], 3);
        assert_eq!(empty.distinct(), 0);
        assert_eq!(empty.df(key(b"abc", 3)), 0);
        assert_eq!(empty.df(u64::MAX), 0);
    }

    /// The hasher gives distinct k-mers distinct hashes, spread over the low bits (a
    /// `HashSet`'s bucket) and the top 7 (its control bytes), even for k-mers that differ
    /// only in their high bytes, which a multiply alone leaves out of the low bits.
    #[test]
    fn the_hasher_spreads_kmers_over_low_and_high_bits() {
        use std::hash::BuildHasher;
        let hasher = BuildHasherDefault::<KmerHasher>::default();
        // Every k-mer that differs from 0 in one byte, at each of the 8 places.
        let kmers: HashSet<Kmer> = (0..8)
            .flat_map(|byte| (0..256u64).map(move |v| v << (8 * byte)))
            .collect();
        assert_eq!(kmers.len(), 8 * 255 + 1);
        let hashes: HashSet<u64> = kmers.iter().map(|k| hasher.hash_one(k)).collect();
        assert_eq!(hashes.len(), kmers.len());
        // Their low 11 bits take 971 values: not as many as 2041 random values would (1290
        // on average), but a multiply alone leaves them 0 for every k-mer that differs from
        // 0 in its third byte or a later one (263 values in all).
        let low: HashSet<u64> = hashes.iter().map(|h| h & 2047).collect();
        assert!(low.len() > 2048 / 3, "{} of 2048 low values", low.len());
        let top: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert_eq!(top.len(), 128);
    }

    /// The directory has one bucket for every 2 to 4 k-mers (its memory, 1 or 2 bytes a
    /// k-mer), and each bucket starts where the keys of its top bits do.
    #[test]
    fn the_directory_has_a_bucket_for_every_2_to_4_kmers() {
        for n in [8u64, 100, 1000, 1024, 5000] {
            // n distinct 8-byte k-mers, one a row.
            let rows: Vec<[u8; 8]> = (0..n)
                .map(|i| (i.wrapping_mul(0x0123_4567_89ab_cdef) ^ 0x5555).to_le_bytes())
                .collect();
            let counts = KmerCounts::count(&rows, 8);
            assert_eq!(counts.distinct() as u64, n);
            let buckets = counts.bucket_starts.len() as u64 - 1;
            assert!(
                (2 * buckets..4 * buckets).contains(&n),
                "{n} k-mers, {buckets} buckets"
            );
            for (b, w) in counts.bucket_starts.windows(2).enumerate() {
                for &key in &counts.spread_keys[w[0] as usize..w[1] as usize] {
                    assert_eq!(key >> counts.bucket_shift, b as u64, "{n} k-mers");
                }
            }
            assert_eq!(counts.bucket_starts.last(), Some(&(n as u32)));
        }
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
