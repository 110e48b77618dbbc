#!/bin/sh
# quant-digits.sh — the int8 and bf16 figures of docs/precision.md: the
# digits CNN trained as docs/training.md's quick start does, quantized with
# `weir quantize` (int8, and --precision bf16), f32 against int8 and bf16
# on the held-out split of `weir train`:
# accuracy, bytes (weir info: the program as it is, and as compiled at
# -O2) and time (weir bench at the default level, f32 and int8 alternated).
#
#   tests/bench/quant-digits.sh [BUILD_DIR] [OUT_DIR] [REPS]
#
# Defaults: build, /tmp/weir-quant-digits, 20.  The trained model and the
# data are kept in OUT_DIR and reused by later runs.  Needs /usr/bin/python3
# with NumPy (the split and the accuracy) and Debian's python3-sklearn data.
set -eu
BUILD=${1:-build}
OUT=${2:-/tmp/weir-quant-digits}
REPS=${3:-20}
HERE=$(dirname "$0")
W="$BUILD/weir"
PY=/usr/bin/python3
D=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
mkdir -p "$OUT"
if [ ! -f "$OUT/digits_cnn.trained.onnx" ]; then
  "$W" train "$HERE/../../samples/models/digits_cnn.onnx" --data "$D" \
    --scale 1/16 --epochs 8 --optimizer adam --lr 0.01 --threads 1 \
    -o "$OUT/digits_cnn.trained.onnx" | tail -1
fi
"$PY" "$HERE/quant-digits.py" split "$BUILD/libweir.so" "$OUT/data"
"$W" quantize "$OUT/digits_cnn.trained.onnx" --calibrate "$OUT/data/calib.npy" \
  --ranges "$OUT/ranges.txt" -o "$OUT/int8.json"
"$W" quantize "$OUT/digits_cnn.trained.onnx" --calibrate "$OUT/data/calib.npy" \
  --per-channel -o "$OUT/int8-pc.json" > /dev/null
"$W" quantize "$OUT/digits_cnn.trained.onnx" --precision bf16 \
  -o "$OUT/bf16.json" > /dev/null
N=$("$PY" -c "import numpy; print(numpy.load('$OUT/data/val_y.npy').shape[0])")
echo "== held-out accuracy ($N samples)"
for m in f32:digits_cnn.trained.onnx int8:int8.json int8-per-channel:int8-pc.json \
    bf16:bf16.json; do
  name=${m%%:*}; file=${m#*:}
  "$W" run "$OUT/$file" --input input="$OUT/data/val_x.npy" \
    --output output="$OUT/$name.logits.npy" > /dev/null
  echo "$name $("$PY" "$HERE/quant-digits.py" accuracy "$OUT/$name.logits.npy" "$OUT/data/val_y.npy")%"
done
echo "== bytes (weir info -D batch=$N: modeled traffic, logical volume)"
for m in f32:digits_cnn.trained.onnx int8:int8.json bf16:bf16.json; do
  name=${m%%:*}; file=${m#*:}
  echo "$name as-is:       $("$W" info "$OUT/$file" -D batch=$N | grep '^  total')"
  echo "$name -O2 compiled: $("$W" info "$OUT/$file" -D batch=$N -O2 --count compiled | grep '^  total')"
done
echo "== time (weir bench -D batch=$N --reps $REPS, default level, alternated; $(uptime))"
for i in 1 2 3; do
  for m in f32:digits_cnn.trained.onnx int8:int8.json bf16:bf16.json; do
    name=${m%%:*}; file=${m#*:}
    echo "$name $("$W" bench "$OUT/$file" -D batch=$N --reps "$REPS" | grep '^time')"
  done
done
echo "($(uptime))"
