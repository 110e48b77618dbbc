/* gemm.c — Weir's GEMM as C text (weir-kernels.h).
 *
 * Conventions of this file:
 *  - The emitted text is a template: "@T@" the element type, "@S@" the
 *    suffix (f32, f64), "@MR@", "@NR@", "@NV@", "@VL@", "@KC@", "@MC@",
 *    "@NC@" the blocking, "@TGT@" the target attribute of the ISA's
 *    functions ("" for generic), and "@VEC@" the block of vector
 *    primitives of the ISA (vector type, zero, load, broadcast, fma, add,
 *    store), written once per ISA and dtype below.
 *  - The microkernel is one always_inline function over a constant number
 *    of vectors (nv); it is instantiated for nv = 1..NV so a narrow edge in
 *    N costs only its vectors.  Its loops have constant trip counts and
 *    GCC unroll pragmas, so the accumulators live in registers.
 *  - Row-major throughout; transposes are handled by the packing.
 */
#include <gio/gio.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"

/* ------------------------------------------------------------ blocking */

static guint round_down(guint v, guint m) {
  return v / m * m;
}

void weir_kernel_gemm_blocking(const WeirHwProfile *hw, WeirDType t,
                               WeirGemmBlocking *out) {
  guint es = t == WEIR_DTYPE_F64 ? 8 : 4;
  WeirGemmBlocking b = {.isa = hw ? hw->isa : WEIR_HW_ISA_GENERIC};
  switch (b.isa) {
  case WEIR_HW_ISA_AVX512:
    /* 32 zmm: 8 x 3 accumulators, 3 B vectors, 1 broadcast */
    b.vl = 64 / es;
    b.mr = 8;
    b.nv = 3;
    break;
  case WEIR_HW_ISA_AVX2:
    /* 16 ymm: 6 x 2 accumulators, 2 B vectors, 1 broadcast */
    b.vl = 32 / es;
    b.mr = 6;
    b.nv = 2;
    break;
  case WEIR_HW_ISA_GENERIC:
    b.vl = 16 / es;
    b.mr = 4;
    b.nv = 4;
    break;
  }
  b.nr = b.nv * b.vl;
  /* the transposed microtile (f32): as many accumulators, the columns
   * broadcast; AVX-512 3 x 8 (24 zmm, 3 A vectors, 1 broadcast), AVX2 3 x
   * 4 (12 ymm), portable 4 x 4 */
  if (es == 4) {
    b.tmv = b.isa == WEIR_HW_ISA_GENERIC ? 4 : 3;
    b.tnr = b.isa == WEIR_HW_ISA_AVX512 ? 8 : 4;
    b.tmr = b.tmv * b.vl;
  }
  gint64 l1 = hw && hw->l1d_bytes > 0 ? hw->l1d_bytes : 32 * 1024;
  gint64 l2 = hw && hw->l2_bytes > 0 ? hw->l2_bytes : 256 * 1024;
  /* an A micro-panel (MR x KC) stays in L1 while the B micro-panels stream
   * past it: a sixth of L1 (KC 256 for f32 on AVX-512 with a 48 KiB L1;
   * 384 measured slower there) */
  guint kc = (guint)(l1 / 6 / (b.mr * es));
  b.kc = CLAMP(round_down(kc, 16), 64, 512);
  /* the packed B block (KC x NC) stays in L2: half of it */
  guint nc = (guint)(l2 / 2 / (b.kc * es));
  b.nc = MAX(round_down(nc, b.nr), b.nr);
  /* the packed A block (MC x KC): as much again */
  guint mc = (guint)(l2 / 2 / (b.kc * es));
  b.mc = MAX(round_down(mc, b.mr), b.mr);
  if (b.tnr) {
    /* the transposed driver: its B micro-panel (TNR x TKC) in half of L1
     * (768 for f32 on AVX-512 with a 48 KiB L1: ResNet's 512 -> 512 3x3
     * on 7x7, K 4608, 11% faster than at 256), its A block (TMC x TKC)
     * in half of L2 */
    guint tkc = (guint)(l1 / 2 / (b.tnr * es));
    b.tkc = CLAMP(round_down(tkc, 16), 64, 2048);
    b.tab = (guint)MAX(l2 / 2 / es, (gint64)b.tkc * b.tmr);
  }
  /* each thread of a GEMM packs into its own buffers (no barrier inside a
   * call): room for one per logical core */
  guint cores =
      hw && hw->logical_cores > 0 ? hw->logical_cores : g_get_num_processors();
  b.threads = CLAMP(cores, 1, WEIR_GEMM_MAX_THREADS);
  g_strlcpy(b.id, es == 8 ? "f64" : "f32", sizeof b.id);
  *out = b;
}

/* The node's INT attribute `name` into *v when present: in [lo, hi]. */
static gboolean attr_uint(const WeirNode *n, const char *name, guint lo,
                          guint hi, guint *v, gboolean *set, GError **error) {
  if (!n || !weir_node_attr(n, name))
    return TRUE;
  gint64 x = weir_node_attr_int(n, name, -1);
  if (x < lo || x > hi) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "node %u ('%s'): attribute '%s' is %" G_GINT64_FORMAT
                "; Weir's GEMM takes %u to %u",
                n->id, n->label ? n->label : "", name, x, lo, hi);
    return FALSE;
  }
  *v = (guint)x;
  *set = TRUE;
  return TRUE;
}

gboolean weir_kernel_gemm_blocking_node(const WeirHwProfile *hw, WeirDType t,
                                        const WeirNode *n,
                                        WeirGemmBlocking *out, GError **error) {
  WeirGemmBlocking b;
  weir_kernel_gemm_blocking(hw, t, &b);
  gboolean set = FALSE;
  if (!attr_uint(n, WEIR_GEMM_ATTR_MR, 1, 32, &b.mr, &set, error) ||
      !attr_uint(n, WEIR_GEMM_ATTR_NV, 1, 8, &b.nv, &set, error) ||
      !attr_uint(n, WEIR_GEMM_ATTR_KC, 1, 1 << 16, &b.kc, &set, error) ||
      !attr_uint(n, WEIR_GEMM_ATTR_MC, 1, 1 << 20, &b.mc, &set, error) ||
      !attr_uint(n, WEIR_GEMM_ATTR_NC, 1, 1 << 20, &b.nc, &set, error))
    return FALSE;
  if (set) {
    /* the driver's blocks are whole microtiles */
    b.nr = b.nv * b.vl;
    b.mc = MAX(round_down(b.mc, b.mr), b.mr);
    b.nc = MAX(round_down(b.nc, b.nr), b.nr);
    if (b.tnr) {
      b.tkc = b.kc;
      b.tab = MAX(b.mc, b.tmr) * b.kc;
    }
    g_snprintf(b.id, sizeof b.id, "%s_%ux%u_%u_%u_%u",
               t == WEIR_DTYPE_F64 ? "f64" : "f32", b.mr, b.nr, b.kc, b.mc,
               b.nc);
  }
  *out = b;
  return TRUE;
}

/* ------------------------------------------------------- vector blocks */

static const char vec_avx512_f32[] =
    "#include <immintrin.h>\n"
    "typedef __m512 weir_gemm_v_f32;\n"
    "#define WEIR_GEMM_INL_f32 static inline __attribute__((always_inline, "
    "target(\"avx512f,fma\")))\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vzero_f32(void) { return "
    "_mm512_setzero_ps(); }\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vload_f32(const float *p) { return "
    "_mm512_loadu_ps(p); }\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vset_f32(float x) { return "
    "_mm512_set1_ps(x); }\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vfma_f32(__m512 a, __m512 b, __m512 "
    "c) { return _mm512_fmadd_ps(a, b, c); }\n"
    "/* a > b ? a : b and a < b ? a : b (b when either is NaN) */\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vmax_f32(__m512 a, __m512 b) { "
    "return _mm512_max_ps(a, b); }\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vmin_f32(__m512 a, __m512 b) { "
    "return _mm512_min_ps(a, b); }\n"
    "WEIR_GEMM_INL_f32 __m512 weir_gemm_vadd_f32(__m512 a, __m512 b) { "
    "return _mm512_add_ps(a, b); }\n"
    "WEIR_GEMM_INL_f32 void weir_gemm_vstore_f32(float *p, __m512 v) { "
    "_mm512_storeu_ps(p, v); }\n";

static const char vec_avx512_f64[] =
    "#include <immintrin.h>\n"
    "typedef __m512d weir_gemm_v_f64;\n"
    "#define WEIR_GEMM_INL_f64 static inline __attribute__((always_inline, "
    "target(\"avx512f,fma\")))\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vzero_f64(void) { return "
    "_mm512_setzero_pd(); }\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vload_f64(const double *p) { "
    "return _mm512_loadu_pd(p); }\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vset_f64(double x) { return "
    "_mm512_set1_pd(x); }\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vfma_f64(__m512d a, __m512d b, "
    "__m512d c) { return _mm512_fmadd_pd(a, b, c); }\n"
    "/* a > b ? a : b and a < b ? a : b (b when either is NaN) */\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vmax_f64(__m512d a, __m512d b) { "
    "return _mm512_max_pd(a, b); }\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vmin_f64(__m512d a, __m512d b) { "
    "return _mm512_min_pd(a, b); }\n"
    "WEIR_GEMM_INL_f64 __m512d weir_gemm_vadd_f64(__m512d a, __m512d b) { "
    "return _mm512_add_pd(a, b); }\n"
    "WEIR_GEMM_INL_f64 void weir_gemm_vstore_f64(double *p, __m512d v) { "
    "_mm512_storeu_pd(p, v); }\n";

static const char vec_avx2_f32[] =
    "#include <immintrin.h>\n"
    "typedef __m256 weir_gemm_v_f32;\n"
    "#define WEIR_GEMM_INL_f32 static inline __attribute__((always_inline, "
    "target(\"avx2,fma\")))\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vzero_f32(void) { return "
    "_mm256_setzero_ps(); }\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vload_f32(const float *p) { return "
    "_mm256_loadu_ps(p); }\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vset_f32(float x) { return "
    "_mm256_set1_ps(x); }\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vfma_f32(__m256 a, __m256 b, __m256 "
    "c) { return _mm256_fmadd_ps(a, b, c); }\n"
    "/* a > b ? a : b and a < b ? a : b (b when either is NaN) */\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vmax_f32(__m256 a, __m256 b) { "
    "return _mm256_max_ps(a, b); }\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vmin_f32(__m256 a, __m256 b) { "
    "return _mm256_min_ps(a, b); }\n"
    "WEIR_GEMM_INL_f32 __m256 weir_gemm_vadd_f32(__m256 a, __m256 b) { "
    "return _mm256_add_ps(a, b); }\n"
    "WEIR_GEMM_INL_f32 void weir_gemm_vstore_f32(float *p, __m256 v) { "
    "_mm256_storeu_ps(p, v); }\n";

static const char vec_avx2_f64[] =
    "#include <immintrin.h>\n"
    "typedef __m256d weir_gemm_v_f64;\n"
    "#define WEIR_GEMM_INL_f64 static inline __attribute__((always_inline, "
    "target(\"avx2,fma\")))\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vzero_f64(void) { return "
    "_mm256_setzero_pd(); }\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vload_f64(const double *p) { "
    "return _mm256_loadu_pd(p); }\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vset_f64(double x) { return "
    "_mm256_set1_pd(x); }\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vfma_f64(__m256d a, __m256d b, "
    "__m256d c) { return _mm256_fmadd_pd(a, b, c); }\n"
    "/* a > b ? a : b and a < b ? a : b (b when either is NaN) */\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vmax_f64(__m256d a, __m256d b) { "
    "return _mm256_max_pd(a, b); }\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vmin_f64(__m256d a, __m256d b) { "
    "return _mm256_min_pd(a, b); }\n"
    "WEIR_GEMM_INL_f64 __m256d weir_gemm_vadd_f64(__m256d a, __m256d b) { "
    "return _mm256_add_pd(a, b); }\n"
    "WEIR_GEMM_INL_f64 void weir_gemm_vstore_f64(double *p, __m256d v) { "
    "_mm256_storeu_pd(p, v); }\n";

/* Portable: GCC vector extensions of 16 bytes; loads and stores through
 * memcpy (no alignment assumed), a * b + c (contracted where the target
 * has FMA). */
static const char vec_generic[] =
    "typedef @T@ weir_gemm_v_@S@ __attribute__((vector_size(16)));\n"
    "#define WEIR_GEMM_INL_@S@ static inline __attribute__((always_inline))\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vzero_@S@(void) { "
    "weir_gemm_v_@S@ v = {0}; return v; }\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vload_@S@(const @T@ *p) { "
    "weir_gemm_v_@S@ v; memcpy(&v, p, sizeof v); return v; }\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vset_@S@(@T@ x) { "
    "weir_gemm_v_@S@ v = weir_gemm_vzero_@S@(); return v + x; }\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vfma_@S@(weir_gemm_v_@S@ a, "
    "weir_gemm_v_@S@ b, weir_gemm_v_@S@ c) { return a * b + c; }\n"
    "/* a > b ? a : b and a < b ? a : b, lane by lane (b when either is\n"
    " * NaN) */\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vmax_@S@(weir_gemm_v_@S@ a, "
    "weir_gemm_v_@S@ b) { for (unsigned i = 0; i < sizeof a / sizeof a[0]; "
    "i++) b[i] = a[i] > b[i] ? a[i] : b[i]; return b; }\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vmin_@S@(weir_gemm_v_@S@ a, "
    "weir_gemm_v_@S@ b) { for (unsigned i = 0; i < sizeof a / sizeof a[0]; "
    "i++) b[i] = a[i] < b[i] ? a[i] : b[i]; return b; }\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_vadd_@S@(weir_gemm_v_@S@ a, "
    "weir_gemm_v_@S@ b) { return a + b; }\n"
    "WEIR_GEMM_INL_@S@ void weir_gemm_vstore_@S@(@T@ *p, weir_gemm_v_@S@ v) "
    "{ memcpy(p, &v, sizeof v); }\n";

/* -------------------------------------------------------------- kernel */

static const char gemm_head[] =
    "/* Weir's GEMM (docs/native.md, implementation \"weir\") for @ISA@:\n"
    " * microtile MR @MR@ x NR @NR@ (@NV@ vectors of @VL@), blocks KC @KC@,\n"
    " * MC @MC@, NC @NC@ (from the hardware profile's cache sizes; the\n"
    " * transposed tile's KC @TKC@, A blocks of @TAB@ elements); packing\n"
    " * buffers for @THREADS@ threads (the profile's logical cores). */\n";

static const char gemm_ukr[] =
    "/* The part of a product's epilogue that a full microtile applies to its\n"
    " * accumulators before its one store (mobile14i): a bias per row\n"
    " * (bias[i] for row i of the tile, or NULL), then a residual (r[i * ldr\n"
    " * + j] for the tile's element (i, j), or NULL; conv14k), then a clip to\n"
    " * [lo, hi] when act is 1, or (f32) sigmoid, SiLU or HardSwish when act\n"
    " * is 2, 3 or 4 (silu14o; weir_act_apply on the vector): the order of\n"
    " * weir_gemm_epi, so the same bits.  The driver passes it for the last\n"
    " * K block when that is the whole epilogue (ReLU, ReLU6, SiLU, bias\n"
    " * only, a residual block's Add + ReLU); otherwise, and for edge tiles,\n"
    " * it calls weir_gemm_epi after the store. */\n"
    "typedef struct {\n"
    "  const @T@ *bias;\n"
    "  int act; /* as weir_gemm_epilogue's, 0 to @FASTMAX@ */\n"
    "  @T@ lo, hi;\n"
    "  const @T@ *r;\n"
    "  int64_t ldr;\n"
    "} weir_gemm_fast_@S@;\n"
    "/* c[mr x nr] = (acc ? c : 0) + ap^T bp over kc: ap is an A panel\n"
    " * (kc x MR, alpha folded in), bp a B panel (kc rows of NR, ldp apart:\n"
    " * NR when packed, zero-padded, so the loop is always full; B's row\n"
    " * stride when read in place, conv14n); the first nv vectors of each B\n"
    " * row are used.  Edge tiles (mr < MR or nr < nv * VL) go through a\n"
    " * buffer.  pf + k * MR is prefetched at step k: the next pre-packed A\n"
    " * panel, spread over the loop (mob17), or ap itself (a no-op). */\n"
    "WEIR_GEMM_INL_@S@ void weir_gemm_ukr_@S@(const int nv, const int fa,\n"
    "                                        int64_t kc,\n"
    "                                        const @T@ *restrict ap,\n"
    "                                        const @T@ *restrict bp,\n"
    "                                        int64_t ldp,\n"
    "                                        @T@ *restrict c, int64_t ldc,\n"
    "                                        int64_t mr, int64_t nr, int acc,\n"
    "                                        const weir_gemm_fast_@S@ *fe,\n"
    "                                        const @T@ *pf) {\n"
    "  (void)fa;\n"
    "  weir_gemm_v_@S@ r[@MR@][@NV@];\n"
    "#pragma GCC unroll 32\n"
    "  for (int i = 0; i < @MR@; i++)\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @NV@; v++)\n"
    "      r[i][v] = weir_gemm_vzero_@S@();\n"

    "  for (int64_t k = 0; k < kc; k++) {\n"
    "    __builtin_prefetch(pf + k * @MR@, 0, 2);\n"
    "    weir_gemm_v_@S@ b[@NV@];\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @NV@; v++)\n"
    "      b[v] = v < nv ? weir_gemm_vload_@S@(bp + k * ldp + v * @VL@)\n"
    "                    : weir_gemm_vzero_@S@();\n"
    "#pragma GCC unroll 32\n"
    "    for (int i = 0; i < @MR@; i++) {\n"
    "      const weir_gemm_v_@S@ a = weir_gemm_vset_@S@(ap[k * @MR@ + i]);\n"
    "#pragma GCC unroll 8\n"
    "      for (int v = 0; v < @NV@; v++)\n"
    "        if (v < nv)\n"
    "          r[i][v] = weir_gemm_vfma_@S@(a, b[v], r[i][v]);\n"
    "    }\n"
    "  }\n"
    "  if (mr == @MR@ && nr == nv * @VL@) {\n"
    "@FASTACT@"
    "#pragma GCC unroll 32\n"
    "    for (int i = 0; i < @MR@; i++)\n"
    "#pragma GCC unroll 8\n"
    "      for (int v = 0; v < @NV@; v++) {\n"
    "        if (v >= nv)\n"
    "          continue;\n"
    "        @T@ *p = c + i * ldc + v * @VL@;\n"
    "        weir_gemm_v_@S@ w =\n"
    "            acc ? weir_gemm_vadd_@S@(weir_gemm_vload_@S@(p), r[i][v])\n"
    "                : r[i][v];\n"
    "        if (fe) {\n"
    "          if (fe->bias)\n"
    "            w = weir_gemm_vadd_@S@(w, weir_gemm_vset_@S@(fe->bias[i]));\n"
    "          if (fe->r)\n"
    "            w = weir_gemm_vadd_@S@(\n"
    "                w, weir_gemm_vload_@S@(fe->r + i * fe->ldr + v * @VL@));\n"
    "          if (fe->act == 1) {\n"
    "            w = weir_gemm_vmax_@S@(weir_gemm_vset_@S@(fe->lo), w);\n"
    "            w = weir_gemm_vmin_@S@(weir_gemm_vset_@S@(fe->hi), w);\n"
    "          }\n"
    "        }\n"
    "        weir_gemm_vstore_@S@(p, w);\n"
    "      }\n"
    "    return;\n"
    "  }\n"
    "  @T@ t[@MR@ * @NR@];\n"
    "#pragma GCC unroll 32\n"
    "  for (int i = 0; i < @MR@; i++)\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @NV@; v++)\n"
    "      if (v < nv)\n"
    "        weir_gemm_vstore_@S@(t + i * @NR@ + v * @VL@, r[i][v]);\n"
    "  for (int64_t i = 0; i < mr; i++)\n"
    "    for (int64_t j = 0; j < nr; j++)\n"
    "      c[i * ldc + j] = acc ? c[i * ldc + j] + t[i * @NR@ + j]\n"
    "                           : t[i * @NR@ + j];\n"
    "}\n";

