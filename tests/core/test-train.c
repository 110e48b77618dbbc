/* test-train.c — automatic differentiation and training programs.
 *
 *  - Gradient checks: for every backward rule, a one-node program in f64 on
 *    small random shapes; the gradients the backward nodes compute (run by
 *    the interpreter after expansion) are compared with central finite
 *    differences of L = sum(y * dy) computed by running the forward node.
 *  - The sample MLP: one SGD step of the training program against the same
 *    step computed here in plain C (double), loss, and every parameter.
 *  - K steps in one call equal K calls of one step; a step whose batch
 *    holds a NaN is skipped (parameters and optimizer state unchanged,
 *    "skipped" incremented).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "fd-check.h"
#include "weir-autodiff.h"
#include "weir.h"

/* ---------------------------------------------------------------- helpers */

static WeirTensor *tensor_of(const WeirGraph *g, const char *name,
                             GHashTable *symbols) {
  const WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  gint64 shape[8];
  for (guint d = 0; d < c->shape->len; d++) {
    g_autoptr(GError) err = NULL;
    if (!weir_expr_eval(c->shape->pdata[d], symbols, &shape[d], &err))
      fail_msg("%s: %s", name, err->message);
  }
  WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
  if (c->initial) {
    gsize n = 0;
    const void *data = g_bytes_get_data(c->initial, &n);
    assert_int_equal(n, weir_tensor_nbytes(t));
    memcpy(t->data, data, n);
  }
  return t;
}

static GHashTable *new_args(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

/* Expands a copy of g and interprets it. */
static void run(const WeirGraph *g, GHashTable *symbols, GHashTable *args) {
  g_autoptr(WeirGraph) x = weir_graph_copy(g);
  g_autoptr(GError) err = NULL;
  if (!weir_expand_all(x, NULL, NULL, &err))
    fail_msg("expand: %s", err->message);
  if (!weir_interpret(x, symbols, args, NULL, &err))
    fail_msg("interpret: %s", err->message);
}

static WeirTensor *arg(GHashTable *args, const char *name) {
  WeirTensor *t = g_hash_table_lookup(args, name);
  if (!t)
    fail_msg("no argument '%s'", name);
  return t;
}

/* ------------------------------------------------------- gradient checks */

typedef struct {
  const char *op;
  const char *inputs[4]; /* shapes of f64 inputs ("2, 3"), NULL-terminated */
  const char *output;    /* shape of output 0 */
  void (*attrs)(WeirNode *n);
  gboolean positive; /* inputs drawn from [0.5, 1.5) (Log, Sqrt) */
} GradCase;

/* The forward program: x0.. -> op -> y, all f64 arguments. */
static WeirGraph *one_node(const GradCase *gc, guint *n_in) {
  WeirGraph *g = weir_graph_new("one");
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[5] = {0}, *outs[] = {"out0", NULL};
  static const char *const conns[] = {"in0", "in1", "in2", "in3"};
  static const char *const names[] = {"x0", "x1", "x2", "x3"};
  guint n = 0;
  while (n < 4 && gc->inputs[n]) {
    ins[n] = conns[n];
    gboolean is_int = g_str_has_prefix(gc->inputs[n], "i:");
    g_assert(weir_graph_add_array(
        g, names[n], is_int ? WEIR_DTYPE_I64 : WEIR_DTYPE_F64,
        gc->inputs[n] + (is_int ? 2 : 0), FALSE, NULL));
    n++;
  }
  g_assert(
      weir_graph_add_array(g, "y", WEIR_DTYPE_F64, gc->output, FALSE, NULL));
  WeirNode *lib = weir_state_add_library(g, s, gc->op, gc->op, ins, outs);
  if (gc->attrs)
    gc->attrs(lib);
  for (guint k = 0; k < n; k++) {
    WeirNode *a = weir_state_add_access(g, s, names[k]);
    g_autoptr(WeirSubset) sub =
        weir_container_full_subset(weir_graph_container(g, names[k]));
    g_autofree char *text = weir_subset_to_string(sub);
    g_assert(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conns[k],
                                   names[k], text, NULL));
  }
  WeirNode *y = weir_state_add_access(g, s, "y");
  g_autoptr(WeirSubset) sub =
      weir_container_full_subset(weir_graph_container(g, "y"));
  g_autofree char *text = weir_subset_to_string(sub);
  g_assert(weir_state_add_memlet(g, s, lib->id, "out0", y->id, NULL, "y", text,
                                 NULL));
  g_autoptr(GError) err = NULL;
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", gc->op, err->message);
  *n_in = n;
  return g;
}

static double loss_of(const WeirGraph *fwd, GHashTable *inputs,
                      const WeirTensor *dy) {
  g_autoptr(GHashTable) args = new_args();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, inputs);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(args, g_strdup(k), weir_tensor_copy(v));
  g_hash_table_insert(args, g_strdup("y"),
                      weir_tensor_new(dy->dtype, dy->rank, dy->shape));
  run(fwd, NULL, args);
  const WeirTensor *y = arg(args, "y");
  double l = 0;
  for (gint64 i = 0; i < y->count; i++)
    l += weir_tensor_get(y, i) * weir_tensor_get(dy, i);
  return l;
}

static void check_gradients(const GradCase *gc) {
  guint n_in;
  g_autoptr(WeirGraph) fwd = one_node(gc, &n_in);
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(fwd, &err))
    fail_msg("%s: forward: %s", gc->op, err->message);

  /* Backward program: seed dy, gradients made arguments to read them. */
  g_autoptr(WeirGraph) bwd = weir_graph_copy(fwd);
  g_assert(
      weir_graph_add_array(bwd, "dy", WEIR_DTYPE_F64, gc->output, FALSE, NULL));
  WeirState *s = g_ptr_array_index(bwd->states, 0);
  g_autoptr(GHashTable) seeds = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(seeds, "y", "dy");
  static const char *const names[] = {"x0", "x1", "x2", "x3", NULL};
  const char *wrt[5] = {0};
  for (guint k = 0; k < n_in; k++)
    wrt[k] = names[k];
  g_autoptr(GHashTable) grads = weir_autodiff_state(bwd, s, seeds, wrt, &err);
  if (!grads)
    fail_msg("%s: autodiff: %s", gc->op, err->message);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, grads);
  while (g_hash_table_iter_next(&it, &key, &value))
    weir_graph_container(bwd, value)->transient = FALSE;
  if (!weir_graph_validate(bwd, &err))
    fail_msg("%s: backward: %s", gc->op, err->message);

  g_autoptr(GHashTable) inputs = new_args();
  for (guint k = 0; k < n_in; k++) {
    WeirTensor *t = tensor_of(fwd, names[k], NULL);
    weir_tensor_fill_random(t, 11 + k);
    if (t->dtype == WEIR_DTYPE_I64) /* indices in -2..2, repeated */
      for (gint64 i = 0; i < t->count; i++)
        weir_tensor_set(t, i, (double)((i * 3 + 1) % 5 - 2));
    else if (gc->positive)
      for (gint64 i = 0; i < t->count; i++)
        weir_tensor_set(t, i, 1.0 + 0.5 * weir_tensor_get(t, i));
    g_hash_table_insert(inputs, g_strdup(names[k]), t);
  }
  g_autoptr(WeirTensor) dy = tensor_of(fwd, "y", NULL);
  weir_tensor_fill_random(dy, 7);

  g_autoptr(GHashTable) args = new_args();
  for (guint i = 0; i < bwd->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(bwd->containers, i);
    if (c->transient)
      continue;
    WeirTensor *src = g_hash_table_lookup(inputs, c->name);
    g_hash_table_insert(args, g_strdup(c->name),
                        src ? weir_tensor_copy(src)
                        : g_strcmp0(c->name, "dy") == 0
                            ? weir_tensor_copy(dy)
                            : tensor_of(bwd, c->name, NULL));
  }
  run(bwd, NULL, args);

  guint checked = 0;
  for (guint k = 0; k < n_in; k++) {
    const char *gname = g_hash_table_lookup(grads, names[k]);
    if (g_str_has_prefix(gc->inputs[k], "i:") ||
        !weir_grad_input_differentiable(gc->op, k)) /* class weights */
      continue;
    if (!gname)
      fail_msg("%s: no gradient for input %u", gc->op, k);
    checked +=
        fd_check_input(gc->op, names[k], g_hash_table_lookup(inputs, names[k]),
                       arg(args, gname), loss_of, fwd, inputs, dy);
  }
  assert_true(checked > 0);
}

