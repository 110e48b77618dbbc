/* indexing.c — schemas, inference and FLOP counts of the indexing and
 * rearranging operators added for ONNX coverage (expansions in
 * ir/lower/expand/indexing.c):
 *
 *   Size                         the element count, an i64 scalar
 *   GatherElements               axis
 *   ScatterElements, Scatter     axis, reduction (Scatter: the deprecated
 *                                opset 9-10 name, without reduction)
 *   GatherND                     batch_dims
 *   Trilu                        upper, k (from input 2)
 *   EyeLike                      dtype, k
 *   OneHot                       axis, depth (from input 2; any numeric
 *                                type, so a FLOAT attribute)
 *   DepthToSpace, SpaceToDepth   blocksize, mode (DCR or CRD)
 *   CumSum                       axis (from input 2), exclusive, reverse
 *   ReverseSequence              batch_axis, time_axis
 *   TopK                         axis, k (from input 2), largest, sorted
 *   MaxUnpool                    kernel_shape, pads, strides, output_shape
 *                                (from input 3)
 *   HannWindow, HammingWindow,   size (from input 1), output_datatype,
 *   BlackmanWindow               periodic
 *
 * FLOP convention (as in elementwise.c): floating-point work only, as the
 * analysis of the expanded tasklets counts it.  Pure data movement counts
 * 0; CumSum and TopK count what their expansions do (a sum or a pair of
 * comparisons for every pair of positions along the axis).
 */
#include <math.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_indexing(void);

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

/* ------------------------------------------------------------- helpers */

static gboolean check_index_dtype(const WeirOpInferContext *ctx, guint k,
                                  const WeirOpValue *v, GError **error) {
  if (v->dtype == WEIR_DTYPE_I32 || v->dtype == WEIR_DTYPE_I64)
    return TRUE;
  return weir_node_fail(error, INVALID, ctx->node,
                        "input %u (indices) has dtype %s, expected i32 or i64",
                        k, weir_dtype_name(v->dtype));
}

static gboolean is_float_dtype(WeirDType t) {
  return weir_dtype_is_float(t);
}

/* The container on connector conn of n, or NULL. */
static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, const char *conn,
                                           gboolean in) {
  const WeirMemlet *m = weir_state_connector_memlet(s, n->id, conn, in, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

/* ONNX TensorProto type numbers with a Weir dtype. */
static gboolean onnx_dtype(gint64 t, WeirDType *out) {
  return weir_op_dtype_from_onnx(t, out);
}

/* ------------------------------------------------------------------ Size */

static gboolean infer_size(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  weir_op_set_output(ctx, 0, WEIR_DTYPE_I64, 0, NULL);
  g_autoptr(WeirExpr) v = weir_expr_const(1);
  for (guint d = 0; d < x->rank; d++) {
    WeirExpr *next = weir_expr_mul(v, x->shape[d]);
    weir_expr_unref(v);
    v = next;
  }
  weir_op_set_output_int_values(ctx, 0, &v, 1);
  return TRUE;
}

/* --------------------------------------------- GatherElements, Scatter* */

/* Indices (input 1) of the rank of the data; the axis in range. */
static gboolean elements_common(WeirOpInferContext *ctx, const WeirOpValue **x,
                                const WeirOpValue **ind, guint *axis,
                                GError **error) {
  *x = weir_op_require_input(ctx, 0, error);
  *ind = *x ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!*ind || !check_index_dtype(ctx, 1, *ind, error))
    return FALSE;
  if ((*x)->rank == 0 || (*ind)->rank != (*x)->rank)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (indices) has rank %u, expected the rank "
                          "of the data (%u, at least 1)",
                          (*ind)->rank, (*x)->rank);
  return weir_op_normalize_axis(ctx->node, "axis",
                                weir_node_attr_int(ctx->node, "axis", 0),
                                (*x)->rank, FALSE, axis, error);
}

static gboolean infer_gather_elements(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x, *ind;
  guint axis = 0;
  if (!elements_common(ctx, &x, &ind, &axis, error))
    return FALSE;
  weir_op_set_output(ctx, 0, x->dtype, ind->rank, ind->shape);
  return TRUE;
}

static gboolean reduction_ok(const char *r) {
  return strcmp(r, "none") == 0 || strcmp(r, "add") == 0 ||
         strcmp(r, "mul") == 0 || strcmp(r, "max") == 0 ||
         strcmp(r, "min") == 0;
}

