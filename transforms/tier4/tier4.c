/* tier4.c — registers the built-in tier-4 transformations (global
 * data-movement reduction).  Each transformation lives in its own file in
 * this directory, exports one weir_tier4_register_<name>() that registers
 * its static WeirTransformInfo, and is listed here (one prototype and one
 * call per transformation).  tier4-util.[ch] holds the analyses they
 * share. */
#include "weir-plugin.h"

gboolean weir_tier4_register(GError **error);
gboolean weir_tier4_register_redundant_copy(GError **error);
gboolean weir_tier4_register_transient_reuse(GError **error);
gboolean weir_tier4_register_layout_transform(GError **error);
gboolean weir_tier4_register_lifetime_shortening(GError **error);
gboolean weir_tier4_register_recompute_activation(GError **error);

gboolean weir_tier4_register(GError **error) {
  if (!weir_tier4_register_redundant_copy(error))
    return FALSE;
  if (!weir_tier4_register_transient_reuse(error))
    return FALSE;
  if (!weir_tier4_register_layout_transform(error))
    return FALSE;
  if (!weir_tier4_register_lifetime_shortening(error))
    return FALSE;
  if (!weir_tier4_register_recompute_activation(error))
    return FALSE;
  return TRUE;
}
