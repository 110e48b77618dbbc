/* batchnorm-folding.c — folds an inference BatchNormalization into the
 * convolution that feeds it.
 *
 * Site: [conv, bn]: a Conv whose output is read by a BatchNormalization.
 *
 * In inference, BN computes per output channel m
 *   z = (y - mean[m]) / sqrt(var[m] + epsilon) * scale[m] + bias[m]
 * which is affine in y: z = s[m] * y + t[m] with
 *   s[m] = scale[m] / sqrt(var[m] + epsilon),
 *   t[m] = bias[m] - mean[m] * s[m].
 * Since y = conv(x, W) + B, z = conv(x, W') + B' with W'[m, ...] =
 * W[m, ...] * s[m] and B'[m] = B[m] * s[m] + t[m] = (B[m] - mean[m]) * s[m]
 * + bias[m].  The factors are computed in double precision and stored in
 * the weights' dtype, as new constant containers (the old weights may be
 * shared); the Conv gets a bias input if it had none, writes the BN's
 * output directly, and the BN is removed with the intermediate and every
 * constant left unused.
 *
 * Legality: BN in inference mode (training_mode 0) with one output; the
 * Conv's output is a transient read only by the BN, written only by the
 * Conv, used only in this state; weights, bias (when present) and the four
 * BN parameters are constants of a floating dtype with one value per
 * output channel; the BN's output is written only by it.
 */
#include <math.h>

#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-expand.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_batchnorm_folding(GError **error);

static void bnf_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *bn = g_ptr_array_index(s->nodes, i);
      WeirTier2Port y;
      if (!weir_tier2_is_op(bn, "BatchNormalization") ||
          !weir_tier2_port(g, s, bn, TRUE, 0, &y))
        continue;
      WeirNode *conv = weir_tier2_writer(g, s, y.container->name);
      if (!weir_tier2_is_op(conv, "Conv"))
        continue;
      WeirSite site = {
          .state = s->id, .n_nodes = 2, .nodes = {conv->id, bn->id}};
      g_array_append_val(sites, site);
    }
  }
}

static const char *const bn_params[] = {"scale", "bias", "mean", "var"};

/* Checks that port p is a floating constant with `count` elements (count
 * 0: any). */
static gboolean check_constant(const WeirTier2Port *p, const char *what,
                               const WeirNode *n, gint64 count, char **reason) {
  const WeirContainer *c = p->container;
  if (!weir_tier2_is_constant(c))
    return weir_tier2_reject(reason, "%s '%s' of %s '%s' is not a constant",
                             what, c->name, n->op, n->label);
  if (!weir_dtype_is_float(c->dtype))
    return weir_tier2_reject(reason, "%s '%s' of %s '%s' has dtype %s", what,
                             c->name, n->op, n->label,
                             weir_dtype_name(c->dtype));
  if (count) {
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    weir_tier2_concrete_shape(c, shape);
    gint64 have = 1;
    for (guint d = 0; d < c->shape->len; d++)
      have *= shape[d];
    if (have != count)
      return weir_tier2_reject(reason,
                               "%s '%s' of %s '%s' has %" G_GINT64_FORMAT
                               " elements, not %" G_GINT64_FORMAT,
                               what, c->name, n->op, n->label, have, count);
  }
  return TRUE;
}

