/* losses.c — pure expansions of the loss operators (ir/ops/losses.c):
 *
 *   SoftmaxCrossEntropyLoss  -> LogSoftmax (axis 1) into log_prob (the
 *                               second output, or a transient), then
 *                               NegativeLogLikelihoodLoss of it: two library
 *                               nodes, expanded in turn (ONNX's function
 *                               body).
 *   NegativeLogLikelihoodLoss-> one map over the labels' shape whose tasklet
 *                               reads the label, gathers the log-probability
 *                               and the class weight at it (dynamic reads of
 *                               the class axis) and writes the element
 *                               (reduction none) or accumulates it and its
 *                               weight into two scalars (WCR sum) that a
 *                               last tasklet divides (mean) or copies (sum).
 *   NegativeLogLikelihoodLossGrad -> (mean: the same weight sum, then) one
 *                               map over X's shape writing every element of
 *                               dX.
 *
 * Every tasklet computes the label's weight the same way:
 *   l0 = t;  ok = l0 != ignore_index;  l = min(max(l0, 0), C - 1)
 *   w = ok ? W[l] : 0            (ok ? 1 : 0 without weights)
 * so an ignored label reads nothing outside X, whatever its value.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_losses(void);

/* Map parameter names for `rank` dimensions that no program symbol uses. */
static char **loss_params(const WeirGraph *g, guint rank) {
  static const char *const prefixes[] = {"p", "lp", "weir_lp"};
  for (guint k = 0;; k++) {
    char **p = weir_expand_params(prefixes[k], rank);
    gboolean clash = FALSE;
    for (guint i = 0; i < rank && !clash; i++)
      clash = weir_graph_has_symbol(g, p[i]);
    if (!clash || k + 1 == G_N_ELEMENTS(prefixes))
      return p;
    g_strfreev(p);
  }
}

/* Marks the memlets of `container` into the map at `entry` (and from it to
 * the tasklet connector conn) dynamic: the tasklet reads one element of
 * the block per iteration, at an index it computes. */
static void make_dynamic(WeirState *s, WeirNode *entry, const char *container,
                         const char *conn) {
  if (entry->kind != WEIR_NODE_MAP_ENTRY)
    return;
  g_autofree char *in_conn = g_strdup_printf("IN_%s", container);
  g_autofree char *out_conn = g_strdup_printf("OUT_%s", container);
  g_autoptr(WeirExpr) iterations = weir_expr_const(1);
  for (guint i = 0; i < entry->map->ranges->len; i++) {
    g_autoptr(WeirExpr) size =
        weir_range_size(&g_array_index(entry->map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(iterations, size);
    weir_expr_unref(iterations);
    iterations = next;
  }
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == entry->id && g_strcmp0(m->dst_conn, in_conn) == 0) {
      weir_memlet_set_volume(m, iterations);
      m->dynamic = TRUE;
    } else if (m->src == entry->id && g_strcmp0(m->src_conn, out_conn) == 0 &&
               g_strcmp0(m->dst_conn, conn) == 0) {
      weir_memlet_set_volume(m, one);
      m->dynamic = TRUE;
    }
  }
}

static gboolean is_const(WeirExpr *e, gint64 v) {
  gint64 c;
  return weir_expr_is_const(e, &c) && c == v;
}

/* The operands of a loss node: X (input xi), T, W (optional). */
typedef struct {
  WeirPort x, t, w;
  gboolean has_w;
  gboolean none, mean;
} Operands;

static gboolean operands(WeirGraph *g, WeirState *s, WeirNode *n, guint xi,
                         Operands *o, GError **error) {
  if (!weir_port_require_input(g, s, n, xi, &o->x, error) ||
      !weir_port_require_input(g, s, n, xi + 1, &o->t, error))
    return FALSE;
  GError *local = NULL;
  o->has_w = weir_port_input(g, s, n, xi + 2, &o->w, &local);
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (o->x.rank < 2 || o->t.rank + 1 != o->x.rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "scores of rank %u and labels of rank %u", o->x.rank,
                          o->t.rank);
  const char *r = weir_node_attr_string(n, "reduction", "mean");
  o->none = strcmp(r, "none") == 0;
  o->mean = strcmp(r, "mean") == 0;
  return TRUE;
}

/* The tasklet lines computing l (clamped label) and w (its weight, 0 when
 * ignored) from connector t and, with weights, the block connector wv. */
