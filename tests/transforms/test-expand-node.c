/* test-expand-node.c — the tier-1 transformation "expand-library-node".
 *
 * Sites are exactly the library nodes; can_apply refuses implementations
 * that are not registered for the op, with the list of those that are;
 * applying it at every site of a small network gives the same program as
 * weir_expand_node() and, once everything is expanded, the same outputs as
 * the reference; the data-movement change is what the expansion implies;
 * a failing or broken expansion leaves the program unchanged; ordering
 * edges (empty memlets) of an expanded node are kept by every operator the
 * expansion creates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-transform.h"
#include "weir-validate.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

/* ------------------------------------------------------------ building */

static WeirNode *add_access(WeirGraph *g, WeirState *s, const char *name,
                            const char *shape, gboolean transient) {
  if (!weir_graph_container(g, name))
    assert_non_null(
        weir_graph_add_array(g, name, WEIR_DTYPE_F32, shape, transient, NULL));
  return weir_state_add_access(g, s, name);
}

static void connect(WeirGraph *g, WeirState *s, guint src, const char *sc,
                    guint dst, const char *dc, const char *data) {
  WeirContainer *c = weir_graph_container(g, data);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *sub = weir_subset_to_string(full);
  g_autoptr(GError) error = NULL;
  if (!weir_state_add_memlet(g, s, src, sc, dst, dc, data, sub, &error))
    fail_msg("%s", error->message);
}

/* X[4,8] -> Relu -> T1 -> MatMul(W[8,5]) -> T2 -> Softmax -> Y[4,5], plus a
 * tasklet copying X[0,0] to a scalar Z (not a site). */
static WeirGraph *chain(void) {
  WeirGraph *g = weir_graph_new("chain");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = add_access(g, s, "X", "4, 8", FALSE);
  WeirNode *w = add_access(g, s, "W", "8, 5", FALSE);
  WeirNode *t1 = add_access(g, s, "T1", "4, 8", TRUE);
  WeirNode *t2 = add_access(g, s, "T2", "4, 5", TRUE);
  WeirNode *y = add_access(g, s, "Y", "4, 5", FALSE);
  const char *in1[] = {"in0", NULL};
  const char *in2[] = {"in0", "in1", NULL};
  const char *out[] = {"out0", NULL};
  WeirNode *relu = weir_state_add_library(g, s, "relu_0", "Relu", in1, out);
  WeirNode *mm = weir_state_add_library(g, s, "matmul_0", "MatMul", in2, out);
  WeirNode *sm = weir_state_add_library(g, s, "softmax_0", "Softmax", in1, out);
  connect(g, s, x->id, NULL, relu->id, "in0", "X");
  connect(g, s, relu->id, "out0", t1->id, NULL, "T1");
  connect(g, s, t1->id, NULL, mm->id, "in0", "T1");
  connect(g, s, w->id, NULL, mm->id, "in1", "W");
  connect(g, s, mm->id, "out0", t2->id, NULL, "T2");
  connect(g, s, t2->id, NULL, sm->id, "in0", "T2");
  connect(g, s, sm->id, "out0", y->id, NULL, "Y");
  WeirNode *nodes[] = {relu, mm, sm};
  for (guint i = 0; i < G_N_ELEMENTS(nodes); i++)
    assert_true(weir_op_check_attrs(nodes[i], NULL));
  /* A tasklet (not a site). */
  weir_graph_add_array(g, "Z", WEIR_DTYPE_F32, "", FALSE, NULL);
  const char *ins[] = {"x", NULL};
  const char *outs[] = {"z", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "copy", ins, outs, "z = x");
  WeirNode *z = weir_state_add_access(g, s, "Z");
  assert_non_null(
      weir_state_add_memlet(g, s, x->id, NULL, t->id, "x", "X", "0, 0", NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, t->id, "z", z->id, NULL, "Z", "", NULL));
  g_autoptr(GError) error = NULL;
  if (!weir_graph_validate(g, &error))
    fail_msg("%s", error->message);
  return g;
}

static GHashTable *random_args(const WeirGraph *g) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    gint64 shape[8];
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, 42 + c->id);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

