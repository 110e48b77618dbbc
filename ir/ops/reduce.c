/* reduce.c — the reduction family of the operator library: schemas, shape
 * and type inference and FLOP counts.
 *
 * Operators (ONNX semantics, attributes in the latest opset's form):
 *   ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2
 *   ReduceSumSquare ReduceLogSumExp   axes (INTS, from input 2 since opset
 *   ReduceLogSum
 *                                     13 for ReduceSum, 18 for the others),
 *                                     keepdims, noop_with_empty_axes
 *   ArgMax ArgMin                     axis, keepdims, select_last_index
 *   Softmax LogSoftmax Hardmax        axis, legacy_2d (set by the importer
 *                                     for opset < 13: reduce over every
 *                                     axis from `axis` on)
 *   LayerNormalization                axis, epsilon, stash_type
 *   LRN                               alpha, beta, bias, size
 *   InstanceNormalization             epsilon
 *   MeanVarianceNormalization         axes
 *   DynamicQuantizeLinear             (u8 output)
 *   GlobalAveragePool GlobalMaxPool
 *   MaxPool AveragePool               kernel_shape, strides, pads,
 *                                     dilations, auto_pad, ceil_mode,
 *                                     count_include_pad (AveragePool),
 *                                     storage_order (MaxPool)
 *
 * The file reads top-down: shared helpers (errors, attributes, dtype
 * sets), then one section per group with its attribute table, inference
 * function and FLOP count, then the operator records and the registration
 * function called from builtin.c.  The expansions into maps and tasklets
 * are in ir/lower/expand/reduce.c.
 */
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_reduce(void);

/* --------------------------------------------------------------- helpers */

#define DT(d) (1u << WEIR_DTYPE_##d)
#define DT_FLOAT (DT(F32) | DT(F64) | DT(F16) | DT(BF16))
#define DT_NUMERIC                                                             \
  (DT_FLOAT | DT(I32) | DT(I64) | DT(I8) | DT(I16) | DT(U16) | DT(U32) |       \
   DT(U64))

/* Checks that input k is present and of a dtype in `allowed`. */
static gboolean check_input(const WeirOpInferContext *ctx, guint k,
                            guint allowed, GError **error) {
  if (k >= ctx->n_inputs || !ctx->inputs[k].present)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u is missing", k);
  WeirDType t = ctx->inputs[k].dtype;
  if (!(allowed & (1u << t)))
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "input %u has dtype %s, which the operator does not accept", k,
        weir_dtype_name(t));
  return TRUE;
}

/* Normalizes axis (in [-rank, rank-1]) to [0, rank-1]. */
static gboolean normalize_axis(const WeirNode *n, const char *what, gint64 axis,
                               guint rank, guint *out, GError **error) {
  gint64 r = rank;
  if (axis < -r || axis >= r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "%s %" G_GINT64_FORMAT
                          " is out of range for an input of "
                          "rank %u",
                          what, axis, rank);
  *out = (guint)(axis < 0 ? axis + r : axis);
  return TRUE;
}

/* Sets output k to the input shape with the reduced dimensions set to 1
 * (keepdims) or removed. */
static void set_reduced_output(WeirOpInferContext *ctx, guint k,
                               WeirDType dtype, const WeirOpValue *x,
                               const gboolean *reduced, gboolean keepdims) {
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, x->rank + 1);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  guint rank = 0;
  for (guint d = 0; d < x->rank; d++) {
    if (!reduced[d])
      shape[rank++] = x->shape[d];
    else if (keepdims)
      shape[rank++] = one;
  }
  weir_op_set_output(ctx, k, dtype, rank, shape);
}

/* The container wired to connector in<k> / out<k> of n, or NULL. */
static const WeirContainer *port_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, gboolean input,
                                           guint k) {
  g_autofree char *conn = g_strdup_printf(input ? "in%u" : "out%u", k);
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, conn, input, TRUE);
  return m ? weir_graph_container(g, m->data) : NULL;
}

