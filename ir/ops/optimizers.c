/* optimizers.c — the ONNX training operators Adam, Momentum and Adagrad
 * (domain ai.onnx.preview.training, version 1): schemas, inference and
 * FLOP counts.  Their pure expansions are in ir/lower/expand/optimizers.c.
 *
 * All three update k tensors at once.  Inputs: R (learning rate, a float
 * scalar), T (update count, an i64 scalar), then k tensors of each kind in
 * turn: X... (the tensors), G... (their gradients), and per operator
 *   Momentum: V... (momentum)               -> X_new..., V_new...
 *   Adagrad:  H... (accumulated G^2)        -> X_new..., H_new...
 *   Adam:     V... (average of G), H... (average of G^2)
 *                                           -> X_new..., V_new..., H_new...
 * so an operator with m kinds of input tensor (3 or 4) has 2 + m k inputs
 * and up to (m - 1) k outputs (trailing ones may be left out).  Every tensor of
 * a group has the dtype and shape of its X (f32 or f64); output j of each kind
 * has the shape of the input it replaces.  The formulas (ONNX's) are written
 * out in the expansion file.
 *
 * FLOPs count what the expansion computes: per element of each X the
 * arithmetic of the update (terms with a zero norm_coefficient or
 * norm_coefficient_post are left out, as the expansion leaves them out),
 * plus the scalar learning-rate computation once per execution.
 */
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_optimizers(void);

#define TRAINING_DOMAIN "ai.onnx.preview.training"

/* ------------------------------------------------------------ attributes */