static void gemm_tb(WeirNode *n) {
  weir_node_set_attr_int(n, "transB", 1);
  weir_node_set_attr_float(n, "alpha", 0.5);
  weir_node_set_attr_float(n, "beta", 2.0);
}
static void gemm_ta(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
}
static void gemm_both(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_int(n, "transB", 1);
}
static void axis1(WeirNode *n) {
  weir_node_set_attr_int(n, "axis", 1);
}
static void axis0(WeirNode *n) {
  weir_node_set_attr_int(n, "axis", 0);
}
static void perm_201(WeirNode *n) {
  const gint64 p[] = {2, 0, 1};
  weir_node_set_attr_ints(n, "perm", p, 3);
}
static void reshape_6_2(WeirNode *n) {
  const gint64 p[] = {6, 2};
  weir_node_set_attr_ints(n, "shape", p, 2);
}
/* the loss operators: labels -1 ignored (the labels of the cases are
 * -2..2, so -2 is clamped to class 0) */
static void loss_mean_ii(WeirNode *n) {
  weir_node_set_attr_int(n, "ignore_index", -1);
}
static void loss_none(WeirNode *n) {
  weir_node_set_attr_string(n, "reduction", "none");
}
static void loss_sum_ii(WeirNode *n) {
  weir_node_set_attr_string(n, "reduction", "sum");
  weir_node_set_attr_int(n, "ignore_index", -1);
}
static void leaky(WeirNode *n) {
  weir_node_set_attr_float(n, "alpha", 0.2);
}
static void ints(WeirNode *n, const char *name, gint64 a, gint64 b) {
  const gint64 v[] = {a, b};
  weir_node_set_attr_ints(n, name, v, 2);
}
static void conv_pad(WeirNode *n) {
  const gint64 p[] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", p, 4);
}
static void conv_s2_g2(WeirNode *n) {
  const gint64 p[] = {1, 0, 0, 1};
  weir_node_set_attr_ints(n, "pads", p, 4);
  ints(n, "strides", 2, 1);
  ints(n, "dilations", 1, 2);
  weir_node_set_attr_int(n, "group", 2);
}
static void pool_2x2(WeirNode *n) {
  ints(n, "kernel_shape", 2, 2);
  ints(n, "strides", 2, 2);
}
static void pool_3x3_pad(WeirNode *n) {
  const gint64 p[] = {1, 1, 1, 1};
  ints(n, "kernel_shape", 3, 3);
  ints(n, "strides", 2, 1);
  weir_node_set_attr_ints(n, "pads", p, 4);
}
static void pool_3x3_pad_incl(WeirNode *n) {
  pool_3x3_pad(n);
  weir_node_set_attr_int(n, "count_include_pad", 1);
}
static void axes_1_keep(WeirNode *n) {
  const gint64 a[] = {1};
  weir_node_set_attr_ints(n, "axes", a, 1);
}
static void axes_02_drop(WeirNode *n) {
  ints(n, "axes", 0, 2);
  weir_node_set_attr_int(n, "keepdims", 0);
}
static void pw_code(WeirNode *n) {
  weir_node_set_attr_string(n, "code",
                            "t = exp(a * 0.5) - tanh(b)\n"
                            "u = a > 0 ? t * t : -t / (1.5 + b * b)\n"
                            "y = pow(u, 2) + max(a, b) * sqrt(c) + "
                            "erf(u) * log(c) + abs(a) + f64(p0)");
}
static void axis1_gather(WeirNode *n) {
  weir_node_set_attr_int(n, "axis", 1);
}
static void concat1(WeirNode *n) {
  weir_node_set_attr_int(n, "axis", 1);
}
static void slice_1(WeirNode *n) {
  const gint64 st[] = {1, -3}, en[] = {3, 100}, ax[] = {0, 1};
  weir_node_set_attr_ints(n, "starts", st, 2);
  weir_node_set_attr_ints(n, "ends", en, 2);
  weir_node_set_attr_ints(n, "axes", ax, 2);
}

