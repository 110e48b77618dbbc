/* depthwise.c — Weir's depthwise convolution as C text (weir-kernels.h),
 * the native implementation "depthwise" of Conv (docs/native.md).
 *
 * Three kernels, in one helper:
 *  - Plane (AVX-512 only, weir_dwp_*; the default for 3x3 at stride 1 on
 *    output rows of 5-8 columns as wide as the input or of 9-128, and at
 *    stride 2 on rows of 5-8 columns half as wide as the input or of
 *    9-16): vectors of 16 output columns of one NCHW plane (or of 16 / ow
 *    whole rows, at stride 2 two), every tap a masked load straight from
 *    the input plane (or a permutation of two loaded rows), no
 *    transposition; described at its text.
 *  - Channel-blocked (the default elsewhere, weir_dwc_*): VL channels per
 *    vector.
 *    Per (image, block of VL channels, band of output rows) the input rows
 *    are transposed once each into a ring of KH padded rows laid out
 *    [column][channel] (VL x VL tiles transposed in registers by shuffles;
 *    partial tiles through masked loads and stores), every output column is
 *    one vector of VL channels (4 columns at a time sharing each weight
 *    vector), and the output row is transposed back after the epilogue.
 *    Any kernel size, strides and horizontal dilation; 3x3 and 5x5 at
 *    stride 1 and 2 specialized.  Small planes (7x7, 14x14) fill whole
 *    vectors, which the row kernel cannot.
 *  - Row-vectorized (weir_dw_plane*; the node attribute depthwise_vl
 *    selects it, and it takes vertical dilation): vectors along the
 *    output width, described below.
 *
 * Conventions of this file:
 *  - The emitted text is a template: "@VL@" the lanes of one vector (f32,
 *    from the hardware profile's ISA), "@VB@" its bytes, "@TGT@" the target
 *    attribute of the ISA's functions ("" for generic), "@EVEN@"/"@ODD@"
 *    the lane lists that split two vectors into their even and odd
 *    elements (stride 2).  The plane functions are written once and
 *    instantiated for two widths: the ISA's vector and half of it, chosen
 *    per call (narrow images waste fewer lanes with the half).
 *  - Vectors are GCC vector extensions (also understood by clang); the
 *    functions carry the ISA's target attribute, so they compile to that
 *    ISA whatever the flags say.  Loads and stores go through memcpy (no
 *    alignment assumed).
 *  - Padding: an output block of VL columns whose input columns all lie in
 *    the image row is computed straight from the row (the interior);
 *    other blocks (the borders and the last, partial block) first copy
 *    the row's span into a small buffer with zeros outside the image.  Rows
 *    of the kernel outside the image are skipped.
 *  - The epilogue (an activation, a residual added before it) is applied to
 *    the accumulators before the store: the output is written once.
 *  - Each output sums bias, then the taps in row-major order, as the
 *    reference interpreter's accumulation does (FMA contraction aside).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-code.h"
#include "weir-expand.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-ops-linalg.h"
#include "weir-ops.h"

/* ------------------------------------------------------------- template */

/* The widest output rows the plane kernel takes at stride 1 and 2
 * (columns, at most 128: 8 chunks of 16); wider rows go to the
 * channel-blocked kernel, as fast or faster there with the caches cold
 * (docs/performance.md, mobile14l). */
#define WEIR_DWP_MAX_OW1 128
#define WEIR_DWP_MAX_OW2 16

static const char dw_head[] =
    "/* Weir's depthwise convolution (docs/native.md, implementation\n"
    " * \"depthwise\") for @ISA@: vectors of @VL@ channels (the default), or\n"
    " * of @VL@ floats (or @VLH@) along the output width; 3x3 and 5x5 kernels\n"
    " * at stride 1 and 2 specialized, others through a generic instance or\n"
    " * a scalar loop nest. */\n";

/* Per width (@VL@ replaced by the lanes of that width). */
static const char dw_width[] =
    "/* acc + the K taps of one kernel row, xr the input row at the block's\n"
    " * first input column (stride 2: two loads split into even and odd lanes) "
    "*/\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_dw_taps@VL@(const int K, const int S, const float *xr,\n"
    "                 const weir_act_v@VL@ *wr, weir_act_v@VL@ acc) {\n"
    "  if (S == 1) {\n"
    "#pragma GCC unroll 5\n"
    "    for (int j = 0; j < K; j++)\n"
    "      acc += wr[j] * weir_act_load@VL@(xr + j);\n"
    "    return acc;\n"
    "  }\n"
    "#pragma GCC unroll 3\n"
    "  for (int j = 0; j < K; j += 2) {\n"
    "    const weir_act_v@VL@ u = weir_act_load@VL@(xr + j),\n"
    "                       v = weir_act_load@VL@(xr + j + @VL@);\n"
    "    acc += wr[j] * __builtin_shufflevector(u, v, @EVEN@);\n"
    "    if (j + 1 < K)\n"
    "      acc += wr[j + 1] * __builtin_shufflevector(u, v, @ODD@);\n"
    "  }\n"
    "  return acc;\n"
    "}\n"
    "/* the epilogue and the store of nq (<= @VL@) outputs at yr; rr: the\n"
    " * residual at the same place or NULL */\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dw_store@VL@(float *yr, const float *rr, weir_act_v@VL@ acc, int64_t "
    "nq,\n"
    "                  int act, float lo, float hi) {\n"
    "  if (nq == @VL@) {\n"
    "    if (rr)\n"
    "      acc += weir_act_load@VL@(rr);\n"
    "    acc = weir_act_apply@VL@(acc, act, lo, hi);\n"
    "    memcpy(yr, &acc, sizeof acc);\n"
    "    return;\n"
    "  }\n"
    "  float o[@VL@];\n"
    "  if (rr) {\n"
    "    float t[@VL@] = {0};\n"
    "    memcpy(t, rr, (size_t)nq * sizeof(float));\n"
    "    acc += weir_act_load@VL@(t);\n"
    "  }\n"
    "  acc = weir_act_apply@VL@(acc, act, lo, hi);\n"
    "  memcpy(o, &acc, sizeof acc);\n"
    "  memcpy(yr, o, (size_t)nq * sizeof(float));\n"
    "}\n"
    "/* One channel plane: K x K kernel, stride S (constants after inlining),\n"
    " * dilation 1, @VL@ output columns per block.  rc: the residual plane or\n"
    " * NULL.  The input rows a block row needs are copied once each into a "
    "ring\n"
    " * of K padded rows (zeros in the padding and past the image), so every\n"
    " * block reads straight from them; planes whose padded rows do not fit "
    "the\n"
    " * ring (rows of thousands of columns) take the blocks one by one, the\n"
    " * interior from the image and the borders through a zero-padded buffer. "
    "*/\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dw_plane@VL@(const int K, const int S, const float *restrict xc,\n"
    "                 const float *restrict wc, float bias,\n"
    "                 float *restrict yc, const float *restrict rc,\n"
    "                 int64_t h, int64_t wd, int64_t oh, int64_t ow,\n"
    "                 int64_t ph, int64_t pw, int act, float lo, float hi) {\n"
    "  /* input columns one block reads: [base, base + span) */\n"
    "  const int64_t span = S == 1 ? @VL@ + K - 1 : 2 * @VL@ + 2 * ((K - 1) / "
    "2);\n"
    "  weir_act_v@VL@ wv[25];\n"
    "#pragma GCC unroll 25\n"
    "  for (int i = 0; i < K * K; i++)\n"
    "    wv[i] = weir_act_set@VL@(wc[i]);\n"
    "  /* padded row length: what the last block reads */\n"
    "  const int64_t nb = (ow + @VL@ - 1) / @VL@;\n"
    "  const int64_t len = (nb - 1) * @VL@ * S + span;\n"
    "  if (ow > 0 && pw >= 0 && len * K <= 8192) {\n"
    "    float ring[8192];\n"
    "    /* the image's columns [0, cw) go to [pw, pw + cw) of a row */\n"
    "    int64_t cw = len - pw < wd ? len - pw : wd;\n"
    "    cw = cw > 0 ? cw : 0;\n"
    "    for (int sl = 0; sl < K; sl++) {\n"
    "      float *r = ring + sl * len;\n"
    "      for (int64_t t = 0; t < pw && t < len; t++)\n"
    "        r[t] = 0.0f;\n"
    "      for (int64_t t = pw + cw; t < len; t++)\n"
    "        r[t] = 0.0f;\n"
    "    }\n"
    "    int64_t loaded = -1; /* the last input row copied (rows ascend) */\n"
    "    for (int64_t p = 0; p < oh; p++) {\n"
    "      const int64_t ih0 = p * S - ph;\n"
    "      for (int i = 0; i < K; i++) {\n"
    "        const int64_t ih = ih0 + i;\n"
    "        if (ih < 0 || ih >= h || ih <= loaded)\n"
    "          continue;\n"
    "        memcpy(ring + (ih % K) * len + pw, xc + ih * wd,\n"
    "               (size_t)cw * sizeof(float));\n"
    "        loaded = ih;\n"
    "      }\n"
    "      for (int64_t q0 = 0; q0 < ow; q0 += @VL@) {\n"
    "        weir_act_v@VL@ acc = weir_act_set@VL@(bias);\n"
    "#pragma GCC unroll 5\n"
    "        for (int i = 0; i < K; i++) {\n"
    "          const int64_t ih = ih0 + i;\n"
    "          if (ih < 0 || ih >= h)\n"
    "            continue;\n"
    "          acc = weir_dw_taps@VL@(K, S, ring + (ih % K) * len + q0 * S,\n"
    "                                 wv + i * K, acc);\n"
    "        }\n"
    "        const int64_t nq = ow - q0 < @VL@ ? ow - q0 : @VL@;\n"
    "        weir_dw_store@VL@(yc + p * ow + q0, rc ? rc + p * ow + q0 : "
    "NULL,\n"
    "                          acc, nq, act, lo, hi);\n"
    "      }\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  float buf[2 * @VL@ + 4];\n"
    "  /* interior blocks: q0 in [qa, qz], base >= 0 and base + span <= wd */\n"
    "  const int64_t qa = (pw + S - 1) / S;\n"
    "  const int64_t qz = wd + pw - span >= 0 ? (wd + pw - span) / S : -1;\n"
    "  for (int64_t p = 0; p < oh; p++) {\n"
    "    const int64_t ih0 = p * S - ph;\n"
    "    for (int64_t q0 = 0; q0 < ow; q0 += @VL@) {\n"
    "      const int64_t nq = ow - q0 < @VL@ ? ow - q0 : @VL@;\n"
    "      const int64_t base = q0 * S - pw;\n"
    "      const int inner = nq == @VL@ && q0 >= qa && q0 <= qz;\n"
    "      weir_act_v@VL@ acc = weir_act_set@VL@(bias);\n"
    "#pragma GCC unroll 5\n"
    "      for (int i = 0; i < K; i++) {\n"
    "        const int64_t ih = ih0 + i;\n"
    "        if (ih < 0 || ih >= h)\n"
    "          continue;\n"
    "        const float *xr;\n"
    "        if (inner) {\n"
    "          xr = xc + ih * wd + base;\n"
    "        } else {\n"
    "          /* the span of the row, zeros outside the image */\n"
    "          int64_t a = base < 0 ? -base : 0;\n"
    "          int64_t z = wd - base < span ? wd - base : span;\n"
    "          a = a < span ? a : span;\n"
    "          z = z > a ? z : a;\n"
    "          for (int64_t t = 0; t < a; t++)\n"
    "            buf[t] = 0.0f;\n"
    "          if (z > a)\n"
    "            memcpy(buf + a, xc + ih * wd + base + a,\n"
    "                   (size_t)(z - a) * sizeof(float));\n"
    "          for (int64_t t = z; t < span; t++)\n"
    "            buf[t] = 0.0f;\n"
    "          xr = buf;\n"
    "        }\n"
    "        acc = weir_dw_taps@VL@(K, S, xr, wv + i * K, acc);\n"
    "      }\n"
    "      weir_dw_store@VL@(yc + p * ow + q0, rc ? rc + p * ow + q0 : NULL, "
    "acc,\n"
    "                        nq, act, lo, hi);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#define WEIR_DW_PLANE_ARGS@VL@                                        \\\n"
    "  const float *restrict xc, const float *restrict wc, float bias,     \\\n"
    "      float *restrict yc, const float *restrict rc, int64_t h,        \\\n"
    "      int64_t wd, int64_t oh, int64_t ow, int64_t ph, int64_t pw,     \\\n"
    "      int act, float lo, float hi\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dw_k3s1_@VL@(WEIR_DW_PLANE_ARGS@VL@) {\n"
    "  weir_dw_plane@VL@(3, 1, xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, "
    "act, lo, hi);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dw_k3s2_@VL@(WEIR_DW_PLANE_ARGS@VL@) {\n"
    "  weir_dw_plane@VL@(3, 2, xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, "
    "act, lo, hi);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dw_k5s1_@VL@(WEIR_DW_PLANE_ARGS@VL@) {\n"
    "  weir_dw_plane@VL@(5, 1, xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, "
    "act, lo, hi);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dw_k5s2_@VL@(WEIR_DW_PLANE_ARGS@VL@) {\n"
    "  weir_dw_plane@VL@(5, 2, xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, "
    "act, lo, hi);\n"
    "}\n"
    "/* The specialized plane for k x k at stride s and width @VL@, or 0. */\n"
    "static int weir_dw_fast@VL@(int64_t k, int64_t s, "
    "WEIR_DW_PLANE_ARGS@VL@) {\n"
    "  if (k == 3 && s == 1)\n"
    "    weir_dw_k3s1_@VL@(xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, act, "
    "lo, hi);\n"
    "  else if (k == 3 && s == 2)\n"
    "    weir_dw_k3s2_@VL@(xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, act, "
    "lo, hi);\n"
    "  else if (k == 5 && s == 1)\n"
    "    weir_dw_k5s1_@VL@(xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, act, "
    "lo, hi);\n"
    "  else if (k == 5 && s == 2)\n"
    "    weir_dw_k5s2_@VL@(xc, wc, bias, yc, rc, h, wd, oh, ow, ph, pw, act, "
    "lo, hi);\n"
    "  else\n"
    "    return 0;\n"
    "  return 1;\n"
    "}\n";

