#!/bin/sh
# mpi-train-bench.sh — the figures of docs/distributed.md ("Measured"):
# time per training step and time in communication per step, 2 ranks x 1
# thread against 1 rank x 2 threads (and 1 x 1) at the same global batch,
# blocking against overlapped buckets, on the digits MLP and on a
# CIFAR-size CNN (tests/bench/gen-cifar-cnn.py), then the payload of
# MPI_Allreduce and whether MPI_Iallreduce progresses without MPI calls.
#
#   tests/bench/mpi-train-bench.sh [BUILD_DIR] [ROUNDS]
#
# BUILD_DIR defaults to ./build (with tests/bench/mpi-train-bench); each
# configuration runs ROUNDS times (default 3), the configurations
# alternating within a round so that a changing load hits them alike.
# `uptime` is printed before every round.  The model's ring-allreduce
# projection (10 Gbit/s Ethernet: 1.25 GB/s, 10 us per message) follows
# each 2-rank line.  As root, set OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
rounds=${2:-3}
bench="$build/tests/bench/mpi-train-bench"
mpirun="mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$src/tests/bench/gen-cifar-cnn.py" "$tmp/cifar_cnn.onnx"

run() { # model global-batch extra-options...
  model=$1 global=$2
  shift 2
  half=$((global / 2))
  OMP_NUM_THREADS=1 "$bench" --threads 1 --batch "$global" "$@" "$model"
  OMP_NUM_THREADS=2 "$bench" --threads 2 --batch "$global" "$@" "$model"
  $mpirun -np 2 -x OMP_NUM_THREADS=1 "$bench" --threads 1 --batch "$half" \
    --no-overlap "$@" "$model"
  $mpirun -np 2 -x OMP_NUM_THREADS=1 "$bench" --threads 1 --batch "$half" \
    "$@" "$model"
}

for r in $(seq 1 "$rounds"); do
  echo "# round $r: $(uptime)"
  run "$src/samples/models/digits_mlp.onnx" 32 --calls 50 --steps-per-call 4
  run "$tmp/cifar_cnn.onnx" 32 --calls 8 --warmup 2 --steps-per-call 1 \
    --bucket-mb 0.25
done
echo "# $(uptime)"
$mpirun -np 2 "$build/tests/bench/mpi-overlap" 19244 94340 524288 4194304
