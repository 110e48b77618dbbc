/* test-autodiff-maps.c — the autodiff fallback through expanded maps and
 * tasklets (ir/lower/autodiff-maps.c, issue 7).
 *
 *  - Operators without a backward rule (or whose rule declines them: Conv
 *    and the pools with one or three spatial dimensions), differentiated
 *    through their pure expansions: gradients against central finite
 *    differences in f64 of L = sum(y * dy) on small random shapes.
 *  - Operators with a rule, differentiated through their expansion (the
 *    forward program expanded first): the same gradients as the rule.
 *  - A hand-written forward program of two maps joined by a transient, one
 *    value read by two connectors, a WCR-sum reduction.
 *  - The backward program compiled: the generated code agrees with the
 *    interpreter.
 *  - A tasklet with two outputs; code the differentiator cannot handle.
 *  - Nested scopes: expanded programs tiled with map-tiling against finite
 *    differences and the rules; a hand-written two-level nest; a map
 *    holding two nodes (the error).
 *  - Indexed writes: Concat and Transpose expanded, a scatter through an
 *    indexed assignment, and its errors.
 *
 * Debugging aids: WEIR_TEST_CASE=<name> runs one fallback case,
 * WEIR_TEST_DUMP=<file.json> saves the first backward program (and prints
 * the sums of the gradients), WEIR_TEST_ALL=1 makes every container an
 * argument so transients can be inspected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "fd-check.h"
#include "runtime-fixture.h"
#include "weir-autodiff.h"
#include "weir.h"

/* ---------------------------------------------------------------- helpers */

static WeirTensor *tensor_for(const WeirGraph *g, const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  gint64 shape[8];
  for (guint d = 0; d < c->shape->len; d++)
    assert_true(weir_expr_is_const(c->shape->pdata[d], &shape[d]));
  return weir_tensor_new(c->dtype, c->shape->len, shape);
}

static GHashTable *args_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

static void interpret(const WeirGraph *g, GHashTable *args) {
  g_autoptr(WeirGraph) x = weir_graph_copy(g);
  g_autoptr(GError) err = NULL;
  if (!weir_expand_all(x, NULL, NULL, &err))
    fail_msg("expand: %s", err->message);
  if (!weir_interpret(x, NULL, args, NULL, &err))
    fail_msg("interpret: %s", err->message);
}

/* Adds memlet src -> dst over the whole container. */
static void wire(WeirGraph *g, WeirState *s, guint src, const char *sc,
                 guint dst, const char *dc, const char *data) {
  g_autoptr(WeirSubset) sub =
      weir_container_full_subset(weir_graph_container(g, data));
  g_autofree char *text = weir_subset_to_string(sub);
  g_autoptr(GError) err = NULL;
  if (!weir_state_add_memlet(g, s, src, sc, dst, dc, data, text, &err))
    fail_msg("memlet: %s", err->message);
}

typedef struct {
  const char *name;
  const char *op;
  const char *inputs[4]; /* shapes of the f64 inputs x0.. */
  const char *output;    /* shape of y */
  void (*attrs)(WeirNode *n);
} Case;

/* x0.. -> op -> y, every container an f64 argument. */
static WeirGraph *one_node(const Case *c, guint *n_in) {
  WeirGraph *g = weir_graph_new("one");
  WeirState *s = weir_graph_add_state(g, "main");
  static const char *const conns[] = {"in0", "in1", "in2", "in3", NULL};
  static const char *const names[] = {"x0", "x1", "x2", "x3"};
  const char *ins[5] = {0}, *outs[] = {"out0", NULL};
  guint n = 0;
  while (n < 4 && c->inputs[n]) {
    ins[n] = conns[n];
    assert_non_null(weir_graph_add_array(g, names[n], WEIR_DTYPE_F64,
                                         c->inputs[n], FALSE, NULL));
    n++;
  }
  assert_non_null(
      weir_graph_add_array(g, "y", WEIR_DTYPE_F64, c->output, FALSE, NULL));
  WeirNode *lib = weir_state_add_library(g, s, c->name, c->op, ins, outs);
  if (c->attrs)
    c->attrs(lib);
  for (guint k = 0; k < n; k++) {
    WeirNode *a = weir_state_add_access(g, s, names[k]);
    wire(g, s, a->id, NULL, lib->id, conns[k], names[k]);
  }
  WeirNode *y = weir_state_add_access(g, s, "y");
  wire(g, s, lib->id, "out0", y->id, NULL, "y");
  g_autoptr(GError) err = NULL;
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", c->name, err->message);
  *n_in = n;
  return g;
}

/* The backward program of fwd (the seed dy of y, gradients of wrt made
 * arguments); *grads receives wrt name -> gradient container.  With
 * `expand`, the forward program is expanded into maps first. */
static WeirGraph *backward(const WeirGraph *fwd, const char *const *wrt,
                           gboolean expand, GHashTable **grads,
                           GError **error) {
  g_autoptr(WeirGraph) bwd = weir_graph_copy(fwd);
  if (expand && !weir_expand_all(bwd, NULL, NULL, error))
    return NULL;
  const WeirContainer *y = weir_graph_container(bwd, "y");
  if (!weir_graph_add_container(bwd, "dy", y->dtype, y->shape->len,
                                (WeirExpr *const *)y->shape->pdata, FALSE,
                                error))
    return NULL;
  WeirState *s = g_ptr_array_index(bwd->states, 0);
  g_autoptr(GHashTable) seeds = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(seeds, "y", "dy");
  *grads = weir_autodiff_state(bwd, s, seeds, wrt, error);
  if (!*grads)
    return NULL;
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, *grads);
  while (g_hash_table_iter_next(&it, &key, &value))
    weir_graph_container(bwd, value)->transient = FALSE;
  if (g_getenv("WEIR_TEST_ALL"))
    for (guint i = 0; i < bwd->containers->len; i++)
      ((WeirContainer *)g_ptr_array_index(bwd->containers, i))->transient =
          FALSE;
  if (g_getenv("WEIR_TEST_DUMP") &&
      !g_file_test(g_getenv("WEIR_TEST_DUMP"), G_FILE_TEST_EXISTS))
    weir_graph_save(bwd, g_getenv("WEIR_TEST_DUMP"), NULL);
  if (!weir_graph_validate(bwd, error)) {
    g_clear_pointer(grads, g_hash_table_unref);
    return NULL;
  }
  return g_steal_pointer(&bwd);
}