/* The partial rows of the channel-blocked kernel, per ISA: masked loads
 * and stores (nothing past s + m read, nothing past d + m written), so
 * tails cost no library call. */
static const char dw_partial_avx512[] =
    "#include <immintrin.h>\n"
    "/* d[u] = s[u] for u < m, 0 for m <= u < @VL@; d[u] = s[u] for u < m */\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwc_ldn(float *restrict d, const float *restrict s, int64_t m) {\n"
    "  _mm512_storeu_ps(d, _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1u), "
    "s));\n"
    "}\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwc_stn(float *restrict d, const float *restrict s, int64_t m) {\n"
    "  _mm512_mask_storeu_ps(d, (__mmask16)((1u << m) - 1u), "
    "_mm512_loadu_ps(s));\n"
    "}\n";

static const char dw_partial_avx2[] =
    "#include <immintrin.h>\n"
    "/* d[u] = s[u] for u < m, 0 for m <= u < @VL@; d[u] = s[u] for u < m */\n"
    "static inline __attribute__((always_inline)) @TGT@ __m256i\n"
    "weir_dwc_mask(int64_t m) {\n"
    "  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m),\n"
    "                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));\n"
    "}\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwc_ldn(float *restrict d, const float *restrict s, int64_t m) {\n"
    "  _mm256_storeu_ps(d, _mm256_maskload_ps(s, weir_dwc_mask(m)));\n"
    "}\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwc_stn(float *restrict d, const float *restrict s, int64_t m) {\n"
    "  _mm256_maskstore_ps(d, weir_dwc_mask(m), _mm256_loadu_ps(s));\n"
    "}\n";

static const char dw_partial_generic[] =
    "/* d[u] = s[u] for u < m, 0 for m <= u < @VL@; d[u] = s[u] for u < m */\n"
    "static inline void weir_dwc_ldn(float *restrict d, const float *restrict "
    "s,\n"
    "                                int64_t m) {\n"
    "  for (int u = 0; u < @VL@; u++)\n"
    "    d[u] = u < m ? s[u] : 0.0f;\n"
    "}\n"
    "static inline void weir_dwc_stn(float *restrict d, const float *restrict "
    "s,\n"
    "                                int64_t m) {\n"
    "  for (int u = 0; u < @VL@; u++)\n"
    "    if (u < m)\n"
    "      d[u] = s[u];\n"
    "}\n";