static const GradCase grad_cases[] = {
    {"Relu", {"3, 4"}, "3, 4", NULL, FALSE},
    {"LeakyRelu", {"3, 4"}, "3, 4", leaky, FALSE},
    {"Sigmoid", {"3, 4"}, "3, 4", NULL, FALSE},
    {"Tanh", {"2, 5"}, "2, 5", NULL, FALSE},
    {"Erf", {"2, 5"}, "2, 5", NULL, FALSE},
    {"Exp", {"2, 3"}, "2, 3", NULL, FALSE},
    {"Log", {"2, 3"}, "2, 3", NULL, TRUE},
    {"Sqrt", {"2, 3"}, "2, 3", NULL, TRUE},
    {"Neg", {"2, 3"}, "2, 3", NULL, FALSE},
    {"Identity", {"2, 3"}, "2, 3", NULL, FALSE},
    {"Add", {"2, 3, 4", "3, 1"}, "2, 3, 4", NULL, FALSE},
    {"Sub", {"4", "2, 3, 4"}, "2, 3, 4", NULL, FALSE},
    {"Mul", {"2, 1, 4", "3, 1"}, "2, 3, 4", NULL, FALSE},
    {"Div", {"2, 3", "3"}, "2, 3", NULL, TRUE},
    {"Sum", {"2, 3", "3", "2, 1"}, "2, 3", NULL, FALSE},
    {"Gemm", {"3, 4", "5, 4", "5"}, "3, 5", gemm_tb, FALSE},
    {"Gemm", {"4, 3", "4, 5", "3, 1"}, "3, 5", gemm_ta, FALSE},
    {"Gemm", {"4, 3", "5, 4"}, "3, 5", gemm_both, FALSE},
    {"MatMul", {"3, 4", "4, 2"}, "3, 2", NULL, FALSE},
    {"MatMul", {"2, 3, 4", "4, 2"}, "2, 3, 2", NULL, FALSE},
    {"Softmax", {"3, 4"}, "3, 4", axis1, FALSE},
    {"Softmax", {"3, 4"}, "3, 4", axis0, FALSE},
    {"LogSoftmax", {"2, 5"}, "2, 5", axis1, FALSE},
    {"Transpose", {"2, 3, 4"}, "4, 2, 3", perm_201, FALSE},
    {"Reshape", {"3, 4"}, "6, 2", reshape_6_2, FALSE},
    {"Flatten", {"2, 3, 2"}, "2, 6", NULL, FALSE},
    {"Conv", {"2, 2, 4, 4", "3, 2, 3, 3", "3"}, "2, 3, 4, 4", conv_pad, FALSE},
    {"Conv", {"1, 4, 5, 5", "2, 2, 2, 2"}, "1, 2, 3, 4", conv_s2_g2, FALSE},
    {"MaxPool", {"2, 2, 4, 4"}, "2, 2, 2, 2", pool_2x2, FALSE},
    {"MaxPool", {"1, 2, 5, 4"}, "1, 2, 3, 4", pool_3x3_pad, FALSE},
    {"AveragePool", {"1, 2, 5, 4"}, "1, 2, 3, 4", pool_3x3_pad, FALSE},
    {"AveragePool", {"1, 2, 5, 4"}, "1, 2, 3, 4", pool_3x3_pad_incl, FALSE},
    {"GlobalAveragePool", {"2, 3, 2, 3"}, "2, 3, 1, 1", NULL, FALSE},
    {"ReduceSum", {"2, 3, 4"}, "2, 1, 4", axes_1_keep, FALSE},
    {"ReduceMean", {"2, 3, 4"}, "3", axes_02_drop, FALSE},
    {"Concat", {"2, 1", "2, 3"}, "2, 4", concat1, FALSE},
    {"Slice", {"4, 5"}, "2, 3", slice_1, FALSE},
    {"Pointwise", {"3, 4", "4", "3, 1"}, "3, 4", pw_code, TRUE},
    {"Gather", {"5, 3", "i:2, 3"}, "2, 3, 3", NULL, FALSE},
    {"Gather", {"2, 5, 2", "i:4"}, "2, 4, 2", axis1_gather, FALSE},
    {"SoftmaxCrossEntropyLoss",
     {"2, 4, 3", "i:2, 3", "4"},
     "",
     loss_mean_ii,
     FALSE},
    {"SoftmaxCrossEntropyLoss", {"3, 4", "i:3"}, "3", loss_none, FALSE},
    {"SoftmaxCrossEntropyLoss", {"2, 4, 3", "i:2, 3"}, "", loss_sum_ii, FALSE},
    {"NegativeLogLikelihoodLoss",
     {"2, 4, 3", "i:2, 3", "4"},
     "2, 3",
     loss_none,
     FALSE},
    {"NegativeLogLikelihoodLoss",
     {"2, 4, 3", "i:2, 3"},
     "",
     loss_mean_ii,
     FALSE},
};

static void test_gradient_checks(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(grad_cases); i++)
    check_gradients(&grad_cases[i]);
}

/* ------------------------------------------------------------- the MLP */

static WeirGraph *load_mlp(void) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &err);
  if (!g)
    fail_msg("%s", err->message);
  return g;
}

/* Arguments of training program t for K steps of batch B from forward
 * program fwd: parameters from the model, inputs random, labels given. */
static GHashTable *train_args(const WeirGraph *t, const WeirGraph *fwd,
                              GHashTable *symbols, const gint64 *labels) {
  GHashTable *args = new_args();
  for (guint i = 0; i < t->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(t->containers, i);
    if (c->transient)
      continue;
    const WeirContainer *f = weir_graph_container(fwd, c->name);
    WeirTensor *v = tensor_of(f && f->initial ? fwd : t, c->name, symbols);
    if (g_strcmp0(c->name, "input") == 0)
      weir_tensor_fill_random(v, 3);
    if (g_strcmp0(c->name, "target") == 0)
      for (gint64 j = 0; j < v->count; j++)
        weir_tensor_set(v, j, (double)labels[j]);
    g_hash_table_insert(args, g_strdup(c->name), v);
  }
  return args;
}

static void linear(const double *x, const double *w, const double *b, int n,
                   int in, int out, double *y, gboolean relu) {
  for (int i = 0; i < n; i++)
    for (int o = 0; o < out; o++) {
      double s = b[o];
      for (int k = 0; k < in; k++)
        s += x[i * in + k] * w[o * in + k];
      y[i * out + o] = relu && s < 0 ? 0 : s;
    }
}

/* dx = dy W, dW = dy^T x, db = sum dy; then masks dx by x > 0 when mask. */
static void linear_back(const double *x, const double *w, const double *dy,
                        int n, int in, int out, double *dx, double *dw,
                        double *db, gboolean mask) {
  memset(dw, 0, sizeof(double) * in * out);
  memset(db, 0, sizeof(double) * out);
  for (int i = 0; i < n; i++)
    for (int o = 0; o < out; o++) {
      db[o] += dy[i * out + o];
      for (int k = 0; k < in; k++)
        dw[o * in + k] += dy[i * out + o] * x[i * in + k];
    }
  if (!dx)
    return;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < in; k++) {
      double s = 0;
      for (int o = 0; o < out; o++)
        s += dy[i * out + o] * w[o * in + k];
      dx[i * in + k] = mask && x[i * in + k] <= 0 ? 0 : s;
    }
}

static double *doubles(const WeirTensor *t) {
  double *d = g_new(double, t->count);
  for (gint64 i = 0; i < t->count; i++)
    d[i] = weir_tensor_get(t, i);
  return d;
}