static gboolean infer_scatter_elements(WeirOpInferContext *ctx,
                                       GError **error) {
  const WeirOpValue *x, *ind;
  guint axis = 0;
  if (!elements_common(ctx, &x, &ind, &axis, error))
    return FALSE;
  const WeirOpValue *upd = weir_op_require_input(ctx, 2, error);
  if (!upd)
    return FALSE;
  const char *r = weir_node_attr_string(ctx->node, "reduction", "none");
  if (!reduction_ok(r))
    return weir_node_fail(error, INVALID, ctx->node,
                          "reduction '%s' (expected none, add, mul, max or "
                          "min)",
                          r);
  if (upd->dtype != x->dtype)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 2 (updates) has dtype %s, but the data has %s",
                          weir_dtype_name(upd->dtype),
                          weir_dtype_name(x->dtype));
  gboolean same = upd->rank == ind->rank;
  for (guint d = 0; same && d < ind->rank; d++)
    same = weir_expr_equal(upd->shape[d], ind->shape[d]);
  if (!same)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 2 (updates) must have the shape of the "
                          "indices");
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

/* One reduction per floating update element (none: 0). */
static WeirExpr *flops_scatter_elements(const WeirGraph *g, const WeirState *s,
                                        const WeirNode *n) {
  const WeirContainer *u = conn_container(g, s, n, "in2", TRUE);
  if (!u)
    return NULL;
  const char *r = weir_node_attr_string(n, "reduction", "none");
  if (strcmp(r, "none") == 0 || !is_float_dtype(u->dtype))
    return weir_expr_const(0);
  return weir_container_volume(u);
}

/* -------------------------------------------------------------- GatherND */

static gboolean infer_gather_nd(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *ind = x ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!ind || !check_index_dtype(ctx, 1, ind, error))
    return FALSE;
  gint64 b = weir_node_attr_int(ctx->node, "batch_dims", 0), k;
  if (ind->rank == 0 || x->rank == 0)
    return weir_node_fail(error, INVALID, ctx->node,
                          "data and indices must have rank at least 1");
  if (!weir_expr_is_const(ind->shape[ind->rank - 1], &k))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "the last dimension of the indices is symbolic");
  if (b < 0 || b >= (gint64)ind->rank || b >= (gint64)x->rank || k < 1 ||
      b + k > (gint64)x->rank)
    return weir_node_fail(error, INVALID, ctx->node,
                          "batch_dims %" G_GINT64_FORMAT
                          " and index length %" G_GINT64_FORMAT
                          " do not fit data of rank %u and indices of rank %u",
                          b, k, x->rank, ind->rank);
  for (gint64 d = 0; d < b; d++)
    if (!weir_expr_equal(x->shape[d], ind->shape[d]))
      return weir_node_fail(error, INVALID, ctx->node,
                            "batch dimension %" G_GINT64_FORMAT
                            " differs between data and indices",
                            d);
  guint rank = ind->rank - 1 + x->rank - (guint)(b + k);
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, rank + 1);
  guint r = 0;
  for (guint d = 0; d + 1 < ind->rank; d++)
    shape[r++] = ind->shape[d];
  for (guint d = (guint)(b + k); d < x->rank; d++)
    shape[r++] = x->shape[d];
  weir_op_set_output(ctx, 0, x->dtype, rank, shape);
  return TRUE;
}

/* ------------------------------------------------------ Trilu, EyeLike */

static gboolean infer_trilu(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  if (weir_op_input(ctx, 1))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 1 (k) must be a constant");
  if (x->rank < 2)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 0 has rank %u, expected at least 2", x->rank);
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

static gboolean infer_eye_like(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  if (x->rank != 2)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 0 has rank %u, expected 2", x->rank);
  WeirDType t = x->dtype;
  const WeirAttr *dt = weir_node_attr(ctx->node, "dtype");
  if (dt && dt->type == WEIR_ATTR_INT && !onnx_dtype(dt->i, &t))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "dtype %" G_GINT64_FORMAT
                          " (an ONNX type without a Weir dtype)",
                          dt->i);
  weir_op_set_output(ctx, 0, t, 2, x->shape);
  return TRUE;
}

