/* indexing.c — pure expansions of the indexing and rearranging operators
 * of ir/ops/indexing.c.
 *
 *  - Size: one tasklet writing the element count (constant or symbolic);
 *  - GatherElements, GatherND, ReverseSequence: a map over the output
 *    whose tasklet reads the data through an indexed connector at a
 *    data-dependent place (a dynamic memlet);
 *  - ScatterElements (and Scatter): a copy of the data into the output,
 *    then a map over the updates writing through an indexed output
 *    connector (dynamic), the reduction as write-conflict resolution;
 *  - Trilu, EyeLike, OneHot: maps over the output whose tasklets compare
 *    map parameters (and for OneHot the index read);
 *  - DepthToSpace, SpaceToDepth: one copy map whose input subset states
 *    the index mapping with // and %;
 *  - CumSum: an initialization to 0, then a map over (output, position
 *    along the axis) adding the elements of the prefix (or suffix) with a
 *    WCR sum: volume x length of the axis, quadratic along the axis;
 *  - TopK: the rank of every element along the axis (a WCR sum of pairwise
 *    comparisons, ties to the lower index), then each output position sums
 *    the one element of its rank (and its position) over the axis;
 *  - MaxUnpool: zeros, then a map over the input writing each value at the
 *    coordinates of its flat index (a dynamic write);
 *  - windows: a map over the output evaluating the cosine sum in f64.
 * Access nodes of inputs whose data is not read (EyeLike's input, Size's)
 * are removed when nothing else uses them.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_indexing(void);

/* ------------------------------------------------------------- helpers */

static gboolean is_const(const WeirExpr *e, gint64 v) {
  gint64 x;
  return weir_expr_is_const(e, &x) && x == v;
}

static gboolean ports(WeirGraph *g, WeirState *s, WeirNode *n, WeirPort *x,
                      WeirPort *y, GError **error) {
  return weir_port_require_input(g, s, n, 0, x, error) &&
         weir_port_require_output(g, s, n, 0, y, error);
}

static gboolean axis_of(const WeirNode *n, gint64 axis, guint rank, guint *out,
                        GError **error) {
  gint64 a = axis < 0 ? axis + (gint64)rank : axis;
  if (a < 0 || a >= (gint64)rank)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "axis %" G_GINT64_FORMAT " is out of range for rank %u", axis, rank);
  *out = (guint)a;
  return TRUE;
}

/* Removes node n, and the access node `unused` when it is left without
 * edges (an input whose data is not read). */
static gboolean remove_node(WeirState *s, WeirNode *n, WeirNode *unused) {
  guint id = unused ? unused->id : 0;
  if (!weir_state_remove_node(s, n->id))
    return FALSE;
  if (unused) {
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, id);
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, id);
    if (in->len == 0 && out->len == 0)
      weir_state_remove_node(s, id);
  }
  return TRUE;
}

/* A map over the output y (params p) with the given inputs and code, y
 * written at p. */
static WeirNode *output_map(WeirGraph *g, WeirState *s, WeirNode *n,
                            const char *suffix, const WeirPort *y, char **p,
                            const WeirTaskletPort *ins, guint n_ins,
                            const char *code, GError **error) {
  g_auto(GStrv) ranges = weir_expand_full_ranges(y->rank, y->shape);
  g_autofree char *sub =
      weir_expand_index_subset(y->rank, (const char *const *)p);
  WeirTaskletPort out = {y->access, "y", y->rank ? sub : NULL, WEIR_WCR_NONE};
  g_autofree char *label =
      suffix ? g_strdup_printf("%s_%s", n->label, suffix) : g_strdup(n->label);
  return weir_expand_map(g, s, label, y->rank, (const char *const *)p,
                         (const char *const *)ranges, ins, n_ins, &out, 1, code,
                         NULL, 0, error);
}

/* Text of a subset or index list from expressions. (transfer full) */
static char *join_exprs(WeirExpr **e, guint n) {
  GString *t = g_string_new(NULL);
  for (guint i = 0; i < n; i++) {
    g_autofree char *x = weir_expr_to_string(e[i]);
    g_string_append_printf(t, "%s%s", i ? ", " : "", x);
  }
  return g_string_free(t, FALSE);
}

/* ------------------------------------------------------------------ Size */

