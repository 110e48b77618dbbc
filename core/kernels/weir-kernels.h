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
#include "weir-native.h"
#include "weir-types.h"

G_BEGIN_DECLS

typedef struct {
  WeirHwIsa isa;
  guint vl;         /* elements per vector */
  guint mr, nv, nr; /* microtile: mr rows x nr = nv * vl columns */
  guint kc, mc, nc; /* cache blocks */
  /* The transposed microtile (channels in the vectors, docs/native.md):
   * tmv vectors of rows (tmr = tmv * vl rows of C) x tnr columns, the
   * columns broadcast; tnr a power of two with vl / tnr 1 or 2.  f32
   * only: tnr 0 (f64) means there is none. */
  guint tmv, tnr, tmr;
  /* The transposed driver's k block and A block (tnr > 0): a B
   * micro-panel (tnr x tkc) stays in L1 while the A micro-panels stream
   * past it, so it may take half of L1 (a transposing store per tile and
   * k block is the cost of a short k block: s2conv14p); the A block, tab
   * elements at most (half of L2), has as many whole tmr-high panels of
   * the k block as fit (weir_kernel_gemm_trows).  A node's own gemm_kc /
   * gemm_mc set both drivers' blocks (tab = mc x kc). */
  guint tkc, tab;
  /* The most threads one call uses: each packs into its own buffers, so
   * the work space holds this many (1..WEIR_GEMM_MAX_THREADS; the
   * profile's logical cores). */
  guint threads;
  /* The suffix of the emitted names (weir_gemm_<id>): "f32" or "f64" for
   * the hardware profile's blocking, with the blocking appended
   * ("f32_14x32_256_1008_1024") for a node's own. */
  char id[64];
} WeirGemmBlocking;

/* The rows of the transposed driver's A blocks for a product of depth k:
 * tab / kcb (kcb the balanced k block of at most tkc) rounded down to
 * whole tmr-high panels, at least one. */
gint64 weir_kernel_gemm_trows(const WeirGemmBlocking *bl, gint64 k);

/* The largest WeirGemmBlocking.threads. */
#define WEIR_GEMM_MAX_THREADS 64

/* The INT attributes of a Gemm, MatMul or Conv node (implementation
 * "weir") that choose its GEMM's blocking in place of the hardware
 * profile's (for a tuner, docs/native.md): rows of the microtile (1..32),
 * vectors across it (1..8), and the cache blocks KC (1..65536), MC and NC
 * (rounded down to whole microtiles). */
#define WEIR_GEMM_ATTR_MR "gemm_mr"
#define WEIR_GEMM_ATTR_NV "gemm_nv"
#define WEIR_GEMM_ATTR_KC "gemm_kc"
#define WEIR_GEMM_ATTR_MC "gemm_mc"
#define WEIR_GEMM_ATTR_NC "gemm_nc"

/* The tunable parameter of Conv's "weir" implementation choosing the
 * orientation of its GEMM (impl_params, docs/native.md): 1 the vectors
 * along the output pixels (the usual microtile), 2 along the output
 * channels (the transposed one, weir_gemm_runt); absent, by shape
 * (weir_kernel_gemm_channels_in_vectors). */
#define WEIR_GEMM_PARAM_ORIENT "orient"

/* $WEIR_GEMM_ORIENT as an orientation for convolutions without the
 * parameter: 1 or 2, else 0 (by shape).  Part of weir_kernels_signature,
 * so the compile cache keeps the objects apart. */
gint64 weir_kernel_gemm_orient_env(void);

/* The largest k for which the GEMM reads a row-major B in place (no
 * packing; the microkernel takes B's row stride, conv14n): a 1x1
 * convolution's input at unit stride, a MatMul's or Gemm's B.
 * WEIR_GEMM_INPLACE_K by default; $WEIR_GEMM_INPLACE_K (0: never) replaces
 * it, for comparisons in one build, and is then part of
 * weir_kernels_signature. */
