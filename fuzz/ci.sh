#!/bin/sh
# CI run of pgdict's fuzz targets: build them all, seed them, then run each for a bounded
# time. Exits non-zero as soon as a target crashes (the artifact is in fuzz/artifacts/<target>/
# and libFuzzer's report on stderr). One fuzzer process at a time (libFuzzer's default;
# -jobs would fork workers).
#
#   PGDICT_FUZZ_SECONDS      seconds per target (default 20)
#   PGDICT_SEED_TARGET_DIR   target directory for the seed generator's build (default: the
#                            fuzz workspace's); .ci/run names the one its tests were built in
#
# Needs cargo-fuzz; the stable toolchain builds the targets with RUSTC_BOOTSTRAP=1.
set -eu
cd "$(dirname "$0")"
seconds="${PGDICT_FUZZ_SECONDS:-20}"
export RUSTC_BOOTSTRAP=1
# The C codecs (liblz4, zstd, built by their -sys crates with gcc) get AddressSanitizer too:
# cargo-fuzz instruments only the Rust code. (gcc cannot add libFuzzer's coverage counters, so
# the fuzzer still sees no coverage inside them.) Only for the fuzz builds and runs (a run
# rebuilds if CFLAGS differ): the seed generator links no sanitizer runtime.
plain_cflags="${CFLAGS:-}"
asan_cflags="$plain_cflags -fsanitize=address -fno-omit-frame-pointer"

# The runs' logs go to fuzz/target/, which a CARGO_TARGET_DIR elsewhere leaves uncreated.
mkdir -p target

start=$(date +%s)
CFLAGS="$asan_cflags" cargo fuzz build --debug-assertions
# The seed generator with CFLAGS as given (unset stays unset: Cargo rebuilds the C codecs when
# CFLAGS goes from unset to empty).
# Then the fuzz crate's own unit tests (its input layouts), built as the generator is: only
# the fuzz library itself is compiled again. A subshell, so that the fuzz runs below keep the
# target directory the build above used.
(
    if [ -n "${PGDICT_SEED_TARGET_DIR:-}" ]; then
        export CARGO_TARGET_DIR="$PGDICT_SEED_TARGET_DIR"
    fi
    ./seed.sh >/dev/null
    cargo test --quiet --release --no-default-features --lib
)
echo "fuzz/ci.sh: built, seeded and unit-tested in $(( $(date +%s) - start )) s"

# Every target Cargo.toml declares, or none is fuzzed at all: a `for` over `$(cargo fuzz list)`
# would run no target, and pass, if the listing failed or printed nothing (an assignment
# fails under `set -e` when its command does).
targets=$(cargo fuzz list)
declared=$(grep -c '^\[\[bin\]\]' Cargo.toml || true)
listed=$(echo "$targets" | grep -c . || true)
if [ "$listed" -eq 0 ] || [ "$listed" -ne "$declared" ]; then
    echo "fuzz/ci.sh: cargo fuzz list names $listed targets, Cargo.toml declares $declared" >&2
    exit 1
fi

for target in $targets; do
    # datum_header: small datums, and no single allocation over 256 MiB (the most a
    # 4096-byte datum can justify is a zstd payload's 32,768-fold expansion, under 180 MiB).
    # datum_input: no single allocation over 64 MiB (a datums file's record reserves 1 MiB at
    # most before its bytes come; every other buffer grows with the input, which its layout's
    # repeat expands to 1 MiB + 128 KiB at most, and with the datums read, written back as hex
    # and escape text for inputs up to 128 KiB: about 4 MiB). Its inputs past 128 KiB take
    # 10 to 100 times a small one's time; -entropic_scale_per_exec_time=1 has libFuzzer pick
    # slow inputs to mutate less often (their energy scaled down by their time over the
    # average): 2 to 3 times the executions a CPU second (fuzz/README.md, Results).
    case "$target" in
        datum_header) limits="-max_len=4096 -malloc_limit_mb=256" ;;
        datum_input) limits="-malloc_limit_mb=64 -entropic_scale_per_exec_time=1" ;;
        *) limits="" ;;
    esac
    echo "fuzz/ci.sh: $target for ${seconds} s"
    # shellcheck disable=SC2086
    if ! CFLAGS="$asan_cflags" cargo fuzz run --debug-assertions "$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 $limits \
        2>"target/ci-$target.log"; then
        # The panic's message (or the sanitizer's first line) comes before a stack trace that
        # the tail alone may not reach past.
        grep -m 1 -A 4 -E 'panicked at|^==[0-9]+==ERROR' "target/ci-$target.log" >&2 || true
        tail -n 60 "target/ci-$target.log" >&2
        echo "fuzz/ci.sh: $target crashed (artifact in fuzz/artifacts/$target/)" >&2
        exit 1
    fi
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "target/ci-$target.log"
done
echo "fuzz/ci.sh: all targets clean in $(( $(date +%s) - start )) s"
