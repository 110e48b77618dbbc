/* winograd-helper.c — Weir's Winograd convolution F(4x4, 3x3), pasted
 * into generated units by core/kernels/winograd.c (docs/native.md,
 * "Weir's Winograd convolution").  Not compiled on its own: @S@ is the
 * suffix of the GEMM it calls (weir_gemm_runp_<id>, defined earlier in
 * the unit), and the height of that GEMM's panels of A (MR), the width of
 * its B panels (NR) and its depth block (KC) in place of their
 * placeholders, replaced before pasting.  Not
 * clang-formatted: the placeholders are not C tokens.
 *
 * y = act(conv3x3(x, w) + b + r), f32, NCHW, stride 1, dilation 1, group 1,
 * padding ph (top), pw (left): the output is cut into 4x4 tiles, each
 * read from a 6x6 patch d of x (zeros outside the image);
 *   V = B^T d B (per channel),  M_xi = sum_c U_xi[m][c] V_xi[c]  (xi: one
 *   of the 36 elements of a 6x6 tile: 36 GEMMs),  Y = A^T M A,
 * U = G g G^T the transformed 3x3 filters (36 matrices of m x c).  The
 * interpolation points are 0, 1, -1, 1/2, -2 and infinity: in f32 their
 * outputs are off by about half as much as with 0, 1, -1, 2, -2
 * (docs/native.md, "accuracy").
 *
 * The tiles (of all images, in order) are done in blocks of at most tbmax:
 * the input transform writes V (per xi a c x tiles matrix) already packed
 * as the GEMM's B, the 36 GEMMs read U packed once (upk,
 * weir_wino_prepack_@S@ at load, in panels of MR rows; or U packed by the
 * GEMM from the scratch when upk is NULL) and write M, the
 * output transform adds the bias and residual,
 * applies the activation and stores y once.  With at least four blocks'
 * worth of NR panels of tiles per thread, each thread does its own run of
 * panels, block by block, all three steps on its own V and M with no
 * barrier; with fewer, but at least two vectors of tiles (WEIR_WINO_L)
 * per thread (a batch-1 56x56 map), each thread does the same on its own
 * share of the tiles, cut on multiples of WEIR_WINO_L tiles rather than on
 * panels (s18); with fewer still
 * (batch-1 28x28 and 14x14 maps), all threads do one block at a
 * time (input transform split by channel, GEMMs by xi, output transform by
 * output channel, a barrier between).  Everything lives in ws: the GEMM's
 * work slot of each thread, V and M of each thread and (uroom) U; a call
 * with upk NULL and no room for U allocates it (returns 1 when it
 * cannot). */

/* clang-format off */
#ifndef WEIR_WINO_PREPACK_@S@
#define WEIR_WINO_PREPACK_@S@
/* lanes of the transforms: tiles of one row of tiles at a time */
#define WEIR_WINO_L 16

/* The input transform of one 6-vector (B^T d), for the points 0, 1, -1,
 * 1/2, -2 and infinity:
 *   B^T = [ 1 -3/2   -2  3/2    1  0 ]
 *         [ 0   -1  1/2  5/2    1  0 ]
 *         [ 0    1 -5/2  1/2    1  0 ]
 *         [ 0   -2   -1    2    1  0 ]
 *         [ 0  1/2   -1 -1/2    1  0 ]
 *         [ 0    1 -3/2   -2  3/2  1 ] */
#define WEIR_WINO_BT(d0, d1, d2, d3, d4, d5, r0, r1, r2, r3, r4, r5)           \
  do {                                                                         \
    const __typeof__(d1) e31 = d3 - d1, e42 = d4 - d2;                         \
    r0 = (d0 + d4) - 2.0f * d2 + 1.5f * e31;                                   \
    r1 = (d4 - d1) + 0.5f * d2 + 2.5f * d3;                                    \
    r2 = (d4 + d1) - 2.5f * d2 + 0.5f * d3;                                    \
    r3 = e42 + 2.0f * e31;                                                     \
    r4 = e42 - 0.5f * e31;                                                     \
    r5 = (d5 + d1) - 2.0f * d3 + 1.5f * e42;                                   \
  } while (0)

