/* bench-models.c — Weir against PyTorch and ONNX Runtime on the sample
 * models (not a pass/fail test: it prints tables; docs/performance.md).
 *
 *   bench-models [--threads N] [--reps N] [--warmup N] [--models a,b]
 *                [--no-peers] [--no-search] [--ort-dir DIR]
 *
 * For each model (MLP batch 64, LeNet batch 64, the residual CNN, the
 * transformer layer; samples/models) it
 *   1. imports the ONNX file at the shape of its reference input,
 *   2. compiles and times Weir's default implementation choices, then every
 *      combination of --impl choices for the op types present (Gemm and
 *      MatMul: blas, pure; Conv: im2col, direct, pure), then the best of
 *      those with the tier-2 transformations and with tier 2+3(+4) on the
 *      expanded program,
 *   3. checks every configuration's output against the reference output of
 *      samples/models (PyTorch's) before and after timing it: a wrong
 *      kernel shows FAIL and never counts as "best",
 *   4. measures the GEMM calls of the best configuration: this executable
 *      defines cblas_sgemm itself and exports it, so the kernels' calls bind
 *      here; the wrapper times each call and forwards it to OpenBLAS
 *      (dlsym RTLD_NEXT),
 *   5. runs the peers (tests/bench/peer-torch.py with Debian's python3-torch,
 *      tests/bench/peer-ort.cjs with onnxruntime-node under node), each on
 *      the same input, checking the same reference.
 * The roofline reference is cblas_sgemm 512x512x512 in this process.
 *
 * Threads: --threads N (default 1) is given to OpenMP (OMP_NUM_THREADS and
 * omp_set_num_threads of each kernel), to OpenBLAS (OPENBLAS_NUM_THREADS
 * and openblas_set_num_threads), to PyTorch (torch.set_num_threads) and to
 * ONNX Runtime (intraOpNumThreads).  The program sets OMP_NUM_THREADS and
 * OPENBLAS_NUM_THREADS and re-executes itself so that the libraries read
 * them at start-up; how idle OpenMP threads wait is left to Weir's default
 * (weir_kernel_openmp_wait, docs/runtime.md) unless the environment sets
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cblas.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "weir-analysis.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-init.h"
#include "weir-native.h"
#include "weir-recipe.h"
#include "weir-runtime.h"
#include "weir-tensor-io.h"
#include "weir-transform.h"

#define RTOL 1e-4
#define ATOL 1e-5

/* ------------------------------------------------------------ options */

static gint opt_threads = 1, opt_reps = 20, opt_warmup = 3;
static char *opt_models, *opt_ort_dir, *opt_python, *opt_models_dir;
static char *opt_cache_dir;
static char **opt_impls;
static gboolean opt_no_peers, opt_no_search;
static double opt_budget = 2.0;

static const GOptionEntry entries[] = {
    {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads,
     "Threads for Weir (OpenMP and OpenBLAS) and the peers (default 1)", "N"},
    {"reps", 'r', 0, G_OPTION_ARG_INT, &opt_reps,
     "Timed repetitions per configuration (default 20; fewer for slow "
     "configurations, see --budget)",
     "N"},
    {"warmup", 'w', 0, G_OPTION_ARG_INT, &opt_warmup,
     "Untimed runs first (default 3)", "N"},
    {"budget", 0, 0, G_OPTION_ARG_DOUBLE, &opt_budget,
     "Seconds of timed runs per configuration at most (default 2; at least 3 "
     "runs)",
     "S"},
    {"models", 'm', 0, G_OPTION_ARG_STRING, &opt_models,
     "Comma-separated subset of mlp,lenet64,resnet,transformer", "LIST"},
    {"models-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_models_dir,
     "Directory of the sample models (default: the source tree's "
     "samples/models)",
     "DIR"},
    {"no-peers", 0, 0, G_OPTION_ARG_NONE, &opt_no_peers,
     "Do not run PyTorch and ONNX Runtime", NULL},
    {"no-search", 0, 0, G_OPTION_ARG_NONE, &opt_no_search,
     "Time only Weir's default implementation choices", NULL},
    {"ort-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_ort_dir,
     "Where onnxruntime-node is installed (default: $WEIR_BENCH_ORT_DIR or "
     "$XDG_CACHE_HOME/weir-bench/ort; tests/bench/install-ort.sh)",
     "DIR"},
    {"python", 0, 0, G_OPTION_ARG_FILENAME, &opt_python,
     "Python with torch for the PyTorch column (default /usr/bin/python3)",
     "PATH"},
    {"impl", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_impls,
     "With --no-search: implementation of every node of OP in the one "
     "configuration timed (repeatable)",
     "OP=IMPL"},
    {"cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_cache_dir,
     "Compile cache directory (default: Weir's)", "DIR"},
    {NULL}};

