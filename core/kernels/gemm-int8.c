/* gemm-int8.c — Weir's int8 GEMM (docs/native.md, "Weir's int8 GEMM"):
 * the native implementation "weir" of MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv, and of Weir's QLinearMatMulBias (the
 * quantize transformation's fully connected layers: the bias per column
 * added in the requantizing store, no int32 accumulator in memory).
 *
 * Conventions of this file:
 *  - The helper itself is real C in gemm-int8-helper.c, compiled into
 *    libweir as a GResource (kernels.gresource.xml) and pasted into the
 *    generated unit after a few #define lines choosing its path (VNNI,
 *    AVX2, portable), its microtile and the L2 size; those lines are part
 *    of the text, so the compile-cache key covers the choice.
 *  - The path comes from the hardware profile at code-generation time
 *    (weir_hw_detect(): $WEIR_ISA lowers it, $WEIR_HW_VNNI=0 hides VNNI).
 *  - The work space (packing buffers, per-call tables) is a scratch block
 *    of the kernel's workspace, bounded by weir_kernel_qgemm_work_bytes.
 *  - Operands must be row-major; zero points and scales scalars or vectors
 *    over their axis as the accepts functions say.  Anything else is
 *    refused with the reason, and the pure expansion is used.
 */
#include <gio/gio.h>
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-ops-linalg.h"

#define HELPER_RESOURCE "/org/weir/kernels/gemm-int8-helper.c"

/* ------------------------------------------------------------ the path */

void weir_kernel_qgemm_params(const WeirHwProfile *hw, WeirQGemmParams *out) {
  WeirQGemmParams q = {.path = WEIR_QGEMM_PORTABLE, .mr = 4, .nv = 4};
  if (hw && hw->isa == WEIR_HW_ISA_AVX512 && hw->int8_dot)
    /* 4 x 4: 16 zmm accumulators.  8 x 3 (24, as the f32 GEMM) was
     * slower: GCC 12 shuffles the vpdpbusd accumulators between registers
     * and spills some (252 against 441 GOP/s at 512^3, one thread) */
    q = (WeirQGemmParams){.path = WEIR_QGEMM_VNNI, .mr = 4, .nv = 4};
  else if (hw && hw->isa >= WEIR_HW_ISA_AVX2)
    q = (WeirQGemmParams){.path = WEIR_QGEMM_AVX2, .mr = 6, .nv = 2};
  q.l2 = hw && hw->l2_bytes > 0 ? hw->l2_bytes : 256 * 1024;
  q.l2 = CLAMP(q.l2, 16 * 1024, 16 * 1024 * 1024);
  q.threads = hw && hw->logical_cores > 0
                  ? MIN(hw->logical_cores, WEIR_GEMM_MAX_THREADS)
                  : 1;
  *out = q;
}

const char *weir_kernel_qgemm_path_name(WeirQGemmPath path) {
  switch (path) {
  case WEIR_QGEMM_VNNI:
    return "avx512-vnni";
  case WEIR_QGEMM_AVX2:
    return "avx2";
  case WEIR_QGEMM_PORTABLE:
    break;
  }
  return "portable";
}

char *weir_kernel_qgemm_text(const WeirQGemmParams *q) {
  return weir_kernel_helper_text(HELPER_RESOURCE, "int8", "QG",
                                 weir_kernel_qgemm_path_name(q->path),
                                 (int)q->path, q->mr, q->nv, q->l2, q->threads);
}

WeirExpr *weir_kernel_qgemm_work_bytes(const WeirQGemmParams *q,
                                       const WeirExpr *m, const WeirExpr *n,
                                       const WeirExpr *k) {
  /* per thread: the B block (<= L2, or one panel) and the A block (<= L2
   * / 2, or one panel) at 2 bytes an element at most (AVX2), the gathered
   * rows of B (4 x 4096 bytes), five int32 tables per column and one per
   * row (<= 4096 each), alignment; per call: 4 (m + n) + 4 max(m, n)
   * bytes of tables */
  guint vl = q->path == WEIR_QGEMM_VNNI   ? 16
             : q->path == WEIR_QGEMM_AVX2 ? 8
                                          : 4;
  gint64 nr = (gint64)q->nv * vl;
  g_autoptr(WeirExpr) kp = weir_expr_add_const((WeirExpr *)k, 4);
  g_autoptr(WeirExpr) panels = weir_expr_mul_const(kp, 2 * (nr + q->mr));
  g_autoptr(WeirExpr) per =
      weir_expr_add_const(panels, q->l2 + q->l2 / 2 + 28 * 4096 + 8 * 64);
  g_autoptr(WeirExpr) threads = weir_expr_mul_const(per, q->threads);
  g_autoptr(WeirExpr) mn = weir_expr_add((WeirExpr *)m, (WeirExpr *)n);
  g_autoptr(WeirExpr) tables = weir_expr_mul_const(mn, 8);
  g_autoptr(WeirExpr) sum = weir_expr_add(threads, tables);
  g_autoptr(WeirExpr) r = weir_expr_add_const(sum, 4 * 64);
  return weir_expr_simplify(r); /* a new reference: r is released */
}