#define WEIR_GEMM_INPLACE_K 1000000000u
guint weir_kernel_gemm_inplace_k(void);

/* The smallest output-row width ow (below a panel's NR columns, and at
 * least half a vector: 8 on the usual tile's panels, 4 on the transposed
 * tile's) for which the implicit im2col packs a panel at stride 1 or 2
 * from segments of output rows with masked loads and permutes (f32 on
 * AVX-512, s2conv14p), not with masked gathers.  WEIR_GEMM_PACK_RUNS by
 * default (8: the transposed tile's 7x7 maps keep the gathers, as fast
 * within the noise); $WEIR_GEMM_PACK_RUNS (0: never; 4: the 7x7 maps
 * too) replaces it, for comparisons in one build, and is then part of
 * weir_kernels_signature. */
#define WEIR_GEMM_PACK_RUNS 8u
guint weir_kernel_gemm_pack_runs(void);

/* Whether the transposed microtile (channels in the vectors) is expected
 * to be faster than the usual one for an m x n x k product with blocking
 * bl: a count of the microkernels' cycles (two FMAs and two loads per
 * cycle, the lanes and broadcasts each edge tile really computes, and the
 * transposing store per tile and k block) at least 10% lower.  patches:
 * B is gathered from a convolution's patches (any convolution but a 1x1
 * at unit stride without padding on one image per call); only without
 * them is the usual tile's tail (weir_kernel_gemm_has_tail) counted at
 * its transposed cost.  FALSE when bl has no transposed microtile (f64). */
gboolean weir_kernel_gemm_channels_in_vectors(const WeirGemmBlocking *bl,
                                              gint64 m, gint64 n, gint64 k,
                                              gboolean patches);

/* Whether the usual driver (weir_gemm_runp) computes the last panel's
 * partial vector, when it has at most bl->tnr columns, with the channels
 * in the vectors (tail14p: the transposed tile reading its A vectors from
 * the usual MR-high panels, two to a vector): when bl has a transposed
 * tile and its vectors hold two A panels (AVX-512 f32, 8 x 48). */
gboolean weir_kernel_gemm_has_tail(const WeirGemmBlocking *bl);

/* The blocking for dtype t (f32 or f64) on the machine described by hw
 * (borrowed; its ISA and cache sizes; unknown sizes get defaults). */
void weir_kernel_gemm_blocking(const WeirHwProfile *hw, WeirDType t,
                               WeirGemmBlocking *out);

/* The blocking of node n (borrowed, NULL = none): the hardware profile's
 * with the node's WEIR_GEMM_ATTR_* attributes in place of its values.
 * FALSE, with an error naming the node and the attribute, for a value out
 * of range. */
gboolean weir_kernel_gemm_blocking_node(const WeirHwProfile *hw, WeirDType t,
                                        const WeirNode *n,
                                        WeirGemmBlocking *out, GError **error);

/* The helper text defining
 *   static int weir_gemm_<id>(int ta, int tb, int64_t m, int64_t n,
 *                              int64_t k, T alpha, const T *a, int64_t lda,
 *                              const T *b, int64_t ldb, T beta, T *c,
 *                              int64_t ldc, void *work);
 * (row-major C = alpha op(A) op(B) + beta C) for dtype t with blocking bl.
 * work holds the packing buffers (64-byte aligned, at least
 * weir_kernel_gemm_work_bytes); NULL makes the call allocate them, and then
 * it returns non-zero when they cannot be allocated.  Also
 *   weir_gemm_<id>_ep(... the same up to ldc, const T *bias, const T *r,
 *                     int64_t ldr, int act, T lo, T hi, void *work)
 * which then applies c = act(c + bias[i] + r[i * ldr + j]) to each
 * microtile after its last update (bias, r NULL: none; act as
 * WeirEpilogueKind), and weir_gemm_run_<id>, the driver both call, which
 * also takes a weir_gemm_patches_<id> (a convolution's input, gathered as
 * B by the packing: implicit im2col).  The f32 text uses the helpers of
 * weir_kernel_act_record, and also defines weir_gemm_runt_<id>, the
 * driver of the transposed microtile (the arguments of
 * weir_gemm_runp_<id>, its pre-packed A in panels of TMR rows).
 * (transfer full) */
