/* batchnorm-grad.c — pure expansions of BatchNormStats, BatchNormApply and
 * BatchNormGrad (ir/ops/training.c), the training-mode batch norm of
 * core/train.c and its backward (docs/training.md, "The batch norm's
 * backward").
 *
 * c is the channel of an element of X (its index i1), M the number of
 * elements per channel (the product of X's dimensions but 1):
 *
 *   BatchNormApply   apply map (i0, i1, ...)  y = (x - mean[c]) / std[c]
 *                                                 * scale[c] + B[c]
 *   BatchNormGrad    init map  (c)            dB[c] = 0, dscale[c] = 0
 *                    sums map  (i0, i1, ...)  g = dY (R > 0 ? dY : 0 with R)
 *                                             dB[c] += g
 *                                             dscale[c] += g xhat  (WCR sum)
 *                    dX map    (i0, i1, ...)  dX = scale[c] / std[c]
 *                                               (g - dB[c] / M
 *                                                - xhat dscale[c] / M)
 *
 *   BatchNormStats   init map  (c)            sum[c] = 0, sq[c] = 0
 *                    sum map   (i0, i1, ...)  sum[c] += x          (WCR sum)
 *                    var map   (i0, i1, ...)  sq[c] += (x - sum[c] / M)^2
 *                    stats map (c)            mean = sum / M, var = sq / M,
 *                                             std = sqrt(var + epsilon)
 *
 * with xhat = (x - mean[c]) / std[c].  So the expansion already reads dY
 * and X twice (the sums, then dX); Weir's kernel (core/kernels/norm.c)
 * does the same per channel while the channel is in the cache.
 */
#include <string.h>

#include <math.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_batchnorm_grad(void);

/* The subset of per-channel operand p read by the element of X whose
 * channel is parameter ch: [C] or [1, C, 1, ...]. (transfer full) */
static char *channel_subset(const WeirPort *p, const char *ch) {
  if (p->rank == 1)
    return g_strdup(ch);
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < p->rank; d++)
    g_string_append_printf(s, "%s%s", d ? ", " : "", d == 1 ? ch : "0");
  return g_string_free(s, FALSE);
}

static WeirNode *map(WeirGraph *g, WeirState *s, const WeirNode *n,
                     const char *suffix, guint rank, char **params,
                     char **ranges, const WeirTaskletPort *ins, guint n_ins,
                     const WeirTaskletPort *outs, guint n_outs,
                     const char *code, WeirNode *const *after, guint n_after,
                     GError **error) {
  g_autofree char *label = g_strdup_printf(
      "%s_%s", n->label && *n->label ? n->label : n->op, suffix);
  return weir_expand_map(g, s, label, rank, (const char *const *)params,
                         (const char *const *)ranges, ins, n_ins, outs, n_outs,
                         code, after, n_after, error);
}