static gboolean expand_size(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  if (y.rank != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output '%s' must be a scalar", y.container->name);
  g_autoptr(WeirExpr) v = weir_container_volume(x.container);
  g_autofree char *count = weir_expand_expr_code(v);
  g_autofree char *code = g_strdup_printf("y = %s", count);
  WeirTaskletPort out = {y.access, "y", NULL, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, n->label, 0, NULL, NULL, NULL, 0, &out, 1, code,
                       NULL, 0, error))
    return FALSE;
  return remove_node(s, n, x.access);
}

/* ---------------------------------------------------- GatherElements */

/* y[p] = x[p with the axis replaced by the index read at p]. */
static gboolean expand_gather_elements(WeirGraph *g, WeirState *s, WeirNode *n,
                                       GError **error) {
  WeirPort x, ind, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error))
    return FALSE;
  guint r = x.rank, axis = 0;
  if (y.rank != r || ind.rank != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "data, indices and output must have one rank");
  if (!axis_of(n, weir_node_attr_int(n, "axis", 0), r, &axis, error))
    return FALSE;
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_autofree char *dim = weir_expr_to_string(x.shape[axis]);
  g_autofree char *dim_code = weir_expand_expr_code(x.shape[axis]);
  g_autoptr(GString) data = g_string_new(NULL);
  g_autoptr(GString) read = g_string_new("x[");
  for (guint d = 0; d < r; d++) {
    const char *sep = d ? ", " : "";
    if (d == axis) {
      g_string_append_printf(data, "%s0:%s", sep, dim);
      g_string_append_printf(read, "%si < 0 ? i + %s : i", sep, dim_code);
    } else {
      g_string_append_printf(data, "%s%s", sep, p[d]);
      g_string_append_printf(read, "%s0", sep);
    }
  }
  g_string_append(read, "]");
  g_autofree char *code =
      g_strdup_printf("y = %s", is_const(x.shape[axis], 1) ? "x" : read->str);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  WeirTaskletPort ins[2] = {{x.access, "x", data->str, WEIR_WCR_NONE},
                            {ind.access, "i", at, WEIR_WCR_NONE}};
  WeirNode *top = output_map(g, s, n, NULL, &y, p, ins, 2, code, error);
  if (!top)
    return FALSE;
  weir_expand_dynamic_input(s, top, x.container->name, "x");
  return weir_state_remove_node(s, n->id);
}

/* ---------------------------------------------------- ScatterElements */

static gboolean reduction_wcr(WeirNode *n, WeirWcr *wcr, GError **error) {
  const char *red = weir_node_attr_string(n, "reduction", "none");
  static const struct {
    const char *name;
    WeirWcr wcr;
  } table[] = {{"none", WEIR_WCR_NONE},
               {"add", WEIR_WCR_SUM},
               {"mul", WEIR_WCR_PROD},
               {"max", WEIR_WCR_MAX},
               {"min", WEIR_WCR_MIN}};
  for (guint i = 0; i < G_N_ELEMENTS(table); i++)
    if (strcmp(red, table[i].name) == 0) {
      *wcr = table[i].wcr;
      return TRUE;
    }
  return weir_node_fail(error, WEIR_ERROR_INVALID, n, "reduction '%s'", red);
}

/* y = x, then y[p with the axis replaced by indices[p]] = updates[p] over
 * the updates (with reduction none, repeated indices leave one update:
 * ONNX leaves the result undefined). */
static gboolean expand_scatter_elements(WeirGraph *g, WeirState *s, WeirNode *n,
                                        GError **error) {
  WeirPort x, ind, upd, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error) ||
      !weir_port_require_input(g, s, n, 2, &upd, error))
    return FALSE;
  guint r = x.rank, axis = 0;
  if (y.rank != r || ind.rank != r || upd.rank != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "data, indices, updates and output must have one "
                          "rank");
  WeirWcr wcr = WEIR_WCR_NONE;
  if (!axis_of(n, weir_node_attr_int(n, "axis", 0), r, &axis, error) ||
      !reduction_wcr(n, &wcr, error))
    return FALSE;
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  WeirNode *first = weir_state_add_access(g, s, y.container->name);
  {
    g_auto(GStrv) p = weir_expand_fresh_params(g, r);
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
    g_autofree char *sub = weir_expand_index_subset(r, (const char *const *)p);
    WeirTaskletPort in = {x.access, "x", sub, WEIR_WCR_NONE};
    WeirTaskletPort out = {first, "y", sub, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_copy", n->label);
    if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                         (const char *const *)ranges, &in, 1, &out, 1, "y = x",
                         NULL, 0, error))
      return FALSE;
  }
  if (weir_port_is_empty(&upd))
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, upd.shape);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  g_autofree char *dim = weir_expand_expr_code(y.shape[axis]);
  g_autoptr(GString) code = g_string_new("y[");
  for (guint d = 0; d < r; d++) {
    if (d)
      g_string_append(code, ", ");
    if (d == axis)
      g_string_append_printf(code, "i < 0 ? i + %s : i", dim);
    else
      g_string_append(code, p[d]);
  }
  g_string_append(code, "] = u");
  WeirTaskletPort ins[2] = {{upd.access, "u", at, WEIR_WCR_NONE},
                            {ind.access, "i", at, WEIR_WCR_NONE}};
  return weir_expand_scatter(g, s, n, r, (const char *const *)p,
                             (const char *const *)ranges, ins, y.access, wcr,
                             code->str, first, upd.container, error);
}