/* Arguments of g: the tensors of `given` (copied) or zeros. */
static GHashTable *bind(const WeirGraph *g, GHashTable *given) {
  GHashTable *args = args_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    const WeirTensor *t = g_hash_table_lookup(given, c->name);
    g_hash_table_insert(args, g_strdup(c->name),
                        t ? weir_tensor_copy(t) : tensor_for(g, c->name));
  }
  return args;
}

static double loss_of(const WeirGraph *fwd, GHashTable *inputs,
                      const WeirTensor *dy) {
  g_autoptr(GHashTable) args = bind(fwd, inputs);
  interpret(fwd, args);
  const WeirTensor *y = g_hash_table_lookup(args, "y");
  double l = 0;
  for (gint64 i = 0; i < y->count; i++)
    l += weir_tensor_get(y, i) * weir_tensor_get(dy, i);
  return l;
}

static const char *const input_names[] = {"x0", "x1", "x2", "x3", NULL};

/* Random inputs x0.. and dy (in `inputs`, dy under "dy"). */
static GHashTable *random_inputs(const WeirGraph *fwd, guint n_in) {
  GHashTable *inputs = args_new();
  for (guint k = 0; k < n_in; k++) {
    WeirTensor *t = tensor_for(fwd, input_names[k]);
    weir_tensor_fill_random(t, 31 + k);
    g_hash_table_insert(inputs, g_strdup(input_names[k]), t);
  }
  WeirTensor *dy = tensor_for(fwd, "y");
  weir_tensor_fill_random(dy, 5);
  g_hash_table_insert(inputs, g_strdup("dy"), dy);
  return inputs;
}

/* Runs the backward program; returns the arguments after the run. */
static GHashTable *run_backward(const WeirGraph *bwd, GHashTable *inputs) {
  GHashTable *args = bind(bwd, inputs);
  interpret(bwd, args);
  return args;
}

/* Gradients of every input of c through the fallback (the op has no rule
 * or its rule declines) against central differences. */
static void check_fd_graph(const Case *c, const WeirGraph *fwd, guint n_in,
                           gboolean expand) {
  const char *wrt[5] = {0};
  for (guint k = 0; k < n_in; k++)
    wrt[k] = input_names[k];
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) bwd = backward(fwd, wrt, expand, &grads, &err);
  if (!bwd)
    fail_msg("%s: %s", c->name, err->message);
  g_autoptr(GHashTable) inputs = random_inputs(fwd, n_in);
  g_autoptr(GHashTable) args = run_backward(bwd, inputs);
  const WeirTensor *dy = g_hash_table_lookup(inputs, "dy");
  guint checked = 0;
  if (g_getenv("WEIR_TEST_DUMP")) {
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, args);
    while (g_hash_table_iter_next(&it, &key, &value)) {
      const WeirTensor *t = value;
      double sum = 0;
      for (gint64 i = 0; i < t->count; i++)
        sum += fabs(weir_tensor_get(t, i));
      fprintf(stderr, "%s: %" G_GINT64_FORMAT " elements, sum |.| %g\n",
              (char *)key, t->count, sum);
    }
  }
  for (guint k = 0; k < n_in; k++) {
    const char *gname = g_hash_table_lookup(grads, input_names[k]);
    if (!gname)
      fail_msg("%s: no gradient for %s", c->name, input_names[k]);
    checked += fd_check_input(
        c->name, input_names[k], g_hash_table_lookup(inputs, input_names[k]),
        g_hash_table_lookup(args, gname), loss_of, fwd, inputs, dy);
  }
  assert_true(checked > 0);
}

static void check_fd(const Case *c, gboolean expand) {
  guint n_in;
  g_autoptr(WeirGraph) fwd = one_node(c, &n_in);
  check_fd_graph(c, fwd, n_in, expand);
}

/* The gradients of the rule and of the fallback (through the expanded
 * forward program) agree. */
static WeirGraph *tiled(const WeirGraph *fwd, const char *tile);