char *weir_kernel_gemm_text(WeirDType t, const WeirGemmBlocking *bl);

/* The bytes of work space weir_gemm_<sfx> needs for an m x n x k product
 * (borrowed expressions; NULL = unknown): exact when all three are
 * constants, else the bound for the largest cache blocks. (transfer full) */
WeirExpr *weir_kernel_gemm_work_bytes(WeirDType t, const WeirGemmBlocking *bl,
                                      const WeirExpr *m, const WeirExpr *n,
                                      const WeirExpr *k);

/* The helper name ("weir_gemm_f32"). (transfer full) */
char *weir_kernel_gemm_name(const WeirGemmBlocking *bl);

/* What the emitted kernels depend on besides the program: the ISA and
 * the blocking of each GEMM on this machine, as one line that compile-cache
 * keys include (core/runtime.c), so that $WEIR_ISA or other cache sizes
 * never reuse an object built for another choice. (transfer full) */
char *weir_kernels_signature(void);

/* Records weir_gemm_<id> for dtype t, blocked for this machine and the
 * node being emitted (weir_kernel_gemm_blocking_node), as a helper of the
 * unit (and that the node uses the status variable); *bl receives the
 * blocking. */
gboolean weir_kernel_gemm_record(WeirNativeEmit *e, WeirDType t,
                                 WeirGemmBlocking *bl, GError **error);

/* weir_kernel_gemm_record, then the work-space argument of calls for
 * products of at most m x n x k (borrowed expressions, NULL = 1): a
 * scratch block of the kernel's workspace; NULL on error. (transfer
 * full) */
char *weir_kernel_gemm_use(WeirNativeEmit *e, WeirDType t, const WeirExpr *m,
                           const WeirExpr *n, const WeirExpr *k,
                           WeirGemmBlocking *bl, GError **error);

/* Elements of groups m x k A operands packed for blocking bl
 * (weir_kernel_gemm_prepack_a): each m rounded up to whole MR panels. */
gint64 weir_kernel_gemm_prepacked_a_elements(const WeirGemmBlocking *bl,
                                             gint64 groups, gint64 m, gint64 k);
/* The same for the transposed microtile (panels of bl->tmr rows:
 * weir_kernel_gemm_prepack_at). */
gint64 weir_kernel_gemm_prepacked_at_elements(const WeirGemmBlocking *bl,
                                              gint64 groups, gint64 m,
                                              gint64 k);

/* The A operand of a GEMM packed once, when the kernel is loaded, instead
 * of in every call: w (borrowed) is groups row-major m x k matrices of
 * f32, A of groups GEMMs blocked as bl with alpha 1 and no transpose.
 * Returns the C text of a "const float *" to the packed block (NULL at
 * run time when the caller gives none: weir_gemm_runp then packs as
 * before), group g at g * (m rounded up to MR) * k; or NULL when w cannot
 * be pre-packed (not a bound constant, another dtype: e->prepacked).
 * (transfer full) */
char *weir_kernel_gemm_prepack_a(WeirNativeEmit *e, WeirDType t,
                                 const WeirGemmBlocking *bl,
                                 const WeirContainer *w, gint64 groups,
                                 gint64 m, gint64 k);
/* The same packed for weir_gemm_runt (the transposed microtile: panels of
 * bl->tmr rows), group g at g * (m rounded up to TMR) * k. (transfer
 * full) */
char *weir_kernel_gemm_prepack_at(WeirNativeEmit *e, WeirDType t,
                                  const WeirGemmBlocking *bl,
                                  const WeirContainer *w, gint64 groups,
                                  gint64 m, gint64 k);