/* ---------------------------------------------------------------- OneHot */

static gboolean infer_one_hot(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *ind = weir_op_require_input(ctx, 0, error);
  if (!ind)
    return FALSE;
  if (ind->dtype == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 0 (indices) has dtype bool");
  const WeirAttr *depth = weir_node_attr(ctx->node, "depth");
  if (!depth || weir_op_input(ctx, 1))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 1 (depth) must be a constant");
  double dv = depth->type == WEIR_ATTR_FLOAT ? depth->f : (double)depth->i;
  if (!(dv >= 1) || dv > 1e15)
    return weir_node_fail(error, INVALID, ctx->node,
                          "depth %g, expected a positive count", dv);
  const WeirOpValue *values = weir_op_require_input(ctx, 2, error);
  if (!values)
    return FALSE;
  g_autoptr(WeirExpr) two = weir_expr_const(2);
  g_autoptr(WeirExpr) count = weir_expr_const(1);
  for (guint d = 0; d < values->rank; d++) {
    WeirExpr *next = weir_expr_mul(count, values->shape[d]);
    weir_expr_unref(count);
    count = next;
  }
  if (!weir_expr_equal(count, two))
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 2 (values) must have 2 elements (off, on)");
  guint rank = ind->rank + 1, axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", -1), rank,
                              FALSE, &axis, error))
    return FALSE;
  g_autoptr(WeirExpr) d = weir_expr_const((gint64)trunc(dv));
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, rank + 1);
  for (guint i = 0, j = 0; i < rank; i++)
    shape[i] = i == axis ? d : ind->shape[j++];
  weir_op_set_output(ctx, 0, values->dtype, rank, shape);
  return TRUE;
}

/* ------------------------------------------ DepthToSpace, SpaceToDepth */

static gboolean infer_depth_space(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  gboolean to_space = strcmp(ctx->node->op, "DepthToSpace") == 0;
  gint64 b = weir_node_attr_int(ctx->node, "blocksize", 0);
  const char *mode = weir_node_attr_string(ctx->node, "mode", "DCR");
  if (x->rank != 4)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 0 has rank %u, expected 4 (N, C, H, W)",
                          x->rank);
  if (b < 1 || b > 1 << 20)
    return weir_node_fail(error, INVALID, ctx->node,
                          "blocksize %" G_GINT64_FORMAT ", expected >= 1", b);
  if (to_space && strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
    return weir_node_fail(error, INVALID, ctx->node,
                          "mode '%s', expected DCR or CRD", mode);
  WeirExpr *shape[4] = {x->shape[0], NULL, NULL, NULL};
  gint64 bb = b * b;
  g_autoptr(WeirExpr) bbe = weir_expr_const(bb);
  g_autoptr(WeirExpr) be = weir_expr_const(b);
  WeirExpr *owned[3] = {NULL, NULL, NULL};
  /* Dimensions that do not divide are refused. */
  const gint64 divisor[3] = {to_space ? bb : 1, to_space ? 1 : b,
                             to_space ? 1 : b};
  for (guint d = 1; d < 4; d++) {
    gint64 v;
    if (divisor[d - 1] > 1 && weir_expr_is_const(x->shape[d], &v) &&
        v % divisor[d - 1] != 0) {
      for (guint i = 0; i < 3; i++)
        if (owned[i])
          weir_expr_unref(owned[i]);
      return weir_node_fail(error, INVALID, ctx->node,
                            "dimension %u (%" G_GINT64_FORMAT
                            ") is not a multiple of %" G_GINT64_FORMAT,
                            d, v, divisor[d - 1]);
    }
    if (d == 1)
      owned[0] = to_space ? weir_expr_floordiv(x->shape[1], bbe)
                          : weir_expr_mul(x->shape[1], bbe);
    else
      owned[d - 1] = to_space ? weir_expr_mul(x->shape[d], be)
                              : weir_expr_floordiv(x->shape[d], be);
    shape[d] = owned[d - 1];
  }
  weir_op_set_output(ctx, 0, x->dtype, 4, shape);
  for (guint i = 0; i < 3; i++)
    weir_expr_unref(owned[i]);
  return TRUE;
}

/* ---------------------------------------------------------------- CumSum */

