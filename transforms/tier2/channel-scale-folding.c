/* channel-scale-folding.c — moves a per-channel scale of a convolution's
 * input onto its weights (squeeze-and-excitation).
 *
 * Site: [mul, conv]: a Mul whose output is the data input (in0) of a Conv.
 *
 * A squeeze-and-excitation block (MobileNetV3, EfficientNet) multiplies
 * its feature map X [N, C, H, W] by a gate s of one value per channel
 * ([1, C, 1, 1]) and feeds the product to a convolution.  Since the
 * convolution is linear in each input channel,
 *   conv(X * s, W) = conv(X, W * s)
 * where W * s [M, C, kh, kw] scales input channel c of every filter by
 * s[c] (ONNX broadcasting of s against W gives exactly that).  The Mul is
 * kept, rewired: it now reads W and s and writes a new transient W_scaled
 * of W's shape, and the Conv reads X and W_scaled.  The scaled tensor
 * (X's size) is no longer written and read back; the Mul touches W's
 * elements instead, and the convolution's weight is no longer a constant
 * (so it is packed in every call rather than once at load).  The site is
 * therefore only taken when W has at most a quarter of X's elements: the
 * 1x1 projections of EfficientNet-B0 at 112 x 112, 56 x 56 and 28 x 28
 * (weights 1/784 to 1/20 of the map).  At 14 x 14 (weights 0.4 to 0.6 of
 * the map) folding measured slower, and at 7 x 7 the weights are larger
 * than the map.
 *
 * Legality: the Mul has two inputs, one (X) of the output's layout, the
 * other (s) broadcast over every dimension but the channel (dimension 1),
 * its batch dimension 1 (the same gate for every image), dtype float; the
 * Mul's output is a transient read only by the Conv and written only by the
 * Mul, in this state; X and s hold one value in the state; the Conv has
 * group 1 and a constant weight (the transformation never touches a
 * trained parameter, so training programs are left alone) of X's rank,
 * its dimension 1 equal to C, at most a quarter of X's elements; shapes
 * concrete.
 */
#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-expand.h"
#include "weir-ops.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_channel_scale_folding(GError **error);

static void csf_match(const WeirGraph *g, GArray *sites) {
  weir_tier2_match_fed_by(g, sites, "Mul", "Conv");
}

static gint64 elements(const WeirContainer *c) {
  g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
  weir_tier2_concrete_shape(c, shape);
  gint64 n = 1;
  for (guint d = 0; d < c->shape->len; d++)
    n *= shape[d];
  return n;
}

/* Which input of the Mul is the feature map (*xi) and which the gate; FALSE
 * with *reason unless one has the output's layout and the other is a gate
 * of one value per channel of it. */
static gboolean split_inputs(const WeirGraph *g, const WeirState *s,
                             const WeirNode *mul, guint *xi, char **reason) {
  WeirTier2Port in[2], out;
  if (mul->in_conns->len != 2 || !weir_tier2_port(g, s, mul, TRUE, 0, &in[0]) ||
      !weir_tier2_port(g, s, mul, TRUE, 1, &in[1]) ||
      !weir_tier2_port(g, s, mul, FALSE, 0, &out))
    return weir_tier2_reject(reason, "Mul '%s' does not have two inputs",
                             mul->label);
  const WeirContainer *y = out.container;
  guint rank = y->shape->len;
  g_autofree gint64 *ys = g_new0(gint64, rank + 1);
  if (rank < 3 || !weir_tier2_concrete_shape(y, ys))
    return weir_tier2_reject(reason,
                             "the output '%s' of Mul '%s' is not a feature "
                             "map of concrete shape",
                             y->name, mul->label);
  for (guint k = 0; k < 2; k++) {
    const WeirContainer *x = in[k].container, *sc = in[1 - k].container;
    if (!weir_tier2_same_layout(x, y) || weir_tier2_same_layout(sc, y))
      continue;
    guint rs = sc->shape->len;
    g_autofree gint64 *ss = g_new0(gint64, rs + 1);
    if (rs > rank || sc->dtype != y->dtype ||
        !weir_tier2_concrete_shape(sc, ss))
      continue;
    gboolean gate = TRUE;
    for (guint d = 0; d < rs; d++) {
      guint dim = rank - rs + d;
      if (ss[d] != 1 && !(dim == 1 && ss[d] == ys[1]))
        gate = FALSE;
    }
    if (gate) {
      *xi = k;
      return TRUE;
    }
  }
  return weir_tier2_reject(reason,
                           "Mul '%s' does not scale a feature map by one "
                           "value per channel",
                           mul->label);
}

