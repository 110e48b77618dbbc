#!/bin/sh
# train-ab.sh — the training step of the real-size models of issue 16 in
# two Weir builds, alternately, in one run (a before/after measurement
# under the same load; docs/performance.md, "Training at real sizes").
#
#   tests/bench/train-ab.sh BEFORE_BUILD AFTER_BUILD [options]
#     --threads "1 2"      thread counts (default "1 2")
#     --reps N             timed steps per measurement (default 5; 2 warm-up)
#     --pairs N            before/after pairs per model and thread count
#                          (default 2: before, after, before, after)
#     --models "a b"       subset of: mlp resnet18 mbconv transformer
#                          (default resnet18)
#     --level N            optimization level (default 2, as `weir train`)
#     --cache-dir DIR      the exported models (default as train-realsize.sh)
#     --before-flags "F"   extra bench-train flags of the "before" runs, e.g.
#     --after-flags "F"    --per-tensor-update (one build, two programs:
#                          train-ab.sh build build --before-flags
#                          --per-tensor-update)
#     --no-build           run the builds as they are (no ninja: a build
#                          directory of a checkout one must not build in,
#                          such as the main checkout's)
#
# Each measurement is BUILD/tests/bench-train -O LEVEL on the model that
# tests/bench/train-models.py exports (SGD, lr 0.01, one step per call,
# median ms/step).  Prints one line per measurement with the load average,
# then the median of the pairs per build.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: train-ab.sh BEFORE_BUILD AFTER_BUILD [options]" >&2; exit 2; }
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
shift 2
threads="1 2"
reps=5
pairs=2
models=resnet18
level=2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/train
before_flags=
after_flags=
nobuild=
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --level) level=$2; shift 2 ;;
    --cache-dir) cache=$2; shift 2 ;;
    --before-flags) before_flags=$2; shift 2 ;;
    --after-flags) after_flags=$2; shift 2 ;;
    --no-build) nobuild=1; shift ;;
    *) echo "train-ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$nobuild" ]; then
  for b in "$before" "$after"; do
    ninja -C "$b" tests/bench-train >/dev/null
  done
fi
/usr/bin/python3 "$src/tests/bench/train-models.py" export "$cache" $models

echo "train-ab.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) processors"
echo "before: $before"
echo "after:  $after"
[ -z "$before_flags" ] || echo "before flags: $before_flags"
[ -z "$after_flags" ] || echo "after flags:  $after_flags"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for m in $models; do
  for n in $threads; do
    i=0
    while [ $i -lt "$pairs" ]; do
      for side in before after; do
        if [ $side = before ]; then b=$before; fl=$before_flags; else b=$after; fl=$after_flags; fi
        # shellcheck disable=SC2086 # the flags are words
        out=$("$b/tests/bench-train" -O "$level" --threads "$n" --reps "$reps" \
                --warmup 2 $fl "$cache/$m.onnx" 2>&1) || true
        ms=$(printf '%s\n' "$out" | awk -v f="$m.onnx" '$1 == f && $3 ~ /^[0-9.]+$/ { print $3 }')
        [ -n "$ms" ] || { ms=n/a; printf '%s\n' "$out" | tail -3 >&2; }
        echo "$m threads $n $side: $ms ms/step   (load:$(uptime | sed 's/.*average://'))"
        echo "$m $n $side $ms" >>"$rows"
      done
      i=$((i + 1))
    done
  done
done
echo
echo "| model | threads | before ms/step (median) | after ms/step (median) | after / before |"
echo "|---|---|---|---|---|"
for m in $models; do
  for n in $threads; do
    med() {
      awk -v m="$m" -v n="$n" -v s="$1" '$1 == m && $2 == n && $3 == s && $4 != "n/a" { print $4 }' "$rows" |
        sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
    }
    b=$(med before)
    a=$(med after)
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "-"; else printf "%.2f", a / b }')
    echo "| $m | $n | $b | $a | $r |"
  done
done
