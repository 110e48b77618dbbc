#!/bin/sh
# kill-test.sh — kill Weir with SIGKILL in the middle of workspace saves and
# of compiles, then run Weir again and count what is left behind.
#
#   tests/reliability/kill-test.sh WEIR [SAVES [COMPILES]]
#
# WEIR is the built binary (build/weir); SAVES and COMPILES (default 50
# each) are the numbers of kills.  Everything happens in a private
# directory: the workspace, the cache and scratch directories
# (WEIR_CACHE_DIR) and TMPDIR.  Each kill is aimed: the script starts the
# command, waits until its temporary appears (the workspace's temporary
# file of a save, the scratch directory of a compile), then kills it after
# a random delay (0-100 ms for a save, 0-400 ms for a compile).  The saves
# are those of `weir goto ws.weir K` (K alternating between 0 and the last
# step) on the workspace of `weir optimize transformer.onnx --recipe
# transformer.json` (121 steps, 17 MiB); the compile is that of `weir run
# matmul.json --no-cache`.  In half the compile kills the whole process group dies
# (Weir and the C compiler, as when a terminal closes), in the other half
# Weir alone (the compiler finishes as an orphan).
#
# Prints how many kills came while the temporary existed (left it behind
# before Weir ran again) and how many temporaries were left after Weir ran
# again (must be 0).  Exit status 1 when something is left or a workspace
# does not open.  Run from the source root.
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
MODEL="$SRC/samples/models/transformer.onnx"
RECIPE="$SRC/samples/recipes/transformer.json"
WS="$WORK/ws/ws.weir"

# A random delay in seconds between 0 and $1 milliseconds.
delay() {
  awk -v t="$1" -v seed="$2" 'BEGIN { srand(seed); printf "%.3f", rand() * t / 1000 }'
}

# Waits until the command pid $1 has created a temporary ($2 is the
# function counting them) or has exited.
wait_for_temp() {
  while kill -0 "$1" 2>/dev/null && [ "$($2)" -eq 0 ]; do sleep 0.005; done
}

count_ws_temps() {
  find "$WORK/ws" -maxdepth 1 -name '.ws.weir.*' | wc -l
}

count_scratch() {
  n=0
  [ -d "$WEIR_CACHE_DIR/tmp" ] && n=$(find "$WEIR_CACHE_DIR/tmp" -mindepth 1 -maxdepth 1 | wc -l)
  m=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 | wc -l)
  echo $((n + m))
}

# ---- saves ----
mkdir -p "$WORK/ws"
"$WEIR" optimize "$MODEL" --recipe "$RECIPE" -o "$WS" >/dev/null || exit 1
last=$("$WEIR" history "$WS" | awk '$1 ~ /^[0-9]+$/ { n = $1 } END { print n }')
save_hits=0
broken=0
i=0
while [ $i -lt "$SAVES" ]; do
  i=$((i + 1))
  "$WEIR" goto "$WS" $(( (i % 2) * last )) >/dev/null 2>&1 &
  pid=$!
  wait_for_temp "$pid" count_ws_temps
  sleep "$(delay 100 "$i")"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [ "$(count_ws_temps)" -gt 0 ] && save_hits=$((save_hits + 1))
  # Weir runs again: opening the workspace removes what the kill left
  "$WEIR" history "$WS" >/dev/null 2>&1 || broken=$((broken + 1))
done
save_left=$(count_ws_temps)

# ---- compiles ----
"$WEIR" run "$SRC/samples/matmul.json" --no-cache >/dev/null || exit 1
compile_hits=0
i=0
while [ $i -lt "$COMPILES" ]; do
  i=$((i + 1))
  setsid "$WEIR" run "$SRC/samples/matmul.json" --no-cache >/dev/null 2>&1 &
  pid=$!
  wait_for_temp "$pid" count_scratch
  sleep "$(delay 400 "$((i + 1000))")"
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

echo "saves:    $SAVES kills, $save_hits left a temporary before Weir ran again, $save_left left after; workspace failed to open $broken times"
echo "compiles: $COMPILES kills, $compile_hits left a scratch directory before Weir ran again, $compile_left left after"
[ "$save_left" -eq 0 ] && [ "$compile_left" -eq 0 ] && [ "$broken" -eq 0 ]
