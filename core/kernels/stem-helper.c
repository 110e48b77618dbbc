/* stem-helper.c — Weir's direct convolution for few input channels (a
 * network's stem: MobileNetV2's and EfficientNet-B0's 3 -> 32 3x3 and
 * ResNet's 3 -> 64 7x7 at stride 2), pasted into generated units by
 * core/kernels/stem.c (docs/native.md, "Weir's stem convolution").  Not
 * compiled on its own: @VL@ is the lanes of the vectors of the
 * activation helper (weir_act_v@VL@, defined earlier in the unit), @NB@
 * the vectors of output columns per block and @NBH@ those of the blocks
 * that take the rest of a row, @TGT@ the ISA's target attribute and
 * @EVEN@ / @ODD@ the lanes of two vectors' even and odd elements, all
 * replaced before pasting.  Not clang-formatted: the placeholders are not
 * C tokens.
 *
 * y = act(conv(x, w) + b + r), f32, NCHW, group 1, any stride, padding
 * and dilation; the C * KH * KW taps of one output are few (stem.c
 * accepts at most WEIR_STEM_MAX_TAPS), so the GEMM's packing of the
 * patches costs as much as its arithmetic.  Instead, per output row (one
 * task; the rows of all images split over the threads): every input row
 * a kernel row reads is copied into a zero-padded row and split into
 * its S phases (once per thread: kept in slots for the next output rows) (phase
 * f: the padded columns f, f + S, f + 2 S, ...; at stride 2 by vector
 * shuffles), so that tap (ic, i, j) of output column q is element q + j D / S
 * of phase j D % S of input row (ic, i): a plain vector load.  Then blocks of 8
 * output channels x @NB@ vectors of output columns accumulate the taps in
 * registers (each loaded vector used by 8 FMAs, each weight by @NB@; the
 * weights rearranged tap by tap per call), bias first, the taps in (ic, i, j)
 * order; the residual and the activation are applied before the one store (a
 * clip or none by the summing function itself). */

/* clang-format off */
#ifndef WEIR_STEM_@VL@
#define WEIR_STEM_@VL@
#define WEIR_STEM_MB 8
/* rows ahead of the output and input prefetches */
#define WEIR_STEM_PF 2

typedef struct {
  int64_t c, h, wd, m, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw;
  int64_t ld;  /* floats per phase row: the columns the loads reach */
  int64_t xpl; /* floats of the padded row: ld * sw */
  int64_t nr;  /* split rows kept per input channel: (kh - 1) * dh + 1 */
  const int64_t *toff; /* kw: tap j's offset in a slot, col % sw * ld +
                        * col / sw for col = j * dw (no division per row) */
  int act;
  float lo, hi;
} weir_stem_geo;

/* The epilogue and store of nq (<= @VL@) outputs at yo; ro the residual
 * at the same place or NULL. */
static inline __attribute__((always_inline)) @TGT@ void
weir_stem_st@VL@(float *yo, const float *ro, weir_act_v@VL@ acc, int64_t nq,
                 int act, float lo, float hi) {
  if (nq >= @VL@) {
    if (ro)
      acc += weir_act_load@VL@(ro);
    acc = weir_act_apply@VL@(acc, act, lo, hi);
    memcpy(yo, &acc, sizeof acc);
    return;
  }
  float t[@VL@] = {0};
  if (ro) {
    memcpy(t, ro, (size_t)nq * sizeof(float));
    acc += weir_act_load@VL@(t);
  }
  acc = weir_act_apply@VL@(acc, act, lo, hi);
  memcpy(t, &acc, sizeof acc);
  memcpy(yo, t, (size_t)nq * sizeof(float));
}

/* The sums of MB output channels (weights wm, [kk][MB]: a tap's MB
 * weights side by side, from one base register; biases bm or NULL) x NB
 * vectors of output columns from q0 into acc[mm * NB + u], or, when yo
 * is not NULL, clipped to [lo, hi] (clip) and stored at yo + mm * ohw +
 * u * VL (whole vectors, no residual: ReLU's and ReLU6's store without
 * the round trip through out).  src[k] the phase row of tap k, read at
 * q0.  Each loaded vector feeds MB FMAs, each weight NB. */
