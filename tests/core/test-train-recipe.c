/* test-train-recipe.c — samples/recipes/train-fast.json on the training
 * program of every sample model.
 *
 * For each model of samples/models, the training program of
 * weir_train_graph (one step, K = 1; softmax cross-entropy for the
 * classifiers, mse for the transformer, as in manifest.json; SGD, and Adam
 * for two models) is built on the model's reference batch
 * (samples/models/<name>/train/).  A copy gets the recipe
 * (weir_recipe_apply), which must
 *   (a) succeed and leave a valid program in which some step applied
 *       (the recipe is not a no-op on any model) and, on resnet and the
 *       transformer, a tier-3 fusion step (the MLPs' and small CNNs' only
 *       sites were their bias-gradient sums, which are native);
 *   (b) keep the native implementations: every node of the untransformed
 *       program whose default implementation is native (Gemm, MatMul,
 *       Conv, ConvGradInput, ConvGradFilter, MaxPoolGrad, the sums over
 *       rows of SumTo, ...) is still a library node;
 *   (c) compute the same step: both programs are compiled and run from the
 *       same weights and data, and every argument after the step (the
 *       loss, every parameter, batch-norm statistics, optimizer state) is
 *       compared element by element (|a-b| <= 1e-6 + 1e-5 |b|: fusion may
 *       reorder a float sum);
 *   (d) not raise the peak transient memory of the program as compiled
 *       (non-native library nodes expanded on both sides,
 *       weir_native_expand_rest) by more than 1%.  The margin is for the
 *       small accumulators of the expanded reductions (the scalar gradient
 *       sums of the finiteness check, the per-sample loss): the recipe
 *       expands operator type by operator type, so their maps get other
 *       node ids than weir_native_expand_rest gives them, the analysis'
 *       topological order places their start elsewhere, and they can
 *       join the live set at the peak (+148 B of 53 KiB on digits_mlp at
 *       batch 32). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "weir.h"

typedef struct {
  const char *model;
  WeirOptimizer optimizer;
  /* a tier-3 fusion must apply (the only sites of the MLPs and small CNNs
   * were element-wise maps into their bias-gradient sums, which keep
   * Weir's sum over axes) */
  gboolean fuses;
} Case;

/* The operators that have a native implementation, from the registry
 * (ir/lower/weir-native.h), once each. */
static GPtrArray *native_ops(void) {
  GPtrArray *ops = g_ptr_array_new_with_free_func(g_free);
  g_auto(GStrv) impls = weir_native_impls();
  for (guint i = 0; impls[i]; i++) {
    g_autofree char *op = g_strndup(impls[i], strcspn(impls[i], "/"));
    if (!ops->len || strcmp(g_ptr_array_index(ops, ops->len - 1), op) != 0)
      g_ptr_array_add(ops, g_steal_pointer(&op));
  }
  return ops;
}

static char *train_file(const char *model, const char *file) {
  return g_build_filename(WEIR_SRCDIR, "samples", "models", model, "train",
                          file, NULL);
}

