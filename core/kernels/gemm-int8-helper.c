/* gemm-int8-helper.c — Weir's int8 GEMM, the helper text itself
 * (docs/native.md, "Weir's int8 GEMM").  Not compiled into libweir: it is
 * a GResource (core/kernels/kernels.gresource.xml) that
 * core/kernels/gemm-int8.c pastes into generated units after the lines
 *   #define WEIR_QG_PATH  2   (0 portable C, 1 AVX2, 2 AVX-512 VNNI)
 *   #define WEIR_QG_MR    8   (rows of a microtile)
 *   #define WEIR_QG_NV    3   (vectors of 16 (VNNI), 8 (AVX2) int32 across)
 *   #define WEIR_QG_L2    ... (bytes of L2 per core)
 *   #define WEIR_QG_THREADS 2 (the most threads of one call)
 * so the compile-cache key covers the choice.
 *
 * C[i][j] = sum_k (A[i][k] - za[i]) (B[k][j] - zb[j]), A and B u8 or s8,
 * in int32, then either stored as int32 or requantized:
 *   y = clamp(rint(f32(acc + bias) * (s1 * s2 / sy)) + yz, lo, hi)
 * exactly as the pure expansions compute it (ir/lower/expand/quant.c).
 *
 * Every product is computed as u8 x s8: A is made unsigned (an s8 value
 * a becomes a ^ 0x80 = a + 128, its zero point + 128) and B signed (a u8
 * value b becomes b ^ 0x80 = b - 128, its zero point - 128), which leaves
 * each difference a - za and b - zb unchanged.  The zero points are then
 * taken out afterwards with the row sums of A and the column sums of B:
 *   sum (a - za)(b - zb) = sum ab - zb sum_k a - za (sum_k b - K zb)
 * (in wrapping 32-bit arithmetic: the result is exact whenever it fits in
 * int32, as the expansion's).  The sums are taken while packing.
 *
 * Paths: VNNI (vpdpbusd: four u8 x s8 products added into each int32
 * lane, no intermediate saturation), AVX2 (both operands widened to int16
 * when packed, then vpmaddwd: two int16 products added into an int32;
 * 255 * 128 * 2 fits easily, and vpmaddwd saturates only for two
 * (-32768)^2 products, which an operand in [0, 255] never gives, so there
 * is no saturation at all, unlike vpmaddubsw whose int16 sum of two
 * u8 x s8 products saturates), portable C (int32 multiply-adds, which
 * -O3 vectorizes).
 *
 * Blocking: K is not blocked (each microtile runs the whole depth, so
 * its accumulators go straight to the epilogue: no partial sums stored);
 * the B block (K x NC) takes half of L2 and each A micro-panel (MR x K)
 * stays in L1 while the B micro-panels stream past it.
 * Threads split the B panels when there are at least two per thread, else
 * the A panels; each packs what it computes with into its own buffers, no
 * barrier.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if WEIR_QG_PATH > 0
#include <immintrin.h>
#endif

#if WEIR_QG_PATH == 2
#define WEIR_QG_VL 16
#define WEIR_QG_G 4 /* k values per int32 lane */
typedef uint8_t weir_qg_ta;
typedef int8_t weir_qg_tb;
#define WEIR_QG_TGT __attribute__((target("avx512f,avx512bw,avx512vnni")))
#elif WEIR_QG_PATH == 1
#define WEIR_QG_VL 8
#define WEIR_QG_G 2
typedef int16_t weir_qg_ta;
typedef int16_t weir_qg_tb;
#define WEIR_QG_TGT __attribute__((target("avx2")))
#else
#define WEIR_QG_VL 4
#define WEIR_QG_G 4
typedef uint8_t weir_qg_ta;
typedef int8_t weir_qg_tb;
#define WEIR_QG_TGT
#endif
#define WEIR_QG_NR (WEIR_QG_NV * WEIR_QG_VL)

/* A convolution's input as B (implicit im2col): row r = (ic, i, j) of
 * c * kh * kw, column = output pixel (p, q) of the output rows; the element
 * is x[ic][p * sh + i * dh - ph][q * sw + j * dw - pw], B's zero point
 * outside the image (so the padding is zero after its subtraction).  With
 * images > 1 the columns of all images follow each other (column im *
 * plane + pixel; image im's input at x + im * x_image bytes) and C is NCHW:
 * element (i, im * plane + pixel) at c[(im * m + i) * plane + pixel], so
 * one call (one parallel region, one packing of A per block) computes the
 * whole batch; then ldc must be plane. */
