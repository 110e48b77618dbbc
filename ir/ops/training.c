/* training.c — operators that training programs are built from.
 *
 * The backward pass of a training program (core/train.c, ir/lower/autodiff.c)
 * is made of ordinary library nodes so that it validates, interprets, compiles
 * and transforms like any other program.  Most of it reuses the ONNX operators
 * (Gemm with transA/transB, ReduceSum, Transpose, ...); the few shapes of
 * computation they do not cover are these operators:
 *
 *   Pointwise(a, b, ...) -> y
 *       An elementwise computation given as tasklet code.  The inputs (1
 *       to 8, tasklet connectors a, b, c, ... in order) broadcast like
 *       numpy to the output shape; the body assigns y and may use the
 *       output index p0, p1, ... (map parameters) and program symbols.
 *       Attributes: code (string, required), dtype (string, a Weir dtype
 *       name; default the dtype of input 0), flops (int, per element,
 *       default 1), differentiable (int, default 1; 0 for values such as
 *       dropout masks that carry no gradient), serial (int, default 0; 1:
 *       the map runs on one thread, for a few values such as per-channel
 *       statistics, where a parallel region's start and end would cost
 *       more than the loop).  The backward rule differentiates the code
 *       symbolically (ir/lower/grad-code.c).
 *   SumTo(x, like) -> y
 *       Sums x over the dimensions along which `like` broadcasts to x's
 *       shape: y has the shape of `like` and the dtype of x (the gradient
 *       of a broadcast operand).  `like` only gives the shape.
 *   BatchNormApply(X, scale, B, mean, std) -> Y
 *       The normalization and affine step of a training-mode batch norm
 *       (core/train.c): Y = (X - mean[c]) / std[c] * scale[c] + B[c] for an
 *       element of X ([N, C, ...]) in channel c.  scale and B are vectors
 *       of C values, mean and std hold C values as [C] or kept dimensions
 *       ([1, C, 1, ...]).  mean and std carry no gradient: the backward
 *       rule (ir/lower/grad.c) writes one BatchNormGrad whose dX holds
 *       the paths through the batch statistics.
 *   BatchNormGrad(dY, X, mean, std, scale[, R]) -> dX, dscale, dB
 *       Its backward.  With g = dY, or g = (R > 0 ? dY : 0) when R (the
 *       output of the batch norm, read by a ReLU whose backward was folded
 *       in) is given, xhat = (X - mean) / std and M the elements per
 *       channel: dB[c] = sum g, dscale[c] = sum g xhat (over the elements
 *       of channel c) and dX = scale / std (g - dB / M - xhat dscale / M).
 *       R, dY and dX have X's shape; dscale and dB scale's.
 *   BatchNormStats(X) -> mean, var, std
 *       The batch statistics of a training-mode batch norm (core/train.c):
 *       per channel c of X ([N, C, ...]), over the M elements of channel c,
 *       mean[c] = sum x / M, var[c] = sum (x - mean[c])^2 / M (the biased
 *       variance) and std[c] = sqrt(var[c] + epsilon).  The outputs keep
 *       X's rank ([1, C, 1, ...]).  Attribute: epsilon (float, default
 *       1e-05).  No gradient: BatchNormApply's backward holds the paths
 *       through mean and std.
 *
 * Their pure expansions live in ir/lower/expand/training.c.
 */
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_training(void);

