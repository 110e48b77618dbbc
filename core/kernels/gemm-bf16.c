/* gemm-bf16.c — Weir's bf16 GEMM (docs/native.md, "Weir's bf16 GEMM"):
 * the native implementation "weir-bf16" of MatMul, Gemm and Conv whose
 * operands A and B (X and W) are bf16, accumulating in f32.
 *
 * Conventions of this file (as gemm-int8.c's):
 *  - The helper itself is real C in gemm-bf16-helper.c, compiled into
 *    libweir as a GResource (kernels.gresource.xml) and pasted into the
 *    generated unit after a few #define lines choosing its path (AVX-512
 *    BF16 or portable), its microtile and the L2 size; those lines are
 *    part of the text, so the compile-cache key covers the choice.
 *  - The path comes from the hardware profile at code-generation time
 *    (weir_hw_detect(): bf16_dot; $WEIR_ISA lowers it), and the helper
 *    checks the CPU again when it first runs.
 *  - The work space (packing buffers) is a scratch block of the kernel's
 *    workspace, bounded by weir_kernel_bgemm_work_bytes.
 *  - Operands must be row-major and all bf16 (as ONNX types them; the
 *    helper could also store f32).  Anything else is refused with the
 *    reason, and the pure expansion is used.
 */
#include <gio/gio.h>
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-ops-linalg.h"

#define HELPER_RESOURCE "/org/weir/kernels/gemm-bf16-helper.c"

/* ------------------------------------------------------------ the path */

void weir_kernel_bgemm_params(const WeirHwProfile *hw, WeirBGemmParams *out) {
  /* 8 x 2 vectors: 16 zmm accumulators, two B vectors and the broadcast
   * A pair in registers */
  WeirBGemmParams q = {.path = WEIR_BGEMM_PORTABLE, .mr = 8, .nv = 2};
  if (hw && hw->isa == WEIR_HW_ISA_AVX512 && hw->bf16_dot)
    q.path = WEIR_BGEMM_AVX512;
  q.l2 = hw && hw->l2_bytes > 0 ? hw->l2_bytes : 256 * 1024;
  q.l2 = CLAMP(q.l2, 16 * 1024, 16 * 1024 * 1024);
  q.threads = hw && hw->logical_cores > 0
                  ? MIN(hw->logical_cores, WEIR_GEMM_MAX_THREADS)
                  : 1;
  *out = q;
}

const char *weir_kernel_bgemm_path_name(WeirBGemmPath path) {
  return path == WEIR_BGEMM_AVX512 ? "avx512-bf16" : "portable";
}

char *weir_kernel_bgemm_text(const WeirBGemmParams *q) {
  return weir_kernel_helper_text(HELPER_RESOURCE, "bf16", "BG",
                                 weir_kernel_bgemm_path_name(q->path),
                                 (int)q->path, q->mr, q->nv, q->l2, q->threads);
}

WeirExpr *weir_kernel_bgemm_work_bytes(const WeirBGemmParams *q,
                                       const WeirExpr *k) {
  /* per thread: the B block (<= L2 / 2, or one panel of NR columns) and
   * one A panel, 4 bytes a pair of k, each rounded up to 64 bytes */
  gint64 nr = (gint64)q->nv * 16;
  g_autoptr(WeirExpr) kp = weir_expr_add_const((WeirExpr *)k, 2);
  g_autoptr(WeirExpr) panels = weir_expr_mul_const(kp, 2 * (nr + q->mr));
  g_autoptr(WeirExpr) per = weir_expr_add_const(panels, q->l2 / 2 + 2 * 64);
  g_autoptr(WeirExpr) threads = weir_expr_mul_const(per, q->threads);
  g_autoptr(WeirExpr) r = weir_expr_add_const(threads, 64);
  return weir_expr_simplify(r); /* a new reference: r is released */
}

/* ------------------------------------------------------------ operands */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean dim_is(const WeirContainer *c, guint d, gint64 v) {
  gint64 x;
  return weir_expr_is_const(dim(c, d), &x) && x == v;
}

