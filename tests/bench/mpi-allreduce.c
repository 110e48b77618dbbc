/* mpi-allreduce.c — time of MPI_Allreduce (sum, f32, in place) on
 * MPI_COMM_WORLD for payloads of the given sizes in bytes: the
 * communication of the Allreduce nodes of a data-parallel training
 * program (docs/distributed.md, "Measured").  Not a test:
 *
 *   mpirun --oversubscribe -np 2 build/tests/bench/mpi-allreduce 4 68000
 *
 * prints, on rank 0, per size the median and minimum over 200 calls
 * (after 20 warm-up calls) of the slowest rank's time, and the bus
 * bandwidth 2 (P - 1) / P * bytes / time of a ring allreduce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  enum { WARM = 20, REPS = 200 };
  for (int a = 1; a < argc; a++) {
    long bytes = strtol(argv[a], NULL, 10);
    long n = bytes / 4 > 0 ? bytes / 4 : 1;
    float *buf = calloc((size_t)n, sizeof(float));
    double times[REPS];
    for (int r = 0; r < WARM + REPS; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      double t = MPI_Wtime() - t0, slowest;
      MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= WARM)
        times[r - WARM] = slowest;
    }
    qsort(times, REPS, sizeof times[0], compare);
    if (rank == 0)
      printf("%d ranks  %10ld bytes  median %9.2f us  min %9.2f us  "
             "bus %.3f GB/s\n",
             size, n * 4, times[REPS / 2] * 1e6, times[0] * 1e6,
             2.0 * (size - 1) / size * (double)(n * 4) / times[REPS / 2] / 1e9);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