/* -------------------------------------------------------------- GatherND */

/* y[a, c] = x[batch a[:b], indices[a, :], c] with a over indices.shape[:-1]
 * (its first b dimensions the batch) and c over the trailing dimensions. */
static gboolean expand_gather_nd(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  WeirPort x, ind, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error))
    return FALSE;
  guint q = ind.rank, r = x.rank;
  gint64 b = weir_node_attr_int(n, "batch_dims", 0), k = 0;
  if (q == 0 || !weir_expr_is_const(ind.shape[q - 1], &k) || b < 0 || k < 1 ||
      b + k > (gint64)r || b >= (gint64)q ||
      y.rank != q - 1 + r - (guint)(b + k))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "the shapes of data, indices and output do not "
                          "agree");
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, y.rank);
  /* indices[a, 0:k] */
  g_autoptr(GString) isub = g_string_new(NULL);
  for (guint d = 0; d + 1 < q; d++)
    g_string_append_printf(isub, "%s, ", p[d]);
  g_string_append_printf(isub, k == 1 ? "0" : "0:%" G_GINT64_FORMAT, k);
  /* x[batch points, indexed dimensions whole, trailing points] */
  g_autoptr(GString) xsub = g_string_new(NULL);
  g_autoptr(GString) code = g_string_new(NULL);
  for (gint64 j = 0; j < k; j++) {
    if (k == 1) {
      g_string_append(code, "j0 = i\n");
      break;
    }
    g_string_append_printf(code, "j%" G_GINT64_FORMAT " = i[", j);
    for (guint d = 0; d + 1 < q; d++)
      g_string_append(code, "0, ");
    g_string_append_printf(code, "%" G_GINT64_FORMAT "]\n", j);
  }
  g_autoptr(WeirExpr) picked = weir_expr_const(1);
  g_autoptr(GString) read = g_string_new("x[");
  for (guint d = 0; d < r; d++) {
    const char *sep = d ? ", " : "";
    if ((gint64)d < b) {
      g_string_append_printf(xsub, "%s%s", sep, p[d]);
      g_string_append_printf(read, "%s0", sep);
    } else if ((gint64)d < b + k) {
      g_autofree char *dim = weir_expr_to_string(x.shape[d]);
      g_autofree char *dim_code = weir_expand_expr_code(x.shape[d]);
      guint j = d - (guint)b;
      g_string_append_printf(xsub, "%s0:%s", sep, dim);
      g_string_append_printf(read, "%sj%u < 0 ? j%u + %s : j%u", sep, j, j,
                             dim_code, j);
      WeirExpr *next = weir_expr_mul(picked, x.shape[d]);
      weir_expr_unref(picked);
      picked = next;
    } else {
      g_string_append_printf(xsub, "%s%s", sep, p[q - 1 + d - (guint)(b + k)]);
      g_string_append_printf(read, "%s0", sep);
    }
  }
  g_string_append(read, "]");
  g_string_append_printf(code, "y = %s", is_const(picked, 1) ? "x" : read->str);
  WeirTaskletPort ins[2] = {{x.access, "x", xsub->str, WEIR_WCR_NONE},
                            {ind.access, "i", isub->str, WEIR_WCR_NONE}};
  WeirNode *top = output_map(g, s, n, NULL, &y, p, ins, 2, code->str, error);
  if (!top)
    return FALSE;
  weir_expand_dynamic_input(s, top, x.container->name, "x");
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------ Trilu, EyeLike */

/* Keeps the elements on and above (upper) or on and below the k-th
 * diagonal of the last two dimensions: column - row >= k (<= k). */
