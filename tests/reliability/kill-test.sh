#!/bin/sh
# kill-test.sh — kill Weir with SIGKILL in the middle of workspace saves and
# of compiles, then run Weir again and count what is left behind.
#
#   tests/reliability/kill-test.sh WEIR [SAVES [COMPILES]]
#
# WEIR is the built binary (build/weir); SAVES and COMPILES (default 50
# each) are the numbers of kills.  Everything happens in a private
# directory: the workspace, the cache and scratch directories
# (WEIR_CACHE_DIR) and TMPDIR.  Each kill comes after a random delay inside
# the operation: a save of a workspace with a long history (weir optimize
# with a recipe) or a compile without the cache (weir run --no-cache).  In
# half the compile kills the whole process group dies (Weir and the C
# compiler, as when a terminal closes), in the other half Weir alone (the
# compiler finishes as an orphan).
#
# Prints how many kills left a temporary behind before Weir ran again (the
# kill hit the window that creates litter) and how many temporaries were
# left after Weir ran again (must be 0).  Exit status 1 when something is
# left or a workspace does not open.  Run from the source root.
set -u
WEIR=${1:?usage: kill-test.sh WEIR [SAVES [COMPILES]]}
SAVES=${2:-50}
COMPILES=${3:-50}
case $WEIR in /*) ;; *) WEIR=$(pwd)/$WEIR ;; esac
SRC=$(pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weir-kill-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export WEIR_CACHE_DIR="$WORK/cache"
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
MODEL="$SRC/samples/models/lenet.onnx"
RECIPE="$SRC/samples/recipes/lenet.json"

# A random delay in seconds between 50% and 105% of $1 milliseconds (the
# save or the compile comes at the end of the command).
delay() {
  awk -v t="$1" -v seed="$2" \
    'BEGIN { srand(seed); printf "%.3f", (0.5 + 0.55 * rand()) * t / 1000 }'
}

count_ws_temps() {
  find "$WORK/ws" -maxdepth 1 -name '.lenet.weir.*' | wc -l
}

count_scratch() {
  n=0
  [ -d "$WEIR_CACHE_DIR/tmp" ] && n=$(find "$WEIR_CACHE_DIR/tmp" -mindepth 1 -maxdepth 1 | wc -l)
  m=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 | wc -l)
  echo $((n + m))
}

# ---- saves ----
mkdir -p "$WORK/ws"
# time of one optimize (which saves a workspace of 20 steps after the
# recipe), to aim the kills
t0=$(date +%s%N)
"$WEIR" optimize "$MODEL" --recipe "$RECIPE" -o "$WORK/ws/lenet.weir" \
  >/dev/null || exit 1
t1=$(date +%s%N)
save_ms=$(( (t1 - t0) / 1000000 ))
save_hits=0
broken=0
i=0
while [ $i -lt "$SAVES" ]; do
  i=$((i + 1))
  "$WEIR" optimize "$MODEL" --recipe "$RECIPE" -o "$WORK/ws/lenet.weir" \
    >/dev/null 2>&1 &
  pid=$!
  sleep "$(delay "$save_ms" "$i")"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [ "$(count_ws_temps)" -gt 0 ] && save_hits=$((save_hits + 1))
  # Weir runs again: opening the workspace removes what the kill left
  "$WEIR" history "$WORK/ws/lenet.weir" >/dev/null 2>&1 || broken=$((broken + 1))
done
save_left=$(count_ws_temps)

# ---- compiles ----
t0=$(date +%s%N)
"$WEIR" run "$SRC/samples/matmul.json" --no-cache >/dev/null || exit 1
t1=$(date +%s%N)
compile_ms=$(( (t1 - t0) / 1000000 ))
compile_hits=0
i=0
while [ $i -lt "$COMPILES" ]; do
  i=$((i + 1))
  setsid "$WEIR" run "$SRC/samples/matmul.json" --no-cache >/dev/null 2>&1 &
  pid=$!
  sleep "$(delay "$compile_ms" "$((i + 1000))")"
  if [ $((i % 2)) -eq 0 ]; then
    kill -9 -- "-$pid" 2>/dev/null
  else
    kill -9 "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  [ "$(count_scratch)" -gt 0 ] && compile_hits=$((compile_hits + 1))
  # let an orphaned compiler finish, then Weir runs again (it cleans first)
  while pgrep -s "$pid" >/dev/null 2>&1; do sleep 0.05; done
  "$WEIR" run "$SRC/samples/vector_add.json" -D N=8 --no-cache >/dev/null 2>&1
done
compile_left=$(count_scratch)

echo "saves:    $SAVES kills (one save ~${save_ms} ms), $save_hits left a temporary before Weir ran again, $save_left left after; workspace failed to open $broken times"
echo "compiles: $COMPILES kills (one compile ~${compile_ms} ms), $compile_hits left a scratch directory before Weir ran again, $compile_left left after"
[ "$save_left" -eq 0 ] && [ "$compile_left" -eq 0 ] && [ "$broken" -eq 0 ]
