#!/bin/sh
# ab-builds.sh — two builds of Weir on the real-size models, interleaved:
# per round, model and thread count, `weir bench` of build A then build B
# (same cache, same input), so that both see the same machine load.
# Prints every run, then the median of the rounds' medians per build and
# their ratio B / A.
#
#   tests/bench/ab-builds.sh BUILD_A BUILD_B [options]
#     --threads "1 2"   thread counts (default "1 2")
#     --reps N          timed runs per measurement (default 10; 2 warm-up)
#     --rounds N        alternations (default 3)
#     --models "a b"    models of tests/bench/realsize.sh (default
#                       "resnet18 resnet50 mobilenet_v2 efficientnet_b0
#                       bert_layer"), exported there first
#     --weir-flags "…"  extra options of `weir bench`
#     --cache-dir DIR   as realsize.sh
#     --env-a "V=X …"   environment of build A's runs only (the same build
#                       twice with --env-a WEIR_PREPACK=0: weights packed
#                       per call against packed once at load)
set -eu
a=$(cd "$1" && pwd); b=$(cd "$2" && pwd); shift 2
threads="1 2"; reps=10; rounds=3; flags=""; enva=""
models="resnet18 resnet50 mobilenet_v2 efficientnet_b0 bert_layer"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/realsize
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --weir-flags) flags=$2; shift 2 ;;
    --cache-dir) cache=$2; shift 2 ;;
    --env-a) enva=$2; shift 2 ;;
    *) echo "ab-builds.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for m in $models; do
  [ -f "$cache/$m.onnx" ] || { echo "ab-builds.sh: no $cache/$m.onnx (run tests/bench/realsize.sh once)" >&2; exit 1; }
done
echo "ab-builds.sh: $(date -u '+%Y-%m-%d %H:%M UTC'); A = $a${enva:+ with $enva}; B = $b"
echo "uptime:$(uptime)"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
ms() {
  sed -n 's/^time *median \([0-9.]*\) \([um]*s\),.*/\1 \2/p' |
    awk '{ f = $2 == "us" ? 1e-3 : $2 == "s" ? 1e3 : 1; printf "%.3f", $1 * f }'
}
r=1
while [ $r -le $rounds ]; do
  for m in $models; do
    for n in $threads; do
      for side in A B; do
        if [ $side = A ]; then w=$a/weir; e=$enva; else w=$b/weir; e=""; fi
        # shellcheck disable=SC2086 # e: words "V=X"
        out=$(env $e "$w" bench "$cache/$m.onnx" $flags --threads "$n" --reps "$reps" --warmup 2 2>&1) || true
        t=$(printf '%s\n' "$out" | ms)
        [ -n "$t" ] || t=n/a
        # how the run's idle OpenMP threads waited (weir bench's `waiting`
        # line, docs/runtime.md): spin, sleep, or as the environment says
        wt=$(printf '%s\n' "$out" | sed -n 's/^waiting *idle OpenMP threads \([a-z]*\).*/\1/p')
        echo "round $r $m threads $n $side: $t ms (load $(cut -d' ' -f1 /proc/loadavg), wait ${wt:-?})"
        echo "$m $n $side $t" >>"$rows"
      done
    done
  done
  r=$((r + 1))
done
echo "uptime:$(uptime)"
echo
echo "| model | threads | A median ms | B median ms | B / A |"
echo "|---|---|---|---|---|"
for m in $models; do
  for n in $threads; do
    ta=$(awk -v m="$m" -v n="$n" '$1 == m && $2 == n && $3 == "A" && $4 != "n/a" { print $4 }' "$rows" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    tb=$(awk -v m="$m" -v n="$n" '$1 == m && $2 == n && $3 == "B" && $4 != "n/a" { print $4 }' "$rows" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    awk -v m="$m" -v n="$n" -v x="${ta:-0}" -v y="${tb:-0}" 'BEGIN {
      r = x > 0 ? sprintf("%.2f", y / x) : "-"
      printf "| %s | %s | %.2f | %.2f | %s |\n", m, n, x, y, r }'
  done
done
