/* resize.c — the pure expansions of Resize (and Upsample, which is
 * Resize with asymmetric coordinates and floor rounding), GridSample and
 * RoiAlign (schemas and inference in ir/ops/resize.c).  GridSample and
 * RoiAlign are described above their expansions.
 *
 * One map over the output.  Axes that are not resized
 * (weir_op_resize_keeps_axis) read the input at the output's index (or at 0
 * for an input of size 1) through the memlet subset; each resized axis d
 * is read whole through an indexed connector, and the tasklet computes the
 * source coordinate of output index p:
 *
 *   half_pixel            (p + 0.5) / scale - 0.5
 *   pytorch_half_pixel    the same, or 0 when the output length is 1
 *   align_corners         p * (in - 1) / (len - 1), or 0 when len is 1
 *   asymmetric            p / scale
 *   tf_half_pixel_for_nn  (p + 0.5) / scale
 *   tf_crop_and_resize    start * (in - 1) + p * (end - start) * (in - 1)
 *                         / (len - 1), or (start + end) / 2 * (in - 1)
 *                         when len is 1 (start, end: the axis's `roi`);
 *                         a coordinate outside [0, in - 1] on any resized
 *                         axis gives extrapolation_value
 *
 * where scale is `scales[d]`, or out / in when `sizes` was given, and the
 * output length len is `in * scales[d]` unrounded (as ONNX defines it), or
 * the size.
 * "nearest" rounds it (round_prefer_floor: ceil(c - 0.5);
 * round_prefer_ceil: floor(c + 0.5); floor; ceil) and clamps it to
 * [0, in - 1].  "linear" reads the two neighbours floor(c) and floor(c) + 1
 * (clamped to the edges) of every resized axis, 2^k corners, and
 * interpolates them one axis at a time: v = a + s * (b - a) with
 * s = c - floor(c).  "cubic" reads the four neighbours floor(c) - 1 ..
 * floor(c) + 2 (clamped), 4^k corners, and combines them one axis at a
 * time with Keys' weights for cubic_coeff_a (with exclude_outside, the
 * weights of neighbours outside the input are 0 and the others are
 * renormalized).  Coordinates and weights are computed in f64.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_resize(void);

/* Map parameters p0, p1, ... unless a program symbol has such a name. */
static char **params_for(const WeirGraph *g, guint rank) {
  static const char *const prefixes[] = {"p", "q", "pp", "qq", "map_p"};
  for (guint k = 0; k < G_N_ELEMENTS(prefixes); k++) {
    char **p = weir_expand_params(prefixes[k], rank);
    gboolean clash = FALSE;
    for (guint i = 0; i < rank && !clash; i++)
      clash = weir_graph_has_symbol(g, p[i]);
    if (!clash)
      return p;
    g_strfreev(p);
  }
  return weir_expand_params("weir_p", rank);
}

