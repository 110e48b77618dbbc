/* grad.c — the built-in backward rules (see ir/lower/weir-autodiff.h).
 *
 * Each rule turns the gradient dY of a node's outputs into gradients of its
 * inputs with library nodes: Gemm / MatMul for products, Pointwise for
 * elementwise derivatives (tasklet code over broadcast operands), ReduceSum
 * and SumTo for reductions and broadcasting, Reshape / Transpose for data
 * movement.  Derivations are written next to each rule.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-autodiff.h"
#include "weir-ops.h"

void weir_grad_register_builtin(void);
void weir_grad_register_losses(void);
gboolean weir_grad_pointwise_rule(WeirGradContext *ctx, GError **error);

static double attr_float(const WeirNode *n, const char *name, double def) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (a && a->type == WEIR_ATTR_FLOAT)
    return a->f;
  return a && a->type == WEIR_ATTR_INT ? (double)a->i : def;
}

static const WeirContainer *cont(WeirGradContext *ctx, const char *name) {
  return weir_graph_container(weir_grad_graph(ctx), name);
}

static guint rank_of(WeirGradContext *ctx, const char *name) {
  return cont(ctx, name)->shape->len;
}

/* dY of output 0; FALSE (no error) when it does not exist. */
static const char *dout0(WeirGradContext *ctx) {
  return weir_grad_dout(ctx, 0, NULL);
}

/* ------------------------------------------------------- unary elementwise */

/* dX = code(dY = a, X = b, Y = c), reading the first n_ins of them; with
 * from_y, code(dY = a, Y = b): the rule never reads X, which the backward
 * then does not keep for it. */
static gboolean unary(WeirGradContext *ctx, const char *code, guint n_ins,
                      gboolean from_y) {
  const char *dy = dout0(ctx);
  const char *x = weir_grad_input(ctx, 0);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const char *y = weir_grad_output(ctx, 0);
  const char *ins[] = {dy, from_y ? y : x, y};
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  weir_grad_add(ctx, 0, weir_grad_pointwise(ctx, base, x, code, ins, n_ins));
  return TRUE;
}

/* Unary operators whose derivative is a fixed formula of dY (a), X (b) and
 * Y (c): dX = code, reading the first n_ins of a, b, c; with from_y, of dY
 * (a) and Y (b).
 *
 * Relu's rule reads Y (from_y): Y > 0 exactly where X > 0 (NaN and -0
 * included: Relu keeps a NaN, and neither is > 0), and the backward keeps Y
 * anyway when a convolution's filter gradient reads it; a batch norm's or
 * a residual sum's output is then read by the ReLU alone, map fusion joins
 * the two and the pre-activation is never stored (docs/training.md, "The
 * ReLU's mask").  Its code is the one batchnorm-grad-relu-fusion folds
 * into BatchNormGrad. */
static const struct {
  const char *op;
  const char *code;
  guint n_ins;
  gboolean from_y;
} unary_rules[] = {
    {"Relu", "y = b > 0 ? a : 0", 2, TRUE},
    {"Sigmoid", "y = a * c * (1 - c)", 3}, /* y (1-y) */
    {"Tanh", "y = a * (1 - c * c)", 3},    /* 1 - y^2 */
    {"Erf", "y = a * 1.1283791670955126 * exp(-(b * b))",
     2}, /* 2/sqrt(pi) e^-x^2 */
    {"Exp", "y = a * c", 3},
    {"Log", "y = a / b", 2},
    {"Sqrt", "y = a * 0.5 / c", 3},
    {"Neg", "y = -a", 1},
    {"Sin", "y = a * cos(b)", 2},
    {"Cos", "y = -a * sin(b)", 2},
    {"Tan", "y = a * (1 + c * c)", 3},       /* 1 + tan^2 */
    {"Asin", "y = a / sqrt(1 - b * b)", 2},  /* 1 / sqrt(1 - x^2) */
    {"Acos", "y = -a / sqrt(1 - b * b)", 2}, /* -1 / sqrt(1 - x^2) */
    {"Atan", "y = a / (1 + b * b)", 2},      /* 1 / (1 + x^2) */
    {"Sinh", "y = a * cosh(b)", 2},
    {"Cosh", "y = a * sinh(b)", 2},
    {"Asinh", "y = a / sqrt(b * b + 1)", 2}, /* 1 / sqrt(x^2 + 1) */
    {"Acosh", "y = a / sqrt(b * b - 1)", 2}, /* 1 / sqrt(x^2 - 1) */
    {"Atanh", "y = a / (1 - b * b)", 2},
    /* Softsign x / (1 + |x|): 1 / (1 + |x|)^2 */
    {"Softsign", "y = a / ((1 + abs(b)) * (1 + abs(b)))",
     2}, /* 1 / (1 - x^2) */
};

static gboolean grad_unary_formula(WeirGradContext *ctx, GError **error) {
  const WeirNode *n = weir_grad_node(ctx);
  for (guint i = 0; i < G_N_ELEMENTS(unary_rules); i++)
    if (g_strcmp0(n->op, unary_rules[i].op) == 0)
      return unary(ctx, unary_rules[i].code, unary_rules[i].n_ins,
                   unary_rules[i].from_y);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "node %u ('%s'): no derivative formula for operator '%s'", n->id,
              n->label ? n->label : "", n->op ? n->op : "");
  return FALSE;
}

static gboolean grad_leaky_relu(WeirGradContext *ctx, GError **error) {
  (void)error;
  double alpha = attr_float(weir_grad_node(ctx), "alpha", 0.01);
  g_autofree char *code = g_strdup_printf("y = b < 0 ? %.17g * a : a", alpha);
  return unary(ctx, code, 2, FALSE);
}

