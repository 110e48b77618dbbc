/* multi-tensor.c — implementation "weir" of OptimizerUpdate and SumAll
 * (ir/weir-ops-update.h; docs/native.md): every tensor of the node in one
 * parallel region.
 *
 * Per tensor, the update and the finiteness sums of a training step are a
 * small loop each; compiled as one "omp parallel for" per loop, a model
 * with a hundred parameters pays a hundred fork/joins (with passive
 * waiting, a wake-up of every sleeping thread each) for a few microseconds
 * of work.  Here the node's tensors are laid end to end, the total is cut
 * into one element range per thread, and each thread runs the parts of the
 * tensors its range covers.  The range boundaries fall on multiples of 16
 * elements, so two threads share a cache line only where a tensor starts.
 * Fewer threads than the team when the work is small: at most
 * total / grain (the tunable parameter "grain", default 16384 elements per
 * thread), and no parallel region at all below 2 * grain.
 *
 * The update's arithmetic is the pure expansion's (ir/lower/expand/
 * update.c): the gradient scaled and decayed in the parameter's dtype,
 * sgd and momentum in that dtype, Adam's bias-corrected step in double
 * (the expansion's f64 expression), so results agree with the interpreter
 * up to the compiler's contraction of multiply-adds.  The sums keep one
 * partial per thread (no atomics) and add the partials in thread order:
 * the same value for the same thread count.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-ops-update.h"

/* clang-format off */
static const char update_text[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* Weir's multi-tensor optimizer update (OptimizerUpdate, \"weir\"): the\n"
    " * groups' elements, then the moving averages', laid end to end, one range\n"
    " * per thread.  kind 0 sgd, 1 momentum, 2 adam; nothing changes unless\n"
    " * check is finite. */\n"
    "typedef struct {\n"
    "  int kind, has_scale, has_wd;\n"
    "  @T@ lr, scale, wd, mu, b1, c1, b2, c2;\n"
    "  double lr_d, bc1, bc2, eps;\n"
    "} weir_update_coef_@S@;\n"
    "static void weir_update_part_@S@(const weir_update_coef_@S@ *a, @T@ *p,\n"
    "                                 const @T@ *g, @T@ *m, @T@ *v, int64_t b,\n"
    "                                 int64_t e) {\n"
    "  const @T@ lr = a->lr, s = a->scale, wd = a->wd;\n"
    "  const int hs = a->has_scale, hw = a->has_wd;\n"
    "  if (a->kind == 0) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "    for (int64_t i = b; i < e; i++) {\n"
    "      @T@ gx = hs ? g[i] * s : g[i];\n"
    "      gx = hw ? gx + wd * p[i] : gx;\n"
    "      p[i] = p[i] - lr * gx;\n"
    "    }\n"
    "  } else if (a->kind == 1) {\n"
    "    const @T@ mu = a->mu;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "    for (int64_t i = b; i < e; i++) {\n"
    "      @T@ gx = hs ? g[i] * s : g[i];\n"
    "      gx = hw ? gx + wd * p[i] : gx;\n"
    "      const @T@ mn = mu * m[i] + gx;\n"
    "      m[i] = mn;\n"
    "      p[i] = p[i] - lr * mn;\n"
    "    }\n"
    "  } else {\n"
    "    const @T@ b1 = a->b1, c1 = a->c1, b2 = a->b2, c2 = a->c2;\n"
    "    const double lrd = a->lr_d, bc1 = a->bc1, bc2 = a->bc2, eps = a->eps;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "    for (int64_t i = b; i < e; i++) {\n"
    "      @T@ gx = hs ? g[i] * s : g[i];\n"
    "      gx = hw ? gx + wd * p[i] : gx;\n"
    "      const @T@ mn = b1 * m[i] + c1 * gx;\n"
    "      const @T@ vn = b2 * v[i] + c2 * gx * gx;\n"
    "      m[i] = mn;\n"
    "      v[i] = vn;\n"
    "      p[i] = (@T@)((double)p[i] - lrd * ((double)mn / bc1) /\n"
    "                                      (sqrt((double)vn / bc2) + eps));\n"
    "    }\n"
    "  }\n"
    "}\n"
    "static void weir_update_ema_@S@(@T@ *t, const @T@ *x, double keep, int64_t b,\n"
    "                                int64_t e) {\n"
    "  const @T@ k0 = (@T@)keep, k1 = (@T@)(1 - keep);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "  for (int64_t i = b; i < e; i++)\n"
    "    t[i] = k0 * t[i] + k1 * x[i];\n"
    "}\n"
    "static void weir_update_@S@(int kind, int64_t count, @T@ *const *p,\n"
    "                            const @T@ *const *g, @T@ *const *m,\n"
    "                            @T@ *const *v, const int64_t *n, int64_t ecount,\n"
    "                            @T@ *const *et, const @T@ *const *ex,\n"
    "                            const double *ek, const int64_t *en, double check,\n"
    "                            const int64_t *step, const @T@ *lr,\n"
    "                            const @T@ *scale, double lr_attr, double wd,\n"
    "                            double mu, double b1, double b2, double eps,\n"
    "                            int64_t grain) {\n"
    "  if (!isfinite(check))\n"
    "    return;\n"
    "  const double t = step ? (double)(step[0] + 1) : 1.0;\n"
    "  const weir_update_coef_@S@ a = {\n"
    "      .kind = kind, .has_scale = scale != 0, .has_wd = wd != 0,\n"
    "      .lr = lr ? lr[0] : (@T@)lr_attr, .scale = scale ? scale[0] : (@T@)1,\n"
    "      .wd = (@T@)wd, .mu = (@T@)mu, .b1 = (@T@)b1, .c1 = (@T@)(1 - b1),\n"
    "      .b2 = (@T@)b2, .c2 = (@T@)(1 - b2),\n"
    "      .lr_d = lr ? (double)lr[0] : lr_attr, .bc1 = 1 - pow(b1, t),\n"
    "      .bc2 = 1 - pow(b2, t), .eps = eps};\n"
    "  int64_t total = 0;\n"
    "  for (int64_t k = 0; k < count; k++)\n"
    "    total += n[k];\n"
    "  for (int64_t k = 0; k < ecount; k++)\n"
    "    total += en[k];\n"
    "#ifdef _OPENMP\n"
    "  int nt = omp_get_max_threads();\n"
    "  if (grain > 0 && total / grain < nt)\n"
    "    nt = (int)(total / grain);\n"
    "  if (nt < 1)\n"
    "    nt = 1;\n"
    "#pragma omp parallel num_threads(nt) if (nt > 1)\n"
    "#else\n"
    "  (void)grain;\n"
    "#endif\n"
    "  {\n"
    "    int th = 0, nth = 1;\n"
    "#ifdef _OPENMP\n"
    "    th = omp_get_thread_num();\n"
    "    nth = omp_get_num_threads();\n"
    "#endif\n"
    "    const int64_t lo = th ? total * th / nth / 16 * 16 : 0;\n"
    "    const int64_t hi = th + 1 < nth ? total * (th + 1) / nth / 16 * 16 : total;\n"
    "    int64_t base = 0;\n"
    "    for (int64_t k = 0; k < count + ecount && base < hi; k++) {\n"
    "      const int64_t nk = k < count ? n[k] : en[k - count];\n"
    "      const int64_t b = lo > base ? lo - base : 0;\n"
    "      const int64_t e = hi - base < nk ? hi - base : nk;\n"
    "      if (b < e && k < count)\n"
    "        weir_update_part_@S@(&a, p[k], g[k], m ? m[k] : 0, v ? v[k] : 0, b, e);\n"
    "      else if (b < e)\n"
    "        weir_update_ema_@S@(et[k - count], ex[k - count], ek[k - count], b, e);\n"
    "      base += nk;\n"
    "    }\n"
    "  }\n"
    "}\n";
/* clang-format on */

static const char sum_all_text[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* Weir's multi-tensor sum (SumAll, \"weir\"): the sum of every element\n"
    " * (or its square) of count tensors, one partial per thread over its\n"
    " * range of the tensors laid end to end, the partials added in thread\n"
    " * order. */\n"
    "#define WEIR_SUM_ALL_THREADS 256\n"
    "static @T@ weir_sum_all_@S@(int64_t count, const @T@ *const *x,\n"
    "                            const int64_t *n, int square, int64_t grain) "
    "{\n"
    "  int64_t total = 0;\n"
    "  for (int64_t k = 0; k < count; k++)\n"
    "    total += n[k];\n"
    "  @T@ part[WEIR_SUM_ALL_THREADS];\n"
    "  int used = 1;\n"
    "#ifdef _OPENMP\n"
    "  int nt = omp_get_max_threads();\n"
    "  if (grain > 0 && total / grain < nt)\n"
    "    nt = (int)(total / grain);\n"
    "  if (nt > WEIR_SUM_ALL_THREADS)\n"
    "    nt = WEIR_SUM_ALL_THREADS;\n"
    "  if (nt < 1)\n"
    "    nt = 1;\n"
    "#pragma omp parallel num_threads(nt) if (nt > 1)\n"
    "#else\n"
    "  (void)grain;\n"
    "#endif\n"
    "  {\n"
    "    int th = 0, nth = 1;\n"
    "#ifdef _OPENMP\n"
    "    th = omp_get_thread_num();\n"
    "    nth = omp_get_num_threads();\n"
    "#endif\n"
    "    if (th == 0)\n"
    "      used = nth;\n"
    "    const int64_t lo = th ? total * th / nth / 16 * 16 : 0;\n"
    "    const int64_t hi = th + 1 < nth ? total * (th + 1) / nth / 16 * 16 "
    ": total;\n"
    "    @T@ acc = 0;\n"
    "    int64_t base = 0;\n"
    "    for (int64_t k = 0; k < count && base < hi; base += n[k], k++) {\n"
    "      const int64_t b = lo > base ? lo - base : 0;\n"
    "      const int64_t e = hi - base < n[k] ? hi - base : n[k];\n"
    "      const @T@ *xk = x[k];\n"
    "      if (square) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : acc)\n"
    "#endif\n"
    "        for (int64_t i = b; i < e; i++)\n"
    "          acc += xk[i] * xk[i];\n"
    "      } else {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd reduction(+ : acc)\n"
    "#endif\n"
    "        for (int64_t i = b; i < e; i++)\n"
    "          acc += xk[i];\n"
    "      }\n"
    "    }\n"
    "    part[th] = acc;\n"
    "  }\n"
    "  @T@ y = 0;\n"
    "  for (int th = 0; th < used; th++)\n"
    "    y += part[th];\n"
    "  return y;\n"
    "}\n";

/* ------------------------------------------------------------- helpers */

static void use_helper(WeirNativeEmit *e, const char *name, const char *text,
                       WeirDType t) {
  g_autofree char *nm = weir_kernel_instantiate(name, t);
  g_autofree char *tx = weir_kernel_instantiate(text, t);
  e->helper(e, nm, tx);
}

/* A double literal a C compiler reads exactly ("0.001", "1e-08"). */
static char *number(double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEn"))
    g_strlcat(buf, ".0", sizeof buf);
  return g_strdup(buf);
}

/* The node's label, safe inside a C comment. (transfer full) */
static char *comment_label(const WeirNode *n) {
  char *l = weir_kernel_comment_label(n);
  return l;
}

static gboolean kernel_dtype(WeirDType t) {
  return t == WEIR_DTYPE_F32 || t == WEIR_DTYPE_F64;
}

/* Checks that c exists, has dtype t (f32 or f64) and is row-major. */
static gboolean operand_ok(const WeirContainer *c, WeirDType t, guint k,
                           gboolean input, char **reason) {
  if (!c) {
    *reason = g_strdup_printf("%s%u is not connected", input ? "in" : "out", k);
    return FALSE;
  }
  if (!kernel_dtype(c->dtype) || c->dtype != t) {
    *reason = g_strdup_printf("'%s' is %s; one dtype, f32 or f64, needed",
                              c->name, weir_dtype_name(c->dtype));
    return FALSE;
  }
  if (!weir_kernel_row_major(c)) {
    *reason = g_strdup_printf("'%s' is not stored row-major", c->name);
    return FALSE;
  }
  return TRUE;
}

static const gint64 grain_values[] = {4096, 16384, 65536};
static const WeirNativeParam grain_param[] = {
    {"grain",
     "elements per thread at least (fewer threads for less work; 0: every "
     "thread)",
     grain_values, G_N_ELEMENTS(grain_values)},
};
#define GRAIN_DEFAULT 16384

static gboolean ports_fit(const WeirNode *n, char **reason) {
  if (n->in_conns->len > WEIR_NATIVE_MAX_PORTS ||
      n->out_conns->len > WEIR_NATIVE_MAX_PORTS) {
    *reason = g_strdup_printf("more than %u inputs or outputs",
                              (guint)WEIR_NATIVE_MAX_PORTS);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------ OptimizerUpdate */

static gboolean update_accepts(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, char **reason) {
  g_autoptr(GError) local = NULL;
  WeirUpdateLayout l;
  if (!weir_update_layout(n, n->in_conns->len, &l, &local)) {
    *reason = g_strdup(local->message);
    return FALSE;
  }
  if (!ports_fit(n, reason))
    return FALSE;
  const WeirContainer *p0 = weir_native_port(g, s, n, TRUE, l.first);
  if (!p0) {
    *reason = g_strdup_printf("in%u is not connected", l.first);
    return FALSE;
  }
  WeirDType t = p0->dtype;
  for (guint j = 0; j < l.groups; j++) {
    for (guint m = 0; m < l.per_group; m++) {
      guint k = weir_update_input(&l, j, m);
      if (!operand_ok(weir_native_port(g, s, n, TRUE, k), t, k, TRUE, reason))
        return FALSE;
    }
    /* in place: output member m is input member m (P, M, V) */
    for (guint m = 0; m < l.outs; m++) {
      guint k = weir_update_output(&l, j, m);
      const WeirContainer *o = weir_native_port(g, s, n, FALSE, k);
      const WeirContainer *i = weir_native_port(
          g, s, n, TRUE, weir_update_input(&l, j, m ? m + 1 : 0));
      if (!operand_ok(o, t, k, FALSE, reason))
        return FALSE;
      if (o != i) {
        *reason = g_strdup_printf("output %u ('%s') is not updated in place", k,
                                  o->name);
        return FALSE;
      }
    }
  }
  for (guint e = 0; e < l.emas; e++) {
    for (guint m = 0; m < 2; m++) {
      guint k = weir_update_ema_input(&l, e, m);
      if (!operand_ok(weir_native_port(g, s, n, TRUE, k), t, k, TRUE, reason))
        return FALSE;
    }
    guint k = weir_update_ema_output(&l, e);
    const WeirContainer *o = weir_native_port(g, s, n, FALSE, k);
    if (!operand_ok(o, t, k, FALSE, reason))
      return FALSE;
    if (o != weir_native_port(g, s, n, TRUE, weir_update_ema_input(&l, e, 0))) {
      *reason = g_strdup_printf("output %u ('%s') is not updated in place", k,
                                o->name);
      return FALSE;
    }
  }
  const WeirContainer *check = weir_native_port(g, s, n, TRUE, 0);
  if (!check || !weir_dtype_is_float(check->dtype)) {
    *reason = g_strdup("the check is not a float scalar");
    return FALSE;
  }
  const gint scalars[] = {l.lr, l.scale};
  for (guint i = 0; i < G_N_ELEMENTS(scalars); i++)
    if (scalars[i] >= 0 &&
        !operand_ok(weir_native_port(g, s, n, TRUE, (guint)scalars[i]), t,
                    (guint)scalars[i], TRUE, reason))
      return FALSE;
  if (l.step >= 0) {
    const WeirContainer *st = weir_native_port(g, s, n, TRUE, (guint)l.step);
    if (!st || st->dtype != WEIR_DTYPE_I64) {
      *reason = g_strdup("the step counter is not i64");
      return FALSE;
    }
  }
  return TRUE;
}

/* "(T *const[]){a, b, ...}" of input (io 0) or output (io 1) member
 * `member` of every group, or a null pointer of that type. */
static void pointer_list(WeirNativeEmit *e, GString *c, const char *type,
                         const WeirUpdateLayout *l, guint member,
                         gboolean present) {
  if (!present) {
    g_string_append_printf(c, "(%s *const *)0", type);
    return;
  }
  g_string_append_printf(c, "(%s *const[]){", type);
  for (guint j = 0; j < l->groups; j++)
    g_string_append_printf(c, "%s%s", j ? ", " : "",
                           e->in[weir_update_input(l, j, member)].ptr);
  g_string_append_c(c, '}');
}

static gboolean update_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!update_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  WeirUpdateLayout l;
  if (!weir_update_layout(e->n, e->n->in_conns->len, &l, error))
    return FALSE;
  WeirDType t = e->in[l.first].c->dtype;
  const char *ct = t == WEIR_DTYPE_F32 ? "float" : "double";
  use_helper(e, "weir_update_@S@", update_text, t);
  g_autofree char *lbl = comment_label(e->n);
  static const char *const kinds[] = {"sgd", "momentum", "adam"};
  g_string_append_printf(e->code,
                         "/* %s '%s' (node %u): weir, %s over %u tensor%s "
                         "and %u moving average%s in one parallel region */\n",
                         e->n->op, lbl, e->n->id, kinds[l.kind], l.groups,
                         l.groups == 1 ? "" : "s", l.emas,
                         l.emas == 1 ? "" : "s");
  GString *c = g_string_new(NULL);
  g_string_append_printf(c, "weir_update_%s(%d, %u, ",
                         t == WEIR_DTYPE_F32 ? "f32" : "f64", (int)l.kind,
                         l.groups);
  g_autofree char *cconst = g_strdup_printf("const %s", ct);
  pointer_list(e, c, ct, &l, 0, TRUE);
  g_string_append(c, ", ");
  pointer_list(e, c, cconst, &l, 1, TRUE);
  g_string_append(c, ", ");
  pointer_list(e, c, ct, &l, 2, l.per_group > 2);
  g_string_append(c, ", ");
  pointer_list(e, c, ct, &l, 3, l.per_group > 3);
  g_string_append(c, ", (const int64_t[]){");
  for (guint j = 0; j < l.groups; j++) {
    g_autoptr(WeirExpr) v =
        weir_container_volume(e->in[weir_update_input(&l, j, 0)].c);
    g_autofree char *vs = e->expr_c(e, v);
    g_string_append_printf(c, "%s%s", j ? ", " : "", vs);
  }
  g_string_append(c, "}, ");
  if (l.emas == 0) {
    g_string_append_printf(c,
                           "0, (%s *const *)0, (const %s *const *)0, "
                           "(const double *)0, (const int64_t *)0",
                           ct, ct);
  } else {
    g_string_append_printf(c, "%u, (%s *const[]){", l.emas, ct);
    for (guint k = 0; k < l.emas; k++)
      g_string_append_printf(c, "%s%s", k ? ", " : "",
                             e->in[weir_update_ema_input(&l, k, 0)].ptr);
    g_string_append_printf(c, "}, (const %s *const[]){", ct);
    for (guint k = 0; k < l.emas; k++)
      g_string_append_printf(c, "%s%s", k ? ", " : "",
                             e->in[weir_update_ema_input(&l, k, 1)].ptr);
    g_string_append(c, "}, (const double[]){");
    for (guint k = 0; k < l.emas; k++) {
      g_autofree char *keep = number(weir_update_ema_keep(e->n, k));
      g_string_append_printf(c, "%s%s", k ? ", " : "", keep);
    }
    g_string_append(c, "}, (const int64_t[]){");
    for (guint k = 0; k < l.emas; k++) {
      g_autoptr(WeirExpr) v =
          weir_container_volume(e->in[weir_update_ema_input(&l, k, 0)].c);
      g_autofree char *vs = e->expr_c(e, v);
      g_string_append_printf(c, "%s%s", k ? ", " : "", vs);
    }
    g_string_append_c(c, '}');
  }
  g_autofree char *lr = number(weir_node_attr_float(e->n, "lr", 0));
  g_autofree char *wd = number(weir_node_attr_float(e->n, "weight_decay", 0));
  g_autofree char *mu = number(weir_node_attr_float(e->n, "momentum", 0));
  g_autofree char *b1 = number(weir_node_attr_float(e->n, "beta1", 0));
  g_autofree char *b2 = number(weir_node_attr_float(e->n, "beta2", 0));
  g_autofree char *eps = number(weir_node_attr_float(e->n, "epsilon", 0));
  g_string_append_printf(
      c,
      ", (double)%s[0], %s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%" G_GINT64_FORMAT ");\n",
      e->in[0].ptr, l.step >= 0 ? e->in[l.step].ptr : "(const int64_t *)0",
      l.lr >= 0 ? e->in[l.lr].ptr : "0",
      l.scale >= 0 ? e->in[l.scale].ptr : "0", lr, wd, mu, b1, b2, eps,
      weir_native_param(e->n, "grain", GRAIN_DEFAULT));
  g_string_append(e->code, c->str);
  g_string_free(c, TRUE);
  return TRUE;
}

/* ----------------------------------------------------------------- SumAll */

static gboolean sum_all_accepts(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n, char **reason) {
  if (!ports_fit(n, reason))
    return FALSE;
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!y) {
    *reason = g_strdup("out0 is not connected");
    return FALSE;
  }
  if (!operand_ok(y, y->dtype, 0, FALSE, reason))
    return FALSE;
  for (guint k = 0; k < n->in_conns->len; k++)
    if (!operand_ok(weir_native_port(g, s, n, TRUE, k), y->dtype, k, TRUE,
                    reason))
      return FALSE;
  return TRUE;
}

static gboolean sum_all_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!sum_all_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  WeirDType t = e->out[0].c->dtype;
  const char *ct = t == WEIR_DTYPE_F32 ? "float" : "double";
  use_helper(e, "weir_sum_all_@S@", sum_all_text, t);
  guint count = e->n->in_conns->len;
  gboolean square = weir_node_attr_int(e->n, "square", 0) != 0;
  g_autofree char *lbl = comment_label(e->n);
  g_string_append_printf(e->code,
                         "/* %s '%s' (node %u): weir, %s of %u tensor%s in one "
                         "parallel region */\n",
                         e->n->op, lbl, e->n->id,
                         square ? "squares summed" : "sum", count,
                         count == 1 ? "" : "s");
  GString *c = g_string_new(NULL);
  g_string_append_printf(c, "%s[0] = weir_sum_all_%s(%u, (const %s *const[]){",
                         e->out[0].ptr, t == WEIR_DTYPE_F32 ? "f32" : "f64",
                         count, ct);
  for (guint k = 0; k < count; k++)
    g_string_append_printf(c, "%s%s", k ? ", " : "", e->in[k].ptr);
  g_string_append(c, "}, (const int64_t[]){");
  for (guint k = 0; k < count; k++) {
    g_autoptr(WeirExpr) v = weir_container_volume(e->in[k].c);
    g_autofree char *vs = e->expr_c(e, v);
    g_string_append_printf(c, "%s%s", k ? ", " : "", vs);
  }
  g_string_append_printf(c, "}, %d, %" G_GINT64_FORMAT ");\n", square ? 1 : 0,
                         weir_native_param(e->n, "grain", GRAIN_DEFAULT));
  g_string_append(e->code, c->str);
  g_string_free(c, TRUE);
  return TRUE;
}

static const WeirNativeImpl update_impl = {
    .op = "OptimizerUpdate",
    .impl = "weir",
    .accepts = update_accepts,
    .emit = update_emit,
    .params = grain_param,
    .n_params = G_N_ELEMENTS(grain_param),
};

static const WeirNativeImpl sum_all_impl = {
    .op = "SumAll",
    .impl = "weir",
    .accepts = sum_all_accepts,
    .emit = sum_all_emit,
    .params = grain_param,
    .n_params = G_N_ELEMENTS(grain_param),
};

void weir_native_register_multi_tensor(void) {
  weir_native_register(&update_impl);
  weir_native_register(&sum_all_impl);
}