/* The tasklet text of the source coordinate of axis d (resized). */
static gboolean coordinate(const WeirNode *n, guint d, const char *p,
                           WeirExpr *in, WeirExpr *out, char **text,
                           GError **error) {
  const char *mode = weir_op_resize_coordinate_mode(n);
  const WeirAttr *sa = weir_node_attr(n, "scales");
  gboolean has_scales =
      sa && sa->type == WEIR_ATTR_FLOATS && sa->floats->len > d;
  gint64 ci = 0, co = 0;
  gboolean in_const = weir_expr_is_const(in, &ci);
  gboolean out_const = weir_expr_is_const(out, &co);
  g_autofree char *in_code = weir_expand_expr_code(in);
  g_autofree char *out_code = weir_expand_expr_code(out);
  g_autofree char *scale = NULL;
  if (has_scales)
    scale = weir_expand_float_literal(g_array_index(sa->floats, double, d));
  else if (in_const && out_const && ci > 0)
    scale = weir_expand_float_literal((double)co / (double)ci);
  else
    scale = g_strdup_printf("(f64(%s) / f64(%s))", out_code, in_code);

  /* The output length the modes divide by: with `scales`, ONNX takes
   * in * scale unrounded (a 4-element axis scaled by 0.6 has length 2.4). */
  gboolean len_known = out_const;
  double len = (double)co;
  if (has_scales && in_const) {
    len_known = TRUE;
    len = (double)ci * g_array_index(sa->floats, double, d);
  }
  if (strcmp(mode, "half_pixel") == 0 ||
      (strcmp(mode, "pytorch_half_pixel") == 0 && len_known && len > 1)) {
    *text = g_strdup_printf("(%s + 0.5) / %s - 0.5", p, scale);
  } else if (strcmp(mode, "pytorch_half_pixel") == 0) {
    *text = len_known ? g_strdup("0.0")
                      : g_strdup_printf("%s > 1 ? (%s + 0.5) / %s - 0.5 : 0.0",
                                        out_code, p, scale);
  } else if (strcmp(mode, "align_corners") == 0) {
    if (len_known && len == 1) {
      *text = g_strdup("0.0");
    } else if (len_known) {
      g_autofree char *den = weir_expand_float_literal(len - 1);
      *text = g_strdup_printf("f64(%s) * (%s - 1) / %s", p, in_code, den);
    } else {
      *text = g_strdup_printf("%s > 1 ? f64(%s) * (%s - 1) / (%s - 1) : 0.0",
                              out_code, p, in_code, out_code);
    }
  } else if (strcmp(mode, "asymmetric") == 0) {
    *text = g_strdup_printf("f64(%s) / %s", p, scale);
  } else if (strcmp(mode, "tf_half_pixel_for_nn") == 0) {
    *text = g_strdup_printf("(%s + 0.5) / %s", p, scale);
  } else if (strcmp(mode, "tf_crop_and_resize") == 0) {
    /* start * (in - 1) + p * (end - start) * (in - 1) / (len - 1), the
     * middle of the region when the output length is 1 */
    const WeirAttr *ra = weir_node_attr(n, "roi");
    guint r = ra && ra->type == WEIR_ATTR_FLOATS ? ra->floats->len / 2 : 0;
    if (d >= r)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "tf_crop_and_resize without a 'roi' for axis %u",
                            d);
    double start = g_array_index(ra->floats, double, d);
    double end = g_array_index(ra->floats, double, r + d);
    g_autofree char *ls = weir_expand_float_literal(start);
    g_autofree char *lw = weir_expand_float_literal(end - start);
    g_autofree char *lm = weir_expand_float_literal(0.5 * (start + end));
    if (len_known && len == 1) {
      *text = g_strdup_printf("(%s) * f64(%s - 1)", lm, in_code);
    } else if (len_known) {
      g_autofree char *den = weir_expand_float_literal(len - 1);
      *text = g_strdup_printf("f64(%s) * (%s) * f64(%s - 1) / %s + (%s) * "
                              "f64(%s - 1)",
                              p, lw, in_code, den, ls, in_code);
    } else {
      *text = g_strdup_printf("%s > 1 ? f64(%s) * (%s) * f64(%s - 1) / "
                              "f64(%s - 1) + (%s) * f64(%s - 1) : (%s) * "
                              "f64(%s - 1)",
                              out_code, p, lw, in_code, out_code, ls, in_code,
                              lm, in_code);
    }
  } else {
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "coordinate_transformation_mode '%s'", mode);
  }
  return TRUE;
}

/* The map `top` built by weir_expand_map reads container `data` whole
 * through an indexed connector: each execution reads `per` elements at
 * data-dependent places (dynamic memlets, volume per x the map's
 * iterations `vol` outside). */
static void mark_indexed_read(WeirState *s, WeirNode *top,
                              const WeirContainer *data, gint64 per,
                              WeirExpr *vol, const char *conn) {
  if (top->kind != WEIR_NODE_MAP_ENTRY)
    return;
  g_autofree char *in_conn = g_strdup_printf("IN_%s", data->name);
  g_autofree char *out_conn = g_strdup_printf("OUT_%s", data->name);
  g_autoptr(WeirExpr) each = weir_expr_const(per);
  g_autoptr(WeirExpr) total = weir_expr_mul(vol, each);
  g_autoptr(GPtrArray) ins = weir_state_in_edges(s, top->id);
  for (guint i = 0; i < ins->len; i++) {
    WeirMemlet *m = g_ptr_array_index(ins, i);
    if (g_strcmp0(m->dst_conn, in_conn) == 0) {
      weir_memlet_set_volume(m, total);
      m->dynamic = TRUE;
    }
  }
  g_autoptr(GPtrArray) outs = weir_state_out_edges(s, top->id);
  for (guint i = 0; i < outs->len; i++) {
    WeirMemlet *m = g_ptr_array_index(outs, i);
    if (g_strcmp0(m->src_conn, out_conn) == 0 &&
        g_strcmp0(m->dst_conn, conn) == 0) {
      weir_memlet_set_volume(m, each);
      m->dynamic = TRUE;
    }
  }
}

