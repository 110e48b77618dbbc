/* shape.c — pure expansions of the shape and data-movement operators.
 *
 * Each expansion replaces the library node by explicit data movement
 * between the same access nodes:
 *  - Reshape, Flatten, Squeeze, Unsqueeze: one copy memlet from the input
 *    to the output access node (full subsets on both sides; the copy runs in
 *    row-major order, which is exactly what a reshape is);
 *  - Transpose, Expand, Tile, Slice, Concat (one map per input), Split (one
 *    map per output): maps whose memlet subsets state the index mapping,
 *    with a tasklet "y = x";
 *  - Gather and Pad: a map over the output whose tasklet reads the input
 *    through an indexed connector (a data-dependent or clamped index) with
 *    a dynamic memlet;
 *  - Shape, ConstantOfShape, Range: tasklets that write constants, symbols
 *    or an arithmetic sequence;
 *  - ScatterND: a copy of the data into the output, then a map over the
 *    updates whose tasklet writes through an indexed output connector
 *    (a dynamic memlet), with the reduction as write-conflict resolution.
 * Sizes are read from the containers, never recomputed from attributes
 * where the containers know them (the output container's shape is
 * authoritative, e.g. for a Reshape whose target shape was symbolic).
 * Outputs with a constant zero size get no map at all.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_shape(void);

/* ------------------------------------------------------------- helpers */

static gint64 ints_at(const GArray *a, guint i) {
  return g_array_index(a, gint64, i);
}

static gboolean is_const(const WeirExpr *e, gint64 v) {
  gint64 x;
  return weir_expr_is_const(e, &x) && x == v;
}

static gboolean port_empty(const WeirPort *p) {
  g_autoptr(WeirExpr) v = weir_container_volume(p->container);
  return is_const(v, 0);
}

static gboolean port_single(const WeirPort *p) {
  g_autoptr(WeirExpr) v = weir_container_volume(p->container);
  return is_const(v, 1);
}

static gboolean normalize(const WeirNode *n, gint64 axis, guint rank,
                          guint *out, GError **error) {
  gint64 a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= (gint64)rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "axis %" G_GINT64_FORMAT " is out of range for "
                          "rank %u",
                          axis, rank);
  *out = (guint)a;
  return TRUE;
}

/* "a + b" for expressions, as subset text. (transfer full) */
static char *offset_text(WeirExpr *offset, const char *param) {
  g_autoptr(WeirExpr) p = weir_expr_symbol(param);
  g_autoptr(WeirExpr) sum = weir_expr_add(offset, p);
  return weir_expr_to_string(sum);
}

/* A map over `ranges` with the tasklet y = x (x read at in_subset, y written
 * at out_subset). */
static gboolean copy_map(WeirGraph *g, WeirState *s, const char *label,
                         guint rank, char **params, char **ranges,
                         const WeirPort *x, const char *in_subset,
                         const WeirPort *y, const char *out_subset,
                         GError **error) {
  WeirTaskletPort in = {x->access, "x", in_subset, WEIR_WCR_NONE};
  WeirTaskletPort out = {y->access, "y", out_subset, WEIR_WCR_NONE};
  return weir_expand_map(g, s, label, rank, (const char *const *)params,
                         (const char *const *)ranges, &in, 1, &out, 1, "y = x",
                         NULL, 0, error) != NULL;
}

/* A constant of dtype as a tasklet literal. (transfer full) */
static char *value_literal(WeirDType dtype, double v) {
  if (weir_dtype_is_float(dtype))
    return weir_expand_float_literal(v);
  if (dtype == WEIR_DTYPE_BOOL)
    return g_strdup(v != 0 ? "true" : "false");
  if (dtype == WEIR_DTYPE_U64 && v >= 9223372036854775808.0)
    return g_strdup_printf("u64(%" G_GINT64_FORMAT ")", (gint64)(guint64)v);
  return g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v);
}

