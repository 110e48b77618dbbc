/* omp-regions.c — what one OpenMP parallel region costs on this machine:
 * the start and end of a region of two (or N) threads around a small
 * amount of work, as a generated kernel runs one per native call and per
 * element-wise map (docs/performance.md, "Two threads on small maps").
 *
 *   cc -O2 -fopenmp tests/bench/omp-regions.c -o /tmp/omp-regions
 *   OMP_WAIT_POLICY=PASSIVE /tmp/omp-regions [REGIONS] [WORK_NS] [GAP_NS]
 *
 * Runs REGIONS (default 2000) regions, each splitting a loop of about
 * WORK_NS nanoseconds of one thread's arithmetic (default 20000) over the
 * threads, and the same loops without a region on one thread; prints the
 * median over 7 repetitions of the time per region with and without the
 * region, and their difference (the region's cost, wake-ups included).
 * With GAP_NS (default 0), the calling thread also does about GAP_NS
 * nanoseconds of work alone between two regions (in both loops), as a
 * generated kernel does between its calls: the other threads wait that
 * long, spinning or asleep, for the next region (docs/performance.md,
 * "Waking the second thread (mob20)").
 * Not a test: it asserts nothing.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* n dependent multiply-adds per element of x (not inlined: the same code
 * with and without a region) */
__attribute__((noinline)) static float work(float *x, long lo, long hi,
                                            long n) {
  float s = 0;
  for (long i = lo; i < hi; i++) {
    float v = x[i];
    for (long k = 0; k < n; k++)
      v = v * 0.999f + 0.001f;
    x[i] = v;
    s += v;
  }
  return s;
}

int main(int argc, char **argv) {
  long regions = argc > 1 ? atol(argv[1]) : 2000;
  long work_ns = argc > 2 ? atol(argv[2]) : 20000;
  long gap_ns = argc > 3 ? atol(argv[3]) : 0;
  enum { N = 64, REPS = 7 };
  float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = y[i] = (float)i;
  /* calibrate: multiply-adds per element for work_ns (gap_ns) on one
   * thread; the minimum of 5 timings of each candidate */
  long inner = 0, gap = 0;
  for (long n = 16;; n += n / 4 + 1) {
    double t = 1e9;
    for (int k = 0; k < 5; k++) {
      double t0 = now();
      work(x, 0, N, n);
      double d = now() - t0;
      t = d < t ? d : t;
    }
    if (inner == 0 && t * 1e9 >= work_ns)
      inner = n;
    if (gap == 0 && gap_ns > 0 && t * 1e9 >= gap_ns)
      gap = n;
    if ((inner && (gap || gap_ns <= 0)) || n > (1L << 30)) {
      inner = inner ? inner : n;
      gap = gap || gap_ns <= 0 ? gap : n;
      break;
    }
  }
  double t_gap = 0;
  double with[REPS], without[REPS];
  volatile float sink = 0;
  for (int r = 0; r < REPS; r++) {
    double t0 = now();
    for (long i = 0; i < regions; i++) {
      float s = 0;
#pragma omp parallel reduction(+ : s)
      {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        s += work(x, N * t / nt, N * (t + 1) / nt, inner);
      }
      sink += s;
      if (gap)
        sink += work(y, 0, N, gap);
    }
    with[r] = (now() - t0) / regions;
    t0 = now();
    for (long i = 0; i < regions; i++)
      sink += work(x, 0, N, inner);
    without[r] = (now() - t0) / regions;
    if (gap) {
      t0 = now();
      for (long i = 0; i < regions; i++)
        sink += work(y, 0, N, gap);
      double g = (now() - t0) / regions;
      t_gap = r == 0 || g < t_gap ? g : t_gap;
    }
  }
  qsort(with, REPS, sizeof *with, cmp);
  qsort(without, REPS, sizeof *without, cmp);
  int nt = omp_get_max_threads();
  printf("threads %d, %ld regions, work %.1f us on one thread, gap %.1f us: "
         "%.1f us per region and gap (one thread without a region %.1f us; "
         "ideal split %.1f us): region cost %.1f us\n",
         nt, regions, without[REPS / 2] * 1e6, t_gap * 1e6,
         with[REPS / 2] * 1e6, without[REPS / 2] * 1e6,
         without[REPS / 2] * 1e6 / nt,
         (with[REPS / 2] - without[REPS / 2] / nt - t_gap) * 1e6);
  (void)sink;
  return 0;
}
