//! What the measurement examples share: the dictionary-codec issue's interleaved split.

/// Training rows are taken in file order until they hold this many bytes, which keeps
/// training to a second or two per file.
pub const MAX_TRAINING_BYTES: usize = 4 << 20;

/// Splits `rows` as the dictionary-codec issue asks: the even rows (the 1st, 3rd, ..., at most
/// `max_rows`) are compressed one at a time, and the odd rows, up to [`MAX_TRAINING_BYTES`],
/// are the samples a dictionary is trained on. Returns `(evaluated, samples)`.
pub fn interleaved_split(rows: &[Vec<u8>], max_rows: usize) -> (Vec<&[u8]>, Vec<&[u8]>) {
    let evaluated = rows
        .iter()
        .step_by(2)
        .take(max_rows)
        .map(|r| &r[..])
        .collect();
    let mut training_bytes = 0;
    let samples = rows
        .iter()
        .skip(1)
        .step_by(2)
        .take_while(|r| {
            training_bytes += r.len();
            training_bytes <= MAX_TRAINING_BYTES
        })
        .map(|r| &r[..])
        .collect();
    (evaluated, samples)
}
