/* test-train-fused.c — the multi-tensor optimizer update and finiteness
 * check of training programs (OptimizerUpdate and SumAll, issue 16 item 1;
 * docs/training.md, "Optimizers").
 *
 * A training program holds by default one OptimizerUpdate node over every
 * parameter (and batch normalization's running statistics) and one SumAll
 * node for the check (and for the clipping norm);
 * WeirTrainOptions.per_tensor_update gives the program built before them
 * (one Pointwise node per parameter, state tensor and running statistic,
 * one ReduceSum per gradient).  On the sample MLP and a small CNN with
 * batch normalization, K steps of SGD, momentum and Adam, with weight
 * decay, a learning-rate schedule, clipping, and a step whose batch holds
 * a NaN:
 *  - interpreted, the two programs give bit-identical parameters, moments,
 *    losses and counters (the pure expansions compute what the per-tensor
 *    nodes computed);
 *  - compiled (the native one-region kernels, core/kernels/multi-tensor.c)
 *    with 1 and 2 threads, also with every tensor split between the
 *    threads (impl_params grain=1), they agree with the interpreter within
 *    float rounding, and the NaN step is skipped;
 *  - the program and the generated C have the shape promised: one node
 *    each, no per-gradient sums, one call each and fewer parallel loops;
 *  - a malformed OptimizerUpdate is an expansion error naming the node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "train-state.h"
#include "weir-ops-update.h"
#include "weir.h"

enum { B = 4, K = 3 };

/* The sample MLP, and a small CNN with batch normalization in training
 * mode (running statistics: moving averages in the OptimizerUpdate
 * node). */
#define MLP "samples/models/mlp.onnx"
#define BN_CNN "tests/core/data/train-blocks/bn_conv_momentum/model.onnx"

typedef struct {
  const char *name;
  const char *model; /* under the source tree */
  WeirOptimizer opt;
  double weight_decay;
  gboolean schedule; /* cosine with one warm-up step */
  double clip;       /* clip_grad_norm, 0: none */
  gboolean nan;      /* step 1's batch holds a NaN */
} Case;

static const Case cases[] = {
    {"sgd", MLP, WEIR_OPTIMIZER_SGD, 0, FALSE, 0, FALSE},
    {"sgd_decay_clip", MLP, WEIR_OPTIMIZER_SGD, 0.01, FALSE, 0.5, FALSE},
    {"momentum_decay", MLP, WEIR_OPTIMIZER_MOMENTUM, 0.01, FALSE, 0, FALSE},
    {"momentum_nan", MLP, WEIR_OPTIMIZER_MOMENTUM, 0, FALSE, 0, TRUE},
    {"adam", MLP, WEIR_OPTIMIZER_ADAM, 0, FALSE, 0, FALSE},
    {"adam_cosine_clip_decay", MLP, WEIR_OPTIMIZER_ADAM, 0.01, TRUE, 1.0,
     FALSE},
    {"adam_nan", MLP, WEIR_OPTIMIZER_ADAM, 0.01, FALSE, 0, TRUE},
    {"bn_momentum", BN_CNN, WEIR_OPTIMIZER_MOMENTUM, 0, FALSE, 0, FALSE},
    {"bn_sgd_cosine_clip", BN_CNN, WEIR_OPTIMIZER_SGD, 0, TRUE, 0.5, FALSE},
    {"bn_adam_nan", BN_CNN, WEIR_OPTIMIZER_ADAM, 0.01, FALSE, 0, TRUE},
};

static WeirGraph *load_model(const char *rel) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, rel, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &err);
  if (!g)
    fail_msg("%s", err->message);
  return g;
}

static WeirGraph *program(const WeirGraph *fwd, const Case *c,
                          gboolean per_tensor) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = c->opt;
  o.lr = 0.05;
  o.weight_decay = c->weight_decay;
  if (c->schedule) {
    o.lr_schedule = WEIR_LR_COSINE;
    o.total_steps = 10;
    o.warmup_steps = 1;
  }
  o.clip_grad_norm = c->clip;
  o.per_tensor_update = per_tensor;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s: %s", c->name, err->message);
  return t;
}

static GHashTable *bindings(void) {
  GHashTable *sym = weir_bindings_new();
  weir_bindings_set(sym, "batch", B);
  weir_bindings_set(sym, "K", K);
  return sym;
}

/* Every argument of prog: parameters from the model, a random batch (a
 * NaN in step 1's with nan), labels, the rest zero. */
static GHashTable *initial_state(const WeirGraph *prog, const WeirGraph *fwd,
                                 gboolean nan) {
  g_autoptr(GHashTable) sym = bindings();
  GHashTable *state = train_state_zero(prog, fwd, sym);
  WeirTensor *in = g_hash_table_lookup(state, "input");
  weir_tensor_fill_random(in, 11);
  if (nan)
    weir_tensor_set(in, in->count / K + 3, NAN); /* in step 1's batch */
  WeirTensor *t = g_hash_table_lookup(state, "target");
  for (gint64 j = 0; j < t->count; j++)
    weir_tensor_set(t, j, (double)(j * 3 % 10));
  return state;
}

