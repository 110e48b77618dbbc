/* native-weir.c — the native implementation "weir" of Gemm, MatMul and
 * Conv: Weir's own GEMM (core/kernels/gemm.c) instead of a BLAS call.
 *
 * Conventions of this file:
 *  - An operator accepts "weir" exactly when it accepts the BLAS-based
 *    implementation of the same shape ("blas" for Gemm and MatMul,
 *    "im2col" for Conv): the same operand checks, the same emitted
 *    arithmetic, another GEMM.
 *  - The GEMM's ISA and blocking come from the detected hardware profile
 *    (weir_hw_detect(), honouring $WEIR_ISA) at code-generation time and
 *    are written into the helper text, so the compile-cache key covers
 *    them.
 *  - The GEMM's packing buffers and the convolution's patch columns live
 *    in the function's scratch block of the kernel's workspace
 *    (e->scratch, sized at code-generation time: exact for constant
 *    shapes, the largest cache blocks otherwise), so steady-state runs
 *    allocate nothing.  The calls still return a status ("<status> |=
 *    ..."): weir_gemm_<sfx> allocates when it is given no work space.
 *  - Helper names: weir_gemm_<sfx> (the GEMM), weir_wgemm_fill_<sfx>,
 *    weir_wconv2d_<sfx>; helpers that call the GEMM declare it first,
 *    since helpers are printed in name order.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-ops-linalg.h"
#include "weir-ops.h"

static const char *sfx(WeirDType t) {
  return t == WEIR_DTYPE_F64 ? "f64" : "f32";
}

static char *instantiate(const char *text, WeirDType t) {
  GString *s = g_string_new(text);
  g_string_replace(s, "@T@", t == WEIR_DTYPE_F64 ? "double" : "float", 0);
  g_string_replace(s, "@S@", sfx(t), 0);
  return g_string_free(s, FALSE);
}

static void use_helper(WeirNativeEmit *e, const char *name_tmpl,
                       const char *text_tmpl, WeirDType t) {
  g_autofree char *name = instantiate(name_tmpl, t);
  g_autofree char *text = instantiate(text_tmpl, t);
  e->helper(e, name, text);
}

/* Records weir_gemm_<sfx> for dtype t, blocked for this machine; *bl
 * (optional) receives the blocking. */
static void use_gemm(WeirNativeEmit *e, WeirDType t, WeirGemmBlocking *bl) {
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirGemmBlocking own;
  if (!bl)
    bl = &own;
  weir_kernel_gemm_blocking(hw, t, bl);
  g_autofree char *text = weir_kernel_gemm_text(t, bl);
  e->helper(e, weir_kernel_gemm_name(t), text);
  e->uses_status = TRUE;
}

/* The C text of a scratch block of `bytes` (taken over) for the node's
 * call, from the kernel's workspace; "NULL" when nothing is needed. */
static char *scratch_ptr(WeirNativeEmit *e, WeirExpr *bytes) {
  g_autoptr(WeirExpr) b = bytes;
  gint64 v;
  if (weir_expr_is_const(b, &v) && v <= 0)
    return g_strdup("NULL");
  g_autofree char *p = e->scratch(e, b);
  return g_strdup_printf("(void *)%s", p);
}

/* Scratch for the packing buffers of one m x n x k GEMM (borrowed
 * expressions, NULL = 1). */
static char *gemm_work(WeirNativeEmit *e, WeirDType t, const WeirExpr *m,
                       const WeirExpr *n, const WeirExpr *k) {
  WeirGemmBlocking bl;
  use_gemm(e, t, &bl);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  return scratch_ptr(e, weir_kernel_gemm_work_bytes(t, &bl, m ? m : one,
                                                    n ? n : one, k ? k : one));
}

static char *number(double v, WeirDType t) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEn"))
    g_strlcat(buf, ".0", sizeof buf);
  return t == WEIR_DTYPE_F32 ? g_strdup_printf("%sf", buf) : g_strdup(buf);
}

