/* mpi.c — the MPI job of the process (weir-mpi.h): a thin layer over
 * MPI_COMM_WORLD, or a job of one process when libweir is built without
 * MPI. */
#include <stdlib.h>

#include "weir-mpi-config.h"
#include "weir-mpi.h"

#ifdef WEIR_HAVE_MPI
#include <mpi.h>
#endif

gboolean weir_mpi_available(void) {
#ifdef WEIR_HAVE_MPI
  return TRUE;
#else
  return FALSE;
#endif
}

gboolean weir_mpi_launched(void) {
  return g_getenv("OMPI_COMM_WORLD_SIZE") || g_getenv("PMIX_RANK") ||
         g_getenv("PMI_SIZE");
}

const char *weir_mpi_cflags(void) {
  return WEIR_MPI_CFLAGS;
}

const char *weir_mpi_libs(void) {
  return WEIR_MPI_LIBS;
}

#ifdef WEIR_HAVE_MPI

static gboolean we_initialized;

static gboolean check(int rc, const char *what, GError **error) {
  if (rc == MPI_SUCCESS)
    return TRUE;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    len = 0;
  text[len] = '\0';
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME, "MPI: %s failed: %s", what,
              len ? text : "(no message)");
  return FALSE;
}

gboolean weir_mpi_active(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

static void finalize_at_exit(void) {
  weir_mpi_finalize();
}

gboolean weir_mpi_init(gboolean force, GError **error) {
  if (weir_mpi_active())
    return TRUE;
  if (!force && !weir_mpi_launched())
    return FALSE;
  int provided = 0;
  if (!check(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided),
             "MPI_Init_thread", error))
    return FALSE;
  /* errors are returned to the caller, who reports them */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  we_initialized = TRUE;
  atexit(finalize_at_exit);
  return TRUE;
}

int weir_mpi_rank(void) {
  int r = 0;
  if (weir_mpi_active())
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int weir_mpi_size(void) {
  int n = 1;
  if (weir_mpi_active())
    MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

gboolean weir_mpi_broadcast(gpointer buf, gsize bytes, int root,
                            GError **error) {
  if (!weir_mpi_active())
    return TRUE;
  for (gsize off = 0; off < bytes; off += (gsize)1 << 30) {
    gsize c = MIN(bytes - off, (gsize)1 << 30);
    if (!check(MPI_Bcast((char *)buf + off, (int)c, MPI_BYTE, root,
                         MPI_COMM_WORLD),
               "MPI_Bcast", error))
      return FALSE;
  }
  return TRUE;
}

gboolean weir_mpi_sum_f64(double *v, gsize n, GError **error) {
  if (!weir_mpi_active() || n == 0)
    return TRUE;
  return check(MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_SUM,
                             MPI_COMM_WORLD),
               "MPI_Allreduce", error);
}

gboolean weir_mpi_min_max_f64(double x, double *min, double *max,
                              GError **error) {
  double v[2] = {-x, x};
  if (weir_mpi_active() && !check(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE,
                                                MPI_MAX, MPI_COMM_WORLD),
                                  "MPI_Allreduce", error))
    return FALSE;
  *min = -v[0];
  *max = v[1];
  return TRUE;
}

gboolean weir_mpi_barrier(GError **error) {
  if (!weir_mpi_active())
    return TRUE;
  return check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", error);
}

void weir_mpi_finalize(void) {
  if (we_initialized && weir_mpi_active())
    MPI_Finalize();
  we_initialized = FALSE;
}

#else /* one process */

gboolean weir_mpi_active(void) {
  return FALSE;
}

gboolean weir_mpi_init(gboolean force, GError **error) {
  (void)error;
  (void)force;
  return FALSE;
}

int weir_mpi_rank(void) {
  return 0;
}

int weir_mpi_size(void) {
  return 1;
}

gboolean weir_mpi_broadcast(gpointer buf, gsize bytes, int root,
                            GError **error) {
  (void)buf;
  (void)bytes;
  (void)root;
  (void)error;
  return TRUE;
}

gboolean weir_mpi_sum_f64(double *v, gsize n, GError **error) {
  (void)v;
  (void)n;
  (void)error;
  return TRUE;
}

gboolean weir_mpi_min_max_f64(double x, double *min, double *max,
                              GError **error) {
  (void)error;
  *min = *max = x;
  return TRUE;
}

gboolean weir_mpi_barrier(GError **error) {
  (void)error;
  return TRUE;
}

void weir_mpi_finalize(void) {}

#endif
