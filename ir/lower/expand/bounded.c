/* bounded.c — pure expansions of the operators whose output length is
 * known only at run time (schemas in ir/ops/bounded.c).
 *
 * Each output with a data-dependent length has its upper bound as extent
 * and the node's connector "count" receives the valid length.  The
 * expansions only use maps whose iterations are independent:
 *
 *  - NonZero and Compress: a 0/1 mask of the kept elements (or slices),
 *    each kept one's place as the number of kept ones before it (a map over
 *    every pair, summed), the count as the mask's sum; the output is set
 *    to 0, then a map over the input writes every element at its place
 *    (elements not kept add 0 at a valid place: the output is summed into,
 *    or for bool combined by max).
 *  - Unique: x as a matrix of n slices (n elements without an axis) by K;
 *    for every pair of slices the first column where they differ (K when
 *    they are equal, a min over the columns); a slice is the first of its
 *    value when no earlier slice equals it; its value's place is the number
 *    of first slices that sort before it (sorted: compared by their first
 *    differing element) or that come before its value's first slice (not
 *    sorted).  Y, indices and counts are scattered at that place,
 *    inverse_indices is it.
 *
 *  - NonMaxSuppression: a nested program (the greedy selection carries
 *    state from box to box, which the independent iterations of a map
 *    cannot): a state `prepare` computes every box's overlap with every
 *    other of its batch (IoU above the threshold), every box's place in its
 *    class's descending score order (ties by index) and whether its score
 *    passes the threshold; a state `select` runs once per box (a loop over
 *    the symbol t, N iterations): a box is kept when it passes and no kept
 *    box before it overlaps it, computed for all boxes from the previous
 *    iteration's decisions (after k iterations the first k boxes of each
 *    class are final); a state `write` keeps the first max_output kept
 *    boxes of each class and writes them, class after class, as (batch,
 *    class, box) rows.
 *
 * The pairwise maps make these O(n^2) in the number of elements (slices):
 * meant for the sizes these operators see in models' pre- and
 * post-processing, not for large tensors.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_bounded(void);

/* ------------------------------------------------------------- helpers */

/* A new transient of the node and an access node of it (borrowed). */
static WeirNode *scratch(WeirGraph *g, WeirState *s, const WeirNode *n,
                         const char *what, WeirDType dtype, guint rank,
                         WeirExpr *const *shape) {
  g_autofree char *base = weir_expand_name(n, what);
  WeirContainer *c = weir_expand_add_transient(g, base, dtype, rank, shape);
  return weir_state_add_access(g, s, c->name);
}

/* The access node on output connector conn of n, or NULL with an error. */
static WeirNode *output_access(WeirState *s, WeirNode *n, const char *conn,
                               GError **error) {
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, conn, FALSE, TRUE);
  WeirNode *a = m ? weir_state_node(s, m->dst) : NULL;
  if (!a || a->kind != WEIR_NODE_ACCESS) {
    weir_node_fail(error, WEIR_ERROR_INVALID, n,
                   "output '%s' is not wired to an access node", conn);
    return NULL;
  }
  return a;
}

/* Sets every element of the container of access node `like` to `value`
 * through a new access node of it, which is returned (the node that later
 * accumulations must follow); NULL with an error. */
static WeirNode *fill(WeirGraph *g, WeirState *s, const WeirNode *n,
                      const WeirNode *like, const char *value, GError **error) {
  const WeirContainer *c = weir_graph_container(g, like->data);
  guint r = c->shape->len;
  WeirNode *first = weir_state_add_access(g, s, c->name);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges =
      weir_expand_full_ranges(r, (WeirExpr *const *)c->shape->pdata);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  g_autofree char *code = g_strdup_printf("y = %s", value);
  g_autofree char *label = g_strdup_printf("%s_init_%s", n->label, c->name);
  WeirTaskletPort out = {first, "y", r ? at : NULL, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                       (const char *const *)ranges, NULL, 0, &out, 1, code,
                       NULL, 0, error))
    return NULL;
  return first;
}

/* One map over `rank` fresh parameters named in p with ranges, reading
 * ins and writing one output; `after` (may be NULL) must complete first. */
static gboolean map(WeirGraph *g, WeirState *s, const WeirNode *n,
                    const char *what, guint rank, char **p, char **ranges,
                    const WeirTaskletPort *ins, guint n_ins,
                    WeirTaskletPort out, const char *code, WeirNode *after,
                    GError **error) {
  g_autofree char *label = g_strdup_printf("%s_%s", n->label, what);
  return weir_expand_map(g, s, label, rank, (const char *const *)p,
                         (const char *const *)ranges, ins, n_ins, &out, 1, code,
                         after ? &after : NULL, after ? 1 : 0, error) != NULL;
}

/* The row-major flat index of params p over shape (tasklet and subset
 * text). (transfer full) */
static char *flat_index(guint rank, char **p, WeirExpr *const *shape) {
  GString *t = g_string_new(NULL);
  g_autoptr(WeirExpr) stride = weir_expr_const(1);
  for (guint d = rank; d-- > 0;) {
    g_autofree char *sc = weir_expand_expr_code(stride);
    g_string_prepend(t, d + 1 < rank ? " + " : "");
    g_autofree char *term = g_strdup_printf("%s * %s", p[d], sc);
    g_string_prepend(t, term);
    WeirExpr *next = weir_expr_mul(stride, shape[d]);
    weir_expr_unref(stride);
    stride = next;
  }
  if (rank == 0)
    g_string_append(t, "0");
  return g_string_free(t, FALSE);
}

static char **params_of(WeirGraph *g, guint rank) {
  return weir_expand_fresh_params(g, rank);
}