/* The output transform of one 6-vector (A^T m): floats or vectors.
 *   A^T = [ 1  1  1    1  1  0 ]
 *         [ 0  1 -1  1/2 -2  0 ]
 *         [ 0  1  1  1/4  4  0 ]
 *         [ 0  1 -1  1/8 -8  1 ] */
#define WEIR_WINO_AT(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)                   \
  do {                                                                         \
    const __typeof__(m1) s12 = m1 + m2, d12 = m1 - m2;                         \
    o0 = (m0 + s12) + (m3 + m4);                                               \
    o1 = d12 + (0.5f * m3 - 2.0f * m4);                                        \
    o2 = s12 + (0.25f * m3 + 4.0f * m4);                                       \
    o3 = (d12 + m5) + (0.125f * m3 - 8.0f * m4);                               \
  } while (0)

#ifndef WEIR_WINO_COMMON
#define WEIR_WINO_COMMON
/* WEIR_WINO_L lanes (GCC vector extension; the compiler maps it to the
 * ISA's registers), loaded and stored unaligned through memcpy */
typedef float weir_wino_v __attribute__((vector_size(64)));
static inline weir_wino_v weir_wino_ld(const float *p) {
  weir_wino_v v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void weir_wino_st(float *p, weir_wino_v v) {
  memcpy(p, &v, sizeof v);
}
/* Lanes [0, n) of v at p. */
static inline void weir_wino_stn(float *p, weir_wino_v v, int64_t n) {
  if (n >= WEIR_WINO_L) {
    weir_wino_st(p, v);
    return;
  }
  for (int l = 0; l < WEIR_WINO_L; l++)
    if (l < n)
      p[l] = v[l];
}
/* d[j][l] = row[4 l + j] for j < 6, l < 16 (row: 66 floats): the stride-4
 * phases of four vectors, two rounds of two-vector shuffles */
static inline void weir_wino_deal(const float *row, weir_wino_v *d) {
  const weir_wino_v r0 = weir_wino_ld(row), r1 = weir_wino_ld(row + 16);
  const weir_wino_v r2 = weir_wino_ld(row + 32), r3 = weir_wino_ld(row + 48);
  const weir_wino_v a = __builtin_shufflevector(
      r0, r1, 0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const weir_wino_v b = __builtin_shufflevector(
      r2, r3, 0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const weir_wino_v c = __builtin_shufflevector(
      r0, r1, 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
  const weir_wino_v e = __builtin_shufflevector(
      r2, r3, 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
  d[0] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19,
                                 20, 21, 22, 23);
  d[1] = __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25,
                                 26, 27, 28, 29, 30, 31);
  d[2] = __builtin_shufflevector(c, e, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19,
                                 20, 21, 22, 23);
  d[3] = __builtin_shufflevector(c, e, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25,
                                 26, 27, 28, 29, 30, 31);
  /* j 4, 5: phases 0, 1 one tile on, the last lane from row[64], row[65] */
  const weir_wino_v t4 = {row[64]}, t5 = {row[65]};
  d[4] = __builtin_shufflevector(d[0], t4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                 12, 13, 14, 15, 16);
  d[5] = __builtin_shufflevector(d[1], t5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                 12, 13, 14, 15, 16);
}
/* out[4 l + j] = o[j][l] for j < 4, l < 16 (the inverse of a deal) */
static inline void weir_wino_weave(const weir_wino_v *o, float *out) {
  const weir_wino_v e = __builtin_shufflevector(
      o[0], o[1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const weir_wino_v f = __builtin_shufflevector(
      o[0], o[1], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15,
      31);
  const weir_wino_v g = __builtin_shufflevector(
      o[2], o[3], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const weir_wino_v h = __builtin_shufflevector(
      o[2], o[3], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15,
      31);
  weir_wino_st(out, __builtin_shufflevector(e, g, 0, 1, 16, 17, 2, 3, 18, 19,
                                            4, 5, 20, 21, 6, 7, 22, 23));
  weir_wino_st(out + 16,
               __builtin_shufflevector(e, g, 8, 9, 24, 25, 10, 11, 26, 27, 12,
                                       13, 28, 29, 14, 15, 30, 31));
  weir_wino_st(out + 32, __builtin_shufflevector(f, h, 0, 1, 16, 17, 2, 3, 18,
                                                 19, 4, 5, 20, 21, 6, 7, 22,
                                                 23));
  weir_wino_st(out + 48,
               __builtin_shufflevector(f, h, 8, 9, 24, 25, 10, 11, 26, 27, 12,
                                       13, 28, 29, 14, 15, 30, 31));
}
/* dst[0, n) = src[0, n), n at most 4 WEIR_WINO_L + 2: whole vectors and
 * halves, quarters, then floats (fixed-size copies the compiler inlines;
 * the rows are short, and a call of memcpy per row cost more than the
 * copy) */
static inline void weir_wino_copy(float *dst, const float *src, int64_t n) {
  int64_t q = 0;
  for (; q + WEIR_WINO_L <= n; q += WEIR_WINO_L)
    memcpy(dst + q, src + q, WEIR_WINO_L * sizeof(float));
  if (q + WEIR_WINO_L / 2 <= n) {
    memcpy(dst + q, src + q, WEIR_WINO_L / 2 * sizeof(float));
    q += WEIR_WINO_L / 2;
  }
  if (q + WEIR_WINO_L / 4 <= n) {
    memcpy(dst + q, src + q, WEIR_WINO_L / 4 * sizeof(float));
    q += WEIR_WINO_L / 4;
  }
  if (q < n)
    dst[q] = src[q];
  if (q + 1 < n)
    dst[q + 1] = src[q + 1];
  if (q + 2 < n)
    dst[q + 2] = src[q + 2];
}
/* dst[0, n) = 0, n at most 4 WEIR_WINO_L + 2, the same way */
static inline void weir_wino_zero(float *dst, int64_t n) {
  const weir_wino_v z = {0};
  int64_t q = 0;
  for (; q + WEIR_WINO_L <= n; q += WEIR_WINO_L)
    memcpy(dst + q, &z, sizeof z);
  if (q + WEIR_WINO_L / 2 <= n) {
    memcpy(dst + q, &z, sizeof z / 2);
    q += WEIR_WINO_L / 2;
  }
  if (q + WEIR_WINO_L / 4 <= n) {
    memcpy(dst + q, &z, sizeof z / 4);
    q += WEIR_WINO_L / 4;
  }
  if (q < n)
    dst[q] = 0.0f;
  if (q + 1 < n)
    dst[q + 1] = 0.0f;
  if (q + 2 < n)
    dst[q + 2] = 0.0f;
}

/* The segments of the transforms: WEIR_WINO_L consecutive tiles of a
 * block (fewer at its end), lane l the tile t + l, whatever rows of tiles
 * and images they come from (a 32x32 map has 8 tiles a row, a 16x16 one
 * 4: one row a segment would leave half or three quarters of the lanes
 * idle).  A piece is the part of a segment in one row of tiles: np pieces,
 * piece k from lane pl[k], pn[k] tiles, its image, row and column of
 * tiles in pi[k], pr[k], pc[k]. */
static inline int weir_wino_pieces(int64_t t, int64_t cnt, int64_t th,
                                   int64_t tw, int64_t *pl, int64_t *pn,
                                   int64_t *pi, int64_t *pr, int64_t *pc) {
  int np = 0;
  for (int64_t l = 0; l < cnt; np++) {
    const int64_t tc = t % tw;
    int64_t k = tw - tc;
    if (k > cnt - l)
      k = cnt - l;
    pl[np] = l;
    pn[np] = k;
    pi[np] = t / (th * tw);
    pr[np] = t / tw % th;
    pc[np] = tc;
    l += k;
    t += k;
  }
  return np;
}

/* U = G g G^T of one 3x3 filter g (row-major) into u[36], in double:
 *   G = [     1      0     0 ]
 *       [   1/3    1/3   1/3 ]
 *       [  -1/3    1/3  -1/3 ]
 *       [ -16/15 -8/15 -4/15 ]
 *       [  1/15  -2/15  4/15 ]
 *       [     0      0     1 ] */
static __attribute__((unused)) void weir_wino_filter(const float *g, double *u) {
  double t[6][3];
  for (int j = 0; j < 3; j++) {
    const double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    t[0][j] = g0;
    t[1][j] = (g0 + g1 + g2) / 3;
    t[2][j] = -(g0 - g1 + g2) / 3;
    t[3][j] = -(16 * g0 + 8 * g1 + 4 * g2) / 15;
    t[4][j] = (g0 - 2 * g1 + 4 * g2) / 15;
    t[5][j] = g2;
  }
  for (int i = 0; i < 6; i++) {
    const double g0 = t[i][0], g1 = t[i][1], g2 = t[i][2];
    u[i * 6 + 0] = g0;
    u[i * 6 + 1] = (g0 + g1 + g2) / 3;
    u[i * 6 + 2] = -(g0 - g1 + g2) / 3;
    u[i * 6 + 3] = -(16 * g0 + 8 * g1 + 4 * g2) / 15;
    u[i * 6 + 4] = (g0 - 2 * g1 + 4 * g2) / 15;
    u[i * 6 + 5] = g2;
  }
}
#endif

/* U of the filters w (m x c x 3 x 3) packed once, when the kernel is loaded
 * (docs/native.md, "pre-packed weights"): the 36 matrices U_xi (m x c),
 * each as weir_prepack_a packs a GEMM's A for blocking mr, kc, mc (per k
 * block and m block, mr-high panels, zero-padded), U_xi at
 * dst + xi * (m rounded up to mr) * c. */
static __attribute__((unused)) void weir_wino_prepack_@S@(const float *w, int64_t m, int64_t c,
                                  int64_t mr, int64_t kcmax, int64_t mcmax,
                                  float *dst) {
  const int64_t kblocks = (c + kcmax - 1) / kcmax;
  const int64_t kcb = (c + kblocks - 1) / kblocks;
  const int64_t mblocks = (m + mcmax - 1) / mcmax;
  const int64_t mcb = ((m + mblocks - 1) / mblocks + mr - 1) / mr * mr;
  const int64_t mpad = (m + mr - 1) / mr * mr;
  memset(dst, 0, (size_t)(36 * mpad * c) * sizeof(float));
  for (int64_t o = 0; o < m; o++) {
    const int64_t ic = o / mcb * mcb, p = (o - ic) / mr, i = (o - ic) % mr;
    for (int64_t ch = 0; ch < c; ch++) {
      double u[36];
      weir_wino_filter(w + (o * c + ch) * 9, u);
      const int64_t pc = ch / kcb * kcb, kk = ch - pc;
      const int64_t kc = c - pc < kcb ? c - pc : kcb;
      for (int xi = 0; xi < 36; xi++)
        dst[xi * mpad * c + pc * mpad + ic * kc + (p * kc + kk) * mr + i] =
            (float)u[xi];
    }
  }
}

#endif
/* @RUN@: the prepacking above is also pasted alone into <prefix>_prepack's
 * part of the unit. */

/* The input transform of tiles [t0, t0 + nb) (one block), channels
 * [ch0, ch1): V_xi (c x nb) at vb already packed as the GEMM's B
 * (weir_prepack_b's layout: per k block of kcb channels, NR-wide panels of
 * kc rows), so the GEMM does not copy it again; per channel, the block's
 * tiles a segment of WEIR_WINO_L at a time (weir_wino_pieces; split where
 * it crosses a panel of NR). */
static void weir_wino_in_@S@(const float *x, float *vb, int64_t c, int64_t h,
                             int64_t wd, int64_t th, int64_t tw, int64_t ph,
                             int64_t pw, int64_t t0, int64_t nb, int64_t ch0,
                             int64_t ch1) {
  const int64_t npan = (nb + @NR@ - 1) / @NR@;
  const int64_t kblocks = (c + @KC@ - 1) / @KC@;
  const int64_t kcb = (c + kblocks - 1) / kblocks;
  const int64_t vxs = npan * @NR@ * c;
  /* channel by channel (each channel's rows read in order, which the
   * prefetchers follow; all channels of a segment at a time were slower) */
  /* the input rows of the block: from row r0 of image i0 to row r1 of
   * image i1, each image's span contiguous */
  const int64_t i0 = t0 / (th * tw), i1 = (t0 + nb - 1) / (th * tw);
  int64_t r0 = 4 * (t0 / tw % th) - ph;
  int64_t r1 = 4 * ((t0 + nb - 1) / tw % th) - ph + 6;
  r0 = r0 < 0 ? 0 : r0 > h ? h : r0;
  r1 = r1 < 0 ? 0 : r1 > h ? h : r1;
  for (int64_t ch = ch0; ch < ch1; ch++) {
    /* the next channel's rows of the block on their way to the cache
     * while this one is transformed (its reads waited for memory: each
     * channel's rows are a short run the prefetchers start late on) */
    if (ch + 1 < c)
      for (int64_t im = i0; im <= i1; im++) {
        const float *pl0 = x + (im * c + ch + 1) * h * wd;
        const float *p1 = pl0 + (im == i1 ? r1 : h) * wd;
        const float *p = pl0 + (im == i0 ? r0 : 0) * wd;
        for (; p < p1; p += 16)
          __builtin_prefetch(p);
      }
    /* row ch of V_xi in its k block; kcq floats from one panel to the
     * next */
    const int64_t kp = ch / kcb * kcb;
    float *vch = vb + kp * npan * @NR@ + (ch - kp) * @NR@;
    const int64_t kcq = (c - kp < kcb ? c - kp : kcb) * @NR@;
    for (int64_t lt = 0; lt < nb; lt += WEIR_WINO_L) {
      const int64_t cnt = nb - lt < WEIR_WINO_L ? nb - lt : WEIR_WINO_L;
      int64_t pl[WEIR_WINO_L], pn[WEIR_WINO_L], pi[WEIR_WINO_L],
          pr[WEIR_WINO_L], pc[WEIR_WINO_L];
      const int np =
          weir_wino_pieces(t0 + lt, cnt, th, tw, pl, pn, pi, pr, pc);
      /* the lanes of the segment in its panel (n1 of them), then in the
       * next */
      const int64_t n1 = cnt < @NR@ - lt % @NR@ ? cnt : @NR@ - lt % @NR@;
      /* rows: (d B)[i][k], then columns: B^T (d B), lane l the tile
       * t0 + lt + l */
      weir_wino_v hb[6][6];
      for (int i = 0; i < 6; i++) {
        /* row i of the segment's 6x6 patches, zero-padded: piece k's
         * 4 pn[k] + 2 floats from float 4 pl[k] on; the 2 past a piece
         * that the next overwrites are kept in e4, e5 for its last lane */
        float row[4 * WEIR_WINO_L + 4];
        float e4[WEIR_WINO_L], e5[WEIR_WINO_L];
        for (int k = 0; k < np; k++) {
          const int64_t ih = 4 * pr[k] - ph + i, c0 = 4 * pc[k] - pw;
          const int64_t span = 4 * pn[k] + 2;
          float *rk = row + 4 * pl[k];
          int64_t a = 0, e = 0;
          const float *xr = x;
          if (ih >= 0 && ih < h) {
            xr = x + ((pi[k] * c + ch) * h + ih) * wd;
            a = c0 < 0 ? -c0 : 0;
            e = wd - c0 < span ? wd - c0 : span;
            if (e < a)
              e = a;
          }
          weir_wino_zero(rk, a);
          weir_wino_copy(rk + a, xr + c0 + a, e - a);
          weir_wino_zero(rk + e, span - e);
          /* from x, not from rk: a load of what the copy has just stored
           * would wait for its stores */
          e4[k] = span - 2 >= a && span - 2 < e ? xr[c0 + span - 2] : 0.0f;
          e5[k] = span - 1 >= a && span - 1 < e ? xr[c0 + span - 1] : 0.0f;
        }
        weir_wino_zero(row + 4 * cnt + 2, 4 * (WEIR_WINO_L - cnt));
        weir_wino_v d[6];
        weir_wino_deal(row, d);
        for (int k = 0; k + 1 < np; k++) {
          const int64_t l = pl[k] + pn[k] - 1;
          d[4][l] = e4[k];
          d[5][l] = e5[k];
        }
        WEIR_WINO_BT(d[0], d[1], d[2], d[3], d[4], d[5], hb[i][0], hb[i][1],
                     hb[i][2], hb[i][3], hb[i][4], hb[i][5]);
      }
      float *dst = vch + lt / @NR@ * kcq + lt % @NR@;
      float *dst2 = vch + (lt / @NR@ + 1) * kcq;
      for (int k = 0; k < 6; k++) {
        weir_wino_v v[6];
        WEIR_WINO_BT(hb[0][k], hb[1][k], hb[2][k], hb[3][k], hb[4][k],
                     hb[5][k], v[0], v[1], v[2], v[3], v[4], v[5]);
        for (int i = 0; i < 6; i++) {
          float *di = dst + (i * 6 + k) * vxs;
          weir_wino_stn(di, v[i], n1);
          if (cnt > n1) {
            float lanes[WEIR_WINO_L];
            weir_wino_st(lanes, v[i]);
            float *d2 = dst2 + (i * 6 + k) * vxs;
            for (int64_t l = n1; l < cnt; l++)
              d2[l - n1] = lanes[l];
          }
        }
      }
    }
  }
}

/* The GEMMs xi in [xi0, xi1) of one block of nb tiles, on the calling
 * thread with its GEMM work slot: M_xi[m x nb] = U_xi[m x c] V_xi[c x nb]
 * (U pre-packed at upk in panels of MR rows, or row-major at ub); M_xi row
 * o at mb + (o * 36 + xi) * nb, so that the output transform reads the 36
 * rows of one output channel from one contiguous span (36 matrices apart,
 * they would share a few sets of the L1). */
static int weir_wino_mm_@S@(const float *upk, const float *ub, int64_t m,
                            int64_t c, int64_t nb, const float *vb, float *mb,
                            int xi0, int xi1, void *mywork) {
  const int64_t mpad = (m + @MR@ - 1) / @MR@ * @MR@;
  const int64_t vxs = (nb + @NR@ - 1) / @NR@ * @NR@ * c;
  int st = 0;
  for (int xi = xi0; xi < xi1; xi++) {
    const float *a = upk ? upk : ub + xi * m * c;
    const float *apk = upk ? upk + xi * mpad * c : NULL;
    st |= weir_gemm_runp_@S@(0, 0, m, nb, c, 1.0f, a, c, apk, NULL,
                             vb + xi * vxs, nb, NULL, 0.0f, mb + xi * nb,
                             36 * nb, NULL, mywork);
  }
  return st;
}

/* The output transform of tiles [t0, t0 + nb) for output channels
 * [o0, o1): A^T M A, bias, residual, activation, one store; a segment of
 * WEIR_WINO_L tiles at a time (weir_wino_pieces), stored piece by piece. */
static void weir_wino_out_@S@(const float *mb, const float *b, float *y,
                              const float *r, int64_t m, int64_t oh,
                              int64_t ow, int64_t th, int64_t tw, int act,
                              float lo, float hi, int64_t t0, int64_t nb,
                              int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; o++) {
    const float bias = b ? b[o] : 0.0f;
    for (int64_t lt = 0; lt < nb; lt += WEIR_WINO_L) {
      const int64_t cnt = nb - lt < WEIR_WINO_L ? nb - lt : WEIR_WINO_L;
      int64_t pl[WEIR_WINO_L], pn[WEIR_WINO_L], pi[WEIR_WINO_L],
          pr[WEIR_WINO_L], pc[WEIR_WINO_L];
      const int np =
          weir_wino_pieces(t0 + lt, cnt, th, tw, pl, pn, pi, pr, pc);
      /* whole vectors: the lanes past cnt read the next row of M (or the
       * padding after M) and are not stored */
      const float *src = mb + o * 36 * nb + lt;
      /* rows: (M A)[i][j], then columns: A^T (M A) + bias */
      weir_wino_v ha[6][4];
      for (int i = 0; i < 6; i++) {
        const float *si = src + i * 6 * nb;
        weir_wino_v mm[6];
        for (int j = 0; j < 6; j++)
          mm[j] = weir_wino_ld(si + j * nb);
        WEIR_WINO_AT(mm[0], mm[1], mm[2], mm[3], mm[4], mm[5], ha[i][0],
                     ha[i][1], ha[i][2], ha[i][3]);
      }
      weir_wino_v oo[4][4];
      for (int j = 0; j < 4; j++)
        WEIR_WINO_AT(ha[0][j], ha[1][j], ha[2][j], ha[3][j], ha[4][j],
                     ha[5][j], oo[0][j], oo[1][j], oo[2][j], oo[3][j]);
      float orow[4][4 * WEIR_WINO_L];
      for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++)
          oo[i][j] += bias;
        weir_wino_weave(oo[i], orow[i]);
      }
      for (int k = 0; k < np; k++) {
        int64_t cols = ow - 4 * pc[k];
        if (cols > 4 * pn[k])
          cols = 4 * pn[k];
        for (int i = 0; i < 4; i++) {
          const int64_t p = 4 * pr[k] + i;
          if (p >= oh)
            break;
          const int64_t off = ((pi[k] * m + o) * oh + p) * ow + 4 * pc[k];
          float *yr = y + off;
          const float *rr = r ? r + off : NULL;
          const float *orr = orow[i] + 4 * pl[k];
          if (rr) {
            if (act == 1)
              for (int64_t q = 0; q < cols; q++) {
                float v = orr[q] + rr[q];
                v = v < lo ? lo : v;
                yr[q] = v > hi ? hi : v;
              }
            else
              for (int64_t q = 0; q < cols; q++)
                yr[q] = weir_act1_f32(orr[q] + rr[q], act, lo, hi);
          } else {
            if (act == 1)
              for (int64_t q = 0; q < cols; q++) {
                float v = orr[q];
                v = v < lo ? lo : v;
                yr[q] = v > hi ? hi : v;
              }
            else
              for (int64_t q = 0; q < cols; q++)
                yr[q] = weir_act1_f32(orr[q], act, lo, hi);
          }
        }
      }
    }
  }
}

/* ws: per thread the GEMM's work slot (slot bytes: its packing buffers),
 * then per thread a region of V (36 x c x tbmax rounded up to NR) and M
 * (36 x m x tbmax and one vector read past its end), each rounded up to 64
 * bytes, then U: the layout wino_work_bytes
 * (core/kernels/winograd.c) sizes.
 *
 * Two schemes.  With at least tbmax tiles (rounded up to NR) per thread,
 * each thread takes its own contiguous run of NR panels of tiles, in
 * blocks of at most tbmax, and does the input transform, the 36 GEMMs and
 * the output transform of each with its own V and M and no barrier.  With
 * fewer tiles (a batch-1 small map), all threads do one block at a time in
 * the first region: the input transform split by channel, the 36 GEMMs by
 * xi, the output transform by output channel, a barrier between. */
static int weir_wino_@S@(const float *x, const float *w, const float *upk,
                         const float *b, float *y, const float *r, int64_t n,
                         int64_t c, int64_t h, int64_t wd, int64_t m,
                         int64_t oh, int64_t ow, int64_t ph, int64_t pw,
                         int act, float lo, float hi, int64_t tbmax,
                         int64_t nthr, int64_t slot, int uroom,
                         void *ws) {
  const int64_t th = (oh + 3) / 4, tw = (ow + 3) / 4;
  const int64_t tiles = n * th * tw;
  if (tiles <= 0 || m <= 0)
    return 0;
  const int64_t tbp = (tbmax + @NR@ - 1) / @NR@ * @NR@;
  /* floats of one thread's V and M, each rounded up to 64 bytes */
  const int64_t vfl = (36 * c * tbp + 15) / 16 * 16;
  const int64_t mfl = (36 * m * tbmax + WEIR_WINO_L + 15) / 16 * 16;
  float *const rg = (float *)((char *)ws + nthr * slot);
  float *ub = rg + nthr * (vfl + mfl);
  /* U without room in ws (a kernel made to pre-pack, run without the
   * pre-packed block: WEIR_PREPACK=0): allocated for this call */
  void *own = NULL;
  if (!upk && !uroom) {
    own = aligned_alloc(64, ((size_t)(36 * m * c) * sizeof(float) + 63) / 64 *
                                64);
    if (!own)
      return 1;
    ub = (float *)own;
  }
  int nt = 1;
#ifdef _OPENMP
  nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (nt > nthr)
    nt = (int)nthr;
#endif
  const int64_t npanels = (tiles + @NR@ - 1) / @NR@;
  const int64_t bpan = tbp / @NR@;
  /* four blocks per thread at least: batch-1 maps of 196 tiles and fewer
   * do not split by panels (at 196 tiles, 5 panels of 48 went 3 and 2:
   * measured no faster at 2 threads) */
  const int split = nt > 1 && npanels >= 4 * nt * bpan;
  /* fewer panels, but two of the transforms' vectors of tiles per thread
   * or more (a batch-1 56x56 map: 196 tiles; s18): each thread takes its
   * own share of the tiles, tiles * me / nt rounded to WEIR_WINO_L up to
   * tiles * (me + 1) / nt rounded (not whole panels: 196 tiles are 5
   * panels of 48, which went 3 and 2; now 96 and 100 tiles), in blocks of
   * tbmax from its first tile (the last one shorter: 48, 48 and 48, 48,
   * 4), all three steps alone as in the split, no barrier.  The shared
   * blocks' three barriers per block and their two exchanges between the
   * threads (V written by channel and read by xi, M written by xi and read
   * by output channel) cost more when the two cores share no cache; this
   * way a thread reads the rows of x that it wrote in the layer before
   * (the same split of tiles) and reads all of U per block instead of
   * half.  (The rounded boundaries stay in order: at least 32 tiles a
   * thread, rounding moves them by at most 8.) */
  const int tsplit = nt > 1 && !split && tiles >= nt * 2 * WEIR_WINO_L;
  int st = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(| : st)
#endif
  {
#ifdef _OPENMP
    const int me = omp_get_thread_num();
#else
    const int me = 0;
#endif
    void *mywork = (char *)ws + (size_t)me * (size_t)slot;
    if (!upk) {
      /* U per call (weights that are not constants), row-major m x c */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
      for (int64_t o = 0; o < m; o++)
        for (int64_t ch = 0; ch < c; ch++) {
          double u[36];
          weir_wino_filter(w + (o * c + ch) * 9, u);
          for (int xi = 0; xi < 36; xi++)
            ub[(xi * m + o) * c + ch] = (float)u[xi];
        }
    }
    if (split) {
      /* this thread's panels [p0, p1) in blocks of about equal panels,
       * at most bpan each */
      float *vb = rg + me * (vfl + mfl), *mb = vb + vfl;
      const int64_t p0 = npanels * me / nt, p1 = npanels * (me + 1) / nt;
      const int64_t nblk = (p1 - p0 + bpan - 1) / bpan;
      for (int64_t k = 0; k < nblk; k++) {
        const int64_t t0 = (p0 + (p1 - p0) * k / nblk) * @NR@;
        int64_t t1 = (p0 + (p1 - p0) * (k + 1) / nblk) * @NR@;
        if (t1 > tiles)
          t1 = tiles;
        weir_wino_in_@S@(x, vb, c, h, wd, th, tw, ph, pw, t0, t1 - t0, 0, c);
        st |= weir_wino_mm_@S@(upk, ub, m, c, t1 - t0, vb, mb, 0, 36, mywork);
        weir_wino_out_@S@(mb, b, y, r, m, oh, ow, th, tw, act, lo, hi, t0,
                          t1 - t0, 0, m);
      }
    } else if (tsplit) {
      float *vb = rg + me * (vfl + mfl), *mb = vb + vfl;
      const int64_t L = WEIR_WINO_L;
      const int64_t a0 = (tiles * me / nt + L / 2) / L * L;
      const int64_t a1 =
          me == nt - 1 ? tiles : (tiles * (me + 1) / nt + L / 2) / L * L;
      for (int64_t t0 = a0; t0 < a1; t0 += tbmax) {
        const int64_t t1 = a1 - t0 < tbmax ? a1 : t0 + tbmax;
        weir_wino_in_@S@(x, vb, c, h, wd, th, tw, ph, pw, t0, t1 - t0, 0, c);
        st |= weir_wino_mm_@S@(upk, ub, m, c, t1 - t0, vb, mb, 0, 36, mywork);
        weir_wino_out_@S@(mb, b, y, r, m, oh, ow, th, tw, act, lo, hi, t0,
                          t1 - t0, 0, m);
      }
    } else {
      float *vb = rg, *mb = rg + vfl;
      for (int64_t t0 = 0; t0 < tiles; t0 += tbmax) {
        const int64_t nb = tiles - t0 < tbmax ? tiles - t0 : tbmax;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t ch = 0; ch < c; ch++)
          weir_wino_in_@S@(x, vb, c, h, wd, th, tw, ph, pw, t0, nb, ch,
                           ch + 1);
        /* one thread per GEMM (it runs serially inside this region) */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int xi = 0; xi < 36; xi++)
          st |= weir_wino_mm_@S@(upk, ub, m, c, nb, vb, mb, xi, xi + 1,
                                 mywork);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t o = 0; o < m; o++)
          weir_wino_out_@S@(mb, b, y, r, m, oh, ow, th, tw, act, lo, hi, t0,
                            nb, o, o + 1);
      }
    }
  }
  free(own);
  return st;
}