typedef struct {
  const void *x; /* c planes of h x wd */
  int64_t h, wd, kh, kw, ow, sh, sw, dh, dw, ph, pw;
  int64_t images, plane, x_image; /* images 0 or 1: one image */
} weir_qgemm_patches;

typedef struct {
  int64_t m, n, k;
  const void *a; /* m x k, row stride lda */
  int64_t lda;
  int a_s8;      /* A's elements are int8_t (else uint8_t) */
  const void *b; /* k x n, row stride ldb; or pt */
  int64_t ldb;
  int b_s8;
  const weir_qgemm_patches *pt;
  /* zero points in A's and B's type: NULL none, else za_len 1 (scalar) or
   * m (per row); zb_len 1 or n (per column) */
  const void *za, *zb;
  int64_t za_len, zb_len;
  /* added to the int32 result: bias_len 1, else one per row (bias_rows)
   * or per column */
  const int32_t *bias;
  int64_t bias_len;
  int bias_rows;
  /* out 0: int32 into c; 1: uint8_t; 2: int8_t, requantized with the
   * multiplier s1[0] * s2[.] / sy[0] (s2 per row when s2_rows and s2_len
   * > 1, per column otherwise), the zero point yz (output type) and the
   * clamp [lo, hi] */
  int out;
  void *c;
  int64_t ldc;
  const float *s1, *s2, *sy;
  int64_t s2_len;
  int s2_rows;
  const void *yz;
  int32_t lo, hi;
} weir_qgemm_args;

/* ------------------------------------------------------------- packing */

/* A rows m0 .. m0 + mc into MR-high panels of kg groups of G: element
 * (r, k) of panel pi at ((pi * kg + k / G) * MR + r) * G + k % G; zero
 * beyond the matrix.  rs[r] = the row's sum (unsigned domain). */
WEIR_QG_TGT static void weir_qg_pack_a(const weir_qgemm_args *p, int64_t m0,
                                       int64_t mc, int64_t kg, weir_qg_ta *dst,
                                       int32_t *rs) {
  const int64_t mr = WEIR_QG_MR, g = WEIR_QG_G, k = p->k;
  const int64_t kfull = k / g; /* groups without padding */
  const uint8_t flip = p->a_s8 ? 0x80 : 0;
  for (int64_t pi = 0; pi * mr < mc; pi++) {
    weir_qg_ta *d = dst + pi * kg * mr * g;
    for (int64_t r = 0; r < mr; r++) {
      weir_qg_ta *dr = d + r * g;
      if (pi * mr + r >= mc) {
        for (int64_t q = 0; q < kg; q++)
          for (int64_t u = 0; u < g; u++)
            dr[q * mr * g + u] = 0;
        rs[pi * mr + r] = 0;
        continue;
      }
      const uint8_t *a = (const uint8_t *)p->a + (m0 + pi * mr + r) * p->lda;
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; kk++)
        sum += (uint8_t)(a[kk] ^ flip);
      rs[pi * mr + r] = sum;
#if WEIR_QG_G == 4
      const uint32_t f4 = flip ? 0x80808080u : 0;
      for (int64_t q = 0; q < kfull; q++) {
        uint32_t v;
        memcpy(&v, a + q * 4, 4);
        v ^= f4;
        memcpy(dr + q * mr * 4, &v, 4);
      }
#else
      for (int64_t q = 0; q < kfull; q++) {
        dr[q * mr * 2] = (weir_qg_ta)(uint8_t)(a[2 * q] ^ flip);
        dr[q * mr * 2 + 1] = (weir_qg_ta)(uint8_t)(a[2 * q + 1] ^ flip);
      }
#endif
      for (int64_t q = kfull; q < kg; q++)
        for (int64_t u = 0; u < g; u++)
          dr[q * mr * g + u] =
              q * g + u < k ? (weir_qg_ta)(uint8_t)(a[q * g + u] ^ flip) : 0;
    }
  }
}

