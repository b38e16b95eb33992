//! The measurements of `compare` (and `demo`): six ways of storing the same rows, each row
//! compressed on its own, timed side by side.
//!
//! | method      | each stored datum                                                           |
//! |-------------|-----------------------------------------------------------------------------|
//! | `pglz`      | pgdict's datum encoder, pglz without a dictionary: PostgreSQL's own bytes    |
//! | `pglz_dict` | the encoder with the pglz dictionary (smallest of raw, plain, dictionary)    |
//! | `lz4`       | the encoder, lz4 as PostgreSQL calls it                                     |
//! | `lz4_dict`  | the encoder with the lz4 dictionary                                         |
//! | `zstd`      | a zstd frame behind a 10-byte header, or the raw datum when smaller: a      |
//! |             | reference only, the format has no plain zstd form (ids start at 1)         |
//! | `zstd_dict` | the encoder with the zstd dictionary                                        |
//!
//! Stored sizes count whole datums, headers included. Before timing, every datum is decoded
//! and compared with its row: a difference stops the run.
//!
//! Timing: every (method, size bucket) pair is one job of [`pgdict::measure::side_by_side`]:
//! each round runs every job once, so that the methods meet the same machine state (this
//! machine is noisy), and each job keeps its median round; a method's time in all is the sum
//! of its buckets' medians. Compression is the whole write (every form the encoder tries);
//! decompression reads every stored datum back, raw ones included (reading a raw datum is a
//! copy, which is what a reader of that column pays).

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use pgdict::datum::{
    self, Codec, DatumDecoder, DatumEncoder, Dictionaries, NoDictionaries, PreparedDictionary,
};
use pgdict::measure::{mbps, side_by_side, Job};
use pgdict::zstd::{ZstdCompressor, ZstdDecompressor};
use pgdict_trainer::SizeBucket;

/// A way of storing datums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Method {
    pub codec: Codec,
    pub dict: bool,
}

/// The six methods, in report order.
pub const METHODS: [Method; 6] = [
    Method {
        codec: Codec::Pglz,
        dict: false,
    },
    Method {
        codec: Codec::Pglz,
        dict: true,
    },
    Method {
        codec: Codec::Lz4,
        dict: false,
    },
    Method {
        codec: Codec::Lz4,
        dict: true,
    },
    Method {
        codec: Codec::Zstd,
        dict: false,
    },
    Method {
        codec: Codec::Zstd,
        dict: true,
    },
];

impl Method {
    /// The JSON key: `pglz`, `pglz_dict`, ...
    pub fn key(self) -> &'static str {
        match (self.codec, self.dict) {
            (Codec::Pglz, false) => "pglz",
            (Codec::Pglz, true) => "pglz_dict",
            (Codec::Lz4, false) => "lz4",
            (Codec::Lz4, true) => "lz4_dict",
            (Codec::Zstd, false) => "zstd",
            (Codec::Zstd, true) => "zstd_dict",
        }
    }

    /// The table label: `pglz`, `pglz+dict`, ...
    pub fn label(self) -> &'static str {
        match (self.codec, self.dict) {
            (Codec::Pglz, false) => "pglz",
            (Codec::Pglz, true) => "pglz+dict",
            (Codec::Lz4, false) => "lz4",
            (Codec::Lz4, true) => "lz4+dict",
            (Codec::Zstd, false) => "zstd",
            (Codec::Zstd, true) => "zstd+dict",
        }
    }
}

/// The dictionary a codec's dictionary method uses.
#[derive(Clone)]
pub struct DictInfo {
    pub prepared: Arc<PreparedDictionary>,
    /// Its id in a store, when it comes from one.
    pub id: Option<u32>,
    /// Where it comes from, for the report: "dictionary 3 of the dictionary store dicts,
    /// trained on rows.jsonl", "trained by pgdict's builder on 1000 rows in 2.1 s".
    pub origin: String,
}

