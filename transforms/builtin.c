/* builtin.c — registers every built-in transformation, tier by tier, through
 * the same weir_transform_register() entry point outside plugins use. */
#include "weir-plugin.h"

gboolean weir_transforms_register_builtin(GError **error);
gboolean weir_tier1_register(GError **error);
gboolean weir_tier2_register(GError **error);
gboolean weir_tier3_register(GError **error);
gboolean weir_tier4_register(GError **error);

gboolean weir_transforms_register_builtin(GError **error) {
  return weir_tier1_register(error) && weir_tier2_register(error) &&
         weir_tier3_register(error) && weir_tier4_register(error);
}
