/* cse.c — common-subexpression elimination.
 *
 * Site: two nodes of one state [first, second], first < second by id,
 * either
 *  - two library nodes with the same op, equal attributes, the same
 *    connectors, and each input connector reading the same container: the
 *    second computes what the first already computed.  Its readers are
 *    moved to the first's outputs and it is removed, with its outputs;
 *  - two tasklets in the same map scope with the same body (compared in
 *    canonical form) and the same connectors, whose incoming memlets come
 *    from the same node and connector with the same container, subset and
 *    volume: the memlets leaving the second are moved to the first's
 *    connectors, and the second is removed.  The first then writes where
 *    both wrote; the data moved is unchanged, the computation is halved.
 * For each duplicate only the earliest equal node is proposed as `first`.
 *
 * Legality (library nodes): the op is deterministic; each input holds one
 * value in the state (written at most once, in this state, through one
 * access node), so both nodes read the same data; the outputs of both are
 * written only by them, the second's are transients used only in this
 * state whose readers can be moved (not map scopes).
 */
#include <string.h>

#include "tier2-util.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_cse(GError **error);

static gboolean same_names(const GPtrArray *a, const GPtrArray *b) {
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++)
    if (strcmp(g_ptr_array_index(a, i), g_ptr_array_index(b, i)) != 0)
      return FALSE;
  return TRUE;
}

/* ----------------------------------------------------- library nodes */

/* Same op, attributes, connectors and input containers. */
static gboolean library_equal(const WeirGraph *g, const WeirState *s,
                              const WeirNode *a, const WeirNode *b) {
  if (g_strcmp0(a->op, b->op) != 0 || !same_names(a->in_conns, b->in_conns) ||
      !same_names(a->out_conns, b->out_conns) || !weir_tier2_attrs_equal(a, b))
    return FALSE;
  if (!weir_tier2_wired(g, s, a) || !weir_tier2_wired(g, s, b))
    return FALSE;
  for (guint i = 0; i < a->in_conns->len; i++) {
    WeirTier2Port pa, pb;
    weir_tier2_nth_port(g, s, a, TRUE, i, &pa);
    weir_tier2_nth_port(g, s, b, TRUE, i, &pb);
    if (pa.container != pb.container)
      return FALSE;
  }
  return TRUE;
}

/* ---------------------------------------------------------- tasklets */

static gint cmp_memlet(gconstpointer pa, gconstpointer pb) {
  const WeirMemlet *a = *(WeirMemlet *const *)pa;
  const WeirMemlet *b = *(WeirMemlet *const *)pb;
  int c = g_strcmp0(a->dst_conn, b->dst_conn);
  if (c)
    return c;
  if (a->src != b->src)
    return a->src < b->src ? -1 : 1;
  c = g_strcmp0(a->src_conn, b->src_conn);
  return c ? c : (a->id < b->id ? -1 : a->id > b->id);
}

static gboolean memlet_reads_same(const WeirMemlet *a, const WeirMemlet *b) {
  if (a->src != b->src || g_strcmp0(a->src_conn, b->src_conn) ||
      g_strcmp0(a->dst_conn, b->dst_conn) || g_strcmp0(a->data, b->data) ||
      a->dynamic != b->dynamic || a->wcr != b->wcr)
    return FALSE;
  if (!a->data)
    return TRUE;
  if (!weir_subset_equal(a->subset, b->subset) ||
      !weir_expr_equal(a->volume, b->volume))
    return FALSE;
  if (!a->other != !b->other)
    return FALSE;
  return !a->other || weir_subset_equal(a->other, b->other);
}

