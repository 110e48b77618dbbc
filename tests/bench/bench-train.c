/* bench-train.c — training-step time of the sample models in Weir.
 *
 *   build/tests/bench/bench-train [--threads T] [--reps N] [--warmup N]
 *       [--batch B] [-O LEVEL] [--recipe R.json]... [--impl OP=IMPL]...
 *       [--per-tensor-update]
 *       MODEL.onnx...
 *
 * For each model: the training program of weir_train_graph (softmax
 * cross-entropy on a [batch, classes] output, else mse; SGD, lr 0.01; one
 * step per call) is compiled and timed with weir_kernel_bench on the
 * model's reference batch (samples/models/<name>/train/input.npy and
 * target.npy; models with a symbolic batch get --batch samples, default
 * 32, drawn from that input repeated).  Each --recipe (repeatable) is
 * applied to a copy of the training program, which is timed too (one more
 * pair of columns per recipe, named after the recipe's file).  Prints one
 * line per model on stdout: batch, then for the untransformed program and
 * for each recipe the median ms/step and the peak transient memory of the
 * program as compiled (KiB, weir_analysis_compute's peak_transient_bytes
 * after weir_native_expand_rest; the scratch buffers that native calls
 * malloc, e.g. im2col, are not in it); and the
 * mean, min and max of each timing on stderr.  A recipe that fails on a
 * model gets "-" and its error after the line.
 * -O LEVEL applies that optimization level (weir-pipeline.h, as weir train
 * -O does) to the training program before anything else (default 0: the
 * program as weir_train_graph builds it); the recipes apply after it.
 * --impl OP=IMPL (repeatable, like weir run) sets the implementation of
 * every OP node of the training program (--impl ConvGradInput=pure times
 * the pure expansion instead of the default native one).
 * --per-tensor-update builds the program with one optimizer node per
 * tensor and one finiteness sum per gradient (WeirTrainOptions.
 * per_tensor_update) instead of the multi-tensor OptimizerUpdate and
 * SumAll nodes, for before/after timings in one build.
 *
 * PyTorch's time for the same step comes from tests/bench/train-step-torch.py;
 * tests/bench/train-bench.sh runs both and prints the table of
 * docs/performance.md ("Training").
 */
#include <stdio.h>
#include <string.h>

#include "weir.h"

static gint threads = 1, reps = 50, warmup = 5, opt_level = 0;
static gint64 batch = 32, steps_per_call = 0;
static char **recipe_paths;
static char **impls;
static gboolean per_tensor_update;

static const GOptionEntry entries[] = {
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "OpenMP threads (1)", "T"},
    {"reps", 0, 0, G_OPTION_ARG_INT, &reps, "Timed steps (50)", "N"},
    {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "Untimed steps (5)", "N"},
    {"batch", 0, 0, G_OPTION_ARG_INT64, &batch,
     "Batch of models with a symbolic batch (32)", "B"},
    {"steps-per-call", 'k', 0, G_OPTION_ARG_INT64, &steps_per_call,
     "Time the program as weir train compiles it: K symbolic, K steps per "
     "call on K copies of the batch (default: K fixed to 1)",
     "K"},
    {"opt-level", 'O', 0, G_OPTION_ARG_INT, &opt_level,
     "Optimization level applied to the training program first (0)", "N"},
    {"recipe", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &recipe_paths,
     "Also time the program transformed by this recipe (repeatable)", "FILE"},
    {"impl", 0, 0, G_OPTION_ARG_STRING_ARRAY, &impls,
     "Implementation of every OP node (repeatable)", "OP=IMPL"},
    {"per-tensor-update", 0, 0, G_OPTION_ARG_NONE, &per_tensor_update,
     "The optimizer update and finiteness check per tensor, not as the "
     "multi-tensor OptimizerUpdate and SumAll nodes",
     NULL},
    {NULL}};

/* The reference batch of the model, resized to b samples along the first
 * axis by repeating it (b = the file's batch when 0). */
static WeirTensor *load_batch(const char *model, const char *file, gint64 b,
                              GError **error) {
  g_autofree char *dir = g_strndup(model, strlen(model) - strlen(".onnx"));
  g_autofree char *path = g_build_filename(dir, "train", file, NULL);
  g_autoptr(WeirTensor) t = weir_tensor_read_npy(path, error);
  if (!t)
    return NULL;
  if (b == 0 || b == t->shape[0])
    return g_steal_pointer(&t);
  g_autofree gint64 *shape = g_memdup2(t->shape, sizeof(gint64) * t->rank);
  shape[0] = b;
  WeirTensor *r = weir_tensor_new(t->dtype, t->rank, shape);
  gsize row = weir_tensor_nbytes(t) / (gsize)t->shape[0];
  for (gint64 i = 0; i < b; i++)
    memcpy((char *)r->data + i * row, (char *)t->data + (i % t->shape[0]) * row,
           row);
  return r;
}

