/* tier3.c — registers the built-in tier-3 transformations.  Each
 * transformation lives in its own file in this directory and is listed
 * here. */
#include "weir-plugin.h"

gboolean weir_tier3_register(GError **error);
gboolean weir_tier3_register_map_fusion(GError **error);
gboolean weir_tier3_register_map_reduce_fusion(GError **error);
gboolean weir_tier3_register_tasklet_fusion(GError **error);
gboolean weir_tier3_register_horizontal_map_fusion(GError **error);
gboolean weir_tier3_register_state_fusion(GError **error);
gboolean weir_tier3_register_epilogue_fusion(GError **error);

gboolean weir_tier3_register(GError **error) {
  return weir_tier3_register_map_fusion(error) &&
         weir_tier3_register_map_reduce_fusion(error) &&
         weir_tier3_register_tasklet_fusion(error) &&
         weir_tier3_register_horizontal_map_fusion(error) &&
         weir_tier3_register_state_fusion(error) &&
         weir_tier3_register_epilogue_fusion(error);
}