static gboolean expand_resize(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  for (guint k = 1; k <= 3; k++) {
    g_autofree char *conn = g_strdup_printf("in%u", k);
    if (weir_node_has_in_conn(n, conn))
      return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                            "input %u must be known (an attribute)", k);
  }
  guint r = y.rank;
  if (x.rank != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input rank %u, output rank %u", x.rank, r);
  const char *mode = weir_node_attr_string(n, "mode", "nearest");
  gboolean linear = strcmp(mode, "linear") == 0;
  gboolean cubic = strcmp(mode, "cubic") == 0;
  if (!linear && !cubic && strcmp(mode, "nearest") != 0)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n, "mode '%s'", mode);
  guint taps = cubic ? 4 : linear ? 2 : 1; /* neighbours read per axis */
  const char *nearest = weir_op_resize_nearest_mode(n);
  /* rounding: function and offset applied to the coordinate */
  const char *round_fn = NULL, *round_off = NULL;
  if (strcmp(nearest, "round_prefer_floor") == 0)
    round_fn = "ceil", round_off = " - 0.5";
  else if (strcmp(nearest, "round_prefer_ceil") == 0)
    round_fn = "floor", round_off = " + 0.5";
  else if (strcmp(nearest, "floor") == 0)
    round_fn = "floor", round_off = "";
  else if (strcmp(nearest, "ceil") == 0)
    round_fn = "ceil", round_off = "";
  else
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "nearest_mode '%s'",
                          nearest);
  /* tf_crop_and_resize: a coordinate outside [0, in - 1] on any resized
   * axis gives extrapolation_value (the interpolation is computed into rz_y
   * from clamped neighbours, then replaced) */
  gboolean crop =
      strcmp(weir_op_resize_coordinate_mode(n), "tf_crop_and_resize") == 0;
  const char *yname = crop ? "rz_y" : "y";
  g_autofree char *extrap = weir_expand_float_literal(
      weir_node_attr_float(n, "extrapolation_value", 0.0));
  g_autoptr(GString) outside = g_string_new(NULL);
  double a = weir_node_attr_float(n, "cubic_coeff_a", -0.75);
  gboolean exclude = weir_node_attr_int(n, "exclude_outside", 0) != 0;
  g_autofree char *la = weir_expand_float_literal(a);
  g_autofree char *la2 = weir_expand_float_literal(a + 2);
  g_autofree char *la3 = weir_expand_float_literal(a + 3);
  g_autofree char *la5 = weir_expand_float_literal(5 * a);
  g_autofree char *la8 = weir_expand_float_literal(8 * a);
  g_autofree char *la4 = weir_expand_float_literal(4 * a);

  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_autoptr(WeirExpr) vol = weir_container_volume(y.container);

  g_auto(GStrv) p = params_for(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  g_autofree gboolean *resized = g_new0(gboolean, r + 1);
  guint k = 0;
  GString *subset = g_string_new(NULL);
  GString *code = g_string_new(NULL);
  gboolean ok = TRUE;
  for (guint d = 0; d < r && ok; d++) {
    if (d)
      g_string_append(subset, ", ");
    gint64 one;
    if (weir_op_resize_keeps_axis(n, d, x.shape[d], y.shape[d])) {
      gboolean single = weir_expr_is_const(x.shape[d], &one) && one == 1;
      g_string_append(subset, single ? "0" : p[d]);
      continue;
    }
    resized[d] = TRUE;
    g_autofree char *dim = weir_expr_to_string(x.shape[d]);
    g_autofree char *last = NULL;
    {
      g_autoptr(WeirExpr) m1 = weir_expr_add_const(x.shape[d], -1);
      last = weir_expand_expr_code(m1);
    }
    g_string_append_printf(subset, "0:%s", dim);
    g_autofree char *c = NULL;
    ok = coordinate(n, d, p[d], x.shape[d], y.shape[d], &c, error);
    if (!ok)
      break;
    /* rz_i<k>_<j>: the input index of neighbour j; rz_w<k>[_<j>]: the
     * weights. */
    g_string_append_printf(code, "rz_c%u = %s\n", k, c);
    if (crop)
      g_string_append_printf(outside, "%srz_c%u < 0.0 || rz_c%u > f64(%s)",
                             outside->len ? " || " : "", k, k, last);
    if (taps == 1) {
      g_string_append_printf(code,
                             "rz_i%u_0 = i64(min(max(%s(rz_c%u%s), 0), %s))\n",
                             k, round_fn, k, round_off, last);
      k++;
      continue;
    }
    g_string_append_printf(code,
                           "rz_f%u = floor(rz_c%u)\n"
                           "rz_s%u = rz_c%u - rz_f%u\n",
                           k, k, k, k, k);
    for (guint j = 0; j < taps; j++)
      g_string_append_printf(code,
                             "rz_i%u_%u = i64(min(max(rz_f%u + %d, 0), %s))\n",
                             k, j, k, (int)j - (taps == 4 ? 1 : 0), last);
    if (taps == 4) {
      /* Keys' cubic convolution weights at distances 1 + s, s, 1 - s and
       * 2 - s. */
      for (guint j = 0; j < 4; j++) {
        static const char *const before[] = {"rz_s", "rz_s", "1 - rz_s",
                                             "2 - rz_s"};
        g_autofree char *dx =
            g_strdup_printf("%s%u%s", before[j], k, j == 0 ? " + 1" : "");
        g_string_append_printf(code, "rz_x = %s\n", dx);
        if (j == 0 || j == 3)
          g_string_append_printf(
              code,
              "rz_w%u_%u = (((%s) * rz_x - (%s)) * rz_x + (%s)) "
              "* rz_x - (%s)\n",
              k, j, la, la5, la8, la4);
        else
          g_string_append_printf(
              code, "rz_w%u_%u = ((%s) * rz_x - (%s)) * rz_x * rz_x + 1\n", k,
              j, la2, la3);
        if (exclude)
          g_string_append_printf(
              code,
              "rz_w%u_%u = rz_f%u + %d >= 0 && rz_f%u + %d <= %s ? rz_w%u_%u "
              ": 0.0\n",
              k, j, k, (int)j - 1, k, (int)j - 1, last, k, j);
      }
      if (exclude) {
        g_string_append_printf(
            code, "rz_t = rz_w%u_0 + rz_w%u_1 + rz_w%u_2 + rz_w%u_3\n", k, k, k,
            k);
        for (guint j = 0; j < 4; j++)
          g_string_append_printf(code, "rz_w%u_%u = rz_w%u_%u / rz_t\n", k, j,
                                 k, j);
      }
    }
    k++;
  }
  g_autofree char *in_subset = g_string_free(subset, FALSE);
  if (!ok) {
    g_string_free(code, TRUE);
    return FALSE;
  }
  if (k > (taps == 4 ? 8u : 16u)) {
    g_string_free(code, TRUE);
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "%u resized axes (at most %u)", k,
                          taps == 4 ? 8u : 16u);
  }
  /* The corners: digit t (base `taps`) of corner m picks neighbour
   * rz_i<t>_<digit> on resized axis t. */
  guint corners = 1;
  for (guint t = 0; t < k; t++)
    corners *= taps;
  if (k == 0) {
    g_string_append(code, "y = x");
  } else {
    for (guint m = 0; m < corners; m++) {
      if (taps == 1)
        g_string_append_printf(code, "%s = x[", yname);
      else
        g_string_append_printf(code, "rz_v%u = x[", m);
      for (guint d = 0, t = 0, rest = m; d < r; d++) {
        if (d)
          g_string_append(code, ", ");
        if (!resized[d]) {
          g_string_append(code, "0");
          continue;
        }
        g_string_append_printf(code, "rz_i%u_%u", t, rest % taps);
        rest /= taps;
        t++;
      }
      g_string_append(code, "]\n");
    }
    /* Interpolate along the last resized axis first: at step t the values
     * m < taps^(t+1) hold the interpolation over the axes after t. */
    guint stride = corners;
    for (guint t = k; taps > 1 && t-- > 0;) {
      stride /= taps;
      for (guint m = 0; m < stride; m++) {
        if (t == 0)
          g_string_append_printf(code, "%s = ", yname);
        else
          g_string_append_printf(code, "rz_v%u = ", m);
        if (taps == 2)
          g_string_append_printf(code, "rz_v%u + rz_s%u * (rz_v%u - rz_v%u)\n",
                                 m, t, m + stride, m);
        else
          g_string_append_printf(code,
                                 "rz_w%u_0 * rz_v%u + rz_w%u_1 * rz_v%u + "
                                 "rz_w%u_2 * rz_v%u + rz_w%u_3 * rz_v%u\n",
                                 t, m, t, m + stride, t, m + 2 * stride, t,
                                 m + 3 * stride);
      }
    }
  }
  if (crop && k > 0)
    g_string_append_printf(code, "y = %s ? (%s) : rz_y\n", outside->str,
                           extrap);
  g_autofree char *body = g_string_free(code, FALSE);
  g_autofree char *out_subset =
      weir_expand_index_subset(r, (const char *const *)p);
  WeirTaskletPort in = {x.access, "x", in_subset, WEIR_WCR_NONE};
  WeirTaskletPort out = {y.access, "y", r ? out_subset : NULL, WEIR_WCR_NONE};
  WeirNode *top = weir_expand_map(g, s, n->label, r, (const char *const *)p,
                                  (const char *const *)ranges, &in, 1, &out, 1,
                                  body, NULL, 0, error);
  if (!top)
    return FALSE;
  /* The resized axes are read at computed indices: each execution reads
   * 1 (nearest), 2^k (linear) or 4^k (cubic) elements of the connector's
   * subset. */
  if (k > 0)
    mark_indexed_read(s, top, x.container, corners, vol, "x");
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------ GridSample
 *
 * One map over Y [N, C, Ho, Wo].  The tasklet reads the grid's two values
 * at (n, ho, wo) through the subset and the image plane X[n, c] whole,
 * indexed.  Per axis (width from grid x, height from grid y, size L):
 *
 *   unnormalize  align_corners: (g + 1) / 2 * (L - 1)
 *                otherwise:     ((g + 1) * L - 1) / 2
 *   padding      border: clamp to [0, L - 1]; reflection: reflect about
 *                the borders (0 and L - 1 with align_corners, -0.5 and
 *                L - 0.5 without), then clamp; zeros: unchanged
 *
 * nearest rounds the coordinate (halves to even) and bilinear reads the
 * two neighbours floor(c), floor(c) + 1 with weights 1 - t, t; a neighbour
 * outside the image reads 0 (after border or reflection padding only the
 * weight-0 neighbour at L can be outside).  bicubic unnormalizes without
 * padding, reads the four neighbours floor(c) - 1 .. floor(c) + 2, each
 * index padded (clamped, or reflected then clamped; zeros: 0 outside) and
 * weighs them with the cubic convolution coefficients of A = -0.75.  This
 * is PyTorch's grid_sample, from which ONNX takes its definition.  All
 * coordinate arithmetic is in f64; coordinates are clamped to +-2^40
 * before the conversion to an integer index. */

