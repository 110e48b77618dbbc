/* gemm-bf16-helper.c — Weir's bf16 GEMM, the helper text itself
 * (docs/native.md, "Weir's bf16 GEMM").  Not compiled into libweir: it is
 * a GResource (core/kernels/kernels.gresource.xml) that
 * core/kernels/gemm-bf16.c pastes into generated units after the lines
 *   #define WEIR_BG_PATH  1   (0 portable C, 1 AVX-512 BF16)
 *   #define WEIR_BG_MR    8   (rows of a microtile)
 *   #define WEIR_BG_NV    2   (vectors of 16 f32 across it)
 *   #define WEIR_BG_L2    ... (bytes of L2 per core)
 *   #define WEIR_BG_THREADS 2 (the most threads of one call)
 * so the compile-cache key covers the choice.
 *
 * C[i][j] = alpha sum_k A[i][k] B[k][j] + beta D[i][j], A and B bf16 (bit
 * patterns in uint16_t), each product exact in f32 (8-bit significands),
 * the sum accumulated in f32; D (optional, f32 or bf16, broadcast through
 * zero strides) is a Gemm's C or a convolution's bias; C is stored as f32
 * or rounded to bf16 (nearest, ties to even, NaN kept quiet).
 *
 * Paths: AVX-512 BF16 (vdpbf16ps: each f32 lane adds the products of a
 * pair of bf16 values, k and k + 1, so both operands are packed in pairs:
 * A as MR-high panels of 32-bit pairs, broadcast one row at a time; B as
 * NR-wide panels of pairs), chosen at code-generation time from the
 * hardware profile and checked again at run time (__builtin_cpu_supports:
 * a unit built for this machine and run on another falls back); portable
 * C on the same packed layout, which GCC vectorizes.  The instruction
 * treats subnormal inputs and results as zero (DAZ/FTZ); the portable
 * path does not.
 *
 * Blocking: K is not blocked (each microtile runs the whole depth, its
 * accumulators go straight to the store); the B block (K x NC) takes half
 * of L2 and each A micro-panel (MR x K) stays in L1 while the B
 * micro-panels stream past it.  Threads split the B panels when there are
 * at least two per thread, else the A panels; each packs what it computes
 * with into its own buffers, no barrier.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if WEIR_BG_PATH == 1
#include <immintrin.h>
#define WEIR_BG_TGT __attribute__((target("avx512f,avx512bf16")))
#else
#define WEIR_BG_TGT
#endif
#define WEIR_BG_NR (WEIR_BG_NV * 16)

/* A convolution's input as B (implicit im2col): row r = (ic, i, j) of
 * c * kh * kw, column = output pixel (p, q); the element is
 * x[ic][p * sh + i * dh - ph][q * sw + j * dw - pw], zero outside. */
typedef struct {
  const uint16_t *x; /* c planes of h x wd */
  int64_t h, wd, kh, kw, ow, sh, sw, dh, dw, ph, pw;
} weir_bgemm_patches;

typedef struct {
  int64_t m, n, k;
  /* A (i, kk) at a[i * a_rs + kk * a_cs]; B (kk, j) at b[kk * b_rs + j *
   * b_cs], or the patches pt */
  const uint16_t *a;
  int64_t a_rs, a_cs;
  const uint16_t *b;
  int64_t b_rs, b_cs;
  const weir_bgemm_patches *pt;
  float alpha, beta;
  /* D (i, j) at d[i * d_rs + j * d_cs] (NULL: none); d_bf16: bf16, else
   * f32 */
  const void *d;
  int d_bf16;
  int64_t d_rs, d_cs;
  /* C: m x n, row stride ldc; c_bf16: bf16, else f32 */
  void *c;
  int c_bf16;
  int64_t ldc;
} weir_bgemm_args;

static inline float weir_bg_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t weir_bg_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40); /* NaN: quiet, sign kept */
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* ------------------------------------------------------------- packing */

/* A rows i0 .. i0 + mr (mr <= MR) into one panel of kq pairs: pair q of
 * row r at dst[q * MR + r] (element 2q in the low half); zero beyond. */
