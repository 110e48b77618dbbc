/* update.c — pure expansions of the multi-tensor operators OptimizerUpdate
 * and SumAll (ir/weir-ops-update.h).
 *
 * They exist for the code generator, which runs each as one parallel
 * region (core/kernels/multi-tensor.c); the pure expansions give the
 * interpreter (and any program expanded by hand) the same results as the
 * per-tensor nodes the training-program builder made before them:
 *
 *   OptimizerUpdate   one map per group over P's shape, one tasklet that
 *                     computes the new P (and M, V) with the arithmetic of
 *                     the per-tensor Pointwise nodes (docs/training.md,
 *                     "Optimizers"): the same expressions, so the same
 *                     dtypes and roundings, the moments kept in locals of
 *                     their dtype where those nodes stored them; one map
 *                     per moving average with the Pointwise node's code;
 *   SumAll            one ReduceSum (ReduceSumSquare with `square`, none
 *                     for a scalar input without it) per input into a
 *                     scalar, then one Sum of those, which expand in turn.
 */
#include <math.h>
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"
#include "weir-ops-update.h"

void weir_expand_register_update(void);

/* The exact literal of v, parenthesized when negative. (transfer full) */
static char *literal(double v) {
  g_autofree char *lit = weir_expand_float_literal(v);
  if (v < 0 || signbit(v))
    return g_strdup_printf("(%s)", lit);
  return g_steal_pointer(&lit);
}

/* The subset of element 0 of a port with a single element ("0, 0", "" for
 * a scalar); FALSE when it has more. (transfer full) */
static gboolean point_subset(const WeirPort *p, char **out) {
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < p->rank; d++) {
    gint64 v;
    if (!weir_expr_is_const(p->shape[d], &v) || v != 1) {
      g_string_free(s, TRUE);
      return FALSE;
    }
    g_string_append(s, d ? ", 0" : "0");
  }
  *out = g_string_free(s, FALSE);
  return TRUE;
}

/* The tasklet body for one group: inputs p, g (m, v), c (the check), t
 * (step), l (lr), s (scale); outputs p_new (m_new, v_new). (transfer full) */
static char *element_code(const WeirNode *n, const WeirUpdateLayout *l) {
  GString *c = g_string_new(NULL);
  g_string_append(c, l->scale >= 0 ? "gr = g * s\n" : "gr = g\n");
  double wd = weir_node_attr_float(n, "weight_decay", 0);
  if (wd != 0) {
    g_autofree char *w = literal(wd);
    g_string_append_printf(c, "gx = gr + %s * p\n", w);
  } else {
    g_string_append(c, "gx = gr\n");
  }
  g_string_append(c, "ok = isfinite(c)\n");
  g_autofree char *lr =
      l->lr >= 0 ? g_strdup("l") : literal(weir_node_attr_float(n, "lr", 0));
  switch (l->kind) {
  case WEIR_UPDATE_SGD:
    g_string_append_printf(c, "p_new = ok ? p - %s * gx : p", lr);
    break;
  case WEIR_UPDATE_MOMENTUM: {
    g_autofree char *mu = literal(weir_node_attr_float(n, "momentum", 0));
    g_string_append_printf(c,
                           "mn = %s * m + gx\n"
                           "m_new = ok ? mn : m\n"
                           "p_new = ok ? p - %s * mn : p",
                           mu, lr);
    break;
  }
  case WEIR_UPDATE_ADAM: {
    double b1 = weir_node_attr_float(n, "beta1", 0);
    double b2 = weir_node_attr_float(n, "beta2", 0);
    g_autofree char *b1s = literal(b1), *c1 = literal(1 - b1);
    g_autofree char *b2s = literal(b2), *c2 = literal(1 - b2);
    g_autofree char *eps = literal(weir_node_attr_float(n, "epsilon", 0));
    g_string_append_printf(c,
                           "mn = %s * m + %s * gx\n"
                           "vn = %s * v + %s * gx * gx\n"
                           "tt = f64(t + 1)\n"
                           "pn = p - %s * (mn / (1 - pow(%s, tt))) / "
                           "(sqrt(vn / (1 - pow(%s, tt))) + %s)\n"
                           "m_new = ok ? mn : m\n"
                           "v_new = ok ? vn : v\n"
                           "p_new = ok ? pn : p",
                           b1s, c1, b2s, c2, lr, b1s, b2s, eps);
    break;
  }
  }
  return g_string_free(c, FALSE);
}