/* ------------------------------------------------------------- timing */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_double(gconstpointer a, gconstpointer b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, guint n) {
  qsort(v, n, sizeof *v, (int (*)(const void *, const void *))compare_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------ GEMM call accounting */

/* The kernels link OpenBLAS and call cblas_sgemm; this executable exports
 * its own cblas_sgemm (meson: export_dynamic), which the dynamic linker
 * binds first.  While `counting`, each call's wall time and 2*M*N*K FLOPs
 * are added up. */
typedef void (*SgemmFunc)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE,
                          const enum CBLAS_TRANSPOSE, const blasint,
                          const blasint, const blasint, const float,
                          const float *, const blasint, const float *,
                          const blasint, const float, float *, const blasint);

static SgemmFunc real_sgemm;
static gboolean counting;
static double gemm_seconds, gemm_flops;
static guint64 gemm_calls;

void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta,
                 const enum CBLAS_TRANSPOSE tb, const blasint m,
                 const blasint n, const blasint k, const float alpha,
                 const float *a, const blasint lda, const float *b,
                 const blasint ldb, const float beta, float *c,
                 const blasint ldc) {
  if (!real_sgemm) {
    real_sgemm = (SgemmFunc)dlsym(RTLD_NEXT, "cblas_sgemm");
    if (!real_sgemm) {
      fprintf(stderr, "bench-models: cblas_sgemm not found in OpenBLAS\n");
      abort();
    }
  }
  if (!counting) {
    real_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  double t0 = now();
  real_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  gemm_seconds += now() - t0;
  gemm_flops += 2.0 * (double)m * (double)n * (double)k;
  gemm_calls++;
}

/* GFLOP/s of cblas_sgemm 512x512x512: the best of 30 runs (*med: their
 * median).  On a shared machine the best run is the one least disturbed by
 * other processes; it is the reference. */
static double sgemm_roofline(double *med) {
  const int n = 512;
  float *a = g_new(float, n *n), *b = g_new(float, n *n),
        *c = g_new0(float, n *n);
  for (int i = 0; i < n * n; i++) {
    a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
  }
  double t[30];
  for (int r = 0; r < 3; r++)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b,
                n, 0, c, n);
  for (guint r = 0; r < G_N_ELEMENTS(t); r++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b,
                n, 0, c, n);
    t[r] = now() - t0;
  }
  g_free(a);
  g_free(b);
  g_free(c);
  double flops = 2.0 * n * n * (double)n;
  *med = flops / median(t, G_N_ELEMENTS(t)) / 1e9;
  return flops / t[0] / 1e9; /* sorted by median() */
}

/* -------------------------------------------------------------- models */

typedef struct {
  const char *name;  /* --models name */
  const char *file;  /* model file in the models directory */
  const char *data;  /* directory of the data set */
  int set;           /* data set: input_<set>.pb, output_<set>.pb */
  const char *title; /* in the tables */
} ModelSpec;

static const ModelSpec model_specs[] = {
    {"mlp", "mlp.onnx", "mlp", 1, "MLP b64"},
    {"lenet64", "lenet64.onnx", "lenet64", 0, "LeNet b64"},
    {"resnet", "resnet.onnx", "resnet", 0, "ResCNN b2"},
    {"transformer", "transformer.onnx", "transformer", 0, "Transf. 2x8"},
};

/* One timed Weir configuration. */
typedef struct {
  char *label;
  gboolean ok;   /* compiled, ran, matched the reference */
  char *problem; /* why not ok */
  double err;    /* max abs error against the reference */
  double median; /* seconds */
  double min;    /* fastest timed run */
  guint reps;
  WeirGraph *graph; /* the program as compiled (owned) */
} Config;

static void config_free(gpointer p) {
  Config *c = p;
  g_free(c->label);
  g_free(c->problem);
  if (c->graph)
    weir_graph_free(c->graph);
  g_free(c);
}

/* A peer's result. */
typedef struct {
  gboolean ran;
  char *note; /* skipped or failed: why; else NULL */
  double median, min;
  double err;
  gboolean ok;
} PeerResult;

typedef struct {
  const ModelSpec *spec;
  double flops;
  Config *dflt, *best; /* borrowed from configs */
  GPtrArray *configs;
  GPtrArray *notes; /* char*: combinations left out */
  double gemm_gflops, gemm_share, gemm_calls_per_run;
  PeerResult torch, ort;
} ModelResult;

static void model_result_free(gpointer p) {
  ModelResult *r = p;
  g_ptr_array_unref(r->configs);
  g_ptr_array_unref(r->notes);
  g_free(r->torch.note);
  g_free(r->ort.note);
  g_free(r);
}

typedef struct {
  WeirTensor *input, *expected;
  char *input_path, *input_npy, *expected_npy, *model_path;
  char *in_name, *out_name; /* containers */
  GHashTable *bindings;
} ModelData;

static void model_data_clear(ModelData *d) {
  g_clear_pointer(&d->input, weir_tensor_free);
  g_clear_pointer(&d->expected, weir_tensor_free);
  g_clear_pointer(&d->input_path, g_free);
  g_clear_pointer(&d->input_npy, g_free);
  g_clear_pointer(&d->expected_npy, g_free);
  g_clear_pointer(&d->model_path, g_free);
  g_clear_pointer(&d->in_name, g_free);
  g_clear_pointer(&d->out_name, g_free);
  g_clear_pointer(&d->bindings, g_hash_table_unref);
}