/* [k, ...t's shape], k copies of t. */
static WeirTensor *with_lead(const WeirTensor *t, gint64 k) {
  g_autofree gint64 *shape = g_new(gint64, t->rank + 1);
  shape[0] = k;
  memcpy(shape + 1, t->shape, sizeof(gint64) * t->rank);
  WeirTensor *r = weir_tensor_new(t->dtype, t->rank + 1, shape);
  for (gint64 i = 0; i < k; i++)
    memcpy((char *)r->data + i * weir_tensor_nbytes(t), t->data,
           weir_tensor_nbytes(t));
  return r;
}

/* Median seconds per step of prog (per call / K). */
static gboolean time_program(const WeirGraph *prog, const WeirGraph *forward,
                             const WeirTensor *x, const WeirTensor *y,
                             double *median, GError **error) {
  WeirCompileOptions co = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(prog, &co, NULL, error);
  if (!k)
    return FALSE;
  if (threads > 0)
    weir_kernel_set_threads(k, threads, NULL);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  gint64 k_steps = steps_per_call > 0 ? steps_per_call : 1;
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "K", k_steps);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(prog);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = list->pdata[i];
    WeirTensor *v;
    if (!strcmp(c->name, "input")) {
      v = with_lead(x, k_steps);
    } else if (!strcmp(c->name, "target")) {
      v = with_lead(y, k_steps);
    } else {
      g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
      for (guint d = 0; d < c->shape->len; d++)
        if (!weir_expr_eval(c->shape->pdata[d], symbols, &shape[d], error))
          return FALSE;
      v = weir_tensor_new(c->dtype, c->shape->len, shape);
      memset(v->data, 0, weir_tensor_nbytes(v));
      const WeirContainer *fc = weir_graph_container(forward, c->name);
      if (fc && fc->initial)
        memcpy(v->data, g_bytes_get_data(fc->initial, NULL),
               weir_tensor_nbytes(v));
    }
    g_hash_table_insert(args, c->name, v);
  }
  WeirBenchOptions bo = {.warmup = (guint)warmup, .repetitions = (guint)reps};
  WeirBenchResult r = {0};
  if (!weir_kernel_bench(k, steps_per_call > 0 ? symbols : NULL, args, &bo, &r,
                         error))
    return FALSE;
  *median = r.median / (double)k_steps;
  /* the mean shows what a loaded machine costs a training run */
  fprintf(stderr, "  (%s mean %.3f ms/step, min %.3f, max %.3f)\n", prog->name,
          r.mean / (double)k_steps * 1e3, r.min / (double)k_steps * 1e3,
          r.max / (double)k_steps * 1e3);
  weir_bench_result_clear(&r);
  return TRUE;
}

/* Peak transient memory of prog as compiled (the library nodes without a
 * native implementation expanded, as the code generator does) in KiB, K
 * bound to the steps per call, or -1 when it cannot be evaluated (the
 * reason in error). */
static double peak_kib(const WeirGraph *prog, GError **error) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(prog);
  if (!weir_native_expand_rest(copy, error))
    return -1;
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "K", steps_per_call > 0 ? steps_per_call : 1);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(copy, symbols, error);
  if (!a)
    return -1;
  if (!a->peak_transient_bytes.known) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "the peak transient memory of '%s' depends on unbound symbols",
                prog->name);
    return -1;
  }
  return (double)a->peak_transient_bytes.value / 1024.0;
}

/* "  12.345  678.9" (ms/step in a column of width, peak KiB), "-" for what
 * is unknown. */
static void print_pair(int width, double seconds, double kib) {
  if (seconds >= 0)
    printf("  %*.3f", width, seconds * 1e3);
  else
    printf("  %*s", width, "-");
  if (kib >= 0)
    printf(" %9.1f", kib);
  else
    printf(" %9s", "-");
}

