#!/bin/sh
# rnn-bench.sh — RNN, GRU and LSTM (ONNX exports of torch.nn.RNN/GRU/LSTM,
# one layer, batch_first = False) run by Weir's compiled loop-over-time
# expansion (weir bench, -O2) and by PyTorch (eager, same thread count).
#
#   tests/bench/rnn-bench.sh [BUILD_DIR] [T B I H] [THREADS]
#
# Defaults: build, T = 32, B = 8, I = 64, H = 128, 1 thread.  Prints one
# line per cell: Weir's and PyTorch's median time per run.  Needs
# /usr/bin/python3 with torch and onnx.  Say the machine's load (uptime)
# next to any figure you quote.
set -eu
BUILD=${1:-build}
T=${2:-32}
B=${3:-8}
I=${4:-64}
H=${5:-128}
THREADS=${6:-1}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
export OMP_NUM_THREADS=$THREADS
/usr/bin/python3 - "$DIR" "$T" "$B" "$I" "$H" "$THREADS" <<'EOF'
import sys, time, statistics, torch
d, T, B, I, H, threads = sys.argv[1], *map(int, sys.argv[2:])
torch.set_num_threads(threads)
torch.manual_seed(0)
x = torch.randn(T, B, I)
for name, cls in (("rnn", torch.nn.RNN), ("gru", torch.nn.GRU), ("lstm", torch.nn.LSTM)):
    m = cls(I, H).eval()
    torch.onnx.export(m, (x,), f"{d}/{name}.onnx", opset_version=14,
                      input_names=["x"], output_names=["y", "h"] if name != "lstm" else ["y", "h", "c"])
    with torch.no_grad():
        for _ in range(3):
            m(x)
        ts = []
        for _ in range(10):
            t0 = time.perf_counter(); m(x); ts.append(time.perf_counter() - t0)
    print(f"{name} torch {statistics.median(ts) * 1e3:.3f} ms")
EOF
for cell in rnn gru lstm; do
  printf '%s weir ' "$cell"
  "$BUILD/weir" bench "$DIR/$cell.onnx" --threads "$THREADS" --reps 10 \
      --cache-dir "$DIR/cache" 2>&1 | grep -E 'median|run' | head -3 | tr '\n' ' '
  echo
done