/* With `tile`, the expanded forward program is also tiled (nested maps). */
static void check_against_rule_tiled(const Case *c, const char *tile) {
  guint n_in;
  g_autoptr(WeirGraph) fwd = one_node(c, &n_in);
  g_autoptr(WeirGraph) fwd_maps =
      tile ? tiled(fwd, tile) : weir_graph_copy(fwd);
  WeirState *s = g_ptr_array_index(fwd->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_non_null(weir_grad_lookup(n->op));
  }
  const char *wrt[5] = {0};
  for (guint k = 0; k < n_in; k++)
    wrt[k] = input_names[k];
  g_autoptr(GHashTable) g_rule = NULL, g_maps = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) b_rule = backward(fwd, wrt, FALSE, &g_rule, &err);
  if (!b_rule)
    fail_msg("%s (rule): %s", c->name, err->message);
  g_autoptr(WeirGraph) b_maps = backward(fwd_maps, wrt, TRUE, &g_maps, &err);
  if (!b_maps)
    fail_msg("%s (maps): %s", c->name, err->message);
  /* the expanded backward program differentiates maps: no backward
   * library nodes other than the Sum of several contributions */
  WeirState *bs = g_ptr_array_index(b_maps->states, 0);
  guint maps = 0;
  for (guint i = 0; i < bs->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(bs->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->op, "Sum") != 0)
      fail_msg("%s: library node %s in the expanded backward program", c->name,
               n->op);
    maps += n->kind == WEIR_NODE_MAP_ENTRY;
  }
  assert_true(maps > 0);
  g_autoptr(GHashTable) inputs = random_inputs(fwd, n_in);
  g_autoptr(GHashTable) a_rule = run_backward(b_rule, inputs);
  g_autoptr(GHashTable) a_maps = run_backward(b_maps, inputs);
  for (guint k = 0; k < n_in; k++) {
    const WeirTensor *r =
        g_hash_table_lookup(a_rule, g_hash_table_lookup(g_rule, wrt[k]));
    const WeirTensor *m =
        g_hash_table_lookup(a_maps, g_hash_table_lookup(g_maps, wrt[k]));
    assert_non_null(r);
    assert_non_null(m);
    assert_int_equal(r->count, m->count);
    for (gint64 i = 0; i < r->count; i++) {
      double a = weir_tensor_get(r, i), b = weir_tensor_get(m, i);
      if (fabs(a - b) > 1e-12 + 1e-10 * fabs(a))
        fail_msg("%s: d/d%s[%" G_GINT64_FORMAT "]: rule %.15g, maps %.15g",
                 c->name, wrt[k], i, a, b);
    }
  }
}

static void check_against_rule(const Case *c) {
  check_against_rule_tiled(c, NULL);
}

static void ints(WeirNode *n, const char *name, const gint64 *v, guint len) {
  weir_node_set_attr_ints(n, name, v, len);
}

/* ------------------------------------------------------------ the cases */

static void conv1d_pad_stride(WeirNode *n) {
  ints(n, "pads", (gint64[]){1, 1}, 2);
  ints(n, "strides", (gint64[]){2}, 1);
}
static void conv1d_dilation(WeirNode *n) {
  ints(n, "dilations", (gint64[]){2}, 1);
}
static void conv3d_pad(WeirNode *n) {
  ints(n, "pads", (gint64[]){1, 0, 1, 1, 0, 0}, 6);
}
static void maxpool1d(WeirNode *n) {
  ints(n, "kernel_shape", (gint64[]){3}, 1);
  ints(n, "strides", (gint64[]){2}, 1);
  ints(n, "pads", (gint64[]){1, 1}, 2);
}
static void avgpool3d(WeirNode *n) {
  ints(n, "kernel_shape", (gint64[]){2, 2, 2}, 3);
  ints(n, "strides", (gint64[]){2, 1, 2}, 3);
}
static void avgpool3d_pad(WeirNode *n) {
  ints(n, "kernel_shape", (gint64[]){3, 2, 3}, 3);
  ints(n, "strides", (gint64[]){2, 2, 2}, 3);
  ints(n, "pads", (gint64[]){1, 0, 1, 1, 0, 1}, 6);
  weir_node_set_attr_int(n, "count_include_pad", 0);
}
static void pad_2d(WeirNode *n) {
  ints(n, "pads", (gint64[]){1, 0, 2, 2}, 4);
}
static void reduce_axis1(WeirNode *n) {
  ints(n, "axes", (gint64[]){1}, 1);
  weir_node_set_attr_int(n, "keepdims", 0);
}
static void reduce_axes02(WeirNode *n) {
  ints(n, "axes", (gint64[]){0, 2}, 2);
  weir_node_set_attr_int(n, "keepdims", 1);
}
static void gemm_tb(WeirNode *n) {
  weir_node_set_attr_int(n, "transB", 1);
  weir_node_set_attr_float(n, "alpha", 0.5);
}
static void conv2d_pad(WeirNode *n) {
  ints(n, "pads", (gint64[]){1, 0, 1, 1}, 4);
  ints(n, "strides", (gint64[]){2, 1}, 2);
}
static void axis1(WeirNode *n) {
  weir_node_set_attr_int(n, "axis", 1);
}

/* Through the fallback: no rule, or the rule declines. */
static const Case fallback_cases[] = {
    {"conv1d",
     "Conv",
     {"2, 3, 7", "4, 3, 3", "4"},
     "2, 4, 4",
     conv1d_pad_stride},
    {"conv1d_dil", "Conv", {"1, 2, 7", "3, 2, 3"}, "1, 3, 3", conv1d_dilation},
    {"conv3d",
     "Conv",
     {"1, 2, 3, 4, 3", "2, 2, 2, 2, 2", "2"},
     "1, 2, 4, 3, 3",
     conv3d_pad},
    {"maxpool1d", "MaxPool", {"2, 3, 8"}, "2, 3, 4", maxpool1d},
    {"avgpool3d", "AveragePool", {"1, 2, 4, 4, 4"}, "1, 2, 2, 3, 2", avgpool3d},
    {"avgpool3d_pad_excl",
     "AveragePool",
     {"1, 1, 4, 3, 4"},
     "1, 1, 2, 1, 2",
     avgpool3d_pad},
    {"pad", "Pad", {"2, 3"}, "5, 5", pad_2d},
    {"reducemax", "ReduceMax", {"3, 4, 5"}, "3, 5", reduce_axis1},
    {"reducemin", "ReduceMin", {"3, 4, 2"}, "1, 4, 1", reduce_axes02},
    {"reduceprod", "ReduceProd", {"3, 4, 2"}, "1, 4, 1", reduce_axes02},
};

