/* batchnorm-training.c — pure expansion of BatchNormalization in training
 * mode (training_mode = 1; the inference form is elementwise and expands
 * in elementwise.c, which hands training-mode nodes to this file).
 *
 * Inputs X (N, C, D1, ...), scale, B, input_mean, input_var (vectors of C);
 * outputs Y and, optionally, running_mean and running_var.  Statistics are
 * over every dimension but 1 (count = N D1 ...), the variance is the biased
 * (population) one, as in ONNX's reference:
 *
 *   init map       (c)           sum[c] = 0, sumsq[c] = 0
 *   sum map        (i0, i1, ...) sum[i1] += x                    (WCR sum)
 *   var map        (i0, i1, ...) sumsq[i1] += (x - sum[i1]/count)^2  (WCR)
 *   stats map      (c)           mean = sum/count, var = sumsq/count,
 *                                inv = 1/sqrt(var + epsilon),
 *                                running_mean = input_mean m + mean (1 - m),
 *                                running_var = input_var m + var (1 - m)
 *   normalize map  (i0, i1, ...) y = (x - mean[i1]) inv[i1] scale[i1]
 *                                    + B[i1]
 *
 * with m = momentum.  Accumulators and statistics are transients in X's
 * dtype named after the node ("<label>_sum", ...).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

/* Exact literal, parenthesized when negative. (transfer full) */
static char *literal(double v) {
  g_autofree char *lit = weir_expand_float_literal(v);
  if (v < 0 || signbit(v))
    return g_strdup_printf("(%s)", lit);
  return g_steal_pointer(&lit);
}

/* A map over params x ranges labelled "<label>_<suffix>". */
static WeirNode *map(WeirGraph *g, WeirState *s, const WeirNode *n,
                     const char *suffix, guint rank, char **params,
                     char **ranges, const WeirTaskletPort *ins, guint n_ins,
                     const WeirTaskletPort *outs, guint n_outs,
                     const char *code, WeirNode *after, GError **error) {
  g_autofree char *label = g_strdup_printf(
      "%s_%s", n->label && *n->label ? n->label : n->op, suffix);
  return weir_expand_map(g, s, label, rank, (const char *const *)params,
                         (const char *const *)ranges, ins, n_ins, outs, n_outs,
                         code, after ? &after : NULL, after ? 1 : 0, error);
}

static WeirNode *add_stat(WeirGraph *g, WeirState *s, const WeirNode *n,
                          const char *suffix, WeirDType dtype,
                          WeirExpr *channels) {
  g_autofree char *base = weir_expand_name(n, suffix);
  WeirContainer *c = weir_expand_add_transient(g, base, dtype, 1, &channels);
  return weir_state_add_access(g, s, c->name);
}