/* ThresholdedRelu: dY where x > alpha. */
static gboolean grad_thresholded_relu(WeirGradContext *ctx, GError **error) {
  (void)error;
  double alpha = attr_float(weir_grad_node(ctx), "alpha", 1.0);
  g_autofree char *code = g_strdup_printf("y = b > %.17g ? a : 0", alpha);
  return unary(ctx, code, 2, FALSE);
}

/* Selu: gamma for x > 0, gamma alpha exp(x) below. */
static gboolean grad_selu(WeirGradContext *ctx, GError **error) {
  (void)error;
  const WeirNode *n = weir_grad_node(ctx);
  double alpha = attr_float(n, "alpha", 1.67326319217681884765625);
  double gamma = attr_float(n, "gamma", 1.05070102214813232421875);
  g_autofree char *code = g_strdup_printf(
      "y = b > 0 ? %.17g * a : %.17g * a * exp(b)", gamma, gamma * alpha);
  return unary(ctx, code, 2, FALSE);
}

/* Celu: 1 for x > 0, exp(x / alpha) below. */
static gboolean grad_celu(WeirGradContext *ctx, GError **error) {
  (void)error;
  double alpha = attr_float(weir_grad_node(ctx), "alpha", 1.0);
  g_autofree char *code =
      g_strdup_printf("y = b > 0 ? a : a * exp(b / %.17g)", alpha);
  return unary(ctx, code, 2, FALSE);
}

/* Identity, inference-mode Dropout: dX = dY. */
static gboolean grad_identity(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = dout0(ctx);
  if (dy && weir_grad_wants(ctx, 0))
    weir_grad_add(ctx, 0, dy);
  return TRUE;
}

/* ------------------------------------------------------ binary elementwise */

/* Contribution code(dY = a, A = b, B = c) to input k, reduced over the axes
 * along which input k was broadcast. */
static void binary_part(WeirGradContext *ctx, guint k, const char *code) {
  if (!weir_grad_wants(ctx, k))
    return;
  const char *dy = dout0(ctx);
  const char *x = weir_grad_input(ctx, k);
  const char *ins[] = {dy, weir_grad_input(ctx, 0), weir_grad_input(ctx, 1)};
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *full =
      code ? weir_grad_pointwise(ctx, base, dy, code, ins, 3) : dy;
  weir_grad_add(ctx, k, weir_grad_sum_to(ctx, full, x));
}

/* Binary operators: the contribution to each input as a formula of dY (a),
 * A (b) and B (c); NULL passes dY on unchanged. */
static const struct {
  const char *op;
  const char *code[2];
} binary_rules[] = {
    {"Add", {NULL, NULL}},
    {"Sub", {NULL, "y = -a"}},
    {"Mul", {"y = a * c", "y = a * b"}},
    /* d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 */
    {"Div", {"y = a / c", "y = -a * b / (c * c)"}},
    /* d(a^b)/da = b a^(b-1), d(a^b)/db = ln(a) a^b */
    {"Pow", {"y = a * c * pow(b, c - 1)", "y = a * log(b) * pow(b, c)"}},
    /* Mod on floats (fmod = 1): a - b trunc(a/b), so d/da = 1 and
     * d/db = -trunc(a/b) (trunc is zero almost everywhere in a). */
    {"Mod", {NULL, "y = b / c < 0 ? -a * ceil(b / c) : -a * floor(b / c)"}},
    /* PRelu x < 0 ? s x : x: d/dx = x < 0 ? s : 1, d/ds = x < 0 ? x : 0 */
    {"PRelu", {"y = b < 0 ? a * c : a", "y = b < 0 ? a * b : 0"}},
};

static gboolean grad_binary_formula(WeirGradContext *ctx, GError **error) {
  const WeirNode *n = weir_grad_node(ctx);
  for (guint i = 0; i < G_N_ELEMENTS(binary_rules); i++)
    if (g_strcmp0(n->op, binary_rules[i].op) == 0) {
      if (dout0(ctx)) {
        binary_part(ctx, 0, binary_rules[i].code[0]);
        binary_part(ctx, 1, binary_rules[i].code[1]);
      }
      return TRUE;
    }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "node %u ('%s'): no derivative formula for operator '%s'", n->id,
              n->label ? n->label : "", n->op ? n->op : "");
  return FALSE;
}

/* Sum: every input gets dY (reduced to its shape). */
static gboolean grad_sum(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = dout0(ctx);
  if (!dy)
    return TRUE;
  for (guint k = 0; weir_grad_input(ctx, k) || k < 2; k++) {
    if (!weir_grad_input(ctx, k))
      continue;
    if (weir_grad_wants(ctx, k))
      weir_grad_add(ctx, k, weir_grad_sum_to(ctx, dy, weir_grad_input(ctx, k)));
  }
  return TRUE;
}

/* ------------------------------------------------------------- products */

/* Y = alpha op(A) op(B) + beta C.
 *   dA = alpha dY op(B)^T        (transA = 0)
 *   dA = alpha op(B) dY^T        (transA = 1)
 *   dB = alpha op(A)^T dY        (transB = 0)
 *   dB = alpha dY^T op(A)        (transB = 1)
 *   dC = beta dY summed over the broadcast axes.
 * With op(M)^T = M^T when op is the identity and M when it transposes,
 * each is a single Gemm. */