/* Elements of a k x n B operand packed for blocking bl
 * (weir_kernel_gemm_prepack_b): n rounded up to whole NR panels. */
gint64 weir_kernel_gemm_prepacked_b_elements(const WeirGemmBlocking *bl,
                                             gint64 k, gint64 n);

/* The B operand of a GEMM (op(b), k x n; b is n x k when tb) packed once,
 * when the kernel is loaded: as weir_kernel_gemm_prepack_a, for the
 * bpk argument of weir_gemm_<id>_pb. (transfer full) */
char *weir_kernel_gemm_prepack_b(WeirNativeEmit *e, WeirDType t,
                                 const WeirGemmBlocking *bl,
                                 const WeirContainer *b, gboolean tb, gint64 k,
                                 gint64 n);

/* text with @T@ replaced by t's C type (float or double) and @S@ by its
 * suffix (f32 or f64): a kernel text instantiated for f32 or f64.
 * (transfer full) */
char *weir_kernel_instantiate(const char *text, WeirDType t);

/* n's label made safe inside a C comment of generated code: '*', '/' and
 * bytes outside printable ASCII become '_'. (transfer full) */
char *weir_kernel_comment_label(const WeirNode *n);

/* The C text of a GEMM helper kept as a GResource under core/kernels
 * (resource, e.g. "/org/weir/kernels/gemm-int8-helper.c"), after a comment
 * naming it (what, e.g. "int8") and defines WEIR_<prefix>_PATH, _MR, _NV,
 * _L2 and _THREADS holding the given parameters. (transfer full) */
char *weir_kernel_helper_text(const char *resource, const char *what,
                              const char *prefix, const char *path_name,
                              int path, guint mr, guint nv, gint64 l2,
                              guint threads);

/* Whether container c has row-major strides (the layout every native
 * kernel reads). */
gboolean weir_kernel_row_major(const WeirContainer *c);

/* The C text of a scratch block of `bytes` (taken over) for the node's
 * call, as "(void *)..."; "NULL" when nothing is needed. (transfer full) */
char *weir_kernel_scratch_arg(WeirNativeEmit *e, WeirExpr *bytes);

/* ------------------------------------------ emitters of core/native.c
 *
 * The Gemm, MatMul and Conv (im2col) emitters are written once, for
 * either GEMM: OpenBLAS's cblas_<p>gemm (implementations "blas" and
 * "im2col") or Weir's weir_gemm_<sfx> (implementation "weir",
 * core/kernels/native-weir.c). */
typedef enum {
  WEIR_NATIVE_GEMM_CBLAS,
  WEIR_NATIVE_GEMM_WEIR,
} WeirNativeGemm;

gboolean weir_native_emit_gemm(WeirNativeEmit *e, WeirNativeGemm which,
                               GError **error);
gboolean weir_native_emit_matmul(WeirNativeEmit *e, WeirNativeGemm which,
                                 GError **error);
/* im2col (every 2-D convolution; Weir's helper also takes 1x1 without
 * patches). */
gboolean weir_native_emit_conv(WeirNativeEmit *e, WeirNativeGemm which,
                               GError **error);

/* The operand checks of those emitters (WeirNativeImpl.accepts). */
gboolean weir_native_gemm_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason);
gboolean weir_native_matmul_accepts(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n, char **reason);
gboolean weir_native_conv_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason);

/* Registers the native implementations "weir" of Gemm, MatMul and Conv
 * (core/kernels/native-weir.c; called by weir_init after
 * weir_native_register_builtin). */
void weir_native_register_weir(void);

/* Registers "weir" for ConvGradFilter and ConvGradInput (f32): the
 * backward convolutions on Weir's GEMM, depthwise ones direct
 * (core/kernels/conv-grad.c). */
void weir_native_register_conv_grad(void);

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