/* Row kk of the patches of one image (its input x), columns n0 .. n0 + nc
 * of that image, into row (raw bytes, the zero point in the padding). */
WEIR_QG_TGT static void weir_qg_patch_row_1(const weir_qgemm_patches *pt,
                                            const uint8_t *x0, int64_t kk,
                                            int64_t n0, int64_t nc, uint8_t pad,
                                            uint8_t *row) {
  const int64_t ic = kk / (pt->kh * pt->kw), t = kk % (pt->kh * pt->kw);
  const int64_t ki = t / pt->kw, kj = t % pt->kw;
  const uint8_t *x = x0 + ic * pt->h * pt->wd;
  const int64_t off = kj * pt->dw - pt->pw;
  /* output columns q with 0 <= q * sw + off < wd: [qlo, qhi) */
  int64_t qlo = off >= 0 ? 0 : (-off + pt->sw - 1) / pt->sw;
  int64_t qhi = pt->wd - off > 0 ? (pt->wd - off + pt->sw - 1) / pt->sw : 0;
  qlo = qlo < pt->ow ? qlo : pt->ow;
  qhi = qhi < pt->ow ? qhi : pt->ow;
  qhi = qhi > qlo ? qhi : qlo;
  int64_t j = n0;
  const int64_t end = n0 + nc;
  while (j < end) {
    const int64_t op = j / pt->ow, q0 = j % pt->ow;
    const int64_t q1 = pt->ow < q0 + (end - j) ? pt->ow : q0 + (end - j);
    uint8_t *d = row + (j - n0) - q0;
    const int64_t ih = op * pt->sh + ki * pt->dh - pt->ph;
    if (ih < 0 || ih >= pt->h) {
      for (int64_t q = q0; q < q1; q++)
        d[q] = pad;
    } else {
      const uint8_t *src = x + ih * pt->wd + off;
      const int64_t a = qlo > q0 ? qlo : q0, b = qhi < q1 ? qhi : q1;
      for (int64_t q = q0; q < a && q < q1; q++)
        d[q] = pad;
      if (pt->sw == 1) {
        if (b > a)
          memcpy(d + a, src + a, (size_t)(b - a));
      } else {
        for (int64_t q = a; q < b; q++)
          d[q] = src[q * pt->sw];
      }
      for (int64_t q = b > q0 ? b : q0; q < q1; q++)
        d[q] = pad;
    }
    j += q1 - q0;
  }
}

/* Row kk of the patches, columns n0 .. n0 + nc (of all images), into
 * row. */
WEIR_QG_TGT static void weir_qg_patch_row(const weir_qgemm_patches *pt,
                                          int64_t kk, int64_t n0, int64_t nc,
                                          uint8_t pad, uint8_t *row) {
  if (pt->images <= 1) {
    weir_qg_patch_row_1(pt, (const uint8_t *)pt->x, kk, n0, nc, pad, row);
    return;
  }
  int64_t j = n0;
  const int64_t end = n0 + nc;
  while (j < end) {
    const int64_t im = j / pt->plane, jj = j % pt->plane;
    const int64_t len = pt->plane - jj < end - j ? pt->plane - jj : end - j;
    weir_qg_patch_row_1(pt, (const uint8_t *)pt->x + im * pt->x_image, kk, jj,
                        len, pad, row + (j - n0));
    j += len;
  }
}

/* B columns n0 .. n0 + nc into NR-wide panels: element (k, c) of panel
 * pj at ((pj * kg + k / G) * NR + c) * G + k % G; zero beyond the matrix.
 * cs[c] = the column's sum (signed domain).  rows: G * ncb bytes of room
 * for gathered rows. */