/// How long to time.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Rounds at least.
    pub rounds: usize,
    /// And at least this long per phase (compress, decompress), all methods together.
    pub min_time: Duration,
}

/// What one method did to a group of rows.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    pub datums: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    /// Datums stored raw (compression did not pay).
    pub raw_datums: u64,
    /// Datums stored in the dictionary form.
    pub dict_datums: u64,
    /// Median seconds to write the group.
    pub compress_seconds: f64,
    /// Median seconds to read the group back.
    pub decompress_seconds: f64,
}

impl Stats {
    /// raw / stored; `None` for no datums.
    pub fn ratio(&self) -> Option<f64> {
        (self.stored_bytes > 0).then(|| self.raw_bytes as f64 / self.stored_bytes as f64)
    }

    /// This method's ratio over `baseline`'s (the baseline's stored bytes over ours).
    pub fn ratio_vs(&self, baseline: &Stats) -> Option<f64> {
        (self.stored_bytes > 0).then(|| baseline.stored_bytes as f64 / self.stored_bytes as f64)
    }

    /// Share of the datums stored raw.
    pub fn raw_share(&self) -> Option<f64> {
        (self.datums > 0).then(|| self.raw_datums as f64 / self.datums as f64)
    }

    pub fn compress_mb_s(&self) -> Option<f64> {
        mb_s(self.raw_bytes, self.compress_seconds)
    }

    pub fn decompress_mb_s(&self) -> Option<f64> {
        mb_s(self.raw_bytes, self.decompress_seconds)
    }
}

impl<'a> std::iter::Sum<&'a Stats> for Stats {
    /// Groups taken as one: their counts and times added.
    fn sum<I: Iterator<Item = &'a Stats>>(groups: I) -> Stats {
        groups.fold(Stats::default(), |all, group| Stats {
            datums: all.datums + group.datums,
            raw_bytes: all.raw_bytes + group.raw_bytes,
            stored_bytes: all.stored_bytes + group.stored_bytes,
            raw_datums: all.raw_datums + group.raw_datums,
            dict_datums: all.dict_datums + group.dict_datums,
            compress_seconds: all.compress_seconds + group.compress_seconds,
            decompress_seconds: all.decompress_seconds + group.decompress_seconds,
        })
    }
}

/// [`pgdict::measure::mbps`], `None` where it has nothing to measure (0).
fn mb_s(bytes: u64, seconds: f64) -> Option<f64> {
    let time = Duration::try_from_secs_f64(seconds).ok()?;
    let speed = mbps(usize::try_from(bytes).ok()?, time);
    (speed > 0.0).then_some(speed)
}

/// One method's results: in all, and per bucket (in [`SizeBucket::ALL`] order).
#[derive(Clone, Debug)]
pub struct MethodResult {
    pub method: Method,
    pub all: Stats,
    pub buckets: Vec<Stats>,
}

/// Everything `compare` reports.
pub struct Comparison {
    /// The methods measured (dictionary methods only for codecs with a dictionary).
    pub results: Vec<MethodResult>,
    /// Rounds asked for at least ([`Timing::rounds`]).
    pub min_rounds: usize,
    /// Rounds run, compressing and decompressing: at least `min_rounds`, and more where the
    /// phase's minimum time ([`Timing::min_time`]) took more.
    pub rounds: Rounds,
}

/// Rounds run in each phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rounds {
    pub compress: usize,
    pub decompress: usize,
}

impl Comparison {
    /// Plain pglz's results: what PostgreSQL does, the baseline of every `vs pglz`.
    pub fn pglz(&self) -> &MethodResult {
        &self.results[0]
    }
}

/// What a coder stored a row as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Raw,
    Plain,
    Dict,
}

