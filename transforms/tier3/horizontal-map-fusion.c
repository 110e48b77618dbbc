/* horizontal-map-fusion.c — merging two independent maps that read the same
 * input.
 *
 * Site: [X's access node, A's map entry, B's map entry] with A's entry id
 * smaller than B's, both reading X.  When the maps iterate over the same
 * space (ranges equal after pairing the parameters, by the indices at which
 * they read X, then in order) and neither depends on the other, B's body
 * moves into A's scope (B's parameters renamed to A's): one loop that reads
 * X once.  The memlets from X merge into one; when both maps read the same
 * element of X in an iteration, X's traffic is counted once.
 *
 * Legality: the three nodes in one scope; equal ranges; no path from one
 * map to the other (in either direction); no container written by one map
 * and read or written by the other; no map nested in B with a parameter
 * named like one of A's, no tasklet in B with a connector or local named
 * like the parameter of A that a parameter it reads becomes.
 */
#include "tier3-util.h"

gboolean weir_tier3_register_horizontal_map_fusion(GError **error);

typedef struct {
  WeirState *s;
  WeirNode *x, *ea, *xa, *eb, *xb;
  GHashTable *pairs; /* B parameter -> A parameter */
  WeirScopes *scopes;
} Plan;

static void plan_clear(Plan *p) {
  g_clear_pointer(&p->pairs, g_hash_table_unref);
  g_clear_pointer(&p->scopes, weir_scopes_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plan, plan_clear)

/* The first memlet inside `entry` that carries what x's access node sends
 * into it, or NULL. */
static const WeirMemlet *inner_read(const WeirState *s, const WeirNode *x,
                                    const WeirNode *entry) {
  g_autoptr(GPtrArray) in = tier3_edges_in(s, entry->id, NULL);
  for (guint i = 0; i < in->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(in, i);
    if (m->src != x->id || !m->data || !m->dst_conn)
      continue;
    g_autofree char *out = tier3_pair_conn(m->dst_conn);
    g_autoptr(GPtrArray) inner = tier3_edges_out(s, entry->id, out);
    for (guint k = 0; k < inner->len; k++) {
      const WeirMemlet *r = g_ptr_array_index(inner, k);
      if (r->subset)
        return r;
    }
  }
  return NULL;
}

static gboolean depends(const WeirState *s, const WeirNode *from_exit,
                        const WeirNode *to_entry, guint *via) {
  g_autoptr(GHashTable) reach = tier3_reachable(s, from_exit->id, NULL);
  if (!g_hash_table_contains(reach, GUINT_TO_POINTER(to_entry->id)))
    return FALSE;
  *via = 0;
  g_autoptr(GPtrArray) out = tier3_edges_out(s, from_exit->id, NULL);
  for (guint i = 0; i < out->len && !*via; i++) {
    const WeirMemlet *m = g_ptr_array_index(out, i);
    g_autoptr(GHashTable) r = tier3_reachable(s, m->dst, NULL);
    if (m->dst == to_entry->id ||
        g_hash_table_contains(r, GUINT_TO_POINTER(to_entry->id)))
      *via = m->dst;
  }
  return TRUE;
}

static gboolean plan(const WeirGraph *g, const WeirSite *site, Plan *p,
                     char **reason) {
  WeirState *s = site->n_nodes == 3 ? weir_graph_state(g, site->state) : NULL;
  if (s) {
    p->s = s;
    p->x = weir_state_node(s, site->nodes[0]);
    p->ea = weir_state_node(s, site->nodes[1]);
    p->eb = weir_state_node(s, site->nodes[2]);
  }
  if (!s || !p->x || !p->ea || !p->eb || p->ea == p->eb ||
      p->x->kind != WEIR_NODE_ACCESS || p->ea->kind != WEIR_NODE_MAP_ENTRY ||
      p->eb->kind != WEIR_NODE_MAP_ENTRY)
    return tier3_reason(reason, "the site is not an access node and two map "
                                "entries of one state");
  p->xa = weir_state_map_exit(s, p->ea);
  p->xb = weir_state_map_exit(s, p->eb);
  if (!p->xa || !p->xb)
    return tier3_reason(reason, "a map of the site has no exit");
  const char *a = p->ea->label, *b = p->eb->label, *x = p->x->data;
  const WeirMemlet *ra = inner_read(s, p->x, p->ea);
  const WeirMemlet *rb = inner_read(s, p->x, p->eb);
  if (!ra || !rb)
    return tier3_reason(reason, "maps '%s' and '%s' do not both read '%s'", a,
                        b, x);
  g_autoptr(GError) error = NULL;
  p->scopes = weir_state_scopes(s, &error);
  if (!p->scopes)
    return tier3_reason(reason, "%s", error->message);
  if (weir_scopes_parent(p->scopes, p->ea->id) !=
      weir_scopes_parent(p->scopes, p->eb->id))
    return tier3_reason(reason, "maps '%s' and '%s' are in different scopes", a,
                        b);

  g_autofree char *why = NULL;
  p->pairs = tier3_pair_params(p->eb->map, p->ea->map, rb->subset, ra->subset,
                               FALSE, &why);
  if (!p->pairs)
    return tier3_reason(reason, "maps '%s' and '%s' have %s", b, a, why);

  guint via = 0;
  const WeirNode *from = NULL, *to = NULL;
  if (depends(s, p->xa, p->eb, &via)) {
    from = p->ea;
    to = p->eb;
  } else if (depends(s, p->xb, p->ea, &via)) {
    from = p->eb;
    to = p->ea;
  }
  if (from) {
    const WeirNode *v = weir_state_node(s, via);
    return tier3_reason(reason,
                        "map '%s' depends on map '%s' through node %u (%s "
                        "'%s')",
                        to->label, from->label, v ? v->id : 0,
                        v ? weir_node_kind_name(v->kind) : "?",
                        v ? v->label : "?");
  }
  g_autoptr(GPtrArray) rda = tier3_map_reads(s, p->ea);
  g_autoptr(GPtrArray) wra = tier3_map_writes(s, p->xa);
  g_autoptr(GPtrArray) rdb = tier3_map_reads(s, p->eb);
  g_autoptr(GPtrArray) wrb = tier3_map_writes(s, p->xb);
  for (guint i = 0; i < wra->len; i++) {
    const char *w = g_ptr_array_index(wra, i);
    if (tier3_names_contain(wrb, w))
      return tier3_reason(reason, "maps '%s' and '%s' both write '%s'", a, b,
                          w);
    if (tier3_names_contain(rdb, w))
      return tier3_reason(reason, "map '%s' writes '%s', which map '%s' reads",
                          a, w, b);
  }
  for (guint i = 0; i < wrb->len; i++) {
    const char *w = g_ptr_array_index(wrb, i);
    if (tier3_names_contain(rda, w))
      return tier3_reason(reason, "map '%s' writes '%s', which map '%s' reads",
                          b, w, a);
  }
  g_autofree char *shadow =
      tier3_check_nested_params(s, p->scopes, p->eb->id, p->ea->map->params);
  if (!shadow)
    shadow = tier3_check_rename_capture(s, p->scopes, p->eb->id, p->pairs);
  if (shadow)
    return tier3_reason(reason, "%s", shadow);
  return TRUE;
}

/* ---------------------------------------------------------------- match */

static void match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *x = g_ptr_array_index(s->nodes, k);
      if (x->kind != WEIR_NODE_ACCESS)
        continue;
      g_autoptr(GArray) maps = g_array_new(FALSE, FALSE, sizeof(guint));
      g_autoptr(GPtrArray) out = tier3_edges_out(s, x->id, NULL);
      for (guint j = 0; j < out->len; j++) {
        const WeirMemlet *m = g_ptr_array_index(out, j);
        const WeirNode *d = weir_state_node(s, m->dst);
        if (!m->data || d->kind != WEIR_NODE_MAP_ENTRY)
          continue;
        gboolean seen = FALSE;
        for (guint q = 0; q < maps->len; q++)
          seen = seen || g_array_index(maps, guint, q) == d->id;
        if (!seen)
          g_array_append_val(maps, d->id);
      }
      g_array_sort(maps, tier3_cmp_uint);
      for (guint a = 0; a < maps->len; a++)
        for (guint b = a + 1; b < maps->len; b++) {
          guint nodes[3] = {x->id, g_array_index(maps, guint, a),
                            g_array_index(maps, guint, b)};
          tier3_site_add(sites, s->id, 3, nodes);
        }
    }
  }
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  g_auto(Plan) p = {0};
  return plan(g, site, &p, reason);
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  g_auto(Plan) p = {0};
  g_autofree char *reason = NULL;
  if (!plan(g, site, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  g_autoptr(GHashTable) sub = tier3_param_substitution(p.pairs);
  return tier3_substitute_scope(g, p.s, p.scopes, p.eb->id, sub, error) &&
         tier3_merge_scope(g, p.s, p.eb, p.ea, error);
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "horizontal-map-fusion",
    .tier = 3,
    .description = "merge two independent maps over the same range that read "
                   "the same input into one loop reading it once",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier3_register_horizontal_map_fusion(GError **error) {
  return weir_transform_register(&info, error);
}
