/* test-train-bn-backward.c — horizontal-map-fusion on the backward pass
 * of a training batch normalization (issue 16; docs/training.md, "The
 * batch norm's backward and horizontal-map-fusion").
 *
 * The backward of a batch norm in training mode holds two element-wise
 * maps over the whole gradient dY that both read it: dY * gamma (the
 * gradient of the normalized value) and dY * xhat (summed into gamma's
 * gradient).  horizontal-map-fusion, applied after -O2 until nothing
 * matches, merges them into one loop that reads dY once.  (It is not part
 * of -O2: docs/performance.md, "The batch norm's backward maps (bn16m)",
 * measured the merged loops slower.)  On the small CNN with a batch norm
 * of the training fixtures ([5, 3, 4, 4] gradients: odd sizes), for SGD
 * and Adam:
 *  - afterwards one map writes both gradients, and none did before;
 *  - the transformed program, compiled with 1, 2 and 3 threads, gives the
 *    parameters, running statistics and losses of the unoptimized program
 *    run by the interpreter, within float rounding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "train-state.h"
#include "weir.h"

#define BN_CNN "tests/core/data/train-blocks/bn_conv_momentum/model.onnx"

enum { K = 2 };

static WeirGraph *program(WeirOptimizer opt) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, BN_CNN, NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(path, NULL, &err);
  if (!fwd)
    fail_msg("%s", err->message);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = opt;
  o.lr = 0.05;
  WeirGraph *t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  return t;
}

static GHashTable *bindings(void) {
  GHashTable *sym = weir_bindings_new();
  weir_bindings_set(sym, "K", K);
  return sym;
}

/* Every argument: the model's initializers, a random batch, labels, the
 * rest zero. */
static GHashTable *initial_state(const WeirGraph *prog) {
  g_autoptr(GHashTable) sym = bindings();
  GHashTable *state = train_state_zero(prog, prog, sym);
  weir_tensor_fill_random(g_hash_table_lookup(state, "input"), 7);
  WeirTensor *t = g_hash_table_lookup(state, "target");
  for (gint64 j = 0; j < t->count; j++)
    weir_tensor_set(t, j, (double)(j * 7 % 10));
  return state;
}

/* threads 0: interpreted (expanded); else compiled with that many. */
static GHashTable *run(const WeirGraph *prog, int threads) {
  GHashTable *state = initial_state(prog);
  g_autoptr(GHashTable) sym = bindings();
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) x = weir_graph_copy(prog);
  if (threads == 0) {
    if (!weir_expand_all(x, NULL, NULL, &err) ||
        !weir_interpret(x, sym, state, NULL, &err))
      fail_msg("%s", err->message);
    return state;
  }
  WeirCompileOptions co = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(x, &co, NULL, &err);
  if (!k || !weir_kernel_set_threads(k, threads, &err) ||
      !weir_kernel_run(k, sym, state, &err))
    fail_msg("%s", err->message);
  return state;
}

static void compare(const char *what, GHashTable *got, GHashTable *want) {
  GHashTableIter it;
  gpointer key, value;
  guint n = 0;
  g_hash_table_iter_init(&it, want);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    if (!strcmp(key, "input") || !strcmp(key, "target"))
      continue;
    const WeirTensor *w = value, *a = g_hash_table_lookup(got, key);
    assert_non_null(a);
    assert_int_equal(a->count, w->count);
    for (gint64 i = 0; i < w->count; i++) {
      double x = weir_tensor_get(a, i), y = weir_tensor_get(w, i);
      if (!(fabs(x - y) <= 2e-6 + 2e-5 * fabs(y)))
        fail_msg("%s: %s[%" G_GINT64_FORMAT "] = %.9g, expected %.9g", what,
                 (const char *)key, i, x, y);
    }
    n++;
  }
  assert_true(n >= 8); /* six parameters, two running statistics, ... */
}

/* Whether one map of g writes both containers a and b. */
static gboolean one_map_writes(const WeirGraph *g, const char *a,
                               const char *b) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *x = s->nodes->pdata[j];
      if (x->kind != WEIR_NODE_MAP_EXIT)
        continue;
      gboolean wa = FALSE, wb = FALSE;
      for (guint e = 0; e < s->edges->len; e++) {
        const WeirMemlet *m = s->edges->pdata[e];
        if (m->src != x->id || !m->data)
          continue;
        wa = wa || strcmp(m->data, a) == 0;
        wb = wb || strcmp(m->data, b) == 0;
      }
      if (wa && wb)
        return TRUE;
    }
  }
  return FALSE;
}

static void check(WeirOptimizer opt, const char *name) {
  g_autoptr(WeirGraph) prog = program(opt);
  g_autoptr(WeirGraph) q = weir_graph_copy(prog);
  g_autoptr(GHashTable) sym = bindings();
  g_autoptr(GError) err = NULL;
  if (!weir_pipeline_apply(q, 2, sym, NULL, &err))
    fail_msg("%s: -O2: %s", name, err->message);
  assert_non_null(weir_graph_container(q, "normalized_grad"));
  assert_non_null(weir_graph_container(q, "channel_grad"));
  assert_false(one_map_writes(q, "normalized_grad", "channel_grad"));
  /* dY * gamma and dY * xhat in one loop over dY */
  static const char horizontal[] =
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [{"
      "\"transform\": \"horizontal-map-fusion\", "
      "\"repeat\": \"until-no-match\"}]}";
  g_autoptr(WeirRecipe) r = weir_recipe_parse(horizontal, -1, "test", &err);
  if (!r)
    fail_msg("%s", err->message);
  if (!weir_recipe_apply(q, r, sym, NULL, &err))
    fail_msg("%s: horizontal-map-fusion: %s", name, err->message);
  assert_true(one_map_writes(q, "normalized_grad", "channel_grad"));

  g_autoptr(GHashTable) want = run(prog, 0);
  for (int t = 1; t <= 3; t++) {
    g_autoptr(GHashTable) got = run(q, t);
    g_autofree char *what = g_strdup_printf(
        "%s, -O2 + horizontal, compiled, %d thread(s)", name, t);
    compare(what, got, want);
  }
}

static void test_sgd(void **state) {
  (void)state;
  check(WEIR_OPTIMIZER_SGD, "sgd");
}

static void test_adam(void **state) {
  (void)state;
  check(WEIR_OPTIMIZER_ADAM, "adam");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd),
      cmocka_unit_test(test_adam),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