static void test_mlp_sgd_step(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_mlp();
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.lr = 0.1;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  if (!weir_graph_validate(t, &err))
    fail_msg("%s", err->message);
  g_auto(GStrv) params = weir_train_parameters(fwd);
  assert_int_equal(g_strv_length(params), 6);

  enum { B = 4 };
  const gint64 labels[B] = {3, 0, 9, 5};
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "batch", B);
  weir_bindings_set(sym, "K", 1);
  g_autoptr(GHashTable) args = train_args(t, fwd, sym, labels);

  /* Reference, in double. */
  g_autofree double *x = doubles(arg(args, "input"));
  g_autofree double *w1 = doubles(arg(args, "fc1_weight"));
  g_autofree double *b1 = doubles(arg(args, "fc1_bias"));
  g_autofree double *w2 = doubles(arg(args, "fc2_weight"));
  g_autofree double *b2 = doubles(arg(args, "fc2_bias"));
  g_autofree double *w3 = doubles(arg(args, "fc3_weight"));
  g_autofree double *b3 = doubles(arg(args, "fc3_bias"));
  double h1[B * 128], h2[B * 64], z[B * 10], dz[B * 10], dh2[B * 64],
      dh1[B * 128];
  double dw1[128 * 64], db1[128], dw2[64 * 128], db2[64], dw3[10 * 64], db3[10];
  linear(x, w1, b1, B, 64, 128, h1, TRUE);
  linear(h1, w2, b2, B, 128, 64, h2, TRUE);
  linear(h2, w3, b3, B, 64, 10, z, FALSE);
  double loss = 0;
  for (int i = 0; i < B; i++) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < 10; c++)
      m = fmax(m, z[i * 10 + c]);
    for (int c = 0; c < 10; c++)
      s += exp(z[i * 10 + c] - m);
    loss += -(z[i * 10 + labels[i]] - m - log(s)) / B;
    for (int c = 0; c < 10; c++)
      dz[i * 10 + c] =
          (exp(z[i * 10 + c] - m) / s - (c == labels[i] ? 1 : 0)) / B;
  }
  linear_back(h2, w3, dz, B, 64, 10, dh2, dw3, db3, TRUE);
  linear_back(h1, w2, dh2, B, 128, 64, dh1, dw2, db2, TRUE);
  linear_back(x, w1, dh1, B, 64, 128, NULL, dw1, db1, FALSE);

  run(t, sym, args);

  assert_true(fabs(weir_tensor_get(arg(args, "losses"), 0) - loss) <
              1e-4 * fmax(1, fabs(loss)));
  assert_int_equal((gint64)weir_tensor_get(arg(args, "step"), 0), 1);
  assert_int_equal((gint64)weir_tensor_get(arg(args, "skipped"), 0), 0);
  struct {
    const char *name;
    const double *before, *grad;
  } ps[] = {{"fc1_weight", w1, dw1}, {"fc1_bias", b1, db1},
            {"fc2_weight", w2, dw2}, {"fc2_bias", b2, db2},
            {"fc3_weight", w3, dw3}, {"fc3_bias", b3, db3}};
  for (guint p = 0; p < G_N_ELEMENTS(ps); p++) {
    const WeirTensor *after = arg(args, ps[p].name);
    double max_grad = 0;
    for (gint64 i = 0; i < after->count; i++) {
      double want = ps[p].before[i] - 0.1 * ps[p].grad[i];
      double got = weir_tensor_get(after, i);
      max_grad = fmax(max_grad, fabs(ps[p].grad[i]));
      if (fabs(got - want) > 1e-5 + 1e-4 * fabs(want))
        fail_msg("%s[%" G_GINT64_FORMAT "]: %.8g, expected %.8g", ps[p].name, i,
                 got, want);
    }
    assert_true(max_grad > 1e-6); /* the step did change it */
  }
}

/* Runs `steps` single-step calls of t1 over the batches of args_k. */
static void run_one_by_one(const WeirGraph *t1, GHashTable *args_k,
                           GHashTable *args1, GHashTable *sym1, int steps) {
  const WeirTensor *xs = arg(args_k, "input"), *ts = arg(args_k, "target");
  WeirTensor *x1 = arg(args1, "input"), *t1t = arg(args1, "target");
  for (int k = 0; k < steps; k++) {
    memcpy(x1->data, (char *)xs->data + k * weir_tensor_nbytes(x1),
           weir_tensor_nbytes(x1));
    memcpy(t1t->data, (char *)ts->data + k * weir_tensor_nbytes(t1t),
           weir_tensor_nbytes(t1t));
    run(t1, sym1, args1);
  }
}

static void compare_params(GHashTable *a, GHashTable *b, char **params,
                           double tol) {
  for (guint i = 0; params[i]; i++) {
    g_autoptr(GError) err = NULL;
    if (!weir_tensor_allclose(arg(a, params[i]), arg(b, params[i]), tol, tol,
                              NULL, &err))
      fail_msg("%s: %s", params[i], err->message);
  }
}

static void k_steps(WeirOptimizer opt, gboolean inject_nan) {
  g_autoptr(WeirGraph) fwd = load_mlp();
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = opt;
  o.lr = 0.05;
  o.weight_decay = 0.01;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  g_auto(GStrv) params = weir_train_parameters(fwd);

  enum { B = 2, K = 3 };
  const gint64 labels[K * B] = {1, 2, 3, 4, 5, 6};
  g_autoptr(GHashTable) symk = weir_bindings_new();
  weir_bindings_set(symk, "batch", B);
  weir_bindings_set(symk, "K", K);
  g_autoptr(GHashTable) argsk = train_args(t, fwd, symk, labels);
  if (inject_nan)
    weir_tensor_set(arg(argsk, "input"), B * 64 + 5, NAN); /* step 1 */
  g_autoptr(GHashTable) sym1 = weir_bindings_new();
  weir_bindings_set(sym1, "batch", B);
  weir_bindings_set(sym1, "K", 1);
  g_autoptr(GHashTable) args1 = train_args(t, fwd, sym1, labels);

  if (!inject_nan) {
    run_one_by_one(t, argsk, args1, sym1, K);
  } else {
    /* the same as running steps 0 and 2 only */
    const WeirTensor *xs = arg(argsk, "input"), *ts = arg(argsk, "target");
    WeirTensor *x1 = arg(args1, "input"), *t1 = arg(args1, "target");
    for (int k = 0; k < K; k += 2) {
      memcpy(x1->data, (char *)xs->data + k * weir_tensor_nbytes(x1),
             weir_tensor_nbytes(x1));
      memcpy(t1->data, (char *)ts->data + k * weir_tensor_nbytes(t1),
             weir_tensor_nbytes(t1));
      run(t, sym1, args1);
    }
  }
  run(t, symk, argsk);
  compare_params(argsk, args1, params, 1e-6);
  assert_int_equal((gint64)weir_tensor_get(arg(argsk, "step"), 0),
                   inject_nan ? K - 1 : K);
  assert_int_equal((gint64)weir_tensor_get(arg(argsk, "skipped"), 0),
                   inject_nan ? 1 : 0);
  const WeirTensor *losses = arg(argsk, "losses");
  assert_true(isfinite(weir_tensor_get(losses, 0)));
  assert_true(inject_nan != !!isfinite(weir_tensor_get(losses, 1)));
  if (opt != WEIR_OPTIMIZER_SGD) {
    g_autofree char *m = g_strdup_printf("%s_m", params[0]);
    g_autoptr(GError) e2 = NULL;
    if (!weir_tensor_allclose(arg(argsk, m), arg(args1, m), 1e-6, 1e-6, NULL,
                              &e2))
      fail_msg("%s: %s", m, e2->message);
  }
}

static void test_k_steps_sgd(void **state) {
  (void)state;
  k_steps(WEIR_OPTIMIZER_SGD, FALSE);
}
static void test_k_steps_adam(void **state) {
  (void)state;
  k_steps(WEIR_OPTIMIZER_ADAM, FALSE);
}
static void test_skip_nan_momentum(void **state) {
  (void)state;
  k_steps(WEIR_OPTIMIZER_MOMENTUM, TRUE);
}
static void test_skip_nan_adam(void **state) {
  (void)state;
  k_steps(WEIR_OPTIMIZER_ADAM, TRUE);
}

