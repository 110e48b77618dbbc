/* batchnorm-grad.c — implementation "weir" of BatchNormGrad (the backward
 * of a training-mode batch norm, ir/ops/training.c; docs/native.md, "The
 * batch norm's backward"): the helper weir_bngrad_<dtype> as C text, its
 * operand checks and its registration.
 *
 * X, dY, R and dX are [N, C, S] (S the product of the dimensions after
 * the channels), row-major.  One task per channel, split statically over
 * the threads; a task makes two passes over its N planes of S values:
 *   1. g = dY (or R > 0 ? dY : 0), xhat = (X - mean) * (1 / std):
 *      dB = sum g and dscale = sum g xhat, each plane into a vector
 *      reduction (omp simd), the planes added in order;
 *   2. dX = scale / std * (g - dB / M - xhat dscale / M), M = N S.
 * A channel of the CIFAR ResNet-18's largest layer (32 images of 32 x 32)
 * is 128 KB per tensor, so the second pass mostly reads from the cache
 * what the first brought in.  No atomics; the result does not depend on
 * the thread count.  Small tensors (below 32768 values) run on one thread.
 *
 * Conventions: the text is a template ("@T@" the C type, "@S@" the dtype's
 * suffix), plain C that GCC vectorizes; no restrict (dX may share its
 * block with dY: every element is read before it is written).
 */
#include <string.h>

#include "weir-expr.h"
#include "weir-kernels.h"

