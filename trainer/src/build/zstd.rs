//! The baseline builder: zstd's trainer (ZDICT), its content used by pglz and lz4.
//!
//! ZDICT's dictionaries start with a header and entropy tables, then the content, with the
//! segments it scored highest at the end. pglz and lz4 read a dictionary as plain history, so
//! the baseline hands them the end of a trained dictionary: what their window reaches.
//!
//! For pglz (4 KB) two ways were measured on the corpus (`examples/builders.rs`): training a
//! 4 KB dictionary directly (which spends some of those bytes on zstd's header and tables), and
//! training a 64 KB dictionary and keeping its last 4 KB (all content, the best-scored segments
//! of a larger selection). [`PGLZ_TRAIN_SIZE`] is the better of the two.

use pgdict::datum::Codec;

use super::{max_useful_size, BuildError};

/// The size of the zstd dictionary whose end the pglz baseline keeps.
pub const PGLZ_TRAIN_SIZE: usize = 64 * 1024;

/// Builds the baseline dictionary of at most `size` bytes for `codec`.
///
/// zstd gets the trained dictionary whole; pglz the last `size` (at most 4095) bytes of a
/// dictionary trained at `max(size, PGLZ_TRAIN_SIZE)`; lz4 the last `size` (at most 64 KiB)
/// bytes of one trained at `size`.
pub fn build<S: AsRef<[u8]>>(
    samples: &[S],
    codec: Codec,
    size: usize,
) -> Result<Vec<u8>, BuildError> {
    let keep = size.min(max_useful_size(codec));
    let train_size = match codec {
        Codec::Pglz => size.max(PGLZ_TRAIN_SIZE),
        Codec::Lz4 | Codec::Zstd => size,
    };
    let dict = train(samples, train_size)?;
    Ok(dict[dict.len().saturating_sub(keep)..].to_vec())
}

/// The smallest dictionary zstd's trainer makes (its `ZDICT_DICTSIZE_MIN`): a smaller size
/// fails with zstd's "Destination buffer is too small". The pglz baseline trains at
/// [`PGLZ_TRAIN_SIZE`] whatever the size, so only zstd and lz4 dictionaries meet this floor.
pub const MIN_TRAIN_SIZE: usize = 256;

/// The fewest rows zstd's trainer takes: it holds a quarter of them out to test its
/// parameters on and trains on at least 5 (fastCover's split; fewer fail with zstd's "Src size
/// is incorrect").
pub const MIN_ROWS: usize = 7;

/// `zstd::dict::from_samples(samples, size)`: a zstd-format dictionary of at most `size` bytes.
/// A size under [`MIN_TRAIN_SIZE`] and fewer than [`MIN_ROWS`] samples are refused first, with
/// the reason.
pub fn train<S: AsRef<[u8]>>(samples: &[S], size: usize) -> Result<Vec<u8>, BuildError> {
    if size < MIN_TRAIN_SIZE {
        return Err(BuildError::TooSmallForZstd { size });
    }
    if samples.len() < MIN_ROWS {
        return Err(BuildError::TooFewRowsForZstd {
            rows: samples.len(),
        });
    }
    ::zstd::dict::from_samples(samples, size).map_err(|e| BuildError::Zstd {
        rows: samples.len(),
        bytes: samples.iter().map(|s| s.as_ref().len()).sum(),
        message: e.to_string(),
    })
}
