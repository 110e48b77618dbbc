#!/bin/sh
# depthwise-layers.sh — Weir's depthwise kernels on the depthwise layers of
# MobileNetV2 and EfficientNet-B0 (docs/performance.md, "Depthwise and
# global pooling kernels (mobile14e)" and "The plane depthwise kernel
# (mobile14l)"), interleaved in one process.
#
#   tests/bench/depthwise-layers.sh [BUILD_DIR] [--reps N] [--threads N] [--cold]
#                                   [--act N] [--only LIST]
#
# BUILD_DIR/weir generates the helper text (`weir optimize -O2` and
# `weir codegen` of a one-node model: depthwise Conv + SiLU, exported with
# /usr/bin/python3's onnx); a driver compiled with -O3 -march=native
# -fopenmp calls weir_dwconv2d_f32 per layer with vl = the row kernel's own
# width choice, vl = 1 (the channel-blocked kernel) and vl = 0 (the
# default: the plane kernel on AVX-512 where it applies, else the
# channel-blocked one), alternately, and prints the best of N of each
# (thread CPU time at one thread, wall time otherwise) and the ratio
# channel-blocked / default, after checking that all agree with a scalar
# loop nest (largest difference printed).  --cold
# writes 64 MiB of other data before each timed call, then the input again
# (as the layer before would): the weights and the output are out of the
# caches, as in a network whose activations and weights exceed them, and
# the input is in them (docs/performance.md, mobile14i).  --act: the
# epilogue's activation code (weir_act_apply: 3 SiLU, the default, as
# EfficientNet-B0; 1 clip to [0, 6], ReLU6 as MobileNetV2; 0 none).
# --only: a comma-separated list of layers C/H/K/S (channels, input size,
# kernel, stride; e.g. 576/14/3/2,960/7/3/1) to time instead of all.
set -eu
build=build
case ${1:-} in --*|'') ;; *) build=$1; shift ;; esac
reps=30; threads=1; cold=0; act=3; only=
while [ $# -gt 0 ]; do
  case $1 in
    --cold) cold=1; shift ;;
    --act) act=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "depthwise-layers.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
weir=$(cd "$build" && pwd)/weir
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
/usr/bin/python3 - "$d/dw.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
C = 8
w = numpy_helper.from_array(np.ones((C, 1, 3, 3), np.float32), "w")
b = numpy_helper.from_array(np.zeros(C, np.float32), "b")
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=C,
                          pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
         helper.make_node("Sigmoid", ["c"], ["s"]),
         helper.make_node("Mul", ["c", "s"], ["y"])]