/* clang-format off */
static const char bngrad_text[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* Weir's batch-norm backward (BatchNormGrad, \"weir\"): per channel c of\n"
    " * [n, c, s] tensors, g = dy (r > 0 ? dy : 0 when r is given) and\n"
    " * xhat = (x - mean) / sd: dbias = sum g, dscale = sum g xhat, then\n"
    " * dx = scale / sd (g - dbias / m - xhat dscale / m), m = n s.  One\n"
    " * channel per task, two passes over its planes. */\n"
    "static void weir_bngrad_@S@(const @T@ *dy, const @T@ *x, const @T@ *mean,\n"
    "                            const @T@ *sd, const @T@ *scale, const @T@ *r,\n"
    "                            @T@ *dx, @T@ *dscale, @T@ *dbias, int64_t n,\n"
    "                            int64_t c, int64_t s) {\n"
    "  int nt = 1;\n"
    "#ifdef _OPENMP\n"
    "  nt = omp_get_max_threads();\n"
    "#endif\n"
    "  if (n * c * s < 32768)\n"
    "    nt = 1;\n"
    "  const @T@ m = (@T@)(n * s);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && c > 1)\n"
    "#endif\n"
    "  for (int64_t ch = 0; ch < c; ch++) {\n"
    "    const @T@ mu = mean[ch], inv = (@T@)1 / sd[ch];\n"
    "    @T@ sb = 0, ss = 0;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "      const int64_t o = (i * c + ch) * s;\n"
    "      const @T@ *py = dy + o, *px = x + o;\n"
    "      @T@ b = 0, q = 0;\n"
    "      if (r) {\n"
    "        const @T@ *pr = r + o;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : b, q)\n"
    "#endif\n"
    "        for (int64_t j = 0; j < s; j++) {\n"
    "          const @T@ g = pr[j] > 0 ? py[j] : (@T@)0;\n"
    "          b += g;\n"
    "          q += g * ((px[j] - mu) * inv);\n"
    "        }\n"
    "      } else {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : b, q)\n"
    "#endif\n"
    "        for (int64_t j = 0; j < s; j++) {\n"
    "          b += py[j];\n"
    "          q += py[j] * ((px[j] - mu) * inv);\n"
    "        }\n"
    "      }\n"
    "      sb += b;\n"
    "      ss += q;\n"
    "    }\n"
    "    dbias[ch] = sb;\n"
    "    dscale[ch] = ss;\n"
    "    const @T@ k = scale[ch] * inv, a = sb / m, e = ss / m;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "      const int64_t o = (i * c + ch) * s;\n"
    "      const @T@ *py = dy + o, *px = x + o;\n"
    "      @T@ *pd = dx + o;\n"
    "      if (r) {\n"
    "        const @T@ *pr = r + o;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "        for (int64_t j = 0; j < s; j++) {\n"
    "          const @T@ g = pr[j] > 0 ? py[j] : (@T@)0;\n"
    "          pd[j] = k * (g - a - (px[j] - mu) * inv * e);\n"
    "        }\n"
    "      } else {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "        for (int64_t j = 0; j < s; j++)\n"
    "          pd[j] = k * (py[j] - a - (px[j] - mu) * inv * e);\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";
/* clang-format on */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean same_shape(const WeirContainer *a, const WeirContainer *b) {
  if (a->shape->len != b->shape->len)
    return FALSE;
  for (guint d = 0; d < a->shape->len; d++)
    if (!weir_expr_equal(dim(a, d), dim(b, d)))
      return FALSE;
  return TRUE;
}

/* Whether c holds as many values as x has channels (any shape). */
static gboolean channel_count(const WeirContainer *c, const WeirContainer *x) {
  g_autoptr(WeirExpr) v = weir_container_volume(c);
  return weir_expr_equal(v, dim(x, 1));
}

static gboolean bngrad_accepts(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, char **reason) {
  static const char *const names[] = {"dY", "X", "mean", "std", "scale", "R"};
  const WeirContainer *in[6], *out[3];
  for (guint k = 0; k < 6; k++)
    in[k] = weir_native_port(g, s, n, TRUE, k);
  for (guint k = 0; k < 3; k++)
    out[k] = weir_native_port(g, s, n, FALSE, k);
  for (guint k = 0; k < 5; k++)
    if (!in[k]) {
      *reason = g_strdup_printf("input %u (%s) is not connected", k, names[k]);
      return FALSE;
    }
  for (guint k = 0; k < 3; k++)
    if (!out[k]) {
      *reason = g_strdup_printf("output %u is not connected", k);
      return FALSE;
    }
  const WeirContainer *x = in[1];
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
  const WeirContainer *all[] = {in[0], in[1],  in[2],  in[3], in[4],
                                in[5], out[0], out[1], out[2]};
  for (guint k = 0; k < G_N_ELEMENTS(all); k++) {
    const WeirContainer *c = all[k];
    if (!c)
      continue;
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
    gboolean full = k < 2 || k == 5 || k == 6;
    if (full ? !same_shape(c, x) : !channel_count(c, x)) {
      *reason = g_strdup_printf(
          full ? "'%s' does not have the shape of '%s'"
               : "'%s' does not hold one value per channel of '%s'",
          c->name, x->name);
      return FALSE;
    }
  }
  for (guint k = 0; k < 3; k++)
    for (guint j = 0; j < 6; j++)
      if (in[j] && in[j] == out[k] && !(k == 0 && j == 0)) {
        *reason =
            g_strdup_printf("'%s' is both input and output", out[k]->name);
        return FALSE;
      }
  return TRUE;
}

static gboolean bngrad_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!bngrad_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const WeirContainer *x = e->in[1].c;
  WeirDType t = x->dtype;
  const char *sfx = t == WEIR_DTYPE_F32 ? "f32" : "f64";
  g_autofree char *hname = g_strdup_printf("weir_bngrad_%s", sfx);
  g_autofree char *htext = weir_kernel_instantiate(bngrad_text, t);
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
  gboolean masked = e->in[5].c != NULL;
  g_string_append_printf(e->code,
                         "/* %s '%s' (node %u): weir, two passes per "
                         "channel%s */\n",
                         e->n->op, l, e->n->id,
                         masked ? ", the ReLU's mask applied to dY" : "");
  g_string_append_printf(
      e->code,
      "weir_bngrad_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", sfx,
      e->in[0].ptr, e->in[1].ptr, e->in[2].ptr, e->in[3].ptr, e->in[4].ptr,
      masked ? e->in[5].ptr : "NULL", e->out[0].ptr, e->out[1].ptr,
      e->out[2].ptr, ns, cs, ss);
  return TRUE;
}

static const WeirNativeImpl bngrad_impl = {
    .op = "BatchNormGrad",
    .impl = "weir",
    .accepts = bngrad_accepts,
    .emit = bngrad_emit,
};

void weir_native_register_batchnorm_grad(void) {
  weir_native_register(&bngrad_impl);
}