/* Registers the native implementation "depthwise" of Conv (called by
 * weir_native_register_builtin). */
void weir_native_register_depthwise(void);

/* Registers Weir's Winograd convolution F(4x4, 3x3), the native
 * implementation "winograd" of Conv (core/kernels/winograd.c; called by
 * weir_native_register_builtin). */
void weir_native_register_winograd(void);

/* Registers Weir's direct convolution for few input channels, the native
 * implementation "stem" of Conv (core/kernels/stem.c; called by
 * weir_native_register_builtin). */
void weir_native_register_stem(void);

/* The helper text defining
 *   static int weir_stem_f32(const float *x, const float *w,
 *       const float *b, float *y, const float *r, int64_t n, int64_t c,
 *       int64_t h, int64_t wd, int64_t m, int64_t kh, int64_t kw,
 *       int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh,
 *       int64_t dw, int64_t ph, int64_t pw, int act, float lo, float hi);
 * y = act(conv(x, w) + b + r) in NCHW, one group, on vectors of vl lanes
 * of isa (the activation helper weir_act_v<vl> must precede it); returns
 * 1 when its buffers cannot be allocated. (transfer full) */
char *weir_kernel_stem_text(WeirHwIsa isa, guint vl);

/* Registers Weir's MaxPool (f32, u8, i8) and GlobalAveragePool (f32)
 * kernels (implementation "weir" of both, core/kernels/pool.c). */
void weir_native_register_pool(void);

/* Registers Weir's row kernels of Softmax, LogSoftmax and
 * LayerNormalization (implementation "weir" of the three, f32 and f64,
 * core/kernels/norm.c). */
void weir_native_register_norm(void);
/* BatchNormGrad, "weir" (core/kernels/batchnorm-grad.c; registered by
 * weir_native_register_norm). */
void weir_native_register_batchnorm_grad(void);
/* BatchNormStats, "weir" (core/kernels/batchnorm-stats.c; registered by
 * weir_native_register_norm). */
void weir_native_register_batchnorm_stats(void);

/* Registers the one-parallel-region implementations "weir" of the
 * multi-tensor operators OptimizerUpdate and SumAll
 * (core/kernels/multi-tensor.c, ir/weir-ops-update.h). */
void weir_native_register_multi_tensor(void);

/* Registers the implementation "weir" of SumTo, ReduceSum and ReduceMean:
 * a sum over the axes of an [s0, k0, s, k1] view in storage order
 * (core/kernels/reduce.c, weir_native_reduce_layout). */
void weir_native_register_reduce(void);

/* ------------------------------------------------------------ int8 GEMM
 * core/kernels/gemm-int8.c (the helper's text: gemm-int8-helper.c): the
 * native implementation "weir" of MatMulInteger, QLinearMatMul,
 * ConvInteger, QLinearConv and Weir's QLinearMatMulBias (docs/native.md,
 * "Weir's int8 GEMM"). */

typedef enum {
  WEIR_QGEMM_PORTABLE = 0, /* int32 multiply-adds in C */
  WEIR_QGEMM_AVX2 = 1,     /* operands widened to int16, vpmaddwd */
  WEIR_QGEMM_VNNI = 2,     /* AVX-512 VNNI vpdpbusd (u8 x s8) */
} WeirQGemmPath;

typedef struct {
  WeirQGemmPath path;
  guint mr, nv;  /* microtile: mr rows x nv vectors of int32 */
  gint64 l2;     /* bytes of L2 the blocks are sized for */
  guint threads; /* the most threads of one call */
} WeirQGemmParams;

/* The path and blocking for the machine described by hw (borrowed; NULL:
 * portable): VNNI when hw->int8_dot, AVX2 from AVX2 up, else portable. */
void weir_kernel_qgemm_params(const WeirHwProfile *hw, WeirQGemmParams *out);

/* "avx512-vnni", "avx2", "portable". (borrowed) */
const char *weir_kernel_qgemm_path_name(WeirQGemmPath path);