static gboolean csf_can_apply(const WeirGraph *g, const WeirSite *site,
                              const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *mul =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  WeirNode *conv =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[1]) : NULL;
  if (!weir_tier2_is_op(mul, "Mul") || !weir_tier2_is_op(conv, "Conv"))
    return weir_tier2_reject(reason, "the site is not a Mul and a Conv");
  if (!weir_tier2_wired(g, s, mul) || !weir_tier2_wired(g, s, conv))
    return weir_tier2_reject(reason, "the nodes do not follow the library-node "
                                     "conventions");
  if (weir_epilogue_present(mul))
    return weir_tier2_reject(reason, "Mul '%s' has an epilogue", mul->label);
  WeirTier2Port p, cx, w;
  if (!weir_tier2_port(g, s, mul, FALSE, 0, &p) ||
      !weir_tier2_port(g, s, conv, TRUE, 0, &cx) ||
      !weir_tier2_port(g, s, conv, TRUE, 1, &w))
    return weir_tier2_reject(reason, "a data connector is missing");
  if (p.container != cx.container)
    return weir_tier2_reject(reason,
                             "Conv '%s' does not read the output of Mul '%s'",
                             conv->label, mul->label);
  if (!weir_dtype_is_float(p.container->dtype))
    return weir_tier2_reject(reason, "Mul '%s' has dtype %s", mul->label,
                             weir_dtype_name(p.container->dtype));
  guint xi = 0;
  if (!split_inputs(g, s, mul, &xi, reason))
    return FALSE;
  if (weir_node_attr_int(conv, "group", 1) != 1)
    return weir_tier2_reject(reason, "Conv '%s' is grouped", conv->label);
  const WeirContainer *wc = w.container, *pc = p.container;
  if (!weir_tier2_is_constant(wc))
    return weir_tier2_reject(reason,
                             "the weight '%s' of Conv '%s' is not a constant",
                             wc->name, conv->label);
  guint rank = pc->shape->len;
  g_autofree gint64 *ws = g_new0(gint64, wc->shape->len + 1);
  g_autofree gint64 *ps = g_new0(gint64, rank + 1);
  weir_tier2_concrete_shape(pc, ps);
  if (wc->shape->len != rank || wc->dtype != pc->dtype ||
      !weir_tier2_concrete_shape(wc, ws) || ws[1] != ps[1])
    return weir_tier2_reject(reason,
                             "the weight '%s' of Conv '%s' does not have one "
                             "column per input channel",
                             wc->name, conv->label);
  if (4 * elements(wc) > elements(pc))
    return weir_tier2_reject(reason,
                             "the weight '%s' of Conv '%s' is more than a "
                             "quarter of the scaled input '%s'",
                             wc->name, conv->label, pc->name);
  WeirTier2Use use;
  weir_tier2_use(g, pc->name, &use);
  if (!pc->transient)
    return weir_tier2_reject(reason,
                             "the output '%s' of Mul '%s' is a program "
                             "argument",
                             pc->name, mul->label);
  if (use.reads != 1 || use.writes != 1 || !weir_tier2_local(g, s, pc->name))
    return weir_tier2_reject(reason,
                             "the output '%s' of Mul '%s' is also used "
                             "elsewhere",
                             pc->name, mul->label);
  for (guint k = 0; k < 2; k++) {
    WeirTier2Port in;
    weir_tier2_port(g, s, mul, TRUE, k, &in);
    g_autofree char *why = NULL;
    if (!weir_tier2_single_value(g, s, in.container, &why))
      return weir_tier2_reject(reason, "input %s", why);
  }
  return TRUE;
}

/* Removes the memlet into connector conn of n and adds one from access
 * node `from` (a node of container c, full subset). */
static gboolean rewire(WeirGraph *g, WeirState *s, WeirNode *n,
                       const char *conn, guint from, const WeirContainer *c,
                       GError **error) {
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
  for (guint i = 0; i < in->len; i++) {
    WeirMemlet *m = g_ptr_array_index(in, i);
    if (g_strcmp0(m->dst_conn, conn) == 0)
      weir_state_remove_memlet(s, m->id);
  }
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *text = weir_subset_to_string(full);
  return weir_state_add_memlet(g, s, from, NULL, n->id, conn, c->name, text,
                               error) != NULL;
}

static gboolean csf_apply(WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *mul = weir_tier2_site_node(s, site->nodes[0]);
  WeirNode *conv = weir_tier2_site_node(s, site->nodes[1]);
  guint xi = 0;
  split_inputs(g, s, mul, &xi, NULL);
  WeirTier2Port x, p, w;
  weir_tier2_port(g, s, mul, TRUE, xi, &x);
  weir_tier2_port(g, s, mul, FALSE, 0, &p);
  weir_tier2_port(g, s, conv, TRUE, 1, &w);
  WeirContainer *wc = w.container;
  const WeirContainer *xc = x.container;
  guint xa = x.access->id, wa = w.access->id;
  g_autofree char *pname = g_strdup(p.container->name);

  /* W_scaled: W's shape and dtype, a transient */
  g_autofree char *base = g_strdup_printf("%s_scaled", wc->name);
  g_autofree char *name = weir_graph_fresh_name(g, base);
  WeirContainer *sc = weir_graph_add_container(
      g, name, wc->dtype, wc->shape->len, (WeirExpr *const *)wc->shape->pdata,
      TRUE, error);
  if (!sc)
    return FALSE;
  g_autofree char *xconn = g_strdup_printf("in%u", xi);

  /* the Mul reads W where it read X and writes W_scaled */
  weir_state_remove_memlet(s, p.memlet->id);
  weir_state_remove_memlet(s, x.memlet->id);
  if (!rewire(g, s, mul, xconn, wa, wc, error))
    return FALSE;
  WeirNode *sa = weir_state_add_access(g, s, sc->name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(sc);
  g_autofree char *text = weir_subset_to_string(full);
  if (!weir_state_add_memlet(g, s, mul->id, "out0", sa->id, NULL, sc->name,
                             text, error))
    return FALSE;
  /* the Conv reads X and W_scaled */
  if (!rewire(g, s, conv, "in0", xa, xc, error) ||
      !rewire(g, s, conv, "in1", sa->id, sc, error))
    return FALSE;
  weir_tier2_drop_if_unused(g, pname);
  return TRUE;
}

static const WeirTransformInfo channel_scale_folding = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "channel-scale-folding",
    .tier = 2,
    .description = "move a per-channel scale of a Conv's input "
                   "(squeeze-and-excitation) onto its weights, when they are "
                   "smaller than the scaled input",
    .match = csf_match,
    .can_apply = csf_can_apply,
    .apply = csf_apply,
};

gboolean weir_tier2_register_channel_scale_folding(GError **error) {
  return weir_transform_register(&channel_scale_folding, error);
}