static char *weight_code(const WeirNode *n, const Operands *o) {
  GString *c = g_string_new("l0 = t\n");
  const WeirAttr *ii = weir_node_attr(n, "ignore_index");
  gboolean has_ii = ii && ii->type == WEIR_ATTR_INT;
  g_autofree char *cm1 = NULL;
  {
    g_autoptr(WeirExpr) last = weir_expr_add_const(o->x.shape[1], -1);
    cm1 = weir_expand_expr_code(last);
  }
  g_string_append_printf(c, "l = min(max(l0, 0), %s)\n", cm1);
  const char *wread = !o->has_w                    ? "1"
                      : is_const(o->x.shape[1], 1) ? "wv"
                                                   : "wv[l]";
  if (has_ii)
    g_string_append_printf(c, "w = l0 != %" G_GINT64_FORMAT " ? %s : 0\n",
                           ii->i, wread);
  else
    g_string_append_printf(c, "w = %s\n", wread);
  return g_string_free(c, FALSE);
}

/* The read of X at the label: x[0, l, 0, ...] (x when C is 1). */
static char *label_read(const Operands *o) {
  if (is_const(o->x.shape[1], 1))
    return g_strdup("x");
  GString *r = g_string_new("x[0, l");
  for (guint d = 2; d < o->x.rank; d++)
    g_string_append(r, ", 0");
  g_string_append_c(r, ']');
  return g_string_free(r, FALSE);
}

/* X's subset for one label element: [p0, 0:C, p1, ...]. */
static char *x_block_subset(const Operands *o, char **p) {
  g_autofree char *c = weir_expr_to_string(o->x.shape[1]);
  GString *s = g_string_new(p[0]);
  g_string_append_printf(s, ", 0:%s", c);
  for (guint d = 1; d < o->t.rank; d++)
    g_string_append_printf(s, ", %s", p[d]);
  return g_string_free(s, FALSE);
}

/* Adds the init tasklet (0) and the map accumulating the labels' weights
 * over T into scalar `ws`; returns the access node to read the sum from. */
static WeirNode *weight_sum(WeirGraph *g, WeirState *s, WeirNode *n,
                            const Operands *o, GError **error) {
  g_autofree char *base = weir_expand_name(n, "weight_sum");
  WeirContainer *wc =
      weir_expand_add_transient(g, base, o->x.container->dtype, 0, NULL);
  WeirNode *a1 = weir_state_add_access(g, s, wc->name);
  WeirNode *a2 = weir_state_add_access(g, s, wc->name);
  WeirTaskletPort init_out = {a1, "ws", NULL, WEIR_WCR_NONE};
  g_autofree char *l_init = g_strdup_printf("%s_init", base);
  if (!weir_expand_map(g, s, l_init, 0, NULL, NULL, NULL, 0, &init_out, 1,
                       "ws = 0", NULL, 0, error))
    return NULL;
  guint r = o->t.rank;
  g_auto(GStrv) p = loss_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, o->t.shape);
  g_autofree char *t_sub = weir_expand_index_subset(r, (const char *const *)p);
  WeirTaskletPort ins[2] = {
      {o->t.access, "t", r ? t_sub : NULL, WEIR_WCR_NONE},
      {o->has_w ? o->w.access : NULL, "wv", NULL, WEIR_WCR_NONE}};
  WeirTaskletPort out = {a2, "ws", NULL, WEIR_WCR_SUM};
  g_autofree char *wcode = weight_code(n, o);
  g_autofree char *code = g_strdup_printf("%sws = w", wcode);
  WeirNode *top = weir_expand_map(
      g, s, base, r, (const char *const *)p, (const char *const *)ranges, ins,
      o->has_w ? 2 : 1, &out, 1, code, &a1, 1, error);
  if (!top)
    return NULL;
  if (o->has_w)
    make_dynamic(s, top, o->w.container->name, "wv");
  return a2;
}