WEIR_QG_TGT static void weir_qg_pack_b(const weir_qgemm_args *p, int64_t n0,
                                       int64_t nc, int64_t kg, weir_qg_tb *dst,
                                       int32_t *cs, uint8_t *rows) {
  const int64_t nr = WEIR_QG_NR, g = WEIR_QG_G, k = p->k;
  const int64_t np = (nc + nr - 1) / nr;
  const uint8_t flip = p->b_s8 ? 0 : 0x80;
  const uint8_t zero_raw = flip; /* flips to 0 */
  const int64_t ncr = np * nr;   /* whole panels */
  for (int64_t c = 0; c < ncr; c++)
    cs[c] = 0;
  uint8_t pad = 0;
  if (p->pt && p->zb)
    pad = ((const uint8_t *)p->zb)[0];
  for (int64_t q = 0; q < kg; q++) {
    /* the G rows of group q, as raw bytes over ncr columns */
    const uint8_t *src[WEIR_QG_G];
    for (int64_t u = 0; u < g; u++) {
      const int64_t kk = q * g + u;
      uint8_t *row = rows + u * ncr;
      if (kk >= k) {
        memset(row, zero_raw, (size_t)ncr);
      } else if (p->pt) {
        weir_qg_patch_row(p->pt, kk, n0, nc, pad, row);
        memset(row + nc, zero_raw, (size_t)(ncr - nc));
      } else if (nc < ncr) {
        memcpy(row, (const uint8_t *)p->b + kk * p->ldb + n0, (size_t)nc);
        memset(row + nc, zero_raw, (size_t)(ncr - nc));
      } else {
        src[u] = (const uint8_t *)p->b + kk * p->ldb + n0;
        continue;
      }
      src[u] = row;
    }
    for (int64_t pj = 0; pj < np; pj++) {
      weir_qg_tb *d = dst + (pj * kg + q) * nr * g;
      int32_t *csp = cs + pj * nr;
      const int64_t c0 = pj * nr;
#if WEIR_QG_G == 4
      const uint8_t *r0 = src[0] + c0, *r1 = src[1] + c0, *r2 = src[2] + c0,
                    *r3 = src[3] + c0;
      uint32_t w[WEIR_QG_NR];
      for (int64_t c = 0; c < WEIR_QG_NR; c++) {
        const uint8_t b0 = r0[c] ^ flip, b1 = r1[c] ^ flip, b2 = r2[c] ^ flip,
                      b3 = r3[c] ^ flip;
        csp[c] += (int32_t)(int8_t)b0 + (int8_t)b1 + (int8_t)b2 + (int8_t)b3;
        w[c] = (uint32_t)b0 | (uint32_t)b1 << 8 | (uint32_t)b2 << 16 |
               (uint32_t)b3 << 24;
      }
      memcpy(d, w, sizeof w);
#else
      const uint8_t *r0 = src[0] + c0, *r1 = src[1] + c0;
      for (int64_t c = 0; c < WEIR_QG_NR; c++) {
        const int8_t b0 = (int8_t)(r0[c] ^ flip), b1 = (int8_t)(r1[c] ^ flip);
        csp[c] += (int32_t)b0 + b1;
        d[2 * c] = b0;
        d[2 * c + 1] = b1;
      }
#endif
    }
  }
}

/* --------------------------------------------------------- microkernel */

/* t[MR][NR] = the products of one A panel and one B panel over kg
 * groups. */
#if WEIR_QG_PATH == 2
static inline __attribute__((always_inline)) WEIR_QG_TGT void
weir_qg_kernel(const weir_qg_ta *pa, const weir_qg_tb *pb, int64_t kg,
               int32_t *t) {
  __m512i acc[WEIR_QG_MR][WEIR_QG_NV];
#pragma GCC unroll 32
  for (int r = 0; r < WEIR_QG_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_QG_NV; v++)
      acc[r][v] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kg; q++) {
    __m512i b[WEIR_QG_NV];
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_QG_NV; v++)
      b[v] = _mm512_loadu_si512((const void *)(pb + v * 64));
#pragma GCC unroll 32
    for (int r = 0; r < WEIR_QG_MR; r++) {
      int32_t a4;
      memcpy(&a4, pa + r * 4, 4);
      const __m512i a = _mm512_set1_epi32(a4);
#pragma GCC unroll 8
      for (int v = 0; v < WEIR_QG_NV; v++)
        acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], a, b[v]);
    }
    pa += WEIR_QG_MR * 4;
    pb += WEIR_QG_NR * 4;
  }
