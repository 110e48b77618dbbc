/* signal.c — schemas, inference and FLOP counts of the spectral operators
 * of opset 17 (expansions in ir/lower/expand/signal.c):
 *
 *   DFT              axis, inverse, onesided, dft_length (from input 1)
 *   STFT             onesided, frame_step (from input 1), frame_length
 *                    (from input 3); the window is input 2, data
 *   MelWeightMatrix  num_mel_bins, dft_length, sample_rate (from inputs 0
 *                    to 2), lower_edge_hertz, upper_edge_hertz (from inputs
 *                    3 and 4), output_datatype
 *
 * Complex values are ONNX's layout: a last axis of 2 (real, imaginary); a
 * real signal has a last axis of 1.  The lengths that decide the output's
 * shape must be known at import (they are attributes).
 *
 * FLOPs: DFT and STFT are computed as direct sums (not an FFT): per output
 * element (one component of one frequency) and per signal sample summed,
 * 2 products and a sum for the component, 1 product by the window (STFT
 * with a window), and the accumulation: 4 (5 with a window).  The angle's
 * cosine and sine are index arithmetic and are not counted.
 * MelWeightMatrix counts 0 (a table computed from constants).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_signal(void);

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

/* The last axis of a signal: 1 (real) or 2 (complex). */
static gboolean signal_components(const WeirNode *n, const WeirOpValue *x,
                                  guint min_rank, guint *comps,
                                  GError **error) {
  gint64 c = 0;
  if (x->rank < min_rank || !weir_expr_is_const(x->shape[x->rank - 1], &c) ||
      (c != 1 && c != 2))
    return weir_node_fail(error, INVALID, n,
                          "input 0 must have rank %u or more and a last "
                          "dimension of 1 (real) or 2 (complex)",
                          min_rank);
  if (!weir_dtype_is_float(x->dtype))
    return weir_node_fail(error, INVALID, n,
                          "input 0 has dtype %s, expected a floating type",
                          weir_dtype_name(x->dtype));
  *comps = (guint)c;
  return TRUE;
}

/* ------------------------------------------------------------------ DFT */

gboolean weir_op_dft_geometry(const WeirNode *n, guint rank,
                              WeirExpr *const *shape, guint *axis,
                              WeirExpr **length, GError **error) {
  gint64 a = weir_node_attr_int(n, "axis", 1);
  if (!weir_op_normalize_axis(n, "axis", a, rank, FALSE, axis, error))
    return FALSE;
  if (*axis == rank - 1)
    return weir_node_fail(error, INVALID, n,
                          "axis %" G_GINT64_FORMAT
                          " is the last axis (the complex components)",
                          a);
  const WeirAttr *len = weir_node_attr(n, "dft_length");
  if (len && len->type == WEIR_ATTR_INT) {
    if (len->i < 1)
      return weir_node_fail(error, INVALID, n,
                            "dft_length %" G_GINT64_FORMAT " is not positive",
                            len->i);
    *length = weir_expr_const(len->i);
  } else {
    *length = weir_expr_ref(shape[*axis]);
  }
  return TRUE;
}

