#!/bin/sh
# Builds the seed corpora, fuzz/corpus/<target>/seed-*, from real rows: the shared corpus
# (../shared/corpus next to the repository, or $PGDICT_CORPUS) and the project's corpus/.
# Seeds are generated, never committed (fuzz/corpus is git-ignored). Usage: fuzz/seed.sh [OUT_DIR]
set -eu
cd "$(dirname "$0")"
# The generator needs neither libFuzzer nor the fuzzing instrumentation.
exec cargo run --quiet --release --no-default-features --example seeds -- "${1:-corpus}"