/* ------------------------------------ training-mode operators (lowered)
 *
 * A one-node f64 model whose inputs 1.. are parameters (constant data);
 * the training program with MSE loss, SGD and lr = 1 gives the gradient as
 * (before - after); the same program with lr = 0 gives the loss at
 * perturbed parameters for central differences. */

typedef struct {
  const char *op;
  const char *shapes[5]; /* input 0 is the data, others parameters */
  const char *output;
  void (*attrs)(WeirNode *n);
  guint n_params;      /* inputs 1..n_params are trained */
  guint extra_outputs; /* BatchNormalization running mean / var outputs */
} TrainCase;

static WeirGraph *train_model(const TrainCase *tc) {
  WeirGraph *g = weir_graph_new("model");
  WeirState *s = weir_graph_add_state(g, "main");
  static const char *const names[] = {"input", "p1", "p2", "p3", "p4"};
  static const char *const conns[] = {"in0", "in1", "in2", "in3", "in4"};
  const char *ins[6] = {0};
  guint n = 0;
  while (n < 5 && tc->shapes[n]) {
    ins[n] = conns[n];
    WeirContainer *c = weir_graph_add_array(g, names[n], WEIR_DTYPE_F64,
                                            tc->shapes[n], n > 0, NULL);
    g_assert(c);
    if (n > 0) {
      g_autoptr(WeirTensor) t = tensor_of(g, names[n], NULL);
      weir_tensor_fill_random(t, 100 + n);
      for (gint64 i = 0; i < t->count && n >= 3; i++) /* running var > 0 */
        weir_tensor_set(t, i, 1.5 + 0.5 * weir_tensor_get(t, i));
      g_autoptr(GBytes) bytes = g_bytes_new(t->data, weir_tensor_nbytes(t));
      weir_container_set_initial(c, bytes);
    }
    n++;
  }
  g_assert(weir_graph_add_array(g, "output", WEIR_DTYPE_F64, tc->output, FALSE,
                                NULL));
  const char *outs[] = {"out0", "out1", "out2", NULL};
  outs[1 + tc->extra_outputs] = NULL;
  WeirNode *lib = weir_state_add_library(g, s, tc->op, tc->op, ins, outs);
  if (tc->attrs)
    tc->attrs(lib);
  for (guint k = 0; k < n; k++) {
    WeirNode *a = weir_state_add_access(g, s, names[k]);
    g_autoptr(WeirSubset) sub =
        weir_container_full_subset(weir_graph_container(g, names[k]));
    g_autofree char *text = weir_subset_to_string(sub);
    g_assert(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conns[k],
                                   names[k], text, NULL));
  }
  for (guint k = 0; k <= tc->extra_outputs; k++) {
    const char *name = k == 0 ? "output" : k == 1 ? "out_mean" : "out_var";
    if (k > 0)
      g_assert(weir_graph_add_array(g, name, WEIR_DTYPE_F64, tc->shapes[3],
                                    TRUE, NULL));
    WeirNode *y = weir_state_add_access(g, s, name);
    g_autoptr(WeirSubset) sub =
        weir_container_full_subset(weir_graph_container(g, name));
    g_autofree char *text = weir_subset_to_string(sub);
    g_assert(weir_state_add_memlet(g, s, lib->id, outs[k], y->id, NULL, name,
                                   text, NULL));
  }
  g_autoptr(GError) err = NULL;
  if (!weir_op_check_attrs(lib, &err) || !weir_graph_validate(g, &err))
    fail_msg("%s: %s", tc->op, err->message);
  return g;
}

static WeirGraph *train_program(const WeirGraph *fwd, double lr) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  o.lr = lr;
  o.steps = 1;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  if (!weir_graph_validate(t, &err) || !weir_expand_all(t, NULL, NULL, &err))
    fail_msg("%s", err->message);
  return t;
}

/* Arguments of t: parameters from fwd's data, input and target random. */
static GHashTable *case_args(const WeirGraph *t, const WeirGraph *fwd) {
  GHashTable *args = new_args();
  for (guint i = 0; i < t->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(t->containers, i);
    if (c->transient)
      continue;
    const WeirContainer *f = weir_graph_container(fwd, c->name);
    WeirTensor *v = tensor_of(f && f->initial ? fwd : t, c->name, NULL);
    if (!strcmp(c->name, "input") || !strcmp(c->name, "target"))
      weir_tensor_fill_random(v, strlen(c->name));
    g_hash_table_insert(args, g_strdup(c->name), v);
  }
  return args;
}

static void interpret(WeirGraph *expanded, GHashTable *args) {
  g_autoptr(GError) err = NULL;
  if (!weir_interpret(expanded, NULL, args, NULL, &err))
    fail_msg("interpret: %s", err->message);
}

static void check_train_case(const TrainCase *tc) {
  g_autoptr(WeirGraph) fwd = train_model(tc);
  g_autoptr(WeirGraph) t1 = train_program(fwd, 1.0);
  g_autoptr(WeirGraph) t0 = train_program(fwd, 0.0);
  g_autoptr(GHashTable) stepped = case_args(t1, fwd);
  g_autoptr(GHashTable) base = case_args(t0, fwd);
  interpret(t1, stepped);
  static const char *const names[] = {"input", "p1", "p2", "p3", "p4"};
  for (guint k = 1; k <= tc->n_params; k++) {
    const WeirTensor *after = arg(stepped, names[k]);
    WeirTensor *p = arg(base, names[k]);
    for (gint64 i = 0; i < p->count; i++) {
      const double h = 1e-6, p0 = weir_tensor_get(p, i);
      double l[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        g_autoptr(GHashTable) a = case_args(t0, fwd);
        weir_tensor_set(arg(a, names[k]), i, p0 + (sgn ? -h : h));
        interpret(t0, a);
        l[sgn] = weir_tensor_get(arg(a, "losses"), 0);
      }
      double num = (l[0] - l[1]) / (2 * h);
      double got = p0 - weir_tensor_get(after, i);
      if (fabs(num - got) > 1e-6 + 1e-5 * fabs(num))
        fail_msg("%s: d/d%s[%" G_GINT64_FORMAT "]: training step %.10g, "
                 "finite differences %.10g",
                 tc->op, names[k], i, got, num);
    }
  }
}

static void bn_attrs(WeirNode *n) {
  weir_node_set_attr_float(n, "momentum", 0.8);
  weir_node_set_attr_float(n, "epsilon", 1e-3);
}
static void ln_attrs(WeirNode *n) {
  weir_node_set_attr_int(n, "axis", -2);
}

static const TrainCase train_cases[] = {
    {"BatchNormalization",
     {"3, 2, 2, 2", "2", "2", "2", "2"},
     "3, 2, 2, 2",
     bn_attrs,
     2,
     0},
    {"BatchNormalization", {"4, 3", "3", "3", "3", "3"}, "4, 3", NULL, 2, 0},
    {"LayerNormalization",
     {"2, 3, 4", "3, 4", "3, 4"},
     "2, 3, 4",
     ln_attrs,
     2,
     0},
    {"Gemm", {"3, 4", "5, 4", "5"}, "3, 5", gemm_tb, 2, 0},
};

