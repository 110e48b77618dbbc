/* identity-elimination.c — removes operators that do not change their
 * data, and merges pairs of reshapes or transposes.
 *
 * Sites (nodes in dataflow order):
 *  - [node]: an Identity; a Dropout (inference: it passes its input
 *    through); a Reshape, Flatten, Squeeze or Unsqueeze whose output has
 *    the dtype and shape of its input; a Transpose whose permutation is the
 *    identity.  The node is removed and its output's readers read its input
 *    instead.
 *  - [first, second]: two reshapes (Reshape, Flatten, Squeeze, Unsqueeze)
 *    or two Transposes, the second reading the first's output.  When the
 *    pair as a whole is the identity (reshapes back to the input's shape,
 *    permutations composing to the identity) both are removed; otherwise
 *    they become one Reshape (to the final shape) or one Transpose (the
 *    composed permutation: out dim k is input dim p1[p2[k]]).
 *
 * A program argument is never removed: when the eliminated node writes a
 * graph output, a copy memlet from the input takes its place.
 *
 * Legality: the output of the eliminated node (pair: of the second) is
 * written only by it, used only in its state, and when it is a transient,
 * its readers can be moved (no map scope reads it); the input holds one
 * value in the state (written at most once, there).  For pairs, the
 * intermediate is a transient read only by the second node.
 */
#include <string.h>

#include "tier2-util.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_identity_elimination(GError **error);

static gboolean is_reshape_like(const WeirNode *n) {
  return weir_tier2_is_op(n, "Reshape") || weir_tier2_is_op(n, "Flatten") ||
         weir_tier2_is_op(n, "Squeeze") || weir_tier2_is_op(n, "Unsqueeze");
}

/* The data ports of a one-input, one-output node (in0 -> out0). */
static gboolean data_ports(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n, WeirTier2Port *x,
                           WeirTier2Port *y) {
  return weir_tier2_wired(g, s, n) && weir_tier2_port(g, s, n, TRUE, 0, x) &&
         weir_tier2_port(g, s, n, FALSE, 0, y);
}

/* Is a single node a candidate? */
static gboolean single_candidate(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  WeirTier2Port x, y;
  if (n->kind != WEIR_NODE_LIBRARY || !data_ports(g, s, n, &x, &y))
    return FALSE;
  if (weir_tier2_is_op(n, "Identity") || weir_tier2_is_op(n, "Dropout"))
    return TRUE;
  if (is_reshape_like(n))
    return weir_tier2_same_layout(x.container, y.container);
  if (weir_tier2_is_op(n, "Transpose")) {
    guint rank = x.container->shape->len;
    g_autofree gint64 *perm = g_new0(gint64, rank + 1);
    return weir_tier2_transpose_perm(n, rank, perm) &&
           weir_tier2_perm_is_identity(perm, rank);
  }
  return FALSE;
}

/* Is (a, b) a candidate pair: b reads a's output? */
static gboolean pair_candidate(const WeirGraph *g, const WeirState *s,
                               const WeirNode *a, const WeirNode *b) {
  gboolean kinds =
      (is_reshape_like(a) && is_reshape_like(b)) ||
      (weir_tier2_is_op(a, "Transpose") && weir_tier2_is_op(b, "Transpose"));
  WeirTier2Port ax, ay, bx, by;
  return kinds && data_ports(g, s, a, &ax, &ay) &&
         data_ports(g, s, b, &bx, &by) && ay.container == bx.container;
}

static void ie_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (single_candidate(g, s, n)) {
        WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
        g_array_append_val(sites, site);
      }
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      /* pairs starting at n, by the second node's id */
      WeirTier2Port x, y;
      if (!data_ports(g, s, n, &x, &y))
        continue;
      for (guint e = 0; e < s->edges->len; e++) {
        WeirMemlet *m = g_ptr_array_index(s->edges, e);
        if (m->src != y.access->id)
          continue;
        WeirNode *b = weir_state_node(s, m->dst);
        if (b && pair_candidate(g, s, n, b)) {
          WeirSite site = {
              .state = s->id, .n_nodes = 2, .nodes = {n->id, b->id}};
          g_array_append_val(sites, site);
        }
      }
    }
  }
}

