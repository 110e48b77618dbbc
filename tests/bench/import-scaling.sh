#!/bin/bash
# import-scaling.sh — times `weir import`, `weir validate` and `weir info` on
# generated ONNX models of growing size and prints a table
# (docs/onnx.md, "Import time").  Not a test: the scaling test is
# tests/onnx/test-import-scaling.c.
#   tests/bench/import-scaling.sh [BUILD_DIR] [KIND...]
# KIND: relu (a chain of Relu), add (a chain of Add with a constant), wide
# (parallel Relu branches summed by a tree of Add); default: all three.
# Sizes: 2,000, 8,000, 16,000 and 100,000 (WEIR_SCALING_SIZES to change).
# Times are wall-clock seconds and CPU (user + system) seconds; a command
# that runs longer than WEIR_SCALING_TIMEOUT seconds (default 300) shows
# "> N".
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
kinds=${*:-relu add wide}
sizes=${WEIR_SCALING_SIZES:-2000 8000 16000 100000}
limit=${WEIR_SCALING_TIMEOUT:-300}
weir=$build/weir
[ -x "$weir" ] || { echo "import-scaling.sh: $weir not found (build first)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weir-scaling-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run SECONDS_VAR CMD...: wall and CPU seconds of CMD, or "> limit"
run() {
  local out=$tmp/time
  local start end rc
  start=$(date +%s.%N)
  set +e
  ( TIMEFORMAT='%U %S'; { time timeout "$limit" "$@" >/dev/null 2>&1; } 2>"$out" )
  rc=$?
  set -e
  end=$(date +%s.%N)
  if [ $rc -eq 124 ]; then
    printf '%9s %9s' "> $limit" "-"
  elif [ $rc -ne 0 ]; then
    printf '%9s %9s' "failed" "($rc)"
  else
    read -r u s < "$out"
    printf '%9.2f %9.2f' "$(echo "$end - $start" | bc)" "$(echo "$u + $s" | bc)"
  fi
}

printf '%-6s %8s %9s | %9s %9s | %9s %9s | %9s %9s\n' kind nodes "MB" \
  "import" "cpu" "validate" "cpu" "info" "cpu"
for kind in $kinds; do
  for n in $sizes; do
    model=$tmp/$kind$n.onnx
    /usr/bin/python3 "$src/tests/bench/gen-chain-onnx.py" "$kind" "$n" "$model"
    nodes=$n
    [ "$kind" = wide ] && nodes=$((2 * n - 1))
    mb=$(printf "%.2f" "$(echo "scale=3; $(stat -c %s "$model") / 1000000" | bc)")
    printf '%-6s %8s %9s | ' "$kind" "$nodes" "$mb"
    run "$weir" import "$model" -o "$tmp/out.json"
    printf ' | '
    run "$weir" validate "$model"
    printf ' | '
    run "$weir" info "$model"
    printf '\n'
    rm -f "$model" "$tmp/out.json"
  done
done
