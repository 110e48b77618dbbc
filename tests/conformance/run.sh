#!/bin/sh
# run.sh WEIR EXPECTED [BACKEND [BAD_DATA]]: runs the ONNX backend node tests
# through `weir conformance` with the list of tests expected not to pass
# (and the list of tests whose stored data is known to be wrong, when
# given), on the
# reference interpreter (BACKEND "interp", the default) or on generated
# code (BACKEND "compiled": compiled with the conformance flags, -O1, into
# the compile cache of $XDG_CACHE_HOME, which meson points into the build
# directory so that runs are hermetic and later runs are lookups).  The
# test data (Debian's libonnx-testdata, or $WEIR_ONNX_TESTDATA) is
# optional: without it the test is skipped (exit status 77).
weir="$1"
expected="$2"
backend="${3:-interp}"
bad_data="$4"
data="${WEIR_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}"
if [ ! -d "$data/node" ]; then
  echo "$data/node: ONNX test data not installed, skipping"
  exit 77
fi
# The cache follows XDG_CACHE_HOME (set by meson), whatever the caller's
# environment says.
unset WEIR_CACHE_DIR
# The node tests of operators whose semantics did not change are stored
# with the opset of their last change (some as old as opset 1): they are
# imported with --any-opset, which follows the schemas' opset rules.
if [ -n "$bad_data" ]; then
  set -- --known-bad-data "$bad_data"
else
  set --
fi
exec "$weir" conformance --backend "$backend" --any-opset \
  --expected-unsupported "$expected" "$@" "$data/node"