static void emit_header(WeirNativeEmit *e, const char *what) {
  g_autofree char *l = g_strdup(e->n->label ? e->n->label : "");
  for (char *p = l; *p; p++)
    if (*p == '*' || *p == '/' || (guchar)*p < 0x20 || (guchar)*p >= 0x7f)
      *p = '_';
  g_string_append_printf(e->code, "/* %s '%s' (node %u): %s */\n", e->n->op, l,
                         e->n->id, what);
}

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static char *dim_c(WeirNativeEmit *e, const WeirContainer *c, guint d) {
  return e->expr_c(e, dim(c, d));
}

static char *dims_product(WeirNativeEmit *e, const WeirContainer *c, guint from,
                          guint to) {
  g_autoptr(WeirExpr) p = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *q = weir_expr_mul(p, dim(c, d));
    weir_expr_unref(p);
    p = q;
  }
  return e->expr_c(e, p);
}

static gboolean dim_is(const WeirContainer *c, guint d, gint64 v) {
  gint64 x;
  return weir_expr_is_const(dim(c, d), &x) && x == v;
}

/* Accepts what the implementation `like` of the same operator accepts. */
static gboolean accepts_like(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, const char *like,
                             char **reason) {
  const WeirNativeImpl *ni = weir_native_lookup(n->op, like);
  if (!ni) {
    *reason = g_strdup_printf("needs the '%s' implementation's checks, which "
                              "is not registered",
                              like);
    return FALSE;
  }
  return ni->accepts(g, s, n, reason);
}

/* ------------------------------------------------------------------ Gemm */

static gboolean gemm_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  return accepts_like(g, s, n, "blas", reason);
}

static const char gemm_fill[] =
    "/* y[m x n] = beta * c, c broadcast from cr x cc (1 or full) */\n"
    "static void weir_wgemm_fill_@S@(@T@ *y, const @T@ *c, int64_t m,\n"
    "                                int64_t n, int64_t cr, int64_t cc,\n"
    "                                @T@ beta) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for if (m * n > 65536)\n"
    "#endif\n"
    "  for (int64_t i = 0; i < m; i++)\n"
    "    for (int64_t j = 0; j < n; j++)\n"
    "      y[i * n + j] = beta * c[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : "
    "j)];\n"
    "}\n";

static gboolean gemm_emit(WeirNativeEmit *e, GError **error) {
  (void)error;
  const WeirNode *n = e->n;
  const WeirNativeOperand *a = &e->in[0], *b = &e->in[1], *c = &e->in[2],
                          *y = &e->out[0];
  WeirDType t = y->c->dtype;
  gboolean ta = weir_node_attr_int(n, "transA", 0) != 0;
  gboolean tb = weir_node_attr_int(n, "transB", 0) != 0;
  g_autofree char *alpha = number(weir_node_attr_float(n, "alpha", 1.0), t);
  g_autofree char *beta = number(weir_node_attr_float(n, "beta", 1.0), t);
  g_autofree char *m = dim_c(e, y->c, 0), *nn = dim_c(e, y->c, 1);
  g_autofree char *k = dim_c(e, a->c, ta ? 0 : 1);
  g_autofree char *lda = dim_c(e, a->c, 1), *ldb = dim_c(e, b->c, 1);
  emit_header(e, "weir");
  if (c->c) {
    guint r = c->c->shape->len;
    g_autofree char *cr = r == 2 ? dim_c(e, c->c, 0) : g_strdup("1");
    g_autofree char *cc = r >= 1 ? dim_c(e, c->c, r - 1) : g_strdup("1");
    use_helper(e, "weir_wgemm_fill_@S@", gemm_fill, t);
    g_string_append_printf(e->code,
                           "weir_wgemm_fill_%s(%s, %s, %s, %s, %s, %s, %s);\n",
                           sfx(t), y->ptr, c->ptr, m, nn, cr, cc, beta);
  }
  g_autofree char *work =
      gemm_work(e, t, dim(y->c, 0), dim(y->c, 1), dim(a->c, ta ? 0 : 1));
  g_string_append_printf(e->code,
                         "%s |= weir_gemm_%s(%d, %d, %s, %s, %s, %s, %s, %s, "
                         "%s, %s, %s, %s, %s, %s);\n",
                         e->status, sfx(t), ta, tb, m, nn, k, alpha, a->ptr,
                         lda, b->ptr, ldb, c->c ? "1" : "0", y->ptr, nn, work);
  return TRUE;
}