static void weir_bg_pack_a(const weir_bgemm_args *p, int64_t i0, int64_t mr,
                           int64_t kq, uint32_t *dst) {
  const int64_t k = p->k;
  for (int64_t r = 0; r < WEIR_BG_MR; r++) {
    if (r >= mr) {
      for (int64_t q = 0; q < kq; q++)
        dst[q * WEIR_BG_MR + r] = 0;
      continue;
    }
    const uint16_t *a = p->a + (i0 + r) * p->a_rs;
    const int64_t cs = p->a_cs;
    for (int64_t q = 0; q < kq; q++) {
      const uint32_t lo = a[2 * q * cs];
      const uint32_t hi = 2 * q + 1 < k ? a[(2 * q + 1) * cs] : 0;
      dst[q * WEIR_BG_MR + r] = lo | hi << 16;
    }
  }
}

/* Element (kk, j0 + t) of the patches for t < cnt into row[t]; ih0[t],
 * iw0[t] are the top-left input coordinates of column j0 + t. */
static void weir_bg_patch_row(const weir_bgemm_patches *pt, int64_t kk,
                              const int64_t *ih0, const int64_t *iw0,
                              int64_t cnt, uint16_t *row) {
  const int64_t ic = kk / (pt->kh * pt->kw), t = kk % (pt->kh * pt->kw);
  const int64_t di = (t / pt->kw) * pt->dh, dj = (t % pt->kw) * pt->dw;
  const uint16_t *x = pt->x + ic * pt->h * pt->wd;
  for (int64_t c = 0; c < cnt; c++) {
    const int64_t ih = ih0[c] + di, iw = iw0[c] + dj;
    row[c] = ih >= 0 && ih < pt->h && iw >= 0 && iw < pt->wd
                 ? x[ih * pt->wd + iw]
                 : 0;
  }
}

/* B columns j0 .. j0 + nc into NR-wide panels of kq pairs: pair q of
 * column c of panel pj at dst[(pj * kq + q) * NR + c]; zero beyond. */
static void weir_bg_pack_b(const weir_bgemm_args *p, int64_t j0, int64_t nc,
                           int64_t kq, uint32_t *dst) {
  const int64_t k = p->k;
  for (int64_t pj = 0; pj * WEIR_BG_NR < nc; pj++) {
    uint32_t *d = dst + pj * kq * WEIR_BG_NR;
    const int64_t c0 = j0 + pj * WEIR_BG_NR;
    const int64_t cnt =
        nc - pj * WEIR_BG_NR < WEIR_BG_NR ? nc - pj * WEIR_BG_NR : WEIR_BG_NR;
    if (p->pt) {
      const weir_bgemm_patches *pt = p->pt;
      int64_t ih0[WEIR_BG_NR], iw0[WEIR_BG_NR];
      uint16_t r0[WEIR_BG_NR], r1[WEIR_BG_NR];
      for (int64_t c = 0; c < cnt; c++) {
        ih0[c] = (c0 + c) / pt->ow * pt->sh - pt->ph;
        iw0[c] = (c0 + c) % pt->ow * pt->sw - pt->pw;
      }
      for (int64_t q = 0; q < kq; q++) {
        weir_bg_patch_row(pt, 2 * q, ih0, iw0, cnt, r0);
        if (2 * q + 1 < k)
          weir_bg_patch_row(pt, 2 * q + 1, ih0, iw0, cnt, r1);
        else
          memset(r1, 0, sizeof r1);
        uint32_t *dq = d + q * WEIR_BG_NR;
        for (int64_t c = 0; c < cnt; c++)
          dq[c] = (uint32_t)r0[c] | (uint32_t)r1[c] << 16;
        for (int64_t c = cnt; c < WEIR_BG_NR; c++)
          dq[c] = 0;
      }
      continue;
    }
    for (int64_t q = 0; q < kq; q++) {
      const uint16_t *b0 = p->b + 2 * q * p->b_rs + c0 * p->b_cs;
      const uint16_t *b1 = b0 + p->b_rs;
      const int odd = 2 * q + 1 >= k;
      uint32_t *dq = d + q * WEIR_BG_NR;
      for (int64_t c = 0; c < cnt; c++)
        dq[c] = (uint32_t)b0[c * p->b_cs] |
                (odd ? 0u : (uint32_t)b1[c * p->b_cs] << 16);
      for (int64_t c = cnt; c < WEIR_BG_NR; c++)
        dq[c] = 0;
    }
  }
}

/* --------------------------------------------------------- microkernel */

