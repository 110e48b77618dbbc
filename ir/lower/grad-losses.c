/* grad-losses.c — backward rules of the loss operators (ir/ops/losses.c).
 *
 * NegativeLogLikelihoodLoss(X, T, W):
 *   dX = NegativeLogLikelihoodLossGrad(dY, X, T, W), softmax = 0:
 *   dX[n, c, d] = -[c == l] w_l dY_e (dY / sum of w for mean).
 * SoftmaxCrossEntropyLoss(S, T, W) -> loss, log_prob:
 *   with P = log_prob (the node's second output, or recomputed by a
 *   LogSoftmax node when the node has none), d loss_e / d S[n, c, d] =
 *   w_l (exp(P) - [c == l]), so the loss output contributes
 *   NegativeLogLikelihoodLossGrad(dY, P, T, W) with softmax = 1 (one map,
 *   the softmax and the one-hot fused); a gradient G of log_prob itself
 *   contributes LogSoftmax's G - exp(P) sum_c G.
 * Labels and weights carry no gradient (weir_grad_input_differentiable).
 */
#include "weir-attr.h"
#include "weir-autodiff.h"

void weir_grad_register_losses(void);

/* Copies reduction and ignore_index from the forward node to g. */
static void copy_attrs(const WeirNode *n, WeirNode *g) {
  weir_node_set_attr_string(g, "reduction",
                            weir_node_attr_string(n, "reduction", "mean"));
  const WeirAttr *ii = weir_node_attr(n, "ignore_index");
  if (ii && ii->type == WEIR_ATTR_INT)
    weir_node_set_attr_int(g, "ignore_index", ii->i);
}

/* The gradient node: dY, X (log-probabilities), T, W?. */
static const char *loss_grad(WeirGradContext *ctx, const char *dy,
                             const char *x, gboolean softmax) {
  const char *s = weir_grad_input(ctx, 0);
  g_autofree char *base = g_strdup_printf("%s_grad", s);
  const char *dx = weir_grad_new_like(ctx, base, s, -1);
  const char *ins[] = {dy, x, weir_grad_input(ctx, 1), weir_grad_input(ctx, 2)};
  WeirNode *g = weir_grad_op(ctx, "NegativeLogLikelihoodLossGrad", dx, ins,
                             ins[3] ? 4 : 3, &dx, 1);
  copy_attrs(weir_grad_node(ctx), g);
  weir_node_set_attr_int(g, "softmax", softmax ? 1 : 0);
  return dx;
}

static gboolean grad_nll(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = weir_grad_dout(ctx, 0, NULL);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  weir_grad_add(ctx, 0, loss_grad(ctx, dy, weir_grad_input(ctx, 0), FALSE));
  return TRUE;
}

static gboolean grad_sce(WeirGradContext *ctx, GError **error) {
  (void)error;
  const char *dy = weir_grad_dout(ctx, 0, NULL);
  const char *dlp = weir_grad_dout(ctx, 1, NULL);
  if ((!dy && !dlp) || !weir_grad_wants(ctx, 0))
    return TRUE;
  const char *s = weir_grad_input(ctx, 0);
  const char *lp = weir_grad_output(ctx, 1);
  if (!lp) {
    g_autofree char *base = g_strdup_printf("%s_log_prob", s);
    lp = weir_grad_new_like(ctx, base, s, -1);
    WeirNode *n = weir_grad_op(ctx, "LogSoftmax", lp, &s, 1, &lp, 1);
    weir_node_set_attr_int(n, "axis", 1);
  }
  if (dy)
    weir_grad_add(ctx, 0, loss_grad(ctx, dy, lp, TRUE));
  if (dlp) {
    const WeirContainer *c = weir_graph_container(weir_grad_graph(ctx), dlp);
    guint r = c->shape->len;
    g_autofree WeirExpr **shape = g_new0(WeirExpr *, r);
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    for (guint d = 0; d < r; d++)
      shape[d] = d == 1 ? one : g_ptr_array_index(c->shape, d);
    g_autofree char *sbase = g_strdup_printf("%s_sum", dlp);
    const char *sum = weir_grad_new(ctx, sbase, c->dtype, r, shape);
    WeirNode *n = weir_grad_op(ctx, "ReduceSum", sum, &dlp, 1, &sum, 1);
    gint64 axis = 1;
    weir_node_set_attr_ints(n, "axes", &axis, 1);
    weir_node_set_attr_int(n, "keepdims", 1);
    const char *ins[] = {dlp, lp, sum};
    g_autofree char *base = g_strdup_printf("%s_grad", s);
    weir_grad_add(
        ctx, 0,
        weir_grad_pointwise(ctx, base, s, "y = a - exp(b) * c", ins, 3));
  }
  return TRUE;
}

void weir_grad_register_losses(void) {
  weir_grad_register("NegativeLogLikelihoodLoss", grad_nll);
  weir_grad_register("SoftmaxCrossEntropyLoss", grad_sce);
}