/* ---------------------------------------------------------------- MatMul */

static gboolean matmul_accepts(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, char **reason) {
  return accepts_like(g, s, n, "blas", reason);
}

/* Adds "i * stride" to offset `var` for operand c (batch dims aligned
 * right with the output's nb batch dims) for output batch dim d. */
static void batch_term(WeirNativeEmit *e, GString *code, const char *var,
                       const WeirContainer *c, guint nb, guint d) {
  guint r = c->shape->len;
  if (r < 2)
    return;
  guint cb = r - 2;
  if (d + cb < nb)
    return; /* broadcast */
  guint cd = d + cb - nb;
  if (dim_is(c, cd, 1))
    return;
  g_autofree char *stride = dims_product(e, c, cd + 1, r);
  g_string_append_printf(code, "    %s += i * (%s);\n", var, stride);
}

static gboolean matmul_emit(WeirNativeEmit *e, GError **error) {
  (void)error;
  const WeirNativeOperand *a = &e->in[0], *b = &e->in[1], *y = &e->out[0];
  WeirDType t = y->c->dtype;
  guint ra = a->c->shape->len, rb = b->c->shape->len, ry = y->c->shape->len;
  gboolean av = ra == 1, bv = rb == 1;
  guint nb = ry - (av ? 0 : 1) - (bv ? 0 : 1);
  g_autofree char *m = av ? g_strdup("1") : dim_c(e, a->c, ra - 2);
  g_autofree char *k = dim_c(e, a->c, ra - 1);
  g_autofree char *nn = bv ? g_strdup("1") : dim_c(e, b->c, rb - 1);
  g_autofree char *ldb = bv ? g_strdup("1") : g_strdup(nn);
  emit_header(e, "weir");
  g_autofree char *work =
      gemm_work(e, t, av ? NULL : dim(a->c, ra - 2),
                bv ? NULL : dim(b->c, rb - 1), dim(a->c, ra - 1));
  if (nb == 0) {
    g_string_append_printf(e->code,
                           "%s |= weir_gemm_%s(0, 0, %s, %s, %s, 1, %s, %s, "
                           "%s, %s, 0, %s, %s, %s);\n",
                           e->status, sfx(t), m, nn, k, a->ptr, k, b->ptr, ldb,
                           y->ptr, nn, work);
    return TRUE;
  }
  /* one GEMM per batch element, each split over the threads */
  g_autofree char *count = dims_product(e, y->c, 0, nb);
  g_string_append_printf(e->code,
                         "for (int64_t bi = 0; bi < %s; bi++) {\n"
                         "  int64_t rest = bi, oa = 0, ob = 0;\n",
                         count);
  for (guint d = nb; d-- > 0;) {
    g_autofree char *yd = dim_c(e, y->c, d);
    GString *terms = g_string_new(NULL);
    batch_term(e, terms, "oa", a->c, nb, d);
    batch_term(e, terms, "ob", b->c, nb, d);
    if (terms->len)
      g_string_append_printf(e->code,
                             "  {\n"
                             "    int64_t i = rest %% (%s);\n"
                             "%s"
                             "  }\n",
                             yd, terms->str);
    g_string_append_printf(e->code, "  rest /= (%s);\n", yd);
    g_string_free(terms, TRUE);
  }
  g_string_append_printf(e->code,
                         "  (void)rest;\n"
                         "  %s |= weir_gemm_%s(0, 0, %s, %s, %s, 1, %s + oa, "
                         "%s, %s + ob, %s, 0, %s + bi * (%s) * (%s), %s, "
                         "%s);\n"
                         "}\n",
                         e->status, sfx(t), m, nn, k, a->ptr, k, b->ptr, ldb,
                         y->ptr, m, nn, nn, work);
  return TRUE;
}