/* ------------------------------------------------------------ operands */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean is_int8(const WeirContainer *c) {
  return c->dtype == WEIR_DTYPE_U8 || c->dtype == WEIR_DTYPE_I8;
}

/* One element (every dimension 1, rank 0 included). */
static gboolean is_single(const WeirContainer *c) {
  for (guint d = 0; d < c->shape->len; d++) {
    gint64 v;
    if (!weir_expr_is_const(dim(c, d), &v) || v != 1)
      return FALSE;
  }
  return TRUE;
}

/* A scalar, or (len non-NULL) a vector of len elements. */
static gboolean is_param(const WeirContainer *c, const WeirExpr *len) {
  if (is_single(c))
    return TRUE;
  return len && c->shape->len == 1 && weir_expr_equal(dim(c, 0), len);
}

/* The layout of one operator: connector of each operand (G_MAXUINT when
 * it has none). */
typedef struct {
  const char *op;
  gboolean conv, qlinear;
  guint a, as, az, b, bs, bz, ys, yz, bias;
} QLayout;

static const QLayout qlayouts[] = {
    {"MatMulInteger", FALSE, FALSE, 0, G_MAXUINT, 2, 1, G_MAXUINT, 3, G_MAXUINT,
     G_MAXUINT, G_MAXUINT},
    {"ConvInteger", TRUE, FALSE, 0, G_MAXUINT, 2, 1, G_MAXUINT, 3, G_MAXUINT,
     G_MAXUINT, G_MAXUINT},
    {"QLinearMatMul", FALSE, TRUE, 0, 1, 2, 3, 4, 5, 6, 7, G_MAXUINT},
    {"QLinearConv", TRUE, TRUE, 0, 1, 2, 3, 4, 5, 6, 7, 8},
    /* Weir's: QLinearMatMul with an i32 bias per column */
    {"QLinearMatMulBias", FALSE, TRUE, 0, 1, 2, 3, 4, 5, 6, 7, 8},
};

static const QLayout *qlayout(const char *op) {
  for (guint i = 0; op && i < G_N_ELEMENTS(qlayouts); i++)
    if (strcmp(qlayouts[i].op, op) == 0)
      return &qlayouts[i];
  return NULL;
}

typedef struct {
  const QLayout *l;
  const WeirContainer *a, *as, *az, *b, *bs, *bz, *ys, *yz, *bias, *y;
  WeirConvGeometry geo; /* conv */
} QInfo;

