/* batchnorm-stats.c — implementation "weir" of BatchNormStats (the batch
 * statistics of a training-mode batch norm, ir/ops/training.c;
 * docs/native.md, "The batch norm's statistics"): the helper
 * weir_bnstats_<dtype> as C text, its operand checks and its registration.
 *
 * X is [N, C, S] (S the product of the dimensions after the channels),
 * row-major.  One pass over X: per plane (image i, channel ch) of S
 * values, the sums of d = x - k and d * d in double (k the channel's first
 * value, so that the sums do not cancel when the mean is large against the
 * spread), a vector reduction (omp simd); per channel the planes' sums
 * added in image order.  Then, with M = N S, mean = k + sum d / M,
 * var = sum d^2 / M - (sum d / M)^2 (at least 0) and std =
 * sqrt(var + epsilon).  On one thread, and when the images do not split
 * well over the threads, one task per channel (static schedule).  With as
 * many images as threads (a multiple of the thread count, or at least four
 * a thread), the threads split the images instead, as the convolution
 * before (Winograd's tiles, the batched GEMM's columns) and the
 * element-wise map after do, so that each reads the planes it wrote
 * (tst18: on this machine's slow state the two cores share no cache); each
 * plane's two sums go to a buffer of 2 N C doubles, and after a barrier the
 * threads add them per channel in image order.  The pure expansion reads X
 * twice (the sum, then the centred squares) and writes three more loops.
 * No atomics; both splits make and add the same sums in the same order, so
 * the result does not depend on the thread count.  Small tensors (below
 * 32768 values) run on one thread.
 *
 * Conventions: the text is a template ("@T@" the C type, "@S@" the dtype's
 * suffix), plain C that GCC vectorizes.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"

/* clang-format off */
static const char bnstats_text[] =
    "#include <math.h>\n"
    "#include <stdlib.h>\n"
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* The shifted sums of one plane of s values: b = sum (x - k),\n"
    " * q = sum (x - k)^2, in double: one function, not inlined, for both\n"
    " * splits below, so that a plane's sums are the same bits whichever\n"
    " * split makes them. */\n"
    "static __attribute__((noinline)) void\n"
    "weir_bnstats_plane_@S@(const @T@ *px, int64_t s, double k, double *rb,\n"
    "                       double *rq) {\n"
    "  double b = 0, q = 0;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : b, q)\n"
    "#endif\n"
    "  for (int64_t j = 0; j < s; j++) {\n"
    "    const double d = (double)px[j] - k;\n"
    "    b += d;\n"
    "    q += d * d;\n"
    "  }\n"
    "  *rb = b;\n"
    "  *rq = q;\n"
    "}\n"
    "/* mean, var, std of a channel from the sums of its planes, added in\n"
    " * image order */\n"
    "static inline void weir_bnstats_end_@S@(double k, double sb, double sq,\n"
    "                                       double m, double eps, @T@ *mean,\n"
    "                                       @T@ *var, @T@ *sd) {\n"
    "  const double e = sb / m;\n"
    "  double v = sq / m - e * e;\n"
    "  if (v < 0)\n"
    "    v = 0;\n"
    "  *mean = (@T@)(k + e);\n"
    "  *var = (@T@)v;\n"
    "  *sd = (@T@)sqrt(v + eps);\n"
    "}\n"
    "/* Weir's batch statistics (BatchNormStats, \"weir\"): per channel ch of\n"
    " * an [n, c, s] tensor, the mean, biased variance and sqrt(var + eps)\n"
    " * from one pass of shifted sums in double (k: the channel's first\n"
    " * value).  On one thread, or with few images for the threads, one\n"
    " * channel per task; otherwise each thread takes whole images (those the\n"
    " * kernels before and after it also give it: the planes it reads are\n"
    " * the ones it wrote) and stores each plane's two sums, then, after the\n"
    " * barrier, whole channels, adding the planes' sums in image order.\n"
    " * Either way each plane's sums are made alike and added in the same\n"
    " * order: the result does not depend on the thread count. */\n"
    "static void weir_bnstats_@S@(const @T@ *x, @T@ *mean, @T@ *var, @T@ *sd,\n"
    "                             int64_t n, int64_t c, int64_t s,\n"
    "                             double eps) {\n"
    "  int nt = 1;\n"
    "#ifdef _OPENMP\n"
    "  nt = omp_get_max_threads();\n"
    "  if (omp_in_parallel())\n"
    "    nt = 1;\n"
    "#endif\n"
    "  if (n * c * s < 32768)\n"
    "    nt = 1;\n"
    "  const double m = (double)(n * s);\n"
    "  /* by image: as many images as threads or more, a multiple of the\n"
    "   * thread count or at least four a thread */\n"
    "  double *part = NULL;\n"
    "  if (nt > 1 && (n % nt == 0 ? n >= nt : n >= 4 * nt))\n"
    "    part = (double *)malloc((size_t)(2 * n * c) * sizeof(double));\n"
    "  if (part) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel num_threads(nt)\n"
    "#endif\n"
    "    {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp for schedule(static)\n"
    "#endif\n"
    "      for (int64_t i = 0; i < n; i++)\n"
    "        for (int64_t ch = 0; ch < c; ch++)\n"
    "          weir_bnstats_plane_@S@(x + (i * c + ch) * s, s,\n"
    "                                 (double)x[ch * s],\n"
    "                                 &part[2 * (i * c + ch)],\n"
    "                                 &part[2 * (i * c + ch) + 1]);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp for schedule(static)\n"
    "#endif\n"
    "      for (int64_t ch = 0; ch < c; ch++) {\n"
    "        double sb = 0, sq = 0;\n"
    "        for (int64_t i = 0; i < n; i++) {\n"
    "          sb += part[2 * (i * c + ch)];\n"
    "          sq += part[2 * (i * c + ch) + 1];\n"
    "        }\n"
    "        weir_bnstats_end_@S@((double)x[ch * s], sb, sq, m, eps, &mean[ch],\n"
    "                             &var[ch], &sd[ch]);\n"
    "      }\n"
    "    }\n"
    "    free(part);\n"
    "    return;\n"
    "  }\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && c > 1)\n"
    "#endif\n"
    "  for (int64_t ch = 0; ch < c; ch++) {\n"
    "    const double k = (double)x[ch * s];\n"
    "    double sb = 0, sq = 0;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "      double b, q;\n"
    "      weir_bnstats_plane_@S@(x + (i * c + ch) * s, s, k, &b, &q);\n"
    "      sb += b;\n"
    "      sq += q;\n"
    "    }\n"
    "    weir_bnstats_end_@S@(k, sb, sq, m, eps, &mean[ch], &var[ch], &sd[ch]);\n"
    "  }\n"
    "}\n";
