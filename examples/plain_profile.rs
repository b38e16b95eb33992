//! Plain pglz compression alone, pgdict's or PostgreSQL's C, repeated: for
//! `valgrind --tool=callgrind` instruction counts (no training or other set-up to subtract,
//! as `codec_profile` has).
//!
//! ```text
//! cargo build --release --example plain_profile
//! valgrind --tool=callgrind target/release/examples/plain_profile ours|c SLICE REPEAT PATH...
//! ```
//!
//! SLICE 0 reads row files (as `vs_postgres` does); otherwise every PATH is cut into
//! SLICE-byte datums. Each datum is compressed on its own with the default strategy; the
//! stored total (payloads, or raw datums where refused) is printed to check that both
//! implementations did the same work. Compare the inclusive cost of
//! `Compressor::compress` with that of `pglz_compress`.

use std::ffi::OsString;
use std::hint::black_box;
use std::path::Path;

use pgdict::pglz;

fn main() {
    // `args_os`: `args` panics on a file name that is not UTF-8.
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let text = |i: usize| args.get(i).and_then(|a| a.to_str());
    let number = |i: usize| text(i).and_then(|a| a.parse::<usize>().ok());
    let (Some(which @ ("ours" | "c")), Some(slice), Some(repeat), true) =
        (text(0), number(1), number(2), args.len() > 3)
    else {
        eprintln!("usage: plain_profile ours|c SLICE REPEAT PATH... (SLICE 0: row files)");
        std::process::exit(2);
    };
    let mut datums: Vec<Vec<u8>> = Vec::new();
    for path in args[3..].iter().map(Path::new) {
        let read = if slice == 0 {
            pgdict::rows::read_row_file(path).map_err(|e| e.to_string())
        } else {
            let bytes = std::fs::read(path);
            let bytes = bytes.map_err(|e| format!("cannot read {}: {e}", path.display()));
            bytes.map(|bytes| bytes.chunks(slice).map(<[u8]>::to_vec).collect())
        };
        datums.extend(read.unwrap_or_else(|message| {
            eprintln!("plain_profile: {message}");
            std::process::exit(1);
        }));
    }
    let mut compressor = pglz::Compressor::new();
    let strategy = pglz::Strategy::DEFAULT;
    let c_strategy = pgdict_pgref::strategy_default();
    let mut out = Vec::new();
    let mut stored = 0usize;
    for _ in 0..repeat {
        match which {
            "ours" => {
                for d in &datums {
                    stored +=
                        black_box(compressor.compress(d, &strategy)).map_or(d.len(), |p| p.len());
                }
            }
            "c" => {
                let mut c = pgdict_pgref::exclusive();
                for d in &datums {
                    stored +=
                        black_box(c.compress_into(d, &c_strategy, &mut out)).unwrap_or(d.len());
                }
            }
            _ => unreachable!(),
        }
    }
    eprintln!("{} datums, stored {stored}", datums.len());
}
