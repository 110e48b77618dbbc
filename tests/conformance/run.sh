#!/bin/sh
# run.sh WEIR EXPECTED: runs the ONNX backend node tests through `weir
# conformance` with the list of tests expected not to pass.  The test data
# (Debian's libonnx-testdata, or $WEIR_ONNX_TESTDATA) is optional: without
# it the test is skipped (exit status 77).
weir="$1"
expected="$2"
data="${WEIR_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}"
if [ ! -d "$data/node" ]; then
  echo "$data/node: ONNX test data not installed, skipping"
  exit 77
fi
exec "$weir" conformance --expected-unsupported "$expected" "$data/node"
