/* map-collapse.c — merge two perfectly nested maps into one
 * multi-dimensional map, and set the OpenMP collapse depth.
 *
 * Sites:
 *  - [outer, inner]: a perfectly nested pair (the outer map holds only the
 *    inner map, and every memlet of the outer scope passes through it).
 *    The outer entry and exit stay, with the parameters of both maps
 *    (outer ones first) and the outer map's schedule; the inner entry and
 *    exit and the memlets between the two maps disappear (the inner
 *    memlets are attached to the outer map's connectors).  Tile sizes are
 *    concatenated, the unroll factor of the inner map (its innermost loop)
 *    is kept.  The iteration order is the same lexicographic order, so the
 *    merge alone never changes results.
 *  - [map]: a parallel map with several parameters whose collapse depth is
 *    below its number of parameters.
 * Parameter `collapse` (bool, default true): when the merged (or single)
 * map is parallel, set its collapse depth to its number of parameters, so
 * that OpenMP distributes the whole iteration space (`collapse(n)`), not
 * just the outermost loop.
 *
 * Legality: the inner ranges must not use the outer parameters (a
 * multi-dimensional map has a rectangular iteration space); an inner SIMD
 * map is not merged (its schedule would be lost) and neither is a parallel
 * inner map into a sequential outer one.  Setting the collapse depth needs
 * the iterations to be independent over every collapsed parameter
 * (weir_tier1_independent, WCR accumulations allowed as for parallelize):
 * for a pair, the outer map over its parameters and the inner map over
 * its own.  Data movement does not change (only inner memlets go).
 */
#include <string.h>

#include "tier1-util.h"

gboolean weir_tier1_register_map_collapse(GError **error);

static const WeirParamSpec collapse_params[] = {
    {.name = "collapse",
     .type = WEIR_PARAM_BOOL,
     .default_value = "true",
     .doc = "set the OpenMP collapse depth of a parallel result to its "
            "number of parameters"},
};

static gboolean collapsible(const WeirGraph *g, const WeirState *s,
                            const WeirNode *entry) {
  (void)g;
  (void)s;
  const WeirMap *map = entry->map;
  return map->schedule == WEIR_SCHEDULE_PARALLEL && map->params->len >= 2 &&
         map->collapse < map->params->len;
}

static int cmp_sites(gconstpointer a, gconstpointer b) {
  const WeirSite *x = a, *y = b;
  if (x->state != y->state)
    return x->state < y->state ? -1 : 1;
  for (guint i = 0; i < x->n_nodes && i < y->n_nodes; i++)
    if (x->nodes[i] != y->nodes[i])
      return x->nodes[i] < y->nodes[i] ? -1 : 1;
  return (gint)x->n_nodes - (gint)y->n_nodes;
}

static void collapse_match(const WeirGraph *g, GArray *sites) {
  weir_tier1_match_maps(g, sites, collapsible);
  weir_tier1_match_nested_pairs(g, sites);
  g_array_sort(sites, cmp_sites);
}

/* The pair of a two-node site, checked for perfect nesting. */
static gboolean site_pair(const WeirGraph *g, const WeirSite *site,
                          WeirTier1Map *outer, WeirTier1Map *inner,
                          char **reason) {
  if (!weir_tier1_map_init(g, site->state, site->nodes[0], outer, reason) ||
      !weir_tier1_map_init(g, site->state, site->nodes[1], inner, reason))
    return FALSE;
  g_autofree char *why = NULL;
  WeirNode *in = weir_tier1_perfect_inner(outer, &why);
  if (!in)
    return weir_tier1_reason(reason, "%s", why);
  if (in != inner->entry) {
    g_autofree char *a = weir_tier1_map_name(outer->entry);
    g_autofree char *b = weir_tier1_map_name(inner->entry);
    return weir_tier1_reason(reason, "%s is not directly inside %s", b, a);
  }
  return TRUE;
}

