//! Choosing dictionary segments: substrings of the sample rows that cover the most frequent,
//! not yet covered k-mers per byte (the idea of zstd's COVER, with variable-length segments).
//!
//! A *candidate* is a maximal run of a row in which every k-mer is held by at least `min_df`
//! rows: a substring that recurs across rows, cut where the row turns to its own content.
//! Its value is the sum of the document frequencies of its k-mers, which approximates the
//! bytes it saves over all rows (a row that holds the whole segment saves about one byte per
//! k-mer). Selection is greedy by value per byte; once a segment is chosen its k-mers are
//! *covered* and worth nothing to the candidates that share them. A candidate loses its
//! covered ends but keeps covered k-mers inside: cutting it there would turn one long match
//! into several short ones, each paying for its own tag, and lose the context between them
//! (a lazy greedy: a candidate that reaches the top is trimmed again and pushed back if its
//! covered ends changed; k-mers covered inside it since it was scored do not lower its rank,
//! though the value it is chosen with leaves them out).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::kmer::{self, Kmer, KmerCounts, KmerSet};

/// A chosen segment: its bytes and the value the k-mer counts give it.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// The segment's bytes.
    pub bytes: Vec<u8>,
    /// Sum of the document frequencies of its k-mers, uncovered when it was chosen.
    pub estimate: f64,
}

/// A run of k-mers of one row: k-mer start positions `start..end`, bytes
/// `start..end + k - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    row: u32,
    start: u32,
    end: u32,
}

/// The candidates of a set of rows, ready for greedy selection.
pub struct Pool<'a> {
    rows: Vec<&'a [u8]>,
    k: usize,
    /// The rows' k-mers, numbered; shared with the pools [`Pool::recounted`] makes.
    kmers: Arc<RowKmers>,
    spans: Vec<Span>,
    /// The document frequency of the k-mer at each position of each row (indexed as
    /// `RowKmers::ids`), looked up once: selection rescores candidates often.
    dfs: Vec<u32>,
}

/// The k-mers of a set of rows as numbers, one per distinct k-mer (`0..distinct`): selection
/// tells a covered k-mer by one bit of a table rather than a hash look-up (rescoring took a
/// fifth of a 10,000-row pglz build's time), and recounting counts into a vector.
struct RowKmers {
    /// The number of the k-mer at each position of each row (rows end to end, row `r` from
    /// `row_base[r]`).
    ids: Vec<u32>,
    row_base: Vec<usize>,
    /// Each number's k-mer, in ascending order: a k-mer's number is found by binary search
    /// (only the few of a dictionary are looked up). A hash map from k-mer to number took
    /// 70 MB for 2 MiB of high-entropy rows.
    keys: Vec<Kmer>,
}

impl RowKmers {
    fn new(rows: &[&[u8]], k: usize) -> RowKmers {
        let mut row_base = Vec::with_capacity(rows.len());
        // Each position's k-mer, sorted by k-mer: equal k-mers side by side get one number.
        // Allocated to size, as `keys` below: grown by doubling they held up to twice that,
        // the largest allocations of a build on high-entropy rows.
        let positions = rows
            .iter()
            .map(|row| (row.len() + 1).saturating_sub(k))
            .sum();
        let mut by_key: Vec<(Kmer, usize)> = Vec::with_capacity(positions);
        for row in rows {
            row_base.push(by_key.len());
            let base = by_key.len();
            by_key.extend(
                kmer::keys(row, k)
                    .enumerate()
                    .map(|(i, key)| (key, base + i)),
            );
        }
        by_key.sort_unstable();
        let mut ids = vec![0; by_key.len()];
        let distinct = by_key.chunk_by(|a, b| a.0 == b.0).count();
        let mut keys: Vec<Kmer> = Vec::with_capacity(distinct);
        for (key, position) in by_key {
            if keys.last() != Some(&key) {
                keys.push(key);
            }
            ids[position] = keys.len() as u32 - 1;
        }
        RowKmers {
            ids,
            row_base,
            keys,
        }
    }

    /// The number of k-mer `key`, if the rows hold it.
    fn number(&self, key: Kmer) -> Option<u32> {
        self.keys.binary_search(&key).ok().map(|i| i as u32)
    }

