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
# The node tests of operators whose semantics did not change are stored
# with the opset of their last change (some as old as opset 1): they are
# imported with --any-opset, which follows the schemas' opset rules.
exec "$weir" conformance --any-opset --expected-unsupported "$expected" "$data/node"