/* Ops with a rule; compared with the rule's gradient. */
static const Case rule_cases[] = {
    {"matmul", "MatMul", {"2, 3", "3, 4"}, "2, 4", NULL},
    {"gemm", "Gemm", {"2, 3", "4, 3", "4"}, "2, 4", gemm_tb},
    {"conv2d",
     "Conv",
     {"2, 2, 5, 4", "3, 2, 3, 2", "3"},
     "2, 3, 3, 4",
     conv2d_pad},
    {"softmax", "Softmax", {"3, 5"}, "3, 5", axis1},
    {"tanh", "Tanh", {"2, 3"}, "2, 3", NULL},
    {"mul", "Mul", {"2, 3", "3"}, "2, 3", NULL},
};

static void test_fallback_gradients(void **state) {
  (void)state;
  const char *only = g_getenv("WEIR_TEST_CASE");
  for (guint i = 0; i < G_N_ELEMENTS(fallback_cases); i++)
    if (!only || strcmp(only, fallback_cases[i].name) == 0)
      check_fd(&fallback_cases[i], FALSE);
}

static void test_expanded_forward_gradients(void **state) {
  (void)state;
  /* an already-expanded forward program, also for ops with a rule */
  check_fd(&fallback_cases[0], TRUE);
  check_fd(&rule_cases[2], TRUE);
  check_fd(&rule_cases[3], TRUE);
}

static void test_rule_cross_check(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(rule_cases); i++)
    check_against_rule(&rule_cases[i]);
}

/* ------------------------------------------- a hand-written map program */

/* A map scope with one tasklet: reads (data, subset, conn) triples,
 * writes one element. */
typedef struct {
  const char *data, *subset, *conn;
} Io;

static void add_map(WeirGraph *g, WeirState *s, const char *label,
                    const char *param, const char *range, const Io *ins,
                    guint n_ins, WeirNode *const *in_access, const Io *out,
                    WeirNode *out_access, WeirWcr wcr, WeirNode *after,
                    const char *code) {
  const char *params[] = {param, NULL}, *ranges[] = {range, NULL};
  const char *tin[5] = {0}, *tout[] = {out->conn, NULL};
  for (guint i = 0; i < n_ins; i++)
    tin[i] = ins[i].conn;
  WeirNode *exit = NULL;
  g_autoptr(GError) err = NULL;
  WeirNode *entry = weir_state_add_map(g, s, label, params, ranges,
                                       WEIR_SCHEDULE_SEQUENTIAL, &exit, &err);
  if (!entry)
    fail_msg("%s", err->message);
  WeirNode *t = weir_state_add_tasklet(g, s, label, tin, tout, code);
  for (guint i = 0; i < n_ins; i++) {
    g_autofree char *ic = g_strdup_printf("IN_%s", ins[i].data);
    g_autofree char *oc = g_strdup_printf("OUT_%s", ins[i].data);
    if (!weir_node_has_in_conn(entry, ic)) {
      weir_node_add_in_conn(entry, ic);
      weir_node_add_out_conn(entry, oc);
      wire(g, s, in_access[i]->id, NULL, entry->id, ic, ins[i].data);
    }
    assert_non_null(weir_state_add_memlet(g, s, entry->id, oc, t->id,
                                          ins[i].conn, ins[i].data,
                                          ins[i].subset, NULL));
  }
  if (n_ins == 0)
    assert_non_null(weir_state_add_memlet(g, s, entry->id, NULL, t->id, NULL,
                                          NULL, NULL, NULL));
  if (after)
    assert_non_null(weir_state_add_memlet(g, s, after->id, NULL, entry->id,
                                          NULL, NULL, NULL, NULL));
  g_autofree char *ic = g_strdup_printf("IN_%s", out->data);
  g_autofree char *oc = g_strdup_printf("OUT_%s", out->data);
  weir_node_add_in_conn(exit, ic);
  weir_node_add_out_conn(exit, oc);
  WeirMemlet *m = weir_state_add_memlet(g, s, t->id, out->conn, exit->id, ic,
                                        out->data, out->subset, NULL);
  assert_non_null(m);
  m->wcr = wcr;
  g_autoptr(WeirSubset) full =
      weir_container_full_subset(weir_graph_container(g, out->data));
  g_autofree char *text = weir_subset_to_string(full);
  m = weir_state_add_memlet(g, s, exit->id, oc, out_access->id, NULL, out->data,
                            text, NULL);
  assert_non_null(m);
  m->wcr = wcr;
}

/* t[i] = x[i] * x[5 - i] + sin(w[i]) * x[i]   (x read twice)
 * y[j] = 0;  y[i // 3] += t[i] * t[i]         (WCR sum)           */
