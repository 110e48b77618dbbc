/* state-fusion.c — merging two consecutive states into one.
 *
 * Site: {state = the first state S1, no nodes}: S1's only transition leads
 * to S2.  Legal when that transition has no condition and no assignments,
 * S2 is another state, not the start state, and no other transition enters
 * it.  S2's nodes and memlets move into S1 (ids kept), S2's outgoing
 * transitions leave from S1 instead (ids, and so priorities, kept), and S2
 * and the transition disappear.
 *
 * Order across the old state boundary is kept through the containers both
 * states touch, when at least one of them writes the container:
 *  - when S2 only reads the container, through one top-level access node
 *    with nothing written into it, and S1 leaves its final value in one
 *    top-level access node (every other access node of the container in S1
 *    reaches it), S2's reads are taken from that node and S2's node goes
 *    (an access-node chain: readers see the value S1 wrote);
 *  - otherwise empty memlets order every node of S1 that touches the
 *    container (for a node inside a map, the outermost map's exit; a map
 *    entry stands for its exit) before every node of S2 that touches it
 *    (for a node inside a map, the outermost map's entry; a map exit stands
 *    for its entry).  A node touches a container when it is an access node
 *    of it, an end of a memlet naming it, a reader of such an access node in
 *    S1 or a writer of one in S2.  Nodes implied by others (a node of S1
 *    that reaches another such node, a node of S2 reached from another)
 *    get no memlet of their own.
 * Such edges only go from old S1 to old S2, so the merged state stays
 * acyclic; independent work of the two states may now run in any order.
 */
#include <string.h>

#include "tier3-util.h"

gboolean weir_tier3_register_state_fusion(GError **error);

typedef struct {
  WeirState *s1, *s2;
  WeirTransition *t;
} Plan;

static gboolean plan(const WeirGraph *g, const WeirSite *site, Plan *p,
                     char **reason) {
  p->s1 = site->n_nodes == 0 ? weir_graph_state(g, site->state) : NULL;
  if (!p->s1)
    return tier3_reason(reason, "the site is not a state");
  guint n_out = 0;
  for (guint i = 0; i < g->transitions->len; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src == p->s1->id) {
      p->t = t;
      n_out++;
    }
  }
  const char *l1 = p->s1->label;
  if (n_out != 1)
    return tier3_reason(reason,
                        "state %u '%s' has %u outgoing transitions (one is "
                        "needed)",
                        p->s1->id, l1, n_out);
  p->s2 = weir_graph_state(g, p->t->dst);
  if (!p->s2)
    return tier3_reason(reason, "transition %u leads to no state", p->t->id);
  const char *l2 = p->s2->label;
  if (p->s2 == p->s1)
    return tier3_reason(reason, "transition %u loops back to state %u '%s'",
                        p->t->id, p->s1->id, l1);
  if (p->t->condition_text)
    return tier3_reason(reason,
                        "transition %u to state %u '%s' has a condition "
                        "('%s')",
                        p->t->id, p->s2->id, l2, p->t->condition_text);
  if (p->t->assign_names->len > 0)
    return tier3_reason(reason,
                        "transition %u to state %u '%s' assigns symbols "
                        "(%s, ...)",
                        p->t->id, p->s2->id, l2,
                        (char *)g_ptr_array_index(p->t->assign_names, 0));
  if (p->s2->id == g->start)
    return tier3_reason(reason, "state %u '%s' is the start state", p->s2->id,
                        l2);
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t != p->t && t->dst == p->s2->id)
      return tier3_reason(reason,
                          "state %u '%s' is also entered by transition %u "
                          "(from state %u)",
                          p->s2->id, l2, t->id, t->src);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- match */

static void match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    guint n_out = 0, dst = 0;
    for (guint k = 0; k < g->transitions->len; k++) {
      const WeirTransition *t = g_ptr_array_index(g->transitions, k);
      if (t->src == s->id) {
        n_out++;
        dst = t->dst;
      }
    }
    if (n_out == 1 && dst != s->id)
      tier3_site_add(sites, s->id, 0, NULL);
  }
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  Plan p = {0};
  return plan(g, site, &p, reason);
}

/* ---------------------------------------------------------------- apply */

/* The outermost map entry around node id, or id itself at top level. */
static guint outermost(const WeirScopes *sc, guint id) {
  guint top = id;
  for (guint p = weir_scopes_parent(sc, id); p; p = weir_scopes_parent(sc, p))
    top = p;
  return top;
}

