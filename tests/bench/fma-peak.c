/* fma-peak.c — the single-precision FMA peak of this machine, for
 * tests/bench/realsize.sh (docs/performance.md).
 *
 *   fma-peak [--threads N] [--seconds S]
 *
 * Each of N OpenMP threads runs a loop of independent fused multiply-adds
 * on ACC vector accumulators (GCC vector extensions at the widest vector
 * the compiler targets: built with -march=native, AVX-512 gives 16 floats,
 * AVX2 8, otherwise 4). ACC independent chains hide the FMA latency on
 * two FMA ports. The best of 8 trials (each about S/8 seconds on an idle
 * core) is printed as
 *
 *   peak N THREADS GFLOPS WIDTH
 *
 * (two FLOPs per lane per FMA). It is a measurement of the cores, not of
 * memory: nothing is loaded in the loop.  meson builds it with
 * -ffp-contract=fast: under the project's -std=c11 GCC would otherwise keep
 * `acc * a + b` as a multiply and an add and measure half the peak.  Each
 * thread's rate is its FLOPs over its own CPU time (CLOCK_THREAD_CPUTIME_ID)
 * and GFLOPS is the sum over the threads: the peak of N cores that run nothing
 * else, also on a machine shared with other jobs (whose time slices would
 * divide a wall-clock rate).  The wall-clock rate of the same trial is printed
 * after it as wall=G.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX512F__)
#define WIDTH 16
#elif defined(__AVX__)
#define WIDTH 8
#else
#define WIDTH 4
#endif
#define ACC 16

typedef float vec __attribute__((vector_size(WIDTH * sizeof(float))));

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* iters rounds of ACC FMAs; returns a value that depends on all of them */
static float fma_loop(int64_t iters, float seed) {
  vec acc[ACC], a, b;
  for (int l = 0; l < WIDTH; l++) {
    a[l] = 0.999999f;
    b[l] = 1e-6f * seed;
  }
  for (int j = 0; j < ACC; j++)
    for (int l = 0; l < WIDTH; l++)
      acc[j][l] = (float)(j + l) * seed;
  for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 16
    for (int j = 0; j < ACC; j++)
      acc[j] = acc[j] * a + b;
    /* keeps the accumulators in registers, opaque to the optimizer */
    __asm__ volatile("" : "+x"(a));
  }
  float s = 0;
  for (int j = 0; j < ACC; j++)
    for (int l = 0; l < WIDTH; l++)
      s += acc[j][l];
  return s;
}

int main(int argc, char **argv) {
  int threads = 1;
  double seconds = 2.0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: fma-peak [--threads N] [--seconds S]\n");
      return 2;
    }
  }
  if (threads < 1 || seconds <= 0) {
    fprintf(stderr, "fma-peak: --threads N >= 1 and --seconds S > 0\n");
    return 2;
  }
#ifdef _OPENMP
  omp_set_num_threads(threads);
#else
  threads = 1;
#endif
  /* calibrate: iterations for about seconds / 8 per trial */
  int64_t iters = 1 << 16;
  for (;;) {
    double t0 = now();
    volatile float sink = fma_loop(iters, 1.0f);
    (void)sink;
    double t = now() - t0;
    if (t > seconds / 64 || iters > ((int64_t)1 << 40))
      break;
    iters *= 2;
  }
  iters *= 8;
  double best = 0, best_wall = 0;
  float sink = 0;
  const double flops = 2.0 * WIDTH * ACC * (double)iters;
  for (int trial = 0; trial < 8; trial++) {
    double rate = 0; /* sum over threads of FLOPs / thread CPU time */
    double t0 = now();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : sink, rate)
#endif
    {
      double c0 = cpu_now();
      sink += fma_loop(iters, 1.0f + (float)trial);
      rate += flops / (cpu_now() - c0) / 1e9;
    }
    double wall = flops * threads / (now() - t0) / 1e9;
    if (rate > best)
      best = rate;
    if (wall > best_wall)
      best_wall = wall;
  }
  printf("peak %d %.1f %d wall=%.1f\n", threads, best, WIDTH, best_wall);
  return sink == 12345.0f; /* never: keeps sink alive */
}
