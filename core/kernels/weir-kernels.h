/* weir-kernels.h — Weir's own kernels, emitted as C text into generated
 * units (internal to libweir; docs/native.md, implementation "weir").
 *
 * The GEMM is a packed, register-blocked, cache-blocked one in the manner
 * of GotoBLAS/BLIS, written for the vector ISA of the hardware profile
 * (core/weir-hw.h): a microkernel of MR x NR accumulators (NR = NV vectors),
 * B packed in KC x NC blocks of NR-wide panels, A packed in MC x KC blocks
 * of MR-high panels (alpha folded in), OpenMP over the microtiles.  The
 * ISA and every blocking size are written into the emitted text, so the
 * compile-cache key (a hash of the source) covers them.
 */
#ifndef WEIR_KERNELS_H
#define WEIR_KERNELS_H

#include "weir-graph.h"
#include "weir-hw.h"
#include "weir-types.h"

G_BEGIN_DECLS

typedef struct {
  WeirHwIsa isa;
  guint vl;         /* elements per vector */
  guint mr, nv, nr; /* microtile: mr rows x nr = nv * vl columns */
  guint kc, mc, nc; /* cache blocks */
} WeirGemmBlocking;

/* The blocking for dtype t (f32 or f64) on the machine described by hw
 * (borrowed; its ISA and cache sizes; unknown sizes get defaults). */
void weir_kernel_gemm_blocking(const WeirHwProfile *hw, WeirDType t,
                               WeirGemmBlocking *out);

/* The helper text defining
 *   static int weir_gemm_<sfx>(int ta, int tb, int64_t m, int64_t n,
 *                              int64_t k, T alpha, const T *a, int64_t lda,
 *                              const T *b, int64_t ldb, T beta, T *c,
 *                              int64_t ldc, void *work);
 * (row-major C = alpha op(A) op(B) + beta C) for dtype t with blocking bl.
 * work holds the packing buffers (64-byte aligned, at least
 * weir_kernel_gemm_work_bytes); NULL makes the call allocate them, and then
 * it returns non-zero when they cannot be allocated.
 * (transfer full) */
char *weir_kernel_gemm_text(WeirDType t, const WeirGemmBlocking *bl);

/* The bytes of work space weir_gemm_<sfx> needs for an m x n x k product
 * (borrowed expressions; NULL = unknown): exact when all three are
 * constants, else the bound for the largest cache blocks. (transfer full) */
WeirExpr *weir_kernel_gemm_work_bytes(WeirDType t, const WeirGemmBlocking *bl,
                                      const WeirExpr *m, const WeirExpr *n,
                                      const WeirExpr *k);

/* The prototype of weir_gemm_<sfx> as one line, for helpers that call it
 * (helpers are printed in name order). (transfer full) */
char *weir_kernel_gemm_prototype(WeirDType t);

/* The helper name ("weir_gemm_f32"). (borrowed) */
const char *weir_kernel_gemm_name(WeirDType t);

/* What the emitted kernels depend on besides the program: the ISA and
 * the blocking of each GEMM on this machine, as one line that compile-cache
 * keys include (core/runtime.c), so that $WEIR_ISA or other cache sizes
 * never reuse an object built for another choice. (transfer full) */
char *weir_kernels_signature(void);

/* Registers the native implementations "weir" of Gemm, MatMul and Conv
 * (core/kernels/native-weir.c; called by weir_native_register_builtin). */
void weir_native_register_weir(void);

/* ------------------------------------------------ depthwise convolution
 * core/kernels/depthwise.c: the native implementation "depthwise" of Conv
 * (f32, group == C == M), vectorized along the output width. */

/* The node attribute (INT) that fixes the vector width of one depthwise
 * node: the ISA's lanes or half of them; absent or another value: chosen
 * per call from the output width (the tunable parameter). */
#define WEIR_DEPTHWISE_VL_ATTR "depthwise_vl"

typedef struct {
  WeirHwIsa isa;
  guint vl; /* f32 lanes of the wide vector; the narrow one has vl / 2 */
} WeirDepthwiseParams;

/* The parameters for the machine described by hw (borrowed; NULL:
 * generic). */
void weir_kernel_depthwise_params(const WeirHwProfile *hw,
                                  WeirDepthwiseParams *out);

/* The helper text defining
 *   static void weir_dwconv2d_f32(const float *x, const float *w,
 *       const float *b, float *y, const float *r, int64_t n, int64_t c,
 *       int64_t h, int64_t wd, int64_t kh, int64_t kw, int64_t oh,
 *       int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
 *       int64_t ph, int64_t pw, int act, float lo, float hi, int vl);
 * y = act(depthwise_conv(x, w) + b + r) in NCHW (b, r may be NULL; act 0
 * none, 1 clip to [lo, hi], 2 sigmoid, 3 SiLU, 4 HardSwish; vl 0 = chosen
 * per call). (transfer full) */
char *weir_kernel_depthwise_text(const WeirDepthwiseParams *p);

/* An epilogue (ir/lower/weir-expand.h) a kernel applies in its store:
 * y = act(x + r), r the extra input `residual` (-1: none). */
typedef struct {
  int act;       /* 0 none, 1 clip to [lo, hi] (ReLU, ReLU6), 2 sigmoid,
                    3 SiLU (x * sigmoid(x)), 4 HardSwish */
  double lo, hi; /* clip bounds; -G_MAXDOUBLE / G_MAXDOUBLE: none */
  int residual;
} WeirEpilogueKind;

/* Recognizes n's epilogue code (attributes "epilogue", "epilogue_conns"):
 * an activation of the list above applied to the node's result or to its
 * sum with one extra input, written as the pure expansions and the ONNX
 * importer write them (max/min with literal bounds, 1 / (1 + exp(-x)),
 * x * sigmoid(x) through a local, x * max(0, min(1, x / 6 + 0.5))).
 * FALSE for anything else. */
gboolean weir_kernel_epilogue_classify(const WeirNode *n,
                                       WeirEpilogueKind *out);

/* Registers the native implementation "depthwise" of Conv (called by
 * weir_native_register_builtin). */
void weir_native_register_depthwise(void);

G_END_DECLS

#endif