/* Appends the code giving gs_c<ax> (the source coordinate, f64) of axis
 * ax from grid value `gv`, length code `len`. */
static void gridsample_coordinate(GString *code, guint ax, const char *gv,
                                  const char *len, gboolean align,
                                  const char *pad, gboolean apply_pad) {
  if (align)
    g_string_append_printf(code, "gs_c%u = (f64(%s) + 1) / 2 * (%s - 1)\n", ax,
                           gv, len);
  else
    g_string_append_printf(code, "gs_c%u = ((f64(%s) + 1) * %s - 1) / 2\n", ax,
                           gv, len);
  if (!apply_pad)
    return;
  if (strcmp(pad, "reflection") == 0) {
    /* reflect about lo and lo + span: |c - lo| folded by span */
    const char *lo = align ? "0.0" : "(-0.5)";
    g_autofree char *span = align ? g_strdup_printf("f64(%s - 1)", len)
                                  : g_strdup_printf("f64(%s)", len);
    g_string_append_printf(
        code,
        "gs_a%u = abs(gs_c%u - %s)\n"
        "gs_s%u = %s\n"
        "gs_k%u = gs_s%u > 0 ? floor(gs_a%u / gs_s%u) : 0.0\n"
        "gs_e%u = gs_a%u - gs_k%u * gs_s%u\n"
        "gs_c%u = gs_s%u <= 0 ? 0.0 : gs_k%u - 2 * floor(gs_k%u / 2) == 0 ? "
        "gs_e%u + %s : gs_s%u - gs_e%u + %s\n",
        ax, ax, lo, ax, span, ax, ax, ax, ax, ax, ax, ax, ax, ax, ax, ax, ax,
        ax, lo, ax, ax, lo);
  }
  if (strcmp(pad, "zeros") != 0)
    g_string_append_printf(
        code, "gs_c%u = min(max(gs_c%u, 0.0), f64(%s - 1))\n", ax, ax, len);
}