gboolean weir_expand_batchnorm_training(WeirGraph *g, WeirState *s, WeirNode *n,
                                        GError **error) {
  static const char *const in_names[] = {"X", "scale", "B", "input_mean",
                                         "input_var"};
  const WeirAttr *spatial = weir_node_attr(n, "spatial");
  if (spatial && spatial->type == WEIR_ATTR_INT && spatial->i == 0)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "spatial = 0 is not supported");
  for (guint k = 3; k < 5; k++) {
    g_autofree char *conn = g_strdup_printf("out%u", k);
    if (weir_node_has_out_conn(n, conn))
      return weir_node_fail(
          error, WEIR_ERROR_UNSUPPORTED, n,
          "output %u (saved statistics of opsets 9 to 13) is not "
          "supported",
          k);
  }
  WeirPort in[5], y, rm, rv;
  for (guint k = 0; k < 5; k++)
    if (!weir_port_require_input(g, s, n, k, &in[k], error))
      return FALSE;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  gboolean has_rm = weir_port_output(g, s, n, 1, &rm, &local);
  gboolean has_rv = !local && weir_port_output(g, s, n, 2, &rv, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  const WeirPort *x = &in[0];
  if (x->rank < 2)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "input 0 ('%s') has rank %u, expected at least 2 (N, C, ...)",
        x->container->name, x->rank);
  if (!weir_dtype_is_float(x->container->dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 ('%s') must be f32 or f64",
                          x->container->name);
  WeirExpr *channels = x->shape[1];
  for (guint k = 1; k < 5; k++)
    if (in[k].rank != 1 || !weir_expr_equal(in[k].shape[0], channels))
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, n,
          "input %u (%s, '%s') must be a vector over the channels "
          "(dimension 1 of X)",
          k, in_names[k], in[k].container->name);
  gboolean same = y.rank == x->rank;
  for (guint d = 0; same && d < x->rank; d++)
    same = weir_expr_equal(y.shape[d], x->shape[d]);
  if (!same)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output 0 ('%s') must have the shape of X",
                          y.container->name);
  if ((has_rm && (rm.rank != 1 || !weir_expr_equal(rm.shape[0], channels))) ||
      (has_rv && (rv.rank != 1 || !weir_expr_equal(rv.shape[0], channels))))
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "outputs 1 and 2 (running_mean, running_var) must be vectors "
        "over the channels");

  /* The number of elements per channel, as tasklet text. */
  g_autoptr(WeirExpr) count = weir_expr_const(1);
  for (guint d = 0; d < x->rank; d++) {
    if (d == 1)
      continue;
    WeirExpr *next = weir_expr_mul(count, x->shape[d]);
    weir_expr_unref(count);
    count = next;
  }
  g_autofree char *count_text = weir_expand_expr_code(count);
  double momentum = weir_node_attr_float(n, "momentum", 0.9);
  g_autofree char *eps = literal(weir_node_attr_float(n, "epsilon", 1e-5));
  g_autofree char *m = literal(momentum);
  g_autofree char *m1 = literal(1.0 - momentum);

  WeirDType dtype = x->container->dtype;
  WeirNode *sum1 = add_stat(g, s, n, "sum", dtype, channels);
  WeirNode *sum2 = weir_state_add_access(g, s, sum1->data);
  WeirNode *sq1 = add_stat(g, s, n, "sumsq", dtype, channels);
  WeirNode *sq2 = weir_state_add_access(g, s, sq1->data);
  WeirNode *mean = add_stat(g, s, n, "mean", dtype, channels);
  WeirNode *inv = add_stat(g, s, n, "invstd", dtype, channels);

  g_auto(GStrv) xp = weir_expand_params("i", x->rank);
  g_auto(GStrv) xr = weir_expand_full_ranges(x->rank, x->shape);
  g_autofree char *xi =
      weir_expand_index_subset(x->rank, (const char *const *)xp);
  g_auto(GStrv) cp = weir_expand_params("c", 1);
  g_auto(GStrv) cr = weir_expand_full_ranges(1, &channels);
  const char *ch = xp[1]; /* the channel of an element of X */
  const char *ci = cp[0];

  WeirTaskletPort in_x = {x->access, "x", xi, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{sum1, "a", ci, WEIR_WCR_NONE},
                                {sq1, "b", ci, WEIR_WCR_NONE}};
  WeirTaskletPort sum_out = {sum2, "a", ch, WEIR_WCR_SUM};
  WeirTaskletPort var_in[] = {in_x, {sum2, "a", ch, WEIR_WCR_NONE}};
  WeirTaskletPort var_out = {sq2, "b", ch, WEIR_WCR_SUM};
  g_autofree char *var_code =
      g_strdup_printf("d = x - a / %s\nb = d * d", count_text);

  WeirTaskletPort stat_in[4] = {{sum2, "a", ci, WEIR_WCR_NONE},
                                {sq2, "b", ci, WEIR_WCR_NONE}};
  WeirTaskletPort stat_out[4] = {{mean, "mean", ci, WEIR_WCR_NONE},
                                 {inv, "inv", ci, WEIR_WCR_NONE}};
  guint n_stat_in = 2, n_stat_out = 2;
  GString *stat = g_string_new(NULL);
  g_string_append_printf(stat,
                         "mu = a / %s\nvar = b / %s\n"
                         "mean = mu\ninv = 1 / sqrt(var + %s)",
                         count_text, count_text, eps);
  if (has_rm) {
    stat_in[n_stat_in++] =
        (WeirTaskletPort){in[3].access, "m_in", ci, WEIR_WCR_NONE};
    stat_out[n_stat_out++] =
        (WeirTaskletPort){rm.access, "m_out", ci, WEIR_WCR_NONE};
    g_string_append_printf(stat, "\nm_out = m_in * %s + mu * %s", m, m1);
  }
  if (has_rv) {
    stat_in[n_stat_in++] =
        (WeirTaskletPort){in[4].access, "v_in", ci, WEIR_WCR_NONE};
    stat_out[n_stat_out++] =
        (WeirTaskletPort){rv.access, "v_out", ci, WEIR_WCR_NONE};
    g_string_append_printf(stat, "\nv_out = v_in * %s + var * %s", m, m1);
  }
  g_autofree char *stat_code = g_string_free(stat, FALSE);

  WeirTaskletPort norm_in[] = {
      in_x,
      {mean, "mean", ch, WEIR_WCR_NONE},
      {inv, "inv", ch, WEIR_WCR_NONE},
      {in[1].access, "scale", ch, WEIR_WCR_NONE},
      {in[2].access, "bias", ch, WEIR_WCR_NONE},
  };
  WeirTaskletPort out_y = {y.access, "y", xi, WEIR_WCR_NONE};
  WeirNode *unused_mean = NULL, *unused_var = NULL;
  if (!has_rm)
    unused_mean = in[3].access;
  if (!has_rv)
    unused_var = in[4].access;

  if (!(map(g, s, n, "init", 1, cp, cr, NULL, 0, init_out, 2, "a = 0\nb = 0",
            NULL, error) &&
        map(g, s, n, "sum", x->rank, xp, xr, &in_x, 1, &sum_out, 1, "a = x",
            sum1, error) &&
        map(g, s, n, "var", x->rank, xp, xr, var_in, 2, &var_out, 1, var_code,
            sq1, error) &&
        map(g, s, n, "stats", 1, cp, cr, stat_in, n_stat_in, stat_out,
            n_stat_out, stat_code, NULL, error) &&
        map(g, s, n, "normalize", x->rank, xp, xr, norm_in, 5, &out_y, 1,
            "y = (x - mean) * inv * scale + bias", NULL, error)))
    return FALSE;
  weir_state_remove_node(s, n->id);
  /* input_mean / input_var only feed the running statistics: without those
   * outputs their access nodes may be left without edges. */
  WeirNode *unused[] = {unused_mean, unused_var};
  for (guint i = 0; i < G_N_ELEMENTS(unused); i++) {
    if (!unused[i])
      continue;
    g_autoptr(GPtrArray) ie = weir_state_in_edges(s, unused[i]->id);
    g_autoptr(GPtrArray) oe = weir_state_out_edges(s, unused[i]->id);
    if (ie->len == 0 && oe->len == 0)
      weir_state_remove_node(s, unused[i]->id);
  }
  return TRUE;
}
