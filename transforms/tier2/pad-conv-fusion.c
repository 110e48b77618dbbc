/* pad-conv-fusion.c — moves an explicit zero Pad into the convolution
 * that reads it.
 *
 * Site: [pad, conv]: a Pad whose output is the data input (in0) of a Conv.
 *
 * A Conv pads its input with zeros by its "pads" attribute ([x1_begin,
 * x2_begin, ..., x1_end, x2_end, ...] over the spatial dimensions), so a
 * constant-mode Pad with value 0 that only pads spatial dimensions (not
 * the batch or channel dimension) can be absorbed: its begin and end
 * amounts are added to the Conv's pads, the Conv reads the Pad's input, and
 * the Pad and its output are removed.  Strides and dilations are
 * unaffected: they apply to the padded input either way.
 *
 * Legality: Pad in "constant" mode with value 0 (either sign), pads and
 * value given as attributes (no tensor inputs left), no negative pads
 * (cropping), none on dimensions 0 and 1; its output is a transient read
 * only by the Conv and written only by the Pad, in this state; the Conv has
 * auto_pad NOTSET; the Pad's input holds one value in the state.
 */
#include "tier2-util.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_pad_conv_fusion(GError **error);

static void pcf_match(const WeirGraph *g, GArray *sites) {
  weir_tier2_match_fed_by(g, sites, "Pad", "Conv");
}

/* The Pad's begin/end amounts per dimension (2 * rank entries: begins,
 * then ends), from "pads" and the optional "axes".  FALSE with *reason when
 * they are malformed. */
static gboolean pad_amounts(const WeirNode *pad, guint rank, gint64 *out,
                            char **reason) {
  const WeirAttr *pads = weir_node_attr(pad, "pads");
  const WeirAttr *axes = weir_node_attr(pad, "axes");
  for (guint d = 0; d < 2 * rank; d++)
    out[d] = 0;
  if (!pads || pads->type != WEIR_ATTR_INTS)
    return weir_tier2_reject(reason, "Pad '%s' has no pads attribute",
                             pad->label);
  guint n = axes && axes->type == WEIR_ATTR_INTS ? axes->ints->len : rank;
  if (pads->ints->len != 2 * n)
    return weir_tier2_reject(reason, "Pad '%s' has %u pads for %u axes",
                             pad->label, pads->ints->len, n);
  for (guint i = 0; i < n; i++) {
    gint64 axis = i;
    if (axes && axes->type == WEIR_ATTR_INTS) {
      axis = g_array_index(axes->ints, gint64, i);
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= (gint64)rank)
        return weir_tier2_reject(reason, "Pad '%s' has an invalid axis",
                                 pad->label);
    }
    out[axis] += g_array_index(pads->ints, gint64, i);
    out[rank + axis] += g_array_index(pads->ints, gint64, n + i);
  }
  return TRUE;
}