/* A range of the inner map that uses a parameter of the outer one. */
static gboolean inner_rectangular(const WeirMap *outer, const WeirMap *inner,
                                  char **reason) {
  for (guint i = 0; i < inner->ranges->len; i++) {
    const WeirRange *r = &g_array_index(inner->ranges, WeirRange, i);
    for (guint k = 0; k < outer->params->len; k++) {
      const char *q = g_ptr_array_index(outer->params, k);
      if (weir_tier1_expr_has(r->begin, q) || weir_tier1_expr_has(r->end, q) ||
          weir_tier1_expr_has(r->step, q)) {
        g_autofree char *rt = weir_range_to_string(r);
        return weir_tier1_reason(
            reason,
            "the range '%s' of inner parameter '%s' uses outer parameter "
            "'%s': the iteration space is not rectangular",
            rt, (const char *)g_ptr_array_index(inner->params, i), q);
      }
    }
  }
  return TRUE;
}

static gboolean collapse_can_apply(const WeirGraph *g, const WeirSite *site,
                                   const WeirParams *params, char **reason) {
  gboolean set = weir_params_get_bool(params, "collapse");
  if (site->n_nodes == 1) {
    g_auto(WeirTier1Map) m = {0};
    if (!weir_tier1_site_map(g, site, &m, reason))
      return FALSE;
    const WeirMap *map = m.entry->map;
    g_autofree char *name = weir_tier1_map_name(m.entry);
    if (map->schedule != WEIR_SCHEDULE_PARALLEL)
      return weir_tier1_reason(reason,
                               "%s is not parallel: the collapse depth only "
                               "applies to OpenMP loops",
                               name);
    if (map->params->len < 2 || map->collapse >= map->params->len)
      return weir_tier1_reason(reason,
                               "%s has nothing to collapse (%u parameters, "
                               "collapse depth %u)",
                               name, map->params->len, map->collapse);
    if (!set)
      return weir_tier1_reason(reason,
                               "with collapse=false there is nothing to do "
                               "on the single %s",
                               name);
    return weir_tier1_independent(&m, NULL, TRUE, reason);
  }
  if (site->n_nodes != 2)
    return weir_tier1_reason(reason, "a site is one map or a nested pair");
  g_auto(WeirTier1Map) outer = {0};
  g_auto(WeirTier1Map) inner = {0};
  if (!site_pair(g, site, &outer, &inner, reason))
    return FALSE;
  const WeirMap *om = outer.entry->map, *im = inner.entry->map;
  g_autofree char *iname = weir_tier1_map_name(inner.entry);
  g_autofree char *oname = weir_tier1_map_name(outer.entry);
  if (!inner_rectangular(om, im, reason))
    return FALSE;
  if (im->schedule == WEIR_SCHEDULE_SIMD)
    return weir_tier1_reason(reason,
                             "inner %s is SIMD: merging would lose its "
                             "schedule",
                             iname);
  if (om->schedule == WEIR_SCHEDULE_SIMD)
    return weir_tier1_reason(reason, "outer %s is SIMD", oname);
  if (om->schedule == WEIR_SCHEDULE_SEQUENTIAL &&
      im->schedule == WEIR_SCHEDULE_PARALLEL)
    return weir_tier1_reason(reason,
                             "inner %s is parallel but outer %s is "
                             "sequential: merging would lose the parallel "
                             "loop (parallelize the outer map first)",
                             iname, oname);
  if (set && om->schedule == WEIR_SCHEDULE_PARALLEL)
    return weir_tier1_independent(&outer, NULL, TRUE, reason) &&
           weir_tier1_independent(&inner, NULL, TRUE, reason);
  return TRUE;
}

/* The memlet entering `node` through connector conn. */
static WeirMemlet *edge_in(const WeirState *s, guint node, const char *conn) {
  g_autoptr(GPtrArray) e = weir_tier1_edges_in(s, node, conn, TRUE);
  return e->len ? g_ptr_array_index(e, 0) : NULL;
}

static WeirMemlet *edge_out(const WeirState *s, guint node, const char *conn) {
  g_autoptr(GPtrArray) e = weir_tier1_edges_out(s, node, conn, TRUE);
  return e->len ? g_ptr_array_index(e, 0) : NULL;
}

static char *partner(const char *conn, const char *from, const char *to) {
  return g_str_has_prefix(conn, from)
             ? g_strconcat(to, conn + strlen(from), NULL)
             : NULL;
}