/// Writes and reads one method's datums.
trait Coder {
    /// Replaces `out` with the stored datum of `raw`.
    fn encode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> anyhow::Result<Kind>;
    /// Replaces `out` with the value of `datum`.
    fn decode(&mut self, datum: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()>;
}

/// pgdict's datum encoder and decoder, with or without a dictionary.
struct DatumCoder {
    encoder: DatumEncoder,
    decoder: DatumDecoder,
    codec: Codec,
    dict: Option<Arc<PreparedDictionary>>,
    lookup: Dictionaries,
}

impl Coder for DatumCoder {
    fn encode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> anyhow::Result<Kind> {
        out.clear();
        let header = self
            .encoder
            .encode_into(raw, self.codec, self.dict.as_deref(), out)?;
        Ok(if header.form.is_raw() {
            Kind::Raw
        } else if header.form.dict_id().is_some() {
            Kind::Dict
        } else {
            Kind::Plain
        })
    }

    fn decode(&mut self, datum: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()> {
        self.decoder.decode_into(datum, &self.lookup, out)?;
        Ok(())
    }
}

/// Bytes of the header counted for a plain zstd frame: as an extended header with a 1-byte
/// dictionary id (varlena length, raw length and method, codec, id).
const ZSTD_REFERENCE_HEADER: usize = 10;

/// zstd without a dictionary, as a reference: the frame behind a 10-byte header (its id byte 0,
/// which no real datum has: these datums never leave this module), or the raw datum when that
/// is smaller.
struct ZstdReference {
    compressor: ZstdCompressor,
    decompressor: ZstdDecompressor,
    encoder: DatumEncoder,
    decoder: DatumDecoder,
    frame: Vec<u8>,
}

impl Coder for ZstdReference {
    fn encode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> anyhow::Result<Kind> {
        self.frame.clear();
        self.compressor.compress_into(raw, &mut self.frame)?;
        let total = ZSTD_REFERENCE_HEADER + self.frame.len();
        let raw_total = raw.len()
            + if raw.len() < datum::MAX_SHORT_TOTAL_LEN {
                1
            } else {
                4
            };
        out.clear();
        if total >= raw_total {
            // zstd without a dictionary stores the value raw.
            self.encoder.encode_into(raw, Codec::Zstd, None, out)?;
            return Ok(Kind::Raw);
        }
        out.extend_from_slice(&(((total as u32) << 2) | 0b10).to_le_bytes());
        out.extend_from_slice(&((raw.len() as u32) | (3 << 30)).to_le_bytes());
        out.extend_from_slice(&[Codec::Zstd.code(), 0]);
        out.extend_from_slice(&self.frame);
        Ok(Kind::Plain)
    }

    fn decode(&mut self, datum: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()> {
        if datum.first().is_some_and(|&b| b & 0b11 == 0b10) {
            let word = datum
                .get(4..8)
                .ok_or_else(|| anyhow!("zstd reference datum cut off"))?;
            let raw_len = (u32::from_le_bytes([word[0], word[1], word[2], word[3]])
                & datum::MAX_RAW_LEN as u32) as usize;
            let frame = datum
                .get(ZSTD_REFERENCE_HEADER..)
                .ok_or_else(|| anyhow!("zstd reference datum cut off"))?;
            // Into the reused buffer, as every other method decodes.
            self.decompressor.decompress_into(frame, raw_len, out)?;
        } else {
            self.decoder.decode_into(datum, &NoDictionaries, out)?;
        }
        Ok(())
    }
}

fn coder(method: Method, dicts: &[Option<DictInfo>; 3]) -> anyhow::Result<Option<Box<dyn Coder>>> {
    if method.dict {
        let Some(dict) = &dicts[method.codec.code() as usize] else {
            return Ok(None);
        };
        return Ok(Some(Box::new(DatumCoder {
            encoder: DatumEncoder::new(),
            decoder: DatumDecoder::new(),
            codec: method.codec,
            dict: Some(dict.prepared.clone()),
            lookup: std::iter::once(dict.prepared.clone()).collect(),
        })));
    }
    if method.codec == Codec::Zstd {
        return Ok(Some(Box::new(ZstdReference {
            compressor: ZstdCompressor::new().context("cannot make a zstd compressor")?,
            decompressor: ZstdDecompressor::new().context("cannot make a zstd decompressor")?,
            encoder: DatumEncoder::new(),
            decoder: DatumDecoder::new(),
            frame: Vec::new(),
        })));
    }
    Ok(Some(Box::new(DatumCoder {
        encoder: DatumEncoder::new(),
        decoder: DatumDecoder::new(),
        codec: method.codec,
        dict: None,
        lookup: Dictionaries::new(),
    })))
}

/// Measures every method on `rows` (each compressed alone), with `dicts` by codec number.
pub fn compare(
    rows: &[Vec<u8>],
    dicts: &[Option<DictInfo>; 3],
    timing: Timing,
) -> anyhow::Result<Comparison> {
    let bucket_count = SizeBucket::ALL.len();
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); bucket_count];
    for (i, row) in rows.iter().enumerate() {
        buckets[SizeBucket::of(row.len()) as usize].push(i);
    }
    let mut methods = Vec::new();
    let mut coders = Vec::new();
    for method in METHODS {
        if let Some(c) = coder(method, dicts)? {
            methods.push(method);
            coders.push(c);
        }
    }