/* Expands what is left, runs, returns the arguments after the run. */
static GHashTable *run_expanded(const WeirGraph *g) {
  g_autoptr(WeirGraph) e = weir_graph_copy(g);
  g_autoptr(GError) error = NULL;
  if (!weir_expand_all(e, NULL, NULL, &error))
    fail_msg("%s", error->message);
  GHashTable *args = random_args(e);
  if (!weir_interpret(e, NULL, args, NULL, &error))
    fail_msg("%s", error->message);
  return args;
}

static void assert_same_outputs(GHashTable *a, GHashTable *b) {
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, a);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    g_autoptr(GError) error = NULL;
    if (!weir_tensor_allclose(g_hash_table_lookup(b, k), v, 1e-5, 0, NULL,
                              &error))
      fail_msg("%s: %s", (char *)k, error->message);
  }
}

/* ---------------------------------------------------------------- tests */

static guint node_by_label(const WeirState *s, const char *label) {
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (g_strcmp0(n->label, label) == 0)
      return n->id;
  }
  fail_msg("no node '%s'", label);
  return 0;
}

/* Whether s has an empty memlet src -> dst. */
static gboolean ordered(const WeirState *s, guint src, guint dst) {
  for (guint k = 0; k < s->edges->len; k++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, k);
    if (!m->data && m->src == src && m->dst == dst)
      return TRUE;
  }
  return FALSE;
}

/* The MatMul of chain() expands into an initialization map (no inputs)
 * and an accumulation map.  An ordering edge into the MatMul (the tasklet
 * 'copy' must finish first, as transient-reuse adds them when the MatMul's
 * output takes over the tasklet's buffer) must hold for both maps, or the
 * initialization could run first; an ordering edge out of it must leave
 * both maps' exits. */
static void test_ordering_kept(void **state) {
  (void)state;
  for (int out = 0; out < 2; out++) {
    g_autoptr(WeirGraph) g = chain();
    WeirState *s = g_ptr_array_index(g->states, 0);
    guint mm = node_by_label(s, "matmul_0");
    guint copy = node_by_label(s, "copy");
    assert_non_null(weir_state_add_memlet(
        g, s, out ? mm : copy, NULL, out ? copy : mm, NULL, NULL, NULL, NULL));
    guint first_new = g->next_id;
    g_autoptr(GError) error = NULL;
    if (!weir_expand_node(g, mm, "pure", &error))
      fail_msg("%s", error->message);
    s = g_ptr_array_index(g->states, 0);
    guint maps = 0;
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->id < first_new)
        continue;
      if (!out && n->kind == WEIR_NODE_MAP_ENTRY) {
        maps++;
        if (!ordered(s, copy, n->id))
          fail_msg("map '%s' does not wait for the tasklet", n->label);
      }
      if (out && n->kind == WEIR_NODE_MAP_EXIT) {
        maps++;
        if (!ordered(s, n->id, copy))
          fail_msg("the tasklet does not wait for map exit %u", n->id);
      }
    }
    assert_int_equal(maps, 2);
  }
}

static const WeirTransformInfo *transform(void) {
  const WeirTransformInfo *t = weir_transform_lookup("expand-library-node");
  assert_non_null(t);
  assert_int_equal(t->tier, 1);
  return t;
}

static void test_sites(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  g_autoptr(WeirGraph) g = chain();
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 3);
  const char *ops[] = {"Relu", "MatMul", "Softmax"};
  guint prev = 0;
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    assert_int_equal(site->n_nodes, 1);
    assert_true(site->nodes[0] > prev);
    prev = site->nodes[0];
    const WeirNode *n = weir_graph_node(g, site->nodes[0], NULL);
    assert_int_equal(n->kind, WEIR_NODE_LIBRARY);
    assert_string_equal(n->op, ops[i]);
    assert_true(weir_transform_can_apply(t, g, site, NULL, NULL));
  }
  /* The JSON samples have no library nodes. */
  const char *samples[] = {"vector_add.json", "matmul.json", "softmax.json",
                           "loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    g_autofree char *path =
        g_build_filename(WEIR_SRCDIR, "samples", samples[i], NULL);
    g_autoptr(WeirGraph) s = weir_graph_load(path, NULL);
    assert_non_null(s);
    g_autoptr(GArray) none = weir_transform_sites(t, s);
    assert_int_equal(none->len, 0);
  }
}

