#!/bin/sh
# small-architectures.sh WEIR SRCDIR: exports small variants of ViT, Swin
# and DeepLabV3 (tests/onnx/small-architectures.py, random weights) with
# PyTorch into a temporary directory and checks that `weir run` imports,
# compiles and runs each one and matches PyTorch's output (rtol 1e-4,
# atol 1e-5).  Skipped (77) when /usr/bin/python3 (or $WEIR_TORCH_PYTHON)
# cannot import torch, torchvision and onnx.  The C compiler runs at -O0
# to keep the test short; the pipeline is the default -O2.
weir="$1"
srcdir="$2"
python="${WEIR_TORCH_PYTHON:-/usr/bin/python3}"
if ! "$python" -c "import torch, torchvision, onnx" >/dev/null 2>&1; then
  echo "$python cannot import torch, torchvision and onnx: skipping"
  exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$python" "$srcdir/tests/onnx/small-architectures.py" "$dir" || exit 1
unset WEIR_CACHE_DIR
status=0
for m in vit swin deeplab; do
  if "$weir" run "$dir/$m.onnx" --input "input=$dir/$m-input.npy" \
    --expect "output=$dir/$m-output.npy" --no-cache \
    --cflags "-O0 -fPIC -shared -fopenmp"; then
    echo "$m: ok"
  else
    echo "$m: FAILED"
    status=1
  fi
done
exit $status