#pragma GCC unroll 32
  for (int r = 0; r < WEIR_QG_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_QG_NV; v++)
      _mm512_storeu_si512((void *)(t + r * WEIR_QG_NR + v * 16), acc[r][v]);
}
#elif WEIR_QG_PATH == 1
static inline __attribute__((always_inline)) WEIR_QG_TGT void
weir_qg_kernel(const weir_qg_ta *pa, const weir_qg_tb *pb, int64_t kg,
               int32_t *t) {
  __m256i acc[WEIR_QG_MR][WEIR_QG_NV];
#pragma GCC unroll 32
  for (int r = 0; r < WEIR_QG_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_QG_NV; v++)
      acc[r][v] = _mm256_setzero_si256();
  for (int64_t q = 0; q < kg; q++) {
    __m256i b[WEIR_QG_NV];
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_QG_NV; v++)
      b[v] = _mm256_loadu_si256((const __m256i *)(pb + v * 16));
#pragma GCC unroll 32
    for (int r = 0; r < WEIR_QG_MR; r++) {
      int32_t a2;
      memcpy(&a2, pa + r * 2, 4);
      const __m256i a = _mm256_set1_epi32(a2);
#pragma GCC unroll 8
      for (int v = 0; v < WEIR_QG_NV; v++)
        acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(a, b[v]));
    }
    pa += WEIR_QG_MR * 2;
    pb += WEIR_QG_NR * 2;
  }
#pragma GCC unroll 32
  for (int r = 0; r < WEIR_QG_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_QG_NV; v++)
      _mm256_storeu_si256((__m256i *)(t + r * WEIR_QG_NR + v * 8), acc[r][v]);
}
#else
static inline void weir_qg_kernel(const weir_qg_ta *pa, const weir_qg_tb *pb,
                                  int64_t kg, int32_t *t) {
  int32_t acc[WEIR_QG_MR][WEIR_QG_NR];
  memset(acc, 0, sizeof acc);
  for (int64_t q = 0; q < kg; q++) {
    for (int r = 0; r < WEIR_QG_MR; r++)
      for (int c = 0; c < WEIR_QG_NR; c++) {
        int32_t s = 0;
        for (int u = 0; u < WEIR_QG_G; u++)
          s += (int32_t)pa[r * WEIR_QG_G + u] * (int32_t)pb[c * WEIR_QG_G + u];
        acc[r][c] += s;
      }
    pa += WEIR_QG_MR * WEIR_QG_G;
    pb += WEIR_QG_NR * WEIR_QG_G;
  }
  memcpy(t, acc, sizeof acc);
}
#endif

/* ------------------------------------------------------------ epilogue */

/* Per-call tables (in the work space): the zero points in the packed
 * domain per row and per column, the multipliers. */
typedef struct {
  int32_t *za, *zb; /* m, n */
  float *mult;      /* per row (m) or per column (n), or 1 */
  int mult_rows, mult_vec;
} weir_qg_tables;

/* What the store of one NC block needs per column (in the thread's
 * buffer): B's zero point, its column sum less K times the zero point,
 * the bias and the multiplier (when they go by column). */
typedef struct {
  int32_t *zb, *cs2, *bias;
  float *mult;
} weir_qg_cols;

WEIR_QG_TGT static void weir_qg_prepare_cols(const weir_qgemm_args *p,
                                             const weir_qg_tables *tb,
                                             const int32_t *cs, int64_t n0,
                                             int64_t nc, weir_qg_cols *cl) {
  const uint32_t k = (uint32_t)p->k;
  const int bvec = p->bias && p->bias_len > 1 && !p->bias_rows;
  const int32_t b0 = p->bias && !bvec && !p->bias_rows ? p->bias[0] : 0;
  for (int64_t c = 0; c < nc; c++) {
    const int32_t z = tb->zb[n0 + c];
    cl->zb[c] = z;
    cl->cs2[c] = (int32_t)((uint32_t)cs[c] - k * (uint32_t)z);
    cl->bias[c] = bvec ? p->bias[n0 + c] : b0;
    cl->mult[c] = tb->mult_rows ? 0.0f : tb->mult[tb->mult_vec ? n0 + c : 0];
  }
}

/* One row of a tile: v = t - zb rs - za cs2 + bias, then stored as int32 or
 * requantized with the multiplier m (per row) or mcol (per column). */