static inline __attribute__((always_inline)) @TGT@ void
weir_stem_sum@VL@(const int MB, const int NB, const float *const *src,
                  int64_t kk, const float *wm, const float *bm, int64_t q0,
                  weir_act_v@VL@ *out, float *yo, int64_t ohw, int clip,
                  float lo, float hi) {
  weir_act_v@VL@ acc[WEIR_STEM_MB][@NB@];
#pragma GCC unroll 8
  for (int mm = 0; mm < MB; mm++)
#pragma GCC unroll 4
    for (int u = 0; u < NB; u++)
      acc[mm][u] = weir_act_set@VL@(bm ? bm[mm] : 0.0f);
  for (int64_t k = 0; k < kk; k++) {
    weir_act_v@VL@ v[@NB@];
#pragma GCC unroll 4
    for (int u = 0; u < NB; u++)
      v[u] = weir_act_load@VL@(src[k] + q0 + u * @VL@);
#pragma GCC unroll 8
    for (int mm = 0; mm < MB; mm++) {
      const float wk = wm[k * MB + mm];
#pragma GCC unroll 4
      for (int u = 0; u < NB; u++)
        acc[mm][u] += wk * v[u];
    }
  }
  if (yo) {
#pragma GCC unroll 8
    for (int mm = 0; mm < MB; mm++)
#pragma GCC unroll 4
      for (int u = 0; u < NB; u++) {
        weir_act_v@VL@ o = acc[mm][u];
        if (clip)
          o = weir_act_clamp@VL@(o, lo, hi);
        memcpy(yo + mm * ohw + u * @VL@, &o, sizeof o);
      }
    return;
  }
#pragma GCC unroll 8
  for (int mm = 0; mm < MB; mm++)
#pragma GCC unroll 4
    for (int u = 0; u < NB; u++)
      out[mm * NB + u] = acc[mm][u];
}

/* the instances: the loop alone in its function, so that nothing of the
 * epilogue takes the accumulators' registers */
#define WEIR_STEM_SUM_ARGS                                                     \
  const float *const *src, int64_t kk, const float *wm, const float *bm,       \
      int64_t q0, weir_act_v@VL@ *out, float *yo, int64_t ohw, int clip,       \
      float lo, float hi
static __attribute__((noinline)) @TGT@ void
weir_stem_sum8n_@VL@(WEIR_STEM_SUM_ARGS) {
  weir_stem_sum@VL@(WEIR_STEM_MB, @NB@, src, kk, wm, bm, q0, out, yo, ohw,
                    clip, lo, hi);
}
static __attribute__((noinline)) @TGT@ void
weir_stem_sum8h_@VL@(WEIR_STEM_SUM_ARGS) {
  weir_stem_sum@VL@(WEIR_STEM_MB, @NBH@, src, kk, wm, bm, q0, out, yo, ohw,
                    clip, lo, hi);
}
static __attribute__((noinline)) @TGT@ void
weir_stem_sum81_@VL@(WEIR_STEM_SUM_ARGS) {
  weir_stem_sum@VL@(WEIR_STEM_MB, 1, src, kk, wm, bm, q0, out, yo, ohw,
                    clip, lo, hi);
}
static __attribute__((noinline)) @TGT@ void
weir_stem_sum1n_@VL@(WEIR_STEM_SUM_ARGS) {
  weir_stem_sum@VL@(1, @NB@, src, kk, wm, bm, q0, out, yo, ohw,
                    clip, lo, hi);
}
static __attribute__((noinline)) @TGT@ void
weir_stem_sum1h_@VL@(WEIR_STEM_SUM_ARGS) {
  weir_stem_sum@VL@(1, @NBH@, src, kk, wm, bm, q0, out, yo, ohw,
                    clip, lo, hi);
}
static __attribute__((noinline)) @TGT@ void
weir_stem_sum11_@VL@(WEIR_STEM_SUM_ARGS) {
  weir_stem_sum@VL@(1, 1, src, kk, wm, bm, q0, out, yo, ohw,
                    clip, lo, hi);
}

/* MB output channels x NB vectors of output columns from q0, summed, then
 * the epilogue and the store.  yo, ro: the first channel's output
 * (residual) row; channels ohw floats apart. */