/* Where S1's touch of a container is complete: the node, or the exit of the
 * outermost map around it (a top-level map entry stands for its exit). */
static guint done_node(const WeirState *s, const WeirScopes *sc, guint id) {
  const WeirNode *n = weir_state_node(s, outermost(sc, id));
  if (n->kind == WEIR_NODE_MAP_ENTRY)
    return weir_state_map_exit(s, n)->id;
  return n->id;
}

/* Where S2's touch of a container starts: the node, or the entry of the
 * outermost map around it (a top-level map exit stands for its entry). */
static guint start_node(const WeirState *s, const WeirScopes *sc, guint id) {
  const WeirNode *n = weir_state_node(s, outermost(sc, id));
  if (n->kind == WEIR_NODE_MAP_EXIT)
    return n->entry;
  return n->id;
}

static void add_unique(GArray *a, guint v) {
  for (guint i = 0; i < a->len; i++)
    if (g_array_index(a, guint, i) == v)
      return;
  g_array_append_val(a, v);
}

/* How one state touches a container. */
typedef struct {
  GArray *access;  /* its access nodes */
  GArray *touch;   /* done (S1) or start (S2) nodes */
  gboolean writes; /* some access node of it is written */
} Touch;

static void touch_clear(Touch *t) {
  g_clear_pointer(&t->access, g_array_unref);
  g_clear_pointer(&t->touch, g_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Touch, touch_clear)

static void touch_compute(const WeirState *s, const WeirScopes *sc,
                          const char *data, gboolean first, Touch *t) {
  t->access = g_array_new(FALSE, FALSE, sizeof(guint));
  t->touch = g_array_new(FALSE, FALSE, sizeof(guint));
  guint (*at)(const WeirState *, const WeirScopes *, guint) =
      first ? done_node : start_node;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_ACCESS || strcmp(n->data, data) != 0)
      continue;
    g_array_append_val(t->access, n->id);
    add_unique(t->touch, at(s, sc, n->id));
    g_autoptr(GPtrArray) around = first ? tier3_edges_out(s, n->id, NULL)
                                        : tier3_edges_in(s, n->id, NULL);
    for (guint k = 0; k < around->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(around, k);
      add_unique(t->touch, at(s, sc, first ? m->dst : m->src));
    }
    g_autoptr(GPtrArray) in = tier3_edges_in(s, n->id, NULL);
    for (guint k = 0; k < in->len; k++)
      t->writes = t->writes ||
                  ((const WeirMemlet *)g_ptr_array_index(in, k))->data != NULL;
  }
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (g_strcmp0(m->data, data) != 0)
      continue;
    add_unique(t->touch, at(s, sc, m->src));
    add_unique(t->touch, at(s, sc, m->dst));
  }
}

/* S1's one top-level access node of data that every other access node of
 * data in S1 reaches, or 0. */
static guint final_node(const WeirState *s, const WeirScopes *sc,
                        const Touch *t) {
  guint sink = 0;
  for (guint i = 0; i < t->access->len; i++) {
    guint a = g_array_index(t->access, guint, i);
    g_autoptr(GHashTable) reach = tier3_reachable(s, a, NULL);
    gboolean last = TRUE;
    for (guint k = 0; k < t->access->len && last; k++) {
      guint b = g_array_index(t->access, guint, k);
      last = b == a || !g_hash_table_contains(reach, GUINT_TO_POINTER(b));
    }
    if (!last)
      continue;
    if (sink)
      return 0; /* two unordered last accesses */
    sink = a;
  }
  return sink && weir_scopes_parent(sc, sink) == 0 ? sink : 0;
}

/* Drops the nodes of set from which another node of set is reachable in s
 * (keep_last) or which another node of set reaches (!keep_last): ordering
 * against the remaining ones implies the rest. */
static GArray *prune(const WeirState *s, GArray *set, gboolean keep_last) {
  GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < set->len; i++) {
    guint a = g_array_index(set, guint, i);
    gboolean implied = FALSE;
    for (guint k = 0; k < set->len && !implied; k++) {
      guint b = g_array_index(set, guint, k);
      if (a == b)
        continue;
      g_autoptr(GHashTable) reach = tier3_reachable(s, keep_last ? a : b, NULL);
      implied =
          g_hash_table_contains(reach, GUINT_TO_POINTER(keep_last ? b : a));
    }
    if (!implied)
      g_array_append_val(out, a);
  }
  return out;
}

