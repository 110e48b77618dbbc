/* map-fusion.c — vertical (producer-consumer) map fusion.
 *
 * Map A writes the transient T, which only map B reads, element by element
 * over the same iteration space: B's tasklets then read A's tasklet's value
 * directly, A's body moves into B's scope and T disappears, with its write
 * and read traffic.  Site: [A's map exit, T's access node, B's map entry].
 * The work is shared with map-reduce-fusion (tier3-vertical.c), which
 * handles consumers that reduce with WCR. */
#include "tier3-vertical.h"

gboolean weir_tier3_register_map_fusion(GError **error);

static void match(const WeirGraph *g, GArray *sites) {
  tier3_vertical_match(g, sites, TIER3_VERTICAL_ELEMENTWISE);
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  return tier3_vertical_can_apply(g, site, TIER3_VERTICAL_ELEMENTWISE, FALSE,
                                  reason);
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  return tier3_vertical_apply(g, site, TIER3_VERTICAL_ELEMENTWISE, FALSE,
                              error);
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "map-fusion",
    .tier = 3,
    .description = "fuse a map into the map that reads its transient output "
                   "element-wise, removing the transient",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier3_register_map_fusion(GError **error) {
  return weir_transform_register(&info, error);
}
