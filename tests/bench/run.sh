#!/bin/sh
# run.sh — the benchmark with its peers: installs onnxruntime-node when it
# is missing (and npm is there), builds bench-models and runs it.
#   tests/bench/run.sh [BUILD_DIR] [bench-models options...]
# e.g. tests/bench/run.sh build --threads 1 --reps 20
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
ort=${WEIR_BENCH_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/ort}
if [ ! -d "$ort/node_modules/onnxruntime-node" ]; then
  if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    "$src/tests/bench/install-ort.sh" "$ort" ||
      echo "run.sh: onnxruntime-node could not be installed; its column will be skipped" >&2
  else
    echo "run.sh: node/npm not found; the ONNX Runtime column will be skipped" >&2
  fi
fi
ninja -C "$build" -j2 tests/bench/bench-models
WEIR_SRCDIR=$src WEIR_BENCH_ORT_DIR=$ort exec "$build/tests/bench/bench-models" "$@"
