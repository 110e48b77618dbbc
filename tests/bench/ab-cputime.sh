#!/bin/sh
# ab-cputime.sh — two builds of Weir on the real-size models, by CPU time
# per inference rather than wall time: on a loaded machine (many processes
# on few cores) the wall time of a run mostly measures the wait for a core,
# while the CPU time a run consumes moves much less.  Per round, model and
# build (alternately A then B), `weir bench --reps HI` and `--reps LO`
# are run under /usr/bin/time; (user+sys of HI - user+sys of LO) / (HI -
# LO) is the CPU time of one inference (compile-cache loading, import and
# the -O2 pipeline cancel out).  Prints every measurement, then the median
# per build and the ratio B / A.  Threads: 1 (at 2 threads the CPU time
# also counts waiting threads).  A model is a name of tests/bench/realsize.sh
# (exported there first) or a path to an .onnx file
# (tests/bench/gen-se-layers.py writes small ones).
#
#   tests/bench/ab-cputime.sh BUILD_A BUILD_B [--models "a b"] [--rounds N]
#                             [--hi N] [--lo N] [--cache-dir DIR]
#                             [--env-a "V=X …"]
# --env-a: the environment of build A's runs only (the same build twice
# with --env-a WEIR_GEMM_ORIENT=1: every convolution on the usual GEMM
# tile against the shape rule).
set -eu
a=$(cd "$1" && pwd); b=$(cd "$2" && pwd); shift 2
models="mobilenet_v2 efficientnet_b0"; rounds=3; hi=60; lo=10; enva=
cache=${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/realsize
while [ $# -gt 0 ]; do
  case $1 in
    --models) models=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --hi) hi=$2; shift 2 ;;
    --lo) lo=$2; shift 2 ;;
    --cache-dir) cache=$2; shift 2 ;;
    --env-a) enva=$2; shift 2 ;;
    *) echo "ab-cputime.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
echo "ab-cputime.sh: $(date -u '+%Y-%m-%d %H:%M UTC'); A = $a${enva:+ with $enva}; B = $b; $(uptime)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cpu() { # build model reps [env] -> seconds of CPU
  f=$2; case $f in *.onnx) ;; *) f=$cache/$2.onnx ;; esac
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S" -o "$tmp/t" env OMP_NUM_THREADS=1 ${4:-} \
    "$1/weir" bench "$f" --threads 1 --reps "$3" --warmup 1 \
    >/dev/null 2>&1
  awk '{ print $1 + $2 }' "$tmp/t"
}
for m in $models; do
  # compile both once (into the compile cache) before measuring
  cpu "$a" "$m" 1 "$enva" >/dev/null; cpu "$b" "$m" 1 >/dev/null
  for r in $(seq 1 "$rounds"); do
    for x in A B; do
      d=$a; e=$enva; [ $x = B ] && d=$b && e=
      h=$(cpu "$d" "$m" "$hi" "$e"); l=$(cpu "$d" "$m" "$lo" "$e")
      ms=$(echo "$h $l $hi $lo" | awk '{ printf "%.3f", ($1 - $2) / ($3 - $4) * 1000 }')
      echo "round $r $(basename "$m") $x: $ms ms CPU per inference (load $(cut -d' ' -f1 /proc/loadavg))"
      echo "$m $x $ms" >> "$tmp/all"
    done
  done
done
echo
echo "| model | A median ms CPU | B median ms CPU | B / A |"
echo "|---|---|---|---|"
for m in $models; do
  ma=$(awk -v m="$m" '$1 == m && $2 == "A" { print $3 }' "$tmp/all" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  mb=$(awk -v m="$m" '$1 == m && $2 == "B" { print $3 }' "$tmp/all" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "| $m | $ma | $mb | $(echo "$ma $mb" | awk '{ printf "%.2f", $2 / $1 }') |"
done
echo "$(uptime)"