/* clang-format on */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean bnstats_accepts(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n, char **reason) {
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0), *out[3];
  if (!x) {
    *reason = g_strdup("input 0 (X) is not connected");
    return FALSE;
  }
  for (guint k = 0; k < 3; k++) {
    out[k] = weir_native_port(g, s, n, FALSE, k);
    if (!out[k]) {
      *reason = g_strdup_printf("output %u is not connected", k);
      return FALSE;
    }
  }
  WeirDType t = x->dtype;
  if (t != WEIR_DTYPE_F32 && t != WEIR_DTYPE_F64) {
    *reason = g_strdup_printf("'%s' is %s; the kernel takes f32 and f64",
                              x->name, weir_dtype_name(t));
    return FALSE;
  }
  if (x->shape->len < 2) {
    *reason = g_strdup_printf("'%s' has rank %u, not [N, C, ...]", x->name,
                              x->shape->len);
    return FALSE;
  }
  const WeirContainer *all[] = {x, out[0], out[1], out[2]};
  for (guint k = 0; k < G_N_ELEMENTS(all); k++) {
    const WeirContainer *c = all[k];
    if (c->dtype != t) {
      *reason = g_strdup_printf("'%s' is %s, '%s' %s", c->name,
                                weir_dtype_name(c->dtype), x->name,
                                weir_dtype_name(t));
      return FALSE;
    }
    if (!weir_kernel_row_major(c)) {
      *reason = g_strdup_printf("'%s' is not stored row-major", c->name);
      return FALSE;
    }
    if (k == 0)
      continue;
    g_autoptr(WeirExpr) v = weir_container_volume(c);
    if (!weir_expr_equal(v, dim(x, 1))) {
      *reason = g_strdup_printf(
          "'%s' does not hold one value per channel of '%s'", c->name, x->name);
      return FALSE;
    }
    if (c == x) {
      *reason = g_strdup_printf("'%s' is both input and output", c->name);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean bnstats_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!bnstats_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const WeirContainer *x = e->in[0].c;
  WeirDType t = x->dtype;
  const char *sfx = t == WEIR_DTYPE_F32 ? "f32" : "f64";
  g_autofree char *hname = g_strdup_printf("weir_bnstats_%s", sfx);
  g_autofree char *htext = weir_kernel_instantiate(bnstats_text, t);
  e->helper(e, hname, htext);
  g_autoptr(WeirExpr) rest = weir_expr_const(1);
  for (guint d = 2; d < x->shape->len; d++) {
    WeirExpr *next = weir_expr_mul(rest, dim(x, d));
    weir_expr_unref(rest);
    rest = next;
  }
  g_autofree char *ns = e->expr_c(e, dim(x, 0)), *cs = e->expr_c(e, dim(x, 1)),
                  *ss = e->expr_c(e, rest);
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(
      e->code, "/* %s '%s' (node %u): weir, one pass per channel */\n",
      e->n->op, l, e->n->id);
  g_string_append_printf(
      e->code, "weir_bnstats_%s(%s, %s, %s, %s, %s, %s, %s, %.17g);\n", sfx,
      e->in[0].ptr, e->out[0].ptr, e->out[1].ptr, e->out[2].ptr, ns, cs, ss,
      weir_node_attr_float(e->n, "epsilon", 1e-5));
  return TRUE;
}

static const WeirNativeImpl bnstats_impl = {
    .op = "BatchNormStats",
    .impl = "weir",
    .accepts = bnstats_accepts,
    .emit = bnstats_emit,
};

void weir_native_register_batchnorm_stats(void) {
  weir_native_register(&bnstats_impl);
}