/* ------------------------------------------------------------------ Conv */

static gboolean conv_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  return accepts_like(g, s, n, "im2col", reason);
}

static const char conv_text[] =
    "/* 2-D convolution on Weir's GEMM.  1x1 kernels at unit stride without\n"
    " * padding in one group: per image y[m x hw] = w[m x c] * x[c x hw], no\n"
    " * copy.  Otherwise per group: col[kk x n*oh*ow] (the patches of every\n"
    " * image side by side, zeros in the padding), one GEMM\n"
    " * tmp[mg x n*oh*ow] = w_g * col, scattered to NCHW (with one image the\n"
    " * GEMM writes y directly).  The bias is written first and the GEMM adds\n"
    " * to it (beta = 1).  ws is the caller's scratch: col and tmp, then "
    "(64-byte\n"
    " * aligned) the GEMM's packing buffers; for the 1x1 case only the latter. "
    "*/\n"
    "static int weir_wconv2d_@S@(const @T@ *x, const @T@ *w, const @T@ *b,\n"
    "                            @T@ *y, int64_t n, int64_t c, int64_t h,\n"
    "                            int64_t wd, int64_t m, int64_t kh,\n"
    "                            int64_t kw, int64_t oh, int64_t ow,\n"
    "                            int64_t groups, int64_t sh, int64_t sw,\n"
    "                            int64_t dh, int64_t dw, int64_t ph,\n"
    "                            int64_t pw, void *ws) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow, cols = n * ohw;\n"
    "  if (n == 0 || m == 0 || ohw == 0)\n"
    "    return 0;\n"
    "  if (b) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) if (n * m * ohw > 65536)\n"
    "#endif\n"
    "    for (int64_t in = 0; in < n; in++)\n"
    "      for (int64_t oc = 0; oc < m; oc++)\n"
    "        for (int64_t p = 0; p < ohw; p++)\n"
    "          y[(in * m + oc) * ohw + p] = b[oc];\n"
    "  }\n"
    "  const @T@ beta = b ? (@T@)1 : (@T@)0;\n"
    "  if (groups == 1 && kh == 1 && kw == 1 && sh == 1 && sw == 1 &&\n"
    "      ph == 0 && pw == 0 && oh == h && ow == wd) {\n"
    "    int st = 0;\n"
    "    for (int64_t in = 0; in < n; in++)\n"
    "      st |= weir_gemm_@S@(0, 0, m, ohw, c, (@T@)1, w, c, x + in * c * "
    "ohw,\n"
    "                          ohw, beta, y + in * m * ohw, ohw, ws);\n"
    "    return st;\n"
    "  }\n"
    "  const int64_t ntmp = n > 1 ? mg * cols : 0;\n"
    "  @T@ *col = (@T@ *)ws, *tmp = col + kk * cols;\n"
    "  void *gw = (char *)ws + ((size_t)(kk * cols + ntmp + 1) * sizeof(@T@) "
    "+\n"
    "                           63) / 64 * 64;\n"
    "  int st = 0;\n"
    "  for (int64_t g = 0; g < groups && !st; g++) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) if (kk * cols > 65536)\n"
    "#endif\n"
    "    for (int64_t r = 0; r < kk; r++) {\n"
    "      for (int64_t in = 0; in < n; in++) {\n"
    "        const int64_t ic = r / (kh * kw), i = r / kw % kh, j = r % kw;\n"
    "        const @T@ *xc = x + (in * c + g * cg + ic) * h * wd;\n"
    "        @T@ *dst = col + r * cols + in * ohw;\n"
    "        /* output columns q with 0 <= q * sw + off < wd: [qlo, qhi) */\n"
    "        const int64_t off = j * dw - pw;\n"
    "        int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "        int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "        qlo = qlo < ow ? qlo : ow;\n"
    "        qhi = qhi < ow ? qhi : ow;\n"
    "        qhi = qhi > qlo ? qhi : qlo;\n"
    "        for (int64_t p = 0; p < oh; p++) {\n"
    "          const int64_t ih = p * sh + i * dh - ph;\n"
    "          @T@ *d = dst + p * ow;\n"
    "          if (ih < 0 || ih >= h) {\n"
    "            for (int64_t q = 0; q < ow; q++)\n"
    "              d[q] = (@T@)0;\n"
    "            continue;\n"
    "          }\n"
    "          const @T@ *src = xc + ih * wd + off;\n"
    "          for (int64_t q = 0; q < qlo; q++)\n"
    "            d[q] = (@T@)0;\n"
    "          if (sw == 1)\n"
    "            memcpy(d + qlo, src + qlo, (size_t)(qhi - qlo) * "
    "sizeof(@T@));\n"
    "          else\n"
    "            for (int64_t q = qlo; q < qhi; q++)\n"
    "              d[q] = src[q * sw];\n"
    "          for (int64_t q = qhi; q < ow; q++)\n"
    "            d[q] = (@T@)0;\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "    const @T@ *wg = w + g * mg * kk;\n"
    "    if (n == 1) {\n"
    "      st |= weir_gemm_@S@(0, 0, mg, ohw, kk, (@T@)1, wg, kk, col, ohw,\n"
    "                          beta, y + g * mg * ohw, ohw, gw);\n"
    "      continue;\n"
    "    }\n"
    "    st |= weir_gemm_@S@(0, 0, mg, cols, kk, (@T@)1, wg, kk, col, cols,\n"
    "                        (@T@)0, tmp, cols, gw);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) if (mg * cols > 65536)\n"
    "#endif\n"
    "    for (int64_t in = 0; in < n; in++) {\n"
    "      for (int64_t oc = 0; oc < mg; oc++) {\n"
    "        const @T@ *src = tmp + oc * cols + in * ohw;\n"
    "        @T@ *dst = y + (in * m + g * mg + oc) * ohw;\n"
    "        for (int64_t p = 0; p < ohw; p++)\n"
    "          dst[p] = b ? dst[p] + src[p] : src[p];\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  return st;\n"
    "}\n";

