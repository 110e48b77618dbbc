/* winograd-helper.c — Weir's Winograd convolution F(4x4, 3x3), pasted
 * into generated units by core/kernels/winograd.c (docs/native.md,
 * "Weir's Winograd convolution").  Not compiled on its own: @S@ is the
 * suffix of the GEMM it calls (weir_gemm_runp_@S@, defined earlier in the
 * unit) and @MR@, @NR@, @KC@, @MC@ and @NC@ that GEMM's microtile and cache
 * blocks, replaced before pasting.
 *
 * y = act(conv3x3(x, w) + b + r), f32, NCHW, stride 1, dilation 1, group 1,
 * padding ph (top), pw (left): the output is cut into 4x4 tiles, each
 * read from a 6x6 patch d of x (zeros outside the image);
 *   V = B^T d B (per channel),  M_xi = sum_c U_xi[m][c] V_xi[c]  (xi: one
 *   of the 36 elements of a 6x6 tile: 36 GEMMs),  Y = A^T M A,
 * U = G g G^T the transformed 3x3 filters (36 matrices of m x c).  The
 * interpolation points are 0, 1, -1, 2, -2 and infinity.
 *
 * Blocks of at most tbmax tiles (of all images, in order) are done one at
 * a time by all threads: the input transform (split by channel) writes V
 * straight in the GEMM's packed B layout (weir_prepack_b: NR-wide panels
 * per KC block of channels), the 36 GEMMs (split by xi, each on one
 * thread) read U packed once (upk, weir_wino_prepack_@S@ at load, or U
 * packed by the GEMM from the scratch when upk is NULL) and write M, the
 * output transform (split by output channel) adds the bias and residual,
 * applies the activation and stores y once.  Everything lives in ws: the
 * GEMM's work slot of each thread, V, M and (uroom) U; a call with upk NULL
 * and no room for U allocates it (returns 1 when it cannot). */

#ifndef WEIR_WINO_PREPACK_@S@
#define WEIR_WINO_PREPACK_@S@
/* lanes of the transforms: tiles of one row of tiles at a time */
#define WEIR_WINO_L 16

/* The input transform of one 6-vector (B^T d). */
#define WEIR_WINO_BT(d0, d1, d2, d3, d4, d5, r0, r1, r2, r3, r4, r5)           \
  do {                                                                         \
    r0 = 4.0f * d0 - 5.0f * d2 + d4;                                           \
    r1 = -4.0f * (d1 + d2) + d3 + d4;                                          \
    r2 = 4.0f * (d1 - d2) - d3 + d4;                                           \
    r3 = 2.0f * (d3 - d1) - d2 + d4;                                           \
    r4 = 2.0f * (d1 - d3) - d2 + d4;                                           \
    r5 = 4.0f * d1 - 5.0f * d3 + d5;                                           \
  } while (0)

/* The output transform of one 6-vector (A^T m). */
#define WEIR_WINO_AT(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)                   \
  do {                                                                         \
    const float s12 = m1 + m2, d12 = m1 - m2;                                  \
    const float s34 = m3 + m4, d34 = m3 - m4;                                  \
    o0 = m0 + s12 + s34;                                                       \
    o1 = d12 + 2.0f * d34;                                                     \
    o2 = s12 + 4.0f * s34;                                                     \
    o3 = d12 + 8.0f * d34 + m5;                                                \
  } while (0)