/* @FASTACT@ for f32: sigmoid, SiLU and HardSwish on the accumulator
 * vectors, weir_act_apply with a constant act (one activation inlined
 * per branch, not the whole switch). */
static const char gemm_fast_act[] =
    "    /* sigmoid, SiLU, HardSwish: a loop of their own, in the\n"
    "     * instances with fa 1 only (weir_gemm_ukr<nv>a), so that the\n"
    "     * clip's keep their code */\n"
    "    if (fa && fe && fe->act > 1) {\n"
    "      const int act = fe->act;\n"
    "#pragma GCC unroll 32\n"
    "      for (int i = 0; i < @MR@; i++)\n"
    "#pragma GCC unroll 8\n"
    "        for (int v = 0; v < @NV@; v++) {\n"
    "          if (v >= nv)\n"
    "            continue;\n"
    "          @T@ *p = c + i * ldc + v * @VL@;\n"
    "          weir_gemm_v_@S@ w =\n"
    "              acc ? weir_gemm_vadd_@S@(weir_gemm_vload_@S@(p), r[i][v])\n"
    "                  : r[i][v];\n"
    "          if (fe->bias)\n"
    "            w = weir_gemm_vadd_@S@(w, weir_gemm_vset_@S@(fe->bias[i]));\n"
    "          if (fe->r)\n"
    "            w = weir_gemm_vadd_@S@(\n"
    "                w, weir_gemm_vload_@S@(fe->r + i * fe->ldr + v * @VL@));\n"
    "          const weir_act_v@VL@ x = (weir_act_v@VL@)w;\n"
    "          w = (weir_gemm_v_@S@)(\n"
    "              act == 3   ? weir_act_apply@VL@(x, 3, 0.0f, 0.0f)\n"
    "              : act == 2 ? weir_act_apply@VL@(x, 2, 0.0f, 0.0f)\n"
    "                         : weir_act_apply@VL@(x, 4, 0.0f, 0.0f));\n"
    "          weir_gemm_vstore_@S@(p, w);\n"
    "        }\n"
    "      return;\n"
    "    }\n";

/* one per nv = @N@, and (f32) again with fa 1 (@A@ "a") */
static const char gemm_ukr_n[] =
    "static @TGT@ void weir_gemm_ukr@N@@A@_@S@(int64_t kc, const @T@ *ap,\n"
    "                                      const @T@ *bp, int64_t ldp,\n"
    "                                      @T@ *c, int64_t ldc, int64_t mr,\n"
    "                                      int64_t nr, int acc,\n"
    "                                      const weir_gemm_fast_@S@ *fe,\n"
    "                                      const @T@ *pf) {\n"
    "  weir_gemm_ukr_@S@(@N@, @F@, kc, ap, bp, ldp, c, ldc, mr, nr, acc, fe,\n"
    "                    pf);\n"
    "}\n";

/* The epilogue (f32 gets the vector loop, @VECEPI@). */
static const char gemm_epi[] =
    "/* The epilogue of a product: c = act(c * scale + bias[row] + cb[col]\n"
    " * + r[row, col]),\n"
    " * applied to each microtile right after its last store (while it is in\n"
    " * L1), so the output is written once. */\n"
    "typedef struct {\n"
    "  const @T@ *bias; /* one per row of c, or NULL */\n"
    "  const @T@ *r;    /* r[i * ldr + j] added, or NULL */\n"
    "  int64_t ldr;\n"
    "  int act; /* as weir_act1_@DT@: 0 none, 1 clip, 2 sigmoid, 3 SiLU,\n"
    "              4 HardSwish, 5 GELU */\n"
    "  @T@ lo, hi;\n"
    "  const @T@ *cb; /* one per column of c, or NULL */\n"
    "  @T@ scale;     /* c times scale first */\n"
    "} weir_gemm_epilogue_@S@;\n"
    "\n"
    "/* rows [row0, row0 + mr) x columns [col0, col0 + nr) of c, cp at the\n"
    " * first of them */\n"
    "static @TGT@ void weir_gemm_epi_@S@(const weir_gemm_epilogue_@S@ *ep,\n"
    "                                   @T@ *cp, int64_t ldc, int64_t row0,\n"
    "                                   int64_t col0, int64_t mr, int64_t nr) "
    "{\n"
    "  for (int64_t i = 0; i < mr; i++) {\n"
    "    @T@ *ci = cp + i * ldc;\n"
    "    const @T@ bb = ep->bias ? ep->bias[row0 + i] : (@T@)0;\n"
    "    const @T@ *ri = ep->r ? ep->r + (row0 + i) * ep->ldr + col0 : NULL;\n"
    "    const @T@ *cbi = ep->cb ? ep->cb + col0 : NULL;\n"
    "    int64_t j = 0;\n"
    "@VECEPI@"
    "    for (; j < nr; j++) {\n"
    "      @T@ v = ci[j] * ep->scale + bb;\n"
    "      if (cbi)\n"
    "        v += cbi[j];\n"
    "      if (ri)\n"
    "        v += ri[j];\n"
    "      ci[j] = weir_act1_@DT@(v, ep->act, ep->lo, ep->hi);\n"
    "    }\n"
    "  }\n"
    "}\n";

/* @VECEPI@ for f32: whole vectors of the ISA's width (weir_act_v@VL@). */
static const char gemm_epi_vec[] =
    "    const weir_act_v@VL@ vb = weir_act_set@VL@(bb);\n"
    "    for (; j + @VL@ <= nr; j += @VL@) {\n"
    "      weir_act_v@VL@ v = weir_act_load@VL@(ci + j) * ep->scale + vb;\n"
    "      if (cbi)\n"
    "        v += weir_act_load@VL@(cbi + j);\n"
    "      if (ri)\n"
    "        v += weir_act_load@VL@(ri + j);\n"
    "      v = weir_act_apply@VL@(v, ep->act, ep->lo, ep->hi);\n"
    "      memcpy(ci + j, &v, sizeof v);\n"
    "    }\n";

/* @IMGATHER@ of gemm_pack for f32 on AVX-512 (the call) and its function,
 * pasted before the packing routines. */
static const char gemm_pack_gather_fn[] =
    "/* weir_gemm_pack_im's table path with AVX-512 masked gathers: 16 lanes\n"
    " * at a time, two rows of an 8-wide panel or 16 columns of a row.  xc:\n"
    " * the plane of row pc (kernel offset i, j); th, tw, tx: as there; the "
    "lanes\n"
    " * whose input lies in the padding are masked (not read) and stored 0.\n"
    " * Offsets are int32 (the caller checks that they fit). */\n"
    "static __attribute__((target(\"avx512f\"), noinline)) void\n"
    "weir_gemm_pack_gather_@S@(const weir_gemm_patches_@S@ *im, const float "
    "*xc,\n"
    "                          const int32_t *th, const int32_t *tw,\n"
    "                          const int32_t *tx, int64_t kc,\n"
    "                          int64_t i, int64_t j, float *dst) {\n"
    "  const int64_t kh = im->kh, kw = im->kw;\n"
    "  const int32_t dh = (int32_t)im->dh, dw = (int32_t)im->dw;\n"
    "  const int32_t wd = (int32_t)im->wd, plane = (int32_t)(im->h * im->wd);\n"
    "  const __m512i vh = _mm512_set1_epi32((int32_t)im->h);\n"
    "  const __m512i vw = _mm512_set1_epi32(wd);\n"
    "  int32_t c = 0; /* offset of the row's plane from xc */\n"
    "  if (@NR@ == 8) {\n"
    "    const __m256i h8 = _mm256_loadu_si256((const void *)th);\n"
    "    const __m256i w8 = _mm256_loadu_si256((const void *)tw);\n"
    "    const __m512i bh = _mm512_inserti64x4(_mm512_castsi256_si512(h8), h8, "
    "1);\n"
    "    const __m512i bw = _mm512_inserti64x4(_mm512_castsi256_si512(w8), w8, "
    "1);\n"
    "    const __m256i x8 = _mm256_loadu_si256((const void *)tx);\n"
    "    const __m512i bx = _mm512_inserti64x4(_mm512_castsi256_si512(x8), x8, "
    "1);\n"
    "    const __m512i bi = _mm512_add_epi32(\n"
    "        _mm512_add_epi32(_mm512_mullo_epi32(bh, vw), bw), bx);\n"
    "    for (int64_t k = 0; k < kc; k += 2) {\n"
    "      int32_t oi[2], oj[2], off[2];\n"
    "      for (int r = 0; r < 2; r++) {\n"
    "        oi[r] = (int32_t)i * dh;\n"
    "        oj[r] = (int32_t)j * dw;\n"
    "        off[r] = c + oi[r] * wd + oj[r];\n"
    "        if (r == 0 && k + 1 >= kc)\n"
    "          break;\n"
    "        if (++j == kw) {\n"
    "          j = 0;\n"
    "          if (++i == kh) {\n"
    "            i = 0;\n"
    "            c += plane;\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "      const __mmask16 keep = k + 1 < kc ? 0xffff : 0x00ff;\n"
    "      const __m512i vi = "
    "_mm512_mask_set1_epi32(_mm512_set1_epi32(oi[0]),\n"
    "                                                0xff00, oi[1]);\n"
    "      const __m512i vj = "
    "_mm512_mask_set1_epi32(_mm512_set1_epi32(oj[0]),\n"
    "                                                0xff00, oj[1]);\n"
    "      const __m512i vo = "
    "_mm512_mask_set1_epi32(_mm512_set1_epi32(off[0]),\n"
    "                                                0xff00, off[1]);\n"
    "      const __mmask16 in =\n"
    "          keep &\n"
    "          _mm512_cmplt_epu32_mask(_mm512_add_epi32(bh, vi), vh) &\n"
    "          _mm512_cmplt_epu32_mask(_mm512_add_epi32(bw, vj), vw);\n"
    "      const __m512 v = _mm512_mask_i32gather_ps(\n"
    "          _mm512_setzero_ps(), in, _mm512_add_epi32(bi, vo), xc, 4);\n"
    "      _mm512_mask_storeu_ps(dst + k * 8, keep, v);\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t k = 0; k < kc; k++) {\n"
    "    const int32_t oi = (int32_t)i * dh, oj = (int32_t)j * dw;\n"
    "    const __m512i vi = _mm512_set1_epi32(oi), vj = "
    "_mm512_set1_epi32(oj);\n"
    "    const __m512i vo = _mm512_set1_epi32(c + oi * wd + oj);\n"
    "    for (int t = 0; t < @NR@; t += 16) {\n"
    "      const __m512i bh = _mm512_loadu_si512((const void *)(th + t));\n"
    "      const __m512i bw = _mm512_loadu_si512((const void *)(tw + t));\n"
    "      const __m512i bi = _mm512_add_epi32(\n"
    "          _mm512_add_epi32(_mm512_mullo_epi32(bh, vw), bw),\n"
    "          _mm512_loadu_si512((const void *)(tx + t)));\n"
    "      const __mmask16 in =\n"
    "          _mm512_cmplt_epu32_mask(_mm512_add_epi32(bh, vi), vh) &\n"
    "          _mm512_cmplt_epu32_mask(_mm512_add_epi32(bw, vj), vw);\n"
    "      _mm512_storeu_ps(dst + k * @NR@ + t,\n"
    "                       _mm512_mask_i32gather_ps(_mm512_setzero_ps(), in,\n"
    "                                                _mm512_add_epi32(bi, vo), "
    "xc,\n"
    "                                                4));\n"
    "    }\n"
    "    if (++j == kw) {\n"
    "      j = 0;\n"
    "      if (++i == kh) {\n"
    "        i = 0;\n"
    "        c += plane;\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n";

/* weir_gemm_pack_im on the panels of @RUNMIN@ <= ow < NR maps at stride 1
 * or 2 (f32 on AVX-512, NR a multiple of 16): its function and the call,
 * @IMRUNS@. */
static const char gemm_pack_runs_fn[] =
    "/* weir_gemm_pack_im on maps whose output rows are a good part of a "
    "panel\n"
    " * (@RUNMIN@ <= ow < @NR@, ow >= VW / 2: ResNet's 28x28 and 14x14 maps\n"
    " * on the usual tile, VW 16; its 7x7 maps on the transposed tile, VW 8)\n"
    " * at unit stride or stride 2, with AVX-512 masked loads and\n"
    " * permutes instead of gathers.  Each VW-lane vector of a panel row "
    "holds\n"
    " * at most three segments: lanes [l0, l1) from one output row, whose "
    "lane\n"
    " * l reads x[xo + l * sw + i * dh * wd + j * dw] at kernel offset (i, j)\n"
    " * (xo tabled once per panel).  Per patch row a segment is one masked "
    "load\n"
    " * at unit stride, two masked loads and a permute of their even elements\n"
    " * at stride 2, blended into the vector; the lanes whose input lies in "
    "the\n"
    " * padding (tabled per kernel row i and column j) are not read and stay "
    "0.\n"
    " * i, j: kernel offset of row pc, xc its plane; p0, q0, n0: the output "
    "row,\n"
    " * column and image of the panel's first column, w its columns. */\n"
    "static __attribute__((target(\"@VTGT@\"), noinline)) void\n"
    "weir_gemm_pack_runs_@S@(const weir_gemm_patches_@S@ *im, const float "
    "*xc,\n"
    "                        int64_t kc, int64_t i, int64_t j, int64_t p0,\n"
    "                        int64_t q0, int64_t n0, int64_t w, float *dst) {\n"
    "  const int64_t h = im->h, wd = im->wd, ow = im->ow, sw = im->sw;\n"
    "  const int64_t kh = im->kh, kw = im->kw, dh = im->dh, dw = im->dw;\n"
    "  const int64_t oh = im->oh > 0 ? im->oh : INT64_MAX;\n"
    "  /* segment s of vector v: xo[v][s]; per kernel column jj the lanes\n"
    "   * inside the image (lm, and em their elements' positions in the two\n"
    "   * vectors loaded at stride 2), per kernel row ii whether its input "
    "row\n"
    "   * is inside (rok, bit ii) */\n"
    "  int64_t xo[@NR@ / @VW@][3];\n"
    "  uint16_t lm[@NR@ / @VW@][3][16];\n"
    "  uint32_t em[@NR@ / @VW@][3][16], rok[@NR@ / @VW@][3];\n"
    "  int ns[@NR@ / @VW@];\n"
    "  for (int v = 0; v < @NR@ / @VW@; v++)\n"
    "    ns[v] = 0;\n"
    "  for (int64_t t = 0, p = p0, qq = q0, in = n0; t < w;) {\n"
    "    const int64_t run = ow - qq < w - t ? ow - qq : w - t;\n"
    "    const int64_t ih0 = p * im->sh - im->ph;\n"
    "    /* the run's columns [t, t + run), cut at the vectors' edges */\n"
    "    for (int64_t u = t; u < t + run;) {\n"
    "      const int v = (int)(u / @VW@), s = ns[v]++;\n"
    "      const int64_t l0 = u % @VW@,\n"
    "                    l1 = t + run - @VW@ * v < @VW@ ? t + run - @VW@ * v : "
    "@VW@;\n"
    "      const int64_t qs = qq + (u - t); /* output column of lane l0 */\n"
    "      xo[v][s] = in * im->xn + ih0 * wd + (qs - l0) * sw - im->pw;\n"
    "      uint32_t ok = 0;\n"
    "      for (int64_t ii = 0; ii < kh; ii++)\n"
    "        ok |= (uint32_t)(ih0 + ii * dh >= 0 && ih0 + ii * dh < h) << ii;\n"
    "      rok[v][s] = ok;\n"
    "      for (int64_t jj = 0; jj < kw; jj++) {\n"
    "        uint32_t m = 0, e = 0;\n"
    "        for (int64_t l = l0; l < l1; l++) {\n"
    "          const int64_t iw = (qs + l - l0) * sw - im->pw + jj * dw;\n"
    "          if (iw >= 0 && iw < wd) {\n"
    "            m |= (uint32_t)1 << l;\n"
    "            e |= (uint32_t)1 << (sw == 1 ? l : 2 * l);\n"
    "          }\n"
    "        }\n"
    "        lm[v][s][jj] = (uint16_t)m;\n"
    "        em[v][s][jj] = e;\n"
    "      }\n"
    "      u += l1 - l0;\n"
    "    }\n"
    "    t += run;\n"
    "    qq = 0;\n"
    "    if (++p == oh) {\n"
    "      p = 0;\n"
    "      in++;\n"
    "    }\n"
    "  }\n"
    "  /* the even elements of two vectors (a, b) */\n"
    "  const @VI@ ev = @EV@;\n"
    "  for (int64_t k = 0; k < kc; k++) {\n"
    "    const float *xk = xc + i * dh * wd + j * dw;\n"
    "    float *d = dst + k * @NR@;\n"
    "    for (int v = 0; v < @NR@ / @VW@; v++) {\n"
    "      @VT@ acc = @VP@_setzero_ps();\n"
    "      for (int s = 0; s < ns[v]; s++) {\n"
    "        if (!(rok[v][s] >> i & 1))\n"
    "          continue;\n"
    "        const @VK@ m = lm[v][s][j];\n"
    "        const float *src = xk + xo[v][s];\n"
    "        if (sw == 1) {\n"
    "          acc = @VP@_mask_loadu_ps(acc, m, src);\n"
    "        } else {\n"
    "          const uint32_t e = em[v][s][j];\n"
    "          const @VT@ lo = @VP@_maskz_loadu_ps((@VK@)e, src);\n"
    "          const @VT@ hi =\n"
    "              @VP@_maskz_loadu_ps((@VK@)(e >> @VW@), src + @VW@);\n"
    "          acc = @VP@_mask_mov_ps(acc, m,\n"
    "                                   @VP@_permutex2var_ps(lo, ev, hi));\n"
    "        }\n"
    "      }\n"
    "      @VP@_storeu_ps(d + @VW@ * v, acc);\n"
    "    }\n"
    "    if (++j == kw) {\n"
    "      j = 0;\n"
    "      if (++i == kh) {\n"
    "        i = 0;\n"
    "        xc += h * wd;\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n";

static const char gemm_pack_runs_call[] =
    "  if (@NR@ % @VW@ == 0 && ow >= @VW@ / 2 && ow >= @RUNMIN@ &&\n"
    "      ow < @NR@ &&\n"
    "      (im->sw == 1 || im->sw == 2) && kh <= 32 && kw <= 16) {\n"
    "    weir_gemm_pack_runs_@S@(im, xc, kc, i, j, p0, q0, n0, w, dst);\n"
    "    return;\n"
    "  }\n";