static inline __attribute__((always_inline)) @TGT@ void
weir_stem_blk@VL@(const int MB, const int NB, const float *const *src,
                  int64_t kk, const float *wm, const float *bm, float *yo,
                  const float *ro, int64_t ohw, int64_t q0, int64_t ow,
                  int act, float lo, float hi) {
  weir_act_v@VL@ acc[WEIR_STEM_MB * @NB@];
  /* no activation or a clip (ReLU, ReLU6), no residual, whole vectors:
   * stored by the summing function */
  float *yd = !ro && act <= 1 && q0 + NB * @VL@ <= ow ? yo + q0 : NULL;
  if (MB == WEIR_STEM_MB)
    (NB == 1         ? weir_stem_sum81_@VL@
     : NB == @NBH@ ? weir_stem_sum8h_@VL@
                     : weir_stem_sum8n_@VL@)(src, kk, wm, bm, q0, acc, yd, ohw,
                                             act, lo, hi);
  else
    (NB == 1         ? weir_stem_sum11_@VL@
     : NB == @NBH@ ? weir_stem_sum1h_@VL@
                     : weir_stem_sum1n_@VL@)(src, kk, wm, bm, q0, acc, yd, ohw,
                                             act, lo, hi);
  if (yd)
    return;
  for (int mm = 0; mm < MB; mm++)
    for (int u = 0; u < NB; u++) {
      const int64_t q = q0 + u * @VL@;
      if (q >= ow)
        continue;
      weir_stem_st@VL@(yo + mm * ohw + q, ro ? ro + mm * ohw + q : NULL,
                       acc[mm * NB + u], ow - q, act, lo, hi);
    }
}

/* MB output channels from oc over the whole output row: NB vectors at a
 * time, then single vectors. */
static inline __attribute__((always_inline)) @TGT@ void
weir_stem_chan@VL@(const int MB, const weir_stem_geo *g,
                   const float *const *src, const float *w, const float *b,
                   float *yrow, const float *rrow, int64_t oc) {
  const int64_t kk = g->c * g->kh * g->kw, ohw = g->oh * g->ow, ow = g->ow;
  const float *wm = w + oc * kk, *bm = b ? b + oc : NULL;
  float *yo = yrow + oc * ohw;
  const float *ro = rrow ? rrow + oc * ohw : NULL;
  /* the row's vectors in blocks of NB, with no single vector left over
   * where blocks of NBH can take the rest (7 vectors at NB 3: 3, 2, 2) */
  const int64_t nv = (ow + @VL@ - 1) / @VL@;
  int64_t q0 = 0;
  for (int64_t v = 0; v < nv;) {
    const int64_t rest = nv - v;
    if (rest == @NB@ || rest >= @NB@ + @NBH@) {
      weir_stem_blk@VL@(MB, @NB@, src, kk, wm, bm, yo, ro, ohw, q0, ow,
                        g->act, g->lo, g->hi);
      v += @NB@;
    } else if (rest >= @NBH@) {
      weir_stem_blk@VL@(MB, @NBH@, src, kk, wm, bm, yo, ro, ohw, q0, ow,
                        g->act, g->lo, g->hi);
      v += @NBH@;
    } else {
      weir_stem_blk@VL@(MB, 1, src, kk, wm, bm, yo, ro, ohw, q0, ow, g->act,
                        g->lo, g->hi);
      v += 1;
    }
    q0 = v * @VL@;
  }
}

static __attribute__((noinline)) @TGT@ void
weir_stem_chan8_@VL@(const weir_stem_geo *g, const float *const *src,
                     const float *w, const float *b, float *yrow,
                     const float *rrow, int64_t oc) {
  weir_stem_chan@VL@(WEIR_STEM_MB, g, src, w, b, yrow, rrow, oc);
}

static __attribute__((noinline)) @TGT@ void
weir_stem_chan1_@VL@(const weir_stem_geo *g, const float *const *src,
                     const float *w, const float *b, float *yrow,
                     const float *rrow, int64_t oc) {
  weir_stem_chan@VL@(1, g, src, w, b, yrow, rrow, oc);
}

