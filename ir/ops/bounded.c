/* bounded.c — operators whose output length is known only at run time.
 *
 *   NonZero    x -> i64 [rank, numel]: the indices of the nonzero elements,
 *              bounded along dimension 1
 *   Compress   x, condition (bool, 1-D) -> the slices (along axis, or of
 *              the flattened x without one) whose condition holds, bounded
 *              along that axis by the condition's length
 *   Unique     x -> Y (the distinct values, or slices along axis), indices
 *              (of each one's first occurrence), inverse_indices (for each
 *              element or slice of x, the place of its value in Y), counts:
 *              Y along its axis, indices and counts bounded by the number
 *              of elements (slices) of x
 *
 *   NonMaxSuppression  boxes [B, N, 4], scores [B, C, N] -> selected
 *              indices [B x C x min(N, max_output_boxes_per_class), 3]
 *              (batch, class, box), bounded along dimension 0; the
 *              limit and the two thresholds are attributes (constant
 *              inputs 3 to 5 at import)
 *
 * Each output's extent along the bounded dimension is the largest length
 * the operator can produce; the valid length is the node's extra output
 * "count" (an i64 scalar), and the importer records it as the container's
 * count (WeirContainer.count; docs/ir-format.md, docs/onnx.md).  The
 * expansions (ir/lower/expand/bounded.c) compare and count with integer
 * arithmetic only: the FLOP count is 0.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_bounded(void);

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

static WeirExpr *volume(guint rank, WeirExpr *const *shape) {
  WeirExpr *v = weir_expr_const(1);
  for (guint d = 0; d < rank; d++) {
    WeirExpr *next = weir_expr_mul(v, shape[d]);
    weir_expr_unref(v);
    v = next;
  }
  return v;
}

/* --------------------------------------------------------------- NonZero */

static gboolean infer_non_zero(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  if (x->rank == 0)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 0 is a scalar (Weir takes rank >= 1)");
  g_autoptr(WeirExpr) r = weir_expr_const(x->rank);
  g_autoptr(WeirExpr) n = volume(x->rank, x->shape);
  WeirExpr *shape[2] = {r, n};
  weir_op_set_output(ctx, 0, WEIR_DTYPE_I64, 2, shape);
  weir_op_set_output_bounded(ctx, 0, 1);
  return TRUE;
}

/* -------------------------------------------------------------- Compress */

static gboolean infer_compress(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *c = x ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!c)
    return FALSE;
  if (c->rank != 1 || c->dtype != WEIR_DTYPE_BOOL)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (condition) must be a bool vector");
  const WeirAttr *a = weir_node_attr(ctx->node, "axis");
  g_autoptr(WeirExpr) n = volume(x->rank, x->shape);
  WeirExpr *len = n;
  guint axis = 0;
  if (a) {
    if (!weir_op_normalize_axis(ctx->node, "axis", a->i, x->rank, FALSE, &axis,
                                error))
      return FALSE;
    len = x->shape[axis];
  }
  gint64 lc, ll;
  if (!weir_expr_equal(c->shape[0], len) &&
      !(weir_expr_is_const(c->shape[0], &lc) && weir_expr_is_const(len, &ll) &&
        lc <= ll))
    return weir_node_fail(error, INVALID, ctx->node,
                          "the condition must not be longer than the axis");
  if (!a) {
    weir_op_set_output(ctx, 0, x->dtype, 1, c->shape);
    weir_op_set_output_bounded(ctx, 0, 0);
    return TRUE;
  }
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, x->rank);
  for (guint d = 0; d < x->rank; d++)
    shape[d] = d == axis ? c->shape[0] : x->shape[d];
  weir_op_set_output(ctx, 0, x->dtype, x->rank, shape);
  weir_op_set_output_bounded(ctx, 0, axis);
  return TRUE;
}

/* ---------------------------------------------------------------- Unique */

static gboolean infer_unique(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const WeirAttr *a = weir_node_attr(ctx->node, "axis");
  g_autoptr(WeirExpr) n = volume(x->rank, x->shape);
  WeirExpr *len = n;
  guint axis = 0;
  if (a) {
    if (!weir_op_normalize_axis(ctx->node, "axis", a->i, x->rank, FALSE, &axis,
                                error))
      return FALSE;
    len = x->shape[axis];
    weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
    weir_op_set_output_bounded(ctx, 0, axis);
  } else {
    weir_op_set_output(ctx, 0, x->dtype, 1, &n);
    weir_op_set_output_bounded(ctx, 0, 0);
  }
  if (ctx->n_outputs > 1) {
    weir_op_set_output(ctx, 1, WEIR_DTYPE_I64, 1, &len);
    weir_op_set_output_bounded(ctx, 1, 0);
  }
  if (ctx->n_outputs > 2)
    weir_op_set_output(ctx, 2, WEIR_DTYPE_I64, 1, &len);
  if (ctx->n_outputs > 3) {
    weir_op_set_output(ctx, 3, WEIR_DTYPE_I64, 1, &len);
    weir_op_set_output_bounded(ctx, 3, 0);
  }
  return TRUE;
}

