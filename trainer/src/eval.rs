//! Measuring a dictionary: the stored size of rows compressed one by one, as pgdict stores them.
//!
//! [`evaluate`] is what the trainer reports after building: the held-out rows stored with
//! plain pglz (PostgreSQL's default), pglz with the dictionary, plain lz4 and lz4 with the
//! dictionary (and, for a zstd dictionary, zstd with it), per [`SizeBucket`], with compression
//! and decompression speeds, every datum decoded back and checked. [`stored_bytes`] is the
//! quick form for one codec.
//!
//! Each row is written by [`DatumEncoder`], which keeps the smallest whole datum of raw, plain
//! (PostgreSQL's own form) and dictionary form; the sizes here are of those whole datums,
//! headers included, as DESIGN.md ("Measuring") asks of user-facing reports.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pgdict::datum::{
    Codec, DatumDecoder, DatumEncoder, DatumError, Dictionaries, PreparedDictionary,
};
use pgdict::dict::{CodecSet, Gain};
use pgdict::zstd;

use crate::progress::{Phase, Progress};

/// The id a dictionary is prepared under while it is measured when no store says which id it
/// will take. Any id from 1 to 127 gives the same (1-byte) varint in the extended header.
pub const EVAL_DICT_ID: u32 = 1;

/// The total stored bytes of `rows`, each encoded alone with `codec` and, if given, `dict`.
pub fn stored_bytes<S: AsRef<[u8]>>(
    rows: &[S],
    codec: Codec,
    dict: Option<&[u8]>,
) -> Result<usize, DatumError> {
    let prepare = |bytes| {
        let codecs = CodecSet::only(codec);
        PreparedDictionary::for_codecs(EVAL_DICT_ID, bytes, codecs, zstd::DEFAULT_LEVEL)
    };
    let prepared = dict.map(prepare).transpose()?;
    stored_bytes_with(rows, codec, prepared.as_ref()).map_err(|(_, error)| error)
}

/// [`stored_bytes`] with a prepared dictionary; an error comes with the index of its row.
fn stored_bytes_with<S: AsRef<[u8]>>(
    rows: &[S],
    codec: Codec,
    dict: Option<&PreparedDictionary>,
) -> Result<usize, (usize, DatumError)> {
    let mut encoder = DatumEncoder::new();
    let mut out = Vec::new();
    let mut total = 0;
    for (i, row) in rows.iter().enumerate() {
        out.clear();
        let header = encoder
            .encode_into(row.as_ref(), codec, dict, &mut out)
            .map_err(|error| (i, error))?;
        total += header.total_len;
    }
    Ok(total)
}

/// Whether `bytes` is at least `min_saving` (a share) less than `than`.
fn saves(bytes: u64, than: u64, min_saving: f64) -> bool {
    bytes as f64 <= than as f64 * (1.0 - min_saving)
}

/// Raw bytes over stored bytes (0 when nothing was stored).
pub fn ratio(raw_bytes: usize, stored_bytes: usize) -> f64 {
    if stored_bytes == 0 {
        0.0
    } else {
        raw_bytes as f64 / stored_bytes as f64
    }
}

/// The size classes the evaluation reports on, by raw datum length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeBucket {
    /// Under 64 bytes: under pglz's 32-byte floor, or barely over it.
    Under64,
    /// 64 to 255 bytes.
    To256,
    /// 256 to 1023 bytes.
    To1K,
    /// 1 KiB to 4095 bytes: about where PostgreSQL starts compressing on its own (a ~2 KB row).
    To4K,
    /// 4 KiB and more.
    Over4K,
}

impl SizeBucket {
    /// The five buckets, smallest first.
    pub const ALL: [SizeBucket; 5] = [
        SizeBucket::Under64,
        SizeBucket::To256,
        SizeBucket::To1K,
        SizeBucket::To4K,
        SizeBucket::Over4K,
    ];

    /// The bucket of a datum of `len` raw bytes.
    pub fn of(len: usize) -> SizeBucket {
        match len {
            0..64 => SizeBucket::Under64,
            64..256 => SizeBucket::To256,
            256..1024 => SizeBucket::To1K,
            1024..4096 => SizeBucket::To4K,
            _ => SizeBucket::Over4K,
        }
    }