static gboolean has_empty_edge(const WeirState *s, guint src, guint dst) {
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == src && m->dst == dst && !m->data)
      return TRUE;
  }
  return FALSE;
}

/* Re-creates the memlets leaving node `from` as leaving node `to`. */
static gboolean move_reads(WeirGraph *g, WeirState *s, guint from, guint to,
                           GError **error) {
  g_autoptr(GPtrArray) out = tier3_edges_out(s, from, NULL);
  for (guint i = 0; i < out->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(out, i);
    g_autofree char *sub = m->subset ? weir_subset_to_string(m->subset) : NULL;
    WeirMemlet *c = weir_state_add_memlet(g, s, to, NULL, m->dst, m->dst_conn,
                                          m->data, sub, error);
    if (!c)
      return FALSE;
    if (m->other) {
      g_autofree char *other = weir_subset_to_string(m->other);
      if (!weir_memlet_set_other(c, other, error))
        return FALSE;
    }
    weir_memlet_set_volume(c, m->volume);
    c->dynamic = m->dynamic;
    c->wcr = m->wcr;
  }
  weir_state_remove_node(s, from);
  return TRUE;
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  Plan p = {0};
  g_autofree char *reason = NULL;
  if (!plan(g, site, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s1 = p.s1, *s2 = p.s2;
  g_autoptr(WeirScopes) sc1 = weir_state_scopes(s1, error);
  g_autoptr(WeirScopes) sc2 = sc1 ? weir_state_scopes(s2, error) : NULL;
  if (!sc2)
    return FALSE;

  /* Decide the order of every shared container before moving anything. */
  typedef struct {
    guint merge_from, merge_into; /* access-node chain, or 0 */
    GArray *wait, *delay;         /* empty memlets wait -> delay */
  } Order;
  g_autoptr(GArray) orders = g_array_new(FALSE, TRUE, sizeof(Order));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    g_auto(Touch) t1 = {0};
    g_auto(Touch) t2 = {0};
    touch_compute(s1, sc1, c->name, TRUE, &t1);
    touch_compute(s2, sc2, c->name, FALSE, &t2);
    if (t1.touch->len == 0 || t2.touch->len == 0 || !(t1.writes || t2.writes))
      continue;
    Order o = {0};
    guint a2 = t2.access->len == 1 ? g_array_index(t2.access, guint, 0) : 0;
    g_autoptr(GPtrArray) a2_in = a2 ? tier3_edges_in(s2, a2, NULL) : NULL;
    guint sink = final_node(s1, sc1, &t1);
    if (!t2.writes && a2 && a2_in->len == 0 &&
        weir_scopes_parent(sc2, a2) == 0 && sink) {
      o.merge_from = a2;
      o.merge_into = sink;
    } else {
      o.wait = prune(s1, t1.touch, TRUE);
      o.delay = prune(s2, t2.touch, FALSE);
    }
    g_array_append_val(orders, o);
  }

  weir_state_move_elements(s1, s2);
  gboolean ok = TRUE;
  for (guint i = 0; i < orders->len; i++) {
    Order *o = &g_array_index(orders, Order, i);
    if (ok && o->merge_from)
      ok = move_reads(g, s1, o->merge_from, o->merge_into, error);
    for (guint w = 0; ok && o->wait && w < o->wait->len; w++)
      for (guint d = 0; ok && d < o->delay->len; d++) {
        guint src = g_array_index(o->wait, guint, w);
        guint dst = g_array_index(o->delay, guint, d);
        if (!has_empty_edge(s1, src, dst))
          ok = weir_state_add_memlet(g, s1, src, NULL, dst, NULL, NULL, NULL,
                                     error) != NULL;
      }
    g_clear_pointer(&o->wait, g_array_unref);
    g_clear_pointer(&o->delay, g_array_unref);
  }
  if (!ok)
    return FALSE;

  /* S2's transitions now leave S1. */
  guint t_id = p.t->id, s2_id = s2->id;
  weir_graph_remove_transition(g, t_id);
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src == s2_id)
      weir_graph_retarget_transition(g, t->id, s1->id, t->dst);
  }
  if (!weir_graph_remove_state(g, s2_id)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "state %u could not be removed", s2_id);
    return FALSE;
  }
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "state-fusion",
    .tier = 3,
    .description = "merge a state into the one before it when an "
                   "unconditional transition without assignments joins them",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier3_register_state_fusion(GError **error) {
  return weir_transform_register(&info, error);
}
