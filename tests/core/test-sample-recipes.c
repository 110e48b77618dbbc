/* test-sample-recipes.c — the recipes of samples/recipes on the sample
 * models of samples/models.
 *
 * For each model and its recipe, what `weir optimize MODEL --recipe R.json`
 * does (weir_recipe_apply) must
 *   (a) run every step, and every step must apply at least once and leave
 *       a valid program;
 *   (b) compute PyTorch's reference output (samples/models/M/output_0.pb)
 *       from the reference input, in the reference interpreter (library
 *       nodes expanded) and in compiled code (native implementations kept),
 *       and the compiled optimized program agrees with the compiled
 *       unoptimized one;
 *   (c) cut the data movement by the factor the table below promises.
 *
 * Bytes moved are counted *as compiled* on both sides (docs/performance.md,
 * "Sample recipes"): library nodes that the code generator implements
 * natively (BLAS GEMM, im2col convolution) count each operand once,
 * everything else is expanded into maps and counted access by access
 * (weir_native_expand_rest, then the analysis).  The baseline is the
 * imported model counted the same way, i.e. what `weir bench` runs.
 *
 * Where the 2x target is out of reach, the test proves why when it can:
 * every weight and argument must move at least once, and for mlp that
 * compulsory traffic alone is more than half the baseline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "weir.h"

typedef struct {
  const char *name;
  gint64 batch;     /* value of the symbol "batch" (0: none) */
  double factor;    /* baseline bytes / optimized bytes, at least */
  gboolean bounded; /* 2x is impossible: compulsory traffic > baseline / 2 */
} Case;

static const Case cases[] = {
    {"mlp", 4, 1.0, TRUE},
    /* 1.38x until the default MaxPool became native (Weir's pooling
     * kernel): the baseline then fell from 55,544 to 49,400 B */
    {"lenet", 0, 1.2, FALSE},
    {"resnet", 0, 2.0, FALSE},
    /* 1.55x until Softmax's default became native (Weir's row kernel,
     * which the recipe's explicit pure expansion does not use): the
     * baseline then fell to 263,848 B, the recipe gives 176,256 B; and
     * to 255,144 B (1.448x) when the layer norms' ReduceMean became
     * native (Weir's sum over axes) */
    {"transformer", 0, 1.44, FALSE},
};

static char *sample(const char *a, const char *b, const char *c) {
  return g_build_filename(WEIR_SRCDIR, "samples", a, b, c, NULL);
}

/* Total bytes moved of g as compiled; *peak receives the peak transient
 * memory of that program. */
static gint64 compiled_bytes(const WeirGraph *g, GHashTable *symbols,
                             gint64 *peak) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  g_autoptr(GError) error = NULL;
  if (!weir_native_expand_rest(copy, &error))
    fail_msg("%s: %s", g->name, error->message);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(copy, symbols, &error);
  if (!a)
    fail_msg("%s: %s", g->name, error->message);
  assert_true(a->total_bytes.known);
  if (peak) {
    assert_true(a->peak_transient_bytes.known);
    *peak = a->peak_transient_bytes.value;
  }
  return a->total_bytes.value;
}

/* Bytes every implementation must move: each argument and constant once. */
static gint64 compulsory_bytes(const WeirGraph *g, GHashTable *symbols) {
  gint64 sum = 0;
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient && !c->initial)
      continue;
    g_autoptr(WeirExpr) e = weir_container_bytes(c);
    gint64 v;
    assert_true(weir_expr_eval(e, symbols, &v, NULL));
    sum += v;
  }
  return sum;
}

static GHashTable *arguments(const WeirTensor *input, const WeirTensor *want) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, (gpointer) "input", weir_tensor_copy(input));
  g_hash_table_insert(args, (gpointer) "output",
                      weir_tensor_new(want->dtype, want->rank, want->shape));
  return args;
}

static void assert_close(const WeirTensor *got, const WeirTensor *want,
                         const char *model, const char *what) {
  g_autoptr(GError) error = NULL;
  double err = 0;
  if (!weir_tensor_allclose(got, want, 1e-4, 1e-5, &err, &error))
    fail_msg("%s: %s: %s", model, what, error->message);
  print_message("  %-40s max abs error %.3g\n", what, err);
}