static gboolean pcf_can_apply(const WeirGraph *g, const WeirSite *site,
                              const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *pad =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  WeirNode *conv =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[1]) : NULL;
  if (!weir_tier2_is_op(pad, "Pad") || !weir_tier2_is_op(conv, "Conv"))
    return weir_tier2_reject(reason, "the site is not a Pad and a Conv");
  if (!weir_tier2_wired(g, s, pad) || !weir_tier2_wired(g, s, conv))
    return weir_tier2_reject(reason, "the nodes do not follow the library-node "
                                     "conventions");
  WeirTier2Port x, p, cx;
  if (!weir_tier2_port(g, s, pad, TRUE, 0, &x) ||
      !weir_tier2_port(g, s, pad, FALSE, 0, &p) ||
      !weir_tier2_port(g, s, conv, TRUE, 0, &cx))
    return weir_tier2_reject(reason, "a data connector is missing");
  if (p.container != cx.container)
    return weir_tier2_reject(reason,
                             "Conv '%s' does not read the output of Pad '%s'",
                             conv->label, pad->label);
  if (pad->in_conns->len != 1)
    return weir_tier2_reject(reason,
                             "Pad '%s' takes its pads or value as a tensor "
                             "input",
                             pad->label);
  const WeirAttr *mode = weir_node_attr(pad, "mode");
  if (mode &&
      (mode->type != WEIR_ATTR_STRING || g_strcmp0(mode->s, "constant") != 0))
    return weir_tier2_reject(reason, "Pad '%s' has mode '%s'", pad->label,
                             mode->type == WEIR_ATTR_STRING ? mode->s : "?");
  const WeirAttr *value = weir_node_attr(pad, "value");
  if (value && value->type == WEIR_ATTR_FLOAT && value->f != 0.0)
    return weir_tier2_reject(reason, "Pad '%s' pads with %g, not 0", pad->label,
                             value->f);
  guint rank = x.container->shape->len;
  if (rank < 3 || p.container->shape->len != rank)
    return weir_tier2_reject(reason, "the input '%s' of Pad '%s' has rank %u",
                             x.container->name, pad->label, rank);
  g_autofree gint64 *amounts = g_new0(gint64, 2 * rank);
  if (!pad_amounts(pad, rank, amounts, reason))
    return FALSE;
  for (guint d = 0; d < 2 * rank; d++)
    if (amounts[d] < 0)
      return weir_tier2_reject(reason, "Pad '%s' crops dimension %u",
                               pad->label, d % rank);
  for (guint d = 0; d < 2; d++)
    if (amounts[d] || amounts[rank + d])
      return weir_tier2_reject(reason,
                               "Pad '%s' pads dimension %u, not only the "
                               "spatial dimensions",
                               pad->label, d);
  const WeirAttr *ap = weir_node_attr(conv, "auto_pad");
  if (ap && ap->type == WEIR_ATTR_STRING && g_strcmp0(ap->s, "NOTSET") != 0)
    return weir_tier2_reject(reason, "Conv '%s' uses auto_pad %s", conv->label,
                             ap->s);
  const WeirAttr *cp = weir_node_attr(conv, "pads");
  if (cp && (cp->type != WEIR_ATTR_INTS || cp->ints->len != 2 * (rank - 2)))
    return weir_tier2_reject(reason, "Conv '%s' has malformed pads",
                             conv->label);
  const WeirContainer *pc = p.container;
  WeirTier2Use use;
  weir_tier2_use(g, pc->name, &use);
  if (!pc->transient)
    return weir_tier2_reject(reason,
                             "the output '%s' of Pad '%s' is a program "
                             "argument",
                             pc->name, pad->label);
  if (use.reads != 1 || use.writes != 1 || !weir_tier2_local(g, s, pc->name))
    return weir_tier2_reject(reason,
                             "the output '%s' of Pad '%s' is also used "
                             "elsewhere",
                             pc->name, pad->label);
  g_autofree char *why = NULL;
  if (!weir_tier2_single_value(g, s, x.container, &why))
    return weir_tier2_reject(reason, "input %s", why);
  return TRUE;
}

static gboolean pcf_apply(WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *pad = weir_tier2_site_node(s, site->nodes[0]);
  WeirNode *conv = weir_tier2_site_node(s, site->nodes[1]);
  WeirTier2Port x, p;
  weir_tier2_port(g, s, pad, TRUE, 0, &x);
  weir_tier2_port(g, s, pad, FALSE, 0, &p);
  guint rank = x.container->shape->len, nsp = rank - 2;
  g_autofree gint64 *amounts = g_new0(gint64, 2 * rank);
  pad_amounts(pad, rank, amounts, NULL);
  g_autofree gint64 *pads = g_new0(gint64, 2 * nsp);
  const WeirAttr *cp = weir_node_attr(conv, "pads");
  for (guint i = 0; i < 2 * nsp; i++)
    pads[i] = cp ? g_array_index(cp->ints, gint64, i) : 0;
  for (guint i = 0; i < nsp; i++) {
    pads[i] += amounts[2 + i];
    pads[nsp + i] += amounts[rank + 2 + i];
  }
  weir_node_set_attr_ints(conv, "pads", pads, 2 * nsp);

  g_autofree char *pname = g_strdup(p.container->name);
  g_autofree char *xname = g_strdup(x.container->name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(x.container);
  g_autofree char *text = weir_subset_to_string(full);
  guint xa = x.access->id;
  weir_state_remove_node(s, pad->id);
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, conv->id);
  for (guint i = 0; i < in->len; i++) {
    WeirMemlet *m = g_ptr_array_index(in, i);
    if (g_strcmp0(m->dst_conn, "in0") == 0)
      weir_state_remove_memlet(s, m->id);
  }
  if (!weir_state_add_memlet(g, s, xa, NULL, conv->id, "in0", xname, text,
                             error))
    return FALSE;
  weir_tier2_drop_if_unused(g, pname);
  return TRUE;
}

static const WeirTransformInfo pad_conv_fusion = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "pad-conv-fusion",
    .tier = 2,
    .description = "absorb a zero Pad of the spatial dimensions into the "
                   "pads of the Conv that reads it",
    .match = pcf_match,
    .can_apply = pcf_can_apply,
    .apply = pcf_apply,
};

gboolean weir_tier2_register_pad_conv_fusion(GError **error) {
  return weir_transform_register(&pad_conv_fusion, error);
}