static gboolean merge(WeirState *s, WeirNode *oe, WeirNode *ie,
                      GError **error) {
  WeirNode *ox = weir_state_map_exit(s, oe), *ix = weir_state_map_exit(s, ie);
  WeirMap *om = oe->map, *im = ie->map;
  guint n1 = om->params->len, n2 = im->params->len;

  /* Inner memlets leave the outer entry's matching connector. */
  g_autoptr(GPtrArray) outs = weir_tier1_edges_out(s, ie->id, NULL, TRUE);
  for (guint i = 0; i < outs->len; i++) {
    WeirMemlet *m = g_ptr_array_index(outs, i);
    const char *conn = NULL;
    g_autofree char *in_conn =
        m->src_conn ? partner(m->src_conn, "OUT_", "IN_") : NULL;
    WeirMemlet *mid = in_conn ? edge_in(s, ie->id, in_conn) : NULL;
    if (m->src_conn && (!mid || !mid->src_conn)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "connector '%s' of map '%s' (node %u) has no data coming "
                  "from the outer map",
                  m->src_conn, ie->label, ie->id);
      return FALSE;
    }
    if (mid)
      conn = mid->src_conn;
    weir_memlet_set_src(s, m, oe->id, conn);
  }
  g_autoptr(GPtrArray) ins = weir_tier1_edges_in(s, ix->id, NULL, TRUE);
  for (guint i = 0; i < ins->len; i++) {
    WeirMemlet *m = g_ptr_array_index(ins, i);
    const char *conn = NULL;
    g_autofree char *out_conn =
        m->dst_conn ? partner(m->dst_conn, "IN_", "OUT_") : NULL;
    WeirMemlet *mid = out_conn ? edge_out(s, ix->id, out_conn) : NULL;
    if (m->dst_conn && (!mid || !mid->dst_conn)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "connector '%s' of the exit of map '%s' (node %u) leads "
                  "nowhere",
                  m->dst_conn, ie->label, ie->id);
      return FALSE;
    }
    if (mid)
      conn = mid->dst_conn;
    weir_memlet_set_dst(s, m, ox->id, conn);
  }

  /* Parameters: outer then inner. */
  guint n = n1 + n2;
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) ranges = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  g_array_set_clear_func(ranges, (GDestroyNotify)weir_range_clear);
  g_autofree gint64 *tile = g_new0(gint64, n);
  gboolean tiled = om->tile->len > 0 || im->tile->len > 0;
  for (guint i = 0; i < n; i++) {
    const WeirMap *src = i < n1 ? om : im;
    guint k = i < n1 ? i : i - n1;
    WeirRange r;
    g_ptr_array_add(params, g_strdup(g_ptr_array_index(src->params, k)));
    weir_range_copy(&g_array_index(src->ranges, WeirRange, k), &r);
    g_array_append_val(ranges, r);
    if (src->tile->len == src->params->len)
      tile[i] = g_array_index(src->tile, gint64, k);
  }
  guint unroll = im->unroll ? im->unroll : om->unroll;
  weir_map_set_dims(om, n, (const char *const *)params->pdata,
                    (const WeirRange *)ranges->data, tiled ? tile : NULL);
  om->unroll = unroll;
  weir_state_remove_node(s, ie->id);
  weir_state_remove_node(s, ix->id);
  return TRUE;
}

static gboolean collapse_apply(WeirGraph *g, const WeirSite *site,
                               const WeirParams *params, GError **error) {
  g_auto(WeirTier1Map) outer = {0};
  g_auto(WeirTier1Map) inner = {0};
  g_autofree char *reason = NULL;
  gboolean ok = site->n_nodes == 1
                    ? weir_tier1_site_map(g, site, &outer, &reason)
                    : site_pair(g, site, &outer, &inner, &reason);
  if (!ok) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  if (site->n_nodes == 2 &&
      !merge(outer.state, outer.entry, inner.entry, error))
    return FALSE;
  WeirMap *map = outer.entry->map;
  if (weir_params_get_bool(params, "collapse") &&
      map->schedule == WEIR_SCHEDULE_PARALLEL)
    map->collapse = map->params->len;
  return TRUE;
}

static const WeirTransformInfo map_collapse_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "map-collapse",
    .tier = 1,
    .description = "Merge two perfectly nested maps into one "
                   "multi-dimensional map and set the OpenMP collapse depth",
    .params = collapse_params,
    .n_params = G_N_ELEMENTS(collapse_params),
    .match = collapse_match,
    .can_apply = collapse_can_apply,
    .apply = collapse_apply,
};

gboolean weir_tier1_register_map_collapse(GError **error) {
  return weir_transform_register(&map_collapse_info, error);
}