static void check_model(const Case *c) {
  g_autofree char *file = g_strdup_printf("%s.onnx", c->name);
  g_autofree char *recipe_file = g_strdup_printf("%s.json", c->name);
  g_autofree char *model = sample("models", file, NULL);
  g_autofree char *recipe_path = sample("recipes", recipe_file, NULL);
  g_autofree char *in_path = sample("models", c->name, "input_0.pb");
  g_autofree char *out_path = sample("models", c->name, "output_0.pb");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) input = weir_tensor_read_pb(in_path, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(WeirTensor) want = weir_tensor_read_pb(out_path, NULL, &error);
  g_assert_no_error(error);

  g_autoptr(GHashTable) symbols = weir_bindings_new();
  if (c->batch)
    weir_bindings_set(symbols, "batch", c->batch);
  WeirOnnxImportOptions opts = {.symbols = symbols};
  g_autoptr(WeirGraph) base = weir_onnx_import(model, &opts, &error);
  if (!base)
    fail_msg("%s: %s", model, error->message);
  g_autoptr(WeirRecipe) recipe = weir_recipe_load(recipe_path, &error);
  if (!recipe)
    fail_msg("%s", error->message);

  /* (a) every step applies */
  g_autoptr(WeirGraph) g = weir_graph_copy(base);
  g_autoptr(WeirRecipeReport) report = weir_recipe_report_new();
  gboolean ok = weir_recipe_apply(g, recipe, symbols, report, &error);
  if (!ok) {
    g_autofree char *text = weir_recipe_report_to_text(report);
    fail_msg("%s\n%s", text, error->message);
  }
  assert_true(report->ok);
  assert_int_equal(report->steps->len, recipe->steps->len);
  for (guint i = 0; i < report->steps->len; i++) {
    const WeirRecipeStepReport *s = g_ptr_array_index(report->steps, i);
    if (!s->ok || !s->validated || s->applied->len == 0)
      fail_msg("%s: step %u (%s, site %s) %s: %u applied%s%s", recipe_path,
               s->step, s->transform, s->selector, s->ok ? "ran" : "failed",
               s->applied->len, s->error ? ": " : "", s->error ? s->error : "");
  }

  /* (c) data movement, counted as compiled on both sides */
  gint64 peak0 = 0, peak1 = 0;
  gint64 b0 = compiled_bytes(base, symbols, &peak0);
  gint64 b1 = compiled_bytes(g, symbols, &peak1);
  gint64 must = compulsory_bytes(base, symbols);
  double factor = (double)b0 / (double)b1;
  print_message("%s: bytes moved (as compiled) %" G_GINT64_FORMAT
                " -> %" G_GINT64_FORMAT " (%.2fx), compulsory %" G_GINT64_FORMAT
                "; peak transient %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT
                "\n",
                c->name, b0, b1, factor, must, peak0, peak1);
  if (factor < c->factor)
    fail_msg("%s: bytes moved %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT
             " is %.3fx, below the promised %.2fx",
             c->name, b0, b1, factor, c->factor);
  assert_true(peak1 <= peak0);
  /* where 2x is not promised, it is impossible: what must move anyway is
   * more than half the baseline */
  if (c->factor < 2.0 && c->bounded)
    assert_true(2 * must > b0);

  /* (b) the interpreter: library nodes expanded */
  {
    g_autoptr(WeirGraph) x = weir_graph_copy(g);
    if (!weir_expand_all(x, NULL, NULL, &error))
      fail_msg("%s: %s", c->name, error->message);
    g_autoptr(GHashTable) args = arguments(input, want);
    if (!weir_interpret(x, symbols, args, NULL, &error))
      fail_msg("%s: %s", c->name, error->message);
    assert_close(g_hash_table_lookup(args, "output"), want, c->name,
                 "optimized, interpreted vs PyTorch");
  }

  /* (b) compiled code, native implementations kept, before and after */
  const WeirGraph *graphs[2] = {base, g};
  WeirKernel *kernels[2] = {NULL, NULL};
  WeirCompileOptions co = {.no_cache = TRUE};
  if (!weir_kernel_compile_many(graphs, 2, &co, kernels, NULL, &error))
    fail_msg("%s: %s", c->name, error->message);
  g_autoptr(WeirKernel) k0 = kernels[0];
  g_autoptr(WeirKernel) k1 = kernels[1];
  g_autoptr(GHashTable) args0 = arguments(input, want);
  g_autoptr(GHashTable) args1 = arguments(input, want);
  if (!weir_kernel_run(k0, symbols, args0, &error) ||
      !weir_kernel_run(k1, symbols, args1, &error))
    fail_msg("%s: %s", c->name, error->message);
  const WeirTensor *out0 = g_hash_table_lookup(args0, "output");
  const WeirTensor *out1 = g_hash_table_lookup(args1, "output");
  assert_close(out1, want, c->name, "optimized, compiled vs PyTorch");
  assert_close(out1, out0, c->name, "optimized vs unoptimized, compiled");
}

static void test_mlp(void **state) {
  (void)state;
  check_model(&cases[0]);
}

static void test_lenet(void **state) {
  (void)state;
  check_model(&cases[1]);
}

static void test_resnet(void **state) {
  (void)state;
  check_model(&cases[2]);
}

static void test_transformer(void **state) {
  (void)state;
  check_model(&cases[3]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp),
      cmocka_unit_test(test_lenet),
      cmocka_unit_test(test_resnet),
      cmocka_unit_test(test_transformer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
