#!/bin/bash
# info-scaling.sh — the scaling check of issue 17 (docs/onnx.md, "Import
# time"): `weir info` on generated chains of Relu nodes
# (tests/bench/gen-chain-onnx.py) of 10,000 and 40,000 nodes must take less
# than 6 times as long on the larger one (linear time gives 4, quadratic
# 16), and on 100,000 nodes less than 5 s.  Times are CPU seconds (user +
# system, the median of WEIR_SCALING_REPEAT runs, default 3), which a loaded
# machine disturbs less than wall-clock time; both are printed.
#   tests/bench/info-scaling.sh [BUILD_DIR]
# Exit status 0 when both hold, 1 when one does not, 2 on a usage problem.
# Registered as the meson benchmark 'info-scaling' (suite 'scaling'):
#   meson test -C build --benchmark --suite scaling
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
repeat=${WEIR_SCALING_REPEAT:-3}
weir=$build/weir
[ -x "$weir" ] || { echo "info-scaling.sh: $weir not found (build first)" >&2; exit 2; }
/usr/bin/python3 -c 'import onnx' 2>/dev/null ||
  { echo "info-scaling.sh: /usr/bin/python3 has no onnx module: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weir-info-scaling-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# measure N: prints "CPU WALL" medians of `weir info` on the N-node chain
measure() {
  local model=$tmp/relu$1.onnx
  /usr/bin/python3 "$src/tests/bench/gen-chain-onnx.py" relu "$1" "$model"
  local cpus=() walls=()
  for _ in $(seq "$repeat"); do
    local start end u s
    start=$(date +%s.%N)
    { TIMEFORMAT='%U %S'; time "$weir" info "$model" >/dev/null; } 2>"$tmp/t"
    end=$(date +%s.%N)
    read -r u s < "$tmp/t"
    cpus+=("$(echo "$u + $s" | bc)")
    walls+=("$(echo "$end - $start" | bc)")
  done
  local mid=$(( (repeat - 1) / 2 ))
  local c w
  c=$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$((mid + 1))p")
  w=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$((mid + 1))p")
  echo "$c $w"
}

echo "load: $(uptime)"
read -r c10 w10 < <(measure 10000)
read -r c40 w40 < <(measure 40000)
read -r c100 w100 < <(measure 100000)
printf '%8s %9s %9s\n' nodes "cpu s" "wall s"
printf '%8s %9.2f %9.2f\n' 10000 "$c10" "$w10" 40000 "$c40" "$w40" \
  100000 "$c100" "$w100"
ratio=$(echo "scale=2; $c40 / $c10" | bc)
status=0
if [ "$(echo "$c40 < 6 * $c10" | bc)" = 1 ]; then
  echo "40k / 10k: $ratio (< 6): ok"
else
  echo "40k / 10k: $ratio (>= 6): FAIL"; status=1
fi
if [ "$(echo "$c100 < 5" | bc)" = 1 ]; then
  echo "100k: $c100 s (< 5 s): ok"
else
  echo "100k: $c100 s (>= 5 s): FAIL"; status=1
fi
exit $status
