#!/bin/sh
# The library's decoder and codec tests under AddressSanitizer, with the C codecs (liblz4,
# zstd) instrumented too: every unsafe block (the liblz4 and zstd calls, the pglz copies)
# runs over the corpus rows, the property tests and the fuzz regressions with its memory
# checked. Miri would be the other choice, but it cannot run the C codecs (and is not part of
# this machine's toolchain).
#
# Uses its own target directory (a full ASan build of the dependencies: ~10 minutes on two
# cores; the tests then take ~5). The stable toolchain accepts -Zsanitizer with
# RUSTC_BOOTSTRAP=1, as for cargo-fuzz. Needs libpgcommon.a like the main tests.
set -eu
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=address"
export CFLAGS="-fsanitize=address -fno-omit-frame-pointer"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/asan}"
# --target: keeps RUSTFLAGS off build scripts and proc macros, which run on the host.
exec cargo test -p pgdict --target x86_64-unknown-linux-gnu --lib \
    --test datum --test lz4_zstd --test fuzz_regressions --test pglz_dict --test pglz_differential "$@"