    // Store every row once per method, and check that it reads back.
    let mut results = Vec::new();
    let mut stored: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut back = Vec::new();
    for (method, coder) in methods.iter().zip(&mut coders) {
        let mut datums = Vec::with_capacity(rows.len());
        let mut per_bucket = vec![Stats::default(); bucket_count];
        for (i, row) in rows.iter().enumerate() {
            let mut datum = Vec::new();
            let kind = coder
                .encode(row, &mut datum)
                .with_context(|| format!("{}: cannot store row {}", method.label(), i + 1))?;
            coder
                .decode(&datum, &mut back)
                .with_context(|| format!("{}: cannot read row {} back", method.label(), i + 1))?;
            if back != *row {
                bail!(
                    "{}: row {} reads back as other bytes (a bug: please report it)",
                    method.label(),
                    i + 1
                );
            }
            let stats = &mut per_bucket[SizeBucket::of(row.len()) as usize];
            stats.datums += 1;
            stats.raw_bytes += row.len() as u64;
            stats.stored_bytes += datum.len() as u64;
            stats.raw_datums += u64::from(kind == Kind::Raw);
            stats.dict_datums += u64::from(kind == Kind::Dict);
            datums.push(datum);
        }
        stored.push(datums);
        results.push(MethodResult {
            method: *method,
            all: Stats::default(),
            buckets: per_bucket,
        });
    }

    // Time writing, then reading: every (method, bucket) is one job of one side-by-side run.
    let coders: Vec<RefCell<Box<dyn Coder>>> = coders.into_iter().map(RefCell::new).collect();
    let scratch = RefCell::new(Vec::new());
    let encode = |coder: &mut dyn Coder, _: usize, i: usize| {
        // Every row was stored once above: encoding the same bytes again cannot fail.
        coder
            .encode(black_box(&rows[i]), &mut scratch.borrow_mut())
            .expect("a row that was stored once stores again");
    };
    let decode = |coder: &mut dyn Coder, c: usize, i: usize| {
        coder
            .decode(black_box(&stored[c][i]), &mut scratch.borrow_mut())
            .expect("a datum that was read once reads again");
    };
    let time = |job: RowJob<'_>| {
        let (mut jobs, slots) = jobs(&coders, &buckets, job);
        let measured = side_by_side(&mut jobs, timing.rounds, timing.min_time);
        let seconds = measured.medians.iter().map(Duration::as_secs_f64);
        (
            measured.rounds,
            slots.into_iter().zip(seconds).collect::<Vec<_>>(),
        )
    };
    let (compress_rounds, compress_seconds) = time(&encode);
    let (decompress_rounds, decompress_seconds) = time(&decode);
    for ((c, b), seconds) in compress_seconds {
        results[c].buckets[b].compress_seconds = seconds;
    }
    for ((c, b), seconds) in decompress_seconds {
        results[c].buckets[b].decompress_seconds = seconds;
    }
    for result in &mut results {
        result.all = result.buckets.iter().sum();
    }
    Ok(Comparison {
        results,
        min_rounds: timing.rounds,
        rounds: Rounds {
            compress: compress_rounds,
            decompress: decompress_rounds,
        },
    })
}

