#!/bin/sh
# wait-policies.sh — how OpenMP's idle threads should wait on this machine
# (docs/performance.md, "Waking the second thread (mob20)"): the measures
# that question needs, in one run, to be taken on an idle machine (under
# load every spin loses and Weir sleeps at once anyway).
#
#   tests/bench/wait-policies.sh BUILD_DIR [options]
#     --model M       a model of tests/bench/realsize.sh (default mobilenet_v2)
#     --threads N     threads of the runs (default 2)
#     --rounds N      alternations of the whole-model runs (default 5)
#     --reps N        timed runs per `weir bench` (default 20)
#     --policies "…"  the waits compared, each an environment assignment
#                     (default: OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=3000
#                     GOMP_SPINCOUNT=30000 GOMP_SPINCOUNT=300000
#                     OMP_WAIT_POLICY=ACTIVE)
#
# Prints, per policy: (1) tests/bench/omp-regions.c's cost of a region
# around 20 us of one thread's work with a serial gap of 0, 20, 60 and 200
# us between regions; (2) the model's regions' start and end per inference
# and the busiest thread's CPU (tests/bench/omp-region-cpu.c); (3) the
# model's median `weir bench` time, the policies alternated --rounds times,
# with the median of the rounds.  The load average is printed before and
# after: figures taken at a load above the processor count mean nothing.
# Not a test: it asserts nothing.
set -eu
build=$(cd "$1" && pwd); shift
src=$(cd "$(dirname "$0")/../.." && pwd)
model=mobilenet_v2; threads=2; rounds=5; reps=20
policies="OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=3000 GOMP_SPINCOUNT=30000 GOMP_SPINCOUNT=300000 OMP_WAIT_POLICY=ACTIVE"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/realsize
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    *) echo "wait-policies.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
m=$cache/$model.onnx
[ -f "$m" ] || { echo "wait-policies.sh: no $m (run tests/bench/realsize.sh once)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -fopenmp "$src/tests/bench/omp-regions.c" -o "$tmp/omp-regions"
cc -O2 -shared -fPIC -fopenmp "$src/tests/bench/omp-region-cpu.c" -o "$tmp/orc.so" -ldl
cc -O2 -shared -fPIC "$src/tests/bench/gomp-count.c" -o "$tmp/count.so" -ldl
# the regions of one inference (P) and of the load (L), to count only the
# timed runs' regions
count() {
  LD_PRELOAD="$tmp/count.so" "$build/weir" bench "$m" --threads 1 --reps "$1" --warmup 0 2>&1 |
    sed -n 's/^gomp-count: \([0-9]*\) parallel regions.*/\1/p'
}
c1=$(count 1); c2=$(count 2)
per=$((c2 - c1)); load=$((c1 - per))
echo "wait-policies.sh: $(date -u '+%Y-%m-%d %H:%M UTC'); $build; $model, $threads threads"
echo "uptime:$(uptime)"
echo
echo "(1) omp-regions: 1000 regions around 20 us of work, serial gap G us"
for p in $policies; do
  for g in 0 20000 60000 200000; do
    printf '%s G=%s: ' "$p" $((g / 1000))
    env "$p" OMP_NUM_THREADS="$threads" "$tmp/omp-regions" 1000 20000 $g |
      sed 's/.*: region cost/region cost/'
  done
done
echo
echo "(2) $model: the regions' start / end per inference (ms; $per regions each)"
steps=$reps
from=$((load + per))
OMP_REGION_FROM=$from OMP_WAIT_POLICY=PASSIVE OMP_REGION_OUT="$tmp/one.txt" LD_PRELOAD="$tmp/orc.so" \
  "$build/weir" bench "$m" --threads 1 --reps "$reps" --warmup 1 >/dev/null 2>&1
for p in $policies; do
  env "$p" OMP_REGION_FROM=$from OMP_REGION_OUT="$tmp/two.txt" LD_PRELOAD="$tmp/orc.so" \
    "$build/weir" bench "$m" --threads "$threads" --reps "$reps" --warmup 1 >/dev/null 2>&1
  printf '%s: ' "$p"
  /usr/bin/python3 "$src/tests/bench/omp-region-cpu.py" $steps "$tmp/one.txt" "$tmp/two.txt" |
    awk '/^\| all /{ a = $0 } /start \/ end/{ s = $0 } END { print a; print "    " s }'
done
echo
echo "(3) $model: median ms of weir bench --reps $reps, policies alternated"
: >"$tmp/rows"
r=1
while [ $r -le "$rounds" ]; do
  for p in $policies; do
    t=$(env "$p" "$build/weir" bench "$m" --threads "$threads" --reps "$reps" --warmup 2 2>&1 |
      sed -n 's/^time *median \([0-9.]*\) \([um]*s\),.*/\1 \2/p' |
      awk '{ f = $2 == "us" ? 1e-3 : $2 == "s" ? 1e3 : 1; printf "%.3f", $1 * f }')
    echo "round $r $p: ${t:-n/a} ms (load $(cut -d' ' -f1 /proc/loadavg))"
    [ -z "$t" ] || echo "$p $t" >>"$tmp/rows"
  done
  r=$((r + 1))
done
for p in $policies; do
  printf '%s: median %s ms\n' "$p" "$(awk -v p="$p" '$1 == p { print $2 }' "$tmp/rows" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
done
echo "uptime:$(uptime)"