static char **ranges_of(guint rank, WeirExpr *const *dims) {
  return weir_expand_full_ranges(rank, dims);
}

/* The mask's exclusive prefix sum and total: pos[i] = the number of j < i
 * with m[j] != 0 (a map over every pair), and count = the sum of m.  m
 * and pos are [len] transients. */
static gboolean places(WeirGraph *g, WeirState *s, WeirNode *n, WeirNode *m,
                       WeirExpr *len, WeirNode **pos_out, GError **error) {
  WeirNode *pos_acc = scratch(g, s, n, "pos", WEIR_DTYPE_I64, 1, &len);
  WeirNode *pos_init = fill(g, s, n, pos_acc, "0", error);
  if (!pos_init)
    return FALSE;
  WeirExpr *two[2] = {len, len};
  g_auto(GStrv) p = params_of(g, 2);
  g_auto(GStrv) r = ranges_of(2, two);
  WeirTaskletPort in = {m, "m", p[1], WEIR_WCR_NONE};
  WeirTaskletPort out = {pos_acc, "y", p[0], WEIR_WCR_SUM};
  g_autofree char *code = g_strdup_printf("y = %s < %s ? m : 0", p[1], p[0]);
  if (!map(g, s, n, "places", 2, p, r, &in, 1, out, code, pos_init, error))
    return FALSE;
  WeirNode *count = output_access(s, n, "count", error);
  if (!count)
    return FALSE;
  WeirNode *count_init = fill(g, s, n, count, "0", error);
  if (!count_init)
    return FALSE;
  g_auto(GStrv) q = params_of(g, 1);
  g_auto(GStrv) rq = ranges_of(1, &len);
  WeirTaskletPort cin = {m, "m", q[0], WEIR_WCR_NONE};
  WeirTaskletPort cout = {count, "y", NULL, WEIR_WCR_SUM};
  if (!map(g, s, n, "count", 1, q, rq, &cin, 1, cout, "y = m", count_init,
           error))
    return FALSE;
  *pos_out = pos_acc;
  return TRUE;
}

/* Ends a scatter map over x: the write into y (its port's access node) at
 * a data-dependent place, `iterations` writes in all. */
static gboolean scatter(WeirGraph *g, WeirState *s, const WeirNode *n,
                        const char *what, guint rank, char **p, char **ranges,
                        const WeirTaskletPort *ins, guint n_ins, WeirNode *y,
                        WeirNode *y_init, const char *code, GError **error) {
  const WeirContainer *c = weir_graph_container(g, y->data);
  WeirWcr wcr = c->dtype == WEIR_DTYPE_BOOL ? WEIR_WCR_MAX : WEIR_WCR_SUM;
  WeirTaskletPort out = {y, "y", NULL, wcr};
  g_autofree char *label = g_strdup_printf("%s_%s", n->label, what);
  WeirNode *top = weir_expand_map(g, s, label, rank, (const char *const *)p,
                                  (const char *const *)ranges, ins, n_ins, &out,
                                  1, code, &y_init, 1, error);
  if (!top)
    return FALSE;
  g_autoptr(WeirExpr) it = weir_expr_const(1);
  for (guint d = 0; d < rank; d++) {
    WeirRange rg;
    if (!weir_range_parse(ranges[d], &rg, error))
      return FALSE;
    g_autoptr(WeirExpr) size = weir_range_size(&rg);
    weir_range_clear(&rg);
    WeirExpr *next = weir_expr_mul(it, size);
    weir_expr_unref(it);
    it = next;
  }
  weir_expand_dynamic_output(s, top, "y", it);
  return TRUE;
}

/* ------------------------------------------------------------- NonZero */

