//! Measuring a dictionary: the stored size of rows compressed one by one, as pgdict stores them.
//!
//! Each row is written by [`DatumEncoder`], which keeps the smallest whole datum of raw, plain
//! (PostgreSQL's own form) and dictionary form; the sizes here are of those whole datums,
//! headers included, as DESIGN.md ("Measuring") asks of user-facing reports.

use pgdict::datum::{Codec, DatumEncoder, DatumError, PreparedDictionary};

/// The id a dictionary is prepared under while it is measured. Any id from 1 to 127 gives the
/// same (1-byte) varint in the extended header, so sizes do not depend on it.
pub const EVAL_DICT_ID: u32 = 1;

/// The total stored bytes of `rows`, each encoded alone with `codec` and, if given, `dict`.
pub fn stored_bytes<S: AsRef<[u8]>>(
    rows: &[S],
    codec: Codec,
    dict: Option<&[u8]>,
) -> Result<usize, DatumError> {
    let prepared = dict
        .map(|bytes| PreparedDictionary::new(EVAL_DICT_ID, bytes))
        .transpose()?;
    let mut encoder = DatumEncoder::new();
    let mut out = Vec::new();
    let mut total = 0;
    for row in rows {
        out.clear();
        let header = encoder.encode_into(row.as_ref(), codec, prepared.as_ref(), &mut out)?;
        total += header.total_len;
    }
    Ok(total)
}

/// Raw bytes over stored bytes (0 when nothing was stored).
pub fn ratio(raw_bytes: usize, stored_bytes: usize) -> f64 {
    if stored_bytes == 0 {
        0.0
    } else {
        raw_bytes as f64 / stored_bytes as f64
    }
}

/// The geometric mean of positive values (0 for none).
pub fn geomean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(sum, n), v| (sum + v.ln(), n + 1));
    if n == 0 {
        0.0
    } else {
        (sum / n as f64).exp()
    }
}
