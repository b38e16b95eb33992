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
//! (a lazy greedy: a candidate is re-scored when it reaches the top).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{Hash, Hasher};

use super::kmer::{self, KmerCounts, KmerSet};

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
    spans: Vec<Span>,
    /// The document frequency of the k-mer at each position of each row (rows end to end,
    /// row `r` from `row_base[r]`), looked up once: selection rescores candidates often.
    dfs: Vec<u32>,
    row_base: Vec<usize>,
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
        let mut seen = HashSet::new();
        let mut spans = Vec::new();
        let mut dfs = Vec::new();
        let mut row_base = Vec::with_capacity(rows.len());
        for (index, row) in rows.iter().enumerate() {
            let mut run_start = None;
            let n = (row.len() + 1).saturating_sub(k);
            let base = dfs.len();
            row_base.push(base);
            dfs.extend(kmer::keys(row, k).map(|key| counts.df(key)));
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
            spans,
            dfs,
            row_base,
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
    fn trimmed(&self, span: Span, covered: &KmerSet, out: &mut Vec<(Span, f64)>) {
        let k = self.k;
        let row = self.rows[span.row as usize];
        let dfs = &self.dfs[self.row_base[span.row as usize]..];
        let mut first = None;
        let mut last = 0;
        let mut value = 0.0;
        for i in span.start..span.end {
            let key = kmer::key(&row[i as usize..], k);
            if !covered.contains(&key) {
                first.get_or_insert(i);
                last = i;
                value += f64::from(dfs[i as usize]);
            }
        }
        if let Some(start) = first {
            out.push((
                Span {
                    row: span.row,
                    start,
                    end: last + 1,
                },
                value,
            ));
        }
    }

    /// Chooses segments of at most `budget` bytes in all, greedily by value per byte, skipping
    /// k-mers in `covered` (and adding the chosen ones to it) and byte strings whose
    /// [`fingerprint`] is in `banned`. Segments come out in the order chosen, best first.
    pub fn select(
        &self,
        covered: &mut KmerSet,
        banned: &HashSet<u64>,
        budget: usize,
    ) -> Vec<Segment> {
        let k = self.k;
        let byte_len = |s: Span| (s.end - s.start) as usize + k - 1;
        let density = |s: Span, value: f64| value / byte_len(s) as f64;
        let mut heap = BinaryHeap::with_capacity(self.spans.len());
        let mut runs = Vec::new();
        for &span in &self.spans {
            runs.clear();
            self.trimmed(span, covered, &mut runs);
            for &(run, value) in &runs {
                heap.push(Entry::new(density(run, value), run));
            }
        }
        let mut chosen = Vec::new();
        let mut left = budget;
        while let Some(entry) = heap.pop() {
            if left < k {
                break;
            }
            let span = entry.span;
            runs.clear();
            self.trimmed(span, covered, &mut runs);
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
                self.trimmed(shorter, covered, &mut runs);
                for &(run, value) in &runs {
                    heap.push(Entry::new(density(run, value), run));
                }
                continue;
            }
            let bytes = self.bytes(span);
            if banned.contains(&fingerprint(bytes)) {
                continue;
            }
            covered.extend(kmer::keys(bytes, k));
            left -= bytes.len();
            chosen.push(Segment {
                bytes: bytes.to_vec(),
                estimate: value,
            });
        }
        chosen
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
        let mut covered = KmerSet::default();
        let chosen = pool.select(&mut covered, &HashSet::new(), 1000);
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
    fn respects_the_budget() {
        let rows: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("common prefix text {i} and a common suffix").into_bytes())
            .collect();
        let rows_ref: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        let counts = KmerCounts::count(&rows_ref, 6);
        let pool = Pool::new(rows_ref, &counts, 2);
        for budget in [6, 10, 20, 1000] {
            let chosen = pool.select(&mut KmerSet::default(), &HashSet::new(), budget);
            let total: usize = chosen.iter().map(|s| s.bytes.len()).sum();
            assert!(total <= budget, "{total} > {budget}");
            assert!(!chosen.is_empty());
        }
    }
}