static void qinfo_clear(QInfo *qi) {
  weir_conv_geometry_clear(&qi->geo);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(QInfo, qinfo_clear)

static const WeirContainer *qport(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, guint k) {
  return k == G_MAXUINT ? NULL : weir_native_port(g, s, n, TRUE, k);
}

static gboolean refuse(char **reason, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean refuse(char **reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *reason = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return FALSE;
}

static gboolean qinfo(const WeirGraph *g, const WeirState *s, const WeirNode *n,
                      QInfo *qi, char **reason) {
  qi->l = qlayout(n->op);
  if (!qi->l)
    return refuse(reason, "operator %s has no int8 kernel", n->op);
  const QLayout *l = qi->l;
  qi->a = qport(g, s, n, l->a);
  qi->as = qport(g, s, n, l->as);
  qi->az = qport(g, s, n, l->az);
  qi->b = qport(g, s, n, l->b);
  qi->bs = qport(g, s, n, l->bs);
  qi->bz = qport(g, s, n, l->bz);
  qi->ys = qport(g, s, n, l->ys);
  qi->yz = qport(g, s, n, l->yz);
  qi->bias = qport(g, s, n, l->bias);
  qi->y = weir_native_port(g, s, n, FALSE, 0);
  if (!qi->a || !qi->b || !qi->y ||
      (l->qlinear && (!qi->as || !qi->bs || !qi->ys || !qi->yz)))
    return refuse(reason, "an operand of %s is missing", n->op);
  const WeirContainer *all[] = {qi->a,  qi->as, qi->az, qi->b,    qi->bs,
                                qi->bz, qi->ys, qi->yz, qi->bias, qi->y};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    if (all[i] && !weir_kernel_row_major(all[i]))
      return refuse(reason, "'%s' is not stored row-major", all[i]->name);
  if (!is_int8(qi->a) || !is_int8(qi->b))
    return refuse(reason, "the operands of %s must be u8 or i8", n->op);
  if ((qi->az && qi->az->dtype != qi->a->dtype) ||
      (qi->bz && qi->bz->dtype != qi->b->dtype))
    return refuse(reason, "a zero point of %s differs from its operand's type",
                  n->op);
  if (l->qlinear) {
    if (!is_int8(qi->y) || qi->yz->dtype != qi->y->dtype)
      return refuse(reason, "'%s' must be u8 or i8, as its zero point",
                    qi->y->name);
    const WeirContainer *sc[] = {qi->as, qi->bs, qi->ys};
    for (guint i = 0; i < G_N_ELEMENTS(sc); i++)
      if (sc[i]->dtype != WEIR_DTYPE_F32)
        return refuse(reason, "scale '%s' is not f32", sc[i]->name);
    if (!is_single(qi->as) || !is_single(qi->ys) || !is_single(qi->yz))
      return refuse(reason,
                    "%s: the kernel takes a scalar input scale and a scalar "
                    "output scale and zero point",
                    n->op);
  } else if (qi->y->dtype != WEIR_DTYPE_I32) {
    return refuse(reason, "'%s' is not i32", qi->y->name);
  }
  if (!l->conv) {
    if (qi->a->shape->len < 2 || qi->b->shape->len != 2 ||
        qi->y->shape->len != qi->a->shape->len)
      return refuse(reason,
                    "%s: the kernel takes A of rank 2 or more and B of rank 2",
                    n->op);
    WeirExpr *m = dim(qi->a, qi->a->shape->len - 2);
    WeirExpr *nn = dim(qi->b, 1);
    if (qi->az && !is_param(qi->az, qi->a->shape->len == 2 ? m : NULL))
      return refuse(reason,
                    "zero point '%s' is neither a scalar nor one per "
                    "row of a rank-2 A",
                    qi->az->name);
    if (qi->bz && !is_param(qi->bz, nn))
      return refuse(reason,
                    "zero point '%s' is neither a scalar nor one per column",
                    qi->bz->name);
    if (l->qlinear && !is_param(qi->bs, nn))
      return refuse(reason, "scale '%s' is neither a scalar nor one per column",
                    qi->bs->name);
    if (qi->bias &&
        (qi->bias->dtype != WEIR_DTYPE_I32 || !is_param(qi->bias, nn)))
      return refuse(reason,
                    "bias '%s' is neither an i32 scalar nor one per column",
                    qi->bias->name);
    return TRUE;
  }
  if (qi->a->shape->len != 4 || qi->b->shape->len != 4 ||
      qi->y->shape->len != 4)
    return refuse(reason, "%s: only 2-D convolutions are native", n->op);
  if (weir_node_attr_int(n, "group", 1) != 1)
    return refuse(reason,
                  "%s: grouped convolutions are left to the pure "
                  "expansion",
                  n->op);
  g_autoptr(GError) local = NULL;
  if (!weir_conv_geometry_compute(
          n, FALSE, 2, (WeirExpr *const *)qi->a->shape->pdata + 2,
          (WeirExpr *const *)qi->b->shape->pdata + 2, &qi->geo, &local)) {
    *reason = g_strdup(local->message);
    return FALSE;
  }
  WeirExpr *m = dim(qi->b, 0);
  if (qi->az && !is_single(qi->az))
    return refuse(reason, "zero point '%s' of X is not a scalar", qi->az->name);
  if (qi->bz && !is_param(qi->bz, m))
    return refuse(reason,
                  "zero point '%s' of W is neither a scalar nor one per "
                  "output channel",
                  qi->bz->name);
  if (l->qlinear && !is_param(qi->bs, m))
    return refuse(reason,
                  "scale '%s' of W is neither a scalar nor one per output "
                  "channel",
                  qi->bs->name);
  if (qi->bias &&
      (qi->bias->dtype != WEIR_DTYPE_I32 || qi->bias->shape->len != 1 ||
       !weir_expr_equal(dim(qi->bias, 0), m)))
    return refuse(reason,
                  "bias '%s' is not an i32 vector of one per output "
                  "channel",
                  qi->bias->name);
  return TRUE;
}

static gboolean qgemm_accepts(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n, char **reason) {
  g_auto(QInfo) qi = {0};
  return qinfo(g, s, n, &qi, reason);
}

/* ------------------------------------------------------------- emitting */

static char *numel(WeirNativeEmit *e, const WeirContainer *c) {
  g_autoptr(WeirExpr) acc = weir_expr_const(1);
  for (guint d = 0; d < c->shape->len; d++) {
    WeirExpr *next = weir_expr_mul(acc, dim(c, d));
    weir_expr_unref(acc);
    acc = next;
  }
  return e->expr_c(e, acc);
}

/* "(const void *)ptr" or "NULL". */
static char *vptr(WeirNativeEmit *e, guint k) {
  if (k == G_MAXUINT || !e->in[k].c)
    return g_strdup("NULL");
  return g_strdup_printf("(const void *)(%s)", e->in[k].ptr);
}

static gboolean qgemm_emit(WeirNativeEmit *e, GError **error) {
  g_auto(QInfo) qi = {0};
  g_autofree char *reason = NULL;
  if (!qinfo(e->g, e->s, e->n, &qi, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const QLayout *l = qi.l;
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirQGemmParams q;
  weir_kernel_qgemm_params(hw, &q);
  g_autofree char *text = weir_kernel_qgemm_text(&q);
  e->helper(e, "weir_qgemm", text);

  /* the GEMM: m x n x k */
  g_autoptr(WeirExpr) m = NULL, nn = NULL, k = NULL;
  g_autoptr(WeirExpr) plane = NULL;
  if (l->conv) {
    /* every image in one call: the columns of B (and of C) are the
     * batch's output pixels, image after image */
    m = weir_expr_ref(dim(qi.b, 0));
    plane = weir_expr_mul(qi.geo.out[0], qi.geo.out[1]);
    nn = weir_expr_mul(plane, dim(qi.a, 0));
    g_autoptr(WeirExpr) kk = weir_expr_mul(dim(qi.b, 2), dim(qi.b, 3));
    k = weir_expr_mul(kk, dim(qi.b, 1));
  } else {
    guint r = qi.a->shape->len;
    m = weir_expr_const(1);
    for (guint d = 0; d + 1 < r; d++) {
      WeirExpr *next = weir_expr_mul(m, dim(qi.a, d));
      weir_expr_unref(m);
      m = next;
    }
    nn = weir_expr_ref(dim(qi.b, 1));
    k = weir_expr_ref(dim(qi.b, 0));
  }
  g_autofree char *work =
      weir_kernel_scratch_arg(e, weir_kernel_qgemm_work_bytes(&q, m, nn, k));
  g_autofree char *mc = e->expr_c(e, m), *nc = e->expr_c(e, nn),
                  *kc = e->expr_c(e, k);
  g_autofree char *l_ = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code,
                         "/* %s '%s' (node %u): weir (int8 GEMM, %s) "
                         "*/\n{\n",
                         e->n->op, l_, e->n->id,
                         weir_kernel_qgemm_path_name(q.path));
  /* conv: A = W (m x k), B = the patches of one image; matmul: A, B */
  const WeirContainer *ga = l->conv ? qi.b : qi.a, *gb = l->conv ? qi.a : qi.b;
  guint ga_k = l->conv ? l->b : l->a, gb_k = l->conv ? l->a : l->b;
  guint gaz = l->conv ? l->bz : l->az, gbz = l->conv ? l->az : l->bz;
  const WeirContainer *gaz_c = l->conv ? qi.bz : qi.az;
  const WeirContainer *gbz_c = l->conv ? qi.az : qi.bz;
  g_autofree char *pa = vptr(e, ga_k), *pb = vptr(e, gb_k), *pza = vptr(e, gaz),
                  *pzb = vptr(e, gbz);
  g_autofree char *ldc = l->conv ? e->expr_c(e, plane) : g_strdup(nc);
  g_autofree char *za_len = gaz_c ? numel(e, gaz_c) : g_strdup("0");
  g_autofree char *zb_len = gbz_c ? numel(e, gbz_c) : g_strdup("0");
  GString *c = e->code;
  g_string_append_printf(c,
                         "weir_qgemm_args qa;\nmemset(&qa, 0, sizeof qa);\n"
                         "qa.m = %s;\nqa.n = %s;\nqa.k = %s;\n"
                         "qa.a = %s;\nqa.lda = %s;\nqa.a_s8 = %d;\n"
                         "qa.ldb = %s;\nqa.b_s8 = %d;\n"
                         "qa.za = %s;\nqa.za_len = %s;\n"
                         "qa.zb = %s;\nqa.zb_len = %s;\nqa.ldc = %s;\n",
                         mc, nc, kc, pa, kc, ga->dtype == WEIR_DTYPE_I8, nc,
                         gb->dtype == WEIR_DTYPE_I8, pza, za_len, pzb, zb_len,
                         ldc);
  if (l->qlinear) {
    guint s1 = l->as, s2 = l->bs;
    g_autofree char *s2_len = numel(e, qi.bs);
    g_string_append_printf(
        c,
        "qa.out = %d;\nqa.s1 = %s;\nqa.s2 = %s;\nqa.s2_len = %s;\n"
        "qa.s2_rows = %d;\nqa.sy = %s;\nqa.yz = (const void *)(%s);\n"
        "qa.lo = %d;\nqa.hi = %d;\n",
        qi.y->dtype == WEIR_DTYPE_U8 ? 1 : 2, e->in[s1].ptr, e->in[s2].ptr,
        s2_len, l->conv ? 1 : 0, e->in[l->ys].ptr, e->in[l->yz].ptr,
        qi.y->dtype == WEIR_DTYPE_U8 ? 0 : -128,
        qi.y->dtype == WEIR_DTYPE_U8 ? 255 : 127);
  }
  if (qi.bias) {
    /* a convolution's bias per row (output channel), a product's per
     * column (or one) */
    g_autofree char *bias_len = l->conv ? g_strdup(mc) : numel(e, qi.bias);
    g_string_append_printf(c,
                           "qa.bias = %s;\nqa.bias_len = %s;\n"
                           "qa.bias_rows = %d;\n",
                           e->in[l->bias].ptr, bias_len, l->conv ? 1 : 0);
  }
  if (!l->conv) {
    g_string_append_printf(c,
                           "qa.b = %s;\nqa.c = (void *)(%s);\n"
                           "%s |= weir_qgemm(&qa, %s);\n}\n",
                           pb, e->out[0].ptr, e->status, work);
    e->uses_status = TRUE;
    return TRUE;
  }
  const WeirConvGeometry *geo = &qi.geo;
  g_autofree char *h = e->expr_c(e, dim(qi.a, 2)),
                  *wd = e->expr_c(e, dim(qi.a, 3)),
                  *kh = e->expr_c(e, dim(qi.b, 2)),
                  *kw = e->expr_c(e, dim(qi.b, 3)),
                  *ow = e->expr_c(e, geo->out[1]),
                  *ph = e->expr_c(e, geo->pad_begin[0]),
                  *pw = e->expr_c(e, geo->pad_begin[1]),
                  *images = e->expr_c(e, dim(qi.a, 0)),
                  *cin = e->expr_c(e, dim(qi.a, 1));
  g_string_append_printf(
      c,
      "weir_qgemm_patches qp;\nqp.h = %s;\nqp.wd = %s;\nqp.kh = %s;\n"
      "qp.kw = %s;\nqp.ow = %s;\nqp.sh = %" G_GINT64_FORMAT
      ";\nqp.sw = %" G_GINT64_FORMAT ";\nqp.dh = %" G_GINT64_FORMAT
      ";\nqp.dw = %" G_GINT64_FORMAT ";\nqp.ph = %s;\nqp.pw = %s;\n"
      "qp.images = %s;\nqp.plane = %s;\nqp.x_image = %s * %s * %s;\n"
      "qp.x = (const void *)(%s);\nqa.pt = &qp;\n"
      "qa.c = (void *)(%s);\n%s |= weir_qgemm(&qa, %s);\n}\n",
      h, wd, kh, kw, ow, geo->strides[0], geo->strides[1], geo->dilations[0],
      geo->dilations[1], ph, pw, images, ldc, cin, h, wd, e->in[l->a].ptr,
      e->out[0].ptr, e->status, work);
  e->uses_status = TRUE;
  return TRUE;
}

static const WeirNativeImpl qgemm_impls[] = {
    {.op = "MatMulInteger",
     .impl = "weir",
     .accepts = qgemm_accepts,
     .emit = qgemm_emit},
    {.op = "QLinearMatMul",
     .impl = "weir",
     .accepts = qgemm_accepts,
     .emit = qgemm_emit},
    {.op = "ConvInteger",
     .impl = "weir",
     .accepts = qgemm_accepts,
     .emit = qgemm_emit},
    {.op = "QLinearConv",
     .impl = "weir",
     .accepts = qgemm_accepts,
     .emit = qgemm_emit},
    {.op = "QLinearMatMulBias",
     .impl = "weir",
     .accepts = qgemm_accepts,
     .emit = qgemm_emit},
};

void weir_native_register_qgemm(void) {
  for (guint i = 0; i < G_N_ELEMENTS(qgemm_impls); i++)
    weir_native_register(&qgemm_impls[i]);
}
