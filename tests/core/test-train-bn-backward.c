/* test-train-bn-backward.c — the backward pass of a training batch
 * normalization (issue 16; docs/training.md, "The batch norm's backward").
 *
 * core/train.c writes a training-mode batch norm's normalization and
 * affine step as one BatchNormApply node, whose backward rule writes one
 * BatchNormGrad (two passes over dY and x) where the decomposition's
 * gradients were seven element-wise maps and four per-channel sums.  On
 * the small CNN with a batch norm and a ReLU of the training fixtures
 * ([5, 3, 4, 4] gradients: odd sizes), for SGD and Adam:
 *  - the program has one BatchNormGrad and no normalized value;
 *  - -O2 folds the ReLU's mask into it (batchnorm-grad-relu-fusion) and
 *    calls Weir's kernel (core/kernels/batchnorm-grad.c) with the mask;
 *  - the -O2 program, compiled with 1, 2 and 3 threads, gives the
 *    parameters, running statistics and losses of the unoptimized program
 *    (the mask a separate node, everything expanded) run by the
 *    interpreter, within float rounding;
 *  - the ReLU's backward mask reads the ReLU's output (ir/lower/grad.c),
 *    so at -O2 the batch norm's output is read by the ReLU alone, map
 *    fusion joins the two and the pre-activation tensor is gone (the
 *    values above are the unfused program's);
 *  - the unbiased variance for the running average is a serial Pointwise
 *    node, generated as a loop outside any parallel region.
 * test-train-blocks checks the same model's step against PyTorch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "train-state.h"
#include "weir-attr.h"
#include "weir-codegen.h"
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

/* The BatchNormGrad nodes of g; *masked: how many read the ReLU's mask
 * (input R). */
static guint bn_grads(const WeirGraph *g, guint *masked) {
  guint n = 0;
  *masked = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *x = s->nodes->pdata[j];
      if (x->kind != WEIR_NODE_LIBRARY || strcmp(x->op, "BatchNormGrad") != 0)
        continue;
      n++;
      *masked += weir_node_has_in_conn(x, "in5");
    }
  }
  return n;
}

/* The container that connector conn ("in1", "out0"...) of node x reads or
 * writes, or NULL. */
static const char *port(const WeirState *s, const WeirNode *x, gboolean in,
                        const char *conn) {
  g_autoptr(GPtrArray) e =
      in ? weir_state_in_edges(s, x->id) : weir_state_out_edges(s, x->id);
  for (guint i = 0; i < e->len; i++) {
    const WeirMemlet *m = e->pdata[i];
    if (!g_strcmp0(in ? m->dst_conn : m->src_conn, conn))
      return m->data;
  }
  return NULL;
}

/* *x, *y: the one Relu node's input and output; the masks (Pointwise
 * "y = b > 0 ? a : 0") must read y as b.  Returns how many masks. */
static guint relu_masks(const WeirGraph *g, const char **x, const char **y) {
  guint masks = 0;
  *x = *y = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *n = s->nodes->pdata[j];
      if (n->kind == WEIR_NODE_LIBRARY && !strcmp(n->op, "Relu")) {
        assert_null(*x);
        *x = port(s, n, TRUE, "in0");
        *y = port(s, n, FALSE, "out0");
      }
    }
  }
  assert_non_null(*x);
  assert_non_null(*y);
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *n = s->nodes->pdata[j];
      const WeirAttr *code =
          n->kind == WEIR_NODE_LIBRARY && !strcmp(n->op, "Pointwise")
              ? weir_node_attr(n, "code")
              : NULL;
      if (!code || code->type != WEIR_ATTR_STRING ||
          strcmp(code->s, "y = b > 0 ? a : 0"))
        continue;
      assert_string_equal(port(s, n, TRUE, "in1"), *y);
      masks++;
    }
  }
  return masks;
}

static void check(WeirOptimizer opt, const char *name) {
  g_autoptr(WeirGraph) prog = program(opt);
  guint masked = 0;
  /* one node for the backward, none of the decomposition's gradients */
  assert_int_equal(bn_grads(prog, &masked), 1);
  assert_int_equal(masked, 0);
  assert_null(weir_graph_container(prog, "normalized"));
  /* the ReLU's mask reads its output; the pre-activation is a transient */
  const char *relu_in = NULL, *relu_out = NULL;
  assert_int_equal(relu_masks(prog, &relu_in, &relu_out), 1);
  g_autofree char *pre = g_strdup(relu_in);
  assert_true(weir_graph_container(prog, pre)->transient);
  g_autoptr(WeirGraph) q = weir_graph_copy(prog);
  g_autoptr(GHashTable) sym = bindings();
  g_autoptr(GError) err = NULL;
  if (!weir_pipeline_apply(q, 2, sym, NULL, &err))
    fail_msg("%s: -O2: %s", name, err->message);
  /* -O2 folded the ReLU's mask into it and kept Weir's kernel */
  assert_int_equal(bn_grads(q, &masked), 1);
  assert_int_equal(masked, 1);
  g_autofree char *src = weir_codegen_c(q, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  assert_non_null(strstr(src, "weir_bngrad_f32("));
  assert_null(strstr(src, "weir_bngrad_f32(NULL"));
  /* the batch norm's output joined the ReLU's map: never stored */
  assert_null(weir_graph_container(q, pre));
  /* the unbiased variance (C values, for the running average) is a
   * serial Pointwise: a loop on one thread, no parallel region */
  guint serial = 0;
  for (guint i = 0; i < prog->states->len; i++) {
    const WeirState *st = g_ptr_array_index(prog->states, i);
    for (guint j = 0; j < st->nodes->len; j++) {
      const WeirNode *n = g_ptr_array_index(st->nodes, j);
      if (n->kind == WEIR_NODE_LIBRARY && !strcmp(n->op, "Pointwise") &&
          weir_node_attr_int(n, "serial", 0))
        serial++;
    }
  }
  assert_int_equal(serial, 1);
  const char *uv = strstr(src, "'unbiased_var'");
  assert_non_null(uv);
  const char *eol = strchr(uv, '\n');
  assert_non_null(eol);
  const char *next = strchr(eol + 1, '\n');
  assert_non_null(next);
  g_autofree char *line = g_strndup(eol + 1, (gsize)(next - eol - 1));
  if (strstr(line, "omp parallel"))
    fail_msg("%s: the unbiased variance's map is parallel: %s", name, line);

  g_autoptr(GHashTable) want = run(prog, 0);
  for (int t = 1; t <= 3; t++) {
    g_autoptr(GHashTable) got = run(q, t);
    g_autofree char *what =
        g_strdup_printf("%s, -O2, compiled, %d thread(s)", name, t);
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