static inline __attribute__((always_inline)) WEIR_QG_TGT void
weir_qg_store_row(const weir_qgemm_args *p, const int32_t *tr,
                  const weir_qg_cols *cl, int64_t jc, int64_t nr, uint32_t zai,
                  uint32_t rsi, uint32_t brow, int rowm, float m, float yz,
                  float lo, float hi, void *dst) {
  const int32_t *zb = cl->zb + jc, *cs2 = cl->cs2 + jc, *bc = cl->bias + jc;
  const float *mc = cl->mult + jc;
  if (p->out == 0) {
    int32_t *c = (int32_t *)dst;
    for (int64_t j = 0; j < nr; j++)
      c[j] = (int32_t)((uint32_t)tr[j] - (uint32_t)zb[j] * rsi -
                       zai * (uint32_t)cs2[j] + (uint32_t)bc[j] + brow);
    return;
  }
  float f[WEIR_QG_NR];
  for (int64_t j = 0; j < nr; j++) {
    const int32_t v =
        (int32_t)((uint32_t)tr[j] - (uint32_t)zb[j] * rsi -
                  zai * (uint32_t)cs2[j] + (uint32_t)bc[j] + brow);
    float x = __builtin_rintf((float)v * (rowm ? m : mc[j])) + yz;
    f[j] = x < lo ? lo : x > hi ? hi : x;
  }
  if (p->out == 1) {
    uint8_t *c = (uint8_t *)dst;
    for (int64_t j = 0; j < nr; j++)
      c[j] = (uint8_t)(int32_t)f[j];
  } else {
    int8_t *c = (int8_t *)dst;
    for (int64_t j = 0; j < nr; j++)
      c[j] = (int8_t)(int32_t)f[j];
  }
}

/* The tile t (mr x nr valid of MR x NR) of rows i0.., columns j0.. (jc
 * within the block of cl) into C; rs the rows' sums of A. */
WEIR_QG_TGT static void
weir_qg_store(const weir_qgemm_args *p, const weir_qg_tables *tb,
              const weir_qg_cols *cl, const int32_t *t, int64_t i0, int64_t j0,
              int64_t jc, int64_t mr, int64_t nr, const int32_t *rs) {
  const int64_t es = p->out == 0 ? 4 : 1;
  const float yz = p->yz ? (p->out == 1 ? (float)((const uint8_t *)p->yz)[0]
                                        : (float)((const int8_t *)p->yz)[0])
                         : 0.0f;
  const float lo = (float)p->lo, hi = (float)p->hi;
  const int bvec = p->bias && p->bias_len > 1;
  for (int64_t r = 0; r < mr; r++) {
    const int64_t i = i0 + r;
    const uint32_t brow =
        p->bias && p->bias_rows ? (uint32_t)p->bias[bvec ? i : 0] : 0;
    const float m = tb->mult_rows ? tb->mult[tb->mult_vec ? i : 0] : 0.0f;
    /* the columns of one image at a time (a batched convolution's C is
     * NCHW) */
    for (int64_t s0 = 0; s0 < nr;) {
      int64_t len = nr - s0, off = i * p->ldc + j0 + s0;
      if (p->pt && p->pt->images > 1) {
        const int64_t j = j0 + s0, im = j / p->pt->plane, jj = j % p->pt->plane;
        len = p->pt->plane - jj < len ? p->pt->plane - jj : len;
        off = (im * p->m + i) * p->pt->plane + jj;
      }
      void *dst = (uint8_t *)p->c + off * es;
      if (tb->mult_rows)
        weir_qg_store_row(p, t + r * WEIR_QG_NR + s0, cl, jc + s0, len,
                          (uint32_t)tb->za[i], (uint32_t)rs[r], brow, 1, m, yz,
                          lo, hi, dst);
      else
        weir_qg_store_row(p, t + r * WEIR_QG_NR + s0, cl, jc + s0, len,
                          (uint32_t)tb->za[i], (uint32_t)rs[r], brow, 0, m, yz,
                          lo, hi, dst);
      s0 += len;
    }
  }
}

/* -------------------------------------------------------------- driver */

static inline int64_t weir_qg_round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

/* The blocks for depth k: the B block (k x nc) and the A block (mc x k)
 * half of L2 each, whole microtiles, at most 4096 each. */