/* The container at the other end of connector conn of n, or NULL. */
static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, gboolean in,
                                           const char *conn) {
  const WeirMemlet *m = weir_state_connector_memlet(s, n->id, conn, in, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

/* -------------------------------------------------------------- Pointwise */

static const WeirOpAttrSpec pointwise_attrs[] = {
    {"code", WEIR_ATTR_STRING, TRUE, NULL, 0, 0},
    {"differentiable", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"dtype", WEIR_ATTR_STRING, FALSE, NULL, 0, 0},
    {"flops", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"serial", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

static gboolean infer_pointwise(WeirOpInferContext *ctx, GError **error) {
  guint ranks[8];
  WeirExpr *const *shapes[8];
  guint n = 0;
  if (ctx->n_inputs > G_N_ELEMENTS(ranks))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "at most %u inputs", (guint)G_N_ELEMENTS(ranks));
  for (guint k = 0; k < ctx->n_inputs; k++) {
    if (!ctx->inputs[k].present)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", k);
    ranks[n] = ctx->inputs[k].rank;
    shapes[n] = ctx->inputs[k].shape;
    n++;
  }
  if (n == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "needs at least one input");
  WeirDType dtype = ctx->inputs[0].dtype;
  const WeirAttr *d = weir_node_attr(ctx->node, "dtype");
  if (d && d->type == WEIR_ATTR_STRING && !weir_dtype_from_name(d->s, &dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "unknown dtype '%s'", d->s);
  guint rank;
  WeirExpr **shape;
  g_autoptr(GError) local = NULL;
  if (!weir_op_broadcast(n, ranks, shapes, &rank, &shape, &local))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node, "%s",
                          local->message);
  weir_op_set_output(ctx, 0, dtype, rank, shape);
  for (guint i = 0; i < rank; i++)
    weir_expr_unref(shape[i]);
  g_free(shape);
  return TRUE;
}

static WeirExpr *flops_pointwise(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  const WeirContainer *y = conn_container(g, s, n, FALSE, "out0");
  if (!y)
    return NULL;
  const WeirAttr *f = weir_node_attr(n, "flops");
  g_autoptr(WeirExpr) v = weir_container_volume(y);
  return weir_expr_mul_const(v, f && f->type == WEIR_ATTR_INT ? f->i : 1);
}

/* ------------------------------------------------------------------ SumTo */

static gboolean infer_sum_to(WeirOpInferContext *ctx, GError **error) {
  if (ctx->n_inputs != 2 || !ctx->inputs[0].present || !ctx->inputs[1].present)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "needs inputs x and like");
  const WeirOpValue *x = &ctx->inputs[0], *like = &ctx->inputs[1];
  if (like->rank > x->rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "'like' has rank %u, more than x's %u", like->rank,
                          x->rank);
  guint off = x->rank - like->rank;
  for (guint d = 0; d < like->rank; d++) {
    gint64 c;
    if (weir_expr_is_const(like->shape[d], &c) && c == 1)
      continue;
    if (!weir_expr_equal(like->shape[d], x->shape[off + d])) {
      g_autofree char *a = weir_expr_to_string(like->shape[d]);
      g_autofree char *b = weir_expr_to_string(x->shape[off + d]);
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, ctx->node,
          "'like' dimension %u (%s) does not broadcast to x's (%s)", d, a, b);
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, like->rank, like->shape);
  return TRUE;
}

static WeirExpr *flops_sum_to(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, TRUE, "in0");
  return x ? weir_container_volume(x) : NULL;
}

static const WeirOpInfo op_pointwise = {
    .name = "Pointwise",
    .min_inputs = 1,
    .max_inputs = 8,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = pointwise_attrs,
    .n_attrs = G_N_ELEMENTS(pointwise_attrs),
    .infer = infer_pointwise,
    .flops = flops_pointwise,
};

static const WeirOpInfo op_sum_to = {
    .name = "SumTo",
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = NULL,
    .n_attrs = 0,
    .infer = infer_sum_to,
    .flops = flops_sum_to,
};

/* ------------------------------------------------ convolution and pooling
 *
 *   ConvGradInput(dY, W, like) -> dX     (like: X, for the shape)
 *   ConvGradFilter(dY, X, like) -> dW    (like: W)
 *   MaxPoolGrad(dY, X, Y) -> dX          (the first maximum of each window
 *                                         gets the gradient)
 *   AveragePoolGrad(dY, X) -> dX
 * Two spatial dimensions.  Attributes are explicit (the backward rules
 * resolve defaults and auto_pad): kernel_shape, strides, pads (begin
 * values, then end values), dilations, group (convolutions),
 * count_include_pad (AveragePoolGrad). */

static const WeirOpAttrSpec window_attrs[] = {
    {"count_include_pad", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"dilations", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"group", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"kernel_shape", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"pads", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"strides", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
};

/* Output: the shape of input `like_index` (the op's last input for the
 * convolution gradients, input 1 for pooling) and the dtype of input 0. */
static gboolean infer_window_grad(WeirOpInferContext *ctx, GError **error) {
  guint like = strstr(ctx->node->op, "Conv") ? 2 : 1;
  if (ctx->n_inputs <= like || !ctx->inputs[0].present ||
      !ctx->inputs[like].present)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u is missing", like);
  if (ctx->inputs[like].rank != 4)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "two spatial dimensions are supported (rank 4)");
  weir_op_set_output(ctx, 0, ctx->inputs[0].dtype, ctx->inputs[like].rank,
                     ctx->inputs[like].shape);
  return TRUE;
}

static WeirExpr *flops_window_grad(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n) {
  const WeirContainer *dy = conn_container(g, s, n, TRUE, "in0");
  const WeirAttr *k = weir_node_attr(n, "kernel_shape");
  if (!dy || !k || k->type != WEIR_ATTR_INTS)
    return NULL;
  /* per element of dY: a convolution gradient does a multiply and an add
   * per tap and channel of the other operand; MaxPoolGrad compares each
   * tap of the window to find the maximum and adds dY there once */
  gint64 taps = strstr(n->op, "Conv") ? 2 : 1;
  for (guint i = 0; i < k->ints->len; i++)
    taps *= g_array_index(k->ints, gint64, i);
  if (!strstr(n->op, "Conv"))
    taps += 1;
  if (strstr(n->op, "Conv")) {
    const WeirContainer *x = conn_container(g, s, n, TRUE, "in1");
    if (x && x->shape->len > 1) {
      /* times the channels of the other operand per group */
      gint64 c;
      if (weir_expr_is_const(g_ptr_array_index(x->shape, 1), &c))
        taps *= c;
    }
  }
  g_autoptr(WeirExpr) v = weir_container_volume(dy);
  return weir_expr_mul_const(v, taps);
}

#define WINDOW_OP(var, name_, n_in)                                            \
  static const WeirOpInfo var = {                                              \
      .name = name_,                                                           \
      .min_inputs = n_in,                                                      \
      .max_inputs = n_in,                                                      \
      .min_outputs = 1,                                                        \
      .max_outputs = 1,                                                        \
      .attrs = window_attrs,                                                   \
      .n_attrs = G_N_ELEMENTS(window_attrs),                                   \
      .infer = infer_window_grad,                                              \
      .flops = flops_window_grad,                                              \
  }

WINDOW_OP(op_conv_grad_input, "ConvGradInput", 3);
WINDOW_OP(op_conv_grad_filter, "ConvGradFilter", 3);
WINDOW_OP(op_max_pool_grad, "MaxPoolGrad", 3);
WINDOW_OP(op_avg_pool_grad, "AveragePoolGrad", 2);

/* ------------------------------------------------------------- GatherGrad
 *
 * GatherGrad(dY, indices, like) -> dData: the gradient of Gather (attribute
 * axis): zeros of like's shape, with every dY element added at the position
 * Gather read it from (negative indices count from the end). */

static const WeirOpAttrSpec gather_grad_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

static gboolean infer_gather_grad(WeirOpInferContext *ctx, GError **error) {
  if (ctx->n_inputs != 3 || !ctx->inputs[0].present ||
      !ctx->inputs[1].present || !ctx->inputs[2].present)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "needs dY, indices and like");
  if (ctx->inputs[1].dtype != WEIR_DTYPE_I64 &&
      ctx->inputs[1].dtype != WEIR_DTYPE_I32)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "indices must be int32 or int64");
  const WeirOpValue *like = &ctx->inputs[2];
  if (ctx->inputs[0].rank + 1 != like->rank + ctx->inputs[1].rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "dY's rank does not match Gather's output");
  weir_op_set_output(ctx, 0, ctx->inputs[0].dtype, like->rank, like->shape);
  return TRUE;
}

