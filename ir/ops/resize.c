/* resize.c — the resampling operators Resize, Upsample, GridSample and
 * RoiAlign: schemas,
 * shape and type inference, FLOP counts (ONNX semantics; the expansions are
 * in ir/lower/expand/resize.c).
 *
 * Supported: mode "nearest" (every nearest_mode), "linear" (n-linear over
 * the resized axes) and "cubic" (cubic_coeff_a, exclude_outside), with the
 * coordinate transformation modes half_pixel, pytorch_half_pixel,
 * align_corners, asymmetric and tf_half_pixel_for_nn, the output size given by
 * `scales` or `sizes`, and tf_crop_and_resize (the region of interest
 * `roi`, 2 x rank normalized starts then ends; a coordinate outside the input
 * gives `extrapolation_value`). Refused (WEIR_ERROR_UNSUPPORTED):
 * antialias, axes, and scales, sizes or roi that are
 * not known at import (the importer turns constant inputs 1 to 3 into the
 * attributes `roi`, `scales` and `sizes`).
 *
 * Upsample (opsets 7 to 9, deprecated at 10 for Resize) is Resize with
 * `scales` (an attribute at opset 7, input 1 from opset 9), modes
 * "nearest" and "linear", the asymmetric coordinate transformation and, for
 * nearest, floor rounding: what ONNX's reference (np.repeat for integer
 * scales) and ONNX Runtime compute.  Its scales must be at least 1, as the
 * operator requires.  It shares Resize's inference, FLOPs and expansion
 * (weir_op_resize_coordinate_mode, weir_op_resize_nearest_mode).
 *
 * FLOPs: nearest counts 0 (data movement).  Linear counts, per output
 * element, 3 for each of the 2^k - 1 interpolations between neighbours
 * (a + w * (b - a)) over the k resized axes; cubic 7 (4 products, 3
 * sums) for each of the (4^k - 1) / 3 combinations of 4 neighbours.  The
 * coordinate and weight arithmetic is index computation and is not
 * counted.
 */
#include <math.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_resize(void);

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

/* The FLOATS attribute `name` when present and not empty (exporters give
 * an empty tensor for "not used"), else NULL. */
static const GArray *floats_attr(const WeirNode *n, const char *name) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a || a->type != WEIR_ATTR_FLOATS || a->floats->len == 0)
    return NULL;
  return a->floats;
}

static const GArray *ints_attr(const WeirNode *n, const char *name) {
  const GArray *a = weir_node_attr_ints(n, name);
  return a && a->len > 0 ? a : NULL;
}

static gboolean is_upsample(const WeirNode *n) {
  return g_strcmp0(n->op, "Upsample") == 0;
}

const char *weir_op_resize_coordinate_mode(const WeirNode *n) {
  if (is_upsample(n))
    return "asymmetric";
  return weir_node_attr_string(n, "coordinate_transformation_mode",
                               "half_pixel");
}

const char *weir_op_resize_nearest_mode(const WeirNode *n) {
  if (is_upsample(n))
    return "floor";
  return weir_node_attr_string(n, "nearest_mode", "round_prefer_floor");
}

gboolean weir_op_resize_keeps_axis(const WeirNode *n, guint d, WeirExpr *in,
                                   WeirExpr *out) {
  gint64 v;
  if (weir_expr_is_const(in, &v) && v == 1)
    return TRUE; /* every output element reads the one input element */
  if (!weir_expr_equal(in, out))
    return FALSE;
  const GArray *scales = floats_attr(n, "scales");
  if (scales && (d >= scales->len || g_array_index(scales, double, d) != 1.0))
    return FALSE;
  const char *m = weir_op_resize_coordinate_mode(n);
  if (strcmp(m, "tf_crop_and_resize") == 0) {
    /* the whole axis, roi [0, 1], maps each index onto itself */
    const GArray *roi = floats_attr(n, "roi");
    guint r = roi ? roi->len / 2 : 0;
    return roi && d < r && g_array_index(roi, double, d) == 0.0 &&
           g_array_index(roi, double, r + d) == 1.0;
  }
  return strcmp(m, "tf_half_pixel_for_nn") != 0;
}