/// A row job.
type RowJob<'a> = &'a dyn Fn(&mut dyn Coder, usize, usize);

/// One timing job per (coder, non-empty bucket): `job(coder, coder_index, row)` over the
/// bucket's rows. Returns the jobs and, for each, its (coder, bucket).
fn jobs<'a>(
    coders: &'a [RefCell<Box<dyn Coder>>],
    buckets: &'a [Vec<usize>],
    job: RowJob<'a>,
) -> (Vec<Job<'a>>, Vec<(usize, usize)>) {
    let mut jobs: Vec<Job<'a>> = Vec::new();
    let mut slots = Vec::new();
    for (c, coder) in coders.iter().enumerate() {
        for (b, rows) in buckets.iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            slots.push((c, b));
            jobs.push(Box::new(move || {
                let mut coder = coder.borrow_mut();
                for &i in rows {
                    job(coder.as_mut(), c, i);
                }
            }));
        }
    }
    (jobs, slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON rows in every size bucket, alike enough for a dictionary to pay, and three rows of
    /// noise that no method shrinks.
    fn rows() -> Vec<Vec<u8>> {
        let mut rows: Vec<Vec<u8>> = (0..40)
            .map(|i| {
                let note = "lorem ipsum dolor ".repeat(i * i / 4);
                format!(r#"{{"id":{i},"user":"user{i}","tags":["alpha","beta"],"note":"{note}"}}"#)
                    .into_bytes()
            })
            .collect();
        for len in [50, 300, 2000] {
            rows.push(noise(len));
        }
        rows
    }

    /// `len` bytes that do not compress (xorshift; another `len`, other bytes).
    fn noise(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ len as u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    fn dictionary() -> DictInfo {
        let content =
            r#"{"id":0,"user":"user0","tags":["alpha","beta"],"note":"lorem ipsum dolor "}"#;
        DictInfo {
            prepared: Arc::new(PreparedDictionary::new(9, content.repeat(4).as_bytes()).unwrap()),
            id: Some(9),
            origin: "a test".into(),
        }
    }

    const TWO_ROUNDS: Timing = Timing {
        rounds: 2,
        min_time: Duration::ZERO,
    };

    /// What `method` stores `row` as, asked of the datum encoder and the zstd compressor
    /// directly: (stored bytes, stored raw, stored in the dictionary form).
    fn stored(method: Method, dict: &DictInfo, row: &[u8]) -> (u64, bool, bool) {
        let mut datum = Vec::new();
        let dict = method.dict.then(|| &*dict.prepared);
        let header = DatumEncoder::new()
            .encode_into(row, method.codec, dict, &mut datum)
            .unwrap();
        if method == METHODS[4] {
            // The reference: the frame behind 10 header bytes, when that is smaller than raw.
            assert!(header.form.is_raw(), "zstd without a dictionary stores raw");
            let mut frame = Vec::new();
            ZstdCompressor::new()
                .unwrap()
                .compress_into(row, &mut frame)
                .unwrap();
            let framed = 10 + frame.len();
            return match framed < datum.len() {
                true => (framed as u64, false, false),
                false => (datum.len() as u64, true, false),
            };
        }
        let dict_form = header.form.dict_id().is_some();
        (datum.len() as u64, header.form.is_raw(), dict_form)
    }

    #[test]
    fn every_method_counts_what_it_stores_per_bucket_and_in_all() {
        let rows = rows();
        let dict = dictionary();
        let dicts = [Some(dict.clone()), Some(dict.clone()), Some(dict.clone())];
        let comparison = compare(&rows, &dicts, TWO_ROUNDS).unwrap();
        let methods: Vec<Method> = comparison.results.iter().map(|r| r.method).collect();
        assert_eq!(methods, METHODS);
        assert_eq!(comparison.pglz().method, METHODS[0]);
        assert_eq!(comparison.min_rounds, 2);
        assert_eq!(comparison.rounds.compress, 2);
        assert_eq!(comparison.rounds.decompress, 2);

        for result in &comparison.results {
            let method = result.method;
            let mut expected = vec![Stats::default(); SizeBucket::ALL.len()];
            for row in &rows {
                let (bytes, raw, dict) = stored(method, &dict, row);
                let bucket = &mut expected[SizeBucket::of(row.len()) as usize];
                bucket.datums += 1;
                bucket.raw_bytes += row.len() as u64;
                bucket.stored_bytes += bytes;
                bucket.raw_datums += u64::from(raw);
                bucket.dict_datums += u64::from(dict);
            }
            let mut all = Stats::default();
            for (got, want) in result.buckets.iter().zip(&expected) {
                let counts = |s: &Stats| {
                    let counted = [s.datums, s.raw_bytes, s.stored_bytes];
                    (counted, s.raw_datums, s.dict_datums)
                };
                assert_eq!(counts(got), counts(want), "{}", method.label());
                // Timed where there are rows, not where there are none.
                assert_eq!(got.compress_seconds > 0.0, got.datums > 0);
                assert_eq!(got.decompress_seconds > 0.0, got.datums > 0);
                all.compress_seconds += got.compress_seconds;
                all.decompress_seconds += got.decompress_seconds;
            }
            let sum = |field: fn(&Stats) -> u64| result.buckets.iter().map(field).sum::<u64>();
            assert_eq!(result.all.datums, rows.len() as u64);
            assert_eq!(result.all.raw_bytes, sum(|s| s.raw_bytes));
            assert_eq!(result.all.stored_bytes, sum(|s| s.stored_bytes));
            assert_eq!(result.all.raw_datums, sum(|s| s.raw_datums));
            assert_eq!(result.all.dict_datums, sum(|s| s.dict_datums));
            assert_eq!(result.all.compress_seconds, all.compress_seconds);
            assert_eq!(result.all.decompress_seconds, all.decompress_seconds);
            // The rows are what they were made to be: the noise stored raw, the JSON shrunk (in
            // the dictionary form by a dictionary method).
            assert!(result.all.raw_datums >= 3, "{}", method.label());
            assert!(result.all.stored_bytes < result.all.raw_bytes / 2);
            assert_eq!(
                result.all.dict_datums > 0,
                method.dict,
                "{}",
                method.label()
            );
        }
        // Every bucket has rows.
        assert!(comparison.pglz().buckets.iter().all(|b| b.datums > 0));
    }

    #[test]
    fn a_dictionary_method_is_measured_only_with_a_dictionary() {
        let rows = rows();
        let lz4_only = [None, Some(dictionary()), None];
        let comparison = compare(&rows, &lz4_only, TWO_ROUNDS).unwrap();
        let keys: Vec<&str> = comparison.results.iter().map(|r| r.method.key()).collect();
        assert_eq!(keys, ["pglz", "lz4", "lz4_dict", "zstd"]);
        let comparison = compare(&rows, &[None, None, None], TWO_ROUNDS).unwrap();
        let labels: Vec<&str> = comparison
            .results
            .iter()
            .map(|r| r.method.label())
            .collect();
        assert_eq!(labels, ["pglz", "lz4", "zstd"]);
    }

    #[test]
    fn keys_and_labels() {
        let keys = METHODS.map(Method::key);
        let labels = METHODS.map(Method::label);
        assert_eq!(
            keys,
            ["pglz", "pglz_dict", "lz4", "lz4_dict", "zstd", "zstd_dict"]
        );
        assert_eq!(
            labels,
            ["pglz", "pglz+dict", "lz4", "lz4+dict", "zstd", "zstd+dict"]
        );
    }

    #[test]
    fn the_zstd_reference_datum_has_an_extended_header_with_id_0() {
        let mut coder = coder(METHODS[4], &[None, None, None]).unwrap().unwrap();
        let row = "abcdefgh".repeat(100).into_bytes();
        let mut datum = Vec::new();
        assert!(coder.encode(&row, &mut datum).unwrap() == Kind::Plain);
        let word = |at: usize| u32::from_le_bytes(datum[at..at + 4].try_into().unwrap());
        // A 4-byte varlena header (its total length, compressed inline), the raw length under
        // method 3 (extended), codec 2 (zstd), dictionary id 0, then the frame.
        assert_eq!(word(0), (datum.len() as u32) << 2 | 0b10);
        assert_eq!(word(4), 800 | 3 << 30);
        assert_eq!(datum[8..10], [2, 0]);
        let mut back = Vec::new();
        coder.decode(&datum, &mut back).unwrap();
        assert_eq!(back, row);
        // Framed where that is a byte smaller than the raw datum (a 1-byte header), raw where
        // it is the same size: rows of noise and more and more of a byte, until one of each.
        let mut compressor = ZstdCompressor::new().unwrap();
        let mut frame = Vec::new();
        let rows: Vec<(usize, Vec<u8>)> = (0..60)
            .map(|more| {
                let row = [noise(60), vec![b'a'; more]].concat();
                frame.clear();
                compressor.compress_into(&row, &mut frame).unwrap();
                (10 + frame.len(), row)
            })
            .collect();
        let with_framed = |over: usize| {
            rows.iter()
                .find(|(framed, row)| *framed == row.len() + over)
        };
        let one_smaller = &with_framed(0).unwrap().1;
        let same = &with_framed(1).unwrap().1;
        assert!(coder.encode(one_smaller, &mut datum).unwrap() == Kind::Plain);
        assert_eq!(datum.len(), one_smaller.len());
        assert!(coder.encode(same, &mut datum).unwrap() == Kind::Raw);
        assert_eq!(datum.len(), 1 + same.len());
        // A row it does not shrink is the raw datum, which reads back too.
        assert!(coder.encode(b"abc", &mut datum).unwrap() == Kind::Raw);
        assert_eq!(datum, [4 << 1 | 1, b'a', b'b', b'c']);
        coder.decode(&datum, &mut back).unwrap();
        assert_eq!(back, b"abc");
    }

    #[test]
    fn ratios_shares_and_speeds() {
        let stats = Stats {
            datums: 4,
            raw_bytes: 3_000_000,
            stored_bytes: 1_000_000,
            raw_datums: 1,
            dict_datums: 2,
            compress_seconds: 2.0,
            decompress_seconds: 0.5,
        };
        let baseline = Stats {
            stored_bytes: 2_500_000,
            ..stats
        };
        assert_eq!(stats.ratio(), Some(3.0));
        assert_eq!(stats.ratio_vs(&baseline), Some(2.5));
        assert_eq!(stats.raw_share(), Some(0.25));
        assert_eq!(stats.compress_mb_s(), Some(1.5));
        assert_eq!(stats.decompress_mb_s(), Some(6.0));
        // Nothing to divide by, or nothing measured: no number.
        let none = Stats::default();
        assert_eq!(none.ratio(), None);
        assert_eq!(none.ratio_vs(&stats), None);
        assert_eq!(none.raw_share(), None);
        assert_eq!(none.compress_mb_s(), None);
        let untimed = Stats {
            compress_seconds: 0.0,
            ..stats
        };
        assert_eq!(untimed.compress_mb_s(), None);
    }
}
