/* mpi-overlap.c — does an MPI_Iallreduce progress while the process
 * computes without calling MPI?  (docs/distributed.md, "Progress").  Not
 * a test:
 *
 *   mpirun --oversubscribe -np 2 build/tests/bench/mpi-overlap 65536 524288
 *
 * For each payload in bytes (f32, sum, in place), on rank 0, the medians
 * over 100 rounds (after 10) of: the blocking MPI_Allreduce; the time left
 * in MPI_Wait after MPI_Iallreduce and 2 ms of arithmetic with no MPI
 * call; the same with an MPI_Test every 0.1 ms of the arithmetic.  If the
 * collective progressed during the arithmetic, the wait is near zero. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static volatile double sink;

/* About `seconds` of arithmetic; MPI_Test on *req every `every` seconds
 * (0: never). */
static void compute(double seconds, MPI_Request *req, double every) {
  double t0 = MPI_Wtime(), next = t0 + every, x = 1;
  while (MPI_Wtime() - t0 < seconds) {
    for (int i = 0; i < 1000; i++)
      x = x * 1.0000001 + 1e-9;
    if (every > 0 && MPI_Wtime() >= next) {
      int done = 0;
      MPI_Test(req, &done, MPI_STATUS_IGNORE);
      next += every;
    }
  }
  sink = x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  enum { WARM = 10, REPS = 100 };
  for (int a = 1; a < argc; a++) {
    long n = strtol(argv[a], NULL, 10) / 4;
    if (n < 1)
      n = 1;
    float *buf = calloc((size_t)n, sizeof(float));
    double t[3][REPS];
    for (int r = 0; r < WARM + REPS; r++)
      for (int mode = 0; mode < 3; mode++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), dt;
        if (mode == 0) {
          MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
          dt = MPI_Wtime() - t0;
        } else {
          MPI_Request req;
          MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD, &req);
          compute(2e-3, &req, mode == 2 ? 1e-4 : 0);
          double w0 = MPI_Wtime();
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          dt = MPI_Wtime() - w0;
        }
        double slowest;
        MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= WARM)
          t[mode][r - WARM] = slowest;
      }
    for (int mode = 0; mode < 3; mode++)
      qsort(t[mode], REPS, sizeof t[mode][0], compare);
    if (rank == 0)
      printf("%d ranks  %9ld bytes  blocking %8.1f us  wait after 2 ms: "
             "%8.1f us without MPI calls, %8.1f us with MPI_Test\n",
             size, n * 4, t[0][REPS / 2] * 1e6, t[1][REPS / 2] * 1e6,
             t[2][REPS / 2] * 1e6);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