static gboolean bnf_can_apply(const WeirGraph *g, const WeirSite *site,
                              const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *conv =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  WeirNode *bn =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[1]) : NULL;
  if (!weir_tier2_is_op(conv, "Conv") ||
      !weir_tier2_is_op(bn, "BatchNormalization"))
    return weir_tier2_reject(reason, "the site is not a Conv and a "
                                     "BatchNormalization");
  if (weir_epilogue_present(conv))
    return weir_tier2_reject(reason,
                             "Conv '%s' has an epilogue, which runs before "
                             "the normalization could be folded",
                             conv->label);
  if (!weir_tier2_wired(g, s, conv) || !weir_tier2_wired(g, s, bn))
    return weir_tier2_reject(reason, "the nodes do not follow the library-node "
                                     "conventions");
  WeirTier2Port y, by, z, w;
  if (!weir_tier2_port(g, s, conv, FALSE, 0, &y) ||
      !weir_tier2_port(g, s, bn, TRUE, 0, &by) ||
      !weir_tier2_port(g, s, bn, FALSE, 0, &z) ||
      !weir_tier2_port(g, s, conv, TRUE, 1, &w))
    return weir_tier2_reject(reason, "a data connector is missing");
  if (y.container != by.container)
    return weir_tier2_reject(reason,
                             "BatchNormalization '%s' does not read the "
                             "output of Conv '%s'",
                             bn->label, conv->label);
  const WeirAttr *tm = weir_node_attr(bn, "training_mode");
  if (tm && tm->type == WEIR_ATTR_INT && tm->i != 0)
    return weir_tier2_reject(
        reason, "BatchNormalization '%s' is in training mode", bn->label);
  if (bn->out_conns->len != 1)
    return weir_tier2_reject(reason,
                             "BatchNormalization '%s' also outputs running "
                             "statistics",
                             bn->label);
  const WeirContainer *yc = y.container;
  WeirTier2Use use;
  weir_tier2_use(g, yc->name, &use);
  if (!yc->transient)
    return weir_tier2_reject(reason,
                             "the output '%s' of Conv '%s' is a program "
                             "argument",
                             yc->name, conv->label);
  if (use.reads != 1 || use.writes != 1 || !weir_tier2_local(g, s, yc->name))
    return weir_tier2_reject(reason,
                             "the output '%s' of Conv '%s' is also used "
                             "elsewhere",
                             yc->name, conv->label);
  weir_tier2_use(g, z.container->name, &use);
  if (use.writes != 1 || z.memlet->wcr != WEIR_WCR_NONE)
    return weir_tier2_reject(reason, "output '%s' is also written elsewhere",
                             z.container->name);
  if (!weir_tier2_same_layout(yc, z.container))
    return weir_tier2_reject(reason, "'%s' and '%s' differ in dtype or shape",
                             yc->name, z.container->name);

  if (!check_constant(&w, "weights", conv, 0, reason))
    return FALSE;
  if (w.container->shape->len < 3)
    return weir_tier2_reject(reason, "weights '%s' have rank %u",
                             w.container->name, w.container->shape->len);
  gint64 m = 0;
  weir_expr_is_const(g_ptr_array_index(w.container->shape, 0), &m);
  WeirTier2Port b;
  if (weir_tier2_port(g, s, conv, TRUE, 2, &b) &&
      !check_constant(&b, "bias", conv, m, reason))
    return FALSE;
  for (guint k = 0; k < G_N_ELEMENTS(bn_params); k++) {
    WeirTier2Port p;
    if (!weir_tier2_port(g, s, bn, TRUE, k + 1, &p))
      return weir_tier2_reject(reason,
                               "BatchNormalization '%s' has no %s input",
                               bn->label, bn_params[k]);
    if (!check_constant(&p, bn_params[k], bn, m, reason))
      return FALSE;
  }
  return TRUE;
}

static WeirTensor *port_tensor(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, guint k) {
  WeirTier2Port p;
  if (!weir_tier2_port(g, s, n, TRUE, k, &p))
    return NULL;
  return weir_tier2_constant_tensor(p.container);
}

/* Replaces the memlet into connector conn of n (if any) by one from a new
 * access node of container c. */