static void test_training_mode_gradients(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(train_cases); i++)
    check_train_case(&train_cases[i]);
}

/* Sample models converted to f64: every parameter's gradient from one
 * training step (MSE, SGD, lr = 1) against central differences of the loss
 * at n_picks elements.  The transformer: attention (batched MatMul,
 * Softmax, Transpose, Reshape, Slice), LayerNorm decomposed into
 * ReduceMean, Sub, Pow, Add, Sqrt, Div. */
static void to_f64(WeirGraph *g) {
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->dtype != WEIR_DTYPE_F32)
      continue;
    c->dtype = WEIR_DTYPE_F64;
    if (c->initial) {
      gsize n = 0;
      const float *f = g_bytes_get_data(c->initial, &n);
      n /= sizeof(float);
      double *d = g_new(double, n ? n : 1);
      for (gsize k = 0; k < n; k++)
        d[k] = f[k];
      g_autoptr(GBytes) b = g_bytes_new_take(d, n * sizeof(double));
      weir_container_set_initial(c, b);
    }
  }
}

static void model_gradients(const char *model, guint n_params, guint n_picks) {
  g_autofree char *file = g_strdup_printf("%s.onnx", model);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(path, NULL, &err);
  if (!fwd)
    fail_msg("%s", err->message);
  to_f64(fwd);
  g_autoptr(WeirGraph) t1 = train_program(fwd, 1.0);
  g_autoptr(WeirGraph) t0 = train_program(fwd, 0.0);
  g_autoptr(GHashTable) stepped = case_args(t1, fwd);
  interpret(t1, stepped);
  g_auto(GStrv) params = weir_train_parameters(fwd);
  assert_int_equal(g_strv_length(params), n_params);
  for (guint p = 0; params[p]; p++) {
    g_autoptr(GHashTable) base = case_args(t0, fwd);
    const WeirTensor *before = arg(base, params[p]);
    const WeirTensor *after = arg(stepped, params[p]);
    const gint64 picks[] = {before->count / 2, 0, before->count - 1};
    for (guint j = 0; j < n_picks; j++) {
      gint64 i = picks[j];
      const double h = 1e-6, p0 = weir_tensor_get(before, i);
      double l[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        g_autoptr(GHashTable) a = case_args(t0, fwd);
        weir_tensor_set(arg(a, params[p]), i, p0 + (sgn ? -h : h));
        interpret(t0, a);
        l[sgn] = weir_tensor_get(arg(a, "losses"), 0);
      }
      double num = (l[0] - l[1]) / (2 * h);
      double got = p0 - weir_tensor_get(after, i);
      if (fabs(num - got) > 1e-7 + 1e-5 * fabs(num))
        fail_msg("%s: d/d%s[%" G_GINT64_FORMAT "]: training step "
                 "%.10g, finite differences %.10g",
                 model, params[p], i, got, num);
    }
  }
}

static void test_transformer_gradients(void **state) {
  (void)state;
  model_gradients("transformer", 12, 3);
}

/* LeNet (Conv, MaxPool, Flatten): one element per parameter.  (The
 * residual CNN takes minutes in the interpreter; its operators are checked
 * one by one above, BatchNormalization in training mode by
 * test_training_mode_gradients.) */
static void test_cnn_gradients(void **state) {
  (void)state;
  model_gradients("lenet", 8, 1);
}

/* Running statistics: momentum * running + (1 - momentum) * batch, the
 * variance unbiased; output normalized with the batch statistics. */
static void test_batchnorm_running_stats(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = train_model(&train_cases[0]);
  g_autoptr(WeirGraph) t = train_program(fwd, 0.0);
  g_autoptr(GHashTable) args = case_args(t, fwd);
  g_autoptr(WeirTensor) rm0 = weir_tensor_copy(arg(args, "p3"));
  g_autoptr(WeirTensor) rv0 = weir_tensor_copy(arg(args, "p4"));
  const WeirTensor *x = arg(args, "input");
  interpret(t, args);
  for (int c = 0; c < 2; c++) {
    double sum = 0, sq = 0;
    int n = 0;
    for (int b = 0; b < 3; b++)
      for (int i = 0; i < 4; i++) {
        double v = weir_tensor_get(x, (b * 2 + c) * 4 + i);
        sum += v;
        sq += v * v;
        n++;
      }
    double mean = sum / n, var = sq / n - mean * mean;
    double want_m = 0.8 * weir_tensor_get(rm0, c) + 0.2 * mean;
    double want_v = 0.8 * weir_tensor_get(rv0, c) + 0.2 * var * n / (n - 1);
    assert_true(fabs(weir_tensor_get(arg(args, "p3"), c) - want_m) < 1e-9);
    assert_true(fabs(weir_tensor_get(arg(args, "p4"), c) - want_v) < 1e-9);
  }
}

/* Dropout: a seeded mask, about `ratio` of the elements dropped, the rest
 * scaled by 1 / (1 - ratio); different at each step, the same for the
 * same step. */
