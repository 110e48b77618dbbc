/* map-tiling.c — tile a map: an outer map over tiles and the original map
 * over the points of one tile.
 *
 * Site: one map entry.  Parameter `tile`: one size per map parameter, or a
 * single size for all of them; 0 leaves a parameter untiled, and so does a
 * size that covers the parameter's whole (constant) range.
 *
 * The rewrite is explicit (the map's `tile` attribute is not used): for each
 * tiled parameter p in b:e:s with tile size T a new parameter tp in
 * b:e:T*s goes to a new outer map, and p's range becomes
 * tp:min(tp + T*s, e):s (tp:tp + T*s:s when the tiles divide the range
 * exactly).  The memlets between the two maps carry the footprint of one
 * tile — exact for monotone indices, see tier1-util.h — and the volume of
 * all accesses in a tile, so the data moved per tile is visible; the outer
 * memlets are unchanged, so the total data movement is unchanged.
 *
 * Schedules: a parallel map gives a parallel tile map and a sequential
 * inner map; a SIMD map keeps SIMD inside and gets a sequential tile map; a
 * sequential map stays sequential.  The OpenMP collapse depth moves to the
 * tile map (at most its number of parameters); unroll stays inside.
 *
 * Tiling only reorders iterations within the order a map already allows
 * (a map's iterations are unordered; sequential maps keep lexicographic
 * order inside each tile and tiles in order), so it is legal for every map
 * whose tiled ranges have constant steps.
 */
#include <string.h>

#include "tier1-util.h"

gboolean weir_tier1_register_map_tiling(GError **error);

static const WeirParamSpec tiling_params[] = {
    {.name = "tile",
     .type = WEIR_PARAM_INTS,
     .default_value = "32",
     .min = 0,
     .max = G_MAXINT32,
     .doc = "tile size per map parameter (a single value applies to all; 0 "
            "leaves a parameter untiled)"},
};

/* A map with at least one parameter of more than one point. */
static gboolean tileable(const WeirGraph *g, const WeirState *s,
                         const WeirNode *entry) {
  (void)g;
  (void)s;
  for (guint i = 0; i < entry->map->params->len; i++) {
    gint64 size;
    if (!weir_tier1_range_const_size(entry->map, i, &size) || size > 1)
      return TRUE;
  }
  return FALSE;
}

static void tiling_match(const WeirGraph *g, GArray *sites) {
  weir_tier1_match_maps(g, sites, tileable);
}

/* The tile size of each parameter that is really tiled (0 otherwise). */
static gboolean tile_sizes(const WeirTier1Map *m, const WeirParams *params,
                           gint64 *sizes, char **reason) {
  const WeirMap *map = m->entry->map;
  const GArray *tile = weir_params_get_ints(params, "tile");
  guint n = map->params->len;
  g_autofree char *name = weir_tier1_map_name(m->entry);
  if (!tile || (tile->len != 1 && tile->len != n))
    return weir_tier1_reason(reason,
                             "'tile' has %u values but %s has %u parameters "
                             "(give one value or one per parameter)",
                             tile ? tile->len : 0, name, n);
  guint tiled = 0;
  for (guint i = 0; i < n; i++) {
    gint64 t = g_array_index(tile, gint64, tile->len == 1 ? 0 : i);
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, i);
    const char *p = g_ptr_array_index(map->params, i);
    gint64 size, step;
    sizes[i] = 0;
    if (t <= 0)
      continue;
    if (weir_tier1_range_const_size(map, i, &size) && size <= t)
      continue;
    if (!weir_expr_is_const(r->step, &step) || step <= 0) {
      g_autofree char *rt = weir_range_to_string(r);
      return weir_tier1_reason(reason,
                               "the range '%s' of '%s' in %s has no constant "
                               "positive step",
                               rt, p, name);
    }
    sizes[i] = t;
    tiled++;
  }
  if (tiled == 0)
    return weir_tier1_reason(reason,
                             "nothing to tile in %s: every tile size is 0 or "
                             "covers the whole range of its parameter",
                             name);
  return TRUE;
}