/* The helper text defining weir_qgemm_args, weir_qgemm_patches and
 *   static int weir_qgemm(const weir_qgemm_args *p, void *work);
 * for q (docs in gemm-int8-helper.c). (transfer full) */
char *weir_kernel_qgemm_text(const WeirQGemmParams *q);

/* A bound of the work space of weir_qgemm for an m x n x k product
 * (borrowed expressions). (transfer full) */
WeirExpr *weir_kernel_qgemm_work_bytes(const WeirQGemmParams *q,
                                       const WeirExpr *m, const WeirExpr *n,
                                       const WeirExpr *k);

/* Registers "weir" of the five integer products (called by
 * weir_native_register_builtin). */
void weir_native_register_qgemm(void);

/* ------------------------------------------------------------ bf16 GEMM
 * core/kernels/gemm-bf16.c (the helper's text: gemm-bf16-helper.c): the
 * native implementation "weir-bf16" of MatMul, Gemm and Conv whose
 * operands are bf16 (docs/native.md, "Weir's bf16 GEMM"). */

/* The implementation's name. */
#define WEIR_BGEMM_IMPL "weir-bf16"

typedef enum {
  WEIR_BGEMM_PORTABLE = 0, /* f32 multiply-adds in C */
  WEIR_BGEMM_AVX512 = 1,   /* AVX-512 BF16 vdpbf16ps */
} WeirBGemmPath;

typedef struct {
  WeirBGemmPath path;
  guint mr, nv;  /* microtile: mr rows x nv vectors of 16 f32 */
  gint64 l2;     /* bytes of L2 the blocks are sized for */
  guint threads; /* the most threads of one call */
} WeirBGemmParams;

/* The path and blocking for the machine described by hw (borrowed; NULL:
 * portable): AVX-512 BF16 when hw->bf16_dot, else portable. */
void weir_kernel_bgemm_params(const WeirHwProfile *hw, WeirBGemmParams *out);

/* "avx512-bf16", "portable". (borrowed) */
const char *weir_kernel_bgemm_path_name(WeirBGemmPath path);

/* The helper text defining weir_bgemm_args, weir_bgemm_patches and
 *   static int weir_bgemm(const weir_bgemm_args *p, void *work);
 * for q (docs in gemm-bf16-helper.c). (transfer full) */
char *weir_kernel_bgemm_text(const WeirBGemmParams *q);

/* A bound of the work space of weir_bgemm for depth k (borrowed).
 * (transfer full) */
WeirExpr *weir_kernel_bgemm_work_bytes(const WeirBGemmParams *q,
                                       const WeirExpr *k);

/* Registers "weir-bf16" of MatMul, Gemm and Conv (called by
 * weir_native_register_builtin). */
void weir_native_register_bgemm(void);

/* ------------------------------------------------------------ epilogue
 * core/kernels/epilogue.c: what Weir's kernels (depthwise, the GEMM of
 * "weir") apply in their store, shared by their emitters. */

/* An epilogue (ir/lower/weir-expand.h) a kernel applies in its store:
 * y = act(x * scale + r + b), r the extra input `residual` and b the
 * extra input `colbias` (-1: none). */
typedef struct {
  int act;       /* 0 none, 1 clip to [lo, hi] (ReLU, ReLU6), 2 sigmoid,
                    3 SiLU (x * sigmoid(x)), 4 HardSwish, 5 GELU
                    (x / 2 * (1 + erf(x / sqrt(2)))) */
  double lo, hi; /* clip bounds; -G_MAXDOUBLE / G_MAXDOUBLE: none */
  int residual;
  /* Gemm and MatMul only: the residual is one row, the same for every row
   * of the output (a linear layer's bias: shape [.., 1, N] or [N],
   * broadcast), applied with a row stride of 0 */
  gboolean per_column;
  /* Gemm and MatMul only: a second extra input, one row broadcast over
   * the rows as above, beside a residual of the output's shape (a linear
   * layer's bias and a skip connection); -1: none.  The classifier puts
   * the second extra input it meets here; weir_kernel_epilogue_of swaps
   * it with `residual` when that one is the row. */
  int colbias;
  /* Gemm and MatMul only: the node's result times this literal first (the
   * attention scores divided by sqrt(d)); 1: none */
  double scale;
} WeirEpilogueKind;

