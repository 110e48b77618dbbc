/* vectorize.c — give the innermost loop of an innermost map a SIMD
 * schedule.
 *
 * Site: an innermost map (no map inside it) that is not SIMD yet and whose
 * last parameter takes more than one value.  Parameter `width` (1..64): the
 * number of lanes.
 *
 * Effect.  The vectorized loop is the map's last parameter v.  A map with
 * one parameter gets schedule simd; a map with more is split first: a new
 * outer map over the other parameters keeps the schedule (so a parallel
 * map stays parallel over its outer parameters), collapse depth and tile
 * sizes, and the original map keeps only v, with schedule simd.  The width
 * is recorded as the tile size of v (when > 1): the code generator
 * strip-mines v into chunks of `width` iterations and emits `#pragma omp
 * simd` on the loop over one chunk.  Data movement and FLOPs do not
 * change (the split adds only inner memlets, which are not counted).
 *
 * Legality (each refusal says which):
 *  - the map is innermost (no map inside it) and holds only tasklets;
 *  - no loop-carried dependence along v: iterations that differ in v write
 *    disjoint elements (every written box is separated by v, see
 *    tier1-util.h), and a container that is written is read only at the
 *    written element;
 *  - no write-conflict resolution on an element that repeats across v
 *    (lanes would accumulate into the same element): a WCR write must be
 *    separated by v too;
 *  - every access is computable from the lane index: memlet subsets are
 *    symbolic expressions of the parameters (unit stride when v appears
 *    with coefficient 1 in the last dimension, strided when affine,
 *    gathers for clamped or otherwise non-affine indices); refused are
 *    dynamic (data-dependent) memlets and tasklets that index a connector
 *    with a value computed from data.
 */
#include <string.h>

#include "tier1-util.h"

gboolean weir_tier1_register_vectorize(GError **error);

static const WeirParamSpec vectorize_params[] = {
    {.name = "width",
     .type = WEIR_PARAM_INT,
     .default_value = "8",
     .min = 1,
     .max = 64,
     .doc = "SIMD lanes (recorded as the tile size of the vectorized "
            "parameter; 1: let the compiler choose)"},
};

static gboolean vector_candidate(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *entry) {
  const WeirMap *map = entry->map;
  gint64 size;
  if (map->schedule == WEIR_SCHEDULE_SIMD)
    return FALSE;
  if (weir_tier1_range_const_size(map, map->params->len - 1, &size) &&
      size <= 1)
    return FALSE;
  g_auto(WeirTier1Map) m = {0};
  return weir_tier1_map_init(g, s->id, entry->id, &m, NULL) &&
         !weir_tier1_map_nested_entry(&m);
}

static void vectorize_match(const WeirGraph *g, GArray *sites) {
  weir_tier1_match_maps(g, sites, vector_candidate);
}

/* Whether an expression reads data: an input connector or a local. */
static gboolean uses_data(const WeirAst *a) {
  if (!a)
    return FALSE;
  if ((a->kind == WEIR_AST_NAME || a->kind == WEIR_AST_INDEX) &&
      (a->binding == WEIR_BIND_INPUT || a->binding == WEIR_BIND_LOCAL))
    return TRUE;
  if (uses_data(a->a) || uses_data(a->b) || uses_data(a->c))
    return TRUE;
  for (guint i = 0; a->args && i < a->args->len; i++)
    if (uses_data(g_ptr_array_index(a->args, i)))
      return TRUE;
  return FALSE;
}

/* The first indexed access in a whose index reads data, or NULL. */
static const WeirAst *data_index(const WeirAst *a) {
  if (!a)
    return NULL;
  if (a->kind == WEIR_AST_INDEX)
    for (guint i = 0; i < a->args->len; i++)
      if (uses_data(g_ptr_array_index(a->args, i)))
        return a;
  const WeirAst *r;
  if ((r = data_index(a->a)) || (r = data_index(a->b)) ||
      (r = data_index(a->c)))
    return r;
  for (guint i = 0; a->args && i < a->args->len; i++)
    if ((r = data_index(g_ptr_array_index(a->args, i))))
      return r;
  return NULL;
}

static gboolean accesses_computable(const WeirGraph *g, const WeirTier1Map *m,
                                    char **reason) {
  g_autofree char *name = weir_tier1_map_name(m->entry);
  for (guint i = 0; i < m->state->edges->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(m->state->edges, i);
    if ((e->src == m->entry->id || e->dst == m->exit->id) && e->dynamic)
      return weir_tier1_reason(reason,
                               "memlet %u of %s on '%s' is dynamic: the lanes "
                               "would access data-dependent elements",
                               e->id, name, e->data ? e->data : "");
  }
  for (guint i = 0; i < m->inside->len; i++) {
    const WeirNode *n =
        weir_state_node(m->state, g_array_index(m->inside, guint, i));
    if (n->kind != WEIR_NODE_TASKLET)
      continue;
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirCode) code = weir_tasklet_checked_code(g, m->state, n, &err);
    if (!code)
      return weir_tier1_reason(reason, "%s", err->message);
    for (guint k = 0; k < code->stmts->len; k++) {
      const WeirStmt *st = g_ptr_array_index(code->stmts, k);
      const WeirAst *bad = data_index(st->target);
      if (!bad)
        bad = data_index(st->value);
      if (bad)
        return weir_tier1_reason(
            reason,
            "tasklet '%s' (node %u) indexes '%s' with a value computed from "
            "data (line %u): a data-dependent gather cannot be vectorized",
            n->label, n->id, bad->name, bad->line);
    }
  }
  return TRUE;
}

