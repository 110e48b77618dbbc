#!/bin/sh
# cc-keep-source.sh — a compiler wrapper that keeps a copy of every C file
# it compiles in $WEIR_KEEP_SOURCE (default /tmp/weir-kept-source), then
# runs gcc with the same arguments.  For tests/bench/omp-region-cpu.py
# --maps, which names a kernel's parallel regions from its generated C:
#
#   mkdir -p /tmp/src && WEIR_CACHE_DIR=/tmp/cold-cache WEIR_KEEP_SOURCE=/tmp/src \
#     CC=tests/bench/cc-keep-source.sh build/tests/bench-train -O 2 --reps 1 M.onnx
#
# (a cold compile cache, so that the kernel is compiled; later runs with
# the same WEIR_CACHE_DIR load the same object).
dir=${WEIR_KEEP_SOURCE:-/tmp/weir-kept-source}
mkdir -p "$dir"
for a in "$@"; do
  case "$a" in
    *.c) cp "$a" "$dir/" ;;
  esac
done
exec gcc "$@"