static void test_refusals(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  g_autoptr(WeirGraph) g = chain();
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  const WeirSite *relu = &g_array_index(sites, WeirSite, 0);
  char *reason = NULL;
  const char *blas[] = {"impl=blas", NULL};
  g_autoptr(WeirParams) p = weir_params_parse(t, blas, NULL);
  assert_non_null(p);
  assert_false(weir_transform_can_apply(t, g, relu, p, &reason));
  assert_string_equal(reason, "no 'blas' implementation of operator 'Relu' "
                              "is registered (registered: pure)");
  g_free(reason);
  /* An op without any expansion. */
  WeirNode *n = weir_graph_node(g, relu->nodes[0], NULL);
  g_free(n->op);
  n->op = g_strdup("NoSuchOp");
  assert_false(weir_transform_can_apply(t, g, relu, NULL, &reason));
  assert_string_equal(reason, "no 'pure' implementation of operator "
                              "'NoSuchOp' is registered (registered: none)");
  g_free(reason);
  /* Not a library node. */
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *access = g_ptr_array_index(s->nodes, 0);
  WeirSite on_access = {.state = s->id, .n_nodes = 1, .nodes = {access->id}};
  assert_false(weir_transform_can_apply(t, g, &on_access, NULL, &reason));
  assert_contains(reason, "must be a library node");
  g_free(reason);
  /* An unknown implementation name is a parameter error. */
  const char *bad[] = {"impl=fast", NULL};
  g_autoptr(GError) error = NULL;
  assert_null(weir_params_parse(t, bad, &error));
  assert_contains(
      error->message,
      "parameter 'impl': 'fast' is not one of the "
      "choices (allowed: pure, blas, weir, "
      "im2col, direct, depthwise, winograd, col2im, weir-bf16, default)");
}

static void test_every_site_preserves_outputs(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  g_autoptr(WeirGraph) g = chain();
  g_autoptr(GHashTable) ref = run_expanded(g);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    g_autoptr(WeirGraph) q = weir_graph_copy(g);
    WeirApplyReport r;
    g_autoptr(GError) error = NULL;
    if (!weir_transform_apply(q, t, site, NULL, NULL, &r, &error))
      fail_msg("%s", error->message);
    assert_true(weir_graph_validate(q, NULL));
    assert_null(weir_graph_node(q, site->nodes[0], NULL));
    /* Same program as the direct entry point. */
    g_autoptr(WeirGraph) direct = weir_graph_copy(g);
    assert_true(weir_expand_node(direct, site->nodes[0], "pure", NULL));
    g_autofree char *a = weir_graph_to_json(q);
    g_autofree char *b = weir_graph_to_json(direct);
    assert_string_equal(a, b);
    /* Bytes are known before and after (FLOPs of the library nodes left
     * are not: the analysis has no cost function for them). */
    assert_true(r.bytes_before.known && r.bytes_after.known);
    const WeirNode *n = weir_graph_node(g, site->nodes[0], NULL);
    if (strcmp(n->op, "Relu") == 0) {
      /* Elementwise: one read and one write of each element, as before. */
      assert_int_equal(r.bytes_after.value, r.bytes_before.value);
    }
    if (strcmp(n->op, "MatMul") == 0) {
      /* The pure GEMM re-reads both operands for every product (K per output
       * element) and initializes and accumulates the output. */
      assert_true(r.bytes_after.value > r.bytes_before.value);
    }
    weir_apply_report_clear(&r);
    g_autoptr(GHashTable) got = run_expanded(q);
    assert_same_outputs(ref, got);
  }
  /* Applying at every site in turn expands the whole network. */
  g_autoptr(WeirGraph) all = weir_graph_copy(g);
  for (;;) {
    g_autoptr(GArray) left = weir_transform_sites(t, all);
    if (left->len == 0)
      break;
    assert_true(weir_transform_apply(all, t, &g_array_index(left, WeirSite, 0),
                                     NULL, NULL, NULL, NULL));
  }
  g_autoptr(GHashTable) args = random_args(all);
  assert_true(weir_interpret(all, NULL, args, NULL, NULL));
  assert_same_outputs(ref, args);
}

