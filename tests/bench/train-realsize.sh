#!/bin/sh
# train-realsize.sh — one training step of the real-size models of issue 16
# in Weir and in PyTorch, in one run, at 1 and 2 threads
# (docs/performance.md, "Training at real sizes").
#
#   tests/bench/train-realsize.sh [BUILD_DIR] [options]
#     --threads "1 2"      thread counts (default "1 2")
#     --reps N             timed steps per measurement (default 10; 2 warm-up)
#     --models "a b"       subset of: mlp resnet18 mbconv transformer
#     --level N            Weir's optimization level of the training
#                          program (default 2, as `weir train`)
#     --bench-flags "..."  extra options of tests/bench-train (e.g.
#                          "--impl ConvGradInput=col2im")
#     --peak G             FMA peak of ONE core in GFLOP/s (the peak at N
#                          threads is N*G); default: measured here with
#                          BUILD_DIR/tests/bench/fma-peak at each count
#     --cache-dir DIR      where the exported models go (default
#                          ${XDG_CACHE_HOME:-~/.cache}/weir-bench/train;
#                          never the source tree)
#     --no-peers           Weir only
#
# Models: tests/bench/train-models.py exports them once (random weights,
# fixed seeds, one fixed batch) with their batch and target.  Per model and
# thread count: tests/bench-train -O LEVEL times the training program of
# weir_train_graph (SGD, lr 0.01, one step per call; softmax cross-entropy
# for the classifiers, mse for the transformer layer; median), then
# train-models.py times PyTorch's step on the same data (zero_grad,
# forward in training mode, loss, backward, SGD step; median), so the two
# run alternately under the same load.  FLOPs of a step: three times the
# forward FLOPs of the convolutions, linear layers and attention products
# (train-models.py).  The table is printed at the end, in Markdown.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=build
case ${1:-} in --*|'') ;; *) build=$1; shift ;; esac
build=$(cd "$build" && pwd)
threads="1 2"
reps=10
models="mlp resnet18 mbconv transformer"
level=2
bench_flags=""
peak=""
cache=${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/train
peers=1
python=/usr/bin/python3
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --level) level=$2; shift 2 ;;
    --bench-flags) bench_flags=$2; shift 2 ;;
    --peak) peak=$2; shift 2 ;;
    --cache-dir) cache=$2; shift 2 ;;
    --no-peers) peers=0; shift ;;
    *) echo "train-realsize.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bench=$build/tests/bench-train
gen=$src/tests/bench/train-models.py
ninja -C "$build" tests/bench-train tests/bench/fma-peak >/dev/null
[ -x "$bench" ] || { echo "train-realsize.sh: $bench is not built" >&2; exit 1; }

echo "train-realsize.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) processors"
echo "uptime:$(uptime)"
echo "weir: -O$level ${bench_flags}"

"$python" "$gen" export "$cache" $models

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for n in $threads; do
  if [ -n "$peak" ]; then
    pk=$(awk -v g="$peak" -v n="$n" 'BEGIN { printf "%.1f", g * n }')
    echo "peak at $n threads: $pk GFLOP/s (--peak $peak per core)"
  else
    pk=$("$build/tests/bench/fma-peak" --threads "$n" --seconds 2 | awk '{ print $3 }')
    echo "peak at $n threads: $pk GFLOP/s (fma-peak, measured now)"
  fi
  for m in $models; do
    flops=$(cat "$cache/$m.flops")
    out=$("$bench" -O "$level" --threads "$n" --reps "$reps" --warmup 2 \
            $bench_flags "$cache/$m.onnx" 2>&1) || true
    wms=$(printf '%s\n' "$out" | awk -v f="$m.onnx" '$1 == f && $3 ~ /^[0-9.]+$/ { print $3 }')
    [ -n "$wms" ] || { wms=n/a; printf '%s\n' "$out" | tail -5 >&2; }
    pms=n/a
    if [ $peers = 1 ]; then
      p=$("$python" "$gen" torch "$cache" "$m" --threads "$n" --reps "$reps" 2>&1 | tail -1)
      case $p in ok*) pms=$(echo "$p" | awk '{ printf "%.3f", $2 }') ;; *) echo "$p" >&2 ;; esac
    fi
    echo "$m threads $n: weir $wms ms, torch $pms ms, $flops FLOPs   (uptime:$(uptime | sed 's/.*average://'))"
    echo "$m $n $wms $pms $flops $pk" >>"$rows"
  done
done
echo "uptime:$(uptime)"
echo
echo "| model | threads | Weir ms/step | PyTorch ms/step | Weir / PyTorch | Weir GFLOP/s | % of peak | PyTorch GFLOP/s | GFLOP/step |"
echo "|---|---|---|---|---|---|---|---|---|"
awk '{
  r = ($3 != "n/a" && $4 != "n/a") ? sprintf("%.2f", $3 / $4) : "-";
  g = $3 != "n/a" ? sprintf("%.1f", $5 / ($3 * 1e-3) / 1e9) : "-";
  pc = ($3 != "n/a" && $6 > 0) ? sprintf("%.1f%%", 100 * $5 / ($3 * 1e-3) / 1e9 / $6) : "-";
  pg = $4 != "n/a" ? sprintf("%.1f", $5 / ($4 * 1e-3) / 1e9) : "-";
  printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.3f |\n", $1, $2, $3, $4, r, g, pc, pg, $5 / 1e9
}' "$rows"