static gboolean expand_apply(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort in[5], y;
  for (guint k = 0; k < 5; k++)
    if (!weir_port_require_input(g, s, n, k, &in[k], error))
      return FALSE;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (in[0].rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 ('%s') must be [N, C, ...]",
                          in[0].container->name);
  g_auto(GStrv) xp = weir_expand_params("i", in[0].rank);
  g_auto(GStrv) xr = weir_expand_full_ranges(in[0].rank, in[0].shape);
  g_autofree char *xi =
      weir_expand_index_subset(in[0].rank, (const char *const *)xp);
  /* the per-channel subsets, freed with `keep` */
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  const char *sub[5] = {NULL};
  for (guint k = 1; k < 5; k++) {
    char *t = channel_subset(&in[k], xp[1]);
    g_ptr_array_add(keep, t);
    sub[k] = t;
  }
  WeirTaskletPort ins[] = {
      {in[0].access, "x", xi, WEIR_WCR_NONE},
      {in[1].access, "scale", sub[1], WEIR_WCR_NONE},
      {in[2].access, "bias", sub[2], WEIR_WCR_NONE},
      {in[3].access, "mean", sub[3], WEIR_WCR_NONE},
      {in[4].access, "sd", sub[4], WEIR_WCR_NONE},
  };
  WeirTaskletPort out = {y.access, "y", xi, WEIR_WCR_NONE};
  if (!map(g, s, n, "apply", in[0].rank, xp, xr, ins, 5, &out, 1,
           "y = (x - mean) / sd * scale + bias", NULL, 0, error))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

static gboolean expand_grad(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  WeirPort in[6], out[3];
  for (guint k = 0; k < 5; k++)
    if (!weir_port_require_input(g, s, n, k, &in[k], error))
      return FALSE;
  g_autoptr(GError) local = NULL;
  gboolean masked = weir_port_input(g, s, n, 5, &in[5], &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  for (guint k = 0; k < 3; k++)
    if (!weir_port_require_output(g, s, n, k, &out[k], error))
      return FALSE;
  const WeirPort *x = &in[1];
  if (x->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 1 ('%s') must be [N, C, ...]",
                          x->container->name);
  g_autoptr(WeirExpr) count = weir_expr_const(1);
  for (guint d = 0; d < x->rank; d++) {
    if (d == 1)
      continue;
    WeirExpr *next = weir_expr_mul(count, x->shape[d]);
    weir_expr_unref(count);
    count = next;
  }
  g_autofree char *m = weir_expand_expr_code(count);

  g_auto(GStrv) xp = weir_expand_params("i", x->rank);
  g_auto(GStrv) xr = weir_expand_full_ranges(x->rank, x->shape);
  g_autofree char *xi =
      weir_expand_index_subset(x->rank, (const char *const *)xp);
  g_auto(GStrv) cp = weir_expand_params("c", 1);
  g_auto(GStrv) cr = weir_expand_full_ranges(1, out[1].shape);
  /* the per-channel subsets, freed with `keep` */
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  const char *sub[5] = {NULL};
  for (guint k = 2; k < 5; k++) {
    char *t = channel_subset(&in[k], xp[1]);
    g_ptr_array_add(keep, t);
    sub[k] = t;
  }
  const char *ch = xp[1];

  /* the sums: zeroed into their own access nodes, accumulated into the
   * node's outputs, which the dX map then reads */
  WeirNode *zs = weir_state_add_access(g, s, out[1].container->name);
  WeirNode *zb = weir_state_add_access(g, s, out[2].container->name);
  WeirTaskletPort init_out[] = {{zs, "s", cp[0], WEIR_WCR_NONE},
                                {zb, "b", cp[0], WEIR_WCR_NONE}};
  WeirTaskletPort ins[8] = {
      {in[0].access, "dy", xi, WEIR_WCR_NONE},
      {in[1].access, "x", xi, WEIR_WCR_NONE},
      {in[2].access, "mean", sub[2], WEIR_WCR_NONE},
      {in[3].access, "sd", sub[3], WEIR_WCR_NONE},
  };
  guint n_ins = 4;
  if (masked)
    ins[n_ins++] = (WeirTaskletPort){in[5].access, "r", xi, WEIR_WCR_NONE};
  const char *grad = masked ? "g = r > 0 ? dy : 0\n" : "g = dy\n";
  WeirTaskletPort sum_out[] = {{out[1].access, "s", ch, WEIR_WCR_SUM},
                               {out[2].access, "b", ch, WEIR_WCR_SUM}};
  g_autofree char *sum_code =
      g_strdup_printf("%sh = (x - mean) / sd\nb = g\ns = g * h", grad);
  WeirTaskletPort dx_ins[8];
  memcpy(dx_ins, ins, sizeof ins);
  guint n_dx = n_ins;
  dx_ins[n_dx++] =
      (WeirTaskletPort){in[4].access, "scale", sub[4], WEIR_WCR_NONE};
  dx_ins[n_dx++] = (WeirTaskletPort){out[1].access, "ts", ch, WEIR_WCR_NONE};
  dx_ins[n_dx++] = (WeirTaskletPort){out[2].access, "tb", ch, WEIR_WCR_NONE};
  WeirTaskletPort dx_out = {out[0].access, "dx", xi, WEIR_WCR_NONE};
  g_autofree char *dx_code =
      g_strdup_printf("%sh = (x - mean) / sd\n"
                      "dx = scale / sd * (g - tb / %s - h * (ts / %s))",
                      grad, m, m);
  WeirNode *zeroed[] = {zs, zb};
  if (!(map(g, s, n, "init", 1, cp, cr, NULL, 0, init_out, 2, "s = 0\nb = 0",
            NULL, 0, error) &&
        map(g, s, n, "sums", x->rank, xp, xr, ins, n_ins, sum_out, 2, sum_code,
            zeroed, 2, error) &&
        map(g, s, n, "dx", x->rank, xp, xr, dx_ins, n_dx, &dx_out, 1, dx_code,
            NULL, 0, error)))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

static gboolean expand_stats(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort x, out[3];
  if (!weir_port_require_input(g, s, n, 0, &x, error))
    return FALSE;
  for (guint k = 0; k < 3; k++)
    if (!weir_port_require_output(g, s, n, k, &out[k], error))
      return FALSE;
  if (x.rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 ('%s') must be [N, C, ...]",
                          x.container->name);
  g_autoptr(WeirExpr) count = weir_expr_const(1);
  for (guint d = 0; d < x.rank; d++) {
    if (d == 1)
      continue;
    WeirExpr *next = weir_expr_mul(count, x.shape[d]);
    weir_expr_unref(count);
    count = next;
  }
  g_autofree char *m = weir_expand_expr_code(count);
  double eps = weir_node_attr_float(n, "epsilon", 1e-5);
  g_autofree char *eps_text = weir_expand_float_literal(eps);
  if (eps < 0 || signbit(eps)) {
    char *p = g_strdup_printf("(%s)", eps_text);
    g_free(eps_text);
    eps_text = p;
  }
  WeirDType dt = x.container->dtype;
  WeirExpr *channels = x.shape[1];
  WeirNode *acc[2][2];
  static const char *const suffix[] = {"sum", "sumsq"};
  for (guint k = 0; k < 2; k++) {
    g_autofree char *base = weir_expand_name(n, suffix[k]);
    WeirContainer *c = weir_expand_add_transient(g, base, dt, 1, &channels);
    acc[k][0] = weir_state_add_access(g, s, c->name);
    acc[k][1] = weir_state_add_access(g, s, c->name);
  }
  g_auto(GStrv) xp = weir_expand_params("i", x.rank);
  g_auto(GStrv) xr = weir_expand_full_ranges(x.rank, x.shape);
  g_autofree char *xi =
      weir_expand_index_subset(x.rank, (const char *const *)xp);
  g_auto(GStrv) cp = weir_expand_params("c", 1);
  g_auto(GStrv) cr = weir_expand_full_ranges(1, &channels);
  const char *ch = xp[1], *ci = cp[0];
  /* the per-channel subsets of the outputs, freed with `keep` */
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  const char *sub[3];
  for (guint k = 0; k < 3; k++) {
    char *t = channel_subset(&out[k], ci);
    g_ptr_array_add(keep, t);
    sub[k] = t;
  }
  WeirTaskletPort in_x = {x.access, "x", xi, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{acc[0][0], "a", ci, WEIR_WCR_NONE},
                                {acc[1][0], "b", ci, WEIR_WCR_NONE}};
  WeirTaskletPort sum_out = {acc[0][1], "a", ch, WEIR_WCR_SUM};
  WeirTaskletPort var_in[] = {in_x, {acc[0][1], "a", ch, WEIR_WCR_NONE}};
  WeirTaskletPort var_out = {acc[1][1], "b", ch, WEIR_WCR_SUM};
  g_autofree char *var_code = g_strdup_printf("d = x - a / %s\nb = d * d", m);
  WeirTaskletPort stat_in[] = {{acc[0][1], "a", ci, WEIR_WCR_NONE},
                               {acc[1][1], "b", ci, WEIR_WCR_NONE}};
  WeirTaskletPort stat_out[] = {{out[0].access, "mean", sub[0], WEIR_WCR_NONE},
                                {out[1].access, "var", sub[1], WEIR_WCR_NONE},
                                {out[2].access, "sd", sub[2], WEIR_WCR_NONE}};
  g_autofree char *stat_code =
      g_strdup_printf("mean = a / %s\nv = b / %s\nvar = v\n"
                      "sd = sqrt(v + %s)",
                      m, m, eps_text);
  if (!(map(g, s, n, "init", 1, cp, cr, NULL, 0, init_out, 2, "a = 0\nb = 0",
            NULL, 0, error) &&
        map(g, s, n, "sum", x.rank, xp, xr, &in_x, 1, &sum_out, 1, "a = x",
            &acc[0][0], 1, error) &&
        map(g, s, n, "var", x.rank, xp, xr, var_in, 2, &var_out, 1, var_code,
            &acc[1][0], 1, error) &&
        map(g, s, n, "stats", 1, cp, cr, stat_in, 2, stat_out, 3, stat_code,
            NULL, 0, error)))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

void weir_expand_register_batchnorm_grad(void) {
  weir_op_register_expansion("BatchNormStats", "pure", expand_stats);
  weir_op_register_expansion("BatchNormApply", "pure", expand_apply);
  weir_op_register_expansion("BatchNormGrad", "pure", expand_grad);
}