static gboolean rewire_input(WeirGraph *g, WeirState *s, WeirNode *n,
                             const char *conn, const WeirContainer *c,
                             GError **error) {
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
  for (guint i = 0; i < in->len; i++) {
    WeirMemlet *m = g_ptr_array_index(in, i);
    if (g_strcmp0(m->dst_conn, conn) == 0)
      weir_state_remove_memlet(s, m->id);
  }
  if (!weir_node_has_in_conn(n, conn))
    weir_node_add_in_conn(n, conn);
  WeirNode *a = weir_state_add_access(g, s, c->name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *text = weir_subset_to_string(full);
  return weir_state_add_memlet(g, s, a->id, NULL, n->id, conn, c->name, text,
                               error) != NULL;
}

static gboolean bnf_apply(WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *conv = weir_tier2_site_node(s, site->nodes[0]);
  WeirNode *bn = weir_tier2_site_node(s, site->nodes[1]);
  WeirTier2Port w, y, z;
  weir_tier2_port(g, s, conv, TRUE, 1, &w);
  weir_tier2_port(g, s, conv, FALSE, 0, &y);
  weir_tier2_port(g, s, bn, FALSE, 0, &z);

  g_autoptr(WeirTensor) wt = weir_tier2_constant_tensor(w.container);
  g_autoptr(WeirTensor) bt = port_tensor(g, s, conv, 2);
  g_autoptr(WeirTensor) scale = port_tensor(g, s, bn, 1);
  g_autoptr(WeirTensor) bias = port_tensor(g, s, bn, 2);
  g_autoptr(WeirTensor) mean = port_tensor(g, s, bn, 3);
  g_autoptr(WeirTensor) var = port_tensor(g, s, bn, 4);
  double eps = weir_node_attr_float(bn, "epsilon", 1e-5);
  gint64 m = wt->shape[0], per = m ? wt->count / m : 0;

  g_autoptr(WeirTensor) nw = weir_tensor_copy(wt);
  g_autoptr(WeirTensor) nb = weir_tensor_new(wt->dtype, 1, &m);
  for (gint64 c = 0; c < m; c++) {
    double f = weir_tensor_get(scale, c) / sqrt(weir_tensor_get(var, c) + eps);
    for (gint64 i = 0; i < per; i++)
      weir_tensor_set(nw, c * per + i, weir_tensor_get(wt, c * per + i) * f);
    double b0 = bt ? weir_tensor_get(bt, c) : 0.0;
    weir_tensor_set(
        nb, c, (b0 - weir_tensor_get(mean, c)) * f + weir_tensor_get(bias, c));
  }

  /* names of everything that may become unused */
  g_autoptr(GPtrArray) old = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(old, g_strdup(y.container->name));
  for (guint k = 1; k <= 4; k++) {
    WeirTier2Port p;
    weir_tier2_port(g, s, bn, TRUE, k, &p);
    g_ptr_array_add(old, g_strdup(p.container->name));
  }
  g_ptr_array_add(old, g_strdup(w.container->name));
  WeirTier2Port b;
  if (weir_tier2_port(g, s, conv, TRUE, 2, &b))
    g_ptr_array_add(old, g_strdup(b.container->name));

  g_autofree char *wbase = g_strdup_printf("%s_folded", w.container->name);
  g_autofree char *bbase = g_strdup_printf("%s_bias_folded", w.container->name);
  WeirContainer *wc = weir_tier2_add_constant(g, wbase, nw);
  WeirContainer *bc = weir_tier2_add_constant(g, bbase, nb);
  guint z_access = z.access->id;
  g_autofree char *zname = g_strdup(z.container->name);
  g_autofree char *zsub = weir_subset_to_string(z.memlet->subset);

  weir_state_remove_node(s, bn->id);
  weir_state_remove_memlet(s, y.memlet->id);
  if (!rewire_input(g, s, conv, "in1", wc, error) ||
      !rewire_input(g, s, conv, "in2", bc, error))
    return FALSE;
  if (!weir_state_add_memlet(g, s, conv->id, "out0", z_access, NULL, zname,
                             zsub, error))
    return FALSE;
  for (guint i = 0; i < old->len; i++)
    weir_tier2_drop_if_unused(g, g_ptr_array_index(old, i));
  return TRUE;
}

static const WeirTransformInfo batchnorm_folding = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "batchnorm-folding",
    .tier = 2,
    .description = "fold an inference BatchNormalization into the weights "
                   "and bias of the Conv that feeds it",
    .match = bnf_match,
    .can_apply = bnf_can_apply,
    .apply = bnf_apply,
};

gboolean weir_tier2_register_batchnorm_folding(GError **error) {
  return weir_transform_register(&batchnorm_folding, error);
}