    /// The numbers of row `row`'s k-mers, by start position.
    fn of_row(&self, row: usize) -> &[u32] {
        let end = self
            .row_base
            .get(row + 1)
            .copied()
            .unwrap_or(self.ids.len());
        &self.ids[self.row_base[row]..end]
    }
}

/// A 64-bit fingerprint of a byte string (deterministic across runs).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

impl<'a> Pool<'a> {
    /// The candidates of `rows`: every maximal run of k-mers held by `min_df` rows or more,
    /// each distinct byte string once.
    pub fn new(rows: Vec<&'a [u8]>, counts: &KmerCounts, min_df: u32) -> Pool<'a> {
        let k = counts.k();
        let kmers = RowKmers::new(&rows, k);
        let number_dfs: Vec<u32> = kmers.keys.iter().map(|&key| counts.df(key)).collect();
        Pool::with_dfs(rows, k, Arc::new(kmers), &number_dfs, min_df)
    }

    /// The candidates of the same rows by other counts: each k-mer's document frequency is
    /// the number of rows that hold it at a position `marks` marks (`marks[r][i]`: the k-mer
    /// starting at byte `i` of row `r`; positions past the end of `marks[r]` do not count).
    /// The same as [`Pool::new`] with [`KmerCounts::count_marked`] over the rows, counted
    /// without hashing.
    pub fn recounted(&self, marks: &[Vec<bool>], min_df: u32) -> Pool<'a> {
        let distinct = self.kmers.keys.len();
        let mut number_dfs = vec![0u32; distinct];
        // The last row that counted each k-mer: a row counts once however often it holds it.
        let mut counted_in = vec![u32::MAX; distinct];
        for (r, row_marks) in marks.iter().enumerate().take(self.rows.len()) {
            for (&id, _) in self
                .kmers
                .of_row(r)
                .iter()
                .zip(row_marks)
                .filter(|(_, &marked)| marked)
            {
                let id = id as usize;
                if counted_in[id] != r as u32 {
                    counted_in[id] = r as u32;
                    number_dfs[id] += 1;
                }
            }
        }
        drop(counted_in); // before the pool's own tables are allocated
        Pool::with_dfs(
            self.rows.clone(),
            self.k,
            Arc::clone(&self.kmers),
            &number_dfs,
            min_df,
        )
    }

