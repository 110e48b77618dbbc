/* map-reduce-fusion.c — fusing a map into the reduction that consumes it.
 *
 * Map A writes the transient T; map B reads it element-wise and accumulates
 * with WCR (sum, max, ...), over the same iteration space or a larger one
 * (B's extra parameters are the reduced ones, e.g. a matrix product's k):
 * A's body moves into B's scope so every value is reduced as it is
 * produced (exp then sum in a softmax).  T disappears when nothing else
 * reads it; otherwise A keeps writing it from the fused map.  With extra
 * parameters in B (only with recompute=true), A's work is repeated for
 * each of their values: more FLOPs, and A's inputs are read once per point
 * of B's space, which can move more bytes than dropping T saves.  Over the
 * same space (the default) FLOPs stay and bytes never grow.  Site: [A's map
 * exit, T's access node, B's map entry].  Shares its work with map-fusion
 * (tier3-vertical.c). */
#include "tier3-vertical.h"

gboolean weir_tier3_register_map_reduce_fusion(GError **error);

static void match(const WeirGraph *g, GArray *sites) {
  tier3_vertical_match(g, sites, TIER3_VERTICAL_REDUCE);
}

static gboolean recompute(const WeirParams *params) {
  return params ? weir_params_get_bool(params, "recompute") : FALSE;
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  return tier3_vertical_can_apply(g, site, TIER3_VERTICAL_REDUCE,
                                  recompute(params), reason);
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  return tier3_vertical_apply(g, site, TIER3_VERTICAL_REDUCE, recompute(params),
                              error);
}

static const WeirParamSpec params[] = {
    {
        .name = "recompute",
        .type = WEIR_PARAM_BOOL,
        .default_value = "false",
        .doc = "allow the reduction to iterate over more points than the "
               "map, repeating the map's work for each",
    },
};

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "map-reduce-fusion",
    .tier = 3,
    .description = "fuse a map into the reduction map that consumes its "
                   "transient output, reducing values as they are produced",
    .params = params,
    .n_params = G_N_ELEMENTS(params),
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier3_register_map_reduce_fusion(GError **error) {
  return weir_transform_register(&info, error);
}