static const WeirOpAttrSpec adam_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "0.9", 0, 0},
    {"beta", WEIR_ATTR_FLOAT, FALSE, "0.999", 0, 0},
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-06", 0, 0},
    {"norm_coefficient", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
    {"norm_coefficient_post", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
};
/* Momentum's attributes have no defaults in ONNX: all are required. */
static const WeirOpAttrSpec momentum_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, TRUE, NULL, 0, 0},
    {"beta", WEIR_ATTR_FLOAT, TRUE, NULL, 0, 0},
    {"mode", WEIR_ATTR_STRING, TRUE, NULL, 0, 0},
    {"norm_coefficient", WEIR_ATTR_FLOAT, TRUE, NULL, 0, 0},
};
static const WeirOpAttrSpec adagrad_attrs[] = {
    {"decay_factor", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-06", 0, 0},
    {"norm_coefficient", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
};

static gboolean optim_infer(WeirOpInferContext *ctx, GError **error);
static WeirExpr *optim_flops(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n);

/* One row per operator: the registered record, the number of tensor kinds
 * in the inputs (X, G and V and/or H) and their names for messages. */
typedef struct {
  WeirOpInfo info;
  guint kinds;
  const char *names[4];
} OptimOp;

#define OPTIM(nm, kinds_, attrs_, ...)                                         \
  {                                                                            \
    .info = {.name = nm,                                                       \
             .min_inputs = 2 + (kinds_),                                       \
             .max_inputs = WEIR_OP_VARIADIC,                                   \
             .min_outputs = (kinds_)-1,                                        \
             .max_outputs = WEIR_OP_VARIADIC,                                  \
             .attrs = attrs_,                                                  \
             .n_attrs = G_N_ELEMENTS(attrs_),                                  \
             .infer = optim_infer,                                             \
             .flops = optim_flops,                                             \
             .domain = TRAINING_DOMAIN},                                       \
    .kinds = kinds_, .names = {                                                \
      __VA_ARGS__                                                              \
    }                                                                          \
  }

static const OptimOp ops[] = {
    OPTIM("Adam", 4, adam_attrs, "X", "G", "V", "H"),
    OPTIM("Momentum", 3, momentum_attrs, "X", "G", "V"),
    OPTIM("Adagrad", 3, adagrad_attrs, "X", "G", "H"),
};

static const OptimOp *find_op(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    if (g_strcmp0(ops[i].info.name, name) == 0)
      return &ops[i];
  return NULL;
}

void weir_ops_register_optimizers(void) {
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    weir_op_register(&ops[i].info);
}

/* ------------------------------------------------------------- inference */

static gboolean is_single(const WeirOpValue *v) {
  for (guint d = 0; d < v->rank; d++) {
    gint64 c;
    if (!weir_expr_is_const(v->shape[d], &c) || c != 1)
      return FALSE;
  }
  return TRUE;
}

static gboolean same_shape(const WeirOpValue *a, const WeirOpValue *b) {
  if (a->rank != b->rank)
    return FALSE;
  for (guint d = 0; d < a->rank; d++)
    if (!weir_expr_equal(a->shape[d], b->shape[d]))
      return FALSE;
  return TRUE;
}

/* "[N, 3]" (transfer full) */
static char *shape_text(const WeirOpValue *v) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < v->rank; d++) {
    g_autofree char *e = weir_expr_to_string(v->shape[d]);
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static gboolean optim_infer(WeirOpInferContext *ctx, GError **error) {
  const OptimOp *o = find_op(ctx->node->op);
  g_return_val_if_fail(o != NULL, FALSE);
  const WeirAttr *mode = weir_node_attr(ctx->node, "mode");
  if (mode && mode->type == WEIR_ATTR_STRING &&
      strcmp(mode->s, "standard") != 0 && strcmp(mode->s, "nesterov") != 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "attribute 'mode' is '%s', expected 'standard' or 'nesterov'", mode->s);
  if (ctx->n_inputs < 2 + o->kinds || (ctx->n_inputs - 2) % o->kinds != 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "has %u inputs: expected R, T and a multiple of %u tensors "
        "(%s..., %s..., %s...%s%s)",
        ctx->n_inputs, o->kinds, o->names[0], o->names[1], o->names[2],
        o->kinds > 3 ? ", " : "", o->kinds > 3 ? "H..." : "");
  guint k = (ctx->n_inputs - 2) / o->kinds;
  /* Trailing outputs may be left out (an optimizer whose state is not
   * wanted back); they keep their positions. */
  if (ctx->n_outputs == 0 || ctx->n_outputs > (o->kinds - 1) * k)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "has %u outputs, expected 1 to %u for %u optimized tensor%s",
        ctx->n_outputs, (o->kinds - 1) * k, k, k == 1 ? "" : "s");
  for (guint i = 0; i < ctx->n_inputs; i++)
    if (!ctx->inputs[i].present)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", i);

  const WeirOpValue *r = &ctx->inputs[0], *t = &ctx->inputs[1];
  if (!weir_dtype_is_float(r->dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 0 (R) has dtype %s, expected f32 or f64",
                          weir_dtype_name(r->dtype));
  if (!is_single(r))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 0 (R) must be a scalar, but has rank %u",
                          r->rank);
  if (t->dtype != WEIR_DTYPE_I64)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 1 (T) has dtype %s, expected i64",
                          weir_dtype_name(t->dtype));
  if (!is_single(t))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 1 (T) must be a scalar, but has rank %u",
                          t->rank);

  for (guint j = 0; j < k; j++) {
    const WeirOpValue *x = &ctx->inputs[2 + j];
    if (!weir_dtype_is_float(x->dtype))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u (%s%u) has dtype %s, expected f32 or f64",
                            2 + j, o->names[0], j + 1,
                            weir_dtype_name(x->dtype));
    for (guint kind = 1; kind < o->kinds; kind++) {
      guint in = 2 + kind * k + j;
      const WeirOpValue *v = &ctx->inputs[in];
      if (v->dtype != x->dtype)
        return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                              "input %u (%s%u) has dtype %s, but %s%u has %s",
                              in, o->names[kind], j + 1,
                              weir_dtype_name(v->dtype), o->names[0], j + 1,
                              weir_dtype_name(x->dtype));
      if (!same_shape(v, x)) {
        g_autofree char *a = shape_text(v);
        g_autofree char *b = shape_text(x);
        return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                              "input %u (%s%u) has shape %s, but %s%u has %s",
                              in, o->names[kind], j + 1, a, o->names[0], j + 1,
                              b);
      }
    }
    /* X_new, then the new state tensors (V_new and/or H_new). */
    for (guint kind = 1; kind < o->kinds; kind++) {
      guint out = (kind - 1) * k + j;
      if (out < ctx->n_outputs)
        weir_op_set_output(ctx, out, x->dtype, x->rank, x->shape);
    }
  }
  return TRUE;
}

