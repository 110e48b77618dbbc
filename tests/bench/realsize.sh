#!/bin/sh
# realsize.sh — Weir against ONNX Runtime and PyTorch on real-size models,
# in one run, at 1 and 2 threads (docs/performance.md, "Real-size models").
#
#   tests/bench/realsize.sh [BUILD_DIR] [options]
#     --threads "1 2"      thread counts (default "1 2")
#     --reps N             timed runs per measurement (default 10; 2 warm-up)
#     --rounds R           time Weir and ONNX Runtime R times each, alternating
#                          (Weir, ORT, Weir, ORT, ...), and report the median
#                          of the R medians of each (default 1); on a shared
#                          machine this keeps a burst of load from landing on
#                          one side only
#     --models "a b"       subset of: resnet18 resnet50 mobilenet_v2
#                          efficientnet_b0 bert_layer cifar_resnet18
#     --weir-flags "..."   extra options of `weir run` and `weir bench`
#                          (e.g. "-O2", "--impl Conv=direct")
#     --peak G             FMA peak of ONE core in GFLOP/s (the peak at N
#                          threads is N*G); default: measured here with
#                          BUILD_DIR/tests/bench/fma-peak at each thread count
#     --cache-dir DIR      where the exported models go (default
#                          ${XDG_CACHE_HOME:-~/.cache}/weir-bench/realsize;
#                          never the source tree)
#     --ort-dir DIR        onnxruntime-node (default as tests/bench/run.sh)
#     --no-peers           Weir only
#
# At more than one thread each of Weir's rounds is preceded by
# build/tests/bench/triad, whose 256 KiB and 128 MiB bandwidths are printed
# with the rounds: they tell the two states of the virtual machine of
# docs/performance.md apart ("Two states of this machine").
#
# Models: tests/bench/realsize-models.py exports them once (torchvision,
# random weights, fixed seeds) with PyTorch's output.  Per model and thread
# count: `weir run --input --expect` checks Weir's output against PyTorch's
# (rtol 1e-4, atol 1e-4; OMP_NUM_THREADS=N), `weir bench --threads N` times
# it (median), peer-ort.cjs times ONNX Runtime (all graph optimizations,
# intraOpNumThreads N) and realsize-models.py times PyTorch
# (torch.set_num_threads(N), inference_mode).  FLOPs come from the
# generator (2 per multiply-add of convolutions, linear layers and
# attention products).  The table is printed at the end, in Markdown.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=build
case ${1:-} in --*|'') ;; *) build=$1; shift ;; esac
build=$(cd "$build" && pwd)
threads="1 2"
reps=10
rounds=1
models="resnet18 resnet50 mobilenet_v2 efficientnet_b0 bert_layer cifar_resnet18"
weir_flags=""
peak=""
cache=${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/realsize
ort=${WEIR_BENCH_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/ort}
peers=1
python=/usr/bin/python3
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --weir-flags) weir_flags=$2; shift 2 ;;
    --peak) peak=$2; shift 2 ;;
    --cache-dir) cache=$2; shift 2 ;;
    --ort-dir) ort=$2; shift 2 ;;
    --no-peers) peers=0; shift ;;
    *) echo "realsize.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
weir=$build/weir
gen=$src/tests/bench/realsize-models.py
[ -x "$weir" ] || { echo "realsize.sh: $weir is not built" >&2; exit 1; }

echo "realsize.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) processors"
echo "uptime:$(uptime)"
echo "weir flags: ${weir_flags:-(none: the default level)}"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"

"$python" "$gen" export "$cache" $models

ort_ok=0
if [ $peers = 1 ]; then
  if [ -d "$ort/node_modules/onnxruntime-node" ] && command -v node >/dev/null 2>&1; then
    ort_ok=1
  else
    echo "realsize.sh: onnxruntime-node not in $ort (tests/bench/install-ort.sh); ORT skipped" >&2
  fi
fi

# "12.345 ms" / "850.1 us" / "1.234 s" -> milliseconds
to_ms() {
  awk -v v="$1" -v u="$2" 'BEGIN { f = u == "us" ? 1e-3 : u == "s" ? 1e3 : 1;
                                   printf "%.3f", v * f }'
}