static gboolean grad_gemm(WeirGradContext *ctx, GError **error) {
  (void)error;
  const WeirNode *n = weir_grad_node(ctx);
  const char *dy = dout0(ctx);
  if (!dy)
    return TRUE;
  double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
  gint64 ta = weir_node_attr_int(n, "transA", 0),
         tb = weir_node_attr_int(n, "transB", 0);
  const char *a = weir_grad_input(ctx, 0), *b = weir_grad_input(ctx, 1);
  if (weir_grad_wants(ctx, 0)) {
    g_autofree char *base = g_strdup_printf("%s_grad", a);
    const char *da = weir_grad_new_like(ctx, base, a, -1);
    WeirNode *m;
    if (!ta) {
      const char *ins[] = {dy, b};
      m = weir_grad_op(ctx, "Gemm", da, ins, 2, &da, 1);
      weir_node_set_attr_int(m, "transA", 0);
      weir_node_set_attr_int(m, "transB", tb ? 0 : 1);
    } else {
      const char *ins[] = {b, dy};
      m = weir_grad_op(ctx, "Gemm", da, ins, 2, &da, 1);
      weir_node_set_attr_int(m, "transA", tb);
      weir_node_set_attr_int(m, "transB", 1);
    }
    weir_node_set_attr_float(m, "alpha", alpha);
    weir_grad_add(ctx, 0, da);
  }
  if (weir_grad_wants(ctx, 1)) {
    g_autofree char *base = g_strdup_printf("%s_grad", b);
    const char *db = weir_grad_new_like(ctx, base, b, -1);
    WeirNode *m;
    if (!tb) {
      const char *ins[] = {a, dy};
      m = weir_grad_op(ctx, "Gemm", db, ins, 2, &db, 1);
      weir_node_set_attr_int(m, "transA", ta ? 0 : 1);
      weir_node_set_attr_int(m, "transB", 0);
    } else {
      const char *ins[] = {dy, a};
      m = weir_grad_op(ctx, "Gemm", db, ins, 2, &db, 1);
      weir_node_set_attr_int(m, "transA", 1);
      weir_node_set_attr_int(m, "transB", ta);
    }
    weir_node_set_attr_float(m, "alpha", alpha);
    weir_grad_add(ctx, 1, db);
  }
  const char *c = weir_grad_input(ctx, 2);
  if (c && weir_grad_wants(ctx, 2)) {
    const char *scaled = dy;
    if (beta != 1.0) {
      g_autofree char *code = g_strdup_printf("y = a * %.17g", beta);
      const char *ins[] = {dy};
      scaled = weir_grad_pointwise(ctx, "gemm_dc", dy, code, ins, 1);
    }
    weir_grad_add(ctx, 2, weir_grad_sum_to(ctx, scaled, c));
  }
  return TRUE;
}

/* A transient holding x with its last two axes swapped. */
static const char *swap_last(WeirGradContext *ctx, const char *x) {
  const WeirContainer *c = cont(ctx, x);
  guint r = c->shape->len;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, r);
  g_autofree gint64 *perm = g_new0(gint64, r);
  for (guint d = 0; d < r; d++) {
    perm[d] = d;
    shape[d] = g_ptr_array_index(c->shape, d);
  }
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  shape[r - 2] = g_ptr_array_index(c->shape, r - 1);
  shape[r - 1] = g_ptr_array_index(c->shape, r - 2);
  g_autofree char *base = g_strdup_printf("%s_t", x);
  const char *t = weir_grad_new(ctx, base, c->dtype, r, shape);
  WeirNode *n = weir_grad_op(ctx, "Transpose", t, &x, 1, &t, 1);
  weir_node_set_attr_ints(n, "perm", perm, r);
  return t;
}

/* A transient of the broadcast batch shape [..., rows, cols]. */
static const char *product_out(WeirGradContext *ctx, const char *base,
                               const char *like_batch, WeirExpr *rows,
                               WeirExpr *cols) {
  const WeirContainer *c = cont(ctx, like_batch);
  guint r = c->shape->len;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, r);
  for (guint d = 0; d + 2 < r; d++)
    shape[d] = g_ptr_array_index(c->shape, d);
  shape[r - 2] = rows;
  shape[r - 1] = cols;
  return weir_grad_new(ctx, base, c->dtype, r, shape);
}

/* x viewed as a matrix [rows, cols] (a Reshape to [-1, cols]), cols the
 * constant last axis; NULL when it is symbolic. */
static const char *as_matrix(WeirGradContext *ctx, const char *x) {
  const WeirContainer *c = cont(ctx, x);
  guint r = c->shape->len;
  gint64 cols;
  if (!weir_expr_is_const(g_ptr_array_index(c->shape, r - 1), &cols))
    return NULL;
  g_autoptr(WeirExpr) rows = weir_expr_const(1);
  for (guint d = 0; d + 1 < r; d++) {
    WeirExpr *p = weir_expr_mul(rows, g_ptr_array_index(c->shape, d));
    weir_expr_unref(rows);
    rows = p;
  }
  WeirExpr *shape[2] = {rows, g_ptr_array_index(c->shape, r - 1)};
  g_autofree char *base = g_strdup_printf("%s_2d", x);
  const char *m = weir_grad_new(ctx, base, c->dtype, 2, shape);
  WeirNode *n = weir_grad_op(ctx, "Reshape", m, &x, 1, &m, 1);
  gint64 attr[2] = {-1, cols};
  weir_node_set_attr_ints(n, "shape", attr, 2);
  return m;
}

/* The Reshape attribute that gives container like's shape: its constant
 * dimensions, -1 for at most one symbolic one; FALSE when there are more. */
