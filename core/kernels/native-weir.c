/* native-weir.c — the native implementation "weir" of Gemm, MatMul and
 * Conv: the emitters of core/native.c with Weir's own GEMM
 * (core/kernels/gemm.c) as the GEMM they call instead of cblas_<p>gemm.
 *
 * Conventions of this file:
 *  - An operator accepts "weir" exactly when it accepts the BLAS-based
 *    implementation of the same shape ("blas" for Gemm and MatMul,
 *    "im2col" for Conv): the same operand checks, the same emitted
 *    arithmetic, another GEMM.
 *  - The GEMM's ISA and blocking come from the detected hardware profile
 *    (weir_hw_detect(), honouring $WEIR_ISA) at code-generation time and
 *    are written into the helper text, so the compile-cache key covers
 *    them.
 *  - The GEMM's packing buffers live in the function's scratch block of
 *    the kernel's workspace
 *    (e->scratch, sized at code-generation time: exact for constant
 *    shapes, the largest cache blocks otherwise), so steady-state runs
 *    allocate nothing.  The calls still return a status ("<status> |=
 *    ..."): weir_gemm_<sfx> allocates when it is given no work space.
 *  - The node's epilogue (bias, an activation, a residual: what
 *    weir_kernel_epilogue_classify recognizes, f32) is applied in the
 *    GEMM's store (weir_gemm_<sfx>_ep), so it is not a separate pass.
 *  - Convolutions gather their patches in the GEMM's packing of B
 *    (implicit im2col): no column buffer.
 *  - Helper names: weir_act_v<VL>, weir_act1_<dtype> (the activations),
 *    weir_gemm_<sfx> (the GEMM), weir_wgemm_fill_<sfx>, weir_wconv2d_<sfx>:
 *    helpers are printed in name order, so each is defined before its
 *    callers.
 */
#include "weir-kernels.h"

static gboolean gemm_emit(WeirNativeEmit *e, GError **error) {
  return weir_native_emit_gemm(e, WEIR_NATIVE_GEMM_WEIR, error);
}

static gboolean matmul_emit(WeirNativeEmit *e, GError **error) {
  return weir_native_emit_matmul(e, WEIR_NATIVE_GEMM_WEIR, error);
}

static gboolean conv_emit(WeirNativeEmit *e, GError **error) {
  return weir_native_emit_conv(e, WEIR_NATIVE_GEMM_WEIR, error);
}

/* Conv's GEMM orientation (WEIR_GEMM_PARAM_ORIENT): 1 the vectors along
 * the output pixels, 2 along the output channels; a node without it is
 * oriented by shape. */
static const gint64 orient_values[] = {1, 2};
static const WeirNativeParam conv_params[] = {
    {.name = WEIR_GEMM_PARAM_ORIENT,
     .doc = "GEMM vectors along the output pixels (1) or channels (2)",
     .values = orient_values,
     .n_values = G_N_ELEMENTS(orient_values)},
};

static const WeirNativeImpl weir_impls[] = {
    {.op = "Gemm",
     .impl = "weir",
     .accepts = weir_native_gemm_accepts,
     .emit = gemm_emit,
     .takes_epilogue = weir_kernel_takes_epilogue},
    {.op = "MatMul",
     .impl = "weir",
     .accepts = weir_native_matmul_accepts,
     .emit = matmul_emit,
     .takes_epilogue = weir_kernel_takes_epilogue},
    {.op = "Conv",
     .impl = "weir",
     .accepts = weir_native_conv_accepts,
     .emit = conv_emit,
     .takes_epilogue = weir_kernel_takes_epilogue,
     .params = conv_params,
     .n_params = G_N_ELEMENTS(conv_params)},
};

void weir_native_register_weir(void) {
  for (guint i = 0; i < G_N_ELEMENTS(weir_impls); i++)
    weir_native_register(&weir_impls[i]);
}