/* Appends code setting gs_i<ax>_<j> (i64 index to read, in range) and
 * gs_v<ax>_<j> (bool: the neighbour is inside, or padding gives it) for
 * integer position `pos` (f64 code) of axis ax. */
static void gridsample_index(GString *code, guint ax, guint j, const char *pos,
                             const char *len, gboolean align, const char *pad,
                             gboolean pad_index) {
  g_string_append_printf(
      code,
      "gs_i%u_%u = i64(min(max(%s, -1099511627776.0), 1099511627776.0))\n", ax,
      j, pos);
  if (pad_index && strcmp(pad, "reflection") == 0) {
    /* integer reflection: the period is 2 (L - 1) with align_corners
     * (about 0 and L - 1), 2 L without (about -0.5 and L - 0.5) */
    if (align)
      g_string_append_printf(
          code,
          "gs_m = %s > 1 ? 2 * (%s - 1) : 1\n"
          "gs_i%u_%u = ((gs_i%u_%u %% gs_m) + gs_m) %% gs_m\n"
          "gs_i%u_%u = gs_i%u_%u > %s - 1 ? gs_m - gs_i%u_%u : gs_i%u_%u\n",
          len, len, ax, j, ax, j, ax, j, ax, j, len, ax, j, ax, j);
    else
      g_string_append_printf(
          code,
          "gs_m = 2 * %s\n"
          "gs_i%u_%u = ((gs_i%u_%u %% gs_m) + gs_m) %% gs_m\n"
          "gs_i%u_%u = gs_i%u_%u > %s - 1 ? gs_m - 1 - gs_i%u_%u : gs_i%u_%u\n",
          len, ax, j, ax, j, ax, j, ax, j, len, ax, j, ax, j);
  }
  /* after border or reflection padding of the index every neighbour is
   * read (clamped below); zeros padding, and the coordinate padding of
   * bilinear and nearest, leave neighbours outside, which read 0 */
  if (pad_index && strcmp(pad, "zeros") != 0)
    g_string_append_printf(code, "gs_v%u_%u = true\n", ax, j);
  else
    g_string_append_printf(code,
                           "gs_v%u_%u = gs_i%u_%u >= 0 && gs_i%u_%u < %s\n", ax,
                           j, ax, j, ax, j, len);
  g_string_append_printf(code, "gs_i%u_%u = min(max(gs_i%u_%u, 0), %s - 1)\n",
                         ax, j, ax, j, len);
}

