/* tier1.c — registers the built-in tier-1 transformations.  Each
 * transformation lives in its own file in this directory, exports one
 * weir_tier1_register_<name>() that registers its static WeirTransformInfo,
 * and is listed here (one prototype and one call per transformation). */
#include "weir-plugin.h"

gboolean weir_tier1_register(GError **error);
gboolean weir_tier1_register_expand_node(GError **error);
gboolean weir_tier1_register_map_tiling(GError **error);
gboolean weir_tier1_register_map_interchange(GError **error);
gboolean weir_tier1_register_map_collapse(GError **error);
gboolean weir_tier1_register_parallelize(GError **error);
gboolean weir_tier1_register_unroll(GError **error);
gboolean weir_tier1_register_vectorize(GError **error);
gboolean weir_tier1_register_strength_reduction(GError **error);
gboolean weir_tier1_register_gemm_extraction(GError **error);
gboolean weir_tier1_register_apply_tuning(GError **error);

gboolean weir_tier1_register(GError **error) {
  if (!weir_tier1_register_expand_node(error))
    return FALSE;
  if (!weir_tier1_register_map_tiling(error))
    return FALSE;
  if (!weir_tier1_register_map_interchange(error))
    return FALSE;
  if (!weir_tier1_register_map_collapse(error))
    return FALSE;
  if (!weir_tier1_register_parallelize(error))
    return FALSE;
  if (!weir_tier1_register_unroll(error))
    return FALSE;
  if (!weir_tier1_register_vectorize(error))
    return FALSE;
  if (!weir_tier1_register_strength_reduction(error))
    return FALSE;
  if (!weir_tier1_register_gemm_extraction(error))
    return FALSE;
  if (!weir_tier1_register_apply_tuning(error))
    return FALSE;
  return TRUE;
}