    /// A short label: `<64`, `64-256`, `256-1K`, `1K-4K`, `>=4K`.
    pub fn label(self) -> &'static str {
        match self {
            SizeBucket::Under64 => "<64",
            SizeBucket::To256 => "64-256",
            SizeBucket::To1K => "256-1K",
            SizeBucket::To4K => "1K-4K",
            SizeBucket::Over4K => ">=4K",
        }
    }
}

/// How a held-out row is stored in an evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// PostgreSQL's default: pglz with `PGLZ_strategy_default`, or raw where it does not pay.
    Pglz,
    /// pglz with the dictionary (or plain, or raw, whichever datum is smallest).
    PglzDict,
    /// lz4 as PostgreSQL calls it (`default_toast_compression = lz4`), or raw.
    Lz4,
    /// lz4 with the dictionary attached (or plain, or raw, whichever is smallest).
    Lz4Dict,
    /// zstd with the dictionary (or raw, whichever is smaller: the datum format has no plain
    /// zstd form). Measured only for a dictionary trained for zstd.
    ZstdDict,
}

impl Method {
    /// The five, plain before dictionary, pglz before lz4 before zstd.
    pub const ALL: [Method; 5] = [
        Method::Pglz,
        Method::PglzDict,
        Method::Lz4,
        Method::Lz4Dict,
        Method::ZstdDict,
    ];

    /// `pglz`, `pglz_dict`, `lz4`, `lz4_dict`, `zstd_dict` (the `--json` report's keys).
    pub fn name(self) -> &'static str {
        match self {
            Method::Pglz => "pglz",
            Method::PglzDict => "pglz_dict",
            Method::Lz4 => "lz4",
            Method::Lz4Dict => "lz4_dict",
            Method::ZstdDict => "zstd_dict",
        }
    }

    /// The codec it compresses with.
    pub fn codec(self) -> Codec {
        match self {
            Method::Pglz | Method::PglzDict => Codec::Pglz,
            Method::Lz4 | Method::Lz4Dict => Codec::Lz4,
            Method::ZstdDict => Codec::Zstd,
        }
    }

    /// Whether it uses the dictionary.
    pub fn uses_dict(self) -> bool {
        matches!(self, Method::PglzDict | Method::Lz4Dict | Method::ZstdDict)
    }

    /// The plain method of `codec` (pglz or lz4; zstd has none) or its dictionary method.
    pub fn of(codec: Codec, dict: bool) -> Option<Method> {
        Some(match (codec, dict) {
            (Codec::Pglz, false) => Method::Pglz,
            (Codec::Pglz, true) => Method::PglzDict,
            (Codec::Lz4, false) => Method::Lz4,
            (Codec::Lz4, true) => Method::Lz4Dict,
            (Codec::Zstd, false) => return None,
            (Codec::Zstd, true) => Method::ZstdDict,
        })
    }

    /// What a dictionary for `codec` is judged against: plain [`Gain::baseline_for`] `codec`,
    /// as PostgreSQL stores a column of that compression method (plain pglz for zstd).
    pub fn baseline(codec: Codec) -> Method {
        Method::of(Gain::baseline_for(codec), false)
            .expect("a baseline codec (pglz or lz4) has a plain method")
    }

    /// The dictionary methods measured for a dictionary trained for `codec`: pglz's and lz4's
    /// always, zstd's for a zstd dictionary.
    pub fn with_dictionary(codec: Codec) -> &'static [Method] {
        match codec {
            Codec::Pglz | Codec::Lz4 => &[Method::PglzDict, Method::Lz4Dict],
            Codec::Zstd => &[Method::PglzDict, Method::Lz4Dict, Method::ZstdDict],
        }
    }
}

/// The codecs a dictionary trained for `codec` is measured with ([`Method::with_dictionary`]):
/// what it is prepared for when measured.
pub fn measured_codecs(codec: Codec) -> CodecSet {
    let codecs: Vec<Codec> = (Method::with_dictionary(codec).iter())
        .map(|method| method.codec())
        .collect();
    CodecSet::of(&codecs)
}

/// What one method did to a set of rows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    /// Total bytes of the whole stored datums, headers included.
    pub stored_bytes: u64,
    /// How many datums ended up compressed with the dictionary (0 for plain methods).
    pub dict_datums: u64,
    /// How many ended up raw (compression did not pay).
    pub raw_datums: u64,
    /// Seconds to encode the rows (all forms tried: with a dictionary, the dictionary form,
    /// then plain, keeping the smallest, as pgdict writes); the fastest of several passes.
    pub compress_seconds: f64,
    /// Seconds to decode the stored datums; the fastest of several passes.
    pub decompress_seconds: f64,
}

