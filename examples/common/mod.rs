//! What the measurement examples share: the dictionary-codec issue's interleaved split, the
//! `[ROUNDS] ROWFILE...` arguments, reading a row file with enough rows for that split, and raw
//! content turned into a zstd-format dictionary.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Training rows are taken in file order until they hold this many bytes, which keeps
/// training to a second or two per file.
pub const MAX_TRAINING_BYTES: usize = 4 << 20;

/// Whether PostgreSQL's `toast_compress_datum` keeps a value compressed: its 8-byte header
/// (varlena length, raw length and method) and the payload more than 2 bytes smaller than the
/// raw bytes (`VARSIZE(tmp) < valsize - 2`); else it stores the value raw.
#[allow(dead_code)] // not used by every binary that includes this file
pub fn toast_keeps(raw_len: usize, payload_len: usize) -> bool {
    8 + payload_len + 2 < raw_len
}

/// The length of a raw datum of `raw_len` bytes: a 1-byte header while the whole datum fits in
/// 127 bytes (`VARATT_SHORT_MAX`), else 4 bytes.
#[allow(dead_code)] // not used by every binary that includes this file
pub fn raw_datum_len(raw_len: usize) -> usize {
    raw_len + if raw_len < 127 { 1 } else { 4 }
}

/// Whether a stored datum is in a compressed form (its first byte's low bits are `10`).
#[allow(dead_code)] // not used by every binary that includes this file
pub fn is_compressed(datum: &[u8]) -> bool {
    datum.first().is_some_and(|&b| b & 0b11 == 0b10)
}

/// The fewest training rows zstd's trainer takes: it holds a quarter of its samples out and
/// fails with fewer than 5 left ("Src size is incorrect"), as the trainer's `zstd::MIN_ROWS`
/// says.
#[allow(dead_code)] // not used by every binary that includes this file
pub const MIN_TRAINING_ROWS: usize = 7;

/// The rows of row file `path` (`pgdict::rows`), at least enough that [`interleaved_split`]
/// gives zstd's trainer [`MIN_TRAINING_ROWS`]; else what is wrong, naming the file.
#[allow(dead_code)] // not used by every binary that includes this file
pub fn read_rows(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let rows = pgdict::rows::read_row_file(path).map_err(|e| e.to_string())?;
    let least = 2 * MIN_TRAINING_ROWS;
    if rows.len() < least {
        let count = match rows.len() {
            1 => "1 row".to_string(),
            n => format!("{n} rows"),
        };
        return Err(format!(
            "{}: {count}; zstd's trainer needs {MIN_TRAINING_ROWS} training rows (the odd \
             ones) or more, so at least {least} rows",
            path.display()
        ));
    }
    Ok(rows)
}

/// The program's arguments, as the system gave them (`env::args` panics on a file name that is
/// not UTF-8).
#[allow(dead_code)] // not used by every binary that includes this file
pub fn args() -> Vec<OsString> {
    std::env::args_os().skip(1).collect()
}

/// Prints `PROGRAM: message` (the example's name) and exits with status 1: bad input said in
/// a line, not a panic.
#[allow(dead_code)] // not used by every binary that includes this file
pub fn fail(message: impl std::fmt::Display) -> ! {
    let program = std::env::args_os().next().map(PathBuf::from);
    let name = program
        .as_deref()
        .and_then(Path::file_name)
        .unwrap_or_default();
    eprintln!("{}: {message}", name.to_string_lossy());
    std::process::exit(1);
}

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

/// The arguments `[ROUNDS] ROWFILE...`: the number of rounds (`default_rounds` unless the
/// first argument is a positive number) and the row files; with no row file, prints `usage`
/// and exits with status 2.
#[allow(dead_code)] // used by lz4_parts and zstd_dictionaries only
pub fn rounds_and_files(usage: &str, default_rounds: usize) -> (usize, Vec<PathBuf>) {
    let mut args = args();
    let first = args.first().and_then(|a| a.to_str()?.parse::<usize>().ok());
    let rounds = match first {
        Some(n) if n > 0 => {
            args.remove(0);
            n
        }
        _ => default_rounds,
    };
    if args.is_empty() {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    }
    (rounds, args.into_iter().map(PathBuf::from).collect())
}

/// The dictionary id written into a zstd-format dictionary's header by [`with_zstd_tables`]:
/// a fixed one keeps the output reproducible (pgdict's frames leave the id out, so its value
/// is never read back; 32768 is the lowest id zstd does not reserve).
#[allow(dead_code)] // used by dict_ratio, zstd_dictionaries and benches/dict.rs only
const ZSTD_HEADER_DICT_ID: u32 = 32768;

/// `content` as a zstd-format dictionary: zstd's header and entropy tables, counted on
/// `samples` for compression at `level`, in front of all of `content`
/// (`ZDICT_finalizeDictionary`, for which the zstd crate has no wrapper). With the tables a
/// block can reuse the dictionary's instead of building its own; raw content has none.
#[allow(dead_code)] // used by dict_ratio, zstd_dictionaries and benches/dict.rs only
pub fn with_zstd_tables(content: &[u8], samples: &[&[u8]], level: i32) -> Result<Vec<u8>, String> {
    use ::zstd::zstd_safe::zstd_sys;

    let flat = samples.concat();
    let sizes: Vec<usize> = samples.iter().map(|s| s.len()).collect();
    let count = u32::try_from(sizes.len()).map_err(|_| "too many samples".to_string())?;
    // Room for the header and tables (a few hundred bytes), so that no content is cut.
    let capacity = content.len() + 4096;
    let mut out = vec![0u8; capacity];
    let params = zstd_sys::ZDICT_params_t {
        compressionLevel: level,
        notificationLevel: 0,
        dictID: ZSTD_HEADER_DICT_ID,
    };
    // SAFETY: each pointer is valid for the length passed with it (`out` for `capacity` bytes,
    // `content` for its length, `flat` for the sum of `sizes`, `sizes` for `count` entries),
    // and zstd keeps none of them after the call; it writes at most `capacity` bytes to `out`.
    let written = unsafe {
        zstd_sys::ZDICT_finalizeDictionary(
            out.as_mut_ptr().cast(),
            capacity,
            content.as_ptr().cast(),
            content.len(),
            flat.as_ptr().cast(),
            sizes.as_ptr(),
            count,
            params,
        )
    };
    // SAFETY: `ZDICT_isError` only reads the number it is given.
    if unsafe { zstd_sys::ZDICT_isError(written) } != 0 {
        // SAFETY: `ZDICT_getErrorName` returns a pointer to one of zstd's static,
        // nul-terminated error strings, for any number.
        let name = unsafe { std::ffi::CStr::from_ptr(zstd_sys::ZDICT_getErrorName(written)) };
        return Err(format!(
            "zstd could not add entropy tables to {} bytes of content from {} rows: {}",
            content.len(),
            sizes.len(),
            name.to_string_lossy()
        ));
    }
    out.truncate(written);
    if !out.ends_with(content) {
        return Err("zstd cut the dictionary's content".to_string());
    }
    Ok(out)
}