static gboolean ports(WeirGraph *g, WeirState *s, WeirNode *n, WeirPort *x,
                      WeirPort *y, GError **error) {
  return weir_port_require_input(g, s, n, 0, x, error) &&
         weir_port_require_output(g, s, n, 0, y, error);
}

/* ------------------------------------------- Reshape, Flatten, Squeeze... */

/* One copy memlet in -> out: the elements in row-major order. */
static gboolean expand_copy(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  g_autoptr(WeirExpr) vx = weir_container_volume(x.container);
  g_autoptr(WeirExpr) vy = weir_container_volume(y.container);
  gint64 a, b;
  if (weir_expr_is_const(vx, &a) && weir_expr_is_const(vy, &b) && a != b)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input '%s' has %" G_GINT64_FORMAT
                          " elements, output '%s' "
                          "has %" G_GINT64_FORMAT,
                          x.container->name, a, y.container->name, b);
  guint src = x.access->id, dst = y.access->id;
  const char *name = x.container->name;
  g_autoptr(WeirSubset) fx = weir_container_full_subset(x.container);
  g_autoptr(WeirSubset) fy = weir_container_full_subset(y.container);
  g_autofree char *sx = weir_subset_to_string(fx);
  g_autofree char *sy = weir_subset_to_string(fy);
  weir_state_remove_node(s, n->id);
  if (is_const(vy, 0))
    return TRUE;
  WeirMemlet *m =
      weir_state_add_memlet(g, s, src, NULL, dst, NULL, name, sx, error);
  return m && weir_memlet_set_other(m, sy, error);
}

/* ----------------------------------------------------------- Transpose */