impl Measured {
    /// raw / stored for `raw_bytes` raw bytes.
    pub fn ratio(&self, raw_bytes: u64) -> f64 {
        ratio(raw_bytes as usize, self.stored_bytes as usize)
    }

    /// Raw megabytes (10^6 bytes) encoded per second.
    pub fn compress_mb_s(&self, raw_bytes: u64) -> f64 {
        mb_per_s(raw_bytes, self.compress_seconds)
    }

    /// Raw megabytes (10^6 bytes) decoded per second.
    pub fn decompress_mb_s(&self, raw_bytes: u64) -> f64 {
        mb_per_s(raw_bytes, self.decompress_seconds)
    }
}

fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / 1e6 / seconds
    } else {
        0.0
    }
}

/// The four methods on one set of rows (a size bucket, or all of them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// The bucket; `None` for all rows.
    pub bucket: Option<SizeBucket>,
    /// How many rows.
    pub datums: u64,
    /// Their raw bytes.
    pub raw_bytes: u64,
    /// Plain pglz.
    pub pglz: Measured,
    /// pglz with the dictionary; `None` when evaluated without one.
    pub pglz_dict: Option<Measured>,
    /// Plain lz4.
    pub lz4: Measured,
    /// lz4 with the dictionary; `None` when evaluated without one.
    pub lz4_dict: Option<Measured>,
    /// zstd with the dictionary; `None` unless evaluated with a zstd dictionary.
    pub zstd_dict: Option<Measured>,
}

impl Group {
    /// The measurement of `method`, if it was made.
    pub fn get(&self, method: Method) -> Option<&Measured> {
        match method {
            Method::Pglz => Some(&self.pglz),
            Method::PglzDict => self.pglz_dict.as_ref(),
            Method::Lz4 => Some(&self.lz4),
            Method::Lz4Dict => self.lz4_dict.as_ref(),
            Method::ZstdDict => self.zstd_dict.as_ref(),
        }
    }

    fn get_mut(&mut self, method: Method) -> &mut Measured {
        match method {
            Method::Pglz => &mut self.pglz,
            Method::PglzDict => self.pglz_dict.get_or_insert_with(Measured::default),
            Method::Lz4 => &mut self.lz4,
            Method::Lz4Dict => self.lz4_dict.get_or_insert_with(Measured::default),
            Method::ZstdDict => self.zstd_dict.get_or_insert_with(Measured::default),
        }
    }

    /// raw / stored for `method` (`None` if it was not measured).
    pub fn ratio(&self, method: Method) -> Option<f64> {
        self.get(method).map(|m| m.ratio(self.raw_bytes))
    }

    /// How many times smaller `method` stores these rows than `baseline` (stored bytes of the
    /// baseline over stored bytes of the method): the ratio "vs plain pglz" when the baseline
    /// is [`Method::Pglz`].
    pub fn gain(&self, method: Method, baseline: Method) -> Option<f64> {
        let m = self.get(method)?;
        let b = self.get(baseline)?;
        Some(ratio(b.stored_bytes as usize, m.stored_bytes as usize))
    }

    fn add(&mut self, other: &Group) {
        self.datums += other.datums;
        self.raw_bytes += other.raw_bytes;
        for method in Method::ALL {
            if let Some(m) = other.get(method) {
                let sum = self.get_mut(method);
                sum.stored_bytes += m.stored_bytes;
                sum.dict_datums += m.dict_datums;
                sum.raw_datums += m.raw_datums;
                sum.compress_seconds += m.compress_seconds;
                sum.decompress_seconds += m.decompress_seconds;
            }
        }
    }
}

/// What a dictionary does to held-out rows: [`evaluate`]'s result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// All rows.
    pub all: Group,
    /// The rows of each [`SizeBucket`], smallest first; all five, empty ones included.
    pub buckets: Vec<Group>,
    /// Stored bytes of all rows with the dictionary's codec given an empty dictionary under
    /// the same id: what the dictionary form saves without the content (pglz's dictionary
    /// strategy tries small rows and takes any saving, which PostgreSQL's default does not;
    /// zstd against plain pglz is zstd's own gain). `None` when evaluated without one.
    pub empty_dict_bytes: Option<u64>,
}