/* a * vol(in0) + b * vol(out0), or NULL when a container is unknown. */
static WeirExpr *flops_linear(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n, gint64 a, gint64 b) {
  const WeirContainer *x = port_container(g, s, n, TRUE, 0);
  const WeirContainer *y = port_container(g, s, n, FALSE, 0);
  if (!x || !y)
    return NULL;
  g_autoptr(WeirExpr) vx = weir_container_volume(x);
  g_autoptr(WeirExpr) vy = weir_container_volume(y);
  g_autoptr(WeirExpr) ax = weir_expr_mul_const(vx, a);
  g_autoptr(WeirExpr) by = weir_expr_mul_const(vy, b);
  return weir_expr_add(ax, by);
}

/* ------------------------------------------------------------ Reduce* */

/* Per operator: accepted dtypes and FLOPs per input element / per output
 * element. */
typedef struct {
  const char *name;
  guint dtypes;
  gint64 flops_in, flops_out;
} ReduceDesc;

static const ReduceDesc reduce_descs[] = {
    {"ReduceSum", DT_NUMERIC, 1, 0},
    {"ReduceMean", DT_NUMERIC, 1, 1},
    {"ReduceMax", DT_NUMERIC | DT(U8) | DT(BOOL), 1, 0},
    {"ReduceMin", DT_NUMERIC | DT(U8) | DT(BOOL), 1, 0},
    {"ReduceProd", DT_NUMERIC, 1, 0},
    {"ReduceL1", DT_NUMERIC, 2, 0},
    {"ReduceL2", DT_NUMERIC, 2, 1},
    {"ReduceSumSquare", DT_NUMERIC, 2, 0},
    {"ReduceLogSumExp", DT_NUMERIC, 4, 2},
    {"ReduceLogSum", DT_NUMERIC, 1, 1},
};

static const ReduceDesc *reduce_desc(const char *op) {
  for (guint i = 0; i < G_N_ELEMENTS(reduce_descs); i++)
    if (g_strcmp0(reduce_descs[i].name, op) == 0)
      return &reduce_descs[i];
  return NULL;
}

/* Axes of a Reduce* node for an input of the given rank: reduced[d] for
 * each dimension; *noop when noop_with_empty_axes makes the node a copy. */
static gboolean reduce_axes(const WeirNode *n, guint rank, gboolean *reduced,
                            gboolean *noop, GError **error) {
  const GArray *axes = weir_node_attr_ints(n, "axes");
  guint count = axes ? axes->len : 0;
  *noop = FALSE;
  for (guint d = 0; d < rank; d++)
    reduced[d] = count == 0;
  if (count == 0) {
    *noop = weir_node_attr_int(n, "noop_with_empty_axes", 0) != 0;
    if (*noop)
      for (guint d = 0; d < rank; d++)
        reduced[d] = FALSE;
    return TRUE;
  }
  for (guint i = 0; i < count; i++) {
    guint d = 0;
    if (!normalize_axis(n, "axis", g_array_index(axes, gint64, i), rank, &d,
                        error))
      return FALSE;
    if (reduced[d])
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "axis %u is given twice", d);
    reduced[d] = TRUE;
  }
  return TRUE;
}

static gboolean infer_reduce(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  const ReduceDesc *desc = reduce_desc(n->op);
  if (!desc)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "not a reduction");
  if (!check_input(ctx, 0, desc->dtypes, error))
    return FALSE;
  if (ctx->n_inputs > 1 && ctx->inputs[1].present)
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, n,
        "axes given as input 1; the importer must move constant "
        "axes into the attribute 'axes' (non-constant axes are not "
        "supported)");
  const WeirOpValue *x = &ctx->inputs[0];
  g_autofree gboolean *reduced = g_new0(gboolean, x->rank + 1);
  gboolean noop;
  if (!reduce_axes(n, x->rank, reduced, &noop, error))
    return FALSE;
  set_reduced_output(ctx, 0, x->dtype, x, reduced,
                     weir_node_attr_int(n, "keepdims", 1) != 0);
  return TRUE;
}

static WeirExpr *flops_reduce(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  const ReduceDesc *desc = reduce_desc(n->op);
  return desc ? flops_linear(g, s, n, desc->flops_in, desc->flops_out) : NULL;
}