static gboolean shape_attr(WeirGradContext *ctx, const char *like,
                           gint64 *out) {
  const WeirContainer *c = cont(ctx, like);
  guint symbolic = 0;
  for (guint d = 0; d < c->shape->len; d++)
    if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &out[d])) {
      out[d] = -1;
      symbolic++;
    }
  return symbolic <= 1;
}

/* Y = A B with A batched ([..., m, k], rank >= 3) and B a matrix [k, n]
 * shared by the batch (a linear layer over a sequence): the batch is
 * folded into the rows, so dB = A2^T dY2 is one Gemm over all the rows
 * (instead of one product per batch element into a [..., k, n] transient
 * summed afterwards) and dA2 = dY2 B^T one Gemm, reshaped back; A2, dY2
 * the [rows, k] and [rows, n] views (Reshape).  FALSE (nothing added)
 * when the shapes do not allow it (symbolic k or n, more than one
 * symbolic dimension of A). */
static gboolean grad_matmul_folded(WeirGradContext *ctx, const char *a,
                                   const char *b, const char *dy) {
  const WeirContainer *ca = cont(ctx, a), *cb = cont(ctx, b);
  const WeirContainer *cy = cont(ctx, dy);
  guint ra = ca->shape->len;
  if (cb->shape->len != 2 || ra < 3 || cy->shape->len != ra)
    return FALSE;
  g_autofree gint64 *ashape = g_new0(gint64, ra);
  gint64 n;
  if (!shape_attr(ctx, a, ashape) ||
      !weir_expr_is_const(g_ptr_array_index(ca->shape, ra - 1), &n) ||
      !weir_expr_is_const(g_ptr_array_index(cy->shape, ra - 1), &n))
    return FALSE;
  const char *a2 = weir_grad_wants(ctx, 1) ? as_matrix(ctx, a) : NULL;
  const char *dy2 = as_matrix(ctx, dy);
  if (weir_grad_wants(ctx, 1)) {
    g_autofree char *base = g_strdup_printf("%s_grad", b);
    const char *db = weir_grad_new_like(ctx, base, b, -1);
    const char *ins[] = {a2, dy2};
    WeirNode *m = weir_grad_op(ctx, "Gemm", db, ins, 2, &db, 1);
    weir_node_set_attr_int(m, "transA", 1);
    weir_grad_add(ctx, 1, db);
  }
  if (weir_grad_wants(ctx, 0)) {
    const WeirContainer *c2 = cont(ctx, dy2);
    WeirExpr *shape[2] = {g_ptr_array_index(c2->shape, 0),
                          g_ptr_array_index(ca->shape, ra - 1)};
    g_autofree char *base = g_strdup_printf("%s_grad_2d", a);
    const char *da2 = weir_grad_new(ctx, base, ca->dtype, 2, shape);
    const char *ins[] = {dy2, b};
    WeirNode *m = weir_grad_op(ctx, "Gemm", da2, ins, 2, &da2, 1);
    weir_node_set_attr_int(m, "transB", 1);
    g_autofree char *base2 = g_strdup_printf("%s_grad", a);
    const char *da = weir_grad_new_like(ctx, base2, a, -1);
    WeirNode *r = weir_grad_op(ctx, "Reshape", da, &da2, 1, &da, 1);
    weir_node_set_attr_ints(r, "shape", ashape, ra);
    weir_grad_add(ctx, 0, da);
  }
  return TRUE;
}

/* Y = A B (batched, broadcasting over leading axes; ranks >= 2):
 * dA = dY B^T, dB = A^T dY, each summed over broadcast batch axes (a
 * matrix B shared by a batched A: grad_matmul_folded). */
static gboolean grad_matmul(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy)
    return TRUE;
  const char *a = weir_grad_input(ctx, 0), *b = weir_grad_input(ctx, 1);
  if (rank_of(ctx, a) < 2 || rank_of(ctx, b) < 2)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward of MatMul with a vector operand");
  if (grad_matmul_folded(ctx, a, b, dy))
    return TRUE;
  const WeirContainer *ca = cont(ctx, a), *cb = cont(ctx, b);
  const WeirContainer *cy = cont(ctx, dy);
  guint ra = ca->shape->len, rb = cb->shape->len, ry = cy->shape->len;
  if (weir_grad_wants(ctx, 0)) {
    const char *bt = swap_last(ctx, b);
    g_autofree char *base = g_strdup_printf("%s_grad", a);
    const char *full = product_out(ctx, base, dy, ca->shape->pdata[ra - 2],
                                   ca->shape->pdata[ra - 1]);
    const char *ins[] = {dy, bt};
    weir_grad_op(ctx, "MatMul", full, ins, 2, &full, 1);
    weir_grad_add(ctx, 0, weir_grad_sum_to(ctx, full, a));
  }
  if (weir_grad_wants(ctx, 1)) {
    const char *at = swap_last(ctx, a);
    g_autofree char *base = g_strdup_printf("%s_grad", b);
    const char *full = product_out(ctx, base, dy, cb->shape->pdata[rb - 2],
                                   cb->shape->pdata[rb - 1]);
    const char *ins[] = {at, dy};
    weir_grad_op(ctx, "MatMul", full, ins, 2, &full, 1);
    weir_grad_add(ctx, 1, weir_grad_sum_to(ctx, full, b));
  }
  (void)ry;
  return TRUE;
}

/* ---------------------------------------------------------------- softmax */