static gboolean expand_gridsample(WeirGraph *g, WeirState *s, WeirNode *n,
                                  GError **error) {
  WeirPort x, grid, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &grid, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  if (x.rank != 4 || grid.rank != 4 || y.rank != 4)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "only the 2-D form (X, Grid and Y of rank 4)");
  const char *mode = weir_node_attr_string(n, "mode", "bilinear");
  const char *pad = weir_node_attr_string(n, "padding_mode", "zeros");
  gboolean align = weir_node_attr_int(n, "align_corners", 0) != 0;
  guint taps = strcmp(mode, "bicubic") == 0    ? 4
               : strcmp(mode, "bilinear") == 0 ? 2
               : strcmp(mode, "nearest") == 0  ? 1
                                               : 0;
  if (taps == 0 || (strcmp(pad, "zeros") != 0 && strcmp(pad, "border") != 0 &&
                    strcmp(pad, "reflection") != 0))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "mode '%s', padding_mode '%s'", mode, pad);
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_autoptr(WeirExpr) vol = weir_container_volume(y.container);

  /* axis 0: width (grid x, X dimension 3); axis 1: height (grid y, 2) */
  g_autofree char *len_w = weir_expand_expr_code(x.shape[3]);
  g_autofree char *len_h = weir_expand_expr_code(x.shape[2]);
  const char *lens[2] = {len_w, len_h};
  const char *gv[2] = {"gx", "gy"};
  GString *code = g_string_new(NULL);
  for (guint ax = 0; ax < 2; ax++) {
    gridsample_coordinate(code, ax, gv[ax], lens[ax], align, pad, taps != 4);
    if (taps == 1) {
      g_autofree char *pos = g_strdup_printf("rint(gs_c%u)", ax);
      gridsample_index(code, ax, 0, pos, lens[ax], align, pad, FALSE);
      continue;
    }
    g_string_append_printf(code,
                           "gs_f%u = floor(gs_c%u)\ngs_t%u = gs_c%u - gs_f%u\n",
                           ax, ax, ax, ax, ax);
    for (guint j = 0; j < taps; j++) {
      g_autofree char *pos =
          g_strdup_printf("gs_f%u + %d", ax, (int)j - (taps == 4 ? 1 : 0));
      gridsample_index(code, ax, j, pos, lens[ax], align, pad, taps == 4);
    }
    if (taps == 2) {
      g_string_append_printf(code, "gs_w%u_0 = 1 - gs_t%u\ngs_w%u_1 = gs_t%u\n",
                             ax, ax, ax, ax);
      continue;
    }
    /* cubic convolution weights, A = -0.75, at distances t + 1, t, 1 - t,
     * 2 - t */
    static const char *const before[] = {"gs_t", "gs_t", "1 - gs_t",
                                         "2 - gs_t"};
    for (guint j = 0; j < 4; j++) {
      g_string_append_printf(code, "gs_d = %s%u%s\n", before[j], ax,
                             j == 0 ? " + 1" : "");
      if (j == 0 || j == 3)
        g_string_append_printf(code,
                               "gs_w%u_%u = ((-0.75 * gs_d + 3.75) * gs_d - "
                               "6.0) * gs_d + 3.0\n",
                               ax, j);
      else
        g_string_append_printf(
            code, "gs_w%u_%u = (1.25 * gs_d - 2.25) * gs_d * gs_d + 1\n", ax,
            j);
    }
  }
  /* the taps x taps neighbours, summed with their weights, rows (height)
   * outer */
  if (taps == 1) {
    g_string_append(code,
                    "y = gs_v0_0 && gs_v1_0 ? x[0, 0, gs_i1_0, gs_i0_0] : 0\n");
  } else {
    g_string_append(code, "gs_r = 0.0\n");
    for (guint a = 0; a < taps; a++) {
      g_string_append(code, "gs_q = 0.0\n");
      for (guint b = 0; b < taps; b++)
        g_string_append_printf(code,
                               "gs_q = gs_q + gs_w0_%u * (gs_v0_%u && gs_v1_%u "
                               "? f64(x[0, 0, gs_i1_%u, gs_i0_%u]) : 0.0)\n",
                               b, b, a, a, b);
      g_string_append_printf(code, "gs_r = gs_r + gs_w1_%u * gs_q\n", a);
    }
    g_string_append(code, "y = gs_r\n");
  }
  g_autofree char *body = g_string_free(code, FALSE);
  g_autofree char *hx = weir_expr_to_string(x.shape[2]);
  g_autofree char *wx = weir_expr_to_string(x.shape[3]);
  g_auto(GStrv) p = params_for(g, 4);
  g_auto(GStrv) ranges = weir_expand_full_ranges(4, y.shape);
  g_autofree char *x_subset =
      g_strdup_printf("%s, %s, 0:%s, 0:%s", p[0], p[1], hx, wx);
  g_autofree char *gx_subset =
      g_strdup_printf("%s, %s, %s, 0", p[0], p[2], p[3]);
  g_autofree char *gy_subset =
      g_strdup_printf("%s, %s, %s, 1", p[0], p[2], p[3]);
  g_autofree char *out_subset =
      weir_expand_index_subset(4, (const char *const *)p);
  WeirTaskletPort ins[3] = {
      {x.access, "x", x_subset, WEIR_WCR_NONE},
      {grid.access, "gx", gx_subset, WEIR_WCR_NONE},
      {grid.access, "gy", gy_subset, WEIR_WCR_NONE},
  };
  WeirTaskletPort out = {y.access, "y", out_subset, WEIR_WCR_NONE};
  WeirNode *top = weir_expand_map(g, s, n->label, 4, (const char *const *)p,
                                  (const char *const *)ranges, ins, 3, &out, 1,
                                  body, NULL, 0, error);
  if (!top)
    return FALSE;
  /* each execution reads taps^2 elements of the plane */
  mark_indexed_read(s, top, x.container, taps * taps, vol, "x");
  return weir_state_remove_node(s, n->id);
}