/* -------------------------------------------------------------- singles */

static gboolean single_can_apply(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n, char **reason) {
  WeirTier2Port x, y;
  if (!data_ports(g, s, n, &x, &y))
    return weir_tier2_reject(reason,
                             "node '%s' (%s) does not follow the "
                             "library-node conventions",
                             n->label, n->op);
  if (weir_tier2_is_op(n, "Dropout")) {
    const WeirAttr *tm = weir_node_attr(n, "training_mode");
    if (tm && tm->type == WEIR_ATTR_INT && tm->i != 0)
      return weir_tier2_reject(reason, "Dropout '%s' is in training mode",
                               n->label);
    WeirTier2Port mask;
    if (weir_tier2_port(g, s, n, FALSE, 1, &mask)) {
      WeirTier2Use use;
      weir_tier2_use(g, mask.container->name, &use);
      if (!mask.container->transient || use.reads > 0)
        return weir_tier2_reject(reason,
                                 "the mask '%s' of Dropout '%s' is used",
                                 mask.container->name, n->label);
    }
  } else if (weir_tier2_is_op(n, "Transpose")) {
    guint rank = x.container->shape->len;
    g_autofree gint64 *perm = g_new0(gint64, rank + 1);
    if (!weir_tier2_transpose_perm(n, rank, perm))
      return weir_tier2_reject(
          reason, "Transpose '%s' has an invalid permutation", n->label);
    if (!weir_tier2_perm_is_identity(perm, rank))
      return weir_tier2_reject(reason,
                               "the permutation of Transpose '%s' is not the "
                               "identity",
                               n->label);
  } else if (is_reshape_like(n)) {
    if (!weir_tier2_same_layout(x.container, y.container))
      return weir_tier2_reject(
          reason, "%s '%s' changes the shape ('%s' to '%s')", n->op, n->label,
          x.container->name, y.container->name);
  } else if (!weir_tier2_is_op(n, "Identity")) {
    return weir_tier2_reject(
        reason, "node '%s' (%s) is not an identity operator", n->label, n->op);
  }
  return weir_tier2_can_bypass(g, s, n, &x, &y, reason);
}

/* ---------------------------------------------------------------- pairs */

/* What a pair becomes: removed (it is the identity) or one node, with its
 * attribute (a permutation or a shape). */
typedef struct {
  WeirTier2Chain c;
  gboolean identity;
  gboolean transpose;
  gint64 *values; /* perm or shape, rank entries (owned) */
  guint rank;     /* of z */
} Pair;

static void pair_clear(Pair *p) {
  g_clear_pointer(&p->values, g_free);
}

/* The shape attribute of a Reshape producing z from b's attributes: z's
 * concrete shape, else b's own "shape" when it has no 0 entries (which
 * would copy dimensions of b's input, not of x). */
static gboolean merged_shape(const WeirNode *b, const WeirContainer *z, Pair *p,
                             char **reason) {
  p->values = g_new0(gint64, z->shape->len + 1);
  if (weir_tier2_concrete_shape(z, p->values))
    return TRUE;
  const WeirAttr *a = weir_node_attr(b, "shape");
  const WeirAttr *az = weir_node_attr(b, "allowzero");
  gboolean zero_is_copy = !(az && az->type == WEIR_ATTR_INT && az->i != 0);
  if (weir_tier2_is_op(b, "Reshape") && a && a->type == WEIR_ATTR_INTS &&
      a->ints->len == z->shape->len) {
    gboolean ok = TRUE;
    for (guint d = 0; d < a->ints->len; d++) {
      p->values[d] = g_array_index(a->ints, gint64, d);
      if (p->values[d] == 0 && zero_is_copy)
        ok = FALSE;
    }
    if (ok)
      return TRUE;
  }
  return weir_tier2_reject(reason,
                           "the shape of '%s' is symbolic and cannot be "
                           "given to one Reshape",
                           z->name);
}