static gboolean softmax_axis(WeirGradContext *ctx, gint64 *axis,
                             GError **error) {
  const WeirNode *n = weir_grad_node(ctx);
  if (weir_node_attr_int(n, "legacy_2d", 0))
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward of the opset < 13 (2-D) form");
  gint64 r = rank_of(ctx, weir_grad_input(ctx, 0));
  *axis = weir_node_attr_int(n, "axis", -1);
  if (*axis < 0)
    *axis += r;
  return TRUE;
}

/* ReduceSum of x over `axis` keeping it (size 1). */
static const char *sum_axis(WeirGradContext *ctx, const char *x, gint64 axis) {
  const WeirContainer *c = cont(ctx, x);
  guint r = c->shape->len;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, r);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  for (guint d = 0; d < r; d++)
    shape[d] = d == axis ? one : g_ptr_array_index(c->shape, d);
  g_autofree char *base = g_strdup_printf("%s_sum", x);
  const char *s = weir_grad_new(ctx, base, c->dtype, r, shape);
  WeirNode *n = weir_grad_op(ctx, "ReduceSum", s, &x, 1, &s, 1);
  weir_node_set_attr_ints(n, "axes", &axis, 1);
  weir_node_set_attr_int(n, "keepdims", 1);
  return s;
}

/* dX = Y (dY - sum(dY Y)) */
static gboolean grad_softmax(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  gint64 axis;
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  if (!softmax_axis(ctx, &axis, error))
    return FALSE;
  const char *x = weir_grad_input(ctx, 0), *y = weir_grad_output(ctx, 0);
  const char *ins[] = {dy, y};
  const char *prod =
      weir_grad_pointwise(ctx, "softmax_dyy", y, "y = a * b", ins, 2);
  const char *s = sum_axis(ctx, prod, axis);
  const char *ins2[] = {dy, y, s};
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  weir_grad_add(ctx, 0,
                weir_grad_pointwise(ctx, base, x, "y = b * (a - c)", ins2, 3));
  return TRUE;
}

/* dX = dY - exp(Y) sum(dY) */
static gboolean grad_log_softmax(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  gint64 axis;
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  if (!softmax_axis(ctx, &axis, error))
    return FALSE;
  const char *x = weir_grad_input(ctx, 0), *y = weir_grad_output(ctx, 0);
  const char *s = sum_axis(ctx, dy, axis);
  const char *ins[] = {dy, y, s};
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  weir_grad_add(
      ctx, 0, weir_grad_pointwise(ctx, base, x, "y = a - exp(b) * c", ins, 3));
  return TRUE;
}

/* ------------------------------------------------------------- data movement
 */

/* Reshape / Flatten / Squeeze / Unsqueeze: dX = reshape(dY, shape of X).
 * Constant dimensions are given as such; a symbolic one is copied from
 * the same position of dY (0) when equal there, else inferred (-1). */
static gboolean grad_reshape(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const char *x = weir_grad_input(ctx, 0);
  const WeirContainer *cx = cont(ctx, x), *cy = cont(ctx, dy);
  guint r = cx->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, r ? r : 1);
  guint inferred = 0;
  for (guint d = 0; d < r; d++) {
    WeirExpr *e = g_ptr_array_index(cx->shape, d);
    gint64 v;
    if (weir_expr_is_const(e, &v))
      shape[d] = v;
    else if (d < cy->shape->len &&
             weir_expr_equal(e, g_ptr_array_index(cy->shape, d)))
      shape[d] = 0;
    else {
      shape[d] = -1;
      inferred++;
    }
  }
  if (inferred > 1)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward reshape to '%s' has several symbolic "
                          "dimensions",
                          x);
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  WeirNode *n = weir_grad_op(ctx, "Reshape", dx, &dy, 1, &dx, 1);
  weir_node_set_attr_ints(n, "shape", shape, r);
  weir_grad_add(ctx, 0, dx);
  return TRUE;
}

/* dX = transpose(dY, inverse perm). */
static gboolean grad_transpose(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const char *x = weir_grad_input(ctx, 0);
  guint r = rank_of(ctx, x);
  g_autofree gint64 *inv = g_new0(gint64, r);
  const WeirAttr *p = weir_node_attr(weir_grad_node(ctx), "perm");
  for (guint d = 0; d < r; d++) {
    gint64 pd = p && p->type == WEIR_ATTR_INTS && p->ints->len == r
                    ? g_array_index(p->ints, gint64, d)
                    : (gint64)(r - 1 - d);
    inv[pd] = d;
  }
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  WeirNode *n = weir_grad_op(ctx, "Transpose", dx, &dy, 1, &dx, 1);
  weir_node_set_attr_ints(n, "perm", inv, r);
  weir_grad_add(ctx, 0, dx);
  return TRUE;
}

/* ------------------------------------------------------ windows (2-D) */

static const GArray *ints_attr(const WeirNode *n, const char *name) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_INTS ? a->ints : NULL;
}

static gint64 dim_const(WeirGradContext *ctx, const char *name, guint d) {
  gint64 v = -1;
  weir_expr_is_const(g_ptr_array_index(cont(ctx, name)->shape, d), &v);
  return v;
}

/* Kernel, strides, begin pads and dilations of a Conv / pooling node with
 * input x and output y (auto_pad resolved), set on grad node g. */