static gboolean expand_non_zero(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint r = x.rank;
  if (r == 0 || y.rank != 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input of rank >= 1 and output of rank 2 expected");
  WeirExpr *len = y.shape[1];
  /* m[flat(p)] = x[p] != 0 */
  WeirNode *m = scratch(g, s, n, "mask", WEIR_DTYPE_I64, 1, &len);
  g_auto(GStrv) p = params_of(g, r + 1);
  g_auto(GStrv) xr = ranges_of(r, x.shape);
  g_autofree char *xat = weir_expand_index_subset(r, (const char *const *)p);
  g_autofree char *flat = flat_index(r, p, x.shape);
  {
    WeirTaskletPort in = {x.access, "x", xat, WEIR_WCR_NONE};
    WeirTaskletPort out = {m, "y", flat, WEIR_WCR_NONE};
    if (!map(g, s, n, "mask", r, p, xr, &in, 1, out, "y = x != 0 ? 1 : 0", NULL,
             error))
      return FALSE;
  }
  WeirNode *pos = NULL;
  if (!places(g, s, n, m, len, &pos, error))
    return FALSE;
  WeirNode *y_init = fill(g, s, n, y.access, "0", error);
  if (!y_init)
    return FALSE;
  /* y[d, pos[f]] += m[f] ? p_d : 0 over (p, d) */
  g_autofree char *rk = g_strdup_printf("0:%u", r);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new();
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(ranges, xr[d]);
  g_ptr_array_add(ranges, rk);
  GString *value = g_string_new(NULL);
  for (guint d = 0; d + 1 < r; d++)
    g_string_append_printf(value, "%s == %u ? %s : ", p[r], d, p[d]);
  g_string_append(value, p[r - 1]);
  g_autofree char *v = g_string_free(value, FALSE);
  g_autofree char *lm1 = weir_expand_expr_code(len);
  g_autofree char *code =
      g_strdup_printf("y[%s, min(k, %s - 1)] = m != 0 ? %s : 0", p[r], lm1, v);
  WeirTaskletPort ins[2] = {{m, "m", flat, WEIR_WCR_NONE},
                            {pos, "k", flat, WEIR_WCR_NONE}};
  if (!scatter(g, s, n, "scatter", r + 1, p, (char **)ranges->pdata, ins, 2,
               y.access, y_init, code, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------ Compress */

/* The tasklet text of x's coordinates of flat index f (x[...] indexed). */
static char *unflatten(const char *f, guint rank, WeirExpr *const *shape) {
  GString *t = g_string_new(NULL);
  g_autoptr(WeirExpr) stride = weir_expr_const(1);
  for (guint d = rank; d-- > 0;) {
    g_autofree char *sc = weir_expand_expr_code(stride);
    g_autofree char *dc = weir_expand_expr_code(shape[d]);
    g_autofree char *c =
        g_strdup_printf("%s%s / %s %% %s", d ? ", " : "", f, sc, dc);
    g_string_prepend(t, c);
    WeirExpr *next = weir_expr_mul(stride, shape[d]);
    weir_expr_unref(stride);
    stride = next;
  }
  return g_string_free(t, FALSE);
}

static gboolean expand_compress(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  WeirPort x, c, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &c, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint r = x.rank;
  const WeirAttr *a = weir_node_attr(n, "axis");
  guint axis = 0;
  if (c.rank != 1 ||
      (a && !weir_op_normalize_axis(n, "axis", a->i, r, FALSE, &axis, error)))
    return c.rank != 1 ? weir_node_fail(error, WEIR_ERROR_INVALID, n,
                                        "the condition must be a vector")
                       : FALSE;
  WeirExpr *len = c.shape[0];
  /* m[j] = condition[j] */
  WeirNode *m = scratch(g, s, n, "mask", WEIR_DTYPE_I64, 1, &len);
  {
    g_auto(GStrv) p = params_of(g, 1);
    g_auto(GStrv) rg = ranges_of(1, &len);
    WeirTaskletPort in = {c.access, "c", p[0], WEIR_WCR_NONE};
    WeirTaskletPort out = {m, "y", p[0], WEIR_WCR_NONE};
    if (!map(g, s, n, "mask", 1, p, rg, &in, 1, out, "y = c ? 1 : 0", NULL,
             error))
      return FALSE;
  }
  WeirNode *pos = NULL;
  if (!places(g, s, n, m, len, &pos, error))
    return FALSE;
  WeirNode *y_init = fill(g, s, n, y.access, "0", error);
  if (!y_init)
    return FALSE;
  g_autofree char *lm1 = weir_expand_expr_code(len);
  if (!a) {
    /* over f < len: y[pos[f]] += m[f] ? x[unflatten(f)] : 0 */
    g_auto(GStrv) p = params_of(g, 1);
    g_auto(GStrv) rg = ranges_of(1, &len);
    g_autofree char *coords = unflatten(p[0], r, x.shape);
    g_autofree char *code =
        g_strdup_printf("y[min(k, %s - 1)] = m != 0 ? x[%s] : 0", lm1, coords);
    WeirTaskletPort ins[3] = {{m, "m", p[0], WEIR_WCR_NONE},
                              {pos, "k", p[0], WEIR_WCR_NONE},
                              {x.access, "x", NULL, WEIR_WCR_NONE}};
    const WeirContainer *yc = y.container;
    WeirWcr wcr = yc->dtype == WEIR_DTYPE_BOOL ? WEIR_WCR_MAX : WEIR_WCR_SUM;
    WeirTaskletPort out = {y.access, "y", NULL, wcr};
    g_autofree char *label = g_strdup_printf("%s_scatter", n->label);
    WeirNode *top = weir_expand_map(g, s, label, 1, (const char *const *)p,
                                    (const char *const *)rg, ins, 3, &out, 1,
                                    code, &y_init, 1, error);
    if (!top)
      return FALSE;
    weir_expand_dynamic_input(s, top, x.container->name, "x");
    weir_expand_dynamic_output(s, top, "y", len);
    return weir_state_remove_node(s, n->id);
  }
  /* over x with p_axis < len: y[.., pos[p_axis], ..] += m ? x[p] : 0 */
  g_auto(GStrv) p = params_of(g, r);
  g_autofree WeirExpr **dims = g_new0(WeirExpr *, r);
  for (guint d = 0; d < r; d++)
    dims[d] = d == axis ? len : x.shape[d];
  g_auto(GStrv) rg = ranges_of(r, dims);
  g_autofree char *xat = weir_expand_index_subset(r, (const char *const *)p);
  GString *yat = g_string_new(NULL);
  for (guint d = 0; d < r; d++) {
    if (d)
      g_string_append(yat, ", ");
    if (d == axis)
      g_string_append_printf(yat, "min(k, %s - 1)", lm1);
    else
      g_string_append(yat, p[d]);
  }
  g_autofree char *yt = g_string_free(yat, FALSE);
  g_autofree char *code = g_strdup_printf("y[%s] = m != 0 ? x : 0", yt);
  WeirTaskletPort ins[3] = {{m, "m", p[axis], WEIR_WCR_NONE},
                            {pos, "k", p[axis], WEIR_WCR_NONE},
                            {x.access, "x", xat, WEIR_WCR_NONE}};
  if (!scatter(g, s, n, "scatter", r, p, rg, ins, 3, y.access, y_init, code,
               error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* -------------------------------------------------------------- Unique */

static gboolean expand_unique(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint r = x.rank;
  const WeirAttr *a = weir_node_attr(n, "axis");
  gboolean sorted = weir_node_attr_int(n, "sorted", 1) != 0;
  guint axis = 0;
  if (a && !weir_op_normalize_axis(n, "axis", a->i, r, FALSE, &axis, error))
    return FALSE;
  /* x as X[n_slices, K]: i = p_axis (flat index without an axis), k = the
   * flat index of the other coordinates. */
  g_autoptr(WeirExpr) ns = NULL;
  g_autoptr(WeirExpr) kk = weir_expr_const(1);
  g_auto(GStrv) p = params_of(g, MAX(r, 3));
  g_autofree char *i_text = NULL, *k_text = NULL;
  if (a) {
    ns = weir_expr_ref(x.shape[axis]);
    g_autoptr(GPtrArray) other = g_ptr_array_new();
    g_autoptr(GPtrArray) oshape = g_ptr_array_new();
    for (guint d = 0; d < r; d++) {
      if (d == axis)
        continue;
      g_ptr_array_add(other, p[d]);
      g_ptr_array_add(oshape, x.shape[d]);
      WeirExpr *next = weir_expr_mul(kk, x.shape[d]);
      weir_expr_unref(kk);
      kk = next;
    }
    i_text = g_strdup(p[axis]);
    k_text = flat_index(other->len, (char **)other->pdata,
                        (WeirExpr *const *)oshape->pdata);
  } else {
    ns = weir_expr_const(1);
    for (guint d = 0; d < r; d++) {
      WeirExpr *next = weir_expr_mul(ns, x.shape[d]);
      weir_expr_unref(ns);
      ns = next;
    }
    i_text = flat_index(r, p, x.shape);
    k_text = g_strdup("0");
  }
  g_autofree char *xat = weir_expand_index_subset(r, (const char *const *)p);
  g_auto(GStrv) xr = ranges_of(r, x.shape);
  WeirExpr *mat[2] = {ns, kk};
  WeirNode *X = scratch(g, s, n, "slices", x.container->dtype, 2, mat);
  {
    g_autofree char *at = g_strdup_printf("%s, %s", i_text, k_text);
    WeirTaskletPort in = {x.access, "x", r ? xat : NULL, WEIR_WCR_NONE};
    WeirTaskletPort out = {X, "y", at, WEIR_WCR_NONE};
    if (!map(g, s, n, "slices", r, p, xr, &in, 1, out, "y = x", NULL, error))
      return FALSE;
  }
  g_autofree char *kc = weir_expand_expr_code(kk);
  g_autofree char *nc = weir_expand_expr_code(ns);
  /* fd[i, j] = the first column where slices i and j differ (K: equal) */
  WeirExpr *pair[2] = {ns, ns};
  WeirNode *fd = scratch(g, s, n, "differ", WEIR_DTYPE_I64, 2, pair);
  WeirNode *fd_init = fill(g, s, n, fd, kc, error);
  if (!fd_init)
    return FALSE;
  {
    WeirExpr *three[3] = {ns, ns, kk};
    g_auto(GStrv) rg = ranges_of(3, three);
    g_autofree char *ai = g_strdup_printf("%s, %s", p[0], p[2]);
    g_autofree char *bj = g_strdup_printf("%s, %s", p[1], p[2]);
    g_autofree char *at = g_strdup_printf("%s, %s", p[0], p[1]);
    g_autofree char *code = g_strdup_printf("y = a != b ? %s : %s", p[2], kc);
    WeirTaskletPort ins[2] = {{X, "a", ai, WEIR_WCR_NONE},
                              {X, "b", bj, WEIR_WCR_NONE}};
    WeirTaskletPort out = {fd, "y", at, WEIR_WCR_MIN};
    if (!map(g, s, n, "differ", 3, p, rg, ins, 2, out, code, fd_init, error))
      return FALSE;
  }
  g_auto(GStrv) r2 = ranges_of(2, pair);
  g_auto(GStrv) r1 = ranges_of(1, pair);
  g_autofree char *ij = g_strdup_printf("%s, %s", p[0], p[1]);
  g_autofree char *ji = g_strdup_printf("%s, %s", p[1], p[0]);
  /* dup[i] = 1 when an earlier slice equals slice i */
  WeirNode *dup = scratch(g, s, n, "repeat", WEIR_DTYPE_I64, 1, &ns);
  WeirNode *dup_init = fill(g, s, n, dup, "0", error);
  if (!dup_init)
    return FALSE;
  {
    g_autofree char *code =
        g_strdup_printf("y = %s < %s && f == %s ? 1 : 0", p[1], p[0], kc);
    WeirTaskletPort in = {fd, "f", ji, WEIR_WCR_NONE};
    WeirTaskletPort out = {dup, "y", p[0], WEIR_WCR_MAX};
    if (!map(g, s, n, "repeat", 2, p, r2, &in, 1, out, code, dup_init, error))
      return FALSE;
  }
  /* key[j, i] = 1 when first slice j comes before slice i's value */
  WeirNode *before = scratch(g, s, n, "before", WEIR_DTYPE_I64, 2, pair);
  if (sorted) {
    /* slice j < slice i: they differ first at column f, where j's element
     * is smaller */
    g_autofree char *code = g_strdup_printf(
        "c = min(f, %s - 1)\ny = f < %s && X[%s, c] < X[%s, c] ? 1 : 0", kc, kc,
        p[0], p[1]);
    WeirTaskletPort ins[2] = {{fd, "f", ij, WEIR_WCR_NONE},
                              {X, "X", NULL, WEIR_WCR_NONE}};
    WeirTaskletPort out = {before, "y", ij, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_order", n->label);
    WeirNode *top = weir_expand_map(g, s, label, 2, (const char *const *)p,
                                    (const char *const *)r2, ins, 2, &out, 1,
                                    code, NULL, 0, error);
    if (!top)
      return FALSE;
    weir_expand_dynamic_input(s, top, weir_graph_container(g, X->data)->name,
                              "X");
  } else {
    /* first[i] = the first slice equal to slice i; j before it */
    WeirNode *first = scratch(g, s, n, "first", WEIR_DTYPE_I64, 1, &ns);
    WeirNode *first_init = fill(g, s, n, first, nc, error);
    if (!first_init)
      return FALSE;
    g_autofree char *code =
        g_strdup_printf("y = f == %s ? %s : %s", kc, p[1], nc);
    WeirTaskletPort in = {fd, "f", ji, WEIR_WCR_NONE};
    WeirTaskletPort out = {first, "y", p[0], WEIR_WCR_MIN};
    if (!map(g, s, n, "first", 2, p, r2, &in, 1, out, code, first_init, error))
      return FALSE;
    g_autofree char *code2 = g_strdup_printf("y = %s < f ? 1 : 0", p[0]);
    WeirTaskletPort in2 = {first, "f", p[1], WEIR_WCR_NONE};
    WeirTaskletPort out2 = {before, "y", ij, WEIR_WCR_NONE};
    if (!map(g, s, n, "order", 2, p, r2, &in2, 1, out2, code2, NULL, error))
      return FALSE;
  }
  /* place[i] = the number of first slices j before slice i's value */
  WeirNode *place = scratch(g, s, n, "place", WEIR_DTYPE_I64, 1, &ns);
  WeirNode *place_init = fill(g, s, n, place, "0", error);
  if (!place_init)
    return FALSE;
  {
    WeirTaskletPort ins[2] = {{dup, "d", p[0], WEIR_WCR_NONE},
                              {before, "b", ij, WEIR_WCR_NONE}};
    WeirTaskletPort out = {place, "y", p[1], WEIR_WCR_SUM};
    if (!map(g, s, n, "place", 2, p, r2, ins, 2, out,
             "y = d == 0 && b != 0 ? 1 : 0", place_init, error))
      return FALSE;
  }
  /* count = the number of first slices */
  WeirNode *count = output_access(s, n, "count", error);
  WeirNode *count_init = count ? fill(g, s, n, count, "0", error) : NULL;
  if (!count_init)
    return FALSE;
  {
    WeirTaskletPort in = {dup, "d", p[0], WEIR_WCR_NONE};
    WeirTaskletPort out = {count, "y", NULL, WEIR_WCR_SUM};
    if (!map(g, s, n, "count", 1, p, r1, &in, 1, out, "y = d == 0 ? 1 : 0",
             count_init, error))
      return FALSE;
  }
  g_autofree char *nm1 = g_strdup_printf("min(k, %s - 1)", nc);
  /* Y: every element of a first slice at its value's place */
  {
    WeirNode *y_init = fill(g, s, n, y.access, "0", error);
    if (!y_init)
      return FALSE;
    GString *yat = g_string_new(NULL);
    for (guint d = 0; a && d < r; d++)
      g_string_append_printf(yat, "%s%s", d ? ", " : "",
                             d == axis ? nm1 : p[d]);
    if (!a)
      g_string_append(yat, nm1);
    g_autofree char *yt = g_string_free(yat, FALSE);
    g_autofree char *code = g_strdup_printf("y[%s] = d == 0 ? x : 0", yt);
    WeirTaskletPort ins[3] = {{dup, "d", i_text, WEIR_WCR_NONE},
                              {place, "k", i_text, WEIR_WCR_NONE},
                              {x.access, "x", r ? xat : NULL, WEIR_WCR_NONE}};
    if (!scatter(g, s, n, "values", r, p, xr, ins, 3, y.access, y_init, code,
                 error))
      return FALSE;
  }
  WeirPort o;
  g_autofree char *code_ind =
      g_strdup_printf("y[%s] = d == 0 ? %s : 0", nm1, p[0]);
  g_autofree char *code_cnt = g_strdup_printf("y[%s] = 1", nm1);
  for (guint k = 1; k < 4; k++) {
    if (!weir_port_output(g, s, n, k, &o, error)) {
      if (error && *error)
        return FALSE;
      continue;
    }
    if (k == 2) { /* inverse_indices[i] = place[i] */
      WeirTaskletPort in = {place, "k", p[0], WEIR_WCR_NONE};
      WeirTaskletPort out = {o.access, "y", p[0], WEIR_WCR_NONE};
      if (!map(g, s, n, "inverse", 1, p, r1, &in, 1, out, "y = k", NULL, error))
        return FALSE;
      continue;
    }
    WeirNode *o_init = fill(g, s, n, o.access, "0", error);
    if (!o_init)
      return FALSE;
    WeirTaskletPort ins[2] = {{dup, "d", p[0], WEIR_WCR_NONE},
                              {place, "k", p[0], WEIR_WCR_NONE}};
    if (!scatter(g, s, n, k == 1 ? "indices" : "counts", 1, p, r1, ins, 2,
                 o.access, o_init, k == 1 ? code_ind : code_cnt, error))
      return FALSE;
  }
  return weir_state_remove_node(s, n->id);
}

/* ---------------------------------------------------- NonMaxSuppression */

/* The tasklet text of box corners y1 x1 y2 x2 (prefix p: "a" or "b") from
 * connector p indexed [0, 0, k]. */
static void corners(GString *code, const char *p, gboolean center) {
  if (center) {
    g_string_append_printf(code,
                           "%sx1 = %s[0, 0, 0] - %s[0, 0, 2] / 2\n"
                           "%sx2 = %s[0, 0, 0] + %s[0, 0, 2] / 2\n"
                           "%sy1 = %s[0, 0, 1] - %s[0, 0, 3] / 2\n"
                           "%sy2 = %s[0, 0, 1] + %s[0, 0, 3] / 2\n",
                           p, p, p, p, p, p, p, p, p, p, p, p);
    return;
  }
  g_string_append_printf(code,
                         "%sy1 = min(%s[0, 0, 0], %s[0, 0, 2])\n"
                         "%sy2 = max(%s[0, 0, 0], %s[0, 0, 2])\n"
                         "%sx1 = min(%s[0, 0, 1], %s[0, 0, 3])\n"
                         "%sx2 = max(%s[0, 0, 1], %s[0, 0, 3])\n",
                         p, p, p, p, p, p, p, p, p, p, p, p);
}

/* The nested program of one NonMaxSuppression node: arguments boxes,
 * scores, y (the rows) and cnt (their number). */
static WeirGraph *nms_program(const WeirNode *n, const WeirPort *bx,
                              const WeirPort *sc, const WeirPort *y,
                              GError **error) {
  g_autoptr(WeirGraph) g = weir_graph_new("nms");
  WeirExpr *B = bx->shape[0], *N = bx->shape[1], *C = sc->shape[1];
  WeirExpr *rows = y->shape[0];
  WeirDType ft = bx->container->dtype;
  if (!weir_graph_add_container(g, "boxes", ft, 3, bx->shape, FALSE, error) ||
      !weir_graph_add_container(g, "scores", ft, 3, sc->shape, FALSE, error) ||
      !weir_graph_add_container(g, "y", WEIR_DTYPE_I64, 2, y->shape, FALSE,
                                error) ||
      !weir_graph_add_array(g, "cnt", WEIR_DTYPE_I64, "", FALSE, error))
    return NULL;
  weir_graph_add_symbol(g, "t");
  gint64 m = weir_node_attr_int(n, "max_output_boxes_per_class", 0);
  gboolean center = weir_node_attr_int(n, "center_point_box", 0) != 0;
  g_autofree char *iou =
      weir_expand_float_literal(weir_node_attr_float(n, "iou_threshold", 0));
  const WeirAttr *st = weir_node_attr(n, "score_threshold");
  WeirExpr *bnn[3] = {B, N, N}, *bcn[3] = {B, C, N}, *bc[2] = {B, C};
  WeirExpr *bcnn[4] = {B, C, N, N}, *bcbc[4] = {B, C, B, C};
  g_auto(GStrv) p = params_of(g, 4);
  g_auto(GStrv) r_bnn = ranges_of(3, bnn);
  g_auto(GStrv) r_bcn = ranges_of(3, bcn);
  g_auto(GStrv) r_bcnn = ranges_of(4, bcnn);
  g_auto(GStrv) r_bc = ranges_of(2, bc);
  g_auto(GStrv) r_bcbc = ranges_of(4, bcbc);
  /* subsets: bci = b, c, i; bcj = b, c, j; bji = b, j, i */
  g_autofree char *bci = g_strdup_printf("%s, %s, %s", p[0], p[1], p[2]);
  g_autofree char *bcj = g_strdup_printf("%s, %s, %s", p[0], p[1], p[3]);
  g_autofree char *bji = g_strdup_printf("%s, %s, %s", p[0], p[3], p[2]);
  g_autofree char *bcs = g_strdup_printf("%s, %s", p[0], p[1]);

  /* ---- prepare */
  WeirState *s = weir_graph_add_state(g, "prepare");
  WeirNode *boxes = weir_state_add_access(g, s, "boxes");
  WeirNode *scores = weir_state_add_access(g, s, "scores");
  WeirNode *ov = scratch(g, s, n, "overlap", WEIR_DTYPE_I64, 3, bnn);
  {
    g_autofree char *ai = g_strdup_printf("%s, %s, 0:4", p[0], p[1]);
    g_autofree char *bj = g_strdup_printf("%s, %s, 0:4", p[0], p[2]);
    g_autofree char *at = g_strdup_printf("%s, %s, %s", p[0], p[1], p[2]);
    GString *code = g_string_new(NULL);
    corners(code, "a", center);
    corners(code, "b", center);
    g_string_append_printf(
        code,
        "iw = max(min(ax2, bx2) - max(ax1, bx1), 0)\n"
        "ih = max(min(ay2, by2) - max(ay1, by1), 0)\n"
        "inter = iw * ih\n"
        "un = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter\n"
        "y = inter > 0 && un > 0 && inter / un > %s ? 1 : 0",
        iou);
    g_autofree char *text = g_string_free(code, FALSE);
    WeirTaskletPort ins[2] = {{boxes, "a", ai, WEIR_WCR_NONE},
                              {boxes, "b", bj, WEIR_WCR_NONE}};
    WeirTaskletPort out = {ov, "y", at, WEIR_WCR_NONE};
    if (!map(g, s, n, "overlap", 3, p, r_bnn, ins, 2, out, text, NULL, error))
      return NULL;
  }
  WeirNode *pos = scratch(g, s, n, "order", WEIR_DTYPE_I64, 3, bcn);
  WeirNode *pos_init = fill(g, s, n, pos, "0", error);
  if (!pos_init)
    return NULL;
  {
    g_autofree char *code = g_strdup_printf(
        "y = sj > si || (sj == si && %s < %s) ? 1 : 0", p[3], p[2]);
    WeirTaskletPort ins[2] = {{scores, "si", bci, WEIR_WCR_NONE},
                              {scores, "sj", bcj, WEIR_WCR_NONE}};
    WeirTaskletPort out = {pos, "y", bci, WEIR_WCR_SUM};
    if (!map(g, s, n, "order", 4, p, r_bcnn, ins, 2, out, code, pos_init,
             error))
      return NULL;
  }
  WeirNode *ok = scratch(g, s, n, "passes", WEIR_DTYPE_I64, 3, bcn);
  g_autofree char *keep_name = NULL;
  {
    g_autofree char *lit = st ? weir_expand_float_literal(st->f) : NULL;
    g_autofree char *code =
        st ? g_strdup_printf("y = x > %s ? 1 : 0", lit) : g_strdup("y = 1");
    WeirTaskletPort in = {scores, "x", bci, WEIR_WCR_NONE};
    WeirTaskletPort out = {ok, "y", bci, WEIR_WCR_NONE};
    if (!map(g, s, n, "passes", 3, p, r_bcn, &in, 1, out, code, NULL, error))
      return NULL;
    WeirNode *keep = scratch(g, s, n, "keep", WEIR_DTYPE_I64, 3, bcn);
    keep_name = g_strdup(keep->data);
    WeirTaskletPort in2 = {ok, "x", bci, WEIR_WCR_NONE};
    WeirTaskletPort out2 = {keep, "y", bci, WEIR_WCR_NONE};
    if (!map(g, s, n, "keep", 3, p, r_bcn, &in2, 1, out2, "y = x", NULL, error))
      return NULL;
  }
  const char *ov_name = ov->data, *pos_name = pos->data, *ok_name = ok->data;

  /* ---- select: keep = passes && no kept box before it overlaps it */
  WeirState *sel = weir_graph_add_state(g, "select");
  {
    WeirNode *keep = weir_state_add_access(g, sel, keep_name);
    WeirNode *ov2 = weir_state_add_access(g, sel, ov_name);
    WeirNode *pos2 = weir_state_add_access(g, sel, pos_name);
    WeirNode *ok2 = weir_state_add_access(g, sel, ok_name);
    WeirNode *sup = scratch(g, sel, n, "suppressed", WEIR_DTYPE_I64, 3, bcn);
    WeirNode *sup_init = fill(g, sel, n, sup, "0", error);
    if (!sup_init)
      return NULL;
    WeirTaskletPort ins[4] = {{pos2, "pi", bci, WEIR_WCR_NONE},
                              {pos2, "pj", bcj, WEIR_WCR_NONE},
                              {keep, "kj", bcj, WEIR_WCR_NONE},
                              {ov2, "o", bji, WEIR_WCR_NONE}};
    WeirTaskletPort out = {sup, "y", bci, WEIR_WCR_MAX};
    if (!map(g, sel, n, "suppress", 4, p, r_bcnn, ins, 4, out,
             "y = pj < pi && kj != 0 && o != 0 ? 1 : 0", sup_init, error))
      return NULL;
    WeirNode *next = scratch(g, sel, n, "next", WEIR_DTYPE_I64, 3, bcn);
    WeirTaskletPort ins2[2] = {{ok2, "a", bci, WEIR_WCR_NONE},
                               {sup, "u", bci, WEIR_WCR_NONE}};
    WeirTaskletPort out2 = {next, "y", bci, WEIR_WCR_NONE};
    if (!map(g, sel, n, "decide", 3, p, r_bcn, ins2, 2, out2,
             "y = a != 0 && u == 0 ? 1 : 0", NULL, error))
      return NULL;
    WeirNode *keep_w = weir_state_add_access(g, sel, keep_name);
    WeirTaskletPort in3 = {next, "x", bci, WEIR_WCR_NONE};
    WeirTaskletPort out3 = {keep_w, "y", bci, WEIR_WCR_NONE};
    if (!map(g, sel, n, "update", 3, p, r_bcn, &in3, 1, out3, "y = x", NULL,
             error))
      return NULL;
  }

  /* ---- write: the first m kept boxes of each class, class after class */
  WeirState *w = weir_graph_add_state(g, "write");
  WeirNode *keep = weir_state_add_access(g, w, keep_name);
  WeirNode *pos3 = weir_state_add_access(g, w, pos_name);
  WeirNode *rank = scratch(g, w, n, "rank", WEIR_DTYPE_I64, 3, bcn);
  WeirNode *rank_init = fill(g, w, n, rank, "0", error);
  if (!rank_init)
    return NULL;
  {
    WeirTaskletPort ins[3] = {{keep, "kj", bcj, WEIR_WCR_NONE},
                              {pos3, "pj", bcj, WEIR_WCR_NONE},
                              {pos3, "pi", bci, WEIR_WCR_NONE}};
    WeirTaskletPort out = {rank, "y", bci, WEIR_WCR_SUM};
    if (!map(g, w, n, "rank", 4, p, r_bcnn, ins, 3, out,
             "y = kj != 0 && pj < pi ? 1 : 0", rank_init, error))
      return NULL;
  }
  WeirNode *fin = scratch(g, w, n, "selected", WEIR_DTYPE_I64, 3, bcn);
  {
    g_autofree char *code =
        g_strdup_printf("y = k != 0 && r < %" G_GINT64_FORMAT " ? 1 : 0", m);
    WeirTaskletPort ins[2] = {{keep, "k", bci, WEIR_WCR_NONE},
                              {rank, "r", bci, WEIR_WCR_NONE}};
    WeirTaskletPort out = {fin, "y", bci, WEIR_WCR_NONE};
    if (!map(g, w, n, "selected", 3, p, r_bcn, ins, 2, out, code, NULL, error))
      return NULL;
  }
  WeirNode *per = scratch(g, w, n, "per_class", WEIR_DTYPE_I64, 2, bc);
  WeirNode *per_init = fill(g, w, n, per, "0", error);
  if (!per_init)
    return NULL;
  {
    WeirTaskletPort in = {fin, "f", bci, WEIR_WCR_NONE};
    WeirTaskletPort out = {per, "y", bcs, WEIR_WCR_SUM};
    if (!map(g, w, n, "per_class", 3, p, r_bcn, &in, 1, out, "y = f", per_init,
             error))
      return NULL;
  }
  WeirNode *off = scratch(g, w, n, "offset", WEIR_DTYPE_I64, 2, bc);
  WeirNode *off_init = fill(g, w, n, off, "0", error);
  if (!off_init)
    return NULL;
  {
    g_autofree char *cc = weir_expand_expr_code(C);
    g_autofree char *other = g_strdup_printf("%s, %s", p[2], p[3]);
    g_autofree char *code =
        g_strdup_printf("y = %s * %s + %s < %s * %s + %s ? k : 0", p[2], cc,
                        p[3], p[0], cc, p[1]);
    WeirTaskletPort in = {per, "k", other, WEIR_WCR_NONE};
    WeirTaskletPort out = {off, "y", bcs, WEIR_WCR_SUM};
    if (!map(g, w, n, "offset", 4, p, r_bcbc, &in, 1, out, code, off_init,
             error))
      return NULL;
  }
  WeirNode *cnt = weir_state_add_access(g, w, "cnt");
  WeirNode *cnt_init = fill(g, w, n, cnt, "0", error);
  if (!cnt_init)
    return NULL;
  {
    WeirTaskletPort in = {per, "k", bcs, WEIR_WCR_NONE};
    WeirTaskletPort out = {cnt, "y", NULL, WEIR_WCR_SUM};
    if (!map(g, w, n, "count", 2, p, r_bc, &in, 1, out, "y = k", cnt_init,
             error))
      return NULL;
  }
  WeirNode *yw = weir_state_add_access(g, w, "y");
  WeirNode *y_init = fill(g, w, n, yw, "0", error);
  if (!y_init)
    return NULL;
  {
    WeirExpr *four[4] = {B, C, N, NULL};
    g_autoptr(WeirExpr) three = weir_expr_const(3);
    four[3] = three;
    g_auto(GStrv) rg = ranges_of(4, four);
    g_autofree char *rc = weir_expand_expr_code(rows);
    g_autofree char *code = g_strdup_printf(
        "y[min(o + r, %s - 1), %s] = f != 0 ? (%s == 0 ? %s : %s == 1 ? %s "
        ": %s) : 0",
        rc, p[3], p[3], p[0], p[3], p[1], p[2]);
    WeirTaskletPort ins[3] = {{fin, "f", bci, WEIR_WCR_NONE},
                              {rank, "r", bci, WEIR_WCR_NONE},
                              {off, "o", bcs, WEIR_WCR_NONE}};
    if (!scatter(g, w, n, "rows", 4, p, rg, ins, 3, yw, y_init, code, error))
      return NULL;
  }

  /* prepare -> select (t = 0); select -> select while t + 1 < N; -> write */
  WeirTransition *t0 =
      weir_graph_add_transition(g, s->id, sel->id, NULL, error);
  if (!t0 || !weir_transition_add_assignment(t0, "t", "0", error))
    return NULL;
  g_autofree char *nc = weir_expand_expr_code(N);
  g_autofree char *cond = g_strdup_printf("t + 1 < %s", nc);
  WeirTransition *loop =
      weir_graph_add_transition(g, sel->id, sel->id, cond, error);
  if (!loop || !weir_transition_add_assignment(loop, "t", "t + 1", error) ||
      !weir_graph_add_transition(g, sel->id, w->id, NULL, error))
    return NULL;
  return g_steal_pointer(&g);
}

static gboolean expand_nms(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort bx, sc, y;
  if (!weir_port_require_input(g, s, n, 0, &bx, error) ||
      !weir_port_require_input(g, s, n, 1, &sc, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  for (guint k = 2; k < 5; k++) {
    g_autofree char *conn = g_strdup_printf("in%u", k);
    if (weir_node_has_in_conn(n, conn))
      return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                            "input %u must be a constant", k + 1);
  }
  if (bx.rank != 3 || sc.rank != 3 || y.rank != 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "boxes [B, N, 4], scores [B, C, N] and rows "
                          "[R, 3] expected");
  WeirNode *count = output_access(s, n, "count", error);
  if (!count)
    return FALSE;
  WeirGraph *inner = nms_program(n, &bx, &sc, &y, error);
  if (!inner)
    return FALSE;
  const char *ins[] = {"boxes", "scores", NULL};
  const char *outs[] = {"y", "cnt", NULL};
  g_autofree char *label = g_strdup(n->label);
  WeirNode *nest = weir_state_add_nested(g, s, label, inner, ins, outs);
  struct {
    WeirNode *access;
    const WeirContainer *c;
    const char *conn;
    gboolean in;
  } wires[4] = {{bx.access, bx.container, "boxes", TRUE},
                {sc.access, sc.container, "scores", TRUE},
                {y.access, y.container, "y", FALSE},
                {count, weir_graph_container(g, count->data), "cnt", FALSE}};
  for (guint i = 0; i < 4; i++) {
    g_autoptr(WeirSubset) full = weir_container_full_subset(wires[i].c);
    g_autofree char *sub = weir_subset_to_string(full);
    if (!(wires[i].in ? weir_state_add_memlet(g, s, wires[i].access->id, NULL,
                                              nest->id, wires[i].conn,
                                              wires[i].c->name, sub, error)
                      : weir_state_add_memlet(g, s, nest->id, wires[i].conn,
                                              wires[i].access->id, NULL,
                                              wires[i].c->name, sub, error)))
      return FALSE;
  }
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------ register */

void weir_expand_register_bounded(void) {
  weir_op_register_expansion("NonZero", "pure", expand_non_zero);
  weir_op_register_expansion("Compress", "pure", expand_compress);
  weir_op_register_expansion("Unique", "pure", expand_unique);
  weir_op_register_expansion("NonMaxSuppression", "pure", expand_nms);
}
