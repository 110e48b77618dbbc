#!/bin/sh
# install-ort.sh — installs onnxruntime-node (CPU) for the ONNX Runtime
# column of bench-models, outside the source tree:
#   tests/bench/install-ort.sh [DIR]
# DIR defaults to $WEIR_BENCH_ORT_DIR or ${XDG_CACHE_HOME:-~/.cache}/weir-bench/ort,
# where bench-models looks.  ONNXRUNTIME_NODE_INSTALL=skip keeps the
# package's install step from downloading GPU add-ons.
set -eu
dir=${1:-${WEIR_BENCH_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/ort}}
if ! command -v npm >/dev/null 2>&1; then
  echo "install-ort.sh: npm is not installed; the ONNX Runtime column will be skipped" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private": true}' > package.json
ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund onnxruntime-node
echo "onnxruntime-node installed in $dir"
