/* unroll.c — unroll the innermost loop of a map.
 *
 * Site: an innermost map (no map inside it) whose last parameter has a
 * range of constant size >= 2 and that is not unrolled yet.  Parameter
 * `factor` (2..64).  Effect: the map's unroll attribute := factor; the code
 * generator unrolls the loop of the last parameter by that factor (with a
 * remainder loop when the factor does not divide the trip count).
 *
 * Legal when the map is innermost, the range of its last parameter has a
 * constant size of at least `factor` iterations, and that loop is not the
 * map's only parallel loop (a one-parameter parallel map: unrolling would
 * hand OpenMP chunks of `factor` iterations instead; unroll a sequential or
 * SIMD map, or one with an outer parameter).  Unrolling keeps the order of
 * iterations, so it never changes results.  Data movement and FLOPs do not
 * change.
 */
#include "tier1-util.h"

gboolean weir_tier1_register_unroll(GError **error);

static const WeirParamSpec unroll_params[] = {
    {.name = "factor",
     .type = WEIR_PARAM_INT,
     .default_value = "4",
     .min = 2,
     .max = 64,
     .doc = "how many iterations of the innermost loop each unrolled body "
            "runs"},
};

static gboolean unroll_candidate(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *entry) {
  const WeirMap *map = entry->map;
  guint last = map->params->len - 1;
  gint64 size;
  if (map->unroll > 1 || !weir_tier1_range_const_size(map, last, &size) ||
      size < 2)
    return FALSE;
  if (map->schedule == WEIR_SCHEDULE_PARALLEL && map->params->len == 1)
    return FALSE;
  g_auto(WeirTier1Map) m = {0};
  return weir_tier1_map_init(g, s->id, entry->id, &m, NULL) &&
         !weir_tier1_map_nested_entry(&m);
}

static void unroll_match(const WeirGraph *g, GArray *sites) {
  weir_tier1_match_maps(g, sites, unroll_candidate);
}

static gboolean unroll_can_apply(const WeirGraph *g, const WeirSite *site,
                                 const WeirParams *params, char **reason) {
  g_auto(WeirTier1Map) m = {0};
  if (!weir_tier1_site_map(g, site, &m, reason))
    return FALSE;
  const WeirMap *map = m.entry->map;
  g_autofree char *name = weir_tier1_map_name(m.entry);
  WeirNode *nested = weir_tier1_map_nested_entry(&m);
  if (nested)
    return weir_tier1_reason(reason,
                             "%s contains map '%s' (node %u): only the "
                             "innermost loop of a nest is unrolled",
                             name, nested->label, nested->id);
  guint last = map->params->len - 1;
  const char *p = g_ptr_array_index(map->params, last);
  gint64 factor = weir_params_get_int(params, "factor"), size;
  if (!weir_tier1_range_const_size(map, last, &size)) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(map->ranges, WeirRange, last));
    return weir_tier1_reason(reason,
                             "the range '%s' of '%s' in %s has no constant "
                             "size",
                             r, p, name);
  }
  if (factor > size)
    return weir_tier1_reason(reason,
                             "factor %" G_GINT64_FORMAT
                             " exceeds the %" G_GINT64_FORMAT
                             " iterations of '%s' in %s",
                             factor, size, p, name);
  if (map->schedule == WEIR_SCHEDULE_PARALLEL && map->params->len == 1)
    return weir_tier1_reason(reason,
                             "the loop of '%s' is the only loop of %s and it "
                             "is parallel",
                             p, name);
  if (map->unroll == (guint)factor)
    return weir_tier1_reason(
        reason, "%s is already unrolled by %" G_GINT64_FORMAT, name, factor);
  return TRUE;
}

static gboolean unroll_apply(WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, GError **error) {
  g_auto(WeirTier1Map) m = {0};
  g_autofree char *reason = NULL;
  if (!weir_tier1_site_map(g, site, &m, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  m.entry->map->unroll = (guint)weir_params_get_int(params, "factor");
  return TRUE;
}

static const WeirTransformInfo unroll_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "unroll",
    .tier = 1,
    .description = "Unroll the innermost loop of a map by a constant factor",
    .params = unroll_params,
    .n_params = G_N_ELEMENTS(unroll_params),
    .match = unroll_match,
    .can_apply = unroll_can_apply,
    .apply = unroll_apply,
};

gboolean weir_tier1_register_unroll(GError **error) {
  return weir_transform_register(&unroll_info, error);
}