static gboolean vectorize_can_apply(const WeirGraph *g, const WeirSite *site,
                                    const WeirParams *params, char **reason) {
  (void)params;
  g_auto(WeirTier1Map) m = {0};
  if (!weir_tier1_site_map(g, site, &m, reason))
    return FALSE;
  const WeirMap *map = m.entry->map;
  g_autofree char *name = weir_tier1_map_name(m.entry);
  if (map->schedule == WEIR_SCHEDULE_SIMD)
    return weir_tier1_reason(reason, "%s is already SIMD", name);
  WeirNode *nested = weir_tier1_map_nested_entry(&m);
  if (nested)
    return weir_tier1_reason(reason,
                             "%s contains map '%s' (node %u): only an "
                             "innermost map can be vectorized",
                             name, nested->label, nested->id);
  guint n = map->params->len;
  g_autofree gboolean *vary = g_new0(gboolean, n);
  vary[n - 1] = TRUE;
  if (!weir_tier1_independent(&m, vary, FALSE, reason))
    return FALSE;
  return accesses_computable(g, &m, reason);
}

static gboolean vectorize_apply(WeirGraph *g, const WeirSite *site,
                                const WeirParams *params, GError **error) {
  g_auto(WeirTier1Map) m = {0};
  g_autofree char *reason = NULL;
  if (!weir_tier1_site_map(g, site, &m, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirMap *map = m.entry->map;
  guint n = map->params->len;
  gint64 width = weir_params_get_int(params, "width");
  const gint64 *tile = width > 1 ? &width : NULL;
  if (n == 1) {
    weir_map_set_dims(map, 1, (const char *const *)map->params->pdata,
                      &g_array_index(map->ranges, WeirRange, 0), tile);
    map->schedule = WEIR_SCHEDULE_SIMD;
    return TRUE;
  }

  /* Split: the outer parameters go to a new map around this one. */
  g_autoptr(GPtrArray) outer_params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) outer_ranges = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  g_array_set_clear_func(outer_ranges, (GDestroyNotify)weir_range_clear);
  g_autoptr(GArray) outer_tile = g_array_new(FALSE, TRUE, sizeof(gint64));
  for (guint i = 0; i + 1 < n; i++) {
    WeirRange r;
    g_ptr_array_add(outer_params, g_strdup(g_ptr_array_index(map->params, i)));
    weir_range_copy(&g_array_index(map->ranges, WeirRange, i), &r);
    g_array_append_val(outer_ranges, r);
    if (map->tile->len == n)
      g_array_append_val(outer_tile, g_array_index(map->tile, gint64, i));
  }
  WeirSchedule schedule = map->schedule;
  guint collapse = MIN(map->collapse, n - 1);
  g_autofree char *v = g_strdup(g_ptr_array_index(map->params, n - 1));
  WeirRange vr;
  weir_range_copy(&g_array_index(map->ranges, WeirRange, n - 1), &vr);
  const char *vp[] = {v};
  weir_map_set_dims(map, 1, vp, &vr, tile);
  weir_range_clear(&vr);
  map->schedule = WEIR_SCHEDULE_SIMD;
  map->collapse = 0;
  g_autofree char *label = g_strconcat(m.entry->label, "_outer", NULL);
  WeirNode *outer =
      weir_tier1_wrap(g, m.state, m.entry, label, n - 1,
                      (const char *const *)outer_params->pdata,
                      (const WeirRange *)outer_ranges->data, schedule, error);
  if (!outer)
    return FALSE;
  outer->map->collapse = collapse;
  gboolean tiled = FALSE;
  for (guint i = 0; i < outer_tile->len; i++)
    tiled = tiled || g_array_index(outer_tile, gint64, i) != 0;
  if (tiled)
    g_array_append_vals(outer->map->tile, outer_tile->data, outer_tile->len);
  return TRUE;
}

static const WeirTransformInfo vectorize_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "vectorize",
    .tier = 1,
    .description = "Give the innermost loop of an innermost map a SIMD "
                   "schedule of a chosen width",
    .params = vectorize_params,
    .n_params = G_N_ELEMENTS(vectorize_params),
    .match = vectorize_match,
    .can_apply = vectorize_can_apply,
    .apply = vectorize_apply,
};

gboolean weir_tier1_register_vectorize(GError **error) {
  return weir_transform_register(&vectorize_info, error);
}
