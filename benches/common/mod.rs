//! What the criterion benches share: their short measurement settings, and PostgreSQL's C
//! `pglz_compress` timed over a set of datums.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};

/// Short runs: about a hundred functions per bench must fit in a few minutes. Set before the
/// command line is read, so `--sample-size`, `--warm-up-time` and `--measurement-time` still
/// override them.
pub fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
}

/// Times C's `pglz_compress` with PostgreSQL's default strategy over every datum, one call
/// each, as function `name`; the iteration returns the summed payload sizes so that the work
/// cannot be optimised away.
///
/// One reused output buffer, as pgdict's compressors reuse their own. The time includes pgref's
/// wrapper around the C call (length checks and the `Vec` bookkeeping): a few nanoseconds,
/// against about 0.4 µs for the shortest rows (csv_airports). The lock that serialises C's
/// compressor is taken once per iteration, not per datum (see `pgdict_pgref::exclusive`).
pub fn bench_c_compress(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, datums: &[Vec<u8>]) {
    let largest = datums.iter().map(Vec::len).max().unwrap_or(0);
    let strategy = pgdict_pgref::strategy_default();
    let mut out = Vec::with_capacity(pgdict_pgref::max_output(largest));
    group.bench_function(name, |b| {
        b.iter(|| {
            let mut c = pgdict_pgref::exclusive();
            let mut stored = 0;
            for datum in datums {
                stored += c
                    .compress_into(black_box(datum), &strategy, &mut out)
                    .unwrap_or(0);
            }
            stored
        });
    });
}