static const char gemm_pack_gather_call[] =
    "    if ((@NR@ == 8 || @NR@ % 16 == 0) &&\n"
    "        (kc / (kh * kw) + 2) * h * wd <= INT32_MAX / 2) {\n"
    "      weir_gemm_pack_gather_@S@(im, xc, th, tw, tx, kc, i, j, dst);\n"
    "      return;\n"
    "    }\n";

static const char gemm_driver[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* A convolution's patches as B (implicit im2col): row r = (ic, i, j) of\n"
    " * c * kh * kw, column = output pixel (p, q) of oh x ow; the element is\n"
    " * x[ic][p * sh + i * dh - ph][q * sw + j * dw - pw], zero outside the\n"
    " * image.  Gathered straight into the packed panels.  With oh > 0 the\n"
    " * columns span several images side by side: column = pixel of oh x ow\n"
    " * of image column / (oh * ow), whose x is xn elements after the\n"
    " * previous image's (oh 0: one image). */\n"
    "typedef struct {\n"
    "  const @T@ *x; /* c planes of h x wd */\n"
    "  int64_t h, wd, kh, kw, ow, sh, sw, dh, dw, ph, pw;\n"
    "  int64_t oh, xn;\n"
    "} weir_gemm_patches_@S@;\n"
    "\n";

/* The packing routines (instantiated twice for f32: @MR@, @NR@ the usual
 * microtile's, and as weir_gemm_tpack_* with the transposed one's). */
static const char gemm_pack[] =
    "/* weir_gemm_pack_im for B = the patches im: rows [pc, pc + kc), columns\n"
    " * [jc + q * NR, + NR) of panel q.  The kernel offset (ic, i, j) of a "
    "row\n"
    " * is counted up row by row (no division per row).  When the panel spans\n"
    " * more than one output row (ow < NR: the small maps), each column's\n"
    " * input row and column at kernel offset 0 are tabled once, and a row of\n"
    " * the panel is NR bounds-checked loads (zero in the padding), which the\n"
    " * compiler turns into masked gathers; otherwise per row the columns of\n"
    " * one output row at a time: zeros where the input column or row lies in\n"
    " * the padding, a copy between (unit stride and stride 2 as loops of a\n"
    " * constant stride, which vectorize). */\n"
    "static inline int64_t weir_gemm_pack_cdiv_@S@(int64_t a, int64_t s) {\n"
    "  return s == 1 ? a : s == 2 ? (a + 1) >> 1 : (a + s - 1) / s;\n"
    "}\n"
    "\n"
    "static inline void weir_gemm_pack_im_@S@(const weir_gemm_patches_@S@ "
    "*im,\n"
    "                                         int64_t pc, int64_t kc,\n"
    "                                         int64_t jc, int64_t nc, int64_t "
    "q,\n"
    "                                         @T@ *bp) {\n"
    "  const int64_t j0 = q * @NR@, w = nc - j0 < @NR@ ? nc - j0 : @NR@;\n"
    "  const int64_t oh = im->oh > 0 ? im->oh : INT64_MAX;\n"
    "  /* the first column's image, output row and column */\n"
    "  const int64_t g0 = (jc + j0) / im->ow, q0 = (jc + j0) % im->ow;\n"
    "  const int64_t n0 = g0 / oh, p0 = g0 % oh, xn = im->xn;\n"
    "  const int64_t h = im->h, wd = im->wd, ow = im->ow, sw = im->sw;\n"
    "  const int64_t kh = im->kh, kw = im->kw, dh = im->dh, dw = im->dw;\n"
    "  int64_t j = pc % kw, i = pc / kw % kh;\n"
    "  const @T@ *xc = im->x + pc / (kw * kh) * h * wd;\n"
    "  @T@ *dst = bp + q * kc * @NR@;\n"
    "  /* the table's int32 offsets: every row or column reached, padding\n"
    "   * and dilation included, and a plane's offsets stay far from the\n"
    "   * limit */\n"
    "  const int64_t rh = h + im->ph + (kh - 1) * dh;\n"
    "  const int64_t rw = wd + im->pw + (kw - 1) * dw;\n"
    "  /* the last column's image (its offset tabled too) */\n"
    "  const int64_t nl = (jc + j0 + (w > 0 ? w - 1 : 0)) / im->ow / oh;\n"
    "@IMRUNS@"
    "  if (ow < @NR@ && rh <= INT32_MAX / 8 && rw <= INT32_MAX / 8 &&\n"
    "      rh * wd <= INT32_MAX / 4 && nl * xn <= INT32_MAX / 4) {\n"
    "    /* tN[t]: input row and column of column t at kernel offset (0, 0),\n"
    "     * tx[t] the offset of its image; the panel's padding columns get a\n"
    "     * row that is never inside */\n"
    "    int32_t th[@NR@], tw[@NR@], tx[@NR@];\n"
    "    for (int64_t t = 0, p = p0, qq = q0, in = n0; t < @NR@; t++) {\n"
    "      th[t] = t < w ? (int32_t)(p * im->sh - im->ph) : INT32_MIN / 2;\n"
    "      tw[t] = t < w ? (int32_t)(qq * sw - im->pw) : 0;\n"
    "      tx[t] = t < w ? (int32_t)(in * xn) : 0;\n"
    "      if (++qq == ow) {\n"
    "        qq = 0;\n"
    "        if (++p == oh) {\n"
    "          p = 0;\n"
    "          in++;\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "@IMGATHER@"
    "    const uint32_t uh = (uint32_t)h, uw = (uint32_t)wd;\n"
    "    const int32_t iwd = (int32_t)wd;\n"
    "    for (int64_t k = 0; k < kc; k++) {\n"
    "      const int32_t oi = (int32_t)(i * dh), oj = (int32_t)(j * dw);\n"
    "      @T@ *d = dst + k * @NR@;\n"
    "      for (int t = 0; t < @NR@; t++) {\n"
    "        const int32_t ih = th[t] + oi, iw = tw[t] + oj;\n"
    "        d[t] = (uint32_t)ih < uh && (uint32_t)iw < uw\n"
    "                   ? xc[tx[t] + ih * iwd + iw]\n"
    "                   : (@T@)0;\n"
    "      }\n"
    "      if (++j == kw) {\n"
    "        j = 0;\n"
    "        if (++i == kh) {\n"
    "          i = 0;\n"
    "          xc += h * wd;\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t k = 0; k < kc; k++) {\n"
    "    const int64_t offh = i * dh - im->ph, off = j * dw - im->pw;\n"
    "    /* output columns whose input column is inside: [qlo, qhi) */\n"
    "    const int64_t qlo = off >= 0 ? 0 : weir_gemm_pack_cdiv_@S@(-off, "
    "sw);\n"
    "    const int64_t qhi = wd - off > 0 ? weir_gemm_pack_cdiv_@S@(wd - off, "
    "sw) : 0;\n"
    "    @T@ *d = dst + k * @NR@;\n"
    "    int64_t p = p0, qq = q0, t = 0, in = n0;\n"
    "    while (t < w) {\n"
    "      const int64_t run = ow - qq < w - t ? ow - qq : w - t;\n"
    "      const int64_t ih = p * im->sh + offh;\n"
    "      @T@ *dr = d + t; /* dr[x - qq]: output column x of this row */\n"
    "      const int64_t qe = qq + run;\n"
    "      if (ih < 0 || ih >= h) {\n"
    "        for (int64_t x = qq; x < qe; x++)\n"
    "          dr[x - qq] = (@T@)0;\n"
    "      } else {\n"
    "        const @T@ *src = xc + in * xn + ih * wd + off;\n"
    "        const int64_t a = qlo > qq ? (qlo < qe ? qlo : qe) : qq;\n"
    "        const int64_t b = qhi < qe ? (qhi > a ? qhi : a) : qe;\n"
    "        for (int64_t x = qq; x < a; x++)\n"
    "          dr[x - qq] = (@T@)0;\n"
    "        if (sw == 1)\n"
    "          for (int64_t x = a; x < b; x++)\n"
    "            dr[x - qq] = src[x];\n"
    "        else if (sw == 2)\n"
    "          for (int64_t x = a; x < b; x++)\n"
    "            dr[x - qq] = src[2 * x];\n"
    "        else\n"
    "          for (int64_t x = a; x < b; x++)\n"
    "            dr[x - qq] = src[x * sw];\n"
    "        for (int64_t x = b; x < qe; x++)\n"
    "          dr[x - qq] = (@T@)0;\n"
    "      }\n"
    "      t += run;\n"
    "      qq = 0;\n"
    "      if (++p == oh) {\n"
    "        p = 0;\n"
    "        in++;\n"
    "      }\n"
    "    }\n"
    "    for (; t < @NR@; t++)\n"
    "      d[t] = (@T@)0;\n"
    "    if (++j == kw) {\n"
    "      j = 0;\n"
    "      if (++i == kh) {\n"
    "        i = 0;\n"
    "        xc += h * wd;\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n"
    "/* B rows [pc, pc + kc) x columns [jc, jc + nc) into the NR-wide panels\n"
    " * [q0, q1) (kc x NR each, zero-padded).  B is read in its storage "
    "order:\n"
    " * a row of B (or of B^T) at a time, across every panel, so the reads "
    "are\n"
    " * contiguous (a panel at a time would read NR columns of each of kc "
    "rows\n"
    " * ldb apart, a stride the prefetchers do not follow well). */\n"
    "static inline void weir_gemm_pack_b_@S@(int tb, const @T@ *b, int64_t "
    "ldb,\n"
    "                                        int64_t pc, int64_t kc, int64_t "
    "jc,\n"
    "                                        int64_t nc, int64_t q0, int64_t "
    "q1,\n"
    "                                        @T@ *bp) {\n"
    "  if (!tb) {\n"
    "    const int64_t c0 = q0 * @NR@, c1 = q1 * @NR@ < nc ? q1 * @NR@ : nc;\n"
    "    for (int64_t k = 0; k < kc; k++) {\n"
    "      const @T@ *s = b + (pc + k) * ldb + jc;\n"
    "      /* the row 4 ahead on its way from memory (the rows are ldb\n"
    "       * apart, each a few pages at most: the hardware prefetchers stop\n"
    "       * at page boundaries) */\n"
    "      if (k + 4 < kc)\n"
    "        for (int64_t j = c0; j < c1; j += 64 / sizeof(@T@))\n"
    "          __builtin_prefetch(s + 4 * ldb + j);\n"
    "      for (int64_t q = q0; q < q1; q++) {\n"
    "        const int64_t j0 = q * @NR@, w = nc - j0 < @NR@ ? nc - j0 : "
    "@NR@;\n"
    "        @T@ *d = bp + q * kc * @NR@ + k * @NR@;\n"
    "        if (w == @NR@) {\n"
    "          memcpy(d, s + j0, @NR@ * sizeof(@T@));\n"
    "        } else {\n"
    "          /* the whole row zeroed at its constant width first: a\n"
    "           * store or two, where zeroing [w, NR) became a rep stosq\n"
    "           * per row (a GEMV's B, one column wide, took 60% of the\n"
    "           * transposed driver's own time in it, r52) */\n"
    "          memset(d, 0, @NR@ * sizeof(@T@));\n"
    "          for (int64_t j = 0; j < w; j++)\n"
    "            d[j] = s[j0 + j];\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t q = q0; q < q1; q++) {\n"
    "    const int64_t j0 = q * @NR@, w = nc - j0 < @NR@ ? nc - j0 : @NR@;\n"
    "    @T@ *dst = bp + q * kc * @NR@;\n"
    "    for (int64_t j = 0; j < w; j++) {\n"
    "      const @T@ *s = b + (jc + j0 + j) * ldb + pc;\n"
    "      for (int64_t k = 0; k < kc; k++)\n"
    "        dst[k * @NR@ + j] = s[k];\n"
    "    }\n"
    "    for (int64_t j = w; j < @NR@; j++)\n"
    "      for (int64_t k = 0; k < kc; k++)\n"
    "        dst[k * @NR@ + j] = (@T@)0;\n"
    "  }\n"
    "}\n"
    "\n"
    "/* alpha * A rows [ic + p * MR, +MR) x columns [pc, pc + kc) into an\n"
    " * MR-high panel (kc x MR, zero-padded). */\n"
    "static inline void weir_gemm_pack_a_@S@(int ta, const @T@ *a, int64_t "
    "lda,\n"
    "                                        @T@ alpha, int64_t ic, int64_t "
    "mc,\n"
    "                                        int64_t pc, int64_t kc, int64_t "
    "p,\n"
    "                                        @T@ *ap) {\n"
    "  const int64_t i0 = p * @MR@, h = mc - i0 < @MR@ ? mc - i0 : @MR@;\n"
    "  @T@ *dst = ap + p * kc * @MR@;\n"
    "  if (!ta && h == @MR@) {\n"
    "    /* MR row streams read in step, the panel written in order */\n"
    "    const @T@ *s = a + (ic + i0) * lda + pc;\n"
    "    for (int64_t k = 0; k < kc; k++)\n"
    "#pragma GCC unroll 16\n"
    "      for (int64_t i = 0; i < @MR@; i++)\n"
    "        dst[k * @MR@ + i] = alpha * s[i * lda + k];\n"
    "    return;\n"
    "  }\n"
    "  if (ta && h == @MR@) {\n"
    "    /* op(a) transposed: each k's MR values lie side by side */\n"
    "    const @T@ *s = a + pc * lda + ic + i0;\n"
    "    for (int64_t k = 0; k < kc; k++)\n"
    "#pragma GCC unroll 16\n"
    "      for (int64_t i = 0; i < @MR@; i++)\n"
    "        dst[k * @MR@ + i] = alpha * s[k * lda + i];\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t i = 0; i < h; i++) {\n"
    "    if (!ta) {\n"
    "      const @T@ *s = a + (ic + i0 + i) * lda + pc;\n"
    "      for (int64_t k = 0; k < kc; k++)\n"
    "        dst[k * @MR@ + i] = alpha * s[k];\n"
    "    } else {\n"
    "      const @T@ *s = a + pc * lda + ic + i0 + i;\n"
    "      for (int64_t k = 0; k < kc; k++)\n"
    "        dst[k * @MR@ + i] = alpha * s[k * lda];\n"
    "    }\n"
    "  }\n"
    "  for (int64_t i = h; i < @MR@; i++)\n"
    "    for (int64_t k = 0; k < kc; k++)\n"
    "      dst[k * @MR@ + i] = (@T@)0;\n"
    "}\n"
    "\n";

/* The driver: weir_gemm_runp and its wrappers. */
static const char gemm_run[] =
    "/* The row panels [*a0, *a1) of B panel q (of npan; mp row panels,\n"
    " * each tile costing cf, ce in the last panel) whose tiles start in\n"
    " * [lo, hi) of the block's cost, the tiles taken panel by panel. */\n"
    "static inline void weir_gemm_rows_@S@(int64_t q, int64_t npan, int64_t "
    "mp,\n"
    "                                      int64_t cf, int64_t ce, int64_t "
    "lo,\n"
    "                                      int64_t hi, int64_t *a0,\n"
    "                                      int64_t *a1) {\n"
    "  const int64_t s = mp * cf * q, cq = q < npan - 1 ? cf : ce;\n"
    "  const int64_t x0 = lo > s ? (lo - s + cq - 1) / cq : 0;\n"
    "  const int64_t x1 = hi > s ? (hi - s + cq - 1) / cq : 0;\n"
    "  *a0 = x0 < mp ? x0 : mp;\n"
    "  *a1 = x1 < mp ? x1 : mp;\n"
    "}\n"
    "\n"
    "/* A boundary x of the threads' shares of the block's cost (tot; npan\n"
    " * B panels costing pc each, the last tot - (npan - 1) * pc) moved to\n"
    " * the nearest panel edge when that is at most pc / 8 away: with B\n"
    " * packed in the call, a panel split between two threads is packed by\n"
    " * both, which costs more than 1/8 of a panel's tiles (scal17: the\n"
    " * stride-2 gather is 21% of a 3x3 convolution to 14x14 at M = 256,\n"
    " * whose 5 panels put the midpoint 1/24 of a panel into the third). */\n"
    "static inline int64_t weir_gemm_edge_@S@(int64_t x, int64_t tot,\n"
    "                                         int64_t npan, int64_t pc) {\n"
    "  int64_t q = (x + pc / 2) / pc;\n"
    "  if (q > npan - 1)\n"
    "    q = npan - 1;\n"
    "  int64_t e = q * pc;\n"
    "  if (q == npan - 1 && tot - x < x - e)\n"
    "    e = tot;\n"
    "  const int64_t d = e > x ? e - x : x - e;\n"
    "  return 8 * d <= pc ? e : x;\n"
    "}\n"
    "\n"
    "/* Row-major c[m x n] = alpha * op(a) * op(b) + beta * c, op(a) m x k,\n"
    " * op(b) k x n (ta, tb: transposed).  Loops: NC columns of B, KC rows\n"
    " * (B block packed), MC rows of A (A block packed), then the\n"
    " * microtiles, split statically over the OpenMP threads by B panels or\n"
    " * by A panels (one parallel region per call, no barrier in it: each\n"
    " * thread packs what it computes with into its own buffers).  Returns\n"
    " * non-zero when the packing buffers cannot be allocated (work, when\n"
    " * not NULL, holds them: weir_kernel_gemm_work_bytes).  ep (NULL: none)\n"
    " * is applied to every element after its last update.  im (NULL: none)\n"
    " * replaces b (and tb) by a convolution's patches.  apk (NULL: none) is\n"
    " * alpha op(a) already packed (weir_prepack_a: the A blocks this call\n"
    " * would pack, in (k block, m block) order), read in place of a; bpk\n"
    " * (NULL: none) op(b) packed (weir_prepack_b: the B blocks, in (n\n"
    " * block, k block) order), read in place of b. */\n"
    "static int weir_gemm_runp_@S@(int ta, int tb, int64_t m, int64_t n,\n"
    "                              int64_t k, @T@ alpha, const @T@ *a,\n"
    "                              int64_t lda, const @T@ *apk, const @T@ *b,\n"
    "                              const @T@ *bpk, int64_t ldb,\n"
    "                              const weir_gemm_patches_@S@ *im, @T@ beta,\n"
    "                              @T@ *c, int64_t ldc,\n"
    "                              const weir_gemm_epilogue_@S@ *ep, void "
    "*work) {\n"
    "  if (m <= 0 || n <= 0)\n"
    "    return 0;\n"
    "  if (beta != (@T@)0 && beta != (@T@)1)\n"
    "    for (int64_t i = 0; i < m; i++)\n"
    "      for (int64_t j = 0; j < n; j++)\n"
    "        c[i * ldc + j] *= beta;\n"
    "  if (k <= 0 || alpha == (@T@)0) {\n"
    "    if (beta == (@T@)0)\n"
    "      for (int64_t i = 0; i < m; i++)\n"
    "        for (int64_t j = 0; j < n; j++)\n"
    "          c[i * ldc + j] = (@T@)0;\n"
    "    if (ep)\n"
    "      weir_gemm_epi_@S@(ep, c, ldc, 0, 0, m, n);\n"
    "    return 0;\n"
    "  }\n"
    "  if (m < @SMALLM@ && !im) {\n"
    "    /* a few rows (a fully-connected layer at batch 1): no packing, the\n"
    "     * rows of c as multiply-adds of the rows of op(b), split by column\n"
    "     * blocks over the threads */\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for if (n * k > 65536)\n"
    "#endif\n"
    "    for (int64_t j0 = 0; j0 < n; j0 += 256) {\n"
    "      const int64_t j1 = n - j0 < 256 ? n : j0 + 256;\n"
    "      for (int64_t i = 0; i < m; i++) {\n"
    "        @T@ *ci = c + i * ldc;\n"
    "        if (beta == (@T@)0)\n"
    "          for (int64_t j = j0; j < j1; j++)\n"
    "            ci[j] = (@T@)0;\n"
    "        if (!tb) {\n"
    "          for (int64_t kk = 0; kk < k; kk++) {\n"
    "            const @T@ s = alpha * (ta ? a[kk * lda + i] : a[i * lda + "
    "kk]);\n"
    "            const @T@ *bk = b + kk * ldb;\n"
    "            for (int64_t j = j0; j < j1; j++)\n"
    "              ci[j] += s * bk[j];\n"
    "          }\n"
    "        } else {\n"
    "          int64_t j = j0;\n"
    "          /* four rows of op(b) at a time: four independent sums and\n"
    "           * four streams of B in flight (B comes from memory here: a\n"
    "           * classifier's weights are read once per call) */\n"
    "          if (!ta)\n"
    "            for (; j + 4 <= j1; j += 4) {\n"
    "              const @T@ *ai = a + i * lda, *b0 = b + j * ldb;\n"
    "              const @T@ *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;\n"
    "              @T@ s0 = (@T@)0, s1 = (@T@)0, s2 = (@T@)0, s3 = (@T@)0;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : s0, s1, s2, s3)\n"
    "#endif\n"
    "              for (int64_t kk = 0; kk < k; kk++) {\n"
    "                const @T@ x = ai[kk];\n"
    "                s0 += x * b0[kk];\n"
    "                s1 += x * b1[kk];\n"
    "                s2 += x * b2[kk];\n"
    "                s3 += x * b3[kk];\n"
    "              }\n"
    "              ci[j] += alpha * s0;\n"
    "              ci[j + 1] += alpha * s1;\n"
    "              ci[j + 2] += alpha * s2;\n"
    "              ci[j + 3] += alpha * s3;\n"
    "            }\n"
    "          for (; j < j1; j++) {\n"
    "            const @T@ *bj = b + j * ldb;\n"
    "            @T@ s = (@T@)0;\n"
    "            if (!ta) {\n"
    "              const @T@ *ai = a + i * lda;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : s)\n"
    "#endif\n"
    "              for (int64_t kk = 0; kk < k; kk++)\n"
    "                s += ai[kk] * bj[kk];\n"
    "            } else {\n"
    "              for (int64_t kk = 0; kk < k; kk++)\n"
    "                s += a[kk * lda + i] * bj[kk];\n"
    "            }\n"
    "            ci[j] += alpha * s;\n"
    "          }\n"
    "        }\n"
    "        if (ep)\n"
    "          weir_gemm_epi_@S@(ep, ci + j0, ldc, i, j0, 1, j1 - j0);\n"
    "      }\n"
    "    }\n"
    "    return 0;\n"
    "  }\n"
    "  const int first_acc = beta != (@T@)0;\n"
    "  /* B read in place (conv14n): a row-major B (a 1x1 convolution's input\n"
    "   * at unit stride, X as it is) with k <= @BINK@ is not packed; the\n"
    "   * microkernel reads each panel's rows ldb apart.  Only panels of "
    "whole\n"
    "   * vectors: a last panel with a partial vector is packed (zero-padded)\n"
    "   * as before, so no load passes the end of a row. */\n"
    "  const int inpl = !tb && !im && !bpk && k <= @BINK@;\n"
    "  /* the epilogue is a bias per row, a residual and a clip, sigmoid,\n"
    "   * SiLU or HardSwish (f32) at most: full tiles apply it in registers\n"
    "   * (weir_gemm_fast) */\n"
    "  const int fast = ep && ep->scale == (@T@)1 && !ep->cb &&\n"
    "                   ep->act >= 0 && ep->act <= @FASTMAX@;\n"
    "  const int64_t mpad = (m + @MR@ - 1) / @MR@ * @MR@;\n"
    "  /* the k (m) blocks as even as KC (MC) allows: no thin last block */\n"
    "  const int64_t kblocks = (k + @KC@ - 1) / @KC@;\n"
    "  const int64_t kcb = (k + kblocks - 1) / kblocks;\n"
    "  const int64_t mblocks = (m + @MC@ - 1) / @MC@;\n"
    "  const int64_t mcb = ((m + mblocks - 1) / mblocks + @MR@ - 1) / @MR@ * "
    "@MR@;\n"
    "  const int64_t nb = n < @NC@ ? (n + @NR@ - 1) / @NR@ * @NR@ : @NC@;\n"
    "  const size_t bbytes = ((size_t)(kcb * nb) * sizeof(@T@) + 63) / 64 * "
    "64;\n"
    "  const size_t abytes = ((size_t)(kcb * mcb) * sizeof(@T@) + 63) / 64 * "
    "64;\n"
    "  /* at most @THREADS@ threads, each with its own packing buffers (a "
    "slot\n"
    "   * of bbytes + abytes): the caller's work space (from the kernel's\n"
    "   * workspace) when given, else allocated for this call */\n"
    "  int nthr = 1;\n"
    "#ifdef _OPENMP\n"
    "  if (m * n * k > 32768 && !omp_in_parallel())\n"
    "    nthr = omp_get_max_threads();\n"
    "#endif\n"
    "  if (nthr > @THREADS@)\n"
    "    nthr = @THREADS@;\n"
    "  void *own = NULL;\n"
    "  if (!work) {\n"
    "    own = work = aligned_alloc(64, (size_t)nthr * (bbytes + abytes));\n"
    "    if (!own)\n"
    "      return 1;\n"
    "  }\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel num_threads(nthr) if (nthr > 1)\n"
    "#endif\n"
    "  {\n"
    "#ifdef _OPENMP\n"
    "    const int64_t nt = omp_get_num_threads(), tid = "
    "omp_get_thread_num();\n"
    "#else\n"
    "    const int64_t nt = 1, tid = 0;\n"
    "#endif\n"
    "    /* every thread packs what it uses into its own slot and computes "
    "its\n"
    "     * own microtiles: no barrier inside the call (a thread waiting at a\n"
    "     * barrier sleeps, and waking it, on a virtual machine above all, "
    "can\n"
    "     * cost more than the work between two barriers) */\n"
    "    @T@ *bp = (@T@ *)((char *)work + (size_t)tid * (bbytes + abytes));\n"
    "    @T@ *ap = (@T@ *)((char *)bp + bbytes);\n"
    "@TAILBUF@"
    "    for (int64_t jc = 0; jc < n; jc += @NC@) {\n"
    "      const int64_t nc = n - jc < @NC@ ? n - jc : @NC@;\n"
    "      const int64_t npan = (nc + @NR@ - 1) / @NR@;\n"
    "      /* the last panel's partial vector, tr columns (at most @TAILW@;\n"
    "       * 0: none, or the ISA has no such tail), computed with the\n"
    "       * channels in the vectors (weir_gemm_ukp, tail14p) after the\n"
    "       * usual tiles: N = 196 is 12 vectors of 16 and 4 columns, whose\n"
    "       * vector would cost as much as a full one */\n"
    "      const int64_t tr = nc % @VL@ <= @TAILW@ ? nc % @VL@ : 0;\n"
    "      /* with a few B panels per thread, each thread packs and uses its\n"
    "       * own contiguous range of them (they stay in its caches) and "
    "packs\n"
    "       * the A panels it needs for itself; otherwise the threads split "
    "the A\n"
    "       * panels and each packs the whole (narrow) B block for itself.  "
    "The\n"
    "       * duplicated packing, K x M (or K x N) per thread, is small "
    "against\n"
    "       * the M x N x K / nt multiply-adds it feeds.\n"
    "       * Split by B panels, the tiles (P, q) of the block (P a row panel\n"
    "       * of the whole of A, mp of them) are taken in column order, each\n"
    "       * costing cq: max(MR * nv, MR + nv) for its nv vectors (FMAs or\n"
    "       * loads), so an edge panel costs less than a full one; thread tid\n"
    "       * computes the tiles that start in [lo, hi) of the whole cost,\n"
    "       * the rows weir_gemm_rows gives of panel q: the shares differ by\n"
    "       * less than one tile (conv14k: 5 panels, the last of 4 columns,\n"
    "       * were 2 full against 2 full and the edge), and a panel shared\n"
    "       * by two threads is packed by both. */\n"
    "      const int byn = npan >= 2 * nt;\n"
    "      const int64_t mp = mpad / @MR@, nve = (nc - (npan - 1) * @NR@ -\n"
    "                                             tr + @VL@ - 1) / @VL@;\n"
    "      const int64_t cf = @MR@ * @NV@ > @MR@ + @NV@ ? @MR@ * @NV@\n"
    "                                                 : @MR@ + @NV@;\n"
    "      /* the tail's share: tr / VL of an MR x 1 tile's FMAs */\n"
    "      const int64_t ce =\n"
    "          (nve == 0                 ? 0\n"
    "           : @MR@ * nve > @MR@ + nve ? @MR@ * nve\n"
    "                                   : @MR@ + nve) +\n"
    "          (@MR@ * tr + @VL@ - 1) / @VL@;\n"
    "      const int64_t tot = mp * ((npan - 1) * cf + ce);\n"
    "      /* B packed in the call (not read in place, not pre-packed):\n"
    "       * the boundaries on panel edges when they are close */\n"
    "      const int pkb = im || (!inpl && !bpk);\n"
    "      int64_t lo = byn ? tot * tid / nt : 0;\n"
    "      int64_t hi = byn ? tot * (tid + 1) / nt : tot;\n"
    "      if (byn && pkb) {\n"
    "        lo = weir_gemm_edge_@S@(lo, tot, npan, mp * cf);\n"
    "        hi = weir_gemm_edge_@S@(hi, tot, npan, mp * cf);\n"
    "      }\n"
    "      /* the thread's panels [q0, q1): the rows [f0, f1) of the first,\n"
    "       * [l0, l1) of the last, all of those between */\n"
    "      int64_t q0 = 0, q1 = 0, pl = mp, ph = 0, f0 = 0, f1 = mp, l0 = 0,\n"
    "              l1 = mp;\n"
    "      for (int64_t q = 0; q < npan; q++) {\n"
    "        int64_t a0, a1;\n"
    "        weir_gemm_rows_@S@(q, npan, mp, cf, ce, lo, hi, &a0, &a1);\n"
    "        if (a0 >= a1)\n"
    "          continue;\n"
    "        if (q1 == 0) {\n"
    "          q0 = q;\n"
    "          f0 = a0;\n"
    "          f1 = a1;\n"
    "        }\n"
    "        q1 = q + 1;\n"
    "        l0 = a0;\n"
    "        l1 = a1;\n"
    "        pl = a0 < pl ? a0 : pl;\n"
    "        ph = a1 > ph ? a1 : ph;\n"
    "      }\n"
    "      for (int64_t pc = 0; pc < k; pc += kcb) {\n"
    "        const int64_t kc = k - pc < kcb ? k - pc : kcb;\n"
    "        const int acc = pc > 0 || first_acc;\n"
    "        /* a pre-packed B: block (jc, pc) at jc * k + pc * npan * NR */\n"
    "        const @T@ *bb = bpk ? bpk + jc * k + pc * npan * @NR@ : bp;\n"
    "        if (bpk)\n"
    "          ;\n"
    "        else if (im)\n"
    "          for (int64_t q = q0; q < q1; q++)\n"
    "            weir_gemm_pack_im_@S@(im, pc, kc, jc, nc, q, bp);\n"
    "        else if (inpl) {\n"
    "          if (nc % @VL@ != 0 && !tr && q1 == npan)\n"
    "            weir_gemm_pack_b_@S@(0, b, ldb, pc, kc, jc, nc, npan - 1,\n"
    "                                 npan, bp);\n"
    "        } else\n"
    "          weir_gemm_pack_b_@S@(tb, b, ldb, pc, kc, jc, nc, q0, q1, bp);\n"
    "        for (int64_t ic = 0; ic < m; ic += mcb) {\n"
    "          const int64_t mc = m - ic < mcb ? m - ic : mcb;\n"
    "          const int64_t mpan = (mc + @MR@ - 1) / @MR@;\n"
    "          /* by B panels: the rows of the thread's tiles (all of them\n"
    "           * unless it has one panel); else its share of all of m's A\n"
    "           * panels, [mp * tid / nt, mp * (tid + 1) / nt), the part of\n"
    "           * it in this block (the blocks start on whole panels; split\n"
    "           * block by block, an odd panel count gave the same thread\n"
    "           * the extra panel in every block, scal17) */\n"
    "          const int64_t pb = ic / @MR@;\n"
    "          const int64_t s0 = mp * tid / nt - pb,\n"
    "                        s1 = mp * (tid + 1) / nt - pb;\n"
    "          const int64_t p0 = byn ? (pl - pb > 0 ? pl - pb : 0)\n"
    "                                 : s0 < 0 ? 0 : s0 < mpan ? s0 : mpan;\n"
    "          const int64_t p1 = byn ? (ph - pb < mpan ? ph - pb : mpan)\n"
    "                                 : s1 < p0 ? p0 : s1 < mpan ? s1 : mpan;\n"
    "          /* a pre-packed A: block (pc, ic) at pc * mpad + ic * kc */\n"
    "          const @T@ *ab = apk ? apk + pc * mpad + ic * kc : ap;\n"
    "          for (int64_t p = p0; p < p1 && !apk; p++)\n"
    "            weir_gemm_pack_a_@S@(ta, a, lda, alpha, ic, mc, pc, kc, p, "
    "ap);\n"
    "          for (int64_t p = p0; p < p1; p++) {\n"
    "            /* a pre-packed A is read from L3 or memory (a network's\n"
    "             * weights do not stay in the caches between calls): the "
    "next\n"
    "             * micro-panel, the next in memory too (that of the next M "
    "or\n"
    "             * K block after the last), prefetched by the microkernel\n"
    "             * of this panel's first tile, MR elements per k step as\n"
    "             * it goes (mobile14q, spread out in mob17: all at once they\n"
    "             * queued ahead of the tile's own loads); other tiles\n"
    "             * prefetch their own panel, a no-op */\n"
    "            int pfn = apk != NULL;\n"
    "            for (int64_t q = q0; q < q1; q++) {\n"
    "              if ((q == q0 && (pb + p < f0 || pb + p >= f1)) ||\n"
    "                  (q == q1 - 1 && (pb + p < l0 || pb + p >= l1)))\n"
    "                continue;\n"
    "              const int64_t mr = mc - p * @MR@ < @MR@ ? mc - p * @MR@ : "
    "@MR@;\n"
    "              /* the last panel's columns but the tail's */\n"
    "              const int64_t nr =\n"
    "                  (nc - q * @NR@ < @NR@ ? nc - q * @NR@ : @NR@) -\n"
    "                  (q == npan - 1 ? tr : 0);\n"
    "              if (nr <= 0)\n"
    "                continue;\n"
    "              const int bin = inpl && nr % @VL@ == 0;\n"
    "              const @T@ *pa = ab + p * kc * @MR@;\n"
    "              const @T@ *pf = pfn ? pa + kc * @MR@ : pa;\n"
    "              pfn = 0;\n"
    "              const @T@ *pb = bin ? b + pc * ldb + jc + q * @NR@\n"
    "                                  : bb + q * kc * @NR@;\n"
    "              const int64_t ldp = bin ? ldb : @NR@;\n"
    "              @T@ *pcc = c + (ic + p * @MR@) * ldc + jc + q * @NR@;\n"
    "              /* the first write of c: the lines of the tile two ahead\n"
    "               * prefetched for writing (a layer's output is mostly out\n"
    "               * of the caches, and with a short k the tile is stored\n"
    "               * soon after its first FMA) */\n"
    "              /* and in the last K block, the residual's lines of that\n"
    "               * tile prefetched for reading (the epilogue adds them) */\n"
    "              const int pfr = ep && ep->r && pc + kc >= k;\n"
    "              if (!acc || pfr) {\n"
    "                const int64_t tn = (p - p0) * (q1 - q0) + (q - q0) + 2;\n"
    "                const int64_t pn = p0 + tn / (q1 - q0);\n"
    "                const int64_t qn = q0 + tn % (q1 - q0);\n"
    "                if (pn < p1) {\n"
    "                  const int64_t mrn = mc - pn * @MR@ < @MR@ ? mc - pn * "
    "@MR@ : @MR@;\n"
    "                  const int64_t nrn = nc - qn * @NR@ < @NR@ ? nc - qn * "
    "@NR@ : @NR@;\n"
    "                  const int64_t in = ic + pn * @MR@;\n"
    "                  const int64_t jn = jc + qn * @NR@;\n"
    "                  @T@ *cn = c + in * ldc + jn;\n"
    "                  for (int64_t i = 0; i < mrn && !acc; i++) {\n"
    "                    for (int64_t j = 0; j < nrn; j += 64 / sizeof(@T@))\n"
    "                      __builtin_prefetch(cn + i * ldc + j, 1, 3);\n"
    "                    __builtin_prefetch(cn + i * ldc + nrn - 1, 1, 3);\n"
    "                  }\n"
    "                  for (int64_t i = 0; i < mrn && pfr; i++) {\n"
    "                    const @T@ *rn = ep->r + (in + i) * ep->ldr + jn;\n"
    "                    for (int64_t j = 0; j < nrn; j += 64 / sizeof(@T@))\n"
    "                      __builtin_prefetch(rn + j, 0, 3);\n"
    "                    __builtin_prefetch(rn + nrn - 1, 0, 3);\n"
    "                  }\n"
    "                }\n"
    "              }\n"
    "              /* a full tile applies a bias, residual and activation\n"
    "               * in registers */\n"
    "              weir_gemm_fast_@S@ fst = {NULL, 0, 0, 0, NULL, 0};\n"
    "              weir_gemm_fast_@S@ *fe = NULL;\n"
    "              if (fast && pc + kc >= k && mr == @MR@ &&\n"
    "                  nr % @VL@ == 0) {\n"
    "                fst.bias = ep->bias ? ep->bias + ic + p * @MR@ : NULL;\n"
    "                fst.act = ep->act;\n"
    "                fst.lo = ep->lo;\n"
    "                fst.hi = ep->hi;\n"
    "                fst.r = ep->r ? ep->r + (ic + p * @MR@) * ep->ldr + jc +\n"
    "                                    q * @NR@\n"
    "                              : NULL;\n"
    "                fst.ldr = ep->ldr;\n"
    "                fe = &fst;\n"
    "              }\n"
    "@CASESA@"
    "              switch ((nr + @VL@ - 1) / @VL@) {\n"
    "@CASES@"
    "              }\n"
    "              if (ep && pc + kc >= k && !fe)\n"
    "                weir_gemm_epi_@S@(ep, pcc, ldc, ic + p * @MR@,\n"
    "                                  jc + q * @NR@, mr, nr);\n"
    "            }\n"
    "          }\n"
    "@TAILRUN@"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  free(own);\n"
    "  return 0;\n"
    "}\n"
    "\n"
    "/* The same without a pre-packed A. */\n"
    "static __attribute__((unused)) int\n"
    "weir_gemm_run_@S@(int ta, int tb, int64_t m, int64_t n, int64_t k,\n"
    "                  @T@ alpha, const @T@ *a, int64_t lda, const @T@ *b,\n"
    "                  int64_t ldb, const weir_gemm_patches_@S@ *im, @T@ "
    "beta,\n"
    "                  @T@ *c, int64_t ldc, const weir_gemm_epilogue_@S@ *ep,\n"
    "                  void *work) {\n"
    "  return weir_gemm_runp_@S@(ta, tb, m, n, k, alpha, a, lda, NULL, b, "
    "NULL,\n"
    "                            ldb, im, beta, c, ldc, ep, work);\n"
    "}\n"
    "\n"
    "/* weir_gemm_@S@_ep with op(b) pre-packed (bpk, weir_prepack_b; NULL:\n"
    " * packed in the call from b). */\n"
    "static __attribute__((unused)) int\n"
    "weir_gemm_@S@_pb(int ta, int tb, int64_t m, int64_t n, int64_t k,\n"
    "                 @T@ alpha, const @T@ *a, int64_t lda, const @T@ *b,\n"
    "                 const @T@ *bpk, int64_t ldb, @T@ beta, @T@ *c,\n"
    "                 int64_t ldc, const @T@ *bias, const @T@ *r,\n"
    "                 int64_t ldr, int act, @T@ lo, @T@ hi, const @T@ *cb,\n"
    "                 @T@ scale, void *work) {\n"
    "  const weir_gemm_epilogue_@S@ ep = {bias, r,  ldr,  act,\n"
    "                                     lo,   hi, cb, scale};\n"
    "  return weir_gemm_runp_@S@(\n"
    "      ta, tb, m, n, k, alpha, a, lda, NULL, b, bpk, ldb, NULL, beta, c,\n"
    "      ldc, bias || r || act || cb || scale != (@T@)1 ? &ep : NULL, "
    "work);\n"
    "}\n"
    "\n"
    "/* Row-major c[m x n] = alpha * op(a) * op(b) + beta * c. */\n"
    "static __attribute__((unused)) int\n"
    "weir_gemm_@S@(int ta, int tb, int64_t m, int64_t n, int64_t k, @T@ "
    "alpha,\n"
    "              const @T@ *a, int64_t lda, const @T@ *b, int64_t ldb,\n"
    "              @T@ beta, @T@ *c, int64_t ldc, void *work) {\n"
    "  return weir_gemm_run_@S@(ta, tb, m, n, k, alpha, a, lda, b, ldb, NULL,\n"
    "                           beta, c,\n"
    "                           ldc, NULL, work);\n"
    "}\n"
    "\n"
    "/* The same, then c = act(c * scale + bias[i] + cb[j] + r[i * ldr + j])\n"
    " * (bias, cb, r: NULL for none; act as weir_act1_@DT@) on each element\n"
    " * once it is final. */\n"
    "static __attribute__((unused)) int\n"
    "weir_gemm_@S@_ep(int ta, int tb, int64_t m, int64_t n, int64_t k,\n"
    "                 @T@ alpha, const @T@ *a, int64_t lda, const @T@ *b,\n"
    "                 int64_t ldb, @T@ beta, @T@ *c, int64_t ldc,\n"
    "                 const @T@ *bias, const @T@ *r, int64_t ldr, int act,\n"
    "                 @T@ lo, @T@ hi, const @T@ *cb, @T@ scale, void *work) {\n"
    "  const weir_gemm_epilogue_@S@ ep = {bias, r,  ldr,  act,\n"
    "                                     lo,   hi, cb, scale};\n"
    "  return weir_gemm_run_@S@(\n"
    "      ta, tb, m, n, k, alpha, a, lda, b, ldb, NULL, beta, c, ldc,\n"
    "      bias || r || act || cb || scale != (@T@)1 ? &ep : NULL, work);\n"
    "}\n";

static void replace_uint(GString *s, const char *key, guint v) {
  char buf[16];
  g_snprintf(buf, sizeof buf, "%u", v);
  g_string_replace(s, key, buf, 0);
}

/* ------------------------------------------- channels in the vectors
 *
 * The transposed microtile (f32), for products with few columns: a 1x1
 * convolution on a 7x7 map has 49 output pixels as the GEMM's columns,
 * and the usual microtile's vectors along them fill 49 of 64 lanes (the
 * 49th column a whole vector, its tile broadcast-bound).  Here the
 * vectors run along the rows (the output channels, 96 to 1280) and the
 * columns are broadcast, so a narrow edge costs only its columns.  The
 * tile is then column by column in registers; the store transposes each
 * TNR x VL block in registers (log2 TNR rounds of two-vector shuffles)
 * so that each row's TNR columns are stored (and, from the second k
 * block on, loaded) together, and applies the epilogue to those vectors.
 * @TMV@, @TNR@, @TMR@: the tile; @HB@ the bytes of TNR elements. */
static const char gemm_t_ukr[] =
    "/* Channels in the vectors (docs/native.md): a TMR @TMR@ x TNR @TNR@\n"
    " * tile of c over kc, ap an A panel (kc x TMR), bp a B panel (kc rows\n"
    " * of TNR, ldp apart: TNR when packed, B's row stride when read in\n"
    " * place), both zero-padded when packed.  Per k the rows' @TMV@ vectors\n"
    " * are loaded and each column's B value broadcast; r[j][v] holds rows\n"
    " * [v * VL, + VL) of column j.  nv vectors and np columns are computed;\n"
    " * the tile goes to t (TNR x TMR, column by column), zeros past them.\n"
    " * pf + k * VL / 2 is prefetched at step k (a line every two steps):\n"
    " * the next pre-packed A block, spread over the block's tiles (r50),\n"
    " * or ap itself (a no-op).  With ne 1 (np TNR), one column more: its\n"
    " * value at step k is bx[k * TNR] (the first column of the next, packed\n"
    " * panel), its vectors at t + TNR * TMR (r53). */\n"
    "WEIR_GEMM_INL_@S@ void weir_gemm_ukt_@S@(const int nv, const int np,\n"
    "                                        const int ne, int64_t kc,\n"
    "                                        const @T@ *restrict ap,\n"
    "                                        const @T@ *restrict bp,\n"
    "                                        int64_t ldp,\n"
    "                                        const @T@ *restrict bx,\n"
    "                                        @T@ *restrict t,\n"
    "                                        const @T@ *pf) {\n"
    "  weir_gemm_v_@S@ r[@TNR@ + 1][@TMV@];\n"
    "#pragma GCC unroll 16\n"
    "  for (int j = 0; j < @TNR@ + 1; j++)\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @TMV@; v++)\n"
    "      r[j][v] = weir_gemm_vzero_@S@();\n"
    "  for (int64_t k = 0; k < kc; k++) {\n"
    "    __builtin_prefetch(pf + k * (@VL@ / 2), 0, 2);\n"
    "    weir_gemm_v_@S@ a[@TMV@];\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @TMV@; v++)\n"
    "      a[v] = v < nv ? weir_gemm_vload_@S@(ap + k * @TMR@ + v * @VL@)\n"
    "                    : weir_gemm_vzero_@S@();\n"
    "#pragma GCC unroll 16\n"
    "    for (int j = 0; j < @TNR@; j++) {\n"
    "      if (j >= np)\n"
    "        continue;\n"
    "      const weir_gemm_v_@S@ b = weir_gemm_vset_@S@(bp[k * ldp + j]);\n"
    "#pragma GCC unroll 8\n"
    "      for (int v = 0; v < @TMV@; v++)\n"
    "        if (v < nv)\n"
    "          r[j][v] = weir_gemm_vfma_@S@(a[v], b, r[j][v]);\n"
    "    }\n"
    "    if (ne) {\n"
    "      const weir_gemm_v_@S@ b = weir_gemm_vset_@S@(bx[k * @TNR@]);\n"
    "#pragma GCC unroll 8\n"
    "      for (int v = 0; v < @TMV@; v++)\n"
    "        if (v < nv)\n"
    "          r[@TNR@][v] = weir_gemm_vfma_@S@(a[v], b, r[@TNR@][v]);\n"
    "    }\n"
    "  }\n"
    "#pragma GCC unroll 16\n"
    "  for (int j = 0; j < @TNR@ + ne; j++)\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @TMV@; v++)\n"
    "      weir_gemm_vstore_@S@(t + j * @TMR@ + v * @VL@,\n"
    "                           (j < np || j == @TNR@) && v < nv ? r[j][v]\n"
    "                                            : weir_gemm_vzero_@S@());\n"
    "}\n";

/* one per (nv, np) = (@V@, @P@) */
static const char gemm_t_ukr_n[] =
    "static @TGT@ void weir_gemm_ukt@V@x@P@_@S@(int64_t kc, const @T@ *ap,\n"
    "                                         const @T@ *bp, int64_t ldp,\n"
    "                                         @T@ *t, const @T@ *pf) {\n"
    "  weir_gemm_ukt_@S@(@V@, @P@, 0, kc, ap, bp, ldp, NULL, t, pf);\n"
    "}\n";

/* one per nv = @V@: TNR columns and the next panel's first (r53) */
static const char gemm_t_ukr_e[] =
    "static @TGT@ void weir_gemm_ukte@V@_@S@(int64_t kc, const @T@ *ap,\n"
    "                                      const @T@ *bp, int64_t ldp,\n"
    "                                      const @T@ *bx, @T@ *t,\n"
    "                                      const @T@ *pf) {\n"
    "  weir_gemm_ukt_@S@(@V@, @TNR@, 1, kc, ap, bp, ldp, bx, t, pf);\n"
    "}\n";

/* Rows of a transposed tile when a vector holds two of them (VL = 2 TNR):
 * lanes [0, TNR) row p0, [TNR, VL) row p1. */
static const char gemm_t_rows2[] =
    "typedef @T@ weir_gemm_h_@S@ __attribute__((vector_size(@HB@)));\n"
    "/* rows p0 and p1 (NULL: zeros), columns [0, nr), zeros past them */\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_ldt_@S@(const @T@ *p0,\n"
    "                                                  const @T@ *p1,\n"
    "                                                  int64_t nr) {\n"
    "  weir_gemm_h_@S@ h0 = {0}, h1 = {0};\n"
    "  if (nr == @TNR@) {\n"
    "    memcpy(&h0, p0, sizeof h0);\n"
    "    if (p1)\n"
    "      memcpy(&h1, p1, sizeof h1);\n"
    "  } else {\n"
    "    memcpy(&h0, p0, (size_t)nr * sizeof(@T@));\n"
    "    if (p1)\n"
    "      memcpy(&h1, p1, (size_t)nr * sizeof(@T@));\n"
    "  }\n"
    "  return (weir_gemm_v_@S@)__builtin_shufflevector(h0, h1, @CAT@);\n"
    "}\n"
    "/* the lanes of w into rows p0 and p1 (NULL: none), columns [0, nr) */\n"
    "WEIR_GEMM_INL_@S@ void weir_gemm_stt2_@S@(weir_gemm_v_@S@ w, @T@ *p0,\n"
    "                                         @T@ *p1, int64_t nr) {\n"
    "  const weir_gemm_h_@S@ h0 =\n"
    "      (weir_gemm_h_@S@)__builtin_shufflevector(w, w, @LO@);\n"
    "  const weir_gemm_h_@S@ h1 =\n"
    "      (weir_gemm_h_@S@)__builtin_shufflevector(w, w, @HI@);\n"
    "  const size_t bytes = nr == @TNR@ ? sizeof h0 : (size_t)nr * "
    "sizeof(@T@);\n"
    "  if (nr == @TNR@) {\n"
    "    memcpy(p0, &h0, sizeof h0);\n"
    "    if (p1)\n"
    "      memcpy(p1, &h1, sizeof h1);\n"
    "    return;\n"
    "  }\n"
    "  memcpy(p0, &h0, bytes);\n"
    "  if (p1)\n"
    "    memcpy(p1, &h1, bytes);\n"
    "}\n"
    "/* a in lanes [0, TNR), b in [TNR, VL) */\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_set2_@S@(@T@ a, @T@ b) {\n"
    "  weir_gemm_h_@S@ h0 = {0}, h1 = {0};\n"
    "  h0 += a;\n"
    "  h1 += b;\n"
    "  return (weir_gemm_v_@S@)__builtin_shufflevector(h0, h1, @CAT@);\n"
    "}\n";

/* The same when a vector holds one row (VL = TNR): p1 is always NULL. */
static const char gemm_t_rows1[] =
    "/* row p0, columns [0, nr), zeros past them (p1: NULL) */\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_ldt_@S@(const @T@ *p0,\n"
    "                                                  const @T@ *p1,\n"
    "                                                  int64_t nr) {\n"
    "  (void)p1;\n"
    "  if (nr == @TNR@)\n"
    "    return weir_gemm_vload_@S@(p0);\n"
    "  weir_gemm_v_@S@ w = weir_gemm_vzero_@S@();\n"
    "  memcpy(&w, p0, (size_t)nr * sizeof(@T@));\n"
    "  return w;\n"
    "}\n"
    "WEIR_GEMM_INL_@S@ void weir_gemm_stt2_@S@(weir_gemm_v_@S@ w, @T@ *p0,\n"
    "                                         @T@ *p1, int64_t nr) {\n"
    "  (void)p1;\n"
    "  if (nr == @TNR@)\n"
    "    weir_gemm_vstore_@S@(p0, w);\n"
    "  else\n"
    "    memcpy(p0, &w, (size_t)nr * sizeof(@T@));\n"
    "}\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@ weir_gemm_set2_@S@(@T@ a, @T@ b) {\n"
    "  (void)b;\n"
    "  return weir_gemm_vset_@S@(a);\n"
    "}\n";

static const char gemm_t_store[] =
    "/* The epilogue of weir_gemm_epi on the vector w of a transposed tile\n"
    " * (rows i0 and i1 (-1: none), columns [col0, col0 + nr)), in the same\n"
    " * order: w * scale + bias[row] + cb[col] + r[row, col], then act. */\n"
    "WEIR_GEMM_INL_@S@ weir_gemm_v_@S@\n"
    "weir_gemm_ept_@S@(const weir_gemm_epilogue_@S@ *ep, weir_gemm_v_@S@ w,\n"
    "                  int64_t i0, int64_t i1, int64_t col0, int64_t nr) {\n"
    "  weir_act_v@VL@ v = (weir_act_v@VL@)w * ep->scale;\n"
    "  if (ep->bias)\n"
    "    v += (weir_act_v@VL@)weir_gemm_set2_@S@(\n"
    "        ep->bias[i0], i1 >= 0 ? ep->bias[i1] : (@T@)0);\n"
    "  if (ep->cb)\n"
    "    v += (weir_act_v@VL@)weir_gemm_ldt_@S@(ep->cb + col0, @CB1@, nr);\n"
    "  if (ep->r)\n"
    "    v += (weir_act_v@VL@)weir_gemm_ldt_@S@(\n"
    "        ep->r + i0 * ep->ldr + col0,\n"
    "        i1 >= 0 ? ep->r + i1 * ep->ldr + col0 : NULL, nr);\n"
    "  return (weir_gemm_v_@S@)weir_act_apply@VL@(v, ep->act, ep->lo, "
    "ep->hi);\n"
    "}\n"
    "\n"
    "/* The tile t of weir_gemm_ukt (TNR x TMR, column by column) into rows\n"
    " * [0, mr) x columns [0, nr) of c (added to c when acc), then (ep not\n"
    " * NULL) the epilogue, c's rows and columns being rows row0 + i and\n"
    " * columns col0 + j of the product.  Per vector of rows, the TNR x VL\n"
    " * block is transposed in registers: x[kk] then holds the columns of\n"
    " * rows v * VL + kk (and + TNR when VL = 2 TNR), stored together. */\n"
    "static @TGT@ void weir_gemm_stt_@S@(const @T@ *t, @T@ *c, int64_t ldc,\n"
    "                                   int64_t mr, int64_t nr, int acc,\n"
    "                                   const weir_gemm_epilogue_@S@ *ep,\n"
    "                                   int64_t row0, int64_t col0) {\n"
    "  for (int64_t v = 0; v * @VL@ < mr; v++) {\n"
    "    weir_gemm_v_@S@ x[@TNR@];\n"
    "#pragma GCC unroll 16\n"
    "    for (int j = 0; j < @TNR@; j++)\n"
    "      x[j] = weir_gemm_vload_@S@(t + j * @TMR@ + v * @VL@);\n"
    "    weir_gemm_tr_@S@(x);\n"
    "    /* not unrolled: the epilogue once in the code, not TNR times */\n"
    "    for (int kk = 0; kk < @TNR@; kk++) {\n"
    "      const int64_t i0 = v * @VL@ + kk, i1 = @I1@;\n"
    "      if (i0 >= mr)\n"
    "        continue;\n"
    "      @T@ *p0 = c + i0 * ldc, *p1 = i1 < mr ? c + i1 * ldc : NULL;\n"
    "      weir_gemm_v_@S@ w = x[kk];\n"
    "      if (acc)\n"
    "        w = weir_gemm_vadd_@S@(w, weir_gemm_ldt_@S@(p0, p1, nr));\n"
    "      if (ep)\n"
    "        w = weir_gemm_ept_@S@(ep, w, row0 + i0, p1 ? row0 + i1 : -1, "
    "col0,\n"
    "                              nr);\n"
    "      weir_gemm_stt2_@S@(w, p0, p1, nr);\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char gemm_t_run[] =
    "/* weir_gemm_runp with channels in the vectors: the same arguments and\n"
    " * result, apk (NULL: none) packed in panels of TMR rows (weir_prepack_a\n"
    " * with mr TMR), bpk unused (a call with one goes to weir_gemm_runp, as\n"
    " * do beta other than 0 and 1 and empty products).  Loops: NC columns,\n"
    " * KC depth (B block packed in TNR-wide panels), MC rows (A block in\n"
    " * TMR-high panels), then per B panel (it stays in L1) every A panel\n"
    " * (streamed from L2), each tile stored by weir_gemm_stt.  The threads\n"
    " * split the B panels (each packing its own) or, when that divides the\n"
    " * work less evenly, the A vectors (VL rows; each packing the whole,\n"
    " * narrow, B block and the A panels its vectors are in); no barrier. */\n"
    "static __attribute__((unused)) int\n"
    "weir_gemm_runt_@S@(int ta, int tb, int64_t m, int64_t n, int64_t k,\n"
    "                   @T@ alpha, const @T@ *a, int64_t lda, const @T@ "
    "*apk,\n"
    "                   const @T@ *b, const @T@ *bpk, int64_t ldb,\n"
    "                   const weir_gemm_patches_@S@ *im, @T@ beta, @T@ *c,\n"
    "                   int64_t ldc, const weir_gemm_epilogue_@S@ *ep,\n"
    "                   void *work) {\n"
    "  if (m <= 0 || n <= 0)\n"
    "    return 0;\n"
    "  if (bpk || (beta != (@T@)0 && beta != (@T@)1) || k <= 0 ||\n"
    "      alpha == (@T@)0)\n"
    "    return weir_gemm_runp_@S@(ta, tb, m, n, k, alpha, a, lda, NULL, b,\n"
    "                              bpk, ldb, im, beta, c, ldc, ep, work);\n"
    "  const int first_acc = beta != (@T@)0;\n"
    "  const int64_t mpad = (m + @TMR@ - 1) / @TMR@ * @TMR@;\n"
    "  /* B read in place as in weir_gemm_runp (whole panels only), when A\n"
    "   * has at most 8 panels: each B panel is read by every A panel, and\n"
    "   * in place its kc rows are as many lines apart (ResNet-50's 7x7\n"
    "   * layers, m 512 and 2048, were 7-14% slower in the network, conv14n;\n"
    "   * MobileNetV2's projections, m 160 and 320, 2-5% faster) */\n"
    "  const int inpl = !tb && !im && k <= @BINK@ && mpad <= 8 * @TMR@;\n"
    "  const int64_t kblocks = (k + @TKC@ - 1) / @TKC@;\n"
    "  const int64_t kcb = (k + kblocks - 1) / kblocks;\n"
    "  /* as many whole A panels of the k block as fit in @TAB@ elements\n"
    "   * (weir_kernel_gemm_trows: the pre-packed blocks are the same) */\n"
    "  const int64_t tmcr = @TAB@ / kcb / @TMR@ * @TMR@;\n"
    "  const int64_t tmc = tmcr > @TMR@ ? tmcr : @TMR@;\n"
    "  const int64_t mblocks = (m + tmc - 1) / tmc;\n"
    "  const int64_t mcb =\n"
    "      ((m + mblocks - 1) / mblocks + @TMR@ - 1) / @TMR@ * @TMR@;\n"
    "  const int64_t nb = n < @NC@ ? (n + @TNR@ - 1) / @TNR@ * @TNR@ : @NC@;\n"
    "  const size_t bbytes = ((size_t)(kcb * nb) * sizeof(@T@) + 63) / 64 * "
    "64;\n"
    "  const size_t abytes = ((size_t)(kcb * mcb) * sizeof(@T@) + 63) / 64 * "
    "64;\n"
    "  int nthr = 1;\n"
    "#ifdef _OPENMP\n"
    "  if (m * n * k > 32768 && !omp_in_parallel())\n"
    "    nthr = omp_get_max_threads();\n"
    "#endif\n"
    "  if (nthr > @THREADS@)\n"
    "    nthr = @THREADS@;\n"
    "  void *own = NULL;\n"
    "  if (!work) {\n"
    "    own = work = aligned_alloc(64, (size_t)nthr * (bbytes + abytes));\n"
    "    if (!own)\n"
    "      return 1;\n"
    "  }\n"
    "  /* A vectors (VL rows) of the whole of m: the m blocks start on whole\n"
    "   * vectors (mcb is a multiple of TMR), so block ic's are [ic / VL,\n"
    "   * + its own) of them */\n"
    "  const int64_t mvt = (m + @VL@ - 1) / @VL@;\n"
    "#ifdef WEIR_GEMM_CHECK_PF\n"
    "  /* (tests) set when a prefetch of the next A block would start\n"
    "   * outside the pre-packed A */\n"
    "  int pfbad = 0;\n"
    "#endif\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel num_threads(nthr) if (nthr > 1)\n"
    "#endif\n"
    "  {\n"
    "#ifdef _OPENMP\n"
    "    const int64_t nt = omp_get_num_threads(), tid = "
    "omp_get_thread_num();\n"
    "#else\n"
    "    const int64_t nt = 1, tid = 0;\n"
    "#endif\n"
    "    @T@ *bp = (@T@ *)((char *)work + (size_t)tid * (bbytes + abytes));\n"
    "    @T@ *ap = (@T@ *)((char *)bp + bbytes);\n"
    "    /* the tile, and the joined column's (r53) with zeros after it:\n"
    "     * weir_gemm_stt reads TNR columns */\n"
    "    @T@ t[2 * @TNR@ * @TMR@] __attribute__((aligned(64)));\n"
    "    for (int i = (@TNR@ + 1) * @TMR@; i < 2 * @TNR@ * @TMR@; i++)\n"
    "      t[i] = 0;\n"
    "    for (int64_t jc = 0; jc < n; jc += @NC@) {\n"
    "#ifdef WEIR_GEMM_CHECK_PF\n"
    "      /* (tests) split by A vectors, where this thread's last block's\n"
    "       * prefetch went: [pw0, pw1); -1: none, -2: no block yet */\n"
    "      int64_t pw0 = -2, pw1 = -2;\n"
    "#endif\n"
    "      const int64_t nc = n - jc < @NC@ ? n - jc : @NC@;\n"
    "      const int64_t npan = (nc + @TNR@ - 1) / @TNR@;\n"
    "      /* split the B panels unless the largest share of them is a\n"
    "       * larger fraction than the largest share of the A vectors */\n"
    "      const int byn = (npan + nt - 1) / nt * mvt <=\n"
    "                      (mvt + nt - 1) / nt * npan;\n"
    "      const int64_t q0 = byn ? npan * tid / nt : 0;\n"
    "      const int64_t q1 = byn ? npan * (tid + 1) / nt : npan;\n"
    "      /* a last panel of one column (7x7 maps: 49 = 6 x 8 + 1) is\n"
    "       * computed with the panel before it, when the thread has both,\n"
    "       * as one tile of TNR + 1 columns: alone, it streamed every A\n"
    "       * panel from L2 once more for 1/TNR of a tile's multiply-adds\n"
    "       * (ResNet's 3x3 512 -> 512 on 7x7 at one thread: 15% of the\n"
    "       * layer's time, r53).  The extra column is read from the last\n"
    "       * panel, which is packed (partial) in every case.  Only where\n"
    "       * its accumulators fit in the registers (AVX-512). */\n"
    "      const int join = @TJOIN@ && npan >= 2 &&\n"
    "                       nc - (npan - 1) * @TNR@ == 1 &&\n"
    "                       q0 <= npan - 2 && q1 == npan;\n"
    "      for (int64_t pc = 0; pc < k; pc += kcb) {\n"
    "        const int64_t kc = k - pc < kcb ? k - pc : kcb;\n"
    "        const int acc = pc > 0 || first_acc;\n"
    "        const weir_gemm_epilogue_@S@ *epk = pc + kc >= k ? ep : NULL;\n"
    "        if (im)\n"
    "          for (int64_t q = q0; q < q1; q++)\n"
    "            weir_gemm_tpack_im_@S@(im, pc, kc, jc, nc, q, bp);\n"
    "        else if (inpl) {\n"
    "          if (nc % @TNR@ != 0 && q0 < q1 && q1 == npan)\n"
    "            weir_gemm_tpack_b_@S@(0, b, ldb, pc, kc, jc, nc, npan - 1,\n"
    "                                  npan, bp);\n"
    "        } else if (q0 < q1)\n"
    "          weir_gemm_tpack_b_@S@(tb, b, ldb, pc, kc, jc, nc, q0, q1, bp);\n"
    "        for (int64_t ic = 0; ic < m; ic += mcb) {\n"
    "          const int64_t mc = m - ic < mcb ? m - ic : mcb;\n"
    "          /* this thread's A vectors [v0, v1) of the block, in panels\n"
    "           * [p0, p1): its share of all m's vectors, [mvt * tid / nt,\n"
    "           * mvt * (tid + 1) / nt), so that the shares differ by one\n"
    "           * vector at most (split block by block, M = 512 in blocks of\n"
    "           * 9, 9, 9 and 5 vectors went 18 to one thread and 14 to the\n"
    "           * other, scal17); a panel may be split between two threads\n"
    "           * (each packs it) */\n"
    "          const int64_t mvec = (mc + @VL@ - 1) / @VL@, vb = ic / @VL@;\n"
    "          const int64_t g0 = mvt * tid / nt - vb,\n"
    "                        g1 = mvt * (tid + 1) / nt - vb;\n"
    "          const int64_t v0 = byn || g0 < 0 ? 0 : g0 < mvec ? g0 : mvec;\n"
    "          const int64_t v1 = byn || g1 > mvec ? mvec : g1 > v0 ? g1 : "
    "v0;\n"
    "          if (v0 >= v1)\n"
    "            continue;\n"
    "          const int64_t p0 = v0 / @TMV@, p1 = (v1 + @TMV@ - 1) / @TMV@;\n"
    "#ifdef WEIR_GEMM_CHECK_PF\n"
    "          /* (tests) the thread's last block's prefetch took exactly\n"
    "           * this thread's panels of this block */\n"
    "          if (!byn && apk && pw0 != -2 &&\n"
    "              (pw0 != pc * mpad + ic * kc + p0 * kc * @TMR@ ||\n"
    "               pw1 != pc * mpad + ic * kc + p1 * kc * @TMR@))\n"
    "#ifdef _OPENMP\n"
    "#pragma omp atomic write\n"
    "#endif\n"
    "            pfbad = 1;\n"
    "#endif\n"
    "          /* a pre-packed A: block (pc, ic) at pc * mpad + ic * kc */\n"
    "          const @T@ *ab = apk ? apk + pc * mpad + ic * kc : ap;\n"
    "          for (int64_t p = p0; p < p1 && !apk; p++)\n"
    "            weir_gemm_tpack_a_@S@(ta, a, lda, alpha, ic, mc, pc, kc, p, "
    "ap);\n"
    "          /* a pre-packed A comes from L3 or memory, and the first B\n"
    "           * panel's tiles would wait for it: the next A block (the next\n"
    "           * in memory, up to the end of A) is prefetched by this\n"
    "           * block's tiles as they go, kc * VL / 2 elements each, each\n"
    "           * thread its share of it, assuming it as large as this one\n"
    "           * (r50) */\n"
    "          const int64_t bsz = (mc + @TMR@ - 1) / @TMR@ * @TMR@ * kc;\n"
    "          const int64_t pfe = apk ? mpad * k : 0;\n"
    "          const int64_t pfn = pc * mpad + ic * kc + bsz;\n"
    "          int64_t pfc = pfn + bsz * tid / nt;\n"
    "          int64_t pfh = pfn + bsz * (tid + 1) / nt;\n"
    "          pfh = pfh < pfe ? pfh : pfe;\n"
    "          /* split by A vectors, a thread reads only its own vectors'\n"
    "           * panels, and the next block in memory may hold none of\n"
    "           * them (M = 512 at K 4608: blocks of 18 and 14 vectors, the\n"
    "           * first thread's 16 all in the first): the L2 the prefetch\n"
    "           * fills is the thread's own, so it takes its panels of the\n"
    "           * next block it computes in, whole panels (a panel's\n"
    "           * vectors are interleaved along k), nothing after its last\n"
    "           * (r51) */\n"
    "          if (!byn && apk) {\n"
    "            pfc = pfh = 0;\n"
    "            for (int64_t npc = pc, nic = ic + mcb;; nic += mcb) {\n"
    "              if (nic >= m) {\n"
    "                npc += kcb;\n"
    "                nic = 0;\n"
    "              }\n"
    "              if (npc >= k)\n"
    "                break;\n"
    "              const int64_t nkc = k - npc < kcb ? k - npc : kcb;\n"
    "              const int64_t nmv = ((m - nic < mcb ? m - nic : mcb) +\n"
    "                                   @VL@ - 1) / @VL@;\n"
    "              const int64_t h0 = mvt * tid / nt - nic / @VL@;\n"
    "              const int64_t h1 = mvt * (tid + 1) / nt - nic / @VL@;\n"
    "              const int64_t w0 = h0 > 0 ? h0 : 0;\n"
    "              const int64_t w1 = h1 < nmv ? h1 : nmv;\n"
    "              if (w0 < w1) {\n"
    "                pfc = npc * mpad + nic * nkc + w0 / @TMV@ * nkc * @TMR@;\n"
    "                pfh = npc * mpad + nic * nkc +\n"
    "                      (w1 + @TMV@ - 1) / @TMV@ * nkc * @TMR@;\n"
    "                break;\n"
    "              }\n"
    "            }\n"
    "          }\n"
    "#ifdef WEIR_GEMM_CHECK_PF\n"
    "          pw0 = pfc < pfh ? pfc : -1;\n"
    "          pw1 = pfh;\n"
    "#endif\n"
    "          for (int64_t q = q0; q < q1 - join; q++) {\n"
    "            const int64_t nr =\n"
    "                nc - q * @TNR@ < @TNR@ ? nc - q * @TNR@ : @TNR@;\n"
    "            const int ext = join && q == npan - 2;\n"
    "            const int bin = inpl && nr == @TNR@;\n"
    "            const @T@ *pb = bin ? b + pc * ldb + jc + q * @TNR@\n"
    "                                : bp + q * kc * @TNR@;\n"
    "            const int64_t ldp = bin ? ldb : @TNR@;\n"
    "            for (int64_t p = p0; p < p1; p++) {\n"
    "              /* vectors [s, e) of panel p: rows r0 + [0, mr) */\n"
    "              const int64_t s = v0 > p * @TMV@ ? v0 - p * @TMV@ : 0;\n"
    "              const int64_t e =\n"
    "                  v1 < (p + 1) * @TMV@ ? v1 - p * @TMV@ : @TMV@;\n"
    "              const int64_t r0 = p * @TMR@ + s * @VL@;\n"
    "              const int64_t mr =\n"
    "                  mc - r0 < (e - s) * @VL@ ? mc - r0 : (e - s) * @VL@;\n"
    "              if (mr <= 0)\n"
    "                continue;\n"
    "              const @T@ *pa = ab + p * kc * @TMR@ + s * @VL@;\n"
    "#ifdef WEIR_GEMM_CHECK_PF\n"
    "              if (pfc < pfh && (pfc < 0 || pfc >= mpad * k))\n"
    "#ifdef _OPENMP\n"
    "#pragma omp atomic write\n"
    "#endif\n"
    "                pfbad = 1;\n"
    "#endif\n"
    "              const @T@ *pf = pfc < pfh ? apk + pfc : pa;\n"
    "              if (pfc < pfh)\n"
    "                pfc += kc * (@VL@ / 2);\n"
    "              if (ext)\n"
    "                weir_gemm_ukte_tab_@S@[(mr + @VL@ - 1) / @VL@ - 1](\n"
    "                    kc, pa, pb, ldp, bp + (q + 1) * kc * @TNR@, t, pf);\n"
    "              else\n"
    "                weir_gemm_ukt_tab_@S@[(mr + @VL@ - 1) / @VL@ - 1][nr - "
    "1](\n"
    "                    kc, pa, pb, ldp, t, pf);\n"
    "              weir_gemm_stt_@S@(t, c + (ic + r0) * ldc + jc + q * @TNR@,\n"
    "                                ldc, mr, nr, acc, epk, ic + r0,\n"
    "                                jc + q * @TNR@);\n"
    "              if (ext)\n"
    "                weir_gemm_stt_@S@(t + @TNR@ * @TMR@,\n"
    "                                  c + (ic + r0) * ldc + jc + (q + 1) * "
    "@TNR@,\n"
    "                                  ldc, mr, 1, acc, epk, ic + r0,\n"
    "                                  jc + (q + 1) * @TNR@);\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  free(own);\n"
    "#ifdef WEIR_GEMM_CHECK_PF\n"
    "  if (pfbad)\n"
    "    return 2;\n"
    "#endif\n"
    "  return 0;\n"
    "}\n";

/* The tail of weir_gemm_runp (tail14p, AVX-512 f32): the last panel's
 * partial vector, when it has at most TNR columns, computed with the
 * channels in the vectors.  The A vectors come from the usual tile's
 * MR-high panels as they are (packed per call or pre-packed at load),
 * VL / MR = 2 panels to a vector, so nothing is packed again; the columns
 * are broadcast from the packed B panel or from B in place. */
static const char gemm_t_tail[] =
    "/* The usual tile's tail (tail14p): a TMR x np tile of c over kc with\n"
    " * the rows in the vectors, as weir_gemm_ukt, but A read from nh of the\n"
    " * usual MR-high panels (kc x MR each, ps elements apart from ap on),\n"
    " * two to a vector; the missing ones (nh below TMR / MR) are read\n"
    " * again from the last, and their rows are not stored.  bp: np columns\n"
    " * of kc rows, ldp apart (packed or in place: only they are read).\n"
    " * The tile goes to t as weir_gemm_ukt's, for weir_gemm_stt. */\n"
    "typedef @T@ weir_gemm_hp_@S@ __attribute__((vector_size(@MRB@)));\n"
    "WEIR_GEMM_INL_@S@ void weir_gemm_ukp_@S@(const int np, int64_t kc,\n"
    "                                        const @T@ *restrict ap,\n"
    "                                        int64_t ps, int64_t nh,\n"
    "                                        const @T@ *restrict bp,\n"
    "                                        int64_t ldp,\n"
    "                                        @T@ *restrict t) {\n"
    "  const @T@ *h[2 * @TMV@];\n"
    "#pragma GCC unroll 16\n"
    "  for (int x = 0; x < 2 * @TMV@; x++)\n"
    "    h[x] = ap + (x < nh ? x : nh - 1) * ps;\n"
    "  weir_gemm_v_@S@ r[@TNR@][@TMV@];\n"
    "#pragma GCC unroll 16\n"
    "  for (int j = 0; j < @TNR@; j++)\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @TMV@; v++)\n"
    "      r[j][v] = weir_gemm_vzero_@S@();\n"
    "  for (int64_t k = 0; k < kc; k++) {\n"
    "    weir_gemm_v_@S@ a[@TMV@];\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @TMV@; v++) {\n"
    "      weir_gemm_hp_@S@ lo, hi;\n"
    "      memcpy(&lo, h[2 * v] + k * @MR@, sizeof lo);\n"
    "      memcpy(&hi, h[2 * v + 1] + k * @MR@, sizeof hi);\n"
    "      a[v] = (weir_gemm_v_@S@)__builtin_shufflevector(lo, hi, @CAT@);\n"
    "    }\n"
    "#pragma GCC unroll 16\n"
    "    for (int j = 0; j < @TNR@; j++) {\n"
    "      if (j >= np)\n"
    "        continue;\n"
    "      const weir_gemm_v_@S@ b = weir_gemm_vset_@S@(bp[k * ldp + j]);\n"
    "#pragma GCC unroll 8\n"
    "      for (int v = 0; v < @TMV@; v++)\n"
    "        r[j][v] = weir_gemm_vfma_@S@(a[v], b, r[j][v]);\n"
    "    }\n"
    "  }\n"
    "#pragma GCC unroll 16\n"
    "  for (int j = 0; j < @TNR@; j++)\n"
    "#pragma GCC unroll 8\n"
    "    for (int v = 0; v < @TMV@; v++)\n"
    "      weir_gemm_vstore_@S@(t + j * @TMR@ + v * @VL@,\n"
    "                           j < np ? r[j][v] : weir_gemm_vzero_@S@());\n"
    "}\n";

/* one per column count np = @P@ */
static const char gemm_t_tail_n[] =
    "static @TGT@ void weir_gemm_ukp@P@_@S@(int64_t kc, const @T@ *ap,\n"
    "                                      int64_t ps, int64_t nh,\n"
    "                                      const @T@ *bp, int64_t ldp,\n"
    "                                      @T@ *t) {\n"
    "  weir_gemm_ukp_@S@(@P@, kc, ap, ps, nh, bp, ldp, t);\n"
    "}\n";

/* weir_gemm_runp's call of the tail, in its m block loop. */
static const char gemm_t_tail_run[] =
    "          /* the tail (tr columns of the last panel) when this thread\n"
    "           * has that panel: its rows of it, [t0, t1) of the block's A\n"
    "           * panels, TMR / MR panels per transposed tile */\n"
    "          if (tr && q1 == npan) {\n"
    "            const int64_t t0 = l0 - pb > p0 ? l0 - pb : p0;\n"
    "            const int64_t t1 = l1 - pb < p1 ? l1 - pb : p1;\n"
    "            const int64_t qt = npan - 1, jt = nc - tr;\n"
    "            const @T@ *pbt = inpl ? b + pc * ldb + jc + jt\n"
    "                                  : bb + qt * kc * @NR@ + jt - qt * "
    "@NR@;\n"
    "            const int64_t ldpt = inpl ? ldb : @NR@;\n"
    "            for (int64_t pt = t0; pt < t1; pt += @TMR@ / @MR@) {\n"
    "              const int64_t nh =\n"
    "                  t1 - pt < @TMR@ / @MR@ ? t1 - pt : @TMR@ / @MR@;\n"
    "              const int64_t mr =\n"
    "                  mc - pt * @MR@ < nh * @MR@ ? mc - pt * @MR@ : nh * "
    "@MR@;\n"
    "              weir_gemm_ukp_tab_@S@[tr - 1](kc, ab + pt * kc * @MR@,\n"
    "                                           kc * @MR@, nh, pbt, ldpt, "
    "tt);\n"
    "              weir_gemm_stt_@S@(tt, c + (ic + pt * @MR@) * ldc + jc + "
    "jt,\n"
    "                                ldc, mr, tr, acc, pc + kc >= k ? ep : "
    "NULL,\n"
    "                                ic + pt * @MR@, jc + jt);\n"
    "            }\n"
    "          }\n";

/* "a, b, c" of the integers [from, to) */
static char *index_list(guint from, guint to) {
  GString *s = g_string_new(NULL);
  for (guint i = from; i < to; i++)
    g_string_append_printf(s, "%s%u", i > from ? ", " : "", i);
  return g_string_free(s, FALSE);
}

/* weir_gemm_tr: x[j] (column j of a TNR x VL block, the lanes its rows)
 * into x[kk] whose lanes [s * TNR, + TNR) are the TNR columns of row
 * s * TNR + kk.  Round b (bit = 2^b) swaps bit b of the vector index with
 * bit b of the lane: vectors a and a | bit exchange the lanes whose bit b
 * differs from the vector's. */
static void append_transpose(GString *s, guint vl, guint tnr) {
  g_string_append(s, "/* the TNR x VL block x (vector j: column j, lanes "
                     "rows) transposed: x[kk]\n"
                     " * lanes [s * TNR, + TNR) the columns of row s * TNR + "
                     "kk */\n"
                     "WEIR_GEMM_INL_@S@ void weir_gemm_tr_@S@(weir_gemm_v_@S@ "
                     "*x) {\n");
  for (guint bit = 1; bit < tnr; bit <<= 1)
    for (guint a = 0; a < tnr; a++) {
      if (a & bit)
        continue;
      GString *i0 = g_string_new(NULL), *i1 = g_string_new(NULL);
      for (guint l = 0; l < vl; l++) {
        guint from_b = l & bit ? vl : 0;
        g_string_append_printf(i0, "%s%u", l ? ", " : "", (l & ~bit) + from_b);
        g_string_append_printf(i1, "%s%u", l ? ", " : "", (l | bit) + from_b);
      }
      g_string_append_printf(
          s,
          "  {\n"
          "    const weir_gemm_v_@S@ y0 = (weir_gemm_v_@S@)__builtin_"
          "shufflevector(\n"
          "        x[%u], x[%u], %s);\n"
          "    const weir_gemm_v_@S@ y1 = (weir_gemm_v_@S@)__builtin_"
          "shufflevector(\n"
          "        x[%u], x[%u], %s);\n"
          "    x[%u] = y0;\n"
          "    x[%u] = y1;\n"
          "  }\n",
          a, a | bit, i0->str, a, a | bit, i1->str, a, a | bit);
      g_string_free(i0, TRUE);
      g_string_free(i1, TRUE);
    }
  g_string_append(s, "}\n");
}

/* The text of the transposed path (f32, bl->tnr > 0), before the final
 * substitutions of weir_kernel_gemm_text. */
static void append_transposed(GString *s, const WeirGemmBlocking *bl) {
  g_assert(bl->tnr > 0 && bl->vl % bl->tnr == 0 && bl->vl / bl->tnr <= 2);
  gboolean two = bl->vl == 2 * bl->tnr;
  append_transpose(s, bl->vl, bl->tnr);
  GString *rows = g_string_new(two ? gemm_t_rows2 : gemm_t_rows1);
  g_autofree char *cat = index_list(0, bl->vl);
  g_autofree char *lo = index_list(0, bl->tnr);
  g_autofree char *hi = index_list(bl->tnr, bl->vl);
  g_string_replace(rows, "@CAT@", cat, 0);
  g_string_replace(rows, "@LO@", lo, 0);
  g_string_replace(rows, "@HI@", hi, 0);
  replace_uint(rows, "@HB@", bl->tnr * 4);
  g_string_append(s, rows->str);
  g_string_free(rows, TRUE);
  g_string_append(s, gemm_t_ukr);
  GString *tab =
      g_string_new("static void (*const weir_gemm_ukt_tab_@S@[@TMV@][@TNR@])(\n"
                   "    int64_t, const @T@ *, const @T@ *, int64_t, @T@ *,\n"
                   "    const @T@ *) = {\n");
  /* every column count for whole tiles of rows (the pixel edge), whole
   * panels of columns for the rarer partial rows: their missing columns
   * are zeros of the padded B panel, computed and not stored (each
   * instance costs compile time) */
  for (guint v = 1; v <= bl->tmv; v++) {
    g_string_append(tab, "    {");
    for (guint p = 1; p <= bl->tnr; p++) {
      if (v == bl->tmv || p == bl->tnr) {
        GString *u = g_string_new(gemm_t_ukr_n);
        replace_uint(u, "@V@", v);
        replace_uint(u, "@P@", p);
        g_string_append(s, u->str);
        g_string_free(u, TRUE);
      }
      g_string_append_printf(tab, "%sweir_gemm_ukt%ux%u_@S@", p > 1 ? ", " : "",
                             v, v == bl->tmv ? p : bl->tnr);
    }
    g_string_append(tab, "},\n");
  }
  g_string_append(tab, "};\n");
  g_string_append(
      tab, "static void (*const weir_gemm_ukte_tab_@S@[@TMV@])(\n"
           "    int64_t, const @T@ *, const @T@ *, int64_t, const @T@ *,\n"
           "    @T@ *, const @T@ *) = {");
  for (guint v = 1; v <= bl->tmv; v++) {
    GString *u = g_string_new(gemm_t_ukr_e);
    replace_uint(u, "@V@", v);
    g_string_append(s, u->str);
    g_string_free(u, TRUE);
    g_string_append_printf(tab, "%sweir_gemm_ukte%u_@S@", v > 1 ? ", " : "", v);
  }
  g_string_append(tab, "};\n");
  g_string_append(s, tab->str);
  g_string_free(tab, TRUE);
  GString *st = g_string_new(gemm_t_store);
  g_string_replace(st, "@I1@", two ? "i0 + @TNR@" : "mr", 0);
  g_string_replace(st, "@CB1@", two ? "ep->cb + col0" : "NULL", 0);
  g_string_append(s, st->str);
  g_string_free(st, TRUE);
  if (!weir_kernel_gemm_has_tail(bl))
    return;
  GString *tl = g_string_new(gemm_t_tail);
  GString *ttab = g_string_new(
      "static void (*const weir_gemm_ukp_tab_@S@[@TNR@])(\n"
      "    int64_t, const @T@ *, int64_t, int64_t, const @T@ *, int64_t,\n"
      "    @T@ *) = {");
  for (guint p = 1; p <= bl->tnr; p++) {
    GString *u = g_string_new(gemm_t_tail_n);
    replace_uint(u, "@P@", p);
    g_string_append(tl, u->str);
    g_string_free(u, TRUE);
    g_string_append_printf(ttab, "%sweir_gemm_ukp%u_@S@", p > 1 ? ", " : "", p);
  }
  g_string_append(ttab, "};\n");
  g_string_append(tl, ttab->str);
  g_string_free(ttab, TRUE);
  g_string_replace(tl, "@CAT@", cat, 0);
  replace_uint(tl, "@MRB@", bl->mr * 4);
  g_string_append(s, tl->str);
  g_string_free(tl, TRUE);
}

gboolean weir_kernel_gemm_has_tail(const WeirGemmBlocking *bl) {
  return bl->tnr > 0 && bl->vl == 2 * bl->mr && bl->tmr % bl->mr == 0;
}

/* Cycles of one k step of a microtile with `bc` broadcasts and `vecs`
 * vectors loaded: bc * vecs FMAs at two a cycle, bc + vecs loads at two a
 * cycle. */
static double ustep(gint64 bc, gint64 vecs) {
  return MAX(bc * vecs / 2.0, (bc + vecs) / 2.0);
}

gint64 weir_kernel_gemm_orient_env(void) {
  const char *v = g_getenv("WEIR_GEMM_ORIENT");
  return g_strcmp0(v, "1") == 0 ? 1 : g_strcmp0(v, "2") == 0 ? 2 : 0;
}

guint weir_kernel_gemm_inplace_k(void) {
  const char *v = g_getenv("WEIR_GEMM_INPLACE_K");
  if (v && *v) {
    char *end = NULL;
    const guint64 k = g_ascii_strtoull(v, &end, 10);
    if (end && *end == '\0')
      return (guint)MIN(k, (guint64)G_MAXINT32);
  }
  return WEIR_GEMM_INPLACE_K;
}

/* gemm_pack_runs_fn's vectors: vw 16 (zmm) or 8 (ymm, AVX-512VL) lanes */
static void runs_width(GString *s, guint vw) {
  gboolean z = vw == 16;
  g_string_replace(s, "@VTGT@", z ? "avx512f" : "avx512f,avx512vl", 0);
  g_string_replace(s, "@VI@", z ? "__m512i" : "__m256i", 0);
  g_string_replace(s, "@VT@", z ? "__m512" : "__m256", 0);
  g_string_replace(s, "@VP@", z ? "_mm512" : "_mm256", 0);
  g_string_replace(s, "@VK@", z ? "__mmask16" : "__mmask8", 0);
  g_string_replace(s, "@EV@",
                   z ? "_mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, "
                       "14, 12, 10, 8, 6, 4, 2, 0)"
                     : "_mm256_set_epi32(14, 12, 10, 8, 6, 4, 2, 0)",
                   0);
  replace_uint(s, "@VW@", vw);
}

guint weir_kernel_gemm_pack_runs(void) {
  const char *v = g_getenv("WEIR_GEMM_PACK_RUNS");
  if (v && *v) {
    char *end = NULL;
    const guint64 w = g_ascii_strtoull(v, &end, 10);
    if (end && *end == '\0')
      return w == 0 ? G_MAXINT32 : (guint)MIN(w, (guint64)G_MAXINT32);
  }
  return WEIR_GEMM_PACK_RUNS;
}

gboolean weir_kernel_gemm_channels_in_vectors(const WeirGemmBlocking *bl,
                                              gint64 m, gint64 n, gint64 k,
                                              gboolean patches) {
  if (!bl->tnr || m <= 0 || n <= 0 || k <= 0)
    return FALSE;
  gint64 vl = bl->vl, kblocks = (k + bl->kc - 1) / bl->kc;
  /* the usual tile: MR rows (padded) broadcast, the columns' vectors */
  gint64 mp = (m + bl->mr - 1) / bl->mr;
  gint64 nfull = n / bl->nr, nrem = n % bl->nr;
  /* its tail (tail14p): a partial vector of at most TNR columns computed
   * with the rows in the vectors, TMR / MR row panels a tile, each A
   * vector two loads (its two panels).  Counted only when B is not
   * gathered from patches: on 7x7 maps the usual tile with this tail
   * measured 5-15% faster than the transposed one for 1x1 convolutions
   * at unit stride, but 18-25% slower for ResNet-18's 3x3 and strided
   * 1x1 ones (docs/performance.md, tail14p); and only after a whole
   * panel (n >= NR: not measured on the few columns of a squeeze-and-
   * excitation block's 1x1 convolutions, which keep their choice) */
  gint64 tr = !patches && n >= bl->nr && weir_kernel_gemm_has_tail(bl) &&
                      nrem % vl <= bl->tnr
                  ? nrem % vl
                  : 0;
  gint64 nremv = (nrem - tr + vl - 1) / vl;
  gint64 tchunks = tr ? (mp + bl->tmr / bl->mr - 1) / (bl->tmr / bl->mr) : 0;
  double per_k =
      (double)mp *
          (nfull * ustep(bl->mr, bl->nv) + (nremv ? ustep(bl->mr, nremv) : 0)) +
      (double)tchunks * MAX(tr * bl->tmv / 2.0, (tr + 2.0 * bl->tmv) / 2.0);
  gint64 tiles = mp * (nfull + (nremv > 0));
  double usual = per_k * k + (double)tiles * kblocks * bl->mr * bl->nv +
                 (double)tchunks * kblocks * 6 * bl->tnr * bl->tmv;
  /* the transposed tile: the rows' vectors (the last ones fewer), TNR
   * columns broadcast (the last panel fewer); its store transposes */
  gint64 mfull = m / bl->tmr, mrem = m % bl->tmr;
  gint64 mv = (mrem + vl - 1) / vl;
  gint64 pfull = n / bl->tnr, prem = n % bl->tnr;
  double col =
      mfull * ustep(bl->tnr, bl->tmv) + (mrem ? ustep(bl->tnr, mv) : 0);
  double col_rem =
      prem ? mfull * ustep(prem, bl->tmv) + (mrem ? ustep(prem, mv) : 0) : 0;
  gint64 ttiles = (mfull + (mrem > 0)) * (pfull + (prem > 0));
  double trans = (pfull * col + col_rem) * k +
                 (double)ttiles * kblocks * 6 * bl->tnr * bl->tmv;
  return trans < 0.9 * usual;
}

static const char *vec_block(WeirHwIsa isa, WeirDType t) {
  gboolean f32 = t != WEIR_DTYPE_F64;
  switch (isa) {
  case WEIR_HW_ISA_AVX512:
    return f32 ? vec_avx512_f32 : vec_avx512_f64;
  case WEIR_HW_ISA_AVX2:
    return f32 ? vec_avx2_f32 : vec_avx2_f64;
  case WEIR_HW_ISA_GENERIC:
    break;
  }
  return vec_generic;
}

char *weir_kernel_gemm_name(const WeirGemmBlocking *bl) {
  return g_strconcat("weir_gemm_", bl->id, NULL);
}

char *weir_kernel_gemm_text(WeirDType t, const WeirGemmBlocking *bl) {
  GString *s = g_string_new(gemm_head);
  /* the ISA blocks are written for the dtype's names; a node's own
   * blocking (bl->id) gets its own copy of them */
  GString *vb = g_string_new(vec_block(bl->isa, t));
  g_string_replace(vb, t == WEIR_DTYPE_F64 ? "_f64" : "_f32", "_@S@", 0);
  g_string_append(s, vb->str);
  g_string_free(vb, TRUE);
  g_string_append(s, gemm_ukr);
  g_string_replace(s, "@FASTACT@", t == WEIR_DTYPE_F64 ? "" : gemm_fast_act, 0);
  GString *cases = g_string_new(NULL);
  /* f32: the microkernels with sigmoid, SiLU and HardSwish in the store
   * (fa 1, weir_gemm_ukr<nv>a), called when the fast epilogue has one */
  GString *casesa =
      g_string_new(t == WEIR_DTYPE_F64
                       ? ""
                       : "              if (fe && fe->act > 1)\n"
                         "                switch ((nr + @VL@ - 1) / @VL@) {\n");
  for (guint fa = 0; fa <= (t == WEIR_DTYPE_F64 ? 0u : 1u); fa++)
    for (guint nv = 1; nv <= bl->nv; nv++) {
      GString *u = g_string_new(gemm_ukr_n);
      replace_uint(u, "@N@", nv);
      replace_uint(u, "@F@", fa);
      g_string_replace(u, "@A@", fa ? "a" : "", 0);
      g_string_append(s, u->str);
      g_string_free(u, TRUE);
      g_autofree char *label =
          nv == bl->nv ? g_strdup("default") : g_strdup_printf("case %u", nv);
      g_string_append_printf(fa ? casesa : cases,
                             "              %s%s: weir_gemm_ukr%u%s_@S@(kc, "
                             "pa, pb, ldp, pcc, ldc, mr, nr, acc, fe, pf); "
                             "break;\n",
                             fa ? "  " : "", label, nv, fa ? "a" : "");
    }
  if (t != WEIR_DTYPE_F64)
    g_string_append(casesa, "                }\n"
                            "              else\n");
  g_string_append(s, gemm_epi);
  g_string_replace(s, "@VECEPI@", t == WEIR_DTYPE_F64 ? "" : gemm_epi_vec, 0);
  g_string_append(s, gemm_driver);
  /* small maps' patches gathered with AVX-512 masked gathers (f32) */
  gboolean gather = t != WEIR_DTYPE_F64 && bl->isa == WEIR_HW_ISA_AVX512;
  GString *pk = g_string_new(gather ? gemm_pack_gather_fn : "");
  g_string_append(pk, gemm_pack);
  g_string_replace(pk, "@IMGATHER@", gather ? gemm_pack_gather_call : "", 0);
  /* the panels of maps at least half a vector wide packed from segments
   * of output rows (f32 on AVX-512): zmm on the usual tile's panels (NR a
   * multiple of 16), ymm on the transposed tile's (TNR 8) */
  GString *tp = g_string_new(pk->str);
  g_string_replace(pk, "@IMRUNS@", gather ? gemm_pack_runs_call : "", 0);
  if (gather) {
    g_string_prepend(pk, gemm_pack_runs_fn);
    runs_width(pk, 16);
  }
  g_string_append(s, pk->str);
  gboolean trans = t != WEIR_DTYPE_F64 && bl->tnr > 0;
  if (trans) {
    /* the packing again, for the transposed microtile's panels */
    g_string_replace(tp, "@IMRUNS@", gather ? gemm_pack_runs_call : "", 0);
    if (gather) {
      g_string_prepend(tp, gemm_pack_runs_fn);
      runs_width(tp, bl->tnr % 16 == 0 ? 16 : 8);
    }
    g_string_replace(tp, "weir_gemm_pack_", "weir_gemm_tpack_", 0);
    g_string_replace(tp, "@NR@", "@TNR@", 0);
    g_string_replace(tp, "@MR@", "@TMR@", 0);
    g_string_append(s, tp->str);
  }
  g_string_free(tp, TRUE);
  g_string_free(pk, TRUE);
  /* the transposed tile before the usual driver, which computes its tail
   * with it (tail14p) */
  if (trans)
    append_transposed(s, bl);
  g_string_append(s, gemm_run);
  if (trans)
    g_string_append(s, gemm_t_run);
  gboolean tail = trans && weir_kernel_gemm_has_tail(bl);
  g_string_replace(s, "@TAILBUF@",
                   tail ? "    @T@ tt[@TNR@ * @TMR@] "
                          "__attribute__((aligned(64)));\n"
                        : "",
                   0);
  g_string_replace(s, "@TAILRUN@", tail ? gemm_t_tail_run : "", 0);
  replace_uint(s, "@TAILW@", tail ? bl->tnr : 0);
  g_string_replace(s, "@CASESA@", casesa->str, 0);
  g_string_replace(s, "@CASES@", cases->str, 0);
  g_string_free(casesa, TRUE);
  g_string_replace(s, "@FASTMAX@", t == WEIR_DTYPE_F64 ? "1" : "4", 0);
  g_string_replace(s, "@DT@", t == WEIR_DTYPE_F64 ? "f64" : "f32", 0);
  g_string_free(cases, TRUE);
  g_string_replace(s, "@ISA@", weir_hw_isa_name(bl->isa), 0);
  g_string_replace(s, "@TGT@", weir_kernel_isa_target(bl->isa), 0);
  g_string_replace(s, "@T@", t == WEIR_DTYPE_F64 ? "double" : "float", 0);
  g_string_replace(s, "@S@", bl->id, 0);
  /* below half a microtile of rows the packed path wastes most of its
   * multiply-adds on padding */
  replace_uint(s, "@SMALLM@", MAX(bl->mr / 2, 2));
  replace_uint(s, "@BINK@", weir_kernel_gemm_inplace_k());
  replace_uint(s, "@RUNMIN@", weir_kernel_gemm_pack_runs());
  replace_uint(s, "@TKC@", bl->tkc);
  /* the joined tile (r53): (TNR + 1) x TMV accumulators, TMV A vectors
   * and a broadcast in the ISA's vector registers */
  guint nregs = bl->isa == WEIR_HW_ISA_AVX512 ? 32 : 16;
  replace_uint(s, "@TJOIN@",
               (bl->tnr + 1) * bl->tmv + bl->tmv + 1 <= nregs ? 1 : 0);
  replace_uint(s, "@TAB@", bl->tab);
  replace_uint(s, "@TMR@", bl->tmr);
  replace_uint(s, "@TNR@", bl->tnr);
  replace_uint(s, "@TMV@", bl->tmv);
  replace_uint(s, "@MR@", bl->mr);
  replace_uint(s, "@NR@", bl->nr);
  replace_uint(s, "@NV@", bl->nv);
  replace_uint(s, "@VL@", bl->vl);
  replace_uint(s, "@KC@", bl->kc);
  replace_uint(s, "@MC@", bl->mc);
  replace_uint(s, "@NC@", bl->nc);
  replace_uint(s, "@THREADS@", MAX(bl->threads, 1));
  return g_string_free(s, FALSE);
}

char *weir_kernels_signature(void) {
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  GString *s = g_string_new(NULL);
  static const WeirDType types[] = {WEIR_DTYPE_F32, WEIR_DTYPE_F64};
  for (guint i = 0; i < G_N_ELEMENTS(types); i++) {
    WeirGemmBlocking b;
    weir_kernel_gemm_blocking(hw, types[i], &b);
    g_autofree char *name = weir_kernel_gemm_name(&b);
    g_string_append_printf(
        s,
        "%sgemm %s %s mr %u nr %u kc %u mc %u nc %u tkc %u tab %u threads %u",
        i ? "; " : "", name, weir_hw_isa_name(b.isa), b.mr, b.nr, b.kc, b.mc,
        b.nc, b.tkc, b.tab, b.threads);
  }
  if (weir_kernel_gemm_orient_env())
    g_string_append_printf(s, "; conv orient %" G_GINT64_FORMAT,
                           weir_kernel_gemm_orient_env());
  if (weir_kernel_gemm_inplace_k() != WEIR_GEMM_INPLACE_K)
    g_string_append_printf(s, "; b in place up to k %u",
                           weir_kernel_gemm_inplace_k());
  if (weir_kernel_gemm_pack_runs() != WEIR_GEMM_PACK_RUNS)
    g_string_append_printf(s, "; patch runs from ow %u",
                           weir_kernel_gemm_pack_runs());
  return g_string_free(s, FALSE);
}

/* threads x (round64(kb * nb * size) + round64(kb * mb * size)), kb and
 * mb the balanced blocks (kcb, mcb): what the driver's packing buffers
 * take for these m, n, k (its bbytes + abytes per thread). */
gint64 weir_kernel_gemm_trows(const WeirGemmBlocking *bl, gint64 k) {
  g_return_val_if_fail(bl->tmr > 0 && bl->tkc > 0, 1);
  gint64 kblocks = (MAX(k, 1) + bl->tkc - 1) / bl->tkc;
  gint64 kcb = (MAX(k, 1) + kblocks - 1) / kblocks;
  gint64 rows = (gint64)bl->tab / kcb / bl->tmr * bl->tmr;
  return MAX(rows, (gint64)bl->tmr);
}

static gint64 work_blocks(gint64 size, gint64 m, gint64 n, gint64 k, gint64 kc,
                          gint64 mc, gint64 nc, gint64 mr, gint64 nr) {
  gint64 kblocks = (k + kc - 1) / kc;
  gint64 kb = (k + kblocks - 1) / kblocks;
  gint64 mblocks = (m + mc - 1) / mc;
  gint64 mb = ((m + mblocks - 1) / mblocks + mr - 1) / mr * mr;
  gint64 nb = n < nc ? (n + nr - 1) / nr * nr : nc;
  return (kb * nb * size + 63) / 64 * 64 + (kb * mb * size + 63) / 64 * 64;
}

static gint64 work_exact(const WeirGemmBlocking *bl, gint64 size, gint64 m,
                         gint64 n, gint64 k) {
  if (m <= 0 || n <= 0 || k <= 0)
    return 0;
  gint64 w = work_blocks(size, m, n, k, bl->kc, bl->mc, bl->nc, bl->mr, bl->nr);
  if (bl->tmr) /* weir_gemm_runt's blocks: TMR-high, TNR-wide panels */
    w = MAX(w,
            work_blocks(size, m, n, k, bl->tkc, weir_kernel_gemm_trows(bl, k),
                        bl->nc, bl->tmr, bl->tnr));
  return (gint64)MAX(bl->threads, 1) * w;
}

WeirExpr *weir_kernel_gemm_work_bytes(WeirDType t, const WeirGemmBlocking *bl,
                                      const WeirExpr *m, const WeirExpr *n,
                                      const WeirExpr *k) {
  gint64 size = t == WEIR_DTYPE_F64 ? 8 : 4, cm, cn, ck;
  if (m && n && k && weir_expr_is_const(m, &cm) && weir_expr_is_const(n, &cn) &&
      weir_expr_is_const(k, &ck))
    return weir_expr_const(work_exact(bl, size, cm, cn, ck));
  /* symbolic sizes: the largest blocks the driver packs */
  gint64 w = work_exact(bl, size, bl->mc, bl->nc, bl->kc);
  if (bl->tmr) /* weir_gemm_runt: kcb x nc of B, tab (or one panel) of A */
    w = MAX(w, (gint64)MAX(bl->threads, 1) *
                   (((gint64)bl->tkc * bl->nc * size + 63) / 64 * 64 +
                    ((gint64)MAX(bl->tab, bl->tkc * bl->tmr) * size + 63) / 64 *
                        64));
  return weir_expr_const(w);
}

/* ------------------------------------------------------------ emitting */

gboolean weir_kernel_gemm_record(WeirNativeEmit *e, WeirDType t,
                                 WeirGemmBlocking *bl, GError **error) {
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  if (!weir_kernel_gemm_blocking_node(hw, t, e->n, bl, error))
    return FALSE;
  g_autofree char *text = weir_kernel_gemm_text(t, bl);
  g_autofree char *name = weir_kernel_gemm_name(bl);
  /* the activations of the epilogue, before the GEMM by name */
  weir_kernel_act_record(e, bl->isa, t == WEIR_DTYPE_F64 ? 0 : bl->vl, t);
  e->helper(e, name, text);
  e->uses_status = TRUE;
  return TRUE;
}

char *weir_kernel_instantiate(const char *text, WeirDType t) {
  gboolean f32 = t == WEIR_DTYPE_F32;
  GString *s = g_string_new(text);
  g_string_replace(s, "@T@", f32 ? "float" : "double", 0);
  g_string_replace(s, "@S@", f32 ? "f32" : "f64", 0);
  return g_string_free(s, FALSE);
}

char *weir_kernel_comment_label(const WeirNode *n) {
  char *l = g_strdup(n->label ? n->label : "");
  for (char *p = l; *p; p++)
    if (*p == '*' || *p == '/' || (guchar)*p < 0x20 || (guchar)*p >= 0x7f)
      *p = '_';
  return l;
}

/* The GResource of core/kernels/kernels.gresource.xml (generated). */
GResource *weir_kernels_get_resource(void);

char *weir_kernel_helper_text(const char *resource, const char *what,
                              const char *prefix, const char *path_name,
                              int path, guint mr, guint nv, gint64 l2,
                              guint threads) {
  g_autoptr(GBytes) b =
      g_resource_lookup_data(weir_kernels_get_resource(), resource,
                             G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  g_return_val_if_fail(b != NULL, NULL);
  gsize len = 0;
  const char *text = g_bytes_get_data(b, &len);
  GString *s = g_string_new(NULL);
  g_string_append_printf(
      s,
      "/* Weir's %s GEMM, path %s, microtile %u x %u vectors, L2 "
      "%" G_GINT64_FORMAT " B, %u threads */\n"
      "#define WEIR_%s_PATH %d\n#define WEIR_%s_MR %u\n"
      "#define WEIR_%s_NV %u\n#define WEIR_%s_L2 %" G_GINT64_FORMAT "\n"
      "#define WEIR_%s_THREADS %u\n",
      what, path_name, mr, nv, l2, threads, prefix, path, prefix, mr, prefix,
      nv, prefix, l2, prefix, threads);
  g_string_append_len(s, text, (gssize)len);
  return g_string_free(s, FALSE);
}

gboolean weir_kernel_row_major(const WeirContainer *c) {
  g_autoptr(WeirExpr) acc = weir_expr_const(1);
  for (guint d = c->shape->len; d-- > 0;) {
    if (!weir_expr_equal(g_ptr_array_index(c->strides, d), acc))
      return FALSE;
    WeirExpr *next = weir_expr_mul(acc, g_ptr_array_index(c->shape, d));
    weir_expr_unref(acc);
    acc = next;
  }
  return TRUE;
}

char *weir_kernel_scratch_arg(WeirNativeEmit *e, WeirExpr *bytes) {
  g_autoptr(WeirExpr) b = bytes;
  gint64 v;
  if (weir_expr_is_const(b, &v) && v <= 0)
    return g_strdup("NULL");
  g_autofree char *p = e->scratch(e, b);
  return g_strdup_printf("(void *)%s", p);
}

char *weir_kernel_gemm_use(WeirNativeEmit *e, WeirDType t, const WeirExpr *m,
                           const WeirExpr *n, const WeirExpr *k,
                           WeirGemmBlocking *bl, GError **error) {
  if (!weir_kernel_gemm_record(e, t, bl, error))
    return NULL;
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  return weir_kernel_scratch_arg(
      e, weir_kernel_gemm_work_bytes(t, bl, m ? m : one, n ? n : one,
                                     k ? k : one));
}

/* ------------------------------------------------------ pre-packed A */

/* Run once, when the kernel is loaded (not per call), so a plain loop
 * with the blocking as arguments: the same blocks, panels and zero
 * padding as weir_gemm_pack_a with alpha 1 and no transpose. */
static const char prepack_a_text[] =
    "/* The GEMM's A operand packed once (docs/native.md, \"pre-packed\n"
    " * weights\"): groups of m x k row-major matrices (g at a + g * m * k),\n"
    " * each into (m + mr - 1) / mr * mr * k elements of dst: per k block\n"
    " * (kc at most, balanced) and m block (mc at most, balanced, whole\n"
    " * mr-high panels) its panels of kc x mr, zero-padded, as\n"
    " * weir_gemm_runp reads them. */\n"
    "static void weir_prepack_a_@S@(const @T@ *a, int64_t groups, int64_t m,\n"
    "                               int64_t k, int64_t mr, int64_t kcmax,\n"
    "                               int64_t mcmax, @T@ *dst) {\n"
    "  const int64_t kblocks = (k + kcmax - 1) / kcmax;\n"
    "  const int64_t kcb = (k + kblocks - 1) / kblocks;\n"
    "  const int64_t mblocks = (m + mcmax - 1) / mcmax;\n"
    "  const int64_t mcb = ((m + mblocks - 1) / mblocks + mr - 1) / mr * mr;\n"
    "  const int64_t mpad = (m + mr - 1) / mr * mr;\n"
    "  for (int64_t g = 0; g < groups; g++) {\n"
    "    const @T@ *ag = a + g * m * k;\n"
    "    @T@ *dg = dst + g * mpad * k;\n"
    "    for (int64_t pc = 0; pc < k; pc += kcb) {\n"
    "      const int64_t kc = k - pc < kcb ? k - pc : kcb;\n"
    "      for (int64_t ic = 0; ic < m; ic += mcb) {\n"
    "        const int64_t mc = m - ic < mcb ? m - ic : mcb;\n"
    "        @T@ *blk = dg + pc * mpad + ic * kc;\n"
    "        for (int64_t p = 0; p * mr < mc; p++)\n"
    "          for (int64_t kk = 0; kk < kc; kk++)\n"
    "            for (int64_t i = 0; i < mr; i++) {\n"
    "              const int64_t row = p * mr + i;\n"
    "              blk[(p * kc + kk) * mr + i] =\n"
    "                  row < mc ? ag[(ic + row) * k + pc + kk] : (@T@)0;\n"
    "            }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The same for B: per n block (NC at most) and k block (balanced), its
 * NR-wide panels of kc rows, zero-padded; tb: b is n x k. */
static const char prepack_b_text[] =
    "/* The GEMM's B operand packed once (docs/native.md, \"pre-packed\n"
    " * weights\"): op(b) (k x n; b row-major, n x k when tb) into\n"
    " * (n + nr - 1) / nr * nr * k elements of dst: per n block (ncmax at\n"
    " * most, whole nr-wide panels) and k block (kcmax at most, balanced)\n"
    " * its panels of kc x nr, zero-padded, as weir_gemm_runp reads them. */\n"
    "static void weir_prepack_b_@S@(const @T@ *b, int tb, int64_t k,\n"
    "                               int64_t n, int64_t nr, int64_t kcmax,\n"
    "                               int64_t ncmax, @T@ *dst) {\n"
    "  const int64_t kblocks = (k + kcmax - 1) / kcmax;\n"
    "  const int64_t kcb = (k + kblocks - 1) / kblocks;\n"
    "  for (int64_t jc = 0; jc < n; jc += ncmax) {\n"
    "    const int64_t nc = n - jc < ncmax ? n - jc : ncmax;\n"
    "    const int64_t npan = (nc + nr - 1) / nr;\n"
    "    for (int64_t pc = 0; pc < k; pc += kcb) {\n"
    "      const int64_t kc = k - pc < kcb ? k - pc : kcb;\n"
    "      @T@ *blk = dst + jc * k + pc * npan * nr;\n"
    "      for (int64_t q = 0; q < npan; q++)\n"
    "        for (int64_t kk = 0; kk < kc; kk++)\n"
    "          for (int64_t j = 0; j < nr; j++) {\n"
    "            const int64_t col = jc + q * nr + j, row = pc + kk;\n"
    "            blk[(q * kc + kk) * nr + j] =\n"
    "                q * nr + j >= nc ? (@T@)0\n"
    "                : tb             ? b[col * k + row]\n"
    "                                 : b[row * n + col];\n"
    "          }\n"
    "    }\n"
    "  }\n"
    "}\n";

gint64 weir_kernel_gemm_prepacked_b_elements(const WeirGemmBlocking *bl,
                                             gint64 k, gint64 n) {
  return (n + bl->nr - 1) / bl->nr * bl->nr * k;
}

char *weir_kernel_gemm_prepack_b(WeirNativeEmit *e, WeirDType t,
                                 const WeirGemmBlocking *bl,
                                 const WeirContainer *b, gboolean tb, gint64 k,
                                 gint64 n) {
  if (!e->prepacked || t != WEIR_DTYPE_F32 || k <= 0 || n <= 0)
    return NULL;
  GString *helper = g_string_new(prepack_b_text);
  g_string_replace(helper, "@T@", "float", 0);
  g_string_replace(helper, "@S@", "f32", 0);
  g_autofree char *text = g_string_free(helper, FALSE);
  g_autofree char *pack = g_strdup_printf(
      "weir_prepack_b_f32((const float *)@SRC@, %d, %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %u, %u, %u, (float *)@DST@);",
      tb ? 1 : 0, k, n, bl->nr, bl->kc, bl->nc);
  g_autofree char *p =
      e->prepacked(e, b, weir_kernel_gemm_prepacked_b_elements(bl, k, n) * 4,
                   "weir_prepack_b_f32", text, pack);
  if (!p)
    return NULL;
  return g_strdup_printf("(const float *)%s", p);
}

gint64 weir_kernel_gemm_prepacked_a_elements(const WeirGemmBlocking *bl,
                                             gint64 groups, gint64 m,
                                             gint64 k) {
  return groups * ((m + bl->mr - 1) / bl->mr * bl->mr) * k;
}

gint64 weir_kernel_gemm_prepacked_at_elements(const WeirGemmBlocking *bl,
                                              gint64 groups, gint64 m,
                                              gint64 k) {
  return groups * ((m + bl->tmr - 1) / bl->tmr * bl->tmr) * k;
}

/* w packed in panels of mr rows (bl->mr or bl->tmr). */
static char *prepack_a(WeirNativeEmit *e, WeirDType t, const WeirContainer *w,
                       gint64 groups, gint64 m, gint64 k, guint mr, guint kc,
                       guint mc) {
  if (!e->prepacked || t != WEIR_DTYPE_F32 || groups <= 0 || m <= 0 || k <= 0 ||
      mr == 0)
    return NULL;
  gint64 elements = groups * ((m + mr - 1) / mr * mr) * k;
  GString *helper = g_string_new(prepack_a_text);
  g_string_replace(helper, "@T@", "float", 0);
  g_string_replace(helper, "@S@", "f32", 0);
  g_autofree char *text = g_string_free(helper, FALSE);
  g_autofree char *pack = g_strdup_printf(
      "weir_prepack_a_f32((const float *)@SRC@, %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %u, %u, %u, (float "
      "*)@DST@);",
      groups, m, k, mr, kc, mc);
  g_autofree char *p =
      e->prepacked(e, w, elements * 4, "weir_prepack_a_f32", text, pack);
  if (!p)
    return NULL;
  return g_strdup_printf("(const float *)%s", p);
}

char *weir_kernel_gemm_prepack_a(WeirNativeEmit *e, WeirDType t,
                                 const WeirGemmBlocking *bl,
                                 const WeirContainer *w, gint64 groups,
                                 gint64 m, gint64 k) {
  return prepack_a(e, t, w, groups, m, k, bl->mr, bl->kc, bl->mc);
}

char *weir_kernel_gemm_prepack_at(WeirNativeEmit *e, WeirDType t,
                                  const WeirGemmBlocking *bl,
                                  const WeirContainer *w, gint64 groups,
                                  gint64 m, gint64 k) {
  return prepack_a(e, t, w, groups, m, k, bl->tmr, bl->tkc,
                   (guint)weir_kernel_gemm_trows(bl, k));
}
