#!/bin/sh
# test-quantize-ort.sh WEIR SRCDIR: `weir quantize --onnx` writes the digits
# CNN quantized in QDQ form; ONNX Runtime (onnxruntime-node, installed as
# tests/bench/install-ort.sh does) runs it, and its output must equal the
# output of Weir's quantized program within one quantization step of the
# output (per tensor u8, per channel, and s8 activations).  The ONNX
# checker must accept the file when /usr/bin/python3 has onnx.  Skipped
# (77) without node or onnxruntime-node.
weir="$1"
srcdir="$2"
ort="${WEIR_BENCH_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weir-bench/ort}/node_modules/onnxruntime-node"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$ort" ]; then
  echo "node or $ort missing: skipping"
  exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
m="$srcdir/samples/models/digits_cnn"
status=0
for variant in "u8" "per-channel:--per-channel" "s8:--activations=s8"; do
  name=${variant%%:*}
  opt=""
  [ "$name" != "$variant" ] && opt=${variant#*:}
  "$weir" quantize "$m.onnx" --calibrate "$m/input_0.npy" $opt \
    --ranges "$dir/$name.ranges" --onnx "$dir/$name.onnx" \
    -o "$dir/$name.json" >/dev/null || exit 1
  "$weir" run "$dir/$name.json" --input "input=$m/input_0.npy" \
    --output "output=$dir/$name.out.npy" >/dev/null || exit 1
  if /usr/bin/python3 -c "import onnx" >/dev/null 2>&1; then
    /usr/bin/python3 -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" \
      "$dir/$name.onnx" || { echo "$name: the ONNX checker refuses the file"; exit 1; }
  fi
  res=$(node "$srcdir/tests/onnx/quantize-ort.cjs" "$ort" "$dir/$name.onnx" \
    "$m/input_0.npy" "$dir/$name.out.npy")
  case "$res" in
    skip*) echo "$res"; exit 77 ;;
    max_abs_diff*) ;;
    *) echo "$name: $res"; exit 1 ;;
  esac
  diff=${res#max_abs_diff }
  # one step of the output: its range (widened to 0) over 255
  step=$(tr ',' '\n' < "$dir/$name.ranges" | awk -F'[=:]' '$1 == "output" {
    lo = $2 < 0 ? $2 : 0; hi = $3 > 0 ? $3 : 0; printf "%.9g", (hi - lo) / 255 }')
  if awk -v d="$diff" -v s="$step" 'BEGIN { exit !(d <= s) }'; then
    echo "$name: ONNX Runtime vs Weir: max abs diff $diff <= one step $step: ok"
  else
    echo "$name: ONNX Runtime vs Weir: max abs diff $diff > one step $step: FAILED"
    status=1
  fi
done
exit $status