/* Sets impl_params grain=1 on every multi-tensor node: every thread gets
 * a part even of a small total, so ranges cross tensor boundaries. */
static void split_every_tensor(WeirGraph *g) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      WeirNode *n = s->nodes->pdata[j];
      if (n->kind != WEIR_NODE_LIBRARY ||
          (strcmp(n->op, "OptimizerUpdate") && strcmp(n->op, "SumAll")))
        continue;
      g_autoptr(GError) err = NULL;
      if (!weir_native_set_params(n, weir_native_lookup(n->op, "weir"),
                                  "grain=1", &err))
        fail_msg("%s", err->message);
    }
  }
}

/* threads 0: interpreted; else compiled with that many threads. */
static GHashTable *run(const WeirGraph *prog, const WeirGraph *fwd,
                       const Case *c, int threads, gboolean split) {
  GHashTable *state = initial_state(prog, fwd, c->nan);
  g_autoptr(GHashTable) sym = bindings();
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) x = weir_graph_copy(prog);
  if (threads == 0) {
    if (!weir_expand_all(x, NULL, NULL, &err) ||
        !weir_interpret(x, sym, state, NULL, &err))
      fail_msg("%s: %s", c->name, err->message);
    return state;
  }
  if (split)
    split_every_tensor(x);
  WeirCompileOptions co = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(x, &co, NULL, &err);
  if (!k || !weir_kernel_set_threads(k, threads, &err) ||
      !weir_kernel_run(k, sym, state, &err))
    fail_msg("%s: %s", c->name, err->message);
  return state;
}

/* Every argument except the batch: bit-identical (exact) or within
 * float rounding. */
static void compare(const Case *c, const char *what, GHashTable *got,
                    GHashTable *want, gboolean exact) {
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, want);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    if (!strcmp(key, "input") || !strcmp(key, "target"))
      continue;
    const WeirTensor *w = value, *a = g_hash_table_lookup(got, key);
    assert_non_null(a);
    assert_int_equal(a->count, w->count);
    if (exact) {
      if (memcmp(a->data, w->data, weir_tensor_nbytes(w)) != 0)
        fail_msg("%s, %s: '%s' differs", c->name, what, (const char *)key);
      continue;
    }
    for (gint64 i = 0; i < w->count; i++) {
      double x = weir_tensor_get(a, i), y = weir_tensor_get(w, i);
      if (isnan(x) && isnan(y))
        continue; /* the loss of a skipped step */
      if (!(fabs(x - y) <= 2e-6 + 2e-5 * fabs(y)))
        fail_msg("%s, %s: %s[%" G_GINT64_FORMAT "] = %.9g, expected %.9g",
                 c->name, what, (const char *)key, i, x, y);
    }
  }
}

static double counter(GHashTable *state, const char *name) {
  return weir_tensor_get(g_hash_table_lookup(state, name), 0);
}

static void check_case(const Case *c) {
  g_autoptr(WeirGraph) fwd = load_model(c->model);
  g_autoptr(WeirGraph) fused = program(fwd, c, FALSE);
  g_autoptr(WeirGraph) per = program(fwd, c, TRUE);
  g_autoptr(GHashTable) want = run(per, fwd, c, 0, FALSE);
  assert_int_equal((gint64)counter(want, "skipped"), c->nan ? 1 : 0);
  assert_int_equal((gint64)counter(want, "step"), c->nan ? K - 1 : K);
  {
    g_autoptr(GHashTable) got = run(fused, fwd, c, 0, FALSE);
    compare(c, "interpreted", got, want, TRUE);
  }
  const struct {
    int threads;
    gboolean split;
    const char *what;
  } compiled[] = {
      {1, FALSE, "compiled, 1 thread"},
      {2, FALSE, "compiled, 2 threads"},
      {2, TRUE, "compiled, 2 threads, every tensor split"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(compiled); i++) {
    g_autoptr(GHashTable) got =
        run(fused, fwd, c, compiled[i].threads, compiled[i].split);
    compare(c, compiled[i].what, got, want, FALSE);
    assert_int_equal((gint64)counter(got, "skipped"), c->nan ? 1 : 0);
  }
}

static void test_cases(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(&cases[i]);
}

/* ------------------------------------------------------------ structure */

static guint count_ops(const WeirGraph *g, const char *op) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *x = s->nodes->pdata[j];
      n += x->kind == WEIR_NODE_LIBRARY && g_strcmp0(x->op, op) == 0;
    }
  }
  return n;
}