static WeirCompileOptions compile_options(void) {
  return (WeirCompileOptions){.cache_dir = opt_cache_dir};
}

/* Imports the model at the shape of its reference input. */
static WeirGraph *import_model(const ModelSpec *spec, const char *dir,
                               ModelData *d, GError **error) {
  g_autofree char *in = g_strdup_printf("input_%d.pb", spec->set);
  g_autofree char *out = g_strdup_printf("output_%d.pb", spec->set);
  g_autofree char *in_npy = g_strdup_printf("input_%d.npy", spec->set);
  g_autofree char *out_npy = g_strdup_printf("output_%d.npy", spec->set);
  d->model_path = g_build_filename(dir, spec->file, NULL);
  d->input_path = g_build_filename(dir, spec->data, in, NULL);
  d->input_npy = g_build_filename(dir, spec->data, in_npy, NULL);
  d->expected_npy = g_build_filename(dir, spec->data, out_npy, NULL);
  g_autofree char *out_path = g_build_filename(dir, spec->data, out, NULL);
  d->input = weir_tensor_load(d->input_path, NULL, error);
  if (!d->input)
    return NULL;
  d->expected = weir_tensor_load(out_path, NULL, error);
  if (!d->expected)
    return NULL;
  d->bindings = weir_bindings_new();
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, d->input->shape, d->input->rank);
  g_hash_table_insert(shapes, (gpointer) "input", shape);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {
      .symbols = d->bindings, .input_shapes = shapes, .names = names};
  WeirGraph *g = weir_onnx_import(d->model_path, &opts, error);
  if (!g)
    return NULL;
  const char *i = g_hash_table_lookup(names, "input");
  const char *o = g_hash_table_lookup(names, "output");
  if (!i || !o) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: expected a graph input 'input' and output 'output'",
                d->model_path);
    weir_graph_free(g);
    return NULL;
  }
  d->in_name = g_strdup(i);
  d->out_name = g_strdup(o);
  return g;
}

/* FLOPs of the program with every library node expanded (the analysis
 * counts maps and tasklets), or 0 when unknown. */
static double program_flops(const WeirGraph *g, GHashTable *bindings) {
  g_autoptr(WeirGraph) x = weir_graph_copy(g);
  g_autoptr(GError) error = NULL;
  if (!weir_expand_all(x, NULL, NULL, &error))
    return 0;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(x, bindings, &error);
  return a && a->total_flops.known ? (double)a->total_flops.value : 0;
}

/* The arguments of the compiled program: the input (a copy), the output
 * (filled with NaN), zeros for any other argument. */
static GHashTable *make_args(const WeirGraph *g, const ModelData *d,
                             GError **error) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient || c->initial)
      continue;
    if (strcmp(c->name, d->in_name) == 0) {
      g_hash_table_insert(args, g_strdup(c->name), weir_tensor_copy(d->input));
      continue;
    }
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint k = 0; k < c->shape->len; k++)
      if (!weir_expr_eval(g_ptr_array_index(c->shape, k), d->bindings,
                          &shape[k], error)) {
        g_hash_table_unref(args);
        return NULL;
      }
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    if (strcmp(c->name, d->out_name) == 0)
      for (gint64 k = 0; k < t->count; k++)
        weir_tensor_set(t, k, NAN);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

static gboolean check_output(GHashTable *args, const ModelData *d, double *err,
                             GError **error) {
  const WeirTensor *got = g_hash_table_lookup(args, d->out_name);
  if (!got || got->count != d->expected->count ||
      got->dtype != d->expected->dtype) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "output has another shape than the reference");
    return FALSE;
  }
  /* compare as flat arrays: the reference's rank may differ (Flatten) */
  g_autoptr(WeirTensor) ref = weir_tensor_copy(d->expected);
  g_autoptr(WeirTensor) flat = weir_tensor_new(got->dtype, 1, &got->count);
  memcpy(flat->data, got->data, weir_tensor_nbytes(got));
  g_free(ref->shape);
  ref->rank = 1;
  ref->shape = g_new(gint64, 1);
  ref->shape[0] = ref->count;
  return weir_tensor_allclose(flat, ref, RTOL, ATOL, err, error);
}

