/* tier2.c — registers the built-in tier-2 transformations.  Each
 * transformation lives in its own file in this directory and is listed
 * here. */
#include "weir-plugin.h"

gboolean weir_tier2_register(GError **error);
gboolean weir_tier2_register_constant_folding(GError **error);
gboolean weir_tier2_register_cse(GError **error);
gboolean weir_tier2_register_identity_elimination(GError **error);
gboolean weir_tier2_register_batchnorm_folding(GError **error);
gboolean weir_tier2_register_pad_conv_fusion(GError **error);
gboolean weir_tier2_register_layernorm_fusion(GError **error);
gboolean weir_tier2_register_channel_scale_folding(GError **error);
gboolean weir_tier2_register_algebraic_simplification(GError **error);
gboolean weir_tier2_register_prune(GError **error);
gboolean weir_tier2_register_quantize(GError **error);
gboolean weir_tier2_register_cast_bf16(GError **error);
gboolean weir_tier2_register_batchnorm_grad_relu_fusion(GError **error);

gboolean weir_tier2_register(GError **error) {
  return weir_tier2_register_constant_folding(error) &&
         weir_tier2_register_cse(error) &&
         weir_tier2_register_identity_elimination(error) &&
         weir_tier2_register_batchnorm_folding(error) &&
         weir_tier2_register_pad_conv_fusion(error) &&
         weir_tier2_register_layernorm_fusion(error) &&
         weir_tier2_register_channel_scale_folding(error) &&
         weir_tier2_register_algebraic_simplification(error) &&
         weir_tier2_register_prune(error) &&
         weir_tier2_register_quantize(error) &&
         weir_tier2_register_cast_bf16(error) &&
         weir_tier2_register_batchnorm_grad_relu_fusion(error);
}
