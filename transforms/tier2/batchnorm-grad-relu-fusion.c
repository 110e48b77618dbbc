/* batchnorm-grad-relu-fusion.c — folds the ReLU's backward mask into the
 * batch-norm backward that reads it (docs/training.md, "The batch norm's
 * backward").
 *
 * Site: [mask, grad]: a Pointwise node with the code of the ReLU's backward
 * rule, "y = b > 0 ? a : 0" (a the upstream gradient, b the ReLU's output,
 * which is > 0 exactly where its input, the batch norm's output, is;
 * ir/lower/grad.c), whose output is input 0 (dY) of a BatchNormGrad.
 *
 * BatchNormGrad's optional input R applies exactly that mask as it reads
 * dY (g = R > 0 ? dY : 0, in both of its passes), so the BatchNormGrad
 * reads a as dY and b as R, and the Pointwise and its output go: one pass
 * over the gradient and one tensor fewer.
 *
 * Legality: the Pointwise has two inputs of the BatchNormGrad's X shape and
 * dtype and no other attribute than code (and flops, differentiable,
 * serial, which do not change the values, and no dtype); its output is a
 * transient written only by it and read only by the BatchNormGrad, in this
 * state; the BatchNormGrad has no R yet.
 */
#include <string.h>

#include "tier2-util.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_batchnorm_grad_relu_fusion(GError **error);

static const char relu_mask[] = "y = b > 0 ? a : 0";

static void bgr_match(const WeirGraph *g, GArray *sites) {
  weir_tier2_match_fed_by(g, sites, "Pointwise", "BatchNormGrad");
}

static gboolean same_tensor_type(const WeirContainer *a,
                                 const WeirContainer *b) {
  if (a->dtype != b->dtype || a->shape->len != b->shape->len)
    return FALSE;
  for (guint d = 0; d < a->shape->len; d++)
    if (!weir_expr_equal(g_ptr_array_index(a->shape, d),
                         g_ptr_array_index(b->shape, d)))
      return FALSE;
  return TRUE;
}

