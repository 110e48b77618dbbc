/* weir-mpi.h — the MPI job a Weir process runs in (docs/distributed.md).
 *
 * libweir is built with MPI when meson finds Open MPI (ompi-c); without it
 * every function here describes a job of one process and
 * weir_mpi_available() is FALSE.  The data-parallel trainer
 * (core/trainer.c) and `weir train` use these for what happens on the host:
 * the initial parameters broadcast from rank 0, the per-epoch checksum
 * agreement, the sums of the evaluation counts.  The gradients are averaged
 * inside the compiled training program by Allreduce nodes (ir/ops/comm.c).
 *
 * Every call is made from the thread that called weir_mpi_init (MPI is
 * initialized with MPI_THREAD_FUNNELED).
 */
#ifndef WEIR_MPI_H
#define WEIR_MPI_H

#include "weir-types.h"

G_BEGIN_DECLS

/* Whether libweir was built with MPI. */
WEIR_API gboolean weir_mpi_available(void);

/* Whether the process was started by an MPI launcher (mpirun, mpiexec,
 * srun: Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK or PMI_SIZE in
 * the environment). */
WEIR_API gboolean weir_mpi_launched(void);

/* Initializes MPI when libweir has it and the process was launched by an
 * MPI launcher (or force is TRUE); finalizes it at exit.  Returns TRUE
 * when MPI is initialized afterwards.  Idempotent.  An error when MPI_Init
 * fails. */
WEIR_API gboolean weir_mpi_init(gboolean force, GError **error);

/* Whether MPI is initialized (and not finalized). */
WEIR_API gboolean weir_mpi_active(void);

/* Rank of this process and the number of processes: 0 and 1 when MPI is
 * not active. */
WEIR_API int weir_mpi_rank(void);
WEIR_API int weir_mpi_size(void);

/* buf (bytes bytes) from rank root on every rank.  Nothing without MPI. */
WEIR_API gboolean weir_mpi_broadcast(gpointer buf, gsize bytes, int root,
                                     GError **error);

/* v[0..n) summed over every rank, in place.  Nothing without MPI. */
WEIR_API gboolean weir_mpi_sum_f64(double *v, gsize n, GError **error);

/* The smallest and the largest value of x over every rank.  x itself
 * without MPI. */
WEIR_API gboolean weir_mpi_min_max_f64(double x, double *min, double *max,
                                       GError **error);

/* Waits until every rank arrives.  Nothing without MPI. */
WEIR_API gboolean weir_mpi_barrier(GError **error);

/* Finalizes MPI when weir_mpi_init initialized it (also run at exit). */
WEIR_API void weir_mpi_finalize(void);

/* The compile flags (-I...) and link words (-L... -lmpi) of MPI for
 * generated code that calls it, as found when libweir was built ("" without
 * MPI).  (Internal to libweir: core/compiler.c.) */
const char *weir_mpi_cflags(void);
const char *weir_mpi_libs(void);

G_END_DECLS

#endif