static void test_dropout_mask(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("drop");
  WeirState *s = weir_graph_add_state(g, "main");
  g_assert(
      weir_graph_add_array(g, "input", WEIR_DTYPE_F64, "64, 32", FALSE, NULL));
  WeirContainer *w =
      weir_graph_add_array(g, "w", WEIR_DTYPE_F64, "32", TRUE, NULL);
  g_autoptr(GBytes) ones = NULL;
  {
    double v[32];
    for (int i = 0; i < 32; i++)
      v[i] = 1;
    ones = g_bytes_new(v, sizeof v);
  }
  weir_container_set_initial(w, ones);
  g_assert(
      weir_graph_add_array(g, "scaled", WEIR_DTYPE_F64, "64, 32", TRUE, NULL));
  g_assert(
      weir_graph_add_array(g, "output", WEIR_DTYPE_F64, "64, 32", FALSE, NULL));
  const char *i2[] = {"in0", "in1", NULL}, *i1[] = {"in0", NULL},
             *o1[] = {"out0", NULL};
  WeirNode *mul = weir_state_add_library(g, s, "mul", "Mul", i2, o1);
  WeirNode *drop = weir_state_add_library(g, s, "drop", "Dropout", i1, o1);
  weir_node_set_attr_float(drop, "ratio", 0.25);
  WeirNode *ax = weir_state_add_access(g, s, "input");
  WeirNode *aw = weir_state_add_access(g, s, "w");
  WeirNode *as = weir_state_add_access(g, s, "scaled");
  WeirNode *ao = weir_state_add_access(g, s, "output");
  g_assert(weir_state_add_memlet(g, s, ax->id, NULL, mul->id, "in0", "input",
                                 "0:64, 0:32", NULL));
  g_assert(weir_state_add_memlet(g, s, aw->id, NULL, mul->id, "in1", "w",
                                 "0:32", NULL));
  g_assert(weir_state_add_memlet(g, s, mul->id, "out0", as->id, NULL, "scaled",
                                 "0:64, 0:32", NULL));
  g_assert(weir_state_add_memlet(g, s, as->id, NULL, drop->id, "in0", "scaled",
                                 "0:64, 0:32", NULL));
  g_assert(weir_state_add_memlet(g, s, drop->id, "out0", ao->id, NULL, "output",
                                 "0:64, 0:32", NULL));
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(mul, &err) &&
              weir_op_check_attrs(drop, &err));
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  o.lr = 1.0;
  g_autoptr(WeirGraph) t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  assert_true(weir_graph_validate(t, &err));
  assert_true(weir_expand_all(t, NULL, NULL, &err));
  /* output = input * w * mask with input = 1, target = 0: the loss is the
   * mean of mask^2 and the mask is recovered from it; w's gradient is
   * 2 * mean over the batch of mask^2 / 32 ... (checked via counts). */
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "K", 2);
  g_autoptr(GHashTable) args = new_args();
  for (guint i = 0; i < t->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(t->containers, i);
    if (c->transient)
      continue;
    WeirTensor *v =
        tensor_of(c->initial || !strcmp(c->name, "w") ? g : t, c->name, sym);
    if (!strcmp(c->name, "input"))
      for (gint64 j = 0; j < v->count; j++)
        weir_tensor_set(v, j, 1.0);
    g_hash_table_insert(args, g_strdup(c->name), v);
  }
  /* lr = 0 so both steps see w = 1 */
  o.lr = 0;
  g_autoptr(WeirGraph) t0 = weir_train_graph(g, &o, &err);
  assert_true(weir_expand_all(t0, NULL, NULL, &err));
  assert_true(weir_interpret(t0, sym, args, NULL, &err));
  const WeirTensor *losses = arg(args, "losses");
  /* mean of mask^2 = kept fraction / (1 - ratio)^2 */
  for (int k = 0; k < 2; k++) {
    double kept = weir_tensor_get(losses, k) * 0.75 * 0.75;
    assert_true(kept > 0.65 && kept < 0.85);
  }
  assert_true(weir_tensor_get(losses, 0) != weir_tensor_get(losses, 1));
}

/* The eval program: parameters and running statistics are arguments, the
 * rest as in the model. */
static void test_eval_graph(void **state) {
  (void)state;
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "resnet.onnx", NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(path, NULL, &err);
  assert_non_null(fwd);
  g_autoptr(WeirGraph) ev = weir_train_eval_graph(fwd, NULL, &err);
  assert_non_null(ev);
  assert_true(weir_graph_validate(ev, &err));
  g_auto(GStrv) params = weir_train_parameters(fwd);
  assert_int_equal(g_strv_length(params), 17);
  guint running = 0;
  for (guint i = 0; i < ev->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(ev->containers, i);
    gboolean is_param = g_strv_contains((const char *const *)params, c->name);
    if (is_param)
      assert_false(c->transient || c->initial);
    if (g_str_has_suffix(c->name, "running_mean") ||
        g_str_has_suffix(c->name, "running_var")) {
      assert_false(is_param);
      assert_false(c->transient || c->initial);
      running++;
    }
  }
  assert_int_equal(running, 10);
}

static void pw_mod(WeirNode *n) {
  weir_node_set_attr_string(n, "code", "y = a % 1.5");
}

/* x0 of a one-node program made a parameter; the MSE training program. */
static WeirGraph *train_one(const GradCase *gc, GError **error) {
  guint n;
  g_autoptr(WeirGraph) g = one_node(gc, &n);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  WeirContainer *c = weir_graph_container(g, "x0");
  c->transient = TRUE;
  g_autoptr(GBytes) bytes = g_bytes_new_take(g_new0(double, 6), 48);
  weir_container_set_initial(c, bytes);
  return weir_train_graph(g, &o, error);
}

/* Operators without a rule go through the autodiff fallback (their
 * expansion is differentiated: tests/core/test-autodiff-maps.c): Floor
 * trains (its gradient is 0).  Code the fallback cannot differentiate is
 * an error naming the node and the construct. */
static void test_no_rule_error(void **state) {
  (void)state;
  GradCase floor_case = {"Floor", {"2, 3"}, "2, 3", NULL, FALSE};
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) t = train_one(&floor_case, &err);
  if (!t)
    fail_msg("Floor: %s", err->message);
  if (!weir_graph_validate(t, &err))
    fail_msg("Floor: %s", err->message);
  GradCase mod_case = {"Pointwise", {"2, 3"}, "2, 3", pw_mod, FALSE};
  g_autoptr(WeirGraph) t2 = train_one(&mod_case, &err);
  assert_null(t2);
  assert_non_null(strstr(err->message, "'Pointwise"));
  assert_non_null(strstr(err->message, "'%' is not supported"));
}

/* Regression (issue 7, the transformer's step): single-element constants
 * of an exported model -- LayerNorm's Pow exponent, attention's scale --
 * are not parameters.  When they were, the exponent's gradient
 * ln(d) d^2 was NaN for negative d, the in-program check skipped the whole
 * step (so every parameter stayed put: the transformer's in_proj_bias
 * "differed" from PyTorch by lr times its gradient), and the Adam update
 * of the rank-0 scale could not be expanded.  Here d = x - w,
 * y = Pow(d, 2) / scale with rank-0 constants 2 and scale: w is the only
 * parameter, the SGD step is taken (skipped = 0) and gives the gradient
 * of every element of w within central differences, and the Adam program
 * expands and moves every element of w. */
static void scalar_chain_node(WeirGraph *g, WeirState *s, const char *op,
                              const char *a, const char *b, const char *y) {
  const char *ins[] = {"in0", "in1", NULL}, *outs[] = {"out0", NULL};
  WeirNode *n = weir_state_add_library(g, s, y, op, ins, outs);
  const char *names[] = {a, b};
  for (guint k = 0; k < 2; k++) {
    /* the access node that wrote the value, when a node of the chain did */
    WeirNode *acc = NULL;
    for (guint i = 0; i < s->nodes->len && !acc; i++) {
      WeirNode *x = g_ptr_array_index(s->nodes, i);
      if (x->kind == WEIR_NODE_ACCESS && !g_strcmp0(x->data, names[k]))
        acc = x;
    }
    if (!acc)
      acc = weir_state_add_access(g, s, names[k]);
    g_autoptr(WeirSubset) sub =
        weir_container_full_subset(weir_graph_container(g, names[k]));
    g_autofree char *text = weir_subset_to_string(sub);
    g_assert(weir_state_add_memlet(g, s, acc->id, NULL, n->id, ins[k], names[k],
                                   text, NULL));
  }
  WeirNode *out = weir_state_add_access(g, s, y);
  g_autoptr(WeirSubset) sub =
      weir_container_full_subset(weir_graph_container(g, y));
  g_autofree char *text = weir_subset_to_string(sub);
  g_assert(
      weir_state_add_memlet(g, s, n->id, "out0", out->id, NULL, y, text, NULL));
}