#ifndef WEIR_WINO_COMMON
#define WEIR_WINO_COMMON
/* U = G g G^T of one 3x3 filter g (row-major) into u[36], in double. */
static __attribute__((unused)) void weir_wino_filter(const float *g, double *u) {
  double t[6][3];
  for (int j = 0; j < 3; j++) {
    const double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    t[0][j] = g0 / 4;
    t[1][j] = -(g0 + g1 + g2) / 6;
    t[2][j] = -(g0 - g1 + g2) / 6;
    t[3][j] = g0 / 24 + g1 / 12 + g2 / 6;
    t[4][j] = g0 / 24 - g1 / 12 + g2 / 6;
    t[5][j] = g2;
  }
  for (int i = 0; i < 6; i++) {
    const double g0 = t[i][0], g1 = t[i][1], g2 = t[i][2];
    u[i * 6 + 0] = g0 / 4;
    u[i * 6 + 1] = -(g0 + g1 + g2) / 6;
    u[i * 6 + 2] = -(g0 - g1 + g2) / 6;
    u[i * 6 + 3] = g0 / 24 + g1 / 12 + g2 / 6;
    u[i * 6 + 4] = g0 / 24 - g1 / 12 + g2 / 6;
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

/* The bytes of ws per thread for the GEMM (its packing buffers), then V and
 * M for blocks of tbmax tiles, then U: see weir_kernel_winograd_work_bytes
 * (core/kernels/winograd.c), which sizes the scratch the same way. */
static int weir_wino_@S@(const float *x, const float *w, const float *upk,
                         const float *b, float *y, const float *r, int64_t n,
                         int64_t c, int64_t h, int64_t wd, int64_t m,
                         int64_t oh, int64_t ow, int64_t ph, int64_t pw,
                         int act, float lo, float hi, int64_t tbmax,
                         int64_t nthr, int64_t slot, int uroom, void *ws) {
  const int64_t th = (oh + 3) / 4, tw = (ow + 3) / 4;
  const int64_t tiles = n * th * tw;
  if (tiles <= 0 || m <= 0)
    return 0;
  const int64_t tbp = (tbmax + @NR@ - 1) / @NR@ * @NR@;
  float *vb = (float *)((char *)ws + nthr * slot);
  float *mb = vb + 36 * c * tbp;
  float *ub = mb + 36 * m * tbmax;
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
  /* the k (channel) blocks of the GEMM, as weir_gemm_runp balances them */
  const int64_t kblocks = (c + @KC@ - 1) / @KC@;
  const int64_t kcb = c > 0 ? (c + kblocks - 1) / kblocks : 1;
  int st = 0;
#ifdef _OPENMP
  int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (nt > nthr)
    nt = (int)nthr;
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(| : st)
#endif
  {
#ifdef _OPENMP
    void *mywork = (char *)ws + (size_t)omp_get_thread_num() * (size_t)slot;
#else
    void *mywork = ws;
#endif
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
    const int64_t mpad = (m + @MR@ - 1) / @MR@ * @MR@;
    for (int64_t t0 = 0; t0 < tiles; t0 += tbmax) {
      const int64_t nb = tiles - t0 < tbmax ? tiles - t0 : tbmax;
      const int64_t npan = (nb + @NR@ - 1) / @NR@;
      const int64_t vxs = npan * @NR@ * c; /* one xi's packed V */
      /* input transform: per channel, the block's tiles a row segment of
       * at most WEIR_WINO_L at a time (never across a panel of NR) */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
      for (int64_t ch = 0; ch < c; ch++) {
        const int64_t pc = ch / kcb * kcb, kk = ch - pc;
        const int64_t kc = c - pc < kcb ? c - pc : kcb;
        float *vch = vb + pc * npan * @NR@ + kk * @NR@;
        for (int64_t t = t0; t < t0 + nb;) {
          const int64_t img = t / (th * tw), tr = t / tw % th, tc = t % tw;
          const int64_t lt = t - t0, grp = (lt / WEIR_WINO_L + 1) * WEIR_WINO_L;
          int64_t cnt = tw - tc;
          if (cnt > t0 + nb - t)
            cnt = t0 + nb - t;
          if (cnt > grp - lt)
            cnt = grp - lt;
          const float *xc = x + (img * c + ch) * h * wd;
          /* the 6 input rows of the segment, zero-padded */
          float row[6][4 * WEIR_WINO_L + 4];
          const int64_t c0 = 4 * tc - pw;
          const int64_t span = 4 * WEIR_WINO_L + 4;
          for (int i = 0; i < 6; i++) {
            const int64_t ih = 4 * tr - ph + i;
            int64_t a = 0, e = 0;
            if (ih >= 0 && ih < h) {
              a = c0 < 0 ? -c0 : 0;
              e = wd - c0 < span ? wd - c0 : span;
              if (e < a)
                e = a;
            }
            for (int64_t u = 0; u < a; u++)
              row[i][u] = 0.0f;
            if (e > a)
              memcpy(&row[i][a], xc + ih * wd + c0 + a,
                     (size_t)(e - a) * sizeof(float));
            for (int64_t u = e; u < span; u++)
              row[i][u] = 0.0f;
          }
          /* rows: (d B)[i][k], then columns: B^T (d B) */
          float hb[6][6][WEIR_WINO_L];
          for (int i = 0; i < 6; i++)
            for (int l = 0; l < WEIR_WINO_L; l++) {
              const float *d = &row[i][4 * l];
              WEIR_WINO_BT(d[0], d[1], d[2], d[3], d[4], d[5], hb[i][0][l],
                           hb[i][1][l], hb[i][2][l], hb[i][3][l], hb[i][4][l],
                           hb[i][5][l]);
            }
          float vv[36][WEIR_WINO_L];
          for (int k = 0; k < 6; k++)
            for (int l = 0; l < WEIR_WINO_L; l++)
              WEIR_WINO_BT(hb[0][k][l], hb[1][k][l], hb[2][k][l],
                           hb[3][k][l], hb[4][k][l], hb[5][k][l],
                           vv[0 * 6 + k][l], vv[1 * 6 + k][l],
                           vv[2 * 6 + k][l], vv[3 * 6 + k][l],
                           vv[4 * 6 + k][l], vv[5 * 6 + k][l]);
          /* V_xi[ch][lt..]: panel lt / NR, column lt % NR */
          float *dst = vch + lt / @NR@ * kc * @NR@ + lt % @NR@;
          if (cnt == WEIR_WINO_L)
            for (int xi = 0; xi < 36; xi++)
              memcpy(dst + xi * vxs, vv[xi], WEIR_WINO_L * sizeof(float));
          else
            for (int xi = 0; xi < 36; xi++)
              memcpy(dst + xi * vxs, vv[xi], (size_t)cnt * sizeof(float));
          t += cnt;
        }
      }
      /* the 36 GEMMs M_xi[m x nb] = U_xi[m x c] V_xi[c x nb], one thread
       * each (the GEMM runs serially inside this parallel region) */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
      for (int xi = 0; xi < 36; xi++)
        st |= weir_gemm_runp_@S@(
            0, 0, m, nb, c, 1.0f, upk ? upk : ub + xi * m * c, c,
            upk ? upk + xi * mpad * c : NULL, NULL, vb + xi * vxs, nb, NULL,
            0.0f, mb + xi * m * nb, nb, NULL, mywork);
      /* output transform, bias, residual, activation, one store */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
      for (int64_t o = 0; o < m; o++) {
        const float bias = b ? b[o] : 0.0f;
        for (int64_t t = t0; t < t0 + nb;) {
          const int64_t img = t / (th * tw), tr = t / tw % th, tc = t % tw;
          const int64_t lt = t - t0;
          int64_t cnt = tw - tc;
          if (cnt > t0 + nb - t)
            cnt = t0 + nb - t;
          if (cnt > WEIR_WINO_L)
            cnt = WEIR_WINO_L;
          float mm[36][WEIR_WINO_L];
          const float *src = mb + o * nb + lt;
          if (cnt == WEIR_WINO_L)
            for (int xi = 0; xi < 36; xi++)
              memcpy(mm[xi], src + xi * m * nb, WEIR_WINO_L * sizeof(float));
          else
            for (int xi = 0; xi < 36; xi++) {
              memcpy(mm[xi], src + xi * m * nb, (size_t)cnt * sizeof(float));
              for (int64_t l = cnt; l < WEIR_WINO_L; l++)
                mm[xi][l] = 0.0f;
            }
          /* rows: (M A)[i][j], then columns: A^T (M A) */
          float ha[6][4][WEIR_WINO_L];
          for (int i = 0; i < 6; i++)
            for (int l = 0; l < WEIR_WINO_L; l++)
              WEIR_WINO_AT(mm[i * 6 + 0][l], mm[i * 6 + 1][l],
                           mm[i * 6 + 2][l], mm[i * 6 + 3][l],
                           mm[i * 6 + 4][l], mm[i * 6 + 5][l], ha[i][0][l],
                           ha[i][1][l], ha[i][2][l], ha[i][3][l]);
          float orow[4][4 * WEIR_WINO_L];
          for (int j = 0; j < 4; j++)
            for (int l = 0; l < WEIR_WINO_L; l++) {
              float o0, o1, o2, o3;
              WEIR_WINO_AT(ha[0][j][l], ha[1][j][l], ha[2][j][l],
                           ha[3][j][l], ha[4][j][l], ha[5][j][l], o0, o1, o2,
                           o3);
              orow[0][4 * l + j] = o0;
              orow[1][4 * l + j] = o1;
              orow[2][4 * l + j] = o2;
              orow[3][4 * l + j] = o3;
            }
          int64_t cols = ow - 4 * tc;
          if (cols > 4 * cnt)
            cols = 4 * cnt;
          for (int i = 0; i < 4; i++) {
            const int64_t p = 4 * tr + i;
            if (p >= oh)
              break;
            const int64_t off = ((img * m + o) * oh + p) * ow + 4 * tc;
            float *yr = y + off;
            const float *rr = r ? r + off : NULL;
            const float *orr = orow[i];
            if (rr) {
              if (act == 1)
                for (int64_t q = 0; q < cols; q++) {
                  float v = orr[q] + bias + rr[q];
                  v = v < lo ? lo : v;
                  yr[q] = v > hi ? hi : v;
                }
              else
                for (int64_t q = 0; q < cols; q++)
                  yr[q] = weir_act1_f32(orr[q] + bias + rr[q], act, lo, hi);
            } else {
              if (act == 1)
                for (int64_t q = 0; q < cols; q++) {
                  float v = orr[q] + bias;
                  v = v < lo ? lo : v;
                  yr[q] = v > hi ? hi : v;
                }
              else
                for (int64_t q = 0; q < cols; q++)
                  yr[q] = weir_act1_f32(orr[q] + bias, act, lo, hi);
            }
          }
          t += cnt;
        }
      }
    }
  }
  free(own);
  return st;
}