static gboolean expand_trilu(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  if (x.rank < 2 || y.rank != x.rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input and output must have one rank, at least 2");
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, y.rank);
  gint64 k = weir_node_attr_int(n, "k", 0);
  gboolean upper = weir_node_attr_int(n, "upper", 1) != 0;
  g_autofree char *code =
      g_strdup_printf("y = %s - %s %s %" G_GINT64_FORMAT " ? x : %s",
                      p[y.rank - 1], p[y.rank - 2], upper ? ">=" : "<=", k,
                      y.container->dtype == WEIR_DTYPE_BOOL ? "false" : "0");
  g_autofree char *at =
      weir_expand_index_subset(y.rank, (const char *const *)p);
  WeirTaskletPort in = {x.access, "x", at, WEIR_WCR_NONE};
  return output_map(g, s, n, NULL, &y, p, &in, 1, code, error) &&
         weir_state_remove_node(s, n->id);
}

static gboolean expand_eye_like(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  if (y.rank != 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output '%s' must have rank 2", y.container->name);
  if (weir_port_is_empty(&y))
    return remove_node(s, n, x.access);
  g_auto(GStrv) p = weir_expand_fresh_params(g, 2);
  g_autofree char *code =
      g_strdup_printf("y = %s - %s == %" G_GINT64_FORMAT " ? 1 : 0", p[1], p[0],
                      weir_node_attr_int(n, "k", 0));
  return output_map(g, s, n, NULL, &y, p, NULL, 0, code, error) &&
         remove_node(s, n, x.access);
}

/* ---------------------------------------------------------------- OneHot */

/* y[..., j, ...] = values[1] where j (at the axis) is the index (made
 * nonnegative by adding depth), values[0] elsewhere; indices outside
 * [-depth, depth) give all values[0]. */
static gboolean expand_one_hot(WeirGraph *g, WeirState *s, WeirNode *n,
                               GError **error) {
  WeirPort ind, vals, y;
  if (!weir_port_require_input(g, s, n, 0, &ind, error) ||
      !weir_port_require_input(g, s, n, 2, &vals, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint axis = 0;
  if (y.rank != ind.rank + 1 || vals.rank != 1 || !is_const(vals.shape[0], 2))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "the output must have rank %u and the values "
                          "shape [2]",
                          ind.rank + 1);
  if (!axis_of(n, weir_node_attr_int(n, "axis", -1), y.rank, &axis, error))
    return FALSE;
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, y.rank);
  g_autoptr(GPtrArray) at_ind = g_ptr_array_new();
  for (guint d = 0; d < y.rank; d++)
    if (d != axis)
      g_ptr_array_add(at_ind, p[d]);
  g_ptr_array_add(at_ind, NULL);
  g_autofree char *isub =
      weir_expand_index_subset(ind.rank, (const char *const *)at_ind->pdata);
  g_autofree char *depth = weir_expand_expr_code(y.shape[axis]);
  g_autofree char *code = g_strdup_printf("k = i64(i)\nj = k < 0 ? k + %s : k\n"
                                          "y = j == %s ? v[1] : v[0]",
                                          depth, p[axis]);
  WeirTaskletPort ins[2] = {
      {ind.access, "i", ind.rank ? isub : NULL, WEIR_WCR_NONE},
      {vals.access, "v", "0:2", WEIR_WCR_NONE}};
  return output_map(g, s, n, NULL, &y, p, ins, 2, code, error) &&
         weir_state_remove_node(s, n->id);
}

/* ------------------------------------------ DepthToSpace, SpaceToDepth */

/* One copy map over the output (n, c, h, w) reading the input element the
 * block rearrangement names, with b the block size and C the channels of
 * the output (DepthToSpace) or of the input (SpaceToDepth):
 *   DepthToSpace DCR: x[n, ((h % b) * b + w % b) * C + c, h // b, w // b]
 *   DepthToSpace CRD: x[n, c * b * b + (h % b) * b + w % b, h // b, w // b]
 *   SpaceToDepth:     x[n, c % C, h * b + (c // C) // b, w * b + (c // C) % b]
 */
static gboolean expand_depth_space(WeirGraph *g, WeirState *s, WeirNode *n,
                                   GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  gint64 b = weir_node_attr_int(n, "blocksize", 0);
  if (x.rank != 4 || y.rank != 4 || b < 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input and output must have rank 4 and the block "
                          "size must be positive");
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  gboolean to_space = strcmp(n->op, "DepthToSpace") == 0;
  gboolean crd =
      to_space && strcmp(weir_node_attr_string(n, "mode", "DCR"), "CRD") == 0;
  g_auto(GStrv) p = weir_expand_fresh_params(g, 4);
  g_autoptr(WeirExpr) pn = weir_expr_symbol(p[0]);
  g_autoptr(WeirExpr) pc = weir_expr_symbol(p[1]);
  g_autoptr(WeirExpr) ph = weir_expr_symbol(p[2]);
  g_autoptr(WeirExpr) pw = weir_expr_symbol(p[3]);
  g_autoptr(WeirExpr) be = weir_expr_const(b);
  WeirExpr *at[4] = {pn, NULL, NULL, NULL};
  g_autoptr(WeirExpr) c_in = NULL, h_in = NULL, w_in = NULL;
  if (to_space) {
    g_autoptr(WeirExpr) hb = weir_expr_mod(ph, be);
    g_autoptr(WeirExpr) wb = weir_expr_mod(pw, be);
    g_autoptr(WeirExpr) hbb = weir_expr_mul_const(hb, b);
    g_autoptr(WeirExpr) block = weir_expr_add(hbb, wb);
    if (crd) {
      g_autoptr(WeirExpr) cbb = weir_expr_mul_const(pc, b * b);
      c_in = weir_expr_add(cbb, block);
    } else {
      g_autoptr(WeirExpr) scaled = weir_expr_mul(block, y.shape[1]);
      c_in = weir_expr_add(scaled, pc);
    }
    h_in = weir_expr_floordiv(ph, be);
    w_in = weir_expr_floordiv(pw, be);
  } else {
    g_autoptr(WeirExpr) block = weir_expr_floordiv(pc, x.shape[1]);
    g_autoptr(WeirExpr) bh = weir_expr_floordiv(block, be);
    g_autoptr(WeirExpr) bw = weir_expr_mod(block, be);
    g_autoptr(WeirExpr) hs = weir_expr_mul_const(ph, b);
    g_autoptr(WeirExpr) ws = weir_expr_mul_const(pw, b);
    c_in = weir_expr_mod(pc, x.shape[1]);
    h_in = weir_expr_add(hs, bh);
    w_in = weir_expr_add(ws, bw);
  }
  at[1] = c_in;
  at[2] = h_in;
  at[3] = w_in;
  g_autofree char *xsub = join_exprs(at, 4);
  WeirTaskletPort in = {x.access, "x", xsub, WEIR_WCR_NONE};
  return output_map(g, s, n, NULL, &y, p, &in, 1, "y = x", error) &&
         weir_state_remove_node(s, n->id);
}

/* ---------------------------------------------------------------- CumSum */

/* y = 0; then over (p, j), j along the axis: y[p] += x[p with the axis at
 * j] when j is in the prefix of p's position (j <= p_axis; < with
 * exclusive; reversed: the suffix). */
static gboolean expand_cum_sum(WeirGraph *g, WeirState *s, WeirNode *n,
                               GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  guint r = x.rank, axis = 0;
  if (y.rank != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input and output must have one rank");
  if (!axis_of(n, weir_node_attr_int(n, "axis", 0), r, &axis, error))
    return FALSE;
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  gboolean exclusive = weir_node_attr_int(n, "exclusive", 0) != 0;
  gboolean reverse = weir_node_attr_int(n, "reverse", 0) != 0;
  WeirNode *first = weir_state_add_access(g, s, y.container->name);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r + 1);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  {
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
    WeirTaskletPort out = {first, "y", r ? at : NULL, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_init", n->label);
    if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                         (const char *const *)ranges, NULL, 0, &out, 1, "y = 0",
                         NULL, 0, error))
      return FALSE;
  }
  /* ranges: the output's, then j over the axis */
  g_autoptr(GPtrArray) shape = g_ptr_array_new();
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(shape, y.shape[d]);
  g_ptr_array_add(shape, x.shape[axis]);
  g_auto(GStrv) ranges =
      weir_expand_full_ranges(r + 1, (WeirExpr *const *)shape->pdata);
  g_autoptr(GPtrArray) xat = g_ptr_array_new();
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(xat, d == axis ? p[r] : p[d]);
  g_ptr_array_add(xat, NULL);
  g_autofree char *xsub =
      weir_expand_index_subset(r, (const char *const *)xat->pdata);
  const char *cmp =
      reverse ? (exclusive ? ">" : ">=") : (exclusive ? "<" : "<=");
  g_autofree char *code =
      g_strdup_printf("y = %s %s %s ? x : 0", p[r], cmp, p[axis]);
  WeirTaskletPort in = {x.access, "x", xsub, WEIR_WCR_NONE};
  WeirTaskletPort out = {y.access, "y", at, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_sum", n->label);
  if (!weir_expand_map(g, s, label, r + 1, (const char *const *)p,
                       (const char *const *)ranges, &in, 1, &out, 1, code,
                       &first, 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------- ReverseSequence */

/* y[.., t, ..] = x[.., l - 1 - t, ..] for t < l (l = the sequence length
 * of the batch element), x[.., t, ..] otherwise. */
static gboolean expand_reverse_sequence(WeirGraph *g, WeirState *s, WeirNode *n,
                                        GError **error) {
  WeirPort x, len, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &len, error))
    return FALSE;
  guint r = x.rank;
  gint64 ba = weir_node_attr_int(n, "batch_axis", 1);
  gint64 ta = weir_node_attr_int(n, "time_axis", 0);
  if (r < 2 || y.rank != r || ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "batch_axis and time_axis must be 0 and 1 in some "
                          "order, on input of rank at least 2");
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_autofree char *tdim = weir_expr_to_string(x.shape[ta]);
  g_autoptr(GString) xsub = g_string_new(NULL);
  g_autoptr(GString) read = g_string_new("x[");
  for (guint d = 0; d < r; d++) {
    const char *sep = d ? ", " : "";
    if ((gint64)d == ta) {
      g_string_append_printf(xsub, "%s0:%s", sep, tdim);
      g_string_append_printf(read, "%st", sep);
    } else {
      g_string_append_printf(xsub, "%s%s", sep, p[d]);
      g_string_append_printf(read, "%s0", sep);
    }
  }
  g_string_append(read, "]");
  g_autofree char *code =
      g_strdup_printf("t = %s < l ? l - 1 - %s : %s\ny = %s", p[ta], p[ta],
                      p[ta], is_const(x.shape[ta], 1) ? "x" : read->str);
  WeirTaskletPort ins[2] = {{x.access, "x", xsub->str, WEIR_WCR_NONE},
                            {len.access, "l", p[ba], WEIR_WCR_NONE}};
  WeirNode *top = output_map(g, s, n, NULL, &y, p, ins, 2, code, error);
  if (!top)
    return FALSE;
  weir_expand_dynamic_input(s, top, x.container->name, "x");
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------------ TopK */

/* rank[p] = the number of elements along the axis that come before x[p]
 * (larger, or smallest-first smaller; ties by the lower index), then
 * values[p] = sum over j of (rank[.. j ..] == p_axis ? x[.. j ..] : 0), and
 * likewise indices with j: exactly one j has each rank. */
static gboolean expand_top_k(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort x, vals, idx;
  if (!ports(g, s, n, &x, &vals, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  gboolean has_idx = weir_port_output(g, s, n, 1, &idx, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  guint r = x.rank, axis = 0;
  if (r == 0 || vals.rank != r || (has_idx && idx.rank != r))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input and outputs must have one rank, at least 1");
  if (!axis_of(n, weir_node_attr_int(n, "axis", -1), r, &axis, error))
    return FALSE;
  if (weir_port_is_empty(&vals))
    return weir_state_remove_node(s, n->id);
  gboolean largest = weir_node_attr_int(n, "largest", 1) != 0;
  g_autofree char *base = weir_expand_name(n, "rank");
  WeirContainer *rc =
      weir_expand_add_transient(g, base, WEIR_DTYPE_I64, r, x.shape);
  WeirNode *r1 = weir_state_add_access(g, s, rc->name);
  WeirNode *r2 = weir_state_add_access(g, s, rc->name);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r + 1);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  g_autoptr(GPtrArray) jat = g_ptr_array_new();
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(jat, d == axis ? p[r] : p[d]);
  g_ptr_array_add(jat, NULL);
  g_autofree char *jsub =
      weir_expand_index_subset(r, (const char *const *)jat->pdata);
  /* 1. rank = 0 */
  {
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, x.shape);
    WeirTaskletPort out = {r1, "c", at, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_init", n->label);
    if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                         (const char *const *)ranges, NULL, 0, &out, 1, "c = 0",
                         NULL, 0, error))
      return FALSE;
  }
  /* 2. rank[p] += 1 for each j before p */
  g_autoptr(GPtrArray) shape = g_ptr_array_new();
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(shape, x.shape[d]);
  g_ptr_array_add(shape, x.shape[axis]);
  {
    g_auto(GStrv) ranges =
        weir_expand_full_ranges(r + 1, (WeirExpr *const *)shape->pdata);
    g_autofree char *code =
        g_strdup_printf("c = a %s b || (a == b && %s < %s) ? 1 : 0",
                        largest ? ">" : "<", p[r], p[axis]);
    WeirTaskletPort ins[2] = {{x.access, "a", jsub, WEIR_WCR_NONE},
                              {x.access, "b", at, WEIR_WCR_NONE}};
    WeirTaskletPort out = {r2, "c", at, WEIR_WCR_SUM};
    g_autofree char *label = g_strdup_printf("%s_rank", n->label);
    if (!weir_expand_map(g, s, label, r + 1, (const char *const *)p,
                         (const char *const *)ranges, ins, 2, &out, 1, code,
                         &r1, 1, error))
      return FALSE;
  }
  /* 3. outputs = 0, then the element of each rank */
  WeirNode *v1 = weir_state_add_access(g, s, vals.container->name);
  WeirNode *i1 =
      has_idx ? weir_state_add_access(g, s, idx.container->name) : NULL;
  g_autofree char *init_label = g_strdup_printf("%s_zero", n->label);
  {
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, vals.shape);
    WeirTaskletPort outs[2] = {{v1, "y", at, WEIR_WCR_NONE},
                               {i1, "k", at, WEIR_WCR_NONE}};
    if (!weir_expand_map(g, s, init_label, r, (const char *const *)p,
                         (const char *const *)ranges, NULL, 0, outs,
                         has_idx ? 2 : 1, has_idx ? "y = 0\nk = 0" : "y = 0",
                         NULL, 0, error))
      return FALSE;
  }
  g_ptr_array_index(shape, axis) = vals.shape[axis];
  g_auto(GStrv) ranges =
      weir_expand_full_ranges(r + 1, (WeirExpr *const *)shape->pdata);
  g_autofree char *code =
      has_idx ? g_strdup_printf("m = c == %s\ny = m ? a : 0\nk = m ? %s : 0",
                                p[axis], p[r])
              : g_strdup_printf("m = c == %s\ny = m ? a : 0", p[axis]);
  WeirTaskletPort ins[2] = {{x.access, "a", jsub, WEIR_WCR_NONE},
                            {r2, "c", jsub, WEIR_WCR_NONE}};
  WeirTaskletPort outs[2] = {
      {vals.access, "y", at, WEIR_WCR_SUM},
      {has_idx ? idx.access : NULL, "k", at, WEIR_WCR_SUM}};
  WeirNode *after[2] = {v1, i1};
  g_autofree char *label = g_strdup_printf("%s_select", n->label);
  if (!weir_expand_map(g, s, label, r + 1, (const char *const *)p,
                       (const char *const *)ranges, ins, 2, outs,
                       has_idx ? 2 : 1, code, after, has_idx ? 2 : 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------- MaxUnpool */

/* y = 0, then over X: y[the coordinates of the flat index i] = x (a
 * dynamic write; repeated indices leave one of the values, ONNX leaves
 * them undefined; an index outside the output is a run-time error). */
static gboolean expand_max_unpool(WeirGraph *g, WeirState *s, WeirNode *n,
                                  GError **error) {
  WeirPort x, ind, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error))
    return FALSE;
  guint r = y.rank;
  if (x.rank != r || ind.rank != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input, indices and output must have one rank");
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  WeirNode *first = weir_state_add_access(g, s, y.container->name);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  {
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
    WeirTaskletPort out = {first, "y", at, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_zero", n->label);
    if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                         (const char *const *)ranges, NULL, 0, &out, 1, "y = 0",
                         NULL, 0, error))
      return FALSE;
  }
  if (weir_port_is_empty(&x))
    return weir_state_remove_node(s, n->id);
  /* The indices address the output of the default shape ((in - 1) *
   * stride - pads + kernel, what MaxPool's input was); a larger
   * output_shape only pads it (ONNX's reference does the same).
   * Coordinate d of flat index i: (i // (product of the default sizes
   * after d)) % default size d. */
  const GArray *k = weir_node_attr_ints(n, "kernel_shape");
  const GArray *st = weir_node_attr_ints(n, "strides");
  const GArray *pads = weir_node_attr_ints(n, "pads");
  guint sp = r >= 2 ? r - 2 : 0;
  if (r < 3 || !k || k->len != sp || (st && st->len != sp) ||
      (pads && pads->len != 2 * sp))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "kernel_shape, strides or pads do not match the "
                          "input's rank");
  g_autoptr(GPtrArray) dims =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < r; d++) {
    if (d < 2) {
      g_ptr_array_add(dims, weir_expr_ref(x.shape[d]));
      continue;
    }
    guint i = d - 2;
    gint64 stride = st ? g_array_index(st, gint64, i) : 1;
    gint64 pad = pads ? g_array_index(pads, gint64, i) +
                            g_array_index(pads, gint64, i + sp)
                      : 0;
    g_autoptr(WeirExpr) m = weir_expr_add_const(x.shape[d], -1);
    g_autoptr(WeirExpr) ms = weir_expr_mul_const(m, stride);
    g_ptr_array_add(dims,
                    weir_expr_add_const(ms, g_array_index(k, gint64, i) - pad));
  }
  g_autoptr(GString) code = g_string_new("y[");
  g_autoptr(WeirExpr) after = weir_expr_const(1);
  g_autoptr(GPtrArray) coords = g_ptr_array_new_with_free_func(g_free);
  for (guint d = r; d-- > 0;) {
    WeirExpr *size = g_ptr_array_index(dims, d);
    g_autofree char *stride = weir_expand_expr_code(after);
    g_autofree char *dim = weir_expand_expr_code(size);
    g_ptr_array_insert(coords, 0,
                       g_strdup_printf("(i / %s) %% %s", stride, dim));
    WeirExpr *next = weir_expr_mul(after, size);
    weir_expr_unref(after);
    after = next;
  }
  for (guint d = 0; d < r; d++)
    g_string_append_printf(code, "%s%s", d ? ", " : "",
                           (char *)g_ptr_array_index(coords, d));
  g_string_append(code, "] = x");
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, x.shape);
  WeirTaskletPort ins[2] = {{x.access, "x", at, WEIR_WCR_NONE},
                            {ind.access, "i", at, WEIR_WCR_NONE}};
  return weir_expand_scatter(
      g, s, n, r, (const char *const *)p, (const char *const *)ranges, ins,
      y.access, WEIR_WCR_NONE, code->str, first, x.container, error);
}