static gboolean set_window(WeirGradContext *ctx, WeirNode *g, const char *x,
                           const char *y, const char *weights, GError **error) {
  const WeirNode *n = weir_grad_node(ctx);
  if (rank_of(ctx, x) != 4)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward with %u spatial dimensions (2 are "
                          "supported)",
                          rank_of(ctx, x) - 2);
  gint64 k[2], st[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
  const GArray *ka = ints_attr(n, "kernel_shape");
  for (guint i = 0; i < 2; i++)
    k[i] = ka && ka->len == 2 ? g_array_index(ka, gint64, i)
                              : (weights ? dim_const(ctx, weights, 2 + i) : -1);
  const GArray *sa = ints_attr(n, "strides"), *da = ints_attr(n, "dilations"),
               *pa = ints_attr(n, "pads");
  for (guint i = 0; i < 2; i++) {
    if (sa && sa->len == 2)
      st[i] = g_array_index(sa, gint64, i);
    if (da && da->len == 2)
      d[i] = g_array_index(da, gint64, i);
  }
  if (pa && pa->len == 4)
    for (guint i = 0; i < 4; i++)
      p[i] = g_array_index(pa, gint64, i);
  const WeirAttr *ap = weir_node_attr(n, "auto_pad");
  const char *auto_pad = ap && ap->type == WEIR_ATTR_STRING ? ap->s : "NOTSET";
  if (g_str_has_prefix(auto_pad, "SAME") || strcmp(auto_pad, "VALID") == 0) {
    for (guint i = 0; i < 2; i++) {
      gint64 in = dim_const(ctx, x, 2 + i), out = dim_const(ctx, y, 2 + i);
      gint64 total = (out - 1) * st[i] + (k[i] - 1) * d[i] + 1 - in;
      if (total < 0 || strcmp(auto_pad, "VALID") == 0)
        total = 0;
      p[i] =
          strcmp(auto_pad, "SAME_LOWER") == 0 ? total - total / 2 : total / 2;
      p[i + 2] = total - p[i];
    }
  }
  if (k[0] < 1 || k[1] < 1)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "kernel shape is not known");
  weir_node_set_attr_ints(g, "kernel_shape", k, 2);
  weir_node_set_attr_ints(g, "strides", st, 2);
  weir_node_set_attr_ints(g, "pads", p, 4);
  weir_node_set_attr_ints(g, "dilations", d, 2);
  weir_node_set_attr_int(g, "group", weir_node_attr_int(n, "group", 1));
  weir_node_set_attr_int(g, "count_include_pad",
                         weir_node_attr_int(n, "count_include_pad", 0));
  return TRUE;
}

/* Conv: dX = ConvGradInput(dY, W), dW = ConvGradFilter(dY, X),
 * dB = sum of dY over batch and space. */
static gboolean grad_conv(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy)
    return TRUE;
  const char *x = weir_grad_input(ctx, 0), *w = weir_grad_input(ctx, 1),
             *y = weir_grad_output(ctx, 0);
  for (guint k = 0; k < 2; k++) {
    if (!weir_grad_wants(ctx, k))
      continue;
    const char *target = k == 0 ? x : w;
    g_autofree char *base = g_strdup_printf("%s_grad", target);
    const char *gr = weir_grad_new_like(ctx, base, target, -1);
    const char *ins[] = {dy, k == 0 ? w : x, target};
    WeirNode *n = weir_grad_op(ctx, k == 0 ? "ConvGradInput" : "ConvGradFilter",
                               gr, ins, 3, &gr, 1);
    if (!set_window(ctx, n, x, y, w, error))
      return FALSE;
    weir_grad_add(ctx, k, gr);
  }
  const char *b = weir_grad_input(ctx, 2);
  if (b && weir_grad_wants(ctx, 2)) {
    g_autofree char *base = g_strdup_printf("%s_grad", b);
    const char *db = weir_grad_new_like(ctx, base, b, -1);
    const gint64 axes[] = {0, 2, 3};
    WeirNode *n = weir_grad_op(ctx, "ReduceSum", db, &dy, 1, &db, 1);
    weir_node_set_attr_ints(n, "axes", axes, 3);
    weir_node_set_attr_int(n, "keepdims", 0);
    weir_grad_add(ctx, 2, db);
  }
  return TRUE;
}

static gboolean grad_pool(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const WeirNode *fn = weir_grad_node(ctx);
  if (weir_node_attr_int(fn, "storage_order", 0) != 0)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward with storage_order = 1");
  gboolean is_max = strcmp(fn->op, "MaxPool") == 0;
  const char *x = weir_grad_input(ctx, 0), *y = weir_grad_output(ctx, 0);
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  const char *ins[] = {dy, x, y};
  WeirNode *n = weir_grad_op(ctx, is_max ? "MaxPoolGrad" : "AveragePoolGrad",
                             dx, ins, is_max ? 3 : 2, &dx, 1);
  if (!set_window(ctx, n, x, y, NULL, error))
    return FALSE;
  weir_grad_add(ctx, 0, dx);
  return TRUE;
}

/* Tasklet text of the product of dimensions of `name` selected by mask
 * (all when NULL). (transfer full) */
static char *count_text(WeirGradContext *ctx, const char *name,
                        const gboolean *mask) {
  const WeirContainer *c = cont(ctx, name);
  g_autoptr(WeirExpr) v = weir_expr_const(1);
  for (guint d = 0; d < c->shape->len; d++)
    if (!mask || mask[d]) {
      WeirExpr *nv = weir_expr_mul(v, g_ptr_array_index(c->shape, d));
      weir_expr_unref(v);
      v = nv;
    }
  g_autofree char *t = weir_expr_to_string(v);
  return g_strdup_printf("(%s)", t);
}