g = helper.make_graph(
    nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 9, 9])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 9, 9])], [w, b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
"$weir" optimize "$d/dw.onnx" -O2 -o "$d/dw.json" >/dev/null
"$weir" codegen "$d/dw.json" -o "$d" >/dev/null
# the unit's helpers: everything up to the end of weir_dwconv2d_f32
unit=$(ls "$d"/*.c | head -1)
awk '/^static void weir_dwconv2d_f32/ {seen = 1} {print} seen && /^}$/ {exit}' \
  "$unit" | grep -v '_run(void \*const\|const void \*const consts\[\], void \*workspace);\|_abi_version(void);' > "$d/helper.h" || true
[ -s "$d/helper.h" ] || { echo "depthwise-layers.sh: no helper text" >&2; exit 1; }
cat > "$d/main.c" <<'C'
#include "helper.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(int cpu) {
  struct timespec t;
  clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
  /* channels, size, kernel, stride: MobileNetV2's and EfficientNet-B0's */
  static const int layers[][4] = {
      {32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1}, {144, 56, 3, 2},
      {144, 56, 5, 2}, {192, 28, 3, 1}, {192, 28, 3, 2}, {240, 28, 5, 1},
      {240, 28, 3, 2}, {384, 14, 3, 1}, {480, 14, 3, 1}, {480, 14, 5, 1},
      {576, 14, 3, 1}, {576, 14, 3, 2}, {672, 14, 5, 1}, {672, 14, 5, 2},
      {960, 7, 3, 1},  {1152, 7, 5, 1}, {1152, 7, 3, 1}};
  const int reps = atoi(argv[1]), cpu = atoi(argv[2]) == 1, vlw = atoi(argv[3]),
            cold = atoi(argv[4]), act = atoi(argv[5]);
  const char *only = argc > 6 ? argv[6] : "";
  const size_t njunk = (size_t)16 << 20;
  float *junk = cold ? calloc(njunk, sizeof(float)) : NULL;
  double tot[3] = {0, 0, 0};
  printf("| C x H x W | kernel | stride | row kernel us | channel-blocked us "
         "| default us | blocked / default | max diff |\n"
         "|---|---|---|---|---|---|---|---|\n");
  for (unsigned t = 0; t < sizeof layers / sizeof layers[0]; t++) {
    const int64_t c = layers[t][0], h = layers[t][1], k = layers[t][2],
                  s = layers[t][3], p = k / 2, o = (h + 2 * p - k) / s + 1;
    if (*only) {
      char key[64];
      snprintf(key, sizeof key, ",%ld/%ld/%ld/%ld,", (long)c, (long)h,
               (long)k, (long)s);
      char list[1024];
      snprintf(list, sizeof list, ",%s,", only);
      if (!strstr(list, key))
        continue;
    }
    float *x = malloc(4 * c * h * h), *w = malloc(4 * c * k * k),
          *b = malloc(4 * c), *y = malloc(4 * c * o * o),
          *r = malloc(4 * c * o * o);
    for (int64_t i = 0; i < c * h * h; i++)
      x[i] = (float)((i * 7919) % 1000) / 500.0f - 1;
    for (int64_t i = 0; i < c * k * k; i++)
      w[i] = (float)((i * 31) % 17) / 17.0f - 0.5f;
    for (int64_t i = 0; i < c; i++)
      b[i] = 0.01f * (float)(i % 5);
    /* the row kernel's choice: the width computing fewer lanes */
    const int vl = (o + vlw / 2 - 1) / (vlw / 2) * (vlw / 2) <
                           (o + vlw - 1) / vlw * vlw
                       ? vlw / 2
                       : vlw;
    const int vls[3] = {vl, 1, 0};
    double best[3] = {1e9, 1e9, 1e9}, err = 0;
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < o; i++)
        for (int64_t j = 0; j < o; j++) {
          float a = b[ch];
          for (int64_t u = 0; u < k; u++)
            for (int64_t v = 0; v < k; v++) {
              int64_t ih = i * s + u - p, iw = j * s + v - p;
              if (ih >= 0 && ih < h && iw >= 0 && iw < h)
                a += w[(ch * k + u) * k + v] * x[(ch * h + ih) * h + iw];
            }
          r[(ch * o + i) * o + j] = act == 3   ? a / (1 + expf(-a))
                                    : act == 1 ? fminf(fmaxf(a, 0), 6)
                                               : a;
        }
    for (int q = 0; q < reps; q++)
      for (int m = 0; m < 3; m++) {
        if (cold) {
          for (size_t i = 0; i < njunk; i += 16)
            junk[i] += 1.0f;
          for (int64_t i = 0; i < c * h * h; i++)
            x[i] = (float)((i * 7919) % 1000) / 500.0f - 1;
        }
        double t0 = now(cpu);
        weir_dwconv2d_f32(x, w, b, y, NULL, 1, c, h, h, k, k, o, o, s, s, 1, 1,
                          p, p, act, 0, 6, vls[m]);
        double dt = now(cpu) - t0;
        best[m] = dt < best[m] ? dt : best[m];
        for (int64_t i = 0; q == 0 && i < c * o * o; i++)
          err = fabs(y[i] - r[i]) > err ? fabs(y[i] - r[i]) : err;
      }
    for (int m = 0; m < 3; m++)
      tot[m] += best[m];
    printf("| %ld x %ld x %ld | %ldx%ld | %ld | %.1f | %.1f | %.1f | %.2f | "
           "%.1e |\n",
           (long)c, (long)h, (long)h, (long)k, (long)k, (long)s,
           best[0] * 1e6, best[1] * 1e6, best[2] * 1e6, best[1] / best[2], err);
    free(x), free(w), free(b), free(y), free(r);
  }
  printf("| all | | | %.1f | %.1f | %.1f | %.2f | |\n", tot[0] * 1e6,
         tot[1] * 1e6, tot[2] * 1e6, tot[1] / tot[2]);
  free(junk);
  return 0;
}
C
vlw=$(grep -o 'vectors of [0-9]* channels' "$d/helper.h" | head -1 | grep -o '[0-9]*')
${CC:-cc} -O3 -march=native -fopenmp -I"$d" "$d/main.c" -o "$d/bench" -lm
echo "depthwise-layers.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $threads thread(s), best of $reps, vector width $vlw, activation $act$( [ $cold = 1 ] && echo ', cold caches')"
echo "uptime:$(uptime)"
OMP_NUM_THREADS=$threads "$d/bench" "$reps" "$threads" "$vlw" "$cold" "$act" "$only"