static WeirGraph *map_program(void) {
  WeirGraph *g = weir_graph_new("maps");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "x0", WEIR_DTYPE_F64, "6", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "x1", WEIR_DTYPE_F64, "6", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "t", WEIR_DTYPE_F64, "6", TRUE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "y", WEIR_DTYPE_F64, "2", FALSE, NULL));
  WeirNode *x = weir_state_add_access(g, s, "x0");
  WeirNode *w = weir_state_add_access(g, s, "x1");
  WeirNode *t = weir_state_add_access(g, s, "t");
  Io ins1[] = {{"x0", "i", "a"}, {"x0", "5 - i", "b"}, {"x1", "i", "c"}};
  WeirNode *acc1[] = {x, x, w};
  Io out1 = {"t", "i", "o"};
  add_map(g, s, "first", "i", "0:6", ins1, 3, acc1, &out1, t, WEIR_WCR_NONE,
          NULL, "o = a * b + sin(c) * a");
  WeirNode *y0 = weir_state_add_access(g, s, "y");
  Io out0 = {"y", "j", "o"};
  add_map(g, s, "init", "j", "0:2", NULL, 0, NULL, &out0, y0, WEIR_WCR_NONE,
          NULL, "o = 0");
  WeirNode *y = weir_state_add_access(g, s, "y");
  Io ins2[] = {{"t", "i", "u"}};
  Io out2 = {"y", "i // 3", "o"};
  add_map(g, s, "second", "i", "0:6", ins2, 1, &t, &out2, y, WEIR_WCR_SUM, y0,
          "o = u * u");
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("map program: %s", err->message);
  return g;
}

static void test_map_program(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = map_program();
  const char *wrt[] = {"x0", "x1", NULL};
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) bwd = backward(fwd, wrt, FALSE, &grads, &err);
  if (!bwd)
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) inputs = random_inputs(fwd, 2);
  g_autoptr(GHashTable) args = run_backward(bwd, inputs);
  const WeirTensor *xt = g_hash_table_lookup(inputs, "x0");
  const WeirTensor *wt = g_hash_table_lookup(inputs, "x1");
  const WeirTensor *dy = g_hash_table_lookup(inputs, "dy");
  const WeirTensor *gx =
      g_hash_table_lookup(args, g_hash_table_lookup(grads, "x0"));
  const WeirTensor *gw =
      g_hash_table_lookup(args, g_hash_table_lookup(grads, "x1"));
  /* closed form: dL/dt[i] = 2 t[i] dy[i / 3];
   * dL/dx[k] = dt[k] (x[5-k] + sin w[k]) + dt[5-k] x[5-k];
   * dL/dw[k] = dt[k] cos(w[k]) x[k] */
  double xv[6], wv[6], tv[6], dt[6];
  for (int i = 0; i < 6; i++) {
    xv[i] = weir_tensor_get(xt, i);
    wv[i] = weir_tensor_get(wt, i);
  }
  for (int i = 0; i < 6; i++) {
    tv[i] = xv[i] * xv[5 - i] + sin(wv[i]) * xv[i];
    dt[i] = 2 * tv[i] * weir_tensor_get(dy, i / 3);
  }
  for (int k = 0; k < 6; k++) {
    double ex = dt[k] * (xv[5 - k] + sin(wv[k])) + dt[5 - k] * xv[5 - k];
    double ew = dt[k] * cos(wv[k]) * xv[k];
    assert_true(fabs(weir_tensor_get(gx, k) - ex) < 1e-12 + 1e-12 * fabs(ex));
    assert_true(fabs(weir_tensor_get(gw, k) - ew) < 1e-12 + 1e-12 * fabs(ew));
  }
}

/* The backward program of Conv 1-D, compiled, agrees with the interpreter. */
static void test_compiled_agrees(void **state) {
  (void)state;
  guint n_in;
  g_autoptr(WeirGraph) fwd = one_node(&fallback_cases[0], &n_in);
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) bwd = backward(fwd, input_names, FALSE, &grads, &err);
  if (!bwd)
    fail_msg("%s", err->message);
  if (!weir_expand_all(bwd, NULL, NULL, &err))
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) inputs = random_inputs(fwd, n_in);
  g_autoptr(GHashTable) a_int = run_backward(bwd, inputs);
  g_autoptr(GHashTable) a_cc = bind(bwd, inputs);
  Fixture *f = fixture_new();
  g_autoptr(WeirKernel) k = weir_kernel_compile(bwd, &f->opts, NULL, &err);
  if (!k) {
    fixture_free(f);
    fail_msg("compile: %s", err->message);
  }
  gboolean ran = weir_kernel_run(k, NULL, a_cc, &err);
  fixture_free(f);
  if (!ran)
    fail_msg("run: %s", err->message);
  for (guint i = 0; i < n_in; i++) {
    const char *gname = g_hash_table_lookup(grads, input_names[i]);
    const WeirTensor *a = g_hash_table_lookup(a_int, gname);
    const WeirTensor *b = g_hash_table_lookup(a_cc, gname);
    for (gint64 e = 0; e < a->count; e++)
      assert_true(fabs(weir_tensor_get(a, e) - weir_tensor_get(b, e)) <
                  1e-12 + 1e-12 * fabs(weir_tensor_get(a, e)));
  }
}

/* ---------------------------------------------------------------- errors */

/* Tasklets with two outputs (softmax's exp and sum) are differentiated
 * output by output; code the differentiator cannot handle is an error
 * naming the node and the construct. */