/* -------------------------------------------------------------- RoiAlign
 *
 * One map over Y [R, C, oh, ow]; the tasklet reads region r's four
 * coordinates and batch index through subsets and the channel c of X
 * whole, indexed at (batch, 0, y, x).  As ONNX (after Caffe2's
 * RoIAlign): with offset 0.5 (half_pixel) or 0 (output_half_pixel), the
 * region starts at x1 * spatial_scale - offset and spans
 * (x2 - x1) * spatial_scale (at least 1 with output_half_pixel); bin
 * (ph, pw) takes the sampling_ratio^2 samples at
 * start + (ph + (iy + 0.5) / sampling_ratio) * bin_height (likewise x).
 * A sample outside [-1, H] x [-1, W] is 0; otherwise it is clamped to
 * >= 0, and the bilinear neighbours floor(y), floor(y) + 1 are both H - 1
 * from the last row on.  avg divides the sum of the samples by their
 * number; max keeps the largest of the four weighted neighbours over the
 * samples (ONNX's definition).  Coordinates are f64, samples are
 * unrolled in the tasklet. */
static gboolean expand_roialign(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  WeirPort x, rois, bi, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &rois, error) ||
      !weir_port_require_input(g, s, n, 2, &bi, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  gint64 sr = weir_node_attr_int(n, "sampling_ratio", 0);
  if (x.rank != 4 || y.rank != 4 || sr < 1 || sr > 8)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "X and Y of rank 4 and sampling_ratio in 1..8");
  gboolean avg = strcmp(weir_node_attr_string(n, "mode", "avg"), "avg") == 0;
  gboolean half = strcmp(weir_node_attr_string(
                             n, "coordinate_transformation_mode", "half_pixel"),
                         "half_pixel") == 0;
  double scale = weir_node_attr_float(n, "spatial_scale", 1);
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_autoptr(WeirExpr) vol = weir_container_volume(y.container);
  g_autofree char *sc = weir_expand_float_literal(scale);
  g_autofree char *h = weir_expand_expr_code(x.shape[2]);
  g_autofree char *w = weir_expand_expr_code(x.shape[3]);
  g_autofree char *oh = weir_expand_expr_code(y.shape[2]);
  g_autofree char *ow = weir_expand_expr_code(y.shape[3]);
  g_auto(GStrv) p = params_for(g, 4);
  const char *off = half ? "0.5" : "0.0";
  GString *c = g_string_new(NULL);
  g_string_append_printf(
      c,
      "ra_x0 = f64(x1) * %s - %s\nra_y0 = f64(y1) * %s - %s\n"
      "ra_w = f64(x2) * %s - %s - ra_x0\nra_h = f64(y2) * %s - %s - ra_y0\n",
      sc, off, sc, off, sc, off, sc, off);
  if (!half)
    g_string_append(c, "ra_w = max(ra_w, 1.0)\nra_h = max(ra_h, 1.0)\n");
  g_string_append_printf(c,
                         "ra_bh = ra_h / %s\nra_bw = ra_w / %s\n"
                         "ra_b = i64(b)\nra_acc = %s\n",
                         oh, ow, avg ? "0.0" : "-1e999");
  for (gint64 iy = 0; iy < sr; iy++)
    for (gint64 ix = 0; ix < sr; ix++) {
      g_string_append_printf(
          c,
          "ra_y = ra_y0 + (%s + %.17g) * ra_bh\n"
          "ra_x = ra_x0 + (%s + %.17g) * ra_bw\n"
          "ra_in = ra_y >= -1.0 && ra_y <= %s && ra_x >= -1.0 && ra_x <= %s\n"
          "ra_y = min(max(ra_y, 0.0), f64(%s))\n"
          "ra_x = min(max(ra_x, 0.0), f64(%s))\n"
          "ra_yl = min(i64(ra_y), %s - 1)\nra_xl = min(i64(ra_x), %s - 1)\n"
          "ra_y = ra_yl >= %s - 1 ? f64(ra_yl) : ra_y\n"
          "ra_x = ra_xl >= %s - 1 ? f64(ra_xl) : ra_x\n"
          "ra_yh = min(ra_yl + 1, %s - 1)\nra_xh = min(ra_xl + 1, %s - 1)\n"
          "ra_ly = ra_y - f64(ra_yl)\nra_lx = ra_x - f64(ra_xl)\n"
          "ra_1 = (1 - ra_ly) * (1 - ra_lx) * f64(x[ra_b, 0, ra_yl, ra_xl])\n"
          "ra_2 = (1 - ra_ly) * ra_lx * f64(x[ra_b, 0, ra_yl, ra_xh])\n"
          "ra_3 = ra_ly * (1 - ra_lx) * f64(x[ra_b, 0, ra_yh, ra_xl])\n"
          "ra_4 = ra_ly * ra_lx * f64(x[ra_b, 0, ra_yh, ra_xh])\n",
          p[2], ((double)iy + 0.5) / (double)sr, p[3],
          ((double)ix + 0.5) / (double)sr, h, w, h, w, h, w, h, w, h, w);
      if (avg)
        g_string_append(
            c, "ra_acc = ra_acc + (ra_in ? ra_1 + ra_2 + ra_3 + ra_4 : 0.0)\n");
      else
        g_string_append(c, "ra_acc = max(ra_acc, ra_in ? max(ra_1, ra_2, "
                           "ra_3, ra_4) : 0.0)\n");
    }
  if (avg)
    g_string_append_printf(c, "y = ra_acc / %" G_GINT64_FORMAT "\n", sr * sr);
  else
    g_string_append(c, "y = ra_acc\n");
  g_autofree char *code = g_string_free(c, FALSE);
  g_autofree char *nx = weir_expr_to_string(x.shape[0]);
  g_autofree char *hx = weir_expr_to_string(x.shape[2]);
  g_autofree char *wx = weir_expr_to_string(x.shape[3]);
  g_autofree char *x_sub =
      g_strdup_printf("0:%s, %s, 0:%s, 0:%s", nx, p[1], hx, wx);
  g_autofree char *r0 = g_strdup_printf("%s, 0", p[0]);
  g_autofree char *r1 = g_strdup_printf("%s, 1", p[0]);
  g_autofree char *r2 = g_strdup_printf("%s, 2", p[0]);
  g_autofree char *r3 = g_strdup_printf("%s, 3", p[0]);
  g_autofree char *out_sub =
      weir_expand_index_subset(4, (const char *const *)p);
  WeirTaskletPort ins[6] = {
      {x.access, "x", x_sub, WEIR_WCR_NONE},
      {rois.access, "x1", r0, WEIR_WCR_NONE},
      {rois.access, "y1", r1, WEIR_WCR_NONE},
      {rois.access, "x2", r2, WEIR_WCR_NONE},
      {rois.access, "y2", r3, WEIR_WCR_NONE},
      {bi.access, "b", p[0], WEIR_WCR_NONE},
  };
  WeirTaskletPort out = {y.access, "y", out_sub, WEIR_WCR_NONE};
  g_auto(GStrv) ranges = weir_expand_full_ranges(4, y.shape);
  WeirNode *top = weir_expand_map(g, s, n->label, 4, (const char *const *)p,
                                  (const char *const *)ranges, ins, 6, &out, 1,
                                  code, NULL, 0, error);
  if (!top)
    return FALSE;
  /* 4 elements of the batch's plane per sample */
  mark_indexed_read(s, top, x.container, 4 * sr * sr, vol, "x");
  return weir_state_remove_node(s, n->id);
}

void weir_expand_register_resize(void) {
  weir_op_register_expansion("RoiAlign", "pure", expand_roialign);
  weir_op_register_expansion("Resize", "pure", expand_resize);
  weir_op_register_expansion("Upsample", "pure", expand_resize);
  weir_op_register_expansion("GridSample", "pure", expand_gridsample);
}