static gboolean expand_nll(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  Operands o;
  WeirPort y;
  if (!operands(g, s, n, 0, &o, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint r = o.t.rank;
  g_auto(GStrv) p = loss_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, o.t.shape);
  g_autofree char *t_sub = weir_expand_index_subset(r, (const char *const *)p);
  g_autofree char *x_sub = x_block_subset(&o, p);
  WeirTaskletPort ins[3] = {
      {o.x.access, "x", x_sub, WEIR_WCR_NONE},
      {o.t.access, "t", r ? t_sub : NULL, WEIR_WCR_NONE},
      {o.has_w ? o.w.access : NULL, "wv", NULL, WEIR_WCR_NONE}};
  guint n_ins = o.has_w ? 3 : 2;
  g_autofree char *wcode = weight_code(n, &o);
  g_autofree char *read = label_read(&o);
  g_autofree char *value = g_strdup_printf("w != 0 ? -%s * w : 0", read);
  WeirNode *top;
  if (o.none) {
    WeirTaskletPort out = {y.access, "y", r ? t_sub : NULL, WEIR_WCR_NONE};
    g_autofree char *code = g_strdup_printf("%sy = %s", wcode, value);
    top = weir_expand_map(g, s, n->label, r, (const char *const *)p,
                          (const char *const *)ranges, ins, n_ins, &out, 1,
                          code, NULL, 0, error);
  } else {
    WeirDType dtype = o.x.container->dtype;
    g_autofree char *base = weir_expand_name(n, "sum");
    WeirContainer *sc = weir_expand_add_transient(g, base, dtype, 0, NULL);
    g_autofree char *wbase = weir_expand_name(n, "weight_sum");
    WeirContainer *wc = weir_expand_add_transient(g, wbase, dtype, 0, NULL);
    WeirNode *s1 = weir_state_add_access(g, s, sc->name);
    WeirNode *s2 = weir_state_add_access(g, s, sc->name);
    WeirNode *w1 = weir_state_add_access(g, s, wc->name);
    WeirNode *w2 = weir_state_add_access(g, s, wc->name);
    WeirTaskletPort init_out[2] = {{s1, "acc", NULL, WEIR_WCR_NONE},
                                   {w1, "ws", NULL, WEIR_WCR_NONE}};
    g_autofree char *l_init = g_strdup_printf("%s_init", base);
    if (!weir_expand_map(g, s, l_init, 0, NULL, NULL, NULL, 0, init_out,
                         o.mean ? 2 : 1, o.mean ? "acc = 0\nws = 0" : "acc = 0",
                         NULL, 0, error))
      return FALSE;
    WeirTaskletPort outs[2] = {{s2, "acc", NULL, WEIR_WCR_SUM},
                               {w2, "ws", NULL, WEIR_WCR_SUM}};
    WeirNode *after[2] = {s1, w1};
    g_autofree char *code =
        g_strdup_printf("%sacc = %s%s", wcode, value, o.mean ? "\nws = w" : "");
    top = weir_expand_map(g, s, n->label, r, (const char *const *)p,
                          (const char *const *)ranges, ins, n_ins, outs,
                          o.mean ? 2 : 1, code, after, o.mean ? 2 : 1, error);
    if (!top)
      return FALSE;
    WeirTaskletPort fin_in[2] = {{s2, "acc", NULL, WEIR_WCR_NONE},
                                 {w2, "ws", NULL, WEIR_WCR_NONE}};
    WeirTaskletPort fin_out = {y.access, "y", NULL, WEIR_WCR_NONE};
    g_autofree char *l_fin =
        g_strdup_printf("%s_%s", base, o.mean ? "mean" : "total");
    if (!weir_expand_map(g, s, l_fin, 0, NULL, NULL, fin_in, o.mean ? 2 : 1,
                         &fin_out, 1, o.mean ? "y = acc / ws" : "y = acc", NULL,
                         0, error))
      return FALSE;
  }
  if (!top)
    return FALSE;
  if (!is_const(o.x.shape[1], 1))
    make_dynamic(s, top, o.x.container->name, "x");
  if (o.has_w)
    make_dynamic(s, top, o.w.container->name, "wv");
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_sce(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  Operands o;
  WeirPort y, lp;
  if (!operands(g, s, n, 0, &o, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  GError *local = NULL;
  gboolean has_lp = weir_port_output(g, s, n, 1, &lp, &local);
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  const char *lp_name;
  WeirNode *lp_write;
  if (has_lp) {
    lp_name = lp.container->name;
    lp_write = lp.access;
  } else {
    g_autofree char *base = weir_expand_name(n, "log_prob");
    WeirContainer *c = weir_expand_add_transient(g, base, o.x.container->dtype,
                                                 o.x.rank, o.x.shape);
    lp_name = c->name;
    lp_write = weir_state_add_access(g, s, lp_name);
  }
  g_autoptr(WeirSubset) sx = weir_container_full_subset(o.x.container);
  g_autofree char *full_x = weir_subset_to_string(sx);
  const char *full_lp = full_x;
  static const char *const in1[] = {"in0", NULL};
  static const char *const out1[] = {"out0", NULL};
  g_autofree char *l_lsm = g_strdup_printf("%s_log_softmax", n->label);
  WeirNode *lsm = weir_state_add_library(g, s, l_lsm, "LogSoftmax", in1, out1);
  weir_node_set_attr_int(lsm, "axis", 1);
  if (!weir_state_add_memlet(g, s, o.x.access->id, NULL, lsm->id, "in0",
                             o.x.container->name, full_x, error) ||
      !weir_state_add_memlet(g, s, lsm->id, "out0", lp_write->id, NULL, lp_name,
                             full_lp, error))
    return FALSE;
  static const char *const in3[] = {"in0", "in1", "in2", NULL};
  static const char *const in2[] = {"in0", "in1", NULL};
  g_autofree char *l_nll = g_strdup_printf("%s_nll", n->label);
  WeirNode *nll = weir_state_add_library(
      g, s, l_nll, "NegativeLogLikelihoodLoss", o.has_w ? in3 : in2, out1);
  weir_node_set_attr_string(nll, "reduction",
                            weir_node_attr_string(n, "reduction", "mean"));
  const WeirAttr *ii = weir_node_attr(n, "ignore_index");
  if (ii && ii->type == WEIR_ATTR_INT)
    weir_node_set_attr_int(nll, "ignore_index", ii->i);
  g_autoptr(WeirSubset) st = weir_container_full_subset(o.t.container);
  g_autofree char *full_t = weir_subset_to_string(st);
  g_autoptr(WeirSubset) sy = weir_container_full_subset(y.container);
  g_autofree char *full_y = weir_subset_to_string(sy);
  if (!weir_state_add_memlet(g, s, lp_write->id, NULL, nll->id, "in0", lp_name,
                             full_lp, error) ||
      !weir_state_add_memlet(g, s, o.t.access->id, NULL, nll->id, "in1",
                             o.t.container->name, full_t, error) ||
      !weir_state_add_memlet(g, s, nll->id, "out0", y.access->id, NULL,
                             y.container->name, full_y, error))
    return FALSE;
  if (o.has_w) {
    g_autoptr(WeirSubset) sw = weir_container_full_subset(o.w.container);
    g_autofree char *full_w = weir_subset_to_string(sw);
    if (!weir_state_add_memlet(g, s, o.w.access->id, NULL, nll->id, "in2",
                               o.w.container->name, full_w, error))
      return FALSE;
  }
  /* the original memlets go with the node */
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_nll_grad(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  Operands o;
  WeirPort dy, dx;
  if (!weir_port_require_input(g, s, n, 0, &dy, error) ||
      !operands(g, s, n, 1, &o, error) ||
      !weir_port_require_output(g, s, n, 0, &dx, error))
    return FALSE;
  gboolean softmax = weir_node_attr_int(n, "softmax", 0) != 0;
  WeirNode *ws = NULL;
  if (o.mean && !(ws = weight_sum(g, s, n, &o, error)))
    return FALSE;
  guint r = o.x.rank;
  g_auto(GStrv) p = loss_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, o.x.shape);
  g_autofree char *x_sub = weir_expand_index_subset(r, (const char *const *)p);
  /* labels and dY at [p0, p2, ...] */
  GString *ts = g_string_new(p[0]);
  for (guint d = 2; d < r; d++)
    g_string_append_printf(ts, ", %s", p[d]);
  g_autofree char *t_sub = g_string_free(ts, FALSE);
  WeirTaskletPort ins[5];
  guint k = 0;
  ins[k++] = (WeirTaskletPort){o.t.access, "t", t_sub, WEIR_WCR_NONE};
  ins[k++] =
      (WeirTaskletPort){dy.access, "dy", o.none ? t_sub : NULL, WEIR_WCR_NONE};
  if (softmax)
    ins[k++] = (WeirTaskletPort){o.x.access, "x", x_sub, WEIR_WCR_NONE};
  if (o.has_w)
    ins[k++] = (WeirTaskletPort){o.w.access, "wv", NULL, WEIR_WCR_NONE};
  if (ws)
    ins[k++] = (WeirTaskletPort){ws, "ws", NULL, WEIR_WCR_NONE};
  WeirTaskletPort out = {dx.access, "y", x_sub, WEIR_WCR_NONE};
  g_autofree char *wcode = weight_code(n, &o);
  g_autofree char *last =
      softmax ? g_strdup_printf("y = c * (exp(x) - (%s == l ? 1 : 0))", p[1])
              : g_strdup_printf("y = %s == l ? -c : 0", p[1]);
  g_autofree char *code =
      g_strdup_printf("%sc = dy * w%s\n%s", wcode, ws ? " / ws" : "", last);
  WeirNode *top = weir_expand_map(g, s, n->label, r, (const char *const *)p,
                                  (const char *const *)ranges, ins, k, &out, 1,
                                  code, NULL, 0, error);
  if (!top)
    return FALSE;
  if (o.has_w)
    make_dynamic(s, top, o.w.container->name, "wv");
  return weir_state_remove_node(s, n->id);
}

void weir_expand_register_losses(void) {
  weir_op_register_expansion("NegativeLogLikelihoodLoss", "pure", expand_nll);
  weir_op_register_expansion("SoftmaxCrossEntropyLoss", "pure", expand_sce);
  weir_op_register_expansion("NegativeLogLikelihoodLossGrad", "pure",
                             expand_nll_grad);
}
