/* tier1.h — registration functions of the tier-1 transformations, one per
 * file in this directory, called from tier1.c. */
#ifndef WEIR_TIER1_H
#define WEIR_TIER1_H

#include "weir-plugin.h"

G_BEGIN_DECLS

gboolean weir_tier1_register_map_tiling(GError **error);
gboolean weir_tier1_register_map_interchange(GError **error);
gboolean weir_tier1_register_map_collapse(GError **error);
gboolean weir_tier1_register_vectorize(GError **error);
gboolean weir_tier1_register_unroll(GError **error);
gboolean weir_tier1_register_parallelize(GError **error);
gboolean weir_tier1_register_strength_reduction(GError **error);
gboolean weir_tier1_register_gemm_extraction(GError **error);

G_END_DECLS

#endif