/* The scratch of weir_wconv2d: round64(bytes of col and tmp), unless the
 * convolution is 1x1 at unit stride without padding in one group, then the
 * GEMM's packing buffers for the largest of its GEMMs. */
static char *conv_scratch(WeirNativeEmit *e, WeirDType t,
                          const WeirContainer *x, const WeirContainer *w,
                          const WeirContainer *y, const WeirConvGeometry *geo) {
  WeirGemmBlocking bl;
  use_gemm(e, t, &bl);
  gint64 pb[2], pe[2];
  gboolean one = geo->group == 1 && dim_is(w, 2, 1) && dim_is(w, 3, 1) &&
                 geo->strides[0] == 1 && geo->strides[1] == 1;
  for (guint d = 0; d < 2 && one; d++)
    one = weir_expr_is_const(geo->pad_begin[d], &pb[d]) && pb[d] == 0 &&
          weir_expr_is_const(geo->pad_end[d], &pe[d]) && pe[d] == 0;
  gint64 size = (gint64)weir_dtype_size(t);
  g_autoptr(WeirExpr) groups = weir_expr_const(geo->group);
  g_autoptr(WeirExpr) ohw = weir_expr_mul(dim(y, 2), dim(y, 3));
  g_autoptr(WeirExpr) cols = weir_expr_mul(dim(x, 0), ohw);
  g_autoptr(WeirExpr) khw = weir_expr_mul(dim(w, 2), dim(w, 3));
  g_autoptr(WeirExpr) kk = weir_expr_mul(dim(w, 1), khw); /* C/g * kh * kw */
  g_autoptr(WeirExpr) mg = weir_expr_floordiv(dim(w, 0), groups);
  g_autoptr(WeirExpr) w1 =
      weir_kernel_gemm_work_bytes(t, &bl, dim(w, 0), ohw, dim(x, 1));
  g_autoptr(WeirExpr) w2 = weir_kernel_gemm_work_bytes(t, &bl, mg, ohw, kk);
  g_autoptr(WeirExpr) w3 = weir_kernel_gemm_work_bytes(t, &bl, mg, cols, kk);
  g_autoptr(WeirExpr) w23 = weir_expr_max(w2, w3);
  g_autoptr(WeirExpr) gwork = weir_expr_max(w1, w23);
  if (one)
    return scratch_ptr(e, weir_expr_ref(gwork));
  /* col: kk * cols elements, tmp: mg * cols when n > 1 (counted always),
   * one more, rounded up to 64 bytes as the helper does */
  g_autoptr(WeirExpr) colel = weir_expr_mul(kk, cols);
  g_autoptr(WeirExpr) tmpel = weir_expr_mul(mg, cols);
  g_autoptr(WeirExpr) el = weir_expr_add(colel, tmpel);
  g_autoptr(WeirExpr) el1 = weir_expr_add_const(el, 1);
  g_autoptr(WeirExpr) by = weir_expr_mul_const(el1, size);
  g_autoptr(WeirExpr) by63 = weir_expr_add_const(by, 63);
  g_autoptr(WeirExpr) c64 = weir_expr_const(64);
  g_autoptr(WeirExpr) q = weir_expr_floordiv(by63, c64);
  g_autoptr(WeirExpr) colbytes = weir_expr_mul_const(q, 64);
  return scratch_ptr(e, weir_expr_add(colbytes, gwork));
}

