/* update.c — schemas of the multi-tensor operators of training programs,
 * OptimizerUpdate and SumAll (ir/weir-ops-update.h says what they compute).
 *
 * Their pure expansions are in ir/lower/expand/update.c, the native
 * implementation (one parallel region each) in core/kernels/multi-tensor.c.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops-update.h"
#include "weir-ops.h"

void weir_ops_register_update(void);

/* ----------------------------------------------------------------- layout */

gboolean weir_update_kind_from_name(const char *name, WeirUpdateKind *out) {
  static const char *const names[] = {"sgd", "momentum", "adam"};
  for (guint i = 0; name && i < G_N_ELEMENTS(names); i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (WeirUpdateKind)i;
      return TRUE;
    }
  return FALSE;
}

gboolean weir_update_layout(const WeirNode *n, guint n_inputs,
                            WeirUpdateLayout *out, GError **error) {
  const char *name = weir_node_attr_string(n, "optimizer", NULL);
  WeirUpdateLayout l = {0};
  if (!weir_update_kind_from_name(name, &l.kind))
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "attribute 'optimizer' is '%s', expected sgd, momentum or adam",
        name ? name : "(missing)");
  l.per_group = l.kind == WEIR_UPDATE_SGD        ? 2
                : l.kind == WEIR_UPDATE_MOMENTUM ? 3
                                                 : 4;
  l.outs = l.per_group - 1;
  guint next = 1; /* input 0 is the check */
  l.step = l.kind == WEIR_UPDATE_ADAM ? (gint)next++ : -1;
  l.lr = weir_node_attr_int(n, "lr_input", 0) ? (gint)next++ : -1;
  l.scale = weir_node_attr_int(n, "scale_input", 0) ? (gint)next++ : -1;
  l.first = next;
  const WeirAttr *keep = weir_node_attr(n, "ema_keep");
  l.emas = keep && keep->type == WEIR_ATTR_FLOATS ? keep->floats->len : 0;
  guint pairs = 2 * l.emas;
  if (n_inputs < next + l.per_group + pairs ||
      (n_inputs - next - pairs) % l.per_group != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "has %u inputs: expected %u scalars (check%s%s%s), "
                          "groups of %u tensors and %u pairs of moving "
                          "averages",
                          n_inputs, next, l.step >= 0 ? ", step" : "",
                          l.lr >= 0 ? ", lr" : "",
                          l.scale >= 0 ? ", scale" : "", l.per_group, l.emas);
  l.groups = (n_inputs - next - pairs) / l.per_group;
  l.ema_first = next + l.groups * l.per_group;
  *out = l;
  return TRUE;
}

double weir_update_ema_keep(const WeirNode *n, guint e) {
  const WeirAttr *keep = weir_node_attr(n, "ema_keep");
  g_return_val_if_fail(
      keep && keep->type == WEIR_ATTR_FLOATS && e < keep->floats->len, 0.0);
  return g_array_index(keep->floats, double, e);
}

/* ---------------------------------------------------------- helpers */

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

/* The container on input connector k of n, or NULL. */
static const WeirContainer *input(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, guint k) {
  g_autofree char *conn = g_strdup_printf("in%u", k);
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, conn, TRUE, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

/* ------------------------------------------------------ OptimizerUpdate */

static const WeirOpAttrSpec update_attrs[] = {
    {"beta1", WEIR_ATTR_FLOAT, FALSE, "0.9", 0, 0},
    {"beta2", WEIR_ATTR_FLOAT, FALSE, "0.999", 0, 0},
    {"ema_keep", WEIR_ATTR_FLOATS, FALSE, NULL, 0, 0},
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-08", 0, 0},
    {"lr", WEIR_ATTR_FLOAT, FALSE, "0.01", 0, 0},
    {"lr_input", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"momentum", WEIR_ATTR_FLOAT, FALSE, "0.9", 0, 0},
    {"optimizer", WEIR_ATTR_STRING, TRUE, NULL, 0, 0},
    {"scale_input", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"weight_decay", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
};

static gboolean infer_update(WeirOpInferContext *ctx, GError **error) {
  WeirUpdateLayout l;
  if (!weir_update_layout(ctx->node, ctx->n_inputs, &l, error))
    return FALSE;
  if (ctx->n_outputs != l.groups * l.outs + l.emas)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "has %u outputs, expected %u for %u group%s and %u moving averages",
        ctx->n_outputs, l.groups * l.outs + l.emas, l.groups,
        l.groups == 1 ? "" : "s", l.emas);
  for (guint k = 0; k < ctx->n_inputs; k++)
    if (!ctx->inputs[k].present)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", k);
  /* the scalars */
  const gint scalars[] = {0, l.step, l.lr, l.scale};
  static const char *const scalar_names[] = {"check", "step", "lr", "scale"};
  for (guint i = 0; i < G_N_ELEMENTS(scalars); i++) {
    if (scalars[i] < 0)
      continue;
    const WeirOpValue *v = &ctx->inputs[scalars[i]];
    gboolean want_int = i == 1;
    if (!is_single(v) || (want_int ? v->dtype != WEIR_DTYPE_I64
                                   : !weir_dtype_is_float(v->dtype)))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %d (%s) must be a single %s element",
                            scalars[i], scalar_names[i],
                            want_int ? "i64" : "float");
  }
  static const char *const member[] = {"P", "G", "M", "V"};
  for (guint j = 0; j < l.groups; j++) {
    const WeirOpValue *p = &ctx->inputs[weir_update_input(&l, j, 0)];
    if (!weir_dtype_is_float(p->dtype))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u (P%u) has dtype %s, expected a float",
                            weir_update_input(&l, j, 0), j + 1,
                            weir_dtype_name(p->dtype));
    for (guint m = 1; m < l.per_group; m++) {
      guint k = weir_update_input(&l, j, m);
      const WeirOpValue *v = &ctx->inputs[k];
      if (v->dtype != p->dtype || !same_shape(v, p))
        return weir_node_fail(
            error, WEIR_ERROR_INVALID, ctx->node,
            "input %u (%s%u) must have the dtype and shape of P%u", k,
            member[m], j + 1, j + 1);
    }
    for (guint m = 0; m < l.outs; m++)
      weir_op_set_output(ctx, weir_update_output(&l, j, m), p->dtype, p->rank,
                         p->shape);
  }
  for (guint e = 0; e < l.emas; e++) {
    guint k = weir_update_ema_input(&l, e, 0);
    const WeirOpValue *t = &ctx->inputs[k], *x = &ctx->inputs[k + 1];
    if (!weir_dtype_is_float(t->dtype) || x->dtype != t->dtype ||
        !same_shape(t, x))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "inputs %u and %u (moving average %u) must be "
                            "floats of one dtype and shape",
                            k, k + 1, e + 1);
    weir_op_set_output(ctx, weir_update_ema_output(&l, e), t->dtype, t->rank,
                       t->shape);
  }
  return TRUE;
}