/* ----------------------------------------------------- NonMaxSuppression */

static gboolean infer_nms(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *b = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *s = b ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!s)
    return FALSE;
  for (guint k = 2; k < 5; k++)
    if (weir_op_input(ctx, k))
      return weir_node_fail(error, UNSUPPORTED, ctx->node,
                            "input %u must be a constant", k + 1);
  if (b->rank != 3 || s->rank != 3 || !weir_dtype_is_float(b->dtype) ||
      s->dtype != b->dtype || !weir_expr_equal(b->shape[0], s->shape[0]) ||
      !weir_expr_equal(b->shape[1], s->shape[2]))
    return weir_node_fail(error, INVALID, ctx->node,
                          "boxes [B, N, 4] and scores [B, C, N] of one float "
                          "dtype expected");
  gint64 four;
  if (!weir_expr_is_const(b->shape[2], &four) || four != 4)
    return weir_node_fail(error, INVALID, ctx->node,
                          "boxes must have 4 coordinates");
  gint64 m = weir_node_attr_int(ctx->node, "max_output_boxes_per_class", 0);
  gint64 cpb = weir_node_attr_int(ctx->node, "center_point_box", 0);
  if (cpb != 0 && cpb != 1)
    return weir_node_fail(error, INVALID, ctx->node,
                          "center_point_box must be 0 or 1");
  g_autoptr(WeirExpr) me = weir_expr_const(MAX(m, 0));
  g_autoptr(WeirExpr) per = weir_expr_min(b->shape[1], me);
  g_autoptr(WeirExpr) bc = weir_expr_mul(b->shape[0], s->shape[1]);
  g_autoptr(WeirExpr) rows = weir_expr_mul(bc, per);
  g_autoptr(WeirExpr) three = weir_expr_const(3);
  WeirExpr *shape[2] = {rows, three};
  weir_op_set_output(ctx, 0, WEIR_DTYPE_I64, 2, shape);
  weir_op_set_output_bounded(ctx, 0, 0);
  return TRUE;
}

/* ------------------------------------------------------------- registry */

static const WeirOpAttrSpec compress_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
};
static const WeirOpAttrSpec unique_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"sorted", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};

static const WeirOpAttrSpec nms_attrs[] = {
    {"center_point_box", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"iou_threshold", WEIR_ATTR_FLOAT, FALSE, "0", 4, 10},
    {"max_output_boxes_per_class", WEIR_ATTR_INT, FALSE, "0", 3, 10},
    {"score_threshold", WEIR_ATTR_FLOAT, FALSE, NULL, 5, 10},
};

static const WeirOpInfo bounded_ops[] = {
    {.name = "NonMaxSuppression",
     .min_inputs = 2,
     .max_inputs = 5,
     .min_outputs = 1,
     .max_outputs = 1,
     .attrs = nms_attrs,
     .n_attrs = G_N_ELEMENTS(nms_attrs),
     .infer = infer_nms,
     .flops = weir_op_flops_zero},
    {.name = "NonZero",
     .min_inputs = 1,
     .max_inputs = 1,
     .min_outputs = 1,
     .max_outputs = 1,
     .attrs = NULL,
     .n_attrs = 0,
     .infer = infer_non_zero,
     .flops = weir_op_flops_zero},
    {.name = "Compress",
     .min_inputs = 2,
     .max_inputs = 2,
     .min_outputs = 1,
     .max_outputs = 1,
     .attrs = compress_attrs,
     .n_attrs = G_N_ELEMENTS(compress_attrs),
     .infer = infer_compress,
     .flops = weir_op_flops_zero},
    {.name = "Unique",
     .min_inputs = 1,
     .max_inputs = 1,
     .min_outputs = 1,
     .max_outputs = 4,
     .attrs = unique_attrs,
     .n_attrs = G_N_ELEMENTS(unique_attrs),
     .infer = infer_unique,
     .flops = weir_op_flops_zero},
};

void weir_ops_register_bounded(void) {
  for (guint i = 0; i < G_N_ELEMENTS(bounded_ops); i++)
    weir_op_register(&bounded_ops[i]);
}