/* Test expansions registered for a test op, under implementation names the
 * transformation offers. */
static gboolean expand_gives_up(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  weir_state_remove_node(s, n->id);
  weir_graph_add_array(g, "leftover", WEIR_DTYPE_F32, "3", TRUE, NULL);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "cannot do this");
  return FALSE;
}

static gboolean expand_breaks(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  (void)g, (void)error;
  /* Leaves the library node's output connector without its memlet. */
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, n->id);
  for (guint i = 0; i < out->len; i++)
    weir_state_remove_memlet(s, ((WeirMemlet *)g_ptr_array_index(out, i))->id);
  return TRUE;
}

static void test_failures_restore(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  weir_op_register_expansion("TestRelu", "direct", expand_gives_up);
  weir_op_register_expansion("TestRelu", "im2col", expand_breaks);
  g_autoptr(WeirGraph) g = chain();
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  const WeirSite *relu = &g_array_index(sites, WeirSite, 0);
  WeirNode *n = weir_graph_node(g, relu->nodes[0], NULL);
  g_free(n->op);
  n->op = g_strdup("TestRelu");
  g_autofree char *before = weir_graph_to_json(g);

  const char *direct[] = {"impl=direct", NULL};
  g_autoptr(WeirParams) pd = weir_params_parse(t, direct, NULL);
  char *reason = NULL;
  assert_true(weir_transform_can_apply(t, g, relu, pd, &reason));
  g_autoptr(GError) error = NULL;
  assert_false(weir_transform_apply(g, t, relu, pd, NULL, NULL, &error));
  assert_contains(error->message, "expanding TestRelu with 'direct': cannot do "
                                  "this");
  assert_contains(error->message, "the program is unchanged");
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
  g_clear_error(&error);

  const char *im2col[] = {"impl=im2col", NULL};
  g_autoptr(WeirParams) pi = weir_params_parse(t, im2col, NULL);
  assert_false(weir_transform_apply(g, t, relu, pi, NULL, NULL, &error));
  assert_contains(error->message, "produced an invalid program");
  g_autofree char *after2 = weir_graph_to_json(g);
  assert_string_equal(before, after2);

  /* The registered list now names the test implementations. */
  const char *blas[] = {"impl=blas", NULL};
  g_autoptr(WeirParams) pb = weir_params_parse(t, blas, NULL);
  assert_false(weir_transform_can_apply(t, g, relu, pb, &reason));
  assert_contains(reason, "no 'blas' implementation of operator 'TestRelu' "
                          "is registered (registered: im2col, direct)");
  g_free(reason);
}

/* ------------------------------------------------------- sample models */

typedef struct {
  const char *name;
  const char *batch_symbol; /* dim_param bound to the input's batch size */
  double rtol, atol;
} Model;

static const Model models[] = {
    {"mlp", "batch", 1e-4, 1e-5},
    {"lenet", NULL, 1e-4, 1e-5},
    {"resnet", NULL, 1e-4, 1e-5},
    {"transformer", NULL, 1e-4, 1e-4},
};

typedef struct {
  WeirGraph *g;
  GHashTable *symbols;
  WeirTensor *input, *expected;
  char *in_container, *out_container;
} Imported;

static void imported_clear(Imported *m);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Imported, imported_clear)

static void imported_clear(Imported *m) {
  g_clear_pointer(&m->g, weir_graph_free);
  g_clear_pointer(&m->symbols, g_hash_table_unref);
  g_clear_pointer(&m->input, weir_tensor_free);
  g_clear_pointer(&m->expected, weir_tensor_free);
  g_clear_pointer(&m->in_container, g_free);
  g_clear_pointer(&m->out_container, g_free);
}