static void test_two_outputs_and_errors(void **state) {
  (void)state;
  for (guint round = 0; round < 2; round++) {
    g_autoptr(WeirGraph) g = weir_graph_new("two");
    WeirState *s = weir_graph_add_state(g, "main");
    assert_non_null(
        weir_graph_add_array(g, "x0", WEIR_DTYPE_F64, "3", FALSE, NULL));
    assert_non_null(
        weir_graph_add_array(g, "y", WEIR_DTYPE_F64, "2", FALSE, NULL));
    const char *tin[] = {"a", NULL}, *tout[] = {"o", "p", NULL};
    WeirNode *t = weir_state_add_tasklet(
        g, s, "both", tin, tout,
        round == 0 ? "e = a * a\no = e\np = sin(e)" : "o = a % 1.5\np = a");
    WeirNode *x = weir_state_add_access(g, s, "x0");
    WeirNode *y = weir_state_add_access(g, s, "y");
    assert_non_null(
        weir_state_add_memlet(g, s, x->id, NULL, t->id, "a", "x0", "1", NULL));
    assert_non_null(
        weir_state_add_memlet(g, s, t->id, "o", y->id, NULL, "y", "0", NULL));
    assert_non_null(
        weir_state_add_memlet(g, s, t->id, "p", y->id, NULL, "y", "1", NULL));
    g_autoptr(GError) err = NULL;
    if (!weir_graph_validate(g, &err))
      fail_msg("%s", err->message);
    const char *wrt[] = {"x0", NULL};
    g_autoptr(GHashTable) grads = NULL;
    g_autoptr(WeirGraph) b = backward(g, wrt, FALSE, &grads, &err);
    if (round == 1) {
      assert_null(b);
      assert_non_null(strstr(err->message, "tasklet 'both'"));
      assert_non_null(strstr(err->message, "'%' is not supported"));
      continue;
    }
    if (!b)
      fail_msg("%s", err->message);
    g_autoptr(GHashTable) inputs = random_inputs(g, 1);
    g_autoptr(GHashTable) args = run_backward(b, inputs);
    const WeirTensor *xt = g_hash_table_lookup(inputs, "x0");
    const WeirTensor *dy = g_hash_table_lookup(inputs, "dy");
    const WeirTensor *gx =
        g_hash_table_lookup(args, g_hash_table_lookup(grads, "x0"));
    double a = weir_tensor_get(xt, 1), e = a * a;
    double want = weir_tensor_get(dy, 0) * 2 * a +
                  weir_tensor_get(dy, 1) * cos(e) * 2 * a;
    assert_true(fabs(weir_tensor_get(gx, 1) - want) < 1e-12);
    assert_true(weir_tensor_get(gx, 0) == 0 && weir_tensor_get(gx, 2) == 0);
  }
}

/* ------------------------------------------------- nested map scopes */

/* Map entries of g nested in another map. */
static guint nested_maps(const WeirGraph *g) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirScopes) sc = weir_state_scopes(s, &err);
    assert_non_null(sc);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *x = g_ptr_array_index(s->nodes, k);
      n += x->kind == WEIR_NODE_MAP_ENTRY && weir_scopes_parent(sc, x->id);
    }
  }
  return n;
}

/* fwd expanded, then every top-level map tiled (map-tiling, `tile`): the
 * forward scopes become nests of two maps whose inner ranges use the outer
 * parameters (tp:min(tp + T, e) where T does not divide the range). */
static WeirGraph *tiled(const WeirGraph *fwd, const char *tile) {
  WeirGraph *g = weir_graph_copy(fwd);
  g_autoptr(GError) err = NULL;
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("expand: %s", err->message);
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup("map-tiling");
  assert_non_null(t);
  const char *assign[] = {tile, NULL};
  g_autoptr(WeirParams) p = weir_params_parse(t, assign, &err);
  assert_non_null(p);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *x = g_ptr_array_index(s->nodes, k);
    if (x->kind == WEIR_NODE_MAP_ENTRY)
      g_array_append_val(ids, x->id);
  }
  for (guint k = 0; k < ids->len; k++) {
    WeirSite site = {.state = s->id, .n_nodes = 1};
    site.nodes[0] = g_array_index(ids, guint, k);
    g_autofree char *reason = NULL;
    if (!weir_transform_can_apply(t, g, &site, p, &reason))
      continue;
    if (!weir_transform_apply(g, t, &site, p, NULL, NULL, &err))
      fail_msg("map-tiling: %s", err->message);
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("tiled: %s", err->message);
  assert_true(nested_maps(g) > 0);
  return g;
}

/* The tiled (nested) forward programs against finite differences:
 * convolution and pooling through the fallback, MatMul (a WCR-sum
 * reduction inside the nest), Softmax (max, exp-sum, normalize). */
static void test_nested_gradients(void **state) {
  (void)state;
  const Case *cases[] = {&fallback_cases[0], &fallback_cases[3],
                         &fallback_cases[9], &rule_cases[0], &rule_cases[3]};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint n_in;
    g_autoptr(WeirGraph) fwd = one_node(cases[i], &n_in);
    g_autoptr(WeirGraph) nest = tiled(fwd, "tile=2");
    check_fd_graph(cases[i], nest, n_in, FALSE);
  }
}

/* The nests' gradients equal those of the ops' rules. */
static void test_nested_rule_cross_check(void **state) {
  (void)state;
  for (guint i = 0; i < 4; i++) /* matmul, gemm, conv2d, softmax */
    check_against_rule_tiled(&rule_cases[i], "tile=2");
}

/* A hand-written nest, its tasklet fed through the outer map's entry with
 * subsets in the parameters of both levels:
 *   y[i] = 0;  map i in 0:3 { map j in 0:i+2 {
 *       y[i] += x0[i, j] * x1[j] + x0[i, 3 - j]^2 } }   (WCR sum)   */