static gboolean tiling_can_apply(const WeirGraph *g, const WeirSite *site,
                                 const WeirParams *params, char **reason) {
  g_auto(WeirTier1Map) m = {0};
  if (!weir_tier1_site_map(g, site, &m, reason))
    return FALSE;
  g_autofree gint64 *sizes = g_new0(gint64, m.entry->map->params->len);
  return tile_sizes(&m, params, sizes, reason);
}

static gboolean tiling_apply(WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, GError **error) {
  g_auto(WeirTier1Map) m = {0};
  g_autofree char *reason = NULL;
  if (!weir_tier1_site_map(g, site, &m, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirMap *map = m.entry->map;
  guint n = map->params->len;
  g_autofree gint64 *sizes = g_new0(gint64, n);
  if (!tile_sizes(&m, params, sizes, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }

  g_autoptr(GPtrArray) outer_params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) outer_ranges = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  g_array_set_clear_func(outer_ranges, (GDestroyNotify)weir_range_clear);
  g_autoptr(GArray) inner_ranges = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  g_array_set_clear_func(inner_ranges, (GDestroyNotify)weir_range_clear);
  for (guint i = 0; i < n; i++) {
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, i);
    WeirRange inner;
    if (sizes[i] == 0) {
      weir_range_copy(r, &inner);
      g_array_append_val(inner_ranges, inner);
      continue;
    }
    const char *p = g_ptr_array_index(map->params, i);
    g_autofree char *base = g_strconcat("t", p, NULL);
    char *tp = weir_tier1_fresh_param(g, m.state, base, outer_params);
    g_ptr_array_add(outer_params, tp);
    g_autoptr(WeirExpr) stride = weir_expr_mul_const(r->step, sizes[i]);
    WeirRange outer = {weir_expr_ref(r->begin), weir_expr_ref(r->end),
                       weir_expr_ref(stride)};
    g_array_append_val(outer_ranges, outer);
    /* tp : min(tp + T*s, e) : s, without the min when tiles divide the
     * range exactly. */
    g_autoptr(WeirExpr) tpe = weir_expr_symbol(tp);
    g_autoptr(WeirExpr) tile_end = weir_expr_add(tpe, stride);
    g_autoptr(WeirExpr) extent = weir_expr_sub(r->end, r->begin);
    g_autoptr(WeirExpr) rem = weir_expr_mod(extent, stride);
    gint64 v;
    gboolean exact = weir_expr_is_const(rem, &v) && v == 0;
    inner.begin = weir_expr_ref(tpe);
    inner.end =
        exact ? weir_expr_ref(tile_end) : weir_expr_min(tile_end, r->end);
    inner.step = weir_expr_ref(r->step);
    g_array_append_val(inner_ranges, inner);
  }

  WeirSchedule outer_schedule = map->schedule == WEIR_SCHEDULE_PARALLEL
                                    ? WEIR_SCHEDULE_PARALLEL
                                    : WEIR_SCHEDULE_SEQUENTIAL;
  if (map->schedule == WEIR_SCHEDULE_PARALLEL)
    map->schedule = WEIR_SCHEDULE_SEQUENTIAL;
  guint collapse = MIN(map->collapse, outer_params->len);
  map->collapse = 0;
  weir_map_set_dims(map, n, (const char *const *)map->params->pdata,
                    (const WeirRange *)inner_ranges->data, NULL);

  g_autofree char *label = g_strconcat(m.entry->label, "_tiles", NULL);
  WeirNode *outer = weir_tier1_wrap(
      g, m.state, m.entry, label, outer_params->len,
      (const char *const *)outer_params->pdata,
      (const WeirRange *)outer_ranges->data, outer_schedule, error);
  if (!outer)
    return FALSE;
  outer->map->collapse = collapse;
  return TRUE;
}

static const WeirTransformInfo map_tiling_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "map-tiling",
    .tier = 1,
    .description = "Tile a map into an outer map over tiles and an inner map "
                   "over one tile, with per-tile memlets",
    .params = tiling_params,
    .n_params = G_N_ELEMENTS(tiling_params),
    .match = tiling_match,
    .can_apply = tiling_can_apply,
    .apply = tiling_apply,
};

gboolean weir_tier1_register_map_tiling(GError **error) {
  return weir_transform_register(&map_tiling_info, error);
}