/* Per element: the gradient's scale (1) and decay (2), then sgd 2
 * (P - lr g), momentum 2 + 2, adam 3 (M) + 4 (V) + 6 (P: two divisions, a
 * square root, an add, a multiply, a subtract); per element of a moving
 * average 3.  Once per node: the test of the check (1) and Adam's bias
 * corrections (4). */
static WeirExpr *flops_update(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  WeirUpdateLayout l;
  if (!weir_update_layout(n, n->in_conns->len, &l, NULL))
    return NULL;
  gint64 per = l.kind == WEIR_UPDATE_SGD        ? 2
               : l.kind == WEIR_UPDATE_MOMENTUM ? 4
                                                : 13;
  per += l.scale >= 0 ? 1 : 0;
  per += weir_node_attr_float(n, "weight_decay", 0) != 0 ? 2 : 0;
  WeirExpr *total = weir_expr_const(l.kind == WEIR_UPDATE_ADAM ? 5 : 1);
  /* a moving average: 3 per element (two multiplies, an add) */
  for (guint e = 0; e < l.emas; e++) {
    const WeirContainer *t = input(g, s, n, weir_update_ema_input(&l, e, 0));
    if (!t) {
      weir_expr_unref(total);
      return NULL;
    }
    g_autoptr(WeirExpr) v = weir_container_volume(t);
    g_autoptr(WeirExpr) part = weir_expr_mul_const(v, 3);
    WeirExpr *next = weir_expr_add(total, part);
    weir_expr_unref(total);
    total = next;
  }
  for (guint j = 0; j < l.groups; j++) {
    const WeirContainer *p = input(g, s, n, weir_update_input(&l, j, 0));
    if (!p) {
      weir_expr_unref(total);
      return NULL;
    }
    g_autoptr(WeirExpr) v = weir_container_volume(p);
    g_autoptr(WeirExpr) part = weir_expr_mul_const(v, per);
    WeirExpr *next = weir_expr_add(total, part);
    weir_expr_unref(total);
    total = next;
  }
  return total;
}

static const WeirOpInfo op_update = {
    .name = "OptimizerUpdate",
    .min_inputs = 3,
    .max_inputs = WEIR_OP_VARIADIC,
    .min_outputs = 1,
    .max_outputs = WEIR_OP_VARIADIC,
    .attrs = update_attrs,
    .n_attrs = G_N_ELEMENTS(update_attrs),
    .infer = infer_update,
    .flops = flops_update,
};

/* ----------------------------------------------------------------- SumAll */

static const WeirOpAttrSpec sum_all_attrs[] = {
    {"square", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

static gboolean infer_sum_all(WeirOpInferContext *ctx, GError **error) {
  for (guint k = 0; k < ctx->n_inputs; k++) {
    const WeirOpValue *v = &ctx->inputs[k];
    if (!v->present)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", k);
    if (!weir_dtype_is_float(v->dtype) || v->dtype != ctx->inputs[0].dtype)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u has dtype %s; the inputs must all have "
                            "one float dtype (input 0 has %s)",
                            k, weir_dtype_name(v->dtype),
                            weir_dtype_name(ctx->inputs[0].dtype));
  }
  weir_op_set_output(ctx, 0, ctx->inputs[0].dtype, 0, NULL);
  return TRUE;
}

/* One add per element (and a multiply per element for the squares). */
static WeirExpr *flops_sum_all(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n) {
  gint64 per = weir_node_attr_int(n, "square", 0) ? 2 : 1;
  WeirExpr *total = weir_expr_const(0);
  for (guint k = 0; k < n->in_conns->len; k++) {
    const WeirContainer *x = input(g, s, n, k);
    if (!x) {
      weir_expr_unref(total);
      return NULL;
    }
    g_autoptr(WeirExpr) v = weir_container_volume(x);
    g_autoptr(WeirExpr) part = weir_expr_mul_const(v, per);
    WeirExpr *next = weir_expr_add(total, part);
    weir_expr_unref(total);
    total = next;
  }
  return total;
}

static const WeirOpInfo op_sum_all = {
    .name = "SumAll",
    .min_inputs = 1,
    .max_inputs = WEIR_OP_VARIADIC,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = sum_all_attrs,
    .n_attrs = G_N_ELEMENTS(sum_all_attrs),
    .infer = infer_sum_all,
    .flops = flops_sum_all,
};

void weir_ops_register_update(void) {
  weir_op_register(&op_update);
  weir_op_register(&op_sum_all);
}