static WeirGraph *nest_program(void) {
  WeirGraph *g = weir_graph_new("nest");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "x0", WEIR_DTYPE_F64, "3, 4", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "x1", WEIR_DTYPE_F64, "4", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "y", WEIR_DTYPE_F64, "3", FALSE, NULL));
  WeirNode *x = weir_state_add_access(g, s, "x0");
  WeirNode *w = weir_state_add_access(g, s, "x1");
  WeirNode *y0 = weir_state_add_access(g, s, "y");
  Io out0 = {"y", "i", "o"};
  add_map(g, s, "init", "i", "0:3", NULL, 0, NULL, &out0, y0, WEIR_WCR_NONE,
          NULL, "o = 0");
  WeirNode *y = weir_state_add_access(g, s, "y");
  g_autoptr(GError) err = NULL;
  WeirNode *ox = NULL, *ix = NULL;
  WeirNode *outer = weir_state_add_map(
      g, s, "rows", (const char *[]){"i", NULL}, (const char *[]){"0:3", NULL},
      WEIR_SCHEDULE_SEQUENTIAL, &ox, &err);
  WeirNode *inner = weir_state_add_map(
      g, s, "cols", (const char *[]){"j", NULL},
      (const char *[]){"0:i + 2", NULL}, WEIR_SCHEDULE_SEQUENTIAL, &ix, &err);
  assert_non_null(outer);
  assert_non_null(inner);
  WeirNode *t = weir_state_add_tasklet(
      g, s, "body", (const char *[]){"a", "b", "c", NULL},
      (const char *[]){"o", NULL}, "o = a * b + c * c");
  const char *names[] = {"x0", "x1", "y"};
  for (guint k = 0; k < 3; k++) {
    g_autofree char *ic = g_strdup_printf("IN_%s", names[k]);
    g_autofree char *oc = g_strdup_printf("OUT_%s", names[k]);
    WeirNode *from[] = {outer, inner, ix, ox};
    if (k < 2)
      for (guint l = 0; l < 2; l++) {
        weir_node_add_in_conn(from[l], ic);
        weir_node_add_out_conn(from[l], oc);
      }
    else
      for (guint l = 2; l < 4; l++) {
        weir_node_add_in_conn(from[l], ic);
        weir_node_add_out_conn(from[l], oc);
      }
  }
  wire(g, s, x->id, NULL, outer->id, "IN_x0", "x0");
  wire(g, s, w->id, NULL, outer->id, "IN_x1", "x1");
  wire(g, s, outer->id, "OUT_x0", inner->id, "IN_x0", "x0");
  wire(g, s, outer->id, "OUT_x1", inner->id, "IN_x1", "x1");
  assert_non_null(weir_state_add_memlet(g, s, inner->id, "OUT_x0", t->id, "a",
                                        "x0", "i, j", NULL));
  assert_non_null(weir_state_add_memlet(g, s, inner->id, "OUT_x1", t->id, "b",
                                        "x1", "j", NULL));
  assert_non_null(weir_state_add_memlet(g, s, inner->id, "OUT_x0", t->id, "c",
                                        "x0", "i, 3 - j", NULL));
  assert_non_null(weir_state_add_memlet(g, s, y0->id, NULL, outer->id, NULL,
                                        NULL, NULL, NULL));
  WeirMemlet *m[3];
  m[0] =
      weir_state_add_memlet(g, s, t->id, "o", ix->id, "IN_y", "y", "i", NULL);
  m[1] = weir_state_add_memlet(g, s, ix->id, "OUT_y", ox->id, "IN_y", "y",
                               "0:3", NULL);
  m[2] = weir_state_add_memlet(g, s, ox->id, "OUT_y", y->id, NULL, "y", "0:3",
                               NULL);
  for (guint k = 0; k < 3; k++) {
    assert_non_null(m[k]);
    m[k]->wcr = WEIR_WCR_SUM;
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("nest program: %s", err->message);
  return g;
}

static void test_nest_program(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = nest_program();
  assert_int_equal(nested_maps(fwd), 1);
  const Case c = {.name = "nest"};
  check_fd_graph(&c, fwd, 2, FALSE);
  /* the backward nest keeps the structure: nested maps accumulate */
  const char *wrt[] = {"x0", "x1", NULL};
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) bwd = backward(fwd, wrt, FALSE, &grads, &err);
  if (!bwd)
    fail_msg("%s", err->message);
  assert_true(nested_maps(bwd) >= 1 + 2);
}

/* ------------------------------------------------------ indexed writes */

static void perm_201(WeirNode *n) {
  ints(n, "perm", (gint64[]){2, 0, 1}, 3);
}

/* Expansions that write out[f(i)] through a non-identity subset (Concat's
 * slabs: y[i, j + 3]; Transpose: the permuted read of a map over y; Pad:
 * the clamped read) or read a slab (Slice), the forward program expanded
 * first, against finite differences. */
static const Case indexed_cases[] = {
    {"concat", "Concat", {"2, 3", "2, 2", "2, 1"}, "2, 6", axis1},
    {"transpose", "Transpose", {"2, 3, 4"}, "4, 2, 3", perm_201},
};

/* t[5 - i] = x0[i] * sin(x1[i]), written through the block t[0:6] and an
 * indexed assignment; then y[i] = t[i] * t[i] + x0[i]. */
static WeirGraph *scatter_program(void) {
  WeirGraph *g = weir_graph_new("scatter");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "x0", WEIR_DTYPE_F64, "6", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "x1", WEIR_DTYPE_F64, "6", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "t", WEIR_DTYPE_F64, "6", TRUE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "y", WEIR_DTYPE_F64, "6", FALSE, NULL));
  WeirNode *x = weir_state_add_access(g, s, "x0");
  WeirNode *w = weir_state_add_access(g, s, "x1");
  WeirNode *t = weir_state_add_access(g, s, "t");
  Io ins1[] = {{"x0", "i", "a"}, {"x1", "i", "b"}};
  WeirNode *acc1[] = {x, w};
  Io out1 = {"t", "0:6", "o"};
  add_map(g, s, "scatter", "i", "0:6", ins1, 2, acc1, &out1, t, WEIR_WCR_NONE,
          NULL, "o[5 - i] = a * sin(b)");
  WeirNode *y = weir_state_add_access(g, s, "y");
  Io ins2[] = {{"t", "i", "u"}, {"x0", "i", "v"}};
  WeirNode *acc2[] = {t, x};
  Io out2 = {"y", "i", "o"};
  add_map(g, s, "square", "i", "0:6", ins2, 2, acc2, &out2, y, WEIR_WCR_NONE,
          NULL, "o = u * u + v");
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("scatter program: %s", err->message);
  return g;
}