/* Output row p of image in (xi, yi, ri: the image's input, output,
 * residual or NULL; w the weights, wp the blocks of 8 channels'
 * rearranged).  buf: the thread's xpl floats of padded row, then
 * c * nr slots of sw phase rows of ld floats, then one row of ld zeros;
 * src: c * kh * kw pointers; tag: c * nr, the input row each slot holds
 * (in * h + ih; -1 none).  Input row ih of channel ic is split into slot
 * ih % nr: the rows one output row reads are nr or fewer consecutive
 * ones, so the next output row of the same image (a thread's rows are
 * consecutive) finds all but sh of them split already (7x7 at stride 2:
 * 2 of 7 split anew per output row). */
static @TGT@ void
weir_stem_row@VL@(const weir_stem_geo *g, const float *xi, const float *w,
                  const float *wp, const float *b, float *yi, const float *ri, int64_t in,
                  int64_t p, float *buf, const float **src, int64_t *tag) {
  const int64_t sw = g->sw, ld = g->ld, xpl = g->xpl, wd = g->wd;
  float *xp = buf, *d = buf + xpl, *zero = d + g->c * g->nr * sw * ld;
  for (int64_t ic = 0; ic < g->c; ic++)
    for (int64_t i = 0; i < g->kh; i++) {
      const int64_t ih = p * g->sh + i * g->dh - g->ph;
      const float **tap = src + (ic * g->kh + i) * g->kw;
      if (ih < 0 || ih >= g->h) {
        for (int64_t j = 0; j < g->kw; j++)
          tap[j] = zero;
        continue;
      }
      const int64_t r = ic * g->nr + ih % g->nr;
      float *dr = d + r * sw * ld;
      for (int64_t j = 0; j < g->kw; j++)
        tap[j] = dr + g->toff[j];
      if (tag[r] == in * g->h + ih)
        continue;
      tag[r] = in * g->h + ih;
      /* the padded row: xp[col] = x[ih][col - pw], zeros outside */
      const float *xr = xi + (ic * g->h + ih) * wd;
      float *pr = sw == 1 ? dr : xp;
      const int64_t a = g->pw < xpl ? g->pw : xpl;
      const int64_t n = wd < xpl - a ? wd : xpl - a;
      memset(pr, 0, (size_t)a * sizeof(float));
      if (n > 0)
        memcpy(pr + a, xr, (size_t)n * sizeof(float));
      if (a + (n > 0 ? n : 0) < xpl)
        memset(pr + a + (n > 0 ? n : 0), 0,
               (size_t)(xpl - a - (n > 0 ? n : 0)) * sizeof(float));
      if (sw == 2) {
        /* even columns into phase 0, odd ones into phase 1 (ld is whole
         * vectors) */
        for (int64_t u = 0; u < ld; u += @VL@) {
          const weir_act_v@VL@ e0 = weir_act_load@VL@(xp + 2 * u),
                               e1 = weir_act_load@VL@(xp + 2 * u + @VL@);
          const weir_act_v@VL@ ev = __builtin_shufflevector(e0, e1, @EVEN@),
                               od = __builtin_shufflevector(e0, e1, @ODD@);
          memcpy(dr + u, &ev, sizeof ev);
          memcpy(dr + ld + u, &od, sizeof od);
        }
      } else if (sw > 2) {
        for (int64_t f = 0; f < sw; f++)
          for (int64_t u = 0; u < ld; u++)
            dr[f * ld + u] = xp[u * sw + f];
      }
    }
  /* the output row WEIR_STEM_PF rows ahead prefetched for writing, its
   * input rows for reading: in a network both are out of the caches, and
   * 8 or more channels' rows are more streams than the hardware
   * prefetchers follow */
  const int64_t pa = p + WEIR_STEM_PF;
  if (pa < g->oh) {
    for (int64_t oc = 0; oc < g->m; oc++)
      for (int64_t q = 0; q < g->ow; q += 16)
        __builtin_prefetch(yi + (oc * g->oh + pa) * g->ow + q, 1, 3);
    for (int64_t ic = 0; ic < g->c; ic++)
      for (int64_t i = 0; i < g->kh; i++) {
        const int64_t ih = pa * g->sh + i * g->dh - g->ph;
        if (ih >= 0 && ih < g->h)
          for (int64_t q = 0; q < wd; q += 16)
            __builtin_prefetch(xi + (ic * g->h + ih) * wd + q, 0, 3);
      }
  }
  float *yrow = yi + p * g->ow;
  const float *rrow = ri ? ri + p * g->ow : NULL;
  int64_t oc = 0;
  for (; oc + WEIR_STEM_MB <= g->m; oc += WEIR_STEM_MB)
    weir_stem_chan8_@VL@(g, (const float *const *)src, wp, b, yrow, rrow, oc);
  for (; oc < g->m; oc++)
    weir_stem_chan1_@VL@(g, (const float *const *)src, w, b, yrow, rrow, oc);
}