static gboolean pair_analyse(const WeirGraph *g, const WeirState *s,
                             const WeirNode *a, const WeirNode *b, Pair *p,
                             char **reason) {
  memset(p, 0, sizeof *p);
  if (!weir_tier2_chain(g, s, a, b, &p->c, reason))
    return FALSE;
  const WeirContainer *x = p->c.x.container, *z = p->c.z.container;
  p->rank = z->shape->len;
  if (weir_tier2_is_op(a, "Transpose") && weir_tier2_is_op(b, "Transpose")) {
    p->transpose = TRUE;
    p->values = g_new0(gint64, p->rank + 1);
    if (x->shape->len != p->rank ||
        !weir_tier2_compose_transposes(a, b, p->rank, p->values))
      return weir_tier2_reject(reason, "a permutation is invalid");
    p->identity = weir_tier2_perm_is_identity(p->values, p->rank);
    return TRUE;
  }
  if (is_reshape_like(a) && is_reshape_like(b)) {
    p->identity = weir_tier2_same_layout(x, z);
    return p->identity || merged_shape(b, z, p, reason);
  }
  return weir_tier2_reject(reason,
                           "'%s' (%s) and '%s' (%s) are not two reshapes or "
                           "two transposes",
                           a->label, a->op, b->label, b->op);
}

static gboolean pair_can_apply(const WeirGraph *g, const WeirState *s,
                               const WeirNode *a, const WeirNode *b,
                               char **reason) {
  Pair p;
  gboolean ok =
      pair_analyse(g, s, a, b, &p, reason) &&
      weir_tier2_chain_can_collapse(g, s, b, &p.c, p.identity, reason);
  pair_clear(&p);
  return ok;
}

static gboolean ie_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *a =
      site->n_nodes >= 1 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  WeirNode *b =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[1]) : NULL;
  if (!a || a->kind != WEIR_NODE_LIBRARY || site->n_nodes > 2 ||
      (site->n_nodes == 2 && (!b || b->kind != WEIR_NODE_LIBRARY)))
    return weir_tier2_reject(reason,
                             "the site is not one or two library nodes");
  if (!b)
    return single_can_apply(g, s, a, reason);
  return pair_can_apply(g, s, a, b, reason);
}

/* ---------------------------------------------------------------- apply */

static gboolean pair_apply(WeirGraph *g, WeirState *s, WeirNode *a, WeirNode *b,
                           GError **error) {
  Pair p;
  g_autofree char *why = NULL;
  if (!pair_analyse(g, s, a, b, &p, &why)) {
    pair_clear(&p);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", why);
    return FALSE;
  }
  g_autofree gint64 *values = g_steal_pointer(&p.values);
  if (p.identity)
    return weir_tier2_chain_remove(g, s, a, b, &p.c, error);
  WeirNode *n = weir_tier2_chain_replace(
      g, s, a, b, &p.c, p.transpose ? "Transpose" : "Reshape", error);
  if (!n)
    return FALSE;
  if (p.transpose) {
    weir_node_set_attr_ints(n, "perm", values, p.rank);
  } else {
    weir_node_set_attr_int(n, "allowzero", 0);
    weir_node_set_attr_ints(n, "shape", values, p.rank);
  }
  return TRUE;
}

static gboolean ie_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *a = weir_tier2_site_node(s, site->nodes[0]);
  if (site->n_nodes == 2)
    return pair_apply(g, s, a, weir_tier2_site_node(s, site->nodes[1]), error);
  WeirTier2Port x, y, mask;
  data_ports(g, s, a, &x, &y);
  g_autofree char *mask_name = NULL;
  if (weir_tier2_port(g, s, a, FALSE, 1, &mask))
    mask_name = g_strdup(mask.container->name);
  if (!weir_tier2_bypass(g, s, a, &x, &y, error))
    return FALSE;
  if (mask_name)
    weir_tier2_drop_if_unused(g, mask_name);
  return TRUE;
}

static const WeirTransformInfo identity_elimination = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "identity-elimination",
    .tier = 2,
    .description = "remove Identity, inference Dropout, no-op reshapes and "
                   "transposes; merge reshape and transpose pairs",
    .match = ie_match,
    .can_apply = ie_can_apply,
    .apply = ie_apply,
};

gboolean weir_tier2_register_identity_elimination(GError **error) {
  return weir_transform_register(&identity_elimination, error);
}