static gboolean infer_resize(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (ctx->n_inputs < 1 || !ctx->inputs[0].present)
    return weir_node_fail(error, INVALID, n, "input 0 is missing");
  const WeirOpValue *x = &ctx->inputs[0];
  static const char *const names[] = {"roi", "scales", "sizes"};
  for (guint k = 1; k < ctx->n_inputs && k <= 3; k++)
    if (ctx->inputs[k].present)
      return weir_node_fail(error, UNSUPPORTED, n,
                            "input %u '%s' must be known at import", k,
                            names[k - 1]);
  const char *mode = weir_node_attr_string(n, "mode", "nearest");
  const char *coord = weir_op_resize_coordinate_mode(n);
  const char *nearest = weir_op_resize_nearest_mode(n);
  if (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0 &&
      strcmp(mode, "cubic") != 0)
    return weir_node_fail(error, INVALID, n,
                          "mode '%s' (expected nearest, linear or cubic)",
                          mode);
  if (strcmp(coord, "half_pixel") != 0 &&
      strcmp(coord, "pytorch_half_pixel") != 0 &&
      strcmp(coord, "align_corners") != 0 && strcmp(coord, "asymmetric") != 0 &&
      strcmp(coord, "tf_half_pixel_for_nn") != 0 &&
      strcmp(coord, "tf_crop_and_resize") != 0)
    return weir_node_fail(
        error, UNSUPPORTED, n,
        "coordinate_transformation_mode '%s' (supported: half_pixel, "
        "pytorch_half_pixel, align_corners, asymmetric, "
        "tf_half_pixel_for_nn or tf_crop_and_resize)",
        coord);
  if (strcmp(coord, "tf_crop_and_resize") == 0) {
    const GArray *roi = floats_attr(n, "roi");
    if (!roi)
      return weir_node_fail(error, INVALID, n,
                            "tf_crop_and_resize needs the region of "
                            "interest 'roi' (input 1)");
    if (roi->len != 2 * x->rank)
      return weir_node_fail(error, INVALID, n,
                            "'roi' has %u entries, the input has rank %u "
                            "(expected %u: the starts, then the ends)",
                            roi->len, x->rank, 2 * x->rank);
    for (guint k = 0; k < roi->len; k++)
      if (!isfinite(g_array_index(roi, double, k)))
        return weir_node_fail(error, INVALID, n, "roi[%u] is %g", k,
                              g_array_index(roi, double, k));
  }
  if (strcmp(nearest, "round_prefer_floor") != 0 &&
      strcmp(nearest, "round_prefer_ceil") != 0 &&
      strcmp(nearest, "floor") != 0 && strcmp(nearest, "ceil") != 0)
    return weir_node_fail(error, INVALID, n, "nearest_mode '%s'", nearest);
  if (strcmp(mode, "nearest") != 0 && !weir_dtype_is_float(x->dtype))
    return weir_node_fail(error, UNSUPPORTED, n, "%s interpolation of %s data",
                          mode, weir_dtype_name(x->dtype));
  if (weir_node_attr_int(n, "antialias", 0) != 0)
    return weir_node_fail(error, UNSUPPORTED, n, "antialias = 1");
  if (weir_node_attr_ints(n, "axes"))
    return weir_node_fail(error, UNSUPPORTED, n, "attribute 'axes'");
  const GArray *scales = floats_attr(n, "scales");
  const GArray *sizes = ints_attr(n, "sizes");
  if (!!scales == !!sizes)
    return weir_node_fail(error, INVALID, n,
                          "exactly one of 'scales' and 'sizes' must be given");
  guint len = scales ? scales->len : sizes->len;
  if (len != x->rank)
    return weir_node_fail(error, INVALID, n,
                          "'%s' has %u entries, the input has rank %u",
                          scales ? "scales" : "sizes", len, x->rank);
  g_autoptr(GPtrArray) shape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < x->rank; d++) {
    if (sizes) {
      gint64 v = g_array_index(sizes, gint64, d);
      if (v < 0)
        return weir_node_fail(error, INVALID, n,
                              "sizes[%u] is %" G_GINT64_FORMAT, d, v);
      g_ptr_array_add(shape, weir_expr_const(v));
      continue;
    }
    double s = g_array_index(scales, double, d);
    if (!(s > 0))
      return weir_node_fail(error, INVALID, n, "scales[%u] is %g", d, s);
    gint64 in;
    if (weir_expr_is_const(x->shape[d], &in)) {
      double out = floor((double)in * s);
      if (!(out < 4611686018427387904.0)) /* 2^62 */
        return weir_node_fail(error, INVALID, n,
                              "scales[%u] = %g makes dimension %u too large", d,
                              s, d);
      g_ptr_array_add(shape, weir_expr_const((gint64)out));
    } else if (s < 65536 && s == floor(s)) {
      g_ptr_array_add(shape, weir_expr_mul_const(x->shape[d], (gint64)s));
    } else {
      g_autofree char *t = weir_expr_to_string(x->shape[d]);
      return weir_node_fail(error, UNSUPPORTED, n,
                            "a fractional scale (%g) of the symbolic "
                            "dimension %s",
                            s, t);
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  return TRUE;
}

static WeirExpr *flops_resize(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  const WeirMemlet *mi =
      weir_state_connector_memlet(s, n->id, "in0", TRUE, TRUE);
  const WeirMemlet *mo =
      weir_state_connector_memlet(s, n->id, "out0", FALSE, TRUE);
  if (!mi || !mo)
    return NULL;
  const WeirContainer *x = weir_graph_container(g, mi->data);
  const WeirContainer *y = weir_graph_container(g, mo->data);
  if (!x || !y || x->shape->len != y->shape->len)
    return NULL;
  g_autoptr(WeirExpr) vol = weir_container_volume(y);
  const char *mode = weir_node_attr_string(n, "mode", "nearest");
  gboolean cubic = strcmp(mode, "cubic") == 0;
  if ((strcmp(mode, "linear") != 0 && !cubic) || !weir_dtype_is_float(y->dtype))
    return weir_expr_const(0);
  guint k = 0;
  for (guint d = 0; d < x->shape->len; d++)
    k += !weir_op_resize_keeps_axis(n, d, g_ptr_array_index(x->shape, d),
                                    g_ptr_array_index(y->shape, d));
  if (k > 16)
    return NULL;
  if (cubic) /* (4^k - 1) / 3 combinations of 4 values, 7 FLOPs each */
    return weir_expr_mul_const(vol, 7 * ((((gint64)1 << (2 * k)) - 1) / 3));
  return weir_expr_mul_const(vol, 3 * (((gint64)1 << k) - 1));
}

static const WeirOpAttrSpec resize_attrs[] = {
    {"antialias", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"axes", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"coordinate_transformation_mode", WEIR_ATTR_STRING, FALSE, "half_pixel", 0,
     0},
    {"cubic_coeff_a", WEIR_ATTR_FLOAT, FALSE, "-0.75", 0, 0},
    {"exclude_outside", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"extrapolation_value", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
    {"keep_aspect_ratio_policy", WEIR_ATTR_STRING, FALSE, NULL, 0, 0},
    {"mode", WEIR_ATTR_STRING, FALSE, "nearest", 0, 0},
    {"nearest_mode", WEIR_ATTR_STRING, FALSE, "round_prefer_floor", 0, 0},
    {"roi", WEIR_ATTR_FLOATS, FALSE, NULL, 2, 11},
    {"scales", WEIR_ATTR_FLOATS, FALSE, NULL, 3, 11},
    {"sizes", WEIR_ATTR_INTS, FALSE, NULL, 4, 11},
};

/* Upsample: the checks of its own, then Resize's inference (which reads
 * the asymmetric coordinates and floor rounding of Upsample). */
static gboolean infer_upsample(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (ctx->n_inputs < 1 || !ctx->inputs[0].present)
    return weir_node_fail(error, INVALID, n, "input 0 is missing");
  if (ctx->n_inputs > 1 && ctx->inputs[1].present)
    return weir_node_fail(error, UNSUPPORTED, n,
                          "input 1 'scales' must be known at import");
  const char *mode = weir_node_attr_string(n, "mode", "nearest");
  if (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0)
    return weir_node_fail(error, INVALID, n,
                          "mode '%s' (expected nearest or linear)", mode);
  const GArray *scales = floats_attr(n, "scales");
  if (!scales)
    return weir_node_fail(error, INVALID, n, "'scales' must be given");
  for (guint d = 0; d < scales->len; d++)
    if (!(g_array_index(scales, double, d) >= 1))
      return weir_node_fail(error, INVALID, n,
                            "scales[%u] is %g (Upsample's scales are at "
                            "least 1)",
                            d, g_array_index(scales, double, d));
  return infer_resize(ctx, error);
}

static const WeirOpAttrSpec upsample_attrs[] = {
    {"mode", WEIR_ATTR_STRING, FALSE, "nearest", 0, 0},
    {"scales", WEIR_ATTR_FLOATS, FALSE, NULL, 2, 9},
};

/* ------------------------------------------------------------ GridSample
 *
 * GridSample (opset 16): X [N, C, H, W] sampled at the normalized
 * coordinates of Grid [N, Ho, Wo, 2] (x, the width coordinate, first) gives
 * Y [N, C, Ho, Wo]; modes bilinear, nearest, bicubic, padding_mode zeros,
 * border, reflection, align_corners.  Only the 2-D form (rank 4) exists
 * at opsets 16 and 17.  FLOPs per output element: bilinear 9 (3 for each of
 * the 3 interpolations, as Resize counts n-linear), bicubic 35 (7 per
 * combination of 4 values, 5 combinations), nearest 0; the coordinate and
 * weight arithmetic is index computation and is not counted. */

/* The element count of output 0 of n, or NULL when it is not wired.
 * (transfer full) */
static WeirExpr *output_volume(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n) {
  const WeirMemlet *mo =
      weir_state_connector_memlet(s, n->id, "out0", FALSE, TRUE);
  const WeirContainer *y = mo ? weir_graph_container(g, mo->data) : NULL;
  return y ? weir_container_volume(y) : NULL;
}

static gboolean gridsample_mode(const WeirNode *n, guint *taps,
                                GError **error) {
  const char *mode = weir_node_attr_string(n, "mode", "bilinear");
  const char *pad = weir_node_attr_string(n, "padding_mode", "zeros");
  if (strcmp(mode, "bilinear") == 0)
    *taps = 2;
  else if (strcmp(mode, "nearest") == 0)
    *taps = 1;
  else if (strcmp(mode, "bicubic") == 0)
    *taps = 4;
  else
    return weir_node_fail(error, INVALID, n,
                          "mode '%s' (expected bilinear, nearest or bicubic)",
                          mode);
  if (strcmp(pad, "zeros") != 0 && strcmp(pad, "border") != 0 &&
      strcmp(pad, "reflection") != 0)
    return weir_node_fail(
        error, INVALID, n,
        "padding_mode '%s' (expected zeros, border or reflection)", pad);
  return TRUE;
}

static gboolean infer_gridsample(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *grid = x ? weir_op_require_input(ctx, 1, error) : NULL;
  guint taps;
  if (!grid || !gridsample_mode(n, &taps, error))
    return FALSE;
  if (!weir_dtype_is_float(x->dtype) || !weir_dtype_is_float(grid->dtype))
    return weir_node_fail(
        error, INVALID, n, "X (%s) and Grid (%s) must be floating point",
        weir_dtype_name(x->dtype), weir_dtype_name(grid->dtype));
  if (x->rank != 4)
    return weir_node_fail(error, UNSUPPORTED, n,
                          "X has rank %u (only the 2-D form, rank 4, is "
                          "supported)",
                          x->rank);
  gint64 two;
  if (grid->rank != 4 || !weir_expr_is_const(grid->shape[3], &two) || two != 2)
    return weir_node_fail(error, INVALID, n,
                          "Grid must have shape [N, H_out, W_out, 2]");
  if (!weir_expr_equal(x->shape[0], grid->shape[0])) {
    g_autofree char *a = weir_expr_to_string(x->shape[0]);
    g_autofree char *b = weir_expr_to_string(grid->shape[0]);
    return weir_node_fail(error, INVALID, n,
                          "X has batch %s but Grid has batch %s", a, b);
  }
  WeirExpr *shape[4] = {x->shape[0], x->shape[1], grid->shape[1],
                        grid->shape[2]};
  weir_op_set_output(ctx, 0, x->dtype, 4, shape);
  return TRUE;
}

static WeirExpr *flops_gridsample(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n) {
  g_autoptr(WeirExpr) vol = output_volume(g, s, n);
  guint taps;
  if (!vol || !gridsample_mode(n, &taps, NULL))
    return NULL;
  return weir_expr_mul_const(vol, taps == 4 ? 35 : taps == 2 ? 9 : 0);
}

static const WeirOpAttrSpec gridsample_attrs[] = {
    {"align_corners", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"mode", WEIR_ATTR_STRING, FALSE, "bilinear", 0, 0},
    {"padding_mode", WEIR_ATTR_STRING, FALSE, "zeros", 0, 0},
};

/* -------------------------------------------------------------- RoiAlign
 *
 * RoiAlign (opsets 10 and 16): X [N, C, H, W], rois [R, 4] (x1, y1, x2,
 * y2), batch_indices [R] give Y [R, C, output_height, output_width], each
 * bin the average (mode avg) or maximum (mode max) of
 * sampling_ratio x sampling_ratio bilinear samples.  The adaptive sampling
 * (sampling_ratio 0: ceil(roi size / bins) samples, which depends on the
 * data) is refused.  FLOPs per output element: per sample the bilinear
 * combination of 4 values (4 products, 3 sums) and the accumulation, 8,
 * and 1 for the average's division. */

static gboolean roialign_check(const WeirNode *n, gint64 *grid,
                               GError **error) {
  const char *mode = weir_node_attr_string(n, "mode", "avg");
  const char *coord =
      weir_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
  if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
    return weir_node_fail(error, INVALID, n, "mode '%s' (expected avg or max)",
                          mode);
  if (strcmp(coord, "half_pixel") != 0 &&
      strcmp(coord, "output_half_pixel") != 0)
    return weir_node_fail(error, INVALID, n,
                          "coordinate_transformation_mode '%s' (expected "
                          "half_pixel or output_half_pixel)",
                          coord);
  gint64 oh = weir_node_attr_int(n, "output_height", 1);
  gint64 ow = weir_node_attr_int(n, "output_width", 1);
  if (oh < 1 || ow < 1)
    return weir_node_fail(error, INVALID, n,
                          "output_height and output_width must be positive");
  gint64 sr = weir_node_attr_int(n, "sampling_ratio", 0);
  if (sr < 0)
    return weir_node_fail(error, INVALID, n,
                          "sampling_ratio %" G_GINT64_FORMAT " is negative",
                          sr);
  if (sr == 0)
    return weir_node_fail(error, UNSUPPORTED, n,
                          "sampling_ratio 0 (adaptive: the number of samples "
                          "depends on the regions' sizes)");
  if (sr > 8)
    return weir_node_fail(error, UNSUPPORTED, n,
                          "sampling_ratio %" G_GINT64_FORMAT " (at most 8)",
                          sr);
  *grid = sr;
  return TRUE;
}

static gboolean infer_roialign(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *rois = x ? weir_op_require_input(ctx, 1, error) : NULL;
  const WeirOpValue *bi = rois ? weir_op_require_input(ctx, 2, error) : NULL;
  gint64 grid, four;
  if (!bi || !roialign_check(n, &grid, error))
    return FALSE;
  if (x->rank != 4 || !weir_dtype_is_float(x->dtype))
    return weir_node_fail(error, INVALID, n,
                          "X must be a floating [N, C, H, W] tensor");
  if (rois->rank != 2 || rois->dtype != x->dtype ||
      !weir_expr_is_const(rois->shape[1], &four) || four != 4)
    return weir_node_fail(error, INVALID, n,
                          "rois must be [num_rois, 4] of X's dtype");
  if (bi->rank != 1 ||
      (bi->dtype != WEIR_DTYPE_I64 && bi->dtype != WEIR_DTYPE_I32) ||
      !weir_expr_equal(bi->shape[0], rois->shape[0]))
    return weir_node_fail(error, INVALID, n,
                          "batch_indices must be an integer vector of "
                          "num_rois elements");
  g_autoptr(WeirExpr) oh =
      weir_expr_const(weir_node_attr_int(n, "output_height", 1));
  g_autoptr(WeirExpr) ow =
      weir_expr_const(weir_node_attr_int(n, "output_width", 1));
  WeirExpr *shape[4] = {rois->shape[0], x->shape[1], oh, ow};
  weir_op_set_output(ctx, 0, x->dtype, 4, shape);
  return TRUE;
}

static WeirExpr *flops_roialign(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n) {
  g_autoptr(WeirExpr) vol = output_volume(g, s, n);
  gint64 grid;
  if (!vol || !roialign_check(n, &grid, NULL))
    return NULL;
  return weir_expr_mul_const(vol, 8 * grid * grid + 1);
}

static const WeirOpAttrSpec roialign_attrs[] = {
    {"coordinate_transformation_mode", WEIR_ATTR_STRING, FALSE, "half_pixel", 0,
     0},
    {"mode", WEIR_ATTR_STRING, FALSE, "avg", 0, 0},
    {"output_height", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"output_width", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"sampling_ratio", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"spatial_scale", WEIR_ATTR_FLOAT, FALSE, "1", 0, 0},
};

#define OP(name_, min_in, max_in, attrs_, infer_, flops_)                      \
  {                                                                            \
    .name = name_, .min_inputs = min_in, .max_inputs = max_in,                 \
    .min_outputs = 1, .max_outputs = 1, .attrs = attrs_,                       \
    .n_attrs = G_N_ELEMENTS(attrs_), .infer = infer_, .flops = flops_,         \
  }

static const WeirOpInfo resampling_ops[] = {
    OP("Resize", 1, 4, resize_attrs, infer_resize, flops_resize),
    OP("Upsample", 1, 2, upsample_attrs, infer_upsample, flops_resize),
    OP("GridSample", 2, 2, gridsample_attrs, infer_gridsample,
       flops_gridsample),
    OP("RoiAlign", 3, 3, roialign_attrs, infer_roialign, flops_roialign),
};

void weir_ops_register_resize(void) {
  for (guint i = 0; i < G_N_ELEMENTS(resampling_ops); i++)
    weir_op_register(&resampling_ops[i]);
}