static gboolean refuse(char **reason, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean refuse(char **reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *reason = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return FALSE;
}

typedef enum { OP_MATMUL, OP_GEMM, OP_CONV } BOp;

typedef struct {
  BOp op;
  const WeirContainer *a, *b, *d, *y;
  WeirConvGeometry geo; /* conv */
} BInfo;

static void binfo_clear(BInfo *bi) {
  weir_conv_geometry_clear(&bi->geo);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(BInfo, binfo_clear)

static gboolean binfo(const WeirGraph *g, const WeirState *s, const WeirNode *n,
                      BInfo *bi, char **reason) {
  if (g_strcmp0(n->op, "MatMul") == 0)
    bi->op = OP_MATMUL;
  else if (g_strcmp0(n->op, "Gemm") == 0)
    bi->op = OP_GEMM;
  else if (g_strcmp0(n->op, "Conv") == 0)
    bi->op = OP_CONV;
  else
    return refuse(reason, "operator %s has no bf16 kernel", n->op);
  bi->a = weir_native_port(g, s, n, TRUE, 0);
  bi->b = weir_native_port(g, s, n, TRUE, 1);
  bi->d = bi->op == OP_MATMUL ? NULL : weir_native_port(g, s, n, TRUE, 2);
  bi->y = weir_native_port(g, s, n, FALSE, 0);
  if (!bi->a || !bi->b || !bi->y)
    return refuse(reason, "an operand of %s is missing", n->op);
  const WeirContainer *all[] = {bi->a, bi->b, bi->d, bi->y};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    if (all[i] && !weir_kernel_row_major(all[i]))
      return refuse(reason, "'%s' is not stored row-major", all[i]->name);
  if (bi->a->dtype != WEIR_DTYPE_BF16 || bi->b->dtype != WEIR_DTYPE_BF16)
    return refuse(reason, "the operands of %s are not bf16", n->op);
  if (bi->y->dtype != WEIR_DTYPE_BF16 ||
      (bi->d && bi->d->dtype != WEIR_DTYPE_BF16))
    return refuse(reason,
                  "the result and the added operand of %s are not "
                  "bf16",
                  n->op);
  guint ra = bi->a->shape->len, rb = bi->b->shape->len, ry = bi->y->shape->len;
  switch (bi->op) {
  case OP_MATMUL:
    if (ra < 2 || rb != 2 || ry != ra)
      return refuse(reason,
                    "MatMul: the kernel takes A of rank 2 or more and B of "
                    "rank 2");
    for (guint d = 0; d + 2 < ra; d++)
      if (!weir_expr_equal(dim(bi->a, d), dim(bi->y, d)))
        return refuse(reason, "MatMul: A is broadcast over the batch");
    return TRUE;
  case OP_GEMM:
    if (ra != 2 || rb != 2 || ry != 2 || (bi->d && bi->d->shape->len > 2))
      return refuse(reason, "Gemm: A, B and Y must be matrices and C of "
                            "rank <= 2");
    return TRUE;
  case OP_CONV:
    break;
  }
  if (ra != 4 || rb != 4 || ry != 4)
    return refuse(reason, "Conv: only 2-D convolutions are native");
  if (weir_node_attr_int(n, "group", 1) != 1)
    return refuse(reason, "Conv: grouped convolutions are left to the pure "
                          "expansion");
  if (bi->d && (bi->d->shape->len != 1 ||
                !weir_expr_equal(dim(bi->d, 0), dim(bi->b, 0))))
    return refuse(reason, "Conv: bias '%s' is not one per output channel",
                  bi->d->name);
  g_autoptr(GError) local = NULL;
  if (!weir_conv_geometry_compute(
          n, FALSE, 2, (WeirExpr *const *)bi->a->shape->pdata + 2,
          (WeirExpr *const *)bi->b->shape->pdata + 2, &bi->geo, &local)) {
    *reason = g_strdup(local->message);
    return FALSE;
  }
  return TRUE;
}

static gboolean bgemm_accepts(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n, char **reason) {
  g_auto(BInfo) bi = {0};
  return binfo(g, s, n, &bi, reason);
}

/* ------------------------------------------------------------- emitting */

/* The product of the dimensions [from, to) of c. (transfer full) */
static WeirExpr *dims_product(const WeirContainer *c, guint from, guint to) {
  WeirExpr *acc = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *next = weir_expr_mul(acc, dim(c, d));
    weir_expr_unref(acc);
    acc = next;
  }
  return acc;
}

/* A float literal exactly as f32 rounds v. */
static char *float_text(double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.9g", (double)(float)v);
  return g_strdup_printf("(float)%s", buf);
}

static gboolean bgemm_emit(WeirNativeEmit *e, GError **error) {
  g_auto(BInfo) bi = {0};
  g_autofree char *reason = NULL;
  if (!binfo(e->g, e->s, e->n, &bi, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirBGemmParams q;
  weir_kernel_bgemm_params(hw, &q);
  g_autofree char *text = weir_kernel_bgemm_text(&q);
  e->helper(e, "weir_bgemm", text);

  /* the GEMM: m x n x k, and the strides of A, B and D */
  const WeirNode *n = e->n;
  g_autoptr(WeirExpr) m = NULL, nn = NULL, k = NULL;
  g_autofree char *a_rs = NULL, *a_cs = NULL, *b_rs = NULL, *b_cs = NULL,
                  *d_rs = g_strdup("0"), *d_cs = g_strdup("0");
  double alpha = 1, beta = 1;
  if (bi.op == OP_CONV) {
    m = weir_expr_ref(dim(bi.b, 0));
    nn = weir_expr_mul(bi.geo.out[0], bi.geo.out[1]);
    k = dims_product(bi.b, 1, 4);
    g_autofree char *kc = e->expr_c(e, k);
    a_rs = g_steal_pointer(&kc);
    a_cs = g_strdup("1");
    if (bi.d) {
      g_free(d_rs);
      d_rs = g_strdup("1");
    }
  } else if (bi.op == OP_MATMUL) {
    guint r = bi.a->shape->len;
    m = dims_product(bi.a, 0, r - 1);
    nn = weir_expr_ref(dim(bi.b, 1));
    k = weir_expr_ref(dim(bi.b, 0));
    a_rs = e->expr_c(e, k);
    a_cs = g_strdup("1");
    b_rs = e->expr_c(e, nn);
    b_cs = g_strdup("1");
  } else {
    gboolean ta = weir_node_attr_int(n, "transA", 0) != 0;
    gboolean tb = weir_node_attr_int(n, "transB", 0) != 0;
    alpha = weir_node_attr_float(n, "alpha", 1.0);
    beta = weir_node_attr_float(n, "beta", 1.0);
    m = weir_expr_ref(dim(bi.a, ta ? 1 : 0));
    k = weir_expr_ref(dim(bi.a, ta ? 0 : 1));
    nn = weir_expr_ref(dim(bi.b, tb ? 0 : 1));
    /* op(A)(i, kk) = A[i][kk] or A[kk][i] */
    a_rs = ta ? g_strdup("1") : e->expr_c(e, k);
    a_cs = ta ? e->expr_c(e, m) : g_strdup("1");
    b_rs = tb ? g_strdup("1") : e->expr_c(e, nn);
    b_cs = tb ? e->expr_c(e, k) : g_strdup("1");
    if (bi.d) {
      /* C broadcast to m x n: a dimension of 1 has stride 0 */
      guint rc = bi.d->shape->len;
      g_free(d_rs);
      g_free(d_cs);
      d_rs = g_strdup("0");
      d_cs = g_strdup("0");
      if (rc >= 1 && !dim_is(bi.d, rc - 1, 1)) {
        g_free(d_cs);
        d_cs = g_strdup("1");
      }
      if (rc == 2 && !dim_is(bi.d, 0, 1)) {
        g_free(d_rs);
        d_rs = e->expr_c(e, dim(bi.d, 1));
      }
    }
  }
  g_autofree char *work =
      weir_kernel_scratch_arg(e, weir_kernel_bgemm_work_bytes(&q, k));
  g_autofree char *mc = e->expr_c(e, m), *nc = e->expr_c(e, nn),
                  *kc = e->expr_c(e, k);
  g_autofree char *l_ = weir_kernel_comment_label(n);
  g_autofree char *al = float_text(alpha), *be = float_text(beta);
  GString *c = e->code;
  g_string_append_printf(
      c, "/* %s '%s' (node %u): " WEIR_BGEMM_IMPL " (bf16 GEMM, %s) */\n{\n",
      n->op, l_, n->id, weir_kernel_bgemm_path_name(q.path));
  g_string_append_printf(
      c,
      "weir_bgemm_args ba;\nmemset(&ba, 0, sizeof ba);\n"
      "ba.m = %s;\nba.n = %s;\nba.k = %s;\n"
      "ba.a = (const uint16_t *)(const void *)(%s);\nba.a_rs = %s;\n"
      "ba.a_cs = %s;\nba.alpha = %s;\nba.beta = %s;\n"
      "ba.c_bf16 = %d;\nba.ldc = %s;\n",
      mc, nc, kc, e->in[bi.op == OP_CONV ? 1 : 0].ptr, a_rs, a_cs, al, be,
      bi.y->dtype == WEIR_DTYPE_BF16, nc);
  if (bi.d)
    g_string_append_printf(c,
                           "ba.d = (const void *)(%s);\nba.d_bf16 = %d;\n"
                           "ba.d_rs = %s;\nba.d_cs = %s;\n",
                           e->in[2].ptr, bi.d->dtype == WEIR_DTYPE_BF16, d_rs,
                           d_cs);
  if (bi.op != OP_CONV) {
    g_string_append_printf(c,
                           "ba.b = (const uint16_t *)(const void *)(%s);\n"
                           "ba.b_rs = %s;\nba.b_cs = %s;\n"
                           "ba.c = (void *)(%s);\n"
                           "%s |= weir_bgemm(&ba, %s);\n}\n",
                           e->in[1].ptr, b_rs, b_cs, e->out[0].ptr, e->status,
                           work);
    e->uses_status = TRUE;
    return TRUE;
  }
  const WeirConvGeometry *geo = &bi.geo;
  g_autofree char *h = e->expr_c(e, dim(bi.a, 2)),
                  *wd = e->expr_c(e, dim(bi.a, 3)),
                  *kh = e->expr_c(e, dim(bi.b, 2)),
                  *kw = e->expr_c(e, dim(bi.b, 3)),
                  *ow = e->expr_c(e, geo->out[1]),
                  *ph = e->expr_c(e, geo->pad_begin[0]),
                  *pw = e->expr_c(e, geo->pad_begin[1]),
                  *images = e->expr_c(e, dim(bi.a, 0)),
                  *cin = e->expr_c(e, dim(bi.a, 1));
  g_string_append_printf(
      c,
      "weir_bgemm_patches bp;\nbp.h = %s;\nbp.wd = %s;\nbp.kh = %s;\n"
      "bp.kw = %s;\nbp.ow = %s;\nbp.sh = %" G_GINT64_FORMAT
      ";\nbp.sw = %" G_GINT64_FORMAT ";\nbp.dh = %" G_GINT64_FORMAT
      ";\nbp.dw = %" G_GINT64_FORMAT ";\nbp.ph = %s;\nbp.pw = %s;\n"
      "ba.pt = &bp;\n"
      "for (int64_t im = 0; im < %s; im++) {\n"
      "  bp.x = (const uint16_t *)(const void *)(%s) + im * %s * %s * %s;\n"
      "  ba.c = (void *)((%s) + im * %s * %s);\n"
      "  %s |= weir_bgemm(&ba, %s);\n}\n}\n",
      h, wd, kh, kw, ow, geo->strides[0], geo->strides[1], geo->dilations[0],
      geo->dilations[1], ph, pw, images, e->in[0].ptr, cin, h, wd,
      e->out[0].ptr, mc, nc, e->status, work);
  e->uses_status = TRUE;
  return TRUE;
}

static const WeirNativeImpl bgemm_impls[] = {
    {.op = "MatMul",
     .impl = WEIR_BGEMM_IMPL,
     .accepts = bgemm_accepts,
     .emit = bgemm_emit},
    {.op = "Gemm",
     .impl = WEIR_BGEMM_IMPL,
     .accepts = bgemm_accepts,
     .emit = bgemm_emit},
    {.op = "Conv",
     .impl = WEIR_BGEMM_IMPL,
     .accepts = bgemm_accepts,
     .emit = bgemm_emit},
};

void weir_native_register_bgemm(void) {
  for (guint i = 0; i < G_N_ELEMENTS(bgemm_impls); i++)
    weir_native_register(&bgemm_impls[i]);
}
