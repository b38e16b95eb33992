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

use std::hint::black_box;
use std::path::Path;

use pgdict::pglz;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 || !matches!(args[1].as_str(), "ours" | "c") {
        eprintln!("usage: plain_profile ours|c SLICE REPEAT PATH...");
        std::process::exit(2);
    }
    let which = args[1].as_str();
    let slice: usize = args[2]
        .parse()
        .expect("SLICE: a number of bytes, 0 for row files");
    let repeat: usize = args[3].parse().expect("REPEAT: a number");
    let mut datums: Vec<Vec<u8>> = Vec::new();
    for path in &args[4..] {
        if slice == 0 {
            datums.extend(pgdict::rows::read_row_file(Path::new(path)).unwrap());
        } else {
            let bytes = std::fs::read(path).unwrap();
            datums.extend(bytes.chunks(slice).map(<[u8]>::to_vec));
        }
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