impl Evaluation {
    /// Whether the dictionary, used with `codec`, saves at least `min_saving` (a share: 0.01
    /// is 1 %) of the bytes its [`Method::baseline`] stores (plain `codec`; plain pglz for
    /// zstd) and of what `codec` stores with an empty dictionary (where measured). False when
    /// nothing was evaluated, or no dictionary was.
    ///
    /// The second: else the saving is the dictionary form's, and any content, random bytes
    /// included, would show it (4 KB of random bytes "helped" pglz on 6 of the 8 corpus sets,
    /// 1.05-1.14x).
    pub fn helps(&self, codec: Codec, min_saving: f64) -> bool {
        self.saves_over_plain(codec, min_saving) && self.saves_over_empty(codec, min_saving)
    }

    /// The first half of [`Evaluation::helps`]: the saving over the baseline.
    pub fn saves_over_plain(&self, codec: Codec, min_saving: f64) -> bool {
        match (
            self.dict_measured(codec),
            self.all.get(Method::baseline(codec)),
        ) {
            (Some(dict), Some(plain)) => saves(dict.stored_bytes, plain.stored_bytes, min_saving),
            _ => false,
        }
    }

    /// The second half of [`Evaluation::helps`]: the saving over an empty dictionary
    /// ([`Evaluation::empty_dict_bytes`]; true where that was not measured).
    pub fn saves_over_empty(&self, codec: Codec, min_saving: f64) -> bool {
        match (self.dict_measured(codec), self.empty_dict_bytes) {
            (Some(dict), Some(empty)) => saves(dict.stored_bytes, empty, min_saving),
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// `codec` with the dictionary on all rows, if there were rows and a dictionary.
    fn dict_measured(&self, codec: Codec) -> Option<&Measured> {
        let measured = self.all.get(Method::of(codec, true)?)?;
        (self.all.datums > 0).then_some(measured)
    }

    /// The measured gain for the dictionary's metadata: `codec` with the dictionary against
    /// its [`Method::baseline`] (what PostgreSQL stores for a column compressed with `codec`;
    /// plain pglz for zstd). None when no row was evaluated (a dictionary stored with
    /// `--force` and no held-out rows): a gain of nothing over nothing is no gain to record.
    pub fn gain_record(&self, codec: Codec) -> Option<Gain> {
        if self.all.datums == 0 {
            return None;
        }
        let plain = self.all.get(Method::baseline(codec))?;
        let dict = self.all.get(Method::of(codec, true)?)?;
        Some(Gain {
            codec,
            rows: self.all.datums,
            raw_bytes: self.all.raw_bytes,
            plain_bytes: plain.stored_bytes,
            dict_bytes: dict.stored_bytes,
        })
    }
}

/// Why an evaluation failed: only on a bug or a row over PostgreSQL's 1 GiB limit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// Encoding or decoding a datum failed.
    #[error("evaluating {method} on held-out row {row}: {error}")]
    Datum {
        /// The method.
        method: &'static str,
        /// The held-out row's number, counting from 1.
        row: usize,
        /// What failed.
        error: DatumError,
    },
    /// A datum decoded to other bytes than it was made from (a codec bug).
    #[error("evaluating {method}: held-out row {row} did not decode to itself")]
    RoundTrip {
        /// The method.
        method: &'static str,
        /// The held-out row's number, counting from 1.
        row: usize,
    },
}

/// A timed pass is run at least [`MIN_RUNS`] times and until the runs have taken
/// [`MIN_TIMED`] in all (at most [`MAX_RUNS`] times), and the fastest run counts: on a shared,
/// noisy machine the fastest run is the one least disturbed by others.
const MIN_TIMED: Duration = Duration::from_millis(20);
/// See [`MIN_TIMED`].
const MIN_RUNS: u32 = 3;
/// See [`MIN_TIMED`].
const MAX_RUNS: u32 = 64;

/// Compresses every held-out row alone with each method (plain pglz and lz4, and with `dict`
/// if given, [`Method::with_dictionary`] of `codec`, the codec it was trained for: pglz and
/// lz4 with it, and zstd for a zstd dictionary), as whole pgdict datums (each the smallest of
/// raw, plain and dictionary form), decodes each datum back and checks it, and reports stored
/// sizes and speeds per [`SizeBucket`] and in all. `progress` counts rows
/// ([`Phase::Evaluating`]).
///
/// Datums name the dictionary by `dict`'s id, so their headers are as long as they will be
/// in the store when `dict` is the stored dictionary (ids up to 127 take 1 byte).
pub fn evaluate<S: AsRef<[u8]>>(
    holdout: &[S],
    dict: Option<&Arc<PreparedDictionary>>,
    codec: Codec,
    progress: &dyn Progress,
) -> Result<Evaluation, EvalError> {
    progress.begin(Phase::Evaluating, Some(holdout.len() as u64));
    let mut by_bucket: Vec<Vec<usize>> = vec![Vec::new(); SizeBucket::ALL.len()];
    for (index, row) in holdout.iter().enumerate() {
        by_bucket[SizeBucket::of(row.as_ref().len()) as usize].push(index);
    }
    let lookup: Dictionaries = dict.cloned().into_iter().collect();
    let dict_methods = Method::with_dictionary(codec);
    let methods: Vec<Method> = Method::ALL
        .into_iter()
        .filter(|m| !m.uses_dict() || (dict.is_some() && dict_methods.contains(m)))
        .collect();
    let mut encoder = DatumEncoder::new();
    let mut decoder = DatumDecoder::new();
    let mut evaluation = Evaluation::default();
    let mut done = 0;
    for (bucket, rows) in SizeBucket::ALL.into_iter().zip(&by_bucket) {
        let mut group = Group {
            bucket: Some(bucket),
            datums: rows.len() as u64,
            raw_bytes: rows.iter().map(|&i| holdout[i].as_ref().len() as u64).sum(),
            ..Group::default()
        };
        for (k, &method) in methods.iter().enumerate() {
            let measured = measure(
                holdout,
                rows,
                method,
                dict.map(|d| &**d),
                &lookup,
                &mut encoder,
                &mut decoder,
            )?;
            *group.get_mut(method) = measured;
            progress.update(done + (rows.len() * (k + 1) / methods.len()) as u64);
        }
        evaluation.all.add(&group);
        evaluation.buckets.push(group);
        done += rows.len() as u64;
    }
    if let Some(dict) = dict {
        // Present even when there were no rows.
        for &method in dict_methods {
            evaluation.all.get_mut(method);
        }
        evaluation.empty_dict_bytes = Some(empty_dict_bytes(holdout, dict.id(), codec)?);
    }
    progress.end(&crate::progress::counted(
        holdout.len() as u64,
        "held-out row",
    ));
    Ok(evaluation)
}

/// The stored bytes of `holdout` with `codec` and an empty dictionary of id `id` (see
/// [`Evaluation::empty_dict_bytes`]).
fn empty_dict_bytes<S: AsRef<[u8]>>(
    holdout: &[S],
    id: u32,
    codec: Codec,
) -> Result<u64, EvalError> {
    let datum_err = |(row, error): (usize, DatumError)| EvalError::Datum {
        method: "an empty dictionary",
        row: row + 1,
        error,
    };
    let empty = PreparedDictionary::new(id, &[]).map_err(|error| datum_err((0, error)))?;
    let total = stored_bytes_with(holdout, codec, Some(&empty)).map_err(datum_err)?;
    Ok(total as u64)
}

/// One method on the rows `indices` of `holdout`.
fn measure<S: AsRef<[u8]>>(
    holdout: &[S],
    indices: &[usize],
    method: Method,
    dict: Option<&PreparedDictionary>,
    lookup: &Dictionaries,
    encoder: &mut DatumEncoder,
    decoder: &mut DatumDecoder,
) -> Result<Measured, EvalError> {
    let dict = if method.uses_dict() { dict } else { None };
    let codec = method.codec();
    let datum_err = |row: usize| {
        move |error| EvalError::Datum {
            method: method.name(),
            row: row + 1,
            error,
        }
    };
    let mut measured = Measured::default();
    // The datums, one after another, and where each ends.
    let mut stored = Vec::new();
    let mut ends = Vec::with_capacity(indices.len());
    let mut pass = |stored: &mut Vec<u8>, ends: &mut Vec<usize>, measured: &mut Measured| {
        stored.clear();
        ends.clear();
        measured.stored_bytes = 0;
        measured.dict_datums = 0;
        measured.raw_datums = 0;
        for &i in indices {
            let header = encoder
                .encode_into(holdout[i].as_ref(), codec, dict, stored)
                .map_err(datum_err(i))?;
            ends.push(stored.len());
            measured.stored_bytes += header.total_len as u64;
            if header.form.dict_id().is_some() {
                measured.dict_datums += 1;
            } else if header.form.is_raw() {
                measured.raw_datums += 1;
            }
        }
        Ok::<(), EvalError>(())
    };
    measured.compress_seconds = timed(|| pass(&mut stored, &mut ends, &mut measured))?;
    let mut out = Vec::new();
    let decode_all = |out: &mut Vec<u8>, decoder: &mut DatumDecoder, check: bool| {
        let mut start = 0;
        for (&i, &end) in indices.iter().zip(&ends) {
            decoder
                .decode_into(&stored[start..end], lookup, out)
                .map_err(datum_err(i))?;
            if check && out.as_slice() != holdout[i].as_ref() {
                return Err(EvalError::RoundTrip {
                    method: method.name(),
                    row: i + 1,
                });
            }
            start = end;
        }
        Ok(())
    };
    decode_all(&mut out, decoder, true)?;
    measured.decompress_seconds = timed(|| decode_all(&mut out, decoder, false))?;
    Ok(measured)
}

/// Seconds of the fastest run of `f` (see [`MIN_TIMED`]).
fn timed<E>(mut f: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let start = Instant::now();
    let mut fastest = f64::INFINITY;
    let mut runs = 0;
    loop {
        let run = Instant::now();
        f()?;
        fastest = fastest.min(run.elapsed().as_secs_f64());
        runs += 1;
        if runs >= MAX_RUNS || (runs >= MIN_RUNS && start.elapsed() >= MIN_TIMED) {
            return Ok(fastest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::recording::{Recorder, Told};

    /// Plain pglz stored 1000 bytes of the held-out rows, pglz with the dictionary `dict`.
    fn evaluated(datums: u64, dict: u64) -> Evaluation {
        let measured = |stored_bytes| Measured {
            stored_bytes,
            ..Measured::default()
        };
        Evaluation {
            all: Group {
                datums,
                raw_bytes: 1000,
                pglz: measured(1000),
                pglz_dict: Some(measured(dict)),
                ..Group::default()
            },
            buckets: Vec::new(),
            empty_dict_bytes: None,
        }
    }

    #[test]
    fn each_length_falls_in_one_bucket_and_its_label_names_its_bounds() {
        use SizeBucket::*;
        let cases = [
            (0, Under64),
            (63, Under64),
            (64, To256),
            (255, To256),
            (256, To1K),
            (1023, To1K),
            (1024, To4K),
            (4095, To4K),
            (4096, Over4K),
            (1 << 30, Over4K),
        ];
        for (len, bucket) in cases {
            assert_eq!(SizeBucket::of(len), bucket, "{len} bytes");
        }
        let labels = SizeBucket::ALL.map(SizeBucket::label);
        assert_eq!(labels, ["<64", "64-256", "256-1K", "1K-4K", ">=4K"]);
    }

    #[test]
    fn ratios_and_speeds_are_of_the_raw_bytes() {
        let measured = Measured {
            stored_bytes: 250,
            compress_seconds: 0.5,
            decompress_seconds: 0.25,
            ..Measured::default()
        };
        assert_eq!(measured.ratio(1000), 4.0);
        assert_eq!(measured.compress_mb_s(2_000_000), 4.0);
        assert_eq!(measured.decompress_mb_s(2_000_000), 8.0);
        // Nothing stored, nothing timed: 0, not a division by zero.
        let nothing = Measured::default();
        assert_eq!(nothing.ratio(1000), 0.0);
        assert_eq!(nothing.compress_mb_s(1000), 0.0);
        assert_eq!(nothing.decompress_mb_s(1000), 0.0);
        let group = Group {
            raw_bytes: 1000,
            pglz: measured,
            ..Group::default()
        };
        assert_eq!(group.ratio(Method::Pglz), Some(4.0));
        assert_eq!(group.ratio(Method::PglzDict), None);
    }

    /// A JSON-like line of 40 to 42 bytes (for `i` under 1,000).
    fn line(i: usize) -> String {
        format!("{{\"id\": {i}, \"event\": \"login\", \"ok\": true}} ")
    }

    /// 200 rows, 40 in each size bucket; those under 64 bytes are 10 bytes long, and stay raw
    /// with every method.
    fn rows_of_every_bucket() -> Vec<Vec<u8>> {
        (0..200)
            .map(|i| match i % 5 {
                0 => format!("row {i:06}").into_bytes(),
                k => line(i).repeat([0, 2, 8, 40, 120][k]).into_bytes(),
            })
            .collect()
    }

    /// Every measure of all rows is the sum of the size buckets' (seconds too: added in the
    /// same order).
    #[test]
    fn all_rows_are_the_sum_of_the_buckets() {
        let rows = rows_of_every_bucket();
        let content: String = (1000..1100).map(line).collect();
        let dict = Arc::new(PreparedDictionary::new(1, content.as_bytes()).unwrap());
        let progress = crate::progress::NoProgress;
        let evaluation = evaluate(&rows, Some(&dict), Codec::Lz4, &progress).unwrap();
        let all = &evaluation.all;
        assert_eq!(all.datums, 200);
        let raw_bytes: usize = rows.iter().map(Vec::len).sum();
        assert_eq!(all.raw_bytes, raw_bytes as u64);
        let buckets = &evaluation.buckets;
        let labels: Vec<_> = buckets.iter().map(|b| b.bucket).collect();
        assert_eq!(labels, SizeBucket::ALL.map(Some));
        assert!(buckets.iter().all(|b| b.datums == 40), "{buckets:?}");
        assert_eq!(buckets.iter().map(|b| b.datums).sum::<u64>(), all.datums);
        assert_eq!(
            buckets.iter().map(|b| b.raw_bytes).sum::<u64>(),
            all.raw_bytes
        );
        type Field = fn(&Measured) -> f64;
        for method in [Method::Pglz, Method::PglzDict, Method::Lz4, Method::Lz4Dict] {
            let of_buckets = |field: Field| {
                let sum = buckets
                    .iter()
                    .fold(0.0, |sum, b| sum + field(b.get(method).unwrap()));
                (sum, field(all.get(method).unwrap()))
            };
            let fields: [(&str, Field); 5] = [
                ("stored_bytes", |m| m.stored_bytes as f64),
                ("dict_datums", |m| m.dict_datums as f64),
                ("raw_datums", |m| m.raw_datums as f64),
                ("compress_seconds", |m| m.compress_seconds),
                ("decompress_seconds", |m| m.decompress_seconds),
            ];
            for (name, field) in fields {
                let (sum, total) = of_buckets(field);
                assert_eq!(sum, total, "{} {name}", method.name());
                // A sum that could be told from a product or a difference.
                let wanted = name != "dict_datums" || method.uses_dict();
                assert_eq!(total > 0.0, wanted, "{} {name}: {total}", method.name());
                if name.ends_with("datums") {
                    assert!(total <= 200.0, "{} {name}: {total}", method.name());
                }
            }
        }
    }

    /// The rows are counted as each bucket's methods are measured: never back, never past the
    /// total, and every row by the end.
    #[test]
    fn progress_counts_up_to_every_row() {
        let rows = rows_of_every_bucket();
        let dict = Arc::new(PreparedDictionary::new(1, line(7).as_bytes()).unwrap());
        let recorder = Recorder::default();
        evaluate(&rows, Some(&dict), Codec::Pglz, &recorder).unwrap();
        let told = recorder.0.take();
        let begun: Vec<&Told> = told
            .iter()
            .filter(|t| matches!(t, Told::Begin(..)))
            .collect();
        assert_eq!(begun, [&Told::Begin(Phase::Evaluating, Some(200))]);
        let updates: Vec<u64> = (told.iter())
            .filter_map(|t| match t {
                Told::Update(done) => Some(*done),
                _ => None,
            })
            .collect();
        // Four methods in each of five buckets.
        assert_eq!(updates.len(), 20, "{updates:?}");
        assert!(updates.windows(2).all(|w| w[0] <= w[1]), "{updates:?}");
        assert!(updates.iter().all(|&done| done <= 200), "{updates:?}");
        // Each bucket ends at its share of the rows.
        let bucket_ends: Vec<u64> = updates.chunks(4).map(|c| c[3]).collect();
        assert_eq!(bucket_ends, [40, 80, 120, 160, 200]);
    }

    /// A pass is run at least three times, and no more once the runs have taken 20 ms; an
    /// error ends it at once.
    #[test]
    fn timed_runs_a_pass_three_times_to_twenty_ms() {
        let runs = &std::cell::Cell::new(0);
        // A run that takes `ms` milliseconds and ends with `result`.
        let run = |ms, result: Result<(), ()>| {
            move || {
                runs.set(runs.get() + 1);
                std::thread::sleep(Duration::from_millis(ms));
                result
            }
        };
        let seconds = timed(run(10, Ok(()))).unwrap();
        assert_eq!(runs.replace(0), MIN_RUNS);
        assert!(seconds >= 0.01, "{seconds}");
        timed(run(0, Ok(()))).unwrap();
        assert!((MIN_RUNS..=MAX_RUNS).contains(&runs.replace(0)));
        assert_eq!(timed(run(0, Err(()))), Err(()));
        assert_eq!(runs.get(), 1);
    }

    /// A row longer than a datum holds (PostgreSQL's 1 GiB) is named by its number, counting
    /// from 1. (Zeroed by the allocator: the pages are never touched, as its length alone is
    /// refused.)
    #[test]
    fn a_row_over_the_datum_limit_is_named_by_its_number() {
        let rows = [b"a row".to_vec(), vec![0; pgdict::datum::MAX_INPUT_LEN + 1]];
        let dict = Arc::new(PreparedDictionary::new(1, b"a dictionary").unwrap());
        let progress = crate::progress::NoProgress;
        let error = evaluate(&rows, Some(&dict), Codec::Pglz, &progress).unwrap_err();
        assert!(
            matches!(
                error,
                EvalError::Datum {
                    method: "pglz",
                    row: 2,
                    ..
                }
            ),
            "{error}"
        );
        let error = empty_dict_bytes(&rows, 1, Codec::Lz4).unwrap_err();
        assert!(matches!(error, EvalError::Datum { row: 2, .. }), "{error}");
        assert!(error.to_string().contains("an empty dictionary"), "{error}");
    }

    #[test]
    fn a_saving_of_exactly_the_minimum_helps() {
        assert!(evaluated(10, 990).helps(Codec::Pglz, 0.01));
        assert!(!evaluated(10, 991).helps(Codec::Pglz, 0.01));
        assert!(!evaluated(0, 0).helps(Codec::Pglz, 0.01));
    }

    #[test]
    fn a_dictionary_must_also_save_over_an_empty_one() {
        let with_empty = |empty| Evaluation {
            empty_dict_bytes: Some(empty),
            ..evaluated(10, 900)
        };
        assert!(with_empty(910).helps(Codec::Pglz, 0.01));
        assert!(!with_empty(905).helps(Codec::Pglz, 0.01));
    }

    /// Random bytes as a dictionary save what an empty dictionary saves, and no more: pglz's
    /// dictionary strategy takes small rows PostgreSQL's default leaves raw.
    #[test]
    fn random_content_does_not_help() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut random_byte = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        };
        // Rows PostgreSQL's default leaves raw (they save about 20 %, under its 25 %): 300
        // random letters, and a phrase of their own five times.
        let rows: Vec<Vec<u8>> = (0..300)
            .map(|i| {
                let letters: String = (0..300)
                    .map(|_| char::from(b'a' + random_byte() % 26))
                    .collect();
                let phrase = format!("<row {i:05} says hi> ");
                format!("{letters}{}", phrase.repeat(5)).into_bytes()
            })
            .collect();
        let random: Vec<u8> = (0..4095).map(|_| random_byte()).collect();
        let progress = crate::progress::NoProgress;
        let dict = Arc::new(PreparedDictionary::new(1, &random).unwrap());
        let evaluation = evaluate(&rows, Some(&dict), Codec::Pglz, &progress).unwrap();
        let pglz = evaluation.all.pglz.stored_bytes;
        let with_dict = evaluation.all.pglz_dict.unwrap().stored_bytes;
        assert!(
            with_dict < pglz,
            "{with_dict} vs {pglz}: the strategy alone saves"
        );
        assert!(!evaluation.helps(Codec::Pglz, 0.01));
        // Content drawn from such rows does help.
        let content: Vec<u8> = rows[..40].concat();
        let dict = Arc::new(PreparedDictionary::new(1, &content[content.len() - 4095..]).unwrap());
        let evaluation = evaluate(&rows[40..], Some(&dict), Codec::Pglz, &progress).unwrap();
        assert!(evaluation.helps(Codec::Pglz, 0.01));
    }

    #[test]
    fn no_gain_is_recorded_for_no_rows() {
        assert_eq!(
            evaluated(10, 500)
                .gain_record(Codec::Pglz)
                .unwrap()
                .dict_bytes,
            500
        );
        assert_eq!(evaluated(0, 0).gain_record(Codec::Pglz), None);
    }
}