static gboolean infer_cum_sum(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  if (weir_op_input(ctx, 1) || !weir_node_attr(ctx->node, "axis"))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 1 (axis) must be a constant");
  if (x->dtype == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, INVALID, ctx->node, "input 0 is bool");
  guint axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", 0), x->rank,
                              FALSE, &axis, error))
    return FALSE;
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

/* The expansion sums, for each output element, every element of its line
 * (those outside the prefix as 0): volume x (length of the axis) floating
 * additions. */
static WeirExpr *flops_cum_sum(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n) {
  const WeirContainer *y = conn_container(g, s, n, "out0", FALSE);
  if (!y)
    return NULL;
  if (!is_float_dtype(y->dtype))
    return weir_expr_const(0);
  gint64 a = weir_node_attr_int(n, "axis", 0);
  gint64 r = y->shape->len;
  if (a < 0)
    a += r;
  if (a < 0 || a >= r)
    return NULL;
  g_autoptr(WeirExpr) v = weir_container_volume(y);
  return weir_expr_mul(v, g_ptr_array_index(y->shape, a));
}

/* ------------------------------------------------------- ReverseSequence */

static gboolean infer_reverse_sequence(WeirOpInferContext *ctx,
                                       GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *len = x ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!len)
    return FALSE;
  gint64 b = weir_node_attr_int(ctx->node, "batch_axis", 1);
  gint64 t = weir_node_attr_int(ctx->node, "time_axis", 0);
  if (x->rank < 2 || (b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
    return weir_node_fail(error, INVALID, ctx->node,
                          "batch_axis and time_axis must be 0 and 1 in some "
                          "order, on input of rank at least 2");
  if (len->rank != 1 || !weir_expr_equal(len->shape[0], x->shape[b]) ||
      (len->dtype != WEIR_DTYPE_I32 && len->dtype != WEIR_DTYPE_I64))
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (sequence_lens) must be an integer vector "
                          "over the batch axis");
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

/* ------------------------------------------------------------------ TopK */

static gboolean infer_top_k(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const WeirAttr *k = weir_node_attr(ctx->node, "k");
  if (weir_op_input(ctx, 1) || !k || k->type != WEIR_ATTR_INT)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 1 (k) must be a constant");
  if (x->rank == 0 || x->dtype == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 0 must be a numeric tensor of rank >= 1");
  guint axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", -1),
                              x->rank, FALSE, &axis, error))
    return FALSE;
  gint64 len;
  if (k->i < 0 || (weir_expr_is_const(x->shape[axis], &len) && k->i > len))
    return weir_node_fail(
        error, INVALID, ctx->node,
        "k = %" G_GINT64_FORMAT " is out of range for the axis", k->i);
  g_autoptr(WeirExpr) ke = weir_expr_const(k->i);
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, x->rank + 1);
  for (guint d = 0; d < x->rank; d++)
    shape[d] = d == axis ? ke : x->shape[d];
  weir_op_set_output(ctx, 0, x->dtype, x->rank, shape);
  if (ctx->n_outputs > 1)
    weir_op_set_output(ctx, 1, WEIR_DTYPE_I64, x->rank, shape);
  return TRUE;
}

/* Two comparisons for every pair of positions along the axis (the rank of
 * each element), and one addition for every output element and position
 * (the selection of the element of each rank by a sum): vol x (2 L + k). */
static WeirExpr *flops_top_k(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, "in0", TRUE);
  if (!x)
    return NULL;
  if (!is_float_dtype(x->dtype))
    return weir_expr_const(0);
  gint64 a = weir_node_attr_int(n, "axis", -1), r = x->shape->len;
  if (a < 0)
    a += r;
  if (a < 0 || a >= r)
    return NULL;
  g_autoptr(WeirExpr) v = weir_container_volume(x);
  g_autoptr(WeirExpr) l2 =
      weir_expr_mul_const(g_ptr_array_index(x->shape, a), 2);
  g_autoptr(WeirExpr) per =
      weir_expr_add_const(l2, weir_node_attr_int(n, "k", 0));
  return weir_expr_mul(v, per);
}

/* ------------------------------------------------------------- MaxUnpool */

/* X (N, C, D1, ...), indices of its shape into the flattened output; the
 * output's spatial sizes from output_shape when given, else
 * (in - 1) * stride - pad_begin - pad_end + kernel. */
