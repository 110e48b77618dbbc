/* losses.c — the ONNX loss operators SoftmaxCrossEntropyLoss and
 * NegativeLogLikelihoodLoss (opset 12/13) and the operator their backward
 * rules emit: schemas, inference and FLOP counts.  Pure expansions are in
 * ir/lower/expand/losses.c, backward rules in ir/lower/grad-losses.c.
 *
 *   NegativeLogLikelihoodLoss(X, T, W?) -> loss
 *       X [N, C, D1, ..., Dk] log-probabilities (float), T [N, D1, ..., Dk]
 *       class labels (i32 or i64), W [C] optional class weights (X's
 *       dtype).  Per element e = (n, d...): l = T[e], w_e = W[l] (1 without
 *       weights; 0 where l == ignore_index), loss_e = -w_e X[n, l, d...].
 *       reduction "none": loss has T's shape; "sum": sum of loss_e; "mean"
 *       (default): sum of loss_e / sum of w_e.
 *   SoftmaxCrossEntropyLoss(scores, T, W?) -> loss, log_prob?
 *       NegativeLogLikelihoodLoss of log_prob = LogSoftmax(scores, axis 1);
 *       the optional second output is log_prob.
 *   NegativeLogLikelihoodLossGrad(dY, X, T, W?) -> dX     (Weir's own)
 *       The gradient of either loss with respect to X given dY (the
 *       gradient of the loss output: a scalar for mean/sum, T's shape for
 *       none): coefficient c_e = w_e dY_e (dY / sum of w_e for mean);
 *       softmax = 0 (NLL): dX[n, c, d] = -c_e [c == l];
 *       softmax = 1 (SCE, X is log_prob): dX = c_e (exp(X) - [c == l]).
 *       Attributes reduction, ignore_index and softmax.
 *
 * ignore_index is optional: without it no label is ignored.  Labels outside
 * [0, C) other than ignore_index are clamped into the range when read
 * (ONNX leaves them undefined; the clamp keeps every read inside X).
 *
 * FLOPs count what the expansions compute (ir/lower/expand/losses.c,
 * checked against the analysis of the expansion by tests/ops/test-losses.c).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_losses(void);

static const WeirOpAttrSpec loss_attrs[] = {
    {"ignore_index", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"reduction", WEIR_ATTR_STRING, FALSE, "mean", 0, 0},
};

static const WeirOpAttrSpec loss_grad_attrs[] = {
    {"ignore_index", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"reduction", WEIR_ATTR_STRING, FALSE, "mean", 0, 0},
    {"softmax", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

/* The container at the other end of connector conn of n, or NULL. */
static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, gboolean in,
                                           const char *conn) {
  const WeirMemlet *m = weir_state_connector_memlet(s, n->id, conn, in, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

static char *shape_text(guint rank, WeirExpr *const *shape) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < rank; d++) {
    g_autofree char *e = weir_expr_to_string(shape[d]);
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* Checks the reduction attribute; *none receives whether it is "none". */
static gboolean check_reduction(const WeirNode *n, gboolean *none,
                                GError **error) {
  const char *r = weir_node_attr_string(n, "reduction", "mean");
  if (strcmp(r, "none") != 0 && strcmp(r, "mean") != 0 && strcmp(r, "sum") != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute 'reduction' is '%s', expected 'none', "
                          "'mean' or 'sum'",
                          r);
  *none = strcmp(r, "none") == 0;
  return TRUE;
}

/* Checks X [N, C, D...] (input xi), T [N, D...] (input xi + 1) and the
 * optional W [C] (input xi + 2) of a loss node. */
static gboolean check_operands(WeirOpInferContext *ctx, guint xi,
                               GError **error) {
  const WeirNode *n = ctx->node;
  if (ctx->n_inputs < xi + 2 || !ctx->inputs[xi].present ||
      !ctx->inputs[xi + 1].present)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "needs the scores and the labels");
  const WeirOpValue *x = &ctx->inputs[xi], *t = &ctx->inputs[xi + 1];
  if (!weir_dtype_is_float(x->dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input %u has dtype %s, expected a float type", xi,
                          weir_dtype_name(x->dtype));
  if (x->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input %u has rank %u, expected [N, C, ...]", xi,
                          x->rank);
  if (t->dtype != WEIR_DTYPE_I32 && t->dtype != WEIR_DTYPE_I64)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "labels (input %u) have dtype %s, expected i32 or "
                          "i64",
                          xi + 1, weir_dtype_name(t->dtype));
  gboolean ok = t->rank + 1 == x->rank;
  for (guint d = 0; ok && d < t->rank; d++)
    ok = weir_expr_equal(t->shape[d], x->shape[d ? d + 1 : 0]);
  if (!ok) {
    g_autofree char *a = shape_text(t->rank, t->shape);
    g_autofree char *b = shape_text(x->rank, x->shape);
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "labels (input %u) have shape %s, expected the "
                          "scores' %s without the class axis 1",
                          xi + 1, a, b);
  }
  if (ctx->n_inputs > xi + 2 && ctx->inputs[xi + 2].present) {
    const WeirOpValue *w = &ctx->inputs[xi + 2];
    if (w->rank != 1 || !weir_expr_equal(w->shape[0], x->shape[1]) ||
        w->dtype != x->dtype) {
      g_autofree char *a = shape_text(w->rank, w->shape);
      g_autofree char *c = weir_expr_to_string(x->shape[1]);
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "weights (input %u) are %s %s, expected %s [%s]",
                            xi + 2, weir_dtype_name(w->dtype), a,
                            weir_dtype_name(x->dtype), c);
    }
  }
  return TRUE;
}