static const char dw_chan[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* Channel-blocked depthwise kernel: @VL@ channels per vector (the ISA's\n"
    " * width), for any kernel size and strides with no vertical dilation.\n"
    " * Per (image, block of @VL@ channels, band of output rows): each input\n"
    " * row the band needs is transposed once into a ring of KH rows laid out\n"
    " * [padded column][channel] (zeros in the padding and in the lanes past\n"
    " * the last channel); each output row accumulates, per output column,\n"
    " * bias then the taps in row-major order as vectors over the channels (4\n"
    " * columns at a time, each weight vector used four times), applies the\n"
    " * epilogue to the vectors and is transposed back to the NCHW planes. */\n"
    "typedef struct {\n"
    "  int64_t c, h, wd, oh, ow, ph, pw;\n"
    "  int64_t wp; /* the padded row: image columns [-pw, wp - pw) */\n"
    "  int act;\n"
    "  float lo, hi;\n"
    "} weir_dwc_geo;\n"
    "/* dst[t][l] = x[l][ih][t - pw] for the nc planes at xc (plane stride\n"
    " * hw), zero outside the image and for l >= nc; dst holds wp + @VL@\n"
    " * columns (the last tile may write past wp) */\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwc_pack(const float *restrict xc, int64_t hw, int nc, int64_t ih,\n"
    "              const weir_dwc_geo *g, float *restrict dst) {\n"
    "  const int64_t a = g->pw < g->wp ? g->pw : g->wp;\n"
    "  int64_t cw = g->wp - a < g->wd ? g->wp - a : g->wd;\n"
    "  cw = cw > 0 ? cw : 0;\n"
    "  memset(dst, 0, (size_t)a * @VL@ * sizeof(float));\n"
    "  float *restrict d = dst + a * @VL@;\n"
    "  const float *restrict s = xc + ih * g->wd;\n"
    "  for (int64_t t = 0; t < cw; t += @VL@) {\n"
    "    const int64_t m = cw - t < @VL@ ? cw - t : @VL@;\n"
    "    if (m == @VL@ && nc == @VL@) {\n"
    "      weir_dwc_tr(s + t, hw, d + t * @VL@, @VL@);\n"
    "      continue;\n"
    "    }\n"
    "    float tile[@VL@ * @VL@];\n"
    "    for (int l = 0; l < @VL@; l++)\n"
    "      weir_dwc_ldn(tile + l * @VL@, s + l * hw + t, l < nc ? m : 0);\n"
    "    weir_dwc_tr(tile, @VL@, d + t * @VL@, @VL@);\n"
    "  }\n"
    "  memset(dst + (a + cw) * @VL@, 0,\n"
    "         (size_t)(g->wp - a - cw) * @VL@ * sizeof(float));\n"
    "}\n"
    "/* one task: output rows [p0, p1) of image `in`, channels [c0, c0 + nc);\n"
    " * KH x KW kernel, strides SH, SW, horizontal dilation DW (constants "
    "when\n"
    " * inlined into a specialized function); ring: KH * (wp + @VL@) * @VL@\n"
    " * floats, ob: (ow + @VL@) * @VL@ */\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwc_task(const int64_t KH, const int64_t KW, const int64_t SH,\n"
    "              const int64_t SW, const int64_t DW, const weir_dwc_geo *g,\n"
    "              const float *restrict xc, const float *restrict w,\n"
    "              const float *restrict b, float *restrict yc,\n"
    "              const float *restrict rc, int64_t c0, int nc, int64_t p0,\n"
    "              int64_t p1, float *restrict ring, float *restrict ob) {\n"
    "  const int64_t hw = g->h * g->wd, ohw = g->oh * g->ow, ow = g->ow;\n"
    "  const int64_t ld = (g->wp + @VL@) * @VL@;\n"
    "  weir_act_v@VL@ wt[64];\n"
    "  for (int64_t i = 0; i < KH * KW; i++) {\n"
    "    float t[@VL@] = {0};\n"
    "    for (int l = 0; l < nc; l++)\n"
    "      t[l] = w[(c0 + l) * KH * KW + i];\n"
    "    wt[i] = weir_act_load@VL@(t);\n"
    "  }\n"
    "  weir_act_v@VL@ bias;\n"
    "  {\n"
    "    float t[@VL@] = {0};\n"
    "    for (int l = 0; l < nc && b; l++)\n"
    "      t[l] = b[c0 + l];\n"
    "    bias = weir_act_load@VL@(t);\n"
    "  }\n"
    "  int64_t loaded = -1; /* the last input row packed (rows ascend) */\n"
    "  /* the output rows of the nc planes are prefetched for writing\n"
    "   * ahead of their store (pf: the next row to prefetch), at least 64\n"
    "   * columns ahead, and the next block's weights: in a network both\n"
    "   * are usually out of the caches, and the store of a row writes nc\n"
    "   * short pieces of lines far apart, whose misses the hardware\n"
    "   * prefetchers do not foresee; rows of 96 columns or more (ahead -1:\n"
    "   * none) they follow plane by plane, and the prefetches only cost */\n"
    "  const int64_t ahead =\n"
    "      ow >= 96 ? -1 : ow >= 64 ? 1 : (64 + ow - 1) / ow;\n"
    "  int64_t pf = p0;\n"
    "  if (c0 + 2 * @VL@ <= g->c)\n"
    "    for (int64_t i = 0; i < @VL@ * KH * KW; i += 16)\n"
    "      __builtin_prefetch(w + (c0 + @VL@) * KH * KW + i, 0, 3);\n"
    "  for (int64_t p = p0; p < p1; p++) {\n"
    "    for (; pf < p1 && pf <= p + ahead; pf++)\n"
    "      for (int l = 0; l < nc; l++) {\n"
    "        float *yl = yc + l * ohw + pf * ow;\n"
    "        for (int64_t i = 0; i < ow; i += 16)\n"
    "          __builtin_prefetch(yl + i, 1, 3);\n"
    "        __builtin_prefetch(yl + ow - 1, 1, 3);\n"
    "      }\n"
    "    const int64_t ih0 = p * SH - g->ph;\n"
    "    const float *rows[64];\n"
    "    for (int64_t i = 0; i < KH; i++) {\n"
    "      const int64_t ih = ih0 + i;\n"
    "      rows[i] = NULL;\n"
    "      if (ih < 0 || ih >= g->h)\n"
    "        continue;\n"
    "      float *slot = ring + (ih % KH) * ld;\n"
    "      if (ih > loaded) {\n"
    "        weir_dwc_pack(xc, hw, nc, ih, g, slot);\n"
    "        loaded = ih;\n"
    "      }\n"
    "      rows[i] = slot;\n"
    "    }\n"
    "    int64_t q = 0;\n"
    "    for (; q + 4 <= ow; q += 4) {\n"
    "      weir_act_v@VL@ a0 = bias, a1 = bias, a2 = bias, a3 = bias;\n"
    "#pragma GCC unroll 5\n"
    "      for (int64_t i = 0; i < KH; i++) {\n"
    "        const float *r = rows[i];\n"
    "        if (!r)\n"
    "          continue;\n"
    "        r += q * SW * @VL@;\n"
    "#pragma GCC unroll 5\n"
    "        for (int64_t j = 0; j < KW; j++) {\n"
    "          const weir_act_v@VL@ wv = wt[i * KW + j];\n"
    "          const float *rj = r + j * DW * @VL@;\n"
    "          a0 += wv * weir_act_load@VL@(rj);\n"
    "          a1 += wv * weir_act_load@VL@(rj + SW * @VL@);\n"
    "          a2 += wv * weir_act_load@VL@(rj + 2 * SW * @VL@);\n"
    "          a3 += wv * weir_act_load@VL@(rj + 3 * SW * @VL@);\n"
    "        }\n"
    "      }\n"
    "      memcpy(ob + q * @VL@, &a0, sizeof a0);\n"
    "      memcpy(ob + (q + 1) * @VL@, &a1, sizeof a1);\n"
    "      memcpy(ob + (q + 2) * @VL@, &a2, sizeof a2);\n"
    "      memcpy(ob + (q + 3) * @VL@, &a3, sizeof a3);\n"
    "    }\n"
    "    for (; q < ow; q++) {\n"
    "      weir_act_v@VL@ a0 = bias;\n"
    "#pragma GCC unroll 5\n"
    "      for (int64_t i = 0; i < KH; i++) {\n"
    "        const float *r = rows[i];\n"
    "        if (!r)\n"
    "          continue;\n"
    "        r += q * SW * @VL@;\n"
    "#pragma GCC unroll 5\n"
    "        for (int64_t j = 0; j < KW; j++)\n"
    "          a0 += wt[i * KW + j] * weir_act_load@VL@(r + j * DW * @VL@);\n"
    "      }\n"
    "      memcpy(ob + q * @VL@, &a0, sizeof a0);\n"
    "    }\n"
    "    /* the epilogue, then the transposition into the planes */\n"
    "    if (rc)\n"
    "      for (int l = 0; l < nc; l++)\n"
    "        for (int64_t q2 = 0; q2 < ow; q2++)\n"
    "          ob[q2 * @VL@ + l] += rc[l * ohw + p * ow + q2];\n"
    "    if (g->act)\n"
    "      for (int64_t q2 = 0; q2 < ow; q2++) {\n"
    "        weir_act_v@VL@ v = weir_act_load@VL@(ob + q2 * @VL@);\n"
    "        v = weir_act_apply@VL@(v, g->act, g->lo, g->hi);\n"
    "        memcpy(ob + q2 * @VL@, &v, sizeof v);\n"
    "      }\n"
    "    for (int64_t q2 = 0; q2 < ow; q2 += @VL@) {\n"
    "      const int64_t m = ow - q2 < @VL@ ? ow - q2 : @VL@;\n"
    "      float *yr = yc + p * ow + q2;\n"
    "      if (m == @VL@ && nc == @VL@) {\n"
    "        weir_dwc_tr(ob + q2 * @VL@, @VL@, yr, ohw);\n"
    "        continue;\n"
    "      }\n"
    "      float tile[@VL@ * @VL@];\n"
    "      weir_dwc_tr(ob + q2 * @VL@, @VL@, tile, @VL@);\n"
    "      for (int l = 0; l < nc; l++)\n"
    "        weir_dwc_stn(yr + l * ohw, tile + l * @VL@, m);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#define WEIR_DWC_TASK_ARGS                                                "
    "   \\\n"
    "  const weir_dwc_geo *g, const float *restrict xc, const float *restrict "
    "w, \\\n"
    "      const float *restrict b, float *restrict yc, const float *restrict "
    "rc, \\\n"
    "      int64_t c0, int nc, int64_t p0, int64_t p1, float *restrict ring,   "
    "   \\\n"
    "      float *restrict ob\n"
    "#define WEIR_DWC_TASK_PASS g, xc, w, b, yc, rc, c0, nc, p0, p1, ring, ob\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwc_k3s1(WEIR_DWC_TASK_ARGS) {\n"
    "  weir_dwc_task(3, 3, 1, 1, 1, WEIR_DWC_TASK_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwc_k3s2(WEIR_DWC_TASK_ARGS) {\n"
    "  weir_dwc_task(3, 3, 2, 2, 1, WEIR_DWC_TASK_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwc_k5s1(WEIR_DWC_TASK_ARGS) {\n"
    "  weir_dwc_task(5, 5, 1, 1, 1, WEIR_DWC_TASK_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwc_k5s2(WEIR_DWC_TASK_ARGS) {\n"
    "  weir_dwc_task(5, 5, 2, 2, 1, WEIR_DWC_TASK_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwc_any(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dw,\n"
    "             WEIR_DWC_TASK_ARGS) {\n"
    "  weir_dwc_task(kh, kw, sh, sw, dw, WEIR_DWC_TASK_PASS);\n"
    "}\n"
    "/* The channel-blocked convolution of the whole tensor (arguments as\n"
    " * weir_dwconv2d_f32's); 0 when it does not apply (vertical dilation,\n"
    " * more than 64 taps or KH > 64) or its buffers cannot be allocated. */\n"
    "static int weir_dwc_f32(const float *x, const float *w, const float *b,\n"
    "                        float *y, const float *r, int64_t n, int64_t c,\n"
    "                        int64_t h, int64_t wd, int64_t kh, int64_t kw,\n"
    "                        int64_t oh, int64_t ow, int64_t sh, int64_t sw,\n"
    "                        int64_t dh, int64_t dw, int64_t ph, int64_t pw,\n"
    "                        int act, float lo, float hi) {\n"
    "  if (dh != 1 || kh * kw > 64 || oh <= 0 || ow <= 0 || c <= 0 || n <= 0)\n"
    "    return 0;\n"
    "  weir_dwc_geo g = {c, h, wd, oh, ow, ph, pw, 0, act, lo, hi};\n"
    "  g.wp = (ow - 1) * sw + (kw - 1) * dw + 1;\n"
    "  const int64_t ncb = (c + @VL@ - 1) / @VL@;\n"
    "  int nt = 1;\n"
    "#ifdef _OPENMP\n"
    "  nt = omp_get_max_threads();\n"
    "#endif\n"
    "  /* bands of output rows: enough tasks for the threads */\n"
    "  int64_t band = oh;\n"
    "  while (band > 4 && n * ncb * ((oh + band - 1) / band) < 4 * nt)\n"
    "    band = (band + 1) / 2;\n"
    "  const int64_t nbands = (oh + band - 1) / band;\n"
    "  const int64_t tasks = n * ncb * nbands;\n"
    "  if (nt > tasks)\n"
    "    nt = (int)tasks;\n"
    "  /* per thread: the ring and the output row, whole cache lines */\n"
    "  const size_t per = ((size_t)(kh * (g.wp + @VL@) + ow + @VL@) * @VL@ * "
    "sizeof(float) + 63) /\n"
    "                     64 * 64;\n"
    "  float *buf = aligned_alloc(64, per * (size_t)nt);\n"
    "  if (!buf)\n"
    "    return 0;\n"
    "  const int spec = sw == sh && dw == 1 && kh == kw && (kh == 3 || kh == "
    "5) &&\n"
    "                   (sh == 1 || sh == 2);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)\n"
    "#endif\n"
    "  for (int64_t t = 0; t < tasks; t++) {\n"
    "    int tid = 0;\n"
    "#ifdef _OPENMP\n"
    "    tid = omp_get_thread_num();\n"
    "#endif\n"
    "    float *ring = (float *)((char *)buf + per * (size_t)tid);\n"
    "    float *ob = ring + kh * (g.wp + @VL@) * @VL@;\n"
    "    const int64_t in = t / (ncb * nbands), cb = t / nbands % ncb;\n"
    "    const int64_t c0 = cb * @VL@, p0 = t % nbands * band;\n"
    "    const int64_t p1 = p0 + band < oh ? p0 + band : oh;\n"
    "    const int nc = (int)(c - c0 < @VL@ ? c - c0 : @VL@);\n"
    "    const float *xc = x + (in * c + c0) * h * wd;\n"
    "    float *yc = y + (in * c + c0) * oh * ow;\n"
    "    const float *rc = r ? r + (in * c + c0) * oh * ow : NULL;\n"
    "    if (!spec)\n"
    "      weir_dwc_any(kh, kw, sh, sw, dw, &g, xc, w, b, yc, rc, c0, nc, p0, "
    "p1,\n"
    "                   ring, ob);\n"
    "    else if (kh == 3 && sh == 1)\n"
    "      weir_dwc_k3s1(&g, xc, w, b, yc, rc, c0, nc, p0, p1, ring, ob);\n"
    "    else if (kh == 3)\n"
    "      weir_dwc_k3s2(&g, xc, w, b, yc, rc, c0, nc, p0, p1, ring, ob);\n"
    "    else if (sh == 1)\n"
    "      weir_dwc_k5s1(&g, xc, w, b, yc, rc, c0, nc, p0, p1, ring, ob);\n"
    "    else\n"
    "      weir_dwc_k5s2(&g, xc, w, b, yc, rc, c0, nc, p0, p1, ring, ob);\n"
    "  }\n"
    "  free(buf);\n"
    "  return 1;\n"
    "}\n";

/* The plane kernel (AVX-512 only, the default where it applies and
 * measured faster): each (image, channel) plane convolved in place in
 * NCHW, vectors of 16 output columns read by masked loads straight from
 * the input plane (no copy, no transposition; lanes outside the image or
 * past the output row are masked off: neither read nor faulted on, zeros).
 * Stride 2 loads the 32 input columns of a chunk in two masked loads and
 * keeps the even lanes.  Bias, then the taps in row-major order, then the
 * residual and the activation; one masked store per vector. */
static const char dw_plane_avx512[] =
    "/* The plane kernel: 3x3 at stride 1 and 2, the (image, channel)\n"
    " * planes split over the threads; vectors of 16 output columns (or of\n"
    " * 16 / ow rows of 5 to 8 columns at stride 1, two such rows at stride\n"
    " * 2) read by masked loads from the plane (masked-off lanes: zeros,\n"
    " * never read). */\n"
    "typedef struct {\n"
    "  int64_t h, wd, oh, ow, ph, pw;\n"
    "  int64_t nck; /* 16-column chunks of an output row */\n"
    "  int64_t pf;  /* output prefetch distance, floats: whole planes */\n"
    "  int64_t rows; /* output rows per vector: packed 16 / ow (stride 2:\n"
    "                 2), else 1 */\n"
    "  int act;\n"
    "  float lo, hi;\n"
    "  /* per chunk ck and kernel column j: the lanes whose input column\n"
    "   * lies in the image, [ck * K + j]; stride 2: two masks of the\n"
    "   * chunk's 32 input columns (even ones), [2 * (ck * K + j) + 0/1];\n"
    "   * packed at stride 2: the lanes of the two rows whose input column\n"
    "   * lies in the image, [j] */\n"
    "  __mmask16 cm[2 * 8 * 3];\n"
    "  /* packed at stride 2: per kernel column j, the element of the two\n"
    "   * input rows (the first's 16 columns, then the second's) each lane\n"
    "   * reads, [j * 16 + lane] */\n"
    "  int32_t pi[3 * 16];\n"
    "  /* packed with at most 16 blocks of rows (nb, else 0; stride 1: with\n"
    "   * pw == 1): per block and kernel row the lanes of the packed rows\n"
    "   * whose input row lies in the image, [block * 3 + i]; stride 2: of\n"
    "   * the first input row loaded (rt) and of the second (ru) */\n"
    "  int64_t nb;\n"
    "  __mmask16 rt[16 * 3], ru[16 * 3];\n"
    "} weir_dwp_geo;\n"
    "/* lanes [a, b) of 16, clamped */\n"
    "static inline __attribute__((always_inline)) @TGT@ __mmask16\n"
    "weir_dwp_range(int64_t a, int64_t b) {\n"
    "  a = a < 0 ? 0 : a;\n"
    "  b = b > 16 ? 16 : b;\n"
    "  if (b <= a)\n"
    "    return 0;\n"
    "  return (__mmask16)(((1u << b) - 1u) & ~((1u << a) - 1u));\n"
    "}\n"
    "/* the lanes of m of p + off (masked-off lanes 0 and not read: the\n"
    " * address is formed as an integer, it may lie outside the plane) */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v16\n"
    "weir_dwp_ld(__mmask16 m, const float *p, int64_t off) {\n"
    "  const void *a = (const void *)((uintptr_t)p + (uintptr_t)(off * 4));\n"
    "  return (weir_act_v16)_mm512_maskz_loadu_ps(m, a);\n"
    "}\n"
    "/* residual and activation `act` of one vector, stored in the lanes of m\n"
    " * at yc + o (its last lane at yc + o + nq - 1).  The line holding the\n"
    " * element pf floats after that last one is prefetched for writing: the\n"
    " * last lanes of successive vectors are at most 16 floats apart, so\n"
    " * every line of the output ahead is prefetched once or twice. */\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwp_st(int act, float lo, float hi, weir_act_v16 acc, __mmask16 m,\n"
    "            float *restrict yc, const float *restrict rc, int64_t o,\n"
    "            int64_t nq, int64_t pf) {\n"
    "  __builtin_prefetch(\n"
    "      (const void *)((uintptr_t)(yc + o) + (uintptr_t)((nq - 1 + pf) * "
    "4)),\n"
    "      1, 3);\n"
    "  if (rc)\n"
    "    acc += weir_dwp_ld(m, rc, o);\n"
    "  acc = weir_act_apply16(acc, act, lo, hi);\n"
    "  _mm512_mask_storeu_ps(yc + o, m, (__m512)acc);\n"
    "}\n"
    "/* acc + the K taps of one kernel row (weights wr), lane q reading\n"
    " * xc[off + j + q] (stride 2: xc[off + j + 2 q]) in the lanes of\n"
    " * cm[j] (stride 2: two masks per j, the even lanes of 32) */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v16\n"
    "weir_dwp_taps(const int K, const int S, const float *restrict xc,\n"
    "              const weir_act_v16 *wr, const __mmask16 *cm, int64_t off,\n"
    "              weir_act_v16 acc) {\n"
    "  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16,\n"
    "                                         18, 20, 22, 24, 26, 28, 30);\n"
    "#pragma GCC unroll 5\n"
    "  for (int j = 0; j < K; j++) {\n"
    "    if (S == 1) {\n"
    "      acc += wr[j] * weir_dwp_ld(cm[j], xc, off + j);\n"
    "      continue;\n"
    "    }\n"
    "    const weir_act_v16 u = weir_dwp_ld(cm[2 * j], xc, off + j),\n"
    "                       v = weir_dwp_ld(cm[2 * j + 1], xc, off + j + 16);\n"
    "    acc += wr[j] * (weir_act_v16)_mm512_permutex2var_ps((__m512)u, even,\n"
    "                                                         (__m512)v);\n"
    "  }\n"
    "  return acc;\n"
    "}\n"
    "/* packed at stride 1 with pw == 1 (K == 3): acc + the three taps of one\n"
    " * kernel row from one load of the packed rows (lanes rm: the rows whose\n"
    " * input row lies in the image), lane l reading xc[off + l + j - 1]: the\n"
    " * loaded vector shifted by one lane either way (valignd), zeroing the\n"
    " * lanes outside cm[j] */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v16\n"
    "weir_dwp_taps3(const float *restrict xc, const weir_act_v16 *wr,\n"
    "               const __mmask16 *cm, __mmask16 rm, int64_t off,\n"
    "               weir_act_v16 acc) {\n"
    "  const __m512i z = _mm512_setzero_si512();\n"
    "  const __m512i l = _mm512_castps_si512((__m512)weir_dwp_ld(rm, xc, "
    "off));\n"
    "  acc += wr[0] * (weir_act_v16)_mm512_castsi512_ps(\n"
    "                     _mm512_maskz_alignr_epi32(cm[0], l, z, 15));\n"
    "  acc += wr[1] * (weir_act_v16)_mm512_castsi512_ps(l);\n"
    "  acc += wr[2] * (weir_act_v16)_mm512_castsi512_ps(\n"
    "                     _mm512_maskz_alignr_epi32(cm[2], z, l, 1));\n"
    "  return acc;\n"
    "}\n"
    "/* one plane, K x K at stride S, activation A (-1: g->act; constants\n"
    " * when inlined).  The masks are copied to locals first: loop\n"
    " * invariants, they stay in mask registers (a mask rebuilt from memory\n"
    " * per load costs more than the load).  Rows whose kernel rows all lie\n"
    " * in the image go by four, their chains interleaved. */\n"
    "static inline __attribute__((always_inline)) @TGT@ void\n"
    "weir_dwp_plane(const int K, const int S, const int A,\n"
    "               const weir_dwp_geo *g, const float *restrict xc,\n"
    "               const float *restrict wc, float bias, float *restrict yc,\n"
    "               const float *restrict rc) {\n"
    "  const int64_t h = g->h, wd = g->wd, oh = g->oh, ow = g->ow;\n"
    "  const int64_t ph = g->ph, pw = g->pw, nck = g->nck, pf = g->pf;\n"
    "  const int act = A >= 0 ? A : g->act;\n"
    "  const float lo = g->lo, hi = g->hi;\n"
    "  weir_act_v16 wv[25];\n"
    "#pragma GCC unroll 25\n"
    "  for (int t = 0; t < K * K; t++)\n"
    "    wv[t] = weir_act_set16(wc[t]);\n"
    "  const weir_act_v16 b = weir_act_set16(bias);\n"
    "  __mmask16 cm[2 * 5];\n"
    "  if (S == 2 && g->rows > 1) {\n"
    "    /* packed at stride 2: rows p0 and p0 + 1 (at most 8 columns, so the\n"
    "     * input rows are at most 16 wide) in lanes [0, ow) and [ow, 2 ow).\n"
    "     * Per kernel row the two input rows they read (2 p0 + i - ph and "
    "two\n"
    "     * further) are loaded once each, and every tap takes its columns\n"
    "     * from the pair by one two-source permutation, zeroing the lanes\n"
    "     * whose column lies in the padding: two loads and three\n"
    "     * permutations per kernel row, no copy of the plane */\n"
    "    __m512i pi[3];\n"
    "#pragma GCC unroll 3\n"
    "    for (int j = 0; j < K; j++) {\n"
    "      cm[j] = g->cm[j];\n"
    "      pi[j] = _mm512_loadu_si512((const void *)(g->pi + j * 16));\n"
    "    }\n"
    "    if (g->nb) {\n"
    "      /* the loads' masks from the table (no test per block): blocks by\n"
    "       * two, their chains interleaved */\n"
    "      const int64_t nb = g->nb;\n"
    "      for (int64_t k = 0; k < nb; k += 2) {\n"
    "        const int64_t p0 = 2 * k, p1 = p0 + 2;\n"
    "        const int two = k + 1 < nb;\n"
    "        weir_act_v16 a0 = b, a1 = b;\n"
    "#pragma GCC unroll 3\n"
    "        for (int i = 0; i < K; i++) {\n"
    "          const int64_t ia = 2 * p0 + i - ph;\n"
    "          const __m512 u = (__m512)weir_dwp_ld(g->rt[k * 3 + i], xc, ia * "
    "wd),\n"
    "                       v = (__m512)weir_dwp_ld(g->ru[k * 3 + i], xc,\n"
    "                                               (ia + 2) * wd);\n"
    "#pragma GCC unroll 3\n"
    "          for (int j = 0; j < K; j++)\n"
    "            a0 += wv[i * K + j] * "
    "(weir_act_v16)_mm512_maskz_permutex2var_ps(\n"
    "                                      cm[j], u, pi[j], v);\n"
    "          if (!two)\n"
    "            continue;\n"
    "          const __m512 u1 = (__m512)weir_dwp_ld(g->rt[k * 3 + 3 + i], "
    "xc,\n"
    "                                                (ia + 4) * wd),\n"
    "                       v1 = (__m512)weir_dwp_ld(g->ru[k * 3 + 3 + i], "
    "xc,\n"
    "                                                (ia + 6) * wd);\n"
    "#pragma GCC unroll 3\n"
    "          for (int j = 0; j < K; j++)\n"
    "            a1 += wv[i * K + j] * "
    "(weir_act_v16)_mm512_maskz_permutex2var_ps(\n"
    "                                      cm[j], u1, pi[j], v1);\n"
    "        }\n"
    "        const int64_t n0 = oh - p0 < 2 ? oh - p0 : 2;\n"
    "        weir_dwp_st(act, lo, hi, a0, weir_dwp_range(0, n0 * ow), yc, rc,\n"
    "                    p0 * ow, n0 * ow, pf);\n"
    "        if (two) {\n"
    "          const int64_t n1 = oh - p1 < 2 ? oh - p1 : 2;\n"
    "          weir_dwp_st(act, lo, hi, a1, weir_dwp_range(0, n1 * ow), yc, "
    "rc,\n"
    "                      p1 * ow, n1 * ow, pf);\n"
    "        }\n"
    "      }\n"
    "      return;\n"
    "    }\n"
    "    const __mmask16 rm = weir_dwp_range(0, wd);\n"
    "    for (int64_t p0 = 0; p0 < oh; p0 += 2) {\n"
    "      const int64_t nr = oh - p0 < 2 ? oh - p0 : 2;\n"
    "      weir_act_v16 acc = b;\n"
    "#pragma GCC unroll 5\n"
    "      for (int i = 0; i < K; i++) {\n"
    "        const int64_t ia = 2 * p0 + i - ph, ib = ia + 2;\n"
    "        const __mmask16 ma = ia >= 0 && ia < h ? rm : 0,\n"
    "                        mb = nr == 2 && ib >= 0 && ib < h ? rm : 0;\n"
    "        if (!(ma | mb))\n"
    "          continue;\n"
    "        const __m512 u = (__m512)weir_dwp_ld(ma, xc, ia * wd),\n"
    "                     v = (__m512)weir_dwp_ld(mb, xc, ib * wd);\n"
    "#pragma GCC unroll 3\n"
    "        for (int j = 0; j < K; j++)\n"
    "          acc += wv[i * K + j] *\n"
    "                 (weir_act_v16)_mm512_maskz_permutex2var_ps(cm[j], u, "
    "pi[j],\n"
    "                                                            v);\n"
    "      }\n"
    "      weir_dwp_st(act, lo, hi, acc, weir_dwp_range(0, nr * ow), yc, rc,\n"
    "                  p0 * ow, nr * ow, pf);\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  if (S == 1 && g->rows > 1) {\n"
    "    /* packed: rows [p0, p0 + nr) in lanes [0, nr * ow) (wd == ow, so\n"
    "     * lane q of tap (i, j) reads the plane at (p0 + i - ph) * wd + j -\n"
    "     * pw + q; cm[j] masks the columns of every packed row) */\n"
    "    const int64_t rows = g->rows;\n"
    "#pragma GCC unroll 5\n"
    "    for (int j = 0; j < K; j++)\n"
    "      cm[j] = g->cm[j];\n"
    "    if (K == 3 && g->nb) {\n"
    "      /* pw == 1: one load per block and kernel row (weir_dwp_taps3),\n"
    "       * the lanes of its rows in the image from the table (no mask\n"
    "       * computed per plane); blocks by two, their chains interleaved;\n"
    "       * a kernel row wholly outside the image adds zeros */\n"
    "      const int64_t nb = g->nb;\n"
    "      for (int64_t k = 0; k < nb; k += 2) {\n"
    "        const int64_t p0 = k * rows, p1 = p0 + rows;\n"
    "        const int two = k + 1 < nb;\n"
    "        weir_act_v16 a0 = b, a1 = b;\n"
    "#pragma GCC unroll 3\n"
    "        for (int i = 0; i < K; i++) {\n"
    "          a0 = weir_dwp_taps3(xc, wv + i * K, cm, g->rt[k * 3 + i],\n"
    "                              (p0 + i - ph) * wd, a0);\n"
    "          if (two)\n"
    "            a1 = weir_dwp_taps3(xc, wv + i * K, cm, g->rt[k * 3 + 3 + "
    "i],\n"
    "                                (p1 + i - ph) * wd, a1);\n"
    "        }\n"
    "        const int64_t n0 = oh - p0 < rows ? oh - p0 : rows;\n"
    "        weir_dwp_st(act, lo, hi, a0, weir_dwp_range(0, n0 * ow), yc, rc,\n"
    "                    p0 * ow, n0 * ow, pf);\n"
    "        if (two) {\n"
    "          const int64_t n1 = oh - p1 < rows ? oh - p1 : rows;\n"
    "          weir_dwp_st(act, lo, hi, a1, weir_dwp_range(0, n1 * ow), yc, "
    "rc,\n"
    "                      p1 * ow, n1 * ow, pf);\n"
    "        }\n"
    "      }\n"
    "      return;\n"
    "    }\n"
    "    for (int64_t p0 = 0; p0 < oh; p0 += rows) {\n"
    "      const int64_t nr = oh - p0 < rows ? oh - p0 : rows;\n"
    "      if (p0 - ph >= 0 && p0 + 2 * rows <= oh &&\n"
    "          p0 + 2 * rows - 1 - ph + K - 1 < h) {\n"
    "        /* two whole blocks inside the image, interleaved */\n"
    "        weir_act_v16 a0 = b, a1 = b;\n"
    "        const __mmask16 m = weir_dwp_range(0, rows * ow);\n"
    "#pragma GCC unroll 5\n"
    "        for (int i = 0; i < K; i++) {\n"
    "          if (K == 3 && pw == 1) {\n"
    "            a0 = weir_dwp_taps3(xc, wv + i * K, cm, m, (p0 + i - ph) * "
    "wd,\n"
    "                                a0);\n"
    "            a1 = weir_dwp_taps3(xc, wv + i * K, cm, m,\n"
    "                                (p0 + rows + i - ph) * wd, a1);\n"
    "            continue;\n"
    "          }\n"
    "          a0 = weir_dwp_taps(K, 1, xc, wv + i * K, cm,\n"
    "                             (p0 + i - ph) * wd - pw, a0);\n"
    "          a1 = weir_dwp_taps(K, 1, xc, wv + i * K, cm,\n"
    "                             (p0 + rows + i - ph) * wd - pw, a1);\n"
    "        }\n"
    "        weir_dwp_st(act, lo, hi, a0, m, yc, rc, p0 * ow, rows * ow, pf);\n"
    "        weir_dwp_st(act, lo, hi, a1, m, yc, rc, (p0 + rows) * ow,\n"
    "                    rows * ow, pf);\n"
    "        p0 += rows;\n"
    "        continue;\n"
    "      }\n"
    "      /* a block at the top or the bottom: per kernel row the lanes of\n"
    "       * the packed rows whose input row lies in the image */\n"
    "      weir_act_v16 acc = b;\n"
    "#pragma GCC unroll 5\n"
    "      for (int i = 0; i < K; i++) {\n"
    "        const int64_t r0 = ph - p0 - i, r1 = h + ph - p0 - i;\n"
    "        const __mmask16 rm = weir_dwp_range(\n"
    "            (r0 > 0 ? r0 : 0) * ow, (r1 < nr ? r1 : nr) * ow);\n"
    "        if (!rm)\n"
    "          continue;\n"
    "        if (K == 3 && pw == 1) {\n"
    "          acc = weir_dwp_taps3(xc, wv + i * K, cm, rm, (p0 + i - ph) * "
    "wd,\n"
    "                               acc);\n"
    "          continue;\n"
    "        }\n"
    "        __mmask16 cr[5];\n"
    "#pragma GCC unroll 5\n"
    "        for (int j = 0; j < K; j++)\n"
    "          cr[j] = cm[j] & rm;\n"
    "        acc = weir_dwp_taps(K, 1, xc, wv + i * K, cr,\n"
    "                            (p0 + i - ph) * wd - pw, acc);\n"
    "      }\n"
    "      weir_dwp_st(act, lo, hi, acc, weir_dwp_range(0, nr * ow), yc, rc,\n"
    "                  p0 * ow, nr * ow, pf);\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t ck = 0; ck < nck; ck++) {\n"
    "    const int64_t c0 = ck * 16, off0 = c0 * S - pw;\n"
    "#pragma GCC unroll 10\n"
    "    for (int j = 0; j < S * K; j++)\n"
    "      cm[j] = g->cm[S * ck * K + j];\n"
    "    const int64_t nq = ow - c0 < 16 ? ow - c0 : 16;\n"
    "    const __mmask16 sm = weir_dwp_range(0, nq);\n"
    "    for (int64_t p = 0; p < oh; p++) {\n"
    "      const int64_t ih0 = p * S - ph;\n"
    "      if (ih0 >= 0 && p + 3 < oh && ih0 + 3 * S + K - 1 < h) {\n"
    "        weir_act_v16 a[4] = {b, b, b, b};\n"
    "#pragma GCC unroll 5\n"
    "        for (int i = 0; i < K; i++)\n"
    "#pragma GCC unroll 4\n"
    "          for (int u = 0; u < 4; u++)\n"
    "            a[u] = weir_dwp_taps(K, S, xc, wv + i * K, cm,\n"
    "                                 (ih0 + u * S + i) * wd + off0, a[u]);\n"
    "#pragma GCC unroll 4\n"
    "        for (int u = 0; u < 4; u++)\n"
    "          weir_dwp_st(act, lo, hi, a[u], sm, yc, rc, (p + u) * ow + c0,\n"
    "                      nq, pf);\n"
    "        p += 3;\n"
    "        continue;\n"
    "      }\n"
    "      /* a row near the top or the bottom: kernel rows outside the\n"
    "       * image skipped */\n"
    "      weir_act_v16 acc = b;\n"
    "#pragma GCC unroll 5\n"
    "      for (int i = 0; i < K; i++)\n"
    "        if (ih0 + i >= 0 && ih0 + i < h)\n"
    "          acc = weir_dwp_taps(K, S, xc, wv + i * K, cm,\n"
    "                              (ih0 + i) * wd + off0, acc);\n"
    "      weir_dwp_st(act, lo, hi, acc, sm, yc, rc, p * ow + c0, nq, pf);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#define WEIR_DWP_ARGS                                                 \\\n"
    "  const weir_dwp_geo *g, const float *restrict xc,                  \\\n"
    "      const float *restrict wc, float bias, float *restrict yc,      \\\n"
    "      const float *restrict rc\n"
    "#define WEIR_DWP_PASS g, xc, wc, bias, yc, rc\n"
    "/* instances: 3x3 at stride 1 and 2, the clip (ReLU, ReLU6) and SiLU\n"
    " * epilogues inlined, the others through the activation's switch */\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwp_s1_clip(WEIR_DWP_ARGS) {\n"
    "  weir_dwp_plane(3, 1, 1, WEIR_DWP_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwp_s1_silu(WEIR_DWP_ARGS) {\n"
    "  weir_dwp_plane(3, 1, 3, WEIR_DWP_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwp_s1_any(WEIR_DWP_ARGS) {\n"
    "  weir_dwp_plane(3, 1, -1, WEIR_DWP_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwp_s2_clip(WEIR_DWP_ARGS) {\n"
    "  weir_dwp_plane(3, 2, 1, WEIR_DWP_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwp_s2_silu(WEIR_DWP_ARGS) {\n"
    "  weir_dwp_plane(3, 2, 3, WEIR_DWP_PASS);\n"
    "}\n"
    "static __attribute__((noinline)) @TGT@ void\n"
    "weir_dwp_s2_any(WEIR_DWP_ARGS) {\n"
    "  weir_dwp_plane(3, 2, -1, WEIR_DWP_PASS);\n"
    "}\n"
    "/* The plane kernel over the whole tensor (arguments as\n"
    " * weir_dwconv2d_f32's); 0 where it does not apply or was measured\n"
    " * slower than the channel-blocked kernel (docs/performance.md,\n"
    " * mobile14l, mobile14p): kernels other than 3x3, strides other than 1\n"
    " * and 2 (equal), dilation, output rows under 9 columns except rows of\n"
    " * 5 to 8 as wide as the input at stride 1 (packed: 16 / ow rows per\n"
    " * vector) and as half the input at stride 2 (ceil(wd / 2): two rows\n"
    " * per vector), over @DWPMAX1@ at stride 1 and over @DWPMAX2@ at stride "
    "2. */\n"
    "static @TGT@ int weir_dwp_f32(const float *x, const float *w,\n"
    "                              const float *b, float *y, const float *r,\n"
    "                              int64_t n, int64_t c, int64_t h, int64_t "
    "wd,\n"
    "                              int64_t kh, int64_t kw, int64_t oh,\n"
    "                              int64_t ow, int64_t sh, int64_t sw,\n"
    "                              int64_t dh, int64_t dw, int64_t ph,\n"
    "                              int64_t pw, int act, float lo, float hi) {\n"
    "  const int64_t K = 3, S = sh;\n"
    "  /* packed: rows of 5 to 8 columns as wide as the rows read (stride 2:\n"
    "   * their even columns) */\n"
    "  const int packed = (S == 1 ? wd : (wd + 1) / 2) == ow && 2 * ow <= 16;\n"
    "  if (kh != K || kw != K || sh != sw || (S != 1 && S != 2) || dh != 1 ||\n"
    "      dw != 1 || oh <= 0 || ow < (packed ? 5 : 9) ||\n"
    "      ow > (S == 1 ? @DWPMAX1@ : @DWPMAX2@) ||\n"
    "      ow > 8 * 16 || n <= 0 || c <= 0)\n"
    "    return 0;\n"
    "  /* the output is prefetched for writing whole planes ahead, at\n"
    "   * least 1024 floats (the store of a plane's rows in order is what\n"
    "   * the hardware prefetchers follow least: read-for-ownership misses) "
    "*/\n"
    "  const int64_t ohw = oh * ow, pf = (1024 + ohw - 1) / ohw * ohw;\n"
    "  weir_dwp_geo g = {h,  wd, oh, ow,   ph,  pw,  (ow + 15) / 16,\n"
    "                    pf, 1,  act, lo, hi, {0}, {0}, 0, {0}, {0}};\n"
    "  if (S == 2 && packed) {\n"
    "    /* lane rr * ow + q (rr < 2) of tap column j: input column 2 q + j -\n"
    "     * pw of the rr-th row loaded */\n"
    "    g.rows = 2;\n"
    "    for (int64_t j = 0; j < K; j++)\n"
    "      for (int64_t rr = 0; rr < 2; rr++)\n"
    "        for (int64_t q = 0; q < ow; q++) {\n"
    "          const int64_t col = 2 * q + j - pw;\n"
    "          if (col < 0 || col >= wd)\n"
    "            continue;\n"
    "          g.cm[j] |= (__mmask16)(1u << (rr * ow + q));\n"
    "          g.pi[j * 16 + rr * ow + q] = (int32_t)(rr * 16 + col);\n"
    "        }\n"
    "    const int64_t nb = (oh + 1) / 2;\n"
    "    if (nb <= 16) {\n"
    "      g.nb = nb;\n"
    "      for (int64_t k = 0; k < nb; k++)\n"
    "        for (int64_t i = 0; i < K; i++) {\n"
    "          /* block k: output rows 2 k and 2 k + 1 (if any) read input\n"
    "           * rows 4 k + i - ph and two further */\n"
    "          const int64_t ia = 4 * k + i - ph, ib = ia + 2;\n"
    "          g.rt[k * 3 + i] = ia >= 0 && ia < h ? weir_dwp_range(0, wd) : "
    "0;\n"
    "          g.ru[k * 3 + i] =\n"
    "              2 * k + 1 < oh && ib >= 0 && ib < h ? weir_dwp_range(0, wd) "
    ": 0;\n"
    "        }\n"
    "    }\n"
    "  } else if (S == 1 && packed) {\n"
    "    /* packed: 16 / ow rows per vector, the column masks repeated */\n"
    "    g.rows = 16 / ow;\n"
    "    for (int64_t j = 0; j < K; j++)\n"
    "      for (int64_t rr = 0; rr < g.rows; rr++)\n"
    "        g.cm[j] |= weir_dwp_range(\n"
    "            rr * ow + (pw - j > 0 ? pw - j : 0),\n"
    "            rr * ow + (wd + pw - j < ow ? wd + pw - j : ow));\n"
    "    const int64_t nb = (oh + g.rows - 1) / g.rows;\n"
    "    if (pw == 1 && nb <= 16) {\n"
    "      g.nb = nb;\n"
    "      for (int64_t k = 0; k < nb; k++)\n"
    "        for (int64_t i = 0; i < K; i++) {\n"
    "          /* packed row rr (of the block's nr) reads input row k * rows\n"
    "           * + rr + i - ph */\n"
    "          const int64_t p0 = k * g.rows,\n"
    "                        nr = oh - p0 < g.rows ? oh - p0 : g.rows;\n"
    "          const int64_t r0 = ph - p0 - i, r1 = h + ph - p0 - i;\n"
    "          g.rt[k * 3 + i] = weir_dwp_range((r0 > 0 ? r0 : 0) * ow,\n"
    "                                           (r1 < nr ? r1 : nr) * ow);\n"
    "        }\n"
    "    }\n"
    "  } else\n"
    "  for (int64_t ck = 0; ck < g.nck; ck++)\n"
    "    for (int64_t j = 0; j < K; j++) {\n"
    "      const int64_t c0 = ck * 16, nq = ow - c0 < 16 ? ow - c0 : 16;\n"
    "      if (S == 1) {\n"
    "        /* lane q: input column c0 + q + j - pw */\n"
    "        g.cm[ck * K + j] = weir_dwp_range(\n"
    "            pw - j - c0, nq < wd + pw - j - c0 ? nq : wd + pw - j - c0);\n"
    "        continue;\n"
    "      }\n"
    "      /* element e of the window: input column 2 * c0 + e + j - pw,\n"
    "       * wanted for even e < 2 * nq */\n"
    "      uint32_t m = 0;\n"
    "      for (int64_t e = 0; e < 2 * nq; e += 2) {\n"
    "        const int64_t col = 2 * c0 + e + j - pw;\n"
    "        if (col >= 0 && col < wd)\n"
    "          m |= 1u << e;\n"
    "      }\n"
    "      g.cm[2 * (ck * K + j)] = (__mmask16)(m & 0xffffu);\n"
    "      g.cm[2 * (ck * K + j) + 1] = (__mmask16)(m >> 16);\n"
    "    }\n"
    "  void (*f)(WEIR_DWP_ARGS) =\n"
    "      S == 1 ? (act == 1 ? weir_dwp_s1_clip\n"
    "                : act == 3 ? weir_dwp_s1_silu\n"
    "                           : weir_dwp_s1_any)\n"
    "             : (act == 1 ? weir_dwp_s2_clip\n"
    "                : act == 3 ? weir_dwp_s2_silu\n"
    "                           : weir_dwp_s2_any);\n"
    "  const int64_t planes = n * c;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (planes > 1)\n"
    "#endif\n"
    "  for (int64_t t = 0; t < planes; t++)\n"
    "    f(&g, x + t * h * wd, w + t % c * K * K, b ? b[t % c] : 0.0f,\n"
    "      y + t * oh * ow, r ? r + t * oh * ow : NULL);\n"
    "  return 1;\n"
    "}\n";

static const char dw_driver[] =
    "/* Any kernel, stride and dilation: per output row, each tap adds\n"
    " * w * (a shifted input row) over the columns whose input lies in the\n"
    " * image; then the epilogue over the row. */\n"
    "static void weir_dw_any(const float *restrict xc, const float *restrict "
    "wc,\n"
    "                        float bias, float *restrict yc,\n"
    "                        const float *restrict rc, int64_t h, int64_t "
    "wd,\n"
    "                        int64_t kh, int64_t kw, int64_t oh, int64_t "
    "ow,\n"
    "                        int64_t sh, int64_t sw, int64_t dh, int64_t dw,\n"
    "                        int64_t ph, int64_t pw, int act, float lo,\n"
    "                        float hi) {\n"
    "  for (int64_t p = 0; p < oh; p++) {\n"
    "    float *restrict yr = yc + p * ow;\n"
    "    for (int64_t q = 0; q < ow; q++)\n"
    "      yr[q] = bias;\n"
    "    for (int64_t i = 0; i < kh; i++) {\n"
    "      const int64_t ih = p * sh + i * dh - ph;\n"
    "      if (ih < 0 || ih >= h)\n"
    "        continue;\n"
    "      const float *restrict xr = xc + ih * wd;\n"
    "      for (int64_t j = 0; j < kw; j++) {\n"
    "        const float wv = wc[i * kw + j];\n"
    "        const int64_t off = j * dw - pw;\n"
    "        int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "        int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "        qlo = qlo < ow ? qlo : ow;\n"
    "        qhi = qhi < ow ? qhi : ow;\n"
    "        for (int64_t q = qlo; q < qhi; q++)\n"
    "          yr[q] += wv * xr[q * sw + off];\n"
    "      }\n"
    "    }\n"
    "    for (int64_t q = 0; q < ow; q++)\n"
    "      yr[q] = weir_act1_f32(rc ? yr[q] + rc[p * ow + q] : yr[q], act, lo, "
    "hi);\n"
    "  }\n"
    "}\n"
    "/* Depthwise 2-D convolution (group == C == M), f32, NCHW:\n"
    " * y = act(conv(x, w) + b + r), r (NULL: none) of y's shape.  vl 0:\n"
    " * the plane kernel (weir_dwp_f32, AVX-512) where it applies, else the\n"
    " * channel-blocked kernel (weir_dwc_f32) wherever it applies; vl 1: the\n"
    " * channel-blocked kernel first; else (or where neither applies) the\n"
    " * kernel vectorized along the output width, @VL@ or @VLH@ lanes (vl,\n"
    " * or the one computing fewer lanes for this output width, the wider on\n"
    " * a tie), the (image, channel) planes split over the OpenMP threads. */\n"
    "static void weir_dwconv2d_f32(const float *x, const float *w,\n"
    "                              const float *b, float *y, const float *r,\n"
    "                              int64_t n, int64_t c, int64_t h, int64_t "
    "wd,\n"
    "                              int64_t kh, int64_t kw, int64_t oh,\n"
    "                              int64_t ow, int64_t sh, int64_t sw,\n"
    "                              int64_t dh, int64_t dw, int64_t ph,\n"
    "                              int64_t pw, int act, float lo, float hi,\n"
    "                              int vl) {\n"
    "@DWPCALL@"
    "  if ((vl == 0 || vl == 1) &&\n"
    "      weir_dwc_f32(x, w, b, y, r, n, c, h, wd, kh, kw, oh, ow, sh, sw, "
    "dh,\n"
    "                   dw, ph, pw, act, lo, hi))\n"
    "    return;\n"
    "  if (vl != @VL@ && vl != @VLH@)\n"
    "    vl = (ow + @VLH@ - 1) / @VLH@ * @VLH@ < (ow + @VL@ - 1) / @VL@ * "
    "@VL@\n"
    "             ? @VLH@\n"
    "             : @VL@;\n"
    "  const int fast = kh == kw && sh == sw && dh == 1 && dw == 1;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) schedule(static) if (n * c > 1)\n"
    "#endif\n"
    "  for (int64_t in = 0; in < n; in++) {\n"
    "    for (int64_t ch = 0; ch < c; ch++) {\n"
    "      const float *xc = x + (in * c + ch) * h * wd;\n"
    "      const float *wc = w + ch * kh * kw;\n"
    "      float *yc = y + (in * c + ch) * oh * ow;\n"
    "      const float *rc = r ? r + (in * c + ch) * oh * ow : NULL;\n"
    "      const float bias = b ? b[ch] : 0.0f;\n"
    "      if (fast && vl == @VL@ &&\n"
    "          weir_dw_fast@VL@(kh, sh, xc, wc, bias, yc, rc, h, wd, oh, ow, "
    "ph,\n"
    "                         pw, act, lo, hi))\n"
    "        continue;\n"
    "      if (fast && vl == @VLH@ &&\n"
    "          weir_dw_fast@VLH@(kh, sh, xc, wc, bias, yc, rc, h, wd, oh, ow, "
    "ph,\n"
    "                          pw, act, lo, hi))\n"
    "        continue;\n"
    "      weir_dw_any(xc, wc, bias, yc, rc, h, wd, kh, kw, oh, ow, sh, sw, "
    "dh,\n"
    "                  dw, ph, pw, act, lo, hi);\n"
    "    }\n"
    "  }\n"
    "}\n";

void weir_kernel_depthwise_params(const WeirHwProfile *hw,
                                  WeirDepthwiseParams *out) {
  WeirHwIsa isa = hw ? hw->isa : WEIR_HW_ISA_GENERIC;
  out->isa = isa;
  out->vl = isa == WEIR_HW_ISA_AVX512 ? 16 : isa == WEIR_HW_ISA_AVX2 ? 8 : 4;
}

static void replace_uint(GString *s, const char *key, guint v) {
  char buf[16];
  g_snprintf(buf, sizeof buf, "%u", v);
  g_string_replace(s, key, buf, 0);
}

/* dw_width for `vl` lanes. */
static void append_width(GString *out, const WeirDepthwiseParams *p, guint vl) {
  GString *s = g_string_new(dw_width);
  GString *even = g_string_new(NULL), *odd = g_string_new(NULL);
  for (guint i = 0; i < vl; i++) {
    g_string_append_printf(even, "%s%u", i ? ", " : "", 2 * i);
    g_string_append_printf(odd, "%s%u", i ? ", " : "", 2 * i + 1);
  }
  g_string_replace(s, "@EVEN@", even->str, 0);
  g_string_replace(s, "@ODD@", odd->str, 0);
  g_string_replace(s, "@TGT@", weir_kernel_isa_target(p->isa), 0);
  replace_uint(s, "@VB@", vl * 4);
  replace_uint(s, "@VL@", vl);
  g_string_append(out, s->str);
  g_string_free(s, TRUE);
  g_string_free(even, TRUE);
  g_string_free(odd, TRUE);
}

/* weir_dwc_tr: a vl x vl tile transposed in registers, log2(vl) rounds
 * each swapping the off-diagonal b x b blocks of every 2b x 2b block
 * (b = vl / 2 .. 1) with two-vector shuffles of constant lanes. */
static void append_transpose(GString *s, guint vl) {
  g_string_append_printf(
      s,
      "/* d[j * ds + i] = s[i * ss + j] for i, j < %u: one tile transposed\n"
      " * in registers (rounds of two-vector shuffles, each swapping the\n"
      " * off-diagonal blocks of a size) */\n"
      "static inline __attribute__((always_inline)) @TGT@ void\n"
      "weir_dwc_tr(const float *restrict s, int64_t ss, float *restrict d,\n"
      "            int64_t ds) {\n"
      "  weir_act_v%u r[%u];\n"
      "  for (int i = 0; i < %u; i++)\n"
      "    r[i] = weir_act_load%u(s + i * ss);\n",
      vl, vl, vl, vl, vl);
  for (guint b = vl / 2; b >= 1; b /= 2) {
    GString *lo = g_string_new(NULL), *hi = g_string_new(NULL);
    for (guint j = 0; j < vl; j++) {
      gboolean up = (j & b) != 0;
      g_string_append_printf(lo, "%s%u", j ? ", " : "", up ? vl + j - b : j);
      g_string_append_printf(hi, "%s%u", j ? ", " : "", up ? vl + j : j + b);
    }
    g_string_append_printf(
        s,
        "  for (int i = 0; i < %u; i++) {\n"
        "    if (i & %u)\n"
        "      continue;\n"
        "    const weir_act_v%u u = r[i], v = r[i + %u];\n"
        "    r[i] = __builtin_shufflevector(u, v, %s);\n"
        "    r[i + %u] = __builtin_shufflevector(u, v, %s);\n"
        "  }\n",
        vl, b, vl, b, lo->str, b, hi->str);
    g_string_free(lo, TRUE);
    g_string_free(hi, TRUE);
  }
  g_string_append_printf(s,
                         "  for (int j = 0; j < %u; j++)\n"
                         "    memcpy(d + j * ds, &r[j], sizeof r[j]);\n"
                         "}\n",
                         vl);
}

char *weir_kernel_depthwise_text(const WeirDepthwiseParams *p) {
  GString *s = g_string_new(dw_head);
  append_width(s, p, p->vl);
  append_width(s, p, p->vl / 2);
  /* the channel-blocked kernel, at the full width */
  GString *ch = g_string_new(NULL);
  g_string_append(ch, p->isa == WEIR_HW_ISA_AVX512 ? dw_partial_avx512
                      : p->isa == WEIR_HW_ISA_AVX2 ? dw_partial_avx2
                                                   : dw_partial_generic);
  append_transpose(ch, p->vl);
  g_string_append(ch, dw_chan);
  if (p->isa == WEIR_HW_ISA_AVX512 && p->vl == 16)
    g_string_append(ch, dw_plane_avx512);
  g_string_replace(ch, "@TGT@", weir_kernel_isa_target(p->isa), 0);
  g_string_append(s, ch->str);
  g_string_free(ch, TRUE);
  g_string_append(s, dw_driver);
  /* the plane kernel's call, where it exists */
  g_string_replace(
      s, "@DWPCALL@",
      p->isa == WEIR_HW_ISA_AVX512 && p->vl == 16
          ? "  if (vl == 0 && weir_dwp_f32(x, w, b, y, r, n, c, h, wd, kh, kw, "
            "oh, ow, sh,\n"
            "                              sw, dh, dw, ph, pw, act, lo, hi))\n"
            "    return;\n"
          : "",
      0);
  replace_uint(s, "@DWPMAX1@", WEIR_DWP_MAX_OW1);
  replace_uint(s, "@DWPMAX2@", WEIR_DWP_MAX_OW2);
  g_string_replace(s, "@ISA@", weir_hw_isa_name(p->isa), 0);
  replace_uint(s, "@VLH@", p->vl / 2);
  replace_uint(s, "@VL@", p->vl);
  return g_string_free(s, FALSE);
}

/* ------------------------------------------------------------ emitter */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean dim_is(const WeirContainer *c, guint d, gint64 v) {
  gint64 x;
  return weir_expr_is_const(dim(c, d), &x) && x == v;
}

static gboolean dw_accepts(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n, char **reason) {
  /* the operand checks of the im2col implementation (row-major, 2-D) */
  if (!weir_native_accepts_as("Conv", "im2col", g, s, n, reason))
    return FALSE;
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *w = weir_native_port(g, s, n, TRUE, 1);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (y->dtype != WEIR_DTYPE_F32) {
    *reason = g_strdup_printf("'%s' is %s; the depthwise kernel is f32",
                              y->name, weir_dtype_name(y->dtype));
    return FALSE;
  }
  gint64 gr = weir_node_attr_int(n, "group", 1);
  if (gr < 2 || !dim_is(x, 1, gr) || !dim_is(w, 0, gr) || !dim_is(w, 1, 1)) {
    *reason = g_strdup("not a depthwise convolution (group == C == M, one "
                       "input channel per filter)");
    return FALSE;
  }
  return TRUE;
}

static void emit_header(WeirNativeEmit *e, const char *what) {
  g_autofree char *l = g_strdup(e->n->label ? e->n->label : "");
  for (char *p = l; *p; p++)
    if (*p == '*' || *p == '/' || (guchar)*p < 0x20 || (guchar)*p >= 0x7f)
      *p = '_';
  g_string_append_printf(e->code, "/* %s '%s' (node %u): %s */\n", e->n->op, l,
                         e->n->id, what);
}

static gboolean dw_emit(WeirNativeEmit *e, GError **error) {
  const WeirContainer *x = e->in[0].c, *w = e->in[1].c, *y = e->out[0].c;
  g_auto(WeirConvGeometry) geo = {0};
  if (!weir_conv_geometry_compute(
          e->n, FALSE, 2, (WeirExpr *const *)x->shape->pdata + 2,
          (WeirExpr *const *)w->shape->pdata + 2, &geo, error))
    return FALSE;
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirDepthwiseParams p;
  weir_kernel_depthwise_params(hw, &p);
  g_autofree char *text = weir_kernel_depthwise_text(&p);
  weir_kernel_act_record(e, p.isa, p.vl, WEIR_DTYPE_F32);
  weir_kernel_act_record(e, p.isa, p.vl / 2, WEIR_DTYPE_F32);
  e->helper(e, "weir_dwconv2d_f32", text);
  /* the tunable width: the node's "depthwise_vl" (p.vl or p.vl / 2), else
   * chosen per call */
  gint64 vl = weir_node_attr_int(e->n, WEIR_DEPTHWISE_VL_ATTR, 0);
  if (vl != (gint64)p.vl && vl != (gint64)(p.vl / 2))
    vl = 0;
  const char *bp = e->in[2].c ? e->in[2].ptr : "NULL";
  g_autofree char *n = e->expr_c(e, dim(x, 0)), *c = e->expr_c(e, dim(x, 1)),
                  *h = e->expr_c(e, dim(x, 2)), *wd = e->expr_c(e, dim(x, 3)),
                  *kh = e->expr_c(e, dim(w, 2)), *kw = e->expr_c(e, dim(w, 3)),
                  *oh = e->expr_c(e, dim(y, 2)), *ow = e->expr_c(e, dim(y, 3));
  g_autofree char *ph = e->expr_c(e, geo.pad_begin[0]);
  g_autofree char *pw = e->expr_c(e, geo.pad_begin[1]);
  /* the epilogue, when the code generator left it on the node */
  WeirEpilogueKind ep;
  const char *rp;
  g_autofree char *lo = NULL, *hi = NULL;
  if (!weir_kernel_epilogue_use(e, "the depthwise kernel", &ep, &rp, &lo, &hi,
                                error))
    return FALSE;
  g_autofree char *what =
      g_strdup_printf("depthwise%s", weir_kernel_epilogue_what(&ep));
  emit_header(e, what);
  g_string_append_printf(
      e->code,
      "weir_dwconv2d_f32(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %s, %s, %d, %s, %s, %" G_GINT64_FORMAT ");\n",
      e->in[0].ptr, e->in[1].ptr, bp, e->out[0].ptr, rp, n, c, h, wd, kh, kw,
      oh, ow, geo.strides[0], geo.strides[1], geo.dilations[0],
      geo.dilations[1], ph, pw, ep.act, lo, hi, vl);
  return TRUE;
}

static const WeirNativeImpl dw_impl = {.op = "Conv",
                                       .impl = "depthwise",
                                       .accepts = dw_accepts,
                                       .emit = dw_emit,
                                       .takes_epilogue =
                                           weir_kernel_takes_epilogue};

void weir_native_register_depthwise(void) {
  weir_native_register(&dw_impl);
}
