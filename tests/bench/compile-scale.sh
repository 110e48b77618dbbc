#!/bin/sh
# compile-scale.sh — the before/after table of issue 13 (docs/runtime.md,
# docs/performance.md), measured in one run: for each torchvision model at
# batch 1, 3x224x224 (random weights), the cold compile, the cache hit (a
# second `weir run` in a new process) and the run time, of a Weir built from
# the last commit before issue 13's work ("before") and of the current build
# ("after").
#
# Usage: tests/bench/compile-scale.sh [BUILD [WORKDIR]]
#   BUILD    the current build directory (default: build)
#   WORKDIR  models, the "before" checkout and build, caches, logs
#            (default: /tmp/weir-compile-scale); nothing is committed.
# Environment:
#   BEFORE       commit of the "before" Weir (default afc568d, the parent of
#                fe1b877, the first commit of issue 13's work; found with
#                git log --oneline -- core/runtime.c core/codegen)
#   MODELS       models to time (default: squeezenet1_1 mobilenet_v2
#                resnet18 resnet50 alexnet vgg11_bn)
#   SKIP_BEFORE  models whose "before" runs are not attempted (default:
#                alexnet vgg11_bn: 460 s cold on an idle machine, and a
#                compiler killed for memory, in the issue)
#   LIMIT        seconds after which a run is stopped (default 480)
#   REPS         timed runs after one warm-up (default 5)
#   TABLE_ONLY   when set, runs nothing and prints the table from the logs
#                of an earlier run in WORKDIR
# The models are exported by tests/bench/torchvision-models.py with
# /usr/bin/python3 when WORKDIR/models lacks them.  Each "cold" run gets an
# empty cache directory; "cached" is the same command again, whose timed
# runs give the "run" column.  Run it nice'd on a quiet machine: every
# figure is wall-clock time.
set -u
BUILD=${1:-build}
WORK=${2:-/tmp/weir-compile-scale}
BEFORE=${BEFORE:-afc568d}
MODELS=${MODELS:-"squeezenet1_1 mobilenet_v2 resnet18 resnet50 alexnet vgg11_bn"}
SKIP_BEFORE=${SKIP_BEFORE:-"alexnet vgg11_bn"}
LIMIT=${LIMIT:-480}
REPS=${REPS:-5}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
AFTER=$(cd "$BUILD" && pwd)/weir
mkdir -p "$WORK/models" "$WORK/logs"

echo "compile-scale: $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(uptime | sed 's/.*load average: //')"
echo "after:  $(git -C "$SRC" log -1 --format='%h %s' | cut -c1-70) ($AFTER)"

# the models
for m in $MODELS; do
  [ -f "$WORK/models/$m.onnx" ] && continue
  /usr/bin/python3 "$SRC/tests/bench/torchvision-models.py" "$WORK/models" "$m" || exit 1
done

# the "before" Weir, built once from its own checkout
if [ ! -x "$WORK/before/build/weir" ]; then
  if [ ! -d "$WORK/before" ]; then
    git -C "$SRC" worktree add --detach "$WORK/before" "$BEFORE" >/dev/null || exit 1
  fi
  (cd "$WORK/before" && { [ -d build ] || CC="${CC:-cc}" meson setup build -Dgui=disabled >/dev/null; } &&
     ninja -C build weir >/dev/null) || exit 1
fi
OLD=$WORK/before/build/weir
echo "before: $(git -C "$WORK/before" log -1 --format='%h %s' | cut -c1-70) ($OLD)"

# figures WHICH MODEL KIND: from the log of one `weir run`, the time of
# its compile line, the run time and whether the output matched, as
# "compile|run|ok", or the reason there are none
figures() {
  log=$WORK/logs/$1-$2-$3.log
  [ -f "$log" ] || { echo "-|-|-"; return; }
  if grep -q '^stopped after' "$log"; then
    echo "$(grep '^stopped after' "$log")|-|-"
    return
  fi
  compile=$(grep -E '^[^:]*: (compiled|loaded from the compile cache) in ' "$log" |
    sed -E 's/^[^:]*: (compiled|loaded from the compile cache) in ([0-9.]+ m?s).*/\2/')
  run=$(grep -E '^  time ' "$log" | sed -E 's/^  time +([0-9.]+ m?s).*/\1/')
  ok=$(grep -qE 'output: .*: ok' "$log" && echo ok || echo "no match, see $log")
  echo "${compile:-?}|${run:-?}|$ok"
}

# one WHICH MODEL KIND: one `weir run` (cold: with an empty cache), its
# output in logs/, stopped after LIMIT seconds
one() {
  which=$1 m=$2 kind=$3
  weir=$AFTER
  [ "$which" = before ] && weir=$OLD
  cache=$WORK/cache-$which-$m
  [ "$kind" = cold ] && rm -rf "$cache"
  log=$WORK/logs/$which-$m-$kind.log
  timeout "$LIMIT" "$weir" run "$WORK/models/$m.onnx" \
    --input "input=$WORK/models/$m-input.npy" \
    --expect "output=$WORK/models/$m-output.npy" --rtol 1e-3 --atol 1e-4 \
    --cache-dir "$cache" --reps "$REPS" >"$log" 2>&1
  [ $? = 124 ] && echo "stopped after ${LIMIT} s" >>"$log"
}

if [ -z "${TABLE_ONLY:-}" ]; then
  for m in $MODELS; do
    case " $SKIP_BEFORE " in
      *" $m "*) echo "not run (SKIP_BEFORE)" >"$WORK/logs/before-$m-cold.log" ;;
      *) one before "$m" cold
         grep -q '^stopped after' "$WORK/logs/before-$m-cold.log" ||
           one before "$m" cached ;;
    esac
    one after "$m" cold
    one after "$m" cached
  done
fi

printf '\n| model | parameters | before: cold | before: cached | before: run | after: cold | after: cached | after: run | output (after) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for m in $MODELS; do
  params=$(/usr/bin/python3 -c "import onnx; import numpy as np; g=onnx.load('$WORK/models/$m.onnx').graph; print('%.1f M' % (sum(int(np.prod(t.dims)) for t in g.initializer)/1e6))" 2>/dev/null)
  if grep -q '^not run' "$WORK/logs/before-$m-cold.log" 2>/dev/null; then
    b_cold='not run (SKIP_BEFORE)' b_hit='-' b_run='-'
  else
    b_cold=$(figures before "$m" cold | cut -d'|' -f1)
    b_hit=$(figures before "$m" cached | cut -d'|' -f1)
    b_run=$(figures before "$m" cached | cut -d'|' -f2)
  fi
  a_cold=$(figures after "$m" cold | cut -d'|' -f1)
  a_hit=$(figures after "$m" cached | cut -d'|' -f1)
  a_run=$(figures after "$m" cached | cut -d'|' -f2)
  a_ok=$(figures after "$m" cold | cut -d'|' -f3)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "$params" \
    "$b_cold" "$b_hit" "$b_run" "$a_cold" "$a_hit" "$a_run" "$a_ok"
done
echo
echo "done: $(date -u '+%H:%M UTC'), load: $(uptime | sed 's/.*load average: //'); logs in $WORK/logs"
