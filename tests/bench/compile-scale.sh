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
# The models are exported by tests/bench/torchvision-models.py with
# /usr/bin/python3 when WORKDIR/models lacks them.  Each "cold" run gets an
# empty cache directory; "cached" is the same command again.  Run it nice'd
# on a quiet machine: every figure is wall-clock time.
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

# run WHICH MODEL KIND: one `weir run`, its output in logs/; prints the
# figures of the compile line and the run time, or a reason
one() {
  which=$1 m=$2 kind=$3
  weir=$AFTER
  [ "$which" = before ] && weir=$OLD
  cache=$WORK/cache-$which-$m
  [ "$kind" = cold ] && rm -rf "$cache"
  log=$WORK/logs/$which-$m-$kind.log
  start=$(date +%s.%N)
  timeout "$LIMIT" "$weir" run "$WORK/models/$m.onnx" \
    --input "input=$WORK/models/$m-input.npy" \
    --expect "output=$WORK/models/$m-output.npy" --rtol 1e-3 --atol 1e-4 \
    --cache-dir "$cache" --reps "$REPS" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  if [ $rc = 124 ]; then
    echo "stopped after ${LIMIT} s"
    return
  fi
  compile=$(grep -E ': (compiled|loaded from the compile cache) in ' "$log" |
    sed -E 's/.* in ([0-9.]+ m?s).*/\1/')
  run=$(grep -E '^  time ' "$log" | sed -E 's/^  time +([0-9.]+ m?s).*/\1/')
  ok=$(grep -qE 'output: .*: ok' "$log" && echo ok || echo "MISMATCH or error (exit $rc)")
  printf '%s|%s|%s|%s\n' "${compile:-?}" "${run:-?}" "$ok" \
    "$(echo "$end - $start" | bc | sed 's/^\./0./') s"
}

printf '\n| model | parameters | before: cold | before: cached | before: run | after: cold | after: cached | after: run | after: output |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for m in $MODELS; do
  params=$(/usr/bin/python3 -c "import onnx,sys; g=onnx.load('$WORK/models/$m.onnx', load_external_data=False).graph; import numpy as np; print('%.1f M' % (sum(int(np.prod(t.dims)) for t in g.initializer)/1e6))" 2>/dev/null)
  b_cold='-' b_hit='-' b_run='-'
  case " $SKIP_BEFORE " in
    *" $m "*) b_cold='not run (SKIP_BEFORE)' ;;
    *)
      r=$(one before "$m" cold)
      case "$r" in
        stopped*) b_cold=$r ;;
        *) b_cold=$(echo "$r" | cut -d'|' -f1) b_run=$(echo "$r" | cut -d'|' -f2)
           b_hit=$(one before "$m" cached | cut -d'|' -f1) ;;
      esac ;;
  esac
  r=$(one after "$m" cold)
  a_cold=$(echo "$r" | cut -d'|' -f1) a_run=$(echo "$r" | cut -d'|' -f2) a_ok=$(echo "$r" | cut -d'|' -f3)
  case "$r" in stopped*) a_cold=$r a_run='-' a_ok='-' ;; esac
  a_hit=$(one after "$m" cached | cut -d'|' -f1)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "$params" \
    "$b_cold" "$b_hit" "$b_run" "$a_cold" "$a_hit" "$a_run" "$a_ok"
done
echo
echo "done: $(date -u '+%H:%M UTC'), load: $(uptime | sed 's/.*load average: //'); logs in $WORK/logs"