# median of the arguments, "n/a" if there are none
median() {
  [ $# -gt 0 ] || { echo n/a; return; }
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ninja -C "$build" tests/bench/triad >/dev/null 2>&1 || true
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for n in $threads; do
  if [ -n "$peak" ]; then
    pk=$(awk -v g="$peak" -v n="$n" 'BEGIN { printf "%.1f", g * n }')
    echo "peak at $n threads: $pk GFLOP/s (--peak $peak per core)"
  else
    ninja -C "$build" tests/bench/fma-peak >/dev/null
    pk=$("$build/tests/bench/fma-peak" --threads "$n" --seconds 2 | awk '{ print $3 }')
    echo "peak at $n threads: $pk GFLOP/s (fma-peak, measured now)"
  fi
  for m in $models; do
    base=$cache/$m
    flops=$(cat "$base.flops")
    # the check (also compiles into the compile cache)
    check=$(OMP_NUM_THREADS=$n "$weir" run "$base.onnx" $weir_flags \
              --input "input=$base.input.npy" --expect "output=$base.output.npy" \
              --rtol 1e-4 --atol 1e-4 2>&1) || true
    err=$(printf '%s\n' "$check" | sed -n 's/.*output: max abs error \([^ ]*\) .*: \(ok\|MISMATCH\).*/\1 \2/p' | head -1)
    [ -n "$err" ] || { err="failed"; printf '%s\n' "$check" | tail -5 >&2; }
    wts=""; ots=""; blas=""; states=""; r=0
    while [ $r -lt "$rounds" ]; do
      r=$((r + 1))
      # the machine's state before Weir's round (docs/performance.md, "Two
      # states of this machine"): the triad at 256 KiB / 128 MiB, GB/s
      if [ "$n" -gt 1 ] && [ -x "$build/tests/bench/triad" ]; then
        states="$states $("$build/tests/bench/triad" --threads "$n" |
          sed -n 's/.*256 KiB \([0-9.]*\) GB.*128 MiB \([0-9.]*\) GB.*/\1\/\2/p')"
      fi
      out=$("$weir" bench "$base.onnx" $weir_flags --threads "$n" --reps "$reps" --warmup 2 2>&1) || true
      t=$(printf '%s\n' "$out" | sed -n 's/^time *median \([0-9.]*\) \([um]*s\),.*/\1 \2/p')
      if [ -n "$t" ]; then wts="$wts $(to_ms $t)"; else printf '%s\n' "$out" | tail -5 >&2; fi
      blas=$(printf '%s\n' "$out" | sed -n 's/^blas *//p')
      if [ $ort_ok = 1 ]; then
        o=$(node "$src/tests/bench/peer-ort.cjs" --threads "$n" --reps "$reps" --warmup 2 \
              "$ort/node_modules/onnxruntime-node" "$base.onnx" "$base.input.npy" \
              "$base.output.npy" 2>&1 | tail -1)
        case $o in ok*) ots="$ots $(echo "$o" | awk '{ printf "%.3f", $2 }')" ;; esac
      fi
    done
    wms=$(median $wts)
    oms=$(median $ots)
    pms=n/a
    if [ $peers = 1 ]; then
      p=$("$python" "$gen" torch "$cache" "$m" --threads "$n" --reps "$reps" 2>&1 | tail -1)
      case $p in ok*) pms=$(echo "$p" | awk '{ printf "%.3f", $2 }') ;; esac
    fi
    echo "$m threads $n: weir $wms ms ($err; $blas), ort $oms ms, torch $pms ms, $flops FLOPs${wts:+ (rounds: weir$wts; ort${ots:- n/a}${states:+; triad 256K/128M GB/s before Weir's:$states})}"
    # the noise protocol (docs/performance.md, "Reading the table on a
    # noisy machine"): each round's Weir / ORT ratio (the two ran back to
    # back) and the ratio of the two sides' best rounds
    wl=$(echo $wts | tr ' ' ,); ol=$(echo $ots | tr ' ' ,)
    echo "$m $n $wms $oms $pms $flops $pk ${wl:-n/a} ${ol:-n/a} $err" >>"$rows"
  done
done
echo "uptime:$(uptime)"
echo
echo "| model | threads | Weir ms | ORT ms | PyTorch ms | Weir / ORT | paired | best / best | Weir GFLOP/s | % of peak | GFLOP | check vs PyTorch |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
awk '
function med(a, n,   i, j, t) {
  for (i = 2; i <= n; i++)
    for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
  r = ($3 != "n/a" && $4 != "n/a") ? sprintf("%.2f", $3 / $4) : "-";
  # paired: the median over rounds of Weir / ORT of the same round;
  # best / best: the fastest round of each side
  nw = split($8, w, ","); no = split($9, o, ",");
  pr = "-"; bb = "-";
  if ($8 != "n/a" && $9 != "n/a" && nw == no) {
    bw = w[1]; bo = o[1];
    for (i = 1; i <= nw; i++) {
      q[i] = w[i] / o[i];
      if (w[i] < bw) bw = w[i];
      if (o[i] < bo) bo = o[i];
    }
    pr = sprintf("%.2f", med(q, nw)); bb = sprintf("%.2f", bw / bo);
    delete q
  }
  g = $3 != "n/a" ? sprintf("%.1f", $6 / ($3 * 1e-3) / 1e9) : "-";
  pc = ($3 != "n/a" && $7 > 0) ? sprintf("%.1f%%", 100 * $6 / ($3 * 1e-3) / 1e9 / $7) : "-";
  printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f | %s %s |\n", $1, $2, $3, $4, $5, r, pr, bb, g, pc, $6 / 1e9, $10, $11
}' "$rows"