    /// The candidates of `rows`, whose k-mers are `kmers`, the document frequency of k-mer
    /// number `n` being `number_dfs[n]`.
    fn with_dfs(
        rows: Vec<&'a [u8]>,
        k: usize,
        kmers: Arc<RowKmers>,
        number_dfs: &[u32],
        min_df: u32,
    ) -> Pool<'a> {
        let mut seen = HashSet::new();
        let mut spans = Vec::new();
        let dfs: Vec<u32> = kmers
            .ids
            .iter()
            .map(|&id| number_dfs[id as usize])
            .collect();
        for (index, row) in rows.iter().enumerate() {
            let mut run_start = None;
            let n = (row.len() + 1).saturating_sub(k);
            let base = kmers.row_base[index];
            for i in 0..=n {
                let frequent = i < n && dfs[base + i] >= min_df;
                match (frequent, run_start) {
                    (true, None) => run_start = Some(i),
                    (false, Some(start)) => {
                        run_start = None;
                        if seen.insert(fingerprint(&row[start..i + k - 1])) {
                            spans.push(Span {
                                row: index as u32,
                                start: start as u32,
                                end: i as u32,
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        Pool {
            rows,
            k,
            kmers,
            spans,
            dfs,
        }
    }

    /// How many candidates there are.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are no candidates (nothing recurs across rows).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn bytes(&self, span: Span) -> &'a [u8] {
        let k = self.k;
        &self.rows[span.row as usize][span.start as usize..span.end as usize + k - 1]
    }

    /// `span` without the covered k-mers at its ends, and its value (the sum of the document
    /// frequencies of its uncovered k-mers); `None` if all are covered. Covered k-mers inside
    /// stay: they keep the segment whole, so a row can copy it in one long match.
    fn trimmed(&self, span: Span, covered: &CoveredIds, out: &mut Vec<(Span, f64)>) {
        let base = self.kmers.row_base[span.row as usize];
        let run = base + span.start as usize..base + span.end as usize;
        // Which k-mers are covered is as good as random: no branch on it. The value is summed
        // as an integer, which is exact (and so what adding each as an f64 gave, the sums
        // staying far below 2^53).
        let mut first = u32::MAX;
        let mut last = 0;
        let mut value: u64 = 0;
        for (i, (&id, &df)) in
            (span.start..).zip(self.kmers.ids[run.clone()].iter().zip(&self.dfs[run]))
        {
            let uncovered = !covered.contains(id);
            value += u64::from(df) * u64::from(uncovered);
            first = std::hint::select_unpredictable(uncovered, first.min(i), first);
            last = std::hint::select_unpredictable(uncovered, i, last);
        }
        if first != u32::MAX {
            out.push((
                Span {
                    row: span.row,
                    start: first,
                    end: last + 1,
                },
                value as f64,
            ));
        }
    }

    /// Chooses segments of at most `budget` bytes in all, greedily by value per byte, skipping
    /// k-mers in `covered` (and those of the segments chosen before) and byte strings whose
    /// [`fingerprint`] is in `banned`. Segments come out in the order chosen, best first.
    pub fn select(&self, covered: &KmerSet, banned: &HashSet<u64>, budget: usize) -> Vec<Segment> {
        let k = self.k;
        let byte_len = |s: Span| (s.end - s.start) as usize + k - 1;
        let density = |s: Span, value: f64| value / byte_len(s) as f64;
        // `covered` as k-mer numbers (k-mers the rows do not hold are never looked up), and
        // then those of each chosen segment.
        let mut covered_ids = CoveredIds::new(self.kmers.keys.len());
        for key in covered.iter() {
            if let Some(id) = self.kmers.number(*key) {
                covered_ids.insert(id);
            }
        }
        let mut runs = Vec::new();
        let mut entries = Vec::with_capacity(self.spans.len());
        for &span in &self.spans {
            runs.clear();
            self.trimmed(span, &covered_ids, &mut runs);
            for &(run, value) in &runs {
                entries.push(Entry::new(density(run, value), run));
            }
        }
        // Entries are ordered totally (no two share a span), so the heap pops them in the
        // same order however it was built.
        let mut heap = BinaryHeap::from(entries);
        let mut chosen = Vec::new();
        let mut left = budget;
        while let Some(entry) = heap.pop() {
            if left < k {
                break;
            }
            let span = entry.span;
            runs.clear();
            self.trimmed(span, &covered_ids, &mut runs);
            let unchanged = runs.len() == 1 && runs[0].0 == span;
            if !unchanged {
                for &(run, value) in &runs {
                    heap.push(Entry::new(density(run, value), run));
                }
                continue;
            }
            let value = runs[0].1;
            if byte_len(span) > left {
                // Too long for what is left: keep as much of its start as fits.
                let shorter = Span {
                    end: span.start + (left + 1 - k) as u32,
                    ..span
                };
                runs.clear();
                self.trimmed(shorter, &covered_ids, &mut runs);
                for &(run, value) in &runs {
                    heap.push(Entry::new(density(run, value), run));
                }
                continue;
            }
            let bytes = self.bytes(span);
            if banned.contains(&fingerprint(bytes)) {
                continue;
            }
            let ids = self.kmers.of_row(span.row as usize);
            for &id in &ids[span.start as usize..span.end as usize] {
                covered_ids.insert(id);
            }
            left -= bytes.len();
            chosen.push(Segment {
                bytes: bytes.to_vec(),
                estimate: value,
            });
        }
        chosen
    }
}

/// A set of k-mer numbers (see [`RowKmers`]), one bit each.
struct CoveredIds(Vec<u64>);

impl CoveredIds {
    fn new(ids: usize) -> CoveredIds {
        CoveredIds(vec![0; ids.div_ceil(64)])
    }

    fn insert(&mut self, id: u32) {
        self.0[id as usize / 64] |= 1 << (id % 64);
    }

    fn contains(&self, id: u32) -> bool {
        self.0[id as usize / 64] & (1 << (id % 64)) != 0
    }
}

/// A heap entry: a span and its value per byte, highest first (ties: earlier row and start,
/// so that selection does not depend on the heap's internal order).
#[derive(Clone, Copy, Debug)]
struct Entry {
    density: f64,
    span: Span,
}

impl Entry {
    fn new(density: f64, span: Span) -> Entry {
        Entry { density, span }
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.density
            .total_cmp(&other.density)
            .then_with(|| other.span.row.cmp(&self.span.row))
            .then_with(|| other.span.start.cmp(&self.span.start))
            .then_with(|| other.span.end.cmp(&self.span.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_shared_substring_once() {
        let rows: Vec<&[u8]> = vec![
            b"{\"name\":\"alpha\",\"kind\":\"city\"}",
            b"{\"name\":\"beta\",\"kind\":\"city\"}",
            b"{\"name\":\"gamma\",\"kind\":\"town\"}",
        ];
        let counts = KmerCounts::count(&rows, 4);
        let pool = Pool::new(rows.clone(), &counts, 2);
        let chosen = pool.select(&KmerSet::default(), &HashSet::new(), 1000);
        let texts: Vec<String> = chosen
            .iter()
            .map(|s| String::from_utf8_lossy(&s.bytes).into_owned())
            .collect();
        assert!(texts.contains(&"{\"name\":\"".to_string()), "{texts:?}");
        assert!(
            texts.iter().any(|t| t.contains("\",\"kind\":\"")),
            "{texts:?}"
        );
        // No k-mer is chosen twice.
        let mut all = KmerSet::default();
        for s in &chosen {
            for key in kmer::keys(&s.bytes, 4) {
                assert!(all.insert(key) || s.bytes.len() > 4, "{texts:?}");
            }
        }
    }

    #[test]
    fn kmers_are_numbered_in_key_order() {
        let rows: Vec<&[u8]> = vec![b"zzzzabcd", b"abcdzzzz", b"mnop", b"ab"];
        let kmers = RowKmers::new(&rows, 4);
        // Sorted and distinct, so that a k-mer's number is found by binary search.
        assert!(kmers.keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(kmers.keys.len(), 9);
        for (r, row) in rows.iter().enumerate() {
            for (&id, key) in kmers.of_row(r).iter().zip(kmer::keys(row, 4)) {
                assert_eq!(kmers.keys[id as usize], key);
                assert_eq!(kmers.number(key), Some(id));
            }
        }
        assert_eq!(kmers.number(kmer::key(b"qqqq", 4)), None);
    }

    #[test]
    fn respects_the_budget() {
        let rows: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("common prefix text {i} and a common suffix").into_bytes())
            .collect();
        let rows_ref: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        let counts = KmerCounts::count(&rows_ref, 6);
        let pool = Pool::new(rows_ref, &counts, 2);
        for budget in [6, 10, 20, 1000] {
            let chosen = pool.select(&KmerSet::default(), &HashSet::new(), budget);
            let total: usize = chosen.iter().map(|s| s.bytes.len()).sum();
            assert!(total <= budget, "{total} > {budget}");
            assert!(!chosen.is_empty());
        }
    }

    /// Rows of a 6-letter alphabet: 3-byte strings recur within and across rows, 4-byte
    /// strings less; with the `min_df`s below, runs of frequent k-mers alternate with the
    /// rows' own bytes. Some rows are shorter than k.
    fn small_alphabet_rows(seed: u64) -> Vec<Vec<u8>> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..60)
            .map(|_| {
                let len = rng.random_range(0..40);
                (0..len)
                    .map(|_| b"abcdef"[rng.random_range(0..6)])
                    .collect()
            })
            .collect()
    }

    /// The (seed, k, `min_df`) the selection tests run with [`small_alphabet_rows`].
    const SMALL_ALPHABET_CASES: [(u64, usize, u32); 3] = [(1, 3, 5), (2, 3, 8), (3, 4, 2)];

    /// How many of `rows` hold `kmer`, counted the obvious way.
    fn naive_df(rows: &[&[u8]], kmer: &[u8]) -> u32 {
        rows.iter()
            .filter(|row| row.windows(kmer.len()).any(|w| w == kmer))
            .count() as u32
    }

    /// The candidates the obvious way: each maximal run of a row whose k-mers are held by
    /// `min_df` rows or more, as bytes, each distinct string once, in row order.
    fn naive_candidates(rows: &[&[u8]], k: usize, min_df: u32) -> Vec<Vec<u8>> {
        let mut candidates: Vec<Vec<u8>> = Vec::new();
        for row in rows {
            let frequent: Vec<bool> = row
                .windows(k)
                .map(|kmer| naive_df(rows, kmer) >= min_df)
                .collect();
            let mut i = 0;
            while i < frequent.len() {
                let start = i;
                while i < frequent.len() && frequent[i] {
                    i += 1;
                }
                if i > start {
                    let bytes = row[start..i + k - 1].to_vec();
                    if !candidates.contains(&bytes) {
                        candidates.push(bytes);
                    }
                }
                i += 1;
            }
        }
        candidates
    }

    /// `bytes` without its covered k-mers at either end, and the sum of the document
    /// frequencies of its uncovered k-mers; `None` if all are covered.
    fn naive_trimmed<'b>(
        rows: &[&[u8]],
        bytes: &'b [u8],
        k: usize,
        covered: &KmerSet,
    ) -> Option<(&'b [u8], u32)> {
        let uncovered: Vec<usize> = (0..bytes.len() + 1 - k)
            .filter(|&i| !covered.contains(&kmer::key(&bytes[i..], k)))
            .collect();
        let (&first, &last) = (uncovered.first()?, uncovered.last()?);
        let value = uncovered
            .iter()
            .map(|&i| naive_df(rows, &bytes[i..i + k]))
            .sum();
        Some((&bytes[first..last + k], value))
    }

    #[test]
    fn candidates_are_the_distinct_maximal_frequent_runs() {
        for (seed, k, min_df) in SMALL_ALPHABET_CASES {
            let rows = small_alphabet_rows(seed);
            let rows: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
            let pool = Pool::new(rows.clone(), &KmerCounts::count(&rows, k), min_df);
            let candidates: Vec<&[u8]> = pool.spans.iter().map(|&s| pool.bytes(s)).collect();
            let expected = naive_candidates(&rows, k, min_df);
            assert_eq!(candidates, expected, "seed {seed}, k={k}, min_df={min_df}");
            assert_eq!(pool.len(), expected.len());
            // Many candidates, some of them runs cut short of their row's ends.
            assert!(expected.len() >= 10, "{}", expected.len());
            assert!(expected.iter().any(|c| !rows.contains(&&c[..])));
            assert!(!pool.is_empty());
        }
        // Rows that share no k-mer: no candidates.
        let rows: Vec<&[u8]> = vec![b"abcd", b"efgh", b"ijkl"];
        let pool = Pool::new(rows.clone(), &KmerCounts::count(&rows, 3), 2);
        assert!(pool.is_empty());
        assert_eq!(pool.len(), 0);
    }

    /// Each chosen segment, in the order chosen: its value is the sum of the document
    /// frequencies of its k-mers not covered before it (by `covered` or a segment chosen
    /// earlier), recounted; it neither starts nor ends with a covered k-mer; it is a piece of
    /// a candidate; and the segments fit the budget. With room for every candidate, the first
    /// is the one of highest value per byte and every frequent k-mer ends up covered.
    #[test]
    fn chosen_segments_are_valued_and_trimmed_as_documented() {
        for (seed, k, min_df) in SMALL_ALPHABET_CASES {
            let rows = small_alphabet_rows(seed);
            let rows: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
            let pool = Pool::new(rows.clone(), &KmerCounts::count(&rows, k), min_df);
            let candidates = naive_candidates(&rows, k, min_df);
            // Covered before selection: the k-mers of a few rows.
            let covered: KmerSet = rows[..3].iter().flat_map(|r| kmer::keys(r, k)).collect();
            assert!(!covered.is_empty());
            for budget in [k, 25, 100, 100_000] {
                let context = format!("seed {seed}, k={k}, min_df={min_df}, budget {budget}");
                let chosen = pool.select(&covered, &HashSet::new(), budget);
                assert!(!chosen.is_empty(), "{context}");
                let total: usize = chosen.iter().map(|s| s.bytes.len()).sum();
                assert!(total <= budget, "{context}: {total} bytes");
                let mut covered_so_far = covered.clone();
                for segment in &chosen {
                    let bytes = &segment.bytes[..];
                    assert!(bytes.len() >= k, "{context}");
                    assert!(
                        candidates
                            .iter()
                            .any(|c| c.windows(bytes.len()).any(|w| w == bytes)),
                        "{context}: {bytes:?} is no piece of a candidate"
                    );
                    let (trimmed, value) = naive_trimmed(&rows, bytes, k, &covered_so_far)
                        .expect("a segment of covered k-mers only");
                    assert_eq!(trimmed, bytes, "{context}: covered ends");
                    assert_eq!(segment.estimate, f64::from(value), "{context}: {bytes:?}");
                    covered_so_far.extend(kmer::keys(bytes, k));
                }
                if budget == k {
                    // The best candidate's start.
                    assert_eq!(chosen.len(), 1, "{context}");
                }
                if budget == 100_000 {
                    let best = candidates
                        .iter()
                        .filter_map(|c| naive_trimmed(&rows, c, k, &covered))
                        .map(|(bytes, value)| f64::from(value) / bytes.len() as f64)
                        .fold(0.0, f64::max);
                    let first = &chosen[0];
                    assert_eq!(first.estimate / first.bytes.len() as f64, best, "{context}");
                    for candidate in &candidates {
                        assert!(
                            kmer::keys(candidate, k).all(|key| covered_so_far.contains(&key)),
                            "{context}: {candidate:?} left uncovered"
                        );
                    }
                }
                // A banned string is not chosen; what it covered is then left to others.
                let banned: HashSet<u64> = [fingerprint(&chosen[0].bytes)].into();
                let without = pool.select(&covered, &banned, budget);
                assert!(
                    without.iter().all(|s| s.bytes != chosen[0].bytes),
                    "{context}"
                );
            }
        }
    }

    #[test]
    fn a_segment_longer_than_the_budget_left_keeps_its_start() {
        // One candidate, 16 bytes, each of its 13 k-mers held by all 3 rows.
        let rows: Vec<&[u8]> = vec![b"0123456789abcdef"; 3];
        let pool = Pool::new(rows.clone(), &KmerCounts::count(&rows, 4), 2);
        assert_eq!(pool.len(), 1);
        let select = |budget| pool.select(&KmerSet::default(), &HashSet::new(), budget);
        assert_eq!(
            select(10),
            [Segment {
                bytes: b"0123456789".to_vec(),
                estimate: 3.0 * 7.0,
            }]
        );
        assert_eq!(select(16)[0].bytes, rows[0]);
        // Less than a k-mer: nothing.
        assert_eq!(select(3), []);
    }

    #[test]
    fn recounting_by_number_is_counting_the_marked_kmers_again() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        // Rows from a small alphabet, so that k-mers recur within and across rows; some
        // shorter than k.
        let rows: Vec<Vec<u8>> = (0..200)
            .map(|_| {
                let len = rng.random_range(0..40);
                (0..len).map(|_| b"abcd"[rng.random_range(0..4)]).collect()
            })
            .collect();
        let rows: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        for k in [3, 4] {
            let pool = Pool::new(rows.clone(), &KmerCounts::count(&rows, k), 2);
            // Marks per k-mer position, some rows' marks cut short or missing.
            let marks: Vec<Vec<bool>> = rows[..190]
                .iter()
                .map(|row| {
                    let n = (row.len() + 1).saturating_sub(k);
                    let n = if rng.random_bool(0.2) { n / 2 } else { n };
                    (0..n).map(|_| rng.random_bool(0.4)).collect()
                })
                .collect();
            let counts = KmerCounts::count_marked(&rows, &marks, k);
            for min_df in [2, 5, 20] {
                let recounted = pool.recounted(&marks, min_df);
                let counted = Pool::new(rows.clone(), &counts, min_df);
                assert_eq!(recounted.dfs, counted.dfs, "k={k} min_df={min_df}");
                assert_eq!(recounted.spans, counted.spans, "k={k} min_df={min_df}");
                assert!(!counted.spans.is_empty() || min_df == 20);
                let select = |pool: &Pool| pool.select(&KmerSet::default(), &HashSet::new(), 64);
                assert_eq!(select(&recounted), select(&counted));
            }
        }
    }
}
