/* mpi-train-bench.c — time of a data-parallel training step and of its
 * communication (docs/distributed.md, "Measured").
 *
 *   mpirun -np P build/tests/bench/mpi-train-bench [--threads T]
 *       [--batch B] [--steps-per-call K] [--calls N] [--warmup N]
 *       [--bucket-mb MB] [--no-overlap] [--bandwidth GBS] [--latency US]
 *       MODEL.onnx
 *   build/tests/bench/mpi-train-bench ... MODEL.onnx       (one process)
 *
 * Builds the training program of MODEL as `weir train` does (softmax
 * cross-entropy, SGD, K symbolic), data parallel when there is more than
 * one rank (overlapped buckets, or blocking with --no-overlap), compiles
 * it, and runs N timed calls of K steps on random inputs and labels
 * (batch B per rank).  Before each call the ranks meet at a barrier; a
 * call's time is the slowest rank's.  The communication time is the time
 * the ranks spend inside MPI_Allreduce, MPI_Iallreduce and MPI_Wait during
 * the call (this program defines them over the PMPI profiling interface;
 * the compiled kernel, loaded later, binds to them): for the overlapped
 * form, the wait that remains after the overlap.  Rank 0 prints the median
 * ms per step and communication ms per step (mean over the ranks), the
 * bucket payloads (the analysis's comm_bytes of each collective), and the
 * ring-allreduce model of the buckets' time per step at 2, 8 and 64 ranks
 * for a stated network: 2 (P - 1) / P * bytes / bandwidth + 2 (P - 1) *
 * latency per bucket.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "weir.h"

static gint threads = 1, calls = 20, warmup = 3;
static gint64 batch = 16, steps_per_call = 4;
static double bucket_mb = 0, bandwidth_gbs = 1.25, latency_us = 10;
static gboolean no_overlap = FALSE;

static const GOptionEntry entries[] = {
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "OpenMP threads (1)", "T"},
    {"batch", 0, 0, G_OPTION_ARG_INT64, &batch, "Batch per rank (16)", "B"},
    {"steps-per-call", 'k', 0, G_OPTION_ARG_INT64, &steps_per_call,
     "Steps per call (4)", "K"},
    {"calls", 0, 0, G_OPTION_ARG_INT, &calls, "Timed calls (20)", "N"},
    {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "Untimed calls (3)", "N"},
    {"bucket-mb", 0, 0, G_OPTION_ARG_DOUBLE, &bucket_mb,
     "Bucket size in MiB (default 25)", "MB"},
    {"no-overlap", 0, 0, G_OPTION_ARG_NONE, &no_overlap,
     "Blocking Allreduce per bucket", NULL},
    {"bandwidth", 0, 0, G_OPTION_ARG_DOUBLE, &bandwidth_gbs,
     "Modeled link bandwidth in GB/s (1.25: 10 Gbit/s Ethernet)", "GBS"},
    {"latency", 0, 0, G_OPTION_ARG_DOUBLE, &latency_us,
     "Modeled per-message latency in microseconds (10)", "US"},
    {NULL}};

/* ---- time inside MPI's collectives (PMPI) ------------------------------ */

static double comm_seconds;

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  double t0 = PMPI_Wtime();
  int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  comm_seconds += PMPI_Wtime() - t0;
  return rc;
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request) {
  double t0 = PMPI_Wtime();
  int rc =
      PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  comm_seconds += PMPI_Wtime() - t0;
  return rc;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  double t0 = PMPI_Wtime();
  int rc = PMPI_Wait(request, status);
  comm_seconds += PMPI_Wtime() - t0;
  return rc;
}

/* ---- the program ------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Random arguments of prog: input ~ U(-1, 1), target in [0, classes),
 * the parameters from the model's initializers, the rest zero. */
static GHashTable *arguments(const WeirGraph *prog, const WeirGraph *forward,
                             GHashTable *symbols, gint64 classes, int rank,
                             GError **error) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(prog);
  GRand *rng = g_rand_new_with_seed(1234 + (guint32)rank);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = list->pdata[i];
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_eval(c->shape->pdata[d], symbols, &shape[d], error)) {
        g_rand_free(rng);
        g_hash_table_unref(args);
        return NULL;
      }
    WeirTensor *v = weir_tensor_new(c->dtype, c->shape->len, shape);
    memset(v->data, 0, weir_tensor_nbytes(v));
    const WeirContainer *fc = weir_graph_container(forward, c->name);
    if (fc && fc->initial)
      memcpy(v->data, g_bytes_get_data(fc->initial, NULL),
             weir_tensor_nbytes(v));
    else if (!strcmp(c->name, "input"))
      for (gint64 j = 0; j < v->count; j++)
        weir_tensor_set(v, j, g_rand_double_range(rng, -1, 1));
    else if (!strcmp(c->name, "target"))
      for (gint64 j = 0; j < v->count; j++)
        weir_tensor_set(v, j,
                        (double)g_rand_int_range(rng, 0, (gint32)classes));
    g_hash_table_insert(args, c->name, v);
  }
  g_rand_free(rng);
  return args;
}