/* Compiles g, checks its output, times it, checks again. */
static void run_config(Config *cfg, const ModelData *d) {
  g_autoptr(GError) error = NULL;
  WeirCompileOptions opts = compile_options();
  g_autoptr(WeirKernel) k =
      weir_kernel_compile(cfg->graph, &opts, NULL, &error);
  if (!k) {
    /* the first line is enough (compiler output follows) */
    char *nl = strchr(error->message, '\n');
    cfg->problem = nl ? g_strndup(error->message, nl - error->message)
                      : g_strdup(error->message);
    return;
  }
  g_autoptr(GError) ignored = NULL;
  weir_kernel_set_threads(k, opt_threads, &ignored);
  g_autoptr(GHashTable) args = make_args(cfg->graph, d, &error);
  if (!args || !weir_kernel_run(k, d->bindings, args, &error) ||
      !check_output(args, d, &cfg->err, &error)) {
    cfg->problem = g_strdup_printf("FAIL: %s", error->message);
    return;
  }
  /* one run to size the repetitions within the budget */
  double t0 = now();
  if (!weir_kernel_run(k, d->bindings, args, &error)) {
    cfg->problem = g_strdup(error->message);
    return;
  }
  double one = now() - t0;
  guint reps = (guint)opt_reps;
  if (one * reps > opt_budget)
    reps = MAX(3, (guint)(opt_budget / MAX(one, 1e-9)));
  guint warmup = one * opt_warmup > opt_budget ? 1 : (guint)opt_warmup;
  WeirBenchOptions bo = {.warmup = warmup, .repetitions = reps};
  WeirBenchResult r;
  if (!weir_kernel_bench(k, d->bindings, args, &bo, &r, &error)) {
    cfg->problem = g_strdup(error->message);
    return;
  }
  cfg->median = r.median;
  cfg->min = r.min;
  cfg->reps = reps;
  weir_bench_result_clear(&r);
  double err2 = 0;
  if (!check_output(args, d, &err2, &error)) {
    cfg->problem =
        g_strdup_printf("FAIL after the timed runs: %s", error->message);
    return;
  }
  cfg->err = MAX(cfg->err, err2);
  cfg->ok = TRUE;
}

/* Times the GEMM calls of the best configuration: per run (a
 * weir_kernel_bench of one repetition, arguments bound outside the timed
 * part), the GFLOP/s of its GEMM calls and their share of the run's time;
 * the medians over the runs are reported, so one run disturbed by another
 * process does not decide the figure. */
static void measure_gemm(ModelResult *mr, const ModelData *d) {
  g_autoptr(GError) error = NULL;
  WeirCompileOptions opts = compile_options();
  g_autoptr(WeirKernel) k =
      weir_kernel_compile(mr->best->graph, &opts, NULL, &error);
  if (!k)
    return;
  weir_kernel_set_threads(k, opt_threads, NULL);
  g_autoptr(GHashTable) args = make_args(mr->best->graph, d, &error);
  if (!args || !weir_kernel_run(k, d->bindings, args, &error))
    return;
  guint reps = MAX(5, mr->best->reps);
  g_autofree double *rate = g_new0(double, reps);
  g_autofree double *share = g_new0(double, reps);
  guint64 calls = 0;
  guint n = 0;
  WeirBenchOptions bo = {.warmup = 0, .repetitions = 1};
  for (guint r = 0; r < reps; r++) {
    WeirBenchResult res;
    gemm_seconds = gemm_flops = 0;
    gemm_calls = 0;
    counting = TRUE;
    gboolean ok = weir_kernel_bench(k, d->bindings, args, &bo, &res, NULL);
    counting = FALSE;
    if (!ok)
      return;
    if (gemm_calls && gemm_seconds > 0 && res.median > 0) {
      rate[n] = gemm_flops / gemm_seconds / 1e9;
      share[n] = MIN(1.0, gemm_seconds / res.median);
      n++;
    }
    calls += gemm_calls;
    weir_bench_result_clear(&res);
  }
  mr->gemm_calls_per_run = (double)calls / reps;
  if (n) {
    mr->gemm_gflops = median(rate, n);
    mr->gemm_share = median(share, n);
  }
}

/* The op types of library nodes in g (top level), for the impl search. */
static gboolean has_op(const WeirGraph *g, const char *op) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->op, op) == 0)
        return TRUE;
    }
  }
  return FALSE;
}

typedef struct {
  const char *op;
  const char *const *impls;
} OpChoices;

static const char *const gemm_impls[] = {"blas", "pure", NULL};
static const char *const conv_impls[] = {"im2col", "direct", "pure", NULL};
static const OpChoices op_choices[] = {
    {"Gemm", gemm_impls},
    {"MatMul", gemm_impls},
    {"Conv", conv_impls},
};

static Config *config_new(const char *label, WeirGraph *g) {
  Config *c = g_new0(Config, 1);
  c->label = g_strdup(label);
  c->graph = g;
  return c;
}

/* FALSE with the reason when a native implementation chosen for a library
 * node of g does not accept it. */
static gboolean natives_apply(const WeirGraph *g, GError **error) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      const WeirNativeImpl *ni;
      if (n->kind == WEIR_NODE_LIBRARY &&
          !weir_native_choice(g, s, n, &ni, error))
        return FALSE;
    }
  }
  return TRUE;
}

