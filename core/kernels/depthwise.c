/* depthwise.c — Weir's depthwise convolution as C text (weir-kernels.h),
 * the native implementation "depthwise" of Conv (docs/native.md).
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

static const char dw_head[] =
    "/* Weir's depthwise convolution (docs/native.md, implementation\n"
    " * \"depthwise\") for @ISA@: vectors of @VL@ floats (or @VLH@) along the\n"
    " * output width; 3x3 and 5x5 kernels at stride 1 and 2 (dilation 1)\n"
    " * specialized, others through a scalar loop nest. */\n";

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
    " * y = act(conv(x, w) + b + r), r (NULL: none) of y's shape.  The\n"
    " * (image, channel) planes are split over the OpenMP threads.  vl: the\n"
    " * vector width, @VL@ or @VLH@ (0: the one computing fewer lanes for\n"
    " * this output width, the wider on a tie). */\n"
    "static void weir_dwconv2d_f32(const float *x, const float *w,\n"
    "                              const float *b, float *y, const float *r,\n"
    "                              int64_t n, int64_t c, int64_t h, int64_t "
    "wd,\n"
    "                              int64_t kh, int64_t kw, int64_t oh,\n"
    "                              int64_t ow, int64_t sh, int64_t sw,\n"
    "                              int64_t dh, int64_t dw, int64_t ph,\n"
    "                              int64_t pw, int act, float lo, float hi,\n"
    "                              int vl) {\n"
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

char *weir_kernel_depthwise_text(const WeirDepthwiseParams *p) {
  GString *s = g_string_new(dw_head);
  append_width(s, p, p->vl);
  append_width(s, p, p->vl / 2);
  g_string_append(s, dw_driver);
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
  const WeirNativeImpl *like = weir_native_lookup("Conv", "im2col");
  if (!like) {
    *reason = g_strdup("needs the 'im2col' implementation's checks, which is "
                       "not registered");
    return FALSE;
  }
  if (!like->accepts(g, s, n, reason))
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