static gboolean bgr_can_apply(const WeirGraph *g, const WeirSite *site,
                              const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *mask =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  WeirNode *grad =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[1]) : NULL;
  if (!weir_tier2_is_op(mask, "Pointwise") ||
      !weir_tier2_is_op(grad, "BatchNormGrad"))
    return weir_tier2_reject(reason,
                             "the site is not a Pointwise and a BatchNormGrad");
  if (!weir_tier2_wired(g, s, mask) || !weir_tier2_wired(g, s, grad))
    return weir_tier2_reject(reason, "the nodes do not follow the library-node "
                                     "conventions");
  const WeirAttr *code = weir_node_attr(mask, "code");
  if (!code || code->type != WEIR_ATTR_STRING ||
      strcmp(code->s, relu_mask) != 0)
    return weir_tier2_reject(reason,
                             "Pointwise '%s' is not the ReLU's backward "
                             "mask (\"%s\")",
                             mask->label, relu_mask);
  /* flops, differentiable and serial do not change the values; a dtype
   * other than the inputs' would (checked below against X's) */
  static const char *const plain[] = {"code", "flops", "differentiable",
                                      "serial", "dtype"};
  for (guint i = 0; i < mask->attrs->len; i++) {
    const WeirAttr *at = g_ptr_array_index(mask->attrs, i);
    gboolean known = FALSE;
    for (guint j = 0; j < G_N_ELEMENTS(plain); j++)
      known = known || strcmp(at->name, plain[j]) == 0;
    if (!known)
      return weir_tier2_reject(reason, "Pointwise '%s' has attribute '%s'",
                               mask->label, at->name);
  }
  WeirTier2Port a, b, y, dy, x, r;
  if (mask->in_conns->len != 2 || !weir_tier2_port(g, s, mask, TRUE, 0, &a) ||
      !weir_tier2_port(g, s, mask, TRUE, 1, &b) ||
      !weir_tier2_port(g, s, mask, FALSE, 0, &y))
    return weir_tier2_reject(reason, "Pointwise '%s' does not have two inputs",
                             mask->label);
  if (!weir_tier2_port(g, s, grad, TRUE, 0, &dy) ||
      !weir_tier2_port(g, s, grad, TRUE, 1, &x))
    return weir_tier2_reject(reason, "BatchNormGrad '%s' lacks dY or X",
                             grad->label);
  if (weir_tier2_port(g, s, grad, TRUE, 5, &r))
    return weir_tier2_reject(reason, "BatchNormGrad '%s' already has a mask",
                             grad->label);
  if (dy.container != y.container)
    return weir_tier2_reject(reason,
                             "BatchNormGrad '%s' does not read the output of "
                             "Pointwise '%s' as dY",
                             grad->label, mask->label);
  if (!same_tensor_type(a.container, x.container) ||
      !same_tensor_type(b.container, x.container))
    return weir_tier2_reject(reason,
                             "the inputs of Pointwise '%s' do not have the "
                             "shape and dtype of '%s'",
                             mask->label, x.container->name);
  if (!same_tensor_type(y.container, x.container))
    return weir_tier2_reject(reason,
                             "the output '%s' of Pointwise '%s' does not have "
                             "the dtype of '%s'",
                             y.container->name, mask->label, x.container->name);
  const WeirContainer *yc = y.container;
  WeirTier2Use use;
  weir_tier2_use(g, yc->name, &use);
  if (!yc->transient)
    return weir_tier2_reject(reason,
                             "the output '%s' of Pointwise '%s' is a program "
                             "argument",
                             yc->name, mask->label);
  if (use.reads != 1 || use.writes != 1 || !weir_tier2_local(g, s, yc->name))
    return weir_tier2_reject(reason,
                             "the output '%s' of Pointwise '%s' is also used "
                             "elsewhere",
                             yc->name, mask->label);
  return TRUE;
}

static gboolean bgr_apply(WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *mask = weir_tier2_site_node(s, site->nodes[0]);
  WeirNode *grad = weir_tier2_site_node(s, site->nodes[1]);
  WeirTier2Port a, b, y, dy;
  weir_tier2_port(g, s, mask, TRUE, 0, &a);
  weir_tier2_port(g, s, mask, TRUE, 1, &b);
  weir_tier2_port(g, s, mask, FALSE, 0, &y);
  weir_tier2_port(g, s, grad, TRUE, 0, &dy);
  g_autofree char *yname = g_strdup(y.container->name);
  g_autofree char *aname = g_strdup(a.container->name);
  g_autofree char *bname = g_strdup(b.container->name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(a.container);
  g_autofree char *text = weir_subset_to_string(full);
  guint aa = a.access->id, ba = b.access->id, ya = y.access->id;
  guint gid = grad->id;
  weir_state_remove_memlet(s, dy.memlet->id);
  weir_state_remove_node(s, mask->id);
  weir_state_remove_node(s, ya);
  weir_node_add_in_conn(grad, "in5");
  if (!weir_state_add_memlet(g, s, aa, NULL, gid, "in0", aname, text, error) ||
      !weir_state_add_memlet(g, s, ba, NULL, gid, "in5", bname, text, error))
    return FALSE;
  weir_tier2_drop_if_unused(g, yname);
  return TRUE;
}

static const WeirTransformInfo batchnorm_grad_relu_fusion = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "batchnorm-grad-relu-fusion",
    .tier = 2,
    .description = "apply the ReLU's backward mask inside the batch-norm "
                   "backward that reads it (BatchNormGrad's input R)",
    .match = bgr_match,
    .can_apply = bgr_can_apply,
    .apply = bgr_apply,
};

gboolean weir_tier2_register_batchnorm_grad_relu_fusion(GError **error) {
  return weir_transform_register(&batchnorm_grad_relu_fusion, error);
}