static void set_constant(WeirGraph *g, const char *name, const double *v,
                         gsize n) {
  g_autoptr(GBytes) b = g_bytes_new(v, n * sizeof(double));
  weir_container_set_initial(weir_graph_container(g, name), b);
}

static WeirGraph *scalar_constants_model(void) {
  WeirGraph *g = weir_graph_new("scalars");
  WeirState *s = weir_graph_add_state(g, "main");
  g_assert(
      weir_graph_add_array(g, "input", WEIR_DTYPE_F64, "4, 3", FALSE, NULL));
  g_assert(weir_graph_add_array(g, "w", WEIR_DTYPE_F64, "3", TRUE, NULL));
  g_assert(weir_graph_add_array(g, "two", WEIR_DTYPE_F64, "", TRUE, NULL));
  g_assert(weir_graph_add_array(g, "scale", WEIR_DTYPE_F64, "", TRUE, NULL));
  g_assert(weir_graph_add_array(g, "d", WEIR_DTYPE_F64, "4, 3", TRUE, NULL));
  g_assert(weir_graph_add_array(g, "sq", WEIR_DTYPE_F64, "4, 3", TRUE, NULL));
  g_assert(
      weir_graph_add_array(g, "output", WEIR_DTYPE_F64, "4, 3", FALSE, NULL));
  const double w[] = {0.3, -0.2, 0.1}, two = 2, scale = 2.8284271247461903;
  set_constant(g, "w", w, 3);
  set_constant(g, "two", &two, 1);
  set_constant(g, "scale", &scale, 1);
  scalar_chain_node(g, s, "Sub", "input", "w", "d");
  scalar_chain_node(g, s, "Pow", "d", "two", "sq");
  scalar_chain_node(g, s, "Div", "sq", "scale", "output");
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

static void test_scalar_constants_not_trained(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = scalar_constants_model();
  g_auto(GStrv) params = weir_train_parameters(fwd);
  assert_int_equal(g_strv_length(params), 1);
  assert_string_equal(params[0], "w");
  g_autoptr(WeirGraph) t1 = train_program(fwd, 1.0);
  g_autoptr(WeirGraph) t0 = train_program(fwd, 0.0);
  g_autoptr(GHashTable) stepped = case_args(t1, fwd);
  /* inputs around 0, so that d = x - w has both signs */
  const WeirTensor *x = arg(stepped, "input");
  gboolean neg = FALSE;
  for (gint64 i = 0; i < x->count; i++)
    neg = neg || weir_tensor_get(x, i) - 0.3 < 0;
  assert_true(neg);
  interpret(t1, stepped);
  assert_int_equal(weir_tensor_get(arg(stepped, "skipped"), 0), 0);
  const WeirTensor *after = arg(stepped, "w");
  for (gint64 i = 0; i < 3; i++) {
    const double h = 1e-6;
    double l[2];
    for (int sgn = 0; sgn < 2; sgn++) {
      g_autoptr(GHashTable) a = case_args(t0, fwd);
      WeirTensor *p = arg(a, "w");
      weir_tensor_set(p, i, weir_tensor_get(p, i) + (sgn ? -h : h));
      interpret(t0, a);
      l[sgn] = weir_tensor_get(arg(a, "losses"), 0);
    }
    g_autoptr(GHashTable) base = case_args(t0, fwd);
    double num = (l[0] - l[1]) / (2 * h);
    double got = weir_tensor_get(arg(base, "w"), i) - weir_tensor_get(after, i);
    if (fabs(got) < 1e-6 || fabs(num - got) > 1e-7 + 1e-5 * fabs(num))
      fail_msg("d/dw[%" G_GINT64_FORMAT "]: training step %.10g, finite "
               "differences %.10g",
               i, got, num);
  }

  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  o.optimizer = WEIR_OPTIMIZER_ADAM;
  o.lr = 0.01;
  o.steps = 1;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) ta = weir_train_graph(fwd, &o, &err);
  if (!ta || !weir_expand_all(ta, NULL, NULL, &err))
    fail_msg("Adam: %s", err->message);
  g_autoptr(GHashTable) adam = case_args(ta, fwd);
  interpret(ta, adam);
  assert_int_equal(weir_tensor_get(arg(adam, "skipped"), 0), 0);
  g_autoptr(GHashTable) base = case_args(ta, fwd);
  for (gint64 i = 0; i < 3; i++) {
    double moved =
        weir_tensor_get(arg(base, "w"), i) - weir_tensor_get(arg(adam, "w"), i);
    /* Adam's first step moves each weight by about lr */
    assert_true(fabs(fabs(moved) - 0.01) < 1e-4);
  }
}

/* A Pointwise input of higher rank than the output (the Adam update of a
 * rank-0 parameter reading the [1] step counter) is a clear expansion
 * error naming the node and the input, not a failed assertion. */
static void test_pointwise_rank_error(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("rank");
  WeirState *s = weir_graph_add_state(g, "main");
  g_assert(weir_graph_add_array(g, "p", WEIR_DTYPE_F64, "", FALSE, NULL));
  g_assert(weir_graph_add_array(g, "step", WEIR_DTYPE_I64, "1", FALSE, NULL));
  const char *ins[] = {"in0", "in1", NULL}, *outs[] = {"out0", NULL};
  WeirNode *n = weir_state_add_library(g, s, "update", "Pointwise", ins, outs);
  weir_node_set_attr_string(n, "code", "y = a + b");
  WeirNode *a = weir_state_add_access(g, s, "p");
  WeirNode *b = weir_state_add_access(g, s, "step");
  WeirNode *y = weir_state_add_access(g, s, "p");
  g_assert(
      weir_state_add_memlet(g, s, a->id, NULL, n->id, "in0", "p", "", NULL));
  g_assert(weir_state_add_memlet(g, s, b->id, NULL, n->id, "in1", "step", "0:1",
                                 NULL));
  g_assert(
      weir_state_add_memlet(g, s, n->id, "out0", y->id, NULL, "p", "", NULL));
  g_autoptr(GError) err = NULL;
  assert_false(weir_expand_all(g, NULL, NULL, &err));
  assert_non_null(err);
  if (!strstr(err->message, "node 'update' (Pointwise): input 1 ('step') has "
                            "rank 1, more than the output 'p' (rank 0)"))
    fail_msg("unexpected error: %s", err->message);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gradient_checks),
      cmocka_unit_test(test_mlp_sgd_step),
      cmocka_unit_test(test_k_steps_sgd),
      cmocka_unit_test(test_k_steps_adam),
      cmocka_unit_test(test_skip_nan_momentum),
      cmocka_unit_test(test_skip_nan_adam),
      cmocka_unit_test(test_no_rule_error),
      cmocka_unit_test(test_eval_graph),
      cmocka_unit_test(test_training_mode_gradients),
      cmocka_unit_test(test_transformer_gradients),
      cmocka_unit_test(test_cnn_gradients),
      cmocka_unit_test(test_batchnorm_running_stats),
      cmocka_unit_test(test_dropout_mask),
      cmocka_unit_test(test_scalar_constants_not_trained),
      cmocka_unit_test(test_pointwise_rank_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
