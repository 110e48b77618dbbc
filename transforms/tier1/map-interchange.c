/* map-interchange.c — permute the parameters of a map, or of two
 * perfectly nested maps.
 *
 * Sites:
 *  - [map]: a map with at least two parameters;
 *  - [outer, inner]: a perfectly nested pair (see map-collapse.c).
 * Parameter `order` (ints): a permutation of the first k parameters, which
 * take the positions listed (new[i] = old[order[i]]); the other
 * parameters keep their place.  For a pair, the parameters are numbered
 * outer first, then inner; after the permutation the first ones (as many
 * as the outer map had) form the outer map and the rest the inner map, so
 * "1,0" on (i) / (j) swaps the two loops.  Each parameter moves with its
 * range and tile size; schedules, collapse depth and unroll factor stay
 * with the map nodes.
 *
 * Effect: only the loop order changes; for a pair, the memlets between the
 * two maps are recomputed for the new inner map (footprint and volume of
 * one outer iteration).  Total data movement does not change.
 *
 * Legality: a parameter's range may only use parameters that still
 * enclose it (for a pair: an inner range may use an outer parameter that
 * stays outside).  Reordering is legal when iterations whose order may
 * change are independent (weir_tier1_independent, WCR accumulations
 * allowed since they commute — up to floating-point rounding): for a
 * single map, over the parameters from the first position that changes;
 * for a pair, the outer map over its parameters from that position and the
 * inner map over all of its own (only the inner ones when the outer
 * parameters keep their places).
 */
#include <string.h>

#include "tier1-util.h"

gboolean weir_tier1_register_map_interchange(GError **error);

static const WeirParamSpec interchange_params[] = {
    {.name = "order",
     .type = WEIR_PARAM_INTS,
     .default_value = "1,0",
     .min = 0,
     .max = 63,
     .doc = "new order of the first parameters: position i takes parameter "
            "order[i] (outer map first for a nested pair)"},
};