static gboolean infer_loss(WeirOpInferContext *ctx, GError **error) {
  gboolean none;
  if (!check_reduction(ctx->node, &none, error) ||
      !check_operands(ctx, 0, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0], *t = &ctx->inputs[1];
  if (none)
    weir_op_set_output(ctx, 0, x->dtype, t->rank, t->shape);
  else
    weir_op_set_output(ctx, 0, x->dtype, 0, NULL);
  if (ctx->n_outputs > 1) {
    if (strcmp(ctx->node->op, "SoftmaxCrossEntropyLoss") != 0)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "has %u outputs, expected 1", ctx->n_outputs);
    weir_op_set_output(ctx, 1, x->dtype, x->rank, x->shape);
  }
  return TRUE;
}

static gboolean infer_loss_grad(WeirOpInferContext *ctx, GError **error) {
  gboolean none;
  if (!check_reduction(ctx->node, &none, error) ||
      !check_operands(ctx, 1, error))
    return FALSE;
  const WeirOpValue *dy = &ctx->inputs[0], *x = &ctx->inputs[1],
                    *t = &ctx->inputs[2];
  gboolean ok =
      dy->present && dy->dtype == x->dtype && dy->rank == (none ? t->rank : 0);
  for (guint d = 0; ok && none && d < t->rank; d++)
    ok = weir_expr_equal(dy->shape[d], t->shape[d]);
  if (!ok)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "input 0 (dY) must be a %s %s with reduction "
        "'%s'",
        weir_dtype_name(x->dtype),
        none ? "tensor shaped like the labels" : "scalar",
        weir_node_attr_string(ctx->node, "reduction", "mean"));
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

static WeirExpr *flops_loss(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, TRUE, "in0");
  const WeirContainer *t = conn_container(g, s, n, TRUE, "in1");
  if (!x || !t)
    return NULL;
  const char *r = weir_node_attr_string(n, "reduction", "mean");
  gboolean has_w = conn_container(g, s, n, TRUE, "in2") != NULL;
  /* per label: the weight test and the product (with a float weight: 3,
   * else 2), the accumulation of the loss and of the weight; then the
   * division of mean */
  gint64 per =
      (has_w ? 3 : 2) + (strcmp(r, "none") != 0) + (strcmp(r, "mean") == 0);
  g_autoptr(WeirExpr) tv = weir_container_volume(t);
  g_autoptr(WeirExpr) perv = weir_expr_mul_const(tv, per);
  g_autoptr(WeirExpr) nll =
      weir_expr_add_const(perv, strcmp(r, "mean") == 0 ? 1 : 0);
  if (strcmp(n->op, "SoftmaxCrossEntropyLoss") != 0)
    return weir_expr_ref(nll);
  /* the LogSoftmax of the expansion: 7 per element (max, subtract, exp,
   * sum, log, two subtractions) */
  g_autoptr(WeirExpr) xv = weir_container_volume(x);
  g_autoptr(WeirExpr) lsm = weir_expr_mul_const(xv, 7);
  return weir_expr_add(nll, lsm);
}

static WeirExpr *flops_loss_grad(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, TRUE, "in1");
  const WeirContainer *t = conn_container(g, s, n, TRUE, "in2");
  if (!x || !t)
    return NULL;
  gboolean mean =
      strcmp(weir_node_attr_string(n, "reduction", "mean"), "mean") == 0;
  gboolean softmax = weir_node_attr_int(n, "softmax", 0) != 0;
  /* per element of X: the coefficient (dY w, / sum for mean), then
   * c (exp(x) - onehot) or -c; mean adds the weight sum over the labels */
  g_autoptr(WeirExpr) xv = weir_container_volume(x);
  g_autoptr(WeirExpr) per =
      weir_expr_mul_const(xv, (mean ? 2 : 1) + (softmax ? 3 : 1));
  if (!mean)
    return weir_expr_ref(per);
  g_autoptr(WeirExpr) tv = weir_container_volume(t);
  return weir_expr_add(per, tv);
}

static const WeirOpInfo op_nll = {
    .name = "NegativeLogLikelihoodLoss",
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = loss_attrs,
    .n_attrs = G_N_ELEMENTS(loss_attrs),
    .infer = infer_loss,
    .flops = flops_loss,
};

static const WeirOpInfo op_sce = {
    .name = "SoftmaxCrossEntropyLoss",
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 2,
    .attrs = loss_attrs,
    .n_attrs = G_N_ELEMENTS(loss_attrs),
    .infer = infer_loss,
    .flops = flops_loss,
};

static const WeirOpInfo op_nll_grad = {
    .name = "NegativeLogLikelihoodLossGrad",
    .min_inputs = 3,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = loss_grad_attrs,
    .n_attrs = G_N_ELEMENTS(loss_grad_attrs),
    .infer = infer_loss_grad,
    .flops = flops_loss_grad,
};

void weir_ops_register_losses(void) {
  weir_op_register(&op_nll);
  weir_op_register(&op_sce);
  weir_op_register(&op_nll_grad);
}