/* Every combination of impl choices for the ops present in base. */
static void add_impl_grid(GPtrArray *configs, GPtrArray *notes,
                          const WeirGraph *base) {
  const OpChoices *present[G_N_ELEMENTS(op_choices)];
  guint np = 0, total = 1;
  for (guint i = 0; i < G_N_ELEMENTS(op_choices); i++)
    if (has_op(base, op_choices[i].op)) {
      present[np++] = &op_choices[i];
      total *= g_strv_length((char **)op_choices[i].impls);
    }
  for (guint combo = 0; combo < total; combo++) {
    g_autoptr(WeirGraph) g = weir_graph_copy(base);
    GString *label = g_string_new(NULL);
    guint rest = combo;
    gboolean ok = TRUE;
    for (guint p = 0; p < np; p++) {
      guint n = g_strv_length((char **)present[p]->impls);
      const char *impl = present[p]->impls[rest % n];
      rest /= n;
      g_string_append_printf(label, "%s%s=%s", p ? " " : "", present[p]->op,
                             impl);
      ok = ok && weir_native_set_impl(g, present[p]->op, impl, NULL, NULL);
    }
    /* a native choice that does not accept some node cannot compile:
     * left out (listed once) */
    g_autoptr(GError) error = NULL;
    if (ok && natives_apply(g, &error))
      g_ptr_array_add(configs, config_new(label->str, g_steal_pointer(&g)));
    else if (ok)
      g_ptr_array_add(notes, g_strdup_printf("%s: not applicable: %s",
                                             label->str, error->message));
    g_string_free(label, TRUE);
  }
}

/* base with a recipe applied (steps as JSON), or NULL with *problem. */
static WeirGraph *with_recipe(const WeirGraph *base, const char *steps,
                              gboolean expand_first, GHashTable *bindings,
                              char **problem) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_copy(base);
  if (expand_first && !weir_native_expand_rest(g, &error)) {
    *problem = g_strdup(error->message);
    return NULL;
  }
  g_autofree char *text = g_strdup_printf(
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [%s]}", steps);
  g_autoptr(WeirRecipe) r = weir_recipe_parse(text, -1, "bench recipe", &error);
  if (!r || !weir_recipe_apply(g, r, bindings, NULL, &error)) {
    *problem = g_strdup(error->message);
    return NULL;
  }
  return g_steal_pointer(&g);
}

#define TIER(n)                                                                \
  "{\"tier\": " #n ", \"repeat\": \"until-no-match\", \"optional\": true}"

static Config *fastest(GPtrArray *configs) {
  Config *best = NULL;
  for (guint i = 0; i < configs->len; i++) {
    Config *c = g_ptr_array_index(configs, i);
    if (c->ok && (!best || c->median < best->median))
      best = c;
  }
  return best;
}

/* ---------------------------------------------------------------- peers */

static char *srcdir(void) {
  const char *env = g_getenv("WEIR_SRCDIR");
  return g_strdup(env && *env ? env : WEIR_SRCDIR);
}

static char *ort_dir(void) {
  if (opt_ort_dir)
    return g_strdup(opt_ort_dir);
  const char *env = g_getenv("WEIR_BENCH_ORT_DIR");
  if (env && *env)
    return g_strdup(env);
  return g_build_filename(g_get_user_cache_dir(), "weir-bench", "ort", NULL);
}

/* Runs a peer script; its last line is "ok MEDIAN_MS MAX_ABS_ERR PASS|FAIL
 * min_ms=MIN_MS" (the script compares with the reference at RTOL, ATOL) or
 * "skip REASON" / "fail REASON". */
static void run_peer(const char *const *argv, PeerResult *out) {
  g_autoptr(GError) error = NULL;
  g_autofree char *sout = NULL, *serr = NULL;
  gint status = 0;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                    &sout, &serr, &status, &error)) {
    out->note = g_strdup_printf("skipped: %s", error->message);
    return;
  }
  g_auto(GStrv) lines = g_strsplit(g_strstrip(sout), "\n", -1);
  const char *last = lines[0] ? lines[g_strv_length(lines) - 1] : "";
  double ms = 0, err = 0;
  char verdict[8] = "";
  if (g_str_has_prefix(last, "ok ") &&
      sscanf(last + 3, "%lf %lf %7s", &ms, &err, verdict) == 3) {
    out->ran = TRUE;
    out->median = ms / 1e3;
    out->err = err;
    out->ok = strcmp(verdict, "PASS") == 0;
    const char *mn = strstr(last, "min_ms=");
    out->min = mn ? g_ascii_strtod(mn + 7, NULL) / 1e3 : 0;
    return;
  }
  if (g_str_has_prefix(last, "skip ") || g_str_has_prefix(last, "fail "))
    out->note = g_strdup(last);
  else {
    g_autofree char *e = g_strdup(g_strstrip(serr));
    char *nl = strrchr(e, '\n');
    out->note =
        g_strdup_printf("failed (exit %d): %.200s", status, nl ? nl + 1 : e);
  }
}