/* t (MR x NR f32) = A panel x B panel over kq pairs. */
#if WEIR_BG_PATH == 1
WEIR_BG_TGT static void weir_bg_kernel_avx512(const uint32_t *pa,
                                              const uint32_t *pb, int64_t kq,
                                              float *t) {
  /* fully unrolled (also at -O2), so the accumulators stay in registers */
  __m512 acc[WEIR_BG_MR][WEIR_BG_NV];
#pragma GCC unroll 32
  for (int r = 0; r < WEIR_BG_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_BG_NV; v++)
      acc[r][v] = _mm512_setzero_ps();
  for (int64_t q = 0; q < kq; q++) {
    __m512bh b[WEIR_BG_NV];
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_BG_NV; v++)
      b[v] = (__m512bh)_mm512_loadu_si512(
          (const void *)(pb + q * WEIR_BG_NR + v * 16));
#pragma GCC unroll 32
    for (int r = 0; r < WEIR_BG_MR; r++) {
      const __m512bh a =
          (__m512bh)_mm512_set1_epi32((int)pa[q * WEIR_BG_MR + r]);
#pragma GCC unroll 8
      for (int v = 0; v < WEIR_BG_NV; v++)
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < WEIR_BG_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < WEIR_BG_NV; v++)
      _mm512_storeu_ps(t + r * WEIR_BG_NR + v * 16, acc[r][v]);
}
#endif

static void weir_bg_kernel_c(const uint32_t *pa, const uint32_t *pb, int64_t kq,
                             float *t) {
  float acc[WEIR_BG_MR][WEIR_BG_NR];
  memset(acc, 0, sizeof acc);
  for (int64_t q = 0; q < kq; q++) {
    const uint32_t *bq = pb + q * WEIR_BG_NR;
    float b0[WEIR_BG_NR], b1[WEIR_BG_NR];
    for (int c = 0; c < WEIR_BG_NR; c++) {
      b0[c] = weir_bg_f32((uint16_t)bq[c]);
      b1[c] = weir_bg_f32((uint16_t)(bq[c] >> 16));
    }
    for (int r = 0; r < WEIR_BG_MR; r++) {
      const uint32_t ap = pa[q * WEIR_BG_MR + r];
      const float a0 = weir_bg_f32((uint16_t)ap);
      const float a1 = weir_bg_f32((uint16_t)(ap >> 16));
      for (int c = 0; c < WEIR_BG_NR; c++)
        acc[r][c] = (acc[r][c] + a0 * b0[c]) + a1 * b1[c];
    }
  }
  memcpy(t, acc, sizeof acc);
}

/* The tile t (mr x nr valid) of rows i0.., columns j0.. into C. */
static void weir_bg_store(const weir_bgemm_args *p, const float *t, int64_t i0,
                          int64_t j0, int64_t mr, int64_t nr) {
  for (int64_t r = 0; r < mr; r++) {
    const int64_t i = i0 + r;
    const float *tr = t + r * WEIR_BG_NR;
    float v[WEIR_BG_NR];
    for (int64_t c = 0; c < nr; c++)
      v[c] = p->alpha * tr[c];
    if (p->d) {
      for (int64_t c = 0; c < nr; c++) {
        const int64_t off = i * p->d_rs + (j0 + c) * p->d_cs;
        const float dv = p->d_bf16 ? weir_bg_f32(((const uint16_t *)p->d)[off])
                                   : ((const float *)p->d)[off];
        v[c] += p->beta * dv;
      }
    }
    if (p->c_bf16) {
      uint16_t *c = (uint16_t *)p->c + i * p->ldc + j0;
      for (int64_t cc = 0; cc < nr; cc++)
        c[cc] = weir_bg_bits(v[cc]);
    } else {
      memcpy((float *)p->c + i * p->ldc + j0, v, (size_t)nr * sizeof(float));
    }
  }
}

/* -------------------------------------------------------------- driver */

static inline int64_t weir_bg_round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

/* Columns of the B block for kq pairs: half of L2, whole panels, at most
 * 4096. */
static int64_t weir_bg_block_cols(int64_t kq) {
  int64_t n = WEIR_BG_L2 / 2 / (kq * 4) / WEIR_BG_NR * WEIR_BG_NR;
  return n < WEIR_BG_NR ? WEIR_BG_NR
         : n > 4096     ? 4096 / WEIR_BG_NR * WEIR_BG_NR
                        : n;
}

/* Bytes of one thread's buffers for depth k: the B block and one A
 * panel. */
static int64_t weir_bg_thread_bytes(int64_t k) {
  const int64_t kq = k > 0 ? (k + 1) / 2 : 1;
  return weir_bg_round_up(kq * 4 * weir_bg_block_cols(kq), 64) +
         weir_bg_round_up(kq * 4 * WEIR_BG_MR, 64);
}