static void weir_qg_blocks(int64_t k, int64_t *mc, int64_t *nc) {
  const int64_t kb =
      weir_qg_round_up(k > 0 ? k : 1, WEIR_QG_G) * (int64_t)sizeof(weir_qg_ta);
  int64_t n = WEIR_QG_L2 / 2 / kb / WEIR_QG_NR * WEIR_QG_NR;
  int64_t m = WEIR_QG_L2 / 2 / kb / WEIR_QG_MR * WEIR_QG_MR;
  *nc = n < WEIR_QG_NR ? WEIR_QG_NR
        : n > 4096     ? 4096 / WEIR_QG_NR * WEIR_QG_NR
                       : n;
  *mc = m < WEIR_QG_MR ? WEIR_QG_MR
        : m > 4096     ? 4096 / WEIR_QG_MR * WEIR_QG_MR
                       : m;
}

/* Bytes of one thread's buffers for depth k: the packed B and A blocks,
 * the gathered rows of B, the columns' sums and tables, the rows' sums. */
static int64_t weir_qg_thread_bytes(int64_t k) {
  int64_t mc, nc;
  weir_qg_blocks(k, &mc, &nc);
  const int64_t kg = weir_qg_round_up(k > 0 ? k : 1, WEIR_QG_G) / WEIR_QG_G;
  const int64_t g = WEIR_QG_G * (int64_t)sizeof(weir_qg_ta);
  return weir_qg_round_up(kg * g * nc, 64) + weir_qg_round_up(kg * g * mc, 64) +
         weir_qg_round_up(WEIR_QG_G * nc, 64) +
         weir_qg_round_up(4 * 5 * nc, 64) + weir_qg_round_up(4 * mc, 64);
}

/* Work space of a call (what weir_kernel_qgemm_work_bytes bounds). */
static int64_t weir_qgemm_work_size(int64_t m, int64_t n, int64_t k) {
  return WEIR_QG_THREADS * weir_qg_thread_bytes(k) +
         weir_qg_round_up(4 * (m + n), 64) +
         weir_qg_round_up(4 * (m > n ? m : n), 64) + 64;
}

/* One thread's rectangle [m0, m1) x [n0, n1). */
WEIR_QG_TGT static void weir_qg_run_part(const weir_qgemm_args *p,
                                         const weir_qg_tables *tb, uint8_t *buf,
                                         int64_t m0, int64_t m1, int64_t n0,
                                         int64_t n1) {
  int64_t mcb, ncb;
  weir_qg_blocks(p->k, &mcb, &ncb);
  const int64_t kg =
      weir_qg_round_up(p->k > 0 ? p->k : 1, WEIR_QG_G) / WEIR_QG_G;
  const int64_t g = WEIR_QG_G * (int64_t)sizeof(weir_qg_ta);
  uint8_t *at = buf;
  weir_qg_tb *pb = (weir_qg_tb *)at;
  at += weir_qg_round_up(kg * g * ncb, 64);
  weir_qg_ta *pa = (weir_qg_ta *)at;
  at += weir_qg_round_up(kg * g * mcb, 64);
  uint8_t *rows = at;
  at += weir_qg_round_up(WEIR_QG_G * ncb, 64);
  int32_t *cs = (int32_t *)at;
  weir_qg_cols cl = {cs + ncb, cs + 2 * ncb, cs + 3 * ncb,
                     (float *)(cs + 4 * ncb)};
  at += weir_qg_round_up(4 * 5 * ncb, 64);
  int32_t *rs = (int32_t *)at;
  int32_t t[WEIR_QG_MR * WEIR_QG_NR] __attribute__((aligned(64)));
  for (int64_t nb = n0; nb < n1; nb += ncb) {
    const int64_t nc = n1 - nb < ncb ? n1 - nb : ncb;
    weir_qg_pack_b(p, nb, nc, kg, pb, cs, rows);
    weir_qg_prepare_cols(p, tb, cs, nb, nc, &cl);
    for (int64_t mb = m0; mb < m1; mb += mcb) {
      const int64_t mc = m1 - mb < mcb ? m1 - mb : mcb;
      weir_qg_pack_a(p, mb, mc, kg, pa, rs);
      /* an A micro-panel (MR x K) stays in L1 while the B micro-panels
       * stream from L2 */
      for (int64_t ir = 0; ir < mc; ir += WEIR_QG_MR)
        for (int64_t jr = 0; jr < nc; jr += WEIR_QG_NR) {
          weir_qg_kernel(pa + ir * kg * WEIR_QG_G, pb + jr * kg * WEIR_QG_G, kg,
                         t);
          weir_qg_store(p, tb, &cl, t, mb + ir, nb + jr, jr,
                        mc - ir < WEIR_QG_MR ? mc - ir : WEIR_QG_MR,
                        nc - jr < WEIR_QG_NR ? nc - jr : WEIR_QG_NR, rs + ir);
        }
    }
  }
}