static void test_indexed_writes(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(indexed_cases); i++)
    check_fd(&indexed_cases[i], TRUE);
  g_autoptr(WeirGraph) fwd = scatter_program();
  const Case c = {.name = "scatter"};
  check_fd_graph(&c, fwd, 2, FALSE);
  /* closed form at one point: y[k] = t[k]^2 + x0[k], t[5 - i] = x0[i]
   * sin(x1[i]), so dL/dx0[i] = 2 t[5-i] dy[5-i] sin(x1[i]) + dy[i] */
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  const char *wrt[] = {"x0", "x1", NULL};
  g_autoptr(WeirGraph) bwd = backward(fwd, wrt, FALSE, &grads, &err);
  if (!bwd)
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) inputs = random_inputs(fwd, 2);
  g_autoptr(GHashTable) args = run_backward(bwd, inputs);
  const WeirTensor *xt = g_hash_table_lookup(inputs, "x0");
  const WeirTensor *wt = g_hash_table_lookup(inputs, "x1");
  const WeirTensor *dy = g_hash_table_lookup(inputs, "dy");
  const WeirTensor *gx =
      g_hash_table_lookup(args, g_hash_table_lookup(grads, "x0"));
  for (int i = 0; i < 6; i++) {
    double tv = weir_tensor_get(xt, i) * sin(weir_tensor_get(wt, i));
    double ex =
        2 * tv * weir_tensor_get(dy, 5 - i) * sin(weir_tensor_get(wt, i)) +
        weir_tensor_get(dy, i);
    assert_true(fabs(weir_tensor_get(gx, i) - ex) < 1e-12 + 1e-12 * fabs(ex));
  }
}

/* Two indexed assignments to one output are refused with the tasklet's
 * name. */
static void test_indexed_write_errors(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = scatter_program();
  WeirState *s = g_ptr_array_index(fwd->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_TASKLET && strcmp(n->label, "scatter") == 0) {
      assert_true(weir_tasklet_set_code(n, "o[5 - i] = a\no[i] = b"));
    }
  }
  const char *wrt[] = {"x0", "x1", NULL};
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) bwd = backward(fwd, wrt, FALSE, &grads, &err);
  assert_null(bwd);
  assert_non_null(err);
  assert_non_null(strstr(err->message, "tasklet 'scatter'"));
  assert_non_null(strstr(err->message, "only one indexed assignment"));
  /* an indexed and a plain assignment to the same output */
  g_autoptr(WeirGraph) fwd2 = scatter_program();
  s = g_ptr_array_index(fwd2->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_TASKLET && strcmp(n->label, "scatter") == 0)
      assert_true(weir_tasklet_set_code(n, "o[5 - i] = a\no = b"));
  }
  g_autoptr(GHashTable) grads2 = NULL;
  g_autoptr(GError) err2 = NULL;
  g_autoptr(WeirGraph) bwd2 = backward(fwd2, wrt, FALSE, &grads2, &err2);
  assert_null(bwd2);
  assert_non_null(err2);
  assert_non_null(strstr(err2->message, "only one indexed assignment"));
}

/* A map holding a tasklet next to the inner map: refused, naming the map. */
static void test_nest_errors(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = nest_program();
  WeirState *s = g_ptr_array_index(fwd->states, 0);
  WeirNode *rows = NULL, *rows_exit = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_MAP_ENTRY && strcmp(n->label, "rows") == 0)
      rows = n;
  }
  assert_non_null(rows);
  rows_exit = weir_state_map_exit(s, rows);
  WeirNode *extra = weir_state_add_tasklet(
      fwd, s, "extra", (const char *[]){NULL}, (const char *[]){NULL}, "");
  assert_non_null(weir_state_add_memlet(fwd, s, rows->id, NULL, extra->id, NULL,
                                        NULL, NULL, NULL));
  assert_non_null(weir_state_add_memlet(fwd, s, extra->id, NULL, rows_exit->id,
                                        NULL, NULL, NULL, NULL));
  const char *wrt[] = {"x0", "x1", NULL};
  g_autoptr(GHashTable) grads = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) bwd = backward(fwd, wrt, FALSE, &grads, &err);
  assert_null(bwd);
  assert_non_null(err);
  if (!strstr(err->message, "map 'rows' holds several nodes"))
    fail_msg("unexpected error: %s", err->message);
  assert_non_null(strstr(err->message, "program 'nest'"));
}

int main(void) {
  weir_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fallback_gradients),
      cmocka_unit_test(test_expanded_forward_gradients),
      cmocka_unit_test(test_rule_cross_check),
      cmocka_unit_test(test_map_program),
      cmocka_unit_test(test_compiled_agrees),
      cmocka_unit_test(test_two_outputs_and_errors),
      cmocka_unit_test(test_nested_gradients),
      cmocka_unit_test(test_nested_rule_cross_check),
      cmocka_unit_test(test_nest_program),
      cmocka_unit_test(test_indexed_writes),
      cmocka_unit_test(test_indexed_write_errors),
      cmocka_unit_test(test_nest_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
