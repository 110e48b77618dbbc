#!/bin/sh
# prune-digits.sh — issue 18's pruning figure (docs/precision.md,
# "Pruning"): the digits MLP trained dense, pruned to a sparsity with
# `weir prune`, evaluated as pruned, fine-tuned with `weir train` (which
# keeps the zeros `weir prune` recorded), and, as a control, fine-tuned
# without the mask (--keep-zeros '^$').  Prints the held-out accuracy of
# each and the zeros left in the fine-tuned weights.
#
#   tests/bench/prune-digits.sh [BUILD_DIR] [SPARSITY] [FT_EPOCHS]
#
# BUILD_DIR defaults to ./build, SPARSITY to 0.8, FT_EPOCHS to 5.  Needs
# Debian's python3-sklearn (the digits data set) and /usr/bin/python3 with
# onnx (to count zeros).  Everything runs with --seed 1 and one thread, so
# the held-out split and the figures are the same on every run.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
sparsity=${2:-0.8}
ft_epochs=${3:-5}
D=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common="--data $D --scale 1/16 --batch 32 --optimizer adam --lr 0.01
  --steps-per-call 4 --seed 1 --threads 1"

accuracy() { # the last line's held-out accuracy
  sed -n 's/^trained .*held-out accuracy \([0-9.]*%\).*/\1/p' | tail -1
}

# shellcheck disable=SC2086
dense=$("$build/weir" train "$src/samples/models/digits_mlp.onnx" $common \
  --epochs 10 -o "$tmp/dense.onnx" | accuracy)
"$build/weir" prune "$tmp/dense.onnx" --sparsity "$sparsity" \
  -o "$tmp/pruned.onnx" >"$tmp/prune.txt"
# shellcheck disable=SC2086
pruned=$("$build/weir" train "$tmp/pruned.onnx" $common --epochs 0 \
  -o "$tmp/pruned-eval.onnx" | accuracy)
# shellcheck disable=SC2086
tuned=$("$build/weir" train "$tmp/pruned.onnx" $common \
  --epochs "$ft_epochs" -o "$tmp/tuned.onnx" | accuracy)
# shellcheck disable=SC2086
free=$("$build/weir" train "$tmp/pruned.onnx" $common \
  --epochs "$ft_epochs" --keep-zeros '^$' -o "$tmp/free.onnx" | accuracy)

zeros() {
  /usr/bin/python3 - "$1" <<'EOF'
import sys
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
out = []
for t in m.graph.initializer:
    if t.name.endswith("weight"):
        a = numpy_helper.to_array(t)
        out.append("%s %d/%d zero (%.1f%%)" % (t.name, (a == 0).sum(), a.size,
                                              100.0 * (a == 0).mean()))
print(", ".join(out))
EOF
}

echo "digits MLP, sparsity $sparsity per weight tensor (seed 1, 359 held out)"
echo "  dense (10 epochs):                     $dense"
echo "  pruned, not fine-tuned:                $pruned"
echo "  pruned + fine-tuned ($ft_epochs epochs, mask):   $tuned   $(zeros "$tmp/tuned.onnx")"
echo "  pruned + fine-tuned, no mask (control): $free   $(zeros "$tmp/free.onnx")"