/* Axes come from input 2 since opset 13 (ReduceSum) / 18 (the others). */
static const WeirOpAttrSpec reduce13_attrs[] = {
    {"axes", WEIR_ATTR_INTS, FALSE, NULL, 2, 13},
    {"keepdims", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"noop_with_empty_axes", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec reduce18_attrs[] = {
    {"axes", WEIR_ATTR_INTS, FALSE, NULL, 2, 18},
    {"keepdims", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"noop_with_empty_axes", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

/* --------------------------------------------------------- ArgMax/ArgMin */

static const WeirOpAttrSpec arg_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"keepdims", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"select_last_index", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

static gboolean infer_arg(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_input(ctx, 0, DT_NUMERIC | DT(U8), error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0];
  if (x->rank == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 is a scalar; %s needs rank >= 1", n->op);
  guint axis = 0;
  if (!normalize_axis(n, "axis", weir_node_attr_int(n, "axis", 0), x->rank,
                      &axis, error))
    return FALSE;
  g_autofree gboolean *reduced = g_new0(gboolean, x->rank);
  reduced[axis] = TRUE;
  set_reduced_output(ctx, 0, WEIR_DTYPE_I64, x, reduced,
                     weir_node_attr_int(n, "keepdims", 1) != 0);
  return TRUE;
}

static WeirExpr *flops_arg(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n) {
  /* A max (min) pass and a comparison pass. */
  return flops_linear(g, s, n, 2, 0);
}

/* ----------------------------------------------------- Softmax/LogSoftmax */

static const WeirOpAttrSpec softmax_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "-1", 0, 0},
    {"legacy_2d", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

static gboolean infer_softmax(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_input(ctx, 0, DT_FLOAT, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0];
  if (x->rank == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 is a scalar; %s needs rank >= 1", n->op);
  guint axis = 0;
  if (!normalize_axis(n, "axis", weir_node_attr_int(n, "axis", -1), x->rank,
                      &axis, error))
    return FALSE;
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

static WeirExpr *flops_softmax(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n) {
  /* max, subtract, exp, sum, divide (LogSoftmax: two subtractions). */
  return flops_linear(g, s, n, strcmp(n->op, "LogSoftmax") == 0 ? 6 : 5, 0);
}

/* Hardmax: the maximum (1 comparison per element) and the first position
 * holding it (1 comparison per element). */
static WeirExpr *flops_hardmax(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n) {
  return flops_linear(g, s, n, 2, 0);
}

/* ------------------------------------- LRN, InstanceNormalization, MVN */

static const WeirOpAttrSpec lrn_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "0.0001", 0, 0},
    {"beta", WEIR_ATTR_FLOAT, FALSE, "0.75", 0, 0},
    {"bias", WEIR_ATTR_FLOAT, FALSE, "1.0", 0, 0},
    {"size", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
};
static const WeirOpAttrSpec instancenorm_attrs[] = {
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-05", 0, 0},
};
static const WeirOpAttrSpec mvn_attrs[] = {
    {"axes", WEIR_ATTR_INTS, FALSE, "0,2,3", 0, 0},
};

/* X of float type and rank >= 2 (N, C, ...); output 0 of its shape. */
static gboolean infer_channels(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_input(ctx, 0, DT_FLOAT, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0];
  if (x->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 has rank %u, expected at least 2 (N, C, "
                          "...)",
                          x->rank);
  if (strcmp(n->op, "LRN") == 0 && weir_node_attr_int(n, "size", 0) < 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "size must be positive");
  if (strcmp(n->op, "InstanceNormalization") == 0) {
    for (guint k = 1; k < 3; k++) {
      if (!check_input(ctx, k, DT_FLOAT, error))
        return FALSE;
      const WeirOpValue *v = &ctx->inputs[k];
      if (v->rank != 1 || !weir_expr_equal(v->shape[0], x->shape[1]))
        return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                              "input %u must be a vector over the channels", k);
    }
  }
  if (strcmp(n->op, "MeanVarianceNormalization") == 0) {
    const GArray *axes = weir_node_attr_ints(n, "axes");
    for (guint i = 0; axes && i < axes->len; i++) {
      guint a = 0;
      if (!normalize_axis(n, "axis", g_array_index(axes, gint64, i), x->rank,
                          &a, error))
        return FALSE;
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

/* LRN: per element, a square and an addition for each of the `size`
 * channels of the window, then the scale, the bias, the power and the
 * division (4).  InstanceNormalization: per element the sum (1), the
 * squared deviation (3) and the normalization (4); per (n, c) the mean (1)
 * and 1 / sqrt(var / count + epsilon) (4).  MeanVarianceNormalization:
 * per element the two sums (3) and (x - m) / (sqrt(E[x^2] - m^2) + 1e-9)
 * computed in place (8). */
static WeirExpr *flops_channels(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n) {
  if (strcmp(n->op, "LRN") == 0)
    return flops_linear(g, s, n, 2 * weir_node_attr_int(n, "size", 1) + 4, 0);
  if (strcmp(n->op, "MeanVarianceNormalization") == 0)
    return flops_linear(g, s, n, 11, 0);
  const WeirContainer *x = port_container(g, s, n, TRUE, 0);
  if (!x || x->shape->len < 2)
    return NULL;
  g_autoptr(WeirExpr) v = weir_container_volume(x);
  g_autoptr(WeirExpr) nc = weir_expr_mul(g_ptr_array_index(x->shape, 0),
                                         g_ptr_array_index(x->shape, 1));
  g_autoptr(WeirExpr) a = weir_expr_mul_const(v, 8);
  g_autoptr(WeirExpr) b = weir_expr_mul_const(nc, 5);
  return weir_expr_add(a, b);
}

/* ------------------------------------------------- DynamicQuantizeLinear */

/* x (f32) -> y (u8, the shape of x), y_scale (f32 scalar), y_zero_point
 * (u8 scalar); all three outputs are required. */
static gboolean infer_dynamic_quantize(WeirOpInferContext *ctx,
                                       GError **error) {
  if (!check_input(ctx, 0, DT(F32), error))
    return FALSE;
  if (ctx->n_outputs < 3)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "has %u outputs, expected 3 (y, y_scale, "
                          "y_zero_point)",
                          ctx->n_outputs);
  const WeirOpValue *x = &ctx->inputs[0];
  weir_op_set_output(ctx, 0, WEIR_DTYPE_U8, x->rank, x->shape);
  weir_op_set_output(ctx, 1, WEIR_DTYPE_F32, 0, NULL);
  weir_op_set_output(ctx, 2, WEIR_DTYPE_U8, 0, NULL);
  return TRUE;
}

/* Per element the minimum and maximum (2) and the quantization (a
 * division, rint, an addition and the two bounds: 5); once the scale and
 * the zero point (7). */
static WeirExpr *flops_dynamic_quantize(const WeirGraph *g, const WeirState *s,
                                        const WeirNode *n) {
  g_autoptr(WeirExpr) per = flops_linear(g, s, n, 7, 0);
  return per ? weir_expr_add_const(per, 7) : NULL;
}

/* ---------------------------------------------------- LayerNormalization */

static const WeirOpAttrSpec layernorm_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "-1", 0, 0},
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-05", 0, 0},
    {"stash_type", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};

/* Scale and B must broadcast to X's shape (unidirectionally). */
static gboolean check_unidirectional(const WeirNode *n, guint k,
                                     const WeirOpValue *v, const WeirOpValue *x,
                                     GError **error) {
  if (v->rank > x->rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input %u has rank %u, more than input 0 (rank %u)",
                          k, v->rank, x->rank);
  for (guint d = 0; d < v->rank; d++) {
    WeirExpr *a = v->shape[d];
    WeirExpr *b = x->shape[x->rank - v->rank + d];
    gint64 c;
    if ((weir_expr_is_const(a, &c) && c == 1) || weir_expr_equal(a, b))
      continue;
    g_autofree char *ta = weir_expr_to_string(a);
    g_autofree char *tb = weir_expr_to_string(b);
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "input %u does not broadcast to input 0: dimension %u is %s, "
        "expected %s or 1",
        k, d, ta, tb);
  }
  return TRUE;
}

static gboolean infer_layernorm(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_input(ctx, 0, DT_FLOAT, error) ||
      !check_input(ctx, 1, DT_FLOAT, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0];
  if (x->rank == 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "input 0 is a scalar; LayerNormalization needs rank >= 1");
  guint axis = 0;
  if (!normalize_axis(n, "axis", weir_node_attr_int(n, "axis", -1), x->rank,
                      &axis, error))
    return FALSE;
  if (!check_unidirectional(n, 1, &ctx->inputs[1], x, error))
    return FALSE;
  for (guint k = 1; k < 3 && k < ctx->n_inputs; k++)
    if (ctx->inputs[k].present && ctx->inputs[k].dtype != x->dtype)
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, n,
          "input %u has dtype %s, input 0 %s; they must be equal", k,
          weir_dtype_name(ctx->inputs[k].dtype), weir_dtype_name(x->dtype));
  if (ctx->n_inputs > 2 && ctx->inputs[2].present &&
      (!check_input(ctx, 2, DT_FLOAT, error) ||
       !check_unidirectional(n, 2, &ctx->inputs[2], x, error)))
    return FALSE;
  /* Mean and InvStdDev have the type given by stash_type (the statistics
   * are computed in X's type; see ir/lower/expand/reduce.c). */
  gint64 stash = weir_node_attr_int(n, "stash_type", 1);
  WeirDType stash_dtype;
  if (stash == 1)
    stash_dtype = WEIR_DTYPE_F32;
  else if (stash == 11)
    stash_dtype = WEIR_DTYPE_F64;
  else
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "stash_type %" G_GINT64_FORMAT
                          " is not supported (only 1 = float and 11 = double)",
                          stash);
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  g_autofree gboolean *reduced = g_new0(gboolean, x->rank);
  for (guint d = axis; d < x->rank; d++)
    reduced[d] = TRUE;
  for (guint k = 1; k < ctx->n_outputs && k < 3; k++)
    set_reduced_output(ctx, k, stash_dtype, x, reduced, TRUE);
  return TRUE;
}

static WeirExpr *flops_layernorm(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  /* sum; subtract, square, sum; subtract, two multiplies, add. */
  return flops_linear(g, s, n, 8, 0);
}

/* ------------------------------------------------------- Global*Pool */

static gboolean infer_global_pool(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_input(ctx, 0, DT_FLOAT, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0];
  if (x->rank < 2)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "input 0 has rank %u, expected at least 2 (N, C, ...)", x->rank);
  g_autofree gboolean *reduced = g_new0(gboolean, x->rank);
  for (guint d = 2; d < x->rank; d++)
    reduced[d] = TRUE;
  set_reduced_output(ctx, 0, x->dtype, x, reduced, TRUE);
  return TRUE;
}

static WeirExpr *flops_global_pool(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n) {
  return flops_linear(g, s, n, 1,
                      strcmp(n->op, "GlobalAveragePool") == 0 ? 1 : 0);
}

/* ------------------------------------------------- MaxPool/AveragePool */

static const WeirOpAttrSpec maxpool_attrs[] = {
    {"auto_pad", WEIR_ATTR_STRING, FALSE, "NOTSET", 0, 0},
    {"ceil_mode", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"dilations", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"kernel_shape", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"pads", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"storage_order", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"strides", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
};

static const WeirOpAttrSpec avgpool_attrs[] = {
    {"auto_pad", WEIR_ATTR_STRING, FALSE, "NOTSET", 0, 0},
    {"ceil_mode", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"count_include_pad", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"dilations", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"kernel_shape", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"pads", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"strides", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
};

/* The per-dimension value of an optional INTS attribute of m entries (or
 * 2m for pads), `dflt` when absent. */
static gboolean pool_ints(const WeirNode *n, const char *name, guint count,
                          gint64 dflt, gint64 min, gint64 *out,
                          GError **error) {
  const GArray *a = weir_node_attr_ints(n, name);
  if (a && a->len != 0 && a->len != count)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute '%s' has %u values, expected %u", name,
                          a->len, count);
  for (guint i = 0; i < count; i++) {
    out[i] = a && a->len ? g_array_index(a, gint64, i) : dflt;
    if (out[i] < min)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "attribute '%s' has value %" G_GINT64_FORMAT
                            ", expected at least %" G_GINT64_FORMAT,
                            name, out[i], min);
  }
  return TRUE;
}

static gboolean infer_pool(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  gboolean is_max = strcmp(n->op, "MaxPool") == 0;
  if (!check_input(ctx, 0, is_max ? DT_FLOAT | DT(U8) : DT_FLOAT, error))
    return FALSE;
  gint64 order = is_max ? weir_node_attr_int(n, "storage_order", 0) : 0;
  if (order != 0 && order != 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "storage_order is %" G_GINT64_FORMAT
                          " (expected 0, row major, or 1, column major)",
                          order);
  const WeirOpValue *x = &ctx->inputs[0];
  if (x->rank < 3)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "input 0 has rank %u, expected at least 3 (N, C, spatial)", x->rank);
  guint m = x->rank - 2;
  const GArray *kernel = weir_node_attr_ints(n, "kernel_shape");
  if (!kernel || kernel->len != m)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "attribute 'kernel_shape' has %u values, expected %u (one "
        "per spatial dimension of input 0, rank %u)",
        kernel ? kernel->len : 0, m, x->rank);
  g_autofree gint64 *k = g_new0(gint64, m);
  g_autofree gint64 *strides = g_new0(gint64, m);
  g_autofree gint64 *dil = g_new0(gint64, m);
  g_autofree gint64 *pads = g_new0(gint64, 2 * m);
  if (!pool_ints(n, "kernel_shape", m, 1, 1, k, error) ||
      !pool_ints(n, "strides", m, 1, 1, strides, error) ||
      !pool_ints(n, "dilations", m, 1, 1, dil, error) ||
      !pool_ints(n, "pads", 2 * m, 0, 0, pads, error))
    return FALSE;
  const char *auto_pad = weir_node_attr_string(n, "auto_pad", "NOTSET");
  gboolean same = strcmp(auto_pad, "SAME_UPPER") == 0 ||
                  strcmp(auto_pad, "SAME_LOWER") == 0;
  gboolean valid = strcmp(auto_pad, "VALID") == 0;
  if (!same && !valid && strcmp(auto_pad, "NOTSET") != 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, "
        "VALID",
        auto_pad);
  gboolean ceil_mode = weir_node_attr_int(n, "ceil_mode", 0) != 0;

  g_autoptr(GPtrArray) shape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  g_ptr_array_add(shape, weir_expr_ref(x->shape[0]));
  g_ptr_array_add(shape, weir_expr_ref(x->shape[1]));
  for (guint d = 0; d < m; d++) {
    WeirExpr *in = x->shape[2 + d];
    gint64 keff, pb = valid ? 0 : pads[d], pe = valid ? 0 : pads[d + m], pads_d;
    if (__builtin_mul_overflow(k[d] - 1, dil[d], &keff) ||
        __builtin_add_overflow(keff, 1, &keff) ||
        __builtin_add_overflow(pb, pe, &pads_d) ||
        __builtin_sub_overflow(pads_d, keff, &pads_d) ||
        strides[d] > G_MAXINT64 / 2)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "the kernel, dilations, pads or strides of spatial "
                            "dimension %u overflow 64 bits",
                            d);
    if (same) {
      /* ceil(in / stride) */
      g_autoptr(WeirExpr) t = weir_expr_add_const(in, strides[d] - 1);
      g_autoptr(WeirExpr) sd = weir_expr_const(strides[d]);
      g_ptr_array_add(shape, weir_expr_floordiv(t, sd));
      continue;
    }
    /* span = in + pads - keff; out = span // stride + 1 (or ceil). */
    g_autoptr(WeirExpr) span = weir_expr_add_const(in, pads_d);
    g_autoptr(WeirExpr) sd = weir_expr_const(strides[d]);
    g_autoptr(WeirExpr) num = ceil_mode
                                  ? weir_expr_add_const(span, strides[d] - 1)
                                  : weir_expr_ref(span);
    g_autoptr(WeirExpr) q = weir_expr_floordiv(num, sd);
    g_autoptr(WeirExpr) out = weir_expr_add_const(q, 1);
    gint64 v;
    if (weir_expr_is_const(span, &v) && v < 0)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "the kernel (extent %" G_GINT64_FORMAT
                            ") does not fit in spatial dimension %u of input 0 "
                            "with its padding",
                            keff, d);
    if (ceil_mode) {
      /* As ONNX: when the last window would start in the end padding
       * ((out-1)*stride >= in + pad_begin), drop it: out - 1 when out
       * exceeds limit = (in + pad_begin - 1) // stride + 1. */
      g_autoptr(WeirExpr) t = weir_expr_add_const(in, pb - 1);
      g_autoptr(WeirExpr) q2 = weir_expr_floordiv(t, sd);
      g_autoptr(WeirExpr) limit = weir_expr_add_const(q2, 1);
      g_autoptr(WeirExpr) capped = weir_expr_min(out, limit);
      g_autoptr(WeirExpr) less = weir_expr_add_const(out, -1);
      g_ptr_array_add(shape, weir_expr_max(less, capped));
    } else {
      g_ptr_array_add(shape, weir_expr_ref(out));
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  /* MaxPool's Indices: the flat index of each maximum in X, int64 */
  if (is_max && ctx->n_outputs > 1)
    weir_op_set_output(ctx, 1, WEIR_DTYPE_I64, x->rank,
                       (WeirExpr *const *)shape->pdata);
  return TRUE;
}

static WeirExpr *flops_pool(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  const WeirContainer *y = port_container(g, s, n, FALSE, 0);
  const GArray *kernel = weir_node_attr_ints(n, "kernel_shape");
  if (!y || !kernel)
    return NULL;
  gint64 taps = 1;
  for (guint i = 0; i < kernel->len; i++)
    if (__builtin_mul_overflow(taps, g_array_index(kernel, gint64, i), &taps))
      return NULL; /* unknown: no machine runs such a window */
  if (strcmp(n->op, "AveragePool") == 0 &&
      __builtin_add_overflow(taps, 1, &taps)) /* the division */
    return NULL;
  g_autoptr(WeirExpr) vy = weir_container_volume(y);
  return weir_expr_mul_const(vy, taps);
}

/* ------------------------------------------------------------ records */

#define REDUCE_OP(var, opname, table)                                          \
  static const WeirOpInfo var = {                                              \
      .name = opname,                                                          \
      .min_inputs = 1,                                                         \
      .max_inputs = 2,                                                         \
      .min_outputs = 1,                                                        \
      .max_outputs = 1,                                                        \
      .attrs = table,                                                          \
      .n_attrs = G_N_ELEMENTS(table),                                          \
      .infer = infer_reduce,                                                   \
      .flops = flops_reduce,                                                   \
  }

REDUCE_OP(op_reduce_sum, "ReduceSum", reduce13_attrs);
REDUCE_OP(op_reduce_mean, "ReduceMean", reduce18_attrs);
REDUCE_OP(op_reduce_max, "ReduceMax", reduce18_attrs);
REDUCE_OP(op_reduce_min, "ReduceMin", reduce18_attrs);
REDUCE_OP(op_reduce_prod, "ReduceProd", reduce18_attrs);
REDUCE_OP(op_reduce_l1, "ReduceL1", reduce18_attrs);
REDUCE_OP(op_reduce_l2, "ReduceL2", reduce18_attrs);
REDUCE_OP(op_reduce_sum_square, "ReduceSumSquare", reduce18_attrs);
REDUCE_OP(op_reduce_log_sum_exp, "ReduceLogSumExp", reduce18_attrs);
REDUCE_OP(op_reduce_log_sum, "ReduceLogSum", reduce18_attrs);

static const WeirOpInfo op_argmax = {
    "ArgMax",  1,        1, 1, 1, arg_attrs, G_N_ELEMENTS(arg_attrs),
    infer_arg, flops_arg};
static const WeirOpInfo op_argmin = {
    "ArgMin",  1,        1, 1, 1, arg_attrs, G_N_ELEMENTS(arg_attrs),
    infer_arg, flops_arg};
static const WeirOpInfo op_softmax = {"Softmax",
                                      1,
                                      1,
                                      1,
                                      1,
                                      softmax_attrs,
                                      G_N_ELEMENTS(softmax_attrs),
                                      infer_softmax,
                                      flops_softmax};
static const WeirOpInfo op_log_softmax = {"LogSoftmax",
                                          1,
                                          1,
                                          1,
                                          1,
                                          softmax_attrs,
                                          G_N_ELEMENTS(softmax_attrs),
                                          infer_softmax,
                                          flops_softmax};
static const WeirOpInfo op_hardmax = {"Hardmax",
                                      1,
                                      1,
                                      1,
                                      1,
                                      softmax_attrs,
                                      G_N_ELEMENTS(softmax_attrs),
                                      infer_softmax,
                                      flops_hardmax};
static const WeirOpInfo op_lrn = {"LRN",
                                  1,
                                  1,
                                  1,
                                  1,
                                  lrn_attrs,
                                  G_N_ELEMENTS(lrn_attrs),
                                  infer_channels,
                                  flops_channels};
static const WeirOpInfo op_instancenorm = {"InstanceNormalization",
                                           3,
                                           3,
                                           1,
                                           1,
                                           instancenorm_attrs,
                                           G_N_ELEMENTS(instancenorm_attrs),
                                           infer_channels,
                                           flops_channels};
static const WeirOpInfo op_mvn = {"MeanVarianceNormalization",
                                  1,
                                  1,
                                  1,
                                  1,
                                  mvn_attrs,
                                  G_N_ELEMENTS(mvn_attrs),
                                  infer_channels,
                                  flops_channels};
static const WeirOpInfo op_dynamic_quantize = {
    "DynamicQuantizeLinear", 1, 1, 3, 3, NULL, 0, infer_dynamic_quantize,
    flops_dynamic_quantize};
static const WeirOpInfo op_layernorm = {"LayerNormalization",
                                        2,
                                        3,
                                        1,
                                        3,
                                        layernorm_attrs,
                                        G_N_ELEMENTS(layernorm_attrs),
                                        infer_layernorm,
                                        flops_layernorm};
static const WeirOpInfo op_global_avg = {
    "GlobalAveragePool", 1, 1, 1, 1, NULL, 0, infer_global_pool,
    flops_global_pool};
static const WeirOpInfo op_global_max = {
    "GlobalMaxPool", 1, 1, 1, 1, NULL, 0, infer_global_pool, flops_global_pool};
static const WeirOpInfo op_maxpool = {
    "MaxPool",  1,         1, 1, 2, maxpool_attrs, G_N_ELEMENTS(maxpool_attrs),
    infer_pool, flops_pool};
static const WeirOpInfo op_avgpool = {"AveragePool",
                                      1,
                                      1,
                                      1,
                                      1,
                                      avgpool_attrs,
                                      G_N_ELEMENTS(avgpool_attrs),
                                      infer_pool,
                                      flops_pool};

void weir_ops_register_reduce(void) {
  static const WeirOpInfo *const all[] = {
      &op_reduce_sum,
      &op_reduce_mean,
      &op_reduce_max,
      &op_reduce_min,
      &op_reduce_prod,
      &op_reduce_l1,
      &op_reduce_l2,
      &op_reduce_sum_square,
      &op_reduce_log_sum_exp,
      &op_reduce_log_sum,
      &op_argmax,
      &op_argmin,
      &op_softmax,
      &op_log_softmax,
      &op_hardmax,
      &op_lrn,
      &op_instancenorm,
      &op_mvn,
      &op_dynamic_quantize,
      &op_layernorm,
      &op_global_avg,
      &op_global_max,
      &op_maxpool,
      &op_avgpool,
  };
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    weir_op_register(all[i]);
}