static gboolean multi_param(const WeirGraph *g, const WeirState *s,
                            const WeirNode *entry) {
  (void)g;
  (void)s;
  return entry->map->params->len >= 2;
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

static void interchange_match(const WeirGraph *g, GArray *sites) {
  weir_tier1_match_maps(g, sites, multi_param);
  weir_tier1_match_nested_pairs(g, sites);
  g_array_sort(sites, cmp_sites);
}

/* One parameter with everything that moves with it. */
typedef struct {
  const char *param; /* borrowed from its map */
  const WeirRange *range;
  gint64 tile;
} Dim;

typedef struct {
  WeirTier1Map outer, inner; /* inner unused for a single map */
  gboolean pair;
  guint n1, n;    /* parameters of the outer map, of both */
  Dim *old, *new; /* n each */
  guint first;    /* first position that changes */
} Plan;

static void plan_clear(Plan *p) {
  weir_tier1_map_clear(&p->outer);
  weir_tier1_map_clear(&p->inner);
  g_clear_pointer(&p->old, g_free);
  g_clear_pointer(&p->new, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plan, plan_clear)

static void add_dims(Dim *dims, const WeirMap *map) {
  for (guint i = 0; i < map->params->len; i++) {
    dims[i].param = g_ptr_array_index(map->params, i);
    dims[i].range = &g_array_index(map->ranges, WeirRange, i);
    dims[i].tile = map->tile->len == map->params->len
                       ? g_array_index(map->tile, gint64, i)
                       : 0;
  }
}

static gboolean plan_init(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, Plan *p, char **reason) {
  memset(p, 0, sizeof *p);
  if (site->n_nodes < 1 || site->n_nodes > 2)
    return weir_tier1_reason(reason, "a site is one map or a nested pair");
  if (!weir_tier1_map_init(g, site->state, site->nodes[0], &p->outer, reason))
    return FALSE;
  p->pair = site->n_nodes == 2;
  const WeirMap *om = p->outer.entry->map;
  p->n1 = om->params->len;
  p->n = p->n1;
  if (p->pair) {
    if (!weir_tier1_map_init(g, site->state, site->nodes[1], &p->inner, reason))
      return FALSE;
    g_autofree char *why = NULL;
    WeirNode *in = weir_tier1_perfect_inner(&p->outer, &why);
    if (!in)
      return weir_tier1_reason(reason, "%s", why);
    if (in != p->inner.entry) {
      g_autofree char *a = weir_tier1_map_name(p->outer.entry);
      g_autofree char *b = weir_tier1_map_name(p->inner.entry);
      return weir_tier1_reason(reason, "%s is not directly inside %s", b, a);
    }
    p->n += p->inner.entry->map->params->len;
  }
  p->old = g_new0(Dim, p->n);
  p->new = g_new0(Dim, p->n);
  add_dims(p->old, om);
  if (p->pair)
    add_dims(p->old + p->n1, p->inner.entry->map);

  g_autofree char *name = weir_tier1_map_name(p->outer.entry);
  const GArray *order = weir_params_get_ints(params, "order");
  guint k = order ? order->len : 0;
  if (k > p->n)
    return weir_tier1_reason(reason,
                             "'order' lists %u positions but %s%s has %u "
                             "parameters",
                             k, name, p->pair ? " with its inner map" : "",
                             p->n);
  g_autofree gboolean *seen = g_new0(gboolean, p->n);
  for (guint i = 0; i < k; i++) {
    gint64 v = g_array_index(order, gint64, i);
    if (v < 0 || v >= (gint64)k || seen[v])
      return weir_tier1_reason(reason,
                               "'order' is not a permutation of 0..%u (value "
                               "%" G_GINT64_FORMAT " at position %u)",
                               k - 1, v, i);
    seen[v] = TRUE;
  }
  p->first = p->n;
  for (guint i = 0; i < p->n; i++) {
    guint from = i < k ? (guint)g_array_index(order, gint64, i) : i;
    p->new[i] = p->old[from];
    if (from != i && p->first == p->n)
      p->first = i;
  }
  if (p->first == p->n)
    return weir_tier1_reason(reason,
                             "the order leaves the parameters of %s as they "
                             "are",
                             name);
  return TRUE;
}

/* Where a parameter lands, or -1. */
static gint new_position(const Plan *p, const char *param) {
  for (guint i = 0; i < p->n; i++)
    if (strcmp(p->new[i].param, param) == 0)
      return (gint)i;
  return -1;
}

static gboolean ranges_still_valid(const Plan *p, char **reason) {
  for (guint i = 0; i < p->n; i++) {
    const WeirRange *r = p->new[i].range;
    for (guint k = 0; k < p->n; k++) {
      const char *q = p->old[k].param;
      if (!weir_tier1_expr_has(r->begin, q) &&
          !weir_tier1_expr_has(r->end, q) && !weir_tier1_expr_has(r->step, q))
        continue;
      gint at = new_position(p, q);
      gboolean encloses = p->pair && at >= 0 && (guint)at < p->n1 && i >= p->n1;
      if (!encloses) {
        g_autofree char *rt = weir_range_to_string(r);
        return weir_tier1_reason(reason,
                                 "the range '%s' of '%s' uses '%s', which "
                                 "would no longer enclose it",
                                 rt, p->new[i].param, q);
      }
    }
  }
  return TRUE;
}

static gboolean interchange_legal(const Plan *p, char **reason) {
  if (!ranges_still_valid(p, reason))
    return FALSE;
  if (!p->pair) {
    g_autofree gboolean *vary = g_new0(gboolean, p->n);
    for (guint i = p->first; i < p->n; i++)
      vary[i] = TRUE;
    return weir_tier1_independent(&p->outer, vary, TRUE, reason);
  }
  guint n2 = p->n - p->n1;
  g_autofree gboolean *vary2 = g_new0(gboolean, n2);
  for (guint i = 0; i < n2; i++)
    vary2[i] = p->first < p->n1 || i >= p->first - p->n1;
  if (p->first < p->n1) {
    g_autofree gboolean *vary1 = g_new0(gboolean, p->n1);
    for (guint i = p->first; i < p->n1; i++)
      vary1[i] = TRUE;
    if (!weir_tier1_independent(&p->outer, vary1, TRUE, reason))
      return FALSE;
  }
  return weir_tier1_independent(&p->inner, vary2, TRUE, reason);
}

static gboolean interchange_can_apply(const WeirGraph *g, const WeirSite *site,
                                      const WeirParams *params, char **reason) {
  g_auto(Plan) p;
  if (!plan_init(g, site, params, &p, reason))
    return FALSE;
  return interchange_legal(&p, reason);
}

/* Sets a map's dimensions from dims[0..n-1]. */
static void set_dims(WeirMap *map, const Dim *dims, guint n) {
  g_autofree const char **params = g_new0(const char *, n);
  g_autofree WeirRange *ranges = g_new0(WeirRange, n);
  g_autofree gint64 *tile = g_new0(gint64, n);
  gboolean tiled = FALSE;
  for (guint i = 0; i < n; i++) {
    params[i] = dims[i].param;
    ranges[i] = *dims[i].range;
    tile[i] = dims[i].tile;
    tiled = tiled || tile[i] != 0;
  }
  weir_map_set_dims(map, n, params, ranges, tiled ? tile : NULL);
}

static gboolean interchange_apply(WeirGraph *g, const WeirSite *site,
                                  const WeirParams *params, GError **error) {
  g_auto(Plan) p;
  g_autofree char *reason = NULL;
  if (!plan_init(g, site, params, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  /* The dims borrow the maps' names and ranges: copy the maps' contents
   * before changing them. */
  WeirMap *om = p.outer.entry->map;
  WeirMap *im = p.pair ? p.inner.entry->map : NULL;
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) ranges = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  g_array_set_clear_func(ranges, (GDestroyNotify)weir_range_clear);
  g_array_set_size(ranges, p.n);
  for (guint i = 0; i < p.n; i++) {
    g_ptr_array_add(names, g_strdup(p.new[i].param));
    weir_range_copy(p.new[i].range, &g_array_index(ranges, WeirRange, i));
  }
  for (guint i = 0; i < p.n; i++) {
    p.new[i].param = g_ptr_array_index(names, i);
    p.new[i].range = &g_array_index(ranges, WeirRange, i);
  }
  set_dims(om, p.new, p.n1);
  if (!p.pair)
    return TRUE;
  set_dims(im, p.new + p.n1, p.n - p.n1);
  om->collapse = MIN(om->collapse, p.n1);
  weir_tier1_refresh_middle(g, p.outer.state, p.outer.entry, p.inner.entry);
  return TRUE;
}

static const WeirTransformInfo map_interchange_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "map-interchange",
    .tier = 1,
    .description = "Permute the parameters (loop order) of a map or of two "
                   "perfectly nested maps",
    .params = interchange_params,
    .n_params = G_N_ELEMENTS(interchange_params),
    .match = interchange_match,
    .can_apply = interchange_can_apply,
    .apply = interchange_apply,
};

gboolean weir_tier1_register_map_interchange(GError **error) {
  return weir_transform_register(&map_interchange_info, error);
}