static gboolean conv_emit(WeirNativeEmit *e, GError **error) {
  const WeirContainer *x = e->in[0].c, *w = e->in[1].c, *y = e->out[0].c;
  g_auto(WeirConvGeometry) geo = {0};
  if (!weir_conv_geometry_compute(
          e->n, FALSE, 2, (WeirExpr *const *)x->shape->pdata + 2,
          (WeirExpr *const *)w->shape->pdata + 2, &geo, error))
    return FALSE;
  WeirDType t = y->dtype;
  const char *bp = e->in[2].c ? e->in[2].ptr : "NULL";
  g_autofree char *n = dim_c(e, x, 0), *c = dim_c(e, x, 1), *h = dim_c(e, x, 2),
                  *wd = dim_c(e, x, 3), *m = dim_c(e, w, 0),
                  *kh = dim_c(e, w, 2), *kw = dim_c(e, w, 3),
                  *oh = dim_c(e, y, 2), *ow = dim_c(e, y, 3);
  g_autofree char *ph = e->expr_c(e, geo.pad_begin[0]);
  g_autofree char *pw = e->expr_c(e, geo.pad_begin[1]);
  emit_header(e, "weir");
  g_autofree char *ws = conv_scratch(e, t, x, w, y, &geo);
  g_autofree char *proto = weir_kernel_gemm_prototype(t);
  g_autofree char *text = g_strconcat(proto, conv_text, NULL);
  use_helper(e, "weir_wconv2d_@S@", text, t);
  g_string_append_printf(
      e->code,
      "%s |= weir_wconv2d_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %s, %s, %s);\n",
      e->status, sfx(t), e->in[0].ptr, e->in[1].ptr, bp, e->out[0].ptr, n, c, h,
      wd, m, kh, kw, oh, ow, geo.group, geo.strides[0], geo.strides[1],
      geo.dilations[0], geo.dilations[1], ph, pw, ws);
  return TRUE;
}

/* -------------------------------------------------------------- records */

static const WeirNativeImpl weir_impls[] = {
    {.op = "Gemm", .impl = "weir", .accepts = gemm_accepts, .emit = gemm_emit},
    {.op = "MatMul",
     .impl = "weir",
     .accepts = matmul_accepts,
     .emit = matmul_emit},
    {.op = "Conv", .impl = "weir", .accepts = conv_accepts, .emit = conv_emit},
};

void weir_native_register_weir(void) {
  for (guint i = 0; i < G_N_ELEMENTS(weir_impls); i++)
    weir_native_register(&weir_impls[i]);
}