static gboolean tasklet_equal(const WeirState *s, const WeirScopes *sc,
                              const WeirNode *a, const WeirNode *b) {
  if (!a->code || !b->code || !same_names(a->in_conns, b->in_conns) ||
      !same_names(a->out_conns, b->out_conns) ||
      weir_scopes_parent(sc, a->id) != weir_scopes_parent(sc, b->id))
    return FALSE;
  g_autofree char *ca = weir_code_to_string(a->code);
  g_autofree char *cb = weir_code_to_string(b->code);
  if (strcmp(ca, cb) != 0)
    return FALSE;
  g_autoptr(GPtrArray) ia = weir_state_in_edges(s, a->id);
  g_autoptr(GPtrArray) ib = weir_state_in_edges(s, b->id);
  if (ia->len != ib->len)
    return FALSE;
  g_ptr_array_sort(ia, cmp_memlet);
  g_ptr_array_sort(ib, cmp_memlet);
  for (guint i = 0; i < ia->len; i++)
    if (!memlet_reads_same(g_ptr_array_index(ia, i), g_ptr_array_index(ib, i)))
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------- match */

/* A key that equal nodes share (equal nodes have equal keys; nodes with
 * equal keys are then compared in full): library nodes by op, connectors
 * and input containers, tasklets by body, connectors, scope and the
 * sources of their inputs.  NULL for nodes that cannot be equal to any
 * (library nodes not wired by the conventions, tasklets without code).
 * (transfer full) */
static char *node_key(const WeirGraph *g, const WeirState *s,
                      const WeirScopes *sc, const WeirNode *n) {
  GString *k = g_string_new(NULL);
  for (guint i = 0; i < n->in_conns->len; i++)
    g_string_append_printf(k, "%s,", (char *)g_ptr_array_index(n->in_conns, i));
  g_string_append_c(k, '|');
  for (guint i = 0; i < n->out_conns->len; i++)
    g_string_append_printf(k, "%s,",
                           (char *)g_ptr_array_index(n->out_conns, i));
  g_string_append_c(k, '|');
  if (n->kind == WEIR_NODE_LIBRARY) {
    if (!weir_tier2_wired(g, s, n)) {
      g_string_free(k, TRUE);
      return NULL;
    }
    g_string_append_printf(k, "L%s|", n->op ? n->op : "");
    for (guint i = 0; i < n->in_conns->len; i++) {
      WeirTier2Port p;
      weir_tier2_nth_port(g, s, n, TRUE, i, &p);
      g_string_append_printf(k, "%s,", p.container->name);
    }
    return g_string_free(k, FALSE);
  }
  if (!n->code || !sc) {
    g_string_free(k, TRUE);
    return NULL;
  }
  g_autofree char *code = weir_code_to_string(n->code);
  g_string_append_printf(k, "T%u|%s|", weir_scopes_parent(sc, n->id), code);
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
  g_ptr_array_sort(in, cmp_memlet);
  for (guint i = 0; i < in->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(in, i);
    g_string_append_printf(k, "%s<%u.%s,", m->dst_conn ? m->dst_conn : "",
                           m->src, m->src_conn ? m->src_conn : "");
  }
  return g_string_free(k, FALSE);
}

/* For each node, the earliest node before it (in the state's node order)
 * that computes the same thing.  Nodes are grouped by node_key, so each is
 * compared only with the earlier nodes of its group: linear in the state's
 * size when the groups are small (as they are: equal keys mean the same
 * operator on the same inputs). */
static void cse_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
    g_autoptr(WeirEdgeIndex) ix = weir_edge_index_begin(s);
    /* key -> GPtrArray of the earlier nodes with that key, in order */
    g_autoptr(GHashTable) groups = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_ptr_array_unref);
    for (guint j = 0; j < s->nodes->len; j++) {
      WeirNode *b = g_ptr_array_index(s->nodes, j);
      if (b->kind != WEIR_NODE_LIBRARY && b->kind != WEIR_NODE_TASKLET)
        continue;
      char *key = node_key(g, s, sc, b);
      if (!key)
        continue;
      GPtrArray *group = g_hash_table_lookup(groups, key);
      if (!group) {
        group = g_ptr_array_new();
        g_hash_table_insert(groups, key, group);
      } else {
        g_free(key);
      }
      for (guint i = 0; i < group->len; i++) {
        WeirNode *a = g_ptr_array_index(group, i);
        gboolean eq = a->kind == WEIR_NODE_LIBRARY
                          ? library_equal(g, s, a, b)
                          : sc && tasklet_equal(s, sc, a, b);
        if (eq) {
          WeirSite site = {
              .state = s->id, .n_nodes = 2, .nodes = {a->id, b->id}};
          g_array_append_val(sites, site);
          break; /* only the earliest equal node */
        }
      }
      g_ptr_array_add(group, b);
    }
  }
}