static gboolean infer_max_unpool(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *ind = x ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!ind || !check_index_dtype(ctx, 1, ind, error))
    return FALSE;
  if (weir_op_input(ctx, 2))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 2 (output_shape) must be a constant");
  if (!is_float_dtype(x->dtype) || x->rank < 3)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 0 must be a float tensor of rank >= 3");
  gboolean same = ind->rank == x->rank;
  for (guint d = 0; same && d < x->rank; d++)
    same = weir_expr_equal(ind->shape[d], x->shape[d]);
  if (!same)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (indices) must have the shape of input 0");
  guint sp = x->rank - 2;
  const GArray *k = weir_node_attr_ints(ctx->node, "kernel_shape");
  const GArray *st = weir_node_attr_ints(ctx->node, "strides");
  const GArray *pads = weir_node_attr_ints(ctx->node, "pads");
  const GArray *os = weir_node_attr_ints(ctx->node, "output_shape");
  if (!k || k->len != sp || (st && st->len != sp) ||
      (pads && pads->len != 2 * sp) || (os && os->len != x->rank))
    return weir_node_fail(error, INVALID, ctx->node,
                          "kernel_shape, strides, pads or output_shape do not "
                          "match %u spatial dimensions",
                          sp);
  g_autoptr(GPtrArray) shape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < x->rank; d++) {
    if (os) {
      gint64 v = g_array_index(os, gint64, d);
      if (v < 0)
        return weir_node_fail(error, INVALID, ctx->node,
                              "output_shape has a negative size");
      g_ptr_array_add(shape, weir_expr_const(v));
    } else if (d < 2) {
      g_ptr_array_add(shape, weir_expr_ref(x->shape[d]));
    } else {
      guint i = d - 2;
      gint64 stride = st ? g_array_index(st, gint64, i) : 1;
      gint64 pad = pads ? g_array_index(pads, gint64, i) +
                              g_array_index(pads, gint64, i + sp)
                        : 0;
      g_autoptr(WeirExpr) m = weir_expr_add_const(x->shape[d], -1);
      g_autoptr(WeirExpr) ms = weir_expr_mul_const(m, stride);
      g_ptr_array_add(
          shape, weir_expr_add_const(ms, g_array_index(k, gint64, i) - pad));
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  return TRUE;
}

/* --------------------------------------------------------------- windows */

static gboolean infer_window(WeirOpInferContext *ctx, GError **error) {
  const WeirAttr *size = weir_node_attr(ctx->node, "size");
  if (weir_op_input(ctx, 0) || !size || size->type != WEIR_ATTR_INT)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "input 0 (size) must be a constant");
  if (size->i < 0)
    return weir_node_fail(error, INVALID, ctx->node,
                          "size %" G_GINT64_FORMAT " is negative", size->i);
  WeirDType t;
  gint64 odt = weir_node_attr_int(ctx->node, "output_datatype", 1);
  if (!onnx_dtype(odt, &t))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "output_datatype %" G_GINT64_FORMAT
                          " (an ONNX type without a Weir dtype)",
                          odt);
  g_autoptr(WeirExpr) n = weir_expr_const(size->i);
  weir_op_set_output(ctx, 0, t, 1, &n);
  return TRUE;
}

/* Per element, in f64: the angle 2 pi n / N (2), and per cosine term a
 * cosine, a product and a sum (Hann and Hamming one term, 5 in all;
 * Blackman two, the second angle doubled: 9). */
static WeirExpr *flops_window(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  const WeirContainer *y = conn_container(g, s, n, "out0", FALSE);
  if (!y)
    return NULL;
  g_autoptr(WeirExpr) v = weir_container_volume(y);
  return weir_expr_mul_const(v, strcmp(n->op, "BlackmanWindow") == 0 ? 9 : 5);
}

/* --------------------------------------------------------------- schemas */