/* A scalar input of n (index k >= 0) as a tasklet port named conn. */
static gboolean scalar_port(WeirGraph *g, WeirState *s, WeirNode *n, gint k,
                            const char *conn, WeirTaskletPort *tp,
                            char **subset, GError **error) {
  WeirPort p;
  if (!weir_port_require_input(g, s, n, (guint)k, &p, error))
    return FALSE;
  if (!point_subset(&p, subset))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input %d ('%s') must have a single element", k,
                          p.container->name);
  *tp = (WeirTaskletPort){p.access, conn, *subset, WEIR_WCR_NONE};
  return TRUE;
}

static gboolean expand_update(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  WeirUpdateLayout l;
  if (!weir_update_layout(n, n->in_conns->len, &l, error))
    return FALSE;
  /* the scalars: check, step, lr, scale */
  WeirTaskletPort scal[4];
  g_autoptr(GPtrArray) subsets = g_ptr_array_new_with_free_func(g_free);
  guint n_scal = 0;
  const gint idx[] = {0, l.step, l.lr, l.scale};
  static const char *const conn[] = {"c", "t", "l", "s"};
  for (guint i = 0; i < G_N_ELEMENTS(idx); i++) {
    if (idx[i] < 0)
      continue;
    char *subset = NULL;
    gboolean ok =
        scalar_port(g, s, n, idx[i], conn[i], &scal[n_scal], &subset, error);
    if (subset)
      g_ptr_array_add(subsets, subset);
    if (!ok)
      return FALSE;
    n_scal++;
  }
  g_autofree char *code = element_code(n, &l);
  static const char *const in_conn[] = {"p", "g", "m", "v"};
  static const char *const out_conn[] = {"p_new", "m_new", "v_new"};
  for (guint j = 0; j < l.groups; j++) {
    WeirPort in[4], out[3];
    for (guint m = 0; m < l.per_group; m++)
      if (!weir_port_require_input(g, s, n, weir_update_input(&l, j, m), &in[m],
                                   error))
        return FALSE;
    for (guint m = 0; m < l.outs; m++)
      if (!weir_port_require_output(g, s, n, weir_update_output(&l, j, m),
                                    &out[m], error))
        return FALSE;
    if (weir_port_is_empty(&in[0]))
      continue;
    guint rank = in[0].rank;
    g_auto(GStrv) params = weir_expand_fresh_params(g, rank);
    g_auto(GStrv) ranges = weir_expand_full_ranges(rank, in[0].shape);
    g_autofree char *index =
        weir_expand_index_subset(rank, (const char *const *)params);
    WeirTaskletPort tins[8], touts[3];
    guint n_tins = 0;
    for (guint m = 0; m < l.per_group; m++)
      tins[n_tins++] =
          (WeirTaskletPort){in[m].access, in_conn[m], index, WEIR_WCR_NONE};
    for (guint i = 0; i < n_scal; i++)
      tins[n_tins++] = scal[i];
    for (guint m = 0; m < l.outs; m++)
      touts[m] =
          (WeirTaskletPort){out[m].access, out_conn[m], index, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf(
        "%s_%s", n->label ? n->label : "update", in[0].container->name);
    if (!weir_expand_map(g, s, label, rank, (const char *const *)params,
                         (const char *const *)ranges, tins, n_tins, touts,
                         l.outs, code, NULL, 0, error))
      return FALSE;
  }
  /* the moving averages: the per-tensor Pointwise code */
  for (guint e = 0; e < l.emas; e++) {
    WeirPort t, x, y;
    if (!weir_port_require_input(g, s, n, weir_update_ema_input(&l, e, 0), &t,
                                 error) ||
        !weir_port_require_input(g, s, n, weir_update_ema_input(&l, e, 1), &x,
                                 error) ||
        !weir_port_require_output(g, s, n, weir_update_ema_output(&l, e), &y,
                                  error))
      return FALSE;
    if (weir_port_is_empty(&t))
      continue;
    double keep = weir_update_ema_keep(n, e);
    g_autofree char *k0 = literal(keep), *k1 = literal(1 - keep);
    g_autofree char *ema =
        g_strdup_printf("y = isfinite(c) ? %s * a + %s * b : a", k0, k1);
    g_auto(GStrv) params = weir_expand_fresh_params(g, t.rank);
    g_auto(GStrv) ranges = weir_expand_full_ranges(t.rank, t.shape);
    g_autofree char *index =
        weir_expand_index_subset(t.rank, (const char *const *)params);
    WeirTaskletPort tins[] = {{t.access, "a", index, WEIR_WCR_NONE},
                              {x.access, "b", index, WEIR_WCR_NONE},
                              scal[0]};
    WeirTaskletPort tout = {y.access, "y", index, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf(
        "%s_%s", n->label ? n->label : "update", t.container->name);
    if (!weir_expand_map(g, s, label, t.rank, (const char *const *)params,
                         (const char *const *)ranges, tins, 3, &tout, 1, ema,
                         NULL, 0, error))
      return FALSE;
  }
  weir_state_remove_node(s, n->id);
  return TRUE;
}

/* ----------------------------------------------------------------- SumAll */

/* Library node op reading `from` (access node of container x) into a new
 * access node of container y, full subsets; returns the node. */
static WeirNode *library_1_1(WeirGraph *g, WeirState *s, const char *label,
                             const char *op, WeirNode *from, const char *x,
                             WeirNode *to, const char *y, GError **error) {
  static const char *const ins[] = {"in0", NULL}, *const outs[] = {"out0",
                                                                   NULL};
  WeirNode *r = weir_state_add_library(g, s, label, op, ins, outs);
  g_autoptr(WeirSubset) xs =
      weir_container_full_subset(weir_graph_container(g, x));
  g_autoptr(WeirSubset) ys =
      weir_container_full_subset(weir_graph_container(g, y));
  g_autofree char *xt = weir_subset_to_string(xs);
  g_autofree char *yt = weir_subset_to_string(ys);
  if (!weir_state_add_memlet(g, s, from->id, NULL, r->id, "in0", x, xt,
                             error) ||
      !weir_state_add_memlet(g, s, r->id, "out0", to->id, NULL, y, yt, error))
    return NULL;
  return r;
}

static gboolean expand_sum_all(WeirGraph *g, WeirState *s, WeirNode *n,
                               GError **error) {
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  gboolean square = weir_node_attr_int(n, "square", 0) != 0;
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint count = n->in_conns->len;
  /* the parts: partial sums (access nodes) in input order */
  g_autoptr(GPtrArray) parts = g_ptr_array_new();
  for (guint k = 0; k < count; k++) {
    WeirPort x;
    if (!weir_port_require_input(g, s, n, k, &x, error))
      return FALSE;
    if (x.rank == 0 && !square) {
      g_ptr_array_add(parts, x.access);
      continue;
    }
    g_autofree char *base = weir_expand_name(n, "part");
    WeirContainer *pc =
        weir_expand_add_transient(g, base, x.container->dtype, 0, NULL);
    WeirNode *pa = weir_state_add_access(g, s, pc->name);
    g_autofree char *label = g_strdup_printf(
        "%s_%s", n->label ? n->label : "sum_all", x.container->name);
    WeirNode *r =
        library_1_1(g, s, label, square ? "ReduceSumSquare" : "ReduceSum",
                    x.access, x.container->name, pa, pc->name, error);
    if (!r)
      return FALSE;
    g_autofree gint64 *axes = g_new0(gint64, x.rank ? x.rank : 1);
    for (guint d = 0; d < x.rank; d++)
      axes[d] = d;
    weir_node_set_attr_ints(r, "axes", axes, x.rank);
    weir_node_set_attr_int(r, "keepdims", 0);
    if (!weir_op_check_attrs(r, error))
      return FALSE;
    g_ptr_array_add(parts, pa);
  }
  /* y = the parts' sum (Sum adds its inputs in order) */
  g_autoptr(GPtrArray) ins = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < parts->len; k++)
    g_ptr_array_add(ins, g_strdup_printf("in%u", k));
  g_ptr_array_add(ins, NULL);
  static const char *const outs[] = {"out0", NULL};
  g_autofree char *label =
      g_strdup_printf("%s_total", n->label ? n->label : "sum_all");
  WeirNode *sum = weir_state_add_library(g, s, label, "Sum",
                                         (const char *const *)ins->pdata, outs);
  for (guint k = 0; k < parts->len; k++) {
    const WeirNode *a = g_ptr_array_index(parts, k);
    g_autoptr(WeirSubset) full =
        weir_container_full_subset(weir_graph_container(g, a->data));
    g_autofree char *text = weir_subset_to_string(full);
    if (!weir_state_add_memlet(g, s, a->id, NULL, sum->id, ins->pdata[k],
                               a->data, text, error))
      return FALSE;
  }
  g_autoptr(WeirSubset) yfull = weir_container_full_subset(y.container);
  g_autofree char *ytext = weir_subset_to_string(yfull);
  if (!weir_state_add_memlet(g, s, sum->id, "out0", y.access->id, NULL,
                             y.container->name, ytext, error) ||
      !weir_op_check_attrs(sum, error))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

void weir_expand_register_update(void) {
  weir_op_register_expansion("OptimizerUpdate", "pure", expand_update);
  weir_op_register_expansion("SumAll", "pure", expand_sum_all);
}