static void import_model(const Model *m, Imported *out) {
  g_autofree char *onnx = g_strdup_printf("%s.onnx", m->name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", onnx, NULL);
  g_autofree char *in_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                              m->name, "input_0.pb", NULL);
  g_autofree char *out_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                               m->name, "output_0.pb", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *in_name = NULL, *out_name = NULL;
  out->input = weir_tensor_read_pb(in_path, &in_name, &error);
  assert_non_null(out->input);
  out->expected = weir_tensor_read_pb(out_path, &out_name, &error);
  assert_non_null(out->expected);
  out->symbols = weir_bindings_new();
  if (m->batch_symbol)
    weir_bindings_set(out->symbols, m->batch_symbol, out->input->shape[0]);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {.symbols = out->symbols, .names = names};
  out->g = weir_onnx_import(path, &opts, &error);
  if (!out->g)
    fail_msg("%s: %s", path, error->message);
  out->in_container = g_strdup(g_hash_table_lookup(names, in_name));
  out->out_container = g_strdup(g_hash_table_lookup(names, out_name));
  assert_non_null(out->in_container);
  assert_non_null(out->out_container);
}

/* Runs g (fully expanded) on the model's input; compares with PyTorch. */
static void check_against_pytorch(const Model *m, const Imported *im,
                                  WeirGraph *g) {
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  WeirTensor *out = weir_tensor_new(im->expected->dtype, im->expected->rank,
                                    im->expected->shape);
  g_hash_table_insert(args, im->in_container, weir_tensor_copy(im->input));
  g_hash_table_insert(args, im->out_container, out);
  g_autoptr(GError) error = NULL;
  if (!weir_interpret(g, NULL, args, NULL, &error))
    fail_msg("%s: %s", m->name, error->message);
  if (!weir_tensor_allclose(out, im->expected, m->rtol, m->atol, NULL, &error))
    fail_msg("%s: output differs from PyTorch: %s", m->name, error->message);
}

static guint count_library(const WeirGraph *g) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      n += ((WeirNode *)g_ptr_array_index(s->nodes, k))->kind ==
           WEIR_NODE_LIBRARY;
  }
  return n;
}

/* Every library node of every sample model is a legal site; applying at
 * each one gives the program weir_expand_node gives; applying at every
 * site in turn yields a program whose output matches PyTorch's. */
static void check_model(const Model *m) {
  const WeirTransformInfo *t = transform();
  g_auto(Imported) im = {0};
  import_model(m, &im);
  g_autoptr(GArray) sites = weir_transform_sites(t, im.g);
  assert_true(sites->len > 0);
  assert_int_equal(sites->len, count_library(im.g));
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    char *reason = NULL;
    if (!weir_transform_can_apply(t, im.g, site, NULL, &reason))
      fail_msg("%s: site %u: %s", m->name, site->nodes[0], reason);
    g_autoptr(WeirGraph) q = weir_graph_copy(im.g);
    g_autoptr(GError) error = NULL;
    if (!weir_transform_apply(q, t, site, NULL, im.symbols, NULL, &error))
      fail_msg("%s: %s", m->name, error->message);
    g_autoptr(WeirGraph) direct = weir_graph_copy(im.g);
    assert_true(weir_expand_node(direct, site->nodes[0], "pure", NULL));
    g_autofree char *a = weir_graph_to_json(q);
    g_autofree char *b = weir_graph_to_json(direct);
    assert_string_equal(a, b);
  }
  g_autoptr(WeirGraph) all = weir_graph_copy(im.g);
  guint applied = 0;
  for (;;) {
    g_autoptr(GArray) left = weir_transform_sites(t, all);
    if (left->len == 0)
      break;
    g_autoptr(GError) error = NULL;
    if (!weir_transform_apply(all, t, &g_array_index(left, WeirSite, 0), NULL,
                              NULL, NULL, &error))
      fail_msg("%s: %s", m->name, error->message);
    applied++;
  }
  assert_true(applied >= sites->len);
  check_against_pytorch(m, &im, all);
}

static void test_models(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(models); i++)
    check_model(&models[i]);
}

int main(void) {
  weir_transforms_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_every_site_preserves_outputs),
      cmocka_unit_test(test_failures_restore),
      cmocka_unit_test(test_ordering_kept),
      cmocka_unit_test(test_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
