//! Times pgdict's 4 KB pglz build from (up to) 10,000 rows of each ROWFILE, the build the
//! trainer issue limits to 30 s, and prints a digest of each dictionary built.
//!
//! ```text
//! cargo run --release -p pgdict-trainer --example timed_build -- [--repeat N] ROWFILE...
//! ```
//!
//! The rows are taken as `builders` takes them for its timed build (evenly over the file, every
//! row a candidate). The builder's work is bounded, not its time, so the same rows always give
//! the same dictionary: a change meant only to make the builder faster must leave every digest
//! as it was. Run two binaries alternately (several `--repeat` rounds each, the machine
//! otherwise idle) to compare their times; one build is about 10-30 s.

use std::path::PathBuf;
use std::time::Instant;

use pgdict::datum::Codec;
use pgdict_trainer::build::Builder;

const PGLZ_SIZE: usize = 4096;
const TIMED_ROWS: usize = 10_000;
const USAGE: &str = "usage: timed_build [--repeat N] ROWFILE...";

/// FNV-1a, 64 bits: enough to tell two dictionaries apart.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn main() -> anyhow::Result<()> {
    let mut repeat = 1;
    let mut paths = Vec::new();
    // `args_os`: `args` panics on a file name that is not UTF-8.
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str().unwrap_or_default() {
            "--repeat" => {
                let n = args.next().ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
                let n = n.to_string_lossy();
                repeat = n
                    .parse()
                    .map_err(|e| anyhow::anyhow!("--repeat {n}: {e}"))?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    anyhow::ensure!(!paths.is_empty(), "{USAGE}");

    for path in &paths {
        let rows = pgdict::rows::read_row_file(path)?; // The error names the file.
        let n = rows.len().min(TIMED_ROWS);
        let sample: Vec<&[u8]> = (0..n).map(|i| &rows[i * rows.len() / n][..]).collect();
        let bytes: usize = sample.iter().map(|r| r.len()).sum();
        for _ in 0..repeat {
            let start = Instant::now();
            let dict = Builder::Pgdict.build(&sample, Codec::Pglz, PGLZ_SIZE);
            let dict = dict.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "{}: {n} rows, {bytes} bytes: {seconds:.2} s, dictionary {} bytes, digest {:016x}",
                path.display(),
                dict.len(),
                digest(&dict)
            );
        }
    }
    Ok(())
}