/* GlobalAveragePool: dX = dY / (H W ...) broadcast over space. */
static gboolean grad_global_avg(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const char *x = weir_grad_input(ctx, 0);
  guint r = rank_of(ctx, x);
  g_autofree gboolean *mask = g_new0(gboolean, r);
  for (guint d = 2; d < r; d++)
    mask[d] = TRUE;
  g_autofree char *cnt = count_text(ctx, x, mask);
  g_autofree char *code = g_strdup_printf("y = a / %s", cnt);
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *ins[] = {dy, x};
  weir_grad_add(ctx, 0, weir_grad_pointwise(ctx, base, x, code, ins, 2));
  return TRUE;
}

/* ReduceSum / ReduceMean: dX = dY (with the reduced axes restored) broadcast
 * to X's shape, divided by the count for the mean. */
static gboolean grad_reduce(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const WeirNode *n = weir_grad_node(ctx);
  const char *x = weir_grad_input(ctx, 0);
  guint r = rank_of(ctx, x);
  g_autofree gboolean *mask = g_new0(gboolean, r ? r : 1);
  const GArray *axes = ints_attr(n, "axes");
  if (!axes || axes->len == 0) {
    if (weir_node_attr_int(n, "noop_with_empty_axes", 0))
      return grad_identity(ctx, error);
    for (guint d = 0; d < r; d++)
      mask[d] = TRUE;
  } else {
    for (guint i = 0; i < axes->len; i++) {
      gint64 a = g_array_index(axes, gint64, i);
      mask[a < 0 ? a + r : a] = TRUE;
    }
  }
  const char *src = dy;
  if (!weir_node_attr_int(n, "keepdims", 1) && rank_of(ctx, dy) != r) {
    g_autoptr(GArray) ax = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    g_autofree WeirExpr **shape = g_new0(WeirExpr *, r ? r : 1);
    const WeirContainer *cx = cont(ctx, x);
    for (guint d = 0; d < r; d++) {
      shape[d] = mask[d] ? one : g_ptr_array_index(cx->shape, d);
      if (mask[d]) {
        gint64 v = d;
        g_array_append_val(ax, v);
      }
    }
    const char *kept =
        weir_grad_new(ctx, "reduce_grad_kept", cx->dtype, r, shape);
    WeirNode *u = weir_grad_op(ctx, "Unsqueeze", kept, &dy, 1, &kept, 1);
    weir_node_set_attr_ints(u, "axes", (gint64 *)ax->data, ax->len);
    src = kept;
  }
  g_autofree char *cnt = count_text(ctx, x, mask);
  g_autofree char *code = strcmp(n->op, "ReduceMean") == 0
                              ? g_strdup_printf("y = a / %s", cnt)
                              : g_strdup("y = a");
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *ins[] = {src, x};
  weir_grad_add(ctx, 0, weir_grad_pointwise(ctx, base, x, code, ins, 2));
  return TRUE;
}

/* Concat: each input's gradient is its slice of dY. */
static gboolean grad_concat(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy)
    return TRUE;
  guint r = rank_of(ctx, dy);
  gint64 axis = weir_node_attr_int(weir_grad_node(ctx), "axis", 0);
  if (axis < 0)
    axis += r;
  gint64 off = 0;
  for (guint k = 0; weir_grad_input(ctx, k); k++) {
    const char *x = weir_grad_input(ctx, k);
    gint64 len = dim_const(ctx, x, axis);
    if (len < 0)
      return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                            "backward of a concatenation along a symbolic "
                            "dimension");
    if (weir_grad_wants(ctx, k)) {
      g_autofree char *base = g_strdup_printf("%s_grad", x);
      const char *dx = weir_grad_new_like(ctx, base, x, -1);
      WeirNode *n = weir_grad_op(ctx, "Slice", dx, &dy, 1, &dx, 1);
      gint64 st = off, en = off + len;
      weir_node_set_attr_ints(n, "starts", &st, 1);
      weir_node_set_attr_ints(n, "ends", &en, 1);
      weir_node_set_attr_ints(n, "axes", &axis, 1);
      weir_grad_add(ctx, k, dx);
    }
    off += len;
  }
  return TRUE;
}

/* Split: dX = Concat of the outputs' gradients (zeros for outputs that do
 * not reach the loss). */
static gboolean grad_split(WeirGradContext *ctx, GError **error) {
  if (!weir_grad_wants(ctx, 0))
    return TRUE;
  const char *x = weir_grad_input(ctx, 0);
  gint64 axis = weir_node_attr_int(weir_grad_node(ctx), "axis", 0);
  if (axis < 0)
    axis += rank_of(ctx, x);
  g_autoptr(GPtrArray) parts = g_ptr_array_new();
  for (guint k = 0; weir_grad_output(ctx, k); k++) {
    const char *d = weir_grad_dout(ctx, k, error);
    if (!d) {
      const char *y = weir_grad_output(ctx, k);
      d = weir_grad_pointwise(ctx, "zero_grad", y, "y = 0", &y, 1);
    }
    g_ptr_array_add(parts, (gpointer)d);
  }
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  WeirNode *n = weir_grad_op(
      ctx, "Concat", dx, (const char *const *)parts->pdata, parts->len, &dx, 1);
  weir_node_set_attr_int(n, "axis", axis);
  weir_grad_add(ctx, 0, dx);
  return TRUE;
}

