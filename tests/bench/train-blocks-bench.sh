#!/bin/sh
# train-blocks-bench.sh — the cost of the training-mode building blocks
# (docs/training.md, "Training-mode building blocks") on the MLP and the
# residual CNN of samples/models: one training step (K = 1, SGD, batch as
# exported), `weir bench -t T` median, for the plain program and with a
# warm-up + cosine schedule, gradient clipping, both, and --accumulate 2
# (two micro-batches per update: compare with twice the plain step).
# Variants are measured alternately, REPS rounds, so that load changes hit
# them alike.  Usage: tests/bench/train-blocks-bench.sh [BUILD] [T] [REPS]
set -eu
B=${1:-build}
T=${2:-2}
REPS=${3:-3}
W=$B/weir
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
for m in mlp resnet; do
  M=samples/models/$m.onnx
  C="--loss softmax-cross-entropy --optimizer sgd --lr 0.01 --steps 1"
  $W train-graph $M $C -o $D/$m-plain.json >/dev/null
  $W train-graph $M $C --lr-schedule cosine --warmup-steps 10 \
    --total-steps 1000 -o $D/$m-sched.json >/dev/null
  $W train-graph $M $C --clip-grad-norm 1 -o $D/$m-clip.json >/dev/null
  $W train-graph $M $C --lr-schedule cosine --warmup-steps 10 \
    --total-steps 1000 --clip-grad-norm 1 -o $D/$m-both.json >/dev/null
  $W train-graph $M $C --accumulate 2 -o $D/$m-acc2.json >/dev/null
done
echo "load: $(uptime)"
for r in $(seq 1 "$REPS"); do
  for m in mlp resnet; do
    for v in plain sched clip both acc2; do
      t=$($W bench $D/$m-$v.json -t "$T" -r 20 -D batch=4 2>&1 |
        sed -n 's/.*median[^0-9]*\([0-9.]* [mun]*s\).*/\1/p' | head -1)
      echo "round $r  $m  $v  median $t"
    done
  done
done
echo "load: $(uptime)"