static WeirTensor *load_npy(const char *model, const char *file) {
  g_autofree char *path = train_file(model, file);
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_read_npy(path, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

/* A tensor with shape [1, ...t's shape] and t's data. */
static WeirTensor *with_lead(const WeirTensor *t) {
  g_autofree gint64 *shape = g_new(gint64, t->rank + 1);
  shape[0] = 1;
  memcpy(shape + 1, t->shape, sizeof(gint64) * t->rank);
  WeirTensor *r = weir_tensor_new(t->dtype, t->rank + 1, shape);
  memcpy(r->data, t->data, weir_tensor_nbytes(t));
  return r;
}

/* Library nodes of op in g, over all states. */
/* The library nodes of op in g whose default implementation is native. */
static guint count_op(const WeirGraph *g, const char *op) {
  guint n = 0;
  for (guint s = 0; s < g->states->len; s++) {
    const WeirState *st = g->states->pdata[s];
    for (guint i = 0; i < st->nodes->len; i++) {
      const WeirNode *node = st->nodes->pdata[i];
      if (node->kind == WEIR_NODE_LIBRARY && !g_strcmp0(node->op, op) &&
          strcmp(weir_native_default_impl(g, st, node), "pure") != 0)
        n++;
    }
  }
  return n;
}

/* Peak transient bytes of g as compiled. */
static gint64 compiled_peak(const WeirGraph *g) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  g_autoptr(GError) error = NULL;
  if (!weir_native_expand_rest(copy, &error))
    fail_msg("%s: %s", g->name, error->message);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(copy, NULL, &error);
  if (!a)
    fail_msg("%s: %s", g->name, error->message);
  assert_true(a->peak_transient_bytes.known);
  return a->peak_transient_bytes.value;
}

/* Compiles prog and runs one step on the model's batch and initial
 * weights; returns every argument after the step (name -> tensor, owned). */
static GHashTable *run_step(const WeirGraph *prog, const WeirGraph *forward,
                            const WeirTensor *x, const WeirTensor *y) {
  g_autoptr(GError) error = NULL;
  WeirCompileOptions co = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(prog, &co, NULL, &error);
  if (!k)
    fail_msg("%s", error->message);
  GHashTable *state = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(prog);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = args->pdata[i];
    WeirTensor *v = NULL;
    if (!strcmp(c->name, "input")) {
      v = with_lead(x);
    } else if (!strcmp(c->name, "target")) {
      v = with_lead(y);
    } else {
      g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
      for (guint d = 0; d < c->shape->len; d++)
        assert_true(weir_expr_eval(c->shape->pdata[d], NULL, &shape[d], NULL));
      v = weir_tensor_new(c->dtype, c->shape->len, shape);
      memset(v->data, 0, weir_tensor_nbytes(v));
      const WeirContainer *fc = weir_graph_container(forward, c->name);
      if (fc && fc->initial)
        memcpy(v->data, g_bytes_get_data(fc->initial, NULL),
               weir_tensor_nbytes(v));
    }
    g_hash_table_insert(state, g_strdup(c->name), v);
  }
  weir_kernel_set_threads(k, 1, NULL);
  if (!weir_kernel_run(k, NULL, state, &error))
    fail_msg("%s", error->message);
  return state;
}

/* Number of elements of got that differ from want beyond the tolerance;
 * the worst is described in *worst. */
static gint64 count_differences(const WeirTensor *got, const WeirTensor *want,
                                char **worst) {
  assert_int_equal(got->count, want->count);
  gint64 bad = 0, at = -1;
  double worst_err = -1;
  for (gint64 i = 0; i < got->count; i++) {
    double a = weir_tensor_get(got, i), b = weir_tensor_get(want, i);
    double err = fabs(a - b);
    if (!(err <= 1e-6 + 1e-5 * fabs(b))) {
      bad++;
      if (!(err <= worst_err)) {
        worst_err = err;
        at = i;
      }
    }
  }
  if (bad)
    *worst = g_strdup_printf(
        "worst at %" G_GINT64_FORMAT ": %.9g with the recipe, %.9g without", at,
        weir_tensor_get(got, at), weir_tensor_get(want, at));
  return bad;
}