/* ----------------------------------------------------------------- flops */

static double attr_float(const WeirNode *n, const char *name) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_FLOAT ? a->f : 0.0;
}

/* FLOPs per element of an optimized tensor; the expansion builds the same
 * arithmetic (ir/lower/expand/optimizers.c). */
static guint flops_per_element(const WeirNode *n) {
  gboolean norm = attr_float(n, "norm_coefficient") != 0.0;
  guint f = norm ? 2 : 0; /* g = norm * x + g */
  if (strcmp(n->op, "Adam") == 0) {
    /* v = alpha v + (1 - alpha) g; h = beta h + (1 - beta) g g;
     * x - lr v / (sqrt(h) + eps); times (1 - post) when post != 0 */
    f += 3 + 4 + 5;
    if (attr_float(n, "norm_coefficient_post") != 0.0)
      f += 1;
  } else if (strcmp(n->op, "Momentum") == 0) {
    /* v = alpha v + beta' g; x - R v, or x - R (g + alpha v) */
    const WeirAttr *mode = weir_node_attr(n, "mode");
    gboolean nesterov = mode && mode->type == WEIR_ATTR_STRING &&
                        strcmp(mode->s, "nesterov") == 0;
    f += 3 + (nesterov ? 4 : 2);
  } else {
    /* h = h + g g; x - r g / (sqrt(h) + eps) */
    f += 2 + 5;
  }
  return f;
}

/* FLOPs of the scalar step computing the learning rate (or Momentum's
 * gradient coefficient) from R and T. */
static guint flops_scalar(const WeirNode *n) {
  if (strcmp(n->op, "Adam") == 0)
    return 7; /* R sqrt(1 - beta^T) / (1 - alpha^T) (T > 0 is integer) */
  if (strcmp(n->op, "Momentum") == 0)
    return 0; /* T > 0 ? beta : 1: a choice, no arithmetic */
  return 3;   /* R / (1 + T decay) */
}

/* The container at the other end of connector conn of n, or NULL. */
static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n,
                                           const char *conn) {
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, conn, TRUE, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

static WeirExpr *optim_flops(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n) {
  const OptimOp *o = find_op(n->op);
  if (!o)
    return NULL;
  guint n_in = 0;
  for (guint i = 0; i < n->in_conns->len; i++)
    n_in += g_str_has_prefix(g_ptr_array_index(n->in_conns, i), "in");
  if (n_in < 2 + o->kinds || (n_in - 2) % o->kinds != 0)
    return NULL;
  guint k = (n_in - 2) / o->kinds;
  guint per = flops_per_element(n);
  g_autoptr(WeirExpr) total = weir_expr_const(flops_scalar(n));
  for (guint j = 0; j < k; j++) {
    g_autofree char *conn = g_strdup_printf("in%u", 2 + j);
    const WeirContainer *x = conn_container(g, s, n, conn);
    if (!x)
      return NULL;
    g_autoptr(WeirExpr) volume = weir_container_volume(x);
    g_autoptr(WeirExpr) part = weir_expr_mul_const(volume, per);
    WeirExpr *next = weir_expr_add(total, part);
    weir_expr_unref(total);
    total = next;
  }
  return g_steal_pointer(&total);
}