static const WeirOpAttrSpec axis0_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec scatter_elements_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"reduction", WEIR_ATTR_STRING, FALSE, "none", 0, 0},
};
static const WeirOpAttrSpec gather_nd_attrs[] = {
    {"batch_dims", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec trilu_attrs[] = {
    {"k", WEIR_ATTR_INT, FALSE, "0", 2, 14},
    {"upper", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
static const WeirOpAttrSpec eye_like_attrs[] = {
    {"dtype", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"k", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec one_hot_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "-1", 0, 0},
    {"depth", WEIR_ATTR_FLOAT, FALSE, NULL, 2, 9},
};
static const WeirOpAttrSpec depth_to_space_attrs[] = {
    {"blocksize", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
    {"mode", WEIR_ATTR_STRING, FALSE, "DCR", 0, 0},
};
static const WeirOpAttrSpec space_to_depth_attrs[] = {
    {"blocksize", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
};
static const WeirOpAttrSpec cum_sum_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, NULL, 2, 11},
    {"exclusive", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"reverse", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec reverse_sequence_attrs[] = {
    {"batch_axis", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"time_axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec top_k_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "-1", 0, 0},
    {"k", WEIR_ATTR_INT, FALSE, NULL, 2, 10},
    {"largest", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"sorted", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
static const WeirOpAttrSpec max_unpool_attrs[] = {
    {"kernel_shape", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"output_shape", WEIR_ATTR_INTS, FALSE, NULL, 3, 11},
    {"pads", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"strides", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
};
static const WeirOpAttrSpec window_attrs[] = {
    {"output_datatype", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"periodic", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"size", WEIR_ATTR_INT, FALSE, NULL, 1, 17},
};

#define OP(name_, min_in, max_in, min_out, max_out, attrs_, infer_, flops_)    \
  {                                                                            \
    .name = name_, .min_inputs = min_in, .max_inputs = max_in,                 \
    .min_outputs = min_out, .max_outputs = max_out, .attrs = attrs_,           \
    .n_attrs = G_N_ELEMENTS(attrs_), .infer = infer_, .flops = flops_,         \
  }
#define OP0(name_, min_in, max_in, infer_, flops_)                             \
  {                                                                            \
    .name = name_, .min_inputs = min_in, .max_inputs = max_in,                 \
    .min_outputs = 1, .max_outputs = 1, .infer = infer_, .flops = flops_,      \
  }

static const WeirOpInfo indexing_ops[] = {
    OP0("Size", 1, 1, infer_size, weir_op_flops_zero),
    OP("GatherElements", 2, 2, 1, 1, axis0_attrs, infer_gather_elements,
       weir_op_flops_zero),
    OP("ScatterElements", 3, 3, 1, 1, scatter_elements_attrs,
       infer_scatter_elements, flops_scatter_elements),
    OP("Scatter", 3, 3, 1, 1, axis0_attrs, infer_scatter_elements,
       flops_scatter_elements),
    OP("GatherND", 2, 2, 1, 1, gather_nd_attrs, infer_gather_nd,
       weir_op_flops_zero),
    OP("Trilu", 1, 2, 1, 1, trilu_attrs, infer_trilu, weir_op_flops_zero),
    OP("EyeLike", 1, 1, 1, 1, eye_like_attrs, infer_eye_like,
       weir_op_flops_zero),
    OP("OneHot", 2, 3, 1, 1, one_hot_attrs, infer_one_hot, weir_op_flops_zero),
    OP("DepthToSpace", 1, 1, 1, 1, depth_to_space_attrs, infer_depth_space,
       weir_op_flops_zero),
    OP("SpaceToDepth", 1, 1, 1, 1, space_to_depth_attrs, infer_depth_space,
       weir_op_flops_zero),
    OP("CumSum", 1, 2, 1, 1, cum_sum_attrs, infer_cum_sum, flops_cum_sum),
    OP("ReverseSequence", 2, 2, 1, 1, reverse_sequence_attrs,
       infer_reverse_sequence, weir_op_flops_zero),
    OP("TopK", 1, 2, 1, 2, top_k_attrs, infer_top_k, flops_top_k),
    OP("MaxUnpool", 2, 3, 1, 1, max_unpool_attrs, infer_max_unpool,
       weir_op_flops_zero),
    OP("HannWindow", 0, 1, 1, 1, window_attrs, infer_window, flops_window),
    OP("HammingWindow", 0, 1, 1, 1, window_attrs, infer_window, flops_window),
    OP("BlackmanWindow", 0, 1, 1, 1, window_attrs, infer_window, flops_window),
};

void weir_ops_register_indexing(void) {
  for (guint i = 0; i < G_N_ELEMENTS(indexing_ops); i++)
    weir_op_register(&indexing_ops[i]);
}