static void run_peers(ModelResult *mr, const ModelData *d) {
  g_autofree char *src = srcdir();
  g_autofree char *threads = g_strdup_printf("%d", opt_threads);
  g_autofree char *reps = g_strdup_printf("%d", opt_reps);
  g_autofree char *warmup = g_strdup_printf("%d", opt_warmup);
  g_autofree char *torch_script =
      g_build_filename(src, "tests", "bench", "peer-torch.py", NULL);
  const char *python = opt_python ? opt_python : "/usr/bin/python3";
  const char *targv[] = {python,         torch_script, "--threads",     threads,
                         "--reps",       reps,         "--warmup",      warmup,
                         mr->spec->name, d->input_npy, d->expected_npy, NULL};
  if (!g_file_test(python, G_FILE_TEST_IS_EXECUTABLE))
    mr->torch.note = g_strdup_printf("skipped: no %s", python);
  else
    run_peer(targv, &mr->torch);

  g_autofree char *node = g_find_program_in_path("node");
  g_autofree char *dir = ort_dir();
  g_autofree char *pkg =
      g_build_filename(dir, "node_modules", "onnxruntime-node", NULL);
  g_autofree char *ort_script =
      g_build_filename(src, "tests", "bench", "peer-ort.cjs", NULL);
  if (!node)
    mr->ort.note = g_strdup("skipped: node is not on PATH");
  else if (!g_file_test(pkg, G_FILE_TEST_IS_DIR))
    mr->ort.note = g_strdup_printf("skipped: onnxruntime-node is not "
                                   "installed in %s (tests/bench/"
                                   "install-ort.sh installs it)",
                                   dir);
  else {
    const char *oargv[] = {
        node,         ort_script,      "--threads", threads, "--reps",
        reps,         "--warmup",      warmup,      pkg,     d->model_path,
        d->input_npy, d->expected_npy, NULL};
    run_peer(oargv, &mr->ort);
  }
}

/* -------------------------------------------------------------- output */

static char *ms_text(double s) {
  return g_strdup_printf("%.4f", s * 1e3);
}

static char *gflops_text(double flops, double s) {
  return flops > 0 && s > 0 ? g_strdup_printf("%.2f", flops / s / 1e9)
                            : g_strdup("-");
}

static char *peer_cell(const PeerResult *p, double weir) {
  if (!p->ran)
    return g_strdup("n/a");
  return g_strdup_printf("%.4f%s (%.2fx)", p->median * 1e3,
                         p->ok ? "" : " FAIL", weir / p->median);
}

static void print_model(const ModelResult *mr) {
  printf("\n%s (%s): %.3f MFLOP per run\n", mr->spec->title, mr->spec->name,
         mr->flops / 1e6);
  printf("  %-44s %-6s %10s %8s %8s %5s %9s\n", "Weir configuration", "check",
         "median ms", "min ms", "GFLOP/s", "reps", "max err");
  for (guint i = 0; i < mr->configs->len; i++) {
    const Config *c = g_ptr_array_index(mr->configs, i);
    if (!c->ok) {
      printf("  %-44s %s\n", c->label, c->problem ? c->problem : "not run");
      continue;
    }
    g_autofree char *ms = ms_text(c->median);
    g_autofree char *gf = gflops_text(mr->flops, c->median);
    printf("  %-44s %-6s %10s %8.4f %8s %5u %9.2g%s\n", c->label, "ok", ms,
           c->min * 1e3, gf, c->reps, c->err, c == mr->best ? "  <- best" : "");
  }
  for (guint i = 0; i < mr->notes->len; i++)
    printf("  (%s)\n", (const char *)g_ptr_array_index(mr->notes, i));
  if (mr->best && mr->gemm_calls_per_run > 0)
    printf("  GEMM calls of the best: %.0f per run, %.2f GFLOP/s, %.0f%% of "
           "its time (medians over runs)\n",
           mr->gemm_calls_per_run, mr->gemm_gflops, 100 * mr->gemm_share);
  else if (mr->best)
    /* only cblas_sgemm calls are counted: Weir's own GEMM (impl weir, the
     * f32 default) is inside the kernel */
    printf("  GEMM calls of the best: none through BLAS\n");
  if (mr->torch.note)
    printf("  PyTorch: %s\n", mr->torch.note);
  else if (mr->torch.ran)
    printf("  PyTorch: median %.4f ms, min %.4f ms, max err %.2g%s\n",
           mr->torch.median * 1e3, mr->torch.min * 1e3, mr->torch.err,
           mr->torch.ok ? "" : " FAIL");
  if (mr->ort.note)
    printf("  ONNX Runtime: %s\n", mr->ort.note);
  else if (mr->ort.ran)
    printf("  ONNX Runtime: median %.4f ms, min %.4f ms, max err %.2g%s\n",
           mr->ort.median * 1e3, mr->ort.min * 1e3, mr->ort.err,
           mr->ort.ok ? "" : " FAIL");
  fflush(stdout);
}

