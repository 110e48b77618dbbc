/* signal.c — the pure expansions of the spectral operators DFT, STFT and
 * MelWeightMatrix (schemas and inference in ir/ops/signal.c).
 *
 *  - DFT and STFT are direct sums: an initialization of the output to 0,
 *    then one map over (output element, sample) whose tasklet adds the
 *    sample's contribution to one component (real or imaginary) of one
 *    frequency, a WCR sum.  The angle 2 pi (k n mod N) / N is computed in
 *    f64 from the integer product reduced modulo N, so it stays exact for
 *    long transforms.  Forward: re += xr cos + xi sin, im += xi cos - xr sin;
 *    inverse (DFT): re += xr cos - xi sin, im += xi cos + xr sin, each
 *    divided by N.  A real signal has xi = 0.  DFT sums the first min(N, L)
 *    samples of the axis (dft_length pads with zeros or truncates); STFT
 *    sums frame f's samples f * frame_step + n, times window[n] when a
 *    window is given.
 *  - MelWeightMatrix is one map over [dft_length / 2 + 1, num_mel_bins]
 *    computing ONNX's triangular filters: the mel scale's edges
 *    (2595 log10(1 + hz / 700)) are constants of the expansion, the band
 *    edges of filter i the bins floor((dft_length + 1) f / sample_rate) of
 *    the frequencies f at mel steps i, i + 1 and i + 2 (the band split into
 *    num_mel_bins + 2 steps, as ONNX's reference does), computed in f64 by
 *    the tasklet.
 */
#include <math.h>
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_signal(void);

/* y = 0 over the whole of port y, returning the access node written (the
 * one the sum map must come after). */
static WeirNode *zero_init(WeirGraph *g, WeirState *s, const WeirNode *n,
                           WeirPort *y, GError **error) {
  WeirNode *first = weir_state_add_access(g, s, y->container->name);
  g_auto(GStrv) p = weir_expand_fresh_params(g, y->rank);
  g_autofree char *at =
      weir_expand_index_subset(y->rank, (const char *const *)p);
  g_auto(GStrv) ranges = weir_expand_full_ranges(y->rank, y->shape);
  WeirTaskletPort out = {first, "y", at, WEIR_WCR_NONE};
  g_autofree char *label = g_strdup_printf("%s_init", n->label);
  if (!weir_expand_map(g, s, label, y->rank, (const char *const *)p,
                       (const char *const *)ranges, NULL, 0, &out, 1, "y = 0",
                       NULL, 0, error))
    return NULL;
  return first;
}

/* The tasklet text adding the contribution of sample n (parameter `np`) to
 * component `cp` of frequency `kp`, transform length code `len`. */
static char *dft_term(const char *kp, const char *np, const char *cp,
                      const char *len, gboolean complex_in, gboolean inverse,
                      const char *weight) {
  GString *c = g_string_new(NULL);
  g_string_append_printf(c,
                         "th = 6.283185307179586 * f64((%s * %s) %% (%s)) / "
                         "f64(%s)\n"
                         "cs = cos(th)\nsn = sin(th)\nre = f64(xr)%s\n",
                         kp, np, len, len, weight);
  if (complex_in)
    g_string_append_printf(c, "im = f64(xi)%s\n", weight);
  else
    g_string_append(c, "im = 0.0\n");
  if (inverse)
    g_string_append_printf(c,
                           "y = (%s == 0 ? re * cs - im * sn : im * cs + re * "
                           "sn) / f64(%s)\n",
                           cp, len);
  else
    g_string_append_printf(
        c, "y = %s == 0 ? re * cs + im * sn : im * cs - re * sn\n", cp);
  return g_string_free(c, FALSE);
}