static int bench_model(const char *model) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirOnnxModel) m = weir_onnx_model_load(model, &error);
  if (!m) {
    fprintf(stderr, "%s\n", error->message);
    return 1;
  }
  const WeirOnnxGraph *g = weir_onnx_model_graph(m);
  gboolean dynamic = g->n_inputs > 0 && g->inputs[0].rank > 0 &&
                     g->inputs[0].dims[0].value < 0;
  g_autoptr(WeirTensor) x =
      load_batch(model, "input.npy", dynamic ? batch : 0, &error);
  g_autoptr(WeirTensor) y =
      x ? load_batch(model, "target.npy", dynamic ? batch : 0, &error) : NULL;
  if (!y) {
    fprintf(stderr, "%s\n", error->message);
    return 1;
  }
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, x->shape, x->rank);
  g_hash_table_insert(shapes, "input", shape);
  WeirOnnxImportOptions io = {.input_shapes = shapes};
  g_autoptr(WeirGraph) forward = weir_onnx_import_model(m, &io, &error);
  if (!forward) {
    fprintf(stderr, "%s\n", error->message);
    return 1;
  }
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = y->dtype == WEIR_DTYPE_I64 ? WEIR_LOSS_SOFTMAX_CROSS_ENTROPY
                                      : WEIR_LOSS_MSE;
  o.steps = steps_per_call > 0 ? 0 : 1;
  o.per_tensor_update = per_tensor_update;
  g_autofree char *base = g_path_get_basename(model);
  g_autoptr(WeirGraph) prog = weir_train_graph(forward, &o, &error);
  if (!prog) {
    printf("%-16s %6" G_GINT64_FORMAT "  not supported: %s\n", base,
           x->shape[0], error->message);
    return 0;
  }
  for (char **p = impls; p && *p; p++) {
    g_auto(GStrv) kv = g_strsplit(*p, "=", 2);
    if (!kv[0] || !kv[1]) {
      fprintf(stderr, "bench-train: --impl %s: expected OP=IMPL\n", *p);
      return 1;
    }
    if (!weir_native_set_impl(prog, kv[0], kv[1], NULL, &error)) {
      fprintf(stderr, "%s: --impl %s: %s\n", model, *p, error->message);
      return 1;
    }
  }
  if (opt_level > 0 &&
      !weir_pipeline_apply(prog, (guint)opt_level, NULL, NULL, &error)) {
    fprintf(stderr, "%s: -O%d: %s\n", model, opt_level, error->message);
    return 1;
  }
  double plain = 0;
  if (!time_program(prog, forward, x, y, &plain, &error)) {
    fprintf(stderr, "%s: %s\n", model, error->message);
    return 1;
  }
  g_autoptr(GString) notes = g_string_new(NULL);
  double plain_kib = peak_kib(prog, &error);
  if (error) {
    g_string_append_printf(notes, "  (peak: %s)", error->message);
    g_clear_error(&error);
  }
  printf("%-16s %6" G_GINT64_FORMAT, base, x->shape[0]);
  print_pair(10, plain, plain_kib);
  for (char **rp = recipe_paths; rp && *rp; rp++) {
    g_autoptr(WeirRecipe) r = weir_recipe_load(*rp, &error);
    g_autoptr(WeirGraph) t = weir_graph_copy(prog);
    double seconds = -1, kib = -1;
    if (r && weir_recipe_apply(t, r, NULL, NULL, &error) &&
        time_program(t, forward, x, y, &seconds, &error))
      kib = peak_kib(t, &error);
    if (error) {
      g_autofree char *name = g_path_get_basename(*rp);
      g_string_append_printf(notes, "  (%s: %s)", name, error->message);
      g_clear_error(&error);
    }
    print_pair(18, seconds, kib);
  }
  printf("%s\n", notes->str);
  return 0;
}

int main(int argc, char **argv) {
  g_autoptr(GOptionContext) ctx = g_option_context_new("MODEL.onnx...");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc < 2) {
    fprintf(stderr, "bench-train: %s\n",
            error ? error->message : "give one or more models");
    return 2;
  }
  weir_transforms_init();
  printf("# Weir training step, SGD, -O%d, %d thread%s, median of %d "
         "(ms/step)",
         opt_level, threads, threads == 1 ? "" : "s", reps);
  if (steps_per_call > 0)
    printf(", K symbolic, %" G_GINT64_FORMAT " steps per call", steps_per_call);
  printf("\n");
  printf("# per program: ms/step, then peak transient memory (KiB)\n");
  printf("%-16s %6s  %10s %9s", "model", "batch", "weir", "KiB");
  for (char **rp = recipe_paths; rp && *rp; rp++) {
    g_autofree char *name = g_path_get_basename(*rp);
    char *dot = strrchr(name, '.');
    if (dot)
      *dot = 0;
    printf("  %18.18s %9s", name, "KiB");
  }
  printf("\n");
  int status = 0;
  for (int i = 1; i < argc; i++)
    status |= bench_model(argv[i]);
  return status;
}