/* --------------------------------------------------------- can_apply */

static gboolean library_can_apply(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *a, const WeirNode *b,
                                  char **reason) {
  if (!weir_tier2_wired(g, s, a) || !weir_tier2_wired(g, s, b))
    return weir_tier2_reject(reason, "the nodes do not follow the library-node "
                                     "conventions");
  if (g_strcmp0(a->op, b->op) != 0)
    return weir_tier2_reject(reason, "the ops differ (%s, %s)", a->op, b->op);
  if (!same_names(a->in_conns, b->in_conns) ||
      !same_names(a->out_conns, b->out_conns))
    return weir_tier2_reject(reason, "the connectors differ");
  if (!weir_tier2_attrs_equal(a, b))
    return weir_tier2_reject(reason, "the attributes differ");
  if (!weir_tier2_is_deterministic(a))
    return weir_tier2_reject(reason, "%s is not deterministic", a->op);
  for (guint i = 0; i < a->in_conns->len; i++) {
    WeirTier2Port pa, pb;
    weir_tier2_nth_port(g, s, a, TRUE, i, &pa);
    weir_tier2_nth_port(g, s, b, TRUE, i, &pb);
    const char *conn = g_ptr_array_index(a->in_conns, i);
    if (pa.container != pb.container)
      return weir_tier2_reject(reason, "%s reads '%s' and '%s'", conn,
                               pa.container->name, pb.container->name);
    g_autofree char *why = NULL;
    if (!weir_tier2_single_value(g, s, pa.container, &why))
      return weir_tier2_reject(reason, "input %s", why);
  }
  for (guint i = 0; i < a->out_conns->len; i++) {
    WeirTier2Port pa, pb;
    weir_tier2_nth_port(g, s, a, FALSE, i, &pa);
    weir_tier2_nth_port(g, s, b, FALSE, i, &pb);
    const WeirContainer *ya = pa.container, *yb = pb.container;
    if (ya == yb)
      return weir_tier2_reject(reason, "both nodes write '%s'", ya->name);
    if (!yb->transient)
      return weir_tier2_reject(reason,
                               "output '%s' of the duplicate is a program "
                               "argument",
                               yb->name);
    if (!weir_tier2_same_layout(ya, yb))
      return weir_tier2_reject(reason,
                               "outputs '%s' and '%s' differ in dtype or "
                               "shape",
                               ya->name, yb->name);
    WeirTier2Use ua, ub;
    weir_tier2_use(g, ya->name, &ua);
    weir_tier2_use(g, yb->name, &ub);
    if (ua.writes != 1 || pa.memlet->wcr != WEIR_WCR_NONE)
      return weir_tier2_reject(reason, "output '%s' is also written elsewhere",
                               ya->name);
    if (ub.writes != 1 || pb.memlet->wcr != WEIR_WCR_NONE)
      return weir_tier2_reject(reason, "output '%s' is also written elsewhere",
                               yb->name);
    if (!weir_tier2_local(g, s, yb->name))
      return weir_tier2_reject(reason, "output '%s' is used in another state",
                               yb->name);
    if (!weir_tier2_can_redirect_reads(g, s, yb->name, reason))
      return FALSE;
  }
  return TRUE;
}

static gboolean tasklet_can_apply(const WeirState *s, const WeirNode *a,
                                  const WeirNode *b, char **reason) {
  if (!a->code || !b->code)
    return weir_tier2_reject(reason, "a tasklet body does not parse");
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, &err);
  if (!sc)
    return weir_tier2_reject(reason, "%s", err->message);
  if (weir_scopes_parent(sc, a->id) != weir_scopes_parent(sc, b->id))
    return weir_tier2_reject(reason, "the tasklets are in different scopes");
  g_autofree char *ca = weir_code_to_string(a->code);
  g_autofree char *cb = weir_code_to_string(b->code);
  if (strcmp(ca, cb) != 0)
    return weir_tier2_reject(reason, "the tasklet bodies differ");
  if (!same_names(a->in_conns, b->in_conns) ||
      !same_names(a->out_conns, b->out_conns))
    return weir_tier2_reject(reason, "the connectors differ");
  if (!tasklet_equal(s, sc, a, b))
    return weir_tier2_reject(reason, "the tasklets read different memlets");
  return TRUE;
}

