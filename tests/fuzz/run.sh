#!/bin/bash
# tests/fuzz/run.sh SECONDS [TARGET...] — builds the libFuzzer targets (if
# needed) and runs each for SECONDS, one after the other, then prints a
# table: target, executions, crashes.  Exits 1 when any target crashed,
# leaked, hit a sanitizer report or a GLib critical (its reproducer is
# kept in the work directory, printed below the table).
#
# Environment:
#   WEIR_FUZZ_BUILD  build directory (default: build-fuzz at the top of the
#                    tree), configured with CC=clang -Dfuzz=true
#                    -Db_sanitize=address,undefined -Db_lundef=false
#   WEIR_FUZZ_WORK   scratch directory for corpora and logs (default: a new
#                    directory under ${TMPDIR:-/tmp}, kept)
#   WEIR_FUZZ_RUNS   stop each target after this many executions instead
#                    (SECONDS is then an upper bound; 0 = no time limit)
#   WEIR_FUZZ_ARGS   extra libFuzzer options
#   FUZZ_CC          compiler for a new build directory (default: clang;
#                    "ccache clang" works)
#   WEIR_SRCDIR      the source tree (default: the one holding this script)
#
# Seeds come from samples/ and tests/fuzz/corpus/ (copied into the work
# directory: the repository is never written).  See docs/reliability.md.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: tests/fuzz/run.sh SECONDS [TARGET...]" >&2
  echo "targets: onnx json recipe tensor workspace" >&2
  exit 2
fi
seconds=$1
shift
src=${WEIR_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx json recipe tensor workspace)
build=${WEIR_FUZZ_BUILD:-$src/build-fuzz}
work=${WEIR_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/weir-fuzz-run.XXXXXX")}
mkdir -p "$work"

# ---- build
if [ ! -f "$build/build.ninja" ]; then
  # werror off: -Werror is the gcc build's job; clang warns about other
  # things (g_autoptr variables only there for their cleanup).
  CC=${FUZZ_CC:-clang} meson setup "$build" "$src" -Dfuzz=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false \
    -Dgui=disabled -Dtests=false >"$work/setup.log" ||
    { cat "$work/setup.log" >&2; exit 2; }
fi
ninja -C "$build" $(printf 'tests/fuzz/fuzz-%s ' "${targets[@]}") >"$work/build.log" ||
  { tail -30 "$work/build.log" >&2; exit 2; }

# ---- seeds (samples/ + the checked-in corpus), into $work/corpus/<t>
seed() { # target files...
  local t=$1; shift
  mkdir -p "$work/corpus/$t"
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$work/corpus/$t/$(echo "${f#/}" | tr / _)"
  done
  return 0
}
prefixed() { # target byte files...: the tensor target's selector byte
  local t=$1 b=$2; shift 2
  mkdir -p "$work/corpus/$t"
  for f in "$@"; do
    { printf "\\x$b"; cat "$f"; } >"$work/corpus/$t/$b-$(echo "$f" | tr / _)"
  done
}
cd "$src"
shopt -s nullglob globstar
for t in "${targets[@]}"; do
  seed "$t" tests/fuzz/corpus/"$t"/*
  case $t in
  onnx)
    # The small models only (big initializers slow every mutation down),
    # and the ONNX backend test data's one-node models when installed.
    seed onnx $(find samples/models tests/core/data -name '*.onnx' -size -20k | sort)
    testdata=${WEIR_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}/node
    [ -d "$testdata" ] &&
      seed onnx $(find "$testdata" -name model.onnx -size -2k | sort) ;;
  json) seed json samples/*.json ;;
  recipe) seed recipe samples/recipes/*.json ;;
  tensor)
    # Small ones only: the large files only slow the mutations down.
    prefixed tensor 00 $(find samples -name '*.pb' -size -8k | sort)
    prefixed tensor 01 $(find samples -name '*.npy' -size -8k | sort | head -40) ;;
  workspace) ;; # tests/fuzz/corpus/workspace has the seeds
  esac
done

# ---- runs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
runs=${WEIR_FUZZ_RUNS:-0}
status=0
rows=()
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$work/artifacts/$t"
  args=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560
        -artifact_prefix="$work/artifacts/$t/" -print_final_stats=1)
  [ "$runs" -gt 0 ] && args+=(-runs="$runs")
  [ "$seconds" -eq 0 ] && args=("${args[@]:1}")
  rc=0
  # shellcheck disable=SC2086  # WEIR_FUZZ_ARGS: several words
  "$build/tests/fuzz/fuzz-$t" "${args[@]}" ${WEIR_FUZZ_ARGS:-} \
    "$work/corpus/$t" >"$work/$t.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '#[0-9]*' "$work/$t.log" | tail -1 | tr -d '#')
  crashes=$(find "$work/artifacts/$t" -type f | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  [ "$crashes" -eq 0 ] || { status=1; failed+=("$t"); }
  rows+=("$(printf '%-10s %12s %8s' "$t" "${execs:-?}" "$crashes")")
done

printf '%-10s %12s %8s\n' target executions crashes
printf '%s\n' "${rows[@]}"
echo "work directory: $work (logs: <target>.log, reproducers: artifacts/)"
for t in "${failed[@]}"; do
  echo "== $t: end of $work/$t.log"
  tail -40 "$work/$t.log"
  for a in "$work/artifacts/$t"/*; do echo "reproducer: $t: $a"; done
done
exit $status