static gboolean infer_dft(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  guint comps, axis;
  if (!x || !signal_components(n, x, 2, &comps, error))
    return FALSE;
  if (weir_op_input(ctx, 1))
    return weir_node_fail(error, UNSUPPORTED, n,
                          "input 1 (dft_length) must be known at import");
  g_autoptr(WeirExpr) len = NULL;
  if (!weir_op_dft_geometry(n, x->rank, x->shape, &axis, &len, error))
    return FALSE;
  gboolean onesided = weir_node_attr_int(n, "onesided", 0) != 0;
  gboolean inverse = weir_node_attr_int(n, "inverse", 0) != 0;
  if (onesided && inverse)
    return weir_node_fail(error, UNSUPPORTED, n,
                          "onesided = 1 with inverse = 1 (the other half of "
                          "the spectrum would be needed)");
  g_autoptr(GPtrArray) shape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < x->rank; d++) {
    if (d == axis && onesided) {
      g_autoptr(WeirExpr) c2 = weir_expr_const(2);
      g_autoptr(WeirExpr) half = weir_expr_floordiv(len, c2);
      g_ptr_array_add(shape, weir_expr_add_const(half, 1));
    } else if (d == axis) {
      g_ptr_array_add(shape, weir_expr_ref(len));
    } else if (d == x->rank - 1) {
      g_ptr_array_add(shape, weir_expr_const(2));
    } else {
      g_ptr_array_add(shape, weir_expr_ref(x->shape[d]));
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  return TRUE;
}

static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, const char *conn,
                                           gboolean in) {
  const WeirMemlet *m = weir_state_connector_memlet(s, n->id, conn, in, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

/* output volume x samples summed x (4, or 5 with a window) */
static WeirExpr *flops_dft(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, "in0", TRUE);
  const WeirContainer *y = conn_container(g, s, n, "out0", FALSE);
  if (!x || !y)
    return NULL;
  guint axis;
  g_autoptr(WeirExpr) len = NULL;
  if (!weir_op_dft_geometry(n, x->shape->len,
                            (WeirExpr *const *)x->shape->pdata, &axis, &len,
                            NULL))
    return NULL;
  g_autoptr(WeirExpr) summed =
      weir_expr_min(len, g_ptr_array_index(x->shape, axis));
  g_autoptr(WeirExpr) vol = weir_container_volume(y);
  g_autoptr(WeirExpr) work = weir_expr_mul(vol, summed);
  return weir_expr_mul_const(work, 4);
}

/* ----------------------------------------------------------------- STFT */

/* frame_length (from the attribute or the window's length), or 0 with an
 * error. */
static gint64 stft_frame_length(const WeirNode *n, WeirExpr *window_len,
                                GError **error) {
  const WeirAttr *fl = weir_node_attr(n, "frame_length");
  gint64 w = -1;
  if (window_len && !weir_expr_is_const(window_len, &w)) {
    weir_node_fail(error, UNSUPPORTED, n,
                   "the window must have a length known at import");
    return 0;
  }
  if (fl && fl->type == WEIR_ATTR_INT) {
    if (fl->i < 1) {
      weir_node_fail(error, INVALID, n,
                     "frame_length %" G_GINT64_FORMAT " is not positive",
                     fl->i);
      return 0;
    }
    if (window_len && w != fl->i) {
      weir_node_fail(error, INVALID, n,
                     "frame_length %" G_GINT64_FORMAT
                     " but the window has %" G_GINT64_FORMAT " elements",
                     fl->i, w);
      return 0;
    }
    return fl->i;
  }
  if (!window_len || w < 1) {
    weir_node_fail(error, INVALID, n,
                   "needs frame_length (input 3) or a non-empty window "
                   "(input 2)");
    return 0;
  }
  return w;
}

static gboolean infer_stft(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  guint comps;
  if (!x || !signal_components(n, x, 3, &comps, error))
    return FALSE;
  if (x->rank != 3)
    return weir_node_fail(error, INVALID, n,
                          "the signal must be [batch, length, 1 or 2]");
  if (weir_op_input(ctx, 1) || weir_op_input(ctx, 3))
    return weir_node_fail(error, UNSUPPORTED, n,
                          "frame_step (input 1) and frame_length (input 3) "
                          "must be known at import");
  const WeirAttr *step = weir_node_attr(n, "frame_step");
  if (!step || step->type != WEIR_ATTR_INT || step->i < 1)
    return weir_node_fail(error, INVALID, n,
                          "frame_step must be a positive integer");
  const WeirOpValue *w = weir_op_input(ctx, 2);
  if (w && (w->rank != 1 || w->dtype != x->dtype))
    return weir_node_fail(error, INVALID, n,
                          "the window must be a vector of the signal's dtype");
  gint64 fl = stft_frame_length(n, w ? w->shape[0] : NULL, error);
  if (fl == 0)
    return FALSE;
  gint64 len;
  g_autoptr(WeirExpr) frames = NULL;
  if (weir_expr_is_const(x->shape[1], &len)) {
    if (len < fl)
      return weir_node_fail(
          error, INVALID, n,
          "the signal (%" G_GINT64_FORMAT
          " samples) is shorter than a frame (%" G_GINT64_FORMAT ")",
          len, fl);
    frames = weir_expr_const(1 + (len - fl) / step->i);
  } else {
    g_autoptr(WeirExpr) rest = weir_expr_add_const(x->shape[1], -fl);
    g_autoptr(WeirExpr) st = weir_expr_const(step->i);
    g_autoptr(WeirExpr) q = weir_expr_floordiv(rest, st);
    frames = weir_expr_add_const(q, 1);
  }
  gboolean onesided = weir_node_attr_int(n, "onesided", 1) != 0;
  g_autoptr(WeirExpr) bins = weir_expr_const(onesided ? fl / 2 + 1 : fl);
  g_autoptr(WeirExpr) two = weir_expr_const(2);
  WeirExpr *shape[4] = {x->shape[0], frames, bins, two};
  weir_op_set_output(ctx, 0, x->dtype, 4, shape);
  return TRUE;
}

static WeirExpr *flops_stft(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  const WeirContainer *w = conn_container(g, s, n, "in2", TRUE);
  const WeirContainer *y = conn_container(g, s, n, "out0", FALSE);
  if (!y)
    return NULL;
  gint64 fl =
      stft_frame_length(n, w ? g_ptr_array_index(w->shape, 0) : NULL, NULL);
  if (fl == 0)
    return NULL;
  g_autoptr(WeirExpr) vol = weir_container_volume(y);
  return weir_expr_mul_const(vol, fl * (w ? 5 : 4));
}

/* ------------------------------------------------------- MelWeightMatrix */

static gboolean infer_mel(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  for (guint k = 0; k < 5; k++)
    if (weir_op_input(ctx, k))
      return weir_node_fail(error, UNSUPPORTED, n,
                            "input %u must be known at import", k);
  static const char *const ints[] = {"num_mel_bins", "dft_length",
                                     "sample_rate"};
  gint64 v[3];
  for (guint k = 0; k < 3; k++) {
    const WeirAttr *a = weir_node_attr(n, ints[k]);
    if (!a || a->type != WEIR_ATTR_INT || a->i < 1)
      return weir_node_fail(error, INVALID, n, "%s must be a positive integer",
                            ints[k]);
    v[k] = a->i;
  }
  double lo = weir_node_attr_float(n, "lower_edge_hertz", -1);
  double hi = weir_node_attr_float(n, "upper_edge_hertz", -1);
  if (!(lo >= 0) || !(hi > lo))
    return weir_node_fail(error, INVALID, n,
                          "needs 0 <= lower_edge_hertz (%g) < "
                          "upper_edge_hertz (%g)",
                          lo, hi);
  gint64 odt = weir_node_attr_int(n, "output_datatype", 1);
  WeirDType t;
  if (odt == 1)
    t = WEIR_DTYPE_F32;
  else if (odt == 11)
    t = WEIR_DTYPE_F64;
  else
    return weir_node_fail(error, UNSUPPORTED, n,
                          "output_datatype %" G_GINT64_FORMAT
                          " (Weir gives FLOAT or DOUBLE)",
                          odt);
  WeirExpr *shape[2] = {weir_expr_const(v[1] / 2 + 1), weir_expr_const(v[0])};
  weir_op_set_output(ctx, 0, t, 2, shape);
  weir_expr_unref(shape[0]);
  weir_expr_unref(shape[1]);
  return TRUE;
}

/* --------------------------------------------------------------- schemas */

static const WeirOpAttrSpec dft_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"dft_length", WEIR_ATTR_INT, FALSE, NULL, 2, 17},
    {"inverse", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"onesided", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec stft_attrs[] = {
    {"frame_length", WEIR_ATTR_INT, FALSE, NULL, 4, 17},
    {"frame_step", WEIR_ATTR_INT, FALSE, NULL, 2, 17},
    {"onesided", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
static const WeirOpAttrSpec mel_attrs[] = {
    {"dft_length", WEIR_ATTR_INT, FALSE, NULL, 2, 17},
    {"lower_edge_hertz", WEIR_ATTR_FLOAT, FALSE, NULL, 4, 17},
    {"num_mel_bins", WEIR_ATTR_INT, FALSE, NULL, 1, 17},
    {"output_datatype", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"sample_rate", WEIR_ATTR_INT, FALSE, NULL, 3, 17},
    {"upper_edge_hertz", WEIR_ATTR_FLOAT, FALSE, NULL, 5, 17},
};

#define OP(name_, min_in, max_in, attrs_, infer_, flops_)                      \
  {                                                                            \
    .name = name_, .min_inputs = min_in, .max_inputs = max_in,                 \
    .min_outputs = 1, .max_outputs = 1, .attrs = attrs_,                       \
    .n_attrs = G_N_ELEMENTS(attrs_), .infer = infer_, .flops = flops_,         \
  }

static const WeirOpInfo signal_ops[] = {
    OP("DFT", 1, 2, dft_attrs, infer_dft, flops_dft),
    OP("STFT", 2, 4, stft_attrs, infer_stft, flops_stft),
    OP("MelWeightMatrix", 0, 5, mel_attrs, infer_mel, weir_op_flops_zero),
};

void weir_ops_register_signal(void) {
  for (guint i = 0; i < G_N_ELEMENTS(signal_ops); i++)
    weir_op_register(&signal_ops[i]);
}
