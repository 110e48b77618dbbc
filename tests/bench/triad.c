/* triad.c — the machine's state as the benchmarks see it: the best
 * bandwidth of an OpenMP triad (b = 1.5 a + b) at several working-set
 * sizes, on N threads (docs/performance.md, "Two states of this machine").
 *
 *   build/tests/bench/triad [--threads N]
 *   -> "triad 2 threads: 256 KiB 512.3 GB/s, 4 MiB ..., 128 MiB 64.1 GB/s"
 *
 * The smallest set measures the parallel region as much as the caches:
 * 768 KB of traffic take about 2 us, the order of a fork and a join, so
 * it moves with the cost of synchronizing the threads; the largest set
 * is memory bandwidth.  On the virtual machine of docs/performance.md
 * the two figures move in opposite directions between its two states,
 * which is how realsize.sh labels its 2-thread rounds.  No timing is
 * asserted anywhere: this prints what it measured. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The best of reps triads over n floats on threads threads, in GB/s
 * (three streams: two reads, one write). */
static double triad(size_t n, int reps, int threads) {
  float *a = aligned_alloc(64, n * sizeof(float));
  float *b = aligned_alloc(64, n * sizeof(float));
  if (!a || !b) {
    free(a);
    free(b);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    a[i] = (float)(i % 7);
    b[i] = 0;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = seconds();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++)
      b[i] = 1.5f * a[i] + b[i];
    double t = seconds() - t0;
    if (t < best)
      best = t;
  }
  /* keep the stores observable */
  volatile float sink = b[n / 2];
  (void)sink;
  free(a);
  free(b);
  return 3.0 * (double)n * sizeof(float) / best * 1e-9;
}

int main(int argc, char **argv) {
  int threads = 2;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--threads N]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1)
    threads = 1;
  static const struct {
    size_t bytes;
    int reps;
    const char *name;
  } sets[] = {{256 << 10, 400, "256 KiB"},
              {4 << 20, 200, "4 MiB"},
              {16 << 20, 40, "16 MiB"},
              {128 << 20, 6, "128 MiB"}};
  printf("triad %d thread%s:", threads, threads == 1 ? "" : "s");
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
    printf("%s %s %.1f GB/s", s ? "," : "", sets[s].name,
           triad(sets[s].bytes / sizeof(float), sets[s].reps, threads));
  printf("\n");
  return 0;
}