static gboolean cse_can_apply(const WeirGraph *g, const WeirSite *site,
                              const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  if (!s || site->n_nodes != 2)
    return weir_tier2_reject(reason, "the site is not two nodes");
  WeirNode *a = weir_tier2_site_node(s, site->nodes[0]);
  WeirNode *b = weir_tier2_site_node(s, site->nodes[1]);
  if (!a || !b || a == b)
    return weir_tier2_reject(reason, "the site is not two nodes");
  if (a->kind != b->kind ||
      (a->kind != WEIR_NODE_LIBRARY && a->kind != WEIR_NODE_TASKLET))
    return weir_tier2_reject(reason, "the site is not two library nodes or two "
                                     "tasklets");
  if (a->id > b->id)
    return weir_tier2_reject(reason,
                             "the node kept (%u) must come before the "
                             "duplicate (%u)",
                             a->id, b->id);
  if (a->kind == WEIR_NODE_LIBRARY)
    return library_can_apply(g, s, a, b, reason);
  return tasklet_can_apply(s, a, b, reason);
}

/* ------------------------------------------------------------- apply */

static gboolean library_apply(WeirGraph *g, WeirState *s, WeirNode *a,
                              WeirNode *b, GError **error) {
  guint n_out = b->out_conns->len;
  g_autoptr(GPtrArray) dup = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < n_out; i++) {
    WeirTier2Port pa, pb;
    weir_tier2_nth_port(g, s, a, FALSE, i, &pa);
    weir_tier2_nth_port(g, s, b, FALSE, i, &pb);
    g_ptr_array_add(dup, g_strdup(pb.container->name));
    g_array_append_val(keep, pa.access->id);
  }
  weir_state_remove_node(s, b->id);
  for (guint i = 0; i < n_out; i++) {
    const char *name = g_ptr_array_index(dup, i);
    WeirNode *to = weir_state_node(s, g_array_index(keep, guint, i));
    if (!weir_tier2_redirect_reads(g, s, name, to, error))
      return FALSE;
    weir_tier2_drop_if_unused(g, name);
  }
  return TRUE;
}

static gboolean tasklet_apply(WeirGraph *g, WeirState *s, WeirNode *a,
                              WeirNode *b, GError **error) {
  guint a_id = a->id, b_id = b->id;
  g_autoptr(GPtrArray) outs = weir_state_out_edges(s, b_id);
  for (guint i = 0; i < outs->len; i++) {
    WeirMemlet *m = g_ptr_array_index(outs, i);
    g_autofree char *subset = m->data ? weir_subset_to_string(m->subset) : NULL;
    g_autofree char *other = m->other ? weir_subset_to_string(m->other) : NULL;
    WeirMemlet *nm = weir_state_add_memlet(g, s, a_id, m->src_conn, m->dst,
                                           m->dst_conn, m->data, subset, error);
    if (!nm)
      return FALSE;
    weir_memlet_set_volume(nm, m->volume);
    nm->dynamic = m->dynamic;
    nm->wcr = m->wcr;
    if (other && !weir_memlet_set_other(nm, other, error))
      return FALSE;
  }
  weir_state_remove_node(s, b_id);
  return TRUE;
}

static gboolean cse_apply(WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *a = weir_tier2_site_node(s, site->nodes[0]);
  WeirNode *b = weir_tier2_site_node(s, site->nodes[1]);
  if (a->kind == WEIR_NODE_LIBRARY)
    return library_apply(g, s, a, b, error);
  return tasklet_apply(g, s, a, b, error);
}

static const WeirTransformInfo cse = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "cse",
    .tier = 2,
    .description = "common-subexpression elimination: remove a library node "
                   "or tasklet that recomputes what an equal one computed",
    .match = cse_match,
    .can_apply = cse_can_apply,
    .apply = cse_apply,
};

gboolean weir_tier2_register_cse(GError **error) {
  return weir_transform_register(&cse, error);
}