/* The convolution of the whole batch: x [n, c, h, wd], w [m, c, kh, kw],
 * b [m] or NULL, y and r (or NULL) [n, m, oh, ow]; act, lo, hi the
 * epilogue (WeirEpilogueKind).  Returns 1 (nothing written) when its
 * buffers cannot be allocated, else 0. */
static int weir_stem_f32(const float *x, const float *w, const float *b,
                         float *y, const float *r, int64_t n, int64_t c,
                         int64_t h, int64_t wd, int64_t m, int64_t kh,
                         int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                         int64_t sw, int64_t dh, int64_t dw, int64_t ph,
                         int64_t pw, int act, float lo, float hi) {
  if (n <= 0 || m <= 0 || oh <= 0 || ow <= 0)
    return 0;
  weir_stem_geo g = {c, h, wd, m, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw,
                     0, 0, (kh - 1) * dh + 1, NULL, act, lo, hi};
  /* the loads reach column ow rounded up to a vector, plus the largest
   * tap offset; whole vectors */
  const int64_t owv = (ow + @VL@ - 1) / @VL@ * @VL@;
  g.ld = (owv + (kw - 1) * dw / sw + @VL@) / @VL@ * @VL@;
  g.xpl = g.ld * sw;
  const int64_t tasks = n * oh;
  int nt = 1;
#ifdef _OPENMP
  nt = omp_get_max_threads();
#endif
  if (nt > tasks)
    nt = (int)tasks;
  /* per thread: the padded row, the phase rows, the zero row (floats),
   * then the tap pointers and the slots' tags; whole cache lines */
  const size_t fl =
      (size_t)(g.xpl + (c * g.nr * sw + 1) * g.ld + 15) / 16 * 16;
  const size_t per = (fl * sizeof(float) +
                      (size_t)(c * kh * kw) * sizeof(float *) +
                      (size_t)(c * g.nr) * sizeof(int64_t) + 63) /
                     64 * 64;
  /* the weights of each block of WEIR_STEM_MB channels rearranged tap
   * by tap ([kk][MB], at the block's offset oc * kk, as the single
   * channels' [kk] rows are), then the kw tap offsets */
  const int64_t kk = c * kh * kw, mb = m / WEIR_STEM_MB * WEIR_STEM_MB;
  const size_t wpb = ((size_t)(mb * kk + kw * 2) * sizeof(float) + 63) /
                     64 * 64;
  char *mem = aligned_alloc(64, wpb + per * (size_t)nt);
  if (!mem)
    return 1;
  float *wp = (float *)(void *)mem;
  int64_t *toff = (int64_t *)(void *)(wp + mb * kk);
  for (int64_t j = 0; j < kw; j++)
    toff[j] = j * dw % sw * g.ld + j * dw / sw;
  g.toff = toff;
  for (int64_t oc = 0; oc < mb; oc += WEIR_STEM_MB)
    for (int64_t k = 0; k < kk; k++)
      for (int64_t mm = 0; mm < WEIR_STEM_MB; mm++)
        wp[oc * kk + k * WEIR_STEM_MB + mm] = w[(oc + mm) * kk + k];
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
    float *buf = (float *)(void *)(mem + wpb + per * (size_t)tid);
    const float **src = (const float **)(void *)(buf + fl);
    int64_t *tag = (int64_t *)(void *)(src + c * kh * kw);
    for (int64_t u = 0; u < c * g.nr; u++)
      tag[u] = -1;
    memset(buf + g.xpl + c * g.nr * sw * g.ld, 0,
           (size_t)g.ld * sizeof(float));
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t t = 0; t < tasks; t++) {
      const int64_t in = t / oh, p = t % oh;
      weir_stem_row@VL@(&g, x + in * c * h * wd, w, wp, b, y + in * m * oh * ow,
                        r ? r + in * m * oh * ow : NULL, in, p, buf, src,
                        tag);
    }
  }
  free(mem);
  return 0;
}
#endif
/* clang-format on */