static const WeirOpInfo op_gather_grad = {
    .name = "GatherGrad",
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = gather_grad_attrs,
    .n_attrs = G_N_ELEMENTS(gather_grad_attrs),
    .infer = infer_gather_grad,
    .flops = flops_sum_to,
};

/* --------------------------------------------- BatchNormApply and its grad */

/* Whether v holds one value per channel of x: [C], or x's rank with C at
 * dimension 1 and 1 elsewhere. */
static gboolean channel_values(const WeirOpValue *v, const WeirOpValue *x) {
  if (v->rank == 1)
    return weir_expr_equal(v->shape[0], x->shape[1]);
  if (v->rank != x->rank)
    return FALSE;
  for (guint d = 0; d < v->rank; d++) {
    gint64 c;
    if (d == 1 ? !weir_expr_equal(v->shape[1], x->shape[1])
               : !weir_expr_is_const(v->shape[d], &c) || c != 1)
      return FALSE;
  }
  return TRUE;
}

static gboolean same_value_shape(const WeirOpValue *a, const WeirOpValue *b) {
  if (a->rank != b->rank)
    return FALSE;
  for (guint d = 0; d < a->rank; d++)
    if (!weir_expr_equal(a->shape[d], b->shape[d]))
      return FALSE;
  return TRUE;
}

/* The checks both ops share: x = input x_index with rank >= 2 and a float
 * dtype, inputs `chans` (count n_chans) per-channel values. */
static gboolean check_batchnorm(WeirOpInferContext *ctx, guint x_index,
                                const guint *chans, guint n_chans,
                                GError **error) {
  for (guint k = 0; k < ctx->n_inputs && k < 5; k++)
    if (!ctx->inputs[k].present)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", k);
  const WeirOpValue *x = &ctx->inputs[x_index];
  if (x->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u has rank %u, expected [N, C, ...]", x_index,
                          x->rank);
  if (x->dtype != WEIR_DTYPE_F32 && x->dtype != WEIR_DTYPE_F64)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u must be f32 or f64", x_index);
  for (guint i = 0; i < n_chans; i++) {
    const WeirOpValue *v = &ctx->inputs[chans[i]];
    if (!channel_values(v, x) || v->dtype != x->dtype)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u must hold one value per channel "
                            "(dimension 1 of input %u) in its dtype",
                            chans[i], x_index);
  }
  return TRUE;
}