/* Work space of a call (what weir_kernel_bgemm_work_bytes bounds). */
static int64_t weir_bgemm_work_size(int64_t k) {
  return WEIR_BG_THREADS * weir_bg_thread_bytes(k) + 64;
}

/* One thread's rectangle [m0, m1) x [n0, n1). */
static void weir_bg_run_part(const weir_bgemm_args *p, int simd, uint8_t *buf,
                             int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const int64_t kq = p->k > 0 ? (p->k + 1) / 2 : 1;
  const int64_t ncb = weir_bg_block_cols(kq);
  uint32_t *pb = (uint32_t *)buf;
  uint32_t *pa =
      (uint32_t *)(buf + weir_bg_round_up(kq * 4 * weir_bg_block_cols(kq), 64));
  float t[WEIR_BG_MR * WEIR_BG_NR] __attribute__((aligned(64)));
  (void)simd;
  if (p->k <= 0) { /* an empty sum: C = beta D */
    memset(t, 0, sizeof t);
    for (int64_t i = m0; i < m1; i += WEIR_BG_MR)
      for (int64_t j = n0; j < n1; j += WEIR_BG_NR)
        weir_bg_store(p, t, i, j, m1 - i < WEIR_BG_MR ? m1 - i : WEIR_BG_MR,
                      n1 - j < WEIR_BG_NR ? n1 - j : WEIR_BG_NR);
    return;
  }
  for (int64_t nb = n0; nb < n1; nb += ncb) {
    const int64_t nc = n1 - nb < ncb ? n1 - nb : ncb;
    weir_bg_pack_b(p, nb, nc, kq, pb);
    for (int64_t ir = m0; ir < m1; ir += WEIR_BG_MR) {
      const int64_t mr = m1 - ir < WEIR_BG_MR ? m1 - ir : WEIR_BG_MR;
      weir_bg_pack_a(p, ir, mr, kq, pa);
      for (int64_t jr = 0; jr < nc; jr += WEIR_BG_NR) {
#if WEIR_BG_PATH == 1
        if (simd)
          weir_bg_kernel_avx512(pa, pb + jr * kq, kq, t);
        else
#endif
          weir_bg_kernel_c(pa, pb + jr * kq, kq, t);
        weir_bg_store(p, t, ir, nb + jr, mr,
                      nc - jr < WEIR_BG_NR ? nc - jr : WEIR_BG_NR);
      }
    }
  }
}

/* Runs the product (docs above); work: weir_bgemm_work_size bytes, 64-byte
 * aligned, or NULL to allocate (then non-zero when that fails). */
static int weir_bgemm(const weir_bgemm_args *p, void *work) {
  if (p->m <= 0 || p->n <= 0)
    return 0;
  void *own = NULL;
  if (!work) {
    own = aligned_alloc(
        64, (size_t)weir_bg_round_up(weir_bgemm_work_size(p->k), 64));
    if (!own)
      return 1;
    work = own;
  }
  int simd = 0;
#if WEIR_BG_PATH == 1
  static int have = -1;
  if (have < 0) {
    __builtin_cpu_init();
    have = __builtin_cpu_supports("avx512bf16") ? 1 : 0;
  }
  simd = have;
#endif
  const int64_t pn = (p->n + WEIR_BG_NR - 1) / WEIR_BG_NR;
  const int64_t pm = (p->m + WEIR_BG_MR - 1) / WEIR_BG_MR;
  int nt = 1;
#ifdef _OPENMP
  if (!omp_in_parallel() && p->m * p->n * p->k > 65536) {
    nt = omp_get_max_threads();
    if (nt > WEIR_BG_THREADS)
      nt = WEIR_BG_THREADS;
  }
#endif
  if (nt < 1)
    nt = 1;
  const int by_cols = pn >= 2 * nt || pm < nt;
  const int64_t tb_bytes = weir_bg_thread_bytes(p->k);
  uint8_t *bufs = (uint8_t *)work;
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
        const int64_t j1 = u1 * WEIR_BG_NR < p->n ? u1 * WEIR_BG_NR : p->n;
        weir_bg_run_part(p, simd, buf, 0, p->m, u0 * WEIR_BG_NR, j1);
      } else {
        const int64_t i1 = u1 * WEIR_BG_MR < p->m ? u1 * WEIR_BG_MR : p->m;
        weir_bg_run_part(p, simd, buf, u0 * WEIR_BG_MR, i1, 0, p->n);
      }
    }
  }
  free(own);
  return 0;
}