static inline int32_t weir_qg_zp(const void *z, int s8, int64_t i) {
  if (!z)
    return 0;
  return s8 ? (int32_t)((const int8_t *)z)[i]
            : (int32_t)((const uint8_t *)z)[i];
}

/* Runs the product (docs above); work: weir_qgemm_work_size bytes, 64-byte
 * aligned, or NULL to allocate (then non-zero when that fails). */
static int weir_qgemm(const weir_qgemm_args *p, void *work) {
  if (p->m <= 0 || p->n <= 0)
    return 0;
  void *own = NULL;
  if (!work) {
    own = aligned_alloc(64, (size_t)weir_qg_round_up(
                                weir_qgemm_work_size(p->m, p->n, p->k), 64));
    if (!own)
      return 1;
    work = own;
  }
  uint8_t *w = (uint8_t *)work;
  weir_qg_tables tb;
  tb.za = (int32_t *)w;
  tb.zb = tb.za + p->m;
  tb.mult = (float *)(w + weir_qg_round_up(4 * (p->m + p->n), 64));
  uint8_t *bufs = (uint8_t *)tb.mult +
                  weir_qg_round_up(4 * (p->m > p->n ? p->m : p->n), 64) + 64;
  bufs = (uint8_t *)(((uintptr_t)bufs + 63) & ~(uintptr_t)63);
  /* zero points in the packed domain: A unsigned, B signed */
  for (int64_t i = 0; i < p->m; i++)
    tb.za[i] =
        weir_qg_zp(p->za, p->a_s8, p->za_len > 1 ? i : 0) + (p->a_s8 ? 128 : 0);
  for (int64_t j = 0; j < p->n; j++)
    tb.zb[j] =
        weir_qg_zp(p->zb, p->b_s8, p->zb_len > 1 ? j : 0) - (p->b_s8 ? 0 : 128);
  tb.mult_rows = p->s2_rows;
  tb.mult_vec = p->s2_len > 1;
  if (p->out) {
    const int64_t len = p->s2_len > 1 ? p->s2_len : 1;
    for (int64_t i = 0; i < len; i++)
      tb.mult[i] = p->s1[0] * p->s2[i] / p->sy[0];
  }
  const int64_t pn = (p->n + WEIR_QG_NR - 1) / WEIR_QG_NR;
  const int64_t pm = (p->m + WEIR_QG_MR - 1) / WEIR_QG_MR;
  int nt = 1;
#ifdef _OPENMP
  if (!omp_in_parallel() && p->m * p->n * p->k > 65536) {
    nt = omp_get_max_threads();
    if (nt > WEIR_QG_THREADS)
      nt = WEIR_QG_THREADS;
  }
#endif
  if (nt < 1)
    nt = 1;
  const int by_cols = pn >= 2 * nt || pm < nt;
  const int64_t tb_bytes = weir_qg_thread_bytes(p->k);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
    int id = 0, cnt = 1;
#ifdef _OPENMP
    id = omp_get_thread_num();
    cnt = omp_get_num_threads();
#endif
    uint8_t *buf = bufs + id * tb_bytes;
    const int64_t units = by_cols ? pn : pm;
    const int64_t u0 = units * id / cnt, u1 = units * (id + 1) / cnt;
    if (u1 > u0) {
      if (by_cols) {
        const int64_t j1 = u1 * WEIR_QG_NR < p->n ? u1 * WEIR_QG_NR : p->n;
        weir_qg_run_part(p, &tb, buf, 0, p->m, u0 * WEIR_QG_NR, j1);
      } else {
        const int64_t i1 = u1 * WEIR_QG_MR < p->m ? u1 * WEIR_QG_MR : p->m;
        weir_qg_run_part(p, &tb, buf, u0 * WEIR_QG_MR, i1, 0, p->n);
      }
    }
  }
  free(own);
  return 0;
}