static gboolean infer_batchnorm_apply(WeirOpInferContext *ctx, GError **error) {
  static const guint chans[] = {1, 2, 3, 4};
  if (!check_batchnorm(ctx, 0, chans, 4, error))
    return FALSE;
  if (ctx->inputs[1].rank != 1 || ctx->inputs[2].rank != 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "scale and B must be vectors [C]");
  const WeirOpValue *x = &ctx->inputs[0];
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

static gboolean infer_batchnorm_grad(WeirOpInferContext *ctx, GError **error) {
  static const guint chans[] = {2, 3, 4};
  if (!check_batchnorm(ctx, 1, chans, 3, error))
    return FALSE;
  const WeirOpValue *dy = &ctx->inputs[0], *x = &ctx->inputs[1];
  if (!same_value_shape(dy, x) || dy->dtype != x->dtype)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "dY (input 0) must have X's shape and dtype");
  if (ctx->n_inputs > 5 && ctx->inputs[5].present &&
      (!same_value_shape(&ctx->inputs[5], x) ||
       ctx->inputs[5].dtype != x->dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "R (input 5) must have X's shape and dtype");
  if (ctx->inputs[4].rank != 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "scale must be a vector [C]");
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  weir_op_set_output(ctx, 1, x->dtype, 1, ctx->inputs[4].shape);
  weir_op_set_output(ctx, 2, x->dtype, 1, ctx->inputs[4].shape);
  return TRUE;
}

/* per element: apply 4 (subtract, divide, multiply, add); grad 13 over two
 * passes (xhat twice, the sums, the mask, dX) */
static WeirExpr *flops_batchnorm(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  gboolean grad = strcmp(n->op, "BatchNormGrad") == 0;
  const WeirContainer *x = conn_container(g, s, n, TRUE, grad ? "in1" : "in0");
  if (!x)
    return NULL;
  g_autoptr(WeirExpr) v = weir_container_volume(x);
  return weir_expr_mul_const(v, grad ? 13 : 4);
}

static const WeirOpInfo op_batchnorm_apply = {
    .name = "BatchNormApply",
    .min_inputs = 5,
    .max_inputs = 5,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = NULL,
    .n_attrs = 0,
    .infer = infer_batchnorm_apply,
    .flops = flops_batchnorm,
};

static const WeirOpInfo op_batchnorm_grad = {
    .name = "BatchNormGrad",
    .min_inputs = 5,
    .max_inputs = 6,
    .min_outputs = 3,
    .max_outputs = 3,
    .attrs = NULL,
    .n_attrs = 0,
    .infer = infer_batchnorm_grad,
    .flops = flops_batchnorm,
};

static gboolean infer_batchnorm_stats(WeirOpInferContext *ctx, GError **error) {
  if (!check_batchnorm(ctx, 0, NULL, 0, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0];
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autofree WeirExpr **kept = g_new0(WeirExpr *, x->rank);
  for (guint d = 0; d < x->rank; d++)
    kept[d] = d == 1 ? x->shape[1] : one;
  for (guint k = 0; k < 3; k++)
    weir_op_set_output(ctx, k, x->dtype, x->rank, kept);
  return TRUE;
}

/* per element: the two sums (3); per channel: the statistics */
static WeirExpr *flops_batchnorm_stats(const WeirGraph *g, const WeirState *s,
                                       const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, TRUE, "in0");
  if (!x)
    return NULL;
  g_autoptr(WeirExpr) v = weir_container_volume(x);
  return weir_expr_mul_const(v, 3);
}

static const WeirOpAttrSpec batchnorm_stats_attrs[] = {
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-05", 0, 0},
};

static const WeirOpInfo op_batchnorm_stats = {
    .name = "BatchNormStats",
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 3,
    .max_outputs = 3,
    .attrs = batchnorm_stats_attrs,
    .n_attrs = G_N_ELEMENTS(batchnorm_stats_attrs),
    .infer = infer_batchnorm_stats,
    .flops = flops_batchnorm_stats,
};

void weir_ops_register_training(void) {
  weir_op_register(&op_batchnorm_stats);
  weir_op_register(&op_batchnorm_apply);
  weir_op_register(&op_batchnorm_grad);
  weir_op_register(&op_gather_grad);
  weir_op_register(&op_pointwise);
  weir_op_register(&op_sum_to);
  weir_op_register(&op_conv_grad_input);
  weir_op_register(&op_conv_grad_filter);
  weir_op_register(&op_max_pool_grad);
  weir_op_register(&op_avg_pool_grad);
}