/* Recognizes n's epilogue code (attributes "epilogue", "epilogue_conns"):
 * an activation of the list above applied to the node's result (or the
 * result times a literal) or to its sum with one or two extra inputs,
 * written as the pure expansions and the ONNX importer write them
 * (max/min with literal bounds, 1 / (1 + exp(-x)), x * sigmoid(x) through
 * a local, x * max(0, min(1, x / 6 + 0.5)) or with x times 1/6 as ONNX's
 * HardSigmoid writes it, x * 0.5 * (1 + erf(x / sqrt(2))) in any order; a
 * clip of a clip is one clip).
 * FALSE for anything else. */
gboolean weir_kernel_epilogue_classify(const WeirNode *n,
                                       WeirEpilogueKind *out);

/* n's epilogue as a kernel applies it: recognized by
 * weir_kernel_epilogue_classify, where an extra input that is a scalar
 * constant (a transient f32 or f64 container of one element with initial
 * data: an exporter's Constant) counts as a literal; its residual (if any)
 * an f32 container of the output's shape stored row-major, or, for Gemm
 * and MatMul, one row of the output's last dimension broadcast over the
 * others (k->per_column), or both (k->colbias the row); a scale only for
 * Gemm and MatMul. */
gboolean weir_kernel_epilogue_of(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n, WeirEpilogueKind *k);

/* WeirNativeImpl.takes_epilogue of the kernels: the output is f32 and
 * weir_kernel_epilogue_of holds. */
gboolean weir_kernel_takes_epilogue(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n);

/* The node's epilogue for the emitter of `kernel` (its name in the error):
 * *k (act 0 and residual -1 without one), *r the C pointer of the residual
 * ("NULL" without one; borrowed from e), *lo and *hi the clip bounds as
 * float literals (owned).  FALSE, naming the node, for an epilogue the
 * kernels do not apply. */
gboolean weir_kernel_epilogue_use(WeirNativeEmit *e, const char *kernel,
                                  WeirEpilogueKind *k, const char **r,
                                  char **lo, char **hi, GError **error);

/* " + residual + clip", " + SiLU", "" ...: for the call's comment. */
const char *weir_kernel_epilogue_what(const WeirEpilogueKind *k);

/* The target attribute of the functions written for isa
 * ("__attribute__((target(\"avx512f,fma\")))"; "" for generic), so they
 * compile to that ISA whatever the flags say. */
const char *weir_kernel_isa_target(WeirHwIsa isa);

/* The helper text of the activations on vectors of vl f32 lanes for isa:
 *   typedef float weir_act_v<vl> (GCC vector), weir_act_load<vl>(p),
 *   weir_act_set<vl>(x), weir_act_apply<vl>(v, act, lo, hi)
 * (act as in WeirEpilogueKind; sigmoid and SiLU through a polynomial exp).
 * (transfer full) */
char *weir_kernel_act_text(WeirHwIsa isa, guint vl);

/* The helper text of weir_act1_<f32|f64>(v, act, lo, hi), the same on one
 * element of dtype t (libm's exp). (transfer full) */
char *weir_kernel_act_scalar_text(WeirDType t);

/* Records the helpers "weir_act1_<dtype>" and, when vl > 0,
 * "weir_act_v<vl>" (printed before "weir_dwconv2d" and "weir_gemm" by
 * name). */
void weir_kernel_act_record(WeirNativeEmit *e, WeirHwIsa isa, guint vl,
                            WeirDType t);

G_END_DECLS

#endif