static guint count_text(const char *text, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static gboolean has_container_ending(const WeirGraph *g, const char *suffix) {
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g->containers->pdata[i];
    if (g_str_has_suffix(c->name, suffix))
      return TRUE;
  }
  return FALSE;
}

static void test_structure(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_model(MLP);
  g_auto(GStrv) params = weir_train_parameters(fwd);
  guint np = g_strv_length(params);
  assert_true(np >= 4);
  const Case *adam = &cases[5]; /* Adam, schedule, clipping, decay */
  g_autoptr(WeirGraph) fused = program(fwd, adam, FALSE);
  g_autoptr(WeirGraph) per = program(fwd, adam, TRUE);
  assert_int_equal(count_ops(fused, "OptimizerUpdate"), 1);
  assert_int_equal(count_ops(fused, "SumAll"), 2); /* check, clipping norm */
  assert_int_equal(count_ops(per, "OptimizerUpdate"), 0);
  assert_int_equal(count_ops(per, "SumAll"), 0);
  assert_int_equal(count_ops(per, "ReduceSumSquare"), np);
  assert_int_equal(count_ops(fused, "ReduceSumSquare"), 0);
  assert_false(has_container_ending(fused, "_gsum"));
  assert_false(has_container_ending(fused, "_clipped"));
  assert_true(has_container_ending(per, "_gsum"));
  assert_true(has_container_ending(per, "_clipped"));
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(fused, &err))
    fail_msg("%s", err->message);

  /* the generated C: one call of each kernel, and the per-tensor loops
   * gone (the update's one per tensor, the check's and the norm's sums,
   * the clipped copies) */
  g_autofree char *cf = weir_codegen_c(fused, NULL, &err);
  if (!cf)
    fail_msg("%s", err->message);
  g_autofree char *cp = weir_codegen_c(per, NULL, &err);
  if (!cp)
    fail_msg("%s", err->message);
  assert_int_equal(count_text(cf, "weir_update_f32(2, "), 1);
  assert_int_equal(count_text(cf, "= weir_sum_all_f32("), 2);
  assert_int_equal(count_text(cp, "weir_update_f32("), 0);
  guint loops_f = count_text(cf, "#pragma omp parallel for");
  guint loops_p = count_text(cp, "#pragma omp parallel for");
  if (loops_p < loops_f + 3 * np)
    fail_msg("parallel loops: %u per tensor, %u fused (%u parameters)", loops_p,
             loops_f, np);

  /* batch normalization's running statistics: moving averages in the
   * OptimizerUpdate node, no Pointwise node left in the update state */
  g_autoptr(WeirGraph) bfwd = load_model(BN_CNN);
  g_autoptr(WeirGraph) bn = program(bfwd, &cases[7], FALSE);
  const WeirNode *u = NULL;
  for (guint i = 0; i < bn->states->len; i++) {
    const WeirState *s = bn->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *x = s->nodes->pdata[j];
      if (x->kind == WEIR_NODE_LIBRARY && g_strcmp0(x->op, "Pointwise") == 0)
        assert_string_not_equal(s->label, "update");
      if (x->kind == WEIR_NODE_LIBRARY &&
          g_strcmp0(x->op, "OptimizerUpdate") == 0)
        u = x;
    }
  }
  assert_non_null(u);
  const WeirAttr *keep = weir_node_attr(u, "ema_keep");
  assert_non_null(keep);
  assert_int_equal(keep->floats->len, 2); /* running mean and variance */
}

/* A malformed OptimizerUpdate is refused when it is expanded (or
 * compiled), naming the node. */
static void test_bad_node(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_model(MLP);
  const char *bad[][2] = {
      {"rmsprop", "'optimizer' is 'rmsprop'"},
      {"adam", "groups of 4 tensors"}, /* an SGD node's inputs */
  };
  for (guint b = 0; b < G_N_ELEMENTS(bad); b++) {
    g_autoptr(WeirGraph) t = program(fwd, &cases[0], FALSE);
    WeirNode *u = NULL;
    for (guint i = 0; i < t->states->len && !u; i++) {
      WeirState *s = t->states->pdata[i];
      for (guint j = 0; j < s->nodes->len && !u; j++) {
        WeirNode *x = s->nodes->pdata[j];
        if (x->kind == WEIR_NODE_LIBRARY &&
            g_strcmp0(x->op, "OptimizerUpdate") == 0)
          u = x;
      }
    }
    assert_non_null(u);
    weir_node_set_attr_string(u, "optimizer", bad[b][0]);
    g_autoptr(GError) err = NULL;
    assert_false(weir_expand_all(t, NULL, NULL, &err));
    assert_non_null(err);
    if (!strstr(err->message, "update") || !strstr(err->message, bad[b][1]))
      fail_msg("unexpected error: %s", err->message);
  }
}

int main(void) {
  weir_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structure),
      cmocka_unit_test(test_bad_node),
      cmocka_unit_test(test_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