static gboolean expand_dft(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  if (weir_node_has_in_conn(n, "in1"))
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "input 1 (dft_length) must be known at import");
  guint r = x.rank, axis;
  g_autoptr(WeirExpr) len = NULL;
  if (y.rank != r || !weir_op_dft_geometry(n, r, x.shape, &axis, &len, error))
    return y.rank == r
               ? FALSE
               : weir_node_fail(error, WEIR_ERROR_INVALID, n,
                                "input rank %u, output rank %u", r, y.rank);
  gint64 comps = 0;
  weir_expr_is_const(x.shape[r - 1], &comps);
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  WeirNode *first = zero_init(g, s, n, &y, error);
  if (!first)
    return FALSE;
  /* parameters: the output's, then the sample index */
  g_auto(GStrv) p = weir_expand_fresh_params(g, r + 1);
  g_autoptr(GPtrArray) shape = g_ptr_array_new();
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(shape, y.shape[d]);
  g_autoptr(WeirExpr) summed = weir_expr_min(len, x.shape[axis]);
  g_ptr_array_add(shape, summed);
  g_auto(GStrv) ranges =
      weir_expand_full_ranges(r + 1, (WeirExpr *const *)shape->pdata);
  GString *xr = g_string_new(NULL), *xi = g_string_new(NULL);
  for (guint d = 0; d < r; d++) {
    const char *sep = d ? ", " : "";
    const char *at = d == axis ? p[r] : p[d];
    g_string_append_printf(xr, "%s%s", sep, d == r - 1 ? "0" : at);
    g_string_append_printf(xi, "%s%s", sep, d == r - 1 ? "1" : at);
  }
  g_autofree char *xr_sub = g_string_free(xr, FALSE);
  g_autofree char *xi_sub = g_string_free(xi, FALSE);
  g_autofree char *out_sub =
      weir_expand_index_subset(r, (const char *const *)p);
  g_autofree char *len_code = weir_expand_expr_code(len);
  gboolean inverse = weir_node_attr_int(n, "inverse", 0) != 0;
  g_autofree char *code =
      dft_term(p[axis], p[r], p[r - 1], len_code, comps == 2, inverse, "");
  WeirTaskletPort ins[2] = {{x.access, "xr", xr_sub, WEIR_WCR_NONE},
                            {x.access, "xi", xi_sub, WEIR_WCR_NONE}};
  WeirTaskletPort out = {y.access, "y", out_sub, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_sum", n->label);
  if (!weir_expand_map(g, s, label, r + 1, (const char *const *)p,
                       (const char *const *)ranges, ins, comps == 2 ? 2 : 1,
                       &out, 1, code, &first, 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_stft(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  WeirPort x, y, w;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  if (weir_node_has_in_conn(n, "in1") || weir_node_has_in_conn(n, "in3"))
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "frame_step and frame_length must be known at "
                          "import");
  g_autoptr(GError) none = NULL;
  gboolean windowed = weir_port_input(g, s, n, 2, &w, &none);
  if (none) {
    g_propagate_error(error, g_steal_pointer(&none));
    return FALSE;
  }
  gint64 comps = 0, step = weir_node_attr_int(n, "frame_step", 0), fl = 0;
  if (x.rank != 3 || y.rank != 4 || !weir_expr_is_const(x.shape[2], &comps) ||
      !weir_expr_is_const(y.shape[2], &fl) || step < 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "expected a signal [batch, length, 1 or 2], an "
                          "output [batch, frames, bins, 2] and frame_step "
                          ">= 1");
  /* the frame length: the attribute, else the window's */
  fl = weir_node_attr_int(n, "frame_length", 0);
  if (fl < 1 && !(windowed && weir_expr_is_const(w.shape[0], &fl)))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "needs frame_length or a window of known length");
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  WeirNode *first = zero_init(g, s, n, &y, error);
  if (!first)
    return FALSE;
  g_auto(GStrv) p = weir_expand_fresh_params(g, 5);
  g_autoptr(WeirExpr) fle = weir_expr_const(fl);
  WeirExpr *shape[5] = {y.shape[0], y.shape[1], y.shape[2], y.shape[3], fle};
  g_auto(GStrv) ranges = weir_expand_full_ranges(5, shape);
  g_autofree char *xr_sub = g_strdup_printf(
      "%s, %s * %" G_GINT64_FORMAT " + %s, 0", p[0], p[1], step, p[4]);
  g_autofree char *xi_sub = g_strdup_printf(
      "%s, %s * %" G_GINT64_FORMAT " + %s, 1", p[0], p[1], step, p[4]);
  g_autofree char *out_sub =
      weir_expand_index_subset(4, (const char *const *)p);
  g_autofree char *len_code = g_strdup_printf("%" G_GINT64_FORMAT, fl);
  g_autofree char *code = dft_term(p[2], p[4], p[3], len_code, comps == 2,
                                   FALSE, windowed ? " * f64(w)" : "");
  WeirTaskletPort ins[3];
  guint n_ins = 0;
  ins[n_ins++] = (WeirTaskletPort){x.access, "xr", xr_sub, WEIR_WCR_NONE};
  if (comps == 2)
    ins[n_ins++] = (WeirTaskletPort){x.access, "xi", xi_sub, WEIR_WCR_NONE};
  if (windowed)
    ins[n_ins++] = (WeirTaskletPort){w.access, "w", p[4], WEIR_WCR_NONE};
  WeirTaskletPort out = {y.access, "y", out_sub, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_sum", n->label);
  if (!weir_expand_map(g, s, label, 5, (const char *const *)p,
                       (const char *const *)ranges, ins, n_ins, &out, 1, code,
                       &first, 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_mel(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  for (guint k = 0; k < 5; k++) {
    g_autofree char *conn = g_strdup_printf("in%u", k);
    if (weir_node_has_in_conn(n, conn))
      return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                            "input %u must be known at import", k);
  }
  gint64 bins = weir_node_attr_int(n, "num_mel_bins", 0);
  gint64 dft = weir_node_attr_int(n, "dft_length", 0);
  gint64 rate = weir_node_attr_int(n, "sample_rate", 0);
  double lo = weir_node_attr_float(n, "lower_edge_hertz", -1);
  double hi = weir_node_attr_float(n, "upper_edge_hertz", -1);
  if (bins < 1 || dft < 1 || rate < 1 || !(lo >= 0) || !(hi > lo) ||
      y.rank != 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "needs positive num_mel_bins, dft_length and "
                          "sample_rate, 0 <= lower_edge_hertz < "
                          "upper_edge_hertz and an output of rank 2");
  double lo_mel = 2595 * log10(1 + lo / 700);
  double hi_mel = 2595 * log10(1 + hi / 700);
  g_autofree char *ml = weir_expand_float_literal(lo_mel);
  g_autofree char *ms =
      weir_expand_float_literal((hi_mel - lo_mel) / (double)(bins + 2));
  g_auto(GStrv) p = weir_expand_fresh_params(g, 2);
  GString *c = g_string_new(NULL);
  static const char *const edge[] = {"l", "c", "h"};
  for (guint e = 0; e < 3; e++)
    g_string_append_printf(c,
                           "mel_%s = floor(%" G_GINT64_FORMAT
                           " * (700 * (pow(10.0, (f64(%s + %u) * %s + %s) / "
                           "2595) - 1)) / %" G_GINT64_FORMAT ")\n",
                           edge[e], dft + 1, p[1], e, ms, ml, rate);
  g_string_append_printf(
      c,
      "mel_v = %s >= mel_l && %s <= mel_c ? (mel_c == mel_l ? 1.0 : (%s - "
      "mel_l) / (mel_c - mel_l)) : 0.0\n"
      "y = %s >= mel_c && %s < mel_h ? (mel_h - %s) / (mel_h - mel_c) : "
      "mel_v\n",
      p[0], p[0], p[0], p[0], p[0], p[0]);
  g_autofree char *code = g_string_free(c, FALSE);
  g_autofree char *out_sub =
      weir_expand_index_subset(2, (const char *const *)p);
  g_auto(GStrv) ranges = weir_expand_full_ranges(2, y.shape);
  WeirTaskletPort out = {y.access, "y", out_sub, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, n->label, 2, (const char *const *)p,
                       (const char *const *)ranges, NULL, 0, &out, 1, code,
                       NULL, 0, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

void weir_expand_register_signal(void) {
  weir_op_register_expansion("DFT", "pure", expand_dft);
  weir_op_register_expansion("STFT", "pure", expand_stft);
  weir_op_register_expansion("MelWeightMatrix", "pure", expand_mel);
}