static gboolean expand_transpose(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  guint r = y.rank;
  const GArray *perm = weir_node_attr_ints(n, "perm");
  if (x.rank != r || (perm && perm->len != r))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "ranks of input, output and perm differ");
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  g_autofree const char **idx = g_new0(const char *, r + 1);
  for (guint i = 0; i < r; i++) {
    gint64 d = perm ? ints_at(perm, i) : (gint64)(r - 1 - i);
    if (d < 0 || d >= (gint64)r || idx[d])
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "perm is not a permutation");
    idx[d] = p[i];
  }
  g_autofree char *in_subset = weir_expand_index_subset(r, idx);
  g_autofree char *out_subset =
      weir_expand_index_subset(r, (const char *const *)p);
  if (!port_empty(&y) && !copy_map(g, s, n->label, r, p, ranges, &x, in_subset,
                                   &y, out_subset, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------ Concat, Split */

/* Concat copies each input into its slab of the output along the axis;
 * Split copies each slab of the input into an output. Both walk the many
 * side in order, keeping the running offset along the axis; `split` says
 * whether the many side is the outputs. */
static gboolean expand_slabs(WeirGraph *g, WeirState *s, WeirNode *n,
                             gboolean split, GError **error) {
  WeirPort one;
  if (!(split ? weir_port_require_input(g, s, n, 0, &one, error)
              : weir_port_require_output(g, s, n, 0, &one, error)))
    return FALSE;
  guint r = one.rank, axis = 0;
  if (!normalize(n, weir_node_attr_int(n, "axis", 0), r, &axis, error))
    return FALSE;
  const char *side = split ? "output" : "input";
  const GPtrArray *conns = split ? n->out_conns : n->in_conns;
  g_autoptr(WeirExpr) offset = weir_expr_const(0);
  for (guint k = 0; k < conns->len; k++) {
    WeirPort part;
    if (!(split ? weir_port_require_output(g, s, n, k, &part, error)
                : weir_port_require_input(g, s, n, k, &part, error)))
      return FALSE;
    if (part.rank != r)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "%s %u has rank %u, the %s %u", side, k, part.rank,
                            split ? "input" : "output", r);
    if (!port_empty(&part)) {
      g_auto(GStrv) p = weir_expand_fresh_params(g, r);
      g_auto(GStrv) ranges = weir_expand_full_ranges(r, part.shape);
      g_autofree char *part_subset =
          weir_expand_index_subset(r, (const char *const *)p);
      char *keep = p[axis];
      p[axis] = offset_text(offset, keep);
      g_autofree char *slab_subset =
          weir_expand_index_subset(r, (const char *const *)p);
      g_free(p[axis]);
      p[axis] = keep;
      g_autofree char *label =
          g_strdup_printf("%s_%s%u", n->label, split ? "out" : "in", k);
      gboolean ok = split ? copy_map(g, s, label, r, p, ranges, &one,
                                     slab_subset, &part, part_subset, error)
                          : copy_map(g, s, label, r, p, ranges, &part,
                                     part_subset, &one, slab_subset, error);
      if (!ok)
        return FALSE;
    }
    WeirExpr *next = weir_expr_add(offset, part.shape[axis]);
    weir_expr_unref(offset);
    offset = next;
  }
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_concat(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  return expand_slabs(g, s, n, FALSE, error);
}

static gboolean expand_split(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  return expand_slabs(g, s, n, TRUE, error);
}

/* --------------------------------------------------------------- Slice */

static gboolean expand_slice(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  guint r = x.rank;
  const GArray *starts = weir_node_attr_ints(n, "starts");
  const GArray *ends = weir_node_attr_ints(n, "ends");
  const GArray *axes = weir_node_attr_ints(n, "axes");
  const GArray *steps = weir_node_attr_ints(n, "steps");
  if (y.rank != r || !starts || !ends || ends->len != starts->len ||
      (axes && axes->len != starts->len) ||
      (steps && steps->len != starts->len))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "inconsistent ranks or slice attributes");
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  /* Input index of dimension d: begin + step * p_d. */
  g_autoptr(GPtrArray) idx = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(idx, g_strdup(p[d]));
  for (guint i = 0; i < starts->len; i++) {
    guint a = 0;
    if (!normalize(n, axes ? ints_at(axes, i) : (gint64)i, r, &a, error))
      return FALSE;
    gint64 step = steps ? ints_at(steps, i) : 1;
    if (step == 0)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "step of axis %u is 0", a);
    g_autoptr(WeirExpr) begin = NULL;
    g_autoptr(WeirExpr) count = NULL;
    weir_op_slice_range(x.shape[a], ints_at(starts, i), ints_at(ends, i), step,
                        &begin, &count);
    g_autoptr(WeirExpr) pa = weir_expr_symbol(p[a]);
    g_autoptr(WeirExpr) scaled = weir_expr_mul_const(pa, step);
    g_autoptr(WeirExpr) at = weir_expr_add(begin, scaled);
    g_free(idx->pdata[a]);
    idx->pdata[a] = weir_expr_to_string(at);
  }
  g_autofree char *in_subset =
      weir_expand_index_subset(r, (const char *const *)idx->pdata);
  g_autofree char *out_subset =
      weir_expand_index_subset(r, (const char *const *)p);
  if (!port_empty(&y) && !copy_map(g, s, n->label, r, p, ranges, &x, in_subset,
                                   &y, out_subset, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* -------------------------------------------------------------- Gather */

static gboolean expand_gather(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort x, ind, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error))
    return FALSE;
  guint r = x.rank, q = ind.rank, axis = 0;
  if (r == 0 || y.rank != r + q - 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output rank %u, expected %u", y.rank, r + q - 1);
  if (!normalize(n, weir_node_attr_int(n, "axis", 0), r, &axis, error))
    return FALSE;
  if (port_empty(&y)) /* nothing to gather */
    return weir_state_remove_node(s, n->id);
  g_auto(GStrv) p = weir_expand_fresh_params(g, y.rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(y.rank, y.shape);
  /* The indices element at the output's indices dimensions. */
  g_autofree char *ind_subset =
      weir_expand_index_subset(q, (const char *const *)p + axis);
  /* The data: the point of the other dimensions, the whole gathered axis. */
  g_autofree char *dim = weir_expr_to_string(x.shape[axis]);
  g_autofree char *dim_code = weir_expand_expr_code(x.shape[axis]);
  g_autoptr(GString) data_subset = g_string_new(NULL);
  g_autoptr(GString) read = g_string_new("x[");
  for (guint d = 0; d < r; d++) {
    if (d) {
      g_string_append(data_subset, ", ");
      g_string_append(read, ", ");
    }
    if (d == axis) {
      g_string_append_printf(data_subset, "0:%s", dim);
      g_string_append_printf(read, "i < 0 ? i + %s : i", dim_code);
    } else {
      g_string_append(data_subset, p[d < axis ? d : d + q - 1]);
      g_string_append(read, "0");
    }
  }
  g_string_append(read, "]");
  /* A gathered axis of size 1 makes the connector a scalar. */
  g_autofree char *code =
      g_strdup_printf("y = %s", is_const(x.shape[axis], 1) ? "x" : read->str);
  WeirTaskletPort ins[2] = {
      {x.access, "x", data_subset->str, WEIR_WCR_NONE},
      {ind.access, "i", q ? ind_subset : NULL, WEIR_WCR_NONE},
  };
  g_autofree char *out_subset =
      weir_expand_index_subset(y.rank, (const char *const *)p);
  WeirTaskletPort out = {y.access, "y", y.rank ? out_subset : NULL,
                         WEIR_WCR_NONE};
  WeirNode *top = weir_expand_map(
      g, s, n->label, y.rank, (const char *const *)p,
      (const char *const *)ranges, ins, 2, &out, 1, code, NULL, 0, error);
  if (!top)
    return FALSE;
  weir_expand_dynamic_input(s, top, x.container->name, "x");
  return weir_state_remove_node(s, n->id);
}

/* -------------------------------------------------------- Expand, Tile */

static gboolean expand_expand(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  guint r = y.rank;
  if (x.rank > r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input rank %u is above the output rank %u", x.rank,
                          r);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  g_autofree char *in_subset =
      weir_expand_broadcast_subset(x.rank, x.shape, r, (const char *const *)p);
  g_autofree char *out_subset =
      weir_expand_index_subset(r, (const char *const *)p);
  if (!port_empty(&y) && !copy_map(g, s, n->label, r, p, ranges, &x, in_subset,
                                   &y, out_subset, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_tile(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  guint r = y.rank;
  const GArray *rep = weir_node_attr_ints(n, "repeats");
  if (x.rank != r || !rep || rep->len != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "ranks of input, output and repeats differ");
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  /* Input index of output index p_d: p_d mod size_d. */
  g_autoptr(GPtrArray) idx = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < r; d++) {
    if (is_const(x.shape[d], 1)) {
      g_ptr_array_add(idx, g_strdup("0"));
    } else if (ints_at(rep, d) == 1) {
      g_ptr_array_add(idx, g_strdup(p[d]));
    } else {
      g_autoptr(WeirExpr) pd = weir_expr_symbol(p[d]);
      g_autoptr(WeirExpr) m = weir_expr_mod(pd, x.shape[d]);
      g_ptr_array_add(idx, weir_expr_to_string(m));
    }
  }
  g_autofree char *in_subset =
      weir_expand_index_subset(r, (const char *const *)idx->pdata);
  g_autofree char *out_subset =
      weir_expand_index_subset(r, (const char *const *)p);
  if (!port_empty(&y) && !copy_map(g, s, n->label, r, p, ranges, &x, in_subset,
                                   &y, out_subset, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ----------------------------------------------------------------- Pad */

static gboolean expand_pad(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  guint r = x.rank;
  if (y.rank != r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input rank %u, output rank %u", r, y.rank);
  const GArray *pads = weir_node_attr_ints(n, "pads");
  const GArray *axes = weir_node_attr_ints(n, "axes");
  guint n_axes = axes ? axes->len : r;
  if (!pads || pads->len != 2 * n_axes)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "'pads' must have %u entries", 2 * n_axes);
  g_autofree gint64 *before = g_new0(gint64, r + 1);
  g_autofree gint64 *after = g_new0(gint64, r + 1);
  for (guint i = 0; i < n_axes; i++) {
    guint a = i;
    if (axes && !normalize(n, ints_at(axes, i), r, &a, error))
      return FALSE;
    before[a] = ints_at(pads, i);
    after[a] = ints_at(pads, n_axes + i);
  }
  const WeirAttr *ma = weir_node_attr(n, "mode");
  const char *mode = ma && ma->type == WEIR_ATTR_STRING ? ma->s : "constant";
  gboolean constant = strcmp(mode, "constant") == 0;
  gboolean reflect = strcmp(mode, "reflect") == 0;
  if (!constant && !reflect && strcmp(mode, "edge") != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (Pad): mode '%s' (supported: constant, reflect, "
                "edge)",
                n->label, mode);
    return FALSE;
  }
  if (port_empty(&y))
    return weir_state_remove_node(s, n->id);
  g_autofree char *value =
      value_literal(x.container->dtype, weir_node_attr_float(n, "value", 0));
  /* A constant_value known only at run time stays wired as input 2 (a
   * one-element tensor): the tasklet reads it instead of the literal. */
  WeirPort cv;
  g_autoptr(GError) cv_error = NULL;
  gboolean runtime_value = weir_port_input(g, s, n, 2, &cv, &cv_error);
  if (cv_error) {
    g_propagate_error(error, g_steal_pointer(&cv_error));
    return FALSE;
  }
  if (runtime_value) {
    g_free(value);
    value = g_strdup("cv");
  }
  gboolean have_input = !port_empty(&x);
  if (!have_input && !constant)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "mode '%s' cannot pad an empty input", mode);

  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  /* Tasklet: the input index of each dimension (pad_i<d>), folded back
   * into the input for reflect/edge, or tested for constant. */
  g_autoptr(GString) code = g_string_new(NULL);
  g_autoptr(GString) cond = g_string_new(NULL);
  g_autoptr(GString) read = g_string_new("x[");
  for (guint d = 0; d < r; d++) {
    g_autofree char *dim = weir_expand_expr_code(x.shape[d]);
    g_autoptr(WeirExpr) pd = weir_expr_symbol(p[d]);
    g_autoptr(WeirExpr) at = weir_expr_add_const(pd, -before[d]);
    g_autofree char *at_code = weir_expand_expr_code(at);
    g_string_append_printf(code, "pad_i%u = %s\n", d, at_code);
    const char *var = "pad_i";
    /* Only a dimension padded on a side can leave the input there. */
    gboolean low = before[d] > 0, high = after[d] > 0;
    if (constant) {
      if (low)
        g_string_append_printf(cond, "%spad_i%u >= 0", cond->len ? " && " : "",
                               d);
      if (high)
        g_string_append_printf(cond, "%spad_i%u < %s", cond->len ? " && " : "",
                               d, dim);
    } else if (reflect && (low || high)) {
      g_string_append_printf(
          code, "pad_a%u = pad_i%u < 0 ? -pad_i%u : pad_i%u\n", d, d, d, d);
      g_string_append_printf(
          code, "pad_r%u = pad_a%u >= %s ? 2 * %s - 2 - pad_a%u : pad_a%u\n", d,
          d, dim, dim, d, d);
      var = "pad_r";
    } else if (low || high) {
      g_string_append_printf(code, "pad_e%u = min(max(pad_i%u, 0), %s - 1)\n",
                             d, d, dim);
      var = "pad_e";
    }
    g_string_append_printf(read, "%s%s%u", d ? ", " : "", var, d);
  }
  g_string_append(read, "]");
  const char *x_read = port_single(&x) ? "x" : read->str;
  if (!have_input)
    g_string_append_printf(code, "y = %s", value);
  else if (constant && cond->len)
    g_string_append_printf(code, "y = %s ? %s : %s", cond->str, x_read, value);
  else
    g_string_append_printf(code, "y = %s", x_read);

  WeirTaskletPort ins[2];
  guint n_ins = 0;
  if (have_input)
    ins[n_ins++] = (WeirTaskletPort){x.access, "x", NULL, WEIR_WCR_NONE};
  if (runtime_value)
    ins[n_ins++] = (WeirTaskletPort){cv.access, "cv", NULL, WEIR_WCR_NONE};
  g_autofree char *out_subset =
      weir_expand_index_subset(r, (const char *const *)p);
  WeirTaskletPort out = {y.access, "y", r ? out_subset : NULL, WEIR_WCR_NONE};
  WeirNode *top = weir_expand_map(g, s, n->label, r, (const char *const *)p,
                                  (const char *const *)ranges, ins, n_ins, &out,
                                  1, code->str, NULL, 0, error);
  if (!top)
    return FALSE;
  if (have_input)
    weir_expand_dynamic_input(s, top, x.container->name, "x");
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------ Shape, ConstantOfShape */

static gboolean expand_shape(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort x, y;
  if (!ports(g, s, n, &x, &y, error))
    return FALSE;
  gint64 r = x.rank;
  gint64 start = weir_node_attr_int(n, "start", 0),
         end = weir_node_attr_int(n, "end", r);
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = CLAMP(start, 0, r);
  end = CLAMP(end, start, r);
  gint64 len = end - start;
  if (y.rank != 1 || !is_const(y.shape[0], len))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output '%s' must have shape [%" G_GINT64_FORMAT "]",
                          y.container->name, len);
  if (len == 0)
    return weir_state_remove_node(s, n->id);
  /* The dimensions are constants or symbols of the program. */
  g_autoptr(GString) code = g_string_new(NULL);
  for (gint64 k = 0; k < len; k++) {
    g_autofree char *dim = weir_expand_expr_code(x.shape[start + k]);
    if (len == 1)
      g_string_append_printf(code, "y = %s", dim);
    else
      g_string_append_printf(code, "%sy[%" G_GINT64_FORMAT "] = %s",
                             k ? "\n" : "", k, dim);
  }
  WeirTaskletPort out = {y.access, "y", NULL, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, n->label, 0, NULL, NULL, NULL, 0, &out, 1,
                       code->str, NULL, 0, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* A map over the whole output y running `code`, where "$p" stands for the
 * parameter of the first dimension. */
static gboolean fill_map(WeirGraph *g, WeirState *s, WeirNode *n,
                         const WeirPort *y, const WeirTaskletPort *ins,
                         guint n_ins, const char *code, GError **error) {
  guint r = y->rank;
  if (!port_empty(y)) {
    g_auto(GStrv) p = weir_expand_fresh_params(g, r);
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, y->shape);
    g_autofree char *out_subset =
        weir_expand_index_subset(r, (const char *const *)p);
    WeirTaskletPort out = {y->access, "y", r ? out_subset : NULL,
                           WEIR_WCR_NONE};
    g_autofree char *text = g_strdup(code);
    if (r > 0) {
      g_autoptr(GString) t = g_string_new(code);
      g_string_replace(t, "$p", p[0], 0);
      g_free(text);
      text = g_strdup(t->str);
    }
    if (!weir_expand_map(g, s, n->label, r, (const char *const *)p,
                         (const char *const *)ranges, ins, n_ins, &out, 1, text,
                         NULL, 0, error))
      return FALSE;
  }
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_constant_of_shape(WeirGraph *g, WeirState *s,
                                         WeirNode *n, GError **error) {
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  g_autofree char *value =
      value_literal(y.container->dtype, weir_node_attr_float(n, "value", 0));
  g_autofree char *code = g_strdup_printf("y = %s", value);
  return fill_map(g, s, n, &y, NULL, 0, code, error);
}

/* --------------------------------------------------------------- Range */

static gboolean expand_range(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort y, start, delta;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (y.rank != 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output '%s' must be 1-D", y.container->name);
  WeirDType dt = y.container->dtype;
  gboolean fl = dt == WEIR_DTYPE_F32 || dt == WEIR_DTYPE_F64;
  /* Element k is start + k * delta, computed in double for floating types
   * (like numpy's arange) and in 64-bit integers otherwise. */
  const WeirAttr *sa = weir_node_attr(n, "start");
  const WeirAttr *da = weir_node_attr(n, "delta");
  if (sa && da) {
    g_autofree char *sv =
        fl ? weir_expand_float_literal(sa->f)
           : g_strdup_printf("%" G_GINT64_FORMAT, (gint64)sa->f);
    g_autofree char *dv =
        fl ? weir_expand_float_literal(da->f)
           : g_strdup_printf("%" G_GINT64_FORMAT, (gint64)da->f);
    g_autofree char *code =
        fl ? g_strdup_printf("y = %s + f64($p) * %s", sv, dv)
           : g_strdup_printf("y = %s + $p * %s", sv, dv);
    return fill_map(g, s, n, &y, NULL, 0, code, error);
  }
  g_autoptr(GError) local = NULL;
  if (!weir_port_input(g, s, n, 0, &start, &local) ||
      !weir_port_input(g, s, n, 2, &delta, &local)) {
    if (local)
      g_propagate_error(error, g_steal_pointer(&local));
    else
      weir_node_fail(error, WEIR_ERROR_INVALID, n,
                     "start and delta are neither attributes nor inputs");
    return FALSE;
  }
  if (!port_single(&start) || !port_single(&delta))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "start and delta must be scalars");
  WeirTaskletPort ins[2] = {{start.access, "s", NULL, WEIR_WCR_NONE},
                            {delta.access, "d", NULL, WEIR_WCR_NONE}};
  const char *code =
      fl ? "y = f64(s) + f64($p) * f64(d)" : "y = i64(s) + $p * i64(d)";
  return fill_map(g, s, n, &y, ins, 2, code, error);
}

/* ----------------------------------------------------------- ScatterND */

/* Copies the data into the output, then a map over the updates writes each
 * update element at the place its index tuple names (negative indices
 * count from the end), combined by the reduction's write-conflict
 * resolution (none: the last write wins, ONNX leaves duplicates
 * undefined). */
static gboolean expand_scatter_nd(WeirGraph *g, WeirState *s, WeirNode *n,
                                  GError **error) {
  WeirPort x, ind, upd, y;
  if (!ports(g, s, n, &x, &y, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error) ||
      !weir_port_require_input(g, s, n, 2, &upd, error))
    return FALSE;
  guint r = x.rank, q = ind.rank;
  gint64 k = 0;
  if (q == 0 || !weir_expr_is_const(ind.shape[q - 1], &k) || k < 1 ||
      k > (gint64)r || y.rank != r || upd.rank != q - 1 + r - (guint)k)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "the shapes of data, indices and updates do not "
                          "agree");
  const char *red = weir_node_attr_string(n, "reduction", "none");
  WeirWcr wcr = WEIR_WCR_NONE;
  if (strcmp(red, "add") == 0)
    wcr = WEIR_WCR_SUM;
  else if (strcmp(red, "mul") == 0)
    wcr = WEIR_WCR_PROD;
  else if (strcmp(red, "max") == 0)
    wcr = WEIR_WCR_MAX;
  else if (strcmp(red, "min") == 0)
    wcr = WEIR_WCR_MIN;
  else if (strcmp(red, "none") != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "reduction '%s'", red);
  if (port_empty(&y))
    return weir_state_remove_node(s, n->id);
  /* 1. y = x, into a second access node of the output. */
  WeirNode *first = weir_state_add_access(g, s, y.container->name);
  WeirPort y1 = y;
  y1.access = first;
  {
    g_auto(GStrv) p = weir_expand_fresh_params(g, r);
    g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
    g_autofree char *sub = weir_expand_index_subset(r, (const char *const *)p);
    g_autofree char *label = g_strdup_printf("%s_copy", n->label);
    if (!copy_map(g, s, label, r, p, ranges, &x, sub, &y1, sub, error))
      return FALSE;
  }
  if (port_empty(&upd)) {
    /* Nothing to scatter: the copy is the result; the indices, updates
     * and the node's output access node are left unused. */
    return weir_state_remove_node(s, n->id);
  }
  /* 2. The scatter, ordered after the copy. */
  guint ur = upd.rank;
  g_auto(GStrv) p = weir_expand_fresh_params(g, ur);
  g_auto(GStrv) ranges = weir_expand_full_ranges(ur, upd.shape);
  g_autofree char *upd_subset =
      weir_expand_index_subset(ur, (const char *const *)p);
  /* indices[p0 .. p(q-2), 0:k] */
  GString *ind_subset = g_string_new(NULL);
  for (guint d = 0; d + 1 < q; d++)
    g_string_append_printf(ind_subset, "%s, ", p[d]);
  g_string_append_printf(ind_subset, k == 1 ? "0" : "0:%" G_GINT64_FORMAT, k);
  g_autofree char *ind_text = g_string_free(ind_subset, FALSE);
  GString *code = g_string_new(NULL);
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
  g_string_append(code, "y[");
  for (guint d = 0; d < r; d++) {
    if (d)
      g_string_append(code, ", ");
    if ((gint64)d < k) {
      g_autofree char *dim = weir_expand_expr_code(x.shape[d]);
      g_string_append_printf(code, "j%u < 0 ? j%u + %s : j%u", d, d, dim, d);
    } else {
      g_string_append(code, p[q - 1 + d - (guint)k]);
    }
  }
  g_string_append(code, "] = u");
  g_autofree char *body = g_string_free(code, FALSE);
  WeirTaskletPort ins[2] = {
      {upd.access, "u", ur ? upd_subset : NULL, WEIR_WCR_NONE},
      {ind.access, "i", ind_text, WEIR_WCR_NONE},
  };
  return weir_expand_scatter(g, s, n, ur, (const char *const *)p,
                             (const char *const *)ranges, ins, y.access, wcr,
                             body, first, upd.container, error);
}

/* ------------------------------------------------------------ register */

void weir_expand_register_shape(void) {
  weir_op_register_expansion("Reshape", "pure", expand_copy);
  weir_op_register_expansion("Flatten", "pure", expand_copy);
  weir_op_register_expansion("Squeeze", "pure", expand_copy);
  weir_op_register_expansion("Unsqueeze", "pure", expand_copy);
  weir_op_register_expansion("Transpose", "pure", expand_transpose);
  weir_op_register_expansion("Concat", "pure", expand_concat);
  weir_op_register_expansion("Split", "pure", expand_split);
  weir_op_register_expansion("Slice", "pure", expand_slice);
  weir_op_register_expansion("Gather", "pure", expand_gather);
  weir_op_register_expansion("Expand", "pure", expand_expand);
  weir_op_register_expansion("Tile", "pure", expand_tile);
  weir_op_register_expansion("Pad", "pure", expand_pad);
  weir_op_register_expansion("Shape", "pure", expand_shape);
  weir_op_register_expansion("ConstantOfShape", "pure",
                             expand_constant_of_shape);
  weir_op_register_expansion("Range", "pure", expand_range);
  weir_op_register_expansion("ScatterND", "pure", expand_scatter_nd);
}