static void check_model(void **state) {
  const Case *c = *state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) x = load_npy(c->model, "input.npy");
  g_autoptr(WeirTensor) y = load_npy(c->model, "target.npy");
  g_autofree char *manifest_path = train_file(c->model, "manifest.json");
  json_object *manifest = json_object_from_file(manifest_path);
  assert_non_null(manifest);
  json_object *lossname = NULL;
  assert_true(json_object_object_get_ex(manifest, "loss", &lossname));
  WeirTrainOptions o;
  weir_train_options_init(&o);
  assert_true(weir_loss_from_name(json_object_get_string(lossname), &o.loss));
  json_object_put(manifest);
  o.optimizer = c->optimizer;
  o.steps = 1;

  g_autofree char *onnx_name = g_strdup_printf("%s.onnx", c->model);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", onnx_name, NULL);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, x->shape, x->rank);
  g_hash_table_insert(shapes, "input", shape);
  WeirOnnxImportOptions io = {.input_shapes = shapes};
  g_autoptr(WeirGraph) forward = weir_onnx_import(path, &io, &error);
  if (!forward)
    fail_msg("%s", error->message);
  g_autoptr(WeirGraph) prog = weir_train_graph(forward, &o, &error);
  if (!prog)
    fail_msg("%s: %s", c->model, error->message);

  /* (a) */
  g_autofree char *recipe_path = g_build_filename(
      WEIR_SRCDIR, "samples", "recipes", "train-fast.json", NULL);
  g_autoptr(WeirRecipe) recipe = weir_recipe_load(recipe_path, &error);
  if (!recipe)
    fail_msg("%s", error->message);
  g_autoptr(WeirGraph) fast = weir_graph_copy(prog);
  g_autoptr(WeirRecipeReport) report = weir_recipe_report_new();
  if (!weir_recipe_apply(fast, recipe, NULL, report, &error))
    fail_msg("%s: %s", c->model, error->message);
  if (!weir_graph_validate(fast, &error))
    fail_msg("%s: %s", c->model, error->message);
  guint fusions = 0, applied = 0;
  for (guint i = 0; i < report->steps->len; i++) {
    const WeirRecipeStepReport *s = report->steps->pdata[i];
    applied += s->applied->len;
    if (g_str_has_suffix(s->transform, "-fusion"))
      fusions += s->applied->len;
  }
  if (applied == 0)
    fail_msg("%s: no step applied", c->model);
  if (c->fuses && fusions == 0)
    fail_msg("%s: no fusion applied", c->model);

  /* (b) */
  g_autoptr(GPtrArray) natives = native_ops();
  assert_true(natives->len > 0);
  for (guint i = 0; i < natives->len; i++) {
    const char *op = g_ptr_array_index(natives, i);
    if (count_op(fast, op) != count_op(prog, op))
      fail_msg("%s: %u %s nodes before the recipe, %u after", c->model,
               count_op(prog, op), op, count_op(fast, op));
  }

  /* (c) */
  g_autoptr(GHashTable) want = run_step(prog, forward, x, y);
  g_autoptr(GHashTable) got = run_step(fast, forward, x, y);
  assert_int_equal(g_hash_table_size(got), g_hash_table_size(want));
  g_autoptr(GList) names = g_hash_table_get_keys(want);
  names = g_list_sort(names, (GCompareFunc)strcmp);
  guint compared = 0;
  for (GList *l = names; l; l = l->next) {
    const WeirTensor *w = g_hash_table_lookup(want, l->data);
    const WeirTensor *g = g_hash_table_lookup(got, l->data);
    if (!g)
      fail_msg("%s: '%s' is not an argument after the recipe", c->model,
               (const char *)l->data);
    g_autofree char *worst = NULL;
    gint64 bad = count_differences(g, w, &worst);
    if (bad)
      fail_msg("%s: '%s': %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
               " elements differ; %s",
               c->model, (const char *)l->data, bad, w->count, worst);
    compared++;
  }

  /* (d) */
  gint64 before = compiled_peak(prog), after = compiled_peak(fast);
  if (after * 100 > before * 101)
    fail_msg("%s: peak transient memory %" G_GINT64_FORMAT
             " B with the recipe, %" G_GINT64_FORMAT " B without",
             c->model, after, before);
  print_message("%s: %u applications (%u fusions), %u arguments agree, "
                "peak %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT " B\n",
                c->model, applied, fusions, compared, before, after);
}

static const Case cases[] = {
    {"digits_mlp", WEIR_OPTIMIZER_SGD, FALSE},
    {"digits_mlp", WEIR_OPTIMIZER_ADAM, FALSE},
    {"mlp", WEIR_OPTIMIZER_SGD, FALSE},
    {"digits_cnn", WEIR_OPTIMIZER_SGD, FALSE},
    {"lenet", WEIR_OPTIMIZER_SGD, FALSE},
    {"lenet", WEIR_OPTIMIZER_ADAM, FALSE},
    {"resnet", WEIR_OPTIMIZER_SGD, TRUE},
    {"transformer", WEIR_OPTIMIZER_SGD, TRUE},
};

int main(void) {
  weir_transforms_init();
  struct CMUnitTest tests[G_N_ELEMENTS(cases)];
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *name = g_strdup_printf(
        "%s-%s", cases[i].model,
        cases[i].optimizer == WEIR_OPTIMIZER_SGD ? "sgd" : "adam");
    g_ptr_array_add(names, name);
    tests[i] =
        (struct CMUnitTest){name, check_model, NULL, NULL, (void *)&cases[i]};
  }
  return _cmocka_run_group_tests("test-train-recipe", tests,
                                 G_N_ELEMENTS(cases), NULL, NULL);
}
