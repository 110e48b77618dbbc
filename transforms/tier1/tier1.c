/* tier1.c — registers the built-in tier-1 transformations.  Each
 * transformation lives in its own file in this directory, exports one
 * weir_tier1_register_<name>() that registers its static WeirTransformInfo,
 * and is listed here (one prototype and one call per transformation). */
#include "weir-plugin.h"

gboolean weir_tier1_register(GError **error);
gboolean weir_tier1_register_expand_node(GError **error);

gboolean weir_tier1_register(GError **error) {
  if (!weir_tier1_register_expand_node(error))
    return FALSE;
  return TRUE;
}
