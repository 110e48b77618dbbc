#!/usr/bin/python3
"""conv-grad-calls.py — time each convolution-gradient call of a program.

    tests/bench/conv-grad-calls.py GEN.c OUT.c
    gcc -O3 -march=native -fopenmp -w OUT.c -o calls -lm
    OMP_NUM_THREADS=1 ./calls [REPS [SUBSTRING]]

GEN.c is the C that `weir codegen PROGRAM.json -o DIR` wrote for a
training program.  OUT.c includes it and calls every distinct
weir_wconv2d_grad_{taps,input,filter}_<id> call of it (same sizes, same
scratch layout as the program's) on its own buffers (fixed
pseudo-random dY, X and W), REPS times after two warm-up calls, and
prints per call the node's label, the helper, the minimum process CPU
time and the minimum wall time in ms, and a checksum of the output's
first 65536 values (equal checksums across two builds' code mean the
same results on these inputs).  SUBSTRING keeps the calls whose label or
helper contains it.  CPU time does not count the time the process waits
for a core, so builds compare under load; at N threads it is the sum of
the threads'.  (docs/performance.md, "The convolution gradients'
operands and slices (taps17)".)
"""
import os
import re
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src = open(sys.argv[1]).read()
    lines = src.split("\n")
    calls, seen = [], set()
    for i, line in enumerate(lines):
        m = re.match(r"\s*status \|= (weir_wconv2d_grad_(?:taps|input|filter)_f32)"
                     r"\((.*)\);$", line)
        if not m:
            continue
        fn, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
        key = fn + ",".join(args[3:-1])
        if key in seen:
            continue
        seen.add(key)
        lab = re.search(r"'([^']*)'", lines[i - 1])
        calls.append((fn, lab.group(1) if lab else "?", ", ".join(args[3:-1])))
    if not calls:
        sys.exit("%s: no convolution-gradient calls in f32" % sys.argv[1])
    out = [
        "#include \"%s\"" % os.path.abspath(sys.argv[1]),
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <time.h>",
        "static double now(clockid_t id) {",
        "  struct timespec t;",
        "  clock_gettime(id, &t);",
        "  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;",
        "}",
        "int main(int argc, char **argv) {",
        "  const int reps = argc > 1 ? atoi(argv[1]) : 20;",
        "  const size_t n = (size_t)32 << 20;",
        "  float *dy = aligned_alloc(64, n * 4), *x = aligned_alloc(64, n * 4);",
        "  float *w = aligned_alloc(64, n * 4);",
        "  void *ws = aligned_alloc(64, (size_t)256 << 20);",
        "  for (size_t i = 0; i < n; i++) {",
        "    dy[i] = (float)((i * 7919) % 1009) / 1009.0f - 0.5f;",
        "    x[i] = (float)((i * 104729) % 997) / 997.0f - 0.5f;",
        "    w[i] = dy[i];",
        "  }",
    ]
    for fn, lab, mid in calls:
        out += [
            '  if (argc < 3 || strstr("%s %s", argv[2])) {' % (lab, fn),
            "    double bc = 1e30, bw = 1e30, s = 0;",
            "    for (int r = 0; r < reps + 2; r++) {",
            "      const double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);",
            "      if (%s(dy, x, w, %s, ws)) { puts(\"status\"); return 1; }" % (fn, mid),
            "      const double c1 = now(CLOCK_PROCESS_CPUTIME_ID), w1 = now(CLOCK_MONOTONIC);",
            "      if (r >= 2 && c1 - c0 < bc) bc = c1 - c0;",
            "      if (r >= 2 && w1 - w0 < bw) bw = w1 - w0;",
            "    }",
            "    for (size_t i = 0; i < ((size_t)1 << 16); i++) s += w[i] < 0 ? -w[i] : w[i];",
            '    printf("%%-40s %%-28s cpu %%8.3f ms wall %%8.3f ms sum %%.6g\\n", "%s", "%s", bc * 1e3, bw * 1e3, s);' % (lab, fn),
            "  }",
        ]
    out += ["  return 0;", "}"]
    open(sys.argv[2], "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