static int bench(const char *model, int rank, int ranks) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirOnnxModel) m = weir_onnx_model_load(model, &error);
  if (!m) {
    fprintf(stderr, "%s\n", error->message);
    return 1;
  }
  const WeirOnnxGraph *og = weir_onnx_model_graph(m);
  if (og->n_inputs < 1 || og->inputs[0].rank < 1) {
    fprintf(stderr, "%s: no batched input\n", model);
    return 1;
  }
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_val(shape, batch);
  for (guint d = 1; d < og->inputs[0].rank; d++) {
    gint64 v = og->inputs[0].dims[d].value;
    g_array_append_val(shape, v);
  }
  g_hash_table_insert(shapes, (gpointer)og->inputs[0].name, shape);
  WeirOnnxImportOptions io = {.input_shapes = shapes};
  g_autoptr(WeirGraph) forward = weir_onnx_import_model(m, &io, &error);
  if (!forward) {
    fprintf(stderr, "%s\n", error->message);
    return 1;
  }
  if (strcmp(og->inputs[0].name, "input") != 0) {
    fprintf(stderr, "%s: the input is '%s': this bench feeds 'input'\n", model,
            og->inputs[0].name);
    return 1;
  }
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.steps = 0;
  o.data_parallel = ranks > 1;
  o.no_overlap = no_overlap;
  o.bucket_bytes = (gint64)(bucket_mb * 1048576.0);
  g_autoptr(WeirGraph) prog = weir_train_graph(forward, &o, &error);
  if (!prog) {
    fprintf(stderr, "%s: %s\n", model, error->message);
    return 1;
  }
  /* the classes: the last dimension of the forward output */
  gint64 classes = 10;
  for (guint i = 0; i < forward->containers->len; i++) {
    const WeirContainer *c = forward->containers->pdata[i];
    if (!c->transient && !c->initial && strcmp(c->name, "input") != 0 &&
        c->shape->len == 2)
      weir_expr_is_const(c->shape->pdata[1], &classes);
  }
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "K", steps_per_call);
  /* the buckets: the payload of each collective */
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(prog, symbols, &error);
  if (!a) {
    fprintf(stderr, "%s: %s\n", model, error->message);
    return 1;
  }
  g_autoptr(GArray) buckets = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint i = 0; i < a->nodes->len; i++) {
    const WeirNodeCost *nc = g_ptr_array_index(a->nodes, i);
    if (nc->comm_bytes.known && nc->comm_bytes.value > 0)
      g_array_append_val(buckets, nc->comm_bytes.value);
  }
  WeirCompileOptions co = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(prog, &co, NULL, &error);
  if (!k) {
    fprintf(stderr, "%s: %s\n", model, error->message);
    return 1;
  }
  weir_kernel_set_threads(k, threads, NULL);
  g_autoptr(GHashTable) args =
      arguments(prog, forward, symbols, classes, rank, &error);
  if (!args) {
    fprintf(stderr, "%s: %s\n", model, error->message);
    return 1;
  }
  g_autofree double *step = g_new(double, calls);
  g_autofree double *comm = g_new(double, calls);
  for (int c = -warmup; c < calls; c++) {
    PMPI_Barrier(MPI_COMM_WORLD);
    comm_seconds = 0;
    double t0 = PMPI_Wtime();
    if (!weir_kernel_run(k, symbols, args, &error)) {
      fprintf(stderr, "%s: %s\n", model, error->message);
      return 1;
    }
    double t = PMPI_Wtime() - t0, cs = comm_seconds;
    /* the slowest rank's call, the mean communication */
    PMPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(MPI_IN_PLACE, &cs, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (c >= 0) {
      step[c] = t / (double)steps_per_call;
      comm[c] = cs / ranks / (double)steps_per_call;
    }
  }
  if (rank != 0)
    return 0;
  g_autofree char *base = g_path_get_basename(model);
  double ms = median(step, calls) * 1e3, cms = median(comm, calls) * 1e3;
  gint64 total = 0;
  g_autoptr(GString) sizes = g_string_new(NULL);
  for (guint i = 0; i < buckets->len; i++) {
    gint64 b = g_array_index(buckets, gint64, i);
    total += b;
    g_string_append_printf(sizes, "%s%" G_GINT64_FORMAT, i ? "+" : "", b);
  }
  printf("%-16s ranks %d x threads %d  batch %" G_GINT64_FORMAT
         "/rank  %-9s  %8.3f ms/step  comm %7.3f ms/step  buckets %s B\n",
         base, ranks, threads, batch,
         ranks == 1   ? "-"
         : no_overlap ? "blocking"
                      : "overlap",
         ms, cms, buckets->len ? sizes->str : "-");
  if (buckets->len) {
    printf("  ring model, %.3g GB/s, %.3g us latency, per step:", bandwidth_gbs,
           latency_us);
    static const int ps[] = {2, 8, 64};
    for (guint i = 0; i < G_N_ELEMENTS(ps); i++) {
      double p = ps[i], t = 0;
      for (guint j = 0; j < buckets->len; j++)
        t += 2 * (p - 1) / p * (double)g_array_index(buckets, gint64, j) /
                 (bandwidth_gbs * 1e9) +
             2 * (p - 1) * latency_us * 1e-6;
      printf("  P=%d %.3f ms", ps[i], t * 1e3);
    }
    printf("  (payload %" G_GINT64_FORMAT " B)\n", total);
  }
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  g_autoptr(GOptionContext) ctx = g_option_context_new("MODEL.onnx");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 2 ||
      batch <= 0 || steps_per_call <= 0 || calls <= 0 || warmup < 0) {
    fprintf(stderr, "mpi-train-bench: %s\n",
            error ? error->message : "give one model and positive sizes");
    return 2;
  }
  weir_init();
  if (!weir_mpi_init(TRUE, &error)) {
    fprintf(stderr, "mpi-train-bench: %s\n",
            error ? error->message : "MPI is not available");
    return 1;
  }
  int status = bench(argv[1], weir_mpi_rank(), weir_mpi_size());
  weir_mpi_finalize();
  return status;
}