/* Slice (steps 1): dX = dY padded with zeros back to X's shape. */
static gboolean grad_slice(WeirGradContext *ctx, GError **error) {
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const WeirNode *n = weir_grad_node(ctx);
  const char *x = weir_grad_input(ctx, 0);
  guint r = rank_of(ctx, x);
  const GArray *starts = ints_attr(n, "starts"), *ends = ints_attr(n, "ends"),
               *axes = ints_attr(n, "axes"), *steps = ints_attr(n, "steps");
  if (!starts || !ends)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward of a slice with computed bounds");
  g_autofree gint64 *pads = g_new0(gint64, 2 * r);
  for (guint i = 0; i < starts->len; i++) {
    gint64 a = axes ? g_array_index(axes, gint64, i) : (gint64)i;
    if (a < 0)
      a += r;
    gint64 step = steps ? g_array_index(steps, gint64, i) : 1;
    gint64 size = dim_const(ctx, x, a);
    if (step != 1 || size < 0)
      return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                            "backward of a slice with steps or along a "
                            "symbolic dimension");
    g_autoptr(WeirExpr) e = weir_expr_const(size);
    WeirExpr *st = NULL, *cnt = NULL;
    weir_op_slice_range(e, g_array_index(starts, gint64, i),
                        g_array_index(ends, gint64, i), 1, &st, &cnt);
    gint64 s0 = 0, c0 = 0;
    weir_expr_is_const(st, &s0);
    weir_expr_is_const(cnt, &c0);
    weir_expr_unref(st);
    weir_expr_unref(cnt);
    pads[a] = s0;
    pads[a + r] = size - s0 - c0;
  }
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  WeirNode *p = weir_grad_op(ctx, "Pad", dx, &dy, 1, &dx, 1);
  weir_node_set_attr_ints(p, "pads", pads, 2 * r);
  return (weir_grad_add(ctx, 0, dx), TRUE);
}

/* Gather: dData = GatherGrad(dY, indices) (scatter-add). */
static gboolean grad_gather(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = dout0(ctx);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  const char *x = weir_grad_input(ctx, 0);
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  const char *ins[] = {dy, weir_grad_input(ctx, 1), x};
  WeirNode *n = weir_grad_op(ctx, "GatherGrad", dx, ins, 3, &dx, 1);
  weir_node_set_attr_int(n, "axis",
                         weir_node_attr_int(weir_grad_node(ctx), "axis", 0));
  weir_grad_add(ctx, 0, dx);
  return TRUE;
}

/* BatchNormApply(X, scale, B, mean, std): one BatchNormGrad node gives dX
 * (including the paths through the batch mean and std, which carry no
 * gradient of their own), dscale and dB in two passes over dY and X. */
static gboolean grad_batchnorm_apply(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = dout0(ctx);
  if (!dy)
    return TRUE;
  const char *x = weir_grad_input(ctx, 0), *scale = weir_grad_input(ctx, 1),
             *bias = weir_grad_input(ctx, 2);
  g_autofree char *bx = g_strdup_printf("%s_grad", x);
  g_autofree char *bs = g_strdup_printf("%s_grad", scale);
  g_autofree char *bb = g_strdup_printf("%s_grad", bias);
  const char *outs[] = {weir_grad_new_like(ctx, bx, x, -1),
                        weir_grad_new_like(ctx, bs, scale, -1),
                        weir_grad_new_like(ctx, bb, bias, -1)};
  const char *ins[] = {dy, x, weir_grad_input(ctx, 3), weir_grad_input(ctx, 4),
                       scale};
  const WeirNode *n = weir_grad_node(ctx);
  g_autofree char *label =
      g_strdup_printf("%s_grad", n->label && *n->label ? n->label : n->op);
  weir_grad_op(ctx, "BatchNormGrad", label, ins, 5, outs, 3);
  for (guint k = 0; k < 3; k++)
    if (weir_grad_wants(ctx, k))
      weir_grad_add(ctx, k, outs[k]);
  return TRUE;
}

void weir_grad_register_builtin(void) {
  static const struct {
    const char *op;
    WeirGradRule rule;
  } table[] = {
      {"LeakyRelu", grad_leaky_relu},
      {"ThresholdedRelu", grad_thresholded_relu},
      {"Selu", grad_selu},
      {"Celu", grad_celu},
      {"Identity", grad_identity},
      {"Sum", grad_sum},
      {"Gemm", grad_gemm},
      {"MatMul", grad_matmul},
      {"Softmax", grad_softmax},
      {"LogSoftmax", grad_log_softmax},
      {"Reshape", grad_reshape},
      {"Flatten", grad_reshape},
      {"Squeeze", grad_reshape},
      {"Unsqueeze", grad_reshape},
      {"Transpose", grad_transpose},
      {"Conv", grad_conv},
      {"MaxPool", grad_pool},
      {"AveragePool", grad_pool},
      {"GlobalAveragePool", grad_global_avg},
      {"ReduceSum", grad_reduce},
      {"ReduceMean", grad_reduce},
      {"Concat", grad_concat},
      {"Split", grad_split},
      {"Slice", grad_slice},
      {"Dropout", grad_identity},
      {"Pointwise", weir_grad_pointwise_rule},
      {"Gather", grad_gather},
      {"BatchNormApply", grad_batchnorm_apply},
  };
  for (guint i = 0; i < G_N_ELEMENTS(table); i++)
    weir_grad_register(table[i].op, table[i].rule);
  for (guint i = 0; i < G_N_ELEMENTS(unary_rules); i++)
    weir_grad_register(unary_rules[i].op, grad_unary_formula);
  for (guint i = 0; i < G_N_ELEMENTS(binary_rules); i++)
    weir_grad_register(binary_rules[i].op, grad_binary_formula);
  weir_grad_register_losses();
}