static void print_summary(GPtrArray *results, double roofline) {
  printf("\nSummary (median ms; (r) = Weir best time / peer time, below 1 "
         "means Weir is faster; GFLOP/s from Weir's FLOP count)\n\n");
  printf("| model | Weir default ms | Weir best ms | best configuration | "
         "PyTorch ms (r) | ONNX Runtime ms (r) | GFLOP/s default / best / "
         "PyTorch / ORT | Weir GEMM calls GFLOP/s (%% of sgemm 512^3 = %.1f) "
         "|\n",
         roofline);
  printf("|---|---|---|---|---|---|---|---|\n");
  for (guint i = 0; i < results->len; i++) {
    const ModelResult *mr = g_ptr_array_index(results, i);
    g_autofree char *d =
        mr->dflt && mr->dflt->ok
            ? ms_text(mr->dflt->median)
            : g_strdup(mr->dflt && mr->dflt->problem ? "FAIL" : "-");
    g_autofree char *b = mr->best ? ms_text(mr->best->median) : g_strdup("-");
    double w = mr->best ? mr->best->median : 0;
    g_autofree char *pt = peer_cell(&mr->torch, w);
    g_autofree char *ort = peer_cell(&mr->ort, w);
    g_autofree char *g1 = mr->dflt && mr->dflt->ok
                              ? gflops_text(mr->flops, mr->dflt->median)
                              : g_strdup("-");
    g_autofree char *g2 = gflops_text(mr->flops, w);
    g_autofree char *g3 = mr->torch.ran
                              ? gflops_text(mr->flops, mr->torch.median)
                              : g_strdup("-");
    g_autofree char *g4 =
        mr->ort.ran ? gflops_text(mr->flops, mr->ort.median) : g_strdup("-");
    g_autofree char *gemm =
        mr->gemm_calls_per_run > 0
            ? g_strdup_printf("%.2f (%.0f%%)", mr->gemm_gflops,
                              100 * mr->gemm_gflops / roofline)
            : g_strdup("no GEMM calls");
    printf("| %s | %s | %s | %s | %s | %s | %s / %s / %s / %s | %s |\n",
           mr->spec->title, d, b, mr->best ? mr->best->label : "-", pt, ort, g1,
           g2, g3, g4, gemm);
  }
}

static char *cpu_model(void) {
  g_autofree char *text = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL)) {
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++)
      if (g_str_has_prefix(lines[i], "model name")) {
        const char *colon = strchr(lines[i], ':');
        if (colon)
          return g_strstrip(g_strdup(colon + 1));
      }
  }
  return g_strdup("unknown CPU");
}

static char *load_average(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return g_strdup("?");
  g_auto(GStrv) w = g_strsplit(text, " ", 4);
  return g_strv_length(w) >= 3 ? g_strdup_printf("%s %s %s", w[0], w[1], w[2])
                               : g_strdup("?");
}

/* -------------------------------------------------------------- main */

/* Sets the threading environment and re-executes once, so OpenBLAS and
 * libgomp read it when they start. */
static void ensure_environment(char **argv) {
  g_autofree char *n = g_strdup_printf("%d", opt_threads);
  gboolean changed = FALSE;
  const char *vars[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
  for (guint i = 0; i < G_N_ELEMENTS(vars); i++)
    if (g_strcmp0(g_getenv(vars[i]), n) != 0) {
      g_setenv(vars[i], n, TRUE);
      changed = TRUE;
    }
  if (changed && !g_getenv("WEIR_BENCH_REEXEC")) {
    g_setenv("WEIR_BENCH_REEXEC", "1", TRUE);
    fflush(stdout);
    execv("/proc/self/exe", argv);
    fprintf(stderr,
            "bench-models: note: could not re-execute (%s); the "
            "thread settings apply from here on\n",
            g_strerror(errno));
  }
  openblas_set_num_threads(opt_threads);
}

static gboolean selected(const char *name) {
  if (!opt_models)
    return TRUE;
  g_auto(GStrv) names = g_strsplit(opt_models, ",", -1);
  return g_strv_contains((const char *const *)names, name);
}

static ModelResult *bench_model(const ModelSpec *spec, const char *dir) {
  ModelResult *mr = g_new0(ModelResult, 1);
  mr->spec = spec;
  mr->configs = g_ptr_array_new_with_free_func(config_free);
  mr->notes = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) error = NULL;
  ModelData d = {0};
  g_autoptr(WeirGraph) g = import_model(spec, dir, &d, &error);
  if (!g) {
    printf("\n%s: %s\n", spec->name, error->message);
    model_data_clear(&d);
    return mr;
  }
  mr->flops = program_flops(g, d.bindings);

  Config *first = config_new("default", weir_graph_copy(g));
  g_ptr_array_add(mr->configs, first);
  for (guint i = 0; opt_impls && opt_impls[i]; i++) {
    g_auto(GStrv) kv = g_strsplit(opt_impls[i], "=", 2);
    g_autofree char *label = g_strconcat(first->label, " ", opt_impls[i], NULL);
    g_free(first->label);
    first->label = g_steal_pointer(&label);
    if (!kv[0] || !kv[1] ||
        !weir_native_set_impl(first->graph, kv[0], kv[1], NULL, &error)) {
      first->problem = g_strdup_printf("--impl %s: %s", opt_impls[i],
                                       error ? error->message : "OP=IMPL");
      g_clear_error(&error);
    }
  }
  if (!opt_no_search)
    add_impl_grid(mr->configs, mr->notes, g);
  for (guint i = 0; i < mr->configs->len; i++) {
    Config *c = g_ptr_array_index(mr->configs, i);
    if (!c->problem)
      run_config(c, &d);
  }
  mr->dflt = g_ptr_array_index(mr->configs, 0);

  /* transformations on top of the fastest implementation choice */
  Config *base = fastest(mr->configs);
  if (!opt_no_search && base) {
    static const struct {
      const char *suffix, *steps;
      gboolean expand;
    } variants[] = {
        {" +tier2", TIER(2), FALSE},
        {" +tier2 +expand +tier3", TIER(2) ", " TIER(3), TRUE},
        {" +tier2 +expand +tier3 +tier4", TIER(2) ", " TIER(3) ", " TIER(4),
         TRUE},
    };
    for (guint v = 0; v < G_N_ELEMENTS(variants); v++) {
      g_autofree char *label =
          g_strconcat(base->label, variants[v].suffix, NULL);
      char *problem = NULL;
      WeirGraph *t = with_recipe(base->graph, variants[v].steps,
                                 variants[v].expand, d.bindings, &problem);
      Config *c = config_new(label, t);
      c->problem = problem;
      g_ptr_array_add(mr->configs, c);
      if (t)
        run_config(c, &d);
    }
  }
  mr->best = fastest(mr->configs);
  if (mr->best)
    measure_gemm(mr, &d);
  if (!opt_no_peers) {
    run_peers(mr, &d);
  } else {
    mr->torch.note = g_strdup("skipped (--no-peers)");
    mr->ort.note = g_strdup("skipped (--no-peers)");
  }
  model_data_clear(&d);
  print_model(mr);
  return mr;
}

