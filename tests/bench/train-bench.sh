#!/bin/sh
# train-bench.sh — training-step time of every sample model: Weir
# untransformed, with the inspection recipe (expand-convs-first.json: every
# library node as loops), with the training recipe (train-fast.json), each
# with its peak transient memory; then PyTorch on the CPU with the same
# number of threads (docs/performance.md, "Training").
#
#   tests/bench/train-bench.sh [BUILD_DIR] [THREADS] [REPS]
#
# BUILD_DIR defaults to ./build (it must contain tests/bench-train);
# THREADS to 1, REPS to 50.  The compile cache is the user's.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
threads=${2:-1}
reps=${3:-50}
names="digits_mlp mlp digits_cnn lenet resnet transformer"
models=""
for n in $names; do models="$models $src/samples/models/$n.onnx"; done
"$build/tests/bench-train" --threads "$threads" --reps "$reps" \
  --recipe "$src/samples/recipes/expand-convs-first.json" \
  --recipe "$src/samples/recipes/train-fast.json" $models
echo
/usr/bin/python3 "$src/tests/bench/train-step-torch.py" --threads "$threads" \
  --reps "$reps" $names
