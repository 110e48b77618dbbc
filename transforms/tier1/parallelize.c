/* parallelize.c — run a map's iterations in parallel (OpenMP).
 *
 * Site: one map entry whose schedule is not already parallel.  No
 * parameters.  Effect: schedule := parallel; the code generator emits an
 * OpenMP parallel loop (with the map's collapse depth, see map-collapse).
 *
 * Legal when the iterations are independent (weir_tier1_independent over
 * every parameter, see tier1-util.h): every written box is separated
 * between iterations by an injective index (e.g. C[i, j] in i and j, tiles
 * ti:ti + 32 with step 32), reads of a written container use exactly the
 * written box (in-place updates), or the writes use write-conflict
 * resolution (accumulations commute; the code generator makes them
 * atomic).  Maps holding access nodes, library nodes or nested programs are
 * refused (their per-iteration storage is not analysed).  Data movement
 * and FLOPs do not change.
 */
#include "tier1-util.h"

gboolean weir_tier1_register_parallelize(GError **error);

static gboolean not_parallel(const WeirGraph *g, const WeirState *s,
                             const WeirNode *entry) {
  (void)g;
  (void)s;
  return entry->map->schedule != WEIR_SCHEDULE_PARALLEL;
}

static void parallelize_match(const WeirGraph *g, GArray *sites) {
  weir_tier1_match_maps(g, sites, not_parallel);
}

static gboolean parallelize_can_apply(const WeirGraph *g, const WeirSite *site,
                                      const WeirParams *params, char **reason) {
  (void)params;
  g_auto(WeirTier1Map) m = {0};
  if (!weir_tier1_site_map(g, site, &m, reason))
    return FALSE;
  if (m.entry->map->schedule == WEIR_SCHEDULE_PARALLEL) {
    g_autofree char *name = weir_tier1_map_name(m.entry);
    return weir_tier1_reason(reason, "%s is already parallel", name);
  }
  return weir_tier1_independent(&m, NULL, TRUE, reason);
}

static gboolean parallelize_apply(WeirGraph *g, const WeirSite *site,
                                  const WeirParams *params, GError **error) {
  (void)params;
  g_auto(WeirTier1Map) m = {0};
  g_autofree char *reason = NULL;
  if (!weir_tier1_site_map(g, site, &m, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  m.entry->map->schedule = WEIR_SCHEDULE_PARALLEL;
  return TRUE;
}

static const WeirTransformInfo parallelize_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "parallelize",
    .tier = 1,
    .description = "Run the iterations of a map in parallel (OpenMP) when "
                   "they are independent",
    .match = parallelize_match,
    .can_apply = parallelize_can_apply,
    .apply = parallelize_apply,
};

gboolean weir_tier1_register_parallelize(GError **error) {
  return weir_transform_register(&parallelize_info, error);
}