int main(int argc, char **argv) {
  g_auto(GStrv) original = g_strdupv(argv);
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("- Weir against PyTorch and ONNX Runtime");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    fprintf(stderr, "bench-models: %s\n", error->message);
    return 2;
  }
  if (argc != 1 || opt_threads < 1 || opt_reps < 1 || opt_warmup < 0 ||
      opt_budget <= 0) {
    fprintf(stderr, "usage: bench-models [--threads N>=1] [--reps N>=1] "
                    "[--warmup N>=0] [--models LIST] [--no-peers] "
                    "[--no-search]\n");
    return 2;
  }
  if (opt_models) {
    g_auto(GStrv) names = g_strsplit(opt_models, ",", -1);
    for (guint k = 0; names[k]; k++) {
      gboolean known = FALSE;
      for (guint m = 0; m < G_N_ELEMENTS(model_specs); m++)
        known = known || strcmp(names[k], model_specs[m].name) == 0;
      if (!known) {
        fprintf(stderr,
                "bench-models: --models: unknown model '%s' (known: mlp, "
                "lenet64, resnet, transformer)\n",
                names[k]);
        return 2;
      }
    }
  }
  ensure_environment(original);
  weir_init();

  g_autofree char *src = srcdir();
  g_autofree char *dir = opt_models_dir
                             ? g_strdup(opt_models_dir)
                             : g_build_filename(src, "samples", "models", NULL);
  g_autofree char *cpu = cpu_model();
  g_autofree char *load = load_average();
  const char *coretype = g_getenv("OPENBLAS_CORETYPE");
  WeirCompileOptions copts = compile_options();
  g_autofree char *cc = weir_compiler_command(&copts);
  g_autofree char *ccid = weir_compiler_identity(&copts, NULL);
  g_autofree char *flags = weir_compiler_flags(&copts, NULL);
  printf("machine   %s, %u processors online, load average %s\n", cpu,
         g_get_num_processors(), load);
  printf("OpenBLAS  %s, core %s (OPENBLAS_CORETYPE %s)\n",
         openblas_get_config(), openblas_get_corename(),
         coretype ? coretype : "unset");
  printf("compiler  %s (%s), flags %s\n", cc, ccid ? ccid : "?",
         flags ? flags : "?");
  printf("threads   %d (OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s "
         "OMP_WAIT_POLICY=%s)\n",
         opt_threads, g_getenv("OMP_NUM_THREADS"),
         g_getenv("OPENBLAS_NUM_THREADS"), g_getenv("OMP_WAIT_POLICY"));
  printf("runs      %d warm-up, up to %d timed per configuration (at most "
         "%.1f s of timed runs each); outputs checked against the reference "
         "(rtol %g, atol %g)\n",
         opt_warmup, opt_reps, opt_budget, RTOL, ATOL);
  double roofline_median = 0;
  double roofline = sgemm_roofline(&roofline_median);
  printf("roofline  cblas_sgemm 512x512x512: %.2f GFLOP/s (best of 30 runs; "
         "median %.2f)\n",
         roofline, roofline_median);
  fflush(stdout);

  g_autoptr(GPtrArray) results =
      g_ptr_array_new_with_free_func(model_result_free);
  for (guint m = 0; m < G_N_ELEMENTS(model_specs); m++)
    if (selected(model_specs[m].name))
      g_ptr_array_add(results, bench_model(&model_specs[m], dir));
  print_summary(results, roofline);
  g_free(opt_models);
  g_free(opt_ort_dir);
  g_free(opt_python);
  g_free(opt_models_dir);
  g_free(opt_cache_dir);
  g_strfreev(opt_impls);
  return 0;
}