/* --------------------------------------------------------------- windows */

/* w[i] = a0 - a1 cos(2 pi i / N) (+ a2 cos(4 pi i / N)), N = size when
 * periodic, size - 1 otherwise; computed in f64. */
static gboolean expand_window(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (y.rank != 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output '%s' must have rank 1", y.container->name);
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  gboolean periodic = weir_node_attr_int(n, "periodic", 1) != 0;
  g_autoptr(WeirExpr) len = periodic ? weir_expr_ref(y.shape[0])
                                     : weir_expr_add_const(y.shape[0], -1);
  g_autofree char *nd = weir_expand_expr_code(len);
  g_auto(GStrv) p = weir_expand_fresh_params(g, 1);
  const char *sum;
  if (strcmp(n->op, "HannWindow") == 0)
    sum = "y = 0.5 - 0.5 * cos(a)";
  else if (strcmp(n->op, "HammingWindow") == 0)
    sum = "y = 0.5434782608695652 - 0.45652173913043476 * cos(a)"; /* 25/46 */
  else
    sum = "y = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a)";
  g_autofree char *code = g_strdup_printf(
      "a = 6.283185307179586 * f64(%s) / f64(%s)\n%s", p[0], nd, sum);
  return output_map(g, s, n, NULL, &y, p, NULL, 0, code, error) &&
         weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------ register */

void weir_expand_register_indexing(void) {
  static const struct {
    const char *op;
    WeirExpandFunc func;
  } table[] = {
      {"Size", expand_size},
      {"GatherElements", expand_gather_elements},
      {"ScatterElements", expand_scatter_elements},
      {"Scatter", expand_scatter_elements},
      {"GatherND", expand_gather_nd},
      {"Trilu", expand_trilu},
      {"EyeLike", expand_eye_like},
      {"OneHot", expand_one_hot},
      {"DepthToSpace", expand_depth_space},
      {"SpaceToDepth", expand_depth_space},
      {"CumSum", expand_cum_sum},
      {"ReverseSequence", expand_reverse_sequence},
      {"TopK", expand_top_k},
      {"MaxUnpool", expand_max_unpool},
      {"HannWindow", expand_window},
      {"HammingWindow", expand_window},
      {"BlackmanWindow", expand_window},
  };
  for (guint i = 0; i < G_N_ELEMENTS(table); i++)
    weir_op_register_expansion(table[i].op, "pure", table[i].func);
}
